//! One bench run across the matrix: discover the server, plan the cells, open the run
//! folder, then context by context size the prompt, sample prefill and measure each decode
//! cell, keeping every finished cell on disk at once.

mod rates;
mod trace;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, Result};
use tokio::sync::watch;

use super::bench_plan::{level_run_id, BenchPlan, Mode, RunSpec, Versus};
use super::cell::{self, CellContext, DecodeRun};
use super::client::http::{self, HttpClient};
use super::client::stream::{StreamSettings, WindowClock};
use super::discover::ServerInfo;
use super::launch::{self, Launcher};
use super::plan::PlannedCell;
use super::progress::{describe, print_plan, LiveRate, Progress};
use super::prompt::{self, SizedPrompt};
use super::recorder::{self, Recorder};
use super::run_folder::{
    check_versus_folders, discovered_facts, first_repetition_to_measure, open_run, resumable_done,
};
use super::server::{connect, resolve_hardware, Server};
use super::telemetry::Telemetry;
use super::{BenchSummary, CellReporter};
use crate::format::{Cell, CellError, ErrorCause, Phase, RunManifest, Status};
use crate::units::context_label;

/// Cells in a row that found the server unreachable before the run stops.
pub const MAX_UNREACHABLE_CELLS: u32 = 3;

pub async fn run(plan: &BenchPlan, reporter: &dyn CellReporter) -> Result<BenchSummary> {
    let bench = Bench { plan, reporter };
    match &plan.mode {
        Mode::One => run_one(bench, plan.first_run()).await,
        Mode::ReuseLevels(levels) => run_levels(bench, levels).await,
        Mode::Versus(b) => run_versus(bench, b).await,
        Mode::Rates(r) => rates::run_rates(bench, r).await,
        Mode::Trace(t) => trace::run_trace(bench, t).await,
    }
}

/// What every run of a session shares: the plan, and how a finished cell is said.
#[derive(Clone, Copy)]
struct Bench<'a> {
    plan: &'a BenchPlan,
    reporter: &'a dyn CellReporter,
}

/// `--prefix-reuse 0,90`: the matrix at each level in turn, each a run of its own
/// (`RUN-reuse0`, `RUN-reuse90`, naming each other), on the same server (with `--launch`,
/// on processes of each level's own). A reuse level changes every figure of a cell, so it
/// is a workload: each level's run has its heatmap, boards and comparisons, as runs of
/// one workload do. The first level's run names the session (its id without the suffix)
/// when no `--run-id` does.
async fn run_levels(bench: Bench<'_>, levels: &[u32]) -> Result<BenchSummary> {
    let plan = bench.plan;
    let mut base = plan.folder.run_id.clone();
    if plan.folder.dry_run {
        eprintln!(
            "At each prefix-reuse level ({}%), one after another, each level a run of its own:",
            levels.iter().map(u32::to_string).collect::<Vec<_>>().join("%, ")
        );
        return run_one(bench, plan.level_run(levels, levels[0], base)).await;
    }
    let mut summaries: Vec<BenchSummary> = Vec::new();
    for level in levels.iter().copied() {
        let summary = run_one(bench, plan.level_run(levels, level, base.clone())).await?;
        if base.is_none() {
            let id = folder_id(&summary.run_dir);
            let suffix = level_run_id("", level);
            base = Some(id.strip_suffix(&suffix).unwrap_or(&id).to_string());
        }
        let interrupted = summary.interrupted;
        summaries.push(summary);
        if interrupted {
            break;
        }
    }
    let mut first = summaries.remove(0);
    first.levels = summaries;
    Ok(first)
}

/// A run's server reached: the client, the hardware in its facts, Ctrl-C handled, the first
/// process started (with `--launch`) and the server discovered.
struct Reached {
    client: HttpClient,
    interrupt: watch::Receiver<bool>,
    launcher: Option<Launcher>,
    server: Server,
}

impl Reached {
    async fn server(plan: &BenchPlan, run: &mut RunSpec) -> Result<Reached> {
        let client = connect(&run.target)?;
        resolve_hardware(&mut run.facts, &client.endpoint)?;
        // Ctrl-C is ours from the start: nothing is written before it can be handled.
        let mut interrupt = ctrl_c_flag();
        let launcher = first_process(plan, run, &client, &interrupt).await?;
        let server = Server::discover(plan, run, &client, &mut interrupt).await?;
        Ok(Reached { client, interrupt, launcher, server })
    }

    /// `--dry-run`: the server was only asked; a launched one is stopped.
    async fn stop_launched(&mut self) {
        if let Some(l) = self.launcher.as_mut() {
            l.stop().await;
        }
    }
}

async fn run_one(bench: Bench<'_>, mut run: RunSpec) -> Result<BenchSummary> {
    let plan = bench.plan;
    let mut reached = Reached::server(plan, &mut run).await?;
    if plan.folder.dry_run {
        reached.stop_launched().await;
        let Reached { client, server, .. } = &reached;
        let done = resumable_done(plan, &run, client, server)?;
        print_plan(&server.planned, plan, &done);
        return Ok(BenchSummary::default());
    }
    let Reached { client, interrupt, launcher, server } = reached;
    let (recorder, manifest) = open_run(plan, &run, &client, &server)?;
    let planned = server.planned;
    let mut session =
        Session::start(bench, run, client, &server.info, server.model, recorder, &planned, interrupt).await;
    session.launcher = launcher;
    let measured = session.measure(&planned).await;
    session.stop_background().await;
    let logged = session.stop_server().await;
    measured?;
    logged?;
    session.finish(manifest)
}

/// With `--launch`: the launcher, its first server process started and answering.
async fn first_process(
    plan: &BenchPlan,
    run: &RunSpec,
    client: &HttpClient,
    interrupt: &watch::Receiver<bool>,
) -> Result<Option<Launcher>> {
    let Some(settings) = &run.target.launch else { return Ok(None) };
    let mut launcher = Launcher::new(settings.clone(), run.target.credentials.secrets())?;
    let rep = first_repetition_to_measure(plan, run);
    launcher.ensure(launch::instance_of(rep, plan.matrix.repeat, settings.restarts), client, interrupt).await?;
    Ok(Some(launcher))
}

/// `--versus B`: the same matrix on two live servers, every cell measured on A and on B in
/// alternating order (A B, then B A, ...) repetition by repetition, context by context, so
/// the machine's drift falls on both alike. Two runs, each naming the other
/// (`paired_with`): comparisons judge them on the paired differences.
async fn run_versus(bench: Bench<'_>, versus: &Versus) -> Result<BenchSummary> {
    let plan = bench.plan;
    check_versus_folders(plan, versus)?;
    let [mut run_a, mut run_b] = plan.versus_runs(versus);
    let (client_a, client_b) = (connect(&run_a.target)?, connect(&run_b.target)?);
    resolve_hardware(&mut run_a.facts, &client_a.endpoint)?;
    resolve_hardware(&mut run_b.facts, &client_b.endpoint)?;
    let mut interrupt = ctrl_c_flag();
    let launchers = (
        first_process(plan, &run_a, &client_a, &interrupt).await?,
        first_process(plan, &run_b, &client_b, &interrupt).await?,
    );
    let (a, b) = (
        Server::discover(plan, &run_a, &client_a, &mut interrupt).await?,
        Server::discover(plan, &run_b, &client_b, &mut interrupt).await?,
    );
    let (manifest_a, manifest_b, sessions) = {
        let (rec_a, mut m_a) = open_run(plan, &run_a, &client_a, &a)?;
        let a_id = folder_id(&rec_a.dir);
        run_b.run_id = Some(run_b.run_id.take().unwrap_or_else(|| format!("{a_id}-versus")));
        let (rec_b, mut m_b) = open_run(plan, &run_b, &client_b, &b)?;
        let b_id = folder_id(&rec_b.dir);
        (m_a.paired_with, m_b.paired_with) = (Some(b_id), Some(a_id));
        rec_a.write_manifest(&m_a)?;
        rec_b.write_manifest(&m_b)?;
        let mut sa =
            Session::start(bench, run_a, client_a, &a.info, a.model.clone(), rec_a, &a.planned, interrupt.clone())
                .await;
        let mut sb =
            Session::start(bench, run_b, client_b, &b.info, b.model.clone(), rec_b, &b.planned, interrupt).await;
        (sa.launcher, sb.launcher) = launchers;
        (m_a, m_b, [sa, sb])
    };
    let [mut sa, mut sb] = sessions;
    let measured = measure_alternating([&mut sa, &mut sb], [&a.planned, &b.planned]).await;
    sa.stop_background().await;
    sb.stop_background().await;
    let logged = (sa.stop_server().await, sb.stop_server().await);
    measured?;
    logged.0?;
    logged.1?;
    let summary_b = sb.finish(manifest_b)?;
    let mut summary = sa.finish(manifest_a)?;
    summary.versus = Some(Box::new(summary_b));
    Ok(summary)
}

/// Every cell of both sessions: repetition by repetition, context by context, A then B in
/// odd repetitions and B then A in even ones.
async fn measure_alternating(sessions: [&mut Session<'_>; 2], planned: [&[PlannedCell]; 2]) -> Result<()> {
    let [a, b] = sessions;
    let repeat = a.plan.matrix.repeat;
    for rep in 1..=repeat {
        // With --launch and --versus-launch, both servers move to their next process together.
        let mut interrupted = false;
        for (s, p) in [(&mut *a, planned[0]), (&mut *b, planned[1])] {
            interrupted = interrupted || (!s.todo(p, rep).is_empty() && s.server_for(rep).await?);
        }
        if interrupted {
            a.summary.interrupted = true;
            b.summary.interrupted = true;
            return Ok(());
        }
        let mut contexts = contexts_of(&a.todo(planned[0], rep));
        contexts.extend(contexts_of(&b.todo(planned[1], rep)));
        contexts.sort_unstable();
        contexts.dedup();
        for ctx in contexts {
            let first_a = rep % 2 == 1;
            for turn in [first_a, !first_a] {
                let flow = if turn {
                    a.measure_step(planned[0], rep, ctx).await?
                } else {
                    b.measure_step(planned[1], rep, ctx).await?
                };
                if let Flow::Interrupted = flow {
                    a.summary.interrupted = true;
                    b.summary.interrupted = true;
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Whether the matrix goes on.
enum Flow {
    Continue,
    Interrupted,
}

/// A run in progress: the server, the run folder, progress and the tally.
struct Session<'a> {
    plan: &'a BenchPlan,
    reporter: &'a dyn CellReporter,
    /// The run measured: its target, workload and facts, and its side under `--versus`.
    run: RunSpec,
    cx: CellContext,
    model: String,
    /// Unique to this measurement (time and random bits), never derived from the run id: a
    /// re-used run id must not find its prompts in the server's prefix cache.
    tag: String,
    recorder: Recorder,
    progress: Progress,
    summary: BenchSummary,
    interrupt: watch::Receiver<bool>,
    stop_background: watch::Sender<bool>,
    sampler: tokio::task::JoinHandle<()>,
    live: LiveRate,
    /// The server as discovered, and how the prompts were sized (once one was).
    info: ServerInfo,
    sized_by: Option<&'static str>,
    /// Each context's prompt, once sized: later repetitions send the same prompt.
    prompts: BTreeMap<u32, SizedPrompt>,
    /// Rate cells kept so far: (context, rate, repetition, completion rate), what `--rates
    /// auto` reads its knee from.
    rate_readings: Vec<(u32, f64, u32, Option<f64>)>,
    /// The last measured cell that found the server up: when the server then stays
    /// unreachable and the run stops, this was the cell in flight as it went away.
    last_reached: Option<Cell>,
    /// The server processes the bench starts (`--launch`).
    launcher: Option<Launcher>,
}

impl<'a> Session<'a> {
    #[allow(clippy::too_many_arguments)]
    async fn start(
        bench: Bench<'a>,
        run: RunSpec,
        client: HttpClient,
        info: &ServerInfo,
        model: String,
        recorder: Recorder,
        planned: &[PlannedCell],
        interrupt: watch::Receiver<bool>,
    ) -> Session<'a> {
        let (plan, w, timing) = (bench.plan, run.workload, bench.plan.timing);
        let clock = WindowClock::new(Instant::now());
        let telemetry = match plan.telemetry {
            Some(source) => Telemetry::start(source, clock.clone(), 1000).await.map(Arc::new),
            None => None,
        };
        let cx = CellContext {
            client,
            engine: info.engine,
            metrics: info.metrics_available,
            token_counter: info.token_counter,
            api: w.api,
            model: model.clone(),
            max_output: w.max_output,
            prefix_reuse: w.prefix_reuse,
            turns: w.turns,
            request_limit: [info.capacity.max_model_len, info.capacity.slot_ctx].into_iter().flatten().min(),
            block_tokens: info.capacity.block_tokens,
            duration: timing.duration,
            warmup_hold: timing.warmup_hold,
            warmup_timeout: timing.warmup_timeout,
            drain_timeout: timing.drain_timeout,
            stream: StreamSettings {
                stall_timeout: timing.stall_timeout,
                loop_settings: timing.loop_settings,
                detect_loops: timing.detect_loops,
                keep_answer: w.turns.is_some(),
            },
            clock: clock.clone(),
            gauge: Arc::new(Mutex::new(Vec::new())),
            telemetry,
            server: Arc::default(),
            request_serial: Arc::default(),
        };
        let (stop_background, stop_rx) = watch::channel(false);
        let sampler = cell::spawn_gauge_sampler(cx.clone(), timing.gauge_interval, stop_rx.clone());
        let live = LiveRate::spawn(clock, stop_rx);
        let repeat = plan.matrix.repeat;
        let todo = repetitions(planned, repeat).filter(|(p, rep)| !recorder.has(p, *rep)).count();
        let summary = BenchSummary {
            run_dir: recorder.dir.clone(),
            skipped_existing: repetitions(planned, repeat).count() - todo,
            ..Default::default()
        };
        if summary.skipped_existing > 0 {
            eprintln!(
                "resuming {}: {} cells already measured, {todo} to go",
                recorder.dir.file_name().unwrap_or_default().to_string_lossy(),
                summary.skipped_existing
            );
        }
        Session {
            plan,
            reporter: bench.reporter,
            run,
            cx,
            model,
            tag: prompt::measurement_tag(),
            recorder,
            progress: Progress::new(todo as u64),
            summary,
            interrupt,
            stop_background,
            sampler,
            live,
            info: info.clone(),
            sized_by: None,
            prompts: BTreeMap::new(),
            rate_readings: Vec::new(),
            last_reached: None,
            launcher: None,
        }
    }

    /// Every cell not yet on disk: repetition by repetition (every cell once, then every
    /// cell again, so slow drift spreads over all cells), context by context.
    async fn measure(&mut self, planned: &[PlannedCell]) -> Result<()> {
        for rep in 1..=self.plan.matrix.repeat {
            if !self.todo(planned, rep).is_empty() && self.server_for(rep).await? {
                self.summary.interrupted = true;
                return Ok(());
            }
            for ctx in contexts_of(&self.todo(planned, rep)) {
                if let Flow::Interrupted = self.measure_step(planned, rep, ctx).await? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The planned cells of repetition `rep` not yet on disk.
    fn todo<'p>(&self, planned: &'p [PlannedCell], rep: u32) -> Vec<&'p PlannedCell> {
        repetitions(planned, self.plan.matrix.repeat)
            .filter(|(p, r)| *r == rep && !self.recorder.has(p, rep))
            .map(|(p, _)| p)
            .collect()
    }

    /// Context `ctx` of repetition `rep`, where it has cells to measure; an interruption is
    /// counted in the summary.
    async fn measure_step(&mut self, planned: &[PlannedCell], rep: u32, ctx: u32) -> Result<Flow> {
        let cells: Vec<&PlannedCell> = self.todo(planned, rep).into_iter().filter(|p| p.context == ctx).collect();
        if cells.is_empty() {
            return Ok(Flow::Continue);
        }
        let flow = self.measure_context(ctx, &cells, rep).await?;
        if let Flow::Interrupted = flow {
            self.summary.interrupted = true;
        }
        Ok(flow)
    }

    /// With `--launch`: the server process of repetition `rep` running (the one before
    /// stopped). Whether Ctrl-C came while it started.
    async fn server_for(&mut self, rep: u32) -> Result<bool> {
        let Some(l) = self.launcher.as_mut() else { return Ok(false) };
        let instance = launch::instance_of(rep, self.plan.matrix.repeat, l.settings().restarts);
        match l.ensure(instance, &self.cx.client, &self.interrupt).await {
            Err(_) if *self.interrupt.borrow() => Ok(true),
            Err(e) => Err(e.context(format!(
                "starting server process {instance} for repetition {rep}; the cells measured so far are kept: {}",
                self.continue_with()
            ))),
            Ok(_) => {
                *self.cx.server.lock().unwrap_or_else(|e| e.into_inner()) = l.tree();
                Ok(false)
            }
        }
    }

    /// Stops the launched server and keeps what its processes said beside the run.
    async fn stop_server(&mut self) -> Result<()> {
        let Some(l) = self.launcher.as_mut() else { return Ok(()) };
        l.stop().await;
        self.recorder.write_server_log(&l.log())
    }

    /// One context in one repetition: Over capacity cells (first repetition only), then the
    /// prompt, the prefill samples (the first repetition's warm the prefix cache for the
    /// decode cells) and the decode cells.
    async fn measure_context(&mut self, ctx: u32, cells: &[&PlannedCell], rep: u32) -> Result<Flow> {
        // Over-capacity cells need no server time: write them first.
        for p in cells.iter().filter(|p| p.over_capacity.is_some()) {
            self.keep(p, planned_cell(p, Status::OverCapacity), rep)?;
        }
        let runnable: Vec<&PlannedCell> = cells.iter().filter(|p| p.over_capacity.is_none()).copied().collect();
        if runnable.is_empty() {
            return Ok(Flow::Continue);
        }
        let first_time = !self.prompts.contains_key(&ctx);
        let sized = match self.prompts.get(&ctx) {
            Some(s) => s.clone(),
            None => match self.size(ctx, 0, ctx).await {
                None => return Ok(Flow::Interrupted),
                Some(Ok(s)) => {
                    self.sized_by.get_or_insert(s.method);
                    s
                }
                Some(Err(e)) => {
                    self.keep_sizing_failure(&runnable, &e, rep)?;
                    return Ok(Flow::Continue);
                }
            },
        };
        let (prefill, sized) = if first_time {
            self.first_prefill(ctx, sized, rep).await
        } else {
            (self.later_prefill(ctx, &sized, rep).await, sized)
        };
        self.prompts.insert(ctx, sized.clone());
        if *self.interrupt.borrow() {
            return Ok(Flow::Interrupted);
        }
        if let Some(p) = runnable.iter().find(|p| p.phase == Phase::Prefill) {
            self.keep(p, prefill, rep)?;
        }
        for p in runnable.iter().filter(|p| p.phase == Phase::Decode) {
            if let Flow::Interrupted = self.decode(p, &sized, rep).await? {
                return Ok(Flow::Interrupted);
            }
        }
        Ok(Flow::Continue)
    }

    /// Sizes a prompt of `tokens` for `ctx`; `None` when Ctrl-C came first (sizing waits on
    /// the server, Ctrl-C must not).
    async fn size(&self, ctx: u32, variant: u32, tokens: u32) -> Option<Result<SizedPrompt>> {
        if variant == 0 {
            self.progress.current(&format!("sizing the {} prompt", context_label(ctx)));
        }
        let want = prompt::SizeTarget { context: ctx, variant, tokens };
        let cx = &self.cx;
        let sizing = prompt::size_prompt(&cx.client, cx.engine, cx.api, &self.model, &self.tag, want);
        let mut interrupt = self.interrupt.clone();
        tokio::select! {
            r = sizing => Some(r),
            Ok(_) = interrupt.wait_for(|i| *i) => None,
        }
    }

    /// Every runnable cell of the context is an error when its prompt could not be sized.
    fn keep_sizing_failure(&mut self, runnable: &[&PlannedCell], e: &anyhow::Error, rep: u32) -> Result<()> {
        let cause = e.is::<http::Unreachable>().then_some(ErrorCause::Unreachable);
        let message = self.cx.client.scrub(&format!("sizing the prompt failed: {e:#}"));
        for p in runnable {
            let mut cell = planned_cell(p, Status::Error);
            cell.error = Some(CellError { message: message.clone(), http_status: None, cause });
            self.keep(p, cell, rep)?;
        }
        Ok(())
    }

    /// A context's first prefill cell in this session: a discarded warm-up request, then
    /// the exact prompt, confirmed against the real request's usage (a chat template adds
    /// tokens a bare tokenizer does not count, so the prompt is sized again for the
    /// difference and sampled again, its tag differing from the first token on), then the
    /// other samples with prompts marked apart. The exact prompt warms the prefix cache for
    /// the decode cells.
    async fn first_prefill(&mut self, ctx: u32, mut sized: SizedPrompt, rep: u32) -> (Cell, SizedPrompt) {
        self.progress.current(&format!("prefill {}: warm-up request", context_label(ctx)));
        cell::warm_up(&self.cx, &sized.text, self.interrupt.clone()).await;
        self.progress.current(&format!("prefill {} ({} prompt tokens)", context_label(ctx), sized.tokens));
        let mut prefill = self.prefill_of(ctx, std::slice::from_ref(&sized.text), sized.tokens).await;
        let (Status::Valid, Some(actual)) = (prefill.status, prefill.prompt_tokens) else {
            return (prefill, sized);
        };
        let overhead = actual as i64 - sized.tokens as i64;
        let off_target = (actual as f64 - ctx as f64).abs() > prompt::size_tolerance(ctx);
        if off_target && overhead.unsigned_abs() < ctx as u64 {
            let target = (ctx as i64 - overhead).max(1) as u32;
            self.progress
                .current(&format!("resizing the {} prompt ({overhead:+} tokens of template)", context_label(ctx)));
            if let Some(Ok(s)) = self.size(ctx, 1, target).await {
                // The tokenizer's count plus the template's tokens, as usage will say.
                let tokens = (s.tokens as i64 + overhead).max(1) as u64;
                sized = SizedPrompt { tokens, ..s };
                prefill = self.prefill_of(ctx, std::slice::from_ref(&sized.text), sized.tokens).await;
            }
        }
        let more = self.sample_prompts(&sized.text, rep, 2..=self.plan.matrix.prefill_samples);
        if prefill.status == Status::Valid && !more.is_empty() {
            let rest = self.prefill_of(ctx, &more, sized.tokens).await;
            prefill = join_samples(prefill, rest);
        }
        (prefill, sized)
    }

    /// A later repetition's prefill cell: every sample's prompt marked apart (the exact
    /// prompt is in the cache by now), then the exact prompt once more, thrown away, so the
    /// decode cells find it cached as in the first repetition.
    async fn later_prefill(&mut self, ctx: u32, sized: &SizedPrompt, rep: u32) -> Cell {
        self.progress.current(&format!("prefill {} · rep {rep}/{}", context_label(ctx), self.plan.matrix.repeat));
        let prompts = self.sample_prompts(&sized.text, rep, 1..=self.plan.matrix.prefill_samples);
        let cell = self.prefill_of(ctx, &prompts, sized.tokens).await;
        cell::prefill_cell(&self.cx, ctx, std::slice::from_ref(&sized.text), sized.tokens, self.interrupt.clone())
            .await;
        cell
    }

    async fn prefill_of(&self, ctx: u32, prompts: &[String], tokens: u64) -> Cell {
        cell::prefill_cell(&self.cx, ctx, prompts, tokens, self.interrupt.clone()).await
    }

    /// Prompts for samples `k` of repetition `rep`, each marked apart from every other.
    fn sample_prompts(&self, text: &str, rep: u32, k: std::ops::RangeInclusive<u32>) -> Vec<String> {
        k.map(|k| cell::sample_prompt(text, &format!("r{rep}s{k}"))).collect()
    }

    async fn decode(&mut self, p: &PlannedCell, sized: &SizedPrompt, rep: u32) -> Result<Flow> {
        let label = self.label(p, rep);
        self.progress.current(&format!("{label}: warming up · {}", self.live.now()));
        if self.cx.engine.caches_per_slot() && p.concurrency > 1 {
            cell::warm_slots(&self.cx, &sized.text, p.concurrency, &self.interrupt).await;
        }
        let ticker = self.live.show_on(self.progress.bar_handle(), label);
        let run =
            cell::decode_cell(&self.cx, p.context, p.concurrency, &sized.text, sized.tokens, self.interrupt.clone())
                .await;
        ticker.abort();
        match run {
            DecodeRun::Interrupted => Ok(Flow::Interrupted),
            DecodeRun::Done(cell) => self.keep(p, *cell, rep).map(|()| Flow::Continue),
        }
    }

    /// What to do after the run stopped early: `--resume` continues a run; a `--versus` pair
    /// cannot be resumed (its cells alternate with the other side's), so it is measured again.
    fn continue_with(&self) -> String {
        match self.run.side {
            None => "continue with --resume (unreachable cells are measured again)".to_string(),
            Some(_) => "a --versus pair cannot be resumed (its cells alternate with the other side's): run the pair again with new run ids, or remove both run folders first".to_string(),
        }
    }

    /// The cell's name on the progress line, with its repetition when there are several.
    fn label(&self, p: &PlannedCell, rep: u32) -> String {
        let cell = match self.plan.matrix.repeat {
            1 => describe(p),
            n => format!("{} · rep {rep}/{n}", describe(p)),
        };
        match self.run.side {
            Some(side) => format!("{side} {cell}"),
            None => cell,
        }
    }

    /// Writes a finished cell, shows it, counts it, and stops the run when the server has
    /// been unreachable for [`MAX_UNREACHABLE_CELLS`] cells in a row: the rest would only be
    /// errors.
    fn keep(&mut self, p: &PlannedCell, mut cell: Cell, rep: u32) -> Result<()> {
        cell.repetition = rep;
        cell.server_instance = self.launcher.as_ref().and_then(Launcher::instance);
        let exited = self.launcher.as_mut().and_then(Launcher::exited);
        if let (Some(_), Some(error)) = (&exited, cell.error.as_mut()) {
            // The server's exit broke this cell: `--resume` measures it again.
            error.cause = Some(ErrorCause::Unreachable);
        }
        self.recorder.write_cell(&cell)?;
        if let Some(exit) = exited {
            self.progress.finish();
            bail!(
                "the launched server exited during the run ({exit}); stopped with {} cells in {}: {}",
                self.summary.written + 1,
                self.recorder.dir.display(),
                self.continue_with()
            );
        }
        self.progress.cell_done(&format!("{}: {}", self.label(p, rep), self.reporter.describe(&cell)));
        let s = &mut self.summary;
        s.written += 1;
        match cell.status {
            Status::Valid => s.valid += 1,
            Status::Looped => s.looped += 1,
            Status::OverCapacity => s.over_capacity += 1,
            Status::Error => s.errors += 1,
        }
        if cell.status != Status::OverCapacity {
            s.unreachable_streak = if cell.server_unreachable() { s.unreachable_streak + 1 } else { 0 };
        }
        if self.summary.unreachable_streak >= MAX_UNREACHABLE_CELLS {
            self.progress.finish();
            self.mark_cell_in_flight_unreachable()?;
            let message = cell.error.map(|e| e.message).unwrap_or_default();
            bail!(
                "the server was unreachable for {MAX_UNREACHABLE_CELLS} cells in a row ({message}); stopped with {} cells in {}. Restart the server; {}",
                self.summary.written,
                self.recorder.dir.display(),
                self.continue_with()
            );
        }
        if cell.status != Status::OverCapacity && !cell.server_unreachable() {
            self.last_reached = Some(cell);
        }
        Ok(())
    }

    /// The server went away during the cell before the unreachable streak: an error there
    /// (its streams broke) is the outage's, not the cell's, so `--resume` measures it again.
    fn mark_cell_in_flight_unreachable(&mut self) -> Result<()> {
        let Some(mut cell) = self.last_reached.take().filter(|c| c.status == Status::Error) else {
            return Ok(());
        };
        if let Some(error) = cell.error.as_mut() {
            error.cause = Some(ErrorCause::Unreachable);
            error.message = format!("{} (the server became unreachable during this cell)", error.message);
        }
        self.recorder.write_cell(&cell)
    }

    async fn stop_background(&mut self) {
        self.progress.finish();
        let _ = self.stop_background.send(true);
        let _ = (&mut self.sampler).await;
    }

    /// An interrupted run keeps its cells (or removes a folder it created and left empty);
    /// a finished one records when it finished.
    fn finish(mut self, mut m: RunManifest) -> Result<BenchSummary> {
        // The run's last cells found the server gone (too few to stop it): the cell in flight
        // as it went is the outage's too.
        if self.summary.unreachable_streak > 0 {
            self.mark_cell_in_flight_unreachable()?;
        }
        let dir = &self.recorder.dir;
        if self.summary.interrupted {
            if self.recorder.remove_if_empty()? {
                eprintln!("interrupted before any cell was measured: removed {}", dir.display());
                bail!("interrupted");
            }
            let id = dir.file_name().unwrap_or_default().to_string_lossy();
            let advice = match self.run.side {
                None => format!("continue with --resume --run-id {id}"),
                Some(_) => self.continue_with(),
            };
            eprintln!("interrupted: {} cells kept in {}; {advice}", self.summary.written, dir.display());
            bail!("interrupted");
        }
        m.finished_at = Some(recorder::now_rfc3339());
        if let Some(l) = &self.launcher {
            m.server_processes = l.processes(&m.server_processes);
        }
        if let Some(access) = m.server_access.as_mut() {
            access.discovered = discovered_facts(&self.info, self.sized_by);
        }
        self.recorder.write_manifest(&m)?;
        Ok(self.summary)
    }
}

/// A run folder's id: its name.
fn folder_id(dir: &std::path::Path) -> String {
    dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The contexts of `cells`, in their order, once each.
fn contexts_of(cells: &[&PlannedCell]) -> Vec<u32> {
    let mut contexts: Vec<u32> = cells.iter().map(|p| p.context).collect();
    contexts.dedup();
    contexts
}

/// A flag set by the first Ctrl-C, SIGTERM or SIGHUP: each stops the run the same way
/// (cells kept, a launched server stopped, its log written).
fn ctrl_c_flag() -> watch::Receiver<bool> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tx, rx) = watch::channel(false);
    let kinds = [SignalKind::interrupt(), SignalKind::terminate(), SignalKind::hangup()];
    let mut streams: Vec<_> = kinds.into_iter().filter_map(|k| signal(k).ok()).collect();
    tokio::spawn(async move {
        let any = futures_util::future::select_all(streams.iter_mut().map(|s| Box::pin(s.recv())));
        if any.await.0.is_some() {
            let _ = tx.send(true);
        }
    });
    rx
}

/// Every (cell, repetition) the run measures: over-capacity cells once (they are not run,
/// so there is nothing to repeat), the others `repeat` times.
fn repetitions(planned: &[PlannedCell], repeat: u32) -> impl Iterator<Item = (&PlannedCell, u32)> {
    (1..=repeat).flat_map(move |rep| {
        planned.iter().filter(move |p| rep == 1 || p.over_capacity.is_none()).map(move |p| (p, rep))
    })
}

/// A prefill cell with the samples of `rest` after its own; `rest`'s failure ends it.
fn join_samples(mut first: Cell, rest: Cell) -> Cell {
    if rest.status != Status::Valid {
        return Cell { repetition: first.repetition, ..rest };
    }
    if let (Some(m), Some(r)) = (first.measurement.as_mut(), rest.measurement) {
        m.requests.extend(r.requests);
    }
    first.prompt_tokens = first.prompt_tokens.or(rest.prompt_tokens);
    first
}

fn planned_cell(p: &PlannedCell, status: Status) -> Cell {
    Cell { over_capacity: p.over_capacity.clone(), ..Cell::new(p.phase, p.context, p.concurrency, status) }
}

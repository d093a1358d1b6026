//! A rate run (`site bench --rates`): the server discovered as for the matrix, then each
//! context at each offered rate, an open loop a cell (`cell::rate`), written to the run's
//! `rates.jsonl` as it ends.

use anyhow::{Context, Result};

use super::{Bench, Reached, Session};
use crate::bench::bench_plan::RatePlan;
use crate::bench::cell;
use crate::bench::progress::Progress;
use crate::bench::prompt::SizedPrompt;
use crate::bench::replay::{Replay, ReplayRequest, WordCosts};
use crate::bench::run_folder::open_run;
use crate::bench::BenchSummary;
use crate::format::{CellError, Status};
use crate::units::context_label;

/// The row a run of drawn input lengths stands in: their mean, in tokens.
fn drawn_context(input: crate::bench::lengths::Lengths) -> u32 {
    (input.mean.round() as u32).max(1)
}

/// `--rates`: each context at each offered rate, repetition by repetition, on one server
/// (with `--launch`, on each repetition's process): a cell an open loop (`cell::rate`), its
/// schedule drawn from the run's seed. The run records how (`traffic`) and has no matrix.
pub(super) async fn run_rates(bench: Bench<'_>, rates: &RatePlan) -> Result<BenchSummary> {
    let plan = bench.plan;
    let mut run = plan.first_run();
    let mut reached = Reached::server(plan, &mut run).await?;
    if plan.folder.dry_run {
        reached.stop_launched().await;
        crate::bench::progress::print_rate_plan(plan, rates);
        return Ok(BenchSummary::default());
    }
    let Reached { client, interrupt, launcher, server } = reached;
    let (recorder, mut manifest) = open_run(plan, &run, &client, &server)?;
    manifest.settings.concurrency.clear();
    manifest.settings.prefill_contexts.clear();
    manifest.traffic = Some(crate::format::Traffic {
        arrival: rates.arrival.name(),
        seed: rates.seed,
        rates_rps: rates.rates.clone(),
        max_in_flight: rates.max_in_flight,
        warmup_s: plan.timing.warmup_hold.as_secs_f64(),
        input_tokens: rates.input.map(|l| l.name()),
        output_tokens: rates.output.map(|l| l.name()),
        trace: None,
    });
    if let Some(input) = rates.input {
        manifest.settings.contexts = vec![drawn_context(input)];
    }
    recorder.write_manifest(&manifest)?;
    let mut session = Session::start(bench, run, client, &server.info, server.model, recorder, &[], interrupt).await;
    session.launcher = launcher;
    let contexts = if rates.input.is_some() { 1 } else { plan.matrix.contexts.len() };
    let cells = contexts * rates.rates.len() * plan.matrix.repeat as usize;
    session.progress = Progress::new(cells as u64);
    let measured = session.measure_rates(rates).await;
    session.stop_background().await;
    let logged = session.stop_server().await;
    measured?;
    logged?;
    session.finish(manifest)
}

impl Session<'_> {
    /// Every rate cell: repetition by repetition, context by context, rate by rate (lowest
    /// first, so a server saturated at one rate has drained before the next context).
    async fn measure_rates(&mut self, r: &RatePlan) -> Result<()> {
        let (repeat, timing) = (self.plan.matrix.repeat, self.plan.timing);
        let settings = crate::bench::open_loop::OpenLoopSettings {
            warmup: timing.warmup_hold,
            window: timing.duration,
            drain_timeout: timing.drain_timeout,
            max_in_flight: r.max_in_flight as usize,
        };
        let span = (timing.warmup_hold + timing.duration).as_secs_f64();
        let drawn = self.drawn_lengths_setup(r).await?;
        if (r.input.is_some() || r.output.is_some()) && drawn.is_none() {
            return Ok(());
        }
        let contexts = match r.input {
            Some(l) => vec![drawn_context(l)],
            None => self.plan.matrix.contexts.clone(),
        };
        for rep in 1..=repeat {
            if self.server_for(rep).await? {
                self.summary.interrupted = true;
                return Ok(());
            }
            for &ctx in &contexts {
                let sized = match (&drawn, r.input) {
                    (Some(_), Some(_)) => None,
                    _ => match self.rate_prompt(ctx, r, rep).await? {
                        None => return Ok(()),
                        Some(None) => continue,
                        Some(s) => s,
                    },
                };
                for (k, &rate) in r.rates.iter().enumerate() {
                    let label = self.rate_label(ctx, rate, rep);
                    self.progress.current(&format!("{label}: {:.0} s of traffic", span));
                    let seed = r.seed ^ ((ctx as u64) << 32) ^ ((k as u64) << 16) ^ rep as u64;
                    let schedule = crate::bench::arrivals::schedule(rate, r.arrival, seed, span)?;
                    let mark = format!("r{rep}k{k}");
                    let prompts = match &drawn {
                        Some(costs) => self.drawn_prompts(r, ctx, &schedule, seed, costs, &mark).await?,
                        None => {
                            let s = sized.as_ref().expect("sized without drawn lengths");
                            Some(cell::rate::Prompts::Sized { text: s.text.as_str().into(), mark })
                        }
                    };
                    // None: Ctrl-C came while the prompts were made.
                    let Some(prompts) = prompts else { return Ok(()) };
                    let prompt_tokens = sized.as_ref().map_or(u64::from(ctx), |s| s.tokens);
                    let run = cell::rate::RateRun {
                        context: ctx,
                        rate_rps: rate,
                        prompts,
                        prompt_tokens,
                        schedule: &schedule,
                    };
                    let mut c = cell::rate::rate_cell(&self.cx, run, settings, self.interrupt.clone()).await;
                    if *self.interrupt.borrow() {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                    c.repetition = rep;
                    self.keep_rate(&c, &label)?;
                }
            }
        }
        Ok(())
    }

    /// The context's prompt for rate cells: `None` when Ctrl-C came, `Some(None)` when it
    /// could not be sized (its cells are kept as errors).
    async fn rate_prompt(&mut self, ctx: u32, r: &RatePlan, rep: u32) -> Result<Option<Option<SizedPrompt>>> {
        if let Some(s) = self.prompts.get(&ctx) {
            return Ok(Some(Some(s.clone())));
        }
        match self.size(ctx, 0, ctx).await {
            None => {
                self.summary.interrupted = true;
                Ok(None)
            }
            Some(Ok(s)) => {
                self.sized_by.get_or_insert(s.method);
                self.prompts.insert(ctx, s.clone());
                Ok(Some(Some(s)))
            }
            Some(Err(e)) => {
                let message = self.cx.client.scrub(&format!("sizing the prompt failed: {e:#}"));
                for &rate in &r.rates {
                    let now = self.cx.clock.now_s();
                    let c = crate::format::RateCell {
                        schema_version: crate::format::SCHEMA_VERSION,
                        context: ctx,
                        rate_rps: rate,
                        repetition: rep,
                        status: Status::Error,
                        prompt_tokens: None,
                        window: crate::format::Window { start_s: now, end_s: now + 1e-3 },
                        requests: Vec::new(),
                        error: Some(CellError { message: message.clone(), http_status: None, cause: None }),
                    };
                    let label = self.rate_label(ctx, rate, rep);
                    self.keep_rate(&c, &label)?;
                }
                Ok(Some(None))
            }
        }
    }

    /// With drawn lengths, the filler's words priced in the server's tokens, once. `None`
    /// without drawn lengths, or when Ctrl-C came (the plan tells which).
    async fn drawn_lengths_setup(&mut self, r: &RatePlan) -> Result<Option<std::sync::Arc<WordCosts>>> {
        if r.input.is_none() && r.output.is_none() {
            return Ok(None);
        }
        self.progress.current("pricing the filler's words in the server's tokens");
        let Some(costs) = self.interruptible(super::trace::word_costs(&self.cx)).await else {
            self.summary.interrupted = true;
            return Ok(None);
        };
        Ok(Some(std::sync::Arc::new(costs.context("pricing the filler's words")?)))
    }

    /// A rate cell's prompts with drawn lengths: request i's input (the context's where the
    /// input is not drawn) and answer from the cell's seed, its blocks its own, its tag its
    /// own: nothing is shared between requests but the chat template.
    async fn drawn_prompts(
        &mut self,
        r: &RatePlan,
        ctx: u32,
        schedule: &[f64],
        seed: u64,
        costs: &std::sync::Arc<WordCosts>,
        mark: &str,
    ) -> Result<Option<cell::rate::Prompts>> {
        let limit = self.cx.request_limit.unwrap_or(u64::MAX);
        let n = schedule.len();
        let inputs = match r.input {
            Some(l) => l.draw(n, seed ^ 0x1_0000_0001, limit.saturating_sub(2)),
            None => vec![u64::from(ctx); n],
        };
        let outputs = match r.output {
            Some(l) => l.draw(n, seed ^ 0x2_0000_0002, u64::from(u32::MAX)),
            None => vec![u64::from(self.cx.max_output); n],
        };
        let requests = (0..n)
            .map(|i| {
                let input = inputs[i];
                let output = outputs[i].min(limit.saturating_sub(input).max(1));
                let blocks = (0..input.div_ceil(512))
                    .map(|b| (1 << 61) | (seed & 0xffff_ffff) << 24 | (i as u64) << 12 | b)
                    .collect();
                ReplayRequest {
                    at_s: schedule[i],
                    trace_s: schedule[i],
                    input_tokens: input,
                    output_tokens: output,
                    blocks,
                }
            })
            .collect();
        let replay = Replay {
            format: crate::bench::trace::TraceFormat::Mooncake,
            requests,
            block_tokens: 512,
            counts: Default::default(),
            span_s: schedule.last().copied().unwrap_or(0.0).max(1e-3),
        };
        let tag = format!("{} {mark}", self.tag);
        let Some(tag_tokens) = self.interruptible(super::trace::tag_cost(&self.cx, &format!("[q{n} {tag}]"))).await
        else {
            self.summary.interrupted = true;
            return Ok(None);
        };
        let prompts = cell::rate::ReplayPrompts {
            replay: std::sync::Arc::new(replay),
            tag,
            tag_tokens: tag_tokens.context("counting the tag's tokens")?,
            costs: costs.clone(),
            tag_each: true,
        };
        Ok(Some(cell::rate::Prompts::Replay(std::sync::Arc::new(prompts))))
    }

    fn rate_label(&self, ctx: u32, rate: f64, rep: u32) -> String {
        let cell = format!("{} at {rate} requests/s", context_label(ctx));
        match self.plan.matrix.repeat {
            1 => cell,
            n => format!("{cell} · rep {rep}/{n}"),
        }
    }

    /// Writes a rate cell, shows what it did and counts it.
    pub(super) fn keep_rate(&mut self, c: &crate::format::RateCell, label: &str) -> Result<()> {
        self.recorder.write_rate_cell(c)?;
        let counted: Vec<&crate::format::ScheduledRequest> =
            c.requests.iter().filter(|q| q.scheduled_s >= c.window.start_s && q.scheduled_s < c.window.end_s).collect();
        let done = counted.iter().filter(|q| q.error.is_none() && q.end_s.is_some() && q.send_s.is_some()).count();
        let said = match &c.error {
            Some(e) => format!("Error: {}", e.message),
            None => format!(
                "{} requests scheduled in the window, {done} completed ({:.2} requests/s)",
                counted.len(),
                done as f64 / (c.window.end_s - c.window.start_s)
            ),
        };
        self.progress.cell_done(&format!("{label}: {said}"));
        self.summary.written += 1;
        match c.status {
            Status::Valid => self.summary.valid += 1,
            _ => self.summary.errors += 1,
        }
        Ok(())
    }
}

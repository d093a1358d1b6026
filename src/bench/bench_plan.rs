//! `site bench` as one checked plan: the flags as typed (`BenchFlags`, plain data the command
//! line fills) become a `BenchPlan` in one place, [`BenchPlan::new`], where every rule that
//! ties two flags together lives. The session then runs the plan's [`Mode`]; each run it
//! measures (a reuse level, a side of `--versus`) is a [`RunSpec`] of its own: its target,
//! workload, facts and run id, never a rewritten copy of the whole plan.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::arrivals::{parse_rates, Arrival};
use super::client::http::{Credentials, Endpoint};
use super::client::tls::TlsOptions;
use super::launch::LaunchSettings;
use super::lengths::Lengths;
use super::loopdetect::LoopSettings;
use super::plan::{parse_count_list, parse_token_list};
use super::prompt::Api;
use super::replay::ReplaySettings;
use super::telemetry::TelemetrySource;
use super::trace::Trace;
use super::ManifestFacts;

/// `site bench`'s flags as the command line gave them: nothing checked yet, nothing read
/// from the environment or the disk here (the caller read the key, the headers and the
/// notes file).
#[derive(Debug, Clone, Default)]
pub struct BenchFlags {
    pub endpoint: String,
    pub credentials: Credentials,
    pub tls: TlsOptions,
    pub telemetry: Option<TelemetrySource>,
    pub model: Option<String>,
    pub api: Api,
    pub contexts: String,
    pub concurrency: String,
    pub prefill_contexts: Option<String>,
    pub duration: Duration,
    pub max_output: u32,
    pub repeat: u32,
    pub prefill_samples: u32,
    pub prefix_reuse: Vec<u32>,
    pub turns: Option<u32>,
    pub kv_budget: Option<u64>,
    pub run_id: Option<String>,
    pub data_dir: PathBuf,
    pub resume: bool,
    pub dry_run: bool,
    pub launch: Option<String>,
    pub restarts: Option<u32>,
    pub launch_timeout: Duration,
    pub versus: Option<String>,
    pub versus_launch: Option<String>,
    pub versus_run_id: Option<String>,
    pub warmup_hold: Duration,
    pub warmup_timeout: Duration,
    pub drain_timeout: Duration,
    pub stall_timeout: Duration,
    pub gauge_interval: Option<Duration>,
    pub loop_min_chars: usize,
    pub loop_min_cycles: usize,
    pub no_loop_detection: bool,
    pub facts: ManifestFacts,
    /// `--rates`: request rates per second, measured open-loop instead of the matrix.
    pub rates: Option<String>,
    pub arrival: Option<String>,
    pub seed: Option<u64>,
    pub max_in_flight: u32,
    /// `--input-tokens` / `--output-tokens`: lengths drawn per request of a rate run.
    pub input_tokens: Option<String>,
    pub output_tokens: Option<String>,
    /// `--trace`: the trace, read by the caller, and its file's name.
    pub trace: Option<(String, Trace)>,
    pub trace_start: Option<f64>,
    pub trace_duration: Option<f64>,
    pub speedup: Option<f64>,
    pub scale_lengths: Option<f64>,
    pub max_input: Option<u64>,
}

/// A bench run, checked: what is measured, where, how, and into which folder.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    pub target: Target,
    pub matrix: Matrix,
    pub workload: Workload,
    pub timing: Timing,
    pub folder: Folder,
    pub facts: ManifestFacts,
    pub mode: Mode,
    /// Device telemetry sampled during the run (`--telemetry`).
    pub telemetry: Option<TelemetrySource>,
}

/// The server measured: where it answers, how to reach it, which model, and the command
/// that starts it when the bench manages it (`--launch`).
#[derive(Debug, Clone)]
pub struct Target {
    pub endpoint: String,
    /// The API key and extra headers: sent, never stored or shown.
    pub credentials: Credentials,
    pub tls: TlsOptions,
    pub model: Option<String>,
    pub launch: Option<LaunchSettings>,
}

/// The cells: contexts x concurrency, the prefill contexts, and how often each is measured.
#[derive(Debug, Clone)]
pub struct Matrix {
    pub contexts: Vec<u32>,
    pub concurrency: Vec<u32>,
    pub prefill_contexts: Vec<u32>,
    /// Measurements of each cell (`--repeat`), interleaved across the matrix.
    pub repeat: u32,
    /// Measured prefill requests per context and repetition (`--prefill-samples`).
    pub prefill_samples: u32,
    /// The KV budget the flags set in place of the server's (`--kv-budget`).
    pub kv_budget: Option<u64>,
}

/// What every request of one run asks: a run measures one workload (a second prefix-reuse
/// level is a second run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    pub api: Api,
    pub max_output: u32,
    /// Prefix reuse of the decode cells, in percent.
    pub prefix_reuse: Option<u32>,
    /// Turns of each stream's conversation (`--turns`).
    pub turns: Option<u32>,
}

/// How long each part of a cell may take, and when a stream is looping.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub duration: Duration,
    pub warmup_hold: Duration,
    pub warmup_timeout: Duration,
    pub drain_timeout: Duration,
    pub stall_timeout: Duration,
    pub gauge_interval: Duration,
    pub loop_settings: LoopSettings,
    pub detect_loops: bool,
}

/// The data folder and the run in it.
#[derive(Debug, Clone)]
pub struct Folder {
    pub data_dir: PathBuf,
    pub run_id: Option<String>,
    pub resume: bool,
    pub dry_run: bool,
}

/// What one `site bench` measures.
#[derive(Debug, Clone)]
pub enum Mode {
    /// One run of the plan's workload.
    One,
    /// `--prefix-reuse 0,90`: the matrix at each level in turn, each level a run of its own
    /// named `RUN-reuse<PCT>` (sorted, each once, at least two).
    ReuseLevels(Vec<u32>),
    /// `--versus URL`: the same matrix on a second live server, cell by cell beside the first.
    Versus(Versus),
    /// `--rates`: each context at each offered rate, requests sent on a schedule whether or
    /// not earlier ones have ended (open loop), instead of the concurrency matrix.
    Rates(RatePlan),
    /// `--trace`: a production trace replayed open-loop, each request at its timestamp with
    /// its lengths and its prompt's shared blocks.
    Trace(TracePlan),
}

/// The trace a replay sends, and how (the slice is cut once the server's length is known).
#[derive(Debug, Clone, PartialEq)]
pub struct TracePlan {
    /// The trace file's name (recorded; its folder is not).
    pub file: String,
    pub trace: Trace,
    pub settings: ReplaySettings,
    pub max_in_flight: u32,
}

/// The open loop of a rate run.
#[derive(Debug, Clone, PartialEq)]
pub struct RatePlan {
    /// The offered rates; empty with `auto` until the probe has measured the peak.
    pub rates: Vec<f64>,
    /// `--rates auto`: a closed-loop probe of the peak first, then rates from 10% to 110% of
    /// it, then two more near the knee.
    pub auto: bool,
    pub arrival: Arrival,
    /// Draws every schedule of the run (recorded, so `--seed` draws it again).
    pub seed: u64,
    pub max_in_flight: u32,
    /// Each request's input length drawn from this (in place of the contexts' sized prompts).
    pub input: Option<Lengths>,
    /// Each request's answer length drawn from this (in place of `--max-output`).
    pub output: Option<Lengths>,
}

/// `--versus`: the second server, and its run's id.
#[derive(Debug, Clone)]
pub struct Versus {
    pub target: Target,
    /// Default: the first run's id with `-versus`.
    pub run_id: Option<String>,
}

/// One run the session measures: a reuse level's, a side's, or the only one.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub target: Target,
    pub workload: Workload,
    pub facts: ManifestFacts,
    /// The run's id; `None`: named from the model, engine and time once the server is known.
    pub run_id: Option<String>,
    /// With several reuse levels: every level's, this run being `workload.prefix_reuse`'s.
    pub levels: Vec<u32>,
    /// `A` or `B` under `--versus`: the progress line says which server a cell ran on.
    pub side: Option<&'static str>,
}

impl BenchPlan {
    /// The flags, checked against each other: every rule that involves two flags is here.
    pub fn new(f: BenchFlags) -> Result<BenchPlan> {
        let matrix = matrix(&f)?;
        if f.turns.is_some() && f.api == Api::Completions {
            bail!("--turns needs --api chat: a conversation's turns are chat messages");
        }
        let levels = reuse_levels(&f.prefix_reuse)?;
        if levels.len() > 1 && f.versus.is_some() {
            bail!("--versus measures one workload on two servers: give one --prefix-reuse level");
        }
        let launch = launch(&f)?;
        let mut facts = f.facts.clone();
        if let Some(l) = &launch {
            if facts.launch_command.is_some() {
                bail!("--launch is the launch command: leave out --launch-command");
            }
            facts.launch_command = Some(l.command.clone());
        }
        let target = Target {
            endpoint: f.endpoint.clone(),
            credentials: f.credentials.clone(),
            tls: f.tls.clone(),
            model: f.model.clone(),
            launch,
        };
        let trace = trace_plan(&f, &levels)?;
        let mode = match (&f.versus, rate_plan(&f, &levels)?) {
            (Some(b), _) => Mode::Versus(versus(&f, &target, b)?),
            (None, Some(rates)) => Mode::Rates(rates),
            (None, None) if trace.is_some() => Mode::Trace(trace.expect("checked")),
            (None, None) if levels.len() > 1 => Mode::ReuseLevels(levels.clone()),
            (None, None) => Mode::One,
        };
        Ok(BenchPlan {
            target,
            matrix,
            workload: Workload {
                api: f.api,
                max_output: f.max_output,
                prefix_reuse: levels.first().copied(),
                turns: f.turns,
            },
            timing: timing(&f),
            folder: Folder { data_dir: f.data_dir, run_id: f.run_id, resume: f.resume, dry_run: f.dry_run },
            facts,
            mode,
            telemetry: f.telemetry,
        })
    }

    /// The run of the plan's own target and workload (the first level's, side A's).
    pub fn first_run(&self) -> RunSpec {
        RunSpec {
            target: self.target.clone(),
            workload: self.workload,
            facts: self.facts.clone(),
            run_id: self.folder.run_id.clone(),
            levels: Vec::new(),
            side: None,
        }
    }

    /// Reuse level `level` of [`Mode::ReuseLevels`]: a run of its own, `BASE-reuse<level>`
    /// (`BASE`: `--run-id`, or the first level's run's id without its suffix).
    pub fn level_run(&self, levels: &[u32], level: u32, base: Option<String>) -> RunSpec {
        RunSpec {
            workload: Workload { prefix_reuse: Some(level), ..self.workload },
            run_id: base,
            levels: levels.to_vec(),
            ..self.first_run()
        }
    }

    /// The two sides of [`Mode::Versus`]: A's run and B's (B's run id, when not given, is
    /// A's with `-versus`, known once A's folder is open).
    pub fn versus_runs(&self, b: &Versus) -> [RunSpec; 2] {
        let mut facts = self.facts.clone();
        if let Some(l) = &b.target.launch {
            facts.launch_command = Some(l.command.clone());
        }
        let a = RunSpec { side: Some("A"), ..self.first_run() };
        let b =
            RunSpec { target: b.target.clone(), facts, run_id: b.run_id.clone(), side: Some("B"), ..self.first_run() };
        [a, b]
    }
}

impl RunSpec {
    /// The id of this run's folder, given the id the run is named by: `BASE-reuse<PCT>` for
    /// a level of several, else the id itself.
    pub fn folder_id(&self, base: &str) -> String {
        match self.workload.prefix_reuse.filter(|_| self.levels.len() > 1) {
            Some(level) => level_run_id(base, level),
            None => base.to_string(),
        }
    }

    /// The ids of the other levels' runs, which this one names (none for a single level).
    pub fn other_levels(&self, base: &str) -> Vec<String> {
        match self.workload.prefix_reuse.filter(|_| self.levels.len() > 1) {
            Some(level) => self.levels.iter().filter(|&&l| l != level).map(|&l| level_run_id(base, l)).collect(),
            None => Vec::new(),
        }
    }
}

/// The run of prefix-reuse level `level` of a session of several (`RUN-reuse90`).
pub fn level_run_id(base: &str, level: u32) -> String {
    format!("{base}-reuse{level}")
}

fn matrix(f: &BenchFlags) -> Result<Matrix> {
    let contexts = parse_token_list(&f.contexts).context("--contexts")?;
    let prefill_contexts = match &f.prefill_contexts {
        Some(p) => parse_token_list(p).context("--prefill-contexts")?,
        None => contexts.clone(),
    };
    Ok(Matrix {
        contexts,
        concurrency: parse_count_list(&f.concurrency).context("--concurrency")?,
        prefill_contexts,
        repeat: f.repeat,
        prefill_samples: f.prefill_samples,
        kv_budget: f.kv_budget,
    })
}

/// `--prefix-reuse`'s levels in order, each once.
fn reuse_levels(given: &[u32]) -> Result<Vec<u32>> {
    let mut levels = given.to_vec();
    levels.sort_unstable();
    levels.dedup();
    if levels.len() != given.len() {
        bail!("--prefix-reuse: each level once");
    }
    Ok(levels)
}

/// `--launch` with its restarts: at most one process per repetition.
fn launch(f: &BenchFlags) -> Result<Option<LaunchSettings>> {
    let Some(command) = f.launch.clone() else { return Ok(None) };
    if command.trim().is_empty() || f.versus_launch.as_ref().is_some_and(|c| c.trim().is_empty()) {
        bail!("--launch: the command is empty");
    }
    if f.versus.is_some() && f.versus_launch.is_none() {
        bail!("--versus with --launch: pass --versus-launch CMD, the command that starts B's server");
    }
    let restarts = f.restarts.unwrap_or(1);
    if restarts > f.repeat {
        bail!(
            "--restarts {restarts} needs --repeat {restarts} or more: each server process measures at least one repetition"
        );
    }
    Ok(Some(LaunchSettings { command, restarts, ready_timeout: f.launch_timeout }))
}

/// `--versus URL`: B's target (A's credentials and TLS, B's address and launch command);
/// two different servers and two different run ids.
fn versus(f: &BenchFlags, a: &Target, endpoint: &str) -> Result<Versus> {
    let (ea, eb) = (Endpoint::parse(&a.endpoint)?, Endpoint::parse(endpoint).context("--versus")?);
    if ea.same_server(&eb) {
        bail!("--versus names the same server as --endpoint ({}): give B's own address", eb.display());
    }
    if let (Some(id), Some(b)) = (&f.run_id, &f.versus_run_id) {
        if id == b {
            bail!("--versus-run-id is --run-id ({id}): the two runs need two ids");
        }
    }
    let launch = match (&a.launch, &f.versus_launch) {
        (Some(l), Some(command)) => Some(LaunchSettings { command: command.clone(), ..l.clone() }),
        _ => None,
    };
    Ok(Versus {
        target: Target { endpoint: endpoint.to_string(), launch, ..a.clone() },
        run_id: f.versus_run_id.clone(),
    })
}

/// `--rates` with its arrival process and seed: not beside `--versus`, several reuse
/// levels, `--turns` or `--resume` (a rate run is measured whole).
fn rate_plan(f: &BenchFlags, levels: &[u32]) -> Result<Option<RatePlan>> {
    let Some(rates) = &f.rates else {
        if f.arrival.is_some() || f.seed.is_some() {
            bail!("--arrival and --seed draw the schedule of --rates: give --rates");
        }
        if f.input_tokens.is_some() || f.output_tokens.is_some() {
            bail!("--input-tokens and --output-tokens draw the lengths of --rates' requests: give --rates");
        }
        return Ok(None);
    };
    let auto = rates.trim() == "auto";
    let rates = if auto { Vec::new() } else { parse_rates(rates).context("--rates")? };
    if auto && f.input_tokens.is_some() {
        bail!("--rates auto probes each context's own prompt: leave out --input-tokens");
    }
    let refused = [
        (f.versus.is_some(), "--versus"),
        (levels.len() > 1, "several --prefix-reuse levels"),
        (f.turns.is_some(), "--turns"),
        (f.resume, "--resume (a rate run is measured whole)"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(on, _)| *on) {
        bail!("--rates measures an open loop of single requests: leave out {flag}");
    }
    let arrival = match &f.arrival {
        Some(a) => a.parse().context("--arrival")?,
        None => Arrival::Poisson,
    };
    if f.max_in_flight == 0 {
        bail!("--max-in-flight: at least 1 request");
    }
    let seed = f.seed.unwrap_or_else(|| fastrand::u64(..));
    let lengths = |flag: &str, v: &Option<String>| -> Result<Option<Lengths>> {
        v.as_deref().map(|s| s.parse::<Lengths>().context(flag.to_string())).transpose()
    };
    Ok(Some(RatePlan {
        rates,
        auto,
        arrival,
        seed,
        max_in_flight: f.max_in_flight,
        input: lengths("--input-tokens", &f.input_tokens)?,
        output: lengths("--output-tokens", &f.output_tokens)?,
    }))
}

/// `--trace` with its slice and scaling: not beside `--rates` (a trace is its own
/// schedule), `--versus`, several reuse levels, `--turns` or `--resume`.
fn trace_plan(f: &BenchFlags, levels: &[u32]) -> Result<Option<TracePlan>> {
    let Some((file, trace)) = &f.trace else {
        let given = [
            f.trace_start.is_some(),
            f.trace_duration.is_some(),
            f.speedup.is_some(),
            f.scale_lengths.is_some(),
            f.max_input.is_some(),
        ];
        if given.contains(&true) {
            bail!("--trace-start, --trace-duration, --speedup, --scale-lengths and --max-input shape a replay: give --trace");
        }
        return Ok(None);
    };
    let refused = [
        (f.rates.is_some(), "--rates (the trace's timestamps are the schedule)"),
        (f.arrival.is_some() || f.seed.is_some(), "--arrival and --seed (the trace's timestamps are the schedule)"),
        (
            f.input_tokens.is_some() || f.output_tokens.is_some(),
            "--input-tokens and --output-tokens (the trace's lengths are sent)",
        ),
        (f.versus.is_some(), "--versus"),
        (levels.len() > 1 || !f.prefix_reuse.is_empty(), "--prefix-reuse (the trace's block ids set the reuse)"),
        (f.turns.is_some(), "--turns"),
        (f.resume, "--resume (a replay is measured whole)"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(on, _)| *on) {
        bail!("--trace replays the trace's own requests: leave out {flag}");
    }
    if f.max_in_flight == 0 {
        bail!("--max-in-flight: at least 1 request");
    }
    let settings = ReplaySettings {
        start_s: f.trace_start.unwrap_or(0.0),
        duration_s: f.trace_duration,
        speedup: f.speedup.unwrap_or(1.0),
        scale_lengths: f.scale_lengths.unwrap_or(1.0),
        max_input: f.max_input,
    };
    // Checked now, against no server limit: a slice with no request fails before any run.
    crate::bench::replay::plan_replay(trace, settings, None)?;
    Ok(Some(TracePlan { file: file.clone(), trace: trace.clone(), settings, max_in_flight: f.max_in_flight }))
}

fn timing(f: &BenchFlags) -> Timing {
    Timing {
        duration: f.duration,
        warmup_hold: f.warmup_hold,
        warmup_timeout: f.warmup_timeout,
        drain_timeout: f.drain_timeout,
        stall_timeout: f.stall_timeout,
        gauge_interval: f.gauge_interval.unwrap_or_else(|| super::default_gauge_interval(f.duration)),
        loop_settings: LoopSettings {
            min_chars: f.loop_min_chars,
            min_cycles: f.loop_min_cycles.max(2),
            ..LoopSettings::default()
        },
        detect_loops: !f.no_loop_detection,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> BenchFlags {
        BenchFlags {
            endpoint: "http://127.0.0.1:8000".into(),
            contexts: "1k,2k".into(),
            concurrency: "1,4".into(),
            duration: Duration::from_secs(3),
            max_output: 64,
            repeat: 1,
            prefill_samples: 3,
            max_in_flight: 100,
            ..BenchFlags::default()
        }
    }

    #[test]
    fn rates_are_a_mode_of_their_own_with_their_rules() {
        let rates = |more: BenchFlags| BenchFlags { rates: Some("2,0.5".into()), ..more };
        let plan = BenchPlan::new(rates(BenchFlags { seed: Some(7), ..flags() })).unwrap();
        let Mode::Rates(r) = &plan.mode else { panic!("rates") };
        assert_eq!((r.rates.clone(), r.arrival, r.seed), (vec![0.5, 2.0], Arrival::Poisson, 7));
        let gamma = BenchPlan::new(rates(BenchFlags { arrival: Some("gamma:2".into()), ..flags() })).unwrap();
        assert!(matches!(gamma.mode, Mode::Rates(RatePlan { arrival: Arrival::Gamma { .. }, .. })));
        assert!(refused(rates(BenchFlags { turns: Some(2), ..flags() })).contains("leave out --turns"));
        assert!(refused(rates(BenchFlags { resume: true, run_id: Some("x".into()), ..flags() })).contains("--resume"));
        assert!(
            refused(rates(BenchFlags { versus: Some("http://127.0.0.1:9000".into()), ..flags() })).contains("--versus")
        );
        assert!(refused(BenchFlags { rates: Some("0".into()), ..flags() }).starts_with("--rates"));
        assert!(refused(BenchFlags { seed: Some(1), ..flags() }).contains("give --rates"));
        assert!(refused(rates(BenchFlags { arrival: Some("bursty".into()), ..flags() })).starts_with("--arrival"));
        let drawn = BenchPlan::new(rates(BenchFlags { input_tokens: Some("512:128".into()), ..flags() })).unwrap();
        assert!(matches!(
            drawn.mode,
            Mode::Rates(RatePlan { input: Some(Lengths { mean: 512.0, sd: 128.0 }), output: None, .. })
        ));
        assert!(
            refused(rates(BenchFlags { output_tokens: Some("0".into()), ..flags() })).starts_with("--output-tokens")
        );
        assert!(refused(BenchFlags { input_tokens: Some("512".into()), ..flags() }).contains("give --rates"));
        let auto = BenchPlan::new(BenchFlags { rates: Some("auto".into()), ..flags() }).unwrap();
        assert!(matches!(&auto.mode, Mode::Rates(RatePlan { auto: true, rates, .. }) if rates.is_empty()));
    }

    fn refused(f: BenchFlags) -> String {
        format!("{:#}", BenchPlan::new(f).expect_err("the plan is refused"))
    }

    #[test]
    fn a_trace_is_a_mode_of_its_own_and_its_flags_need_it() {
        let rows = "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 8, \"hash_ids\": [1, 2]}\n{\"timestamp\": 3000, \"input_length\": 600, \"output_length\": 8, \"hash_ids\": [1, 3]}";
        let lines: Vec<(usize, String)> = rows.lines().enumerate().map(|(i, l)| (i + 1, l.to_string())).collect();
        let trace = crate::bench::trace::parse("t.jsonl", &lines, None).unwrap();
        let traced = |more: BenchFlags| BenchFlags { trace: Some(("t.jsonl".into(), trace.clone())), ..more };
        let plan = BenchPlan::new(traced(BenchFlags { speedup: Some(2.0), ..flags() })).unwrap();
        let Mode::Trace(t) = &plan.mode else { panic!("trace") };
        assert_eq!((t.file.as_str(), t.settings.speedup, t.settings.start_s), ("t.jsonl", 2.0, 0.0));
        assert!(refused(traced(BenchFlags { rates: Some("1".into()), ..flags() })).contains("leave out --rates"));
        assert!(refused(traced(BenchFlags { prefix_reuse: vec![50], ..flags() })).contains("--prefix-reuse"));
        assert!(refused(traced(BenchFlags { trace_start: Some(10.0), ..flags() })).contains("holds no request"));
        assert!(refused(traced(BenchFlags { scale_lengths: Some(-1.0), ..flags() })).contains("--scale-lengths"));
        assert!(refused(BenchFlags { speedup: Some(2.0), ..flags() }).contains("give --trace"));
    }

    #[test]
    fn one_level_is_one_run_of_that_workload() {
        let plan = BenchPlan::new(BenchFlags { prefix_reuse: vec![90], ..flags() }).unwrap();
        assert!(matches!(plan.mode, Mode::One));
        let run = plan.first_run();
        assert_eq!(run.workload.prefix_reuse, Some(90));
        assert_eq!(run.folder_id("r"), "r");
        assert!(run.other_levels("r").is_empty());
        assert_eq!(plan.matrix.prefill_contexts, vec![1024, 2048]);
    }

    #[test]
    fn each_reuse_level_is_a_run_of_its_own_naming_the_others() {
        let plan = BenchPlan::new(BenchFlags { prefix_reuse: vec![90, 0, 50], ..flags() }).unwrap();
        let Mode::ReuseLevels(levels) = &plan.mode else { panic!("levels") };
        assert_eq!(levels, &[0, 50, 90]);
        let run = plan.level_run(levels, 50, Some("s".into()));
        assert_eq!(run.workload.prefix_reuse, Some(50));
        assert_eq!(run.folder_id("s"), "s-reuse50");
        assert_eq!(run.other_levels("s"), ["s-reuse0", "s-reuse90"]);
        // The plan's own workload is untouched: a level is a run, not a rewritten plan.
        assert_eq!(plan.workload.prefix_reuse, Some(0));
    }

    #[test]
    fn cross_flag_rules_are_refused_with_the_flags_named() {
        assert!(refused(BenchFlags { prefix_reuse: vec![0, 0], ..flags() }).contains("each level once"));
        let turns = BenchFlags { turns: Some(3), api: Api::Completions, ..flags() };
        assert!(refused(turns).contains("--turns needs --api chat"));
        let levels_versus =
            BenchFlags { prefix_reuse: vec![0, 90], versus: Some("http://127.0.0.1:9000".into()), ..flags() };
        assert!(refused(levels_versus).contains("give one --prefix-reuse level"));
        let same = BenchFlags { versus: Some("http://localhost:8000".into()), ..flags() };
        assert!(refused(same).contains("names the same server"));
        let ids = BenchFlags {
            versus: Some("http://127.0.0.1:9000".into()),
            run_id: Some("x".into()),
            versus_run_id: Some("x".into()),
            ..flags()
        };
        assert!(refused(ids).contains("the two runs need two ids"));
        assert!(refused(BenchFlags { contexts: "".into(), ..flags() }).starts_with("--contexts"));
    }

    #[test]
    fn launch_rules() {
        let launch = |more: BenchFlags| BenchFlags { launch: Some("server".into()), ..more };
        assert!(refused(BenchFlags { launch: Some("  ".into()), ..flags() }).contains("the command is empty"));
        let restarts = launch(BenchFlags { restarts: Some(3), repeat: 2, ..flags() });
        assert!(refused(restarts).contains("--restarts 3 needs --repeat 3"));
        let both = launch(BenchFlags {
            facts: ManifestFacts { launch_command: Some("x".into()), ..ManifestFacts::default() },
            ..flags()
        });
        assert!(refused(both).contains("leave out --launch-command"));
        let b_missing = launch(BenchFlags { versus: Some("http://127.0.0.1:9000".into()), ..flags() });
        assert!(refused(b_missing).contains("pass --versus-launch"));
        let plan = BenchPlan::new(launch(BenchFlags { restarts: Some(2), repeat: 2, ..flags() })).unwrap();
        assert_eq!(plan.facts.launch_command.as_deref(), Some("server"));
        assert_eq!(plan.target.launch.as_ref().map(|l| l.restarts), Some(2));
    }

    #[test]
    fn versus_sides_are_two_runs_with_their_own_target_and_launch_command() {
        let plan = BenchPlan::new(BenchFlags {
            launch: Some("serve-a".into()),
            versus: Some("http://127.0.0.1:9000".into()),
            versus_launch: Some("serve-b".into()),
            run_id: Some("a".into()),
            ..flags()
        })
        .unwrap();
        let Mode::Versus(b) = &plan.mode else { panic!("versus") };
        let [ra, rb] = plan.versus_runs(b);
        assert_eq!((ra.side, rb.side), (Some("A"), Some("B")));
        assert_eq!(rb.target.endpoint, "http://127.0.0.1:9000");
        assert_eq!(rb.facts.launch_command.as_deref(), Some("serve-b"));
        assert_eq!(ra.facts.launch_command.as_deref(), Some("serve-a"));
        assert_eq!((ra.run_id.as_deref(), rb.run_id.as_deref()), (Some("a"), None));
    }

    #[test]
    fn the_gauge_interval_and_loop_cycles_take_their_defaults_and_floors() {
        let plan = BenchPlan::new(BenchFlags { loop_min_cycles: 1, ..flags() }).unwrap();
        assert_eq!(plan.timing.gauge_interval, Duration::from_millis(300));
        assert_eq!(plan.timing.loop_settings.min_cycles, 2);
        assert!(plan.timing.detect_loops);
    }
}

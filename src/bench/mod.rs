//! The embedded load generator: drives an OpenAI-compatible server across the context x
//! concurrency matrix as `methodology.md` says and writes a run folder in the data format.
//! Never imports `render`; figures for log lines come from `normalize`.

pub mod discover;
pub mod http;
pub mod loopdetect;
pub mod plan;
pub mod progress;
pub mod prompt;
pub mod protocol;
pub mod recorder;
pub mod runner;
pub mod sse;
pub mod stream;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::sync::watch;

use crate::format::{
    BenchTool, Cell, CellError, DecodeTest, EngineInfo, ErrorCause, ModelInfo, Origin, Phase, PrefillMode, RunManifest,
    RunSettings, Status, SCHEMA_VERSION,
};
use crate::units::numbers::context_label;
use discover::{EngineKind, ServerInfo};
use http::{Endpoint, HttpClient};
use loopdetect::LoopSettings;
use plan::{Capacity, PlannedCell};
use progress::Progress;
use prompt::Api;
use recorder::Recorder;
use runner::CellContext;
use stream::{StreamSettings, WindowClock};

pub use crate::format::facts::ManifestFacts;

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub endpoint: String,
    pub api_key: Option<String>,
    pub model: Option<String>,
    pub api: Api,
    pub contexts: Vec<u32>,
    pub concurrency: Vec<u32>,
    pub prefill_contexts: Vec<u32>,
    pub duration: Duration,
    pub max_output: u32,
    pub kv_budget: Option<u64>,
    pub run_id: Option<String>,
    pub data_dir: PathBuf,
    pub resume: bool,
    pub dry_run: bool,
    pub warmup_hold: Duration,
    pub warmup_timeout: Duration,
    pub drain_timeout: Duration,
    pub stall_timeout: Duration,
    pub gauge_interval: Duration,
    pub loop_settings: LoopSettings,
    pub detect_loops: bool,
    pub facts: ManifestFacts,
}

#[derive(Debug, Default, Clone)]
pub struct BenchSummary {
    pub run_dir: PathBuf,
    pub written: usize,
    pub skipped_existing: usize,
    pub valid: usize,
    pub looped: usize,
    pub over_capacity: usize,
    pub errors: usize,
    pub interrupted: bool,
    /// Cells in a row, up to the last one, whose server could not be reached.
    pub unreachable_streak: u32,
}

/// Runs the bench to the end (or to Ctrl-C) on a runtime of its own.
pub fn run_blocking(cfg: BenchConfig) -> Result<BenchSummary> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // Whatever failed, its message may quote the server: the key never reaches the terminal.
    let scrubber = crate::redact::Scrubber::new(cfg.api_key.clone());
    rt.block_on(run(cfg)).map_err(|e| anyhow::anyhow!(scrubber.scrub(&format!("{e:#}"))))
}

fn capacity(info: &ServerInfo, cfg: &BenchConfig) -> Capacity {
    let mut cap = info.capacity.clone();
    if let Some(b) = cfg.kv_budget {
        cap.kv_budget_tokens = Some(b);
        cap.kv_budget_source = Some("--kv-budget".into());
    }
    cap
}

fn default_run_id(model: &str, engine: &str) -> String {
    let stamp: String = recorder::now_rfc3339().chars().filter(|c| c.is_ascii_digit()).take(14).collect();
    let mut id = format!(
        "{}-{}-{}",
        crate::units::slugify(&crate::units::model_display_name(model)),
        crate::units::slugify(engine),
        stamp
    );
    id.truncate(128);
    id
}

fn describe(p: &PlannedCell) -> String {
    match p.phase {
        Phase::Prefill => format!("prefill {}", context_label(p.context)),
        Phase::Decode => format!("decode {} x {}", context_label(p.context), p.concurrency),
    }
}

fn manifest(cfg: &BenchConfig, info: &ServerInfo, model: &str, cap: &Capacity) -> Result<RunManifest> {
    let f = &cfg.facts;
    let hardware = f.hardware(Some(std::env::consts::OS))?;
    let engine = f.engine.clone().unwrap_or_else(|| info.engine.name().to_string());
    let version = f
        .engine_version
        .clone()
        .or_else(|| info.version.clone().filter(|v| v != "b0-unknown"))
        .unwrap_or_else(|| "unknown".into());
    let repository = f.repository.clone().or_else(|| match info.engine {
        EngineKind::Vllm => Some("github.com/vllm-project/vllm".into()),
        EngineKind::Sglang => Some("github.com/sgl-project/sglang".into()),
        EngineKind::LlamaCpp => Some("github.com/ggml-org/llama.cpp".into()),
        EngineKind::Unknown => None,
    });
    Ok(RunManifest {
        schema_version: SCHEMA_VERSION,
        model: ModelInfo {
            id: f.model_id.clone().unwrap_or_else(|| model.to_string()),
            served_name: f.model_id.as_ref().filter(|id| id.as_str() != model).map(|_| model.to_string()),
            revision: f.revision.clone(),
        },
        hardware,
        engine: EngineInfo {
            name: engine,
            version,
            quantization: f.quantization.clone().or_else(|| info.quantization.clone()),
            backend: f.backend.clone(),
            repository,
            build: f.build.clone().or_else(|| info.build_info.clone()),
            commit: f.commit.clone(),
        },
        settings: RunSettings {
            contexts: cfg.contexts.clone(),
            concurrency: cfg.concurrency.clone(),
            prefill_contexts: cfg.prefill_contexts.clone(),
            duration_s: cfg.duration.as_secs_f64(),
            max_output_tokens: cfg.max_output,
            decode_test: DecodeTest::FixedDuration,
            prefill_mode: PrefillMode::DecodeWarmup,
            api: Some(cfg.api.name().into()),
            kv_budget_tokens: cap.kv_budget_tokens,
            kv_budget_source: cap.kv_budget_source.clone(),
        },
        launch_command: f.launch_command.as_deref().map(crate::redact::redact_command),
        bench_tool: BenchTool { name: "site bench".into(), version: env!("CARGO_PKG_VERSION").into() },
        origin: Origin::Measured,
        started_at: Some(recorder::now_rfc3339()),
        finished_at: None,
        description: f.description.clone(),
    })
}

/// `--resume` continues a run only under the same matrix, API and launch command: a cell
/// measured under other settings would sit beside the old ones as if comparable.
fn check_resumable(old: &RunManifest, new: &RunManifest, dir: &std::path::Path) -> Result<()> {
    let (o, n) = (&old.settings, &new.settings);
    if o.contexts != n.contexts
        || o.concurrency != n.concurrency
        || o.prefill_contexts != n.prefill_contexts
        || o.duration_s != n.duration_s
        || o.max_output_tokens != n.max_output_tokens
    {
        bail!("--resume: the matrix settings differ from those of {}; resume with the same --contexts, --concurrency, --prefill-contexts, --duration and --max-output", dir.display());
    }
    if o.api != n.api {
        bail!(
            "--resume: {} was measured with --api {}, not {}; resume with the same --api",
            dir.display(),
            o.api.as_deref().unwrap_or("?"),
            n.api.as_deref().unwrap_or("?")
        );
    }
    if old.launch_command != new.launch_command {
        bail!(
            "--resume: the launch command differs from the one recorded in {}; a resumed run must measure the same server setup (give the same --launch-command)",
            dir.display()
        );
    }
    Ok(())
}

fn cell_summary(cell: &Cell) -> String {
    let v = crate::analysis::normalize_cell(cell, Origin::Measured);
    let f = &v.figures;
    match cell.status {
        Status::Valid if cell.phase == Phase::Prefill => {
            format!("{:.0} prompt tok/s, TTFT {:.0} ms", f.prompt_tps.unwrap_or(0.0), f.ttft_ms.unwrap_or(0.0))
        }
        Status::Valid => format!(
            "{:.1} tok/s total, {:.1} per request, TTFT {:.0} ms, {:.1} active{}",
            f.total_tps.unwrap_or(0.0),
            f.per_request_tps.unwrap_or(0.0),
            f.ttft_ms.unwrap_or(0.0),
            f.avg_active.unwrap_or(0.0),
            if v.warnings.is_empty() {
                String::new()
            } else {
                format!(" (warning: {})", v.warnings.iter().map(|w| w.code.as_str()).collect::<Vec<_>>().join(", "))
            }
        ),
        Status::Looped => "Looped".into(),
        Status::OverCapacity => {
            format!("Over capacity ({})", cell.over_capacity.as_ref().map(|o| o.rule.text()).unwrap_or(""))
        }
        Status::Error => format!("Error: {}", cell.error.as_ref().map(|e| e.message.as_str()).unwrap_or("")),
    }
}

pub async fn run(cfg: BenchConfig) -> Result<BenchSummary> {
    let client = HttpClient::new(Endpoint::parse(&cfg.endpoint)?, cfg.api_key.clone());
    let info =
        discover::discover(&client).await.with_context(|| format!("discovering {}", client.endpoint.display()))?;
    let model = match (&cfg.model, info.models.first()) {
        (Some(m), _) => m.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) => bail!("the server lists no model; pass --model"),
    };
    let cap = capacity(&info, &cfg);
    let planned = plan::plan(&cfg.contexts, &cfg.concurrency, &cfg.prefill_contexts, cfg.max_output, &cap);

    eprintln!(
        "{} at {}: model {model}, KV budget {}, max model length {}, gauges {}",
        info.engine.name(),
        client.endpoint.display(),
        cap.kv_budget_tokens
            .map(|b| format!("{b} tokens ({})", cap.kv_budget_source.as_deref().unwrap_or("")))
            .unwrap_or_else(|| "unknown".into()),
        cap.max_model_len.map(|l| l.to_string()).unwrap_or_else(|| "unknown".into()),
        if info.metrics_available { "on" } else { "off (client in-flight count)" }
    );
    if cfg.dry_run {
        let runs = planned.iter().filter(|p| p.over_capacity.is_none()).count();
        println!("Plan: {} cells, {} to run, {} Over capacity", planned.len(), runs, planned.len() - runs);
        for p in &planned {
            match &p.over_capacity {
                None => println!("  run            {}", describe(p)),
                Some(o) => println!(
                    "  over capacity  {}: {} (needs {}, limit {})",
                    describe(p),
                    o.rule,
                    o.required_tokens,
                    o.budget_tokens.map(|b| b.to_string()).unwrap_or_else(|| "?".into())
                ),
            }
        }
        let secs: f64 = planned.iter().filter(|p| p.phase == Phase::Decode && p.over_capacity.is_none()).count() as f64
            * (cfg.duration + cfg.warmup_hold).as_secs_f64();
        println!("Decode windows alone take about {:.0} minutes.", secs / 60.0);
        return Ok(BenchSummary::default());
    }

    let engine_name = cfg.facts.engine.clone().unwrap_or_else(|| info.engine.name().to_string());
    let run_id = cfg
        .run_id
        .clone()
        .unwrap_or_else(|| default_run_id(cfg.facts.model_id.as_deref().unwrap_or(&model), &engine_name));
    let mut recorder = Recorder::open(&cfg.data_dir, &run_id, cfg.resume, client.scrubber())?;
    let mut m = manifest(&cfg, &info, &model, &cap)?;
    if let Some(old) = recorder.existing_manifest()? {
        check_resumable(&old, &m, &recorder.dir)?;
        m.started_at = old.started_at;
    }
    // Unique to this measurement (time and random bits), never derived from the run id: a
    // re-used run id must not find its prompts in the server's prefix cache.
    let tag = prompt::measurement_tag();
    recorder.write_manifest(&m)?;
    if let Some(notes) = &cfg.facts.notes_markdown {
        recorder.write_notes(notes)?;
    }

    let clock = WindowClock::new(Instant::now());
    let cx = CellContext {
        client: client.clone(),
        engine: info.engine,
        metrics: info.metrics_available,
        api: cfg.api,
        model: model.clone(),
        max_output: cfg.max_output,
        duration: cfg.duration,
        warmup_hold: cfg.warmup_hold,
        warmup_timeout: cfg.warmup_timeout,
        drain_timeout: cfg.drain_timeout,
        stream: StreamSettings {
            stall_timeout: cfg.stall_timeout,
            loop_settings: cfg.loop_settings,
            detect_loops: cfg.detect_loops,
        },
        clock: clock.clone(),
        gauge: Arc::new(Mutex::new(Vec::new())),
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let sampler = runner::spawn_gauge_sampler(cx.clone(), cfg.gauge_interval, stop_rx.clone());
    let (int_tx, int_rx) = watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = int_tx.send(true);
        }
    });

    let mut summary = BenchSummary { run_dir: recorder.dir.clone(), ..Default::default() };
    let todo: Vec<&PlannedCell> = planned.iter().filter(|p| !recorder.has(p.phase, p.context, p.concurrency)).collect();
    summary.skipped_existing = planned.len() - todo.len();
    if summary.skipped_existing > 0 {
        eprintln!("resuming {run_id}: {} cells already measured, {} to go", summary.skipped_existing, todo.len());
    }
    let mut progress = Progress::new(todo.len() as u64);
    let live = {
        let (clock, mut stop) = (clock.clone(), stop_rx.clone());
        let bar_msg: Arc<Mutex<String>> = Arc::new(Mutex::new(String::new()));
        (
            bar_msg.clone(),
            tokio::spawn(async move {
                let mut last = (Instant::now(), 0u64);
                loop {
                    tokio::select! { _ = tokio::time::sleep(Duration::from_millis(500)) => {}, _ = stop.changed() => return }
                    let now = (Instant::now(), clock.live_tokens.load(std::sync::atomic::Ordering::Relaxed));
                    let rate = (now.1 - last.1) as f64 / (now.0 - last.0).as_secs_f64();
                    *bar_msg.lock().unwrap() = format!("{rate:.0} tok/s live");
                    last = now;
                }
            }),
        )
    };

    let mut contexts: Vec<u32> = todo.iter().map(|p| p.context).collect();
    contexts.dedup();
    'contexts: for ctx in contexts {
        let cells: Vec<&&PlannedCell> = todo.iter().filter(|p| p.context == ctx).collect();
        // Over-capacity cells need no server time: write them first.
        for p in cells.iter().filter(|p| p.over_capacity.is_some()) {
            keep(&mut recorder, &mut progress, &mut summary, p, planned_cell(p, Status::OverCapacity))?;
        }
        let runnable: Vec<&&PlannedCell> = cells.iter().filter(|p| p.over_capacity.is_none()).copied().collect();
        if runnable.is_empty() {
            continue;
        }
        progress.current(&format!("sizing the {} prompt", context_label(ctx)));
        // Sizing waits on the server; Ctrl-C must not (None: interrupted).
        let size = |variant, tokens| {
            let want = prompt::SizeTarget { context: ctx, variant, tokens };
            let mut interrupt = int_rx.clone();
            let sizing = prompt::size_prompt(&client, info.engine, cfg.api, &model, &tag, want);
            async move {
                tokio::select! {
                    r = sizing => Some(r),
                    _ = interrupt.wait_for(|i| *i) => None,
                }
            }
        };
        let mut sized = match size(0, ctx).await {
            None => {
                summary.interrupted = true;
                break 'contexts;
            }
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                let cause = e.is::<http::Unreachable>().then_some(ErrorCause::Unreachable);
                let message = client.scrub(&format!("sizing the prompt failed: {e:#}"));
                for p in &runnable {
                    let mut cell = planned_cell(p, Status::Error);
                    cell.error = Some(CellError { message: message.clone(), http_status: None, cause });
                    keep(&mut recorder, &mut progress, &mut summary, p, cell)?;
                }
                continue;
            }
        };
        // The prefill sample always runs first: it warms the prefix cache for the decode cells.
        progress.current(&format!("prefill {} ({} prompt tokens)", context_label(ctx), sized.tokens));
        let mut prefill = runner::prefill_cell(&cx, ctx, &sized.text, sized.tokens, int_rx.clone()).await;
        // Confirm with the real request's usage: a chat template adds tokens a bare
        // tokenizer does not count. Size again for the difference and sample again; the new
        // prompt's tag differs from its first token, so its prefill is not served from cache.
        if let (Status::Valid, Some(actual)) = (prefill.status, prefill.prompt_tokens) {
            let overhead = actual as i64 - sized.tokens as i64;
            if (actual as f64 - ctx as f64).abs() > prompt::size_tolerance(ctx) && overhead.unsigned_abs() < ctx as u64
            {
                let target = (ctx as i64 - overhead).max(1) as u32;
                progress
                    .current(&format!("resizing the {} prompt ({overhead:+} tokens of template)", context_label(ctx)));
                if let Some(Ok(s)) = size(1, target).await {
                    // The tokenizer's count plus the template's tokens, as usage will say.
                    let tokens = (s.tokens as i64 + overhead).max(1) as u64;
                    sized = prompt::SizedPrompt { tokens, ..s };
                    prefill = runner::prefill_cell(&cx, ctx, &sized.text, sized.tokens, int_rx.clone()).await;
                }
            }
        }
        if *int_rx.borrow() {
            summary.interrupted = true;
            break 'contexts;
        }
        if let Some(p) = runnable.iter().find(|p| p.phase == Phase::Prefill) {
            keep(&mut recorder, &mut progress, &mut summary, p, prefill)?;
        }
        for p in runnable.iter().filter(|p| p.phase == Phase::Decode) {
            let label = describe(p);
            progress.current(&format!("{label}: warming up · {}", live.0.lock().unwrap()));
            if info.engine == EngineKind::LlamaCpp && p.concurrency > 1 {
                runner::warm_slots(&cx, &sized.text, p.concurrency, &int_rx).await;
            }
            let ticker = {
                let (msg, label) = (live.0.clone(), label.clone());
                let bar = progress.bar_handle();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        if let Some(b) = &bar {
                            b.set_message(format!("{label} · {}", msg.lock().unwrap()));
                        }
                    }
                })
            };
            let (cell, interrupted) =
                runner::decode_cell(&cx, ctx, p.concurrency, &sized.text, sized.tokens, int_rx.clone()).await;
            ticker.abort();
            if interrupted {
                summary.interrupted = true;
                break 'contexts;
            }
            keep(&mut recorder, &mut progress, &mut summary, p, cell)?;
        }
    }
    progress.finish();
    let _ = stop_tx.send(true);
    let _ = sampler.await;
    live.1.abort();
    if summary.interrupted {
        if recorder.remove_if_empty()? {
            eprintln!("interrupted before any cell was measured: removed {}", recorder.dir.display());
            bail!("interrupted");
        }
        eprintln!(
            "interrupted: {} cells kept in {}; continue with --resume --run-id {run_id}",
            summary.written,
            recorder.dir.display()
        );
        bail!("interrupted");
    }
    m.finished_at = Some(recorder::now_rfc3339());
    recorder.write_manifest(&m)?;
    Ok(summary)
}

/// Writes a finished cell, shows it, counts it, and stops the run when the server has been
/// unreachable for [`MAX_UNREACHABLE_CELLS`] cells in a row: the rest would only be errors.
fn keep(
    recorder: &mut Recorder,
    progress: &mut Progress,
    summary: &mut BenchSummary,
    p: &PlannedCell,
    cell: Cell,
) -> Result<()> {
    recorder.write_cell(&cell)?;
    progress.cell_done(&format!("{}: {}", describe(p), cell_summary(&cell)));
    count(summary, &cell);
    if cell.status != Status::OverCapacity {
        summary.unreachable_streak = if cell.server_unreachable() { summary.unreachable_streak + 1 } else { 0 };
    }
    if summary.unreachable_streak >= MAX_UNREACHABLE_CELLS {
        progress.finish();
        let message = cell.error.map(|e| e.message).unwrap_or_default();
        bail!(
            "the server was unreachable for {MAX_UNREACHABLE_CELLS} cells in a row ({message}); stopped with {} cells in {}. Restart the server and continue with --resume (unreachable cells are measured again)",
            summary.written,
            recorder.dir.display()
        );
    }
    Ok(())
}

/// Cells in a row that found the server unreachable before the run stops.
pub const MAX_UNREACHABLE_CELLS: u32 = 3;

fn count(summary: &mut BenchSummary, cell: &Cell) {
    summary.written += 1;
    match cell.status {
        Status::Valid => summary.valid += 1,
        Status::Looped => summary.looped += 1,
        Status::OverCapacity => summary.over_capacity += 1,
        Status::Error => summary.errors += 1,
    }
}

fn planned_cell(p: &PlannedCell, status: Status) -> Cell {
    Cell { over_capacity: p.over_capacity.clone(), ..Cell::new(p.phase, p.context, p.concurrency, status) }
}

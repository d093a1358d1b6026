//! Everything before the first cell: the client (TLS, credentials), the hardware (flags, or
//! detected for a server on this machine), the plan in words, and the run folder with its
//! manifest (server facts, settings, the checks a resumed run must pass).

use anyhow::{bail, Context, Result};

use super::client::http::{Endpoint, HttpClient};
use super::discover::ServerInfo;
use super::engine::EngineKind;
use super::hardware;
use super::plan::{Capacity, PlannedCell};
use super::recorder::{self, Recorder};
use super::BenchConfig;
use super::ManifestFacts;
use crate::format::facts::Discovered;
use crate::format::{
    BenchTool, DecodeTest, DiscoveredFact, Origin, Phase, PrefillMode, RunManifest, RunSettings, ServerAccess,
    ServerFact,
};
use crate::units::context_label;

/// The client of the endpoint: TLS set up for https (and `--insecure` said out loud).
pub(super) fn connect(cfg: &BenchConfig) -> Result<HttpClient> {
    let endpoint = Endpoint::parse(&cfg.endpoint)?;
    let tls = if endpoint.tls {
        if cfg.tls.insecure {
            eprintln!("warning: --insecure: the server's certificate is not checked; the run records it");
        }
        Some(cfg.tls.connector()?)
    } else {
        if cfg.tls.insecure || cfg.tls.ca_cert.is_some() {
            eprintln!(
                "warning: --insecure and --ca-cert apply to https endpoints only; {} is plain http",
                endpoint.display()
            );
        }
        None
    };
    HttpClient::new(endpoint, cfg.credentials.clone(), tls)
}

/// The hardware the flags name; for a server on this machine, what is missing is detected.
/// A remote server's hardware cannot be known: the flags must say it (checked before any
/// request, so a missing flag costs nothing).
pub(super) fn resolve_hardware(facts: &mut ManifestFacts, endpoint: &Endpoint) -> Result<()> {
    if facts.device.is_some() || facts.cpu.is_some() {
        return Ok(());
    }
    if !endpoint.is_loopback() {
        bail!(
            "say what the server runs on: --gpu NAME --gpu-count N (or --cpu NAME for a CPU-only server); {} is not on this machine, so its hardware cannot be detected",
            endpoint.display()
        );
    }
    match hardware::detect() {
        Some(found) => {
            hardware::fill(facts, &found);
            let memory = found.memory_gb.map(|g| format!(", {g} GB each")).unwrap_or_default();
            let line = format!("hardware (from {}): {} x {}{memory}", found.source, found.count, found.device);
            eprintln!("{}", crate::units::terminal_safe(&line));
            Ok(())
        }
        None => bail!("could not detect this machine's hardware: say what the server runs on with --gpu NAME --gpu-count N or --cpu NAME"),
    }
}

pub(super) fn capacity(info: &ServerInfo, cfg: &BenchConfig) -> Capacity {
    let mut cap = info.capacity.clone();
    if let Some(b) = cfg.kv_budget {
        cap.kv_budget_tokens = Some(b);
        cap.kv_budget_source = Some("--kv-budget".into());
    }
    cap
}

pub(super) fn server_line(info: &ServerInfo, client: &HttpClient, model: &str, cap: &Capacity) -> String {
    format!(
        "{} at {}: model {model}, KV budget {}, max model length {}, gauges {}",
        info.engine.name(),
        client.endpoint.display(),
        cap.kv_budget_tokens
            .map(|b| format!("{b} tokens ({})", cap.kv_budget_source.as_deref().unwrap_or("")))
            .unwrap_or_else(|| "unknown".into()),
        cap.max_model_len.map(|l| l.to_string()).unwrap_or_else(|| "unknown".into()),
        if info.metrics_available { "on" } else { "off (client in-flight count)" }
    )
}

/// `--dry-run`: every cell and repetition the run would measure (with `--resume`, only those
/// not yet on disk, after the same checks a real resume makes), and about how long.
pub(super) fn print_plan(planned: &[PlannedCell], cfg: &BenchConfig, done: &Done) {
    let runs = planned.iter().filter(|p| p.over_capacity.is_none()).count();
    let repeat = cfg.repeat;
    let per_cell = if repeat > 1 { format!(", each measured {repeat} times") } else { String::new() };
    println!("Plan: {} cells, {} to run, {} Over capacity{per_cell}", planned.len(), runs, planned.len() - runs);
    let mut to_go = 0usize;
    let mut decode_to_go = 0usize;
    for p in planned {
        let reps: Vec<u32> = (1..=if p.over_capacity.is_some() { 1 } else { repeat })
            .filter(|rep| !done.contains(&(p.phase, p.context, p.concurrency, *rep)))
            .collect();
        if reps.is_empty() {
            continue;
        }
        to_go += reps.len();
        if p.phase == Phase::Decode && p.over_capacity.is_none() {
            decode_to_go += reps.len();
        }
        let which = if repeat > 1 { format!(" (rep {})", list_of(&reps)) } else { String::new() };
        match &p.over_capacity {
            None => println!("  run            {}{which}", describe(p)),
            Some(o) => println!(
                "  over capacity  {}: {} (needs {}, limit {})",
                describe(p),
                o.rule,
                o.required_tokens,
                o.budget_tokens.map(|b| b.to_string()).unwrap_or_else(|| "?".into())
            ),
        }
    }
    if !done.is_empty() {
        println!("Resuming: {} measurements already on disk, {to_go} to go.", done.len());
    }
    let secs = decode_to_go as f64 * (cfg.duration + cfg.warmup_hold).as_secs_f64();
    println!("{decode_to_go} decode windows: about {:.0} minutes.", secs / 60.0);
}

/// `1-3`, `2, 3`.
fn list_of(reps: &[u32]) -> String {
    match reps {
        [a, .., b] if b - a + 1 == reps.len() as u32 && reps.len() > 2 => format!("{a}-{b}"),
        _ => reps.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
    }
}

/// (phase, context, concurrency, repetition) of the measurements already on disk.
pub(super) type Done = std::collections::BTreeSet<(Phase, u32, u32, u32)>;

/// What `--resume` would keep, checked as the real resume checks it (the same facts, the
/// same matrix); empty without `--resume`.
pub(super) fn resumable_done(
    cfg: &BenchConfig,
    client: &HttpClient,
    info: &ServerInfo,
    model: &str,
    cap: &Capacity,
) -> Result<Done> {
    if !cfg.resume {
        return Ok(Done::new());
    }
    let Some(run_id) = &cfg.run_id else { bail!("--resume needs --run-id: which run to continue") };
    let dir = cfg.data_dir.join(crate::format::RUNS_DIR).join(run_id);
    if !dir.join(crate::format::RUN_MANIFEST).exists() {
        bail!("--resume: {} does not exist", dir.display());
    }
    let run = crate::format::load::load_run_in_progress(&dir)
        .with_context(|| format!("reading {} to resume it", dir.display()))?;
    check_resumable(&run.manifest, &run_manifest(cfg, client, info, model, cap)?, &dir)?;
    Ok(run
        .cells
        .iter()
        .filter(|c| !c.cell.server_unreachable())
        .map(|c| (c.cell.phase, c.cell.context, c.cell.concurrency, c.cell.repetition))
        .collect())
}

/// With `--resume`, the first repetition that still has cells to measure, told from the run
/// on disk before any server is asked (with `--launch`, the process to start first is that
/// repetition's, not process 1 started only to discover the server): a repetition is whole
/// when it holds as many measured cells as repetition 1 less its Over capacity cells (those
/// are not repeated); unreachable cells are measured again. 1 without `--resume`, for a run
/// not on disk, or where every repetition is whole.
pub(super) fn first_repetition_to_measure(cfg: &BenchConfig) -> u32 {
    let Some(run_id) = cfg.run_id.as_ref().filter(|_| cfg.resume) else { return 1 };
    let dir = cfg.data_dir.join(crate::format::RUNS_DIR).join(run_id);
    let Ok(run) = crate::format::load::load_run_in_progress(&dir) else { return 1 };
    let measured =
        |rep: u32| run.cells.iter().filter(|c| c.cell.repetition.max(1) == rep && !c.cell.server_unreachable()).count();
    let over = run.cells.iter().filter(|c| c.cell.status == crate::format::Status::OverCapacity).count();
    let whole = measured(1);
    (2..=cfg.repeat).find(|&rep| measured(rep) < whole.saturating_sub(over)).filter(|_| whole > 0).unwrap_or(1)
}

fn default_run_id(model: &str, engine: &str) -> String {
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d%H%M%S");
    let mut id = format!(
        "{}-{}-{stamp}",
        crate::units::slugify(&crate::units::model_display_name(model)),
        crate::units::slugify(engine)
    );
    id.truncate(128);
    id
}

/// The run of prefix-reuse level `level` of a session of several (`RUN-reuse90`).
pub(super) fn level_run_id(base: &str, level: u32) -> String {
    format!("{base}-reuse{level}")
}

/// Opens the run folder (checking a resumed run's settings) and writes its manifest.
pub(super) fn open_run(
    cfg: &BenchConfig,
    client: &HttpClient,
    info: &ServerInfo,
    model: &str,
    cap: &Capacity,
) -> Result<(Recorder, RunManifest)> {
    let mut m = run_manifest(cfg, client, info, model, cap)?;
    let base = cfg.run_id.clone().unwrap_or_else(|| default_run_id(&m.model.id, &m.engine.name));
    let run_id = match cfg.prefix_reuse.filter(|_| cfg.reuse_levels.len() > 1) {
        Some(level) => {
            m.other_levels =
                cfg.reuse_levels.iter().filter(|&&l| l != level).map(|l| level_run_id(&base, *l)).collect();
            level_run_id(&base, level)
        }
        None => base,
    };
    let recorder = Recorder::open(&cfg.data_dir, &run_id, cfg.resume, client.scrubber())?;
    if let Some(old) = recorder.existing_manifest()? {
        check_resumable(&old, &m, &recorder.dir)?;
        m.started_at = old.started_at;
        // The processes of the sessions before: their cells name them.
        m.server_processes = old.server_processes;
        // `--resume --repeat 1` on a run of three repetitions keeps three.
        m.settings.repeat = m.settings.repeat.max(old.settings.repeat);
    }
    recorder.write_manifest(&m)?;
    if let Some(notes) = &cfg.facts.notes_markdown {
        recorder.write_notes(notes)?;
    }
    Ok((recorder, m))
}

/// The run's manifest from the flags and what the server told; refused before any folder is
/// made where `site check` would refuse it.
fn run_manifest(
    cfg: &BenchConfig,
    client: &HttpClient,
    info: &ServerInfo,
    model: &str,
    cap: &Capacity,
) -> Result<RunManifest> {
    let found = Discovered {
        served_model: Some(model.to_string()),
        engine: Some(info.engine.name().to_string()),
        engine_version: info.version.clone().filter(|v| super::engine::EngineKind::meaningful_version(v)),
        quantization: info.quantization.clone(),
        repository: info.engine.repository().map(str::to_string),
        build: info.build_info.clone(),
        os: Some(std::env::consts::OS.to_string()),
    };
    let mut m = cfg.facts.manifest(found, settings(cfg, cap), bench_tool(), Origin::Measured)?;
    m.started_at = Some(recorder::now_rfc3339());
    m.server_access = Some(ServerAccess {
        tls: client.endpoint.tls.then(|| cfg.tls.verification()),
        header_names: client.header_names(),
        discovered: discovered_facts(info, None),
    });
    // Before any folder is made: a manifest site check would refuse (a 300-character
    // --gpu name) is an error now, not an empty run folder left behind.
    crate::format::validate::validate_manifest(&m).context("the run's facts")?;
    Ok(m)
}

/// What the server told about itself; `tokenizer` is known once a prompt was sized (the
/// method that sized it).
pub(super) fn discovered_facts(info: &ServerInfo, tokenizer: Option<&str>) -> Vec<DiscoveredFact> {
    let fact = |fact, source: Option<String>| DiscoveredFact { fact, found: source.is_some(), source };
    let gauge = info.engine.gauges().filter(|_| info.metrics_available).map(|(running, _)| running.to_string());
    let counter = match info.engine {
        EngineKind::LlamaCpp => Some("llama.cpp timings of each finished request".to_string()),
        _ => info.token_counter.map(str::to_string),
    };
    let version_source = match info.engine {
        EngineKind::Vllm => "/version",
        EngineKind::Sglang => "/server_info",
        EngineKind::LlamaCpp => "/props build_info",
        EngineKind::Unknown => "server",
    };
    let version = info.version.as_deref().or(info.build_info.as_deref()).filter(|v| EngineKind::meaningful_version(v));
    let mut facts = vec![
        fact(ServerFact::RunningGauge, gauge),
        fact(ServerFact::TokenCounter, counter),
        fact(ServerFact::KvBudget, info.capacity.kv_budget_source.clone()),
        fact(ServerFact::MaxModelLength, info.capacity.max_model_len.map(|_| "/v1/models max_model_len".to_string())),
        fact(ServerFact::EngineVersion, version.map(|_| version_source.to_string())),
    ];
    if let Some(method) = tokenizer {
        facts.insert(0, fact(ServerFact::Tokenizer, (method == "tokenize").then(|| "/tokenize".to_string())));
    }
    facts
}

fn settings(cfg: &BenchConfig, cap: &Capacity) -> RunSettings {
    RunSettings {
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
        repeat: Some(cfg.repeat),
        prefill_samples: Some(cfg.prefill_samples),
        prefix_reuse_pct: cfg.prefix_reuse,
        turns: cfg.turns,
    }
}

fn bench_tool() -> BenchTool {
    BenchTool { name: "site bench".into(), version: crate::units::BUILD_VERSION.into() }
}

/// `--resume` continues a run only under the same facts: matrix, API, launch command, model,
/// hardware, engine and prefill samples. A cell measured under others would sit beside the
/// old ones as if comparable (1x vLLM cells published as 8x SGLang). Only `--repeat` may
/// grow: the run keeps the larger count.
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
    if old.launch_command != new.launch_command {
        bail!(
            "--resume: the launch command differs from the one recorded in {}; a resumed run must measure the same server setup (give the same --launch-command)",
            dir.display()
        );
    }
    let differences: Vec<String> = resumed_facts(old, new)
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(flag, a, b)| format!("{flag}: {} recorded, {} now", shown(&a), shown(&b)))
        .collect();
    if !differences.is_empty() {
        bail!(
            "--resume: {} was measured under other facts; a resumed run must measure the same setup ({})",
            dir.display(),
            crate::units::terminal_safe(&differences.join("; "))
        );
    }
    Ok(())
}

fn shown(v: &Option<String>) -> String {
    v.as_deref().map_or_else(|| "none".to_string(), |v| format!("{v:?}"))
}

/// Each fact of a run that a resume must keep: (the flag that sets it, recorded, now).
fn resumed_facts(old: &RunManifest, new: &RunManifest) -> Vec<(&'static str, Option<String>, Option<String>)> {
    let pair = |f: fn(&RunManifest) -> Option<String>| (f(old), f(new));
    let table: [(&'static str, fn(&RunManifest) -> Option<String>); 19] = [
        ("--api", |m| m.settings.api.clone()),
        ("--prefix-reuse", |m| m.settings.prefix_reuse_pct.map(|v| v.to_string())),
        ("--turns", |m| m.settings.turns.map(|v| v.to_string())),
        ("--prefill-samples", |m| m.settings.prefill_samples.map(|v| v.to_string())),
        ("--model-id", |m| Some(m.model.id.clone())),
        ("--model", |m| m.model.served_name.clone()),
        ("--revision", |m| m.model.revision.clone()),
        ("--hardware-kind", |m| Some(m.hardware.kind.clone())),
        ("--gpu / --cpu (the device)", |m| Some(m.hardware.device.clone())),
        ("--gpu-count", |m| Some(m.hardware.count.to_string())),
        ("--gpu-memory-gb", |m| m.hardware.memory_gb.map(|v| v.to_string())),
        ("--os", |m| m.hardware.os.clone()),
        ("--engine", |m| Some(m.engine.name.clone())),
        ("--engine-version", |m| Some(m.engine.version.clone())),
        ("--quantization", |m| m.engine.quantization.clone()),
        ("--backend", |m| m.engine.backend.clone()),
        ("--engine-repository", |m| m.engine.repository.clone()),
        ("--engine-build", |m| m.engine.build.clone()),
        ("--engine-commit", |m| m.engine.commit.clone()),
    ];
    table
        .into_iter()
        .map(|(flag, f)| {
            let (a, b) = pair(f);
            (flag, a, b)
        })
        .collect()
}

/// A planned cell in words: `prefill 8K`, `decode 8K x 4`.
pub(super) fn describe(p: &PlannedCell) -> String {
    match p.phase {
        Phase::Prefill => format!("prefill {}", context_label(p.context)),
        Phase::Decode => format!("decode {} x {}", context_label(p.context), p.concurrency),
    }
}

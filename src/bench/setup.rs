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

pub(super) fn print_plan(planned: &[PlannedCell], cfg: &BenchConfig) {
    let runs = planned.iter().filter(|p| p.over_capacity.is_none()).count();
    println!("Plan: {} cells, {} to run, {} Over capacity", planned.len(), runs, planned.len() - runs);
    for p in planned {
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
    let decode_cells = planned.iter().filter(|p| p.phase == Phase::Decode && p.over_capacity.is_none()).count();
    let secs = decode_cells as f64 * (cfg.duration + cfg.warmup_hold).as_secs_f64();
    println!("Decode windows alone take about {:.0} minutes.", secs / 60.0);
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

/// Opens the run folder (checking a resumed run's settings) and writes its manifest.
pub(super) fn open_run(
    cfg: &BenchConfig,
    client: &HttpClient,
    info: &ServerInfo,
    model: &str,
    cap: &Capacity,
) -> Result<(Recorder, RunManifest)> {
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
    crate::format::load::validate_manifest(&m).context("the run's facts")?;
    let run_id = cfg.run_id.clone().unwrap_or_else(|| default_run_id(&m.model.id, &m.engine.name));
    let recorder = Recorder::open(&cfg.data_dir, &run_id, cfg.resume, client.scrubber())?;
    if let Some(old) = recorder.existing_manifest()? {
        check_resumable(&old, &m, &recorder.dir)?;
        m.started_at = old.started_at;
    }
    recorder.write_manifest(&m)?;
    if let Some(notes) = &cfg.facts.notes_markdown {
        recorder.write_notes(notes)?;
    }
    Ok((recorder, m))
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
    }
}

fn bench_tool() -> BenchTool {
    BenchTool { name: "site bench".into(), version: crate::units::BUILD_VERSION.into() }
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

/// A planned cell in words: `prefill 8K`, `decode 8K x 4`.
pub(super) fn describe(p: &PlannedCell) -> String {
    match p.phase {
        Phase::Prefill => format!("prefill {}", context_label(p.context)),
        Phase::Decode => format!("decode {} x {}", context_label(p.context), p.concurrency),
    }
}

//! The run folder: its id, its manifest (the flags' facts, the server's, the settings), the
//! checks a resumed run must pass, and what a resume keeps.

use anyhow::{bail, Context, Result};

use super::bench_plan::{BenchPlan, RunSpec, Versus, Workload};
use super::client::http::HttpClient;
use super::discover::ServerInfo;
use super::engine::EngineKind;
use super::plan::Capacity;
use super::recorder::{self, Recorder};
use super::server::Server;
use crate::format::facts::Discovered;
use crate::format::{
    BenchTool, DecodeTest, DiscoveredFact, Origin, Phase, PrefillMode, RunManifest, RunSettings, ServerAccess,
    ServerFact,
};

/// (phase, context, concurrency, repetition) of the measurements already on disk.
pub(super) type Done = std::collections::BTreeSet<(Phase, u32, u32, u32)>;

/// What `--resume` would keep, checked as the real resume checks it (the same facts, the
/// same matrix); empty without `--resume`.
pub(super) fn resumable_done(plan: &BenchPlan, run: &RunSpec, client: &HttpClient, server: &Server) -> Result<Done> {
    if !plan.folder.resume {
        return Ok(Done::new());
    }
    let Some(base) = &run.run_id else { bail!("--resume needs --run-id: which run to continue") };
    let dir = plan.folder.data_dir.join(crate::format::RUNS_DIR).join(run.folder_id(base));
    if !dir.join(crate::format::RUN_MANIFEST).exists() {
        bail!("--resume: {} does not exist", dir.display());
    }
    let on_disk = crate::format::load::load_run_in_progress(&dir)
        .with_context(|| format!("reading {} to resume it", dir.display()))?;
    check_resumable(&on_disk.manifest, &run_manifest(plan, run, client, server)?, &dir)?;
    Ok(on_disk
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
pub(super) fn first_repetition_to_measure(plan: &BenchPlan, run: &RunSpec) -> u32 {
    let Some(base) = run.run_id.as_ref().filter(|_| plan.folder.resume) else { return 1 };
    let dir = plan.folder.data_dir.join(crate::format::RUNS_DIR).join(run.folder_id(base));
    let Ok(run) = crate::format::load::load_run_in_progress(&dir) else { return 1 };
    let measured =
        |rep: u32| run.cells.iter().filter(|c| c.cell.repetition.max(1) == rep && !c.cell.server_unreachable()).count();
    let over = run.cells.iter().filter(|c| c.cell.status == crate::format::Status::OverCapacity).count();
    let whole = measured(1);
    (2..=plan.matrix.repeat).find(|&rep| measured(rep) < whole.saturating_sub(over)).filter(|_| whole > 0).unwrap_or(1)
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
    plan: &BenchPlan,
    run: &RunSpec,
    client: &HttpClient,
    server: &Server,
) -> Result<(Recorder, RunManifest)> {
    let mut m = run_manifest(plan, run, client, server)?;
    let base = run.run_id.clone().unwrap_or_else(|| default_run_id(&m.model.id, &m.engine.name));
    m.other_levels = run.other_levels(&base);
    let recorder = Recorder::open(&plan.folder.data_dir, &run.folder_id(&base), plan.folder.resume, client.scrubber())?;
    if let Some(old) = recorder.existing_manifest()? {
        check_resumable(&old, &m, &recorder.dir)?;
        warn_settings_changed(&old, &m);
        m.started_at = old.started_at;
        // The processes of the sessions before: their cells name them.
        m.server_processes = old.server_processes;
        // `--resume --repeat 1` on a run of three repetitions keeps three.
        m.settings.repeat = m.settings.repeat.max(old.settings.repeat);
        // The run's settings are those its first cells were measured under.
        m.server_settings = old.server_settings;
    }
    recorder.write_manifest(&m)?;
    if let Some(notes) = &run.facts.notes_markdown {
        recorder.write_notes(notes)?;
    }
    Ok((recorder, m))
}

/// A resumed run whose server now says other settings than it did: said, not refused (a
/// server restarted with the same flags may size its cache a few blocks apart).
fn warn_settings_changed(old: &RunManifest, new: &RunManifest) {
    let changed = crate::format::settings_changes(&old.server_settings, &new.server_settings);
    if !old.server_settings.is_empty() && !changed.is_empty() {
        let said: Vec<String> = changed.iter().map(|c| c.to_string()).collect();
        eprintln!(
            "warning: --resume: the server's settings differ from the run's first session ({}); the run keeps the first session's",
            crate::units::terminal_safe(&said.join("; "))
        );
    }
}

/// The run's manifest from the flags and what the server told; refused before any folder is
/// made where `site check` would refuse it.
fn run_manifest(plan: &BenchPlan, run: &RunSpec, client: &HttpClient, server: &Server) -> Result<RunManifest> {
    let (info, model, cap) = (&server.info, server.model.as_str(), &server.cap);
    let found = Discovered {
        served_model: Some(model.to_string()),
        engine: Some(info.engine.name().to_string()),
        engine_version: info.version.clone().filter(|v| EngineKind::meaningful_version(v)),
        quantization: info.quantization.clone(),
        repository: info.engine.repository().map(str::to_string),
        build: info.build_info.clone(),
        os: Some(std::env::consts::OS.to_string()),
    };
    let mut m = run.facts.manifest(found, settings(plan, &run.workload, cap), bench_tool(), Origin::Measured)?;
    m.started_at = Some(recorder::now_rfc3339());
    m.server_access = Some(ServerAccess {
        tls: client.endpoint.tls.then(|| run.target.tls.verification()),
        header_names: client.header_names(),
        discovered: discovered_facts(info, None),
    });
    // A value holding the key (a server that echoes its own arguments) is never kept.
    let scrubber = client.scrubber();
    m.server_settings =
        info.settings.iter().filter(|(_, v)| scrubber.scrub(v) == **v).map(|(k, v)| (k.clone(), v.clone())).collect();
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

fn settings(plan: &BenchPlan, workload: &Workload, cap: &Capacity) -> RunSettings {
    let m = &plan.matrix;
    RunSettings {
        contexts: m.contexts.clone(),
        concurrency: m.concurrency.clone(),
        prefill_contexts: m.prefill_contexts.clone(),
        duration_s: plan.timing.duration.as_secs_f64(),
        max_output_tokens: workload.max_output,
        decode_test: DecodeTest::FixedDuration,
        prefill_mode: PrefillMode::DecodeWarmup,
        api: Some(workload.api.name().into()),
        kv_budget_tokens: cap.kv_budget_tokens,
        kv_budget_source: cap.kv_budget_source.clone(),
        repeat: Some(m.repeat),
        prefill_samples: Some(m.prefill_samples),
        prefix_reuse_pct: workload.prefix_reuse,
        turns: workload.turns,
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
/// What `--versus` needs after both runs are measured, checked before the first request:
/// two new run ids (no folder of either, no other process writing one), a readable
/// `compare.json` and `site.toml`.
pub(super) fn check_versus_folders(plan: &BenchPlan, versus: &Versus) -> Result<()> {
    let data = &plan.folder.data_dir;
    let runs = data.join(crate::format::RUNS_DIR);
    for (flag, id) in [("--run-id", &plan.folder.run_id), ("--versus-run-id", &versus.run_id)] {
        if let Some(id) = id.as_deref().filter(|id| runs.join(id).exists()) {
            bail!("{flag} {id}: {} already exists; --versus measures two new runs", runs.join(id).display());
        }
        // Another process writing a run of this id would hold its lock to the end.
        if let Some(id) = id.as_deref().filter(|_| runs.is_dir()) {
            drop(crate::format::writer::run_lock(&runs, id).with_context(|| flag.to_string())?);
        }
    }
    crate::format::writer::check_comparisons(data)?;
    crate::format::SiteSettings::load(std::path::Path::new("site.toml"))?;
    Ok(())
}

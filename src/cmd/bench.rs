use anyhow::{Context, Result};

use crate::cli::BenchArgs;
use crate::cli::FactsArgs;
use speed_matrix::analysis::normalize_cell;
use speed_matrix::bench::client::http::{parse_header_line, Credentials};
use speed_matrix::bench::client::tls::TlsOptions;
use speed_matrix::bench::loopdetect::LoopSettings;
use speed_matrix::bench::plan::{parse_count_list, parse_token_list};
use speed_matrix::bench::{self, BenchConfig, ManifestFacts};
use speed_matrix::format::{Cell, Origin, Phase, Status};

pub fn run(a: &BenchArgs) -> Result<()> {
    let contexts = parse_token_list(&a.contexts).context("--contexts")?;
    let prefill_contexts = match &a.prefill_contexts {
        Some(p) => parse_token_list(p).context("--prefill-contexts")?,
        None => contexts.clone(),
    };
    if a.turns.is_some() && matches!(a.api, crate::cli::ApiArg::Completions) {
        anyhow::bail!("--turns needs --api chat: a conversation's turns are chat messages");
    }
    let mut levels = a.prefix_reuse.clone();
    levels.sort_unstable();
    levels.dedup();
    if levels.len() != a.prefix_reuse.len() {
        anyhow::bail!("--prefix-reuse: each level once");
    }
    if levels.len() > 1 && a.versus.is_some() {
        anyhow::bail!("--versus measures one workload on two servers: give one --prefix-reuse level");
    }
    if let Some(b) = &a.versus {
        check_versus(a, b)?;
    }
    let mut facts = a.facts.to_manifest_facts()?;
    let launch = launch_settings(a)?;
    if let Some(l) = &launch {
        if facts.launch_command.is_some() {
            anyhow::bail!("--launch is the launch command: leave out --launch-command");
        }
        facts.launch_command = Some(l.command.clone());
    }
    let cfg = BenchConfig {
        endpoint: a.endpoint.clone(),
        credentials: credentials(a)?,
        tls: TlsOptions { ca_cert: a.ca_cert.clone(), insecure: a.insecure },
        telemetry: a.telemetry.map(Into::into),
        model: a.model.clone(),
        api: a.api.into(),
        contexts,
        concurrency: parse_count_list(&a.concurrency).context("--concurrency")?,
        prefill_contexts,
        duration: a.duration,
        max_output: a.max_output,
        repeat: a.repeat,
        prefill_samples: a.prefill_samples,
        prefix_reuse: a.prefix_reuse.first().copied(),
        reuse_levels: a.prefix_reuse.clone(),
        turns: a.turns,
        kv_budget: a.kv_budget,
        run_id: a.run_id.clone(),
        data_dir: a.data.clone(),
        resume: a.resume,
        dry_run: a.dry_run,
        warmup_hold: a.warmup_hold,
        warmup_timeout: a.warmup_timeout,
        drain_timeout: a.drain_timeout,
        stall_timeout: a.stall_timeout,
        gauge_interval: a.gauge_interval.unwrap_or_else(|| bench::default_gauge_interval(a.duration)),
        loop_settings: LoopSettings {
            min_chars: a.loop_min_chars,
            min_cycles: a.loop_min_cycles.max(2),
            ..LoopSettings::default()
        },
        detect_loops: !a.no_loop_detection,
        facts,
        launch,
        versus: a.versus.clone().map(|endpoint| bench::Versus {
            endpoint,
            run_id: a.versus_run_id.clone(),
            launch: a.versus_launch.clone(),
        }),
        reporter: std::sync::Arc::new(FiguresReporter),
    };
    let dry = cfg.dry_run;
    let data = cfg.data_dir.clone();
    let s = bench::run_blocking(cfg)?;
    if let Some(b) = &s.versus {
        say_written(&s)?;
        say_written(b)?;
        return compare_versus(&data, &s.run_dir, &b.run_dir);
    }
    if !dry {
        say_written(&s)?;
        for level in &s.levels {
            say_written(level)?;
        }
    }
    Ok(())
}

/// `--versus`: the two runs listed in `compare.json` (the site shows their comparison) and
/// judged now, as `site diff` judges them.
fn compare_versus(data: &std::path::Path, a: &std::path::Path, b: &std::path::Path) -> Result<()> {
    let id = |p: &std::path::Path| p.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let (a, b) = (id(a), id(b));
    speed_matrix::format::writer::add_comparison(data, &a, &b)?;
    say!("Listed {a} against {b} in {}", data.join(speed_matrix::format::COMPARE_FILE).display());
    let config = speed_matrix::site::SiteConfig {
        data_dir: data.to_path_buf(),
        out_dir: std::path::PathBuf::new(),
        templates_dir: None,
        static_dir: None,
        settings_file: Some("site.toml".into()),
    };
    let site = speed_matrix::site::Site::load_pair(config, &a, &b, None)?;
    super::diff::print_verdicts(&site.comparisons[0])?;
    Ok(())
}

/// Everything `--versus` needs after both runs are measured, checked before the first
/// request: two different servers, two new run ids, a readable `compare.json` and
/// `site.toml`.
fn check_versus(a: &BenchArgs, versus: &str) -> Result<()> {
    use speed_matrix::bench::client::http::Endpoint;
    let (ea, eb) = (Endpoint::parse(&a.endpoint)?, Endpoint::parse(versus).context("--versus")?);
    if same_server(&ea, &eb) {
        anyhow::bail!("--versus names the same server as --endpoint ({}): give B's own address", eb.display());
    }
    let runs = a.data.join(speed_matrix::format::RUNS_DIR);
    if let (Some(id), Some(b)) = (&a.run_id, &a.versus_run_id) {
        if id == b {
            anyhow::bail!("--versus-run-id is --run-id ({id}): the two runs need two ids");
        }
    }
    for (flag, id) in [("--run-id", &a.run_id), ("--versus-run-id", &a.versus_run_id)] {
        if let Some(id) = id.as_deref().filter(|id| runs.join(id).exists()) {
            anyhow::bail!("{flag} {id}: {} already exists; --versus measures two new runs", runs.join(id).display());
        }
        // Another process writing a run of this id would hold its lock to the end.
        if let Some(id) = id.as_deref().filter(|_| runs.is_dir()) {
            drop(speed_matrix::format::writer::run_lock(&runs, id).with_context(|| flag.to_string())?);
        }
    }
    speed_matrix::format::writer::check_comparisons(&a.data)?;
    speed_matrix::format::SiteSettings::load(std::path::Path::new("site.toml"))?;
    Ok(())
}

/// Two addresses of one server: the same port and path on the same host, loopback names
/// (`localhost`, `127.0.0.1`, `[::1]`) counted as one host, names resolved where they resolve.
fn same_server(
    a: &speed_matrix::bench::client::http::Endpoint,
    b: &speed_matrix::bench::client::http::Endpoint,
) -> bool {
    use std::net::ToSocketAddrs as _;
    if a.port != b.port || a.base_path != b.base_path {
        return false;
    }
    let host = |e: &speed_matrix::bench::client::http::Endpoint| e.host.trim_matches(['[', ']']).to_ascii_lowercase();
    if host(a) == host(b) || (a.is_loopback() && b.is_loopback()) {
        return true;
    }
    let resolved = |e: &speed_matrix::bench::client::http::Endpoint| -> Vec<std::net::IpAddr> {
        (host(e).as_str(), e.port).to_socket_addrs().map(|v| v.map(|s| s.ip()).collect()).unwrap_or_default()
    };
    let (ra, rb) = (resolved(a), resolved(b));
    ra.iter().any(|ip| rb.contains(ip) && !ip.is_unspecified())
}

fn say_written(s: &bench::BenchSummary) -> Result<()> {
    {
        say!(
            "Wrote {} cells to {} ({} valid, {} looped, {} over capacity, {} errors{}). Publish with: site build",
            s.written,
            s.run_dir.display(),
            s.valid,
            s.looped,
            s.over_capacity,
            s.errors,
            if s.skipped_existing > 0 { format!(", {} kept from before", s.skipped_existing) } else { String::new() }
        );
    }
    Ok(())
}

/// `--launch` with its restarts: at most one process per repetition.
fn launch_settings(a: &BenchArgs) -> Result<Option<bench::launch::LaunchSettings>> {
    let Some(command) = a.launch.clone() else { return Ok(None) };
    if command.trim().is_empty() || a.versus_launch.as_ref().is_some_and(|c| c.trim().is_empty()) {
        anyhow::bail!("--launch: the command is empty");
    }
    if a.versus.is_some() && a.versus_launch.is_none() {
        anyhow::bail!("--versus with --launch: pass --versus-launch CMD, the command that starts B's server");
    }
    let restarts = a.restarts.unwrap_or(1);
    if restarts > a.repeat {
        anyhow::bail!(
            "--restarts {restarts} needs --repeat {restarts} or more: each server process measures at least one repetition"
        );
    }
    Ok(Some(bench::launch::LaunchSettings { command, restarts, ready_timeout: a.launch_timeout }))
}

/// The key and the extra headers come only from the environment; they are sent and never
/// stored or shown.
fn credentials(a: &BenchArgs) -> Result<Credentials> {
    let api_key = std::env::var(&a.api_key_env).ok().filter(|k| !k.is_empty());
    let mut headers = Vec::new();
    for var in &a.header_env {
        let line = std::env::var(var).map_err(|_| {
            anyhow::anyhow!(
                "--header-env {var}: the environment variable {var} is not set (it must hold `Header-Name: value`)"
            )
        })?;
        headers.push(parse_header_line(var, &line)?);
    }
    Ok(Credentials { api_key, headers })
}

impl FactsArgs {
    pub fn to_manifest_facts(&self) -> Result<ManifestFacts> {
        let notes_markdown = match &self.notes {
            Some(p) => Some(std::fs::read_to_string(p).with_context(|| format!("--notes {}", p.display()))?),
            None => None,
        };
        Ok(ManifestFacts {
            model_id: self.model_id.clone(),
            revision: self.revision.clone(),
            hardware_kind: self.hardware_kind.clone(),
            device: self.gpu.clone(),
            device_count: self.gpu_count,
            memory_gb: self.gpu_memory_gb,
            cpu: self.cpu.clone(),
            os: self.os.clone(),
            engine: self.engine.clone(),
            engine_version: self.engine_version.clone(),
            quantization: self.quantization.clone(),
            backend: self.backend.clone(),
            repository: self.engine_repository.clone(),
            build: self.engine_build.clone(),
            commit: self.engine_commit.clone(),
            launch_command: self.launch_command.clone(),
            notes_markdown,
            description: self.description.clone(),
            tool_version: None,
        })
    }
}

/// A finished cell's figures for its progress line, computed as the site computes them.
#[derive(Debug)]
struct FiguresReporter;

impl bench::CellReporter for FiguresReporter {
    fn describe(&self, cell: &Cell) -> String {
        describe_cell(cell)
    }
}

fn describe_cell(cell: &Cell) -> String {
    let v = normalize_cell(cell, Origin::Measured);
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

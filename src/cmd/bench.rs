use anyhow::{Context, Result};

use crate::cli::BenchArgs;
use crate::cli::FactsArgs;
use speed_matrix::analysis::normalize_cell;
use speed_matrix::bench::client::http::{parse_header_line, Credentials};
use speed_matrix::bench::client::tls::TlsOptions;
use speed_matrix::bench::{self, BenchFlags, BenchPlan, ManifestFacts};
use speed_matrix::format::{Cell, Origin, Phase, Status};

/// Parse, plan, run, print: every rule between flags is `BenchPlan::new`'s.
pub fn run(a: &BenchArgs) -> Result<()> {
    let plan = BenchPlan::new(flags(a)?)?;
    let s = bench::run_blocking(&plan, &FiguresReporter)?;
    if let Some(b) = &s.versus {
        say_written(&s)?;
        say_written(b)?;
        return compare_versus(&plan.folder.data_dir, &s.run_dir, &b.run_dir);
    }
    if !plan.folder.dry_run {
        for run in std::iter::once(&s).chain(&s.levels) {
            say_written(run)?;
        }
    }
    Ok(())
}

/// The flags as given, with what they name read from the environment and the disk: the key,
/// the extra headers, the notes file.
fn flags(a: &BenchArgs) -> Result<BenchFlags> {
    Ok(BenchFlags {
        endpoint: a.endpoint.clone(),
        credentials: credentials(a)?,
        tls: TlsOptions { ca_cert: a.ca_cert.clone(), insecure: a.insecure },
        telemetry: a.telemetry.map(Into::into),
        model: a.model.clone(),
        api: a.api.into(),
        contexts: a.contexts.clone(),
        concurrency: a.concurrency.clone(),
        prefill_contexts: a.prefill_contexts.clone(),
        duration: a.duration,
        max_output: a.max_output,
        repeat: a.repeat,
        prefill_samples: a.prefill_samples,
        prefix_reuse: a.prefix_reuse.clone(),
        turns: a.turns,
        kv_budget: a.kv_budget,
        run_id: a.run_id.clone(),
        data_dir: a.data.clone(),
        resume: a.resume,
        dry_run: a.dry_run,
        launch: a.launch.clone(),
        restarts: a.restarts,
        launch_timeout: a.launch_timeout,
        versus: a.versus.clone(),
        versus_launch: a.versus_launch.clone(),
        versus_run_id: a.versus_run_id.clone(),
        warmup_hold: a.warmup_hold,
        warmup_timeout: a.warmup_timeout,
        drain_timeout: a.drain_timeout,
        stall_timeout: a.stall_timeout,
        gauge_interval: a.gauge_interval,
        loop_min_chars: a.loop_min_chars,
        loop_min_cycles: a.loop_min_cycles,
        no_loop_detection: a.no_loop_detection,
        facts: a.facts.to_manifest_facts()?,
        rates: a.rates.clone(),
        arrival: a.arrival.clone(),
        seed: a.seed,
        max_in_flight: a.max_in_flight,
        input_tokens: a.input_tokens.clone(),
        output_tokens: a.output_tokens.clone(),
        trace: trace(a)?,
        trace_start: a.trace_start,
        trace_duration: a.trace_duration,
        speedup: a.speedup,
        scale_lengths: a.scale_lengths,
        max_input: a.max_input,
    })
}

/// `--trace`: the trace read whole (every line checked) and its file's name.
fn trace(a: &BenchArgs) -> Result<Option<(String, speed_matrix::bench::trace::Trace)>> {
    let Some(path) = &a.trace else { return Ok(None) };
    let format = a.trace_format.as_deref().map(str::parse).transpose().context("--trace-format")?;
    let trace = speed_matrix::bench::trace::read(path, format)?;
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok(Some((name, trace)))
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

fn say_written(s: &bench::BenchSummary) -> Result<()> {
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
    Ok(())
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

//! NVIDIA AIPerf 0.13 (export schema 1.x): a profile directory (`profile_export_aiperf.json`,
//! with `profile_export.jsonl` beside it) or a sweep directory (one such folder per
//! combination, `concurrency_4/` ...). Each profile is a cell; profiles of one setting (model,
//! input and output lengths) form a run, and profiles of one setting and concurrency
//! (`--num-profile-runs N`: `profile_runs/run_000K/`) are the cell's repetitions. The export of earlier releases (no `aiperf_version`,
//! the load under `input_config.loadgen`, lengths under `input_config.input.prompt`) reads too.

use std::fs;
use std::path::Path;

use anyhow::{bail, Result};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::converted::Converted;
use super::fixed_count;
use crate::format::{Cell, ReportedFigures, ReportedSample, ToolFigure};
use crate::fsutil;

pub const TOOL: &str = "AIPerf";

pub const NOTES: &str = "## How AIPerf measured\n\n\
Each cell is one AIPerf profile with a `concurrency` phase: a fixed number of requests with at most that many in flight, \
not a fixed window. Figures are as AIPerf reported them:\n\n\
- **Total tok/s** is `output_token_throughput.avg`: output tokens over the profiling phase's duration.\n\
- **TTFT** is `time_to_first_token.p50` (p90, p99 from the same block).\n\
- **Time between tokens** is AIPerf's `inter_token_latency`: (latency − TTFT) / (output − 1) per request, our definition \
(vLLM calls it TPOT); AIPerf's `inter_chunk_latency` is the raw gap between chunks and is not used.\n\
- **Per request tok/s** is `output_token_throughput_per_user.p50`.\n\
- **Average active requests** is `effective_concurrency.avg`, time-weighted over the phase.\n\
- The context is the input length asked of the synthetic data (`input_config.datasets[0].prompts.isl.mean`).\n\
- A warm-up phase, when there was one, is left out; its prompts come from the same data, so the first profiling requests can be prompt-cache hits.\n";

/// What an import keeps of one profile once it is read: its cell and the facts of its run
/// (a sweep of 10,000 profiles holds these, never the profiles' documents or records).
#[derive(Debug, Clone)]
pub struct Profile {
    /// Where it is (`file: `), for errors.
    pub at: String,
    /// The setting it belongs to (`setting_key`).
    pub key: String,
    pub cell: Cell,
    pub osl: Option<f64>,
    pub duration_s: Option<f64>,
    pub started_at: Option<String>,
    pub model: Option<String>,
    pub version: String,
}

/// Whether the file at `path` is a profile this importer reads (the copies AIPerf keeps under
/// `phases/` are the same figures again).
pub fn is_profile(path: &Path) -> bool {
    !path.components().any(|c| c.as_os_str() == "phases")
}

fn metric(v: &Value, name: &str, stat: &str) -> Option<f64> {
    v.get(name)?.get(stat)?.as_f64().filter(|x| x.is_finite() && *x >= 0.0)
}

/// The first of `pointers` present in `v`.
fn first_of<'a>(v: &'a Value, pointers: &[&str]) -> Option<&'a Value> {
    pointers.iter().find_map(|p| v.pointer(p))
}

/// The input length asked for (0.13: the dataset's ISL; earlier: the prompt's input tokens).
const ISL: [&str; 2] = ["/input_config/datasets/0/prompts/isl/mean", "/input_config/input/prompt/input_tokens/mean"];
const OSL: [&str; 2] = ["/input_config/datasets/0/prompts/osl/mean", "/input_config/input/prompt/output_tokens/mean"];

/// Whether `v` is a profile summary: 0.13 names its version; earlier exports have the load
/// generator's settings instead.
pub fn is_summary(v: &Value) -> bool {
    let has = |k: &str| v.get(k).is_some();
    has("input_config")
        && has("output_token_throughput")
        && (has("aiperf_version") || v.pointer("/input_config/loadgen").is_some())
}

/// The profiling phase's concurrency.
fn concurrency(v: &Value, at: &str) -> Result<u32> {
    if v.get("aiperf_version").is_none() {
        if let Some(c) = v.pointer("/input_config/loadgen/concurrency") {
            return match c.as_u64().and_then(|c| u32::try_from(c).ok()).filter(|c| *c > 0) {
                Some(c) => Ok(c),
                None => bail!("{at}input_config.loadgen.concurrency: {c} is not a concurrency"),
            };
        }
    }
    let phases = v.pointer("/input_config/phases").and_then(Value::as_array).cloned().unwrap_or_default();
    let profiling = phases.iter().find(|p| p.get("name").and_then(Value::as_str) == Some("profiling"));
    match profiling
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("concurrency"))
        .and_then(|p| p.get("concurrency"))
    {
        Some(c) => match c.as_u64().and_then(|c| u32::try_from(c).ok()).filter(|c| *c > 0) {
            Some(c) => Ok(c),
            None => bail!("{at}input_config.phases[profiling].concurrency: {c} is not a concurrency"),
        },
        None => bail!(
            "{at}input_config.phases: no profiling phase of type concurrency (only those are cells of the matrix)"
        ),
    }
}

/// The setting a profile belongs to: model, input and output lengths.
pub fn setting_key(v: &Value) -> String {
    let p = |ptr: &str| v.pointer(ptr).cloned().unwrap_or(Value::Null);
    format!(
        "{} {} {}",
        p("/input_config/endpoint/model_names"),
        first_of(v, &ISL).cloned().unwrap_or(Value::Null),
        first_of(v, &OSL).cloned().unwrap_or(Value::Null)
    )
}

/// One line of `profile_export.jsonl`: only what a sample needs is read.
#[derive(Debug, Deserialize)]
struct Record {
    #[serde(default)]
    metadata: RecordMeta,
    #[serde(default)]
    metrics: RecordMetrics,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
struct RecordMeta {
    benchmark_phase: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct RecordMetrics {
    time_to_first_token: Option<RecordValue>,
    request_latency: Option<RecordValue>,
    inter_token_latency: Option<RecordValue>,
    input_sequence_length: Option<RecordValue>,
    output_sequence_length: Option<RecordValue>,
}

#[derive(Debug, Deserialize)]
struct RecordValue {
    value: Option<f64>,
}

/// The longest request record read (a record is a few kilobytes).
const MAX_RECORD_BYTES: usize = 1 << 20;

/// Per-request samples of the profiling phase, from `profile_export.jsonl` beside the
/// profile, read one line at a time (a record that does not parse is passed over, as a
/// half-written last line is).
pub fn samples(records: &Path) -> Result<Vec<ReportedSample>> {
    if fs::symlink_metadata(records).is_err() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    fsutil::for_each_line(records, 4 << 30, MAX_RECORD_BYTES, |_, line| {
        let Ok(r) = serde_json::from_str::<Record>(line) else { return };
        if r.metadata.benchmark_phase.as_deref() != Some("profiling") {
            return;
        }
        let m = |v: &Option<RecordValue>| v.as_ref().and_then(|v| v.value);
        let ms = |v: &Option<RecordValue>| m(v).map(|v| v / 1000.0);
        let metrics = &r.metrics;
        out.push(ReportedSample {
            ttft_s: ms(&metrics.time_to_first_token),
            latency_s: ms(&metrics.request_latency),
            tbt_s: ms(&metrics.inter_token_latency),
            input_tokens: m(&metrics.input_sequence_length).map(|v| v as u64),
            output_tokens: m(&metrics.output_sequence_length).map(|v| v as u64),
            completed: Some(r.error.is_none()),
        });
    })?;
    Ok(out)
}

/// Reads one profile (the document, then its request records beside it) into what the
/// import keeps of it.
pub fn read_profile(at: String, v: &Value, records: &Path) -> Result<Profile> {
    let isl = first_of(v, &ISL).and_then(Value::as_f64);
    let Some(context) = isl.filter(|x| *x >= 1.0 && *x <= u32::MAX as f64).map(|x| x.round() as u32) else {
        bail!(
            "{at}input_config.datasets[0].prompts.isl.mean (earlier releases: input_config.input.prompt.input_tokens.mean): expected the input length asked for"
        )
    };
    let c = concurrency(v, &at)?;
    Ok(Profile {
        key: setting_key(v),
        cell: cell(v, context, c, samples(records)?),
        osl: first_of(v, &OSL).and_then(Value::as_f64),
        duration_s: metric(v, "benchmark_duration", "avg"),
        started_at: v.get("start_time").and_then(Value::as_str).map(str::to_string),
        model: v.pointer("/input_config/endpoint/model_names/0").and_then(Value::as_str).map(str::to_string),
        version: v.get("aiperf_version").and_then(Value::as_str).unwrap_or("unknown").to_string(),
        at,
    })
}

/// AIPerf's figures that have no column of ours, under its names.
fn tool_figures(v: &Value) -> Vec<ToolFigure> {
    [
        ToolFigure::of("inter_chunk_latency.p50", metric(v, "inter_chunk_latency", "p50"), "ms"),
        ToolFigure::of("time_to_second_token.p50", metric(v, "time_to_second_token", "p50"), "ms"),
        ToolFigure::of("request_latency.p50", metric(v, "request_latency", "p50"), "ms"),
        ToolFigure::of("request_throughput.avg", metric(v, "request_throughput", "avg"), "req/s"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn cell(v: &Value, context: u32, c: u32, samples: Vec<ReportedSample>) -> Cell {
    let errors = metric(v, "error_request_count", "avg").unwrap_or(0.0) as u64;
    let requests = metric(v, "request_count", "avg").unwrap_or(0.0) as u64 + errors;
    let warnings = fixed_count::warnings(TOOL, requests, c, errors);
    let reported = ReportedFigures {
        total_tps: metric(v, "output_token_throughput", "avg"),
        per_request_tps: metric(v, "output_token_throughput_per_user", "p50"),
        ttft_ms: metric(v, "time_to_first_token", "p50"),
        ttft_p90_ms: metric(v, "time_to_first_token", "p90"),
        ttft_p99_ms: metric(v, "time_to_first_token", "p99"),
        tbt_ms: metric(v, "inter_token_latency", "p50"),
        tbt_p90_ms: metric(v, "inter_token_latency", "p90"),
        tbt_p99_ms: metric(v, "inter_token_latency", "p99"),
        avg_active: metric(v, "effective_concurrency", "avg"),
        completed: metric(v, "request_count", "avg").map(|n| n as u64),
        output_tokens: metric(v, "total_output_tokens", "avg").map(|n| n as u64),
        measured_s: metric(v, "benchmark_duration", "avg"),
        token_source: Some(format!("{TOOL} output_token_throughput")),
        samples,
        tool_figures: tool_figures(v),
        ..Default::default()
    };
    fixed_count::cell(context, c, warnings, reported)
}

/// One setting's profiles as a run; returns the tool version too.
pub fn convert(group: Vec<Profile>) -> Result<(Converted, String)> {
    let first = group[0].clone();
    let mut cells: Vec<Cell> = Vec::new();
    // Profiles of one setting and concurrency are repetitions of one cell
    // (`--num-profile-runs`: `profile_runs/run_0001/`, ...), numbered in path order.
    for p in &group {
        let c = p.cell.concurrency;
        let earlier = cells.iter().filter(|x| x.concurrency == c).count() as u32;
        if earlier >= crate::format::MAX_REPETITIONS {
            bail!("{}concurrency {c}: more than {} profiles of one setting", p.at, crate::format::MAX_REPETITIONS);
        }
        let mut cell = p.cell.clone();
        cell.repetition = earlier + 1;
        cells.push(cell);
    }
    let duration = group.iter().filter_map(|p| p.duration_s).fold(0.0, f64::max);
    let started_at = group.iter().filter_map(|p| p.started_at.clone()).min();
    let osl = first.osl.unwrap_or(0.0);
    let settings = fixed_count::settings(first.cell.context, &cells, duration, osl.round().max(0.0) as u64);
    Ok((Converted { settings, cells, model: first.model, started_at, engine: None }, first.version))
}

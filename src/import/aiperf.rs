//! NVIDIA AIPerf 0.8 to 0.13 (export schema 1.x): a profile directory (`profile_export_aiperf.json`,
//! with `profile_export.jsonl` beside it) or a sweep directory (one such folder per
//! combination, `concurrency_4/` ...). Each profile is a cell; profiles of one setting (model,
//! input and output lengths) form a run, and profiles of one setting and concurrency
//! (`--num-profile-runs N`: `profile_runs/run_000K/`) are the cell's repetitions. Two layouts of
//! `input_config`, told apart by what the file holds (0.5 to 0.8 name their version too): the
//! earlier one (up to 0.8: the load under `loadgen`, lengths under `input.prompt`, models under
//! `endpoint.model_names`) and the later one (0.9 on: `phases`, `datasets`, `models.items`).

use std::fs;
use std::path::Path;

use anyhow::{bail, Result};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::converted::Converted;
use super::fixed_count;
use super::release::{refused, Release};
use crate::format::{Cell, ReportedFigures, ReportedSample, ToolFigure};
use crate::fsutil;

pub const TOOL: &str = "AIPerf";

/// The oldest release whose export was checked here (`../shared/peer-results-old`).
pub const OLDEST: Release = Release(0, 8, 0);

/// The run's notes: how its profiles were bounded (`Load::sentence`), then `NOTES`.
pub fn notes(load: Load) -> String {
    format!(
        "## How AIPerf measured\n\nEach cell is one AIPerf profile with a `concurrency` phase: {}. {NOTES}",
        load.sentence()
    )
}

const NOTES: &str = "Figures are as AIPerf reported them:\n\n\
- **Total tok/s** is `output_token_throughput.avg`: output tokens over the profiling phase's duration.\n\
- **TTFT** is `time_to_first_token.p50` (p90, p99 from the same block): AIPerf counts the first token of any kind, a \
reasoning token included, as this site does. Its `time_to_first_output_token` (the first answer token, after the \
reasoning) is this site's **answer TTFT**, shown where it differs from the TTFT.\n\
- **Time between tokens** is AIPerf's `inter_token_latency`: (latency − TTFT) / (output − 1) per request, our definition \
(vLLM calls it TPOT); AIPerf's `inter_chunk_latency` is the raw gap between chunks and is not used.\n\
- **Per request tok/s** is `output_token_throughput_per_user.p50`.\n\
- **Average active requests** is `effective_concurrency.avg`, time-weighted over the phase.\n\
- The context is the input length asked of the synthetic data (`input_config.datasets[0].prompts.isl.mean`).\n\
- A warm-up phase, when there was one, is left out; its prompts come from the same data, so the first profiling requests can be prompt-cache hits.\n";

/// How a profile's profiling phase was bounded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// `--request-count N`.
    Requests(u64),
    /// `--benchmark-duration S`.
    Seconds(f64),
    /// Neither is recorded.
    Unstated,
}

impl Load {
    fn sentence(self) -> String {
        match self {
            Load::Requests(n) => {
                format!("a fixed number of requests ({n}) with at most that many in flight, not a fixed window")
            }
            Load::Seconds(s) => format!(
                "a fixed duration ({} s) with at most that many in flight, not a fixed number of requests",
                crate::units::numbers::decimal1(s)
            ),
            Load::Unstated => {
                "at most that many requests in flight, bounded by a count or a duration the file does not record".into()
            }
        }
    }
}

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
    /// The models it sent to, as AIPerf names them (round-robin when several).
    pub models: Vec<String>,
    pub version: String,
    pub load: Load,
    /// A profile of request rates (a `poisson` or `constant` profiling phase): its rate
    /// cell, which the run keeps in place of `cell`.
    pub rate: Option<RateProfile>,
}

/// A rate profile: its arrival process, and its cell with every request on its own clock.
#[derive(Debug, Clone)]
pub struct RateProfile {
    pub arrival: String,
    pub seed: Option<u64>,
    pub cell: crate::format::RateCell,
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

/// Whether `v` is a profile summary: exports since 0.5 name their version; earlier ones have
/// the load generator's settings instead.
pub fn is_summary(v: &Value) -> bool {
    let has = |k: &str| v.get(k).is_some();
    has("input_config")
        && has("output_token_throughput")
        && (has("aiperf_version") || v.pointer("/input_config/loadgen").is_some())
}

/// The two layouts of `input_config`, by what the file holds.
enum Layout<'a> {
    /// Up to 0.8: `input_config.loadgen`.
    Loadgen(&'a Value),
    /// 0.9 on: `input_config.phases`, the one named `profiling`.
    Phases(&'a Value),
}

/// `phases` first: a file of 0.9 or later that also keeps a `loadgen` block (defaults, not
/// the profiling phase's load) is read by the layout its release writes.
fn layout<'a>(v: &'a Value, at: &str) -> Result<Layout<'a>> {
    let phases = v.pointer("/input_config/phases").and_then(Value::as_array);
    if let (None, Some(l)) = (phases, v.pointer("/input_config/loadgen")) {
        return Ok(Layout::Loadgen(l));
    }
    let Some(phases) = phases else {
        let version = v.get("aiperf_version").and_then(Value::as_str);
        return Err(refused(
            at,
            TOOL,
            version,
            OLDEST,
            "its input_config has neither loadgen, as 0.8 writes, nor phases, as 0.9 to 0.13 write",
        ));
    };
    match phases.iter().find(|p| p.get("name").and_then(Value::as_str) == Some("profiling")) {
        Some(p) if p.get("type").and_then(Value::as_str) == Some("concurrency") => Ok(Layout::Phases(p)),
        _ => bail!(
            "{at}input_config.phases: no profiling phase of type concurrency (only those are cells of the matrix)"
        ),
    }
}

/// The profiling phase's concurrency and how it was bounded.
fn load(v: &Value, at: &str) -> Result<(u32, Load)> {
    let (c, field, requests, seconds) = match layout(v, at)? {
        Layout::Loadgen(l) => {
            (l.get("concurrency"), "loadgen.concurrency", l.get("request_count"), l.get("benchmark_duration"))
        }
        Layout::Phases(p) => {
            (p.get("concurrency"), "phases[profiling].concurrency", p.get("requests"), p.get("duration"))
        }
    };
    let Some(c) = c.and_then(Value::as_u64).and_then(|c| u32::try_from(c).ok()).filter(|c| *c > 0) else {
        bail!("{at}input_config.{field}: expected the concurrency, a whole number above 0")
    };
    let load = match (requests.and_then(Value::as_u64), seconds.and_then(Value::as_f64)) {
        (_, Some(s)) if s > 0.0 && s.is_finite() => Load::Seconds(s),
        (Some(n), _) => Load::Requests(n),
        _ => Load::Unstated,
    };
    Ok((c, load))
}

/// The models a profile sent to: `input_config.models.items[].name` (0.9 on), else
/// `input_config.endpoint.model_names` (up to 0.8).
fn model_names(v: &Value) -> Vec<String> {
    let names = |a: Option<&Value>, key: Option<&str>| -> Vec<String> {
        a.and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| match key {
                        Some(k) => i.get(k).and_then(Value::as_str),
                        None => i.as_str(),
                    })
                    .filter(|n| !n.trim().is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let later = names(v.pointer("/input_config/models/items"), Some("name"));
    if later.is_empty() {
        names(v.pointer("/input_config/endpoint/model_names"), None)
    } else {
        later
    }
}

/// The setting a profile belongs to: everything but the concurrency that makes its figures
/// another run's (its models, endpoint, input and output lengths and their spread, extra
/// inputs, how the phase was bounded), so that profiles of different settings are never
/// merged as repetitions of one cell.
fn setting_key(v: &Value, models: &[String], load: Load) -> String {
    let p = |ptr: &str| v.pointer(ptr).cloned().unwrap_or(Value::Null);
    serde_json::json!([
        models,
        p("/input_config/endpoint/urls"),
        p("/input_config/endpoint/type"),
        p("/input_config/endpoint/custom_endpoint"),
        p("/input_config/endpoint/streaming"),
        p("/input_config/endpoint/extra"),
        p("/input_config/input/extra"),
        first_of(v, &ISL).cloned().unwrap_or(Value::Null),
        first_of(v, &OSL).cloned().unwrap_or(Value::Null),
        p("/input_config/datasets/0/prompts/isl/stddev"),
        p("/input_config/datasets/0/prompts/osl/stddev"),
        format!("{load:?}"),
    ])
    .to_string()
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
    let models = model_names(v);
    if let Some((arrival, rate)) = rate_phase(v) {
        return read_rate_profile(at, v, records, (context, arrival, rate), models);
    }
    let (c, load) = load(v, &at)?;
    let key = setting_key(v, &models, load);
    Ok(profile(v, at, key, cell(v, context, c, load, samples(records)?), models, load, None))
}

/// A profile's parts every layout reads the same way.
fn profile(
    v: &Value,
    at: String,
    key: String,
    cell: Cell,
    models: Vec<String>,
    load: Load,
    rate: Option<RateProfile>,
) -> Profile {
    Profile {
        rate,
        key,
        cell,
        osl: first_of(v, &OSL).and_then(Value::as_f64),
        duration_s: metric(v, "benchmark_duration", "avg"),
        started_at: v.get("start_time").and_then(Value::as_str).map(str::to_string),
        models,
        version: v.get("aiperf_version").and_then(Value::as_str).unwrap_or("unknown").to_string(),
        load,
        at,
    }
}

/// The profiling phase's arrival process and rate, where it is a rate phase (0.9 on).
fn rate_phase(v: &Value) -> Option<(String, f64)> {
    let phases = v.pointer("/input_config/phases").and_then(Value::as_array)?;
    let p = phases.iter().find(|p| p.get("name").and_then(Value::as_str) == Some("profiling"))?;
    let kind = p.get("type").and_then(Value::as_str)?;
    let rate = p.get("rate").and_then(Value::as_f64).filter(|r| r.is_finite() && *r > 0.0)?;
    matches!(kind, "poisson" | "constant").then(|| (kind.to_string(), rate))
}

/// A rate profile: its requests from `profile_export.jsonl` (the profiling phase's), each
/// due when AIPerf issued its credit (`credit_issued_ns`), sent at `request_start_ns`, its
/// first token `time_to_first_token` later, its tokens `inter_token_latency` apart, ended at
/// `request_end_ns`; the window from the first credit to the last, plus one mean gap.
fn read_rate_profile(
    at: String,
    v: &Value,
    records: &Path,
    (context, arrival, rate): (u32, String, f64),
    models: Vec<String>,
) -> Result<Profile> {
    let mut requests = Vec::new();
    fsutil::for_each_line(records, 4 << 30, MAX_RECORD_BYTES, |_, line| {
        let Ok(r) = serde_json::from_str::<RateRecord>(line) else { return };
        if r.metadata.benchmark_phase.as_deref() == Some("profiling") {
            requests.push(r);
        }
    })?;
    let Some(t0) = requests.iter().filter_map(|r| r.metadata.credit_issued_ns.or(r.metadata.request_start_ns)).min()
    else {
        bail!("{at}profile_export.jsonl: a rate profile needs its request records beside it (none of the profiling phase found)")
    };
    let s = |ns: Option<u64>| ns.map(|n| n.saturating_sub(t0) as f64 / 1e9);
    let requests: Vec<crate::format::ScheduledRequest> = requests
        .iter()
        .map(|r| {
            let (m, meta) = (&r.metrics, &r.metadata);
            let value =
                |x: &Option<RecordValue>| x.as_ref().and_then(|v| v.value).filter(|v| v.is_finite() && *v >= 0.0);
            let ok = r.error.is_none() && !meta.was_cancelled.unwrap_or(false);
            let sent = s(meta.request_start_ns);
            let first = sent.zip(value(&m.time_to_first_token)).map(|(t, ms)| t + ms / 1000.0).filter(|_| ok);
            let tokens = value(&m.output_sequence_length).unwrap_or(0.0) as u64;
            let gap = value(&m.inter_token_latency).unwrap_or(0.0) / 1000.0;
            crate::format::ScheduledRequest {
                scheduled_s: s(meta.credit_issued_ns).or(sent).unwrap_or(0.0),
                send_s: sent,
                due_s: None,
                first_token_s: first,
                last_token_s: first.map(|f| f + tokens.saturating_sub(1) as f64 * gap),
                end_s: s(meta.request_end_ns),
                tokens,
                prompt_tokens: value(&m.input_sequence_length).and_then(|p| u32::try_from(p as u64).ok()),
                error: (!ok).then(|| "failed (AIPerf's request error, or cancelled)".to_string()),
                cached_tokens: value(&m.usage_prompt_cache_read_tokens).map(|c| c as u64),
                planned: None,
            }
        })
        .collect();
    let last_due = requests.iter().map(|r| r.scheduled_s).fold(0.0, f64::max);
    let cell = crate::format::RateCell {
        schema_version: crate::format::SCHEMA_VERSION,
        context,
        rate_rps: rate,
        repetition: 1,
        status: crate::format::Status::Valid,
        prompt_tokens: None,
        window: crate::format::Window { start_s: 0.0, end_s: last_due + 1.0 / rate },
        requests,
        error: None,
        reported: None,
    };
    crate::format::rates::validate_rate_cell(&cell).map_err(|e| e.context(at.clone()))?;
    let load = Load::Unstated;
    // Rate profiles of one setting are one run whatever their rates: the key leaves the rate out.
    let key = format!("rate {arrival} {}", setting_key(v, &models, load));
    let seed =
        v.pointer("/input_config/input/random_seed").or_else(|| v.pointer("/run_info/seed")).and_then(Value::as_u64);
    let placeholder = fixed_count::cell(context, 1, Vec::new(), ReportedFigures::default());
    Ok(profile(v, at, key, placeholder, models, load, Some(RateProfile { arrival, seed, cell })))
}

/// One line of `profile_export.jsonl` as a rate profile reads it.
#[derive(Debug, Deserialize)]
struct RateRecord {
    #[serde(default)]
    metadata: RateRecordMeta,
    #[serde(default)]
    metrics: RateRecordMetrics,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
struct RateRecordMeta {
    benchmark_phase: Option<String>,
    credit_issued_ns: Option<u64>,
    request_start_ns: Option<u64>,
    request_end_ns: Option<u64>,
    was_cancelled: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
struct RateRecordMetrics {
    time_to_first_token: Option<RecordValue>,
    inter_token_latency: Option<RecordValue>,
    input_sequence_length: Option<RecordValue>,
    output_sequence_length: Option<RecordValue>,
    usage_prompt_cache_read_tokens: Option<RecordValue>,
}

const RATE_NOTES: &str = "## How AIPerf measured\n\nEach rate cell is one AIPerf profile whose profiling phase is `poisson` or `constant` at a `rate`: \
requests issued at that rate. Each request is kept on the run's clock from its record in `profile_export.jsonl`: due when AIPerf issued its \
credit (`credit_issued_ns`), sent at `request_start_ns`, its first token `time_to_first_token` later, its tokens `inter_token_latency` apart, \
ended at `request_end_ns`; a request with an error or cancelled is a failed request. The window runs from the first credit to the last, plus \
one mean gap; each profile is a stretch of its own on the run's clock.";

/// One setting's rate profiles as a rate run, a cell a profile (repetitions of a rate in
/// path order), each on its own stretch of the run's clock.
fn convert_rates(group: Vec<Profile>) -> Result<(Converted, String)> {
    let first = group[0].clone();
    let mut cells: Vec<crate::format::RateCell> = Vec::new();
    let mut offset = 0.0;
    for p in &group {
        let mut cell = p.rate.as_ref().expect("a rate profile").cell.clone();
        cell.repetition = 1 + cells.iter().filter(|c| c.rate_rps == cell.rate_rps).count() as u32;
        super::converted::shift_rate_cell(&mut cell, offset);
        offset = super::converted::after(&cell);
        cells.push(cell);
    }
    let rate = first.rate.clone().expect("a rate profile");
    let traffic = super::converted::RateTraffic {
        arrival: rate.arrival,
        seed: rate.seed.unwrap_or(0),
        max_in_flight: u32::MAX,
        warmup_s: 0.0,
    };
    let osl = first.osl.unwrap_or(0.0).round().max(0.0) as u64;
    let mut converted = Converted::rate_run(cells, traffic, osl, vec![RATE_NOTES.to_string()]);
    converted.model = (!first.models.is_empty()).then(|| first.models.join(", "));
    converted.started_at = group.iter().filter_map(|p| p.started_at.clone()).min();
    Ok((converted, first.version))
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

fn cell(v: &Value, context: u32, c: u32, load: Load, samples: Vec<ReportedSample>) -> Cell {
    let errors = metric(v, "error_request_count", "avg").unwrap_or(0.0) as u64;
    let requests = metric(v, "request_count", "avg").unwrap_or(0.0) as u64 + errors;
    let warnings = match load {
        Load::Seconds(s) => fixed_count::timed_warnings(TOOL, s, requests, c, errors),
        _ => fixed_count::warnings(TOOL, requests, c, errors),
    };
    let reported = ReportedFigures {
        total_tps: metric(v, "output_token_throughput", "avg"),
        per_request_tps: metric(v, "output_token_throughput_per_user", "p50"),
        ttft_ms: metric(v, "time_to_first_token", "p50"),
        ttft_p90_ms: metric(v, "time_to_first_token", "p90"),
        ttft_p99_ms: metric(v, "time_to_first_token", "p99"),
        answer_ttft_ms: answer_ttft(
            metric(v, "time_to_first_token", "p50"),
            metric(v, "time_to_first_output_token", "p50"),
        ),
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

/// AIPerf's time to the first output (answer) token where the streams reasoned first: it
/// is later than the TTFT then; equal, it says nothing the TTFT does not.
fn answer_ttft(ttft: Option<f64>, first_output: Option<f64>) -> Option<f64> {
    first_output.filter(|a| ttft.is_none_or(|t| a - t > 1e-9 * t.abs().max(1.0)))
}

/// One setting's profiles as a run; returns the tool version too.
pub fn convert(group: Vec<Profile>) -> Result<(Converted, String)> {
    if group[0].rate.is_some() {
        return convert_rates(group);
    }
    let load = group[0].load;
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
    let model = (!first.models.is_empty()).then(|| first.models.join(", "));
    let mut notes = vec![notes(load)];
    if Release::parse(&first.version).is_some_and(|r| r < OLDEST) {
        notes.push(format!(
            "AIPerf {} is older than the oldest release whose output was checked here ({OLDEST}); its layout is read as 0.8's.",
            first.version
        ));
    }
    if first.models.len() > 1 {
        notes.push(format!(
            "AIPerf sent to {} models in turn ({model}): each cell's figures mix them.",
            first.models.len(),
            model = first.models.join(", ")
        ));
    }
    Ok((
        Converted {
            settings,
            cells,
            model,
            started_at,
            engine: None,
            engine_version: None,
            device: None,
            notes,
            rates: Vec::new(),
            traffic: None,
        },
        first.version,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_output_token_is_the_answer_ttft_only_where_it_comes_later() {
        assert_eq!(answer_ttft(Some(120.0), Some(120.0)), None);
        assert_eq!(answer_ttft(Some(120.0), Some(950.5)), Some(950.5));
        assert_eq!(answer_ttft(None, Some(950.5)), Some(950.5));
        assert_eq!(answer_ttft(Some(120.0), None), None);
    }
}

//! inference-perf (kubernetes-sigs) report folders of 0.5 on: one
//! `stage_N_lifecycle_metrics.json` per stage (`load_summary.concurrency`), each a cell of a
//! fixed-count run, with the stage's requests in `per_request_lifecycle_metrics.json` (in
//! stage order, no stage number) and the run's configuration in `config.yaml` (the model).
//! Layouts are told apart by what the files hold: 0.5 counts the prompt as
//! `successes.prompt_len` and keeps a request's times under `info.response_info`; 0.6 on as
//! `successes.prompt_tokens` and `info.response_metrics`. No file names the release.

use std::path::Path;

use anyhow::{bail, Result};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::converted::Converted;
use super::fixed_count;
use super::release::{refused, Release};
use crate::format::{Cell, ReportedFigures, ReportedSample, ToolFigure};

pub const TOOL: &str = "inference-perf";

pub const NOTES: &str = "## How inference-perf measured\n\n\
Each cell is one inference-perf stage of the `concurrent` load: a fixed number of requests with `concurrency_level` in flight, \
not a fixed window. Figures are as inference-perf reported them (its times are in seconds):\n\n\
- **Total tok/s** is `successes.throughput.output_tokens_per_sec`.\n\
- **TTFT** is `successes.latency.time_to_first_token.median` (p90, p99 from the same block): the first streamed token; \
inference-perf does not say whether a reasoning token counts (its issue #559) nor report the first answer token apart, so \
a reasoning model's runs have no answer TTFT.\n\
- **Time between tokens** is `time_per_output_token`: (last token − first token) / (output − 1), our definition; \
its `inter_token_latency` is every chunk gap pooled and `normalized_time_per_output_token` is latency / output tokens: neither is used.\n\
- **Per request tok/s** is 1 / median time per output token.\n\
- The context is `successes.prompt_tokens.mean` (0.5: `successes.prompt_len.mean`), inference-perf's own count of the prompt.\n\
- The model is `server.model_name` of the report folder's `config.yaml`.\n";

/// The oldest release read.
pub const OLDEST: Release = Release(0, 5, 0);

/// The prompt's length (0.6 on, then 0.5) and the output's.
const PROMPT: [&str; 2] = ["/successes/prompt_tokens", "/successes/prompt_len"];
const OUTPUT: [&str; 2] = ["/successes/output_tokens", "/successes/output_len"];

fn first_dist(v: &Value, ptrs: &[&str], stat: &str) -> Option<f64> {
    ptrs.iter().find(|p| v.pointer(p).is_some()).and_then(|p| dist(v, p, stat))
}

fn dist(v: &Value, ptr: &str, stat: &str) -> Option<f64> {
    v.pointer(&format!("{ptr}/{stat}")).and_then(Value::as_f64).filter(|x| x.is_finite() && *x >= 0.0)
}

/// One per-request record: only what a sample needs is read (a report of a long run is
/// hundreds of megabytes; its records are never held as documents).
#[derive(Debug, Deserialize)]
struct Record {
    start_time: Option<f64>,
    end_time: Option<f64>,
    #[serde(default)]
    info: RecordInfo,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
struct RecordInfo {
    input_tokens: Option<u64>,
    /// 0.5 calls it `response_info`.
    #[serde(default, alias = "response_info")]
    response_metrics: ResponseMetrics,
}

#[derive(Debug, Default, Deserialize)]
struct ResponseMetrics {
    output_tokens: Option<u64>,
    #[serde(default)]
    output_token_times: Vec<f64>,
}

impl Record {
    fn sample(&self) -> ReportedSample {
        let (start, end) = (self.start_time, self.end_time);
        let m = &self.info.response_metrics;
        let (first, last, out) =
            (m.output_token_times.first().copied(), m.output_token_times.last().copied(), m.output_tokens);
        ReportedSample {
            ttft_s: first.zip(start).map(|(f, s)| f - s).filter(|t| *t >= 0.0),
            latency_s: end.zip(start).map(|(e, s)| e - s).filter(|t| *t >= 0.0),
            tbt_s: first.zip(last).zip(out).filter(|(_, n)| *n > 1).map(|((f, l), n)| (l - f) / (n - 1) as f64),
            input_tokens: self.info.input_tokens,
            output_tokens: out,
            completed: Some(self.error.is_none()),
        }
    }
}

/// One request's instants (the tool's monotonic clock, seconds) and counts: what a rate
/// stage keeps of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestTimes {
    pub start: Option<f64>,
    pub end: Option<f64>,
    pub first: Option<f64>,
    pub last: Option<f64>,
    pub output_tokens: Option<u64>,
    pub input_tokens: Option<u64>,
    pub ok: bool,
}

impl Record {
    fn times(&self) -> RequestTimes {
        let m = &self.info.response_metrics;
        RequestTimes {
            start: self.start_time,
            end: self.end_time,
            first: m.output_token_times.first().copied(),
            last: m.output_token_times.last().copied(),
            output_tokens: m.output_tokens,
            input_tokens: self.info.input_tokens,
            ok: self.error.is_none(),
        }
    }
}

/// The report's per-request records (`per_request_lifecycle_metrics.json`, a JSON array) as
/// samples, read as a stream: one record in memory at a time.
pub fn read_samples(path: &Path) -> Result<Vec<ReportedSample>> {
    read_each(path, Record::sample)
}

/// The records' instants, for rate stages.
pub fn read_times(path: &Path) -> Result<Vec<RequestTimes>> {
    read_each(path, Record::times)
}

fn read_each<T>(path: &Path, each: fn(&Record) -> T) -> Result<Vec<T>> {
    struct Visit<T>(fn(&Record) -> T);
    impl<'de, T> serde::de::Visitor<'de> for Visit<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of per-request records")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(r) = seq.next_element::<Record>()? {
                out.push((self.0)(&r));
            }
            Ok(out)
        }
    }
    let (file, _) = crate::fsutil::open_regular_file(path, 4 << 30)?;
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
    let out = serde::Deserializer::deserialize_seq(&mut de, Visit(each))
        .map_err(|e| crate::format::json::located(path, &e))?;
    Ok(out)
}

/// Whether the stages are rate stages (`load_summary.requested_rate`, no concurrency).
pub fn is_rate_run(stages: &[(String, Value)]) -> bool {
    stages.iter().all(|(_, v)| {
        v.pointer("/load_summary/requested_rate").and_then(Value::as_f64).is_some()
            && v.pointer("/load_summary/concurrency").is_none()
    })
}

const RATE_NOTES: &str = "## How inference-perf measured\n\nEach rate cell is one inference-perf stage of a `poisson` or `constant` load at its \
`requested_rate`. Each request is kept on the run's clock from `per_request_lifecycle_metrics.json` (records in stage order): sent at its \
`start_time`, its first and last token at the first and last of its `output_token_times`, ended at `end_time`. inference-perf keeps no \
request's due instant, only each stage's distribution of schedule delays, so each request is taken as due when it was sent: the client \
lag column reads 0 here; the stages' own schedule delay is below.";

/// Rate stages as a rate run: a rate cell a stage, its block of records on one clock (the
/// tool's monotonic clock less the first record's start).
pub fn convert_rates(stages: &[(String, Value)], times: &[RequestTimes], config: Option<&Value>) -> Result<Converted> {
    let t0 = times.iter().filter_map(|t| t.start).fold(f64::INFINITY, f64::min);
    if !t0.is_finite() {
        bail!("{}per_request_lifecycle_metrics.json: rate stages need their request records beside them", stages[0].0);
    }
    let on = |t: Option<f64>| t.map(|t| t - t0).filter(|t| *t >= 0.0);
    let (mut cells, mut next, mut notes) = (Vec::new(), 0usize, vec![RATE_NOTES.to_string()]);
    for (i, (at, v)) in stages.iter().enumerate() {
        let rate =
            v.pointer("/load_summary/requested_rate").and_then(Value::as_f64).filter(|r| r.is_finite() && *r > 0.0);
        let Some(rate) = rate else { bail!("{at}load_summary.requested_rate: expected requests per second above 0") };
        let context = first_dist(v, &PROMPT, "mean").map_or(1, |m| (m.round() as u32).max(1));
        let n = (v.pointer("/successes/count").and_then(Value::as_u64).unwrap_or(0)
            + v.pointer("/failures/count").and_then(Value::as_u64).unwrap_or(0)) as usize;
        let block = times.get(next..next + n).unwrap_or(&[]);
        next += n;
        let requests: Vec<crate::format::ScheduledRequest> = block
            .iter()
            .map(|t| crate::format::ScheduledRequest {
                scheduled_s: on(t.start).unwrap_or(0.0),
                send_s: on(t.start),
                due_s: None,
                first_token_s: on(t.first).filter(|_| t.ok),
                last_token_s: on(t.last).filter(|_| t.ok),
                end_s: on(t.end),
                tokens: t.output_tokens.unwrap_or(0),
                prompt_tokens: t.input_tokens.and_then(|p| u32::try_from(p).ok()),
                error: (!t.ok).then(|| "failed (inference-perf's request error)".to_string()),
                cached_tokens: None,
                planned: None,
            })
            .collect();
        let start = requests.iter().map(|r| r.scheduled_s).fold(f64::INFINITY, f64::min);
        let start = if start.is_finite() { start } else { 0.0 };
        let sending = v.pointer("/load_summary/send_duration").and_then(Value::as_f64).unwrap_or(0.0).max(0.0);
        let cell = crate::format::RateCell {
            schema_version: crate::format::SCHEMA_VERSION,
            context,
            rate_rps: rate,
            repetition: 1 + cells.iter().filter(|c: &&crate::format::RateCell| c.rate_rps == rate).count() as u32,
            status: crate::format::Status::Valid,
            prompt_tokens: None,
            window: crate::format::Window { start_s: start, end_s: start + sending + 1.0 / rate },
            requests,
            error: None,
            reported: None,
        };
        crate::format::rates::validate_rate_cell(&cell).map_err(|e| e.context(at.clone()))?;
        if let Some(p99) = dist(v, "/load_summary/schedule_delay", "p99") {
            notes.push(format!(
                "Stage {i} ({rate} requests/s): inference-perf's schedule delay p99 {:.2} ms.",
                p99 * 1000.0
            ));
        }
        cells.push(cell);
    }
    let load = config.and_then(|c| c.get("load"));
    let arrival = load.and_then(|l| l.get("type")).and_then(Value::as_str).unwrap_or("unknown").to_string();
    let seed = load.and_then(|l| l.get("base_seed")).and_then(Value::as_u64).unwrap_or(0);
    let max_output = stages.iter().filter_map(|(_, v)| first_dist(v, &OUTPUT, "max")).fold(0.0, f64::max);
    let traffic = super::converted::RateTraffic { arrival, seed, max_in_flight: u32::MAX, warmup_s: 0.0 };
    let mut converted = Converted::rate_run(cells, traffic, max_output.round().max(0.0) as u64, notes);
    converted.model = config.and_then(model_of_config);
    Ok(converted)
}

fn cell(v: &Value, context: u32, c: u32, samples: Vec<ReportedSample>) -> Cell {
    let ok = v.pointer("/successes/count").and_then(Value::as_u64).unwrap_or(0);
    let failed = v.pointer("/failures/count").and_then(Value::as_u64).unwrap_or(0);
    let warnings = fixed_count::warnings(TOOL, ok + failed, c, failed);
    let ms = |x: Option<f64>| x.map(|s| s * 1000.0);
    let tpot = dist(v, "/successes/latency/time_per_output_token", "median");
    let reported = ReportedFigures {
        total_tps: dist(v, "/successes/throughput", "output_tokens_per_sec"),
        per_request_tps: tpot.filter(|t| *t > 0.0).map(|t| 1.0 / t),
        ttft_ms: ms(dist(v, "/successes/latency/time_to_first_token", "median")),
        ttft_p90_ms: ms(dist(v, "/successes/latency/time_to_first_token", "p90")),
        ttft_p99_ms: ms(dist(v, "/successes/latency/time_to_first_token", "p99")),
        tbt_ms: ms(tpot),
        tbt_p90_ms: ms(dist(v, "/successes/latency/time_per_output_token", "p90")),
        tbt_p99_ms: ms(dist(v, "/successes/latency/time_per_output_token", "p99")),
        completed: Some(ok),
        output_tokens: first_dist(v, &OUTPUT, "total").map(|t| t.round() as u64),
        measured_s: v.get("benchmark_time_seconds").and_then(Value::as_f64).filter(|x| x.is_finite() && *x >= 0.0),
        token_source: Some(format!("{TOOL} output_tokens_per_sec")),
        samples,
        tool_figures: [
            ToolFigure::of(
                "normalized_time_per_output_token.median",
                ms(dist(v, "/successes/latency/normalized_time_per_output_token", "median")),
                "ms",
            ),
            ToolFigure::of(
                "inter_token_latency.median",
                ms(dist(v, "/successes/latency/inter_token_latency", "median")),
                "ms",
            ),
            ToolFigure::of("request_latency.median", dist(v, "/successes/latency/request_latency", "median"), "s"),
            ToolFigure::of("requests_per_sec", dist(v, "/successes/throughput", "requests_per_sec"), "req/s"),
        ]
        .into_iter()
        .flatten()
        .collect(),
        ..Default::default()
    };
    fixed_count::cell(context, c, warnings, reported)
}

/// The model a report's `config.yaml` names (`server.model_name`).
fn model_of_config(config: &Value) -> Option<String> {
    config.pointer("/server/model_name").and_then(Value::as_str).filter(|m| !m.trim().is_empty()).map(str::to_string)
}

/// The stages (each with where it is), in stage order, the report's per-request records and
/// its `config.yaml`, if any.
pub fn convert(stages: &[(String, Value)], records: &[ReportedSample], config: Option<&Value>) -> Result<Converted> {
    let mut cells: Vec<Cell> = Vec::new();
    let mut next_record = 0;
    let mut context = None;
    for (at, v) in stages {
        let Some(c) = v
            .pointer("/load_summary/concurrency")
            .and_then(Value::as_u64)
            .and_then(|c| u32::try_from(c).ok())
            .filter(|c| *c > 0)
        else {
            bail!("{at}load_summary.concurrency: expected the stage's concurrency level")
        };
        if !PROMPT.iter().any(|p| v.pointer(p).is_some())
            && v.pointer("/successes/count").and_then(Value::as_u64) != Some(0)
        {
            return Err(refused(
                at,
                TOOL,
                None,
                OLDEST,
                "its successes count the prompt neither as prompt_tokens (0.6 on) nor as prompt_len (0.5)",
            ));
        }
        let mean = first_dist(v, &PROMPT, "mean").filter(|m| *m >= 1.0 && *m <= u32::MAX as f64);
        let Some(ctx) = mean.map(|m| m.round() as u32) else {
            bail!("{at}successes.prompt_tokens.mean (0.5: successes.prompt_len.mean): expected the prompt length")
        };
        let ctx = *context.get_or_insert(ctx);
        if cells.iter().any(|x| x.concurrency == c) {
            bail!("{at}concurrency {c} appears twice: a cell is imported once");
        }
        // Records come in stage order, one block per stage.
        let n = (v.pointer("/successes/count").and_then(Value::as_u64).unwrap_or(0)
            + v.pointer("/failures/count").and_then(Value::as_u64).unwrap_or(0)) as usize;
        let block = records.get(next_record..next_record + n).unwrap_or(&[]);
        next_record += n;
        cells.push(cell(v, ctx, c, block.to_vec()));
    }
    let max_output = stages.iter().filter_map(|(_, v)| first_dist(v, &OUTPUT, "max")).fold(0.0, f64::max);
    let duration =
        stages.iter().filter_map(|(_, v)| v.get("benchmark_time_seconds").and_then(Value::as_f64)).fold(0.0, f64::max);
    let settings = fixed_count::settings(context.unwrap_or(0), &cells, duration, max_output.round().max(0.0) as u64);
    let model = config.and_then(model_of_config);
    Ok(Converted {
        settings,
        cells,
        model,
        started_at: None,
        engine: None,
        engine_version: None,
        device: None,
        notes: vec![NOTES.to_string()],
        rates: Vec::new(),
        traffic: None,
    })
}

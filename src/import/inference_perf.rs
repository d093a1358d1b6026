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

/// The report's per-request records (`per_request_lifecycle_metrics.json`, a JSON array) as
/// samples, read as a stream: one record in memory at a time.
pub fn read_samples(path: &Path) -> Result<Vec<ReportedSample>> {
    struct Samples(Vec<ReportedSample>);
    impl<'de> Deserialize<'de> for Samples {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Samples, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Samples;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an array of per-request records")
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Samples, A::Error> {
                    let mut out = Vec::new();
                    while let Some(r) = seq.next_element::<Record>()? {
                        out.push(r.sample());
                    }
                    Ok(Samples(out))
                }
            }
            d.deserialize_seq(Visit)
        }
    }
    let (file, _) = crate::fsutil::open_regular_file(path, 4 << 30)?;
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
    let samples = Samples::deserialize(&mut de).map_err(|e| crate::format::json::located(path, &e))?;
    Ok(samples.0)
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

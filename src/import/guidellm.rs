//! guidellm `benchmarks.json` of 0.5 on: one file, one benchmark per concurrency
//! (`config.strategy.streams`), each a cell of a fixed-count run. Two layouts, told apart by
//! what the file holds: format version 1 (0.5, 0.6: the command's `args` at the top) and 2
//! (0.7 on: a `config` spec). Output tok/s changed its definition in 0.7.4 without a change of
//! layout, so the release decides which figure is read (`OutputRate`).

use anyhow::{bail, Result};
use serde_json::Value;

use super::converted::Converted;
use super::fixed_count;
use super::release::{refused, Release};
use crate::format::{Cell, ReportedFigures, ReportedSample, ToolFigure};

pub const TOOL: &str = "guidellm";

/// The oldest release read: the first to write format version 1.
pub const OLDEST: Release = Release(0, 5, 0);
/// The first release whose mean output tok/s is taken over the whole benchmark.
const WHOLE_RUN_MEAN: Release = Release(0, 7, 4);

/// Which figure is a cell's total tok/s, by release.
#[derive(Debug, Clone, Copy, PartialEq)]
enum OutputRate {
    /// 0.7.4 on: `output_tokens_per_second.successful.mean`, over the benchmark.
    Mean,
    /// Before 0.7.4: that mean runs from the first to the last output token, not over the
    /// benchmark, so output tokens over the benchmark's duration are read instead.
    TokensOverDuration,
}

impl OutputRate {
    fn of(version: &str) -> OutputRate {
        // A release that cannot be read is never taken for a new one: output tokens over the
        // benchmark's duration are right in every release.
        match WHOLE_RUN_MEAN.is_after(version) {
            Some(false) => OutputRate::Mean,
            _ => OutputRate::TokensOverDuration,
        }
    }

    fn note(self, version: &str) -> String {
        match self {
            OutputRate::Mean => "- **Total tok/s** is `output_tokens_per_second.successful.mean`, the run's rate (guidellm's median of that series is not meaningful).\n".into(),
            OutputRate::TokensOverDuration => format!(
                "- **Total tok/s** is `output_token_count.successful.total_sum` / `duration`: output tokens over the benchmark, right in every release. \
guidellm {version}'s own `output_tokens_per_second.successful.mean` is not that (0.7.0 to 0.7.3 take it from the first to the last output \
token; 0.7.4 and later over the benchmark), so it differs; it is kept on each cell page as guidellm's own figure.\n"
            ),
        }
    }
}

/// The run's notes: how guidellm measured, for this release and its output rate.
fn notes(version: &str, rate: OutputRate) -> String {
    format!(
        "## How guidellm measured\n\n\
Each cell is one guidellm benchmark of the `concurrent` profile: a fixed number of requests with `streams` in flight, \
not a fixed window. Figures are guidellm {version}'s:\n\n{}{NOTES}",
        rate.note(version)
    )
}

const NOTES: &str = "\
- **TTFT** is `time_to_first_token_ms.successful.median` (p90, p99 from its percentiles): guidellm counts the first \
token of any kind, a reasoning token included, as this site does; it does not report the first answer token apart, so \
a reasoning model's runs have no answer TTFT.\n\
- **Time between tokens** is guidellm's `inter_token_latency_ms`: (latency − TTFT) / (output − 1), our definition. \
guidellm's `time_per_output_token_ms` is latency / output tokens, TTFT included, and is not used.\n\
- **Per request tok/s** is 1000 / median inter-token latency.\n\
- **Average active requests** is `request_concurrency.successful.mean`.\n\
- The context is the prompt length asked of the synthetic data (`config.spec.data[0].prompt_tokens`; format version 1: \
`prompt_tokens=` in `args.data[0]`); the server counted the chat template too.\n";

fn stat(v: &Value, metric: &str, path: &str) -> Option<f64> {
    v.pointer(&format!("/metrics/{metric}/successful{path}"))
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite() && *x >= 0.0)
}

/// A request's parts no figure reads (its arguments, output text, nested metrics): left out
/// as the file is parsed (`json::parse_lean`), so a large file is never held whole.
pub const UNREAD: &[&str] = &[
    "request_args",
    "output",
    "reasoning_output",
    "tool_calls",
    "info",
    "input_metrics",
    "output_metrics",
    "response_metrics",
];

fn samples(b: &Value) -> Vec<ReportedSample> {
    let none = Vec::new();
    let ok = b.pointer("/requests/successful").and_then(Value::as_array).unwrap_or(&none);
    let failed = b.pointer("/requests/errored").and_then(Value::as_array).unwrap_or(&none);
    let f = |r: &Value, k: &str| r.get(k).and_then(Value::as_f64);
    let one = |r: &Value, completed: bool| ReportedSample {
        ttft_s: f(r, "time_to_first_token_ms").map(|v| v / 1000.0),
        latency_s: f(r, "request_latency"),
        tbt_s: f(r, "inter_token_latency_ms").map(|v| v / 1000.0),
        input_tokens: r.get("prompt_tokens").and_then(Value::as_u64),
        output_tokens: r.get("output_tokens").and_then(Value::as_u64),
        completed: Some(completed),
    };
    ok.iter().map(|r| one(r, true)).chain(failed.iter().map(|r| one(r, false))).collect()
}

/// Output tokens over the benchmark's duration.
fn tokens_over_duration(b: &Value) -> Option<f64> {
    let tokens = stat(b, "output_token_count", "/total_sum")?;
    let duration = b.get("duration").and_then(Value::as_f64).filter(|d| d.is_finite() && *d > 0.0)?;
    Some(tokens / duration)
}

fn cell(b: &Value, context: u32, concurrency: u32, rate: OutputRate) -> Cell {
    let errored = b.pointer("/metrics/request_totals/errored").and_then(Value::as_u64).unwrap_or(0);
    let sent = b.pointer("/metrics/request_totals/total").and_then(Value::as_u64).unwrap_or(0);
    let warnings = fixed_count::warnings(TOOL, sent, concurrency, errored);
    let itl = stat(b, "inter_token_latency_ms", "/median");
    let reported = ReportedFigures {
        total_tps: match rate {
            OutputRate::Mean => stat(b, "output_tokens_per_second", "/mean"),
            OutputRate::TokensOverDuration => tokens_over_duration(b),
        },
        per_request_tps: itl.filter(|t| *t > 0.0).map(|t| 1000.0 / t),
        ttft_ms: stat(b, "time_to_first_token_ms", "/median"),
        ttft_p90_ms: stat(b, "time_to_first_token_ms", "/percentiles/p90"),
        ttft_p99_ms: stat(b, "time_to_first_token_ms", "/percentiles/p99"),
        tbt_ms: itl,
        tbt_p90_ms: stat(b, "inter_token_latency_ms", "/percentiles/p90"),
        tbt_p99_ms: stat(b, "inter_token_latency_ms", "/percentiles/p99"),
        avg_active: stat(b, "request_concurrency", "/mean"),
        completed: b.pointer("/metrics/request_totals/successful").and_then(Value::as_u64),
        output_tokens: stat(b, "output_token_count", "/total_sum").map(|t| t.round() as u64),
        measured_s: b.get("duration").and_then(Value::as_f64).filter(|d| d.is_finite() && *d >= 0.0),
        token_source: Some(match rate {
            OutputRate::Mean => format!("{TOOL} output_tokens_per_second"),
            OutputRate::TokensOverDuration => format!("{TOOL} output_token_count / duration"),
        }),
        samples: samples(b),
        tool_figures: [
            ToolFigure::of("time_per_output_token_ms.median", stat(b, "time_per_output_token_ms", "/median"), "ms"),
            ToolFigure::of("request_latency.median", stat(b, "request_latency", "/median"), "s"),
            ToolFigure::of("requests_per_second.mean", stat(b, "requests_per_second", "/mean"), "req/s"),
            ToolFigure::of(
                "output_tokens_per_second.mean",
                (rate == OutputRate::TokensOverDuration)
                    .then(|| stat(b, "output_tokens_per_second", "/mean"))
                    .flatten(),
                "tok/s",
            ),
        ]
        .into_iter()
        .flatten()
        .collect(),
        ..Default::default()
    };
    fixed_count::cell(context, concurrency, warnings, reported)
}

/// What the run was asked for, from either layout: the synthetic data's prompt and output
/// lengths and the model.
struct Asked {
    context: u32,
    max_output: u64,
    model: Option<String>,
}

/// Format version 2 (0.7 on): `config.spec`.
fn asked_v2(v: &Value, at: &str) -> Result<Asked> {
    let data = v.pointer("/config/spec/data/0");
    let context = data.and_then(|d| d.get("prompt_tokens")).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    let Some(context) = context.filter(|c| *c > 0) else {
        bail!("{at}config.spec.data[0].prompt_tokens: expected the prompt length of the synthetic data")
    };
    let max_output = data.and_then(|d| d.get("output_tokens")).and_then(Value::as_u64).unwrap_or(0);
    let model = v.pointer("/config/spec/backend/model").and_then(Value::as_str).map(str::to_string);
    Ok(Asked { context, max_output, model })
}

/// Format version 1 (0.5, 0.6): the command's `args`, the data as `--data`'s text
/// (`prompt_tokens=256,output_tokens=64`).
fn asked_v1(v: &Value, at: &str) -> Result<Asked> {
    let data = v.pointer("/args/data/0").and_then(Value::as_str).unwrap_or("");
    let field = |name: &str| {
        data.split(',')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| k.trim() == name)
            .and_then(|(_, n)| n.trim().parse::<u64>().ok())
    };
    let Some(context) = field("prompt_tokens").and_then(|n| u32::try_from(n).ok()).filter(|c| *c > 0) else {
        bail!("{at}args.data[0]: expected synthetic data of a prompt length (\"prompt_tokens=N,...\"), found {data:?}")
    };
    let model = v
        .pointer("/args/backend_kwargs/model")
        .or_else(|| v.pointer("/args/model"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Asked { context, max_output: field("output_tokens").unwrap_or(0), model })
}

/// The file's benchmarks as one run (`at` names the file in errors).
pub fn convert(v: &Value, at: &str) -> Result<(Converted, String)> {
    let named = v.pointer("/metadata/guidellm_version").and_then(Value::as_str).map(str::trim);
    // `0.7.4` names a release; an empty name, `7` or `main` does not.
    let readable = named.filter(|n| n.contains('.') && crate::import::release::Release::parse(n).is_some());
    let version = readable.unwrap_or("unknown").to_string();
    let Asked { context, max_output, model } = if v.get("config").is_some() {
        asked_v2(v, at)?
    } else if v.get("args").is_some() {
        asked_v1(v, at)?
    } else {
        return Err(refused(
            at,
            TOOL,
            named,
            OLDEST,
            "it has neither the args of format version 1 nor the config of version 2",
        ));
    };
    let rate = OutputRate::of(&version);
    let Some(benchmarks) = v.get("benchmarks").and_then(Value::as_array).filter(|b| !b.is_empty()) else {
        bail!("{at}benchmarks: expected at least one benchmark")
    };
    let mut cells: Vec<Cell> = Vec::new();
    for (i, b) in benchmarks.iter().enumerate() {
        let streams = b.pointer("/config/strategy/streams").or_else(|| b.pointer("/config/strategy/max_concurrency"));
        let Some(c) = streams.and_then(Value::as_u64).and_then(|c| u32::try_from(c).ok()).filter(|c| *c > 0) else {
            bail!("{at}benchmarks[{i}].config.strategy.streams: expected the concurrency (only the concurrent profile is a cell of the matrix)")
        };
        if cells.iter().any(|x| x.concurrency == c) {
            bail!("{at}benchmarks[{i}]: concurrency {c} appears twice: a cell is imported once");
        }
        cells.push(cell(b, context, c, rate));
    }
    let duration = benchmarks.iter().filter_map(|b| b.get("duration").and_then(Value::as_f64)).fold(0.0, f64::max);
    let started =
        benchmarks.iter().filter_map(|b| b.get("start_time").and_then(Value::as_f64)).fold(f64::INFINITY, f64::min);
    let started_at = jiff::Timestamp::from_second(started.floor() as i64)
        .ok()
        .filter(|_| started.is_finite())
        .map(|t| t.to_string());
    let settings = fixed_count::settings(context, &cells, duration, max_output);
    let notes = vec![notes(&version, rate)];
    Ok((
        Converted { settings, cells, model, started_at, engine: None, engine_version: None, device: None, notes },
        version,
    ))
}

//! guidellm `benchmarks.json` of 0.5 on: one file, one benchmark per concurrency
//! (`config.strategy.streams`), each a cell of a fixed-count run. Two layouts, told apart by
//! what the file holds: format version 1 (0.5, 0.6: the command's `args` at the top) and 2
//! (0.7 on: a `config` spec). Output tok/s changed its definition in 0.7.4 without a change of
//! layout, so the release decides which figure is read (`OutputRate`).

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::converted::Converted;
use super::converted::RateTraffic;
use super::fixed_count;
use super::release::{refused, Release};
use crate::format::{Cell, RateCell, ReportedFigures, ReportedSample, ScheduledRequest, ToolFigure};

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
    let started =
        benchmarks.iter().filter_map(|b| b.get("start_time").and_then(Value::as_f64)).fold(f64::INFINITY, f64::min);
    let started_at = jiff::Timestamp::from_second(started.floor() as i64)
        .ok()
        .filter(|_| started.is_finite())
        .map(|t| t.to_string());
    if benchmarks.iter().any(|b| rate_of(b).is_some()) {
        let (rates, traffic, left_out) = rate_run(benchmarks, context, at)?;
        let mut notes = vec![RATE_NOTES.to_string()];
        if !left_out.is_empty() {
            notes.push(format!("Left out: the file's {} benchmarks, not at an offered rate.", left_out.join(", ")));
        }
        let mut converted = Converted::rate_run(rates, traffic, max_output, notes);
        (converted.model, converted.started_at) = (model, started_at);
        return Ok((converted, version));
    }
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
    let settings = fixed_count::settings(context, &cells, duration, max_output);
    let notes = vec![notes(&version, rate)];
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
        version,
    ))
}

/// How guidellm's rate benchmarks were measured, for the run's notes.
const RATE_NOTES: &str = "Each rate cell is one guidellm benchmark of the `poisson` or `constant` profile: requests \
sent at the offered rate for the benchmark's duration. Each request keeps guidellm's own instants: when it was \
sent (`request_start_time`), when it was due (that less its `request_dispatch_delay`), its first token (after \
`time_to_first_token_ms`), its last (its tokens `inter_token_latency_ms` apart) and its end. guidellm stops the requests \
still running when a benchmark's duration ends and calls them incomplete: here they are failed requests (not \
followed to their end), so a saturated rate is not read from its fast survivors.";

/// A benchmark's profile and offered rate, where it is a rate benchmark (`poisson`,
/// `constant`).
fn rate_of(b: &Value) -> Option<(&str, f64)> {
    let kind = b.pointer("/config/strategy/type_").and_then(Value::as_str)?;
    let rate = b.pointer("/config/strategy/rate").and_then(Value::as_f64)?;
    matches!(kind, "poisson" | "constant").then_some((kind, rate))
}

/// The file's rate benchmarks as rate cells on one clock (seconds from the earliest instant
/// of any), how their traffic was drawn, and the kinds of benchmark left out.
fn rate_run(benchmarks: &[Value], context: u32, at: &str) -> Result<(Vec<RateCell>, RateTraffic, Vec<String>)> {
    let instants = benchmarks.iter().flat_map(|b| {
        let all = ["successful", "errored", "incomplete"]
            .into_iter()
            .flat_map(move |k| b.pointer(&format!("/requests/{k}")).and_then(Value::as_array).into_iter().flatten());
        let due = |r: &Value| {
            let sent = r.get("request_start_time").and_then(Value::as_f64)?;
            Some(sent - r.get("request_dispatch_delay").and_then(Value::as_f64).unwrap_or(0.0))
        };
        all.filter_map(due).chain(b.get("start_time").and_then(Value::as_f64))
    });
    let t0 = instants.fold(f64::INFINITY, f64::min);
    if !t0.is_finite() {
        bail!("{at}benchmarks: no start time in any benchmark");
    }
    let (mut cells, mut left_out, mut kinds) = (Vec::new(), Vec::new(), Vec::new());
    let (mut seed, mut max_in_flight, mut warmup) = (0u64, 1u32, 0.0f64);
    for (i, b) in benchmarks.iter().enumerate() {
        let Some((kind, rate)) = rate_of(b) else {
            let kind = b.pointer("/config/strategy/type_").and_then(Value::as_str).unwrap_or("unnamed");
            left_out.push(kind.to_string());
            continue;
        };
        let at = format!("{at}benchmarks[{i}]");
        if !(rate.is_finite() && rate > 0.0) {
            bail!("{at}.config.strategy.rate: expected requests per second above 0, found {rate}");
        }
        kinds.push(kind.to_string());
        seed = b.pointer("/config/strategy/random_seed").and_then(Value::as_u64).unwrap_or(seed);
        let most = b.pointer("/config/strategy/max_concurrency").and_then(Value::as_u64).unwrap_or(1_000_000);
        max_in_flight = max_in_flight.max(u32::try_from(most).unwrap_or(u32::MAX));
        warmup = warmup.max(b.get("warmup_duration").and_then(Value::as_f64).unwrap_or(0.0));
        let time = |k: &str| b.get(k).and_then(Value::as_f64).map(|t| t - t0);
        let (Some(start), Some(end)) = (time("start_time"), time("end_time")) else {
            bail!("{at}: expected start_time and end_time (epoch seconds)")
        };
        let mut requests = Vec::new();
        for (list, fate) in [("successful", None), ("errored", Some("")), ("incomplete", Some(INCOMPLETE))] {
            for r in b.pointer(&format!("/requests/{list}")).and_then(Value::as_array).into_iter().flatten() {
                requests.push(rate_request(r, t0, fate));
            }
        }
        requests.sort_by(|x, y| x.scheduled_s.total_cmp(&y.scheduled_s));
        let cell = RateCell {
            schema_version: crate::format::SCHEMA_VERSION,
            context,
            rate_rps: rate,
            repetition: 1 + cells.iter().filter(|c: &&RateCell| c.rate_rps == rate).count() as u32,
            status: crate::format::Status::Valid,
            prompt_tokens: None,
            window: crate::format::Window { start_s: start, end_s: end },
            requests,
            error: None,
            reported: None,
        };
        crate::format::rates::validate_rate_cell(&cell).with_context(|| at.clone())?;
        cells.push(cell);
    }
    kinds.dedup();
    let traffic = RateTraffic { arrival: kinds.join("+"), seed, max_in_flight, warmup_s: warmup };
    left_out.dedup();
    Ok((cells, traffic, left_out))
}

const INCOMPLETE: &str = "incomplete: guidellm stopped it when its benchmark's duration ended";

/// One guidellm request on the run's clock; `fate`: `None` completed, `Some("")` errored (its
/// own message), `Some(text)` that text.
fn rate_request(r: &Value, t0: f64, fate: Option<&str>) -> ScheduledRequest {
    // Its top-level figures (the per-request `info`, its instants among them, is not read):
    // sent at `request_start_time`, due `request_dispatch_delay` before, its first token
    // `time_to_first_token_ms` after, its tokens `inter_token_latency_ms` apart, ended at
    // `request_end_time`.
    let number = |k: &str| r.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
    let count = |k: &str| r.get(k).and_then(Value::as_u64);
    let on_clock = |t: Option<f64>| t.map(|t| t - t0).filter(|t| *t >= 0.0);
    let sent = number("request_start_time");
    let first = sent.zip(number("time_to_first_token_ms")).map(|(s, ms)| s + ms / 1000.0);
    let tokens = count("output_tokens").unwrap_or(0);
    let last =
        first.map(|f| f + tokens.saturating_sub(1) as f64 * number("inter_token_latency_ms").unwrap_or(0.0) / 1000.0);
    let error =
        fate.map(|f| if f.is_empty() { "errored (guidellm's request error)".to_string() } else { f.to_string() });
    ScheduledRequest {
        scheduled_s: on_clock(sent.map(|s| s - number("request_dispatch_delay").unwrap_or(0.0))).unwrap_or(0.0),
        send_s: on_clock(sent),
        due_s: None,
        first_token_s: on_clock(first).filter(|_| fate.is_none()),
        last_token_s: on_clock(last).filter(|_| fate.is_none()),
        end_s: on_clock(number("request_end_time")),
        tokens,
        prompt_tokens: count("prompt_tokens").and_then(|p| u32::try_from(p).ok()),
        error,
        cached_tokens: count("cached_tokens"),
        planned: None,
    }
}

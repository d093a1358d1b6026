//! `vllm bench serve` (`--save-result`, with or without `--save-detailed`) and SGLang's
//! `bench_serving` (`--output-file` JSONL, with or without `--output-details`): one result
//! per concurrency, each a cell of a fixed-count run. Both tools write the same kind of
//! summary (`max_concurrency`, `duration`, `output_throughput`, `{median,p90,p99}_{ttft,
//! tpot,itl}_ms`) and the same column-wise per-request lists.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde_json::Value;

use super::converted::Converted;
use super::fixed_count;
use crate::format::{Cell, ReportedFigures, ReportedSample, ToolFigure};

/// Which of the two tools wrote a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServingTool {
    Vllm,
    Sglang,
}

impl ServingTool {
    pub fn name(self) -> &'static str {
        match self {
            ServingTool::Vllm => "vllm bench serve",
            ServingTool::Sglang => "sglang bench_serving",
        }
    }

    /// What the tool's figures mean, in this site's words (the run's notes).
    pub fn method_notes(self) -> &'static str {
        match self {
            ServingTool::Vllm => VLLM_NOTES,
            ServingTool::Sglang => SGLANG_NOTES,
        }
    }
}

const VLLM_NOTES: &str = "## How vllm bench serve measured\n\n\
Each cell is one `vllm bench serve` result: a fixed number of requests (`num_prompts`) sent with at most `max_concurrency` in flight, \
not a fixed window with exactly C streams. Figures are as the tool reported them:\n\n\
- **Total tok/s** is `output_throughput`: all output tokens over the whole benchmark's duration, ramp-up and tail included.\n\
- **TTFT** is `median_ttft_ms` (p90, p99 from `p90_ttft_ms`, `p99_ttft_ms`): the first streamed token, whatever its channel; \
the tool reports no first answer token apart, so a reasoning model's runs have no answer TTFT.\n\
- **Time between tokens** is vLLM's TPOT, `median_tpot_ms`: (latency − TTFT) / (output tokens − 1) per request, our definition. \
vLLM's ITL (every gap between chunks, pooled over requests) is not this figure.\n\
- **Per request tok/s** is 1000 / median TPOT.\n\
- The context is the requests' input length as the server counted it (`input_lens`).\n";

const SGLANG_NOTES: &str = "## How SGLang bench_serving measured\n\n\
Each cell is one `bench_serving` result: a fixed number of requests sent with at most `max_concurrency` in flight, \
not a fixed window with exactly C streams. Figures are as the tool reported them:\n\n\
- **Total tok/s** is `output_throughput`: all output tokens over the whole benchmark's duration, ramp-up and tail included.\n\
- **TTFT** is `median_ttft_ms` (p90, p99 from `p90_ttft_ms`, `p99_ttft_ms`): the first streamed token, whatever its channel; \
the tool reports no first answer token apart, so a reasoning model's runs have no answer TTFT.\n\
- **Time between tokens** is SGLang's TPOT, `median_tpot_ms`: (latency − TTFT) / (output tokens − 1) per request, our definition; \
SGLang's ITL (gaps between chunks, pooled) is not this figure.\n\
- **Per request tok/s** is 1000 / median TPOT.\n\
- **Average active requests** is SGLang's `concurrency`: the mean number of requests in flight it measured, not the limit.\n\
- The context is `random_input_len`, the client's own count of the prompt (the server counts the chat template too).\n";

/// The settings that make results one matrix: results that differ in any become runs of
/// their own.
pub fn setting_key(tool: ServingTool, v: &Value) -> String {
    let keys: &[&str] = match tool {
        // Rate results of one setting are one rate run, whatever their rates.
        ServingTool::Vllm if offered_rate(v).is_some() => &["model_id", "backend", "endpoint_type", "burstiness"],
        ServingTool::Vllm => &["model_id", "backend", "endpoint_type", "request_rate", "num_prompts"],
        ServingTool::Sglang => &["backend", "dataset_name", "random_input_len", "random_output_len", "request_rate"],
    };
    keys.iter().map(|k| format!("{k}={}", v.get(*k).unwrap_or(&Value::Null))).collect::<Vec<_>>().join(" ")
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64).filter(|x| x.is_finite())
}

fn list(v: &Value, key: &str) -> Vec<Value> {
    v.get(key).and_then(Value::as_array).cloned().unwrap_or_default()
}

/// The concurrency of a result: its `max_concurrency`, a positive whole number.
/// `at` says where the result is (`file: line N: `), for errors.
pub fn concurrency(at: &str, v: &Value) -> Result<u32> {
    match v.get("max_concurrency").and_then(Value::as_u64) {
        Some(c) if c > 0 && c <= u32::MAX as u64 => Ok(c as u32),
        _ => bail!(
            "{at}max_concurrency: expected the number of requests in flight (a result without a concurrency limit is not a cell of the matrix)"
        ),
    }
}

/// The input length a result measured: SGLang's requested `random_input_len`, else the
/// median of the successful requests' `input_lens`, else `total_input_tokens / completed`.
pub fn input_len(tool: ServingTool, v: &Value) -> Option<u32> {
    if tool == ServingTool::Sglang {
        if let Some(n) = v.get("random_input_len").and_then(Value::as_u64) {
            return u32::try_from(n).ok();
        }
    }
    let errors = list(v, "errors");
    let mut lens: Vec<u64> = list(v, "input_lens")
        .iter()
        .enumerate()
        .filter(|(i, _)| errors.get(*i).and_then(Value::as_str).is_none_or(str::is_empty))
        .filter_map(|(_, l)| l.as_u64())
        .collect();
    lens.sort_unstable();
    let median = lens.get(lens.len() / 2).copied();
    let mean = num(v, "total_input_tokens")
        .zip(num(v, "completed"))
        .filter(|(_, c)| *c > 0.0)
        .map(|(t, c)| (t / c).round() as u64);
    median.or(mean).and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0)
}

/// Per-request samples from the column-wise lists (`--save-detailed` / `--output-details`).
fn samples(v: &Value) -> Vec<ReportedSample> {
    let (ttfts, latencies, itls, outs, ins, errors) = (
        list(v, "ttfts"),
        list(v, "latencies"),
        list(v, "itls"),
        list(v, "output_lens"),
        list(v, "input_lens"),
        list(v, "errors"),
    );
    (0..ttfts.len())
        .map(|i| {
            let ok = errors.get(i).and_then(Value::as_str).is_none_or(str::is_empty);
            let out = outs.get(i).and_then(Value::as_u64);
            let gaps: f64 =
                itls.get(i).and_then(Value::as_array).map_or(0.0, |g| g.iter().filter_map(Value::as_f64).sum());
            ReportedSample {
                ttft_s: ttfts.get(i).and_then(Value::as_f64).filter(|_| ok),
                latency_s: latencies.get(i).and_then(Value::as_f64).filter(|_| ok),
                tbt_s: out.filter(|n| ok && *n > 1).map(|n| gaps / (n - 1) as f64),
                input_tokens: ins.get(i).and_then(Value::as_u64),
                output_tokens: out,
                completed: Some(ok),
            }
        })
        .collect()
}

/// One result as a decode cell at `context`.
pub fn cell(tool: ServingTool, v: &Value, context: u32, concurrency: u32) -> Cell {
    let failed = list(v, "errors").iter().filter(|e| e.as_str().is_some_and(|s| !s.is_empty())).count();
    let failed = failed.max(v.get("failed").and_then(Value::as_u64).unwrap_or(0) as usize);
    let warnings = fixed_count::warnings(
        tool.name(),
        v.get("completed").and_then(Value::as_u64).unwrap_or(0) + failed as u64,
        concurrency,
        failed as u64,
    );
    let tpot = num(v, "median_tpot_ms");
    let reported = ReportedFigures {
        total_tps: num(v, "output_throughput"),
        per_request_tps: tpot.filter(|t| *t > 0.0).map(|t| 1000.0 / t),
        ttft_ms: num(v, "median_ttft_ms"),
        ttft_p90_ms: num(v, "p90_ttft_ms"),
        ttft_p99_ms: num(v, "p99_ttft_ms"),
        tbt_ms: tpot,
        tbt_p90_ms: num(v, "p90_tpot_ms"),
        tbt_p99_ms: num(v, "p99_tpot_ms"),
        avg_active: if tool == ServingTool::Sglang { num(v, "concurrency") } else { None },
        completed: v.get("completed").and_then(Value::as_u64),
        output_tokens: v.get("total_output_tokens").and_then(Value::as_u64),
        measured_s: num(v, "duration"),
        token_source: Some(format!("{} output_throughput", tool.name())),
        samples: samples(v),
        tool_figures: [
            ToolFigure::of("median_itl_ms", num(v, "median_itl_ms"), "ms"),
            ToolFigure::of("p99_itl_ms", num(v, "p99_itl_ms"), "ms"),
            ToolFigure::of("median_e2el_ms", num(v, "median_e2el_ms"), "ms"),
            ToolFigure::of("median_e2e_latency_ms", num(v, "median_e2e_latency_ms"), "ms"),
            ToolFigure::of("request_throughput", num(v, "request_throughput"), "req/s"),
            ToolFigure::of("max_output_tokens_per_s", num(v, "max_output_tokens_per_s"), "tok/s"),
            ToolFigure::of("accept_length", num(v, "accept_length"), "tokens"),
        ]
        .into_iter()
        .flatten()
        .collect(),
        ..Default::default()
    };
    fixed_count::cell(context, concurrency, warnings, reported)
}

/// Each present figure must be finite and not negative; names the field.
pub fn check(at: &str, v: &Value) -> Result<()> {
    let Some(obj) = v.as_object() else { bail!("{at}expected a JSON object") };
    for (k, x) in obj {
        let figure = k.ends_with("_ms") || k.ends_with("throughput") || k == "duration";
        if figure && !x.is_null() {
            match x.as_f64() {
                Some(f) if f >= 0.0 && f.is_finite() => {}
                _ => bail!("{at}{k}: {x} is not a figure (a number of 0 or more)"),
            }
        }
    }
    Ok(())
}

/// Results grouped by their settings, in file order.
pub fn group(tool: ServingTool, results: Vec<(String, Value)>) -> Vec<Vec<(String, Value)>> {
    let mut groups: BTreeMap<String, (usize, Vec<(String, Value)>)> = BTreeMap::new();
    for (i, (at, v)) in results.into_iter().enumerate() {
        groups.entry(setting_key(tool, &v)).or_insert_with(|| (i, Vec::new())).1.push((at, v));
    }
    let mut out: Vec<(usize, Vec<(String, Value)>)> = groups.into_values().collect();
    out.sort_by_key(|(first, _)| *first);
    out.into_iter().map(|(_, g)| g).collect()
}

/// A result's offered rate, where it is an open-loop rate result: a finite `request_rate`
/// and no `max_concurrency` (vLLM writes `"inf"` for "all at once").
pub fn offered_rate(v: &Value) -> Option<f64> {
    let rate = v.get("request_rate").and_then(Value::as_f64).filter(|r| r.is_finite() && *r > 0.0)?;
    v.get("max_concurrency").is_none_or(Value::is_null).then_some(rate)
}

/// A group of results (one setting) as a run's manifest settings and cells.
pub fn convert_group(tool: ServingTool, group: &[(String, Value)]) -> Result<Converted> {
    if tool == ServingTool::Vllm && group.iter().all(|(_, v)| offered_rate(v).is_some()) {
        return convert_rates(group);
    }
    let mut cells: Vec<Cell> = Vec::new();
    let mut context = None;
    for (at, v) in group {
        check(at, v)?;
        let c = concurrency(at, v)?;
        let ctx = input_len(tool, v).ok_or_else(|| {
            anyhow::anyhow!("{at}no input length (random_input_len, input_lens or total_input_tokens)")
        })?;
        let ctx = *context.get_or_insert(ctx);
        if cells.iter().any(|x| x.concurrency == c) {
            bail!("{at}max_concurrency {c} appears twice in one setting: a cell is imported once");
        }
        cells.push(cell(tool, v, ctx, c));
    }
    let first = &group[0].1;
    let max_output = match tool {
        ServingTool::Sglang => first.get("random_output_len").and_then(Value::as_u64),
        ServingTool::Vllm => None,
    }
    .or_else(|| group.iter().flat_map(|(_, v)| list(v, "output_lens")).filter_map(|x| x.as_u64()).max())
    .unwrap_or(0);
    let duration = group.iter().filter_map(|(_, v)| num(v, "duration")).fold(0.0, f64::max);
    let settings = fixed_count::settings(context.unwrap_or(0), &cells, duration, max_output);
    let model = match tool {
        ServingTool::Vllm => first.get("model_id").and_then(Value::as_str).map(str::to_string),
        ServingTool::Sglang => None,
    };
    // The run started with its earliest result.
    let date = group.iter().filter_map(|(_, v)| v.get("date").and_then(Value::as_str).and_then(vllm_date)).min();
    Ok(Converted {
        settings,
        cells,
        model,
        started_at: date,
        engine: None,
        engine_version: None,
        device: None,
        notes: Vec::new(),
        rates: Vec::new(),
        traffic: None,
    })
}

const VLLM_RATE_NOTES: &str = "Each rate cell is one `vllm bench serve --request-rate` result (`--save-detailed`): \
`num_prompts` requests sent at the rate, Poisson gaps (or gamma, `--burstiness`). Each request is kept on the run's clock \
from the tool's own lists: sent at its `start_times`, due that less its `queue_times`, its first token `ttfts` later, its \
tokens `itls` apart, ended `latencies` after it was sent; `input_lens` and `output_lens` as counted. The window runs from \
the first request due to the last, plus one mean gap. Results written without `--save-detailed` have no requests and are \
refused as rate cells.";

/// `vllm bench serve --request-rate` results as one rate run: a rate cell a result, each on
/// its own stretch of one clock (a result's `start_times` are its own process's).
fn convert_rates(group: &[(String, Value)]) -> Result<Converted> {
    let mut rates: Vec<crate::format::RateCell> = Vec::new();
    let mut offset = 0.0;
    let first = &group[0].1;
    let context = input_len(ServingTool::Vllm, first).unwrap_or(1);
    for (at, v) in group {
        check(at, v)?;
        let rate = offered_rate(v).expect("a rate result");
        let mut cell = rate_cell(at, v, rate, offset)?;
        cell.context = context;
        cell.repetition = 1 + rates.iter().filter(|r| r.rate_rps == rate).count() as u32;
        offset = super::converted::after(&cell);
        rates.push(cell);
    }
    let max_output =
        group.iter().flat_map(|(_, v)| list(v, "output_lens")).filter_map(|x| x.as_u64()).max().unwrap_or(0);
    let burstiness = num(first, "burstiness").unwrap_or(1.0);
    let arrival = if burstiness == 1.0 { "poisson".to_string() } else { format!("gamma:{}", 1.0 / burstiness.sqrt()) };
    let traffic = super::converted::RateTraffic { arrival, seed: 0, max_in_flight: u32::MAX, warmup_s: 0.0 };
    let mut converted = Converted::rate_run(rates, traffic, max_output, vec![VLLM_RATE_NOTES.to_string()]);
    converted.model = first.get("model_id").and_then(Value::as_str).map(str::to_string);
    converted.started_at =
        group.iter().filter_map(|(_, v)| v.get("date").and_then(Value::as_str).and_then(vllm_date)).min();
    Ok(converted)
}

/// One rate result's requests from its per-request lists, from `offset` seconds on.
fn rate_cell(at: &str, v: &Value, rate: f64, offset: f64) -> Result<crate::format::RateCell> {
    let (starts, queues, ttfts, latencies, itls, outs, ins, errors) = (
        list(v, "start_times"),
        list(v, "queue_times"),
        list(v, "ttfts"),
        list(v, "latencies"),
        list(v, "itls"),
        list(v, "output_lens"),
        list(v, "input_lens"),
        list(v, "errors"),
    );
    if starts.is_empty() {
        bail!("{at}start_times: a rate result needs its requests (`vllm bench serve --save-detailed`)");
    }
    let f = |l: &[Value], i: usize| l.get(i).and_then(Value::as_f64).filter(|x| x.is_finite());
    let due = |i: usize| Some(f(&starts, i)? - f(&queues, i).unwrap_or(0.0));
    let t0 = (0..starts.len()).filter_map(due).fold(f64::INFINITY, f64::min);
    if !t0.is_finite() {
        bail!("{at}start_times: expected numbers");
    }
    let on = |t: f64| t - t0 + offset;
    let requests: Vec<crate::format::ScheduledRequest> = (0..starts.len())
        .map(|i| {
            let ok = errors.get(i).and_then(Value::as_str).is_none_or(str::is_empty);
            let send = f(&starts, i);
            let first = send.zip(f(&ttfts, i)).map(|(s, t)| s + t).filter(|_| ok);
            let gaps: f64 =
                itls.get(i).and_then(Value::as_array).map_or(0.0, |g| g.iter().skip(1).filter_map(Value::as_f64).sum());
            crate::format::ScheduledRequest {
                scheduled_s: due(i).map_or(offset, on),
                send_s: send.map(on),
                due_s: None,
                first_token_s: first.map(on),
                last_token_s: first.map(|t| on(t + gaps)),
                end_s: send.zip(f(&latencies, i)).map(|(s, l)| on(s + l)),
                tokens: outs.get(i).and_then(Value::as_u64).unwrap_or(0),
                prompt_tokens: ins.get(i).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()),
                error: (!ok).then(|| errors[i].as_str().unwrap_or("error").chars().take(2000).collect()),
                cached_tokens: None,
                planned: None,
            }
        })
        .collect();
    let last_due = requests.iter().map(|r| r.scheduled_s).fold(offset, f64::max);
    let cell = crate::format::RateCell {
        schema_version: crate::format::SCHEMA_VERSION,
        context: 1,
        rate_rps: rate,
        repetition: 1,
        status: crate::format::Status::Valid,
        prompt_tokens: None,
        window: crate::format::Window { start_s: offset, end_s: last_due + 1.0 / rate },
        requests,
        error: None,
        reported: None,
    };
    crate::format::rates::validate_rate_cell(&cell).map_err(|e| e.context(at.to_string()))?;
    Ok(cell)
}

/// vLLM's `20261202-172552` as `2026-12-02T17:25:52` (the file gives no time zone).
fn vllm_date(s: &str) -> Option<String> {
    let (d, t) = s.split_once('-')?;
    if d.len() != 8 || t.len() != 6 || !(d.chars().chain(t.chars()).all(|c| c.is_ascii_digit())) {
        return None;
    }
    Some(format!("{}-{}-{}T{}:{}:{}", &d[..4], &d[4..6], &d[6..], &t[..2], &t[2..4], &t[4..]))
}

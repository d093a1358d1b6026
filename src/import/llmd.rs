//! llm-d Benchmark Reports, schema v0.2 (YAML; inference-perf writes them natively,
//! llm-d-benchmark converts vllm bench, guidellm and others into them): each report is one
//! load stage, a cell of C concurrent requests at one input length. Reports of one stack and
//! load tool are one run; reports of one input length and concurrency are its repetitions,
//! in stage order. A stage at a request rate (`rate_qps`, no concurrency) is a rate cell of
//! a rate run, its figures as reported. The mapping is in docs/src/reference/import-formats.md.

use anyhow::{bail, Result};
use serde_json::Value;

use super::converted::Converted;
use super::fixed_count;
use crate::format::{Cell, ReportedFigures, RunSettings, ToolFigure};

pub const TOOL_FALLBACK: &str = "llm-d benchmark report";

/// The load tool this site's own exports name (`site export`).
const OUR_TOOL: &str = "site bench";

/// Whether a YAML document is a v0.2 report: its version and its results.
pub fn is_report(v: &Value) -> bool {
    let version =
        v.get("version").and_then(|x| x.as_str().map(str::to_string).or_else(|| x.as_f64().map(|f| f.to_string())));
    version.as_deref() == Some("0.2") && v.pointer("/results").is_some_and(Value::is_object)
}

/// One report read: where it came from, the run it belongs to and its cell.
#[derive(Debug, Clone)]
pub struct Report {
    at: String,
    /// What makes reports one run: the stack and the load tool.
    pub key: String,
    model: Option<String>,
    engine: Option<(String, String)>,
    device: Option<(String, u32)>,
    tool: (String, String),
    started_at: Option<String>,
    stage: u64,
    cell: Stage,
    /// The workload (prefix reuse, turns) of a report this site wrote, from the settings it
    /// keeps in `scenario.load.native.config`: a run exported and imported again ranks and
    /// compares as the workload it measured, not as a plain run.
    workload: crate::format::Workload,
}

/// What one report measured: a matrix cell (C concurrent requests) or a rate cell (requests
/// at a rate), with how its rate's requests arrived.
#[derive(Debug, Clone)]
enum Stage {
    Matrix(Cell),
    Rate(crate::format::RateCell, super::converted::RateTraffic),
}

impl Report {
    pub fn tool(&self) -> (String, String) {
        self.tool.clone()
    }

    fn place(&self) -> (u32, f64) {
        match &self.cell {
            Stage::Matrix(c) => (c.context, f64::from(c.concurrency)),
            Stage::Rate(c, _) => (c.context, c.rate_rps),
        }
    }
}

/// The inference engine of the report's stack (the first one; a disaggregated stack's
/// roles are said in the run's notes).
fn engine_of(v: &Value) -> Option<&Value> {
    v.pointer("/scenario/stack")?
        .as_array()?
        .iter()
        .find(|c| c.pointer("/metadata/kind").and_then(Value::as_str) == Some("inference_engine"))
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(|x| x.as_str().map(str::to_string).or_else(|| x.as_f64().map(|f| f.to_string())))
}

/// Reads one report (`at`: its file, for errors).
pub fn read(at: String, v: &Value) -> Result<Report> {
    let load = v.pointer("/scenario/load/standardized");
    let engine = engine_of(v).and_then(|e| e.get("standardized"));
    let model = text(engine.and_then(|e| e.pointer("/model/name")));
    let engine_tool = engine.and_then(|e| Some((text(e.get("tool"))?, text(e.get("tool_version"))?)));
    let device = engine.and_then(|e| {
        let name = text(e.pointer("/accelerator/model"))?;
        let count = e.pointer("/accelerator/count").and_then(Value::as_u64).unwrap_or(1);
        Some((name, u32::try_from(count.max(1)).unwrap_or(u32::MAX)))
    });
    let tool = (
        text(load.and_then(|l| l.get("tool"))).unwrap_or_else(|| TOOL_FALLBACK.to_string()),
        text(load.and_then(|l| l.get("tool_version"))).unwrap_or_else(|| "unknown".to_string()),
    );
    let context = load
        .and_then(|l| l.pointer("/input_seq_len/value"))
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite() && *x >= 1.0 && *x <= u32::MAX as f64)
        .map(|x| x.round() as u32);
    let Some(context) = context else {
        bail!("{at}scenario.load.standardized.input_seq_len.value: expected a length of 1 or more")
    };
    check_figures(v, &at)?;
    let workload = match tool.0 == OUR_TOOL {
        true => workload_of(v),
        false => crate::format::Workload::default(),
    };
    let cell = match load.and_then(|l| l.get("concurrency")).filter(|c| !c.is_null()) {
        Some(c) => Stage::Matrix(matrix_cell(v, &at, &tool, context, c)?),
        None => rate_stage(v, &at, load, context)?,
    };
    let kind = if matches!(cell, Stage::Rate(..)) { "rate" } else { "matrix" };
    let key = format!("{model:?}|{engine_tool:?}|{device:?}|{tool:?}|{workload:?}|{kind}");
    Ok(Report {
        at,
        key,
        model,
        engine: engine_tool,
        device,
        tool,
        started_at: text(v.pointer("/run/time/start")),
        stage: load.and_then(|l| l.get("stage")).and_then(Value::as_u64).unwrap_or(0),
        cell,
        workload,
    })
}

/// A stage of C concurrent requests: a cell of the matrix, its figures as reported.
fn matrix_cell(v: &Value, at: &str, tool: &(String, String), context: u32, c: &Value) -> Result<Cell> {
    let Some(concurrency) = c.as_f64().filter(|x| x.is_finite() && *x >= 1.0 && x.fract() == 0.0 && *x <= 1e6) else {
        bail!("{at}scenario.load.standardized.concurrency: expected a whole number of concurrent requests")
    };
    let reported = figures(v);
    if reported.total_tps.is_none() {
        bail!("{at}results.request_performance.aggregate.throughput.output_token_rate.mean: expected the output tok/s");
    }
    let aggregate = v.pointer("/results/request_performance/aggregate");
    let requests = aggregate.and_then(|a| a.pointer("/requests/total")).and_then(Value::as_u64).unwrap_or(0);
    let failures = aggregate.and_then(|a| a.pointer("/requests/failures")).and_then(Value::as_u64).unwrap_or(0);
    let c = concurrency as u32;
    // This site's own reports measured a window with C streams kept going: no ramp-up or
    // tail in their tok/s, so the fixed-count warnings do not apply.
    let warnings = if tool.0 == OUR_TOOL { Vec::new() } else { fixed_count::warnings(&tool.0, requests, c, failures) };
    Ok(fixed_count::cell(context, c, warnings, reported))
}

/// A stage at a request rate (`rate_qps`, no concurrency): a rate cell whose figures are the
/// report's. How its requests arrived is this site's `native.args.arrival` where it wrote
/// the report, else unknown; its window is the requests over the rate (the stage's length at
/// that rate) unless the report says `native.args.window_s`.
fn rate_stage(v: &Value, at: &str, load: Option<&Value>, context: u32) -> Result<Stage> {
    let rate = load.and_then(|l| l.get("rate_qps")).filter(|r| !r.is_null());
    let Some(rate) = rate.map(|r| r.as_f64().filter(|x| x.is_finite() && *x > 0.0)) else {
        bail!("{at}scenario.load.standardized: expected a concurrency or a rate_qps (the load of the stage)")
    };
    let Some(rate) = rate else {
        bail!("{at}scenario.load.standardized.rate_qps: expected requests per second above 0")
    };
    let Some(achieved) = stat(v, "throughput/request_rate", "mean") else {
        bail!("{at}results.request_performance.aggregate.throughput.request_rate.mean: expected the requests/s completed at a rate stage")
    };
    let count =
        |f: &str| v.pointer(&format!("/results/request_performance/aggregate/requests/{f}")).and_then(Value::as_u64);
    let Some(requests) = count("total").filter(|t| *t >= 1) else {
        bail!("{at}results.request_performance.aggregate.requests.total: expected the requests sent at the rate")
    };
    let failed = count("failures").unwrap_or(0) + count("incomplete").unwrap_or(0);
    let spread = |block: &str| crate::format::ReportedSpread {
        mean: stat(v, block, "mean"),
        p50: stat(v, block, "p50"),
        p90: stat(v, block, "p90"),
        p99: stat(v, block, "p99"),
    };
    let args = v.pointer("/scenario/load/native/args");
    let arg = |k: &str| args.and_then(|a| a.get(k));
    let window_s = arg("window_s").and_then(Value::as_f64).filter(|w| w.is_finite() && *w > 0.0);
    let cell = crate::format::RateCell {
        schema_version: crate::format::SCHEMA_VERSION,
        context,
        rate_rps: rate,
        repetition: 1,
        status: crate::format::Status::Valid,
        prompt_tokens: None,
        window: crate::format::Window { start_s: 0.0, end_s: window_s.unwrap_or(requests as f64 / rate) },
        requests: Vec::new(),
        error: None,
        reported: Some(crate::format::ReportedRate {
            requests,
            failed: failed.min(requests),
            achieved_rps: achieved,
            output_tps: stat(v, "throughput/output_token_rate", "mean"),
            ttft_ms: spread("latency/time_to_first_token"),
            tbt_ms: spread("latency/time_per_output_token"),
            e2e_ms: spread("latency/request_latency"),
        }),
    };
    let text = |k: &str| arg(k).and_then(Value::as_str).filter(|a| !a.is_empty() && a.len() <= 64);
    let traffic = super::converted::RateTraffic {
        arrival: text("arrival").unwrap_or("unknown").to_string(),
        seed: arg("seed").and_then(Value::as_u64).unwrap_or(0),
        max_in_flight: arg("max_in_flight")
            .and_then(Value::as_u64)
            .map_or(u32::MAX, |m| m.clamp(1, u64::from(u32::MAX)) as u32),
        warmup_s: arg("warmup_s").and_then(Value::as_f64).filter(|w| w.is_finite() && *w >= 0.0).unwrap_or(0.0),
    };
    Ok(Stage::Rate(cell, traffic))
}

/// `prefix_reuse_pct` and `turns` of the settings this site keeps in a report's
/// `scenario.load.native.config`; absent or out of range: none.
fn workload_of(v: &Value) -> crate::format::Workload {
    let config = v.pointer("/scenario/load/native/config");
    let field = |name: &str, max: u64| {
        config.and_then(|c| c.get(name)).and_then(Value::as_u64).filter(|x| *x <= max).map(|x| x as u32)
    };
    crate::format::Workload {
        prefix_reuse_pct: field("prefix_reuse_pct", 100),
        turns: field("turns", 1000).filter(|t| *t >= 1),
    }
}

/// A statistics block's field in the site's unit: milliseconds for times (the report says
/// `ms` or `s`, `ms/token` or `s/token`), tokens per second for rates.
fn stat(v: &Value, block: &str, field: &str) -> Option<f64> {
    let s = v.pointer(&format!("/results/request_performance/aggregate/{block}"))?;
    let scale = match s.get("units").and_then(Value::as_str)? {
        "ms" | "ms/token" | "tokens/s" | "queries/s" | "count" => 1.0,
        "s" | "s/token" => 1000.0,
        _ => return None,
    };
    s.get(field).and_then(Value::as_f64).filter(|x| x.is_finite() && *x >= 0.0).map(|x| x * scale)
}

/// Every figure the report gives is a number the figure can be: a string, a negative or an
/// infinite value is named, not read as an absent figure; failed requests are at most all.
fn check_figures(v: &Value, at: &str) -> Result<()> {
    let aggregate = "/results/request_performance/aggregate";
    for block in ["throughput", "latency"] {
        let Some(stats) = v.pointer(&format!("{aggregate}/{block}")).and_then(Value::as_object) else { continue };
        for (name, stat) in stats {
            let Some(fields) = stat.as_object() else { continue };
            let figure = |f: &str| {
                matches!(f, "mean" | "min" | "max" | "stddev" | "median" | "mode")
                    || f.strip_prefix('p')
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
            };
            for (field, x) in fields.iter().filter(|(f, _)| figure(f)) {
                let ok = x.as_f64().is_some_and(|x| x.is_finite() && x >= 0.0) || x.is_null();
                if !ok {
                    bail!("{at}results.request_performance.aggregate.{block}.{name}.{field}: expected a number from 0 up, found {x}");
                }
            }
        }
    }
    let count = |f: &str| v.pointer(&format!("{aggregate}/requests/{f}")).and_then(Value::as_u64).unwrap_or(0);
    let (total, failed) = (count("total"), count("failures") + count("incomplete"));
    if failed > total && v.pointer(&format!("{aggregate}/requests/total")).is_some() {
        bail!("{at}results.request_performance.aggregate.requests: {failed} failed or incomplete of {total} requests");
    }
    Ok(())
}

/// The report's figures as ours: medians where it gives them (a mean is not a median: kept
/// as the tool's own figure).
fn figures(v: &Value) -> ReportedFigures {
    let tbt = stat(v, "latency/time_per_output_token", "p50");
    let requests =
        |f: &str| v.pointer(&format!("/results/request_performance/aggregate/requests/{f}")).and_then(Value::as_u64);
    let completed = requests("total")
        .map(|t| t.saturating_sub(requests("failures").unwrap_or(0) + requests("incomplete").unwrap_or(0)));
    ReportedFigures {
        total_tps: stat(v, "throughput/output_token_rate", "mean"),
        per_request_tps: tbt.filter(|t| *t > 0.0).map(|t| 1000.0 / t),
        ttft_ms: stat(v, "latency/time_to_first_token", "p50"),
        ttft_p90_ms: stat(v, "latency/time_to_first_token", "p90"),
        ttft_p99_ms: stat(v, "latency/time_to_first_token", "p99"),
        tbt_ms: tbt,
        tbt_p90_ms: stat(v, "latency/time_per_output_token", "p90"),
        tbt_p99_ms: stat(v, "latency/time_per_output_token", "p99"),
        completed,
        token_source: Some("llm-d benchmark report output_token_rate".into()),
        tool_figures: [
            ToolFigure::of("time_to_first_token.mean", stat(v, "latency/time_to_first_token", "mean"), "ms"),
            ToolFigure::of("time_per_output_token.mean", stat(v, "latency/time_per_output_token", "mean"), "ms"),
            ToolFigure::of("inter_token_latency.mean", stat(v, "latency/inter_token_latency", "mean"), "ms"),
            ToolFigure::of("request_latency.mean", stat(v, "latency/request_latency", "mean"), "ms"),
            ToolFigure::of("request_rate.mean", stat(v, "throughput/request_rate", "mean"), "req/s"),
        ]
        .into_iter()
        .flatten()
        .collect(),
        ..Default::default()
    }
}

const NOTES: &str = "## How the reports measured\n\n\
Each cell is one llm-d Benchmark Report (v0.2): a load stage of C concurrent requests at one input length, as the load \
tool ran it. Figures are the report's:\n\n\
- **Total tok/s** is `throughput.output_token_rate.mean`.\n\
- **TTFT** is `latency.time_to_first_token.p50` (p90, p99 from the same block), in the report's units; a report with \
only a mean has no TTFT here (the mean is kept as the tool's own figure). Which token the load tool counted first \
depends on the tool the report names.\n\
- **Time between tokens** is `latency.time_per_output_token.p50`: (latency − TTFT) / (output − 1), our definition; \
`inter_token_latency` is kept as the tool's own figure.\n\
- **Per request tok/s** is 1000 / that median.\n\
- The context is `scenario.load.standardized.input_seq_len.value`.\n";

/// One run's reports (one key) as a run; returns its load tool (name, version).
pub fn convert(mut reports: Vec<Report>) -> Result<(Converted, (String, String))> {
    reports.sort_by(|a, b| {
        (a.place().0, a.place().1, a.stage)
            .partial_cmp(&(b.place().0, b.place().1, b.stage))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let first = &reports[0];
    let mut converted = match &first.cell {
        Stage::Matrix(_) => matrix_run(&reports)?,
        Stage::Rate(_, traffic) => rate_run(&reports, traffic.clone())?,
    };
    converted.model = first.model.clone();
    converted.started_at = reports.iter().filter_map(|r| r.started_at.clone()).min();
    converted.engine = first.engine.as_ref().map(|e| e.0.clone());
    converted.engine_version = first.engine.as_ref().map(|e| e.1.clone());
    converted.device = first.device.clone();
    Ok((converted, first.tool()))
}

/// The repetition each report is of its place (context and concurrency or rate), in stage
/// order.
fn repetitions(reports: &[Report]) -> Result<Vec<u32>> {
    let mut out: Vec<u32> = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        let earlier = reports[..i].iter().filter(|x| x.place() == r.place()).count() as u32;
        if earlier >= crate::format::MAX_REPETITIONS {
            let (ctx, at) = r.place();
            bail!("{}{ctx} x {at}: more than {} reports of one stage", r.at, crate::format::MAX_REPETITIONS);
        }
        out.push(earlier + 1);
    }
    Ok(out)
}

fn matrix_run(reports: &[Report]) -> Result<Converted> {
    let reps = repetitions(reports)?;
    let cells: Vec<Cell> = reports
        .iter()
        .zip(reps)
        .filter_map(|(r, rep)| match &r.cell {
            Stage::Matrix(c) => Some(Cell { repetition: rep, ..c.clone() }),
            Stage::Rate(..) => None,
        })
        .collect();
    let mut contexts: Vec<u32> = cells.iter().map(|c| c.context).collect();
    contexts.sort_unstable();
    contexts.dedup();
    let first = &reports[0];
    let settings = RunSettings {
        contexts,
        prefix_reuse_pct: first.workload.prefix_reuse_pct,
        turns: first.workload.turns,
        ..fixed_count::settings(cells[0].context, &cells, 0.0, 0)
    };
    Ok(Converted {
        settings,
        cells,
        model: None,
        started_at: None,
        engine: None,
        engine_version: None,
        device: None,
        notes: vec![NOTES.to_string()],
        rates: Vec::new(),
        traffic: None,
    })
}

/// Rate stages as a rate run: each stage a rate cell, its window after the one before on the
/// run's clock.
fn rate_run(reports: &[Report], traffic: super::converted::RateTraffic) -> Result<Converted> {
    let reps = repetitions(reports)?;
    let mut at = 0.0;
    let mut rates = Vec::new();
    for (r, rep) in reports.iter().zip(reps) {
        let Stage::Rate(c, _) = &r.cell else { continue };
        let mut cell = crate::format::RateCell { repetition: rep, ..c.clone() };
        super::converted::shift_rate_cell(&mut cell, at);
        at = cell.window.end_s;
        rates.push(cell);
    }
    let mut converted = Converted::rate_run(rates, traffic, 0, vec![RATE_NOTES.to_string()]);
    let mut contexts: Vec<u32> = converted.rates.iter().map(|c| c.context).collect();
    contexts.sort_unstable();
    contexts.dedup();
    converted.settings.contexts = contexts;
    Ok(converted)
}

const RATE_NOTES: &str = "## How the reports measured\n\n\
Each rate cell is one llm-d Benchmark Report (v0.2): a load stage at a request rate \
(`scenario.load.standardized.rate_qps`), as the load tool ran it. Its figures are the report's, not counted from \
requests (a report keeps none): achieved is `throughput.request_rate.mean`, output tok/s \
`throughput.output_token_rate.mean`, TTFT, time between tokens and end-to-end latency the p50, p90 and p99 of \
`time_to_first_token`, `time_per_output_token` and `request_latency`. Without each request, no goodput or capacity \
in requests/s is computed for these cells, and saturation is judged on achieved against offered alone.\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn report(concurrency: &str, ttft_units: &str) -> Value {
        crate::format::yaml::parse(
            std::path::Path::new("r.yaml"),
            &format!(
                "version: '0.2'\nrun: {{uid: a}}\nscenario:\n  load:\n    standardized: {{tool: inference-perf, tool_version: 0.7.0, source: random, stage: 2, input_seq_len: {{distribution: fixed, value: 1024}}, concurrency: {concurrency}}}\nresults:\n  request_performance:\n    aggregate:\n      requests: {{total: 40, failures: 2}}\n      latency:\n        time_to_first_token: {{units: {ttft_units}, mean: 0.05, p50: 0.04, p90: 0.09}}\n        time_per_output_token: {{units: s/token, mean: 0.011, p50: 0.01}}\n      throughput:\n        output_token_rate: {{units: tokens/s, mean: 812.5}}\n"
            ),
        )
        .unwrap()
    }

    #[test]
    fn a_stage_becomes_a_cell_in_our_units() {
        let v = report("8", "s");
        assert!(is_report(&v));
        let r = read("r.yaml: ".into(), &v).unwrap();
        let Stage::Matrix(cell) = &r.cell else { panic!("a matrix cell") };
        let f = cell.reported.as_ref().unwrap();
        assert_eq!((cell.context, cell.concurrency), (1024, 8));
        assert_eq!(
            (f.total_tps, f.ttft_ms, f.ttft_p90_ms, f.tbt_ms),
            (Some(812.5), Some(40.0), Some(90.0), Some(10.0))
        );
        assert_eq!((f.per_request_tps, f.completed), (Some(100.0), Some(38)));
        assert!(f.tool_figures.iter().any(|t| t.name == "time_to_first_token.mean" && t.value == 50.0));
    }

    #[test]
    fn hostile_values_are_refused_or_left_out_never_taken() {
        let with = |from: &str, to: &str| {
            let text = serde_json::to_string(&report("8", "s")).unwrap().replace(from, to);
            serde_json::from_str::<Value>(&text).unwrap()
        };
        // A length of no prompt, or beyond any: refused by name.
        for value in ["0", "-5", "1e30"] {
            let e = read("r.yaml: ".into(), &with("\"value\":1024", &format!("\"value\":{value}"))).unwrap_err();
            assert!(e.to_string().contains("input_seq_len.value: expected a length"), "{value}: {e}");
        }
        // A fractional or absurd concurrency: refused.
        for c in ["2.5", "0", "1e9"] {
            let e = read("r.yaml: ".into(), &with("\"concurrency\":8", &format!("\"concurrency\":{c}"))).unwrap_err();
            assert!(e.to_string().contains("concurrency: expected a whole number"), "{c}: {e}");
        }
        // A negative latency is no latency: refused by name, never a cell without it.
        let e = read("r.yaml: ".into(), &with("\"p50\":0.04", "\"p50\":-0.04")).unwrap_err();
        assert!(e.to_string().contains("time_to_first_token.p50: expected a number from 0 up"), "{e}");
        // A throughput of another unit is none.
        let e = read("r.yaml: ".into(), &with("\"units\":\"tokens/s\"", "\"units\":\"parsecs\"")).unwrap_err();
        assert!(e.to_string().contains("output_token_rate.mean: expected the output tok/s"), "{e}");
    }

    #[test]
    fn an_unbounded_concurrency_or_unknown_units_are_not_taken_as_figures() {
        let e = read("r.yaml: ".into(), &report(".inf", "s")).unwrap_err().to_string();
        assert!(e.contains("concurrency: expected a whole number"), "{e}");
        let r = read("r.yaml: ".into(), &report("4", "fortnights")).unwrap();
        let Stage::Matrix(cell) = &r.cell else { panic!("a matrix cell") };
        assert_eq!(cell.reported.as_ref().unwrap().ttft_ms, None);
    }

    #[test]
    fn a_stage_at_a_rate_is_a_rate_cell_of_the_reports_figures() {
        let text = serde_json::to_string(&report("null", "s")).unwrap();
        let with_rate = text.replace("\"concurrency\":null", "\"rate_qps\":2.5").replace(
            "\"output_token_rate\":{",
            "\"request_rate\":{\"units\":\"queries/s\",\"mean\":2.25},\"output_token_rate\":{",
        );
        let r = read("r.yaml: ".into(), &serde_json::from_str(&with_rate).unwrap()).unwrap();
        let Stage::Rate(cell, traffic) = &r.cell else { panic!("a rate cell") };
        assert_eq!((cell.context, cell.rate_rps, cell.requests.len()), (1024, 2.5, 0));
        // 40 requests at 2.5 a second: a 16 s stage.
        assert_eq!(cell.window.end_s - cell.window.start_s, 16.0);
        let f = cell.reported.as_ref().unwrap();
        assert_eq!((f.requests, f.failed, f.achieved_rps), (40, 2, 2.25));
        assert_eq!((f.ttft_ms.p50, f.ttft_ms.mean), (Some(40.0), Some(50.0)));
        assert_eq!(traffic.arrival, "unknown");
        // Neither a concurrency nor a rate: the load is named.
        let neither = text.replace("\"concurrency\":null,", "");
        let e = read("r.yaml: ".into(), &serde_json::from_str(&neither).unwrap()).unwrap_err();
        assert!(e.to_string().contains("expected a concurrency or a rate_qps"), "{e}");
    }
}

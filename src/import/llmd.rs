//! llm-d Benchmark Reports, schema v0.2 (YAML; inference-perf writes them natively,
//! llm-d-benchmark converts vllm bench, guidellm and others into them): each report is one
//! load stage, a cell of C concurrent requests at one input length. Reports of one stack and
//! load tool are one run; reports of one input length and concurrency are its repetitions,
//! in stage order. The mapping is in docs/src/reference/import-formats.md.

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
    cell: Cell,
    /// The workload (prefix reuse, turns) of a report this site wrote, from the settings it
    /// keeps in `scenario.load.native.config`: a run exported and imported again ranks and
    /// compares as the workload it measured, not as a plain run.
    workload: crate::format::Workload,
}

impl Report {
    pub fn tool(&self) -> (String, String) {
        self.tool.clone()
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
    let concurrency = match load.and_then(|l| l.get("concurrency")) {
        Some(c) => c.as_f64().filter(|x| x.is_finite() && *x >= 1.0 && x.fract() == 0.0 && *x <= 1e6),
        None => None,
    };
    let Some(concurrency) = concurrency else {
        bail!(
            "{at}scenario.load.standardized.concurrency: expected a whole number of concurrent requests (a stage at a request rate with unbounded concurrency is not a cell of the matrix)"
        )
    };
    check_figures(v, &at)?;
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
    let workload = match tool.0 == OUR_TOOL {
        true => workload_of(v),
        false => crate::format::Workload::default(),
    };
    let key = format!("{model:?}|{engine_tool:?}|{device:?}|{tool:?}|{workload:?}");
    Ok(Report {
        at,
        key,
        model,
        engine: engine_tool,
        device,
        tool,
        started_at: text(v.pointer("/run/time/start")),
        stage: load.and_then(|l| l.get("stage")).and_then(Value::as_u64).unwrap_or(0),
        cell: fixed_count::cell(context, c, warnings, reported),
        workload,
    })
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
            ToolFigure::of("requests_rate.mean", stat(v, "throughput/requests_rate", "mean"), "req/s"),
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
    reports.sort_by_key(|r| (r.cell.context, r.cell.concurrency, r.stage));
    let mut cells: Vec<Cell> = Vec::new();
    for r in &reports {
        let (ctx, c) = (r.cell.context, r.cell.concurrency);
        let earlier = cells.iter().filter(|x| x.context == ctx && x.concurrency == c).count() as u32;
        if earlier >= crate::format::MAX_REPETITIONS {
            bail!("{}{ctx} x {c}: more than {} reports of one stage", r.at, crate::format::MAX_REPETITIONS);
        }
        let mut cell = r.cell.clone();
        cell.repetition = earlier + 1;
        cells.push(cell);
    }
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
    let converted = Converted {
        settings,
        cells,
        model: first.model.clone(),
        started_at: reports.iter().filter_map(|r| r.started_at.clone()).min(),
        engine: first.engine.as_ref().map(|e| e.0.clone()),
        engine_version: first.engine.as_ref().map(|e| e.1.clone()),
        device: first.device.clone(),
        notes: vec![NOTES.to_string()],
        rates: Vec::new(),
        traffic: None,
    };
    Ok((converted, first.tool()))
}

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
        let f = r.cell.reported.as_ref().unwrap();
        assert_eq!((r.cell.context, r.cell.concurrency), (1024, 8));
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
    fn a_rate_stage_or_unknown_units_are_not_taken_as_cells() {
        let e = read("r.yaml: ".into(), &report(".inf", "s")).unwrap_err().to_string();
        assert!(e.contains("concurrency: expected a whole number"), "{e}");
        let r = read("r.yaml: ".into(), &report("4", "fortnights")).unwrap();
        assert_eq!(r.cell.reported.as_ref().unwrap().ttft_ms, None);
    }
}

//! A run as llm-d Benchmark Reports, schema v0.2 (the exchange format inference-perf writes
//! natively, llm-d-benchmark converts other tools' results into and llm-d Prism reads): one
//! report per measured repetition of a valid decode cell, as a load stage of C concurrent
//! streams, and of a valid rate cell, as a stage at its rate (`rate_qps`; the arrival process,
//! which the standard part has no field for, in `load.native.args` and the description). The types below are the part of the schema this site fills, with its names,
//! units and required fields (`llm-d-benchmark/benchmark_report/schema_v0_2.py`); what a
//! cell does not measure is left out, never guessed (an imported cell's TTFT median is no
//! mean, so its latency block is absent).

use serde::Serialize;

use crate::analysis::evidence::{CellDetail, Distribution};
use crate::analysis::rates::{RateView, Spread3};
use crate::analysis::RunView;
use crate::format::{Phase, Status};
use crate::units::InputHash;

/// The schema's version string.
pub const VERSION: &str = "0.2";

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    version: &'static str,
    run: ReportRun,
    scenario: Scenario,
    results: Results,
}

#[derive(Debug, Clone, Serialize)]
struct ReportRun {
    uid: String,
    eid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    time: Option<RunTime>,
}

#[derive(Debug, Clone, Serialize)]
struct RunTime {
    #[serde(skip_serializing_if = "Option::is_none")]
    start: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
struct Scenario {
    stack: Vec<Component>,
    load: Load,
}

#[derive(Debug, Clone, Serialize)]
struct Component {
    metadata: ComponentMetadata,
    standardized: InferenceEngine,
    native: Native,
}

#[derive(Debug, Clone, Serialize)]
struct ComponentMetadata {
    kind: &'static str,
    schema_version: &'static str,
    label: String,
    cfg_id: String,
}

#[derive(Debug, Clone, Serialize)]
struct InferenceEngine {
    tool: String,
    tool_version: String,
    role: &'static str,
    model: ModelName,
    accelerator: Accelerator,
}

#[derive(Debug, Clone, Serialize)]
struct ModelName {
    name: String,
}

#[derive(Debug, Clone, Serialize)]
struct Accelerator {
    model: String,
    count: u32,
    parallelism: Parallelism,
}

/// Not recorded by a run: the schema's defaults (1 each).
#[derive(Debug, Clone, Serialize)]
struct Parallelism {
    dp: u32,
    ep: u32,
    pp: u32,
    tp: u32,
}

#[derive(Debug, Clone, Default, Serialize)]
struct Native {
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize)]
struct Load {
    metadata: LoadMetadata,
    standardized: LoadStandardized,
    native: Native,
}

#[derive(Debug, Clone, Serialize)]
struct LoadMetadata {
    schema_version: &'static str,
    cfg_id: String,
    description: String,
}

#[derive(Debug, Clone, Serialize)]
struct LoadStandardized {
    tool: String,
    tool_version: String,
    source: &'static str,
    stage: u32,
    input_seq_len: SequenceLength,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_qps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
struct SequenceLength {
    distribution: &'static str,
    value: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    std_dev: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
struct Results {
    request_performance: RequestPerformance,
}

#[derive(Debug, Clone, Serialize)]
struct RequestPerformance {
    aggregate: Aggregate,
}

#[derive(Debug, Clone, Serialize)]
struct Aggregate {
    #[serde(skip_serializing_if = "Option::is_none")]
    requests: Option<Requests>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency: Option<Latency>,
    throughput: Throughput,
}

#[derive(Debug, Clone, Serialize)]
struct Requests {
    total: u64,
    failures: u64,
    incomplete: u64,
}

#[derive(Debug, Clone, Serialize)]
struct Latency {
    #[serde(skip_serializing_if = "Option::is_none")]
    time_to_first_token: Option<Statistics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_per_output_token: Option<Statistics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_latency: Option<Statistics>,
}

#[derive(Debug, Clone, Serialize)]
struct Throughput {
    output_token_rate: Statistics,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_rate: Option<Statistics>,
}

/// The schema's statistics block: units and mean required, the rest where known.
#[derive(Debug, Clone, Serialize)]
struct Statistics {
    units: &'static str,
    mean: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p90: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p99: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<f64>,
}

impl Statistics {
    fn of(d: &Distribution, units: &'static str) -> Statistics {
        Statistics { units, mean: d.mean, min: Some(d.min), p50: Some(d.p50), p90: d.p90, p99: d.p99, max: Some(d.max) }
    }

    /// A rate cell's percentiles, where its mean is known (the schema requires one).
    fn of_spread(s: &Spread3, units: &'static str) -> Option<Statistics> {
        Some(Statistics { units, mean: s.mean?, min: None, p50: s.p50, p90: s.p90, p99: s.p99, max: None })
    }

    fn mean(mean: f64, units: &'static str) -> Statistics {
        Statistics { units, mean, min: None, p50: None, p90: None, p99: None, max: None }
    }
}

/// Every report of `run`: (file name, report), one per repetition of each valid decode cell
/// with a total tok/s, in the order of `details` (the run's cells as loaded), then one per
/// repetition of each valid rate cell, in the run's order.
pub fn reports(run: &RunView, details: &[CellDetail]) -> Vec<(String, Report)> {
    let engine = engine_component(run);
    let decode = details.iter().filter(|d| d.cell.phase == Phase::Decode && d.cell.status == Status::Valid).map(|d| {
        (format!("br-decode-{}-c{}-r{}.yaml", d.cell.context, d.cell.concurrency, d.cell.repetition.max(1)), d)
    });
    let mut out: Vec<(String, Report)> = Vec::new();
    for (name, d) in decode {
        if let Some(report) = cell_report(run, &engine, d, out.len() as u32) {
            out.push((name, report));
        }
    }
    for r in run.rates.iter().filter(|r| r.figures.is_some()) {
        let report = rate_report(run, &engine, r, out.len() as u32);
        out.push((format!("br-rate-{}-{}rps-r{}.yaml", r.context, rate_name(r.rate_rps), r.repetition.max(1)), report));
    }
    out
}

/// A rate as a file name's part: `0.5`, `12`.
fn rate_name(rps: f64) -> String {
    let s = format!("{rps:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn engine_component(run: &RunView) -> Component {
    let m = &run.manifest;
    let mut h = InputHash::default();
    h.json(&(&m.model.id, &m.hardware, &m.engine, &m.launch_command));
    Component {
        metadata: ComponentMetadata {
            kind: "inference_engine",
            schema_version: "0.0.1",
            label: format!("{}-0", m.engine.name),
            cfg_id: format!("{:016x}", h.finish()),
        },
        standardized: InferenceEngine {
            tool: m.engine.name.clone(),
            tool_version: m.engine.version.clone(),
            role: "replica",
            model: ModelName { name: m.model.id.clone() },
            accelerator: Accelerator {
                model: m.hardware.device.clone(),
                count: m.hardware.count.max(1),
                parallelism: Parallelism { dp: 1, ep: 1, pp: 1, tp: 1 },
            },
        },
        native: Native {
            args: m.launch_command.as_ref().map(|c| serde_json::json!({ "launch_command": c })),
            config: None,
        },
    }
}

fn cell_report(run: &RunView, engine: &Component, d: &CellDetail, stage: u32) -> Option<Report> {
    let m = &run.manifest;
    let c = &d.cell;
    // A measured repetition's own figures; an imported cell's as the run's view has them.
    let view = || run.decode.iter().find(|v| v.context == c.context && v.concurrency == c.concurrency);
    let total_tps = d.figures.as_ref().map_or_else(|| view()?.figures.total_tps, |f| f.total_tps)?;
    let e = d.evidence.as_ref();
    let latency = e.map(|e| Latency {
        time_to_first_token: e.ttft_ms.as_ref().map(|t| Statistics::of(t, "ms")),
        time_per_output_token: e.tbt_ms.as_ref().map(|t| Statistics::of(t, "ms/token")),
        request_latency: None,
    });
    let requests = e.map(|e| Requests {
        total: e.requests as u64,
        failures: e.outcomes.error as u64,
        incomplete: e.outcomes.cancelled as u64,
    });
    let mut load_hash = InputHash::default();
    load_hash.json(&(&m.settings, c.context, c.concurrency));
    let load = Load {
        metadata: LoadMetadata {
            schema_version: "0.0.1",
            cfg_id: format!("{:016x}", load_hash.finish()),
            description: format!(
                "{} streams of a prompt the server counted as {} tokens{}, each kept going for a {} s window (repetition {})",
                c.concurrency,
                c.prompt_tokens.unwrap_or(c.context),
                workload_words(&m.settings.workload()),
                m.settings.duration_s,
                c.repetition.max(1)
            ),
        },
        standardized: LoadStandardized {
            tool: m.bench_tool.name.clone(),
            tool_version: m.bench_tool.version.clone(),
            source: "random",
            stage,
            // The context asked for (the cell's name); the tokens the server counted are in
            // the description.
            input_seq_len: SequenceLength { distribution: "fixed", value: c.context.max(1), std_dev: None },
            rate_qps: None,
            concurrency: Some(c.concurrency.max(1)),
        },
        native: Native { args: None, config: serde_json::to_value(&m.settings).ok() },
    };
    let uid = format!("{}/decode-{}-c{}-r{}", run.id, c.context, c.concurrency, c.repetition.max(1));
    let throughput = Throughput { output_token_rate: Statistics::mean(total_tps, "tokens/s"), request_rate: None };
    Some(report(run, engine, uid, load, Aggregate { requests, latency, throughput }))
}

/// A report of one stage: the run's ids and times, the engine, the stage's load and figures.
fn report(run: &RunView, engine: &Component, uid: String, load: Load, aggregate: Aggregate) -> Report {
    let m = &run.manifest;
    let time = (m.started_at.is_some() || m.finished_at.is_some())
        .then(|| RunTime { start: m.started_at.clone(), end: m.finished_at.clone() });
    Report {
        version: VERSION,
        run: ReportRun { uid, eid: run.id.clone(), time },
        scenario: Scenario { stack: vec![engine.clone()], load },
        results: Results { request_performance: RequestPerformance { aggregate } },
    }
}

/// One repetition of a rate cell as a stage at its rate: the offered rate as `rate_qps`, no
/// concurrency (the loop is open), the completed rate as `request_rate`; the arrival process,
/// seed, in-flight bound, warm-up and window in `load.native.args` (read back by import).
fn rate_report(run: &RunView, engine: &Component, r: &RateView, stage: u32) -> Report {
    let m = &run.manifest;
    let f = r.figures.as_ref().expect("a rate cell with figures");
    let traffic = m.traffic.as_ref();
    let arrival = traffic.map_or("unknown", |t| t.arrival.as_str());
    let drawn = traffic.and_then(|t| t.input_tokens.as_deref()).and_then(|d| d.split_once(':'));
    let input_seq_len = match (drawn, traffic.and_then(|t| t.trace.as_ref())) {
        (Some((mean, sd)), _) => SequenceLength {
            distribution: "gaussian",
            value: mean.parse().unwrap_or(r.context).max(1),
            std_dev: sd.parse().ok(),
        },
        (None, Some(_)) => SequenceLength { distribution: "other", value: r.context.max(1), std_dev: None },
        (None, None) => SequenceLength { distribution: "fixed", value: r.context.max(1), std_dev: None },
    };
    let mut load_hash = InputHash::default();
    load_hash.json(&(&m.settings, traffic, r.context, r.rate_rps.to_bits()));
    let args = serde_json::json!({
        "arrival": arrival,
        "seed": traffic.map(|t| t.seed),
        "max_in_flight": traffic.map(|t| t.max_in_flight),
        "warmup_s": traffic.map(|t| t.warmup_s),
        "window_s": f.window_s,
    });
    let load = Load {
        metadata: LoadMetadata {
            schema_version: "0.0.1",
            cfg_id: format!("{:016x}", load_hash.finish()),
            description: format!(
                "Requests sent open-loop at {} per second ({} arrivals), each at its scheduled instant whether or not earlier ones had ended, counted over a {:.0} s window (repetition {})",
                rate_name(r.rate_rps),
                arrival,
                f.window_s,
                r.repetition.max(1)
            ),
        },
        standardized: LoadStandardized {
            tool: m.bench_tool.name.clone(),
            tool_version: m.bench_tool.version.clone(),
            source: "random",
            stage,
            input_seq_len,
            rate_qps: Some(r.rate_rps),
            concurrency: None,
        },
        native: Native { args: Some(args), config: traffic.and_then(|t| serde_json::to_value(t).ok()) },
    };
    let latency = Latency {
        time_to_first_token: Statistics::of_spread(&f.ttft_ms, "ms"),
        time_per_output_token: Statistics::of_spread(&f.tbt_ms, "ms/token"),
        request_latency: Statistics::of_spread(&f.e2e_ms, "ms"),
    };
    let has_latency = latency.time_to_first_token.is_some() || latency.request_latency.is_some();
    let uid = format!("{}/rate-{}-{}-r{}", run.id, r.context, rate_name(r.rate_rps), r.repetition.max(1));
    let aggregate = Aggregate {
        requests: Some(Requests {
            total: f.scheduled as u64,
            failures: f.failed as u64,
            incomplete: f.not_sent as u64,
        }),
        latency: has_latency.then_some(latency),
        throughput: Throughput {
            output_token_rate: Statistics::mean(f.output_tps, "tokens/s"),
            request_rate: Some(Statistics::mean(f.achieved_rps, "queries/s")),
        },
    };
    report(run, engine, uid, load, aggregate)
}

/// A report as the YAML file it is written to.
pub fn to_yaml(report: &Report) -> anyhow::Result<String> {
    serde_saphyr::to_string(report).map_err(|e| anyhow::anyhow!("writing a benchmark report: {e}"))
}

/// A workload other than one prompt a stream, in the load's description (the settings that
/// say it exactly are in `native.config`).
fn workload_words(w: &crate::format::Workload) -> String {
    let reuse =
        w.prefix_reuse_pct.map(|p| format!(", {p}% of it shared with the cell's other requests (prefix reuse)"));
    let turns = w.turns.map(|t| format!(", each stream a conversation of {t} turns"));
    reuse.unwrap_or_default() + &turns.unwrap_or_default()
}

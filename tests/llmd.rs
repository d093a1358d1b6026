//! llm-d Benchmark Report v0.2 both ways: `site export RUN --format llmd-br-0.2` writes
//! reports that the schema accepts (checked against a strict copy of the fields, types,
//! units and bounds it requires, written from llm-d-benchmark's
//! `benchmark_report/schema_v0_2.py` and `schema_v0_2_components.py`), and `site import`
//! reads them back into the same cells.
#![cfg(feature = "simulator")]
// The schema mirror names every field the schema allows, read or not: deny_unknown_fields
// then refuses any other.
#![allow(dead_code)]

mod common;

use std::fs;
use std::path::Path;

use common::sim::{bench, SimArgs};
use common::*;
use serde::Deserialize;

/// The schema's units lists (`base.py`).
const UNITS_TIME: &[&str] = &["ms", "s"];
const UNITS_GEN_LATENCY: &[&str] = &["ms/token", "s/token"];
const UNITS_GEN_THROUGHPUT: &[&str] = &["tokens/s"];
const UNITS_REQUEST_THROUGHPUT: &[&str] = &["queries/s"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    version: String,
    run: Run,
    scenario: Option<Scenario>,
    results: Results,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Run {
    uid: Option<String>,
    eid: Option<String>,
    cid: Option<String>,
    time: Option<RunTime>,
    user: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunTime {
    start: Option<String>,
    end: Option<String>,
    duration: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    stack: Option<Vec<Component>>,
    load: Option<Load>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Component {
    metadata: ComponentMetadata,
    standardized: InferenceEngine,
    native: Native,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ComponentMetadata {
    kind: String,
    schema_version: Option<String>,
    label: String,
    cfg_id: String,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InferenceEngine {
    tool: String,
    tool_version: String,
    role: String,
    model: EngineModel,
    accelerator: Accelerator,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EngineModel {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Accelerator {
    model: String,
    count: i64,
    parallelism: Parallelism,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Parallelism {
    dp: Option<i64>,
    ep: Option<i64>,
    pp: Option<i64>,
    tp: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Native {
    args: Option<serde_json::Map<String, serde_json::Value>>,
    envars: Option<serde_json::Map<String, serde_json::Value>>,
    config: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Load {
    metadata: LoadMetadata,
    standardized: LoadStandardized,
    native: Native,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadMetadata {
    schema_version: Option<String>,
    cfg_id: Option<String>,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadStandardized {
    tool: String,
    tool_version: String,
    source: String,
    stage: Option<i64>,
    input_seq_len: SequenceLength,
    output_seq_len: Option<SequenceLength>,
    prefix: Option<serde_json::Value>,
    multi_turn: Option<serde_json::Value>,
    rate_qps: Option<f64>,
    concurrency: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SequenceLength {
    distribution: String,
    value: f64,
    std_dev: Option<f64>,
    min: Option<i64>,
    max: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Results {
    request_performance: Option<RequestPerformance>,
    observability: Option<serde_json::Value>,
    profiling: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestPerformance {
    aggregate: Option<Aggregate>,
    time_series: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Aggregate {
    requests: Option<Requests>,
    latency: Option<Latency>,
    throughput: Option<Throughput>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Requests {
    total: i64,
    failures: Option<i64>,
    incomplete: Option<i64>,
    input_length: Option<Statistics>,
    output_length: Option<Statistics>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Latency {
    time_to_first_token: Option<Statistics>,
    normalized_time_per_output_token: Option<Statistics>,
    time_per_output_token: Option<Statistics>,
    inter_token_latency: Option<Statistics>,
    request_latency: Option<Statistics>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Throughput {
    input_token_rate: Option<Statistics>,
    output_token_rate: Option<Statistics>,
    total_token_rate: Option<Statistics>,
    request_rate: Option<Statistics>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Statistics {
    units: String,
    mean: f64,
    mode: Option<f64>,
    stddev: Option<f64>,
    min: Option<f64>,
    p0p1: Option<f64>,
    p1: Option<f64>,
    p5: Option<f64>,
    p10: Option<f64>,
    p25: Option<f64>,
    p50: Option<f64>,
    p75: Option<f64>,
    p90: Option<f64>,
    p95: Option<f64>,
    p99: Option<f64>,
    p99p9: Option<f64>,
    max: Option<f64>,
}

fn units(s: &Statistics, allowed: &[&str], what: &str) {
    assert!(allowed.contains(&s.units.as_str()), "{what}: units {:?} not in {allowed:?}", s.units);
    assert!(s.mean.is_finite() && s.stddev.is_none_or(|d| d >= 0.0), "{what}");
    let ordered = [s.min, s.p50, s.p90, s.p99, s.max].into_iter().flatten().collect::<Vec<f64>>();
    assert!(ordered.windows(2).all(|w| w[0] <= w[1]), "{what}: percentiles out of order {ordered:?}");
}

/// The bounds and enumerations the schema's validators check.
fn check(r: &Report, file: &str) -> (u32, u32) {
    assert_eq!(r.version, "0.2", "{file}");
    assert!(r.run.uid.as_deref().is_some_and(|u| !u.is_empty()) && r.run.eid.is_some(), "{file}");
    assert!(r.run.cid.is_none() && r.run.user.is_none() && r.run.time.as_ref().is_none_or(|t| t.duration.is_none()));
    let scenario = r.scenario.as_ref().expect("a scenario");
    let stack = scenario.stack.as_ref().expect("a stack");
    assert_eq!(stack.len(), 1, "{file}");
    let engine = &stack[0];
    assert_eq!(engine.metadata.kind, "inference_engine");
    assert!(!engine.metadata.label.is_empty() && !engine.metadata.cfg_id.is_empty());
    assert!(engine.metadata.description.is_none() && engine.metadata.schema_version.as_deref() == Some("0.0.1"));
    let e = &engine.standardized;
    assert!(!e.tool.is_empty() && !e.tool_version.is_empty() && !e.model.name.is_empty());
    assert!(["replica", "prefill", "decode"].contains(&e.role.as_str()), "{file}: role {}", e.role);
    assert!(e.accelerator.count >= 1 && !e.accelerator.model.is_empty());
    let p = &e.accelerator.parallelism;
    assert!([p.dp, p.ep, p.pp, p.tp].iter().all(|x| x.is_none_or(|x| x >= 1)));
    assert!(engine.native.envars.is_none() && engine.native.config.is_none() && engine.native.args.is_none());
    let load = scenario.load.as_ref().expect("a load");
    let l = &load.standardized;
    assert!(load.metadata.cfg_id.is_some() && load.metadata.description.is_some());
    assert!(["random", "sampled"].contains(&l.source.as_str()), "{file}: source {}", l.source);
    assert!(l.stage.is_some_and(|s| s >= 0));
    assert!(["fixed", "gaussian", "random", "uniform", "other"].contains(&l.input_seq_len.distribution.as_str()));
    assert!(l.input_seq_len.value >= 1.0 && l.input_seq_len.std_dev.is_none());
    assert!(l.input_seq_len.min.is_none() && l.input_seq_len.max.is_none());
    assert!(l.output_seq_len.is_none() && l.prefix.is_none() && l.multi_turn.is_none() && l.rate_qps.is_none());
    let concurrency = l.concurrency.expect("a concurrency");
    assert!(concurrency >= 1);
    assert!(load.native.config.is_some() && load.native.args.is_none() && load.native.envars.is_none());
    let perf = r.results.request_performance.as_ref().expect("request performance");
    assert!(r.results.observability.is_none() && r.results.profiling.is_none() && perf.time_series.is_none());
    let agg = perf.aggregate.as_ref().expect("an aggregate");
    let requests = agg.requests.as_ref().expect("requests");
    assert!(
        requests.total >= 1 && requests.failures.is_some_and(|f| f >= 0) && requests.incomplete.is_some_and(|i| i >= 0)
    );
    assert!(requests.input_length.is_none() && requests.output_length.is_none());
    let lat = agg.latency.as_ref().expect("latency");
    units(lat.time_to_first_token.as_ref().expect("TTFT"), UNITS_TIME, "time_to_first_token");
    units(lat.time_per_output_token.as_ref().expect("TPOT"), UNITS_GEN_LATENCY, "time_per_output_token");
    assert!(lat.normalized_time_per_output_token.is_none() && lat.inter_token_latency.is_none());
    assert!(lat.request_latency.is_none());
    let tp = agg.throughput.as_ref().expect("throughput");
    let out = tp.output_token_rate.as_ref().expect("output token rate");
    units(out, UNITS_GEN_THROUGHPUT, "output_token_rate");
    assert!(out.mean > 0.0);
    assert!(tp.input_token_rate.is_none() && tp.total_token_rate.is_none() && tp.request_rate.is_none());
    (l.input_seq_len.value as u32, concurrency as u32)
}

/// A rate stage's report: the rate asked as `rate_qps` and no concurrency (an open loop), the
/// completed rate in queries/s, the arrival process in the load's native arguments; returns
/// (context, rate, achieved).
fn check_rate(r: &Report, file: &str) -> (u32, f64, f64) {
    assert_eq!(r.version, "0.2", "{file}");
    let load = r.scenario.as_ref().and_then(|s| s.load.as_ref()).expect("a load");
    let l = &load.standardized;
    assert!(l.concurrency.is_none(), "{file}: an open loop has no concurrency");
    let rate = l.rate_qps.expect("rate_qps");
    assert!(rate > 0.0, "{file}");
    assert_eq!(l.input_seq_len.distribution, "fixed", "{file}");
    assert!(l.stage.is_some_and(|s| s >= 0) && ["random", "sampled"].contains(&l.source.as_str()));
    let args = load.native.args.as_ref().expect("native args");
    assert_eq!(args["arrival"], "constant", "{file}");
    assert_eq!(args["seed"], 5, "{file}");
    assert!(load.metadata.description.as_deref().unwrap().contains("open-loop"), "{file}");
    let agg = r.results.request_performance.as_ref().and_then(|p| p.aggregate.as_ref()).expect("an aggregate");
    let tp = agg.throughput.as_ref().expect("throughput");
    let achieved = tp.request_rate.as_ref().expect("request_rate");
    units(achieved, UNITS_REQUEST_THROUGHPUT, "request_rate");
    units(tp.output_token_rate.as_ref().expect("output tok/s"), UNITS_GEN_THROUGHPUT, "output_token_rate");
    let lat = agg.latency.as_ref().expect("latency");
    units(lat.time_to_first_token.as_ref().expect("TTFT"), UNITS_TIME, "time_to_first_token");
    units(lat.request_latency.as_ref().expect("request latency"), UNITS_TIME, "request_latency");
    let requests = agg.requests.as_ref().expect("requests");
    assert!(requests.total >= 1 && requests.failures.is_some());
    (l.input_seq_len.value as u32, rate, achieved.mean)
}

fn exported(dir: &Path) -> Vec<(String, Report)> {
    let mut files: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap();
            let report: Report =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), report)
        })
        .collect()
}

#[test]
fn a_run_exports_as_reports_the_schema_accepts_and_imports_back_to_the_same_cells() {
    let sim = SimArgs::new().steps(5, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = ["--contexts", "256,512", "--concurrency", "1,2", "--repeat", "2", "--run-id", "m"];
    assert_ok(&bench(d, &sim.url, &args));
    let out = site_in(d, &["export", "m"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("Wrote 8 llm-d Benchmark Reports (v0.2) into export/m"), "{}", stdout(&out));
    let reports = exported(&d.join("export/m"));
    assert_eq!(reports.len(), 8, "two contexts, two concurrencies, two repetitions");
    let mut cells: Vec<(u32, u32)> = reports.iter().map(|(f, r)| check(r, f)).collect();
    cells.sort_unstable();
    cells.dedup();
    assert_eq!(cells, [(256, 1), (256, 2), (512, 1), (512, 2)]);
    // Each report's request counts are its cell's: every request record, those that failed.
    for (file, report) in &reports {
        let uid = report.run.uid.as_deref().unwrap();
        let (name, rep) = uid.trim_start_matches("m/").rsplit_once("-r").unwrap();
        let cell_file = match rep {
            "1" => format!("{name}.json"),
            r => format!("{name}-r{r}.json"),
        };
        let rows = common::sim::request_rows(&common::sim::cell(d, "m", &cell_file));
        let requests =
            report.results.request_performance.as_ref().unwrap().aggregate.as_ref().unwrap().requests.as_ref().unwrap();
        assert_eq!(requests.total as usize, rows.len(), "{file}");
        let failed = rows.iter().filter(|r| r["error"].is_string()).count();
        assert_eq!(requests.failures, Some(failed as i64), "{file}");
    }
    // Back in: the same cells and repetitions, the same total tok/s.
    assert_ok(&site_in(d, &["import", "export/m", "--run-id", "back"]));
    assert_ok(&site_in(d, &["build"]));
    let cells = |run: &str| {
        let v = cells_download(&d.join("public"), run);
        let mut rows: Vec<(u64, u64, u64, f64)> = v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["phase"] == "decode")
            .map(|c| {
                let n = |k: &str| c[k].as_u64().unwrap();
                (n("context"), n("concurrency"), n("repetitions"), c["figures"]["total_tps"].as_f64().unwrap())
            })
            .collect();
        rows.sort_by(|a, b| a.partial_cmp(b).unwrap());
        rows
    };
    let (before, after) = (cells("m"), cells("back"));
    assert_eq!(before.len(), 4);
    for (a, b) in before.iter().zip(&after) {
        assert_eq!((a.0, a.1, a.2), (b.0, b.1, b.2));
        assert!((a.3 - b.3).abs() <= 1e-5 * a.3, "{a:?} against {b:?}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.join("data/runs/back/run.json")).unwrap()).unwrap();
    assert_eq!(manifest["hardware"]["device"], "Sim GPU");
    assert_eq!(manifest["bench_tool"]["name"], "site bench");
    // Exporting again replaces the folder whole.
    fs::write(d.join("export/m/stale.yaml"), "x: 1\n").unwrap();
    assert_ok(&site_in(d, &["export", "m"]));
    assert!(!d.join("export/m/stale.yaml").exists());
}

#[test]
fn another_tools_reports_import_in_their_units_and_a_rate_stage_needs_its_rates() {
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let folder = d.join("reports");
    fs::create_dir_all(&folder).unwrap();
    let report = |stage: u32, concurrency: &str, rate: f64| {
        format!(
            "version: '0.2'\nrun:\n  uid: r{stage}\n  eid: e1\nscenario:\n  stack:\n  - metadata: {{kind: inference_engine, label: vllm-0, cfg_id: x}}\n    standardized:\n      tool: vllm\n      tool_version: 0.11.0\n      role: replica\n      model: {{name: Qwen/Qwen3-0.6B}}\n      accelerator: {{model: NVIDIA-H100-80GB-HBM3, count: 2, parallelism: {{tp: 2}}}}\n    native: {{}}\n  load:\n    metadata: {{cfg_id: y}}\n    standardized:\n      tool: inference-perf\n      tool_version: 0.3.0\n      source: random\n      stage: {stage}\n      input_seq_len: {{distribution: fixed, value: 2048}}\n      concurrency: {concurrency}\n    native: {{}}\nresults:\n  request_performance:\n    aggregate:\n      requests: {{total: 200, failures: 0}}\n      latency:\n        time_to_first_token: {{units: s, mean: 0.05, p50: 0.045, p90: 0.07}}\n        time_per_output_token: {{units: s/token, mean: 0.02, p50: 0.019}}\n      throughput:\n        output_token_rate: {{units: tokens/s, mean: {rate}}}\n"
        )
    };
    fs::write(folder.join("stage_0.yaml"), report(0, "8", 640.0)).unwrap();
    fs::write(folder.join("stage_1.yaml"), report(1, "16", 1100.0)).unwrap();
    // Another tool's configuration beside the reports is passed over.
    fs::write(folder.join("config.yaml"), "load:\n  type: constant\n").unwrap();
    let out = site_in(d, &["import", "reports", "--run-id", "ip"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("2 cells"), "{}", stdout(&out));
    assert_ok(&site_in(d, &["build"]));
    let v = cells_download(&d.join("public"), "ip");
    let c16 = v["cells"].as_array().unwrap().iter().find(|c| c["concurrency"] == 16).unwrap();
    assert_eq!(c16["context"], 2048);
    assert_eq!(c16["figures"]["total_tps"], 1100.0);
    assert_eq!(c16["figures"]["ttft_ms"], 45.0);
    assert_eq!(c16["figures"]["tbt_ms"], 19.0);
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.join("data/runs/ip/run.json")).unwrap()).unwrap();
    assert_eq!(manifest["model"]["id"], "Qwen/Qwen3-0.6B");
    assert_eq!(
        (manifest["hardware"]["device"].as_str(), manifest["hardware"]["count"].as_u64()),
        (Some("NVIDIA-H100-80GB-HBM3"), Some(2))
    );
    assert_eq!(
        (manifest["engine"]["name"].as_str(), manifest["engine"]["version"].as_str()),
        (Some("vllm"), Some("0.11.0"))
    );
    // A concurrency that is no whole number is named.
    fs::write(folder.join("stage_2.yaml"), report(2, ".inf", 900.0)).unwrap();
    let out = site_in(d, &["import", "reports", "--run-id", "ip2"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("stage_2.yaml: scenario.load.standardized.concurrency: expected a whole number"),
        "{}",
        stderr(&out)
    );
    // A stage at a rate must say the rate it completed: without it, named.
    let at_rate = report(2, "null", 900.0).replace("      concurrency: null\n", "      rate_qps: 4.0\n");
    fs::write(folder.join("stage_2.yaml"), &at_rate).unwrap();
    let out = site_in(d, &["import", "reports", "--run-id", "ip2"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("stage_2.yaml: results.request_performance.aggregate.throughput.request_rate.mean: expected the requests/s completed"), "{}", stderr(&out));
    // With it, a rate run of its own beside the matrix stages' run.
    let with_rate = at_rate.replace(
        "output_token_rate: {units: tokens/s, mean: 900}",
        "output_token_rate: {units: tokens/s, mean: 900}\n        request_rate: {units: queries/s, mean: 3.5}",
    );
    fs::write(folder.join("stage_2.yaml"), with_rate).unwrap();
    let out = site_in(d, &["import", "reports", "--run-id", "ip3"]);
    assert_ok(&out);
    assert!(d.join("data/runs/ip3-1/cells.jsonl.gz").exists() && !d.join("data/runs/ip3-1/rates.jsonl").exists());
    let rates = fs::read_to_string(d.join("data/runs/ip3-2/rates.jsonl")).expect("the rate stage's run");
    assert!(rates.contains("\"achieved_rps\":3.5") && rates.contains("\"rate_rps\":4.0"), "{rates}");
    fs::remove_file(folder.join("stage_2.yaml")).unwrap();
    // A figure that is no number, or more failures than requests, is named, not dropped.
    let good = report(1, "16", 1100.0);
    for (bad, says) in [
        (good.replace("mean: 1100", "mean: '1100'"), "throughput.output_token_rate.mean: expected a number from 0 up"),
        (good.replace("p50: 0.045", "p50: -0.045"), "latency.time_to_first_token.p50: expected a number from 0 up"),
        (good.replace("failures: 0", "failures: 500"), "500 failed or incomplete of 200 requests"),
    ] {
        fs::write(folder.join("stage_1.yaml"), &bad).unwrap();
        let out = site_in(d, &["import", "reports", "--run-id", "bad"]);
        assert!(!out.status.success(), "{says}");
        assert!(stderr(&out).contains("stage_1.yaml") && stderr(&out).contains(says), "{}", stderr(&out));
    }
}

/// `site export --out DIR` replaces only a folder an export wrote: one holding other files is
/// refused, named, and left as it was.
#[test]
fn export_refuses_to_replace_a_folder_of_other_files() {
    let sim = SimArgs::new().steps(5, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    assert_ok(&bench(d, &sim.url, &["--contexts", "256", "--concurrency", "1", "--run-id", "m"]));
    fs::create_dir_all(d.join("mine")).unwrap();
    fs::write(d.join("mine/thesis.tex"), "precious").unwrap();
    let out = site_in(d, &["export", "m", "--out", "mine"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("refusing to replace mine") && stderr(&out).contains("thesis.tex"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(d.join("mine/thesis.tex")).unwrap(), "precious");
    // An earlier export's folder is replaced.
    assert_ok(&site_in(d, &["export", "m", "--out", "again"]));
    assert_ok(&site_in(d, &["export", "m", "--out", "again"]));
    // A run named by its folder's path, as `site diff` takes it.
    let out = site_in(d, &["export", "data/runs/m", "--out", "bypath"]);
    assert_ok(&out);
    assert_eq!(fs::read_dir(d.join("bypath")).unwrap().count(), fs::read_dir(d.join("again")).unwrap().count());
}

/// A `--prefix-reuse` run exported and imported again keeps its workload: the reports say it
/// in their load's description, and the run read back ranks and compares as that workload.
#[test]
fn an_exported_reuse_run_imports_back_as_its_workload() {
    let sim = SimArgs::new().steps(5, 0).prefill_tps(20000).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args =
        ["--contexts", "512", "--concurrency", "2", "--max-output", "8", "--prefix-reuse", "90", "--run-id", "r"];
    assert_ok(&bench(d, &sim.url, &args));
    assert_ok(&site_in(d, &["export", "r"]));
    let yaml = fs::read_to_string(fs::read_dir(d.join("export/r")).unwrap().next().unwrap().unwrap().path()).unwrap();
    // The description may be folded over lines.
    let words = yaml.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("90% of it shared with the cell's other requests (prefix reuse)"), "{yaml}");
    assert_ok(&site_in(d, &["import", "export/r", "--run-id", "back"]));
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.join("data/runs/back/run.json")).unwrap()).unwrap();
    assert_eq!(manifest["settings"]["prefix_reuse_pct"], 90, "{}", manifest["settings"]);
    assert_ok(&site_in(d, &["build"]));
    assert!(d.join("public/leaderboards/512-x2-reuse90/index.html").is_file());
    assert!(!d.join("public/leaderboards/512-x2/index.html").exists(), "the imported run ranks as a plain run");
}

/// `--format` of another tool on an llm-d report says what the file is, not a JSON error.
#[test]
fn another_format_asked_of_a_report_names_the_reports_format() {
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let report = "version: '0.2'\nrun: {uid: a}\nscenario:\n  load:\n    standardized: {tool: inference-perf, tool_version: 0.7.0, source: random, stage: 0, input_seq_len: {distribution: fixed, value: 1024}, concurrency: 2}\nresults:\n  request_performance:\n    aggregate:\n      requests: {total: 40, failures: 0}\n      throughput:\n        output_token_rate: {units: tokens/s, mean: 812.5}\n";
    fs::write(d.join("stage_0.yaml"), report).unwrap();
    let out = site_in(d, &["import", "stage_0.yaml", "--format", "inference-perf", "--run-id", "x"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("a file of llmd-br-0.2") && err.contains("pass --format llmd-br-0.2"), "{err}");
}

/// A rate run exports each rate cell as a stage at its rate (the load type and seed kept in
/// the report), and the reports import back as a rate run of the same rates, its figures as
/// reported: the same achieved rate, TTFT and Kept up / Saturated, no goodput claimed.
#[test]
fn a_rate_run_exports_its_rates_and_imports_back_as_a_rate_run() {
    let sim = SimArgs::new().flavor("llamacpp").slots(2).steps(10, 1).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = [
        "--contexts",
        "256",
        "--rates",
        "2,8",
        "--arrival",
        "constant",
        "--seed",
        "5",
        "--duration",
        "3s",
        "--warmup-hold",
        "1s",
        "--max-output",
        "32",
        "--drain-timeout",
        "8s",
        "--run-id",
        "r",
    ];
    assert_ok(&bench(d, &sim.url, &args));
    let out = site_in(d, &["export", "r"]);
    assert_ok(&out);
    let reports = exported(&d.join("export/r"));
    let names: Vec<&str> = reports.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["br-rate-256-2rps-r1.yaml", "br-rate-256-8rps-r1.yaml"]);
    let exported_rates: Vec<(u32, f64, f64)> = reports.iter().map(|(f, r)| check_rate(r, f)).collect();
    assert_eq!((exported_rates[0].0, exported_rates[0].1, exported_rates[1].1), (256, 2.0, 8.0));
    assert_ok(&site_in(d, &["import", "export/r", "--run-id", "back"]));
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.join("data/runs/back/run.json")).unwrap()).unwrap();
    assert_eq!(manifest["traffic"]["arrival"], "constant");
    assert_eq!(manifest["traffic"]["rates_rps"], serde_json::json!([2.0, 8.0]));
    assert_ok(&site_in(d, &["build"]));
    let rows = |run: &str| {
        let page = fs::read_to_string(d.join(format!("public/runs/{run}/index.html"))).unwrap();
        table_rows(&page, "class=\"rates\"")[1..].to_vec()
    };
    let (before, after) = (rows("r"), rows("back"));
    assert_eq!(before.len(), 2);
    for (a, b) in before.iter().zip(&after) {
        // Offered, achieved, completed · failed, output tok/s, TTFT p50 · p90 · p99.
        assert_eq!(a[..6], b[..6], "{a:?} against {b:?}");
        let verdict = |row: &[String]| row[10].split_whitespace().next().unwrap().to_string();
        assert_eq!(verdict(a), verdict(b));
        assert!(b[10].contains("as the tool reported"), "{b:?}");
        // No requests: no lag, no requests in flight.
        assert_eq!((b[8].as_str(), b[9].as_str()), ("— · —", "—"), "{b:?}");
    }
    assert!(before[1][10].starts_with("Saturated"), "{:?}", before[1]);
}

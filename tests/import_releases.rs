//! `site import` of every release of the peer tools: the results of seven older releases run
//! against one llama.cpp server (tests/fixtures/peer-old/, with the tools' own figures in its
//! README), each layout told apart by what the file holds, the model always found, different
//! settings never merged, and formats no reader reads refused by tool and release.

mod common;

use std::fs;
use std::path::Path;

use common::*;
use serde_json::Value;

const FACTS: [&str; 4] = ["--cpu", "2-core CPU", "--engine", "llama.cpp"];

fn import(ws: &Workspace, paths: &[&Path], id: &str) -> std::process::Output {
    let mut args: Vec<&str> = vec!["import"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    args.extend_from_slice(&FACTS);
    args.extend(["--run-id", id]);
    ws.site(&args)
}

fn empty_ws() -> Workspace {
    let ws = Workspace { dir: tempfile::tempdir().unwrap() };
    fs::create_dir_all(ws.path().join("data")).unwrap();
    ws
}

fn json(ws: &Workspace, rel: &str) -> Value {
    serde_json::from_str(&ws.read(rel)).unwrap()
}

/// `value` as the README writes it: rounded to `decimals`.
fn rounded(value: &Value, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value.as_f64().unwrap_or(f64::NAN) * scale).round() / scale
}

/// One release's folder and the figures its README gives at concurrency 1 and 2: output tok/s
/// (3 decimals), TTFT p50 (2) and time between tokens p50 (3).
struct Release {
    folder: &'static str,
    tool: &'static str,
    version: &'static str,
    tps: [f64; 2],
    ttft: [f64; 2],
    tbt: [f64; 2],
}

const RELEASES: [Release; 7] = [
    Release {
        folder: "aiperf-0.8.0",
        tool: "AIPerf",
        version: "0.8.0",
        tps: [1.974, 3.708],
        ttft: [2563.22, 2601.02],
        tbt: [608.780, 492.978],
    },
    Release {
        folder: "aiperf-0.9.0",
        tool: "AIPerf",
        version: "0.9.0",
        tps: [11.777, 6.584],
        ttft: [42.02, 356.60],
        tbt: [100.997, 302.855],
    },
    Release {
        folder: "aiperf-0.10.0",
        tool: "AIPerf",
        version: "0.10.0",
        tps: [9.064, 9.453],
        ttft: [152.07, 194.61],
        tbt: [137.765, 211.798],
    },
    Release {
        folder: "aiperf-0.12.0",
        tool: "AIPerf",
        version: "0.12.0",
        tps: [9.481, 6.002],
        ttft: [1980.36, 4300.32],
        tbt: [77.847, 270.007],
    },
    // Output tokens over the benchmark, not guidellm's own mean (45.423 / 53.028).
    Release {
        folder: "guidellm-0.6.1",
        tool: "guidellm",
        version: "0.6.1",
        tps: [39.472, 39.119],
        ttft: [827.68, 1672.17],
        tbt: [12.352, 24.306],
    },
    // Output tokens over the benchmark, not guidellm's own mean (35.202 / 44.506).
    Release {
        folder: "guidellm-0.7.0",
        tool: "guidellm",
        version: "0.7.0",
        tps: [31.187, 33.906],
        ttft: [935.67, 1779.05],
        tbt: [17.803, 29.625],
    },
    Release {
        folder: "inference-perf-0.5.0",
        tool: "inference-perf",
        version: "unknown",
        tps: [8.103, 2.115],
        ttft: [1787.79, 804.07],
        tbt: [94.620, 947.613],
    },
];

#[test]
fn every_older_release_imports_with_its_model_and_the_tools_figures() {
    for r in &RELEASES {
        let ws = empty_ws();
        let out = import(&ws, &[&fixture(&format!("peer-old/{}/out", r.folder))], "old");
        assert_ok(&out);
        let said = stdout(&out);
        assert!(
            said.contains(&format!("Imported {} {}: 2 cells, contexts 256, concurrency 1,2", r.tool, r.version)),
            "{}: {said}",
            r.folder
        );
        assert!(!said.contains("model ("), "{}: the model is in the files: {said}", r.folder);
        let run = json(&ws, "data/runs/old/run.json");
        assert_eq!(run["model"]["id"], "smollm2", "{}", r.folder);
        for (i, c) in [1, 2].iter().enumerate() {
            let cell = common::sim::cell(ws.path(), "old", &format!("decode-256-c{c}.json"));
            let rep = &cell["reported"];
            let got = (rounded(&rep["total_tps"], 3), rounded(&rep["ttft_ms"], 2), rounded(&rep["tbt_ms"], 3));
            assert_eq!(got, (r.tps[i], r.ttft[i], r.tbt[i]), "{} at concurrency {c}", r.folder);
        }
    }
}

#[test]
fn guidellm_before_0_7_4_reads_tokens_over_the_benchmark_and_says_why_its_own_mean_differs() {
    for (folder, own) in [("guidellm-0.7.0", [35.202, 44.506]), ("guidellm-0.6.1", [45.423, 53.028])] {
        let ws = empty_ws();
        assert_ok(&import(&ws, &[&fixture(&format!("peer-old/{folder}/out"))], "g"));
        for (i, c) in [1, 2].iter().enumerate() {
            let cell = common::sim::cell(ws.path(), "g", &format!("decode-256-c{c}.json"));
            let figures = cell["reported"]["tool_figures"].as_array().unwrap();
            let mean = figures.iter().find(|f| f["name"] == "output_tokens_per_second.mean").unwrap();
            assert_eq!(rounded(&mean["value"], 3), own[i], "{folder}: guidellm's own mean is kept under its name");
            assert_eq!(cell["reported"]["token_source"], "guidellm output_token_count / duration");
        }
        let notes = ws.read("data/runs/g/notes.md");
        assert!(notes.contains("output tokens over the benchmark, right in every release"), "{notes}");
        assert!(notes.contains("0.7.0 to 0.7.3 take it from the first to the last output token"), "{notes}");
        // The run page says so too.
        assert_ok(&ws.site(&["build"]));
        let page = text_of(&ws.read("public/runs/g/index.html"));
        assert!(page.contains("0.7.0 to 0.7.3 take it from the first to the last output token"), "{page}");
    }
    // From 0.7.4 the mean is over the benchmark and is read as it is: 0.7.4 itself
    // (scripts/peer-fixture.sh against the simulated engine), where it equals output tokens
    // over the duration, and 0.8.1.
    let ws = empty_ws();
    let file = fixture("peer-new/guidellm-0.7.4/out/benchmarks.json");
    assert_ok(&import(&ws, &[&file], "g"));
    let raw: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    for (b, c) in raw["benchmarks"].as_array().unwrap().iter().zip([1, 2]) {
        let cell = common::sim::cell(ws.path(), "g", &format!("decode-256-c{c}.json"));
        assert_eq!(cell["reported"]["token_source"], "guidellm output_tokens_per_second");
        assert_eq!(cell["reported"]["total_tps"], b["metrics"]["output_tokens_per_second"]["successful"]["mean"]);
        let over_duration = b["metrics"]["output_token_count"]["successful"]["total_sum"].as_f64().unwrap()
            / b["duration"].as_f64().unwrap();
        let read = cell["reported"]["total_tps"].as_f64().unwrap();
        assert!(
            (read / over_duration - 1.0).abs() < 1e-9,
            "0.7.4's mean is over the benchmark: {read} {over_duration}"
        );
    }
    assert!(!ws.read("data/runs/g/notes.md").contains("0.7.0 to 0.7.3"), "nothing to explain from 0.7.4");
    let ws = empty_ws();
    assert_ok(&import(&ws, &[&fixture("peer/guidellm-0.8.1")], "g"));
    let cell = common::sim::cell(ws.path(), "g", "decode-256-c1.json");
    assert_eq!(cell["reported"]["token_source"], "guidellm output_tokens_per_second");
    assert_eq!(cell["reported"]["total_tps"], 14.951677502218836);
}

/// A guidellm 0.7.0 file whose release cannot be read (empty, `7`, `main`) is never taken for
/// a new release (whose mean is read as it is, 13-31% high for 0.7.0): output tokens over the
/// benchmark are read, and the version is stored as unknown, not empty.
#[test]
fn a_guidellm_file_whose_release_cannot_be_read_is_not_assumed_new() {
    let ws = empty_ws();
    assert_ok(&import(&ws, &[&fixture("peer-old/guidellm-0.7.0/out")], "named"));
    let right = common::sim::cell(ws.path(), "named", "decode-256-c1.json")["reported"]["total_tps"].clone();
    for (i, version) in ["", "7", "main"].iter().enumerate() {
        let dir = ws.path().join(format!("src{i}"));
        fs::create_dir_all(&dir).unwrap();
        let mut v: Value =
            serde_json::from_str(&fs::read_to_string(fixture("peer-old/guidellm-0.7.0/out/benchmarks.json")).unwrap())
                .unwrap();
        v["metadata"]["guidellm_version"] = Value::from(*version);
        fs::write(dir.join("benchmarks.json"), v.to_string()).unwrap();
        let id = format!("v{i}");
        assert_ok(&import(&ws, &[&dir], &id));
        let cell = common::sim::cell(ws.path(), &id, "decode-256-c1.json");
        assert_eq!(cell["reported"]["token_source"], "guidellm output_token_count / duration", "{version:?}");
        assert_eq!(cell["reported"]["total_tps"], right, "{version:?}");
        let run = json(&ws, &format!("data/runs/{id}/run.json"));
        assert_eq!(run["bench_tool"]["version"], "unknown", "{version:?}: {}", run["bench_tool"]);
    }
}

/// A guidellm file without the field that names its release is named as guidellm's, with
/// the flag that reads it by its layout, not as a file of no known format.
#[test]
fn a_guidellm_file_without_its_version_is_named_and_read_by_its_layout_on_request() {
    let ws = empty_ws();
    let dir = ws.path().join("src");
    fs::create_dir_all(&dir).unwrap();
    let mut v: Value =
        serde_json::from_str(&fs::read_to_string(fixture("peer/guidellm-0.8.1/benchmarks.json")).unwrap()).unwrap();
    v["metadata"].as_object_mut().unwrap().remove("guidellm_version");
    fs::write(dir.join("benchmarks.json"), v.to_string()).unwrap();
    let out = import(&ws, &[&dir.join("benchmarks.json")], "g");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("guidellm results without") && err.contains("--format guidellm"), "{err}");
    let mut args: Vec<&str> = vec!["import", dir.to_str().unwrap(), "--format", "guidellm", "--run-id", "g"];
    args.extend_from_slice(&FACTS);
    assert_ok(&ws.site(&args));
    let cell = common::sim::cell(ws.path(), "g", "decode-256-c1.json");
    assert_eq!(cell["reported"]["token_source"], "guidellm output_token_count / duration");
}

#[test]
fn a_timed_aiperf_profile_is_not_said_to_be_a_request_count() {
    let ws = empty_ws();
    assert_ok(&import(&ws, &[&fixture("peer-old/aiperf-0.12.0/out")], "timed"));
    let notes = ws.read("data/runs/timed/notes.md");
    assert!(notes.contains("a fixed duration (20.0 s)"), "{notes}");
    assert!(!notes.contains("a fixed number of requests ("), "{notes}");
    let cell = common::sim::cell(ws.path(), "timed", "decode-256-c2.json");
    assert_eq!(cell["warnings"][0]["code"], "fixed_duration");
    assert!(cell["warnings"][0]["message"].as_str().unwrap().starts_with("AIPerf ran for 20.0 s"), "{cell}");
}

/// A copy of an AIPerf profile folder with its profile document changed by `edit`.
fn edited_profile(from: &Path, to: &Path, edit: impl Fn(&mut Value)) {
    copy_dir(from, to);
    let path = to.join("profile_export_aiperf.json");
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut v);
    fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
}

#[test]
fn profiles_of_different_models_or_endpoints_are_never_merged_as_repetitions() {
    // Today's layout (0.13) and the one of 0.8: one profile, and a copy that differs in its
    // model (or its endpoint), become two runs of one cell each, never one run with a -r2 cell.
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 3] = [
        (
            "peer/aiperf-0.13.0/single-c2",
            |v| v["input_config"]["models"]["items"][0]["name"] = "other-model".into(),
            "other-model",
        ),
        (
            "peer-old/aiperf-0.8.0/out/concurrency_2",
            |v| v["input_config"]["endpoint"]["model_names"][0] = "other-model".into(),
            "other-model",
        ),
        (
            "peer/aiperf-0.13.0/single-c2",
            |v| v["input_config"]["endpoint"]["urls"][0] = "http://127.0.0.1:9/".into(),
            "smollm2",
        ),
    ];
    for (source, edit, second_model) in cases {
        let ws = empty_ws();
        let (a, b) = (ws.path().join("a"), ws.path().join("b"));
        copy_dir(&fixture(source), &a);
        edited_profile(&fixture(source), &b, edit);
        let out = import(&ws, &[&a, &b], "m");
        assert_ok(&out);
        let said = stdout(&out);
        assert_eq!(said.matches("Imported AIPerf").count(), 2, "{source}: {said}");
        let models: Vec<String> = ["m-1", "m-2"]
            .iter()
            .map(|id| json(&ws, &format!("data/runs/{id}/run.json"))["model"]["id"].to_string())
            .collect();
        assert_eq!(models, ["\"smollm2\"".to_string(), format!("\"{second_model}\"")], "{source}");
        for id in ["m-1", "m-2"] {
            let cells = common::sim::cell_names(ws.path(), id);
            assert_eq!(cells, ["decode-256-c2.json"], "{source}: {id} holds one profile, no repetition");
        }
    }
}

/// Two inference-perf report folders imported at once are two runs, never one run whose
/// cells mix their models.
#[test]
fn two_inference_perf_reports_are_two_runs() {
    let ws = empty_ws();
    let (a, b) = (ws.path().join("a"), ws.path().join("b"));
    copy_dir(&fixture("peer-old/inference-perf-0.5.0/out"), &a);
    copy_dir(&fixture("peer/inference-perf-0.7.0"), &b);
    let config = b.join("config.yaml");
    let text = fs::read_to_string(&config).unwrap();
    fs::write(&config, text.replace("model_name: smollm2", "model_name: other-model")).unwrap();
    let out = import(&ws, &[&a, &b], "ip");
    assert_ok(&out);
    assert_eq!(stdout(&out).matches("Imported inference-perf").count(), 2, "{}", stdout(&out));
    let model = |id: &str| json(&ws, &format!("data/runs/{id}/run.json"))["model"]["id"].clone();
    assert_eq!((model("ip-1"), model("ip-2")), ("smollm2".into(), "other-model".into()));
    let cells = |id: &str| common::sim::cell_names(ws.path(), id).len();
    assert_eq!((cells("ip-1"), cells("ip-2")), (2, 3));
}

#[test]
fn a_run_whose_model_the_files_do_not_name_says_so_at_import_and_on_its_page() {
    let ws = empty_ws();
    let dir = ws.path().join("nameless");
    edited_profile(&fixture("peer/aiperf-0.13.0/single-c2"), &dir, |v| {
        v["input_config"].as_object_mut().unwrap().remove("models");
    });
    let out = import(&ws, &[&dir], "nameless");
    assert_ok(&out);
    assert!(
        stdout(&out).contains("not in the files: model (the files do not name it; --model-id gives it)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(json(&ws, "data/runs/nameless/run.json")["model"]["id"], "unknown");
    assert_ok(&ws.site(&["build"]));
    let page = text_of(&ws.read("public/runs/nameless/index.html"));
    assert!(page.contains("The AIPerf results do not name the model, and none was given (--model-id)"), "{page}");
    // inference-perf names it in the report folder's config.yaml; without that file it is
    // unknown, and said to be.
    let ws = empty_ws();
    let report = ws.path().join("report");
    copy_dir(&fixture("peer-old/inference-perf-0.5.0/out"), &report);
    fs::remove_file(report.join("config.yaml")).unwrap();
    let out = import(&ws, &[&report], "ip");
    assert_ok(&out);
    assert!(stdout(&out).contains("model (the files do not name it"), "{}", stdout(&out));
    assert_eq!(json(&ws, "data/runs/ip/run.json")["model"]["id"], "unknown");
}

#[test]
fn a_format_no_reader_reads_is_refused_by_tool_and_release() {
    let ws = empty_ws();
    // AIPerf: neither layout of input_config.
    let aiperf = ws.path().join("aiperf");
    edited_profile(&fixture("peer/aiperf-0.13.0/single-c2"), &aiperf, |v| {
        v["aiperf_version"] = "0.4.1".into();
        let ic = v["input_config"].as_object_mut().unwrap();
        ic.remove("phases");
        ic.insert("load".into(), serde_json::json!({"concurrency": 2}));
    });
    // guidellm: metadata of a release, neither `args` (format 1) nor `config` (format 2).
    let guidellm = ws.path().join("benchmarks.json");
    let mut g: Value =
        serde_json::from_str(&fs::read_to_string(fixture("peer/guidellm-0.8.1/benchmarks.json")).unwrap()).unwrap();
    g.as_object_mut().unwrap().remove("config");
    g["metadata"]["guidellm_version"] = "0.4.9".into();
    fs::write(&guidellm, serde_json::to_string(&g).unwrap()).unwrap();
    // guidellm before 0.5: no metadata at all, only its benchmarks.
    let early = ws.path().join("early.json");
    let mut e = g.clone();
    let o = e.as_object_mut().unwrap();
    o.remove("metadata");
    for b in o["benchmarks"].as_array_mut().unwrap() {
        b["type_"] = "generative_benchmark".into();
    }
    fs::write(&early, serde_json::to_string(&e).unwrap()).unwrap();
    // inference-perf: a stage that counts the prompt under neither name.
    let ip = ws.path().join("ip");
    copy_dir(&fixture("peer-old/inference-perf-0.5.0/out"), &ip);
    let stage = ip.join("stage_0_lifecycle_metrics.json");
    let text = fs::read_to_string(&stage).unwrap();
    fs::write(&stage, text.replace("\"prompt_len\"", "\"prompt_length\"")).unwrap();
    let cases: [(&Path, &str); 4] = [
        (&early, "guidellm (no release named in the file): this output format is not read (it has neither the args of format version 1 nor the config of version 2); guidellm 0.5.0 and later are read"),
        (&aiperf, "AIPerf 0.4.1: this output format is not read (its input_config has neither loadgen, as 0.8 writes, nor phases, as 0.9 to 0.13 write); AIPerf 0.8.0 and later are read"),
        (&guidellm, "guidellm 0.4.9: this output format is not read (it has neither the args of format version 1 nor the config of version 2); guidellm 0.5.0 and later are read"),
        (&ip, "inference-perf (no release named in the file): this output format is not read (its successes count the prompt neither as prompt_tokens (0.6 on) nor as prompt_len (0.5)); inference-perf 0.5.0 and later are read"),
    ];
    for (path, want) in cases {
        let out = import(&ws, &[path], "refused");
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        let err = stderr(&out);
        assert!(err.contains(want), "{}: {err}", path.display());
        assert!(!ws.path().join("data/runs/refused").exists(), "nothing written");
    }
}

/// A release made into a fixture by `scripts/peer-fixture.sh` against the simulated engine
/// (AIPerf 0.11, which no shared folder holds) imports with the tool's own figures and model.
#[test]
fn a_release_the_fixture_script_wrote_imports_with_the_tools_own_figures() {
    let ws = empty_ws();
    let out = fixture("peer-new/aiperf-0.11.0/out");
    let said = import(&ws, &[&out], "a011");
    assert_ok(&said);
    assert!(
        stdout(&said).contains("Imported AIPerf 0.11.0: 2 cells, contexts 256, concurrency 1,2"),
        "{}",
        stdout(&said)
    );
    assert_eq!(json(&ws, "data/runs/a011/run.json")["model"]["id"], "smollm2");
    for c in [1, 2] {
        let profile: Value = serde_json::from_str(
            &fs::read_to_string(out.join(format!("concurrency_{c}/profile_export_aiperf.json"))).unwrap(),
        )
        .unwrap();
        let rep = common::sim::cell(ws.path(), "a011", &format!("decode-256-c{c}.json"))["reported"].clone();
        assert_eq!(rep["total_tps"], profile["output_token_throughput"]["avg"], "concurrency {c}");
        assert_eq!(rep["ttft_ms"], profile["time_to_first_token"]["p50"], "concurrency {c}");
        assert_eq!(rep["tbt_ms"], profile["inter_token_latency"]["p50"], "concurrency {c}");
    }
}

/// An AIPerf 0.13 profile that also keeps a `loadgen` block (another concurrency in it) is
/// read by its release's layout: the profiling phase's concurrency.
#[test]
fn an_aiperf_profile_with_phases_and_a_loadgen_block_is_read_by_its_phases() {
    let ws = empty_ws();
    let dir = ws.path().join("both");
    edited_profile(&fixture("peer/aiperf-0.13.0/single-c2"), &dir, |v| {
        v["input_config"]["loadgen"] = serde_json::json!({"concurrency": 7, "request_count": 10});
    });
    assert_ok(&import(&ws, &[&dir], "both"));
    let run = json(&ws, "data/runs/both/run.json");
    assert_eq!(run["settings"]["concurrency"], serde_json::json!([2]), "{}", run["settings"]);
}

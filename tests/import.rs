//! `site import` on real llm-inference-bench 0.4.18 files (tests/fixtures/peer/).

mod common;

use std::fs;

use common::*;
use serde_json::Value;

const SOUND: &str = "llm-inference-bench-0.4.18-llamacpp-smollm2-maxtok512.json";
const UNSOUND: &str = "llm-inference-bench-0.4.18-llamacpp-smollm2.json";
const FACTS: [&str; 6] =
    ["--cpu", "2-core CPU", "--engine", "llama.cpp", "--engine-version", "xllamacpp 2026.10.11549"];

fn import(ws: &Workspace, file: &str, id: &str, extra: &[&str]) -> std::process::Output {
    let path = fixture(&format!("peer/{file}"));
    let mut args = vec!["import", path.to_str().unwrap(), "--run-id", id];
    args.extend_from_slice(&FACTS);
    args.extend_from_slice(extra);
    ws.site(&args)
}

fn cell(ws: &Workspace, id: &str, name: &str) -> Value {
    common::sim::cell(ws.path(), id, name)
}

fn empty_ws() -> Workspace {
    let ws = Workspace { dir: tempfile::tempdir().unwrap() };
    fs::create_dir_all(ws.path().join("data")).unwrap();
    ws
}

#[test]
fn both_shared_files_import_with_reconstructed_over_capacity_cells() {
    let ws = empty_ws();
    for (file, id) in [(SOUND, "sound"), (UNSOUND, "unsound")] {
        let out = import(&ws, file, id, &[]);
        assert_ok(&out);
        assert!(stdout(&out).contains("(15 cells, 2 Over capacity reconstructed"), "{}", stdout(&out));
        let n = common::sim::cell_names(ws.path(), id).len();
        assert_eq!(n, 15, "3 prefill + 10 decode + 2 over capacity");
        // 8 x (1024 + max_tokens) exceeds the 8,192-token budget.
        let oc = cell(&ws, id, "decode-1024-c8.json");
        assert_eq!(oc["status"], "over_capacity");
        assert_eq!(oc["over_capacity"]["budget_tokens"], 8192);
        assert!(common::sim::has_cell(ws.path(), id, "decode-1536-c8.json"));
    }
    assert_eq!(cell(&ws, "sound", "decode-1024-c8.json")["over_capacity"]["required_tokens"], 8 * (1024 + 512));
    assert_eq!(cell(&ws, "unsound", "decode-1024-c8.json")["over_capacity"]["required_tokens"], 8 * (1024 + 128));

    // Figures to the digit, as reported.
    let c = cell(&ws, "sound", "decode-512-c1.json");
    assert_eq!(c["reported"]["total_tps"], 59.62990697235491);
    assert_eq!(c["reported"]["output_tokens"], 238);
    assert_eq!(c["reported"]["token_source"], "openai_stream_chunks_fallback");
    assert_eq!(c["prompt_tokens"], 632);
    assert_eq!(c["reported"]["samples"].as_array().unwrap().len(), 1);
    let p = cell(&ws, "sound", "prefill-1536.json");
    assert_eq!((p["reported"]["prompt_tps"].as_f64(), p["reported"]["ttft_ms"].as_f64()), (Some(160.0), Some(9564.0)));
    let m: Value = serde_json::from_str(&ws.read("data/runs/sound/run.json")).unwrap();
    assert_eq!(m["bench_tool"]["version"], "0.4.18");
    assert_eq!(m["origin"], "imported");
    assert_eq!(m["settings"]["contexts"], serde_json::json!([512, 1024, 1536]));
    assert_eq!(m["settings"]["duration_s"], 4.0);

    // Flags become warnings: capacity-limited 512 x 8 (8 streams on 4 slots).
    let w = cell(&ws, "sound", "decode-512-c8.json");
    let codes: Vec<&str> = w["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["capacity_limited", "warmup_timed_out"]);
    // The 128-token file counted end-of-request usage as continuous: every such cell is
    // flagged; the one cell that fell back to chunks is not.
    let mut flagged = 0;
    for name in common::sim::cell_names(ws.path(), "unsound") {
        let c = cell(&ws, "unsound", &name);
        let is = c["warnings"].as_array().is_some_and(|w| w.iter().any(|w| w["code"] == "usage_not_continuous"));
        if c["reported"]["token_source"] == "openai_continuous_usage" {
            assert!(is, "{name} not flagged");
            flagged += 1;
        } else {
            assert!(!is, "{name} flagged wrongly");
        }
    }
    assert_eq!(flagged, 9);
    assert!(cell(&ws, "unsound", "decode-1024-c2.json")["warnings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("exactly 2 whole requests of 128"));

    // The pages.
    assert_ok(&ws.site(&["build"]));
    let page = ws.read("public/runs/unsound/index.html");
    // The heatmap cell of 1K x 2 is marked warned.
    let at = page
        .find("<a class=\"tps\" href=\"../../cell/index.html#unsound/decode-1k-x2\"")
        .expect("the 1K x 2 heatmap cell");
    let td = &page[page[..at].rfind("<td class=\"").unwrap()..at];
    assert!(td.contains(" warned"), "{td}");
    assert!(page.contains("usage_not_continuous"));
    let sound = ws.read("public/runs/sound/index.html");
    let rows = table_rows(&sound, "<table class=\"measurements\"");
    let r = rows.iter().find(|r| r[0] == "Sustained decode" && r[1] == "512" && r[2] == "1").unwrap();
    assert_eq!(r[4..12], ["59.6", "61.4", "33 ms", "16.3 ms", "—", "0", "238", "4.0 s"]);
    assert!(sound.contains("Figures imported as reported by llm-inference-bench v0.4.18"));
}

#[test]
fn looped_cells_of_newer_versions_become_looped() {
    let ws = empty_ws();
    let mut v: Value = serde_json::from_str(&fs::read_to_string(fixture(&format!("peer/{SOUND}"))).unwrap()).unwrap();
    v["metadata"]["version"] = "0.6.2".into();
    v["results"][0]["loop_detected"] = true.into();
    v["results"][0]["aggregate_tps"] = Value::Null;
    v["results"][0]["loop_diagnostics"] =
        serde_json::json!({"period": 37, "repeated_chars": 4200, "excerpt": "again and again"});
    v["summary_table"]["512"]["1"] = Value::Null;
    let f = ws.path().join("newer.json");
    fs::write(&f, serde_json::to_string(&v).unwrap()).unwrap();
    let mut args = vec!["import", f.to_str().unwrap(), "--run-id", "newer"];
    args.extend_from_slice(&FACTS);
    assert_ok(&ws.site(&args));
    let c = cell(&ws, "newer", "decode-512-c1.json");
    assert_eq!(c["status"], "looped");
    assert_eq!(c["loop_finding"]["period_chars"], 37);
    assert_ok(&ws.site(&["build"]));
    let page = ws.read("public/runs/newer/index.html");
    assert!(page.contains("<td class=\"cell looped\"><a href=\"../../cell/index.html#newer/decode-512-x1\">Looped</a>"));
}

#[test]
fn bad_files_fail_clearly_and_write_nothing() {
    let ws = empty_ws();
    let original: Value =
        serde_json::from_str(&fs::read_to_string(fixture(&format!("peer/{SOUND}"))).unwrap()).unwrap();
    let write = |name: &str, v: &Value| {
        let p = ws.path().join(name);
        fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
        p
    };
    let mut newer = original.clone();
    newer["metadata"]["version"] = "1.2.0".into();
    let mut missing = original.clone();
    missing["results"][3].as_object_mut().unwrap().remove("concurrency");
    let cases = [
        (
            write("other.json", &serde_json::json!({"schema_version": 1, "model": {}})),
            "not a results file of a known format (the formats are llm-inference-bench".to_string(),
        ),
        (
            write("newer.json", &newer),
            "unsupported llm-inference-bench version 1.2.0 (this importer reads versions 0.x)".into(),
        ),
        (write("missing.json", &missing), "missing field `concurrency`".into()),
    ];
    for (path, msg) in &cases {
        let mut args = vec!["import", path.to_str().unwrap(), "--run-id", "x"];
        args.extend_from_slice(&FACTS);
        let out = ws.site(&args);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains(msg) && err.contains(path.file_name().unwrap().to_str().unwrap()), "{err}");
        assert!(!ws.path().join("data/runs/x").exists());
    }
    let fs_malformed = ws.path().join("broken.json");
    fs::write(&fs_malformed, "{\n \"metadata\": \n").unwrap();
    let out = ws.site(&["import", fs_malformed.to_str().unwrap(), "--cpu", "c"]);
    assert!(stderr(&out).contains("broken.json:3:0: EOF while parsing a value"), "{}", stderr(&out));
    // An existing run is kept unless --force.
    assert_ok(&import(&ws, SOUND, "kept", &[]));
    let before = ws.read("data/runs/kept/run.json");
    let out = import(&ws, UNSOUND, "kept", &[]);
    assert!(stderr(&out).contains("already exists") && stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(ws.read("data/runs/kept/run.json"), before);
    assert_ok(&import(&ws, UNSOUND, "kept", &["--force"]));
    assert!(ws.read("data/runs/kept/run.json").contains("\"duration_s\": 5.0"));
    // No temporary folders are left behind.
    let names: Vec<String> = fs::read_dir(ws.path().join("data/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["kept"]);
    // The launch command is redacted as site bench does.
    assert_ok(&import(&ws, SOUND, "cmd", &["--launch-command", "llama-server -m x.gguf --api-key sekrit"]));
    assert!(ws.read("data/runs/cmd/run.json").contains("--api-key <redacted>"));
    assert!(!ws.read("data/runs/cmd/run.json").contains("sekrit"));
}

const CPU_FACTS: [&str; 8] = [
    "--cpu",
    "AMD EPYC (2 cores)",
    "--engine",
    "llama.cpp",
    "--engine-version",
    "xllamacpp 2026.10.11549",
    "--model-id",
    "HuggingFaceTB/SmolLM2-135M-Instruct",
];

fn import_paths(ws: &Workspace, paths: &[&str], extra: &[&str]) -> std::process::Output {
    let paths: Vec<String> =
        paths.iter().map(|p| fixture(&format!("peer/{p}")).to_string_lossy().into_owned()).collect();
    let mut args: Vec<&str> = vec!["import"];
    args.extend(paths.iter().map(String::as_str));
    args.extend_from_slice(&CPU_FACTS);
    args.extend_from_slice(extra);
    ws.site(&args)
}

#[test]
fn a_folder_of_vllm_results_becomes_one_run_with_a_cell_per_concurrency() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["vllm-0.33.0"], &["--run-id", "vllm"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("Imported vllm bench serve unknown: 3 cells, contexts 286, concurrency 1,2,4"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("not in the files: tool version (the file does not record it; --tool-version gives it)")
    );
    // Given, it fills the gap; a version the files record is kept.
    assert_ok(&import_paths(&ws, &["vllm-0.33.0"], &["--run-id", "vllm-given", "--tool-version", "0.33.0"]));
    let run: Value = serde_json::from_str(&ws.read("data/runs/vllm-given/run.json")).unwrap();
    assert_eq!(run["bench_tool"]["version"], "0.33.0");
    assert_ok(&import_paths(&ws, &["guidellm-0.8.1/benchmarks.json"], &["--run-id", "g", "--tool-version", "9.9"]));
    let run: Value = serde_json::from_str(&ws.read("data/runs/g/run.json")).unwrap();
    assert_eq!(run["bench_tool"]["version"], "0.8.1");
    // Figures as the tool printed them: output_throughput, median TTFT and TPOT.
    let c1 = cell(&ws, "vllm", "decode-286-c1.json");
    let r = &c1["reported"];
    assert_eq!(r["total_tps"], 26.22636085222954);
    assert_eq!(r["ttft_ms"], 1469.511958000112);
    assert_eq!(r["tbt_ms"], 15.688216031747519);
    assert_eq!(r["completed"], 7);
    // Every request kept as a sample; the failed one without times, and no traceback.
    assert_eq!(r["samples"].as_array().unwrap().len(), 8);
    assert_eq!(r["samples"].as_array().unwrap().iter().filter(|s| s["completed"] == false).count(), 1);
    let text = common::sim::cell_text(ws.path(), "vllm", "decode-286-c1.json");
    assert!(!text.contains("/tmp/") && !text.contains("Traceback"), "a request's error text was kept");
    let warnings: Vec<&str> = c1["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect();
    assert_eq!(warnings, ["fixed_request_count", "request_errors"]);
    let run: Value = serde_json::from_str(&ws.read("data/runs/vllm/run.json")).unwrap();
    assert_eq!(run["settings"]["decode_test"], "fixed_count");
    assert_eq!(run["started_at"], "2026-12-02T17:25:52", "the earliest result's date");
    // The method notes are on the run page.
    assert_ok(&ws.site(&["build"]));
    let page = ws.read("public/runs/vllm/index.html");
    assert!(page.contains("<h3>How vllm bench serve measured</h3>"), "the notes sit under the page's Notes heading");
    assert!(text_of(&page).contains("Fixed request count"));
}

#[test]
fn sglang_jsonl_with_infinity_imports_and_keeps_the_achieved_concurrency() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["sglang-0.5.23/sglang-bench.jsonl"], &[]);
    assert_ok(&out);
    assert!(stdout(&out).contains("3 cells, contexts 256, concurrency 1,2,4"), "{}", stdout(&out));
    let c4 = cell(&ws, "sglang-bench", "decode-256-c4.json");
    assert_eq!(c4["reported"]["total_tps"], 24.35028045230102);
    assert_eq!(c4["reported"]["avg_active"], 3.9977987664642645);
    assert_eq!(c4["reported"]["ttft_ms"], 6532.8634249999595);
    assert_eq!(c4["reported"]["samples"].as_array().unwrap().len(), 8);
}

#[test]
fn formats_are_told_from_content_and_mixed_or_broken_input_is_refused() {
    let ws = empty_ws();
    // A vLLM result under another name, and --format forcing the reading.
    let renamed = ws.path().join("results.txt");
    fs::copy(fixture("peer/vllm-0.33.0/vllm-bench-c2.json"), &renamed).unwrap();
    let tool = |id: &str| -> String {
        let m: Value = serde_json::from_str(&ws.read(&format!("data/runs/{id}/run.json"))).unwrap();
        m["bench_tool"]["name"].as_str().unwrap().to_string()
    };
    let mut args = vec!["import", renamed.to_str().unwrap(), "--run-id", "renamed"];
    args.extend_from_slice(&CPU_FACTS);
    assert_ok(&ws.site(&args));
    assert_eq!(tool("renamed"), "vllm bench serve", "told from its content, not its name");
    assert!(common::sim::has_cell(ws.path(), "renamed", "decode-286-c2.json"));
    // --format reads it as the named tool's (SGLang's result has the same shape).
    let mut forced = vec!["import", renamed.to_str().unwrap(), "--run-id", "forced", "--format", "sglang"];
    forced.extend_from_slice(&CPU_FACTS);
    assert_ok(&ws.site(&forced));
    assert_eq!(tool("forced"), "sglang bench_serving");
    // Two tools in one import.
    let out = import_paths(&ws, &["vllm-0.33.0", "sglang-0.5.23"], &["--run-id", "mixed"]);
    assert!(stderr(&out).contains("import one tool's results at a time"), "{}", stderr(&out));
    assert!(!ws.path().join("data/runs/mixed").exists());
    // A truncated SGLang line: a syntax error with its place, nothing written.
    let text = fs::read_to_string(fixture("peer/sglang-0.5.23/sglang-bench.jsonl")).unwrap();
    let cut = ws.path().join("cut.jsonl");
    let first_line_end = text.find('\n').unwrap();
    fs::write(&cut, format!("{}\n{{\"backend\": \"x\", \"max_concurrency\": ", &text[..first_line_end])).unwrap();
    let mut args = vec!["import", cut.to_str().unwrap(), "--run-id", "cut"];
    args.extend_from_slice(&CPU_FACTS);
    let out = ws.site(&args);
    assert!(stderr(&out).contains("cut.jsonl: line 2 is not a result"), "{}", stderr(&out));
    assert!(!ws.path().join("data/runs/cut").exists());
    // A hostile figure.
    let mut v: Value =
        serde_json::from_str(&fs::read_to_string(fixture("peer/vllm-0.33.0/vllm-bench-c1.json")).unwrap()).unwrap();
    v["output_throughput"] = (-5.0).into();
    let bad = ws.path().join("bad.json");
    fs::write(&bad, v.to_string()).unwrap();
    let mut args = vec!["import", bad.to_str().unwrap(), "--run-id", "bad"];
    args.extend_from_slice(&CPU_FACTS);
    let out = ws.site(&args);
    assert!(stderr(&out).contains("bad.json: output_throughput: -5.0 is not a figure"), "{}", stderr(&out));
    let unknown = ws.site(&["import", renamed.to_str().unwrap(), "--format", "aiperf-9", "--cpu", "c"]);
    assert!(
        stderr(&unknown).contains("unknown format \"aiperf-9\": the formats are llm-inference-bench"),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn a_guidellm_file_becomes_one_run_with_a_cell_per_stream_count() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["guidellm-0.8.1"], &["--run-id", "g"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("Imported guidellm 0.8.1: 3 cells, contexts 256, concurrency 1,2,4"),
        "{}",
        stdout(&out)
    );
    let c1 = cell(&ws, "g", "decode-256-c1.json");
    let r = &c1["reported"];
    // The run's rate (the series mean), median TTFT, guidellm's ITL as time between tokens.
    assert_eq!(r["total_tps"], 14.951677502218836);
    assert_eq!(r["ttft_ms"], 1725.8083820343018);
    assert_eq!(r["tbt_ms"], 21.741848143320237);
    assert_eq!(r["avg_active"], 0.9982304180705366);
    assert_eq!(r["samples"].as_array().unwrap().len(), 8);
    let run: Value = serde_json::from_str(&ws.read("data/runs/g/run.json")).unwrap();
    assert_eq!(run["bench_tool"]["version"], "0.8.1");
    assert_eq!(run["settings"]["max_output_tokens"], 64);
    assert!(ws.read("data/runs/g/notes.md").starts_with("## How guidellm measured"));
}

/// A real guidellm 0.8.1 run of the poisson profile at 0.5 and 1 requests/s against
/// llama.cpp (SmolLM2, two slots; 20 s a benchmark): a rate run whose requests keep
/// guidellm's own instants, so its page shows what guidellm sent, not what it was asked.
#[test]
fn a_guidellm_rate_run_becomes_a_rate_run_with_its_requests() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["guidellm-0.8.1-poisson/benchmarks.json"], &["--run-id", "gp"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("Imported guidellm 0.8.1: 2 request-rate cells (0.5, 1 requests/s)"),
        "{}",
        stdout(&out)
    );
    let run: Value = serde_json::from_str(&ws.read("data/runs/gp/run.json")).unwrap();
    assert_eq!((run["traffic"]["arrival"].as_str(), run["traffic"]["seed"].as_u64()), (Some("poisson"), Some(42)));
    let cells: Vec<Value> =
        ws.read("data/runs/gp/rates.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Every request of each benchmark, the 14 and 32 guidellm stopped at its end as failed.
    let count = |c: &Value, failed: bool| {
        c["requests"].as_array().unwrap().iter().filter(|r| r.get("error").is_some() == failed).count()
    };
    assert_eq!(
        [count(&cells[0], false), count(&cells[0], true), count(&cells[1], false), count(&cells[1], true)],
        [7, 14, 11, 32]
    );
    let first = &cells[0]["requests"][0];
    assert!(first["send_s"].as_f64().unwrap() - first["scheduled_s"].as_f64().unwrap() > 0.0, "{first}");
    assert!(first["first_token_s"].as_f64() > first["send_s"].as_f64());
    assert_ok(&ws.site(&["build"]));
    let page = ws.read("public/runs/gp/index.html");
    let rows = table_rows(&page, "class=\"rates\"")[1..].to_vec();
    // guidellm 0.8.1 asked for 0.5 a second sent 20 requests due in its 20 s window: evenly
    // every 2 s, then ten within half a second.
    assert!(rows[0][0].starts_with("256 at 0.5/s") && rows[0][1] == "1.00", "{rows:?}");
    assert!(rows[0][10].starts_with("Saturated"), "{:?}", rows[0]);
}

/// Two real `vllm bench serve --request-rate` results (vLLM 0.32, `--save-detailed`) against
/// llama.cpp: one rate run, a cell a rate, each request from the tool's own lists.
#[test]
fn vllm_rate_results_become_one_rate_run() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["vllm-0.32.0-rates"], &["--run-id", "vr"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("2 request-rate cells (0.3, 1 requests/s)"), "{}", stdout(&out));
    let cells: Vec<Value> =
        ws.read("data/runs/vr/rates.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let one = cells.iter().find(|c| c["rate_rps"] == 1.0).unwrap();
    let requests = one["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 20);
    // The tool's own TTFT of its first request (0.929 s), on the run's clock.
    let r = &requests[0];
    let ttft = r["first_token_s"].as_f64().unwrap() - r["send_s"].as_f64().unwrap();
    assert!((ttft - 0.9290999730001204).abs() < 1e-6, "{ttft}");
    assert_ok(&ws.site(&["build"]));
    let rows = table_rows(&ws.read("public/runs/vr/index.html"), "class=\"rates\"")[1..].to_vec();
    // At 0.3 a second the server kept up; at 1 it completed 0.75 a second (the tool's own
    // request throughput was 0.747).
    assert!(rows[0][10].starts_with("Kept up") && rows[1][10].starts_with("Saturated"), "{rows:?}");
    assert_eq!(rows[1][2], "0.75");
}

/// A real AIPerf 0.13 sweep of `--request-rate 0.5,1 --request-count 10` (poisson) against
/// llama.cpp: one rate run, a cell a rate, every request from its record.
#[test]
fn an_aiperf_rate_sweep_becomes_one_rate_run() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["aiperf-0.13.0-rates"], &["--run-id", "ar"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("Imported AIPerf 0.13.0: 2 request-rate cells (0.5, 1 requests/s)"),
        "{}",
        stdout(&out)
    );
    let run: Value = serde_json::from_str(&ws.read("data/runs/ar/run.json")).unwrap();
    assert_eq!(run["traffic"]["arrival"], "poisson");
    let cells: Vec<Value> =
        ws.read("data/runs/ar/rates.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for c in &cells {
        let requests = c["requests"].as_array().unwrap();
        assert_eq!(requests.len(), 10, "the profiling phase's records");
        // Each due at its credit, sent after it.
        assert!(requests.iter().all(|r| r["send_s"].as_f64().unwrap() >= r["scheduled_s"].as_f64().unwrap()));
    }
    // The first record of the 0.5 profile: its TTFT as AIPerf recorded it, 2,648 ms.
    let r = &cells[0]["requests"][0];
    let ttft = r["first_token_s"].as_f64().unwrap() - r["send_s"].as_f64().unwrap();
    assert!((ttft - 2.648373057).abs() < 1e-6, "{ttft}");
    assert_ok(&ws.site(&["build"]));
    let rows = table_rows(&ws.read("public/runs/ar/index.html"), "class=\"rates\"")[1..].to_vec();
    assert_eq!(rows.len(), 2);
}

/// A real inference-perf 0.7 report of a `poisson` load at 0.5 and 1 requests/s (20 s
/// stages) against llama.cpp: one rate run, a cell a stage, its records in stage order.
#[test]
fn inference_perf_rate_stages_become_one_rate_run() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["inference-perf-0.7.0-rates"], &["--run-id", "ipr"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("2 request-rate cells (0.5, 1 requests/s)"), "{}", stdout(&out));
    let run: Value = serde_json::from_str(&ws.read("data/runs/ipr/run.json")).unwrap();
    assert_eq!((run["traffic"]["arrival"].as_str(), run["traffic"]["seed"].as_u64()), (Some("poisson"), Some(77)));
    let cells: Vec<Value> =
        ws.read("data/runs/ipr/rates.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The stages' 10 and 20 requests (their load_summary counts), in that order.
    let counts: Vec<usize> = cells.iter().map(|c| c["requests"].as_array().unwrap().len()).collect();
    assert_eq!(counts, vec![10, 20]);
    assert!(ws.read("data/runs/ipr/notes.md").contains("schedule delay p99"));
}

#[test]
fn aiperf_profiles_and_sweeps_become_runs_with_their_request_records() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["aiperf-0.13.0/single-c2"], &["--run-id", "single"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("Imported AIPerf 0.13.0: 1 cells, contexts 256, concurrency 2"), "{}", stdout(&out));
    let c = cell(&ws, "single", "decode-256-c2.json");
    let r = &c["reported"];
    assert_eq!(r["total_tps"], 11.039734582107792);
    assert_eq!(r["ttft_ms"], 6005.9408425);
    assert_eq!(r["tbt_ms"], 116.07044415873014);
    // The profiling phase's 12 requests; the warm-up's are left out.
    assert_eq!(r["samples"].as_array().unwrap().len(), 12);
    // A sweep folder: one cell per combination; the copies under phases/ and the aggregates
    // are not read twice.
    let out = import_paths(&ws, &["aiperf-0.13.0/sweep-c124"], &["--run-id", "sweep"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("3 cells, contexts 256, concurrency 1,2,4"), "{}", stdout(&out));
    let c4 = cell(&ws, "sweep", "decode-256-c4.json");
    let codes: Vec<&str> = c4["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["fixed_request_count", "request_errors"]);
    assert_eq!(c4["reported"]["completed"], 7);
}

#[test]
fn an_inference_perf_report_becomes_one_run_with_a_cell_per_stage() {
    let ws = empty_ws();
    let out = import_paths(&ws, &["inference-perf-0.7.0"], &["--run-id", "ip"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("3 cells, contexts 256, concurrency 1,2,4"), "{}", stdout(&out));
    let c1 = cell(&ws, "ip", "decode-256-c1.json");
    let r = &c1["reported"];
    assert_eq!(r["total_tps"], 10.272531567024107);
    assert_eq!(r["measured_s"], 49.54961653600003);
    // Seconds become milliseconds; the stage's 8 requests are its samples.
    assert_eq!(r["ttft_ms"], 2762.615434000054);
    assert_eq!(r["samples"].as_array().unwrap().len(), 8);
    let c4 = cell(&ws, "ip", "decode-256-c4.json");
    assert_eq!(c4["reported"]["samples"].as_array().unwrap().len(), 8);
}

#[test]
fn failed_cells_of_every_version_become_error_cells_and_request_count_runs_say_so() {
    let ws = empty_ws();
    let mut v: Value = serde_json::from_str(&fs::read_to_string(fixture(&format!("peer/{SOUND}"))).unwrap()).unwrap();
    v["metadata"]["version"] = "0.7.1".into();
    v["metadata"]["decode_mode"] = "request-count".into();
    // 0.7: a failure reason and a negative marker; 0.4: all zeros.
    v["results"][0]["aggregate_tps"] = (-1.0).into();
    v["results"][0]["failure_reason"] = "server returned 500 for https://user:hunter2@gw.example/v1".into();
    v["results"][1]["aggregate_tps"] = 0.0.into();
    v["results"][1]["client_output_tokens"] = 0.into();
    v["results"][1]["completed_request_count"] = 0.into();
    v["results"][1]["num_errors"] = 3.into();
    v["results"][2].as_object_mut().unwrap().remove("measurement_seconds");
    v["results"][2]["measurement_wall_seconds"] = 4.25.into();
    let f = ws.path().join("v07.json");
    fs::write(&f, serde_json::to_string(&v).unwrap()).unwrap();
    let mut args = vec!["import", f.to_str().unwrap(), "--run-id", "v07"];
    args.extend_from_slice(&FACTS);
    assert_ok(&ws.site(&args));
    let name =
        |i: usize| format!("decode-{}-c{}.json", v["results"][i]["context_tokens"], v["results"][i]["concurrency"]);
    let failed = cell(&ws, "v07", &name(0));
    assert_eq!(failed["status"], "error");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("server returned 500 for https://") && !message.contains("hunter2"), "{message}");
    let zeros = cell(&ws, "v07", &name(1));
    assert_eq!(zeros["status"], "error");
    assert_eq!(
        zeros["error"]["message"],
        "llm-inference-bench measured nothing: no output tokens and no completed request (3 errors)"
    );
    assert_eq!(cell(&ws, "v07", &name(2))["reported"]["measured_s"], 4.25);
    let run: Value = serde_json::from_str(&ws.read("data/runs/v07/run.json")).unwrap();
    assert_eq!(run["settings"]["decode_test"], "fixed_count");
}

/// The figure named `name` among a cell's tool figures.
fn tool_figure(c: &Value, name: &str) -> Option<f64> {
    c["reported"]["tool_figures"].as_array()?.iter().find(|f| f["name"] == name)?["value"].as_f64()
}

#[test]
fn figures_without_a_column_of_ours_are_kept_under_the_tools_names() {
    let ws = empty_ws();
    assert_ok(&import_paths(&ws, &["vllm-0.33.0"], &["--run-id", "vllm"]));
    let c1 = cell(&ws, "vllm", "decode-286-c1.json");
    // vLLM's ITL pools chunk gaps: not our time between tokens (its TPOT is), so it stays its own.
    assert_eq!(tool_figure(&c1, "median_itl_ms"), Some(15.828741999939666));
    assert_eq!(tool_figure(&c1, "median_e2el_ms"), Some(2484.0412029998333));
    assert_ne!(c1["reported"]["tbt_ms"].as_f64(), tool_figure(&c1, "median_itl_ms"));
    assert_ok(&import_paths(&ws, &["guidellm-0.8.1/benchmarks.json"], &["--run-id", "guidellm"]));
    let g1 = cell(&ws, "guidellm", "decode-256-c1.json");
    assert_eq!(tool_figure(&g1, "time_per_output_token_ms.median").map(|v| (v * 10.0).round() / 10.0), Some(45.9));

    // llm-inference-bench 0.7 MTP acceptance figures.
    let mut v: Value = serde_json::from_str(&fs::read_to_string(fixture(&format!("peer/{SOUND}"))).unwrap()).unwrap();
    v["metadata"]["version"] = "0.7.3".into();
    v["results"][0]["server_spec_accepted_tokens"] = 1234.into();
    v["results"][0]["server_accept_len_effective"] = 2.75.into();
    v["results"][0]["server_spec_pos_accept"] = serde_json::json!([0.9, 0.6, null]);
    v["results"][0]["accept_norm_tps"] = Value::Null;
    let f = ws.path().join("mtp.json");
    fs::write(&f, serde_json::to_string(&v).unwrap()).unwrap();
    let mut args = vec!["import", f.to_str().unwrap(), "--run-id", "mtp"];
    args.extend_from_slice(&FACTS);
    assert_ok(&ws.site(&args));
    let name = format!("decode-{}-c{}.json", v["results"][0]["context_tokens"], v["results"][0]["concurrency"]);
    let m = cell(&ws, "mtp", &name);
    assert_eq!(tool_figure(&m, "server_spec_accepted_tokens"), Some(1234.0));
    assert_eq!(tool_figure(&m, "server_accept_len_effective"), Some(2.75));
    assert_eq!(tool_figure(&m, "server_spec_pos_accept[1]"), Some(0.6));
    assert_eq!(tool_figure(&m, "server_spec_pos_accept[2]"), None, "a null is not a figure");
    assert_eq!(tool_figure(&m, "accept_norm_tps"), None);

    // In the cell's evidence, under the tool's names; the mapping on the methodology page.
    assert_ok(&ws.site(&["build"]));
    assert_eq!(evidence(ws.path(), "vllm")["tool"], "vllm bench serve");
    let shown = evidence_cell(ws.path(), "vllm", "decode-286-x1")["tool_figures"].clone();
    assert!(shown.as_array().unwrap().contains(&serde_json::json!(["median_itl_ms", "15.83", "ms"])), "{shown}");
    let glossary = text_of(&ws.read("public/glossary/index.html"));
    assert!(glossary.contains("vllm bench serve → our columns"), "{glossary}");
    assert!(glossary.contains("server_spec_accepted_tokens"));
}

#[test]
fn a_comparison_across_tools_says_the_methods_differ() {
    let ws = empty_ws();
    assert_ok(&import_paths(&ws, &["guidellm-0.8.1/benchmarks.json"], &["--run-id", "guidellm"]));
    assert_ok(&import_paths(&ws, &["sglang-0.5.23/sglang-bench.jsonl"], &["--run-id", "sglang"]));
    let out = ws.site(&["diff", "guidellm", "sglang", "--out", "cmp"]);
    assert_ok(&out);
    let page = ws.read("cmp/index.html");
    let text = text_of(&page).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("Measured differently."), "{text}");
    assert!(page.contains("<th scope=\"row\">Figures</th><td>as guidellm reported them</td><td>as sglang bench_serving reported them <span class=\"tag\">differs</span>"), "{page}");
    // Both tools' 256-token cells meet: guidellm 15.0 against SGLang 21.7 output tok/s at one stream.
    assert!(text.contains("15.0 → 21.7"), "{text}");
}

#[test]
fn a_vllm_append_result_file_becomes_one_run() {
    let ws = empty_ws();
    // `--append-result` writes each result on a line of its own.
    let lines: Vec<String> = ["c1", "c2", "c4"]
        .iter()
        .map(|c| {
            fs::read_to_string(fixture(&format!("peer/vllm-0.33.0/vllm-bench-{c}.json"))).unwrap().trim().to_string()
        })
        .collect();
    let f = ws.path().join("appended.json");
    fs::write(&f, lines.join("\n")).unwrap();
    let mut args = vec!["import", f.to_str().unwrap(), "--run-id", "appended"];
    args.extend_from_slice(&CPU_FACTS);
    let out = ws.site(&args);
    assert_ok(&out);
    assert!(stdout(&out).contains("3 cells, contexts 286, concurrency 1,2,4"), "{}", stdout(&out));
    assert_eq!(cell(&ws, "appended", "decode-286-c4.json")["reported"]["total_tps"], 30.092465950607696);
    // A broken line names its line.
    fs::write(&f, format!("{}\n{{\"max_concurrency\": 2,", lines[0])).unwrap();
    let out = ws.site(&args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("appended.json: line 2 is not a result"), "{}", stderr(&out));
}

#[test]
fn an_aiperf_export_of_earlier_releases_imports_too() {
    let ws = empty_ws();
    // The earlier layout: no version, the load under input_config.loadgen, the lengths under
    // input_config.input.prompt.
    let dir = ws.path().join("early");
    fs::create_dir_all(&dir).unwrap();
    let src = fixture("peer/aiperf-0.13.0/single-c2");
    let mut v: Value =
        serde_json::from_str(&fs::read_to_string(src.join("profile_export_aiperf.json")).unwrap()).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("aiperf_version");
    o.remove("schema_version");
    o.insert(
        "input_config".into(),
        serde_json::json!({
            "endpoint": {"model_names": ["smollm2"], "type": "chat", "streaming": true},
            "input": {"prompt": {"input_tokens": {"mean": 256}, "output_tokens": {"mean": 64}}},
            "loadgen": {"concurrency": 2, "request_count": 12}
        }),
    );
    fs::write(dir.join("profile_export_aiperf.json"), serde_json::to_string(&v).unwrap()).unwrap();
    fs::copy(src.join("profile_export.jsonl"), dir.join("profile_export.jsonl")).unwrap();
    let mut args = vec!["import", dir.to_str().unwrap(), "--run-id", "early"];
    args.extend_from_slice(&CPU_FACTS);
    let out = ws.site(&args);
    assert_ok(&out);
    assert!(stdout(&out).contains("Imported AIPerf unknown: 1 cells, contexts 256, concurrency 2"), "{}", stdout(&out));
    assert!(stdout(&out).contains("not in the files: tool version"), "{}", stdout(&out));
    let c = cell(&ws, "early", "decode-256-c2.json");
    assert_eq!(c["reported"]["total_tps"], 11.039734582107792);
    let run: Value = serde_json::from_str(&ws.read("data/runs/early/run.json")).unwrap();
    assert_eq!(run["settings"]["max_output_tokens"], 64);
}

/// One AIPerf profile named twice, a folder and a copy of it, or two copies of one file:
/// refused, naming both, and nothing is written (they would read as repetitions that agree
/// exactly).
#[test]
fn one_result_given_twice_is_refused_not_imported_as_repetitions() {
    let ws = empty_ws();
    let profile = fixture("peer/aiperf-0.13.0/single-c2");
    let copy = ws.path().join("copy");
    copy_dir(&profile, &copy);
    let vllm = fixture("peer/vllm-0.33.0");
    let vllm_file = fs::read_dir(&vllm)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let vllm_copy = ws.path().join("again.json");
    fs::copy(&vllm_file, &vllm_copy).unwrap();
    let cases: [(Vec<&str>, &str); 3] = [
        (vec![profile.to_str().unwrap(), profile.to_str().unwrap()], "are the same file"),
        (vec![profile.to_str().unwrap(), copy.to_str().unwrap()], "hold identical results"),
        (vec![vllm_file.to_str().unwrap(), vllm_copy.to_str().unwrap()], "hold identical results"),
    ];
    for (paths, why) in cases {
        let mut args = vec!["import"];
        args.extend(&paths);
        args.extend_from_slice(&CPU_FACTS);
        args.extend(["--run-id", "twice"]);
        let out = ws.site(&args);
        assert_eq!(out.status.code(), Some(1), "{paths:?}");
        let err = stderr(&out);
        assert!(err.contains(why) && err.contains("one measurement imported twice"), "{paths:?}: {err}");
        assert!(!ws.path().join("data/runs/twice").exists(), "nothing written");
    }
}

/// Imported repetitions are another tool's runs: the page does not say they were
/// interleaved across the matrix, which only `site bench --repeat` does.
#[test]
fn imported_repetitions_are_not_said_to_be_interleaved() {
    let ws = Workspace::from_fixture("valid/compare");
    assert_ok(&ws.site(&["build"]));
    let page = text_of(&ws.read("public/runs/base/index.html"));
    assert!(
        page.contains("Each cell was measured 3 times (separate runs of the tool the results were imported from)"),
        "{page}"
    );
    assert!(!page.contains("interleaved across the matrix"));
}

/// A source dated in the future (9999-12-31 would stay "the newest" run for ever) or with a
/// start time that is no date is refused, naming the file; nothing is written.
#[test]
fn an_import_dated_in_the_future_or_not_dated_at_all_is_refused() {
    for (bad, says) in [("9999-12-31T00:00:00", "in the future"), ("not a date", "is not a date")] {
        let ws = tempfile::tempdir().unwrap();
        let src = ws.path().join("src");
        copy_dir(&fixture("peer/aiperf-0.13.0/single-c2"), &src);
        for entry in walkdir::WalkDir::new(&src).into_iter().filter_map(|e| e.ok()).filter(|e| e.file_type().is_file())
        {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if text.contains("\"start_time\"") {
                let re = regex::Regex::new(r#""start_time": *"[^"]*""#).unwrap();
                std::fs::write(
                    entry.path(),
                    re.replace_all(&text, format!("\"start_time\": \"{bad}\"").as_str()).as_bytes(),
                )
                .unwrap();
            }
        }
        let out =
            site_in(ws.path(), &["import", "src", "--run-id", "r", "--cpu", "2-core CPU", "--engine", "llama.cpp"]);
        assert!(!out.status.success(), "{bad}: {}", stdout(&out));
        assert!(stderr(&out).contains(says) && stderr(&out).contains("src"), "{bad}: {}", stderr(&out));
        assert!(!ws.path().join("data/runs/r").exists(), "{bad}");
    }
}

/// `site import --help` names every format `--format` takes, llm-d reports included.
#[test]
fn import_help_names_every_format() {
    let ws = tempfile::tempdir().unwrap();
    let help = stdout(&site_in(ws.path(), &["import", "--help"]));
    for name in speed_matrix::import::sources::Format::ALL.map(|f| f.name()) {
        assert!(help.contains(name), "{name} missing from:\n{help}");
    }
    let out = site_in(ws.path(), &["import", "x", "--format", "nope"]);
    assert!(!out.status.success() && stderr(&out).contains("llmd-br-0.2"), "{}", stderr(&out));
}

/// The four peer tools' real rate runs against one llama.cpp server, imported with the same
/// facts, are one configuration's rate runs: the tools page sets their answers at each rate
/// side by side (achieved, TTFT p50, kept up or not), apart from the matrix runs' page.
#[test]
fn peer_rate_runs_stand_side_by_side_at_each_rate() {
    let ws = empty_ws();
    for (path, id) in [
        ("guidellm-0.8.1-poisson/benchmarks.json", "gp"),
        ("vllm-0.32.0-rates", "vr"),
        ("aiperf-0.13.0-rates", "ar"),
        ("inference-perf-0.7.0-rates", "ipr"),
    ] {
        assert_ok(&import_paths(&ws, &[path], &["--run-id", id]));
    }
    assert_ok(&ws.site(&["build"]));
    let index = ws.read("public/index.html");
    let slug = index
        .split("href=\"tools/")
        .skip(1)
        .map(|s| s.split('/').next().unwrap())
        .find(|s| s.ends_with("-rates"))
        .unwrap_or_else(|| panic!("a tools page of rate runs: {index}"));
    let page = ws.read(&format!("public/tools/{slug}/index.html"));
    assert!(text_of(&page).contains("at request rates"), "the page says what it compares");
    let rows = table_rows(&page, "<table class=\"tools tool-rates\"");
    let tools: Vec<String> = rows[0].iter().skip(1).map(|h| text_of(h).trim().to_string()).collect();
    assert_eq!(tools, ["AIPerf 0.13.0", "guidellm 0.8.1", "inference-perf unknown", "vllm bench serve unknown"]);
    let labels: Vec<String> = rows[1..].iter().map(|r| text_of(&r[0]).trim().to_string()).collect();
    // vllm bench serve counts the chat template in its prompt (286 tokens): a row of its own.
    assert_eq!(labels, ["256 at 0.5/s", "256 at 1/s", "286 at 0.3/s", "286 at 1/s"]);
    // Each answer is the one its run page gives for that rate: achieved, TTFT p50, status.
    for (column, id) in [(1, "ar"), (2, "gp"), (3, "ipr")] {
        let own = table_rows(&ws.read(&format!("public/runs/{id}/index.html")), "class=\"rates\"")[1..].to_vec();
        for (row, at) in rows[1..3].iter().zip(&own) {
            let cell = text_of(&row[column]);
            let (achieved, ttft) = (text_of(&at[2]), text_of(&at[5]));
            assert!(cell.starts_with(&format!("{}/s", achieved.trim())), "{id}: {cell} against {achieved}");
            assert!(cell.contains(ttft.split(" · ").next().unwrap().trim()), "{id}: {cell} against {ttft}");
            let status = text_of(&at[10]).split_whitespace().next().unwrap().to_string();
            assert!(cell.trim_end().ends_with(&status), "{id}: {cell} against {status}");
        }
        assert_eq!(text_of(&rows[3][column]).trim(), "—");
    }
}

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
    serde_json::from_str(&ws.read(&format!("data/runs/{id}/cells/{name}"))).unwrap()
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
        assert!(
            stdout(&out).contains("Imported 15 cells") && stdout(&out).contains("2 Over capacity reconstructed"),
            "{}",
            stdout(&out)
        );
        let n = fs::read_dir(ws.path().join(format!("data/runs/{id}/cells"))).unwrap().count();
        assert_eq!(n, 15, "3 prefill + 10 decode + 2 over capacity");
        // 8 x (1024 + max_tokens) exceeds the 8,192-token budget.
        let oc = cell(&ws, id, "decode-1024-c8.json");
        assert_eq!(oc["status"], "over_capacity");
        assert_eq!(oc["over_capacity"]["budget_tokens"], 8192);
        assert!(fs::metadata(ws.path().join(format!("data/runs/{id}/cells/decode-1536-c8.json"))).is_ok());
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
    for name in fs::read_dir(ws.path().join("data/runs/unsound/cells")).unwrap() {
        let name = name.unwrap().file_name().to_string_lossy().into_owned();
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
    assert!(page.contains("class=\"cell valid warned\""));
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
    assert!(page.contains("data-status=\"looped\"><a href=\"cells/decode-512-x1/index.html\">Looped</a></td>"));
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
            "not an llm-inference-bench results file".to_string(),
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

//! What the server says of its own settings, recorded by `site bench` against the simulated
//! vLLM (its `vllm:cache_config_info` labels and `/v1/models` length): listed on the run
//! page, named by a comparison where they differ, and telling configurations apart.
#![cfg(feature = "simulator")]

mod common;

use common::sim::{bench, SimArgs};
use common::*;

fn manifest(dir: &std::path::Path, run: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("data/runs").join(run).join("run.json")).unwrap()).unwrap()
}

#[test]
fn server_settings_are_recorded_listed_compared_and_keep_configurations_apart() {
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = ["--contexts", "256", "--concurrency", "1", "--prefill-samples", "1"];
    for (run, kv) in [("small-cache", 46_592), ("large-cache", 93_184)] {
        let sim = SimArgs::new().flavor("vllm").kv_tokens(kv).max_model_len(4096).start();
        assert_ok(&bench(d, &sim.url, &[&args[..], &["--run-id", run]].concat()));
    }
    let settings = &manifest(d, "small-cache")["server_settings"];
    assert_eq!(settings["block_size"], "16", "{settings}");
    assert_eq!(settings["num_gpu_blocks"], "2912", "{settings}");
    assert_eq!(settings["max_model_len"], "4096", "{settings}");
    // A comparison names what differs, in the terminal and on its page.
    let out = site_in(d, &["diff", "small-cache", "large-cache", "--out", "cmp"]);
    assert_ok(&out);
    let said = "The servers' settings differ (A vs B, as each server reported them): kv_cache_size_tokens 46592 vs 93184; num_gpu_blocks 2912 vs 5824.";
    assert!(stdout(&out).contains(said), "{}", stdout(&out));
    assert!(text_of(&std::fs::read_to_string(d.join("cmp/index.html")).unwrap()).contains(said));
    // Three more runs of the small cache's configuration and one of the large cache's, at
    // another level: the large cache's run is another configuration, not an outlier of this one.
    let runs = d.join("data/runs");
    for copy in ["small-2", "small-3", "small-4"] {
        copy_dir(&runs.join("small-cache"), &runs.join(copy));
    }
    let out = site_in(d, &["diff", "small-cache", "small-2", "--out", "aa"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("from 2 other runs of this configuration"), "{}", stdout(&out));
    assert!(stdout(&out).contains("The noise comes from small-3, small-4."), "{}", stdout(&out));
    assert!(!stdout(&out).contains("settings differ"), "{}", stdout(&out));
    // The run page lists them.
    assert_ok(&site_in(d, &["build"]));
    let page = std::fs::read_to_string(d.join("public/runs/small-cache/index.html")).unwrap();
    let rows = table_rows(&page, "server-settings");
    assert!(rows.contains(&vec!["num_gpu_blocks".to_string(), "2912".to_string()]), "{rows:?}");
}

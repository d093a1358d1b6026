//! `site bench --endpoint A --versus B`: two live servers measured cell by cell in A B, B A
//! order, written as two runs naming each other, listed in compare.json and judged on their
//! paired differences.
#![cfg(feature = "simulator")]

mod common;

use std::fs;
use std::path::Path;

use common::sim::{bench, SimArgs, SimEngine};
use common::*;
use serde_json::Value;

fn noisy(seed: u32, slowdown: u32) -> SimEngine {
    SimArgs::new().shared_machine_noise(seed).flag("--slowdown-pct", slowdown).start()
}

fn manifest(dir: &Path, run: &str) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join("data/runs").join(run).join("run.json")).unwrap()).unwrap()
}

fn modified(dir: &Path, run: &str, cell: &str) -> std::time::SystemTime {
    fs::metadata(dir.join("data/runs").join(run).join("cells").join(cell)).unwrap().modified().unwrap()
}

#[test]
fn a_slower_server_measured_beside_the_first_is_judged_on_the_pairs() {
    let (a, b) = (noisy(41, 0), noisy(42, 10));
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = ["--versus", &b.url, "--repeat", "3", "--contexts", "256", "--concurrency", "1,4", "--run-id", "v"];
    let out = bench(d, &a.url, &args);
    assert_ok(&out);
    let (said, progress) = (stdout(&out), stderr(&out));
    assert!(
        progress.contains("A decode 256 x 4 · rep 2/3") && progress.contains("B decode 256 x 4 · rep 2/3"),
        "{progress}"
    );
    assert_eq!(manifest(d, "v")["paired_with"], "v-versus");
    assert_eq!(manifest(d, "v-versus")["paired_with"], "v");
    // A then B in odd repetitions, B then A in even ones.
    assert!(modified(d, "v", "decode-256-c4.json") < modified(d, "v-versus", "decode-256-c4.json"));
    assert!(modified(d, "v-versus", "decode-256-c4-r2.json") < modified(d, "v", "decode-256-c4-r2.json"));
    assert!(said.contains("Paired: A and B were measured cell by cell in one session"), "{said}");
    // Both decode cells (a 256-token prefill takes some 13 ms: on a busy machine its three
    // pairs may not tell 10%).
    assert!(said.contains("256 x 1, 256 x 4"), "{said}");
    let listed: Value = serde_json::from_str(&fs::read_to_string(d.join("data/compare.json")).unwrap()).unwrap();
    assert_eq!(listed["comparisons"][0]["a"], "v");
    assert_eq!(listed["comparisons"][0]["b"], "v-versus");
    assert_ok(&site_in(d, &["build"]));
    let page = fs::read_to_string(d.join("public/compare/v--v-versus/index.html")).unwrap();
    assert!(page.contains("Paired: A and B were measured cell by cell"), "the comparison page says it was paired");
}

#[test]
fn two_servers_alike_measured_side_by_side_are_not_called_different() {
    let (a, b) = (noisy(51, 0), noisy(52, 0));
    let ws = tempfile::tempdir().unwrap();
    let args = ["--versus", &b.url, "--repeat", "3", "--contexts", "256", "--concurrency", "1,4", "--run-id", "aa"];
    let out = bench(ws.path(), &a.url, &args);
    assert_ok(&out);
    assert!(!stdout(&out).contains("slower figures in") && !stdout(&out).contains(" faster"), "{}", stdout(&out));
}

#[test]
fn versus_is_refused_with_launch_resume_and_dry_run() {
    let ws = tempfile::tempdir().unwrap();
    for extra in [&["--launch", "true"][..], &["--resume"][..], &["--dry-run"][..]] {
        let args = [&["--versus", "http://127.0.0.1:9"][..], extra].concat();
        let out = bench(ws.path(), "http://127.0.0.1:9", &args);
        assert!(!out.status.success());
        assert!(stderr(&out).contains("cannot be used with"), "{extra:?}: {}", stderr(&out));
    }
}

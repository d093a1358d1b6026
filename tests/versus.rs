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

fn modified(dir: &Path, run: &str, cell: &str) -> f64 {
    common::sim::measured_at(dir, run, cell)
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
    // One process a side: the pairs cancel the machine's drift, not the level of each
    // server's process, so the assumed 5% between processes leaves a 10% change unjudged.
    assert!(said.contains("Run-to-run noise between the two servers' processes assumed 5.0%"), "{said}");
    assert!(!said.contains("slower figures in"), "{said}");
    // A rig whose processes are known to differ by 1% tells it, in both decode cells (a
    // 256-token prefill takes some 13 ms: on a busy machine its three pairs may not tell 10%).
    fs::write(d.join("site.toml"), "change_noise_pct = 1\n").unwrap();
    let out = site_in(d, &["diff", "v", "v-versus", "--out", "vv"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("256 x 1, 256 x 4"), "{}", stdout(&out));
    assert!(stdout(&out).contains("Paired: A and B"), "{}", stdout(&out));
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
    let said = stdout(&out);
    // The verdict line is there, for every cell (prefill 256, 256 x 1, 256 x 4), and it
    // calls none of them.
    let line = said
        .lines()
        .find(|l| l.starts_with("3 cells with figures on both sides: "))
        .unwrap_or_else(|| panic!("{said}"));
    let verdicts = line.split(": ").nth(1).unwrap();
    for part in verdicts.split(", ") {
        assert!(part.ends_with("inconclusive") || part.contains("no change >"), "an A/A pair was called: {line}");
    }
    assert!(!said.contains("slower figures in"), "{said}");
}

#[test]
fn versus_is_refused_with_resume_and_dry_run_and_launch_needs_b_s_command() {
    let ws = tempfile::tempdir().unwrap();
    for extra in [&["--resume"][..], &["--dry-run"][..]] {
        let args = [&["--versus", "http://127.0.0.1:9"][..], extra].concat();
        let out = bench(ws.path(), "http://127.0.0.1:9", &args);
        assert!(!out.status.success());
        assert!(stderr(&out).contains("cannot be used with"), "{extra:?}: {}", stderr(&out));
    }
    let out = bench(ws.path(), "http://127.0.0.1:9", &["--versus", "http://127.0.0.1:10", "--launch", "true"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("pass --versus-launch CMD"), "{}", stderr(&out));
    assert!(!ws.path().join("data").exists(), "a refused run writes nothing");
}

/// Everything `--versus` would find wrong only after both runs were measured is refused
/// before the first request: the same server twice, one id for both runs, an existing run,
/// a broken `compare.json` or `site.toml`.
#[test]
fn versus_refuses_before_measuring_what_would_fail_after() {
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let refused = |endpoint: &str, extra: &[&str], says: &str| {
        let args = [&["--contexts", "256", "--concurrency", "1"][..], extra].concat();
        let out = bench(d, endpoint, &args);
        assert!(!out.status.success(), "{extra:?}");
        assert!(stderr(&out).contains(says), "{extra:?}: {}", stderr(&out));
        assert!(
            !d.join("data/runs/x").exists() && !d.join("data/runs/y").exists(),
            "{extra:?}: a refused pair wrote a run"
        );
    };
    refused("http://127.0.0.1:9", &["--versus", "http://127.0.0.1:9/"], "the same server as --endpoint");
    refused("http://127.0.0.1:9", &["--versus", "http://localhost:9"], "the same server as --endpoint");
    refused("http://[::1]:9", &["--versus", "http://127.0.0.1:9"], "the same server as --endpoint");
    refused(
        "http://127.0.0.1:9",
        &["--versus", "http://127.0.0.1:10", "--run-id", "x", "--versus-run-id", "x"],
        "two ids",
    );
    fs::create_dir_all(d.join("data/runs/old")).unwrap();
    refused(
        "http://127.0.0.1:9",
        &["--versus", "http://127.0.0.1:10", "--run-id", "x", "--versus-run-id", "old"],
        "already exists",
    );
    fs::write(d.join("data/compare.json"), "{\"schema_version\": 1, \"comparisons\": [").unwrap();
    refused("http://127.0.0.1:9", &["--versus", "http://127.0.0.1:10", "--run-id", "x"], "compare.json");
    fs::remove_file(d.join("data/compare.json")).unwrap();
    fs::write(d.join("site.toml"), "title = [").unwrap();
    refused("http://127.0.0.1:9", &["--versus", "http://127.0.0.1:10", "--run-id", "x"], "site.toml");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The command that starts a simulated server on `port`, noting its pid in `pids`.
fn launched(port: u16, pids: &Path, slowdown: u32) -> String {
    format!(
        "echo $$ >> {pids}; exec {site} simulate-engine --port {port} --lifetime-s 120 --step-ms-base 8 --step-ms-per-seq 1 --slowdown-pct {slowdown}",
        pids = pids.display(),
        site = env!("CARGO_BIN_EXE_site")
    )
}

#[test]
fn both_servers_launched_are_restarted_together_and_judged_on_pairs_over_their_processes() {
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let pids = d.join("pids");
    let (port_a, port_b) = (free_port(), free_port());
    let (cmd_a, cmd_b) = (launched(port_a, &pids, 0), launched(port_b, &pids, 10));
    let url_b = format!("http://127.0.0.1:{port_b}");
    let args = [
        "--versus",
        &url_b,
        "--launch",
        &cmd_a,
        "--versus-launch",
        &cmd_b,
        "--restarts",
        "2",
        "--repeat",
        "2",
        "--contexts",
        "256",
        "--concurrency",
        "1",
        "--run-id",
        "p",
    ];
    let out = bench(d, &format!("http://127.0.0.1:{port_a}"), &args);
    assert_ok(&out);
    for (run, port) in [("p", port_a), ("p-versus", port_b)] {
        let m = manifest(d, run);
        let instances: Vec<u64> =
            m["server_processes"].as_array().unwrap().iter().map(|p| p["instance"].as_u64().unwrap()).collect();
        assert_eq!(instances, [1, 2], "{run}: {m}");
        assert!(m["launch_command"].as_str().unwrap().contains(&format!("--port {port}")), "{run}: {m}");
        let c = common::sim::cell(d, run, "decode-256-c1-r2.json");
        assert_eq!(c["server_instance"], 2, "{run}");
        assert!(d.join("data/runs").join(run).join("server.log").is_file(), "{run}");
    }
    let said = stdout(&out);
    assert!(said.contains("Paired: A and B were measured cell by cell"), "{said}");
    assert!(said.contains("own server processes (A 2, B 2"), "{said}");
    // Four processes started (two a side), none left running.
    let started: Vec<u32> = fs::read_to_string(&pids).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(started.len(), 4, "{started:?}");
    let alive = |pid: &u32| {
        Path::new(&format!("/proc/{pid}")).exists()
            && !fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ")
    };
    assert!(!started.iter().any(alive), "a server process was left running: {started:?}");
}

//! Repeated measurement and honest verdicts, end to end: `site bench --repeat` against the
//! simulated engine (interleaved repetitions, resume, prefill samples apart from the cache),
//! then `site diff` of an A/A pair on the noisy simulator (judged neither faster nor
//! slower) and of a 10% slowdown (judged slower where the site knows its run-to-run noise,
//! not called at the noise assumed without that). Fixed noise seeds.
#![cfg(feature = "simulator")]

mod common;

use std::fs;
use std::path::Path;

use common::sim::{bench, cell, has_cell, measured_at, remove_cell, request_rows, SimArgs, SimEngine};
use common::*;
use serde_json::Value;

fn mtime(dir: &Path, run: &str, name: &str) -> f64 {
    measured_at(dir, run, name)
}

#[test]
fn repetitions_interleave_across_the_matrix_and_resume() {
    // 20,000 prompt tok/s uncached, 1,000,000 cached: a sample served from cache would show.
    let sim = SimArgs::new().steps(5, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let args = ["--contexts", "256,512", "--concurrency", "1", "--run-id", "r", "--repeat", "2"];
    let out = bench(ws.path(), &sim.url, &args);
    assert_ok(&out);
    assert!(stderr(&out).contains("· rep 2/2"), "{}", stderr(&out));
    let d = ws.path();
    for name in ["prefill-256", "decode-256-c1", "prefill-512", "decode-512-c1"] {
        assert_eq!(cell(d, "r", &format!("{name}.json"))["schema_version"], speed_matrix::format::SCHEMA_VERSION);
        assert_eq!(cell(d, "r", &format!("{name}-r2.json"))["repetition"], 2);
        assert!(cell(d, "r", &format!("{name}.json")).get("repetition").is_none(), "repetition 1 is implied");
    }
    // Interleaved: every cell once before any cell again.
    assert!(mtime(d, "r", "decode-512-c1.json") <= mtime(d, "r", "prefill-256-r2.json"));
    // Prefill: three measured samples (the warm-up is not kept), none served from cache.
    let prefill = cell(d, "r", "prefill-256-r2.json");
    let requests = request_rows(&prefill);
    assert_eq!(requests.len(), 3);
    for r in requests {
        let ttft = r["first_token_s"].as_f64().unwrap() - r["send_s"].as_f64().unwrap();
        let rate = r["prompt_tokens"].as_f64().unwrap() / ttft;
        assert!(rate < 40_000.0, "a prefill sample at {rate:.0} tok/s was served from the prefix cache");
    }
    let manifest: Value = serde_json::from_str(&fs::read_to_string(d.join("data/runs/r/run.json")).unwrap()).unwrap();
    assert_eq!(
        (manifest["settings"]["repeat"].as_u64(), manifest["settings"]["prefill_samples"].as_u64()),
        (Some(2), Some(3))
    );
    // --resume with --repeat 3 measures the third repetition and what went missing.
    remove_cell(d, "r", "decode-256-c1-r2.json");
    let mut more: Vec<&str> = args[..args.len() - 1].to_vec();
    more.extend(["3", "--resume"]);
    let out = bench(d, &sim.url, &more);
    assert_ok(&out);
    assert!(stdout(&out).contains("Wrote 5 cells") && stdout(&out).contains("7 kept from before"), "{}", stdout(&out));
    assert!(has_cell(d, "r", "decode-256-c1-r2.json"));
    assert_eq!(cell(d, "r", "decode-512-c1-r3.json")["repetition"], 3);
    // The site shows the mean of three with its interval and n.
    assert_ok(&site_in(d, &["build"]));
    let cells: Value = cells_download(&d.join("public"), "r");
    let c = cells["cells"].as_array().unwrap().iter().find(|c| c["phase"] == "decode" && c["context"] == 256).unwrap();
    assert_eq!(c["repetitions"], 3, "{c}");
    // Every repetition's evidence, each with its own requests and figures.
    let e = evidence_cell(d, "r", "decode-256-x1");
    let reps = e["reps"].as_array().unwrap();
    assert_eq!(reps.iter().map(|r| r["rep"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3]);
    for r in reps {
        assert!(!r["lanes"].as_array().unwrap().is_empty(), "repetition {}: no requests", r["rep"]);
        assert!(r["formulas"].as_array().unwrap().iter().any(|f| f[0] == "Total tok/s"), "{r}");
    }
}

/// Noise like a shared machine's: the server's level for its life, slow drift, per-step
/// jitter and an occasional stall, each run of the pair at a seed of its own.
fn noisy_sim(seed: &str, slowdown: &str) -> SimEngine {
    SimArgs::new()
        .shared_machine_noise(seed)
        .flag("--stall-every-s", 4)
        .flag("--stall-ms", 40)
        .flag("--slowdown-pct", slowdown)
        .start()
}

fn measure(dir: &Path, run: &str, seed: &str, slowdown: &str) {
    let sim = noisy_sim(seed, slowdown);
    let args = ["--contexts", "256", "--concurrency", "1,4", "--run-id", run, "--repeat", "3"];
    assert_ok(&bench(dir, &sim.url, &args));
}

/// The verdict of each judged figure column of a comparison's CSV, per decode cell.
fn verdicts(csv: &str) -> Vec<(String, Vec<String>)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cols: Vec<usize> = header.iter().enumerate().filter(|(_, h)| h.ends_with("_verdict")).map(|(i, _)| i).collect();
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[3] == "valid" && f[4] == "valid")
        .map(|f| (format!("{} {} x {}", f[0], f[1], f[2]), cols.iter().map(|&i| f[i].to_string()).collect()))
        .collect()
}

#[test]
fn an_aa_pair_is_not_judged_and_a_ten_percent_slowdown_is_slower() {
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    measure(d, "a", "11", "0");
    measure(d, "a2", "12", "0");
    measure(d, "b", "13", "10");
    // A/A: nothing changed, so no figure may be called faster or slower.
    let out = site_in(d, &["diff", "a", "a2", "--out", "aa"]);
    assert_ok(&out);
    let aa = verdicts(&fs::read_to_string(d.join("aa/comparison.csv")).unwrap());
    assert_eq!(aa.len(), 3, "prefill 256 and two decode cells: {aa:?}");
    // Each judged figure reads "no change" or "inconclusive" (never faster, slower, single or
    // empty): prefill judges its prompt tok/s, a decode cell its five figures.
    let judged_well = |x: &String| x == "no_change" || x == "inconclusive";
    for (name, v) in &aa {
        let judged = if name.starts_with("prefill") { 1 } else { 5 };
        assert!(v[..judged].iter().all(judged_well), "A/A {name}: {v:?}");
        assert!(v[judged..].iter().all(String::is_empty), "A/A {name}: {v:?}");
    }
    assert!(stdout(&out).contains("3 cells with figures on both sides:"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("slower figures in"), "{}", stdout(&out));
    assert_ok(&site_in(d, &["diff", "a", "a2", "--out", "aa2", "--fail-on-regression"]));
    // A/B with nothing known of the noise between runs: 10% is within what two server
    // processes may differ by at the assumed 5%, so it is not called.
    let out = site_in(d, &["diff", "a", "b", "--out", "ab0", "--fail-on-regression"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("Run-to-run noise assumed 5.0%"), "{}", stdout(&out));
    let ab = verdicts(&fs::read_to_string(d.join("ab0/comparison.csv")).unwrap());
    assert!(ab.iter().all(|(_, v)| v[0] != "slower"), "{ab:?}");
    // A site that knows its servers' level moves within 1.5% (the simulator draws each
    // process's level within that): every decode cell's total tok/s 10% slower is judged so,
    // and the gate fails.
    fs::write(d.join("site.toml"), "change_noise_pct = 1.5\n").unwrap();
    let out = site_in(d, &["diff", "a", "b", "--out", "ab", "--fail-on-regression"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stderr(&out).contains("judged slower"), "{}", stderr(&out));
    let ab = verdicts(&fs::read_to_string(d.join("ab/comparison.csv")).unwrap());
    let decode: Vec<_> = ab.iter().filter(|(n, _)| n.starts_with("decode")).collect();
    assert_eq!((ab.len(), decode.len()), (3, 2), "{ab:?}");
    for (name, v) in decode {
        assert_eq!(v[0], "slower", "A/B {name} total tok/s: {v:?}");
    }
    // The A/A pair stays uncalled at that noise too.
    let out = site_in(d, &["diff", "a", "a2", "--out", "aa3", "--fail-on-regression"]);
    assert_ok(&out);
}

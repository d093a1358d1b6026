//! How often the verdicts are wrong, measured: many A/A pairs (two runs of one noisy
//! simulated server, nothing changed) and A/B pairs (the second server 5% or 10% slower),
//! each run `site bench --repeat N` against the simulated engine with seeded noise, each pair
//! judged by `site diff`. Prints the false-alarm rate (A/A comparisons with any figure called
//! faster or slower; target at most 5% at N = 3) and the detection rates (A/B comparisons
//! whose gate `--fail-on-regression` fires, and decode cells whose total tok/s is called
//! slower; target at least 90% for 10% at N = 3).
//!
//! `cargo bench --bench verdicts -- [RUNS] [REPEAT]`: RUNS runs of each server (default 16:
//! 8 disjoint A/A pairs, 120 A/A pairs in all, 16 A/B pairs of each size), REPEAT repetitions
//! per cell (default 3). About 12 s per run, three runs per RUNS: 16 take about 10 minutes on
//! two cores. Run it on a quiet machine: the simulator's timing is the measurement.

use std::path::Path;
use std::process::{Child, Command, Stdio};

const SITE: &str = env!("CARGO_BIN_EXE_site");

/// The noise of `tests/repeat.rs`: a server level for its life (±1.5%), a 2% sine drift,
/// ±10% per-step jitter and a 40 ms stall about every 4 s.
fn start_sim(seed: u64, slowdown_pct: f64) -> (Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(SITE)
        .args(["simulate-engine", "--lifetime-s", "300", "--step-ms-base", "8", "--step-ms-per-seq", "1"])
        .args(["--level-pct", "1.5", "--drift-pct", "2", "--drift-period-s", "7", "--jitter-pct", "10"])
        .args(["--stall-every-s", "4", "--stall-ms", "40"])
        .args(["--noise-seed", &seed.to_string(), "--slowdown-pct", &slowdown_pct.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the simulated engine");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (child, line.trim().to_string())
}

fn measure(dir: &Path, run: &str, seed: u64, slowdown_pct: f64, repeat: u32) {
    let (mut sim, url) = start_sim(seed, slowdown_pct);
    let out = Command::new(SITE)
        .current_dir(dir)
        .args(["bench", "--endpoint", &url, "--gpu", "Sim GPU", "--gpu-count", "1", "--max-output", "512"])
        .args(["--duration", "1.5s", "--warmup-hold", "0.3s", "--gauge-interval", "0.25s"])
        .args(["--contexts", "256", "--concurrency", "1,4", "--run-id", run, "--repeat", &repeat.to_string()])
        .output()
        .unwrap();
    let _ = sim.kill();
    let _ = sim.wait();
    assert!(out.status.success(), "bench {run}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Verdicts of one comparison: (any figure faster or slower, decode total tok/s verdicts).
fn judge(dir: &Path, a: &str, b: &str) -> (bool, Vec<String>) {
    let out_dir = format!("cmp-{a}-{b}");
    let out = Command::new(SITE).current_dir(dir).args(["diff", a, b, "--out", &out_dir]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.join(&out_dir).join("comparison.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let judged: Vec<usize> =
        ["total_tps_verdict", "per_request_verdict", "ttft_verdict", "tbt_verdict"].iter().map(|c| col(c)).collect();
    let mut called = false;
    let mut totals = Vec::new();
    for row in lines.map(|l| l.split(',').collect::<Vec<_>>()) {
        called |= judged.iter().any(|&i| matches!(row.get(i), Some(&"faster") | Some(&"slower")));
        if row[0] == "decode" {
            totals.push(row[col("total_tps_verdict")].to_string());
        }
    }
    (called, totals)
}

fn rate(hits: usize, of: usize) -> String {
    format!("{hits}/{of} ({:.1}%)", hits as f64 / of.max(1) as f64 * 100.0)
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let runs = args.first().copied().unwrap_or(16).max(2) as usize;
    let repeat = args.get(1).copied().unwrap_or(3) as u32;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let started = std::time::Instant::now();
    for i in 0..runs {
        measure(dir, &format!("base{i}"), 1000 + i as u64, 0.0, repeat);
        measure(dir, &format!("slow5-{i}"), 2000 + i as u64, 5.0, repeat);
        measure(dir, &format!("slow10-{i}"), 3000 + i as u64, 10.0, repeat);
        eprintln!("{} of {runs} run triples measured ({:.0} s)", i + 1, started.elapsed().as_secs_f64());
    }
    // Every pair of baseline runs is an A/A pair (pairs share runs, so they are not
    // independent; the disjoint pairs alone are fewer and independent: both are printed).
    let pairs: Vec<(usize, usize)> = (0..runs).flat_map(|i| (i + 1..runs).map(move |j| (i, j))).collect();
    let aa: Vec<(bool, Vec<String>)> =
        pairs.iter().map(|(i, j)| judge(dir, &format!("base{i}"), &format!("base{j}"))).collect();
    let disjoint: Vec<(bool, Vec<String>)> =
        pairs.iter().zip(&aa).filter(|((i, j), _)| i % 2 == 0 && *j == i + 1).map(|(_, v)| v.clone()).collect();
    let ab = |prefix: &str| -> Vec<(bool, Vec<String>)> {
        (0..runs).map(|i| judge(dir, &format!("base{i}"), &format!("{prefix}-{i}"))).collect()
    };
    let (ab5, ab10) = (ab("slow5"), ab("slow10"));
    let gate = |v: &[(bool, Vec<String>)]| v.iter().filter(|(_, t)| t.iter().any(|x| x == "slower")).count();
    let cells = |v: &[(bool, Vec<String>)], want: &str| {
        let all: Vec<&String> = v.iter().flat_map(|(_, t)| t).collect();
        (all.iter().filter(|x| **x == want).count(), all.len())
    };
    println!("verdicts at N = {repeat} (site bench --repeat {repeat}), {runs} runs of each server, noisy simulator");
    println!();
    println!("| pairs | what | comparisons | decode cells (total tok/s) |");
    println!("| --- | --- | ---: | ---: |");
    let false_alarms = |v: &[(bool, Vec<String>)], what: &str| {
        let called = v.iter().filter(|(c, _)| *c).count();
        let all: Vec<&String> = v.iter().flat_map(|(_, t)| t).collect();
        let cells = all.iter().filter(|x| **x == "faster" || **x == "slower").count();
        println!(
            "| {what} | false alarm: any figure faster or slower | {} | {} |",
            rate(called, v.len()),
            rate(cells, all.len())
        );
    };
    false_alarms(&disjoint, "A/A, disjoint pairs");
    false_alarms(&aa, "A/A, every pair");
    let (s5, n5) = cells(&ab5, "slower");
    let (s10, n10) = cells(&ab10, "slower");
    println!("| A/B 5% slower | detected: judged slower | {} | {} |", rate(gate(&ab5), ab5.len()), rate(s5, n5));
    println!("| A/B 10% slower | detected: judged slower | {} | {} |", rate(gate(&ab10), ab10.len()), rate(s10, n10));
    println!();
    println!("{:.0} s in all", started.elapsed().as_secs_f64());
    // The targets, checked: a bench that only printed them would pass below them.
    let aa_called = aa.iter().filter(|(c, _)| *c).count();
    let misses = [
        (
            aa_called as f64 > 0.05 * aa.len() as f64,
            format!("A/A false alarms {} (target at most 5%)", rate(aa_called, aa.len())),
        ),
        (
            (gate(&ab10) as f64) < 0.9 * ab10.len() as f64,
            format!("10% slowdowns detected {} (target at least 90%)", rate(gate(&ab10), ab10.len())),
        ),
    ];
    let failed: Vec<&String> = misses.iter().filter(|(miss, _)| *miss).map(|(_, what)| what).collect();
    if !failed.is_empty() {
        eprintln!("below target: {}", failed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; "));
        std::process::exit(1);
    }
}

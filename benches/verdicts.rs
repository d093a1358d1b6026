//! How often the verdicts are wrong, measured on the simulated engine with a server level
//! drawn per process (±4%, plus drift, per-step jitter and stalls), in the ways a user
//! compares runs:
//!
//! - **(a) paired over processes**: `site bench --versus --launch A --versus-launch B
//!   --restarts 3 --repeat 3`, A/A (alike) and A/B (B 10% slower, a release of its own).
//! - **(a') paired, one process a side**: `site bench --versus` against two live servers.
//! - **(b) across processes, `--restarts 3 --repeat 3`**: each run starts its server three
//!   times (`--launch`), a level per process; the configuration's other runs in the folder.
//! - **(b, alone)**: the same runs two at a time in a folder of their own.
//! - **(b') across processes, with history**: runs on a process each, in one data folder, so a
//!   comparison's run-to-run noise comes from the configuration's other runs.
//! - **(c) two single runs, no history**: the same runs two at a time in a folder of their
//!   own, so only the assumed noise (5%) is known.
//!
//! False alarms: A/A comparisons with any figure called faster or slower (target at most 5%):
//! pairs of runs of one configuration, the baseline's and the slowed one's alike.
//! Detection: A/B comparisons whose gate fires on a slower decode cell (target at least 90%
//! with `--restarts 3 --repeat 3` and with `--versus` over processes). Then change points on
//! synthetic 30-run series (a run's level drawn at 3%): a planted 10% step found, and flat
//! series without any (targets 90% and at most 5%).
//!
//! `cargo bench --bench verdicts -- [RUNS]`: RUNS runs of each kind (default 6). About two and
//! a half minutes a round on two cores: 6 take about 15 minutes. Run it on a quiet machine:
//! the simulator's timing is the measurement.

use std::path::Path;
use std::process::{Child, Command, Stdio};

const SITE: &str = env!("CARGO_BIN_EXE_site");
/// The simulator's noise: a level per process, drift, jitter and stalls.
const NOISE: &[&str] = &[
    "--step-ms-base",
    "8",
    "--step-ms-per-seq",
    "1",
    "--level-pct",
    "4",
    "--drift-pct",
    "2",
    "--drift-period-s",
    "7",
    "--jitter-pct",
    "10",
    "--stall-every-s",
    "4",
    "--stall-ms",
    "40",
];
const MATRIX: &[&str] = &["--contexts", "256", "--concurrency", "1,4", "--repeat", "3", "--max-output", "512"];
const TIMING: &[&str] = &["--duration", "1.5s", "--warmup-hold", "0.3s", "--gauge-interval", "0.25s"];

/// The simulated engine's flags at `slowdown_pct`: a slowed server reports a release of
/// its own, so its runs are another configuration (as a new engine version is).
fn sim_flags(slowdown_pct: u32) -> String {
    let version = if slowdown_pct == 0 { "0.0.0-sim" } else { "0.0.1-slow" };
    format!("{} --slowdown-pct {slowdown_pct} --engine-version {version}", NOISE.join(" "))
}

fn start_sim(seed: u64, slowdown_pct: u32) -> (Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(SITE)
        .args(["simulate-engine", "--lifetime-s", "300", "--noise-seed", &seed.to_string()])
        .args(sim_flags(slowdown_pct).split(' '))
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the simulated engine");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (child, line.trim().to_string())
}

fn bench(dir: &Path, endpoint: &str, run: &str, extra: &[&str]) {
    let out = Command::new(SITE)
        .current_dir(dir)
        .args(["bench", "--endpoint", endpoint, "--gpu", "Sim GPU", "--gpu-count", "1", "--run-id", run])
        .args(MATRIX)
        .args(TIMING)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "bench {run}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A run on a simulated server of its own (one process).
fn measure(dir: &Path, run: &str, seed: u64, slowdown_pct: u32) {
    let (mut sim, url) = start_sim(seed, slowdown_pct);
    bench(dir, &url, run, &["--launch-command", &format!("sim --slowdown-pct {slowdown_pct}")]);
    let _ = sim.kill();
    let _ = sim.wait();
}

/// A configuration's launch command: a script in `dir` that starts the simulated server on
/// a port of its own, each process at the next seed from `first_seed` (a level of its own).
/// One command for every run of the configuration, so the site knows them as one.
fn launcher(dir: &Path, name: &str, first_seed: u64, slowdown_pct: u32) -> (String, String) {
    let script = dir.join(format!("{name}.sh"));
    let port_file = dir.join(format!("{name}.port"));
    if !script.exists() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let counter = dir.join(format!("{name}.count"));
        let body = format!(
            "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; exec {SITE} simulate-engine --port {port} --lifetime-s 300 --noise-seed $((n+{first_seed})) {flags}\n",
            c = counter.display(),
            flags = sim_flags(slowdown_pct)
        );
        std::fs::write(&script, body).unwrap();
        std::fs::write(&port_file, port.to_string()).unwrap();
    }
    let port = std::fs::read_to_string(&port_file).unwrap();
    (format!("sh {}", script.display()), format!("http://127.0.0.1:{port}"))
}

/// A run whose three repetitions each start the configuration's server afresh (`--launch`).
fn measure_restarted(dir: &Path, run: &str, slowdown_pct: u32) {
    let (command, url) =
        launcher(dir, &format!("restart-{slowdown_pct}"), 1000 + 1000 * slowdown_pct as u64, slowdown_pct);
    bench(dir, &url, run, &["--launch", &command, "--restarts", "3"]);
}

/// A paired run over processes: A and B each started afresh three times (`--launch`,
/// `--versus-launch`), B `slowdown_pct` slower; `twin` names B's configuration.
fn measure_paired_restarted(dir: &Path, run: &str, twin: &str, slowdown_pct: u32) {
    let (command_a, url_a) = launcher(dir, "base", 5000, 0);
    let (command_b, url_b) = launcher(dir, twin, 7000 + 1000 * slowdown_pct as u64, slowdown_pct);
    let args = ["--versus", &url_b, "--launch", &command_a, "--versus-launch", &command_b, "--restarts", "3"];
    bench(dir, &url_a, run, &args);
}

/// A paired run (`--versus`) on one process a side: A at `seed`, B at `seed + 1`, B
/// `slowdown_pct` slower.
fn measure_paired(dir: &Path, run: &str, seed: u64, slowdown_pct: u32) {
    let (mut a, url_a) = start_sim(seed, 0);
    let (mut b, url_b) = start_sim(seed + 1, slowdown_pct);
    bench(dir, &url_a, run, &["--versus", &url_b]);
    for sim in [&mut a, &mut b] {
        let _ = sim.kill();
        let _ = sim.wait();
    }
}

/// One comparison's verdicts: (any figure faster or slower, any decode cell's figure slower).
fn judge(dir: &Path, a: &str, b: &str) -> (bool, bool) {
    let out_dir = format!("cmp-{a}-{b}");
    let out = Command::new(SITE).current_dir(dir).args(["diff", a, b, "--out", &out_dir]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.join(&out_dir).join("comparison.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let judged: Vec<usize> = ["total_tps_verdict", "per_request_verdict", "ttft_verdict", "tbt_verdict"]
        .iter()
        .map(|c| header.iter().position(|h| h == c).unwrap())
        .collect();
    let (mut called, mut slower) = (false, false);
    for row in lines.map(|l| l.split(',').collect::<Vec<_>>()) {
        let v: Vec<&str> = judged.iter().filter_map(|&i| row.get(i).copied()).collect();
        called |= v.iter().any(|x| *x == "faster" || *x == "slower");
        slower |= row[0] == "decode" && v.contains(&"slower");
    }
    (called, slower)
}

/// `a` and `b` copied alone into a folder of their own and compared there (no history).
fn judge_alone(dir: &Path, a: &str, b: &str) -> (bool, bool) {
    let alone = dir.join(format!("alone-{a}-{b}"));
    for run in [a, b] {
        copy_dir(&dir.join("data/runs").join(run), &alone.join("data/runs").join(run));
    }
    judge(&alone, a, b)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn rate(hits: usize, of: usize) -> String {
    format!("{hits}/{of} ({:.0}%)", hits as f64 / of.max(1) as f64 * 100.0)
}

/// Change points on synthetic series of `n` runs, each run's level drawn around 1 with a
/// standard deviation of `sd` (log scale): the planted step of `step` found at its run (±2)
/// in how many of `series`, and how many flat series show any.
fn change_point_rates(series: usize, n: usize, sd: f64, step: f64) -> (usize, usize) {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut normal = || {
        // Box-Muller.
        let (u, v) = (rng.f64().max(1e-12), rng.f64());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    };
    let (mut found, mut false_alarms) = (0, 0);
    for s in 0..series {
        let at = 5 + s % (n - 10);
        let stepped: Vec<Option<f64>> =
            (0..n).map(|i| Some((sd * normal()).exp() * if i >= at { 1.0 - step } else { 1.0 })).collect();
        let flat: Vec<Option<f64>> = (0..n).map(|_| Some((sd * normal()).exp())).collect();
        let none = vec![None; n];
        let cps = |row: Vec<Option<f64>>| {
            speed_matrix::analysis::series::change_points(&[row, none.clone(), none.clone(), none.clone()], 5.0)
        };
        found += usize::from(cps(stepped).iter().any(|c| c.at.abs_diff(at) <= 2 && c.pct < 0.0));
        false_alarms += usize::from(!cps(flat).is_empty());
    }
    (found, false_alarms)
}

fn main() {
    let runs = std::env::args().skip(1).find_map(|a| a.parse::<usize>().ok()).unwrap_or(6).max(2);
    let started = std::time::Instant::now();
    let work = tempfile::tempdir().unwrap();
    let folder = |name: &str| {
        let d = work.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let (paired_over, paired, restarted, history) =
        (folder("paired-over"), folder("paired"), folder("restarted"), folder("history"));
    for i in 0..runs as u64 {
        measure_paired_restarted(&paired_over, &format!("aa{i}"), "twin", 0);
        measure_paired_restarted(&paired_over, &format!("ab{i}"), "slow", 10);
        measure_paired(&paired, &format!("aa{i}"), 100 + 10 * i, 0);
        measure_paired(&paired, &format!("ab{i}"), 500 + 10 * i, 10);
        measure_restarted(&restarted, &format!("a{i}"), 0);
        measure_restarted(&restarted, &format!("b{i}"), 10);
        measure(&history, &format!("a{i}"), 3000 + i, 0);
        measure(&history, &format!("b{i}"), 4000 + i, 10);
        eprintln!("{} of {runs} rounds measured ({:.0} s)", i + 1, started.elapsed().as_secs_f64());
    }
    // A/A: disjoint pairs of the baseline's runs and of the slowed configuration's (alike
    // too); A/B: baseline i against slowed i.
    let aa_pairs: Vec<(String, String)> = ["a", "b"]
        .iter()
        .flat_map(|c| (0..runs / 2).map(move |k| (format!("{c}{}", 2 * k), format!("{c}{}", 2 * k + 1))))
        .collect();
    let ab_pairs: Vec<(String, String)> = (0..runs).map(|i| (format!("a{i}"), format!("b{i}"))).collect();
    let versus = |dir: &Path, prefix: &str| {
        (0..runs).map(|i| judge(dir, &format!("{prefix}{i}"), &format!("{prefix}{i}-versus"))).collect::<Vec<_>>()
    };
    let over = |dir: &Path, pairs: &[(String, String)], alone: bool| -> Vec<(bool, bool)> {
        pairs.iter().map(|(a, b)| if alone { judge_alone(dir, a, b) } else { judge(dir, a, b) }).collect()
    };
    let rows = [
        (
            "(a) paired over processes (`--versus --versus-launch --restarts 3`)",
            versus(&paired_over, "aa"),
            versus(&paired_over, "ab"),
        ),
        ("(a') paired, one process a side (`--versus`)", versus(&paired, "aa"), versus(&paired, "ab")),
        (
            "(b) across processes, `--restarts 3 --repeat 3`",
            over(&restarted, &aa_pairs, false),
            over(&restarted, &ab_pairs, false),
        ),
        (
            "(b, alone) the same, two runs in a folder of their own",
            over(&restarted, &aa_pairs, true),
            over(&restarted, &ab_pairs, true),
        ),
        ("(b') across processes, with history", over(&history, &aa_pairs, false), over(&history, &ab_pairs, false)),
        ("(c) two single runs, no history", over(&history, &aa_pairs, true), over(&history, &ab_pairs, true)),
    ];
    println!("verdicts at --repeat 3, {runs} runs of each kind, simulator level ±4% per process");
    println!();
    println!("| comparisons | A/A false alarms (any figure called) | A/B 10% slower detected |");
    println!("| --- | ---: | ---: |");
    let mut misses = Vec::new();
    for (what, aa, ab) in &rows {
        let called = aa.iter().filter(|(c, _)| *c).count();
        let found = ab.iter().filter(|(_, s)| *s).count();
        println!("| {what} | {} | {} |", rate(called, aa.len()), rate(found, ab.len()));
        if called as f64 > 0.05 * aa.len() as f64 {
            misses.push(format!("{what}: false alarms {}", rate(called, aa.len())));
        }
        if (what.starts_with("(a)") || what.starts_with("(b) ")) && (found as f64) < 0.9 * ab.len() as f64 {
            misses.push(format!("{what}: detection {}", rate(found, ab.len())));
        }
    }
    let (series, n) = (200, 30);
    let (found, flat) = change_point_rates(series, n, 0.03, 0.10);
    println!();
    println!("change points, {series} synthetic series of {n} runs (a run's level at 3%):");
    println!(
        "a 10% step found at its run (±2): {}; a flat series with any: {}",
        rate(found, series),
        rate(flat, series)
    );
    if (found as f64) < 0.9 * series as f64 || flat as f64 > 0.05 * series as f64 {
        misses.push(format!("change points: found {}, false {}", rate(found, series), rate(flat, series)));
    }
    println!();
    println!("{:.0} s in all", started.elapsed().as_secs_f64());
    // The targets, checked: a bench that only printed them would pass below them.
    if !misses.is_empty() {
        eprintln!("below target: {}", misses.join("; "));
        std::process::exit(1);
    }
}

//! `cargo bench --bench open_loop_lag`: how well the load generator keeps an open-loop
//! schedule, and what it costs. The real `site bench --rates` (this build's binary) drives the
//! simulated engine (a child process) at each rate with constant arrivals; the table gives
//! the client's lag (actual minus scheduled send, from the run's `rates.jsonl`) and its CPU
//! (user + system time of the bench process over the cell's wall time, in percent of one
//! core). Both processes share this machine's cores, so a small machine's figures at high
//! rates include the engine's share.
//!
//! SITE_LAG_BENCH_RATES=100,1000,5000 and SITE_LAG_BENCH_SECS=5 choose the runs.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

struct Sim(Child, String);
impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sim() -> Sim {
    let mut child = Command::new(env!("CARGO_BIN_EXE_site"))
        .args(["simulate-engine", "--step-ms-base", "1", "--step-ms-per-seq", "0", "--prefix-cache-prompts", "0"])
        .args(["--lifetime-s", "900"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("simulated engine");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    Sim(child, line.trim().to_string())
}

/// User + system seconds of the children waited for so far.
fn children_cpu_s() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p / 100.0).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn main() {
    let rates = std::env::var("SITE_LAG_BENCH_RATES").unwrap_or_else(|_| "100,1000,5000".into());
    let secs: f64 = std::env::var("SITE_LAG_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let engine = sim();
    println!("| offered req/s | requests | lag p50 ms | lag p99 ms | lag max ms | client CPU, % of a core |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for rate in rates.split(',') {
        let dir = tempfile::tempdir().unwrap();
        let cpu0 = children_cpu_s();
        let t0 = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_site"))
            .args(["bench", "--endpoint", &engine.1, "--contexts", "64", "--rates", rate, "--arrival", "constant"])
            .args(["--seed", "1", "--duration", &format!("{secs}s"), "--warmup-hold", "1s", "--max-output", "8"])
            .args(["--max-in-flight", "100000", "--run-id", "lag", "--data"])
            .arg(dir.path().join("data"))
            .env("NO_COLOR", "1")
            .output()
            .expect("site bench");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), children_cpu_s() - cpu0);
        let text = std::fs::read_to_string(dir.path().join("data/runs/lag/rates.jsonl")).unwrap();
        let cell: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let mut lags: Vec<f64> = cell["requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| Some((r["send_s"].as_f64()? - r["scheduled_s"].as_f64()?) * 1000.0))
            .collect();
        lags.sort_by(f64::total_cmp);
        println!(
            "| {rate} | {} | {:.2} | {:.2} | {:.2} | {:.0} |",
            lags.len(),
            percentile(&lags, 50.0),
            percentile(&lags, 99.0),
            lags.last().unwrap(),
            cpu / wall * 100.0
        );
    }
}

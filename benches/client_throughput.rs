//! `cargo bench --bench client_throughput`: the load generator's own cost. The simulated
//! engine runs in a child process; the client runs here on ONE thread (a current-thread
//! runtime), so this process's CPU time is the client's.
//!
//! - flat out: the engine streams as fast as it can; client CPU per chunk and chunks/s.
//! - paced: the engine sends a chunk every 20 ms per stream; the recorded time between
//!   tokens against that truth shows the error of the recorded token timestamps.
//!
//! SITE_CLIENT_BENCH_STREAMS=1,64,1024 and SITE_CLIENT_BENCH_SECS=5 choose the runs.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use speed_matrix::bench::client::http::{Endpoint, HttpClient};
use speed_matrix::bench::client::stream::{run_stream, StreamSettings, WindowClock};
use speed_matrix::bench::loopdetect::LoopSettings;
use speed_matrix::bench::prompt::{request_body, Api};
use speed_matrix::format::RequestRecord;
use tokio::sync::watch;

struct Sim(Child, String);
impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sim(step_ms: &str) -> Sim {
    let mut child = Command::new(env!("CARGO_BIN_EXE_site"))
        .args([
            "simulate-engine",
            "--step-ms-base",
            step_ms,
            "--step-ms-per-seq",
            "0",
            "--max-model-len",
            "100000000",
            "--kv-tokens",
            "1000000000",
            "--lifetime-s",
            "600",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("simulated engine");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    Sim(child, line.trim().to_string())
}

/// CPU time of this thread in nanoseconds (the scheduler's own accounting).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Runs `streams` streams for `secs`; returns the records and the client CPU time.
fn drive(url: &str, streams: usize, secs: f64) -> (Vec<RequestRecord>, u64, f64) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = HttpClient::new(Endpoint::parse(url).unwrap(), None);
        let body = Bytes::from(
            serde_json::to_vec(&request_body(
                Api::Completions,
                "sim/model",
                "[speed-matrix bench ctx-64] a b c",
                10_000_000,
                true,
            ))
            .unwrap(),
        );
        let clock = WindowClock::new(Instant::now());
        clock.open(0.0, f64::INFINITY);
        let settings = StreamSettings {
            stall_timeout: Duration::from_secs(30),
            loop_settings: LoopSettings::default(),
            detect_loops: true,
        };
        let (tx, rx) = watch::channel(false);
        let clock = Arc::new(clock);
        let mut tasks = Vec::new();
        for _ in 0..streams {
            let (client, body, clock, rx) = (client.clone(), body.clone(), clock.clone(), rx.clone());
            tasks.push(tokio::spawn(async move {
                run_stream(&client, "/v1/completions", body, &clock, settings, rx, || {}).await.record
            }));
        }
        // Let every stream start before measuring.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (c0, t0) = (cpu_ns(), Instant::now());
        let base = clock.live_tokens.load(std::sync::atomic::Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        let chunks = clock.live_tokens.load(std::sync::atomic::Ordering::Relaxed) - base;
        let (cpu, wall) = (cpu_ns() - c0, t0.elapsed().as_secs_f64());
        let _ = tx.send(true);
        let mut records = Vec::new();
        for t in tasks {
            records.push(t.await.unwrap());
        }
        (records, cpu / chunks.max(1), chunks as f64 / wall)
    })
}

fn main() {
    let streams: Vec<usize> = std::env::var("SITE_CLIENT_BENCH_STREAMS")
        .unwrap_or_else(|_| "1,64,1024".into())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let secs: f64 = std::env::var("SITE_CLIENT_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    println!("client on one thread against the simulated engine (a separate process)");
    println!(
        "{:>8} {:>14} {:>16} {:>22} {:>22}",
        "streams", "chunks/s", "client ns/chunk", "paced TBT error p50", "paced TBT error max"
    );
    for n in streams {
        let flat = sim("0");
        let (_, ns_per_chunk, rate) = drive(&flat.1, n, secs);
        drop(flat);
        // Paced: 20 ms a chunk per stream, so the truth is known.
        let paced = sim("20");
        let (records, _, _) = drive(&paced.1, n, secs);
        drop(paced);
        let mut errs: Vec<f64> = records
            .iter()
            .filter_map(|r| match (r.first_token_s, r.last_token_s) {
                (Some(f), Some(l)) if r.tokens > 2 => {
                    Some(((l - f) / (r.tokens - 1) as f64 - 0.020).abs() / 0.020 * 100.0)
                }
                _ => None,
            })
            .collect();
        errs.sort_by(|a, b| a.total_cmp(b));
        let p50 = errs.get(errs.len() / 2).copied().unwrap_or(f64::NAN);
        let max = errs.last().copied().unwrap_or(f64::NAN);
        println!("{:>8} {:>14.0} {:>16.0} {:>21.3}% {:>21.3}%", n, rate, ns_per_chunk, p50, max);
    }
}

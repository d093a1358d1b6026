//! `cargo bench --bench client_throughput`: the load generator's own cost. The simulated
//! engine runs in a child process; the client runs here on ONE thread (a current-thread
//! runtime), so this process's CPU time is the client's.
//!
//! - flat out: the engine streams as fast as it can; client CPU per chunk (kernel time
//!   included: the scheduler's count) and chunks/s, and the tokens the client counted
//!   against the engine's own exact counter (`vllm:generation_tokens_total`) over the same
//!   seconds.
//! - paced: the engine sends a chunk every 20 ms per stream; the recorded time between
//!   tokens against that truth shows the error of the recorded token timestamps.
//! - every core: the client on a multi-thread runtime with one worker per core, flat out:
//!   the highest aggregate rate this machine's client sustains.
//!
//! SITE_CLIENT_BENCH_STREAMS=1,64,256,1024 and SITE_CLIENT_BENCH_SECS=5 choose the runs.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use speed_matrix::bench::client::http::{Credentials, Endpoint, HttpClient};
use speed_matrix::bench::client::stream::{run_stream, StreamSettings, WindowClock};
use speed_matrix::bench::loopdetect::LoopSettings;
use speed_matrix::bench::metrics::metric_value;
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
            // Room for every stream's 10M-token request: none waits for admission.
            "100000000000000",
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

/// What one run of the client measured.
struct Driven {
    records: Vec<RequestRecord>,
    /// Client CPU per chunk, ns (this thread; the whole process on a multi-thread runtime).
    ns_per_chunk: u64,
    /// Chunks (= tokens: one token a chunk) the client counted per second.
    rate: f64,
    /// The engine's own count over the same seconds, per second.
    truth: f64,
}

/// The engine's exact generated-tokens counter, with the middle of the read (the read
/// waits behind the streams, so its own latency must split evenly).
async fn engine_count(client: &HttpClient) -> (f64, Instant) {
    let sent = Instant::now();
    let (_, body) = client.get("/metrics").await.unwrap();
    let mid = sent + sent.elapsed() / 2;
    (metric_value(&String::from_utf8_lossy(&body), "vllm:generation_tokens_total").unwrap(), mid)
}

/// CPU time of this whole process in nanoseconds (user + system).
fn process_cpu_ns() -> u64 {
    speed_matrix::bench::cell::process_cpu_s().map_or(0, |s| (s * 1e9) as u64)
}

/// Runs `streams` streams for `secs` on one thread, or on every core with `all_cores`.
fn drive(url: &str, streams: usize, secs: f64, all_cores: bool) -> Driven {
    let rt = if all_cores {
        tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    };
    let cpu_now = if all_cores { process_cpu_ns } else { cpu_ns };
    rt.block_on(async {
        let client = HttpClient::new(Endpoint::parse(url).unwrap(), Credentials::default(), None).unwrap();
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
            keep_answer: false,
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
        let live = || clock.live_tokens.load(std::sync::atomic::Ordering::Relaxed);
        let (count0, at0) = engine_count(&client).await;
        let (c0, live0, t0) = (cpu_now(), live(), Instant::now());
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        let (c1, live1, wall) = (cpu_now(), live(), t0.elapsed().as_secs_f64());
        let (count1, at1) = engine_count(&client).await;
        let (cpu, chunks) = (c1 - c0, live1 - live0);
        let truth = (count1 - count0) / (at1 - at0).as_secs_f64();
        let _ = tx.send(true);
        let mut records = Vec::new();
        for t in tasks {
            records.push(t.await.unwrap());
        }
        Driven { records, ns_per_chunk: cpu / chunks.max(1), rate: chunks as f64 / wall, truth }
    })
}

fn main() {
    let streams: Vec<usize> = std::env::var("SITE_CLIENT_BENCH_STREAMS")
        .unwrap_or_else(|_| "1,64,256,1024".into())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let secs: f64 = std::env::var("SITE_CLIENT_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    println!("client on one thread against the simulated engine (a separate process)");
    println!("flat out: the client's cost; paced (20 ms a chunk a stream): its accuracy against the engine's counter");
    println!(
        "{:>8} {:>14} {:>16} {:>16} {:>16} {:>12} {:>20} {:>20}",
        "streams",
        "flat chunks/s",
        "client ns/chunk",
        "paced tok/s",
        "engine tok/s",
        "difference",
        "paced TBT err p50",
        "paced TBT err max"
    );
    for &n in &streams {
        let flat = sim("0");
        let d = drive(&flat.1, n, secs, false);
        drop(flat);
        // Paced: 20 ms a chunk per stream, so the truth is known.
        let paced = sim("20");
        let p = drive(&paced.1, n, secs, false);
        let records = p.records;
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
        let diff = (p.rate / p.truth - 1.0) * 100.0;
        println!(
            "{:>8} {:>14.0} {:>16} {:>16.0} {:>16.0} {:>11.3}% {:>19.3}% {:>19.3}%",
            n, d.rate, d.ns_per_chunk, p.rate, p.truth, diff, p50, max
        );
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("\nclient on every core ({cores}), flat out (the engine shares the machine)");
    println!(
        "{:>8} {:>14} {:>14} {:>12} {:>22}",
        "streams", "chunks/s", "engine tok/s", "difference", "process CPU ns/chunk"
    );
    for &n in streams.iter().filter(|n| **n >= 64) {
        let flat = sim("0");
        let d = drive(&flat.1, n, secs, true);
        drop(flat);
        let diff = (d.rate / d.truth - 1.0) * 100.0;
        println!("{:>8} {:>14.0} {:>14.0} {:>11.3}% {:>22}", n, d.rate, d.truth, diff, d.ns_per_chunk);
    }
}

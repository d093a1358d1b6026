//! Running cells: what every cell needs (`CellContext`: the server, the run's settings,
//! the window clock, the gauge), the prefill sample (`prefill`), the fixed-duration decode
//! cell (`decode`), and the helpers around them (slot warm-up, gauge sampling, drain).

pub mod decode;
pub mod prefill;
pub mod rate;

pub use decode::{decode_cell, DecodeRun};
pub use prefill::{prefill_cell, sample_prompt, warm_up};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;

use super::client::http::HttpClient;
use super::client::stream::{run_stream, Failure, StreamSettings, WindowClock};
use super::engine::EngineKind;
use super::metrics::{gauge_values, metric_value, prefix_counters, spec_counters, spec_gauges};
use super::prompt::{request_body, Api};
use crate::format::{Cell, CellError, GaugeSample, Phase, Status};

/// The server's counters at one edge of a window, from one `/metrics` read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    /// (when it was read, the generated-tokens counter).
    pub tokens: Option<(f64, f64)>,
    /// The speculative-decoding counters, where the server keeps them.
    pub spec: Option<[f64; 3]>,
    /// The prefix-cache counters (queries, hits), where the server keeps them.
    pub prefix: Option<[f64; 2]>,
    /// SGLang's speculative-decoding gauges, where it has them.
    pub spec_gauges: Option<crate::format::SpecDecodeGauges>,
}

/// Everything a cell needs to know about the server and the run.
#[derive(Clone)]
pub struct CellContext {
    pub client: HttpClient,
    pub engine: EngineKind,
    pub metrics: bool,
    /// The server's generated-tokens counter, read at each window's edges.
    pub token_counter: Option<&'static str>,
    pub api: Api,
    pub model: String,
    pub max_output: u32,
    /// Prefix reuse of decode cells, in percent (`--prefix-reuse`).
    pub prefix_reuse: Option<u32>,
    /// Turns of each stream's conversation (`--turns`).
    pub turns: Option<u32>,
    /// The most tokens (prompt and output) one request may hold: the model's length, or one
    /// llama.cpp slot's context, where the server says.
    pub request_limit: Option<u64>,
    /// The server's KV block size (vLLM's `cache_config_info`): a prefix is cached in whole
    /// blocks only.
    pub block_tokens: Option<u64>,
    /// Requests sent with a prompt of their own so far, the run's cells together: each
    /// one's number, so no two requests of a run share more than the planned prefix.
    pub request_serial: Arc<std::sync::atomic::AtomicU64>,
    pub duration: Duration,
    pub warmup_hold: Duration,
    pub warmup_timeout: Duration,
    pub drain_timeout: Duration,
    pub stream: StreamSettings,
    pub clock: Arc<WindowClock>,
    pub gauge: Arc<Mutex<Vec<GaugeSample>>>,
    /// Device telemetry, when the run samples it.
    pub telemetry: Option<Arc<super::telemetry::Telemetry>>,
    /// The launched server's processes now, if any, for their CPU time.
    pub server: Arc<Mutex<Option<super::launch::tree::ServerTree>>>,
}

impl CellContext {
    /// The launched server's processes now, if any.
    pub fn server(&self) -> Option<super::launch::tree::ServerTree> {
        self.server.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl CellContext {
    fn body(&self, prompt: &str, max_tokens: u32) -> Bytes {
        Bytes::from(serde_json::to_vec(&request_body(self.api, &self.model, prompt, max_tokens, true)).expect("json"))
    }

    fn cell(&self, phase: Phase, context: u32, concurrency: u32, prompt_tokens: u64) -> Cell {
        Cell { prompt_tokens: Some(prompt_tokens as u32), ..Cell::new(phase, context, concurrency, Status::Valid) }
    }

    /// The server's (running, waiting) gauges now, if it has them.
    pub async fn gauges_now(&self) -> Option<(f64, Option<f64>)> {
        if !self.metrics {
            return None;
        }
        let (status, body) = self.client.get("/metrics").await.ok()?;
        if !status.is_success() {
            return None;
        }
        gauge_values(&String::from_utf8_lossy(&body), self.engine)
    }

    /// The server's generated-tokens counter now, with the run-clock time of the read (the
    /// middle of the request, so the request's own latency splits evenly).
    pub async fn counters_now(&self) -> Option<Counters> {
        if !self.metrics {
            return None;
        }
        let sent = self.clock.now_s();
        let (status, body) = self.client.get("/metrics").await.ok()?;
        let t = (sent + self.clock.now_s()) / 2.0;
        status.is_success().then_some(())?;
        let text = String::from_utf8_lossy(&body);
        let tokens = self.token_counter.and_then(|name| metric_value(&text, name)).map(|v| (t, v));
        Some(Counters {
            tokens,
            spec: spec_counters(&text),
            prefix: prefix_counters(&text),
            spec_gauges: spec_gauges(&text),
        })
    }

    /// Waits until the server reports no running requests, so one cell never leaks load
    /// into the next. Returns false if it did not drain in time.
    pub async fn drain(&self) -> bool {
        if !self.metrics {
            tokio::time::sleep(Duration::from_millis(200)).await;
            return true;
        }
        let deadline = tokio::time::Instant::now() + self.drain_timeout;
        loop {
            match self.gauges_now().await {
                Some((running, waiting)) if running <= 0.0 && waiting.unwrap_or(0.0) <= 0.0 => return true,
                None => return true,
                _ => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn error_cell(mut cell: Cell, f: Failure) -> Cell {
    cell.status = Status::Error;
    cell.error = Some(CellError { message: f.message, http_status: f.http_status, cause: f.cause });
    cell
}

/// llama.cpp keeps a prefix cache per slot: warm `c` slots with one-token requests so that
/// decode TTFT excludes prefill on every slot.
pub async fn warm_slots(cx: &CellContext, prompt: &str, c: u32, cancel: &watch::Receiver<bool>) {
    let mut tasks = Vec::new();
    for _ in 0..c {
        let (cx2, body, cancel) = (cx.clone(), cx.body(prompt, 1), cancel.clone());
        tasks.push(tokio::spawn(async move {
            run_stream(
                &cx2.client,
                cx2.api.path(),
                body,
                &cx2.clock,
                StreamSettings { detect_loops: false, ..cx2.stream },
                cancel,
                || {},
            )
            .await
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Samples the running-requests gauge every `interval` for the whole run.
pub fn spawn_gauge_sampler(
    cx: CellContext,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if !cx.metrics {
            return;
        }
        let mut tick = tokio::time::interval(interval);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.changed() => return,
            }
            let t = cx.clock.now_s();
            if let Some((running, waiting)) = cx.gauges_now().await {
                cx.gauge.lock().unwrap().push(GaugeSample { t_s: t, running, waiting });
            }
        }
    })
}

/// CPU seconds (user + system, all threads) this process has used so far.
pub fn process_cpu_s() -> Option<f64> {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(usage.ru_utime) + secs(usage.ru_stime))
}

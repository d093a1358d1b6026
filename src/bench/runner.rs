//! Running cells: the prefill sample (one `max_tokens: 1` request that also warms the
//! prefix cache) and the fixed-duration decode cell (exactly C streams in flight, warm-up,
//! window, cancel, drain).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;

use super::discover::{gauge_values, EngineKind};
use super::http::HttpClient;
use super::prompt::{request_body, Api};
use super::stream::{run_stream, Failure, StreamOutcome, StreamSettings, WindowClock};
use crate::format::{Cell, CellError, ErrorCause, GaugeSample, Measurement, Phase, Status, Warning, Window};

/// Everything a cell needs to know about the server and the run.
#[derive(Clone)]
pub struct CellContext {
    pub client: HttpClient,
    pub engine: EngineKind,
    pub metrics: bool,
    pub api: Api,
    pub model: String,
    pub max_output: u32,
    pub duration: Duration,
    pub warmup_hold: Duration,
    pub warmup_timeout: Duration,
    pub drain_timeout: Duration,
    pub stream: StreamSettings,
    pub clock: Arc<WindowClock>,
    pub gauge: Arc<Mutex<Vec<GaugeSample>>>,
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

/// The prefill sample: prompt tokens / TTFT of one streamed one-token request.
pub async fn prefill_cell(
    cx: &CellContext,
    context: u32,
    prompt: &str,
    prompt_tokens: u64,
    cancel: watch::Receiver<bool>,
) -> Cell {
    let mut cell = cx.cell(Phase::Prefill, context, 1, prompt_tokens);
    let out = run_stream(
        &cx.client,
        cx.api.path(),
        cx.body(prompt, 1),
        &cx.clock,
        StreamSettings { detect_loops: false, ..cx.stream },
        cancel,
        || {},
    )
    .await;
    if let Some(p) = out.record.prompt_tokens {
        cell.prompt_tokens = Some(p);
    }
    if let Some(f) = out.failure {
        return error_cell(cell, f);
    }
    if out.record.first_token_s.is_none() {
        let f = Failure { cause: Some(ErrorCause::NothingMeasured), ..Failure::new("the server sent no token") };
        return error_cell(cell, f);
    }
    cell.measurement =
        Some(Measurement { window: None, requests: vec![out.record], gauge: vec![], gauge_source: None });
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

/// Why a decode cell stopped early.
enum Stop {
    Failure(Failure),
    Looped(crate::format::LoopFinding),
}

/// One fixed-duration decode cell with exactly `c` streams in flight.
pub async fn decode_cell(
    cx: &CellContext,
    context: u32,
    c: u32,
    prompt: &str,
    prompt_tokens: u64,
    interrupt: watch::Receiver<bool>,
) -> (Cell, bool) {
    let mut cell = cx.cell(Phase::Decode, context, c, prompt_tokens);
    let body = cx.body(prompt, cx.max_output);
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let ready = Arc::new(AtomicUsize::new(0));
    let stop: Arc<Mutex<Option<Stop>>> = Arc::new(Mutex::new(None));
    let stopped = Arc::new(tokio::sync::Notify::new());
    let records: Arc<Mutex<Vec<StreamOutcome>>> = Arc::new(Mutex::new(Vec::new()));
    let window_closed = Arc::new(AtomicBool::new(false));

    let mut workers = Vec::new();
    for _ in 0..c {
        let (cx, body, cancel_rx) = (cx.clone(), body.clone(), cancel_rx.clone());
        let (ready, stop, stopped, records, window_closed) =
            (ready.clone(), stop.clone(), stopped.clone(), records.clone(), window_closed.clone());
        workers.push(tokio::spawn(async move {
            let mut counted = false;
            loop {
                if *cancel_rx.borrow() || window_closed.load(Ordering::SeqCst) {
                    break;
                }
                let out = run_stream(
                    &cx.client,
                    cx.api.path(),
                    body.clone(),
                    &cx.clock,
                    cx.stream,
                    cancel_rx.clone(),
                    || {
                        if !counted {
                            counted = true;
                            ready.fetch_add(1, Ordering::SeqCst);
                        }
                    },
                )
                .await;
                let stop_now = if let Some(f) = &out.failure {
                    stop.lock().unwrap().get_or_insert(Stop::Failure(f.clone()));
                    true
                } else if let Some(f) = &out.loop_finding {
                    stop.lock().unwrap().get_or_insert(Stop::Looped(f.clone()));
                    true
                } else {
                    out.cancelled
                };
                records.lock().unwrap().push(out);
                if stop_now {
                    stopped.notify_one();
                    break;
                }
            }
        }));
    }

    let mut warnings = Vec::new();
    let mut interrupt2 = interrupt.clone();
    // Warm-up: every stream has produced tokens and (where the server says) C are running
    // and none wait; then hold a little so the batch is steady.
    let warm_deadline = tokio::time::Instant::now() + cx.warmup_timeout;
    let mut interrupted = false;
    let mut early_stop = false;
    loop {
        if stop.lock().unwrap().is_some() {
            early_stop = true;
            break;
        }
        if *interrupt.borrow() {
            interrupted = true;
            break;
        }
        let all_ready = ready.load(Ordering::SeqCst) >= c as usize;
        let server_ready = match cx.gauges_now().await {
            Some((running, waiting)) => running >= c as f64 && waiting.unwrap_or(0.0) <= 0.0,
            None => true,
        };
        if all_ready && server_ready {
            break;
        }
        if tokio::time::Instant::now() >= warm_deadline {
            warnings.push(Warning {
                code: "warmup_timed_out".into(),
                message: format!(
                    "warm-up did not see all {c} streams active within {:.0} s ({} had tokens); the window was measured anyway",
                    cx.warmup_timeout.as_secs_f64(),
                    ready.load(Ordering::SeqCst)
                ),
            });
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = stopped.notified() => {}
            _ = interrupt2.changed() => {}
        }
    }
    if !early_stop && !interrupted {
        tokio::select! {
            _ = tokio::time::sleep(cx.warmup_hold) => {}
            _ = stopped.notified() => {}
            _ = interrupt2.changed() => {}
        }
    }
    let start_s = cx.clock.now_s();
    let end_s = start_s + cx.duration.as_secs_f64();
    if stop.lock().unwrap().is_none() && !*interrupt.borrow() {
        cx.clock.open(start_s, end_s);
        tokio::select! {
            _ = tokio::time::sleep(cx.duration) => {}
            _ = stopped.notified() => {}
            _ = interrupt2.changed() => {}
        }
    }
    if *interrupt.borrow() {
        interrupted = true;
    }
    window_closed.store(true, Ordering::SeqCst);
    let _ = cancel_tx.send(true);
    for w in workers {
        let _ = w.await;
    }
    let drained = cx.drain().await;
    cx.clock.open(f64::INFINITY, f64::INFINITY);

    let outcomes = std::mem::take(&mut *records.lock().unwrap());
    if let Some(p) = outcomes.iter().find_map(|o| o.record.prompt_tokens) {
        cell.prompt_tokens = Some(p);
    }
    let mut requests: Vec<_> = outcomes.into_iter().map(|o| o.record).collect();
    apply_final_usage_ratio(&mut requests);
    if !requests.is_empty()
        && requests.iter().all(|r| r.token_source == crate::format::TokenSource::Chunks)
        && requests.iter().any(|r| r.tokens > 0)
    {
        let message = if requests.iter().any(|r| r.finish_reason.is_some()) {
            "the server sent no usage figures: tokens were counted one per chunk"
        } else {
            "no request finished inside the cell, so no final usage checked the chunk count: tokens were counted one per chunk"
        };
        warnings.push(Warning { code: "chunk_count_fallback".into(), message: message.into() });
    }
    if !drained {
        warnings.push(Warning {
            code: "not_drained".into(),
            message: format!(
                "the server still reported running requests {:.0} s after the cell",
                cx.drain_timeout.as_secs_f64()
            ),
        });
    }
    let gauge: Vec<GaugeSample> =
        cx.gauge.lock().unwrap().iter().filter(|g| g.t_s >= start_s && g.t_s <= end_s).copied().collect();
    let gauge_source = if gauge.is_empty() { None } else { cx.engine.gauges().map(|g| g.0.to_string()) };
    cell.warnings = warnings;
    let measurement = Measurement { window: Some(Window { start_s, end_s }), requests, gauge, gauge_source };
    let stopped_by = stop.lock().unwrap().take();
    match stopped_by {
        Some(Stop::Failure(f)) => {
            cell.measurement = Some(measurement);
            (error_cell(cell, f), interrupted)
        }
        Some(Stop::Looped(f)) => {
            cell.status = Status::Looped;
            cell.loop_finding = Some(f);
            cell.measurement = Some(measurement);
            (cell, interrupted)
        }
        None if !interrupted && measurement.requests.iter().all(|r| r.window_tokens == 0) => {
            // Nothing to divide: no answer, or no token inside the window, is no 0 tok/s.
            let why = if measurement.requests.iter().any(|r| r.first_token_s.is_some()) {
                "no token arrived inside the measurement window"
            } else {
                "the server answered no request with a token during the cell"
            };
            cell.measurement = Some(measurement);
            let f = Failure { cause: Some(ErrorCause::NothingMeasured), ..Failure::new(why) };
            (error_cell(cell, f), interrupted)
        }
        None => {
            cell.measurement = Some(measurement);
            (cell, interrupted)
        }
    }
}

/// Streams cut at the window's end never see a final usage. Where the cell's finished
/// streams showed how many tokens a chunk carries (usage only at the end), the cut streams'
/// chunk counts are scaled by that ratio.
fn apply_final_usage_ratio(requests: &mut [crate::format::RequestRecord]) {
    use crate::format::TokenSource;
    let (tokens, chunks) = requests
        .iter()
        .filter(|r| r.token_source == TokenSource::ChunksCheckedByFinalUsage)
        .fold((0u64, 0u64), |(t, c), r| (t.saturating_add(r.tokens), c.saturating_add(r.chunks)));
    if chunks == 0 {
        return;
    }
    let ratio = tokens as f64 / chunks as f64;
    for r in requests.iter_mut().filter(|r| r.token_source == TokenSource::Chunks) {
        r.tokens = (r.chunks as f64 * ratio).round() as u64;
        r.window_tokens = (r.window_tokens as f64 * ratio).round() as u64;
        r.token_source = TokenSource::ChunksCheckedByFinalUsage;
    }
}

/// Samples the running-requests gauge about once a second for the whole run.
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

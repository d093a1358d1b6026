//! The fixed-duration decode cell: exactly C streams in flight, each replaced as soon as it
//! finishes; warm-up until all C produce tokens (and the server, where it says, runs C and
//! queues none), a short hold, the measurement window, then cancel and drain.
//!
//! As in oha, the workers only stream and send what happened down a channel; the
//! coordinator alone decides when the cell moves on and what the cell is.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{error_cell, CellContext, Counters};
use crate::bench::client::stream::{run_stream, Failure, StreamOutcome};
use crate::bench::client::tokens::apply_final_usage_ratio;
use crate::format::{
    Cell, ErrorCause, GaugeSample, LoopFinding, Measurement, Phase, RequestRecord, ServerTokenCount, Status,
    TokenSource, Warning, Window,
};

/// How a decode cell ended.
#[derive(Debug)]
pub enum DecodeRun {
    /// Measured (valid, looped or error): the cell to keep.
    Done(Box<Cell>),
    /// Ctrl-C: nothing to keep.
    Interrupted,
}

/// What a worker reports.
enum WorkerEvent {
    /// The worker's first stream produced its first token.
    FirstToken,
    Finished(Box<StreamOutcome>),
}

/// Why a decode cell stopped before its window ended.
enum Stop {
    Failure(Failure),
    Looped(LoopFinding),
}

/// One fixed-duration decode cell with exactly `c` streams in flight.
pub async fn decode_cell(
    cx: &CellContext,
    context: u32,
    c: u32,
    prompt: &str,
    prompt_tokens: u64,
    interrupt: watch::Receiver<bool>,
) -> DecodeRun {
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let (events_tx, events) = mpsc::unbounded_channel();
    let bodies = Arc::new(Bodies::new(cx, prompt));
    let prompt: Arc<str> = Arc::from(prompt);
    let cut_short = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let workers: Vec<_> = (0..c)
        .map(|_| {
            let stream = Stream { bodies: bodies.clone(), prompt: prompt.clone(), cut_short: cut_short.clone() };
            tokio::spawn(worker(cx.clone(), stream, cancel_rx.clone(), events_tx.clone()))
        })
        .collect();
    drop(events_tx);
    let mut run =
        Coordinator { cx, c, events, interrupt, interrupt_gone: false, ready: 0, outcomes: Vec::new(), stop: None };
    let warm_up = run.warm_up().await;
    run.pump_for(cx.warmup_hold).await;
    let mut edges = Edges::default();
    if !run.stopped() {
        edges.open(cx).await;
    }
    let start_s = cx.clock.now_s();
    let end_s = start_s + cx.duration.as_secs_f64();
    if !run.stopped() {
        cx.clock.open(start_s, end_s);
        run.pump_for(cx.duration).await;
        edges.close(cx).await;
    }
    let _ = cancel_tx.send(true);
    for w in workers {
        let _ = w.await;
    }
    run.collect_remaining();
    let drained = cx.drain().await;
    cx.clock.open(f64::INFINITY, f64::INFINITY);
    if *run.interrupt.borrow() {
        return DecodeRun::Interrupted;
    }
    let gauge = cx.gauge.lock().unwrap().iter().filter(|g| g.t_s >= start_s && g.t_s <= end_s).copied().collect();
    let mut cell = finish_cell(
        cx,
        cx.cell(Phase::Decode, context, c, prompt_tokens),
        Window { start_s, end_s },
        gauge,
        run.outcomes,
        run.stop,
    );
    if let Some(m) = cell.measurement.as_mut() {
        (m.server_tokens, m.client_cpu_s) = edges.facts(cx);
        m.machine = edges.machine(cx);
        m.spec_decode = edges.spec_decode();
        m.prefix_cache = edges.prefix_cache();
        // Gauges only where no counters: the counters cover the window, the gauges a batch.
        m.spec_decode_gauges = if m.spec_decode.is_none() { edges.count_close.spec_gauges } else { None };
        let planned = cx.prefix_reuse.map(|p| (p, m.cached_prompt_pct()));
        let blocks = cx.block_tokens.map(|b| (b, prompt_tokens));
        cell.warnings.extend(planned.and_then(|(p, measured)| reuse_warning(p, measured?, blocks)));
        m.telemetry = cx.telemetry.as_ref().map(|t| t.between(start_s, end_s)).unwrap_or_default();
    }
    if let Some(o) = cell.measurement.as_ref().and_then(|m| held_in_queue(c, &m.gauge)) {
        // The server never ran all C at once: the figure is of fewer streams, not of C.
        cell.status = Status::OverCapacity;
        cell.over_capacity = Some(o);
    }
    let not_drained = (!drained).then(|| not_drained(cx.drain_timeout));
    cell.warnings.extend(turns_cut_short(cx, cut_short.load(Ordering::Relaxed)));
    cell.warnings = warm_up.into_iter().chain(cell.warnings).chain(not_drained).collect();
    DecodeRun::Done(Box::new(cell))
}

/// The request bodies of a cell's streams: one prompt sent again and again, or (with
/// `--prefix-reuse`) a prompt of its own for each request, sharing the planned prefix.
enum Bodies {
    Same(Bytes),
    Reuse { prompt: String, pct: u32 },
}

impl Bodies {
    fn new(cx: &CellContext, prompt: &str) -> Bodies {
        match cx.prefix_reuse {
            Some(pct) => Bodies::Reuse { prompt: prompt.to_string(), pct },
            None => Bodies::Same(cx.body(prompt, cx.max_output)),
        }
    }

    fn next(&self, cx: &CellContext) -> Bytes {
        match self {
            Bodies::Same(body) => body.clone(),
            Bodies::Reuse { prompt, pct } => {
                let n = cx.request_serial.fetch_add(1, Ordering::Relaxed);
                cx.body(&crate::bench::prompt::reuse_prompt(prompt, *pct, n), cx.max_output)
            }
        }
    }
}

/// The most text a conversation's later turns add before a new one begins.
const MAX_CONVERSATION_GROWTH: usize = 1 << 20;

/// What a worker sends: the cell's bodies, and its sized prompt (a conversation's first turn).
struct Stream {
    bodies: Arc<Bodies>,
    prompt: Arc<str>,
    /// Conversations of the cell begun anew because their next turn would not fit.
    cut_short: Arc<std::sync::atomic::AtomicU32>,
}

/// Tokens a next turn's question adds to a conversation, at most (`prompt::next_question`
/// and the chat template's turn markers).
const QUESTION_TOKENS: u64 = 64;

/// A stream's conversation (`--turns`): its messages so far and the turn to send.
struct Conversation {
    turns: u32,
    turn: u32,
    messages: Vec<(&'static str, String)>,
}

impl Conversation {
    /// The next turn's body and number: the conversation goes on with the last answer and a
    /// new question, or (after its last turn, or an answer it did not get) a new one begins,
    /// numbered apart from every other of the run. `used` is the last turn's prompt and
    /// output tokens: a next turn that could not fit in the server's length (`cx.request_limit`)
    /// is not sent (the server would refuse it and end the cell): the conversation is begun
    /// anew, counted in `cut_short`.
    fn next(
        &mut self,
        cx: &CellContext,
        prompt: &str,
        answer: Option<(String, Option<u64>)>,
        cut_short: &std::sync::atomic::AtomicU32,
    ) -> (Bytes, u32) {
        // A conversation grown past its first prompt by more than this is begun anew: a
        // server's answers cannot make a stream hold more (32 turns of 256 KiB answers
        // would be 8 MiB a stream).
        let size: usize = self.messages.iter().map(|(_, m)| m.len()).sum();
        let fits = |a: &String| size + a.len() <= prompt.len() + MAX_CONVERSATION_GROWTH;
        let goes_on = self.turn > 0 && self.turn < self.turns;
        let room = |used: Option<u64>| match (cx.request_limit, used) {
            (Some(limit), Some(used)) => used + QUESTION_TOKENS + u64::from(cx.max_output) <= limit,
            _ => true,
        };
        if answer.as_ref().is_some_and(|(a, used)| goes_on && fits(a) && !room(*used)) {
            cut_short.fetch_add(1, Ordering::Relaxed);
        }
        let answer = answer.filter(|(a, used)| room(*used) && fits(a)).map(|(a, _)| a);
        match answer.filter(|_| goes_on) {
            Some(answer) => {
                self.turn += 1;
                self.messages.push(("assistant", answer));
                self.messages.push(("user", crate::bench::prompt::next_question(self.turn)));
            }
            None => {
                let id = cx.request_serial.fetch_add(1, Ordering::Relaxed);
                self.turn = 1;
                // With --prefix-reuse the first turn shares the planned prefix with the other
                // conversations (a common system prompt); later turns reuse their own.
                let first = match cx.prefix_reuse {
                    Some(pct) => crate::bench::prompt::reuse_prompt(prompt, pct, id),
                    None => format!("[conversation {id}] {prompt}"),
                };
                self.messages = vec![("user", first)];
            }
        }
        let body = crate::bench::prompt::conversation_body(&cx.model, &self.messages, cx.max_output);
        (Bytes::from(serde_json::to_vec(&body).expect("json")), self.turn)
    }
}

/// Streams one request after another until the cell cancels, a stream fails or loops.
async fn worker(
    cx: CellContext,
    stream: Stream,
    cancel: watch::Receiver<bool>,
    events: mpsc::UnboundedSender<WorkerEvent>,
) {
    let mut first = true;
    let mut conversation = cx.turns.map(|turns| Conversation { turns, turn: 0, messages: Vec::new() });
    let mut answer: Option<(String, Option<u64>)> = None;
    while !*cancel.borrow() {
        let on_first_token = || {
            if std::mem::take(&mut first) {
                let _ = events.send(WorkerEvent::FirstToken);
            }
        };
        let (body, turn) = match conversation.as_mut() {
            Some(c) => c.next(&cx, &stream.prompt, answer.take(), &stream.cut_short),
            None => (stream.bodies.next(&cx), 0),
        };
        let mut out =
            run_stream(&cx.client, cx.api.path(), body, &cx.clock, cx.stream, cancel.clone(), on_first_token).await;
        out.record.turn = u64::from(turn);
        let used = out.record.prompt_tokens.map(|p| u64::from(p) + out.record.tokens);
        answer = out.answer.take().filter(|_| out.record.finish_reason.is_some()).map(|a| (a, used));
        let last = out.failure.is_some() || out.loop_finding.is_some() || out.cancelled;
        let _ = events.send(WorkerEvent::Finished(Box::new(out)));
        if last {
            break;
        }
    }
}

struct Coordinator<'a> {
    cx: &'a CellContext,
    c: u32,
    events: mpsc::UnboundedReceiver<WorkerEvent>,
    interrupt: watch::Receiver<bool>,
    /// Nothing can interrupt any more (the Ctrl-C listener is gone).
    interrupt_gone: bool,
    /// Workers whose first stream has produced a token.
    ready: u32,
    outcomes: Vec<StreamOutcome>,
    /// The first stream that failed or looped: it ends the cell.
    stop: Option<Stop>,
}

impl Coordinator<'_> {
    fn stopped(&self) -> bool {
        self.stop.is_some() || *self.interrupt.borrow()
    }

    fn take(&mut self, event: WorkerEvent) {
        match event {
            WorkerEvent::FirstToken => self.ready += 1,
            WorkerEvent::Finished(out) => {
                if self.stop.is_none() {
                    self.stop = match (&out.failure, &out.loop_finding) {
                        (Some(f), _) => Some(Stop::Failure(f.clone())),
                        (None, Some(l)) => Some(Stop::Looped(l.clone())),
                        (None, None) => None,
                    };
                }
                self.outcomes.push(*out);
            }
        }
    }

    /// Takes worker events for `duration`, or until the cell stops or Ctrl-C.
    async fn pump_for(&mut self, duration: Duration) {
        let deadline = tokio::time::sleep(duration);
        tokio::pin!(deadline);
        while !self.stopped() {
            let event = tokio::select! {
                _ = &mut deadline => return,
                Some(event) = self.events.recv() => Some(event),
                gone = async { self.interrupt.wait_for(|i| *i).await.is_err() }, if !self.interrupt_gone => {
                    self.interrupt_gone = gone;
                    None
                }
            };
            if let Some(event) = event {
                self.take(event);
            }
        }
    }

    /// Waits until all C streams have tokens and (where the server says) C run and none
    /// wait; a warning if that did not happen within the warm-up timeout.
    async fn warm_up(&mut self) -> Option<Warning> {
        let deadline = Instant::now() + self.cx.warmup_timeout;
        while !self.stopped() {
            // Where the server reports its queue, none waiting is all admitted (its running
            // gauge lags: vLLM leaves out requests in their prefill step); else C running.
            let server_ready = match self.cx.gauges_now().await {
                Some((_, Some(waiting))) => waiting <= 0.0,
                Some((running, None)) => running >= self.c as f64,
                None => true,
            };
            if self.ready >= self.c && server_ready {
                return None;
            }
            if Instant::now() >= deadline {
                return Some(Warning {
                    code: "warmup_timed_out".into(),
                    message: format!(
                        "warm-up did not see all {} streams active within {:.0} s ({} had tokens); the window was measured anyway",
                        self.c,
                        self.cx.warmup_timeout.as_secs_f64(),
                        self.ready
                    ),
                });
            }
            self.pump_for(Duration::from_millis(50)).await;
        }
        None
    }

    /// The outcomes the workers sent after the window closed (their cancelled streams).
    fn collect_remaining(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            self.take(event);
        }
    }
}

/// What is read at the window's edges besides the clock: the server's token counter and this
/// process's CPU time.
#[derive(Default)]
struct Edges {
    count_open: Counters,
    count_close: Counters,
    cpu_open: Option<f64>,
    cpu_close: Option<f64>,
    machine_open: Option<(f64, crate::bench::machine::Snapshot)>,
    machine_close: Option<(f64, crate::bench::machine::Snapshot)>,
}

impl Edges {
    async fn open(&mut self, cx: &CellContext) {
        self.count_open = cx.counters_now().await.unwrap_or_default();
        self.cpu_open = super::process_cpu_s();
        self.machine_open = crate::bench::machine::snapshot(cx.server().as_ref()).map(|m| (cx.clock.now_s(), m));
    }

    async fn close(&mut self, cx: &CellContext) {
        self.machine_close = crate::bench::machine::snapshot(cx.server().as_ref()).map(|m| (cx.clock.now_s(), m));
        self.cpu_close = super::process_cpu_s();
        self.count_close = cx.counters_now().await.unwrap_or_default();
    }

    /// The machine's load between the edges.
    fn machine(&self, cx: &CellContext) -> Option<crate::format::MachineLoad> {
        let ((t0, a), (t1, b)) = (self.machine_open?, self.machine_close?);
        crate::bench::machine::between(a, b, t1 - t0, cx.client.endpoint.is_loopback())
    }

    fn facts(&self, cx: &CellContext) -> (Option<ServerTokenCount>, Option<f64>) {
        let count = match (cx.token_counter, self.count_open.tokens, self.count_close.tokens) {
            // A counter that went down was reset (server restart): no count.
            (Some(name), Some((t0, v0)), Some((t1, v1))) if t1 > t0 && v1 >= v0 => {
                Some(ServerTokenCount { counter: name.to_string(), start_s: t0, end_s: t1, tokens: v1 - v0 })
            }
            _ => None,
        };
        let cpu = self.cpu_open.zip(self.cpu_close).map(|(a, b)| (b - a).max(0.0));
        (count, cpu)
    }

    /// The prefix-cache counters' growth across the window.
    fn prefix_cache(&self) -> Option<crate::format::PrefixCacheCount> {
        crate::bench::metrics::prefix_between(self.count_open.prefix?, self.count_close.prefix?)
    }

    /// The speculative-decoding counters' growth across the window.
    fn spec_decode(&self) -> Option<crate::format::SpecDecodeCount> {
        crate::bench::metrics::spec_between(self.count_open.spec?, self.count_close.spec?)
    }
}

/// Over capacity as measured: every gauge reading of the window (at least three) found
/// requests waiting in the server's queue, so the C streams never ran at once (a cache that
/// holds fewer of them than planned: whole blocks, a chat template).
fn held_in_queue(c: u32, gauge: &[crate::format::GaugeSample]) -> Option<crate::format::OverCapacity> {
    let waiting: Vec<f64> = gauge.iter().map(|g| g.waiting).collect::<Option<_>>()?;
    (waiting.len() >= 3 && waiting.iter().all(|w| *w >= 1.0)).then(|| crate::format::OverCapacity {
        rule: crate::format::CapacityRule::ServerQueue,
        required_tokens: u64::from(c),
        budget_tokens: gauge.iter().map(|g| g.running).reduce(f64::max).map(|r| r.max(0.0) as u64),
    })
}

/// How far a cell's measured prefix reuse may be from the plan, in percentage points,
/// before the cell says so.
const REUSE_TOLERANCE_PCT: f64 = 15.0;

/// A measured reuse far from the plan; with a block cache, the share its whole blocks allow
/// and the block size named (vLLM caches full blocks only: a 90% prefix of a 256-token prompt
/// in blocks of 128 is one block, 50%).
fn reuse_warning(planned: u32, measured: f64, blocks: Option<(u64, u64)>) -> Option<Warning> {
    if (measured - planned as f64).abs() <= REUSE_TOLERANCE_PCT {
        return None;
    }
    let why = blocks.filter(|(b, p)| *b > 0 && *p > 0).map(|(block, prompt)| {
        let allowed = reuse_blocks_allow(planned, block, prompt);
        format!(
            ": the server caches whole blocks of {block} tokens (its cache_config_info), so of a {prompt}-token prompt with a {planned}% shared prefix at most {allowed:.1}% can be found cached"
        )
    });
    Some(Warning {
        code: "prefix_reuse_off".into(),
        message: format!(
            "the server served {measured:.0}% of the prompt tokens from its prefix cache, {planned}% planned (--prefix-reuse){}; this cell did not measure the reuse it names",
            why.unwrap_or_default()
        ),
    })
}

/// The share of a prompt (percent) a cache of whole `block`-token blocks can serve when its
/// first `planned` percent is shared.
pub fn reuse_blocks_allow(planned: u32, block: u64, prompt: u64) -> f64 {
    let shared = prompt * u64::from(planned.min(100)) / 100;
    (shared / block * block) as f64 / prompt as f64 * 100.0
}

/// Conversations that ended before their last turn because it would not fit the server's
/// length: the cell measured shorter conversations than `--turns` asked.
fn turns_cut_short(cx: &CellContext, n: u32) -> Option<Warning> {
    let (turns, limit) = (cx.turns?, cx.request_limit?);
    (n > 0).then(|| Warning {
        code: "turns_cut_short".into(),
        message: format!(
            "{n} conversations were begun anew before their turn {turns}: the next turn (its history, a question and {} output tokens) would pass the server's {limit} tokens a request",
            cx.max_output
        ),
    })
}

fn not_drained(drain_timeout: Duration) -> Warning {
    Warning {
        code: "not_drained".into(),
        message: format!(
            "the server still reported running requests {:.0} s after the cell",
            drain_timeout.as_secs_f64()
        ),
    }
}

/// The cell from its streams: records with the token counts settled, warnings, status.
fn finish_cell(
    cx: &CellContext,
    mut cell: Cell,
    window: Window,
    gauge: Vec<GaugeSample>,
    outcomes: Vec<StreamOutcome>,
    stop: Option<Stop>,
) -> Cell {
    if let Some(p) = outcomes.iter().find_map(|o| o.record.prompt_tokens) {
        cell.prompt_tokens = Some(p);
    }
    let malformed = outcomes.iter().filter(|o| o.malformed_cached_tokens).count();
    let mut requests: Vec<RequestRecord> = outcomes.into_iter().map(|o| o.record).collect();
    apply_final_usage_ratio(&mut requests);
    cell.warnings.extend(chunk_count_warning(&requests));
    cell.warnings.extend(cached_count_warning(&requests, malformed));
    let gauge_source = if gauge.is_empty() { None } else { cx.engine.gauges().map(|g| g.0.to_string()) };
    let nothing_measured = requests.iter().all(|r| r.window_tokens == 0);
    let answered = requests.iter().any(|r| r.first_token_s.is_some());
    cell.measurement = Some(Measurement { gauge, gauge_source, ..Measurement::of_requests(Some(window), requests) });
    match stop {
        Some(Stop::Failure(f)) => error_cell(cell, f),
        Some(Stop::Looped(found)) => Cell { status: Status::Looped, loop_finding: Some(found), ..cell },
        None if nothing_measured => {
            // Nothing to divide: no answer, or no token inside the window, is no 0 tok/s.
            let why = if answered {
                "no token arrived inside the measurement window"
            } else {
                "the server answered no request with a token during the cell"
            };
            error_cell(cell, Failure { cause: Some(ErrorCause::NothingMeasured), ..Failure::new(why) })
        }
        None => cell,
    }
}

/// The server's cached-token counts that could not be true: more than the prompt (counted as
/// the whole prompt) or no count at all (dropped).
fn cached_count_warning(requests: &[RequestRecord], malformed: usize) -> Option<Warning> {
    let over = requests
        .iter()
        .filter(|r| r.cached_prompt_tokens.zip(r.prompt_tokens).is_some_and(|(c, p)| c > u64::from(p)))
        .count();
    let mut said = Vec::new();
    if over > 0 {
        said.push(format!("{over} requests said more prompt tokens came from the cache than the prompt held (counted as the whole prompt)"));
    }
    if malformed > 0 {
        said.push(format!("{malformed} requests gave a cached-token count that was no count (left out)"));
    }
    (!said.is_empty()).then(|| Warning {
        code: "cached_count_off".into(),
        message: format!("the server's cache figures: {}", said.join("; ")),
    })
}

/// Every token counted one per chunk: the cell says so, and why.
fn chunk_count_warning(requests: &[RequestRecord]) -> Option<Warning> {
    let fallback = !requests.is_empty()
        && requests.iter().all(|r| r.token_source == TokenSource::Chunks)
        && requests.iter().any(|r| r.tokens > 0);
    if !fallback {
        return None;
    }
    let message = if requests.iter().any(|r| r.finish_reason.is_some()) {
        "the server sent no usage figures: tokens were counted one per chunk"
    } else {
        "no request finished inside the cell, so no final usage checked the chunk count: tokens were counted one per chunk"
    };
    Some(Warning { code: "chunk_count_fallback".into(), message: message.into() })
}

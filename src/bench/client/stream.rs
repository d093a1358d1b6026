//! One streamed request, timed chunk by chunk: first and last token, tokens inside the
//! cell's window (counted by `tokens::TokenCounter`), loop detection per channel, and every
//! way a stream can fail.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, StatusCode};
use tokio::sync::watch;

use super::http::{HttpClient, Unreachable};
use super::protocol::{error_body_message, parse_chunk, Chunk};
use super::sse::{SseLine, SseParser};
use super::tokens::{ChunkTokens, TokenCounter};
use crate::bench::loopdetect::{LoopDetector, LoopSettings};
use crate::format::{ErrorCause, LoopFinding, RequestRecord};

/// The cell's window, shared by its streams; set by the coordinator when warm-up ends.
pub struct WindowClock {
    pub origin: Instant,
    start: AtomicU64,
    end: AtomicU64,
    /// Tokens seen by all streams of the cell (live progress).
    pub live_tokens: AtomicU64,
}

impl WindowClock {
    pub fn new(origin: Instant) -> Arc<WindowClock> {
        Arc::new(WindowClock {
            origin,
            start: AtomicU64::new(f64::INFINITY.to_bits()),
            end: AtomicU64::new(f64::INFINITY.to_bits()),
            live_tokens: AtomicU64::new(0),
        })
    }
    pub fn now_s(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }
    pub fn open(&self, start_s: f64, end_s: f64) {
        self.end.store(end_s.to_bits(), Ordering::SeqCst);
        self.start.store(start_s.to_bits(), Ordering::SeqCst);
    }
    pub fn start_s(&self) -> f64 {
        f64::from_bits(self.start.load(Ordering::Relaxed))
    }
    pub fn end_s(&self) -> f64 {
        f64::from_bits(self.end.load(Ordering::Relaxed))
    }
    fn inside(&self, t: f64) -> bool {
        t >= self.start_s() && t <= self.end_s()
    }
}

#[derive(Debug, Clone, Copy)]
pub struct StreamSettings {
    /// A stream with no bytes for this long has stalled.
    pub stall_timeout: Duration,
    pub loop_settings: LoopSettings,
    pub detect_loops: bool,
    /// Keep the answer's text (a conversation's next turn carries it), up to
    /// `MAX_ANSWER_BYTES`.
    pub keep_answer: bool,
}

/// The most of an answer kept for a conversation's next turn.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// How a request failed: the message (scrubbed of secrets, bounded in length), the HTTP
/// status where there was one, and the cause where it matters to the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub message: String,
    pub http_status: Option<u16>,
    pub cause: Option<ErrorCause>,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Failure {
        Failure { message: bounded_message(&message.into()), http_status: None, cause: None }
    }
    pub fn http(status: u16, message: String) -> Failure {
        Failure { http_status: Some(status), ..Failure::new(message) }
    }
    pub fn unreachable(message: String) -> Failure {
        Failure { cause: Some(ErrorCause::Unreachable), ..Failure::new(message) }
    }
}

/// The longest error message kept: a server's error page can be megabytes.
pub const MAX_ERROR_CHARS: usize = 2000;

/// `message` cut to [`MAX_ERROR_CHARS`] characters, with a note saying how much was cut.
pub fn bounded_message(message: &str) -> String {
    let total = message.chars().count();
    if total <= MAX_ERROR_CHARS {
        return message.to_string();
    }
    let kept: String = message.chars().take(MAX_ERROR_CHARS).collect();
    format!("{kept}… (truncated: {} more characters)", total - MAX_ERROR_CHARS)
}

/// The most of an error response's body that is read.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

pub struct StreamOutcome {
    pub record: RequestRecord,
    pub loop_finding: Option<LoopFinding>,
    /// The failure, with the HTTP status where there was one.
    pub failure: Option<Failure>,
    /// Ended by the cell (window over, or another stream's failure), not by the server.
    pub cancelled: bool,
    /// The answer's text (content, not reasoning), where the settings keep it.
    pub answer: Option<String>,
    /// The server sent a cached-token count that was no count (dropped from the record).
    pub malformed_cached_tokens: bool,
}

impl StreamOutcome {
    /// A request that ended before its stream began.
    fn before_stream(mut record: RequestRecord, clock: &WindowClock, end: Ended) -> StreamOutcome {
        record.end_s = Some(clock.now_s());
        let (failure, cancelled) = match end {
            Ended::Failed(f) => (Some(f), false),
            _ => (None, true),
        };
        record.error = failure.as_ref().map(|f| f.message.clone());
        StreamOutcome { record, loop_finding: None, failure, cancelled, answer: None, malformed_cached_tokens: false }
    }
}

/// Why reading a stream stopped.
enum Ended {
    /// `data: [DONE]` or the end of the body.
    Finished,
    Cancelled,
    Failed(Failure),
    Looped(LoopFinding),
}

/// Streams one request. `on_first_token` is called once, on the first token; `cancel`
/// ends the stream (the connection is closed, so the server frees the request).
pub async fn run_stream(
    client: &HttpClient,
    path: &str,
    body: Bytes,
    clock: &WindowClock,
    settings: StreamSettings,
    mut cancel: watch::Receiver<bool>,
    on_first_token: impl FnMut(),
) -> StreamOutcome {
    let record = RequestRecord::sent_at(clock.now_s());
    // A server silent before its response head has stalled as surely as one silent mid-stream.
    let sent = tokio::select! {
        r = tokio::time::timeout(settings.stall_timeout, client.send(Method::POST, path, Some(body))) => match r {
            Ok(r) => r,
            Err(_) => Err(anyhow::anyhow!(
                "no response within {:.0} s (--stall-timeout)",
                settings.stall_timeout.as_secs_f64()
            )),
        },
        _ = cancel.changed() => return StreamOutcome::before_stream(record, clock, Ended::Cancelled),
    };
    let (status, body) = match sent {
        Ok(x) => x,
        Err(e) => {
            let msg = client.scrub(&format!("{e:#}"));
            let failure = if e.is::<Unreachable>() { Failure::unreachable(msg) } else { Failure::new(msg) };
            return StreamOutcome::before_stream(record, clock, Ended::Failed(failure));
        }
    };
    if !status.is_success() {
        let failure = http_failure(client, status, body, settings.stall_timeout).await;
        return StreamOutcome::before_stream(record, clock, Ended::Failed(failure));
    }
    let mut reader = StreamReader { parser: SseParser::default(), state: StreamState::new(record, settings) };
    let ended = reader.read(body, clock, settings.stall_timeout, &mut cancel, on_first_token).await;
    reader.finish(ended, clock, client)
}

/// The failure of a non-2xx answer, with the server's message from its (bounded) body.
async fn http_failure(client: &HttpClient, status: StatusCode, body: Incoming, stall: Duration) -> Failure {
    let limited = http_body_util::Limited::new(body, MAX_ERROR_BODY_BYTES);
    let bytes = match tokio::time::timeout(stall, limited.collect()).await {
        Ok(Ok(c)) => c.to_bytes(),
        Ok(Err(_)) => Bytes::from(format!("(an error body over {MAX_ERROR_BODY_BYTES} bytes, not read)")),
        Err(_) => Bytes::new(),
    };
    let msg = format!("HTTP {}: {}", status.as_u16(), error_body_message(&bytes));
    Failure::http(status.as_u16(), client.scrub(&msg))
}

struct StreamReader {
    parser: SseParser,
    state: StreamState,
}

/// What a stream has shown so far: its record, token count and loop detectors.
struct StreamState {
    record: RequestRecord,
    counter: TokenCounter,
    /// Content and reasoning detectors, when loops are detected.
    loops: Option<(LoopDetector, LoopDetector)>,
    found: Option<LoopFinding>,
    done: bool,
    channels: Channels,
    answer: Option<String>,
    malformed_cached_tokens: bool,
}

/// The reasoning channel of a stream: chunks that carried reasoning text before the answer
/// (content) began, and when it began. A stream whose content came first has no reasoning
/// before its answer, whatever follows.
#[derive(Debug, Default)]
struct Channels {
    answered: bool,
}

impl Channels {
    fn take(&mut self, rec: &mut RequestRecord, reasoning: bool, content: bool, t: f64) {
        if reasoning && !self.answered {
            rec.reasoning_chunks += 1;
        }
        if content && !std::mem::replace(&mut self.answered, true) && rec.reasoned() {
            rec.first_answer_s = Some(t);
        }
    }
}

impl StreamReader {
    async fn read(
        &mut self,
        mut body: Incoming,
        clock: &WindowClock,
        stall: Duration,
        cancel: &mut watch::Receiver<bool>,
        mut on_first_token: impl FnMut(),
    ) -> Ended {
        loop {
            let frame = tokio::select! {
                f = tokio::time::timeout(stall, body.frame()) => f,
                _ = cancel.changed() => return Ended::Cancelled,
            };
            let data = match frame {
                Err(_) => {
                    let msg = format!("stream stalled: no data for {:.0} s", stall.as_secs_f64());
                    return Ended::Failed(Failure::new(msg));
                }
                Ok(None) => return Ended::Finished,
                Ok(Some(Err(e))) => return Ended::Failed(Failure::new(format!("connection failed mid-stream: {e}"))),
                Ok(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            let had_token = self.state.record.first_token_s.is_some();
            let t = clock.now_s();
            let fed = self.parser.feed(&data, |line| self.state.on_line(line, t, clock));
            if !had_token && self.state.record.first_token_s.is_some() {
                on_first_token();
            }
            if let Err(failure) = fed {
                return Ended::Failed(failure);
            }
            if let Some(found) = self.state.found.take() {
                return Ended::Looped(found);
            }
            if self.state.done {
                return Ended::Finished;
            }
        }
    }

    fn finish(self, ended: Ended, clock: &WindowClock, client: &HttpClient) -> StreamOutcome {
        let StreamReader { parser, mut state } = self;
        let answer = state.answer.take();
        let mut record = state.record;
        record.end_s = Some(clock.now_s());
        let (mut failure, cancelled, loop_finding) = match ended {
            Ended::Finished => (None, false, None),
            Ended::Cancelled => (None, true, None),
            Ended::Failed(f) => (Some(f), false, None),
            Ended::Looped(found) => (None, false, Some(found)),
        };
        let ended_cleanly = failure.is_none() && !cancelled && loop_finding.is_none() && !state.done;
        if ended_cleanly && !parser.leftover().is_empty() {
            failure = Some(Failure::new("malformed stream: it ended inside an event"));
        } else if ended_cleanly && record.finish_reason.is_none() {
            failure = Some(Failure::new("the server closed the stream before it finished"));
        }
        let count = state.counter.finish();
        (record.tokens, record.window_tokens, record.chunks) = (count.tokens, count.window_tokens, count.chunks);
        record.token_source = count.source;
        let failure = failure.map(|f| Failure { message: client.scrub(&f.message), ..f });
        record.error = failure.as_ref().map(|f| f.message.clone());
        let malformed_cached_tokens = state.malformed_cached_tokens;
        StreamOutcome { record, loop_finding, failure, cancelled, answer, malformed_cached_tokens }
    }
}

impl StreamState {
    fn new(record: RequestRecord, settings: StreamSettings) -> StreamState {
        let detector = || LoopDetector::new(settings.loop_settings);
        StreamState {
            record,
            counter: TokenCounter::default(),
            loops: settings.detect_loops.then(|| (detector(), detector())),
            found: None,
            done: false,
            channels: Channels::default(),
            answer: settings.keep_answer.then(String::new),
            malformed_cached_tokens: false,
        }
    }

    /// Takes one SSE line that arrived at `t`; an error ends the stream.
    fn on_line(&mut self, line: SseLine<'_>, t: f64, clock: &WindowClock) -> Result<(), Failure> {
        let payload = match line {
            SseLine::Done => {
                self.done = true;
                return Ok(());
            }
            SseLine::Data(p) => p,
            SseLine::TooLong => {
                let msg = format!("malformed stream: an event line longer than {} bytes", super::sse::MAX_LINE_BYTES);
                return Err(Failure::new(msg));
            }
        };
        let chunk = parse_chunk(payload).map_err(|e| {
            let shown: String = String::from_utf8_lossy(payload).chars().take(120).collect();
            Failure::new(format!("malformed stream: {e} in data {shown:?}"))
        })?;
        if let Some(e) = chunk.error {
            return Err(Failure::new(format!("server error mid-stream: {e}")));
        }
        self.take_chunk(chunk, t, clock);
        Ok(())
    }

    fn take_chunk(&mut self, chunk: Chunk<'_>, t: f64, clock: &WindowClock) {
        let rec = &mut self.record;
        if let Some(p) = chunk.prompt_tokens {
            rec.prompt_tokens = Some(u32::try_from(p).unwrap_or(u32::MAX));
        }
        if let Some(c) = chunk.cached_prompt_tokens {
            rec.cached_prompt_tokens = Some(c);
        }
        self.malformed_cached_tokens |= chunk.malformed_cached_tokens;
        if let Some(r) = chunk.server_decode_tps {
            rec.server_decode_tps = Some(r);
        }
        let tokens = ChunkTokens {
            completion_tokens: chunk.completion_tokens,
            has_text: chunk.has_text(),
            finishing: chunk.finish_reason.is_some(),
        };
        let inside = clock.inside(t);
        let new_tokens = self.counter.feed(tokens, inside);
        if new_tokens > 0 {
            rec.first_token_s.get_or_insert(t);
            rec.last_token_s = Some(t);
            if inside {
                rec.window_last_token_s = Some(t);
            }
            clock.live_tokens.fetch_add(new_tokens, Ordering::Relaxed);
        }
        if let Some(r) = chunk.finish_reason.as_deref() {
            rec.finish_reason = Some(r.to_string());
        }
        let text = |s: Option<&str>| s.is_some_and(|s| !s.is_empty());
        self.channels.take(rec, text(chunk.reasoning.as_deref()), text(chunk.content.as_deref()), t);
        if let (Some(answer), Some(content)) = (self.answer.as_mut(), chunk.content.as_deref()) {
            if answer.len() + content.len() <= MAX_ANSWER_BYTES {
                answer.push_str(content);
            }
        }
        if let (Some((content, reasoning)), true) = (self.loops.as_mut(), tokens.has_text) {
            let content = chunk.content.as_deref().and_then(|text| content.push(text, "content"));
            let reasoning = chunk.reasoning.as_deref().and_then(|text| reasoning.push(text, "reasoning"));
            if self.found.is_none() {
                self.found = content.or(reasoning);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_begins_at_the_first_content_after_reasoning() {
        let mut rec = RequestRecord::sent_at(0.0);
        let mut ch = Channels::default();
        ch.take(&mut rec, true, false, 0.1);
        ch.take(&mut rec, true, false, 0.2);
        ch.take(&mut rec, false, true, 0.3);
        ch.take(&mut rec, false, true, 0.4);
        assert_eq!((rec.reasoning_chunks, rec.first_answer_s), (2, Some(0.3)));
        // Content first: no reasoning before the answer, even if reasoning follows.
        let mut rec = RequestRecord::sent_at(0.0);
        let mut ch = Channels::default();
        ch.take(&mut rec, false, true, 0.1);
        ch.take(&mut rec, true, false, 0.2);
        ch.take(&mut rec, false, true, 0.3);
        assert_eq!((rec.reasoning_chunks, rec.first_answer_s), (0, None));
        // Reasoning that never reached an answer.
        let mut rec = RequestRecord::sent_at(0.0);
        Channels::default().take(&mut rec, true, false, 0.1);
        assert_eq!((rec.reasoned(), rec.first_answer_s), (true, None));
    }
}

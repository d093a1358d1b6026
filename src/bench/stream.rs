//! One streamed request, timed chunk by chunk: first and last token, tokens counted from
//! usage (continuous) or chunks (with the final usage as a check), tokens inside the cell's
//! window, loop detection per channel, and every way a stream can fail.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Method;
use tokio::sync::watch;

use super::http::{HttpClient, Unreachable};
use super::loopdetect::{LoopDetector, LoopSettings};
use super::protocol::{error_body_message, parse_chunk};
use super::sse::{SseLine, SseParser};
use crate::format::{ErrorCause, LoopFinding, RequestRecord, TokenSource};

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
}

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
    /// Whether the first token has been seen (sent once through `first_token`).
    pub got_token: bool,
}

/// Streams one request. `first_token` is notified on the first token; `cancel` ends the
/// stream (the connection is closed, so the server frees the request).
pub async fn run_stream(
    client: &HttpClient,
    path: &str,
    body: Bytes,
    clock: &WindowClock,
    settings: StreamSettings,
    mut cancel: watch::Receiver<bool>,
    mut on_first_token: impl FnMut(),
) -> StreamOutcome {
    let send_s = clock.now_s();
    let mut rec = RequestRecord {
        send_s,
        first_token_s: None,
        last_token_s: None,
        end_s: None,
        tokens: 0,
        chunks: 0,
        window_tokens: 0,
        window_last_token_s: None,
        token_source: TokenSource::Chunks,
        prompt_tokens: None,
        cached_prompt_tokens: None,
        finish_reason: None,
        error: None,
    };
    let mut out =
        StreamOutcome { record: rec.clone(), loop_finding: None, failure: None, cancelled: false, got_token: false };

    let sent = tokio::select! {
        r = client.send(Method::POST, path, Some(body)) => r,
        _ = cancel.changed() => { out.cancelled = true; rec.end_s = Some(clock.now_s()); out.record = rec; return out; }
    };
    let (status, mut body) = match sent {
        Ok(x) => x,
        Err(e) => {
            rec.end_s = Some(clock.now_s());
            let msg = client.scrub(&format!("{e:#}"));
            let failure = if e.is::<Unreachable>() { Failure::unreachable(msg) } else { Failure::new(msg) };
            rec.error = Some(failure.message.clone());
            out.failure = Some(failure);
            out.record = rec;
            return out;
        }
    };
    if !status.is_success() {
        let limited = http_body_util::Limited::new(body, MAX_ERROR_BODY_BYTES);
        let bytes = match tokio::time::timeout(settings.stall_timeout, limited.collect()).await {
            Ok(Ok(c)) => c.to_bytes(),
            Ok(Err(_)) => Bytes::from(format!("(an error body over {MAX_ERROR_BODY_BYTES} bytes, not read)")),
            Err(_) => Bytes::new(),
        };
        let msg = format!("HTTP {}: {}", status.as_u16(), error_body_message(&bytes));
        let failure = Failure::http(status.as_u16(), client.scrub(&msg));
        rec.end_s = Some(clock.now_s());
        rec.error = Some(failure.message.clone());
        out.failure = Some(failure);
        out.record = rec;
        return out;
    }

    let mut parser = SseParser::default();
    let mut continuous = false;
    let mut last_usage: u64 = 0;
    let mut final_usage: Option<u64> = None;
    let mut window_chunks: u64 = 0;
    let mut done = false;
    let mut content_loop = settings.detect_loops.then(|| LoopDetector::new(settings.loop_settings));
    let mut reasoning_loop = settings.detect_loops.then(|| LoopDetector::new(settings.loop_settings));

    loop {
        let frame = tokio::select! {
            f = tokio::time::timeout(settings.stall_timeout, body.frame()) => f,
            _ = cancel.changed() => { out.cancelled = true; break; }
        };
        let frame = match frame {
            Err(_) => {
                out.failure = Some(Failure::new(format!(
                    "stream stalled: no data for {:.0} s",
                    settings.stall_timeout.as_secs_f64()
                )));
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                out.failure = Some(Failure::new(format!("connection failed mid-stream: {e}")));
                break;
            }
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let t = clock.now_s();
        let inside = clock.inside(t);
        let mut failure: Option<String> = None;
        let mut found: Option<LoopFinding> = None;
        let _ = parser.feed::<()>(&data, |line| {
            let payload = match line {
                SseLine::Done => {
                    done = true;
                    return Ok(());
                }
                SseLine::Data(p) => p,
                SseLine::TooLong => {
                    failure.get_or_insert(format!(
                        "malformed stream: an event line longer than {} bytes",
                        super::sse::MAX_LINE_BYTES
                    ));
                    return Err(());
                }
            };
            let chunk = match parse_chunk(payload) {
                Ok(c) => c,
                Err(e) => {
                    let shown: String = String::from_utf8_lossy(payload).chars().take(120).collect();
                    failure.get_or_insert(format!("malformed stream: {e} in data {shown:?}"));
                    return Err(());
                }
            };
            if let Some(e) = chunk.error {
                failure.get_or_insert(format!("server error mid-stream: {e}"));
                return Err(());
            }
            if let Some(p) = chunk.prompt_tokens {
                rec.prompt_tokens = Some(u32::try_from(p).unwrap_or(u32::MAX));
            }
            if let Some(c) = chunk.cached_prompt_tokens {
                rec.cached_prompt_tokens = Some(c);
            }
            let has_text = chunk.has_text();
            let mut new_tokens = 0u64;
            if let Some(u) = chunk.completion_tokens {
                if has_text && chunk.finish_reason.is_none() {
                    continuous = true;
                }
                if continuous {
                    new_tokens = u.saturating_sub(last_usage);
                    last_usage = last_usage.max(u);
                } else {
                    final_usage = Some(u);
                }
            }
            if has_text {
                rec.chunks += 1;
                if !continuous {
                    new_tokens = 1;
                }
                if inside {
                    window_chunks += 1;
                }
                if let (Some(d), Some(text)) = (content_loop.as_mut(), chunk.content.as_deref()) {
                    if let Some(f) = d.push(text, "content") {
                        found.get_or_insert(f);
                    }
                }
                if let (Some(d), Some(text)) = (reasoning_loop.as_mut(), chunk.reasoning.as_deref()) {
                    if let Some(f) = d.push(text, "reasoning") {
                        found.get_or_insert(f);
                    }
                }
            }
            // A token whose text is empty (a special or merged token) still arrives: the
            // final chunk's usage says it exists. Place it at that chunk's arrival.
            if new_tokens == 0 && rec.tokens == 0 && chunk.completion_tokens.unwrap_or(0) > 0 {
                new_tokens = chunk.completion_tokens.unwrap_or(0);
                final_usage = None;
            }
            if new_tokens > 0 {
                if rec.first_token_s.is_none() {
                    rec.first_token_s = Some(t);
                }
                rec.last_token_s = Some(t);
                rec.tokens = rec.tokens.saturating_add(new_tokens);
                if inside {
                    rec.window_tokens = rec.window_tokens.saturating_add(new_tokens);
                    rec.window_last_token_s = Some(t);
                }
                clock.live_tokens.fetch_add(new_tokens, Ordering::Relaxed);
            }
            if let Some(r) = chunk.finish_reason {
                rec.finish_reason = Some(r.into_owned());
            }
            Ok(())
        });
        if rec.first_token_s.is_some() && !out.got_token {
            out.got_token = true;
            on_first_token();
        }
        if let Some(f) = failure {
            out.failure = Some(Failure::new(client.scrub(&f)));
            break;
        }
        if found.is_some() {
            out.loop_finding = found;
            break;
        }
        if done {
            break;
        }
    }
    rec.end_s = Some(clock.now_s());
    if out.failure.is_none() && !out.cancelled && out.loop_finding.is_none() && !done && !parser.leftover().is_empty() {
        out.failure = Some(Failure::new("malformed stream: it ended inside an event"));
    }
    if out.failure.is_none() && !out.cancelled && out.loop_finding.is_none() && rec.finish_reason.is_none() && !done {
        out.failure = Some(Failure::new("the server closed the stream before it finished"));
    }
    // Usage only at the end: the chunks placed the tokens in time; the final count says
    // how many tokens each chunk carried.
    rec.token_source = if continuous || (rec.chunks == 0 && rec.tokens > 0) {
        TokenSource::Usage
    } else if let Some(total) = final_usage.filter(|_| rec.chunks > 0) {
        let per_chunk = total as f64 / rec.chunks as f64;
        rec.tokens = total;
        rec.window_tokens = (window_chunks as f64 * per_chunk).round() as u64;
        TokenSource::ChunksCheckedByFinalUsage
    } else {
        TokenSource::Chunks
    };
    if let Some(f) = &out.failure {
        rec.error = Some(f.message.clone());
    }
    out.record = rec;
    out
}

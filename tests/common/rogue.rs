//! A small misbehaving HTTP server for bench tests: a thread per connection, answers from a
//! closure given the request line and headers, on a free loopback port. It can echo the
//! request's secrets, send endless lines, huge bodies, streams without tokens, hang, or go
//! away (stop listening) after a given request.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What one request looked like.
pub struct Req {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// What to answer.
pub enum Reply {
    /// Status, content type, body (sent with a content-length).
    Full(u16, &'static str, Vec<u8>),
    /// An SSE stream: the pieces are written one after another, then the connection closes.
    Stream(Vec<Vec<u8>>),
    /// Keep the connection open without answering (until the client leaves).
    Hang,
    /// Stop listening for good: this and every later connection is refused.
    GoAway,
    /// Start an SSE stream, then die mid-answer: the stream breaks off and every later
    /// connection is refused (an engine that crashed).
    StreamThenGoAway(Vec<Vec<u8>>),
}

pub struct Rogue {
    pub url: String,
    stop: Arc<AtomicBool>,
}

impl Rogue {
    pub fn start(answer: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Rogue {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let answer = Arc::new(answer);
        let stop2 = stop.clone();
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            // Polled, so that a `GoAway` closes the listener within milliseconds.
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let _ = conn.set_nonblocking(false);
                        let (answer, stop3) = (answer.clone(), stop2.clone());
                        std::thread::spawn(move || serve(conn, &*answer, &stop3));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Rogue { url, stop }
    }
}

impl Drop for Rogue {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn read_request(conn: &TcpStream) -> Option<Req> {
    let mut r = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Req { method, path, headers, body })
}

fn serve(mut conn: TcpStream, answer: &(dyn Fn(&Req) -> Reply + Send + Sync), stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let Some(req) = read_request(&conn) else { return };
    match answer(&req) {
        Reply::Full(status, ct, body) => {
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&body);
        }
        Reply::Stream(pieces) => {
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
            for p in pieces {
                if conn.write_all(&p).is_err() {
                    return;
                }
            }
        }
        Reply::Hang => {
            let mut buf = [0u8; 1];
            let _ = conn.set_read_timeout(Some(Duration::from_secs(60)));
            let _ = conn.read(&mut buf);
        }
        Reply::GoAway => {
            stop.store(true, Ordering::SeqCst);
        }
        Reply::StreamThenGoAway(pieces) => {
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
            for p in pieces {
                let _ = conn.write_all(&p);
            }
            stop.store(true, Ordering::SeqCst);
        }
    }
}

/// The discovery answers of a plain OpenAI-compatible server with one model, no metrics,
/// no tokenizer; `None` for anything else.
pub fn discovery(req: &Req) -> Option<Reply> {
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/v1/models") => {
            Some(Reply::Full(200, "application/json", br#"{"object":"list","data":[{"id":"rogue-model"}]}"#.to_vec()))
        }
        ("POST", "/v1/completions") | ("POST", "/v1/chat/completions") => None,
        _ => Some(Reply::Full(404, "text/plain", b"not found".to_vec())),
    }
}

/// A non-streamed request (prompt sizing) gets a JSON completion reporting `prompt_tokens`;
/// a streamed one gets `stream`.
pub fn completion(req: &Req, prompt_tokens: u64, stream: impl FnOnce() -> Reply) -> Reply {
    let body = String::from_utf8_lossy(&req.body);
    if body.contains("\"stream\":true") {
        return stream();
    }
    let json = format!(
        "{{\"choices\":[{{\"text\":\"x\",\"finish_reason\":\"length\"}}],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":1}}}}"
    );
    Reply::Full(200, "application/json", json.into_bytes())
}

/// A stream that answers a request with `n` tokens of continuous usage and a final chunk.
pub fn good_stream(n: u64, prompt_tokens: u64) -> Reply {
    let mut pieces = Vec::new();
    for i in 1..=n {
        pieces.push(
            format!(
                "data: {{\"choices\":[{{\"text\":\"w{i} \"}}],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{i}}}}}\n\n"
            )
            .into_bytes(),
        );
    }
    pieces.push(
        format!(
            "data: {{\"choices\":[{{\"text\":\"\",\"finish_reason\":\"length\"}}],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{n}}}}}\n\ndata: [DONE]\n\n"
        )
        .into_bytes(),
    );
    Reply::Stream(pieces)
}

/// `site bench` against a rogue server: one small cell, short timeouts.
pub fn bench_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "bench",
        "--endpoint",
        url,
        "--gpu",
        "Rogue GPU",
        "--max-output",
        "8",
        "--duration",
        "0.5s",
        "--warmup-hold",
        "0.1s",
        "--warmup-timeout",
        "2s",
        "--stall-timeout",
        "3s",
        "--contexts",
        "1k",
        "--concurrency",
        "1",
    ];
    a.extend_from_slice(extra);
    a
}

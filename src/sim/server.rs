//! The simulated engine's HTTP side (hyper, HTTP/1.1, loopback only).

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};

use super::{Fault, Flavor, SimArgs};
use speed_matrix::units::fnv1a;

type Body = BoxBody<Bytes, Infallible>;

#[derive(Default)]
struct State {
    running: u64,
    waiting: u64,
    kv_used: u64,
    /// Prompts seen, most recent last: prefix caching matches from the first token.
    prefix_cache: Vec<String>,
    requests: u64,
    max_running: u64,
    disconnects: u64,
    /// Speculative decoding (`--spec-draft-tokens`): drafts, proposed and accepted tokens,
    /// counted together so a `/metrics` read never sees a draft half counted.
    spec: [u64; 3],
    /// Prefix caching: prompt tokens looked up and found (vLLM's counters).
    prefix_queries: u64,
    prefix_hits: u64,
    /// When each admitted request's prefill step ends: vLLM counts a request running only
    /// once a step of it has ended, so its gauge leaves out the prefills under way.
    prefill_ends: Vec<tokio::time::Instant>,
}

struct Sim {
    args: SimArgs,
    state: Mutex<State>,
    released: Notify,
    /// Output tokens handed to clients, all requests together (the exact ground truth).
    generated: AtomicU64,
    /// Steps and prefills made so far (the noise's draw counter) and when the server began.
    draws: AtomicU64,
    started: tokio::time::Instant,
}

impl Sim {
    fn noisy(&self, base_s: f64, prefill: bool) -> f64 {
        let k = self.draws.fetch_add(1, Ordering::Relaxed);
        let elapsed = self.started.elapsed().as_secs_f64();
        let noise = &self.args.noise;
        if prefill {
            noise.prefill_s(base_s, elapsed, k)
        } else {
            noise.step_s(base_s, elapsed, k)
        }
    }
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()).boxed())
        .unwrap()
}

fn json_response(status: StatusCode, v: &Value) -> Response<Body> {
    full(status, "application/json", serde_json::to_vec(v).unwrap())
}

/// Binds 127.0.0.1 and serves until the lifetime ends. Prints the URL first.
pub async fn serve(args: SimArgs) -> Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", args.port)).await.context("binding the simulated engine")?;
    let addr = listener.local_addr()?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls_acceptor(cert, key)?),
        _ => None,
    };
    println!("{}://{addr}", if tls.is_some() { "https" } else { "http" });
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let lifetime = Duration::from_secs(args.lifetime_s);
    let sim = Arc::new(Sim {
        args,
        state: Mutex::new(State::default()),
        released: Notify::new(),
        generated: AtomicU64::new(0),
        draws: AtomicU64::new(0),
        started: tokio::time::Instant::now(),
    });
    let accept = speed_matrix::httpserve::accept_loop(listener, tls, move |req| handle(sim.clone(), req));
    tokio::select! {
        _ = accept => Ok(()),
        _ = tokio::time::sleep(lifetime) => Ok(()),
    }
}

/// Whether the request carries the header `--require-header` asks for.
fn has_required_header(a: &SimArgs, req: &Request<Incoming>) -> bool {
    let Some((name, value)) = a.require_header.as_deref().and_then(|h| h.split_once(':')) else { return true };
    req.headers().get(name.trim()).and_then(|v| v.to_str().ok()) == Some(value.trim())
}

/// A TLS server setup from PEM files (the simulator's https tests make them with rcgen).
fn tls_acceptor(cert: &std::path::Path, key: &std::path::Path) -> Result<tokio_rustls::TlsAcceptor> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("--tls-cert {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("--tls-cert {}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key).with_context(|| format!("--tls-key {}", key.display()))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("--tls-cert / --tls-key")?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

async fn handle(sim: Arc<Sim>, req: Request<Incoming>) -> Response<Body> {
    // Prefill is timed from the request's arrival, so reading and parsing the body is
    // part of the simulated prefill, not added to it.
    let arrival = tokio::time::Instant::now();
    if !has_required_header(&sim.args, &req) {
        return json_response(
            StatusCode::UNAUTHORIZED,
            &json!({"error": {"message": "missing or wrong gateway header", "type": "unauthorized"}}),
        );
    }
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let body = req.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let a = &sim.args;
    match (method, path.as_str()) {
        (Method::GET, "/health") => json_response(StatusCode::OK, &json!({"status": "ok"})),
        (Method::GET, "/v1/models") => {
            let mut m = json!({"id": a.model, "object": "model", "owned_by": "sim"});
            if a.flavor != Flavor::Llamacpp {
                m["max_model_len"] = json!(a.max_model_len);
            }
            json_response(StatusCode::OK, &json!({"object": "list", "data": [m]}))
        }
        (Method::GET, "/metrics") => full(StatusCode::OK, "text/plain; version=0.0.4", metrics(&sim)),
        (Method::GET, "/version") if a.flavor == Flavor::Vllm => {
            json_response(StatusCode::OK, &json!({"version": a.engine_version}))
        }
        (Method::GET, "/server_info") if a.flavor == Flavor::Sglang => json_response(
            StatusCode::OK,
            &json!({"max_total_num_tokens": a.kv_tokens, "version": a.engine_version, "tp_size": 1}),
        ),
        (Method::GET, "/props") if a.flavor == Flavor::Llamacpp => json_response(
            StatusCode::OK,
            &json!({"total_slots": a.slots, "default_generation_settings": {"n_ctx": a.max_model_len}, "build_info": "b0-unknown", "model_path": "sim.gguf"}),
        ),
        (Method::GET, "/sim/stats") => {
            let s = sim.state.lock().unwrap();
            json_response(
                StatusCode::OK,
                &json!({"requests": s.requests, "running": s.running, "waiting": s.waiting, "max_running": s.max_running, "disconnects": s.disconnects}),
            )
        }
        (Method::POST, "/tokenize") => tokenize(a, &body),
        (Method::POST, "/v1/chat/completions") => generate(sim.clone(), &body, true, arrival).await,
        (Method::POST, "/v1/completions") => generate(sim.clone(), &body, false, arrival).await,
        _ => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": {"message": format!("no route {path}"), "type": "not_found"}}),
        ),
    }
}

fn metrics(sim: &Sim) -> String {
    let mut s = sim.state.lock().unwrap();
    let now = tokio::time::Instant::now();
    s.prefill_ends.retain(|e| *e > now);
    let a = &sim.args;
    // vLLM's running gauge is set when a step ends: a request in its prefill step is not in it.
    let running_gauge = match a.flavor {
        Flavor::Vllm => s.running.saturating_sub(s.prefill_ends.len() as u64),
        _ => s.running,
    };
    let generated = (sim.generated.load(Ordering::Relaxed) as f64 * a.counter_skew).round();
    let counter = match a.flavor {
        Flavor::Vllm => {
            // Names, types and labels as vLLM 0.32 serves them (tests/fixtures/vllm-0.32.0).
            let m = &a.model;
            let mut text = format!(
                "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{engine=\"0\",model_name=\"{m}\"}} {generated}.0\n\
                 # TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"{m}\"}} {}.0\n\
                 # TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"{m}\"}} {}.0\n",
                s.prefix_queries, s.prefix_hits
            );
            if a.spec_draft_tokens > 0 {
                let [d, p, acc] = s.spec;
                text.push_str(&format!(
                    "# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total{{engine=\"0\",model_name=\"{m}\"}} {d}.0\n\
                     # TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total{{engine=\"0\",model_name=\"{m}\"}} {p}.0\n\
                     # TYPE vllm:spec_decode_num_accepted_tokens_total counter\nvllm:spec_decode_num_accepted_tokens_total{{engine=\"0\",model_name=\"{m}\"}} {acc}.0\n"
                ));
            }
            text
        }
        Flavor::Sglang => format!("sglang:generation_tokens_total{{model_name=\"{}\"}} {generated}.0\n", a.model),
        Flavor::Llamacpp => String::new(),
    };
    let gauges = match a.flavor {
        Flavor::Vllm => format!(
            "# HELP vllm:num_requests_running Running requests.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{engine=\"0\",model_name=\"{m}\"}} {r}.0\n\
             # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{engine=\"0\",model_name=\"{m}\"}} {w}.0\n\
             # TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{{block_size=\"{bs}\",cache_dtype=\"auto\",engine=\"0\",kv_cache_size_tokens=\"{kv}\",num_gpu_blocks=\"{b}\"}} 1.0\n",
            m = a.model,
            r = running_gauge,
            w = s.waiting,
            b = a.kv_tokens / a.block_tokens.max(1),
            bs = a.block_tokens.max(1),
            kv = a.kv_tokens
        ),
        Flavor::Sglang if a.spec_draft_tokens > 0 && s.spec[0] > 0 => {
            // Gauges, as SGLang keeps them (its recent batches; here, everything so far).
            let [d, p, acc] = s.spec.map(|v| v as f64);
            format!(
                "sglang:num_running_reqs{{model_name=\"{m}\"}} {}.0\nsglang:num_queue_reqs {}.0\n\
                 sglang:spec_accept_rate{{model_name=\"{m}\"}} {}\nsglang:spec_accept_length{{model_name=\"{m}\"}} {}\n",
                s.running,
                s.waiting,
                acc / p,
                1.0 + acc / d,
                m = a.model
            )
        }
        Flavor::Sglang => format!("sglang:num_running_reqs{{model_name=\"{}\"}} {}.0\nsglang:num_queue_reqs {}.0\n", a.model, s.running, s.waiting),
        Flavor::Llamacpp => format!("# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing {}\nllamacpp:requests_deferred {}\n", s.running, s.waiting),
    };
    gauges + &counter
}

fn prompt_of(v: &Value) -> (String, bool) {
    if let Some(msgs) = v.get("messages").and_then(Value::as_array) {
        let text = msgs.iter().filter_map(|m| m.get("content").and_then(Value::as_str)).collect::<Vec<_>>().join("\n");
        return (text, true);
    }
    let p = v.get("prompt").or_else(|| v.get("content")).and_then(Value::as_str).unwrap_or_default();
    (p.to_string(), false)
}

fn tokenize(a: &SimArgs, body: &[u8]) -> Response<Body> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return json_response(StatusCode::BAD_REQUEST, &json!({"error": {"message": "body is not JSON"}}));
    };
    let (text, chat) = prompt_of(&v);
    let n = SimArgs::count_tokens(&text, chat);
    if a.flavor == Flavor::Llamacpp {
        let tokens: Vec<u64> = (0..n).collect();
        json_response(StatusCode::OK, &json!({"tokens": tokens}))
    } else {
        json_response(StatusCode::OK, &json!({"count": n, "max_model_len": a.max_model_len, "tokens": []}))
    }
}

/// The `ctx-N` tag our prompts start with, if present.
fn prompt_context(text: &str) -> Option<u32> {
    let i = text.find("ctx-")? + 4;
    let digits: String = text[i..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

fn error_response(flavor: Flavor, status: StatusCode, message: &str, kind: &str) -> Response<Body> {
    let v = match flavor {
        Flavor::Sglang => {
            json!({"object": "error", "message": message, "type": kind, "code": status.as_u16()})
        }
        _ => json!({"error": {"message": message, "type": kind, "code": status.as_u16()}}),
    };
    json_response(status, &v)
}

const LOOP_SENTENCE: &str = "and the story goes around again. ";

struct Gen {
    chat: bool,
    model: String,
    usage: String,
    include_usage: bool,
    prompt_tokens: u64,
    /// Prompt tokens found in the prefix cache (usage `prompt_tokens_details.cached_tokens`,
    /// llama.cpp `timings.cache_n`).
    cached_tokens: u64,
    max_tokens: u64,
    loop_after: Option<u64>,
    fault: Option<Fault>,
    seed: u64,
}

async fn generate(sim: Arc<Sim>, body: &[u8], chat: bool, arrival: tokio::time::Instant) -> Response<Body> {
    let a = &sim.args;
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return error_response(a.flavor, StatusCode::BAD_REQUEST, "body is not JSON", "invalid_request_error");
    };
    let (text, _) = prompt_of(&v);
    let prompt_tokens = SimArgs::count_tokens(&text, chat);
    let max_tokens =
        v.get("max_completion_tokens").or_else(|| v.get("max_tokens")).and_then(Value::as_u64).unwrap_or(16);
    let stream = v.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let ctx = prompt_context(&text);
    let fault =
        a.fault.filter(|_| a.fault_context.is_none_or(|c| Some(c) == ctx) && max_tokens >= a.fault_min_max_tokens);
    if prompt_tokens + max_tokens > a.max_model_len {
        let msg = format!(
            "request ({} tokens) exceeds the available context size ({} tokens)",
            prompt_tokens + max_tokens,
            a.max_model_len
        );
        return error_response(a.flavor, StatusCode::BAD_REQUEST, &msg, "exceed_context_size_error");
    }
    if let Some(response) = fault.and_then(|f| http_fault(a.flavor, f)) {
        return response;
    }
    if fault == Some(Fault::SilentHead) {
        // Until the client gives up and the connection (and this future) goes away.
        std::future::pending::<()>().await;
    }
    let need = sim.args.kv_need(prompt_tokens + max_tokens);
    let (running_at_admission, admitted_at) = admit(&sim, need, arrival).await;
    let cached_tokens = prefix_cache_hit(&sim, &text, prompt_tokens);
    let loop_after = a
        .loop_after
        .filter(|_| a.loop_context.is_none_or(|c| Some(c) == ctx) && running_at_admission >= a.loop_min_running as u64);
    let gen = Gen {
        chat,
        model: a.model.clone(),
        usage: usage_mode(a, &v),
        include_usage: v.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false),
        prompt_tokens,
        cached_tokens,
        max_tokens,
        loop_after,
        fault,
        seed: fnv1a(text.as_bytes()) ^ running_at_admission,
    };
    let prefill_s = sim.noisy(
        (prompt_tokens - cached_tokens) as f64 / a.prefill_tps + cached_tokens as f64 / a.cached_prefill_tps,
        true,
    );
    sim.state.lock().unwrap().prefill_ends.push(admitted_at + Duration::from_secs_f64(prefill_s));
    if !stream {
        tokio::time::sleep(Duration::from_secs_f64(prefill_s + a.step_s(1) * max_tokens as f64)).await;
        release(&sim, need, false).await;
        return whole_answer(&gen);
    }
    let (tx, rx) = mpsc::channel::<Bytes>(32);
    let sim2 = sim.clone();
    tokio::spawn(async move {
        let disconnected = produce(&sim2, &gen, admitted_at + Duration::from_secs_f64(prefill_s), &tx).await;
        release(&sim2, need, disconnected).await;
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(ChannelBody { rx }.boxed())
        .unwrap()
}

/// The answer of an HTTP-status fault, if `fault` is one.
fn http_fault(flavor: Flavor, fault: Fault) -> Option<Response<Body>> {
    let (status, message, kind) = match fault {
        Fault::Http400 => (StatusCode::BAD_REQUEST, "simulated bad request", "invalid_request_error"),
        Fault::Http500 => (StatusCode::INTERNAL_SERVER_ERROR, "simulated internal error", "internal_error"),
        Fault::Http503 => (StatusCode::SERVICE_UNAVAILABLE, "The request queue is full", "service_unavailable"),
        _ => return None,
    };
    Some(error_response(flavor, status, message, kind))
}

/// The usage the stream reports: continuous only where the engine does it and the client
/// asked for it.
fn usage_mode(a: &SimArgs, request: &Value) -> String {
    let continuous_asked =
        request.pointer("/stream_options/continuous_usage_stats").and_then(Value::as_bool).unwrap_or(false);
    match a.usage_mode() {
        "continuous" if !continuous_asked => "final".into(),
        mode => mode.to_string(),
    }
}

/// Waits for a slot and KV room; returns the requests running once admitted (this one
/// included) and when it was admitted.
async fn admit(sim: &Sim, need: u64, arrival: tokio::time::Instant) -> (u64, tokio::time::Instant) {
    let a = &sim.args;
    let mut queued = false;
    let mut admitted_at = arrival;
    loop {
        let notified = sim.released.notified();
        {
            let mut s = sim.state.lock().unwrap();
            let slot_ok = a.flavor != Flavor::Llamacpp || s.running < a.slots as u64;
            if slot_ok && s.kv_used + need <= a.kv_room() {
                if queued {
                    s.waiting -= 1;
                    admitted_at = tokio::time::Instant::now();
                }
                s.running += 1;
                s.kv_used += need;
                s.requests += 1;
                s.max_running = s.max_running.max(s.running);
                return (s.running, admitted_at);
            }
            if !queued {
                s.waiting += 1;
                queued = true;
            }
        }
        notified.await;
    }
}

/// Prefix caching, as engines do it: the longest prefix shared with a prompt seen before is
/// cached (counted in the simulator's tokens, i.e. words); the rest is prefilled. A whole
/// prompt seen before is cached with its template; a partial match only for its words.
fn prefix_cache_hit(sim: &Sim, text: &str, prompt_tokens: u64) -> u64 {
    let mut s = sim.state.lock().unwrap();
    let keep = sim.args.prefix_cache_prompts;
    let shared = s.prefix_cache.iter().map(|p| common_prefix_len(p, text)).max().unwrap_or(0);
    let hit = if shared == text.len() {
        prompt_tokens
    } else {
        sim.args.whole_blocks(SimArgs::count_tokens(&text[..shared], false).min(prompt_tokens))
    };
    s.prefix_queries += prompt_tokens;
    s.prefix_hits += hit;
    if keep > 0 && !s.prefix_cache.iter().any(|p| p == text) {
        s.prefix_cache.push(text.to_string());
        if s.prefix_cache.len() > keep {
            s.prefix_cache.remove(0);
        }
    }
    hit
}

/// A non-streamed completion of `max_tokens` words.
fn whole_answer(gen: &Gen) -> Response<Body> {
    let text: String = (0..gen.max_tokens).map(|i| word(gen.seed, i)).collect();
    let (p, n) = (gen.prompt_tokens, gen.max_tokens);
    let usage = json!({"prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n});
    let v = if gen.chat {
        json!({"object": "chat.completion", "model": gen.model, "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}], "usage": usage})
    } else {
        json!({"object": "text_completion", "model": gen.model, "choices": [{"index": 0, "text": text, "finish_reason": "length"}], "usage": usage})
    };
    json_response(StatusCode::OK, &v)
}

/// A response body fed by a channel: the producer task stops when the client is gone.
struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

async fn release(sim: &Sim, need: u64, disconnected: bool) {
    if disconnected && sim.args.cancel_delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(sim.args.cancel_delay_ms)).await;
    }
    {
        let mut s = sim.state.lock().unwrap();
        s.running -= 1;
        s.kv_used -= need;
        if disconnected {
            s.disconnects += 1;
        }
    }
    sim.released.notify_waiters();
}

/// Bytes two strings share from the start, ending on a character boundary.
fn common_prefix_len(a: &str, b: &str) -> usize {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    (0..=n).rev().find(|&i| b.is_char_boundary(i)).unwrap_or(0)
}

fn word(seed: u64, i: u64) -> String {
    let x = (seed ^ i.wrapping_mul(0x9E3779B97F4A7C15)).wrapping_mul(0xBF58476D1CE4E5B9);
    format!("w{} ", (x >> 40) % 100_000)
}

fn sse(v: &Value) -> Bytes {
    let mut s = String::with_capacity(256);
    s.push_str("data: ");
    s.push_str(&serde_json::to_string(v).unwrap());
    s.push_str("\n\n");
    Bytes::from(s)
}

/// Streams the answer; returns true if the client went away.
async fn produce(sim: &Sim, g: &Gen, prefill_done: tokio::time::Instant, tx: &mpsc::Sender<Bytes>) -> bool {
    let a = &sim.args;
    let send = |b: Bytes| async move { tx.send(b).await.is_err() };
    tokio::time::sleep_until(prefill_done).await;
    if g.chat {
        let role = match a.flavor {
            Flavor::Llamacpp => json!({"role": "assistant", "content": null}),
            _ => json!({"role": "assistant", "content": ""}),
        };
        if send(sse(&json!({"object": "chat.completion.chunk", "model": g.model, "choices": [{"index": 0, "delta": role, "finish_reason": null}]}))).await {
            return true;
        }
    }
    let mut produced = 0u64;
    let mut next = prefill_done;
    while produced < g.max_tokens {
        let running = sim.state.lock().unwrap().running;
        let step = sim.noisy(a.step_s(running), false);
        if step > 0.0 {
            next += Duration::from_secs_f64(step);
            tokio::time::sleep_until(next).await;
        } else {
            // Flat out (client benchmarks): no timer, just let other streams run.
            tokio::task::yield_now().await;
        }
        let n = a.tokens_per_chunk.min(g.max_tokens - produced);
        let mut text = String::new();
        for i in produced..produced + n {
            match g.loop_after {
                Some(after) if i >= after => text.push_str(LOOP_SENTENCE),
                _ => text.push_str(&word(g.seed, i)),
            }
        }
        let before = produced;
        produced += n;
        if let Some(f) = g.fault {
            if before < a.fault_after_tokens && produced >= a.fault_after_tokens {
                match f {
                    Fault::MidstreamError => {
                        let _ = send(sse(&json!({"error": {"message": "simulated failure mid-stream", "type": "internal_error", "code": 500}}))).await;
                        let _ = send(Bytes::from_static(b"data: [DONE]\n\n")).await;
                        return false;
                    }
                    Fault::Malformed => {
                        let _ = send(Bytes::from_static(b"data: {\"choices\": [oops\n\n")).await;
                        return false;
                    }
                    Fault::Stall => {
                        // Keep the connection open and silent until the client gives up.
                        tx.closed().await;
                        return true;
                    }
                    Fault::Reset => return false,
                    _ => {}
                }
            }
        }
        let last = produced == g.max_tokens;
        let finish = if last { json!("length") } else { Value::Null };
        let reasoning = produced <= a.reasoning_tokens;
        let usage = json!({"prompt_tokens": g.prompt_tokens, "completion_tokens": produced, "total_tokens": g.prompt_tokens + produced,
            "prompt_tokens_details": {"cached_tokens": g.cached_tokens}});
        // llama.cpp reports its own decode rate (and its prompt cache) when a request ends.
        let timings = (last && a.flavor == Flavor::Llamacpp).then(|| {
            let ms = prefill_done.elapsed().as_secs_f64() * 1000.0;
            json!({"predicted_n": produced, "predicted_ms": ms, "predicted_per_second": produced as f64 / ms * 1000.0, "cache_n": g.cached_tokens})
        });
        let mut chunk = if g.chat {
            let key = match (reasoning, a.flavor) {
                (false, _) => "content",
                (true, Flavor::Vllm) => "reasoning",
                (true, _) => "reasoning_content",
            };
            json!({"object": "chat.completion.chunk", "model": g.model, "choices": [{"index": 0, "delta": {key: text}, "finish_reason": Value::Null}]})
        } else {
            json!({"object": "text_completion", "model": g.model, "choices": [{"index": 0, "text": text, "finish_reason": finish}]})
        };
        match g.usage.as_str() {
            "continuous" => chunk["usage"] = usage.clone(),
            "final" if last && !g.chat => chunk["usage"] = usage.clone(),
            _ => {}
        }
        if let (Some(t), false) = (&timings, g.chat) {
            chunk["timings"] = t.clone();
        }
        if send(sse(&chunk)).await {
            return true;
        }
        sim.generated.fetch_add(n, Ordering::Relaxed);
        if a.spec_draft_tokens > 0 {
            // One draft a chunk: K proposed, all but the chunk's verified token accepted.
            let accepted = (n.saturating_sub(1)).min(a.spec_draft_tokens);
            let mut s = sim.state.lock().unwrap();
            for (count, v) in s.spec.iter_mut().zip([1, a.spec_draft_tokens, accepted]) {
                *count += v;
            }
        }
        if last && g.chat {
            let mut fin = json!({"object": "chat.completion.chunk", "model": g.model, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]});
            if let Some(t) = timings {
                fin["timings"] = t;
            }
            if send(sse(&fin)).await {
                return true;
            }
            if g.include_usage
                && g.usage != "none"
                && send(sse(
                    &json!({"object": "chat.completion.chunk", "model": g.model, "choices": [], "usage": usage}),
                ))
                .await
            {
                return true;
            }
        }
    }
    send(Bytes::from_static(b"data: [DONE]\n\n")).await
}

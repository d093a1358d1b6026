//! What the server tells about itself: engine, model, version, KV budget and gauges, from
//! `/v1/models`, `/metrics`, `/version` (vLLM), `/server_info` (SGLang), `/props` (llama.cpp).

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::client::http::HttpClient;
pub use super::engine::EngineKind;
use super::plan::Capacity;

#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub engine: EngineKind,
    pub models: Vec<String>,
    pub version: Option<String>,
    pub capacity: Capacity,
    pub metrics_available: bool,
    /// The generated-tokens counter the cells read at their window's edges, if it has one.
    pub token_counter: Option<&'static str>,
    pub quantization: Option<String>,
    pub build_info: Option<String>,
    pub model_path: Option<String>,
}

/// vLLM's speculative-decoding counters: drafts, proposed draft tokens, accepted tokens.
pub const SPEC_DECODE_COUNTERS: [&str; 3] = [
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
];

/// vLLM's prefix-cache counters (prompt tokens looked up, found), by release: `vllm:gpu_…`
/// before 0.11.
const PREFIX_CACHE_COUNTERS: [[&str; 2]; 2] = [
    ["vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"],
    ["vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total"],
];

/// The prefix-cache counters (queries, hits) of a `/metrics` text, where it has them.
pub fn prefix_counters(text: &str) -> Option<[f64; 2]> {
    PREFIX_CACHE_COUNTERS.iter().find_map(|[q, h]| Some([metric_value(text, q)?, metric_value(text, h)?]))
}

/// The prefix-cache counters' growth between two reads; none where one went down or no
/// prompt token was looked up between them.
pub fn prefix_between(open: [f64; 2], close: [f64; 2]) -> Option<crate::format::PrefixCacheCount> {
    let (queries, hits) = (close[0] - open[0], close[1] - open[1]);
    (queries > 0.0 && hits >= 0.0 && hits <= queries).then_some(crate::format::PrefixCacheCount { queries, hits })
}

/// SGLang's speculative-decoding gauges of a `/metrics` text, where it has either; a rate
/// beyond 0 to 1 or a length below 1 is no reading.
pub fn spec_gauges(text: &str) -> Option<crate::format::SpecDecodeGauges> {
    let rate = metric_value(text, "sglang:spec_accept_rate").filter(|r| (0.0..=1.0).contains(r));
    let length = metric_value(text, "sglang:spec_accept_length").filter(|l| *l >= 1.0);
    (rate.is_some() || length.is_some())
        .then_some(crate::format::SpecDecodeGauges { accept_rate: rate, accept_length: length })
}

/// The speculative-decoding counters of a `/metrics` text, where it has all three.
pub fn spec_counters(text: &str) -> Option<[f64; 3]> {
    let [a, b, c] = SPEC_DECODE_COUNTERS.map(|name| metric_value(text, name));
    Some([a?, b?, c?])
}

/// The counters' growth between two reads; none where one went down (a restart) or no
/// draft token was proposed between them.
pub fn spec_between(open: [f64; 3], close: [f64; 3]) -> Option<crate::format::SpecDecodeCount> {
    let [drafts, draft_tokens, accepted_tokens] = [0, 1, 2].map(|i| close[i] - open[i]);
    (drafts >= 0.0 && draft_tokens > 0.0 && accepted_tokens >= 0.0 && accepted_tokens <= draft_tokens)
        .then_some(crate::format::SpecDecodeCount { drafts, draft_tokens, accepted_tokens })
}

/// Sum of a metric's samples across label sets; `None` if absent, or if a sample is out of
/// range (negative, not finite, beyond what a data file holds: the sum would mean nothing).
pub fn metric_value(text: &str, name: &str) -> Option<f64> {
    raw_metric_value(text, name).and_then(|v| super::checked_reading("a /metrics gauge or counter", v))
}

fn raw_metric_value(text: &str, name: &str) -> Option<f64> {
    let mut total = None;
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        let value = rest.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
        if let Some(v) = value {
            // One bad sample spoils the sum: NaN and infinities stay so.
            let v = if crate::format::validate::reading(v).is_some() { v } else { f64::NAN };
            *total.get_or_insert(0.0) += v;
        }
    }
    total
}

/// A label's value on the first sample of `name`: `name{a="1",b="x"} 1`.
pub fn metric_label(text: &str, name: &str, label: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))?;
    let labels = &line[name.len() + 1..line.find('}')?];
    let key = format!("{label}=\"");
    let start = labels.find(&key)? + key.len();
    let end = start + labels[start..].find('"')?;
    Some(labels[start..end].to_string())
}

/// (running, waiting) from a metrics page.
pub fn gauge_values(text: &str, engine: EngineKind) -> Option<(f64, Option<f64>)> {
    let (running, waiting) = engine.gauges()?;
    Some((metric_value(text, running)?, metric_value(text, waiting)))
}

/// A KV budget in tokens as the server reported it; a negative, fractional-overflowing or
/// absurd one (1e308 read as 18446744073709551615) is no budget.
fn kv_budget(tokens: f64) -> Option<u64> {
    super::checked_reading("the server's KV budget", tokens).map(|t| t as u64)
}

fn json_ok(status: hyper::StatusCode, body: &[u8]) -> Option<Value> {
    if status.is_success() {
        serde_json::from_slice(body).ok()
    } else {
        None
    }
}

pub async fn discover(client: &HttpClient) -> Result<ServerInfo> {
    let (models, max_model_len) = list_models(client).await?;
    let metrics = match client.get("/metrics").await {
        Ok((s, b)) if s.is_success() => Some(String::from_utf8_lossy(&b).into_owned()),
        _ => None,
    };
    let m = metrics.as_deref().unwrap_or("");
    let engine = EngineKind::from_metrics(m);
    let mut info = ServerInfo {
        engine,
        models,
        version: None,
        capacity: Capacity { max_model_len, ..Default::default() },
        metrics_available: false,
        token_counter: None,
        quantization: None,
        build_info: None,
        model_path: None,
    };
    // llama.cpp answers /props even without --metrics.
    if matches!(info.engine, EngineKind::LlamaCpp | EngineKind::Unknown) {
        llamacpp_props(client, &mut info).await;
    }
    if info.engine == EngineKind::Vllm {
        vllm_facts(client, m, &mut info).await;
    }
    if matches!(info.engine, EngineKind::Sglang | EngineKind::Unknown) {
        sglang_server_info(client, &mut info).await;
    }
    if info.capacity.kv_budget_tokens.is_none() {
        info.capacity.kv_budget_source = None;
    }
    info.metrics_available = metrics.is_some() && info.engine.gauges().is_some_and(|(r, _)| m.contains(r));
    info.token_counter = info.engine.generation_counter().filter(|c| metric_value(m, c).is_some());
    Ok(info)
}

/// The served models and the first model's maximum length, from `/v1/models`.
async fn list_models(client: &HttpClient) -> Result<(Vec<String>, Option<u64>)> {
    let (status, body) = client.get("/v1/models").await.context("asking the server for /v1/models")?;
    if status == hyper::StatusCode::UNAUTHORIZED || status == hyper::StatusCode::FORBIDDEN {
        bail!(
            "/v1/models answered {status}: set the API key in OPENAI_API_KEY (or the variable named by --api-key-env), or the header a gateway wants with --header-env"
        );
    }
    if status == hyper::StatusCode::SERVICE_UNAVAILABLE {
        bail!("/v1/models answered 503: the server is still loading; try again when /health is OK");
    }
    let models_json =
        json_ok(status, &body).with_context(|| format!("/v1/models answered {status}, not a model list"))?;
    let mut models = Vec::new();
    let mut max_model_len = None;
    for m in models_json.get("data").and_then(Value::as_array).into_iter().flatten() {
        // A server listing thousands of models: the first few are all a run can use.
        if let Some(id) = m.get("id").and_then(Value::as_str).filter(|_| models.len() < 64) {
            models.push(id.to_string());
        }
        if max_model_len.is_none() {
            max_model_len = m.get("max_model_len").and_then(Value::as_u64);
        }
    }
    Ok((models, max_model_len))
}

/// llama.cpp's `/props`: slots, the context of one slot, build and model path.
async fn llamacpp_props(client: &HttpClient, info: &mut ServerInfo) {
    let Ok((s, b)) = client.get("/props").await else { return };
    let Some(p) = json_ok(s, &b).filter(|p| p.get("total_slots").is_some()) else { return };
    info.engine = EngineKind::LlamaCpp;
    info.capacity.slots = p.get("total_slots").and_then(Value::as_u64).and_then(|v| u32::try_from(v).ok());
    info.capacity.slot_ctx = p
        .pointer("/default_generation_settings/n_ctx")
        .and_then(Value::as_f64)
        .and_then(|v| super::checked_reading("llama.cpp's slot context", v))
        .map(|v| v as u64);
    info.build_info = p.get("build_info").and_then(Value::as_str).map(str::to_string);
    info.model_path = p.get("model_path").and_then(Value::as_str).map(str::to_string);
    if let (Some(slots), Some(ctx)) = (info.capacity.slots, info.capacity.slot_ctx) {
        info.capacity.kv_budget_tokens = kv_budget(slots as f64 * ctx as f64);
        info.capacity.kv_budget_source = Some("llama.cpp /props total_slots x n_ctx".into());
    }
}

/// vLLM: the KV budget from `vllm:cache_config_info`, the version from `/version`.
async fn vllm_facts(client: &HttpClient, metrics: &str, info: &mut ServerInfo) {
    let label = |name: &str| metric_label(metrics, "vllm:cache_config_info", name).and_then(|v| v.parse::<f64>().ok());
    if let Some(tokens) = label("kv_cache_size_tokens") {
        info.capacity.kv_budget_tokens = kv_budget(tokens);
        info.capacity.kv_budget_source = Some("vllm:cache_config_info kv_cache_size_tokens".into());
    } else if let (Some(blocks), Some(size)) = (label("num_gpu_blocks"), label("block_size")) {
        info.capacity.kv_budget_tokens = kv_budget(blocks * size);
        info.capacity.kv_budget_source = Some("vllm:cache_config_info num_gpu_blocks x block_size".into());
    }
    if let Ok((s, b)) = client.get("/version").await {
        info.version = json_ok(s, &b).and_then(|v| v.get("version").and_then(Value::as_str).map(str::to_string));
    }
}

/// SGLang's `/server_info` (or the older `/get_server_info`): KV budget, version, quantization.
async fn sglang_server_info(client: &HttpClient, info: &mut ServerInfo) {
    for path in ["/server_info", "/get_server_info"] {
        let Ok((s, b)) = client.get(path).await else { continue };
        let Some(v) = json_ok(s, &b) else { continue };
        if let Some(t) = v.get("max_total_num_tokens").and_then(Value::as_f64) {
            info.engine = EngineKind::Sglang;
            info.capacity.kv_budget_tokens = kv_budget(t);
            info.capacity.kv_budget_source = Some(format!("sglang {path} max_total_num_tokens"));
        }
        info.version = info.version.take().or_else(|| v.get("version").and_then(Value::as_str).map(str::to_string));
        info.quantization = v.get("quantization").and_then(Value::as_str).map(str::to_string);
        break;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_decode_counters_grow_across_a_window_or_say_nothing() {
        let text = |d: u32, p: u32, a: u32| {
            format!(
                "vllm:spec_decode_num_drafts_total{{model_name=\"m\"}} {d}.0\nvllm:spec_decode_num_draft_tokens_total{{model_name=\"m\"}} {p}.0\nvllm:spec_decode_num_accepted_tokens_total{{model_name=\"m\"}} {a}.0\n"
            )
        };
        let open = spec_counters(&text(10, 40, 25)).unwrap();
        let close = spec_counters(&text(30, 120, 60)).unwrap();
        let grown = spec_between(open, close).unwrap();
        assert_eq!((grown.drafts, grown.draft_tokens, grown.accepted_tokens), (20.0, 80.0, 35.0));
        // A restarted server's counters went down; no draft in the window; one counter missing.
        assert_eq!(spec_between(close, open), None);
        assert_eq!(spec_between(open, open), None);
        assert_eq!(spec_counters("vllm:spec_decode_num_drafts_total 3\n"), None);
    }

    const VLLM: &str = "# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\nvllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2.0\nvllm:num_requests_waiting{model_name=\"m\"} 0.0\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"5000\",cache_dtype=\"auto\"} 1.0\n";

    #[test]
    fn prometheus_text() {
        assert_eq!(metric_value(VLLM, "vllm:num_requests_running"), Some(5.0));
        assert_eq!(metric_value(VLLM, "vllm:num_requests"), None);
        assert_eq!(metric_label(VLLM, "vllm:cache_config_info", "num_gpu_blocks").as_deref(), Some("5000"));
        assert_eq!(gauge_values(VLLM, EngineKind::Vllm), Some((5.0, Some(0.0))));
        assert_eq!(gauge_values("llamacpp:requests_processing 2\n", EngineKind::LlamaCpp), Some((2.0, None)));
    }
}

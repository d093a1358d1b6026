//! What the server tells about itself: engine, model, version, KV budget and gauges, from
//! `/v1/models`, `/metrics`, `/version` (vLLM), `/server_info` (SGLang), `/props` (llama.cpp).
//! The readers of the Prometheus text are in `metrics`.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::client::http::HttpClient;
pub use super::engine::EngineKind;
use super::metrics::{metric_label, metric_labels, metric_value};
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
    /// What the server says of its own settings (recorded as the run's `server_settings`).
    pub settings: BTreeMap<String, String>,
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
        settings: BTreeMap::new(),
    };
    if let Some(len) = max_model_len {
        info.settings.insert("max_model_len".into(), len.to_string());
    }
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
    for (name, value) in [("total_slots", info.capacity.slots.map(u64::from)), ("n_ctx", info.capacity.slot_ctx)] {
        if let Some(v) = value {
            info.settings.insert(name.into(), v.to_string());
        }
    }
    if let (Some(slots), Some(ctx)) = (info.capacity.slots, info.capacity.slot_ctx) {
        info.capacity.kv_budget_tokens = kv_budget(slots as f64 * ctx as f64);
        info.capacity.kv_budget_source = Some("llama.cpp /props total_slots x n_ctx".into());
    }
}

/// vLLM: the KV budget from `vllm:cache_config_info`, the version from `/version`.
async fn vllm_facts(client: &HttpClient, metrics: &str, info: &mut ServerInfo) {
    let label = |name: &str| metric_label(metrics, "vllm:cache_config_info", name).and_then(|v| v.parse::<f64>().ok());
    for (name, value) in metric_labels(metrics, "vllm:cache_config_info") {
        insert_setting(&mut info.settings, &name, value);
    }
    // vLLM registers its speculative-decoding counters only when it drafts tokens.
    if metrics.lines().any(|l| l.starts_with("vllm:spec_decode_num_drafts")) {
        insert_setting(
            &mut info.settings,
            crate::format::SPECULATIVE_SETTING,
            "on (vllm:spec_decode_* counters)".into(),
        );
    }
    info.capacity.block_tokens = label("block_size").filter(|b| *b >= 1.0 && *b <= 1e6).map(|b| b as u64);
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
        if info.engine == EngineKind::Sglang {
            info.settings.extend(sglang_settings(&v));
        }
        break;
    }
}

/// Setting names never recorded: addresses, paths, seeds drawn per launch, logging, and
/// anything that may hold a credential (a token, but not a count of tokens).
fn recordable(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let secret = ["key", "secret", "password", "auth", "credential"].iter().any(|w| n.contains(w))
        || n.replace("tokens", "").contains("token");
    let volatile =
        ["host", "port", "path", "dir", "url", "seed", "log", "file", "version", "time"].iter().any(|w| n.contains(w));
    !(secret || volatile)
}

/// Keeps a setting the data format can hold (a bounded name and a printable value).
fn insert_setting(settings: &mut BTreeMap<String, String>, name: &str, value: String) {
    use crate::format::validate::{MAX_SERVER_SETTINGS, MAX_SETTING_NAME_CHARS, MAX_SETTING_VALUE_CHARS};
    let name_ok = !name.is_empty()
        && name.len() <= MAX_SETTING_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    let value_ok = value.chars().count() <= MAX_SETTING_VALUE_CHARS && !value.chars().any(char::is_control);
    if name_ok && value_ok && recordable(name) && settings.len() < MAX_SERVER_SETTINGS {
        settings.insert(name.to_string(), value);
    }
}

/// SGLang's server arguments as `/server_info` gives them: its scalar fields that are
/// settings (not addresses, paths, seeds or credentials).
fn sglang_settings(v: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name, value) in v.as_object().into_iter().flatten() {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => continue,
        };
        insert_setting(&mut out, name, text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sglang_arguments_are_recorded_without_addresses_paths_seeds_or_credentials() {
        let info = serde_json::json!({
            "tp_size": 2, "mem_fraction_static": 0.88, "max_total_num_tokens": 93184,
            "enable_torch_compile": false, "schedule_policy": "fcfs", "api_key": "sk-secret",
            "hf_token": "hf_x", "port": 30000, "host": "0.0.0.0", "model_path": "/home/u/m",
            "random_seed": 42, "version": "0.5.1", "internal_states": [{"last_gen_throughput": 3.0}],
            "log_level": "info", "weird\nname": 1, "long": "x".repeat(400)
        });
        let s = sglang_settings(&info);
        let names: Vec<&str> = s.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["enable_torch_compile", "max_total_num_tokens", "mem_fraction_static", "schedule_policy", "tp_size"]
        );
        assert_eq!(s["mem_fraction_static"], "0.88");
        assert_eq!(s["enable_torch_compile"], "false");
    }
}

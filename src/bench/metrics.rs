//! Readers of a server's Prometheus `/metrics` text: a metric's sum across label sets, a
//! label's value, the engines' gauges and the counters a cell reads at its window's edges
//! (prefix cache, speculative decoding).

use super::engine::EngineKind;

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

/// Every label of the first sample of `name`, in order: `name{a="1",b="x"} 1` gives
/// (a, 1), (b, x). Values with an escaped quote end at it (none of the engines' info
/// metrics carry one).
pub fn metric_labels(text: &str, name: &str) -> Vec<(String, String)> {
    let Some(line) = text.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with('{')) else {
        return Vec::new();
    };
    let Some(end) = line.find('}') else { return Vec::new() };
    let mut out = Vec::new();
    let mut rest = &line[name.len() + 1..end];
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].trim_matches([',', ' ']).to_string();
        let after = &rest[eq + 2..];
        let Some(close) = after.find('"') else { break };
        out.push((key, after[..close].to_string()));
        rest = &after[close + 1..];
    }
    out
}

/// (running, waiting) from a metrics page.
pub fn gauge_values(text: &str, engine: EngineKind) -> Option<(f64, Option<f64>)> {
    let (running, waiting) = engine.gauges()?;
    Some((metric_value(text, running)?, metric_value(text, waiting)))
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
        let labels = metric_labels(VLLM, "vllm:cache_config_info");
        let names: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["block_size", "num_gpu_blocks", "cache_dtype"]);
        assert_eq!(labels[2].1, "auto");
        assert!(metric_labels(VLLM, "vllm:nothing").is_empty());
        assert_eq!(gauge_values(VLLM, EngineKind::Vllm), Some((5.0, Some(0.0))));
        assert_eq!(gauge_values("llamacpp:requests_processing 2\n", EngineKind::LlamaCpp), Some((2.0, None)));
    }
}

//! llm-inference-bench (`llm_decode_bench.py`) results, versions 0.x: the file's shape, as
//! far as the importer needs it. Fields this importer does not use are ignored; the ones it
//! needs are required, so a broken file fails with the field's name and position.

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct ResultsFile {
    pub metadata: Metadata,
    #[serde(default)]
    pub prefill: BTreeMap<String, PrefillEntry>,
    pub results: Vec<DecodeResult>,
    #[serde(default)]
    pub summary_table: BTreeMap<String, BTreeMap<String, Option<f64>>>,
}

#[derive(Debug, Deserialize)]
pub struct Metadata {
    pub version: String,
    #[serde(default)]
    pub engine: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub timestamp: Option<String>,
    pub duration_per_test: f64,
    pub max_tokens: u32,
    #[serde(default)]
    pub max_total_tokens: Option<u64>,
    #[serde(default)]
    pub metrics_available: Option<bool>,
    #[serde(default)]
    pub prefill_mode: Option<String>,
    pub concurrency_levels: Vec<u32>,
    pub context_lengths: Vec<u32>,
    #[serde(default)]
    pub loop_detection: Option<serde_json::Value>,
    /// `request-count` in versions that can send a fixed number of requests per cell.
    #[serde(default)]
    pub decode_mode: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct PrefillEntry {
    pub ttft_seconds: f64,
    pub tok_per_sec: f64,
    #[serde(default)]
    pub prompt_tokens: Option<u32>,
    #[serde(default)]
    pub samples: Option<u64>,
    #[serde(default)]
    pub method: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct DecodeResult {
    pub context_tokens: u32,
    pub concurrency: u32,
    pub aggregate_tps: Option<f64>,
    #[serde(default)]
    pub aggregate_source: Option<String>,
    #[serde(default)]
    pub measurement_seconds: Option<f64>,
    /// Newer versions: the window's wall-clock length.
    #[serde(default)]
    pub measurement_wall_seconds: Option<f64>,
    /// Newer versions: why the cell failed (a failed cell also has a negative aggregate_tps).
    #[serde(default)]
    pub failure_reason: Option<String>,
    #[serde(default)]
    pub client_output_tokens: Option<u64>,
    #[serde(default)]
    pub ttft_p50: Option<f64>,
    #[serde(default)]
    pub ttft_p90: Option<f64>,
    #[serde(default)]
    pub ttft_p99: Option<f64>,
    #[serde(default)]
    pub inter_token_latency_p50: Option<f64>,
    #[serde(default)]
    pub inter_token_latency_p90: Option<f64>,
    #[serde(default)]
    pub inter_token_latency_p99: Option<f64>,
    #[serde(default)]
    pub output_tps_per_user_p50: Option<f64>,
    #[serde(default)]
    pub avg_running_reqs: Option<f64>,
    #[serde(default)]
    pub completed_request_count: Option<u64>,
    #[serde(default)]
    pub num_errors: Option<u64>,
    #[serde(default)]
    pub capacity_limited: Option<bool>,
    #[serde(default)]
    pub warmup_timed_out: Option<bool>,
    #[serde(default)]
    pub ready_reason: Option<String>,
    #[serde(default)]
    pub timeout_reason: Option<String>,
    #[serde(default)]
    pub input_seq_len_avg: Option<f64>,
    #[serde(default)]
    pub loop_detected: Option<bool>,
    #[serde(default)]
    pub loop_diagnostics: Option<serde_json::Value>,
    #[serde(default)]
    pub request_samples: Vec<RequestSample>,
    /// Multi-token-prediction acceptance (0.6+, speculative decoding on the server) and
    /// other figures without a column of ours, kept under their names.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The figures of a decode cell that the site keeps as the tool named them.
#[derive(Debug, Default, Deserialize)]
pub struct Extra {
    #[serde(default)]
    pub server_spec_drafts: Option<f64>,
    #[serde(default)]
    pub server_spec_draft_tokens: Option<f64>,
    #[serde(default)]
    pub server_spec_accepted_tokens: Option<f64>,
    #[serde(default)]
    pub server_spec_pos_accept: Option<Vec<Option<f64>>>,
    #[serde(default)]
    pub server_engine_steps: Option<f64>,
    #[serde(default)]
    pub server_steps_per_s: Option<f64>,
    #[serde(default)]
    pub server_accept_len_effective: Option<f64>,
    #[serde(default)]
    pub accept_norm_tps: Option<f64>,
    #[serde(default)]
    pub accept_norm_ref_len: Option<f64>,
    #[serde(default)]
    pub chunk_inter_token_latency_p50: Option<f64>,
    #[serde(default)]
    pub time_to_second_token_p50: Option<f64>,
}

impl Extra {
    /// As the site's tool figures (times converted from seconds to ms).
    pub fn figures(&self) -> Vec<crate::format::ToolFigure> {
        use crate::format::ToolFigure as F;
        let ms = |v: Option<f64>| v.map(|s| s * 1000.0);
        let mut out: Vec<F> = [
            F::of("server_spec_drafts", self.server_spec_drafts, ""),
            F::of("server_spec_draft_tokens", self.server_spec_draft_tokens, "tokens"),
            F::of("server_spec_accepted_tokens", self.server_spec_accepted_tokens, "tokens"),
            F::of("server_engine_steps", self.server_engine_steps, ""),
            F::of("server_steps_per_s", self.server_steps_per_s, "steps/s"),
            F::of("server_accept_len_effective", self.server_accept_len_effective, "tokens"),
            F::of("accept_norm_tps", self.accept_norm_tps, "tok/s"),
            F::of("accept_norm_ref_len", self.accept_norm_ref_len, "tokens"),
            F::of("chunk_inter_token_latency_p50", ms(self.chunk_inter_token_latency_p50), "ms"),
            F::of("time_to_second_token_p50", ms(self.time_to_second_token_p50), "ms"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let positions = self.server_spec_pos_accept.iter().flatten().enumerate();
        out.extend(positions.filter_map(|(i, v)| F::of(&format!("server_spec_pos_accept[{i}]"), *v, "")));
        out
    }
}

#[derive(Debug, Deserialize)]
pub struct RequestSample {
    #[serde(default)]
    pub ttft: Option<f64>,
    #[serde(default)]
    pub latency: Option<f64>,
    #[serde(default)]
    pub inter_token_latency_avg: Option<f64>,
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub completed: Option<bool>,
}

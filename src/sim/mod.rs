//! A simulated OpenAI-compatible streaming engine whose behaviour is known exactly, so tests
//! can check `site bench`'s figures against ground truth: prefill at a set rate (faster for a
//! cached prefix), decode steps whose time is a function of the batch size, KV capacity and
//! gauges on `/metrics`, `/tokenize`, `/v1/models`, tokens per chunk (MTP-style), usage
//! continuous / final-only / absent, a reasoning channel, output that loops, and faults.

pub mod server;

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Flavor {
    /// vLLM shapes: `vllm:*` gauges, `cache_config_info`, `/version`, continuous usage.
    Vllm,
    /// SGLang shapes: `sglang:*` gauges, `/server_info`, `reasoning_content`.
    Sglang,
    /// llama.cpp shapes: `/props` slots, `llamacpp:*` gauges, usage only at the end.
    Llamacpp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Fault {
    /// HTTP 500 with an error body.
    Http500,
    /// HTTP 503 "The request queue is full".
    Http503,
    /// HTTP 400 before any event.
    Http400,
    /// `data: {"error":...}` after some tokens, then `[DONE]`.
    MidstreamError,
    /// A `data:` line that is not JSON after some tokens.
    Malformed,
    /// The stream stops sending after some tokens (connection kept open).
    Stall,
    /// The connection is dropped after some tokens.
    Reset,
    /// The request is taken and no response head ever comes.
    SilentHead,
}

#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Port on 127.0.0.1 (0: any free port). The first line on stdout is the URL.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    #[arg(long, value_enum, default_value = "vllm")]
    pub flavor: Flavor,
    #[arg(long, default_value = "sim/model")]
    pub model: String,
    /// The engine version the server reports (vLLM's /version, SGLang's /server_info): a
    /// simulated release of its own, so its runs are another configuration.
    #[arg(long, default_value = "0.0.0-sim")]
    pub engine_version: String,
    #[arg(long, default_value_t = 32768)]
    pub max_model_len: u64,
    /// Prompt tokens per second without a cached prefix.
    #[arg(long, default_value_t = 20000.0)]
    pub prefill_tps: f64,
    /// Prompts the prefix cache keeps (the most recent); 0: no prefix caching.
    #[arg(long, default_value_t = 64)]
    pub prefix_cache_prompts: usize,
    /// Prompt tokens per second when the whole prompt was seen before.
    #[arg(long, default_value_t = 1_000_000.0)]
    pub cached_prefill_tps: f64,
    /// Decode step time = base + per_seq x running requests, in milliseconds.
    #[arg(long, default_value_t = 10.0)]
    pub step_ms_base: f64,
    #[arg(long, default_value_t = 0.5)]
    pub step_ms_per_seq: f64,
    /// Tokens sent in each chunk (more than 1 mimics speculative / MTP decoding).
    #[arg(long, default_value_t = 1)]
    pub tokens_per_chunk: u64,
    /// Speculative decoding on /metrics (vllm flavor: counters; sglang: its gauges): each
    /// chunk is one draft of this many proposed tokens, all of the chunk's tokens but one
    /// accepted. 0: none.
    #[arg(long, default_value_t = 0)]
    pub spec_draft_tokens: u64,
    /// KV cache in tokens; requests that do not fit wait (and count as waiting).
    #[arg(long, default_value_t = 1_000_000)]
    pub kv_tokens: u64,
    /// vllm flavor: the KV cache's block size, as `cache_config_info` says. A request holds
    /// whole blocks, and its prompt's shared prefix is found cached in whole blocks only.
    #[arg(long, default_value_t = 16)]
    pub block_tokens: u64,
    /// llama.cpp slots (llamacpp flavor): requests beyond them queue.
    #[arg(long, default_value_t = 4)]
    pub slots: u32,
    /// Usage reporting: continuous, final (only in the last chunk), none.
    #[arg(long, default_value = "auto", value_parser = ["auto", "continuous", "final", "none"])]
    pub usage: String,
    /// The first N output tokens go to the reasoning channel.
    #[arg(long, default_value_t = 0)]
    pub reasoning_tokens: u64,
    /// Output loops (repeats one sentence) after this many tokens, for prompts of
    /// `--loop-context` admitted while at least `--loop-min-running` requests run.
    #[arg(long)]
    pub loop_after: Option<u64>,
    #[arg(long)]
    pub loop_context: Option<u32>,
    #[arg(long, default_value_t = 1)]
    pub loop_min_running: u32,
    /// A fault for requests of `--fault-context` (all contexts if absent).
    #[arg(long, value_enum)]
    pub fault: Option<Fault>,
    #[arg(long)]
    pub fault_context: Option<u32>,
    /// Mid-stream faults strike after this many tokens.
    #[arg(long, default_value_t = 5)]
    pub fault_after_tokens: u64,
    /// Only requests with at least this many output tokens asked for get the fault (so a
    /// one-token prefill sample can be spared).
    #[arg(long, default_value_t = 2)]
    pub fault_min_max_tokens: u64,
    /// A request stays "running" this long after its client disconnects (as an engine
    /// finishes its step); cells that do not drain would overlap.
    #[arg(long, default_value_t = 0)]
    pub cancel_delay_ms: u64,
    /// The generated-tokens counter on /metrics reports this many times the tokens sent
    /// (1: exact; above 1 a server that over-reports, for tests of the cross-check).
    #[arg(long, default_value_t = 1.0)]
    pub counter_skew: f64,
    /// Serve https with this PEM certificate chain (with --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Answer 401 to any request without this header, `Name: value` (a gateway's key).
    #[arg(long)]
    pub require_header: Option<String>,
    /// The server exits after this many seconds (a test never leaves it behind).
    #[arg(long, default_value_t = 600)]
    pub lifetime_s: u64,
    #[command(flatten)]
    pub noise: NoiseArgs,
}

/// Seeded noise, so statistics can be tested against a server that is never the same twice
/// yet repeats exactly under one seed: each decode step's time is multiplied by a level
/// for the whole server life (run-to-run difference), a slow sine drift, per-step jitter
/// and an occasional stall; `--slowdown-pct` makes every step and prefill slower (an A/B
/// pair).
#[derive(Debug, Clone, Args)]
pub struct NoiseArgs {
    /// Seed of every random draw; without it there is no noise.
    #[arg(long)]
    pub noise_seed: Option<u64>,
    /// Per-step jitter: uniform within ± this percent.
    #[arg(long, default_value_t = 0.0)]
    pub jitter_pct: f64,
    /// The server's speed for its whole life: uniform within ± this percent.
    #[arg(long, default_value_t = 0.0)]
    pub level_pct: f64,
    /// Slow drift: a sine of this amplitude (percent) and period, at a seeded phase.
    #[arg(long, default_value_t = 0.0)]
    pub drift_pct: f64,
    #[arg(long, default_value_t = 20.0)]
    pub drift_period_s: f64,
    /// A stall of `--stall-ms` strikes a step with probability step time / this (seconds).
    #[arg(long, default_value_t = 0.0)]
    pub stall_every_s: f64,
    #[arg(long, default_value_t = 0.0)]
    pub stall_ms: f64,
    /// Every decode step and prefill this percent slower (noise or not).
    #[arg(long, default_value_t = 0.0)]
    pub slowdown_pct: f64,
}

impl NoiseArgs {
    /// Draw `k` of the seed: uniform in [0, 1).
    fn draw(seed: u64, k: u64) -> f64 {
        fastrand::Rng::with_seed(seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)).f64()
    }

    /// The time of step `k` (the `k`-th step the server made) `elapsed_s` after start, from
    /// its noiseless time.
    pub fn step_s(&self, base_s: f64, elapsed_s: f64, k: u64) -> f64 {
        let slow = 1.0 + self.slowdown_pct / 100.0;
        let Some(seed) = self.noise_seed else { return base_s * slow };
        let level = 1.0 + self.level_pct / 100.0 * (2.0 * Self::draw(seed, u64::MAX) - 1.0);
        let phase = Self::draw(seed, u64::MAX - 1) * std::f64::consts::TAU;
        let drift = 1.0
            + self.drift_pct / 100.0
                * (std::f64::consts::TAU * elapsed_s / self.drift_period_s.max(1e-3) + phase).sin();
        let jitter = 1.0 + self.jitter_pct / 100.0 * (2.0 * Self::draw(seed, 2 * k) - 1.0);
        let mut step = base_s * slow * level * drift * jitter;
        if self.stall_every_s > 0.0 && Self::draw(seed, 2 * k + 1) < step / self.stall_every_s {
            step += self.stall_ms / 1000.0;
        }
        step.max(0.0)
    }

    /// A prefill's time, slowed like the steps (and at the server's level).
    pub fn prefill_s(&self, base_s: f64, elapsed_s: f64, k: u64) -> f64 {
        self.step_s(base_s, elapsed_s, k)
    }
}

impl SimArgs {
    /// The KV room a request of `tokens` holds: whole blocks on the vllm flavor.
    pub fn kv_need(&self, tokens: u64) -> u64 {
        match self.flavor {
            Flavor::Vllm => tokens.div_ceil(self.block_tokens.max(1)) * self.block_tokens.max(1),
            _ => tokens,
        }
    }

    /// The KV room requests can hold: vLLM keeps one block for itself (its null block).
    pub fn kv_room(&self) -> u64 {
        match self.flavor {
            Flavor::Vllm => self.kv_tokens.saturating_sub(self.block_tokens.max(1)),
            _ => self.kv_tokens,
        }
    }

    /// A partly shared prompt's cached tokens: whole blocks on the vllm flavor (vLLM caches
    /// full blocks only).
    pub fn whole_blocks(&self, tokens: u64) -> u64 {
        match self.flavor {
            Flavor::Vllm => tokens / self.block_tokens.max(1) * self.block_tokens.max(1),
            _ => tokens,
        }
    }

    /// Seconds of one decode step with `running` requests in the batch.
    pub fn step_s(&self, running: u64) -> f64 {
        (self.step_ms_base + self.step_ms_per_seq * running as f64) / 1000.0
    }

    pub fn usage_mode(&self) -> &str {
        match (self.usage.as_str(), self.flavor) {
            ("auto", Flavor::Llamacpp) => "final",
            ("auto", _) => "continuous",
            (m, _) => m,
        }
    }

    /// The simulator's tokenizer: one token per whitespace-separated word, plus a chat
    /// template of 6 tokens for chat requests.
    pub fn count_tokens(text: &str, chat: bool) -> u64 {
        text.split_whitespace().count() as u64 + if chat { 6 } else { 0 }
    }
}

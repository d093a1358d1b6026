//! What the load generator knows about each engine, in one place: its name, where its
//! source lives, its gauges, and how its caches behave. `discover` decides which engine a
//! server is; everything else asks this enum.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Vllm,
    Sglang,
    LlamaCpp,
    /// Some other OpenAI-compatible server: no gauges, no KV budget.
    Unknown,
}

impl EngineKind {
    /// The engine whose metric names a `/metrics` page uses.
    pub fn from_metrics(metrics: &str) -> EngineKind {
        if metrics.contains("vllm:") {
            EngineKind::Vllm
        } else if metrics.contains("sglang:") {
            EngineKind::Sglang
        } else if metrics.contains("llamacpp:") {
            EngineKind::LlamaCpp
        } else {
            EngineKind::Unknown
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Vllm => "vllm",
            EngineKind::Sglang => "sglang",
            EngineKind::LlamaCpp => "llama.cpp",
            EngineKind::Unknown => "openai-compatible",
        }
    }
    /// Where the engine's source lives, for the run page.
    pub fn repository(self) -> Option<&'static str> {
        match self {
            EngineKind::Vllm => Some("github.com/vllm-project/vllm"),
            EngineKind::Sglang => Some("github.com/sgl-project/sglang"),
            EngineKind::LlamaCpp => Some("github.com/ggml-org/llama.cpp"),
            EngineKind::Unknown => None,
        }
    }

    /// Whether a reported version says something: llama.cpp built without git reports
    /// `b0-unknown`.
    pub fn meaningful_version(version: &str) -> bool {
        version != "b0-unknown"
    }

    /// The engine keeps a prefix cache per slot (llama.cpp): each of C slots must see the
    /// prompt once before a decode cell, or its first requests include a prefill.
    pub fn caches_per_slot(self) -> bool {
        self == EngineKind::LlamaCpp
    }

    /// The counter of generated tokens on `/metrics` that grows as tokens are made (llama.cpp
    /// counts a request's tokens only when it ends, so it has none usable mid-window).
    pub fn generation_counter(self) -> Option<&'static str> {
        match self {
            EngineKind::Vllm => Some("vllm:generation_tokens_total"),
            EngineKind::Sglang => Some("sglang:generation_tokens_total"),
            EngineKind::LlamaCpp | EngineKind::Unknown => None,
        }
    }

    /// (running, waiting) gauge names on `/metrics`.
    pub fn gauges(self) -> Option<(&'static str, &'static str)> {
        match self {
            EngineKind::Vllm => Some(("vllm:num_requests_running", "vllm:num_requests_waiting")),
            EngineKind::Sglang => Some(("sglang:num_running_reqs", "sglang:num_queue_reqs")),
            EngineKind::LlamaCpp => Some(("llamacpp:requests_processing", "llamacpp:requests_deferred")),
            EngineKind::Unknown => None,
        }
    }
}

//! The on-disk data format (see `docs/src/reference/data-format.md`). These serde types are shared by
//! every producer (`site bench`, `site import`) and by the site, so writer and reader can
//! never disagree. Times are seconds, token counts are tokens, rates are tokens per second.

use serde::{Deserialize, Serialize};

pub mod columns;

/// The `schema_version` this build writes. Version 2 added repetitions (a cell's
/// `repetition`, the settings' `repeat` and `prefill_samples`); version 3 writes a cell's
/// request records and gauge as columns (`columns`); version 4 adds a request's reasoning
/// channel (`reasoning_chunks`, `first_answer_s`) and a cell's speculative-decoding counters
/// (`spec_decode`); version 5 keeps a run's cells in one file, `cells.jsonl.gz`, a line a
/// cell (`pack`), where 1 to 4 kept a file a cell under `cells/`. It reads 1 to 5.
pub const SCHEMA_VERSION: u32 = 5;
/// The oldest `schema_version` this build reads (unchanged: a version-1 file is a run of
/// single measurements).
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// `data/runs/<run-id>/run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunManifest {
    pub schema_version: u32,
    pub model: ModelInfo,
    pub hardware: HardwareInfo,
    pub engine: EngineInfo,
    pub settings: RunSettings,
    /// The server's launch command, secrets already redacted by the producer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_command: Option<String>,
    pub bench_tool: BenchTool,
    /// How the figures came to be: measured by our load generator, or imported.
    pub origin: Origin,
    /// RFC 3339 timestamps, as the producer wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Free text for the run page's header (short); longer notes go in `notes.md`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How the load generator reached the server and what the server told about itself
    /// (measured runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_access: Option<ServerAccess>,
    /// The run measured cell by cell beside this one in one session (`site bench --versus`),
    /// on another server: the two are compared on their paired differences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_with: Option<String>,
    /// The runs of the session's other prefix-reuse levels (`site bench --prefix-reuse
    /// 0,90`: one run a level, measured one after another on the same server).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_levels: Vec<String>,
    /// The server processes `site bench --launch` started, in order: the repetitions are
    /// spread over them (`Cell::server_instance`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_processes: Vec<ServerProcess>,
    /// What the server said of its own settings (`site bench`: vLLM's cache configuration,
    /// SGLang's server arguments, llama.cpp's slots and context, the model length): runs
    /// whose settings differ are different configurations.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub server_settings: std::collections::BTreeMap<String, String>,
    /// `site bench --rates`: how the open-loop traffic of the run's rate cells was drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<super::rates::Traffic>,
}

/// A server process `site bench --launch` started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerProcess {
    /// 1, 2, ...: what cells name in `server_instance`.
    pub instance: u32,
    /// Seconds from starting it until it answered at the endpoint (cold start).
    pub ready_s: f64,
}

/// How `site bench` reached the server, and which facts it found there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerAccess {
    /// Absent for plain `http://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsVerification>,
    /// Names of the extra request headers sent (`--header-env`); their values are never stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header_names: Vec<String>,
    /// Each fact the bench looks for, found or not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub discovered: Vec<DiscoveredFact>,
}

/// How an https server's certificate was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsVerification {
    /// Against the system's and the webpki roots.
    PublicRoots,
    /// Against those and a private CA (`--ca-cert`).
    PrivateCa,
    /// Not checked (`--insecure`).
    NotVerified,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoveredFact {
    pub fact: ServerFact,
    pub found: bool,
    /// Where it came from (`/tokenize`, `vllm:num_requests_running`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The facts `site bench` asks a server for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerFact {
    /// Prompts sized with the server's tokenizer (else calibrated by usage).
    Tokenizer,
    /// A running-requests gauge on `/metrics` (else the client's in-flight count).
    RunningGauge,
    /// A generated-tokens counter for the cross-check (llama.cpp: per-request timings).
    TokenCounter,
    KvBudget,
    MaxModelLength,
    EngineVersion,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    /// Repository-style id, e.g. `stepfun-ai/Step-3.5-Flash`. Model pages group by it.
    pub id: String,
    /// The name the server was asked for in requests, when it differs from `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareInfo {
    /// e.g. `Discrete GPU`, `CPU`.
    pub kind: String,
    /// Accelerator name, e.g. `H200 SXM`; for CPU-only runs the CPU's name.
    pub device: String,
    /// Number of devices the server used.
    pub count: u32,
    /// Memory per device in GB (decimal), e.g. 141.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gb: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineInfo {
    /// e.g. `vllm`, `sglang`, `llama.cpp`. Engine pages group by it.
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    /// Target prompt lengths of the decode matrix, in tokens.
    pub contexts: Vec<u32>,
    /// Requests in flight at once.
    pub concurrency: Vec<u32>,
    /// Contexts with a prefill sample.
    pub prefill_contexts: Vec<u32>,
    /// Length of each decode cell's measurement window.
    pub duration_s: f64,
    /// `max_tokens` / `max_completion_tokens` of every decode request.
    pub max_output_tokens: u32,
    pub decode_test: DecodeTest,
    pub prefill_mode: PrefillMode,
    /// `chat` or `completions`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// KV budget in tokens that decided Over capacity, and where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_budget_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_budget_source: Option<String>,
    /// Repetitions planned for each cell (`site bench --repeat`); absent: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Measured prefill requests per context and repetition, after a discarded warm-up;
    /// absent: one (schema 1 runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_samples: Option<u32>,
    /// Prefix reuse of the decode cells (`site bench --prefix-reuse`): the percent of each
    /// prompt that the cell's earlier requests already sent (a shared prefix, then a part
    /// of its own). Absent: every stream sends one identical prompt again and again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_reuse_pct: Option<u32>,
    /// Turns of each stream's conversation (`site bench --turns`): a request's prompt
    /// carries the conversation's earlier turns and answers. Absent: one request a prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
}

/// What a run's decode cells send, beyond context and concurrency: a workload of its own,
/// ranked and compared apart from others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Workload {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_reuse_pct: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
}

impl Workload {
    /// Every stream repeating one prompt, one request a turn: the matrix as the seeds measure it.
    pub fn is_plain(&self) -> bool {
        *self == Workload::default()
    }
}

impl RunSettings {
    pub fn workload(&self) -> Workload {
        Workload { prefix_reuse_pct: self.prefix_reuse_pct, turns: self.turns }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeTest {
    /// Exactly C streams in flight for a fixed window.
    FixedDuration,
    /// A fixed number of requests with at most C in flight (imported from tools that
    /// measure so): the window includes ramp-up and tail.
    FixedCount,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefillMode {
    /// One `max_tokens: 1` request per context before its decode cells; it warms the
    /// prefix cache, so decode TTFT mostly excludes prefill.
    DecodeWarmup,
    /// Prefill measured by separate requests that do not warm the decode cells' prompts.
    Standalone,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchTool {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Raw records from our load generator; the site computes every figure.
    Measured,
    /// Figures as another tool or a published page reported them.
    Imported,
}

/// `data/runs/<run-id>/cells/<name>.json`: one measurement of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    pub schema_version: u32,
    pub phase: Phase,
    /// Target context in tokens (the matrix row).
    pub context: u32,
    /// Prompt tokens the server reported for this context's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u32>,
    /// Requests in flight (1 for prefill).
    pub concurrency: u32,
    pub status: Status,
    /// Which measurement of the cell this is, from 1 (`site bench --repeat N`); each
    /// repetition is a file of its own. Absent: 1.
    #[serde(default = "first_repetition", skip_serializing_if = "is_first_repetition")]
    pub repetition: u32,
    /// The server process (`RunManifest::server_processes`) this repetition measured, when
    /// the bench started the server itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_instance: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Figures as reported by another tool (imported cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<ReportedFigures>,
    /// Raw records from our load generator (measured cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement: Option<Measurement>,
    /// Why the cell was not run (status `over_capacity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_capacity: Option<OverCapacity>,
    /// What the loop detector found (status `looped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_finding: Option<LoopFinding>,
    /// What failed (status `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CellError>,
}

fn first_repetition() -> u32 {
    1
}

fn is_first_repetition(r: &u32) -> bool {
    *r == 1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Prefill,
    Decode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Valid,
    Looped,
    OverCapacity,
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    /// Machine-readable, e.g. `capacity_limited`, `chunk_count_fallback`.
    pub code: String,
    pub message: String,
}

/// Figures as reported elsewhere. Every field is optional: a source prints what it prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedFigures {
    /// Prefill: prompt tokens / TTFT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request_tps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p90_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99_ms: Option<f64>,
    /// Time to the first answer token (after any reasoning), where the source measured it
    /// apart from the TTFT (AIPerf's `time_to_first_output_token`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tbt_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tbt_p90_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tbt_p99_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_active: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_s: Option<f64>,
    /// How the source counted tokens (e.g. `openai_stream_chunks_fallback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_source: Option<String>,
    /// The source's per-request samples, kept so percentiles can be shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<ReportedSample>,
    /// Figures the source reported that have no column of ours (their meaning differs, e.g.
    /// vLLM's ITL pooled over chunk gaps, or MTP acceptance), under the source's own names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_figures: Vec<ToolFigure>,
}

/// One figure as another tool named and reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFigure {
    /// The source's field name, e.g. `median_itl_ms`.
    pub name: String,
    pub value: f64,
    /// e.g. `ms`, `tok/s`, `tokens`; empty when the figure is a plain count or ratio.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
}

impl ToolFigure {
    /// The figure when the source reported a finite number.
    pub fn of(name: &str, value: Option<f64>, unit: &str) -> Option<ToolFigure> {
        value.filter(|v| v.is_finite()).map(|value| ToolFigure { name: name.into(), value, unit: unit.into() })
    }
}

/// One request as another tool reported it. Times in seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedSample {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<f64>,
    /// The source's mean time between tokens of this request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tbt_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<bool>,
}

/// Raw records of one cell as our load generator saw them. Times are seconds since the
/// run's clock origin (monotonic), so they compare across requests of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// The fixed-duration window (decode cells); absent for prefill samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// On disk as columns (schema 3) or a list of records (schema 2): `columns`.
    #[serde(with = "columns::requests")]
    pub requests: Vec<RequestRecord>,
    /// Running-requests gauge, read about once a second (more often in a short window).
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "columns::gauge")]
    pub gauge: Vec<GaugeSample>,
    /// Metric the gauge came from (e.g. `vllm:num_requests_running`) or `client_in_flight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gauge_source: Option<String>,
    /// The server's own count of output tokens across the window, where it keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tokens: Option<ServerTokenCount>,
    /// CPU seconds (user + system) the load generator's process used inside the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_s: Option<f64>,
    /// Device telemetry sampled inside the window (`--telemetry`), one row per device per
    /// sample, in the order read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub telemetry: Vec<TelemetrySample>,
    /// What the machine the load generator ran on was doing inside the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineLoad>,
    /// The server's speculative-decoding counters' growth across the window, where it
    /// keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecodeCount>,
    /// The server's prefix-cache counters' growth across the window, where it keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCacheCount>,
    /// A server that keeps no speculative-decoding counters but gauges of its most recent
    /// batches (SGLang), read as the window closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode_gauges: Option<SpecDecodeGauges>,
}

/// SGLang's speculative-decoding gauges at the window's end (`sglang:spec_accept_rate`,
/// `sglang:spec_accept_length`): averages over its most recent batches, not the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecDecodeGauges {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_length: Option<f64>,
}

/// A server's prefix-cache counters read at the window's edges, their growth between the
/// reads, in prompt tokens (vLLM's `vllm:prefix_cache_queries_total`,
/// `vllm:prefix_cache_hits_total`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixCacheCount {
    pub queries: f64,
    pub hits: f64,
}

/// A server's speculative-decoding counters read at the window's edges, their growth
/// between the reads (vLLM's `vllm:spec_decode_num_drafts_total`,
/// `vllm:spec_decode_num_draft_tokens_total`, `vllm:spec_decode_num_accepted_tokens_total`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecDecodeCount {
    /// Draft steps: each proposes some tokens the target model then verifies.
    pub drafts: f64,
    /// Tokens the drafts proposed.
    pub draft_tokens: f64,
    /// Proposed tokens the target model accepted.
    pub accepted_tokens: f64,
}

impl MachineLoad {
    /// Cores of other work beside the client (and the server, where its share is known):
    /// `None` where the server ran on this machine and its share is not known.
    pub fn other_cores(&self, client_cores: f64) -> Option<f64> {
        let server = match (self.server_local, self.server_cores) {
            (false, _) => 0.0,
            (true, Some(s)) => s,
            (true, None) => return None,
        };
        Some((self.busy_cores - client_cores - server).max(0.0))
    }
}

/// The load on the load generator's machine across a window (Linux `/proc`), in cores: a
/// busy machine slows a server beside it, and a comparison should know.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineLoad {
    /// Logical CPUs.
    pub cpus: u32,
    /// CPU time of every process (user, system, interrupts, steal) / window seconds.
    pub busy_cores: f64,
    /// The server's own processes, where the bench started it (`--launch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<f64>,
    /// Whether the server answered on this machine (a loopback endpoint): then its CPU is
    /// part of `busy_cores`.
    pub server_local: bool,
    /// The 1-minute load average at the window's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average: Option<f64>,
    /// The CPUs' mean clock at the window's end, where the kernel says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_mhz: Option<f64>,
}

/// One device's readings at one moment (run clock). A reading the tool could not give is
/// absent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySample {
    pub t_s: f64,
    /// The device's index as the tool numbers it.
    pub device: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_mib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<f64>,
}

impl Measurement {
    /// The share of prompt tokens the server served from its prefix cache, in percent: from
    /// the requests' usage (those sent inside the window, where they say; else all that
    /// say), else from the server's counters over the window. In conversations (`--turns`)
    /// only first turns count: what a `--prefix-reuse` plan is checked against (a later
    /// turn also reuses its own conversation; the counters, which mix the turns, then say
    /// nothing).
    pub fn cached_prompt_pct(&self) -> Option<f64> {
        match self.cached_prompt_tokens(|turn| turn <= 1) {
            Some((cached, prompt, _)) => Some(cached as f64 / prompt as f64 * 100.0),
            None if self.requests.iter().any(|r| r.turn >= 2) => None,
            None => self.prefix_cache.as_ref().map(|p| (p.hits / p.queries * 100.0).min(100.0)),
        }
    }

    /// Conversations: the share of the later turns' prompt tokens served from the cache
    /// (their earlier turns and answers, where the server kept them).
    pub fn next_turn_cached_pct(&self) -> Option<f64> {
        self.cached_prompt_tokens(|turn| turn >= 2).map(|(cached, prompt, _)| cached as f64 / prompt as f64 * 100.0)
    }

    /// (cached, prompt) tokens as the usage of the requests of the turns `turns` keeps
    /// reports them, of those sent inside the window where any report (the flag says so),
    /// else of all that report.
    pub fn cached_prompt_tokens(&self, turns: impl Fn(u64) -> bool) -> Option<(u64, u64, bool)> {
        let sum = |inside: bool| {
            let (cached, prompt) = self
                .requests
                .iter()
                .filter(|r| turns(r.turn))
                .filter(|r| !inside || self.window.is_some_and(|w| r.send_s >= w.start_s))
                // A server that says more came from its cache than the prompt held is read
                // as the whole prompt: never over 100%.
                .filter_map(|r| {
                    let prompt = u64::from(r.prompt_tokens?);
                    Some((r.cached_prompt_tokens?.min(prompt), prompt))
                })
                .fold((0u64, 0u64), |(c, p), (a, b)| (c.saturating_add(a), p.saturating_add(b)));
            (prompt > 0).then_some((cached, prompt, inside))
        };
        sum(true).or_else(|| sum(false))
    }

    /// Records with nothing else measured.
    pub fn of_requests(window: Option<Window>, requests: Vec<RequestRecord>) -> Measurement {
        Measurement {
            window,
            requests,
            gauge: vec![],
            gauge_source: None,
            server_tokens: None,
            client_cpu_s: None,
            telemetry: vec![],
            machine: None,
            spec_decode: None,
            prefix_cache: None,
            spec_decode_gauges: None,
        }
    }
}

/// A server's generated-tokens counter read at the window's edges (times on the run clock:
/// the middle of each `/metrics` request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerTokenCount {
    /// e.g. `vllm:generation_tokens_total`.
    pub counter: String,
    pub start_s: f64,
    pub end_s: f64,
    /// Counter growth between the two reads.
    pub tokens: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    pub start_s: f64,
    pub end_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// `usage.completion_tokens` deltas on each chunk (continuous usage).
    Usage,
    /// One token per content chunk; the server sent no continuous usage.
    Chunks,
    /// Chunk arrival times, scaled so the total matches the final chunk's usage.
    ChunksCheckedByFinalUsage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestRecord {
    pub send_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_token_s: Option<f64>,
    /// When the stream ended (finished, cancelled at the window's end, or failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_s: Option<f64>,
    /// Output tokens the request produced in all.
    pub tokens: u64,
    /// SSE chunks that carried tokens.
    pub chunks: u64,
    /// Tokens that arrived inside the cell's window.
    #[serde(default)]
    pub window_tokens: u64,
    /// Arrival time of the last token inside the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_last_token_s: Option<f64>,
    pub token_source: TokenSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u32>,
    /// Prompt tokens the server reported as served from its prefix cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u64>,
    /// `length`, `stop`, ...; absent for a stream cut at the window's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The server's own decode rate for this request, where it reports one when the request
    /// ends (llama.cpp `timings.predicted_per_second`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_decode_tps: Option<f64>,
    /// Chunks that carried reasoning text (`delta.reasoning_content` or `delta.reasoning`)
    /// before the answer began; 0 for a stream that did not reason first.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub reasoning_chunks: u64,
    /// Arrival of the first answer token (content after the reasoning), kept for a stream
    /// that reasoned first; for one that did not, the first token is the answer's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_answer_s: Option<f64>,
    /// The request's turn in its stream's conversation (`--turns`: 1 first); 0 outside one.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub turn: u64,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GaugeSample {
    pub t_s: f64,
    pub running: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverCapacity {
    /// The rule that decided it; stored as its words.
    pub rule: CapacityRule,
    /// What the cell would need, in the rule's unit (tokens, or requests for the slots rule).
    pub required_tokens: u64,
    /// The limit it was compared with, in the rule's unit; absent when the source did not
    /// publish it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
}

/// The rules that put a cell Over capacity, stored as the words on the left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CapacityRule {
    #[serde(rename = "C x (context + max output) > KV budget")]
    KvBudget,
    #[serde(rename = "context + max output > max model length")]
    ModelLength,
    #[serde(rename = "context + max output > one slot's context (n_ctx / slots)")]
    SlotContext,
    #[serde(rename = "C > parallel slots")]
    ParallelSlots,
    /// Found while measuring: the server kept some of the C streams waiting through the
    /// whole window (its cache held fewer than planned).
    #[serde(rename = "the server kept some of the C streams waiting through the window")]
    ServerQueue,
}

/// What a rule's required and limit figures count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityUnit {
    Tokens,
    Requests,
}

impl CapacityRule {
    /// The rule in words, as stored.
    pub fn text(self) -> &'static str {
        match self {
            CapacityRule::KvBudget => "C x (context + max output) > KV budget",
            CapacityRule::ModelLength => "context + max output > max model length",
            CapacityRule::SlotContext => "context + max output > one slot's context (n_ctx / slots)",
            CapacityRule::ParallelSlots => "C > parallel slots",
            CapacityRule::ServerQueue => "the server kept some of the C streams waiting through the window",
        }
    }

    pub fn unit(self) -> CapacityUnit {
        match self {
            CapacityRule::ParallelSlots | CapacityRule::ServerQueue => CapacityUnit::Requests,
            _ => CapacityUnit::Tokens,
        }
    }
}

impl std::fmt::Display for CapacityRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopFinding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_chars: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated_chars: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellError {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// What kind of failure it was, where the producer knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<ErrorCause>,
}

/// Why a cell failed, for the failures a producer treats differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCause {
    /// No connection to the server (refused, reset before an answer, timed out): the
    /// server was down, not the cell. `site bench --resume` measures such cells again.
    Unreachable,
    /// The cell ran but produced nothing to measure (no answer, or no token in the window).
    NothingMeasured,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Looped => "looped",
            Status::OverCapacity => "over_capacity",
            Status::Error => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_rules_are_stored_as_their_words() {
        for rule in
            [CapacityRule::KvBudget, CapacityRule::ModelLength, CapacityRule::SlotContext, CapacityRule::ParallelSlots]
        {
            let json = serde_json::to_string(&rule).unwrap();
            assert_eq!(json, format!("\"{}\"", rule.text()));
            assert_eq!(serde_json::from_str::<CapacityRule>(&json).unwrap(), rule);
        }
        assert!(serde_json::from_str::<CapacityRule>("\"C > 3\"").is_err());
    }

    #[test]
    fn a_cache_share_is_never_over_the_whole_prompt() {
        let request = |cached| RequestRecord {
            prompt_tokens: Some(512),
            cached_prompt_tokens: Some(cached),
            ..RequestRecord::sent_at(0.0)
        };
        let m = Measurement::of_requests(None, vec![request(1024), request(1024)]);
        assert_eq!(m.cached_prompt_pct(), Some(100.0));
        let m = Measurement::of_requests(None, vec![request(1024), request(0)]);
        assert_eq!(m.cached_prompt_pct(), Some(50.0));
    }
}

impl RequestRecord {
    /// A request sent at `send_s` that has seen nothing yet.
    pub fn sent_at(send_s: f64) -> RequestRecord {
        RequestRecord {
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
            server_decode_tps: None,
            reasoning_chunks: 0,
            first_answer_s: None,
            turn: 0,
        }
    }

    /// Whether the stream carried a reasoning channel.
    pub fn reasoned(&self) -> bool {
        self.reasoning_chunks > 0
    }
}

impl Cell {
    /// Whether the file keeps more than the cell's figures and findings: request records,
    /// or the source's per-request samples or its own figures.
    pub fn keeps_detail(&self) -> bool {
        self.measurement.is_some()
            || self.reported.as_ref().is_some_and(|r| !r.samples.is_empty() || !r.tool_figures.is_empty())
    }

    /// An error cell written because the server could not be reached.
    pub fn server_unreachable(&self) -> bool {
        self.status == Status::Error && self.error.as_ref().is_some_and(|e| e.cause == Some(ErrorCause::Unreachable))
    }

    /// A cell with no figures, warnings or findings yet.
    pub fn new(phase: Phase, context: u32, concurrency: u32, status: Status) -> Cell {
        Cell {
            schema_version: SCHEMA_VERSION,
            phase,
            context,
            prompt_tokens: None,
            concurrency,
            status,
            repetition: 1,
            server_instance: None,
            warnings: vec![],
            reported: None,
            measurement: None,
            over_capacity: None,
            loop_finding: None,
            error: None,
        }
    }

    /// The name of this cell's loose file (schemas 1 to 4; `NAME.gz` where it was stored
    /// compressed): one per (phase, context, concurrency, repetition); the first repetition
    /// keeps schema 1's name. Messages name a cell by it.
    pub fn file_name(&self) -> String {
        let rep = if self.repetition > 1 { format!("-r{}", self.repetition) } else { String::new() };
        match self.phase {
            Phase::Prefill => format!("prefill-{}{rep}.json", self.context),
            Phase::Decode => format!("decode-{}-c{}{rep}.json", self.context, self.concurrency),
        }
    }
}

/// `data/compare.json`: comparisons `site build` publishes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareFile {
    pub schema_version: u32,
    /// Each pair once (a pair listed twice would be linked twice and written twice).
    #[serde(deserialize_with = "distinct_pairs")]
    pub comparisons: Vec<ComparisonSpec>,
}

/// The comparisons, refused at the entry that repeats an earlier pair: the check runs while
/// that entry is read, so the parser's error names its line and column.
fn distinct_pairs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ComparisonSpec>, D::Error> {
    struct Pairs;
    /// One entry, read knowing the ones before it.
    struct Distinct<'a>(&'a [ComparisonSpec]);
    impl<'de> serde::de::DeserializeSeed<'de> for Distinct<'_> {
        type Value = ComparisonSpec;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<ComparisonSpec, D::Error> {
            // Inside the entry's own map, so the error is placed at the entry.
            d.deserialize_map(self)
        }
    }
    impl<'de> serde::de::Visitor<'de> for Distinct<'_> {
        type Value = ComparisonSpec;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a comparison: {\"a\": run id, \"b\": run id}")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ComparisonSpec, A::Error> {
            let c = ComparisonSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
            match self.0.iter().position(|o| o.a == c.a && o.b == c.b) {
                Some(i) => Err(serde::de::Error::custom(format!(
                    "comparisons[{}] repeats comparisons[{i}] ({:?} against {:?}): list each pair once",
                    self.0.len(),
                    c.a,
                    c.b
                ))),
                None => Ok(c),
            }
        }
    }
    impl<'de> serde::de::Visitor<'de> for Pairs {
        type Value = Vec<ComparisonSpec>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of comparisons")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out: Vec<ComparisonSpec> = Vec::new();
            while let Some(c) = seq.next_element_seed(Distinct(&out))? {
                out.push(c);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Pairs)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComparisonSpec {
    /// Run ids: `a` is the baseline, `b` the run compared with it.
    pub a: String,
    pub b: String,
    /// Changes below this percentage are not coloured (default 5); from 0 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "optional_threshold")]
    pub threshold_pct: Option<f64>,
}

fn optional_threshold<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = f64::deserialize(d)?;
    super::settings::check_threshold_pct(v).map(Some).map_err(serde::de::Error::custom)
}

/// A server setting that differs between two runs' `server_settings` (absent on one side:
/// `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingChange {
    pub name: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

impl std::fmt::Display for SettingChange {
    /// `kv_cache_size_tokens 46592 vs 93184`, `enable_prefix_caching none vs True`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
        write!(f, "{} {} vs {}", self.name, side(&self.a), side(&self.b))
    }
}

/// The settings that differ between `a` and `b`, by name.
pub fn settings_changes(
    a: &std::collections::BTreeMap<String, String>,
    b: &std::collections::BTreeMap<String, String>,
) -> Vec<SettingChange> {
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter(|n| a.get(*n) != b.get(*n))
        .map(|n| SettingChange { name: n.clone(), a: a.get(n).cloned(), b: b.get(n).cloned() })
        .collect()
}

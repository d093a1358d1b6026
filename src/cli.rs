//! Command-line definitions (clap). Each subcommand maps to one function in `cmd`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use speed_matrix::bench::prompt::Api;

#[derive(Debug, Parser)]
#[command(
    name = "site",
    version = speed_matrix::units::BUILD_VERSION,
    about = "Measure LLM inference servers and publish the results as a static site"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build the static site from the data folder.
    Build(BuildArgs),
    /// Load and validate the data folder without writing anything.
    Check(CheckArgs),
    /// Build the site, serve it on 127.0.0.1 and rebuild on changes.
    Serve(ServeArgs),
    /// Import other benchmark tools' results (llm-inference-bench, vllm bench serve, SGLang
    /// bench_serving, guidellm, AIPerf, inference-perf, llm-d Benchmark Reports) as runs.
    Import(Box<ImportArgs>),
    /// Write a comparison page for two runs.
    Diff(DiffArgs),
    /// Write a run in another tool's format (llm-d Benchmark Report v0.2).
    Export(ExportArgs),
    /// Move runs' loose cell files (cells/, written before schema 5) into one cells.jsonl.gz
    /// a run.
    Repack(RepackArgs),
    /// Start a new results site: data/, site.toml, .gitignore and a publishing workflow.
    Init(InitArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) to stdout.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) of `site` or of one subcommand to stdout.
    Man(ManArgs),
    /// Measure an OpenAI-compatible server across the context x concurrency matrix.
    #[command(args_override_self = true)]
    Bench(Box<BenchArgs>),
    /// Serve a simulated OpenAI-compatible engine with exactly known behaviour (for tests
    /// and benchmarks of `site bench`).
    #[cfg(feature = "simulator")]
    #[command(hide = true, args_override_self = true)]
    SimulateEngine(Box<crate::sim::SimArgs>),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand's page (`site man bench`); without it, the page of `site` itself.
    pub subcommand: Option<String>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The new site's folder (created if missing; must be empty unless --force).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Write into a folder that is not empty, replacing files of the same names.
    #[arg(long)]
    pub force: bool,
    /// The workflow's command that installs `site` [default: pip install
    /// speed-matrix==VERSION, the version of this site].
    #[arg(long, value_name = "COMMAND")]
    pub install: Option<String>,
}

#[derive(Debug, Args, Clone)]
pub struct SiteArgs {
    /// Data folder (runs/, pages/, compare.json).
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Template overrides; files missing there use the built-in defaults.
    #[arg(long, default_value = "site-templates")]
    pub templates: PathBuf,
    /// Static asset overrides and extra assets.
    #[arg(long = "static", default_value = "static")]
    pub static_dir: PathBuf,
    /// Site settings (title, base_url, change threshold, prices); optional.
    #[arg(long, default_value = "site.toml")]
    pub config: PathBuf,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    /// Output folder; replaced whole, and only when the build succeeded.
    #[arg(long, default_value = "public")]
    pub out: PathBuf,
    /// Build even when no input changed since the output was built.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct RepackArgs {
    /// Data folder (runs/, pages/, compare.json).
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// The runs to repack (run ids); without any, every run of the data folder.
    pub runs: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub site: SiteArgs,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Base URL of the server, e.g. http://127.0.0.1:8000
    #[arg(long)]
    pub endpoint: String,
    /// Served model name to request (default: the first one /v1/models lists).
    #[arg(long)]
    pub model: Option<String>,
    /// chat (/v1/chat/completions) or completions (/v1/completions).
    #[arg(long, value_enum, default_value_t = ApiArg::Chat)]
    pub api: ApiArg,
    /// Decode contexts (8k = 8192 tokens).
    #[arg(long, default_value = "8k,16k,32k,64k,128k,251k")]
    pub contexts: String,
    /// Requests in flight at once.
    #[arg(long, default_value = "1,2,4,8,16,32,64,128")]
    pub concurrency: String,
    /// Contexts with a prefill sample (default: the decode contexts).
    #[arg(long)]
    pub prefill_contexts: Option<String>,
    /// Measurement window of each decode cell.
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub duration: Duration,
    /// max_tokens of each decode request (at least 1: a decode cell measures output).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_output: u32,
    /// Measure each cell N times, the repetitions interleaved across the matrix (every cell
    /// once, then every cell again), so slow drift spreads over all cells. 3 for published
    /// runs: comparisons judge a change only between repeated cells.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=speed_matrix::format::validate::MAX_REPETITIONS as i64))]
    pub repeat: u32,
    /// A second live server (its base URL): every cell is measured on --endpoint (A) and on
    /// this one (B) in alternating order (A B, then B A, ...), and the two runs are compared on
    /// their paired differences, so the machine's drift cancels.
    #[arg(long, value_name = "URL", conflicts_with_all = ["resume", "dry_run"])]
    pub versus: Option<String>,
    /// With --versus and --launch: start the second server (B) with this shell command, as
    /// --launch starts A. Both are restarted together (--restarts), so each pair of
    /// repetitions runs on a fresh process a side and the pairs carry the noise between
    /// processes.
    #[arg(long, value_name = "CMD", requires_all = ["versus", "launch"])]
    pub versus_launch: Option<String>,
    /// The run id of --versus's run [default: the first run's id with -versus].
    #[arg(long, value_name = "ID", requires = "versus")]
    pub versus_run_id: Option<String>,
    /// Start the server under test with this shell command (run by /bin/sh -c), wait until
    /// --endpoint answers, measure, and stop it (SIGTERM, then SIGKILL); recorded, redacted,
    /// as the run's launch command, its output kept in the run folder, redacted.
    #[arg(long, value_name = "CMD")]
    pub launch: Option<String>,
    /// With --launch: spread the repetitions over this many server processes, each started
    /// afresh, so the run's repetitions include the noise between processes.
    #[arg(long, value_name = "K", requires = "launch", value_parser = clap::value_parser!(u32).range(1..=speed_matrix::format::validate::MAX_REPETITIONS as i64))]
    pub restarts: Option<u32>,
    /// With --launch: how long a server process may take to answer at --endpoint.
    #[arg(long, default_value = "300s", value_parser = duration, requires = "launch")]
    pub launch_timeout: Duration,
    /// Measured prefill requests per context and repetition (each with a fresh prompt tag,
    /// after one discarded warm-up request); the page shows their median and spread.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=speed_matrix::format::validate::MAX_PREFILL_SAMPLES as i64))]
    pub prefill_samples: u32,
    /// Prefix reuse of the decode cells, in percent: each request's prompt starts with a
    /// prefix this share of it long that the cell's other requests send too, then a part of
    /// its own (0: nothing shared). Without it, every stream repeats one identical prompt.
    /// Several levels (`0,50,90`) measure the matrix at each in turn, each level a run of
    /// its own named RUN-reuse<PCT>.
    #[arg(long, value_name = "PCT,...", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(0..=100))]
    pub prefix_reuse: Vec<u32>,
    /// Each stream a conversation of this many turns (chat API): a turn's prompt carries the
    /// earlier turns and their answers, then a new question; then a new conversation.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=32))]
    pub turns: Option<u32>,
    /// Request rates (requests per second) to measure open-loop instead of the concurrency
    /// matrix: at each context and rate, requests are sent on a schedule whether or not
    /// earlier ones have ended; the window counts those scheduled inside it and follows each
    /// to its end (or --drain-timeout: a failed request). `0.5,1,2,4`, or `auto`: a
    /// closed-loop probe of the peak at the first context, then rates from 10% to 110% of
    /// it, then two more near the knee.
    #[arg(long, value_name = "RPS,...")]
    pub rates: Option<String>,
    /// How the requests of --rates arrive: poisson (independent), constant (evenly spaced) or
    /// gamma:CV (gaps of that coefficient of variation: bursts above 1). Default: poisson.
    #[arg(long, value_name = "PROCESS", requires = "rates")]
    pub arrival: Option<String>,
    /// The seed every schedule of --rates is drawn from (recorded; the same seed draws the
    /// same schedule). Default: a new one, recorded in the run.
    #[arg(long, requires = "rates")]
    pub seed: Option<u64>,
    /// With --rates or --trace: the most requests in flight; past it the client does not send and the
    /// cell says it fell behind its schedule.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_in_flight: u32,
    /// With --rates: each request's prompt length drawn from a normal distribution of this
    /// mean and standard deviation in tokens (`1024:256`; `1024` for all alike), in place of
    /// the contexts' prompts. The run has one row, the mean.
    #[arg(long, value_name = "MEAN:SD", requires = "rates")]
    pub input_tokens: Option<String>,
    /// With --rates: each request's answer length drawn the same way (`256:64`), asked for
    /// as max_tokens with ignore_eos, in place of --max-output.
    #[arg(long, value_name = "MEAN:SD", requires = "rates")]
    pub output_tokens: Option<String>,
    /// Replay a production trace open-loop instead of the matrix: each request at its
    /// timestamp, with its input and output lengths, equal block ids sent as equal text (so
    /// the trace's prefix sharing reaches the server's cache). Mooncake, Bailian (JSON lines),
    /// BurstGPT or Azure (CSV), told from the content or by --trace-format.
    #[arg(long, value_name = "FILE", conflicts_with = "rates")]
    pub trace: Option<PathBuf>,
    /// The trace's format: mooncake, bailian, burstgpt or azure (default: told from its first line).
    #[arg(long, value_name = "FORMAT", requires = "trace")]
    pub trace_format: Option<String>,
    /// Seconds into the trace where the replay starts (default 0).
    #[arg(long, value_name = "SECONDS", requires = "trace")]
    pub trace_start: Option<f64>,
    /// Seconds of the trace replayed (default: to its end).
    #[arg(long, value_name = "SECONDS", requires = "trace")]
    pub trace_duration: Option<f64>,
    /// Trace seconds per replayed second (2: twice as fast; 0.5: half as fast).
    #[arg(long, value_name = "X", requires = "trace")]
    pub speedup: Option<f64>,
    /// Factor on every input and output length of the trace (and its block size), for a
    /// smaller server; the run says how many requests it changed.
    #[arg(long, value_name = "F", requires = "trace")]
    pub scale_lengths: Option<f64>,
    /// Longest input sent, in tokens: longer ones are cut (and counted). Inputs past the
    /// server's length are left out, outputs past it cut (and counted).
    #[arg(long, value_name = "TOKENS", requires = "trace")]
    pub max_input: Option<u64>,
    /// KV cache budget in tokens (overrides what the server reports).
    #[arg(long)]
    pub kv_budget: Option<u64>,
    /// Run folder name under data/runs/ (default: model-engine-timestamp).
    #[arg(long)]
    pub run_id: Option<String>,
    /// The data folder the run is written under (data/runs/RUN_ID).
    #[arg(long, default_value = "data")]
    pub data: std::path::PathBuf,
    /// Continue the run named by --run-id: measure only its missing cells.
    #[arg(long)]
    pub resume: bool,
    /// Print the plan (cells to run, Over capacity cells and why) and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// Environment variable holding the API key (never pass a key on the command line).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// Environment variable holding an extra request header, `Header-Name: value` (e.g. a
    /// gateway's x-api-key); repeat for more. Never given on the command line, never stored.
    #[arg(long = "header-env", value_name = "NAME")]
    pub header_env: Vec<String>,
    /// PEM file of a private CA that signed the https server's certificate.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<std::path::PathBuf>,
    /// Accept any https certificate (self-signed test servers). Printed as a warning and
    /// recorded in the run.
    #[arg(long)]
    pub insecure: bool,
    /// Sample device power, utilization, memory and SM clock once a second during each
    /// cell (average and peak power, joules per output token). Without the tool the run
    /// goes on without it.
    #[arg(long, value_enum)]
    pub telemetry: Option<TelemetryArg>,

    #[command(flatten)]
    pub facts: FactsArgs,

    /// Steady time after every stream has tokens, before the window opens.
    #[arg(long, default_value = "3s", help_heading = "Timing", value_parser = duration)]
    pub warmup_hold: Duration,
    /// Longest wait for all C streams to be active.
    #[arg(long, default_value = "120s", help_heading = "Timing", value_parser = duration)]
    pub warmup_timeout: Duration,
    /// Longest wait for the server to report no running requests between cells.
    #[arg(long, default_value = "120s", help_heading = "Timing", value_parser = duration)]
    pub drain_timeout: Duration,
    /// A stream silent this long has stalled (the cell becomes an error).
    #[arg(long, default_value = "120s", help_heading = "Timing", value_parser = duration)]
    pub stall_timeout: Duration,
    /// How often the server's running-requests gauge is read [default: a tenth of
    /// --duration, at most 1s, at least 100ms] (a short window still gets ten samples).
    #[arg(long, help_heading = "Timing", value_parser = duration)]
    pub gauge_interval: Option<Duration>,
    /// Repeated characters that make a loop.
    #[arg(long, default_value_t = 4096, help_heading = "Loop detection")]
    pub loop_min_chars: usize,
    /// Repetitions of one passage that make a loop.
    #[arg(long, default_value_t = 4, help_heading = "Loop detection")]
    pub loop_min_cycles: usize,
    /// Never stop a stream as Looped (for models whose real answers repeat).
    #[arg(long, help_heading = "Loop detection")]
    pub no_loop_detection: bool,
}

/// Where device telemetry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TelemetryArg {
    NvidiaSmi,
}

impl From<TelemetryArg> for speed_matrix::bench::telemetry::TelemetrySource {
    fn from(t: TelemetryArg) -> Self {
        match t {
            TelemetryArg::NvidiaSmi => speed_matrix::bench::telemetry::TelemetrySource::NvidiaSmi,
        }
    }
}

/// The API a bench drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    Chat,
    Completions,
}

impl From<ApiArg> for Api {
    fn from(a: ApiArg) -> Api {
        match a {
            ApiArg::Chat => Api::Chat,
            ApiArg::Completions => Api::Completions,
        }
    }
}

/// The longest duration any timing flag accepts.
const MAX_DURATION: Duration = Duration::from_secs(7 * 86_400);

/// A positive duration of at most 7 days: `30s`, `1.5s`, `500ms`, `2m`, `1h 30m`
/// (humantime's forms), or a bare number of seconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let parsed = match t.parse::<f64>() {
        Ok(_) => humantime::parse_duration(&format!("{t}s")),
        Err(_) => humantime::parse_duration(t),
    };
    let d = parsed.map_err(|e| format!("{s:?} is not a duration ({e}; examples: 30s, 1.5s, 500ms, 2m)"))?;
    if d.is_zero() {
        return Err(format!("{s:?}: a duration must be positive"));
    }
    if d > MAX_DURATION {
        return Err(format!("{s:?} is longer than the longest duration accepted (7 days)"));
    }
    Ok(d)
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run: its id under --data, or its folder's path.
    pub run: String,
    #[command(flatten)]
    pub site: SiteArgs,
    /// The format written.
    #[arg(long, value_enum, default_value = "llmd-br-0.2")]
    pub format: ExportFormat,
    /// Output folder (default: export/<RUN>); replaced whole, only on success.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Formats `site export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// llm-d Benchmark Report v0.2 (YAML): one report a repetition of each valid decode cell.
    #[value(name = "llmd-br-0.2")]
    LlmdBr02,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Baseline run: a run id under --data, or a path to a run folder.
    pub run_a: String,
    /// The run compared with it.
    pub run_b: String,
    #[command(flatten)]
    pub site: SiteArgs,
    /// Output folder (default: diff/<A>--<B>); replaced whole, only on success.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Changes below this percentage are not called faster or slower [default: site.toml's
    /// change_threshold_pct, else 5].
    #[arg(long, value_parser = parse_threshold)]
    pub threshold: Option<f64>,
    /// Exit 1 when any cell is judged slower or stopped working (valid in A; an error, looped
    /// or over capacity in B), for CI pipelines that gate an engine upgrade; single
    /// measurements are never judged, so measure with --repeat 3.
    #[arg(long)]
    pub fail_on_regression: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    /// Output folder the site is built into and served from (outside the data folder).
    #[arg(long, default_value = "public")]
    pub out: PathBuf,
    /// Port (0: any free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address to listen on; only loopback unless asked (e.g. --bind 0.0.0.0).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Open the site in the default browser.
    #[arg(long)]
    pub open: bool,
    /// Do not reload open pages after a rebuild.
    #[arg(long)]
    pub no_live_reload: bool,
}

/// Run facts the data cannot tell (shared by `bench` and `import`).
#[derive(Debug, Args, Clone)]
pub struct FactsArgs {
    /// Accelerator name, e.g. "H200 SXM".
    #[arg(long, help_heading = "Run facts")]
    pub gpu: Option<String>,
    /// Devices the server runs on (per-device figures divide by it) [default: 1].
    #[arg(long, help_heading = "Run facts")]
    pub gpu_count: Option<u32>,
    /// Memory per GPU, GB.
    #[arg(long, help_heading = "Run facts")]
    pub gpu_memory_gb: Option<f64>,
    /// CPU name (the device of a CPU-only server).
    #[arg(long, help_heading = "Run facts")]
    pub cpu: Option<String>,
    /// e.g. "Discrete GPU", "CPU".
    #[arg(long, help_heading = "Run facts")]
    pub hardware_kind: Option<String>,
    /// Operating system of the server's machine [default: this machine's, for a local server].
    #[arg(long, help_heading = "Run facts")]
    pub os: Option<String>,
    /// Model repository id for the pages, when the served name differs.
    #[arg(long, help_heading = "Run facts")]
    pub model_id: Option<String>,
    /// The model's revision (a commit or tag of its repository).
    #[arg(long, help_heading = "Run facts")]
    pub revision: Option<String>,
    /// Engine name (vllm, sglang, llama.cpp) [default: what the server says].
    #[arg(long, help_heading = "Run facts")]
    pub engine: Option<String>,
    /// Engine version [default: what the server says].
    #[arg(long, help_heading = "Run facts")]
    pub engine_version: Option<String>,
    /// Weight quantization, e.g. FP8, Q4_K_M [default: what the server says].
    #[arg(long, help_heading = "Run facts")]
    pub quantization: Option<String>,
    /// Compute backend, e.g. CUDA 12.8, ROCm, CPU.
    #[arg(long, help_heading = "Run facts")]
    pub backend: Option<String>,
    /// Where the engine's source lives (a repository URL).
    #[arg(long, help_heading = "Run facts")]
    pub engine_repository: Option<String>,
    /// The engine's build (a build number or image tag).
    #[arg(long, help_heading = "Run facts")]
    pub engine_build: Option<String>,
    /// The engine's source commit.
    #[arg(long, help_heading = "Run facts")]
    pub engine_commit: Option<String>,
    /// The server's launch command; secrets in it are redacted before it is stored.
    #[arg(long, help_heading = "Run facts")]
    pub launch_command: Option<String>,
    /// A Markdown file shown on the run page.
    #[arg(long, help_heading = "Run facts")]
    pub notes: Option<std::path::PathBuf>,
    /// One line for the run page's header (longer text goes in --notes).
    #[arg(long, help_heading = "Run facts")]
    pub description: Option<String>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Results files or folders of one tool: llm-inference-bench `benchmark_results.json`,
    /// `vllm bench serve --save-result` JSON files, SGLang `bench_serving` JSONL, guidellm
    /// `benchmarks.json`, AIPerf profile or sweep folders, inference-perf report folders,
    /// llm-d Benchmark Report v0.2 YAML files or folders.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The files' format, instead of telling it from their content: llm-inference-bench,
    /// vllm, sglang, guidellm, aiperf, inference-perf or llmd-br-0.2.
    #[arg(long)]
    pub format: Option<String>,
    /// Run folder name (default: from the file name).
    #[arg(long)]
    pub run_id: Option<String>,
    /// The data folder the run is written under (data/runs/RUN_ID).
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Replace an existing run with the same id.
    #[arg(long)]
    pub force: bool,
    /// Import what can be imported when part of the results is broken (a truncated stage
    /// report, a sweep folder without its profile), listing each part skipped. Without it,
    /// any such part is an error and nothing is imported.
    #[arg(long)]
    pub skip_broken: bool,
    /// The tool's version, for files that do not record it (vllm bench serve, SGLang
    /// bench_serving, inference-perf); a version the files record is kept.
    #[arg(long)]
    pub tool_version: Option<String>,
    #[command(flatten)]
    pub facts: FactsArgs,
}

/// A percentage from 0 to 100, as `site.toml` and `compare.json` take it.
fn parse_threshold(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    speed_matrix::format::settings::check_threshold_pct(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("45"), Ok(Duration::from_secs(45)));
        for bad in ["-1s", "0s", "8d", "1e300s", "NaNs", "99999999999999999999s", "soon"] {
            assert!(duration(bad).is_err(), "{bad} accepted");
        }
    }
}

//! Request-rate cells (`site bench --rates`): each a context at an offered rate, measured
//! open-loop, one JSON line a cell and repetition in `rates.jsonl` beside `run.json`; the
//! run's manifest says how the traffic was drawn (`traffic`). Every request of the cell is
//! kept: when it was scheduled, when it was sent, when its tokens came, how it ended.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::{CellError, Status, Window};

/// The rate cells of a run.
pub const RATES_FILE: &str = "rates.jsonl";

/// Most requests one rate cell may record.
pub const MAX_RATE_REQUESTS: usize = 1_000_000;
/// Longest error message a request may keep.
pub const MAX_ERROR_CHARS: usize = 16_384;

/// How a rate run's traffic was drawn: enough to draw the same schedule again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// `poisson`, `constant` or `gamma:CV`.
    pub arrival: String,
    pub seed: u64,
    /// The offered rates, requests per second.
    pub rates_rps: Vec<f64>,
    /// Requests in flight past which the client stops sending (and says so).
    pub max_in_flight: u32,
    /// Seconds of traffic at the rate before the window (not counted).
    pub warmup_s: f64,
    /// `--rates auto`: what the probe measured and how the rates were chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoRates>,
    /// `--input-tokens` / `--output-tokens`: the distributions each request's lengths were
    /// drawn from (`mean:sd` in tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<String>,
    /// A trace replay (`--trace`): what was replayed and what the replay changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceReplay>,
}

/// How `--rates auto` chose its rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoRates {
    /// The probe: this many requests kept in flight (a closed loop) at `context` tokens for
    /// `probe_s` seconds completed `peak_rps` requests a second.
    pub context: u32,
    pub concurrency: u32,
    pub probe_s: f64,
    pub peak_rps: f64,
    /// The last rate kept up with and the first not, between which two more were measured
    /// (absent where every rate was kept up with, or none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<(f64, f64)>,
}

/// A replayed trace: its slice, speed-up and scaling, what they changed, and the prefix
/// share the trace's block ids imply (an unbounded cache's, beside what the server reports).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceReplay {
    /// The trace file's name (its folder is the user's own business).
    pub file: String,
    /// `mooncake`, `bailian`, `burstgpt` or `azure`.
    pub format: String,
    pub start_s: f64,
    /// Seconds of the trace replayed.
    pub duration_s: f64,
    pub speedup: f64,
    pub scale_lengths: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input: Option<u64>,
    /// Tokens a block id stands for, as sent.
    pub block_tokens: u32,
    /// Requests of the trace inside the slice.
    pub in_slice: u64,
    /// Requests whose lengths the scaling changed.
    pub scaled: u64,
    /// Requests whose input `--max-input` cut or whose output the server's length cut.
    pub capped: u64,
    /// Requests left out: their input alone past what the server holds.
    pub dropped: u64,
    /// Percent of input tokens an unbounded prefix cache could serve, by the block ids.
    pub planned_reuse_pct: f64,
    /// Tokens every prompt starts with (the run's tag and the server's chat template), and
    /// the percent an unbounded cache could serve of the prompts as sent (that start
    /// included): what the server's own count is set beside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_reuse_pct: Option<f64>,
    /// Requests whose input was shorter than that common start: they were sent at its length
    /// and a token a block (a prompt cannot be shorter than the template the server adds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shorter_than_prefix: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateCell {
    pub schema_version: u32,
    /// Prompt size in tokens (the matrix row).
    pub context: u32,
    /// The offered rate, requests per second.
    pub rate_rps: f64,
    #[serde(default = "first", skip_serializing_if = "is_first")]
    pub repetition: u32,
    /// `valid` (measured) or `error` (the cell could not run: its prompt, the server).
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u32>,
    /// The counted window on the run's clock: requests scheduled inside it are the cell's.
    pub window: Window,
    pub requests: Vec<ScheduledRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CellError>,
    /// The cell's figures as another tool reported them, where it kept no request records
    /// (an llm-d Benchmark Report's rate stage): shown as reported, never recomputed, and
    /// no goodput (that needs each request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<ReportedRate>,
}

/// A rate cell's aggregate figures as a report gave them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedRate {
    /// Requests sent in the stage, and those that failed or did not complete.
    pub requests: u64,
    pub failed: u64,
    /// Requests completed per second.
    pub achieved_rps: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tps: Option<f64>,
    #[serde(default)]
    pub ttft_ms: ReportedSpread,
    #[serde(default)]
    pub tbt_ms: ReportedSpread,
    #[serde(default)]
    pub e2e_ms: ReportedSpread,
}

/// A latency's percentiles as reported (milliseconds), each where the report gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedSpread {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
}

impl ScheduledRequest {
    /// Sent, answered and ended without an error.
    pub fn completed(&self) -> bool {
        self.error.is_none() && self.send_s.is_some() && self.end_s.is_some() && self.first_token_s.is_some()
    }
}

impl RateCell {
    /// The requests scheduled inside the window.
    pub fn counted(&self) -> impl Iterator<Item = &ScheduledRequest> {
        self.requests.iter().filter(|r| r.scheduled_s >= self.window.start_s && r.scheduled_s < self.window.end_s)
    }

    /// The rate at which the window's requests were completed: completed less one over the
    /// time from the first's end to the last's (`None` below two, or all ending at once).
    /// Counting the ends inside the window instead would miss its last requests, still
    /// running at its edge: a bias of a whole latency's worth.
    pub fn completion_rate(&self) -> Option<f64> {
        let ends: Vec<f64> = self.counted().filter(|r| r.completed()).filter_map(|r| r.end_s).collect();
        let first = ends.iter().copied().reduce(f64::min)?;
        let last = ends.iter().copied().reduce(f64::max)?;
        (ends.len() >= 2 && last > first).then(|| (ends.len() - 1) as f64 / (last - first))
    }
}

fn first() -> u32 {
    1
}

fn is_first(r: &u32) -> bool {
    *r == 1
}

/// One request of an open loop, on the run's clock (seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduledRequest {
    pub scheduled_s: f64,
    /// Absent: not sent (the in-flight bound was reached, or, with `error`, held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_s: Option<f64>,
    /// A request that follows another (a replayed conversation's next turn): when it became
    /// due, the end of the one it follows, where that was after `scheduled_s`. Its lag counts
    /// from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_token_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_s: Option<f64>,
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u32>,
    /// Why it failed (`drain timeout`: still running when the drain ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Prompt tokens the server reports it found cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// A replayed trace's request: its timestamp and lengths in the trace (as planned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<PlannedRequest>,
}

/// What a replayed trace asked of one request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedRequest {
    /// Its timestamp in the trace, seconds from the trace's first request.
    pub trace_s: f64,
    /// Input tokens sent for (after scaling and capping).
    pub input_tokens: u64,
    /// Output tokens asked for (`max_tokens` with `ignore_eos`).
    pub output_tokens: u64,
}

/// What `site check` refuses in a rate cell.
pub fn validate_rate_cell(c: &RateCell) -> Result<()> {
    if !(c.rate_rps.is_finite() && c.rate_rps > 0.0) {
        bail!("rate_rps: expected requests per second above 0, found {}", c.rate_rps);
    }
    if c.context == 0 || c.repetition == 0 {
        bail!("context and repetition start at 1");
    }
    if !(c.window.start_s.is_finite() && c.window.end_s.is_finite() && c.window.end_s > c.window.start_s) {
        bail!("window: expected a start before its end");
    }
    if c.requests.len() > MAX_RATE_REQUESTS {
        bail!("requests: {} recorded, at most {MAX_RATE_REQUESTS}", c.requests.len());
    }
    if let Some(r) = &c.reported {
        validate_reported(r)?;
    }
    for (i, r) in c.requests.iter().enumerate() {
        let times = [Some(r.scheduled_s), r.send_s, r.due_s, r.first_token_s, r.last_token_s, r.end_s];
        if times.iter().flatten().any(|t| !(t.is_finite() && *t >= 0.0)) {
            bail!("requests[{i}]: times must be seconds from 0 on the run's clock");
        }
        if r.error.as_ref().is_some_and(|e| e.chars().count() > MAX_ERROR_CHARS) {
            bail!("requests[{i}].error: longer than {MAX_ERROR_CHARS} characters");
        }
    }
    Ok(())
}

fn validate_reported(r: &ReportedRate) -> Result<()> {
    if r.failed > r.requests {
        bail!("reported.failed: {} of {} requests", r.failed, r.requests);
    }
    let spreads = [r.ttft_ms, r.tbt_ms, r.e2e_ms];
    let figures =
        spreads.iter().flat_map(|s| [s.mean, s.p50, s.p90, s.p99]).chain([Some(r.achieved_rps), r.output_tps]);
    if figures.flatten().any(|x| !(x.is_finite() && x >= 0.0)) {
        bail!("reported: expected its rates and latencies as numbers from 0");
    }
    Ok(())
}

/// What `site check` refuses in a run's traffic.
pub fn validate_traffic(t: &Traffic) -> Result<()> {
    // Empty: `--rates auto` stopped before its probe chose any.
    if t.rates_rps.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        bail!("traffic.rates_rps: expected rates above 0 requests per second");
    }
    if let Some(a) = &t.auto {
        let figures = [a.probe_s, a.peak_rps, a.knee.map_or(1.0, |k| k.0), a.knee.map_or(1.0, |k| k.1)];
        if figures.iter().any(|x| !(x.is_finite() && *x > 0.0)) || a.concurrency == 0 {
            bail!("traffic.auto: expected a probe's concurrency, seconds and peak above 0");
        }
    }
    if !(t.warmup_s.is_finite() && t.warmup_s >= 0.0) || t.max_in_flight == 0 {
        bail!("traffic: warmup_s must be seconds from 0 and max_in_flight at least 1");
    }
    if t.arrival.chars().count() > 64 || t.arrival.chars().any(char::is_control) {
        bail!("traffic.arrival: expected poisson, constant, gamma:CV or trace");
    }
    if let Some(r) = &t.trace {
        let factors =
            [r.start_s, r.duration_s, r.speedup, r.scale_lengths, r.planned_reuse_pct, r.sent_reuse_pct.unwrap_or(0.0)];
        let pct = [r.planned_reuse_pct, r.sent_reuse_pct.unwrap_or(0.0)];
        if factors.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || r.speedup == 0.0 || pct.iter().any(|p| *p > 100.0) {
            bail!("traffic.trace: expected start, duration, speed-up, scale and reuse as numbers from 0");
        }
        if r.file.chars().count() > 255 || r.format.chars().count() > 32 || r.block_tokens == 0 {
            bail!("traffic.trace: expected a file name, a format and a block size");
        }
    }
    Ok(())
}

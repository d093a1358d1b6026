//! The figures of a request-rate cell, from its requests: what was offered and what was
//! served, latency percentiles where n supports them, the requests in flight, the client's
//! own lag behind its schedule, and whether the server kept up (Saturated) or the client
//! did not (its figures are then not the server's). The window counts the requests
//! scheduled inside it, each to its end: none is dropped for being slow.

use serde::Serialize;

use crate::format::settings::Slo;
use crate::format::{RateCell, ReportedRate, ReportedSpread, ScheduledRequest, Status};
use crate::stats::{percentile, percentile_supported};

/// Achieved below this share of offered: the server did not keep up.
pub const SATURATED_SHARE: f64 = 0.9;
/// The client's lag (actual minus scheduled send) at p99 past which its schedule was not
/// kept, in milliseconds.
pub const MAX_LAG_P99_MS: f64 = 50.0;

#[derive(Debug, Clone, Serialize)]
pub struct RateView {
    pub context: u32,
    pub rate_rps: f64,
    pub repetition: u32,
    /// Absent for a cell that could not run.
    pub figures: Option<RateFigures>,
    pub error: Option<String>,
    /// Each request scheduled in the window as an objective reads it (what goodput counts).
    #[serde(skip)]
    pub outcomes: Vec<Outcome>,
    /// A cell of requests with their own lengths (a trace replay, drawn lengths): its
    /// traffic through time, for the replay's charts.
    #[serde(skip)]
    pub series: Option<TimeSeries>,
    /// Every request the cell scheduled, warm-up included, in schedule order: the evidence
    /// each figure is counted from (the run's `requests.csv.gz`).
    #[serde(skip)]
    pub requests: Vec<RequestRow>,
}

/// One scheduled request as the evidence lists it: instants in seconds from the cell's
/// window start (negative: warm-up), durations in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    pub scheduled_s: f64,
    /// Scheduled inside the window: counted in the cell's figures.
    pub in_window: bool,
    pub outcome: RequestOutcome,
    /// Actual minus scheduled send.
    pub lag_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub tbt_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    pub output_tokens: u64,
    pub prompt_tokens: Option<u32>,
    pub cached_tokens: Option<u64>,
    /// A replayed trace's request: what the trace asked.
    pub planned: Option<crate::format::PlannedRequest>,
    pub error: Option<String>,
}

/// What became of a scheduled request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestOutcome {
    Completed,
    /// An error, or still running at the drain timeout.
    Failed,
    /// The client's in-flight bound was reached.
    NotSent,
}

fn request_row(r: &ScheduledRequest, window: &crate::format::Window) -> RequestRow {
    let ms = |a: Option<f64>, b: Option<f64>| Some((b? - a?) * 1000.0);
    let outcome = match (r.send_s, ended_ok(r)) {
        (None, _) if r.error.is_some() => RequestOutcome::Failed,
        (None, _) => RequestOutcome::NotSent,
        (Some(_), true) => RequestOutcome::Completed,
        (Some(_), false) => RequestOutcome::Failed,
    };
    let tbt = (r.tokens >= 2).then(|| ms(r.first_token_s, r.last_token_s).map(|d| d / (r.tokens - 1) as f64));
    RequestRow {
        scheduled_s: r.scheduled_s - window.start_s,
        in_window: r.scheduled_s >= window.start_s && r.scheduled_s < window.end_s,
        outcome,
        lag_ms: lag_ms(r),
        ttft_ms: ms(r.send_s, r.first_token_s),
        tbt_ms: tbt.flatten(),
        e2e_ms: ms(r.send_s, r.end_s),
        output_tokens: r.tokens,
        prompt_tokens: r.prompt_tokens,
        cached_tokens: r.cached_tokens,
        planned: r.planned,
        error: r.error.clone(),
    }
}

/// A cell's traffic through its window in [`TIME_BINS`] bins (x: seconds from the window's
/// start, the bin's middle), and its TTFT by input length in [`INPUT_BINS`] bins of equal
/// counts (x: the bin's median input).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeSeries {
    /// Requests sent, per second.
    pub arrivals_rps: Vec<(f64, f64)>,
    /// Requests ended (completed), per second.
    pub completions_rps: Vec<(f64, f64)>,
    /// Requests in flight at the bin's middle.
    pub in_flight: Vec<(f64, f64)>,
    /// TTFT p50 of the requests sent in the bin, ms (bins with none left out).
    pub ttft_p50_ms: Vec<(f64, f64)>,
    /// TTFT p50 by input length, ms.
    pub ttft_by_input: Vec<(f64, f64)>,
    /// Client lag (actual minus scheduled send) at p50, p90, p99 and the most, ms.
    pub lag_ms: Vec<(f64, f64)>,
}

pub const TIME_BINS: usize = 60;
pub const INPUT_BINS: usize = 10;

fn time_series(c: &RateCell) -> TimeSeries {
    let (start, end) = (c.window.start_s, c.window.end_s);
    let width = (end - start) / TIME_BINS as f64;
    let mid = |k: usize| (k as f64 + 0.5) * width;
    let bin = |t: f64| ((t - start) / width).floor();
    let count_in = |times: &mut dyn Iterator<Item = f64>| {
        let mut n = vec![0usize; TIME_BINS];
        for t in times {
            let k = bin(t);
            if k >= 0.0 && (k as usize) < TIME_BINS {
                n[k as usize] += 1;
            }
        }
        n.iter().enumerate().map(|(k, v)| (mid(k), *v as f64 / width)).collect::<Vec<_>>()
    };
    let arrivals_rps = count_in(&mut c.requests.iter().filter_map(|r| r.send_s));
    let completions_rps = count_in(&mut c.requests.iter().filter(|r| ended_ok(r)).filter_map(|r| r.end_s));
    let in_flight = (0..TIME_BINS)
        .map(|k| {
            let t = start + mid(k);
            let n = c.requests.iter().filter(|r| r.send_s.is_some_and(|s| s <= t) && r.end_s.is_none_or(|e| e > t));
            (mid(k), n.count() as f64)
        })
        .collect();
    let ttft = |r: &ScheduledRequest| Some((r.first_token_s? - r.send_s?) * 1000.0).filter(|_| ended_ok(r));
    let mut by_bin: Vec<Vec<f64>> = vec![Vec::new(); TIME_BINS];
    for r in &c.requests {
        if let (Some(s), Some(t)) = (r.send_s, ttft(r)) {
            let k = bin(s);
            if k >= 0.0 && (k as usize) < TIME_BINS {
                by_bin[k as usize].push(t);
            }
        }
    }
    let ttft_p50_ms = by_bin.iter().enumerate().filter_map(|(k, v)| Some((mid(k), percentile(v, 50.0)?))).collect();
    let mut by_input: Vec<(f64, f64)> = c
        .requests
        .iter()
        .filter_map(|r| Some((r.planned.map(|p| p.input_tokens as f64).or(r.prompt_tokens.map(f64::from))?, ttft(r)?)))
        .collect();
    by_input.sort_by(|a, b| a.0.total_cmp(&b.0));
    let per = by_input.len().div_ceil(INPUT_BINS).max(1);
    let ttft_by_input = by_input
        .chunks(per)
        .filter_map(|chunk| {
            let inputs: Vec<f64> = chunk.iter().map(|x| x.0).collect();
            let ttfts: Vec<f64> = chunk.iter().map(|x| x.1).collect();
            Some((percentile(&inputs, 50.0)?, percentile(&ttfts, 50.0)?))
        })
        .collect();
    let lags: Vec<f64> = c.requests.iter().filter_map(|r| Some((r.send_s? - r.scheduled_s) * 1000.0)).collect();
    let lag_ms = [50.0, 90.0, 99.0, 100.0]
        .iter()
        .filter(|p| **p == 100.0 || percentile_supported(lags.len(), **p))
        .filter_map(|p| Some((*p, percentile(&lags, *p)?)))
        .collect();
    TimeSeries { arrivals_rps, completions_rps, in_flight, ttft_p50_ms, ttft_by_input, lag_ms }
}

/// A window's request for the objectives: its TTFT and mean time between tokens, both
/// absent for a request that failed or was not sent (it meets no objective).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    pub ttft_ms: Option<f64>,
    pub tbt_ms: Option<f64>,
}

/// p50, p90 and p99 of a latency in milliseconds, each where n supports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spread3 {
    /// The mean, where there is a value (a report needs it; the pages show percentiles).
    #[serde(skip)]
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

impl Spread3 {
    fn of(values: &[f64]) -> Spread3 {
        let at = |p: f64| percentile_supported(values.len(), p).then(|| percentile(values, p)).flatten();
        let mean = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
        Spread3 { mean, p50: at(50.0), p90: at(90.0), p99: at(99.0) }
    }

    fn reported(s: &ReportedSpread) -> Spread3 {
        Spread3 { mean: s.mean, p50: s.p50, p90: s.p90, p99: s.p99 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateFigures {
    pub window_s: f64,
    /// Requests scheduled inside the window, and per second.
    pub scheduled: usize,
    pub offered_rps: f64,
    pub completed: usize,
    /// Ended in an error, or still running at the drain timeout.
    pub failed: usize,
    /// Not sent: the client's in-flight bound was reached.
    pub not_sent: usize,
    /// The rate at which the server completed the window's requests: between the first's end
    /// and the last's, one fewer request than completed (a server that keeps up ends them as
    /// they were sent, one that does not spreads them out). With fewer than two completed,
    /// the completed per second of window.
    pub achieved_rps: f64,
    /// Output tokens of the requests completed inside the window, per second.
    pub output_tps: f64,
    pub ttft_ms: Spread3,
    /// Each request's mean time between its tokens.
    pub tbt_ms: Spread3,
    pub e2e_ms: Spread3,
    /// Actual minus scheduled send of the requests sent: p50, p99 and the most.
    pub lag_p50_ms: Option<f64>,
    pub lag_p99_ms: Option<f64>,
    pub lag_max_ms: Option<f64>,
    /// Absent for figures as reported (no request records to count them from).
    pub in_flight_mean: Option<f64>,
    pub in_flight_max: Option<f64>,
    /// Why the server did not keep up, where it did not.
    pub saturated: Option<String>,
    /// Why the client did not keep its schedule, where it did not: the figures are then
    /// not the server's alone.
    pub client_behind: Option<String>,
    /// A replayed trace's cell: what the trace asked beside what was served.
    pub replay: Option<ReplayFigures>,
    /// The figures are another tool's report of the cell, not counted from its requests.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reported: bool,
}

/// A replayed trace's fidelity, over its window's completed requests: the input served
/// against the trace's (after scaling), answers that ended before their length, and the
/// prefix share the server reports cached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReplayFigures {
    /// Input tokens the trace asked for, and the server counted, of the requests that
    /// report both.
    pub planned_input_tokens: u64,
    pub served_input_tokens: u64,
    /// Served over planned input, in percent (100: exact).
    pub input_served_pct: Option<f64>,
    /// Output tokens asked for and served.
    pub planned_output_tokens: u64,
    pub served_output_tokens: u64,
    /// Completed requests whose answer ended before the length asked (an engine that stops
    /// at its end-of-text token despite `ignore_eos`).
    pub ended_early: usize,
    /// Percent of served input the server reports found in its prefix cache (absent where
    /// it reports none).
    pub cached_pct: Option<f64>,
}

fn replay_figures(done: &[&ScheduledRequest]) -> Option<ReplayFigures> {
    let planned: Vec<(&ScheduledRequest, crate::format::PlannedRequest)> =
        done.iter().filter_map(|r| r.planned.map(|p| (*r, p))).collect();
    if planned.is_empty() {
        return None;
    }
    let counted: Vec<(u64, u64)> =
        planned.iter().filter_map(|(r, p)| r.prompt_tokens.map(|t| (p.input_tokens, u64::from(t)))).collect();
    let (planned_in, served_in) = counted.iter().fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
    let cached: Vec<(u64, u64)> =
        planned.iter().filter_map(|(r, _)| Some((r.cached_tokens?, u64::from(r.prompt_tokens?)))).collect();
    let (hit, of) = cached.iter().fold((0, 0), |a, c| (a.0 + c.0.min(c.1), a.1 + c.1));
    Some(ReplayFigures {
        planned_input_tokens: planned_in,
        served_input_tokens: served_in,
        input_served_pct: (planned_in > 0).then(|| served_in as f64 / planned_in as f64 * 100.0),
        planned_output_tokens: planned.iter().map(|(_, p)| p.output_tokens).sum(),
        served_output_tokens: planned.iter().map(|(r, _)| r.tokens).sum(),
        ended_early: planned.iter().filter(|(r, p)| r.tokens < p.output_tokens).count(),
        cached_pct: (of > 0).then(|| hit as f64 / of as f64 * 100.0),
    })
}

pub fn rate_view(c: &RateCell) -> RateView {
    let figures = (c.status == Status::Valid).then(|| match &c.reported {
        Some(r) if c.requests.is_empty() => reported_figures(c, r),
        _ => rate_figures(c),
    });
    let (start, end) = (c.window.start_s, c.window.end_s);
    let outcomes = c
        .requests
        .iter()
        .filter(|r| r.scheduled_s >= start && r.scheduled_s < end)
        .map(|r| {
            let ok = ended_ok(r);
            let ttft = r.send_s.zip(r.first_token_s).map(|(s, f)| (f - s) * 1000.0).filter(|_| ok);
            let tbt = (r.tokens >= 2)
                .then(|| r.first_token_s.zip(r.last_token_s).map(|(f, l)| (l - f) * 1000.0 / (r.tokens - 1) as f64))
                .flatten()
                .filter(|_| ok);
            Outcome { ttft_ms: ttft, tbt_ms: tbt }
        })
        .collect();
    RateView {
        context: c.context,
        rate_rps: c.rate_rps,
        repetition: c.repetition,
        figures,
        error: c.error.as_ref().map(|e| e.message.clone()),
        outcomes: if c.status == Status::Valid { outcomes } else { Vec::new() },
        series: (c.status == Status::Valid && c.requests.iter().any(|r| r.planned.is_some())).then(|| time_series(c)),
        requests: c.requests.iter().map(|r| request_row(r, &c.window)).collect(),
    }
}

/// The share of a rate's requests that must meet an objective for the rate to be served at
/// it (goodput attainment).
pub const ATTAINMENT: f64 = 0.99;

/// Whether one request meets an objective: its TTFT within `max_ttft_ms` and
/// `max_prefill_ttft_ms` where set (each request of a rate cell is a fresh prompt, so its
/// TTFT is its queue and its prefill), its decode at least `min_tps_per_user` (time between
/// tokens at most 1000 / it). A failed request meets none.
pub fn request_meets(o: &Outcome, slo: &Slo) -> bool {
    let Some(ttft) = o.ttft_ms else { return false };
    let ttft_ok = [slo.max_ttft_ms, slo.max_prefill_ttft_ms].iter().flatten().all(|bound| ttft <= *bound);
    let speed_ok = o.tbt_ms.is_none_or(|tbt| tbt <= 1000.0 / slo.min_tps_per_user);
    ttft_ok && speed_ok
}

/// Goodput of one rate cell under one objective: requests per second of window meeting it,
/// and their share of the requests scheduled in the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Goodput {
    pub rate_rps: f64,
    pub rps: f64,
    pub share: f64,
}

/// The highest rate served at an objective, from the measured rates (lowest first).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "rps", rename_all = "snake_case")]
pub enum RateCapacity {
    /// Between two measured rates, interpolated on the log scale of rate.
    Interpolated(f64),
    /// Every measured rate met it: at least the highest.
    AtLeast(f64),
    /// The lowest measured rate did not: below it.
    Below(f64),
}

impl RateCapacity {
    /// The rate itself (interpolated, or the measured rate it is at least or below).
    pub fn rps(self) -> f64 {
        match self {
            RateCapacity::Interpolated(r) | RateCapacity::AtLeast(r) | RateCapacity::Below(r) => r,
        }
    }
}

/// One context's rate cells under one objective.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextCapacity {
    pub context: u32,
    pub slo: String,
    pub goodput: Vec<Goodput>,
    pub capacity: Option<RateCapacity>,
    /// Each repetition's own capacity, where it falls between two measured rates (what a
    /// comparison judges).
    #[serde(skip)]
    pub per_repetition: Vec<f64>,
}

/// Every context's capacity in requests per second under each objective (`slos` in the
/// site's order), from the run's rate cells; repetitions of a rate pooled.
pub fn capacities(rates: &[RateView], slos: &[(&str, &Slo)]) -> Vec<ContextCapacity> {
    let mut contexts: Vec<u32> = rates.iter().filter(|r| r.figures.is_some()).map(|r| r.context).collect();
    contexts.dedup();
    let mut out = Vec::new();
    for ctx in contexts {
        for (name, slo) in slos {
            let goodput = context_goodput(rates, ctx, slo);
            let points: Vec<(f64, f64)> = goodput.iter().map(|g| (g.rate_rps, g.share)).collect();
            let mut reps: Vec<u32> = rates.iter().filter(|r| r.context == ctx).map(|r| r.repetition).collect();
            reps.sort_unstable();
            reps.dedup();
            let per_repetition = if reps.len() < 2 {
                Vec::new()
            } else {
                reps.iter()
                    .filter_map(|&rep| {
                        let own: Vec<RateView> = rates.iter().filter(|r| r.repetition == rep).cloned().collect();
                        let points: Vec<(f64, f64)> =
                            context_goodput(&own, ctx, slo).iter().map(|g| (g.rate_rps, g.share)).collect();
                        match capacity(&points)? {
                            RateCapacity::Interpolated(r) => Some(r),
                            _ => None,
                        }
                    })
                    .collect()
            };
            out.push(ContextCapacity {
                context: ctx,
                slo: name.to_string(),
                capacity: capacity(&points),
                goodput,
                per_repetition,
            });
        }
    }
    out
}

fn context_goodput(rates: &[RateView], ctx: u32, slo: &Slo) -> Vec<Goodput> {
    let mut by_rate: Vec<(f64, usize, usize, f64)> = Vec::new();
    for r in rates.iter().filter(|r| r.context == ctx) {
        // Figures as reported carry no requests to judge one by one.
        let Some(f) = r.figures.as_ref().filter(|f| !f.reported) else { continue };
        let met = r.outcomes.iter().filter(|o| request_meets(o, slo)).count();
        match by_rate.iter_mut().find(|x| x.0 == r.rate_rps) {
            Some(x) => (x.1, x.2, x.3) = (x.1 + met, x.2 + r.outcomes.len(), x.3 + f.window_s),
            None => by_rate.push((r.rate_rps, met, r.outcomes.len(), f.window_s)),
        }
    }
    by_rate.sort_by(|a, b| a.0.total_cmp(&b.0));
    by_rate
        .into_iter()
        .map(|(rate, met, all, window)| Goodput {
            rate_rps: rate,
            rps: met as f64 / window,
            share: if all == 0 { 0.0 } else { met as f64 / all as f64 },
        })
        .collect()
}

/// The highest rate whose share meets [`ATTAINMENT`], from (rate, share) lowest rate first:
/// where the shares cross it between two rates, the crossing interpolated on the log scale.
pub fn capacity(points: &[(f64, f64)]) -> Option<RateCapacity> {
    let (&(low, low_share), &(high, _)) = (points.first()?, points.last()?);
    if low_share < ATTAINMENT {
        return Some(RateCapacity::Below(low));
    }
    let last_met = points.iter().rposition(|p| p.1 >= ATTAINMENT)?;
    let Some(&(r1, s1)) = points.get(last_met + 1) else { return Some(RateCapacity::AtLeast(high)) };
    let (r0, s0) = points[last_met];
    let t = (s0 - ATTAINMENT) / (s0 - s1);
    Some(RateCapacity::Interpolated((r0.ln() + t * (r1.ln() - r0.ln())).exp()))
}

/// Actual send minus when the request was due: its scheduled instant, or the end of the
/// request it follows where it was held for that.
fn lag_ms(r: &ScheduledRequest) -> Option<f64> {
    r.send_s.map(|s| (s - r.due_s.unwrap_or(r.scheduled_s).max(r.scheduled_s)) * 1000.0)
}

fn ended_ok(r: &ScheduledRequest) -> bool {
    r.completed()
}

pub fn rate_figures(c: &RateCell) -> RateFigures {
    let (start, end) = (c.window.start_s, c.window.end_s);
    let window_s = end - start;
    let counted: Vec<&ScheduledRequest> =
        c.requests.iter().filter(|r| r.scheduled_s >= start && r.scheduled_s < end).collect();
    let done: Vec<&ScheduledRequest> = counted.iter().copied().filter(|r| ended_ok(r)).collect();
    // Held for the request it follows (an error says so) is failed, not the client's bound.
    let not_sent = counted.iter().filter(|r| r.send_s.is_none() && r.error.is_none()).count();
    let ms = |a: Option<f64>, b: Option<f64>| Some((b? - a?) * 1000.0);
    let ttft: Vec<f64> = done.iter().filter_map(|r| ms(r.send_s, r.first_token_s)).collect();
    let e2e: Vec<f64> = done.iter().filter_map(|r| ms(r.send_s, r.end_s)).collect();
    let tbt: Vec<f64> = done
        .iter()
        .filter(|r| r.tokens >= 2)
        .filter_map(|r| ms(r.first_token_s, r.last_token_s).map(|d| d / (r.tokens - 1) as f64))
        .collect();
    let lags: Vec<f64> = counted.iter().filter_map(|r| lag_ms(r)).collect();
    let (mean, max, first, last) = in_flight(&c.requests, start, end);
    let served: Vec<&ScheduledRequest> =
        c.requests.iter().filter(|r| ended_ok(r) && r.end_s.is_some_and(|e| e >= start && e < end)).collect();
    let offered_rps = counted.len() as f64 / window_s;
    let achieved_rps = c.completion_rate().unwrap_or(done.len() as f64 / window_s);
    let lag_p99_ms = percentile_supported(lags.len(), 99.0).then(|| percentile(&lags, 99.0)).flatten();
    RateFigures {
        window_s,
        scheduled: counted.len(),
        offered_rps,
        completed: done.len(),
        failed: counted.len() - done.len() - not_sent,
        not_sent,
        achieved_rps,
        output_tps: served.iter().map(|r| r.tokens).sum::<u64>() as f64 / window_s,
        ttft_ms: Spread3::of(&ttft),
        tbt_ms: Spread3::of(&tbt),
        e2e_ms: Spread3::of(&e2e),
        lag_p50_ms: percentile(&lags, 50.0),
        lag_p99_ms,
        lag_max_ms: lags.iter().copied().reduce(f64::max),
        in_flight_mean: Some(mean),
        in_flight_max: Some(max),
        saturated: saturated(offered_rps, achieved_rps, first, last),
        client_behind: client_behind(not_sent, lag_p99_ms),
        replay: replay_figures(&done),
        reported: false,
    }
}

/// A cell's figures as a report gave them: offered is the rate asked, saturation judged on
/// achieved against it alone (no requests in flight to follow), no lag.
fn reported_figures(c: &RateCell, r: &ReportedRate) -> RateFigures {
    let completed = (r.requests - r.failed.min(r.requests)) as usize;
    RateFigures {
        window_s: c.window.end_s - c.window.start_s,
        scheduled: r.requests as usize,
        offered_rps: c.rate_rps,
        completed,
        failed: r.failed.min(r.requests) as usize,
        not_sent: 0,
        achieved_rps: r.achieved_rps,
        output_tps: r.output_tps.unwrap_or(0.0),
        ttft_ms: Spread3::reported(&r.ttft_ms),
        tbt_ms: Spread3::reported(&r.tbt_ms),
        e2e_ms: Spread3::reported(&r.e2e_ms),
        lag_p50_ms: None,
        lag_p99_ms: None,
        lag_max_ms: None,
        in_flight_mean: None,
        in_flight_max: None,
        saturated: saturated(c.rate_rps, r.achieved_rps, 0.0, 0.0),
        client_behind: None,
        replay: None,
        reported: true,
    }
}

/// Requests in flight through the window, sampled at 200 instants: (mean, most, mean of the
/// first quarter, mean of the last). A request not ended counts to the window's end.
fn in_flight(requests: &[ScheduledRequest], start: f64, end: f64) -> (f64, f64, f64, f64) {
    const SAMPLES: usize = 200;
    let at: Vec<f64> = (0..SAMPLES)
        .map(|k| {
            let t = start + (end - start) * (k as f64 + 0.5) / SAMPLES as f64;
            requests.iter().filter(|r| r.send_s.is_some_and(|s| s <= t) && r.end_s.is_none_or(|e| e > t)).count() as f64
        })
        .collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let quarter = SAMPLES / 4;
    (mean(&at), at.iter().copied().fold(0.0, f64::max), mean(&at[..quarter]), mean(&at[SAMPLES - quarter..]))
}

/// The server did not keep up: it served well below what was offered, or its queue grew
/// through the window.
fn saturated(offered: f64, achieved: f64, first_quarter: f64, last_quarter: f64) -> Option<String> {
    if offered > 0.0 && achieved < SATURATED_SHARE * offered {
        return Some(format!("served {achieved:.2} of {offered:.2} requests/s offered"));
    }
    (last_quarter >= 2.0 * first_quarter + 1.0)
        .then(|| format!("requests in flight rose from {first_quarter:.1} to {last_quarter:.1} through the window"))
}

fn client_behind(not_sent: usize, lag_p99_ms: Option<f64>) -> Option<String> {
    if not_sent > 0 {
        return Some(format!("{not_sent} requests not sent: the client's in-flight bound was reached"));
    }
    lag_p99_ms
        .filter(|l| *l > MAX_LAG_P99_MS)
        .map(|l| format!("the client sent late: lag p99 {l:.0} ms (above {MAX_LAG_P99_MS:.0} ms)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Window;

    fn request(at: f64, lag: f64, took: f64, tokens: u64) -> ScheduledRequest {
        ScheduledRequest {
            scheduled_s: at,
            send_s: Some(at + lag),
            due_s: None,
            first_token_s: Some(at + lag + 0.1),
            last_token_s: Some(at + lag + took),
            end_s: Some(at + lag + took),
            tokens,
            prompt_tokens: Some(256),
            error: None,
            cached_tokens: None,
            planned: None,
        }
    }

    fn cell(requests: Vec<ScheduledRequest>) -> RateCell {
        RateCell {
            schema_version: 5,
            context: 256,
            rate_rps: 2.0,
            repetition: 1,
            status: Status::Valid,
            prompt_tokens: Some(256),
            window: Window { start_s: 10.0, end_s: 20.0 },
            requests,
            error: None,
            reported: None,
        }
    }

    #[test]
    fn a_server_that_keeps_up_serves_what_was_offered() {
        // Two a second for 12 s from t = 9 (a second of warm-up), each 0.5 s and 11 tokens.
        let rs: Vec<ScheduledRequest> = (0..24).map(|i| request(9.0 + i as f64 * 0.5, 0.001, 0.5, 11)).collect();
        let f = rate_figures(&cell(rs));
        assert_eq!((f.scheduled, f.completed, f.failed, f.not_sent), (20, 20, 0, 0));
        assert!((f.offered_rps - 2.0).abs() < 1e-9 && (f.achieved_rps - 2.0).abs() < 1e-9);
        assert!((f.output_tps - 22.0).abs() < 1e-9);
        assert!((f.ttft_ms.p50.unwrap() - 100.0).abs() < 1e-6);
        assert!((f.tbt_ms.p50.unwrap() - 40.0).abs() < 1e-6, "{:?}", f.tbt_ms);
        assert_eq!((f.ttft_ms.p90.is_some(), f.ttft_ms.p99), (true, None), "p99 needs 100 requests");
        assert!((f.in_flight_mean.unwrap() - 1.0).abs() < 0.05, "{:?}", f.in_flight_mean);
        assert_eq!((f.saturated.as_deref(), f.client_behind.as_deref()), (None, None));
    }

    #[test]
    fn capacity_is_the_highest_rate_meeting_the_objective_interpolated_on_log_rate() {
        // Met at 1 and 2, 50% at 4: the crossing of 99% is 2 x 2^(0.01 / 0.5).
        let c = capacity(&[(1.0, 1.0), (2.0, 1.0), (4.0, 0.5)]).unwrap();
        let RateCapacity::Interpolated(r) = c else { panic!("{c:?}") };
        assert!((r - 2.0 * 2f64.powf(0.02)).abs() < 1e-9, "{r}");
        assert_eq!(capacity(&[(1.0, 1.0), (2.0, 0.995)]), Some(RateCapacity::AtLeast(2.0)));
        assert_eq!(capacity(&[(1.0, 0.9), (2.0, 0.5)]), Some(RateCapacity::Below(1.0)));
        assert_eq!(capacity(&[]), None);
    }

    #[test]
    fn a_request_meets_an_objective_on_its_own_ttft_and_speed() {
        let slo = Slo {
            description: String::new(),
            min_tps_per_user: 20.0,
            percentile: 50,
            max_ttft_ms: Some(2000.0),
            max_prefill_ttft_ms: None,
        };
        assert!(request_meets(&Outcome { ttft_ms: Some(1500.0), tbt_ms: Some(40.0) }, &slo));
        assert!(!request_meets(&Outcome { ttft_ms: Some(2500.0), tbt_ms: Some(40.0) }, &slo), "too late");
        assert!(!request_meets(&Outcome { ttft_ms: Some(100.0), tbt_ms: Some(60.0) }, &slo), "slower than 20 tok/s");
        assert!(!request_meets(&Outcome { ttft_ms: None, tbt_ms: None }, &slo), "failed");
    }

    #[test]
    fn a_growing_queue_is_saturated_and_a_late_client_says_so() {
        // Each request takes longer than the last: the queue grows; none ends in the window.
        let rs: Vec<ScheduledRequest> =
            (0..24).map(|i| request(9.0 + i as f64 * 0.5, 0.001, 2.0 + i as f64, 11)).collect();
        let f = rate_figures(&cell(rs));
        assert!(f.saturated.is_some(), "{f:?}");
        assert!(f.in_flight_max.unwrap() > 5.0);
        // Sent 80 ms late: the schedule was not kept (p99 over 100 requests).
        let late: Vec<ScheduledRequest> = (0..120).map(|i| request(10.0 + i as f64 * 0.08, 0.08, 0.01, 2)).collect();
        let f = rate_figures(&cell(late));
        assert!(f.client_behind.as_deref().is_some_and(|w| w.contains("lag p99 80 ms")), "{:?}", f.client_behind);
        // A request never sent is named, and is neither completed nor failed.
        let mut rs: Vec<ScheduledRequest> = (0..4).map(|i| request(11.0 + i as f64, 0.0, 0.2, 3)).collect();
        rs[1].send_s = None;
        rs[2].error = Some("drain timeout".into());
        let f = rate_figures(&cell(rs));
        assert_eq!((f.completed, f.failed, f.not_sent), (2, 1, 1));
        assert!(f.client_behind.as_deref().is_some_and(|w| w.starts_with("1 requests not sent")));
    }
}

//! The figures of a request-rate cell, from its requests: what was offered and what was
//! served, latency percentiles where n supports them, the requests in flight, the client's
//! own lag behind its schedule, and whether the server kept up (Saturated) or the client
//! did not (its figures are then not the server's). The window counts the requests
//! scheduled inside it, each to its end: none is dropped for being slow.

use serde::Serialize;

use crate::format::{RateCell, ScheduledRequest, Status};
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
}

/// p50, p90 and p99 of a latency in milliseconds, each where n supports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spread3 {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

impl Spread3 {
    fn of(values: &[f64]) -> Spread3 {
        let at = |p: f64| percentile_supported(values.len(), p).then(|| percentile(values, p)).flatten();
        Spread3 { p50: at(50.0), p90: at(90.0), p99: at(99.0) }
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
    /// Requests the server completed inside the window (whenever they were scheduled), per
    /// second: what it served while offered the rate.
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
    pub in_flight_mean: f64,
    pub in_flight_max: f64,
    /// Why the server did not keep up, where it did not.
    pub saturated: Option<String>,
    /// Why the client did not keep its schedule, where it did not: the figures are then
    /// not the server's alone.
    pub client_behind: Option<String>,
}

pub fn rate_view(c: &RateCell) -> RateView {
    let figures = (c.status == Status::Valid).then(|| figures(c));
    RateView {
        context: c.context,
        rate_rps: c.rate_rps,
        repetition: c.repetition,
        figures,
        error: c.error.as_ref().map(|e| e.message.clone()),
    }
}

fn ended_ok(r: &ScheduledRequest) -> bool {
    r.error.is_none() && r.send_s.is_some() && r.end_s.is_some() && r.first_token_s.is_some()
}

pub fn figures(c: &RateCell) -> RateFigures {
    let (start, end) = (c.window.start_s, c.window.end_s);
    let window_s = end - start;
    let counted: Vec<&ScheduledRequest> =
        c.requests.iter().filter(|r| r.scheduled_s >= start && r.scheduled_s < end).collect();
    let done: Vec<&ScheduledRequest> = counted.iter().copied().filter(|r| ended_ok(r)).collect();
    let not_sent = counted.iter().filter(|r| r.send_s.is_none()).count();
    let ms = |a: Option<f64>, b: Option<f64>| Some((b? - a?) * 1000.0);
    let ttft: Vec<f64> = done.iter().filter_map(|r| ms(r.send_s, r.first_token_s)).collect();
    let e2e: Vec<f64> = done.iter().filter_map(|r| ms(r.send_s, r.end_s)).collect();
    let tbt: Vec<f64> = done
        .iter()
        .filter(|r| r.tokens >= 2)
        .filter_map(|r| ms(r.first_token_s, r.last_token_s).map(|d| d / (r.tokens - 1) as f64))
        .collect();
    let lags: Vec<f64> = counted.iter().filter_map(|r| r.send_s.map(|s| (s - r.scheduled_s) * 1000.0)).collect();
    let (mean, max, first, last) = in_flight(&c.requests, start, end);
    let served: Vec<&ScheduledRequest> =
        c.requests.iter().filter(|r| ended_ok(r) && r.end_s.is_some_and(|e| e >= start && e < end)).collect();
    let offered_rps = counted.len() as f64 / window_s;
    let achieved_rps = served.len() as f64 / window_s;
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
        in_flight_mean: mean,
        in_flight_max: max,
        saturated: saturated(offered_rps, achieved_rps, first, last),
        client_behind: client_behind(not_sent, lag_p99_ms),
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
            first_token_s: Some(at + lag + 0.1),
            last_token_s: Some(at + lag + took),
            end_s: Some(at + lag + took),
            tokens,
            prompt_tokens: Some(256),
            error: None,
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
        }
    }

    #[test]
    fn a_server_that_keeps_up_serves_what_was_offered() {
        // Two a second for 12 s from t = 9 (a second of warm-up), each 0.5 s and 11 tokens.
        let rs: Vec<ScheduledRequest> = (0..24).map(|i| request(9.0 + i as f64 * 0.5, 0.001, 0.5, 11)).collect();
        let f = figures(&cell(rs));
        assert_eq!((f.scheduled, f.completed, f.failed, f.not_sent), (20, 20, 0, 0));
        assert!((f.offered_rps - 2.0).abs() < 1e-9 && (f.achieved_rps - 2.0).abs() < 1e-9);
        assert!((f.output_tps - 22.0).abs() < 1e-9);
        assert!((f.ttft_ms.p50.unwrap() - 100.0).abs() < 1e-6);
        assert!((f.tbt_ms.p50.unwrap() - 40.0).abs() < 1e-6, "{:?}", f.tbt_ms);
        assert_eq!((f.ttft_ms.p90.is_some(), f.ttft_ms.p99), (true, None), "p99 needs 100 requests");
        assert!((f.in_flight_mean - 1.0).abs() < 0.05, "{}", f.in_flight_mean);
        assert_eq!((f.saturated.as_deref(), f.client_behind.as_deref()), (None, None));
    }

    #[test]
    fn a_growing_queue_is_saturated_and_a_late_client_says_so() {
        // Each request takes longer than the last: the queue grows; none ends in the window.
        let rs: Vec<ScheduledRequest> =
            (0..24).map(|i| request(9.0 + i as f64 * 0.5, 0.001, 2.0 + i as f64, 11)).collect();
        let f = figures(&cell(rs));
        assert!(f.saturated.is_some(), "{f:?}");
        assert!(f.in_flight_max > 5.0);
        // Sent 80 ms late: the schedule was not kept (p99 over 100 requests).
        let late: Vec<ScheduledRequest> = (0..120).map(|i| request(10.0 + i as f64 * 0.08, 0.08, 0.01, 2)).collect();
        let f = figures(&cell(late));
        assert!(f.client_behind.as_deref().is_some_and(|w| w.contains("lag p99 80 ms")), "{:?}", f.client_behind);
        // A request never sent is named, and is neither completed nor failed.
        let mut rs: Vec<ScheduledRequest> = (0..4).map(|i| request(11.0 + i as f64, 0.0, 0.2, 3)).collect();
        rs[1].send_s = None;
        rs[2].error = Some("drain timeout".into());
        let f = figures(&cell(rs));
        assert_eq!((f.completed, f.failed, f.not_sent), (2, 1, 1));
        assert!(f.client_behind.as_deref().is_some_and(|w| w.starts_with("1 requests not sent")));
    }
}

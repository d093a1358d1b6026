//! A cell's evidence, from its raw records: every request on a timeline, the server's
//! running gauge, output tokens per second in one-second bins across the window, and the
//! distributions of TTFT and time between tokens. What a cell page draws; pure and bounded
//! (at most `MAX_LANES` lanes however many requests).

use serde::Serialize;

use super::figures::{answer_ttft_s, time_between_tokens_s, ttft_s, usage_tokens_chunks};
use crate::format::{Cell, GaugeSample, RequestRecord, TokenSource};
use crate::stats::{percentile, percentile_supported};

/// Timeline lanes drawn at most; beyond, neighbouring requests (by send time) share a lane.
pub const MAX_LANES: usize = 300;
/// Bars of a distribution's histogram.
pub const HISTOGRAM_BINS: usize = 20;

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The server finished it (`length`, `stop`).
    Finished,
    /// Still streaming when the window ended: the client cancelled it.
    Cancelled,
    /// It failed (HTTP error, error event, broken stream).
    Error,
}

/// One timeline lane: a request (or, past `MAX_LANES`, a group of neighbouring ones).
/// Times are seconds from the cell's first send.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lane {
    pub send_s: f64,
    pub first_token_s: Option<f64>,
    pub end_s: f64,
    /// The worst outcome in the lane.
    pub outcome: Outcome,
    pub requests: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramBin {
    pub lo: f64,
    pub hi: f64,
    pub count: usize,
}

/// A sample's order statistics and histogram (milliseconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    pub count: usize,
    pub p50: f64,
    /// Only where the sample supports it (10 requests for p90, 100 for p99).
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
    pub bins: Vec<HistogramBin>,
}

/// One turn of a cell's conversations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnStats {
    pub turn: u64,
    pub requests: usize,
    /// Median prompt tokens the server counted (the conversation so far).
    pub prompt_tokens: Option<f64>,
    pub ttft_ms: Option<f64>,
}

/// Each turn's statistics, turns in order (none outside conversations).
fn turn_stats(requests: &[RequestRecord]) -> Vec<TurnStats> {
    let mut turns: Vec<u64> = requests.iter().map(|r| r.turn).filter(|t| *t > 0).collect();
    turns.sort_unstable();
    turns.dedup();
    turns
        .into_iter()
        .map(|turn| {
            let of: Vec<&RequestRecord> = requests.iter().filter(|r| r.turn == turn).collect();
            let prompts: Vec<f64> = of.iter().filter_map(|r| r.prompt_tokens.map(f64::from)).collect();
            let ttfts: Vec<f64> = of.iter().filter_map(|r| ttft_s(r)).map(|t| t * 1000.0).collect();
            TurnStats {
                turn,
                requests: of.len(),
                prompt_tokens: percentile(&prompts, 50.0),
                ttft_ms: percentile(&ttfts, 50.0),
            }
        })
        .collect()
}

/// Output tokens in one second of the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputBin {
    /// Seconds from the window's start.
    pub start_s: f64,
    pub seconds: f64,
    pub tokens: f64,
    pub tps: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OutcomeCounts {
    pub finished: usize,
    pub cancelled: usize,
    pub error: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Evidence {
    pub requests: usize,
    /// The measurement window, in seconds from the first send.
    pub window: Option<(f64, f64)>,
    /// The last time on the timeline (the last request's end), from the first send.
    pub span_s: f64,
    pub lanes: Vec<Lane>,
    /// Requests per lane (1 unless there were more than `MAX_LANES`).
    pub lane_group: usize,
    /// The running / waiting gauge, times from the first send.
    pub gauge: Vec<GaugeSample>,
    pub throughput: Vec<ThroughputBin>,
    pub ttft_ms: Option<Distribution>,
    /// The first answer token's times, where any stream reasoned first.
    pub answer_ttft_ms: Option<Distribution>,
    /// Requests whose stream reasoned before answering.
    pub reasoned: usize,
    pub tbt_ms: Option<Distribution>,
    /// Output tokens and the chunks that carried them, of the requests whose tokens the
    /// server's usage counted (tokens per chunk).
    pub usage_tokens_chunks: (u64, u64),
    /// Conversations (`--turns`): each turn's requests, median prompt tokens and TTFT.
    pub turns: Vec<TurnStats>,
    /// How each request's tokens were counted, with how many requests.
    pub token_sources: Vec<(TokenSource, usize)>,
    pub outcomes: OutcomeCounts,
    /// Output tokens inside the window, and the seconds they are divided by.
    pub window_tokens: u64,
}

impl Evidence {
    /// How often the gauge was read: the median time between successive reads, in seconds
    /// (`None` with fewer than two).
    pub fn gauge_every_s(&self) -> Option<f64> {
        let gaps: Vec<f64> = self.gauge.windows(2).map(|w| w[1].t_s - w[0].t_s).collect();
        percentile(&gaps, 50.0)
    }
}

pub fn outcome(r: &RequestRecord) -> Outcome {
    if r.error.is_some() {
        Outcome::Error
    } else if r.finish_reason.is_some() {
        Outcome::Finished
    } else {
        Outcome::Cancelled
    }
}

/// The evidence of a measured cell; `None` for a cell without records (imported, or not run).
pub fn evidence(cell: &Cell) -> Option<Evidence> {
    let m = cell.measurement.as_ref()?;
    let t0 = m.requests.iter().map(|r| r.send_s).fold(f64::INFINITY, f64::min);
    if !t0.is_finite() {
        return None;
    }
    let window = m.window.map(|w| (w.start_s - t0, w.end_s - t0));
    let mut requests: Vec<&RequestRecord> = m.requests.iter().collect();
    requests.sort_by(|a, b| a.send_s.total_cmp(&b.send_s));
    let (lanes, lane_group) = lanes(&requests, t0, window.map(|w| w.1));
    let span_s = lanes.iter().map(|l| l.end_s).fold(window.map_or(0.0, |w| w.1), f64::max);
    let gauge = m.gauge.iter().map(|g| GaugeSample { t_s: g.t_s - t0, ..*g }).collect();
    let ttfts: Vec<f64> = m.requests.iter().filter_map(ttft_s).map(|t| t * 1000.0).collect();
    let reasoned = m.requests.iter().filter(|r| r.reasoned()).count();
    let answers: Vec<f64> = m.requests.iter().filter_map(answer_ttft_s).map(|t| t * 1000.0).collect();
    let tbts: Vec<f64> = m.requests.iter().filter_map(time_between_tokens_s).map(|t| t * 1000.0).collect();
    let mut outcomes = OutcomeCounts::default();
    for r in &m.requests {
        match outcome(r) {
            Outcome::Finished => outcomes.finished += 1,
            Outcome::Cancelled => outcomes.cancelled += 1,
            Outcome::Error => outcomes.error += 1,
        }
    }
    Some(Evidence {
        requests: m.requests.len(),
        window,
        span_s,
        lanes,
        lane_group,
        gauge,
        throughput: m.window.map(|w| throughput_bins(&m.requests, w.start_s, w.end_s)).unwrap_or_default(),
        ttft_ms: distribution(&ttfts),
        answer_ttft_ms: if reasoned > 0 { distribution(&answers) } else { None },
        reasoned,
        tbt_ms: distribution(&tbts),
        usage_tokens_chunks: usage_tokens_chunks(&m.requests),
        turns: turn_stats(&m.requests),
        token_sources: token_sources(&m.requests),
        outcomes,
        window_tokens: m.requests.iter().map(|r| r.window_tokens).sum(),
    })
}

fn lanes(requests: &[&RequestRecord], t0: f64, window_end: Option<f64>) -> (Vec<Lane>, usize) {
    let group = requests.len().div_ceil(MAX_LANES).max(1);
    let lanes = requests
        .chunks(group)
        .map(|chunk| {
            let one = |r: &RequestRecord| {
                let end = r.end_s.or(r.last_token_s).map(|e| e - t0).or(window_end).unwrap_or(r.send_s - t0);
                (r.send_s - t0, r.first_token_s.map(|f| f - t0), end, outcome(r))
            };
            let all: Vec<_> = chunk.iter().map(|r| one(r)).collect();
            let firsts: Vec<f64> = all.iter().filter_map(|a| a.1).collect();
            Lane {
                send_s: all.iter().map(|a| a.0).fold(f64::INFINITY, f64::min),
                first_token_s: percentile(&firsts, 50.0),
                end_s: all.iter().map(|a| a.2).fold(f64::NEG_INFINITY, f64::max),
                outcome: all.iter().map(|a| a.3).max().unwrap_or(Outcome::Finished),
                requests: chunk.len(),
            }
        })
        .collect();
    (lanes, group)
}

/// Output tokens per second in one-second bins from the window's start (the last bin as
/// long as what is left). The records keep each request's tokens inside the window and
/// when its first and last of them came, not every token's time: a request's tokens are
/// spread evenly between those two times.
pub fn throughput_bins(requests: &[RequestRecord], start: f64, end: f64) -> Vec<ThroughputBin> {
    let span = end - start;
    if span.is_nan() || span <= 0.0 {
        return Vec::new();
    }
    let n = span.ceil() as usize;
    let mut tokens = vec![0.0f64; n];
    for r in requests.iter().filter(|r| r.window_tokens > 0) {
        let last = r.window_last_token_s.unwrap_or(end).clamp(start, end);
        let first = r.first_token_s.unwrap_or(last).clamp(start, last);
        spread(&mut tokens, r.window_tokens as f64, first - start, last - start);
    }
    tokens
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let seconds = (span - i as f64).min(1.0);
            ThroughputBin { start_s: i as f64, seconds, tokens: t, tps: t / seconds }
        })
        .collect()
}

/// Adds `amount` spread evenly over [a, b] (seconds) into one-second bins; all of it into
/// `a`'s bin when a = b.
fn spread(bins: &mut [f64], amount: f64, a: f64, b: f64) {
    let last = bins.len() - 1;
    if b - a <= 1e-9 {
        bins[(a.floor() as usize).min(last)] += amount;
        return;
    }
    let rate = amount / (b - a);
    let mut t = a;
    while t < b - 1e-12 {
        let i = (t.floor() as usize).min(last);
        let bin_end = ((i + 1) as f64).min(b);
        let bin_end = if i == last { b } else { bin_end };
        bins[i] += rate * (bin_end - t);
        t = bin_end;
    }
}

/// p50 / p90 / p99 / max and a histogram of equal-width bins from the least to the most.
pub fn distribution(values: &[f64]) -> Option<Distribution> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let (min, max) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    if v.is_empty() {
        return None;
    }
    let n = if max > min { HISTOGRAM_BINS } else { 1 };
    let width = (max - min) / n as f64;
    let mut bins: Vec<HistogramBin> = (0..n)
        .map(|i| HistogramBin { lo: min + width * i as f64, hi: min + width * (i + 1) as f64, count: 0 })
        .collect();
    for x in &v {
        let i = if width > 0.0 { (((x - min) / width) as usize).min(n - 1) } else { 0 };
        bins[i].count += 1;
    }
    Some(Distribution {
        count: v.len(),
        p50: percentile(&v, 50.0)?,
        p90: percentile(&v, 90.0).filter(|_| percentile_supported(v.len(), 90.0)),
        p99: percentile(&v, 99.0).filter(|_| percentile_supported(v.len(), 99.0)),
        max,
        min,
        mean: v.iter().sum::<f64>() / v.len() as f64,
        bins,
    })
}

fn token_sources(requests: &[RequestRecord]) -> Vec<(TokenSource, usize)> {
    let mut out: Vec<(TokenSource, usize)> = Vec::new();
    for r in requests {
        match out.iter_mut().find(|(s, _)| *s == r.token_source) {
            Some((_, n)) => *n += 1,
            None => out.push((r.token_source, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Measurement, Phase, Status, Window};

    fn request(send: f64, first: f64, last: f64, tokens: u64, window_tokens: u64, finished: bool) -> RequestRecord {
        RequestRecord {
            first_token_s: Some(first),
            last_token_s: Some(last),
            end_s: Some(last),
            tokens,
            chunks: tokens,
            window_tokens,
            window_last_token_s: Some(last.min(14.0)),
            token_source: TokenSource::Usage,
            prompt_tokens: Some(1000),
            finish_reason: finished.then(|| "length".to_string()),
            ..RequestRecord::sent_at(send)
        }
    }

    #[test]
    fn tokens_are_binned_by_second_across_the_window() {
        // Window 10..14 s. One request streams 40 tokens evenly from 10 to 14 s; one sends
        // all of its 10 window tokens at 12.5 s.
        let rs = [request(9.0, 10.0, 14.0, 41, 40, false), request(9.5, 12.5, 12.5, 1, 10, true)];
        let bins = throughput_bins(&rs, 10.0, 14.0);
        let tps: Vec<f64> = bins.iter().map(|b| b.tps).collect();
        assert_eq!(tps, [10.0, 10.0, 20.0, 10.0]);
        // A window of 2.5 s: the last bin is half a second long.
        let bins = throughput_bins(&[request(0.0, 0.0, 2.5, 26, 25, false)], 0.0, 2.5);
        let got: Vec<(f64, f64)> = bins.iter().map(|b| (b.seconds, b.tps)).collect();
        assert_eq!(got, [(1.0, 10.0), (1.0, 10.0), (0.5, 10.0)]);
    }

    #[test]
    fn distributions_give_percentiles_to_the_digit() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = distribution(&v).unwrap();
        assert_eq!((d.count, d.p50, d.max), (100, 50.5, 100.0));
        // Linear rank: 0.9 x 99 = 89.1 between 90 and 91; 0.99 x 99 = 98.01 between 99 and 100.
        assert_eq!(
            (format!("{:.6}", d.p90.unwrap()), format!("{:.6}", d.p99.unwrap())),
            ("90.100000".into(), "99.010000".into())
        );
        // Four requests support a median, not a p90 or p99.
        let few = distribution(&[10.0, 12.0, 13.0, 13.9]).unwrap();
        assert_eq!((few.p90, few.p99), (None, None));
        let ten = distribution(&(1..=10).map(f64::from).collect::<Vec<_>>()).unwrap();
        assert!(ten.p90.is_some() && ten.p99.is_none());
        assert_eq!(d.bins.len(), HISTOGRAM_BINS);
        assert_eq!(d.bins.iter().map(|b| b.count).sum::<usize>(), 100);
        assert_eq!(d.bins[0].count, 5);
        assert_eq!(distribution(&[3.0, 3.0]).unwrap().bins, [HistogramBin { lo: 3.0, hi: 3.0, count: 2 }]);
        assert_eq!(distribution(&[]), None);
    }

    #[test]
    fn a_cell_shows_its_window_lanes_and_outcomes_from_its_first_send() {
        let mut rs: Vec<RequestRecord> =
            (0..4).map(|i| request(100.0 + i as f64, 101.0 + i as f64, 120.0, 50, 30, i == 0)).collect();
        rs[3].error = Some("boom".into());
        let m = Measurement::of_requests(Some(Window { start_s: 105.0, end_s: 115.0 }), rs);
        let cell = Cell { measurement: Some(m), ..Cell::new(Phase::Decode, 1024, 4, Status::Valid) };
        let e = evidence(&cell).unwrap();
        assert_eq!(e.window, Some((5.0, 15.0)));
        assert_eq!(e.lane_group, 1);
        let lanes: Vec<(f64, Outcome)> = e.lanes.iter().map(|l| (l.send_s, l.outcome)).collect();
        assert_eq!(
            lanes,
            [(0.0, Outcome::Finished), (1.0, Outcome::Cancelled), (2.0, Outcome::Cancelled), (3.0, Outcome::Error)]
        );
        assert_eq!(e.outcomes, OutcomeCounts { finished: 1, cancelled: 2, error: 1 });
        assert_eq!(e.throughput.len(), 10);
        assert_eq!(e.window_tokens, 120);
        // 1,000 requests, more than 300 lanes: 4 share a lane, 250 lanes.
        let many: Vec<RequestRecord> = (0..1000).map(|i| request(i as f64 * 0.01, 1.0, 2.0, 3, 0, true)).collect();
        let m = Measurement::of_requests(None, many);
        let e = evidence(&Cell { measurement: Some(m), ..Cell::new(Phase::Decode, 1024, 4, Status::Valid) }).unwrap();
        assert_eq!((e.lane_group, e.lanes.len(), e.lanes.last().unwrap().requests), (4, 250, 4));
    }

    #[test]
    fn the_gauge_interval_is_the_median_gap_between_reads() {
        let read = |t_s| GaugeSample { t_s, running: 2.0, waiting: None };
        let mut e = Evidence { gauge: [0.0, 0.3, 0.6, 1.5, 1.8].map(read).to_vec(), ..Evidence::default() };
        // Gaps 0.3, 0.3, 0.9, 0.3: one slow read does not move it.
        assert!((e.gauge_every_s().unwrap() - 0.3).abs() < 1e-9);
        e.gauge.truncate(1);
        assert_eq!(e.gauge_every_s(), None);
    }
}

/// What a cell's page shows beyond its view: the cell as recorded, the evidence from its
/// requests, and for an imported cell the distributions of the samples its source kept.
#[derive(Debug, Clone)]
pub struct CellDetail {
    pub cell: Cell,
    pub evidence: Option<Evidence>,
    /// This repetition's own figures, from its records (a cell's view holds their mean).
    pub figures: Option<super::Figures>,
    /// From an imported cell's per-request samples (milliseconds).
    pub reported_ttft_ms: Option<Distribution>,
    pub reported_tbt_ms: Option<Distribution>,
}

impl CellDetail {
    pub fn of(cell: Cell) -> CellDetail {
        let evidence = evidence(&cell);
        let samples = cell.reported.as_ref().map_or(&[][..], |r| &r.samples[..]);
        let ms = |v: Option<f64>| v.map(|s| s * 1000.0);
        let ttfts: Vec<f64> = samples.iter().filter_map(|s| ms(s.ttft_s)).collect();
        let tbts: Vec<f64> = samples.iter().filter_map(|s| ms(s.tbt_s)).collect();
        let figures =
            cell.measurement.as_ref().map(|m| super::Figures::from_measurement(cell.phase, cell.prompt_tokens, m));
        CellDetail {
            evidence,
            figures,
            reported_ttft_ms: distribution(&ttfts),
            reported_tbt_ms: distribution(&tbts),
            cell,
        }
    }
}

/// Every cell of a run as loaded, with its detail: what the run's cell pages are made from.
pub fn run_detail(run: crate::format::LoadedRun) -> Vec<CellDetail> {
    run.cells.into_iter().map(|c| CellDetail::of(c.cell)).collect()
}

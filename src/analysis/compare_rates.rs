//! Two runs of request rates (or two replays of one trace slice) compared: each (context,
//! rate) cell both measured, its achieved rate, TTFT and end-to-end p50 and output tok/s
//! judged as the matrix's figures are (the repetitions' values, Welch on their logarithms,
//! the run-to-run noise of the comparison, one Benjamini-Hochberg family), and the capacity
//! at each objective from each repetition's own capacity. Runs of two traffic shapes (a
//! closed loop, an arrival process, a trace slice) are refused: their figures differ for
//! that alone.

use serde::Serialize;

use super::interval::{mean_estimate, Basis, Estimate};
use super::rates::{RateCapacity, RateView};
use super::run::RunView;
use super::run_noise::{moderated, Pool, RunNoise};
use super::verdict::{change, Between, Change};
use crate::analysis::metric::Metric;
use crate::format::Traffic;

/// How a rate cell of one side reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateState {
    KeptUp,
    Saturated,
    /// The client did not keep its schedule: the figures are not the server's alone.
    ClientBehind,
    Error,
    Missing,
}

/// One (context, rate) cell of both runs; changes only where both sides measured it and
/// neither client fell behind.
#[derive(Debug, Clone, Serialize)]
pub struct RatePair {
    pub context: u32,
    pub rate_rps: f64,
    pub a_state: RateState,
    pub b_state: RateState,
    pub achieved: Option<Change>,
    pub ttft_p50: Option<Change>,
    pub e2e_p50: Option<Change>,
    pub output_tps: Option<Change>,
}

impl RatePair {
    pub fn changes_mut(&mut self) -> impl Iterator<Item = &mut Change> {
        [&mut self.achieved, &mut self.ttft_p50, &mut self.e2e_p50, &mut self.output_tps].into_iter().flatten()
    }

    pub fn changes(&self) -> impl Iterator<Item = &Change> {
        [&self.achieved, &self.ttft_p50, &self.e2e_p50, &self.output_tps].into_iter().flatten()
    }
}

/// The traffic shape of a run in words, to say why two runs are not compared: `None` where
/// the two are one shape.
pub fn shapes_differ(a: Option<&Traffic>, b: Option<&Traffic>) -> Option<(String, String)> {
    let words = |t: Option<&Traffic>| match t {
        None => "a closed loop of concurrent streams".to_string(),
        Some(t) => match &t.trace {
            Some(r) => format!(
                "a replay of {} from {} s for {} s at {}x, lengths x {}",
                r.file, r.start_s, r.duration_s, r.speedup, r.scale_lengths
            ),
            None => format!("{} arrivals at request rates", t.arrival),
        },
    };
    let (x, y) = (words(a), words(b));
    (x != y).then_some((x, y))
}

/// Every (context, rate) cell of either run, in order, with its changes (verdicts are set
/// by the caller, with every other figure of the comparison).
pub fn rate_pairs(a: &RunView, b: &RunView, threshold_pct: f64, noise: &RunNoise) -> Vec<RatePair> {
    let mut keys: Vec<(u32, f64)> = a.rates.iter().chain(&b.rates).map(|r| (r.context, r.rate_rps)).collect();
    keys.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
    keys.dedup();
    keys.into_iter().map(|key| rate_pair(a, b, key, threshold_pct, noise)).collect()
}

fn rate_pair(a: &RunView, b: &RunView, (context, rate): (u32, f64), t: f64, noise: &RunNoise) -> RatePair {
    let cells = |r: &RunView| -> Vec<RateView> {
        r.rates.iter().filter(|v| v.context == context && v.rate_rps == rate).cloned().collect()
    };
    let (ca, cb) = (cells(a), cells(b));
    let (sa, sb) = (state(&ca), state(&cb));
    let judged = |s: RateState| matches!(s, RateState::KeptUp | RateState::Saturated);
    let pair = |figure: fn(&RateView) -> Option<f64>, m: Metric, higher: bool| {
        if !(judged(sa) && judged(sb)) {
            return None;
        }
        change(&estimate(&ca, figure)?, &estimate(&cb, figure)?, higher, t, between(noise, m))
    };
    RatePair {
        context,
        rate_rps: rate,
        a_state: sa,
        b_state: sb,
        achieved: pair(|v| Some(v.figures.as_ref()?.achieved_rps), Metric::TotalTps, true),
        ttft_p50: pair(|v| v.figures.as_ref()?.ttft_ms.p50, Metric::TtftMs, false),
        e2e_p50: pair(|v| v.figures.as_ref()?.e2e_ms.p50, Metric::TbtMs, false),
        output_tps: pair(|v| Some(v.figures.as_ref()?.output_tps), Metric::TotalTps, true),
    }
}

/// A side's state at a cell: the worst of its repetitions.
fn state(cells: &[RateView]) -> RateState {
    if cells.is_empty() {
        return RateState::Missing;
    }
    let of = |v: &RateView| match &v.figures {
        None => RateState::Error,
        Some(f) if f.client_behind.is_some() => RateState::ClientBehind,
        Some(f) if f.saturated.is_some() => RateState::Saturated,
        Some(_) => RateState::KeptUp,
    };
    let rank = |s: RateState| {
        [RateState::KeptUp, RateState::Saturated, RateState::ClientBehind, RateState::Error]
            .iter()
            .position(|x| *x == s)
            .unwrap_or(4)
    };
    cells.iter().map(of).max_by_key(|s| rank(*s)).unwrap_or(RateState::Missing)
}

/// A figure over a cell's repetitions: each repetition one value.
fn estimate(cells: &[RateView], figure: fn(&RateView) -> Option<f64>) -> Option<Estimate> {
    let values: Vec<f64> = cells.iter().filter_map(figure).filter(|v| v.is_finite() && *v > 0.0).collect();
    mean_estimate(&values, Basis::Repetitions)
}

/// The run-to-run noise a rate figure allows for: the comparison's noise of the matrix
/// figure nearest in kind (throughput for rates, TTFT for TTFT, time between tokens for
/// end to end), or the assumed noise where the site has none of it. Rate runs carry no
/// history of their own yet, so this is never less than the site knows of its runs.
fn between(noise: &RunNoise, m: Metric) -> Between {
    let f = noise.of(m).cloned().unwrap_or_else(|| moderated(m, Pool::default(), noise.assumed_pct));
    Between::Runs { var_log: f.var_log, df: f.df }
}

/// The capacity at one objective of one context, both runs.
#[derive(Debug, Clone, Serialize)]
pub struct RateCapacityPair {
    pub context: u32,
    pub slo: String,
    pub a: Option<RateCapacity>,
    pub b: Option<RateCapacity>,
    /// Judged from each repetition's capacity, where both sides' are interpolated values.
    pub change: Option<Change>,
}

/// Each context and objective both runs have a capacity for.
pub fn capacity_pairs(
    a: &[super::rates::ContextCapacity],
    b: &[super::rates::ContextCapacity],
    threshold_pct: f64,
    noise: &RunNoise,
) -> Vec<RateCapacityPair> {
    a.iter()
        .filter_map(|x| {
            let y = b.iter().find(|y| y.context == x.context && y.slo == x.slo)?;
            let est = |c: &super::rates::ContextCapacity| mean_estimate(&c.per_repetition, Basis::Repetitions);
            let change = match (x.capacity, y.capacity) {
                (Some(RateCapacity::Interpolated(_)), Some(RateCapacity::Interpolated(_))) => {
                    change(&est(x)?, &est(y)?, true, threshold_pct, between(noise, Metric::TotalTps))
                }
                _ => None,
            };
            Some(RateCapacityPair { context: x.context, slo: x.slo.clone(), a: x.capacity, b: y.capacity, change })
        })
        .collect()
}

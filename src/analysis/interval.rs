//! Every figure with its n and its uncertainty: a point estimate, what it was estimated over
//! (repetitions of a cell, requests of one window, batches of one window), a 95% interval
//! where n allows one, and the coefficient of variation. The formulas are on the site's
//! methodology page and in `docs/src/reference/statistics.md`.

use serde::Serialize;

use crate::stats::{mean_sd, t_quantile};
pub use crate::stats::{min_requests_for_percentile, percentile_supported};

/// The confidence of every interval the site prints.
pub const CONFIDENCE: f64 = 0.95;
/// A figure whose coefficient of variation is above this is marked noisy.
pub const NOISY_CV: f64 = 0.10;
/// Throughput bins are grouped into batches of this many seconds for a within-window
/// interval: long enough that one batch's tokens barely depend on its neighbour's (a
/// request's tokens are spread over the seconds it streamed), short enough to leave several
/// batches in a 30 s window.
pub const BATCH_SECONDS: usize = 5;
/// Fewer batches than this give no within-window interval.
pub const MIN_BATCHES: usize = 3;

/// What a figure's n counts and its interval covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Repetitions of the cell (or runs of one configuration): covers run-to-run noise.
    Repetitions,
    /// Requests of one measurement: covers which requests happened to be timed, not the
    /// next run's noise.
    Requests,
    /// Batches of one window's throughput bins: within one window only.
    WindowBatches,
}

/// How the interval was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalKind {
    /// Student's t interval of a mean.
    TMean,
    /// Distribution-free interval of a quantile from order statistics (binomial).
    OrderStatistic,
    /// The least and the most of a few samples: too few for a 95% interval, shown as spread.
    Range,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    pub kind: IntervalKind,
}

/// One figure with its uncertainty.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub n: u32,
    pub basis: Basis,
    pub interval: Option<Interval>,
    /// Standard deviation / mean of what n counts; absent below n = 2.
    pub cv: Option<f64>,
    /// The repetitions' values (basis `Repetitions`), which comparisons test.
    #[serde(skip)]
    pub samples: Vec<f64>,
}

impl Estimate {
    /// Half the interval's width as a percentage of the value ("±3.1%"), for 95% intervals.
    pub fn half_width_pct(&self) -> Option<f64> {
        let i = self.interval.filter(|i| i.kind != IntervalKind::Range)?;
        (self.value != 0.0).then(|| (i.hi - i.lo) / 2.0 / self.value.abs() * 100.0)
    }

    pub fn noisy(&self) -> bool {
        self.cv.is_some_and(|cv| cv > NOISY_CV)
    }
}

/// Mean with its t interval: x̄ ± t(0.975, n-1) · s/√n, and CV = s/x̄. One value gives the
/// value alone (n = 1, no interval).
pub fn mean_estimate(values: &[f64], basis: Basis) -> Option<Estimate> {
    let values: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (mean, sd) = mean_sd(&values)?;
    let n = values.len();
    let interval = (n >= 2).then(|| {
        let half = t_quantile((n - 1) as f64, 1.0 - (1.0 - CONFIDENCE) / 2.0) * sd / (n as f64).sqrt();
        Interval { lo: mean - half, hi: mean + half, kind: IntervalKind::TMean }
    });
    Some(Estimate {
        value: mean,
        n: n as u32,
        basis,
        interval,
        cv: (n >= 2 && mean != 0.0).then(|| sd / mean.abs()),
        samples: if basis == Basis::Repetitions { values } else { Vec::new() },
    })
}

/// The 95% interval of the `p` quantile (0..=100) of `values` from their order statistics:
/// the narrowest ranks j < k around n·p/100 with P(j ≤ B < k) ≥ 0.95 for B ~ Binomial(n,
/// p/100) (Conover, *Practical Nonparametric Statistics*, 3.2). Exact for any continuous
/// distribution, no resampling, so pages stay byte-identical. `None` when n is too small
/// for 95% (n < 6 for the median).
pub fn quantile_interval(values: &[f64], p: f64) -> Option<Interval> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let (j, k) = crate::stats::quantile_ranks(v.len(), p, CONFIDENCE)?;
    Some(Interval { lo: v[j - 1], hi: v[k - 1], kind: IntervalKind::OrderStatistic })
}

/// A median of requests with its interval (order statistics), or its range when n is too
/// small for 95%.
pub fn median_estimate(values: &[f64]) -> Option<Estimate> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let value = crate::stats::median(&v)?;
    let interval = quantile_interval(&v, 50.0).or_else(|| {
        let lo = v.iter().copied().reduce(f64::min)?;
        let hi = v.iter().copied().reduce(f64::max)?;
        (v.len() >= 2).then_some(Interval { lo, hi, kind: IntervalKind::Range })
    });
    let cv = mean_sd(&v).filter(|(m, _)| v.len() >= 2 && *m != 0.0).map(|(m, sd)| sd / m.abs());
    Some(Estimate { value, n: v.len() as u32, basis: Basis::Requests, interval, cv, samples: Vec::new() })
}

/// Batch means of a window's per-second rates: consecutive bins grouped `BATCH_SECONDS` at
/// a time (a short last batch is dropped, as it would weigh as much as a full one), each
/// batch's tokens over its seconds.
pub fn batch_means(bins: &[(f64, f64)], batch: usize) -> Vec<f64> {
    bins.chunks_exact(batch.max(1))
        .map(|c| {
            let (tokens, seconds) = c.iter().fold((0.0, 0.0), |(t, s), (bt, bs)| (t + bt, s + bs));
            tokens / seconds
        })
        .filter(|v| v.is_finite())
        .collect()
}

/// The within-window interval of a total tok/s: a t interval over its batch means, centred
/// on the window's own figure. `None` with fewer than `MIN_BATCHES` batches.
pub fn window_estimate(total_tps: f64, bins: &[(f64, f64)]) -> Option<Estimate> {
    let means = batch_means(bins, BATCH_SECONDS);
    if means.len() < MIN_BATCHES {
        return None;
    }
    let e = mean_estimate(&means, Basis::WindowBatches)?;
    let shift = total_tps - e.value;
    Some(Estimate {
        value: total_tps,
        interval: e.interval.map(|i| Interval { lo: i.lo + shift, hi: i.hi + shift, ..i }),
        ..e
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_interval_matches_a_textbook_example() {
        // n = 5, mean 10, s = 1.5811 (values 8..12); t(0.975, 4) = 2.776445.
        let e = mean_estimate(&[8.0, 9.0, 10.0, 11.0, 12.0], Basis::Repetitions).unwrap();
        let i = e.interval.unwrap();
        let half = 2.776445 * 1.5811388 / 5f64.sqrt();
        assert!(close(i.lo, 10.0 - half, 1e-4) && close(i.hi, 10.0 + half, 1e-4), "{i:?}");
        assert!(close(e.cv.unwrap(), 0.15811388, 1e-6));
        assert_eq!((e.n, e.samples.len()), (5, 5));
        assert!(e.noisy());
    }

    #[test]
    fn one_value_has_no_interval_and_no_cv() {
        let e = mean_estimate(&[42.0], Basis::Repetitions).unwrap();
        assert_eq!((e.value, e.interval, e.cv, e.n), (42.0, None, None, 1));
        assert!(mean_estimate(&[], Basis::Repetitions).is_none());
    }

    #[test]
    fn median_interval_uses_order_statistics() {
        // n = 10: the 95% interval of the median is (X(2), X(9)), coverage 0.9785.
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let i = quantile_interval(&v, 50.0).unwrap();
        assert_eq!((i.lo, i.hi, i.kind), (2.0, 9.0, IntervalKind::OrderStatistic));
        // n = 5 cannot reach 95% (the full range covers 1 - 2/32 = 0.9375).
        assert!(quantile_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 50.0).is_none());
        let small = median_estimate(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(small.interval.unwrap(), Interval { lo: 1.0, hi: 3.0, kind: IntervalKind::Range });
        assert_eq!(small.half_width_pct(), None);
    }

    #[test]
    fn window_interval_comes_from_batch_means() {
        // 15 one-second bins: batches of 5 at 100, 110, 90 tok/s.
        let bins: Vec<(f64, f64)> =
            [100.0, 110.0, 90.0].iter().flat_map(|&r| std::iter::repeat_n((r, 1.0), 5)).collect();
        assert_eq!(batch_means(&bins, 5), vec![100.0, 110.0, 90.0]);
        let e = window_estimate(100.0, &bins).unwrap();
        let half = t_quantile(2.0, 0.975) * 10.0 / 3f64.sqrt();
        let i = e.interval.unwrap();
        assert!(close(i.hi - 100.0, half, 1e-9) && e.basis == Basis::WindowBatches);
        assert!(window_estimate(100.0, &bins[..10]).is_none());
    }
}

//! Order statistics as the methodology page (`site-templates/glossary.html`) defines them,
//! and the order-statistic interval of a quantile.

use statrs::distribution::{Binomial, DiscreteCDF};

use super::memo::Memo;

/// Linear-interpolated percentile (`p` in 0..=100) of `values`: rank = p/100 x (n - 1),
/// interpolated between the neighbouring order statistics. `None` for no values.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    let rank = (p / 100.0).clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    // The two order statistics by selection, not a sort: the same values in linear time.
    let (_, &mut at_lo, above) = v.select_nth_unstable_by(lo, f64::total_cmp);
    let at_hi = if hi == lo { at_lo } else { above.iter().copied().min_by(f64::total_cmp).unwrap_or(at_lo) };
    Some(at_lo + (at_hi - at_lo) * frac)
}

pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// The least n of requests for which the `p` percentile is printed: at least one request
/// beyond it (p90 from 10 requests, p99 from 100). Below it the page prints "max of n".
pub fn min_requests_for_percentile(p: f64) -> usize {
    if p >= 100.0 {
        return 1;
    }
    (100.0 / (100.0 - p) - 1e-9).ceil() as usize
}

pub fn percentile_supported(n: usize, p: f64) -> bool {
    n >= min_requests_for_percentile(p)
}

/// The 1-based ranks (j, k) of the order statistics that bound the `p` quantile (0..=100) of
/// `n` values with at least `confidence`: the narrowest j < k around n·p/100 with
/// P(j ≤ B < k) ≥ confidence for B ~ Binomial(n, p/100) (Conover, *Practical Nonparametric
/// Statistics*, 3.2). Exact for any continuous distribution, no resampling. `None` when n is
/// too small (n < 6 for the median at 95%).
pub fn quantile_ranks(n: usize, p: f64, confidence: f64) -> Option<(usize, usize)> {
    thread_local! {
        static RANKS: Memo<(usize, u64, u64), Option<(usize, usize)>> = Memo::new();
    }
    RANKS.with(|m| m.get_or((n, p.to_bits(), confidence.to_bits()), || walk_quantile_ranks(n, p, confidence)))
}

fn walk_quantile_ranks(n: usize, p: f64, confidence: f64) -> Option<(usize, usize)> {
    if n < 2 {
        return None;
    }
    let q = (p / 100.0).clamp(0.0, 1.0);
    let b = Binomial::new(q, n as u64).ok()?;
    // P(X_(j) <= quantile < X_(k)) = P(j <= B <= k-1) = cdf(k-1) - cdf(j-1), ranks 1-based.
    let cover = |j: usize, k: usize| b.cdf((k - 1) as u64) - if j == 0 { 0.0 } else { b.cdf((j - 1) as u64) };
    let centre = ((n as f64 + 1.0) * q).round().clamp(1.0, n as f64) as usize;
    let (mut j, mut k) = (centre, centre);
    while cover(j, k) < confidence {
        // Widen on the side that adds the most probability mass.
        let lower = (j > 1).then(|| cover(j - 1, k));
        let upper = (k < n).then(|| cover(j, k + 1));
        match (lower, upper) {
            (Some(l), Some(u)) if l >= u => j -= 1,
            (_, Some(_)) => k += 1,
            (Some(_), None) => j -= 1,
            (None, None) => return None,
        }
    }
    Some((j, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interpolates_between_middle_values() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn percentiles_follow_linear_rank() {
        let v: Vec<f64> = (1..=11).map(f64::from).collect();
        assert_eq!(percentile(&v, 90.0), Some(10.0));
        assert!((percentile(&[1.0, 2.0], 99.0).unwrap() - 1.99).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }

    #[test]
    fn percentiles_need_a_request_beyond_them() {
        assert_eq!((min_requests_for_percentile(50.0), min_requests_for_percentile(90.0)), (2, 10));
        assert_eq!(min_requests_for_percentile(99.0), 100);
        assert!(!percentile_supported(9, 90.0) && percentile_supported(10, 90.0));
    }

    proptest::proptest! {
        /// Selection gives what the definition says: interpolation between the sorted values.
        #[test]
        fn a_percentile_is_the_interpolated_order_statistic(
            values in proptest::collection::vec(-1e6f64..1e6, 1..60),
            p in 0.0f64..=100.0,
        ) {
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let rank = p / 100.0 * (sorted.len() - 1) as f64;
            let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
            let want = sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64);
            proptest::prop_assert_eq!(percentile(&values, p), Some(want));
        }
    }
}

//! Change points in a sequence (a configuration's runs in release order): binary
//! segmentation (Scott and Knott 1974; the search E-divisive means uses, as in Apache Otava
//! and MongoDB's change-point detection), with Welch's t test between the two sides of each
//! candidate split in place of the energy statistic. The split with the largest |t| is kept
//! when its p value, Bonferroni-corrected over the candidate splits, is below `alpha`; then
//! each side is searched again. Every segment holds at least `min_segment` values, so a lone
//! outlier is never a change point of its own.

use super::t::{t_two_sided_p, welch};

/// A change between `values[..at]` and `values[at..]` of the segment it was found in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// The index of the first value after the change.
    pub at: usize,
    /// The values either side within the segment searched: [from, at) and [at, to).
    pub from: usize,
    pub to: usize,
    /// Mean after less mean before, its standard error and Welch's degrees of freedom.
    pub d: f64,
    pub se: f64,
    pub df: f64,
    /// The corrected p value.
    pub p: f64,
}

/// Every change point of `values`, in index order.
pub fn change_points(values: &[f64], min_segment: usize, alpha: f64) -> Vec<ChangePoint> {
    let mut out = Vec::new();
    search(values, (0, values.len()), min_segment.max(2), alpha, &mut out);
    out.sort_by_key(|c| c.at);
    out
}

fn search(values: &[f64], (from, to): (usize, usize), min: usize, alpha: f64, out: &mut Vec<ChangePoint>) {
    if to - from < 2 * min {
        return;
    }
    let candidates = (from + min)..=(to - min);
    let m = candidates.clone().count() as f64;
    let best = candidates
        .filter_map(|at| {
            let w = welch(&values[from..at], &values[at..to])?;
            let p = if w.se > 0.0 { t_two_sided_p(w.d / w.se, w.df) } else { f64::from(w.d == 0.0) };
            Some(ChangePoint { at, from, to, d: w.d, se: w.se, df: w.df, p: (p * m).min(1.0) })
        })
        .min_by(|a, b| a.p.total_cmp(&b.p).then(b.d.abs().total_cmp(&a.d.abs())));
    let Some(best) = best.filter(|b| b.p < alpha) else { return };
    out.push(best);
    search(values, (from, best.at), min, alpha, out);
    search(values, (best.at, to), min, alpha, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic wobble of about ±1% (no generator needed).
    fn wobble(i: usize) -> f64 {
        ((i * 7919) % 13) as f64 / 13.0 * 0.02 - 0.01
    }

    #[test]
    fn a_step_is_found_where_it_is() {
        let v: Vec<f64> = (0..30).map(|i| if i < 18 { 0.0 } else { -0.10 } + wobble(i)).collect();
        let cps = change_points(&v, 2, 0.05);
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].at, 18);
        assert!((cps[0].d + 0.10).abs() < 0.01, "{}", cps[0].d);
    }

    #[test]
    fn a_flat_series_and_a_lone_outlier_have_none() {
        let flat: Vec<f64> = (0..30).map(wobble).collect();
        assert!(change_points(&flat, 2, 0.05).is_empty());
        let mut outlier = flat.clone();
        outlier[14] -= 0.3;
        assert!(change_points(&outlier, 2, 0.05).is_empty(), "{:?}", change_points(&outlier, 2, 0.05));
        // At the end too: one last run apart is no change point.
        let mut last = flat;
        last[29] -= 0.3;
        assert!(change_points(&last, 2, 0.05).is_empty());
    }

    #[test]
    fn two_steps_are_both_found() {
        let v: Vec<f64> = (0..30).map(|i| [0.0, 0.2, 0.05][i / 10] + wobble(i)).collect();
        let at: Vec<usize> = change_points(&v, 2, 0.05).iter().map(|c| c.at).collect();
        assert_eq!(at, [10, 20]);
    }
}

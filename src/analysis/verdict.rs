//! Whether a difference between two figures is real: Welch's t test on the logarithms of
//! the repetitions (so the interval is one of the ratio B/A), the Benjamini-Hochberg
//! correction across every figure one comparison judges, and a practical threshold below which a
//! change is not called one. Formulas and references: `docs/src/reference/statistics.md`.

use serde::Serialize;

use super::interval::{Basis, Estimate, CONFIDENCE};
use crate::stats::{benjamini_hochberg, t_quantile, t_two_sided_p, welch};

/// How a change reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significant after the comparison-wide correction (the ratio's interval excludes no
    /// change), and the change
    /// is at least the practical threshold, in the metric's good direction.
    Faster,
    Slower,
    /// The whole 95% interval of the change lies inside ± the threshold.
    NoChange,
    /// Neither: more repetitions would tell.
    Inconclusive,
    /// One side has a single measurement: the change is shown, not judged.
    Single,
}

impl Verdict {
    /// Whether the verdict is a judgement of the change (not single measurements).
    pub fn judged(self) -> bool {
        self != Verdict::Single
    }
}

/// The change from A to B of one figure, with what the noise allows to say of it.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub a: f64,
    pub b: f64,
    /// (b - a) / a x 100.
    pub pct: f64,
    pub n_a: u32,
    pub n_b: u32,
    /// The 95% interval of the change in percent (from the ratio's interval); absent for
    /// single measurements.
    pub lo_pct: Option<f64>,
    pub hi_pct: Option<f64>,
    /// Welch's two-sided p value of "no change" (before correction).
    pub p_value: Option<f64>,
    pub verdict: Verdict,
    /// Inconclusive: the repetitions per side that would resolve the change at the observed
    /// noise (absent above `MAX_REPS_ADVISED`).
    pub reps_needed: Option<u32>,
    #[serde(skip)]
    higher_is_better: bool,
    #[serde(skip)]
    threshold_pct: f64,
}

/// Advice above this many repetitions is not given ("more than 50").
pub const MAX_REPS_ADVISED: u32 = 50;
/// The false-call rate a comparison keeps (Benjamini-Hochberg).
pub const ALPHA: f64 = 1.0 - CONFIDENCE;

/// Welch statistics of two samples, on the log scale (so the interval is one of the ratio
/// B/A): difference of mean logs, its standard error and the Welch-Satterthwaite degrees of
/// freedom. A sample holding zero or a negative value (a repetition that served nothing)
/// has no logarithm: then the test runs on the values themselves and the change is read
/// relative to A's mean, so a repetition at 0 tok/s counts as evidence, not as missing.
struct LogWelch {
    d: f64,
    se: f64,
    df: f64,
    /// Pooled standard deviation (for advice on n).
    sd: f64,
    /// `None` on the log scale; on the linear scale, A's mean (the base of a percentage).
    base: Option<f64>,
    /// The run-to-run part of `se`^2 (both runs' levels), which more repetitions do not
    /// shrink.
    runs_var: f64,
}

impl LogWelch {
    /// A difference on this test's scale as a percentage change.
    fn pct(&self, d: f64) -> f64 {
        match self.base {
            None => pct_of(d),
            // Figures are never negative: B can fall at most by all of A.
            Some(base) => (d / base * 100.0).max(-100.0),
        }
    }

    /// The threshold on this test's scale.
    fn limit(&self, threshold_pct: f64) -> f64 {
        match self.base {
            None => (1.0 + threshold_pct / 100.0).ln(),
            Some(base) => base.abs() * threshold_pct / 100.0,
        }
    }
}

/// The statistics with the run-to-run variance `var_log` (each run's own level, log scale,
/// estimated with `df` degrees of freedom) added for both runs. The degrees of freedom
/// follow Welch-Satterthwaite over the three parts: Welch's own df is se^4 over the sum of
/// each side's (variance^2 / df), so that sum is se^4 / df.
fn with_run_noise(w: LogWelch, noise: Option<(f64, f64)>) -> LogWelch {
    let Some((var_log, df_noise)) = noise.filter(|(v, _)| *v > 0.0) else { return w };
    // On the linear scale (a side with 0) the noise is relative to A's mean.
    let var_runs = 2.0 * var_log * w.base.map_or(1.0, |b| b * b);
    let within = w.se * w.se;
    let se2 = within + var_runs;
    let parts = if w.df.is_finite() && w.df > 0.0 { within * within / w.df } else { 0.0 };
    let df = se2 * se2 / (parts + var_runs * var_runs / df_noise);
    LogWelch { se: se2.sqrt(), df, runs_var: var_runs, ..w }
}

/// Evidence of a repetition's spread from other runs of the same design: the sum of squared
/// deviations of their logs from each run's mean, and its degrees of freedom.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PooledSpread {
    pub ss: f64,
    pub df: f64,
}

/// The paired t statistics of the log ratios b_i / a_i (each pair measured side by side):
/// their mean, its standard error s / sqrt(n), where s^2 pools the pairs' own spread (n - 1
/// degrees of freedom) with `other` pairs' spread of the same cell (their df added). `sd`
/// is set so that the repetitions advice (which reads sd * sqrt(2 / n)) asks the same of
/// pairs.
fn paired_log(a: &[f64], b: &[f64], other: PooledSpread) -> Option<LogWelch> {
    if a.len() < 2 || a.iter().chain(b).any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y.ln() - x.ln()).collect();
    let (mean, sd) = crate::stats::mean_sd(&d)?;
    let n = d.len() as f64;
    let df = n - 1.0 + other.df;
    let s = ((sd * sd * (n - 1.0) + other.ss) / df).sqrt();
    Some(LogWelch { d: mean, se: s / n.sqrt(), df, sd: s / 2f64.sqrt(), base: None, runs_var: 0.0 })
}

/// The two-sample t statistics on the logs with one variance pooled from both samples and
/// `other` runs' spread of the same cell (Student's pooled t: every sample is one draw of
/// the same noise, as repetitions each on a server process of its own are). `None` where a
/// value is not positive (then Welch's test on the values runs).
fn pooled_log(a: &[f64], b: &[f64], other: PooledSpread) -> Option<LogWelch> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let logs = |x: &[f64]| x.iter().map(|v| v.ln()).collect::<Vec<f64>>();
    let ((ma, sa), (mb, sb)) = (crate::stats::mean_sd(&logs(a))?, crate::stats::mean_sd(&logs(b))?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let df = na - 1.0 + nb - 1.0 + other.df;
    let s = ((sa * sa * (na - 1.0) + sb * sb * (nb - 1.0) + other.ss) / df).sqrt();
    Some(LogWelch { d: mb - ma, se: s * (1.0 / na + 1.0 / nb).sqrt(), df, sd: s, base: None, runs_var: 0.0 })
}

fn log_welch(a: &[f64], b: &[f64]) -> Option<LogWelch> {
    if a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let positive = a.iter().chain(b).all(|v| *v > 0.0);
    let w = if positive {
        let logs = |x: &[f64]| x.iter().map(|v| v.ln()).collect::<Vec<f64>>();
        welch(&logs(a), &logs(b))?
    } else {
        welch(a, b).filter(|w| w.mean_a > 0.0)?
    };
    Some(LogWelch { d: w.d, se: w.se, df: w.df, sd: w.sd, base: (!positive).then_some(w.mean_a), runs_var: 0.0 })
}

/// What separates the two sides of a change beyond their repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Between {
    /// Nothing more: the repetitions carry all the noise there is.
    Nothing,
    /// Two runs of different sessions: each run's level varies with this variance (log
    /// scale), estimated with `df` degrees of freedom.
    Runs { var_log: f64, df: f64 },
    /// Both runs spread their repetitions over server processes of their own
    /// (`--launch --restarts`): each repetition is a draw of the noise between processes, so
    /// nothing is added, and their spread is pooled with `other` runs' of the cell.
    Processes { other: PooledSpread },
    /// Measured pairwise in one session (`site bench --versus`): repetition i of A beside
    /// repetition i of B, so what drifted between them falls on both. The pairs' spread is
    /// pooled with `other` pairs'; `runs` is the noise between the two servers' processes
    /// where each side ran on one process (pairs on processes of their own carry it).
    Paired { other: PooledSpread, runs: Option<(f64, f64)> },
}

/// The change of one figure, before the comparison-wide correction ([`judge_all`]) sets
/// its verdict. `higher_is_better` is the metric's good direction.
pub fn change(
    a: &Estimate,
    b: &Estimate,
    higher_is_better: bool,
    threshold_pct: f64,
    between: Between,
) -> Option<Change> {
    if !(a.value.is_finite() && b.value.is_finite()) || a.value == 0.0 {
        return None;
    }
    let repeated = |e: &Estimate| e.basis == Basis::Repetitions && e.samples.len() >= 2;
    let welch = match between {
        _ if !(repeated(a) && repeated(b)) => None,
        Between::Paired { other, runs } if a.samples.len() == b.samples.len() => {
            paired_log(&a.samples, &b.samples, other).map(|w| with_run_noise(w, runs))
        }
        Between::Paired { runs, .. } => log_welch(&a.samples, &b.samples).map(|w| with_run_noise(w, runs)),
        Between::Processes { other } => {
            pooled_log(&a.samples, &b.samples, other).or_else(|| log_welch(&a.samples, &b.samples))
        }
        Between::Runs { var_log, df } => {
            log_welch(&a.samples, &b.samples).map(|w| with_run_noise(w, Some((var_log, df))))
        }
        Between::Nothing => log_welch(&a.samples, &b.samples),
    };
    let t = welch.as_ref().map(|w| t_quantile(w.df, 1.0 - ALPHA / 2.0));
    let bounds = welch.as_ref().zip(t).map(|(w, t)| (w.pct(w.d - t * w.se), w.pct(w.d + t * w.se)));
    let p_value =
        welch.as_ref().map(|w| if w.se > 0.0 { t_two_sided_p(w.d / w.se, w.df) } else { f64::from(w.d == 0.0) });
    let pct = (b.value - a.value) / a.value * 100.0;
    let reps_needed = welch.as_ref().and_then(|w| reps_needed(w, threshold_pct));
    Some(Change {
        a: a.value,
        b: b.value,
        pct,
        n_a: a.n,
        n_b: b.n,
        lo_pct: bounds.map(|b| b.0),
        hi_pct: bounds.map(|b| b.1),
        p_value,
        verdict: if welch.is_some() { Verdict::Inconclusive } else { Verdict::Single },
        reps_needed,
        higher_is_better,
        threshold_pct,
    })
}

fn pct_of(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// Repetitions per side at which the interval at the observed noise would settle the
/// question: exclude no change when the change is past the threshold, else fit inside it.
/// The run-to-run part stays however many repetitions: past it, none would.
fn reps_needed(w: &LogWelch, threshold_pct: f64) -> Option<u32> {
    let limit = w.limit(threshold_pct);
    let room = if w.d.abs() >= limit { w.d.abs() } else { limit - w.d.abs() };
    if w.sd <= 0.0 || room <= 0.0 {
        return None;
    }
    (2..=MAX_REPS_ADVISED).find(|&n| {
        let n = n as f64;
        t_quantile(2.0 * n - 2.0, 1.0 - ALPHA / 2.0) * (w.sd * w.sd * 2.0 / n + w.runs_var).sqrt() < room
    })
}

/// Sets every change's verdict at once. The Benjamini-Hochberg step-up procedure runs over
/// every judged figure of the comparison: with m p values sorted, the k smallest are
/// significant for the largest k whose p is at most k/m x ALPHA. It keeps the expected share
/// of false calls among the calls at ALPHA, and when nothing changed (an A/A pair) the
/// chance of any call at all at ALPHA, however many cells the comparison holds. A
/// significant change is called only when it is at least its threshold; a change whose
/// whole 95% interval lies within ± the threshold is "no change".
pub fn judge_all(changes: &mut [&mut Change]) {
    let p_values: Vec<Option<f64>> = changes.iter().map(|c| c.p_value).collect();
    for (c, sig) in changes.iter_mut().zip(benjamini_hochberg(&p_values, ALPHA)) {
        c.verdict = verdict_of(c, sig);
    }
}

fn verdict_of(c: &Change, significant: bool) -> Verdict {
    let (Some(lo), Some(hi)) = (c.lo_pct, c.hi_pct) else {
        return Verdict::Single;
    };
    if significant && c.pct.abs() >= c.threshold_pct {
        if (c.pct > 0.0) == c.higher_is_better {
            Verdict::Faster
        } else {
            Verdict::Slower
        }
    } else if lo > -c.threshold_pct && hi < c.threshold_pct {
        Verdict::NoChange
    } else {
        Verdict::Inconclusive
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::interval::mean_estimate;

    fn reps(v: &[f64]) -> Estimate {
        mean_estimate(v, Basis::Repetitions).unwrap()
    }

    fn judged(a: &[f64], b: &[f64], up: bool) -> Change {
        let mut c = change(&reps(a), &reps(b), up, 5.0, Between::Nothing).unwrap();
        judge_all(&mut [&mut c]);
        c
    }

    #[test]
    fn paired_repetitions_cancel_what_drifted_between_them() {
        // Both servers drift together over the session, B 10% below A at every pair: unpaired,
        // the drift swamps the difference; paired, it is plain.
        let a = reps(&[100.0, 120.0, 90.0, 110.0]);
        let b = reps(&[90.0, 108.0, 81.0, 99.0]);
        let mut unpaired = change(&a, &b, true, 5.0, Between::Nothing).unwrap();
        let mut paired =
            change(&a, &b, true, 5.0, Between::Paired { other: PooledSpread::default(), runs: None }).unwrap();
        judge_all(&mut [&mut unpaired]);
        judge_all(&mut [&mut paired]);
        assert_eq!((unpaired.verdict, paired.verdict), (Verdict::Inconclusive, Verdict::Slower));
        assert!((paired.lo_pct.unwrap() + 10.0).abs() < 0.01 && (paired.hi_pct.unwrap() + 10.0).abs() < 0.01);
        // Pairs need as many repetitions a side.
        let short = reps(&[90.0, 108.0, 81.0]);
        assert_eq!(
            change(&a, &short, true, 5.0, Between::Paired { other: PooledSpread::default(), runs: None })
                .unwrap()
                .verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn other_runs_spread_narrows_the_interval_and_adds_its_degrees_of_freedom() {
        // Three repetitions a side, each on a process of its own, 10% apart at about 2% noise.
        let a = reps(&[100.0, 103.0, 98.0]);
        let b = reps(&[90.0, 92.0, 89.0]);
        let alone = change(&a, &b, true, 5.0, Between::Processes { other: PooledSpread::default() }).unwrap();
        // Ten other runs of these configurations, two df each, at the same 2% spread.
        let other = PooledSpread { ss: 20.0 * 0.02f64.powi(2), df: 20.0 };
        let pooled = change(&a, &b, true, 5.0, Between::Processes { other }).unwrap();
        let width = |c: &Change| c.hi_pct.unwrap() - c.lo_pct.unwrap();
        assert!(width(&pooled) < width(&alone), "{} vs {}", width(&pooled), width(&alone));
        // Student's pooled t by hand: s^2 = (ss_a + ss_b + ss_other) / (2 + 2 + 20).
        let logs = |v: &[f64]| v.iter().map(|x: &f64| x.ln()).collect::<Vec<_>>();
        let ss = |v: &[f64]| {
            let l = logs(v);
            let m = l.iter().sum::<f64>() / l.len() as f64;
            l.iter().map(|x| (x - m).powi(2)).sum::<f64>()
        };
        let s = ((ss(&a.samples) + ss(&b.samples) + other.ss) / 24.0).sqrt();
        let se = s * (2.0f64 / 3.0).sqrt();
        let t = crate::stats::t_quantile(24.0, 0.975);
        let d = logs(&b.samples).iter().sum::<f64>() / 3.0 - logs(&a.samples).iter().sum::<f64>() / 3.0;
        assert!((pooled.lo_pct.unwrap() - pct_of(d - t * se)).abs() < 1e-9);
        // A wide spread elsewhere widens it instead: the pool is evidence, not a discount.
        let wide = PooledSpread { ss: 20.0 * 0.2f64.powi(2), df: 20.0 };
        let widened = change(&a, &b, true, 5.0, Between::Processes { other: wide }).unwrap();
        assert!(width(&widened) > width(&alone));
    }

    #[test]
    fn pairs_on_one_process_a_side_allow_for_the_noise_between_the_processes() {
        // B 6% below A at every pair: the pairs alone call it; with the servers' processes'
        // levels apart by 4% a run, it is no longer told from their noise.
        let a = reps(&[100.0, 120.0, 90.0, 110.0]);
        let b = reps(&[94.1, 112.6, 84.7, 103.3]);
        let mut alone =
            change(&a, &b, true, 5.0, Between::Paired { other: PooledSpread::default(), runs: None }).unwrap();
        let runs = Some((1.04f64.ln().powi(2), 20.0));
        let mut with_runs =
            change(&a, &b, true, 5.0, Between::Paired { other: PooledSpread::default(), runs }).unwrap();
        judge_all(&mut [&mut alone]);
        judge_all(&mut [&mut with_runs]);
        assert_eq!((alone.verdict, with_runs.verdict), (Verdict::Slower, Verdict::Inconclusive));
    }

    #[test]
    fn a_clear_slowdown_is_slower_and_a_speedup_faster() {
        let c = judged(&[100.0, 101.0, 99.0], &[89.0, 90.0, 91.0], true);
        assert_eq!(c.verdict, Verdict::Slower);
        assert!(c.hi_pct.unwrap() < 0.0 && c.p_value.unwrap() < 0.01);
        // Latency: lower is better, so a lower TTFT is faster.
        assert_eq!(judged(&[100.0, 101.0, 99.0], &[89.0, 90.0, 91.0], false).verdict, Verdict::Faster);
    }

    #[test]
    fn tight_equal_samples_are_no_change_and_noisy_ones_inconclusive() {
        let same = judged(&[100.0, 100.5, 99.5], &[100.2, 99.8, 100.1], true);
        assert_eq!(same.verdict, Verdict::NoChange);
        let noisy = judged(&[80.0, 100.0, 120.0], &[85.0, 110.0, 125.0], true);
        assert_eq!(noisy.verdict, Verdict::Inconclusive);
        // Logs spread by about 0.2 against a 6.7% change: some 70 repetitions a side would tell,
        // past the 50 advice goes to, so none is given.
        assert_eq!(noisy.reps_needed, None, "{noisy:?}");
    }

    #[test]
    fn a_significant_change_below_the_threshold_is_not_called() {
        // 2% apart with almost no noise: real, but under the 5% practical threshold.
        let c = judged(&[100.0, 100.01, 99.99], &[102.0, 102.01, 101.99], true);
        assert!(c.p_value.unwrap() < 0.001);
        assert_eq!(c.verdict, Verdict::NoChange);
    }

    #[test]
    fn single_measurements_are_never_judged() {
        let mut c = change(&reps(&[100.0]), &reps(&[50.0, 51.0, 49.0]), true, 5.0, Between::Nothing).unwrap();
        judge_all(&mut [&mut c]);
        assert_eq!((c.verdict, c.lo_pct, c.p_value), (Verdict::Single, None, None));
        assert_eq!(c.pct, -50.0);
    }

    /// A repetition that served nothing (0 tok/s) is evidence of a slowdown, not a missing
    /// value that turns a repeated cell into single measurements.
    #[test]
    fn zero_and_negative_repetitions_are_judged_not_single() {
        let c = judged(&[90.0, 91.0, 89.0], &[30.0, 0.0, 0.0], true);
        assert_eq!((c.n_a, c.n_b), (3, 3));
        assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
        assert!(c.hi_pct.unwrap() < 0.0, "{c:?}");
        let all_zero = judged(&[90.0, 91.0, 89.0], &[0.0, 0.0, 0.0], true);
        assert_eq!(all_zero.verdict, Verdict::Slower, "{all_zero:?}");
        assert!((all_zero.lo_pct.unwrap() - -100.0).abs() < 1e-9, "{all_zero:?}");
        // Latencies: a repetition at 0 ms is odd but still counted.
        let lat = judged(&[10.0, 10.1, 9.9], &[10.0, 0.0, 10.1], false);
        assert_ne!(lat.verdict, Verdict::Single);
    }

    #[test]
    fn benjamini_hochberg_controls_calls_across_the_comparison() {
        let mk = |p: f64| {
            let mut c = change(&reps(&[100.0, 101.0]), &reps(&[120.0, 121.0]), true, 5.0, Between::Nothing).unwrap();
            c.p_value = Some(p);
            c
        };
        let verdicts = |ps: [f64; 3]| {
            let [mut x, mut y, mut z] = ps.map(mk);
            judge_all(&mut [&mut x, &mut y, &mut z]);
            [x.verdict, y.verdict, z.verdict]
        };
        // Each p alone is below 0.05, but the k-th smallest must be below k/3 x 0.05.
        assert_eq!(verdicts([0.03, 0.04, 0.06]), [Verdict::Inconclusive; 3]);
        assert_eq!(verdicts([0.02, 0.03, 0.06]), [Verdict::Faster, Verdict::Faster, Verdict::Inconclusive]);
        // Step-up: the largest passing rank carries the smaller ones with it.
        assert_eq!(verdicts([0.04, 0.02, 0.045]), [Verdict::Faster; 3]);
    }

    #[test]
    fn advice_grows_with_noise() {
        let w = |sd: f64| LogWelch { d: 0.0, se: 0.0, df: 4.0, sd, base: None, runs_var: 0.0 };
        let (quiet, loud) = (reps_needed(&w(0.01), 5.0).unwrap(), reps_needed(&w(0.03), 5.0).unwrap());
        assert!(quiet < loud, "{quiet} {loud}");
    }
}

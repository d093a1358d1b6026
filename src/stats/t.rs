//! Student's t and Welch's two-sample test.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::memo::Memo;

/// Mean and sample standard deviation of finite values.
pub fn mean_sd(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let sd = if n < 2 { 0.0 } else { (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() };
    Some((mean, sd))
}

/// The `p` quantile of Student's t with `df` degrees of freedom (df > 0).
pub fn t_quantile(df: f64, p: f64) -> f64 {
    thread_local! {
        static QUANTILES: Memo<(u64, u64), f64> = Memo::new();
    }
    QUANTILES.with(|m| m.get_or((df.to_bits(), p.to_bits()), || t_inverse_cdf(df, p)))
}

fn t_inverse_cdf(df: f64, p: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map(|t| t.inverse_cdf(p)).unwrap_or(f64::NAN)
}

/// The two-sided p value of a t statistic.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    StudentsT::new(0.0, 1.0, df).map(|d| 2.0 * (1.0 - d.cdf(t.abs()))).unwrap_or(1.0).clamp(0.0, 1.0)
}

/// Welch's statistics of two samples: the difference of means (b - a), its standard error,
/// the Welch-Satterthwaite degrees of freedom, the pooled standard deviation and a's mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    pub d: f64,
    pub se: f64,
    pub df: f64,
    pub sd: f64,
    pub mean_a: f64,
}

/// Welch's statistics of `a` and `b`, each of at least two values; `None` otherwise.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((ma, sa), (mb, sb)) = (mean_sd(a)?, mean_sd(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (sa * sa / na, sb * sb / nb);
    let se = (va + vb).sqrt();
    let df = if se > 0.0 { (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0)) } else { na + nb - 2.0 };
    Some(Welch { d: mb - ma, se, df, sd: ((sa * sa + sb * sb) / 2.0).sqrt(), mean_a: ma })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() < tol
    }

    #[test]
    fn t_quantiles_match_tables() {
        assert!(close(t_quantile(2.0, 0.975), 4.302653, 1e-5));
        assert!(close(t_quantile(10.0, 0.975), 2.228139, 1e-5));
        assert!(close(t_two_sided_p(2.228139, 10.0), 0.05, 1e-5));
    }

    #[test]
    fn welch_matches_a_hand_computation() {
        // a: mean 2, sd 1; b: mean 5, sd 2; n 3 each: se = sqrt(1/3 + 4/3), df = 2.94...
        let w = welch(&[1.0, 2.0, 3.0], &[3.0, 5.0, 7.0]).unwrap();
        assert_eq!((w.d, w.mean_a), (3.0, 2.0));
        assert!(close(w.se, (5.0f64 / 3.0).sqrt(), 1e-12));
        let want_df = (5.0f64 / 3.0).powi(2) / ((1.0f64 / 3.0).powi(2) / 2.0 + (4.0f64 / 3.0).powi(2) / 2.0);
        assert!(close(w.df, want_df, 1e-12));
        assert!(close(w.sd, 2.5f64.sqrt(), 1e-12));
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None);
    }
}

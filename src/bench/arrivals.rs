//! When the requests of an open-loop cell are sent: a schedule drawn once from a seed, so a
//! cell's traffic is reproducible, and sent as drawn whether or not earlier requests have
//! finished. Gaps between requests are exponential (Poisson arrivals), equal (constant), or
//! gamma-distributed with a chosen coefficient of variation (bursty: vLLM's
//! `--burstiness B` is a CV of 1/√B; guidellm's poisson and constant profiles are the
//! other two).

use std::str::FromStr;

use anyhow::{anyhow, bail, Result};

/// Most requests one schedule holds (a rate times a window past it is refused, not drawn).
pub const MAX_SCHEDULED: usize = 10_000_000;

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Independent arrivals: exponential gaps, a coefficient of variation of 1.
    Poisson,
    /// Evenly spaced: every gap 1 / rate.
    Constant,
    /// Gamma-distributed gaps with this coefficient of variation (above 1: bursts; below: more
    /// even than Poisson).
    Gamma { cv: f64 },
}

impl Arrival {
    /// `poisson`, `constant`, `gamma:2`: as the flag takes it and the run records it.
    pub fn name(self) -> String {
        match self {
            Arrival::Poisson => "poisson".into(),
            Arrival::Constant => "constant".into(),
            Arrival::Gamma { cv } => format!("gamma:{cv}"),
        }
    }
}

impl FromStr for Arrival {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Arrival> {
        match s.trim() {
            "poisson" => Ok(Arrival::Poisson),
            "constant" => Ok(Arrival::Constant),
            other => {
                let cv = other.strip_prefix("gamma:").ok_or_else(|| {
                    anyhow!("{other:?} is not an arrival process (poisson, constant, or gamma:CV such as gamma:2)")
                })?;
                let cv: f64 = cv.parse().map_err(|_| anyhow!("gamma:{cv}: CV must be a number, such as gamma:2"))?;
                if !(cv.is_finite() && cv > 0.0 && cv <= 100.0) {
                    bail!("gamma:{cv}: the coefficient of variation must be above 0 and at most 100");
                }
                Ok(Arrival::Gamma { cv })
            }
        }
    }
}

/// `0.5,1,2,4`: request rates per second, each above 0 and finite, in order, each once.
pub fn parse_rates(s: &str) -> Result<Vec<f64>> {
    let mut rates = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let r: f64 =
            part.parse().map_err(|_| anyhow!("{part:?} is not a request rate (requests per second, such as 0.5)"))?;
        if !(r.is_finite() && r > 0.0) {
            bail!("{part:?} is not a request rate: it must be above 0 requests per second");
        }
        rates.push(r);
    }
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    if rates.is_empty() {
        bail!("empty list");
    }
    Ok(rates)
}

/// The send instants, in seconds from the schedule's start, of requests arriving at `rate`
/// per second over `[0, duration_s)`: the same for the same seed.
pub fn schedule(rate: f64, arrival: Arrival, seed: u64, duration_s: f64) -> Result<Vec<f64>> {
    let expected = rate * duration_s;
    if !(expected.is_finite() && expected <= MAX_SCHEDULED as f64 / 2.0) {
        bail!(
            "{rate} requests per second for {duration_s} s is more than one schedule holds ({MAX_SCHEDULED} requests)"
        );
    }
    if arrival == Arrival::Constant {
        // i / rate, not a running sum: no rounding drifts the count or the instants.
        return Ok((0..).map(|i| i as f64 / rate).take_while(|t| *t < duration_s).collect());
    }
    let mut draw = fastrand::Rng::with_seed(seed);
    let mut at = gap(&mut draw, rate, arrival);
    let mut out = Vec::new();
    while at < duration_s && out.len() < MAX_SCHEDULED {
        out.push(at);
        at += gap(&mut draw, rate, arrival);
    }
    Ok(out)
}

/// One gap between two requests.
fn gap(draw: &mut fastrand::Rng, rate: f64, arrival: Arrival) -> f64 {
    match arrival {
        Arrival::Constant => 1.0 / rate,
        Arrival::Poisson => -(1.0 - draw.f64()).ln() / rate,
        Arrival::Gamma { cv } => {
            // Shape k = 1/CV², scale 1/(rate k): mean 1/rate, CV as asked.
            let k = 1.0 / (cv * cv);
            gamma(draw, k) / (rate * k)
        }
    }
}

/// A standard gamma variate of shape `k` (Marsaglia and Tsang, ACM TOMS 26, 2000; for k < 1
/// the boost U^(1/k) of a Gamma(k + 1) variate).
fn gamma(draw: &mut fastrand::Rng, k: f64) -> f64 {
    if k < 1.0 {
        let u = 1.0 - draw.f64();
        return gamma(draw, k + 1.0) * u.powf(1.0 / k);
    }
    let d = k - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(draw);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = 1.0 - draw.f64();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A standard normal variate (Box-Muller).
pub(crate) fn normal(draw: &mut fastrand::Rng) -> f64 {
    let (u, v) = (1.0 - draw.f64(), draw.f64());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coefficient of variation of the gaps of `times`.
    fn gap_cv(times: &[f64]) -> f64 {
        let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        sd / mean
    }

    #[test]
    fn poisson_gaps_vary_as_much_as_they_average_and_constant_ones_do_not() {
        // 2,000 requests at 10 per second.
        let p = schedule(10.0, Arrival::Poisson, 7, 200.0).unwrap();
        assert!((1900..=2100).contains(&p.len()), "{}", p.len());
        let cv = gap_cv(&p);
        assert!((0.9..=1.1).contains(&cv), "Poisson CV {cv}");
        let c = schedule(10.0, Arrival::Constant, 7, 200.0).unwrap();
        assert_eq!(c.len(), 2000);
        assert!(gap_cv(&c) < 0.02, "constant CV {}", gap_cv(&c));
        assert!((c[1] - 0.1).abs() < 1e-12);
    }

    #[test]
    fn gamma_gaps_have_the_coefficient_of_variation_asked_and_the_rate() {
        for cv in [0.5, 2.0] {
            let g = schedule(20.0, Arrival::Gamma { cv }, 3, 500.0).unwrap();
            let measured = gap_cv(&g);
            assert!((measured - cv).abs() < 0.15 * cv, "asked {cv}, measured {measured}");
            let rate = g.len() as f64 / 500.0;
            assert!((rate - 20.0).abs() < 2.0, "rate {rate}");
        }
    }

    #[test]
    fn a_seed_gives_one_schedule() {
        let a = schedule(5.0, Arrival::Poisson, 42, 60.0).unwrap();
        assert_eq!(a, schedule(5.0, Arrival::Poisson, 42, 60.0).unwrap());
        assert_ne!(a, schedule(5.0, Arrival::Poisson, 43, 60.0).unwrap());
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|t| (0.0..60.0).contains(t)));
    }

    #[test]
    fn flags_are_checked_with_what_was_expected() {
        assert_eq!(parse_rates("2, 0.5,1,2").unwrap(), vec![0.5, 1.0, 2.0]);
        for bad in ["0", "-1", "NaN", "inf", "fast", ""] {
            assert!(parse_rates(bad).is_err(), "{bad}");
        }
        assert!(format!("{:#}", parse_rates("0").unwrap_err()).contains("above 0 requests per second"));
        assert_eq!("gamma:2".parse::<Arrival>().unwrap(), Arrival::Gamma { cv: 2.0 });
        assert_eq!("poisson".parse::<Arrival>().unwrap().name(), "poisson");
        for bad in ["gamma:0", "gamma:x", "gamma:NaN", "bursty"] {
            assert!(bad.parse::<Arrival>().is_err(), "{bad}");
        }
        assert!(schedule(1e9, Arrival::Poisson, 1, 3600.0).is_err());
    }
}

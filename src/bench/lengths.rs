//! Prompt and answer lengths drawn per request (`--input-tokens 1024:256`,
//! `--output-tokens 256:64`): a normal distribution of that mean and standard deviation,
//! rounded and held to at least one token, drawn from the run's seed so a cell's lengths are
//! reproducible. A bare `1024` is that length for every request.

use std::str::FromStr;

use anyhow::{anyhow, bail, Result};

/// Most tokens a drawn length may have.
pub const MAX_LENGTH: u64 = 10_000_000;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lengths {
    pub mean: f64,
    pub sd: f64,
}

impl Lengths {
    /// `1024:256` or `1024`, as the flag takes it and the run records it.
    pub fn name(self) -> String {
        if self.sd == 0.0 {
            format!("{}", self.mean)
        } else {
            format!("{}:{}", self.mean, self.sd)
        }
    }

    /// `n` lengths from `seed`, each within `[1, max]`.
    pub fn draw(self, n: usize, seed: u64, max: u64) -> Vec<u64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n)
            .map(|_| {
                let x = self.mean + self.sd * super::arrivals::normal(&mut rng);
                (x.round().max(1.0) as u64).min(max.max(1))
            })
            .collect()
    }
}

impl FromStr for Lengths {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Lengths> {
        let (mean, sd) = s.trim().split_once(':').unwrap_or((s.trim(), "0"));
        let number = |t: &str, what: &str| -> Result<f64> {
            t.trim()
                .parse::<f64>()
                .map_err(|_| anyhow!("{s:?}: the {what} must be a number of tokens, such as 1024:256"))
        };
        let (mean, sd) = (number(mean, "mean")?, number(sd, "standard deviation")?);
        if !(mean.is_finite() && mean >= 1.0 && mean <= MAX_LENGTH as f64) {
            bail!("{s:?}: the mean must be from 1 to {MAX_LENGTH} tokens");
        }
        if !(sd.is_finite() && sd >= 0.0 && sd <= mean * 10.0) {
            bail!("{s:?}: the standard deviation must be from 0 to ten times the mean");
        }
        Ok(Lengths { mean, sd })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_parse_and_draw_reproducibly_around_their_mean() {
        let l: Lengths = "1024:256".parse().unwrap();
        assert_eq!((l.mean, l.sd, l.name()), (1024.0, 256.0, "1024:256".to_string()));
        let fixed: Lengths = "300".parse().unwrap();
        assert_eq!(fixed.draw(5, 1, 10_000), vec![300; 5]);
        let drawn = l.draw(4000, 7, 100_000);
        assert_eq!(drawn, l.draw(4000, 7, 100_000), "the same seed draws the same lengths");
        let mean = drawn.iter().sum::<u64>() as f64 / drawn.len() as f64;
        let sd = (drawn.iter().map(|x| (*x as f64 - mean).powi(2)).sum::<f64>() / drawn.len() as f64).sqrt();
        assert!((mean - 1024.0).abs() < 15.0 && (sd - 256.0).abs() < 15.0, "{mean} {sd}");
        assert!("10:100".parse::<Lengths>().unwrap().draw(1000, 3, 50).iter().all(|x| (1..=50).contains(x)));
        for bad in ["0", "abc", "100:-1", "nan:1", "5:x"] {
            assert!(bad.parse::<Lengths>().is_err(), "{bad}");
        }
    }
}

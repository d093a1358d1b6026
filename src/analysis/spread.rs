//! A cell's figures with their uncertainty. Across repetitions (two or more valid): each
//! figure is the mean of the repetitions' figures with its t interval, which covers
//! run-to-run noise. A single measurement: medians over its requests with an
//! order-statistic interval, and total tok/s with a batch-means interval, both labelled
//! "within one window" because they do not cover the next run's noise.

use serde::Serialize;

use super::evidence::throughput_bins;
use super::figures::{prefill_rates, time_between_tokens_s, ttft_s, Figures};
use super::interval::{mean_estimate, median_estimate, window_estimate, Basis, Estimate};
use super::metric::Metric;
use crate::format::{Measurement, Phase};

/// The figures a comparison judges, each with its n and interval, keyed by `Metric` (the
/// one list of them: `Metric::ALL`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spread {
    estimates: [Option<Estimate>; Metric::ALL.len()],
}

/// Written as an object of the metrics' names, every one present (`null` where absent).
impl Serialize for Spread {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut out = serializer.serialize_struct("Spread", Metric::ALL.len())?;
        for metric in Metric::ALL {
            out.serialize_field(metric.name(), &self.estimates[metric.index()])?;
        }
        out.end()
    }
}

impl Spread {
    /// The estimate of `metric`, where the cell has one.
    pub fn get(&self, metric: Metric) -> Option<&Estimate> {
        self.estimates[metric.index()].as_ref()
    }

    fn with(mut self, metric: Metric, estimate: Option<Estimate>) -> Spread {
        self.estimates[metric.index()] = estimate;
        self
    }

    /// Within one measurement, from its records.
    pub fn of_measurement(phase: Phase, prompt_tokens: Option<u32>, m: &Measurement, f: &Figures) -> Spread {
        match phase {
            Phase::Prefill => {
                Spread::default().with(Metric::PromptTps, median_estimate(&prefill_rates(prompt_tokens, &m.requests)))
            }
            Phase::Decode => {
                let ttfts: Vec<f64> = m.requests.iter().filter_map(ttft_s).map(|s| s * 1000.0).collect();
                let tbts: Vec<f64> = m.requests.iter().filter_map(time_between_tokens_s).collect();
                let rates: Vec<f64> = tbts.iter().map(|t| 1.0 / t).collect();
                let tbts_ms: Vec<f64> = tbts.iter().map(|t| t * 1000.0).collect();
                let total_tps = f.total_tps.zip(m.window).and_then(|(tps, w)| {
                    let bins: Vec<(f64, f64)> = throughput_bins(&m.requests, w.start_s, w.start_s + f.measured_s?)
                        .iter()
                        .map(|b| (b.tokens, b.seconds))
                        .collect();
                    window_estimate(tps, &bins)
                });
                Spread::default()
                    .with(Metric::TotalTps, total_tps)
                    .with(Metric::PerRequestTps, median_estimate(&rates))
                    .with(Metric::TtftMs, median_estimate(&ttfts))
                    .with(Metric::TbtMs, median_estimate(&tbts_ms))
            }
        }
    }

    /// Across repetitions: the mean of each figure over the repetitions that have it.
    pub fn across(reps: &[&Figures]) -> Spread {
        let of = |metric: Metric| {
            let values: Vec<f64> = reps.iter().filter_map(|f| metric.of_figures(f)).collect();
            mean_estimate(&values, Basis::Repetitions)
        };
        Spread { estimates: Metric::ALL.map(of) }
    }

    pub fn is_empty(&self) -> bool {
        *self == Spread::default()
    }
}

/// One figure of every repetition that has it.
fn values(reps: &[&Figures], f: fn(&Figures) -> Option<f64>) -> Vec<f64> {
    reps.iter().filter_map(|r| f(r)).collect()
}

/// The figures of several valid repetitions: each the mean of the repetitions that have it
/// (counts summed), so the printed figure is the point of its interval.
pub fn mean_figures(reps: &[&Figures]) -> Figures {
    let mean = |f: fn(&Figures) -> Option<f64>| crate::stats::mean(&values(reps, f));
    let sum = |f: fn(&Figures) -> Option<u64>| reps.iter().filter_map(|r| f(r)).reduce(u64::saturating_add);
    Figures {
        prompt_tps: mean(|f| f.prompt_tps),
        total_tps: mean(|f| f.total_tps),
        per_request_tps: mean(|f| f.per_request_tps),
        ttft_ms: mean(|f| f.ttft_ms),
        ttft_p90_ms: mean(|f| f.ttft_p90_ms),
        ttft_p99_ms: mean(|f| f.ttft_p99_ms),
        answer_ttft_ms: mean(|f| f.answer_ttft_ms),
        answer_ttft_p90_ms: mean(|f| f.answer_ttft_p90_ms),
        tokens_per_chunk: mean(|f| f.tokens_per_chunk),
        spec_acceptance: mean(|f| f.spec_acceptance),
        spec_accepted_len: mean(|f| f.spec_accepted_len),
        cached_prompt_pct: mean(|f| f.cached_prompt_pct),
        next_turn_ttft_ms: mean(|f| f.next_turn_ttft_ms),
        next_turn_cached_pct: mean(|f| f.next_turn_cached_pct),
        tbt_ms: mean(|f| f.tbt_ms),
        tbt_p90_ms: mean(|f| f.tbt_p90_ms),
        tbt_p99_ms: mean(|f| f.tbt_p99_ms),
        avg_active: mean(|f| f.avg_active),
        held_active: mean(|f| f.held_active),
        tps_over_counter_span: mean(|f| f.tps_over_counter_span),
        completed: sum(|f| f.completed),
        output_tokens: sum(|f| f.output_tokens),
        measured_s: mean(|f| f.measured_s),
        server_total_tps: mean(|f| f.server_total_tps),
        server_per_request_tps: mean(|f| f.server_per_request_tps),
        finished_per_request_tps: mean(|f| f.finished_per_request_tps),
        client_cpu_cores: mean(|f| f.client_cpu_cores),
        avg_power_w: mean(|f| f.avg_power_w),
        peak_power_w: reps.iter().filter_map(|r| r.peak_power_w).reduce(f64::max),
        joules_per_token: mean(|f| f.joules_per_token),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::interval::IntervalKind;

    #[test]
    fn repetitions_give_a_t_interval_of_their_mean() {
        let figs: Vec<Figures> =
            [100.0, 110.0, 90.0].iter().map(|&t| Figures { total_tps: Some(t), ..Figures::default() }).collect();
        let refs: Vec<&Figures> = figs.iter().collect();
        let s = Spread::across(&refs);
        let t = s.get(Metric::TotalTps).cloned().unwrap();
        assert_eq!((t.value, t.n, t.basis), (100.0, 3, Basis::Repetitions));
        assert_eq!(t.interval.unwrap().kind, IntervalKind::TMean);
        assert!(s.get(Metric::TtftMs).is_none());
        assert_eq!(mean_figures(&refs).total_tps, Some(100.0));
    }
}

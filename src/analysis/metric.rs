//! The figures a comparison judges, and each one's estimate in a cell.

use serde::Serialize;

use super::figures::Figures;
use super::interval::{Basis, Estimate};
use super::run::CellView;
use super::spread::Spread;

/// A figure of a cell with its uncertainty: the cell's spread where it has one, else the
/// figure alone (n = 1).
pub fn estimate(view: &CellView, metric: Metric) -> Option<Estimate> {
    let from_spread = view.spread.as_deref().and_then(|s| metric.of_spread(s).cloned());
    from_spread.or_else(|| {
        let value = metric.of_figures(&view.figures)?;
        Some(Estimate { value, n: 1, basis: Basis::Repetitions, interval: None, cv: None, samples: Vec::new() })
    })
}

/// The figures a comparison judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    PromptTps,
    TotalTps,
    PerRequestTps,
    TtftMs,
    TbtMs,
}

impl Metric {
    pub const ALL: [Metric; 5] =
        [Metric::PromptTps, Metric::TotalTps, Metric::PerRequestTps, Metric::TtftMs, Metric::TbtMs];

    pub fn of_spread(self, s: &Spread) -> Option<&Estimate> {
        match self {
            Metric::PromptTps => s.prompt_tps.as_ref(),
            Metric::TotalTps => s.total_tps.as_ref(),
            Metric::PerRequestTps => s.per_request_tps.as_ref(),
            Metric::TtftMs => s.ttft_ms.as_ref(),
            Metric::TbtMs => s.tbt_ms.as_ref(),
        }
    }

    pub fn of_figures(self, f: &Figures) -> Option<f64> {
        match self {
            Metric::PromptTps => f.prompt_tps,
            Metric::TotalTps => f.total_tps,
            Metric::PerRequestTps => f.per_request_tps,
            Metric::TtftMs => f.ttft_ms,
            Metric::TbtMs => f.tbt_ms,
        }
    }

    /// tok/s up is faster; latencies down are.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::PromptTps | Metric::TotalTps | Metric::PerRequestTps)
    }
}

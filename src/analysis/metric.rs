//! The figures a comparison judges (a cell's estimate of one: `CellView::estimate`).

use serde::Serialize;

use super::figures::Figures;

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

    /// Its place in `ALL`.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its name in data and downloads (the figure's name in `Figures`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::PromptTps => "prompt_tps",
            Metric::TotalTps => "total_tps",
            Metric::PerRequestTps => "per_request_tps",
            Metric::TtftMs => "ttft_ms",
            Metric::TbtMs => "tbt_ms",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_its_place_and_its_serde_name() {
        for (i, m) in Metric::ALL.into_iter().enumerate() {
            assert_eq!(m.index(), i);
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
        }
    }
}

//! What every format's converter makes of its sources: one run's settings and cells, and the
//! facts the sources tell (model, engine, date). `import` turns it into a run folder.

use crate::format::{Cell, RunSettings};

#[derive(Debug)]
pub struct Converted {
    pub settings: RunSettings,
    pub cells: Vec<Cell>,
    /// The model the sources name (used only when no `--model-id` is given).
    pub model: Option<String>,
    pub started_at: Option<String>,
    /// The engine the sources name, where they do.
    pub engine: Option<String>,
    /// The engine's version and the accelerator (device, count) the sources name, where
    /// they do (an llm-d report's stack); flags win.
    pub engine_version: Option<String>,
    pub device: Option<(String, u32)>,
    /// How the tool measured this run, for its notes (Markdown paragraphs; empty: nothing).
    pub notes: Vec<String>,
    /// A tool's request-rate benchmarks, as rate cells (its run is then a rate run), and how
    /// its traffic was drawn.
    pub rates: Vec<crate::format::RateCell>,
    pub traffic: Option<crate::format::Traffic>,
}

/// How another tool drew a rate run's traffic, as its files say.
#[derive(Debug, Clone)]
pub struct RateTraffic {
    /// `poisson`, `constant`, `gamma:CV`, or the tool's own word.
    pub arrival: String,
    pub seed: u64,
    /// Requests in flight past which the tool would not send (`u32::MAX`: no bound said).
    pub max_in_flight: u32,
    pub warmup_s: f64,
}

impl Converted {
    /// A tool's rate cells as a rate run: settings at the first cell's context, the rates
    /// offered once each in order, no matrix cells.
    pub fn rate_run(
        rates: Vec<crate::format::RateCell>,
        t: RateTraffic,
        max_output: u64,
        notes: Vec<String>,
    ) -> Converted {
        let context = rates.first().map_or(1, |c| c.context);
        let mut offered: Vec<f64> = rates.iter().map(|c| c.rate_rps).collect();
        offered.sort_by(f64::total_cmp);
        offered.dedup();
        Converted {
            settings: super::fixed_count::settings(context, &[], 0.0, max_output),
            cells: Vec::new(),
            model: None,
            started_at: None,
            engine: None,
            engine_version: None,
            device: None,
            notes,
            rates,
            traffic: Some(crate::format::Traffic {
                arrival: t.arrival,
                seed: t.seed,
                rates_rps: offered,
                max_in_flight: t.max_in_flight,
                warmup_s: t.warmup_s,
                auto: None,
                input_tokens: None,
                output_tokens: None,
                trace: None,
            }),
        }
    }
}

/// Moves a rate cell's window and every request's instants `by` seconds later on the run's
/// clock (results of separate processes each get a stretch of their own).
pub fn shift_rate_cell(cell: &mut crate::format::RateCell, by: f64) {
    for r in &mut cell.requests {
        let times = [
            Some(&mut r.scheduled_s),
            r.send_s.as_mut(),
            r.first_token_s.as_mut(),
            r.last_token_s.as_mut(),
            r.end_s.as_mut(),
        ];
        for t in times.into_iter().flatten() {
            *t += by;
        }
    }
    cell.window.start_s += by;
    cell.window.end_s += by;
}

/// Where the next cell's stretch of the run's clock starts: a second after this one's last
/// instant.
pub fn after(cell: &crate::format::RateCell) -> f64 {
    cell.requests.iter().filter_map(|r| r.end_s).fold(cell.window.end_s, f64::max) + 1.0
}

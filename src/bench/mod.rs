//! The embedded load generator: drives an OpenAI-compatible server across the context x
//! concurrency matrix as the methodology page (`site-templates/glossary.html`) says and writes a run folder in the data format.
//!
//! Layout: `client/` talks to the server (HTTP, SSE, chunk shapes, token accounting, one
//! timed stream); `engine` holds what we know of each engine; `discover` asks the server
//! about itself (`metrics` reads its Prometheus text); `bench_plan` turns the flags into a
//! checked plan; `server` connects and discovers; `plan` decides the cells; `prompt` sizes prompts; `cell/` measures one
//! cell; `session` runs the plan's mode; `run_folder` names, checks and opens the run
//! folder, `recorder` writes it; `progress` says where the run is. The bench depends
//! only on the data format and the leaves: figures for the terminal come from the caller
//! (a `CellReporter`).

pub mod arrivals;
pub mod bench_plan;
pub mod cell;
pub mod client;
pub mod discover;
pub mod engine;
pub mod hardware;
pub mod launch;
pub mod lengths;
pub mod loopdetect;
pub mod machine;
pub mod metrics;
pub mod open_loop;
pub mod plan;
pub mod progress;
pub mod prompt;
pub mod recorder;
pub mod replay;
mod run_folder;
mod server;
pub mod session;
pub mod telemetry;
pub mod trace;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::format::Cell;

pub use crate::format::facts::ManifestFacts;
pub use bench_plan::{BenchFlags, BenchPlan};
pub use session::{run, MAX_UNREACHABLE_CELLS};

/// A warning printed once per process and kind: an out-of-range reading would otherwise
/// repeat with every sample.
pub(crate) fn warn_once(kind: &'static str, detail: &str) {
    static SEEN: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    if SEEN.lock().map(|mut seen| seen.insert(kind)).unwrap_or(false) {
        eprintln!("warning: {}", crate::units::terminal_safe(&format!("{kind}: {detail}")));
    }
}

/// A server's or a tool's reading as a data file may hold it, or `None` with a warning (a
/// gauge of -3, NaN, +Inf, 1e308 watts): dropped, never written.
pub(crate) fn checked_reading(kind: &'static str, v: f64) -> Option<f64> {
    let r = crate::format::validate::reading(v);
    if r.is_none() {
        warn_dropped(kind, v);
    }
    r
}

pub(crate) fn warn_dropped(kind: &'static str, v: f64) {
    let shown = if v.abs() >= 1e6 { format!("{v:e}") } else { v.to_string() };
    warn_once(kind, &format!("dropped an out-of-range reading ({shown}); the run goes on without it"));
}

/// What the progress line says of a finished cell: the caller's (the site computes the
/// figures; the bench knows only the data format).
pub trait CellReporter: Send + Sync + std::fmt::Debug {
    fn describe(&self, cell: &Cell) -> String;
}

#[derive(Debug, Default, Clone)]
pub struct BenchSummary {
    pub run_dir: PathBuf,
    pub written: usize,
    pub skipped_existing: usize,
    pub valid: usize,
    pub looped: usize,
    pub over_capacity: usize,
    pub errors: usize,
    pub interrupted: bool,
    /// Cells in a row, up to the last one, whose server could not be reached.
    pub unreachable_streak: u32,
    /// `--versus`: the second server's run.
    pub versus: Option<Box<BenchSummary>>,
    /// `--prefix-reuse` with several levels: the runs of the levels after the first.
    pub levels: Vec<BenchSummary>,
}

/// Runs the bench to the end (or to Ctrl-C) on a runtime of its own.
pub fn run_blocking(plan: &BenchPlan, reporter: &dyn CellReporter) -> Result<BenchSummary> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // Whatever failed, its message may quote the server: the key never reaches the terminal.
    let scrubber = crate::redact::Scrubber::new(plan.target.credentials.secrets());
    rt.block_on(run(plan, reporter)).map_err(|e| anyhow::anyhow!(scrubber.scrub(&format!("{e:#}"))))
}

/// The gauge's sampling interval when none is given: about once a second (the method), but
/// a tenth of a short window, so a 3 s cell still averages ten samples rather than three
/// (one read between two requests would otherwise move the mean by a third).
pub fn default_gauge_interval(window: Duration) -> Duration {
    (window / 10).clamp(Duration::from_millis(100), Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gauge_is_read_ten_times_in_a_short_window_and_once_a_second_in_a_long_one() {
        let ms = |v| Duration::from_millis(v);
        assert_eq!(default_gauge_interval(ms(3_000)), ms(300));
        assert_eq!(default_gauge_interval(ms(30_000)), ms(1_000));
        assert_eq!(default_gauge_interval(ms(500)), ms(100));
    }
}

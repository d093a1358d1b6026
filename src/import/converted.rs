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

//! The data folder: its on-disk format (`model`), its rules (`validate`, pure, used by the
//! loader and every writer), how it is read (`load`), and the rules for names that become
//! paths (`ids`). Only this module knows file names
//! under `data/`.

pub mod facts;
pub mod ids;
pub mod json;
pub mod load;
pub mod model;
pub mod pack;
pub mod rates;
pub mod settings;
pub mod validate;
pub mod writer;
pub mod yaml;

pub use load::{
    check_comparison_runs, find_run, load_data_dir, load_data_dir_with, load_run, load_run_dir, runs_beside, DataSet,
    LoadedCell, LoadedRun, PageSource, Skipped,
};
pub use model::*;
pub use rates::{
    AutoRates, PlannedRequest, RateCell, ReportedRate, ReportedSpread, ScheduledRequest, TraceReplay, Traffic,
    RATES_FILE,
};
pub use settings::{Host, HostLimits, Publish, SiteSettings};
pub use validate::MAX_REPETITIONS;

/// File and folder names inside a data folder.
pub const RUNS_DIR: &str = "runs";
pub const PAGES_DIR: &str = "pages";
pub const RUN_MANIFEST: &str = "run.json";
/// Loose cell files, a file a cell: how schemas 1 to 4 stored a run, and how a hand-written
/// run may still be laid out.
pub const CELLS_DIR: &str = "cells";
/// A run's cells in one file, a line a cell (schema 5, `pack`): what `site bench` and
/// `site import` write.
pub const CELLS_FILE: &str = "cells.jsonl.gz";
pub const RUN_NOTES: &str = "notes.md";
/// What the server processes `site bench --launch` started printed, secrets taken out; kept
/// beside the run, not read by the site.
pub const SERVER_LOG: &str = "server.log";
pub const COMPARE_FILE: &str = "compare.json";
/// The server setting `site bench` records where the server drafts tokens (speculative
/// decoding): it changes every figure, so boards mark it and it sets the run apart.
pub const SPECULATIVE_SETTING: &str = "speculative_decoding";

//! Reads a data folder into memory and validates it. Every problem found is reported, not
//! just the first, each naming its file (and line and column for JSON).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Error, Result};
use serde::Deserialize;
use walkdir::WalkDir;

use super::ids::check_id;
use super::json;
use super::model::*;
use super::{CELLS_DIR, COMPARE_FILE, PAGES_DIR, RUNS_DIR, RUN_MANIFEST, RUN_NOTES};

/// Everything under a data folder, validated, in a deterministic order.
#[derive(Debug, Clone)]
pub struct DataSet {
    pub root: PathBuf,
    /// Sorted by id.
    pub runs: Vec<LoadedRun>,
    /// Sorted by slug.
    pub pages: Vec<PageSource>,
    /// From `compare.json`, in file order.
    pub comparisons: Vec<ComparisonSpec>,
}

#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The run folder's name.
    pub id: String,
    pub dir: PathBuf,
    pub manifest: RunManifest,
    /// Sorted by (phase, context, concurrency).
    pub cells: Vec<LoadedCell>,
    pub notes_markdown: Option<String>,
}

#[derive(Debug, Clone)]
pub struct LoadedCell {
    pub file: PathBuf,
    pub cell: Cell,
}

/// `data/pages/<slug>.md`: a site page written in Markdown.
#[derive(Debug, Clone)]
pub struct PageSource {
    pub slug: String,
    pub file: PathBuf,
    pub markdown: String,
}

/// Collects problems so one pass reports all of them.
#[derive(Default)]
struct Problems(Vec<Error>);

impl Problems {
    fn push(&mut self, e: Error) {
        self.0.push(e);
    }
    fn into_result(self, root: &Path) -> Result<()> {
        match self.0.len() {
            0 => Ok(()),
            1 => Err(self.0.into_iter().next().unwrap()),
            n => {
                let mut msg = format!("{n} problems in {}:", root.display());
                for e in &self.0 {
                    let _ = write!(msg, "\n  {e:#}");
                }
                Err(anyhow!(msg))
            }
        }
    }
}

/// Loads `root` (a data folder with `runs/` and optionally `pages/`).
pub fn load_data_dir(root: &Path) -> Result<DataSet> {
    if !root.is_dir() {
        bail!("data folder {} does not exist or is not a folder", root.display());
    }
    let mut problems = Problems::default();
    let mut runs = Vec::new();
    let runs_dir = root.join(RUNS_DIR);
    if runs_dir.is_dir() {
        for dir in sorted_subdirs(&runs_dir)? {
            match load_run_dir(&dir) {
                Ok(run) => runs.push(run),
                Err(e) => problems.push(e),
            }
        }
    }
    let mut pages = Vec::new();
    let pages_dir = root.join(PAGES_DIR);
    if pages_dir.is_dir() {
        for entry in WalkDir::new(&pages_dir).min_depth(1).max_depth(1).sort_by_file_name() {
            let entry = entry.with_context(|| format!("reading {}", pages_dir.display()))?;
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("md") {
                continue;
            }
            match load_page(path) {
                Ok(p) => pages.push(p),
                Err(e) => problems.push(e),
            }
        }
    }
    let mut comparisons = Vec::new();
    let compare_path = root.join(COMPARE_FILE);
    if compare_path.is_file() {
        match read_versioned::<CompareFile>(&compare_path) {
            Ok(file) => {
                for (i, c) in file.comparisons.iter().enumerate() {
                    for id in [&c.a, &c.b] {
                        if !runs.iter().any(|r: &LoadedRun| &r.id == id) {
                            problems.push(anyhow!(
                                "{}: comparisons[{i}] names run {id:?}, which is not in {}",
                                compare_path.display(),
                                runs_dir.display()
                            ));
                        }
                    }
                    if c.a == c.b {
                        problems.push(anyhow!(
                            "{}: comparisons[{i}] compares run {:?} with itself",
                            compare_path.display(),
                            c.a
                        ));
                    }
                }
                comparisons = file.comparisons;
            }
            Err(e) => problems.push(e),
        }
    }
    problems.into_result(root)?;
    Ok(DataSet { root: root.to_path_buf(), runs, pages, comparisons })
}

fn load_page(path: &Path) -> Result<PageSource> {
    let slug = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
    check_id("page name", &slug).with_context(|| path.display().to_string())?;
    let markdown = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(PageSource { slug, file: path.to_path_buf(), markdown })
}

fn sorted_subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in WalkDir::new(dir).min_depth(1).max_depth(1).sort_by_file_name() {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        if entry.file_type().is_dir() {
            out.push(entry.into_path());
        }
    }
    Ok(out)
}

/// Loads one run folder (`run.json`, `cells/*.json`, optional `notes.md`).
pub fn load_run_dir(dir: &Path) -> Result<LoadedRun> {
    let id = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow!("{}: run folder name is not UTF-8", dir.display()))?
        .to_string();
    check_id("run id", &id).with_context(|| dir.display().to_string())?;
    let mut problems = Problems::default();

    let manifest_path = dir.join(RUN_MANIFEST);
    let manifest = match read_versioned::<RunManifest>(&manifest_path) {
        Ok(m) => {
            if let Err(e) = validate_manifest(&m) {
                problems.push(e.context(manifest_path.display().to_string()));
            }
            Some(m)
        }
        Err(e) => {
            problems.push(e);
            None
        }
    };

    let mut cells: Vec<LoadedCell> = Vec::new();
    let cells_dir = dir.join(CELLS_DIR);
    if cells_dir.is_dir() {
        for entry in WalkDir::new(&cells_dir).min_depth(1).max_depth(1).sort_by_file_name() {
            let entry = entry.with_context(|| format!("reading {}", cells_dir.display()))?;
            let path = entry.path();
            if !entry.file_type().is_file() || path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            match read_versioned::<Cell>(path).and_then(|c| {
                validate_cell(&c).with_context(|| path.display().to_string())?;
                Ok(c)
            }) {
                Ok(cell) => cells.push(LoadedCell { file: path.to_path_buf(), cell }),
                Err(e) => problems.push(e),
            }
        }
    }

    // One cell per key: two files for the same measurement would make the page ambiguous.
    let mut seen: BTreeMap<(Phase, u32, u32), &Path> = BTreeMap::new();
    for c in &cells {
        let key = (c.cell.phase, c.cell.context, c.cell.concurrency);
        if let Some(first) = seen.insert(key, &c.file) {
            problems.push(anyhow!(
                "{}: duplicate cell: {} context {} concurrency {} is also in {}",
                c.file.display(),
                key.0.as_str(),
                key.1,
                key.2,
                first.display()
            ));
        }
    }
    if let Some(m) = &manifest {
        for c in &cells {
            if let Err(e) = check_cell_in_matrix(&c.cell, &m.settings) {
                problems.push(e.context(c.file.display().to_string()));
            }
        }
    }

    let notes_path = dir.join(RUN_NOTES);
    let notes_markdown = if notes_path.is_file() {
        match fs::read_to_string(&notes_path) {
            Ok(s) => Some(s),
            Err(e) => {
                problems.push(anyhow!("{}: {e}", notes_path.display()));
                None
            }
        }
    } else {
        None
    };

    problems.into_result(dir)?;
    cells.sort_by_key(|c| (c.cell.phase, c.cell.context, c.cell.concurrency));
    Ok(LoadedRun { id, dir: dir.to_path_buf(), manifest: manifest.unwrap(), cells, notes_markdown })
}

#[derive(Deserialize)]
struct VersionProbe {
    schema_version: Option<serde_json::Value>,
}

/// Reads a JSON file of our format. When the full parse fails, the version is checked
/// first: a file from a newer format should say so, not complain about a field.
fn read_versioned<T>(path: &Path) -> Result<T>
where
    T: serde::de::DeserializeOwned + HasSchemaVersion,
{
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    match json::parse::<T>(path, &text) {
        Ok(v) => {
            check_version(path, Some(&serde_json::Value::from(v.schema_version())))?;
            Ok(v)
        }
        Err(parse_error) => {
            if let Ok(probe) = serde_json::from_str::<VersionProbe>(&text) {
                check_version(path, probe.schema_version.as_ref())?;
            }
            Err(parse_error)
        }
    }
}

fn check_version(path: &Path, v: Option<&serde_json::Value>) -> Result<()> {
    match v {
        None => bail!("{}: missing field `schema_version`", path.display()),
        Some(v) if v.as_u64() == Some(SCHEMA_VERSION as u64) => Ok(()),
        Some(v) => bail!(
            "{}: unsupported schema_version {v} (this build of site reads schema_version {SCHEMA_VERSION})",
            path.display()
        ),
    }
}

trait HasSchemaVersion {
    fn schema_version(&self) -> u32;
}
impl HasSchemaVersion for RunManifest {
    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}
impl HasSchemaVersion for CompareFile {
    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}
impl HasSchemaVersion for Cell {
    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}

fn validate_manifest(m: &RunManifest) -> Result<()> {
    let s = &m.settings;
    for (name, list) in
        [("contexts", &s.contexts), ("concurrency", &s.concurrency), ("prefill_contexts", &s.prefill_contexts)]
    {
        if list.contains(&0) {
            bail!("settings.{name} contains 0");
        }
        let mut sorted = list.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != list.len() {
            bail!("settings.{name} lists a value twice");
        }
    }
    if !(s.duration_s.is_finite() && s.duration_s > 0.0) {
        bail!("settings.duration_s must be a positive number of seconds");
    }
    if m.model.id.trim().is_empty() {
        bail!("model.id is empty");
    }
    if m.engine.name.trim().is_empty() {
        bail!("engine.name is empty");
    }
    if m.hardware.device.trim().is_empty() {
        bail!("hardware.device is empty");
    }
    Ok(())
}

fn validate_cell(c: &Cell) -> Result<()> {
    if c.context == 0 {
        bail!("context must be at least 1 token");
    }
    if c.concurrency == 0 {
        bail!("concurrency must be at least 1");
    }
    if c.phase == Phase::Prefill && c.concurrency != 1 {
        bail!("a prefill cell has concurrency 1, found {}", c.concurrency);
    }
    match c.status {
        Status::Valid => {
            if c.reported.is_none() && c.measurement.is_none() {
                bail!("a valid cell needs `reported` figures or a `measurement`");
            }
        }
        Status::OverCapacity => {
            if c.over_capacity.is_none() {
                bail!("status over_capacity needs `over_capacity` (the rule and its numbers)");
            }
        }
        Status::Error => {
            if c.error.is_none() {
                bail!("status error needs `error` with the message");
            }
        }
        Status::Looped => {}
    }
    if c.reported.is_some() && c.measurement.is_some() {
        bail!("a cell has either `reported` figures or a `measurement`, not both");
    }
    if let Some(m) = &c.measurement {
        if let Some(w) = m.window {
            if !(w.start_s.is_finite() && w.end_s.is_finite() && w.end_s > w.start_s) {
                bail!("measurement.window must have end_s > start_s");
            }
        } else if c.phase == Phase::Decode && c.status == Status::Valid {
            bail!("a measured decode cell needs measurement.window");
        }
    }
    Ok(())
}

fn check_cell_in_matrix(c: &Cell, s: &RunSettings) -> Result<()> {
    let fits = match c.phase {
        Phase::Prefill => s.prefill_contexts.contains(&c.context),
        Phase::Decode => s.contexts.contains(&c.context) && s.concurrency.contains(&c.concurrency),
    };
    if !fits {
        bail!(
            "{} cell context {} concurrency {} is not in the run's settings (contexts {:?}, concurrency {:?}, prefill_contexts {:?})",
            c.phase.as_str(),
            c.context,
            c.concurrency,
            s.contexts,
            s.concurrency,
            s.prefill_contexts
        );
    }
    Ok(())
}

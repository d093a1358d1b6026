//! Reads a data folder into memory and validates it. Every problem found is reported, not
//! just the first, each naming its file (and line and column for JSON).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Error, Result};
use rayon::prelude::*;
use serde::Deserialize;
use walkdir::WalkDir;

use super::ids::check_id;
use super::json;
use super::model::*;
use super::{CELLS_DIR, COMPARE_FILE, PAGES_DIR, RUNS_DIR, RUN_MANIFEST, RUN_NOTES};
use crate::fsutil;

/// Everything under a data folder, validated, in a deterministic order. `R` is what each
/// run was reduced to as it loaded (the whole `LoadedRun` by default).
#[derive(Debug, Clone)]
pub struct DataSet<R = LoadedRun> {
    pub root: PathBuf,
    /// Sorted by id.
    pub runs: Vec<R>,
    /// The id of each of `runs`.
    pub run_ids: Vec<String>,
    /// Sorted by slug.
    pub pages: Vec<PageSource>,
    /// From `compare.json`, in file order.
    pub comparisons: Vec<ComparisonSpec>,
    /// Entries the loader did not read, each with the reason (`site check` lists them).
    pub skipped: Vec<Skipped>,
    /// Notes and pages that held secret-shaped text, published redacted (warned about).
    pub redactions: Vec<Redaction>,
}

impl<R> DataSet<R> {
    /// The runs, and the rest of the data set without them.
    pub fn take_runs(self) -> (Vec<R>, DataSet<()>) {
        let DataSet { root, runs, run_ids, pages, comparisons, skipped, redactions } = self;
        let rest = DataSet { root, runs: vec![(); runs.len()], run_ids, pages, comparisons, skipped, redactions };
        (runs, rest)
    }
}

/// A file or folder in the data folder that is not part of the format, so was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: &'static str,
}

/// A Markdown file (a run's notes, a page) that held secret-shaped text (`api_key=...`, a
/// token in a link's query, `sk-...`): it is published with those values redacted, and
/// `site check` and `site build` name the lines so the file itself gets fixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    pub path: PathBuf,
    /// 1-based.
    pub lines: Vec<usize>,
}

impl std::fmt::Display for Redaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines: Vec<String> = self.lines.iter().map(|l| format!("{}:{l}", self.path.display())).collect();
        write!(f, "{}: secret-shaped text published as <redacted>; remove it from the file", lines.join(", "))
    }
}

/// Markdown as it may be published, and the redaction to warn about if it held secrets.
fn redacted_markdown(path: &Path, markdown: String) -> (String, Option<Redaction>) {
    let (text, lines) = crate::redact::scrub_markdown(&markdown);
    match text {
        Some(text) => (text, Some(Redaction { path: path.to_path_buf(), lines })),
        None => (markdown, None),
    }
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
    /// Lines of `notes.md` whose secrets were redacted.
    pub notes_redaction: Option<Redaction>,
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
    pub redaction: Option<Redaction>,
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
            n => Err(anyhow::Error::new(ProblemList {
                heading: format!("{n} problems in {}:", root.display()),
                problems: self.0.iter().flat_map(problem_lines).collect(),
            })),
        }
    }
}

/// One problem as lines of a report: a nested list (a run's problems inside the data
/// folder's) as its heading and its problems indented under it.
fn problem_lines(e: &Error) -> Vec<String> {
    match e.downcast_ref::<ProblemList>() {
        Some(list) => {
            let outer = e.to_string();
            let heading =
                if outer == list.to_string() { list.heading.clone() } else { format!("{outer}: {}", list.heading) };
            std::iter::once(heading).chain(list.problems.iter().map(|p| format!("  {p}"))).collect()
        }
        None => vec![format!("{e:#}")],
    }
}

/// Several problems found in one pass, one a line. Its lines are the report's own; the text
/// of each problem is data (file names, values), which a terminal printer escapes apart, so
/// a newline inside a problem cannot start a line of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemList {
    pub heading: String,
    pub problems: Vec<String>,
}

impl std::fmt::Display for ProblemList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.heading)?;
        for p in &self.problems {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProblemList {}

/// One run folder read: the run (id, what it was reduced to, its notes' redaction), and what
/// it skipped.
type LoadedFolder<R> = (Result<(String, R, Option<Redaction>)>, Vec<Skipped>);

/// Loads `root` (a data folder with `runs/` and optionally `pages/`).
pub fn load_data_dir(root: &Path) -> Result<DataSet> {
    load_data_dir_with(root, |run| run)
}

/// Loads `root`, reducing each run with `reduce` as soon as it is read (runs load in
/// parallel), so a site of thousands of runs never holds every raw record at once.
pub fn load_data_dir_with<R: Send>(root: &Path, reduce: impl Fn(LoadedRun) -> R + Sync) -> Result<DataSet<R>> {
    if !root.is_dir() {
        bail!("data folder {} does not exist or is not a folder", root.display());
    }
    let mut problems = Problems::default();
    let mut skipped = Vec::new();
    let mut folders = Vec::new();
    let runs_dir = root.join(RUNS_DIR);
    if let Some(entries) = folder_entries(&runs_dir, &mut problems)? {
        for (path, ft) in entries {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if ft.is_symlink() {
                problems.push(anyhow!("{}: {}", path.display(), fsutil::describe(ft)));
            } else if !ft.is_dir() {
                skipped.push(Skipped { path, reason: "not a run folder (only folders are read in runs/)" });
            } else if name.starts_with(fsutil::TEMP_PREFIX) {
                skipped.push(Skipped { path, reason: "a temporary folder left by an interrupted writer" });
            } else {
                folders.push((path, name));
            }
        }
    }
    let loaded: Vec<LoadedFolder<R>> = folders
        .par_iter()
        .map(|(path, name)| {
            let mut skipped = Vec::new();
            let run = load_run(path, name, &mut skipped).map(|mut run| {
                let redaction = run.notes_redaction.take();
                (run.id.clone(), reduce(run), redaction)
            });
            (run, skipped)
        })
        .collect();
    let (mut runs, mut run_ids, mut redactions) = (Vec::new(), Vec::new(), Vec::new());
    for (run, mut also_skipped) in loaded {
        skipped.append(&mut also_skipped);
        match run {
            Ok((id, run, redaction)) => {
                run_ids.push(id);
                runs.push(run);
                redactions.extend(redaction);
            }
            Err(e) => problems.push(e),
        }
    }
    let mut pages = Vec::new();
    let pages_dir = root.join(PAGES_DIR);
    if let Some(entries) = folder_entries(&pages_dir, &mut problems)? {
        for (path, ft) in entries {
            if path.extension().and_then(|e| e.to_str()) != Some("md") {
                skipped.push(Skipped { path, reason: "not a .md page" });
            } else if ft.is_dir() {
                skipped.push(Skipped { path, reason: "a folder, not a page" });
            } else {
                match load_page(&path) {
                    Ok(p) => pages.push(p),
                    Err(e) => problems.push(e),
                }
            }
        }
    }
    check_case_collisions(&runs_dir, run_ids.iter().map(String::as_str), "runs", &mut problems);
    check_case_collisions(&pages_dir, pages.iter().map(|p: &PageSource| p.slug.as_str()), "pages", &mut problems);
    let mut comparisons = Vec::new();
    let compare_path = root.join(COMPARE_FILE);
    if fs::symlink_metadata(&compare_path).is_ok() {
        match read_versioned::<CompareFile>(&compare_path) {
            Ok(file) => {
                check_comparisons(&file.comparisons, &run_ids, &compare_path, &runs_dir, &mut problems);
                comparisons = file.comparisons;
            }
            Err(e) => problems.push(e),
        }
    }
    problems.into_result(root)?;
    redactions.extend(pages.iter().filter_map(|p| p.redaction.clone()));
    Ok(DataSet { root: root.to_path_buf(), runs, run_ids, pages, comparisons, skipped, redactions })
}

/// Names that differ only in case (`Run-A`, `run-a`) make pages that overwrite each other on
/// case-insensitive file systems and hosts (macOS, Windows, many static hosts): refused,
/// naming both.
fn check_case_collisions<'a>(dir: &Path, names: impl Iterator<Item = &'a str>, what: &str, problems: &mut Problems) {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    let mut names: Vec<&str> = names.collect();
    names.sort_unstable();
    for name in names {
        if let Some(first) = seen.insert(name.to_lowercase(), name) {
            problems.push(anyhow!(
                "{}: {what} {first:?} and {name:?} differ only in case: their pages would overwrite each other on case-insensitive hosts (macOS, Windows, many static hosts); rename one",
                dir.display()
            ));
        }
    }
}

/// That every comparison of `compare.json` names two different runs of `run_ids` (for a
/// data set whose runs changed since it was loaded).
pub fn check_comparison_runs(comparisons: &[ComparisonSpec], run_ids: &[String], data_dir: &Path) -> Result<()> {
    let mut problems = Problems::default();
    check_comparisons(comparisons, run_ids, &data_dir.join(COMPARE_FILE), &data_dir.join(RUNS_DIR), &mut problems);
    problems.into_result(data_dir)
}

fn check_comparisons(
    comparisons: &[ComparisonSpec],
    run_ids: &[String],
    path: &Path,
    runs_dir: &Path,
    problems: &mut Problems,
) {
    for (i, c) in comparisons.iter().enumerate() {
        for id in [&c.a, &c.b] {
            if !run_ids.contains(id) {
                problems.push(anyhow!(
                    "{}: comparisons[{i}] names run {id:?}, which is not in {}",
                    path.display(),
                    runs_dir.display()
                ));
            }
        }
        if c.a == c.b {
            problems.push(anyhow!("{}: comparisons[{i}] compares run {:?} with itself", path.display(), c.a));
        }
    }
}

/// The entries of a folder of the format, sorted by name; `None` when it does not exist. The
/// folder itself must be a real folder: a symlink in its place is a problem.
fn folder_entries(dir: &Path, problems: &mut Problems) -> Result<Option<Vec<(PathBuf, fs::FileType)>>> {
    match fs::symlink_metadata(dir) {
        Err(_) => return Ok(None),
        Ok(m) if !m.file_type().is_dir() => {
            problems.push(anyhow!("{}: {}; it must be a folder", dir.display(), fsutil::describe(m.file_type())));
            return Ok(None);
        }
        Ok(_) => {}
    }
    let mut out = Vec::new();
    for entry in WalkDir::new(dir).min_depth(1).max_depth(1).sort_by_file_name() {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let ft = entry.file_type();
        out.push((entry.into_path(), ft));
    }
    Ok(Some(out))
}

fn load_page(path: &Path) -> Result<PageSource> {
    let slug = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
    check_id("page name", &slug).with_context(|| path.display().to_string())?;
    let markdown = fsutil::read_data_file(path, fsutil::MAX_DATA_FILE_BYTES)?;
    let (markdown, redaction) = redacted_markdown(path, markdown);
    Ok(PageSource { slug, file: path.to_path_buf(), markdown, redaction })
}

/// Loads one run folder (`run.json`, `cells/*.json`, optional `notes.md`).
pub fn load_run_dir(dir: &Path) -> Result<LoadedRun> {
    load_run(dir, &run_folder_name(dir)?, &mut Vec::new())
}

/// The run id a folder stands for: its name, resolved for `.` and `..` (`site diff .` from
/// inside a run folder).
fn run_folder_name(dir: &Path) -> Result<String> {
    let named = match dir.file_name() {
        Some(_) => dir.to_path_buf(),
        None => fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?,
    };
    let name = named.file_name().ok_or_else(|| anyhow!("{}: not a run folder (it has no name)", dir.display()))?;
    name.to_str().map(str::to_string).ok_or_else(|| anyhow!("{}: run folder name is not UTF-8", dir.display()))
}

/// A run `site bench --resume` continues: checked as a finished run is, except that a later
/// repetition may stand without its first (repetition 1 lost, to be measured again).
pub fn load_run_in_progress(dir: &Path) -> Result<LoadedRun> {
    load_run_checked(dir, &run_folder_name(dir)?, &mut Vec::new(), Completeness::InProgress)
}

/// Whether a run's cells must all stand beside their first repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Completeness {
    Finished,
    InProgress,
}

/// Loads the run folder `dir` as run `id` (a staged folder is checked under the id it will
/// have); what it skips goes to `skipped`.
pub fn load_run(dir: &Path, id: &str, skipped: &mut Vec<Skipped>) -> Result<LoadedRun> {
    load_run_checked(dir, id, skipped, Completeness::Finished)
}

fn load_run_checked(dir: &Path, id: &str, skipped: &mut Vec<Skipped>, completeness: Completeness) -> Result<LoadedRun> {
    let id = id.to_string();
    check_id("run id", &id).with_context(|| dir.display().to_string())?;
    let mut problems = Problems::default();
    let manifest = load_manifest(&dir.join(RUN_MANIFEST), &mut problems);
    let notes = read_run_folder(dir, &mut problems, skipped)?;
    let (notes_markdown, notes_redaction) = match notes {
        Some(md) => {
            let (md, redaction) = redacted_markdown(&dir.join(RUN_NOTES), md);
            (Some(md), redaction)
        }
        None => (None, None),
    };
    let mut cells = load_cells(&dir.join(CELLS_DIR), &mut problems, skipped)?;
    check_cells(&cells, manifest.as_ref(), completeness, &mut problems);
    problems.into_result(dir)?;
    cells.sort_by_key(|c| (c.cell.phase, c.cell.context, c.cell.concurrency, c.cell.repetition));
    let manifest = manifest.expect("a run without problems has its manifest");
    Ok(LoadedRun { id, dir: dir.to_path_buf(), manifest, cells, notes_markdown, notes_redaction })
}

fn load_manifest(path: &Path, problems: &mut Problems) -> Option<RunManifest> {
    match read_versioned::<RunManifest>(path) {
        Ok(mut m) => {
            // A hand-written run.json may hold a secret its producer never redacted.
            m.launch_command = m.launch_command.map(|c| crate::redact::redact_command(&c));
            // The description is published as the notes are: with the same rules.
            m.description = m.description.map(|d| crate::redact::scrub_text(&d).into_owned());
            if let Err(e) = validate_manifest(&m) {
                problems.push(e.context(path.display().to_string()));
            }
            Some(m)
        }
        Err(e) => {
            problems.push(e);
            None
        }
    }
}

/// The run folder's own entries: its notes, and what does not belong there (skipped).
fn read_run_folder(dir: &Path, problems: &mut Problems, skipped: &mut Vec<Skipped>) -> Result<Option<String>> {
    let mut notes_markdown = None;
    for (path, ft) in folder_entries(dir, problems)?.unwrap_or_default() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        match name {
            RUN_MANIFEST => {}
            RUN_NOTES => match fsutil::read_data_file(&dir.join(RUN_NOTES), fsutil::MAX_DATA_FILE_BYTES) {
                Ok(s) => notes_markdown = Some(s),
                Err(e) => problems.push(e),
            },
            CELLS_DIR if ft.is_dir() || ft.is_symlink() => {}
            CELLS_DIR => skipped.push(Skipped { path, reason: "`cells` is not a folder, so no cell was read" }),
            _ => skipped.push(Skipped { path, reason: "not part of a run folder (run.json, notes.md, cells/)" }),
        }
    }
    Ok(notes_markdown)
}

/// Every `.json` file of `cells/`, read and validated one by one.
fn load_cells(cells_dir: &Path, problems: &mut Problems, skipped: &mut Vec<Skipped>) -> Result<Vec<LoadedCell>> {
    let entries = match fs::symlink_metadata(cells_dir) {
        Ok(m) if m.file_type().is_dir() || m.file_type().is_symlink() => {
            folder_entries(cells_dir, problems)?.unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let mut cells = Vec::new();
    for (path, ft) in entries {
        let is_json = path.extension().and_then(|e| e.to_str()) == Some("json");
        if ft.is_dir() {
            skipped.push(Skipped { path, reason: "a folder inside cells/ (cells are read from cells/ only)" });
            continue;
        }
        if !is_json && !ft.is_symlink() {
            skipped.push(Skipped { path, reason: "not a .json cell file" });
            continue;
        }
        let cell = read_versioned::<Cell>(&path).and_then(|mut c| {
            validate_cell(&c).with_context(|| path.display().to_string())?;
            // A hand-written or other tool's cell may quote a secret in its error; the page
            // shows the message, so it gets the notes' rules.
            if let Some(e) = c.error.as_mut() {
                e.message = crate::redact::scrub_text(&e.message).into_owned();
            }
            Ok(c)
        });
        match cell {
            Ok(cell) => cells.push(LoadedCell { file: path.to_path_buf(), cell }),
            Err(e) => problems.push(e),
        }
    }
    Ok(cells)
}

/// The most repetitions of one cell a run may hold (`site bench --repeat` refuses more).
pub const MAX_REPETITIONS: u32 = 100;
/// The most measured prefill requests per context and repetition (`--prefill-samples`).
pub const MAX_PREFILL_SAMPLES: u32 = 50;

/// One cell per key and repetition (two files for the same measurement would make the
/// page ambiguous), a later repetition only beside its first, and every cell inside the
/// run's matrix.
fn check_cells(cells: &[LoadedCell], manifest: Option<&RunManifest>, completeness: Completeness, problems: &mut Problems) {
    let mut seen: BTreeMap<(Phase, u32, u32, u32), &Path> = BTreeMap::new();
    for c in cells {
        let key = (c.cell.phase, c.cell.context, c.cell.concurrency, c.cell.repetition);
        if let Some(first) = seen.insert(key, &c.file) {
            problems.push(anyhow!(
                "{}: duplicate cell: {} context {} concurrency {} repetition {} is also in {}",
                c.file.display(),
                key.0.as_str(),
                key.1,
                key.2,
                key.3,
                first.display()
            ));
        }
    }
    for c in cells.iter().filter(|c| c.cell.repetition > 1 && completeness == Completeness::Finished) {
        let x = &c.cell;
        if !seen.contains_key(&(x.phase, x.context, x.concurrency, 1)) {
            problems.push(anyhow!(
                "{}: repetition {} of {} context {} concurrency {} has no repetition 1 beside it",
                c.file.display(),
                x.repetition,
                x.phase.as_str(),
                x.context,
                x.concurrency
            ));
        }
    }
    for c in cells {
        if let Some(Err(e)) = manifest.map(|m| check_cell_in_matrix(&c.cell, &m.settings)) {
            problems.push(e.context(c.file.display().to_string()));
        }
    }
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
    let text = fsutil::read_data_file(path, fsutil::MAX_DATA_FILE_BYTES)?;
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
        Some(v) if v.as_u64().is_some_and(|v| (OLDEST_SCHEMA_VERSION as u64..=SCHEMA_VERSION as u64).contains(&v)) => {
            Ok(())
        }
        Some(v) => bail!(
            "{}: unsupported schema_version {v} (this build of site reads schema_version {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION})",
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

/// The checks `site check` makes of a run manifest on its own (producers run them before
/// they write one).
pub fn validate_manifest(m: &RunManifest) -> Result<()> {
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
    // The ranges `site bench --repeat` and `--prefill-samples` take.
    if let Some(r) = s.repeat.filter(|r| !(1..=MAX_REPETITIONS).contains(r)) {
        bail!("settings.repeat: expected 1 to {MAX_REPETITIONS} measurements of each cell, found {r}");
    }
    if let Some(n) = s.prefill_samples.filter(|n| !(1..=MAX_PREFILL_SAMPLES).contains(n)) {
        bail!("settings.prefill_samples: expected 1 to {MAX_PREFILL_SAMPLES} prefill requests, found {n}");
    }
    check_numbers(&[("duration_s", Some(s.duration_s)), ("kv_budget_tokens", count(s.kv_budget_tokens))], |f| {
        format!("settings.{f}")
    })?;
    check_numbers(&[("memory_gb", m.hardware.memory_gb)], |f| format!("hardware.{f}"))?;
    if m.hardware.memory_gb == Some(0.0) {
        bail!("hardware.memory_gb is 0: leave it out when the memory is not known");
    }
    check_names(m)?;
    if m.model.id.trim().is_empty() {
        bail!("model.id is empty");
    }
    if m.engine.name.trim().is_empty() {
        bail!("engine.name is empty");
    }
    if m.hardware.count == 0 {
        bail!("hardware.count: expected at least 1 device, found 0 (per-device figures divide by it)");
    }
    if m.hardware.device.trim().is_empty() {
        bail!("hardware.device is empty");
    }
    Ok(())
}

/// The most characters a name (model id, engine, device...) may have: a Hugging Face id is
/// at most 96 + 1 + 96; beyond this a name is a mistake or an attack, and titles, tables and
/// folder names would carry it everywhere.
pub const MAX_NAME_CHARS: usize = 256;
/// The most characters of free text in a manifest (a launch command, a description).
pub const MAX_TEXT_CHARS: usize = 16_384;

/// Every name and text of a manifest within its cap.
fn check_names(m: &RunManifest) -> Result<()> {
    let names = [
        ("model.id", Some(&m.model.id)),
        ("model.served_name", m.model.served_name.as_ref()),
        ("model.revision", m.model.revision.as_ref()),
        ("hardware.kind", Some(&m.hardware.kind)),
        ("hardware.device", Some(&m.hardware.device)),
        ("hardware.os", m.hardware.os.as_ref()),
        ("hardware.cpu", m.hardware.cpu.as_ref()),
        ("engine.name", Some(&m.engine.name)),
        ("engine.version", Some(&m.engine.version)),
        ("engine.quantization", m.engine.quantization.as_ref()),
        ("engine.backend", m.engine.backend.as_ref()),
        ("engine.repository", m.engine.repository.as_ref()),
        ("engine.build", m.engine.build.as_ref()),
        ("engine.commit", m.engine.commit.as_ref()),
        ("bench_tool.name", Some(&m.bench_tool.name)),
        ("bench_tool.version", Some(&m.bench_tool.version)),
    ];
    for (field, value) in names {
        if let Some(v) = value.filter(|v| v.chars().count() > MAX_NAME_CHARS) {
            bail!("{field}: expected at most {MAX_NAME_CHARS} characters, found {}", v.chars().count());
        }
    }
    for (field, value) in [("launch_command", m.launch_command.as_ref()), ("description", m.description.as_ref())] {
        if let Some(v) = value.filter(|v| v.chars().count() > MAX_TEXT_CHARS) {
            bail!("{field}: expected at most {MAX_TEXT_CHARS} characters, found {}", v.chars().count());
        }
    }
    Ok(())
}

/// The checks `site check` makes of a cell on its own (producers run them before they write
/// one, so they never write what the site then refuses).
pub fn validate_cell(c: &Cell) -> Result<()> {
    if c.context == 0 {
        bail!("context must be at least 1 token");
    }
    if c.concurrency == 0 {
        bail!("concurrency must be at least 1");
    }
    if c.phase == Phase::Prefill && c.concurrency != 1 {
        bail!("a prefill cell has concurrency 1, found {}", c.concurrency);
    }
    if c.repetition == 0 || c.repetition > MAX_REPETITIONS {
        bail!("repetition: expected 1 to {MAX_REPETITIONS}, found {}", c.repetition);
    }
    if c.repetition > 1 && c.schema_version < 2 {
        bail!("repetition {} needs schema_version 2 (found {})", c.repetition, c.schema_version);
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
    validate_numbers(c)?;
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

/// The largest figure, time or count a data file may hold. Far above any real measurement
/// (10^12 tok/s, 31,000 years in seconds), far below where sums and chart axes overflow.
pub const MAX_NUMBER: f64 = 1e12;

/// A reading (a gauge, a budget, a device's watts) a data file can hold: finite, not
/// negative, at most [`MAX_NUMBER`]; `None` for anything else, which producers drop.
pub fn reading(v: f64) -> Option<f64> {
    (v.is_finite() && (0.0..=MAX_NUMBER).contains(&v)).then_some(v)
}

/// A number of a data file: finite, not negative, at most [`MAX_NUMBER`]. The field's name
/// is only formatted for an error (this runs for every number of every cell).
fn check_number(v: f64, field: impl FnOnce() -> String) -> Result<()> {
    if !v.is_finite() {
        bail!("{} is not a finite number", field());
    }
    if v < 0.0 {
        bail!("{} is negative ({v})", field());
    }
    if v > MAX_NUMBER {
        bail!("{} is {v:e}, beyond the largest number a data file may hold ({MAX_NUMBER:e})", field());
    }
    Ok(())
}

/// [`check_number`] over named values, absent ones skipped; `name` gives the full field name.
fn check_numbers(values: &[(&str, Option<f64>)], name: impl Fn(&str) -> String) -> Result<()> {
    for &(field, v) in values {
        if let Some(v) = v {
            check_number(v, || name(field))?;
        }
    }
    Ok(())
}

fn count(v: Option<u64>) -> Option<f64> {
    v.map(|c| c as f64)
}

/// Every number of a cell, so that no figure, sum or chart axis can overflow later.
fn validate_numbers(c: &Cell) -> Result<()> {
    if let Some(r) = &c.reported {
        let figures = [
            ("prompt_tps", r.prompt_tps),
            ("total_tps", r.total_tps),
            ("per_request_tps", r.per_request_tps),
            ("ttft_ms", r.ttft_ms),
            ("ttft_p90_ms", r.ttft_p90_ms),
            ("ttft_p99_ms", r.ttft_p99_ms),
            ("tbt_ms", r.tbt_ms),
            ("tbt_p90_ms", r.tbt_p90_ms),
            ("tbt_p99_ms", r.tbt_p99_ms),
            ("avg_active", r.avg_active),
            ("measured_s", r.measured_s),
            ("completed", count(r.completed)),
            ("output_tokens", count(r.output_tokens)),
        ];
        check_numbers(&figures, |f| format!("reported.{f}"))?;
        for (i, s) in r.samples.iter().enumerate() {
            let values = [
                ("ttft_s", s.ttft_s),
                ("latency_s", s.latency_s),
                ("tbt_s", s.tbt_s),
                ("input_tokens", count(s.input_tokens)),
                ("output_tokens", count(s.output_tokens)),
            ];
            check_numbers(&values, |f| format!("reported.samples[{i}].{f}"))?;
        }
        for (i, t) in r.tool_figures.iter().enumerate() {
            if t.name.trim().is_empty() || t.name.len() > 100 || t.unit.len() > 20 {
                bail!("reported.tool_figures[{i}]: expected a name of 1 to 100 characters and a unit of at most 20");
            }
            if !t.value.is_finite() || t.value.abs() > MAX_NUMBER {
                bail!("reported.tool_figures[{i}].value: expected a finite number of at most {MAX_NUMBER:e}");
            }
        }
    }
    if let Some(m) = &c.measurement {
        if let Some(w) = m.window {
            check_numbers(&[("start_s", Some(w.start_s)), ("end_s", Some(w.end_s))], |f| {
                format!("measurement.window.{f}")
            })?;
        }
        for (i, r) in m.requests.iter().enumerate() {
            let values = [
                ("send_s", Some(r.send_s)),
                ("first_token_s", r.first_token_s),
                ("last_token_s", r.last_token_s),
                ("end_s", r.end_s),
                ("window_last_token_s", r.window_last_token_s),
                ("tokens", count(Some(r.tokens))),
                ("chunks", count(Some(r.chunks))),
                ("window_tokens", count(Some(r.window_tokens))),
                ("cached_prompt_tokens", count(r.cached_prompt_tokens)),
                ("server_decode_tps", r.server_decode_tps),
            ];
            check_numbers(&values, |f| format!("measurement.requests[{i}].{f}"))?;
        }
        if let Some(s) = &m.server_tokens {
            let values = [("start_s", Some(s.start_s)), ("end_s", Some(s.end_s)), ("tokens", Some(s.tokens))];
            check_numbers(&values, |f| format!("measurement.server_tokens.{f}"))?;
        }
        check_numbers(&[("client_cpu_s", m.client_cpu_s)], |f| format!("measurement.{f}"))?;
        for (i, t) in m.telemetry.iter().enumerate() {
            let values = [
                ("t_s", Some(t.t_s)),
                ("power_w", t.power_w),
                ("utilization_pct", t.utilization_pct),
                ("memory_used_mib", t.memory_used_mib),
                ("sm_clock_mhz", t.sm_clock_mhz),
            ];
            check_numbers(&values, |f| format!("measurement.telemetry[{i}].{f}"))?;
        }
        for (i, g) in m.gauge.iter().enumerate() {
            let values = [("t_s", Some(g.t_s)), ("running", Some(g.running)), ("waiting", g.waiting)];
            check_numbers(&values, |f| format!("measurement.gauge[{i}].{f}"))?;
        }
    }
    if let Some(o) = &c.over_capacity {
        let values = [("required_tokens", count(Some(o.required_tokens))), ("budget_tokens", count(o.budget_tokens))];
        check_numbers(&values, |f| format!("over_capacity.{f}"))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MANIFEST: &str = include_str!("../../tests/fixtures/valid/measured/data/runs/tiny-vllm-l4/run.json");
    const CELL: &str =
        include_str!("../../tests/fixtures/valid/measured/data/runs/tiny-vllm-l4/cells/decode-8192-c2.json");

    /// A run folder holding `cell` as its one cell file; the loader's answer.
    fn load_with_cell(cell: &[u8]) -> Result<LoadedRun> {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("r");
        fs::create_dir_all(run.join(CELLS_DIR)).unwrap();
        fs::write(run.join(RUN_MANIFEST), MANIFEST).unwrap();
        fs::write(run.join(CELLS_DIR).join("decode-8192-c2.json"), cell).unwrap();
        load_run_dir(&run)
    }

    #[test]
    fn the_fixture_cell_loads() {
        assert_eq!(load_with_cell(CELL.as_bytes()).unwrap().cells.len(), 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Arbitrary bytes are an error naming the file, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Err(e) = load_with_cell(&bytes) {
                prop_assert!(format!("{e:#}").contains("decode-8192-c2.json"), "{e:#}");
            }
        }

        /// A valid cell with one byte changed or cut short loads or fails cleanly.
        #[test]
        fn damaged_cells_never_panic(at in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<bool>()) {
            let mut bytes = CELL.as_bytes().to_vec();
            let i = at.index(bytes.len());
            if cut {
                bytes.truncate(i);
            } else {
                bytes[i] = byte;
            }
            if let Err(e) = load_with_cell(&bytes) {
                prop_assert!(format!("{e:#}").contains("decode-8192-c2.json"), "{e:#}");
            }
        }
    }
}

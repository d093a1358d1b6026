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
use super::pack;
use super::validate::{check_cell_in_matrix, validate_cell, validate_manifest};
use super::{CELLS_DIR, CELLS_FILE, COMPARE_FILE, PAGES_DIR, RUNS_DIR, RUN_MANIFEST, RUN_NOTES, SERVER_LOG};
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

impl DataSet<()> {
    /// A data set of runs chosen one by one (`site diff`'s two): no pages, comparisons or
    /// skipped entries.
    pub fn of_runs(root: &Path, run_ids: Vec<String>) -> DataSet<()> {
        DataSet {
            root: root.to_path_buf(),
            runs: vec![(); run_ids.len()],
            run_ids,
            pages: Vec::new(),
            comparisons: Vec::new(),
            skipped: Vec::new(),
            redactions: Vec::new(),
        }
    }
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
    /// `rates.jsonl`: the run's request-rate cells, in file order.
    pub rates: Vec<super::RateCell>,
}

#[derive(Debug, Clone)]
pub struct LoadedCell {
    /// Where the cell was read: its loose file, or `cells.jsonl.gz:LINE`.
    pub file: PathBuf,
    /// Whether it was read from the run's cells file (not a loose file under `cells/`).
    pub packed: bool,
    /// A hash of its JSON text as read: what changes whenever the cell does, had for the
    /// price of reading it (a page cache key over the raw records need not write them out).
    pub text_hash: u64,
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
            } else if let Some(id) = fsutil::interrupted_copy(&name).filter(|id| !runs_dir.join(id).exists()) {
                // The only copy of a run: never skipped without a word.
                problems.push(anyhow!(
                    "{}: run {id} is only here, left by an interrupted write; `site repack {id}` puts it back",
                    path.display()
                ));
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

/// A run named by its id under `data_dir`, or by the path of its folder (`site diff`'s
/// arguments): loaded, or an error that says which runs there are.
pub fn find_run(data_dir: &Path, name: &str) -> Result<LoadedRun> {
    let as_path = Path::new(name);
    if as_path.join(RUN_MANIFEST).is_file() {
        return load_run_dir(as_path);
    }
    let dir = data_dir.join(RUNS_DIR).join(name);
    if check_id("run id", name).is_ok() && dir.join(RUN_MANIFEST).is_file() {
        return load_run_dir(&dir);
    }
    if as_path.is_dir() && (name.contains('/') || !dir.is_dir()) {
        bail!(
            "{name}: this folder is not a run folder (it has no {RUN_MANIFEST}); name a run id or a folder under {}",
            data_dir.join(RUNS_DIR).display()
        );
    }
    let mut known: Vec<String> = fs::read_dir(data_dir.join(RUNS_DIR))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    known.sort();
    bail!(
        "unknown run {name:?}: it is neither a run id under {} nor a run folder with {RUN_MANIFEST} (known runs: {})",
        data_dir.join(RUNS_DIR).display(),
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )
}

/// The other run folders beside `run_dir` (its siblings in the folder it sits in): plain
/// folders with a `run.json`, no symlink and no writer's temporary folder, sorted.
pub fn runs_beside(run_dir: &Path) -> Vec<std::path::PathBuf> {
    let own = fs::canonicalize(run_dir).ok();
    let Some(parent) = own.as_deref().and_then(Path::parent) else { return Vec::new() };
    let Ok(entries) = fs::read_dir(parent) else { return Vec::new() };
    let mut out: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !e.file_name().to_string_lossy().starts_with(fsutil::TEMP_PREFIX))
        .map(|e| e.path())
        .filter(|p| Some(p.as_path()) != own.as_deref() && p.join(RUN_MANIFEST).is_file())
        .collect();
    out.sort();
    out
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
    cells.extend(load_pack(&dir.join(CELLS_FILE), &mut problems));
    check_cells(&cells, manifest.as_ref(), completeness, &mut problems);
    let rates = load_rates(&dir.join(super::RATES_FILE), &mut problems);
    problems.into_result(dir)?;
    cells.sort_by_key(|c| (c.cell.phase, c.cell.context, c.cell.concurrency, c.cell.repetition));
    let manifest = manifest.expect("a run without problems has its manifest");
    Ok(LoadedRun { id, dir: dir.to_path_buf(), manifest, cells, notes_markdown, notes_redaction, rates })
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
            RUN_MANIFEST | SERVER_LOG | CELLS_FILE | super::RATES_FILE => {}
            RUN_NOTES => match fsutil::read_data_file(&dir.join(RUN_NOTES), fsutil::MAX_DATA_FILE_BYTES) {
                Ok(s) => notes_markdown = Some(s),
                Err(e) => problems.push(e),
            },
            CELLS_DIR if ft.is_dir() || ft.is_symlink() => {}
            CELLS_DIR => skipped.push(Skipped { path, reason: "`cells` is not a folder, so no cell was read" }),
            _ => skipped.push(Skipped {
                path,
                reason:
                    "not part of a run folder (run.json, notes.md, server.log, cells.jsonl.gz, rates.jsonl, cells/)",
            }),
        }
    }
    Ok(notes_markdown)
}

/// `rates.jsonl`, where the run has one: a rate cell a line, each checked; an error names the
/// file and line.
fn load_rates(path: &Path, problems: &mut Problems) -> Vec<super::RateCell> {
    let mut out = Vec::new();
    if fs::symlink_metadata(path).is_err() {
        return out;
    }
    let read = fsutil::for_each_line(path, fsutil::MAX_DATA_FILE_BYTES, 64 * 1024 * 1024, |n, line| {
        if line.trim().is_empty() {
            return;
        }
        let parsed = serde_json::from_str::<super::RateCell>(line)
            .map_err(|e| anyhow!("{}:{n}: column {}: {e}", path.display(), e.column()))
            .and_then(|c| {
                super::rates::validate_rate_cell(&c).map_err(|e| anyhow!("{}:{n}: {e:#}", path.display()))?;
                Ok(c)
            });
        match parsed {
            Ok(c) => out.push(c),
            Err(e) => problems.push(e),
        }
    });
    if let Err(e) = read {
        problems.push(e);
    }
    out
}

/// Every `.json` and `.json.gz` file of `cells/`, read and validated one by one.
fn load_cells(cells_dir: &Path, problems: &mut Problems, skipped: &mut Vec<Skipped>) -> Result<Vec<LoadedCell>> {
    let entries = match fs::symlink_metadata(cells_dir) {
        Ok(m) if m.file_type().is_dir() || m.file_type().is_symlink() => {
            folder_entries(cells_dir, problems)?.unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let mut cells = Vec::new();
    for (path, ft) in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let is_json = name.ends_with(".json") || name.ends_with(".json.gz");
        if ft.is_dir() {
            skipped.push(Skipped { path, reason: "a folder inside cells/ (cells are read from cells/ only)" });
            continue;
        }
        if !is_json && !ft.is_symlink() {
            skipped.push(Skipped { path, reason: "not a .json or .json.gz cell file" });
            continue;
        }
        let read = read_text(&path).and_then(|text| {
            let cell = parse_versioned::<Cell>(&path, &text).and_then(|c| checked_cell(&path, c))?;
            Ok((text_hash(&text), cell))
        });
        match read {
            Ok((text_hash, cell)) => {
                cells.push(LoadedCell { file: path.to_path_buf(), packed: false, text_hash, cell })
            }
            Err(e) => problems.push(e),
        }
    }
    Ok(cells)
}

/// The cells of the run's `cells.jsonl.gz` (none when there is no such file), each checked
/// as a cell file is and named by its line.
fn load_pack(path: &Path, problems: &mut Problems) -> Vec<LoadedCell> {
    if fs::symlink_metadata(path).is_err() {
        return Vec::new();
    }
    let mut cells = Vec::new();
    let mut found = Vec::new();
    // Line by line as it unpacks: the file's text is never held whole.
    let read = fsutil::for_each_gzip_line(path, fsutil::MAX_DATA_FILE_BYTES, |n, line| {
        let at = pack::line_path(path, n);
        let parsed = serde_json::from_str::<Cell>(line).map_err(|e| pack::located(path, n, &e));
        match versioned(&at, line, parsed).and_then(|c| checked_cell(&at, c)) {
            Ok(cell) => cells.push(LoadedCell { file: at, packed: true, text_hash: text_hash(line), cell }),
            Err(e) => found.push(e),
        }
    });
    for e in found.into_iter().chain(read.err()) {
        problems.push(e);
    }
    cells
}

/// A cell as read, validated; its error message gets the notes' rules (a hand-written or
/// other tool's cell may quote a secret in it, and the page shows the message).
fn checked_cell(path: &Path, mut c: Cell) -> Result<Cell> {
    validate_cell(&c).with_context(|| path.display().to_string())?;
    if let Some(e) = c.error.as_mut() {
        e.message = crate::redact::scrub_text(&e.message).into_owned();
    }
    Ok(c)
}

/// One cell per key and repetition (two files for the same measurement would make the
/// page ambiguous), a later repetition only beside its first, and every cell inside the
/// run's matrix.
fn check_cells(
    cells: &[LoadedCell],
    manifest: Option<&RunManifest>,
    completeness: Completeness,
    problems: &mut Problems,
) {
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
    parse_versioned(path, &read_text(path)?)
}

/// A data file's text: unpacked where it is gzip (`.gz`).
fn read_text(path: &Path) -> Result<String> {
    if path.extension().is_some_and(|e| e == "gz") {
        fsutil::read_gzip_data_file(path, fsutil::MAX_DATA_FILE_BYTES)
    } else {
        fsutil::read_data_file(path, fsutil::MAX_DATA_FILE_BYTES)
    }
}

fn parse_versioned<T>(path: &Path, text: &str) -> Result<T>
where
    T: serde::de::DeserializeOwned + HasSchemaVersion,
{
    versioned(path, text, json::parse::<T>(path, text))
}

fn text_hash(text: &str) -> u64 {
    crate::units::InputHash::default().piece(text.as_bytes()).finish()
}

/// A parsed document of our format whose version this build reads, or the error that says
/// why not: a file from a newer format says so, rather than complain about a field.
fn versioned<T: HasSchemaVersion>(path: &Path, text: &str, parsed: Result<T>) -> Result<T> {
    match parsed {
        Ok(v) => {
            check_version(path, Some(&serde_json::Value::from(v.schema_version())))?;
            Ok(v)
        }
        Err(parse_error) => {
            if let Ok(probe) = serde_json::from_str::<VersionProbe>(text) {
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

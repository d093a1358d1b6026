//! Writing a run folder whole: staged in a temporary folder beside its place, checked with
//! the same loader `site build` uses, then swapped in, so a failed write changes nothing and
//! an existing run is replaced only when asked. One writer per run id at a time (`run_lock`).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::json::to_pretty;
use super::pack::{cell_key, cell_line, CellPack};
use super::{ids, load_run, Cell, RunManifest, CELLS_DIR, CELLS_FILE, RUNS_DIR, RUN_MANIFEST, RUN_NOTES};
use crate::fsutil::{self, write_atomic, Lock};

/// The lock every writer of `runs/<id>/` takes (bench, import): `runs/.<id>.lock`.
pub fn run_lock(runs_dir: &Path, id: &str) -> Result<Lock> {
    Lock::try_acquire(&runs_dir.join(format!(".{id}.lock")), &format!("run {id}"))
}

/// The loose files a cell may have been written to before schema 5 (`cells/NAME.json` and
/// `cells/NAME.json.gz`), which a cell written into the run's cells file replaces.
pub fn loose_cell_paths(run_dir: &Path, cell: &Cell) -> [PathBuf; 2] {
    let name = cell.file_name();
    let dir = run_dir.join(CELLS_DIR);
    [dir.join(format!("{name}.gz")), dir.join(name)]
}

/// Writes a run's cells file whole (temp file + rename), or nothing for no cells.
pub fn write_pack(run_dir: &Path, pack: &CellPack) -> Result<()> {
    if pack.is_empty() {
        return Ok(());
    }
    write_atomic(&run_dir.join(CELLS_FILE), &pack.bytes())
}

/// Lists run `b` against run `a` in `data/compare.json` (made when missing), unless the pair
/// is listed already; under a lock, written whole (temp file + rename).
/// Reads `compare.json` where there is one, as [`add_comparison`] will: an error names the
/// file and the place.
pub fn check_comparisons(data_dir: &Path) -> Result<()> {
    let path = data_dir.join(super::COMPARE_FILE);
    if fs::symlink_metadata(&path).is_ok() {
        let text = fsutil::read_data_file(&path, fsutil::MAX_DATA_FILE_BYTES)?;
        super::json::parse::<super::CompareFile>(&path, &text)?;
    }
    Ok(())
}

pub fn add_comparison(data_dir: &Path, a: &str, b: &str) -> Result<()> {
    let path = data_dir.join(super::COMPARE_FILE);
    let _lock = Lock::try_acquire(&data_dir.join(".compare.json.lock"), "compare.json")?;
    let mut file = if path.exists() {
        let text = fsutil::read_data_file(&path, fsutil::MAX_DATA_FILE_BYTES)?;
        super::json::parse::<super::CompareFile>(&path, &text)?
    } else {
        super::CompareFile { schema_version: 1, comparisons: Vec::new() }
    };
    if file.comparisons.iter().any(|c| c.a == a && c.b == b) {
        return Ok(());
    }
    file.comparisons.push(super::ComparisonSpec { a: a.to_string(), b: b.to_string(), threshold_pct: None });
    write_atomic(&path, to_pretty(&file).as_bytes())
}

/// A writer killed between the two renames of [`fsutil::replace_dir`] left run `id` only in
/// its aside folder (`.tmp-previous-<id>-...`): put back, as it was before that write, and
/// said. Aside folders of a run that is in place are what a killed writer failed to remove.
/// The caller holds the run's lock.
fn restore_interrupted(runs: &Path, id: &str) -> Result<()> {
    let mut aside = fsutil::dead_temp_dirs(runs, &format!("previous-{id}"));
    aside.retain(|d| d.file_name().is_some_and(|n| fsutil::interrupted_copy(&n.to_string_lossy()) == Some(id)));
    let dest = runs.join(id);
    if !dest.exists() {
        if let Some(last) = aside.pop() {
            fs::rename(&last, &dest)
                .with_context(|| format!("putting run {id} back from {} (an interrupted write)", last.display()))?;
            eprintln!("run {id} was left in {} by an interrupted write: put back", last.display());
        }
    }
    for dir in aside {
        let _ = fsutil::remove_tree(&dir);
    }
    Ok(())
}

pub struct RunWriter {
    id: String,
    cells: CellPack,
    dest: PathBuf,
    /// Removed on drop unless committed.
    staged: Option<PathBuf>,
    _lock: Lock,
}

impl RunWriter {
    /// Starts writing run `id` under `data_dir`; an existing run is refused unless `replace`.
    pub fn stage(data_dir: &Path, id: &str, replace: bool) -> Result<RunWriter> {
        ids::check_id("run id", id)?;
        let runs = data_dir.join(RUNS_DIR);
        fs::create_dir_all(&runs).map_err(|e| anyhow::anyhow!("creating {}: {e}", runs.display()))?;
        let lock = run_lock(&runs, id)?;
        let dest = runs.join(id);
        restore_interrupted(&runs, id)?;
        if dest.exists() && !replace {
            bail!(
                "run {id} already exists in {}: pass --force to replace it, or choose another --run-id",
                runs.display()
            );
        }
        // An import of this id killed mid-write left its staging: ours to remove, under the lock.
        fsutil::remove_dead_temp_dirs(&runs, &format!("import-{id}"));
        let staged = fsutil::create_temp_dir(&runs, &format!("import-{id}"))?;
        Ok(RunWriter { id: id.to_string(), cells: CellPack::default(), dest, staged: Some(staged), _lock: lock })
    }

    fn staged(&self) -> &Path {
        self.staged.as_deref().expect("staged until commit")
    }

    pub fn manifest(&self, m: &RunManifest) -> Result<()> {
        write_atomic(&self.staged().join(RUN_MANIFEST), to_pretty(m).as_bytes())
    }

    /// Adds a cell to the run's cells file (written at `commit`).
    pub fn cell(&mut self, c: &Cell) {
        self.cells.insert(cell_key(c), &cell_line(c));
    }

    /// A cell as the JSON text it was read from, on one line: every number as it was written
    /// (a loose file of nanosecond times keeps them; writing the cell anew would round them
    /// to the microsecond its columns keep).
    fn cell_as_read(&mut self, c: &Cell, text: &str, at: &Path) -> Result<()> {
        let value: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("reading {}", at.display()))?;
        self.cells.insert(cell_key(c), &value.to_string());
        Ok(())
    }

    /// A file of the run folder copied as it is (`site repack` keeps the notes' and server
    /// log's bytes).
    pub fn copy(&self, name: &str, bytes: &[u8]) -> Result<()> {
        write_atomic(&self.staged().join(name), bytes)
    }

    /// The run's rate cells, a line each (`rates.jsonl`; none: no file).
    pub fn rate_cells(&self, cells: &[super::RateCell]) -> Result<()> {
        if cells.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = cells.iter().map(serde_json::to_string).collect::<serde_json::Result<_>>()?;
        write_atomic(&self.staged().join(super::RATES_FILE), (lines.join("\n") + "\n").as_bytes())
    }

    pub fn notes(&self, markdown: &str) -> Result<()> {
        write_atomic(&self.staged().join(RUN_NOTES), markdown.as_bytes())
    }

    /// Checks what was written as `site build` will (under the id it will have), then
    /// swaps it into place. Returns the run folder.
    pub fn commit(mut self) -> Result<PathBuf> {
        let staged = self.staged.take().expect("commit once");
        if let Err(e) = write_pack(&staged, &self.cells) {
            let _ = fs::remove_dir_all(&staged);
            return Err(e);
        }
        let checked = load_run(&staged, &self.id, &mut Vec::new());
        if let Err(e) = checked {
            let _ = fs::remove_dir_all(&staged);
            return Err(e.context("the run does not validate; nothing was changed"));
        }
        if let Err(e) = fsutil::replace_dir(&staged, &self.dest) {
            let _ = fs::remove_dir_all(&staged);
            return Err(e);
        }
        Ok(self.dest.clone())
    }
}

impl Drop for RunWriter {
    fn drop(&mut self) {
        if let Some(staged) = self.staged.take() {
            let _ = fs::remove_dir_all(staged);
        }
    }
}

/// What `repack_run` did to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repacked {
    /// Its loose cells (`cells/`) are now lines of its cells file; `cells` in all.
    Moved { loose: usize, cells: usize },
    /// It had no loose cell: nothing was written.
    AlreadyPacked,
}

/// Moves the loose cells of run `id` under `data_dir` (`cells/*.json[.gz]`, schemas 1 to 4)
/// into its cells file, under the run's lock: the run is staged anew (its manifest as schema
/// 5, its notes and server log byte for byte, every cell a line), checked as `site build`
/// checks it, then
/// swapped in, so an interrupted repack changes nothing. A run folder holding anything else
/// is refused and left as it is: nothing of the user's is dropped.
pub fn repack_run(data_dir: &Path, id: &str) -> Result<Repacked> {
    let dest = data_dir.join(RUNS_DIR).join(id);
    // Staged first: under the run's lock, a run an interrupted write left aside comes back.
    let mut writer = RunWriter::stage(data_dir, id, true)?;
    if !dest.join(RUN_MANIFEST).is_file() {
        bail!("{}: not a run folder (it has no {RUN_MANIFEST})", dest.display());
    }
    let mut skipped = Vec::new();
    let run = load_run(&dest, id, &mut skipped)?;
    if let Some(s) = skipped.first() {
        bail!("{}: {}; move it out of the run folder to repack it (nothing was changed)", s.path.display(), s.reason);
    }
    let loose = run.cells.iter().filter(|c| !c.packed).count();
    if loose == 0 {
        return Ok(Repacked::AlreadyPacked);
    }
    // Schema 5: an older reader must refuse the run, not read it as a run without cells.
    let mut manifest = run.manifest.clone();
    manifest.schema_version = super::SCHEMA_VERSION;
    writer.manifest(&manifest)?;
    for name in [RUN_NOTES, super::SERVER_LOG, super::RATES_FILE] {
        let path = dest.join(name);
        if path.exists() {
            writer.copy(name, &fsutil::read_regular_file(&path, fsutil::MAX_DATA_FILE_BYTES)?)?;
        }
    }
    for c in &run.cells {
        if c.packed {
            writer.cell(&c.cell);
            continue;
        }
        let gz = c.file.extension().is_some_and(|e| e == "gz");
        let text = match gz {
            true => fsutil::read_gzip_data_file(&c.file, fsutil::MAX_DATA_FILE_BYTES)?,
            false => fsutil::read_data_file(&c.file, fsutil::MAX_DATA_FILE_BYTES)?,
        };
        writer.cell_as_read(&c.cell, &text, &c.file)?;
    }
    let cells = run.cells.len();
    writer.commit()?;
    Ok(Repacked::Moved { loose, cells })
}

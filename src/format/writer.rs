//! Writing a run folder whole: staged in a temporary folder beside its place, checked with
//! the same loader `site build` uses, then swapped in, so a failed write changes nothing and
//! an existing run is replaced only when asked. One writer per run id at a time (`run_lock`).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::json::to_pretty;
use super::{ids, load_run, Cell, RunManifest, CELLS_DIR, RUNS_DIR, RUN_MANIFEST, RUN_NOTES};
use crate::fsutil::{self, write_atomic, Lock};

/// The lock every writer of `runs/<id>/` takes (bench, import): `runs/.<id>.lock`.
pub fn run_lock(runs_dir: &Path, id: &str) -> Result<Lock> {
    Lock::try_acquire(&runs_dir.join(format!(".{id}.lock")), &format!("run {id}"))
}

/// `runs/<id>/cells/<cell's file name>`, relative to a run folder: `.json.gz` for a cell
/// that keeps its requests' records (`Cell::stored_compressed`), `.json` otherwise.
pub fn cell_path(run_dir: &Path, cell: &Cell) -> PathBuf {
    let name = cell.file_name();
    run_dir.join(CELLS_DIR).join(if cell.stored_compressed() { format!("{name}.gz") } else { name })
}

/// A cell file's bytes as `cell_path` names it: gzip for a `.json.gz` path.
pub fn cell_bytes(path: &Path, json: &str) -> Vec<u8> {
    if path.extension().is_some_and(|e| e == "gz") {
        crate::units::gzip(json.as_bytes())
    } else {
        json.as_bytes().to_vec()
    }
}

/// Lists run `b` against run `a` in `data/compare.json` (made when missing), unless the pair
/// is listed already; under a lock, written whole (temp file + rename).
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

pub struct RunWriter {
    id: String,
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
        if dest.exists() && !replace {
            bail!(
                "run {id} already exists in {}: pass --force to replace it, or choose another --run-id",
                runs.display()
            );
        }
        // An import of this id killed mid-write left its staging: ours to remove, under the lock.
        fsutil::remove_dead_temp_dirs(&runs, &format!("import-{id}"));
        let staged = fsutil::create_temp_dir(&runs, &format!("import-{id}"))?;
        Ok(RunWriter { id: id.to_string(), dest, staged: Some(staged), _lock: lock })
    }

    fn staged(&self) -> &Path {
        self.staged.as_deref().expect("staged until commit")
    }

    pub fn manifest(&self, m: &RunManifest) -> Result<()> {
        write_atomic(&self.staged().join(RUN_MANIFEST), to_pretty(m).as_bytes())
    }

    pub fn cell(&self, c: &Cell) -> Result<()> {
        let path = cell_path(self.staged(), c);
        write_atomic(&path, &cell_bytes(&path, &to_pretty(c)))
    }

    pub fn notes(&self, markdown: &str) -> Result<()> {
        write_atomic(&self.staged().join(RUN_NOTES), markdown.as_bytes())
    }

    /// Checks what was written as `site build` will (under the id it will have), then
    /// swaps it into place. Returns the run folder.
    pub fn commit(mut self) -> Result<PathBuf> {
        let staged = self.staged.take().expect("commit once");
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

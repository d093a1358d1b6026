//! The run folder as the bench writes it: the manifest at the start and again at the end,
//! the run's cells file rewritten whole (temp file + rename) as soon as each cell finishes,
//! so an interrupted run keeps every finished cell and `--resume` runs only the missing ones.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::plan::PlannedCell;
use crate::format::json::to_pretty;
use crate::format::pack::{cell_key, cell_line, CellKey, CellPack};
use crate::format::writer::{loose_cell_paths, run_lock, write_pack};
use crate::format::{self, Cell, RunManifest, RUNS_DIR, RUN_MANIFEST, RUN_NOTES};
use crate::fsutil::{write_atomic, Lock};
use crate::redact::Scrubber;

pub struct Recorder {
    pub dir: PathBuf,
    /// (phase, context, concurrency, repetition) of the cells already on disk.
    pub done: BTreeSet<CellKey>,
    /// The run's cells file as it is on disk: every cell this run and the runs it resumes
    /// wrote there.
    cells: CellPack,
    /// The run's rate cells as written so far (`rates.jsonl`, a line each).
    rate_lines: Vec<String>,
    /// Whether this run created the folder (an interrupted run that wrote nothing removes it).
    pub created: bool,
    /// Known secrets (the API key): never in a file we write.
    scrubber: Scrubber,
    _lock: Lock,
}

impl Recorder {
    /// Opens `data/runs/<id>/`. A folder with cells is continued only with `resume`; cells
    /// that failed because the server was unreachable are measured again.
    pub fn open(data_dir: &Path, run_id: &str, resume: bool, scrubber: Scrubber) -> Result<Recorder> {
        format::ids::check_id("run id", run_id)?;
        let runs = data_dir.join(RUNS_DIR);
        let lock = run_lock(&runs, run_id)?;
        let dir = runs.join(run_id);
        let mut done = BTreeSet::new();
        let mut cells = CellPack::default();
        let created = !dir.exists();
        if dir.join(RUN_MANIFEST).exists() {
            if !resume {
                bail!(
                    "{} already exists: pass --resume to measure only its missing cells, or choose another --run-id",
                    dir.display()
                );
            }
            let run = format::load::load_run_in_progress(&dir)
                .with_context(|| format!("reading {} to resume it", dir.display()))?;
            for c in run.cells.iter().filter(|c| !c.cell.server_unreachable()) {
                done.insert(cell_key(&c.cell));
            }
            // Loose cells of a run begun before schema 5 stay where they are.
            for c in run.cells.iter().filter(|c| c.packed) {
                cells.insert(cell_key(&c.cell), &cell_line(&c.cell));
            }
        } else if resume {
            bail!("--resume: {} does not exist", dir.display());
        }
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Recorder { dir, done, cells, rate_lines: Vec::new(), created, scrubber, _lock: lock })
    }

    /// Removes the run folder when this run created it and wrote no cell.
    pub fn remove_if_empty(&self) -> Result<bool> {
        if !self.created || !self.done.is_empty() || !self.rate_lines.is_empty() {
            return Ok(false);
        }
        fs::remove_dir_all(&self.dir).with_context(|| format!("removing the empty run {}", self.dir.display()))?;
        Ok(true)
    }

    pub fn existing_manifest(&self) -> Result<Option<RunManifest>> {
        let path = self.dir.join(RUN_MANIFEST);
        if !path.exists() {
            return Ok(None);
        }
        let text = crate::fsutil::read_data_file(&path, crate::fsutil::MAX_DATA_FILE_BYTES)?;
        Ok(Some(format::json::parse(&path, &text)?))
    }

    pub fn write_manifest(&self, m: &RunManifest) -> Result<()> {
        let path = self.dir.join(RUN_MANIFEST);
        format::validate::validate_manifest(m)
            .with_context(|| format!("refusing to write {}: site check would refuse it", path.display()))?;
        write_atomic(&path, to_pretty(m).as_bytes())
    }

    pub fn write_notes(&self, markdown: &str) -> Result<()> {
        write_atomic(&self.dir.join(RUN_NOTES), markdown.as_bytes())
    }

    /// The launched servers' output (already scrubbed by the launcher; scrubbed again for the
    /// API key, as every file we write is).
    /// A resumed run's earlier processes' log is kept: this session's comes after it.
    pub fn write_server_log(&self, text: &str) -> Result<()> {
        let path = self.dir.join(format::SERVER_LOG);
        let earlier = match fs::symlink_metadata(&path) {
            Ok(_) => crate::fsutil::read_data_file(&path, crate::fsutil::MAX_DATA_FILE_BYTES)?,
            Err(_) => String::new(),
        };
        if text.is_empty() && !earlier.is_empty() {
            return Ok(());
        }
        let joined = match earlier.is_empty() {
            true => text.to_string(),
            false => format!("{}\n== resumed {}\n{text}", earlier.trim_end(), now_rfc3339()),
        };
        write_atomic(&path, self.scrubber.scrub(&joined).as_bytes())
    }

    /// Adds `cell` to the run's cells file (replacing a cell of the same key) and writes the
    /// file again.
    pub fn write_cell(&mut self, cell: &Cell) -> Result<()> {
        let path = self.dir.join(format::CELLS_FILE);
        format::validate::validate_cell(cell).with_context(|| {
            format!("refusing to write {} to {}: site check would refuse it", cell.file_name(), path.display())
        })?;
        self.cells.insert(cell_key(cell), &self.scrubber.scrub(&cell_line(cell)));
        write_pack(&self.dir, &self.cells)?;
        // The same cell stored loose by a run begun before schema 5 would be its duplicate.
        for loose in loose_cell_paths(&self.dir, cell) {
            if loose.exists() {
                fs::remove_file(&loose).with_context(|| format!("removing {}", loose.display()))?;
            }
        }
        self.done.insert(cell_key(cell));
        Ok(())
    }

    /// Adds a rate cell to the run's `rates.jsonl` and writes the file again (temp + rename).
    pub fn write_rate_cell(&mut self, cell: &format::RateCell) -> Result<()> {
        let path = self.dir.join(format::RATES_FILE);
        format::rates::validate_rate_cell(cell)
            .with_context(|| format!("refusing to write to {}: site check would refuse the cell", path.display()))?;
        let line = serde_json::to_string(cell).context("a rate cell as JSON")?;
        self.rate_lines.push(self.scrubber.scrub(&line));
        write_atomic(&path, (self.rate_lines.join("\n") + "\n").as_bytes())
    }

    /// Whether repetition `rep` of the planned cell is on disk.
    pub fn has(&self, p: &PlannedCell, rep: u32) -> bool {
        self.done.contains(&(p.phase, p.context, p.concurrency, rep))
    }
}

/// Now as RFC 3339 UTC to the second (`2026-12-02T14:05:09Z`).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Phase;

    #[test]
    fn a_cell_site_check_would_refuse_is_never_written() {
        let data = tempfile::tempdir().unwrap();
        let mut rec = Recorder::open(data.path(), "r", false, Scrubber::default()).unwrap();
        let mut cell = Cell::new(Phase::Decode, 1024, 2, format::Status::Valid);
        cell.reported = Some(format::ReportedFigures { total_tps: Some(f64::INFINITY), ..Default::default() });
        let e = rec.write_cell(&cell).unwrap_err();
        assert!(format!("{e:#}").contains("site check would refuse it"), "{e:#}");
        assert!(!rec.dir.join(format::CELLS_FILE).exists());
        cell.reported = Some(format::ReportedFigures { total_tps: Some(1.0), ..Default::default() });
        rec.write_cell(&cell).unwrap();
        assert!(rec.dir.join(format::CELLS_FILE).is_file());
    }

    #[test]
    fn timestamps_are_rfc3339_to_the_second() {
        let now = now_rfc3339();
        let parsed: jiff::Timestamp = now.parse().unwrap();
        assert_eq!(parsed.subsec_nanosecond(), 0);
        assert!(now.ends_with('Z') && now.len() == "2026-12-02T14:05:09Z".len(), "{now}");
        assert!((jiff::Timestamp::now() - parsed).get_seconds().abs() < 5);
    }
}

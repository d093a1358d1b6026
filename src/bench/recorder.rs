//! The run folder as the bench writes it: the manifest at the start and again at the end,
//! each cell atomically (temp file + rename) as soon as it finishes, so an interrupted run
//! keeps every finished cell and `--resume` runs only the missing ones.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::format::json::to_pretty;
use crate::format::{self, Cell, Phase, RunManifest, CELLS_DIR, RUNS_DIR, RUN_MANIFEST, RUN_NOTES};
use crate::fsutil::{write_atomic, Lock};
use crate::redact::Scrubber;

pub struct Recorder {
    pub dir: PathBuf,
    /// (phase, context, concurrency) of the cells already on disk.
    pub done: BTreeSet<(Phase, u32, u32)>,
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
        let lock = Lock::try_acquire(&runs.join(format!(".{run_id}.lock")), &format!("run {run_id}"))?;
        let dir = runs.join(run_id);
        let mut done = BTreeSet::new();
        let created = !dir.exists();
        if dir.join(RUN_MANIFEST).exists() {
            if !resume {
                bail!(
                    "{} already exists: pass --resume to measure only its missing cells, or choose another --run-id",
                    dir.display()
                );
            }
            let run = format::load_run_dir(&dir).with_context(|| format!("reading {} to resume it", dir.display()))?;
            for c in run.cells.iter().filter(|c| !c.cell.server_unreachable()) {
                done.insert((c.cell.phase, c.cell.context, c.cell.concurrency));
            }
        } else if resume {
            bail!("--resume: {} does not exist", dir.display());
        }
        fs::create_dir_all(dir.join(CELLS_DIR)).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Recorder { dir, done, created, scrubber, _lock: lock })
    }

    /// Removes the run folder when this run created it and wrote no cell.
    pub fn remove_if_empty(&self) -> Result<bool> {
        if !self.created || !self.done.is_empty() {
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
        write_atomic(&self.dir.join(RUN_MANIFEST), to_pretty(m).as_bytes())
    }

    pub fn write_notes(&self, markdown: &str) -> Result<()> {
        write_atomic(&self.dir.join(RUN_NOTES), markdown.as_bytes())
    }

    pub fn write_cell(&mut self, cell: &Cell) -> Result<()> {
        let json = self.scrubber.scrub(&to_pretty(cell));
        write_atomic(&self.dir.join(CELLS_DIR).join(cell.file_name()), json.as_bytes())?;
        self.done.insert((cell.phase, cell.context, cell.concurrency));
        Ok(())
    }

    pub fn has(&self, phase: Phase, context: u32, concurrency: u32) -> bool {
        self.done.contains(&(phase, context, concurrency))
    }
}

/// Seconds since 1970 as RFC 3339 UTC (`2026-12-02T14:05:09Z`), without a date library.
pub fn rfc3339_utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs / 60 % 60, secs % 60)
}

pub fn now_rfc3339() -> String {
    let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    rfc3339_utc(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(1_796_220_309), "2026-12-02T14:05:09Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
    }
}

//! `site repack [RUN...]`: runs written before schema 5 (a file a cell under `cells/`) moved
//! into one cells file a run, so the data folder holds two files a run, not hundreds.

use anyhow::{bail, Result};

use crate::cli::RepackArgs;
use speed_matrix::format::writer::{repack_run, Repacked};
use speed_matrix::format::RUNS_DIR;
use speed_matrix::fsutil::TEMP_PREFIX;
use speed_matrix::units::terminal_safe;

pub fn run(args: &RepackArgs) -> Result<()> {
    let ids = if args.runs.is_empty() { every_run(args)? } else { args.runs.clone() };
    let (mut moved, mut packed, mut failed) = (0, 0, 0);
    for id in &ids {
        match repack_run(&args.data, id) {
            Ok(Repacked::Moved { loose, cells }) => {
                moved += 1;
                say!("repacked {}: {loose} loose cell files into cells.jsonl.gz ({cells} cells)", terminal_safe(id));
            }
            Ok(Repacked::AlreadyPacked) => packed += 1,
            Err(e) => {
                failed += 1;
                eprintln!("{}", super::error_lines(&e));
            }
        }
    }
    say!("{moved} runs repacked, {packed} already in one cells file, {failed} refused");
    if failed > 0 {
        bail!("{failed} of {} runs were not repacked (each left as it was; see above)", ids.len());
    }
    Ok(())
}

/// The run folders of the data folder, by id (a writer's temporary folder is not a run).
fn every_run(args: &RepackArgs) -> Result<Vec<String>> {
    let runs = args.data.join(RUNS_DIR);
    let entries = std::fs::read_dir(&runs).map_err(|e| anyhow::anyhow!("reading {}: {e}", runs.display()))?;
    let mut ids: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|id| !id.starts_with(TEMP_PREFIX) && !id.starts_with('.'))
        .collect();
    ids.sort();
    Ok(ids)
}

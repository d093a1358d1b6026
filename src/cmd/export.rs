//! `site export RUN`: a run through the site's pipeline (load, analyze), then written in
//! another tool's format. RUN is an id under `--data` or a run folder's path, as `site diff`
//! takes it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cli::{ExportArgs, ExportFormat};
use speed_matrix::site::Site;

pub fn run(args: &ExportArgs) -> Result<()> {
    let (data, id) = data_and_id(&args.site.data, &args.run);
    let mut config = args.site.config(PathBuf::new());
    config.data_dir = data;
    let mut site = Site::load(config)?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("export").join(&id));
    let out = speed_matrix::fsutil::output_folder(&out, &site.config.data_dir)?;
    let names = match args.format {
        ExportFormat::LlmdBr02 => site.export_llmd(&id, &out)?,
    };
    say!("Wrote {} llm-d Benchmark Reports (v0.2) into {}", names.len(), out.display());
    Ok(())
}

/// The data folder and run id `run` names: a run folder's path (`data/runs/ID`, read with
/// the data folder it sits in), else an id under `data`.
fn data_and_id(data: &Path, run: &str) -> (PathBuf, String) {
    let dir = Path::new(run);
    let folder =
        dir.join(speed_matrix::format::RUN_MANIFEST).is_file().then(|| std::fs::canonicalize(dir).ok()).flatten();
    let place = folder.as_deref().and_then(|d| Some((d.parent()?.parent()?.to_path_buf(), d.file_name()?)));
    match place {
        Some((data, name)) => (data, name.to_string_lossy().into_owned()),
        None => (data.to_path_buf(), run.to_string()),
    }
}

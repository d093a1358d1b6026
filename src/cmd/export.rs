//! `site export RUN`: a run through the site's pipeline (load, analyze), then written in
//! another tool's format.

use std::path::PathBuf;

use anyhow::Result;

use crate::cli::{ExportArgs, ExportFormat};
use speed_matrix::site::Site;

pub fn run(args: &ExportArgs) -> Result<()> {
    let mut site = Site::load(args.site.config(PathBuf::new()))?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("export").join(&args.run));
    let out = speed_matrix::fsutil::output_folder(&out, &args.site.data)?;
    let names = match args.format {
        ExportFormat::LlmdBr02 => site.export_llmd(&args.run, &out)?,
    };
    say!("Wrote {} llm-d Benchmark Reports (v0.2) into {}", names.len(), out.display());
    Ok(())
}

use std::time::Instant;

use anyhow::Result;

use crate::cli::BuildArgs;
use speed_matrix::site::{format_steps, Site};

pub fn run(args: &BuildArgs) -> Result<()> {
    let t = Instant::now();
    let site = Site::load(args.site.config(args.out.clone()))?;
    if !site.data.skipped.is_empty() {
        eprintln!(
            "warning: {} entries in the data folder were not read (site check lists them)",
            site.data.skipped.len()
        );
    }
    let report = site.build()?;
    println!("Built {} ({} files) in {:.1} ms", args.out.display(), report.files, t.elapsed().as_secs_f64() * 1000.0);
    println!("{}", format_steps(&report.steps));
    Ok(())
}

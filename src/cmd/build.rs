use std::time::Instant;

use anyhow::Result;

use crate::cli::BuildArgs;
use crate::site::{format_steps, Site};

pub fn run(args: &BuildArgs) -> Result<()> {
    let t = Instant::now();
    let report = Site::load(args.site.config(args.out.clone()))?.build()?;
    println!("Built {} ({} files) in {:.1} ms", args.out.display(), report.files, t.elapsed().as_secs_f64() * 1000.0);
    println!("{}", format_steps(&report.steps));
    Ok(())
}

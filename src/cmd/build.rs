use std::time::Instant;

use anyhow::Result;

use crate::cli::BuildArgs;
use speed_matrix::site::{format_steps, input_fingerprint, up_to_date, Reuse, Site};

pub fn run(args: &BuildArgs) -> Result<()> {
    let t = Instant::now();
    let config = args.site.config_writing(&args.out)?;
    let fingerprint = input_fingerprint(&config);
    if !args.force && up_to_date(&config, fingerprint) {
        speed_matrix::site::clean_stale_staging(&config.out_dir);
        say!(
            "{} is up to date: no input changed since it was built ({:.1} ms; --force builds anyway)",
            args.out.display(),
            t.elapsed().as_secs_f64() * 1000.0
        );
        return Ok(());
    }
    let mut site = Site::load(config)?;
    site.fingerprint = Some(fingerprint);
    if !site.data.skipped.is_empty() {
        eprintln!(
            "warning: {} entries in the data folder were not read (site check lists them)",
            site.data.skipped.len()
        );
    }
    for r in &site.data.redactions {
        eprintln!("warning: {}", speed_matrix::units::terminal_safe(&r.to_string()));
    }
    // --force: every file rendered and written again, nothing kept from the last build.
    let reuse = if args.force { Reuse::Nothing } else { Reuse::Verified };
    let report = site.build_with(reuse)?;
    say!("Built {} ({} files) in {:.1} ms", args.out.display(), report.files, t.elapsed().as_secs_f64() * 1000.0);
    say!("{}", format_steps(&report.steps));
    if let Some(fp) = &report.footprint {
        say!("By section:\n  {}", fp.lines().join("\n  "));
        say!("{}", fp.extremes());
        for over in fp.over_budget() {
            eprintln!("warning: {}", speed_matrix::units::terminal_safe(&over));
        }
    }
    Ok(())
}

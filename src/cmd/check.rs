use anyhow::Result;

use crate::cli::CheckArgs;
use speed_matrix::site::{format_steps, Site};
use speed_matrix::units::terminal_safe;

pub fn run(args: &CheckArgs) -> Result<()> {
    // The output folder is never touched by a check.
    let site = Site::load(args.site.config("public".into()))?;
    let warned: usize = site.model.runs.iter().map(|r| r.counts.warned).sum();
    say!("{}: OK", args.site.data.display());
    say!("{}", format_steps(&site.steps));
    for s in &site.data.skipped {
        say!("  skipped {}: {}", terminal_safe(&s.path.display().to_string()), s.reason);
    }
    for r in &site.data.redactions {
        eprintln!("warning: {}", terminal_safe(&r.to_string()));
    }
    if warned > 0 {
        say!("  {warned} cells carry warnings (shown on their run pages)");
    }
    Ok(())
}

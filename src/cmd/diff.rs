//! `site diff A B`: two runs through the site's pipeline (load, analyze, compare), written as
//! a standalone comparison folder; then the verdicts in the terminal and the regression gate.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::cli::DiffArgs;
use speed_matrix::format::Phase;
use speed_matrix::site::{background_sentence, noise_sentence, settings_sentence, CellVerdict, Comparison, Site};
use speed_matrix::units::{context_label, terminal_safe};

pub fn run(args: &DiffArgs) -> Result<()> {
    let mut site = Site::load_pair(args.site.config(PathBuf::new()), &args.run_a, &args.run_b, args.threshold)?;
    let cmp = &site.comparisons[0];
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("diff").join(&cmp.slug));
    site.config.out_dir = speed_matrix::fsutil::output_folder(&out, &args.site.data)?;
    site.write_comparison()?;
    let cmp = &site.comparisons[0];
    say!("Wrote {} ({} cells in common)", out.join("index.html").display(), cmp.common_cells);
    let (slower, stopped) = print_verdicts(cmp)?;
    if args.fail_on_regression && !(slower.is_empty() && stopped.is_empty()) {
        bail!(
            "--fail-on-regression: {} cell(s) judged slower, {} cell(s) stopped working or saturated",
            slower.len(),
            stopped.len()
        );
    }
    Ok(())
}

/// The verdicts in the terminal; the cells judged slower and those that stopped working.
pub fn print_verdicts(cmp: &Comparison) -> Result<(Vec<String>, Vec<String>)> {
    let mut cells: Vec<(String, CellVerdict)> =
        cmp.cell_verdicts().into_iter().map(|(phase, ctx, c, v)| (cell_name(phase, ctx, c), v)).collect();
    cells.extend(cmp.rate_verdicts().into_iter().map(|(ctx, rate, v)| (rate_name(ctx, rate), v)));
    say!("{}", verdict_summary(&cells, cmp.threshold_pct));
    say!("{}", noise_sentence(&cmp.noise));
    if let Some(b) = cmp.background {
        say!("{}", background_sentence(b));
    }
    if let Some(s) = settings_sentence(&cmp.settings) {
        say!("{}", speed_matrix::units::terminal_safe(&s));
    }
    let slower: Vec<String> =
        cells.iter().filter(|c| matches!(c.1, CellVerdict::Slower | CellVerdict::Mixed)).map(|c| c.0.clone()).collect();
    if !slower.is_empty() {
        say!("slower figures in: {}", terminal_safe(&slower.join(", ")));
    }
    let stopped: Vec<String> = cmp
        .stopped
        .iter()
        .map(|s| format!("{} ({})", cell_name(s.phase, s.context, s.concurrency), s.b_status.as_str()))
        .chain(cmp.rates_lost().into_iter().map(|(ctx, rate, state)| {
            let said = if state == speed_matrix::site::RateState::Saturated { "saturated" } else { "error" };
            format!("{} ({said})", rate_name(ctx, rate))
        }))
        .collect();
    if !stopped.is_empty() {
        say!("stopped working in B (valid in A): {}", terminal_safe(&stopped.join(", ")));
    }
    Ok((slower, stopped))
}

fn rate_name(ctx: u32, rate: f64) -> String {
    format!("{} at {} req/s", context_label(ctx), speed_matrix::units::numbers::rate(rate))
}

fn cell_name(phase: Phase, ctx: u32, c: u32) -> String {
    match phase {
        Phase::Prefill => format!("prefill {}", context_label(ctx)),
        Phase::Decode => format!("{} x {c}", context_label(ctx)),
    }
}

/// `12 cells with figures on both sides: 2 slower, 9 no change > 5%, 1 inconclusive`
/// (kinds with no cell left out).
fn verdict_summary(cells: &[(String, CellVerdict)], threshold: f64) -> String {
    let count = |v: CellVerdict| cells.iter().filter(|c| c.1 == v).count();
    let parts: Vec<String> = [
        (CellVerdict::Faster, "faster".to_string()),
        (CellVerdict::Slower, "slower".to_string()),
        (CellVerdict::Mixed, "mixed (some figures faster, some slower)".to_string()),
        (CellVerdict::NoChange, format!("no change > {threshold}%")),
        (CellVerdict::Inconclusive, "inconclusive".to_string()),
        (CellVerdict::Single, "single measurements, not judged".to_string()),
    ]
    .into_iter()
    .filter_map(|(v, name)| Some(count(v)).filter(|n| *n > 0).map(|n| format!("{n} {name}")))
    .collect();
    if parts.is_empty() {
        return "no cell with figures on both sides".to_string();
    }
    format!("{} cells with figures on both sides: {}", cells.len(), parts.join(", "))
}

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cli::DiffArgs;
use speed_matrix::analysis::compare::{compare, CellVerdict};
use speed_matrix::analysis::{normalize_run, RunSlugs};
use speed_matrix::format::{self, load_run_dir, LoadedRun, Phase, SiteSettings, RUNS_DIR, RUN_MANIFEST};
use speed_matrix::render::compare_page::{comparison_csv, comparison_html};
use speed_matrix::render::{templates, PageContext};
use speed_matrix::units::{context_label, terminal_safe};
use speed_matrix::write::{assets, Sink, Staging};

/// A run id under the data folder, or a path to a run folder.
fn find_run(data_dir: &Path, name: &str) -> Result<LoadedRun> {
    let as_path = Path::new(name);
    if as_path.join(RUN_MANIFEST).is_file() {
        return load_run_dir(as_path);
    }
    let dir = data_dir.join(RUNS_DIR).join(name);
    if format::ids::check_id("run id", name).is_ok() && dir.join(RUN_MANIFEST).is_file() {
        return load_run_dir(&dir);
    }
    if as_path.is_dir() && (name.contains('/') || !dir.is_dir()) {
        bail!(
            "{name}: this folder is not a run folder (it has no {RUN_MANIFEST}); name a run id or a folder under {}",
            data_dir.join(RUNS_DIR).display()
        );
    }
    let mut known: Vec<String> = std::fs::read_dir(data_dir.join(RUNS_DIR))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    known.sort();
    bail!(
        "unknown run {name:?}: it is neither a run id under {} nor a run folder with {RUN_MANIFEST} (known runs: {})",
        data_dir.join(RUNS_DIR).display(),
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )
}

pub fn run(args: &DiffArgs) -> Result<()> {
    let a = find_run(&args.site.data, &args.run_a)?;
    let b = find_run(&args.site.data, &args.run_b)?;
    if a.dir.canonicalize().ok() == b.dir.canonicalize().ok() {
        bail!("cannot compare run {} with itself: name two different runs", a.id);
    }
    let (va, vb) = (normalize_run(&a, RunSlugs::plain(&a.manifest)), normalize_run(&b, RunSlugs::plain(&b.manifest)));
    let settings = SiteSettings::load(&args.site.config)?;
    let threshold = args.threshold.unwrap_or(settings.change_threshold_pct);
    let mut cmp = compare(&va, &vb, threshold)?;
    if a.id == b.id {
        // Two folders with the same name: keep the slug unique.
        cmp.slug = format!("{}--{}-b", a.id, b.id);
    }
    let out: PathBuf = args.out.clone().unwrap_or_else(|| PathBuf::from("diff").join(&cmp.slug));
    let out = speed_matrix::fsutil::output_folder(&out, &args.site.data)?;
    let env = templates::environment(Some(&args.site.templates), &settings)?;
    let cx = PageContext::new(&env, &[], &[], &[], &settings);
    let html = comparison_html(&cx, &cmp, &va, &vb, "", true)?;
    let staging = Staging::new(&out, Default::default())?;
    staging.put("index.html", html.as_bytes())?;
    staging.put("comparison.csv", comparison_csv(&cmp).as_bytes())?;
    assets::write_assets(Some(&args.site.static_dir), &staging)?;
    staging.commit().with_context(|| format!("writing {}", out.display()))?;
    say!("Wrote {} ({} cells in common)", out.join("index.html").display(), cmp.common_cells);
    let cells = cmp.cell_verdicts();
    say!("{}", verdict_summary(&cells, threshold));
    let slower: Vec<String> = cells
        .iter()
        .filter(|c| matches!(c.3, CellVerdict::Slower | CellVerdict::Mixed))
        .map(|&(phase, ctx, c, _)| cell_name(phase, ctx, c))
        .collect();
    if !slower.is_empty() {
        say!("slower figures in: {}", terminal_safe(&slower.join(", ")));
    }
    let stopped: Vec<String> =
        cmp.stopped.iter().map(|s| format!("{} ({})", cell_name(s.phase, s.context, s.concurrency), s.b_status.as_str())).collect();
    if !stopped.is_empty() {
        say!("stopped working in B (valid in A): {}", terminal_safe(&stopped.join(", ")));
    }
    if args.fail_on_regression && !(slower.is_empty() && stopped.is_empty()) {
        bail!(
            "--fail-on-regression: {} cell(s) judged slower, {} cell(s) stopped working",
            slower.len(),
            stopped.len()
        );
    }
    Ok(())
}

fn cell_name(phase: Phase, ctx: u32, c: u32) -> String {
    match phase {
        Phase::Prefill => format!("prefill {}", context_label(ctx)),
        Phase::Decode => format!("{} x {c}", context_label(ctx)),
    }
}

/// `12 cells with figures on both sides: 2 slower, 9 no change > 5%, 1 inconclusive`
/// (kinds with no cell left out).
fn verdict_summary(cells: &[(Phase, u32, u32, CellVerdict)], threshold: f64) -> String {
    let count = |v: CellVerdict| cells.iter().filter(|c| c.3 == v).count();
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

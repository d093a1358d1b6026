use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cli::DiffArgs;
use speed_matrix::analysis::compare::compare;
use speed_matrix::analysis::{normalize_run, RunSlugs};
use speed_matrix::format::{self, load_run_dir, LoadedRun, SiteSettings, RUNS_DIR, RUN_MANIFEST};
use speed_matrix::render::compare_page::{comparison_csv, comparison_html};
use speed_matrix::render::{templates, PageContext};
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
    let env = templates::environment(Some(&args.site.templates), &settings)?;
    let cx = PageContext::new(&env, &[], &[], &[]);
    let html = comparison_html(&cx, &cmp, &va, &vb, "", true)?;
    let staging = Staging::new(&out)?;
    staging.put("index.html", html.as_bytes())?;
    staging.put("comparison.csv", comparison_csv(&cmp).as_bytes())?;
    assets::write_assets(Some(&args.site.static_dir), &staging)?;
    staging.commit().with_context(|| format!("writing {}", out.display()))?;
    println!("Wrote {} ({} cells in common)", out.join("index.html").display(), cmp.common_cells);
    Ok(())
}

//! The `Site`: configured, then loaded, then built, each step timed. The pipeline runs one
//! way: load (format) -> analyze -> compare -> render -> commit (write).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::analysis::{self, Comparison, SiteModel};
use crate::format::{self, DataSet, SiteSettings};
use crate::render::{templates, RenderStats, SitePages};
use crate::write::{assets, Staging};

/// Where a site's inputs and output live.
#[derive(Debug, Clone)]
pub struct SiteConfig {
    pub data_dir: PathBuf,
    pub out_dir: PathBuf,
    /// Folder of template overrides; missing files fall back to the embedded defaults.
    pub templates_dir: Option<PathBuf>,
    /// Folder of static asset overrides and extras.
    pub static_dir: Option<PathBuf>,
    /// `site.toml`; a missing file means the defaults.
    pub settings_file: Option<PathBuf>,
}

impl SiteConfig {
    /// The usual layout: `data/`, `public/`, `site-templates/`, `static/` under `root`.
    pub fn in_dir(root: &Path) -> SiteConfig {
        SiteConfig {
            data_dir: root.join("data"),
            out_dir: root.join("public"),
            templates_dir: Some(root.join("site-templates")),
            static_dir: Some(root.join("static")),
            settings_file: Some(root.join("site.toml")),
        }
    }
}

/// One timed step of a build, for the summary printed at the end.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: &'static str,
    pub took: Duration,
    pub detail: String,
}

pub struct Site {
    pub config: SiteConfig,
    pub settings: SiteSettings,
    pub data: DataSet,
    pub model: SiteModel,
    /// The comparisons `compare.json` lists, in its order.
    pub comparisons: Vec<Comparison>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone)]
pub struct BuildReport {
    pub steps: Vec<Step>,
    pub stats: RenderStats,
    pub files: usize,
    pub bytes: u64,
}

impl Site {
    /// Loads and validates the data folder and normalizes it (what `site check` runs).
    pub fn load(config: SiteConfig) -> Result<Site> {
        let t = Instant::now();
        let settings = match &config.settings_file {
            Some(path) => SiteSettings::load(path)?,
            None => SiteSettings::default(),
        };
        let data = format::load_data_dir(&config.data_dir)?;
        let cells: usize = data.runs.iter().map(|r| r.cells.len()).sum();
        let mut steps = vec![Step {
            name: "load",
            took: t.elapsed(),
            detail: format!(
                "{} runs, {} cells, {} pages from {}",
                data.runs.len(),
                cells,
                data.pages.len(),
                config.data_dir.display()
            ),
        }];
        let t = Instant::now();
        let model = analysis::analyze(&data, &settings);
        steps.push(Step {
            name: "analyze",
            took: t.elapsed(),
            detail: format!(
                "{} models, {} hardware types, {} engines",
                model.models.len(),
                model.hardware.len(),
                model.engines.len()
            ),
        });
        let t = Instant::now();
        let comparisons = compare_listed(&data, &model, settings.change_threshold_pct)
            .with_context(|| format!("{}", config.data_dir.join(crate::format::COMPARE_FILE).display()))?;
        steps.push(Step { name: "compare", took: t.elapsed(), detail: format!("{} comparisons", comparisons.len()) });
        Ok(Site { config, settings, data, model, comparisons, steps })
    }

    /// Renders every page into a staging folder and swaps it into place.
    pub fn build(self) -> Result<BuildReport> {
        let Site { config, settings, data, model, comparisons, mut steps } = self;
        let t = Instant::now();
        let env = templates::environment(config.templates_dir.as_deref(), &settings)?;
        let mut staging = Staging::new(&config.out_dir)?;
        let pages =
            SitePages { site: &model, settings: &settings, comparisons: &comparisons, pages: &data.pages, env: &env };
        let stats = pages.render_all(&mut staging)?;
        let n_assets = assets::write_assets(config.static_dir.as_deref(), &mut staging)?;
        steps.push(Step {
            name: "render",
            took: t.elapsed(),
            detail: format!(
                "{} pages ({} run pages), {} charts, {} assets",
                stats.pages, stats.run_pages, stats.charts, n_assets
            ),
        });
        let (files, bytes) = (staging.files, staging.bytes);
        let t = Instant::now();
        staging.commit().with_context(|| format!("publishing {}", config.out_dir.display()))?;
        steps.push(Step {
            name: "write",
            took: t.elapsed(),
            detail: format!("{files} files, {} KiB swapped into {}", bytes / 1024, config.out_dir.display()),
        });
        Ok(BuildReport { steps, stats, files, bytes })
    }
}

/// The comparisons of `compare.json`; loading checked that their runs exist, so what can
/// still fail is a pair with nothing in common.
fn compare_listed(data: &DataSet, model: &SiteModel, default_threshold: f64) -> Result<Vec<Comparison>> {
    data.comparisons
        .iter()
        .map(|spec| {
            let run = |id: &str| model.run(id).expect("loading checked the comparison's run ids");
            let threshold = spec.threshold_pct.unwrap_or(default_threshold);
            Ok(analysis::compare(run(&spec.a), run(&spec.b), threshold)?)
        })
        .collect()
}

/// `  load       3.1 ms  2 runs, ...` lines for the terminal.
pub fn format_steps(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("  {:<10} {:>9.1} ms  {}", s.name, s.took.as_secs_f64() * 1000.0, s.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

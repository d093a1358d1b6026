//! The `Site`: configured, then loaded, then built, each step timed. The pipeline runs one
//! way: load (format) -> analyze -> compare -> render -> commit (write).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::analysis::{self, Comparison, SiteModel};
use crate::format::{self, DataSet, SiteSettings};
use crate::render::{templates, RenderStats, SitePages};
use crate::units::Fnv;
use crate::write::{assets, Sink, Staging, BUILD_CACHE};

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
    /// Pages, comparisons and skipped entries; the runs live in `model`.
    pub data: DataSet<()>,
    pub model: SiteModel,
    /// The comparisons `compare.json` lists, in its order.
    pub comparisons: Vec<Comparison>,
    pub steps: Vec<Step>,
    /// `input_fingerprint` of the inputs, stored in the output so the next build can see
    /// that nothing changed.
    pub fingerprint: Option<u64>,
}

/// What a build leaves in its output for the next build (`write::BUILD_CACHE`).
#[derive(Debug, Default, Serialize, Deserialize)]
struct BuildCache {
    fingerprint: Option<String>,
    /// Run id -> input hash of its pages, in hex.
    run_pages: BTreeMap<String, String>,
}

impl BuildCache {
    fn read(bytes: Option<Vec<u8>>) -> BuildCache {
        bytes.and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
    }

    fn run_hashes(&self) -> BTreeMap<String, u64> {
        self.run_pages.iter().filter_map(|(id, h)| Some((id.clone(), u64::from_str_radix(h, 16).ok()?))).collect()
    }
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
        let loaded = format::load_data_dir_with(&config.data_dir, |run| analysis::prepare(&run))?;
        let (runs, data) = loaded.take_runs();
        let cells: usize = runs.iter().map(|r| r.cells()).sum();
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
        let model = analysis::analyze(runs, &settings);
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
        Ok(Site { config, settings, data, model, comparisons, steps, fingerprint: None })
    }

    /// Renders every page into a staging folder and swaps it into place.
    pub fn build(self) -> Result<BuildReport> {
        let Site { config, settings, data, model, comparisons, mut steps, fingerprint } = self;
        let t = Instant::now();
        let env = templates::environment(config.templates_dir.as_deref(), &settings)?;
        let template_hash = templates::source_hash(config.templates_dir.as_deref())?;
        let mut staging = Staging::new(&config.out_dir)?;
        let previous = BuildCache::read(staging.previous_file(BUILD_CACHE));
        let previous_runs = previous.run_hashes();
        let pages = SitePages {
            site: &model,
            template_hash,
            previous_runs: &previous_runs,
            settings: &settings,
            comparisons: &comparisons,
            pages: &data.pages,
            env: &env,
        };
        let (stats, run_hashes) = pages.render_all(&mut staging)?;
        let cache = BuildCache {
            fingerprint: fingerprint.map(|f| format!("{f:016x}")),
            run_pages: run_hashes.into_iter().map(|(id, h)| (id, format!("{h:016x}"))).collect(),
        };
        staging.put(BUILD_CACHE, serde_json::to_string(&cache)?.as_bytes())?;
        let n_assets = assets::write_assets(config.static_dir.as_deref(), &mut staging)?;
        steps.push(Step {
            name: "render",
            took: t.elapsed(),
            detail: format!(
                "{} pages ({} run pages, {} kept from the previous build), {} charts, {} assets",
                stats.pages, stats.run_pages, stats.reused_run_pages, stats.charts, n_assets
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
fn compare_listed(data: &DataSet<()>, model: &SiteModel, default_threshold: f64) -> Result<Vec<Comparison>> {
    data.comparisons
        .iter()
        .map(|spec| {
            let run = |id: &str| model.run(id).expect("loading checked the comparison's run ids");
            let threshold = spec.threshold_pct.unwrap_or(default_threshold);
            Ok(analysis::compare(run(&spec.a), run(&spec.b), threshold)?)
        })
        .collect()
}

/// A hash of every input's name, size and modification time (data folder, templates,
/// static files, site.toml) and of this program: equal fingerprints mean a build would
/// write the same site. Run folders are walked in parallel.
pub fn input_fingerprint(config: &SiteConfig) -> u64 {
    let mut h = Fnv::default();
    let runs = config.data_dir.join(format::RUNS_DIR);
    let mut folders: Vec<PathBuf> = fs::read_dir(&runs)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    folders.sort();
    let per_run: Vec<u64> = folders.par_iter().map(|f| tree_hash(f)).collect();
    for (f, v) in folders.iter().zip(per_run) {
        h.piece(f.as_os_str().as_encoded_bytes()).piece(&v.to_le_bytes());
    }
    let others = [Some(&config.data_dir), config.templates_dir.as_ref(), config.static_dir.as_ref(), config.settings_file.as_ref()];
    for dir in others.into_iter().flatten() {
        // The data folder's own files (pages/, compare.json); its runs were hashed above.
        h.piece(&tree_hash_except(dir, Some(&runs)).to_le_bytes());
    }
    if let Some(exe) = std::env::current_exe().ok().and_then(|p| fs::metadata(p).ok()) {
        h.piece(&meta_bytes(&exe));
    }
    h.piece(env!("CARGO_PKG_VERSION").as_bytes());
    h.finish()
}

fn tree_hash(root: &Path) -> u64 {
    tree_hash_except(root, None)
}

fn tree_hash_except(root: &Path, skip: Option<&PathBuf>) -> u64 {
    let mut h = Fnv::default();
    let walk = walkdir::WalkDir::new(root).sort_by_file_name().into_iter();
    for entry in walk.filter_entry(|e| skip.is_none_or(|s| e.path() != s.as_path())) {
        let Ok(entry) = entry else {
            h.piece(b"unreadable");
            continue;
        };
        h.piece(entry.path().as_os_str().as_encoded_bytes());
        if let Ok(meta) = entry.metadata() {
            h.piece(&meta_bytes(&meta));
        }
    }
    h.finish()
}

fn meta_bytes(meta: &fs::Metadata) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt as _;
    [meta.len() as i64, meta.mtime(), meta.mtime_nsec(), meta.mode() as i64].iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Whether `out` was built from inputs with this fingerprint (then a build can be skipped).
pub fn up_to_date(config: &SiteConfig, fingerprint: u64) -> bool {
    let path = config.out_dir.join(BUILD_CACHE);
    let Ok(meta) = fs::symlink_metadata(&path) else { return false };
    if !meta.is_file() || !config.out_dir.join(crate::write::MARKER).is_file() {
        return false;
    }
    let cache = BuildCache::read(fs::read(&path).ok());
    cache.fingerprint == Some(format!("{fingerprint:016x}"))
}

/// `  load       3.1 ms  2 runs, ...` lines for the terminal.
pub fn format_steps(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("  {:<10} {:>9.1} ms  {}", s.name, s.took.as_secs_f64() * 1000.0, s.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

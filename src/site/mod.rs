//! The `Site`: configured, then loaded, then built, each step timed. The pipeline runs one
//! way: load (format) -> analyze -> compare -> render -> commit (write).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

pub use crate::analysis::Comparison;
use crate::analysis::{self, PreparedRun, RunView, SiteModel};
use crate::format::{self, DataSet, SiteSettings};
use crate::publish::Footprint;
use crate::render::{templates, RenderStats, SitePages};
use crate::units::InputHash;
use crate::write::{assets, InPlace, OutputIndex, Sink, Staging};

mod cache;

pub use cache::{input_fingerprint, up_to_date};
use cache::{program_identity, to_hex, BuildCache};

/// What the site's commands read of a comparison's verdicts, and the staging clean-up an
/// up-to-date build still does: the commands reach the pipeline only through `site`.
pub use crate::analysis::compare::CellVerdict;
pub use crate::analysis::compare_rates::RateState;
pub use crate::render::compare_page::{background_sentence, noise_sentence, settings_sentence};
pub use crate::write::clean_stale_staging;

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
    /// The comparisons the series' flagged steps link to beyond those.
    pub step_comparisons: Vec<Comparison>,
    pub steps: Vec<Step>,
    /// `input_fingerprint` of the inputs, stored in the output so the next build can see
    /// that nothing changed.
    pub fingerprint: Option<u64>,
}

/// How much of the previous build a build may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// Unchanged pages whose files are as that build left them (checked on disk).
    Verified,
    /// Nothing: every file is rendered and written (`site build --force`).
    Nothing,
}

#[derive(Debug, Clone)]
pub struct BuildReport {
    pub steps: Vec<Step>,
    pub stats: RenderStats,
    pub files: usize,
    pub bytes: u64,
    /// What the site weighs by section (a build into the output folder measures it).
    pub footprint: Option<Footprint>,
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
        let load = Step {
            name: "load",
            took: t.elapsed(),
            detail: format!(
                "{} runs, {} cells, {} pages from {}",
                data.runs.len(),
                cells,
                data.pages.len(),
                config.data_dir.display()
            ),
        };
        Site::analyzed(config, settings, data, runs, load)
    }

    /// A site of two runs and their comparison (`site diff A B`): each run named by its id
    /// under the data folder or by its folder's path, loaded, prepared and analyzed as `load`
    /// does for every run, then compared at `threshold` (default: `site.toml`'s).
    /// Two runs compared as `site build` compares them: the other runs in the folders they
    /// sit in are loaded and analysed too, so that the comparison's run-to-run noise comes
    /// from the same evidence (`analysis::run_noise`).
    pub fn load_pair(config: SiteConfig, a: &str, b: &str, threshold: Option<f64>) -> Result<Site> {
        let t = Instant::now();
        let settings = match &config.settings_file {
            Some(path) => SiteSettings::load(path)?,
            None => SiteSettings::default(),
        };
        let (ra, rb) = (format::find_run(&config.data_dir, a)?, format::find_run(&config.data_dir, b)?);
        if ra.dir.canonicalize().ok() == rb.dir.canonicalize().ok() || ra.id == rb.id {
            return Err(analysis::compare::Incomparable::SameRun(ra.id.clone()).into());
        }
        let (a_id, b_id) = (ra.id.clone(), rb.id.clone());
        let (wa, wb) = (ra.manifest.settings.workload(), rb.manifest.settings.workload());
        if wa != wb {
            // Refused before the folders beside them are read.
            return Err(analysis::compare::Incomparable::TwoWorkloads((a_id, wa), (b_id, wb)).into());
        }
        let others = runs_beside_pair(&ra, &rb);
        let mut runs = vec![analysis::prepare(&ra), analysis::prepare(&rb)];
        let cells: usize = runs.iter().map(PreparedRun::cells).sum();
        drop((ra, rb));
        let beside = others.len();
        runs.extend(others);
        // The analysis takes runs sorted by id.
        runs.sort_by(|x, y| x.id().cmp(y.id()));
        let data = DataSet::of_runs(&config.data_dir, runs.iter().map(|r| r.id().to_string()).collect());
        let detail = format!("2 runs, {cells} cells; {beside} other runs beside them (for the run-to-run noise)");
        let load = Step { name: "load", took: t.elapsed(), detail };
        let t = Instant::now();
        let model = analysis::analyze(runs, &settings);
        let analyze = Step { name: "analyze", took: t.elapsed(), detail: analyzed_detail(&model) };
        let t = Instant::now();
        let index = |id: &str| model.run_index(id).expect("both runs were analyzed");
        let cmp = analysis::compare_runs(
            &model,
            (index(&a_id), index(&b_id)),
            threshold.unwrap_or(settings.change_threshold_pct),
            &settings,
        )?;
        let compare = Step { name: "compare", took: t.elapsed(), detail: "1 comparison".into() };
        let steps = vec![load, analyze, compare];
        Ok(Site {
            config,
            settings,
            data,
            model,
            comparisons: vec![cmp],
            step_comparisons: Vec::new(),
            steps,
            fingerprint: None,
        })
    }

    /// Writes the site's first comparison as a standalone folder at the output (`site
    /// diff`): its page and CSV through the comparison writer `build` uses, and the assets.
    pub fn write_comparison(&self) -> Result<BuildReport> {
        let t = Instant::now();
        let cmp = self.comparisons.first().context("no comparison to write")?;
        let run = |id: &str| self.model.run(id).context("the comparison's runs are the site's");
        let env = templates::environment(self.config.templates_dir.as_deref(), &self.settings)?;
        let cx = crate::render::PageContext::new(&env, &[], &self.model, &self.comparisons, &self.settings);
        let staging = Staging::new(&self.config.out_dir, BTreeMap::new())?;
        let mut stats = RenderStats::default();
        let place = crate::render::compare_page::ComparisonPlace::Standalone;
        crate::render::compare_page::write_comparison(
            &cx,
            cmp,
            (run(&cmp.a_id)?, run(&cmp.b_id)?),
            place,
            &staging,
            &mut stats,
        )?;
        assets::write_assets(self.config.static_dir.as_deref(), &staging)?;
        let mut steps = self.steps.clone();
        steps.push(Step { name: "render", took: t.elapsed(), detail: format!("{} page", stats.pages) });
        let t = Instant::now();
        let (files, bytes) = staging.written();
        staging.commit().with_context(|| format!("writing {}", self.config.out_dir.display()))?;
        steps.push(Step {
            name: "write",
            took: t.elapsed(),
            detail: format!("{files} files into {}", self.config.out_dir.display()),
        });
        Ok(BuildReport { steps, stats, files, bytes, footprint: None })
    }

    /// Analyze and compare: what follows loading, whole or in part.
    fn analyzed(
        config: SiteConfig,
        settings: SiteSettings,
        data: DataSet<()>,
        runs: Vec<PreparedRun>,
        load: Step,
    ) -> Result<Site> {
        let t = Instant::now();
        let model = analysis::analyze(runs, &settings);
        let analyze = Step { name: "analyze", took: t.elapsed(), detail: analyzed_detail(&model) };
        Site::compared(config, settings, data, model, vec![load, analyze])
    }

    /// Compare: what follows the analysis.
    fn compared(
        config: SiteConfig,
        settings: SiteSettings,
        data: DataSet<()>,
        model: SiteModel,
        mut steps: Vec<Step>,
    ) -> Result<Site> {
        let t = Instant::now();
        let comparisons = compare_listed(&data, &model, &settings)
            .with_context(|| format!("{}", config.data_dir.join(crate::format::COMPARE_FILE).display()))?;
        let step_comparisons =
            analysis::step_comparisons(&model, &comparisons, &settings).context("comparing the steps of a trend")?;
        steps.push(Step { name: "compare", took: t.elapsed(), detail: format!("{} comparisons", comparisons.len()) });
        Ok(Site { config, settings, data, model, comparisons, step_comparisons, steps, fingerprint: None })
    }

    /// The same site with the run folders `ids` read again (a run whose folder is gone is
    /// dropped, a new one added); the other runs are kept as analyzed. What `site serve`
    /// does when only run folders changed.
    pub fn reload_runs(self, ids: &BTreeSet<String>) -> Result<Site> {
        let t = Instant::now();
        let Site { config, settings, mut data, model, .. } = self;
        let runs_dir = config.data_dir.join(format::RUNS_DIR);
        let mut fresh: BTreeMap<&String, Option<PreparedRun>> = BTreeMap::new();
        for id in ids {
            let dir = runs_dir.join(id);
            let run = if fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                let mut skipped = Vec::new();
                Some(analysis::prepare(&format::load_run(&dir, id, &mut skipped)?))
            } else {
                None
            };
            fresh.insert(id, run);
        }
        let detail = format!("{} run folders read again", ids.len());
        // The same runs as before (only what they hold changed): the analysis is mended.
        if fresh.iter().all(|(id, run)| run.is_some() == model.run_index(id).is_some()) {
            let changed = fresh.into_iter().filter_map(|(id, run)| Some((model.run_index(id)?, run?))).collect();
            let load = Step { name: "load", took: t.elapsed(), detail };
            let t = Instant::now();
            let model = analysis::reanalyze(model, changed, &settings);
            let analyze = Step { name: "analyze", took: t.elapsed(), detail: analyzed_detail(&model) };
            return Site::compared(config, settings, data, model, vec![load, analyze]);
        }
        let mut runs: BTreeMap<String, PreparedRun> =
            model.runs.into_iter().map(|r| (r.id.clone(), PreparedRun::from_view(r))).collect();
        for (id, run) in fresh {
            runs.remove(id);
            if let Some(run) = run {
                runs.insert(id.clone(), run);
            }
        }
        let known: Vec<String> = runs.keys().cloned().collect();
        format::check_comparison_runs(&data.comparisons, &known, &config.data_dir)?;
        data.run_ids = known;
        data.runs = vec![(); runs.len()];
        let load = Step { name: "load", took: t.elapsed(), detail: format!("{} run folders read again", ids.len()) };
        Site::analyzed(config, settings, data, runs.into_values().collect(), load)
    }

    /// `site export RUN`: the run's llm-d Benchmark Reports (v0.2), one a repetition of each
    /// valid decode cell, written into `out` (a folder replaced whole, only on success); an
    /// export step is added to the pipeline's. Returns the files' names.
    pub fn export_llmd(&mut self, id: &str, out: &Path) -> Result<Vec<String>> {
        let t = Instant::now();
        let run = self.model.runs.iter().find(|r| r.id == id).ok_or_else(|| {
            anyhow::anyhow!("no run {id:?} in {}", self.config.data_dir.join(format::RUNS_DIR).display())
        })?;
        let dir = self.config.data_dir.join(format::RUNS_DIR).join(id);
        let details = analysis::evidence::run_detail(format::load_run_dir(&dir)?);
        let reports = crate::render::llmd_report::reports(run, &details);
        if reports.is_empty() {
            anyhow::bail!("run {id} has no valid decode cell with a total tok/s and no valid rate cell: there is nothing to report");
        }
        refuse_foreign_export_folder(out)?;
        let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let tmp = crate::fsutil::create_temp_dir(parent, "export")?;
        let written = reports.iter().try_for_each(|(name, report)| {
            let yaml = crate::render::llmd_report::to_yaml(report)?;
            fs::write(tmp.join(name), yaml).with_context(|| format!("writing {}", tmp.join(name).display()))
        });
        if let Err(e) = written {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        crate::fsutil::replace_dir(&tmp, out)?;
        self.steps.push(Step {
            name: "export",
            took: t.elapsed(),
            detail: format!("{} llm-d Benchmark Reports v0.2 into {}", reports.len(), out.display()),
        });
        Ok(reports.into_iter().map(|(name, _)| name).collect())
    }

    /// Renders every page into a staging folder and swaps it into place, keeping the
    /// previous build's unchanged pages that are still as it left them.
    pub fn build(&self) -> Result<BuildReport> {
        self.build_with(Reuse::Verified)
    }

    pub fn build_with(&self, reuse: Reuse) -> Result<BuildReport> {
        let before = match reuse {
            Reuse::Verified => BuildCache::read(&self.config.out_dir),
            Reuse::Nothing => BuildCache::default(),
        };
        let staging = Staging::new(&self.config.out_dir, before.digests())?;
        let staging = if reuse == Reuse::Nothing { staging.without_previous() } else { staging };
        let (mut steps, stats, mut cache) = self.render(&staging, &before.hashes())?;
        let (files, bytes) = staging.written();
        // Before the staged site replaces the published one: a site its host would refuse
        // is never published (the staging folder goes with `staging`).
        let t = Instant::now();
        let footprint = Footprint::of(&staging.file_sizes());
        crate::publish::check(&footprint, self.settings.publish.host)?;
        steps.push(Step { name: "measure", took: t.elapsed(), detail: self.fits(&footprint) });
        let t = Instant::now();
        let digests = staging.commit().with_context(|| format!("publishing {}", self.config.out_dir.display()))?;
        cache.digests = to_hex(digests);
        cache.write(&self.config.out_dir);
        steps.push(Step {
            name: "write",
            took: t.elapsed(),
            detail: format!("{files} files, {} KiB swapped into {}", bytes / 1024, self.config.out_dir.display()),
        });
        Ok(BuildReport { steps, stats, files, bytes, footprint: Some(footprint) })
    }

    /// The measure step's line: the site's weight and whether its host takes it.
    fn fits(&self, fp: &Footprint) -> String {
        let host = self.settings.publish.host;
        let weight = format!("{} files, {}", fp.total.files, crate::publish::bytes_text(fp.total.bytes));
        match host {
            format::Host::None => format!("{weight}; no host to check ([publish] host in site.toml)"),
            _ => format!("{weight}; fits {}", host.name()),
        }
    }

    /// Renders every page into `sink`, nothing kept from a previous build, and writes no
    /// build cache: the bench times the rendering apart from the filesystem this way, with
    /// a sink that only counts.
    pub fn render_into(&self, sink: &dyn Sink) -> Result<(Vec<Step>, RenderStats)> {
        let (steps, stats, _) = self.render(sink, &BTreeMap::new())?;
        Ok((steps, stats))
    }

    /// Renders into the output folder in place: unchanged files stay untouched, changed
    /// ones are replaced one by one (temp file + rename), stale ones removed. For `site
    /// serve`, where a rebuild must be quick and a reader sees each file whole. `index` is
    /// what the previous build in place wrote (empty for the first), and becomes this one's.
    pub fn build_in_place(&self, index: &mut OutputIndex) -> Result<BuildReport> {
        // Serve holds what its last build wrote: its units' hashes are the build cache's.
        let previous = index.unit_hashes().unwrap_or_else(|| BuildCache::read(&self.config.out_dir).hashes());
        let out = InPlace::new(&self.config.out_dir, std::mem::take(index))?;
        let (mut steps, stats, cache) = self.render(&out, &previous)?;
        let t = Instant::now();
        let (files, bytes, removed, written) = out.finish()?;
        *index = written;
        cache.write(&self.config.out_dir);
        steps.push(Step {
            name: "write",
            took: t.elapsed(),
            detail: format!(
                "{files} files changed ({} KiB), {removed} removed in {}",
                bytes / 1024,
                self.config.out_dir.display()
            ),
        });
        Ok(BuildReport { steps, stats, files, bytes, footprint: None })
    }

    /// Every page and asset into `out`; the steps so far plus render, and the cache for the
    /// next build.
    fn render(&self, out: &dyn Sink, previous: &BTreeMap<String, u64>) -> Result<(Vec<Step>, RenderStats, BuildCache)> {
        let t = Instant::now();
        let config = &self.config;
        let env = templates::environment(config.templates_dir.as_deref(), &self.settings)?;
        // What every page is framed by: the templates, site.toml (title, base URL, prices) and
        // the program that draws them (a new one keeps no page of the old).
        let mut frame = InputHash::default();
        frame.piece(&templates::source_hash(config.templates_dir.as_deref())?.to_le_bytes());
        frame.json(&self.settings);
        frame.piece(&program_identity());
        let template_hash = frame.finish();
        let runs_dir = config.data_dir.join(format::RUNS_DIR);
        // A run's records are read again only for its cell pages, one run at a time, so
        // that no more than a few runs' records are held at once.
        let cell_details =
            |run: &RunView| format::load_run_dir(&runs_dir.join(&run.id)).map(analysis::evidence::run_detail);
        let pages = SitePages {
            site: &self.model,
            cell_details: &cell_details,
            template_hash,
            previous,
            settings: &self.settings,
            comparisons: &self.comparisons,
            step_comparisons: &self.step_comparisons,
            pages: &self.data.pages,
            env: &env,
        };
        let (stats, hashes) = pages.render_all(out)?;
        let cache = BuildCache {
            fingerprint: self.fingerprint.map(|f| format!("{f:016x}")),
            pages: to_hex(hashes),
            digests: BTreeMap::new(),
        };
        let n_assets = assets::write_assets(config.static_dir.as_deref(), out)?;
        let mut steps = self.steps.clone();
        steps.push(Step {
            name: "render",
            took: t.elapsed(),
            detail: format!(
                "{} pages ({} run pages, {} kept from the previous build, {} with new places only), {} charts, {} assets",
                stats.pages, stats.run_pages, stats.reused_run_pages, stats.patched_run_pages, stats.charts, n_assets
            ),
        });
        Ok((steps, stats, cache))
    }
}

/// The comparisons of `compare.json`; loading checked that their runs exist, so what can
/// still fail is a pair with nothing in common.
fn compare_listed(data: &DataSet<()>, model: &SiteModel, settings: &SiteSettings) -> Result<Vec<Comparison>> {
    data.comparisons
        .iter()
        .map(|spec| {
            let index = |id: &str| model.run_index(id).expect("loading checked the comparison's run ids");
            let threshold = spec.threshold_pct.unwrap_or(settings.change_threshold_pct);
            Ok(analysis::compare_runs(model, (index(&spec.a), index(&spec.b)), threshold, settings)?)
        })
        .collect()
}

fn analyzed_detail(model: &SiteModel) -> String {
    format!("{} models, {} hardware types, {} engines", model.models.len(), model.hardware.len(), model.engines.len())
}

/// `  load       3.1 ms  2 runs, ...` lines for the terminal.
pub fn format_steps(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("  {:<10} {:>9.1} ms  {}", s.name, s.took.as_secs_f64() * 1000.0, s.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The runs in the folders `a` and `b` sit in, but those two, each reduced at once; runs of
/// an id already taken and folders that do not load are left out (they are not what was
/// asked about, and a comparison must not fail on them).
fn runs_beside_pair(a: &format::LoadedRun, b: &format::LoadedRun) -> Vec<PreparedRun> {
    use rayon::prelude::*;
    let mut paths = format::runs_beside(&a.dir);
    paths.extend(format::runs_beside(&b.dir));
    paths.sort();
    paths.dedup();
    let loaded: Vec<PreparedRun> =
        paths.par_iter().filter_map(|p| format::load_run_dir(p).ok()).map(|r| analysis::prepare(&r)).collect();
    let mut seen: std::collections::HashSet<String> = [a.id.clone(), b.id.clone()].into();
    loaded.into_iter().filter(|r| seen.insert(r.id().to_string())).collect()
}

/// An export replaces its folder whole: only a new or empty folder, or one that holds only
/// YAML reports (an earlier export), is replaced.
fn refuse_foreign_export_folder(out: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(out) else {
        return match out.exists() {
            true => Err(anyhow::anyhow!("{} exists and is not a folder; choose another --out", out.display())),
            false => Ok(()),
        };
    };
    let names: Vec<String> =
        entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    if let Some(other) = names.iter().find(|n| !n.ends_with(".yaml")) {
        anyhow::bail!(
            "refusing to replace {}: it holds files that site export did not write ({other}); choose an empty or new --out",
            out.display()
        );
    }
    Ok(())
}

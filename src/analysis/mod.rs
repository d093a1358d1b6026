//! Analysis: turns a loaded `DataSet` into what the pages show -- figures computed from raw
//! records (or as reported), run views, groups, comparisons. Nothing here formats text,
//! touches the disk or fails: what could be wrong was refused when the data was loaded.

pub mod capacity;
pub mod command;
pub mod compare;
pub mod compare_rates;
pub mod evidence;
pub mod figures;
pub mod group;
pub mod interval;
pub mod leaderboard;
pub mod metric;
pub mod pareto;
pub mod rates;
pub mod reuse;
pub mod run;
pub mod run_history;
pub mod run_noise;
pub mod series;
pub mod spread;
pub mod tools;
pub mod verdict;
pub mod version;

use rayon::prelude::*;
use serde::Serialize;

use crate::format::{LoadedRun, SiteSettings};
pub use compare::{compare, Comparison};
pub use figures::Figures;
pub use group::{GroupKind, GroupView};
pub use leaderboard::{BoardKey, Leaderboard};
pub use pareto::ParetoView;
pub use run::{
    normalize_cell, normalize_run, CellView, FigureSource, Headline, RunSlugs, RunView, StatusCounts,
    ACTIVE_MISMATCH_TOLERANCE, CLIENT_CPU_LIMIT_CORES, PREFILL_JUMP_FACTOR, SERVER_DISAGREEMENT_TOLERANCE,
};
pub use series::SeriesView;

#[derive(Debug, Clone, Serialize)]
pub struct SiteModel {
    /// Sorted by id.
    pub runs: Vec<RunView>,
    pub models: Vec<GroupView>,
    pub hardware: Vec<GroupView>,
    pub engines: Vec<GroupView>,
    /// Prefill boards by context, then decode boards by (context, concurrency).
    pub leaderboards: Vec<Leaderboard>,
    /// One per model, in `models` order.
    pub paretos: Vec<ParetoView>,
    pub series: Vec<SeriesView>,
    /// Configurations measured by two benchmark tools or more.
    pub tools: Vec<tools::ToolsView>,
    /// Each run's capacity under the site's SLOs and its interactivity levels, by run index.
    pub capacity: Vec<capacity::RunCapacity>,
    /// One board per SLO and context: runs by capacity per device.
    pub targets: Vec<capacity::TargetBoard>,
    /// Per model, the best configuration at each SLO (the front page).
    pub best: Vec<capacity::ModelBest>,
    /// The runs of each exact configuration measured more than once.
    pub siblings: series::ConfigGroups,
    /// By run index: the prefix-reuse session the run is a level of.
    pub reuse: Vec<Option<reuse::ReuseSession>>,
    /// The run-to-run noise every leaderboard's places allow for.
    pub board_noise: run_noise::RunNoise,
    /// The run-to-run noise of the site's configurations measured more than once.
    #[serde(skip)]
    pub noise: run_noise::SiteNoise,
}

impl SiteModel {
    pub fn run(&self, id: &str) -> Option<&RunView> {
        self.run_index(id).map(|i| &self.runs[i])
    }

    /// The index of run `id` in `runs` (sorted by id).
    pub fn run_index(&self, id: &str) -> Option<usize> {
        self.runs.binary_search_by(|r| r.id.as_str().cmp(id)).ok()
    }

    pub fn leaderboard(&self, key: BoardKey) -> Option<&Leaderboard> {
        self.leaderboards.binary_search_by(|b| b.key.cmp(&key)).ok().map(|i| &self.leaderboards[i])
    }

    pub fn groups(&self, kind: GroupKind) -> &[GroupView] {
        match kind {
            GroupKind::Model => &self.models,
            GroupKind::Hardware => &self.hardware,
            GroupKind::Engine => &self.engines,
        }
    }
}

/// A run normalized as soon as it is loaded (its raw records can then be dropped), before
/// the site knows its groups; `analyze` gives it its page slugs.
pub struct PreparedRun(RunView);

impl PreparedRun {
    /// A view analyzed before, to be analyzed again with other runs (its slugs are set anew).
    pub fn from_view(view: RunView) -> PreparedRun {
        PreparedRun(view)
    }

    pub fn cells(&self) -> usize {
        self.0.prefill.len() + self.0.decode.len()
    }

    pub fn id(&self) -> &str {
        &self.0.id
    }
}

pub fn prepare(run: &LoadedRun) -> PreparedRun {
    let mut view = normalize_run(run, RunSlugs::plain(&run.manifest));
    // The rate cells' requests (which objectives read) are not in the view's JSON.
    view.view_hash = crate::units::InputHash::default().json(&view).json(&run.rates).finish();
    // The evidence's cache key: the texts of the cells that keep detail, as read (hashing
    // their records written out again cost a cold build more than all its charts).
    let detail: Vec<u64> = run.cells.iter().filter(|c| c.cell.keeps_detail()).map(|c| c.text_hash).collect();
    view.detail_hash = (!detail.is_empty()).then(|| {
        let mut h = crate::units::InputHash::default();
        for t in &detail {
            h.u64(*t);
        }
        h.finish()
    });
    PreparedRun(view)
}

/// Every run with its figures, grouped by model, hardware and engine, ranked, and followed
/// across versions. `runs` are sorted by id.
pub fn analyze(runs: Vec<PreparedRun>, settings: &SiteSettings) -> SiteModel {
    let Grouped { runs, models, hardware, engines } = grouped(runs);
    // Capacity once: the series read it, the target boards and the best are made from it.
    let capacity = capacity::all(&runs, settings);
    // Independent views of the same runs, on every core.
    let ((leaderboards, tools), (paretos, series)) = rayon::join(
        || (leaderboard::leaderboards(&runs), tools::tools(&runs)),
        || rayon::join(|| paretos(&runs, &models, settings), || series::series(&runs, &capacity, settings)),
    );
    let grouped = Grouped { runs, models, hardware, engines };
    assembled(grouped, AcrossRuns { leaderboards, tools, paretos, series, places: Places::All }, capacity, settings)
}

/// Runs `a` and `b` of the model compared, with their capacity under the site's SLOs.
pub fn compare_runs(
    model: &SiteModel,
    (a, b): (usize, usize),
    threshold: f64,
    settings: &SiteSettings,
) -> Result<Comparison, compare::Incomparable> {
    let slos: Vec<&str> = settings.slos().into_iter().map(|(n, _)| n).collect();
    let noise = model.noise.for_pair(&model.runs, (a, b), settings.change_noise_pct);
    let cmp = compare::compare(&model.runs[a], &model.runs[b], threshold, noise)?;
    Ok(cmp.with_capacity(&model.capacity[a], &model.capacity[b], &slos))
}

/// The comparisons the series' flagged steps link to beyond `listed`, each made as a listed
/// one is (with capacity) at the site's threshold, under the step's slug.
pub fn step_comparisons(
    model: &SiteModel,
    listed: &[Comparison],
    settings: &SiteSettings,
) -> Result<Vec<Comparison>, compare::Incomparable> {
    series::step_pairs(&model.series, listed)
        .into_iter()
        .map(|(a, b, slug)| {
            let mut cmp = compare_runs(model, (a, b), settings.change_threshold_pct, settings)?;
            cmp.slug = slug.to_string();
            Ok(cmp)
        })
        .collect()
}

/// Capacity under the SLOs, its boards and each model's best: cheap (a few figures per
/// cell), so made whole on every analysis.
fn capacity_views(
    capacity: &[capacity::RunCapacity],
    models: &[GroupView],
    settings: &SiteSettings,
) -> (Vec<capacity::TargetBoard>, Vec<capacity::ModelBest>) {
    let slos: Vec<&str> = settings.slos().into_iter().map(|(n, _)| n).collect();
    let members: Vec<&[usize]> = models.iter().map(|g| g.runs.as_slice()).collect();
    let boards = capacity::boards(capacity, &slos);
    let best = capacity::best_per_model(&members, capacity, &slos);
    (boards, best)
}

/// What `analyze` gives for `previous`'s runs with those of `changed` (index, run) put in
/// their places: the same runs, ids and order, only what they hold differs (`site serve`
/// after a cell file changed). The leaderboards are mended and the Pareto views of models
/// no changed run belongs to are kept, instead of made again from every cell of the site.
pub fn reanalyze(previous: SiteModel, changed: Vec<(usize, PreparedRun)>, settings: &SiteSettings) -> SiteModel {
    let SiteModel {
        runs,
        models: old_models,
        hardware,
        engines,
        leaderboards,
        board_noise: old_board_noise,
        paretos: old_paretos,
        series: old_series,
        ..
    } = previous;
    let mut indices: Vec<usize> = changed.iter().map(|(i, _)| *i).collect();
    indices.sort_unstable();
    indices.dedup();
    // Only cells changed (the usual edit while serving): every run stays in the groups and
    // series it was in, in its place, so those are kept and only touched series compared again.
    let in_place = changed.iter().all(|(i, PreparedRun(run))| {
        let old = &runs[*i];
        old.manifest == run.manifest && old.started == run.started
    });
    let (Grouped { runs, models, hardware, engines }, regrouped) = if in_place {
        let mut runs = runs;
        for (i, PreparedRun(mut run)) in changed {
            run.slugs = runs[i].slugs.clone();
            runs[i] = run;
        }
        (Grouped { runs, models: old_models, hardware, engines }, false)
    } else {
        let mut prepared: Vec<PreparedRun> = runs.into_iter().map(PreparedRun).collect();
        for (i, run) in changed {
            prepared[i] = run;
        }
        let grouped = grouped(prepared);
        let regrouped = grouped.models != old_models;
        (grouped, regrouped)
    };
    let touched = |members: &[usize]| members.iter().any(|i| indices.binary_search(i).is_ok());
    let mended_paretos = || {
        if regrouped {
            return paretos(&runs, &models, settings);
        }
        old_paretos
            .into_par_iter()
            .zip(&models)
            .enumerate()
            .map(|(i, (view, g))| if touched(&g.runs) { pareto::pareto(i, &runs, &g.runs, settings) } else { view })
            .collect()
    };
    let capacity = capacity::all(&runs, settings);
    let mended_series = || {
        if in_place {
            series::mend(old_series, &runs, &capacity, &touched, settings)
        } else {
            series::series(&runs, &capacity, settings)
        }
    };
    let ((mended, tools), (paretos, series)) = rayon::join(
        || (leaderboard::mend(leaderboards, &runs, &indices), tools::tools(&runs)),
        || rayon::join(mended_paretos, mended_series),
    );
    let (leaderboards, touched) = mended;
    let grouped = Grouped { runs, models, hardware, engines };
    let places = Places::Mend { touched, noise: old_board_noise };
    assembled(grouped, AcrossRuns { leaderboards, tools, paretos, series, places }, capacity, settings)
}

/// The views across runs that `analyze` makes whole and `reanalyze` mends.
struct AcrossRuns {
    leaderboards: Vec<Leaderboard>,
    tools: Vec<tools::ToolsView>,
    paretos: Vec<ParetoView>,
    series: Vec<SeriesView>,
    places: Places,
}

/// Which boards' places `assembled` numbers once the site's run-to-run noise is known.
enum Places {
    /// Every board (a whole analysis).
    All,
    /// The boards a mend touched, if the noise the places allow for is the one the previous
    /// model's were numbered with; else every board.
    Mend { touched: rustc_hash::FxHashSet<BoardKey>, noise: run_noise::RunNoise },
}

/// The model from the grouped runs, their views and capacity: what `analyze` and
/// `reanalyze` both end with (the target boards, each model's best and the siblings are
/// cheap, so made whole every time).
fn assembled(
    grouped: Grouped,
    views: AcrossRuns,
    capacity: Vec<capacity::RunCapacity>,
    settings: &SiteSettings,
) -> SiteModel {
    let Grouped { runs, models, hardware, engines } = grouped;
    let AcrossRuns { leaderboards, tools, paretos, series, places } = views;
    let (targets, best) = capacity_views(&capacity, &models, settings);
    let siblings = series::ConfigGroups::of(&runs);
    let reuse = reuse::sessions(&runs);
    let noise = run_noise::SiteNoise::new(&runs, (&siblings.groups, &siblings.group_of), settings.change_noise_pct);
    let board_noise = noise.site_wide(&runs, settings.change_noise_pct);
    let leaderboards = match places {
        Places::Mend { touched, noise } if noise == board_noise => {
            leaderboard::ranked_only(leaderboards, &board_noise, &touched)
        }
        _ => leaderboard::ranked(leaderboards, &board_noise),
    };
    SiteModel {
        runs,
        models,
        hardware,
        engines,
        leaderboards,
        board_noise,
        paretos,
        series,
        tools,
        capacity,
        targets,
        best,
        siblings,
        reuse,
        noise,
    }
}

/// Runs with their page slugs, and the groups they make.
struct Grouped {
    runs: Vec<RunView>,
    models: Vec<GroupView>,
    hardware: Vec<GroupView>,
    engines: Vec<GroupView>,
}

fn grouped(runs: Vec<PreparedRun>) -> Grouped {
    let manifests: Vec<_> = runs.iter().map(|r| &r.0.manifest).collect();
    let [models, hardware, engines] = GroupKind::ALL.map(|k| group::group(&manifests, k));
    let n = runs.len();
    let [m, h, e] = [&models, &hardware, &engines].map(|g| group::slug_by_run(g, n));
    let runs: Vec<RunView> = runs
        .into_iter()
        .zip(m.into_iter().zip(h).zip(e))
        .map(|(PreparedRun(mut run), ((model_slug, hardware_slug), engine_slug))| {
            run.slugs = RunSlugs { model_slug, hardware_slug, engine_slug };
            run
        })
        .collect();
    Grouped { runs, models, hardware, engines }
}

/// One Pareto view per model, in `models` order.
fn paretos(runs: &[RunView], models: &[GroupView], settings: &SiteSettings) -> Vec<ParetoView> {
    models.par_iter().enumerate().map(|(i, g)| pareto::pareto(i, runs, &g.runs, settings)).collect()
}

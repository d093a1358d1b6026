//! One run as its pages show it: every cell with its figures (computed from raw records, or
//! as reported), the heatmap grid, the headline figures, status tallies, and the checks the
//! site adds to a producer's warnings. Nothing here formats text for a page.

use serde::Serialize;

use super::figures::{CrossCheckBasis, Figures};
use super::spread::{mean_figures, Spread};
use crate::format::{
    Cell, CellError, LoadedRun, LoopFinding, Origin, OverCapacity, Phase, RunManifest, Status, Warning, Workload,
};
use crate::units::slugify;

/// A cell whose average active requests differ from its concurrency by more than this
/// fraction is flagged: it did not measure what its column says.
pub const ACTIVE_MISMATCH_TOLERANCE: f64 = 0.10;
/// Our tok/s and the server's own count may differ by this fraction before the cell says so.
pub const SERVER_DISAGREEMENT_TOLERANCE: f64 = 0.02;
/// More CPU than this (cores) inside a window makes the client's machine part of the
/// measurement.
pub const CLIENT_CPU_LIMIT_CORES: f64 = 0.5;

#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub id: String,
    pub manifest: RunManifest,
    /// Model name as titles print it (`Step-3.5-Flash` for `stepfun-ai/Step-3.5-Flash`).
    pub model_name: String,
    /// `2026-11-30`: the day the run started, where the manifest says so in RFC 3339.
    pub date: Option<String>,
    /// When the run started, for ordering runs in time (a bare date counts as its midnight
    /// in UTC).
    #[serde(skip)]
    pub started: Option<jiff::Timestamp>,
    /// Folder names of the run's model, hardware and engine pages.
    #[serde(flatten)]
    pub slugs: RunSlugs,
    pub prefill: Vec<CellView>,
    /// Sorted by (context, concurrency).
    pub decode: Vec<CellView>,
    /// `site bench --rates`: the run's request-rate cells, by context, rate and repetition.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<super::rates::RateView>,
    pub heatmap: Heatmap,
    pub headline: Headline,
    pub notes_markdown: Option<String>,
    pub counts: StatusCounts,
    /// What the load generator's machine was doing in the decode windows, where recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineSummary>,
    /// A hash of this view as normalized (before the site sets its slugs): what its pages
    /// are made from, for the build cache. Computed once, when the run is loaded.
    #[serde(skip)]
    pub view_hash: u64,
    /// A hash of what the run's cell files keep beyond this view (request records, a tool's
    /// samples and own figures), which its cell pages show; `None` where they keep nothing
    /// more: the cell pages are then made from the view alone, without reading the run again.
    #[serde(skip)]
    pub detail_hash: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellView {
    pub phase: Phase,
    pub context: u32,
    pub prompt_tokens: Option<u32>,
    pub concurrency: u32,
    pub status: Status,
    pub source: FigureSource,
    pub figures: Figures,
    /// The producer's warnings plus the normalizer's own checks.
    pub warnings: Vec<Warning>,
    // Boxed: most cells have none, and a site of 10,000 runs holds half a million cells.
    pub over_capacity: Option<Box<OverCapacity>>,
    pub loop_finding: Option<Box<LoopFinding>>,
    pub error: Option<Box<CellError>>,
    /// Measurements of the cell (repetitions, each a file); its figures are their means.
    pub repetitions: u32,
    /// The server processes its repetitions measured (`--launch --restarts`); 1 when
    /// they shared one or the run does not say.
    #[serde(skip_serializing_if = "one_process")]
    pub processes: u32,
    /// The judged figures with their n and interval (valid cells with something to
    /// estimate from); boxed, as most sites hold many cells.
    pub spread: Option<Box<Spread>>,
    /// A decode cell's workload (the run's `--prefix-reuse`, `--turns`): ranked and
    /// compared apart from others.
    #[serde(skip_serializing_if = "Workload::is_plain")]
    pub workload: Workload,
}

#[derive(Debug, Clone, Serialize)]
pub struct Heatmap {
    pub columns: Vec<u32>,
    pub rows: Vec<HeatRow>,
    /// Largest valid total tok/s: the top of the colour scale.
    pub max_total_tps: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HeatRow {
    pub context: u32,
    /// One per column: the cell's index in `RunView::decode`, `None` where the run has no
    /// cell (not measured).
    pub cells: Vec<Option<usize>>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Headline {
    pub peak_total_tps: Option<f64>,
    pub peak_context: Option<u32>,
    pub peak_concurrency: Option<u32>,
    /// Total tok/s at concurrency 1, shortest context with a valid cell.
    pub single_request_tps: Option<f64>,
    pub single_request_context: Option<u32>,
    /// Prefill tok/s at 8K (8192 tokens).
    pub prefill_8k_tps: Option<f64>,
}

/// Where a cell's figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureSource {
    /// Computed by the site from raw records.
    Measured,
    /// As another tool or page reported them.
    Reported,
}

impl FigureSource {
    pub fn as_str(self) -> &'static str {
        match self {
            FigureSource::Measured => "measured",
            FigureSource::Reported => "reported",
        }
    }
}

/// The folder names of a run's model, hardware and engine pages (`model_slug`, ... in
/// templates). A site makes them unique across groups (see `group`); alone, a run uses
/// the plain slugs of its names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunSlugs {
    pub model_slug: String,
    pub hardware_slug: String,
    pub engine_slug: String,
}

impl RunSlugs {
    pub fn plain(m: &RunManifest) -> RunSlugs {
        RunSlugs {
            model_slug: slugify(&m.model.id),
            hardware_slug: slugify(&m.hardware.device),
            engine_slug: slugify(&m.engine.name),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StatusCounts {
    pub valid: usize,
    pub looped: usize,
    pub over_capacity: usize,
    pub error: usize,
    pub missing: usize,
    pub warned: usize,
}

impl StatusCounts {
    /// Counts cells by status; `missing` stays for the caller (it depends on the grid).
    pub fn tally<'a>(cells: impl IntoIterator<Item = &'a CellView>) -> StatusCounts {
        let mut counts = StatusCounts::default();
        for c in cells {
            match c.status {
                Status::Valid => counts.valid += 1,
                Status::Looped => counts.looped += 1,
                Status::OverCapacity => counts.over_capacity += 1,
                Status::Error => counts.error += 1,
            }
            if !c.warnings.is_empty() {
                counts.warned += 1;
            }
        }
        counts
    }
}

/// `max` indices of `0..n` evenly spread, the first and the last included (all of them when
/// `n <= max`).
fn evenly(n: usize, max: usize) -> Vec<usize> {
    if n <= max {
        return (0..n).collect();
    }
    (0..max).map(|i| (i * (n - 1) + (max - 1) / 2) / (max - 1)).collect()
}

impl RunView {
    /// (context, prompt tok/s) of every valid prefill sample: the prefill curve.
    pub fn prefill_points(&self) -> Vec<(u32, f64)> {
        valid_prefill_points(&self.prefill)
    }

    /// (context, total tok/s) of every valid single-request decode cell.
    pub fn single_request_points(&self) -> Vec<(u32, f64)> {
        self.decode
            .iter()
            .filter(|c| c.status == Status::Valid && c.concurrency == 1)
            .filter_map(|c| Some((c.context, c.figures.total_tps?)))
            .collect()
    }

    /// The cells of a heatmap row, by column.
    pub fn row_cells<'a>(&'a self, row: &'a HeatRow) -> impl Iterator<Item = Option<&'a CellView>> + 'a {
        row.cells.iter().map(|i| i.map(|i| &self.decode[i]))
    }

    /// The run with at most `max` of its concurrency levels and of its contexts, each evenly
    /// spread from the lowest to the highest (both kept), and only their cells; `None` when
    /// it has no more than that of either. A run page shows this, so its size stays bounded
    /// however large a sweep's matrix (every cell keeps its own page and its line in the
    /// downloads).
    pub fn folded(&self, max: usize) -> Option<RunView> {
        let (columns, rows) = (self.heatmap.columns.len(), self.heatmap.rows.len());
        if (columns <= max && rows <= max && self.prefill.len() <= max) || max < 2 {
            return None;
        }
        let kept_columns = evenly(columns, max);
        let mut new_index = vec![None; self.decode.len()];
        let mut decode = Vec::new();
        let mut heat_rows = Vec::new();
        for r in evenly(rows, max) {
            let row = &self.heatmap.rows[r];
            let cells = kept_columns
                .iter()
                .map(|&c| {
                    let i = row.cells[c]?;
                    new_index[i] = Some(decode.len());
                    decode.push(self.decode[i].clone());
                    new_index[i]
                })
                .collect();
            heat_rows.push(HeatRow { context: row.context, cells });
        }
        let heatmap = Heatmap {
            columns: kept_columns.iter().map(|&c| self.heatmap.columns[c]).collect(),
            rows: heat_rows,
            ..self.heatmap.clone()
        };
        let prefill = evenly(self.prefill.len(), max).into_iter().map(|i| self.prefill[i].clone()).collect();
        Some(RunView { decode, prefill, heatmap, ..self.clone() })
    }

    pub fn decode_cell(&self, context: u32, concurrency: u32) -> Option<&CellView> {
        self.decode.iter().find(|d| d.context == context && d.concurrency == concurrency)
    }

    pub fn prefill_cell(&self, context: u32) -> Option<&CellView> {
        self.prefill.iter().find(|p| p.context == context)
    }
}

fn valid_prefill_points(prefill: &[CellView]) -> Vec<(u32, f64)> {
    prefill
        .iter()
        .filter(|c| c.status == Status::Valid)
        .filter_map(|c| Some((c.context, c.figures.prompt_tps?)))
        .collect()
}

/// A run's view with its pages' slugs (`RunSlugs::plain` for a run alone).
pub fn normalize_run(run: &LoadedRun, slugs: RunSlugs) -> RunView {
    let m = &run.manifest;
    let mut prefill = Vec::new();
    let mut decode = Vec::new();
    // Cells are sorted by (phase, context, concurrency) with their repetitions together.
    for reps in run.cells.chunk_by(|a, b| same_cell(&a.cell, &b.cell)) {
        let cells: Vec<&Cell> = reps.iter().map(|lc| &lc.cell).collect();
        let mut view = normalize_repetitions(&cells, m.origin);
        if view.phase == Phase::Decode {
            view.workload = m.settings.workload();
        }
        match view.phase {
            Phase::Prefill => prefill.push(view),
            Phase::Decode => decode.push(view),
        }
    }
    let heatmap = heatmap(&m.settings.contexts, &m.settings.concurrency, &decode);
    flag_prefill_outliers(&mut prefill);
    let headline = headline(&prefill, &decode);
    let mut counts = StatusCounts::tally(prefill.iter().chain(&decode));
    counts.missing = heatmap.rows.iter().flat_map(|r| &r.cells).filter(|c| c.is_none()).count();
    RunView {
        id: run.id.clone(),
        manifest: m.clone(),
        model_name: crate::units::model_display_name(&m.model.id),
        date: m.started_at.as_deref().and_then(date_of),
        started: m.started_at.as_deref().and_then(start_time),
        slugs,
        prefill,
        decode,
        rates: rate_views(run),
        heatmap,
        headline,
        notes_markdown: run.notes_markdown.clone(),
        counts,
        machine: MachineSummary::of(run.cells.iter().map(|c| &c.cell)),
        view_hash: 0,
        detail_hash: None,
    }
}

/// The run's rate cells, in (context, rate, repetition) order.
fn rate_views(run: &LoadedRun) -> Vec<super::rates::RateView> {
    let mut views: Vec<super::rates::RateView> = run.rates.iter().map(super::rates::rate_view).collect();
    views.sort_by(|a, b| {
        (a.context, a.repetition).cmp(&(b.context, b.repetition)).then(a.rate_rps.total_cmp(&b.rate_rps))
    });
    views
}

/// The load on the load generator's machine, averaged over a run's decode windows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MachineSummary {
    pub cpus: u32,
    pub windows: usize,
    pub busy_cores: f64,
    pub client_cores: f64,
    /// The server's own, where the bench started it.
    pub server_cores: Option<f64>,
    /// Other work beside the client and the server (`MachineLoad::other_cores`), where
    /// every window could tell.
    pub other_cores: Option<f64>,
    pub load_average: Option<f64>,
}

impl MachineSummary {
    pub fn of<'a>(cells: impl Iterator<Item = &'a Cell>) -> Option<MachineSummary> {
        let windows: Vec<(&crate::format::MachineLoad, f64, f64)> = cells
            .filter(|c| c.phase == Phase::Decode)
            .filter_map(|c| {
                let m = c.measurement.as_ref()?;
                let w = m.window?;
                let seconds = w.end_s - w.start_s;
                let client = m.client_cpu_s.filter(|_| seconds > 0.0).map_or(0.0, |s| s / seconds);
                Some((m.machine.as_ref()?, client, seconds))
            })
            .collect();
        let n = windows.len();
        if n == 0 {
            return None;
        }
        let mean = |f: &dyn Fn(&(&crate::format::MachineLoad, f64, f64)) -> Option<f64>| {
            let v: Vec<f64> = windows.iter().map(f).collect::<Option<Vec<f64>>>()?;
            Some(v.iter().sum::<f64>() / v.len() as f64)
        };
        Some(MachineSummary {
            cpus: windows.iter().map(|w| w.0.cpus).max().unwrap_or(1),
            windows: n,
            busy_cores: mean(&|w| Some(w.0.busy_cores)).unwrap_or(0.0),
            client_cores: mean(&|w| Some(w.1)).unwrap_or(0.0),
            server_cores: mean(&|w| w.0.server_cores),
            other_cores: mean(&|w| w.0.other_cores(w.1)),
            load_average: mean(&|w| w.0.load_average),
        })
    }
}

/// The calendar date an RFC 3339 timestamp (or a bare date) starts with.
fn date_of(started_at: &str) -> Option<String> {
    let day = started_at.get(..10)?;
    day.parse::<jiff::civil::Date>().ok().map(|d| d.to_string())
}

fn start_time(started_at: &str) -> Option<jiff::Timestamp> {
    if let Ok(t) = started_at.parse::<jiff::Timestamp>() {
        return Some(t);
    }
    let day: jiff::civil::Date = started_at.get(..10)?.parse().ok()?;
    day.to_zoned(jiff::tz::TimeZone::UTC).ok().map(|z| z.timestamp())
}

fn one_process(n: &u32) -> bool {
    *n <= 1
}

fn same_cell(a: &Cell, b: &Cell) -> bool {
    (a.phase, a.context, a.concurrency) == (b.phase, b.context, b.concurrency)
}

/// One cell from its repetitions (at least one, in repetition order). The first repetition
/// that is not valid decides a failed cell (a loop or an error in any repetition is what
/// the cell shows); when all are valid, each figure is the mean over them with its
/// interval across them.
pub fn normalize_repetitions(cells: &[&Cell], origin: Origin) -> CellView {
    let views: Vec<CellView> = cells.iter().map(|c| normalize_cell(c, origin)).collect();
    let n = views.len() as u32;
    let mut views = views.into_iter();
    let first = views.next().expect("a cell has a first repetition");
    if n == 1 {
        return first;
    }
    let rest: Vec<CellView> = views.collect();
    if let Some(bad) = std::iter::once(&first).chain(&rest).find(|v| v.status != Status::Valid) {
        return CellView { repetitions: n, spread: None, ..bad.clone() };
    }
    let all: Vec<&Figures> = std::iter::once(&first.figures).chain(rest.iter().map(|v| &v.figures)).collect();
    let mut warnings = first.warnings.clone();
    for w in rest.iter().flat_map(|v| &v.warnings) {
        if !warnings.iter().any(|x| x.code == w.code) {
            warnings.push(w.clone());
        }
    }
    let instances: Vec<Option<u32>> = cells.iter().map(|c| c.server_instance).collect();
    let (spread, processes) = spread_over_processes(&all, &instances);
    CellView {
        figures: mean_figures(&all),
        spread: Some(Box::new(spread)),
        warnings,
        repetitions: n,
        processes,
        ..first
    }
}

/// The spread of a cell's repetitions, and over how many server processes. Repetitions of
/// one process share its level, so where they span two processes or more each process's
/// mean is one sample (n = processes): the interval then covers the noise between processes,
/// and a comparison needs no other estimate of it (`run_noise`).
fn spread_over_processes(all: &[&Figures], instances: &[Option<u32>]) -> (Spread, u32) {
    let mut distinct: Vec<u32> = instances.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 || instances.iter().any(Option::is_none) {
        return (Spread::across(all), 1);
    }
    let means: Vec<Figures> = distinct
        .iter()
        .map(|&i| {
            let of: Vec<&Figures> =
                all.iter().zip(instances).filter(|(_, x)| **x == Some(i)).map(|(f, _)| *f).collect();
            mean_figures(&of)
        })
        .collect();
    let refs: Vec<&Figures> = means.iter().collect();
    (Spread::across(&refs), distinct.len() as u32)
}

pub fn normalize_cell(c: &Cell, origin: Origin) -> CellView {
    let (source, mut figures) = match (&c.measurement, &c.reported) {
        (Some(m), _) => (FigureSource::Measured, Figures::from_measurement(c.phase, c.prompt_tokens, m)),
        (None, Some(r)) => (FigureSource::Reported, Figures::from_reported(r)),
        // A cell with no figures (not run, failed) takes the run's origin.
        (None, None) => match origin {
            Origin::Measured => (FigureSource::Measured, Figures::default()),
            Origin::Imported => (FigureSource::Reported, Figures::default()),
        },
    };
    match c.status {
        Status::Valid => {}
        Status::Looped => figures = figures.discarded(),
        Status::OverCapacity | Status::Error => figures = Figures::default(),
    }
    let mut warnings = c.warnings.clone();
    if let Some(w) = prefill_cache_warning(c) {
        warnings.push(w);
    }
    if c.phase == Phase::Decode && c.status == Status::Valid {
        // Judged on what the server held (the client's in flight less its queue) where the
        // gauge reports a queue; else on the running gauge's mean (or the client's count).
        let judged = figures.held_active.map(|a| (a, "requests in flight less those the server reports waiting"));
        if let Some((active, basis)) = judged.or(figures.avg_active.map(|a| (a, "average active requests"))) {
            let want = c.concurrency as f64;
            if (active - want).abs() > ACTIVE_MISMATCH_TOLERANCE * want
                && !warnings.iter().any(|w| w.code == "active_mismatch")
            {
                warnings.push(Warning {
                    code: "active_mismatch".into(),
                    message: format!(
                        "{basis} {active:.1} differ from the {} requested by more than {:.0}%: the cell did not measure {} requests at once",
                        c.concurrency,
                        ACTIVE_MISMATCH_TOLERANCE * 100.0,
                        c.concurrency
                    ),
                });
            }
        }
    }
    if c.phase == Phase::Decode && c.status == Status::Valid {
        warnings.extend(cross_check_warnings(&figures));
    }
    let spread = spread_of(c, &figures);
    CellView {
        phase: c.phase,
        context: c.context,
        prompt_tokens: c.prompt_tokens,
        concurrency: c.concurrency,
        status: c.status,
        source,
        figures,
        warnings,
        over_capacity: c.over_capacity.clone().map(Box::new),
        loop_finding: c.loop_finding.clone().map(Box::new),
        error: c.error.clone().map(Box::new),
        repetitions: 1,
        processes: 1,
        spread,
        workload: Workload::default(),
    }
}

/// A valid measured cell's within-measurement intervals.
fn spread_of(c: &Cell, figures: &Figures) -> Option<Box<Spread>> {
    let m = c.measurement.as_ref().filter(|_| c.status == Status::Valid)?;
    let s = Spread::of_measurement(c.phase, c.prompt_tokens, m, figures);
    (!s.is_empty()).then(|| Box::new(s))
}

/// Warnings the figures imply: client and server disagree, or the client was busy.
fn cross_check_warnings(f: &Figures) -> Vec<Warning> {
    let mut out = Vec::new();
    if let Some(x) = f.cross_check().filter(|x| x.gap_pct.abs() > SERVER_DISAGREEMENT_TOLERANCE * 100.0) {
        let what = match x.basis {
            CrossCheckBasis::WindowCounter => "total tok/s against the server's token counter",
            CrossCheckBasis::FinishedRequests => "per-request tok/s of finished requests against the server's timings",
        };
        out.push(Warning {
            code: "server_disagrees".into(),
            message: format!(
                "client and server disagree: {what}, we measured {:.1} and the server {:.1} ({:+.1}%, over {:.0}%)",
                x.ours,
                x.server,
                x.gap_pct,
                SERVER_DISAGREEMENT_TOLERANCE * 100.0
            ),
        });
    }
    if let Some(cores) = f.client_cpu_cores.filter(|c| *c > CLIENT_CPU_LIMIT_CORES) {
        out.push(Warning {
            code: "client_busy".into(),
            message: format!(
                "the load generator used {cores:.2} cores inside the window (over {CLIENT_CPU_LIMIT_CORES}): the machine running it is part of this measurement"
            ),
        });
    }
    out
}

fn heatmap(contexts: &[u32], concurrency: &[u32], decode: &[CellView]) -> Heatmap {
    let mut contexts = contexts.to_vec();
    contexts.sort_unstable();
    let mut columns = concurrency.to_vec();
    columns.sort_unstable();
    let rows = contexts
        .iter()
        .map(|&ctx| HeatRow {
            context: ctx,
            cells: columns
                .iter()
                .map(|&c| decode.iter().position(|d| d.context == ctx && d.concurrency == c))
                .collect(),
        })
        .collect();
    let max_total_tps = decode
        .iter()
        .filter(|d| d.status == Status::Valid)
        .filter_map(|d| d.figures.total_tps)
        .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.max(v))));
    Heatmap { columns, rows, max_total_tps }
}

/// A prefill sample whose server reported more than a tenth of its prompt as cached did not
/// measure a prefill (a chat template's few shared tokens stay under that).
fn prefill_cache_warning(c: &Cell) -> Option<Warning> {
    if c.phase != Phase::Prefill || c.status != Status::Valid {
        return None;
    }
    let r = c.measurement.as_ref()?.requests.first()?;
    let cached = r.cached_prompt_tokens?;
    let prompt = r.prompt_tokens.or(c.prompt_tokens)? as u64;
    (cached.saturating_mul(10) > prompt).then(|| Warning {
        code: "prefix_cache_hit".into(),
        message: format!(
            "the server served {cached} of the {prompt} prompt tokens from its prefix cache: this is not the rate of a cold prefill"
        ),
    })
}

/// A prefill rate this many times the highest of the run's other contexts is no cold prefill.
pub const PREFILL_JUMP_FACTOR: f64 = 3.0;

/// Flags a prefill rate far beyond every other context of the run: most likely a prompt
/// served from the prefix cache rather than computed.
fn flag_prefill_outliers(prefill: &mut [CellView]) {
    let rates = valid_prefill_points(prefill);
    if rates.len() < 3 {
        return;
    }
    for c in prefill.iter_mut() {
        let Some(rate) = c.figures.prompt_tps.filter(|_| c.status == Status::Valid) else { continue };
        let others = rates.iter().filter(|(ctx, _)| *ctx != c.context).map(|(_, r)| *r).fold(0.0f64, f64::max);
        if others > 0.0 && rate > PREFILL_JUMP_FACTOR * others && !c.warnings.iter().any(|w| w.code == "prefill_jump") {
            c.warnings.push(Warning {
                code: "prefill_jump".into(),
                message: format!(
                    "{rate:.0} prompt tok/s is more than {PREFILL_JUMP_FACTOR:.0}x the fastest other context of this run ({others:.0}): the prompt was probably served from the prefix cache"
                ),
            });
        }
    }
}

fn headline(prefill: &[CellView], decode: &[CellView]) -> Headline {
    let valid = |c: &&CellView| c.status == Status::Valid;
    let mut h = Headline::default();
    for c in decode.iter().filter(valid) {
        if let Some(t) = c.figures.total_tps {
            if h.peak_total_tps.is_none_or(|p| t > p) {
                h.peak_total_tps = Some(t);
                h.peak_context = Some(c.context);
                h.peak_concurrency = Some(c.concurrency);
            }
        }
    }
    // `decode` is sorted by context, so the first C = 1 cell is the shortest context.
    if let Some(c) = decode.iter().filter(valid).find(|c| c.concurrency == 1 && c.figures.total_tps.is_some()) {
        h.single_request_tps = c.figures.total_tps;
        h.single_request_context = Some(c.context);
    }
    h.prefill_8k_tps = prefill.iter().filter(valid).find(|c| c.context == 8192).and_then(|c| c.figures.prompt_tps);
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ReportedFigures;

    fn prefill(context: u32, prompt_tps: f64) -> CellView {
        let reported = ReportedFigures { prompt_tps: Some(prompt_tps), ..Default::default() };
        let cell = Cell { reported: Some(reported), ..Cell::new(Phase::Prefill, context, 1, Status::Valid) };
        normalize_cell(&cell, Origin::Imported)
    }

    fn flagged(cells: &[CellView]) -> Vec<u32> {
        cells.iter().filter(|c| c.warnings.iter().any(|w| w.code == "prefill_jump")).map(|c| c.context).collect()
    }

    #[test]
    fn a_prefill_far_beyond_the_other_contexts_is_flagged() {
        let mut cells = vec![prefill(1024, 900.0), prefill(2048, 1000.0), prefill(4096, 3500.0), prefill(8192, 950.0)];
        flag_prefill_outliers(&mut cells);
        assert_eq!(flagged(&cells), [4096]);
        // A curve that rises (2x per step) is no jump; two points are too few to judge.
        let mut rising = vec![prefill(512, 300.0), prefill(1024, 600.0), prefill(2048, 1200.0)];
        flag_prefill_outliers(&mut rising);
        assert!(flagged(&rising).is_empty());
        let mut two = vec![prefill(512, 100.0), prefill(1024, 1000.0)];
        flag_prefill_outliers(&mut two);
        assert!(flagged(&two).is_empty());
    }
}

impl CellView {
    /// Figure `metric` of the cell with its uncertainty: the cell's spread where it has one,
    /// else the figure alone (n = 1).
    pub fn estimate(&self, metric: super::metric::Metric) -> Option<super::interval::Estimate> {
        let from_spread = self.spread.as_deref().and_then(|s| s.get(metric).cloned());
        from_spread.or_else(|| {
            let value = metric.of_figures(&self.figures)?;
            Some(super::interval::Estimate {
                value,
                n: 1,
                basis: super::interval::Basis::Repetitions,
                interval: None,
                cv: None,
                samples: Vec::new(),
            })
        })
    }
}

//! Trends: runs of the same model, device, device count, engine and quantization form a
//! series, ordered by engine version (release order) then date. Each step between
//! neighbours is compared; a key figure that moved past the threshold makes the step a
//! regression or an improvement.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use super::capacity::RunCapacity;
use super::compare::{comparable, comparison_slug};
use super::group::unique_slug;
use super::interval::{mean_estimate, Basis};
use super::pareto::{ConfigKey, ConfigKeyRef};
use super::run::RunView;
use super::verdict::{change, judge_all, Between, Change, Verdict};
use super::version::compare_versions;
use crate::format::{SiteSettings, Status};

/// The figures a series charts and judges each step by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyFigure {
    PeakTotalTps,
    SingleRequestTps,
    /// Prefill tok/s at the series' shortest prefill context.
    PrefillTps,
    /// Tok/s per device at capacity under the site's first SLO, at the series' shortest
    /// decode context.
    CapacityPerDevice,
}

impl KeyFigure {
    pub const ALL: [KeyFigure; 4] =
        [KeyFigure::PeakTotalTps, KeyFigure::SingleRequestTps, KeyFigure::PrefillTps, KeyFigure::CapacityPerDevice];
}

#[derive(Debug, Clone, Serialize)]
pub struct FigureChange {
    pub figure: KeyFigure,
    /// The two versions' figures (means over their runs) with the verdict on the change.
    #[serde(flatten)]
    pub change: Change,
}

/// How one step of a series reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    Improvement,
    Regression,
    /// Some key figures better, some worse.
    Mixed,
    /// Every figure judged, none past its threshold.
    Unchanged,
    /// Some figure neither changed nor shown unchanged: more runs would tell.
    Inconclusive,
    /// A side has a single run: the changes are shown, not judged.
    NotJudged,
}

impl Trend {
    /// A step the page points out (and links to its comparison).
    pub fn flagged(self) -> bool {
        matches!(self, Trend::Improvement | Trend::Regression | Trend::Mixed)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SeriesStep {
    /// Indexes into `SiteModel::runs`: the last run of the older version and the first of
    /// the newer one.
    pub from: usize,
    pub to: usize,
    /// Runs of each version (the n of each side).
    pub n_from: u32,
    pub n_to: u32,
    pub trend: Trend,
    pub changes: Vec<FigureChange>,
    /// The slug of the two runs' comparison page (`compare::comparison_slug`), for a step
    /// that is not `Unchanged`; `None` too when they share no cell. The comparison itself is
    /// made when its page is rendered (kept in memory for every step, comparisons were most
    /// of a large site's memory).
    pub comparison: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SeriesView {
    /// The page's folder name, unique across series.
    pub slug: String,
    pub model_id: String,
    pub key: ConfigKey,
    /// The benchmark tool: a trend compares runs measured the same way.
    pub bench_tool: String,
    /// In release order, then by date, then id.
    pub runs: Vec<usize>,
    /// The context `KeyFigure::PrefillTps` is read at, if any run has a valid prefill.
    pub prefill_context: Option<u32>,
    /// `values[f][i]`: key figure `KeyFigure::ALL[f]` of `runs[i]`.
    pub values: Vec<Vec<Option<f64>>>,
    pub steps: Vec<SeriesStep>,
    /// Where a key figure's level changed over the whole history (`change_points`).
    pub change_points: Vec<SeriesChangePoint>,
}

/// A lasting change of one key figure over a series' runs: before and after hold two runs
/// or more each, so one run apart is never one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesChangePoint {
    pub figure: KeyFigure,
    /// The series position (into `runs`) of the first run after the change.
    pub at: usize,
    /// Runs of the segment before and after it that have the figure.
    pub n_before: usize,
    pub n_after: usize,
    /// The change of the level (geometric means) in percent, with its 95% interval.
    pub pct: f64,
    pub lo_pct: f64,
    pub hi_pct: f64,
}

pub use super::run_history::MIN_SEGMENT_RUNS;

/// The change points of each key figure over the series' runs (`stats::change_points` on
/// the logs of the runs that have it), kept where the change is at least `threshold_pct`.
pub fn change_points(values: &[Vec<Option<f64>>], threshold_pct: f64) -> Vec<SeriesChangePoint> {
    let mut out = Vec::new();
    for (&figure, row) in KeyFigure::ALL.iter().zip(values) {
        let present: Vec<(usize, f64)> =
            row.iter().enumerate().filter_map(|(i, v)| v.filter(|v| *v > 0.0).map(|v| (i, v.ln()))).collect();
        let logs: Vec<f64> = present.iter().map(|p| p.1).collect();
        for cp in crate::stats::change_points(&logs, MIN_SEGMENT_RUNS, super::verdict::ALPHA) {
            let t = crate::stats::t_quantile(cp.df, 1.0 - super::verdict::ALPHA / 2.0);
            let pct = |d: f64| (d.exp() - 1.0) * 100.0;
            let c = SeriesChangePoint {
                figure,
                at: present[cp.at].0,
                n_before: cp.at - cp.from,
                n_after: cp.to - cp.at,
                pct: pct(cp.d),
                lo_pct: pct(cp.d - t * cp.se),
                hi_pct: pct(cp.d + t * cp.se),
            };
            if c.pct.abs() >= threshold_pct {
                out.push(c);
            }
        }
    }
    out.sort_by_key(|c| (c.at, c.figure));
    out
}

/// Every series of two or more runs (one run is no trend), by model then configuration.
pub fn series(runs: &[RunView], capacity: &[RunCapacity], settings: &SiteSettings) -> Vec<SeriesView> {
    // Keyed by borrowed (model id, configuration, tool): the series come out in the order of
    // their owned keys without cloning five strings per run.
    let mut by_key: BTreeMap<(&str, ConfigKeyRef, &str, String), Vec<usize>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let m = &r.manifest;
        let key = (m.model.id.as_str(), ConfigKey::borrowed(r), m.bench_tool.name.as_str(), setup_key(r));
        by_key.entry(key).or_default().push(i);
    }
    let releases = release_places(runs);
    // Each series compares its neighbours (the costly part): one series per core.
    let groups: Vec<_> = by_key.into_iter().filter(|(_, members)| members.len() > 1).collect();
    let mut all: Vec<SeriesView> = groups
        .into_par_iter()
        .map(|((model_id, key, bench_tool, _), mut members)| {
            members.sort_by(|&a, &b| {
                let (ra, rb) = (&runs[a], &runs[b]);
                releases[a].cmp(&releases[b]).then_with(|| ra.started.cmp(&rb.started)).then_with(|| ra.id.cmp(&rb.id))
            });
            let mut s = one_series((runs, capacity), model_id.to_string(), ConfigKey::owned(key), members, settings);
            s.bench_tool = bench_tool.to_string();
            s
        })
        .collect();
    let mut used = BTreeMap::new();
    for s in &mut all {
        s.slug = unique_slug(&mut used, &series_name(s));
    }
    all
}

/// `previous` (the series of the same runs in the same places) with each series `touched`
/// says holds a changed run compared again; the others are kept as they were.
pub fn mend(
    previous: Vec<SeriesView>,
    runs: &[RunView],
    capacity: &[RunCapacity],
    touched: &(dyn Fn(&[usize]) -> bool + Sync),
    settings: &SiteSettings,
) -> Vec<SeriesView> {
    previous
        .into_par_iter()
        .map(|s| {
            if !touched(&s.runs) {
                return s;
            }
            let SeriesView { slug, model_id, key, bench_tool, runs: members, .. } = s;
            let mut fresh = one_series((runs, capacity), model_id, key, members, settings);
            fresh.slug = slug;
            fresh.bench_tool = bench_tool;
            fresh
        })
        .collect()
}

/// Each run's engine version as a place in release order (`compare_versions` of every
/// distinct version once, not of every pair of runs).
fn release_places(runs: &[RunView]) -> Vec<u32> {
    let mut versions: Vec<&str> = runs.iter().map(|r| r.manifest.engine.version.as_str()).collect();
    versions.sort_unstable();
    versions.dedup();
    versions.sort_by(|a, b| compare_versions(a, b));
    let place: std::collections::HashMap<&str, u32> =
        versions.iter().enumerate().map(|(i, &v)| (v, i as u32)).collect();
    runs.iter().map(|r| place[r.manifest.engine.version.as_str()]).collect()
}

/// What else must match for two runs to be one configuration over time: the server's
/// launch command, the bench settings (matrix, window, max output, workload) and the
/// settings the server reported (`server_settings`). A run measured
/// otherwise starts a series of its own, so a settings change is never read as a version
/// step.
pub fn setup_key(r: &RunView) -> String {
    let m = &r.manifest;
    let s = &m.settings;
    format!(
        "{}\u{1f}{:?}\u{1f}{:?}\u{1f}{:?}\u{1f}{}\u{1f}{}\u{1f}{:?}{}",
        m.launch_command.as_deref().unwrap_or(""),
        s.contexts,
        s.concurrency,
        s.prefill_contexts,
        s.duration_s,
        s.max_output_tokens,
        s.decode_test,
        // Another workload is another setup; runs without reuse keep their key.
        s.prefix_reuse_pct.map(|p| format!("\u{1f}reuse {p}")).unwrap_or_default()
            + &s.turns.map(|t| format!("\u{1f}turns {t}")).unwrap_or_default()
            // Other server settings are another configuration; runs that recorded none keep
            // their key.
            + &m.server_settings.iter().map(|(k, v)| format!("\u{1f}{k}={v}")).collect::<String>()
    )
}

/// The runs of each exact configuration (model, device and count, engine, version and
/// quantization, benchmark tool, launch command and bench settings) measured more than
/// once: repetitions of one measurement, which their pages link and whose spread is the
/// noise between runs. Linear in the runs however many share a configuration.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ConfigGroups {
    /// Each group's runs in run order; groups in order of their first run.
    pub groups: Vec<Vec<usize>>,
    /// By run index: its group, if its configuration was measured more than once.
    pub group_of: Vec<Option<usize>>,
}

impl ConfigGroups {
    pub fn of(runs: &[RunView]) -> ConfigGroups {
        let mut by_key: std::collections::HashMap<(&str, ConfigKeyRef, &str, &str, String), Vec<usize>> =
            std::collections::HashMap::new();
        for (i, r) in runs.iter().enumerate() {
            let m = &r.manifest;
            let key = (
                m.model.id.as_str(),
                ConfigKey::borrowed(r),
                m.engine.version.as_str(),
                m.bench_tool.name.as_str(),
                setup_key(r),
            );
            by_key.entry(key).or_default().push(i);
        }
        let mut groups: Vec<Vec<usize>> = by_key.into_values().filter(|g| g.len() > 1).collect();
        groups.sort_unstable_by_key(|g| g[0]);
        let mut group_of = vec![None; runs.len()];
        for (n, g) in groups.iter().enumerate() {
            for &i in g {
                group_of[i] = Some(n);
            }
        }
        ConfigGroups { groups, group_of }
    }

    /// How many other runs share run `i`'s configuration.
    pub fn others(&self, i: usize) -> usize {
        self.group_of.get(i).copied().flatten().map_or(0, |g| self.groups[g].len() - 1)
    }

    /// At most `n` of the other runs of run `i`'s configuration, those nearest it in run
    /// order: what its page names (a page that named all would grow with the site, and
    /// each new run would change every one).
    pub fn nearest(&self, i: usize, n: usize) -> Vec<usize> {
        let Some(g) = self.group_of.get(i).copied().flatten() else { return Vec::new() };
        let members = &self.groups[g];
        let at = members.binary_search(&i).unwrap_or(0);
        let from = at.saturating_sub(n / 2).min(members.len().saturating_sub(n + 1));
        members[from..members.len().min(from + n + 1)].iter().copied().filter(|&j| j != i).take(n).collect()
    }
}

/// The comparisons the flagged steps of `series` link to and `listed` does not hold: (run
/// a, run b, the comparison's slug), once each.
pub fn step_pairs<'a>(series: &'a [SeriesView], listed: &[super::Comparison]) -> Vec<(usize, usize, &'a str)> {
    let mut seen: std::collections::HashSet<&str> = listed.iter().map(|l| l.slug.as_str()).collect();
    let mut out = Vec::new();
    for s in series {
        for step in s.steps.iter().filter(|s| s.trend.flagged()) {
            if let Some(slug) = &step.comparison {
                if seen.insert(slug) {
                    out.push((step.from, step.to, slug.as_str()));
                }
            }
        }
    }
    out
}

/// `site`: the runs and their capacity (computed once per analysis), by run index.
fn one_series(
    (runs, capacity): (&[RunView], &[RunCapacity]),
    model_id: String,
    key: ConfigKey,
    members: Vec<usize>,
    settings: &SiteSettings,
) -> SeriesView {
    let threshold = settings.change_threshold_pct;
    let prefill_context = members
        .iter()
        .flat_map(|&i| &runs[i].prefill)
        .filter(|c| c.status == Status::Valid && c.figures.prompt_tps.is_some())
        .map(|c| c.context)
        .min();
    // Capacity under the first SLO at the shortest decode context the runs share.
    let first_slo = settings.slos().first().map(|(name, _)| name.to_string());
    let decode_context = members.iter().flat_map(|&i| capacity[i].contexts.iter().map(|x| x.context)).min();
    let capacity_of = |n: usize| {
        let at = capacity[members[n]].at(decode_context?, first_slo.as_deref()?)?;
        at.point.as_ref().map(|p| p.tps_per_device)
    };
    let values: Vec<Vec<Option<f64>>> = KeyFigure::ALL
        .iter()
        .map(|&f| {
            (0..members.len())
                .map(|n| match f {
                    KeyFigure::CapacityPerDevice => capacity_of(n),
                    _ => key_figure(&runs[members[n]], f, prefill_context),
                })
                .collect()
        })
        .collect();
    // Runs of one engine version are repetitions of one point; steps join the points.
    let version = |n: usize| runs[members[n]].manifest.engine.version.as_str();
    let mut points: Vec<std::ops::Range<usize>> = Vec::new();
    for n in 0..members.len() {
        match points.last_mut() {
            Some(p) if version(p.start) == version(n) => p.end = n + 1,
            _ => points.push(n..n + 1),
        }
    }
    let steps = points
        .windows(2)
        .map(|pair| {
            let changes = changes(&values, &pair[0], &pair[1], threshold);
            let trend = trend(&changes);
            let (from, to) = (members[pair[0].end - 1], members[pair[1].start]);
            // Only a flagged step links to its comparison.
            let (a, b) = (&runs[from], &runs[to]);
            let comparison = (trend.flagged() && comparable(a, b)).then(|| comparison_slug(&a.id, &b.id));
            let (n_from, n_to) = (pair[0].len() as u32, pair[1].len() as u32);
            SeriesStep { from, to, n_from, n_to, trend, changes, comparison }
        })
        .collect();
    SeriesView {
        slug: String::new(),
        model_id,
        key,
        bench_tool: String::new(),
        runs: members,
        prefill_context,
        change_points: change_points(&values, threshold),
        values,
        steps,
    }
}

/// `acme/Tiny-1B vllm FP8 4x H200`: what the slug is made from.
fn series_name(s: &SeriesView) -> String {
    let k = &s.key;
    format!("{} {} {} {}x {}", s.model_id, k.engine, k.quantization.as_deref().unwrap_or(""), k.count, k.device)
}

pub fn key_figure(run: &RunView, figure: KeyFigure, prefill_context: Option<u32>) -> Option<f64> {
    match figure {
        KeyFigure::PeakTotalTps => run.headline.peak_total_tps,
        KeyFigure::SingleRequestTps => run.headline.single_request_tps,
        KeyFigure::PrefillTps => {
            run.prefill_cell(prefill_context?).filter(|c| c.status == Status::Valid).and_then(|c| c.figures.prompt_tps)
        }
        // Needs the site's SLOs: `one_series` reads it from the runs' capacity.
        KeyFigure::CapacityPerDevice => None,
    }
}

/// The key figures of the step from the runs `a` to the runs `b` (positions in the
/// series) present on both sides, judged together; higher is better for all three.
fn changes(
    values: &[Vec<Option<f64>>],
    a: &std::ops::Range<usize>,
    b: &std::ops::Range<usize>,
    threshold: f64,
) -> Vec<FigureChange> {
    let side = |row: &[Option<f64>], r: &std::ops::Range<usize>| {
        let v: Vec<f64> = row[r.clone()].iter().flatten().copied().collect();
        mean_estimate(&v, Basis::Repetitions)
    };
    let mut out: Vec<FigureChange> = KeyFigure::ALL
        .iter()
        .zip(values)
        .filter_map(|(&figure, row)| {
            Some(FigureChange {
                figure,
                change: change(&side(row, a)?, &side(row, b)?, true, threshold, Between::Nothing)?,
            })
        })
        .collect();
    judge_all(&mut out.iter_mut().map(|c| &mut c.change).collect::<Vec<_>>());
    out
}

fn trend(changes: &[FigureChange]) -> Trend {
    let is = |v: Verdict| changes.iter().any(|c| c.change.verdict == v);
    match (is(Verdict::Faster), is(Verdict::Slower)) {
        (true, true) => Trend::Mixed,
        (true, false) => Trend::Improvement,
        (false, true) => Trend::Regression,
        _ if changes.iter().all(|c| c.change.verdict == Verdict::Single) => Trend::NotJudged,
        _ if is(Verdict::Inconclusive) => Trend::Inconclusive,
        _ => Trend::Unchanged,
    }
}

#[cfg(test)]
mod change_point_tests {
    use super::*;

    fn row(levels: &[f64]) -> Vec<Option<f64>> {
        // A wobble of about ±1% around each level, the same on every call.
        levels.iter().enumerate().map(|(i, l)| Some(l * (1.0 + ((i * 7919) % 13) as f64 / 650.0 - 0.01))).collect()
    }

    #[test]
    fn a_lasting_step_is_a_change_point_at_its_first_run_and_an_outlier_is_not() {
        let mut peak: Vec<f64> = vec![1000.0; 12];
        peak.extend(vec![850.0; 10]);
        let mut single = vec![50.0; 22];
        single[7] = 30.0; // one slow run
        let values = vec![row(&peak), row(&single), vec![None; 22], vec![None; 22]];
        let cps = change_points(&values, 5.0);
        assert_eq!(cps.len(), 1, "{cps:?}");
        let c = &cps[0];
        assert_eq!((c.figure, c.at, c.n_before, c.n_after), (KeyFigure::PeakTotalTps, 12, 12, 10));
        assert!((c.pct + 15.0).abs() < 1.5 && c.lo_pct < c.pct && c.pct < c.hi_pct, "{c:?}");
    }

    #[test]
    fn a_step_below_the_threshold_is_not_kept() {
        let mut peak: Vec<f64> = vec![1000.0; 12];
        peak.extend(vec![970.0; 10]);
        let values = vec![row(&peak), vec![None; 22], vec![None; 22], vec![None; 22]];
        assert!(change_points(&values, 5.0).is_empty());
    }
}

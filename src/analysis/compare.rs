//! Two runs side by side: launch commands diffed flag by flag, every decode cell as A -> B
//! with its change, judged only past a threshold and by each metric's good direction, and a
//! per-GPU view.

use serde::{Deserialize, Serialize};

pub use super::command::{diff_commands, FlagChange, FlagDiff};
use super::figures::Figures;
use super::run::{CellView, RunView};
use crate::format::Status;

/// Changes smaller than this (percent) are not coloured, unless `site.toml` says otherwise.
pub const DEFAULT_THRESHOLD_PCT: f64 = crate::format::settings::DEFAULT_CHANGE_THRESHOLD_PCT;

#[derive(Debug, Clone, Serialize)]
pub struct MetricDelta {
    pub a: f64,
    pub b: f64,
    /// (b - a) / a x 100.
    pub pct: f64,
    pub verdict: Verdict,
}

/// How a change reads, by the metric's good direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    /// Inside the threshold.
    Neutral,
}

/// A cell of one side of a comparison: its status, or missing where the run has no cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellState {
    Valid,
    Looped,
    OverCapacity,
    Error,
    Missing,
}

impl CellState {
    pub fn of(cell: Option<&CellView>) -> CellState {
        match cell.map(|c| c.status) {
            None => CellState::Missing,
            Some(Status::Valid) => CellState::Valid,
            Some(Status::Looped) => CellState::Looped,
            Some(Status::OverCapacity) => CellState::OverCapacity,
            Some(Status::Error) => CellState::Error,
        }
    }

    /// The name in data and downloads (`over_capacity`, `missing`).
    pub fn as_str(self) -> &'static str {
        match self {
            CellState::Valid => "valid",
            CellState::Looped => "looped",
            CellState::OverCapacity => "over_capacity",
            CellState::Error => "error",
            CellState::Missing => "missing",
        }
    }
}

/// Why two runs cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incomparable {
    SameRun(String),
    NothingInCommon(String, String),
}

impl std::fmt::Display for Incomparable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Incomparable::SameRun(id) => write!(f, "cannot compare run {id} with itself: name two different runs"),
            Incomparable::NothingInCommon(a, b) => write!(
                f,
                "runs {a} and {b} have no cell in common (no context and concurrency measured in both): there is nothing to compare"
            ),
        }
    }
}

impl std::error::Error for Incomparable {}

#[derive(Debug, Clone, Serialize)]
pub struct CellPair {
    pub context: u32,
    pub concurrency: u32,
    pub a_status: CellState,
    pub b_status: CellState,
    pub a_total_tps: Option<f64>,
    pub b_total_tps: Option<f64>,
    /// Present only when both cells are valid.
    pub total: Option<MetricDelta>,
    pub per_request: Option<MetricDelta>,
    pub ttft: Option<MetricDelta>,
    pub tbt: Option<MetricDelta>,
    pub total_per_gpu: Option<MetricDelta>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PairRow {
    pub context: u32,
    pub cells: Vec<CellPair>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PrefillPair {
    pub context: u32,
    pub a_status: CellState,
    pub b_status: CellState,
    pub a_tps: Option<f64>,
    pub b_tps: Option<f64>,
    pub tps: Option<MetricDelta>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// `<a>--<b>`: the comparison's folder name.
    pub slug: String,
    pub a_id: String,
    pub b_id: String,
    pub a_gpus: u32,
    pub b_gpus: u32,
    pub threshold_pct: f64,
    pub command: Vec<FlagDiff>,
    pub columns: Vec<u32>,
    pub rows: Vec<PairRow>,
    pub prefill: Vec<PrefillPair>,
    pub common_cells: usize,
    /// The runs' figures came about differently (another tool, imported against measured,
    /// or another decode test): a change may be the method's, not the server's.
    pub method_differs: bool,
}

/// Whether two runs' figures were made the same way.
pub fn same_method(a: &RunView, b: &RunView) -> bool {
    let (ma, mb) = (&a.manifest, &b.manifest);
    ma.origin == mb.origin
        && ma.bench_tool.name == mb.bench_tool.name
        && ma.settings.decode_test == mb.settings.decode_test
}

fn valid_figures(cell: Option<&CellView>) -> Option<&Figures> {
    cell.filter(|v| v.status == Status::Valid).map(|v| &v.figures)
}

/// A change from `a` to `b`; `higher_is_better` says which way is good.
pub fn delta(a: f64, b: f64, higher_is_better: bool, threshold_pct: f64) -> Option<MetricDelta> {
    if !(a.is_finite() && b.is_finite()) || a == 0.0 {
        return None;
    }
    let pct = (b - a) / a * 100.0;
    let verdict = if pct.abs() < threshold_pct {
        Verdict::Neutral
    } else if (pct > 0.0) == higher_is_better {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    Some(MetricDelta { a, b, pct, verdict })
}

fn both(a: Option<f64>, b: Option<f64>, up: bool, t: f64) -> Option<MetricDelta> {
    delta(a?, b?, up, t)
}

pub fn comparison_slug(a: &str, b: &str) -> String {
    format!("{a}--{b}")
}

/// Compares run `a` (the baseline) with run `b`.
/// Whether `compare(a, b, _)` succeeds (two different runs with a cell in common), without
/// building the comparison.
pub fn comparable(a: &RunView, b: &RunView) -> bool {
    let (ma, mb) = (&a.manifest.settings, &b.manifest.settings);
    let in_grid = |ctx: u32, c: u32| {
        (ma.contexts.contains(&ctx) || mb.contexts.contains(&ctx))
            && (ma.concurrency.contains(&c) || mb.concurrency.contains(&c))
    };
    let decode =
        a.decode.iter().any(|x| in_grid(x.context, x.concurrency) && b.decode_cell(x.context, x.concurrency).is_some());
    a.id != b.id && (decode || a.prefill.iter().any(|x| b.prefill_cell(x.context).is_some()))
}

pub fn compare(a: &RunView, b: &RunView, threshold_pct: f64) -> Result<Comparison, Incomparable> {
    if a.id == b.id {
        return Err(Incomparable::SameRun(a.id.clone()));
    }
    let (ma, mb) = (&a.manifest.settings, &b.manifest.settings);
    let contexts = union(&ma.contexts, &mb.contexts);
    let columns = union(&ma.concurrency, &mb.concurrency);
    let rows: Vec<PairRow> = contexts
        .iter()
        .map(|&ctx| PairRow {
            context: ctx,
            cells: columns.iter().map(|&c| cell_pair(a, b, ctx, c, threshold_pct)).collect(),
        })
        .collect();
    let prefill_contexts: Vec<u32> = a.prefill.iter().chain(&b.prefill).map(|p| p.context).collect();
    let prefill: Vec<PrefillPair> =
        union(&prefill_contexts, &[]).iter().map(|&ctx| prefill_pair(a, b, ctx, threshold_pct)).collect();
    let present = |x: CellState, y: CellState| x != CellState::Missing && y != CellState::Missing;
    let common = rows.iter().flat_map(|r| &r.cells).filter(|c| present(c.a_status, c.b_status)).count()
        + prefill.iter().filter(|p| present(p.a_status, p.b_status)).count();
    if common == 0 {
        return Err(Incomparable::NothingInCommon(a.id.clone(), b.id.clone()));
    }
    Ok(Comparison {
        slug: comparison_slug(&a.id, &b.id),
        a_id: a.id.clone(),
        b_id: b.id.clone(),
        a_gpus: a.manifest.hardware.count,
        b_gpus: b.manifest.hardware.count,
        threshold_pct,
        command: diff_commands(
            a.manifest.launch_command.as_deref().unwrap_or(""),
            b.manifest.launch_command.as_deref().unwrap_or(""),
        ),
        columns,
        rows,
        prefill,
        common_cells: common,
        method_differs: !same_method(a, b),
    })
}

/// The sorted values of both lists, once each.
fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut all: Vec<u32> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Decode cell `ctx` x `c` of both runs; changes only where both are valid.
fn cell_pair(a: &RunView, b: &RunView, ctx: u32, c: u32, t: f64) -> CellPair {
    let (ca, cb) = (a.decode_cell(ctx, c), b.decode_cell(ctx, c));
    let (fa, fb) = (valid_figures(ca), valid_figures(cb));
    let pair = |f: &dyn Fn(&Figures) -> Option<f64>, up: bool| match (fa, fb) {
        (Some(x), Some(y)) => both(f(x), f(y), up, t),
        _ => None,
    };
    let gpus = |r: &RunView| r.manifest.hardware.count.max(1) as f64;
    let (ga, gb) = (gpus(a), gpus(b));
    CellPair {
        context: ctx,
        concurrency: c,
        a_status: CellState::of(ca),
        b_status: CellState::of(cb),
        a_total_tps: fa.and_then(|f| f.total_tps),
        b_total_tps: fb.and_then(|f| f.total_tps),
        total: pair(&|f| f.total_tps, true),
        per_request: pair(&|f| f.per_request_tps, true),
        ttft: pair(&|f| f.ttft_ms, false),
        tbt: pair(&|f| f.tbt_ms, false),
        total_per_gpu: match (fa, fb) {
            (Some(x), Some(y)) => both(x.total_tps.map(|v| v / ga), y.total_tps.map(|v| v / gb), true, t),
            _ => None,
        },
    }
}

fn prefill_pair(a: &RunView, b: &RunView, ctx: u32, t: f64) -> PrefillPair {
    let (pa, pb) = (a.prefill_cell(ctx), b.prefill_cell(ctx));
    let tps = |p: Option<&CellView>| p.filter(|p| p.status == Status::Valid).and_then(|p| p.figures.prompt_tps);
    PrefillPair {
        context: ctx,
        a_status: CellState::of(pa),
        b_status: CellState::of(pb),
        a_tps: tps(pa),
        b_tps: tps(pb),
        tps: both(tps(pa), tps(pb), true, t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_follow_each_metrics_good_direction() {
        let up = delta(100.0, 110.0, true, 5.0).unwrap();
        assert_eq!((up.verdict, up.pct.round()), (Verdict::Better, 10.0));
        assert_eq!(delta(100.0, 104.0, true, 5.0).unwrap().verdict, Verdict::Neutral);
        assert_eq!(delta(100.0, 90.0, true, 5.0).unwrap().verdict, Verdict::Worse);
        // Latency: lower is better.
        assert_eq!(delta(100.0, 80.0, false, 5.0).unwrap().verdict, Verdict::Better);
        assert_eq!(delta(100.0, 120.0, false, 5.0).unwrap().verdict, Verdict::Worse);
        assert!(delta(0.0, 1.0, true, 5.0).is_none());
    }
}

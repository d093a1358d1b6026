//! Answers at the reader's latency targets. Per run, context and service-level objective
//! (`site.toml`'s `[slo.*]`): the highest measured concurrency whose cell meets the SLO, its
//! total tok/s, tok/s per device and cost per million output tokens. Per run and context:
//! tok/s per device at each interactivity level (tok/s per user), read off the run's
//! throughput-against-interactivity curve between the two measured cells around it, never
//! past the measured range.

use serde::Serialize;

use super::interval::{Basis, Estimate};
use super::pareto::usd_per_mtok;
use super::run::{CellView, RunView};
use crate::format::settings::Slo;
use crate::format::{SiteSettings, Status};

/// Why a cell does not meet an SLO.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Miss {
    /// Looped, failed, over capacity: no figures.
    NotValid,
    /// The cell has no figure at the SLO's percentile: too few requests for it (10 for p90,
    /// 100 for p99), or the source reported none.
    NoPercentile { percentile: u32, needs: u32 },
    /// Time between tokens at the percentile above 1000 / min tok/s per user.
    TooSlow { tbt_ms: f64, bound_ms: f64 },
    /// Decode TTFT at the percentile above the bound.
    TtftTooLong { ttft_ms: f64, bound_ms: f64 },
    /// The context's prefill TTFT above the bound, or no prefill measured for it.
    PrefillTooLong { ttft_ms: Option<f64>, bound_ms: f64 },
    /// The point meets the bound but the interval across repetitions reaches past it.
    IntervalCrosses { bound_ms: f64 },
    /// The context has no valid cell at all.
    NoValidCell,
    /// Cells meet the SLO, but none of them reports a total tok/s above zero to serve as
    /// the capacity.
    NoThroughput { meeting: u32 },
}

/// The least cell figures an SLO reads, from a cell and its context's prefill cell.
fn at_percentile(cell: &CellView, p: u32) -> (Option<f64>, Option<f64>) {
    let f = &cell.figures;
    match p {
        50 => (f.tbt_ms.or(f.per_request_tps.filter(|v| *v > 0.0).map(|v| 1000.0 / v)), f.ttft_ms),
        90 => (f.tbt_p90_ms, f.ttft_p90_ms),
        _ => (f.tbt_p99_ms, f.ttft_p99_ms),
    }
}

/// Whether `cell` meets `slo`; `prefill` is the run's prefill cell at the cell's context.
/// Where the cell has repetitions, the upper end of each latency's interval must meet the
/// bound too (median figures carry intervals; p90 and p99 are judged on their means).
pub fn check(cell: &CellView, slo: &Slo, prefill: Option<&CellView>) -> Result<(), Miss> {
    if cell.status != Status::Valid {
        return Err(Miss::NotValid);
    }
    let needs = crate::stats::min_requests_for_percentile(slo.percentile as f64) as u32;
    let (tbt, ttft) = at_percentile(cell, slo.percentile);
    let bound_ms = 1000.0 / slo.min_tps_per_user;
    let Some(tbt) = tbt else { return Err(Miss::NoPercentile { percentile: slo.percentile, needs }) };
    if tbt > bound_ms {
        return Err(Miss::TooSlow { tbt_ms: tbt, bound_ms });
    }
    let spread = cell.spread.as_deref().filter(|_| slo.percentile == 50);
    let upper =
        |e: Option<&Estimate>| e.filter(|e| e.basis == Basis::Repetitions).and_then(|e| e.interval).map(|i| i.hi);
    if upper(spread.and_then(|s| s.get(super::metric::Metric::TbtMs))).is_some_and(|hi| hi > bound_ms) {
        return Err(Miss::IntervalCrosses { bound_ms });
    }
    if let Some(bound_ms) = slo.max_ttft_ms {
        let Some(ttft) = ttft else { return Err(Miss::NoPercentile { percentile: slo.percentile, needs }) };
        if ttft > bound_ms {
            return Err(Miss::TtftTooLong { ttft_ms: ttft, bound_ms });
        }
        if upper(spread.and_then(|s| s.get(super::metric::Metric::TtftMs))).is_some_and(|hi| hi > bound_ms) {
            return Err(Miss::IntervalCrosses { bound_ms });
        }
    }
    if let Some(bound_ms) = slo.max_prefill_ttft_ms {
        let ttft_ms = prefill.filter(|p| p.status == Status::Valid).and_then(|p| p.figures.ttft_ms);
        if ttft_ms.is_none_or(|t| t > bound_ms) {
            return Err(Miss::PrefillTooLong { ttft_ms, bound_ms });
        }
    }
    Ok(())
}

/// The highest concurrency meeting an SLO at one context, with what it serves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityPoint {
    pub concurrency: u32,
    pub total_tps: f64,
    pub tps_per_device: f64,
    /// Where `site.toml` prices the device.
    pub usd_per_mtok: Option<f64>,
    /// Repetitions behind the cell.
    pub repetitions: u32,
}

/// One SLO at one context of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloCapacity {
    pub slo: String,
    pub point: Option<CapacityPoint>,
    /// Without a point: why the least loaded valid cell misses (none when no cell is valid).
    pub miss: Option<Miss>,
}

/// Throughput per device at one interactivity level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LevelPoint {
    /// Tok/s per user.
    pub level: f64,
    /// `None` outside the measured range.
    pub tps_per_device: Option<f64>,
    /// Read between two measured cells (not a cell's own figure).
    pub interpolated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextCapacity {
    pub context: u32,
    /// In the site's SLO order.
    pub slos: Vec<SloCapacity>,
    /// In the site's interactivity order.
    pub levels: Vec<LevelPoint>,
    /// The concurrencies whose cells meet the site's first SLO (the heatmap outlines them).
    #[serde(skip_serializing)]
    pub meets_first: Vec<u32>,
}

/// A run's headline numbers: one per context and target.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunCapacity {
    /// The run's decode contexts, ascending.
    pub contexts: Vec<ContextCapacity>,
    /// A rate run's capacity in requests per second, by context and objective.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<super::rates::ContextCapacity>,
}

impl RunCapacity {
    pub fn at(&self, context: u32, slo: &str) -> Option<&SloCapacity> {
        self.contexts.iter().find(|c| c.context == context)?.slos.iter().find(|s| s.slo == slo)
    }
}

/// Every run's capacity, by run index.
pub fn all(runs: &[RunView], settings: &SiteSettings) -> Vec<RunCapacity> {
    use rayon::prelude::*;
    runs.par_iter().map(|r| run_capacity(r, settings)).collect()
}

pub fn run_capacity(run: &RunView, settings: &SiteSettings) -> RunCapacity {
    let slos = settings.slos();
    let devices = run.manifest.hardware.count.max(1);
    let price = settings.price(&run.manifest.hardware.device);
    let contexts = run
        .heatmap
        .rows
        .iter()
        .map(|row| {
            let cells: Vec<&CellView> = run.row_cells(row).flatten().collect();
            let prefill = run.prefill_cell(row.context);
            ContextCapacity {
                context: row.context,
                slos: slos.iter().map(|(name, slo)| slo_capacity(name, slo, &cells, prefill, devices, price)).collect(),
                levels: levels(&cells, devices, &settings.interactivity),
                meets_first: slos
                    .first()
                    .map(|(_, slo)| {
                        cells.iter().filter(|c| check(c, slo, prefill).is_ok()).map(|c| c.concurrency).collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    // A replayed trace offers one rate, its own: no capacity between rates to read.
    let replay = run.manifest.traffic.as_ref().is_some_and(|t| t.trace.is_some());
    let rates = if replay { Vec::new() } else { super::rates::capacities(&run.rates, &settings.slos()) };
    RunCapacity { contexts, rates }
}

/// `cells` are one context's decode cells by concurrency.
fn slo_capacity(
    name: &str,
    slo: &Slo,
    cells: &[&CellView],
    prefill: Option<&CellView>,
    devices: u32,
    price: Option<f64>,
) -> SloCapacity {
    let meeting: Vec<&&CellView> = cells.iter().filter(|c| check(c, slo, prefill).is_ok()).collect();
    // The highest meeting cell that has the figure: a meeting cell without a total tok/s
    // (a source that reports none, or 0) does not hide the lower cells that have one.
    let point = meeting.iter().rev().find_map(|c| {
        let total = c.figures.total_tps.filter(|t| *t > 0.0 && t.is_finite())?;
        Some(CapacityPoint {
            concurrency: c.concurrency,
            total_tps: total,
            tps_per_device: total / devices as f64,
            usd_per_mtok: price.map(|p| usd_per_mtok(p, devices, total)),
            repetitions: c.repetitions,
        })
    });
    let miss = match (&point, cells.iter().find(|c| c.status == Status::Valid)) {
        (Some(_), _) => None,
        _ if !meeting.is_empty() => Some(Miss::NoThroughput { meeting: meeting.len() as u32 }),
        (None, Some(least)) => check(least, slo, prefill).err(),
        (None, None) => Some(Miss::NoValidCell),
    };
    SloCapacity { slo: name.to_string(), point, miss }
}

/// Tok/s per device at each level, read off the curve of consecutive valid cells (by
/// concurrency) whose per-request tok/s lie on either side of it; where several segments
/// reach a level, the best of them. A cell that failed (looped, error, over capacity) breaks
/// the curve: nothing is read across it.
pub fn levels(cells: &[&CellView], devices: u32, levels: &[f64]) -> Vec<LevelPoint> {
    let point = |c: &CellView| {
        let p = (c.figures.per_request_tps?, c.figures.total_tps? / devices.max(1) as f64);
        (c.status == Status::Valid && p.0.is_finite() && p.1.is_finite()).then_some(p)
    };
    let mut pieces: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for c in cells {
        match point(c) {
            Some(p) => pieces.last_mut().expect("never empty").push(p),
            None if c.status != Status::Valid => pieces.push(Vec::new()),
            None => {}
        }
    }
    levels.iter().map(|&level| read_level(&pieces, level)).collect()
}

fn read_level(pieces: &[Vec<(f64, f64)>], level: f64) -> LevelPoint {
    let mut best: Option<(f64, bool)> = None;
    let mut take = |y: f64, interpolated: bool| {
        if best.is_none_or(|(b, _)| y > b) {
            best = Some((y, interpolated));
        }
    };
    for &(x, y) in pieces.iter().flatten() {
        if x == level {
            take(y, false);
        }
    }
    for w in pieces.iter().flat_map(|p| p.windows(2)) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let (lo, hi) = (x0.min(x1), x0.max(x1));
        if lo < level && level < hi {
            take(y0 + (y1 - y0) * (level - x0) / (x1 - x0), true);
        }
    }
    LevelPoint { level, tps_per_device: best.map(|b| b.0), interpolated: best.is_some_and(|b| b.1) }
}

/// One context and SLO of two runs compared: each run's capacity (concurrency, tok/s per
/// device) and the change, shown and not judged (a capacity is a concurrency the matrix
/// measured, not an estimate with an interval).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityPair {
    pub context: u32,
    pub slo: String,
    pub a: Option<(u32, f64)>,
    pub b: Option<(u32, f64)>,
    /// (b - a) / a x 100, where both have a capacity.
    pub pct: Option<f64>,
}

/// Both runs' capacity at every context they share, SLO by SLO in the site's order.
pub fn pairs(a: &RunCapacity, b: &RunCapacity, slos: &[&str]) -> Vec<CapacityPair> {
    let point = |c: &RunCapacity, ctx: u32, slo: &str| {
        c.at(ctx, slo).and_then(|s| s.point.as_ref()).map(|p| (p.concurrency, p.tps_per_device))
    };
    let mut rows = Vec::new();
    for ctx in a.contexts.iter().map(|c| c.context).filter(|x| b.contexts.iter().any(|c| c.context == *x)) {
        for slo in slos {
            let (pa, pb) = (point(a, ctx, slo), point(b, ctx, slo));
            let pct = pa.zip(pb).filter(|(x, _)| x.1 > 0.0).map(|(x, y)| (y.1 - x.1) / x.1 * 100.0);
            rows.push(CapacityPair { context: ctx, slo: slo.to_string(), a: pa, b: pb, pct });
        }
    }
    rows
}

/// A run's capacity at one SLO and context, as a board lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetEntry {
    /// Index into `SiteModel::runs`.
    pub run: usize,
    pub point: CapacityPoint,
}

/// One SLO at one context across the site: runs ranked by capacity per device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetBoard {
    pub slo: String,
    pub context: u32,
    /// Most tok/s per device first (ties in run order).
    pub entries: Vec<TargetEntry>,
    /// Runs measured at the context with no cell meeting the SLO.
    pub none: Vec<usize>,
    /// Rate runs' capacity in requests per second at the context, most first (ties in run
    /// order): a board's second table, apart from the matrix runs' tok/s.
    pub rates: Vec<RateEntry>,
}

/// One rate run's capacity on a board.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateEntry {
    pub run: usize,
    pub capacity: super::rates::RateCapacity,
}

/// Every (SLO, context) board of the site, SLOs in the site's order, then by context.
pub fn boards(capacity: &[RunCapacity], slos: &[&str]) -> Vec<TargetBoard> {
    let mut contexts: Vec<u32> = capacity
        .iter()
        .flat_map(|c| c.contexts.iter().map(|x| x.context).chain(c.rates.iter().map(|r| r.context)))
        .collect();
    contexts.sort_unstable();
    contexts.dedup();
    let mut out = Vec::new();
    for slo in slos {
        for &context in &contexts {
            let mut board = TargetBoard { slo: slo.to_string(), context, entries: vec![], none: vec![], rates: vec![] };
            for (run, c) in capacity.iter().enumerate() {
                let at = c.rates.iter().find(|r| r.context == context && r.slo == *slo).and_then(|r| r.capacity);
                board.rates.extend(at.map(|capacity| RateEntry { run, capacity }));
            }
            board.rates.sort_by(|a, b| b.capacity.rps().total_cmp(&a.capacity.rps()).then(a.run.cmp(&b.run)));
            for (run, c) in capacity.iter().enumerate() {
                match c.at(context, slo).map(|s| &s.point) {
                    Some(Some(point)) => board.entries.push(TargetEntry { run, point: point.clone() }),
                    Some(None) => board.none.push(run),
                    None => {}
                }
            }
            board
                .entries
                .sort_by(|a, b| b.point.tps_per_device.total_cmp(&a.point.tps_per_device).then(a.run.cmp(&b.run)));
            out.push(board);
        }
    }
    out
}

/// The front page's answer for one model: at the context most of its runs share, the best
/// configuration at each SLO.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelBest {
    /// Index into `SiteModel::models`.
    pub model: usize,
    pub context: u32,
    /// The model's runs measured at that context.
    pub runs_at_context: usize,
    /// In the site's SLO order: the run with the most tok/s per device meeting it, if any.
    pub slos: Vec<(String, Option<TargetEntry>)>,
}

/// For each model (`members[m]`: its runs), the best configuration at each SLO.
pub fn best_per_model(members: &[&[usize]], capacity: &[RunCapacity], slos: &[&str]) -> Vec<ModelBest> {
    members
        .iter()
        .enumerate()
        .filter_map(|(model, runs)| {
            let mut counts: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
            for &r in runs.iter() {
                for c in &capacity[r].contexts {
                    *counts.entry(c.context).or_default() += 1;
                }
            }
            // The most shared context; among equals the shortest (the one most sites measure).
            let (&context, &runs_at_context) = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
            let slos = slos
                .iter()
                .map(|slo| {
                    let best = runs
                        .iter()
                        .filter_map(|&r| {
                            Some(TargetEntry { run: r, point: capacity[r].at(context, slo)?.point.clone()? })
                        })
                        .max_by(|a, b| {
                            a.point.tps_per_device.total_cmp(&b.point.tps_per_device).then(b.run.cmp(&a.run))
                        });
                    (slo.to_string(), best)
                })
                .collect();
            Some(ModelBest { model, context, runs_at_context, slos })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::figures::Figures;
    use crate::analysis::run::CellView;
    use crate::analysis::FigureSource;
    use crate::format::Phase;

    fn cell(c: u32, per_request: f64, total: f64, tbt_ms: Option<f64>, ttft_ms: f64) -> CellView {
        CellView {
            phase: Phase::Decode,
            context: 8192,
            prompt_tokens: None,
            concurrency: c,
            status: Status::Valid,
            source: FigureSource::Reported,
            figures: Figures {
                per_request_tps: Some(per_request),
                total_tps: Some(total),
                tbt_ms,
                ttft_ms: Some(ttft_ms),
                ..Figures::default()
            },
            warnings: vec![],
            over_capacity: None,
            loop_finding: None,
            workload: Default::default(),
            error: None,
            repetitions: 1,
            processes: 1,
            spread: None,
        }
    }

    fn slo(min: f64, percentile: u32, ttft: Option<f64>) -> Slo {
        Slo {
            description: String::new(),
            min_tps_per_user: min,
            percentile,
            max_ttft_ms: ttft,
            max_prefill_ttft_ms: None,
        }
    }

    #[test]
    fn a_cell_meets_or_says_why_not() {
        let c = cell(8, 25.0, 200.0, Some(40.0), 900.0);
        assert_eq!(check(&c, &slo(20.0, 50, Some(1000.0)), None), Ok(()));
        // 40 ms between tokens is 25 tok/s: too slow for 30.
        assert!(matches!(check(&c, &slo(30.0, 50, None), None), Err(Miss::TooSlow { tbt_ms, .. }) if tbt_ms == 40.0));
        assert!(matches!(check(&c, &slo(20.0, 50, Some(500.0)), None), Err(Miss::TtftTooLong { .. })));
        // No p90 (too few requests, or not reported): not met, and it says so.
        assert_eq!(check(&c, &slo(20.0, 90, None), None), Err(Miss::NoPercentile { percentile: 90, needs: 10 }));
        // Exactly on the bound meets it.
        assert_eq!(check(&cell(1, 25.0, 25.0, Some(50.0), 10.0), &slo(20.0, 50, None), None), Ok(()));
        // Without a time between tokens, the median per-request rate stands for it.
        assert_eq!(check(&cell(1, 25.0, 25.0, None, 10.0), &slo(20.0, 50, None), None), Ok(()));
        let mut bad = cell(1, 25.0, 25.0, Some(40.0), 10.0);
        bad.status = Status::Looped;
        assert_eq!(check(&bad, &slo(1.0, 50, None), None), Err(Miss::NotValid));
        let strict = Slo { max_prefill_ttft_ms: Some(100.0), ..slo(1.0, 50, None) };
        assert!(matches!(check(&c, &strict, None), Err(Miss::PrefillTooLong { ttft_ms: None, .. })));
    }

    #[test]
    fn capacity_is_the_highest_concurrency_that_meets() {
        let cells = [
            cell(1, 60.0, 60.0, Some(16.0), 100.0),
            cell(4, 40.0, 160.0, Some(25.0), 200.0),
            cell(16, 15.0, 240.0, Some(66.0), 900.0),
        ];
        let refs: Vec<&CellView> = cells.iter().collect();
        let s = slo_capacity("chat", &slo(20.0, 50, None), &refs, None, 2, Some(3.6));
        let p = s.point.unwrap();
        assert_eq!((p.concurrency, p.total_tps, p.tps_per_device), (4, 160.0, 80.0));
        // $3.60 per device-hour x 2 devices / 3600 s / 160 tok/s x 1e6 = $12.50 per million.
        assert!((p.usd_per_mtok.unwrap() - 12.5).abs() < 1e-9);
        let none = slo_capacity("fast", &slo(100.0, 50, None), &refs, None, 2, None);
        assert_eq!(none.point, None);
        assert!(matches!(none.miss, Some(Miss::TooSlow { .. })), "the least loaded cell says why");
    }

    /// The highest meeting cell without a total tok/s does not hide the lower ones, and "none"
    /// always says the true reason.
    #[test]
    fn capacity_needs_the_figure_and_says_why_there_is_none() {
        let mut top = cell(4, 40.0, 0.0, Some(25.0), 200.0);
        top.figures.total_tps = None;
        let cells = [cell(1, 60.0, 60.0, Some(16.0), 100.0), top];
        let refs: Vec<&CellView> = cells.iter().collect();
        let s = slo_capacity("chat", &slo(20.0, 50, None), &refs, None, 1, None);
        assert_eq!(s.point.map(|p| (p.concurrency, p.total_tps)), Some((1, 60.0)));
        // Valid cells at 0 tok/s that meet it: they meet, but give no capacity.
        let zero = [cell(1, 60.0, 0.0, Some(16.0), 100.0), cell(2, 60.0, 0.0, Some(16.0), 100.0)];
        let refs: Vec<&CellView> = zero.iter().collect();
        let s = slo_capacity("chat", &slo(20.0, 50, None), &refs, None, 1, None);
        assert_eq!((s.point, s.miss), (None, Some(Miss::NoThroughput { meeting: 2 })));
        // No valid cell: said so, not left empty.
        let mut looped = cell(1, 60.0, 60.0, Some(16.0), 100.0);
        looped.status = Status::Looped;
        let refs = vec![&looped];
        assert_eq!(slo_capacity("chat", &slo(20.0, 50, None), &refs, None, 1, None).miss, Some(Miss::NoValidCell));
    }

    /// c1 valid, c2 looped, c4 valid: no level is read across the looped cell.
    #[test]
    fn levels_are_never_read_across_a_failed_cell() {
        let mut looped = cell(2, 50.0, 100.0, None, 1.0);
        looped.status = Status::Looped;
        let cells = [cell(1, 60.0, 60.0, None, 1.0), looped, cell(4, 40.0, 160.0, None, 1.0)];
        let refs: Vec<&CellView> = cells.iter().collect();
        let got = levels(&refs, 1, &[50.0, 60.0, 40.0]);
        assert_eq!(got[0].tps_per_device, None, "50 lies between c1 and c4, across the looped c2");
        assert_eq!((got[1].tps_per_device, got[1].interpolated), (Some(60.0), false));
        assert_eq!((got[2].tps_per_device, got[2].interpolated), (Some(160.0), false));
    }

    #[test]
    fn levels_interpolate_inside_the_measured_range_only() {
        let cells = [cell(1, 60.0, 60.0, None, 1.0), cell(4, 40.0, 160.0, None, 1.0), cell(16, 10.0, 160.0, None, 1.0)];
        let refs: Vec<&CellView> = cells.iter().collect();
        let got = levels(&refs, 1, &[5.0, 10.0, 20.0, 50.0, 80.0]);
        assert_eq!(got[0].tps_per_device, None, "below the least measured: not extrapolated");
        assert_eq!((got[1].tps_per_device, got[1].interpolated), (Some(160.0), false), "on a point");
        // Between 4 (40, 160) and 16 (10, 160): 160 flat.
        assert_eq!((got[2].tps_per_device, got[2].interpolated), (Some(160.0), true));
        // Between 1 (60, 60) and 4 (40, 160): at 50, halfway, 110.
        assert_eq!((got[3].tps_per_device, got[3].interpolated), (Some(110.0), true));
        assert_eq!(got[4].tps_per_device, None, "above the most measured");
    }
}

//! Two runs side by side: launch commands diffed flag by flag, every decode cell as A -> B
//! with its change, judged only past a threshold and by each metric's good direction, and a
//! per-GPU view.

use serde::{Deserialize, Serialize};

pub use super::command::{diff_commands, FlagChange, FlagDiff};
use super::interval::{Estimate, Interval};
use super::metric::Metric;
use super::run::{CellView, RunView};
use super::run_noise::{NoiseBasis, RunNoise};
use super::verdict::{change, judge_all, Between};
use crate::format::{Phase, Status};

/// Changes smaller than this (percent) are not called faster or slower, unless `site.toml`
/// says otherwise.
pub const DEFAULT_THRESHOLD_PCT: f64 = crate::format::settings::DEFAULT_CHANGE_THRESHOLD_PCT;

pub use super::verdict::{Change, Verdict};

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
    /// Runs of two workloads (prefix reuse, turns): their figures differ for that alone.
    TwoWorkloads((String, crate::format::Workload), (String, crate::format::Workload)),
    /// Runs of two traffic shapes (a closed loop, an arrival process, a trace slice).
    TrafficShapes((String, String), (String, String)),
}

/// How a run's streams were fed, in words.
fn workload_words(w: &crate::format::Workload) -> String {
    let reuse = w
        .prefix_reuse_pct
        .map_or_else(|| "with one prompt a stream".to_string(), |p| format!("with {p}% prefix reuse"));
    reuse + &w.turns.map(|t| format!(" in {t}-turn conversations")).unwrap_or_default()
}

impl std::fmt::Display for Incomparable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Incomparable::SameRun(id) => write!(f, "cannot compare run {id} with itself: name two different runs"),
            Incomparable::NothingInCommon(a, b) => write!(
                f,
                "runs {a} and {b} have no cell in common (no context and concurrency measured in both): there is nothing to compare"
            ),
            Incomparable::TrafficShapes((a, sa), (b, sb)) => write!(
                f,
                "{a} was measured with {sa} and {b} with {sb}: two traffic shapes, whose figures differ for that alone; compare runs of one shape"
            ),
            Incomparable::TwoWorkloads((a, wa), (b, wb)) => write!(
                f,
                "{a} was measured {} and {b} {}: two workloads, whose figures differ for that alone; compare runs of one workload",
                workload_words(wa),
                workload_words(wb)
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
    pub total: Option<Change>,
    pub per_request: Option<Change>,
    pub ttft: Option<Change>,
    pub tbt: Option<Change>,
    pub total_per_gpu: Option<Change>,
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
    pub tps: Option<Change>,
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
    /// How many judged figures read each way.
    pub tally: VerdictTally,
    /// Cells valid in A that B measured and that failed there (error, looped, over capacity):
    /// the worst regression, with no figure to judge.
    pub stopped: Vec<StoppedCell>,
    /// Both runs' capacity under the site's SLOs (`with_capacity`; empty until then).
    pub capacity: Vec<super::capacity::CapacityPair>,
    /// Rate runs: each (context, rate) cell of either run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<super::compare_rates::RatePair>,
    /// Rate runs: the capacity in requests/s at each objective, both runs (`with_capacity`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rate_capacity: Vec<super::compare_rates::RateCapacityPair>,
    /// The run-to-run noise every judged figure allows for, and where it comes from.
    pub noise: RunNoise,
    /// The other work beside each run on the load generator's machine, in cores, where
    /// the two differ by `MACHINE_LOAD_DIFFERS_CORES` or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<(f64, f64)>,
    /// The server settings that differ between the runs (as each server said them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<crate::format::SettingChange>,
}

/// Other work (busy cores beyond the client and the server) that differs this much between
/// two runs is named beside their verdicts.
pub const MACHINE_LOAD_DIFFERS_CORES: f64 = 0.5;

/// Both runs' other work where it differs enough to name.
fn background(a: &RunView, b: &RunView) -> Option<(f64, f64)> {
    let other = |r: &RunView| r.machine.and_then(|m| m.other_cores);
    let (x, y) = (other(a)?, other(b)?);
    ((x - y).abs() >= MACHINE_LOAD_DIFFERS_CORES).then_some((x, y))
}

impl Comparison {
    /// The comparison with both runs' capacity under `slos`, from the analysis's capacity.
    pub fn with_capacity(
        mut self,
        a: &super::capacity::RunCapacity,
        b: &super::capacity::RunCapacity,
        slos: &[&str],
    ) -> Comparison {
        self.capacity = super::capacity::pairs(a, b, slos);
        // Capacities in requests/s: a family of their own, as the per-device view is.
        self.rate_capacity = super::compare_rates::capacity_pairs(&a.rates, &b.rates, self.threshold_pct, &self.noise);
        judge_all(&mut self.rate_capacity.iter_mut().filter_map(|c| c.change.as_mut()).collect::<Vec<_>>());
        self
    }
}

/// A cell that worked in A and failed in B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StoppedCell {
    pub phase: crate::format::Phase,
    pub context: u32,
    pub concurrency: u32,
    pub b_status: CellState,
}

impl CellState {
    /// Measured and failed: the cell has no figure.
    pub fn failed(self) -> bool {
        matches!(self, CellState::Looped | CellState::OverCapacity | CellState::Error)
    }
}

/// Every cell valid in A and failed in B, prefill first, in page order.
fn stopped_cells(rows: &[PairRow], prefill: &[PrefillPair]) -> Vec<StoppedCell> {
    use crate::format::Phase;
    let broke = |a: CellState, b: CellState| a == CellState::Valid && b.failed();
    let prefill = prefill.iter().filter(|p| broke(p.a_status, p.b_status)).map(|p| StoppedCell {
        phase: Phase::Prefill,
        context: p.context,
        concurrency: 1,
        b_status: p.b_status,
    });
    let decode = rows.iter().flat_map(|r| &r.cells).filter(|c| broke(c.a_status, c.b_status)).map(|c| StoppedCell {
        phase: Phase::Decode,
        context: c.context,
        concurrency: c.concurrency,
        b_status: c.b_status,
    });
    prefill.chain(decode).collect()
}

/// The verdicts of a comparison's figures, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VerdictTally {
    pub faster: usize,
    pub slower: usize,
    pub no_change: usize,
    pub inconclusive: usize,
    pub single: usize,
}

impl VerdictTally {
    fn count(changes: &[&mut Change]) -> VerdictTally {
        let mut t = VerdictTally::default();
        for c in changes {
            *match c.verdict {
                Verdict::Faster => &mut t.faster,
                Verdict::Slower => &mut t.slower,
                Verdict::NoChange => &mut t.no_change,
                Verdict::Inconclusive => &mut t.inconclusive,
                Verdict::Single => &mut t.single,
            } += 1;
        }
        t
    }
}

/// Whether two runs' figures were made the same way.
pub fn same_method(a: &RunView, b: &RunView) -> bool {
    let (ma, mb) = (&a.manifest, &b.manifest);
    ma.origin == mb.origin
        && ma.bench_tool.name == mb.bench_tool.name
        && ma.settings.decode_test == mb.settings.decode_test
}

fn valid_cell(cell: Option<&CellView>) -> Option<&CellView> {
    cell.filter(|v| v.status == Status::Valid)
}

/// An estimate divided by a device count (per-GPU figures).
fn per_device(e: Estimate, devices: f64) -> Estimate {
    Estimate {
        value: e.value / devices,
        interval: e.interval.map(|i| Interval { lo: i.lo / devices, hi: i.hi / devices, ..i }),
        samples: e.samples.iter().map(|v| v / devices).collect(),
        ..e
    }
}

pub fn comparison_slug(a: &str, b: &str) -> String {
    crate::units::bounded_component(&format!("{a}--{b}")).into_owned()
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

/// `noise`: the run-to-run noise between the two (`run_noise`), added to each judged
/// figure's repetitions.
pub fn compare(a: &RunView, b: &RunView, threshold_pct: f64, noise: RunNoise) -> Result<Comparison, Incomparable> {
    if a.id == b.id {
        return Err(Incomparable::SameRun(a.id.clone()));
    }
    let (ta, tb) = (a.manifest.traffic.as_ref(), b.manifest.traffic.as_ref());
    if let Some((sa, sb)) = super::compare_rates::shapes_differ(ta, tb) {
        return Err(Incomparable::TrafficShapes((a.id.clone(), sa), (b.id.clone(), sb)));
    }
    let (ma, mb) = (&a.manifest.settings, &b.manifest.settings);
    if ma.workload() != mb.workload() {
        return Err(Incomparable::TwoWorkloads((a.id.clone(), ma.workload()), (b.id.clone(), mb.workload())));
    }
    let contexts = union(&ma.contexts, &mb.contexts);
    let columns = union(&ma.concurrency, &mb.concurrency);
    let rows: Vec<PairRow> = contexts
        .iter()
        .map(|&ctx| PairRow {
            context: ctx,
            cells: columns.iter().map(|&c| cell_pair(a, b, (ctx, c), threshold_pct, &noise)).collect(),
        })
        .collect();
    let mut rates = super::compare_rates::rate_pairs(a, b, threshold_pct, &noise);
    let prefill_contexts: Vec<u32> = a.prefill.iter().chain(&b.prefill).map(|p| p.context).collect();
    let prefill: Vec<PrefillPair> =
        union(&prefill_contexts, &[]).iter().map(|&ctx| prefill_pair(a, b, ctx, threshold_pct, &noise)).collect();
    let present = |x: CellState, y: CellState| x != CellState::Missing && y != CellState::Missing;
    let common = rows.iter().flat_map(|r| &r.cells).filter(|c| present(c.a_status, c.b_status)).count()
        + prefill.iter().filter(|p| present(p.a_status, p.b_status)).count()
        + rates.iter().filter(|r| ![r.a_state, r.b_state].contains(&super::compare_rates::RateState::Missing)).count();
    if common == 0 {
        return Err(Incomparable::NothingInCommon(a.id.clone(), b.id.clone()));
    }
    let (mut rows, mut prefill) = (rows, prefill);
    let tally = judge(&mut rows, &mut prefill, &mut rates);
    let stopped = stopped_cells(&rows, &prefill);
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
        tally,
        stopped,
        capacity: Vec::new(),
        rates,
        rate_capacity: Vec::new(),
        noise,
        background: background(a, b),
        settings: crate::format::settings_changes(&a.manifest.server_settings, &b.manifest.server_settings),
    })
}

/// How one cell of a comparison reads, all its judged figures together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CellVerdict {
    Faster,
    Slower,
    /// Some figures faster, some slower.
    Mixed,
    NoChange,
    Inconclusive,
    Single,
}

impl CellVerdict {
    /// From the verdicts of a cell's figures (`None` when it has none).
    pub fn of<'a>(changes: impl IntoIterator<Item = &'a Change>) -> Option<CellVerdict> {
        let verdicts: Vec<Verdict> = changes.into_iter().map(|c| c.verdict).collect();
        let any = |v: Verdict| verdicts.contains(&v);
        Some(match (any(Verdict::Faster), any(Verdict::Slower)) {
            _ if verdicts.is_empty() => return None,
            (true, true) => CellVerdict::Mixed,
            (true, false) => CellVerdict::Faster,
            (false, true) => CellVerdict::Slower,
            _ if verdicts.iter().all(|v| *v == Verdict::Single) => CellVerdict::Single,
            _ if any(Verdict::Inconclusive) || any(Verdict::Single) => CellVerdict::Inconclusive,
            _ => CellVerdict::NoChange,
        })
    }
}

impl Comparison {
    /// Every cell with a verdict: (`prefill` / `decode`, context, concurrency, verdict), in
    /// page order, prefill first.
    pub fn cell_verdicts(&self) -> Vec<(crate::format::Phase, u32, u32, CellVerdict)> {
        use crate::format::Phase;
        let prefill =
            self.prefill.iter().filter_map(|p| Some((Phase::Prefill, p.context, 1, CellVerdict::of(p.tps.as_ref())?)));
        let decode = self.rows.iter().flat_map(|r| &r.cells).filter_map(|c| {
            let figures = [&c.total, &c.per_request, &c.ttft, &c.tbt].into_iter().flatten();
            Some((Phase::Decode, c.context, c.concurrency, CellVerdict::of(figures)?))
        });
        prefill.chain(decode).collect()
    }

    /// Every rate cell with a verdict: (context, rate, verdict), in page order.
    pub fn rate_verdicts(&self) -> Vec<(u32, f64, CellVerdict)> {
        self.rates.iter().filter_map(|r| Some((r.context, r.rate_rps, CellVerdict::of(r.changes())?))).collect()
    }

    /// Rate cells A kept up with that B did not (saturated, or failed): (context, rate, B's
    /// state), the regressions no figure shows.
    pub fn rates_lost(&self) -> Vec<(u32, f64, super::compare_rates::RateState)> {
        use super::compare_rates::RateState;
        self.rates
            .iter()
            .filter(|r| r.a_state == RateState::KeptUp && matches!(r.b_state, RateState::Saturated | RateState::Error))
            .map(|r| (r.context, r.rate_rps, r.b_state))
            .collect()
    }
}

/// Every figure of the comparison judged at once (one Benjamini-Hochberg family). The
/// per-device view asks another question of the same totals (which device count serves
/// more per device), so it is a family of its own and not in the tally.
fn judge(
    rows: &mut [PairRow],
    prefill: &mut [PrefillPair],
    rates: &mut [super::compare_rates::RatePair],
) -> VerdictTally {
    let mut family: Vec<&mut Change> = Vec::new();
    family.extend(rates.iter_mut().flat_map(|r| r.changes_mut()));
    let mut per_device: Vec<&mut Change> = Vec::new();
    for c in rows.iter_mut().flat_map(|r| &mut r.cells) {
        family.extend([&mut c.total, &mut c.per_request, &mut c.ttft, &mut c.tbt].into_iter().flatten());
        per_device.extend(c.total_per_gpu.as_mut());
    }
    family.extend(prefill.iter_mut().filter_map(|p| p.tps.as_mut()));
    judge_all(&mut family);
    judge_all(&mut per_device);
    VerdictTally::count(&family)
}

/// The sorted values of both lists, once each.
fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut all: Vec<u32> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Decode cell `ctx` x `c` of both runs; changes only where both are valid.
fn cell_pair(a: &RunView, b: &RunView, (ctx, c): (u32, u32), t: f64, noise: &RunNoise) -> CellPair {
    let (ca, cb) = (a.decode_cell(ctx, c), b.decode_cell(ctx, c));
    let (va, vb) = (valid_cell(ca), valid_cell(cb));
    let at = (Phase::Decode, ctx, c);
    let pair = |m: Metric| change(&va?.estimate(m)?, &vb?.estimate(m)?, m.higher_is_better(), t, of(noise, at, m));
    let gpus = |r: &RunView| r.manifest.hardware.count.max(1) as f64;
    let per_gpu = || {
        let ea = per_device(va?.estimate(Metric::TotalTps)?, gpus(a));
        let eb = per_device(vb?.estimate(Metric::TotalTps)?, gpus(b));
        change(&ea, &eb, true, t, of(noise, at, Metric::TotalTps))
    };
    CellPair {
        context: ctx,
        concurrency: c,
        a_status: CellState::of(ca),
        b_status: CellState::of(cb),
        a_total_tps: va.and_then(|v| v.figures.total_tps),
        b_total_tps: vb.and_then(|v| v.figures.total_tps),
        total: pair(Metric::TotalTps),
        per_request: pair(Metric::PerRequestTps),
        ttft: pair(Metric::TtftMs),
        tbt: pair(Metric::TbtMs),
        total_per_gpu: per_gpu(),
    }
}

/// What separates the two runs beyond their repetitions, for figure `m` of the cell at
/// (phase, context, concurrency; 0 for prefill).
fn of(noise: &RunNoise, (phase, ctx, c): (Phase, u32, u32), m: Metric) -> Between {
    let other = noise.spread.get(&(phase, ctx, c, m)).copied().unwrap_or_default();
    let runs = noise.for_cell((phase, ctx, c, m));
    match (noise.paired, noise.basis) {
        (true, _) => Between::Paired { other, runs },
        (false, NoiseBasis::Processes) => Between::Processes { other },
        (false, _) => runs.map_or(Between::Nothing, |(var_log, df)| Between::Runs { var_log, df }),
    }
}

fn prefill_pair(a: &RunView, b: &RunView, ctx: u32, t: f64, noise: &RunNoise) -> PrefillPair {
    let (pa, pb) = (a.prefill_cell(ctx), b.prefill_cell(ctx));
    let (va, vb) = (valid_cell(pa), valid_cell(pb));
    let m = Metric::PromptTps;
    PrefillPair {
        context: ctx,
        a_status: CellState::of(pa),
        b_status: CellState::of(pb),
        a_tps: va.and_then(|v| v.figures.prompt_tps),
        b_tps: vb.and_then(|v| v.figures.prompt_tps),
        tps: (|| change(&va?.estimate(m)?, &vb?.estimate(m)?, true, t, of(noise, (Phase::Prefill, ctx, 0), m)))(),
    }
}

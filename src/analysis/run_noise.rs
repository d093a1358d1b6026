//! Run-to-run noise: how far a figure moves between runs of one configuration (another
//! server process, another hour) beyond what the repetitions inside each run show. Two runs
//! differ by their repetitions' noise *and* by each run's own level, so a comparison adds
//! twice this variance to the within-run variance of the difference.
//!
//! Estimated on the log scale (relative noise, comparable across cells) from the site's own
//! evidence, a one-way random-effects model fitted by the method of moments: for each cell
//! and figure measured by k >= 2 runs of one exact configuration, the variance of the runs'
//! log means less the mean within-run variance of a mean (repetitions) is the between-run
//! variance, with k - 1 degrees of freedom; cells and configurations are pooled per figure
//! kind. The two runs compared are left out of their own noise, and a configuration's
//! history speaks only through its runs that are alike (`run_history`: outliers left out,
//! the rest split at change points, the variance estimated within segments). Where neither
//! run's configuration has other runs, the site's configurations of the same model and
//! device speak for it, each counted as its own history says. The estimate is moderated
//! by the assumed noise (`change_noise_pct`), worth `ASSUMED_DF` degrees of freedom where
//! it stands alone and `PRIOR_DF` beside evidence (a scaled inverse-chi-square prior, as
//! limma moderates gene-wise variances), so thin evidence neither claims certainty nor is
//! ignored. `docs/src/reference/statistics.md` has the formulas.

use std::collections::HashMap;

use serde::Serialize;

use super::metric::Metric;
use super::run::{CellView, RunView};
use super::run_history::{history, History, LeftOut};
use super::verdict::PooledSpread;
use crate::format::{Phase, Status};

/// What the assumed noise weighs beside evidence, in degrees of freedom: enough that two
/// runs that happen to agree do not claim no noise at all, little enough that a
/// configuration's own runs soon speak for it (`tests/verdict_rates.rs` measured 4: a 10%
/// slowdown found in 20% of comparisons with five runs of history on the simulator's noise,
/// against 80% at 1, with no A/A comparison called at either).
pub const PRIOR_DF: f64 = 1.0;

/// What the assumed noise weighs where no run of the site is evidence: alone, it is the whole
/// estimate, and an interval needs degrees of freedom to be an interval.
pub const ASSUMED_DF: f64 = 4.0;

/// Where a comparison's run-to-run noise comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseBasis {
    /// Other runs of A's or B's exact configuration.
    Configuration,
    /// Every configuration of the site measured more than once (neither A's nor B's is).
    Site,
    /// No configuration is measured twice: the site's `change_noise_pct`.
    Assumed,
    /// Both runs spread their repetitions over server processes of their own
    /// (`--launch --restarts`): each process's mean is a sample, so the repetitions carry
    /// the noise between processes and nothing is added.
    Processes,
}

/// A cell's figure: phase, context, concurrency (0 for a prefill cell), metric.
pub type CellKey = (Phase, u32, u32, Metric);

/// The run-to-run noise of one figure: a run level's standard deviation as a percentage,
/// and the degrees of freedom of its estimate (the assumed noise's included).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FigureNoise {
    pub metric: Metric,
    pub pct: f64,
    pub df: f64,
    /// The variance of a run's level on the log scale.
    #[serde(skip)]
    pub var_log: f64,
}

/// The noise between two runs that a comparison allows for, and what it is made from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunNoise {
    pub basis: NoiseBasis,
    /// Runs the evidence comes from (neither of the two compared) and their configurations.
    pub runs: usize,
    pub configurations: usize,
    /// `change_noise_pct`: what the estimate is moderated towards.
    pub assumed_pct: f64,
    /// Per figure kind, in `Metric::ALL` order (none for `Processes`).
    pub figures: Vec<FigureNoise>,
    /// `Processes`: how many server processes A's and B's repetitions spread over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<(usize, usize)>,
    /// Measured pairwise in one session (`site bench --versus`): each figure is judged on
    /// the differences of its pairs of repetitions.
    pub paired: bool,
    /// Other runs (pairs of runs, when paired) of the same design whose repetitions' spread
    /// is pooled, cell by cell, with the two runs' own.
    pub pooled_runs: usize,
    /// That spread, by cell and figure (log scale).
    #[serde(skip)]
    pub spread: HashMap<CellKey, PooledSpread>,
    /// The ids of the runs the noise comes from, in time order within each configuration.
    pub from: Vec<String>,
    /// Runs of those configurations left out: at another level than the others.
    pub left_out: Vec<LeftOut>,
    /// Change points the configurations' histories were split at.
    pub splits: usize,
    /// Runs' cells (total tok/s and prompt tok/s) left out of the evidence: each at another
    /// level than the same cell of the other runs.
    pub cells_left_out: u32,
    /// Configuration basis: each cell's and figure's own evidence in those runs, which its
    /// noise is moderated with ([`cell_noise`]).
    #[serde(skip)]
    pub cells: HashMap<CellKey, Pool>,
}

impl RunNoise {
    pub fn of(&self, metric: Metric) -> Option<&FigureNoise> {
        self.figures.iter().find(|f| f.metric == metric)
    }

    /// The noise of figure `metric` in the cell `key` (its own runs' spread moderated towards
    /// the figure kind's): (variance of a run's level on the log scale, degrees of freedom).
    pub fn for_cell(&self, key: CellKey) -> Option<(f64, f64)> {
        let f = self.of(key.3)?;
        Some(cell_noise((f.var_log, f.df), self.cells.get(&key).copied().unwrap_or_default()))
    }

    /// The noise one line names: total tok/s's (what most cells judge first).
    pub fn headline_pct(&self) -> f64 {
        self.of(Metric::TotalTps).map_or(self.assumed_pct, |f| f.pct)
    }
}

/// Evidence of one figure kind: the sum over cells of (k - 1) x between-run variance, and
/// of k - 1.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pool {
    pub ss: f64,
    pub df: f64,
    /// Runs' cells left out of the evidence: at another level than the same cell of the
    /// other runs.
    pub left_out: u32,
}

impl Pool {
    pub fn add(self, o: Pool, sign: f64) -> Pool {
        let left_out = if sign > 0.0 { self.left_out + o.left_out } else { self.left_out.saturating_sub(o.left_out) };
        Pool { ss: (self.ss + sign * o.ss).max(0.0), df: (self.df + sign * o.df).max(0.0), left_out }
    }
}

type Pools = [Pool; 5];

fn add_pools(a: Pools, b: &Pools, sign: f64) -> Pools {
    let mut out = a;
    for (o, p) in out.iter_mut().zip(b) {
        *o = o.add(*p, sign);
    }
    out
}

/// The site's configurations measured more than once, with their evidence per figure kind,
/// made once per analysis; `between` answers each comparison from it.
#[derive(Debug, Clone, Default)]
pub struct SiteNoise {
    /// By run index: its configuration among `groups`, if measured more than once.
    group_of: Vec<Option<usize>>,
    /// By run index: the run it was measured beside (`--versus`), when it is in the site.
    partner: Vec<Option<usize>>,
    groups: Vec<Vec<usize>>,
    /// Each group's history with every run in it, and its evidence.
    histories: Vec<History>,
    pools: Vec<Pools>,
    total: Pools,
}

impl SiteNoise {
    /// `groups`: the runs of each configuration measured more than once; `group_of`: each
    /// run's group (`series::ConfigGroups`).
    pub fn new(runs: &[RunView], (groups, group_of): (&[Vec<usize>], &[Option<usize>]), assumed_pct: f64) -> SiteNoise {
        let (groups, group_of) = (groups.to_vec(), group_of.to_vec());
        let floor = outlier_floor(assumed_pct);
        let histories: Vec<History> = groups.iter().map(|g| history(runs, g, floor)).collect();
        let pools: Vec<Pools> = histories.iter().map(|h| history_pools(runs, h, floor)).collect();
        let total = pools.iter().fold(Pools::default(), |t, p| add_pools(t, p, 1.0));
        let index: HashMap<&str, usize> = runs.iter().enumerate().map(|(i, r)| (r.id.as_str(), i)).collect();
        let partner =
            runs.iter().map(|r| r.manifest.paired_with.as_deref().and_then(|id| index.get(id).copied())).collect();
        SiteNoise { group_of, partner, groups, histories, pools, total }
    }

    /// The noise between runs `a` and `b`, from the evidence of every other run: their own
    /// configurations' other runs where there are two or more, else the configurations of
    /// the site that share A's or B's model and device, else the assumed noise.
    pub fn between(&self, runs: &[RunView], (a, b): (usize, usize), assumed_pct: f64) -> RunNoise {
        let mut own: Vec<usize> = [a, b].iter().filter_map(|&i| self.group_of.get(i).copied().flatten()).collect();
        own.dedup();
        let floor = outlier_floor(assumed_pct);
        let reduced: Vec<History> = own
            .iter()
            .map(|&g| self.groups[g].iter().copied().filter(|&i| i != a && i != b).collect::<Vec<_>>())
            .filter(|members| members.len() >= 2)
            .map(|members| history(runs, &members, floor))
            .collect();
        let config = reduced.iter().fold(Pools::default(), |t, h| add_pools(t, &history_pools(runs, h, floor), 1.0));
        let has = |p: &Pools| p.iter().any(|x| x.df > 0.0);
        if has(&config) {
            let mut noise = RunNoise::estimated(NoiseBasis::Configuration, &config, runs, &reduced, assumed_pct);
            for h in &reduced {
                for (k, p) in history_cells(runs, h, floor) {
                    let e = noise.cells.entry(k).or_default();
                    *e = e.add(p, 1.0);
                }
            }
            return noise;
        }
        let kin: Vec<usize> = (0..self.groups.len())
            .filter(|g| !own.contains(g) && [a, b].iter().any(|&i| alike(&runs[i], &runs[self.groups[*g][0]])))
            .collect();
        let site = kin.iter().fold(config, |t, &g| add_pools(t, &self.pools[g], 1.0));
        if has(&site) {
            let histories: Vec<History> = kin.iter().map(|&g| self.histories[g].clone()).chain(reduced).collect();
            return RunNoise::estimated(NoiseBasis::Site, &site, runs, &histories, assumed_pct);
        }
        RunNoise::estimated(NoiseBasis::Assumed, &Pools::default(), runs, &[], assumed_pct)
    }

    /// The noise between any two runs of the site, from every configuration measured more
    /// than once (what a leaderboard's places allow for).
    pub fn site_wide(&self, runs: &[RunView], assumed_pct: f64) -> RunNoise {
        let has = self.total.iter().any(|p| p.df > 0.0);
        let (basis, pools, histories) = if has {
            (NoiseBasis::Site, self.total, self.histories.as_slice())
        } else {
            (NoiseBasis::Assumed, Pools::default(), &[][..])
        };
        RunNoise::estimated(basis, &pools, runs, histories, assumed_pct)
    }

    /// The noise between runs `a` and `b`: their own processes' where both spread their
    /// repetitions over two or more, else `between`'s; paired (`--versus`) when each names
    /// the other. The repetitions' spread of the same design's other runs is pooled with
    /// theirs where the design makes each repetition one draw of the same noise.
    pub fn for_pair(&self, runs: &[RunView], (a, b): (usize, usize), assumed_pct: f64) -> RunNoise {
        let multi = |i: usize| runs[i].manifest.server_processes.len() >= 2;
        let partner = |i: usize| self.partner.get(i).copied().flatten();
        let paired = partner(a) == Some(b) && partner(b) == Some(a);
        let mut noise = if multi(a) && multi(b) {
            let processes = (runs[a].manifest.server_processes.len(), runs[b].manifest.server_processes.len());
            RunNoise::nothing_added(NoiseBasis::Processes, assumed_pct, Some(processes))
        } else {
            self.between(runs, (a, b), assumed_pct)
        };
        noise.paired = paired;
        let others = |i: usize| -> Vec<usize> {
            let group = self.group_of.get(i).copied().flatten();
            group.map_or(Vec::new(), |g| self.groups[g].iter().copied().filter(|&o| o != a && o != b).collect())
        };
        let (spread, pooled_runs) = if paired {
            let others_b = others(b);
            let mut pairs: Vec<(usize, usize)> = others(a)
                .into_iter()
                .filter_map(|i| Some((i, partner(i)?)))
                .filter(|&(i, j)| others_b.contains(&j) && i != j && multi(i) == multi(a) && multi(j) == multi(b))
                .map(|(i, j)| (i.min(j), i.max(j)))
                .collect();
            // A and B of one configuration: each pair is found from either side, once.
            pairs.sort_unstable();
            pairs.dedup();
            (pair_spread(runs, &pairs), pairs.len())
        } else if noise.basis == NoiseBasis::Processes {
            let mut members: Vec<usize> = others(a).into_iter().chain(others(b)).filter(|&i| multi(i)).collect();
            members.sort_unstable();
            members.dedup();
            (process_spread(runs, &members), members.len())
        } else {
            (HashMap::new(), 0)
        };
        noise.spread = spread;
        noise.pooled_runs = pooled_runs;
        noise
    }
}

/// The log samples of a valid cell's figure, when each is positive and there are two or more.
fn log_samples(view: &CellView, metric: Metric) -> Option<Vec<f64>> {
    let e = view.estimate(metric)?;
    let ok = e.samples.len() >= 2 && e.samples.iter().all(|v| v.is_finite() && *v > 0.0);
    ok.then(|| e.samples.iter().map(|v| v.ln()).collect())
}

fn add_spread(out: &mut HashMap<CellKey, PooledSpread>, key: CellKey, values: &[f64]) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let e = out.entry(key).or_default();
    e.ss += values.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
    e.df += n - 1.0;
}

fn key(cell: &CellView, metric: Metric) -> CellKey {
    let concurrency = if cell.phase == Phase::Prefill { 0 } else { cell.concurrency };
    (cell.phase, cell.context, concurrency, metric)
}

fn valid_cells(r: &RunView) -> impl Iterator<Item = &CellView> {
    r.prefill.iter().chain(&r.decode).filter(|c| c.status == Status::Valid)
}

/// The spread of each cell's repetitions in runs spread over server processes.
fn process_spread(runs: &[RunView], members: &[usize]) -> HashMap<CellKey, PooledSpread> {
    let mut out = HashMap::new();
    for cell in members.iter().flat_map(|&i| valid_cells(&runs[i])) {
        for metric in Metric::ALL {
            if let Some(logs) = log_samples(cell, metric) {
                add_spread(&mut out, key(cell, metric), &logs);
            }
        }
    }
    out
}

/// The spread of each cell's paired log differences in pairs of runs measured side by side.
fn pair_spread(runs: &[RunView], pairs: &[(usize, usize)]) -> HashMap<CellKey, PooledSpread> {
    let mut out = HashMap::new();
    for &(i, j) in pairs {
        for cell in valid_cells(&runs[i]) {
            let other = match cell.phase {
                Phase::Prefill => runs[j].prefill_cell(cell.context),
                Phase::Decode => runs[j].decode_cell(cell.context, cell.concurrency),
            };
            let Some(other) = other.filter(|c| c.status == Status::Valid) else { continue };
            for metric in Metric::ALL {
                let (Some(x), Some(y)) = (log_samples(cell, metric), log_samples(other, metric)) else { continue };
                if x.len() == y.len() {
                    let d: Vec<f64> = x.iter().zip(&y).map(|(p, q)| q - p).collect();
                    add_spread(&mut out, key(cell, metric), &d);
                }
            }
        }
    }
    out
}

impl RunNoise {
    /// Each figure kind's noise from `pools` of evidence, the configurations' `histories`,
    /// moderated by the assumed noise.
    fn estimated(
        basis: NoiseBasis,
        pools: &Pools,
        runs: &[RunView],
        histories: &[History],
        assumed_pct: f64,
    ) -> RunNoise {
        let figures = Metric::ALL.iter().zip(pools).map(|(&metric, p)| moderated(metric, *p, assumed_pct)).collect();
        let from: Vec<String> = histories.iter().flat_map(History::used).map(|i| runs[i].id.clone()).collect();
        RunNoise {
            basis,
            runs: from.len(),
            configurations: histories.len(),
            assumed_pct,
            figures,
            from,
            left_out: histories.iter().flat_map(|h| h.left_out.iter().cloned()).collect(),
            splits: histories.iter().map(History::splits).sum(),
            cells_left_out: pools[Metric::TotalTps.index()].left_out + pools[Metric::PromptTps.index()].left_out,
            ..RunNoise::nothing_added(basis, assumed_pct, None)
        }
    }

    /// The repetitions carry the noise (`Processes`).
    fn nothing_added(basis: NoiseBasis, assumed_pct: f64, processes: Option<(usize, usize)>) -> RunNoise {
        RunNoise {
            basis,
            runs: 0,
            configurations: 0,
            assumed_pct,
            figures: Vec::new(),
            processes,
            paired: false,
            pooled_runs: 0,
            spread: HashMap::new(),
            from: Vec::new(),
            left_out: Vec::new(),
            splits: 0,
            cells_left_out: 0,
            cells: HashMap::new(),
        }
    }
}

/// The least robust standard deviation of a run's level before it can be an outlier: half
/// the assumed noise (runs nearly alike would otherwise make a 3% difference an outlier).
pub fn outlier_floor(assumed_pct: f64) -> f64 {
    (1.0 + assumed_pct.max(1.0) / 100.0).ln() / 2.0
}

/// Whether two runs are of one kind for the site-wide noise: one model on one device.
fn alike(x: &RunView, y: &RunView) -> bool {
    x.manifest.model.id == y.manifest.model.id && x.manifest.hardware.device == y.manifest.hardware.device
}

/// The evidence of a history: its segments' between-run evidence, each of two runs or more.
fn history_pools(runs: &[RunView], h: &History, floor: f64) -> Pools {
    h.segments
        .iter()
        .filter(|s| s.len() >= 2)
        .fold(Pools::default(), |t, s| add_pools(t, &group_pools(runs, s, floor), 1.0))
}

/// The evidence moderated by the assumed noise (worth `PRIOR_DF` degrees of freedom beside
/// evidence, `ASSUMED_DF` alone).
pub fn moderated(metric: Metric, p: Pool, assumed_pct: f64) -> FigureNoise {
    let prior = (1.0 + assumed_pct / 100.0).ln();
    let weight = if p.df > 0.0 { PRIOR_DF } else { ASSUMED_DF };
    let df = weight + p.df;
    let var_log = (weight * prior * prior + p.ss) / df;
    FigureNoise { metric, pct: (var_log.sqrt().exp() - 1.0) * 100.0, df, var_log }
}

/// One run's level of a figure in a cell: the mean of its repetitions' logs (a single
/// measurement: the log of its figure) and the variance of that mean within the run.
fn level(view: &CellView, metric: Metric) -> Option<(f64, f64)> {
    let e = view.estimate(metric)?;
    let logs: Vec<f64> = e.samples.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
    if logs.len() >= 2 && logs.len() == e.samples.len() {
        let (mean, sd) = crate::stats::mean_sd(&logs)?;
        return Some((mean, sd * sd / logs.len() as f64));
    }
    (e.value > 0.0 && e.value.is_finite()).then(|| (e.value.ln(), 0.0))
}

/// The between-run evidence of one configuration's runs (a segment of its history), per
/// figure kind ([`pool_levels`] over its cells).
fn group_pools(runs: &[RunView], members: &[usize], floor: f64) -> Pools {
    let levels = cell_levels(runs, members);
    let mut by_metric: [Vec<&[(f64, f64)]>; 5] = Default::default();
    for ((.., metric), v) in &levels {
        by_metric[metric.index()].push(v);
    }
    by_metric.map(|cells| pool_levels(&cells, floor))
}

/// Each cell's and figure's levels in the runs `members` (mean log, within-run variance).
fn cell_levels(runs: &[RunView], members: &[usize]) -> HashMap<CellKey, Vec<(f64, f64)>> {
    let mut levels: HashMap<CellKey, Vec<(f64, f64)>> = HashMap::new();
    for &i in members {
        let r = &runs[i];
        for cell in r.prefill.iter().chain(&r.decode).filter(|c| c.status == Status::Valid) {
            for metric in Metric::ALL {
                if let Some(l) = level(cell, metric) {
                    levels.entry(key(cell, metric)).or_default().push(l);
                }
            }
        }
    }
    levels
}

/// Each cell's own between-run evidence over a history's segments.
fn history_cells(runs: &[RunView], h: &History, floor: f64) -> HashMap<CellKey, Pool> {
    let mut out: HashMap<CellKey, Pool> = HashMap::new();
    for segment in h.segments.iter().filter(|s| s.len() >= 2) {
        for (k, v) in cell_levels(runs, segment) {
            let p = out.entry(k).or_default();
            *p = p.add(pool_levels(&[&v], floor), 1.0);
        }
    }
    out
}

/// A cell's run-to-run noise: its own runs' variance (`cell`) moderated towards its figure
/// kind's (`(var_log, df)`), each weighted by its degrees of freedom, as limma moderates a
/// gene's variance towards the pool. The degrees of freedom stay the figure kind's: the
/// cell's evidence comes from the same runs, so it sharpens the estimate for this cell
/// without making the runs more.
pub fn cell_noise((var_log, df): (f64, f64), cell: Pool) -> (f64, f64) {
    if cell.df <= 0.0 {
        return (var_log, df);
    }
    ((df * var_log + cell.ss) / (df + cell.df), df)
}

/// The between-run evidence of one segment's runs in one figure kind, from each cell's runs'
/// levels (mean log, within-run variance of that mean). Per cell, the method of moments:
/// max(0, var(m_i) - mean(v_i)) on k - 1 degrees of freedom; averaged over the cells,
/// weighted by k - 1. Its degrees of freedom are the runs' (the largest k - 1 of a cell), not
/// the cells' sum: a run's level moves every cell of the run together, so more cells make
/// the average steadier but do not make the runs more (summing them claimed a certainty
/// three runs cannot give). In a cell of three runs or more, a run's level far from the
/// others' (the median/MAD rule of `run_history::outliers`, robust sd floored at `floor`) is
/// left out and counted: a run disturbed in a few of its cells (a job beside part of it)
/// sets no cell's noise.
pub fn pool_levels(cells: &[&[(f64, f64)]], floor: f64) -> Pool {
    let (mut weighted, mut weights, mut df, mut left_out) = (0.0, 0.0, 0.0f64, 0u32);
    let kept: Vec<Vec<(f64, f64)>> = cells
        .iter()
        .map(|v| {
            let far = super::run_history::outliers(&v.iter().map(|l| l.0).collect::<Vec<_>>(), floor);
            left_out += far.len() as u32;
            v.iter().enumerate().filter(|(i, _)| !far.contains(i)).map(|(_, l)| *l).collect()
        })
        .collect();
    for v in kept.iter().filter(|v| v.len() >= 2) {
        let k = v.len() as f64;
        let mean = v.iter().map(|l| l.0).sum::<f64>() / k;
        let spread = v.iter().map(|l| (l.0 - mean).powi(2)).sum::<f64>() / (k - 1.0);
        let within = v.iter().map(|l| l.1).sum::<f64>() / k;
        weighted += (k - 1.0) * (spread - within).max(0.0);
        weights += k - 1.0;
        df = df.max(k - 1.0);
    }
    if weights == 0.0 {
        return Pool { left_out, ..Pool::default() };
    }
    Pool { ss: df * weighted / weights, df, left_out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_evidence_has_the_runs_degrees_of_freedom_not_the_cells() {
        // Three runs in three cells, each cell's levels 0, 0.02, 0.04 (variance 0.0004): the
        // average is 0.0004 on 2 degrees of freedom, however many cells agree.
        let cell = [(0.0, 0.0), (0.02, 0.0), (0.04, 0.0)];
        let p = pool_levels(&[&cell, &cell, &cell], 0.01);
        assert_eq!(p.df, 2.0);
        assert!((p.ss / p.df - 0.0004).abs() < 1e-12, "{p:?}");
        // Within-run noise of a mean is taken off; a cell of one run adds nothing.
        let noisy = [(0.0, 0.0001), (0.02, 0.0001), (0.04, 0.0001)];
        let p = pool_levels(&[&noisy, &[(0.5, 0.0)]], 0.01);
        assert!((p.ss / p.df - 0.0003).abs() < 1e-12, "{p:?}");
        // A run far off in one cell of five runs is left out of that cell, and counted.
        let disturbed = [(0.0, 0.0), (0.01, 0.0), (-0.01, 0.0), (0.005, 0.0), (-0.45, 0.0)];
        let p = pool_levels(&[&disturbed], 0.01);
        assert_eq!((p.left_out, p.df), (1, 3.0));
        assert!(p.ss / p.df < 0.0001, "{p:?}");
    }

    #[test]
    fn no_evidence_is_the_assumed_noise_at_the_priors_weight() {
        let f = moderated(Metric::TotalTps, Pool::default(), 5.0);
        assert!((f.pct - 5.0).abs() < 1e-9, "{}", f.pct);
        assert_eq!(f.df, ASSUMED_DF);
    }

    #[test]
    fn evidence_outweighs_the_assumed_noise_as_it_grows() {
        // Forty degrees of freedom at 1%: the estimate moves most of the way from 5% to 1%.
        let one = (1.01f64).ln();
        let f = moderated(Metric::TotalTps, Pool { ss: 40.0 * one * one, df: 40.0, left_out: 0 }, 5.0);
        let expected = ((PRIOR_DF * 1.05f64.ln().powi(2) + 40.0 * one * one) / (PRIOR_DF + 40.0)).sqrt().exp() - 1.0;
        assert!((f.pct - expected * 100.0).abs() < 1e-9);
        assert!(f.pct > 1.0 && f.pct < 2.0, "{}", f.pct);
        assert_eq!(f.df, PRIOR_DF + 40.0);
    }

    #[test]
    fn pools_subtract_back_to_what_they_were_and_never_below_zero() {
        let a = Pool { ss: 0.25, df: 2.0, left_out: 0 };
        let b = Pool { ss: 0.125, df: 1.0, left_out: 0 };
        assert_eq!(a.add(b, 1.0).add(b, -1.0), a);
        assert_eq!(b.add(a, -1.0), Pool { ss: 0.0, df: 0.0, left_out: 0 });
    }
}

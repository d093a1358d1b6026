//! Leaderboards: for each decode cell key (context x concurrency) and each prefill context,
//! every run that measured it, valid cells ranked, the rest listed apart and never ranked.

use rayon::prelude::*;
use serde::Serialize;

use super::interval::Basis;
use super::metric::Metric;
use super::run::{CellView, RunView};
use super::run_noise::RunNoise;
use crate::format::{Phase, Status, Workload};

/// What a leaderboard ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum BoardKey {
    // Prefill first: boards sort as the run page reads, prefill above decode.
    Prefill {
        context: u32,
    },
    /// `workload`: the cells' prefix reuse and conversation turns, ranked apart.
    Decode {
        context: u32,
        concurrency: u32,
        workload: Workload,
    },
}

impl BoardKey {
    pub fn of(cell: &CellView) -> BoardKey {
        match cell.phase {
            Phase::Prefill => BoardKey::Prefill { context: cell.context },
            Phase::Decode => {
                BoardKey::Decode { context: cell.context, concurrency: cell.concurrency, workload: cell.workload }
            }
        }
    }
}

/// A ranked run: its place and the figures it is ranked by.
#[derive(Debug, Clone, Serialize)]
pub struct BoardEntry {
    /// Index into `SiteModel::runs`.
    pub run: usize,
    /// 1 + the entries whose interval lies wholly above this one's: entries the noise
    /// cannot tell apart share a place (1, 1, 3); equal single measurements too.
    pub rank: usize,
    /// Another entry has the same place ("=2").
    pub shared: bool,
    /// Decode: total tok/s; prefill: prompt tok/s. What the rank is by.
    pub score: f64,
    pub tps_per_device: f64,
    pub per_request_tps: Option<f64>,
    pub ttft_ms: Option<f64>,
    /// The score's 95% interval across repetitions; the score itself for a single
    /// measurement (within-window intervals understate run-to-run noise, so they do not
    /// share places).
    #[serde(skip)]
    pub lo: f64,
    #[serde(skip)]
    pub hi: f64,
}

/// A run whose cell is there but not valid: listed, never ranked.
#[derive(Debug, Clone, Serialize)]
pub struct Unranked {
    pub run: usize,
    pub status: Status,
}

#[derive(Debug, Clone, Serialize)]
pub struct Leaderboard {
    pub key: BoardKey,
    pub ranked: Vec<BoardEntry>,
    pub unranked: Vec<Unranked>,
}

impl Leaderboard {
    /// This run's place and the number ranked, if it is ranked here.
    pub fn rank_of(&self, run: usize) -> Option<(usize, usize)> {
        self.ranked.iter().find(|e| e.run == run).map(|e| (e.rank, self.ranked.len()))
    }
}

/// The interval a valid cell's score is ranked with: across repetitions where it has them.
fn score_interval(cell: &CellView, score: f64) -> (f64, f64) {
    let spread = cell.spread.as_deref();
    let e = match cell.phase {
        Phase::Prefill => spread.and_then(|s| s.get(super::metric::Metric::PromptTps)),
        Phase::Decode => spread.and_then(|s| s.get(super::metric::Metric::TotalTps)),
    };
    match e.filter(|e| e.basis == Basis::Repetitions).and_then(|e| e.interval) {
        Some(i) if i.lo.is_finite() && i.hi.is_finite() => (i.lo.min(score), i.hi.max(score)),
        _ => (score, score),
    }
}

/// What a valid cell is ranked by.
fn score(cell: &CellView) -> Option<f64> {
    match cell.phase {
        Phase::Prefill => cell.figures.prompt_tps,
        Phase::Decode => cell.figures.total_tps,
    }
    .filter(|v| v.is_finite())
}

/// Every leaderboard of the site, by key, its entries not yet placed (`ranked`). `runs` are
/// sorted by id, so ties list in id order.
pub fn leaderboards(runs: &[RunView]) -> Vec<Leaderboard> {
    // Filled from consecutive slices of the runs on every core (half a million cells at
    // 10,000 runs), then joined in run order, so ties still list in id order.
    let slice = runs.len().div_ceil(rayon::current_num_threads().max(1)).max(1);
    let parts: Vec<Boards> = runs
        .par_chunks(slice)
        .enumerate()
        .map(|(n, chunk)| {
            let mut boards = Boards::default();
            for (j, run) in chunk.iter().enumerate() {
                add_run(&mut boards, n * slice + j, run);
            }
            boards
        })
        .collect();
    let mut boards = Boards::default();
    for part in parts {
        append(&mut boards, part);
    }
    let mut boards: Vec<Leaderboard> = boards.into_values().collect();
    boards.sort_unstable_by_key(|b| b.key);
    boards
}

/// Every board's places, allowing for the site's run-to-run noise (`SiteNoise::site_wide`):
/// two runs of one configuration differ by more than their repetitions say, so a place is
/// only given where the difference beats that too.
pub fn ranked(boards: Vec<Leaderboard>, noise: &RunNoise) -> Vec<Leaderboard> {
    ranked_where(boards, noise, |_| true)
}

/// `ranked` for the boards in `touched` only; the others keep their places (a mend whose
/// noise is the one they were numbered with).
pub fn ranked_only(
    boards: Vec<Leaderboard>,
    noise: &RunNoise,
    touched: &rustc_hash::FxHashSet<BoardKey>,
) -> Vec<Leaderboard> {
    ranked_where(boards, noise, |key| touched.contains(key))
}

fn ranked_where(
    boards: Vec<Leaderboard>,
    noise: &RunNoise,
    due: impl Fn(&BoardKey) -> bool + Sync,
) -> Vec<Leaderboard> {
    let sd = |m: Metric| noise.of(m).map_or(0.0, |f| f.var_log.sqrt());
    let (prefill, decode) = (sd(Metric::PromptTps), sd(Metric::TotalTps));
    boards
        .into_par_iter()
        .map(|b| {
            if !due(&b.key) {
                return b;
            }
            let sd = if matches!(b.key, BoardKey::Prefill { .. }) { prefill } else { decode };
            rank(b, sd)
        })
        .collect()
}

/// `leaderboards(runs)` (unranked: `ranked` places them), and the boards it touched, from the
/// boards made before the runs at `changed` (sorted indexes)
/// changed: their entries are taken out everywhere and put back from their cells; the boards
/// they were or are on are the touched ones (`ranked_only` numbers those again). The runs
/// themselves (ids, order) are the same.
pub fn mend(
    boards: Vec<Leaderboard>,
    runs: &[RunView],
    changed: &[usize],
) -> (Vec<Leaderboard>, rustc_hash::FxHashSet<BoardKey>) {
    let is_changed = |run: usize| changed.binary_search(&run).is_ok();
    let mut fresh = Boards::default();
    for &i in changed {
        add_run(&mut fresh, i, &runs[i]);
    }
    let mut boards: Boards = boards.into_iter().map(|b| (b.key, b)).collect();
    let mut touched: rustc_hash::FxHashSet<BoardKey> = fresh.keys().copied().collect();
    for b in boards.values_mut() {
        let before = (b.ranked.len(), b.unranked.len());
        b.ranked.retain(|e| !is_changed(e.run));
        b.unranked.retain(|u| !is_changed(u.run));
        if (b.ranked.len(), b.unranked.len()) != before {
            touched.insert(b.key);
        }
    }
    append(&mut boards, fresh);
    boards.retain(|_, b| !b.ranked.is_empty() || !b.unranked.is_empty());
    let mut boards: Vec<Leaderboard> = boards.into_values().collect();
    boards.sort_unstable_by_key(|b| b.key);
    let boards = boards
        .into_par_iter()
        .map(|mut b| {
            if touched.contains(&b.key) {
                b.unranked.sort_by_key(|u| u.run);
            }
            b
        })
        .collect();
    (boards, touched)
}

type Boards = rustc_hash::FxHashMap<BoardKey, Leaderboard>;

/// `more`'s entries after those of the same boards in `boards`.
fn append(boards: &mut Boards, more: Boards) {
    for (key, mut b) in more {
        let board = boards.entry(key).or_insert_with(|| Leaderboard { key, ranked: vec![], unranked: vec![] });
        board.ranked.append(&mut b.ranked);
        board.unranked.append(&mut b.unranked);
    }
}

/// Run `i`'s cells onto their boards, unranked.
fn add_run(boards: &mut Boards, i: usize, run: &RunView) {
    for cell in run.prefill.iter().chain(&run.decode) {
        let key = BoardKey::of(cell);
        let board = boards.entry(key).or_insert_with(|| Leaderboard { key, ranked: vec![], unranked: vec![] });
        match score(cell).filter(|_| cell.status == Status::Valid) {
            Some(score) => board.ranked.push(BoardEntry {
                run: i,
                rank: 0,
                shared: false,
                lo: score_interval(cell, score).0,
                hi: score_interval(cell, score).1,
                score,
                tps_per_device: score / run.manifest.hardware.count.max(1) as f64,
                per_request_tps: cell.figures.per_request_tps,
                ttft_ms: cell.figures.ttft_ms,
            }),
            None => board.unranked.push(Unranked { run: i, status: cell.status }),
        }
    }
}

/// How many run-to-run standard deviations an entry's interval is widened by: two intervals
/// of z/sqrt(2) standard errors each fail to overlap about as often as a difference beats z
/// of its own (Goldstein and Healy), here at 95%.
const PLACE_Z: f64 = 1.959_963_984_540_054 / std::f64::consts::SQRT_2;

/// An entry's interval with the run-to-run noise `run_sd` (log scale) added in quadrature to
/// its repetitions' interval, on the log scale around its score.
fn widened(e: &BoardEntry, run_sd: f64) -> (f64, f64) {
    if !e.score.is_finite() || e.score <= 0.0 {
        return (e.lo, e.hi);
    }
    let extra = PLACE_Z * run_sd;
    let side = |bound: f64| {
        let own = if bound > 0.0 { (bound / e.score).ln().abs() } else { f64::INFINITY };
        own.hypot(extra)
    };
    (e.score * (-side(e.lo)).exp(), e.score * side(e.hi).exp())
}

/// Numbers the places and sorts by place, best score first within a place (ties by run
/// order). A place is 1 + the number of entries whose lower bound is above this entry's
/// upper bound, each interval allowing for the run-to-run noise `run_sd`: what the noise
/// says is better, not what the point estimates say.
fn rank(mut board: Leaderboard, run_sd: f64) -> Leaderboard {
    let bounds: Vec<(f64, f64)> = board.ranked.iter().map(|e| widened(e, run_sd)).collect();
    let mut lows: Vec<f64> = bounds.iter().map(|b| b.0).collect();
    lows.sort_unstable_by(|a, b| b.total_cmp(a));
    for (e, (_, hi)) in board.ranked.iter_mut().zip(&bounds) {
        e.rank = 1 + lows.partition_point(|lo| *lo > *hi);
    }
    // Ties in run order (the order a whole site fills a board in; a mended board has its
    // changed runs at the end).
    board.ranked.sort_by(|a, b| a.rank.cmp(&b.rank).then(b.score.total_cmp(&a.score)).then(a.run.cmp(&b.run)));
    let ranks: Vec<usize> = board.ranked.iter().map(|e| e.rank).collect();
    for (i, e) in board.ranked.iter_mut().enumerate() {
        e.shared = (i > 0 && ranks[i - 1] == e.rank) || ranks.get(i + 1) == Some(&e.rank);
    }
    board
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(run: usize, score: f64, lo: f64, hi: f64) -> BoardEntry {
        BoardEntry {
            run,
            rank: 0,
            shared: false,
            score,
            tps_per_device: score,
            per_request_tps: None,
            ttft_ms: None,
            lo,
            hi,
        }
    }

    fn places(entries: Vec<BoardEntry>) -> Vec<(usize, usize, bool)> {
        let b = Leaderboard { key: BoardKey::Prefill { context: 1 }, ranked: entries, unranked: vec![] };
        rank(b, 0.0).ranked.iter().map(|e| (e.run, e.rank, e.shared)).collect()
    }

    #[test]
    fn overlapping_intervals_share_a_place() {
        // 101 and 100 overlap; 80 is below both.
        let got = places(vec![entry(0, 100.0, 97.0, 103.0), entry(1, 101.0, 99.0, 103.0), entry(2, 80.0, 78.0, 82.0)]);
        assert_eq!(got, [(1, 1, true), (0, 1, true), (2, 3, false)]);
    }

    #[test]
    fn single_measurements_rank_by_value_with_ties_shared() {
        let got = places(vec![entry(0, 90.0, 90.0, 90.0), entry(1, 100.0, 100.0, 100.0), entry(2, 90.0, 90.0, 90.0)]);
        assert_eq!(got, [(1, 1, false), (0, 2, true), (2, 2, true)]);
    }

    #[test]
    fn run_to_run_noise_joins_places_the_repetitions_alone_would_part() {
        let b = |sd: f64| {
            let entries = vec![entry(0, 100.0, 99.0, 101.0), entry(1, 94.0, 93.0, 95.0), entry(2, 70.0, 69.0, 71.0)];
            let board = Leaderboard { key: BoardKey::Prefill { context: 1 }, ranked: entries, unranked: vec![] };
            rank(board, sd).ranked.iter().map(|e| (e.run, e.rank)).collect::<Vec<_>>()
        };
        // Repetitions alone: three places. A run's level at 5%: 100 and 94 (6% apart) cannot
        // be told apart; 70 (30% below) still can.
        assert_eq!(b(0.0), [(0, 1), (1, 2), (2, 3)]);
        assert_eq!(b((1.05f64).ln()), [(0, 1), (1, 1), (2, 3)]);
    }
}

//! Leaderboards: for each decode cell key (context x concurrency) and each prefill context,
//! every run that measured it, valid cells ranked, the rest listed apart and never ranked.

use rayon::prelude::*;
use serde::Serialize;

use super::run::{CellView, RunView};
use crate::format::{Phase, Status};

/// What a leaderboard ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum BoardKey {
    // Prefill first: boards sort as the run page reads, prefill above decode.
    Prefill { context: u32 },
    Decode { context: u32, concurrency: u32 },
}

impl BoardKey {
    pub fn of(cell: &CellView) -> BoardKey {
        match cell.phase {
            Phase::Prefill => BoardKey::Prefill { context: cell.context },
            Phase::Decode => BoardKey::Decode { context: cell.context, concurrency: cell.concurrency },
        }
    }
}

/// A ranked run: its place and the figures it is ranked by.
#[derive(Debug, Clone, Serialize)]
pub struct BoardEntry {
    /// Index into `SiteModel::runs`.
    pub run: usize,
    /// 1 is the best; equal values share a place (1, 2, 2, 4).
    pub rank: usize,
    /// Decode: total tok/s; prefill: prompt tok/s. What the rank is by.
    pub score: f64,
    pub tps_per_device: f64,
    pub per_request_tps: Option<f64>,
    pub ttft_ms: Option<f64>,
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

/// What a valid cell is ranked by.
fn score(cell: &CellView) -> Option<f64> {
    match cell.phase {
        Phase::Prefill => cell.figures.prompt_tps,
        Phase::Decode => cell.figures.total_tps,
    }
    .filter(|v| v.is_finite())
}

/// Every leaderboard of the site, by key. `runs` are sorted by id, so ties list in id order.
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
    boards.into_par_iter().map(rank).collect()
}

/// `leaderboards(runs)` from the boards made before the runs at `changed` (sorted indexes)
/// changed: their entries are taken out everywhere and put back from their cells; only the
/// boards they were or are on are ranked again. The runs themselves (ids, order) are the same.
pub fn mend(boards: Vec<Leaderboard>, runs: &[RunView], changed: &[usize]) -> Vec<Leaderboard> {
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
    boards
        .into_par_iter()
        .map(|mut b| {
            if touched.contains(&b.key) {
                b.unranked.sort_by_key(|u| u.run);
                b = rank(b);
            }
            b
        })
        .collect()
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
                score,
                tps_per_device: score / run.manifest.hardware.count.max(1) as f64,
                per_request_tps: cell.figures.per_request_tps,
                ttft_ms: cell.figures.ttft_ms,
            }),
            None => board.unranked.push(Unranked { run: i, status: cell.status }),
        }
    }
}

/// Sorts best first (ties by run order) and numbers the places.
fn rank(mut board: Leaderboard) -> Leaderboard {
    // Ties in run order (the order a whole site fills a board in; a mended board has its
    // changed runs at the end).
    board.ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.run.cmp(&b.run)));
    for i in 0..board.ranked.len() {
        board.ranked[i].rank =
            if i > 0 && board.ranked[i].score == board.ranked[i - 1].score { board.ranked[i - 1].rank } else { i + 1 };
    }
    board
}

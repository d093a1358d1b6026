//! Prefix-reuse sessions: the runs one `site bench --prefix-reuse 0,50,90` session wrote,
//! one a level, and each decode cell's figures across the levels (what reuse buys: the
//! time to first token falls as the cache serves more of the prompt).

use serde::Serialize;

use super::run::RunView;

/// One level of a session: its run (index and id) and the planned reuse.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReuseLevel {
    #[serde(skip)]
    pub run: usize,
    pub id: String,
    pub planned_pct: u32,
}

/// A decode cell's figures at one level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelFigures {
    pub ttft_ms: Option<f64>,
    /// Conversations: the TTFT of the turns after the first.
    pub next_turn_ttft_ms: Option<f64>,
    /// The share of (first-turn) prompt tokens the server served from its cache.
    pub cached_prompt_pct: Option<f64>,
    pub total_tps: Option<f64>,
}

/// A decode cell (context x concurrency) across the levels, in `levels` order; `None`
/// where that level's run has no valid cell there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReuseRow {
    pub context: u32,
    pub concurrency: u32,
    pub at: Vec<Option<LevelFigures>>,
}

/// The levels of one session, by planned reuse, and its decode cells across them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReuseSession {
    pub levels: Vec<ReuseLevel>,
    pub rows: Vec<ReuseRow>,
}

/// By run index (`runs` sorted by id): the session of a run whose manifest names the
/// runs of other levels, with every named run that is on the site and names it back (a
/// run cannot claim another session's runs) and has a level of its own.
pub fn sessions(runs: &[RunView]) -> Vec<Option<ReuseSession>> {
    let index = |id: &str| runs.binary_search_by(|r| r.id.as_str().cmp(id)).ok();
    (0..runs.len())
        .map(|i| {
            let run = &runs[i];
            let level = |j: usize| runs[j].manifest.settings.prefix_reuse_pct.map(|pct| (j, pct));
            let mut members: Vec<(usize, u32)> = run
                .manifest
                .other_levels
                .iter()
                .filter_map(|id| index(id))
                .filter(|&j| j != i && runs[j].manifest.other_levels.contains(&run.id))
                .filter_map(level)
                .collect();
            if members.is_empty() {
                return None;
            }
            members.extend(level(i));
            members.sort_by_key(|&(j, pct)| (pct, j));
            members.dedup_by_key(|m| m.0);
            Some(session(runs, &members))
        })
        .collect()
}

fn session(runs: &[RunView], members: &[(usize, u32)]) -> ReuseSession {
    let levels: Vec<ReuseLevel> =
        members.iter().map(|&(j, pct)| ReuseLevel { run: j, id: runs[j].id.clone(), planned_pct: pct }).collect();
    let mut cells: Vec<(u32, u32)> =
        members.iter().flat_map(|&(j, _)| runs[j].decode.iter().map(|c| (c.context, c.concurrency))).collect();
    cells.sort_unstable();
    cells.dedup();
    let rows = cells
        .into_iter()
        .map(|(context, concurrency)| ReuseRow {
            context,
            concurrency,
            at: members
                .iter()
                .map(|&(j, _)| {
                    let c = runs[j]
                        .decode_cell(context, concurrency)
                        .filter(|c| c.status == crate::format::Status::Valid)?;
                    Some(LevelFigures {
                        ttft_ms: c.figures.ttft_ms,
                        next_turn_ttft_ms: c.figures.next_turn_ttft_ms,
                        cached_prompt_pct: c.figures.cached_prompt_pct,
                        total_tps: c.figures.total_tps,
                    })
                })
                .collect(),
        })
        .collect();
    ReuseSession { levels, rows }
}

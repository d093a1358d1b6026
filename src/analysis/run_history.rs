//! A configuration's runs as evidence of its run-to-run noise: only runs that are alike may
//! speak for it. In time order, each run's level is its median offset from the other runs
//! cell by cell; a run at another level than the rest (an incident, a setting nobody
//! recorded) is left out by a median/MAD rule, and the rest is split at its change points
//! (the detector of the series pages), so noise is estimated within segments, never across
//! a real change. As Apache Otava (Hunter) and MongoDB's change-point detection do.

use std::collections::HashMap;

use serde::Serialize;

use super::metric::Metric;
use super::run::{CellView, RunView};
use crate::format::{Phase, Status};

/// A robust z beyond which a run is an outlier (Iglewicz and Hoaglin's 3.5 on the modified
/// z score, 0.6745 (x - median) / MAD).
pub const OUTLIER_Z: f64 = 3.5;

/// Every run of a series at least this many either side of a change point (the series
/// pages' and a history's segments).
pub const MIN_SEGMENT_RUNS: usize = 2;

/// Runs a configuration needs before one of them can be told apart from the others.
pub const MIN_RUNS_FOR_OUTLIERS: usize = 3;

/// A run left out of its configuration's noise, and how far its level sits from the others'.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeftOut {
    #[serde(skip)]
    pub run: usize,
    pub id: String,
    /// Its level against the median of the others', in percent (of total tok/s, else prompt
    /// tok/s): -29 is 29% below.
    pub pct: f64,
}

/// A configuration's runs after the outliers are left out, split at change points.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Each segment's runs, in time order; noise is estimated within each.
    pub segments: Vec<Vec<usize>>,
    pub left_out: Vec<LeftOut>,
}

impl History {
    /// The runs the noise comes from.
    pub fn used(&self) -> impl Iterator<Item = usize> + '_ {
        self.segments.iter().flatten().copied()
    }

    /// Change points the history was split at.
    pub fn splits(&self) -> usize {
        self.segments.len().saturating_sub(1)
    }
}

/// The history of `members` (runs of one configuration), `floor_log`: the least robust
/// standard deviation of a run's level on the log scale (identical runs would otherwise make
/// every small difference an outlier).
pub fn history(runs: &[RunView], members: &[usize], floor_log: f64) -> History {
    let mut ordered = members.to_vec();
    ordered.sort_by(|&a, &b| runs[a].started.cmp(&runs[b].started).then_with(|| runs[a].id.cmp(&runs[b].id)));
    let (segments, left) = split(&ordered, &run_offsets(runs, &ordered), floor_log);
    let left_out = left.into_iter().map(|(i, pct)| LeftOut { run: i, id: runs[i].id.clone(), pct }).collect();
    History { segments, left_out }
}

/// The runs `ordered` (in time order) with their levels `offsets`: the segments of those
/// kept, and those left out with their level against the median of the others' in percent.
pub fn split(ordered: &[usize], offsets: &[Option<f64>], floor_log: f64) -> (Vec<Vec<usize>>, Vec<(usize, f64)>) {
    let outlying = outliers(&offsets.iter().map(|o| o.unwrap_or(0.0)).collect::<Vec<_>>(), floor_log);
    let mut left_out = Vec::new();
    let mut kept = Vec::new();
    for (k, &i) in ordered.iter().enumerate() {
        match offsets[k].filter(|_| outlying.contains(&k)) {
            Some(o) => {
                let others: Vec<f64> =
                    offsets.iter().enumerate().filter(|(j, _)| *j != k).filter_map(|(_, o)| *o).collect();
                let base = crate::stats::median(&others).unwrap_or(0.0);
                left_out.push((i, ((o - base).exp() - 1.0) * 100.0));
            }
            None => kept.push((i, offsets[k])),
        }
    }
    (segments(&kept), left_out)
}

/// `kept` split at the change points of their levels (runs without a level stay in the
/// segment they fall in).
fn segments(kept: &[(usize, Option<f64>)]) -> Vec<Vec<usize>> {
    let present: Vec<(usize, f64)> = kept.iter().enumerate().filter_map(|(k, (_, o))| o.map(|o| (k, o))).collect();
    let levels: Vec<f64> = present.iter().map(|p| p.1).collect();
    let cuts: Vec<usize> = crate::stats::change_points(&levels, MIN_SEGMENT_RUNS, super::verdict::ALPHA)
        .iter()
        .map(|c| present[c.at].0)
        .collect();
    let mut out: Vec<Vec<usize>> = vec![Vec::new()];
    for (k, (i, _)) in kept.iter().enumerate() {
        if cuts.contains(&k) {
            out.push(Vec::new());
        }
        out.last_mut().expect("one segment at least").push(*i);
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Each run's level: the median over its cells of its log figure less the median of the
/// runs' logs in that cell (total tok/s of decode cells, else prompt tok/s). `None` for a
/// run with no cell another run also has.
fn run_offsets(runs: &[RunView], ordered: &[usize]) -> Vec<Option<f64>> {
    let decode = |c: &CellView| c.phase == Phase::Decode;
    let any_decode = ordered.iter().any(|&i| runs[i].decode.iter().any(|c| c.status == Status::Valid));
    let metric = if any_decode { Metric::TotalTps } else { Metric::PromptTps };
    let mut by_cell: HashMap<(Phase, u32, u32), Vec<(usize, f64)>> = HashMap::new();
    for (k, &i) in ordered.iter().enumerate() {
        let r = &runs[i];
        for c in r.prefill.iter().chain(&r.decode).filter(|c| c.status == Status::Valid && decode(c) == any_decode) {
            let Some(v) = c.estimate(metric).map(|e| e.value).filter(|v| v.is_finite() && *v > 0.0) else { continue };
            by_cell.entry((c.phase, c.context, c.concurrency)).or_default().push((k, v.ln()));
        }
    }
    offsets(by_cell.values().map(Vec::as_slice), ordered.len())
}

/// Each of `runs` runs' level from its log figures cell by cell (`(run, log)` per cell): the
/// median over its cells of its deviation from the cell's median.
pub fn offsets<'a>(cells: impl Iterator<Item = &'a [(usize, f64)]>, runs: usize) -> Vec<Option<f64>> {
    let mut deviations: Vec<Vec<f64>> = vec![Vec::new(); runs];
    for values in cells.filter(|v| v.len() >= 2) {
        let logs: Vec<f64> = values.iter().map(|v| v.1).collect();
        let Some(m) = crate::stats::median(&logs) else { continue };
        for &(k, v) in values {
            deviations[k].push(v - m);
        }
    }
    deviations.iter().map(|d| crate::stats::median(d)).collect()
}

/// The indices of `x` whose modified z score, 0.6745 (x - median) / MAD, passes
/// [`OUTLIER_Z`], the MAD floored so that its robust standard deviation (1.4826 MAD) is at
/// least `floor`; none below [`MIN_RUNS_FOR_OUTLIERS`] values, and never half of them.
pub fn outliers(x: &[f64], floor: f64) -> Vec<usize> {
    if x.len() < MIN_RUNS_FOR_OUTLIERS {
        return Vec::new();
    }
    let Some(m) = crate::stats::median(x) else { return Vec::new() };
    let deviations: Vec<f64> = x.iter().map(|v| (v - m).abs()).collect();
    let mad = crate::stats::median(&deviations).unwrap_or(0.0).max(floor / 1.4826);
    if mad <= 0.0 {
        return Vec::new();
    }
    let out: Vec<usize> = (0..x.len()).filter(|&k| 0.6745 * deviations[k] / mad > OUTLIER_Z).collect();
    if 2 * out.len() >= x.len() {
        return Vec::new();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_far_from_the_others_is_an_outlier_and_ordinary_wobble_is_not() {
        let floor = 0.025;
        let wobble = [0.01, -0.02, 0.015, 0.0, -0.01, 0.02];
        assert!(outliers(&wobble, floor).is_empty());
        let mut incident = wobble.to_vec();
        incident.insert(4, (0.7f64).ln());
        assert_eq!(outliers(&incident, floor), vec![4]);
        // Identical runs and one 3% off: the floor keeps a small difference in.
        assert!(outliers(&[0.0, 0.0, 0.0, 0.03], floor).is_empty());
        assert_eq!(outliers(&[0.0, 0.0, 0.0, 0.3], floor), vec![3]);
    }

    #[test]
    fn two_runs_cannot_say_which_is_odd_and_half_is_no_outlier() {
        assert!(outliers(&[0.0, 0.7], 0.01).is_empty());
        assert!(outliers(&[0.0, 0.0, 0.5, 0.5], 0.01).is_empty());
    }

    #[test]
    fn a_lasting_step_splits_the_history_into_segments() {
        let kept: Vec<(usize, Option<f64>)> =
            [0.0, 0.01, -0.01, 0.0, 0.2, 0.21, 0.19, 0.2].iter().enumerate().map(|(i, v)| (i, Some(*v))).collect();
        assert_eq!(segments(&kept), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        let flat: Vec<(usize, Option<f64>)> = (0..5).map(|i| (i, Some(0.0))).collect();
        assert_eq!(segments(&flat), vec![vec![0, 1, 2, 3, 4]]);
    }
}

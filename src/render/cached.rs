//! Rendering in parallel with a cache: the site is split into units (a run's folder, a
//! comparison's folder), each with a hash of everything its files are made from. A unit
//! whose hash is the one the previous build recorded keeps its files (`Sink::reuse`); the
//! others are rendered on every core, in batches, and written in unit order, so the output
//! is the same at any thread count.

use std::collections::BTreeMap;

use anyhow::Result;
use rayon::prelude::*;

use super::common::RenderStats;
use crate::write::{MemorySink, Sink};

/// Units rendered at once before they are written (bounds memory at any site size).
const BATCH: usize = 256;

/// A folder of the site rendered as one.
pub struct Unit {
    /// The folder (`runs/<id>`): the key of its hash in the build cache.
    pub key: String,
    pub files: Vec<String>,
    pub hash: u64,
    /// What keeping the unit counts for in the build summary.
    pub kept: RenderStats,
}

/// Renders `units` (unit `i` by `render(i, ...)`) unless kept; returns every unit's hash by key.
pub fn render_cached<F>(
    units: &[Unit],
    previous: &BTreeMap<String, u64>,
    render: F,
    sink: &mut dyn Sink,
    stats: &mut RenderStats,
) -> Result<BTreeMap<String, u64>>
where
    F: Fn(usize, &mut MemorySink, &mut RenderStats) -> Result<()> + Sync,
{
    for start in (0..units.len()).step_by(BATCH) {
        let end = (start + BATCH).min(units.len());
        let mut todo = Vec::new();
        for (i, unit) in units.iter().enumerate().take(end).skip(start) {
            if previous.get(&unit.key) == Some(&unit.hash) && reuse_all(sink, &unit.files)? {
                stats.add(&unit.kept);
            } else {
                todo.push(i);
            }
        }
        render_parallel(&todo, |&i, mem, st| render(i, mem, st), sink, stats)?;
    }
    Ok(units.iter().map(|u| (u.key.clone(), u.hash)).collect())
}

/// Renders each of `items` on every core into memory, then writes them in order (the
/// output is the same at any thread count).
pub fn render_parallel<T, F>(items: &[T], render: F, sink: &mut dyn Sink, stats: &mut RenderStats) -> Result<()>
where
    T: Sync,
    F: Fn(&T, &mut MemorySink, &mut RenderStats) -> Result<()> + Sync,
{
    let rendered: Vec<Result<(MemorySink, RenderStats)>> = items
        .par_iter()
        .map(|item| {
            let (mut mem, mut st) = (MemorySink::default(), RenderStats::default());
            render(item, &mut mem, &mut st)?;
            Ok((mem, st))
        })
        .collect();
    for r in rendered {
        let (mem, st) = r?;
        mem.drain_into(sink)?;
        stats.add(&st);
    }
    Ok(())
}

/// Keeps every one of `files` from the previous build, or reports that it could not (the
/// caller renders them all again, replacing any kept).
fn reuse_all(sink: &mut dyn Sink, files: &[String]) -> Result<bool> {
    for f in files {
        if !sink.reuse(f)? {
            return Ok(false);
        }
    }
    Ok(true)
}

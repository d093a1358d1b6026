//! Rendering in parallel with a cache: the site is split into units (a run's folder, a
//! comparison's folder), each with a hash of everything its files are made from. A unit
//! whose hash is the one the previous build recorded keeps its files (`Sink::reuse`); the
//! others are rendered on every core, each thread writing its own files.

use std::collections::BTreeMap;

use anyhow::Result;
use rayon::prelude::*;

use super::common::RenderStats;
use crate::write::Sink;

/// A folder of the site rendered as one.
pub struct Unit {
    /// The folder (`runs/<id>`): the key of its hash in the build cache.
    pub key: String,
    pub files: Vec<String>,
    pub hash: u64,
    /// What keeping the unit counts for in the build summary.
    pub kept: RenderStats,
}

/// Renders `units` (unit `i` by `render(i, ...)`) unless kept, on every core; returns every
/// unit's hash by key.
pub fn render_cached<F>(
    units: &[Unit],
    previous: &BTreeMap<String, u64>,
    render: F,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<BTreeMap<String, u64>>
where
    F: Fn(usize, &dyn Sink, &mut RenderStats) -> Result<()> + Sync,
{
    let indices: Vec<usize> = (0..units.len()).collect();
    let one = |&i: &usize, sink: &dyn Sink, st: &mut RenderStats| {
        let unit = &units[i];
        if previous.get(&unit.key) == Some(&unit.hash) && sink.reuse_all(&unit.files)? {
            st.add(&unit.kept);
            return Ok(());
        }
        render(i, sink, st)
    };
    render_parallel(&indices, one, sink, stats)?;
    Ok(units.iter().map(|u| (u.key.clone(), u.hash)).collect())
}

/// Renders each of `items` on every core, each thread writing what it rendered (files are
/// independent, so the output is the same at any thread count and in any order).
pub fn render_parallel<T, F>(items: &[T], render: F, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()>
where
    T: Sync,
    F: Fn(&T, &dyn Sink, &mut RenderStats) -> Result<()> + Sync,
{
    let total = items
        .par_iter()
        .try_fold(RenderStats::default, |mut st, item| render(item, sink, &mut st).map(|()| st))
        .try_reduce(RenderStats::default, |mut a, b| {
            a.add(&b);
            Ok(a)
        })?;
    stats.add(&total);
    Ok(())
}

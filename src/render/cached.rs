//! Rendering in parallel with a cache: the site is split into units (a run's folder, a
//! leaderboard, a list page, a comparison, ...), each with a hash of everything its files are
//! made from. A unit whose hash is the one the previous build recorded keeps its files
//! (`Sink::reuse_unit`); the others are rendered on every core, each thread writing its own
//! files, and reported to the sink (`Sink::unit_written`).

use std::collections::BTreeMap;

use anyhow::Result;
use rayon::prelude::*;

use super::common::RenderStats;
use crate::write::Sink;

/// A folder of the site rendered as one.
pub struct Unit<'a> {
    /// The folder (`runs/<id>`): the key of its hash in the build cache.
    pub key: String,
    /// Its files, asked for only where a sink needs them (a run has fifty).
    pub files: Box<dyn Fn() -> Vec<String> + Send + Sync + 'a>,
    pub hash: u64,
    /// What keeping the unit counts for in the build summary.
    pub kept: RenderStats,
}

impl<'a> Unit<'a> {
    pub fn listed(key: String, hash: u64, kept: RenderStats, files: Vec<String>) -> Unit<'a> {
        Unit { key, files: Box::new(move || files.clone()), hash, kept }
    }

    /// Whether the previous build recorded this unit with the same input hash (its files
    /// can then be kept, if the sink still has them).
    pub fn unchanged(&self, previous: &BTreeMap<String, u64>) -> bool {
        previous.get(&self.key) == Some(&self.hash)
    }
}

/// Passes every file put on to `inner`, remembering their paths (a unit's files as rendered).
struct Recording<'a> {
    inner: &'a dyn Sink,
    paths: std::sync::Mutex<Vec<String>>,
}

impl Sink for Recording<'_> {
    fn put(&self, rel_path: &str, bytes: &[u8]) -> Result<()> {
        self.paths.lock().expect("no writer panics").push(rel_path.to_string());
        self.inner.put(rel_path, bytes)
    }
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
        if unit.unchanged(previous) && sink.reuse_unit(&unit.key, unit.hash, &unit.files)? {
            st.add(&unit.kept);
            return Ok(());
        }
        let recording = Recording { inner: sink, paths: Default::default() };
        render(i, &recording, st)?;
        let files = recording.paths.into_inner().expect("no writer panics");
        sink.unit_written(&unit.key, unit.hash, files);
        Ok(())
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

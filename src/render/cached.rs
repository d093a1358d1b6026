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
    /// A part of one of its files that changes apart from the rest (a run page's places).
    pub patch: Option<Patch<'a>>,
}

/// Makes a file anew from the previous build's bytes (`None`: it cannot).
pub type PatchFn<'a> = Box<dyn Fn(&[u8]) -> Option<Vec<u8>> + Send + Sync + 'a>;

/// A part of a unit's file with a hash of its own (its inputs are left out of the unit's
/// hash): when only this part changed, the file is made from the previous build's by
/// `apply` instead of rendered, and the unit's other files are kept.
pub struct Patch<'a> {
    /// The key of the part's hash in the build cache (`runs/<id>#places`).
    pub key: String,
    pub hash: u64,
    /// The file it is in.
    pub file: String,
    /// The file with this part made anew, from the previous build's bytes; `None` where
    /// they are not what this build would have left (then the unit is rendered).
    pub apply: PatchFn<'a>,
    /// What patching the unit counts for in the build summary.
    pub patched: RenderStats,
}

impl<'a> Unit<'a> {
    pub fn listed(key: String, hash: u64, kept: RenderStats, files: Vec<String>) -> Unit<'a> {
        Unit { key, files: Box::new(move || files.clone()), hash, kept, patch: None }
    }

    /// A unit of one page and the files beside it (a board's CSV).
    pub fn page(key: String, hash: u64, files: Vec<String>) -> Unit<'a> {
        let kept = RenderStats { pages: 1, files: files.len(), ..Default::default() };
        Unit::listed(key, hash, kept, files)
    }

    /// Whether the unit's patchable part is as the previous build recorded it (a unit
    /// without one has nothing apart).
    fn patch_unchanged(&self, previous: &BTreeMap<String, u64>) -> bool {
        self.patch.as_ref().is_none_or(|p| previous.get(&p.key) == Some(&p.hash))
    }

    /// Keeps the unit's files as the previous build left them, or all but its patched one
    /// when only that part changed; whether it did (else the unit is rendered).
    fn kept_or_patched(&self, previous: &BTreeMap<String, u64>, sink: &dyn Sink, st: &mut RenderStats) -> Result<bool> {
        if !self.unchanged(previous) || !sink.unit_intact(&self.key, &(self.files)())? {
            return Ok(false);
        }
        let patch_unchanged = self.patch_unchanged(previous);
        let no_files = || Vec::new();
        if patch_unchanged
            && sink.reuse_unit(&self.key, self.hash, &self.files)?
            && self.patch.as_ref().map_or(Ok(true), |p| sink.reuse_unit(&p.key, p.hash, &no_files))?
        {
            st.add(&self.kept);
            return Ok(true);
        }
        match self.patch.as_ref().filter(|_| !patch_unchanged) {
            Some(patch) if self.patch_in(patch, sink)? => {
                st.add(&patch.patched);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Keeps the unit's files but its patched one, and makes that one from the previous
    /// build's; whether it could (else the unit is rendered).
    fn patch_in(&self, patch: &Patch, sink: &dyn Sink) -> Result<bool> {
        let Some(old) = sink.previous_file(&patch.file)? else { return Ok(false) };
        let Some(new) = (patch.apply)(&old) else { return Ok(false) };
        let files = (self.files)();
        let others: Vec<String> = files.iter().filter(|f| **f != patch.file).cloned().collect();
        if !sink.keep_files(&others)? {
            return Ok(false);
        }
        sink.put(&patch.file, &new)?;
        sink.unit_written(&self.key, self.hash, files);
        sink.unit_written(&patch.key, patch.hash, Vec::new());
        Ok(true)
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

    fn previous_file(&self, rel_path: &str) -> Result<Option<Vec<u8>>> {
        self.inner.previous_file(rel_path)
    }

    fn keep_files(&self, files: &[String]) -> Result<bool> {
        let kept = self.inner.keep_files(files)?;
        if kept {
            self.paths.lock().expect("no writer panics").extend(files.iter().cloned());
        }
        Ok(kept)
    }

    fn unit_intact(&self, key: &str, files: &[String]) -> Result<bool> {
        self.inner.unit_intact(key, files)
    }
}

/// A kind of page rendered in cached units (boards, list pages, views, comparisons): what
/// each unit is made from and holds, and how to render one.
pub trait CachedPages: Sync {
    fn units(&self) -> Vec<Unit<'_>>;
    /// Renders unit `i` of `units()`.
    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()>;
}

/// Renders every unit of `pages` unless kept; returns every unit's hash by key.
pub fn render_pages(
    pages: &impl CachedPages,
    previous: &BTreeMap<String, u64>,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<BTreeMap<String, u64>> {
    let units = pages.units();
    render_cached(&units, previous, |i, sink, st| pages.render_one(i, sink, st), sink, stats)
}

/// Renders one unit unless kept (a group's own page, `index.json`); returns its hash by key.
pub fn render_unit<F>(
    unit: Unit,
    previous: &BTreeMap<String, u64>,
    render: F,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<BTreeMap<String, u64>>
where
    F: Fn(&dyn Sink, &mut RenderStats) -> Result<()> + Sync,
{
    render_cached(&[unit], previous, |_, sink, st| render(sink, st), sink, stats)
}

/// Renders `units` (unit `i` by `render(i, ...)`) unless kept, on every core; returns every
/// unit's hash by key.
fn render_cached<F>(
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
        if unit.kept_or_patched(previous, sink, st)? {
            return Ok(());
        }
        let recording = Recording { inner: sink, paths: Default::default() };
        render(i, &recording, st)?;
        let files = recording.paths.into_inner().expect("no writer panics");
        sink.unit_written(&unit.key, unit.hash, files);
        if let Some(p) = &unit.patch {
            sink.unit_written(&p.key, p.hash, Vec::new());
        }
        Ok(())
    };
    render_parallel(&indices, one, sink, stats)?;
    let parts = units.iter().filter_map(|u| u.patch.as_ref().map(|p| (p.key.clone(), p.hash)));
    Ok(units.iter().map(|u| (u.key.clone(), u.hash)).chain(parts).collect())
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

//! Runs grouped by model, hardware type and engine, each group with a unique slug.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::format::RunManifest;
use crate::units::slugify;

/// All runs of one model, one hardware type or one engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupView {
    pub slug: String,
    pub name: String,
    /// Indexes into `SiteModel::runs`.
    pub runs: Vec<usize>,
}

/// What a run is grouped by on each kind of entity page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    Model,
    Hardware,
    Engine,
}

impl GroupKind {
    pub const ALL: [GroupKind; 3] = [GroupKind::Model, GroupKind::Hardware, GroupKind::Engine];

    pub fn key(self, m: &RunManifest) -> &str {
        match self {
            GroupKind::Model => &m.model.id,
            GroupKind::Hardware => &m.hardware.device,
            GroupKind::Engine => &m.engine.name,
        }
    }
}

/// Groups runs (in the order given) by `kind`, sorted by name; slugs are made unique
/// deterministically (`h200`, `h200-2`).
pub fn group(manifests: &[&RunManifest], kind: GroupKind) -> Vec<GroupView> {
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in manifests.iter().enumerate() {
        by_name.entry(kind.key(m)).or_default().push(i);
    }
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    by_name
        .into_iter()
        .map(|(name, runs)| GroupView { slug: unique_slug(&mut used, name), name: name.to_string(), runs })
        .collect()
}

/// The slug of `name`, made unique among those `used` so far (`h200`, `h200-2`).
pub fn unique_slug(used: &mut BTreeMap<String, usize>, name: &str) -> String {
    let base = slugify(name);
    let n = used.entry(base.clone()).or_insert(0);
    *n += 1;
    if *n == 1 {
        base
    } else {
        format!("{base}-{n}")
    }
}

/// The slug of each run's group, by run index (`runs` runs in all).
pub fn slug_by_run(groups: &[GroupView], runs: usize) -> Vec<String> {
    let mut slugs = vec![String::new(); runs];
    for g in groups {
        for &i in &g.runs {
            slugs[i] = g.slug.clone();
        }
    }
    slugs
}

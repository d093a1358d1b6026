//! Tools side by side: runs of one model on one configuration and engine version, measured
//! by different benchmark tools. What each tool answered for the same server.

use std::collections::BTreeMap;

use serde::Serialize;

use super::group::unique_slug;
use super::pareto::ConfigKey;
use super::run::RunView;

#[derive(Debug, Clone, Serialize)]
pub struct ToolsView {
    pub slug: String,
    pub model_id: String,
    pub key: ConfigKey,
    pub engine_version: String,
    /// One run per tool (the newest where a tool has several), by tool name.
    pub runs: Vec<usize>,
    /// Every decode (context, concurrency) any of them measured.
    pub cells: Vec<(u32, u32)>,
}

/// Every model, configuration and engine version measured by two tools or more.
pub fn tools(runs: &[RunView]) -> Vec<ToolsView> {
    type Key = (String, ConfigKey, String);
    let mut by_key: BTreeMap<Key, BTreeMap<String, usize>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let m = &r.manifest;
        let key = (m.model.id.clone(), ConfigKey::of(r), m.engine.version.clone());
        let tools = by_key.entry(key).or_default();
        let newer = |j: usize| runs[j].started < r.started;
        match tools.get(&m.bench_tool.name) {
            Some(&j) if !newer(j) => {}
            _ => {
                tools.insert(m.bench_tool.name.clone(), i);
            }
        }
    }
    let mut used = BTreeMap::new();
    by_key
        .into_iter()
        .filter(|(_, tools)| tools.len() > 1)
        .map(|((model_id, key, engine_version), tools)| {
            let members: Vec<usize> = tools.into_values().collect();
            let mut cells: Vec<(u32, u32)> =
                members.iter().flat_map(|&i| runs[i].decode.iter().map(|c| (c.context, c.concurrency))).collect();
            cells.sort_unstable();
            cells.dedup();
            let name = format!("{model_id} {} {engine_version} {}x {}", key.engine, key.count, key.device);
            ToolsView { slug: unique_slug(&mut used, &name), model_id, key, engine_version, runs: members, cells }
        })
        .collect()
}

//! Tools side by side: runs of one model on one configuration and engine version, measured
//! by different benchmark tools. What each tool answered for the same server: matrix runs
//! cell by cell, rate runs (open loops) rate by rate, each kind a view of its own.

use std::collections::BTreeMap;

use serde::Serialize;

use super::group::unique_slug;
use super::pareto::{ConfigKey, ConfigKeyRef};
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
    /// Rate runs' view: every (context, offered rate) any of them measured; empty for a
    /// view of matrix runs.
    pub rates: Vec<(u32, f64)>,
}

/// Every model, configuration and engine version measured by two tools or more.
pub fn tools(runs: &[RunView]) -> Vec<ToolsView> {
    // Keyed by borrowed strings (a rebuild while serving groups 10,000 runs again): the
    // views come out in the order of their owned keys, which order the same way.
    // Rate runs and matrix runs answer different questions: a view of each kind.
    let mut by_key: BTreeMap<(&str, ConfigKeyRef, &str, bool), BTreeMap<&str, usize>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let m = &r.manifest;
        let key = (m.model.id.as_str(), ConfigKey::borrowed(r), m.engine.version.as_str(), !r.rates.is_empty());
        let tools = by_key.entry(key).or_default();
        let newer = |j: usize| runs[j].started < r.started;
        match tools.get(m.bench_tool.name.as_str()) {
            Some(&j) if !newer(j) => {}
            _ => {
                tools.insert(m.bench_tool.name.as_str(), i);
            }
        }
    }
    let mut used = BTreeMap::new();
    by_key
        .into_iter()
        .filter(|(_, tools)| tools.len() > 1)
        .map(|((model_id, key, engine_version, at_rates), tools)| {
            let members: Vec<usize> = tools.into_values().collect();
            let mut cells: Vec<(u32, u32)> =
                members.iter().flat_map(|&i| runs[i].decode.iter().map(|c| (c.context, c.concurrency))).collect();
            cells.sort_unstable();
            cells.dedup();
            let mut rates: Vec<(u32, f64)> =
                members.iter().flat_map(|&i| runs[i].rates.iter().map(|r| (r.context, r.rate_rps))).collect();
            rates.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            rates.dedup();
            let key = ConfigKey::owned(key);
            let kind = if at_rates { " rates" } else { "" };
            let name = format!("{model_id} {} {engine_version} {}x {}{kind}", key.engine, key.count, key.device);
            let (model_id, engine_version) = (model_id.to_string(), engine_version.to_string());
            ToolsView {
                slug: unique_slug(&mut used, &name),
                model_id,
                key,
                engine_version,
                runs: members,
                cells,
                rates,
            }
        })
        .collect()
}

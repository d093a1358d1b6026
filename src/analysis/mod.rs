//! Normalize: turns a loaded `DataSet` into the site's page models. Figures come from
//! `figures` (computed from raw records, or as reported); grouping into model, hardware and
//! engine pages happens here too. Nothing here formats text or touches the disk.

pub mod command;
pub mod compare;
pub mod figures;
pub mod stats;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::format::{
    CellError, DataSet, LoadedRun, LoopFinding, Origin, OverCapacity, Phase, RunManifest, Status, Warning,
};
use crate::units::slugify;
pub use figures::Figures;

/// A cell whose average active requests differ from its concurrency by more than this
/// fraction is flagged: it did not measure what its column says.
pub const ACTIVE_MISMATCH_TOLERANCE: f64 = 0.10;

#[derive(Debug, Clone, Serialize)]
pub struct SiteModel {
    /// Sorted by id.
    pub runs: Vec<RunView>,
    pub models: Vec<GroupView>,
    pub hardware: Vec<GroupView>,
    pub engines: Vec<GroupView>,
    pub comparisons: Vec<crate::analysis::compare::Comparison>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub id: String,
    pub manifest: RunManifest,
    /// Model name as titles print it (`Step-3.5-Flash` for `stepfun-ai/Step-3.5-Flash`).
    pub model_name: String,
    pub model_slug: String,
    pub hardware_slug: String,
    pub engine_slug: String,
    pub prefill: Vec<CellView>,
    /// Sorted by (context, concurrency).
    pub decode: Vec<CellView>,
    pub heatmap: Heatmap,
    pub headline: Headline,
    pub notes_markdown: Option<String>,
    pub counts: StatusCounts,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellView {
    pub phase: Phase,
    pub context: u32,
    pub prompt_tokens: Option<u32>,
    pub concurrency: u32,
    pub status: Status,
    /// `measured` (computed from records) or `reported` (as another source printed it).
    pub source: &'static str,
    pub figures: Figures,
    /// The producer's warnings plus the normalizer's own checks.
    pub warnings: Vec<Warning>,
    pub over_capacity: Option<OverCapacity>,
    pub loop_finding: Option<LoopFinding>,
    pub error: Option<CellError>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Heatmap {
    pub columns: Vec<u32>,
    pub rows: Vec<HeatRow>,
    /// Largest valid total tok/s: the top of the colour scale.
    pub max_total_tps: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HeatRow {
    pub context: u32,
    /// One per column; `None` where the run has no cell (not measured).
    pub cells: Vec<Option<CellView>>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Headline {
    pub peak_total_tps: Option<f64>,
    pub peak_context: Option<u32>,
    pub peak_concurrency: Option<u32>,
    /// Total tok/s at concurrency 1, shortest context with a valid cell.
    pub single_request_tps: Option<f64>,
    pub single_request_context: Option<u32>,
    /// Prefill tok/s at 8K (8192 tokens).
    pub prefill_8k_tps: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StatusCounts {
    pub valid: usize,
    pub looped: usize,
    pub over_capacity: usize,
    pub error: usize,
    pub missing: usize,
    pub warned: usize,
}

/// All runs of one model, one hardware type or one engine.
#[derive(Debug, Clone, Serialize)]
pub struct GroupView {
    pub slug: String,
    pub name: String,
    /// Indexes into `SiteModel::runs`.
    pub runs: Vec<usize>,
}

/// Normalizes everything; fails only when a listed comparison cannot be made.
pub fn normalize(data: &DataSet) -> anyhow::Result<SiteModel> {
    let runs: Vec<RunView> = data.runs.iter().map(normalize_run).collect();
    let mut comparisons = Vec::new();
    for spec in &data.comparisons {
        let find = |id: &str| runs.iter().find(|r| r.id == id).expect("load checked the ids");
        let c = crate::analysis::compare::compare(
            find(&spec.a),
            find(&spec.b),
            spec.threshold_pct.unwrap_or(crate::analysis::compare::DEFAULT_THRESHOLD_PCT),
        )?;
        comparisons.push(c);
    }
    let models = group(&runs, |r| r.manifest.model.id.clone());
    let hardware = group(&runs, |r| r.manifest.hardware.device.clone());
    let engines = group(&runs, |r| r.manifest.engine.name.clone());
    let mut site = SiteModel { runs, models, hardware, engines, comparisons };
    for (i, g) in site.models.iter().enumerate() {
        for &r in &g.runs {
            site.runs[r].model_slug = site.models[i].slug.clone();
        }
    }
    for g in &site.hardware {
        for &r in &g.runs {
            site.runs[r].hardware_slug = g.slug.clone();
        }
    }
    for g in &site.engines {
        for &r in &g.runs {
            site.runs[r].engine_slug = g.slug.clone();
        }
    }
    Ok(site)
}

/// Groups runs by `key`, sorted by name; slugs are made unique deterministically.
fn group(runs: &[RunView], key: impl Fn(&RunView) -> String) -> Vec<GroupView> {
    let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        by_name.entry(key(r)).or_default().push(i);
    }
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    by_name
        .into_iter()
        .map(|(name, runs)| {
            let base = slugify(&name);
            let n = used.entry(base.clone()).or_insert(0);
            *n += 1;
            let slug = if *n == 1 { base } else { format!("{base}-{n}") };
            GroupView { slug, name, runs }
        })
        .collect()
}

pub fn normalize_run(run: &LoadedRun) -> RunView {
    let m = &run.manifest;
    let mut prefill = Vec::new();
    let mut decode = Vec::new();
    for lc in &run.cells {
        let view = normalize_cell(&lc.cell, m.origin);
        match view.phase {
            Phase::Prefill => prefill.push(view),
            Phase::Decode => decode.push(view),
        }
    }
    let heatmap = heatmap(&m.settings.contexts, &m.settings.concurrency, &decode);
    flag_prefill_outliers(&mut prefill);
    let headline = headline(&prefill, &decode);
    let mut counts = StatusCounts::default();
    for c in prefill.iter().chain(&decode) {
        match c.status {
            Status::Valid => counts.valid += 1,
            Status::Looped => counts.looped += 1,
            Status::OverCapacity => counts.over_capacity += 1,
            Status::Error => counts.error += 1,
        }
        if !c.warnings.is_empty() {
            counts.warned += 1;
        }
    }
    counts.missing = heatmap.rows.iter().flat_map(|r| &r.cells).filter(|c| c.is_none()).count();
    RunView {
        id: run.id.clone(),
        manifest: m.clone(),
        model_name: crate::units::model_display_name(&m.model.id),
        model_slug: String::new(),
        hardware_slug: String::new(),
        engine_slug: String::new(),
        prefill,
        decode,
        heatmap,
        headline,
        notes_markdown: run.notes_markdown.clone(),
        counts,
    }
}

pub fn normalize_cell(c: &crate::format::Cell, origin: Origin) -> CellView {
    let (source, mut figures) = match (&c.measurement, &c.reported) {
        (Some(m), _) => ("measured", Figures::from_measurement(c.phase, c.prompt_tokens, m)),
        (None, Some(r)) => ("reported", Figures::from_reported(r)),
        // A cell with no figures (not run, failed) takes the run's origin.
        (None, None) => (if origin == Origin::Measured { "measured" } else { "reported" }, Figures::default()),
    };
    match c.status {
        Status::Valid => {}
        Status::Looped => figures = figures.discarded(),
        Status::OverCapacity | Status::Error => figures = Figures::default(),
    }
    let mut warnings = c.warnings.clone();
    if let Some(w) = prefill_cache_warning(c) {
        warnings.push(w);
    }
    if c.phase == Phase::Decode && c.status == Status::Valid {
        if let Some(active) = figures.avg_active {
            let want = c.concurrency as f64;
            if (active - want).abs() > ACTIVE_MISMATCH_TOLERANCE * want
                && !warnings.iter().any(|w| w.code == "active_mismatch")
            {
                warnings.push(Warning {
                    code: "active_mismatch".into(),
                    message: format!(
                        "average active requests {active:.1} differ from the {} requested by more than {:.0}%: the cell did not measure {} requests at once",
                        c.concurrency,
                        ACTIVE_MISMATCH_TOLERANCE * 100.0,
                        c.concurrency
                    ),
                });
            }
        }
    }
    CellView {
        phase: c.phase,
        context: c.context,
        prompt_tokens: c.prompt_tokens,
        concurrency: c.concurrency,
        status: c.status,
        source,
        figures,
        warnings,
        over_capacity: c.over_capacity.clone(),
        loop_finding: c.loop_finding.clone(),
        error: c.error.clone(),
    }
}

fn heatmap(contexts: &[u32], concurrency: &[u32], decode: &[CellView]) -> Heatmap {
    let mut contexts = contexts.to_vec();
    contexts.sort_unstable();
    let mut columns = concurrency.to_vec();
    columns.sort_unstable();
    let rows = contexts
        .iter()
        .map(|&ctx| HeatRow {
            context: ctx,
            cells: columns
                .iter()
                .map(|&c| decode.iter().find(|d| d.context == ctx && d.concurrency == c).cloned())
                .collect(),
        })
        .collect();
    let max_total_tps = decode
        .iter()
        .filter(|d| d.status == Status::Valid)
        .filter_map(|d| d.figures.total_tps)
        .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.max(v))));
    Heatmap { columns, rows, max_total_tps }
}

/// A prefill sample whose server reported more than a tenth of its prompt as cached did not
/// measure a prefill (a chat template's few shared tokens stay under that).
fn prefill_cache_warning(c: &crate::format::Cell) -> Option<Warning> {
    if c.phase != Phase::Prefill || c.status != Status::Valid {
        return None;
    }
    let r = c.measurement.as_ref()?.requests.first()?;
    let cached = r.cached_prompt_tokens?;
    let prompt = r.prompt_tokens.or(c.prompt_tokens)? as u64;
    (cached.saturating_mul(10) > prompt).then(|| Warning {
        code: "prefix_cache_hit".into(),
        message: format!(
            "the server served {cached} of the {prompt} prompt tokens from its prefix cache: this is not the rate of a cold prefill"
        ),
    })
}

/// A prefill rate this many times the highest of the run's other contexts is no cold prefill.
pub const PREFILL_JUMP_FACTOR: f64 = 3.0;

/// Flags a prefill rate far beyond every other context of the run: most likely a prompt
/// served from the prefix cache rather than computed.
fn flag_prefill_outliers(prefill: &mut [CellView]) {
    let rates: Vec<(u32, f64)> = prefill
        .iter()
        .filter(|c| c.status == Status::Valid)
        .filter_map(|c| Some((c.context, c.figures.prompt_tps?)))
        .collect();
    if rates.len() < 3 {
        return;
    }
    for c in prefill.iter_mut() {
        let Some(rate) = c.figures.prompt_tps.filter(|_| c.status == Status::Valid) else { continue };
        let others = rates.iter().filter(|(ctx, _)| *ctx != c.context).map(|(_, r)| *r).fold(0.0f64, f64::max);
        if others > 0.0 && rate > PREFILL_JUMP_FACTOR * others && !c.warnings.iter().any(|w| w.code == "prefill_jump") {
            c.warnings.push(Warning {
                code: "prefill_jump".into(),
                message: format!(
                    "{rate:.0} prompt tok/s is more than {PREFILL_JUMP_FACTOR:.0}x the fastest other context of this run ({others:.0}): the prompt was probably served from the prefix cache"
                ),
            });
        }
    }
}

fn headline(prefill: &[CellView], decode: &[CellView]) -> Headline {
    let valid = |c: &&CellView| c.status == Status::Valid;
    let mut h = Headline::default();
    for c in decode.iter().filter(valid) {
        if let Some(t) = c.figures.total_tps {
            if h.peak_total_tps.is_none_or(|p| t > p) {
                h.peak_total_tps = Some(t);
                h.peak_context = Some(c.context);
                h.peak_concurrency = Some(c.concurrency);
            }
        }
    }
    // `decode` is sorted by context, so the first C = 1 cell is the shortest context.
    if let Some(c) = decode.iter().filter(valid).find(|c| c.concurrency == 1 && c.figures.total_tps.is_some()) {
        h.single_request_tps = c.figures.total_tps;
        h.single_request_context = Some(c.context);
    }
    h.prefill_8k_tps = prefill.iter().filter(valid).find(|c| c.context == 8192).and_then(|c| c.figures.prompt_tps);
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Cell, Phase, ReportedFigures};

    fn prefill(context: u32, prompt_tps: f64) -> CellView {
        let reported = ReportedFigures { prompt_tps: Some(prompt_tps), ..Default::default() };
        let cell = Cell { reported: Some(reported), ..Cell::new(Phase::Prefill, context, 1, Status::Valid) };
        normalize_cell(&cell, Origin::Imported)
    }

    fn flagged(cells: &[CellView]) -> Vec<u32> {
        cells.iter().filter(|c| c.warnings.iter().any(|w| w.code == "prefill_jump")).map(|c| c.context).collect()
    }

    #[test]
    fn a_prefill_far_beyond_the_other_contexts_is_flagged() {
        let mut cells = vec![prefill(1024, 900.0), prefill(2048, 1000.0), prefill(4096, 3500.0), prefill(8192, 950.0)];
        flag_prefill_outliers(&mut cells);
        assert_eq!(flagged(&cells), [4096]);
        // A curve that rises (2x per step) is no jump; two points are too few to judge.
        let mut rising = vec![prefill(512, 300.0), prefill(1024, 600.0), prefill(2048, 1200.0)];
        flag_prefill_outliers(&mut rising);
        assert!(flagged(&rising).is_empty());
        let mut two = vec![prefill(512, 100.0), prefill(1024, 1000.0)];
        flag_prefill_outliers(&mut two);
        assert!(flagged(&two).is_empty());
    }
}

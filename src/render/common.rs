//! What every page kind shares: run titles and labels, the navigation and comparison
//! links, the state names pages print, template values, and counting what was written.

use anyhow::Result;
use minijinja::value::{Serde, Value};
use minijinja::Environment;
use serde::Serialize;

use crate::analysis::compare::CellState;
use crate::analysis::{Comparison, Headline, RunView};
use crate::format::{Origin, PageSource};
use crate::units::numbers;
use crate::write::Sink;

/// Counts of what was rendered, for the build summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct RenderStats {
    pub pages: usize,
    pub run_pages: usize,
    pub charts: usize,
    pub files: usize,
}

/// A Markdown page in the navigation bar.
#[derive(Debug, Clone, Serialize)]
pub struct NavLink {
    pub slug: String,
    pub title: String,
}

/// A published comparison as run and index pages link to it.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonLink {
    pub slug: String,
    pub a_id: String,
    pub b_id: String,
    pub a_title: String,
    pub b_title: String,
}

/// What every page of one build renders with.
pub struct PageContext<'a> {
    pub env: &'a Environment<'static>,
    pub nav: Vec<NavLink>,
    pub comparisons: Vec<ComparisonLink>,
}

impl PageContext<'_> {
    pub fn new<'a>(
        env: &'a Environment<'static>,
        pages: &[PageSource],
        runs: &[RunView],
        comparisons: &[Comparison],
    ) -> PageContext<'a> {
        let nav = pages
            .iter()
            .map(|p| NavLink {
                slug: p.slug.clone(),
                title: super::markdown::first_heading(&p.markdown).unwrap_or_else(|| p.slug.clone()),
            })
            .collect();
        let title = |id: &str| runs.iter().find(|r| r.id == id).map(run_title).unwrap_or_default();
        let comparisons = comparisons
            .iter()
            .map(|c| ComparisonLink {
                slug: c.slug.clone(),
                a_id: c.a_id.clone(),
                b_id: c.b_id.clone(),
                a_title: title(&c.a_id),
                b_title: title(&c.b_id),
            })
            .collect();
        PageContext { env, nav, comparisons }
    }
}

/// `Step-3.5-Flash on H200 SXM 141GB ×4`, as the seed pages title a run.
pub fn run_title(run: &RunView) -> String {
    let hw = &run.manifest.hardware;
    let memory = hw.memory_gb.map(|g| format!(" {}GB", gb(g))).unwrap_or_default();
    format!("{} on {}{} ×{}", run.model_name, hw.device, memory, hw.count)
}

/// A short name for a run among others: model, engine and version, hardware.
pub fn run_label(run: &RunView) -> String {
    let m = &run.manifest;
    format!("{} · {} {} · {}× {}", run.model_name, m.engine.name, m.engine.version, m.hardware.count, m.hardware.device)
}

/// Memory in GB as the seed pages print it: `141`, `79.6`.
pub fn gb(v: f64) -> String {
    if v.fract() == 0.0 {
        numbers::integer(v)
    } else {
        numbers::decimal1(v)
    }
}

/// The words for a cell's state, wherever a page prints one.
pub fn state_label(state: CellState) -> &'static str {
    match state {
        CellState::Valid => "Valid",
        CellState::Looped => "Looped",
        CellState::OverCapacity => "Over capacity",
        CellState::Error => "Error",
        CellState::Missing => "Not measured",
    }
}

/// A run as index and entity pages list it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary<'a> {
    pub id: &'a str,
    pub title: String,
    pub label: String,
    pub model_name: &'a str,
    pub model_slug: &'a str,
    pub hardware_slug: &'a str,
    pub engine_slug: &'a str,
    pub engine: &'a str,
    pub engine_version: &'a str,
    pub quantization: Option<&'a str>,
    pub device: &'a str,
    pub count: u32,
    pub started_at: Option<&'a str>,
    pub origin: Origin,
    pub headline: &'a Headline,
    pub colour: String,
}

/// `colour_index` picks the run's series colour on the page's overlay charts.
pub fn summary(run: &RunView, colour_index: usize) -> RunSummary<'_> {
    let m = &run.manifest;
    let c = super::charts::series_colour(colour_index);
    RunSummary {
        id: &run.id,
        title: run_title(run),
        label: run_label(run),
        model_name: &run.model_name,
        model_slug: &run.slugs.model_slug,
        hardware_slug: &run.slugs.hardware_slug,
        engine_slug: &run.slugs.engine_slug,
        engine: &m.engine.name,
        engine_version: &m.engine.version,
        quantization: m.engine.quantization.as_deref(),
        device: &m.hardware.device,
        count: m.hardware.count,
        started_at: m.started_at.as_deref(),
        origin: m.origin,
        headline: &run.headline,
        colour: format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2),
    }
}

/// Template values from any serializable data (minijinja 3 converts only primitives itself).
pub fn ser<T: Serialize>(v: T) -> Value {
    Value::from(Serde(v))
}

/// `root` as a template value: a relative path prefix, never escaped.
pub fn root(path: &str) -> Value {
    Value::from_safe_string(path.to_string())
}

pub fn put_page(sink: &mut dyn Sink, path: &str, html: &str, stats: &mut RenderStats) -> Result<()> {
    sink.put(path, html.as_bytes())?;
    stats.pages += 1;
    stats.files += 1;
    Ok(())
}

pub fn put_file(sink: &mut dyn Sink, path: &str, body: &str, stats: &mut RenderStats) -> Result<()> {
    sink.put(path, body.as_bytes())?;
    stats.files += 1;
    Ok(())
}

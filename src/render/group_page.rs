//! Model, hardware and engine pages: every run of the group in the runs listing, and overlay
//! charts of the best few (more lines than colours would read as noise).

use std::collections::BTreeMap;

use anyhow::Result;
use minijinja::context;
use serde::Serialize;

use minijinja::value::Value;

use super::cached::{render_unit, Unit};
use super::charts::{line_chart, ChartSpec, Series, XAxis};
use super::common::{colour_css, put_page, root, ser, PageContext, RenderStats};
use super::listing::{render_listing, Listing, ListingCache, Preset};
use crate::analysis::{GroupKind, GroupView, RunView, SiteModel};
use crate::units::InputHash;
use crate::write::Sink;

/// Runs drawn on a group page's overlay charts: as many as there are series colours.
pub const CHARTED_RUNS: usize = 7;

/// (folder, template `kind`, heading label) of each kind of group page.
pub fn names(kind: GroupKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        GroupKind::Model => ("models", "model", "Model"),
        GroupKind::Hardware => ("hardware", "hardware", "Hardware"),
        GroupKind::Engine => ("engines", "engine", "Engine"),
    }
}

/// A run drawn on the overlay charts, as the legend lists it.
#[derive(Debug, Serialize)]
struct Charted<'a> {
    id: &'a str,
    title: &'a str,
    colour: String,
}

pub fn render(
    cx: &PageContext,
    site: &SiteModel,
    kind: GroupKind,
    g: &GroupView,
    cache: &ListingCache,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<BTreeMap<String, u64>> {
    let (folder, _, _) = names(kind);
    let dir = format!("{folder}/{}/", g.slug);
    let field = match kind {
        GroupKind::Model => "model_id",
        GroupKind::Hardware => "device",
        GroupKind::Engine => "engine",
    };
    let preset = Preset { field, value: g.name.clone() };
    let listing = Listing { members: &g.runs, dir: &dir, heading: &g.name, preset: Some(&preset) };
    let rendered = render_listing(cx, &site.runs, &listing, cache, sink, stats)?;
    let mut hashes = rendered.hashes;
    let charted = best_runs(&site.runs, &g.runs);
    // The page: its first rows, and the charted runs (their figures and titles).
    let key = format!("{folder}/{}", g.slug);
    let mut h = InputHash::default();
    h.u64(rendered.first_hash).piece(key.as_bytes()).piece(g.name.as_bytes());
    for &i in &charted {
        let run = &site.runs[i];
        h.u64(run.view_hash).piece(run.id.as_bytes()).piece(cx.titles[i].as_bytes());
    }
    let page = Unit::page(key, h.finish(), vec![format!("{dir}index.html")]);
    let listing = rendered.first;
    let render = |sink: &dyn Sink, st: &mut RenderStats| main_page(cx, site, kind, g, &charted, &listing, sink, st);
    hashes.extend(render_unit(page, cache.previous, render, sink, stats)?);
    Ok(hashes)
}

/// The group's own page: its first rows and the overlay charts of `charted`.
#[allow(clippy::too_many_arguments)]
fn main_page(
    cx: &PageContext,
    site: &SiteModel,
    kind: GroupKind,
    g: &GroupView,
    charted: &[usize],
    listing: &Value,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let (folder, kind_name, kind_label) = names(kind);
    let runs: Vec<&RunView> = charted.iter().map(|&i| &site.runs[i]).collect();
    let chart = |y_desc, points: fn(&RunView) -> Vec<(u32, f64)>| {
        let series = overlay(&runs, points);
        line_chart(&ChartSpec {
            x_axis: XAxis::Context,
            title: y_desc,
            x_desc: "context length (tokens)",
            y_desc,
            series: &series,
            legend: false,
            x_names: None,
        })
    };
    let single_chart = chart("single-request decode tok/s", RunView::single_request_points);
    let prefill_chart = chart("prefill tok/s", RunView::prefill_points);
    stats.charts += [&single_chart, &prefill_chart].iter().filter(|c| !c.is_empty()).count();
    let legend: Vec<Charted> = charted
        .iter()
        .enumerate()
        .map(|(n, &i)| Charted { id: &site.runs[i].id, title: &cx.titles[i], colour: colour_css(n) })
        .collect();
    let pareto_slug = (kind == GroupKind::Model).then_some(&g.slug);
    let html = cx.env.get_template("entity.html")?.render(context! {
        root => root("../../"),
        nav_pages => cx.nav_pages(),
        kind => kind_name,
        kind_label => kind_label,
        name => ser(&g.name),
        listing => listing,
        charted => ser(&legend),
        single_chart => single_chart,
        prefill_chart => prefill_chart,
        pareto_slug => pareto_slug,
    })?;
    put_page(sink, &format!("{folder}/{}/index.html", g.slug), &html, stats)
}

/// The group's runs with the highest peak total tok/s (runs without one last), at most
/// `CHARTED_RUNS`.
fn best_runs(runs: &[RunView], members: &[usize]) -> Vec<usize> {
    let mut order = members.to_vec();
    let peak = |i: usize| runs[i].headline.peak_total_tps.unwrap_or(f64::NEG_INFINITY);
    order.sort_by(|&a, &b| peak(b).total_cmp(&peak(a)).then_with(|| runs[a].id.cmp(&runs[b].id)));
    order.truncate(CHARTED_RUNS);
    order
}

/// One series per run: its label and its (context, value) points.
pub fn overlay(runs: &[&RunView], points: impl Fn(&RunView) -> Vec<(u32, f64)>) -> Vec<Series> {
    runs.iter()
        .map(|r| Series {
            label: super::common::run_label(r),
            points: points(r).into_iter().map(|(x, y)| (x as f64, y)).collect(),
            point_labels: Vec::new(),
            errors: vec![],
        })
        .collect()
}

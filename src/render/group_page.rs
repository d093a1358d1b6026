//! Model, hardware and engine pages: every run of the group, and overlay charts of them.

use anyhow::Result;
use minijinja::context;

use super::charts::{line_chart, ChartSpec, Series, XAxis};
use super::common::{put_page, root, run_label, ser, summary, PageContext, RenderStats, RunSummary};
use crate::analysis::{GroupKind, GroupView, RunView, SiteModel};
use crate::write::Sink;

/// (folder, template `kind`, heading label) of each kind of group page.
pub fn names(kind: GroupKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        GroupKind::Model => ("models", "model", "Model"),
        GroupKind::Hardware => ("hardware", "hardware", "Hardware"),
        GroupKind::Engine => ("engines", "engine", "Engine"),
    }
}

pub fn render(
    cx: &PageContext,
    site: &SiteModel,
    kind: GroupKind,
    g: &GroupView,
    sink: &mut dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let runs: Vec<&RunView> = g.runs.iter().map(|&i| &site.runs[i]).collect();
    let summaries: Vec<RunSummary> = runs.iter().enumerate().map(|(i, r)| summary(r, i)).collect();
    let legend = runs.len() > 1 && runs.len() <= 10;
    let chart = |y_desc, points: fn(&RunView) -> Vec<(u32, f64)>| {
        let series = overlay(&runs, points);
        line_chart(&ChartSpec {
            x_axis: XAxis::Context,
            x_desc: "context length (tokens)",
            y_desc,
            series: &series,
            legend,
        })
    };
    let single_chart = chart("single-request decode tok/s", RunView::single_request_points);
    let prefill_chart = chart("prefill tok/s", RunView::prefill_points);
    stats.charts += [&single_chart, &prefill_chart].iter().filter(|c| !c.is_empty()).count();
    let (folder, kind_name, kind_label) = names(kind);
    let html = cx.env.get_template("entity.html")?.render(context! {
        root => root("../../"),
        nav_pages => ser(&cx.nav),
        kind => kind_name,
        kind_label => kind_label,
        name => ser(&g.name),
        runs => ser(&summaries),
        single_chart => single_chart,
        prefill_chart => prefill_chart,
    })?;
    put_page(sink, &format!("{folder}/{}/index.html", g.slug), &html, stats)
}

/// One series per run: its label and its (context, value) points.
pub fn overlay(runs: &[&RunView], points: impl Fn(&RunView) -> Vec<(u32, f64)>) -> Vec<Series> {
    runs.iter()
        .map(|r| Series {
            label: run_label(r),
            points: points(r).into_iter().map(|(x, y)| (x as f64, y)).collect(),
            point_labels: Vec::new(),
        })
        .collect()
}

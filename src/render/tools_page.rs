//! Tools side by side (`tools/<slug>/`): one server configuration measured by several
//! benchmark tools, each cell as each tool answered it, with how each tool measured.

use anyhow::Result;
use minijinja::context;
use serde::Serialize;

use super::common::{put_page, root, ser, PageContext, RenderStats};
use super::pareto_page::config_name;
use crate::analysis::rates::RateView;
use crate::analysis::tools::ToolsView;
use crate::analysis::{CellView, SiteModel};
use crate::units::numbers::context_label;
use crate::write::Sink;

#[derive(Debug, Serialize)]
struct Tool<'a> {
    id: &'a str,
    name: String,
    decode_test: &'static str,
    /// Whether the run page has notes on how the tool measured.
    notes: bool,
}

#[derive(Debug, Serialize)]
struct Row<'a> {
    label: String,
    cells: Vec<Option<&'a CellView>>,
}

/// A rate's row: each tool's first repetition at that context and offered rate.
#[derive(Debug, Serialize)]
struct RateRow<'a> {
    label: String,
    cells: Vec<Option<&'a RateView>>,
}

/// `SmolLM2-135M-Instruct on 1× AMD EPYC (2 cores) · llama.cpp · Q4_1, xllamacpp 2026.10.11549`,
/// `… at request rates` for a view of rate runs.
pub fn tools_title(v: &ToolsView) -> String {
    let kind = if v.rates.is_empty() { "" } else { " at request rates" };
    format!("{} on {}, {}{kind}", crate::units::model_display_name(&v.model_id), config_name(&v.key), v.engine_version)
}

/// A run's first repetition at (context, rate): rates equal to a millionth (tools write
/// the rate they were given back as read).
fn rate_cell(rates: &[RateView], ctx: u32, rate: f64) -> Option<&RateView> {
    rates.iter().filter(|r| r.context == ctx && (r.rate_rps - rate).abs() <= 1e-6 * rate).min_by_key(|r| r.repetition)
}

pub fn render(
    cx: &PageContext,
    site: &SiteModel,
    v: &ToolsView,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let tools: Vec<Tool> = v
        .runs
        .iter()
        .map(|&i| {
            let m = &site.runs[i].manifest;
            Tool {
                id: &site.runs[i].id,
                name: format!("{} {}", m.bench_tool.name, m.bench_tool.version),
                decode_test: match m.settings.decode_test {
                    crate::format::DecodeTest::FixedDuration => "fixed window, C streams held",
                    crate::format::DecodeTest::FixedCount => "fixed request count, at most C at once",
                },
                notes: site.runs[i].notes_markdown.is_some(),
            }
        })
        .collect();
    let rows: Vec<Row> = v
        .cells
        .iter()
        .map(|&(ctx, c)| Row {
            label: format!("{} × {c}", context_label(ctx)),
            cells: v.runs.iter().map(|&i| site.runs[i].decode_cell(ctx, c)).collect(),
        })
        .collect();
    let rate_rows: Vec<RateRow> = v
        .rates
        .iter()
        .map(|&(ctx, rate)| RateRow {
            label: format!("{} at {}/s", context_label(ctx), crate::units::numbers::rate(rate)),
            cells: v.runs.iter().map(|&i| rate_cell(&site.runs[i].rates, ctx, rate)).collect(),
        })
        .collect();
    let html = cx.env.get_template("tools.html")?.render(context! {
        root => root("../../"),
        nav_pages => cx.nav_pages(),
        name => tools_title(v),
        tools => ser(&tools),
        rows => ser(&rows),
        rate_rows => ser(&rate_rows),
    })?;
    put_page(sink, &format!("tools/{}/index.html", v.slug), &html, stats)
}

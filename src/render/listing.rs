//! Runs listings: the runs table of the index and of each model / hardware / engine page.
//! The first page of rows is in the page itself; the rest are plain paginated pages
//! (`list/2/`, ...) for readers without script, and `index.json` (with `index.js`, its twin
//! for `file://`) for the script that sorts, filters and searches every run.

use anyhow::Result;
use minijinja::context;
use minijinja::value::Value;
use serde::Serialize;

use super::common::{put_file, put_page, root, ser, summary, PageContext, RenderStats, RunSummary};
use crate::analysis::RunView;
use crate::write::Sink;

/// Rows per page: the index of 10,000 runs stays far under 1 MB.
pub const PAGE_SIZE: usize = 100;

/// Run indexes newest first (undated runs last), then by id.
pub fn newest_first(runs: &[RunView], members: &[usize]) -> Vec<usize> {
    let mut order = members.to_vec();
    // `None` sorts first ascending, so descending puts it last.
    order.sort_by(|&a, &b| runs[b].started.cmp(&runs[a].started).then_with(|| runs[a].id.cmp(&runs[b].id)));
    order
}

/// What a listing's script preselects: the entity page's own model, device or engine.
#[derive(Debug, Clone, Serialize)]
pub struct Preset {
    /// A `RunSummary` field: `model_id`, `device` or `engine`.
    pub field: &'static str,
    pub value: String,
}

/// One page of a listing as the `runs_table` macro takes it.
#[derive(Debug, Serialize)]
struct ListingPage<'a> {
    rows: Vec<RunSummary<'a>>,
    total: usize,
    first: usize,
    last: usize,
    /// 1..=pages when there is more than one page.
    pager: Vec<usize>,
    number: usize,
    /// Whether this page is a `list/N/` page (its links to the others differ).
    on_list_page: bool,
    preset: Option<&'a Preset>,
}

/// Which runs a listing holds and where its first page lives.
pub struct Listing<'a> {
    pub members: &'a [usize],
    /// `""` or a folder ending with `/`: the first page is `{dir}index.html`.
    pub dir: &'a str,
    pub heading: &'a str,
    pub preset: Option<&'a Preset>,
}

/// Writes pages 2.. of `listing` and returns page 1 for the main page's template.
pub fn render_listing(
    cx: &PageContext,
    runs: &[RunView],
    listing: &Listing,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<Value> {
    let Listing { members, dir, heading, preset } = *listing;
    let order = newest_first(runs, members);
    let pages = order.len().div_ceil(PAGE_SIZE).max(1);
    let page = |n: usize, from_list_page: bool| {
        let rows: Vec<RunSummary> =
            order.iter().skip((n - 1) * PAGE_SIZE).take(PAGE_SIZE).map(|&i| summary(&runs[i], &cx.titles[i])).collect();
        let first = ((n - 1) * PAGE_SIZE + 1).min(order.len());
        let pager = (1..=pages).filter(|_| pages > 1).collect();
        let last = first + rows.len().saturating_sub(1);
        ListingPage { last, rows, total: order.len(), first, pager, number: n, on_list_page: from_list_page, preset }
    };
    let depth = dir.matches('/').count();
    for n in 2..=pages {
        let html = cx.env.get_template("list.html")?.render(context! {
            root => root(&"../".repeat(depth + 2)),
            nav_pages => ser(&cx.nav),
            heading => heading,
            number => n,
            listing => ser(page(n, true)),
        })?;
        put_page(sink, &format!("{dir}list/{n}/index.html"), &html, stats)?;
    }
    Ok(ser(page(1, false)))
}

/// `index.json` (every run, newest first) and `index.js`, the same data as a script the
/// listing loads where `fetch` cannot read files (`file://`).
pub fn render_index_data(cx: &PageContext, runs: &[RunView], sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
    let all: Vec<usize> = (0..runs.len()).collect();
    let rows: Vec<RunSummary> =
        newest_first(runs, &all).into_iter().map(|i| summary(&runs[i], &cx.titles[i])).collect();
    let json = serde_json::to_string(&serde_json::json!({ "runs": rows }))?;
    put_file(sink, "index.js", &format!("window.speedMatrixIndex = {json};\n"), stats)?;
    put_file(sink, "index.json", &json, stats)
}

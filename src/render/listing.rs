//! Runs listings: the runs table of the index and of each model / hardware / engine page.
//! The first page of rows is in the page itself; the rest are plain paginated pages
//! (`list/2/`, ...) for readers without script, and `index.json` (with `index.js`, its twin
//! for `file://`) for the script that sorts, filters and searches every run.

use std::collections::BTreeMap;

use anyhow::Result;

use minijinja::context;
use minijinja::value::Value;
use serde::Serialize;

use super::cached::{render_pages, render_unit, CachedPages, Unit};
use super::common::{put_file, put_page, root, ser, summary, PageContext, RenderStats, RunSummary};
use crate::analysis::RunView;
use crate::units::InputHash;
use crate::write::Sink;

/// Rows per page: the index of 10,000 runs stays far under 1 MB.
pub const PAGE_SIZE: usize = 100;

/// Run indexes newest first (undated runs last), then by id.
pub fn newest_first(cx: &PageContext, members: &[usize]) -> Vec<usize> {
    let mut order = members.to_vec();
    order.sort_unstable_by_key(|&i| cx.newest_first[i]);
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

/// What listings need to keep the pages of the previous build whose rows did not change.
pub struct ListingCache<'a> {
    /// The previous build's hashes by folder (see `cached`).
    pub previous: &'a BTreeMap<String, u64>,
    /// By run index: a hash of the run's row (`RunSummary`).
    pub rows: Vec<u64>,
    /// Templates, settings and navigation: what frames every page.
    pub frame: u64,
}

impl<'a> ListingCache<'a> {
    pub fn new(cx: &PageContext, runs: &[RunView], previous: &'a BTreeMap<String, u64>, template_hash: u64) -> Self {
        use rayon::prelude::*;
        let rows = (0..runs.len())
            .into_par_iter()
            .map(|i| summary(&runs[i], &cx.titles[i], cx.capacity_of(i)).hash())
            .collect();
        let mut frame = InputHash::default();
        frame.u64(cx.nav_hash).u64(template_hash);
        ListingCache { previous, rows, frame: frame.finish() }
    }

    /// A hash of `order`'s rows (in that order) with `extra`.
    fn hash(&self, order: &[usize], extra: &[&[u8]]) -> u64 {
        let mut h = InputHash::default();
        h.u64(self.frame);
        for piece in extra {
            h.piece(piece);
        }
        for &i in order {
            h.u64(self.rows[i]);
        }
        h.finish()
    }
}

/// A listing whose pages 2.. are written.
pub struct RenderedListing {
    /// Page 1, for the main page's template.
    pub first: Value,
    /// A hash of what page 1 shows.
    pub first_hash: u64,
    /// The hash of each list page by folder.
    pub hashes: BTreeMap<String, u64>,
}

/// Writes pages 2.. of `listing`, kept where their rows did not change.
pub fn render_listing(
    cx: &PageContext,
    runs: &[RunView],
    listing: &Listing,
    cache: &ListingCache,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<RenderedListing> {
    let order = newest_first(cx, listing.members);
    let pages = ListPages { cx, runs, listing, cache, pages: order.len().div_ceil(PAGE_SIZE).max(1), order };
    let hashes = render_pages(&pages, cache.previous, sink, stats)?;
    Ok(RenderedListing { first: ser(pages.page(1, false)), first_hash: pages.hash(1), hashes })
}

/// A listing's pages in the order shown; each of pages 2.. a unit (`list/N/`).
struct ListPages<'a> {
    cx: &'a PageContext<'a>,
    runs: &'a [RunView],
    listing: &'a Listing<'a>,
    cache: &'a ListingCache<'a>,
    /// Member indexes newest first.
    order: Vec<usize>,
    pages: usize,
}

impl ListPages<'_> {
    /// Page `n` (from 1) as the `runs_table` macro takes it.
    fn page(&self, n: usize, on_list_page: bool) -> ListingPage<'_> {
        let cx = self.cx;
        let rows: Vec<RunSummary> = self
            .order
            .iter()
            .skip((n - 1) * PAGE_SIZE)
            .take(PAGE_SIZE)
            .map(|&i| summary(&self.runs[i], &cx.titles[i], cx.capacity_of(i)))
            .collect();
        let total = self.order.len();
        let first = ((n - 1) * PAGE_SIZE + 1).min(total);
        let pager = (1..=self.pages).filter(|_| self.pages > 1).collect();
        let last = first + rows.len().saturating_sub(1);
        ListingPage { last, rows, total, first, pager, number: n, on_list_page, preset: self.listing.preset }
    }

    /// What page `n` shows: its rows, where it is and how many pages there are.
    fn hash(&self, n: usize) -> u64 {
        let (order, listing) = (&self.order, self.listing);
        let rows = &order[((n - 1) * PAGE_SIZE).min(order.len())..(n * PAGE_SIZE).min(order.len())];
        let shape = [n, self.pages, order.len()].map(|v| v as u64);
        let shape: Vec<u8> = shape.iter().flat_map(|v| v.to_le_bytes()).collect();
        let preset = listing.preset.map(|p| format!("{}={}", p.field, p.value)).unwrap_or_default();
        self.cache.hash(rows, &[listing.dir.as_bytes(), listing.heading.as_bytes(), preset.as_bytes(), &shape])
    }
}

impl CachedPages for ListPages<'_> {
    fn units(&self) -> Vec<Unit<'_>> {
        let unit = |n: usize| {
            let key = format!("{}list/{n}", self.listing.dir);
            let files = vec![format!("{key}/index.html")];
            Unit::page(key, self.hash(n), files)
        };
        (2..=self.pages).map(unit).collect()
    }

    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let (n, dir) = (i + 2, self.listing.dir);
        let depth = dir.matches('/').count();
        let html = self.cx.env.get_template("list.html")?.render(context! {
            root => root(&"../".repeat(depth + 2)),
            nav_pages => self.cx.nav_pages(),
            heading => self.listing.heading,
            number => n,
            listing => ser(self.page(n, true)),
        })?;
        put_page(sink, &format!("{dir}list/{n}/index.html"), &html, stats)
    }
}

/// `index.json` (every run, newest first: what the listing shows) and `index.js` (the same
/// as a script the listing loads where `fetch` cannot read files: `file://`). Both grow with
/// the site, so rows are arrays under one list of `columns` (names once, not once a row),
/// figures keep six significant digits, and a run's capacity in full is in its own
/// `cells.json.gz`: some 300 bytes a run, 3 MB at 10,000 runs, under a host's 5 MB a file.
/// `capacity_slo` names the objective the `capacity` column is for (the site's first SLO).
fn index_document(
    rows: Vec<RunSummary>,
    regressions: &[super::series_page::RegressionFound],
    capacity_slo: Option<&str>,
) -> Result<String> {
    use serde_json::Value;
    let objects: Vec<Value> = rows.iter().map(serde_json::to_value).collect::<serde_json::Result<_>>()?;
    let mut columns: Vec<String> = Vec::new();
    for o in &objects {
        for k in o.as_object().into_iter().flat_map(|m| m.keys()) {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    let runs: Vec<Value> = objects
        .iter()
        .map(|o| Value::Array(columns.iter().map(|c| o.get(c).cloned().unwrap_or(Value::Null)).collect()))
        .collect();
    let mut value = serde_json::json!({ "columns": columns, "runs": runs });
    if let Some(slo) = capacity_slo {
        value["capacity_slo"] = Value::from(slo);
    }
    if !regressions.is_empty() {
        value["regressions"] = serde_json::to_value(regressions)?;
    }
    super::downloads::round_numbers(&mut value);
    Ok(serde_json::to_string(&value)?)
}

/// `regressions`: the change points that are falls (`series_page::regressions_found`),
/// listed beside the runs where there are any.
pub fn render_index_data(
    cx: &PageContext,
    runs: &[RunView],
    regressions: &[super::series_page::RegressionFound],
    cache: &ListingCache,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<BTreeMap<String, u64>> {
    let all: Vec<usize> = (0..runs.len()).collect();
    let order = newest_first(cx, &all);
    let files = vec!["index.js".to_string(), "index.json".to_string()];
    let hash = crate::units::InputHash::default().u64(cache.hash(&order, &[b"index.json"])).json(&regressions).finish();
    let unit = Unit::listed("index.json".into(), hash, RenderStats { files: 2, ..Default::default() }, files);
    let render = |sink: &dyn Sink, st: &mut RenderStats| {
        let rows = order.iter().map(|&i| summary(&runs[i], &cx.titles[i], cx.capacity_of(i))).collect();
        let slo = cx.settings.slos().first().map(|(name, _)| *name);
        let json = index_document(rows, regressions, slo)?;
        put_file(sink, "index.js", &format!("window.speedMatrixIndex = {json};\n"), st)?;
        put_file(sink, "index.json", &json, st)
    };
    render_unit(unit, cache.previous, render, sink, stats)
}

//! A run's page (`runs/<id>/index.html`) with its charts and downloads.

use anyhow::Result;
use minijinja::context;
use serde::Serialize;

use super::cell_page::cell_slug;
use super::charts::{line_chart, line_chart_data, ChartSpec, Series, XAxis};
use super::common::{put_bytes, put_page, root, run_title, ser, PageContext, RenderStats};
use super::leaderboard_page::board_slug;
use super::{downloads, markdown};
use crate::analysis::capacity::RunCapacity;
use crate::analysis::figures::CrossCheckBasis;
use crate::analysis::reuse::ReuseSession;
use crate::analysis::{BoardKey, CellView, RunView, SiteModel};
use crate::format::Status;
use crate::units::{gzip, numbers, InputHash};
use crate::write::Sink;

/// Each run's place on the leaderboards of its cells, by run index.
pub struct Ranks {
    /// Run `i`'s places are `places[starts[i]..starts[i + 1]]` (one flat list: 10,000 runs
    /// have half a million places).
    starts: Vec<usize>,
    /// (board, rank, how many are ranked there).
    places: Vec<(BoardKey, usize, usize)>,
}

impl Ranks {
    pub fn of(site: &SiteModel) -> Ranks {
        let mut starts = vec![0; site.runs.len() + 1];
        for e in site.leaderboards.iter().flat_map(|b| &b.ranked) {
            starts[e.run + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut places = vec![(BoardKey::Prefill { context: 0 }, 0, 0); starts[site.runs.len()]];
        for b in &site.leaderboards {
            for e in &b.ranked {
                places[next[e.run]] = (b.key, e.rank, b.ranked.len());
                next[e.run] += 1;
            }
        }
        Ranks { starts, places }
    }

    /// Run `run`'s places, in board order.
    pub fn of_run(&self, run: usize) -> &[(BoardKey, usize, usize)] {
        match (self.starts.get(run), self.starts.get(run + 1)) {
            (Some(&from), Some(&to)) => &self.places[from..to],
            _ => &[],
        }
    }

    fn rank(&self, run: usize, key: BoardKey) -> Option<(usize, usize)> {
        self.of_run(run).iter().find(|(k, _, _)| *k == key).map(|&(_, r, of)| (r, of))
    }
}

/// A heatmap row as the template reads it: the cells themselves.
#[derive(Debug, Serialize)]
struct HeatRowView<'a> {
    context: u32,
    cells: Vec<Option<&'a CellView>>,
}

/// Where a cell links: its own page, and its leaderboard with the run's place there when
/// it is ranked (`place_html`).
#[derive(Debug, Serialize)]
struct CellLinks {
    cell: String,
    slug: String,
    place: Option<String>,
    /// The cell meets the site's first SLO (outlined in the heatmap).
    meets_slo: bool,
}

fn cell_links(ranks: &Ranks, index: Option<usize>, cell: &CellView) -> CellLinks {
    let key = BoardKey::of(cell);
    let slug = board_slug(key);
    let place = index.and_then(|i| ranks.rank(i, key)).map(|(rank, of)| place_html(rank, of));
    CellLinks { cell: cell_slug(cell), slug, place, meets_slo: false }
}

/// How a page links a cell to its board: `<a class="rank" href="…leaderboards/SLUG/…">`,
/// the run's place (or "leaderboard" where it has none) as the link's text.
const RANK_LINK: &str = "<a class=\"rank\" href=\"";

/// A run's place on a board as its page prints it (`#3 of 40`), the text of the cell's link
/// to that board: a change elsewhere that only moves places (one run faster, a run added)
/// rewrites these in the previous page (`patch_places`) instead of rendering it.
fn place_html(rank: usize, of: usize) -> String {
    format!("#{rank} of {of}")
}

/// `page` with every place in it set to `places` (the run's); `None` unless the page shows
/// each of them and no other (a template that leaves a place out, or a board the run is no
/// longer on: then the page is rendered again).
pub fn patch_places(page: &[u8], places: &[(BoardKey, usize, usize)]) -> Option<Vec<u8>> {
    let page = std::str::from_utf8(page).ok()?;
    let mut by_slug: rustc_hash::FxHashMap<String, (usize, usize, bool)> =
        places.iter().map(|&(key, rank, of)| (board_slug(key), (rank, of, false))).collect();
    let mut out = String::with_capacity(page.len() + 64);
    let mut rest = page;
    while let Some(at) = rest.find(RANK_LINK) {
        let after = &rest[at + RANK_LINK.len()..];
        let href = &after[..after.find("\">")?];
        let slug = href.split("leaderboards/").nth(1)?.split('/').next()?;
        let text_at = href.len() + 2;
        let text = &after[text_at..text_at + after[text_at..].find("</a>")?];
        out.push_str(&rest[..at + RANK_LINK.len() + text_at]);
        if text.starts_with('#') {
            let (rank, of, seen) = by_slug.get_mut(slug)?;
            *seen = true;
            out.push_str(&place_html(*rank, *of));
        } else {
            out.push_str(text);
        }
        rest = &after[text_at + text.len()..];
    }
    out.push_str(rest);
    by_slug.values().all(|p| p.2).then(|| out.into_bytes())
}

/// One decode cell's figure beside the server's own, and the client's CPU: the extra
/// columns of the table of all measurements.
#[derive(Debug, Serialize)]
struct CrossCheckRow {
    /// The server's figure ("per request" where it is not total tok/s).
    server: String,
    gap: String,
    client_cpu: String,
}

/// The cross-check in a sentence or two: what was compared, how far apart, how many cells
/// were flagged and the most CPU the client used (each cell's row is in the table of all
/// measurements). Empty where no cell has either.
fn cross_check_summary(run: &RunView) -> Vec<String> {
    let valid = || run.decode.iter().filter(|c| c.status == Status::Valid);
    let checks: Vec<_> = valid().filter_map(|c| c.figures.cross_check()).collect();
    let mut out = Vec::new();
    for (basis, name) in [
        (CrossCheckBasis::WindowCounter, "total tok/s against the server's token counter"),
        (CrossCheckBasis::FinishedRequests, "per request tok/s against the server's finished requests"),
    ] {
        let gaps: Vec<f64> = checks.iter().filter(|x| x.basis == basis).map(|x| x.gap_pct).collect();
        let (Some(lo), Some(hi)) = (gaps.iter().copied().reduce(f64::min), gaps.iter().copied().reduce(f64::max))
        else {
            continue;
        };
        let cells = if gaps.len() == 1 { "1 cell".to_string() } else { format!("{} cells", gaps.len()) };
        out.push(format!("{cells} compared {name}: differences from {lo:+.2}% to {hi:+.2}%."));
    }
    let flagged =
        valid().filter(|c| c.warnings.iter().any(|w| w.code == "server_disagrees" || w.code == "client_busy")).count();
    if flagged > 0 {
        out.push(format!("{flagged} flagged (a difference over 2% or a client above half a core)."));
    }
    if let Some(cpu) = valid().filter_map(|c| c.figures.client_cpu_cores).reduce(f64::max) {
        out.push(format!("The load generator used at most {cpu:.2} cores."));
    }
    out
}

/// By decode cell (in `run.decode`'s order): its figure beside the server's, and the
/// client's CPU, where the cell is valid and has either.
fn cross_check_rows(run: &RunView) -> Vec<Option<CrossCheckRow>> {
    run.decode
        .iter()
        .map(|c| {
            let x = c.figures.cross_check().filter(|_| c.status == Status::Valid);
            let cpu = c.figures.client_cpu_cores.filter(|_| c.status == Status::Valid);
            (x.is_some() || cpu.is_some()).then(|| CrossCheckRow {
                server: x.map_or_else(
                    || numbers::or_dash(None, numbers::decimal1),
                    |x| match x.basis {
                        CrossCheckBasis::WindowCounter => numbers::decimal1(x.server),
                        CrossCheckBasis::FinishedRequests => format!("{} per request", numbers::decimal1(x.server)),
                    },
                ),
                gap: numbers::or_dash(x.map(|x| x.gap_pct), |g| format!("{g:+.2}%")),
                client_cpu: numbers::or_dash(cpu, |c| format!("{c:.2}")),
            })
        })
        .collect()
}

/// Joules per output token by context and concurrency, when the run sampled device power.
fn energy_rows(rows: &[HeatRowView]) -> Vec<(String, Vec<String>)> {
    let any = rows.iter().flat_map(|r| r.cells.iter().flatten()).any(|c| c.figures.joules_per_token.is_some());
    if !any {
        return Vec::new();
    }
    rows.iter()
        .map(|r| {
            let cells = r
                .cells
                .iter()
                .map(|c| numbers::or_dash(c.and_then(|c| c.figures.joules_per_token), |j| format!("{j:.3}")))
                .collect();
            (numbers::context_label(r.context), cells)
        })
        .collect()
}

/// The files a run's page writes, under `runs/<id>/` (a rate run's requests too).
pub fn files(run: &RunView) -> Vec<String> {
    let requests = has_requests(run).then_some(REQUESTS_CSV);
    ["index.html", "cells.csv.gz", "cells.json.gz"]
        .into_iter()
        .chain(requests)
        .map(|f| format!("runs/{}/{f}", run.id))
        .collect()
}

/// A rate run's every request, beside its page.
const REQUESTS_CSV: &str = "requests.csv.gz";

/// A rate run with requests of its own (imported figures as reported have none).
fn has_requests(run: &RunView) -> bool {
    run.rates.iter().any(|r| !r.requests.is_empty())
}

/// A hash of everything a run's files are made from but its places on the leaderboards
/// (`places_hash`): the run's view (`view_hash`, and the slugs set after it), its title,
/// comparisons and the navigation, and the templates. Equal hashes (both) mean
/// byte-identical files, so a rebuild can keep the previous ones.
pub fn input_hash(cx: &PageContext, run: &RunView, index: usize, template_hash: u64) -> u64 {
    let mut h = InputHash::default();
    h.u64(run.view_hash);
    h.json(&run.slugs);
    h.piece(cx.titles[index].as_bytes());
    for c in cx.comparisons.iter().filter(|c| c.a_id == run.id || c.b_id == run.id) {
        h.json(c);
    }
    if let Some((near, all)) = cx.siblings.get(index) {
        for (j, id) in near {
            h.piece(id.as_bytes()).piece(cx.titles[*j].as_bytes());
        }
        h.u64(*all as u64);
    }
    if let Some(&published) = cx.evidence.get(index) {
        h.u64(u64::from(published));
    }
    if let Some(Some(session)) = cx.reuse.get(index) {
        h.json(session);
    }

    h.u64(cx.nav_hash);
    h.u64(template_hash);
    h.finish()
}

/// A hash of run `index`'s places on the leaderboards (which boards it is on follows from
/// its cells, so only the ranks and the boards' sizes tell).
pub fn places_hash(ranks: &Ranks, index: usize) -> u64 {
    let mut h = InputHash::default();
    for &(_, rank, of) in ranks.of_run(index) {
        h.u64((rank as u64) << 32 | of as u64);
    }
    h.finish()
}

/// The most concurrency levels a run page shows (a sweep's other levels are on their cell
/// pages and in the downloads).
pub const MAX_PAGE_LEVELS: usize = 48;

/// A run as its page shows it: its view, its index among the site's runs (its place on the
/// boards and its siblings are found by it), its capacity.
pub struct RunInSite<'a> {
    pub view: &'a RunView,
    pub index: usize,
    pub capacity: &'a RunCapacity,
}

pub fn render(
    cx: &PageContext,
    site_run: RunInSite<'_>,
    ranks: &Ranks,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let RunInSite { view: run, index, capacity } = site_run;
    let index = Some(index);
    let settings = &cx.settings;
    // A sweep of thousands of levels: the page shows an even selection of them, so its size
    // stays bounded; each cell keeps its own page and its line in the downloads.
    let folded = run.folded(MAX_PAGE_LEVELS);
    let full = run;
    let run = folded.as_ref().unwrap_or(run);
    let prefill_chart = prefill_chart(run);
    let tvi_chart = throughput_interactivity_chart(run);
    let reuse = index.and_then(|i| cx.reuse.get(i)).and_then(Option::as_ref);
    let reuse_chart = reuse.map(reuse_chart).unwrap_or_default();
    stats.charts += [&prefill_chart, &tvi_chart, &reuse_chart].iter().filter(|c| !c.is_empty()).count();
    let rate_charts = super::rate_charts::rate_charts(run, capacity);
    stats.charts += rate_charts.len();
    let notes_html = run.notes_markdown.as_deref().map(|md| markdown::to_html_from_level(md, 3));
    let details: Vec<String> = run.decode.iter().map(downloads::cell_detail).collect();
    let comparisons: Vec<_> = cx.comparisons.iter().filter(|c| c.a_id == run.id || c.b_id == run.id).collect();
    let heat_rows: Vec<HeatRowView> = run
        .heatmap
        .rows
        .iter()
        .map(|row| HeatRowView { context: row.context, cells: run.row_cells(row).collect() })
        .collect();
    let meets = |c: &CellView| {
        capacity.contexts.iter().any(|x| x.context == c.context && x.meets_first.contains(&c.concurrency))
    };
    let heat_links: Vec<Vec<Option<CellLinks>>> = heat_rows
        .iter()
        .map(|row| {
            row.cells
                .iter()
                .map(|c| c.map(|c| CellLinks { meets_slo: meets(c), ..cell_links(ranks, index, c) }))
                .collect()
        })
        .collect();
    let prefill_links: Vec<CellLinks> = run.prefill.iter().map(|c| cell_links(ranks, index, c)).collect();
    let decode_slugs: Vec<String> = run.decode.iter().map(cell_slug).collect();
    let cross_checks = cross_check_rows(run);
    let energy = energy_rows(&heat_rows);
    let own_title = index.and_then(|i| cx.titles.get(i)).map_or("", String::as_str);
    let html = cx.env.get_template("run.html")?.render(context! {
        root => root("../../"),
        nav_pages => cx.nav_pages(),
        run => ser(run),
        title => run_title(run),
        // Unique among the site's runs (tabs, bookmarks, search results, shared links).
        page_title => index.and_then(|i| cx.titles.get(i)).cloned().unwrap_or_else(|| run_title(run)),
        prefill_chart => prefill_chart,
        tvi_chart => tvi_chart,
        reuse => ser(reuse.map(|r| reuse_view(r, &run.id))),
        reuse_chart => reuse_chart,
        notes_html => ser(notes_html),
        decode_details => ser(details),
        comparisons => ser(comparisons),
        heat_rows => ser(heat_rows),
        heat_links => ser(heat_links),
        prefill_links => ser(prefill_links),
        decode_slugs => ser(decode_slugs),
        cross_checks => ser(cross_checks),
        warning_groups => ser(warning_groups(run)),
        cross_summary => cross_check_summary(run),
        energy_rows => ser(energy),
        repeated => run.prefill.iter().chain(&run.decode).map(|c| c.repetitions).max().filter(|n| *n > 1),
        // The decode cells' planned prefix reuse (`--prefix-reuse`), if any.
        prefix_reuse => run.manifest.settings.prefix_reuse_pct,
        turns => run.manifest.settings.turns,
        // Streams that reasoned first: the TTFT is of any token, the answer's is apart.
        reasoning => run.decode.iter().any(|c| c.figures.answer_ttft_ms.is_some()),
        // Several tokens a chunk somewhere (speculative decoding, MTP): shown where so.
        multi_token => run.decode.iter().any(|c| c.figures.tokens_per_chunk.is_some_and(|t| t >= MULTI_TOKEN)),
        folded => folded.as_ref().map(|f| {
            let contexts = |r: &RunView| r.heatmap.rows.len().max(r.prefill.len());
            (f.heatmap.columns.len(), full.heatmap.columns.len(), contexts(f), contexts(full))
        }),
        targets => super::targets_page::run_targets(
            capacity,
            settings,
            &run.heatmap.rows.iter().map(|r| r.context).collect::<Vec<_>>()
        ),
        siblings => index
            .and_then(|i| cx.siblings.get(i))
            .into_iter()
            .flat_map(|(near, _)| near)
            .map(|(j, id)| (id.clone(), distinct_title(own_title, &cx.titles[*j])))
            .collect::<Vec<_>>(),
        siblings_total => index.and_then(|i| cx.siblings.get(i)).map_or(0, |s| s.1),
        rate_capacity => ser(&capacity.rates),
        rate_charts => ser(&rate_charts),
        rate_requests => has_requests(run),
        evidence_days => index.filter(|&i| !cx.evidence[i]).and(cx.settings.publish.evidence_days),
    })?;
    let dir = format!("runs/{}", run.id);
    put_page(sink, &format!("{dir}/index.html"), &html, stats)?;
    stats.run_pages += 1;
    // Both downloads compressed (a spreadsheet or pandas reads the CSV's gzip as it is):
    // the site's bytes are its budget, and the CSV is a ninth of a run's page.
    put_bytes(sink, &format!("{dir}/cells.csv.gz"), &gzip(downloads::cells_csv(full).as_bytes()), stats)?;
    if has_requests(full) {
        put_bytes(sink, &format!("{dir}/{REQUESTS_CSV}"), &gzip(downloads::requests_csv(full).as_bytes()), stats)?;
    }
    // Compressed: the JSON is some 8 times the size of its gzip, and a download (curl
    // piped to gunzip, pandas' read_json) reads either; the site's bytes are its budget.
    put_bytes(sink, &format!("{dir}/cells.json.gz"), &gzip(downloads::cells_json(full, capacity).as_bytes()), stats)
}

/// Another run's listing title without the leading parts it shares with this run's (a
/// repetition's model, engine and hardware are this run's): its date and id.
fn distinct_title(own: &str, other: &str) -> String {
    let own: Vec<&str> = own.split(" · ").collect();
    let parts: Vec<&str> = other.split(" · ").collect();
    let shared = parts.iter().zip(&own).take_while(|(a, b)| a == b).count().min(parts.len().saturating_sub(1));
    parts[shared..].join(" · ")
}

/// A warning code and the cells that carry it, decode cells first, in page order; the
/// message of the first (a code's messages differ only in their figures).
#[derive(Serialize)]
struct WarningGroup<'a> {
    code: &'a str,
    cells: Vec<String>,
    message: &'a str,
}

/// The run's warnings grouped by code: a run whose server's counter disagrees at 18 cells
/// says so once, naming the cells, not 18 times (each cell's own message is in its
/// evidence, under the heatmap's flag).
fn warning_groups(run: &RunView) -> Vec<WarningGroup<'_>> {
    let decode = run.decode.iter().map(|c| (format!("{} × {}", numbers::context_label(c.context), c.concurrency), c));
    let prefill = run.prefill.iter().map(|c| (format!("prefill {}", numbers::context_label(c.context)), c));
    let mut groups: Vec<WarningGroup> = Vec::new();
    for (label, c) in decode.chain(prefill) {
        for w in &c.warnings {
            match groups.iter_mut().find(|g| g.code == w.code) {
                Some(g) => g.cells.push(label.clone()),
                None => groups.push(WarningGroup { code: &w.code, cells: vec![label.clone()], message: &w.message }),
            }
        }
    }
    groups
}

/// Tokens per chunk from which a cell is said to send several a chunk (one a chunk, with a
/// final usage chunk's rounding, stays below it).
const MULTI_TOKEN: f64 = 1.05;

/// Prompt tok/s against context, each point labelled with its TTFT.
fn prefill_chart(run: &RunView) -> String {
    let cells: Vec<_> = run
        .prefill
        .iter()
        .filter(|c| c.status == Status::Valid)
        .filter_map(|c| c.figures.prompt_tps.map(|v| (c, v)))
        .collect();
    let series = [Series {
        label: "prompt tok/s".into(),
        points: cells.iter().map(|(c, v)| (c.context as f64, *v)).collect(),
        point_labels: cells
            .iter()
            .map(|(c, _)| c.figures.ttft_ms.map(numbers::millis).map(|t| format!("  {t}")).unwrap_or_default())
            .collect(),
        errors: cells
            .iter()
            .map(|(c, _)| whisker(c.spread.as_deref().and_then(|s| s.get(crate::analysis::metric::Metric::PromptTps))))
            .collect(),
    }];
    // Drawn in the browser, as the chart of throughput against interactivity.
    line_chart_data(&ChartSpec {
        x_axis: XAxis::Context,
        title: "Prefill: prompt tok/s by context length",
        x_desc: "context length (tokens); labels: TTFT",
        y_desc: "prompt tok/s",
        series: &series,
        legend: false,
        x_names: None,
    })
}

/// TTFT against the planned prefix reuse: one line per context, at the session's lowest
/// concurrency (one request's prefill, not a queue, then sets the time).
fn reuse_chart(session: &ReuseSession) -> String {
    let Some(lowest) = session.rows.iter().map(|r| r.concurrency).min() else { return String::new() };
    let series: Vec<Series> = session
        .rows
        .iter()
        .filter(|r| r.concurrency == lowest)
        .filter_map(|r| {
            let points: Vec<(f64, f64, Option<f64>)> = session
                .levels
                .iter()
                .zip(&r.at)
                .filter_map(|(l, f)| {
                    let f = f.as_ref()?;
                    Some((f64::from(l.planned_pct), f.ttft_ms?, f.cached_prompt_pct))
                })
                .collect();
            (points.len() >= 2).then(|| Series {
                label: numbers::context_label(r.context),
                points: points.iter().map(|p| (p.0, p.1)).collect(),
                point_labels: points
                    .iter()
                    .map(|p| p.2.map(|c| format!("  {c:.0}% cached")).unwrap_or_default())
                    .collect(),
                errors: vec![None; points.len()],
            })
        })
        .collect();
    if series.is_empty() {
        return String::new();
    }
    let title = format!("TTFT by prefix reuse, concurrency {lowest}");
    line_chart(&ChartSpec {
        x_axis: XAxis::Linear,
        title: &title,
        x_desc: "planned prefix reuse (%); labels: measured share of prompt tokens cached",
        y_desc: "TTFT (ms)",
        series: &series,
        legend: series.len() > 1,
        x_names: None,
    })
}

/// A session's levels and cells as the run page's table shows them: figures formatted,
/// the page's own level marked.
#[derive(Serialize)]
struct ReuseTable {
    levels: Vec<(String, u32, bool)>,
    rows: Vec<(String, u32, Vec<[String; 3]>)>,
    turns: bool,
}

fn reuse_view(session: &ReuseSession, this: &str) -> ReuseTable {
    let turns = session.rows.iter().flat_map(|r| r.at.iter().flatten()).any(|f| f.next_turn_ttft_ms.is_some());
    ReuseTable {
        levels: session.levels.iter().map(|l| (l.id.clone(), l.planned_pct, l.id == this)).collect(),
        rows: session
            .rows
            .iter()
            .map(|r| {
                let at =
                    r.at.iter()
                        .map(|f| match f {
                            None => ["—".to_string(), String::new(), String::new()],
                            Some(f) => [
                                numbers::or_dash(f.ttft_ms, numbers::millis)
                                    + &f.next_turn_ttft_ms
                                        .map(|t| format!(" · later turns {}", numbers::millis(t)))
                                        .unwrap_or_default(),
                                numbers::or_dash(f.cached_prompt_pct, |c| format!("{c:.1}%")),
                                numbers::or_dash(f.total_tps, |t| format!("{t:.1}")),
                            ],
                        })
                        .collect();
                (numbers::context_label(r.context), r.concurrency, at)
            })
            .collect(),
        turns,
    }
}

/// A chart whisker from a figure's interval (any kind: a within-window interval is drawn
/// too, the page's notes say what each covers).
fn whisker(e: Option<&crate::analysis::interval::Estimate>) -> Option<(f64, f64)> {
    e.and_then(|e| e.interval).map(|i| (i.lo, i.hi))
}

/// Total tok/s against per-request tok/s: one line per context, one point per valid cell;
/// whiskers are total tok/s's intervals. The chart's numbers, drawn by the browser.
fn throughput_interactivity_chart(run: &RunView) -> String {
    let series: Vec<Series> = run
        .heatmap
        .rows
        .iter()
        .filter_map(|row| {
            let mut pts: Vec<(f64, f64, u32, Option<(f64, f64)>)> = run
                .row_cells(row)
                .flatten()
                .filter(|c| c.status == Status::Valid)
                .filter_map(|c| {
                    let spread =
                        whisker(c.spread.as_deref().and_then(|s| s.get(crate::analysis::metric::Metric::TotalTps)));
                    Some((c.figures.per_request_tps?, c.figures.total_tps?, c.concurrency, spread))
                })
                .collect();
            if pts.is_empty() {
                return None;
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Some(Series {
                label: format!("{} context", numbers::context_label(row.context)),
                points: pts.iter().map(|p| (p.0, p.1)).collect(),
                point_labels: pts.iter().map(|p| format!(" ×{}", p.2)).collect(),
                errors: pts.iter().map(|p| p.3).collect(),
            })
        })
        .collect();
    // Drawn in the browser (`static/charts.js`): the run page's largest chart, eight
    // kilobytes of SVG for a 48-cell run, is a kilobyte of numbers; the table of all
    // measurements has every figure without scripts.
    line_chart_data(&ChartSpec {
        x_axis: XAxis::Linear,
        title: "Throughput against interactivity",
        x_desc: "per-request tok/s (interactivity); labels: requests at once",
        y_desc: "total tok/s",
        series: &series,
        legend: series.len() > 1,
        x_names: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOARD: BoardKey = BoardKey::Decode {
        context: 8192,
        concurrency: 4,
        workload: crate::format::Workload { prefix_reuse_pct: None, turns: None },
    };
    const PREFILL: BoardKey = BoardKey::Prefill { context: 8192 };

    fn page(places: &[(BoardKey, usize, usize)]) -> String {
        let link = |k: BoardKey, text: &str| {
            format!("{RANK_LINK}../../leaderboards/{}/index.html#run-r\">{text}</a>", board_slug(k))
        };
        let cells: Vec<String> = places.iter().map(|&(k, r, of)| link(k, &place_html(r, of))).collect();
        // A board the run is not ranked on links by name, and is left as it is.
        format!(
            "<p>head</p>{}<br>{}<p>tail</p>",
            cells.join("<br>"),
            link(BoardKey::Prefill { context: 512 }, "leaderboard")
        )
    }

    #[test]
    fn places_are_set_anew_in_the_previous_page() {
        let old = page(&[(PREFILL, 4, 7), (BOARD, 3, 6)]);
        let new = [(PREFILL, 5, 8), (BOARD, 3, 7)];
        let patched = patch_places(old.as_bytes(), &new).unwrap();
        assert_eq!(String::from_utf8(patched).unwrap(), page(&new));
        assert!(page(&new).contains("8k-x4/index.html#run-r\">#3 of 7</a>"), "{}", page(&new));
    }

    #[test]
    fn a_page_that_does_not_show_exactly_the_runs_places_is_rendered_again() {
        let old = page(&[(PREFILL, 4, 7), (BOARD, 3, 6)]);
        // A place the page does not show (a template that leaves it out).
        assert_eq!(patch_places(page(&[(BOARD, 3, 6)]).as_bytes(), &[(PREFILL, 1, 7), (BOARD, 3, 6)]), None);
        // A board the run is not on.
        assert_eq!(patch_places(old.as_bytes(), &[(BOARD, 3, 6)]), None);
        // A place cut short.
        let cut = &old[..old.find("</a>").unwrap()];
        assert_eq!(patch_places(cut.as_bytes(), &[(PREFILL, 4, 7), (BOARD, 3, 6)]), None);
        assert_eq!(patch_places(&[0xff, 0xfe], &[]), None);
    }
}

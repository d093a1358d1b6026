//! Every page of a site, in order: run pages (rendered in parallel), group pages, the
//! views across runs (leaderboards, throughput against interactivity, trends),
//! comparisons, the index with its data file, the glossary, Markdown pages, the 404 page,
//! and with a base URL the sitemap and feed. Files go to a `Sink`; only `write` knows where
//! they land.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use minijinja::context;
use rayon::prelude::*;
use serde::Serialize;

use super::cached::{render_pages, render_parallel, CachedPages, Patch, Unit};
use super::common::{put_page, root, ser, PageContext, RenderStats};
use super::feeds::PageRecorder;
use super::series_page::series_title;
use super::{
    cell_page, feeds, group_page, leaderboard_page, listing, markdown, pareto_page, run_page, series_page,
    targets_page, tools_page,
};
use crate::analysis::evidence::CellDetail;
use crate::analysis::series::Trend;
use crate::analysis::{
    Comparison, GroupKind, GroupView, RunView, SiteModel, ACTIVE_MISMATCH_TOLERANCE, CLIENT_CPU_LIMIT_CORES,
    SERVER_DISAGREEMENT_TOLERANCE,
};
use crate::format::{PageSource, SiteSettings};
use crate::units::InputHash;
use crate::write::Sink;

pub struct SitePages<'a> {
    pub site: &'a SiteModel,
    /// `templates::source_hash` of the templates in `env`.
    pub template_hash: u64,
    /// The run as loaded, records and all, for its cell pages (read again when its pages are
    /// rendered: the site does not keep every record in memory).
    pub cell_details: &'a (dyn Fn(&RunView) -> Result<Vec<CellDetail>> + Sync),
    /// Folder -> input hash of the cached folders the previous build wrote (see `cached`).
    pub previous: &'a BTreeMap<String, u64>,
    pub settings: &'a SiteSettings,
    pub comparisons: &'a [Comparison],
    /// The comparisons the series' flagged steps link to beyond `comparisons`.
    pub step_comparisons: &'a [Comparison],
    pub pages: &'a [PageSource],
    pub env: &'a minijinja::Environment<'static>,
}

/// The run pages' input hashes without their places (what views and comparisons are made
/// from), by run index; and every unit's hash by folder (places included, under
/// `runs/<id>#places`).
struct Rendered {
    hashes: Vec<u64>,
    by_folder: BTreeMap<String, u64>,
}

/// A series as the index lists it.
#[derive(Debug, Serialize)]
struct SeriesLink<'a> {
    slug: &'a str,
    name: String,
    runs: usize,
    regressions: usize,
}

impl SitePages<'_> {
    /// Renders every page; returns what was rendered and the input hash of each cached
    /// folder (see `cached`).
    pub fn render_all(&self, sink: &dyn Sink) -> Result<(RenderStats, BTreeMap<String, u64>)> {
        let mut stats = RenderStats::default();
        let cx = PageContext::new(self.env, self.pages, self.site, self.comparisons, self.settings);
        let rec = PageRecorder { inner: sink, on: self.settings.base_url.is_some(), pages: Default::default() };
        let runs = self.render_runs(&cx, &rec, &mut stats)?;
        let mut hashes = runs.by_folder;
        let listings = listing::ListingCache::new(&cx, &self.site.runs, self.previous, self.template_hash);
        // The kinds of page that follow are independent of each other: rendered side by
        // side, one kind's last big page (a model's Pareto view, a board) overlaps the others.
        let (cx, rec, run_hashes) = (&cx, &rec, &runs.hashes);
        let ((groups, boards), (views, (comparisons, index))) = rayon::join(
            || {
                rayon::join(
                    || part(|st| self.render_groups(cx, &listings, rec, st)),
                    || part(|st| self.render_boards_and_tools(cx, listings.frame, rec, st)),
                )
            },
            || {
                rayon::join(
                    || part(|st| self.render_views(cx, run_hashes, rec, st)),
                    || {
                        rayon::join(
                            || part(|st| self.render_comparisons(cx, run_hashes, rec, st)),
                            || part(|st| self.render_index(cx, &listings, rec, st)),
                        )
                    },
                )
            },
        );
        for rendered in [groups, boards, views, comparisons, index] {
            let (kept, st) = rendered?;
            hashes.extend(kept);
            stats.add(&st);
        }
        self.render_text_pages(cx, rec, &mut stats)?;
        let pages = std::mem::take(&mut *rec.pages.lock().expect("no writer panics"));
        if let Some(base) = &self.settings.base_url {
            let regressions = series_page::regressions_found(self.site);
            feeds::render(cx, base, (&self.site.runs, &regressions), &pages, sink, &mut stats)?;
        }
        Ok((stats, hashes))
    }

    /// The leaderboards and the tools pages; returns the boards' hashes.
    fn render_boards_and_tools(
        &self,
        cx: &PageContext,
        frame: u64,
        sink: &dyn Sink,
        stats: &mut RenderStats,
    ) -> Result<BTreeMap<String, u64>> {
        let boards = leaderboard_page::render_all(cx, self.site, self.previous, frame, sink, stats);
        let mut hashes = boards.context("rendering the leaderboards")?;
        let targets = targets_page::render_all(cx, self.site, self.settings, self.previous, frame, sink, stats);
        hashes.extend(targets.context("rendering the capacity boards")?);
        for v in &self.site.tools {
            tools_page::render(cx, self.site, v, sink, stats).context("rendering a tools page")?;
        }
        Ok(hashes)
    }

    /// Model, hardware and engine pages with their list pages, in parallel; returns the
    /// hashes of their units.
    fn render_groups(
        &self,
        cx: &PageContext,
        listings: &listing::ListingCache,
        sink: &dyn Sink,
        stats: &mut RenderStats,
    ) -> Result<BTreeMap<String, u64>> {
        let groups: Vec<(GroupKind, &GroupView)> =
            GroupKind::ALL.into_iter().flat_map(|kind| self.site.groups(kind).iter().map(move |g| (kind, g))).collect();
        let hashes = std::sync::Mutex::new(BTreeMap::new());
        let render = |&(kind, g): &(GroupKind, &GroupView), sink: &dyn Sink, st: &mut RenderStats| {
            let kept = group_page::render(cx, self.site, kind, g, listings, sink, st)
                .with_context(|| format!("rendering {} page {}", group_page::names(kind).1, g.slug))?;
            hashes.lock().expect("no writer panics").extend(kept);
            Ok(())
        };
        render_parallel(&groups, render, sink, stats)?;
        Ok(hashes.into_inner().expect("no writer panics"))
    }

    /// Run pages (with their downloads) and cell pages, in parallel, kept where their
    /// inputs did not change and patched where only their places did; returns each run
    /// page's input hash without its places, and every unit's by folder. A run's cell pages
    /// are a unit of their own: they do not show the run's places, which one run's change
    /// can move on thousands of runs.
    fn render_runs(&self, cx: &PageContext, sink: &dyn Sink, stats: &mut RenderStats) -> Result<Rendered> {
        let site = self.site;
        let ranks = run_page::Ranks::of(site);
        let page_hashes: Vec<(u64, u64)> = (0..site.runs.len())
            .into_par_iter()
            .map(|i| {
                let content = run_page::input_hash(cx, &site.runs[i], i, self.template_hash);
                (content, run_page::places_hash(&ranks, i))
            })
            .collect();
        let runs = RunPages { cx, site, ranks: &ranks, page_hashes: &page_hashes };
        let mut by_folder = render_pages(&runs, self.previous, sink, stats)?;
        let cell_hashes: Vec<u64> = (0..site.runs.len())
            .into_par_iter()
            .map(|i| cell_page::input_hash(cx, &site.runs[i], i, self.template_hash))
            .collect();
        let published = (0..site.runs.len()).filter(|&i| cx.evidence[i]).collect();
        let cells = CellPages { cx, site, runs: published, hashes: cell_hashes, details: self.cell_details };
        by_folder.extend(render_pages(&cells, self.previous, sink, stats)?);
        // What the views and comparisons are made from: a run's page but its places, which
        // none of them shows.
        Ok(Rendered { hashes: page_hashes.iter().map(|h| h.0).collect(), by_folder })
    }

    /// neither the view nor its runs' pages changed.
    fn render_views(
        &self,
        cx: &PageContext,
        run_hashes: &[u64],
        sink: &dyn Sink,
        stats: &mut RenderStats,
    ) -> Result<BTreeMap<String, u64>> {
        let views =
            Views { cx, site: self.site, run_hashes, template_hash: self.template_hash, settings: self.settings };
        let mut hashes = render_pages(&views, self.previous, sink, stats)?;
        hashes.extend(render_pages(&SeriesPages(views), self.previous, sink, stats)?);
        Ok(hashes)
    }

    /// The listed comparisons and those the series flag, in parallel, kept where neither
    /// the comparison nor its runs' pages changed.
    fn render_comparisons(
        &self,
        cx: &PageContext,
        run_hashes: &[u64],
        sink: &dyn Sink,
        stats: &mut RenderStats,
    ) -> Result<BTreeMap<String, u64>> {
        let all: Vec<&Comparison> = self.comparisons.iter().chain(self.step_comparisons).collect();
        let pages = ComparisonPages { cx, site: self.site, all, run_hashes, template_hash: self.template_hash };
        render_pages(&pages, self.previous, sink, stats)
    }

    /// The index page, its list pages and `index.json`; returns the hashes of those kept.
    fn render_index(
        &self,
        cx: &PageContext,
        cache: &listing::ListingCache,
        sink: &dyn Sink,
        stats: &mut RenderStats,
    ) -> Result<BTreeMap<String, u64>> {
        let all: Vec<usize> = (0..self.site.runs.len()).collect();
        let runs = listing::Listing { members: &all, dir: "", heading: "Runs", preset: None };
        let listing::RenderedListing { first: listing, mut hashes, .. } =
            listing::render_listing(cx, &self.site.runs, &runs, cache, sink, stats)?;
        let regressions = series_page::regressions_found(self.site);
        hashes.extend(listing::render_index_data(cx, &self.site.runs, &regressions, cache, sink, stats)?);
        let series: Vec<SeriesLink> = self
            .site
            .series
            .iter()
            .map(|s| SeriesLink {
                slug: &s.slug,
                name: series_title(s),
                runs: s.runs.len(),
                regressions: s.steps.iter().filter(|st| matches!(st.trend, Trend::Regression | Trend::Mixed)).count(),
            })
            .collect();
        let tools: Vec<SeriesLink> = self
            .site
            .tools
            .iter()
            .map(|v| SeriesLink { slug: &v.slug, name: tools_page::tools_title(v), runs: v.runs.len(), regressions: 0 })
            .collect();
        let index = cx.env.get_template("index.html")?.render(context! {
            root => root(""),
            nav_pages => cx.nav_pages(),
            best => targets_page::front_page(cx, self.site, self.settings),
            listing => listing,
            models => ser(&self.site.models),
            hardware => ser(&self.site.hardware),
            engines => ser(&self.site.engines),
            comparisons => ser(&cx.comparisons),
            series => ser(&series),
            tools => ser(&tools),
        })?;
        put_page(sink, "index.html", &index, stats)?;
        Ok(hashes)
    }

    /// The glossary, the cell viewer, the data folder's Markdown pages and the 404 page.
    fn render_text_pages(&self, cx: &PageContext, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let glossary = cx.env.get_template("glossary.html")?.render(context! {
            root => root("../"), nav_pages => cx.nav_pages(),
            active_mismatch_pct => ACTIVE_MISMATCH_TOLERANCE * 100.0,
            server_disagreement_pct => SERVER_DISAGREEMENT_TOLERANCE * 100.0,
            client_cpu_limit => CLIENT_CPU_LIMIT_CORES,
            change_threshold_pct => self.settings.change_threshold_pct,
            change_noise_pct => self.settings.change_noise_pct,
            import_mappings => import_mappings(),
        })?;
        put_page(sink, "glossary/index.html", &glossary, stats)?;
        cell_page::render_viewer(cx, sink, stats)?;
        for p in self.pages {
            let title = markdown::first_heading(&p.markdown).unwrap_or_else(|| p.slug.clone());
            let html = cx.env.get_template("page.html")?.render(context! {
                root => root("../../"), nav_pages => cx.nav_pages(), title => title, body => markdown::to_html(&p.markdown),
            })?;
            put_page(sink, &format!("pages/{}/index.html", p.slug), &html, stats)?;
        }
        // Served at any missing address: links are absolute (the base URL, else the host's
        // root) and the stylesheet is inline, so the page is whole under any sub-path.
        let site_root = self.settings.base_url.as_deref().unwrap_or("/");
        let style = crate::write::assets::DEFAULT_ASSETS.iter().find(|(n, _)| *n == "style.css").map(|(_, b)| *b);
        let not_found = cx.env.get_template("404.html")?.render(context! {
            root => root(site_root),
            nav_pages => cx.nav_pages(),
            inline_style => style.map(|b| String::from_utf8_lossy(b).into_owned()),
        })?;
        put_page(sink, "404.html", &not_found, stats)
    }
}

/// The per-format field mappings of `docs/src/reference/import-formats.md` (its `## ... → our columns`
/// sections, one heading level down), so the methodology page and the docs never differ.
/// What one kind of page rendered: its units' hashes and its own counts.
fn part(
    render: impl FnOnce(&mut RenderStats) -> Result<BTreeMap<String, u64>>,
) -> Result<(BTreeMap<String, u64>, RenderStats)> {
    let mut stats = RenderStats::default();
    let hashes = render(&mut stats)?;
    Ok((hashes, stats))
}

fn import_mappings() -> String {
    const DOC: &str = include_str!("../../docs/src/reference/import-formats.md");
    let sections: Vec<&str> =
        DOC.split("\n## ").skip(1).filter(|s| s.lines().next().is_some_and(|h| h.contains('→'))).collect();
    let markdown: String = sections.iter().map(|s| format!("\n### {s}\n")).collect();
    markdown::to_html(&markdown)
        .replace("<table>", "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Field mapping\"><table>")
        .replace("</table>", "</table></div>")
}

/// The throughput views (`pareto/<model>/`), a unit each.
struct Views<'a> {
    cx: &'a PageContext<'a>,
    site: &'a SiteModel,
    /// Each run page's input hash without its places.
    run_hashes: &'a [u64],
    template_hash: u64,
    settings: &'a SiteSettings,
}

impl Views<'_> {
    /// A view is made from its runs (their pages' hashes cover each run's figures, title and
    /// links) and the settings (in `template_hash`).
    /// `downloads`: the files beside the page in its folder.
    fn unit(&self, dir: String, runs: &[usize], downloads: &[&str]) -> Unit<'static> {
        let mut h = InputHash::default();
        h.piece(dir.as_bytes());
        for &i in runs {
            h.u64(self.run_hashes[i]);
        }
        h.u64(self.template_hash);
        let mut files = vec![format!("{dir}/index.html")];
        files.extend(downloads.iter().map(|f| format!("{dir}/{f}")));
        Unit::page(dir, h.finish(), files)
    }
}

impl CachedPages for Views<'_> {
    fn units(&self) -> Vec<Unit<'_>> {
        let models = &self.site.models;
        self.site
            .paretos
            .iter()
            .map(|v| self.unit(format!("pareto/{}", models[v.model].slug), &models[v.model].runs, &[]))
            .collect()
    }

    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let guides = pareto_page::Guides::of(self.settings);
        pareto_page::render(self.cx, self.site, &self.site.paretos[i], &guides, sink, stats)
            .context("rendering a throughput view")
    }
}

/// The series pages (`series/<slug>/`), a unit each, kept as the views are.
struct SeriesPages<'a>(Views<'a>);

impl CachedPages for SeriesPages<'_> {
    fn units(&self) -> Vec<Unit<'_>> {
        self.0
            .site
            .series
            .iter()
            .map(|s| self.0.unit(format!("series/{}", s.slug), &s.runs, &["runs.csv.gz"]))
            .collect()
    }

    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let s = &self.0.site.series[i];
        series_page::render(self.0.cx, self.0.site, s, sink, stats)
            .with_context(|| format!("rendering series {}", s.slug))
    }
}

/// The comparison pages (`compare/<slug>/`), a unit each.
struct ComparisonPages<'a> {
    cx: &'a PageContext<'a>,
    site: &'a SiteModel,
    all: Vec<&'a Comparison>,
    run_hashes: &'a [u64],
    template_hash: u64,
}

impl CachedPages for ComparisonPages<'_> {
    fn units(&self) -> Vec<Unit<'_>> {
        let index = |id: &str| self.site.run_index(id).expect("comparisons are of the site's runs");
        let unit = |c: &&Comparison| {
            let mut h = InputHash::default();
            // A comparison is made from its two runs and its threshold.
            h.piece(c.slug.as_bytes()).u64(c.threshold_pct.to_bits());
            h.u64(self.run_hashes[index(&c.a_id)]).u64(self.run_hashes[index(&c.b_id)]);
            h.u64(self.template_hash);
            let dir = format!("compare/{}", c.slug);
            let files = vec![format!("{dir}/index.html"), format!("{dir}/comparison.csv")];
            Unit::page(dir, h.finish(), files)
        };
        self.all.iter().map(unit).collect()
    }

    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let cmp = self.all[i];
        series_page::render_comparison(self.cx, self.site, cmp, sink, stats)
            .with_context(|| format!("rendering comparison {}", cmp.slug))
    }
}

/// The run pages (with their downloads), a unit each, with their places apart.
struct RunPages<'a> {
    cx: &'a PageContext<'a>,
    site: &'a SiteModel,
    ranks: &'a run_page::Ranks,
    /// By run: the hash of its page without its places, and of its places.
    page_hashes: &'a [(u64, u64)],
}

impl CachedPages for RunPages<'_> {
    fn units(&self) -> Vec<Unit<'_>> {
        let kept = RenderStats { pages: 1, run_pages: 1, files: 3, reused_run_pages: 1, ..Default::default() };
        let patched = RenderStats { pages: 1, run_pages: 1, files: 3, patched_run_pages: 1, ..Default::default() };
        let ranks = self.ranks;
        let runs = self.site.runs.par_iter().enumerate().zip(self.page_hashes);
        runs.map(|((i, r), &(hash, places))| {
            let patch = Patch {
                key: format!("runs/{}#places", r.id),
                hash: places,
                file: format!("runs/{}/index.html", r.id),
                apply: Box::new(move |old| run_page::patch_places(old, ranks.of_run(i))),
                patched,
            };
            let files = Box::new(move || run_page::files(r));
            Unit { key: format!("runs/{}", r.id), files, hash, kept, patch: Some(patch) }
        })
        .collect()
    }

    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let run = &self.site.runs[i];
        let site_run = run_page::RunInSite { view: run, index: i, capacity: &self.site.capacity[i] };
        run_page::render(self.cx, site_run, self.ranks, sink, stats)
            .with_context(|| format!("rendering run {}", run.id))
    }
}

fn cells_key(run: &RunView) -> String {
    format!("runs/{}/cells", run.id)
}

/// Each run's evidence file as a unit of its own: it does not show the run's places, which
/// one run's change can move on thousands of runs.
struct CellPages<'a> {
    cx: &'a PageContext<'a>,
    site: &'a SiteModel,
    /// The runs that publish their evidence, by run index (`PageContext::evidence`).
    runs: Vec<usize>,
    /// By run: `cell_page::input_hash`.
    hashes: Vec<u64>,
    details: &'a (dyn Fn(&RunView) -> Result<Vec<CellDetail>> + Sync),
}

impl CachedPages for CellPages<'_> {
    fn units(&self) -> Vec<Unit<'_>> {
        self.runs
            .par_iter()
            .map(|&i| {
                let (r, hash) = (&self.site.runs[i], self.hashes[i]);
                let kept = RenderStats { files: 1, ..Default::default() };
                Unit { patch: None, key: cells_key(r), files: Box::new(move || cell_page::files(r)), hash, kept }
            })
            .collect()
    }

    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let i = self.runs[i];
        let run = &self.site.runs[i];
        let details = run.detail_hash.map(|_| (self.details)(run)).transpose()?;
        cell_page::render_all(self.cx, (run, i), details.as_deref(), sink, stats)
            .with_context(|| format!("rendering the cells of run {}", run.id))
    }
}

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

use super::common::{put_page, root, ser, PageContext, RenderStats};
use super::feeds::PageRecorder;
use super::series_page::series_title;
use super::{feeds, group_page, leaderboard_page, listing, markdown, pareto_page, run_page, series_page};
use crate::analysis::series::Trend;
use crate::analysis::{Comparison, GroupKind, SiteModel, ACTIVE_MISMATCH_TOLERANCE};
use crate::format::{PageSource, SiteSettings};
use crate::write::{MemorySink, Sink};

/// Keeps every one of `files` from the previous build, or none is counted as kept (the
/// caller renders them all again, replacing any kept).
fn reuse_all(sink: &mut dyn Sink, files: &[String]) -> Result<bool> {
    for f in files {
        if !sink.reuse(f)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Run pages rendered at once before they are written (bounds memory at any site size).
const RUN_BATCH: usize = 256;

pub struct SitePages<'a> {
    pub site: &'a SiteModel,
    /// `templates::source_hash` of the templates in `env`.
    pub template_hash: u64,
    /// Run id -> input hash of the run pages the previous build wrote (see `run_page::input_hash`).
    pub previous_runs: &'a BTreeMap<String, u64>,
    pub settings: &'a SiteSettings,
    pub comparisons: &'a [Comparison],
    pub pages: &'a [PageSource],
    pub env: &'a minijinja::Environment<'static>,
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
    /// Renders every page; returns what was rendered and the input hash of each run's pages.
    pub fn render_all(&self, sink: &mut dyn Sink) -> Result<(RenderStats, BTreeMap<String, u64>)> {
        let mut stats = RenderStats::default();
        let cx = PageContext::new(self.env, self.pages, &self.site.runs, self.comparisons);
        let mut rec = PageRecorder { inner: sink, pages: Vec::new() };
        let run_hashes = self.render_runs(&cx, &mut rec, &mut stats)?;
        for kind in GroupKind::ALL {
            for g in self.site.groups(kind) {
                group_page::render(&cx, self.site, kind, g, &mut rec, &mut stats)
                    .with_context(|| format!("rendering {} page {}", group_page::names(kind).1, g.slug))?;
            }
        }
        leaderboard_page::render_all(&cx, self.site, &mut rec, &mut stats).context("rendering the leaderboards")?;
        for view in &self.site.paretos {
            pareto_page::render(&cx, self.site, view, &mut rec, &mut stats).context("rendering a throughput view")?;
        }
        for s in &self.site.series {
            series_page::render(&cx, self.site, s, &mut rec, &mut stats)
                .with_context(|| format!("rendering series {}", s.slug))?;
        }
        let extra = series_page::step_comparisons(self.site, self.comparisons);
        for cmp in self.comparisons.iter().chain(extra) {
            series_page::render_comparison(&cx, self.site, cmp, &mut rec, &mut stats)
                .with_context(|| format!("rendering comparison {}", cmp.slug))?;
        }
        self.render_index(&cx, &mut rec, &mut stats)?;
        self.render_text_pages(&cx, &mut rec, &mut stats)?;
        let PageRecorder { inner: sink, pages } = rec;
        if let Some(base) = &self.settings.base_url {
            feeds::render(&cx, base, &self.site.runs, &pages, sink, &mut stats)?;
        }
        Ok((stats, run_hashes))
    }

    /// Run pages in parallel batches, written in run order (output is the same at any
    /// thread count). A run whose inputs hash as in the previous build keeps its files.
    fn render_runs(
        &self,
        cx: &PageContext,
        sink: &mut dyn Sink,
        stats: &mut RenderStats,
    ) -> Result<BTreeMap<String, u64>> {
        let site = self.site;
        let ranks = run_page::Ranks::of(site);
        let hashes: Vec<u64> = (0..site.runs.len())
            .into_par_iter()
            .map(|i| run_page::input_hash(cx, &site.runs[i], i, &ranks, self.template_hash))
            .collect();
        for start in (0..site.runs.len()).step_by(RUN_BATCH) {
            let end = (start + RUN_BATCH).min(site.runs.len());
            let mut todo = Vec::new();
            for (i, (run, hash)) in site.runs.iter().zip(&hashes).enumerate().take(end).skip(start) {
                if self.previous_runs.get(&run.id) == Some(hash) && reuse_all(sink, &run_page::files(run))? {
                    stats.add(&RenderStats {
                        pages: 1,
                        run_pages: 1,
                        files: 3,
                        reused_run_pages: 1,
                        ..Default::default()
                    });
                } else {
                    todo.push(i);
                }
            }
            let rendered: Vec<Result<(MemorySink, RenderStats)>> = todo
                .into_par_iter()
                .map(|i| {
                    let run = &site.runs[i];
                    let (mut mem, mut st) = (MemorySink::default(), RenderStats::default());
                    run_page::render(cx, run, Some(i), &ranks, &mut mem, &mut st)
                        .with_context(|| format!("rendering run {}", run.id))?;
                    Ok((mem, st))
                })
                .collect();
            for r in rendered {
                let (mem, st) = r?;
                mem.drain_into(sink)?;
                stats.add(&st);
            }
        }
        Ok(site.runs.iter().map(|r| r.id.clone()).zip(hashes).collect())
    }

    fn render_index(&self, cx: &PageContext, sink: &mut dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let all: Vec<usize> = (0..self.site.runs.len()).collect();
        let runs = listing::Listing { members: &all, dir: "", heading: "Runs", preset: None };
        let listing = listing::render_listing(cx, &self.site.runs, &runs, sink, stats)?;
        listing::render_index_data(cx, &self.site.runs, sink, stats)?;
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
        let index = cx.env.get_template("index.html")?.render(context! {
            root => root(""),
            nav_pages => ser(&cx.nav),
            listing => listing,
            models => ser(&self.site.models),
            hardware => ser(&self.site.hardware),
            engines => ser(&self.site.engines),
            comparisons => ser(&cx.comparisons),
            series => ser(&series),
        })?;
        put_page(sink, "index.html", &index, stats)
    }

    /// The glossary, the data folder's Markdown pages and the 404 page.
    fn render_text_pages(&self, cx: &PageContext, sink: &mut dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let glossary = cx.env.get_template("glossary.html")?.render(context! {
            root => root("../"), nav_pages => ser(&cx.nav),
            active_mismatch_pct => ACTIVE_MISMATCH_TOLERANCE * 100.0,
        })?;
        put_page(sink, "glossary/index.html", &glossary, stats)?;
        for p in self.pages {
            let title = markdown::first_heading(&p.markdown).unwrap_or_else(|| p.slug.clone());
            let html = cx.env.get_template("page.html")?.render(context! {
                root => root("../../"), nav_pages => ser(&cx.nav), title => title, body => markdown::to_html(&p.markdown),
            })?;
            put_page(sink, &format!("pages/{}/index.html", p.slug), &html, stats)?;
        }
        let not_found =
            cx.env.get_template("404.html")?.render(context! { root => root("/"), nav_pages => ser(&cx.nav) })?;
        put_page(sink, "404.html", &not_found, stats)
    }
}

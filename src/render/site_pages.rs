//! Every page of a site, in order: run pages, group pages, comparisons, the index, the
//! glossary, Markdown pages and the 404 page. Files go to a `Sink`; only `write` knows
//! where they land.

use anyhow::{Context, Result};
use minijinja::context;

use super::common::{put_file, put_page, root, ser, summary, PageContext, RenderStats, RunSummary};
use super::{compare_page, group_page, markdown, run_page};
use crate::analysis::{Comparison, GroupKind, SiteModel, ACTIVE_MISMATCH_TOLERANCE};
use crate::format::PageSource;
use crate::write::Sink;

pub struct SitePages<'a> {
    pub site: &'a SiteModel,
    pub comparisons: &'a [Comparison],
    pub pages: &'a [PageSource],
    pub env: &'a minijinja::Environment<'static>,
}

impl SitePages<'_> {
    pub fn render_all(&self, sink: &mut dyn Sink) -> Result<RenderStats> {
        let mut stats = RenderStats::default();
        let cx = PageContext::new(self.env, self.pages, &self.site.runs, self.comparisons);
        for run in &self.site.runs {
            run_page::render(&cx, run, sink, &mut stats).with_context(|| format!("rendering run {}", run.id))?;
        }
        for kind in GroupKind::ALL {
            for g in self.site.groups(kind) {
                group_page::render(&cx, self.site, kind, g, sink, &mut stats)
                    .with_context(|| format!("rendering {} page {}", group_page::names(kind).1, g.slug))?;
            }
        }
        for cmp in self.comparisons {
            let run = |id: &str| self.site.run(id).expect("the site checked the comparison's runs");
            let (a, b) = (run(&cmp.a_id), run(&cmp.b_id));
            let html = compare_page::comparison_html(&cx, cmp, a, b, "../../", false)?;
            put_page(sink, &format!("compare/{}/index.html", cmp.slug), &html, &mut stats)?;
            let csv = compare_page::comparison_csv(cmp);
            put_file(sink, &format!("compare/{}/comparison.csv", cmp.slug), &csv, &mut stats)?;
        }
        self.render_index(&cx, sink, &mut stats)?;
        self.render_text_pages(&cx, sink, &mut stats)?;
        Ok(stats)
    }

    fn render_index(&self, cx: &PageContext, sink: &mut dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let runs: Vec<RunSummary> = self.site.runs.iter().map(|r| summary(r, 0)).collect();
        let index = cx.env.get_template("index.html")?.render(context! {
            root => root(""),
            nav_pages => ser(&cx.nav),
            runs => ser(&runs),
            models => ser(&self.site.models),
            hardware => ser(&self.site.hardware),
            engines => ser(&self.site.engines),
            comparisons => ser(&cx.comparisons),
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

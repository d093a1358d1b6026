//! Builds every output file of the site from the normalized model: HTML pages through the
//! templates, charts through plotters, downloads. Files go to a `Sink`; only `write` knows
//! where they land.

use anyhow::{Context, Result};
use minijinja::value::{Serde, Value};
use minijinja::{context, Environment};
use serde::Serialize;

use super::charts::{line_chart, ChartSpec, Series, XAxis};
use super::{downloads, markdown};
use crate::analysis::{GroupView, Headline, RunView, SiteModel};
use crate::format::{PageSource, Status};
use crate::units::numbers;

/// Where rendered files go (relative, `/`-separated paths).
pub trait Sink {
    fn put(&mut self, rel_path: &str, bytes: &[u8]) -> Result<()>;
}

/// Counts of what was rendered, for the build summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct RenderStats {
    pub pages: usize,
    pub run_pages: usize,
    pub charts: usize,
    pub files: usize,
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
    pub origin: crate::format::Origin,
    pub headline: &'a Headline,
    pub colour: String,
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

fn gb(v: f64) -> String {
    if v.fract() == 0.0 {
        numbers::integer(v)
    } else {
        numbers::decimal1(v)
    }
}

fn summary<'a>(run: &'a RunView, colour_index: usize) -> RunSummary<'a> {
    let m = &run.manifest;
    let c = super::charts::series_colour(colour_index);
    RunSummary {
        id: &run.id,
        title: run_title(run),
        label: run_label(run),
        model_name: &run.model_name,
        model_slug: &run.model_slug,
        hardware_slug: &run.hardware_slug,
        engine_slug: &run.engine_slug,
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

pub struct SitePages<'a> {
    pub site: &'a SiteModel,
    pub pages: &'a [PageSource],
    pub env: &'a Environment<'static>,
}

impl SitePages<'_> {
    pub fn render_all(&self, sink: &mut dyn Sink) -> Result<RenderStats> {
        let mut stats = RenderStats::default();
        let nav = self.nav_pages();
        for run in &self.site.runs {
            self.render_run(run, &nav, sink, &mut stats).with_context(|| format!("rendering run {}", run.id))?;
        }
        for (kind, groups) in
            [("model", &self.site.models), ("hardware", &self.site.hardware), ("engine", &self.site.engines)]
        {
            for g in groups {
                self.render_group(kind, g, &nav, sink, &mut stats)
                    .with_context(|| format!("rendering {kind} page {}", g.slug))?;
            }
        }
        for cmp in &self.site.comparisons {
            let find = |id: &str| self.site.runs.iter().find(|r| r.id == id).expect("normalize checked the ids");
            let html = super::compare_page::comparison_html(
                self.env,
                cmp,
                find(&cmp.a_id),
                find(&cmp.b_id),
                "../../",
                false,
                &nav,
            )?;
            put_page(sink, &format!("compare/{}/index.html", cmp.slug), &html, &mut stats)?;
            sink.put(
                &format!("compare/{}/comparison.csv", cmp.slug),
                super::compare_page::comparison_csv(cmp).as_bytes(),
            )?;
            stats.files += 1;
        }
        let comparisons = self.comparison_links();
        let runs: Vec<RunSummary> = self.site.runs.iter().map(|r| summary(r, 0)).collect();
        let index = self.env.get_template("index.html")?.render(context! {
            root => Value::from_safe_string("".into()),
            nav_pages => ser(&nav),
            runs => ser(&runs),
            models => ser(&self.site.models),
            hardware => ser(&self.site.hardware),
            engines => ser(&self.site.engines),
            comparisons => ser(&comparisons),
        })?;
        put_page(sink, "index.html", &index, &mut stats)?;
        let glossary = self.env.get_template("glossary.html")?.render(context! {
            root => Value::from_safe_string("../".into()), nav_pages => ser(&nav),
            active_mismatch_pct => crate::analysis::ACTIVE_MISMATCH_TOLERANCE * 100.0,
        })?;
        put_page(sink, "glossary/index.html", &glossary, &mut stats)?;
        for p in self.pages {
            let title = markdown::first_heading(&p.markdown).unwrap_or_else(|| p.slug.clone());
            let html = self.env.get_template("page.html")?.render(context! {
                root => Value::from_safe_string("../../".into()), nav_pages => ser(&nav), title => title, body => markdown::to_html(&p.markdown),
            })?;
            put_page(sink, &format!("pages/{}/index.html", p.slug), &html, &mut stats)?;
        }
        let not_found = self
            .env
            .get_template("404.html")?
            .render(context! { root => Value::from_safe_string("/".into()), nav_pages => ser(&nav) })?;
        put_page(sink, "404.html", &not_found, &mut stats)?;
        Ok(stats)
    }

    /// (slug, a id, b id, a title, b title) of every comparison.
    fn comparison_links(&self) -> Vec<(String, String, String, String, String)> {
        let title = |id: &str| self.site.runs.iter().find(|r| r.id == id).map(run_title).unwrap_or_default();
        self.site
            .comparisons
            .iter()
            .map(|c| (c.slug.clone(), c.a_id.clone(), c.b_id.clone(), title(&c.a_id), title(&c.b_id)))
            .collect()
    }

    fn nav_pages(&self) -> Vec<(String, String)> {
        self.pages
            .iter()
            .map(|p| (p.slug.clone(), markdown::first_heading(&p.markdown).unwrap_or_else(|| p.slug.clone())))
            .collect()
    }

    fn render_run(
        &self,
        run: &RunView,
        nav: &[(String, String)],
        sink: &mut dyn Sink,
        stats: &mut RenderStats,
    ) -> Result<()> {
        let prefill_chart = prefill_chart(run);
        let tvi_chart = throughput_interactivity_chart(run);
        stats.charts += [&prefill_chart, &tvi_chart].iter().filter(|c| !c.is_empty()).count();
        let notes_html = run.notes_markdown.as_deref().map(markdown::to_html);
        let details: Vec<String> = run.decode.iter().map(downloads::cell_detail).collect();
        let html = self.env.get_template("run.html")?.render(context! {
            root => Value::from_safe_string("../../".into()),
            nav_pages => ser(nav),
            run => ser(run),
            title => run_title(run),
            prefill_chart => prefill_chart,
            tvi_chart => tvi_chart,
            notes_html => ser(notes_html),
            decode_details => ser(details),
            comparisons => ser(self.comparison_links().into_iter().filter(|c| c.1 == run.id || c.2 == run.id).collect::<Vec<_>>()),
        })?;
        let dir = format!("runs/{}", run.id);
        put_page(sink, &format!("{dir}/index.html"), &html, stats)?;
        stats.run_pages += 1;
        sink.put(&format!("{dir}/cells.csv"), downloads::cells_csv(run).as_bytes())?;
        sink.put(&format!("{dir}/cells.json"), downloads::cells_json(run).as_bytes())?;
        stats.files += 2;
        Ok(())
    }

    fn render_group(
        &self,
        kind: &str,
        g: &GroupView,
        nav: &[(String, String)],
        sink: &mut dyn Sink,
        stats: &mut RenderStats,
    ) -> Result<()> {
        let runs: Vec<&RunView> = g.runs.iter().map(|&i| &self.site.runs[i]).collect();
        let summaries: Vec<RunSummary> = runs.iter().enumerate().map(|(i, r)| summary(r, i)).collect();
        let single = overlay(&runs, |r| {
            r.decode
                .iter()
                .filter(|c| c.status == Status::Valid && c.concurrency == 1)
                .filter_map(|c| c.figures.total_tps.map(|v| (c.context as f64, v)))
                .collect()
        });
        let prefill = overlay(&runs, |r| {
            r.prefill
                .iter()
                .filter(|c| c.status == Status::Valid)
                .filter_map(|c| c.figures.prompt_tps.map(|v| (c.context as f64, v)))
                .collect()
        });
        let legend = runs.len() > 1 && runs.len() <= 10;
        let single_chart = line_chart(&ChartSpec {
            x_axis: XAxis::Context,
            x_desc: "context length (tokens)",
            y_desc: "single-request decode tok/s",
            series: &single,
            legend,
        });
        let prefill_chart = line_chart(&ChartSpec {
            x_axis: XAxis::Context,
            x_desc: "context length (tokens)",
            y_desc: "prefill tok/s",
            series: &prefill,
            legend,
        });
        stats.charts += [&single_chart, &prefill_chart].iter().filter(|c| !c.is_empty()).count();
        let (folder, kind_label) = match kind {
            "model" => ("models", "Model"),
            "hardware" => ("hardware", "Hardware"),
            _ => ("engines", "Engine"),
        };
        let html = self.env.get_template("entity.html")?.render(context! {
            root => Value::from_safe_string("../../".into()),
            nav_pages => ser(nav),
            kind => kind,
            kind_label => kind_label,
            name => ser(&g.name),
            runs => ser(&summaries),
            single_chart => single_chart,
            prefill_chart => prefill_chart,
        })?;
        put_page(sink, &format!("{folder}/{}/index.html", g.slug), &html, stats)
    }
}

/// Template values from any serializable data (minijinja 3 converts only primitives itself).
pub(crate) fn ser<T: Serialize>(v: T) -> Value {
    Value::from(Serde(v))
}

fn put_page(sink: &mut dyn Sink, path: &str, html: &str, stats: &mut RenderStats) -> Result<()> {
    sink.put(path, html.as_bytes())?;
    stats.pages += 1;
    stats.files += 1;
    Ok(())
}

fn overlay(runs: &[&RunView], points: impl Fn(&RunView) -> Vec<(f64, f64)>) -> Vec<Series> {
    runs.iter().map(|r| Series { label: run_label(r), points: points(r), point_labels: Vec::new() }).collect()
}

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
    }];
    line_chart(&ChartSpec {
        x_axis: XAxis::Context,
        x_desc: "context length (tokens); labels: TTFT",
        y_desc: "prompt tok/s",
        series: &series,
        legend: false,
    })
}

/// Total tok/s against per-request tok/s: one line per context, one point per valid cell.
fn throughput_interactivity_chart(run: &RunView) -> String {
    let series: Vec<Series> = run
        .heatmap
        .rows
        .iter()
        .filter_map(|row| {
            let mut pts: Vec<(f64, f64, u32)> = row
                .cells
                .iter()
                .flatten()
                .filter(|c| c.status == Status::Valid)
                .filter_map(|c| Some((c.figures.per_request_tps?, c.figures.total_tps?, c.concurrency)))
                .collect();
            if pts.is_empty() {
                return None;
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Some(Series {
                label: format!("{} context", numbers::context_label(row.context)),
                points: pts.iter().map(|p| (p.0, p.1)).collect(),
                point_labels: pts.iter().map(|p| format!(" ×{}", p.2)).collect(),
            })
        })
        .collect();
    line_chart(&ChartSpec {
        x_axis: XAxis::Linear,
        x_desc: "per-request tok/s (interactivity); labels: requests at once",
        y_desc: "total tok/s",
        series: &series,
        legend: series.len() > 1,
    })
}

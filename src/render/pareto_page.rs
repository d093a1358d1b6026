//! Throughput against interactivity across runs (`pareto/<model-slug>/`): per context, every
//! valid decode cell of the model's runs, each configuration's frontier drawn as a line, and
//! with prices configured the same against dollars per million output tokens.

use anyhow::Result;
use minijinja::context;
use rayon::prelude::*;
use serde::Serialize;

use super::charts::{marker_shape, scatter_chart, PointLabel, ScatterGroup, ScatterPoint, ScatterSpec};
use super::common::{colour_css, put_page, root, ser, PageContext, RenderStats};
use crate::analysis::pareto::{ConfigKey, ConfigPoints, ParetoPoint};
use crate::analysis::{ParetoView, SiteModel};
use crate::units::numbers::{self, context_label};
use crate::write::Sink;

/// Points drawn with their title, link and whisker per chart; beyond, only frontier points
/// keep them and the others are dots (the frontier table and the runs' pages have them).
const MAX_LINKED_POINTS: usize = 40;

#[derive(Debug, Serialize)]
struct ConfigLegend {
    name: String,
    colour: String,
    shape: &'static str,
}

#[derive(Debug, Serialize)]
struct FrontierRow<'a> {
    config: String,
    id: &'a str,
    title: &'a str,
    concurrency: u32,
    per_request_tps: f64,
    tps_per_device: f64,
    usd_per_mtok: Option<f64>,
}

#[derive(Debug, Serialize)]
struct ContextView<'a> {
    context: u32,
    label: String,
    chart: String,
    cost_chart: String,
    legend: Vec<ConfigLegend>,
    frontier: Vec<FrontierRow<'a>>,
    points: usize,
}

/// `4× H200 SXM · vllm · FP8`.
pub fn config_name(k: &ConfigKey) -> String {
    let q = k.quantization.as_deref().map(|q| format!(" · {q}")).unwrap_or_default();
    format!("{}× {} · {}{q}", k.count, k.device, k.engine)
}

/// What the throughput charts mark of the site's targets: the interactivity levels as
/// guides, and where the first SLO's per-user speed is met as a shaded region.
pub struct Guides {
    pub levels: Vec<(f64, String)>,
    pub region: Option<(f64, String)>,
}

impl Guides {
    pub fn of(settings: &crate::format::SiteSettings) -> Guides {
        Guides {
            levels: settings
                .interactivity
                .iter()
                .map(|&l| (l, format!("{} tok/s per user", numbers::setting(l))))
                .collect(),
            region: settings.slos().first().map(|(name, slo)| {
                (
                    slo.min_tps_per_user,
                    format!("{name}: at least {} tok/s per user", numbers::setting(slo.min_tps_per_user)),
                )
            }),
        }
    }
}

pub fn render(
    cx: &PageContext,
    site: &SiteModel,
    view: &ParetoView,
    guides: &Guides,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let group = &site.models[view.model];
    let contexts: Vec<ContextView> = view
        .contexts
        .par_iter()
        .map(|c| context_view(cx, site, (c.context, &c.configs), view.priced, guides))
        .collect();
    stats.charts +=
        contexts.iter().map(|c| (!c.chart.is_empty()) as usize + (!c.cost_chart.is_empty()) as usize).sum::<usize>();
    let html = cx.env.get_template("pareto.html")?.render(context! {
        root => root("../../"),
        nav_pages => cx.nav_pages(),
        name => ser(&group.name),
        model_slug => ser(&group.slug),
        priced => view.priced,
        contexts => ser(&contexts),
    })?;
    put_page(sink, &format!("pareto/{}/index.html", group.slug), &html, stats)
}

fn context_view<'a>(
    cx: &'a PageContext,
    site: &'a SiteModel,
    (context, configs): (u32, &[ConfigPoints]),
    priced: bool,
    guides: &Guides,
) -> ContextView<'a> {
    let label = context_label(context);
    let point = |p: &ParetoPoint, cost: bool| ScatterPoint {
        x: p.per_request_tps,
        y: if cost { p.usd_per_mtok.unwrap_or(f64::NAN) } else { p.tps_per_device },
        y_err: if cost { None } else { p.tps_per_device_interval },
    };
    // Formatted only for the points that keep their title and link (most do not, on a
    // model with thousands of cells).
    let point_label = |i: usize, j: usize| {
        let p = &configs[i].points[j];
        PointLabel {
            title: point_title(&cx.titles[p.run], &label, p),
            href: Some(format!("../../runs/{}/index.html", site.runs[p.run].id)),
        }
    };
    let groups = |cost: bool| -> Vec<ScatterGroup> {
        configs
            .iter()
            .map(|c| ScatterGroup {
                points: c.points.iter().map(|p| point(p, cost)).collect(),
                frontier: if cost { c.cost_frontier.clone() } else { c.frontier.clone() },
            })
            .collect()
    };
    let chart = scatter_chart(&ScatterSpec {
        title: "Total tok/s per device against per-request tok/s, every configuration",
        x_desc: "per-request tok/s (interactivity)",
        y_desc: "total tok/s per device",
        groups: &groups(false),
        max_linked: MAX_LINKED_POINTS,
        label: &point_label,
        guides: &guides.levels,
        region: guides.region.clone(),
    });
    let cost_chart = if priced {
        scatter_chart(&ScatterSpec {
            title: "Dollars per million output tokens against per-request tok/s",
            x_desc: "per-request tok/s (interactivity)",
            y_desc: "dollars per million output tokens",
            groups: &groups(true),
            max_linked: MAX_LINKED_POINTS,
            label: &point_label,
            guides: &guides.levels,
            region: guides.region.clone(),
        })
    } else {
        String::new()
    };
    let legend = configs
        .iter()
        .enumerate()
        .map(|(i, c)| ConfigLegend { name: config_name(&c.key), colour: colour_css(i), shape: marker_shape(i) })
        .collect();
    let frontier = configs
        .iter()
        .flat_map(|c| c.frontier.iter().map(move |&j| (c, &c.points[j])))
        .map(|(c, p)| FrontierRow {
            config: config_name(&c.key),
            id: &site.runs[p.run].id,
            title: &cx.titles[p.run],
            concurrency: p.concurrency,
            per_request_tps: p.per_request_tps,
            tps_per_device: p.tps_per_device,
            usd_per_mtok: p.usd_per_mtok,
        })
        .collect();
    let points = configs.iter().map(|c| c.points.len()).sum();
    ContextView { context, label, chart, cost_chart, legend, frontier, points }
}

fn point_title(run_title: &str, context: &str, p: &ParetoPoint) -> String {
    let cost = p.usd_per_mtok.map(|c| format!(", ${c:.2} per million tokens")).unwrap_or_default();
    format!(
        "{run_title}: {context} × {}: {} tok/s per request, {} tok/s per device ({} total){cost}",
        p.concurrency,
        numbers::decimal1(p.per_request_tps),
        numbers::decimal1(p.tps_per_device),
        numbers::decimal1(p.total_tps)
    )
}

//! Trend pages (`series/<slug>/`): the runs of one model, device, count, engine and
//! quantization in release order, the key figures charted across versions, each step judged,
//! a flagged step linked to its comparison page (built here when `compare.json` lacks it),
//! and every decode cell across versions.

use anyhow::Result;
use minijinja::context;
use serde::Serialize;

use super::charts::{line_chart, sparkline, ChartSpec, Series, XAxis};
use super::common::{put_bytes, put_page, root, ser, serde_name, PageContext, RenderStats};
use super::compare_page;
use super::downloads::{significant, CsvWriter};
use super::leaderboard_page::BOARD_ROWS;
use super::pareto_page::config_name;
use crate::analysis::series::{KeyFigure, Trend};
use crate::analysis::verdict::Verdict;
use crate::analysis::{Comparison, RunView, SeriesView, SiteModel};
use crate::format::Status;
use crate::units::gzip;
use crate::units::numbers::{self, context_label};
use crate::write::Sink;

/// Runs a per-cell chart follows (the latest ones); the CSV keeps them all.
pub const CELL_CHART_RUNS: usize = 50;

/// Runs a key figure's chart follows (the latest ones): a page's weight stays bounded
/// however long the history grows.
pub const TREND_CHART_RUNS: usize = 100;

pub fn figure_name(f: KeyFigure) -> &'static str {
    match f {
        KeyFigure::PeakTotalTps => "Peak total tok/s",
        KeyFigure::SingleRequestTps => "Single-request tok/s",
        KeyFigure::PrefillTps => "Prefill tok/s",
        KeyFigure::CapacityPerDevice => "Capacity, tok/s per device",
    }
}

#[derive(Debug, Serialize)]
struct StepView<'a> {
    trend: Trend,
    /// `compare/<slug>/` where the step is flagged and comparable.
    comparison: Option<&'a str>,
    /// (figure, change %, verdict) of each key figure.
    changes: Vec<(&'static str, f64, Verdict)>,
    /// Runs of the older and the newer version.
    n_from: u32,
    n_to: u32,
}

#[derive(Debug, Serialize)]
struct RunRow<'a> {
    id: &'a str,
    title: &'a str,
    version: &'a str,
    date: Option<&'a str>,
    values: Vec<Option<f64>>,
    /// The step from the previous run; none for the first.
    step: Option<StepView<'a>>,
    /// The series' first run (no run before it to step from).
    first: bool,
}

#[derive(Debug, Serialize)]
struct CellRow {
    label: String,
    first: Option<f64>,
    last: Option<f64>,
    measured: usize,
    chart: String,
}

/// A change point as the series page lists it.
#[derive(Serialize)]
struct ChangePointRow<'a> {
    figure: &'static str,
    version: &'a str,
    run_id: &'a str,
    run_title: &'a str,
    change: String,
    /// Every key figure is better higher: a fall is a regression.
    worse: bool,
}

/// Whether a step gets a link to a comparison page.
fn flagged(trend: Trend) -> bool {
    trend.flagged()
}

/// Writes a comparison page and its CSV.
pub fn render_comparison(
    cx: &PageContext,
    site: &SiteModel,
    cmp: &Comparison,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let run = |id: &str| site.run(id).expect("comparisons are of the site's runs");
    let runs = (run(&cmp.a_id), run(&cmp.b_id));
    compare_page::write_comparison(cx, cmp, runs, compare_page::ComparisonPlace::InSite, sink, stats)
}

pub fn render(
    cx: &PageContext,
    site: &SiteModel,
    s: &SeriesView,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let runs: Vec<&RunView> = s.runs.iter().map(|&i| &site.runs[i]).collect();
    let versions: Vec<String> = runs.iter().map(|r| r.manifest.engine.version.clone()).collect();
    let rows: Vec<RunRow> = s
        .runs
        .iter()
        .enumerate()
        .map(|(n, &i)| RunRow {
            id: &site.runs[i].id,
            title: &cx.titles[i],
            version: &site.runs[i].manifest.engine.version,
            date: site.runs[i].date.as_deref(),
            values: s.values.iter().map(|v| v[n]).collect(),
            step: s.steps.iter().position(|st| st.to == i && n > 0).map(|k| step_view(s, k)),
            first: n == 0,
        })
        .collect();
    let charts: Vec<(&str, String)> = KeyFigure::ALL
        .iter()
        .zip(&s.values)
        .map(|(&f, values)| {
            let from = values.len().saturating_sub(TREND_CHART_RUNS);
            (figure_name(f), trend_chart(figure_name(f), &versions[from..], &values[from..]))
        })
        .collect();
    let cells = cell_rows(&runs, &versions);
    stats.charts +=
        charts.iter().filter(|c| !c.1.is_empty()).count() + cells.iter().filter(|c| !c.chart.is_empty()).count();
    let regressions = s.steps.iter().filter(|st| matches!(st.trend, Trend::Regression | Trend::Mixed)).count();
    let change_points: Vec<ChangePointRow> = s
        .change_points
        .iter()
        .map(|c| {
            let run = &site.runs[s.runs[c.at]];
            ChangePointRow {
                figure: figure_name(c.figure),
                version: &run.manifest.engine.version,
                run_id: &run.id,
                run_title: &cx.titles[s.runs[c.at]],
                change: format!(
                    "{} (95% CI {} to {}; {} runs before, {} after)",
                    numbers::signed_pct1(c.pct),
                    numbers::signed_pct1(c.lo_pct),
                    numbers::signed_pct1(c.hi_pct),
                    c.n_before,
                    c.n_after
                ),
                worse: c.pct < 0.0,
            }
        })
        .collect();
    let dir = format!("series/{}", s.slug);
    put_bytes(sink, &format!("{dir}/runs.csv.gz"), &gzip(series_csv(&rows).as_bytes()), stats)?;
    let shown = &rows[rows.len().saturating_sub(BOARD_ROWS)..];
    let html = cx.env.get_template("series.html")?.render(context! {
        root => root("../../"),
        nav_pages => cx.nav_pages(),
        name => series_title(s),
        model_slug => &runs[0].slugs.model_slug,
        figures => KeyFigure::ALL.iter().map(|&f| figure_name(f)).collect::<Vec<_>>(),
        prefill_context => s.prefill_context.map(context_label),
        rows => ser(shown),
        rows_total => rows.len(),
        min_segment_runs => crate::analysis::series::MIN_SEGMENT_RUNS,
        charts => ser(&charts),
        cells => ser(&cells),
        regressions => regressions,
        change_points => ser(&change_points),
        cell_chart_runs => CELL_CHART_RUNS,
        trend_chart_runs => TREND_CHART_RUNS,
    })?;
    put_page(sink, &format!("{dir}/index.html"), &html, stats)
}

/// Every run of a series in release order with its key figures and its step's trend: the
/// page shows the latest `BOARD_ROWS`.
fn series_csv(rows: &[RunRow]) -> String {
    let mut columns = vec!["version", "date", "run_id"];
    columns.extend(KeyFigure::ALL.iter().map(|&f| key_figure_column(f)));
    columns.push("trend");
    let mut w = CsvWriter::new(&columns);
    for r in rows {
        let mut fields = vec![r.version.to_string(), r.date.unwrap_or_default().to_string(), r.id.to_string()];
        fields.extend(r.values.iter().map(|v| v.map(|x| significant(x).to_string()).unwrap_or_default()));
        fields.push(r.step.as_ref().map(|st| serde_name(st.trend)).unwrap_or_default());
        w.row(fields);
    }
    w.finish()
}

fn key_figure_column(f: KeyFigure) -> &'static str {
    match f {
        KeyFigure::PeakTotalTps => "peak_total_tps",
        KeyFigure::SingleRequestTps => "single_request_tps",
        KeyFigure::PrefillTps => "prefill_tps",
        KeyFigure::CapacityPerDevice => "capacity_tps_per_device",
    }
}

/// A lasting fall of a key figure found over a series' history (a change point), as the
/// feed and `index.json` list it.
#[derive(Debug, Serialize)]
pub struct RegressionFound<'a> {
    pub series: &'a str,
    pub series_title: String,
    pub figure: &'static str,
    pub version: &'a str,
    pub run: &'a str,
    pub pct: f64,
    pub lo_pct: f64,
    pub hi_pct: f64,
}

/// Every change point of every series that is a fall (each key figure is better higher),
/// in series order.
pub fn regressions_found(site: &SiteModel) -> Vec<RegressionFound<'_>> {
    let round = |v: f64| (v * 100.0).round() / 100.0;
    site.series
        .iter()
        .flat_map(|s| s.change_points.iter().filter(|c| c.pct < 0.0).map(move |c| (s, c)))
        .map(|(s, c)| {
            let run = &site.runs[s.runs[c.at]];
            RegressionFound {
                series: &s.slug,
                series_title: series_title(s),
                figure: figure_name(c.figure),
                version: &run.manifest.engine.version,
                run: &run.id,
                pct: round(c.pct),
                lo_pct: round(c.lo_pct),
                hi_pct: round(c.hi_pct),
            }
        })
        .collect()
}

/// `Tiny-1B on 4× H200 SXM · vllm · FP8, by site bench`.
pub fn series_title(s: &SeriesView) -> String {
    format!("{} on {}, by {}", crate::units::model_display_name(&s.model_id), config_name(&s.key), s.bench_tool)
}

fn step_view(s: &SeriesView, k: usize) -> StepView<'_> {
    let step = &s.steps[k];
    StepView {
        trend: step.trend,
        comparison: step.comparison.as_deref().filter(|_| flagged(step.trend)),
        changes: step.changes.iter().map(|c| (figure_name(c.figure), c.change.pct, c.change.verdict)).collect(),
        n_from: step.n_from,
        n_to: step.n_to,
    }
}

fn trend_chart(name: &str, versions: &[String], values: &[Option<f64>]) -> String {
    let points: Vec<(f64, f64)> = values.iter().enumerate().filter_map(|(i, v)| Some((i as f64, (*v)?))).collect();
    if points.len() < 2 {
        return String::new();
    }
    let series = [Series { label: name.to_string(), points, point_labels: vec![], errors: vec![] }];
    line_chart(&ChartSpec {
        x_axis: XAxis::Linear,
        title: name,
        x_desc: "engine version (release order)",
        y_desc: name,
        series: &series,
        legend: false,
        x_names: Some(versions),
    })
}

/// Every decode cell any run of the series has: first and last valid total tok/s, and a
/// chart across the latest `CELL_CHART_RUNS` runs.
fn cell_rows(runs: &[&RunView], versions: &[String]) -> Vec<CellRow> {
    let mut keys: Vec<(u32, u32)> =
        runs.iter().flat_map(|r| r.decode.iter().map(|c| (c.context, c.concurrency))).collect();
    keys.sort_unstable();
    keys.dedup();
    let skip = runs.len().saturating_sub(CELL_CHART_RUNS);
    keys.into_iter()
        .map(|(ctx, c)| {
            let values: Vec<Option<f64>> = runs
                .iter()
                .map(|r| r.decode_cell(ctx, c).filter(|d| d.status == Status::Valid).and_then(|d| d.figures.total_tps))
                .collect();
            let label = format!("{} × {c}", context_label(ctx));
            CellRow {
                chart: sparkline(&format!("Total tok/s at {label} by run"), &values[skip..], &versions[skip..], |v| {
                    format!("{} tok/s", numbers::decimal1(v))
                }),
                first: values.iter().flatten().next().copied(),
                last: values.iter().flatten().last().copied(),
                measured: values.iter().flatten().count(),
                label,
            }
        })
        .collect()
}

//! A run's page (`runs/<id>/index.html`) with its charts and downloads.

use anyhow::Result;
use minijinja::context;

use super::charts::{line_chart, ChartSpec, Series, XAxis};
use super::common::{put_file, put_page, root, run_title, ser, PageContext, RenderStats};
use super::{downloads, markdown};
use crate::analysis::RunView;
use crate::format::Status;
use crate::units::numbers;
use crate::write::Sink;

pub fn render(cx: &PageContext, run: &RunView, sink: &mut dyn Sink, stats: &mut RenderStats) -> Result<()> {
    let prefill_chart = prefill_chart(run);
    let tvi_chart = throughput_interactivity_chart(run);
    stats.charts += [&prefill_chart, &tvi_chart].iter().filter(|c| !c.is_empty()).count();
    let notes_html = run.notes_markdown.as_deref().map(markdown::to_html);
    let details: Vec<String> = run.decode.iter().map(downloads::cell_detail).collect();
    let comparisons: Vec<_> = cx.comparisons.iter().filter(|c| c.a_id == run.id || c.b_id == run.id).collect();
    let html = cx.env.get_template("run.html")?.render(context! {
        root => root("../../"),
        nav_pages => ser(&cx.nav),
        run => ser(run),
        title => run_title(run),
        prefill_chart => prefill_chart,
        tvi_chart => tvi_chart,
        notes_html => ser(notes_html),
        decode_details => ser(details),
        comparisons => ser(comparisons),
    })?;
    let dir = format!("runs/{}", run.id);
    put_page(sink, &format!("{dir}/index.html"), &html, stats)?;
    stats.run_pages += 1;
    put_file(sink, &format!("{dir}/cells.csv"), &downloads::cells_csv(run), stats)?;
    put_file(sink, &format!("{dir}/cells.json"), &downloads::cells_json(run), stats)
}

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

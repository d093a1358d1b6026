//! The comparison page of two runs and its CSV download.

use std::fmt::Write as _;

use anyhow::Result;
use minijinja::value::Value;
use minijinja::{context, Environment};

use super::charts::{line_chart, ChartSpec, Series, XAxis};
use super::downloads::csv_field;
use super::pages::{run_label, run_title, ser};
use crate::analysis::compare::{Comparison, MetricDelta};
use crate::analysis::RunView;

fn prefill_overlay(a: &RunView, b: &RunView) -> String {
    let series: Vec<Series> = [("A", a), ("B", b)]
        .iter()
        .map(|(tag, r)| Series {
            label: format!("{tag}: {}", run_label(r)),
            points: r
                .prefill
                .iter()
                .filter(|c| c.status == crate::format::Status::Valid)
                .filter_map(|c| c.figures.prompt_tps.map(|v| (c.context as f64, v)))
                .collect(),
            point_labels: vec![],
        })
        .collect();
    line_chart(&ChartSpec {
        x_axis: XAxis::Context,
        x_desc: "context length (tokens)",
        y_desc: "prompt tok/s",
        series: &series,
        legend: true,
    })
}

/// Renders `index.html` of a comparison; `root` is the site root relative to the page, and
/// a standalone page (from `site diff`) links to no other page.
pub fn comparison_html(
    env: &Environment<'static>,
    cmp: &Comparison,
    a: &RunView,
    b: &RunView,
    root: &str,
    standalone: bool,
    nav: &[(String, String)],
) -> Result<String> {
    Ok(env.get_template("compare.html")?.render(context! {
        root => Value::from_safe_string(root.to_string()),
        nav_pages => ser(nav),
        standalone => standalone,
        cmp => ser(cmp),
        a_title => run_title(a),
        b_title => run_title(b),
        a_label => run_label(a),
        b_label => run_label(b),
        prefill_chart => prefill_overlay(a, b),
    })?)
}

fn d(m: &Option<MetricDelta>) -> [String; 3] {
    match m {
        Some(m) => [m.a.to_string(), m.b.to_string(), format!("{:.2}", m.pct)],
        None => Default::default(),
    }
}

/// One row per decode and prefill cell: both sides' status and figures and the changes.
pub fn comparison_csv(cmp: &Comparison) -> String {
    let mut out = String::from("phase,context,concurrency,a_status,b_status,a_total_tps,b_total_tps,total_tps_change_pct,a_per_request_tps,b_per_request_tps,per_request_change_pct,a_ttft_ms,b_ttft_ms,ttft_change_pct,a_tbt_ms,b_tbt_ms,tbt_change_pct,a_total_tps_per_gpu,b_total_tps_per_gpu,per_gpu_change_pct\n");
    for p in &cmp.prefill {
        let t = d(&p.tps);
        let row = [
            "prefill".to_string(),
            p.context.to_string(),
            "1".into(),
            p.a_status.into(),
            p.b_status.into(),
            t[0].clone(),
            t[1].clone(),
            t[2].clone(),
        ];
        let _ = writeln!(out, "{}{}", row.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","), ",".repeat(12));
    }
    for row in &cmp.rows {
        for c in &row.cells {
            let mut fields = vec![
                "decode".to_string(),
                c.context.to_string(),
                c.concurrency.to_string(),
                c.a_status.into(),
                c.b_status.into(),
            ];
            for m in [&c.total, &c.per_request, &c.ttft, &c.tbt, &c.total_per_gpu] {
                fields.extend(d(m));
            }
            let _ = writeln!(out, "{}", fields.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
        }
    }
    out
}

//! The charts of a rate run's page (latency and achieved rate against the offered rate,
//! goodput at each objective) and of a trace replay's (its traffic, TTFT and requests in
//! flight through time, TTFT by input length, the client's lag), drawn from the analysis's
//! figures and series as SVG.

use serde::Serialize;

use super::charts::{line_chart, ChartSpec, Series, XAxis};
use crate::analysis::capacity::RunCapacity;
use crate::analysis::rates::RateView;
use crate::analysis::RunView;
use crate::units::numbers;

#[derive(Debug, Clone, Serialize)]
pub struct TitledChart {
    pub caption: String,
    pub svg: String,
}

/// The run's charts: a replay's when it is one, else a rate run's (none for a matrix run).
pub fn rate_charts(run: &RunView, capacity: &RunCapacity) -> Vec<TitledChart> {
    let Some(traffic) = &run.manifest.traffic else { return Vec::new() };
    let charts = if traffic.trace.is_some() { replay_charts(run) } else { sweep_charts(run, capacity) };
    charts.into_iter().filter(|c| !c.svg.is_empty()).collect()
}

fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
    Series { label: label.into(), points, point_labels: Vec::new(), errors: Vec::new() }
}

fn chart(
    caption: String,
    title: &str,
    x_axis: XAxis,
    (x_desc, y_desc): (&str, &str),
    series: &[Series],
) -> TitledChart {
    let spec = ChartSpec { title, x_axis, x_desc, y_desc, series, legend: series.len() > 1, x_names: None };
    TitledChart { caption, svg: line_chart(&spec) }
}

/// Repetition 1's cells of each context, lowest rate first: a sweep's line.
fn first_repetition(run: &RunView) -> Vec<(u32, Vec<&RateView>)> {
    let mut contexts: Vec<u32> = run.rates.iter().map(|r| r.context).collect();
    contexts.dedup();
    contexts
        .into_iter()
        .map(|ctx| {
            let mut cells: Vec<&RateView> =
                run.rates.iter().filter(|r| r.context == ctx && r.repetition == 1 && r.figures.is_some()).collect();
            cells.sort_by(|a, b| a.rate_rps.total_cmp(&b.rate_rps));
            (ctx, cells)
        })
        .collect()
}

fn sweep_charts(run: &RunView, capacity: &RunCapacity) -> Vec<TitledChart> {
    let lines = first_repetition(run);
    if lines.iter().all(|(_, cells)| cells.len() < 2) {
        return Vec::new();
    }
    let reps = if run.rates.iter().any(|r| r.repetition > 1) { " (first repetition)" } else { "" };
    let ctx = |c: u32| numbers::context_label(c);
    let point = |cells: &[&RateView], f: fn(&RateView) -> Option<f64>| -> Vec<(f64, f64)> {
        cells.iter().filter_map(|c| Some((c.rate_rps, f(c)?))).collect()
    };
    let mut latency = Vec::new();
    let mut achieved = Vec::new();
    for (c, cells) in &lines {
        latency.push(line(format!("TTFT p50, {}", ctx(*c)), point(cells, |v| v.figures.as_ref()?.ttft_ms.p50)));
        latency.push(line(format!("end to end p50, {}", ctx(*c)), point(cells, |v| v.figures.as_ref()?.e2e_ms.p50)));
        achieved.push(line(format!("achieved, {}", ctx(*c)), point(cells, |v| Some(v.figures.as_ref()?.achieved_rps))));
    }
    let offered: Vec<(f64, f64)> =
        lines.iter().flat_map(|(_, cells)| cells.iter().map(|c| (c.rate_rps, c.rate_rps))).collect();
    achieved.push(line("offered", offered));
    let goodput: Vec<Series> = capacity
        .rates
        .iter()
        .filter(|c| Some(c.context) == lines.first().map(|l| l.0))
        .map(|c| {
            let at =
                c.capacity.map(|k| format!(" (capacity {})", super::common::rate_capacity_text(k))).unwrap_or_default();
            line(format!("{}{at}", c.slo), c.goodput.iter().map(|g| (g.rate_rps, g.share * 100.0)).collect())
        })
        .collect();
    vec![
        chart(
            format!("Latency against the offered rate{reps}: past the knee, the queue's."),
            "Latency against offered rate",
            XAxis::Log,
            ("offered requests/s", "ms"),
            &latency,
        ),
        chart(
            format!("Achieved against offered rate{reps}: a server that keeps up follows the offered line."),
            "Achieved against offered rate",
            XAxis::Log,
            ("offered requests/s", "requests/s"),
            &achieved,
        ),
        chart(
            "Goodput at each objective: the share of the window's requests meeting it, by offered rate (the context shortest); capacity is where it falls below 99%.".into(),
            "Goodput against offered rate",
            XAxis::Log,
            ("offered requests/s", "% of requests meeting the objective"),
            &goodput,
        ),
    ]
}

fn replay_charts(run: &RunView) -> Vec<TitledChart> {
    let Some(s) = run.rates.iter().find(|r| r.repetition == 1).and_then(|r| r.series.as_ref()) else {
        return Vec::new();
    };
    let lag_names = ["p50", "p90", "p99", "most"];
    let lag: Vec<(f64, f64)> = s.lag_ms.iter().enumerate().map(|(i, (_, v))| (i as f64, *v)).collect();
    let names: Vec<String> = s.lag_ms.iter().enumerate().map(|(i, _)| lag_names[i.min(3)].to_string()).collect();
    let lag_series = [line("lag", lag)];
    let lag_spec = ChartSpec {
        title: "Client lag behind the schedule",
        x_axis: XAxis::Linear,
        x_desc: "percentile of requests",
        y_desc: "ms",
        series: &lag_series,
        legend: false,
        x_names: Some(&names),
    };
    vec![
        chart(
            "Requests sent (at the trace's instants) and completed, per second of the replay.".into(),
            "Requests sent and completed through the replay",
            XAxis::Linear,
            ("seconds of the replay", "requests/s"),
            &[line("sent", s.arrivals_rps.clone()), line("completed", s.completions_rps.clone())],
        ),
        chart(
            "Requests in flight through the replay: a queue that grows is a server that does not keep up.".into(),
            "Requests in flight through the replay",
            XAxis::Linear,
            ("seconds of the replay", "requests in flight"),
            &[line("in flight", s.in_flight.clone())],
        ),
        chart(
            "TTFT p50 of the requests sent in each stretch of the replay.".into(),
            "TTFT through the replay",
            XAxis::Linear,
            ("seconds of the replay", "TTFT p50, ms"),
            &[line("TTFT p50", s.ttft_p50_ms.clone())],
        ),
        chart(
            "TTFT p50 by input length (tenths of the requests by length).".into(),
            "TTFT by input length",
            XAxis::Log,
            ("input tokens (median of each tenth)", "TTFT p50, ms"),
            &[line("TTFT p50", s.ttft_by_input.clone())],
        ),
        TitledChart {
            caption: "The client's lag: actual minus scheduled send, by percentile of the requests.".into(),
            svg: line_chart(&lag_spec),
        },
    ]
}

//! The charts of a cell page, as SVG the build draws: the request timeline and the
//! distribution histograms are drawn here (one element per lane or bar, each titled, which
//! plotters cannot give), the gauge and the throughput over time with `charts::line_chart`.
//! Colours follow the page's scheme (`currentColor`) where they are not an outcome's.

use std::fmt::Write as _;

use super::charts::{line_chart, ChartSpec, Series, XAxis};
use crate::analysis::evidence::{Distribution, Evidence, Lane, Outcome};
use crate::units::{numbers, xml_escape};

const WIDTH: f64 = 720.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 12.0;

/// Okabe-Ito colours, readable on light and dark backgrounds.
pub fn outcome_colour(o: Outcome) -> &'static str {
    match o {
        Outcome::Finished => "#0072b2",
        Outcome::Cancelled => "#009e73",
        Outcome::Error => "#d55e00",
    }
}

pub fn outcome_label(o: Outcome) -> &'static str {
    match o {
        Outcome::Finished => "finished",
        Outcome::Cancelled => "cancelled at the window's end",
        Outcome::Error => "failed",
    }
}

/// A step for axis ticks: 1, 2 or 5 times a power of ten, about `span / 6`.
fn tick_step(span: f64) -> f64 {
    let raw = (span / 6.0).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(10.0 * p)
}

/// Every request from its send to its end: thin until its first token, thick after, coloured
/// by how it ended; the measurement window shaded.
pub fn timeline(e: &Evidence) -> String {
    if e.lanes.is_empty() || e.span_s <= 0.0 {
        return String::new();
    }
    let lane_h = (300.0 / e.lanes.len() as f64).clamp(2.0, 24.0);
    let top = 8.0;
    let plot_h = lane_h * e.lanes.len() as f64;
    let height = top + plot_h + 36.0;
    let x = |t: f64| LEFT + (WIDTH - LEFT - RIGHT) * (t / e.span_s).clamp(0.0, 1.0);
    let mut svg = format!(
        "<svg class=\"chart timeline\" role=\"img\" viewBox=\"0 0 {WIDTH} {height:.0}\" preserveAspectRatio=\"xMidYMid meet\"><title>Every request of the cell, from send to end</title><desc>{} requests{}; thin until the first token, thick while streaming, coloured by how each ended; the shaded band is the measurement window.</desc>",
        e.requests,
        if e.lane_group > 1 { format!(", {} to a lane", e.lane_group) } else { String::new() }
    );
    if let Some((a, b)) = e.window {
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{plot_h:.1}\" fill=\"currentColor\" fill-opacity=\"0.08\"><title>measurement window: {} to {}</title></rect>",
            x(a),
            (x(b) - x(a)).max(0.5),
            secs(a),
            secs(b)
        );
    }
    for (i, lane) in e.lanes.iter().enumerate() {
        lane_svg(&mut svg, lane, i, e.lane_group, top + lane_h * (i as f64 + 0.5), lane_h, &x);
    }
    axis(&mut svg, top + plot_h, e.span_s, &x, "seconds from the first request");
    svg.push_str("</svg>");
    svg
}

fn lane_svg(svg: &mut String, lane: &Lane, i: usize, group: usize, y: f64, h: f64, x: &dyn Fn(f64) -> f64) {
    let colour = outcome_colour(lane.outcome);
    let thick = (h * 0.7).max(1.5);
    let first = lane.first_token_s.unwrap_or(lane.end_s);
    let who = if group == 1 {
        format!("request {}", i + 1)
    } else {
        format!("requests {}–{}", i * group + 1, i * group + lane.requests)
    };
    let title = format!(
        "{who}: sent at {}, first token at {}, ended at {} ({})",
        secs(lane.send_s),
        lane.first_token_s.map(secs).unwrap_or_else(|| "none".into()),
        secs(lane.end_s),
        outcome_label(lane.outcome)
    );
    let _ = write!(
        svg,
        "<g><title>{}</title><line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.45\" stroke-width=\"1\"/><line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"{thick:.1}\"/></g>",
        xml_escape(&title),
        x(lane.send_s),
        x(first),
        x(first),
        x(lane.end_s).max(x(first) + 1.0),
    );
}

fn axis(svg: &mut String, y: f64, span: f64, x: &dyn Fn(f64) -> f64, desc: &str) {
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"currentColor\"/>",
        WIDTH - RIGHT
    );
    let step = tick_step(span);
    let mut t = 0.0;
    while t <= span + 1e-9 {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"17\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
            x(t),
            y + 15.0,
            axis_label(t)
        );
        t += step;
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"17\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
        (LEFT + WIDTH - RIGHT) / 2.0,
        y + 31.0,
        xml_escape(desc)
    );
}

fn axis_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        numbers::integer(v)
    } else {
        format!("{v:.1}")
    }
}

fn secs(t: f64) -> String {
    format!("{t:.2} s")
}

/// A histogram of a distribution in milliseconds, each bar titled with its range and count.
pub fn histogram(d: &Distribution, what: &str) -> String {
    let (w, h, top, bottom) = (360.0, 170.0, 8.0, 36.0);
    let plot_h = h - top - bottom;
    let most = d.bins.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    let bar_w = (w - LEFT - RIGHT) / d.bins.len().max(1) as f64;
    let mut svg = format!(
        "<svg class=\"chart histogram\" role=\"img\" viewBox=\"0 0 {w} {h}\" preserveAspectRatio=\"xMidYMid meet\"><title>Histogram of {}</title><desc>{} requests; p50 {}{}{}, max {}.</desc>",
        xml_escape(what),
        d.count,
        numbers::millis1(d.p50),
        // A tail percentile only where the requests support it.
        d.p90.map(|v| format!(", p90 {}", numbers::millis1(v))).unwrap_or_default(),
        d.p99.map(|v| format!(", p99 {}", numbers::millis1(v))).unwrap_or_default(),
        numbers::millis1(d.max)
    );
    for (i, b) in d.bins.iter().enumerate() {
        let bh = plot_h * b.count as f64 / most;
        let title = format!(
            "{} to {}: {} request{}",
            numbers::millis1(b.lo),
            numbers::millis1(b.hi),
            b.count,
            if b.count == 1 { "" } else { "s" }
        );
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#0072b2\"><title>{}</title></rect>",
            LEFT + bar_w * i as f64 + 0.5,
            top + plot_h - bh,
            (bar_w - 1.0).max(0.5),
            xml_escape(&title)
        );
    }
    let y = top + plot_h;
    let _ = write!(svg, "<line x1=\"{LEFT}\" y1=\"{y}\" x2=\"{:.1}\" y2=\"{y}\" stroke=\"currentColor\"/>", w - RIGHT);
    let lo = d.bins.first().map_or(0.0, |b| b.lo);
    let hi = d.bins.last().map_or(0.0, |b| b.hi);
    for (at, v, anchor) in [(LEFT, lo, "start"), (w - RIGHT, hi, "end")] {
        let _ = write!(
            svg,
            "<text x=\"{at}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"{anchor}\" fill=\"currentColor\">{}</text>",
            y + 15.0,
            numbers::millis1(v)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
        w / 2.0,
        y + 31.0,
        xml_escape(what)
    );
    let _ = write!(
        svg,
        "<text x=\"4\" y=\"{:.1}\" font-size=\"12\" fill=\"currentColor\">{}</text>",
        top + 10.0,
        most as u64
    );
    svg.push_str("</svg>");
    svg
}

/// The running (and waiting) gauge over time against the target concurrency.
pub fn gauge(e: &Evidence, target: u32) -> String {
    if e.gauge.is_empty() {
        return String::new();
    }
    let running: Vec<(f64, f64)> = e.gauge.iter().map(|g| (g.t_s, g.running)).collect();
    let (t0, t1) = (running.first().map_or(0.0, |p| p.0), running.last().map_or(0.0, |p| p.0));
    let mut series = vec![
        Series { label: "running".into(), points: running, point_labels: vec![], errors: vec![] },
        Series {
            label: format!("target: {target}"),
            points: vec![(t0, target as f64), (t1, target as f64)],
            point_labels: vec![],
            errors: vec![],
        },
    ];
    let waiting: Vec<(f64, f64)> = e.gauge.iter().filter_map(|g| Some((g.t_s, g.waiting?))).collect();
    if !waiting.is_empty() {
        series.push(Series { label: "waiting".into(), points: waiting, point_labels: vec![], errors: vec![] });
    }
    line_chart(&ChartSpec {
        x_axis: XAxis::Linear,
        title: "Requests in flight over the cell",
        x_desc: "seconds from the first request",
        y_desc: "requests",
        series: &series,
        legend: true,
        x_names: None,
    })
}

/// Output tokens per second in each second of the window.
pub fn throughput(e: &Evidence) -> String {
    if e.throughput.is_empty() {
        return String::new();
    }
    let points = e.throughput.iter().map(|b| (b.start_s + b.seconds / 2.0, b.tps)).collect();
    let series = [Series { label: "output tok/s".into(), points, point_labels: vec![], errors: vec![] }];
    line_chart(&ChartSpec {
        x_axis: XAxis::Linear,
        title: "Output tokens per second across the window",
        x_desc: "seconds into the measurement window",
        y_desc: "output tok/s",
        series: &series,
        legend: false,
        x_names: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(30.0), 5.0);
        assert_eq!(tick_step(7.0), 2.0);
        assert_eq!(tick_step(0.6), 0.1);
    }
}

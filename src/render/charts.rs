//! SVG charts drawn with plotters (SVG backend, no system fonts). Charts are inlined in
//! pages; black is rewritten to `currentColor` so axes and text follow the page's colour
//! scheme, dark mode included. Every chart is named (`<title>`) and summed up in words
//! (`<desc>`); series differ by marker shape as well as colour; text is at least 14 px in a
//! 600 px wide drawing, which pages never show narrower than 480 px (11 px); point labels
//! that would overlap another are left out.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::units::{numbers, xml_escape};

/// Each at least 3:1 against both the light (#ffffff) and the dark (#12161b) page: relative
/// luminance between 0.124 and 0.30 (Okabe-Ito's blue, vermillion, green and purple, and
/// three of the same weight).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0x00, 0x72, 0xb2),
    RGBColor(0xd5, 0x5e, 0x00),
    RGBColor(0x00, 0x9e, 0x73),
    RGBColor(0xcc, 0x79, 0xa7),
    RGBColor(0xb8, 0x86, 0x0b),
    RGBColor(0x1f, 0x8f, 0xa0),
    RGBColor(0x8a, 0x63, 0xd2),
];

pub fn series_colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// How the x axis is scaled and labelled.
#[derive(Clone, Copy)]
pub enum XAxis {
    /// Context lengths in tokens, on a log2 scale, labelled `8K`, `16K`, ...
    Context,
    /// A plain linear axis (e.g. per-request tok/s).
    Linear,
    /// Request rates (or any positive quantity over a wide range) on a log2 scale, labelled
    /// as numbers (`0.5`, `2`, `8`).
    Log,
}

pub struct Series {
    pub label: String,
    /// (x, y) in data units, sorted by x.
    pub points: Vec<(f64, f64)>,
    /// Optional text drawn next to each point (e.g. TTFT).
    pub point_labels: Vec<String>,
    /// Optional whisker of each point: the (low, high) of its interval, drawn as a vertical
    /// line through it.
    pub errors: Vec<Option<(f64, f64)>>,
}

pub struct ChartSpec<'a> {
    /// The chart's accessible name (its `<title>`).
    pub title: &'a str,
    pub x_axis: XAxis,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub series: &'a [Series],
    /// Whether to draw a legend (worth it only with more than one series).
    pub legend: bool,
    /// Names of the x positions 0, 1, 2, ... (versions along a series), for a linear axis.
    pub x_names: Option<&'a [String]>,
}

const WIDTH: u32 = 600;
const HEIGHT: u32 = 330;
/// The drawing's margin and the label areas left of and below the plot.
const MARGIN: i32 = 12;
const Y_LABEL_AREA: i32 = 72;
const X_LABEL_AREA: i32 = 46;
/// Where a line chart's data is drawn, in drawing pixels (what the margin and label areas
/// leave of the drawing).
const PLOT: Rect = Rect {
    x0: MARGIN + Y_LABEL_AREA,
    y0: MARGIN,
    x1: WIDTH as i32 - MARGIN,
    y1: HEIGHT as i32 - MARGIN - X_LABEL_AREA,
};
/// Tick labels, legend and point labels; axis names one size up.
const TEXT_PX: u32 = 14;
/// Plotters' SVG backend writes a font of whole size `s` as `s / 1.24` pixels (points to
/// pixels): asking it for this much gives axis labels of at least `px` pixels, as the chart's
/// own text has (14 px asks for 18, drawn at 14.5 px).
fn plotters_font(px: u32) -> f64 {
    (px as f64 * 1.24).ceil()
}

/// A line chart on a linear x axis as the numbers `static/charts.js` draws it from in the
/// browser, the same drawing as `line_chart`'s: `{title, desc, x_desc, y_desc, legend,
/// series: [{label, points: [[x, y, lo, hi, label]]}], x_ticks?}`, numbers to four
/// significant digits (a fifth of a pixel). On a context axis x is its log2 and `x_ticks`
/// are `[[log2, "8K"]]`, a power of two each. Eight kilobytes of a run page's SVG become one
/// of data. Empty where there is nothing to draw.
pub fn line_chart_data(spec: &ChartSpec) -> String {
    // A whole number without its ".0" (most of a chart's numbers, at four digits).
    let sig = |v: f64| match significant(v, 4) {
        r if r.fract() == 0.0 && r.abs() < 1e15 => serde_json::Value::from(r as i64),
        r => serde_json::Value::from(r),
    };
    let series: Vec<serde_json::Value> = spec
        .series
        .iter()
        .map(|s| {
            let points: Vec<serde_json::Value> = s
                .points
                .iter()
                .enumerate()
                .map(|(j, &(x, y))| (j, (project_x(spec.x_axis, x), y)))
                .filter(|(_, (x, y))| drawable(*x, *y))
                .map(|(j, (x, y))| {
                    let e = s.errors.get(j).copied().flatten().filter(|&(lo, hi)| drawable(x, lo) && drawable(x, hi));
                    let label = s.point_labels.get(j).map(|t| t.trim()).unwrap_or_default();
                    serde_json::json!([sig(x), sig(y), e.map(|e| sig(e.0)), e.map(|e| sig(e.1)), label])
                })
                .collect();
            serde_json::json!({"label": s.label, "points": points})
        })
        .filter(|s| !s["points"].as_array().is_some_and(Vec::is_empty))
        .collect();
    if series.is_empty() {
        return String::new();
    }
    let mut data = serde_json::json!({
        "title": spec.title,
        "desc": line_summary(spec),
        "x_desc": spec.x_desc,
        "y_desc": spec.y_desc,
        "legend": spec.legend,
        "series": series,
    });
    if matches!(spec.x_axis, XAxis::Context) {
        data["x_ticks"] = context_ticks(&series).into();
    }
    // Inside a <script> element: no "</" may close it early.
    data.to_string().replace("</", "<\\/")
}

/// A context axis's ticks for the browser: each power of two inside the padded range of
/// the points' log2 (as `line_chart` pads it), every other one past ten.
fn context_ticks(series: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let xs = series.iter().flat_map(|s| s["points"].as_array().into_iter().flatten()).filter_map(|p| p[0].as_f64());
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    let pad = ((x1 - x0) * 0.06).max(0.25);
    let (first, last) = ((x0 - pad).ceil() as i32, (x1 + pad).floor() as i32);
    let step = if last - first + 1 > 10 { 2 } else { 1 };
    (first..=last)
        .step_by(step)
        .map(|k| serde_json::json!([k, numbers::context_label(2f64.powi(k).round() as u32)]))
        .collect()
}

/// `v` to `digits` significant digits.
fn significant(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let decimals = digits - 1 - v.abs().log10().floor() as i32;
    if decimals <= 0 {
        let scale = 10f64.powi(-decimals);
        return (v / scale).round() * scale;
    }
    // Through the decimal text: the nearest double to it prints as that text again.
    format!("{v:.*}", decimals as usize).parse().unwrap_or(v)
}

/// Renders a line chart with markers. Returns an empty string when there is nothing to draw.
pub fn line_chart(spec: &ChartSpec) -> String {
    let points = spec.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    let mut any = false;
    for &(x, y) in points {
        let x = project_x(spec.x_axis, x);
        if !drawable(x, y) {
            continue;
        }
        any = true;
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    // The whiskers' tops stay inside the chart.
    for hi in spec.series.iter().flat_map(|s| s.errors.iter().flatten().map(|e| e.1)) {
        if drawable(0.0, hi) {
            y1 = y1.max(hi);
        }
    }
    if !any {
        return String::new();
    }
    let pad = ((x1 - x0) * 0.06).max(0.25);
    let (x0, x1) = (x0 - pad, x1 + pad);
    let y1 = if y1 > 0.0 { y1 * 1.15 } else { 1.0 };
    let y1 = if spec.legend { top_clear_of_legend(spec, (x0, x1), y1) } else { y1 };
    let mut svg = String::new();
    let mut marks = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        // Drawing into a String cannot fail for lack of I/O; an error here is a bug in
        // the inputs (e.g. an empty range), and an empty chart is the right answer.
        if draw(&root, spec, (x0, x1), y1, &mut marks).is_err() {
            return String::new();
        }
        let _ = root.present();
    }
    finish_svg(&svg, "chart", spec.title, &line_summary(spec), &marks)
}

const FONT: &str = " font-family=\"sans-serif\"";

/// The drawn SVG with our class, its name and summary first, and our own elements (markers,
/// labels) last. Every text is set in one font, named once on the root (it inherits).
fn finish_svg(svg: &str, class: &str, title: &str, summary: &str, marks: &str) -> String {
    let svg = lean(&svg.replace("#000000", "currentColor")).replace(FONT, "");
    let marks = marks.replace(FONT, "");
    let Some(open_end) = svg.find('>') else { return String::new() };
    let Some(close) = svg.rfind("</svg>") else { return String::new() };
    format!(
        "{}><title>{}</title><desc>{}</desc>{}{marks}</svg>",
        svg[..open_end].replacen(
            "<svg ",
            &format!("<svg class=\"{class}\" role=\"img\" preserveAspectRatio=\"xMidYMid meet\"{FONT} "),
            1
        ),
        xml_escape(title),
        xml_escape(summary),
        &svg[open_end + 1..close]
    )
}

/// The drawn SVG made smaller without changing what it draws: numbers inside tags rounded
/// to a tenth (a pixel's tenth, at a 600-pixel-wide chart), `opacity="1"` left out, and runs
/// of lines, rects and circles that share their style grouped under one `<g>` carrying it,
/// each keeping only its geometry (texts too: their words kept as they are); two-point
/// polylines (axes and ticks) of one style drawn as one path. Plotters writes an element a
/// line, a text in three.
fn lean(svg: &str) -> String {
    let svg = &merge_segments(&join_texts(svg));
    let mut out = String::with_capacity(svg.len());
    let mut group: Option<(String, Vec<String>)> = None;
    let flush = |out: &mut String, group: &mut Option<(String, Vec<String>)>| {
        if let Some((style, items)) = group.take() {
            if let Some(d) = lines_as_path(&items).filter(|_| items.len() > 1) {
                out.push_str(&format!("<path {style} fill=\"none\" d=\"{d}\"/>"));
            } else if items.len() == 1 {
                out.push_str(&items[0].replacen(' ', &format!(" {style} "), 1));
            } else {
                out.push_str(&format!("<g {style}>"));
                items.iter().for_each(|i| out.push_str(i));
                out.push_str("</g>");
            }
            out.push('\n');
        }
    };
    for line in svg.lines() {
        let line = round_in_tags(line).replace(" opacity=\"1\"", "");
        match split_style(&line) {
            Some((style, shape)) if group.as_ref().is_some_and(|(s, _)| *s == style) => {
                group.as_mut().expect("checked").1.push(shape);
            }
            Some((style, shape)) => {
                flush(&mut out, &mut group);
                group = Some((style, vec![shape]));
            }
            None => {
                flush(&mut out, &mut group);
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    flush(&mut out, &mut group);
    out
}

/// `<line x1 y1 x2 y2/>` elements (a chart's gridlines) as the data of one path, or `None`
/// where one of them is anything else.
fn lines_as_path(items: &[String]) -> Option<String> {
    let mut d = String::new();
    for item in items {
        let attrs = item.strip_prefix("<line ")?.strip_suffix("/>")?;
        let value = |name: &str| {
            let start = attrs.find(&format!("{name}=\""))? + name.len() + 2;
            attrs[start..].split('"').next()
        };
        let (x1, y1, x2, y2) = (value("x1")?, value("y1")?, value("x2")?, value("y2")?);
        let to = match (x1 == x2, y1 == y2) {
            (true, _) => format!("V{y2}"),
            (_, true) => format!("H{x2}"),
            _ => format!("L{x2} {y2}"),
        };
        d.push_str(&format!("M{x1} {y1}{to}"));
    }
    Some(d)
}

/// Every two-point `<polyline>` (an axis, a tick: a dozen a chart, each with its style) of
/// one style made a segment of one `<path>`, put where the first of them was. Segments do
/// not overlap text, so the order they are drawn in does not show.
fn merge_segments(svg: &str) -> String {
    let mut paths: Vec<(String, String)> = Vec::new();
    let mut lines: Vec<Result<&str, usize>> = Vec::new();
    for line in svg.lines() {
        match two_point_polyline(line) {
            Some((style, d)) => match paths.iter().position(|(s, _)| *s == style) {
                Some(i) => paths[i].1.push_str(&d),
                None => {
                    lines.push(Err(paths.len()));
                    paths.push((style, d));
                }
            },
            None => lines.push(Ok(line)),
        }
    }
    let mut out = String::with_capacity(svg.len());
    for line in lines {
        match line {
            Ok(text) => out.push_str(text),
            Err(i) => out.push_str(&format!("<path {} d=\"{}\"/>", paths[i].0, paths[i].1)),
        }
        out.push('\n');
    }
    out
}

/// A one-line `<polyline STYLE points="x1,y1 x2,y2 "/>` as its style and its segment in path
/// data (`M x1 y1` then `H x2`, `V y2` or `L x2 y2`).
fn two_point_polyline(line: &str) -> Option<(String, String)> {
    let body = line.trim().strip_prefix("<polyline ")?.strip_suffix("/>")?;
    let (style, points) = body.split_once(" points=\"")?;
    let mut xy = points.trim_end().strip_suffix('"')?.split_whitespace().map(|p| p.split_once(','));
    let (Some(Some((x1, y1))), Some(Some((x2, y2))), None) = (xy.next(), xy.next(), xy.next()) else { return None };
    if style.contains("points") || [x1, y1, x2, y2].iter().any(|v| v.parse::<f64>().is_err()) {
        return None;
    }
    let to = match (x1 == x2, y1 == y2) {
        (true, _) => format!("V{y2}"),
        (_, true) => format!("H{x2}"),
        _ => format!("L{x2} {y2}"),
    };
    Some((style.trim().to_string(), format!("M{x1} {y1}{to}")))
}

/// A one-line self-closing `<line>`, `<rect>` or `<circle>`, or a one-line `<text>` with
/// its words, split into its style attributes (which a `<g>` around it can carry: they
/// inherit) and the element with its geometry (and words) only.
fn split_style(line: &str) -> Option<(String, String)> {
    // `dy` and `transform` do not inherit from a group: they stay with their element.
    const GEOMETRY: &[&str] =
        &["x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height", "dy", "transform"];
    let line = line.trim();
    let (body, words) = match line.strip_suffix("/>") {
        Some(body) => (body, None),
        None => {
            let inner = line.strip_prefix("<text ")?.strip_suffix("</text>")?;
            let (attrs, words) = inner.split_once('>')?;
            (line.get(..6 + attrs.len())?, Some(words))
        }
    };
    let (tag, attrs) = body.strip_prefix('<')?.split_once(' ')?;
    if !matches!((tag, words.is_some()), ("line" | "rect" | "circle", false) | ("text", true)) {
        return None;
    }
    let (mut style, mut shape) = (Vec::new(), vec![format!("<{tag}")]);
    let mut rest = attrs.trim();
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"")?;
        let (value, tail) = after.split_once('"')?;
        let attr = format!("{}=\"{value}\"", name.trim());
        if GEOMETRY.contains(&name.trim()) {
            shape.push(attr)
        } else {
            style.push(attr)
        }
        rest = tail.trim_start();
    }
    let shape = shape.join(" ");
    Some((style.join(" "), words.map_or_else(|| format!("{shape}/>"), |w| format!("{shape}>{w}</text>"))))
}

/// Plotters' `<text>` elements (the tag, the words and the closing tag a line each) each on
/// one line, so that `lean` can group them by style like any shape.
fn join_texts(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut open = false;
    for line in svg.lines() {
        let t = line.trim();
        if !open && t.starts_with("<text ") && t.ends_with('>') && !t.contains("</text>") {
            out.push_str(t);
            open = true;
        } else if open && t == "</text>" {
            out.push_str("</text>\n");
            open = false;
        } else if open {
            out.push_str(t);
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Numbers inside tags (attribute values) rounded to one decimal; text between tags kept.
fn round_in_tags(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_tag = false;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            _ => {}
        }
        if in_tag && (c.is_ascii_digit() || c == '-') && !out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '#')
        {
            let end = line[i..]
                .find(|ch: char| !(ch.is_ascii_digit() || ch == '.' || ch == '-'))
                .map_or(line.len(), |e| i + e);
            let number = &line[i..end];
            match number.parse::<f64>() {
                Ok(v) if number.contains('.') => out.push_str(&axis_tenth(v)),
                _ => out.push_str(number),
            }
            while chars.peek().is_some_and(|(j, _)| *j < end) {
                chars.next();
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// A coordinate to a tenth, without a trailing `.0`.
fn axis_tenth(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// What a line chart shows, in words: each series' range.
fn line_summary(spec: &ChartSpec) -> String {
    let parts: Vec<String> = spec
        .series
        .iter()
        .filter(|s| !s.points.is_empty())
        .take(8)
        .map(|s| {
            let ys = s.points.iter().map(|p| p.1).filter(|y| y.is_finite());
            let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
            let range = if lo == hi { axis_number(lo) } else { format!("{} to {}", axis_number(lo), axis_number(hi)) };
            format!("{}: {} points, {} {range}", s.label.trim(), s.points.len(), spec.y_desc)
        })
        .collect();
    let more = spec.series.len().saturating_sub(8);
    let tail = if more > 0 { format!("; {more} more series") } else { String::new() };
    format!("{} against {}. {}{tail}.", spec.y_desc, spec.x_desc, parts.join("; "))
}

/// The largest coordinate a chart takes: data is bounded at load, and a chart must never
/// compute an axis that overflows (plotters loops on an infinite range).
const MAX_COORDINATE: f64 = 1e15;

fn drawable(x: f64, y: f64) -> bool {
    x.is_finite() && y.is_finite() && x.abs() <= MAX_COORDINATE && y.abs() <= MAX_COORDINATE
}

fn project_x(axis: XAxis, x: f64) -> f64 {
    match axis {
        XAxis::Context => x.max(1.0).log2(),
        XAxis::Log => x.max(1e-9).log2(),
        XAxis::Linear => x,
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
    (x0, x1): (f64, f64),
    y1: f64,
    marks: &mut String,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(root)
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(x0..x1, 0f64..y1)?;
    let axis = spec.x_axis;
    let names = spec.x_names;
    let x_fmt = move |x: &f64| match (axis, names) {
        (XAxis::Context, _) => numbers::context_label(x.exp2().round() as u32),
        (XAxis::Log, _) => numbers::rate(significant(x.exp2(), 2)),
        (XAxis::Linear, Some(names)) => name_at(names, *x),
        (XAxis::Linear, None) => axis_number(*x),
    };
    let y_fmt = |y: &f64| axis_number(*y);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(spec.x_desc)
        .y_desc(spec.y_desc)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", plotters_font(TEXT_PX)))
        .axis_desc_style(("sans-serif", plotters_font(TEXT_PX + 1)))
        .max_light_lines(0);
    if let Some(names) = names {
        mesh.x_labels(names.len().clamp(2, 8));
    }
    if matches!(axis, XAxis::Context | XAxis::Log) {
        // One label per power of two between the ends.
        let n = ((x1.floor() - x0.ceil()) as usize + 1).clamp(2, 10);
        mesh.x_labels(n);
    }
    mesh.draw()?;
    let mut labels = LabelPlacer::default();
    if spec.legend {
        marks.push_str(&legend(spec.series, &mut labels));
    }
    for (i, s) in spec.series.iter().enumerate() {
        let colour = series_colour(i);
        let css = format!("#{:02x}{:02x}{:02x}", colour.0, colour.1, colour.2);
        let kept: Vec<(f64, f64, Option<&String>)> = s
            .points
            .iter()
            .enumerate()
            .map(|(j, &(x, y))| (project_x(axis, x), y, s.point_labels.get(j)))
            .filter(|&(x, y, _)| drawable(x, y))
            .collect();
        let pts: Vec<(f64, f64)> = kept.iter().map(|&(x, y, _)| (x, y)).collect();
        chart.draw_series(LineSeries::new(pts, colour.stroke_width(2)))?;
        // A series' whiskers are one path (each interval's line and its two 6-pixel caps);
        // the intervals' numbers are in the page's tables, not repeated on each whisker.
        let mut whiskers = String::new();
        for (j, &(x, y)) in s.points.iter().enumerate() {
            let Some((lo, hi)) = s.errors.get(j).copied().flatten() else { continue };
            let x = project_x(axis, x);
            if !(drawable(x, y) && drawable(x, lo) && drawable(x, hi)) {
                continue;
            }
            let (wx, top) = chart.backend_coord(&(x, hi.max(0.0)));
            let (_, bottom) = chart.backend_coord(&(x, lo.max(0.0)));
            // An interval within a pixel is its one cap.
            if top == bottom {
                whiskers.push_str(&format!("M{} {top}h6", wx - 3));
            } else {
                whiskers.push_str(&format!("M{wx} {top}V{bottom}M{} {top}h6M{} {bottom}h6", wx - 3, wx - 3));
            }
        }
        if !whiskers.is_empty() {
            marks.push_str(&format!(
                "<path class=\"whisker\" stroke=\"{css}\" stroke-width=\"1.5\" fill=\"none\" d=\"{whiskers}\"/>"
            ));
        }
        // A series' markers are one path, a subpath a point.
        let mut points = String::new();
        for &(x, y, label) in &kept {
            let (cx, cy) = chart.backend_coord(&(x, y));
            points.push_str(&marker_path(marker_shape(i), cx, cy));
            labels.occupy(Rect::around(cx, cy, 5));
            if let Some(text) = label.map(|t| t.trim()).filter(|t| !t.is_empty()) {
                labels.place(text, cx, cy);
            }
        }
        if !points.is_empty() {
            marks.push_str(&marker_series(marker_shape(i), &css, &points));
        }
    }
    // The labels share their style on one group.
    if !labels.svg.is_empty() {
        marks.push_str(&format!("<g font-size=\"{TEXT_PX}\" fill=\"currentColor\">{}</g>", labels.svg));
    }
    Ok(())
}

/// The legend, drawn by us so each entry shows its series' marker: top right, one line a
/// series; the space it takes is kept free of point labels.
fn legend(series: &[Series], labels: &mut LabelPlacer) -> String {
    use std::fmt::Write as _;
    let line_h = LEGEND_LINE_PX;
    let b = legend_box(series);
    let (x0, y0, w, h) = (b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0);
    labels.occupy(b);
    let mut svg = format!(
        "<rect x=\"{x0}\" y=\"{y0}\" width=\"{w}\" height=\"{h}\" fill=\"none\" stroke=\"currentColor\" stroke-opacity=\"0.3\"/>"
    );
    for (i, s) in series.iter().enumerate() {
        let c = series_colour(i);
        let css = format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2);
        let y = y0 + 4 + line_h * i as i32 + line_h / 2;
        let _ = write!(
            svg,
            "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{css}\" stroke-width=\"2\"/>",
            x0 + 6,
            x0 + 28
        );
        let open = marker(marker_shape(i), x0 + 17, y, 4, &css);
        let _ = write!(svg, "{}/>", &open[..open.len() - 1]);
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" font-size=\"{TEXT_PX}\" font-family=\"sans-serif\" fill=\"currentColor\"><title>{}</title>{}</text>",
            x0 + 34,
            y + TEXT_PX as i32 / 2 - 2,
            xml_escape(&s.label),
            xml_escape(&legend_label(&s.label))
        );
    }
    svg
}

const LEGEND_LINE_PX: i32 = TEXT_PX as i32 + 6;

/// Where the legend goes: the plot's top right, a line a series.
fn legend_box(series: &[Series]) -> Rect {
    let text_w = series.iter().map(|s| text_width(&legend_label(&s.label))).max().unwrap_or(0);
    let (w, h) = (text_w + 40, LEGEND_LINE_PX * series.len() as i32 + 8);
    let (x0, y0) = (WIDTH as i32 - 16 - w, 16);
    Rect { x0, y0, x1: x0 + w, y1: y0 + h }
}

/// The widest a legend's text may be: the legend stays over the plot (a run's full name on a
/// comparison is wider than the chart).
const LEGEND_TEXT_MAX_PX: i32 = PLOT.x1 - PLOT.x0 - 40 - 8;

/// `label` as the legend prints it: whole where it fits, else cut with an ellipsis (the
/// whole label is the entry's `<title>`).
fn legend_label(label: &str) -> std::borrow::Cow<'_, str> {
    if text_width(label) <= LEGEND_TEXT_MAX_PX {
        return label.into();
    }
    let keep = (LEGEND_TEXT_MAX_PX as f64 / (TEXT_PX as f64 * 0.56)).floor() as usize - 1;
    format!("{}…", label.chars().take(keep).collect::<String>().trim_end()).into()
}

/// The top of the y axis (at least `top`) that draws every point within the legend's
/// columns below the legend: a series along the top of the chart on the right (a gauge at
/// its target) would otherwise be drawn through it. The legend takes at most 60% of the
/// height this way; a taller legend (many series) may cover points.
fn top_clear_of_legend(spec: &ChartSpec, (x0, x1): (f64, f64), top: f64) -> f64 {
    let b = legend_box(spec.series);
    let px = |x: f64| PLOT.x0 as f64 + (x - x0) / (x1 - x0) * (PLOT.x1 - PLOT.x0) as f64;
    let under = spec
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|&(x, y)| (project_x(spec.x_axis, x), y))
        .filter(|&(x, y)| drawable(x, y) && px(x) >= (b.x0 - 6) as f64)
        .fold(0.0f64, |m, (_, y)| m.max(y));
    let covered = ((b.y1 + 6 - PLOT.y0) as f64 / (PLOT.y1 - PLOT.y0) as f64).min(0.6);
    top.max(under / (1.0 - covered))
}

/// About how wide `text` is at the chart's text size: sans-serif characters average a
/// little over half the font size.
fn text_width(text: &str) -> i32 {
    (text.chars().count() as f64 * TEXT_PX as f64 * 0.56).ceil() as i32
}

/// A box in drawing pixels.
#[derive(Clone, Copy)]
struct Rect {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl Rect {
    fn around(x: i32, y: i32, r: i32) -> Rect {
        Rect { x0: x - r, y0: y - r, x1: x + r, y1: y + r }
    }

    fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
}

/// Point labels placed where they overlap nothing placed before (a label, a marker): to the
/// right, above, below or left of the point; a label with no free place is left out.
#[derive(Default)]
struct LabelPlacer {
    taken: Vec<Rect>,
    svg: String,
}

impl LabelPlacer {
    fn occupy(&mut self, r: Rect) {
        self.taken.push(r);
    }

    fn place(&mut self, text: &str, x: i32, y: i32) {
        use std::fmt::Write as _;
        let w = text_width(text);
        let h = TEXT_PX as i32;
        let candidates =
            [(x + 7, y + h / 2 - 2), (x - w / 2, y - 8), (x - w / 2, y + h + 6), (x - w - 7, y + h / 2 - 2)];
        for (tx, baseline) in candidates {
            let r = Rect { x0: tx, y0: baseline - h + 2, x1: tx + w, y1: baseline + 3 };
            let inside = r.x0 >= 0 && r.x1 <= WIDTH as i32 && r.y0 >= 0 && r.y1 <= HEIGHT as i32;
            if inside && !self.taken.iter().any(|t| t.overlaps(&r)) {
                self.taken.push(r);
                let _ = write!(self.svg, "<text x=\"{tx}\" y=\"{baseline}\">{}</text>", xml_escape(text));
                return;
            }
        }
    }
}

/// A point of a scatter chart: where it is.
pub struct ScatterPoint {
    pub x: f64,
    pub y: f64,
    /// The (low, high) of y's interval, drawn as a whisker.
    pub y_err: Option<(f64, f64)>,
}

/// What a point says on hover and where it links.
pub struct PointLabel {
    pub title: String,
    pub href: Option<String>,
}

/// One configuration of a scatter chart: its points and the frontier through some of them.
pub struct ScatterGroup {
    pub points: Vec<ScatterPoint>,
    /// Indexes into `points`, drawn as one line in this order.
    pub frontier: Vec<usize>,
}

pub struct ScatterSpec<'a> {
    /// The chart's accessible name.
    pub title: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub groups: &'a [ScatterGroup],
    /// Points beyond this many are drawn as plain dots, without their title, link and
    /// whisker (frontier points keep theirs), so a chart of thousands of cells stays small.
    pub max_linked: usize,
    /// The label of point `j` of group `i`; asked only of the points that keep theirs.
    pub label: &'a dyn Fn(usize, usize) -> PointLabel,
    /// Vertical guides at these x values, each with its name (interactivity levels).
    pub guides: &'a [(f64, String)],
    /// A shaded region from this x rightwards, with its name (where an SLO's per-user speed
    /// is met).
    pub region: Option<(f64, String)>,
}

/// The marker of series `i`: a shape as well as a colour tells series apart.
pub fn marker_shape(i: usize) -> &'static str {
    ["circle", "square", "triangle", "diamond"][i % 4]
}

/// A scatter chart with a frontier line per group; points are SVG elements of their own
/// (title and link), which plotters cannot draw, placed with the chart's own coordinates.
pub fn scatter_chart(spec: &ScatterSpec) -> String {
    let all = spec.groups.iter().flat_map(|g| &g.points).filter(|p| drawable(p.x, p.y));
    let top = |p: &ScatterPoint| p.y_err.map(|e| e.1).filter(|hi| drawable(p.x, *hi)).unwrap_or(p.y).max(p.y);
    let (x1, y1) = all.fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.x), y.max(top(p))));
    if x1 <= 0.0 || y1 <= 0.0 {
        return String::new();
    }
    let (x1, y1) = (x1 * 1.08, y1 * 1.12);
    let mut svg = String::new();
    let mut marks = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        if draw_scatter(&root, spec, (x1, y1), &mut marks).is_err() {
            return String::new();
        }
        let _ = root.present();
    }
    let points = spec.groups.iter().map(|g| g.points.len()).sum::<usize>();
    let summary = format!(
        "{} against {}: {points} points in {} configurations, each with its frontier line; {} up to {}, {} up to {}.",
        spec.y_desc,
        spec.x_desc,
        spec.groups.len(),
        spec.y_desc,
        axis_number(y1 / 1.12),
        spec.x_desc,
        axis_number(x1 / 1.08)
    );
    // Its points are links: a group of them, not one image.
    finish_svg(&svg, "chart scatter", spec.title, &summary, &marks).replacen("role=\"img\"", "role=\"group\"", 1)
}

fn draw_scatter<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ScatterSpec,
    (x1, y1): (f64, f64),
    marks: &mut String,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..x1, 0f64..y1)?;
    chart
        .configure_mesh()
        .x_desc(spec.x_desc)
        .y_desc(spec.y_desc)
        .x_label_formatter(&|x| axis_number(*x))
        .y_label_formatter(&|y| axis_number(*y))
        .label_style(("sans-serif", plotters_font(TEXT_PX)))
        .axis_desc_style(("sans-serif", plotters_font(TEXT_PX + 1)))
        .max_light_lines(0)
        .draw()?;
    if let Some((x, name)) = spec.region.as_ref().filter(|(x, _)| x.is_finite() && *x > 0.0 && *x < x1) {
        let (left, top) = chart.backend_coord(&(*x, y1));
        let (right, bottom) = chart.backend_coord(&(x1, 0.0));
        marks.push_str(&format!(
            "<rect class=\"slo-region\" x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"currentColor\" fill-opacity=\"0.06\"><title>{}</title></rect>",
            right - left,
            bottom - top,
            xml_escape(name)
        ));
    }
    for (x, name) in spec.guides.iter().filter(|(x, _)| x.is_finite() && *x > 0.0 && *x < x1) {
        let (gx, top) = chart.backend_coord(&(*x, y1));
        let (_, bottom) = chart.backend_coord(&(*x, 0.0));
        marks.push_str(&format!(
            "<g class=\"guide\"><title>{}</title><line x1=\"{gx}\" y1=\"{top}\" x2=\"{gx}\" y2=\"{bottom}\" stroke=\"currentColor\" stroke-opacity=\"0.45\" stroke-dasharray=\"4 4\"/><text x=\"{}\" y=\"{}\" font-size=\"{TEXT_PX}\" fill=\"currentColor\">{}</text></g>",
            xml_escape(name),
            gx + 3,
            top + TEXT_PX as i32,
            xml_escape(&axis_number(*x))
        ));
    }
    let mut linked = 0;
    for (i, g) in spec.groups.iter().enumerate() {
        let colour = series_colour(i);
        let line: Vec<(f64, f64)> =
            g.frontier.iter().map(|&j| &g.points[j]).filter(|p| drawable(p.x, p.y)).map(|p| (p.x, p.y)).collect();
        chart.draw_series(LineSeries::new(line, colour.stroke_width(2)))?;
        let css = format!("#{:02x}{:02x}{:02x}", colour.0, colour.1, colour.2);
        // Unlinked points: dots of one path (a zero-length segment each, drawn by its round
        // cap), so a chart of thousands of cells stays a few kilobytes.
        // A dot drawn once per pixel: identical points (repeated runs of one setup) add nothing.
        let mut dots = String::new();
        let mut dotted = std::collections::HashSet::new();
        for (j, p) in g.points.iter().enumerate().filter(|(_, p)| drawable(p.x, p.y)) {
            let on_frontier = g.frontier.contains(&j);
            let (cx, cy) = chart.backend_coord(&(p.x, p.y));
            if !(on_frontier || linked < spec.max_linked) {
                if dotted.insert((cx, cy)) {
                    dots.push_str(&format!("M{cx} {cy}h0"));
                }
                continue;
            }
            linked += 1;
            if let Some((lo, hi)) = p.y_err.filter(|(lo, hi)| drawable(p.x, *lo) && drawable(p.x, *hi)) {
                let (_, top) = chart.backend_coord(&(p.x, hi));
                let (_, bottom) = chart.backend_coord(&(p.x, lo.max(0.0)));
                marks.push_str(&format!(
                    "<line class=\"whisker\" x1=\"{cx}\" y1=\"{top}\" x2=\"{cx}\" y2=\"{bottom}\" stroke=\"{css}\" stroke-width=\"1.5\"/>"
                ));
            }
            // Data marks carry class "point", as every chart's do.
            let shape = marker(marker_shape(i), cx, cy, if on_frontier { 5 } else { 3 }, &css).replacen(
                ' ',
                " class=\"point\" ",
                1,
            );
            push_linked(marks, &shape, &(spec.label)(i, j));
        }
        if !dots.is_empty() {
            marks.push_str(&format!(
                "<path class=\"point dots\" stroke=\"{css}\" stroke-width=\"6\" stroke-linecap=\"round\" d=\"{dots}\"/>"
            ));
        }
    }
    Ok(())
}

/// One point's marker as a subpath of its series' path (radius 4, as `marker`'s): a circle
/// or square is a dot its stroke's cap draws, a triangle or diamond a filled outline.
fn marker_path(shape: &str, x: i32, y: i32) -> String {
    match shape {
        "triangle" => format!("M{x} {}l-5 9h10z", y - 5),
        "diamond" => format!("M{x} {}l5 5-5 5-5-5z", y - 5),
        _ => format!("M{x} {y}h0"),
    }
}

/// A series' markers (`marker_path` subpaths) as one element of class `point`.
fn marker_series(shape: &str, css: &str, d: &str) -> String {
    match shape {
        "triangle" | "diamond" => format!("<path class=\"point\" fill=\"{css}\" d=\"{d}\"/>"),
        cap => {
            let cap = if cap == "square" { "square" } else { "round" };
            format!("<path class=\"point\" fill=\"none\" stroke=\"{css}\" stroke-width=\"8\" stroke-linecap=\"{cap}\" d=\"{d}\"/>")
        }
    }
}

/// An SVG marker element (open, closed by the caller): `<circle ...>` and so on.
fn marker(shape: &str, x: i32, y: i32, r: i32, fill: &str) -> String {
    match shape {
        "square" => {
            format!("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\">", x - r, y - r, 2 * r, 2 * r)
        }
        "triangle" => format!(
            "<polygon points=\"{x},{} {},{} {},{}\" fill=\"{fill}\">",
            y - r - 1,
            x - r - 1,
            y + r,
            x + r + 1,
            y + r
        ),
        "diamond" => format!(
            "<polygon points=\"{x},{} {},{y} {x},{} {},{y}\" fill=\"{fill}\">",
            y - r - 1,
            x + r + 1,
            y + r + 1,
            x - r - 1
        ),
        _ => format!("<circle cx=\"{x}\" cy=\"{y}\" r=\"{r}\" fill=\"{fill}\">"),
    }
}

fn push_linked(marks: &mut String, open: &str, p: &PointLabel) {
    use std::fmt::Write as _;
    let tag = open[1..].split(' ').next().unwrap_or("circle");
    let title = xml_escape(&p.title);
    match &p.href {
        Some(href) => {
            let _ = write!(marks, "<a href=\"{}\">{open}<title>{title}</title></{tag}></a>", xml_escape(href));
        }
        None => {
            let _ = write!(marks, "{open}<title>{title}</title></{tag}>");
        }
    }
}

/// A small trend line (no axes: the page prints the numbers beside it), one dot per value,
/// gaps where a value is missing. Far lighter than a full chart, for a table of many: the
/// dots are one path (no element or title per point), whole-pixel coordinates, and the
/// description names the range and the first and last labels.
pub fn sparkline(title: &str, values: &[Option<f64>], labels: &[String], value_text: fn(f64) -> String) -> String {
    use std::fmt::Write as _;
    let present: Vec<f64> = values.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    if present.len() < 2 {
        return String::new();
    }
    let (w, h, pad) = (240.0, 48.0, 5.0);
    let max = present.iter().copied().fold(f64::MIN, f64::max);
    let min = present.iter().copied().fold(f64::MAX, f64::min).min(max - 1e-9);
    let x = |i: usize| pad + (w - 2.0 * pad) * i as f64 / (values.len().max(2) - 1) as f64;
    let y = |v: f64| pad + (h - 2.0 * pad) * (1.0 - (v - min) / (max - min));
    let labelled: Vec<&str> =
        values.iter().zip(labels).filter(|(v, _)| v.is_some_and(f64::is_finite)).map(|(_, l)| l.as_str()).collect();
    let span = match (labelled.first(), labelled.last()) {
        (Some(a), Some(b)) if a != b => format!("; {a} to {b}"),
        (Some(a), _) => format!("; {a}"),
        _ => String::new(),
    };
    let mut svg = format!(
        "<svg class=\"chart spark\" role=\"img\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" preserveAspectRatio=\"xMidYMid meet\"><title>{}</title><desc>{}</desc>",
        xml_escape(title),
        xml_escape(&format!("{} values from {} to {}{span}.", present.len(), value_text(min.min(max)), value_text(max)))
    );
    // One polyline per run of consecutive values.
    let mut line = Vec::new();
    let mut dots = String::new();
    for (i, v) in values.iter().enumerate() {
        match v.filter(|v| v.is_finite()) {
            Some(v) => {
                line.push(format!("{:.0},{:.0}", x(i), y(v)));
                let _ = write!(dots, "M{:.0} {:.0}h0", x(i), y(v));
            }
            None => flush_line(&mut svg, &mut line),
        }
    }
    flush_line(&mut svg, &mut line);
    let _ = write!(
        svg,
        "<path d=\"{dots}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"5\" stroke-linecap=\"round\"/></svg>"
    );
    svg
}

fn flush_line(svg: &mut String, line: &mut Vec<String>) {
    if line.len() > 1 {
        svg.push_str(&format!(
            "<polyline points=\"{}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\"/>",
            line.join(" ")
        ));
    }
    line.clear();
}

/// The name of a whole x position; ticks between positions stay blank.
fn name_at(names: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    names.get(i as usize).cloned().unwrap_or_default()
}

/// Axis ticks: `34.2K` from a thousand up, whole numbers below (tick steps are round).
fn axis_number(v: f64) -> String {
    if v.abs() >= 1000.0 {
        numbers::compact(v)
    } else if v.fract().abs() < 1e-9 {
        numbers::integer(v)
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lean_svg_groups_shared_styles_and_rounds_only_attribute_numbers() {
        // Lines of one style (gridlines) become one path; other shapes and texts of one style
        // share a group.
        let drawn = concat!(
            "<line opacity=\"0.2\" stroke=\"currentColor\" stroke-width=\"1\" x1=\"122\" y1=\"271.123456\" x2=\"122\" y2=\"12\"/>\n",
            "<line opacity=\"0.2\" stroke=\"currentColor\" stroke-width=\"1\" x1=\"197\" y1=\"271\" x2=\"197\" y2=\"12\"/>\n",
            "<text x=\"12.04\" font-size=\"15.32258064516129\" opacity=\"1\" fill=\"#0072b2\">\n",
            "1.23456 tok/s\n",
            "</text>\n",
            "<circle cx=\"3\" cy=\"4\" r=\"2\" fill=\"#e69f00\"/>\n",
        );
        let lean = lean(drawn);
        assert_eq!(
            lean,
            concat!(
                "<path opacity=\"0.2\" stroke=\"currentColor\" stroke-width=\"1\" fill=\"none\" d=\"M122 271.1V12M197 271V12\"/>\n",
                "<text font-size=\"15.3\" fill=\"#0072b2\" x=\"12\">1.23456 tok/s</text>\n",
                "<circle fill=\"#e69f00\" cx=\"3\" cy=\"4\" r=\"2\"/>\n",
            )
        );
    }

    #[test]
    fn two_point_polylines_of_one_style_become_one_path_where_the_first_was() {
        let drawn = concat!(
            "<polyline fill=\"none\" stroke=\"currentColor\" stroke-width=\"1\" points=\"83,12 83,271 \"/>\n",
            "<text x=\"74\">0</text>\n",
            "<polyline fill=\"none\" stroke=\"currentColor\" stroke-width=\"1\" points=\"78,271 83,271 \"/>\n",
            "<polyline fill=\"none\" stroke=\"#0072b2\" stroke-width=\"2\" points=\"1,2 3,4 5,6 \"/>\n",
            "<polyline fill=\"none\" stroke=\"currentColor\" stroke-width=\"1\" points=\"1,1 4,5 \"/>\n",
        );
        assert_eq!(
            merge_segments(drawn),
            concat!(
                "<path fill=\"none\" stroke=\"currentColor\" stroke-width=\"1\" d=\"M83 12V271M78 271H83M1 1L4 5\"/>\n",
                "<text x=\"74\">0</text>\n",
                "<polyline fill=\"none\" stroke=\"#0072b2\" stroke-width=\"2\" points=\"1,2 3,4 5,6 \"/>\n",
            )
        );
    }

    #[test]
    fn huge_values_are_left_out_instead_of_hanging_the_axis() {
        let series = [Series {
            label: "a".into(),
            points: vec![(1.0, 10.0), (2.0, f64::MAX / 2.0), (3.0, 1e300), (4.0, f64::INFINITY), (5.0, 20.0)],
            point_labels: vec![],
            errors: vec![],
        }];
        let spec = ChartSpec {
            x_axis: XAxis::Linear,
            title: "test",
            x_desc: "x",
            y_desc: "y",
            series: &series,
            legend: false,
            x_names: None,
        };
        let svg = line_chart(&spec);
        // The two sane points are drawn (one marker each); the axis tops out near 20.
        assert_eq!(point_ys(&svg).len(), 2, "{svg}");
        assert!(svg.contains("<title>test</title><desc>y against x. a: 5 points, y"), "{svg}");
        let labels: Vec<&str> =
            svg.split("<text").skip(1).filter_map(|t| t.split('>').nth(1)?.split('<').next()).map(str::trim).collect();
        // y ticks up to the largest sane value (20 plus headroom), then the x ticks.
        assert_eq!(labels[..7], ["y", "x", "0", "5", "10", "15", "20"]);
    }

    /// The number after `name="` in each element of `svg` that starts with `tag`.
    /// The y of every marker of the first series' path of class `point` (a subpath a point).
    fn point_ys(svg: &str) -> Vec<i32> {
        let d = svg.split("class=\"point\"").nth(1).and_then(|p| p.split(" d=\"").nth(1)?.split('"').next());
        d.unwrap_or_default().split('M').skip(1).filter_map(|m| m.split([' ', 'h', 'l']).nth(1)?.parse().ok()).collect()
    }

    #[test]
    fn chart_data_carries_rounded_numbers_context_ticks_and_cannot_close_its_script() {
        let series = [Series {
            label: "</script><b>".into(),
            points: vec![(256.0, 10_123.456), (8192.0, 19_401.9), (16384.0, f64::INFINITY)],
            point_labels: vec![" 25 ms".into(), "421 ms".into(), String::new()],
            errors: vec![Some((9_900.04, 10_300.0)), None, None],
        }];
        let spec = ChartSpec {
            x_axis: XAxis::Context,
            title: "prefill",
            x_desc: "context",
            y_desc: "prompt tok/s",
            series: &series,
            legend: false,
            x_names: None,
        };
        let text = line_chart_data(&spec);
        assert!(!text.contains("</"), "{text}");
        let data: serde_json::Value = serde_json::from_str(&text).unwrap();
        // x as log2, four significant digits, the undrawable point left out, labels trimmed.
        assert_eq!(
            data["series"][0]["points"],
            serde_json::json!([[8, 10120, 9900, 10300, "25 ms"], [13, 19400, null, null, "421 ms"]])
        );
        assert_eq!(data["series"][0]["label"], "</script><b>");
        let ticks: Vec<&str> = data["x_ticks"].as_array().unwrap().iter().map(|t| t[1].as_str().unwrap()).collect();
        assert_eq!(ticks, ["256", "512", "1K", "2K", "4K", "8K"]);
        assert_eq!(line_chart_data(&ChartSpec { series: &[], ..spec }), "");
    }

    #[test]
    fn a_series_along_the_top_is_drawn_below_the_legend() {
        // A gauge at its target across the whole cell: the legend's corner would cover it.
        let flat = |label: &str, y: f64| Series {
            label: label.into(),
            points: (0..10).map(|i| (i as f64, y)).collect(),
            point_labels: vec![],
            errors: vec![],
        };
        let series = [flat("running", 2.0), flat("target: 2", 2.0), flat("waiting", 0.0)];
        let spec = ChartSpec {
            x_axis: XAxis::Linear,
            title: "gauge",
            x_desc: "s",
            y_desc: "requests",
            series: &series,
            legend: true,
            x_names: None,
        };
        let svg = line_chart(&spec);
        let b = legend_box(&series);
        let frame = format!("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0);
        assert!(svg.contains(&frame), "the legend is drawn where legend_box says: {svg}");
        let legend_bottom = b.y1;
        let running: Vec<i32> = point_ys(&svg);
        assert_eq!(running.len(), 10, "{svg}");
        assert!(running.iter().all(|&cy| cy > legend_bottom), "points at {running:?}, legend down to {legend_bottom}");
        // Without a legend the same series rise to the usual headroom, into that corner.
        let bare = line_chart(&ChartSpec { legend: false, ..spec });
        let cy = point_ys(&bare);
        assert!(cy.iter().all(|&cy| cy < legend_bottom), "{cy:?}");
    }

    #[test]
    fn a_long_legend_label_is_cut_to_stay_over_the_plot() {
        let long = "A: Step-3.7-Flash-FP8 · sglang 0.5.6.post3.dev9269+g834400705 · 2× H200 NVL · step-3.7-flash";
        let series =
            [Series { label: long.into(), points: vec![(1.0, 1.0), (2.0, 2.0)], point_labels: vec![], errors: vec![] }];
        let b = legend_box(&series);
        assert!(b.x0 >= PLOT.x0, "the legend starts at {} left of the plot's {}", b.x0, PLOT.x0);
        let shown = legend_label(long);
        assert!(shown.ends_with('…') && long.starts_with(shown.trim_end_matches('…')), "{shown}");
        let spec = ChartSpec {
            x_axis: XAxis::Linear,
            title: "t",
            x_desc: "x",
            y_desc: "y",
            series: &series,
            legend: true,
            x_names: None,
        };
        let svg = line_chart(&spec);
        assert!(svg.contains(&format!("<title>{}</title>{}</text>", xml_escape(long), xml_escape(&shown))), "{svg}");
        // A label that fits is printed whole.
        assert_eq!(legend_label("running"), "running");
    }
}

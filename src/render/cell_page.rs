//! A page per cell (`runs/<id>/cells/decode-8k-x64/`, `runs/<id>/cells/prefill-8k/`): the
//! evidence behind its figures, drawn from its raw records where the run kept them; the
//! figures as reported otherwise; what decided a Looped, Over capacity or error cell; links
//! to the neighbouring cells and the cell's leaderboard.

use anyhow::Result;
use minijinja::{context, Value};
use serde::Serialize;

use super::cell_charts;
use super::common::{put_page, root, ser, PageContext, RenderStats};
use super::downloads::cell_detail;
use super::leaderboard_page::{board_name, board_slug};
use crate::analysis::evidence::{self, CellDetail, Distribution, Evidence};
use crate::analysis::interval::{min_requests_for_percentile, Basis, Estimate, IntervalKind};
use crate::analysis::{BoardKey, CellView, FigureSource, Figures, RunView};
use crate::format::{Cell, Phase, RequestRecord, Status, TokenSource};
use crate::units::numbers::{self, context_slug};
use crate::write::Sink;

/// The folder of a cell's page under its run's folder.
pub fn cell_slug(c: &CellView) -> String {
    match c.phase {
        Phase::Decode => format!("decode-{}-x{}", context_slug(c.context), c.concurrency),
        Phase::Prefill => format!("prefill-{}", context_slug(c.context)),
    }
}

/// Every cell page of a run, as paths under the site.
pub fn files(run: &RunView) -> Vec<String> {
    run.prefill
        .iter()
        .chain(&run.decode)
        .map(|c| format!("runs/{}/cells/{}/index.html", run.id, cell_slug(c)))
        .collect()
}

/// A hash of everything a run's cell pages are made from: the run's view (its cells, facts
/// and title), what its cell files keep beyond the view (records, samples), the navigation
/// and the templates (not its leaderboard places: a cell page links to its board without
/// one).
pub fn input_hash(cx: &PageContext, run: &RunView, index: usize, template_hash: u64) -> u64 {
    let mut h = crate::units::InputHash::default();
    h.u64(run.view_hash).u64(run.detail_hash.is_some() as u64).u64(run.detail_hash.unwrap_or(0));
    // The run's unique name titles every cell page (it changes when another run arrives).
    h.piece(cx.titles.get(index).map_or("", String::as_str).as_bytes());
    h.u64(cx.nav_hash).u64(template_hash);
    h.finish()
}

/// `8K × 64` or `Prefill 8K`.
pub fn cell_name(c: &CellView) -> String {
    board_name(BoardKey::of(c))
}

pub fn token_source_label(s: TokenSource) -> &'static str {
    match s {
        TokenSource::Usage => "usage reported on every chunk",
        TokenSource::Chunks => "one token per chunk (the server reported no usage while streaming)",
        TokenSource::ChunksCheckedByFinalUsage => "chunk arrival times, scaled to the final usage",
    }
}

/// A cell another page links to: its name and its folder (a cell slug, or a board slug).
#[derive(Debug, Serialize)]
struct Link {
    name: String,
    slug: String,
}

/// One figure with how it was computed and from which numbers.
#[derive(Debug, Serialize)]
struct Formula {
    figure: &'static str,
    value: String,
    formula: &'static str,
    inputs: String,
}

#[derive(Debug, Serialize)]
struct Stats {
    name: &'static str,
    count: usize,
    p50: String,
    p90: String,
    p99: String,
    max: String,
    chart: String,
}

/// One figure of the cell with its uncertainty, as the cell page's table prints it.
#[derive(Debug, Serialize)]
struct UncertaintyRow {
    figure: &'static str,
    value: String,
    interval: String,
    method: &'static str,
    n: u32,
    /// What the interval covers.
    covers: &'static str,
    cv: String,
    noisy: bool,
}

fn uncertainty_rows(view: &CellView) -> Vec<UncertaintyRow> {
    let Some(s) = view.spread.as_deref() else { return Vec::new() };
    let rows: [(&'static str, Option<&Estimate>, fn(f64) -> String); 5] = [
        ("Prompt tok/s", s.prompt_tps.as_ref(), numbers::decimal1),
        ("Total tok/s", s.total_tps.as_ref(), numbers::decimal1),
        ("Per request tok/s", s.per_request_tps.as_ref(), numbers::decimal1),
        ("TTFT", s.ttft_ms.as_ref(), numbers::millis1),
        ("Time between tokens", s.tbt_ms.as_ref(), numbers::millis1),
    ];
    rows.into_iter()
        .filter_map(|(figure, e, fmt)| {
            let e = e?;
            let (interval, method) = match e.interval {
                Some(i) => (
                    format!("{} to {}", fmt(i.lo), fmt(i.hi)),
                    match i.kind {
                        IntervalKind::TMean => "95%, Student's t",
                        IntervalKind::OrderStatistic => "95%, order statistics",
                        IntervalKind::Range => "least to most (too few for 95%)",
                    },
                ),
                None => (numbers::DASH.to_string(), "too few for an interval"),
            };
            Some(UncertaintyRow {
                figure,
                value: fmt(e.value),
                interval,
                method,
                n: e.n,
                covers: match e.basis {
                    Basis::Repetitions => "repetitions: run-to-run noise",
                    Basis::Requests => "requests of one window only",
                    Basis::WindowBatches => "5 s batches of one window only",
                },
                cv: e.cv.map(|cv| format!("{:.1}%", cv * 100.0)).unwrap_or_else(|| numbers::DASH.into()),
                noisy: e.noisy(),
            })
        })
        .collect()
}

#[derive(Debug, Serialize)]
struct PrefillRequest {
    sent: String,
    ttft: String,
    reported_prompt: Option<u32>,
    cached: Option<u64>,
    rate: String,
}

#[derive(Debug, Default, Serialize)]
struct EvidenceView {
    requests: usize,
    lane_group: usize,
    timeline: String,
    gauge: String,
    gauge_source: Option<String>,
    /// How often the gauge was read, in words (`0.3 s`).
    gauge_every: Option<String>,
    throughput: String,
    outcomes: Vec<(&'static str, &'static str, usize)>,
    token_sources: Vec<(&'static str, usize)>,
}

/// Every cell page of `run`; `raw` is the run as loaded (its records), `None` where its
/// cells keep nothing beyond the view (`RunView::detail_hash`). `in_parallel` on every core,
/// for when this run is about all there is to render (`site serve` after a change). Not
/// otherwise: a thread waiting on its cells would take up other runs meanwhile, each
/// holding its raw records.
pub fn render_all(
    cx: &PageContext,
    (run, index): (&RunView, usize),
    detail: Option<&[CellDetail]>,
    in_parallel: bool,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let frame = RunFrame::of(run, cx.titles.get(index).map(String::as_str));
    let views: Vec<&CellView> = run.prefill.iter().chain(&run.decode).collect();
    let one = |&view: &&CellView, sink: &dyn Sink, st: &mut RenderStats| {
        let detail = detail.into_iter().flatten().find(|d| {
            let c = &d.cell;
            c.phase == view.phase && c.context == view.context && c.concurrency == view.concurrency
        });
        render(cx, &frame, run, view, detail, sink, st)
    };
    if in_parallel {
        return super::cached::render_parallel(&views, one, sink, stats);
    }
    views.iter().try_for_each(|view| one(view, sink, stats))
}

/// What every cell page of one run shows alike, made into template values once per run.
struct RunFrame {
    root: Value,
    run_id: Value,
    run_title: Value,
    /// The run's unique name, for the page's `<title>` (tabs, bookmarks, shared links).
    page_run_title: Value,
    bench_tool: Value,
    tool_name: Value,
}

impl RunFrame {
    fn of(run: &RunView, unique: Option<&str>) -> RunFrame {
        let tool = &run.manifest.bench_tool;
        let title = super::common::run_title(run);
        RunFrame {
            root: root("../../../../"),
            run_id: Value::from(run.id.as_str()),
            page_run_title: Value::from(unique.map_or_else(|| title.clone(), str::to_string)),
            run_title: Value::from(title),
            bench_tool: Value::from(format!("{} v{}", tool.name, tool.version)),
            tool_name: Value::from(tool.name.as_str()),
        }
    }
}

fn render(
    cx: &PageContext,
    frame: &RunFrame,
    run: &RunView,
    view: &CellView,
    detail: Option<&CellDetail>,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let cell = detail.map(|d| &d.cell);
    let evidence = detail.and_then(|d| d.evidence.as_ref());
    let (charts, ttft, tbt) = match evidence {
        Some(e) => evidence_view(e, view.concurrency, cell.and_then(|c| c.measurement.as_ref()?.gauge_source.clone())),
        None => (
            None,
            detail.and_then(|d| d.reported_ttft_ms.as_ref()).map(|d| stats_of(TTFT, d)),
            detail.and_then(|d| d.reported_tbt_ms.as_ref()).map(|d| stats_of(TBT, d)),
        ),
    };
    stats.charts +=
        charts.as_ref().map_or(0, |c| [&c.timeline, &c.gauge, &c.throughput].iter().filter(|s| !s.is_empty()).count());
    let html = cx.env.get_template("cell.html")?.render(context! {
        root => frame.root.clone(),
        nav_pages => cx.nav_pages(),
        run_id => frame.run_id.clone(),
        run_title => frame.run_title.clone(),
        page_run_title => frame.page_run_title.clone(),
        name => cell_name(view),
        cell => ser(view),
        measured => view.source == FigureSource::Measured,
        bench_tool => frame.bench_tool.clone(),
        detail => cell_detail(view),
        formulas => ser(formulas(view, cell, evidence)),
        uncertainty => ser(uncertainty_rows(view)),
        evidence => ser(charts),
        ttft => ser(ttft),
        tbt => ser(tbt),
        prefill_requests => ser(prefill_requests(view, cell)),
        tool_figures => ser(tool_figures(cell)),
        tool_name => frame.tool_name.clone(),
        requested_prompt => numbers::integer(view.context as f64),
        neighbours => ser(neighbours(run, view)),
        board => ser(Link { name: cell_name(view), slug: board_slug(BoardKey::of(view)) }),
    })?;
    put_page(sink, &format!("runs/{}/cells/{}/index.html", run.id, cell_slug(view)), &html, stats)
}

fn evidence_view(
    e: &Evidence,
    target: u32,
    gauge_source: Option<String>,
) -> (Option<EvidenceView>, Option<Stats>, Option<Stats>) {
    use evidence::Outcome::*;
    let o = &e.outcomes;
    let outcomes = [(Finished, o.finished), (Cancelled, o.cancelled), (Error, o.error)]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| (cell_charts::outcome_label(k), cell_charts::outcome_colour(k), n))
        .collect();
    let view = EvidenceView {
        requests: e.requests,
        lane_group: e.lane_group,
        timeline: cell_charts::timeline(e),
        gauge: cell_charts::gauge(e, target),
        gauge_source,
        gauge_every: e.gauge_every_s().map(numbers::seconds_setting),
        throughput: cell_charts::throughput(e),
        outcomes,
        token_sources: e.token_sources.iter().map(|(s, n)| (token_source_label(*s), *n)).collect(),
    };
    let ttft = e.ttft_ms.as_ref().map(|d| stats_of(TTFT, d));
    let tbt = e.tbt_ms.as_ref().map(|d| stats_of(TBT, d));
    (Some(view), ttft, tbt)
}

/// A percentile where n supports it, else what n does allow: "max of 8" is the honest
/// figure for a tail 8 requests cannot reach.
fn percentile_or_max(value: Option<f64>, p: f64, d: &Distribution) -> String {
    match value {
        Some(v) => numbers::millis1(v),
        None => format!(
            "needs {} requests (max of {}: {})",
            min_requests_for_percentile(p),
            d.count,
            numbers::millis1(d.max)
        ),
    }
}

const TTFT: &str = "Time to first token";
const TBT: &str = "Time between tokens";

fn stats_of(name: &'static str, d: &Distribution) -> Stats {
    Stats {
        name,
        count: d.count,
        p50: numbers::millis1(d.p50),
        p90: percentile_or_max(d.p90, 90.0, d),
        p99: percentile_or_max(d.p99, 99.0, d),
        max: numbers::millis1(d.max),
        chart: cell_charts::histogram(d, &format!("{} (ms)", name.to_lowercase())),
    }
}

/// An imported cell's figures under the source's own names.
#[derive(Serialize)]
struct ToolFigureRow {
    name: String,
    value: String,
    unit: String,
}

fn tool_figures(cell: Option<&Cell>) -> Vec<ToolFigureRow> {
    let Some(r) = cell.and_then(|c| c.reported.as_ref()) else { return Vec::new() };
    r.tool_figures
        .iter()
        .map(|t| ToolFigureRow { name: t.name.clone(), value: numbers::general(t.value), unit: t.unit.clone() })
        .collect()
}

fn formulas(view: &CellView, cell: Option<&Cell>, e: Option<&Evidence>) -> Vec<Formula> {
    let f = &view.figures;
    let (Some(cell), Some(e)) = (cell, e) else { return Vec::new() };
    if view.status != Status::Valid {
        return Vec::new();
    }
    let requests = cell.measurement.as_ref().map_or(&[][..], |m| &m.requests[..]);
    let ttfts = e.ttft_ms.as_ref().map_or(0, |d| d.count);
    let tbts = e.tbt_ms.as_ref().map_or(0, |d| d.count);
    let or_dash = numbers::or_dash;
    match view.phase {
        Phase::Prefill => {
            let r = requests.iter().find(|r| r.error.is_none());
            let tokens = r.and_then(|r| r.prompt_tokens).or(view.prompt_tokens);
            let ttft_s = r.and_then(|r| Some(r.first_token_s? - r.send_s));
            vec![Formula {
                figure: "Prompt tok/s",
                value: or_dash(f.prompt_tps, numbers::decimal1),
                formula: "prompt tokens / time to first token",
                inputs: format!(
                    "{} tokens / {}",
                    tokens.map_or_else(|| numbers::DASH.into(), |t| numbers::integer(t as f64)),
                    or_dash(ttft_s, |s| format!("{s:.3} s"))
                ),
            }]
        }
        Phase::Decode => {
            let mut rows = decode_formulas(f, e, tbts, ttfts);
            rows.extend(server_formulas(f, cell));
            rows
        }
    }
}

fn decode_formulas(f: &Figures, e: &Evidence, tbts: usize, ttfts: usize) -> Vec<Formula> {
    let or_dash = numbers::or_dash;
    vec![
        Formula {
            figure: "Total tok/s",
            value: or_dash(f.total_tps, numbers::decimal1),
            formula: "output tokens inside the window / measured seconds",
            inputs: format!(
                "{} tokens / {}",
                numbers::integer(e.window_tokens as f64),
                or_dash(f.measured_s, |s| format!("{s:.3} s"))
            ),
        },
        Formula {
            figure: "Per request tok/s",
            value: or_dash(f.per_request_tps, numbers::decimal1),
            formula: "median over requests of 1 / time between tokens",
            inputs: format!("{tbts} requests with two tokens or more"),
        },
        Formula {
            figure: "TTFT",
            value: or_dash(f.ttft_ms, numbers::millis),
            formula: "median over requests of first token − send",
            inputs: format!("{ttfts} requests with a first token"),
        },
        Formula {
            figure: "Time between tokens",
            value: or_dash(f.tbt_ms, numbers::millis1),
            formula: "median over requests of (last token − first token) / (tokens − 1)",
            inputs: format!("{tbts} requests"),
        },
        Formula {
            figure: "Average active requests",
            value: or_dash(f.avg_active, numbers::decimal1),
            formula: if e.gauge.is_empty() {
                "requests in flight, averaged over the window (the client's count: no server gauge)"
            } else {
                "mean of the server's running-requests gauge inside the window"
            },
            inputs: format!("{} gauge samples", e.gauge.len()),
        },
    ]
}

/// The server's own figures beside ours, and the client's CPU.
fn server_formulas(f: &Figures, cell: &Cell) -> Vec<Formula> {
    let m = cell.measurement.as_ref();
    let mut rows = Vec::new();
    if let (Some(v), Some(s)) = (f.server_total_tps, m.and_then(|m| m.server_tokens.as_ref())) {
        rows.push(Formula {
            figure: "Server tok/s",
            value: numbers::decimal1(v),
            formula: "growth of the server's generated-tokens counter between reads at the window's edges / seconds between the reads",
            inputs: format!("{} tokens ({}) / {:.3} s", numbers::integer(s.tokens), s.counter, s.end_s - s.start_s),
        });
    }
    if let (Some(server), Some(ours)) = (f.server_per_request_tps, f.finished_per_request_tps) {
        let n = m.map_or(0, |m| m.requests.iter().filter(|r| r.server_decode_tps.is_some()).count());
        rows.push(Formula {
            figure: "Server per request tok/s",
            value: numbers::decimal1(server),
            formula: "median over finished requests of the server's own decode rate (llama.cpp timings.predicted_per_second)",
            inputs: format!("{n} finished requests; ours over the same requests: {}", numbers::decimal1(ours)),
        });
    }
    if let Some(x) = f.cross_check() {
        rows.push(Formula {
            figure: "Client against server",
            value: format!("{:+.2}%", x.gap_pct),
            formula: "(ours − server) / server",
            inputs: format!("{} / {}", numbers::decimal1(x.ours), numbers::decimal1(x.server)),
        });
    }
    if let Some(power) = f.avg_power_w {
        let samples = m.map_or(0, |m| m.telemetry.len());
        rows.push(Formula {
            figure: "Average power",
            value: format!("{power:.0} W"),
            formula: "mean over sample moments of every device's power draw, summed",
            inputs: format!(
                "{samples} device readings; peak {}",
                numbers::or_dash(f.peak_power_w, |p| format!("{p:.0} W"))
            ),
        });
    }
    if let Some(j) = f.joules_per_token {
        rows.push(Formula {
            figure: "Energy per output token",
            value: format!("{j:.3} J"),
            formula: "average power / total tok/s",
            inputs: format!(
                "{} / {}",
                numbers::or_dash(f.avg_power_w, |p| format!("{p:.0} W")),
                numbers::or_dash(f.total_tps, numbers::decimal1)
            ),
        });
    }
    if let (Some(cores), Some(cpu)) = (f.client_cpu_cores, m.and_then(|m| m.client_cpu_s)) {
        rows.push(Formula {
            figure: "Client CPU",
            value: format!("{cores:.2} cores"),
            formula: "CPU seconds of the load generator (user + system) inside the window / window seconds",
            inputs: format!("{cpu:.3} s"),
        });
    }
    rows
}

fn prefill_requests(view: &CellView, cell: Option<&Cell>) -> Vec<PrefillRequest> {
    if view.phase != Phase::Prefill {
        return Vec::new();
    }
    let requests = cell.and_then(|c| c.measurement.as_ref()).map_or(&[][..], |m| &m.requests[..]);
    let t0 = requests.iter().map(|r| r.send_s).fold(f64::INFINITY, f64::min);
    requests
        .iter()
        .map(|r: &RequestRecord| {
            let ttft = r.first_token_s.map(|f| f - r.send_s);
            let tokens = r.prompt_tokens.or(view.prompt_tokens);
            PrefillRequest {
                sent: format!("{:.2} s", r.send_s - t0),
                ttft: numbers::or_dash(ttft.map(|t| t * 1000.0), numbers::millis),
                reported_prompt: r.prompt_tokens,
                cached: r.cached_prompt_tokens,
                rate: numbers::or_dash(
                    tokens.zip(ttft).filter(|(_, t)| *t > 0.0).map(|(n, t)| n as f64 / t),
                    numbers::decimal1,
                ),
            }
        })
        .collect()
}

/// Previous and next cells along the row (concurrency) and the column (context), for
/// decode cells; along the contexts for prefill cells.
fn neighbours(run: &RunView, view: &CellView) -> Vec<(&'static str, Link)> {
    let link = |c: &CellView| Link { name: cell_name(c), slug: cell_slug(c) };
    let mut out = Vec::new();
    match view.phase {
        Phase::Prefill => {
            let i = run.prefill.iter().position(|c| c.context == view.context);
            if let Some(i) = i {
                if i > 0 {
                    out.push(("Shorter context", link(&run.prefill[i - 1])));
                }
                if let Some(c) = run.prefill.get(i + 1) {
                    out.push(("Longer context", link(c)));
                }
            }
        }
        Phase::Decode => {
            let h = &run.heatmap;
            let col = h.columns.iter().position(|&c| c == view.concurrency);
            let row = h.rows.iter().position(|r| r.context == view.context);
            if let (Some(col), Some(row)) = (col, row) {
                let at = |r: usize, c: usize| h.rows.get(r)?.cells.get(c).copied().flatten().map(|i| &run.decode[i]);
                let steps: [(&'static str, Option<&CellView>); 4] = [
                    ("Fewer requests", col.checked_sub(1).and_then(|c| at(row, c))),
                    ("More requests", at(row, col + 1)),
                    ("Shorter context", row.checked_sub(1).and_then(|r| at(r, col))),
                    ("Longer context", at(row + 1, col)),
                ];
                out.extend(steps.into_iter().filter_map(|(what, c)| c.map(|c| (what, link(c)))));
            }
        }
    }
    out
}

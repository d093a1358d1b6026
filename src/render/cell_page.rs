//! Each cell's evidence, for every repetition, in one data file per run
//! (`runs/<id>/evidence.js`) read by one page per run (`runs/<id>/cell/#decode-8k-x64`,
//! `#decode-8k-x64/r2`) that draws it in the browser (`static/cell.js`): the figures with
//! how each was computed, their uncertainty, the timeline of every request, the gauge, the
//! throughput across the window and the distributions; the figures as reported for an
//! imported cell; what decided a Looped, Over capacity or error cell; the neighbouring
//! cells and the cell's leaderboard. A page per cell would be most of a site's files and
//! bytes (54 files a run of 48 cells); the data file carries numbers rounded to what the
//! charts resolve, and texts said more than once (formulas, labels) once each.
//! A `<script>` tag loads it, so it works from `file://` as on any host.

use anyhow::Result;
use minijinja::context;
use serde::Serialize;

use super::common::{put_file, put_page, root, ser, PageContext, RenderStats};
use super::downloads::cell_detail;
use super::leaderboard_page::{board_name, board_slug};
use crate::analysis::evidence::{self, CellDetail, Distribution, Evidence};
use crate::analysis::interval::{min_requests_for_percentile, Basis, Estimate, IntervalKind};
use crate::analysis::metric::Metric;
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
        ("Prompt tok/s", s.get(Metric::PromptTps), numbers::decimal1),
        ("Total tok/s", s.get(Metric::TotalTps), numbers::decimal1),
        ("Per request tok/s", s.get(Metric::PerRequestTps), numbers::decimal1),
        ("TTFT", s.get(Metric::TtftMs), numbers::millis1),
        ("Time between tokens", s.get(Metric::TbtMs), numbers::millis1),
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

/// Texts a run's data file says more than once (formulas, methods, labels), each once: rows
/// name them by their index in `texts`.
#[derive(Default)]
struct Texts {
    list: Vec<String>,
    index: std::collections::HashMap<String, usize>,
}

impl Texts {
    fn id(&mut self, text: &str) -> usize {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        self.list.push(text.to_string());
        self.index.insert(text.to_string(), self.list.len() - 1);
        self.list.len() - 1
    }
}

/// A run's evidence file: every cell, each with every repetition.
#[derive(Serialize)]
struct RunData {
    run: String,
    title: String,
    bench_tool: String,
    tool: String,
    texts: Vec<String>,
    /// Requests a p90 and a p99 need (`min_requests_for_percentile`).
    percentile_needs: [usize; 2],
    cells: Vec<CellData>,
}

/// [figure, value, interval, method, n, covers, cv, noisy], texts by index.
type UncertaintyData = (usize, String, String, usize, u32, usize, String, bool);
/// A Looped cell's finding: [channel, period, repeated, excerpt].
type LoopData = (Option<String>, Option<u64>, Option<u64>, Option<String>);
/// A prefill request: [sent, reported prompt tokens, cached, TTFT, prompt tok/s].
type PrefillRow = (String, Option<u32>, Option<u64>, String, String);

/// One cell as the viewer shows it; `reps` in repetition order. Empty fields are left out
/// (the viewer reads a missing one as empty).
#[derive(Serialize)]
struct CellData {
    slug: String,
    name: String,
    phase: Phase,
    context: u32,
    concurrency: u32,
    status: Status,
    /// Text index.
    status_label: usize,
    /// What decided an Over capacity, Looped or error cell, in words.
    #[serde(skip_serializing_if = "String::is_empty")]
    detail: String,
    board: String,
    /// Figures the site computed from records (not as a tool reported them).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    measured: bool,
    repetitions: u32,
    /// (what, as a text index; the neighbour's index among the run's cells).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    neighbours: Vec<(usize, usize)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    uncertainty: Vec<UncertaintyData>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_figures: Vec<(String, String, String)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<(String, String)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    looped: Option<LoopData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<(Option<u16>, String)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reps: Vec<RepData>,
}

/// One repetition's evidence. Times in seconds from its first send, to the millisecond;
/// empty fields left out.
#[derive(Serialize, Default)]
struct RepData {
    rep: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    instance: Option<u32>,
    /// [figure, value, formula, numbers], texts by index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    formulas: Vec<(usize, String, usize, usize)>,
    /// A prefill cell's requests.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    prefill: Vec<PrefillRow>,
    #[serde(skip_serializing_if = "is_zero")]
    requests: usize,
    #[serde(skip_serializing_if = "is_zero")]
    lane_group: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<(f64, f64)>,
    #[serde(skip_serializing_if = "is_zero_f")]
    span: f64,
    #[serde(skip_serializing_if = "LaneColumns::is_empty")]
    lanes: LaneColumns,
    #[serde(skip_serializing_if = "GaugeColumns::is_empty")]
    gauge: GaugeColumns,
    #[serde(skip_serializing_if = "Option::is_none")]
    gauge_source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gauge_every: Option<String>,
    /// [mid-bin time, output tok/s].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    throughput: Vec<(f64, f64)>,
    /// [outcome, requests].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    outcomes: Vec<(u8, usize)>,
    /// [label, requests], labels by index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    token_sources: Vec<(usize, usize)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttft: Option<StatsData>,
    /// The first answer token's times, where streams reasoned first.
    #[serde(skip_serializing_if = "Option::is_none")]
    answer_ttft: Option<StatsData>,
    /// Conversations: [turn, requests, median prompt tokens, median TTFT], formatted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    turns: Vec<(u64, usize, String, String)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tbt: Option<StatsData>,
}

/// Every lane of the timeline as columns, in whole milliseconds: [send (after the lane
/// before's send), first token (after its send), end (after its send), outcome (0 finished,
/// 1 cancelled, 2 failed), requests]. Columns of small numbers are the evidence's largest part
/// made a third smaller (the viewer turns them back into rows).
#[derive(Serialize, Default)]
struct LaneColumns(Vec<i64>, Vec<Option<i64>>, Vec<i64>, Vec<u8>, Vec<usize>);

impl LaneColumns {
    fn of(lanes: &[evidence::Lane]) -> LaneColumns {
        let mut c = LaneColumns::default();
        let mut previous = 0;
        for l in lanes {
            let send = ms(l.send_s);
            c.0.push(send - previous);
            c.1.push(l.first_token_s.map(|f| ms(f) - send));
            c.2.push(ms(l.end_s) - send);
            c.3.push(outcome_code(l.outcome));
            c.4.push(l.requests);
            previous = send;
        }
        c
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The server's gauge as columns: [time in whole milliseconds after the sample before,
/// running, waiting], counts written as integers.
#[derive(Serialize, Default)]
struct GaugeColumns(Vec<i64>, Vec<serde_json::Number>, Vec<Option<serde_json::Number>>);

impl GaugeColumns {
    fn of(gauge: &[crate::format::GaugeSample]) -> GaugeColumns {
        let mut c = GaugeColumns::default();
        let mut previous = 0;
        for g in gauge {
            let t = ms(g.t_s);
            c.0.push(t - previous);
            c.1.push(count(g.running));
            c.2.push(g.waiting.map(count));
            previous = t;
        }
        c
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Seconds as whole milliseconds.
fn ms(s: f64) -> i64 {
    (s * 1000.0).round() as i64
}

/// A gauge reading: an integer where it is one (most are), else to a tenth.
fn count(x: f64) -> serde_json::Number {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        serde_json::Number::from(x as i64)
    } else {
        serde_json::Number::from_f64(r1(x)).unwrap_or_else(|| serde_json::Number::from(0))
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_f(x: &f64) -> bool {
    *x == 0.0
}

#[derive(Serialize)]
struct StatsData {
    count: usize,
    /// [p50, p90, p99, max] in milliseconds to a tenth, as numbers (the viewer writes them:
    /// a sixth of the evidence's bytes were these as text); a percentile the requests do
    /// not support is null, and the viewer says how many it needs (`percentile_needs`).
    q: [Option<f64>; 4],
    /// The histogram's equal-width bins as [least, most, [requests a bin]], milliseconds:
    /// the viewer works out each bin's edges (a third of the evidence's bytes were edges).
    hist: (f64, f64, Vec<usize>),
}

/// Rounded to the millisecond (of seconds) or to a tenth (of milliseconds, rates): what the
/// charts resolve, and a short number in the file.
fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

fn r1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn outcome_code(o: evidence::Outcome) -> u8 {
    match o {
        evidence::Outcome::Finished => 0,
        evidence::Outcome::Cancelled => 1,
        evidence::Outcome::Error => 2,
    }
}

/// The files a run's cells publish, as paths under the site, in the order `render_all`
/// writes them (a unit's digest reads them in order).
pub fn files(run: &RunView) -> Vec<String> {
    vec![format!("runs/{}/evidence.js", run.id)]
}

/// The site's one cell viewer (`cell/`): it reads a run and a cell from its address
/// (`cell/#RUN/decode-8k-x4`) and draws them from that run's evidence file, so that a run
/// publishes no page of its own for its cells.
pub fn render_viewer(cx: &PageContext, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
    let html = cx.env.get_template("cell.html")?.render(context! {
        root => root("../"),
        nav_pages => cx.nav_pages(),
    })?;
    put_page(sink, "cell/index.html", &html, stats)
}

/// A run's cells: the viewer page and its evidence file; `detail` is every cell file of the
/// run as loaded (each repetition's records), `None` where its cells keep nothing beyond the
/// view (`RunView::detail_hash`).
pub fn render_all(
    cx: &PageContext,
    (run, index): (&RunView, usize),
    detail: Option<&[CellDetail]>,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    // The run's title as listings give it (unique on the site): the viewer names the run by it.
    let title = cx.titles.get(index).cloned().unwrap_or_else(|| super::common::run_title(run));
    let tool = &run.manifest.bench_tool;
    let mut texts = Texts::default();
    // Each cell's repetitions, and each cell's place by slug (neighbours name it), once.
    let mut by_key: std::collections::HashMap<(Phase, u32, u32), Vec<&CellDetail>> = Default::default();
    for d in detail.into_iter().flatten() {
        by_key.entry((d.cell.phase, d.cell.context, d.cell.concurrency)).or_default().push(d);
    }
    let views: Vec<&CellView> = run.prefill.iter().chain(&run.decode).collect();
    let places: std::collections::HashMap<String, usize> =
        views.iter().enumerate().map(|(i, c)| (cell_slug(c), i)).collect();
    let cells: Vec<CellData> = views
        .iter()
        .map(|view| {
            let mut reps = by_key.remove(&(view.phase, view.context, view.concurrency)).unwrap_or_default();
            reps.sort_by_key(|d| d.cell.repetition);
            cell_data(run, view, (&reps, &places), &mut texts)
        })
        .collect();
    stats.charts += cells.iter().flat_map(|c| &c.reps).map(|r| usize::from(!r.lanes.is_empty())).sum::<usize>();
    let data = RunData {
        run: run.id.clone(),
        title: title.clone(),
        bench_tool: format!("{} v{}", tool.name, tool.version),
        tool: tool.name.clone(),
        texts: texts.list,
        percentile_needs: [90.0, 99.0].map(min_requests_for_percentile),
        cells,
    };
    let json = serde_json::to_string(&data)?;
    let dir = format!("runs/{}", run.id);
    let packed = crate::units::base91::encode(&crate::units::gzip(json.as_bytes()));
    put_file(sink, &format!("{dir}/evidence.js"), &format!("window.SPEED_MATRIX_EVIDENCE='{packed}';\n"), stats)?;
    Ok(())
}

/// `reps`: the cell's repetitions in order; `places`: every cell's index by slug.
fn cell_data(
    run: &RunView,
    view: &CellView,
    (reps, places): (&[&CellDetail], &std::collections::HashMap<String, usize>),
    texts: &mut Texts,
) -> CellData {
    let first = reps.first().map(|d| &d.cell);
    CellData {
        slug: cell_slug(view),
        name: cell_name(view),
        phase: view.phase,
        context: view.context,
        concurrency: view.concurrency,
        status: view.status,
        status_label: texts.id(super::templates::status_label(&ser(view.status).to_string())),
        detail: cell_detail(view),
        board: board_slug(BoardKey::of(view)),
        measured: view.source == FigureSource::Measured,
        repetitions: view.repetitions,
        neighbours: neighbours(run, view)
            .into_iter()
            .filter_map(|(what, l)| Some((texts.id(what), *places.get(&l.slug)?)))
            .collect(),
        uncertainty: uncertainty_rows(view)
            .into_iter()
            .map(|u| {
                (texts.id(u.figure), u.value, u.interval, texts.id(u.method), u.n, texts.id(u.covers), u.cv, u.noisy)
            })
            .collect(),
        tool_figures: tool_figures(first).into_iter().map(|t| (t.name, t.value, t.unit)).collect(),
        warnings: view.warnings.iter().map(|w| (w.code.to_string(), w.message.clone())).collect(),
        looped: view
            .loop_finding
            .as_ref()
            .map(|l| (l.channel.clone(), l.period_chars, l.repeated_chars, l.excerpt.clone())),
        error: view.error.as_ref().map(|e| (e.http_status, e.message.clone())),
        reps: reps.iter().map(|d| rep_data(view, d, texts)).collect(),
    }
}

fn rep_data(view: &CellView, d: &CellDetail, texts: &mut Texts) -> RepData {
    let cell = &d.cell;
    let e = d.evidence.as_ref();
    let formulas = formulas(view, d.figures.as_ref(), Some(cell), e)
        .into_iter()
        // The numbers too ("16 requests with a first token" recurs across cells farther
        // apart than gzip's window).
        .map(|f| (texts.id(f.figure), f.value, texts.id(f.formula), texts.id(&f.inputs)))
        .collect();
    let prefill = prefill_requests(view, Some(cell))
        .into_iter()
        .map(|r| (r.sent, r.reported_prompt, r.cached, r.ttft, r.rate))
        .collect();
    let stats = |d: &Distribution| StatsData {
        count: d.count,
        q: [Some(d.p50), d.p90, d.p99, Some(d.max)].map(|v| v.map(tenth)),
        hist: (
            d.bins.first().map_or(0.0, |b| r3(b.lo)),
            d.bins.last().map_or(0.0, |b| r3(b.hi)),
            d.bins.iter().map(|b| b.count).collect(),
        ),
    };
    let mut rep = RepData {
        rep: cell.repetition.max(1),
        instance: cell.server_instance,
        formulas,
        prefill,
        ttft: e.and_then(|e| e.ttft_ms.as_ref()).or(d.reported_ttft_ms.as_ref()).map(stats),
        answer_ttft: e.and_then(|e| e.answer_ttft_ms.as_ref()).map(stats),
        turns: e
            .map(|e| &e.turns[..])
            .unwrap_or_default()
            .iter()
            .map(|t| {
                let tokens = numbers::or_dash(t.prompt_tokens, numbers::integer);
                (t.turn, t.requests, tokens, numbers::or_dash(t.ttft_ms, numbers::millis))
            })
            .collect(),
        tbt: e.and_then(|e| e.tbt_ms.as_ref()).or(d.reported_tbt_ms.as_ref()).map(stats),
        ..RepData::default()
    };
    let Some(e) = e else { return rep };
    rep.requests = e.requests;
    rep.lane_group = e.lane_group;
    rep.window = e.window.map(|(a, b)| (r3(a), r3(b)));
    rep.span = r3(e.span_s);
    rep.lanes = LaneColumns::of(&e.lanes);
    rep.gauge = GaugeColumns::of(&e.gauge);
    rep.gauge_source = cell.measurement.as_ref().and_then(|m| m.gauge_source.clone());
    rep.gauge_every = e.gauge_every_s().map(numbers::seconds_setting);
    rep.throughput = e.throughput.iter().map(|b| (r3(b.start_s + b.seconds / 2.0), r1(b.tps))).collect();
    let o = &e.outcomes;
    rep.outcomes = [(0, o.finished), (1, o.cancelled), (2, o.error)].into_iter().filter(|(_, n)| *n > 0).collect();
    rep.token_sources = e.token_sources.iter().map(|(s, n)| (texts.id(token_source_label(*s)), *n)).collect();
    rep
}

/// A percentile where n supports it, else what n does allow: "max of 8" is the honest
/// figure for a tail 8 requests cannot reach.
/// A millisecond figure to the tenth `numbers::millis1` prints.
fn tenth(v: f64) -> f64 {
    numbers::fixed(v, 1).parse().unwrap_or(v)
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

/// How each of a repetition's figures was computed (`figures`: its own, from its records).
fn formulas(view: &CellView, figures: Option<&Figures>, cell: Option<&Cell>, e: Option<&Evidence>) -> Vec<Formula> {
    let Some(f) = figures else { return Vec::new() };
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
            rows.extend(stream_formulas(f, e));
            rows.extend(spec_formulas(f, cell));
            rows.extend(cache_formulas(f, cell));
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
            formula: "median over requests of first token (of any kind, a reasoning token included) − send",
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

/// What the streams' channels and chunks show: the answer's first token after reasoning, and
/// tokens per chunk (several a chunk: speculative decoding or MTP).
fn stream_formulas(f: &Figures, e: &Evidence) -> Vec<Formula> {
    let mut rows = Vec::new();
    if let Some(v) = f.answer_ttft_ms {
        let answered = e.answer_ttft_ms.as_ref().map_or(0, |d| d.count);
        let reasoned = e.reasoned;
        rows.push(Formula {
            figure: "Answer TTFT",
            value: numbers::millis(v),
            formula: "median over requests of first answer token (the first content after the reasoning) − send",
            inputs: format!("{answered} requests with an answer token; {reasoned} reasoned first"),
        });
    }
    if let Some(v) = f.tokens_per_chunk {
        let (tokens, chunks) = e.usage_tokens_chunks;
        rows.push(Formula {
            figure: "Tokens per chunk",
            value: format!("{v:.2}"),
            formula: "output tokens / the chunks that carried them (tokens from the server's usage)",
            inputs: format!("{} tokens / {} chunks", numbers::integer(tokens as f64), numbers::integer(chunks as f64)),
        });
    }
    rows
}

/// The prompt tokens the server served from its prefix cache: of first turns (what a
/// `--prefix-reuse` plan is checked against) and, in conversations, of later turns.
fn cache_formulas(f: &Figures, cell: &Cell) -> Vec<Formula> {
    let Some(m) = cell.measurement.as_ref() else { return Vec::new() };
    let conversation = m.requests.iter().any(|r| r.turn >= 2);
    let of_usage = |(cached, prompt, inside): (u64, u64, bool), which: &str| {
        format!(
            "{} / {} tokens of the {which}requests sent {}",
            numbers::integer(cached as f64),
            numbers::integer(prompt as f64),
            if inside { "inside the window" } else { "for the cell" }
        )
    };
    let mut rows = Vec::new();
    if let Some(v) = f.cached_prompt_pct {
        let first = if conversation { "first-turn " } else { "" };
        let (formula, inputs) = match (m.cached_prompt_tokens(|turn| turn <= 1), &m.prefix_cache) {
            (Some(t), _) => {
                ("cached prompt tokens / prompt tokens, as the requests' usage reports them", of_usage(t, first))
            }
            (None, Some(p)) => (
                "prefix-cache hits / prompt tokens looked up (the server's counters, across the window)",
                format!("{} / {}", numbers::integer(p.hits), numbers::integer(p.queries)),
            ),
            (None, None) => return rows,
        };
        let figure = if conversation { "Cached prompt tokens, first turns" } else { "Cached prompt tokens" };
        rows.push(Formula { figure, value: format!("{v:.1}%"), formula, inputs });
    }
    if let (Some(v), Some(t)) = (f.next_turn_cached_pct, m.cached_prompt_tokens(|turn| turn >= 2)) {
        rows.push(Formula {
            figure: "Cached prompt tokens, later turns",
            value: format!("{v:.1}%"),
            formula: "cached prompt tokens / prompt tokens of turns 2 on (each carries its conversation so far)",
            inputs: of_usage(t, "later-turn "),
        });
    }
    rows
}

/// The server's speculative-decoding counters over the window.
fn spec_formulas(f: &Figures, cell: &Cell) -> Vec<Formula> {
    let Some(m) = cell.measurement.as_ref() else { return Vec::new() };
    let Some(s) = m.spec_decode.as_ref() else { return spec_gauge_formulas(f, m) };
    let mut rows = Vec::new();
    if let Some(v) = f.spec_acceptance {
        rows.push(Formula {
            figure: "Draft acceptance",
            value: format!("{:.1}%", v * 100.0),
            formula: "accepted draft tokens / proposed draft tokens (the server's counters, across the window)",
            inputs: format!("{} / {}", numbers::integer(s.accepted_tokens), numbers::integer(s.draft_tokens)),
        });
    }
    if let Some(v) = f.spec_accepted_len {
        rows.push(Formula {
            figure: "Mean accepted length",
            value: format!("{v:.2}"),
            formula: "1 + accepted draft tokens / drafts: tokens each verifying step yields",
            inputs: format!("1 + {} / {}", numbers::integer(s.accepted_tokens), numbers::integer(s.drafts)),
        });
    }
    rows
}

/// SGLang's speculative-decoding gauges, read as the window closed.
fn spec_gauge_formulas(f: &Figures, m: &crate::format::Measurement) -> Vec<Formula> {
    if m.spec_decode_gauges.is_none() {
        return Vec::new();
    }
    let gauge = "the server's gauge as the window closed (sglang:spec_accept_rate / spec_accept_length: an average over its most recent batches, not the whole window)";
    let rate = f.spec_acceptance.map(|v| Formula {
        figure: "Draft acceptance",
        value: format!("{:.1}%", v * 100.0),
        formula: gauge,
        inputs: "sglang:spec_accept_rate".into(),
    });
    let length = f.spec_accepted_len.map(|v| Formula {
        figure: "Mean accepted length",
        value: format!("{v:.2}"),
        formula: gauge,
        inputs: "sglang:spec_accept_length".into(),
    });
    rate.into_iter().chain(length).collect()
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

struct PrefillRequest {
    sent: String,
    ttft: String,
    reported_prompt: Option<u32>,
    cached: Option<u64>,
    rate: String,
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

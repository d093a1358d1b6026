//! Leaderboards: `leaderboards/index.html` (every board), and one page per decode cell key
//! (`leaderboards/8k-x64/`) and prefill context (`leaderboards/prefill-8k/`), ranked rows
//! first, cells that were not valid listed apart, the whole board as `board.csv.gz` (figures to six significant digits; gzipped
//! because a board of every run grows with the site).

use std::collections::BTreeMap;

use anyhow::Result;
use minijinja::context;
use rayon::prelude::*;
use serde::Serialize;

use super::cached::{render_pages, CachedPages, Unit};
use super::common::{put_bytes, put_page, root, ser, serde_name, PageContext, RenderStats};
use super::downloads::{significant, CsvWriter};
use crate::analysis::metric::Metric;
use crate::analysis::run_noise::{NoiseBasis, RunNoise};
use crate::analysis::{BoardKey, Leaderboard, RunView, SiteModel};
use crate::units::numbers::{self, context_label, context_slug};
use crate::units::{gzip, InputHash};
use crate::write::Sink;

/// Ranked rows a board's page shows; the rest are in its CSV.
pub const BOARD_ROWS: usize = 100;

/// The board's folder name under `leaderboards/`.
pub fn board_slug(key: BoardKey) -> String {
    match key {
        BoardKey::Decode { context, concurrency, workload: w } => {
            let reuse = w.prefix_reuse_pct.map(|p| format!("-reuse{p}")).unwrap_or_default();
            let turns = w.turns.map(|t| format!("-turns{t}")).unwrap_or_default();
            format!("{}-x{concurrency}{reuse}{turns}", context_slug(context))
        }
        BoardKey::Prefill { context } => format!("prefill-{}", context_slug(context)),
    }
}

/// `8K × 64` or `Prefill 8K`.
pub fn board_name(key: BoardKey) -> String {
    match key {
        BoardKey::Decode { context, concurrency, workload: w } => {
            let reuse = w.prefix_reuse_pct.map(|p| format!(" · {p}% prefix reuse")).unwrap_or_default();
            let turns = w.turns.map(|t| format!(" · {t}-turn conversations")).unwrap_or_default();
            format!("{} × {concurrency}{reuse}{turns}", context_label(context))
        }
        BoardKey::Prefill { context } => format!("Prefill {}", context_label(context)),
    }
}

#[derive(Debug, Serialize)]
struct Row<'a> {
    rank: usize,
    shared: bool,
    id: &'a str,
    title: &'a str,
    device: &'a str,
    count: u32,
    engine: String,
    /// The benchmark tool that measured it, with its version.
    tool: String,
    score: f64,
    tps_per_device: f64,
    per_request_tps: Option<f64>,
    ttft_ms: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Apart<'a> {
    id: &'a str,
    title: &'a str,
    status: crate::format::Status,
}

#[derive(Debug, Serialize)]
struct BoardLink {
    slug: String,
    name: String,
    context: u32,
    concurrency: Option<u32>,
    /// A decode board of another workload (prefix reuse, conversations): listed apart from
    /// the grid.
    apart: bool,
    ranked: usize,
}

/// The engine, its quantization, and speculative decoding where the server said it was on
/// (a setting that changes every figure: marked on the board).
fn engine_text(run: &RunView) -> String {
    let e = &run.manifest.engine;
    let spec = run.manifest.server_settings.contains_key(crate::format::SPECULATIVE_SETTING);
    let mark = if spec { " · speculative decoding" } else { "" };
    match &e.quantization {
        Some(q) => format!("{} {} · {q}{mark}", e.name, e.version),
        None => format!("{} {}{mark}", e.name, e.version),
    }
}

/// Every board (kept where its rows did not change; see `cached`) and the boards' index;
/// returns each board's input hash by folder. `frame` hashes what frames every page
/// (`ListingCache::frame`).
pub fn render_all(
    cx: &PageContext,
    site: &SiteModel,
    previous: &BTreeMap<String, u64>,
    frame: u64,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<BTreeMap<String, u64>> {
    let listed = (0..site.runs.len()).into_par_iter().map(|i| listed_run_hash(cx, &site.runs[i], i)).collect();
    let hashes = render_pages(&Boards { cx, site, listed, frame }, previous, sink, stats)?;
    let links: Vec<BoardLink> = site
        .leaderboards
        .iter()
        .map(|b| {
            let (context, concurrency, apart) = match b.key {
                BoardKey::Decode { context, concurrency, workload } => {
                    (context, Some(concurrency), !workload.is_plain())
                }
                BoardKey::Prefill { context } => (context, None, false),
            };
            let (slug, name, ranked) = (board_slug(b.key), board_name(b.key), b.ranked.len());
            BoardLink { slug, name, context, concurrency, apart, ranked }
        })
        .collect();
    let grid = || links.iter().filter(|l| !l.apart);
    let mut columns: Vec<u32> = grid().filter_map(|l| l.concurrency).collect();
    columns.sort_unstable();
    columns.dedup();
    let mut contexts: Vec<u32> = grid().filter(|l| l.concurrency.is_some()).map(|l| l.context).collect();
    contexts.sort_unstable();
    contexts.dedup();
    let html = cx.env.get_template("leaderboards.html")?.render(context! {
        root => root("../"),
        nav_pages => cx.nav_pages(),
        boards => ser(&links),
        columns => columns,
        contexts => contexts,
    })?;
    put_page(sink, "leaderboards/index.html", &html, stats)?;
    Ok(hashes)
}

/// The boards' pages, a unit each.
struct Boards<'a> {
    cx: &'a PageContext<'a>,
    site: &'a SiteModel,
    /// Each run's `listed_run_hash`.
    listed: Vec<u64>,
    frame: u64,
}

impl CachedPages for Boards<'_> {
    fn units(&self) -> Vec<Unit<'_>> {
        let unit = |b: &Leaderboard| {
            let dir = format!("leaderboards/{}", board_slug(b.key));
            let files = vec![format!("{dir}/board.csv.gz"), format!("{dir}/index.html")];
            Unit::page(
                dir,
                board_hash(b, &self.listed, self.frame, &places_noise(&self.site.board_noise, b.key)),
                files,
            )
        };
        self.site.leaderboards.par_iter().map(unit).collect()
    }

    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        render_board(self.cx, self.site, &self.site.leaderboards[i], sink, stats)
    }
}

/// What a board row shows of a run besides its figures.
fn listed_run_hash(cx: &PageContext, run: &RunView, index: usize) -> u64 {
    let mut h = InputHash::default();
    let (hw, tool) = (&run.manifest.hardware, &run.manifest.bench_tool);
    let engine = &run.manifest.engine;
    h.piece(run.id.as_bytes()).piece(cx.titles[index].as_bytes()).piece(hw.device.as_bytes());
    h.u64(hw.count as u64).piece(engine.name.as_bytes()).piece(engine.version.as_bytes());
    let quantization = engine.quantization.as_deref();
    h.u64(quantization.is_some() as u64).piece(quantization.unwrap_or("").as_bytes());
    h.piece(tool.name.as_bytes()).piece(tool.version.as_bytes());
    h.finish()
}

/// Everything a board's page and CSV are made from: its rows (hashed from the figures'
/// bits, not their text: a site of 10,000 runs has half a million rows) and the page frame.
fn board_hash(board: &Leaderboard, listed: &[u64], frame: u64, noise: &str) -> u64 {
    let mut h = InputHash::default();
    h.json(&board.key).piece(noise.as_bytes());
    let bits = |v: Option<f64>| v.map_or(u64::MAX, f64::to_bits);
    for e in &board.ranked {
        h.u64(listed[e.run])
            .u64(e.rank as u64)
            .u64(e.shared as u64)
            .u64(bits(Some(e.score)))
            .u64(bits(Some(e.tps_per_device)));
        h.u64(bits(e.per_request_tps)).u64(bits(e.ttft_ms));
    }
    h.u64(board.ranked.len() as u64);
    for u in &board.unranked {
        h.u64(listed[u.run]).u64(u.status as u64);
    }
    h.u64(board.unranked.len() as u64).u64(frame);
    h.finish()
}

fn render_board(
    cx: &PageContext,
    site: &SiteModel,
    board: &Leaderboard,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let rows: Vec<Row> = board
        .ranked
        .iter()
        .map(|e| {
            let run = &site.runs[e.run];
            Row {
                rank: e.rank,
                shared: e.shared,
                id: &run.id,
                title: &cx.titles[e.run],
                device: &run.manifest.hardware.device,
                count: run.manifest.hardware.count,
                engine: engine_text(run),
                tool: format!("{} {}", run.manifest.bench_tool.name, run.manifest.bench_tool.version),
                // Six digits: what the page sorts by and the CSV keeps, no float noise.
                score: significant(e.score),
                tps_per_device: significant(e.tps_per_device),
                per_request_tps: e.per_request_tps.map(significant),
                ttft_ms: e.ttft_ms.map(significant),
            }
        })
        .collect();
    let apart: Vec<Apart> = board
        .unranked
        .iter()
        .map(|u| Apart { id: &site.runs[u.run].id, title: &cx.titles[u.run], status: u.status })
        .collect();
    let slug = board_slug(board.key);
    let dir = format!("leaderboards/{slug}");
    put_bytes(sink, &format!("{dir}/board.csv.gz"), &gzip(board_csv(board.key, &rows, &apart).as_bytes()), stats)?;
    let html = cx.env.get_template("leaderboard.html")?.render(context! {
        root => root("../../"),
        nav_pages => cx.nav_pages(),
        name => board_name(board.key),
        prefill => matches!(board.key, BoardKey::Prefill { .. }),
        context_tokens => numbers::integer(match board.key {
            BoardKey::Decode { context, .. } | BoardKey::Prefill { context } => context as f64,
        }),
        ranked_total => rows.len(),
        places_noise => places_noise(&site.board_noise, board.key),
        rows => ser(&rows[..rows.len().min(BOARD_ROWS)]),
        apart => ser(&apart[..apart.len().min(BOARD_ROWS)]),
        apart_total => apart.len(),
    })?;
    put_page(sink, &format!("{dir}/index.html"), &html, stats)
}

/// Which run-to-run noise a board's places allow for, in one sentence.
fn places_noise(n: &RunNoise, key: BoardKey) -> String {
    let metric = match key {
        BoardKey::Prefill { .. } => Metric::PromptTps,
        BoardKey::Decode { .. } => Metric::TotalTps,
    };
    let pct = numbers::decimal1(n.of(metric).map_or(n.assumed_pct, |f| f.pct));
    match n.basis {
        NoiseBasis::Assumed => format!(
            "Run-to-run noise (one run's level against another's) is assumed {pct}% (change_noise_pct in site.toml): no configuration here is measured more than once."
        ),
        _ => format!(
            "Run-to-run noise (one run's level against another's) is {pct}%, from {} runs of {} configurations measured more than once.",
            n.runs, n.configurations
        ),
    }
}

fn board_csv(key: BoardKey, rows: &[Row], apart: &[Apart]) -> String {
    let score = match key {
        BoardKey::Decode { .. } => "total_tps",
        BoardKey::Prefill { .. } => "prompt_tps",
    };
    let mut w = CsvWriter::new(&[
        "rank",
        "run_id",
        "status",
        "device",
        "count",
        "engine",
        score,
        "tps_per_device",
        "per_request_tps",
        "ttft_ms",
    ]);
    let num = |x: f64| x.to_string();
    let opt = |v: Option<f64>| v.map(num).unwrap_or_default();
    for r in rows {
        w.row(vec![
            r.rank.to_string(),
            r.id.into(),
            "valid".into(),
            r.device.into(),
            r.count.to_string(),
            r.engine.clone(),
            num(r.score),
            num(r.tps_per_device),
            opt(r.per_request_tps),
            opt(r.ttft_ms),
        ]);
    }
    for a in apart {
        w.row(vec![String::new(), a.id.into(), serde_name(a.status)]);
    }
    w.finish()
}

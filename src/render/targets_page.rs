//! Capacity at the reader's targets: the run page's "At your targets" table and
//! interactivity summary (made here, shown by `run_page`), one board per SLO and context
//! (`targets/chat-8k/`: runs by capacity per device, with cost where priced) and the boards'
//! index (`targets/index.html`).

use std::collections::BTreeMap;

use anyhow::Result;
use minijinja::context;
use rayon::prelude::*;
use serde::Serialize;

use super::cached::{render_pages, CachedPages, Unit};
use super::common::{put_bytes, put_page, root, ser, PageContext, RenderStats};
use super::downloads::{significant, CsvWriter};
use super::leaderboard_page::BOARD_ROWS;
use crate::analysis::capacity::{Miss, RunCapacity, TargetBoard};
use crate::analysis::rates::RateCapacity;
use crate::analysis::SiteModel;
use crate::format::SiteSettings;
use crate::units::gzip;
use crate::units::numbers::{self, context_label, context_slug};
use crate::units::InputHash;
use crate::write::Sink;

/// An SLO as the pages name and explain it.
#[derive(Debug, Clone, Serialize)]
pub struct SloView {
    pub name: String,
    pub description: String,
    /// `≥ 20 tok/s per user (time between tokens ≤ 50 ms) at the median request; TTFT ≤ 2,000 ms`.
    pub rule: String,
}

pub fn slo_views(settings: &SiteSettings) -> Vec<SloView> {
    settings
        .slos()
        .into_iter()
        .map(|(name, s)| {
            let at = match s.percentile {
                50 => "the median request".to_string(),
                p => format!("p{p} (the slowest request in {})", if p == 90 { "ten" } else { "a hundred" }),
            };
            let mut rule = format!(
                "≥ {} tok/s per user (time between tokens ≤ {}) at {at}",
                numbers::setting(s.min_tps_per_user),
                numbers::millis1(1000.0 / s.min_tps_per_user)
            );
            if let Some(t) = s.max_ttft_ms {
                rule.push_str(&format!("; TTFT in decode cells ≤ {}", numbers::millis(t)));
            }
            if let Some(t) = s.max_prefill_ttft_ms {
                rule.push_str(&format!("; a fresh prompt's TTFT ≤ {}", numbers::millis(t)));
            }
            SloView { name: name.to_string(), description: s.description.clone(), rule }
        })
        .collect()
}

/// Why no cell met an SLO, in words.
pub fn miss_text(m: Option<&Miss>) -> String {
    match m {
        None | Some(Miss::NotValid | Miss::NoValidCell) => "no valid cell".into(),
        Some(Miss::NoThroughput { meeting }) => format!(
            "{meeting} {} the objective but none reports a total tok/s",
            if *meeting == 1 { "cell meets" } else { "cells meet" }
        ),
        Some(Miss::NoPercentile { percentile, needs }) => {
            format!("no p{percentile} figure (it needs {needs} requests a cell, or the source reported none)")
        }
        Some(Miss::TooSlow { tbt_ms, bound_ms }) => format!(
            "even the least loaded cell is too slow: {} between tokens, {} allowed",
            numbers::millis1(*tbt_ms),
            numbers::millis1(*bound_ms)
        ),
        Some(Miss::TtftTooLong { ttft_ms, bound_ms }) => format!(
            "even the least loaded cell's TTFT is {}, {} allowed",
            numbers::millis(*ttft_ms),
            numbers::millis(*bound_ms)
        ),
        Some(Miss::PrefillTooLong { ttft_ms: Some(t), bound_ms }) => {
            format!("a fresh prompt's TTFT is {}, {} allowed", numbers::millis(*t), numbers::millis(*bound_ms))
        }
        Some(Miss::PrefillTooLong { ttft_ms: None, .. }) => "no prefill measured at this context".into(),
        Some(Miss::IntervalCrosses { bound_ms }) => {
            format!("the interval across repetitions reaches past {}", numbers::millis1(*bound_ms))
        }
    }
}

/// One context × SLO of a run page's table.
#[derive(Debug, Serialize)]
struct TargetCell {
    /// The board's folder under `targets/` (`target_slug`).
    board: String,
    concurrency: Option<u32>,
    total_tps: Option<f64>,
    tps_per_device: Option<f64>,
    usd_per_mtok: Option<f64>,
    repetitions: u32,
    why: Option<String>,
}

#[derive(Debug, Serialize)]
struct TargetRow {
    context: u32,
    cells: Vec<TargetCell>,
    /// Tok/s per device at each interactivity level: (value, interpolated).
    levels: Vec<(Option<f64>, bool)>,
}

/// The run page's "At your targets" section as template values, for the contexts the page
/// shows (a folded run page shows an even selection of them, as its heatmap does).
pub fn run_targets(capacity: &RunCapacity, settings: &SiteSettings, shown: &[u32]) -> minijinja::Value {
    let rows: Vec<TargetRow> = capacity
        .contexts
        .iter()
        .filter(|c| shown.contains(&c.context))
        .map(|c| TargetRow {
            context: c.context,
            cells: c
                .slos
                .iter()
                .map(|s| match &s.point {
                    Some(p) => TargetCell {
                        board: target_slug(&s.slo, c.context),
                        concurrency: Some(p.concurrency),
                        total_tps: Some(p.total_tps),
                        tps_per_device: Some(p.tps_per_device),
                        usd_per_mtok: p.usd_per_mtok,
                        repetitions: p.repetitions,
                        why: None,
                    },
                    None => TargetCell {
                        board: target_slug(&s.slo, c.context),
                        concurrency: None,
                        total_tps: None,
                        tps_per_device: None,
                        usd_per_mtok: None,
                        repetitions: 0,
                        why: Some(miss_text(s.miss.as_ref())),
                    },
                })
                .collect(),
            levels: c.levels.iter().map(|l| (l.tps_per_device, l.interpolated)).collect(),
        })
        .collect();
    ser(serde_json::json!({
        "slos": slo_views(settings),
        "rows": rows,
        "levels": settings.interactivity,
        "priced": settings.price_known(),
    }))
}

/// A target board's folder under `targets/`: `<slo>-<ctx>` (a leaderboard's is `leaderboard_page::board_slug`).
pub fn target_slug(slo: &str, context: u32) -> String {
    format!("{slo}-{}", context_slug(context))
}

/// Who a board's row is: its place and run, as both of a board's tables show them.
#[derive(Debug, Serialize)]
struct BoardRun<'a> {
    place: usize,
    id: &'a str,
    title: &'a str,
    device: &'a str,
    count: u32,
    engine: String,
}

impl<'a> BoardRun<'a> {
    fn of(cx: &'a PageContext, site: &'a SiteModel, place: usize, run: usize) -> BoardRun<'a> {
        let (m, title) = (&site.runs[run].manifest, &cx.titles[run]);
        BoardRun {
            place,
            id: &site.runs[run].id,
            title,
            device: &m.hardware.device,
            count: m.hardware.count,
            engine: format!("{} {}", m.engine.name, m.engine.version),
        }
    }
}

/// A rate run on a board: its capacity in requests/s at the objective.
#[derive(Serialize)]
struct RateRow<'a> {
    #[serde(flatten)]
    run: BoardRun<'a>,
    rps: f64,
    capacity: String,
}

#[derive(Debug, Serialize)]
struct BoardRow<'a> {
    #[serde(flatten)]
    run: BoardRun<'a>,
    concurrency: u32,
    total_tps: f64,
    tps_per_device: f64,
    usd_per_mtok: Option<f64>,
    repetitions: u32,
}

fn board_hash(cx: &PageContext, site: &SiteModel, b: &TargetBoard, frame: u64) -> u64 {
    let mut h = InputHash::default();
    h.piece(b.slo.as_bytes()).u64(b.context as u64).json(&b.entries).json(&b.rates).u64(frame);
    for &r in b.entries.iter().map(|e| &e.run).chain(&b.none).chain(b.rates.iter().map(|e| &e.run)) {
        let run = &site.runs[r];
        let e = &run.manifest.engine;
        h.piece(run.id.as_bytes()).piece(cx.titles[r].as_bytes()).piece(e.name.as_bytes()).piece(e.version.as_bytes());
        h.piece(run.manifest.hardware.device.as_bytes()).u64(run.manifest.hardware.count as u64);
    }
    h.u64(b.none.len() as u64);
    h.finish()
}

/// The capacity boards' pages, a unit each.
struct TargetBoards<'a> {
    cx: &'a PageContext<'a>,
    site: &'a SiteModel,
    settings: &'a SiteSettings,
    slos: &'a [SloView],
    frame: u64,
}

impl CachedPages for TargetBoards<'_> {
    fn units(&self) -> Vec<Unit<'_>> {
        let unit = |b: &TargetBoard| {
            let dir = format!("targets/{}", target_slug(&b.slo, b.context));
            let files = vec![format!("{dir}/index.html"), format!("{dir}/runs.csv.gz")];
            Unit::page(dir, board_hash(self.cx, self.site, b, self.frame), files)
        };
        self.site.targets.par_iter().map(unit).collect()
    }

    fn render_one(&self, i: usize, sink: &dyn Sink, stats: &mut RenderStats) -> Result<()> {
        let b = &self.site.targets[i];
        let slo = self.slos.iter().find(|s| s.name == b.slo);
        render_board(self.cx, self.site, b, slo, self.settings, sink, stats)
    }
}

/// Every board (kept where its rows did not change) and their index; returns the boards'
/// input hashes by folder.
pub fn render_all(
    cx: &PageContext,
    site: &SiteModel,
    settings: &SiteSettings,
    previous: &BTreeMap<String, u64>,
    frame: u64,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<BTreeMap<String, u64>> {
    let slos = slo_views(settings);
    let boards = TargetBoards { cx, site, settings, slos: &slos, frame };
    let hashes = render_pages(&boards, previous, sink, stats)?;
    let links: Vec<(String, String, u32, usize)> = site
        .targets
        .iter()
        .map(|b| {
            (
                target_slug(&b.slo, b.context),
                b.slo.clone(),
                b.context,
                b.entries.len() + b.rates.iter().filter(|r| !matches!(r.capacity, RateCapacity::Below(_))).count(),
            )
        })
        .collect();
    let html = cx.env.get_template("targets.html")?.render(context! {
        root => root("../"),
        nav_pages => cx.nav_pages(),
        slos => ser(&slos),
        boards => ser(&links),
    })?;
    put_page(sink, "targets/index.html", &html, stats)?;
    Ok(hashes)
}

fn render_board(
    cx: &PageContext,
    site: &SiteModel,
    b: &TargetBoard,
    slo: Option<&SloView>,
    settings: &SiteSettings,
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let rows: Vec<BoardRow> = b
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| BoardRow {
            run: BoardRun::of(cx, site, i + 1, e.run),
            concurrency: e.point.concurrency,
            // Six digits: what the page sorts by and the CSV keeps, no float noise.
            total_tps: significant(e.point.total_tps),
            tps_per_device: significant(e.point.tps_per_device),
            usd_per_mtok: e.point.usd_per_mtok.map(significant),
            repetitions: e.point.repetitions,
        })
        .collect();
    let unmet: Vec<(&str, &str)> = b.none.iter().map(|&r| (site.runs[r].id.as_str(), cx.titles[r].as_str())).collect();
    let rate_rows: Vec<RateRow> = b
        .rates
        .iter()
        .take(BOARD_ROWS)
        .enumerate()
        .map(|(i, e)| RateRow {
            run: BoardRun::of(cx, site, i + 1, e.run),
            rps: significant(e.capacity.rps()),
            capacity: super::common::rate_capacity_text(e.capacity),
        })
        .collect();
    let dir = format!("targets/{}", target_slug(&b.slo, b.context));
    put_bytes(sink, &format!("{dir}/runs.csv.gz"), &gzip(target_csv(&rows, &unmet).as_bytes()), stats)?;
    let html = cx.env.get_template("target.html")?.render(context! {
        root => root("../../"),
        nav_pages => cx.nav_pages(),
        slo => ser(slo),
        context_label => context_label(b.context),
        rows => ser(&rows[..rows.len().min(BOARD_ROWS)]),
        rows_total => rows.len(),
        unmet => ser(&unmet[..unmet.len().min(BOARD_ROWS)]),
        unmet_total => unmet.len(),
        rate_rows => ser(&rate_rows),
        rate_total => b.rates.len(),
        priced => settings.price_known(),
    })?;
    put_page(sink, &format!("{dir}/index.html"), &html, stats)
}

/// Every run of a target's board, the ones its page leaves out included: a page shows the
/// best `BOARD_ROWS` so that it stays within a page's weight at any number of runs.
fn target_csv(rows: &[BoardRow], unmet: &[(&str, &str)]) -> String {
    let mut w = CsvWriter::new(&[
        "place",
        "run_id",
        "device",
        "count",
        "engine",
        "concurrency",
        "tps_per_device",
        "total_tps",
        "usd_per_mtok",
        "repetitions",
    ]);
    for r in rows {
        w.row(vec![
            r.run.place.to_string(),
            r.run.id.into(),
            r.run.device.into(),
            r.run.count.to_string(),
            r.run.engine.clone(),
            r.concurrency.to_string(),
            r.tps_per_device.to_string(),
            r.total_tps.to_string(),
            r.usd_per_mtok.map(|u| u.to_string()).unwrap_or_default(),
            r.repetitions.to_string(),
        ]);
    }
    for (id, _) in unmet {
        w.row(vec![String::new(), id.to_string()]);
    }
    w.finish()
}

/// One SLO's best configuration on the front page.
#[derive(Debug, Serialize)]
struct BestView<'a> {
    slo: &'a str,
    id: &'a str,
    title: &'a str,
    hardware: String,
    engine: String,
    concurrency: u32,
    tps_per_device: f64,
    usd_per_mtok: Option<f64>,
    repetitions: u32,
}

#[derive(Debug, Serialize)]
struct ModelBestView<'a> {
    name: &'a str,
    slug: &'a str,
    context: u32,
    runs_at_context: usize,
    /// (SLO, its best, if any run meets it).
    slos: Vec<(&'a str, Option<BestView<'a>>)>,
}

/// The front page's answer, per model: the best configuration at each SLO.
pub fn front_page(cx: &PageContext, site: &SiteModel, settings: &SiteSettings) -> minijinja::Value {
    let models: Vec<ModelBestView> = site
        .best
        .iter()
        .map(|b| {
            let g = &site.models[b.model];
            ModelBestView {
                name: &g.name,
                slug: &g.slug,
                context: b.context,
                runs_at_context: b.runs_at_context,
                slos: b
                    .slos
                    .iter()
                    .map(|(slo, best)| {
                        let view = best.as_ref().map(|e| {
                            let run = &site.runs[e.run];
                            let m = &run.manifest;
                            BestView {
                                slo,
                                id: &run.id,
                                title: &cx.titles[e.run],
                                hardware: format!("{} ×{}", m.hardware.device, m.hardware.count),
                                engine: format!("{} {}", m.engine.name, m.engine.version),
                                concurrency: e.point.concurrency,
                                tps_per_device: e.point.tps_per_device,
                                usd_per_mtok: e.point.usd_per_mtok,
                                repetitions: e.point.repetitions,
                            }
                        });
                        (slo.as_str(), view)
                    })
                    .collect(),
            }
        })
        .collect();
    ser(serde_json::json!({
        "slos": slo_views(settings),
        "models": models,
        "priced": settings.price_known(),
    }))
}

//! What every page kind shares: run titles and labels, the navigation and comparison
//! links, the state names pages print, template values, and counting what was written.

use anyhow::Result;
use minijinja::value::{Serde, Value};
use minijinja::Environment;
use serde::Serialize;

use crate::analysis::compare::CellState;
use crate::analysis::{Comparison, RunView};
use crate::format::{Origin, PageSource};
use crate::units::numbers;
use crate::write::Sink;

/// Counts of what was rendered, for the build summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct RenderStats {
    pub pages: usize,
    pub run_pages: usize,
    pub charts: usize,
    pub files: usize,
    /// Run pages kept from the previous build (their inputs did not change).
    pub reused_run_pages: usize,
    /// Run pages made from the previous build's with new places on the leaderboards (all
    /// else the same).
    pub patched_run_pages: usize,
}

impl RenderStats {
    pub fn add(&mut self, other: &RenderStats) {
        self.pages += other.pages;
        self.run_pages += other.run_pages;
        self.charts += other.charts;
        self.files += other.files;
        self.reused_run_pages += other.reused_run_pages;
        self.patched_run_pages += other.patched_run_pages;
    }
}

/// A Markdown page in the navigation bar.
#[derive(Debug, Clone, Serialize)]
pub struct NavLink {
    pub slug: String,
    pub title: String,
}

/// A published comparison as run and index pages link to it.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonLink {
    pub slug: String,
    pub a_id: String,
    pub b_id: String,
    pub a_title: String,
    pub b_title: String,
}

/// What every page of one build renders with.
pub struct PageContext<'a> {
    pub env: &'a Environment<'static>,
    pub nav: Vec<NavLink>,
    /// `nav` as a template value, made once for the half a million pages of a large site.
    nav_value: Value,
    /// A hash of `nav`, which every page shows (for the build cache).
    pub nav_hash: u64,
    pub comparisons: Vec<ComparisonLink>,
    /// `listing_titles` of the site's runs, by run index.
    pub titles: Vec<String>,
    /// Each run's place when all are listed newest first (see `newest_first`), by run index:
    /// a listing of any subset sorts by it instead of comparing dates again.
    pub newest_first: Vec<u32>,
    /// By run index: the other runs (index, id) of its exact configuration its page names
    /// (the nearest `SIBLINGS_NAMED`), and how many there are in all.
    pub siblings: Vec<(Vec<(usize, String)>, usize)>,
    /// By run index: whether the run publishes its cells' evidence (`[publish] evidence_days`).
    pub evidence: Vec<bool>,
    /// By run index: the prefix-reuse session the run is a level of.
    pub reuse: Vec<Option<crate::analysis::reuse::ReuseSession>>,
    /// Each run's capacity as listings show it, by run index.
    pub capacity: Vec<CapacitySummary>,
    /// The site's settings (SLOs, levels, prices), for pages that compute at the targets.
    pub settings: crate::format::SiteSettings,
}

/// By run: whether it publishes its evidence: every run, or with `days` those that started
/// at most `days` days before the newest run (measured from the newest run, not the clock:
/// the same data builds the same site any day). An undated run keeps its evidence.
fn with_evidence(runs: &[RunView], days: Option<u32>) -> Vec<bool> {
    let Some(days) = days else { return vec![true; runs.len()] };
    let date = |r: &RunView| r.date.as_deref().and_then(|d| d.get(..10)?.parse::<jiff::civil::Date>().ok());
    let Some(newest) = runs.iter().filter_map(date).max() else { return vec![true; runs.len()] };
    runs.iter()
        .map(|r| {
            date(r).is_none_or(|d| d.until(newest).map_or(true, |span| i64::from(span.get_days()) <= i64::from(days)))
        })
        .collect()
}

/// A status, verdict, basis or trend by its serde name (`over_capacity`), as downloads
/// write it; empty for a value that is not a plain name.
pub fn serde_name<T: Serialize>(value: T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

/// Other runs of its configuration a run's page names: repetitions nearest it.
pub const SIBLINGS_NAMED: usize = 8;

impl PageContext<'_> {
    /// The context of every page of `site`: made once, from the analysed model alone.
    pub fn new<'a>(
        env: &'a Environment<'static>,
        pages: &[PageSource],
        site: &crate::analysis::SiteModel,
        comparisons: &[Comparison],
        settings: &crate::format::SiteSettings,
    ) -> PageContext<'a> {
        let runs = &site.runs;
        let nav = pages
            .iter()
            .map(|p| NavLink {
                slug: p.slug.clone(),
                title: super::markdown::first_heading(&p.markdown).unwrap_or_else(|| p.slug.clone()),
            })
            .collect();
        let titles = listing_titles(runs);
        let newest_first = newest_first_places(runs);
        let title = |id: &str| runs.iter().position(|r| r.id == id).map(|i| titles[i].clone()).unwrap_or_default();
        let comparisons = comparisons
            .iter()
            .map(|c| ComparisonLink {
                slug: c.slug.clone(),
                a_id: c.a_id.clone(),
                b_id: c.b_id.clone(),
                a_title: title(&c.a_id),
                b_title: title(&c.b_id),
            })
            .collect();
        let nav_hash = crate::units::InputHash::default().json(&nav).finish();
        let nav_value = ser(&nav);
        let siblings = (0..runs.len())
            .map(|i| {
                let near =
                    site.siblings.nearest(i, SIBLINGS_NAMED).into_iter().map(|j| (j, runs[j].id.clone())).collect();
                (near, site.siblings.others(i))
            })
            .collect();
        PageContext {
            env,
            nav,
            nav_value,
            nav_hash,
            comparisons,
            titles,
            newest_first,
            siblings,
            evidence: with_evidence(runs, settings.publish.evidence_days),
            reuse: site.reuse.clone(),
            capacity: site.capacity.iter().map(capacity_summary).collect(),
            settings: settings.clone(),
        }
    }

    /// Run `i`'s capacity as listings show it.
    pub fn capacity_of(&self, i: usize) -> CapacitySummary {
        self.capacity.get(i).copied().unwrap_or_default()
    }

    /// The navigation's Markdown pages, for a page's `nav_pages`.
    pub fn nav_pages(&self) -> Value {
        self.nav_value.clone()
    }
}

/// `Step-3.5-Flash on H200 SXM 141GB ×4`, as the seed pages title a run.
pub fn run_title(run: &RunView) -> String {
    let hw = &run.manifest.hardware;
    let memory = hw.memory_gb.map(|g| format!(" {}GB", gb(g))).unwrap_or_default();
    format!("{} on {}{} ×{}", run.model_name, hw.device, memory, hw.count)
}

/// A short name for a run among others: model, engine and version, hardware.
pub fn run_label(run: &RunView) -> String {
    let m = &run.manifest;
    format!("{} · {} {} · {}× {}", run.model_name, m.engine.name, m.engine.version, m.hardware.count, m.hardware.device)
}

/// Memory in GB as the seed pages print it: `141`, `79.6`.
pub fn gb(v: f64) -> String {
    if v.fract() == 0.0 {
        numbers::integer(v)
    } else {
        numbers::decimal1(v)
    }
}

/// The words for a cell's state, wherever a page prints one.
pub fn state_label(state: CellState) -> &'static str {
    match state {
        CellState::Valid => "Valid",
        CellState::Looped => "Looped",
        CellState::OverCapacity => "Over capacity",
        CellState::Error => "Error",
        CellState::Missing => "Not measured",
    }
}

/// A run as every listing shows it (index, entity pages, `index.json`): the text the table
/// prints, and the raw figures the table sorts by.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary<'a> {
    pub id: &'a str,
    /// Tells the run apart from every other run (see `listing_titles`).
    pub title: &'a str,
    /// What a listing row calls the run: what its columns do not already say (engine
    /// version, device count, date; the id where the title needs it).
    pub name: String,
    /// `2026-11-30`, or none where the manifest has no start time.
    pub date: Option<&'a str>,
    pub model: &'a str,
    pub model_id: &'a str,
    pub model_slug: &'a str,
    pub engine: &'a str,
    pub engine_version: &'a str,
    pub engine_slug: &'a str,
    pub quantization: Option<&'a str>,
    pub device: &'a str,
    pub hardware_slug: &'a str,
    pub count: u32,
    pub bench_tool: &'a str,
    pub origin: Origin,
    pub peak: Option<f64>,
    pub peak_text: String,
    /// `8K ×64`: the cell the peak is in.
    pub peak_at: Option<String>,
    pub single: Option<f64>,
    pub single_text: String,
    pub single_at: Option<String>,
    pub prefill: Option<f64>,
    pub prefill_text: String,
    /// The site's first SLO: tok/s per device at capacity, at the run's shortest context.
    pub capacity: Option<f64>,
    pub capacity_text: String,
    /// `8K ×16`: the context and concurrency of that capacity.
    pub capacity_at: Option<String>,
    /// A rate run's capacity in requests per second (the site's first SLO, its shortest
    /// context): interpolated, or the measured rate it is at least or below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_rps: Option<f64>,
}

/// What a listing shows of a run's capacity under the site's first SLO, at the run's
/// shortest context: (tok/s per device, context, concurrency) of a matrix, or (requests per
/// second, context) of a rate run. `None` where nothing meets it there.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CapacitySummary {
    pub tokens: Option<(f64, u32, u32)>,
    pub rate: Option<(crate::analysis::rates::RateCapacity, u32)>,
}

pub fn capacity_summary(c: &crate::analysis::capacity::RunCapacity) -> CapacitySummary {
    let tokens = c.contexts.first().and_then(|first| {
        let p = first.slos.first()?.point.as_ref()?;
        Some((p.tps_per_device, first.context, p.concurrency))
    });
    let rate = c.rates.first().and_then(|r| Some((r.capacity?, r.context)));
    CapacitySummary { tokens, rate }
}

/// `2.31 req/s`, `≥ 8 req/s`, `< 0.5 req/s`.
pub fn rate_capacity_text(c: crate::analysis::rates::RateCapacity) -> String {
    use crate::analysis::rates::RateCapacity;
    match c {
        RateCapacity::Interpolated(r) => format!("{} req/s", format!("{r:.2}")),
        RateCapacity::AtLeast(r) => format!("≥ {} req/s", numbers::rate(r)),
        RateCapacity::Below(r) => format!("< {} req/s", numbers::rate(r)),
    }
}

impl RunSummary<'_> {
    /// A hash of every field (a listing page is kept while its rows' hashes stay): each
    /// field by name, so a field added to the struct cannot be left out of it.
    pub fn hash(&self) -> u64 {
        let RunSummary {
            id,
            title,
            name,
            date,
            model,
            model_id,
            model_slug,
            engine,
            engine_version,
            engine_slug,
            quantization,
            device,
            hardware_slug,
            count,
            bench_tool,
            origin,
            peak,
            peak_text,
            peak_at,
            single,
            single_text,
            single_at,
            prefill,
            prefill_text,
            capacity,
            capacity_text,
            capacity_at,
            capacity_rps,
        } = self;
        let mut h = crate::units::InputHash::default();
        let texts =
            [id, title, model, model_id, model_slug, engine, engine_version, engine_slug, device, hardware_slug];
        for text in texts.into_iter().chain([bench_tool, &name.as_str()]) {
            h.piece(text.as_bytes());
        }
        for text in [date, quantization, &peak_at.as_deref(), &single_at.as_deref(), &capacity_at.as_deref()] {
            h.u64(text.is_some() as u64).piece(text.unwrap_or("").as_bytes());
        }
        for text in [peak_text, single_text, prefill_text, capacity_text] {
            h.piece(text.as_bytes());
        }
        for v in [peak, single, prefill, capacity, capacity_rps] {
            h.u64(v.map_or(u64::MAX, f64::to_bits));
        }
        h.u64(*count as u64).u64(*origin as u64);
        h.finish()
    }
}

pub fn summary<'a>(run: &'a RunView, title: &'a str, capacities: CapacitySummary) -> RunSummary<'a> {
    let capacity = capacities.tokens;
    let m = &run.manifest;
    let h = &run.headline;
    let ctx = |c: Option<u32>| c.map(numbers::context_label);
    let when = run.date.as_deref().unwrap_or(&run.id);
    let mut name = format!("{} · {}× · {when}", m.engine.version, m.hardware.count);
    if run.date.is_some() && title.ends_with(&format!(" · {}", run.id)) {
        name.push_str(" · ");
        name.push_str(&run.id);
    }
    RunSummary {
        id: &run.id,
        title,
        name,
        date: run.date.as_deref(),
        model: &run.model_name,
        model_id: &m.model.id,
        model_slug: &run.slugs.model_slug,
        engine: &m.engine.name,
        engine_version: &m.engine.version,
        engine_slug: &run.slugs.engine_slug,
        quantization: m.engine.quantization.as_deref(),
        device: &m.hardware.device,
        hardware_slug: &run.slugs.hardware_slug,
        count: m.hardware.count,
        bench_tool: &m.bench_tool.name,
        origin: m.origin,
        peak: h.peak_total_tps,
        peak_text: numbers::or_dash(h.peak_total_tps, numbers::decimal1),
        peak_at: ctx(h.peak_context).zip(h.peak_concurrency).map(|(c, n)| format!("{c} ×{n}")),
        single: h.single_request_tps,
        single_text: numbers::or_dash(h.single_request_tps, numbers::decimal1),
        single_at: ctx(h.single_request_context),
        prefill: h.prefill_8k_tps,
        prefill_text: numbers::or_dash(h.prefill_8k_tps, numbers::compact),
        capacity: capacity.map(|c| c.0),
        capacity_text: match (capacity, capacities.rate) {
            (None, Some((r, _))) => rate_capacity_text(r),
            _ => numbers::or_dash(capacity.map(|c| c.0), numbers::decimal1),
        },
        capacity_at: match (capacity, capacities.rate) {
            (None, Some((_, ctx))) => Some(numbers::context_label(ctx)),
            _ => capacity.map(|(_, ctx, n)| format!("{} ×{n}", numbers::context_label(ctx))),
        },
        capacity_rps: capacities.rate.map(|(r, _)| r.rps()),
    }
}

/// A listing title for every run (by index) that no other run shares: model, engine and
/// version, devices, and the date (the run id where there is none); where all of that is
/// equal, the run id as well.
pub fn listing_titles(runs: &[RunView]) -> Vec<String> {
    use rayon::prelude::*;
    let base: Vec<String> = runs
        .par_iter()
        .map(|r| {
            let m = &r.manifest;
            let when = r.date.as_deref().unwrap_or(&r.id);
            format!(
                "{} · {} {} · {}× {} · {when}",
                r.model_name, m.engine.name, m.engine.version, m.hardware.count, m.hardware.device
            )
        })
        .collect();
    let mut seen: rustc_hash::FxHashMap<&str, usize> = Default::default();
    for t in &base {
        *seen.entry(t.as_str()).or_insert(0) += 1;
    }
    let shared: Vec<bool> = base.iter().map(|t| seen[t.as_str()] > 1).collect();
    base.into_iter()
        .zip(runs)
        .zip(shared)
        .map(|((t, r), shared)| if shared && r.date.is_some() { format!("{t} · {}", r.id) } else { t })
        .collect()
}

/// Each run's place in the list of all runs newest first (undated runs last), then by id.
fn newest_first_places(runs: &[RunView]) -> Vec<u32> {
    use rayon::prelude::*;
    let mut order: Vec<usize> = (0..runs.len()).collect();
    // `None` sorts first ascending, so descending puts it last.
    order
        .par_sort_unstable_by(|&a, &b| runs[b].started.cmp(&runs[a].started).then_with(|| runs[a].id.cmp(&runs[b].id)));
    let mut places = vec![0; runs.len()];
    for (place, &i) in order.iter().enumerate() {
        places[i] = place as u32;
    }
    places
}

/// A run's series colour on a page's overlay charts, as CSS.
pub fn colour_css(index: usize) -> String {
    let c = super::charts::series_colour(index);
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// Template values from any serializable data (minijinja 3 converts only primitives itself).
pub fn ser<T: Serialize>(v: T) -> Value {
    Value::from(Serde(v))
}

/// `root` as a template value: a relative path prefix, never escaped.
pub fn root(path: &str) -> Value {
    Value::from_safe_string(path.to_string())
}

pub fn put_page(sink: &dyn Sink, path: &str, html: &str, stats: &mut RenderStats) -> Result<()> {
    // With a base URL, the page's address (canonical link, og:url) ends in its own path,
    // known only here. Data cannot forge the marker: `<` is always escaped.
    if html.contains(PAGE_PATH_MARKER) {
        let page = path.strip_suffix("index.html").unwrap_or(path);
        sink.put(path, html.replace(PAGE_PATH_MARKER, page).as_bytes())?;
    } else {
        sink.put(path, html.as_bytes())?;
    }
    stats.pages += 1;
    stats.files += 1;
    Ok(())
}

/// Where the base template leaves the page's path to be filled in.
const PAGE_PATH_MARKER: &str = "<!--page-path-->";

pub fn put_file(sink: &dyn Sink, path: &str, body: &str, stats: &mut RenderStats) -> Result<()> {
    put_bytes(sink, path, body.as_bytes(), stats)
}

/// Writes a file of bytes (a compressed download).
pub fn put_bytes(sink: &dyn Sink, path: &str, body: &[u8], stats: &mut RenderStats) -> Result<()> {
    sink.put(path, body)?;
    stats.files += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> RunSummary<'static> {
        RunSummary {
            id: "r1",
            title: "t",
            name: "0.10.0 · 1× · 2026-11-30".into(),
            date: Some("2026-11-30"),
            model: "m",
            model_id: "org/m",
            model_slug: "org-m",
            engine: "vllm",
            engine_version: "0.10.0",
            engine_slug: "vllm",
            quantization: None,
            device: "H200",
            hardware_slug: "h200",
            count: 1,
            bench_tool: "site bench",
            origin: Origin::Measured,
            peak: Some(10.0),
            peak_text: "10.0".into(),
            peak_at: None,
            single: None,
            single_text: "—".into(),
            single_at: None,
            prefill: None,
            prefill_text: "—".into(),
            capacity: None,
            capacity_text: "—".into(),
            capacity_at: None,
            capacity_rps: None,
        }
    }

    #[test]
    fn a_listing_row_hash_changes_with_any_field() {
        let base = row().hash();
        assert_eq!(row().hash(), base);
        let changed: Vec<RunSummary> = vec![
            RunSummary { quantization: Some(""), ..row() },
            RunSummary { date: None, ..row() },
            RunSummary { title: "t2", ..row() },
            // Adjacent texts cannot trade characters.
            RunSummary { model: "mo", model_id: "rg/m", ..row() },
            RunSummary { count: 2, ..row() },
            RunSummary { origin: Origin::Imported, ..row() },
            RunSummary { peak: Some(10.000001), ..row() },
            RunSummary { peak_at: Some("8K ×4".into()), ..row() },
            RunSummary { single: Some(0.0), ..row() },
            RunSummary { capacity: Some(1.0), ..row() },
            RunSummary { name: "0.10.0 · 2× · 2026-11-30".into(), ..row() },
            RunSummary { capacity_at: Some("8K ×4".into()), ..row() },
            RunSummary { capacity_rps: Some(2.5), ..row() },
        ];
        for (n, r) in changed.iter().enumerate() {
            assert_ne!(r.hash(), base, "change {n} kept the hash");
        }
    }
}

//! The comparison page of two runs (`compare/<a>--<b>/`, or `site diff`'s folder) and its
//! CSV download.

use anyhow::Result;
use minijinja::context;
use serde::Serialize;

use super::charts::{line_chart, ChartSpec, Series, XAxis};
use super::common::{put_file, put_page, root, run_label, run_title, ser, serde_name, PageContext, RenderStats};
use super::downloads::CsvWriter;
use crate::analysis::compare::Change;
use crate::analysis::metric::Metric;
use crate::analysis::run_noise::{CellKey, NoiseBasis, RunNoise};
use crate::analysis::{Comparison, RunView};
use crate::format::{DecodeTest, Origin, Phase};
use crate::units::numbers::{self, context_label, seconds_setting, DASH};

/// One fact of the two runs' headers, with whether it differs.
#[derive(Debug, Clone, Serialize)]
pub struct HeaderRow {
    pub label: &'static str,
    pub a: String,
    pub b: String,
    pub differs: bool,
}

/// The facts of both runs side by side, as the page's header table prints them.
pub fn header(a: &RunView, b: &RunView) -> Vec<HeaderRow> {
    let (ma, mb) = (&a.manifest, &b.manifest);
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| DASH.into());
    let contexts = |v: &[u32]| v.iter().map(|x| context_label(*x)).collect::<Vec<_>>().join(", ");
    let numbers = |v: &[u32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    let memory = |g: Option<f64>| g.map(|g| format!("{g} GB")).unwrap_or_else(|| DASH.into());
    let budget = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| DASH.into());
    let figures = |r: &RunView| match r.manifest.origin {
        Origin::Measured => "measured by this site from raw records".to_string(),
        Origin::Imported => format!("as {} reported them", r.manifest.bench_tool.name),
    };
    let decode_test = |d: DecodeTest| match d {
        DecodeTest::FixedDuration => "fixed window, exactly C requests in flight",
        DecodeTest::FixedCount => "fixed request count, ramp-up and tail included",
    };
    let rows: Vec<(&'static str, String, String)> = vec![
        ("Model", ma.model.id.clone(), mb.model.id.clone()),
        ("Engine", ma.engine.name.clone(), mb.engine.name.clone()),
        ("Version", ma.engine.version.clone(), mb.engine.version.clone()),
        ("Quantization", opt(&ma.engine.quantization), opt(&mb.engine.quantization)),
        ("Backend", opt(&ma.engine.backend), opt(&mb.engine.backend)),
        ("Build", opt(&ma.engine.build), opt(&mb.engine.build)),
        ("Device", ma.hardware.device.clone(), mb.hardware.device.clone()),
        ("Device count", ma.hardware.count.to_string(), mb.hardware.count.to_string()),
        ("Memory per device", memory(ma.hardware.memory_gb), memory(mb.hardware.memory_gb)),
        ("Contexts", contexts(&ma.settings.contexts), contexts(&mb.settings.contexts)),
        ("Concurrency", numbers(&ma.settings.concurrency), numbers(&mb.settings.concurrency)),
        ("Time per measurement", seconds_setting(ma.settings.duration_s), seconds_setting(mb.settings.duration_s)),
        ("Max output", ma.settings.max_output_tokens.to_string(), mb.settings.max_output_tokens.to_string()),
        ("KV budget", budget(ma.settings.kv_budget_tokens), budget(mb.settings.kv_budget_tokens)),
        (
            "Benchmark tool",
            format!("{} v{}", ma.bench_tool.name, ma.bench_tool.version),
            format!("{} v{}", mb.bench_tool.name, mb.bench_tool.version),
        ),
        ("Figures", figures(a), figures(b)),
        ("Decode test", decode_test(ma.settings.decode_test).into(), decode_test(mb.settings.decode_test).into()),
    ];
    rows.into_iter().map(|(label, a, b)| HeaderRow { label, differs: a != b, a, b }).collect()
}

fn prefill_overlay(a: &RunView, b: &RunView) -> String {
    let series: Vec<Series> = [("A", a), ("B", b)]
        .iter()
        .map(|(tag, r)| Series {
            label: format!("{tag}: {}", run_label(r)),
            points: r.prefill_points().into_iter().map(|(x, y)| (x as f64, y)).collect(),
            point_labels: vec![],
            errors: vec![],
        })
        .collect();
    line_chart(&ChartSpec {
        x_axis: XAxis::Context,
        title: "Prefill of both runs: prompt tok/s by context length",
        x_desc: "context length (tokens)",
        y_desc: "prompt tok/s",
        series: &series,
        legend: true,
        x_names: None,
    })
}

/// Where a comparison's page and CSV go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComparisonPlace {
    /// `compare/<slug>/` of the site, linked with the other pages.
    InSite,
    /// The root of its own folder (`site diff`), linking to no other page.
    Standalone,
}

/// Writes a comparison's page and its CSV: the one writer of `site build`'s comparisons and
/// `site diff`'s folder.
pub fn write_comparison(
    cx: &PageContext,
    cmp: &Comparison,
    (a, b): (&RunView, &RunView),
    place: ComparisonPlace,
    sink: &dyn crate::write::Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let (dir, site_root, standalone) = match place {
        ComparisonPlace::InSite => (format!("compare/{}/", cmp.slug), "../../", false),
        ComparisonPlace::Standalone => (String::new(), "", true),
    };
    let html = comparison_html(cx, cmp, a, b, site_root, standalone)?;
    put_page(sink, &format!("{dir}index.html"), &html, stats)?;
    put_file(sink, &format!("{dir}comparison.csv"), &comparison_csv(cmp), stats)
}

/// Renders `index.html` of a comparison; `root` is the site root relative to the page, and
/// a standalone page (from `site diff`) links to no other page.
pub fn comparison_html(
    cx: &PageContext,
    cmp: &Comparison,
    a: &RunView,
    b: &RunView,
    site_root: &str,
    standalone: bool,
) -> Result<String> {
    Ok(cx.env.get_template("compare.html")?.render(context! {
        root => root(site_root),
        nav_pages => cx.nav_pages(),
        standalone => standalone,
        cmp => ser(cmp),
        header => ser(header(a, b)),
        a_title => run_title(a),
        b_title => run_title(b),
        a_label => run_label(a),
        b_label => run_label(b),
        prefill_chart => prefill_overlay(a, b),
        capacity => ser(&cmp.capacity),
        device => shared_device_noun(a, b),
        noise => noise_sentence(&cmp.noise),
        background => cmp.background.map(background_sentence),
        settings => settings_sentence(&cmp.settings),
    })?)
}

/// The server settings that differ, in a sentence: `The servers' settings differ:
/// kv_cache_size_tokens 46592 vs 93184.`
pub fn settings_sentence(changes: &[crate::format::SettingChange]) -> Option<String> {
    (!changes.is_empty()).then(|| {
        let said: Vec<String> = changes.iter().map(ToString::to_string).collect();
        format!(
            "The servers' settings differ (A vs B, as each server reported them): {}. A change may be the settings', and the two runs are different configurations.",
            said.join("; ")
        )
    })
}

/// Other work on the load generator's machine that differed between the runs.
pub fn background_sentence((a, b): (f64, f64)) -> String {
    format!(
        "A ran beside {} cores of other work on the load generator's machine, B beside {} (busy CPU beyond the client and the server, in the decode windows): a change may be the machine's.",
        numbers::decimal1(a),
        numbers::decimal1(b)
    )
}

/// Which run-to-run noise a comparison's verdicts include, in a sentence or three (page and
/// terminal): `Run-to-run noise 3.8% (total tok/s) from 4 other runs of this configuration.`
pub fn noise_sentence(n: &RunNoise) -> String {
    let mut parts = Vec::new();
    if n.paired {
        parts.push("Paired: A and B were measured cell by cell in one session (site bench --versus, in A B, B A order), so each figure is judged on the differences of its pairs of repetitions; what drifted on the machine falls on both.".to_string());
    }
    parts.push(basis_sentence(n));
    parts.extend(history_sentences(n));
    if n.pooled_runs > 0 {
        let count = match (n.pooled_runs, n.paired) {
            (1, true) => "1 other pair of runs".to_string(),
            (1, false) => "1 other run".to_string(),
            (k, true) => format!("{k} other pairs of runs"),
            (k, false) => format!("{k} other runs"),
        };
        parts.push(format!(
            "The spread of each cell's repetitions is pooled with that of {count} of the same design and configurations."
        ));
    }
    parts.join(" ")
}

/// Most runs a sentence names; the rest are counted.
const NAMED_RUNS: usize = 8;

/// The runs the noise came from, those left out and the change points their histories were
/// split at.
fn history_sentences(n: &RunNoise) -> Vec<String> {
    let mut out = Vec::new();
    if !n.from.is_empty() && matches!(n.basis, NoiseBasis::Configuration | NoiseBasis::Site) {
        let mut named = n.from.iter().take(NAMED_RUNS).cloned().collect::<Vec<_>>().join(", ");
        if n.from.len() > NAMED_RUNS {
            named += &format!(" and {} more", n.from.len() - NAMED_RUNS);
        }
        out.push(format!("The noise comes from {named}."));
    }
    if n.basis == NoiseBasis::Configuration && !n.cells.is_empty() {
        out.push(
            "Each cell allows for its own runs' spread, moderated towards its figure's (run_noise_pct in the CSV)."
                .to_string(),
        );
    }
    let whose = if n.basis == NoiseBasis::Configuration { "this" } else { "its" };
    for l in &n.left_out {
        let side = if l.pct < 0.0 { "below" } else { "above" };
        out.push(format!(
            "Run {} was left out: {}% {side} the other runs of {whose} configuration.",
            l.id,
            numbers::decimal1(l.pct.abs())
        ));
    }
    if n.cells_left_out > 0 {
        let cells = if n.cells_left_out == 1 { "1 cell".to_string() } else { format!("{} cells", n.cells_left_out) };
        out.push(format!("{cells} of those runs were left out of the noise: each at another level than the same cell of the other runs."));
    }
    if n.splits > 0 {
        let points = if n.splits == 1 { "1 change point".to_string() } else { format!("{} change points", n.splits) };
        out.push(format!(
            "The history was split at {points}: the noise is estimated within each segment, not across a change."
        ));
    }
    out
}

fn basis_sentence(n: &RunNoise) -> String {
    let pct = numbers::decimal1(n.headline_pct());
    let runs = |k: usize| if k == 1 { "1 run".to_string() } else { format!("{k} runs") };
    let servers = if n.paired { " between the two servers' processes" } else { "" };
    // Its degrees of freedom: the evidence's and the assumed noise's weight.
    let df = n
        .of(Metric::TotalTps)
        .map_or(String::new(), |f| format!("; {} degrees of freedom", numbers::decimal1(f.df).trim_end_matches(".0")));
    match n.basis {
        NoiseBasis::Configuration => format!(
            "Run-to-run noise{servers} {pct}% (total tok/s, one run's level against the next{df}) from {} of {}; each judged figure allows for it beside its repetitions.",
            runs(n.runs).replacen("run", "other run", 1),
            if n.configurations == 1 { "this configuration" } else { "these configurations" }
        ),
        NoiseBasis::Site => format!(
            "Run-to-run noise{servers} {pct}% (total tok/s, one run's level against the next{df}) from {} of {} other configurations measured more than once; each judged figure allows for it beside its repetitions.",
            runs(n.runs),
            n.configurations
        ),
        NoiseBasis::Processes => {
            let (a, b) = n.processes.unwrap_or_default();
            format!(
                "Run-to-run noise from the runs' own server processes (A {a}, B {b}, each started afresh): one sample per process, so each judged figure's repetitions carry it."
            )
        }
        NoiseBasis::Assumed => format!(
            "Run-to-run noise{servers} assumed {pct}% (change_noise_pct in site.toml): besides these two runs, no configuration here is measured more than once; each judged figure allows for it beside its repetitions."
        ),
    }
}

/// What the runs' devices are called in a per-device view: `GPU` when both ran on GPUs,
/// `CPU` when both on CPUs, else `device`.
fn shared_device_noun(a: &RunView, b: &RunView) -> &'static str {
    let noun = |r: &RunView| {
        let kind = r.manifest.hardware.kind.to_ascii_lowercase();
        if kind.contains("gpu") {
            "GPU"
        } else if kind.contains("cpu") {
            "CPU"
        } else {
            "device"
        }
    };
    match (noun(a), noun(b)) {
        (x, y) if x == y => x,
        _ => "device",
    }
}

/// A change's columns: both figures, the change with its 95% interval, and the verdict.
fn delta_fields(m: &Option<Change>) -> [String; 6] {
    use crate::units::numbers::{brief, pct2};
    let pct = |v: Option<f64>| v.map(pct2).unwrap_or_default();
    match m {
        Some(m) => [brief(m.a), brief(m.b), pct(Some(m.pct)), pct(m.lo_pct), pct(m.hi_pct), serde_name(m.verdict)],
        None => Default::default(),
    }
}

/// The repetitions of each side behind a row's first figure.
fn n_fields(m: &Option<Change>) -> [String; 2] {
    m.as_ref().map(|m| [m.n_a.to_string(), m.n_b.to_string()]).unwrap_or_default()
}

const CSV_COLUMNS: &[&str] = &[
    "phase",
    "context",
    "concurrency",
    "a_status",
    "b_status",
    "a_n",
    "b_n",
    "a_total_tps",
    "b_total_tps",
    "total_tps_change_pct",
    "total_tps_change_lo_pct",
    "total_tps_change_hi_pct",
    "total_tps_verdict",
    "a_per_request_tps",
    "b_per_request_tps",
    "per_request_change_pct",
    "per_request_change_lo_pct",
    "per_request_change_hi_pct",
    "per_request_verdict",
    "a_ttft_ms",
    "b_ttft_ms",
    "ttft_change_pct",
    "ttft_change_lo_pct",
    "ttft_change_hi_pct",
    "ttft_verdict",
    "a_tbt_ms",
    "b_tbt_ms",
    "tbt_change_pct",
    "tbt_change_lo_pct",
    "tbt_change_hi_pct",
    "tbt_verdict",
    "a_total_tps_per_gpu",
    "b_total_tps_per_gpu",
    "per_gpu_change_pct",
    "per_gpu_change_lo_pct",
    "per_gpu_change_hi_pct",
    "per_gpu_verdict",
    "run_noise_basis",
    "run_noise_pct",
];

/// Where the run-to-run noise comes from and its size in the row's cell for its first
/// figure (prompt tok/s for prefill, total tok/s for decode).
fn noise_fields(n: &RunNoise, key: CellKey) -> [String; 2] {
    let basis = serde_name(n.basis);
    // `processes`: nothing is added, so the size is empty.
    let pct =
        n.for_cell(key).map_or(String::new(), |(var_log, _)| format!("{:.2}", (var_log.sqrt().exp() - 1.0) * 100.0));
    [basis, pct]
}

/// One row per decode and prefill cell: both sides' status and figures and the changes.
pub fn comparison_csv(cmp: &Comparison) -> String {
    let mut csv = CsvWriter::new(CSV_COLUMNS);
    for p in &cmp.prefill {
        let mut row = vec![
            "prefill".to_string(),
            p.context.to_string(),
            "1".into(),
            p.a_status.as_str().into(),
            p.b_status.as_str().into(),
        ];
        row.extend(n_fields(&p.tps));
        row.extend(delta_fields(&p.tps));
        row.extend(vec![String::new(); 4 * 6]);
        row.extend(noise_fields(&cmp.noise, (Phase::Prefill, p.context, 0, Metric::PromptTps)));
        csv.row(row);
    }
    for c in cmp.rows.iter().flat_map(|r| &r.cells) {
        let mut row = vec![
            "decode".to_string(),
            c.context.to_string(),
            c.concurrency.to_string(),
            c.a_status.as_str().into(),
            c.b_status.as_str().into(),
        ];
        row.extend(n_fields(&c.total));
        for m in [&c.total, &c.per_request, &c.ttft, &c.tbt, &c.total_per_gpu] {
            row.extend(delta_fields(m));
        }
        row.extend(noise_fields(&cmp.noise, (Phase::Decode, c.context, c.concurrency, Metric::TotalTps)));
        csv.row(row);
    }
    csv.finish()
}

//! Two runs side by side: header facts with differences marked, launch commands diffed
//! flag by flag, every decode cell as A -> B with its change, coloured only past a threshold
//! and by each metric's good direction, and a per-GPU view.

use anyhow::{bail, Result};
use serde::Serialize;

pub use super::command::{diff_commands, FlagDiff};
use crate::analysis::{CellView, RunView};
use crate::format::Status;

/// Changes smaller than this (percent) are not coloured.
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

#[derive(Debug, Clone, Serialize)]
pub struct HeaderRow {
    pub label: &'static str,
    pub a: String,
    pub b: String,
    pub differs: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricDelta {
    pub a: f64,
    pub b: f64,
    /// (b - a) / a x 100.
    pub pct: f64,
    /// `better`, `worse` or `neutral` (inside the threshold).
    pub verdict: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellPair {
    pub context: u32,
    pub concurrency: u32,
    /// `valid`, `looped`, `over_capacity`, `error`, or `missing`.
    pub a_status: &'static str,
    pub b_status: &'static str,
    pub a_total_tps: Option<f64>,
    pub b_total_tps: Option<f64>,
    /// Present only when both cells are valid.
    pub total: Option<MetricDelta>,
    pub per_request: Option<MetricDelta>,
    pub ttft: Option<MetricDelta>,
    pub tbt: Option<MetricDelta>,
    pub total_per_gpu: Option<MetricDelta>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PairRow {
    pub context: u32,
    pub cells: Vec<CellPair>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PrefillPair {
    pub context: u32,
    pub a_status: &'static str,
    pub b_status: &'static str,
    pub a_tps: Option<f64>,
    pub b_tps: Option<f64>,
    pub tps: Option<MetricDelta>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// `<a>--<b>`: the comparison's folder name.
    pub slug: String,
    pub a_id: String,
    pub b_id: String,
    pub a_gpus: u32,
    pub b_gpus: u32,
    pub threshold_pct: f64,
    pub header: Vec<HeaderRow>,
    pub command: Vec<FlagDiff>,
    pub columns: Vec<u32>,
    pub rows: Vec<PairRow>,
    pub prefill: Vec<PrefillPair>,
    pub common_cells: usize,
}

fn status_of(c: Option<&CellView>) -> &'static str {
    match c.map(|c| c.status) {
        None => "missing",
        Some(Status::Valid) => "valid",
        Some(Status::Looped) => "looped",
        Some(Status::OverCapacity) => "over_capacity",
        Some(Status::Error) => "error",
    }
}

/// A change from `a` to `b`; `higher_is_better` says which way is good.
pub fn delta(a: f64, b: f64, higher_is_better: bool, threshold_pct: f64) -> Option<MetricDelta> {
    if !(a.is_finite() && b.is_finite()) || a == 0.0 {
        return None;
    }
    let pct = (b - a) / a * 100.0;
    let verdict = if pct.abs() < threshold_pct {
        "neutral"
    } else if (pct > 0.0) == higher_is_better {
        "better"
    } else {
        "worse"
    };
    Some(MetricDelta { a, b, pct, verdict })
}

fn both(a: Option<f64>, b: Option<f64>, up: bool, t: f64) -> Option<MetricDelta> {
    delta(a?, b?, up, t)
}

fn header(a: &RunView, b: &RunView) -> Vec<HeaderRow> {
    let (ma, mb) = (&a.manifest, &b.manifest);
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "—".into());
    let s = |v: &[u32]| v.iter().map(|x| crate::units::numbers::context_label(*x)).collect::<Vec<_>>().join(", ");
    let n = |v: &[u32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    let rows: Vec<(&'static str, String, String)> = vec![
        ("Model", ma.model.id.clone(), mb.model.id.clone()),
        ("Engine", ma.engine.name.clone(), mb.engine.name.clone()),
        ("Version", ma.engine.version.clone(), mb.engine.version.clone()),
        ("Quantization", opt(&ma.engine.quantization), opt(&mb.engine.quantization)),
        ("Backend", opt(&ma.engine.backend), opt(&mb.engine.backend)),
        ("Build", opt(&ma.engine.build), opt(&mb.engine.build)),
        ("GPU", ma.hardware.device.clone(), mb.hardware.device.clone()),
        ("GPU count", ma.hardware.count.to_string(), mb.hardware.count.to_string()),
        (
            "Memory per GPU",
            ma.hardware.memory_gb.map(|g| format!("{g} GB")).unwrap_or_else(|| "—".into()),
            mb.hardware.memory_gb.map(|g| format!("{g} GB")).unwrap_or_else(|| "—".into()),
        ),
        ("Contexts", s(&ma.settings.contexts), s(&mb.settings.contexts)),
        ("Concurrency", n(&ma.settings.concurrency), n(&mb.settings.concurrency)),
        ("Time per measurement", format!("{} s", ma.settings.duration_s), format!("{} s", mb.settings.duration_s)),
        ("Max output", ma.settings.max_output_tokens.to_string(), mb.settings.max_output_tokens.to_string()),
        (
            "KV budget",
            ma.settings.kv_budget_tokens.map(|v| v.to_string()).unwrap_or_else(|| "—".into()),
            mb.settings.kv_budget_tokens.map(|v| v.to_string()).unwrap_or_else(|| "—".into()),
        ),
        (
            "Benchmark tool",
            format!("{} v{}", ma.bench_tool.name, ma.bench_tool.version),
            format!("{} v{}", mb.bench_tool.name, mb.bench_tool.version),
        ),
    ];
    rows.into_iter().map(|(label, a, b)| HeaderRow { label, differs: a != b, a, b }).collect()
}

pub fn comparison_slug(a: &str, b: &str) -> String {
    format!("{a}--{b}")
}

/// Compares run `a` (the baseline) with run `b`.
pub fn compare(a: &RunView, b: &RunView, threshold_pct: f64) -> Result<Comparison> {
    if a.id == b.id {
        bail!("cannot compare run {} with itself: name two different runs", a.id);
    }
    let (ga, gb) = (a.manifest.hardware.count.max(1) as f64, b.manifest.hardware.count.max(1) as f64);
    let mut contexts: Vec<u32> =
        a.manifest.settings.contexts.iter().chain(&b.manifest.settings.contexts).copied().collect();
    contexts.sort_unstable();
    contexts.dedup();
    let mut columns: Vec<u32> =
        a.manifest.settings.concurrency.iter().chain(&b.manifest.settings.concurrency).copied().collect();
    columns.sort_unstable();
    columns.dedup();
    let find =
        |r: &'_ RunView, ctx: u32, c: u32| r.decode.iter().find(|d| d.context == ctx && d.concurrency == c).cloned();
    let mut common = 0;
    let t = threshold_pct;
    let rows: Vec<PairRow> = contexts
        .iter()
        .map(|&ctx| PairRow {
            context: ctx,
            cells: columns
                .iter()
                .map(|&c| {
                    let (ca, cb) = (find(a, ctx, c), find(b, ctx, c));
                    if ca.is_some() && cb.is_some() {
                        common += 1;
                    }
                    let valid = |x: &Option<CellView>| {
                        x.as_ref().filter(|v| v.status == Status::Valid).map(|v| v.figures.clone())
                    };
                    let (fa, fb) = (valid(&ca), valid(&cb));
                    let pair = |f: fn(&crate::analysis::Figures) -> Option<f64>, up: bool| match (&fa, &fb) {
                        (Some(x), Some(y)) => both(f(x), f(y), up, t),
                        _ => None,
                    };
                    CellPair {
                        context: ctx,
                        concurrency: c,
                        a_status: status_of(ca.as_ref()),
                        b_status: status_of(cb.as_ref()),
                        a_total_tps: fa.as_ref().and_then(|f| f.total_tps),
                        b_total_tps: fb.as_ref().and_then(|f| f.total_tps),
                        total: pair(|f| f.total_tps, true),
                        per_request: pair(|f| f.per_request_tps, true),
                        ttft: pair(|f| f.ttft_ms, false),
                        tbt: pair(|f| f.tbt_ms, false),
                        total_per_gpu: match (&fa, &fb) {
                            (Some(x), Some(y)) => {
                                both(x.total_tps.map(|v| v / ga), y.total_tps.map(|v| v / gb), true, t)
                            }
                            _ => None,
                        },
                    }
                })
                .collect(),
        })
        .collect();
    let mut pctx: Vec<u32> = a.prefill.iter().chain(&b.prefill).map(|p| p.context).collect();
    pctx.sort_unstable();
    pctx.dedup();
    let prefill: Vec<PrefillPair> = pctx
        .iter()
        .map(|&ctx| {
            let pa = a.prefill.iter().find(|p| p.context == ctx);
            let pb = b.prefill.iter().find(|p| p.context == ctx);
            if pa.is_some() && pb.is_some() {
                common += 1;
            }
            let tps = |p: Option<&CellView>| p.filter(|p| p.status == Status::Valid).and_then(|p| p.figures.prompt_tps);
            PrefillPair {
                context: ctx,
                a_status: status_of(pa),
                b_status: status_of(pb),
                a_tps: tps(pa),
                b_tps: tps(pb),
                tps: both(tps(pa), tps(pb), true, t),
            }
        })
        .collect();
    if common == 0 {
        bail!("runs {} and {} have no cell in common (no context and concurrency measured in both): there is nothing to compare", a.id, b.id);
    }
    Ok(Comparison {
        slug: comparison_slug(&a.id, &b.id),
        a_id: a.id.clone(),
        b_id: b.id.clone(),
        a_gpus: a.manifest.hardware.count,
        b_gpus: b.manifest.hardware.count,
        threshold_pct,
        header: header(a, b),
        command: diff_commands(
            a.manifest.launch_command.as_deref().unwrap_or(""),
            b.manifest.launch_command.as_deref().unwrap_or(""),
        ),
        columns,
        rows,
        prefill,
        common_cells: common,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_follow_each_metrics_good_direction() {
        let up = delta(100.0, 110.0, true, 5.0).unwrap();
        assert_eq!((up.verdict, up.pct.round()), ("better", 10.0));
        assert_eq!(delta(100.0, 104.0, true, 5.0).unwrap().verdict, "neutral");
        assert_eq!(delta(100.0, 90.0, true, 5.0).unwrap().verdict, "worse");
        // Latency: lower is better.
        assert_eq!(delta(100.0, 80.0, false, 5.0).unwrap().verdict, "better");
        assert_eq!(delta(100.0, 120.0, false, 5.0).unwrap().verdict, "worse");
        assert!(delta(0.0, 1.0, true, 5.0).is_none());
    }
}

//! llm-inference-bench (`llm_decode_bench.py`) results, versions 0.x, converted: its decode
//! and prefill cells, the Over capacity cells it leaves out reconstructed, and its flags as
//! our warnings. The file's shape is in `shape`.

mod shape;

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use serde_json::Value;

use super::converted::Converted;
use crate::format::{
    self, BenchTool, CapacityRule, Cell, DecodeTest, LoopFinding, OverCapacity, Phase, PrefillMode, ReportedFigures,
    ReportedSample, RunSettings, Status, Warning,
};
use shape::{DecodeResult, ResultsFile};

pub const TOOL: &str = "llm-inference-bench";

/// Reads and checks the file: that tool's format, a major version this importer knows.
pub fn read(path: &Path) -> Result<ResultsFile> {
    let text = crate::fsutil::read_data_file(path, 256 << 20)?;
    let v: Value = format::json::parse_lean(path, &text, &[])?;
    let version = v.pointer("/metadata/version").and_then(Value::as_str);
    if v.get("results").is_none() || version.is_none() {
        bail!(
            "{}: not an {TOOL} results file (it needs `metadata.version` and `results`; is it benchmark_results.json?)",
            path.display()
        );
    }
    let version = version.unwrap();
    let major = version.split('.').next().and_then(|m| m.parse::<u32>().ok());
    if major != Some(0) {
        bail!("{}: unsupported {TOOL} version {version} (this importer reads versions 0.x)", path.display());
    }
    format::json::parse(path, &text)
        .map_err(|e| e.context(format!("{}: not a complete {TOOL} {version} file", path.display())))
}

fn ms(s: Option<f64>) -> Option<f64> {
    s.map(|v| v * 1000.0)
}

/// Whether a cell's "continuous usage" figures can be trusted. llm-inference-bench 0.4.18
/// treats a usage block that llama.cpp sends only at a request's end as continuous and so
/// credits whole requests to the window they end in: the output tokens are then an exact
/// multiple of max_tokens, and a sibling cell that saw no usage at all fell back to chunks.
fn usage_was_end_only(r: &DecodeResult, file: &ResultsFile) -> Option<String> {
    if r.aggregate_source.as_deref() != Some("openai_continuous_usage") {
        return None;
    }
    let max = file.metadata.max_tokens as u64;
    let out = r.client_output_tokens.unwrap_or(0);
    let sibling_fell_back =
        file.results.iter().any(|o| o.aggregate_source.as_deref() == Some("openai_stream_chunks_fallback"));
    let whole_requests = max > 0 && out > 0 && out.is_multiple_of(max);
    if !(sibling_fell_back || whole_requests) {
        return None;
    }
    let mut why = Vec::new();
    if whole_requests {
        why.push(format!("its {out} output tokens are exactly {} whole requests of {max}", out / max));
    }
    if sibling_fell_back {
        why.push(
            "other cells of the same file saw no usage while streaming and fell back to chunk counting".to_string(),
        );
    }
    Some(format!(
        "{TOOL} counted usage as continuous, but this server reports usage only at a request's end: whole requests were credited to the window they ended in ({}), so total tok/s is unsound",
        why.join("; ")
    ))
}

/// A tool's error text without credentials: anything secret-shaped goes.
fn scrubbed(message: &str) -> String {
    crate::redact::scrub_text(message).into_owned()
}

/// Why a result is an error cell, if it is one: a `failure_reason` or a negative
/// `aggregate_tps` (newer versions), or a 0.4 cell written as all zeros with its requests
/// failed (an error, not a valid zero).
fn failure(r: &DecodeResult) -> Option<String> {
    if let Some(reason) = r.failure_reason.as_deref().filter(|s| !s.trim().is_empty()) {
        return Some(reason.to_string());
    }
    match r.aggregate_tps {
        Some(t) if t < 0.0 => Some(format!("{TOOL} marked the cell failed (aggregate_tps {t})")),
        Some(t)
            if t == 0.0 && r.client_output_tokens.unwrap_or(0) == 0 && r.completed_request_count.unwrap_or(0) == 0 =>
        {
            Some(format!(
                "{TOOL} measured nothing: no output tokens and no completed request ({} errors)",
                r.num_errors.unwrap_or(0)
            ))
        }
        _ => None,
    }
}

fn decode_cell(r: &DecodeResult, file: &ResultsFile) -> Cell {
    if let Some(message) = failure(r) {
        return Cell {
            error: Some(format::CellError { message: scrubbed(&message), http_status: None, cause: None }),
            ..Cell::new(Phase::Decode, r.context_tokens, r.concurrency, Status::Error)
        };
    }
    let md = &file.metadata;
    let mut warnings = Vec::new();
    if r.capacity_limited == Some(true) {
        warnings.push(Warning {
            code: "capacity_limited".into(),
            message: format!(
                "{TOOL} flagged the cell capacity-limited: it never had all {} streams active",
                r.concurrency
            ),
        });
    }
    if r.warmup_timed_out == Some(true) {
        let reason = r.timeout_reason.as_deref().filter(|s| !s.is_empty()).or(r.ready_reason.as_deref()).unwrap_or("");
        warnings.push(Warning {
            code: "warmup_timed_out".into(),
            message: format!("warm-up timed out before all {} streams were active ({reason})", r.concurrency),
        });
    }
    if let Some(msg) = usage_was_end_only(r, file) {
        warnings.push(Warning { code: "usage_not_continuous".into(), message: msg });
    }
    if r.num_errors.unwrap_or(0) > 0 {
        warnings.push(Warning {
            code: "request_errors".into(),
            message: format!("{} requests failed in this cell", r.num_errors.unwrap_or(0)),
        });
    }
    let samples: Vec<ReportedSample> = r
        .request_samples
        .iter()
        .map(|s| ReportedSample {
            ttft_s: s.ttft,
            latency_s: s.latency,
            tbt_s: s.inter_token_latency_avg,
            input_tokens: s.input_tokens,
            output_tokens: s.output_tokens,
            completed: s.completed,
        })
        .collect();
    let looped = r.loop_detected == Some(true);
    // Without the server's gauge the tool writes 0.0: that is "unknown", not zero requests.
    let avg_active = r.avg_running_reqs.filter(|v| md.metrics_available == Some(true) || *v > 0.0);
    let reported = ReportedFigures {
        prompt_tps: None,
        total_tps: r.aggregate_tps,
        per_request_tps: r.output_tps_per_user_p50,
        ttft_ms: ms(r.ttft_p50),
        ttft_p90_ms: ms(r.ttft_p90),
        ttft_p99_ms: ms(r.ttft_p99),
        answer_ttft_ms: None,
        tbt_ms: ms(r.inter_token_latency_p50),
        tbt_p90_ms: ms(r.inter_token_latency_p90),
        tbt_p99_ms: ms(r.inter_token_latency_p99),
        avg_active,
        completed: r.completed_request_count,
        output_tokens: r.client_output_tokens,
        measured_s: r.measurement_seconds.or(r.measurement_wall_seconds),
        token_source: r.aggregate_source.clone(),
        samples,
        tool_figures: r.extra.figures(),
    };
    // Checked to fit by `check_file`.
    let prompt_tokens = r
        .request_samples
        .iter()
        .find_map(|s| s.input_tokens.filter(|t| *t > 0))
        .map(|t| u32::try_from(t).unwrap_or(u32::MAX))
        .or_else(|| r.input_seq_len_avg.filter(|v| *v > 0.0).map(|v| v.round().min(u32::MAX as f64) as u32))
        .or_else(|| file.prefill.get(&r.context_tokens.to_string()).and_then(|p| p.prompt_tokens));
    Cell {
        prompt_tokens,
        warnings,
        reported: Some(reported),
        loop_finding: looped.then(|| loop_finding(r.loop_diagnostics.as_ref())),
        ..Cell::new(Phase::Decode, r.context_tokens, r.concurrency, if looped { Status::Looped } else { Status::Valid })
    }
}

fn loop_finding(d: Option<&Value>) -> LoopFinding {
    let get_u = |keys: &[&str]| keys.iter().find_map(|k| d?.get(*k)?.as_u64());
    let get_s = |keys: &[&str]| keys.iter().find_map(|k| d?.get(*k)?.as_str().map(str::to_string));
    LoopFinding {
        channel: get_s(&["channel"]),
        period_chars: get_u(&["period", "period_chars", "cycle_length"]),
        repeated_chars: get_u(&["repeated_chars", "repeat_chars", "repeated_length"]),
        excerpt: get_s(&["excerpt", "sample", "cycle"]).map(|s| s.chars().take(120).collect()),
        cycle_hash: get_s(&["cycle_hash", "hash"]),
    }
}

/// Cells in the matrix that the tool left out because they exceed its KV budget.
fn reconstructed(file: &ResultsFile) -> Vec<Cell> {
    let md = &file.metadata;
    let Some(budget) = md.max_total_tokens else { return vec![] };
    let mut out = Vec::new();
    for &ctx in &md.context_lengths {
        for &c in &md.concurrency_levels {
            if file.results.iter().any(|r| r.context_tokens == ctx && r.concurrency == c) {
                continue;
            }
            let required = c as u64 * (ctx as u64 + md.max_tokens as u64);
            if required > budget {
                out.push(Cell {
                    over_capacity: Some(OverCapacity {
                        rule: CapacityRule::KvBudget,
                        required_tokens: required,
                        budget_tokens: Some(budget),
                    }),
                    ..Cell::new(Phase::Decode, ctx, c, Status::OverCapacity)
                });
            }
        }
    }
    out
}

fn prefill_cells(file: &ResultsFile, path: &Path) -> Result<Vec<Cell>> {
    let mut out = Vec::new();
    for (key, p) in &file.prefill {
        let ctx: u32 =
            key.parse().map_err(|_| anyhow!("{}: prefill key {key:?} is not a context length", path.display()))?;
        out.push(Cell {
            prompt_tokens: p.prompt_tokens,
            reported: Some(ReportedFigures {
                prompt_tps: Some(p.tok_per_sec),
                ttft_ms: Some(p.ttft_seconds * 1000.0),
                completed: p.samples,
                token_source: p.method.clone(),
                ..Default::default()
            }),
            ..Cell::new(Phase::Prefill, ctx, 1, Status::Valid)
        });
    }
    Ok(out)
}

/// What the file says must make sense before anything is converted: one result per cell,
/// no negative figure, token counts that fit the format. Each refusal names the field.
fn check_file(file: &ResultsFile, path: &Path) -> Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for (i, r) in file.results.iter().enumerate() {
        if let Some(first) = seen.insert((r.context_tokens, r.concurrency), i) {
            bail!(
                "{}: results[{i}] measures context {} x {} again (first in results[{first}]): a cell is imported once",
                path.display(),
                r.context_tokens,
                r.concurrency
            );
        }
        // A negative aggregate_tps is newer versions' failure marker, not a figure.
        let figures = [
            ("aggregate_tps", r.aggregate_tps.filter(|t| *t >= 0.0 || !t.is_finite())),
            ("measurement_seconds", r.measurement_seconds),
            ("ttft_p50", r.ttft_p50),
            ("ttft_p90", r.ttft_p90),
            ("ttft_p99", r.ttft_p99),
            ("inter_token_latency_p50", r.inter_token_latency_p50),
            ("inter_token_latency_p90", r.inter_token_latency_p90),
            ("inter_token_latency_p99", r.inter_token_latency_p99),
            ("output_tps_per_user_p50", r.output_tps_per_user_p50),
            ("avg_running_reqs", r.avg_running_reqs),
            ("input_seq_len_avg", r.input_seq_len_avg),
        ];
        check_figures(path, &figures, |f| format!("results[{i}].{f}"))?;
        check_fits(path, r.input_seq_len_avg, || format!("results[{i}].input_seq_len_avg"))?;
        for (j, s) in r.request_samples.iter().enumerate() {
            let times =
                [("ttft", s.ttft), ("latency", s.latency), ("inter_token_latency_avg", s.inter_token_latency_avg)];
            check_figures(path, &times, |f| format!("results[{i}].request_samples[{j}].{f}"))?;
            let tokens = s.input_tokens.map(|t| t as f64);
            check_fits(path, tokens, || format!("results[{i}].request_samples[{j}].input_tokens"))?;
        }
    }
    for (key, p) in &file.prefill {
        let figures = [("ttft_seconds", Some(p.ttft_seconds)), ("tok_per_sec", Some(p.tok_per_sec))];
        check_figures(path, &figures, |f| format!("prefill.{key}.{f}"))?;
    }
    let d = file.metadata.duration_per_test;
    if !(d > 0.0 && d.is_finite()) {
        bail!("{}: metadata.duration_per_test: {d} is not a duration", path.display());
    }
    Ok(())
}

/// Each present value is a figure: finite and not negative; `name` gives the field's name.
fn check_figures(path: &Path, values: &[(&str, Option<f64>)], name: impl Fn(&str) -> String) -> Result<()> {
    for &(field, v) in values {
        if let Some(v) = v.filter(|v| !(*v >= 0.0 && v.is_finite())) {
            bail!("{}: {}: {v} is not a figure (negative or not finite)", path.display(), name(field));
        }
    }
    Ok(())
}

/// A token count that becomes a prompt size must fit one.
fn check_fits(path: &Path, tokens: Option<f64>, name: impl FnOnce() -> String) -> Result<()> {
    match tokens.filter(|t| *t > u32::MAX as f64) {
        Some(t) => bail!("{}: {}: {t} tokens do not fit a prompt size (at most {})", path.display(), name(), u32::MAX),
        None => Ok(()),
    }
}

/// Converts the file into the shared converted form and the tool's name and version
/// (nothing written).
pub fn convert(path: &Path) -> Result<(Converted, BenchTool)> {
    let file = read(path)?;
    check_file(&file, path)?;
    let md = &file.metadata;
    for (i, r) in file.results.iter().enumerate() {
        if r.aggregate_tps.is_none() && r.loop_detected != Some(true) && failure(r).is_none() {
            bail!(
                "{}: results[{i}] (context {} x {}) has no aggregate_tps",
                path.display(),
                r.context_tokens,
                r.concurrency
            );
        }
    }
    let mut cells: Vec<Cell> = prefill_cells(&file, path)?;
    cells.extend(file.results.iter().map(|r| decode_cell(r, &file)));
    cells.extend(reconstructed(&file));
    let mut prefill_contexts: Vec<u32> =
        cells.iter().filter(|c| c.phase == Phase::Prefill).map(|c| c.context).collect();
    prefill_contexts.sort_unstable();
    let mut contexts = md.context_lengths.clone();
    contexts.sort_unstable();
    contexts.dedup();
    let mut concurrency = md.concurrency_levels.clone();
    concurrency.sort_unstable();
    concurrency.dedup();
    let settings = RunSettings {
        contexts,
        concurrency,
        prefill_contexts,
        duration_s: md.duration_per_test,
        max_output_tokens: md.max_tokens,
        decode_test: match md.decode_mode.as_deref() {
            Some("request-count") => DecodeTest::FixedCount,
            _ => DecodeTest::FixedDuration,
        },
        prefill_mode: match md.prefill_mode.as_deref() {
            Some("integrated_decode_scout") | None => PrefillMode::DecodeWarmup,
            Some(_) => PrefillMode::Standalone,
        },
        api: None,
        kv_budget_tokens: md.max_total_tokens,
        kv_budget_source: md.max_total_tokens.map(|_| format!("{TOOL} metadata.max_total_tokens")),
        repeat: None,
        prefill_samples: None,
        prefix_reuse_pct: None,
        turns: None,
    };
    let converted = Converted {
        settings,
        cells,
        // The file's model name is often a local path: it names the model only when the
        // user gave no --model-id, and is never stored as the served name.
        model: md.model.clone(),
        started_at: md.timestamp.clone(),
        engine: match md.engine.as_deref() {
            Some("openai_proxy") | None => None,
            Some(e) => Some(e.to_string()),
        },
        engine_version: None,
        device: None,
        notes: Vec::new(),
        rates: Vec::new(),
        traffic: None,
    };
    Ok((converted, BenchTool { name: TOOL.into(), version: md.version.clone() }))
}

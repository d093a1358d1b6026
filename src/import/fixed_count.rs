//! What the importers of fixed-count tools (vLLM, SGLang, guidellm, AIPerf, inference-perf)
//! share: a cell per concurrency with the method's warning, and the run's settings.

use crate::format::{Cell, DecodeTest, Phase, PrefillMode, ReportedFigures, RunSettings, Status, Warning};

/// The method's warning on every cell, and the failed requests if any.
pub fn warnings(tool: &str, sent: u64, concurrency: u32, failed: u64) -> Vec<Warning> {
    let method = Warning {
        code: "fixed_request_count".into(),
        message: format!(
            "{tool} sent {sent} requests, at most {concurrency} at once: its total tok/s spans the whole run, ramp-up and tail included"
        ),
    };
    with_failures(method, failed)
}

/// The method's warning of a timed profile (AIPerf `--benchmark-duration`), and the failed
/// requests if any.
pub fn timed_warnings(tool: &str, seconds: f64, sent: u64, concurrency: u32, failed: u64) -> Vec<Warning> {
    let method = Warning {
        code: "fixed_duration".into(),
        message: format!(
            "{tool} ran for {} s with at most {concurrency} requests at once ({sent} sent): its total tok/s spans the whole run, ramp-up and tail included",
            crate::units::numbers::decimal1(seconds)
        ),
    };
    with_failures(method, failed)
}

fn with_failures(method: Warning, failed: u64) -> Vec<Warning> {
    let mut out = vec![method];
    if failed > 0 {
        out.push(Warning { code: "request_errors".into(), message: format!("{failed} requests failed in this cell") });
    }
    out
}

/// A valid decode cell with the figures as reported.
pub fn cell(context: u32, concurrency: u32, warnings: Vec<Warning>, reported: ReportedFigures) -> Cell {
    Cell {
        prompt_tokens: Some(context),
        warnings,
        reported: Some(reported),
        ..Cell::new(Phase::Decode, context, concurrency, Status::Valid)
    }
}

/// A fixed-count run's settings: one context, the cells' concurrencies, the longest
/// duration.
pub fn settings(context: u32, cells: &[Cell], duration: f64, max_output: u64) -> RunSettings {
    let mut concurrency: Vec<u32> = cells.iter().map(|c| c.concurrency).collect();
    concurrency.sort_unstable();
    // Repetitions of a cell share its concurrency.
    concurrency.dedup();
    RunSettings {
        contexts: vec![context],
        concurrency,
        prefill_contexts: vec![],
        duration_s: if duration > 0.0 { duration } else { 1.0 },
        max_output_tokens: u32::try_from(max_output).unwrap_or(u32::MAX),
        decode_test: DecodeTest::FixedCount,
        prefill_mode: PrefillMode::Standalone,
        api: None,
        kv_budget_tokens: None,
        kv_budget_source: None,
        repeat: None,
        prefill_samples: None,
        prefix_reuse_pct: None,
        turns: None,
    }
}

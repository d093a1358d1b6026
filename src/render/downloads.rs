//! A run's cells as machine-readable downloads next to its page: `cells.csv.gz` (one row a
//! cell, figures in plain units) and `cells.json` (the normalized cells with their figures, published gzipped as
//! `cells.json.gz`).

use std::borrow::Cow;

use serde::Serialize;

use crate::analysis::figures::FigureValue;
use crate::analysis::{CellView, Figures, RunView};
use crate::format::CapacityUnit;

/// The columns before and after the figures (which come from `Figures::columns`).
const LEADING_COLUMNS: &[&str] = &["phase", "context", "prompt_tokens", "concurrency", "status", "source"];
const TRAILING_COLUMNS: &[&str] = &["warnings", "detail"];

fn figure_text(v: Option<FigureValue>) -> String {
    match v {
        Some(FigureValue::Rate(x)) => significant(x).to_string(),
        Some(FigureValue::Count(n)) => n.to_string(),
        None => String::new(),
    }
}

/// A field a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, tab or
/// CR; OWASP's rule) gets a leading `'`; numbers such as `-1.5` stay numbers.
pub fn neutralise_formula(s: &str) -> Cow<'_, str> {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']) && s.parse::<f64>().map_or(true, |v| !v.is_finite());
    if formula {
        format!("'{s}").into()
    } else {
        s.into()
    }
}

/// Every CSV download: RFC 4180 (the `csv` crate quotes a field only when it must), a
/// header row, rows padded to the header's width, no field able to start a formula.
pub struct CsvWriter {
    out: csv::Writer<Vec<u8>>,
    width: usize,
}

impl CsvWriter {
    pub fn new(columns: &[&str]) -> CsvWriter {
        let out = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
        let mut w = CsvWriter { out, width: columns.len() };
        w.row(columns.iter().map(|c| c.to_string()).collect());
        w
    }

    pub fn row(&mut self, mut fields: Vec<String>) {
        fields.resize(self.width.max(fields.len()), String::new());
        let fields = fields.iter().map(|f| neutralise_formula(f));
        self.out.write_record(fields.map(|f| f.into_owned())).expect("writing to memory");
    }

    pub fn finish(self) -> String {
        let bytes = self.out.into_inner().expect("writing to memory");
        String::from_utf8(bytes).expect("fields are UTF-8")
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The words that explain a non-valid cell.
pub fn cell_detail(c: &CellView) -> String {
    if let Some(o) = &c.over_capacity {
        if o.rule == crate::format::CapacityRule::ServerQueue {
            // The viewer reads the leading "measured" as a cell that ran.
            let most = o.budget_tokens.map(|b| format!(" (at most {b} ran at once)")).unwrap_or_default();
            return format!(
                "measured the server keeping some of the {} streams waiting through the whole window{most}: the figures are not of {} at once",
                o.required_tokens, o.required_tokens
            );
        }
        match (o.rule.unit(), o.budget_tokens) {
            (CapacityUnit::Requests, Some(b)) => {
                format!("{}: {} requests at once, the server has {} slots", o.rule, o.required_tokens, b)
            }
            (CapacityUnit::Requests, None) => format!("{}: {} requests at once", o.rule, o.required_tokens),
            (CapacityUnit::Tokens, Some(b)) => format!("{}: needs {} tokens, budget {}", o.rule, o.required_tokens, b),
            (CapacityUnit::Tokens, None) => format!("{}: needs {} tokens", o.rule, o.required_tokens),
        }
    } else if let Some(e) = &c.error {
        e.message.clone()
    } else if let Some(l) = &c.loop_finding {
        match (l.period_chars, l.repeated_chars) {
            (Some(p), Some(r)) => {
                format!("output repeated with a period of {p} characters over {r} characters")
            }
            _ => "output repeated itself".to_string(),
        }
    } else {
        String::new()
    }
}

pub fn cells_csv(run: &RunView) -> String {
    let figure_columns = Figures::default().columns().map(|(name, _)| name);
    let columns: Vec<&str> = LEADING_COLUMNS.iter().chain(&figure_columns).chain(TRAILING_COLUMNS).copied().collect();
    let mut csv = CsvWriter::new(&columns);
    for c in run.prefill.iter().chain(&run.decode) {
        let mut row = vec![
            c.phase.as_str().to_string(),
            c.context.to_string(),
            opt(c.prompt_tokens),
            c.concurrency.to_string(),
            c.status.as_str().to_string(),
            c.source.as_str().to_string(),
        ];
        row.extend(c.figures.columns().map(|(_, v)| figure_text(v)));
        let warnings: Vec<&str> = c.warnings.iter().map(|w| w.code.as_str()).collect();
        row.extend([warnings.join(";"), cell_detail(c)]);
        csv.row(row);
    }
    csv.finish()
}

/// Every request of a rate run's cells, one row each in schedule order, warm-up included
/// (`in_window` false): what each rate cell's figures are counted from. Instants in seconds
/// from the cell's window start, durations in milliseconds to the microsecond.
pub fn requests_csv(run: &RunView) -> String {
    const COLUMNS: &[&str] = &[
        "context",
        "rate_rps",
        "repetition",
        "request",
        "scheduled_s",
        "in_window",
        "outcome",
        "lag_ms",
        "ttft_ms",
        "tbt_ms",
        "e2e_ms",
        "output_tokens",
        "prompt_tokens",
        "cached_tokens",
        "trace_s",
        "planned_input_tokens",
        "planned_output_tokens",
        "error",
    ];
    let mut csv = CsvWriter::new(COLUMNS);
    let micro = |x: Option<f64>| x.map(|v| format!("{:.3}", v)).unwrap_or_default();
    for r in &run.rates {
        for (i, q) in r.requests.iter().enumerate() {
            let outcome = match q.outcome {
                crate::analysis::rates::RequestOutcome::Completed => "completed",
                crate::analysis::rates::RequestOutcome::Failed => "failed",
                crate::analysis::rates::RequestOutcome::NotSent => "not_sent",
            };
            csv.row(vec![
                r.context.to_string(),
                r.rate_rps.to_string(),
                r.repetition.to_string(),
                (i + 1).to_string(),
                format!("{:.6}", q.scheduled_s),
                q.in_window.to_string(),
                outcome.to_string(),
                micro(q.lag_ms),
                micro(q.ttft_ms),
                micro(q.tbt_ms),
                micro(q.e2e_ms),
                q.output_tokens.to_string(),
                opt(q.prompt_tokens),
                opt(q.cached_tokens),
                q.planned.map(|p| format!("{:.6}", p.trace_s)).unwrap_or_default(),
                opt(q.planned.map(|p| p.input_tokens)),
                opt(q.planned.map(|p| p.output_tokens)),
                q.error.clone().unwrap_or_default(),
            ]);
        }
    }
    csv.finish()
}

#[derive(Serialize)]
struct CellsDownload<'a> {
    run: &'a str,
    model: &'a str,
    engine: &'a str,
    engine_version: &'a str,
    hardware: &'a str,
    hardware_count: u32,
    cells: Vec<&'a CellView>,
    /// The run's capacity under each SLO and context, with its interactivity levels.
    capacity: &'a crate::analysis::capacity::RunCapacity,
}

pub fn cells_json(run: &RunView, capacity: &crate::analysis::capacity::RunCapacity) -> String {
    let doc = CellsDownload {
        run: &run.id,
        model: &run.manifest.model.id,
        engine: &run.manifest.engine.name,
        engine_version: &run.manifest.engine.version,
        hardware: &run.manifest.hardware.device,
        hardware_count: run.manifest.hardware.count,
        cells: run.prefill.iter().chain(&run.decode).collect(),
        capacity,
    };
    // Compact: a download for programs (a browser's viewer indents it for a reader), and
    // a third smaller than indented at 10,000 runs' worth of cells; every figure to six
    // significant digits (no measurement here has more), not the 17 a float prints.
    let mut value = serde_json::to_value(&doc).expect("download types always serialize");
    round_numbers(&mut value);
    let mut json = value.to_string();
    json.push('\n');
    json
}

/// Every fractional number in `v` to `SIGNIFICANT` digits; integers stay as they are.
pub fn round_numbers(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(x) = n.as_f64().map(significant).and_then(serde_json::Number::from_f64) {
                *n = x;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(round_numbers),
        Value::Object(map) => map.values_mut().for_each(round_numbers),
        _ => {}
    }
}

/// Digits a download keeps of a figure.
const SIGNIFICANT: i32 = 6;

/// `x` to `SIGNIFICANT` significant digits.
pub fn significant(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let shift = SIGNIFICANT - 1 - x.abs().log10().floor() as i32;
    if shift >= 0 {
        let m = 10f64.powi(shift);
        (x * m).round() / m
    } else {
        let m = 10f64.powi(-shift);
        (x / m).round() * m
    }
}

#[cfg(test)]
mod tests {
    use super::CsvWriter;

    fn csv_field(s: &str) -> String {
        let mut w = CsvWriter::new(&["x"]);
        w.row(vec![s.to_string()]);
        w.finish().strip_prefix("x\n").unwrap().strip_suffix('\n').unwrap().to_string()
    }

    #[test]
    fn figures_keep_six_significant_digits() {
        use super::significant;
        assert_eq!(significant(1555.515197166065), 1555.52);
        assert_eq!(significant(2.7970827173267908e-05), 2.79708e-5);
        assert_eq!(significant(123_456_789.0), 123_457_000.0);
        assert_eq!(significant(-0.5), -0.5);
        assert_eq!(significant(0.0), 0.0);
        assert_eq!(format!("{}", significant(0.1 + 0.2)), "0.3");
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        for (formula, safe) in [
            ("=HYPERLINK(\"http://x\")", "\"'=HYPERLINK(\"\"http://x\"\")\""),
            ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "\"'\r=1\""),
            ("-inf", "'-inf"),
        ] {
            assert_eq!(csv_field(formula), safe, "{formula:?}");
        }
        for number in ["-1.5", "+3", "-0", "1e5"] {
            assert_eq!(csv_field(number), number);
        }
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}

//! Production request traces, read into one shape: each request's arrival (seconds from the
//! trace's first), its input and output token counts and, where the trace has them, the ids
//! of its prompt's blocks (equal ids are equal blocks of text: the trace's prefix sharing).
//! The formats of the field: Mooncake (JSON lines, ms, 512-token blocks), Alibaba Bailian
//! (JSON lines, s, 16-token blocks, sessions by parent chat), BurstGPT (CSV, s) and the Azure
//! LLM inference traces (CSV, date-times). Every line is checked; an error names the file,
//! the line and the field.

use std::path::Path;
use std::str::FromStr;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

/// Largest trace file read (a day of a busy service fits).
pub const MAX_TRACE_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// Longest line (a request's block list included).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Most tokens a request's input or output may have.
pub const MAX_TOKENS: u64 = 10_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    Mooncake,
    Bailian,
    BurstGpt,
    Azure,
}

impl TraceFormat {
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Bailian => "bailian",
            TraceFormat::BurstGpt => "burstgpt",
            TraceFormat::Azure => "azure",
        }
    }

    /// Tokens a block id stands for.
    pub fn block_tokens(self) -> Option<u32> {
        match self {
            TraceFormat::Mooncake => Some(512),
            TraceFormat::Bailian => Some(16),
            TraceFormat::BurstGpt | TraceFormat::Azure => None,
        }
    }

    /// The format a trace's first line says: JSON with `chat_id` (Bailian) or `hash_ids`
    /// (Mooncake); a CSV header with `Request tokens` (BurstGPT) or `ContextTokens` (Azure).
    pub fn detect(first_line: &str) -> Option<TraceFormat> {
        let line = first_line.trim_start_matches('\u{feff}').trim();
        if line.starts_with('{') {
            let v: Value = serde_json::from_str(line).ok()?;
            return match (v.get("chat_id"), v.get("hash_ids")) {
                (Some(_), _) => Some(TraceFormat::Bailian),
                (None, Some(_)) => Some(TraceFormat::Mooncake),
                _ => None,
            };
        }
        if line.contains("Request tokens") {
            Some(TraceFormat::BurstGpt)
        } else if line.contains("ContextTokens") {
            Some(TraceFormat::Azure)
        } else {
            None
        }
    }
}

impl FromStr for TraceFormat {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<TraceFormat> {
        [TraceFormat::Mooncake, TraceFormat::Bailian, TraceFormat::BurstGpt, TraceFormat::Azure]
            .into_iter()
            .find(|f| f.name() == s.trim())
            .ok_or_else(|| anyhow!("{s:?} is not a trace format (mooncake, bailian, burstgpt, azure)"))
    }
}

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Seconds from the trace's first request.
    pub at_s: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The prompt's block ids, in order (empty where the trace has none).
    pub blocks: Vec<u64>,
    /// Bailian: the request's chat and the chat it follows.
    pub chat: Option<(u64, Option<u64>)>,
}

/// A trace read whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub format: TraceFormat,
    pub requests: Vec<TraceRequest>,
}

impl Trace {
    /// From the first request to the last, in seconds.
    pub fn span_s(&self) -> f64 {
        self.requests.last().map_or(0.0, |r| r.at_s)
    }
}

/// Reads the trace at `path` (`format`, or told from its first line).
pub fn read(path: &Path, format: Option<TraceFormat>) -> Result<Trace> {
    let mut lines: Vec<(usize, String)> = Vec::new();
    crate::fsutil::for_each_line(path, MAX_TRACE_BYTES, MAX_LINE_BYTES, |n, l| {
        if !l.trim().is_empty() {
            lines.push((n, l.to_string()));
        }
    })?;
    parse(&path.display().to_string(), &lines, format)
}

/// The trace of `lines` (line number, text) of the file called `name`.
pub fn parse(name: &str, lines: &[(usize, String)], format: Option<TraceFormat>) -> Result<Trace> {
    let Some((_, first)) = lines.first() else { bail!("{name}: the trace is empty") };
    let format = match format {
        Some(f) => f,
        None => TraceFormat::detect(first).ok_or_else(|| {
            anyhow!("{name}:1: not a trace format this build reads (Mooncake or Bailian JSON lines, a BurstGPT or Azure CSV); pass --trace-format")
        })?,
    };
    let rows: Vec<(usize, Raw)> = match format {
        TraceFormat::Mooncake | TraceFormat::Bailian => lines
            .iter()
            .map(|(n, l)| Ok((*n, json_line(l, format).with_context(|| format!("{name}:{n}"))?)))
            .collect::<Result<_>>()?,
        TraceFormat::BurstGpt | TraceFormat::Azure => csv_rows(name, lines, format)?,
    };
    let mut requests = Vec::with_capacity(rows.len());
    let mut last = f64::NEG_INFINITY;
    for (n, raw) in rows {
        if raw.at_s < last {
            bail!(
                "{name}:{n}: timestamp: {} comes before the line above's {} (a trace is in time order)",
                raw.at_s,
                last
            );
        }
        last = raw.at_s;
        if let Some(b) = format.block_tokens().filter(|b| raw.blocks.len() as u64 > raw.input.div_ceil(*b as u64)) {
            bail!(
                "{name}:{n}: hash_ids: {} blocks of {b} tokens is more than an input of {} tokens holds",
                raw.blocks.len(),
                raw.input
            );
        }
        requests.push(TraceRequest {
            at_s: raw.at_s,
            input_tokens: raw.input,
            output_tokens: raw.output,
            blocks: raw.blocks,
            chat: raw.chat,
        });
    }
    let start = requests.first().map_or(0.0, |r| r.at_s);
    for r in &mut requests {
        r.at_s -= start;
    }
    Ok(Trace { format, requests })
}

/// A line's fields before the checks across lines.
struct Raw {
    at_s: f64,
    input: u64,
    output: u64,
    blocks: Vec<u64>,
    chat: Option<(u64, Option<u64>)>,
}

fn json_line(line: &str, format: TraceFormat) -> Result<Raw> {
    let v: Value = serde_json::from_str(line).map_err(|e| anyhow!("column {}: not JSON ({e})", e.column()))?;
    let number = |field: &str| -> Result<f64> {
        let x = v.get(field).ok_or_else(|| anyhow!("{field}: missing"))?;
        x.as_f64().filter(|x| x.is_finite()).ok_or_else(|| anyhow!("{field}: expected a number, found {x}"))
    };
    let timestamp = number("timestamp")?;
    if timestamp < 0.0 {
        bail!("timestamp: {timestamp} is negative");
    }
    let at_s = if format == TraceFormat::Mooncake { timestamp / 1000.0 } else { timestamp };
    let blocks = match v.get("hash_ids") {
        None => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| id.as_u64().ok_or_else(|| anyhow!("hash_ids: expected whole numbers, found {id}")))
            .collect::<Result<_>>()?,
        Some(other) => bail!("hash_ids: expected a list of block ids, found {other}"),
    };
    let chat = if format == TraceFormat::Bailian {
        let id = |field: &str| v.get(field).and_then(Value::as_i64);
        let chat = id("chat_id").filter(|c| *c >= 0).ok_or_else(|| anyhow!("chat_id: expected a whole number"))?;
        Some((chat as u64, id("parent_chat_id").filter(|p| *p >= 0).map(|p| p as u64)))
    } else {
        None
    };
    Ok(Raw {
        at_s,
        input: tokens("input_length", number("input_length")?)?,
        output: tokens("output_length", number("output_length")?)?,
        blocks,
        chat,
    })
}

/// A token count: whole, above 0, at most [`MAX_TOKENS`].
fn tokens(field: &str, x: f64) -> Result<u64> {
    if !(x >= 1.0 && x.fract() == 0.0 && x <= MAX_TOKENS as f64) {
        bail!("{field}: expected a whole number of tokens from 1 to {MAX_TOKENS}, found {x}");
    }
    Ok(x as u64)
}

/// BurstGPT (`Timestamp` in seconds, `Request tokens`, `Response tokens`) and Azure
/// (`TIMESTAMP` date-times, `ContextTokens`, `GeneratedTokens`).
fn csv_rows(name: &str, lines: &[(usize, String)], format: TraceFormat) -> Result<Vec<(usize, Raw)>> {
    let text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(text.as_bytes());
    let headers = reader.headers().with_context(|| format!("{name}:{}", lines[0].0))?.clone();
    let (time, input, output) = match format {
        TraceFormat::BurstGpt => ("Timestamp", "Request tokens", "Response tokens"),
        _ => ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    };
    let column =
        |h: &str| headers.iter().position(|x| x == h).ok_or_else(|| anyhow!("{name}:{}: no {h:?} column", lines[0].0));
    let (ti, ii, oi) = (column(time)?, column(input)?, column(output)?);
    let mut out = Vec::new();
    for (k, record) in reader.records().enumerate() {
        let n = lines.get(k + 1).map_or(k + 2, |l| l.0);
        let record = record.with_context(|| format!("{name}:{n}"))?;
        let field = |i: usize, h: &str| record.get(i).ok_or_else(|| anyhow!("{name}:{n}: {h}: missing"));
        let count = |i: usize, h: &str| -> Result<u64> {
            let text = field(i, h)?;
            let x: f64 = text.parse().map_err(|_| anyhow!("{name}:{n}: {h}: expected a number, found {text:?}"))?;
            tokens(h, x).with_context(|| format!("{name}:{n}"))
        };
        let stamp = field(ti, time)?;
        let at_s = match format {
            TraceFormat::BurstGpt => stamp
                .parse::<f64>()
                .ok()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| anyhow!("{name}:{n}: {time}: expected seconds from 0, found {stamp:?}"))?,
            _ => azure_seconds(stamp).ok_or_else(|| {
                anyhow!(
                    "{name}:{n}: {time}: expected a date and time such as 2023-11-16 18:15:46.6805900, found {stamp:?}"
                )
            })?,
        };
        out.push((
            n,
            Raw { at_s, input: count(ii, input)?, output: count(oi, output)?, blocks: Vec::new(), chat: None },
        ));
    }
    Ok(out)
}

/// An Azure trace's `2023-11-16 18:15:46.6805900` as seconds since the epoch (UTC).
fn azure_seconds(text: &str) -> Option<f64> {
    let dt: jiff::civil::DateTime = text.trim().replacen(' ', "T", 1).parse().ok()?;
    let ts = dt.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
    Some(ts.as_second() as f64 + f64::from(ts.subsec_nanosecond()) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<(usize, String)> {
        text.lines().enumerate().map(|(i, l)| (i + 1, l.to_string())).collect()
    }

    fn error(text: &str, format: Option<TraceFormat>) -> String {
        format!("{:#}", parse("t.jsonl", &lines(text), format).expect_err("refused"))
    }

    #[test]
    fn a_slice_of_the_real_mooncake_trace_reads_whole() {
        // Its first 300 lines: 102 s of a chat service, 4,269,971 input tokens in all, every
        // request starting with block 0 (the service's shared system prompt).
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/mooncake-conversation-head.jsonl");
        let trace = read(&path, None).unwrap();
        assert_eq!((trace.format, trace.requests.len(), trace.span_s()), (TraceFormat::Mooncake, 300, 102.0));
        assert_eq!(trace.requests.iter().map(|r| r.input_tokens).sum::<u64>(), 4_269_971);
        assert!(trace.requests.iter().all(|r| r.blocks[0] == 0));
    }

    #[test]
    fn each_format_is_told_from_its_first_line_and_read_to_seconds() {
        let moon = "{\"timestamp\": 1500, \"input_length\": 1024, \"output_length\": 8, \"hash_ids\": [1, 2]}\n{\"timestamp\": 2500, \"input_length\": 600, \"output_length\": 3, \"hash_ids\": [1, 9]}";
        let t = parse("m", &lines(moon), None).unwrap();
        assert_eq!(t.format, TraceFormat::Mooncake);
        assert_eq!(t.requests[1].at_s, 1.0);
        assert_eq!(t.requests[0].blocks, vec![1, 2]);
        let bailian = "{\"chat_id\": 5, \"parent_chat_id\": -1, \"timestamp\": 10.5, \"input_length\": 40, \"output_length\": 7, \"type\": \"text\", \"turn\": 1, \"hash_ids\": [3, 4, 5]}\n{\"chat_id\": 6, \"parent_chat_id\": 5, \"timestamp\": 12, \"input_length\": 90, \"output_length\": 2, \"type\": \"text\", \"turn\": 2, \"hash_ids\": [3, 4, 5, 6, 7, 8]}";
        let t = parse("b", &lines(bailian), None).unwrap();
        assert_eq!(t.format, TraceFormat::Bailian);
        assert_eq!((t.requests[0].chat, t.requests[1].chat), (Some((5, None)), Some((6, Some(5)))));
        assert_eq!(t.requests[1].at_s, 1.5);
        let burst = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n7.5,GPT-4,1000,200,1200,API log";
        let t = parse("g.csv", &lines(burst), None).unwrap();
        assert_eq!((t.format, t.requests[1].at_s, t.requests[1].input_tokens), (TraceFormat::BurstGpt, 2.5, 1000));
        let azure = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109";
        let t = parse("a.csv", &lines(azure), None).unwrap();
        assert_eq!(t.format, TraceFormat::Azure);
        assert!((t.requests[1].at_s - 4.314579).abs() < 1e-6, "{}", t.requests[1].at_s);
    }

    #[test]
    fn bad_lines_are_refused_naming_file_line_and_field() {
        let ok = "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 8, \"hash_ids\": [1, 2]}";
        let with = |second: &str| format!("{ok}\n{second}");
        let cases = [
            (
                with("{\"timestamp\": -5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": []}"),
                "t.jsonl:2: timestamp: -5 is negative",
            ),
            (
                format!("{{\"timestamp\": 900, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": []}}\n{ok}"),
                "t.jsonl:2: timestamp: 0 comes before",
            ),
            (
                with("{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}"),
                "t.jsonl:2: input_length: expected a whole number of tokens",
            ),
            (
                with("{\"timestamp\": 1, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}"),
                "t.jsonl:2: hash_ids: 3 blocks of 512 tokens",
            ),
            (with("{\"timestamp\": 1, \"input_length\": 6"), "t.jsonl:2: column"),
            (
                with("{\"timestamp\": \"soon\", \"input_length\": 6, \"output_length\": 1}"),
                "t.jsonl:2: timestamp: expected a number",
            ),
        ];
        for (text, said) in cases {
            let e = error(&text, None);
            assert!(e.contains(said), "{e}\nexpected: {said}");
        }
        assert!(error("hello,world\n1,2", None).contains("not a trace format"));
        assert!(error("", None).contains("the trace is empty"));
        assert!("json".parse::<TraceFormat>().is_err());
    }
}

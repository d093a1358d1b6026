//! JSON reading with errors in the `path:line:col: message` form editors understand.

use std::path::Path;

use anyhow::{anyhow, Error};
use serde::de::DeserializeOwned;

/// Parses `text` (the contents of `path`) as `T`; a failure names the file, line and column.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| located(path, &e))
}

/// Turns a serde_json error into `path:line:col: message` (without serde's own
/// "at line L column C" suffix, which would say it twice).
pub fn located(path: &Path, e: &serde_json::Error) -> Error {
    let full = e.to_string();
    let message = match full.rsplit_once(" at line ") {
        Some((head, _)) => head.to_string(),
        None => full,
    };
    anyhow!("{}:{}:{}: {}", path.display(), e.line(), e.column(), message)
}

/// Serializes `value` as pretty JSON with a trailing newline (the form producers write).
pub fn to_pretty<T: serde::Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("data types always serialize");
    s.push('\n');
    s
}

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

/// Parses JSON as Python writes it: the bare tokens `Infinity`, `-Infinity` and `NaN`
/// (outside strings) are read as `null`, a missing value. Each is replaced in place by
/// `null` padded with spaces (a `NaN` takes the space before it), so a real syntax error
/// keeps its line and column.
pub fn parse_python<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, Error> {
    parse(path, &python_floats_as_null(text))
}

pub fn python_floats_as_null(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(token) = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t)) {
            // `NaN` is shorter than `null`: it takes the space Python writes before it.
            if token.len() < 4 && out.ends_with(' ') {
                out.pop();
            }
            out.push_str("null");
            out.push_str(&" ".repeat(token.len().saturating_sub(4)));
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Serializes `value` as pretty JSON with a trailing newline (the form producers write).
pub fn to_pretty<T: serde::Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("data types always serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_floats_become_null_and_errors_keep_their_place() {
        let v: serde_json::Value =
            parse_python(Path::new("f"), r#"{"a": Infinity, "b": [NaN, -Infinity], "c": "NaN Infinity"}"#).unwrap();
        assert_eq!(v, serde_json::json!({"a": null, "b": [null, null], "c": "NaN Infinity"}));
        let e = parse_python::<serde_json::Value>(Path::new("f"), "{\"a\": Infinity,\n \"n\": NaN, \"b\": tru}")
            .unwrap_err();
        assert_eq!(e.to_string(), "f:2:20: expected ident", "where serde_json sees it in the original");
    }
}

//! JSON reading with errors in the `path:line:col: message` form editors understand.

use std::path::Path;

use anyhow::{anyhow, Error};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses `text` (the contents of `path`) as `T`; a failure names the file, line and column.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| located(path, &e))
}

/// Parses a large document of another tool, keeping each string to its first
/// [`MAX_KEPT_STRING`] bytes and leaving out the values of the keys in `skip` wherever they
/// are: the bulk of such files is prompts, generated texts and per-request detail no figure
/// reads, and a document held whole would take several times its size.
pub fn parse_lean(path: &Path, text: &str, skip: &[&str]) -> Result<Value, Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = serde::de::DeserializeSeed::deserialize(Lean { skip }, &mut de).and_then(|v| de.end().map(|()| v));
    v.map_err(|e| located(path, &e))
}

/// [`parse_lean`], with Python's `NaN` and `Infinity` read as `null`.
pub fn parse_python_lean(path: &Path, text: &str) -> Result<Value, Error> {
    parse_lean(path, &python_floats_as_null(text), &[])
}

/// The longest string [`parse_lean`] keeps whole.
pub const MAX_KEPT_STRING: usize = 4096;

#[derive(Clone, Copy)]
struct Lean<'a> {
    skip: &'a [&'a str],
}

impl<'de> serde::de::DeserializeSeed<'de> for Lean<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Lean<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        let mut end = v.len().min(MAX_KEPT_STRING);
        while !v.is_char_boundary(end) {
            end -= 1;
        }
        Ok(Value::String(v[..end].to_string()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if self.skip.contains(&k.as_str()) {
                map.next_value::<serde::de::IgnoredAny>()?;
            } else {
                let v = map.next_value_seed(self)?;
                out.insert(k, v);
            }
        }
        Ok(Value::Object(out))
    }
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
    let value = serde_json::to_value(value).expect("data types always serialize");
    let mut s = String::new();
    write_pretty(&value, 0, &mut s);
    s.push('\n');
    s
}

/// Objects a key a line (as `serde_json::to_string_pretty`), but an array of plain values on
/// one line: a cell's columns (schema 3) are a line each, not a value a line.
fn write_pretty(v: &Value, depth: usize, out: &mut String) {
    let indent = |out: &mut String, d: usize| out.extend(std::iter::repeat_n("  ", d));
    match v {
        Value::Object(map) if !map.is_empty() => {
            out.push_str("{\n");
            for (i, (k, x)) in map.iter().enumerate() {
                indent(out, depth + 1);
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_pretty(x, depth + 1, out);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            indent(out, depth);
            out.push('}');
        }
        Value::Array(items) if items.iter().any(|x| x.is_object() || x.is_array()) => {
            out.push_str("[\n");
            for (i, x) in items.iter().enumerate() {
                indent(out, depth + 1);
                write_pretty(x, depth + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            indent(out, depth);
            out.push(']');
        }
        // Plain values, empty objects and arrays of plain values: on one line.
        _ => out.push_str(&v.to_string()),
    }
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

    #[test]
    fn lean_documents_keep_numbers_cut_strings_and_skip_keys() {
        let long = "é".repeat(MAX_KEPT_STRING);
        let text = format!(
            r#"{{"a": [1, -2, 0.5, null, true], "s": "{long}", "output": {{"x": 1}}, "b": {{"output": 2, "c": 3}}}}"#
        );
        let v = parse_lean(Path::new("f.json"), &text, &["output"]).unwrap();
        assert_eq!(v["a"], serde_json::json!([1, -2, 0.5, null, true]));
        assert_eq!(v["s"].as_str().unwrap().len(), MAX_KEPT_STRING);
        assert!(v.get("output").is_none() && v["b"].get("output").is_none());
        assert_eq!(v["b"]["c"], 3);
        let e = parse_lean(Path::new("f.json"), "{\"a\": 1} x", &[]).unwrap_err().to_string();
        assert!(e.starts_with("f.json:1:"), "{e}");
    }
}

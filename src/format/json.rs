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
    located_at(path, e.line(), e)
}

/// A JSON error of a document that starts at line `line` of `path` (a line of a cells
/// file), as `path:line:column: message`.
pub fn located_at(path: &Path, line: usize, e: &serde_json::Error) -> Error {
    let full = e.to_string();
    let message = full.rsplit_once(" at line ").map_or(full.as_str(), |(head, _)| head);
    anyhow!("{}:{line}:{}: {message}", path.display(), e.column())
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
    let pretty = serde_json::to_string_pretty(value).expect("data types always serialize");
    let mut s = inline_plain_arrays(&pretty);
    s.push('\n');
    s
}

/// `serde_json`'s pretty text with every array of plain values (numbers, strings, booleans,
/// nulls) on one line: a cell's columns (schema 3) are a line each, not a value a line.
/// Pretty output puts one value a line and escapes newlines inside strings, so a line that
/// ends in `[` opens an array, and an item line that starts with neither `{` nor `[` is a
/// plain value.
fn inline_plain_arrays(pretty: &str) -> String {
    let lines: Vec<&str> = pretty.lines().collect();
    let mut out = String::with_capacity(pretty.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.ends_with('[') {
            let items: Vec<&str> =
                lines[i + 1..].iter().map(|l| l.trim()).take_while(|l| !(*l == "]" || *l == "],")).collect();
            let close = lines.get(i + 1 + items.len()).map(|l| l.trim());
            if close.is_some() && items.iter().all(|l| !(l.starts_with('{') || l.starts_with('['))) {
                out.push_str(line);
                out.push_str(&items.concat());
                out.push_str(close.unwrap_or("]"));
                out.push('\n');
                i += items.len() + 2;
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
        i += 1;
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_of_plain_values_go_on_one_line_and_the_rest_stays_pretty() {
        let v = serde_json::json!({"b": [1, 2.5, null], "a": [{"x": ["[", "]"]}], "e": [], "s": "ends with ["});
        let text = to_pretty(&v);
        assert_eq!(
            text,
            "{\n  \"a\": [\n    {\n      \"x\": [\"[\",\"]\"]\n    }\n  ],\n  \"b\": [1,2.5,null],\n  \"e\": [],\n  \"s\": \"ends with [\"\n}\n"
        );
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
    }

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

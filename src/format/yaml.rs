//! YAML documents other tools write (inference-perf's `config.yaml`), read into the same
//! `serde_json::Value` the JSON formats are read into. The parser (serde-saphyr) never
//! panics and bounds what a hostile document may expand to (aliases, depth).

use std::path::Path;

use anyhow::{anyhow, Result};
use serde_json::Value;

/// Parses `text` (read from `path`) as one YAML document; an error names the file, its line
/// and column.
pub fn parse(path: &Path, text: &str) -> Result<Value> {
    // `.inf` and `.nan` (an llm-d report's unbounded `concurrency: .inf`) have no JSON
    // number: they read as the strings YAML spells them with.
    let options = serde_saphyr::options! { non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::AsString };
    serde_saphyr::from_str_with_options::<Value>(text, options).map_err(|e| {
        // The error's first line is `line L column C: what`; the rest is a drawing of the place.
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        let first = first.strip_prefix("error: ").unwrap_or(first);
        // The parser's advice for several documents names its own API; say what to do.
        if first.contains("from_str_multiple") || first.contains("multiple documents") {
            let place = first
                .split(':')
                .next()
                .filter(|p| p.starts_with("line "))
                .map(|p| format!("{p}: "))
                .unwrap_or_default();
            return anyhow!("{}: {place}more than one YAML document (`---`): give one document a file", path.display());
        }
        anyhow!("{}: {first}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_reads_as_json_values_and_an_error_names_its_place() {
        let v = parse(Path::new("c.yaml"), "server:\n  model_name: smollm2\n  port: 8000\n").unwrap();
        assert_eq!(v.pointer("/server/model_name").and_then(Value::as_str), Some("smollm2"));
        assert_eq!(v.pointer("/server/port").and_then(Value::as_u64), Some(8000));
        let e = parse(Path::new("c.yaml"), "a: [1, 2\nb: c: d\n").unwrap_err().to_string();
        assert!(e.starts_with("c.yaml: line 2 column 2:"), "{e}");
        let e = parse(Path::new("c.yaml"), "a: 1\n---\nb: 2\n").unwrap_err().to_string();
        assert!(e.contains("more than one YAML document") && !e.contains("from_str"), "{e}");
        let inf = parse(Path::new("c.yaml"), "concurrency: .inf\n").unwrap();
        assert_eq!(inf["concurrency"], ".inf");
    }
}

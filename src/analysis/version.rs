//! Engine versions in release order: `0.10.0` after `0.9.1`, `b4567` after `b987`, a
//! pre-release (`0.10.0rc1`) before its release. Engines number releases in several ways
//! (semver, llama.cpp build numbers, a leading `v`), so this compares runs of digits as
//! numbers and the rest as text rather than requiring semver.

use std::cmp::Ordering;

#[derive(Debug, PartialEq, Eq)]
enum Part<'a> {
    Number(u64),
    Text(&'a str),
}

fn parts(version: &str) -> Vec<Part<'_>> {
    let v = version.trim();
    let v = v.strip_prefix(['v', 'V']).filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit())).unwrap_or(v);
    let mut out = Vec::new();
    let mut rest = v;
    while let Some(c) = rest.chars().next() {
        let digit = c.is_ascii_digit();
        let end = rest.find(|ch: char| ch.is_ascii_digit() != digit).unwrap_or(rest.len());
        let (token, tail) = rest.split_at(end);
        match digit {
            // Digits beyond u64 are compared as the largest number: no engine numbers so.
            true => out.push(Part::Number(token.parse().unwrap_or(u64::MAX))),
            false => {
                let t = token.trim_matches(['.', '-', '_', '+']);
                if !t.is_empty() {
                    out.push(Part::Text(t));
                }
            }
        }
        rest = tail;
    }
    out
}

/// Release order of two version strings; equal only when they read the same.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let (pa, pb) = (parts(a), parts(b));
    for i in 0..pa.len().max(pb.len()) {
        let ord = match (pa.get(i), pb.get(i)) {
            (Some(Part::Number(x)), Some(Part::Number(y))) => x.cmp(y),
            (Some(Part::Text(x)), Some(Part::Text(y))) => x.to_ascii_lowercase().cmp(&y.to_ascii_lowercase()),
            // A number where the other has text: `1.0.1` is after `1.0rc1`.
            (Some(Part::Number(_)), Some(Part::Text(_))) => Ordering::Greater,
            (Some(Part::Text(_)), Some(Part::Number(_))) => Ordering::Less,
            // One ended: trailing text is a pre-release (before), a trailing number a later
            // release (after).
            (Some(Part::Text(_)), None) => Ordering::Less,
            (None, Some(Part::Text(_))) => Ordering::Greater,
            (Some(Part::Number(_)), None) => Ordering::Greater,
            (None, Some(Part::Number(_))) => Ordering::Less,
            (None, None) => Ordering::Equal,
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut v: Vec<&str>) -> Vec<&str> {
        v.sort_by(|a, b| compare_versions(a, b));
        v
    }

    #[test]
    fn release_order() {
        assert_eq!(
            sorted(vec!["0.10.0", "0.9.1", "0.9", "v0.11.2", "0.10.0rc1"]),
            ["0.9", "0.9.1", "0.10.0rc1", "0.10.0", "v0.11.2"]
        );
        assert_eq!(sorted(vec!["b4567", "b987", "b10000"]), ["b987", "b4567", "b10000"]);
        assert_eq!(sorted(vec!["1.0.0-dev", "1.0.0", "0.99"]), ["0.99", "1.0.0-dev", "1.0.0"]);
        assert_eq!(compare_versions("0.29.0", "v0.29.0"), Ordering::Less, "same release, told apart by text");
        assert_eq!(compare_versions("unknown", "unknown"), Ordering::Equal);
    }
}

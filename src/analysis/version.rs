//! Engine versions in release order, by the rules of the scheme both versions follow:
//! PEP 440 where both read as one (vLLM and SGLang are Python packages: `0.6.1` before
//! `0.6.1.post1`, `0.7.0rc1` and `0.7.0.dev3` before `0.7.0`, a local `+cu121` after its
//! public version), else SemVer (`1.2.0-beta.1` before `1.2.0`), else, for numberings of
//! neither scheme (llama.cpp's build numbers `b4567`), runs of digits compared as numbers
//! and the rest as text.

use std::cmp::Ordering;
use std::str::FromStr;

#[derive(Debug, PartialEq, Eq)]
enum Part<'a> {
    Number(u64),
    Text(&'a str),
}

/// The version without a leading `v` (`v0.6.1`).
fn bare(version: &str) -> &str {
    let v = version.trim();
    v.strip_prefix(['v', 'V']).filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit())).unwrap_or(v)
}

fn parts(version: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut rest = bare(version);
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
    by_scheme(bare(a), bare(b)).unwrap_or_else(|| by_parts(a, b)).then_with(|| a.cmp(b))
}

/// The order of PEP 440 where both versions are PEP 440 versions, else of SemVer where both
/// are SemVer versions.
fn by_scheme(a: &str, b: &str) -> Option<Ordering> {
    if let (Ok(x), Ok(y)) = (pep440_rs::Version::from_str(a), pep440_rs::Version::from_str(b)) {
        return Some(x.cmp(&y));
    }
    if let (Ok(x), Ok(y)) = (semver::Version::parse(a), semver::Version::parse(b)) {
        return Some(x.cmp_precedence(&y).then_with(|| x.build.cmp(&y.build)));
    }
    None
}

fn by_parts(a: &str, b: &str) -> Ordering {
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
    Ordering::Equal
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

    #[test]
    fn pep_440_pre_post_dev_and_local_releases() {
        assert_eq!(compare_versions("0.6.1", "0.6.1.post1"), Ordering::Less, "a post-release follows its release");
        assert_eq!(
            sorted(vec![
                "0.6.1.post1",
                "0.6.2",
                "0.6.1",
                "0.6.1rc2",
                "0.6.1.dev4",
                "0.6.1a1",
                "0.6.1+cu121",
                "0.6.0.post2"
            ]),
            ["0.6.0.post2", "0.6.1.dev4", "0.6.1a1", "0.6.1rc2", "0.6.1", "0.6.1+cu121", "0.6.1.post1", "0.6.2"]
        );
        assert_eq!(compare_versions("0.7.0.post1", "0.7.0.post10"), Ordering::Less);
        assert_eq!(compare_versions("0.7.0.dev1+g1234abc", "0.7.0"), Ordering::Less, "a dev build before its release");
    }

    #[test]
    fn semver_pre_releases_and_build_metadata() {
        assert_eq!(
            sorted(vec!["1.0.0", "1.0.0-beta.11", "1.0.0-alpha.beta", "1.0.0-beta.2", "1.0.0-x.7.z.92"]),
            ["1.0.0-alpha.beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-x.7.z.92", "1.0.0"]
        );
    }
}

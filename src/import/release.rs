//! A peer tool's release as its files name it, and the refusal of a file no reader here
//! reads. Layouts are told apart by what a file holds; the release only decides a figure's
//! definition where the tool changed it without changing its layout (guidellm 0.7.4).

use std::cmp::Ordering;

/// The leading numbers of a release: `0.7.0`, `0.13.0.dev3` (PEP 440 suffixes ignored),
/// `v0.5` (a missing part is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Release(pub u32, pub u32, pub u32);

impl Release {
    pub fn parse(text: &str) -> Option<Release> {
        let t = text.trim().trim_start_matches(['v', 'V']);
        let mut parts = t.split('.').map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        });
        let major = parts.next().flatten()?;
        let minor = parts.next().flatten().unwrap_or(0);
        let patch = parts.next().flatten().unwrap_or(0);
        Some(Release(major, minor, patch))
    }

    /// Whether `text` names a release before this one (`None`: it names none).
    pub fn is_after(self, text: &str) -> Option<bool> {
        Release::parse(text).map(|r| r.cmp(&self) == Ordering::Less)
    }
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The error for a file of `tool` that no reader here reads: the release it names, what it
/// holds instead of a layout that is read, and the oldest release that is read.
pub fn refused(at: &str, tool: &str, found: Option<&str>, oldest: Release, holds: &str) -> anyhow::Error {
    let release = found.map_or_else(|| "(no release named in the file)".to_string(), str::to_string);
    anyhow::anyhow!(
        "{at}{tool} {release}: this output format is not read ({holds}); {tool} {oldest} and later are read"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_order_by_their_numbers_not_their_text() {
        let r = |t: &str| Release::parse(t).unwrap();
        assert!(r("0.13.0") > r("0.9.0"), "13 > 9 as numbers, not as text");
        assert_eq!(r("0.13.0.dev3"), Release(0, 13, 0));
        assert_eq!(r("v0.5"), Release(0, 5, 0));
        assert_eq!(r("0.7.4rc1"), Release(0, 7, 4));
        assert_eq!(Release::parse("unknown"), None);
        assert_eq!(Release(0, 7, 4).is_after("0.7.3"), Some(true));
        assert_eq!(Release(0, 7, 4).is_after("0.7.4"), Some(false));
        assert_eq!(Release(0, 7, 4).is_after("0.10.0"), Some(false));
    }
}

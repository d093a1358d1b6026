//! Leaf helpers with no knowledge of the data format: how numbers and context lengths
//! print, slugs for names that become paths, and a stable hash. Everything above may use
//! them; they use nothing of the crate.

/// This build as `site --version` names it and every measured run records it: the package
/// version and, for a build from git, the commit and its date (`0.2.0 (a85fbfa 2026-12-04)`;
/// see `build.rs`).
pub const BUILD_VERSION: &str = env!("SITE_VERSION");

pub mod numbers;
pub mod terminal;

pub use numbers::context_label;
pub use terminal::{terminal_safe, terminal_safe_lines};

/// The longest path component (in bytes) the site writes: well under the 255 that ext4,
/// APFS and NTFS allow, with room for a `-2` made unique and an `index.html` beside it.
pub const MAX_PATH_COMPONENT: usize = 96;

/// `name` as a path component: itself when it fits in [`MAX_PATH_COMPONENT`] bytes, else its
/// start and a stable hash of the whole (`very-long-name-…-3f2a9c1b7d4e5f60`), so two long
/// names that share their start still differ.
pub fn bounded_component(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= MAX_PATH_COMPONENT {
        return name.into();
    }
    let hash = format!("{:016x}", fnv1a(name.as_bytes()));
    let mut keep = MAX_PATH_COMPONENT - hash.len() - 1;
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}-{hash}", name[..keep].trim_end_matches('-')).into()
}

/// Lower-case ASCII letters and digits joined by single dashes: `H200 SXM` -> `h200-sxm`;
/// a long name is shortened with [`bounded_component`] (slugs become folder names).
pub fn slugify(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
    }
    if out.is_empty() {
        out.push_str("unnamed");
    }
    bounded_component(&out).into_owned()
}

/// Text for XML (SVG elements, the sitemap, the feed): the five characters XML reserves as
/// entities, characters XML 1.0 does not allow as U+FFFD, everything else as it is.
pub fn xml_escape(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['&', '<', '>', '"', '\'']) && text.chars().all(xml_char) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // A character XML 1.0 does not allow, even escaped, would make the whole feed,
            // sitemap or chart unreadable: it is shown as the replacement character.
            c if !xml_char(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out.into()
}

/// Whether XML 1.0 allows `c` (its `Char` production): tab, newline, carriage return and
/// everything from space up, less U+FFFE and U+FFFF (Rust strings hold no surrogates).
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

/// `stepfun-ai/Step-3.5-Flash` -> `Step-3.5-Flash`.
pub fn model_display_name(id: &str) -> String {
    id.rsplit('/').find(|s| !s.is_empty()).unwrap_or(id).to_string()
}

/// FNV-1a: a stable hash (same bytes, same hash, across runs and builds), for the short
/// texts whose hash is kept in data files (a loop's cycle) or seeds the simulator.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// A hash of a page's inputs, over several pieces (xxHash64: stable across runs and builds,
/// and eight bytes at a time where FNV goes byte by byte: a site of 10,000 runs hashes half
/// a million leaderboard rows on every rebuild). A variable-length piece is ended by its
/// length so `("ab", "c")` and `("a", "bc")` differ. Pieces are gathered in a buffer and
/// handed to xxHash in blocks: millions of eight-byte pieces cost one streaming call per
/// block, not one each (the hash is the same: it is a hash of the bytes, however split).
#[derive(Clone)]
pub struct InputHash {
    hasher: twox_hash::XxHash64,
    buffer: [u8; HASH_BLOCK],
    len: usize,
}

const HASH_BLOCK: usize = 512;

impl Default for InputHash {
    fn default() -> Self {
        InputHash { hasher: twox_hash::XxHash64::with_seed(0), buffer: [0; HASH_BLOCK], len: 0 }
    }
}

impl InputHash {
    pub fn write(&mut self, bytes: &[u8]) {
        if self.len + bytes.len() > HASH_BLOCK {
            self.flush_block();
            if bytes.len() > HASH_BLOCK {
                std::hash::Hasher::write(&mut self.hasher, bytes);
                return;
            }
        }
        self.buffer[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn flush_block(&mut self) {
        std::hash::Hasher::write(&mut self.hasher, &self.buffer[..self.len]);
        self.len = 0;
    }

    /// A variable-length piece.
    pub fn piece(&mut self, bytes: &[u8]) -> &mut Self {
        self.write(bytes);
        self.u64(bytes.len() as u64)
    }

    /// A fixed-size piece: a number, another hash, a float's bits.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.write(&v.to_le_bytes());
        self
    }

    pub fn finish(&self) -> u64 {
        let mut hasher = self.hasher.clone();
        std::hash::Hasher::write(&mut hasher, &self.buffer[..self.len]);
        std::hash::Hasher::finish(&hasher)
    }

    /// Hashes `value` as its JSON text (the same hash as writing the text), without building
    /// the text.
    pub fn json<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> &mut Self {
        let _ = serde_json::to_writer(&mut *self, value);
        self
    }
}

/// Hashing what a serializer or `write!` produces, without building it in memory first.
impl std::io::Write for InputHash {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        InputHash::write(self, bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_holds_only_characters_xml_allows() {
        assert_eq!(xml_escape("a\u{1}b\u{7}c\u{1b}[2J\u{FFFF}"), "a\u{FFFD}b\u{FFFD}c\u{FFFD}[2J\u{FFFD}");
        assert_eq!(xml_escape("tab\tnew\nline\r"), "tab\tnew\nline\r");
        assert_eq!(xml_escape("<a & 'b'>"), "&lt;a &amp; &apos;b&apos;&gt;");
        assert!(matches!(xml_escape("plain"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn slugs_are_path_safe() {
        assert_eq!(slugify("stepfun-ai/Step-3.5-Flash"), "stepfun-ai-step-3-5-flash");
        assert_eq!(slugify("H200 SXM"), "h200-sxm");
        assert_eq!(slugify("../../etc"), "etc");
        assert_eq!(slugify("<script>"), "script");
        assert_eq!(slugify("///"), "unnamed");
    }

    #[test]
    fn model_names_drop_the_organisation() {
        assert_eq!(model_display_name("stepfun-ai/Step-3.5-Flash"), "Step-3.5-Flash");
        assert_eq!(model_display_name("local-model"), "local-model");
        assert_eq!(model_display_name("org/model/"), "model");
    }

    #[test]
    fn an_input_hash_is_of_the_bytes_however_they_are_split() {
        let pieces: Vec<Vec<u8>> = (0..200u32).map(|i| vec![i as u8; (i as usize * 7) % 700]).collect();
        let mut split = InputHash::default();
        let mut whole = Vec::new();
        for p in &pieces {
            split.write(p);
            split.u64(p.len() as u64 * 3);
            whole.extend_from_slice(p);
            whole.extend_from_slice(&(p.len() as u64 * 3).to_le_bytes());
        }
        let mut at_once = InputHash::default();
        at_once.write(&whole);
        assert_eq!(split.finish(), at_once.finish());
        let mut reference = twox_hash::XxHash64::with_seed(0);
        std::hash::Hasher::write(&mut reference, &whole);
        assert_eq!(split.finish(), std::hash::Hasher::finish(&reference));
        // A different split of other bytes differs.
        at_once.write(b"x");
        assert_ne!(split.finish(), at_once.finish());
    }

    #[test]
    fn hashing_json_equals_hashing_its_text() {
        let value = serde_json::json!({"a": [1.5, null, "x\"y"], "b": {"c": true}});
        let text = serde_json::to_vec(&value).unwrap();
        let mut whole = InputHash::default();
        whole.write(&text);
        assert_eq!(InputHash::default().json(&value).finish(), whole.finish());
    }

    #[test]
    fn pieces_are_told_apart_by_their_lengths() {
        let hash = |a: &[u8], b: &[u8]| InputHash::default().piece(a).piece(b).finish();
        assert_ne!(hash(b"ab", b"c"), hash(b"a", b"bc"));
        assert_eq!(hash(b"ab", b"c"), hash(b"ab", b"c"));
    }

    #[test]
    fn fnv1a_is_the_reference_function() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
    }

    mod bounded {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn components_are_bounded_stable_and_distinct(a in "\\PC{0,300}", b in "\\PC{0,300}") {
                let (ca, cb) = (bounded_component(&a), bounded_component(&b));
                prop_assert!(ca.len() <= MAX_PATH_COMPONENT);
                prop_assert_eq!(&ca, &bounded_component(&a));
                if a != b {
                    prop_assert_ne!(ca, cb);
                }
                prop_assert!(slugify(&a).len() <= MAX_PATH_COMPONENT);
            }
        }
    }
}

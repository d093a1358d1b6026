//! Leaf helpers with no knowledge of the data format, one job a module: how numbers and
//! context lengths print (`numbers`), names that become paths (`names`), stable hashes
//! (`hash`), text for the terminal (`terminal`) and for XML (`xml`), and this build's
//! version. Everything above may use them; they use nothing of the crate.

/// This build as `site --version` names it and every measured run records it: the package
/// version and, for a build from git, the commit and its date (`0.2.0 (a85fbfa 2026-12-04)`;
/// see `build.rs`).
pub const BUILD_VERSION: &str = env!("SITE_VERSION");

pub mod base91;
pub mod gzip;
pub mod hash;
pub mod names;
pub mod numbers;
pub mod terminal;
pub mod xml;

pub use gzip::gzip;
pub use hash::{fnv1a, InputHash};
pub use names::{bounded_component, model_display_name, slugify, MAX_PATH_COMPONENT};
pub use numbers::context_label;
pub use terminal::{terminal_safe, terminal_safe_lines};
pub use xml::xml_escape;

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

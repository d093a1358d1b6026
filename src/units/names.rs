//! Names that become parts of paths: slugs and bounded path components.

use super::hash::fnv1a;

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

/// `stepfun-ai/Step-3.5-Flash` -> `Step-3.5-Flash`.
pub fn model_display_name(id: &str) -> String {
    id.rsplit('/').find(|s| !s.is_empty()).unwrap_or(id).to_string()
}

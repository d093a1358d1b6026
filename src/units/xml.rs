//! Text inside XML: SVG elements, the sitemap, the feed.

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

//! Markdown to HTML for run notes and site pages. Notes are data, and data is never trusted
//! as markup: raw HTML in the source is shown as text; links and images keep only safe
//! schemes (`http`, `https`, `mailto`, or a relative URL), others become their plain text;
//! and the result goes through ammonia, a whitelist HTML sanitizer, as a second line.

use std::collections::HashSet;
use std::sync::LazyLock;

use pulldown_cmark::{html, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The schemes a link or image in Markdown may use.
const SAFE_SCHEMES: &[&str] = &["http", "https", "mailto"];

/// Whether `url` (as pulldown-cmark hands it over: entities and backslash escapes already
/// decoded) is safe to publish. Read as a browser reads it: tabs and line breaks anywhere are
/// dropped and leading control characters and spaces ignored, so `java&#9;script:` and
/// ` javascript:` are seen for what they are.
pub fn safe_url(url: &str) -> bool {
    let cleaned: String =
        url.trim_start_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    // The scheme is what comes before the first `:`, if that comes before any `/`, `?`, `#`.
    let end = cleaned.find([':', '/', '?', '#']);
    match end {
        Some(i) if cleaned[i..].starts_with(':') => {
            let scheme = cleaned[..i].to_ascii_lowercase();
            SAFE_SCHEMES.contains(&scheme.as_str())
        }
        // No scheme: a relative URL (a path, `?query`, `#fragment`, or `//host`).
        _ => true,
    }
}

pub fn to_html(markdown: &str) -> String {
    to_html_from_level(markdown, 1)
}

/// As [`to_html`], with the headings moved so the highest one is `<h{top}>` (notes under a
/// page's own `<h2>` start at `<h3>`), keeping their order; none deeper than `<h6>`.
pub fn to_html_from_level(markdown: &str, top: u8) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES;
    let highest = Parser::new_ext(markdown, options)
        .filter_map(|e| match e {
            Event::Start(Tag::Heading { level, .. }) => Some(level as u8),
            _ => None,
        })
        .min()
        .unwrap_or(1);
    let shift = |level: HeadingLevel| -> HeadingLevel {
        let n = (level as u8 + top.max(1)).saturating_sub(highest).clamp(1, 6);
        HeadingLevel::try_from(n as usize).unwrap_or(HeadingLevel::H6)
    };
    let mut dropped_links = 0usize;
    let mut image_alt: Option<String> = None;
    let mut events = Vec::new();
    for event in Parser::new_ext(markdown, options) {
        // Inside an unsafe image: its alt text is collected and shown as plain text.
        if let Some(alt) = image_alt.as_mut() {
            match event {
                Event::End(TagEnd::Image) => events.push(Event::Text(CowStr::from(image_alt.take().unwrap()))),
                Event::Text(t) | Event::Code(t) => alt.push_str(&t),
                _ => {}
            }
            continue;
        }
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            Event::Start(Tag::Link { ref dest_url, .. }) if !safe_url(dest_url) => dropped_links += 1,
            Event::End(TagEnd::Link) if dropped_links > 0 => dropped_links -= 1,
            Event::Start(Tag::Image { ref dest_url, .. }) if !safe_url(dest_url) => image_alt = Some(String::new()),
            Event::Start(Tag::Heading { level, id, classes, attrs }) => {
                events.push(Event::Start(Tag::Heading { level: shift(level), id, classes, attrs }))
            }
            Event::End(TagEnd::Heading(level)) => events.push(Event::End(TagEnd::Heading(shift(level)))),
            other => events.push(other),
        }
    }
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events.into_iter());
    sanitize(&out)
}

/// The whitelist pass: the tags Markdown produces, URLs with safe schemes only. Configured
/// once: a site renders the notes of every run.
fn sanitize(html: &str) -> String {
    static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(sanitizer);
    SANITIZER.clean(html).to_string()
}

fn sanitizer() -> ammonia::Builder<'static> {
    let schemes: HashSet<&str> = SAFE_SCHEMES.iter().copied().collect();
    let mut b = ammonia::Builder::default();
    b.url_schemes(schemes)
        .link_rel(None)
        .add_tags(["input"])
        .add_tag_attributes("input", ["type", "checked", "disabled"])
        .add_tag_attributes("th", ["style"])
        .add_tag_attributes("td", ["style"])
        .add_tag_attributes("li", ["id"])
        .add_tag_attributes("div", ["id"])
        .add_tag_attributes("sup", ["id"])
        .add_allowed_classes("div", ["footnote-definition"])
        .add_allowed_classes("sup", ["footnote-definition-label", "footnote-reference"])
        .attribute_filter(|_, attr, value| match attr {
            // Only the alignment pulldown-cmark writes for table columns.
            "style" if !value.starts_with("text-align:") => None,
            _ => Some(value.into()),
        });
    b
}

/// The text of the first `# heading`, for a page's title.
pub fn first_heading(markdown: &str) -> Option<String> {
    markdown.lines().find_map(|l| l.strip_prefix("# ")).map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_move_under_the_page_keeping_their_order() {
        let html = to_html_from_level("# Notes\n\ntext\n\n## Detail\n\n#### Deep", 3);
        assert!(
            html.contains("<h3>Notes</h3>") && html.contains("<h4>Detail</h4>") && html.contains("<h6>Deep</h6>"),
            "{html}"
        );
        assert!(to_html_from_level("## How it measured", 3).contains("<h3>How it measured</h3>"));
        assert!(to_html("# Title").contains("<h1>Title</h1>"));
    }

    #[test]
    fn raw_html_is_escaped() {
        let html = to_html("hello <script>alert(1)</script>\n\n<div onload=x>");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<div"), "{html}");
    }

    #[test]
    fn markdown_renders() {
        assert_eq!(to_html("*a*"), "<p><em>a</em></p>\n");
        assert_eq!(to_html("[x](https://e.org/a?b=1)"), "<p><a href=\"https://e.org/a?b=1\">x</a></p>\n");
        assert_eq!(to_html("[x](../runs/a/)"), "<p><a href=\"../runs/a/\">x</a></p>\n");
        assert_eq!(to_html("[x](mailto:a@b.org)"), "<p><a href=\"mailto:a@b.org\">x</a></p>\n");
        assert_eq!(first_heading("x\n# Title\n"), Some("Title".into()));
    }

    #[test]
    fn unsafe_links_and_images_become_plain_text() {
        for src in [
            "[click](javascript:alert(1))",
            "[click](JaVaScRiPt:alert(1))",
            "[click](java&#9;script:alert(1))",
            "[click](&#106;avascript:alert(1))",
            "[click](&#x6A;avascript&colon;alert(1))",
            "[click](vbscript:msgbox(1))",
            "[click](data:text/html;base64,PHNjcmlwdD4=)",
            "[click]( javascript:alert(1))",
            "[click](<javascript:alert(1)>)",
            "[click][r]\n\n[r]: javascript:alert(1)",
            "<javascript:alert(1)>",
        ] {
            let html = to_html(src);
            assert!(!html.to_ascii_lowercase().contains("href"), "{src} -> {html}");
            assert!(!html.contains("<a"), "{src} -> {html}");
        }
        let html = to_html("![the chart](javascript:alert(1)) and ![*b*](data:image/svg+xml,x)");
        assert_eq!(html, "<p>the chart and b</p>\n");
        assert!(to_html("![c](img/c.png)").contains("<img src=\"img/c.png\" alt=\"c\">"));
    }
}

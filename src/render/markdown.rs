//! Markdown to HTML for run notes and site pages. Raw HTML in the source is shown as text:
//! notes are data, and data is never trusted as markup.

use pulldown_cmark::{html, Event, Options, Parser};

pub fn to_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES;
    let parser = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, parser);
    out
}

/// The text of the first `# heading`, for a page's title.
pub fn first_heading(markdown: &str) -> Option<String> {
    markdown.lines().find_map(|l| l.strip_prefix("# ")).map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(first_heading("x\n# Title\n"), Some("Title".into()));
    }
}

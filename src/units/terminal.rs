//! Text for the terminal. A model id, a server's error message or a file name can hold
//! control characters (`ESC]0;…BEL` retitles the window, `ESC[2J` clears it, `\r\n` forges a
//! log line) or bidirectional overrides that reorder what is shown; all of them are written as
//! visible escapes (`\e`, `\r`, `\u{202e}`) instead.

use std::borrow::Cow;

/// One line: every control character escaped, newlines included.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Several lines of our own making that hold data: newlines kept, every other control
/// character escaped.
pub fn terminal_safe_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| needs_escape(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// C0 (but tab), DEL, C1, and the bidirectional embeddings, overrides and isolates.
fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_become_visible() {
        assert_eq!(terminal_safe("m\u{1b}]0;pwned\u{7}x"), "m\\e]0;pwned\\u{7}x");
        assert_eq!(terminal_safe("a\u{1b}[2Jb\r\nerror: forged"), "a\\e[2Jb\\r\\nerror: forged");
        assert_eq!(terminal_safe("\u{9b}31m \u{202e}txt"), "\\u{9b}31m \\u{202e}txt");
        assert_eq!(terminal_safe_lines("one\ntwo\r"), "one\ntwo\\r");
        assert!(matches!(terminal_safe("plain\ttext é"), Cow::Borrowed(_)));
    }
}

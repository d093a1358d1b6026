//! A shell command split into its pieces, each with its exact place in the text: words (as
//! written, quotes and all), operators (`|`, `&&`, `;`, `>`, `(`…), comments and the space
//! between them. Redaction replaces words by place, so every operator, redirection, grouping
//! and space is kept byte for byte.
//!
//! This is a reader for redaction, not an interpreter: no expansion, no here-documents (their
//! lines read as commands, which is what a redactor wants). A quote that never closes runs
//! to the end.

use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Word,
    Operator,
    Comment,
    Space,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub kind: Kind,
    pub span: Range<usize>,
}

/// Longest first, so `&&` is read before `&`.
const OPERATORS: &[&str] =
    &["&&", "||", ";;", ">>", "<<", ">&", "<&", ">|", "<>", "&>", "|&", "|", "&", ";", "<", ">", "(", ")", "\n"];

/// Redirections: the word after one is a file name, not a flag's value.
pub fn is_redirection(op: &str) -> bool {
    matches!(op, ">>" | "<<" | ">&" | "<&" | ">|" | "<>" | "&>" | "<" | ">")
}

pub fn lex(cmd: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < cmd.len() {
        let rest = &cmd[i..];
        let (kind, len) = if let Some(len) = space_len(rest) {
            (Kind::Space, len)
        } else if rest.starts_with('#') {
            (Kind::Comment, rest.find('\n').unwrap_or(rest.len()))
        } else if let Some(op) = operator(rest) {
            (Kind::Operator, op.len())
        } else {
            (Kind::Word, word_len(rest))
        };
        pieces.push(Piece { kind, span: i..i + len });
        i += len;
    }
    pieces
}

/// Blanks and line continuations.
fn space_len(rest: &str) -> Option<usize> {
    let mut len = 0;
    loop {
        let r = &rest[len..];
        if r.starts_with([' ', '\t']) {
            len += 1;
        } else if r.starts_with("\\\n") {
            len += 2;
        } else if r.starts_with("\\\r\n") {
            len += 3;
        } else {
            return (len > 0).then_some(len);
        }
    }
}

fn operator(rest: &str) -> Option<&'static str> {
    // Our own mark stands for one word, though it looks like two redirections.
    if rest.starts_with(super::REDACTED) {
        return None;
    }
    OPERATORS.iter().copied().find(|op| rest.starts_with(op))
}

/// The length of the word at the start of `rest`: up to an unquoted blank or operator.
fn word_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let r = &rest[i..];
        if i > 0 && (space_len(r).is_some() || operator(r).is_some()) {
            // `ab\<newline>cd` is one word `abcd` to the shell; a blank after the
            // continuation ends the word.
            let continued = ["\\\n", "\\\r\n"].iter().find(|c| r.starts_with(**c)).map(|c| c.len());
            match continued {
                Some(len)
                    if r[len..].chars().next().is_some_and(|c| !c.is_whitespace()) && operator(&r[len..]).is_none() =>
                {
                    i += len;
                    continue;
                }
                _ => break,
            }
        }
        i += match bytes[i] {
            b'\'' => closing(r, 1, |b, _| b == b'\''),
            b'"' => double_quoted_len(r),
            b'`' => closing(r, 1, |b, _| b == b'`'),
            b'\\' => r.chars().nth(1).map_or(1, |c| 1 + c.len_utf8()),
            b'$' if r.starts_with("$(") => substitution_len(r),
            b'<' if r.starts_with(super::REDACTED) => super::REDACTED.len(),
            _ => r.chars().next().map_or(1, char::len_utf8),
        };
    }
    i.min(rest.len())
}

/// From `r[from..]` to just past the first byte `end` accepts, or to the end of `r`.
fn closing(r: &str, from: usize, end: impl Fn(u8, usize) -> bool) -> usize {
    r.as_bytes()[from..].iter().enumerate().position(|(k, &b)| end(b, k)).map_or(r.len(), |k| from + k + 1)
}

/// `"..."` with backslash escapes.
fn double_quoted_len(r: &str) -> usize {
    let bytes = r.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    r.len()
}

/// `$( ... )` with nested parentheses and quotes inside.
fn substitution_len(r: &str) -> usize {
    let bytes = r.as_bytes();
    let (mut depth, mut i) = (0usize, 1);
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b'\'' => i += closing(&r[i..], 1, |b, _| b == b'\'') - 1,
            b'"' => i += double_quoted_len(&r[i..]) - 1,
            b'\\' => i += 1,
            _ => {}
        }
        i += 1;
    }
    r.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(cmd: &str) -> Vec<(Kind, &str)> {
        lex(cmd).into_iter().map(|p| (p.kind, &cmd[p.span])).collect()
    }

    #[test]
    fn operators_quotes_and_comments_are_pieces_of_their_own() {
        use Kind::*;
        assert_eq!(
            shown("(a --k 'x y'|tee log)&&b>o;c \\\n d\"e f\" # note"),
            vec![
                (Operator, "("),
                (Word, "a"),
                (Space, " "),
                (Word, "--k"),
                (Space, " "),
                (Word, "'x y'"),
                (Operator, "|"),
                (Word, "tee"),
                (Space, " "),
                (Word, "log"),
                (Operator, ")"),
                (Operator, "&&"),
                (Word, "b"),
                (Operator, ">"),
                (Word, "o"),
                (Operator, ";"),
                (Word, "c"),
                (Space, " \\\n "),
                (Word, "d\"e f\""),
                (Space, " "),
                (Comment, "# note"),
            ]
        );
    }

    #[test]
    fn substitutions_marks_and_unclosed_quotes_are_single_words() {
        use Kind::*;
        assert_eq!(
            shown("x $(a (b) 'c)') y"),
            vec![(Word, "x"), (Space, " "), (Word, "$(a (b) 'c)')"), (Space, " "), (Word, "y")]
        );
        assert_eq!(
            shown("--k <redacted>|x"),
            vec![(Word, "--k"), (Space, " "), (Word, "<redacted>"), (Operator, "|"), (Word, "x")]
        );
        assert_eq!(shown("a \"open é"), vec![(Word, "a"), (Space, " "), (Word, "\"open é")]);
    }

    #[test]
    fn any_text_is_covered_exactly_once() {
        for cmd in ["", "\\", "'", "$(", "a\\", "é\\é", "x\"\\", "<redacted", "`"] {
            let pieces = lex(cmd);
            let joined: String = pieces.iter().map(|p| &cmd[p.span.clone()]).collect();
            assert_eq!(joined, cmd);
        }
    }
}

//! Secret-shaped pieces of free text, found without knowing the secret: a value named as a
//! secret (`api_key=x`, `"token": "x"`, `password: x`, a URL's `?access_token=x`), an
//! `Authorization` header's value, a `Bearer` credential, URL userinfo, and the well-known
//! token formats (`sk-…`, `hf_…`, `ghp_…`, AWS access key ids, JWTs…).
//!
//! Used for every launch command word, for notes and pages (`notes.md`, `pages/*.md`), and for
//! error text from servers and other tools.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use super::REDACTED;

/// Word parts that make a name a secret's name when they end it (`hf_token`, `OPENAI_API_KEY`,
/// `apiKey`, `db-password`) or appear anywhere in it (`secret`, `password`).
const LAST_PARTS: &[&str] = &[
    "key",
    "keys",
    "apikey",
    "token",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pwd",
    "credential",
    "credentials",
    "auth",
    "authorization",
    "signature",
    "cookie",
    // Azure shared access signatures: `?sv=...&sig=...`.
    "sig",
];
const ANY_PARTS: &[&str] = &["secret", "password", "passwd", "apikey", "credentials"];

/// Whether a flag, variable, JSON key or query parameter name names a secret. `max_tokens`,
/// `--max-num-batched-tokens` and `pad_token_id` do not: only a name that ends in a secret
/// word (or holds `secret`/`password`) does.
pub fn secret_name(name: &str) -> bool {
    let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
    let parts = name_parts(name.trim_start_matches('-'));
    let Some(last) = parts.last() else { return false };
    // Where a secret is kept, not the secret: `--api-key-file PATH`, `--password-stdin`.
    if NOT_A_VALUE.contains(&last.as_str()) {
        return false;
    }
    // A tokenizer's special tokens: `add_bos_token`, `eos_token`.
    if last == "token" && parts.len() > 1 && SPECIAL_TOKENS.contains(&parts[parts.len() - 2].as_str()) {
        return false;
    }
    LAST_PARTS.contains(&last.as_str())
        || parts.iter().any(|p| ANY_PARTS.contains(&p.as_str()))
        || parts.windows(2).any(|w| w[0] == "api" && matches!(w[1].as_str(), "key" | "keys"))
}

/// Last name parts that say the value is where a secret is, or about it, not the secret.
const NOT_A_VALUE: &[&str] =
    &["file", "path", "stdin", "dir", "env", "name", "id", "ids", "length", "len", "type", "size"];

/// Tokenizer special tokens (`bos_token`), which are words of a vocabulary, not credentials.
const SPECIAL_TOKENS: &[&str] = &["bos", "eos", "pad", "unk", "sep", "cls", "mask", "special", "start", "end", "image"];

/// `OPENAI_API_KEY`, `hf-token`, `apiKey`, `x.auth.token` -> lower-case parts.
fn name_parts(name: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            parts.push(String::new());
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            parts.push(String::new());
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        parts.last_mut().expect("never empty").extend(c.to_lowercase());
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// A name followed by `=` or `:` (the name possibly quoted, as in JSON).
/// A name may be percent-encoded (`api%5Fkey=`) or an index (`os.environ["HF_TOKEN"] = `).
static NAMED_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z](?:[A-Za-z0-9_.-]|%[0-9A-Fa-f]{2})*)(["']?\]?)[ \t]*([:=])[ \t]*"#).expect("valid pattern")
});

/// Token formats that are secrets wherever they appear.
static TOKEN_FORMATS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}",
        r"|hf_[A-Za-z0-9]{16,}",
        r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
        r"|glpat-[A-Za-z0-9_-]{16,}",
        r"|xox[abprs]-[A-Za-z0-9-]{10,}",
        r"|(?:AKIA|ASIA)[0-9A-Z]{16}",
        r"|AIza[0-9A-Za-z_-]{30,}",
        r"|nvapi-[A-Za-z0-9_-]{16,}",
        r"|gsk_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,}",
        r"|[0-9]{8,10}:AA[A-Za-z0-9_-]{30,}",
        r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
    ))
    .expect("valid pattern")
});

/// Credentials that stand in a URL's path: bot and webhook tokens. The part before stays.
static PATH_TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(api\.telegram\.org/bot)[^/\s]+",
        r"|(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]+",
        r"|(discord(?:app)?\.com/api/webhooks/[0-9]+/)[A-Za-z0-9_-]+",
    ))
    .expect("valid pattern")
});

/// A PEM private key block: the body goes, the armour lines stay.
static PEM_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)")
        .expect("valid pattern")
});

/// Every private key block's body replaced, or `None` when there is none.
pub fn scrub_pem(text: &str) -> Option<String> {
    if !text.contains("PRIVATE KEY-----") {
        return None;
    }
    let out = PEM_KEY.replace_all(text, |c: &regex::Captures<'_>| {
        format!("{}{REDACTED}{}", &c[1], c.get(2).map_or("", |m| m.as_str()))
    });
    (out != text).then(|| out.into_owned())
}

/// Free text with every secret-shaped piece replaced by `<redacted>`; borrowed when nothing
/// was found.
pub fn scrub_text(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    for step in [
        scrub_pem as fn(&str) -> Option<String>,
        scrub_named_values,
        scrub_token_formats,
        scrub_path_tokens,
        scrub_urls,
        scrub_bearer,
    ] {
        if let Some(s) = step(&out) {
            out = Cow::Owned(s);
        }
    }
    out
}

fn scrub_token_formats(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut done = 0;
    for m in TOKEN_FORMATS.find_iter(text) {
        // `sk-learn-text-classifier` is words, and `org/sk-...` a repository: not `sk-` keys.
        if m.as_str().starts_with("sk-") && (text[..m.start()].ends_with('/') || words_only(&m.as_str()[3..])) {
            continue;
        }
        out.push_str(&text[done..m.start()]);
        out.push_str(REDACTED);
        done = m.end();
    }
    (done > 0).then(|| {
        out.push_str(&text[done..]);
        out
    })
}

/// Lower-case words joined by `-` or `_`: a name, where a generated key mixes case or digits.
fn words_only(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_lowercase() || c == '-' || c == '_')
}

fn scrub_path_tokens(text: &str) -> Option<String> {
    if !PATH_TOKENS.is_match(text) {
        return None;
    }
    let out = PATH_TOKENS.replace_all(text, |c: &regex::Captures<'_>| {
        let prefix = (1..=3).find_map(|i| c.get(i)).map_or("", |m| m.as_str());
        format!("{prefix}{REDACTED}")
    });
    (out != text).then(|| out.into_owned())
}

fn scrub_urls(text: &str) -> Option<String> {
    match super::redact_urls(text) {
        Cow::Owned(s) => Some(s),
        Cow::Borrowed(_) => None,
    }
}

fn scrub_bearer(text: &str) -> Option<String> {
    let s = super::scrub_bearer(text);
    (s != text).then_some(s)
}

/// `text` with the value each match of `pattern` names replaced by `<redacted>`: `value_of`
/// gives a match's value as a span of `text` (`None`: keep it). A match inside a value
/// already replaced is passed over.
fn replace_values(
    text: &str,
    pattern: &Regex,
    value_of: impl Fn(&regex::Captures<'_>) -> Option<std::ops::Range<usize>>,
) -> Option<String> {
    let mut out = String::new();
    let mut done = 0;
    for m in pattern.captures_iter(text) {
        if m.get(0).expect("match").start() < done {
            continue;
        }
        let Some(value) = value_of(&m) else { continue };
        out.push_str(&text[done..value.start]);
        out.push_str(REDACTED);
        done = value.end;
    }
    (done > 0).then(|| {
        out.push_str(&text[done..]);
        out
    })
}

/// The span of the value that starts after `end` in `text` (`value_span`).
fn value_after(text: &str, end: usize, header: bool) -> Option<std::ops::Range<usize>> {
    let (start, len) = value_span(&text[end..], header)?;
    Some(end + start..end + start + len)
}

/// `name=value`, `name: value`, `"name": "value"` where the name is a secret's: the value goes.
/// The bare names `key` and `auth` count only before `=` (prose says "Key: ..." innocently).
fn scrub_named_values(text: &str) -> Option<String> {
    replace_values(text, &NAMED_VALUE, |m| {
        let name = &m[1];
        if !secret_name(name) {
            return None;
        }
        let lower = name.to_ascii_lowercase();
        if &m[3] == ":" && matches!(lower.as_str(), "key" | "auth") {
            return None;
        }
        let span = value_after(text, m.get(0).expect("match").end(), lower.ends_with("authorization"))?;
        let value = &text[span.clone()];
        // Prose: "time to first token: 35 ms", "token: the first one". A bare word of the
        // trade before a colon names a secret only when what follows looks like one
        // ("password:" always does).
        let prose_word =
            matches!(lower.as_str(), "token" | "tokens" | "signature" | "cookie" | "credential" | "credentials");
        let prose = &m[3] == ":" && m[2].is_empty() && prose_word;
        (value != REDACTED && !(prose && !secret_looking(value))).then_some(span)
    })
}

/// A secret flag and its value in prose or a log line: `launching with --api-key x`.
static FLAG_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[\s(\[{,;'\x22])(--?[A-Za-z][A-Za-z0-9_-]*)[ \t]+").expect("valid pattern"));

/// A line a launched server printed: [`scrub_text`], and a secret flag's value after a space
/// (`launching with --api-key x`), which in prose would be a word ("the --api-key flag"), in
/// a server's log the key.
pub fn scrub_log_line(line: &str) -> Cow<'_, str> {
    match (scrub_text(line), scrub_flag_values) {
        (Cow::Borrowed(_), f) => f(line).map_or(Cow::Borrowed(line), Cow::Owned),
        (Cow::Owned(s), f) => Cow::Owned(f(&s).unwrap_or(s)),
    }
}

fn scrub_flag_values(text: &str) -> Option<String> {
    replace_values(text, &FLAG_VALUE, |m| {
        if !secret_name(&m[1]) {
            return None;
        }
        let span = value_after(text, m.get(0).expect("match").end(), false)?;
        let value = &text[span.clone()];
        (value != REDACTED && !value.starts_with(['-', '\\'])).then_some(span)
    })
}

/// Letters and digits together (`hunter2`, `sk4f9...`), or long: what a password or token
/// looks like, where a number or a word of prose does not.
fn secret_looking(value: &str) -> bool {
    let letters = value.chars().any(|c| c.is_alphabetic());
    let digits = value.chars().any(|c| c.is_ascii_digit());
    (letters && digits) || value.chars().count() >= 16
}

/// Where a value starts and how long it is: a quoted string (JSON escapes honoured) or a run of
/// characters up to a separator. An `Authorization` value runs to the end of the line or
/// quote (`Basic xxx`, `Bearer xxx`).
fn value_span(rest: &str, header: bool) -> Option<(usize, usize)> {
    let first = rest.chars().next()?;
    // A list of values (`api_key=['x']`, Python's `{'api_key': ['x']}`): all of it.
    if first == '[' {
        let len = rest.find(']').unwrap_or(rest.len());
        return (len > 1).then_some((1, len - 1));
    }
    if first == '"' || first == '\'' {
        let body = &rest[1..];
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                '\\' if first == '"' && !escaped => escaped = true,
                c if c == first && !escaped => return (i > 0).then_some((1, i)),
                _ => escaped = false,
            }
        }
        return (!body.is_empty()).then_some((1, body.len()));
    }
    let stop: &[char] = if header {
        &['"', '\'', '\n', '\r']
    } else {
        &[' ', '\t', '\n', '\r', '&', ';', ',', '"', '\'', '}', ')', ']', '#', '<', '>', '|']
    };
    let len = rest.find(stop).unwrap_or(rest.len());
    let len = rest[..len].trim_end().len();
    (len > 0).then_some((0, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_and_innocent_names() {
        for n in
            ["api_key", "OPENAI_API_KEY", "--hf-token", "apiKey", "access_token", "db-password", "X-Api-Key", "key"]
        {
            assert!(secret_name(n), "{n}");
        }
        for n in ["max_tokens", "--max-num-batched-tokens", "pad_token_id", "tokenizer", "--port", "keyfile", "model"] {
            assert!(!secret_name(n), "{n}");
        }
    }

    #[test]
    fn named_values_in_every_notation() {
        let cases = [
            ("see http://h/v1?api_key=abc123&x=1", "see http://h/v1?api_key=<redacted>&x=1"),
            (r#"{"api_key": "a\"b", "n": 1}"#, r#"{"api_key": "<redacted>", "n": 1}"#),
            ("password: hunter2 then", "password: <redacted> then"),
            ("--from-literal=api_key=s3cr3t", "--from-literal=api_key=<redacted>"),
            ("Authorization: Basic YWRtaW46cHc=\nnext", "Authorization: <redacted>\nnext"),
            ("{'token': 'abc'}", "{'token': '<redacted>'}"),
            ("Key: prefill is compute bound", "Key: prefill is compute bound"),
            ("Time to first token: 35 ms; per token: 12.5 ms", "Time to first token: 35 ms; per token: 12.5 ms"),
            ("token: the first one", "token: the first one"),
            ("Token: ab12cd34", "Token: <redacted>"),
            ("hf_token: abc", "hf_token: <redacted>"),
            ("Password: hunter", "Password: <redacted>"),
            ("max_tokens=512 temperature=0", "max_tokens=512 temperature=0"),
            ("non-default args: api_key=['s3cr3tK']", "non-default args: api_key=[<redacted>]"),
            (
                "args: {'model': 'm', 'api_key': ['s3cr3tK'], 'port': 8000}",
                "args: {'model': 'm', 'api_key': [<redacted>], 'port': 8000}",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(scrub_text(text), want, "{text}");
        }
    }

    #[test]
    fn a_server_log_line_loses_a_secret_flag_value() {
        let cases = [
            ("launching with --api-key s3cr3tK now", "launching with --api-key <redacted> now"),
            ("(--hf-token hfvalue) and --max-tokens 512", "(--hf-token <redacted>) and --max-tokens 512"),
            ("args: {'api_key': ['s3cr3tK']}", "args: {'api_key': [<redacted>]}"),
            ("usage: --api-key --port", "usage: --api-key --port"),
        ];
        for (line, want) in cases {
            assert_eq!(scrub_log_line(line), want, "{line}");
        }
        assert_eq!(scrub_text("The --api-key flag sets the key"), "The --api-key flag sets the key", "prose keeps it");
    }

    #[test]
    fn token_formats_bearer_and_userinfo() {
        let text = "k sk-proj-abcdefghijklmnop1234 hf_abcdefghijklmnopqrstu AKIAABCDEFGHIJKLMNOP \
                    Bearer x.y https://me:pw@host/";
        assert_eq!(
            scrub_text(text),
            "k <redacted> <redacted> <redacted> Bearer <redacted> https://me:<redacted>@host/"
        );
        assert!(matches!(scrub_text("sk-learn and hf_hub are words"), Cow::Borrowed(_)));
    }
}

//! Secrets never reach the disk, the terminal or a page.
//!
//! Three tools, for three kinds of text:
//! - [`redact_command`] reads a launch command as a shell would (quotes, `\` + newline, tabs,
//!   operators, `bash -c "..."` bodies) and replaces the secret words with `<redacted>` in
//!   place, keeping every other byte. A command with no secret is returned exactly as written.
//! - [`scrub_text`] finds secret-shaped pieces of free text without knowing the secret (notes,
//!   pages, other tools' error messages).
//! - [`Scrubber`] removes secrets whose value is known (the API key `site bench` sends), in the
//!   encodings a server may echo them in (JSON-escaped, URL-encoded, base64), and
//!   whatever [`scrub_text`] finds.

mod command;
mod lex;
mod markdown;
mod text;

use std::borrow::Cow;

use base64::Engine as _;

pub use command::{command_secrets, redact_command};
pub use markdown::scrub_markdown;
pub use text::{scrub_log_line, scrub_text, secret_name};

pub const REDACTED: &str = "<redacted>";

/// Passwords (and bare tokens) in URL userinfo: `scheme://user:secret@host` keeps the user,
/// `scheme://token@host` loses the whole userinfo. Works anywhere in a word.
pub fn redact_urls(word: &str) -> Cow<'_, str> {
    if !word.contains("://") {
        return Cow::Borrowed(word);
    }
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    let mut changed = false;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_end = authority_len(tail);
        let authority = &tail[..authority_end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.split_once(':') {
                    Some((user, _)) => out.push_str(&format!("{user}:{REDACTED}")),
                    None => out.push_str(REDACTED),
                }
                out.push_str(&authority[at..]);
                changed = true;
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(word)
    }
}

/// The length of a URL's authority (`user:pass@host:port`) at the start of `tail`. A password
/// with an unescaped `/` in it (`user:pa/ss@host`) still counts as userinfo: the text after
/// `:` is then no port number.
fn authority_len(tail: &str) -> usize {
    let word_end = tail.find([' ', '\t', '\n', '"', '\'']).unwrap_or(tail.len());
    let word = &tail[..word_end];
    let plain_end = word.find(['/', '?', '#']).unwrap_or(word.len());
    if word[..plain_end].contains('@') {
        return plain_end;
    }
    if let (Some(colon), Some(at)) = (word[..plain_end].find(':'), word.rfind('@')) {
        let after_colon = &word[colon + 1..plain_end];
        if at > plain_end && !after_colon.chars().all(|c| c.is_ascii_digit()) {
            return at + word[at..].find(['/', '?', '#']).unwrap_or(word.len() - at);
        }
    }
    plain_end
}

/// A served model name with the local path taken off: engines such as llama.cpp report the
/// model file's path (`/home/user/models/x.gguf`), which names a user and a disk layout.
/// A repository id (`org/name`, exactly one `/`, no file extension) is kept as it is.
pub fn model_name_without_path(name: &str) -> String {
    const MODEL_FILES: &[&str] = &[".gguf", ".bin", ".safetensors", ".pt", ".pth", ".onnx", ".ggml"];
    let lower = name.to_ascii_lowercase();
    let windows_drive = name.as_bytes().get(1) == Some(&b':');
    let local = name.starts_with(['/', '~', '.', '\\'])
        || windows_drive
        || name.contains('\\')
        || name.matches('/').count() > 1
        || MODEL_FILES.iter().any(|ext| lower.ends_with(ext));
    if !local {
        return name.to_string();
    }
    let last = name.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next().unwrap_or("");
    if last.is_empty() || last == "." || last == ".." {
        "local model".to_string()
    } else {
        last.to_string()
    }
}

/// Removes known secret values, in their common encodings, and any secret-shaped text.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl Scrubber {
    pub fn new<I: IntoIterator<Item = String>>(secrets: I) -> Scrubber {
        let mut forms: Vec<String> =
            secrets.into_iter().filter(|s| !s.trim().is_empty()).flat_map(|s| encoded_forms(&s)).collect();
        // Longest first, so a secret that contains another is removed whole.
        forms.sort_by_key(|s| std::cmp::Reverse(s.len()));
        forms.dedup();
        Scrubber { secrets: forms }
    }

    /// Known secrets and `Bearer` credentials go; the rest of the text is kept as it is (a
    /// whole cell file goes through here).
    pub fn scrub(&self, text: &str) -> String {
        let mut out = Cow::Borrowed(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), REDACTED));
            }
        }
        scrub_bearer(&out)
    }

    /// A message from a server or a tool: known secrets and anything secret-shaped go.
    pub fn scrub_message(&self, text: &str) -> String {
        scrub_text(&self.scrub(text)).into_owned()
    }
}

/// A secret as written and as a server may echo it: JSON-escaped, URL-encoded (`%2B`, `%2b`,
/// `+` for a space), and base64 (standard and URL-safe). A base64 text holding the secret
/// (`Basic base64("user:" + key)`) holds, at one of three alignments, the encoding of the
/// secret's whole 3-byte groups: those cores are removed too when long enough to be the key's.
fn encoded_forms(secret: &str) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
    let mut forms = vec![secret.to_string()];
    if let Ok(e) = serde_json::to_string(secret) {
        forms.push(e[1..e.len() - 1].to_string());
    }
    // Encoders differ on which characters they leave alone: all but letters and digits
    // (Python's `quote(s, safe="")`), or all but RFC 3986's unreserved ones (JavaScript's
    // `encodeURIComponent`, Go's `QueryEscape`), or also `/` (Python's default `quote`).
    const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    const PATH: &AsciiSet = &UNRESERVED.remove(b'/');
    for set in [NON_ALPHANUMERIC, UNRESERVED, PATH] {
        let url = utf8_percent_encode(secret, set).to_string();
        forms.push(url.replace("%20", "+"));
        forms.push(lower_hex_escapes(&url));
        forms.push(url);
    }
    let bytes = secret.as_bytes();
    for skip in 0..3.min(bytes.len()) {
        let whole = (bytes.len() - skip) / 3 * 3;
        let core = &bytes[skip..skip + whole];
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let e = engine.encode(core);
            if e.len() >= 8 {
                forms.push(e);
            }
        }
    }
    // Hex (as a debugging server dumps bytes), a server that changes the case, and HTML
    // (entities for the special characters, or every character as a numeric reference).
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.to_ascii_uppercase());
    forms.push(hex);
    forms.push(secret.to_ascii_uppercase());
    forms.push(secret.to_ascii_lowercase());
    forms.push(html_escaped(secret));
    forms.push(secret.chars().map(|c| format!("&#{};", c as u32)).collect());
    forms.push(secret.chars().map(|c| format!("&#x{:x};", c as u32)).collect());
    forms.push(secret.chars().map(|c| format!("&#x{:X};", c as u32)).collect());
    forms.retain(|f| !f.is_empty());
    forms
}

fn html_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `%2B` -> `%2b`: some servers write percent escapes in lower case.
fn lower_hex_escapes(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let esc = rest.get(i..i + 3).unwrap_or(&rest[i..]);
        out.push_str(&esc.to_ascii_lowercase());
        rest = &rest[i + esc.len()..];
    }
    out.push_str(rest);
    out
}

/// `Bearer abc...` (any case) keeps the word and loses the credential.
pub fn scrub_bearer(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("bearer ") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(j) = lower[i..].find("bearer ") {
        let start = i + j + "bearer ".len();
        out.push_str(&text[i..start]);
        let rest = &text[start..];
        let token_len =
            rest.find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';')).unwrap_or(rest.len());
        if token_len > 0 && &rest[..token_len] != REDACTED {
            out.push_str(REDACTED);
        } else {
            out.push_str(&rest[..token_len]);
        }
        i = start + token_len;
    }
    out.push_str(&text[i..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_paths_keep_only_the_file_name() {
        assert_eq!(model_name_without_path("/home/user/models/SmolLM2-135M.Q4_1.gguf"), "SmolLM2-135M.Q4_1.gguf");
        assert_eq!(model_name_without_path(".cache/models/x.gguf"), "x.gguf");
        assert_eq!(model_name_without_path("C:\\Users\\me\\m.gguf"), "m.gguf");
        assert_eq!(model_name_without_path("/models/llama-3/"), "llama-3");
        assert_eq!(
            model_name_without_path("HuggingFaceTB/SmolLM2-135M-Instruct"),
            "HuggingFaceTB/SmolLM2-135M-Instruct"
        );
        assert_eq!(model_name_without_path("smollm2"), "smollm2");
        assert_eq!(model_name_without_path("/"), "local model");
    }

    #[test]
    fn scrubber_removes_known_keys_and_bearer_tokens() {
        let s = Scrubber::new(["sk-live-123".to_string(), "k\"q".to_string()]);
        assert_eq!(s.scrub("bad key sk-live-123!"), "bad key <redacted>!");
        assert_eq!(s.scrub(r#"{"got":"k\"q"}"#), r#"{"got":"<redacted>"}"#);
        assert_eq!(s.scrub("header was Bearer abc.def, rejected"), "header was Bearer <redacted>, rejected");
        assert_eq!(scrub_bearer("BEARER x"), "BEARER <redacted>");
    }

    #[test]
    fn scrubber_removes_the_encodings_a_server_may_echo() {
        use base64::engine::general_purpose::STANDARD;
        let key = "sk-Zq/9+a b&c=d";
        let s = Scrubber::new([key.to_string()]);
        let url = percent_encoding::utf8_percent_encode(key, percent_encoding::NON_ALPHANUMERIC).to_string();
        for echo in [
            url.clone(),
            lower_hex_escapes(&url),
            url.replace("%20", "+"),
            STANDARD.encode(key),
            STANDARD.encode(format!("user:{key}")),
            STANDARD.encode(format!("ab{key}")),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key),
            key.bytes().map(|b| format!("{b:02x}")).collect(),
            key.bytes().map(|b| format!("{b:02X}")).collect(),
            key.to_ascii_uppercase(),
            key.to_ascii_lowercase(),
            "sk-Zq/9+a b&amp;c=d".to_string(),
            key.chars().map(|c| format!("&#{};", c as u32)).collect(),
            key.chars().map(|c| format!("&#x{:x};", c as u32)).collect(),
        ] {
            let out = s.scrub(&format!("401: bad credentials {echo} given"));
            assert!(out.contains(REDACTED), "{echo} -> {out}");
            // What is left of an encoding is at most its first and last group.
            assert!(!out.contains(&echo), "{echo} -> {out}");
        }
        assert_eq!(s.scrub("nothing here"), "nothing here");
    }

    #[test]
    fn messages_lose_secret_shaped_text_too() {
        let s = Scrubber::new(Vec::new());
        assert_eq!(s.scrub_message("rejected api_key=abc123 for user"), "rejected api_key=<redacted> for user");
    }
}

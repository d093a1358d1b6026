//! Secrets never reach the disk, the terminal or a page.
//!
//! Two tools, for two kinds of text:
//! - [`redact_command`] reads a launch command as a shell would (quotes, `\` + newline, tabs,
//!   `bash -c "..."` bodies) and replaces the values of secret flags (`--api-key X`,
//!   `--hf-token=X`, `-H 'Authorization: Bearer X'`), secret environment assignments
//!   (`HF_TOKEN=...`), and URL passwords (`http://user:secret@host`) with `<redacted>`,
//!   keeping every other word. A command with no secret is returned exactly as written.
//! - [`Scrubber`] removes secrets whose value is known (the API key `site bench` sends) and
//!   `Bearer` credentials from free text such as a server's error message.

use std::borrow::Cow;

pub const REDACTED: &str = "<redacted>";

/// `--api-key`, `--api-keys`, `--hf-token`, `--token`, `--db-password`, `--client-secret`...
fn secret_flag(flag: &str) -> bool {
    let f = flag.trim_start_matches('-').to_ascii_lowercase().replace('_', "-");
    const EXACT: &[&str] =
        &["api-key", "api-keys", "apikey", "key", "token", "tokens", "password", "passwd", "secret", "auth"];
    const SUFFIXES: &[&str] = &["-api-keys", "-apikey", "-key", "-token", "-tokens", "-secret", "-password", "-passwd"];
    EXACT.contains(&f.as_str()) || SUFFIXES.iter().any(|s| f.ends_with(s))
}

/// `HF_TOKEN`, `OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`, `TOKEN`...
fn secret_env(name: &str) -> bool {
    name.to_ascii_uppercase()
        .split('_')
        .any(|p| matches!(p, "TOKEN" | "KEY" | "SECRET" | "PASSWORD" | "PASSWD" | "APIKEY" | "CREDENTIALS"))
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Header flags of curl-like tools and of engines that pass headers on.
fn header_flag(flag: &str) -> bool {
    matches!(flag, "-H" | "--header" | "--headers" | "--middleware-header" | "--extra-header")
}

/// `Authorization: Bearer x`, `x-api-key: x`, `Cookie: x`...: the header's value is secret.
fn secret_header(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    matches!(n.as_str(), "authorization" | "proxy-authorization" | "cookie" | "set-cookie")
        || ["key", "token", "secret", "password", "auth"].iter().any(|w| n.contains(w))
}

/// A header value `Name: value` with a secret value becomes `Name: <redacted>`.
fn redact_header(h: &str) -> Option<String> {
    let (name, _) = h.split_once(':')?;
    secret_header(name).then(|| format!("{}: {REDACTED}", name.trim()))
}

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

/// Splits a command into words as a POSIX shell does. A command whose quotes do not close
/// is read as if they closed at its end (so the secret inside is still found).
fn shell_words(cmd: &str) -> Option<Vec<String>> {
    // A line continuation joins lines; shlex would read it as an empty word.
    let cmd = &cmd.replace("\\\r\n", " ").replace("\\\n", " ");
    if let Some(w) = shlex::split(cmd) {
        return Some(w);
    }
    ["\"", "'", "\\\\"].iter().find_map(|close| shlex::split(&format!("{cmd}{close}")))
}

/// Redacts one word list; the flag says whether any word was touched.
fn redact_words(words: Vec<String>, depth: u32) -> (Vec<String>, bool) {
    let mut changed = false;
    let mut next = Next::default();
    let out = words
        .into_iter()
        .map(|w| match redact_word(&w, &mut next, depth) {
            Some(n) if n != w => {
                changed = true;
                n
            }
            _ => w,
        })
        .collect();
    (out, changed)
}

/// What the previous word said about the next one.
#[derive(Default)]
struct Next {
    secret: bool,
    header: bool,
    /// After `-c` (`bash -c`, `sh -c`): a whole command.
    body: bool,
}

/// The redacted form of one (unquoted) word, or `None` when it stays as it is.
fn redact_word(w: &str, next: &mut Next, depth: u32) -> Option<String> {
    if std::mem::take(&mut next.secret) {
        return Some(REDACTED.to_string());
    }
    if std::mem::take(&mut next.header) {
        return redact_header(w).or_else(|| redact_command_at(w, depth + 1));
    }
    if std::mem::take(&mut next.body) {
        return redact_command_at(w, depth + 1);
    }
    next.body = w == "-c";
    if w.starts_with('-') {
        if let Some((flag, value)) = w.split_once('=') {
            if secret_flag(flag) {
                return Some(format!("{flag}={REDACTED}"));
            }
            if header_flag(flag) {
                return redact_header(value).map(|h| format!("{flag}={h}"));
            }
        } else if secret_flag(w) {
            next.secret = true;
        } else if header_flag(w) {
            next.header = true;
        } else if let Some(h) = w.strip_prefix("-H").filter(|h| h.contains(':')) {
            return redact_header(h).map(|h| format!("-H{h}"));
        }
        return redact_urls(w).into_owned().into();
    }
    if let Some((name, _)) = w.split_once('=') {
        if is_env_name(name) && secret_env(name) {
            return Some(format!("{name}={REDACTED}"));
        }
    }
    if w.chars().any(char::is_whitespace) {
        // A quoted body: `bash -c "..."`, `sh -c '...'`, `env 'X=..'`.
        return redact_command_at(w, depth + 1);
    }
    Some(redact_urls(w).into_owned())
}

/// Quotes a word for the shell, leaving a trailing `<redacted>` readable (`--api-key=<redacted>`
/// rather than `'--api-key=<redacted>'`).
fn quote(word: &str) -> String {
    if word == REDACTED {
        return word.to_string();
    }
    let plain = |w: &str| w.chars().all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if !word.is_empty() && plain(&word.replace(REDACTED, "")) {
        return word.to_string();
    }
    match shlex::try_quote(word) {
        Ok(q) => q.into_owned(),
        // A NUL byte cannot be quoted; it has no business in a command anyway.
        Err(_) => shlex::try_quote(&word.replace('\0', "")).map(Cow::into_owned).unwrap_or_default(),
    }
}

fn redact_command_at(cmd: &str, depth: u32) -> Option<String> {
    if depth > 8 {
        return Some(REDACTED.to_string());
    }
    let Some(words) = shell_words(cmd) else {
        // Not readable as shell words at all: keep nothing that could be a secret.
        return Some(format!("{REDACTED} (unreadable command)"));
    };
    let (words, changed) = redact_words(words, depth);
    if !changed {
        return None;
    }
    Some(words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "))
}

/// Redacts a shell command line. Unchanged (byte for byte) when it holds no secret; otherwise
/// the words are re-quoted for the shell, so the result still reads as the same command.
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

pub fn redact_command(cmd: &str) -> String {
    match redact_command_at(cmd, 0) {
        None => redact_plain(cmd),
        Some(r) => r,
    }
}

/// The words as written, split on whitespace only: catches what the shell reading does not
/// see as words (a `# comment`), keeping the text byte for byte where nothing is secret.
fn redact_plain(cmd: &str) -> String {
    let mut out = String::with_capacity(cmd.len());
    let mut next = Next::default();
    let mut rest = cmd;
    while !rest.is_empty() {
        let ws = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..ws]);
        rest = &rest[ws..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let piece = &rest[..end];
        let bare = piece.trim_matches(|c| c == '"' || c == '\'' || c == '#');
        match redact_word(bare, &mut next, 1) {
            Some(n) if n != bare => out.push_str(&n),
            _ => out.push_str(piece),
        }
        rest = &rest[end..];
    }
    out
}

/// Removes known secret values, and any `Bearer` credential, from free text.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl Scrubber {
    pub fn new<I: IntoIterator<Item = String>>(secrets: I) -> Scrubber {
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| !s.trim().is_empty()).collect();
        // The JSON-escaped form too: a server that echoes the key inside a JSON string
        // escapes it, and that is the form a stored cell would hold.
        let escaped: Vec<String> = secrets
            .iter()
            .filter_map(|s| {
                let e = serde_json::to_string(s).ok()?;
                let e = e[1..e.len() - 1].to_string();
                (e != *s).then_some(e)
            })
            .collect();
        secrets.extend(escaped);
        // Longest first, so a secret that contains another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Scrubber { secrets }
    }

    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        scrub_bearer(&out)
    }
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
    fn secrets_are_redacted_and_other_words_kept() {
        let cmd = "env HF_TOKEN=hf_abc VLLM_X=1 OPENAI_API_KEY=sk-1 vllm serve m --api-key sk-secret --hf-token=hf_x --port 8000 --max-model-len 4096";
        assert_eq!(
            redact_command(cmd),
            "env HF_TOKEN=<redacted> VLLM_X=1 OPENAI_API_KEY=<redacted> vllm serve m --api-key <redacted> --hf-token=<redacted> --port 8000 --max-model-len 4096"
        );
    }

    #[test]
    fn commands_without_secrets_are_kept_byte_for_byte() {
        for cmd in ["llama-server -m x.gguf --ctx-size 8192", "vllm serve m \\\n  --tp 4\t--port 8000", "a  'b c'"] {
            assert_eq!(redact_command(cmd), cmd);
        }
    }

    #[test]
    fn shell_forms() {
        let cases = [
            ("vllm serve m \\\n  --api-key s3cr3t \\\n  --port 8000", "vllm serve m --api-key <redacted> --port 8000"),
            ("vllm serve m\t--api-key\ts3cr3t", "vllm serve m --api-key <redacted>"),
            ("vllm serve m --api-key \"a b\" --port 1", "vllm serve m --api-key <redacted> --port 1"),
            ("vllm serve m --api-keys k1 --port 1", "vllm serve m --api-keys <redacted> --port 1"),
            ("x --api-key='a b' y", "x --api-key=<redacted> y"),
            (
                "bash -c \"HF_TOKEN=s3cr3t vllm serve m --api-key k2\"",
                "bash -c 'HF_TOKEN=<redacted> vllm serve m --api-key <redacted>'",
            ),
            ("env 'HF_TOKEN=s3 cr3t' vllm serve m", "env HF_TOKEN=<redacted> vllm serve m"),
            ("curl -H 'Authorization: Bearer s3cr3t' http://h/v1", "curl -H 'Authorization: <redacted>' http://h/v1"),
            ("curl --header=x-api-key:s3cr3t http://h", "curl '--header=x-api-key: <redacted>' http://h"),
            ("curl -H'X-Api-Key: s3cr3t' http://h", "curl '-Hx-api-key: <redacted>' http://h"),
            ("x --url http://me:s3cr3t@host:80/v1 --y", "x --url http://me:<redacted>@host:80/v1 --y"),
            ("x --url=https://tok3n@host/v1", "x --url=https://<redacted>@host/v1"),
            ("x --hf-token", "x --hf-token"),
            ("x --api-key \"unclosed secret", "x --api-key <redacted>"),
        ];
        for (cmd, want) in cases {
            let got = redact_command(cmd);
            assert!(!got.contains("s3cr3t") && !got.contains("tok3n"), "{cmd:?} -> {got:?}");
            // `-H'X-Api-Key: ..'` keeps the header name as the user wrote it (case aside).
            assert_eq!(got.to_lowercase(), want.to_lowercase(), "{cmd:?}");
        }
    }

    #[test]
    fn scrubber_removes_known_keys_and_bearer_tokens() {
        let s = Scrubber::new(["sk-live-123".to_string(), "k\"q".to_string()]);
        assert_eq!(s.scrub("bad key sk-live-123!"), "bad key <redacted>!");
        assert_eq!(s.scrub(r#"{"got":"k\"q"}"#), r#"{"got":"<redacted>"}"#);
        assert_eq!(s.scrub("header was Bearer abc.def, rejected"), "header was Bearer <redacted>, rejected");
        assert_eq!(scrub_bearer("BEARER x"), "BEARER <redacted>");
    }

    mod generated {
        use super::super::*;
        use proptest::prelude::*;

        const FLAGS: &[&str] =
            &["--api-key", "--api-keys", "--hf-token", "--token", "--client-secret", "--db-password"];
        const ENVS: &[&str] = &["HF_TOKEN", "OPENAI_API_KEY", "MY_SECRET", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY"];

        /// A secret written into a command in one of the ways a shell accepts.
        fn placed(secret: &str, flag: &str, env: &str, form: u8) -> String {
            let sq = format!("'{secret}'");
            let dq = format!("\"{secret}\"");
            match form % 14 {
                0 => format!("{flag} {secret}"),
                1 => format!("{flag}={secret}"),
                2 => format!("{flag}\t{secret}"),
                3 => format!("{flag} \\\n  {secret}"),
                4 => format!("{flag} {dq}"),
                5 => format!("{flag} {sq}"),
                6 => format!("{flag}={dq}"),
                7 => format!("{env}={secret}"),
                8 => format!("{env}={sq}"),
                9 => format!("env '{env}={secret}'"),
                10 => format!("bash -c \"{flag} {secret}\""),
                11 => format!("sh -c '{env}={secret} run'"),
                12 => format!("-H 'Authorization: Bearer {secret}'"),
                _ => format!("--url http://user:{secret}@host:8000/v1"),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            #[test]
            fn no_secret_survives_any_quoting(
                secret in "[A-Za-z0-9_.+/-]{6,24}",
                flag in proptest::sample::select(FLAGS),
                env in proptest::sample::select(ENVS),
                form in any::<u8>(),
                sep in proptest::sample::select(&[" ", "\t", " \\\n  ", "  "][..]),
            ) {
                let secret = format!("Zq{secret}");
                let cmd = format!("vllm{sep}serve{sep}model-x{sep}{}{sep}--port{sep}8000", placed(&secret, flag, env, form));
                let out = redact_command(&cmd);
                prop_assert!(!out.contains(&secret), "{cmd:?} -> {out:?}");
                for kept in ["vllm", "serve", "model-x", "--port", "8000"] {
                    prop_assert!(out.contains(kept), "{kept} dropped: {cmd:?} -> {out:?}");
                }
            }

            #[test]
            fn arbitrary_text_never_panics(cmd in "\\PC{0,80}") {
                let _ = redact_command(&cmd);
                let _ = Scrubber::new(["k3y".to_string()]).scrub(&cmd);
            }
        }
    }
}

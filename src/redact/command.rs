//! Launch commands: the secret words replaced in place, everything else kept as written.
//!
//! A word is secret when it is the value of a secret flag (`--api-key X`, `--hf-token=X`),
//! of a credential flag (`curl -u user:X`, `--user user:X`: the password part), follows
//! `Bearer`, or is a header of a header flag with a secret name (`-H 'Authorization: ...'`).
//! Every word is also read as free text ([`super::text::scrub_text`]): `KEY=VALUE` pairs,
//! JSON-valued flags (`--hf-overrides '{"api_key": "..."}'`), URL userinfo and query keys,
//! well-known token formats. `bash -c "..."` bodies and `$(...)` are redacted as commands.

use std::borrow::Cow;

use super::lex::{is_redirection, lex, Kind};
use super::text::{scrub_text, secret_name};
use super::REDACTED;

/// Deeper nesting than this (`bash -c "sh -c '...'"` eight times) is redacted whole.
const MAX_DEPTH: u32 = 8;

/// Redacts a shell command line. Unchanged (byte for byte) when it holds no secret; otherwise
/// only the secret words change, re-quoted for the shell, and every operator, redirection,
/// grouping, comment and space stays as written.
pub fn redact_command(cmd: &str) -> String {
    let first = redact_at(cmd, 0);
    let secrets = long_enough(taken_out(cmd, &first));
    // The same value elsewhere in the command (`--api-key S; echo S`, a nested `sh -c`) is
    // the same secret: every copy goes.
    if secrets.iter().any(|s| first.contains(s.as_str())) {
        return redact_copies(&first, &secrets);
    }
    first.into_owned()
}

/// The secret values [`redact_command`] takes out of `cmd`, as the shell passes them on
/// (unquoted): the words a server started by it may print back.
pub fn command_secrets(cmd: &str) -> Vec<String> {
    long_enough(taken_out(cmd, &redact_at(cmd, 0)))
}

/// Secrets shorter than this are not searched for elsewhere (`-p 1` would mangle every `1`).
const MIN_SECRET_CHARS: usize = 4;

fn long_enough(mut secrets: Vec<String>) -> Vec<String> {
    secrets.retain(|s| s.chars().count() >= MIN_SECRET_CHARS && !s.contains(REDACTED));
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    secrets
}

/// The values replaced between `cmd` and its redaction, word by word.
fn taken_out(cmd: &str, redacted: &str) -> Vec<String> {
    if cmd == redacted {
        return Vec::new();
    }
    let words = |text: &str| -> Vec<String> {
        lex(text).into_iter().filter(|p| p.kind != Kind::Space).map(|p| unquoted(&text[p.span])).collect()
    };
    let (before, after) = (words(cmd), words(redacted));
    if before.len() != after.len() {
        // A whole text redacted at once (too deep, a key block): nothing to match word by word.
        return Vec::new();
    }
    before.iter().zip(&after).filter(|(b, a)| b != a).flat_map(|(b, a)| replaced_parts(b, a)).collect()
}

/// The parts of `before` that `after` shows as `<redacted>` (the literal text between marks
/// matched in order); the whole word where the two cannot be lined up.
fn replaced_parts(before: &str, after: &str) -> Vec<String> {
    let literal: Vec<&str> = after.split(REDACTED).collect();
    let (first, last) = (literal[0], literal[literal.len() - 1]);
    if literal.len() < 2 || !before.starts_with(first) || !before[first.len()..].ends_with(last) {
        return vec![before.to_string()];
    }
    let body = &before[first.len()..before.len() - last.len()];
    let mut out = Vec::new();
    let mut at = 0;
    for part in &literal[1..literal.len() - 1] {
        let Some(i) = body[at..].find(part).filter(|_| !part.is_empty()) else {
            return vec![before.to_string()];
        };
        out.push(body[at..at + i].to_string());
        at += i + part.len();
    }
    out.push(body[at..].to_string());
    out
}

/// Every word holding one of `secrets` with each copy replaced (re-quoted for the shell).
fn redact_copies(cmd: &str, secrets: &[String]) -> String {
    let mut out = String::with_capacity(cmd.len());
    for piece in lex(cmd) {
        let raw = &cmd[piece.span];
        if !secrets.iter().any(|s| raw.contains(s.as_str())) {
            out.push_str(raw);
            continue;
        }
        let replace = |text: &str| secrets.iter().fold(text.to_string(), |t, s| t.replace(s.as_str(), REDACTED));
        match piece.kind {
            Kind::Word => out.push_str(&quote(&replace(&unquoted(raw)))),
            _ => out.push_str(&replace(raw)),
        }
    }
    // A value quoted in a way the word reader does not undo (`$'...'`) is still a copy.
    secrets.iter().fold(out, |t, s| t.replace(s.as_str(), REDACTED))
}

fn redact_at(cmd: &str, depth: u32) -> Cow<'_, str> {
    if depth > MAX_DEPTH {
        return Cow::Owned(REDACTED.to_string());
    }
    let cmd_pem = super::text::scrub_pem(cmd);
    if let Some(pem) = cmd_pem {
        return Cow::Owned(redact_at(&pem, depth).into_owned());
    }
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut next = Next::default();
    let mut simple = Simple::default();
    // The words `echo`/`printf` wrote into a pipe: a secret when the next command reads a
    // password from standard input (`echo V | docker login --password-stdin`).
    let mut piped: Vec<std::ops::Range<usize>> = Vec::new();
    for piece in lex(cmd) {
        let raw = &cmd[piece.span.clone()];
        let new = match piece.kind {
            Kind::Space => None,
            Kind::Operator => {
                // A here-document's `"api_key":` with its value on the next line.
                let keyed = raw == "\n" && next.keyed;
                next = Next { file: is_redirection(raw), secret: keyed, keyed, ..Next::default() };
                if !is_redirection(raw) {
                    piped = if raw == "|" { std::mem::take(&mut simple.echoed) } else { Vec::new() };
                    simple = Simple::default();
                }
                None
            }
            Kind::Comment => owned(scrub_text(raw)),
            Kind::Word => {
                if reads_password_from_stdin(raw) {
                    edits.extend(piped.drain(..).map(|r| (r, REDACTED.to_string())));
                }
                let new = redact_raw_word(raw, &mut next, &mut simple, depth);
                if new.is_none() && simple.echoing() {
                    simple.echoed.push(piece.span.clone());
                }
                simple.words += 1;
                new
            }
        };
        if let Some(new) = new {
            edits.push((piece.span, new));
        }
    }
    if edits.is_empty() {
        return Cow::Borrowed(cmd);
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(cmd.len());
    let mut done = 0;
    for (range, new) in edits {
        if range.start < done || cmd[range.clone()] == new {
            continue;
        }
        out.push_str(&cmd[done..range.start]);
        out.push_str(&new);
        done = range.end;
    }
    out.push_str(&cmd[done..]);
    if out == cmd {
        return Cow::Borrowed(cmd);
    }
    Cow::Owned(out)
}

/// `--password-stdin`, `--token-stdin`: the secret comes down the pipe.
fn reads_password_from_stdin(raw: &str) -> bool {
    raw.strip_suffix("-stdin").is_some_and(|name| name.starts_with('-') && secret_name(name))
}

/// What the words so far of one simple command (up to an operator) say about the rest.
#[derive(Default)]
struct Simple {
    /// Words seen, the program included.
    words: usize,
    program: String,
    /// `docker login`, `helm registry login`: `-p` is the password.
    login: bool,
    /// `aws configure set`, `git config`, `npm config set`: a secret-named key's value follows.
    config: bool,
    /// Spans of `echo`/`printf` arguments.
    echoed: Vec<std::ops::Range<usize>>,
}

impl Simple {
    fn echoing(&self) -> bool {
        self.words > 0 && matches!(self.program.as_str(), "echo" | "printf")
    }

    fn script_language(&self) -> bool {
        let p = self.program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        self.words > 0 && matches!(p, "python" | "node" | "perl" | "ruby" | "php" | "deno" | "bun" | "jq" | "awk")
    }

    fn mysql(&self) -> bool {
        matches!(self.program.as_str(), "mysql" | "mariadb" | "mysqldump" | "mysqladmin" | "mysqlsh")
    }

    /// Notes a word that is not a flag's value.
    fn see(&mut self, w: &str) {
        if self.words == 0
            || (self.program == "sudo" || self.program == "env") && !w.starts_with('-') && !w.contains('=')
        {
            self.program = w.rsplit('/').next().unwrap_or(w).to_string();
        }
        if self.words > 0 {
            self.login |= w == "login";
            self.config |= matches!(w, "config" | "configure");
        }
    }
}

fn owned(c: Cow<'_, str>) -> Option<String> {
    match c {
        Cow::Owned(s) => Some(s),
        Cow::Borrowed(_) => None,
    }
}

/// What the previous word said about the next one.
#[derive(Default)]
struct Next {
    secret: bool,
    /// The secret is the value of a YAML or JSON key (`api_key:`), which may stand on the
    /// next line.
    keyed: bool,
    header: bool,
    /// After `-u`/`--user`: `user:password`.
    credentials: bool,
    /// After `-c` (`bash -c`, `sh -c`): a whole command.
    body: bool,
    /// After a redirection: a file name.
    file: bool,
}

/// The replacement text of one word as written (quotes and all), or `None` to keep it.
fn redact_raw_word(raw: &str, next: &mut Next, simple: &mut Simple, depth: u32) -> Option<String> {
    if std::mem::take(&mut next.file) {
        return owned(scrub_text(raw));
    }
    // A secret flag's value, whatever its form: `$(echo V)` and backticks too. A flag after a
    // value-less secret flag (`--hf-token --port 8000`) is a flag, not the value.
    if next.secret && !looks_like_flag(raw) {
        next.secret = false;
        next.keyed = false;
        return (raw != REDACTED).then(|| REDACTED.to_string());
    }
    next.secret = false;
    next.keyed = false;
    if let Some(inner) = raw.strip_prefix("$(").and_then(|r| r.strip_suffix(')')) {
        return owned(redact_at(inner, depth + 1)).map(|i| format!("$({i})"));
    }
    if let Some(inner) = raw.strip_prefix('`').and_then(|r| r.strip_suffix('`')).filter(|_| raw.len() > 1) {
        return owned(redact_at(inner, depth + 1)).map(|i| format!("`{i}`"));
    }
    // A quoted program text of a language other than the shell (`python -c '...'`) is read as
    // free text as written: its quotes are the program's, not the shell's.
    if simple.script_language() && raw.starts_with(['\'', '"']) {
        return owned(scrub_text(raw));
    }
    let value = unquoted(raw);
    simple.see(&value);
    if let Some(r) = redact_in_context(&value, simple, next) {
        return r;
    }
    let new = redact_word(&value, next, depth)?;
    (new != value).then(|| quote(&new))
}

/// The word's value as the shell passes it on: quotes removed, escapes read.
fn unquoted(raw: &str) -> String {
    if raw == REDACTED {
        return raw.to_string();
    }
    let words = shlex::split(raw).or_else(|| ["\"", "'"].iter().find_map(|c| shlex::split(&format!("{raw}{c}"))));
    match words.as_deref() {
        Some([one]) => one.clone(),
        Some([]) => String::new(),
        _ => raw.to_string(),
    }
}

/// `--api-key`, `-p`: what a flag looks like (a negative number does not).
fn looks_like_flag(raw: &str) -> bool {
    raw.starts_with('-') && raw.chars().nth(1).is_some_and(|c| c.is_ascii_alphabetic() || c == '-')
}

/// Rules that depend on the program: `docker login -p V`, `mysql -pV`,
/// `aws configure set aws_secret_access_key V`. `Some(edit)` decides the word.
fn redact_in_context(w: &str, simple: &Simple, next: &mut Next) -> Option<Option<String>> {
    if simple.login && w == "-p" {
        next.secret = true;
        return Some(None);
    }
    if simple.mysql() && w.len() > 2 && w.starts_with("-p") && !w.starts_with("--") {
        return Some((&w[2..] != REDACTED).then(|| format!("-p{REDACTED}")));
    }
    // A YAML or JSON line of a here-document: `api_key: V`, `"token": "V",`.
    if let Some(name) = w.strip_suffix(':').map(|n| n.trim_matches(['"', '\''])) {
        if !name.is_empty() && secret_name(name) && !matches!(name.to_ascii_lowercase().as_str(), "key" | "auth") {
            next.secret = true;
            next.keyed = true;
            return Some(None);
        }
    }
    if simple.config
        && !w.starts_with('-')
        && !w.contains(['=', ' '])
        && secret_name(w.rsplit([':', '/']).next().unwrap_or(w))
    {
        next.secret = true;
        return Some(None);
    }
    None
}

/// The redacted value of one word, or `None` when it stays as it is.
fn redact_word(w: &str, next: &mut Next, depth: u32) -> Option<String> {
    if w.eq_ignore_ascii_case("bearer") {
        *next = Next { secret: true, ..Next::default() };
        return None;
    }
    if std::mem::take(&mut next.credentials) {
        return credentials(w).or_else(|| owned(scrub_text(w)));
    }
    if std::mem::take(&mut next.header) {
        return redact_header(w).or_else(|| owned(redact_at(w, depth + 1)));
    }
    if std::mem::take(&mut next.body) {
        return owned(redact_at(w, depth + 1));
    }
    next.body = w == "-c";
    if let Some((name, value)) = w.split_once('=').filter(|(n, _)| is_env_name(n) && secret_name(n)) {
        return (value != REDACTED).then(|| format!("{name}={REDACTED}"));
    }
    if w.starts_with('-') {
        if let Some(r) = redact_flag(w, next) {
            return Some(r);
        }
    } else if several_words(w) && !w.starts_with(['{', '[']) {
        // A quoted body: `bash -c "..."`, `sh -c '...'`, `env 'X=..'`.
        if let Some(r) = owned(redact_at(w, depth + 1)) {
            return Some(r);
        }
    }
    owned(scrub_text(w))
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `w` reads as more than one word (a command in a quoted word); a word that reads
/// as itself (`$(date +%s)` unquoted by the shell) is not read again.
fn several_words(w: &str) -> bool {
    w.chars().any(char::is_whitespace) && lex(w).iter().filter(|p| p.kind == Kind::Word).nth(1).is_some()
}

/// `--api-key=X`, `--api-key X`, `-H 'Name: X'`, `--user=u:X`, `-uuser:X`.
fn redact_flag(w: &str, next: &mut Next) -> Option<String> {
    if let Some((flag, value)) = w.split_once('=') {
        if secret_name(flag) {
            return (value != REDACTED).then(|| format!("{flag}={REDACTED}"));
        }
        if header_flag(flag) {
            return redact_header(value).map(|h| format!("{flag}={h}"));
        }
        if credentials_flag(flag) {
            return credentials(value).map(|c| format!("{flag}={c}"));
        }
        return None;
    }
    if secret_name(w) {
        next.secret = true;
    } else if header_flag(w) {
        next.header = true;
    } else if credentials_flag(w) {
        next.credentials = true;
    } else if let Some(h) = w.strip_prefix("-H").filter(|h| h.contains(':')) {
        return redact_header(h).map(|h| format!("-H{h}"));
    } else if let Some(c) = w.strip_prefix("-u").filter(|c| c.contains(':')) {
        return credentials(c).map(|c| format!("-u{c}"));
    }
    None
}

/// Header flags of curl-like tools and of engines that pass headers on.
fn header_flag(flag: &str) -> bool {
    matches!(flag, "-H" | "--header" | "--headers" | "--middleware-header" | "--extra-header" | "--proxy-header")
}

/// `curl -u user:password`, `--user`, `--proxy-user`, `-U`.
fn credentials_flag(flag: &str) -> bool {
    matches!(flag, "-u" | "-U" | "--user" | "--proxy-user" | "--basic-auth" | "--http-user")
}

/// `user:password` keeps the user.
fn credentials(value: &str) -> Option<String> {
    // `-u http://...` is an address (its userinfo has the URL rule), not `user:password`.
    if value.contains("://") {
        return None;
    }
    let (user, password) = value.split_once(':')?;
    (!password.is_empty() && password != REDACTED).then(|| format!("{user}:{REDACTED}"))
}

/// `Authorization: Bearer x`, `x-api-key: x`, `Cookie: x`...: the header's value is secret.
fn redact_header(h: &str) -> Option<String> {
    let (name, value) = h.split_once(':')?;
    let n = name.trim().to_ascii_lowercase();
    let secret = matches!(n.as_str(), "proxy-authorization" | "set-cookie") || secret_name(&n);
    (secret && value.trim() != REDACTED).then(|| format!("{}: {REDACTED}", name.trim()))
}

/// Quotes a word for the shell, leaving `<redacted>` readable (`--api-key=<redacted>` rather
/// than `'--api-key=<redacted>'`); the mark reads as one word wherever it stands.
fn quote(word: &str) -> String {
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

#[cfg(test)]
mod tests;

//! Launch commands compared flag by flag: `--tp 2` vs `--tp 4` is one changed value, not
//! two different blobs.

use serde::Serialize;

/// Splits a shell command line into words (single and double quotes, backslash escapes).
pub fn shell_words(cmd: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = cmd.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(&n) = chars.peek() {
                    if n == '"' || n == '\\' || n == '$' {
                        cur.push(n);
                        chars.next();
                        continue;
                    }
                }
                cur.push('\\');
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    in_word = true;
                }
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// A command as settings: environment assignments, the program and positional words, and
/// flags with their values (`--flag value`, `--flag=value`, or a bare switch).
#[derive(Debug, Default, PartialEq)]
pub struct ParsedCommand {
    pub env: Vec<(String, String)>,
    pub positional: Vec<String>,
    pub flags: Vec<(String, Option<String>)>,
}

pub fn parse_command(cmd: &str) -> ParsedCommand {
    let words = shell_words(cmd);
    let mut out = ParsedCommand::default();
    let mut i = 0;
    if words.first().map(String::as_str) == Some("env") {
        i = 1;
    }
    while i < words.len() {
        let w = &words[i];
        match w.split_once('=') {
            Some((name, value))
                if out.positional.is_empty()
                    && !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                out.env.push((name.to_string(), value.to_string()));
                i += 1;
            }
            _ => break,
        }
    }
    while i < words.len() {
        let w = &words[i];
        if w.starts_with('-') && w.len() > 1 && w.parse::<f64>().is_err() {
            if let Some((flag, value)) = w.split_once('=') {
                out.flags.push((flag.to_string(), Some(value.to_string())));
            } else {
                let value = words.get(i + 1).filter(|n| !n.starts_with('-') || n.parse::<f64>().is_ok()).cloned();
                if value.is_some() {
                    i += 1;
                }
                out.flags.push((w.clone(), value));
            }
        } else {
            out.positional.push(w.clone());
        }
        i += 1;
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlagDiff {
    /// `--tp`, `ENV NAME=`, or `command`.
    pub name: String,
    pub a: Option<String>,
    pub b: Option<String>,
    pub change: FlagChange,
}

/// How a flag differs between the two commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagChange {
    Same,
    Changed,
    /// Only in B.
    Added,
    /// Only in A.
    Removed,
}

fn show(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(switch)".into())
}

/// Flag-by-flag differences, in the order the flags appear (A's first, then B's new ones).
pub fn diff_commands(a: &str, b: &str) -> Vec<FlagDiff> {
    let (pa, pb) = (parse_command(a), parse_command(b));
    let mut rows = Vec::new();
    let row = |name: String, va: Option<String>, vb: Option<String>, present: (bool, bool)| {
        let change = match present {
            (true, false) => FlagChange::Removed,
            (false, true) => FlagChange::Added,
            _ if va == vb => FlagChange::Same,
            _ => FlagChange::Changed,
        };
        FlagDiff { name, a: va, b: vb, change }
    };
    let pos_a = pa.positional.join(" ");
    let pos_b = pb.positional.join(" ");
    rows.push(row("command".into(), Some(pos_a.clone()), Some(pos_b.clone()), (true, true)));
    let mut env_names: Vec<&String> = pa.env.iter().map(|e| &e.0).collect();
    for (n, _) in &pb.env {
        if !env_names.contains(&n) {
            env_names.push(n);
        }
    }
    for n in env_names {
        let va = pa.env.iter().find(|e| &e.0 == n).map(|e| e.1.clone());
        let vb = pb.env.iter().find(|e| &e.0 == n).map(|e| e.1.clone());
        let present = (va.is_some(), vb.is_some());
        rows.push(row(format!("{n}="), va, vb, present));
    }
    let mut names: Vec<&String> = Vec::new();
    for (f, _) in pa.flags.iter().chain(&pb.flags) {
        if !names.contains(&f) {
            names.push(f);
        }
    }
    for n in names {
        let va: Vec<String> = pa.flags.iter().filter(|f| &f.0 == n).map(|f| show(&f.1)).collect();
        let vb: Vec<String> = pb.flags.iter().filter(|f| &f.0 == n).map(|f| show(&f.1)).collect();
        let present = (!va.is_empty(), !vb.is_empty());
        let join = |v: Vec<String>| (!v.is_empty()).then(|| v.join(", "));
        rows.push(row(n.clone(), join(va), join(vb), present));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_quotes() {
        assert_eq!(
            shell_words(r#"env A=1 "$HOME/bin/vllm" serve 'x y' --k=v\ w"#),
            ["env", "A=1", "$HOME/bin/vllm", "serve", "x y", "--k=v w"]
        );
    }

    #[test]
    fn flags_are_diffed_one_by_one() {
        let a = "env X=1 vllm serve m --tp 4 --max-model-len 262144 --enable-expert-parallel --api-key <redacted>";
        let b = "vllm serve m --tp 2 --max-model-len=262144 --enable-metrics --api-key <redacted> --shift -1";
        let d = diff_commands(a, b);
        let get = |n: &str| d.iter().find(|r| r.name == n).unwrap().clone();
        assert_eq!(get("command").change, FlagChange::Same);
        assert_eq!(get("X=").change, FlagChange::Removed);
        assert_eq!(
            (get("--tp").a, get("--tp").b, get("--tp").change),
            (Some("4".into()), Some("2".into()), FlagChange::Changed)
        );
        assert_eq!(get("--max-model-len").change, FlagChange::Same);
        assert_eq!(get("--enable-expert-parallel").change, FlagChange::Removed);
        assert_eq!(get("--enable-metrics").change, FlagChange::Added);
        assert_eq!(get("--shift").b.as_deref(), Some("-1"));
        assert_eq!(get("--api-key").change, FlagChange::Same);
    }
}

//! Markdown (a run's notes, a site page): commands pasted into it lose their secrets as a
//! launch command does, and the prose loses secret-shaped text.
//!
//! A command is what a reader would run: every line of a fenced or indented code block, every
//! code span, and a prose line that reads as a shell command (a `$ ` prompt, a known program,
//! an environment assignment first, or a continuation). Those go through
//! [`super::redact_command`] (`--api-key V`, `curl -u admin:V`, `docker login -p V`); every
//! line also goes through [`super::scrub_text`]. A backslash continuation joins lines into one
//! command, so a value on the next line is still the flag's.

use std::borrow::Cow;

use super::{redact_command, scrub_text};

/// Programs whose command lines users paste into notes. A prose line starting with one of
/// them reads as a command.
const PROGRAMS: &[&str] = &[
    "aws",
    "az",
    "bash",
    "curl",
    "docker",
    "env",
    "export",
    "gcloud",
    "git",
    "guidellm",
    "helm",
    "hf",
    "huggingface-cli",
    "inference-perf",
    "kubectl",
    "llama-server",
    "lmdeploy",
    "mysql",
    "nerdctl",
    "ollama",
    "pip",
    "podman",
    "psql",
    "python",
    "python3",
    "sglang",
    "sh",
    "site",
    "ssh",
    "sudo",
    "text-generation-launcher",
    "trtllm-serve",
    "uv",
    "vllm",
    "wget",
    "aiperf",
    "genai-perf",
    "echo",
    "set",
    "setx",
];

/// The Markdown as it may be published (`None` when nothing was redacted) and the 1-based
/// numbers of the lines whose text changed.
pub fn scrub_markdown(markdown: &str) -> (Option<String>, Vec<usize>) {
    let lines: Vec<&str> = markdown.split_inclusive('\n').collect();
    let mut out: Vec<Cow<'_, str>> = lines.iter().map(|l| Cow::Borrowed(*l)).collect();
    let mut fence: Option<Fence> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(f) = &fence {
            if f.closes(line) {
                fence = None;
                i += 1;
                continue;
            }
        } else if let Some(f) = Fence::opens(line) {
            fence = Some(f);
            i += 1;
            continue;
        }
        let in_code = fence.is_some() || indented_code(line);
        let end = logical_end(&lines, i);
        if in_code || reads_as_command(line) {
            redact_logical_line(&lines[i..end], &mut out[i..end]);
        } else {
            out[i] = redact_code_spans(line);
        }
        for o in &mut out[i..end] {
            if let Cow::Owned(s) = scrub_text(o) {
                *o = Cow::Owned(s);
            }
        }
        i = end;
    }
    let changed: Vec<usize> =
        lines.iter().zip(&out).enumerate().filter(|(_, (a, b))| **a != b.as_ref()).map(|(i, _)| i + 1).collect();
    if changed.is_empty() {
        (None, changed)
    } else {
        (Some(out.concat()), changed)
    }
}

/// A fenced block's opening: three or more backticks or tildes.
struct Fence {
    ch: char,
    len: usize,
}

impl Fence {
    fn opens(line: &str) -> Option<Fence> {
        let t = line.trim_start_matches(' ');
        if line.len() - t.len() > 3 {
            return None;
        }
        let ch = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
        let len = t.chars().take_while(|&c| c == ch).count();
        // A backtick fence's info string holds no backtick (else it is a code span).
        (len >= 3 && !(ch == '`' && t[len..].contains('`'))).then_some(Fence { ch, len })
    }

    fn closes(&self, line: &str) -> bool {
        let t = line.trim();
        t.chars().take_while(|&c| c == self.ch).count() >= self.len && t.chars().all(|c| c == self.ch)
    }
}

fn indented_code(line: &str) -> bool {
    (line.starts_with("    ") || line.starts_with('\t')) && !line.trim().is_empty()
}

/// The index after the last line of the command that starts at `i` (lines ending in `\` go on).
fn logical_end(lines: &[&str], i: usize) -> usize {
    let mut end = i;
    while end < lines.len() {
        let continued = lines[end].trim_end_matches(['\n', '\r']).ends_with('\\');
        end += 1;
        if !continued {
            break;
        }
    }
    end
}

/// Whether a prose line is a shell command a reader would run.
fn reads_as_command(line: &str) -> bool {
    let t = line.trim_start().trim_start_matches(['>', '-', '*']).trim_start();
    if t.starts_with("$ ") || t.starts_with("# ") && t.len() > 2 && PROGRAMS.iter().any(|p| t[2..].starts_with(p)) {
        return true;
    }
    let first = t.split_whitespace().next().unwrap_or("");
    let program = first.rsplit('/').next().unwrap_or(first);
    let assignment = first.split_once('=').is_some_and(|(n, _)| {
        !n.is_empty() && n.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    });
    PROGRAMS.contains(&program) || assignment || t.trim_end().ends_with(" \\")
}

/// Redacts the lines of one command (continuations joined) and puts the changed lines back.
fn redact_logical_line<'a>(lines: &[&'a str], out: &mut [Cow<'a, str>]) {
    let joined = lines.concat();
    // A prompt is not part of the command.
    let (prompt, cmd) = split_prompt(&joined);
    let redacted = redact_command(cmd);
    if redacted == cmd {
        for (o, l) in out.iter_mut().zip(lines) {
            *o = redact_code_spans(l);
        }
        return;
    }
    let new = format!("{prompt}{redacted}");
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    if new_lines.len() == lines.len() {
        for (o, n) in out.iter_mut().zip(new_lines) {
            *o = Cow::Owned(n.to_string());
        }
    } else {
        out[0] = Cow::Owned(new.clone());
        for o in &mut out[1..] {
            *o = Cow::Owned(String::new());
        }
    }
}

fn split_prompt(line: &str) -> (&str, &str) {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    for prompt in ["$ ", "# "] {
        if body.starts_with(prompt) {
            return line.split_at(indent + prompt.len());
        }
    }
    line.split_at(indent)
}

/// Every code span of a line (`` `...` ``, any number of backticks) redacted as a command.
fn redact_code_spans(line: &str) -> Cow<'_, str> {
    if !line.contains('`') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut done = 0;
    let mut i = 0;
    let bytes = line.as_bytes();
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
        let open_end = i + run;
        let Some(close) = find_run(line, open_end, run) else {
            i = open_end;
            continue;
        };
        let body = &line[open_end..close];
        let redacted = redact_command(body);
        if redacted != body {
            out.push_str(&line[done..open_end]);
            out.push_str(&redacted);
            done = close;
        }
        i = close + run;
    }
    if done == 0 {
        return Cow::Borrowed(line);
    }
    out.push_str(&line[done..]);
    Cow::Owned(out)
}

/// The start of the next run of exactly `len` backticks at or after `from`.
fn find_run(line: &str, from: usize, len: usize) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            if run == len {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrub(md: &str) -> (String, Vec<usize>) {
        let (text, lines) = scrub_markdown(md);
        (text.unwrap_or_else(|| md.to_string()), lines)
    }

    /// Each launch-command credential form, pasted as a code span, a fenced block, an indented
    /// block and a prose command line: the value never survives and the line is named.
    #[test]
    fn commands_in_every_markdown_place_lose_their_secrets() {
        let commands = [
            "vllm serve m --api-key V4lue9",
            "vllm serve m --hf-token V4lue9 --port 8000",
            "docker login -p V4lue9 registry.example",
            "curl -u admin:V4lue9 http://h/v1/models",
            "llama-server -m x.gguf --api-key=V4lue9",
            "HF_TOKEN=V4lue9 vllm serve m",
        ];
        for cmd in commands {
            let places = [
                (format!("Started with `{cmd}` today.\n"), 1),
                (format!("Intro\n\n```bash\n{cmd}\n```\n"), 4),
                (format!("Intro\n\n~~~\n$ {cmd}\n~~~\n"), 4),
                (format!("Intro\n\n    {cmd}\n"), 3),
                (format!("Intro\n\n{cmd}\n"), 3),
                (format!("Intro\n\n$ {cmd}\n"), 3),
            ];
            for (md, line) in places {
                let (out, lines) = scrub(&md);
                assert!(!out.contains("V4lue9"), "{md:?} -> {out:?}");
                assert!(out.contains("<redacted>"), "{md:?} -> {out:?}");
                assert_eq!(lines, vec![line], "{md:?}");
            }
        }
    }

    #[test]
    fn a_continued_command_keeps_its_value_with_its_flag() {
        let md = "```\nvllm serve m \\\n  --api-key \\\n  V4lue9 \\\n  --port 8000\n```\n";
        let (out, lines) = scrub(md);
        assert_eq!(out, "```\nvllm serve m \\\n  --api-key \\\n  <redacted> \\\n  --port 8000\n```\n");
        assert_eq!(lines, vec![4]);
    }

    #[test]
    fn prose_and_commands_without_secrets_are_kept_byte_for_byte() {
        for md in [
            "The --api-key flag sets the key the server checks.\n",
            "Use `--max-num-batched-tokens 8192` and `-p 8000:8000` for docker.\n",
            "```\ndocker run -p 8000:8000 vllm/vllm-openai --model m\n```\n",
            "Time to first token: 35 ms; don't worry about `it's` quoting.\n",
            "    indented prose\n",
            "| flag | meaning |\n|---|---|\n| `--api-key` | the key |\n",
        ] {
            assert_eq!(scrub_markdown(md), (None, Vec::new()), "{md:?}");
        }
    }
}

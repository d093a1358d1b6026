//! Secrets never reach the disk: a launch command is stored with the values of secret flags
//! (`--api-key X`, `--hf-token=X`, ...) and of secret environment assignments
//! (`HF_TOKEN=...`, `OPENAI_API_KEY=...`) replaced by `<redacted>`.

pub const REDACTED: &str = "<redacted>";

fn secret_flag(flag: &str) -> bool {
    let f = flag.trim_start_matches('-').to_ascii_lowercase().replace('_', "-");
    matches!(f.as_str(), "api-key" | "hf-token" | "token" | "password" | "secret" | "access-token" | "auth-token")
        || f.ends_with("-api-key")
        || f.ends_with("-token")
        || f.ends_with("-secret")
        || f.ends_with("-password")
}

fn secret_env(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    n.ends_with("_TOKEN") || n.ends_with("_KEY") || n.ends_with("_SECRET") || n.ends_with("_PASSWORD") || n == "TOKEN"
}

/// Redacts a shell command line, keeping its spacing between words.
pub fn redact_command(cmd: &str) -> String {
    let words: Vec<&str> = cmd.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut redact_next = false;
    for w in words {
        if redact_next && !w.is_empty() {
            out.push(REDACTED.to_string());
            redact_next = false;
            continue;
        }
        if w.starts_with('-') {
            if let Some((flag, _)) = w.split_once('=') {
                if secret_flag(flag) {
                    out.push(format!("{flag}={REDACTED}"));
                    continue;
                }
            } else if secret_flag(w) {
                redact_next = true;
            }
        } else if let Some((name, _)) = w.split_once('=') {
            let is_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if is_name && secret_env(name) {
                out.push(format!("{name}={REDACTED}"));
                continue;
            }
        }
        out.push(w.to_string());
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        let cmd = "env HF_TOKEN=hf_abc VLLM_X=1 OPENAI_API_KEY=sk-1 vllm serve m --api-key sk-secret --hf-token=hf_x --port 8000 --max-model-len 4096";
        let r = redact_command(cmd);
        assert_eq!(r, "env HF_TOKEN=<redacted> VLLM_X=1 OPENAI_API_KEY=<redacted> vllm serve m --api-key <redacted> --hf-token=<redacted> --port 8000 --max-model-len 4096");
        for secret in ["hf_abc", "sk-1", "sk-secret", "hf_x"] {
            assert!(!r.contains(secret));
        }
        assert_eq!(redact_command("llama-server -m x.gguf --ctx-size 8192"), "llama-server -m x.gguf --ctx-size 8192");
    }
}

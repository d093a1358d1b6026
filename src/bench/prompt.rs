//! Prompts of an exact size: a tag unique to the measurement and context at the very start
//! (prefix caches match from the first token, so no prompt is ever served from another
//! context or measurement, even under a re-used run id), then filler words, sized with the server's tokenizer and confirmed by usage.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::client::http::HttpClient;
use super::discover::EngineKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    #[default]
    Chat,
    Completions,
}

impl Api {
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
        }
    }
}

pub(crate) const WORDS: &[&str] = &[
    "river", "stone", "harbor", "lantern", "meadow", "copper", "signal", "orchard", "glacier", "violet", "engine",
    "marble", "thunder", "saddle", "pepper", "canyon", "window", "falcon", "ember", "ledger", "compass", "willow",
    "anchor", "quartz", "velvet", "summit", "cobalt", "harvest", "pillar", "lagoon", "timber", "beacon",
];

/// `n` filler words, deterministic for a seed (a small LCG: no dependency, same every run).
pub fn filler(n: usize, seed: u64) -> String {
    let mut s = String::with_capacity(n * 7);
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    for i in 0..n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[(x >> 33) as usize % WORDS.len()]);
    }
    s
}

/// A tag no earlier measurement used: 32 random bits, then the time in milliseconds (random
/// first: two runs started close together share no leading digits).
pub fn measurement_tag() -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let mut r = [0u8; 4];
    let _ = getrandom::fill(&mut r);
    format!("{:08x}-{ms:x}", u32::from_le_bytes(r))
}

/// The text of a prompt: tag + filler + the instruction to write at length. What tells
/// prompts apart comes first, most often changing first: the variant (a re-sized prompt
/// shares at most `[v` with the first one), then the context, then the measurement's tag, so
/// no prompt finds more than a token or a few of another in the prefix cache.
pub fn prompt_text(tag: &str, context: u32, variant: u32, words: usize) -> String {
    format!(
        "[v{variant} ctx-{context} {tag} speed-matrix] Read the notes below, then write a long, detailed story that uses them.\n{}",
        filler(words, context as u64 + variant as u64 * 7919)
    )
}

/// Request `n`'s prompt of a decode cell measured with `reuse_pct` prefix reuse, from the
/// cell's sized prompt (`prompt_text`): the same number of words, the first `reuse_pct`
/// percent of them the sized prompt's own (every request of the cell sends them, so an
/// engine's prefix cache holds them after the first), then a marker of this request and
/// words of its own, then the instruction. At 0 the marker comes first: nothing is shared
/// but the chat template; at 100 every request sends the sized prompt itself.
pub fn reuse_prompt(sized: &str, reuse_pct: u32, n: u64) -> String {
    if reuse_pct >= 100 {
        return sized.to_string();
    }
    let (header, filler) = sized.split_once('\n').unwrap_or((sized, ""));
    let (bracket, instruction) = header.split_once("] ").unwrap_or((header, ""));
    let words: Vec<&str> = filler.split(' ').filter(|w| !w.is_empty()).collect();
    let total = words.len() + header.split(' ').count();
    let shared = ((total as f64 * reuse_pct.min(100) as f64 / 100.0).round() as usize).min(words.len());
    let own = words.len() - shared;
    let seed = crate::units::fnv1a(bracket.as_bytes()) ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!(
        "{}{}{bracket} r{n}] {}\n{}",
        words[..shared].join(" "),
        if shared > 0 { "\n" } else { "" },
        filler_words(own, seed),
        instruction.replace("below", "above")
    )
}

fn filler_words(n: usize, seed: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        filler(n, seed)
    }
}

/// The question that opens turn `turn` (2 on) of a conversation, after the earlier turns
/// and their answers.
pub fn next_question(turn: u32) -> String {
    format!("Thank you. Now continue the story from where you stopped, with what happens next (part {turn}).")
}

/// A chat request body for a conversation: (role, text) messages in order.
pub fn conversation_body(model: &str, messages: &[(&str, String)], max_tokens: u32) -> Value {
    let mut body = request_body(Api::Chat, model, "", max_tokens, true);
    body["messages"] =
        Value::Array(messages.iter().map(|(role, content)| json!({"role": role, "content": content})).collect());
    body
}

/// The request body for a prompt.
pub fn request_body(api: Api, model: &str, prompt: &str, max_tokens: u32, stream: bool) -> Value {
    let mut body = match api {
        Api::Chat => json!({
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_completion_tokens": max_tokens,
            "max_tokens": max_tokens,
        }),
        Api::Completions => json!({"model": model, "prompt": prompt, "max_tokens": max_tokens}),
    };
    body["ignore_eos"] = json!(true);
    body["temperature"] = json!(0.7);
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true, "continuous_usage_stats": true});
    }
    body
}

/// Counts a prompt's tokens with the server's `/tokenize`, or `None` if it has none.
pub async fn tokenize(
    client: &HttpClient,
    engine: EngineKind,
    api: Api,
    model: &str,
    prompt: &str,
) -> Result<Option<u64>> {
    let bodies: Vec<Value> = match (engine, api) {
        (EngineKind::LlamaCpp, _) => vec![json!({"content": prompt, "add_special": true})],
        (_, Api::Chat) => vec![
            json!({"model": model, "messages": [{"role": "user", "content": prompt}]}),
            json!({"model": model, "prompt": prompt}),
        ],
        (_, Api::Completions) => vec![json!({"model": model, "prompt": prompt})],
    };
    for body in bodies {
        let Ok((status, bytes)) = client.post("/tokenize", &body).await else {
            continue;
        };
        if !status.is_success() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        if let Some(c) = v.get("count").and_then(Value::as_u64) {
            return Ok(Some(c));
        }
        if let Some(t) = v.get("tokens").and_then(Value::as_array) {
            return Ok(Some(t.len() as u64));
        }
    }
    Ok(None)
}

/// Counts prompt tokens through a real one-token request's `usage.prompt_tokens`.
pub async fn count_by_request(client: &HttpClient, api: Api, model: &str, prompt: &str) -> Result<u64> {
    let (status, bytes) = client.post(api.path(), &request_body(api, model, prompt, 1, false)).await?;
    if !status.is_success() {
        bail!("sizing request answered {status}: {}", super::client::protocol::error_body_message(&bytes));
    }
    let v: Value = serde_json::from_slice(&bytes).context("sizing request: response is not JSON")?;
    v.pointer("/usage/prompt_tokens")
        .and_then(Value::as_u64)
        .context("sizing request: no usage.prompt_tokens in the response")
}

#[derive(Debug, Clone)]
pub struct SizedPrompt {
    pub text: String,
    /// Tokens by the server's count (tokenizer or usage).
    pub tokens: u64,
    pub method: &'static str,
}

/// The tolerance of a prompt's size: 0.2% or 4 tokens.
pub use super::plan::size_tolerance;

/// Finds the number of filler words that gives `target` tokens by the server's count, for
/// the prompt tagged with `context`. (The caller confirms with the real request's usage and
/// asks again with a corrected target where a chat template adds tokens the tokenizer did
/// not count.)
/// Which prompt to size: the context it is tagged with, its variant, and the tokens wanted.
#[derive(Debug, Clone, Copy)]
pub struct SizeTarget {
    pub context: u32,
    pub variant: u32,
    pub tokens: u32,
}

pub async fn size_prompt(
    client: &HttpClient,
    engine: EngineKind,
    api: Api,
    model: &str,
    tag: &str,
    want: SizeTarget,
) -> Result<SizedPrompt> {
    let SizeTarget { context, variant, tokens: target } = want;
    let tolerance = size_tolerance(target);
    let mut words = (target as usize).saturating_sub(32).max(1);
    let mut best: Option<SizedPrompt> = None;
    let mut use_tokenizer = true;
    for _ in 0..8 {
        let text = prompt_text(tag, context, variant, words);
        let (count, method) =
            match if use_tokenizer { tokenize(client, engine, api, model, &text).await? } else { None } {
                Some(c) => (c, "tokenize"),
                None => {
                    use_tokenizer = false;
                    (count_by_request(client, api, model, &text).await?, "usage")
                }
            };
        let err = (count as f64 - target as f64).abs();
        let better = best.as_ref().is_none_or(|b| err < (b.tokens as f64 - target as f64).abs());
        if better {
            best = Some(SizedPrompt { text, tokens: count, method });
        }
        if err <= tolerance {
            break;
        }
        // Scale by the observed tokens per word (the tag and template are a fixed cost).
        let per_word = (count as f64 / words as f64).max(0.01);
        let next = (words as f64 + (target as f64 - count as f64) / per_word).round().max(1.0) as usize;
        if next == words {
            break;
        }
        words = next;
    }
    best.context("could not size a prompt")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_prompts_share_their_planned_share_and_no_more() {
        let sized = prompt_text("abc123", 1024, 0, 200);
        let words = |t: &str| t.split_whitespace().count();
        let common = |a: &str, b: &str| a.split(' ').zip(b.split(' ')).take_while(|(x, y)| x == y).count();
        assert_eq!(reuse_prompt(&sized, 100, 1), sized);
        for pct in [0u32, 50, 90] {
            let (a, b) = (reuse_prompt(&sized, pct, 1), reuse_prompt(&sized, pct, 2));
            assert_ne!(a, b, "{pct}%: two requests, two prompts");
            assert!(words(&a).abs_diff(words(&sized)) <= 2, "{pct}%: {} words against {}", words(&a), words(&sized));
            let shared = common(&a, &b) as f64 / words(&a) as f64;
            assert!((shared - pct as f64 / 100.0).abs() <= 0.03, "{pct}%: {shared:.3} of the words shared");
        }
        assert!(reuse_prompt(&sized, 0, 7).starts_with("[v0 ctx-1024 abc123 speed-matrix r7] "));
        assert!(reuse_prompt(&sized, 50, 7)
            .ends_with("Read the notes above, then write a long, detailed story that uses them."));
    }

    #[test]
    fn prompts_are_unique_per_context_and_deterministic() {
        assert_eq!(filler(5, 1), filler(5, 1));
        assert_ne!(prompt_text("r", 8192, 0, 10), prompt_text("r", 16384, 0, 10));
        assert!(prompt_text("t-1", 8192, 0, 10).starts_with("[v0 ctx-8192 t-1 speed-matrix]"));
        // A re-sized prompt differs from its second character on.
        assert!(prompt_text("t-1", 8192, 1, 10).starts_with("[v1 ctx-8192 t-1 speed-matrix]"));
        let (a, b) = (measurement_tag(), measurement_tag());
        assert_ne!(a[..8], b[..8], "the random part leads");
        assert_eq!(filler(100, 3).split(' ').count(), 100);
    }

    #[test]
    fn request_bodies() {
        let b = request_body(Api::Chat, "m", "hi", 4096, true);
        assert_eq!(b["max_completion_tokens"], 4096);
        assert_eq!(b["stream_options"]["continuous_usage_stats"], true);
        assert_eq!(b["ignore_eos"], true);
        let c = request_body(Api::Completions, "m", "hi", 1, false);
        assert_eq!(c["prompt"], "hi");
        assert!(c.get("stream").is_none());
    }
}

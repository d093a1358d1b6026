//! The chunk shapes of OpenAI-compatible streams as vLLM, SGLang and llama.cpp send them:
//! chat (`delta.content`, `delta.reasoning`, `delta.reasoning_content`) and completions
//! (`text`), usage on every chunk (continuous) or only at the end, and errors as events.

use std::borrow::Cow;

use serde::Deserialize;

#[derive(Deserialize)]
struct RawChunk<'a> {
    #[serde(borrow, default)]
    choices: Option<Vec<RawChoice<'a>>>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(borrow, default)]
    error: Option<RawError<'a>>,
    /// SGLang's older flat error shape: `{"object":"error","message":...}`.
    #[serde(borrow, default)]
    object: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
    /// llama.cpp's per-request timings: `cache_n` prompt tokens came from its cache.
    #[serde(default)]
    timings: Option<RawTimings>,
}

#[derive(Deserialize)]
struct RawTimings {
    #[serde(default)]
    cache_n: Option<Count>,
    /// The server's decode rate of this request so far (final chunk: the whole request).
    #[serde(default)]
    predicted_per_second: Option<f64>,
}

#[derive(Deserialize)]
struct RawPromptDetails {
    #[serde(default)]
    cached_tokens: Option<Count>,
}

/// A count the server gives beside the essentials (cached tokens): a malformed one (`-5`,
/// `513.5`, `"abc"`, `1e30`) is dropped alone, not taken for a broken stream.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Count {
    Valid(u64),
    Malformed,
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let whole = |f: f64| (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 9.0e15).then_some(f as u64);
        Ok(match v.as_u64().or_else(|| v.as_f64().and_then(whole)) {
            Some(n) => Count::Valid(n),
            None if v.is_null() => Count::Malformed,
            None => Count::Malformed,
        })
    }
}

#[derive(Deserialize)]
struct RawChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<RawDelta<'a>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens: Option<u64>,
    /// OpenAI / vLLM / SGLang: prompt tokens served from the prefix cache.
    #[serde(default)]
    prompt_tokens_details: Option<RawPromptDetails>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawError<'a> {
    Object {
        #[serde(borrow, default)]
        message: Option<Cow<'a, str>>,
        #[serde(borrow, default, rename = "type")]
        kind: Option<Cow<'a, str>>,
    },
    Text(#[serde(borrow)] Cow<'a, str>),
}

/// One parsed chunk.
#[derive(Debug, Default, PartialEq)]
pub struct Chunk<'a> {
    pub content: Option<Cow<'a, str>>,
    pub reasoning: Option<Cow<'a, str>>,
    pub finish_reason: Option<Cow<'a, str>>,
    pub completion_tokens: Option<u64>,
    pub prompt_tokens: Option<u64>,
    /// Prompt tokens the server says it took from its prefix cache.
    pub cached_prompt_tokens: Option<u64>,
    /// The server's cached-token count was there but no count (dropped).
    pub malformed_cached_tokens: bool,
    /// The server's own decode rate of the request (llama.cpp `timings`).
    pub server_decode_tps: Option<f64>,
    pub error: Option<String>,
}

impl Chunk<'_> {
    fn take_cached(&mut self, count: Option<Count>) {
        match count {
            Some(Count::Valid(n)) => self.cached_prompt_tokens = Some(n),
            Some(Count::Malformed) => self.malformed_cached_tokens = true,
            None => {}
        }
    }

    /// Whether the chunk carries output text (a role-only or empty chunk is not a token).
    pub fn has_text(&self) -> bool {
        self.content.as_deref().is_some_and(|s| !s.is_empty())
            || self.reasoning.as_deref().is_some_and(|s| !s.is_empty())
    }
}

/// Parses one `data:` payload. A payload that is not JSON is an error the caller reports
/// as a malformed stream.
pub fn parse_chunk(payload: &[u8]) -> Result<Chunk<'_>, serde_json::Error> {
    let raw: RawChunk = serde_json::from_slice(payload)?;
    let mut chunk = Chunk::default();
    if let Some(e) = raw.error {
        chunk.error = Some(match e {
            RawError::Object { message, kind } => match (message, kind) {
                (Some(m), Some(k)) => format!("{k}: {m}"),
                (Some(m), None) => m.into_owned(),
                (None, Some(k)) => k.into_owned(),
                (None, None) => "error event without a message".into(),
            },
            RawError::Text(t) => t.into_owned(),
        });
    } else if raw.object.as_deref() == Some("error") {
        chunk.error = Some(raw.message.map(Cow::into_owned).unwrap_or_else(|| "error".into()));
    }
    if let Some(u) = raw.usage {
        chunk.completion_tokens = u.completion_tokens;
        chunk.prompt_tokens = u.prompt_tokens;
        chunk.take_cached(u.prompt_tokens_details.and_then(|d| d.cached_tokens));
    }
    if let Some(t) = raw.timings {
        chunk.take_cached(t.cache_n);
        chunk.server_decode_tps = t.predicted_per_second.filter(|r| r.is_finite() && *r > 0.0);
    }
    if let Some(choice) = raw.choices.and_then(|c| c.into_iter().next()) {
        chunk.finish_reason = choice.finish_reason;
        if let Some(d) = choice.delta {
            chunk.content = d.content;
            chunk.reasoning = d.reasoning.or(d.reasoning_content);
        }
        if chunk.content.is_none() {
            chunk.content = choice.text;
        }
    }
    Ok(chunk)
}

/// The message of an HTTP error body in any of the engines' shapes, else the body itself.
pub fn error_body_message(body: &[u8]) -> String {
    if let Ok(c) = parse_chunk(body) {
        if let Some(e) = c.error {
            return e;
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.chars().count() > 500 {
        format!("{}…", text.chars().take(500).collect::<String>())
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_content_reasoning_and_role_only_chunks() {
        let role = parse_chunk(br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#).unwrap();
        assert!(!role.has_text());
        let null = parse_chunk(br#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#).unwrap();
        assert!(!null.has_text());
        let c = parse_chunk(
            br#"{"choices":[{"delta":{"content":"Hi \"x\""}}],"usage":{"prompt_tokens":9,"completion_tokens":3}}"#,
        )
        .unwrap();
        assert_eq!(c.content.as_deref(), Some("Hi \"x\""));
        assert_eq!(c.completion_tokens, Some(3));
        let vllm = parse_chunk(br#"{"choices":[{"delta":{"reasoning":"think"}}]}"#).unwrap();
        assert_eq!(vllm.reasoning.as_deref(), Some("think"));
        let sglang = parse_chunk(br#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#).unwrap();
        assert!(sglang.has_text());
    }

    #[test]
    fn completions_and_final_usage() {
        let c = parse_chunk(
            br#"{"choices":[{"text":" world","finish_reason":"length"}],"usage":{"completion_tokens":128}}"#,
        )
        .unwrap();
        assert_eq!(c.content.as_deref(), Some(" world"));
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
        let end = parse_chunk(
            br#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7},"timings":{"predicted_n":7}}"#,
        )
        .unwrap();
        assert_eq!(end.completion_tokens, Some(7));
        assert!(!end.has_text());
        assert_eq!(end.server_decode_tps, None);
        // llama.cpp's final chunk: its own decode rate of the request.
        let timed = parse_chunk(
            br#"{"choices":[{"finish_reason":"length","delta":{}}],"timings":{"cache_n":24,"predicted_n":64,"predicted_ms":800.0,"predicted_per_second":80.0}}"#,
        )
        .unwrap();
        assert_eq!((timed.server_decode_tps, timed.cached_prompt_tokens), (Some(80.0), Some(24)));
    }

    #[test]
    fn error_shapes() {
        let e = parse_chunk(br#"{"error":{"message":"boom","type":"internal"}}"#).unwrap();
        assert_eq!(e.error.as_deref(), Some("internal: boom"));
        let flat = parse_chunk(br#"{"object":"error","message":"The request queue is full"}"#).unwrap();
        assert_eq!(flat.error.as_deref(), Some("The request queue is full"));
        assert_eq!(
            error_body_message(br#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (2048 tokens)","type":"exceed_context_size_error"}}"#),
            "exceed_context_size_error: request (9000 tokens) exceeds the available context size (2048 tokens)"
        );
        assert_eq!(error_body_message(b"plain text"), "plain text");
        assert!(parse_chunk(b"{not json").is_err());
    }

    #[test]
    fn a_malformed_cached_count_is_dropped_alone() {
        for bad in ["-5", "513.5", "\"abc\"", "1e30", "[1]"] {
            let payload = format!(
                r#"{{"choices":[{{"delta":{{"content":"x"}}}}],"usage":{{"completion_tokens":3,"prompt_tokens":512,"prompt_tokens_details":{{"cached_tokens":{bad}}}}}}}"#
            );
            let c = parse_chunk(payload.as_bytes()).unwrap_or_else(|e| panic!("{bad}: {e}"));
            assert_eq!(
                (c.completion_tokens, c.cached_prompt_tokens, c.malformed_cached_tokens),
                (Some(3), None, true),
                "{bad}"
            );
            assert_eq!(c.content.as_deref(), Some("x"));
        }
        let c =
            parse_chunk(br#"{"usage":{"prompt_tokens":512,"prompt_tokens_details":{"cached_tokens":256.0}}}"#).unwrap();
        assert_eq!((c.cached_prompt_tokens, c.malformed_cached_tokens), (Some(256), false));
        let c = parse_chunk(br#"{"timings":{"cache_n":-1}}"#).unwrap();
        assert_eq!((c.cached_prompt_tokens, c.malformed_cached_tokens), (None, true));
    }
}

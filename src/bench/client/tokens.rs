//! Token accounting, fed chunk by chunk: how many output tokens a stream produced and how
//! many fell inside the cell's window, whatever the server reports (the methodology page,
//! "Counting tokens"). Pure: no clock, no I/O, so every shape a server sends is a unit test.
//!
//! - Continuous usage (vLLM with `continuous_usage_stats`, SGLang): each chunk's
//!   `usage.completion_tokens` is the running total; a chunk brings the difference (several
//!   tokens for an MTP / speculative step).
//! - Final usage only (llama.cpp, vLLM without it): one token per text chunk while
//!   streaming, then the final count says how many tokens the chunks carried.
//! - No usage at all: one token per text chunk.
//! - A token whose text is empty (a special token) has no text chunk: when the final usage
//!   reports tokens and no chunk brought any, they arrive with that chunk.

use crate::format::{RequestRecord, TokenSource};

/// What one chunk says about tokens, as the protocol parsed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkTokens {
    /// `usage.completion_tokens`, when the chunk carries usage.
    pub completion_tokens: Option<u64>,
    /// The chunk carries output text (content or reasoning).
    pub has_text: bool,
    /// The chunk carries a `finish_reason` (the final chunk).
    pub finishing: bool,
}

#[derive(Debug, Clone, Default)]
pub struct TokenCounter {
    /// The server sent usage on text chunks: counts come from usage deltas.
    continuous: bool,
    last_usage: u64,
    /// The last usage seen while not continuous: the stream's final count.
    final_usage: Option<u64>,
    chunks: u64,
    window_chunks: u64,
    tokens: u64,
    window_tokens: u64,
}

/// A stream's totals once it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCount {
    pub tokens: u64,
    pub window_tokens: u64,
    pub chunks: u64,
    pub source: TokenSource,
}

impl TokenCounter {
    /// Counts one chunk that arrived inside (or outside) the window; returns the tokens it
    /// brought, so the caller can time them.
    pub fn feed(&mut self, chunk: ChunkTokens, inside_window: bool) -> u64 {
        let mut new_tokens = 0;
        if let Some(usage) = chunk.completion_tokens {
            if chunk.has_text && !chunk.finishing {
                self.continuous = true;
            }
            if self.continuous {
                new_tokens = usage.saturating_sub(self.last_usage);
                self.last_usage = self.last_usage.max(usage);
            } else {
                self.final_usage = Some(usage);
            }
        }
        if chunk.has_text {
            self.chunks += 1;
            if inside_window {
                self.window_chunks += 1;
            }
            if !self.continuous {
                new_tokens = 1;
            }
        }
        let usage = chunk.completion_tokens.unwrap_or(0);
        if new_tokens == 0 && self.tokens == 0 && usage > 0 {
            // Tokens with no text: they exist because the usage says so.
            new_tokens = usage;
            self.final_usage = None;
        }
        self.tokens = self.tokens.saturating_add(new_tokens);
        if inside_window {
            self.window_tokens = self.window_tokens.saturating_add(new_tokens);
        }
        new_tokens
    }

    /// The totals: where only the final chunk had usage, the chunks placed the tokens in
    /// time and the final count says how many tokens each chunk carried.
    pub fn finish(&self) -> TokenCount {
        let mut count = TokenCount {
            tokens: self.tokens,
            window_tokens: self.window_tokens,
            chunks: self.chunks,
            source: TokenSource::Chunks,
        };
        if self.continuous || (self.chunks == 0 && self.tokens > 0) {
            count.source = TokenSource::Usage;
        } else if let Some(total) = self.final_usage.filter(|_| self.chunks > 0) {
            let per_chunk = total as f64 / self.chunks as f64;
            count.tokens = total;
            count.window_tokens = (self.window_chunks as f64 * per_chunk).round() as u64;
            count.source = TokenSource::ChunksCheckedByFinalUsage;
        }
        count
    }
}

/// Streams cut at the window's end never see a final usage. Where the cell's finished
/// streams showed how many tokens a chunk carries (usage only at the end), the cut streams'
/// chunk counts are scaled by that ratio.
pub fn apply_final_usage_ratio(requests: &mut [RequestRecord]) {
    let (tokens, chunks) = requests
        .iter()
        .filter(|r| r.token_source == TokenSource::ChunksCheckedByFinalUsage)
        .fold((0u64, 0u64), |(t, c), r| (t.saturating_add(r.tokens), c.saturating_add(r.chunks)));
    if chunks == 0 {
        return;
    }
    let ratio = tokens as f64 / chunks as f64;
    for r in requests.iter_mut().filter(|r| r.token_source == TokenSource::Chunks) {
        r.tokens = (r.chunks as f64 * ratio).round() as u64;
        r.window_tokens = (r.window_tokens as f64 * ratio).round() as u64;
        r.token_source = TokenSource::ChunksCheckedByFinalUsage;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(usage: Option<u64>) -> ChunkTokens {
        ChunkTokens { completion_tokens: usage, has_text: true, finishing: false }
    }

    fn last(usage: Option<u64>, has_text: bool) -> ChunkTokens {
        ChunkTokens { completion_tokens: usage, has_text, finishing: true }
    }

    /// Feeds `chunks`, the first `outside` of them before the window opened.
    fn count(chunks: &[ChunkTokens], outside: usize) -> (Vec<u64>, TokenCount) {
        let mut c = TokenCounter::default();
        let brought = chunks.iter().enumerate().map(|(i, ch)| c.feed(*ch, i >= outside)).collect();
        (brought, c.finish())
    }

    #[test]
    fn continuous_usage_counts_the_deltas() {
        let chunks = [text(Some(1)), text(Some(2)), text(Some(3)), last(Some(3), false)];
        let (brought, total) = count(&chunks, 1);
        assert_eq!(brought, [1, 1, 1, 0]);
        assert_eq!(total, TokenCount { tokens: 3, window_tokens: 2, chunks: 3, source: TokenSource::Usage });
    }

    #[test]
    fn mtp_chunks_carry_several_tokens_each() {
        // A speculative step accepts 1-3 tokens: usage jumps by that much per chunk.
        let chunks = [text(Some(3)), text(Some(4)), text(Some(7)), last(Some(9), true)];
        let (brought, total) = count(&chunks, 0);
        assert_eq!(brought, [3, 1, 3, 2]);
        assert_eq!(total, TokenCount { tokens: 9, window_tokens: 9, chunks: 4, source: TokenSource::Usage });
    }

    #[test]
    fn final_usage_only_rescales_the_chunk_count() {
        // Five text chunks, two before the window; the final usage says 10 tokens: 2 a chunk.
        let mut chunks = vec![text(None); 5];
        chunks.push(last(Some(10), false));
        let (brought, total) = count(&chunks, 2);
        assert_eq!(brought, [1, 1, 1, 1, 1, 0]);
        assert_eq!(
            total,
            TokenCount { tokens: 10, window_tokens: 6, chunks: 5, source: TokenSource::ChunksCheckedByFinalUsage }
        );
    }

    #[test]
    fn without_usage_each_text_chunk_is_a_token() {
        let chunks = [text(None), ChunkTokens::default(), text(None), last(None, false)];
        let (brought, total) = count(&chunks, 0);
        assert_eq!(brought, [1, 0, 1, 0]);
        assert_eq!(total, TokenCount { tokens: 2, window_tokens: 2, chunks: 2, source: TokenSource::Chunks });
    }

    #[test]
    fn reasoning_text_counts_like_content() {
        // The protocol marks a reasoning-only chunk as text; the counter sees no difference.
        let reasoning = ChunkTokens { completion_tokens: Some(1), has_text: true, finishing: false };
        let (brought, total) = count(&[reasoning, text(Some(2)), last(Some(2), false)], 0);
        assert_eq!(brought, [1, 1, 0]);
        assert_eq!(total.source, TokenSource::Usage);
    }

    #[test]
    fn tokens_without_text_arrive_with_the_usage_that_reports_them() {
        // One special token, no text chunk at all: the final usage says it exists.
        let (brought, total) = count(&[ChunkTokens::default(), last(Some(1), false)], 0);
        assert_eq!(brought, [0, 1]);
        assert_eq!(total, TokenCount { tokens: 1, window_tokens: 1, chunks: 0, source: TokenSource::Usage });
    }

    #[test]
    fn usage_regressing_never_subtracts() {
        let (brought, total) = count(&[text(Some(4)), text(Some(2)), text(Some(5))], 0);
        assert_eq!(brought, [4, 0, 1]);
        assert_eq!(total.tokens, 5);
    }

    fn record(tokens: u64, chunks: u64, window_tokens: u64, source: TokenSource) -> RequestRecord {
        RequestRecord { tokens, chunks, window_tokens, token_source: source, ..RequestRecord::sent_at(0.0) }
    }

    #[test]
    fn cut_streams_take_the_ratio_of_the_finished_ones() {
        let mut requests =
            vec![record(20, 10, 20, TokenSource::ChunksCheckedByFinalUsage), record(6, 6, 4, TokenSource::Chunks)];
        apply_final_usage_ratio(&mut requests);
        assert_eq!((requests[1].tokens, requests[1].window_tokens), (12, 8));
        assert_eq!(requests[1].token_source, TokenSource::ChunksCheckedByFinalUsage);
        // No finished stream to learn from: chunk counts stay.
        let mut alone = vec![record(6, 6, 4, TokenSource::Chunks)];
        apply_final_usage_ratio(&mut alone);
        assert_eq!((alone[0].tokens, alone[0].token_source), (6, TokenSource::Chunks));
    }
}

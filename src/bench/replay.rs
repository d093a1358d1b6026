//! A trace made ready to replay (`site bench --trace`): the slice asked for, its times
//! divided by the speed-up, its lengths scaled and held within the server's limits (every
//! change counted), and the prompt text of each request synthesized so that **equal block
//! ids give equal text**: the trace's prefix sharing reaches the server's cache as it reached
//! the service the trace was taken from. Pure: the word costs come from the server's
//! tokenizer once (`session::trace`), everything here is arithmetic on them.

use anyhow::{bail, Result};

use super::trace::{Trace, TraceFormat};

/// Block size of traces without block ids (BurstGPT, Azure): each request's blocks are its
/// own, so nothing is shared, as nothing in the trace says it was.
const PLAIN_BLOCK_TOKENS: u32 = 512;

/// What part of a trace to replay, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplaySettings {
    /// Seconds into the trace where the slice starts.
    pub start_s: f64,
    /// Seconds of the trace replayed (`None`: to its end).
    pub duration_s: Option<f64>,
    /// Trace seconds per replayed second (2: twice as fast).
    pub speedup: f64,
    /// Factor on every input and output length (and block size), for a smaller server.
    pub scale_lengths: f64,
    /// Longest input sent (longer ones are cut at a block boundary's text, and counted).
    pub max_input: Option<u64>,
}

/// One request as it will be sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRequest {
    /// When it is sent, seconds from the replay's start.
    pub at_s: f64,
    /// Its timestamp in the trace, seconds from the trace's first request.
    pub trace_s: f64,
    /// Input tokens wanted (after scaling and capping).
    pub input_tokens: u64,
    /// Output tokens asked for (`max_tokens`, with `ignore_eos`).
    pub output_tokens: u64,
    /// Block ids of the prompt: equal ids, equal text.
    pub blocks: Vec<u64>,
    /// The earlier request of the replay it follows (a Bailian conversation's parent chat,
    /// where that is in the slice): sent only once that one has ended.
    pub after: Option<usize>,
}

/// What the replay changed, request by request, so a reader knows what was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayCounts {
    /// Requests of the trace inside the slice.
    pub in_slice: u64,
    /// Requests whose lengths `--scale-lengths` changed.
    pub scaled: u64,
    /// Requests whose input `--max-input` cut, or whose output the server's length cut.
    pub capped: u64,
    /// Requests left out: their input alone past what the server holds.
    pub dropped: u64,
}

/// A slice of a trace ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub format: TraceFormat,
    pub requests: Vec<ReplayRequest>,
    /// Tokens a block id stands for, after scaling.
    pub block_tokens: u32,
    pub counts: ReplayCounts,
    /// Seconds the replay lasts (the slice's length over the speed-up).
    pub span_s: f64,
}

impl Replay {
    /// The request rate the slice offers, requests per second of replay.
    pub fn offered_rps(&self) -> f64 {
        self.requests.len() as f64 / self.span_s.max(1e-9)
    }

    /// The share of input tokens (percent) that a prefix cache holding everything could
    /// serve: each request's leading blocks already sent by an earlier request.
    pub fn planned_reuse_pct(&self) -> f64 {
        let mut seen = std::collections::HashSet::new();
        let (mut reusable, mut total) = (0u64, 0u64);
        for r in &self.requests {
            total += r.input_tokens;
            let mut leading = true;
            for (i, b) in r.blocks.iter().enumerate() {
                let tokens = block_len(r.input_tokens, self.block_tokens, i);
                leading &= seen.contains(b);
                if leading {
                    reusable += tokens;
                }
            }
            seen.extend(r.blocks.iter().copied());
        }
        if total == 0 {
            0.0
        } else {
            reusable as f64 / total as f64 * 100.0
        }
    }
}

/// Tokens of block `i` of an input of `input` tokens in blocks of `block`.
fn block_len(input: u64, block: u32, i: usize) -> u64 {
    let start = i as u64 * block as u64;
    input.saturating_sub(start).min(block as u64)
}

/// The slice of `trace` that `settings` asks for, held within `request_limit` tokens a
/// request (input and output together; `None`: no limit known).
pub fn plan_replay(trace: &Trace, s: ReplaySettings, request_limit: Option<u64>) -> Result<Replay> {
    check_settings(s)?;
    let end = s.duration_s.map_or(f64::INFINITY, |d| s.start_s + d);
    let source_block = trace.format.block_tokens().unwrap_or(PLAIN_BLOCK_TOKENS);
    let block_tokens = ((source_block as f64 * s.scale_lengths).round() as u32).max(1);
    let mut counts = ReplayCounts::default();
    let mut requests = Vec::new();
    // A chat's request in the replay, for the chats that follow it.
    let mut chats: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for (n, r) in trace.requests.iter().enumerate().filter(|(_, r)| r.at_s >= s.start_s && r.at_s < end) {
        counts.in_slice += 1;
        let scale = |x: u64| ((x as f64 * s.scale_lengths).round() as u64).max(1);
        let (mut input, mut output) = (scale(r.input_tokens), scale(r.output_tokens));
        if s.scale_lengths != 1.0 {
            counts.scaled += 1;
        }
        let mut capped = false;
        if let Some(max) = s.max_input.filter(|m| input > *m) {
            (input, capped) = (max, true);
        }
        if let Some(limit) = request_limit {
            if input >= limit {
                counts.dropped += 1;
                continue;
            }
            if input + output > limit {
                (output, capped) = (limit - input, true);
            }
        }
        counts.capped += u64::from(capped);
        let blocks = request_blocks(&r.blocks, n, input, block_tokens);
        let after = r.chat.and_then(|(_, parent)| chats.get(&parent?).copied());
        if let Some((chat, _)) = r.chat {
            chats.insert(chat, requests.len());
        }
        requests.push(ReplayRequest {
            at_s: (r.at_s - s.start_s) / s.speedup,
            trace_s: r.at_s,
            input_tokens: input,
            output_tokens: output,
            blocks,
            after,
        });
    }
    if requests.is_empty() {
        bail!(
            "the slice from {} s for {} holds no request the server can take ({} in the slice, {} past its length)",
            s.start_s,
            s.duration_s.map_or("the rest of the trace".to_string(), |d| format!("{d} s")),
            counts.in_slice,
            counts.dropped
        );
    }
    let slice_s = s.duration_s.unwrap_or_else(|| trace.span_s() - s.start_s).max(1e-3);
    Ok(Replay { format: trace.format, requests, block_tokens, counts, span_s: slice_s / s.speedup })
}

fn check_settings(s: ReplaySettings) -> Result<()> {
    if !(s.start_s.is_finite() && s.start_s >= 0.0) {
        bail!("--trace-start: expected seconds from 0, found {}", s.start_s);
    }
    if s.duration_s.is_some_and(|d| !(d.is_finite() && d > 0.0)) {
        bail!("--trace-duration: expected seconds above 0");
    }
    if !(s.speedup.is_finite() && s.speedup > 0.0 && s.speedup <= 1000.0) {
        bail!("--speedup: expected a factor above 0 and at most 1000, found {}", s.speedup);
    }
    if !(s.scale_lengths.is_finite() && s.scale_lengths > 0.0 && s.scale_lengths <= 100.0) {
        bail!("--scale-lengths: expected a factor above 0 and at most 100, found {}", s.scale_lengths);
    }
    if s.max_input == Some(0) {
        bail!("--max-input: expected tokens above 0");
    }
    Ok(())
}

/// The block ids of a request's (possibly cut) input: the trace's own, or, where the trace
/// has none, ids of the request's own (`n` is its line) that no other request shares.
fn request_blocks(trace_blocks: &[u64], n: usize, input: u64, block: u32) -> Vec<u64> {
    let count = input.div_ceil(block as u64) as usize;
    if trace_blocks.is_empty() {
        // The top bit keeps these ids apart from any trace's.
        return (0..count).map(|i| (1 << 63) | ((n as u64) << 20) | i as u64).collect();
    }
    let mut blocks: Vec<u64> = trace_blocks.iter().copied().take(count).collect();
    // A scaled input may round past the blocks listed: its tail is the request's own.
    let own = (1 << 62) | ((n as u64) << 20);
    blocks.extend((blocks.len()..count).map(|i| own | i as u64));
    blocks
}

/// What each word of the filler costs in the server's tokens (after a space), so a block's
/// text can be made to an exact token count.
#[derive(Debug, Clone, PartialEq)]
pub struct WordCosts {
    pub words: Vec<(&'static str, u32)>,
}

impl WordCosts {
    /// Every word one token: the simulator's count, and a first guess.
    pub fn unit() -> WordCosts {
        WordCosts { words: super::prompt::WORDS.iter().map(|w| (*w, 1)).collect() }
    }

    /// The cheapest word's cost (the last word of a block is chosen to land exactly).
    fn cheapest(&self) -> u32 {
        self.words.iter().map(|w| w.1).min().unwrap_or(1)
    }
}

/// The text of `tokens` tokens of block `id`: the same words for the same id (so a shorter
/// block of the same id is a prefix of a longer one), each followed by a space so blocks
/// joined stay apart in the tokenizer.
pub fn block_text(id: u64, tokens: u64, costs: &WordCosts, out: &mut String) {
    let mut x = id ^ 0x5851_F42D_4C95_7F2D;
    let mut left = tokens;
    let cheapest = costs.cheapest() as u64;
    while left > 0 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let (mut word, mut cost) = costs.words[(x >> 33) as usize % costs.words.len()];
        if cost as u64 > left {
            // The tail: the cheapest word, so the block lands on its count (or one past it
            // where no word is that cheap).
            if let Some(w) = costs.words.iter().find(|w| w.1 as u64 == cheapest) {
                (word, cost) = *w;
            }
            if cheapest > left {
                left = 0;
            }
        }
        out.push_str(word);
        out.push(' ');
        left = left.saturating_sub(cost as u64);
    }
}

/// The tokens each block of a request is sent with: its share of the input, less the
/// prompt's common start (`prefix_tokens`: the run's tag and the server's chat template),
/// taken from the first blocks on, each keeping one token. Every request loses the same from
/// the same positions, so equal ids still give equal text.
fn sent_budgets(r: &ReplayRequest, block_tokens: u32, prefix_tokens: u64) -> Vec<u64> {
    let mut carry = prefix_tokens;
    (0..r.blocks.len())
        .map(|i| {
            let len = block_len(r.input_tokens, block_tokens, i);
            let take = carry.min(len.saturating_sub(1));
            carry -= take;
            len - take
        })
        .collect()
}

/// The prompt of a request: the run's tag (so no earlier run's text is found cached: a
/// prefix cache matches from the first token) and then its blocks' text, the tag and the
/// template (`prefix_tokens` together) taken from the first blocks so the whole is the
/// request's input.
pub fn request_prompt(
    r: &ReplayRequest,
    block_tokens: u32,
    tag: &str,
    prefix_tokens: u64,
    costs: &WordCosts,
) -> String {
    let mut s = String::with_capacity(r.input_tokens as usize * 8);
    s.push_str(tag);
    s.push(' ');
    for (id, tokens) in r.blocks.iter().zip(sent_budgets(r, block_tokens, prefix_tokens)) {
        block_text(*id, tokens, costs, &mut s);
    }
    s
}

impl Replay {
    /// The share of input tokens (percent) an unbounded prefix cache could serve of the
    /// prompts as sent: every request after the first finds the common start
    /// (`prefix_tokens`: tag and template), then its leading blocks already sent.
    pub fn sent_reuse_pct(&self, prefix_tokens: u64) -> f64 {
        let mut seen = std::collections::HashSet::new();
        let (mut reusable, mut total) = (0u64, 0u64);
        for (n, r) in self.requests.iter().enumerate() {
            let budgets = sent_budgets(r, self.block_tokens, prefix_tokens);
            let sent = prefix_tokens + budgets.iter().sum::<u64>();
            total += sent;
            if n > 0 {
                reusable += prefix_tokens;
                let leading = r.blocks.iter().zip(&budgets).take_while(|(b, _)| seen.contains(*b));
                reusable += leading.map(|(_, t)| t).sum::<u64>();
            }
            seen.extend(r.blocks.iter().copied());
        }
        if total == 0 {
            0.0
        } else {
            reusable as f64 / total as f64 * 100.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::trace::TraceRequest;

    fn trace(format: TraceFormat, rows: &[(f64, u64, u64, &[u64])]) -> Trace {
        let requests = rows
            .iter()
            .map(|(t, i, o, b)| TraceRequest {
                at_s: *t,
                input_tokens: *i,
                output_tokens: *o,
                blocks: b.to_vec(),
                chat: None,
            })
            .collect();
        Trace { format, requests }
    }

    fn settings() -> ReplaySettings {
        ReplaySettings { start_s: 0.0, duration_s: None, speedup: 1.0, scale_lengths: 1.0, max_input: None }
    }

    #[test]
    fn a_slice_keeps_its_times_over_the_speedup_and_counts_what_it_changed() {
        let t = trace(
            TraceFormat::Mooncake,
            &[
                (0.0, 1000, 10, &[1, 2]),
                (4.0, 1500, 20, &[1, 2, 3]),
                (6.0, 9000, 5, &[7; 18]),
                (9.0, 100, 1, &[4]),
                (12.0, 100, 1, &[5]),
            ],
        );
        let s = ReplaySettings {
            start_s: 4.0,
            duration_s: Some(6.0),
            speedup: 2.0,
            scale_lengths: 0.5,
            max_input: Some(600),
        };
        let r = plan_replay(&t, s, Some(2000)).unwrap();
        assert_eq!(r.requests.iter().map(|q| q.at_s).collect::<Vec<_>>(), vec![0.0, 1.0, 2.5]);
        assert_eq!(r.requests.iter().map(|q| q.trace_s).collect::<Vec<_>>(), vec![4.0, 6.0, 9.0]);
        assert_eq!(r.requests.iter().map(|q| q.input_tokens).collect::<Vec<_>>(), vec![600, 600, 50]);
        assert_eq!(r.block_tokens, 256);
        assert_eq!(r.requests[0].blocks, vec![1, 2, 3]);
        assert_eq!(r.counts, ReplayCounts { in_slice: 3, scaled: 3, capped: 2, dropped: 0 });
        assert_eq!((r.span_s, r.offered_rps()), (3.0, 1.0));
        // A server of 700 tokens drops none here, but cuts outputs past it.
        let small = plan_replay(&t, ReplaySettings { max_input: None, ..s }, Some(700)).unwrap();
        assert_eq!(small.counts.dropped, 2, "inputs of 750 and 4500 tokens past 700");
        assert!(plan_replay(&t, ReplaySettings { start_s: 100.0, ..s }, None)
            .unwrap_err()
            .to_string()
            .contains("holds no request"));
        assert!(plan_replay(&t, ReplaySettings { speedup: 0.0, ..s }, None).is_err());
    }

    #[test]
    fn a_conversations_next_turn_follows_its_parent_where_the_slice_holds_it() {
        // Chat 6 follows 5, chat 8 follows 7 (before the slice), chat 9 follows 6.
        let mut t = trace(
            TraceFormat::Bailian,
            &[
                (0.5, 16, 4, &[1]),
                (1.0, 16, 4, &[2]),
                (2.0, 32, 4, &[1, 3]),
                (3.0, 16, 4, &[4]),
                (4.0, 48, 4, &[1, 3, 5]),
            ],
        );
        for (r, chat) in t.requests.iter_mut().zip([(7, None), (5, None), (6, Some(5)), (8, Some(7)), (9, Some(6))]) {
            r.chat = Some(chat);
        }
        let r = plan_replay(&t, ReplaySettings { start_s: 1.0, ..settings() }, None).unwrap();
        let after: Vec<Option<usize>> = r.requests.iter().map(|q| q.after).collect();
        assert_eq!(after, [None, Some(0), None, Some(1)]);
    }

    #[test]
    fn planned_reuse_counts_only_leading_blocks_seen_before() {
        // The second request shares its first block; the third shares a block but not its
        // first, which a prefix cache cannot use.
        let t =
            trace(TraceFormat::Mooncake, &[(0.0, 1024, 1, &[1, 2]), (1.0, 1024, 1, &[1, 3]), (2.0, 1024, 1, &[9, 2])]);
        let r = plan_replay(&t, settings(), None).unwrap();
        assert!((r.planned_reuse_pct() - 512.0 / 3072.0 * 100.0).abs() < 1e-9);
        let plain = trace(TraceFormat::BurstGpt, &[(0.0, 1024, 1, &[]), (1.0, 1024, 1, &[])]);
        assert_eq!(plan_replay(&plain, settings(), None).unwrap().planned_reuse_pct(), 0.0);
    }

    #[test]
    fn equal_block_ids_give_equal_text_of_the_asked_token_count() {
        let costs = WordCosts { words: vec![("alpha", 2), ("beta", 1), ("gamma", 3)] };
        let t =
            trace(TraceFormat::Mooncake, &[(0.0, 1024, 1, &[1, 2]), (1.0, 700, 1, &[1, 3]), (2.0, 1000, 1, &[4, 2])]);
        let r = plan_replay(&t, settings(), None).unwrap();
        let cost = |s: &str| -> u64 {
            s.split_whitespace().map(|w| costs.words.iter().find(|c| c.0 == w).map_or(0, |c| c.1 as u64)).sum()
        };
        let prompts: Vec<String> = r.requests.iter().map(|q| request_prompt(q, 512, "[tag]", 3, &costs)).collect();
        for (p, q) in prompts.iter().zip(&r.requests) {
            assert_eq!(cost(p) + 3, q.input_tokens, "{p}");
        }
        // The first two share block 1, so their first 512 tokens' text; the third shares
        // block 2 but not its first block, so almost nothing.
        let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
        let mut first = String::new();
        block_text(1, 509, &costs, &mut first);
        assert!(common(&prompts[0], &prompts[1]) >= first.len() + 6);
        // (Three words drawn at random agree on a word or two by chance, no more.)
        assert!(common(&prompts[0], &prompts[2]) < 60, "{}", common(&prompts[0], &prompts[2]));
        // A shorter block of an id is the start of the longer one.
        let (mut long, mut short) = (String::new(), String::new());
        block_text(42, 300, &costs, &mut long);
        block_text(42, 100, &costs, &mut short);
        assert!(long.starts_with(&short[..short.len() - 8]));
    }
}

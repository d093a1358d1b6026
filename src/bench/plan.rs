//! The plan of a run: which cells to measure, in which order, and which are Over capacity
//! and why. Also the parsers for the matrix lists (`8k,16k,251k`, `1,2,4`).

use anyhow::{anyhow, bail, Result};

use crate::format::{CapacityRule, OverCapacity, Phase};

/// `8k` = 8192 tokens, `1.5k` = 1536, `251K` = 257024, `512` = 512.
pub fn parse_tokens(s: &str) -> Result<u32> {
    let t = s.trim();
    let (num, mult) = match t.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1024.0),
        None => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| anyhow!("{s:?} is not a token count (examples: 512, 8k, 1.5k)"))?;
    let tokens = v * mult;
    if !(tokens >= 1.0 && tokens <= u32::MAX as f64 && tokens.fract() == 0.0) {
        bail!("{s:?} is not a whole, positive number of tokens");
    }
    Ok(tokens as u32)
}

pub fn parse_token_list(s: &str) -> Result<Vec<u32>> {
    let mut v: Vec<u32> = s.split(',').filter(|p| !p.trim().is_empty()).map(parse_tokens).collect::<Result<_>>()?;
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        bail!("empty list");
    }
    Ok(v)
}

pub fn parse_count_list(s: &str) -> Result<Vec<u32>> {
    let mut v: Vec<u32> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim().parse::<u32>().map_err(|_| anyhow!("{p:?} is not a whole number")).and_then(|n| {
                if n == 0 {
                    Err(anyhow!("0 requests at once"))
                } else {
                    Ok(n)
                }
            })
        })
        .collect::<Result<_>>()?;
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        bail!("empty list");
    }
    Ok(v)
}

/// How far (tokens) a prompt sized to `target` may land from it by the server's count.
pub fn size_tolerance(target: u32) -> f64 {
    (target as f64 * 0.002).max(4.0)
}

/// What the server can hold, as far as it told us (or the user did).
#[derive(Debug, Clone, Default)]
pub struct Capacity {
    /// Total KV cache in tokens shared by all requests.
    pub kv_budget_tokens: Option<u64>,
    pub kv_budget_source: Option<String>,
    /// The model's maximum length (prompt + output).
    pub max_model_len: Option<u64>,
    /// llama.cpp: parallel slots and the context of one slot.
    pub slots: Option<u32>,
    pub slot_ctx: Option<u64>,
    /// vLLM: the KV cache's block size in tokens. A request holds whole blocks, so its
    /// tokens are rounded up to them; a shared prefix's whole blocks are held once.
    pub block_tokens: Option<u64>,
}

/// The KV tokens `c` requests of `per_request` tokens hold, `shared` of them a prefix common
/// to all: without blocks, each its own tokens (no sharing assumed); with blocks, each its
/// own whole blocks and the prefix's whole blocks once (only whole blocks are shared).
pub fn kv_required(c: u32, per_request: u64, shared: u64, block: Option<u64>) -> u64 {
    match block.filter(|b| *b > 0) {
        None => c as u64 * per_request,
        Some(b) => {
            let shared_blocks = shared.min(per_request) / b;
            let own_blocks = per_request.div_ceil(b) - shared_blocks;
            (shared_blocks + c as u64 * own_blocks) * b
        }
    }
}

/// Why a decode cell is not run, or `None` when it fits. `shared_pct`: the prompt's share
/// common to the cell's requests (prefix reuse).
pub fn over_capacity(ctx: u32, c: u32, max_output: u32, shared_pct: u32, cap: &Capacity) -> Option<OverCapacity> {
    let per_request = ctx as u64 + max_output as u64;
    // A prompt sized to the context lands within the sizing tolerance of it, by the
    // server's count: with whole blocks, those tokens can take one more.
    let counted = per_request + cap.block_tokens.map_or(0, |_| size_tolerance(ctx).ceil() as u64);
    let shared = ctx as u64 * shared_pct.min(100) as u64 / 100;
    let required = kv_required(c, counted, shared, cap.block_tokens);
    if let Some(len) = cap.max_model_len {
        if per_request > len {
            return Some(OverCapacity {
                rule: CapacityRule::ModelLength,
                required_tokens: per_request,
                budget_tokens: Some(len),
            });
        }
    }
    if let (Some(slots), Some(slot_ctx)) = (cap.slots, cap.slot_ctx) {
        if per_request > slot_ctx {
            return Some(OverCapacity {
                rule: CapacityRule::SlotContext,
                required_tokens: per_request,
                budget_tokens: Some(slot_ctx),
            });
        }
        if c > slots {
            return Some(OverCapacity {
                rule: CapacityRule::ParallelSlots,
                required_tokens: c as u64,
                budget_tokens: Some(slots as u64),
            });
        }
    }
    if let Some(budget) = cap.kv_budget_tokens {
        // A block cache keeps one block for itself (vLLM's null block): 24 blocks hold 23.
        let budget = budget.saturating_sub(cap.block_tokens.unwrap_or(0));
        if required > budget {
            return Some(OverCapacity {
                rule: CapacityRule::KvBudget,
                required_tokens: required,
                budget_tokens: Some(budget),
            });
        }
    }
    None
}

#[derive(Debug, Clone)]
pub struct PlannedCell {
    pub phase: Phase,
    pub context: u32,
    pub concurrency: u32,
    pub over_capacity: Option<OverCapacity>,
}

/// Cells in the order they run: per context (ascending), its prefill sample, then its
/// decode cells by concurrency (ascending); prefill-only contexts in their place.
pub fn plan(
    contexts: &[u32],
    concurrency: &[u32],
    prefill_contexts: &[u32],
    max_output: u32,
    shared_pct: u32,
    cap: &Capacity,
) -> Vec<PlannedCell> {
    let mut all: Vec<u32> = contexts.iter().chain(prefill_contexts).copied().collect();
    all.sort_unstable();
    all.dedup();
    let mut out = Vec::new();
    for ctx in all {
        if prefill_contexts.contains(&ctx) {
            // The prefill sample is one stream asking for one token: the same rules as a
            // decode cell's (one slot's context on llama.cpp, the KV budget, the model's
            // length), so a prompt that cannot fit is Over capacity, not a server error.
            let over_capacity = over_capacity(ctx, 1, 1, 0, cap);
            out.push(PlannedCell { phase: Phase::Prefill, context: ctx, concurrency: 1, over_capacity });
        }
        if contexts.contains(&ctx) {
            for &c in concurrency {
                out.push(PlannedCell {
                    phase: Phase::Decode,
                    context: ctx,
                    concurrency: c,
                    over_capacity: over_capacity(ctx, c, max_output, shared_pct, cap),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_and_duration_flags() {
        assert_eq!(parse_token_list("8k,16K,251k,1.5k,512").unwrap(), [512, 1536, 8192, 16384, 257024]);
        assert!(parse_tokens("1.3k").is_err());
        assert!(parse_tokens("abc").is_err());
        assert!(parse_count_list("1,0").is_err());
    }

    #[test]
    fn over_capacity_rules() {
        let cap = Capacity { kv_budget_tokens: Some(100_000), max_model_len: Some(40_000), ..Default::default() };
        assert!(over_capacity(8192, 8, 4096, 0, &cap).is_none()); // 98,304 fits
        let o = over_capacity(8192, 16, 4096, 0, &cap).unwrap();
        assert_eq!((o.required_tokens, o.budget_tokens), (196_608, Some(100_000)));
        let o = over_capacity(38_000, 1, 4096, 0, &cap).unwrap();
        assert_eq!(o.rule, CapacityRule::ModelLength);
        let llama = Capacity { slots: Some(4), slot_ctx: Some(2048), ..Default::default() };
        assert!(over_capacity(1024, 4, 512, 0, &llama).is_none());
        assert_eq!(over_capacity(1024, 8, 512, 0, &llama).unwrap().rule, CapacityRule::ParallelSlots);
        assert!(over_capacity(1600, 1, 512, 0, &llama).is_some());
    }

    #[test]
    fn a_block_cache_holds_whole_blocks_and_a_shared_prefix_once() {
        // vLLM, 24 blocks of 128 (3,072 tokens), one kept for itself: 256 + 128 tokens a
        // request is 384, three blocks by the tokens, but a prompt a few tokens over its
        // context takes a fourth: eight requests need 32 blocks of the 23, Over capacity.
        let vllm = Capacity { kv_budget_tokens: Some(3072), block_tokens: Some(128), ..Default::default() };
        let o = over_capacity(256, 8, 128, 0, &vllm).unwrap();
        assert_eq!((o.rule, o.required_tokens, o.budget_tokens), (CapacityRule::KvBudget, 32 * 128, Some(23 * 128)));
        // Five of them need 20 blocks: they fit.
        assert!(over_capacity(256, 5, 128, 0, &vllm).is_none());
        // Without blocks the same cell is counted in tokens (3,072: it fits).
        assert!(over_capacity(256, 8, 128, 0, &Capacity { block_tokens: None, ..vllm.clone() }).is_none());
        // At 90% reuse the first 230 tokens are common: one whole block held once, three own
        // blocks each (388 tokens less the shared 128): 1 + 8 x 3 = 25 blocks, still over; six
        // (19 blocks) fit.
        assert_eq!(over_capacity(256, 8, 128, 90, &vllm).unwrap().required_tokens, 25 * 128);
        assert!(over_capacity(256, 6, 128, 90, &vllm).is_none());
        assert_eq!(kv_required(4, 100, 0, Some(32)), 4 * 4 * 32);
        assert_eq!(kv_required(4, 100, 64, Some(32)), (2 + 4 * 2) * 32);
    }

    #[test]
    fn a_prompt_that_cannot_fit_one_slot_is_an_over_capacity_prefill() {
        // llama.cpp, 4 slots of 1,024 tokens: a 1K prompt and its one output token do not fit.
        let llama = Capacity { slots: Some(4), slot_ctx: Some(1024), ..Default::default() };
        let p = plan(&[512, 1024], &[1], &[512, 1024], 128, 0, &llama);
        let prefill: Vec<(u32, bool)> =
            p.iter().filter(|c| c.phase == Phase::Prefill).map(|c| (c.context, c.over_capacity.is_some())).collect();
        assert_eq!(prefill, [(512, false), (1024, true)]);
        let over = p.iter().find(|c| c.phase == Phase::Prefill && c.context == 1024).unwrap();
        assert_eq!(over.over_capacity.as_ref().unwrap().required_tokens, 1025);
        // The model's length and the KV budget apply too.
        let short = Capacity { max_model_len: Some(8192), ..Default::default() };
        assert!(plan(&[], &[1], &[8192], 128, 0, &short)[0].over_capacity.is_some());
        assert!(plan(&[], &[1], &[8191], 128, 0, &short)[0].over_capacity.is_none());
    }

    #[test]
    fn plan_orders_prefill_before_decode() {
        let p = plan(&[8192], &[1, 2], &[8192, 16384], 4096, 0, &Capacity::default());
        let keys: Vec<(Phase, u32, u32)> = p.iter().map(|c| (c.phase, c.context, c.concurrency)).collect();
        assert_eq!(
            keys,
            [(Phase::Prefill, 8192, 1), (Phase::Decode, 8192, 1), (Phase::Decode, 8192, 2), (Phase::Prefill, 16384, 1)]
        );
    }
}

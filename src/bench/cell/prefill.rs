//! The prefill cell: streamed `max_tokens: 1` requests whose TTFT gives the prompt rate.
//! Each sample's prompt starts with a mark of its own, so no sample finds another's prompt
//! in the prefix cache; the last sample of a context's first repetition is the exact prompt
//! the decode cells send, so it also warms the prefix cache for them.

use tokio::sync::watch;

use super::{error_cell, CellContext};
use crate::bench::client::stream::{run_stream, Failure, StreamOutcome, StreamSettings};
use crate::format::{Cell, ErrorCause, Measurement, Phase, RequestRecord};

/// One streamed request of `prompt` with `max_tokens: 1`.
async fn one_request(cx: &CellContext, prompt: &str, cancel: watch::Receiver<bool>) -> StreamOutcome {
    let settings = StreamSettings { detect_loops: false, keep_answer: false, ..cx.stream };
    run_stream(&cx.client, cx.api.path(), cx.body(prompt, 1), &cx.clock, settings, cancel, || {}).await
}

/// A request sent and thrown away (a cold server's first prefill is not the server's
/// prefill rate). Its prompt is marked apart, so it warms no cache the samples use.
pub async fn warm_up(cx: &CellContext, prompt: &str, cancel: watch::Receiver<bool>) -> Option<u32> {
    one_request(cx, &sample_prompt(prompt, "w"), cancel).await.record.prompt_tokens
}

/// `prompt` with a mark in front that no other sample shares (prefix caches match from the
/// first token, so the mark decides whether any of the prompt is served from cache).
pub fn sample_prompt(prompt: &str, mark: &str) -> String {
    format!("[{mark}]{prompt}")
}

/// The prefill cell of `context`: one request per prompt of `prompts`, in order. The first
/// failure ends the cell as an error; the cell's `prompt_tokens` is the last sample's.
pub async fn prefill_cell(
    cx: &CellContext,
    context: u32,
    prompts: &[String],
    prompt_tokens: u64,
    cancel: watch::Receiver<bool>,
) -> Cell {
    let mut cell = cx.cell(Phase::Prefill, context, 1, prompt_tokens);
    let mut records: Vec<RequestRecord> = Vec::with_capacity(prompts.len());
    for prompt in prompts {
        let out = one_request(cx, prompt, cancel.clone()).await;
        if let Some(p) = out.record.prompt_tokens {
            cell.prompt_tokens = Some(p);
        }
        if let Some(f) = out.failure {
            return error_cell(cell, f);
        }
        if out.record.first_token_s.is_none() {
            let f = Failure { cause: Some(ErrorCause::NothingMeasured), ..Failure::new("the server sent no token") };
            return error_cell(cell, f);
        }
        records.push(out.record);
        if *cancel.borrow() {
            break;
        }
    }
    cell.measurement = Some(Measurement::of_requests(None, records));
    cell
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_mark_differs_from_the_first_character_on() {
        let p = "[v0 ctx-256 tag speed-matrix] words";
        let marks: Vec<String> = ["w", "r1s1", "r2s1"].iter().map(|m| sample_prompt(p, m)).collect();
        for (i, a) in marks.iter().enumerate() {
            assert!(a.ends_with(p));
            for b in &marks[i + 1..] {
                // The shared prefix is `[` alone, a token at most.
                let shared = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
                assert!(shared <= 2, "{a} / {b}");
            }
        }
    }
}

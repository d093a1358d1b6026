//! The prefill sample: one streamed `max_tokens: 1` request whose TTFT gives the prompt
//! rate; it also warms the prefix cache for the context's decode cells.

use tokio::sync::watch;

use super::{error_cell, CellContext};
use crate::bench::client::stream::{run_stream, Failure, StreamSettings};
use crate::format::{Cell, ErrorCause, Measurement, Phase};

pub async fn prefill_cell(
    cx: &CellContext,
    context: u32,
    prompt: &str,
    prompt_tokens: u64,
    cancel: watch::Receiver<bool>,
) -> Cell {
    let mut cell = cx.cell(Phase::Prefill, context, 1, prompt_tokens);
    let settings = StreamSettings { detect_loops: false, ..cx.stream };
    let out = run_stream(&cx.client, cx.api.path(), cx.body(prompt, 1), &cx.clock, settings, cancel, || {}).await;
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
    cell.measurement = Some(Measurement::of_requests(None, vec![out.record]));
    cell
}

//! The request-rate cell: one context at one offered rate, its requests sent open-loop on a
//! schedule drawn from the run's seed (`open_loop`), each a streamed request of the context's
//! prompt marked apart (so no request finds another's prompt in the prefix cache), every
//! request recorded with its scheduled and actual send instants. A replayed trace is a rate
//! cell whose requests each have a prompt and answer length of their own (`Prompts::Replay`).

use std::sync::Arc;

use tokio::sync::watch;

use super::{sample_prompt, CellContext};
use crate::bench::client::stream::{run_stream, StreamOutcome, StreamSettings};
use crate::bench::open_loop::{self, Fate, OpenLoopSettings};
use crate::format::{RateCell, ScheduledRequest, Status, Window};

/// What a rate cell measures: its context and rate, its prompts, the schedule (seconds from
/// the cell's start, warm-up first).
pub struct RateRun<'a> {
    pub context: u32,
    pub rate_rps: f64,
    pub prompts: Prompts,
    pub prompt_tokens: u64,
    pub schedule: &'a [f64],
}

/// Where a rate cell's prompts come from.
#[derive(Clone)]
pub enum Prompts {
    /// The context's sized prompt, each request's marked apart by `mark` and its number (so
    /// no request finds another's prompt in the prefix cache).
    Sized { text: Arc<str>, mark: String },
    /// A replayed trace: request i is the replay's request i.
    Replay(Arc<ReplayPrompts>),
}

/// A replay and what its prompts are made of.
pub struct ReplayPrompts {
    pub replay: Arc<crate::bench::replay::Replay>,
    /// The run's tag, first in every prompt: nothing of an earlier run is found cached.
    pub tag: String,
    pub tag_tokens: u64,
    pub costs: Arc<crate::bench::replay::WordCosts>,
    /// Each request's tag its own (`[q<i> tag]`): drawn lengths share nothing, not even the
    /// tag; a trace's requests share the run's tag, as they share the trace's blocks.
    pub tag_each: bool,
}

impl Prompts {
    /// Request i's prompt and answer length (`max_output` for sized prompts).
    fn request(&self, i: usize, max_output: u32) -> (String, u32) {
        match self {
            Prompts::Sized { text, mark } => (sample_prompt(text, &format!("{mark}q{i}")), max_output),
            Prompts::Replay(p) => {
                let r = &p.replay.requests[i];
                let text =
                    crate::bench::replay::request_prompt(r, p.replay.block_tokens, &p.tag, p.tag_tokens, &p.costs);
                (text, u32::try_from(r.output_tokens).unwrap_or(u32::MAX))
            }
        }
    }
}

pub async fn rate_cell(
    cx: &CellContext,
    run: RateRun<'_>,
    settings: OpenLoopSettings,
    cancel: watch::Receiver<bool>,
) -> RateCell {
    let t0 = cx.clock.now_s();
    let sender = cx.clone();
    let (prompts, stop) = (run.prompts.clone(), cancel.clone());
    // The open loop asks for request i before its instant: its prompt and body are made
    // then, so at the instant it only goes out.
    let send = move |i: usize| {
        let (cx, stop) = (sender.clone(), stop.clone());
        let (prompt, max_tokens) = prompts.request(i, cx.max_output);
        let body = cx.body(&prompt, max_tokens);
        async move {
            let settings = StreamSettings { detect_loops: false, keep_answer: false, ..cx.stream };
            run_stream(&cx.client, cx.api.path(), body, &cx.clock, settings, stop, || {}).await
        }
    };
    let after: Vec<Option<usize>> = match &run.prompts {
        Prompts::Replay(p) => p.replay.requests.iter().map(|r| r.after).collect(),
        Prompts::Sized { .. } => Vec::new(),
    };
    let outcomes = open_loop::run(run.schedule, &after, settings, cancel, send).await;
    let mut requests: Vec<ScheduledRequest> = outcomes.into_iter().map(|s| request(t0, s)).collect();
    if let Prompts::Replay(p) = &run.prompts {
        for (r, planned) in requests.iter_mut().zip(&p.replay.requests) {
            r.planned = Some(crate::format::PlannedRequest {
                trace_s: planned.trace_s,
                input_tokens: planned.input_tokens,
                output_tokens: planned.output_tokens,
            });
        }
    }
    let warm = settings.warmup.as_secs_f64();
    RateCell {
        schema_version: crate::format::SCHEMA_VERSION,
        context: run.context,
        rate_rps: run.rate_rps,
        repetition: 1,
        status: Status::Valid,
        prompt_tokens: u32::try_from(run.prompt_tokens).ok(),
        window: Window { start_s: t0 + warm, end_s: t0 + warm + settings.window.as_secs_f64() },
        requests,
        error: None,
        reported: None,
    }
}

/// One scheduled request on the run's clock.
fn request(t0: f64, s: open_loop::Scheduled<StreamOutcome>) -> ScheduledRequest {
    let mut r = ScheduledRequest {
        scheduled_s: t0 + s.scheduled_s,
        send_s: s.sent_s.map(|x| t0 + x),
        due_s: s.due_s.map(|x| t0 + x),
        first_token_s: None,
        last_token_s: None,
        end_s: None,
        tokens: 0,
        prompt_tokens: None,
        error: None,
        cached_tokens: None,
        planned: None,
    };
    match s.fate {
        Fate::Ended(out) => {
            let rec = out.record;
            r.send_s = Some(rec.send_s);
            (r.first_token_s, r.last_token_s, r.end_s) = (rec.first_token_s, rec.last_token_s, rec.end_s);
            (r.tokens, r.prompt_tokens, r.cached_tokens) = (rec.tokens, rec.prompt_tokens, rec.cached_prompt_tokens);
            r.error = out.failure.map(|f| f.message).or_else(|| {
                (out.cancelled || rec.first_token_s.is_none()).then(|| "stopped before it ended".to_string())
            });
        }
        Fate::DrainTimeout => r.error = Some("drain timeout: still running when the drain ended".into()),
        Fate::NotSent => {}
        Fate::Held => r.error = Some("held: the request it follows had not ended when the drain ended".into()),
    }
    r
}

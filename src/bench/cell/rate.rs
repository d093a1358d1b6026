//! The request-rate cell: one context at one offered rate, its requests sent open-loop on a
//! schedule drawn from the run's seed (`open_loop`), each a streamed request of the context's
//! prompt marked apart (so no request finds another's prompt in the prefix cache), every
//! request recorded with its scheduled and actual send instants.

use tokio::sync::watch;

use super::{sample_prompt, CellContext};
use crate::bench::client::stream::{run_stream, StreamOutcome, StreamSettings};
use crate::bench::open_loop::{self, Fate, OpenLoopSettings};
use crate::format::{RateCell, ScheduledRequest, Status, Window};

/// What a rate cell measures: its context and rate, the prompt, the schedule (seconds from
/// the cell's start, warm-up first) and a mark that keeps its prompts apart from every other
/// cell's.
pub struct RateRun<'a> {
    pub context: u32,
    pub rate_rps: f64,
    pub prompt: &'a str,
    pub prompt_tokens: u64,
    pub schedule: &'a [f64],
    pub mark: String,
}

pub async fn rate_cell(
    cx: &CellContext,
    run: RateRun<'_>,
    settings: OpenLoopSettings,
    cancel: watch::Receiver<bool>,
) -> RateCell {
    let t0 = cx.clock.now_s();
    let sender = cx.clone();
    let (text, mark, stop) = (run.prompt.to_string(), run.mark.clone(), cancel.clone());
    let send = move |i: usize| {
        let cx = sender.clone();
        let prompt = sample_prompt(&text, &format!("{mark}q{i}"));
        let stop = stop.clone();
        async move {
            let settings = StreamSettings { detect_loops: false, keep_answer: false, ..cx.stream };
            let body = cx.body(&prompt, cx.max_output);
            run_stream(&cx.client, cx.api.path(), body, &cx.clock, settings, stop, || {}).await
        }
    };
    let outcomes = open_loop::run(run.schedule, settings, cancel, send).await;
    let requests = outcomes.into_iter().map(|s| request(t0, s)).collect();
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
    }
}

/// One scheduled request on the run's clock.
fn request(t0: f64, s: open_loop::Scheduled<StreamOutcome>) -> ScheduledRequest {
    let mut r = ScheduledRequest {
        scheduled_s: t0 + s.scheduled_s,
        send_s: s.sent_s.map(|x| t0 + x),
        first_token_s: None,
        last_token_s: None,
        end_s: None,
        tokens: 0,
        prompt_tokens: None,
        error: None,
    };
    match s.fate {
        Fate::Ended(out) => {
            let rec = out.record;
            r.send_s = Some(rec.send_s);
            (r.first_token_s, r.last_token_s, r.end_s) = (rec.first_token_s, rec.last_token_s, rec.end_s);
            (r.tokens, r.prompt_tokens) = (rec.tokens, rec.prompt_tokens);
            r.error = out.failure.map(|f| f.message).or_else(|| {
                (out.cancelled || rec.first_token_s.is_none()).then(|| "stopped before it ended".to_string())
            });
        }
        Fate::DrainTimeout => r.error = Some("drain timeout: still running when the drain ended".into()),
        Fate::NotSent => {}
    }
    r
}

//! A trace replay (`site bench --trace`): the server discovered as for the matrix, the
//! slice cut to what the server holds, the filler's words priced in the server's tokens,
//! then the slice sent open-loop at its timestamps, once per repetition, each repetition a
//! rate cell of `rates.jsonl` whose requests keep what the trace asked beside what was served.

use std::sync::Arc;

use anyhow::{Context, Result};

use super::{Bench, Reached, Session};
use crate::bench::bench_plan::TracePlan;
use crate::bench::cell::rate::{Prompts, RateRun, ReplayPrompts};
use crate::bench::cell::{self, CellContext};
use crate::bench::open_loop::OpenLoopSettings;
use crate::bench::progress::Progress;
use crate::bench::replay::{plan_replay, Replay, WordCosts};
use crate::bench::run_folder::open_run;
use crate::bench::BenchSummary;

pub(super) async fn run_trace(bench: Bench<'_>, t: &TracePlan) -> Result<BenchSummary> {
    let plan = bench.plan;
    let mut run = plan.first_run();
    let mut reached = Reached::server(plan, &mut run).await?;
    let cap = &reached.server.info.capacity;
    let limit = [cap.max_model_len, cap.slot_ctx].into_iter().flatten().min();
    let replay = plan_replay(&t.trace, t.settings, limit).with_context(|| format!("--trace {}", t.file))?;
    if plan.folder.dry_run {
        reached.stop_launched().await;
        crate::bench::progress::print_trace_plan(plan, t, &replay);
        return Ok(BenchSummary::default());
    }
    let Reached { client, interrupt, launcher, server } = reached;
    let (recorder, mut manifest) = open_run(plan, &run, &client, &server)?;
    manifest.settings.concurrency.clear();
    manifest.settings.prefill_contexts.clear();
    manifest.settings.contexts = vec![replay_context(&replay)];
    manifest.traffic = Some(traffic(t, &replay));
    recorder.write_manifest(&manifest)?;
    let mut session = Session::start(bench, run, client, &server.info, server.model, recorder, &[], interrupt).await;
    session.launcher = launcher;
    session.progress = Progress::new(u64::from(plan.matrix.repeat));
    let measured = session.replay(t, replay.clone()).await;
    session.stop_background().await;
    let logged = session.stop_server().await;
    let prefix_tokens = measured?;
    logged?;
    if let Some(trace) = manifest.traffic.as_mut().and_then(|t| t.trace.as_mut()) {
        trace.prefix_tokens = prefix_tokens;
        trace.sent_reuse_pct = prefix_tokens.map(|p| replay.sent_reuse_pct(p));
        trace.shorter_than_prefix = prefix_tokens
            .map(|p| replay.requests.iter().filter(|q| q.input_tokens < p + q.blocks.len() as u64).count() as u64);
    }
    session.finish(manifest)
}

/// The row a replay's cells stand in: the slice's median input, in tokens.
fn replay_context(r: &Replay) -> u32 {
    let mut inputs: Vec<u64> = r.requests.iter().map(|q| q.input_tokens).collect();
    inputs.sort_unstable();
    u32::try_from(inputs[inputs.len() / 2]).unwrap_or(u32::MAX).max(1)
}

/// What the run records of how its traffic was made.
fn traffic(t: &TracePlan, r: &Replay) -> crate::format::Traffic {
    let s = t.settings;
    crate::format::Traffic {
        arrival: "trace".into(),
        seed: 0,
        rates_rps: vec![r.offered_rps()],
        max_in_flight: t.max_in_flight,
        warmup_s: 0.0,
        input_tokens: None,
        output_tokens: None,
        auto: None,
        trace: Some(crate::format::TraceReplay {
            file: t.file.clone(),
            format: r.format.name().into(),
            start_s: s.start_s,
            duration_s: r.span_s * s.speedup,
            speedup: s.speedup,
            scale_lengths: s.scale_lengths,
            max_input: s.max_input,
            block_tokens: r.block_tokens,
            in_slice: r.counts.in_slice,
            scaled: r.counts.scaled,
            capped: r.counts.capped,
            dropped: r.counts.dropped,
            planned_reuse_pct: r.planned_reuse_pct(),
            prefix_tokens: None,
            sent_reuse_pct: None,
            shorter_than_prefix: None,
        }),
    }
}

impl Session<'_> {
    /// The slice, once per repetition (with `--launch --restarts`, on each one's process),
    /// each with a tag of its own so no repetition finds the one before it cached. Returns
    /// the tokens the first repetition's prompts started with (tag and template).
    async fn replay(&mut self, t: &TracePlan, replay: Replay) -> Result<Option<u64>> {
        self.progress.current("pricing the filler's words in the server's tokens");
        let Some(costs) = self.interruptible(word_costs(&self.cx)).await else { return Ok(None) };
        let costs = costs.context("pricing the filler's words")?;
        let timing = self.plan.timing;
        let settings = OpenLoopSettings {
            warmup: std::time::Duration::ZERO,
            window: std::time::Duration::from_secs_f64(replay.span_s),
            drain_timeout: timing.drain_timeout,
            max_in_flight: t.max_in_flight as usize,
        };
        let schedule: Vec<f64> = replay.requests.iter().map(|q| q.at_s).collect();
        let context = replay_context(&replay);
        let rate = replay.offered_rps();
        let (replay, costs) = (Arc::new(replay), Arc::new(costs));
        let mut first_prefix = None;
        for rep in 1..=self.plan.matrix.repeat {
            if self.server_for(rep).await? {
                self.summary.interrupted = true;
                return Ok(first_prefix);
            }
            let tag = format!("[{} r{rep} speed-matrix trace]", self.tag);
            let Some(tag_tokens) = self.interruptible(tag_cost(&self.cx, &tag)).await else { return Ok(first_prefix) };
            let tag_tokens = tag_tokens.context("counting the tag's tokens")?;
            first_prefix.get_or_insert(tag_tokens);
            let prompts =
                ReplayPrompts { replay: replay.clone(), tag, tag_tokens, costs: costs.clone(), tag_each: false };
            let label = format!("{} replayed at {}x", t.file, t.settings.speedup);
            self.progress.current(&format!(
                "{label}: {} requests over {:.0} s",
                schedule.len(),
                settings.window.as_secs_f64()
            ));
            let prompts = Prompts::Replay(Arc::new(prompts));
            let run =
                RateRun { context, rate_rps: rate, prompts, prompt_tokens: u64::from(context), schedule: &schedule };
            let mut c = cell::rate::rate_cell(&self.cx, run, settings, self.interrupt.clone()).await;
            if *self.interrupt.borrow() {
                self.summary.interrupted = true;
                return Ok(first_prefix);
            }
            c.repetition = rep;
            self.keep_rate(&c, &label)?;
        }
        Ok(first_prefix)
    }

    /// `fut`, or `None` when Ctrl-C came first.
    pub(super) async fn interruptible<T>(&self, fut: impl std::future::Future<Output = T>) -> Option<T> {
        let mut interrupt = self.interrupt.clone();
        tokio::select! {
            r = fut => Some(r),
            Ok(_) = interrupt.wait_for(|i| *i) => None,
        }
    }
}

/// Each filler word's cost in the server's tokens, after a space: the count of 64 of it
/// after a first word, less the first word's alone.
pub(super) async fn word_costs(cx: &CellContext) -> Result<WordCosts> {
    let base = count(cx, "notes").await?;
    let mut words = Vec::new();
    for w in crate::bench::prompt::WORDS {
        let text = format!("notes{}", format!(" {w}").repeat(64));
        let n = count(cx, &text).await?;
        let cost = ((n.saturating_sub(base)) as f64 / 64.0).round().max(1.0) as u32;
        words.push((*w, cost));
    }
    Ok(WordCosts { words })
}

/// The tag's cost as a request sends it: template and special tokens included (the usage of
/// a one-token request), so the whole prompt lands on the trace's input.
pub(super) async fn tag_cost(cx: &CellContext, tag: &str) -> Result<u64> {
    crate::bench::prompt::count_by_request(&cx.client, cx.api, &cx.model, tag).await
}

/// A text's tokens by the server's tokenizer, or by a one-token request's usage.
async fn count(cx: &CellContext, text: &str) -> Result<u64> {
    match crate::bench::prompt::tokenize(&cx.client, cx.engine, cx.api, &cx.model, text).await? {
        Some(n) => Ok(n),
        None => crate::bench::prompt::count_by_request(&cx.client, cx.api, &cx.model, text).await,
    }
}

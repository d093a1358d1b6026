//! A rate run (`site bench --rates`): the server discovered as for the matrix, then each
//! context at each offered rate, an open loop a cell (`cell::rate`), written to the run's
//! `rates.jsonl` as it ends.

use anyhow::{Context, Result};

use super::{Bench, Reached, Session};
use crate::bench::bench_plan::RatePlan;
use crate::bench::cell;
use crate::bench::progress::Progress;
use crate::bench::prompt::SizedPrompt;
use crate::bench::replay::{Replay, ReplayRequest, WordCosts};
use crate::bench::run_folder::open_run;
use crate::bench::BenchSummary;
use crate::format::{CellError, Status};
use crate::units::context_label;

/// The row a run of drawn input lengths stands in: their mean, in tokens.
fn drawn_context(input: crate::bench::lengths::Lengths) -> u32 {
    (input.mean.round() as u32).max(1)
}

/// `--rates`: each context at each offered rate, repetition by repetition, on one server
/// (with `--launch`, on each repetition's process): a cell an open loop (`cell::rate`), its
/// schedule drawn from the run's seed. The run records how (`traffic`) and has no matrix.
pub(super) async fn run_rates(bench: Bench<'_>, rates: &RatePlan) -> Result<BenchSummary> {
    let plan = bench.plan;
    let mut run = plan.first_run();
    let mut reached = Reached::server(plan, &mut run).await?;
    if plan.folder.dry_run {
        reached.stop_launched().await;
        crate::bench::progress::print_rate_plan(plan, rates);
        return Ok(BenchSummary::default());
    }
    let Reached { client, interrupt, launcher, server } = reached;
    let (recorder, mut manifest) = open_run(plan, &run, &client, &server)?;
    manifest.settings.concurrency.clear();
    manifest.settings.prefill_contexts.clear();
    manifest.traffic = Some(crate::format::Traffic {
        arrival: rates.arrival.name(),
        seed: rates.seed,
        rates_rps: rates.rates.clone(),
        max_in_flight: rates.max_in_flight,
        warmup_s: plan.timing.warmup_hold.as_secs_f64(),
        input_tokens: rates.input.map(|l| l.name()),
        output_tokens: rates.output.map(|l| l.name()),
        auto: None,
        trace: None,
    });
    if let Some(input) = rates.input {
        manifest.settings.contexts = vec![drawn_context(input)];
    }
    recorder.write_manifest(&manifest)?;
    let mut session = Session::start(bench, run, client, &server.info, server.model, recorder, &[], interrupt).await;
    session.launcher = launcher;
    let contexts = if rates.input.is_some() { 1 } else { plan.matrix.contexts.len() };
    let planned = if rates.auto { AUTO_SHARES.len() + 2 } else { rates.rates.len() };
    session.progress = Progress::new((contexts * planned * plan.matrix.repeat as usize) as u64);
    let measured = match rates.auto {
        true => session.measure_auto(rates, &mut manifest).await,
        false => session.measure_rates(rates).await,
    };
    session.stop_background().await;
    let logged = session.stop_server().await;
    measured?;
    logged?;
    session.finish(manifest)
}

/// `--rates auto`: the rates measured first, as shares of the probe's peak.
const AUTO_SHARES: [f64; 6] = [0.1, 0.3, 0.5, 0.7, 0.9, 1.1];

/// A rate to three significant digits (a rate a reader can type again).
fn round3(r: f64) -> f64 {
    let scale = 10f64.powi(2 - r.abs().log10().floor() as i32);
    (r * scale).round() / scale
}

/// The last rate kept up with (completed at 90% of the offered rate or more) and the first
/// not, among `readings` (rate, completion rate) lowest rate first.
fn knee(readings: &[(f64, Option<f64>)]) -> Option<(f64, f64)> {
    let kept = |(rate, done): &(f64, Option<f64>)| done.is_some_and(|d| d >= 0.9 * rate);
    let first_not = readings.iter().position(|r| !kept(r))?;
    let below = readings[..first_not].last()?;
    Some((below.0, readings[first_not].0))
}

impl Session<'_> {
    /// `--rates auto`: the probe, the rates from 10% to 110% of its peak, then two between
    /// the last kept up with and the first not; the run records what the probe measured.
    async fn measure_auto(&mut self, r: &RatePlan, manifest: &mut crate::format::RunManifest) -> Result<()> {
        let Some(probe) = self.probe_peak(r).await? else { return Ok(()) };
        let coarse: Vec<f64> = AUTO_SHARES.iter().map(|s| round3(s * probe.peak_rps)).filter(|x| *x > 0.0).collect();
        self.measure_rates(&RatePlan { rates: coarse.clone(), auto: false, ..r.clone() }).await?;
        let readings: Vec<(f64, Option<f64>)> =
            self.rate_readings.iter().filter(|x| x.0 == probe.context && x.2 == 1).map(|x| (x.1, x.3)).collect();
        let mut all = coarse;
        let knee = knee(&readings);
        if let (Some((lo, hi)), false) = (knee, self.summary.interrupted) {
            let between: Vec<f64> = [1.0 / 3.0, 2.0 / 3.0].iter().map(|t| round3(lo * (hi / lo).powf(*t))).collect();
            self.measure_rates(&RatePlan { rates: between.clone(), auto: false, ..r.clone() }).await?;
            all.extend(between);
        }
        all.sort_by(f64::total_cmp);
        all.dedup();
        if let Some(t) = manifest.traffic.as_mut() {
            t.rates_rps = all;
            t.auto = Some(crate::format::AutoRates { knee, ..probe });
        }
        Ok(())
    }

    /// A closed loop at the first context: as many requests kept in flight as the server
    /// runs at once (its slots, or what its KV budget holds, at most 64), for the warm-up and
    /// the window; the rate they were completed at is the peak. `None` when Ctrl-C came or
    /// the prompt could not be sized.
    async fn probe_peak(&mut self, r: &RatePlan) -> Result<Option<crate::format::AutoRates>> {
        let ctx = self.plan.matrix.contexts[0];
        let sized = match self.rate_prompt(ctx, r, 1).await? {
            Some(Some(s)) => s,
            _ => return Ok(None),
        };
        let cap = &self.info.capacity;
        let per_request = u64::from(ctx) + u64::from(self.cx.max_output);
        let concurrency = cap
            .slots
            .or_else(|| cap.kv_budget_tokens.map(|kv| (kv / per_request.max(1)).clamp(1, 64) as u32))
            .unwrap_or(16);
        let timing = self.plan.timing;
        let settings = crate::bench::open_loop::OpenLoopSettings {
            warmup: timing.warmup_hold,
            window: timing.duration,
            drain_timeout: timing.drain_timeout,
            max_in_flight: concurrency as usize,
        };
        let span = (timing.warmup_hold + timing.duration).as_secs_f64();
        // Far more often than the server can answer: each request goes out as soon as one of
        // the `concurrency` in flight ends (within a millisecond), a closed loop.
        let schedule = crate::bench::arrivals::schedule(1000.0, crate::bench::arrivals::Arrival::Constant, 0, span)?;
        self.progress.current(&format!("probing the peak: {concurrency} requests in flight at {}", context_label(ctx)));
        let run = cell::rate::RateRun {
            context: ctx,
            rate_rps: 1000.0,
            prompts: cell::rate::Prompts::Sized { text: sized.text.as_str().into(), mark: "probe".into() },
            prompt_tokens: sized.tokens,
            schedule: &schedule,
        };
        let c = cell::rate::rate_cell(&self.cx, run, settings, self.interrupt.clone()).await;
        if *self.interrupt.borrow() {
            self.summary.interrupted = true;
            return Ok(None);
        }
        let peak = c.completion_rate().filter(|p| *p > 0.0).ok_or_else(|| {
            anyhow::anyhow!("--rates auto: the probe completed too few requests to read a peak from (fewer than two)")
        })?;
        self.progress.cell_done(&format!(
            "probe: {concurrency} in flight at {} completed {peak:.2} requests/s: measuring 10% to 110% of it",
            context_label(ctx)
        ));
        Ok(Some(crate::format::AutoRates {
            context: ctx,
            concurrency,
            probe_s: timing.duration.as_secs_f64(),
            peak_rps: peak,
            knee: None,
        }))
    }

    /// Every rate cell: repetition by repetition, context by context, rate by rate (lowest
    /// first, so a server saturated at one rate has drained before the next context).
    async fn measure_rates(&mut self, r: &RatePlan) -> Result<()> {
        let (repeat, timing) = (self.plan.matrix.repeat, self.plan.timing);
        let settings = crate::bench::open_loop::OpenLoopSettings {
            warmup: timing.warmup_hold,
            window: timing.duration,
            drain_timeout: timing.drain_timeout,
            max_in_flight: r.max_in_flight as usize,
        };
        let span = (timing.warmup_hold + timing.duration).as_secs_f64();
        let drawn = self.drawn_lengths_setup(r).await?;
        if (r.input.is_some() || r.output.is_some()) && drawn.is_none() {
            return Ok(());
        }
        let contexts = match r.input {
            Some(l) => vec![drawn_context(l)],
            None => self.plan.matrix.contexts.clone(),
        };
        for rep in 1..=repeat {
            if self.server_for(rep).await? {
                self.summary.interrupted = true;
                return Ok(());
            }
            for &ctx in &contexts {
                let sized = match (&drawn, r.input) {
                    (Some(_), Some(_)) => None,
                    _ => match self.rate_prompt(ctx, r, rep).await? {
                        None => return Ok(()),
                        Some(None) => continue,
                        Some(s) => s,
                    },
                };
                for (k, &rate) in r.rates.iter().enumerate() {
                    let label = self.rate_label(ctx, rate, rep);
                    self.progress.current(&format!("{label}: {:.0} s of traffic", span));
                    let seed = r.seed ^ ((ctx as u64) << 32) ^ ((k as u64) << 16) ^ rep as u64;
                    let schedule = crate::bench::arrivals::schedule(rate, r.arrival, seed, span)?;
                    let mark = format!("r{rep}k{k}");
                    let prompts = match &drawn {
                        Some(costs) => self.drawn_prompts(r, ctx, &schedule, seed, costs, &mark).await?,
                        None => {
                            let s = sized.as_ref().expect("sized without drawn lengths");
                            Some(cell::rate::Prompts::Sized { text: s.text.as_str().into(), mark })
                        }
                    };
                    // None: Ctrl-C came while the prompts were made.
                    let Some(prompts) = prompts else { return Ok(()) };
                    let prompt_tokens = sized.as_ref().map_or(u64::from(ctx), |s| s.tokens);
                    let run = cell::rate::RateRun {
                        context: ctx,
                        rate_rps: rate,
                        prompts,
                        prompt_tokens,
                        schedule: &schedule,
                    };
                    let mut c = cell::rate::rate_cell(&self.cx, run, settings, self.interrupt.clone()).await;
                    if *self.interrupt.borrow() {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                    c.repetition = rep;
                    self.keep_rate(&c, &label)?;
                }
            }
        }
        Ok(())
    }

    /// The context's prompt for rate cells: `None` when Ctrl-C came, `Some(None)` when it
    /// could not be sized (its cells are kept as errors).
    async fn rate_prompt(&mut self, ctx: u32, r: &RatePlan, rep: u32) -> Result<Option<Option<SizedPrompt>>> {
        if let Some(s) = self.prompts.get(&ctx) {
            return Ok(Some(Some(s.clone())));
        }
        match self.size(ctx, 0, ctx).await {
            None => {
                self.summary.interrupted = true;
                Ok(None)
            }
            Some(Ok(s)) => {
                self.sized_by.get_or_insert(s.method);
                self.prompts.insert(ctx, s.clone());
                Ok(Some(Some(s)))
            }
            Some(Err(e)) => {
                let message = self.cx.client.scrub(&format!("sizing the prompt failed: {e:#}"));
                for &rate in &r.rates {
                    let now = self.cx.clock.now_s();
                    let c = crate::format::RateCell {
                        schema_version: crate::format::SCHEMA_VERSION,
                        context: ctx,
                        rate_rps: rate,
                        repetition: rep,
                        status: Status::Error,
                        prompt_tokens: None,
                        window: crate::format::Window { start_s: now, end_s: now + 1e-3 },
                        requests: Vec::new(),
                        error: Some(CellError { message: message.clone(), http_status: None, cause: None }),
                        reported: None,
                    };
                    let label = self.rate_label(ctx, rate, rep);
                    self.keep_rate(&c, &label)?;
                }
                Ok(Some(None))
            }
        }
    }

    /// With drawn lengths, the filler's words priced in the server's tokens, once. `None`
    /// without drawn lengths, or when Ctrl-C came (the plan tells which).
    async fn drawn_lengths_setup(&mut self, r: &RatePlan) -> Result<Option<std::sync::Arc<WordCosts>>> {
        if r.input.is_none() && r.output.is_none() {
            return Ok(None);
        }
        self.progress.current("pricing the filler's words in the server's tokens");
        let Some(costs) = self.interruptible(super::trace::word_costs(&self.cx)).await else {
            self.summary.interrupted = true;
            return Ok(None);
        };
        Ok(Some(std::sync::Arc::new(costs.context("pricing the filler's words")?)))
    }

    /// A rate cell's prompts with drawn lengths: request i's input (the context's where the
    /// input is not drawn) and answer from the cell's seed, its blocks its own, its tag its
    /// own: nothing is shared between requests but the chat template.
    async fn drawn_prompts(
        &mut self,
        r: &RatePlan,
        ctx: u32,
        schedule: &[f64],
        seed: u64,
        costs: &std::sync::Arc<WordCosts>,
        mark: &str,
    ) -> Result<Option<cell::rate::Prompts>> {
        let limit = self.cx.request_limit.unwrap_or(u64::MAX);
        let n = schedule.len();
        let inputs = match r.input {
            Some(l) => l.draw(n, seed ^ 0x1_0000_0001, limit.saturating_sub(2)),
            None => vec![u64::from(ctx); n],
        };
        let outputs = match r.output {
            Some(l) => l.draw(n, seed ^ 0x2_0000_0002, u64::from(u32::MAX)),
            None => vec![u64::from(self.cx.max_output); n],
        };
        let requests = (0..n)
            .map(|i| {
                let input = inputs[i];
                let output = outputs[i].min(limit.saturating_sub(input).max(1));
                let blocks = (0..input.div_ceil(512))
                    .map(|b| (1 << 61) | (seed & 0xffff_ffff) << 24 | (i as u64) << 12 | b)
                    .collect();
                ReplayRequest {
                    at_s: schedule[i],
                    trace_s: schedule[i],
                    input_tokens: input,
                    output_tokens: output,
                    blocks,
                    after: None,
                }
            })
            .collect();
        let replay = Replay {
            format: crate::bench::trace::TraceFormat::Mooncake,
            requests,
            block_tokens: 512,
            counts: Default::default(),
            span_s: schedule.last().copied().unwrap_or(0.0).max(1e-3),
        };
        let tag = format!("{} {mark}", self.tag);
        let Some(tag_tokens) = self.interruptible(super::trace::tag_cost(&self.cx, &format!("[q{n} {tag}]"))).await
        else {
            self.summary.interrupted = true;
            return Ok(None);
        };
        let prompts = cell::rate::ReplayPrompts {
            replay: std::sync::Arc::new(replay),
            tag,
            tag_tokens: tag_tokens.context("counting the tag's tokens")?,
            costs: costs.clone(),
            tag_each: true,
        };
        Ok(Some(cell::rate::Prompts::Replay(std::sync::Arc::new(prompts))))
    }

    fn rate_label(&self, ctx: u32, rate: f64, rep: u32) -> String {
        let cell = format!("{} at {rate} requests/s", context_label(ctx));
        match self.plan.matrix.repeat {
            1 => cell,
            n => format!("{cell} · rep {rep}/{n}"),
        }
    }

    /// Writes a rate cell, shows what it did and counts it.
    pub(super) fn keep_rate(&mut self, c: &crate::format::RateCell, label: &str) -> Result<()> {
        self.recorder.write_rate_cell(c)?;
        self.rate_readings.push((c.context, c.rate_rps, c.repetition, c.completion_rate()));
        let counted: Vec<&crate::format::ScheduledRequest> =
            c.requests.iter().filter(|q| q.scheduled_s >= c.window.start_s && q.scheduled_s < c.window.end_s).collect();
        let done = counted.iter().filter(|q| q.error.is_none() && q.end_s.is_some() && q.send_s.is_some()).count();
        let said = match &c.error {
            Some(e) => format!("Error: {}", e.message),
            None => format!(
                "{} requests scheduled in the window, {done} completed ({:.2} requests/s)",
                counted.len(),
                done as f64 / (c.window.end_s - c.window.start_s)
            ),
        };
        self.progress.cell_done(&format!("{label}: {said}"));
        self.summary.written += 1;
        match c.status {
            Status::Valid => self.summary.valid += 1,
            _ => self.summary.errors += 1,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rates_round_to_three_digits_and_find_the_knee() {
        assert_eq!((round3(5.04321), round3(0.0123456), round3(123.456)), (5.04, 0.0123, 123.0));
        let readings = [(1.0, Some(1.0)), (2.0, Some(1.95)), (3.0, Some(2.5)), (4.0, Some(2.6))];
        assert_eq!(knee(&readings), Some((2.0, 3.0)));
        assert_eq!(knee(&[(1.0, Some(1.0)), (2.0, Some(2.0))]), None, "every rate kept up with");
        assert_eq!(knee(&[(1.0, Some(0.5)), (2.0, Some(0.6))]), None, "none kept up with: no knee to refine");
        assert_eq!(knee(&[(1.0, Some(1.0)), (2.0, None)]), Some((1.0, 2.0)), "no completion rate: not kept up");
    }
}

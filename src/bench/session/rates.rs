//! A rate run (`site bench --rates`): the server discovered as for the matrix, then each
//! context at each offered rate, an open loop a cell (`cell::rate`), written to the run's
//! `rates.jsonl` as it ends.

use anyhow::Result;

use super::{Bench, Reached, Session};
use crate::bench::bench_plan::RatePlan;
use crate::bench::cell;
use crate::bench::progress::Progress;
use crate::bench::prompt::SizedPrompt;
use crate::bench::run_folder::open_run;
use crate::bench::BenchSummary;
use crate::format::{CellError, Status};
use crate::units::context_label;

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
        trace: None,
    });
    recorder.write_manifest(&manifest)?;
    let mut session = Session::start(bench, run, client, &server.info, server.model, recorder, &[], interrupt).await;
    session.launcher = launcher;
    let cells = plan.matrix.contexts.len() * rates.rates.len() * plan.matrix.repeat as usize;
    session.progress = Progress::new(cells as u64);
    let measured = session.measure_rates(rates).await;
    session.stop_background().await;
    let logged = session.stop_server().await;
    measured?;
    logged?;
    session.finish(manifest)
}

impl Session<'_> {
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
        for rep in 1..=repeat {
            if self.server_for(rep).await? {
                self.summary.interrupted = true;
                return Ok(());
            }
            for ctx in self.plan.matrix.contexts.clone() {
                let Some(sized) = self.rate_prompt(ctx, r, rep).await? else { return Ok(()) };
                let Some(sized) = sized else { continue };
                for (k, &rate) in r.rates.iter().enumerate() {
                    let label = self.rate_label(ctx, rate, rep);
                    self.progress.current(&format!("{label}: {:.0} s of traffic", span));
                    let seed = r.seed ^ ((ctx as u64) << 32) ^ ((k as u64) << 16) ^ rep as u64;
                    let schedule = crate::bench::arrivals::schedule(rate, r.arrival, seed, span)?;
                    let run = cell::rate::RateRun {
                        context: ctx,
                        rate_rps: rate,
                        prompts: cell::rate::Prompts::Sized {
                            text: sized.text.as_str().into(),
                            mark: format!("r{rep}k{k}"),
                        },
                        prompt_tokens: sized.tokens,
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
                    };
                    let label = self.rate_label(ctx, rate, rep);
                    self.keep_rate(&c, &label)?;
                }
                Ok(Some(None))
            }
        }
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

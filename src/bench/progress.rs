//! Progress on a terminal (a live bar: cells done / total, current cell, live tok/s, ETA)
//! or plain log lines when stderr is not a terminal.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::watch;

use super::bench_plan::BenchPlan;
use super::client::stream::WindowClock;
use super::plan::PlannedCell;
use super::run_folder::Done;
use crate::format::Phase;
use crate::units::context_label;
use crate::units::terminal_safe;

pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    done: u64,
}

impl Progress {
    pub fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{spinner} [{pos}/{len}] {wide_msg} {elapsed_precise} ETA {eta}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Progress { bar, total, done: 0 }
    }

    /// A line that stays (plain output) or prints above the bar.
    pub fn line(&self, text: &str) {
        match &self.bar {
            Some(b) => b.println(terminal_safe(text)),
            None => eprintln!("{}", terminal_safe(text)),
        }
    }

    pub fn current(&self, text: &str) {
        if let Some(b) = &self.bar {
            b.set_message(terminal_safe(text).into_owned());
        }
    }

    pub fn cell_done(&mut self, text: &str) {
        self.done += 1;
        let line = format!("[{}/{}] {}", self.done, self.total, terminal_safe(text));
        match &self.bar {
            Some(b) => {
                b.inc(1);
                b.println(line);
            }
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Progress {
    /// The bar, for a task that updates the message while a cell runs.
    pub fn bar_handle(&self) -> Option<ProgressBar> {
        self.bar.clone()
    }
}

/// The output tok/s of the whole run, measured twice a second from the clock's live token
/// count, for the progress bar.
pub struct LiveRate {
    message: Arc<Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl LiveRate {
    pub fn spawn(clock: Arc<WindowClock>, mut stop: watch::Receiver<bool>) -> LiveRate {
        let message = Arc::new(Mutex::new(String::new()));
        let shown = message.clone();
        let task = tokio::spawn(async move {
            let mut last = (Instant::now(), 0u64);
            loop {
                tokio::select! { _ = tokio::time::sleep(Duration::from_millis(500)) => {}, _ = stop.changed() => return }
                let now = (Instant::now(), clock.live_tokens.load(Ordering::Relaxed));
                let rate = (now.1 - last.1) as f64 / (now.0 - last.0).as_secs_f64();
                *shown.lock().unwrap() = format!("{rate:.0} tok/s live");
                last = now;
            }
        });
        LiveRate { message, task }
    }

    pub fn now(&self) -> String {
        self.message.lock().unwrap().clone()
    }

    /// Shows `label · <rate>` on the bar until the returned task is aborted.
    pub fn show_on(&self, bar: Option<ProgressBar>, label: String) -> tokio::task::JoinHandle<()> {
        let message = self.message.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if let Some(b) = &bar {
                    b.set_message(format!("{label} · {}", message.lock().unwrap()));
                }
            }
        })
    }
}

impl Drop for LiveRate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `--dry-run`: every cell and repetition the run would measure (with `--resume`, only those
/// not yet on disk, after the same checks a real resume makes), and about how long.
pub(super) fn print_plan(planned: &[PlannedCell], plan: &BenchPlan, done: &Done) {
    let runs = planned.iter().filter(|p| p.over_capacity.is_none()).count();
    let repeat = plan.matrix.repeat;
    let per_cell = if repeat > 1 { format!(", each measured {repeat} times") } else { String::new() };
    println!("Plan: {} cells, {} to run, {} Over capacity{per_cell}", planned.len(), runs, planned.len() - runs);
    let mut to_go = 0usize;
    let mut decode_to_go = 0usize;
    for p in planned {
        let reps: Vec<u32> = (1..=if p.over_capacity.is_some() { 1 } else { repeat })
            .filter(|rep| !done.contains(&(p.phase, p.context, p.concurrency, *rep)))
            .collect();
        if reps.is_empty() {
            continue;
        }
        to_go += reps.len();
        if p.phase == Phase::Decode && p.over_capacity.is_none() {
            decode_to_go += reps.len();
        }
        let which = if repeat > 1 { format!(" (rep {})", list_of(&reps)) } else { String::new() };
        match &p.over_capacity {
            None => println!("  run            {}{which}", describe(p)),
            Some(o) => println!(
                "  over capacity  {}: {} (needs {}, limit {})",
                describe(p),
                o.rule,
                o.required_tokens,
                o.budget_tokens.map(|b| b.to_string()).unwrap_or_else(|| "?".into())
            ),
        }
    }
    if !done.is_empty() {
        println!("Resuming: {} measurements already on disk, {to_go} to go.", done.len());
    }
    let secs = decode_to_go as f64 * (plan.timing.duration + plan.timing.warmup_hold).as_secs_f64();
    println!("{decode_to_go} decode windows: about {:.0} minutes.", secs / 60.0);
}

/// `1-3`, `2, 3`.
fn list_of(reps: &[u32]) -> String {
    match reps {
        [a, .., b] if b - a + 1 == reps.len() as u32 && reps.len() > 2 => format!("{a}-{b}"),
        _ => reps.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
    }
}

/// A planned cell in words: `prefill 8K`, `decode 8K x 4`.
pub(super) fn describe(p: &PlannedCell) -> String {
    match p.phase {
        Phase::Prefill => format!("prefill {}", context_label(p.context)),
        Phase::Decode => format!("decode {} x {}", context_label(p.context), p.concurrency),
    }
}

/// `--dry-run --rates`: every rate cell the run would measure and about how long.
pub(super) fn print_rate_plan(plan: &BenchPlan, r: &super::bench_plan::RatePlan) {
    let m = &plan.matrix;
    if r.auto {
        println!(
            "Plan: a closed-loop probe of the peak at {} ({:.0} s), then each context at 10%, 30%, 50%, 70%, 90% and 110% of it and twice near the knee ({} arrivals, seed {})",
            context_label(m.contexts[0]),
            (plan.timing.warmup_hold + plan.timing.duration).as_secs_f64(),
            r.arrival.name(),
            r.seed
        );
        return;
    }
    let cells = m.contexts.len() * r.rates.len();
    let per = if m.repeat > 1 { format!(", each measured {} times", m.repeat) } else { String::new() };
    println!("Plan: {cells} rate cells ({} arrivals, seed {}){per}", r.arrival.name(), r.seed);
    let span = (plan.timing.warmup_hold + plan.timing.duration).as_secs_f64();
    for ctx in &m.contexts {
        for rate in &r.rates {
            println!(
                "  run            {} at {rate} requests/s: about {:.0} requests",
                context_label(*ctx),
                rate * span
            );
        }
    }
    let secs = (cells * m.repeat as usize) as f64 * span;
    println!("{} open loops: about {:.0} minutes and their drains.", cells * m.repeat as usize, secs / 60.0);
}

/// `--trace --dry-run`: the slice, what the replay changes, and how long it takes.
pub(super) fn print_trace_plan(plan: &BenchPlan, t: &super::bench_plan::TracePlan, r: &super::replay::Replay) {
    let c = r.counts;
    println!(
        "Plan: replay {} ({}) from {} s, {} requests over {:.0} s at {}x ({:.2} requests/s), {} time{}",
        t.file,
        r.format.name(),
        t.settings.start_s,
        r.requests.len(),
        r.span_s,
        t.settings.speedup,
        r.offered_rps(),
        plan.matrix.repeat,
        if plan.matrix.repeat == 1 { "" } else { "s" }
    );
    let input: u64 = r.requests.iter().map(|q| q.input_tokens).sum();
    let output: u64 = r.requests.iter().map(|q| q.output_tokens).sum();
    println!(
        "  {input} input and {output} output tokens; blocks of {} tokens, {:.1}% of the input a prefix cache could serve",
        r.block_tokens,
        r.planned_reuse_pct()
    );
    println!(
        "  of {} requests in the slice: {} scaled, {} capped, {} dropped (past the server's length)",
        c.in_slice, c.scaled, c.capped, c.dropped
    );
}

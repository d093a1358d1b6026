//! Progress on a terminal (a live bar: cells done / total, current cell, live tok/s, ETA)
//! or plain log lines when stderr is not a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

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
            Some(b) => b.println(text),
            None => eprintln!("{text}"),
        }
    }

    pub fn current(&self, text: &str) {
        if let Some(b) = &self.bar {
            b.set_message(text.to_string());
        }
    }

    pub fn cell_done(&mut self, text: &str) {
        self.done += 1;
        let line = format!("[{}/{}] {text}", self.done, self.total);
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

//! The verdict procedure's own error rates, measured: figures drawn from a two-level noise
//! model (a run's level, shared by its cells, plus a part of its own per cell; repetitions
//! inside a run) go through the code a comparison runs (a configuration's history: run
//! levels, outliers, change points, the pooled and moderated noise; then each cell's change
//! and the Benjamini-Hochberg verdicts), 1,000 comparisons a row from a fixed seed.
//!
//! A false alarm is an A/A comparison with any cell called faster or slower; its rate's 95%
//! upper bound (Clopper-Pearson) must be at most 5% in every row. A detection is a
//! comparison of a 10% slowdown with a cell called slower and none faster. Run with
//! `cargo test --test verdict_rates -- --nocapture` for the table (it is in the README and
//! `docs/src/reference/statistics.md`).

use speed_matrix::analysis::interval::{mean_estimate, Basis};
use speed_matrix::analysis::metric::Metric;
use speed_matrix::analysis::run_history::{offsets, split};
use speed_matrix::analysis::run_noise::{cell_noise, moderated, outlier_floor, pool_levels, Pool};
use speed_matrix::analysis::verdict::{change, judge_all, Between, Change, Verdict};
use statrs::distribution::{Beta, ContinuousCDF};

const COMPARISONS: usize = 1_000;
const CELLS: usize = 8;
const REPEAT: usize = 3;
const ASSUMED_PCT: f64 = 5.0;
const THRESHOLD_PCT: f64 = 5.0;

/// One machine's noise: standard deviations on the log scale.
#[derive(Clone, Copy)]
struct Noise {
    name: &'static str,
    /// A run's level, the same in all its cells (a server process, an hour).
    run: f64,
    /// A run's level in one cell beyond the shared part.
    run_cell: f64,
    /// One repetition against its run's level.
    within: f64,
}

/// The simulated engine as the tests drive it (`--level-pct 2`: a process's level uniform
/// within ±2%, a standard deviation of 1.15%; per-step jitter averages out over a window to
/// about 0.3% between repetitions) and the real llama.cpp server of
/// `tests/fixtures/aa-restart` (repetitions within about 1%, a restarted run about 6% from
/// the first in a cell: 3% shared by the run's cells and 2.5% of the cell's own).
const MODELS: [Noise; 2] = [
    Noise { name: "simulator", run: 0.0115, run_cell: 0.0, within: 0.003 },
    Noise { name: "real llama.cpp", run: 0.03, run_cell: 0.025, within: 0.01 },
];

/// What the two runs compared have behind them.
#[derive(Clone, Copy)]
enum History {
    /// A and B measured in one session by one process: no level between them, no history.
    OneSession,
    /// `n` earlier runs of the configuration, each its own process.
    Runs(usize),
    /// `n` earlier runs, one of them 30% slower (an incident).
    Incident(usize),
    /// A and B measured once each (`--repeat 1`), no history.
    Single,
}

impl History {
    fn name(self) -> String {
        match self {
            History::OneSession => "one session, no history".into(),
            History::Runs(n) => format!("{n} runs of history"),
            History::Incident(n) => format!("{n} runs of history, one 30% slower"),
            History::Single => "two single runs".into(),
        }
    }
}

struct Draw(fastrand::Rng);

impl Draw {
    fn normal(&mut self) -> f64 {
        // Box-Muller: two uniforms in (0, 1] give one standard normal.
        let (u, v) = (1.0 - self.0.f64(), self.0.f64());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// A run's log levels per cell, at `shift` from the configuration's level.
    fn run_levels(&mut self, noise: Noise, shift: f64) -> Vec<f64> {
        let shared = shift + noise.run * self.normal();
        (0..CELLS).map(|_| shared + noise.run_cell * self.normal()).collect()
    }

    /// `reps` repetitions of each cell around `levels` (figures, not logs; cell c at 100 x c).
    fn repetitions(&mut self, noise: Noise, levels: &[f64], reps: usize) -> Vec<Vec<f64>> {
        levels
            .iter()
            .enumerate()
            .map(|(c, l)| {
                (0..reps).map(|_| 100.0 * (c + 1) as f64 * (l + noise.within * self.normal()).exp()).collect()
            })
            .collect()
    }
}

/// The run-to-run noise the site would allow for from `history` (runs x cells x repetitions),
/// as `analysis::run_noise` makes it: each run's level, outliers left out, the rest split at
/// change points, the segments' evidence pooled (a run's cell far from the others' left
/// out) and moderated by the assumed noise; each cell's own evidence beside it.
fn noise_of(history: &[Vec<Vec<f64>>]) -> ((f64, f64), Vec<Pool>) {
    let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
    let cells: Vec<Vec<(usize, f64)>> =
        (0..CELLS).map(|c| history.iter().enumerate().map(|(r, run)| (r, mean(&run[c]).ln())).collect()).collect();
    let order: Vec<usize> = (0..history.len()).collect();
    let (segments, _) =
        split(&order, &offsets(cells.iter().map(Vec::as_slice), history.len()), outlier_floor(ASSUMED_PCT));
    let mut pool = Pool::default();
    let mut cell_pools = vec![Pool::default(); CELLS];
    for segment in segments.iter().filter(|s| s.len() >= 2) {
        let levels: Vec<Vec<(f64, f64)>> = (0..CELLS)
            .map(|c| {
                segment
                    .iter()
                    .map(|&r| {
                        let l = logs(&history[r][c]);
                        let m = mean(&l);
                        let var = l.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (l.len() as f64 - 1.0);
                        (m, var / l.len() as f64)
                    })
                    .collect()
            })
            .collect();
        let slices: Vec<&[(f64, f64)]> = levels.iter().map(Vec::as_slice).collect();
        pool = pool.add(pool_levels(&slices, outlier_floor(ASSUMED_PCT)), 1.0);
        for (c, cell) in cell_pools.iter_mut().enumerate() {
            *cell = cell.add(pool_levels(&[&levels[c]], outlier_floor(ASSUMED_PCT)), 1.0);
        }
    }
    let f = moderated(Metric::TotalTps, pool, ASSUMED_PCT);
    ((f.var_log, f.df), cell_pools)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// One comparison's verdicts, B at `b_shift` (log) from A.
fn compare(draw: &mut Draw, noise: Noise, history: History, b_shift: f64) -> Vec<Verdict> {
    let reps = if matches!(history, History::Single) { 1 } else { REPEAT };
    let earlier: Vec<Vec<Vec<f64>>> = match history {
        History::Runs(n) | History::Incident(n) => (0..n)
            .map(|i| {
                let shift = if matches!(history, History::Incident(_)) && i == n / 2 { (0.7f64).ln() } else { 0.0 };
                let levels = draw.run_levels(noise, shift);
                draw.repetitions(noise, &levels, REPEAT)
            })
            .collect(),
        _ => Vec::new(),
    };
    let a_levels = draw.run_levels(noise, 0.0);
    let b_levels = match history {
        History::OneSession => a_levels.iter().map(|l| l + b_shift).collect(),
        _ => draw.run_levels(noise, b_shift),
    };
    let (a, b) = (draw.repetitions(noise, &a_levels, reps), draw.repetitions(noise, &b_levels, reps));
    // No history: the assumed noise, as the site allows for it.
    let (figure, cells) = noise_of(&earlier);
    let mut changes: Vec<Change> = (0..CELLS)
        .filter_map(|c| {
            let (ea, eb) = (mean_estimate(&a[c], Basis::Repetitions)?, mean_estimate(&b[c], Basis::Repetitions)?);
            let (var_log, df) = cell_noise(figure, cells[c]);
            change(&ea, &eb, true, THRESHOLD_PCT, Between::Runs { var_log, df })
        })
        .collect();
    let mut refs: Vec<&mut Change> = changes.iter_mut().collect();
    judge_all(&mut refs);
    changes.iter().map(|c| c.verdict).collect()
}

/// The 95% Clopper-Pearson interval of `x` in `n`.
fn clopper_pearson(x: usize, n: usize) -> (f64, f64) {
    let lo = if x == 0 { 0.0 } else { Beta::new(x as f64, (n - x + 1) as f64).unwrap().inverse_cdf(0.025) };
    let hi = if x == n { 1.0 } else { Beta::new((x + 1) as f64, (n - x) as f64).unwrap().inverse_cdf(0.975) };
    (lo, hi)
}

struct Row {
    noise: &'static str,
    history: String,
    false_alarms: usize,
    detections: usize,
    cells_called: f64,
    judged: bool,
}

fn row(noise: Noise, history: History, seed: u64) -> Row {
    let mut draw = Draw(fastrand::Rng::with_seed(seed));
    let called = |v: &[Verdict]| v.iter().any(|v| matches!(v, Verdict::Faster | Verdict::Slower));
    let mut row = Row {
        noise: noise.name,
        history: history.name(),
        false_alarms: 0,
        detections: 0,
        cells_called: 0.0,
        judged: false,
    };
    for _ in 0..COMPARISONS {
        let aa = compare(&mut draw, noise, history, 0.0);
        row.judged |= aa.iter().any(|v| v.judged());
        row.false_alarms += usize::from(called(&aa));
        let slower = compare(&mut draw, noise, history, (0.9f64).ln());
        let n_slower = slower.iter().filter(|v| **v == Verdict::Slower).count();
        row.detections += usize::from(n_slower > 0 && !slower.contains(&Verdict::Faster));
        row.cells_called += n_slower as f64 / CELLS as f64 / COMPARISONS as f64;
    }
    row
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

#[test]
fn false_alarms_stay_under_five_percent_and_a_ten_percent_slowdown_is_found() {
    let histories = [
        History::OneSession,
        History::Runs(2),
        History::Runs(5),
        History::Runs(10),
        History::Incident(5),
        History::Single,
    ];
    let mut rows = Vec::new();
    for (m, noise) in MODELS.iter().enumerate() {
        for (h, history) in histories.iter().enumerate() {
            rows.push(row(*noise, *history, 0x5eed_0000 + (m * 16 + h) as u64));
        }
    }
    println!("| noise | history | A/A called (95% interval) | 10% slower found (95% interval) | cells called slower |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        let (flo, fhi) = clopper_pearson(r.false_alarms, COMPARISONS);
        let (dlo, dhi) = clopper_pearson(r.detections, COMPARISONS);
        println!(
            "| {} | {} | {} ({} to {}) | {} ({} to {}) | {} |",
            r.noise,
            r.history,
            pct(r.false_alarms as f64 / COMPARISONS as f64),
            pct(flo),
            pct(fhi),
            pct(r.detections as f64 / COMPARISONS as f64),
            pct(dlo),
            pct(dhi),
            pct(r.cells_called)
        );
    }
    for r in &rows {
        let (_, upper) = clopper_pearson(r.false_alarms, COMPARISONS);
        assert!(upper <= 0.05, "{} / {}: A/A called in {} of {COMPARISONS}", r.noise, r.history, r.false_alarms);
    }
    // A configuration's own runs make changes callable: the more, the more often (on the
    // simulator's noise, where a 10% change is 6 standard deviations of two runs' levels).
    let found = |noise: &str, history: History| {
        rows.iter().find(|r| r.noise == noise && r.history == history.name()).map_or(0, |r| r.detections)
    };
    let sim = MODELS[0].name;
    assert!(found(sim, History::Runs(2)) < found(sim, History::Runs(5)));
    assert!(found(sim, History::Runs(5)) < found(sim, History::Runs(10)));
    // Five runs of history at `--repeat 3` find a 10% slowdown nine times in ten at least.
    assert!(clopper_pearson(found(sim, History::Runs(5)), COMPARISONS).0 >= 0.9, "{}", found(sim, History::Runs(5)));
    // Single measurements are shown, never judged.
    for r in rows.iter().filter(|r| r.history == History::Single.name()) {
        assert!(!r.judged && r.false_alarms == 0 && r.detections == 0, "{}", r.history);
    }
}

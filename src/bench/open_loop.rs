//! The open loop of a request-rate cell: request i is sent at its scheduled instant whether
//! or not the requests before it have ended (a closed loop waits, and so hides the queue a
//! real user meets). The window counts the requests *scheduled* inside it and follows each
//! to its end, or to the drain timeout, after which it is a failed request: none is dropped,
//! so the figures carry no survivor bias. Every request keeps its scheduled and its actual
//! send instant; the difference is the client's own lag.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

/// How a rate cell runs: a warm-up at the rate (not counted), the window, the drain.
#[derive(Debug, Clone, Copy)]
pub struct OpenLoopSettings {
    pub warmup: Duration,
    pub window: Duration,
    /// How long the window's requests may take to end after the window closes.
    pub drain_timeout: Duration,
    /// Most requests in flight at once: past it the client cannot keep the schedule (each
    /// request holds a connection), and the request is not sent but counted as such.
    pub max_in_flight: usize,
}

/// What became of one scheduled request.
#[derive(Debug, Clone, PartialEq)]
pub enum Fate<R> {
    /// Sent; `R` is what the request measured.
    Ended(R),
    /// Sent, still running at the drain timeout: a failed request.
    DrainTimeout,
    /// Not sent: `max_in_flight` requests were already in flight.
    NotSent,
    /// Not sent: held for the request it follows, which had not ended when the cell did.
    Held,
}

/// One scheduled request: seconds from the loop's start.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled<R> {
    pub scheduled_s: f64,
    /// When it was sent (absent: not sent).
    pub sent_s: Option<f64>,
    /// A held request's due instant (the end of the request it follows), where that was
    /// after its scheduled one.
    pub due_s: Option<f64>,
    /// Whether its scheduled instant is inside the window (warm-up requests are not).
    pub in_window: bool,
    pub fate: Fate<R>,
}

/// Runs the open loop over `schedule` (seconds from the start, ascending, warm-up first):
/// `send(i)` is made ready before instant i and spawned at it, until `cancel` turns true
/// (Ctrl-C: nothing more is sent, what is in flight is stopped). `after[i]`, where given, is
/// the request i follows: i waits for its end before going out. Returns every request in
/// schedule order.
pub async fn run<R, F, Fut>(
    schedule: &[f64],
    after: &[Option<usize>],
    settings: OpenLoopSettings,
    mut cancel: tokio::sync::watch::Receiver<bool>,
    send: F,
) -> Vec<Scheduled<R>>
where
    R: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = R> + Send + 'static,
{
    let start = Instant::now();
    let window = (settings.warmup.as_secs_f64(), (settings.warmup + settings.window).as_secs_f64());
    let mut out: Vec<Scheduled<R>> = schedule
        .iter()
        .map(|&t| Scheduled {
            scheduled_s: t,
            sent_s: None,
            due_s: None,
            in_window: t >= window.0 && t < window.1,
            fate: Fate::NotSent,
        })
        .collect();
    // Each request's end, for the requests that follow it; a held request's send and due
    // instants, which only its task knows.
    let ended: Vec<Arc<tokio::sync::watch::Sender<bool>>> =
        schedule.iter().map(|_| Arc::new(tokio::sync::watch::channel(false).0)).collect();
    let held: Arc<Mutex<Vec<(Option<f64>, Option<f64>)>>> = Arc::new(Mutex::new(vec![(None, None); schedule.len()]));
    let mut tasks: JoinSet<(usize, R)> = JoinSet::new();
    let mut spawned = vec![false; schedule.len()];
    let mut cancelled = false;
    for (i, &t) in schedule.iter().enumerate() {
        // Made before its instant (a prompt of many thousand tokens takes a while), sent at it.
        let request = send(i);
        tokio::select! {
            _ = tokio::time::sleep_until(start + Duration::from_secs_f64(t.max(0.0))) => {}
            Ok(_) = cancel.wait_for(|c| *c) => cancelled = true,
        }
        if cancelled {
            break;
        }
        // Requests that ended while this one waited free their places first.
        while let Some(Ok((j, r))) = tasks.try_join_next() {
            out[j].fate = Fate::Ended(r);
        }
        if tasks.len() >= settings.max_in_flight {
            // Never sent: what follows it need not wait.
            ended[i].send_replace(true);
            continue;
        }
        let done = ended[i].clone();
        spawned[i] = true;
        match after.get(i).copied().flatten().filter(|&p| p < i).map(|p| ended[p].subscribe()) {
            None => {
                out[i].sent_s = Some(start.elapsed().as_secs_f64());
                tasks.spawn(async move {
                    let r = request.await;
                    done.send_replace(true);
                    (i, r)
                });
            }
            Some(mut parent) => {
                let held = held.clone();
                tasks.spawn(async move {
                    let waited = !*parent.borrow();
                    let _ = parent.wait_for(|e| *e).await;
                    let now = start.elapsed().as_secs_f64();
                    held.lock().expect("a held request's instants")[i] =
                        (Some(now), waited.then_some(now).filter(|d| *d > t));
                    let r = request.await;
                    done.send_replace(true);
                    (i, r)
                });
            }
        }
    }
    let deadline =
        if cancelled { Instant::now() } else { start + settings.warmup + settings.window + settings.drain_timeout };
    loop {
        match tokio::time::timeout_at(deadline, tasks.join_next()).await {
            Ok(Some(Ok((j, r)))) => out[j].fate = Fate::Ended(r),
            Ok(Some(Err(_))) => {}
            Ok(None) => break,
            Err(_) => {
                tasks.abort_all();
                break;
            }
        }
    }
    let held = held.lock().expect("a held request's instants");
    for (i, s) in out.iter_mut().enumerate().filter(|(i, _)| spawned[*i]) {
        if after.get(i).copied().flatten().is_some_and(|p| p < i) {
            (s.sent_s, s.due_s) = held[i];
        }
        if matches!(s.fate, Fate::NotSent) {
            s.fate = if s.sent_s.is_some() { Fate::DrainTimeout } else { Fate::Held };
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(max_in_flight: usize) -> OpenLoopSettings {
        OpenLoopSettings {
            warmup: Duration::from_secs(1),
            window: Duration::from_secs(4),
            drain_timeout: Duration::from_secs(2),
            max_in_flight,
        }
    }

    /// A cancel that never comes (its sender kept alive for the test's length).
    fn never() -> tokio::sync::watch::Receiver<bool> {
        let (tx, rx) = tokio::sync::watch::channel(false);
        std::mem::forget(tx);
        rx
    }

    /// A request that takes `s` seconds and says when it ended.
    fn taking(s: f64) -> impl Fn(usize) -> std::pin::Pin<Box<dyn Future<Output = f64> + Send>> {
        move |_| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_secs_f64(s)).await;
                s
            })
        }
    }

    impl<R> Fate<R> {
        fn ended(&self) -> bool {
            matches!(self, Fate::Ended(_))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn requests_are_sent_on_schedule_however_slow_the_server_is() {
        // Every 0.5 s for 6 s, each request taking 2.9 s: a closed loop of one would send two.
        let schedule: Vec<f64> = (0..12).map(|i| i as f64 * 0.5).collect();
        let out = run(&schedule, &[], settings(100), never(), taking(2.9)).await;
        for s in &out {
            let lag = s.sent_s.unwrap() - s.scheduled_s;
            assert!(lag.abs() < 1e-3, "sent {lag} s late");
        }
        // The window [1, 5) holds the requests scheduled at 1.0 to 4.5; warm-up and later not.
        assert_eq!(out.iter().filter(|s| s.in_window).count(), 8);
        // Those scheduled up to 4.0 end by 7 s (window end 5 + drain 2); later ones time out.
        let timed_out: Vec<f64> = out.iter().filter(|s| s.fate == Fate::DrainTimeout).map(|s| s.scheduled_s).collect();
        assert_eq!(timed_out, vec![4.5, 5.0, 5.5]);
        assert!(out.iter().filter(|s| s.scheduled_s <= 4.0).all(|s| s.fate.ended()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_that_follows_another_waits_for_its_end_and_its_lag_counts_from_then() {
        // Requests at 0, 0.5 and 1.0 s, each taking 0.9 s; the second follows the first
        // (due at 0.9, after its 0.5), the third follows the second (due at 1.8).
        let schedule = [0.0, 0.5, 1.0];
        let out = run(&schedule, &[None, Some(0), Some(1)], settings(100), never(), taking(0.9)).await;
        let sent: Vec<f64> = out.iter().map(|s| s.sent_s.unwrap()).collect();
        assert!(
            (sent[0] - 0.0).abs() < 1e-3 && (sent[1] - 0.9).abs() < 1e-3 && (sent[2] - 1.8).abs() < 1e-3,
            "{sent:?}"
        );
        assert_eq!(out[0].due_s, None);
        assert!((out[1].due_s.unwrap() - 0.9).abs() < 1e-3 && (out[2].due_s.unwrap() - 1.8).abs() < 1e-3);
        assert!(out.iter().all(|s| s.fate.ended()));
        // A parent still running when the cell ends keeps its follower unsent, and says so.
        let out = run(&[0.0, 0.1], &[None, Some(0)], settings(100), never(), taking(30.0)).await;
        assert_eq!((out[0].fate == Fate::DrainTimeout, out[1].fate == Fate::Held), (true, true));
        assert_eq!(out[1].sent_s, None);
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_in_flight_bound_a_request_is_not_sent_and_says_so() {
        let schedule: Vec<f64> = (0..6).map(|i| i as f64 * 0.25).collect();
        let out = run(&schedule, &[], settings(2), never(), taking(0.9)).await;
        let fates: Vec<bool> = out.iter().map(|s| s.fate == Fate::NotSent).collect();
        // At 0 and 0.25 two go out; 0.5 and 0.75 find two in flight; by 1.0 the first has
        // ended (0.9), by 1.25 the second (1.15).
        assert_eq!(fates, vec![false, false, true, true, false, false]);
        assert!(out.iter().filter(|s| s.fate == Fate::NotSent).all(|s| s.sent_s.is_none()));
    }
}

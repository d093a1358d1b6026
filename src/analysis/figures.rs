//! The figures of one cell, computed from raw records exactly as the methodology page (`site-templates/glossary.html`) defines
//! them, or taken as reported. This is the only place a figure is computed.

use serde::Serialize;

use crate::format::{Measurement, Phase, ReportedFigures, RequestRecord, TelemetrySample, TokenSource, Window};
use crate::stats::{mean, median, percentile};

/// What the site prints for a cell. `None` prints as a dash.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Prefill: prompt tokens / TTFT of the sample request.
    pub prompt_tps: Option<f64>,
    /// Output tokens inside the window / measured seconds.
    pub total_tps: Option<f64>,
    /// Median over requests of 1 / time between tokens.
    pub per_request_tps: Option<f64>,
    /// Median over requests of the first token of any kind (a reasoning token included) -
    /// send, as guidellm and AIPerf's `time_to_first_token` count it.
    pub ttft_ms: Option<f64>,
    pub ttft_p90_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    /// Median over requests of the first answer token (the first content after the
    /// reasoning) - send, AIPerf's `time_to_first_output_token`; only for a cell whose streams
    /// reasoned first (otherwise it is the TTFT).
    pub answer_ttft_ms: Option<f64>,
    pub answer_ttft_p90_ms: Option<f64>,
    /// Output tokens per streamed chunk (tokens from the server's usage): above 1 where the
    /// server sends several tokens a step (speculative decoding, MTP).
    pub tokens_per_chunk: Option<f64>,
    /// Speculative decoding, from the server's counters over the window: accepted / proposed
    /// draft tokens, and 1 + accepted / drafts (tokens each verifying step yields, vLLM's
    /// "mean acceptance length").
    pub spec_acceptance: Option<f64>,
    pub spec_accepted_len: Option<f64>,
    /// The share of prompt tokens the server served from its prefix cache, in percent (the
    /// requests' usage, else the server's counters): what a `--prefix-reuse` plan is
    /// checked against.
    pub cached_prompt_pct: Option<f64>,
    /// Conversations (`--turns`): the median TTFT of the turns after the first, whose
    /// prompts carry the earlier turns and answers.
    pub next_turn_ttft_ms: Option<f64>,
    /// Conversations: the share of the later turns' prompt tokens served from the cache.
    pub next_turn_cached_pct: Option<f64>,
    /// Median over requests of (last token - first token) / (tokens - 1).
    pub tbt_ms: Option<f64>,
    pub tbt_p90_ms: Option<f64>,
    pub tbt_p99_ms: Option<f64>,
    /// Mean of the running-requests gauge inside the window.
    pub avg_active: Option<f64>,
    /// What the concurrency check judges where the server's gauge reports its queue: the
    /// client's requests in flight (time-averaged over the window) less the mean the server
    /// reports waiting. The running gauge alone lags: vLLM sets it when a step ends, so a
    /// request whose prefill step is under way is in neither gauge (a 512-token prefill step
    /// takes 0.3 s on a CPU: one stream read 0.8).
    #[serde(skip)]
    pub held_active: Option<f64>,
    /// Our output tokens of the window over the server counter's own span (its reads'
    /// instants): the figure its counter is compared with, like with like.
    #[serde(skip)]
    pub tps_over_counter_span: Option<f64>,
    pub completed: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Window start to the last token inside the window.
    pub measured_s: Option<f64>,
    /// The server's own output tok/s over the window: its generated-tokens counter's growth
    /// between reads at the window's edges, over the time between the reads.
    pub server_total_tps: Option<f64>,
    /// Median over requests finished in the cell of the server's own decode rate (llama.cpp
    /// reports one per request when it ends).
    pub server_per_request_tps: Option<f64>,
    /// Median of our per-request rate over those same finished requests.
    pub finished_per_request_tps: Option<f64>,
    /// Cores the load generator used inside the window: its CPU seconds / window seconds.
    pub client_cpu_cores: Option<f64>,
    /// Device power inside the window, all devices together: the mean and the highest of
    /// the per-sample sums.
    pub avg_power_w: Option<f64>,
    pub peak_power_w: Option<f64>,
    /// Average power / total tok/s: energy per output token.
    pub joules_per_token: Option<f64>,
}

/// Where our figure and the server's own were set side by side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CrossCheckBasis {
    /// Total tok/s over the window against the server's token counter.
    WindowCounter,
    /// Per-request tok/s of finished requests against the server's per-request timings.
    FinishedRequests,
}

/// Our figure against the server's own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CrossCheck {
    pub basis: CrossCheckBasis,
    pub ours: f64,
    pub server: f64,
    /// (ours - server) / server x 100.
    pub gap_pct: f64,
}

/// One figure's value, as downloads print it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FigureValue {
    Rate(f64),
    Count(u64),
}

impl Figures {
    /// Every figure with its column name, in column order. Downloads take their figure
    /// columns from here, so a new figure needs no change there.
    pub fn columns(&self) -> [(&'static str, Option<FigureValue>); 27] {
        let r = |v: Option<f64>| v.map(FigureValue::Rate);
        let n = |v: Option<u64>| v.map(FigureValue::Count);
        [
            ("prompt_tps", r(self.prompt_tps)),
            ("total_tps", r(self.total_tps)),
            ("per_request_tps", r(self.per_request_tps)),
            ("ttft_ms", r(self.ttft_ms)),
            ("ttft_p90_ms", r(self.ttft_p90_ms)),
            ("ttft_p99_ms", r(self.ttft_p99_ms)),
            ("answer_ttft_ms", r(self.answer_ttft_ms)),
            ("answer_ttft_p90_ms", r(self.answer_ttft_p90_ms)),
            ("tokens_per_chunk", r(self.tokens_per_chunk)),
            ("spec_acceptance", r(self.spec_acceptance)),
            ("spec_accepted_len", r(self.spec_accepted_len)),
            ("cached_prompt_pct", r(self.cached_prompt_pct)),
            ("next_turn_ttft_ms", r(self.next_turn_ttft_ms)),
            ("next_turn_cached_pct", r(self.next_turn_cached_pct)),
            ("tbt_ms", r(self.tbt_ms)),
            ("tbt_p90_ms", r(self.tbt_p90_ms)),
            ("tbt_p99_ms", r(self.tbt_p99_ms)),
            ("avg_active", r(self.avg_active)),
            ("completed", n(self.completed)),
            ("output_tokens", n(self.output_tokens)),
            ("measured_s", r(self.measured_s)),
            ("server_total_tps", r(self.server_total_tps)),
            ("server_per_request_tps", r(self.server_per_request_tps)),
            ("client_cpu_cores", r(self.client_cpu_cores)),
            ("avg_power_w", r(self.avg_power_w)),
            ("peak_power_w", r(self.peak_power_w)),
            ("joules_per_token", r(self.joules_per_token)),
        ]
    }

    /// Figures as reported; percentiles the source did not print are taken from its
    /// per-request samples where it kept them.
    pub fn from_reported(r: &ReportedFigures) -> Figures {
        let ttfts: Vec<f64> = r.samples.iter().filter_map(|s| s.ttft_s).map(ms).collect();
        let tbts: Vec<f64> = r.samples.iter().filter_map(|s| s.tbt_s).map(ms).collect();
        Figures {
            prompt_tps: r.prompt_tps,
            total_tps: r.total_tps,
            per_request_tps: r.per_request_tps,
            ttft_ms: r.ttft_ms,
            ttft_p90_ms: r.ttft_p90_ms.or_else(|| supported_percentile(&ttfts, 90.0)),
            ttft_p99_ms: r.ttft_p99_ms.or_else(|| supported_percentile(&ttfts, 99.0)),
            answer_ttft_ms: r.answer_ttft_ms,
            tbt_ms: r.tbt_ms,
            tbt_p90_ms: r.tbt_p90_ms.or_else(|| supported_percentile(&tbts, 90.0)),
            tbt_p99_ms: r.tbt_p99_ms.or_else(|| supported_percentile(&tbts, 99.0)),
            avg_active: r.avg_active,
            completed: r.completed,
            output_tokens: r.output_tokens,
            measured_s: r.measured_s,
            ..Figures::default()
        }
    }

    /// Figures of a measured cell. `prompt_tokens` is the cell's confirmed prompt size.
    pub fn from_measurement(phase: Phase, prompt_tokens: Option<u32>, m: &Measurement) -> Figures {
        match phase {
            Phase::Prefill => prefill_figures(prompt_tokens, &m.requests),
            Phase::Decode => decode_figures(m),
        }
    }

    /// Our figure against the server's own count, where the server keeps one: the window's
    /// total against its token counter, else finished requests against their timings.
    pub fn cross_check(&self) -> Option<CrossCheck> {
        // Our tokens over the counter's span where known (our total tok/s ends at the last
        // token, the counter's reads at the window's edges: a cell of few tokens read 7%
        // apart on the same count).
        let ours = self.tps_over_counter_span.or(self.total_tps);
        let (basis, ours, server) = match (ours, self.server_total_tps) {
            (Some(o), Some(s)) => (CrossCheckBasis::WindowCounter, o, s),
            _ => (CrossCheckBasis::FinishedRequests, self.finished_per_request_tps?, self.server_per_request_tps?),
        };
        (server > 0.0).then(|| CrossCheck { basis, ours, server, gap_pct: (ours - server) / server * 100.0 })
    }

    /// A looped cell's figures are discarded; only the counts stay, as the seeds print them.
    pub fn discarded(&self) -> Figures {
        Figures { completed: self.completed, output_tokens: self.output_tokens, ..Figures::default() }
    }
}

/// First token - send, where the request had a first token.
pub fn ttft_s(r: &RequestRecord) -> Option<f64> {
    r.first_token_s.map(|f| f - r.send_s).filter(|t| *t >= 0.0)
}

/// First answer token - send: the first token of a stream that did not reason first, the
/// first content after the reasoning of one that did; none for a stream that reasoned and
/// never answered.
pub fn answer_ttft_s(r: &RequestRecord) -> Option<f64> {
    match r.reasoned() {
        true => r.first_answer_s.map(|f| f - r.send_s).filter(|t| *t >= 0.0),
        false => ttft_s(r),
    }
}

/// Answer TTFTs of the requests, where any of them reasoned first (else none: the answer's
/// first token is the first token, and the TTFT says it).
fn answer_ttfts(requests: &[RequestRecord]) -> Option<Vec<f64>> {
    requests.iter().any(RequestRecord::reasoned).then(|| requests.iter().filter_map(answer_ttft_s).collect())
}

/// Output tokens and the chunks that carried them, of the requests whose tokens the
/// server's usage counted (one token a chunk is an assumption, not a measurement).
pub fn usage_tokens_chunks(requests: &[RequestRecord]) -> (u64, u64) {
    requests
        .iter()
        .filter(|r| r.token_source != TokenSource::Chunks && r.chunks > 0)
        .fold((0, 0), |(t, c): (u64, u64), r| (t.saturating_add(r.tokens), c.saturating_add(r.chunks)))
}

/// Accepted / proposed draft tokens: the server's counters over the window, else its
/// gauge of its most recent batches (SGLang).
fn spec_acceptance(m: &Measurement) -> Option<f64> {
    match &m.spec_decode {
        Some(s) => (s.draft_tokens > 0.0).then(|| s.accepted_tokens / s.draft_tokens),
        None => m.spec_decode_gauges.as_ref().and_then(|g| g.accept_rate),
    }
}

/// 1 + accepted / drafts: the counters over the window, else SGLang's gauge.
fn spec_accepted_len(m: &Measurement) -> Option<f64> {
    match &m.spec_decode {
        Some(s) => (s.drafts > 0.0).then(|| 1.0 + s.accepted_tokens / s.drafts),
        None => m.spec_decode_gauges.as_ref().and_then(|g| g.accept_length),
    }
}

/// Output tokens per streamed chunk, where the server's usage counted them.
fn tokens_per_chunk(requests: &[RequestRecord]) -> Option<f64> {
    let (tokens, chunks) = usage_tokens_chunks(requests);
    (chunks > 0).then(|| tokens as f64 / chunks as f64)
}

/// (last token - first token) / (tokens - 1); needs at least two tokens.
pub fn time_between_tokens_s(r: &RequestRecord) -> Option<f64> {
    match (r.first_token_s, r.last_token_s) {
        (Some(f), Some(l)) if r.tokens >= 2 && l > f => Some((l - f) / (r.tokens - 1) as f64),
        _ => None,
    }
}

/// Prompt tok/s of each prefill sample that succeeded: its prompt tokens (its own usage,
/// else the cell's) over its TTFT.
pub fn prefill_rates(prompt_tokens: Option<u32>, requests: &[RequestRecord]) -> Vec<f64> {
    requests
        .iter()
        .filter(|r| r.error.is_none())
        .filter_map(|r| {
            let tokens = r.prompt_tokens.or(prompt_tokens)? as f64;
            ttft_s(r).filter(|t| *t > 0.0).map(|t| tokens / t)
        })
        .collect()
}

/// The `p` percentile where n supports it (at least one value beyond it: p90 from 10,
/// p99 from 100); below that the pages print the largest value with its n instead.
pub fn supported_percentile(values: &[f64], p: f64) -> Option<f64> {
    percentile(values, p).filter(|_| crate::stats::percentile_supported(values.len(), p))
}

fn prefill_figures(prompt_tokens: Option<u32>, requests: &[RequestRecord]) -> Figures {
    let ok: Vec<&RequestRecord> = requests.iter().filter(|r| r.error.is_none()).collect();
    let ttfts: Vec<f64> = ok.iter().filter_map(|r| ttft_s(r)).collect();
    let rates = prefill_rates(prompt_tokens, requests);
    Figures {
        prompt_tps: median(&rates),
        ttft_ms: median(&ttfts).map(ms),
        ttft_p90_ms: supported_percentile(&ttfts, 90.0).map(ms),
        ttft_p99_ms: supported_percentile(&ttfts, 99.0).map(ms),
        // A prefill sample's one token is the first of any kind: prefill ends there.
        completed: Some(ok.iter().filter(|r| r.first_token_s.is_some()).count() as u64),
        ..Figures::default()
    }
}

fn decode_figures(m: &Measurement) -> Figures {
    let Some(w) = m.window else {
        return Figures::default();
    };
    let requests = &m.requests;
    let output_tokens: u64 = requests.iter().fold(0u64, |sum, r| sum.saturating_add(r.window_tokens));
    let last_in_window = requests
        .iter()
        .filter(|r| r.window_tokens > 0)
        .filter_map(|r| r.window_last_token_s)
        .fold(None, |acc: Option<f64>, t| Some(acc.map_or(t, |a| a.max(t))));
    let measured_s = last_in_window.map(|t| t - w.start_s).filter(|s| *s > 0.0);
    let total_tps = measured_s.map(|s| output_tokens as f64 / s);

    let ttfts: Vec<f64> = requests.iter().filter_map(ttft_s).collect();
    let answers = answer_ttfts(requests);
    let tbts: Vec<f64> = requests.iter().filter_map(time_between_tokens_s).collect();
    let rates: Vec<f64> = tbts.iter().map(|t| 1.0 / t).collect();
    let finished = finished_rates(requests);
    let power = power_per_moment(&m.telemetry);
    let avg_power_w = power.as_deref().and_then(mean);
    let completed = requests
        .iter()
        .filter(|r| r.error.is_none() && r.finish_reason.is_some())
        .filter(|r| r.end_s.is_some_and(|e| e >= w.start_s && e <= w.end_s))
        .count() as u64;

    Figures {
        prompt_tps: None,
        total_tps,
        per_request_tps: median(&rates),
        ttft_ms: median(&ttfts).map(ms),
        ttft_p90_ms: supported_percentile(&ttfts, 90.0).map(ms),
        ttft_p99_ms: supported_percentile(&ttfts, 99.0).map(ms),
        answer_ttft_ms: answers.as_deref().and_then(median).map(ms),
        answer_ttft_p90_ms: answers.as_deref().and_then(|a| supported_percentile(a, 90.0)).map(ms),
        tokens_per_chunk: tokens_per_chunk(requests),
        spec_acceptance: spec_acceptance(m),
        spec_accepted_len: spec_accepted_len(m),
        cached_prompt_pct: m.cached_prompt_pct(),
        next_turn_ttft_ms: median(&requests.iter().filter(|r| r.turn >= 2).filter_map(ttft_s).collect::<Vec<_>>())
            .map(ms),
        next_turn_cached_pct: m.next_turn_cached_pct(),
        tbt_ms: median(&tbts).map(ms),
        tbt_p90_ms: supported_percentile(&tbts, 90.0).map(ms),
        tbt_p99_ms: supported_percentile(&tbts, 99.0).map(ms),
        avg_active: average_active(m, w),
        held_active: held_active(m, w),
        tps_over_counter_span: m
            .server_tokens
            .as_ref()
            .filter(|s| s.end_s > s.start_s)
            .map(|s| output_tokens as f64 / (s.end_s - s.start_s)),
        completed: Some(completed),
        output_tokens: Some(output_tokens),
        measured_s,
        server_total_tps: m
            .server_tokens
            .as_ref()
            .filter(|s| s.end_s > s.start_s)
            .map(|s| s.tokens / (s.end_s - s.start_s)),
        server_per_request_tps: median(&finished.iter().map(|(_, server)| *server).collect::<Vec<_>>()),
        finished_per_request_tps: median(&finished.iter().map(|(ours, _)| *ours).collect::<Vec<_>>()),
        client_cpu_cores: m.client_cpu_s.filter(|_| w.end_s > w.start_s).map(|c| c / (w.end_s - w.start_s)),
        avg_power_w,
        peak_power_w: power.as_ref().and_then(|p| p.iter().copied().reduce(f64::max)),
        joules_per_token: avg_power_w.zip(total_tps).filter(|(_, t)| *t > 0.0).map(|(w, t)| w / t),
    }
}

/// All devices' power at each sample moment: the telemetry tool lists every device once per
/// sample, so a device index not above the previous one starts the next moment. A moment
/// missing a device's power is left out.
pub fn power_per_moment(samples: &[TelemetrySample]) -> Option<Vec<f64>> {
    let mut moments: Vec<Option<f64>> = Vec::new();
    let mut last_device: Option<u32> = None;
    for s in samples {
        if last_device.is_none_or(|d| s.device <= d) {
            moments.push(Some(0.0));
        }
        last_device = Some(s.device);
        let sum = moments.last_mut().expect("a moment was started");
        *sum = sum.zip(s.power_w).map(|(a, b)| a + b);
    }
    let sums: Vec<f64> = moments.into_iter().flatten().collect();
    (!sums.is_empty()).then_some(sums)
}

/// (our rate, the server's rate) of each request that finished with the server's timings.
fn finished_rates(requests: &[RequestRecord]) -> Vec<(f64, f64)> {
    requests
        .iter()
        .filter(|r| r.error.is_none() && r.finish_reason.is_some())
        .filter_map(|r| Some((1.0 / time_between_tokens_s(r)?, r.server_decode_tps?)))
        .collect()
}

/// Mean of the server's gauge samples inside the window; without a gauge, the client's own
/// in-flight count averaged over the window.
fn average_active(m: &Measurement, w: Window) -> Option<f64> {
    let samples: Vec<f64> =
        m.gauge.iter().filter(|g| g.t_s >= w.start_s && g.t_s <= w.end_s).map(|g| g.running).collect();
    if !samples.is_empty() {
        return mean(&samples);
    }
    client_in_flight(m, w)
}

/// The client's requests in flight through the window less the server's mean waiting
/// (`None` where the gauge reports no queue).
fn held_active(m: &Measurement, w: Window) -> Option<f64> {
    let waiting: Vec<f64> =
        m.gauge.iter().filter(|g| g.t_s >= w.start_s && g.t_s <= w.end_s).filter_map(|g| g.waiting).collect();
    let queued = mean(&waiting)?;
    client_in_flight(m, w).map(|a| (a - queued).max(0.0))
}

/// The client's requests in flight, time-averaged over the window.
fn client_in_flight(m: &Measurement, w: Window) -> Option<f64> {
    let span = w.end_s - w.start_s;
    let busy: f64 =
        m.requests.iter().map(|r| (r.end_s.unwrap_or(w.end_s).min(w.end_s) - r.send_s.max(w.start_s)).max(0.0)).sum();
    (span > 0.0).then(|| busy / span)
}

fn ms(seconds: f64) -> f64 {
    seconds * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{GaugeSample, ServerTokenCount, TokenSource};

    fn request(send: f64, first: f64, last: f64, tokens: u64, window_tokens: u64) -> RequestRecord {
        RequestRecord {
            first_token_s: Some(first),
            last_token_s: Some(last),
            end_s: Some(last),
            tokens,
            chunks: tokens,
            window_tokens,
            window_last_token_s: Some(last.min(40.0)),
            token_source: TokenSource::Usage,
            prompt_tokens: Some(8192),
            ..RequestRecord::sent_at(send)
        }
    }

    #[test]
    fn decode_figures_follow_the_methodology() {
        // Two streams over a 30 s window starting at t = 10: one 0.01 s per token, one 0.02.
        let a = request(0.0, 0.05, 40.0, 4001, 3000);
        let b = request(0.0, 0.10, 39.9, 1991, 1500);
        let m = Measurement {
            gauge: vec![
                GaugeSample { t_s: 5.0, running: 9.0, waiting: None }, // before the window: ignored
                GaugeSample { t_s: 11.0, running: 2.0, waiting: None },
                GaugeSample { t_s: 12.0, running: 1.0, waiting: None },
            ],
            ..Measurement::of_requests(Some(Window { start_s: 10.0, end_s: 40.0 }), vec![a, b])
        };
        let f = Figures::from_measurement(Phase::Decode, Some(8192), &m);
        assert_eq!(f.output_tokens, Some(4500));
        assert!((f.measured_s.unwrap() - 30.0).abs() < 1e-9);
        assert!((f.total_tps.unwrap() - 150.0).abs() < 1e-9);
        // TBT: (40 - 0.05)/4000 = 9.9875 ms and (39.9 - 0.1)/1990 = 20 ms; median 14.99 ms.
        assert!((f.tbt_ms.unwrap() - (9.9875 + 20.0) / 2.0).abs() < 1e-9);
        let rates = (1000.0 / 9.9875 + 1000.0 / 20.0) / 2.0;
        assert!((f.per_request_tps.unwrap() - rates).abs() < 1e-6);
        assert!((f.ttft_ms.unwrap() - 75.0).abs() < 1e-9);
        assert_eq!(f.avg_active, Some(1.5));
        assert_eq!(f.completed, Some(0));
    }

    #[test]
    fn the_server_count_is_set_beside_ours() {
        let a = request(0.0, 0.05, 40.0, 4001, 3000);
        let b = request(0.0, 0.10, 39.9, 1991, 1500);
        let window = Some(Window { start_s: 10.0, end_s: 40.0 });
        let counted = ServerTokenCount {
            counter: "vllm:generation_tokens_total".into(),
            start_s: 9.99,
            end_s: 40.01,
            tokens: 4650.0,
        };
        let m = Measurement {
            server_tokens: Some(counted),
            client_cpu_s: Some(3.0),
            ..Measurement::of_requests(window, vec![a.clone(), b.clone()])
        };
        let f = Figures::from_measurement(Phase::Decode, Some(8192), &m);
        assert!((f.server_total_tps.unwrap() - 4650.0 / 30.02).abs() < 1e-9);
        assert!((f.client_cpu_cores.unwrap() - 0.1).abs() < 1e-12);
        let x = f.cross_check().unwrap();
        assert_eq!(x.basis, CrossCheckBasis::WindowCounter);
        // Our 4,500 window tokens against its 4,650, both over the counter's 30.02 s.
        assert!((x.gap_pct - (4500.0 / 4650.0 - 1.0) * 100.0).abs() < 1e-9);
        // Without a counter: finished requests against the server's own per-request rates.
        let (mut a, mut b) = (a, b);
        a.finish_reason = Some("length".into());
        a.server_decode_tps = Some(100.0);
        b.finish_reason = Some("length".into());
        b.server_decode_tps = Some(49.0);
        let f = Figures::from_measurement(Phase::Decode, Some(8192), &Measurement::of_requests(window, vec![a, b]));
        assert_eq!(f.server_total_tps, None);
        let x = f.cross_check().unwrap();
        assert_eq!(x.basis, CrossCheckBasis::FinishedRequests);
        assert_eq!(x.server, 74.5);
        assert!((x.ours - (1000.0 / 9.9875 + 50.0) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn completed_counts_only_requests_that_finished_inside_the_window() {
        let mut done = request(0.0, 0.1, 20.0, 100, 100);
        done.finish_reason = Some("length".into());
        let mut early = request(0.0, 0.1, 5.0, 50, 0);
        early.finish_reason = Some("length".into());
        let m = Measurement::of_requests(Some(Window { start_s: 10.0, end_s: 40.0 }), vec![done, early]);
        let f = Figures::from_measurement(Phase::Decode, None, &m);
        assert_eq!(f.completed, Some(1));
        // No gauge: client in-flight; `done` is busy 10..20 of a 30 s window, `early` never.
        assert!((f.avg_active.unwrap() - 10.0 / 30.0).abs() < 1e-9);
    }

    #[test]
    fn prefill_rate_is_prompt_tokens_over_ttft() {
        let mut r = request(1.0, 1.25, 1.25, 1, 0);
        r.prompt_tokens = Some(8000);
        let m = Measurement::of_requests(None, vec![r]);
        let f = Figures::from_measurement(Phase::Prefill, None, &m);
        assert_eq!(f.prompt_tps, Some(32000.0));
        assert_eq!(f.ttft_ms, Some(250.0));
        assert_eq!(f.completed, Some(1));
    }
}

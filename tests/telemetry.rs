//! Device telemetry from a recorded nvidia-smi trace to the cell's power figures.

use speed_matrix::analysis::Figures;
use speed_matrix::bench::telemetry::parse_nvidia_smi_line;
use speed_matrix::format::{Measurement, Phase, RequestRecord, TokenSource, Window};

mod common;

/// A 30 s window holding 4,500 output tokens over 30 s: 150 tok/s.
fn measurement() -> Measurement {
    let request = |tokens: u64| RequestRecord {
        first_token_s: Some(10.1),
        last_token_s: Some(40.0),
        end_s: Some(40.0),
        tokens,
        chunks: tokens,
        window_tokens: tokens,
        window_last_token_s: Some(40.0),
        token_source: TokenSource::Usage,
        ..RequestRecord::sent_at(10.0)
    };
    Measurement::of_requests(Some(Window { start_s: 10.0, end_s: 40.0 }), vec![request(3000), request(1500)])
}

#[test]
fn joules_per_token_come_from_the_trace() {
    let trace = std::fs::read_to_string(common::fixture("hardware/nvidia-smi-telemetry.csv")).unwrap();
    // Two devices, five moments; each line stamped as read.
    let samples: Vec<_> =
        trace.lines().enumerate().filter_map(|(i, l)| parse_nvidia_smi_line(l, 11.0 + (i / 2) as f64)).collect();
    assert_eq!(samples.len(), 10);
    let m = Measurement { telemetry: samples, ..measurement() };
    let f = Figures::from_measurement(Phase::Decode, Some(1024), &m);
    assert!((f.total_tps.unwrap() - 150.0).abs() < 1e-9);
    // Sums per moment: 820, 840, 800, 820, 1220 W.
    assert!((f.avg_power_w.unwrap() - 900.0).abs() < 1e-9, "{:?}", f.avg_power_w);
    assert_eq!(f.peak_power_w, Some(1220.0));
    assert!((f.joules_per_token.unwrap() - 6.0).abs() < 1e-9);
    // Without telemetry, no energy figures.
    let f = Figures::from_measurement(Phase::Decode, Some(1024), &measurement());
    assert_eq!((f.avg_power_w, f.joules_per_token), (None, None));
}

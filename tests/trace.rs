//! Trace replay (`site bench --trace`) against the simulated engine: a slice of the real
//! Mooncake conversation trace (its first 300 lines, tests/fixtures/traces) sent at its
//! timestamps, its lengths scaled for the simulator, its block ids as shared text. The
//! simulator counts a word a token and caches prefixes of the prompts it has seen, so what the
//! replay planned can be checked against what the server saw.
#![cfg(feature = "simulator")]

mod common;

use common::sim::{bench, SimArgs};
use common::*;
use serde_json::Value;

const TRACE: &str = "tests/fixtures/traces/mooncake-conversation-head.jsonl";

fn trace_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(TRACE)
}

/// The fixture's (timestamp s, input, output, block ids) lines.
fn trace_lines() -> Vec<(f64, u64, u64, Vec<u64>)> {
    std::fs::read_to_string(trace_path())
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let ids = v["hash_ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            (
                v["timestamp"].as_f64().unwrap() / 1000.0,
                v["input_length"].as_u64().unwrap(),
                v["output_length"].as_u64().unwrap(),
                ids,
            )
        })
        .collect()
}

#[test]
fn a_trace_slice_keeps_its_timestamps_lengths_and_prefix_sharing() {
    // Single-token cache blocks: the trace's blocks (10 tokens after scaling) are found as
    // the trace shares them, not cut to an engine's own block size.
    let sim = SimArgs::new()
        .flavor("vllm")
        .steps(2, 0)
        .flag("--prefix-cache-prompts", 10_000)
        .flag("--block-tokens", 1)
        .start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let trace = trace_path();
    // 30 s of the trace from 10 s, 15 times as fast (about 50 requests a second), lengths a
    // fiftieth (Mooncake's 512-token blocks become 10 tokens), outputs capped by the length.
    let args = [
        "--trace",
        trace.to_str().unwrap(),
        "--trace-start",
        "10",
        "--trace-duration",
        "30",
        "--speedup",
        "15",
        "--scale-lengths",
        "0.02",
        "--drain-timeout",
        "10s",
        "--run-id",
        "replay",
    ];
    let out = bench(d, &sim.url, &args);
    assert_ok(&out);
    let run = d.join("data/runs/replay");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let t = &manifest["traffic"]["trace"];
    let lines = trace_lines();
    let first = lines[0].0;
    let expected: Vec<(f64, u64, u64, Vec<u64>)> =
        lines.into_iter().filter(|l| l.0 - first >= 10.0 && l.0 - first < 40.0).collect();
    assert_eq!(t["in_slice"].as_u64().unwrap() as usize, expected.len());
    assert_eq!(
        (t["format"].as_str(), t["block_tokens"].as_u64(), t["dropped"].as_u64()),
        (Some("mooncake"), Some(10), Some(0))
    );
    assert_eq!(t["file"], "mooncake-conversation-head.jsonl", "the name, not the path");
    let cells: Vec<Value> = std::fs::read_to_string(run.join("rates.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cells.len(), 1);
    let requests = cells[0]["requests"].as_array().unwrap();
    assert_eq!(requests.len(), expected.len());
    let t0 = requests[0]["scheduled_s"].as_f64().unwrap();
    let mut lags = Vec::new();
    let (mut planned_in, mut served_in) = (0u64, 0u64);
    for (r, line) in requests.iter().zip(&expected) {
        let planned = &r["planned"];
        // Its trace time, and its schedule: the trace's gaps over the speed-up.
        assert!((planned["trace_s"].as_f64().unwrap() - (line.0 - first)).abs() < 1e-9, "{r}");
        let at = r["scheduled_s"].as_f64().unwrap() - t0;
        assert!((at - (line.0 - expected[0].0) / 15.0).abs() < 1e-6, "{at} for trace time {}", line.0);
        lags.push((r["send_s"].as_f64().unwrap() - r["scheduled_s"].as_f64().unwrap()) * 1000.0);
        // Its lengths: the trace's over 50, the output asked as max_tokens and served whole.
        let input = ((line.1 as f64 * 0.02).round() as u64).max(1);
        assert_eq!(planned["input_tokens"].as_u64().unwrap(), input);
        assert_eq!(r["tokens"].as_u64(), planned["output_tokens"].as_u64(), "{r}");
        assert!(r.get("error").is_none(), "{r}");
        planned_in += input;
        served_in += r["prompt_tokens"].as_u64().unwrap();
    }
    // The served input is the trace's within 2%, all requests together.
    let ratio = served_in as f64 / planned_in as f64;
    assert!((ratio - 1.0).abs() < 0.02, "served {served_in} of {planned_in} tokens");
    // The schedule was kept, within the bound past which a cell says its client fell behind
    // (the lag a release build keeps at 50 a second, some 2 ms at p99, is a benchmark's:
    // benches/client_throughput.rs, its table in the README).
    lags.sort_by(f64::total_cmp);
    let p99 = lags[(lags.len() * 99).div_ceil(100) - 1];
    assert!(p99 < 50.0, "lag p99 {p99:.2} ms: {lags:?}");
    // The prefix share the server found cached follows the one the block ids imply.
    let planned_reuse = t["planned_reuse_pct"].as_f64().unwrap();
    let (hit, of) = requests.iter().fold((0, 0), |a, r| {
        (a.0 + r["cached_tokens"].as_u64().unwrap_or(0), a.1 + r["prompt_tokens"].as_u64().unwrap())
    });
    let measured = hit as f64 / of as f64 * 100.0;
    assert!(planned_reuse > 1.0, "every request of the slice starts with the service's block 0: {planned_reuse}");
    assert!(
        (measured - planned_reuse).abs() < 2.0,
        "measured {measured:.1}% cached against {planned_reuse:.1}% planned"
    );
    // The page says what was replayed, what it changed and what was served.
    assert_ok(&site_in(d, &["build"]));
    let page = std::fs::read_to_string(d.join("public/runs/replay/index.html")).unwrap();
    assert!(page.contains("<h2>Trace replay</h2>"), "{page}");
    // Its traffic through time, TTFT by input length and the client's lag, drawn.
    for title in [
        "Requests sent and completed through the replay",
        "Requests in flight through the replay",
        "TTFT by input length",
        "Client lag behind the schedule",
    ] {
        assert!(page.contains(&format!("<title>{title}")), "{title}");
    }
    // The run's facts are a replay's: no matrix settings it did not use, no empty table.
    assert!(page.contains("Trace replay, an open loop"));
    for absent in ["Time per measurement", "Decode test", "Max output", "All measurements"] {
        assert!(!page.contains(absent), "{absent}");
    }
    assert!(page.contains(&format!("{:.1}% of input tokens", planned_reuse)));
    assert!(page.contains(&format!("{}: {} scaled, 0 capped", expected.len(), expected.len())));
}

fn assert_fails_with(out: &std::process::Output, said: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(said), "expected {said:?} in: {err}");
}

#[test]
fn a_trace_is_checked_line_by_line_and_its_flags_need_it() {
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let bad = d.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"timestamp\": 0, \"input_length\": 700, \"output_length\": 8, \"hash_ids\": [1, 2]}\n{\"timestamp\": 5, \"input_length\": 0, \"output_length\": 8, \"hash_ids\": [1]}\n",
    )
    .unwrap();
    let out = bench(d, "http://127.0.0.1:9", &["--trace", bad.to_str().unwrap(), "--dry-run"]);
    assert_fails_with(&out, "bad.jsonl:2");
    assert_fails_with(&out, "input_length: expected a whole number of tokens from 1");
    let out = bench(d, "http://127.0.0.1:9", &["--speedup", "2", "--dry-run"]);
    assert!(!out.status.success());
    let out = bench(d, "http://127.0.0.1:9", &["--trace", bad.to_str().unwrap(), "--trace-format", "parquet"]);
    assert_fails_with(&out, "--trace-format");
}

/// A Bailian conversation's next turn is sent once the turn it follows has ended (a user
/// answers what they were shown), however early its timestamp: with answers of 40 tokens at
/// 20 ms a step (some 0.8 s) and follow-ups 0.1 s after their parent, every follow-up goes
/// out after its parent's end, records when it became due, and its lag counts from then.
#[test]
fn a_bailian_follow_up_waits_for_the_turn_it_follows() {
    let sim = SimArgs::new().flavor("vllm").steps(20, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let mut lines = String::new();
    for c in 0..4u64 {
        let (t, chat) = (c as f64 * 0.5, 10 + c * 2);
        let hashes = format!("[{}, {}]", 100 + c, 200 + c);
        lines += &format!(
            "{{\"chat_id\": {chat}, \"parent_chat_id\": -1, \"timestamp\": {t}, \"input_length\": 24, \"output_length\": 40, \"type\": \"text\", \"turn\": 1, \"hash_ids\": {hashes}}}\n"
        );
        lines += &format!(
            "{{\"chat_id\": {}, \"parent_chat_id\": {chat}, \"timestamp\": {}, \"input_length\": 40, \"output_length\": 8, \"type\": \"text\", \"turn\": 2, \"hash_ids\": [{}, {}, {}]}}\n",
            chat + 1,
            t + 0.1,
            100 + c,
            200 + c,
            300 + c
        );
    }
    std::fs::write(d.join("bailian.jsonl"), lines).unwrap();
    let args = ["--trace", "bailian.jsonl", "--drain-timeout", "10s", "--run-id", "chats"];
    assert_ok(&bench(d, &sim.url, &args));
    let cell: Value = serde_json::from_str(
        std::fs::read_to_string(d.join("data/runs/chats/rates.jsonl")).unwrap().lines().next().unwrap(),
    )
    .unwrap();
    let requests = cell["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 8);
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k}: {r}"));
    for pair in requests.chunks(2) {
        let (parent, next) = (&pair[0], &pair[1]);
        assert!(parent.get("due_s").is_none(), "{parent}");
        assert!(f(next, "send_s") >= f(parent, "end_s"), "sent before the turn it follows ended: {pair:?}");
        assert!((f(next, "due_s") - f(parent, "end_s")).abs() < 0.05, "{pair:?}");
        assert!(f(next, "send_s") - f(next, "due_s") < 0.05, "its lag counts from when it was due: {pair:?}");
        assert!(f(next, "due_s") > f(next, "scheduled_s") + 0.3, "held well past its timestamp: {pair:?}");
    }
}

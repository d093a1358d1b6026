//! What a real vLLM showed `site bench` misread, taught to the simulated engine's vllm
//! flavour and checked here: a KV cache of whole blocks (M1), a queue that holds streams
//! through the window (M1), a running gauge that leaves out prefills under way (M2), the
//! token counter compared like with like (M3), a prefix cached in whole blocks (M5) and
//! speculative decoding recorded as a setting (M6). `scripts/e2e-vllm.sh` checks the same
//! on the real server.
#![cfg(feature = "simulator")]

mod common;

use common::sim::{bench, cell, SimArgs};
use common::*;
use serde_json::Value;

fn manifest(d: &std::path::Path, run: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(d.join(format!("data/runs/{run}/run.json"))).unwrap()).unwrap()
}

fn warning_codes(c: &Value) -> Vec<String> {
    c["warnings"].as_array().map_or(Vec::new(), |w| w.iter().map(|w| w["code"].as_str().unwrap().to_string()).collect())
}

/// 24 blocks of 128 tokens (3,072), as `--num-gpu-blocks-override 24` makes on the real
/// server, one of them its own (vLLM's null block): 256 + 128 tokens a request are 384, three
/// blocks by the tokens, but a prompt a few tokens over its context takes a fourth, so eight
/// requests need 32 blocks of the 23: planned Over capacity. Told the cache is larger (`--kv-budget`), the bench runs the cell, the server
/// keeps one of the eight waiting through the window, and the cell is Over capacity as
/// measured, never a valid figure of eight streams.
#[test]
fn a_block_cache_is_planned_in_whole_blocks_and_a_held_queue_is_over_capacity() {
    let sim = SimArgs::new().flavor("vllm").steps(20, 1).flag("--kv-tokens", 3072).flag("--block-tokens", 128).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = ["--contexts", "256", "--concurrency", "1,8", "--max-output", "128", "--prefix-reuse", "0"];
    assert_ok(&bench(d, &sim.url, &[&args[..], &["--run-id", "planned"]].concat()));
    let c8 = cell(d, "planned", "decode-256-c8.json");
    assert_eq!(c8["status"], "over_capacity");
    assert_eq!(c8["over_capacity"]["required_tokens"], 32 * 128);
    assert_eq!(cell(d, "planned", "decode-256-c1.json")["status"], "valid");
    let told = [&args[..], &["--kv-budget", "100000", "--warmup-timeout", "3s", "--run-id", "held"]].concat();
    assert_ok(&bench(d, &sim.url, &told));
    let c8 = cell(d, "held", "decode-256-c8.json");
    assert_eq!(c8["status"], "over_capacity", "{c8}");
    assert_eq!(c8["over_capacity"]["rule"], "the server kept some of the C streams waiting through the window");
    assert_eq!(c8["over_capacity"]["required_tokens"], 8);
    assert!(c8["over_capacity"]["budget_tokens"].as_u64().unwrap() < 8, "{c8}");
    // Its requests are kept: the evidence of what the server did.
    assert!(!common::sim::request_rows(&c8).is_empty());
}

/// vLLM sets its running gauge when a step ends: a request in its prefill step is in
/// neither gauge. With a prefill of some 0.25 s a request (a fresh prompt each, 0% reuse)
/// the gauge reads below one stream at one stream, yet the client held one and the server
/// none waiting: no `active_mismatch`.
#[test]
fn a_running_gauge_that_lags_prefill_is_not_a_missing_stream() {
    let sim = SimArgs::new().flavor("vllm").steps(10, 0).flag("--prefill-tps", 1000).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args =
        ["--contexts", "256", "--concurrency", "1", "--max-output", "16", "--prefix-reuse", "0", "--duration", "3s"];
    assert_ok(&bench(d, &sim.url, &[&args[..], &["--run-id", "lag"]].concat()));
    let c1 = cell(d, "lag", "decode-256-c1.json");
    assert_eq!(c1["status"], "valid");
    let gauge = &c1["measurement"]["gauge"];
    let running: Vec<f64> = match &gauge["running"] {
        Value::Array(v) => v.iter().map(|x| x.as_f64().unwrap()).collect(),
        x => vec![x.as_f64().unwrap()],
    };
    let mean = running.iter().sum::<f64>() / running.len() as f64;
    assert!(mean < 0.9, "the gauge left out the prefills: {running:?}");
    assert!(!warning_codes(&c1).contains(&"active_mismatch".to_string()), "{c1}");
}

/// Slow steps (0.3 s a token) and a 1.5 s window: our tokens end up to a step before the
/// window's end, the counter's reads are at its edges. Compared over the counter's own span,
/// client and server agree (the same tokens): no `server_disagrees`.
#[test]
fn the_token_counter_is_compared_over_its_own_span() {
    let sim = SimArgs::new().flavor("vllm").steps(300, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    assert_ok(&bench(d, &sim.url, &["--contexts", "256", "--concurrency", "1", "--max-output", "64", "--run-id", "x"]));
    let c1 = cell(d, "x", "decode-256-c1.json");
    assert_eq!(c1["status"], "valid");
    assert!(!warning_codes(&c1).contains(&"server_disagrees".to_string()), "{c1}");
    assert_ok(&site_in(d, &["build"]));
    let v = cells_download(&d.join("public"), "x");
    let c = v["cells"].as_array().unwrap().iter().find(|c| c["phase"] == "decode").unwrap();
    let (ours, server) =
        (c["figures"]["total_tps"].as_f64().unwrap(), c["figures"]["server_total_tps"].as_f64().unwrap());
    // Our own figure still ends at the last token: it is the window's, not the counter's.
    assert!(ours > server, "{ours} against {server}");
}

/// A 90% shared prefix of a 256-token prompt in blocks of 128 is one whole block: the server
/// finds 50% cached. The warning names the block size and the share the blocks allow.
#[test]
fn a_prefix_cached_in_whole_blocks_is_explained() {
    let sim = SimArgs::new().flavor("vllm").steps(5, 0).flag("--block-tokens", 128).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args =
        ["--contexts", "256", "--concurrency", "2", "--max-output", "32", "--prefix-reuse", "90", "--run-id", "r"];
    assert_ok(&bench(d, &sim.url, &args));
    let c2 = cell(d, "r", "decode-256-c2.json");
    let w =
        c2["warnings"].as_array().unwrap().iter().find(|w| w["code"] == "prefix_reuse_off").expect("a reuse warning");
    let text = w["message"].as_str().unwrap();
    // 230 shared tokens of a prompt of about 256 are one block of 128: about 50%.
    assert!(text.contains("whole blocks of 128 tokens") && text.contains("% shared prefix at most 50."), "{text}");
}

/// A server drafting tokens (vLLM's spec_decode counters) is recorded as a setting of the
/// run, so it is another configuration than the plain server, and its boards mark it.
#[test]
fn speculative_decoding_is_a_setting_of_the_run_and_marked_on_boards() {
    let sim =
        SimArgs::new().flavor("vllm").steps(5, 0).flag("--spec-draft-tokens", 3).flag("--tokens-per-chunk", 2).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    assert_ok(&bench(d, &sim.url, &["--contexts", "256", "--concurrency", "1", "--max-output", "32", "--run-id", "s"]));
    let m = manifest(d, "s");
    assert_eq!(m["server_settings"]["speculative_decoding"], "on (vllm:spec_decode_* counters)", "{m}");
    assert_ok(&site_in(d, &["build"]));
    let board = std::fs::read_to_string(d.join("public/leaderboards/256-x1/index.html")).unwrap();
    assert!(text_of(&board).contains("0.0.0-sim · speculative decoding"), "the board marks it");
    let page = text_of(&std::fs::read_to_string(d.join("public/runs/s/index.html")).unwrap());
    assert!(page.contains("speculative_decoding"), "the run's facts list it");
}

/// A Prometheus text's metrics: name -> (its `# TYPE`, the label names of its samples).
fn metric_shapes(text: &str) -> std::collections::BTreeMap<String, (String, std::collections::BTreeSet<String>)> {
    let mut out: std::collections::BTreeMap<String, (String, std::collections::BTreeSet<String>)> = Default::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            out.entry(name.to_string()).or_default().0 = kind.to_string();
        } else if !line.starts_with('#') && !line.is_empty() {
            let name = line.split(['{', ' ']).next().unwrap();
            let labels = line.split_once('{').map_or("", |(_, r)| r.split('}').next().unwrap());
            let names = labels.split(',').filter_map(|l| l.split_once('=').map(|(k, _)| k.to_string()));
            out.entry(name.to_string()).or_default().1.extend(names);
        }
    }
    out
}

/// The simulated engine's `/metrics` (vllm flavour, drafting tokens).
fn simulated_metrics() -> String {
    let sim = SimArgs::new().flavor("vllm").flag("--spec-draft-tokens", 3).start();
    let (status, _, body) = common::serve::get(sim.url.trim_start_matches("http://"), "/metrics");
    assert_eq!(status, 200);
    body
}

/// Every metric and label `site bench` reads from vLLM is served by vLLM 0.32 as captured
/// (`tests/fixtures/vllm-0.32.0`: `/metrics` of a plain and of an ngram-drafting server,
/// `/version`, `/v1/models`, a streamed answer) and by the simulated engine's vllm flavour
/// with the same name, type and labels: the simulator speaks the real server's words, not
/// our idea of them.
#[test]
fn the_simulated_vllm_serves_what_vllm_serves_where_site_bench_reads_it() {
    let dir = fixture("vllm-0.32.0");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let real = metric_shapes(&(read("metrics.txt") + &read("metrics-spec.txt")));
    let sim = metric_shapes(&simulated_metrics());
    let model = ["model_name"];
    let cache = ["block_size", "num_gpu_blocks", "kv_cache_size_tokens"];
    let reads: [(&str, &str, &[&str]); 9] = [
        ("vllm:num_requests_running", "gauge", &model),
        ("vllm:num_requests_waiting", "gauge", &model),
        ("vllm:generation_tokens_total", "counter", &model),
        ("vllm:prefix_cache_queries_total", "counter", &model),
        ("vllm:prefix_cache_hits_total", "counter", &model),
        ("vllm:cache_config_info", "gauge", &cache),
        ("vllm:spec_decode_num_drafts_total", "counter", &model),
        ("vllm:spec_decode_num_draft_tokens_total", "counter", &model),
        ("vllm:spec_decode_num_accepted_tokens_total", "counter", &model),
    ];
    for (name, kind, labels) in reads {
        for (who, shapes) in [("vLLM 0.32", &real), ("the simulator", &sim)] {
            let (t, l) = shapes.get(name).unwrap_or_else(|| panic!("{who} serves no {name}"));
            assert_eq!(t, kind, "{who}: {name}'s type");
            for label in labels {
                assert!(l.contains(*label), "{who}: {name} has no label {label} ({l:?})");
            }
        }
    }
    // The facts discovery reads: the version, the model's length; a stream's usage, its
    // cached prompt tokens (--enable-prompt-tokens-details) and its finish reason.
    let version: Value = serde_json::from_str(&read("version.json")).unwrap();
    assert_eq!(version["version"], "0.32.0");
    let models: Value = serde_json::from_str(&read("models.json")).unwrap();
    assert!(models["data"][0]["max_model_len"].as_u64().is_some());
    let chunks: Vec<Value> = read("stream.txt")
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let last = chunks.last().unwrap();
    assert!(last["usage"]["prompt_tokens_details"]["cached_tokens"].is_u64(), "{last}");
    assert!(chunks.iter().any(|c| c["choices"][0]["finish_reason"] == "length"));
}

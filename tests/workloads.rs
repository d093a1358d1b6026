//! The workloads engines are tuned for, end to end against the simulated engine: a model
//! that reasons before it answers (two TTFTs, each named) and a server that sends several
//! tokens a chunk (speculative decoding, MTP) and counts its drafts.
#![cfg(feature = "simulator")]

mod common;

use common::sim::{bench, cell, request_rows, SimArgs};
use common::*;
use serde_json::Value;

fn decode_cell(cells: &Value, context: u64, c: u64) -> &Value {
    cells["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["phase"] == "decode" && x["context"] == context && x["concurrency"] == c)
        .unwrap_or_else(|| panic!("no decode cell {context} x {c}"))
}

/// The simulated engine at 10 ms a step sending `tokens` tokens a chunk, counted by its
/// usage in every chunk (so tokens per chunk are measured, not assumed).
fn chunked(tokens: u32) -> SimArgs {
    SimArgs::new().steps(10, 0).flag("--tokens-per-chunk", tokens).flag("--usage", "continuous")
}

#[test]
fn a_reasoning_model_gets_the_first_token_of_any_kind_and_the_answers_apart() {
    // 10 ms a step, 2 tokens a chunk: the first 40 tokens are reasoning, 20 chunks, so the
    // answer's first token comes some 200 ms after the first token.
    let sim = chunked(2).flag("--reasoning-tokens", 40).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    assert_ok(&bench(d, &sim.url, &["--contexts", "256", "--concurrency", "1,2", "--run-id", "think"]));
    // The records keep the reasoning and when the answer began.
    let raw = cell(d, "think", "decode-256-c2.json");
    let rows = request_rows(&raw);
    let answered: Vec<&Value> = rows.iter().filter(|r| r["first_answer_s"].is_number()).collect();
    assert!(!answered.is_empty(), "{rows:?}");
    for r in &answered {
        assert_eq!(r["reasoning_chunks"], 20, "{r}");
        let gap = r["first_answer_s"].as_f64().unwrap() - r["first_token_s"].as_f64().unwrap();
        assert!((0.18..0.30).contains(&gap), "answer {gap:.3} s after the first token: {r}");
    }
    assert_eq!(raw["schema_version"], 5);
    assert_ok(&site_in(d, &["build"]));
    let cells = cells_download(&d.join("public"), "think");
    let f = &decode_cell(&cells, 256, 2)["figures"];
    let (ttft, answer) = (f["ttft_ms"].as_f64().unwrap(), f["answer_ttft_ms"].as_f64().unwrap());
    assert!((180.0..300.0).contains(&(answer - ttft)), "TTFT {ttft} ms, answer TTFT {answer} ms");
    // Two tokens a chunk, counted from the server's usage.
    let per_chunk = f["tokens_per_chunk"].as_f64().unwrap();
    assert!((per_chunk - 2.0).abs() < 0.02, "{per_chunk} tokens a chunk");
    // The CSV has both, and the pages say which TTFT is which.
    let csv = gunzip_text(&d.join("public/runs/think/cells.csv.gz"));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(header.contains(&"answer_ttft_ms") && header.contains(&"tokens_per_chunk"), "{header:?}");
    let page = std::fs::read_to_string(d.join("public/runs/think/index.html")).unwrap();
    assert!(page.contains("TTFT is the first token of any kind, a reasoning token included"), "run page caption");
    assert!(page.contains("2.00 a chunk"), "tokens per chunk in the table");
    let evidence = evidence_cell(d, "think", "decode-256-x2");
    let rep = &evidence["reps"][0];
    assert!(rep["answer_ttft"]["count"].as_u64().unwrap() >= 1, "{rep}");
    let formulas = rep["formulas"].to_string();
    assert!(formulas.contains("Answer TTFT") && formulas.contains("Tokens per chunk"), "{formulas}");
}

#[test]
fn a_model_that_does_not_reason_has_one_ttft_and_one_token_a_chunk() {
    let sim = SimArgs::new().steps(5, 0).flag("--usage", "continuous").start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    assert_ok(&bench(d, &sim.url, &["--contexts", "256", "--concurrency", "1", "--run-id", "plain"]));
    let rows = request_rows(&cell(d, "plain", "decode-256-c1.json"));
    assert!(rows.iter().all(|r| r.get("first_answer_s").is_none() && r.get("reasoning_chunks").is_none()), "{rows:?}");
    assert_ok(&site_in(d, &["build"]));
    let cells = cells_download(&d.join("public"), "plain");
    let f = &decode_cell(&cells, 256, 1)["figures"];
    assert!(f["answer_ttft_ms"].is_null(), "{f}");
    assert_eq!(f["tokens_per_chunk"], 1.0);
    let page = std::fs::read_to_string(d.join("public/runs/plain/index.html")).unwrap();
    assert!(!page.contains("a reasoning token included") && !page.contains(" a chunk</small>"));
}

#[test]
fn speculative_decoding_is_measured_from_the_chunks_and_the_servers_counters() {
    // 3 tokens a chunk; each chunk one draft of 4 proposed tokens, 2 of them accepted.
    let sim = chunked(3).flag("--spec-draft-tokens", 4).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    assert_ok(&bench(d, &sim.url, &["--contexts", "256", "--concurrency", "2", "--run-id", "spec"]));
    let raw = cell(d, "spec", "decode-256-c2.json");
    let counts = &raw["measurement"]["spec_decode"];
    let (drafts, proposed, accepted) = (
        counts["drafts"].as_f64().unwrap(),
        counts["draft_tokens"].as_f64().unwrap(),
        counts["accepted_tokens"].as_f64().unwrap(),
    );
    // A request's last chunk (at --max-output 512) carries 2 tokens: one fewer accepted.
    assert!(drafts >= 50.0 && proposed == 4.0 * drafts, "{counts}");
    assert!(accepted <= 2.0 * drafts && accepted >= 2.0 * drafts - 4.0, "{counts}");
    assert_ok(&site_in(d, &["build"]));
    let cells = cells_download(&d.join("public"), "spec");
    let f = &decode_cell(&cells, 256, 2)["figures"];
    let (acceptance, length) = (f["spec_acceptance"].as_f64().unwrap(), f["spec_accepted_len"].as_f64().unwrap());
    assert!((acceptance - 0.5).abs() < 0.01 && (length - 3.0).abs() < 0.02, "{f}");
    assert!((f["tokens_per_chunk"].as_f64().unwrap() - 3.0).abs() < 0.02, "{f}");
    let page = std::fs::read_to_string(d.join("public/runs/spec/index.html")).unwrap();
    assert!(page.contains("a chunk</small>") && page.contains("% of drafts accepted"), "run page");
    let formulas = evidence_cell(d, "spec", "decode-256-x2")["reps"][0]["formulas"].to_string();
    assert!(formulas.contains("Draft acceptance") && formulas.contains("Mean accepted length"), "{formulas}");
}

/// A run at `--prefix-reuse PCT` on the simulated vLLM (a prefix cache with counters);
/// short answers, so that many requests start inside each window.
fn reuse_run(d: &std::path::Path, url: &str, id: &str, pct: &str) {
    let args = ["--contexts", "512", "--concurrency", "2", "--max-output", "8", "--prefix-reuse", pct, "--run-id", id];
    assert_ok(&bench(d, url, &args));
}

#[test]
fn prefix_reuse_is_planned_validated_against_the_server_and_kept_apart() {
    // A cache of single-token blocks (a radix cache, as SGLang's): the planned share is
    // found whole (tests/engine_vllm.rs checks vLLM's whole blocks).
    let sim = SimArgs::new().steps(5, 0).prefill_tps(20000).flag("--block-tokens", 1).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    reuse_run(d, &sim.url, "r90", "90");
    reuse_run(d, &sim.url, "r0", "0");
    let raw = cell(d, "r90", "decode-512-c2.json");
    // The server's own counters over the window agree with the requests' usage.
    let counted = &raw["measurement"]["prefix_cache"];
    let server = counted["hits"].as_f64().unwrap() / counted["queries"].as_f64().unwrap() * 100.0;
    assert!((88.0..=92.0).contains(&server), "server counters: {server:.1}% ({counted})");
    assert!(raw.get("warnings").is_none(), "{}", raw["warnings"]);
    assert_ok(&site_in(d, &["build"]));
    let pct = |run: &str| {
        let cells = cells_download(&d.join("public"), run);
        decode_cell(&cells, 512, 2)["figures"]["cached_prompt_pct"].as_f64().unwrap()
    };
    let (p90, p0) = (pct("r90"), pct("r0"));
    // 90% of the prompt is shared; the chat template's few tokens, counted in the prompt,
    // are not (89.7% measured): within 2 points of the plan.
    assert!((88.0..=92.0).contains(&p90), "planned 90%, measured {p90:.1}%");
    assert!(p0 < 10.0, "planned 0%, measured {p0:.1}%");
    // Each level its own board; the run page names the plan and shows what was measured.
    assert!(d.join("public/leaderboards/512-x2-reuse90/index.html").is_file());
    assert!(d.join("public/leaderboards/512-x2-reuse0/index.html").is_file());
    assert!(!d.join("public/leaderboards/512-x2/index.html").exists());
    let index = std::fs::read_to_string(d.join("public/leaderboards/index.html")).unwrap();
    assert!(index.contains("512 × 2 · 90% prefix reuse"), "the index lists the reuse boards apart");
    let page = std::fs::read_to_string(d.join("public/runs/r90/index.html")).unwrap();
    assert!(page.contains("Measured with 90% prefix reuse") && page.contains("% cached</small>"), "run page");
    // Two workloads are not compared.
    let out = site_in(d, &["diff", "r0", "r90"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("r0 was measured with 0% prefix reuse and r90 with 90% prefix reuse"),
        "{}",
        stderr(&out)
    );
    // Nor when compare.json pairs them: the build refuses, naming the pair.
    let plain = ["--contexts", "512", "--concurrency", "2", "--max-output", "8", "--run-id", "plain"];
    assert_ok(&bench(d, &sim.url, &plain));
    std::fs::write(
        d.join("data/compare.json"),
        r#"{"schema_version": 1, "comparisons": [{"a": "plain", "b": "r90"}]}"#,
    )
    .unwrap();
    let out = site_in(d, &["build"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "error: data/compare.json\n  caused by: plain was measured with one prompt a stream and r90 with 90% prefix reuse: two workloads"
        ),
        "{err}"
    );
}

/// `--prefix-reuse 0,90 --turns 2`: one session, a run a level naming the other; each
/// level's first turns validated against its plan and later turns' reuse measured apart;
/// the run pages link the levels and chart TTFT against reuse. A run that names a level
/// without being named back is not taken into the session.
#[test]
fn a_session_at_two_reuse_levels_of_conversations_is_a_run_a_level_linked_on_their_pages() {
    let sim = SimArgs::new().steps(5, 0).prefill_tps(20000).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = ["--contexts", "512", "--concurrency", "2", "--max-output", "8", "--turns", "2"];
    let out = bench(d, &sim.url, &[&args[..], &["--prefix-reuse", "0,90", "--run-id", "s"]].concat());
    assert_ok(&out);
    assert!(stdout(&out).contains("runs/s-reuse0 (") && stdout(&out).contains("runs/s-reuse90 ("), "{}", stdout(&out));
    let manifest = |id: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("data/runs").join(id).join("run.json")).unwrap()).unwrap()
    };
    let (m0, m90) = (manifest("s-reuse0"), manifest("s-reuse90"));
    assert_eq!(m0["other_levels"], serde_json::json!(["s-reuse90"]));
    assert_eq!(m90["other_levels"], serde_json::json!(["s-reuse0"]));
    assert_eq!((&m0["settings"]["prefix_reuse_pct"], &m90["settings"]["prefix_reuse_pct"]), (&0.into(), &90.into()));
    assert_eq!(m90["settings"]["turns"], 2);
    for id in ["s-reuse0", "s-reuse90"] {
        let raw = cell(d, id, "decode-512-c2.json");
        assert!(raw.get("warnings").is_none(), "{id}: {}", raw["warnings"]);
        assert!(request_rows(&raw).iter().any(|r| r["turn"] == 2), "{id}: no second turn");
    }
    assert_ok(&site_in(d, &["build"]));
    let figures = |id: &str| decode_cell(&cells_download(&d.join("public"), id), 512, 2)["figures"].clone();
    let (f0, f90) = (figures("s-reuse0"), figures("s-reuse90"));
    // First turns as planned; a later turn carries its conversation, which the cache keeps.
    let first = |f: &Value| f["cached_prompt_pct"].as_f64().unwrap();
    assert!(first(&f0) < 10.0 && (75.0..=95.0).contains(&first(&f90)), "{f0} {f90}");
    let later = f0["next_turn_cached_pct"].as_f64().unwrap();
    assert!(later > 50.0, "later turns at 0% reuse: {later:.1}% cached");
    let page = std::fs::read_to_string(d.join("public/runs/s-reuse0/index.html")).unwrap();
    assert!(page.contains("<h2>Prefix-reuse levels</h2>"), "run page");
    assert!(page.contains(r#"<a href="../../runs/s-reuse90/index.html">90%</a>"#), "the other level is linked");
    assert!(page.contains("<strong>0% (this run)</strong>") && page.contains("TTFT by prefix reuse"), "run page");
    assert!(page.contains("· 0% prefix reuse · 2-turn conversations</p>"), "the workload under the title");
    // A run naming a level of the session, not named back, stays out of it.
    let intruder = d.join("data/runs/x");
    copy_dir(&d.join("data/runs/s-reuse90"), &intruder);
    let mut m = manifest("x");
    (m["other_levels"], m["settings"]["prefix_reuse_pct"]) = (serde_json::json!(["s-reuse0"]), 50.into());
    std::fs::write(intruder.join("run.json"), m.to_string()).unwrap();
    assert_ok(&site_in(d, &["build"]));
    let page = std::fs::read_to_string(d.join("public/runs/s-reuse0/index.html")).unwrap();
    assert!(!page.contains("runs/x/index.html"), "a run not named back is no level of the session");
    assert!(!std::fs::read_to_string(d.join("public/runs/x/index.html")).unwrap().contains("Prefix-reuse levels"));
    // A dry run resuming the session reads each level's own folder: nothing is left to measure.
    let out = bench(
        d,
        &sim.url,
        &[&args[..], &["--prefix-reuse", "0,90", "--run-id", "s", "--resume", "--dry-run"]].concat(),
    );
    assert_ok(&out);
    assert!(stdout(&out).contains("Resuming: 2 measurements already on disk, 0 to go."), "{}", stdout(&out));
    // Each level once; --versus measures one workload.
    let out = bench(d, &sim.url, &[&args[..], &["--prefix-reuse", "90,90"]].concat());
    assert!(!out.status.success() && stderr(&out).contains("--prefix-reuse: each level once"), "{}", stderr(&out));
    let out = bench(d, &sim.url, &[&args[..], &["--prefix-reuse", "0,90", "--versus", &sim.url]].concat());
    assert!(!out.status.success() && stderr(&out).contains("give one --prefix-reuse level"), "{}", stderr(&out));
}

#[test]
fn a_server_without_a_prefix_cache_is_named_on_the_cell_that_planned_reuse() {
    let sim = SimArgs::new().steps(5, 0).flag("--prefix-cache-prompts", 0).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    reuse_run(d, &sim.url, "nocache", "90");
    let raw = cell(d, "nocache", "decode-512-c2.json");
    let warning = raw["warnings"].as_array().unwrap().iter().find(|w| w["code"] == "prefix_reuse_off").cloned();
    let message = warning.unwrap_or_else(|| panic!("{}", raw["warnings"]))["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("the server served 0% of the prompt tokens from its prefix cache, 90% planned"),
        "{message}"
    );
}

#[test]
fn each_stream_a_conversation_whose_later_turns_carry_the_earlier_ones() {
    // Single-token blocks: a later turn finds all of the turn before it cached.
    let sim = SimArgs::new().steps(5, 0).flag("--block-tokens", 1).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = ["--contexts", "256", "--concurrency", "2", "--max-output", "8", "--turns", "2", "--run-id", "chat"];
    assert_ok(&bench(d, &sim.url, &args));
    let rows = request_rows(&cell(d, "chat", "decode-256-c2.json"));
    let prompt = |turn: u64| -> Vec<u64> {
        rows.iter().filter(|r| r["turn"] == turn).filter_map(|r| r["prompt_tokens"].as_u64()).collect()
    };
    let (first, second) = (prompt(1), prompt(2));
    assert!(!first.is_empty() && !second.is_empty(), "{rows:?}");
    // The second turn's prompt is the first's, its 8-token answer and a new question: the
    // server counted them all.
    let (lo, hi) = (first.iter().max().unwrap(), second.iter().min().unwrap());
    assert!(hi > lo && hi - lo >= 8 + 10 && hi - lo < 8 + 60, "turn 1 up to {lo} tokens, turn 2 from {hi}");
    // The engine's prefix cache served the second turn's start: the first turn's prompt (the
    // simulator's chat template, a few tokens, is counted in the prompt and not in the cache).
    let cached: Vec<u64> =
        rows.iter().filter(|r| r["turn"] == 2).filter_map(|r| r["cached_prompt_tokens"].as_u64()).collect();
    assert!(!cached.is_empty() && cached.iter().all(|c| *c + 10 >= *lo && c < hi), "{cached:?} of {lo}");
    assert_ok(&site_in(d, &["build"]));
    let cells = cells_download(&d.join("public"), "chat");
    assert!(decode_cell(&cells, 256, 2)["figures"]["next_turn_ttft_ms"].as_f64().is_some());
    let turns = &evidence_cell(d, "chat", "decode-256-x2")["reps"][0]["turns"];
    assert_eq!(turns.as_array().map(Vec::len), Some(2), "{turns}");
    assert!(d.join("public/leaderboards/256-x2-turns2/index.html").is_file());
    let page = std::fs::read_to_string(d.join("public/runs/chat/index.html")).unwrap();
    assert!(page.contains("Each stream was a conversation of 2 turns") && page.contains("later turns"), "run page");
    let out = bench(d, &sim.url, &["--contexts", "256", "--concurrency", "1", "--turns", "2", "--api", "completions"]);
    assert!(!out.status.success() && stderr(&out).contains("--turns needs --api chat"), "{}", stderr(&out));
}

/// `--turns` past the model's length: a turn that would not fit is not sent (the server
/// would refuse it and end the cell); its conversation begins anew, the cell keeps the turns
/// that fit and says how many conversations were cut short.
#[test]
fn turns_that_would_pass_the_models_length_begin_a_new_conversation() {
    let sim = SimArgs::new().steps(5, 0).max_model_len(480).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = ["--contexts", "256", "--concurrency", "2", "--max-output", "64", "--turns", "4", "--run-id", "long"];
    assert_ok(&bench(d, &sim.url, &args));
    let c = cell(d, "long", "decode-256-c2.json");
    assert_eq!(c["status"], "valid", "{}", c["error"]);
    let rows = request_rows(&c);
    let turns: Vec<u64> = rows.iter().filter_map(|r| r["turn"].as_u64()).collect();
    assert!(turns.contains(&1) && turns.contains(&2), "{turns:?}");
    assert!(turns.iter().all(|t| *t <= 2), "a third turn (some 500 tokens) would not fit 480: {turns:?}");
    let warning = c["warnings"].as_array().unwrap().iter().find(|w| w["code"] == "turns_cut_short");
    let message = warning.unwrap_or_else(|| panic!("{}", c["warnings"]))["message"].as_str().unwrap().to_string();
    assert!(message.contains("before their turn 4") && message.contains("480 tokens a request"), "{message}");
}

#[test]
fn sglangs_speculative_decoding_gauges_are_read_where_it_keeps_no_counters() {
    let sim = chunked(3).flavor("sglang").flag("--spec-draft-tokens", 4).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    assert_ok(&bench(d, &sim.url, &["--contexts", "256", "--concurrency", "2", "--run-id", "sg"]));
    let raw = cell(d, "sg", "decode-256-c2.json");
    assert!(raw["measurement"].get("spec_decode").is_none(), "{}", raw["measurement"]);
    let gauges = &raw["measurement"]["spec_decode_gauges"];
    // 2 of 4 accepted a chunk, less each finished request's last (shorter) chunk.
    assert!((gauges["accept_rate"].as_f64().unwrap() - 0.5).abs() < 0.02, "{gauges}");
    assert_ok(&site_in(d, &["build"]));
    let cells = cells_download(&d.join("public"), "sg");
    let f = &decode_cell(&cells, 256, 2)["figures"];
    assert!((f["spec_accepted_len"].as_f64().unwrap() - 3.0).abs() < 0.05, "{f}");
    let formulas = evidence_cell(d, "sg", "decode-256-x2")["reps"][0]["formulas"].to_string();
    assert!(formulas.contains("an average over its most recent batches"), "{formulas}");
}

//! `site bench` against the simulated engine: figures against the simulator's ground truth
//! (within 1%), Looped and Over capacity cells, usage shapes, faults, drain, resume, Ctrl-C.
#![cfg(feature = "simulator")]

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use common::sim::{bench, cell, request_rows, SimArgs, FAST};
use common::*;
use serde_json::Value;

/// The run's figures as the site computes them (the cells.json.gz download: six significant
/// digits).
fn figures(dir: &Path, run: &str) -> Vec<Value> {
    assert_ok(&site_in(dir, &["build"]));
    let v = cells_download(&dir.join("public"), run);
    v["cells"].as_array().unwrap().clone()
}

fn find<'a>(cells: &'a [Value], phase: &str, ctx: u64, c: u64) -> &'a Value {
    cells
        .iter()
        .find(|x| x["phase"] == phase && x["context"] == ctx && x["concurrency"] == c)
        .unwrap_or_else(|| panic!("no {phase} {ctx} x {c}"))
}

/// Tests that hold figures to a tolerance of 1-3% run alone: on a 2-core machine another
/// test's engine and load generator would take the CPU the timing depends on.
static CPU: RwLock<()> = RwLock::new(());

fn alone() -> RwLockWriteGuard<'static, ()> {
    CPU.write().unwrap_or_else(|e| e.into_inner())
}

fn shared() -> RwLockReadGuard<'static, ()> {
    CPU.read().unwrap_or_else(|e| e.into_inner())
}

fn within(got: f64, want: f64, tolerance: f64, what: &str) {
    let err = (got - want).abs() / want;
    assert!(err <= tolerance, "{what}: got {got:.3}, want {want:.3} (off by {:.2}%)", err * 100.0);
}

/// Simulator step time in seconds for `running` requests: (base + per_seq x running) ms.
fn step(base: f64, per: f64, running: f64) -> f64 {
    (base + per * running) / 1000.0
}

#[test]
fn figures_match_the_simulators_ground_truth() {
    let _cpu = alone();
    let sim = SimArgs::new().steps(8, 1).kv_tokens(20000).max_model_len(16000).prefill_tps(20000).start();
    let ws = tempfile::tempdir().unwrap();
    let out = bench(
        ws.path(),
        &sim.url,
        &[
            "--contexts",
            "1k,8k",
            "--concurrency",
            "1,4,8",
            "--run-id",
            "truth",
            "--launch-command",
            "sim serve --api-key sk-live-123 HF_TOKEN=hf_secret",
        ],
    );
    assert_ok(&out);
    let cells = figures(ws.path(), "truth");
    for (ctx, c) in [(1024u64, 1u64), (1024, 4), (1024, 8), (8192, 1)] {
        let f = &find(&cells, "decode", ctx, c)["figures"];
        let per = 1.0 / step(8.0, 1.0, c as f64);
        within(f["total_tps"].as_f64().unwrap(), per * c as f64, 0.01, &format!("{ctx} x {c} total tok/s"));
        within(f["per_request_tps"].as_f64().unwrap(), per, 0.01, &format!("{ctx} x {c} per-request tok/s"));
        within(f["tbt_ms"].as_f64().unwrap(), 1000.0 / per, 0.01, &format!("{ctx} x {c} time between tokens"));
        within(f["avg_active"].as_f64().unwrap(), c as f64, 0.01, &format!("{ctx} x {c} active"));
        within(f["measured_s"].as_f64().unwrap(), 1.5, 0.02, "measured for");
        assert_eq!(find(&cells, "decode", ctx, c)["status"], "valid");
        // The server's own count over the window agrees with ours to 0.5%, give or take the
        // one engine step at each edge that a counter read cannot split: a step gives each of
        // the C streams a token at once, so C tokens (1.5 s windows hold only a few hundred
        // tokens; the default 30 s ones, thousands). One run gave 0.79% at 1K x 8 against a bound
        // that allowed one token an edge (0.77%).
        let server = f["server_total_tps"].as_f64().unwrap_or_else(|| panic!("{ctx} x {c}: no server count"));
        let edge = 2.0 * c as f64 / f["output_tokens"].as_f64().unwrap();
        within(
            f["total_tps"].as_f64().unwrap(),
            server,
            0.005 + edge,
            &format!("{ctx} x {c} ours against the server's"),
        );
        let cpu = f["client_cpu_cores"].as_f64().unwrap();
        assert!(cpu > 0.0 && cpu < 0.5, "{ctx} x {c}: client used {cpu} cores");
        let codes = find(&cells, "decode", ctx, c)["warnings"].to_string();
        assert!(!codes.contains("server_disagrees") && !codes.contains("client_busy"), "{codes}");
    }
    // 8K x 4 needs 4 x (8192 + 512 + 17 tokens of the prompt's sizing tolerance) in whole
    // 16-token blocks = 34,944 tokens of the 19,984 a 20,000-token cache lends (vLLM keeps
    // one block of its own).
    let oc = &find(&cells, "decode", 8192, 4)["over_capacity"];
    assert_eq!(oc["required_tokens"], 34944);
    assert_eq!(oc["budget_tokens"], 19984);
    assert_eq!(find(&cells, "decode", 8192, 8)["status"], "over_capacity");
    // Prefill: prompt tokens / TTFT, where TTFT = prompt / 20,000 tok/s + one decode step.
    let p = find(&cells, "prefill", 8192, 1);
    let prompt = p["prompt_tokens"].as_f64().unwrap();
    within(prompt, 8192.0, 0.002, "prompt sized with /tokenize");
    let ttft = prompt / 20000.0 + step(8.0, 1.0, 1.0);
    within(p["figures"]["ttft_ms"].as_f64().unwrap(), ttft * 1000.0, 0.02, "prefill TTFT");
    within(p["figures"]["prompt_tps"].as_f64().unwrap(), prompt / ttft, 0.02, "prefill tok/s");
    // Decode TTFT excludes prefill: the prefill sample warmed the prefix cache.
    assert!(find(&cells, "decode", 8192, 1)["figures"]["ttft_ms"].as_f64().unwrap() < ttft * 1000.0 / 3.0);
    // Manifest: measured, the launch command redacted, and no secret anywhere.
    let manifest = fs::read_to_string(ws.path().join("data/runs/truth/run.json")).unwrap();
    assert!(manifest.contains("sim serve --api-key <redacted> HF_TOKEN=<redacted>"), "{manifest}");
    assert!(manifest.contains("\"origin\": \"measured\""));
    assert!(manifest.contains("\"kv_budget_tokens\": 20000"));
    let page = fs::read_to_string(ws.path().join("public/runs/truth/index.html")).unwrap();
    assert!(page.contains("class=\"cell over-capacity\""));
    for e in walkdir::WalkDir::new(ws.path()) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let text = String::from_utf8_lossy(&fs::read(e.path()).unwrap()).into_owned();
            assert!(!text.contains("sk-live-123") && !text.contains("hf_secret"), "secret in {}", e.path().display());
        }
    }
}

#[test]
fn multi_token_chunks_are_counted_from_usage() {
    let _cpu = alone();
    let sim = SimArgs::new().steps(10, 0).flag("--tokens-per-chunk", 3).start();
    let ws = tempfile::tempdir().unwrap();
    assert_ok(&bench(
        ws.path(),
        &sim.url,
        // A 3 s window holds more requests than the usual 1.5 s: one late wake-up of the
        // engine's timer moves their median less.
        &["--contexts", "1k", "--concurrency", "2", "--run-id", "mtp", "--api", "completions", "--duration", "3s"],
    ));
    let cells = figures(ws.path(), "mtp");
    let f = &find(&cells, "decode", 1024, 2)["figures"];
    within(f["total_tps"].as_f64().unwrap(), 2.0 * 300.0, 0.01, "total tok/s with 3 tokens a chunk");
    // Per request: (last - first) / (tokens - 1), where the first chunk already brings 3
    // tokens: the truth for a request of k chunks is (tokens - 1) / ((k - 1) x 10 ms).
    let raw = cell(ws.path(), "mtp", "decode-1024-c2.json");
    let mut truth: Vec<f64> = request_rows(&raw)
        .iter()
        .filter(|r| r["chunks"].as_u64().unwrap() >= 2)
        .map(|r| (r["tokens"].as_f64().unwrap() - 1.0) / ((r["chunks"].as_f64().unwrap() - 1.0) * 0.010))
        .collect();
    truth.sort_by(|a, b| a.total_cmp(b));
    let n = truth.len();
    let median = if n % 2 == 1 { truth[n / 2] } else { (truth[n / 2 - 1] + truth[n / 2]) / 2.0 };
    within(f["per_request_tps"].as_f64().unwrap(), median, 0.01, "per request");
    assert_eq!(request_rows(&raw)[0]["token_source"], "usage");
}

#[test]
fn usage_only_at_the_end_is_not_credited_to_the_window_it_ends_in() {
    let _cpu = alone();
    // llama.cpp shapes: usage only in the final chunk, slots limit concurrency.
    let sim = SimArgs::new()
        .steps(8, 2)
        .flavor("llamacpp")
        .prefill_tps(5000)
        .slots(2)
        .max_model_len(4096)
        .flag("--tokens-per-chunk", 2)
        .start();
    let ws = tempfile::tempdir().unwrap();
    // Max output 100: requests finish inside the window again and again.
    let out = bench(
        ws.path(),
        &sim.url,
        &["--contexts", "1k", "--concurrency", "1,2,4", "--run-id", "llama", "--max-output", "100"],
    );
    assert_ok(&out);
    let cells = figures(ws.path(), "llama");
    for c in [1u64, 2] {
        let x = find(&cells, "decode", 1024, c);
        let per = 2.0 / step(8.0, 2.0, c as f64);
        // Each stream restarts after 100 tokens (a short prefill gap), so allow 3%.
        within(x["figures"]["total_tps"].as_f64().unwrap(), per * c as f64, 0.03, &format!("1K x {c} total"));
        assert!(x["figures"]["completed"].as_u64().unwrap() > 0);
    }
    // /tokenize counts the bare text, usage adds the chat template (as llama.cpp does):
    // the prompt is sized again until the real request confirms 1,024 tokens.
    let p = find(&cells, "prefill", 1024, 1);
    let prompt = p["prompt_tokens"].as_f64().unwrap();
    within(prompt, 1024.0, 0.004, "prompt confirmed by usage");
    // The re-sized prompt shares no prefix with the first one: its sample is a real prefill
    // (prompt / 5,000 tok/s + one step, about 215 ms), not a cache hit (about 11 ms).
    within(
        p["figures"]["ttft_ms"].as_f64().unwrap(),
        (prompt / 5000.0 + step(8.0, 2.0, 1.0)) * 1000.0,
        0.05,
        "re-sized prefill TTFT",
    );
    let oc = find(&cells, "decode", 1024, 4);
    assert_eq!(oc["status"], "over_capacity");
    assert_eq!(oc["over_capacity"]["rule"], "C > parallel slots");
    let raw = cell(ws.path(), "llama", "decode-1024-c2.json");
    assert_eq!(request_rows(&raw)[0]["token_source"], "chunks_checked_by_final_usage");
    assert_eq!(raw["measurement"]["gauge_source"], "llamacpp:requests_processing");
    let m: Value =
        serde_json::from_str(&fs::read_to_string(ws.path().join("data/runs/llama/run.json")).unwrap()).unwrap();
    assert_eq!(m["engine"]["name"], "llama.cpp");
    assert_eq!(m["settings"]["kv_budget_tokens"], 2 * 4096);
}

#[test]
fn no_usage_falls_back_to_chunks_and_says_so_and_reasoning_counts() {
    let _cpu = alone();
    let sim =
        SimArgs::new().steps(10, 0).flag("--usage", "none").flag("--reasoning-tokens", 100000).flavor("sglang").start();
    let ws = tempfile::tempdir().unwrap();
    assert_ok(&bench(
        ws.path(),
        &sim.url,
        &["--contexts", "1k", "--concurrency", "1", "--run-id", "nousage", "--kv-budget", "100000"],
    ));
    let cells = figures(ws.path(), "nousage");
    let x = find(&cells, "decode", 1024, 1);
    within(x["figures"]["total_tps"].as_f64().unwrap(), 100.0, 0.01, "reasoning tokens counted like content");
    assert!(x["warnings"].as_array().unwrap().iter().any(|w| w["code"] == "chunk_count_fallback"), "{x}");
}

#[test]
fn a_looping_output_makes_a_looped_cell() {
    let _cpu = shared();
    let sim = SimArgs::new()
        .steps(2, 0)
        .flag("--loop-after", 20)
        .flag("--loop-context", 2048)
        .flag("--loop-min-running", 2)
        .start();
    let ws = tempfile::tempdir().unwrap();
    let out = bench(
        ws.path(),
        &sim.url,
        &["--contexts", "1k,2k", "--concurrency", "1,2", "--run-id", "loop", "--loop-min-chars", "600"],
    );
    assert_ok(&out);
    let looped = cell(ws.path(), "loop", "decode-2048-c2.json");
    assert_eq!(looped["status"], "looped", "{looped}");
    let f = &looped["loop_finding"];
    assert_eq!(f["period_chars"], "and the story goes around again. ".chars().count());
    assert!(f["repeated_chars"].as_u64().unwrap() >= 600);
    for name in ["decode-2048-c1.json", "decode-1024-c2.json"] {
        assert_eq!(cell(ws.path(), "loop", name)["status"], "valid", "{name}");
    }
    assert_ok(&site_in(ws.path(), &["build"]));
    let page = fs::read_to_string(ws.path().join("public/runs/loop/index.html")).unwrap();
    assert!(page.contains("<td class=\"cell looped\"><a href=\"../../cell/index.html#loop/decode-2k-x2\">Looped</a>"));
}

#[test]
fn cells_drain_before_the_next_starts() {
    let _cpu = shared();
    // The server keeps a cancelled request running for 800 ms; without the drain the next
    // cell's streams would overlap the last cell's and more than 2 would run at once.
    let sim = SimArgs::new().steps(5, 0).flag("--cancel-delay-ms", 800).start();
    let ws = tempfile::tempdir().unwrap();
    assert_ok(&bench(
        ws.path(),
        &sim.url,
        &[
            "--contexts",
            "1k",
            "--concurrency",
            "2,2",
            "--prefill-contexts",
            "1k",
            "--run-id",
            "drain",
            "--concurrency",
            "1,2",
        ],
    ));
    let stats = sim.get_json("/sim/stats");
    assert_eq!(stats["max_running"], 2, "{stats}");
    assert!(stats["disconnects"].as_u64().unwrap() >= 3, "{stats}");
    let c1 = cell(ws.path(), "drain", "decode-1024-c1.json");
    assert_eq!(c1["status"], "valid");
}

fn faulted(fault: &str, sim: SimArgs) -> (tempfile::TempDir, Value, Value) {
    let sim = sim.flag("--fault", fault).flag("--fault-context", 2048).steps(5, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let out = bench(
        ws.path(),
        &sim.url,
        &[
            "--contexts",
            "1k,2k",
            "--concurrency",
            "1",
            "--prefill-contexts",
            "1k",
            "--run-id",
            "f",
            "--stall-timeout",
            "1s",
        ],
    );
    assert_ok(&out);
    let bad = cell(ws.path(), "f", "decode-2048-c1.json");
    let good = cell(ws.path(), "f", "decode-1024-c1.json");
    assert_eq!(good["status"], "valid", "the run goes on around a failed cell");
    assert_eq!(bad["status"], "error", "{fault}: {bad}");
    (ws, bad["error"].clone(), good)
}

#[test]
fn http_errors_become_error_cells_with_the_servers_message() {
    let _cpu = shared();
    let (_, e, _) = faulted("http500", SimArgs::new());
    assert_eq!(e["http_status"], 500);
    assert!(e["message"].as_str().unwrap().contains("simulated internal error"), "{e}");
    let (_, e, _) = faulted("http503", SimArgs::new().flavor("sglang"));
    assert_eq!(e["http_status"], 503);
    assert!(e["message"].as_str().unwrap().contains("The request queue is full"), "{e}");
    let (_, e, _) = faulted("http400", SimArgs::new());
    assert_eq!(e["http_status"], 400);
}

#[test]
fn stream_faults_become_error_cells() {
    let _cpu = shared();
    let (_, e, _) = faulted("midstream-error", SimArgs::new());
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("server error mid-stream: internal_error: simulated failure mid-stream"),
        "{e}"
    );
    let (_, e, _) = faulted("malformed", SimArgs::new());
    assert!(e["message"].as_str().unwrap().starts_with("malformed stream"), "{e}");
    let (_, e, _) = faulted("stall", SimArgs::new());
    assert!(e["message"].as_str().unwrap().contains("stream stalled"), "{e}");
    // No response head at all: stalled just the same, not a hung run.
    let (_, e, _) = faulted("silent-head", SimArgs::new());
    assert!(e["message"].as_str().unwrap().contains("no response within 1 s (--stall-timeout)"), "{e}");
    let (ws, e, _) = faulted("reset", SimArgs::new());
    assert_eq!(e["message"], "the server closed the stream before it finished", "{e}");
    // Error cells publish as such.
    assert_ok(&site_in(ws.path(), &["build"]));
    let page = fs::read_to_string(ws.path().join("public/runs/f/index.html")).unwrap();
    assert!(page.contains("class=\"cell error\""));
}

#[test]
fn too_long_prompts_and_a_vanished_server_are_errors_not_crashes() {
    let _cpu = shared();
    // The model holds 3,000 tokens: 4K + 512 is planned Over capacity. The server exits
    // after 3 s, in the middle of the first decode window (connection reset), and the later
    // 2.5K context then cannot connect at all: both are error cells, and the run finishes.
    let sim = SimArgs::new().steps(5, 0).max_model_len(3000).flag("--lifetime-s", 3).start();
    let ws = tempfile::tempdir().unwrap();
    let out = bench(
        ws.path(),
        &sim.url,
        &[
            "--contexts",
            "1k,4k",
            "--concurrency",
            "1",
            "--prefill-contexts",
            "1k,2.5k,4k",
            "--run-id",
            "gone",
            "--duration",
            "4s",
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        cell(ws.path(), "gone", "decode-4096-c1.json")["over_capacity"]["rule"],
        "context + max output > max model length"
    );
    let cut = cell(ws.path(), "gone", "decode-1024-c1.json");
    assert_eq!(cut["status"], "error", "{cut}");
    let late = cell(ws.path(), "gone", "prefill-2560.json");
    assert_eq!(late["status"], "error", "{late}");
    assert!(late["error"]["message"].as_str().unwrap().contains("connecting to"), "{late}");
    // A prompt longer than the model is planned Over capacity, as decode cells are, and
    // never sent (before, it was sent and came back as the server's 400: an error cell).
    let sim = SimArgs::new().max_model_len(3000).start();
    let out = bench(
        ws.path(),
        &sim.url,
        &["--contexts", "1k", "--concurrency", "1", "--prefill-contexts", "2k,4k", "--run-id", "long"],
    );
    assert_ok(&out);
    let planned = cell(ws.path(), "long", "prefill-4096.json");
    assert_eq!(planned["status"], "over_capacity", "{planned}");
    assert_eq!(planned["over_capacity"]["rule"], "context + max output > max model length");
    assert_eq!(planned["over_capacity"]["required_tokens"], 4097);
    assert_eq!(cell(ws.path(), "long", "prefill-2048.json")["status"], "valid");
}

#[test]
fn resume_runs_only_the_missing_cells() {
    let _cpu = shared();
    let sim = SimArgs::new().steps(5, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let args = ["--contexts", "1k", "--concurrency", "1,2", "--run-id", "r"];
    assert_ok(&bench(ws.path(), &sim.url, &args));
    let text = |name: &str| common::sim::cell_text(ws.path(), "r", name);
    let kept = text("decode-1024-c1.json");
    common::sim::remove_cell(ws.path(), "r", "decode-1024-c2.json");
    // Without --resume an existing run is never overwritten.
    let kept_tree = common::tree(&ws.path().join("data"));
    let out = bench(ws.path(), &sim.url, &args);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("pass --resume"), "{}", stderr(&out));
    assert_eq!(common::tree(&ws.path().join("data")), kept_tree, "a refused run writes nothing");
    let before = sim.get_json("/sim/stats")["requests"].as_u64().unwrap();
    let mut resumed: Vec<&str> = args.to_vec();
    resumed.push("--resume");
    let out = bench(ws.path(), &sim.url, &resumed);
    assert_ok(&out);
    assert!(stdout(&out).contains("Wrote 1 cells") && stdout(&out).contains("2 kept from before"), "{}", stdout(&out));
    assert_eq!(text("decode-1024-c1.json"), kept, "a finished cell was rewritten");
    assert!(common::sim::has_cell(ws.path(), "r", "decode-1024-c2.json"));
    assert!(sim.get_json("/sim/stats")["requests"].as_u64().unwrap() > before);
    // A resume with another matrix is refused.
    let before = common::tree(&ws.path().join("data"));
    let out = bench(ws.path(), &sim.url, &["--contexts", "2k", "--concurrency", "1,2", "--run-id", "r", "--resume"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("matrix settings differ"), "{}", stderr(&out));
    assert_eq!(common::tree(&ws.path().join("data")), before, "a refused resume writes nothing");
}

#[test]
fn ctrl_c_keeps_finished_cells_and_leaves_the_run_resumable() {
    let _cpu = shared();
    let sim = SimArgs::new().steps(5, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_site"))
        .current_dir(ws.path())
        .args([
            "bench",
            "--endpoint",
            &sim.url,
            "--gpu",
            "Sim GPU",
            "--max-output",
            "512",
            "--contexts",
            "1k",
            "--concurrency",
            "1,2,4",
            "--run-id",
            "int",
        ])
        .args(["--duration", "3s", "--warmup-hold", "0.2s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first decode cell to be written, then interrupt the second.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !common::sim::has_cell(ws.path(), "int", "decode-1024-c1.json") {
        assert!(std::time::Instant::now() < deadline, "no cell written");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Interrupt while the second cell (2 streams) runs on the server.
    while sim.get_json("/sim/stats")["running"].as_u64() != Some(2) {
        assert!(std::time::Instant::now() < deadline, "the second cell never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--resume --run-id int"), "{}", stderr(&out));
    let has = |name: &str| common::sim::has_cell(ws.path(), "int", name);
    assert!(has("prefill-1024.json") && has("decode-1024-c1.json"));
    assert!(!has("decode-1024-c2.json"), "the interrupted cell must not be written");
    let out = bench(
        ws.path(),
        &sim.url,
        &["--contexts", "1k", "--concurrency", "1,2,4", "--run-id", "int", "--resume", "--duration", "3s"],
    );
    assert_ok(&out);
    assert!(has("decode-1024-c4.json"));
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let _cpu = shared();
    let sim = SimArgs::new().kv_tokens(20000).max_model_len(32768).start();
    let ws = tempfile::tempdir().unwrap();
    let out = bench(ws.path(), &sim.url, &["--contexts", "4k,16k", "--concurrency", "1,4", "--dry-run"]);
    assert_ok(&out);
    let plan = stdout(&out);
    assert!(plan.contains("Plan: 6 cells, 5 to run, 1 Over capacity"), "{plan}");
    assert!(plan.contains("run            decode 4K x 4"), "{plan}");
    assert!(
        plan.contains(
            "over capacity  decode 16K x 4: C x (context + max output) > KV budget (needs 67776, limit 19984)"
        ),
        "{plan}"
    );
    assert!(!ws.path().join("data").exists());
}

#[test]
fn bad_endpoints_and_missing_facts_fail_clearly() {
    let _cpu = shared();
    let ws = tempfile::tempdir().unwrap();
    let out = bench(ws.path(), "ftp://example.invalid", &[]);
    assert!(
        stderr(&out).contains("--endpoint: expected an address starting with http:// or https://"),
        "{}",
        stderr(&out)
    );
    // A key in the address's query, user info or port is refused and never printed.
    for url in [
        "http://127.0.0.1:9?api_key=sk-ENDPOINTKEY42",
        "http://admin:sk-ENDPOINTKEY42@127.0.0.1:9",
        "http://127.0.0.1:sk-ENDPOINTKEY42",
    ] {
        let out = bench(ws.path(), url, &[]);
        assert!(!out.status.success());
        let both = format!("{}{}", stdout(&out), stderr(&out));
        assert!(both.contains("--endpoint: ") && !both.contains("ENDPOINTKEY42"), "{url}: {both}");
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let out = bench(ws.path(), &format!("http://127.0.0.1:{port}"), &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("connecting to"), "{}", stderr(&out));
    // A remote server's hardware cannot be detected: refused before any request.
    let out = Command::new(env!("CARGO_BIN_EXE_site"))
        .current_dir(ws.path())
        .args(["bench", "--endpoint", "http://10.255.255.1:8000", "--contexts", "1k", "--concurrency", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("say what the server runs on"), "{}", stderr(&out));
    assert!(stderr(&out).contains("is not on this machine"), "{}", stderr(&out));
    // A server on this machine: its hardware is detected. With no GPU tool on the PATH, the
    // CPU from /proc/cpuinfo; with an nvidia-smi (here one that prints a fixture), the GPUs.
    let sim = SimArgs::new().start();
    let tools = tempfile::tempdir().unwrap();
    let detect = |run_id: &str| {
        Command::new(env!("CARGO_BIN_EXE_site"))
            .current_dir(ws.path())
            .env("PATH", tools.path())
            .args(["bench", "--endpoint", &sim.url, "--contexts", "1k", "--concurrency", "1", "--run-id", run_id])
            .args(FAST)
            .args(["--max-output", "32"])
            .output()
            .unwrap()
    };
    let out = detect("detected");
    assert_ok(&out);
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap();
    let model = cpuinfo.lines().find(|l| l.starts_with("model name")).unwrap().split_once(':').unwrap().1.trim();
    let cores = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(ws.path().join("data/runs/detected/run.json")).unwrap()).unwrap();
    assert_eq!(manifest["hardware"]["device"], format!("{model} ({cores} cores)"));
    assert_eq!(manifest["hardware"]["kind"], "CPU");
    let fake = tools.path().join("nvidia-smi");
    let fixture = common::fixture("hardware/nvidia-smi-gpus.csv");
    fs::write(&fake, format!("#!/bin/sh\nexec /bin/cat '{}'\n", fixture.display())).unwrap();
    fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = detect("gpus");
    assert_ok(&out);
    assert!(stderr(&out).contains("hardware (from nvidia-smi): 4 x H200, 140 GB each"), "{}", stderr(&out));
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(ws.path().join("data/runs/gpus/run.json")).unwrap()).unwrap();
    assert_eq!(manifest["hardware"]["device"], "H200");
    assert_eq!(manifest["hardware"]["count"], 4);
    assert_eq!(manifest["hardware"]["memory_gb"], 140.0);
}

#[test]
fn a_server_that_over_reports_is_flagged_and_llama_cpp_timings_are_set_beside_ours() {
    let _cpu = shared();
    // The counter over-reports by 10%: every measured cell says client and server disagree.
    let skewed = SimArgs::new().flag("--counter-skew", "1.1").step_ms(8).start();
    let ws = tempfile::tempdir().unwrap();
    assert_ok(&bench(ws.path(), &skewed.url, &["--contexts", "1k", "--concurrency", "1,4", "--run-id", "skewed"]));
    let cells = figures(ws.path(), "skewed");
    for c in [1u64, 4] {
        let cell = find(&cells, "decode", 1024, c);
        let f = &cell["figures"];
        let gap = f["total_tps"].as_f64().unwrap() / f["server_total_tps"].as_f64().unwrap() - 1.0;
        assert!((gap + 0.0909).abs() < 0.01, "1K x {c}: ours against the server's {:.2}%", gap * 100.0);
        let codes: Vec<&str> =
            cell["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect();
        assert_eq!(codes, ["server_disagrees"], "1K x {c}");
    }
    let page = fs::read_to_string(ws.path().join("public/runs/skewed/index.html")).unwrap();
    assert!(page.contains("<h2>Client against server</h2>"));
    assert!(text_of(&page).contains("client and server disagree: total tok/s against the server's token counter"));
    let evidence = evidence_cell(ws.path(), "skewed", "decode-1k-x4");
    let formulas = &evidence["reps"][0]["formulas"];
    assert!(formulas.as_array().unwrap().iter().any(|f| f[0] == "Server tok/s"), "{formulas}");

    // llama.cpp counts tokens only when a request ends: its per-request timings are the check.
    let llama = SimArgs::new().flavor("llamacpp").slots(4).step_ms(8).start();
    let ws = tempfile::tempdir().unwrap();
    assert_ok(&bench(
        ws.path(),
        &llama.url,
        &["--contexts", "1k", "--concurrency", "2", "--max-output", "16", "--run-id", "llama"],
    ));
    let cells = figures(ws.path(), "llama");
    let f = &find(&cells, "decode", 1024, 2)["figures"];
    assert!(f["server_total_tps"].is_null(), "llama.cpp has no counter to read mid-window");
    let (ours, server) =
        (f["finished_per_request_tps"].as_f64().unwrap(), f["server_per_request_tps"].as_f64().unwrap());
    within(ours, server, 0.02, "finished requests: ours against llama.cpp's timings");
}

/// A private CA and a certificate it signed for 127.0.0.1 and localhost, as PEM files in
/// `dir`: (ca.pem, server.pem, server.key).
fn private_ca(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "Speed Matrix test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    let paths = (dir.join("ca.pem"), dir.join("server.pem"), dir.join("server.key"));
    fs::write(&paths.0, ca_cert.pem()).unwrap();
    fs::write(&paths.1, leaf_cert.pem()).unwrap();
    fs::write(&paths.2, leaf_key.serialize_pem()).unwrap();
    paths
}

#[test]
fn https_servers_are_checked_trusted_with_their_ca_or_accepted_insecurely_and_headers_stay_secret() {
    let _cpu = shared();
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = private_ca(certs.path());
    let (cert, key) = (cert.to_str().unwrap().to_string(), key.to_str().unwrap().to_string());
    let sim = SimArgs::new().tls(&cert, &key).flag("--require-header", "x-tenant: team-secret-77").start();
    assert!(sim.url.starts_with("https://"), "{}", sim.url);
    let ws = tempfile::tempdir().unwrap();
    let run = |extra: &[&str], header: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_site"));
        cmd.current_dir(ws.path())
            .args(["bench", "--endpoint", &sim.url, "--gpu", "Sim GPU", "--gpu-count", "1", "--max-output", "64"])
            .args(FAST)
            .args(["--contexts", "1k", "--concurrency", "2", "--header-env", "TENANT_HEADER"])
            .args(extra)
            .env_remove("TENANT_HEADER");
        if let Some(h) = header {
            cmd.env("TENANT_HEADER", h);
        }
        cmd.output().unwrap()
    };
    // Refused without the CA: the certificate is not one the usual roots trust.
    let out = run(&["--run-id", "untrusted"], Some("X-Tenant: team-secret-77"));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("TLS handshake with https://127.0.0.1:"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--ca-cert FILE"), "{}", stderr(&out));
    // Accepted with the CA, the gateway's header sent from the environment.
    let ca = ca.to_str().unwrap();
    let out = run(&["--run-id", "trusted", "--ca-cert", ca], Some("X-Tenant: team-secret-77"));
    assert_ok(&out);
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(ws.path().join("data/runs/trusted/run.json")).unwrap()).unwrap();
    assert_eq!(manifest["server_access"]["tls"], "private_ca");
    assert_eq!(manifest["server_access"]["header_names"], serde_json::json!(["x-tenant"]));
    // Accepted with a warning under --insecure, and the run says so.
    let out = run(&["--run-id", "insecure", "--insecure"], Some("X-Tenant: team-secret-77"));
    assert_ok(&out);
    assert!(stderr(&out).contains("warning: --insecure"), "{}", stderr(&out));
    let manifest = fs::read_to_string(ws.path().join("data/runs/insecure/run.json")).unwrap();
    assert!(manifest.contains("\"tls\": \"not_verified\""), "{manifest}");
    // Without the header the gateway refuses; an unset variable is named.
    let out = run(&["--run-id", "wrong", "--ca-cert", ca], Some("X-Tenant: team-wrong-99"));
    assert!(stderr(&out).contains("/v1/models answered 401"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("team-wrong-99"), "a header value was shown: {}", stderr(&out));
    let out = run(&["--run-id", "unset", "--ca-cert", ca], None);
    assert!(stderr(&out).contains("--header-env TENANT_HEADER: the environment variable TENANT_HEADER is not set"));
    // The page says how the server was reached; the header's value is nowhere.
    assert_ok(&site_in(ws.path(), &["build"]));
    let page = fs::read_to_string(ws.path().join("public/runs/insecure/index.html")).unwrap();
    assert!(page.contains("https, certificate not checked (--insecure)"), "{page}");
    for e in walkdir::WalkDir::new(ws.path()) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let text = String::from_utf8_lossy(&fs::read(e.path()).unwrap()).into_owned();
            assert!(!text.contains("team-secret-77"), "the header value is in {}", e.path().display());
        }
    }
}

/// A self-signed certificate as `openssl req -x509 -addext subjectAltName=...` makes it
/// (CA:TRUE), for `names`, valid from `days_from` to `days_to` days from now: (cert, key).
fn self_signed(dir: &Path, names: &[&str], days_from: i64, days_to: i64) -> (String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let at = |days: i64| rcgen::date_time_ymd(1970, 1, 1) + time::Duration::seconds(now + days * 86_400);
    params.not_before = at(days_from);
    params.not_after = at(days_to);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let tag = format!("{}-{days_from}-{days_to}", names.join("_"));
    let (c, k) = (dir.join(format!("{tag}.pem")), dir.join(format!("{tag}.key")));
    fs::write(&c, cert.pem()).unwrap();
    fs::write(&k, key.serialize_pem()).unwrap();
    (c.to_str().unwrap().to_string(), k.to_str().unwrap().to_string())
}

#[test]
fn a_self_signed_server_certificate_listed_in_ca_cert_is_trusted_with_its_name_and_dates_checked() {
    let _cpu = shared();
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let bench = |cert: &str, key: &str, run_id: &str| {
        let sim = SimArgs::new().tls(cert, key).start();
        Command::new(env!("CARGO_BIN_EXE_site"))
            .current_dir(ws.path())
            .args(["bench", "--endpoint", &sim.url, "--gpu", "Sim GPU", "--gpu-count", "1", "--max-output", "16"])
            .args(FAST)
            .args(["--contexts", "1k", "--concurrency", "1", "--run-id", run_id, "--ca-cert", cert])
            .output()
            .unwrap()
    };
    let (cert, key) = self_signed(dir.path(), &["127.0.0.1"], -1, 30);
    let out = bench(&cert, &key, "pinned");
    assert_ok(&out);
    let manifest = fs::read_to_string(ws.path().join("data/runs/pinned/run.json")).unwrap();
    assert!(manifest.contains("\"tls\": \"private_ca\""), "{manifest}");
    // The name and the dates are still checked.
    let (cert, key) = self_signed(dir.path(), &["example.com"], -1, 30);
    let out = bench(&cert, &key, "other-name");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("NotValidForName"), "{}", stderr(&out));
    let (cert, key) = self_signed(dir.path(), &["127.0.0.1"], -30, -1);
    let out = bench(&cert, &key, "expired");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Expired"), "{}", stderr(&out));
}

#[test]
fn telemetry_is_sampled_per_cell_and_a_machine_without_the_tool_goes_on_without_it() {
    let _cpu = shared();
    let sim = SimArgs::new().step_ms(8).start();
    let ws = tempfile::tempdir().unwrap();
    let tools = tempfile::tempdir().unwrap();
    let with_path = |run_id: &str| {
        Command::new(env!("CARGO_BIN_EXE_site"))
            .current_dir(ws.path())
            .env("PATH", tools.path())
            .args(["bench", "--endpoint", &sim.url, "--gpu", "Sim GPU", "--gpu-count", "2", "--max-output", "512"])
            .args(FAST)
            .args(["--contexts", "1k", "--concurrency", "2", "--telemetry", "nvidia-smi", "--run-id", run_id])
            .output()
            .unwrap()
    };
    // No nvidia-smi here: said, and the run goes on.
    let out = with_path("no-tool");
    assert_ok(&out);
    assert!(stderr(&out).contains("telemetry: nvidia-smi cannot run here"), "{}", stderr(&out));
    // An nvidia-smi that replays a recorded two-GPU trace, a moment every 0.2 s.
    let trace = common::fixture("hardware/nvidia-smi-telemetry.csv");
    let fake = tools.path().join("nvidia-smi");
    fs::write(&fake, format!("#!/bin/sh\nwhile :; do /bin/cat '{}'; /bin/sleep 0.2; done\n", trace.display())).unwrap();
    fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = with_path("sampled");
    assert_ok(&out);
    assert!(stderr(&out).contains("telemetry: sampling with nvidia-smi"), "{}", stderr(&out));
    let c = cell(ws.path(), "sampled", "decode-1024-c2.json");
    let samples = c["measurement"]["telemetry"].as_array().unwrap();
    // Sampled once a second, kept at most once per device per half second (the tool's own
    // timing jitters): a 1.5 s window holds 2 to 4 samples of each of the 2 devices.
    assert!((4..=8).contains(&samples.len()), "{} samples in a 1.5 s window", samples.len());
    let cells = figures(ws.path(), "sampled");
    let f = &find(&cells, "decode", 1024, 2)["figures"];
    let (avg, peak) = (f["avg_power_w"].as_f64().unwrap(), f["peak_power_w"].as_f64().unwrap());
    // Each moment's power summed over the devices (a moment starts again at device 0), read
    // here from the cell's own samples: the figures are their mean and their peak.
    let mut moments: Vec<f64> = Vec::new();
    let mut last: Option<u64> = None;
    for s in samples {
        let device = s["device"].as_u64().unwrap();
        if last.is_none_or(|l| device <= l) {
            moments.push(0.0);
        }
        last = Some(device);
        *moments.last_mut().unwrap() += s["power_w"].as_f64().unwrap();
    }
    let mean = moments.iter().sum::<f64>() / moments.len() as f64;
    let max = moments.iter().copied().fold(f64::MIN, f64::max);
    // The download keeps six significant digits.
    let close = |a: f64, b: f64| ((a - b) / b).abs() < 1e-5;
    assert!(close(avg, mean) && close(peak, max), "avg {avg} peak {peak}, moments {moments:?}");
    // And every moment is one of the trace's (800-1220 W over the two devices).
    assert!(moments.iter().all(|m| (800.0..=1220.0).contains(m)), "{moments:?}");
    let j = f["joules_per_token"].as_f64().unwrap();
    assert!(close(j, avg / f["total_tps"].as_f64().unwrap()), "{j} J a token");
    let page = fs::read_to_string(ws.path().join("public/runs/sampled/index.html")).unwrap();
    assert!(page.contains("<h2>Energy per output token</h2>"));
    assert!(!fs::read_to_string(ws.path().join("public/runs/no-tool/index.html"))
        .unwrap()
        .contains("Energy per output token"));
}

#[test]
fn a_flooding_telemetry_tool_is_kept_to_the_sampling_rate_and_absurd_readings_are_dropped() {
    let _cpu = shared();
    let sim = SimArgs::new().step_ms(8).start();
    let ws = tempfile::tempdir().unwrap();
    let tools = tempfile::tempdir().unwrap();
    // A 64 MB line without a newline, then lines as fast as `yes` prints them, every other
    // one reading 1e308 watts.
    let fake = tools.path().join("nvidia-smi");
    fs::write(
        &fake,
        "#!/bin/sh\n/usr/bin/head -c 67108864 /dev/zero | /usr/bin/tr '\\0' x\nexec /usr/bin/yes '0, 300.5, 50, 1000, 1500\n1, 1e308, 50, 1000, 1500'\n",
    )
    .unwrap();
    fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_site"))
        .current_dir(ws.path())
        .env("PATH", tools.path())
        .args(["bench", "--endpoint", &sim.url, "--gpu", "Sim GPU", "--gpu-count", "2", "--max-output", "512"])
        .args(FAST)
        .args(["--contexts", "1k", "--concurrency", "2", "--telemetry", "nvidia-smi", "--run-id", "flood"])
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(stderr(&out).contains("device power (W): dropped an out-of-range reading (1e308)"), "{}", stderr(&out));
    let size = fs::metadata(ws.path().join("data/runs/flood/cells.jsonl.gz")).unwrap().len();
    assert!(size < 200_000, "the run's cells are {size} bytes");
    let c = cell(ws.path(), "flood", "decode-1024-c2.json");
    let samples = c["measurement"]["telemetry"].as_array().unwrap();
    let of = |d: u64| samples.iter().filter(|s| s["device"] == d).collect::<Vec<_>>();
    let (good, absurd) = (of(0), of(1));
    assert!((2..=4).contains(&good.len()), "{} samples of device 0 in a 1.5 s window", good.len());
    assert_eq!(good.len() + absurd.len(), samples.len(), "{samples:?}");
    // Device 0 always read 300.5 W: kept; device 1 always 1e308: dropped, the rest kept.
    assert!(good.iter().all(|s| s["power_w"] == 300.5), "{samples:?}");
    assert!(!absurd.is_empty() && absurd.iter().all(|s| s["power_w"].is_null()), "{samples:?}");
    assert_ok(&site_in(ws.path(), &["check"]));
}

#[test]
fn a_server_that_never_finishes_the_tls_handshake_does_not_hang_the_run() {
    let _cpu = shared();
    // Takes the connection, reads nothing, answers nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Held until the test process ends.
    std::thread::spawn(move || {
        let conns: Vec<_> = listener.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(60));
        drop(conns);
    });
    let ws = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = bench(
        ws.path(),
        &format!("https://127.0.0.1:{port}"),
        &["--contexts", "1k", "--concurrency", "1", "--insecure"],
    );
    // Whichever gives up first (the handshake's or the request's 10 s), the run ends.
    assert!(!out.status.success());
    assert!(stderr(&out).contains(&format!("discovering https://127.0.0.1:{port}")), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(14), "took {:?}", started.elapsed());
}

/// A `--model` the server does not list is measured with a warning that names what it lists.
#[test]
fn a_model_the_server_does_not_list_is_named_in_a_warning() {
    let sim = SimArgs::new().steps(5, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let out = bench(
        ws.path(),
        &sim.url,
        &["--contexts", "256", "--concurrency", "1", "--model", "not-served-7b", "--run-id", "m"],
    );
    let err = stderr(&out);
    assert!(err.contains("warning: the server does not list --model not-served-7b (it lists "), "{err}");
}

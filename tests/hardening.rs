//! Hostile input, one test per class: secrets, symlinks and special files, script links, CSV
//! formulas, serve, concurrent writers, resume after an outage, nothing-measured cells,
//! import checks, file modes, unbounded numbers, bad durations, hostile servers.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::rogue::{bench_args, completion, discovery, good_stream, Reply, Rogue};
use common::serve;
use common::*;

const SECRET: &str = "sk-live-Zq9secretKEY";

fn measured() -> Workspace {
    Workspace::from_fixture("valid/measured")
}

const RUN: &str = "data/runs/tiny-vllm-l4";

// 1. Secrets -----------------------------------------------------------------------------

#[test]
fn a_server_echoing_the_key_never_gets_it_stored_or_printed() {
    let server = Rogue::start(|req| {
        if let Some(r) = discovery(req) {
            return r;
        }
        let auth = req.header("authorization").unwrap_or("").to_string();
        let body = format!(
            "{{\"error\":{{\"message\":\"invalid key {auth} (raw {})\",\"type\":\"auth\"}}}}",
            auth.trim_start_matches("Bearer ")
        );
        Reply::Full(401, "application/json", body.into_bytes())
    });
    let ws = tempfile::tempdir().unwrap();
    let cmd = format!("vllm serve m \\\n --api-key {SECRET} --port 8000");
    let args = bench_args(&server.url, &["--run-id", "echo", "--launch-command", &cmd]);
    let out = site_env(ws.path(), &args, &[("OPENAI_API_KEY", SECRET)]);
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    assert!(printed.contains("answered 401"), "{printed}");
    assert!(!printed.contains(SECRET), "{printed}");
    let written = all_files_text(&ws.path().join("data"));
    assert!(written.contains("invalid key Bearer <redacted> (raw <redacted>)"), "{written}");
    assert!(!written.contains(SECRET));
    // Only the secret word changes: the line continuation is kept as written.
    assert!(written.contains(r#""launch_command": "vllm serve m \\\n --api-key <redacted> --port 8000""#), "{written}");
    assert_ok(&site_in(ws.path(), &["build"]));
    assert!(!all_files_text(&ws.path().join("public")).contains(SECRET));
}

#[test]
fn import_redacts_every_shell_form_of_a_secret() {
    let ws = tempfile::tempdir().unwrap();
    let file = fixture("peer/llm-inference-bench-0.4.18-llamacpp-smollm2.json");
    let cmd = format!(
        "bash -c \"HF_TOKEN={SECRET}1 vllm serve m\" && vllm serve m --api-key '{SECRET}2 x'\t--hf-token={SECRET}3 -H 'Authorization: Bearer {SECRET}4' --url http://u:{SECRET}5@h/v1 --tp 2"
    );
    let out = site_in(
        ws.path(),
        &["import", file.to_str().unwrap(), "--run-id", "r", "--gpu", "G", "--launch-command", &cmd],
    );
    assert_ok(&out);
    let manifest = fs::read_to_string(ws.path().join("data/runs/r/run.json")).unwrap();
    assert!(!manifest.contains(SECRET), "{manifest}");
    for kept in
        ["vllm serve m", "--tp 2", "--hf-token=<redacted>", "Authorization: <redacted>", "http://u:<redacted>@h/v1"]
    {
        assert!(manifest.contains(kept), "{kept} missing: {manifest}");
    }
}

// 2. Symlinks, special files, skipped files, size ------------------------------------------

#[test]
fn symlinked_or_special_data_files_are_refused_with_their_path() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.md"), "TOP SECRET").unwrap();
    type MakeBad<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: Vec<(&str, MakeBad)> = vec![
        (
            "notes.md",
            Box::new(|run: &Path| {
                let _ = fs::remove_file(run.join("notes.md"));
                std::os::unix::fs::symlink(outside.path().join("secret.md"), run.join("notes.md")).unwrap()
            }),
        ),
        (
            "run.json",
            Box::new(|run: &Path| {
                fs::rename(run.join("run.json"), run.join("real.json")).unwrap();
                std::os::unix::fs::symlink(run.join("real.json"), run.join("run.json")).unwrap();
            }),
        ),
        (
            "prefill-8192.json",
            Box::new(|run: &Path| {
                let c = run.join("cells/prefill-8192.json");
                fs::rename(&c, run.join("p.json")).unwrap();
                std::os::unix::fs::symlink(run.join("p.json"), &c).unwrap();
            }),
        ),
        (
            "fifo.json",
            Box::new(|run: &Path| {
                assert!(Command::new("mkfifo").arg(run.join("cells/fifo.json")).status().unwrap().success());
            }),
        ),
        (
            "cells",
            Box::new(|run: &Path| {
                fs::rename(run.join("cells"), run.join("real-cells")).unwrap();
                std::os::unix::fs::symlink(run.join("real-cells"), run.join("cells")).unwrap();
            }),
        ),
    ];
    for (name, make) in cases {
        let ws = measured();
        make(&ws.path().join(RUN));
        let out = ws.site(&["check"]);
        assert!(!out.status.success(), "{name}: check passed");
        let err = stderr(&out);
        assert!(err.contains(name), "{name}: {err}");
        let why = if name == "fifo.json" { "FIFO" } else { "symlink" };
        assert!(err.contains(why), "{name}: {err}");
        assert!(!ws.site(&["build"]).status.success());
        assert!(!ws.path().join("public").exists());
    }
    // Pages and compare.json too.
    let ws = measured();
    fs::create_dir_all(ws.path().join("data/pages")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), ws.path().join("data/pages/evil.md")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), ws.path().join("data/compare.json")).unwrap();
    let err = stderr(&ws.site(&["check"]));
    assert!(err.contains("pages/evil.md: a symlink") && err.contains("compare.json: a symlink"), "{err}");
}

#[test]
fn check_lists_every_entry_it_skips() {
    let ws = measured();
    let run = ws.path().join(RUN);
    fs::copy(run.join("cells/decode-8192-c1.json"), run.join("cells/extra.JSON")).unwrap();
    fs::create_dir_all(run.join("cells/old")).unwrap();
    fs::write(run.join("stray.txt"), "x").unwrap();
    fs::write(ws.path().join("data/runs/README"), "x").unwrap();
    fs::create_dir_all(ws.path().join("data/runs/.tmp-import-x-1-0-00000000")).unwrap();
    let out = ws.site(&["check"]);
    assert_ok(&out);
    let text = stdout(&out);
    for (path, reason) in [
        ("cells/extra.JSON", "not a .json or .json.gz cell file"),
        ("cells/old", "a folder inside cells/"),
        ("stray.txt", "not part of a run folder"),
        ("runs/README", "not a run folder"),
        (".tmp-import-x-1-0-00000000", "a temporary folder left by an interrupted writer"),
    ] {
        assert!(
            text.lines().any(|l| l.contains("skipped") && l.contains(path) && l.contains(reason)),
            "{path}: {text}"
        );
    }
    // A `cells` file: no cell read, and said so.
    let ws = measured();
    let run = ws.path().join(RUN);
    fs::remove_dir_all(run.join("cells")).unwrap();
    fs::write(run.join("cells"), "x").unwrap();
    let text = stdout(&ws.site(&["check"]));
    assert!(text.contains("`cells` is not a folder, so no cell was read"), "{text}");
}

#[test]
fn a_data_file_over_the_size_limit_is_refused() {
    let ws = measured();
    let cell = ws.path().join(RUN).join("cells/decode-8192-c1.json");
    // Sparse: 300 MiB on paper, nothing on disk.
    fs::OpenOptions::new().write(true).open(&cell).unwrap().set_len(300 * 1024 * 1024).unwrap();
    let err = stderr(&ws.site(&["check"]));
    assert!(err.contains("decode-8192-c1.json: 314572800 bytes, more than the 268435456 bytes"), "{err}");
}

// 3. Markdown links ---------------------------------------------------------------------

#[test]
fn script_links_in_notes_and_pages_become_plain_text() {
    let ws = measured();
    let md = "[a](javascript:alert(1)) [b](JAVASCRIPT:x) [c](java&#x09;script:x) [d](&#106;avascript:x) [e](data:text/html,x) [f](vbscript:x) ![g](javascript:x) [ok](https://example.org/)\n";
    fs::write(ws.path().join(RUN).join("notes.md"), md).unwrap();
    fs::create_dir_all(ws.path().join("data/pages")).unwrap();
    fs::write(ws.path().join("data/pages/about.md"), format!("# About\n\n{md}")).unwrap();
    assert_ok(&ws.site(&["build"]));
    for page in ["public/runs/tiny-vllm-l4/index.html", "public/pages/about/index.html"] {
        let html = ws.read(page).to_ascii_lowercase();
        for bad in ["javascript:", "vbscript:", "data:text"] {
            assert!(!html.contains(bad), "{page} has {bad}");
        }
        assert!(html.contains("<a href=\"https://example.org/\">ok</a>"), "{page}");
        // The link texts stay, as text.
        assert!(html.contains(">a b c d e f g <a href"), "{page}");
    }
}

// 4. CSV ----------------------------------------------------------------------------------

#[test]
fn csv_downloads_cannot_start_a_formula() {
    let ws = measured();
    let cell = ws.path().join(RUN).join("cells/decode-8192-c1.json");
    let mut v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&cell).unwrap()).unwrap();
    v["status"] = "error".into();
    v["error"] = serde_json::json!({"message": "=HYPERLINK(\"http://evil\",\"x\")"});
    v.as_object_mut().unwrap().remove("measurement");
    fs::write(&cell, serde_json::to_string(&v).unwrap()).unwrap();
    assert_ok(&ws.site(&["build"]));
    let csv = gunzip_text(&ws.path().join("public/runs/tiny-vllm-l4/cells.csv.gz"));
    assert!(csv.contains(",\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\""), "{csv}");
    for line in csv.lines() {
        for field in line.split(',') {
            assert!(!field.trim_start_matches('"').starts_with(['=', '@', '+']), "{line}");
        }
    }
}

// 6. Concurrent writers ---------------------------------------------------------------------

#[test]
fn concurrent_imports_of_one_run_id_leave_one_winner_and_a_clean_folder() {
    let ws = tempfile::tempdir().unwrap();
    let file = fixture("peer/llm-inference-bench-0.4.18-llamacpp-smollm2.json");
    let children: Vec<_> = (0..6)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_site"))
                .args(["import", file.to_str().unwrap(), "--run-id", "same", "--gpu", "G"])
                .current_dir(ws.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    assert_eq!(outs.iter().filter(|o| o.status.success()).count(), 1);
    // A loser either met the winner's lock or, coming later, the winner's finished run:
    // the race decides which, and both refusals are right. Every loser is one of them.
    let losers: Vec<String> = outs.iter().filter(|o| !o.status.success()).map(stderr).collect();
    let locked = losers.iter().filter(|e| e.contains("is being written by another process")).count();
    let exists = losers.iter().filter(|e| e.contains("run same already exists")).count();
    assert_eq!(locked + exists, 5, "{losers:?}");
    let names: Vec<String> = fs::read_dir(ws.path().join("data/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["same"]);
    assert_ok(&site_in(ws.path(), &["check"]));
    // 11. Files carry the umask's permissions.
    let mode = fs::metadata(ws.path().join("data/runs/same/run.json")).unwrap().permissions().mode() & 0o777;
    // The process's umask, read without changing it (tests run in parallel).
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let umask =
        status.lines().find_map(|l| l.strip_prefix("Umask:")).map(|v| u32::from_str_radix(v.trim(), 8).unwrap());
    assert_eq!(mode, 0o666 & !umask.expect("Linux names the umask in /proc/self/status"));
}

// 7. Outages and resume ---------------------------------------------------------------------

#[test]
fn a_vanished_server_stops_the_run_and_resume_measures_those_cells_again() {
    let server = Rogue::start(|req| discovery(req).unwrap_or(Reply::GoAway));
    let ws = tempfile::tempdir().unwrap();
    let args = bench_args(&server.url, &["--run-id", "outage", "--contexts", "1k,2k,4k,8k", "--concurrency", "1,2,4"]);
    let out = site_in(ws.path(), &args);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("the server was unreachable for 3 cells in a row"), "{err}");
    let cells = common::sim::cell_names(ws.path(), "outage").len();
    // Stopped after three unreachable cells in a row (and the cell in flight), not 16.
    assert_eq!(cells, 7, "{cells} cells written: the run must stop against a dead server");
    // A server is back: resume measures the unreachable cells again (and only the cells
    // not yet measured), not "0 to go".
    let server = Rogue::start(|req| discovery(req).unwrap_or_else(|| completion(req, 1024, || good_stream(8, 1024))));
    let matrix = ["--run-id", "outage", "--contexts", "1k,2k,4k,8k", "--concurrency", "1,2,4", "--resume"];
    let out = site_in(ws.path(), &bench_args(&server.url, &matrix));
    assert_ok(&out);
    let err = stderr(&out);
    // Three unreachable in a row, and the cell in flight when the server went away.
    let unreachable_before = 4;
    let kept = cells - unreachable_before;
    assert!(err.contains(&format!("resuming outage: {kept} cells already measured, {} to go", 16 - kept)), "{err}");
    let run = speed_matrix::format::load_run_dir(&ws.path().join("data/runs/outage")).unwrap();
    assert_eq!(run.cells.len(), 16);
    assert!(run.cells.iter().all(|c| !c.cell.server_unreachable()), "{err}");
    // Another --api or launch command is refused.
    let before = tree(&ws.path().join("data"));
    let mut args = bench_args(&server.url, &matrix);
    args.extend(["--api", "completions"]);
    let out = site_in(ws.path(), &args);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--api: \"chat\" recorded, \"completions\" now"), "{}", stderr(&out));
    let mut args = bench_args(&server.url, &matrix);
    args.extend(["--launch-command", "vllm serve other"]);
    let out = site_in(ws.path(), &args);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("the launch command differs"), "{}", stderr(&out));
    assert_eq!(tree(&ws.path().join("data")), before, "a refused resume writes nothing");
}

// 9. Nothing measured ----------------------------------------------------------------------

#[test]
fn a_cell_without_tokens_is_an_error_not_zero_tokens_per_second() {
    let empty = "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1024,\"completion_tokens\":0}}\n\ndata: [DONE]\n\n";
    let server = Rogue::start(move |req| {
        discovery(req).unwrap_or_else(|| completion(req, 1024, || Reply::Stream(vec![empty.as_bytes().to_vec()])))
    });
    let ws = tempfile::tempdir().unwrap();
    let out = site_in(ws.path(), &bench_args(&server.url, &["--run-id", "empty"]));
    assert_ok(&out);
    for name in ["prefill-1024.json", "decode-1024-c1.json"] {
        let v = common::sim::cell(ws.path(), "empty", name);
        assert_eq!(v["status"], "error", "{name}: {v}");
        assert_eq!(v["error"]["cause"], "nothing_measured", "{name}: {v}");
    }
    let err = stderr(&site_in(ws.path(), &bench_args(&server.url, &["--run-id", "zero", "--max-output", "0"])));
    assert!(err.contains("--max-output"), "{err}");
    assert!(!ws.path().join("data/runs/zero").exists());
}

// 10. Import checks ------------------------------------------------------------------------

#[test]
fn import_refuses_duplicates_negative_figures_and_oversized_counts() {
    let base: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(fixture("peer/llm-inference-bench-0.4.18-llamacpp-smollm2.json")).unwrap(),
    )
    .unwrap();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|v| {
                let first = v["results"][0].clone();
                v["results"].as_array_mut().unwrap().push(first);
            }),
            "measures context",
        ),
        (
            // (A negative aggregate_tps is newer versions' failure marker: an error cell.)
            Box::new(|v| v["results"][1]["ttft_p50"] = (-5.0).into()),
            "results[1].ttft_p50: -5 is not a figure",
        ),
        (
            Box::new(|v| v["results"][0]["request_samples"][0]["input_tokens"] = 5_000_000_000u64.into()),
            "results[0].request_samples[0].input_tokens: 5000000000 tokens do not fit",
        ),
        (
            Box::new(|v| v["results"][0]["context_tokens"] = 5_000_000_000u64.into()),
            "not a complete llm-inference-bench",
        ),
    ];
    for (edit, want) in cases {
        let ws = tempfile::tempdir().unwrap();
        let mut v = base.clone();
        edit(&mut v);
        let file = ws.path().join("r.json");
        fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let out = site_in(ws.path(), &["import", file.to_str().unwrap(), "--gpu", "G"]);
        assert!(!out.status.success(), "{want}");
        assert!(stderr(&out).contains(want), "{want}: {}", stderr(&out));
        // Nothing written: no run folder (a missing runs folder holds none).
        let runs = fs::read_dir(ws.path().join("data/runs")).map_or(0, |d| d.count());
        assert_eq!(runs, 0, "{want}: a run was written");
    }
}

// 12, 13. Unbounded numbers ------------------------------------------------------------------

#[test]
fn figures_near_the_float_limit_or_overflowing_counts_are_clear_errors() {
    for (field, value, want) in [
        (
            "first_token_s",
            serde_json::json!(1.7e308),
            "measurement.requests[0].first_token_s is 1.7e308, beyond the largest number",
        ),
        (
            "window_tokens",
            serde_json::json!(u64::MAX),
            "measurement.requests[0].window_tokens is 1.8446744073709552e19",
        ),
        ("tokens", serde_json::json!(-3), "invalid value: integer `-3`"),
    ] {
        let ws = measured();
        let cell = ws.path().join(RUN).join("cells/decode-8192-c2.json");
        let mut v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&cell).unwrap()).unwrap();
        v["measurement"]["requests"][0][field] = value;
        fs::write(&cell, serde_json::to_string(&v).unwrap()).unwrap();
        let t = Instant::now();
        let out = ws.site(&["build"]);
        assert!(t.elapsed() < Duration::from_secs(20));
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains("decode-8192-c2.json") && err.contains(want), "{err}");
    }
}

// 14. Durations and a closed stdout -----------------------------------------------------------

#[test]
fn absurd_durations_and_a_closed_stdout_never_panic() {
    let ws = tempfile::tempdir().unwrap();
    for d in ["1e300s", "99999999999999999999s", "NaNs", "-1s", "8d"] {
        let arg = format!("--duration={d}");
        let out = site_in(ws.path(), &["bench", "--endpoint", "http://127.0.0.1:9", "--gpu", "G", &arg]);
        assert!(!out.status.success(), "{d}");
        let err = stderr(&out);
        assert!(err.contains("--duration") && !err.contains("panicked"), "{d}: {err}");
    }
    let ws = measured();
    // `site check | head -0`: the reading end is closed before check writes a byte.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_site"))
        .arg("check")
        .current_dir(ws.path())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    // It ends quietly by SIGPIPE, as any Unix filter does; never exit 101.
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}: {}", out.status, stderr(&out));
}

// 15. Hostile servers -------------------------------------------------------------------------

#[test]
fn endless_lines_and_huge_bodies_are_bounded_errors() {
    let server = Rogue::start(|req| {
        discovery(req).unwrap_or_else(|| {
            completion(req, 1024, || {
                // 3 MiB without a line end, then more.
                Reply::Stream(vec![
                    b"data: {\"choices\":[{\"text\":\"".to_vec(),
                    vec![b'a'; 3 << 20],
                    b"\"}]}\n\n".to_vec(),
                ])
            })
        })
    });
    let ws = tempfile::tempdir().unwrap();
    let out = site_in(ws.path(), &bench_args(&server.url, &["--run-id", "long"]));
    assert_ok(&out);
    let v = common::sim::cell_text(ws.path(), "long", "prefill-1024.json");
    assert!(v.contains("malformed stream: an event line longer than 1048576 bytes"), "{v}");
    assert!(v.len() < 10_000, "{} bytes stored", v.len());

    let huge = Rogue::start(|req| match req.path.as_str() {
        "/v1/models" => Reply::Full(200, "application/json", vec![b' '; 20 << 20]),
        _ => Reply::Full(404, "text/plain", vec![]),
    });
    let out = site_in(ws.path(), &bench_args(&huge.url, &["--run-id", "huge"]));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("at most 16777216 bytes are read"), "{}", stderr(&out));

    let page = Rogue::start(|req| {
        discovery(req).unwrap_or_else(|| {
            completion(req, 1024, || {
                Reply::Full(500, "text/html", format!("<html>{}</html>", "x".repeat(1 << 20)).into_bytes())
            })
        })
    });
    assert_ok(&site_in(ws.path(), &bench_args(&page.url, &["--run-id", "page"])));
    let v = common::sim::cell_text(ws.path(), "page", "prefill-1024.json");
    assert!(v.contains("HTTP 500: (an error body over 65536 bytes, not read)"), "{}", &v[..500.min(v.len())]);
    assert!(v.len() < 10_000);
}

// 16. Minor ------------------------------------------------------------------------------------

#[test]
fn bad_thresholds_and_non_run_folders_are_refused() {
    let ws = Workspace::from_repo_data();
    let runs: Vec<String> = fs::read_dir(ws.path().join("data/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    for t in ["NaN", "-1", "inf", "101", "1e300"] {
        let arg = format!("--threshold={t}");
        let out = ws.site(&["diff", &runs[0], &runs[1], &arg]);
        assert!(!out.status.success() && stderr(&out).contains("--threshold"), "{t}: {}", stderr(&out));
    }
    fs::create_dir_all(ws.path().join("not-a-run")).unwrap();
    let err = stderr(&ws.site(&["diff", "./not-a-run", &runs[0]]));
    assert!(err.contains("this folder is not a run folder"), "{err}");
}

#[test]
fn a_hand_written_launch_command_is_redacted_when_published() {
    let ws = measured();
    let path = ws.path().join(RUN).join("run.json");
    let mut v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    v["launch_command"] = format!("vllm serve m --api-key {SECRET} --tp 2").into();
    fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    assert_ok(&ws.site(&["build"]));
    let site = all_files_text(&ws.path().join("public"));
    assert!(!site.contains(SECRET));
    assert!(site.contains("--api-key &lt;redacted&gt; --tp 2"));
}

#[test]
fn ctrl_c_before_the_first_cell_leaves_no_empty_run() {
    // The server never answers: the bench is still sizing its first prompt.
    let server = Rogue::start(|req| discovery(req).unwrap_or(Reply::Hang));
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_site"))
        .args(bench_args(&server.url, &["--run-id", "nothing"]))
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = dir.path().join("data/runs/nothing");
    let t = Instant::now();
    while !run.join("run.json").exists() && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The bench listens for Ctrl-C before it writes anything: no wait is needed.
    assert!(run.exists());
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "Ctrl-C took {:?}", t.elapsed());
    assert!(!out.status.success());
    assert!(stderr(&out).contains("interrupted before any cell was measured"), "{}", stderr(&out));
    assert!(!run.exists(), "an empty run folder was left");
}

// 5. site serve ---------------------------------------------------------------------------

/// The server's peak resident memory in KiB (VmHWM).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn serve_streams_a_large_page_to_many_clients_with_flat_memory() {
    let ws = measured();
    fs::create_dir_all(ws.path().join("static")).unwrap();
    let size = 48 << 20;
    fs::write(ws.path().join("static/big.html"), vec![b'x'; size]).unwrap();
    let srv = serve::Server::start(ws.path(), &[]);
    let before = peak_rss_kib(srv.child.id());
    let clients: Vec<_> = (0..40)
        .map(|_| {
            let addr = srv.addr.clone();
            std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(&addr).unwrap();
                use std::io::{Read, Write};
                write!(s, "GET /static/big.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
                let mut n = 0usize;
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    match s.read(&mut buf).unwrap() {
                        0 => return n,
                        k => n += k,
                    }
                }
            })
        })
        .collect();
    for c in clients {
        // Head, the page, and the reload script after it.
        assert!(c.join().unwrap() > size);
    }
    let grew_mib = (peak_rss_kib(srv.child.id()) - before) / 1024;
    // Reading the page whole for each client would take 40 x 48 MiB.
    assert!(grew_mib < 200, "serve grew by {grew_mib} MiB for 40 clients of a 48 MiB page");
}

#[test]
fn serve_keeps_accepting_after_running_out_of_file_descriptors() {
    let ws = measured();
    let srv = serve::Server::start_with(ws.path(), &[], Some("ulimit -n 64"));
    // Far more connections than descriptors, held open.
    let held: Vec<_> = (0..120).filter_map(|_| std::net::TcpStream::connect(&srv.addr).ok()).collect();
    let t = Instant::now();
    while !srv.printed().contains("accepting a connection failed") {
        assert!(t.elapsed() < Duration::from_secs(15), "accept never failed: {}", srv.printed());
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(held);
    let t = Instant::now();
    loop {
        // The listener is still there: a page answers once descriptors are free again.
        if let Ok(mut s) = std::net::TcpStream::connect(&srv.addr) {
            use std::io::{Read, Write};
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = write!(s, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut resp = String::new();
            if s.read_to_string(&mut resp).is_ok() && resp.starts_with("HTTP/1.1 200") {
                break;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(15), "no answer after the descriptors came back: {}", srv.printed());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(srv.printed().contains("accepting a connection failed"), "{}", srv.printed());
}

#[test]
fn serve_exits_on_the_first_ctrl_c_with_a_client_connected() {
    let ws = measured();
    let mut srv = serve::Server::start(ws.path(), &[]);
    let _idle = std::net::TcpStream::connect(&srv.addr).unwrap();
    let t = Instant::now();
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(srv.child.id() as i32, libc::SIGINT) };
    loop {
        if srv.child.try_wait().unwrap().is_some() {
            break;
        }
        // A hang, not a slow exit: 15 s, as a loaded 2-core machine may starve the process.
        assert!(t.elapsed() < Duration::from_secs(15), "still running 15 s after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An output inside the data folder would be read back as data (and rebuild forever under
/// `serve`): refused before anything starts, as `build` and `diff` refuse it.
#[test]
fn serve_refuses_an_output_inside_the_data_folder() {
    let ws = measured();
    let out = ws.site(&["serve", "--out", "data/site", "--port", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--out data/site is inside the data folder data"), "{}", stderr(&out));
    assert!(!ws.path().join("data/site").exists());
}

#[test]
fn serve_never_serves_a_folder_that_build_refused() {
    let ws = measured();
    fs::create_dir_all(ws.path().join("public")).unwrap();
    fs::write(ws.path().join("public/index.html"), "someone's own page").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_site"))
        .args(["serve", "--port", "0"])
        .current_dir(ws.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("site serve is serving a folder that site build refused");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("refusing to replace") && err.contains("no earlier site to serve"), "{err}");
}

// 8. Prompt tags and cache hits -------------------------------------------------------------

#[test]
fn a_reused_run_id_sends_new_prompts_and_a_cached_prefill_is_flagged() {
    let prompts = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = prompts.clone();
    // The server says 900 of the 1,024 prompt tokens came from its cache.
    let cached = "data: {\"choices\":[{\"text\":\"w \"}],\"usage\":{\"prompt_tokens\":1024,\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":900}}}\n\ndata: [DONE]\n\n";
    let server = Rogue::start(move |req| {
        discovery(req).unwrap_or_else(|| {
            let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
            let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
            seen.lock().unwrap().push(prompt.split(']').next().unwrap().to_string());
            completion(req, 1024, || Reply::Stream(vec![cached.as_bytes().to_vec()]))
        })
    });
    let ws = tempfile::tempdir().unwrap();
    let args = bench_args(&server.url, &["--run-id", "again"]);
    let mut tags = Vec::new();
    for _ in 0..2 {
        prompts.lock().unwrap().clear();
        let _ = fs::remove_dir_all(ws.path().join("data/runs/again"));
        assert_ok(&site_in(ws.path(), &args));
        tags.push(prompts.lock().unwrap()[0].clone());
    }
    assert!(tags[0].starts_with("[v0 ctx-1024 ") && tags[0].ends_with(" speed-matrix"), "{tags:?}");
    assert_ne!(tags[0], tags[1], "the same run id sent the same prompt tag twice");

    let cell = common::sim::cell_text(ws.path(), "again", "prefill-1024.json");
    let cell: serde_json::Value = serde_json::from_str(&cell).unwrap();
    assert_eq!(common::sim::request_rows(&cell)[0]["cached_prompt_tokens"], 900);
    assert_ok(&site_in(ws.path(), &["build"]));
    let page = fs::read_to_string(ws.path().join("public/runs/again/index.html")).unwrap();
    assert!(page.contains("prefix_cache_hit"), "no flag on the run page");
    assert!(page.contains("the server served 900 of the 1024 prompt tokens from its prefix cache"));
}

// The 404 page ---------------------------------------------------------------------------

/// Runs the 404 page's script (as built) in Node at `href`: where it sends the reader, if
/// anywhere.
fn not_found_sends_to(script: &str, href: &str) -> Option<String> {
    let harness = r#"
const [script, href] = [process.argv[1], process.argv[2]];
const u = new URL(href);
let to = null;
const location = { href: u.href, pathname: u.pathname, hash: u.hash, protocol: u.protocol, host: u.host,
  replace(x) { to = String(x); } };
new Function('location', script)(location);
process.stdout.write(to === null ? '' : to);
"#;
    let out = Command::new("node")
        .args(["-e", harness, script, href])
        .output()
        .expect("node is needed to run the 404 page's script (apt-get install nodejs)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap()).filter(|s| !s.is_empty())
}

/// The 404 page reaches the former addresses of the same site and never another origin,
/// whatever the path (`//host/...`, `/\host/...`), under a sub-path and from file://.
#[test]
fn the_404_page_never_sends_the_reader_to_another_origin() {
    let ws = measured();
    assert_ok(&ws.site(&["build"]));
    let page = ws.read("public/404.html");
    let script = &page[page.find("<script>").unwrap() + 8..page.rfind("</script>").unwrap()];
    let go = |href: &str| not_found_sends_to(script, href);
    // The former addresses still lead on, on the same site.
    assert_eq!(go("https://s.example/runs/r1/cells/decode-1/").as_deref(), Some("https://s.example/cell/#r1/decode-1"));
    assert_eq!(go("https://s.example/sub/runs/r1/cell/#x").as_deref(), Some("https://s.example/sub/cell/#r1/x"));
    assert_eq!(go("https://s.example/runs/r1/cells.csv").as_deref(), Some("https://s.example/runs/r1/cells.csv.gz"));
    assert_eq!(go("file:///srv/public/runs/r1/cells/d/").as_deref(), Some("file:///srv/public/cell/#r1/d"));
    // Paths that read as another host stay on this one.
    for href in [
        "https://s.example//evil.example/runs/x/cells/y/",
        "https://s.example/\\evil.example/runs/x/cells/y/",
        "https://s.example/\\/evil.example/runs/x/cell/",
        "https://s.example//evil.example/runs/x/cells.json",
        "https://s.example///evil.example/runs/x/cells.csv",
        "http://127.0.0.1:8000//evil.example/runs/x/cells/y/index.html",
        "file:////evil.example/runs/x/cells/y/",
    ] {
        let from = url_origin(href);
        let to = go(href).unwrap_or_else(|| panic!("{href}: a former address leads on"));
        assert_eq!(url_origin(&to), from, "{href} sent the reader to {to}");
    }
    assert_eq!(go("https://s.example/nothing/here"), None);
}

/// `scheme://host` of an absolute address (the host as written up to the path).
fn url_origin(href: &str) -> String {
    let (scheme, rest) = href.split_once("://").unwrap();
    let rest = rest.replace('\\', "/");
    format!("{scheme}://{}", rest.split('/').next().unwrap())
}

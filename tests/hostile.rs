//! Hostile input, third pass: secrets in the encodings a server echoes them in, terminal
//! escapes from servers and data files, secrets in notes and pages.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use common::rogue::{bench_args, completion, good_stream, Reply, Rogue};
use common::*;

const SECRET: &str = "sk-live-Zq9/secret+KEY=x";

/// Every form of the key a server in the wild has been seen to echo.
fn echoed_forms(key: &str) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    vec![
        utf8_percent_encode(key, NON_ALPHANUMERIC).to_string(),
        STANDARD.encode(key),
        URL_SAFE.encode(key),
        STANDARD.encode(format!("api:{key}")),
        serde_json::to_string(key).unwrap(),
    ]
}

#[test]
fn a_server_echoing_the_key_encoded_never_gets_it_stored_or_printed() {
    let server = Rogue::start(|req| {
        if req.path == "/v1/models" {
            return Reply::Full(200, "application/json", br#"{"data":[{"id":"rogue-model"}]}"#.to_vec());
        }
        let key = req.header("authorization").unwrap_or("").trim_start_matches("Bearer ").to_string();
        let forms = echoed_forms(&key).join(" | ");
        let body = serde_json::json!({"error": {"message": format!("bad key, seen as {forms}")}}).to_string();
        Reply::Full(401, "application/json", body.into_bytes())
    });
    let ws = tempfile::tempdir().unwrap();
    let out = site_env(ws.path(), &bench_args(&server.url, &["--run-id", "echo"]), &[("OPENAI_API_KEY", SECRET)]);
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    assert!(printed.contains("answered 401"), "{printed}");
    let written = all_files_text(&ws.path().join("data"));
    assert!(written.contains("bad key, seen as"), "the error is kept: {written}");
    for form in echoed_forms(SECRET) {
        let form = form.trim_matches('"');
        assert!(!printed.contains(form), "{form} printed: {printed}");
        assert!(!written.contains(form), "{form} stored: {written}");
    }
}

#[test]
fn control_characters_from_a_server_never_reach_the_terminal_raw() {
    let server = Rogue::start(|req| {
        if req.path == "/v1/models" {
            let id = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\r\nerror: forged line";
            let body = serde_json::json!({"data": [{"id": id}]}).to_string();
            return Reply::Full(200, "application/json", body.into_bytes());
        }
        completion(req, 1024, || {
            let body = serde_json::json!({"error": {"message": "boom\u{1b}[2J\r\nok: forged"}}).to_string();
            Reply::Full(500, "application/json", body.into_bytes())
        })
    });
    let ws = tempfile::tempdir().unwrap();
    let out = site_in(ws.path(), &bench_args(&server.url, &["--run-id", "esc"]));
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    assert!(printed.contains("evil\\e]0;pwned"), "the model id is shown, escaped: {printed}");
    assert!(!printed.contains('\u{1b}') && !printed.contains('\r') && !printed.contains('\u{7}'), "{printed:?}");
    assert!(!printed.lines().any(|l| l.starts_with("error: forged") || l.starts_with("ok: forged")), "{printed}");
}

#[test]
fn control_characters_in_data_files_are_escaped_in_check_errors() {
    let ws = Workspace::from_fixture("valid/measured");
    let manifest = ws.path().join("data/runs/tiny-vllm-l4/run.json");
    let text = fs::read_to_string(&manifest).unwrap();
    // A broken value whose text the error quotes.
    let broken =
        text.replacen("\"schema_version\": 1", "\"schema_version\": \"\\u001b]0;x\\u0007\\r\\nerror: forged\"", 1);
    assert_ne!(broken, text);
    fs::write(&manifest, broken).unwrap();
    let out = ws.site(&["check"]);
    assert!(!out.status.success());
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    assert!(printed.contains("run.json"), "{printed}");
    assert!(!printed.contains('\u{1b}') && !printed.contains('\r') && !printed.contains('\u{7}'), "{printed:?}");
}

#[test]
fn secrets_in_notes_and_pages_are_published_redacted_and_named() {
    let ws = Workspace::from_fixture("valid/measured");
    let notes = "# Notes\n\nDashboard: [live](https://grafana.example/d?api_key=ZqNOTE1&from=now)\n\
                 Key: prefill is compute bound.\n";
    fs::write(ws.path().join("data/runs/tiny-vllm-l4/notes.md"), notes).unwrap();
    fs::create_dir_all(ws.path().join("data/pages")).unwrap();
    let page = "# Setup\ntoken: ZqPAGE2\nclone with hf_ZqPAGE3abcdefghijklmnop\n";
    fs::write(ws.path().join("data/pages/setup.md"), page).unwrap();
    let out = ws.site(&["build"]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(err.contains("notes.md:3:"), "{err}");
    assert!(err.contains("setup.md:2, "), "{err}");
    assert!(err.contains("setup.md:3: secret-shaped text published as <redacted>"), "{err}");
    let site = all_files_text(&ws.path().join("public"));
    for secret in ["ZqNOTE1", "ZqPAGE2", "ZqPAGE3"] {
        assert!(!site.contains(secret), "{secret} published");
    }
    assert!(site.contains("Key: prefill is compute bound."), "prose is kept");
    assert!(site.contains("from=now"), "the rest of the link is kept");
    let check = ws.site(&["check"]);
    assert!(stderr(&check).contains("notes.md:3:"), "{}", stderr(&check));
}

/// A launch command pasted into notes or a page (a code span, a fenced block, an indented
/// block, a prose command line) loses its secrets as a launch command does, and the build
/// names each line it redacted.
#[test]
fn launch_commands_pasted_into_notes_and_pages_are_published_without_their_secrets() {
    let ws = Workspace::from_fixture("valid/measured");
    let notes = "# Notes\n\nStarted with `vllm serve m --api-key ZqCMD1 --port 8000`.\n\n\
                 ```bash\ndocker login -p ZqCMD2 registry.example\nvllm serve m \\\n  --hf-token ZqCMD3\n```\n";
    fs::write(ws.path().join("data/runs/tiny-vllm-l4/notes.md"), notes).unwrap();
    fs::create_dir_all(ws.path().join("data/pages")).unwrap();
    let page = "# Setup\n\n    curl -u admin:ZqCMD4 http://h/v1/models\n\n$ llama-server -m x.gguf --api-key=ZqCMD5\n\nThe --api-key flag sets the key.\n";
    fs::write(ws.path().join("data/pages/setup.md"), page).unwrap();
    let out = ws.site(&["build"]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(err.contains("notes.md:3, "), "{err}");
    assert!(err.contains("notes.md:6, "), "{err}");
    assert!(err.contains("notes.md:8: secret-shaped text published as <redacted>"), "{err}");
    assert!(err.contains("setup.md:3, "), "{err}");
    assert!(err.contains("setup.md:5: secret-shaped text"), "{err}");
    let site = all_files_text(&ws.path().join("public"));
    for secret in ["ZqCMD1", "ZqCMD2", "ZqCMD3", "ZqCMD4", "ZqCMD5"] {
        assert!(!site.contains(secret), "{secret} published");
    }
    assert!(site.contains("registry.example"), "the rest of the command is kept");
    assert!(site.contains("The --api-key flag sets the key."), "prose about a flag is kept");
}

/// Good streams until stream `n`, which breaks off mid-answer as the engine dies; then nothing
/// listens any more.
fn engine_dying_at_stream(n: u32) -> Rogue {
    use std::sync::atomic::{AtomicU32, Ordering};
    let streams = AtomicU32::new(0);
    Rogue::start(move |req| {
        if let Some(r) = common::rogue::discovery(req) {
            return r;
        }
        completion(req, 1024, || match streams.fetch_add(1, Ordering::SeqCst) {
            i if i < n => good_stream(8, 1024),
            i if i == n => Reply::StreamThenGoAway(vec![b"data: {\"choices\":[{\"text\":\"w1 \"}]}\n\n".to_vec()]),
            _ => Reply::GoAway,
        })
    })
}

/// A server that answers every request well.
fn healthy_engine() -> Rogue {
    Rogue::start(|req| common::rogue::discovery(req).unwrap_or_else(|| completion(req, 1024, || good_stream(8, 1024))))
}

#[test]
fn the_cell_in_flight_when_the_server_died_is_measured_again_on_resume() {
    let server = engine_dying_at_stream(6);
    let ws = tempfile::tempdir().unwrap();
    let matrix = ["--run-id", "died", "--contexts", "1k,2k,4k", "--concurrency", "1,2"];
    let out = site_in(ws.path(), &bench_args(&server.url, &matrix));
    let err = stderr(&out);
    assert!(err.contains("the server was unreachable for 3 cells in a row"), "{err}");
    let run = speed_matrix::format::load_run_dir(&ws.path().join("data/runs/died")).unwrap();
    let broken: Vec<_> = run
        .cells
        .iter()
        .filter(|c| c.cell.error.as_ref().is_some_and(|e| e.message.contains("became unreachable during this cell")))
        .collect();
    let errors: Vec<_> =
        run.cells.iter().map(|c| (c.file.file_name().unwrap().to_owned(), c.cell.error.clone())).collect();
    assert_eq!(broken.len(), 1, "{errors:#?}\n{err}");
    assert!(broken[0].cell.server_unreachable());
    let server = healthy_engine();
    let mut args = bench_args(&server.url, &matrix);
    args.push("--resume");
    assert_ok(&site_in(ws.path(), &args));
    let run = speed_matrix::format::load_run_dir(&ws.path().join("data/runs/died")).unwrap();
    let errors: Vec<_> =
        run.cells.iter().filter(|c| c.cell.error.is_some()).map(|c| c.file.display().to_string()).collect();
    assert!(errors.is_empty(), "still errors after resume: {errors:?}");
    // Every cell of the matrix is there: three prefill and six decode cells.
    assert_eq!(run.cells.len(), 9, "{:?}", run.cells.iter().map(|c| c.file.display().to_string()).collect::<Vec<_>>());
}

#[test]
fn out_of_range_server_readings_are_dropped_so_every_written_cell_loads() {
    // A vLLM-looking server whose gauges read -3, NaN and +Inf and whose KV budget is 1e308
    // blocks: none of it may reach a cell `site check` would then refuse.
    let server = Rogue::start(|req| {
        if req.path == "/metrics" {
            let m = "vllm:num_requests_running{model_name=\"m\"} -3\nvllm:num_requests_waiting{model_name=\"m\"} NaN\n\
                     vllm:generation_tokens_total{model_name=\"m\"} +Inf\n\
                     vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"1e308\"} 1.0\n";
            return Reply::Full(200, "text/plain", m.as_bytes().to_vec());
        }
        if req.path == "/v1/models" {
            return Reply::Full(200, "application/json", br#"{"data":[{"id":"m","max_model_len":-5}]}"#.to_vec());
        }
        completion(req, 1024, || good_stream(8, 1024))
    });
    let ws = tempfile::tempdir().unwrap();
    let out = site_in(ws.path(), &bench_args(&server.url, &["--run-id", "absurd", "--concurrency", "1,2"]));
    assert_ok(&out);
    let err = stderr(&out);
    assert!(err.contains("the server's KV budget: dropped an out-of-range reading (inf)"), "{err}");
    assert!(err.contains("KV budget unknown"), "{err}");
    assert!(err.contains("a /metrics gauge or counter: dropped an out-of-range reading"), "{err}");
    let manifest = fs::read_to_string(ws.path().join("data/runs/absurd/run.json")).unwrap();
    assert!(!manifest.contains("18446744073709551615"), "{manifest}");
    assert_ok(&site_in(ws.path(), &["check"]));
}

/// The fixture run with its model id replaced.
fn with_model_id(id: &str) -> Workspace {
    let ws = Workspace::from_fixture("valid/measured");
    let manifest = ws.path().join("data/runs/tiny-vllm-l4/run.json");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, text.replace("\"acme/Tiny-1B\"", &serde_json::to_string(id).unwrap())).unwrap();
    ws
}

#[test]
fn long_names_build_with_bounded_folder_names_and_overlong_ones_are_refused_by_check() {
    // 236 characters: allowed, and every folder it names stays short.
    let ws = with_model_id(&format!("acme/{}", "Very-Long-Model-Name-".repeat(11)));
    assert_ok(&ws.site(&["check"]));
    assert_ok(&ws.site(&["build"]));
    for (path, _) in tree(&ws.path().join("public")) {
        for part in path.split('/') {
            assert!(part.len() <= speed_matrix::units::MAX_PATH_COMPONENT + 11, "{part} ({} bytes)", part.len());
        }
    }
    // 300 characters: refused by check (and so by build), naming the field and the file.
    let ws = with_model_id(&"m".repeat(300));
    let out = ws.site(&["check"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("run.json") && err.contains("model.id: expected at most 256 characters, found 300"), "{err}");
    assert!(!ws.site(&["build"]).status.success());
}

#[test]
fn a_megabyte_model_id_from_the_server_is_refused_with_a_clear_error() {
    let server = Rogue::start(|req| {
        if req.path == "/v1/models" {
            let body = serde_json::json!({"data": [{"id": "m".repeat(1 << 20)}]}).to_string();
            return Reply::Full(200, "application/json", body.into_bytes());
        }
        completion(req, 1024, || good_stream(8, 1024))
    });
    let ws = tempfile::tempdir().unwrap();
    let out = site_in(ws.path(), &bench_args(&server.url, &["--run-id", "huge-id"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("the model id is 1048576 characters long (at most 256 can be published)"), "{err}");
    assert!(err.len() < 2000, "the id is not echoed: {} bytes of output", err.len());
    assert!(!ws.path().join("data/runs/huge-id").exists());
}

#[test]
fn importers_refuse_overlong_names_before_anything_is_written() {
    let ws = tempfile::tempdir().unwrap();
    let file = fixture("peer/llm-inference-bench-0.4.18-llamacpp-smollm2.json");
    let gpu = "G".repeat(300);
    let out = site_in(ws.path(), &["import", file.to_str().unwrap(), "--run-id", "r", "--gpu", &gpu]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("hardware.device: expected at most 256 characters, found 300"), "{err}");
    assert!(!ws.path().join("data/runs/r").exists());
}

#[test]
fn edited_output_is_never_kept_and_force_rewrites_every_file() {
    let ws = Workspace::from_fixture("valid/compare");
    assert_ok(&ws.site(&["build"]));
    let runs: Vec<String> = fs::read_dir(ws.path().join("data/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let page = ws.path().join(format!("public/runs/{}/index.html", runs[0]));
    let tamper = |page: &Path| {
        let mut text = fs::read_to_string(page).unwrap();
        text.push_str("<!-- TAMPERED -->");
        fs::write(page, text).unwrap();
    };
    // An edit, then a data change elsewhere: the edited run's page is not kept as it is.
    tamper(&page);
    fs::write(ws.path().join(format!("data/runs/{}/notes.md", runs[1])), "Changed notes.\n").unwrap();
    let out = ws.site(&["build"]);
    assert_ok(&out);
    assert!(!fs::read_to_string(&page).unwrap().contains("TAMPERED"), "{}", stdout(&out));
    // Only the third run's pages were kept: the first was edited, the second changed.
    assert!(stdout(&out).contains("(3 run pages, 1 kept from the previous build"), "{}", stdout(&out));
    // An edit with nothing else changed: `--force` rewrites every file.
    tamper(&page);
    let out = ws.site(&["build", "--force"]);
    assert_ok(&out);
    assert!(!fs::read_to_string(&page).unwrap().contains("TAMPERED"));
    assert!(stdout(&out).contains("0 kept from the previous build"), "{}", stdout(&out));
}

#[test]
fn a_data_change_that_keeps_size_and_time_is_seen() {
    let ws = Workspace::from_fixture("valid/measured");
    assert_ok(&ws.site(&["build"]));
    let manifest = ws.path().join("data/runs/tiny-vllm-l4/run.json");
    let before = fs::read_to_string(&manifest).unwrap();
    let after = before.replacen("acme/Tiny-1B", "acme/Tiny-2B", 1);
    assert_eq!(before.len(), after.len());
    let stamp = ws.path().join("stamp");
    fs::write(&stamp, "").unwrap();
    let status = Command::new("touch").arg("-r").arg(&manifest).arg(&stamp).status().unwrap();
    assert!(status.success());
    fs::write(&manifest, after).unwrap();
    // Size and modification time as before (an archive restored, `touch -r`).
    assert!(Command::new("touch").arg("-r").arg(&stamp).arg(&manifest).status().unwrap().success());
    let out = ws.site(&["build"]);
    assert_ok(&out);
    assert!(!stdout(&out).contains("up to date"), "{}", stdout(&out));
    assert!(ws.read("public/index.html").contains("Tiny-2B"));
}

#[test]
fn staging_left_by_a_killed_build_is_removed_by_the_next_build_even_when_up_to_date() {
    let ws = Workspace::from_fixture("valid/measured");
    assert_ok(&ws.site(&["build"]));
    // Killed before it wrote its marker (no such process now), and killed after.
    let dead = ws.path().join(".tmp-build-public-999999999-0-0000abcd");
    let marked = ws.path().join(".tmp-build-public-999999998-3-0000abce");
    let other_site = ws.path().join(".tmp-build-public-2-999999997-0-0000abcf");
    for d in [&dead, &marked, &other_site] {
        fs::create_dir_all(d.join("runs")).unwrap();
    }
    fs::write(marked.join(".speed-matrix-site"), "").unwrap();
    let out = ws.site(&["build"]);
    assert!(stdout(&out).contains("up to date"), "{}", stdout(&out));
    assert!(!dead.exists() && !marked.exists());
    assert!(other_site.exists(), "another output folder's staging is not this build's to remove");
}

/// `site import` of `folder` (a copy of a peer fixture folder) into `ws`.
fn import_folder(ws: &Path, folder: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["import", folder.to_str().unwrap(), "--run-id", "r", "--gpu", "G"];
    args.extend_from_slice(extra);
    site_in(ws, &args)
}

#[test]
fn a_broken_stage_report_is_named_never_dropped_and_skip_broken_lists_it() {
    let variants: [(&str, &[u8], &str); 4] = [
        ("truncated", br#"{"load_summary": {"concurrency": 2}, "successes": {"#, "stage_0_lifecycle_metrics.json:1:"),
        ("empty", b"", "stage_0_lifecycle_metrics.json: empty"),
        ("not JSON", b"stage,0\n1,2\n", "stage_0_lifecycle_metrics.json:1:1"),
        ("nested", br#"{"stage": {"load_summary": {"concurrency": 1}}}"#, "not a results file of a known format"),
    ];
    for (what, bytes, said) in variants {
        let ws = tempfile::tempdir().unwrap();
        let folder = ws.path().join("ip");
        copy_dir(&fixture("peer/inference-perf-0.7.0"), &folder);
        fs::write(folder.join("stage_0_lifecycle_metrics.json"), bytes).unwrap();
        let out = import_folder(ws.path(), &folder, &[]);
        assert!(!out.status.success(), "{what}: imported");
        let err = stderr(&out);
        assert!(err.contains("1 part(s) of the results cannot be imported"), "{what}: {err}");
        assert!(err.contains(said), "{what}: {err}");
        assert!(!ws.path().join("data/runs/r").exists(), "{what}");
        let out = import_folder(ws.path(), &folder, &["--skip-broken"]);
        assert_ok(&out);
        assert!(stderr(&out).contains("skipped ") && stderr(&out).contains("stage_0_lifecycle_metrics.json"), "{what}");
        assert!(stdout(&out).contains("2 cells"), "{what}: {}", stdout(&out));
    }
    // A byte order mark is no reason to drop a stage.
    let ws = tempfile::tempdir().unwrap();
    let folder = ws.path().join("ip");
    copy_dir(&fixture("peer/inference-perf-0.7.0"), &folder);
    let stage = folder.join("stage_0_lifecycle_metrics.json");
    let text = fs::read(&stage).unwrap();
    fs::write(&stage, [b"\xef\xbb\xbf".as_slice(), &text].concat()).unwrap();
    let out = import_folder(ws.path(), &folder, &[]);
    assert_ok(&out);
    assert!(stdout(&out).contains("3 cells"), "{}", stdout(&out));
}

#[test]
fn a_broken_missing_or_linked_sweep_folder_is_named() {
    let sweep = "peer/aiperf-0.13.0/sweep-c124";
    let cases: [(&str, fn(&Path)); 4] = [
        ("broken", |c| fs::write(c.join("profile_export_aiperf.json"), "{\"input_config\": ").unwrap()),
        ("empty", |c| fs::write(c.join("profile_export_aiperf.json"), "").unwrap()),
        ("missing", |c| fs::remove_file(c.join("profile_export_aiperf.json")).unwrap()),
        ("linked", |c| {
            let real = c.with_file_name("elsewhere");
            fs::rename(c, &real).unwrap();
            std::os::unix::fs::symlink(&real, c).unwrap();
        }),
    ];
    for (what, break_it) in cases {
        let ws = tempfile::tempdir().unwrap();
        let folder = ws.path().join("sweep");
        copy_dir(&fixture(sweep), &folder);
        break_it(&folder.join("concurrency_2"));
        let out = import_folder(ws.path(), &folder, &[]);
        assert!(!out.status.success(), "{what}: imported");
        let err = stderr(&out);
        assert!(err.contains("concurrency_2"), "{what}: {err}");
        assert!(!err.contains("no results file of a known format"), "{what}: {err}");
    }
}

#[test]
fn a_sweep_of_many_levels_imports_and_its_run_page_stays_bounded() {
    let ws = tempfile::tempdir().unwrap();
    let sweep = ws.path().join("sweep");
    let single = fixture("peer/aiperf-0.13.0/single-c2");
    let profile = fs::read_to_string(single.join("profile_export_aiperf.json")).unwrap();
    let records = fs::read_to_string(single.join("profile_export.jsonl")).unwrap();
    for c in 1..=120 {
        let d = sweep.join(format!("concurrency_{c}"));
        fs::create_dir_all(&d).unwrap();
        fs::write(
            d.join("profile_export_aiperf.json"),
            profile.replace("\"concurrency\": 2", &format!("\"concurrency\": {c}")),
        )
        .unwrap();
        fs::write(d.join("profile_export.jsonl"), &records).unwrap();
    }
    let out = site_in(ws.path(), &["import", sweep.to_str().unwrap(), "--run-id", "wide", "--gpu", "G"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("120 cells"), "{}", stdout(&out));
    assert_ok(&site_in(ws.path(), &["build"]));
    let page = fs::read_to_string(ws.path().join("public/runs/wide/index.html")).unwrap();
    let max = speed_matrix::render::run_page::MAX_PAGE_LEVELS;
    assert!(page.contains(&format!(
        "This run measured 120 concurrency levels at 1 context; this page shows {max} levels at 1 context"
    )));
    let heat = table_rows(&page, "class=\"heatmap\"");
    assert_eq!(heat[0].len(), max + 1, "a context column and {max} levels: {:?}", heat[0]);
    assert_eq!((heat[0][1].as_str(), heat[0][max].as_str()), ("1", "120"), "the lowest and highest level are kept");
    // Every cell keeps its evidence and its line in the downloads.
    assert_eq!(evidence(ws.path(), "wide")["cells"].as_array().unwrap().len(), 120);
    let csv = gunzip_text(&ws.path().join("public/runs/wide/cells.csv.gz"));
    assert_eq!(csv.lines().count(), 121);
}

#[test]
fn secrets_in_a_description_or_a_stored_error_are_not_published() {
    let ws = Workspace::from_fixture("valid/compare");
    let manifest = ws.path().join("data/runs/faster/run.json");
    let mut m: serde_json::Value = serde_json::from_str(&fs::read_to_string(&manifest).unwrap()).unwrap();
    m["description"] = "Dashboard at https://g.example/d?token=ZqDESC1 for this run".into();
    fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let cells = ws.path().join("data/runs/faster/cells");
    let errored = fs::read_dir(&cells)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| fs::read_to_string(p).unwrap().contains("\"status\": \"error\""))
        .expect("the fixture has an error cell");
    let mut c: serde_json::Value = serde_json::from_str(&fs::read_to_string(&errored).unwrap()).unwrap();
    c["error"]["message"] = "401: key sk-proj-ZqERR2abcdefghijklmnop rejected".into();
    fs::write(&errored, serde_json::to_string_pretty(&c).unwrap()).unwrap();
    assert_ok(&ws.site(&["build"]));
    let site = all_files_text(&ws.path().join("public"));
    assert!(!site.contains("ZqDESC1") && !site.contains("ZqERR2"));
    assert!(site.contains("?token=&lt;redacted&gt; for this run"), "the rest of the description is kept");
}

#[test]
fn a_cut_short_result_in_a_folder_of_results_is_named_not_passed_over() {
    let ws = tempfile::tempdir().unwrap();
    let folder = ws.path().join("vllm");
    copy_dir(&fixture("peer/vllm-0.33.0"), &folder);
    let first = fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .min()
        .unwrap();
    let text = fs::read_to_string(&first).unwrap();
    fs::write(&first, &text[..text.len() / 2]).unwrap();
    let out = site_in(ws.path(), &["import", folder.to_str().unwrap(), "--run-id", "v", "--gpu", "G"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    let name = first.file_name().unwrap().to_string_lossy().into_owned();
    assert!(err.contains(&format!("{name}:")) && err.contains("not JSON"), "{err}");
    assert!(!ws.path().join("data/runs/v").exists());
    let out = site_in(ws.path(), &["import", folder.to_str().unwrap(), "--run-id", "v", "--gpu", "G", "--skip-broken"]);
    assert_ok(&out);
    assert!(stderr(&out).contains(&format!("skipped {}", first.display())), "{}", stderr(&out));
}

#[test]
fn bench_refuses_facts_site_check_would_refuse_before_making_a_folder() {
    let server = healthy_engine();
    let ws = tempfile::tempdir().unwrap();
    let gpu = "G".repeat(300);
    let args: Vec<&str> = bench_args(&server.url, &["--run-id", "long-gpu"])
        .into_iter()
        .map(|a| if a == "Rogue GPU" { gpu.as_str() } else { a })
        .collect();
    let out = site_in(ws.path(), &args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("hardware.device: expected at most 256 characters, found 300"), "{}", stderr(&out));
    assert!(!ws.path().join("data/runs/long-gpu").exists());
}

#[test]
fn staging_left_by_a_killed_import_is_removed_by_the_next_import_of_that_run() {
    let ws = tempfile::tempdir().unwrap();
    let runs = ws.path().join("data/runs");
    let dead = runs.join(".tmp-import-r-999999999-0-0000abcd");
    let other_run = runs.join(".tmp-import-r-2-999999999-0-0000abcd");
    for d in [&dead, &other_run] {
        fs::create_dir_all(d).unwrap();
    }
    let file = fixture("peer/llm-inference-bench-0.4.18-llamacpp-smollm2.json");
    assert_ok(&site_in(ws.path(), &["import", file.to_str().unwrap(), "--run-id", "r", "--gpu", "G"]));
    assert!(!dead.exists());
    assert!(other_run.exists(), "run r-2's staging is not r's to remove");
}

#[test]
fn a_server_dying_in_a_runs_last_cells_leaves_them_all_to_resume() {
    let server = engine_dying_at_stream(6);
    let ws = tempfile::tempdir().unwrap();
    // Three cells: the server dies in the second, so one unreachable cell follows (too few
    // to stop the run).
    let matrix = ["--run-id", "late", "--contexts", "1k", "--concurrency", "1,2"];
    let out = site_in(ws.path(), &bench_args(&server.url, &matrix));
    assert!(!stderr(&out).contains("cells in a row"), "{}", stderr(&out));
    let run = speed_matrix::format::load_run_dir(&ws.path().join("data/runs/late")).unwrap();
    let unreachable = run.cells.iter().filter(|c| c.cell.server_unreachable()).count();
    assert_eq!(unreachable, 2, "the cell in flight and the one after: {}", stderr(&out));
    let server = healthy_engine();
    let mut args = bench_args(&server.url, &matrix);
    args.push("--resume");
    assert_ok(&site_in(ws.path(), &args));
    let run = speed_matrix::format::load_run_dir(&ws.path().join("data/runs/late")).unwrap();
    assert!(run.cells.iter().all(|c| c.cell.error.is_none()));
    // Every cell of the matrix is there: one prefill and two decode cells.
    assert_eq!(run.cells.len(), 3, "{:?}", run.cells.iter().map(|c| c.file.display().to_string()).collect::<Vec<_>>());
}

/// A run of many contexts: the run page's targets and levels tables show the contexts its
/// heatmap shows (an even selection, extremes kept), not every one.
#[test]
fn a_run_of_many_contexts_folds_its_targets_and_levels_tables_as_its_heatmap() {
    let ws = Workspace::from_fixture("valid/compare");
    let dir = ws.path().join("data/runs/tall");
    fs::create_dir_all(dir.join("cells")).unwrap();
    let mut m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(ws.path().join("data/runs/base/run.json")).unwrap()).unwrap();
    let contexts: Vec<u32> = (1..=120).map(|i| i * 256).collect();
    m["settings"]["contexts"] = serde_json::json!(contexts);
    m["settings"]["concurrency"] = serde_json::json!([1]);
    m["settings"]["prefill_contexts"] = serde_json::json!([]);
    fs::write(dir.join("run.json"), serde_json::to_string(&m).unwrap()).unwrap();
    for ctx in &contexts {
        let cell = serde_json::json!({"schema_version": 1, "phase": "decode", "context": ctx, "concurrency": 1,
            "status": "valid", "reported": {"total_tps": 30.0, "per_request_tps": 30.0, "ttft_ms": 50.0, "tbt_ms": 33.0}});
        fs::write(dir.join(format!("cells/decode-{ctx}-c1.json")), cell.to_string()).unwrap();
    }
    assert_ok(&ws.site(&["build"]));
    let page = ws.read("public/runs/tall/index.html");
    let max = speed_matrix::render::run_page::MAX_PAGE_LEVELS;
    let heat = table_rows(&page, "<table class=\"heatmap\"");
    let targets = table_rows(&page, "<table class=\"targets\"");
    let levels = table_rows(&page, "<table class=\"levels\"");
    assert_eq!(heat.len(), max + 1, "a header and {max} contexts");
    assert_eq!(targets.len(), max + 1, "the targets table shows the heatmap's contexts");
    assert_eq!(levels.len(), max + 1, "the levels table shows the heatmap's contexts");
    let first = |rows: &[Vec<String>]| (rows[1][0].clone(), rows[max][0].clone());
    assert_eq!(first(&targets), first(&heat), "the same extremes");
    assert_eq!(first(&levels), first(&heat));
}

/// An SGLang-looking server whose arguments carry the API key (under its own name and under
/// a harmless one) and markup: the run records the arguments without the key, and the run
/// page prints the markup as text.
#[test]
fn a_servers_own_settings_never_carry_the_key_and_are_printed_as_text() {
    let server = Rogue::start(|req| {
        if req.path == "/server_info" {
            let key = req.header("authorization").unwrap_or("").trim_start_matches("Bearer ").to_string();
            let args = serde_json::json!({
                "max_total_num_tokens": 100000, "tp_size": 1, "schedule_policy": "<script>alert(1)</script>",
                "api_key": key, "served_with": key, "admin_api_key": key
            });
            return Reply::Full(200, "application/json", args.to_string().into_bytes());
        }
        common::rogue::discovery(req).unwrap_or_else(|| completion(req, 1024, || good_stream(8, 1024)))
    });
    let ws = tempfile::tempdir().unwrap();
    let args = bench_args(&server.url, &["--run-id", "args", "--contexts", "1k", "--concurrency", "1"]);
    assert_ok(&site_env(ws.path(), &args, &[("OPENAI_API_KEY", SECRET)]));
    let manifest = fs::read_to_string(ws.path().join("data/runs/args/run.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(m["server_settings"]["tp_size"], "1", "{manifest}");
    assert_eq!(m["server_settings"]["schedule_policy"], "<script>alert(1)</script>");
    assert!(m["server_settings"].get("served_with").is_none() && m["server_settings"].get("api_key").is_none());
    assert_ok(&site_in(ws.path(), &["build"]));
    let page = fs::read_to_string(ws.path().join("public/runs/args/index.html")).unwrap();
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !page.contains("<script>alert(1)"));
    for text in [all_files_text(&ws.path().join("data")), all_files_text(&ws.path().join("public"))] {
        assert!(!text.contains(SECRET), "the key was written");
    }
}

//! `site diff`, comparisons built by `site build`, and `site serve` over real HTTP.

mod common;

use std::fs;
use std::time::{Duration, Instant};

use common::serve::{get, Server};
use common::*;

#[test]
fn seed_comparison_is_built_and_linked() {
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build"]));
    let slug = "step-3.5-flash-vllm-0.29.0-4x-h200-sxm--step-3.7-flash-fp8-sglang-0.5.6-2x-h200-nvl";
    let page = ws.read(&format!("public/compare/{slug}/index.html"));
    let text = text_of(&page);
    // The seeds are single measurements: their changes are shown, never judged.
    assert!(
        text.contains("156.7 → 124.3 (-20.7%; n 1 vs 1) single measurements, not judged"),
        "8K x 1 total tok/s pair missing"
    );
    assert!(!page.contains("class=\"cell cmp slower") && !page.contains("class=\"cell cmp faster"));
    // Per GPU: 156.7 / 4 = 39.2 against 124.3 / 2 = 62.15, printed to one decimal as 62.1.
    assert!(text.contains("39.2 → 62.1 (+58.6%; n 1 vs 1)"), "per-GPU view missing");
    // A pair of states is shown as states, never as a ratio.
    assert!(text.contains("Looped → Over capacity"), "status pair missing");
    let flags = table_rows(&page, "<table class=\"flag-diff\"");
    let row = |name: &str| flags.iter().find(|r| r[0] == name).unwrap_or_else(|| panic!("no flag {name}")).clone();
    assert_eq!(row("--tensor-parallel-size")[3], "removed");
    assert_eq!(row("--tp")[3], "added");
    assert_eq!(row("--reasoning-parser")[3], "same");
    assert_eq!(row("--served-model-name")[1..], ["stepfun-ai/Step-3.5-Flash", "step", "changed"]);
    assert!(ws.read("public/index.html").contains(&format!("compare/{slug}/index.html")));
    for run in ["step-3.5-flash-vllm-0.29.0-4x-h200-sxm", "step-3.7-flash-fp8-sglang-0.5.6-2x-h200-nvl"] {
        assert!(
            ws.read(&format!("public/runs/{run}/index.html")).contains(&format!("../../compare/{slug}/index.html")),
            "{run} does not link the comparison"
        );
    }
    let csv = ws.read(&format!("public/compare/{slug}/comparison.csv"));
    assert!(csv.contains("decode,65536,4,looped,over_capacity,"), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("decode,8192,1,valid,valid,1,1,156.7,124.3,-20.68,,,single,")), "{csv}");
}

#[test]
fn diff_colours_past_the_threshold_by_each_metrics_direction() {
    let ws = Workspace::from_fixture("valid/compare");
    let out = ws.site(&["diff", "base", "faster", "--out", "cmp"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("cmp/index.html"), "{}", stdout(&out));
    let page = ws.read("cmp/index.html");
    assert!(!page.contains("Measured differently"), "two runs of one tool and method");
    let rows = table_rows(&page, "<table class=\"heatmap compare\"");
    let cell = |r: usize, c: usize| rows[r][c].clone();
    // 8K cells have three repetitions a side (1% apart), 16K cells one.
    assert!(cell(1, 1).starts_with("100.0 → 103.0 (+3.0%, 95% CI +0.7% to +5.4%; n 3 vs 3)"), "{}", cell(1, 1));
    // The total tok/s verdicts: +3% whose interval reaches past 5% is inconclusive, +6% with
    // an interval above 0 faster, -10% slower; single measurements are never judged.
    let verdicts: Vec<&str> = page
        .match_indices("data-verdict=\"")
        .map(|(i, _)| &page[i + 14..i + 14 + page[i + 14..].find('"').unwrap()])
        .collect();
    assert_eq!(verdicts[..4], ["inconclusive", "faster", "slower", "single"]);
    assert!(page.contains("inconclusive: about 4 repetitions each would tell"));
    // TTFT up 10% is slower, time between tokens down 10% is faster.
    assert!(
        page.contains("<span class=\"pair slower\">60 ms → 66 ms <small>(+10.0%, 95% CI +7.5% to +12.5%; n 3 vs 3)"),
        "TTFT verdict"
    );
    assert!(
        page.contains("<span class=\"pair faster\">10.0 ms → 9.0 ms <small>(-10.0%, 95% CI -12.0% to -7.9%; n 3 vs 3)"),
        "TBT verdict"
    );
    assert!(page.contains("<span class=\"pair single\">90.0 → 90.0 <small>(0.0%; n 1 vs 1) <span class=\"verdict\">single measurements, not judged"));
    assert!(!page.contains("class=\"cell cmp single slower"));
    // The terminal summary counts cells; --fail-on-regression fails on a slower one.
    let summary = stdout(&out);
    assert!(
        summary.contains("5 cells with figures on both sides: 1 faster, 1 slower, 1 mixed (some figures faster, some slower), 1 inconclusive, 1 single measurements, not judged"),
        "{summary}"
    );
    assert!(summary.contains("slower figures in: 8K x 2, 8K x 4"), "{summary}");
    let gate = ws.site(&["diff", "base", "faster", "--out", "cmp3", "--fail-on-regression"]);
    assert!(!gate.status.success());
    assert!(stderr(&gate).contains("--fail-on-regression: 2 cell(s) judged slower"), "{}", stderr(&gate));
    // Capacity under each SLO, both runs, the change shown (per device: 400 / 1 against 360 / 2).
    let capacity = table_rows(&page, "<table class=\"capacity-compare\"");
    assert_eq!(capacity[1], ["8K", "batch", "400.0 ×4", "180.0 ×4", "-55.0%"]);
    // Status cells are never ratios.
    assert_eq!(cell(2, 2), "Looped → 150.0");
    assert_eq!(cell(2, 3), "Over capacity → Error");
    // Flag-level command diff.
    let flags = table_rows(&page, "<table class=\"flag-diff\"");
    let f = |n: &str| flags.iter().find(|r| r[0] == n).unwrap().clone();
    assert_eq!(f("--tp")[1..], ["1", "2", "changed"]);
    assert_eq!(f("--enforce-eager")[3], "removed");
    assert_eq!(f("--enable-prefix-caching")[3], "added");
    assert_eq!(f("--max-num-seqs")[3], "same");
    // Header differences are marked.
    assert!(page.contains(
        "<tr class=\"differs\"><th scope=\"row\">Device count</th><td>1</td><td>2 <span class=\"tag\">differs</span>"
    ));
    // Per GPU: 400 / 1 against 360 / 2.
    let per_gpu = table_rows(&page, "<table class=\"heatmap compare per-gpu\"");
    assert!(
        per_gpu[1][3].starts_with("400.0 → 180.0 (-55.0%, 95% CI -56.0% to -54.0%; n 3 vs 3) slower"),
        "{:?}",
        per_gpu[1]
    );
    // A custom threshold changes the colouring.
    assert_ok(&ws.site(&["diff", "base", "faster", "--out", "cmp2", "--threshold", "2"]));
    // At 2% the +3% change of 8K x 1 (interval above 0) is faster, not inconclusive as at 5%.
    assert!(ws.read("cmp2/index.html").contains("data-verdict=\"faster\"><span class=\"pair faster\">100.0 → 103.0"));
    let csv = ws.read("cmp/comparison.csv");
    assert!(csv.contains("decode,8192,4,valid,valid,3,3,400,360,-10.00,-12.02,-7.94,slower,"), "{csv}");
    assert!(csv.contains("decode,16384,1,valid,valid,1,1,90,90,0.00,,,single,"), "{csv}");
    assert!(ws.path().join("cmp/static/style.css").is_file());
    // The standalone page links nowhere else.
    assert!(!page.contains("runs/base/index.html"));
}

#[test]
fn diff_refuses_bad_pairs_and_writes_nothing() {
    let ws = Workspace::from_fixture("valid/compare");
    for (args, msg) in [
        (["diff", "base", "nosuch", "--out", "x"], "unknown run \"nosuch\""),
        (["diff", "base", "base", "--out", "x"], "cannot compare run base with itself"),
        (["diff", "base", "disjoint", "--out", "x"], "have no cell in common"),
    ] {
        let out = ws.site(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(msg), "{args:?}: {}", stderr(&out));
        assert!(!ws.path().join("x").exists());
    }
    // A run folder given by path works too.
    assert_ok(&ws.site(&["diff", "data/runs/base", "data/runs/faster", "--out", "bypath"]));
    // A comparison file naming an unknown run fails the build.
    fs::write(
        ws.path().join("data/compare.json"),
        r#"{"schema_version": 1, "comparisons": [{"a": "base", "b": "ghost"}]}"#,
    )
    .unwrap();
    let out = ws.site(&["build"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("comparisons[0] names run \"ghost\""), "{}", stderr(&out));
    assert!(!ws.path().join("public").exists(), "a refused build writes no site");
}

fn start_serve(ws: &Workspace) -> Server {
    Server::start(ws.path(), &[])
}

#[test]
fn serve_answers_pages_assets_404_and_refuses_traversal() {
    let ws = Workspace::from_fixture("valid/measured");
    fs::write(ws.path().join("outside-secret.txt"), "TOP SECRET").unwrap();
    let srv = start_serve(&ws);
    let (s, h, body) = get(&srv.addr, "/");
    assert_eq!(s, 200);
    assert!(h.contains("content-type: text/html; charset=utf-8"));
    assert!(body.contains("runs/tiny-vllm-l4/index.html"));
    let (s, h, _) = get(&srv.addr, "/static/style.css");
    assert_eq!(s, 200);
    assert!(h.contains("content-type: text/css"));
    let (s, h, _) = get(&srv.addr, "/runs/tiny-vllm-l4/cells.csv.gz");
    assert_eq!(s, 200);
    assert!(h.contains("application/gzip"));
    let (s, h, _) = get(&srv.addr, "/runs/tiny-vllm-l4");
    assert_eq!(s, 301);
    assert!(h.contains("location: /runs/tiny-vllm-l4/"));
    let (s, _, body) = get(&srv.addr, "/runs/tiny-vllm-l4/");
    assert_eq!(s, 200);
    assert!(body.contains("Sustained decode"));
    let (s, _, body) = get(&srv.addr, "/no/such/page.html");
    assert_eq!(s, 404);
    assert!(body.contains("<h1>Not found</h1>"));
    std::os::unix::fs::symlink(ws.path().join("outside-secret.txt"), ws.path().join("public/leak.txt")).unwrap();
    // A path that climbs out, and a symlink inside the site that points out, are refused.
    for (bad, expected) in [
        ("/../outside-secret.txt", 403),
        ("/%2e%2e/outside-secret.txt", 403),
        ("/runs/%2e%2e/%2e%2e/outside-secret.txt", 403),
        ("/..%2foutside-secret.txt", 403),
        ("/static/..%5c..%5coutside-secret.txt", 403),
        ("/leak.txt", 403),
        ("/%2e%2e%2f%2e%2e%2foutside-secret.txt", 403),
    ] {
        let (s, _, body) = get(&srv.addr, bad);
        assert_eq!(s, expected, "{bad}");
        assert!(!body.contains("TOP SECRET"), "{bad} leaked");
    }
}

#[test]
fn serve_with_a_broken_first_build_serves_the_last_site_or_stops() {
    let ws = Workspace::from_fixture("valid/measured");
    let manifest = ws.path().join("data/runs/tiny-vllm-l4/run.json");
    let good = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, "{ broken").unwrap();
    // No earlier site: serve says why and stops (its build thread does not keep it alive).
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_site"))
        .args(["serve", "--port", "0"])
        .current_dir(ws.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve kept running after its first build failed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success());
    assert!(err.contains("the first build failed and there is no earlier site to serve"), "{err}");
    assert!(err.contains("run.json"), "{err}");
    // An earlier site of ours: served as it was, and a fixed edit rebuilds it.
    fs::write(&manifest, &good).unwrap();
    assert_ok(&ws.site(&["build"]));
    fs::write(&manifest, "{ broken").unwrap();
    let srv = start_serve(&ws);
    srv.wait_printed("serving the previous site");
    let (s, _, body) = get(&srv.addr, "/runs/tiny-vllm-l4/");
    assert_eq!(s, 200);
    assert!(body.contains("Tiny-1B"));
    fs::write(&manifest, good.replace("acme/Tiny-1B", "acme/Fixed-1B")).unwrap();
    srv.wait_page("/runs/tiny-vllm-l4/", "Fixed-1B");
}

#[test]
fn serve_rebuilds_on_change_and_survives_a_bad_edit() {
    let ws = Workspace::from_fixture("valid/measured");
    let srv = start_serve(&ws);
    let (_, _, before) = get(&srv.addr, "/runs/tiny-vllm-l4/");
    assert!(before.contains("Tiny-1B"));
    let manifest = ws.path().join("data/runs/tiny-vllm-l4/run.json");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, text.replace("acme/Tiny-1B", "acme/Renamed-2B")).unwrap();
    srv.wait_page("/runs/tiny-vllm-l4/", "Renamed-2B");
    // Only the changed run folder was read again.
    srv.wait_printed("1 run folders read again");
    // A broken edit: the last good site stays up.
    fs::write(&manifest, "{ broken").unwrap();
    srv.wait_printed("rebuild failed, still serving the last good site");
    let (s, _, body) = get(&srv.addr, "/runs/tiny-vllm-l4/");
    assert_eq!(s, 200);
    assert!(body.contains("Renamed-2B"));
    // Fixed again: served again.
    fs::write(&manifest, text.replace("acme/Tiny-1B", "acme/Third-3B")).unwrap();
    srv.wait_page("/runs/tiny-vllm-l4/", "Third-3B");
    // A live-reload hook is injected by the server only.
    assert!(get(&srv.addr, "/").2.contains("/__build"));
    assert!(!ws.read("public/index.html").contains("/__build"));
}

#[test]
fn serve_leaves_the_output_a_fresh_build_would_after_runs_and_cells_go() {
    let ws = Workspace::from_fixture("valid/series");
    let srv = start_serve(&ws);
    assert!(ws.path().join("public/runs/a-vllm-0.9.2/index.html").is_file());
    // A run folder removed and a cell of another run removed, while serving.
    fs::remove_dir_all(ws.path().join("data/runs/a-vllm-0.9.2")).unwrap();
    fs::remove_file(ws.path().join("data/runs/d-vllm-0.11.0/cells/decode-8192-c4.json")).unwrap();
    assert_ok(&ws.site(&["build", "--out", "fresh"]));
    let fresh = common::tree(&ws.path().join("fresh"));
    // Kept pages, changed pages and removed ones end as a fresh build of the same data.
    let deadline = Instant::now() + Duration::from_secs(30);
    // Serve may be writing while this reads: a file gone mid-walk is "not yet", as is a difference.
    while common::live_tree(&ws.path().join("public")).as_ref() != Some(&fresh) {
        assert!(Instant::now() < deadline, "serve's output never matched a fresh build: {}", srv.printed());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!ws.path().join("public/runs/a-vllm-0.9.2").exists());
    assert!(!ws.path().join("public/runs/d-vllm-0.11.0/cells/decode-8k-x4").exists());
    // The runs whose only change is their places (one run fewer on each board) had their
    // pages patched in place, not rendered.
    // (Serve prints a build's summary after its last file, so the summary may lag the tree.)
    let patched = |printed: &str| -> usize {
        printed
            .lines()
            .filter_map(|l| l.split(" kept from the previous build, ").nth(1)?.split(' ').next()?.parse::<usize>().ok())
            .sum()
    };
    while patched(&srv.printed()) == 0 {
        assert!(Instant::now() < deadline, "no page was patched: {}", srv.printed());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn serve_tells_open_pages_of_each_build_over_a_websocket() {
    let ws = Workspace::from_fixture("valid/measured");
    let srv = start_serve(&ws);
    // A page of another origin may not listen; the served origin may.
    use tungstenite::client::IntoClientRequest;
    let mut foreign = format!("ws://{}/__build", srv.addr).into_client_request().unwrap();
    foreign.headers_mut().insert("Origin", "http://evil.example".parse().unwrap());
    match tungstenite::connect(foreign) {
        Err(tungstenite::Error::Http(r)) => assert_eq!(r.status(), 403),
        other => panic!("a foreign origin was answered: {:?}", other.map(|(_, r)| r.status())),
    }
    let mut own = format!("ws://{}/__build", srv.addr).into_client_request().unwrap();
    own.headers_mut().insert("Origin", format!("http://{}", srv.addr).parse().unwrap());
    drop(tungstenite::connect(own).expect("the served origin listens"));
    let (mut socket, _) = tungstenite::connect(format!("ws://{}/__build", srv.addr)).unwrap();
    if let tungstenite::stream::MaybeTlsStream::Plain(tcp) = socket.get_ref() {
        tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    }
    let mut next_build = || socket.read().unwrap().into_text().unwrap().parse::<u64>().unwrap();
    // On connect: the last build, the one a page served now is marked with.
    let first = next_build();
    assert_eq!(get(&srv.addr, "/__build").2, first.to_string());
    let page = get(&srv.addr, "/runs/tiny-vllm-l4/").2;
    assert!(page.contains(&format!("const v='{first}'")), "the page does not name its build");
    // A change: the socket hears of the new build without asking, and the page is new by then.
    let manifest = ws.path().join("data/runs/tiny-vllm-l4/run.json");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, text.replace("acme/Tiny-1B", "acme/Pushed-1B")).unwrap();
    let second = next_build();
    assert!(second > first, "build {second} after {first}");
    let page = get(&srv.addr, "/runs/tiny-vllm-l4/").2;
    assert!(page.contains("Pushed-1B"), "the page was not rebuilt when its build was announced");
    assert!(page.contains(&format!("const v='{second}'")));
}

/// Rewrites the reported figures of the named cells of a run copied from `base`.
fn copy_run_with(ws: &Workspace, name: &str, edit: impl Fn(&str, &mut serde_json::Value)) {
    let runs = ws.path().join("data/runs");
    copy_dir(&runs.join("base"), &runs.join(name));
    for entry in fs::read_dir(runs.join(name).join("cells")).unwrap() {
        let path = entry.unwrap().path();
        let mut cell: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        edit(path.file_stem().unwrap().to_str().unwrap(), &mut cell);
        fs::write(&path, serde_json::to_string_pretty(&cell).unwrap()).unwrap();
    }
}

/// A cell valid in A that errs, loops or runs over capacity in B is the worst regression:
/// named in the terminal and on the page, and it fails the gate though no figure is judged.
#[test]
fn a_cell_that_stopped_working_is_named_and_fails_the_gate() {
    let ws = Workspace::from_fixture("valid/compare");
    copy_run_with(&ws, "broken", |name, cell| {
        let status = match name {
            n if n.starts_with("decode-8192-c1") => "error",
            n if n.starts_with("decode-8192-c2") => "looped",
            _ => return,
        };
        cell["status"] = status.into();
        if status == "error" {
            cell["error"] = serde_json::json!({"message": "connection refused"});
            cell.as_object_mut().unwrap().remove("reported");
        }
    });
    let out = ws.site(&["diff", "base", "broken", "--out", "cmp", "--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (so, se) = (stdout(&out), stderr(&out));
    assert!(so.contains("stopped working in B (valid in A): 8K x 1 (error), 8K x 2 (looped)"), "{so}");
    assert!(se.contains("--fail-on-regression: 0 cell(s) judged slower, 2 cell(s) stopped working"), "{se}");
    let page = ws.read("cmp/index.html");
    assert!(
        page.contains("2 cells stopped working in B</strong> (valid in A): 8K × 1 (Error), 8K × 2 (Looped)."),
        "page"
    );
    // Without the gate the comparison is written and the command succeeds.
    assert_ok(&ws.site(&["diff", "base", "broken", "--out", "cmp2"]));
}

/// Repetitions at 0 tok/s are measurements: the cell is judged (slower), not "single".
#[test]
fn repetitions_at_zero_are_judged_and_fail_the_gate() {
    let ws = Workspace::from_fixture("valid/compare");
    copy_run_with(&ws, "stalled", |name, cell| {
        let tps = match name {
            "decode-8192-c2" => 30.0,
            "decode-8192-c2-r2" | "decode-8192-c2-r3" => 0.0,
            _ => return,
        };
        cell["reported"]["total_tps"] = tps.into();
    });
    let out = ws.site(&["diff", "base", "stalled", "--out", "cmp", "--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("slower figures in: 8K x 2"), "{}", stdout(&out));
    let csv = ws.read("cmp/comparison.csv");
    let row = csv.lines().find(|l| l.starts_with("decode,8192,2,")).unwrap();
    assert!(row.starts_with("decode,8192,2,valid,valid,3,3,"), "{row}");
    assert!(row.contains(",slower,"), "{row}");
}

/// Two CPU runs compare per CPU, never "per GPU"; two GPU runs per GPU. The standalone page
/// of runs measured differently reads as a sentence (no dangling comma).
#[test]
fn the_per_device_view_names_the_runs_devices() {
    let ws = Workspace::from_repo_data();
    let cpu = ws.site(&["diff", "smollm2-135m-llamacpp-cpu-256", "smollm2-135m-llamacpp-cpu-aiperf", "--out", "cpu"]);
    assert_ok(&cpu);
    let page = text_of(&ws.read("cpu/index.html"));
    assert!(page.contains("Per CPU: total tok/s ÷ CPU count"), "{page}");
    assert!(page.contains("A ran on 1 CPU, B on 1: dividing by the CPU count"), "{page}");
    assert!(!page.contains("GPU"), "a CPU comparison never says GPU");
    assert!(page.contains("(see Benchmark tool, Figures and Decode test below):"), "{page}");
    let gpu = ws.site(&[
        "diff",
        "step-3.5-flash-vllm-0.29.0-4x-h200-sxm",
        "step-3.7-flash-fp8-sglang-0.5.6-2x-h200-nvl",
        "--out",
        "gpu",
    ]);
    assert_ok(&gpu);
    assert!(text_of(&ws.read("gpu/index.html")).contains("Per GPU: total tok/s ÷ GPU count"));
}

/// Figures at the ends of what a data file may hold (1e-300 tok/s against 200): the CSV
/// never prints hundreds of digits or `inf`.
#[test]
fn comparison_csv_figures_stay_short_at_the_extremes() {
    let ws = Workspace::from_fixture("valid/compare");
    copy_run_with(&ws, "tiny", |name, cell| {
        let tps = match name {
            "decode-8192-c2" => 1e-300,
            "decode-8192-c2-r2" => 2e-300,
            "decode-8192-c2-r3" => 1.5e-300,
            _ => return,
        };
        cell["reported"]["total_tps"] = tps.into();
    });
    let out = ws.site(&["diff", "tiny", "base", "--out", "cmp"]);
    assert_ok(&out);
    let csv = ws.read("cmp/comparison.csv");
    let row = csv.lines().find(|l| l.starts_with("decode,8192,2,")).unwrap();
    assert!(row.contains(",1.5e-300,"), "A's mean in exponent form: {row}");
    for field in row.split(',') {
        assert!(field.len() <= 24 && !field.contains("inf") && !field.contains("NaN"), "{field:?} in {row}");
    }
}

//! The views across runs, built by the real binary: leaderboards, throughput against
//! interactivity with cost, trend series with their comparisons, paginated listings with
//! their data file, site.toml, the sitemap and the feed.

mod common;

use std::fs;

use common::{
    assert_ok, copy_dir, evidence, evidence_cell, fixture, index_rows, stderr, table_rows, text_of, Workspace,
};

fn built_series() -> Workspace {
    let ws = Workspace::from_fixture("valid/series");
    assert_ok(&ws.site(&["build"]));
    ws
}

#[test]
fn a_leaderboard_ranks_every_run_and_the_run_page_links_to_its_place() {
    let ws = built_series();
    let board = ws.read("public/leaderboards/8k-x4/index.html");
    let rows = table_rows(&board, "<table class=\"board sortable\"");
    let places: Vec<(String, String)> =
        rows.iter().skip(1).map(|r| (text_of(&r[0]).trim().to_string(), text_of(&r[5]).trim().to_string())).collect();
    // Single measurements: figures the run-to-run noise cannot tell apart share a place,
    // marked "=": 480 and 470 (2% apart), 400 and 400; 400 is 15% below 470.
    let want = [("=1", "480.0"), ("=1", "480.0"), ("=1", "470.0"), ("=4", "400.0"), ("=4", "400.0"), ("6", "300.0")];
    assert_eq!(places, want.map(|(a, b)| (a.to_string(), b.to_string())));
    // The looped cell is listed apart, not ranked.
    assert!(board.contains("<li class=\"looped\" id=\"run-g-sglang-0.4.0\">"), "looped run not listed apart");
    let csv = common::gunzip_text(&ws.path().join("public/leaderboards/8k-x4/board.csv.gz"));
    assert_eq!(csv.lines().count(), 1 + 6 + 1);
    assert!(csv.lines().any(|l| l == ",g-sglang-0.4.0,looped,,,,,,,"), "{csv}");
    // The run page: its 8K x 4 cell links to the board with its place.
    let run = ws.read("public/runs/e-vllm-0.10.0-rerun/index.html");
    assert!(run.contains(
        "<a class=\"rank\" href=\"../../leaderboards/8k-x4/index.html#run-e-vllm-0.10.0-rerun\">#1 of 6</a>"
    ));
    let index = ws.read("public/leaderboards/index.html");
    for slug in ["prefill-8k", "8k-x1", "8k-x4"] {
        assert!(index.contains(&format!("href=\"{slug}/index.html\"")), "{slug} missing from the index");
    }
}

#[test]
fn a_series_of_single_runs_shows_its_steps_without_judging_them() {
    let ws = built_series();
    let page = ws.read("public/series/acme-tiny-1b-vllm-fp8-2x-h100-sxm/index.html");
    let rows = table_rows(&page, "<table class=\"series\"");
    let versions: Vec<String> = rows.iter().skip(1).map(|r| text_of(&r[0])).collect();
    assert_eq!(versions, ["0.9.1", "0.9.2", "0.10.0", "0.10.0", "0.11.0"]);
    let steps: Vec<String> = rows.iter().skip(1).map(|r| text_of(&r[7])).collect();
    assert_eq!(steps[0], "—");
    // The capacity column (first SLO, batch, at 8K): 200 tok/s per device for the first run.
    assert_eq!(text_of(&rows[1][6]), "200.0");
    assert!(steps[1].starts_with("Single runs, not judged (1 vs 1 run)"), "{}", steps[1]);
    assert_eq!(steps[3], "same version");
    assert!(steps[4].starts_with("Single runs, not judged (2 vs 1 run)"), "{}", steps[4]);
    assert!(steps[4].contains("Peak total tok/s -36.8% single measurements, not judged"), "{}", steps[4]);
    // No step is flagged, so none links a comparison.
    assert!(!page.contains("href=\"../../compare/"));
    // Four key-figure charts (capacity the fourth), plus one per cell with two valid
    // measurements or more.
    assert_eq!(page.matches("<svg").count(), 4 + 2);
    assert!(page.contains("Capacity, tok/s per device"));
    assert!(!ws.read("public/index.html").contains("regression"));
}

#[test]
fn a_series_page_flags_a_judged_regression_and_links_its_comparison() {
    let ws = Workspace::from_fixture("valid/trend-repeats");
    assert_ok(&ws.site(&["build"]));
    let page = ws.read("public/series/acme-tiny-1b-vllm-fp8-2x-h100-sxm/index.html");
    let rows = table_rows(&page, "<table class=\"series\"");
    let steps: Vec<String> =
        rows.iter().skip(1).map(|r| text_of(&r[7]).split_whitespace().next().unwrap_or("").to_string()).collect();
    assert_eq!(steps, ["—", "Single", "same", "Regression", "same"]);
    let slug = "e-vllm-0.10.0-rerun--d-vllm-0.11.0";
    assert!(page.contains(&format!("href=\"../../compare/{slug}/index.html\"")));
    assert!(ws.path().join(format!("public/compare/{slug}/index.html")).is_file());
    assert!(!ws.path().join("public/compare/b-vllm-0.10.0--e-vllm-0.10.0-rerun").exists());
    assert!(ws.read("public/index.html").contains("1 regression"));
}

#[test]
fn the_pareto_page_draws_every_cell_with_a_title_and_link_and_a_cost_chart() {
    let ws = built_series();
    let page = ws.read("public/pareto/acme-tiny-1b/index.html");
    // 13 valid decode cells (7 runs x 2, less one looped), each a linked marker with a title,
    // on the throughput chart and again on the cost chart.
    let markers = page
        .split("<a href=\"../../runs/")
        .skip(1)
        .filter(|rest| rest.split_once("\">").is_some_and(|(_, m)| m.starts_with(['<'])))
        .filter(|rest| {
            ["<circle", "<rect", "<polygon"].iter().any(|t| rest.split_once("\">").unwrap().1.starts_with(t))
        })
        .count();
    assert_eq!(markers, 2 * 13);
    // Each chart also names its three interactivity guides and the first SLO's region.
    assert_eq!(
        page.matches("<title>").count(),
        1 + 2 + 2 * 13 + 2 * (3 + 1),
        "the page's title, each chart's name, one per marker, the guides and the region"
    );
    assert_eq!(page.matches("<g class=\"guide\"><title>20 tok/s per user</title>").count(), 2);
    assert_eq!(page.matches("<title>batch: at least 5 tok/s per user</title>").count(), 2);
    assert!(page.contains("<title>Total tok/s per device against per-request tok/s, every configuration</title><desc>"));
    assert!(page.contains("<title>Tiny-1B · sglang 0.5.0 · 2× H100 SXM · 2026-02-01: 8K × 4: 120.0 tok/s per request, 240.0 tok/s per device (480.0 total), $2.31 per million tokens</title>"));
    assert!(page.contains("dollars per million output tokens"));
    // Configurations are told apart by marker shape as well as colour.
    assert!(page.contains("(circle)") && page.contains("(square)"));
}

#[test]
fn site_toml_sets_title_and_base_url_for_sitemap_and_feed() {
    let ws = built_series();
    let index = ws.read("public/index.html");
    assert!(index.contains("<a class=\"brand\" href=\"index.html\">Tiny lab</a>"));
    assert!(index.contains("<p class=\"lead\">Runs of Tiny-1B on H100s.</p>"));
    let sitemap = ws.read("public/sitemap.xml");
    assert!(sitemap.contains("<loc>https://example.org/speed/</loc>"));
    assert!(sitemap.contains("<loc>https://example.org/speed/leaderboards/8k-x4/</loc>"));
    assert!(!sitemap.contains("404"));
    let feed = ws.read("public/feed.xml");
    // Newest first; the undated run last, at the epoch.
    let entries: Vec<&str> = feed.split("<entry>").skip(1).map(|e| e.split("</id>").next().unwrap()).collect();
    let ids: Vec<&str> = entries
        .iter()
        .map(|e| e.rsplit("<id>https://example.org/speed/runs/").next().unwrap().trim_end_matches('/'))
        .collect();
    assert_eq!(
        ids,
        [
            "d-vllm-0.11.0",
            "e-vllm-0.10.0-rerun",
            "b-vllm-0.10.0",
            "f-sglang-0.5.0",
            "c-vllm-0.9.1",
            "g-sglang-0.4.0",
            "a-vllm-0.9.2"
        ]
    );
    assert!(feed.contains("<updated>2026-05-01T08:00:00Z</updated>"));
    // Without a base URL there is neither.
    fs::remove_file(ws.path().join("site.toml")).unwrap();
    assert_ok(&ws.site(&["build"]));
    assert!(!ws.path().join("public/sitemap.xml").exists());
    assert!(!ws.path().join("public/feed.xml").exists());
}

#[test]
fn site_toml_errors_name_the_file_line_and_column() {
    let ws = Workspace::from_fixture("valid/series");
    fs::write(ws.path().join("site.toml"), "title = \"x\"\ncolour = \"red\"\n").unwrap();
    let out = ws.site(&["build"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("site.toml: line 2, column 1: unknown field `colour`"), "{err}");
    assert!(!ws.path().join("public").exists());
}

#[test]
fn listings_paginate_without_script_and_the_index_holds_every_run() {
    let ws = Workspace::from_fixture("valid/series");
    let runs = ws.path().join("data/runs");
    // 230 runs: copies of one run, each with its own id and day.
    let source = fixture("valid/series/data/runs/c-vllm-0.9.1");
    for n in 0..223 {
        let dir = runs.join(format!("copy-{n:03}"));
        copy_dir(&source, &dir);
        let manifest = fs::read_to_string(dir.join("run.json")).unwrap();
        let day = format!("2025-{:02}-{:02}", 1 + n / 28, 1 + n % 28);
        fs::write(dir.join("run.json"), manifest.replace("2026-01-15", &day)).unwrap();
    }
    assert_ok(&ws.site(&["build"]));
    let index = ws.read("public/index.html");
    assert_eq!(table_rows(&index, "<table class=\"runs\"").len(), 1 + 100);
    assert!(index.contains("Runs 1–100 of 230, newest first."));
    assert!(index.contains("<a href=\"list/2/index.html\">2</a> <a href=\"list/3/index.html\">3</a>"));
    let third = ws.read("public/list/3/index.html");
    assert_eq!(table_rows(&third, "<table class=\"runs\"").len(), 1 + 30);
    assert!(third.contains("<a href=\"../../index.html\">1</a>"));
    // The last page ends with the undated run.
    assert!(third.contains("href=\"../../runs/a-vllm-0.9.2/index.html\""));
    let rows = index_rows(&ws.read("public/index.json"));
    assert_eq!(rows.len(), 230);
    // The capacity column says which objective it is for: the site's first.
    let index: serde_json::Value = serde_json::from_str(&ws.read("public/index.json")).unwrap();
    assert_eq!(index["capacity_slo"], "batch");
    assert_eq!(rows[0]["id"], "d-vllm-0.11.0");
    assert_eq!(rows[0]["peak"], 300.0);
    assert_eq!(rows[0]["peak_at"], "8K ×4");
    assert_eq!(rows[229]["date"], serde_json::Value::Null);
    let js = ws.read("public/index.js");
    assert!(js.starts_with("window.speedMatrixIndex = {\"capacity_slo\":\"batch\",\"columns\":["), "{}", &js[..80]);
    // The model page paginates the same way, under its own folder.
    assert!(ws.path().join("public/models/acme-tiny-1b/list/3/index.html").is_file());
    // Overlay charts draw the best seven runs, and say so.
    let model = ws.read("public/models/acme-tiny-1b/index.html");
    assert!(text_of(&model).contains("The charts draw the 7 runs with the highest peak total tok/s of 230"));
}

#[test]
fn a_rebuild_keeps_unchanged_run_pages_and_equals_a_fresh_build() {
    let ws = built_series();
    // Nothing changed: the build is skipped.
    let out = ws.site(&["build"]);
    assert_ok(&out);
    assert!(common::stdout(&out).starts_with("public is up to date"), "{}", common::stdout(&out));
    let inode = |rel: &str| {
        use std::os::unix::fs::MetadataExt as _;
        fs::metadata(ws.path().join("public").join(rel)).unwrap().ino()
    };
    let moved_run = "runs/d-vllm-0.11.0/index.html";
    let moved_cell = "runs/d-vllm-0.11.0/evidence.js";
    let moved_download = "runs/d-vllm-0.11.0/cells.json.gz";
    let before = (inode(moved_run), inode(moved_cell), inode(moved_download));
    // One figure changes: that run is re-rendered; every run whose place on the 8K x 4
    // board moves (c drops from =4 to last, d rises to 5th; a's page reads #4 either way) gets its
    // page from the previous one with the new places, its downloads and cells' evidence kept by a
    // link; the others are kept whole. (c is measured once, so the site's run-to-run noise,
    // and with it every other board's places, stays as it was.)
    let cell = ws.path().join("data/runs/c-vllm-0.9.1/cells/decode-8192-c4.json");
    let text = fs::read_to_string(&cell).unwrap();
    fs::write(&cell, text.replace("\"total_tps\": 400.0", "\"total_tps\": 100.0")).unwrap();
    let out = ws.site(&["build"]);
    assert_ok(&out);
    let summary = common::stdout(&out);
    assert!(summary.contains("(7 run pages, 5 kept from the previous build, 1 with new places only)"), "{summary}");
    let rebuilt = common::tree(&ws.path().join("public"));
    assert_ok(&ws.site(&["build", "--force", "--out", "fresh"]));
    let fresh = common::tree(&ws.path().join("fresh"));
    assert_eq!(rebuilt, fresh, "a rebuild that kept pages differs from a fresh build");
    assert!(ws.read("public/runs/d-vllm-0.11.0/index.html").contains(">#5 of 6</a>"));
    assert_ne!(inode(moved_run), before.0, "the moved run's page was kept");
    assert_eq!(inode(moved_cell), before.1, "the moved run's evidence was written again");
    assert_eq!(inode(moved_download), before.2, "the moved run's download was written again");
}

#[test]
fn a_rebuild_renders_a_runs_evidence_again_when_only_its_samples_changed() {
    // An imported cell's per-request samples are drawn from its evidence but are not among
    // the run's figures: changing one must still reach the evidence a rebuild would otherwise
    // keep.
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build"]));
    let run = "smollm2-135m-llamacpp-cpu-sglang-bench-serving";
    let max = |ws: &Workspace| evidence_cell(ws.path(), run, "decode-256-x1")["reps"][0]["ttft"]["max"].clone();
    let before = max(&ws);
    let cell = ws.path().join(format!("data/runs/{run}/cells/decode-256-c1.json"));
    let mut json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&cell).unwrap()).unwrap();
    let samples = json["reported"]["samples"].as_array_mut().unwrap();
    for s in samples.iter_mut() {
        s["ttft_s"] = serde_json::json!(9.876);
    }
    fs::write(&cell, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    assert_ok(&ws.site(&["build"]));
    assert_ne!(before, "9,876.0 ms");
    assert_eq!(max(&ws), "9,876.0 ms", "the evidence kept its old samples");
    let rebuilt = common::tree(&ws.path().join("public"));
    assert_ok(&ws.site(&["build", "--force", "--out", "fresh"]));
    assert_eq!(rebuilt, common::tree(&ws.path().join("fresh")), "a rebuild differs from a fresh build");
}

#[test]
fn a_changed_site_toml_reaches_the_pages_a_rebuild_would_keep() {
    let ws = built_series();
    let before = ws.read("public/runs/d-vllm-0.11.0/index.html");
    assert!(!before.contains("Bench of the week"));
    fs::write(ws.path().join("site.toml"), "title = \"Bench of the week\"\n").unwrap();
    let out = ws.site(&["build"]);
    assert_ok(&out);
    assert!(common::stdout(&out).contains("0 kept from the previous build"), "{}", common::stdout(&out));
    assert!(ws.read("public/runs/d-vllm-0.11.0/index.html").contains("Bench of the week"));
    let rebuilt = common::tree(&ws.path().join("public"));
    assert_ok(&ws.site(&["build", "--force", "--out", "fresh"]));
    assert_eq!(rebuilt, common::tree(&ws.path().join("fresh")), "a rebuild differs from a fresh build");
}

#[test]
fn every_cell_has_its_evidence_linked_from_the_heatmap_and_the_table() {
    let ws = Workspace::from_fixture("valid/measured");
    assert_ok(&ws.site(&["build"]));
    let run = ws.read("public/runs/tiny-vllm-l4/index.html");
    let cells = fs::read_dir(ws.path().join("data/runs/tiny-vllm-l4/cells")).unwrap().count();
    assert_eq!(evidence(ws.path(), "tiny-vllm-l4")["cells"].as_array().unwrap().len(), cells);
    // Heatmap and table both link the 8K x 2 cell in the site's one cell viewer, which loads
    // the run's evidence with a script tag (file:// allows no fetch); a run has no page of
    // its own for its cells.
    let link = "../../cell/index.html#tiny-vllm-l4/decode-8k-x2";
    assert!(run.contains(&format!("<a class=\"tps\" href=\"{link}\">150.0</a>")), "heatmap link");
    assert!(run.contains(&format!("<td><a href=\"{link}\">Sustained decode</a><td>")), "table link");
    let viewer = ws.read("public/cell/index.html");
    assert!(viewer.contains("<script src=\"../static/cell.js\"></script>"), "{viewer}");
    assert!(!ws.path().join("public/runs/tiny-vllm-l4/cell").exists());
    let cell = evidence_cell(ws.path(), "tiny-vllm-l4", "decode-8k-x2");
    let rep = &cell["reps"][0];
    // The formula with its numbers, a lane per request, the gauge against the target.
    let formulas = rep["formulas"].as_array().unwrap();
    let total = formulas.iter().find(|f| f[0] == "Total tok/s").unwrap();
    let expected =
        ["Total tok/s", "150.0", "output tokens inside the window / measured seconds", "4,500 tokens / 30.000 s"];
    assert_eq!(total, &serde_json::json!(expected));
    assert_eq!(rep["lanes"].as_array().unwrap().len(), 2);
    assert_eq!(cell["concurrency"], 2, "the gauge's target");
    assert_eq!(rep["gauge_every"], "1 s", "the gauge's interval, from its reads");
    // Two requests support a median, not a tail: p90 and p99 give way to the max of 2.
    assert_eq!(rep["ttft"]["p50"], "75.0 ms");
    assert_eq!(rep["ttft"]["p90"], "needs 10 requests (max of 2: 100.0 ms)");
    assert_eq!(rep["ttft"]["p99"], "needs 100 requests (max of 2: 100.0 ms)");
    // Neighbours along the row and the column, and the cell's leaderboard.
    let neighbours = cell["neighbours"].as_array().unwrap();
    assert!(neighbours.contains(&serde_json::json!(["Fewer requests", "decode-8k-x1", "8K × 1"])), "{neighbours:?}");
    assert!(neighbours.contains(&serde_json::json!(["Longer context", "decode-16k-x2", "16K × 2"])), "{neighbours:?}");
    assert_eq!(cell["board"], "8k-x2");
    // A looped cell shows its finding; an Over capacity cell its rule.
    let looped = evidence_cell(ws.path(), "tiny-vllm-l4", "decode-16k-x1");
    assert_eq!(looped["status"], "looped");
    assert_eq!(looped["detail"], "output repeated with a period of 37 characters over 4107 characters");
    let over = evidence_cell(ws.path(), "tiny-vllm-l4", "decode-16k-x2");
    assert_eq!(over["status"], "over_capacity");
    assert_eq!(over["detail"], "C x (context + max output) > KV budget: needs 40960 tokens, budget 40000");
}

#[test]
fn a_looped_cell_without_a_finding_has_no_detail() {
    // The seed run's looped cells say only that they looped: no empty detail after it.
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build"]));
    let cell = evidence_cell(ws.path(), "step-3.5-flash-vllm-0.29.0-4x-h200-sxm", "decode-64k-x4");
    assert_eq!((cell["status"].as_str(), cell["detail"].as_str()), (Some("looped"), Some("")));
}

#[test]
fn a_cell_of_thousands_of_requests_stays_small() {
    let ws = Workspace::from_fixture("valid/measured");
    let path = ws.path().join("data/runs/tiny-vllm-l4/cells/decode-8192-c2.json");
    let mut cell: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let one = cell["measurement"]["requests"][0].clone();
    let requests: Vec<serde_json::Value> = (0..5000)
        .map(|i| {
            let mut r = one.clone();
            r["send_s"] = serde_json::json!(i as f64 * 0.008);
            r["first_token_s"] = serde_json::json!(i as f64 * 0.008 + 0.05);
            r
        })
        .collect();
    cell["measurement"]["requests"] = serde_json::Value::Array(requests);
    fs::write(&path, serde_json::to_string(&cell).unwrap()).unwrap();
    assert_ok(&ws.site(&["build"]));
    let file = ws.read("public/runs/tiny-vllm-l4/evidence.js");
    assert!(file.len() < 60_000, "{} bytes", file.len());
    // 5,000 requests, 17 to a lane: 295 lanes.
    let rep = &evidence_cell(ws.path(), "tiny-vllm-l4", "decode-8k-x2")["reps"][0];
    assert_eq!((rep["requests"].as_u64(), rep["lane_group"].as_u64()), (Some(5000), Some(17)));
    assert_eq!(rep["lanes"].as_array().unwrap().len(), 295);
}

#[test]
fn a_leaderboard_says_which_tool_measured_each_run() {
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build"]));
    let board = ws.read("public/leaderboards/256-x1/index.html");
    let rows = table_rows(&board, "<table class=\"board sortable\"");
    let tools: Vec<String> = rows.iter().skip(1).map(|r| text_of(&r[4]).trim().to_string()).collect();
    // Our fixed-window run at the tools' settings, then the tools' fixed-count runs.
    assert_eq!(
        tools,
        ["site bench 0.1.0", "sglang bench_serving 0.5.23", "guidellm 0.8.1", "inference-perf 0.7.0", "AIPerf 0.13.0"]
    );
}

#[test]
fn the_tools_page_sets_each_tools_answer_side_by_side() {
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build"]));
    let slug = "huggingfacetb-smollm2-135m-instruct-llama-cpp-xllamacpp-2026-10-11549-1x-amd-epyc-2-cores";
    let page = ws.read(&format!("public/tools/{slug}/index.html"));
    let rows = table_rows(&page, "<table class=\"tools\"");
    let tools: Vec<String> =
        rows[0].iter().skip(1).map(|h| text_of(h).split("fixed").next().unwrap().trim().to_string()).collect();
    assert_eq!(
        tools,
        [
            "AIPerf 0.13.0",
            "guidellm 0.8.1",
            "inference-perf 0.7.0",
            "sglang bench_serving 0.5.23",
            "site bench 0.1.0",
            "vllm bench serve 0.33.0"
        ]
    );
    // One stream, 256 tokens: what each tool answered (total tok/s first).
    let one: Vec<String> = rows[1].iter().map(|c| text_of(c).trim().to_string()).collect();
    let want = ["256 × 1", "9.3 3,389 ms · 67.0 ms", "15.0 1,726 ms · 21.7 ms", "10.3 2,763 ms · 54.1 ms"];
    assert_eq!(one[..4], want);
    assert_eq!(one[4..], ["21.7 1,862 ms · 20.7 ms", "83.3 15 ms · 11.8 ms", "—"]);
    assert!(ws.read("public/index.html").contains(&format!("href=\"tools/{slug}/index.html\"")));
}

/// A series whose last version's two runs sit a third below the three before: a change
/// point at the first of them, listed on the series page, in `index.json` and in the feed.
#[test]
fn a_lasting_fall_over_a_series_history_is_listed_as_a_regression() {
    let ws = Workspace::from_fixture("valid/trend-repeats");
    assert_ok(&ws.site(&["build"]));
    let index: serde_json::Value = serde_json::from_str(&ws.read("public/index.json")).unwrap();
    let found = index["regressions"].as_array().unwrap();
    let peak = found.iter().find(|r| r["figure"] == "Peak total tok/s").unwrap();
    assert_eq!((peak["run"].as_str(), peak["version"].as_str()), (Some("d-vllm-0.11.0"), Some("0.11.0")));
    let (pct, lo, hi) =
        (peak["pct"].as_f64().unwrap(), peak["lo_pct"].as_f64().unwrap(), peak["hi_pct"].as_f64().unwrap());
    assert!(lo < pct && pct < hi && hi < 0.0, "{peak}");
    let series = peak["series"].as_str().unwrap();
    let page = ws.read(&format!("public/series/{series}/index.html"));
    let listed = text_of(&page[page.find("Change points</h2>").unwrap()..]);
    assert!(listed.contains("Peak total tok/s at 0.11.0"), "{listed}");
    let feed = ws.read("public/feed.xml");
    assert!(feed.contains("<title>Regression: Peak total tok/s -32.5% at 0.11.0"), "{feed}");
    assert!(feed.contains(&format!("series/{series}/#d-vllm-0.11.0-peak-total-tok-s")), "{feed}");
}

/// A series too short for the change-point search says so, rather than that no level moved.
#[test]
fn a_series_too_short_to_search_for_change_points_says_so() {
    let ws = Workspace::from_fixture("valid/series");
    for gone in ["e-vllm-0.10.0-rerun", "a-vllm-0.9.2"] {
        fs::remove_dir_all(ws.path().join("data/runs").join(gone)).unwrap();
    }
    assert_ok(&ws.site(&["build"]));
    let page = text_of(&ws.read("public/series/acme-tiny-1b-vllm-fp8-2x-h100-sxm/index.html"));
    assert!(
        page.contains("Too few runs to look for a change point: a change needs at least 2 runs on either side (4 in all; this series has 3)."),
        "{page}"
    );
    assert!(!page.contains("No change point"), "{page}");
}

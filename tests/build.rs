//! `site build` and `site check` on real data: the shipped seed runs, fixture runs with raw
//! records, hostile strings, and a folder of invalid inputs.

mod common;

use std::fs;

use common::*;
use speed_matrix::format::Phase;

const SEED_RUNS: [(&str, &str); 2] = [
    ("000_764db585d72203c2.txt", "step-3.5-flash-vllm-0.29.0-4x-h200-sxm"),
    ("001_6424400dfcfc312f.txt", "step-3.7-flash-fp8-sglang-0.5.6-2x-h200-nvl"),
];

fn clean(cell: &str) -> String {
    // The warning flag (and its words for screen readers) is ours, not the seed's; a
    // leaderboard place after it stays.
    match cell.split_once('!') {
        Some((before, after)) => {
            let rank = after.rfind('#').filter(|i| after[*i..].contains(" of ")).map_or("", |i| &after[i..]);
            format!("{} {rank}", before.trim()).trim().to_string()
        }
        None => cell.trim().to_string(),
    }
}

fn seed_table(seed: &str, first_col: &[&str]) -> Vec<Vec<String>> {
    seed.lines()
        .filter(|l| first_col.iter().any(|p| l.starts_with(&format!("| {p} "))))
        .map(|l| l.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect())
        .collect()
}

#[test]
fn shipped_seed_runs_carry_every_published_figure() {
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build"]));
    let index = ws.read("public/index.html");
    for (seed_file, run_id) in SEED_RUNS {
        assert!(index.contains(&format!("href=\"runs/{run_id}/index.html\"")), "index does not link {run_id}");
        let seed = fs::read_to_string(fixture(&format!("seeds/{seed_file}"))).unwrap();
        let page = ws.read(&format!("public/runs/{run_id}/index.html"));

        // "All measurements": every row, every column of the seed's, as printed (the page adds
        // the cross-check's columns after them).
        let want = seed_table(&seed, &["Prefill", "Sustained decode"]);
        let got: Vec<Vec<String>> = table_rows(&page, "<table class=\"measurements\"")
            .into_iter()
            .skip(1)
            .map(|r| r.iter().take(want[0].len()).map(|c| clean(c)).collect())
            .collect();
        assert_eq!(want.len(), 55);
        assert_eq!(got, want, "{run_id}: measurements table differs from the seed");

        // The heatmap: rows are contexts, cells "tok/s" + "N ms TTFT", or the status words.
        let want = seed_table(&seed, &["8K", "16K", "32K", "64K", "128K", "251K"]);
        // Each valid cell ends with the run's place on the cell's leaderboard (ours, not the
        // seed's).
        let mut ranked = 0;
        let got: Vec<Vec<String>> = table_rows(&page, "<table class=\"heatmap\"")
            .into_iter()
            .skip(1)
            .map(|r| {
                r.iter()
                    .map(|c| {
                        let c = clean(c);
                        match c.rfind('#') {
                            Some(i) if c[i..].contains(" of ") => {
                                ranked += 1;
                                clean(&c[..i])
                            }
                            _ => c,
                        }
                    })
                    .collect()
            })
            .collect();
        assert_eq!(got, want, "{run_id}: heatmap differs from the seed");
        assert_eq!(ranked, page.matches("<td class=\"cell valid ").count(), "{run_id}: a valid cell without its rank");

        // Prefill lines, e.g. "8K context34.2K239 ms TTFT".
        let text = text_of(&page);
        for line in seed.lines().filter(|l| l.contains(" context") && l.ends_with("ms TTFT")) {
            let line = line.trim_start_matches("prompt tok/s by context length");
            assert!(text.contains(line), "{run_id}: prefill line {line:?} missing");
        }
        // The header facts and the launch command.
        for needle in [
            "Hardware",
            "Discrete GPU",
            "GPU count",
            "Launch command",
            "Time per measurement",
            "30 s",
            "4,096 tokens",
            "Measured during decode warm-up",
        ] {
            assert!(text.contains(needle), "{run_id}: {needle:?} missing");
        }
        let title = seed.lines().nth(1).unwrap();
        assert!(page.contains(&format!("<h1>{title}</h1>")), "{run_id}: title {title:?}");
        let launch = seed.lines().skip_while(|l| *l != "Launch command").nth(1).unwrap();
        assert!(text.contains(launch), "{run_id}: launch command differs");
        // Over capacity cells are styled as such and link to their cell's evidence.
        let over = page
            .matches(&format!("<td class=\"cell over-capacity\"><a href=\"../../cell/index.html#{run_id}/decode-"))
            .count();
        assert_eq!(over, page.matches("class=\"cell over-capacity\"").count(), "{run_id}");
        // The prefill curve and throughput vs interactivity: a point per valid cell.
        let data = ws.path().join("data");
        let expected =
            [valid_points(&data, run_id, Phase::Prefill, false), valid_points(&data, run_id, Phase::Decode, false)];
        // (The second drawn in the browser from the page's numbers.)
        assert_eq!([chart_points(&page), chart_data_points(&page)].concat(), expected, "{run_id}: chart points");
    }
    let vllm = ws.read(&format!("public/runs/{}/index.html", SEED_RUNS[0].1));
    let looped = format!(
        "<td class=\"cell looped\"><a href=\"../../cell/index.html#{}/decode-64k-x4\">Looped</a>",
        SEED_RUNS[0].1
    );
    assert_eq!(vllm.matches(&looped).count(), 1);
    assert_eq!(vllm.matches("class=\"cell over-capacity\"").count(), 15);
    // Seed 2's cells whose active requests stray from their column are flagged.
    let sglang = ws.read(&format!("public/runs/{}/index.html", SEED_RUNS[1].1));
    // Named among the cells of its warning on the run page, its own message in its evidence.
    let group =
        sglang.split("<li class=\"warned\">").find(|g| g.contains("<code>active_mismatch</code>")).unwrap_or("");
    assert!(group.contains("16K × 2"), "16K x 2 not flagged: {group}");
    let evidence = evidence_cell(ws.path(), SEED_RUNS[1].1, "decode-16k-x2").to_string();
    assert!(evidence.contains("average active requests 18.0 differ from the 2 requested"), "16K x 2's message");
    let warned = |outlined: &str| sglang.matches(&format!(" warned{outlined}\"><a class=\"tps\"")).count();
    assert_eq!(warned("") + warned(" meets-slo"), 8);
}

#[test]
fn entity_index_and_glossary_pages_exist() {
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build"]));
    let model = ws.read("public/models/stepfun-ai-step-3-5-flash/index.html");
    // Listed by what the columns do not say (no start time: the run id stands for the date),
    // the title no other run shares on hover.
    assert!(model.contains(
        " title=\"Step-3.5-Flash · vllm 0.29.0 · 4× H200 SXM · step-3.5-flash-vllm-0.29.0-4x-h200-sxm\">0.29.0 · 4× · step-3.5-flash-vllm-0.29.0-4x-h200-sxm</a>"
    ));
    assert!(text_of(&model).contains("4,673.1"), "peak total tok/s missing from the model page");
    assert!(text_of(&model).contains("34.2K"), "prefill at 8K missing");
    let hw = ws.read("public/hardware/h200-nvl/index.html");
    assert!(hw.contains("../../runs/step-3.7-flash-fp8-sglang-0.5.6-2x-h200-nvl/index.html"));
    let engine = ws.read("public/engines/vllm/index.html");
    // Single-request decode and prefill curves: a point per valid cell of the engine's runs.
    let data = ws.path().join("data");
    let runs = ["step-3.5-flash-vllm-0.29.0-4x-h200-sxm", "smollm2-135m-vllm-0.32.0-cpu"];
    let expected = [
        runs.iter().map(|r| valid_points(&data, r, Phase::Decode, true)).sum::<usize>(),
        runs.iter().map(|r| valid_points(&data, r, Phase::Prefill, false)).sum(),
    ];
    assert_eq!(chart_points(&engine), expected);
    // 6 and 7 of the H200 run, 3 and 3 of the CPU run.
    assert_eq!(expected, [9, 10]);
    let glossary = text_of(&ws.read("public/glossary/index.html"));
    for formula in [
        "output tokens inside the window / measured seconds",
        "(last token time − first token time) / (tokens − 1)",
        "prompt_tokens / TTFT",
        "C × (context + max output) > KV budget",
    ] {
        assert!(glossary.contains(formula), "glossary lacks {formula:?}");
    }
    assert!(ws.path().join("public/static/style.css").is_file());
    let csv = gunzip_text(&ws.path().join("public/runs/step-3.5-flash-vllm-0.29.0-4x-h200-sxm/cells.csv.gz"));
    assert_eq!(csv.lines().count(), 56);
    assert!(csv.contains("decode,8192,,128,valid,reported,,4673.1,36.9,1129,"), "{csv}");
    let json = common::cells_download(&ws.path().join("public"), "step-3.5-flash-vllm-0.29.0-4x-h200-sxm");
    assert_eq!(json["cells"].as_array().unwrap().len(), 55);
}

#[test]
fn figures_are_computed_from_raw_records() {
    let ws = Workspace::from_fixture("valid/measured");
    assert_ok(&ws.site(&["build"]));
    let page = ws.read("public/runs/tiny-vllm-l4/index.html");
    let rows = table_rows(&page, "<table class=\"measurements\"");
    let row = |ctx: &str, c: &str| {
        rows.iter().find(|r| r[0] == "Sustained decode" && r[1] == ctx && r[2] == c).unwrap().clone()
    };
    // 4,500 tokens in the window over 30 s; TTFTs 50 and 100 ms; TBT 9.9875 and 20 ms.
    // Measured once: the total's interval is within one window (six 5 s batches).
    assert_eq!(
        row("8K", "2")[4..12],
        ["150.0 ±0.3% · n 6 batches, in one window", "75.1", "75 ms", "15.0 ms", "2.0", "0", "4,500", "30.0 s"]
    );
    assert_eq!(
        row("8K", "1")[4..12],
        ["100.0 ±0.0% · n 6 batches, in one window", "100.0", "40 ms", "10.0 ms", "1.0", "0", "3,000", "30.0 s"]
    );
    assert_eq!(row("16K", "1")[3], "Looped");
    assert_eq!(row("16K", "2")[3], "Over capacity");
    let prefill = rows.iter().find(|r| r[0] == "Prefill").unwrap();
    assert_eq!(prefill[4..7], ["32K n 1 request, one run".to_string(), "—".into(), "250 ms".into()]);
    let text = text_of(&page);
    assert!(text.contains("needs 40960 tokens, budget 40000"), "over-capacity numbers missing");
    assert!(text.contains("period of 37 characters"), "loop finding missing");
    // Notes render as Markdown with raw HTML shown as text.
    assert!(page.contains("<strong>quiet</strong>"));
    assert!(!page.contains("<script>alert('notes')"));
    let about = ws.read("public/pages/about/index.html");
    assert!(about.contains("<h1>About these runs</h1>"));
    assert!(ws.read("public/index.html").contains("pages/about/index.html"));
}

#[test]
fn every_string_from_data_is_escaped() {
    let ws = Workspace::from_fixture("valid/xss");
    assert_ok(&ws.site(&["build"]));
    for entry in walkdir::WalkDir::new(ws.path().join("public")) {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "html") {
            let html = fs::read_to_string(entry.path()).unwrap();
            for bad in ["<script>alert", "<b>eng</b>", "<i>", "<img src=x", "</pre><script>"] {
                assert!(!html.contains(bad), "{} contains {bad:?}", entry.path().display());
            }
        }
    }
    let page = ws.read("public/runs/xss-run/index.html");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("class=\"cell error\""));
}

#[test]
fn same_input_gives_byte_identical_output() {
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build", "--out", "a"]));
    assert_ok(&ws.site(&["build", "--out", "b"]));
    let (a, b) = (tree(&ws.path().join("a")), tree(&ws.path().join("b")));
    assert!(a.len() > 10);
    assert_eq!(a.iter().map(|f| &f.0).collect::<Vec<_>>(), b.iter().map(|f| &f.0).collect::<Vec<_>>());
    for (fa, fb) in a.iter().zip(&b) {
        assert!(fa.1 == fb.1, "{} differs between two builds", fa.0);
    }
}

#[test]
fn another_site_program_keeps_no_page_of_the_last_build() {
    // Pages are kept by a hash of their inputs; the program that draws them is one of them,
    // or a new `site` (a chart drawn differently) would leave the old drawings in place.
    let ws = Workspace::from_fixture("valid/measured");
    assert_ok(&ws.site(&["build"]));
    let other = tempfile::tempdir().unwrap();
    let exe = other.path().join("site");
    fs::copy(env!("CARGO_BIN_EXE_site"), &exe).unwrap();
    let out = std::process::Command::new(&exe).arg("build").current_dir(ws.path()).output().unwrap();
    assert_ok(&out);
    assert!(stdout(&out).contains("(1 run pages, 0 kept from the previous build,"), "{}", stdout(&out));
    // The same program again, after a data file was written with the same bytes (a new
    // modification time, so the build runs), keeps them.
    let touched = ws.path().join("data/runs/tiny-vllm-l4/notes.md");
    fs::write(&touched, fs::read(&touched).unwrap()).unwrap();
    let out = std::process::Command::new(&exe).arg("build").current_dir(ws.path()).output().unwrap();
    assert_ok(&out);
    assert!(stdout(&out).contains("(1 run pages, 1 kept from the previous build,"), "{}", stdout(&out));
}

#[test]
fn a_failed_build_leaves_the_previous_site_untouched() {
    let ws = Workspace::from_fixture("valid/measured");
    assert_ok(&ws.site(&["build"]));
    let before = tree(&ws.path().join("public"));
    fs::write(ws.path().join("data/runs/tiny-vllm-l4/cells/decode-8192-c1.json"), "{ broken").unwrap();
    let out = ws.site(&["build"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("decode-8192-c1.json:1:3"), "{}", stderr(&out));
    assert_eq!(tree(&ws.path().join("public")), before);
    // No temporary folders are left behind: beside the output only its build cache.
    let mut names: Vec<String> =
        fs::read_dir(ws.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, [".public.build", "data", "public"]);
}

#[test]
fn a_broken_template_override_fails_without_touching_output() {
    let ws = Workspace::from_fixture("valid/measured");
    assert_ok(&ws.site(&["build"]));
    let before = tree(&ws.path().join("public"));
    fs::create_dir_all(ws.path().join("site-templates")).unwrap();
    fs::write(ws.path().join("site-templates/index.html"), "{% if %}").unwrap();
    let out = ws.site(&["build"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("template index.html does not parse"), "{}", stderr(&out));
    assert_eq!(tree(&ws.path().join("public")), before);
    // A good override replaces the default by name.
    fs::write(ws.path().join("site-templates/index.html"), "custom {{ listing.total }}").unwrap();
    assert_ok(&ws.site(&["build"]));
    assert_eq!(ws.read("public/index.html"), "custom 1");
}

#[test]
fn a_folder_site_did_not_build_is_never_replaced() {
    let ws = Workspace::from_fixture("valid/measured");
    fs::create_dir_all(ws.path().join("mine")).unwrap();
    fs::write(ws.path().join("mine/thesis.txt"), "precious").unwrap();
    let out = ws.site(&["build", "--out", "mine"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("refusing to replace mine"), "{}", stderr(&out));
    assert_eq!(ws.read("mine/thesis.txt"), "precious");
}

#[test]
fn check_validates_and_writes_nothing() {
    let ws = Workspace::from_repo_data();
    let out = ws.site(&["check"]);
    assert_ok(&out);
    let runs: Vec<_> = fs::read_dir(ws.path().join("data/runs")).unwrap().map(|e| e.unwrap().path()).collect();
    // Loose cell files (older schemas), or a cells file of a line a cell.
    let cells: usize = runs
        .iter()
        .map(|r| match fs::read_dir(r.join("cells")) {
            Ok(files) => files.count(),
            Err(_) => gunzip_text(&r.join("cells.jsonl.gz")).lines().count(),
        })
        .sum();
    assert!(stdout(&out).contains(&format!("{} runs, {cells} cells", runs.len())), "{}", stdout(&out));
    assert!(!ws.path().join("public").exists());
}

#[test]
fn invalid_inputs_give_clear_errors() {
    let dir = fixture("invalid");
    let mut cases = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let case = entry.unwrap().path();
        let expected = fs::read_to_string(case.join("expected-error.txt")).unwrap();
        let ws = Workspace::from_fixture(&format!("invalid/{}", case.file_name().unwrap().to_string_lossy()));
        for cmd in [&["check"][..], &["build"][..]] {
            let out = ws.site(cmd);
            let err = stderr(&out);
            assert!(!out.status.success(), "{}: {cmd:?} succeeded", case.display());
            assert!(err.contains(expected.trim()), "{}: expected {:?} in:\n{err}", case.display(), expected.trim());
            assert!(err.starts_with("error: "), "{err}");
        }
        assert!(!ws.path().join("public").exists(), "{}: output written", case.display());
        cases += 1;
    }
    assert!(cases >= 8);
}

#[test]
fn all_problems_are_reported_at_once() {
    let ws = Workspace::from_fixture("valid/measured");
    let cells = ws.path().join("data/runs/tiny-vllm-l4/cells");
    fs::write(cells.join("decode-8192-c1.json"), "[").unwrap();
    fs::write(cells.join("decode-8192-c2.json"), "{\"schema_version\": 1}").unwrap();
    let err = stderr(&ws.site(&["check"]));
    assert!(err.contains("2 problems in"), "{err}");
    assert!(
        err.contains("decode-8192-c1.json:1:1") && err.contains("decode-8192-c2.json:1:21: missing field `phase`"),
        "{err}"
    );
}

#[test]
fn every_run_and_cell_page_has_a_title_of_its_own() {
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build"]));
    let title = |page: &str| {
        let html = ws.read(page);
        let start = html.find("<title>").unwrap() + 7;
        html[start..html[start..].find("</title>").unwrap() + start].to_string()
    };
    // Runs of one model on the same hardware: before, every one was titled
    // "SmolLM2-135M-Instruct on AMD EPYC (2 cores) ×1".
    let runs = ["smollm2-135m-llamacpp-cpu-2-slots", "smollm2-135m-llamacpp-cpu-256"];
    let titles: Vec<String> = runs.iter().map(|r| title(&format!("public/runs/{r}/index.html"))).collect();
    let model = "SmolLM2-135M-Instruct · llama.cpp xllamacpp 2026.10.11549 · 1× AMD EPYC (2 cores)";
    assert_eq!(titles[0], format!("{model} · 2026-12-02 · smollm2-135m-llamacpp-cpu-2-slots · Speed Matrix"));
    assert_eq!(titles[1], format!("{model} · 2026-12-03 · Speed Matrix"));
    // The run's evidence names the run the same way (the cell viewer titles each cell with it).
    let evidence = common::evidence(ws.path(), "smollm2-135m-llamacpp-cpu-2-slots");
    assert_eq!(format!("{} · Speed Matrix", evidence["title"].as_str().unwrap()), titles[0]);
}

#[test]
fn feeds_and_sitemaps_are_well_formed_whatever_the_names_hold() {
    let ws = Workspace::from_fixture("valid/compare");
    // A control character in the site's title and in a model id: XML 1.0 allows neither.
    std::fs::write(
        ws.path().join("site.toml"),
        "title = \"Lab\\u0007 \\u001b[2J\"\nbase_url = \"https://example.org/lab/\"\n",
    )
    .unwrap();
    let manifest = ws.path().join("data/runs/base/run.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let mut run: serde_json::Value = serde_json::from_str(&text).unwrap();
    run["model"]["id"] = serde_json::Value::from("acme/Tiny\u{1}-1B\u{c}");
    std::fs::write(&manifest, serde_json::to_string_pretty(&run).unwrap()).unwrap();
    assert_ok(&ws.site(&["build"]));
    for file in ["public/feed.xml", "public/sitemap.xml"] {
        let xml = ws.read(file);
        let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{file} is not well-formed XML: {e}"));
        assert!(doc.descendants().count() > 3, "{file}");
    }
    assert!(ws.read("public/feed.xml").contains("Tiny\u{FFFD}-1B"));
}

/// `site build` says what the site weighs by section and, with `[publish] host`, that its
/// host takes it; a host it does not know is refused by name.
#[test]
fn a_build_prints_its_weight_by_section_and_checks_the_named_host() {
    let ws = Workspace::from_fixture("valid/series");
    let toml = ws.path().join("site.toml");
    let base = fs::read_to_string(&toml).unwrap();
    fs::write(&toml, format!("{base}\n[publish]\nhost = \"cloudflare-pages\"\n")).unwrap();
    let out = ws.site(&["build"]);
    assert_ok(&out);
    let said = stdout(&out);
    assert!(said.contains("; fits cloudflare-pages"), "{said}");
    let sections: Vec<&str> = said
        .lines()
        .skip_while(|l| !l.starts_with("By section:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(sections, ["runs", "cells", "boards", "models,", "site", "assets"], "{said}");
    // The cells line counts each run's evidence file and the one page that draws them.
    let evidence = walkdir::WalkDir::new(ws.path().join("public/runs"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.file_name() == "evidence.js")
        .count();
    let runs = fs::read_dir(ws.path().join("data/runs")).unwrap().count();
    assert_eq!(evidence, runs, "an evidence file a run");
    assert!(ws.path().join("public/cell/index.html").is_file());
    let cell_pages = evidence + 1;
    let cells_line = said.lines().find(|l| l.trim_start().starts_with("cells")).unwrap();
    assert!(cells_line.contains(&format!(" {cell_pages} files ")), "{cells_line} ({cell_pages} cell files)");
    assert!(said.contains("Largest file: "), "{said}");
    fs::write(&toml, format!("{base}\n[publish]\nhost = \"geocities\"\n")).unwrap();
    let out = ws.site(&["build"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown variant `geocities`"), "{}", stderr(&out));
}

#[test]
fn evidence_days_publishes_the_evidence_of_recent_runs_only() {
    let ws = Workspace::from_repo_data();
    let toml = ws.path().join("site.toml");
    let base = fs::read_to_string(&toml).unwrap_or_default();
    fs::write(&toml, format!("{base}\n[publish]\nevidence_days = 0\n")).unwrap();
    assert_ok(&ws.site(&["build"]));
    // The day each run started (none for an undated run), from its manifest.
    let runs: Vec<(String, Option<String>)> = fs::read_dir(ws.path().join("data/runs"))
        .unwrap()
        .map(|e| {
            let dir = e.unwrap().path();
            let m: serde_json::Value =
                serde_json::from_str(&fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
            let day = m["started_at"].as_str().map(|s| s[..10].to_string());
            (dir.file_name().unwrap().to_string_lossy().into_owned(), day)
        })
        .collect();
    let newest = runs.iter().filter_map(|r| r.1.clone()).max().unwrap();
    let (mut kept, mut left) = (0, 0);
    for (id, day) in &runs {
        let recent = day.as_ref().is_none_or(|d| *d == newest);
        let evidence = ws.path().join(format!("public/runs/{id}/evidence.js"));
        assert_eq!(evidence.is_file(), recent, "{id} ({day:?}, newest {newest})");
        let page = ws.read(&format!("public/runs/{id}/index.html"));
        assert_eq!(page.contains("<code>[publish] evidence_days</code>"), !recent, "{id}: the page's note");
        // Every figure stays: the table of all measurements and the downloads.
        assert!(page.contains("<table class=\"measurements\""), "{id}");
        assert!(ws.path().join(format!("public/runs/{id}/cells.csv.gz")).is_file(), "{id}");
        if recent {
            kept += 1
        } else {
            left += 1
        }
    }
    assert!(kept > 0 && left > 0, "the data has runs of more than one day: {runs:?}");
    // Without the key, every run publishes its evidence again.
    fs::write(&toml, &base).unwrap();
    assert_ok(&ws.site(&["build"]));
    for (id, _) in &runs {
        assert!(ws.path().join(format!("public/runs/{id}/evidence.js")).is_file(), "{id}");
    }
}

//! Answers at the reader's latency targets: capacity under each SLO on fixture runs with
//! known answers (model, run page, boards, front page, index.json), and `site init`.

mod common;

use std::fs;

use common::*;
use speed_matrix::analysis::capacity::Miss;
use speed_matrix::site::Site;

fn load(fixture: &str) -> Site {
    load_fixture(fixture)
}

#[test]
fn capacity_is_the_highest_concurrency_meeting_each_slo() {
    let site = load("targets");
    let idx = |id: &str| site.model.run_index(id).unwrap();
    let cap = |id: &str, slo: &str| site.model.capacity[idx(id)].at(8192, slo).unwrap().clone();
    // vLLM on 2 devices: 4 at once keeps 25 ms between tokens (chat allows 50) and TTFT
    // 400 ms (2,000 allowed); 16 at once is 66.7 ms: too slow for chat, fine for batch.
    let chat = cap("acme-vllm", "chat").point.unwrap();
    assert_eq!((chat.concurrency, chat.total_tps, chat.tps_per_device), (4, 160.0, 80.0));
    // $2 per device-hour x 2 / 3600 / 160 tok/s x 1e6.
    assert!((chat.usd_per_mtok.unwrap() - 6.944).abs() < 1e-3);
    let batch = cap("acme-vllm", "batch").point.unwrap();
    assert_eq!((batch.concurrency, batch.tps_per_device), (16, 120.0));
    // The CPU run meets batch but no cell meets chat, and it says why.
    let none = cap("acme-llamacpp-cpu", "chat");
    assert_eq!(none.point, None);
    assert!(matches!(none.miss, Some(Miss::TooSlow { tbt_ms, .. }) if tbt_ms == 125.0), "{:?}", none.miss);
    assert!(cap("acme-llamacpp-cpu", "batch").point.is_some());
    // Interactivity levels on the vLLM curve (60, 30), (40, 80), (15, 120) per device.
    let levels = &site.model.capacity[idx("acme-vllm")].contexts[0].levels;
    let got: Vec<(Option<f64>, bool)> = levels.iter().map(|l| (l.tps_per_device, l.interpolated)).collect();
    assert_eq!(got, [(None, false), (Some(112.0), true), (Some(55.0), true)]);
    // The front page's answer: the model's shared context, the best run at each SLO.
    let best = &site.model.best[0];
    assert_eq!((best.context, best.runs_at_context), (8192, 3));
    let named: Vec<(&str, Option<&str>)> = best
        .slos
        .iter()
        .map(|(slo, e)| (slo.as_str(), e.as_ref().map(|e| site.model.runs[e.run].id.as_str())))
        .collect();
    assert_eq!(named, [("batch", Some("acme-vllm")), ("chat", Some("acme-vllm"))]);
    // The chat board ranks by tok/s per device: vLLM 80, SGLang 30; the CPU run is listed apart.
    let board = site.model.targets.iter().find(|b| b.slo == "chat" && b.context == 8192).unwrap();
    let order: Vec<&str> = board.entries.iter().map(|e| site.model.runs[e.run].id.as_str()).collect();
    assert_eq!(order, ["acme-vllm", "acme-sglang"]);
    assert_eq!(board.none, [idx("acme-llamacpp-cpu")]);
}

#[test]
fn pages_show_capacity_at_the_targets() {
    let ws = Workspace::from_fixture("valid/targets");
    assert_ok(&ws.site(&["build"]));
    let run = ws.read("public/runs/acme-vllm/index.html");
    let rows = table_rows(&run, "<table class=\"targets\"");
    // Columns in SLO order (batch, chat by name); the 8K row.
    assert_eq!(rows[0], ["Context", "batch", "chat"]);
    assert!(
        rows[1][1].starts_with("120.0 tok/s per device ×16 at once · 240.0 total · $4.63 per million tokens"),
        "{:?}",
        rows[1]
    );
    assert!(
        rows[1][2].starts_with("80.0 tok/s per device ×4 at once · 160.0 total · $6.94 per million tokens"),
        "{:?}",
        rows[1]
    );
    let levels = table_rows(&run, "<table class=\"levels\"");
    assert_eq!(levels[1], ["8K", "—", "112.0 interpolated", "55.0 interpolated"]);
    // The heatmap outlines the cells meeting the first SLO (batch): all three here.
    assert_eq!(run.matches(" meets-slo\"><a class=\"tps\"").count(), 3);
    assert!(run.contains("<span class=\"key meets-slo\">outlined</span>: the cell meets the batch objective"));
    let cpu = ws.read("public/runs/acme-llamacpp-cpu/index.html");
    let rows = table_rows(&cpu, "<table class=\"targets\"");
    assert!(
        rows[1][2].starts_with("none even the least loaded cell is too slow: 125.0 ms between tokens, 50.0 ms allowed"),
        "{:?}",
        rows[1]
    );
    // The board and its index.
    let board = ws.read("public/targets/chat-8k/index.html");
    let rows = table_rows(&board, "<table class=\"board sortable targets\"");
    assert_eq!(rows.len(), 3, "a header and two runs");
    assert_eq!(rows[1][1], "Tiny-1B · vllm 0.10.0 · 2× H100 SXM · 2026-11-01", "{:?}", rows[1]);
    assert_eq!(rows[1][5..8], ["80.0", "160.0", "$6.94"]);
    assert!(
        board.contains("runs/acme-llamacpp-cpu/index.html#targets"),
        "the run with no cell meeting it is listed apart"
    );
    assert!(ws.read("public/targets/index.html").contains("href=\"chat-8k/index.html\""));
    // The front page answers the question without opening a run.
    let index = ws.read("public/index.html");
    let best = &index[index.find("id=\"best\"").expect("front page answer")..];
    let best = &best[..best.find("</section>").unwrap()];
    let text = text_of(best);
    assert!(text.contains("chat: ≥ 20 tok/s per user (time between tokens ≤ 50.0 ms) at the median request"), "{text}");
    assert!(best.contains("<dt>chat</dt><dd><a href=\"runs/acme-vllm/index.html#targets\"><strong>80.0</strong> tok/s per device</a> on H100 SXM ×2 · vllm 0.10.0 <small>(×4 at once · $6.94 per million tokens)</small>"), "{best}");
    assert!(text.contains("at 8K context · 3 runs"), "{text}");
    // The runs listing has a capacity column (the first SLO, at each run's shortest context);
    // the stylesheet labels each cell of a phone's cards (no attribute on every cell).
    let rows = table_rows(&index, "<table class=\"runs\"");
    assert_eq!(rows[0].last().unwrap(), "Capacity (batch), tok/s per device");
    // A row's name says what its columns do not: version, device count, date.
    let vllm_row = rows.iter().find(|r| r[0] == "0.10.0 · 2× · 2026-11-01 imported").unwrap();
    assert_eq!(vllm_row.last().unwrap(), "120.0 at 8K ×16");
    assert!(index.contains("<td class=\"num\">120.0<small> at 8K ×16</small></td>"));
    // index.json carries the listing's capacity; the run's download carries it in full.
    let rows = index_rows(&ws.read("public/index.json"));
    let vllm = rows.iter().find(|r| r["id"] == "acme-vllm").unwrap();
    assert_eq!((vllm["capacity_text"].as_str(), vllm["capacity_at"].as_str()), (Some("120.0"), Some("8K ×16")));
    let download = common::cells_download(&ws.path().join("public"), "acme-vllm");
    let chat = &download["capacity"]["contexts"][0]["slos"][1];
    assert_eq!((chat["slo"].as_str(), chat["point"]["concurrency"].as_u64()), (Some("chat"), Some(4)));
    assert_eq!(download["capacity"]["contexts"][0]["levels"][1]["tps_per_device"], 112.0);
}

#[test]
fn init_makes_a_site_that_builds_and_refuses_a_non_empty_folder() {
    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path().join("lab");
    assert_ok(&site_in(ws.path(), &["init", "lab"]));
    for f in ["site.toml", "data/README.md", ".gitignore", ".github/workflows/site.yml"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    assert!(dir.join("data/runs").is_dir());
    // Every key of the generated site.toml is read (and the defaults hold).
    let settings = speed_matrix::format::SiteSettings::load(&dir.join("site.toml")).unwrap();
    assert_eq!(settings.slos().iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["chat", "batch"]);
    assert_eq!(settings.interactivity, [10.0, 20.0, 50.0]);
    // The workflow publishes to GitHub Pages, so builds are checked against its limits.
    assert_eq!(settings.publish.host, speed_matrix::format::Host::GithubPages);
    // The new site builds and checks as it is.
    assert_ok(&site_in(&dir, &["check"]));
    let built = site_in(&dir, &["build"]);
    assert_ok(&built);
    assert!(stdout(&built).contains("; fits github-pages"), "{}", stdout(&built));
    assert!(dir.join("public/index.html").is_file());
    // The workflow is YAML whose build job runs the build command and publishes public/.
    let yaml = fs::read_to_string(dir.join(".github/workflows/site.yml")).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&yaml).expect("the workflow parses as YAML");
    let steps = docs[0]["jobs"]["build"]["steps"].as_vec().unwrap();
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    assert!(runs.contains(&"site build"), "{runs:?}");
    let publish =
        steps.iter().find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-pages-artifact")));
    assert_eq!(publish.unwrap()["with"]["path"].as_str(), Some("public"));
    // Least privilege: nothing may publish by default; the build job (which runs the installed
    // code) reads only; the deploy job alone publishes. The install is pinned to this version.
    let w = &docs[0];
    assert_eq!(w["permissions"]["contents"].as_str(), Some("read"));
    assert!(w["permissions"]["pages"].is_badvalue() && w["permissions"]["id-token"].is_badvalue(), "{yaml}");
    assert_eq!(w["jobs"]["build"]["permissions"]["contents"].as_str(), Some("read"));
    assert!(w["jobs"]["build"]["permissions"]["pages"].is_badvalue(), "{yaml}");
    assert!(w["jobs"]["build"]["permissions"]["id-token"].is_badvalue(), "{yaml}");
    assert_eq!(w["jobs"]["deploy"]["permissions"]["pages"].as_str(), Some("write"));
    assert_eq!(w["jobs"]["deploy"]["permissions"]["id-token"].as_str(), Some("write"));
    let install = format!("pip install speed-matrix=={}", env!("CARGO_PKG_VERSION"));
    assert!(runs.iter().any(|r| r.trim() == install), "{runs:?}");
    // `--install` puts the user's own command there, as YAML that still parses.
    assert_ok(&site_in(
        ws.path(),
        &["init", "own", "--install", "pip install 'speed-matrix==0.2.0' --require-hashes -r req.txt"],
    ));
    let own = fs::read_to_string(ws.path().join("own/.github/workflows/site.yml")).unwrap();
    let own = yaml_rust2::YamlLoader::load_from_str(&own).expect("the workflow parses as YAML");
    let own_runs: Vec<&str> =
        own[0]["jobs"]["build"]["steps"].as_vec().unwrap().iter().filter_map(|s| s["run"].as_str()).collect();
    assert_eq!(own_runs[0].trim(), "pip install 'speed-matrix==0.2.0' --require-hashes -r req.txt");
    // A folder with anything in it is refused, and nothing is written there.
    let out = site_in(ws.path(), &["init", "lab"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("the folder is not empty"), "{}", stderr(&out));
    fs::write(dir.join("site.toml"), "title = \"mine\"\n").unwrap();
    assert!(!site_in(ws.path(), &["init", "lab"]).status.success());
    assert_eq!(fs::read_to_string(dir.join("site.toml")).unwrap(), "title = \"mine\"\n");
    assert_ok(&site_in(ws.path(), &["init", "lab", "--force"]));
    assert!(fs::read_to_string(dir.join("site.toml")).unwrap().contains("[slo.chat]"));
}

/// `[slo]` with no objective in it: no page shows an empty table of objectives.
#[test]
fn a_site_with_no_objective_shows_no_empty_table() {
    let ws = Workspace::from_fixture("valid/targets");
    fs::write(ws.path().join("site.toml"), "[slo]\n").unwrap();
    assert_ok(&ws.site(&["build"]));
    let run = ws.read("public/runs/acme-vllm/index.html");
    assert!(!run.contains("<table class=\"targets\">"), "no targets table without objectives");
    assert!(!ws.read("public/index.html").contains("id=\"best\""));
    assert!(ws.read("public/targets/index.html").contains("This site names no objective"));
    for (path, text) in tree(&ws.path().join("public")) {
        let text = String::from_utf8_lossy(&text);
        assert!(!text.contains("<tbody>\n</tbody>") && !text.contains("<tbody></tbody>"), "{path}: an empty table");
    }
}

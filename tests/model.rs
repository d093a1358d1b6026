//! The page model, checked in process as zola's site tests do: fixture folders loaded with
//! `Site::load`, then exact expectations on runs, groups, figures and comparisons.

mod common;

use std::path::Path;

use common::{copy_dir, load_fixture};
use speed_matrix::analysis::compare::{comparable, compare, CellState, Verdict};
use speed_matrix::analysis::series::{KeyFigure, Trend};
use speed_matrix::analysis::{BoardKey, FigureSource, GroupKind};
use speed_matrix::format::Status;
use speed_matrix::site::{Site, SiteConfig};

fn load(fixture: &str) -> Site {
    load_fixture(fixture)
}

fn ids(site: &Site, runs: &[usize]) -> Vec<String> {
    runs.iter().map(|&i| site.model.runs[i].id.clone()).collect()
}

#[test]
fn series_follow_release_order_and_judge_each_step() {
    let site = load("series");
    assert_eq!(site.settings.title, "Tiny lab");
    let names: Vec<&str> = site.model.series.iter().map(|s| s.slug.as_str()).collect();
    assert_eq!(names, ["acme-tiny-1b-sglang-fp8-2x-h100-sxm", "acme-tiny-1b-vllm-fp8-2x-h100-sxm"]);
    let vllm = &site.model.series[1];
    // 0.10 after 0.9.2 (not as text); the undated 0.9.2 by its version; equal versions by time.
    assert_eq!(
        ids(&site, &vllm.runs),
        ["c-vllm-0.9.1", "a-vllm-0.9.2", "b-vllm-0.10.0", "e-vllm-0.10.0-rerun", "d-vllm-0.11.0"]
    );
    // Steps join versions (the two 0.10.0 runs are one point); a version with a single run
    // is shown, never judged: 475 -> 300 is -36.8% but one run of 0.11.0 cannot say so.
    let trends: Vec<(Trend, u32, u32)> = vllm.steps.iter().map(|s| (s.trend, s.n_from, s.n_to)).collect();
    assert_eq!(trends, [(Trend::NotJudged, 1, 1), (Trend::NotJudged, 1, 2), (Trend::NotJudged, 2, 1)]);
    let last = &vllm.steps[2];
    assert_eq!(format!("{:.1}", last.changes[0].change.pct), "-36.8");
    assert!(last.changes.iter().all(|c| c.change.verdict == Verdict::Single));
    assert_eq!(last.comparison, None, "an unjudged step links no comparison");
    assert_eq!(vllm.prefill_context, Some(8192));
    // A looped peak cell leaves the run's peak to its valid cells: 80 -> 480.
    let sglang = &site.model.series[0];
    assert_eq!(ids(&site, &sglang.runs), ["g-sglang-0.4.0", "f-sglang-0.5.0"]);
    assert_eq!(sglang.values[0], [Some(80.0), Some(480.0)]);
    assert_eq!(sglang.steps[0].trend, Trend::NotJudged, "single runs a side");
}

#[test]
fn leaderboards_rank_valid_cells_share_places_on_ties_and_list_the_rest_apart() {
    let site = load("series");
    let board = site
        .model
        .leaderboard(BoardKey::Decode { context: 8192, concurrency: 4, workload: Default::default() })
        .unwrap();
    let ranked: Vec<(usize, String, f64, f64)> =
        board.ranked.iter().map(|e| (e.rank, site.model.runs[e.run].id.clone(), e.score, e.tps_per_device)).collect();
    let row = |rank, id: &str, score: f64| (rank, id.to_string(), score, score / 2.0);
    assert_eq!(
        ranked,
        [
            row(1, "b-vllm-0.10.0", 480.0),
            row(1, "f-sglang-0.5.0", 480.0),
            // 2% below the leaders: within the run-to-run noise (b and e, runs of one
            // configuration, differ by as much), so it shares their place.
            row(1, "e-vllm-0.10.0-rerun", 470.0),
            row(4, "a-vllm-0.9.2", 400.0),
            row(4, "c-vllm-0.9.1", 400.0),
            row(6, "d-vllm-0.11.0", 300.0),
        ]
    );
    let apart: Vec<(String, Status)> =
        board.unranked.iter().map(|u| (site.model.runs[u.run].id.clone(), u.status)).collect();
    assert_eq!(apart, [("g-sglang-0.4.0".to_string(), Status::Looped)]);
    // Prefill boards come first, then decode boards by context and concurrency.
    let keys: Vec<BoardKey> = site.model.leaderboards.iter().map(|b| b.key).collect();
    assert_eq!(
        keys,
        [
            BoardKey::Prefill { context: 8192 },
            BoardKey::Decode { context: 8192, concurrency: 1, workload: Default::default() },
            BoardKey::Decode { context: 8192, concurrency: 4, workload: Default::default() },
        ]
    );
}

#[test]
fn the_pareto_view_draws_each_configurations_frontier_and_its_cost() {
    let site = load("series");
    let view = &site.model.paretos[0];
    assert!(view.priced);
    let ctx = &view.contexts[0];
    assert_eq!(ctx.context, 8192);
    let engines: Vec<&str> = ctx.configs.iter().map(|c| c.key.engine.as_str()).collect();
    assert_eq!(engines, ["sglang", "vllm"]);
    let sglang = &ctx.configs[0];
    // Points by per-request tok/s: g at 1 (80), f at 1 (90), f at 4 (120 per request, 240 per
    // device): the last is better on both axes than the others.
    let xy: Vec<(f64, f64)> = sglang.points.iter().map(|p| (p.per_request_tps, p.tps_per_device)).collect();
    assert_eq!(xy, [(80.0, 40.0), (90.0, 45.0), (120.0, 240.0)]);
    assert_eq!(sglang.frontier, [2]);
    // $2 per device-hour x 2 devices / 3600 s / 480 tok/s x 1e6 = $2.31 per million tokens.
    let cost = sglang.points[2].usd_per_mtok.unwrap();
    assert!((cost - 2.0 * 2.0 / 3600.0 / 480.0 * 1e6).abs() < 1e-9, "{cost}");
    assert_eq!(sglang.cost_frontier, [2]);
    assert_eq!(ctx.configs[1].points.len(), 10, "every valid decode cell of the five vllm runs");
}

#[test]
fn listing_titles_tell_every_run_apart() {
    let site = load("series");
    let titles = speed_matrix::render::common::listing_titles(&site.model.runs);
    let by_id: Vec<(String, String)> = site.model.runs.iter().map(|r| r.id.clone()).zip(titles).collect();
    let title = |id: &str| by_id.iter().find(|(i, _)| i == id).unwrap().1.clone();
    assert_eq!(title("a-vllm-0.9.2"), "Tiny-1B · vllm 0.9.2 · 2× H100 SXM · a-vllm-0.9.2");
    assert_eq!(title("c-vllm-0.9.1"), "Tiny-1B · vllm 0.9.1 · 2× H100 SXM · 2026-01-15");
    assert_eq!(title("b-vllm-0.10.0"), "Tiny-1B · vllm 0.10.0 · 2× H100 SXM · 2026-03-01 · b-vllm-0.10.0");
    assert_eq!(title("e-vllm-0.10.0-rerun"), "Tiny-1B · vllm 0.10.0 · 2× H100 SXM · 2026-03-01 · e-vllm-0.10.0-rerun");
}

#[test]
fn runs_are_sorted_and_grouped_with_their_page_slugs() {
    let site = load("compare");
    let ids: Vec<&str> = site.model.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["base", "disjoint", "faster"]);
    let names = |kind| {
        site.model.groups(kind).iter().map(|g| (g.name.clone(), g.slug.clone(), g.runs.clone())).collect::<Vec<_>>()
    };
    assert_eq!(names(GroupKind::Model), [("acme/Tiny-1B".to_string(), "acme-tiny-1b".to_string(), vec![0, 1, 2])]);
    assert_eq!(names(GroupKind::Hardware), [("L4".to_string(), "l4".to_string(), vec![0, 1, 2])]);
    assert_eq!(names(GroupKind::Engine), [("vllm".to_string(), "vllm".to_string(), vec![0, 1, 2])]);
    for run in &site.model.runs {
        // Every view is whole from the start: no slug is filled in later.
        assert_eq!(
            (run.slugs.model_slug.as_str(), run.slugs.hardware_slug.as_str(), run.slugs.engine_slug.as_str()),
            ("acme-tiny-1b", "l4", "vllm")
        );
        assert_eq!(run.model_name, "Tiny-1B");
    }
}

#[test]
fn a_run_view_holds_its_grid_tallies_and_headline() {
    let site = load("compare");
    let base = site.model.run("base").unwrap();
    assert_eq!(base.heatmap.columns, [1, 2, 4]);
    let grid: Vec<Vec<Option<Status>>> =
        base.heatmap.rows.iter().map(|r| base.row_cells(r).map(|c| c.map(|c| c.status)).collect()).collect();
    use Status::*;
    assert_eq!(
        grid,
        [vec![Some(Valid), Some(Valid), Some(Valid)], vec![Some(Valid), Some(Looped), Some(OverCapacity)]]
    );
    assert_eq!(base.heatmap.max_total_tps, Some(400.0));
    let c = &base.counts;
    assert_eq!((c.valid, c.looped, c.over_capacity, c.error, c.missing, c.warned), (5, 1, 1, 0, 0, 0));
    let h = &base.headline;
    assert_eq!((h.peak_total_tps, h.peak_context, h.peak_concurrency), (Some(400.0), Some(8192), Some(4)));
    assert_eq!((h.single_request_tps, h.single_request_context), (Some(100.0), Some(8192)));
    assert_eq!(h.prefill_8k_tps, Some(20000.0));
    assert_eq!(base.prefill_points(), [(8192, 20000.0)]);
    assert_eq!(base.single_request_points(), [(8192, 100.0), (16384, 90.0)]);
    // Imported cells keep the figures as reported; a looped cell's figures are dropped.
    assert!(base.decode.iter().all(|c| c.source == FigureSource::Reported));
    assert_eq!(base.decode_cell(16384, 2).unwrap().figures.total_tps, None);
}

#[test]
fn a_step_between_repeated_versions_is_judged_and_a_settings_change_is_no_step() {
    let site = load("trend-repeats");
    assert_eq!(site.model.series.len(), 1);
    let s = &site.model.series[0];
    // The run launched with --enforce-eager is another configuration (alone, no trend).
    assert_eq!(
        ids(&site, &s.runs),
        ["a-vllm-0.9.2", "b-vllm-0.10.0", "e-vllm-0.10.0-rerun", "d-vllm-0.11.0", "h-vllm-0.11.0-rerun"]
    );
    let trends: Vec<(Trend, u32, u32)> = s.steps.iter().map(|s| (s.trend, s.n_from, s.n_to)).collect();
    assert_eq!(trends, [(Trend::NotJudged, 1, 2), (Trend::Regression, 2, 2)]);
    // Two runs against two: peak 475 -> 303 (-36.2%) and single request 109 -> 101 (-7.3%)
    // beat the noise and the 5% threshold; prefill 20,050 -> 20,099 (+0.2%) cannot be told
    // from no change with two runs a side.
    let last = &s.steps[1];
    let changes: Vec<(KeyFigure, Verdict, String)> =
        last.changes.iter().map(|c| (c.figure, c.change.verdict, format!("{:.1}", c.change.pct))).collect();
    assert_eq!(
        changes,
        [
            (KeyFigure::PeakTotalTps, Verdict::Slower, "-36.2".to_string()),
            (KeyFigure::SingleRequestTps, Verdict::Slower, "-7.3".to_string()),
            (KeyFigure::PrefillTps, Verdict::Inconclusive, "0.2".to_string()),
            // Capacity under the first SLO (batch, 5 tok/s per user): 8K x 4 on both sides.
            (KeyFigure::CapacityPerDevice, Verdict::Slower, "-36.2".to_string()),
        ]
    );
    assert_eq!(last.comparison.as_deref(), Some("e-vllm-0.10.0-rerun--d-vllm-0.11.0"));
}

#[test]
fn the_listed_comparison_is_judged_cell_by_cell() {
    let site = load("compare");
    assert_eq!(site.comparisons.len(), 1);
    let cmp = &site.comparisons[0];
    assert_eq!((cmp.slug.as_str(), cmp.a_id.as_str(), cmp.b_id.as_str()), ("base--faster", "base", "faster"));
    assert_eq!((cmp.a_gpus, cmp.b_gpus, cmp.common_cells), (1, 2, 7));
    let cell = |ctx: u32, c: u32| {
        cmp.rows.iter().find(|r| r.context == ctx).unwrap().cells.iter().find(|x| x.concurrency == c).unwrap()
    };
    // Three repetitions a side at 8K: 100 -> 103 may be past 5% (inconclusive); 400 -> 360
    // is 10% slower; per GPU, 200 -> 106 is slower.
    let t = cell(8192, 1).total.as_ref().unwrap();
    assert_eq!((t.a, t.b, t.verdict, t.n_a, t.n_b), (100.0, 103.0, Verdict::Inconclusive, 3, 3));
    assert_eq!(cell(8192, 4).total.as_ref().unwrap().verdict, Verdict::Slower);
    assert_eq!(cell(8192, 4).total.as_ref().unwrap().pct, -10.0);
    let per_gpu = cell(8192, 2).total_per_gpu.as_ref().unwrap();
    assert_eq!((per_gpu.a, per_gpu.b, per_gpu.verdict), (200.0, 106.0, Verdict::Slower));
    // One measurement a side at 16K: shown, not judged.
    let single = cell(16384, 1).total.as_ref().unwrap();
    assert_eq!((single.verdict, single.lo_pct, single.n_a), (Verdict::Single, None, 1));
    // 16K x 1's four figures.
    assert_eq!(cmp.tally.single, 4);
    // Cells that are not valid on both sides are compared by state only.
    assert_eq!((cell(16384, 2).a_status, cell(16384, 2).b_status), (CellState::Looped, CellState::Valid));
    assert!(cell(16384, 2).total.is_none());
    assert_eq!((cell(16384, 4).a_status, cell(16384, 4).b_status), (CellState::OverCapacity, CellState::Error));
    let prefill = &cmp.prefill[0];
    assert_eq!(
        (prefill.context, prefill.tps.as_ref().unwrap().pct, prefill.tps.as_ref().unwrap().verdict),
        (8192, 50.0, Verdict::Faster)
    );
}

#[test]
fn comparable_says_whether_a_comparison_can_be_made() {
    let site = load("compare");
    let run = |id: &str| site.model.run(id).unwrap();
    assert!(comparable(run("base"), run("faster")));
    assert!(!comparable(run("base"), run("disjoint")));
    assert!(!comparable(run("base"), run("base")));
    // The same answer as making the comparison, for every pair of the fixture's runs.
    let runs = &site.model.runs;
    for (i, a) in runs.iter().enumerate() {
        for (j, b) in runs.iter().enumerate() {
            let noise = site.model.noise.between(runs, (i, j), 5.0);
            assert_eq!(comparable(a, b), compare(a, b, 5.0, noise).is_ok(), "{} / {}", a.id, b.id);
        }
    }
}

#[test]
fn a_comparison_with_nothing_in_common_is_refused_with_the_file_named() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/compare");
    let ws = tempfile::tempdir().unwrap();
    let data = ws.path().join("data");
    copy_dir(&root.join("data"), &data);
    std::fs::write(
        data.join("compare.json"),
        r#"{"schema_version": 1, "comparisons": [{"a": "base", "b": "disjoint"}]}"#,
    )
    .unwrap();
    let config = SiteConfig {
        data_dir: data.clone(),
        out_dir: ws.path().join("public"),
        templates_dir: None,
        static_dir: None,
        settings_file: None,
    };
    let err = format!("{:#}", Site::load(config).err().expect("a comparison with nothing in common loads"));
    assert_eq!(
        err,
        format!(
            "{}: runs base and disjoint have no cell in common (no context and concurrency measured in both): there is nothing to compare",
            data.join("compare.json").display()
        )
    );
}

#[test]
fn measured_cells_take_their_figures_from_the_records() {
    let site = load("measured");
    let run = &site.model.runs[0];
    assert_eq!(run.id, "tiny-vllm-l4");
    assert!(run.decode.iter().chain(&run.prefill).all(|c| c.source == FigureSource::Measured));
    let cell = run.decode_cell(8192, 2).unwrap();
    assert_eq!(cell.status, Status::Valid);
    // The methodology's total tok/s: tokens inside the window over the measured seconds.
    let f = &cell.figures;
    let expected = f.output_tokens.unwrap() as f64 / f.measured_s.unwrap();
    assert!((f.total_tps.unwrap() - expected).abs() < 1e-9, "{f:?}");
}

#[test]
fn a_measured_cells_evidence_comes_from_its_records() {
    use speed_matrix::analysis::evidence::evidence;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/measured/data/runs/tiny-vllm-l4");
    let run = speed_matrix::format::load_run_dir(&dir).unwrap();
    let cell = run.cells.iter().map(|c| &c.cell).find(|c| c.context == 8192 && c.concurrency == 2).unwrap();
    let e = evidence(cell).unwrap();
    // Both requests were sent at 0 s; the window is 10-40 s.
    assert_eq!(e.window, Some((10.0, 40.0)));
    assert_eq!(e.lanes.len(), 2);
    // One-second bins: request 1 spreads 3,000 tokens over 10-40 s (100 a second), request 2
    // 1,500 over 10-39.9 s (50.17 a second); the last bin has 0.9 s of request 2.
    assert_eq!(e.throughput.len(), 30);
    let tps: Vec<String> = e.throughput.iter().map(|b| format!("{:.3}", b.tps)).collect();
    assert_eq!((tps[0].as_str(), tps[28].as_str(), tps[29].as_str()), ("150.167", "150.167", "145.151"));
    let tokens: f64 = e.throughput.iter().map(|b| b.tokens).sum();
    assert!((tokens - 4500.0).abs() < 1e-6, "{tokens}");
    // TTFT 50 and 100 ms: the median by linear rank; two requests support no p90 or p99.
    let d = e.ttft_ms.unwrap();
    assert_eq!([d.p50, d.max].map(|v| format!("{v:.1}")), ["75.0", "100.0"]);
    assert_eq!((d.p90, d.p99), (None, None));
    assert_eq!(e.gauge.len(), 2);
}

#[test]
fn serve_mends_the_analysis_to_what_a_fresh_load_gives() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/series"), dir.path());
    let config = SiteConfig {
        data_dir: dir.path().join("data"),
        out_dir: dir.path().join("public"),
        templates_dir: None,
        static_dir: None,
        settings_file: Some(dir.path().join("site.toml")),
    };
    let before = Site::load(config.clone()).unwrap();
    let board = |site: &Site| -> Vec<(String, usize)> {
        let b = site
            .model
            .leaderboard(BoardKey::Decode { context: 8192, concurrency: 4, workload: Default::default() })
            .unwrap();
        b.ranked.iter().map(|e| (site.model.runs[e.run].id.clone(), e.rank)).collect()
    };
    let was = board(&before);
    // d ties the two leaders at 480 (it sits between them by id), a drops to the last place.
    let edit = |run: &str, from: &str, to: &str| {
        let path = dir.path().join(format!("data/runs/{run}/cells/decode-8192-c4.json"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from));
        std::fs::write(&path, text.replace(from, to)).unwrap();
    };
    edit("d-vllm-0.11.0", "\"total_tps\": 300.0", "\"total_tps\": 480.0");
    edit("a-vllm-0.9.2", "\"total_tps\": 400.0", "\"total_tps\": 100.0");
    let changed = ["a-vllm-0.9.2", "d-vllm-0.11.0"].map(String::from).into_iter().collect();
    let mended = before.reload_runs(&changed).unwrap();
    let fresh = Site::load(config.clone()).unwrap();
    let ranked = |pairs: &[(&str, usize)]| pairs.iter().map(|&(id, r)| (id.to_string(), r)).collect::<Vec<_>>();
    assert_eq!(
        board(&mended),
        ranked(&[
            ("b-vllm-0.10.0", 1),
            ("d-vllm-0.11.0", 1),
            ("f-sglang-0.5.0", 1),
            ("e-vllm-0.10.0-rerun", 1),
            ("c-vllm-0.9.1", 5),
            ("a-vllm-0.9.2", 6)
        ])
    );
    assert_ne!(board(&mended), was);
    assert_eq!(serde_json::to_value(&mended.model).unwrap(), serde_json::to_value(&fresh.model).unwrap());

    // A run's manifest changes too (c is re-labelled the newest vLLM): it moves to the end
    // of its series, and the mended model still equals a fresh load.
    let series_of = |site: &Site, id: &str| -> Vec<String> {
        let i = site.model.run_index(id).unwrap();
        let s = site.model.series.iter().find(|s| s.runs.contains(&i)).unwrap();
        s.runs.iter().map(|&r| site.model.runs[r].id.clone()).collect()
    };
    assert_eq!(series_of(&mended, "c-vllm-0.9.1")[0], "c-vllm-0.9.1");
    let manifest = dir.path().join("data/runs/c-vllm-0.9.1/run.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replacen("\"version\": \"0.9.1\"", "\"version\": \"0.12.0\"", 1)).unwrap();
    edit("c-vllm-0.9.1", "\"total_tps\": ", "\"total_tps\": 1");
    let changed = ["c-vllm-0.9.1".to_string()].into_iter().collect();
    let mended = mended.reload_runs(&changed).unwrap();
    let fresh = Site::load(config).unwrap();
    assert_eq!(series_of(&mended, "c-vllm-0.9.1").last().unwrap(), "c-vllm-0.9.1");
    assert_eq!(serde_json::to_value(&mended.model).unwrap(), serde_json::to_value(&fresh.model).unwrap());
}

#[test]
fn a_folded_run_keeps_the_extremes_of_both_axes_and_only_their_cells() {
    // The shipped runs: the largest matrix among them.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let site = Site::load(SiteConfig {
        data_dir: root.join("data"),
        out_dir: out.path().join("public"),
        templates_dir: None,
        static_dir: None,
        settings_file: Some(root.join("site.toml")),
    })
    .unwrap();
    let run = site.model.runs.iter().max_by_key(|r| r.heatmap.columns.len().min(r.heatmap.rows.len())).unwrap();
    let (columns, rows) = (run.heatmap.columns.clone(), run.heatmap.rows.len());
    assert!(columns.len() > 2 && rows > 2, "a shipped run has a matrix to fold: {columns:?} x {rows}");
    assert!(run.folded(columns.len().max(rows).max(run.prefill.len())).is_none(), "nothing to fold");
    let f = run.folded(2).unwrap();
    assert_eq!(f.heatmap.columns, [columns[0], *columns.last().unwrap()]);
    let contexts: Vec<u32> = f.heatmap.rows.iter().map(|r| r.context).collect();
    assert_eq!(contexts, [run.heatmap.rows[0].context, run.heatmap.rows.last().unwrap().context]);
    // Every cell shown is the original cell of its place; no other cell is kept.
    for row in &f.heatmap.rows {
        for (cell, &c) in f.row_cells(row).zip(&f.heatmap.columns) {
            let original = run.decode_cell(row.context, c);
            assert_eq!(cell.map(|x| (x.context, x.concurrency)), original.map(|x| (x.context, x.concurrency)));
        }
    }
    assert!(f.decode.len() <= 4 && f.prefill.len() <= 2);
    assert_eq!(f.counts.valid, run.counts.valid, "the run's counts stay the whole run's");
}

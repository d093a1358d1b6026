//! The page model, checked in process as zola's site tests do: fixture folders loaded with
//! `Site::load`, then exact expectations on runs, groups, figures and comparisons.

mod common;

use std::path::Path;

use common::copy_dir;
use speed_matrix::analysis::compare::{CellState, Verdict};
use speed_matrix::analysis::{FigureSource, GroupKind};
use speed_matrix::format::Status;
use speed_matrix::site::{Site, SiteConfig};

fn load(fixture: &str) -> Site {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid").join(fixture);
    let out = tempfile::tempdir().unwrap();
    Site::load(SiteConfig {
        data_dir: root.join("data"),
        out_dir: out.path().join("public"),
        templates_dir: None,
        static_dir: None,
        settings_file: None,
    })
    .unwrap()
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
        base.heatmap.rows.iter().map(|r| r.cells.iter().map(|c| c.as_ref().map(|c| c.status)).collect()).collect();
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
fn the_listed_comparison_is_judged_cell_by_cell() {
    let site = load("compare");
    assert_eq!(site.comparisons.len(), 1);
    let cmp = &site.comparisons[0];
    assert_eq!((cmp.slug.as_str(), cmp.a_id.as_str(), cmp.b_id.as_str()), ("base--faster", "base", "faster"));
    assert_eq!((cmp.a_gpus, cmp.b_gpus, cmp.common_cells), (1, 2, 7));
    let cell = |ctx: u32, c: u32| {
        cmp.rows.iter().find(|r| r.context == ctx).unwrap().cells.iter().find(|x| x.concurrency == c).unwrap()
    };
    // 100 -> 103 is inside the 5% threshold; 400 -> 360 is 10% worse; per GPU, 200 -> 106 is worse.
    let t = cell(8192, 1).total.as_ref().unwrap();
    assert_eq!((t.a, t.b, t.verdict), (100.0, 103.0, Verdict::Neutral));
    assert_eq!(cell(8192, 4).total.as_ref().unwrap().verdict, Verdict::Worse);
    assert_eq!(cell(8192, 4).total.as_ref().unwrap().pct, -10.0);
    let per_gpu = cell(8192, 2).total_per_gpu.as_ref().unwrap();
    assert_eq!((per_gpu.a, per_gpu.b, per_gpu.verdict), (200.0, 106.0, Verdict::Worse));
    // Cells that are not valid on both sides are compared by state only.
    assert_eq!((cell(16384, 2).a_status, cell(16384, 2).b_status), (CellState::Looped, CellState::Valid));
    assert!(cell(16384, 2).total.is_none());
    assert_eq!((cell(16384, 4).a_status, cell(16384, 4).b_status), (CellState::OverCapacity, CellState::Error));
    let prefill = &cmp.prefill[0];
    assert_eq!(
        (prefill.context, prefill.tps.as_ref().unwrap().pct, prefill.tps.as_ref().unwrap().verdict),
        (8192, 50.0, Verdict::Better)
    );
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

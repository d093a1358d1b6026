//! `site bench --resume` and `--dry-run` on the simulated engine: a resumed run keeps every
//! fact of the run, re-measures any missing repetition (the first included), keeps the larger
//! repetition count; a dry run plans what a real run would measure.
#![cfg(feature = "simulator")]

mod common;

use std::fs;
use std::path::Path;

use common::sim::{bench, SimArgs};
use common::*;

const MATRIX: [&str; 6] = ["--contexts", "256", "--concurrency", "1,2", "--run-id", "r"];

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(dir.join("data/runs/r/run.json")).unwrap()).unwrap()
}

fn cells(dir: &Path) -> Vec<String> {
    common::sim::cell_names(dir, "r")
}

#[test]
fn a_resume_under_other_facts_is_refused_naming_each_flag_and_nothing_is_rewritten() {
    let sim = SimArgs::new().step_ms(5).start();
    let ws = tempfile::tempdir().unwrap();
    assert_ok(&bench(ws.path(), &sim.url, &MATRIX));
    let before = tree(&ws.path().join("data"));
    // One fact at a time, then several together: each named with both values.
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--gpu-count", "8"], &["--gpu-count: \"1\" recorded, \"8\" now"]),
        (&["--engine", "sglang"], &["--engine: \"vllm\" recorded, \"sglang\" now"]),
        (&["--engine-version", "9.9"], &["--engine-version: "]),
        (&["--quantization", "fp8"], &["--quantization: none recorded, \"fp8\" now"]),
        (&["--model-id", "other/model"], &["--model-id: \"sim/model\" recorded, \"other/model\" now"]),
        (
            &["--prefill-samples", "5", "--gpu", "Other GPU"],
            &["--prefill-samples: \"3\" recorded, \"5\" now", "(the device): \"Sim GPU\" recorded, \"Other GPU\" now"],
        ),
    ];
    for (extra, wants) in cases {
        let mut args = MATRIX.to_vec();
        args.push("--resume");
        args.extend_from_slice(extra);
        let out = bench(ws.path(), &sim.url, &args);
        assert_eq!(out.status.code(), Some(1), "{extra:?}");
        let err = stderr(&out);
        for want in wants {
            assert!(err.contains(want), "{extra:?}: {err}");
        }
        assert!(err.contains("a resumed run must measure the same setup"), "{err}");
        assert_eq!(tree(&ws.path().join("data")), before, "{extra:?}: nothing rewritten");
    }
}

#[test]
fn a_lost_first_repetition_is_measured_again_and_the_larger_repeat_is_kept() {
    let sim = SimArgs::new().step_ms(5).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let mut args = MATRIX.to_vec();
    args.extend(["--repeat", "3"]);
    assert_ok(&bench(d, &sim.url, &args));
    let all = cells(d);
    assert_eq!(all.len(), 9, "{all:?}");
    common::sim::remove_cell(d, "r", "decode-256-c2.json");
    // A dry run plans only what is missing, after the same checks.
    let mut dry = args.clone();
    dry.extend(["--resume", "--dry-run"]);
    let out = bench(d, &sim.url, &dry);
    assert_ok(&out);
    let plan = stdout(&out);
    assert!(plan.contains("  run            decode 256 x 2 (rep 1)\n"), "{plan}");
    assert!(!plan.contains("decode 256 x 1"), "{plan}");
    assert!(plan.contains("Resuming: 8 measurements already on disk, 1 to go."), "{plan}");
    // The real resume measures repetition 1 again, though 2 and 3 exist.
    let mut resume = MATRIX.to_vec();
    resume.extend(["--repeat", "1", "--resume"]);
    let out = bench(d, &sim.url, &resume);
    assert_ok(&out);
    assert_eq!(cells(d), all, "the lost repetition is back");
    assert_eq!(manifest(d)["settings"]["repeat"], 3, "--resume --repeat 1 keeps the three measured");
    assert_ok(&site_in(d, &["check"]));
}

#[test]
fn a_dry_run_plans_every_repetition() {
    let sim = SimArgs::new().start();
    let ws = tempfile::tempdir().unwrap();
    let plan = |repeat: &str| {
        let mut args = MATRIX.to_vec();
        args.extend(["--repeat", repeat, "--dry-run", "--duration", "60s"]);
        let out = bench(ws.path(), &sim.url, &args);
        assert_ok(&out);
        stdout(&out)
    };
    let (one, hundred) = (plan("1"), plan("100"));
    assert!(one.contains("2 decode windows: about 2 minutes."), "{one}");
    assert!(hundred.contains("each measured 100 times"), "{hundred}");
    assert!(hundred.contains("  run            decode 256 x 2 (rep 1-100)\n"), "{hundred}");
    assert!(hundred.contains("200 decode windows: about 201 minutes."), "{hundred}");
    assert!(!ws.path().join("data").exists(), "a dry run writes nothing");
}

#[test]
fn repeat_and_prefill_samples_out_of_range_are_refused_by_check() {
    let ws = Workspace::from_fixture("valid/measured");
    let path = ws.path().join("data/runs/tiny-vllm-l4/run.json");
    let original = fs::read_to_string(&path).unwrap();
    for (key, value, want) in [
        ("repeat", 0u64, "settings.repeat: expected 1 to 100 measurements of each cell, found 0"),
        ("repeat", 101, "found 101"),
        ("repeat", 4294967295, "found 4294967295"),
        ("prefill_samples", 0, "settings.prefill_samples: expected 1 to 50 prefill requests, found 0"),
    ] {
        let mut m: serde_json::Value = serde_json::from_str(&original).unwrap();
        m["settings"][key] = value.into();
        fs::write(&path, m.to_string()).unwrap();
        let out = ws.site(&["check"]);
        assert_eq!(out.status.code(), Some(1), "{key} {value}");
        assert!(stderr(&out).contains(want), "{key} {value}: {}", stderr(&out));
    }
}

/// A report of several problems: one a line, the data in each escaped, never `\n` literals
/// between problems.
#[test]
fn a_report_of_several_problems_prints_one_a_line() {
    let ws = Workspace::from_fixture("valid/compare");
    for rep in ["decode-8192-c1.json", "prefill-8192.json"] {
        fs::remove_file(ws.path().join("data/runs/base/cells").join(rep)).unwrap();
    }
    let out = ws.site(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    // The data folder's two problems: the run's own list nested under it, then the comparison.
    assert_eq!(lines[0], "error: 2 problems in data:", "{err}");
    assert_eq!(lines[1], "  4 problems in data/runs/base:", "{err}");
    assert!(
        lines[2..6]
            .iter()
            .all(|l| l.starts_with("    data/runs/base/cells/") && l.ends_with("has no repetition 1 beside it")),
        "{err}"
    );
    assert!(lines[6].starts_with("  data/compare.json: comparisons[0] names run \"base\""), "{err}");
    assert!(!err.contains("\\n"), "{err}");
}

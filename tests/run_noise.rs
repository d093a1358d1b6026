//! Run-to-run noise in comparisons, on real runs of a llama.cpp server across restarts
//! (`tests/fixtures/aa-restart`): an A/A pair whose repetitions agree to 1% but whose runs sit
//! 6% apart is not called, a real slowdown is, and each comparison names the noise it used.

mod common;

use common::*;

#[test]
fn an_aa_pair_across_a_restart_is_not_called_and_a_real_slowdown_is() {
    let ws = Workspace::from_fixture("aa-restart");
    std::fs::remove_dir_all(ws.path().join("data/runs/restart-b-copy")).unwrap();
    let out = ws.site(&["diff", "restart-a", "restart-b", "--out", "aa", "--fail-on-regression"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("8 cells with figures on both sides: 8 inconclusive"), "{}", stdout(&out));
    assert!(stdout(&out).contains("Run-to-run noise assumed 5.0% (change_noise_pct in site.toml)"), "{}", stdout(&out));
    let csv = ws.read("aa/comparison.csv");
    assert!(csv.lines().next().unwrap().ends_with(",run_noise_basis,run_noise_pct"), "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",assumed,5.00")), "{csv}");
    assert!(ws.read("aa/index.html").contains("Run-to-run noise assumed 5.0%"));
    // One thread instead of two: 43% slower, far past the noise.
    let out = ws.site(&["diff", "restart-a", "one-thread", "--out", "ab", "--fail-on-regression"]);
    assert!(!out.status.success());
    assert!(stdout(&out).contains("8 cells with figures on both sides: 7 slower, 1 inconclusive"), "{}", stdout(&out));
}

#[test]
fn repetitions_alone_call_the_aa_pair_slower_which_is_the_false_alarm_the_noise_prevents() {
    // The same pair on a site that assumes no noise between runs: the 6% gap at 512 x 1 is
    // called slower, as it was before comparisons allowed for run-to-run noise.
    let ws = Workspace::from_fixture("aa-restart");
    std::fs::remove_dir_all(ws.path().join("data/runs/restart-b-copy")).unwrap();
    ws.write("site.toml", "change_noise_pct = 0\n");
    let out = ws.site(&["diff", "restart-a", "restart-b", "--out", "aa", "--fail-on-regression"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("slower figures in: 512 x 1"), "{}", stdout(&out));
}

#[test]
fn other_runs_of_the_configuration_in_the_data_folder_give_the_noise() {
    let ws = Workspace::from_fixture("aa-restart");
    // restart-b and its copy are the configuration's other runs: their levels agree, so the
    // noise falls below the 5% assumed (moderated towards it by its 4 degrees of freedom).
    let out = ws.site(&["diff", "restart-a", "one-thread", "--out", "ab"]);
    assert_ok(&out);
    let said = stdout(&out);
    assert!(said.contains("from 2 other runs of this configuration"), "{said}");
    let csv = ws.read("ab/comparison.csv");
    let pct: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f[f.len() - 2], "configuration", "{l}");
            f[f.len() - 1].parse().unwrap()
        })
        .collect();
    assert!(pct.iter().all(|p| *p > 0.0 && *p < 5.0), "{pct:?}");
    // The same pair in a site build makes the same comparison from the same evidence.
    ws.write("data/compare.json", r#"{"schema_version": 1, "comparisons": [{"a": "restart-a", "b": "one-thread"}]}"#);
    assert_ok(&ws.site(&["build"]));
    assert_eq!(ws.read("public/compare/restart-a--one-thread/comparison.csv"), csv);
}

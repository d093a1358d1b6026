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

/// The method of moments on data with a known answer: four runs of one configuration, copies
/// of one imported run, the fourth 2% faster in every cell. Compared, the first two take their
/// noise from the other two: per cell the variance of the two logs is (ln 1.02)^2 / 2, the
/// same in every cell, so their average too; two runs are one degree of freedom however many
/// cells they share (a run's level moves them all), moderated by the 5% assumed at
/// `PRIOR_DF` = 1 degree of freedom; each cell's noise is its own evidence moderated towards
/// that.
#[test]
fn the_pooled_noise_of_runs_a_known_ratio_apart_is_the_method_of_moments_answer() {
    let ws = tempfile::tempdir().unwrap();
    let runs = ws.path().join("data/runs");
    let source = repo_root().join("data/runs/smollm2-135m-llamacpp-cpu-guidellm");
    for (id, factor) in [("a", 1.0), ("b", 1.0), ("x1", 1.0), ("x2", 1.02)] {
        copy_dir(&source, &runs.join(id));
        for entry in std::fs::read_dir(runs.join(id).join("cells")).unwrap() {
            let path = entry.unwrap().path();
            let mut cell: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let total = cell["reported"]["total_tps"].as_f64().unwrap();
            cell["reported"]["total_tps"] = serde_json::Value::from(total * factor);
            std::fs::write(&path, cell.to_string()).unwrap();
        }
    }
    let d = 1.02f64.ln();
    let (prior, prior_df) = (1.05f64.ln(), speed_matrix::analysis::run_noise::PRIOR_DF);
    // The figure kind: (ν0 p² + d²/2) / (ν0 + 1) on ν0 + 1 df; each cell's own d²/2 on 1 df
    // moderated towards it: (ν0 p² + d²) / (ν0 + 2), the CSV's per-cell noise.
    let var = (prior_df * prior * prior + d * d) / (prior_df + 2.0);
    let expected = (var.sqrt().exp() - 1.0) * 100.0;
    let out = site_in(ws.path(), &["diff", "a", "b", "--out", "ab"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("from 2 other runs of this configuration"), "{}", stdout(&out));
    let csv = std::fs::read_to_string(ws.path().join("ab/comparison.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|h| *h == "run_noise_pct").unwrap_or_else(|| panic!("{csv}"));
    for line in csv.lines().skip(1) {
        let noise: f64 = line.split(',').nth(column).unwrap().parse().unwrap_or_else(|_| panic!("{line}"));
        assert!((noise - expected).abs() < 0.01, "{noise} against the method of moments' {expected:.3}: {line}");
    }
}

/// A copy of the real run `restart-a` whose server was `speed` times as fast: every time in
/// its records divided by it (a cell's tok/s times `speed`, its latencies divided by it).
fn scaled_copy(from: &std::path::Path, to: &std::path::Path, speed: f64, started_at: &str) {
    fn scale(v: &mut serde_json::Value, speed: f64) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, x) in map.iter_mut() {
                    match x.as_f64() {
                        Some(n) if k.ends_with("_s") => *x = serde_json::Value::from(n / speed),
                        Some(n) if k.ends_with("_tps") => *x = serde_json::Value::from(n * speed),
                        _ => scale(x, speed),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|x| scale(x, speed)),
            _ => {}
        }
    }
    copy_dir(from, to);
    for entry in std::fs::read_dir(to.join("cells")).unwrap() {
        let path = entry.unwrap().path();
        let mut cell: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        scale(&mut cell["measurement"], speed);
        std::fs::write(&path, cell.to_string()).unwrap();
    }
    let manifest = to.join("run.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["started_at"] = serde_json::Value::from(started_at);
    m["finished_at"] = serde_json::Value::Null;
    std::fs::write(&manifest, m.to_string()).unwrap();
}

/// A nightly history of one configuration: nine runs wobbling by 2%, the seventh 30% slower
/// (an incident), then a run 10% slower than the ninth. Pooled across the incident, the
/// noise would hide the slowdown; left out and named, the slowdown is called.
#[test]
fn an_incident_in_the_history_is_left_out_named_and_does_not_hide_a_later_slowdown() {
    let ws = tempfile::tempdir().unwrap();
    let runs = ws.path().join("data/runs");
    let source = repo_root().join("tests/fixtures/aa-restart/data/runs/restart-a");
    let wobble = [1.0, 1.02, 0.99, 1.01, 0.98, 1.015, 0.70, 0.995, 1.0];
    for (k, speed) in wobble.iter().enumerate() {
        scaled_copy(
            &source,
            &runs.join(format!("night-{:02}", k + 1)),
            *speed,
            &format!("2026-12-{:02}T03:00:00Z", k + 1),
        );
    }
    scaled_copy(&source, &runs.join("night-10"), 0.90, "2026-12-10T03:00:00Z");
    let out = site_in(ws.path(), &["diff", "night-09", "night-10", "--out", "cmp", "--fail-on-regression"]);
    let said = stdout(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("from 7 other runs of this configuration"), "{said}");
    assert!(said.contains("Run night-07 was left out: 30.0% below the other runs of this configuration."), "{said}");
    assert!(said.contains("night-01, night-02, night-03, night-04, night-05, night-06, night-08"), "{said}");
    assert!(said.contains("4 slower"), "{said}");
    let page = std::fs::read_to_string(ws.path().join("cmp/index.html")).unwrap();
    assert!(page.contains("Run night-07 was left out"), "{page}");
    // The verdicts are those of the same history without the incident: it weighs nothing.
    let with_incident = std::fs::read_to_string(ws.path().join("cmp/comparison.csv")).unwrap();
    std::fs::remove_dir_all(runs.join("night-07")).unwrap();
    let out = site_in(ws.path(), &["diff", "night-09", "night-10", "--out", "clean"]);
    assert!(!stdout(&out).contains("left out"), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(ws.path().join("clean/comparison.csv")).unwrap(), with_incident);
}

/// Two runs 25% apart with no history of their own, beside another model's two runs 2x
/// apart: that model's pair says nothing of this server's noise, so the assumed noise is
/// used and the change is called as it is when the pair is not there.
#[test]
fn another_models_runs_do_not_set_this_configurations_noise() {
    let ws = tempfile::tempdir().unwrap();
    let runs = ws.path().join("data/runs");
    let source = repo_root().join("tests/fixtures/aa-restart/data/runs/restart-a");
    scaled_copy(&source, &runs.join("a"), 1.0, "2026-12-01T03:00:00Z");
    scaled_copy(&source, &runs.join("b"), 0.75, "2026-12-02T03:00:00Z");
    let alone = site_in(ws.path(), &["diff", "a", "b", "--out", "alone"]);
    assert_ok(&alone);
    for (id, speed) in [("other-1", 1.0), ("other-2", 0.5)] {
        scaled_copy(&source, &runs.join(id), speed, "2026-12-03T03:00:00Z");
        let manifest = runs.join(id).join("run.json");
        let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        m["model"]["id"] = serde_json::Value::from("another-model");
        std::fs::write(&manifest, m.to_string()).unwrap();
    }
    let beside = site_in(ws.path(), &["diff", "a", "b", "--out", "beside"]);
    assert_ok(&beside);
    assert!(stdout(&beside).contains("Run-to-run noise assumed 5.0%"), "{}", stdout(&beside));
    assert!(stdout(&beside).contains("slower"), "{}", stdout(&beside));
    let csv = |dir: &str| std::fs::read_to_string(ws.path().join(dir).join("comparison.csv")).unwrap();
    assert_eq!(csv("beside"), csv("alone"));
}

/// The first line of `site diff`'s verdicts: `8 cells with figures on both sides: ...`.
fn verdict_line(dir: &std::path::Path, a: &str, b: &str) -> String {
    let out = site_in(dir, &["diff", a, b, "--out", &format!("cmp-{a}-{b}")]);
    assert_ok(&out);
    stdout(&out).lines().find(|l| l.contains("cells with figures on both sides")).unwrap_or_default().to_string()
}

/// Real runs of one llama.cpp configuration over about 45 minutes (`scripts/aa-hour.sh`: six
/// runs of one launch command, each its own server process, `aa-03-busy` beside a busy loop
/// on one of the machine's two cores), the shared restart pair beside them, and two real
/// slowdowns (one thread instead of two, in each set). Every A/A pair of the quiet runs in a
/// folder holding them all is judged with the noise the others give: at most one pair in
/// twenty may be called, and one thread against two must still be.
#[test]
fn real_aa_runs_over_an_hour_are_not_called_and_one_thread_is() {
    let ws = Workspace::from_fixture("aa-hour");
    let runs = ws.path().join("data/runs");
    copy_dir(&fixture("aa-restart/data/runs/restart-a"), &runs.join("restart-a"));
    copy_dir(&fixture("aa-restart/data/runs/restart-b"), &runs.join("restart-b"));
    copy_dir(&fixture("aa-restart/data/runs/one-thread"), &runs.join("restart-one-thread"));
    let mut aa: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|id| id.starts_with("aa-") && !id.ends_with("-busy"))
        .collect();
    aa.sort();
    assert!(aa.len() >= 5, "{aa:?}");
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (i, a) in aa.iter().enumerate() {
        for b in &aa[i + 1..] {
            pairs.push((a.clone(), b.clone()));
        }
    }
    pairs.push(("restart-a".into(), "restart-b".into()));
    let called: Vec<String> = pairs
        .iter()
        .map(|(a, b)| (a, b, verdict_line(ws.path(), a, b)))
        .filter(|(_, _, line)| line.contains("slower") || line.contains("faster"))
        .map(|(a, b, line)| format!("{a} vs {b}: {line}"))
        .collect();
    assert!(
        called.len() * 20 <= pairs.len().max(20),
        "{} of {} A/A pairs called: {called:#?}",
        called.len(),
        pairs.len()
    );
    // The run beside a busy loop: its server had one core of two, and the comparison says
    // the machine's other work differed; it is left out of the others' noise, named.
    let out = site_in(ws.path(), &["diff", &aa[0], "aa-03-busy", "--out", "busy"]);
    assert!(stdout(&out).contains("cores of other work on the load generator's machine"), "{}", stdout(&out));
    let out = site_in(ws.path(), &["diff", &aa[0], &aa[1], "--out", "quiet"]);
    assert!(stdout(&out).contains("Run aa-03-busy was left out"), "{}", stdout(&out));
    for (base, slow) in [(&aa[0], "one-thread"), (&"restart-a".to_string(), "restart-one-thread")] {
        let line = verdict_line(ws.path(), base, slow);
        let slower: usize = line
            .split(": ")
            .nth(1)
            .and_then(|v| v.split(", ").find(|p| p.ends_with("slower")))
            .and_then(|p| p.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(slower >= 5, "{base} vs {slow}: {line}");
    }
}

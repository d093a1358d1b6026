//! Bad settings, comparison files and command lines are refused with the file, line and
//! column and what was expected; nothing is written.

mod common;

use std::fs;

use common::*;

fn write_compare(ws: &Workspace, json: &str) {
    fs::write(ws.path().join("data/compare.json"), json).unwrap();
}

#[test]
fn a_comparison_listed_twice_or_with_an_absurd_threshold_is_refused_where_it_stands() {
    let ws = Workspace::from_fixture("valid/compare");
    let cases = [
        (
            "{\"schema_version\": 1, \"comparisons\": [\n  {\"a\": \"base\", \"b\": \"faster\"},\n  {\"a\": \"base\", \"b\": \"faster\"}\n]}",
            "compare.json:3:",
            "comparisons[1] repeats comparisons[0] (\"base\" against \"faster\"): list each pair once",
        ),
        (
            "{\"schema_version\": 1, \"comparisons\": [\n  {\"a\": \"base\", \"b\": \"faster\", \"threshold_pct\": 1e308}\n]}",
            "compare.json:2:",
            "expected a percentage from 0 to 100, found 1e308",
        ),
        (
            "{\"schema_version\": 1, \"comparisons\": [\n  {\"a\": \"base\", \"b\": \"faster\", \"threshold_pct\": -5}\n]}",
            "compare.json:2:",
            "expected a percentage from 0 to 100, found -5",
        ),
    ];
    for (json, place, message) in cases {
        write_compare(&ws, json);
        for cmd in ["build", "check"] {
            let out = ws.site(&[cmd]);
            assert_eq!(out.status.code(), Some(1), "{cmd} {json}");
            let err = stderr(&out);
            assert!(err.contains(place) && err.contains(message), "{cmd} {json}: {err}");
        }
        assert!(!ws.path().join("public").exists(), "nothing is written");
    }
}

#[test]
fn an_slo_named_twice_in_slo_order_is_refused_with_line_and_column() {
    let ws = Workspace::from_fixture("valid/compare");
    fs::write(ws.path().join("site.toml"), "title = \"t\"\nslo_order = [\"chat\", \"batch\", \"chat\"]\n").unwrap();
    let out = ws.site(&["build"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("site.toml: line 2, column 13: \"chat\" is named twice: name each SLO once"), "{err}");
    assert!(!ws.path().join("public").exists());
}

/// An output folder inside the data folder (read back as data by the next build) or one
/// holding it (replaced whole) is refused by build, diff and serve, and nothing is written.
#[test]
fn an_output_inside_or_around_the_data_folder_is_refused() {
    let ws = Workspace::from_fixture("valid/compare");
    let before = tree(&ws.path().join("data"));
    for args in [
        vec!["build", "--out", "data/runs/NEW"],
        vec!["build", "--out", "data"],
        vec!["build", "--out", "."],
        vec!["diff", "base", "faster", "--out", "data/runs/NEW"],
        vec!["serve", "--out", "data/pages/site", "--port", "0"],
    ] {
        let out = ws.site(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("the data folder data"), "{args:?}: {err}");
        assert_eq!(tree(&ws.path().join("data")), before, "{args:?}: the data folder is untouched");
    }
    assert_ok(&ws.site(&["check"]));
}

/// `--out public` where `public` links to the deploy folder: the site is built into that
/// folder and the link stays a link.
#[test]
fn an_output_that_is_a_link_is_built_into_its_target() {
    let ws = Workspace::from_fixture("valid/compare");
    let deploy = ws.path().join("deploy/site");
    fs::create_dir_all(&deploy).unwrap();
    std::os::unix::fs::symlink(&deploy, ws.path().join("public")).unwrap();
    assert_ok(&ws.site(&["build", "--out", "public"]));
    assert!(fs::symlink_metadata(ws.path().join("public")).unwrap().file_type().is_symlink(), "the link stays");
    assert!(deploy.join("index.html").is_file(), "the deploy folder holds the site");
    // A second build (after a change) goes there again.
    fs::write(ws.path().join("site.toml"), "title = \"Lab\"\n").unwrap();
    assert_ok(&ws.site(&["build", "--out", "public"]));
    assert!(fs::read_to_string(deploy.join("index.html")).unwrap().contains("Lab"));
    // A link to nothing is refused with what to do.
    std::os::unix::fs::symlink(ws.path().join("nowhere"), ws.path().join("dangling")).unwrap();
    let out = ws.site(&["build", "--out", "dangling"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is a link to a folder that does not exist"), "{}", stderr(&out));
}

/// Standard output on a full device: every command that prints ends with a one-line error
/// and a non-zero exit, never a panic; completions and man with a closed standard output
/// fail the same way instead of printing nothing and succeeding.
#[test]
fn a_failed_write_to_standard_output_is_an_error_not_a_panic() {
    let ws = Workspace::from_fixture("valid/compare");
    let site = env!("CARGO_BIN_EXE_site");
    let aiperf = fixture("peer/aiperf-0.13.0/single-c2");
    let commands: Vec<Vec<String>> = vec![
        vec!["build".into(), "--force".into()],
        vec!["check".into()],
        vec!["diff".into(), "base".into(), "faster".into(), "--out".into(), "cmp".into()],
        vec![
            "import".into(),
            aiperf.display().to_string(),
            "--cpu".into(),
            "C".into(),
            "--engine".into(),
            "e".into(),
            "--engine-version".into(),
            "1".into(),
        ],
        vec!["init".into(), "fresh".into()],
        vec!["completions".into(), "bash".into()],
        vec!["man".into()],
    ];
    for args in &commands {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = std::process::Command::new(site).current_dir(ws.path()).args(args).stdout(full).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("writing to standard output: No space left on device"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    for cmd in ["completions bash", "man"] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("exec \"$0\" {cmd} >&-"))
            .arg(site)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        assert!(stderr(&out).contains("standard output is closed"), "{cmd}: {}", stderr(&out));
    }
    // Sent to /dev/null on purpose: not an error.
    let out = std::process::Command::new(site).arg("man").stdout(std::process::Stdio::null()).output().unwrap();
    assert_ok(&out);
}

/// `site diff . ../base` from inside a run folder names the runs by their folders.
#[test]
fn diff_from_inside_a_run_folder_reads_dot_as_that_run() {
    let ws = Workspace::from_fixture("valid/compare");
    let run = ws.path().join("data/runs/faster");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_site"))
        .current_dir(&run)
        .args(["diff", "../base", ".", "--out", "../../../cmp", "--data", "../.."])
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(stdout(&out).contains("cmp/index.html"), "{}", stdout(&out));
    assert!(ws.read("cmp/index.html").contains("faster"));
}

/// The next step `site init` prints can be pasted into a shell as it is.
#[test]
fn init_prints_a_next_step_a_shell_can_run() {
    let ws = tempfile::tempdir().unwrap();
    let out = site_in(ws.path(), &["init", "my site"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("Next: cd 'my site' && site bench"), "{}", stdout(&out));
}

/// Every number of run.json is finite, not negative and at most 10^12, as the README says:
/// a device's memory included.
#[test]
fn a_devices_memory_out_of_range_is_refused_by_check() {
    let ws = Workspace::from_fixture("valid/measured");
    let path = ws.path().join("data/runs/tiny-vllm-l4/run.json");
    let original = fs::read_to_string(&path).unwrap();
    for (value, want) in [
        (serde_json::json!(-5), "hardware.memory_gb is negative (-5)"),
        (serde_json::json!(1e13), "hardware.memory_gb is 1e13, beyond the largest number"),
        (serde_json::json!(0), "hardware.memory_gb is 0"),
    ] {
        let mut m: serde_json::Value = serde_json::from_str(&original).unwrap();
        m["hardware"]["memory_gb"] = value.clone();
        fs::write(&path, m.to_string()).unwrap();
        let out = ws.site(&["check"]);
        assert_eq!(out.status.code(), Some(1), "{value}");
        assert!(stderr(&out).contains(want), "{value}: {}", stderr(&out));
    }
}

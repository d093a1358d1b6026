//! A run's cells in one file (schema 5, `cells.jsonl.gz`): what `site bench` writes, read
//! beside loose cells of older runs, every problem in it named by its line, and a run begun
//! in the older layout resumed into the new one.
#![cfg(feature = "simulator")]

mod common;

use std::fs;
use std::io::Write as _;
use std::path::Path;

use common::sim::{bench, cell_names, cell_texts, SimArgs};
use common::*;

const RUN: &str = "data/runs/tiny-vllm-l4";

fn gzip(text: &str) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap()
}

/// Moves the named loose cells of the fixture run into its `cells.jsonl.gz`, a line each.
fn pack_cells(run: &Path, names: &[&str]) {
    let lines: Vec<String> = names
        .iter()
        .map(|n| {
            let path = run.join("cells").join(n);
            let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            fs::remove_file(path).unwrap();
            v.to_string()
        })
        .collect();
    fs::write(run.join("cells.jsonl.gz"), gzip(&(lines.join("\n") + "\n"))).unwrap();
}

fn checked_cells(out: &std::process::Output) -> String {
    let said = stdout(out);
    said.split(" cells").next().unwrap().rsplit(' ').next().unwrap().to_string()
}

#[test]
fn a_bench_run_is_a_manifest_and_one_cells_file() {
    let sim = SimArgs::new().step_ms(5).start();
    let ws = tempfile::tempdir().unwrap();
    let args = ["--contexts", "256", "--concurrency", "1,2", "--repeat", "2", "--run-id", "r"];
    assert_ok(&bench(ws.path(), &sim.url, &args));
    let run = ws.path().join("data/runs/r");
    let mut files: Vec<String> =
        fs::read_dir(&run).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["cells.jsonl.gz", "run.json"]);
    let manifest: serde_json::Value = serde_json::from_str(&fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(manifest["schema_version"], 5);
    // Prefill 256 and decode 256 x 1 and x 2, two repetitions each: six lines.
    let names = cell_names(ws.path(), "r");
    assert_eq!(names.len(), 6, "{names:?}");
    assert!(names.contains(&"decode-256-c2-r2.json".to_string()), "{names:?}");
    let out = site_in(ws.path(), &["check"]);
    assert_ok(&out);
    // `site check` counts a cell once, whatever its repetitions.
    assert_eq!(checked_cells(&out), "3", "{}", stdout(&out));
}

#[test]
fn loose_cells_and_a_cells_file_load_as_one_run_and_a_cell_in_both_is_a_duplicate() {
    let ws = Workspace::from_fixture("valid/measured");
    let before = ws.site(&["check"]);
    assert_ok(&before);
    let run = ws.path().join(RUN);
    pack_cells(&run, &["decode-8192-c1.json", "decode-16384-c2.json"]);
    let after = ws.site(&["check"]);
    assert_ok(&after);
    assert_eq!(checked_cells(&after), checked_cells(&before), "{}", stdout(&after));
    // The same cell loose again beside its line: both places named.
    let line = cell_texts(ws.path(), "tiny-vllm-l4").remove("decode-8192-c1.json").unwrap();
    fs::write(run.join("cells/decode-8192-c1.json"), line).unwrap();
    let out = ws.site(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("duplicate cell: decode context 8192 concurrency 1 repetition 1"), "{err}");
    assert!(err.contains("cells.jsonl.gz:1"), "{err}");
    assert!(err.contains("cells/decode-8192-c1.json"), "{err}");
}

#[test]
fn a_broken_line_is_named_by_line_and_column_and_a_newer_line_says_so() {
    let ws = Workspace::from_fixture("valid/measured");
    let run = ws.path().join(RUN);
    let good = fs::read_to_string(run.join("cells/prefill-8192.json")).unwrap();
    let good: serde_json::Value = serde_json::from_str(&good).unwrap();
    fs::remove_file(run.join("cells/prefill-8192.json")).unwrap();
    let mut newer = good.clone();
    newer["schema_version"] = 99.into();
    newer["context"] = 16384.into();
    let text = format!("{good}\n{{\"schema_version\": 5, \"phase\": \"sideways\"}}\n{newer}\n");
    fs::write(run.join("cells.jsonl.gz"), gzip(&text)).unwrap();
    let out = ws.site(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let line = err.lines().find(|l| l.contains("unknown variant `sideways`")).unwrap_or_else(|| panic!("{err}"));
    let at = line.split("cells.jsonl.gz:").nth(1).unwrap().split(':').take(2).collect::<Vec<_>>();
    assert_eq!(at[0], "2", "{line}");
    assert!(at[1].parse::<u32>().unwrap() > 30, "the column of the bad value: {line}");
    assert!(err.contains("cells.jsonl.gz:3: unsupported schema_version 99"), "{err}");
}

#[test]
fn a_cells_file_that_is_a_symlink_or_not_gzip_is_refused() {
    let ws = Workspace::from_fixture("valid/measured");
    let run = ws.path().join(RUN);
    let outside = ws.path().join("outside.jsonl.gz");
    fs::write(&outside, gzip("{}\n")).unwrap();
    std::os::unix::fs::symlink(&outside, run.join("cells.jsonl.gz")).unwrap();
    let out = ws.site(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cells.jsonl.gz"), "{}", stderr(&out));
    fs::remove_file(run.join("cells.jsonl.gz")).unwrap();
    fs::write(run.join("cells.jsonl.gz"), "not gzip").unwrap();
    let out = ws.site(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cells.jsonl.gz: not a readable gzip file"), "{}", stderr(&out));
}

/// A run begun by an older build (a loose file a cell) and resumed by this one: what was
/// measured stays where it is, the new cells go into the cells file, none twice.
#[test]
fn a_run_begun_with_loose_cells_resumes_into_a_cells_file() {
    let sim = SimArgs::new().step_ms(5).start();
    let ws = tempfile::tempdir().unwrap();
    let args = ["--contexts", "256", "--concurrency", "1,2", "--run-id", "r"];
    assert_ok(&bench(ws.path(), &sim.url, &args));
    let run = ws.path().join("data/runs/r");
    let texts = cell_texts(ws.path(), "r");
    fs::create_dir_all(run.join("cells")).unwrap();
    for (name, text) in texts.iter().filter(|(n, _)| *n != "decode-256-c2.json") {
        fs::write(run.join("cells").join(name), text).unwrap();
    }
    fs::remove_file(run.join("cells.jsonl.gz")).unwrap();
    let mut resumed = args.to_vec();
    resumed.push("--resume");
    let out = bench(ws.path(), &sim.url, &resumed);
    assert_ok(&out);
    assert!(stdout(&out).contains("Wrote 1 cells") && stdout(&out).contains("2 kept from before"), "{}", stdout(&out));
    let mut loose: Vec<String> = fs::read_dir(run.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    loose.sort();
    assert_eq!(loose, ["decode-256-c1.json", "prefill-256.json"]);
    assert_eq!(cell_names(ws.path(), "r"), ["decode-256-c1.json", "decode-256-c2.json", "prefill-256.json"]);
    assert_ok(&site_in(ws.path(), &["check"]));
}

/// `site repack`: an older run's loose cells moved into its cells file, the site built from it
/// byte for byte the site built before; a second repack has nothing to do; a run folder
/// holding something else is refused and left as it was.
#[test]
fn repack_moves_loose_cells_into_a_cells_file_and_the_site_is_unchanged() {
    let ws = Workspace::from_fixture("valid/measured");
    let run = ws.path().join(RUN);
    let notes = fs::read(run.join("notes.md")).unwrap();
    let loose = fs::read_dir(run.join("cells")).unwrap().count();
    assert_ok(&ws.site(&["build", "--out", "before"]));
    let out = ws.site(&["repack"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains(&format!("repacked tiny-vllm-l4: {loose} loose cell files into cells.jsonl.gz")),
        "{}",
        stdout(&out)
    );
    let mut files: Vec<String> =
        fs::read_dir(&run).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["cells.jsonl.gz", "notes.md", "run.json"]);
    assert_eq!(fs::read(run.join("notes.md")).unwrap(), notes, "the notes are kept byte for byte");
    let manifest: serde_json::Value = serde_json::from_str(&fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(manifest["schema_version"], 5, "an older reader must refuse the repacked run");
    assert_eq!(cell_names(ws.path(), "tiny-vllm-l4").len(), loose);
    assert_ok(&ws.site(&["build", "--out", "after"]));
    assert_eq!(tree(&ws.path().join("after")), tree(&ws.path().join("before")), "the site changed");
    let again = ws.site(&["repack"]);
    assert_ok(&again);
    assert!(stdout(&again).contains("0 runs repacked, 1 already in one cells file, 0 refused"), "{}", stdout(&again));
}

#[test]
fn repack_refuses_a_run_folder_holding_something_else_and_changes_nothing() {
    let ws = Workspace::from_fixture("valid/measured");
    let run = ws.path().join(RUN);
    fs::write(run.join("cells/README.txt"), "my notes on these cells").unwrap();
    let before = tree(&ws.path().join("data"));
    let out = ws.site(&["repack", "tiny-vllm-l4"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("cells/README.txt: not a .json or .json.gz cell file; move it out"), "{err}");
    assert!(err.contains("1 of 1 runs were not repacked"), "{err}");
    assert_eq!(tree(&ws.path().join("data")), before, "a refused repack changed the data");
    let out = ws.site(&["repack", "no-such-run"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not a run folder"), "{}", stderr(&out));
}

/// A repack killed between its two renames leaves the run only in the folder it was moved
/// aside to: the next read names that folder (never 0 runs without a word), and the next
/// repack of the run puts it back and repacks it.
#[test]
fn a_run_left_aside_by_a_killed_repack_is_named_and_put_back() {
    let ws = Workspace::from_fixture("valid/measured");
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    let aside = format!("data/runs/.tmp-previous-tiny-vllm-l4-{dead_pid}-0-0000abcd");
    fs::rename(ws.path().join(RUN), ws.path().join(&aside)).unwrap();
    let out = ws.site(&["check"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(".tmp-previous-tiny-vllm-l4-") && err.contains("site repack tiny-vllm-l4"), "{err}");
    let out = ws.site(&["repack", "tiny-vllm-l4"]);
    assert_ok(&out);
    assert!(stderr(&out).contains("put back"), "{}", stderr(&out));
    assert!(stdout(&out).contains("repacked tiny-vllm-l4"), "{}", stdout(&out));
    assert!(!ws.path().join(&aside).exists());
    assert_ok(&ws.site(&["check"]));
}

/// Repacking the shipped runs (loose cells of schemas 1 to 4, nanosecond times among them)
/// keeps every number as it was read: the site built after is byte for byte the one before.
#[test]
fn repacking_the_shipped_runs_changes_no_published_byte() {
    let ws = Workspace::from_repo_data();
    assert_ok(&ws.site(&["build", "--out", "before"]));
    let out = ws.site(&["repack"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("11 runs repacked"), "{}", stdout(&out));
    assert_ok(&ws.site(&["build", "--out", "after"]));
    let (before, after) = (tree(&ws.path().join("before")), tree(&ws.path().join("after")));
    let changed: Vec<&String> = before.iter().zip(&after).filter(|(b, a)| b != a).map(|(b, _)| &b.0).collect();
    assert_eq!(before.len(), after.len());
    assert!(changed.is_empty(), "{} published files changed: {changed:?}", changed.len());
}

/// A run repack cannot read prints its problems one a line, never a literal `\n`.
#[test]
fn repack_prints_a_runs_problems_one_a_line() {
    let ws = Workspace::from_fixture("valid/measured");
    let cells = ws.path().join(RUN).join("cells");
    fs::write(cells.join("decode-9-c1.json"), "{ broken").unwrap();
    fs::write(cells.join("decode-9-c2.json"), "{ broken too").unwrap();
    let out = ws.site(&["repack", "tiny-vllm-l4"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(!err.contains("\\n"), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("decode-9-c")).collect();
    assert_eq!(lines.len(), 2, "{err}");
}

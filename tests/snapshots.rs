//! Whole pages as snapshots (insta), as mdBook keeps them: a run page and a comparison page
//! from fixtures, and the shipped site as a list of files with their hashes, so any change
//! to any published byte shows up in review. After an intended change, regenerate with
//! `INSTA_UPDATE=always cargo test --test snapshots` and read the diff.

mod common;

use std::fs;

use common::Workspace;

fn built(ws: &Workspace) {
    let out = ws.site(&["build"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn run_page() {
    let ws = Workspace::from_fixture("valid/measured");
    built(&ws);
    insta::assert_snapshot!("run_page", ws.read("public/runs/tiny-vllm-l4/index.html"));
}

#[test]
fn comparison_page() {
    let ws = Workspace::from_fixture("valid/compare");
    built(&ws);
    insta::assert_snapshot!("comparison_page", ws.read("public/compare/base--faster/index.html"));
    insta::assert_snapshot!("comparison_csv", ws.read("public/compare/base--faster/comparison.csv"));
}

/// `path size fnv1a` of every file of the site built from the shipped `data/`.
#[test]
fn shipped_site() {
    let ws = Workspace::from_repo_data();
    built(&ws);
    let root = ws.path().join("public");
    let mut lines: Vec<String> = walkdir::WalkDir::new(&root)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let bytes = fs::read(e.path()).unwrap();
            let rel = e.path().strip_prefix(&root).unwrap().to_string_lossy().into_owned();
            format!("{rel} {} {:016x}", bytes.len(), speed_matrix::units::fnv1a(&bytes))
        })
        .collect();
    lines.sort();
    insta::assert_snapshot!("shipped_site", lines.join("\n"));
}

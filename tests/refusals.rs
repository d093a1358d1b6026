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

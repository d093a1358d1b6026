//! The layer rule of `docs/src/dev/architecture.md`, kept true by reading the source: every
//! `crate::` path in a library module must point to a module its layer may use, and the
//! modules inside one layer must not use each other in a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// What each top-level library module may use (besides itself).
const ALLOWED: &[(&str, &[&str])] = &[
    ("units", &[]),
    ("fsutil", &[]),
    ("redact", &[]),
    ("httpserve", &[]),
    ("stats", &[]),
    ("format", &["units", "fsutil", "redact"]),
    ("analysis", &["format", "units", "stats"]),
    ("write", &["fsutil"]),
    ("render", &["analysis", "format", "units", "write"]),
    ("publish", &["format", "units"]),
    ("site", &["render", "analysis", "format", "units", "write", "fsutil", "publish"]),
    ("serve", &["site", "format", "write", "fsutil", "units", "httpserve"]),
    ("bench", &["format", "fsutil", "units", "redact"]),
    ("import", &["format", "fsutil", "units", "redact"]),
];

/// Binary-only modules (declared in `main.rs`) and the library modules they may use.
const BINARY: &[(&str, &[&str])] =
    &[("sim", &["units", "httpserve"]), ("cli", &["analysis", "bench", "format", "units"]), ("cmd", &["*"])];

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/render/pages.rs` -> ["render", "pages"]; `src/bench/mod.rs` -> ["bench"].
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Code only, comments taken out (they say what the code may not), lines kept.
fn code_text(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Every `<prefix>a::b` path in `text`, as ("a", Some("b")) (the second name only when
/// lowercase); a group `<prefix>{a, b::c}` (over several lines too) gives each of its items.
fn paths_after(text: &str, prefix: &str) -> Vec<(String, Option<String>)> {
    let code = code_text(text);
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        if i > 0 && code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[i + prefix.len()..];
        match rest.strip_prefix('{') {
            Some(group) => out.extend(group_items(group).iter().map(|item| first_names(item))),
            None => out.push(first_names(rest)),
        }
    }
    out
}

/// The items of a `{...}` group up to its closing brace, split at top-level commas.
fn group_items(group: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0usize, 0usize, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.into_iter().map(str::trim).filter(|s| !s.is_empty() && *s != "self").collect()
}

fn first_names(path: &str) -> (String, Option<String>) {
    let mut names =
        path.split("::").map(|s| s.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>());
    let first = names.next().unwrap_or_default();
    let second = names.next().filter(|s| s.starts_with(|c: char| c.is_ascii_lowercase()));
    (first, second)
}

fn allowed(table: &[(&str, &[&str])], module: &str) -> Option<Vec<String>> {
    table.iter().find(|(m, _)| *m == module).map(|(_, uses)| uses.iter().map(|s| s.to_string()).collect())
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    let mut seen = BTreeSet::new();
    let mut checked = 0usize;
    for file in &files {
        let module = module_path(&src, file);
        let Some(top) = module.first().cloned() else { continue };
        if top == "lib" || top == "main" {
            continue;
        }
        let text = fs::read_to_string(file).unwrap();
        let (ok, prefix) = match (allowed(ALLOWED, &top), allowed(BINARY, &top)) {
            (Some(ok), _) => (ok, "crate::"),
            (None, Some(ok)) => (ok, "speed_matrix::"),
            (None, None) => panic!("{}: module {top} is in no layer of tests/architecture.rs", file.display()),
        };
        seen.insert(top.clone());
        for (used, _) in paths_after(&text, prefix) {
            checked += 1;
            let binary_internal = prefix == "crate::" && allowed(BINARY, &top).is_some();
            if used == top || ok.iter().any(|o| o == "*" || *o == used) || binary_internal {
                continue;
            }
            wrong.push(format!("{}: {top} uses {used}", file.display()));
        }
        if allowed(BINARY, &top).is_some() {
            for (used, _) in paths_after(&text, "crate::") {
                if allowed(BINARY, &used).is_none() {
                    wrong.push(format!("{}: binary module {top} names crate::{used}", file.display()));
                }
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "edges outside the layer rule:\n{}", wrong.join("\n"));
    assert!(checked > 100, "the reading found only {checked} paths: it reads no source");
    let all: BTreeSet<String> = ALLOWED.iter().chain(BINARY).map(|(m, _)| m.to_string()).collect();
    assert_eq!(seen, all, "the layer table names modules the source does not have");
}

#[test]
fn modules_inside_a_layer_do_not_use_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let modules: BTreeSet<String> = files.iter().map(|f| module_path(&src, f).join("::")).collect();
    for file in &files {
        let module = module_path(&src, file);
        if module.len() < 2 {
            continue;
        }
        let text = fs::read_to_string(file).unwrap();
        let me = module[..2].join("::");
        let parent = module[..module.len() - 1].join("::");
        let mut targets: Vec<String> = Vec::new();
        for (first, _) in paths_after(&text, "super::") {
            targets.push(format!("{parent}::{first}"));
        }
        for (first, second) in paths_after(&text, "crate::") {
            if first == module[0] {
                if let Some(second) = second {
                    targets.push(format!("{first}::{second}"));
                }
            }
        }
        for t in targets {
            let sibling = t.split("::").take(2).collect::<Vec<_>>().join("::");
            if sibling != me && modules.contains(&sibling) {
                edges.entry(me.clone()).or_default().insert(sibling);
            }
        }
    }
    // Grouped imports count: `render/run_page.rs` names `super::{downloads, markdown}`.
    let of = |m: &str| edges.get(m).cloned().unwrap_or_default();
    assert!(of("render::run_page").contains("render::markdown"), "{:?}", of("render::run_page"));
    assert!(edges.values().map(BTreeSet::len).sum::<usize>() > 50, "the reading found too few edges: {edges:?}");
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        if let Some(cycle) = visit(n, &edges, &mut Vec::new(), &mut done) {
            panic!("modules use each other in a circle: {}", cycle.join(" -> "));
        }
    }
}

/// The site's commands (`build`, `check`, `diff`, `serve`) go through the pipeline: they reach
/// the library only through `site` (and `serve`, which runs it), the data format and the
/// leaves, never analysis, rendering or writing on their own.
#[test]
fn the_site_commands_reach_the_library_only_through_the_pipeline() {
    let cmd = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    let allowed = ["site", "serve", "format", "units", "fsutil"];
    let mut wrong = Vec::new();
    let mut seen = 0;
    for name in ["build.rs", "check.rs", "diff.rs", "serve.rs", "mod.rs"] {
        let text = fs::read_to_string(cmd.join(name)).unwrap();
        for (used, _) in paths_after(&text, "speed_matrix::") {
            seen += 1;
            if !allowed.contains(&used.as_str()) {
                wrong.push(format!("src/cmd/{name} uses speed_matrix::{used}"));
            }
        }
    }
    assert!(seen >= 8, "only {seen} library paths found in the site commands");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The free functions a module declares at its top level (`pub fn name`, not indented:
/// methods and nested items are left out).
fn top_level_functions(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("pub fn "))
        .map(|rest| rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
        .collect()
}

/// Whether `code` calls `name` as a free function: `name(` or `path::name(`, not a method
/// (`.name(`) nor a longer name that ends in it, nor a definition.
fn calls(code: &str, name: &str) -> bool {
    let pattern = format!("{name}(");
    code.match_indices(&pattern).any(|(at, _)| {
        let before = &code[..at];
        let prev = before.chars().next_back();
        let defines = before.trim_end().ends_with("fn");
        !defines && !prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
    })
}

/// Rendering is a pure function of the analysed model: no file under `src/render/` calls a
/// function of `analysis` (figures, evidence, comparisons, capacity are computed before).
#[test]
fn rendering_calls_no_computing_function_of_the_analysis() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut analysis = Vec::new();
    source_files(&src.join("analysis"), &mut analysis);
    let functions: BTreeSet<String> =
        analysis.iter().flat_map(|f| top_level_functions(&fs::read_to_string(f).unwrap())).collect();
    assert!(functions.len() >= 30, "only {} analysis functions found", functions.len());
    assert!(functions.contains("evidence") && functions.contains("compare"), "{functions:?}");
    let mut render = Vec::new();
    source_files(&src.join("render"), &mut render);
    let mut wrong = Vec::new();
    for file in &render {
        let code = code_text(&fs::read_to_string(file).unwrap());
        let trimmed: Vec<&str> = code.lines().map(str::trim_start).collect();
        let own = top_level_functions(&trimmed.join("\n"));
        for f in functions.iter().filter(|f| !own.contains(*f) && calls(&code, f)) {
            wrong.push(format!("{} calls analysis function {f}", file.display()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_call_is_told_from_a_method_a_longer_name_and_a_definition() {
    assert!(calls("let e = evidence::evidence(cell);", "evidence"));
    assert!(calls("x = distribution(&v)", "distribution"));
    assert!(!calls("cell.evidence()", "evidence"));
    assert!(!calls("cell_evidence(x)", "evidence"));
    assert!(!calls("fn evidence(cell: &Cell)", "evidence"));
}

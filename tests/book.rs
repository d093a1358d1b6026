//! The book under `docs/` and the README that opens onto it: the command-line reference is
//! what the program's `--help` says (one source, checked per subcommand; `UPDATE_BOOK=1
//! cargo test --test book` writes it again), every relative link and anchor resolves, every
//! page is in the summary, and the README's quick start runs against the simulated engine.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The subcommands `site --help` lists (not `help`).
fn subcommands() -> Vec<String> {
    let help = stdout(&site_in(&root(), &["--help"]));
    let listed = help.split("Commands:").nth(1).expect("site --help lists its commands");
    let listed = listed.split("Options:").next().unwrap();
    listed.lines().filter_map(|l| l.split_whitespace().next()).filter(|c| *c != "help").map(str::to_string).collect()
}

/// A subcommand's reference page, as generated from its `--help`.
fn reference_page(sub: &str) -> String {
    let help = stdout(&site_in(&root(), &[sub, "--help"]));
    format!(
        "# site {sub}\n\n<!-- Generated from `site {sub} --help` by tests/book.rs (UPDATE_BOOK=1 cargo test --test book): edit the doc comments in src/cli.rs, not this page. -->\n\n```text\n{}\n```\n",
        help.trim_end()
    )
}

#[test]
fn the_command_line_reference_is_what_each_subcommand_says() {
    let dir = root().join("docs/src/reference/cli");
    let update = std::env::var_os("UPDATE_BOOK").is_some();
    let mut stale = Vec::new();
    for sub in subcommands() {
        let path = dir.join(format!("{sub}.md"));
        let want = reference_page(&sub);
        if update {
            fs::write(&path, &want).unwrap();
        } else if fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
            stale.push(sub);
        }
    }
    assert!(
        stale.is_empty(),
        "the command-line reference differs from --help for: {} (run UPDATE_BOOK=1 cargo test --test book)",
        stale.join(", ")
    );
    // No page for a subcommand that is gone.
    let pages: BTreeSet<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".md").to_string())
        .collect();
    assert_eq!(pages, subcommands().into_iter().collect::<BTreeSet<_>>());
}

/// Every Markdown file of the book, the README and CONTRIBUTING.md.
fn documents() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(root().join("docs/src"))
        .into_iter()
        .filter_map(|e| e.ok())
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    out.sort();
    out.push(root().join("README.md"));
    out.push(root().join("CONTRIBUTING.md"));
    out
}

/// The links of a Markdown text, and the anchors its headings get (as mdBook makes them:
/// lower case, spaces to `-`, other punctuation dropped).
fn links_and_anchors(text: &str) -> (Vec<String>, BTreeSet<String>) {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let (mut links, mut anchors) = (Vec::new(), BTreeSet::new());
    let mut heading: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. }) => {
                links.push(dest_url.to_string())
            }
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) if heading.is_some() => heading.as_mut().unwrap().push_str(&t),
            Event::End(TagEnd::Heading(_)) => {
                let h = heading.take().unwrap_or_default();
                let id: String = h
                    .trim()
                    .to_lowercase()
                    .chars()
                    .filter_map(|c| match c {
                        ' ' => Some('-'),
                        c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                        _ => None,
                    })
                    .collect();
                anchors.insert(id);
            }
            _ => {}
        }
    }
    (links, anchors)
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = fs::read_to_string(&doc).unwrap();
        let (links, own) = links_and_anchors(&text);
        for link in links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.split_once('#').map_or((link.as_str(), None), |(p, a)| (p, Some(a)));
            let target = if path.is_empty() { doc.clone() } else { doc.parent().unwrap().join(path) };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", rel(&doc)));
                continue;
            }
            if let Some(anchor) = anchor.filter(|_| target.extension().is_some_and(|x| x == "md")) {
                let anchors = if path.is_empty() {
                    own.clone()
                } else {
                    links_and_anchors(&fs::read_to_string(&target).unwrap()).1
                };
                if !anchors.contains(anchor) {
                    broken.push(format!("{}: {link} (no such heading)", rel(&doc)));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let src = root().join("docs/src");
    let summary = fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let (links, _) = links_and_anchors(&summary);
    let listed: BTreeSet<PathBuf> = links.iter().map(|l| src.join(l)).collect();
    for doc in documents().into_iter().filter(|d| d.starts_with(&src) && !d.ends_with("SUMMARY.md")) {
        assert!(listed.contains(&doc), "{} is not in SUMMARY.md", rel(&doc));
    }
    for page in &listed {
        assert!(page.is_file(), "SUMMARY.md lists {}, which does not exist", rel(page));
    }
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.lines().count() <= 250, "the README has {} lines", readme.lines().count());
}

/// The README's quick start, command by command, against the simulated engine: the server's
/// address, the import path and `site serve`'s port (any free one) are the only words changed.
#[cfg(feature = "simulator")]
#[test]
fn the_readme_quick_start_runs() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("## Quick start").expect("a quick start");
    let block = readme[start..].split("```").nth(1).expect("its commands");
    let sim = common::sim::SimArgs::new().steps(2, 0).start();
    let fixture = fixture("peer/guidellm-0.8.1/benchmarks.json");
    let ws = tempfile::tempdir().unwrap();
    let mut dir = ws.path().to_path_buf();
    let mut ran = Vec::new();
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let line = line
            .replace("http://127.0.0.1:8000", &sim.url)
            .replace("path/to/benchmarks.json", fixture.to_str().unwrap());
        for command in line.split(" && ") {
            let words = shlex::split(command).unwrap();
            match words[0].as_str() {
                "cd" => dir = dir.join(&words[1]),
                "site" if words.get(1).map(String::as_str) == Some("serve") => {
                    let server = common::serve::Server::start(&dir, &[]);
                    assert!(server.wait_page("/", "</html>").contains("Speed Matrix"));
                }
                "site" => {
                    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
                    assert_ok(&site_in(&dir, &args));
                }
                other => panic!("the quick start runs {other}, which this test does not know"),
            }
            ran.push(words[..2.min(words.len())].join(" "));
        }
    }
    assert_eq!(ran, ["site init", "cd my-results", "site bench", "site import", "site build", "site serve"]);
    assert!(dir.join("public/index.html").is_file());
}

/// The `site` commands of the guide's code blocks, each run as written against the simulated
/// engine (`site bench` with `--dry-run`: the server is discovered and the plan printed, the
/// matrix not measured) and the repository's fixtures (an import's example path becomes a
/// fixture of its tool). Left out, and why: synopsis lines (`[--out DIR]`), an https gateway
/// (needs its certificate), `site serve` (the quick start's test serves).
#[cfg(feature = "simulator")]
#[test]
fn the_guides_commands_run() {
    let sim = common::sim::SimArgs::new().steps(2, 0).start();
    let fixtures: [(&str, PathBuf); 4] = [
        ("benchmark_results.json", fixture("peer/llm-inference-bench-0.4.18-llamacpp-smollm2.json")),
        ("results/vllm-bench-c*.json", fixture("peer/vllm-0.33.0/vllm-bench-c1.json")),
        ("aiperf-artifacts/sweep/", fixture("peer/aiperf-0.13.0/sweep-c124")),
        ("path/to/aiperf-or-guidellm-results", fixture("peer/guidellm-0.8.1/benchmarks.json")),
    ];
    let mut ran = Vec::new();
    let guide = root().join("docs/src/guide");
    let mut pages: Vec<PathBuf> = fs::read_dir(&guide).unwrap().map(|e| e.unwrap().path()).collect();
    pages.sort();
    for page in pages {
        let text = fs::read_to_string(&page).unwrap();
        for block in text.split("```").skip(1).step_by(2) {
            for line in block.replace("\\\n", " ").lines().map(str::trim).filter(|l| l.starts_with("site ")) {
                // The command, without its comment or output redirection.
                let line = line.split(" # ").next().unwrap().split(" > ").next().unwrap();
                if line.contains('[') || line.contains("https://") {
                    continue;
                }
                for command in line.split(" && ").map(str::trim).filter(|c| c.starts_with("site ")) {
                    let mut words = shlex::split(command).unwrap();
                    let sub = words[1].clone();
                    if sub == "serve" {
                        continue;
                    }
                    let ws = Workspace::from_repo_data();
                    if sub == "bench" {
                        let at = words.iter().position(|w| w == "--endpoint").unwrap() + 1;
                        words[at] = sim.url.clone();
                        words.push("--dry-run".into());
                        if let Some(at) = words.iter().position(|w| w == "--trace") {
                            let trace = root().join("tests/fixtures/traces/mooncake-conversation-head.jsonl");
                            words[at + 1] = trace.to_string_lossy().into_owned();
                        }
                    }
                    if sub == "import" {
                        let (_, path) = fixtures
                            .iter()
                            .find(|(example, _)| words[2] == *example)
                            .unwrap_or_else(|| panic!("{}: no fixture for `{command}`", rel(&page)));
                        words[2] = path.to_string_lossy().into_owned();
                    }
                    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
                    let out = site_in(ws.path(), &args);
                    assert!(out.status.success(), "{}: `{command}` failed: {}", rel(&page), stderr(&out));
                    ran.push(format!("site {sub}"));
                }
            }
        }
    }
    for sub in ["site bench", "site import", "site init", "site build", "site completions", "site man"] {
        assert!(ran.iter().any(|r| r == sub), "no `{sub}` of the guide ran: {ran:?}");
    }
}

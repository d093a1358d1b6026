//! What an installed `site` offers beside its commands: the exact build in `--version`,
//! shell completions that the shell accepts, manual pages that roff renders.

mod common;

use std::process::{Command, Stdio};

use common::*;

fn site(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_site")).args(args).output().unwrap()
}

#[test]
fn version_names_the_build() {
    let out = site(&["--version"]);
    assert_ok(&out);
    let line = stdout(&out);
    assert_eq!(line.trim_end(), format!("site {}", speed_matrix::units::BUILD_VERSION));
    assert!(line.starts_with(&format!("site {}", env!("CARGO_PKG_VERSION"))), "{line}");
    // Built from this git checkout: the commit and its date follow the version.
    let commit = Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git is needed for this test (the build names its commit)");
    assert!(commit.status.success(), "the tests run in a git checkout: {}", String::from_utf8_lossy(&commit.stderr));
    let commit = String::from_utf8_lossy(&commit.stdout).trim().to_string();
    assert!(line.contains(&format!("({commit} ")), "{line} does not name {commit}");
}

/// `text` checked by `program args` reading it on stdin.
fn accepted_by(program: &str, args: &[&str], text: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} is needed for this test (.ci/run installs it): {e}"));
    child.stdin.take().unwrap().write_all(text).unwrap();
    child.wait_with_output().unwrap()
}

/// Each shell's script parses in that shell (bash, zsh and fish are installed by .ci/run),
/// offers every visible subcommand and never the hidden test-only simulated engine.
#[test]
fn completions_parse_in_their_shell() {
    let visible = subcommands();
    assert!(visible.len() >= 11 && visible.contains(&"export".to_string()), "{visible:?}");
    let parsers: [(&str, &str, &[&str]); 3] =
        [("bash", "bash", &["-n"]), ("zsh", "zsh", &["-n"]), ("fish", "fish", &["--no-execute"])];
    for (shell, program, args) in parsers {
        let out = site(&["completions", shell]);
        assert_ok(&out);
        let check = accepted_by(program, args, &out.stdout);
        assert!(
            check.status.success() && check.stderr.is_empty(),
            "{program}: {}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
    assert!(
        stdout(&site(&["completions", "bash"])).contains("complete -F _site"),
        "a bash completion function for site"
    );
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = stdout(&site(&["completions", shell]));
        for sub in &visible {
            assert!(script.contains(sub.as_str()), "{shell}: {sub} missing from the completions");
        }
        assert!(!script.contains("simulate-engine"), "{shell}: the hidden simulated engine is offered");
    }
    assert!(!site(&["completions", "tcsh"]).status.success());
}

/// The subcommands `site --help` lists (not `help`).
fn subcommands() -> Vec<String> {
    let help = stdout(&site(&["--help"]));
    let listed = help.split("Commands:").nth(1).expect("site --help lists its commands");
    let listed = listed.split("Options:").next().unwrap();
    listed.lines().filter_map(|l| l.split_whitespace().next()).filter(|c| *c != "help").map(str::to_string).collect()
}

/// The README's loop that installs a manual page per subcommand names every one.
#[test]
fn the_readme_installs_a_manual_page_for_every_subcommand() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme.lines().find(|l| l.starts_with("for c in ") && l.contains("site man $c")).expect("the man loop");
    let named: Vec<&str> = line["for c in ".len()..].split(';').next().unwrap().split_whitespace().collect();
    for sub in subcommands() {
        assert!(named.contains(&sub.as_str()), "the README's man loop skips {sub}: {line}");
    }
}

#[test]
fn manual_pages_are_valid_roff() {
    for args in [vec!["man"], vec!["man", "bench"], vec!["man", "diff"]] {
        let out = site(&args);
        assert_ok(&out);
        let page = stdout(&out);
        assert!(page.starts_with(".ie \\n(.g .ds Aq") || page.contains(".TH"), "{page}");
        // groff -z parses and formats without output; -ww reports every warning.
        let check = accepted_by("groff", &["-man", "-z", "-ww", "-Tutf8"], &out.stdout);
        assert!(
            check.status.success() && check.stderr.is_empty(),
            "groff on {args:?}: {}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
    let bench = stdout(&site(&["man", "bench"]));
    assert!(
        bench.contains(".TH site\\-bench") || bench.contains(".TH site-bench"),
        "{}",
        &bench[..bench.len().min(400)]
    );
    assert!(bench.contains("\\-\\-repeat"), "the bench page lists --repeat");
    // A subcommand's page offers no --version: the subcommand refuses it.
    assert!(!bench.contains("\\-\\-version"), "site bench takes no --version");
    assert!(!site(&["bench", "--version"]).status.success());
    let out = site(&["man", "nope"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("no subcommand \"nope\"; the pages are: build, check, serve, import, diff, export, repack, init"),
        "{}",
        stderr(&out)
    );
}

/// The long flags a `--help` text names.
fn flags_in(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for (i, _) in text.match_indices("--") {
        if i > 0 && text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '-') {
            continue;
        }
        let name: String =
            text[i + 2..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-').collect();
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.insert(format!("--{}", name.trim_end_matches('-')));
        }
    }
    out
}

/// The README and every page of the book (`docs/src`), one text.
fn documentation() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<std::path::PathBuf> = walkdir::WalkDir::new(root.join("docs/src"))
        .into_iter()
        .filter_map(|e| e.ok())
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages.iter().map(|p| std::fs::read_to_string(p).unwrap() + "\n").collect()
}

/// Every flag of every subcommand is in the documentation, and every flag the README and the
/// book give a `site` command (in the command-line reference and in examples) exists for
/// that command.
#[test]
fn every_flag_is_documented_and_every_documented_flag_exists() {
    let readme = documentation();
    let subs = ["bench", "build", "check", "diff", "export", "import", "init", "repack", "serve", "completions", "man"];
    let mut all = std::collections::BTreeSet::new();
    let mut by_sub = std::collections::BTreeMap::new();
    for sub in subs {
        let help = stdout(&site(&[sub, "--help"]));
        let flags: std::collections::BTreeSet<String> = flags_in(&help).into_iter().filter(|f| f != "--help").collect();
        for f in &flags {
            let documented = readme
                .match_indices(f.as_str())
                .any(|(i, _)| !readme[i + f.len()..].starts_with(|c: char| c.is_ascii_lowercase() || c == '-'));
            assert!(documented, "site {sub} {f} is not in the documentation");
        }
        all.extend(flags.iter().cloned());
        by_sub.insert(sub, flags);
    }
    assert!(all.len() > 50, "{all:?}");
    // The reference page names only flags that exist.
    let section = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/reference/cli.md")).unwrap();
    for f in flags_in(&section) {
        assert!(all.contains(&f) || f == "--help", "the command-line reference names {f}, which no subcommand has");
    }
    // Each `site SUB ...` command line of the README (continuations joined) uses SUB's flags.
    let joined = readme.replace("\\\n", " ");
    let mut checked = 0;
    for line in joined.lines() {
        for (i, _) in line.match_indices("site ") {
            let rest = &line[i + 5..];
            let Some(sub) = subs.iter().find(|s| rest.starts_with(&format!("{s} ")) || rest == **s) else { continue };
            if i > 0 && !line[..i].ends_with([' ', '`', '(', '$']) {
                continue;
            }
            let command = rest.split(['`', ';', '|', '&', ')']).next().unwrap_or("");
            // The command's own words: a quoted launch command's flags are the server's.
            let words =
                shlex::split(command).unwrap_or_else(|| command.split_whitespace().map(str::to_string).collect());
            let used: Vec<String> = words
                .iter()
                .filter(|w| w.starts_with("--") && w.len() > 2)
                .map(|w| w.split('=').next().unwrap_or(w).trim_end_matches([',', '.', ':']).to_string())
                .collect();
            for f in used.into_iter().filter(|f| f != "--help") {
                assert!(by_sub[sub].contains(&f), "docs: `site {command}` uses {f}, which site {sub} does not have");
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "only {checked} flags of documented commands checked");
}

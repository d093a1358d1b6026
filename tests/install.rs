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
    let visible = ["bench", "build", "check", "diff", "init", "import", "serve", "completions", "man"];
    let parsers: [(&str, &str, &[&str]); 3] = [("bash", "bash", &["-n"]), ("zsh", "zsh", &["-n"]), ("fish", "fish", &["--no-execute"])];
    for (shell, program, args) in parsers {
        let out = site(&["completions", shell]);
        assert_ok(&out);
        let check = accepted_by(program, args, &out.stdout);
        assert!(check.status.success() && check.stderr.is_empty(), "{program}: {}", String::from_utf8_lossy(&check.stderr));
    }
    assert!(stdout(&site(&["completions", "bash"])).contains("complete -F _site"), "a bash completion function for site");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = stdout(&site(&["completions", shell]));
        for sub in visible {
            assert!(script.contains(sub), "{shell}: {sub} missing from the completions");
        }
        assert!(!script.contains("simulate-engine"), "{shell}: the hidden simulated engine is offered");
    }
    assert!(!site(&["completions", "tcsh"]).status.success());
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
        stderr(&out).contains("no subcommand \"nope\"; the pages are: build, check, serve, import, diff, init"),
        "{}",
        stderr(&out)
    );
}

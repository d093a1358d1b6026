//! What `cargo test` needs beside cargo, named in one line when missing (rather than a test
//! failing deep inside): git, zsh, fish, groff and Node.js. `.ci/run` installs them.

use std::process::Command;

#[test]
fn the_tools_the_tests_need_are_installed() {
    let tools = [
        ("git", "--version"),
        ("zsh", "--version"),
        ("fish", "--version"),
        ("groff", "--version"),
        ("node", "--version"),
    ];
    let missing: Vec<&str> = tools
        .iter()
        .filter(|(tool, arg)| !Command::new(tool).arg(arg).output().is_ok_and(|o| o.status.success()))
        .map(|(tool, _)| *tool)
        .collect();
    assert!(
        missing.is_empty(),
        "missing for cargo test: {} (Debian: apt-get install git zsh fish groff-base nodejs; .ci/run installs them)",
        missing.join(", ")
    );
}

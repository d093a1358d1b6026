//! Names the exact build in `site --version` and in every run it measures: the package
//! version, and for a build from a git checkout the commit and its date
//! (`0.2.0 (a85fbfa 2026-12-04)`). A build from a source archive (no git) says the version
//! alone.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let long = match (git(&["rev-parse", "--short=7", "HEAD"]), git(&["log", "-1", "--format=%cd", "--date=short"])) {
        (Some(commit), Some(date)) => format!("{version} ({commit} {date})"),
        _ => version.to_string(),
    };
    println!("cargo:rustc-env=SITE_VERSION={long}");
    // Again when the checkout moves to another commit (only paths that exist: a missing one
    // would run this script on every build).
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        if Path::new(&head).exists() {
            println!("cargo:rerun-if-changed={head}");
        }
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(path) = git(&["rev-parse", "--git-path", &reference]).filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

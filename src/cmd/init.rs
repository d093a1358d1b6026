//! `site init [DIR]`: a new results site in one command: `data/` (with a README on adding
//! runs), `site.toml` with every key present and explained, a `.gitignore` for the built
//! site, and a CI workflow that builds the site and publishes `public/` (GitHub Pages).

use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::cli::InitArgs;
use speed_matrix::fsutil::write_atomic;

/// What `site init` writes, by path under the new site's folder.
pub const FILES: &[(&str, &str)] = &[
    ("site.toml", include_str!("init/site.toml")),
    ("data/README.md", include_str!("init/data-README.md")),
    (".gitignore", include_str!("init/gitignore")),
    (".github/workflows/site.yml", include_str!("init/workflow.yml")),
];

pub fn run(args: &InitArgs) -> Result<()> {
    let dir = &args.dir;
    refuse_non_empty(dir, args.force)?;
    let install = install_command(args.install.as_deref())?;
    for (path, text) in FILES {
        let text = &text.replace("{{INSTALL}}", &indented(&install, "          "));
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        if args.force && target.exists() {
            eprintln!("replacing {}", target.display());
        }
        write_atomic(&target, text.as_bytes())?;
    }
    let runs = dir.join("data/runs");
    std::fs::create_dir_all(&runs).with_context(|| format!("creating {}", runs.display()))?;
    say!(
        "Created a results site in {}: site.toml, data/ (add runs with `site bench` or `site import`), .gitignore and .github/workflows/site.yml (builds and publishes public/ with GitHub Pages).\nNext: cd {} && site bench --endpoint http://127.0.0.1:8000 --gpu \"H200 SXM\" --repeat 3 && site build && site serve",
        dir.display(),
        shlex::try_quote(&dir.display().to_string()).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?
    );
    Ok(())
}

/// A folder with anything in it is refused unless `--force`: `init` must never mix its
/// files into another project by accident.
fn refuse_non_empty(dir: &Path, force: bool) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Err(_) => return Ok(()),
        Ok(m) if !m.is_dir() => bail!("{}: exists and is not a folder", dir.display()),
        Ok(_) => {}
    }
    let mut entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    if entries.next().is_some() && !force {
        bail!(
            "{}: the folder is not empty; choose an empty or new folder, or pass --force to write the site's files into it (existing files of the same names are replaced)",
            dir.display()
        );
    }
    Ok(())
}

/// The workflow's install step: the user's own command, or pip pinned to this version of
/// `site` (an unpinned name could install whatever is published under it next).
fn install_command(given: Option<&str>) -> Result<String> {
    match given.map(str::trim) {
        None => Ok(format!("pip install speed-matrix=={}", env!("CARGO_PKG_VERSION"))),
        Some("") => {
            bail!("--install: give the command that installs site (for example: pip install speed-matrix==1.0.0)")
        }
        Some(c) if c.chars().any(|ch| ch.is_control() && ch != '\n') => {
            bail!("--install: the command holds a control character")
        }
        Some(c) => Ok(c.to_string()),
    }
}

/// Each line of `text` after `indent` (a YAML block scalar's body).
fn indented(text: &str, indent: &str) -> String {
    text.lines().map(|l| format!("{indent}{l}")).collect::<Vec<_>>().join("\n")
}

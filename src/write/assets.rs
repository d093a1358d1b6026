//! Static assets: embedded defaults, each replaceable by a file of the same name in the
//! static folder (`static/`); any other file there is copied as it is.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use walkdir::WalkDir;

use super::Sink;

pub const DEFAULT_ASSETS: &[(&str, &[u8])] = &[
    ("style.css", include_bytes!("../../static/style.css")),
    ("favicon.svg", include_bytes!("../../static/favicon.svg")),
    ("runs.js", include_bytes!("../../static/runs.js")),
    ("cell.js", include_bytes!("../../static/cell.js")),
    ("charts.js", include_bytes!("../../static/charts.js")),
    // Drawn by scripts/make-icons.py: a PNG favicon, the touch icon, and the picture a shared
    // link shows.
    ("icon-32.png", include_bytes!("../../static/icon-32.png")),
    ("icon-180.png", include_bytes!("../../static/icon-180.png")),
    ("icon-512.png", include_bytes!("../../static/icon-512.png")),
];

/// Writes the assets under `static/` in the output. Returns how many files.
pub fn write_assets(static_dir: Option<&Path>, sink: &dyn Sink) -> Result<usize> {
    let mut n = 0;
    for (name, body) in DEFAULT_ASSETS {
        let over = static_dir.map(|d| d.join(name)).filter(|p| p.is_file());
        match over {
            Some(path) => sink.put(
                &format!("static/{name}"),
                &fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
            )?,
            None => sink.put(&format!("static/{name}"), body)?,
        }
        n += 1;
    }
    let Some(dir) = static_dir.filter(|d| d.is_dir()) else {
        return Ok(n);
    };
    for entry in WalkDir::new(dir).min_depth(1).sort_by_file_name() {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry.path().strip_prefix(dir).expect("walkdir yields children");
        let rel = rel.to_string_lossy().replace('\\', "/");
        if DEFAULT_ASSETS.iter().any(|(name, _)| *name == rel) {
            continue;
        }
        let bytes = fs::read(entry.path()).with_context(|| format!("reading {}", entry.path().display()))?;
        sink.put(&format!("static/{rel}"), &bytes)?;
        n += 1;
    }
    Ok(n)
}

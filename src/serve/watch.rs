//! Change detection by polling: a fingerprint (path, size, modification time) of every file
//! under the watched folders, compared every half second. No platform watcher needed, and
//! edits made by any tool (including renames into place) are seen.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use walkdir::WalkDir;

#[derive(Debug, PartialEq, Eq, Default, Clone)]
pub struct Fingerprint(Vec<(PathBuf, u64, Option<SystemTime>)>);

/// Paths the watcher does not look into: the site's own output.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    pub dirs: Vec<PathBuf>,
    /// Where the output's staging folders and lock live, and their name prefixes.
    pub parent: PathBuf,
    pub prefixes: Vec<String>,
}

/// `path` made absolute through its parent folder (the path itself need not exist yet).
pub fn absolute(path: &Path) -> PathBuf {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match (parent.canonicalize(), path.file_name()) {
        (Ok(p), Some(name)) => p.join(name),
        _ => path.to_path_buf(),
    }
}

impl Ignore {
    /// `path` is absolute (the walk starts from canonical folders), as are the ignore paths.
    fn skips(&self, path: &Path) -> bool {
        if self.dirs.iter().any(|d| d == path) {
            return true;
        }
        let in_parent = path.parent() == Some(self.parent.as_path());
        let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        in_parent && self.prefixes.iter().any(|p| name.starts_with(p.as_str()))
    }
}

pub fn fingerprint(dirs: &[&Path], ignore: &Ignore) -> Fingerprint {
    let mut v = Vec::new();
    for dir in dirs {
        if !dir.exists() {
            continue;
        }
        let Ok(dir) = dir.canonicalize() else { continue };
        let walk = WalkDir::new(&dir)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !ignore.skips(e.path()));
        for e in walk.filter_map(|e| e.ok()) {
            if let Ok(m) = e.metadata() {
                if m.is_file() {
                    v.push((e.path().to_path_buf(), m.len(), m.modified().ok()));
                }
            }
        }
    }
    Fingerprint(v)
}

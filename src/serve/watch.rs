//! Change detection by polling: a fingerprint (path, size, modification time) of every file
//! under the watched folders, compared every half second. No platform watcher needed, and
//! edits made by any tool (including renames into place) are seen.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use walkdir::WalkDir;

#[derive(Debug, PartialEq, Eq, Default, Clone)]
pub struct Fingerprint(Vec<(PathBuf, u64, Option<SystemTime>)>);

pub fn fingerprint(dirs: &[&Path]) -> Fingerprint {
    let mut v = Vec::new();
    for dir in dirs {
        if !dir.exists() {
            continue;
        }
        for e in WalkDir::new(dir).sort_by_file_name().into_iter().filter_map(|e| e.ok()) {
            if let Ok(m) = e.metadata() {
                if m.is_file() {
                    v.push((e.path().to_path_buf(), m.len(), m.modified().ok()));
                }
            }
        }
    }
    Fingerprint(v)
}

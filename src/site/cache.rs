//! What a build keeps for the next one: the inputs' fingerprint (equal: nothing to do) and,
//! per cached folder of the output, the hash of its inputs and the digest of its files as the
//! build left them (`write::BUILD_CACHE`, beside the output, never in it).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::SiteConfig;
use crate::format;
use crate::units::InputHash;
use crate::write::Siblings;

/// What a build leaves in its output for the next build (`write::BUILD_CACHE`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct BuildCache {
    pub(super) fingerprint: Option<String>,
    /// Cached folder (`runs/<id>`, `compare/<slug>`) -> input hash of its files, in hex.
    pub(super) pages: BTreeMap<String, String>,
    /// Cached folder -> `write::files_digest` of its files as this build left them, in hex:
    /// a folder whose files changed since is rendered again, never kept.
    #[serde(default)]
    pub(super) digests: BTreeMap<String, String>,
}

impl BuildCache {
    /// The cache beside `out`; none (an empty cache) when missing, unreadable, or when `out`
    /// is not a site we built.
    pub(super) fn read(out: &Path) -> BuildCache {
        if !out.join(crate::write::MARKER).is_file() {
            return BuildCache::default();
        }
        let path = Siblings::of(out).build_cache();
        let ok = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        ok.then(|| fs::read(&path).ok()).flatten().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
    }

    /// Written once the output is in place; failing to write it only costs the next build time.
    pub(super) fn write(&self, out: &Path) {
        let path = Siblings::of(out).build_cache();
        // The temp name extends the cache's, so a watcher that ignores one ignores both.
        let tmp = path.with_extension(format!("build.{}.tmp", std::process::id()));
        let Ok(json) = serde_json::to_vec(self) else { return };
        if fs::write(&tmp, json).and_then(|()| fs::rename(&tmp, &path)).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }

    pub(super) fn hashes(&self) -> BTreeMap<String, u64> {
        from_hex(&self.pages)
    }

    pub(super) fn digests(&self) -> BTreeMap<String, u64> {
        from_hex(&self.digests)
    }
}

fn from_hex(map: &BTreeMap<String, String>) -> BTreeMap<String, u64> {
    map.iter().filter_map(|(id, h)| Some((id.clone(), u64::from_str_radix(h, 16).ok()?))).collect()
}

pub(super) fn to_hex(map: BTreeMap<String, u64>) -> BTreeMap<String, String> {
    map.into_iter().map(|(key, h)| (key, format!("{h:016x}"))).collect()
}

/// A hash of every input's name, size and modification time (data folder, templates,
/// static files, site.toml) and of this program: equal fingerprints mean a build would
/// write the same site. Run folders are walked in parallel.
pub fn input_fingerprint(config: &SiteConfig) -> u64 {
    let mut h = InputHash::default();
    let runs = config.data_dir.join(format::RUNS_DIR);
    let mut folders: Vec<PathBuf> =
        fs::read_dir(&runs).map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default();
    folders.sort();
    let per_run: Vec<u64> = folders.par_iter().map(|f| tree_hash(f)).collect();
    for (f, v) in folders.iter().zip(per_run) {
        h.piece(f.as_os_str().as_encoded_bytes()).u64(v);
    }
    let others = [
        Some(&config.data_dir),
        config.templates_dir.as_ref(),
        config.static_dir.as_ref(),
        config.settings_file.as_ref(),
    ];
    for dir in others.into_iter().flatten() {
        // The data folder's own files (pages/, compare.json); its runs were hashed above.
        h.piece(&tree_hash_except(dir, Some(&runs)).to_le_bytes());
    }
    h.piece(&program_identity());
    h.finish()
}

/// The `site` program that builds: its version, and its executable's size and modification
/// time (a program built again with the same version draws its pages anew).
pub(super) fn program_identity() -> Vec<u8> {
    let mut id = env!("CARGO_PKG_VERSION").as_bytes().to_vec();
    if let Some(exe) = std::env::current_exe().ok().and_then(|p| fs::metadata(p).ok()) {
        id.extend_from_slice(&meta_bytes(&exe));
    }
    id
}

fn tree_hash(root: &Path) -> u64 {
    tree_hash_except(root, None)
}

fn tree_hash_except(root: &Path, skip: Option<&PathBuf>) -> u64 {
    let mut h = InputHash::default();
    h.piece(root.as_os_str().as_encoded_bytes());
    match fs::symlink_metadata(root) {
        Ok(meta) => {
            h.piece(&meta_bytes(&meta));
            if meta.is_dir() {
                hash_dir(root, skip, &mut h);
            }
        }
        Err(_) => {
            h.piece(b"missing");
        }
    }
    h.finish()
}

/// Names and metadata of everything under `dir`, in name order. Each entry is asked
/// relative to its open folder (no path walk per file: half a million of them at 10,000
/// runs); symlinks are not followed.
fn hash_dir(dir: &Path, skip: Option<&PathBuf>, h: &mut InputHash) {
    let Ok(entries) = fs::read_dir(dir) else {
        h.piece(b"unreadable");
        return;
    };
    let mut entries: Vec<fs::DirEntry> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if skip.is_some_and(|s| *s == path) {
            continue;
        }
        h.piece(entry.file_name().as_encoded_bytes());
        match entry.metadata() {
            Ok(meta) => {
                h.piece(&meta_bytes(&meta));
                if meta.is_dir() {
                    hash_dir(&path, skip, h);
                }
            }
            Err(_) => {
                h.piece(b"unreadable");
            }
        }
    }
}

/// What says a file changed without reading it. The change time and inode are in: an edit
/// that keeps the size and sets the modification time back (`touch -r`, an archive
/// restored) still moves the change time, which no user can set.
fn meta_bytes(meta: &fs::Metadata) -> [u8; 64] {
    use std::os::unix::fs::MetadataExt as _;
    let mut out = [0u8; 64];
    let fields = [
        meta.len() as i64,
        meta.mtime(),
        meta.mtime_nsec(),
        meta.mode() as i64,
        meta.ctime(),
        meta.ctime_nsec(),
        meta.ino() as i64,
        meta.dev() as i64,
    ];
    for (chunk, v) in out.chunks_exact_mut(8).zip(fields) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// Whether `out` was built from inputs with this fingerprint (then a build can be skipped).
pub fn up_to_date(config: &SiteConfig, fingerprint: u64) -> bool {
    BuildCache::read(&config.out_dir).fingerprint == Some(format!("{fingerprint:016x}"))
}

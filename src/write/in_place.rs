//! The output folder written in place (`site serve`): a file whose bytes did not change is
//! not touched, a changed one is replaced atomically, and `finish` removes the files this
//! build did not write. Between rebuilds serve keeps an `OutputIndex` of what each unit
//! (a run's folder, a leaderboard, ...) wrote, so keeping a unit is one lookup and stale
//! files are found without walking a folder of half a million files.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{Context, Result};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{check_replaceable, read_previous, safe_relative, write_creating_dirs, Siblings, Sink, MARKER};
use crate::fsutil::{self, Lock};

/// What a build in place left in the output folder.
#[derive(Debug, Default)]
pub struct OutputIndex {
    /// `None` before the first build of a process: then the folder itself is asked.
    known: Option<Written>,
}

#[derive(Debug, Default)]
struct Written {
    units: FxHashMap<String, UnitFiles>,
    /// Files written outside any unit.
    loose: FxHashSet<String>,
}

#[derive(Debug)]
struct UnitFiles {
    hash: u64,
    files: Vec<String>,
}

impl OutputIndex {
    /// Files the index knows of.
    pub fn len(&self) -> usize {
        self.known.as_ref().map_or(0, |w| w.loose.len() + w.units.values().map(|u| u.files.len()).sum::<usize>())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The input hash of every unit the last build in place wrote or kept; `None` before
    /// the first (then the build cache beside the folder tells).
    pub fn unit_hashes(&self) -> Option<BTreeMap<String, u64>> {
        let known = self.known.as_ref()?;
        Some(known.units.iter().map(|(key, unit)| (key.clone(), unit.hash)).collect())
    }
}

pub struct InPlace {
    out: PathBuf,
    known: bool,
    /// The previous build's units not (yet) kept by this one.
    previous: Mutex<FxHashMap<String, UnitFiles>>,
    previous_loose: FxHashSet<String>,
    /// This build's units, kept or rendered.
    units: Mutex<FxHashMap<String, UnitFiles>>,
    /// Every file this build put, in a unit or not.
    put: Mutex<FxHashSet<String>>,
    /// The units this build rendered (the others in `units` were kept).
    rendered: Mutex<Vec<String>>,
    changed: AtomicUsize,
    bytes: AtomicU64,
    _lock: Lock,
}

impl InPlace {
    pub fn new(out: &Path, previous: OutputIndex) -> Result<InPlace> {
        check_replaceable(out)?;
        fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        let siblings = Siblings::of(out);
        let lock = Lock::try_acquire(&siblings.lock(), &format!("{}", out.display()))?;
        if !out.join(MARKER).is_file() {
            fs::write(out.join(MARKER), "built by site build; replaced whole on every build\n")?;
        }
        let known = previous.known.is_some();
        let previous = previous.known.unwrap_or_default();
        Ok(InPlace {
            out: out.to_path_buf(),
            known,
            previous: Mutex::new(previous.units),
            previous_loose: previous.loose,
            units: Mutex::default(),
            put: Mutex::default(),
            rendered: Mutex::default(),
            changed: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            _lock: lock,
        })
    }

    /// Removes what this build did not write; returns (files changed, their bytes, removed)
    /// and the index of what the folder now holds.
    pub fn finish(self) -> Result<(usize, u64, usize, OutputIndex)> {
        let units = self.units.into_inner().expect("no writer panics");
        let put = self.put.into_inner().expect("no writer panics");
        let rendered = self.rendered.into_inner().expect("no writer panics");
        let previous = self.previous.into_inner().expect("no writer panics");
        let removed = if self.known {
            // Files of the previous build's units that were not kept, and its loose files,
            // that nothing wrote this time.
            let stale = previous.values().flat_map(|u| &u.files).chain(&self.previous_loose);
            remove_files(&self.out, stale.filter(|f| !put.contains(*f)))?
        } else {
            let in_units: FxHashSet<&str> = units.values().flat_map(|u| u.files.iter().map(String::as_str)).collect();
            remove_stale_walking(&self.out, |f| put.contains(f) || in_units.contains(f))?
        };
        let rendered_files: FxHashSet<&str> =
            rendered.iter().filter_map(|k| units.get(k)).flat_map(|u| u.files.iter().map(String::as_str)).collect();
        let loose = put.iter().filter(|f| !rendered_files.contains(f.as_str())).cloned().collect();
        let index = OutputIndex { known: Some(Written { units, loose }) };
        Ok((self.changed.into_inner(), self.bytes.into_inner(), removed, index))
    }

    /// Whether the folder holds `rel_path` as a plain file (asked on the first build of a
    /// process, before the index knows the folder).
    fn on_disk(&self, rel_path: &str) -> Result<bool> {
        Ok(fs::symlink_metadata(self.out.join(safe_relative(rel_path)?)).is_ok_and(|m| m.is_file()))
    }
}

impl Sink for InPlace {
    fn put(&self, rel_path: &str, bytes: &[u8]) -> Result<()> {
        let path = self.out.join(safe_relative(rel_path)?);
        self.put.lock().expect("no writer panics").insert(rel_path.to_string());
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64)
            && fs::read(&path).is_ok_and(|old| old == bytes)
        {
            return Ok(());
        }
        write_creating_dirs(&path, |p| fsutil::replace_file(p, bytes))?;
        self.changed.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn reuse_unit(&self, key: &str, hash: u64, files: &dyn Fn() -> Vec<String>) -> Result<bool> {
        if self.known {
            // One lookup, whatever the unit's size; the record moves to this build's index.
            let mut previous = self.previous.lock().expect("no writer panics");
            let Some(unit) = previous.remove(key) else { return Ok(false) };
            if unit.hash != hash {
                previous.insert(key.to_string(), unit);
                return Ok(false);
            }
            drop(previous);
            self.units.lock().expect("no writer panics").insert(key.to_string(), unit);
            return Ok(true);
        }
        let files = files();
        for f in &files {
            if !self.on_disk(f)? {
                return Ok(false);
            }
        }
        self.units.lock().expect("no writer panics").insert(key.to_string(), UnitFiles { hash, files });
        Ok(true)
    }

    fn unit_written(&self, key: &str, hash: u64, files: Vec<String>) {
        self.units.lock().expect("no writer panics").insert(key.to_string(), UnitFiles { hash, files });
        self.rendered.lock().expect("no writer panics").push(key.to_string());
    }

    fn previous_file(&self, rel_path: &str) -> Result<Option<Vec<u8>>> {
        Ok(read_previous(&self.out.join(safe_relative(rel_path)?)))
    }

    /// The files stay where they are; they count as written by this build, so `finish`
    /// does not remove them.
    fn keep_files(&self, files: &[String]) -> Result<bool> {
        for f in files {
            if !self.on_disk(f)? {
                return Ok(false);
            }
        }
        self.put.lock().expect("no writer panics").extend(files.iter().cloned());
        Ok(true)
    }

    /// Serve's own output, which it rewrites file by file and indexes as it goes.
    fn unit_intact(&self, _key: &str, _files: &[String]) -> Result<bool> {
        Ok(true)
    }
}

/// Removes the files `stale` (relative paths) and the folders they leave empty.
fn remove_files<'a>(out: &Path, stale: impl Iterator<Item = &'a String>) -> Result<usize> {
    let mut removed = 0;
    for rel in stale {
        let path = out.join(safe_relative(rel)?);
        match fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
        }
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| *d != out) {
            if fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    Ok(removed)
}

/// Removes every file under `out` that `keep` does not name (the first build of a process,
/// which does not know what the folder holds).
fn remove_stale_walking(out: &Path, keep: impl Fn(&str) -> bool) -> Result<usize> {
    let mut removed = 0;
    for entry in walkdir::WalkDir::new(out).min_depth(1).contents_first(true) {
        let entry = entry.with_context(|| format!("reading {}", out.display()))?;
        let rel = entry.path().strip_prefix(out).expect("walkdir yields children");
        let rel = rel.to_string_lossy().replace('\\', "/");
        if entry.file_type().is_dir() {
            // Only empty folders go; a folder with kept files stays.
            let _ = fs::remove_dir(entry.path());
        } else if rel != MARKER && !keep(&rel) {
            fs::remove_file(entry.path()).with_context(|| format!("removing {}", entry.path().display()))?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// Renders unit `key` with `names` through the sink, as `render_cached` does.
    fn render(out: &InPlace, key: &str, hash: u64, names: &[&str]) {
        for n in names {
            out.put(n, n.as_bytes()).unwrap();
        }
        out.unit_written(key, hash, files(names));
    }

    #[test]
    fn rebuilds_keep_units_by_key_and_remove_only_what_went_stale() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("public");
        let none = || -> Vec<String> { panic!("a known unit's files are not asked for") };

        // First build: two units and a loose page.
        let first = InPlace::new(&root, OutputIndex::default()).unwrap();
        render(&first, "runs/a", 1, &["runs/a/index.html", "runs/a/cells/x/index.html"]);
        render(&first, "runs/b", 2, &["runs/b/index.html"]);
        first.put("glossary/index.html", b"g").unwrap();
        let (_, _, removed, index) = first.finish().unwrap();
        assert_eq!((removed, index.len()), (0, 4));

        // Second: run a kept without asking for its files; run b and the loose page gone.
        let second = InPlace::new(&root, index).unwrap();
        assert!(second.reuse_unit("runs/a", 1, &none).unwrap());
        let (changed, _, removed, index) = second.finish().unwrap();
        assert_eq!((changed, removed), (0, 2));
        assert!(root.join("runs/a/cells/x/index.html").is_file());
        assert!(!root.join("runs/b").exists(), "a vanished unit's folder is removed");
        assert!(!root.join("glossary/index.html").exists());

        // Third: run a's inputs changed (another hash): not kept; rendered without its cell.
        let third = InPlace::new(&root, index).unwrap();
        assert!(!third.reuse_unit("runs/a", 9, &none).unwrap());
        render(&third, "runs/a", 9, &["runs/a/index.html"]);
        let (changed, _, removed, index) = third.finish().unwrap();
        // Its page had the same bytes (not rewritten); the dropped cell page is removed.
        assert_eq!((changed, removed), (0, 1));
        assert!(!root.join("runs/a/cells").exists());
        assert_eq!(index.len(), 1);
    }

    #[test]
    fn the_first_build_of_a_process_asks_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("public");
        fs::create_dir_all(root.join("runs/a")).unwrap();
        fs::write(root.join(MARKER), "").unwrap();
        fs::write(root.join("runs/a/index.html"), "a").unwrap();
        fs::write(root.join("stale.html"), "old").unwrap();
        let out = InPlace::new(&root, OutputIndex::default()).unwrap();
        let listed = || files(&["runs/a/index.html"]);
        assert!(out.reuse_unit("runs/a", 1, &listed).unwrap());
        let missing = || files(&["runs/b/index.html"]);
        assert!(!out.reuse_unit("runs/b", 1, &missing).unwrap());
        let (_, _, removed, index) = out.finish().unwrap();
        assert_eq!(removed, 1);
        assert!(!root.join("stale.html").exists());
        assert!(root.join("runs/a/index.html").is_file());
        assert_eq!(index.len(), 1);
    }
}

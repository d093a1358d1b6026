//! Write: the only code that touches the output folder. A build writes into a fresh
//! temporary folder next to the output and swaps it into place only when every file was
//! written, so a failed build leaves the previous site untouched (unlike generators that
//! empty the output first).

pub mod assets;

use std::collections::HashSet;
use std::fs;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::fsutil::{self, Lock};

/// Where rendered files go (relative, `/`-separated paths). `Staging` is the one that
/// writes to disk; tests collect into memory.
pub trait Sink {
    fn put(&mut self, rel_path: &str, bytes: &[u8]) -> Result<()>;

    /// Keeps `rel_path` as the previous build wrote it, where the sink can (a page whose
    /// inputs did not change). Returns whether it did; the caller renders it otherwise.
    fn reuse(&mut self, _rel_path: &str) -> Result<bool> {
        Ok(false)
    }
}

/// Files kept in memory, in the order written: a page rendered on another thread, before it
/// goes to the real sink.
#[derive(Debug, Default)]
pub struct MemorySink {
    pub files: Vec<(String, Vec<u8>)>,
}

impl Sink for MemorySink {
    fn put(&mut self, rel_path: &str, bytes: &[u8]) -> Result<()> {
        self.files.push((rel_path.to_string(), bytes.to_vec()));
        Ok(())
    }
}

impl MemorySink {
    pub fn drain_into(self, sink: &mut dyn Sink) -> Result<()> {
        self.files.into_iter().try_for_each(|(path, bytes)| sink.put(&path, &bytes))
    }
}

/// A build's destination (a staging folder, or the output folder in place).
pub trait Output {
    fn sink(&mut self) -> &mut dyn Sink;
}

impl Output for Staging {
    fn sink(&mut self) -> &mut dyn Sink {
        self
    }
}

/// The output folder written in place (`site serve`): a file whose bytes did not change is
/// not touched, a changed one is replaced atomically, and `finish` removes the files this
/// build did not write.
pub struct InPlace {
    out: PathBuf,
    written: HashSet<String>,
    changed: usize,
    bytes: u64,
    _lock: Lock,
}

impl InPlace {
    pub fn new(out: &Path) -> Result<InPlace> {
        check_replaceable(out)?;
        fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        let siblings = Siblings::of(out);
        let lock = Lock::try_acquire(&siblings.lock(), &format!("{}", out.display()))?;
        if !out.join(MARKER).is_file() {
            fs::write(out.join(MARKER), "built by site build; replaced whole on every build\n")?;
        }
        Ok(InPlace { out: out.to_path_buf(), written: HashSet::new(), changed: 0, bytes: 0, _lock: lock })
    }

    /// Removes what this build did not write; returns (files changed, their bytes, removed).
    pub fn finish(self) -> Result<(usize, u64, usize)> {
        let mut removed = 0;
        for entry in walkdir::WalkDir::new(&self.out).min_depth(1).contents_first(true) {
            let entry = entry.with_context(|| format!("reading {}", self.out.display()))?;
            let rel = entry.path().strip_prefix(&self.out).expect("walkdir yields children");
            let rel = rel.to_string_lossy().replace('\\', "/");
            if entry.file_type().is_dir() {
                // Only empty folders go; a folder with kept files stays.
                let _ = fs::remove_dir(entry.path());
            } else if rel != MARKER && !self.written.contains(&rel) {
                fs::remove_file(entry.path()).with_context(|| format!("removing {}", entry.path().display()))?;
                removed += 1;
            }
        }
        Ok((self.changed, self.bytes, removed))
    }
}

impl Sink for InPlace {
    fn put(&mut self, rel_path: &str, bytes: &[u8]) -> Result<()> {
        let path = self.out.join(safe_relative(rel_path)?);
        self.written.insert(rel_path.to_string());
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64)
            && fs::read(&path).is_ok_and(|old| old == bytes)
        {
            return Ok(());
        }
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        fsutil::replace_file(&path, bytes)?;
        self.changed += 1;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    fn reuse(&mut self, rel_path: &str) -> Result<bool> {
        let path = self.out.join(safe_relative(rel_path)?);
        let there = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        if there {
            self.written.insert(rel_path.to_string());
        }
        Ok(there)
    }
}

impl Output for InPlace {
    fn sink(&mut self) -> &mut dyn Sink {
        self
    }
}

/// Written into every output folder we build; a folder without it is never replaced.
pub const MARKER: &str = ".speed-matrix-site";

/// A temporary folder that becomes the output folder on `commit`.
pub struct Staging {
    out: PathBuf,
    /// Removed on drop unless committed.
    temp: Option<PathBuf>,
    /// The output folder as the previous build left it, when it is ours: unchanged pages are
    /// hard-linked from it instead of written again.
    previous: Option<PathBuf>,
    pub files: usize,
    pub bytes: u64,
    _lock: Lock,
}

impl Staging {
    /// Prepares a build of `out`. Refuses an existing `out` that is not a folder we built
    /// (so `--out .` or `--out data` cannot wipe someone's files), and a second build of the
    /// same `out` running at once. Staging folders that a killed build left are removed.
    pub fn new(out: &Path) -> Result<Staging> {
        check_replaceable(out)?;
        let siblings = Siblings::of(out);
        let parent = &siblings.parent;
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        let lock = Lock::try_acquire(&siblings.lock(), &format!("{}", out.display()))?;
        remove_stale_staging(&siblings);
        let temp = fsutil::create_temp_dir(parent, &siblings.staging_label())?;
        fs::write(temp.join(MARKER), "built by site build; replaced whole on every build\n")?;
        let previous = out.join(MARKER).is_file().then(|| out.to_path_buf());
        Ok(Staging { out: out.to_path_buf(), temp: Some(temp), previous, files: 0, bytes: 0, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        self.temp.as_ref().expect("staging is live until commit")
    }

    /// Replaces the output folder with the staged one. The old folder is moved aside first
    /// and restored if the second rename fails.
    pub fn commit(mut self) -> Result<()> {
        let temp = self.temp.take().expect("commit once");
        fsutil::replace_dir(&temp, &self.out)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(t) = self.temp.take() {
            let _ = fs::remove_dir_all(t);
        }
    }
}

/// What a build of an output folder creates beside it, in the folder's parent: the lock, the
/// staging folder, and the previous site while it is swapped out. `site serve` ignores them.
pub struct Siblings {
    pub parent: PathBuf,
    name: String,
}

impl Siblings {
    pub fn of(out: &Path) -> Siblings {
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "public".into());
        Siblings { parent, name }
    }

    pub fn lock(&self) -> PathBuf {
        self.parent.join(format!(".{}.lock", self.name))
    }

    /// What a build remembers for the next one (the inputs' fingerprint, each run page's
    /// input hash): beside the output, so the published folder holds only the site.
    pub fn build_cache(&self) -> PathBuf {
        self.parent.join(format!(".{}.build", self.name))
    }

    fn staging_label(&self) -> String {
        format!("build-{}", self.name)
    }

    /// Name prefixes of the staging and previous-site folders.
    pub fn folder_prefixes(&self) -> [String; 2] {
        [format!("{}{}-", fsutil::TEMP_PREFIX, self.staging_label()), format!("{}previous-", fsutil::TEMP_PREFIX)]
    }
}

/// Staging folders left by a killed build (they hold our marker, so they are ours; the build
/// lock says no other build is using them).
fn remove_stale_staging(siblings: &Siblings) {
    let Ok(entries) = fs::read_dir(&siblings.parent) else { return };
    let prefixes = siblings.folder_prefixes();
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && prefixes.iter().any(|p| n.starts_with(p.as_str())) && e.path().join(MARKER).is_file() {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

impl Sink for Staging {
    fn put(&mut self, rel_path: &str, bytes: &[u8]) -> Result<()> {
        let rel = safe_relative(rel_path)?;
        let path = self.path().join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        // Never truncate in place: the file may be a link to the previous build's output.
        let create = || fs::OpenOptions::new().write(true).create_new(true).open(&path);
        let mut f = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                fs::remove_file(&path).with_context(|| format!("replacing {}", path.display()))?;
                create()
            }
            other => other,
        }
        .with_context(|| format!("writing {}", path.display()))?;
        f.write_all(bytes).with_context(|| format!("writing {}", path.display()))?;
        self.files += 1;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    fn reuse(&mut self, rel_path: &str) -> Result<bool> {
        let rel = safe_relative(rel_path)?;
        let Some(old) = self.previous.as_ref().map(|p| p.join(rel)) else { return Ok(false) };
        let Ok(meta) = fs::symlink_metadata(&old) else { return Ok(false) };
        if !meta.is_file() {
            return Ok(false);
        }
        let path = self.path().join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        // The old folder is moved aside and removed after the swap: a link keeps the file.
        if fs::hard_link(&old, &path).is_err() {
            return Ok(false);
        }
        self.files += 1;
        self.bytes += meta.len();
        Ok(true)
    }
}

/// An output path must stay inside the output folder: relative, no `..`, no root.
pub fn safe_relative(rel: &str) -> Result<&Path> {
    let p = Path::new(rel);
    let ok = !rel.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    if !ok {
        bail!("refusing to write {rel:?}: not a plain path inside the output folder");
    }
    Ok(p)
}

fn check_replaceable(out: &Path) -> Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        bail!("{} exists and is not a folder; choose another --out", out.display());
    }
    let empty = fs::read_dir(out)?.next().is_none();
    if !empty && !out.join(MARKER).is_file() {
        bail!(
            "refusing to replace {}: it holds files that site build did not write (no {MARKER} in it); choose an empty or new --out",
            out.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_cannot_escape() {
        for bad in ["../x", "/etc/passwd", "a/../../b", "", "./a"] {
            assert!(safe_relative(bad).is_err(), "{bad}");
        }
        assert!(safe_relative("runs/a/index.html").is_ok());
    }

    #[test]
    fn commit_replaces_and_failed_build_keeps_old() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("public");
        let mut s = Staging::new(&out).unwrap();
        s.put("index.html", b"one").unwrap();
        s.commit().unwrap();
        assert_eq!(fs::read_to_string(out.join("index.html")).unwrap(), "one");

        // A build that is dropped (failed) leaves the old site and no temp folder.
        let mut s = Staging::new(&out).unwrap();
        s.put("index.html", b"two").unwrap();
        drop(s);
        assert_eq!(fs::read_to_string(out.join("index.html")).unwrap(), "one");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

        // A killed build's staging folder is removed by the next build; two builds of one
        // folder at once are refused.
        let s = Staging::new(&out).unwrap();
        let killed = s.path().to_path_buf();
        std::mem::forget(s);
        fs::remove_file(dir.path().join(".public.lock")).unwrap();
        let s = Staging::new(&out).unwrap();
        assert!(!killed.exists());
        let err = Staging::new(&out).err().unwrap().to_string();
        assert!(err.contains("is being written by another process"), "{err}");
        drop(s);

        let mut s = Staging::new(&out).unwrap();
        s.put("other.html", b"three").unwrap();
        s.commit().unwrap();
        assert!(!out.join("index.html").exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn foreign_folders_are_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("precious.txt"), "x").unwrap();
        let err = Staging::new(dir.path()).err().unwrap().to_string();
        assert!(err.contains("refusing to replace"), "{err}");
    }
}

//! Write: the only code that touches the output folder. A build writes into a fresh
//! temporary folder next to the output and swaps it into place only when every file was
//! written, so a failed build leaves the previous site untouched (unlike generators that
//! empty the output first).

pub mod assets;
mod in_place;

pub use in_place::{InPlace, OutputIndex};

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};

use crate::fsutil::{self, Lock};

/// Where rendered files go (relative, `/`-separated paths): a staging folder swapped in
/// whole (`Staging`) or the output folder in place (`InPlace`). Shared by every rendering
/// thread: each page goes to disk from the thread that rendered it.
pub trait Sink: Sync {
    fn put(&self, rel_path: &str, bytes: &[u8]) -> Result<()>;

    /// Keeps the unit `key` (a folder rendered as one; `hash` is its input hash) with its
    /// `files` as the previous build wrote them, where the sink can, or reports that it
    /// could not (the caller renders them all again, replacing any kept). `files` is asked
    /// only where needed.
    fn reuse_unit(&self, _key: &str, _hash: u64, _files: &dyn Fn() -> Vec<String>) -> Result<bool> {
        Ok(false)
    }

    /// The unit `key` was rendered and wrote `files`.
    fn unit_written(&self, _key: &str, _hash: u64, _files: Vec<String>) {}

    /// The previous build's bytes of `rel_path` where the sink has them (a plain file, never
    /// read through a symlink), to patch instead of rendering it again; `None` otherwise.
    /// (No default: a sink that wraps another must pass this on.)
    fn previous_file(&self, rel_path: &str) -> Result<Option<Vec<u8>>>;

    /// Keeps the previous build's `files` as they are (the rest of a patched unit); whether
    /// it could.
    fn keep_files(&self, files: &[String]) -> Result<bool>;

    /// Whether the previous build's `files` of unit `key` are as that build left them (no
    /// one edited, replaced or touched them since), so they may be kept or patched. (No
    /// default: a sink that wraps another must pass this on.)
    fn unit_intact(&self, key: &str, files: &[String]) -> Result<bool>;
}

/// What the files of a unit look like on disk without reading them: each one's inode,
/// size, modification and change times. The change time moves on every write and cannot be
/// set back (`touch -r` sets only the others), so an edited file never matches. `None` when
/// one is missing or not a plain file.
pub fn files_digest(root: &Path, files: &[String]) -> Option<u64> {
    use std::hash::Hasher as _;
    use std::os::unix::fs::MetadataExt as _;
    let mut h = twox_hash::XxHash64::with_seed(0);
    for f in files {
        let meta = fs::symlink_metadata(root.join(safe_relative(f).ok()?)).ok().filter(|m| m.is_file())?;
        h.write(f.as_bytes());
        for v in [meta.dev(), meta.ino(), meta.len()] {
            h.write_u64(v);
        }
        for v in [meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec()] {
            h.write_i64(v);
        }
    }
    Some(h.finish())
}

/// The most a previous build's file may hold to be patched rather than rendered again.
const PATCHABLE_BYTES: u64 = 64 << 20;

/// The bytes of `path` when it is a plain file of at most `PATCHABLE_BYTES`, else `None`
/// (then the page is rendered: a missing or odd file is not an error here).
fn read_previous(path: &Path) -> Option<Vec<u8>> {
    fsutil::read_regular_file(path, PATCHABLE_BYTES).ok()
}

/// Runs `write(path)`; when the folder is missing, creates it and runs it again (one
/// system call per file where the folder exists, instead of asking first).
pub(crate) fn write_creating_dirs(path: &Path, write: impl Fn(&Path) -> std::io::Result<()>) -> Result<()> {
    // An io::Error is looked at before any context is added: a missing folder is the common
    // case in a new output folder, not an error to describe.
    match write(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = path.parent().expect("output files are inside the output folder");
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            write(path)
        }
        other => other,
    }
    .with_context(|| format!("writing {}", path.display()))
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
    /// Each unit's digest as the previous build recorded it (`files_digest`): a unit whose
    /// files no longer match is rendered again, never kept.
    previous_digests: BTreeMap<String, u64>,
    /// Each unit this build wrote or kept, with its files (their digests are recorded once
    /// the build is in place).
    units: Mutex<BTreeMap<String, Vec<String>>>,
    files: AtomicUsize,
    bytes: AtomicU64,
    /// Each file of the staged site and its bytes, by path (a file rendered again after it
    /// was kept by link counts once): what the site weighs, without walking it again.
    sizes: Mutex<rustc_hash::FxHashMap<String, u64>>,
    _lock: Lock,
}

impl Staging {
    /// Prepares a build of `out`. Refuses an existing `out` that is not a folder we built
    /// (so `--out .` or `--out data` cannot wipe someone's files), and a second build of the
    /// same `out` running at once. Staging folders that a killed build left are removed.
    pub fn new(out: &Path, previous_digests: BTreeMap<String, u64>) -> Result<Staging> {
        check_replaceable(out)?;
        let siblings = Siblings::of(out);
        let parent = &siblings.parent;
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        let lock = Lock::try_acquire(&siblings.lock(), &format!("{}", out.display()))?;
        remove_stale_staging(&siblings);
        let temp = fsutil::create_temp_dir(parent, &siblings.staging_label())?;
        fs::write(temp.join(MARKER), "built by site build; replaced whole on every build\n")?;
        let previous = out.join(MARKER).is_file().then(|| out.to_path_buf());
        Ok(Staging {
            out: out.to_path_buf(),
            temp: Some(temp),
            previous,
            previous_digests,
            units: Mutex::new(BTreeMap::new()),
            files: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            sizes: Mutex::new(rustc_hash::FxHashMap::default()),
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        self.temp.as_ref().expect("staging is live until commit")
    }

    /// Files written (or kept by link) so far, and their bytes.
    pub fn written(&self) -> (usize, u64) {
        (self.files.load(Ordering::Relaxed), self.bytes.load(Ordering::Relaxed))
    }

    /// Every file written or kept so far, with its bytes, in path order.
    pub fn file_sizes(&self) -> Vec<(String, u64)> {
        let sizes = self.sizes.lock().expect("no writer panics");
        let mut out: Vec<(String, u64)> = sizes.iter().map(|(p, b)| (p.clone(), *b)).collect();
        out.sort_unstable();
        out
    }

    fn record_size(&self, rel_path: &str, bytes: u64) {
        self.sizes.lock().expect("no writer panics").insert(rel_path.to_string(), bytes);
    }

    /// Nothing of the previous build is kept (`site build --force`): every file is written.
    pub fn without_previous(mut self) -> Staging {
        self.previous = None;
        self
    }

    /// Replaces the output folder with the staged one (the old folder is moved aside first
    /// and restored if the second rename fails); returns each unit's digest as it now lies
    /// in the output, for the next build to check what it keeps.
    pub fn commit(mut self) -> Result<BTreeMap<String, u64>> {
        let temp = self.temp.take().expect("commit once");
        fsutil::replace_dir(&temp, &self.out)?;
        let units = std::mem::take(&mut *self.units.lock().expect("no writer panics"));
        use rayon::prelude::*;
        Ok(units.into_par_iter().filter_map(|(key, files)| Some((key, files_digest(&self.out, &files)?))).collect())
    }

    fn record_unit(&self, key: &str, files: Vec<String>) {
        if !files.is_empty() {
            self.units.lock().expect("no writer panics").insert(key.to_string(), files);
        }
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

/// Removes the staging folders a killed build of `out` left beside it, when no build of `out`
/// is running (a build that finds its output up to date calls this too, so a leftover never
/// outlives the next build).
pub fn clean_stale_staging(out: &Path) {
    let siblings = Siblings::of(out);
    if let Ok(_lock) = Lock::try_acquire(&siblings.lock(), &out.display().to_string()) {
        remove_stale_staging(&siblings);
    }
}

/// Staging folders left by a killed build: ours by name, and either holding our marker or
/// named after a process that is gone (killed before it wrote the marker). The build lock
/// says no other build is using them.
fn remove_stale_staging(siblings: &Siblings) {
    let Ok(entries) = fs::read_dir(&siblings.parent) else { return };
    let prefixes = siblings.folder_prefixes();
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        // `<pid>-<counter>-<random>` after the prefix, exactly (`public-2`'s staging is not
        // `public`'s).
        let Some(pid) = prefixes.iter().find_map(|p| fsutil::temp_name_pid(n.strip_prefix(p.as_str())?)) else {
            continue;
        };
        let owner_gone = !fsutil::process_alive(pid);
        if is_dir && (e.path().join(MARKER).is_file() || owner_gone) {
            let _ = fsutil::remove_tree(&e.path());
        }
    }
}

impl Sink for Staging {
    fn put(&self, rel_path: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path().join(safe_relative(rel_path)?);
        self.make_folder_of(&path)?;
        create_new(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        self.files.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.record_size(rel_path, bytes.len() as u64);
        Ok(())
    }

    fn reuse_unit(&self, key: &str, _hash: u64, files: &dyn Fn() -> Vec<String>) -> Result<bool> {
        let files = files();
        let kept = self.keep_files(&files)?;
        if kept {
            self.record_unit(key, files);
        }
        Ok(kept)
    }

    fn unit_written(&self, key: &str, _hash: u64, files: Vec<String>) {
        self.record_unit(key, files);
    }

    fn unit_intact(&self, key: &str, files: &[String]) -> Result<bool> {
        let Some(previous) = &self.previous else { return Ok(false) };
        Ok(self.previous_digests.get(key).is_some_and(|d| files_digest(previous, files) == Some(*d)))
    }

    fn previous_file(&self, rel_path: &str) -> Result<Option<Vec<u8>>> {
        let rel = safe_relative(rel_path)?;
        Ok(self.previous.as_ref().and_then(|p| read_previous(&p.join(rel))))
    }

    fn keep_files(&self, files: &[String]) -> Result<bool> {
        for f in files {
            if !self.link_previous(f)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl Staging {
    /// Makes a file's folder before the file: most pages are the only file of their folder,
    /// so one `mkdir` beats a failed open and a retry (and a set of the folders made would
    /// be half a million paths at 10,000 runs).
    fn make_folder_of(&self, path: &Path) -> Result<()> {
        let dir = path.parent().expect("output files are inside the output folder");
        match fs::create_dir(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(_) => fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display())),
        }
    }

    /// Keeps `rel_path` by a hard link to the previous build's file; whether it could.
    fn link_previous(&self, rel_path: &str) -> Result<bool> {
        let rel = safe_relative(rel_path)?;
        let Some(old) = self.previous.as_ref().map(|p| p.join(rel)) else { return Ok(false) };
        let path = self.path().join(rel);
        // A link to the old file (the old folder is moved aside and removed after the swap:
        // the link keeps the file). A missing old file only means rendering it again.
        self.make_folder_of(&path)?;
        if fs::hard_link(&old, &path).is_err() {
            return Ok(false);
        }
        // `link` does not follow a symlink: whatever is not a plain file is not kept.
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                self.files.fetch_add(1, Ordering::Relaxed);
                self.bytes.fetch_add(meta.len(), Ordering::Relaxed);
                self.record_size(rel_path, meta.len());
                Ok(true)
            }
            _ => {
                let _ = fs::remove_file(&path);
                Ok(false)
            }
        }
    }
}

/// Creates `path` with `bytes`; an existing file (a page kept by link, then rendered again) is
/// replaced, never truncated in place: it may be a link to the previous build's output.
fn create_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let create = || fs::OpenOptions::new().write(true).create_new(true).open(path);
    let mut f = match create() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            fs::remove_file(path)?;
            create()
        }
        other => other,
    }?;
    f.write_all(bytes)
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
        let s = Staging::new(&out, BTreeMap::new()).unwrap();
        s.put("index.html", b"one").unwrap();
        s.commit().unwrap();
        assert_eq!(fs::read_to_string(out.join("index.html")).unwrap(), "one");

        // A build that is dropped (failed) leaves the old site and no temp folder.
        let s = Staging::new(&out, BTreeMap::new()).unwrap();
        s.put("index.html", b"two").unwrap();
        drop(s);
        assert_eq!(fs::read_to_string(out.join("index.html")).unwrap(), "one");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

        // A killed build's staging folder is removed by the next build; two builds of one
        // folder at once are refused.
        let s = Staging::new(&out, BTreeMap::new()).unwrap();
        let killed = s.path().to_path_buf();
        std::mem::forget(s);
        fs::remove_file(dir.path().join(".public.lock")).unwrap();
        let s = Staging::new(&out, BTreeMap::new()).unwrap();
        assert!(!killed.exists());
        let err = Staging::new(&out, BTreeMap::new()).err().unwrap().to_string();
        assert!(err.contains("is being written by another process"), "{err}");
        drop(s);

        let s = Staging::new(&out, BTreeMap::new()).unwrap();
        s.put("other.html", b"three").unwrap();
        s.commit().unwrap();
        assert!(!out.join("index.html").exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn foreign_folders_are_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("precious.txt"), "x").unwrap();
        let err = Staging::new(dir.path(), BTreeMap::new()).err().unwrap().to_string();
        assert!(err.contains("refusing to replace"), "{err}");
    }
}

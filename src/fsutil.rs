//! File system primitives shared by every writer and reader of the data folder: atomic
//! writes that keep the process umask, fresh folders, advisory locks, and a reader that
//! refuses symlinks, special files and oversized files.

use std::fs::{self, File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, bail, Context, Result};

/// The largest data file read (a cell with every request of a long, wide run stays far below).
pub const MAX_DATA_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Prefix of every temporary file or folder we create; readers skip such names.
pub const TEMP_PREFIX: &str = ".tmp-";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name no other process or call of this one uses: pid, a counter and random bits.
pub fn unique_name(label: &str) -> String {
    let mut r = [0u8; 4];
    let _ = getrandom::fill(&mut r);
    format!(
        "{TEMP_PREFIX}{label}-{}-{}-{:08x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        u32::from_le_bytes(r)
    )
}

/// The process that made a temporary name, from what follows its label: `<pid>-<counter>-
/// <random>` exactly (see `unique_name`); `None` for anything else.
pub fn temp_name_pid(after_label: &str) -> Option<u32> {
    let parts: Vec<&str> = after_label.split('-').collect();
    let [pid, counter, random] = parts[..] else { return None };
    (counter.parse::<u64>().is_ok() && u32::from_str_radix(random, 16).is_ok() && random.len() == 8)
        .then(|| pid.parse().ok())
        .flatten()
}

/// Removes the temporary folders `{TEMP_PREFIX}{label}-<pid>-<n>-<random>` in `parent` whose
/// process is gone (killed mid-write). The caller holds the lock that makes `label` its own.
pub fn remove_dead_temp_dirs(parent: &Path, label: &str) {
    for dir in dead_temp_dirs(parent, label) {
        let _ = remove_tree(&dir);
    }
}

/// The temporary folders `{TEMP_PREFIX}{label}-<pid>-<n>-<random>` in `parent` whose process
/// is gone, newest name last.
pub fn dead_temp_dirs(parent: &Path, label: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else { return Vec::new() };
    let prefix = format!("{TEMP_PREFIX}{label}-");
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(&prefix).and_then(temp_name_pid).is_some_and(|pid| !process_alive(pid))
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// What a folder left aside by [`replace_dir`] held: `{TEMP_PREFIX}previous-<name>-<pid>-<n>-<random>`
/// gives `name`.
/// `None` while the process that made it is alive (a write in progress).
pub fn interrupted_copy(temp_name: &str) -> Option<&str> {
    let rest = temp_name.strip_prefix(TEMP_PREFIX)?.strip_prefix("previous-")?;
    let mut parts = rest.rsplitn(4, '-');
    let (random, n, pid) = (parts.next()?, parts.next()?, parts.next()?);
    let name = parts.next().filter(|n| !n.is_empty())?;
    let pid = temp_name_pid(&format!("{pid}-{n}-{random}"))?;
    (!process_alive(pid)).then_some(name)
}

/// Whether process `pid` exists (it may belong to another user).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // Signal 0 checks without sending; EPERM means it exists under another user.
    // SAFETY: kill with signal 0 has no effect on the target; it only reports.
    let sent = unsafe { libc::kill(pid, 0) } == 0;
    sent || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Replaces `path` with `bytes` through a temp file and a rename, without syncing: for
/// output that can be rebuilt, where a reader must see the old or the new file whole.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = dir.join(unique_name("write"));
    let result = fs::write(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes `bytes` to `path` through a temp file in the same folder, synced, then renamed.
/// The file gets the process umask's permissions (0644 by default), like any other file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(unique_name("write"));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("creating a temp file in {}", dir.display()))?;
        f.write_all(bytes).with_context(|| format!("writing {}", tmp.display()))?;
        f.sync_all().with_context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, path).with_context(|| format!("renaming into {}", path.display()))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Creates a new, empty folder with a unique temporary name in `parent` (umask permissions).
pub fn create_temp_dir(parent: &Path, label: &str) -> Result<PathBuf> {
    fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    loop {
        let dir = parent.join(unique_name(label));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating a temporary folder in {}", parent.display())),
        }
    }
}

/// Puts the folder `new` at `dest`. An existing `dest` is moved aside first and comes back if
/// the move fails.
pub fn replace_dir(new: &Path, dest: &Path) -> Result<()> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    // Named after what it holds: a writer killed between the two renames leaves it for the
    // next one to put back (`interrupted_copy`).
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let aside = dest.exists().then(|| parent.join(unique_name(&format!("previous-{name}"))));
    if let Some(aside) = &aside {
        fs::rename(dest, aside).with_context(|| format!("moving the previous {} aside", dest.display()))?;
    }
    if let Err(e) = fs::rename(new, dest) {
        let _ = fs::remove_dir_all(new);
        if let Some(a) = &aside {
            let _ = fs::rename(a, dest);
        }
        return Err(e).with_context(|| format!("moving the new folder into {}", dest.display()));
    }
    if let Some(a) = &aside {
        remove_tree(a).with_context(|| format!("removing the previous {}", a.display()))?;
    }
    Ok(())
}

/// Removes `dir` and everything in it, the folders two levels down on every core (a site of
/// 10,000 runs is half a million files, `runs/<id>/...` among them). Symlinks are removed,
/// never followed.
pub fn remove_tree(dir: &Path) -> std::io::Result<()> {
    use rayon::prelude::*;
    let mut subtrees = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            for sub in fs::read_dir(entry.path())? {
                let sub = sub?;
                if sub.file_type()?.is_dir() {
                    subtrees.push(sub.path());
                }
            }
        }
    }
    subtrees.par_iter().try_for_each(fs::remove_dir_all)?;
    fs::remove_dir_all(dir)
}

/// An exclusive advisory lock on a lock file, released (and the file removed) on drop. Held
/// by whoever writes a run folder or an output folder, so two writers never meet.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    file: File,
}

impl Lock {
    /// Takes the lock at `path` or fails at once, saying `what` is busy.
    pub fn try_acquire(path: &Path, what: &str) -> Result<Lock> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let busy = || anyhow!("{what} is being written by another process (lock {} is held)", path.display());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .with_context(|| format!("opening the lock {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(busy()),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()))
            }
        }
        // The holder before us removes the file on release: a lock on a file no longer at
        // `path` is no lock at all.
        let same = fs::symlink_metadata(path).ok().zip(file.metadata().ok()).is_some_and(|(a, b)| a.ino() == b.ino());
        if !same {
            return Err(busy());
        }
        Ok(Lock { path: path.to_path_buf(), file })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Removed while still held, so nobody locks the old file after we let go.
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// The folder a build writes for `--out out`, checked against the data folder `data`: a
/// link is followed (the build goes into the folder it points at, a deploy folder say, not
/// over the link); an output inside the data folder (read back as data on the next build) or
/// one that holds it (a build replaces its output whole) is refused.
pub fn output_folder(out: &Path, data: &Path) -> Result<PathBuf> {
    let resolved = match fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(out).with_context(|| {
            format!(
                "--out {} is a link to a folder that does not exist; create it or choose another --out",
                out.display()
            )
        })?,
        _ => out.to_path_buf(),
    };
    let (abs_out, abs_data) = (absolute(&resolved), absolute(data));
    if abs_out.starts_with(&abs_data) {
        bail!(
            "--out {} is inside the data folder {}: the next build would read it as data; choose a folder outside it",
            out.display(),
            data.display()
        );
    }
    if abs_data.starts_with(&abs_out) {
        bail!(
            "--out {} holds the data folder {}: a build replaces its output folder whole; choose a folder beside it",
            out.display(),
            data.display()
        );
    }
    Ok(resolved)
}

/// `path` made absolute with every link of its existing part resolved (the rest as written).
fn absolute(path: &Path) -> PathBuf {
    let mut existing =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = fs::canonicalize(&existing) {
            return rest.iter().rev().fold(c, |p, part| p.join(part));
        }
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Reads a data file as UTF-8 text: a regular file (not a symlink, FIFO, device or folder),
/// at most `limit` bytes. Every refusal names the path.
pub fn read_data_file(path: &Path, limit: u64) -> Result<String> {
    let bytes = read_regular_file(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow!("{}: not UTF-8 text (invalid byte at offset {})", path.display(), e.utf8_error().valid_up_to())
    })
}

/// A gzip file's text, read as `read_data_file` reads a plain one: a regular file, never
/// through a symlink, of at most `limit` bytes, and at most `limit` bytes once unpacked (a
/// small file that unpacks to gigabytes is refused, not held).
pub fn read_gzip_data_file(path: &Path, limit: u64) -> Result<String> {
    let (file, _) = open_regular_file(path, limit)?;
    let mut text = Vec::new();
    // Every member: a gzip file may be several joined (a run's cells file is one a cell).
    let mut unpacked = flate2::read::MultiGzDecoder::new(file).take(limit + 1);
    unpacked.read_to_end(&mut text).with_context(|| format!("{}: not a readable gzip file", path.display()))?;
    if text.len() as u64 > limit {
        bail!("{}: unpacks to more than the {limit} bytes a data file may have", path.display());
    }
    String::from_utf8(text).map_err(|e| {
        anyhow!(
            "{}: not UTF-8 text once unpacked (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// A gzip file's lines as they unpack, each given to `line` with its number (from 1; blank
/// lines left out), checked as `read_gzip_data_file` checks the whole: a regular file of at
/// most `limit` bytes that unpacks to at most `limit` bytes of UTF-8. Only one line is held
/// at a time, so a file near the limit costs the limit at most, not twice it.
pub fn for_each_gzip_line(path: &Path, limit: u64, mut line: impl FnMut(usize, &str)) -> Result<()> {
    use std::io::BufRead as _;
    let (file, _) = open_regular_file(path, limit)?;
    // Every member: a gzip file may be several joined.
    let mut reader = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(file).take(limit + 1));
    let (mut bytes, mut total, mut n) = (Vec::new(), 0u64, 0usize);
    loop {
        bytes.clear();
        let read = reader
            .read_until(b'\n', &mut bytes)
            .with_context(|| format!("{}: not a readable gzip file", path.display()))?;
        if read == 0 {
            return Ok(());
        }
        total += read as u64;
        if total > limit {
            bail!("{}: unpacks to more than the {limit} bytes a data file may have", path.display());
        }
        n += 1;
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| anyhow!("{}:{n}:{}: not UTF-8 text once unpacked", path.display(), e.valid_up_to() + 1))?;
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            line(n, text);
        }
    }
}

/// Opens a regular file (not a symlink, FIFO, device or folder) of at most `limit` bytes to
/// read it as a stream; returns it with its size.
pub fn open_regular_file(path: &Path, limit: u64) -> Result<(fs::File, u64)> {
    let meta = fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    check_regular(path, &meta)?;
    // O_NOFOLLOW: a file swapped for a symlink after the check is still refused;
    // O_NONBLOCK: a FIFO swapped in cannot hang the open.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("reading {} (a symlink is never followed)", path.display()))?;
    let meta = file.metadata().with_context(|| format!("reading {}", path.display()))?;
    check_regular(path, &meta)?;
    if meta.len() > limit {
        bail!("{}: {} bytes, more than the {} bytes a data file may have", path.display(), meta.len(), limit);
    }
    Ok((file, meta.len()))
}

/// Calls `each(line_number, line)` for every line of a regular file, one line in memory at
/// a time; a line longer than `max_line` bytes is an error naming the file and line.
pub fn for_each_line(path: &Path, limit: u64, max_line: usize, mut each: impl FnMut(usize, &str)) -> Result<()> {
    use std::io::BufRead as _;
    let (file, _) = open_regular_file(path, limit)?;
    let mut reader = std::io::BufReader::new(file.take(limit + 1));
    let mut buf = Vec::new();
    for number in 1.. {
        buf.clear();
        let n = (&mut reader)
            .take(max_line as u64 + 1)
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            return Ok(());
        }
        if buf.len() > max_line && buf.last() != Some(&b'\n') {
            bail!("{}:{number}: a line longer than {max_line} bytes", path.display());
        }
        let line = std::str::from_utf8(&buf).map_err(|e| {
            anyhow!("{}:{number}: not UTF-8 text (invalid byte at column {})", path.display(), e.valid_up_to() + 1)
        })?;
        each(number, line.trim_end_matches(['\n', '\r']));
    }
    Ok(())
}

/// Reads a regular file (not a symlink, FIFO, device or folder) of at most `limit` bytes.
pub fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let (mut file, len) = open_regular_file(path, limit)?;
    let mut bytes = Vec::with_capacity(len as usize);
    (&mut file).take(limit + 1).read_to_end(&mut bytes).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 > limit {
        bail!("{}: more than the {limit} bytes a data file may have", path.display());
    }
    Ok(bytes)
}

fn check_regular(path: &Path, meta: &fs::Metadata) -> Result<()> {
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(());
    }
    bail!("{}: {}; a data file must be a regular file", path.display(), describe(ft))
}

/// What a non-regular file is, in words.
pub fn describe(ft: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if ft.is_symlink() {
        "a symlink (refused: it could publish a file from outside the data folder)"
    } else if ft.is_dir() {
        "a folder where a file belongs"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else if ft.is_file() {
        "a file"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn atomic_writes_follow_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"x").unwrap();
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        // SAFETY: umask is read and restored at once; tests in this binary do not rely on it.
        let umask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        assert_eq!(mode, 0o666 & !(umask as u32));
        let d = create_temp_dir(dir.path(), "t").unwrap();
        assert_eq!(fs::metadata(&d).unwrap().permissions().mode() & 0o777, 0o777 & !(umask as u32));
    }

    #[test]
    fn second_lock_is_refused_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".x.lock");
        let a = Lock::try_acquire(&p, "run x").unwrap();
        let err = Lock::try_acquire(&p, "run x").unwrap_err().to_string();
        assert!(err.contains("run x is being written by another process"), "{err}");
        drop(a);
        assert!(!p.exists());
        Lock::try_acquire(&p, "run x").unwrap();
    }

    #[test]
    fn data_reader_refuses_links_fifos_folders_and_big_files() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        fs::write(&secret, "s").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let err = read_data_file(&link, 100).unwrap_err().to_string();
        assert!(err.contains("link.json: a symlink"), "{err}");
        let fifo = dir.path().join("fifo.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(read_data_file(&fifo, 100).unwrap_err().to_string().contains("FIFO"));
        assert!(read_data_file(dir.path(), 100).unwrap_err().to_string().contains("a folder where a file belongs"));
        let big = dir.path().join("big.json");
        fs::write(&big, "0123456789").unwrap();
        assert!(read_data_file(&big, 9).unwrap_err().to_string().contains("more than the 9 bytes"));
        assert_eq!(read_data_file(&big, 10).unwrap(), "0123456789");
    }

    #[test]
    fn a_tree_is_removed_whole_and_links_out_of_it_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("keep.txt"), "k").unwrap();
        let tree = dir.path().join("site");
        for run in ["a", "b"] {
            let cell = tree.join("runs").join(run).join("cells/decode-8k-x1");
            fs::create_dir_all(&cell).unwrap();
            fs::write(cell.join("index.html"), "x").unwrap();
            fs::write(tree.join("runs").join(run).join("index.html"), "x").unwrap();
        }
        fs::write(tree.join("index.html"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("runs/linked")).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("top-link")).unwrap();
        remove_tree(&tree).unwrap();
        assert!(!tree.exists());
        assert_eq!(fs::read_to_string(outside.join("keep.txt")).unwrap(), "k");
    }
}

//! Change detection for `site serve`: the operating system's file watcher (`notify`:
//! inotify, FSEvents, ...), or polling where there is none. Each change is classified: only
//! some run folders changed (those runs are read again), or anything else (the site is
//! loaded again). The site's own output is never a change.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

use anyhow::Result;
use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, PollWatcher, RecommendedWatcher, RecursiveMode, Watcher};

use crate::format::RUNS_DIR;
use crate::fsutil::TEMP_PREFIX;
use crate::site::SiteConfig;

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
    /// Whether `path` (absolute) is the output, a staging folder or lock, or inside one.
    pub fn skips(&self, path: &Path) -> bool {
        path.ancestors().any(|p| {
            if self.dirs.iter().any(|d| d == p) {
                return true;
            }
            let name = p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
            p.parent() == Some(self.parent.as_path()) && self.prefixes.iter().any(|x| name.starts_with(x.as_str()))
        })
    }
}

/// What a batch of changed paths asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Only these run folders (by id) changed.
    Runs(BTreeSet<String>),
    /// Anything else: templates, assets, pages, `compare.json`, `site.toml`.
    Everything,
}

impl Change {
    fn merge(self, other: Change) -> Change {
        match (self, other) {
            (Change::Runs(mut a), Change::Runs(b)) => {
                a.extend(b);
                Change::Runs(a)
            }
            _ => Change::Everything,
        }
    }
}

/// The watched inputs, absolute.
#[derive(Debug, Clone)]
pub struct Inputs {
    runs: PathBuf,
    dirs: Vec<PathBuf>,
    settings: Option<PathBuf>,
    ignore: Ignore,
}

impl Inputs {
    pub fn of(config: &SiteConfig, ignore: Ignore) -> Inputs {
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| absolute(p));
        let data = canon(&config.data_dir);
        let mut dirs = vec![data.clone()];
        dirs.extend([&config.templates_dir, &config.static_dir].into_iter().flatten().map(|d| canon(d)));
        Inputs { runs: data.join(RUNS_DIR), dirs, settings: config.settings_file.as_deref().map(absolute), ignore }
    }

    /// What a changed `path` asks for; `None` for a path that is not an input.
    pub fn classify(&self, path: &Path) -> Option<Change> {
        if self.ignore.skips(path) {
            return None;
        }
        if self.settings.as_deref() == Some(path) {
            return Some(Change::Everything);
        }
        if let Ok(rest) = path.strip_prefix(&self.runs) {
            return match rest.components().next() {
                Some(Component::Normal(id)) => {
                    let id = id.to_string_lossy();
                    // A writer's temp folder becomes a run only when renamed into place.
                    (!id.starts_with(TEMP_PREFIX)).then(|| Change::Runs(BTreeSet::from([id.into_owned()])))
                }
                _ => Some(Change::Everything),
            };
        }
        self.dirs.iter().any(|d| path.starts_with(d)).then_some(Change::Everything)
    }
}

/// A running watcher and the changes it reports.
pub struct Changes {
    _watcher: Box<dyn Watcher + Send>,
    events: Receiver<notify::Result<notify::Event>>,
    inputs: Inputs,
    /// What the watcher is, for the log: `inotify`, `polling every 500 ms`, ...
    pub kind: String,
}

impl Changes {
    /// Watches the inputs with the platform's watcher, or by polling every `poll` where it
    /// cannot be used (e.g. no inotify watches left).
    pub fn start(inputs: Inputs, poll: Duration) -> Result<Changes> {
        let (tx, events) = channel();
        let native = RecommendedWatcher::new(tx.clone(), notify::Config::default())
            .map_err(anyhow::Error::from)
            .and_then(|mut w| watch_all(&mut w, &inputs).map(|()| w));
        let (watcher, kind): (Box<dyn Watcher + Send>, String) = match native {
            Ok(w) => (Box::new(w), "the system's file watcher".into()),
            Err(e) => {
                let mut w = PollWatcher::new(tx, notify::Config::default().with_poll_interval(poll))?;
                watch_all(&mut w, &inputs)?;
                (Box::new(w), format!("polling every {} ms ({e})", poll.as_millis()))
            }
        };
        Ok(Changes { _watcher: watcher, events, inputs, kind })
    }

    /// Waits for the next change, then gathers what follows within `settle` (an editor's
    /// save or a bench's cell is several events) into one.
    pub fn next(&self, settle: Duration) -> Option<Change> {
        let mut change = None;
        loop {
            let event = match change {
                None => self.events.recv().ok()?,
                Some(_) => match self.events.recv_timeout(settle) {
                    Ok(e) => e,
                    Err(RecvTimeoutError::Timeout) => return change,
                    Err(RecvTimeoutError::Disconnected) => return change,
                },
            };
            let found = match event {
                Ok(e) if !writes(&e.kind) => None,
                Ok(e) => e.paths.iter().filter_map(|p| self.inputs.classify(p)).reduce(Change::merge),
                // The watcher lost events (queue overflow): only a full reload is safe.
                Err(_) => Some(Change::Everything),
            };
            if let Some(found) = found {
                change = Some(match change {
                    Some(c) => Change::merge(c, found),
                    None => found,
                });
            }
        }
    }
}

/// Whether an event can change an input: reading a file (as every build does) cannot.
fn writes(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

fn watch_all(w: &mut dyn Watcher, inputs: &Inputs) -> Result<()> {
    for dir in inputs.dirs.iter().filter(|d| d.is_dir()) {
        w.watch(dir, RecursiveMode::Recursive)?;
    }
    // site.toml: its folder, not recursively (it may hold the output, which is ignored).
    if let Some(folder) = inputs.settings.as_deref().and_then(Path::parent).filter(|d| d.is_dir()) {
        w.watch(folder, RecursiveMode::NonRecursive)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_classified_by_where_they_are() {
        let inputs = Inputs {
            runs: "/p/data/runs".into(),
            dirs: vec!["/p/data".into(), "/p/site-templates".into()],
            settings: Some("/p/site.toml".into()),
            ignore: Ignore {
                dirs: vec!["/p/data/public".into()],
                parent: "/p/data".into(),
                prefixes: vec![".tmp-build".into()],
            },
        };
        let runs = |ids: &[&str]| Some(Change::Runs(ids.iter().map(|s| s.to_string()).collect()));
        assert_eq!(inputs.classify(Path::new("/p/data/runs/r1/cells/decode-1024-c1.json")), runs(&["r1"]));
        assert_eq!(inputs.classify(Path::new("/p/data/runs/r2")), runs(&["r2"]));
        assert_eq!(inputs.classify(Path::new("/p/data/runs/.tmp-run-x/run.json")), None);
        assert_eq!(inputs.classify(Path::new("/p/data/runs")), Some(Change::Everything));
        assert_eq!(inputs.classify(Path::new("/p/data/compare.json")), Some(Change::Everything));
        assert_eq!(inputs.classify(Path::new("/p/site-templates/run.html")), Some(Change::Everything));
        assert_eq!(inputs.classify(Path::new("/p/site.toml")), Some(Change::Everything));
        assert_eq!(inputs.classify(Path::new("/p/README.md")), None);
        assert_eq!(inputs.classify(Path::new("/p/data/public/index.html")), None);
        assert_eq!(inputs.classify(Path::new("/p/data/.tmp-build-public-1/x")), None);
        assert_eq!(runs(&["a"]).unwrap().merge(runs(&["b"]).unwrap()), runs(&["a", "b"]).unwrap());
        assert_eq!(runs(&["a"]).unwrap().merge(Change::Everything), Change::Everything);
    }
}

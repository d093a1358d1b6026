//! `sitemap.xml` and `feed.xml` (Atom, runs newest first): written only when `site.toml`
//! has a `base_url`, since both need absolute addresses.

use std::sync::Mutex;

use anyhow::Result;
use minijinja::context;
use serde::Serialize;

use super::common::{put_file, ser, summary, PageContext, RenderStats};
use super::listing::newest_first;
use super::series_page::RegressionFound;
use crate::analysis::RunView;
use crate::write::Sink;

/// Entries in the feed: the newest runs.
pub const FEED_ENTRIES: usize = 50;

/// A sink that remembers the HTML pages written through it, for the sitemap.
pub struct PageRecorder<'a> {
    pub inner: &'a dyn Sink,
    /// Whether to record at all (only a site with a sitemap needs the list).
    pub on: bool,
    pub pages: Mutex<Vec<String>>,
}

impl PageRecorder<'_> {
    fn record(&self, rel_path: &str) {
        if self.on && rel_path.ends_with(".html") && rel_path != "404.html" {
            self.pages.lock().expect("no writer panics").push(rel_path.to_string());
        }
    }
}

impl Sink for PageRecorder<'_> {
    fn put(&self, rel_path: &str, bytes: &[u8]) -> Result<()> {
        self.record(rel_path);
        self.inner.put(rel_path, bytes)
    }

    fn reuse_unit(&self, key: &str, hash: u64, files: &dyn Fn() -> Vec<String>) -> Result<bool> {
        let reused = self.inner.reuse_unit(key, hash, files)?;
        if reused && self.on {
            files().iter().for_each(|f| self.record(f));
        }
        Ok(reused)
    }

    fn unit_written(&self, key: &str, hash: u64, files: Vec<String>) {
        self.inner.unit_written(key, hash, files)
    }

    fn previous_file(&self, rel_path: &str) -> Result<Option<Vec<u8>>> {
        self.inner.previous_file(rel_path)
    }

    fn keep_files(&self, files: &[String]) -> Result<bool> {
        let kept = self.inner.keep_files(files)?;
        if kept && self.on {
            files.iter().for_each(|f| self.record(f));
        }
        Ok(kept)
    }

    fn unit_intact(&self, key: &str, files: &[String]) -> Result<bool> {
        self.inner.unit_intact(key, files)
    }
}

#[derive(Debug, Serialize)]
struct Entry<'a> {
    /// The entry's path under the site (`runs/<id>/`, `series/<slug>/#<run>-<figure>`).
    id: String,
    /// Its page.
    link: String,
    title: std::borrow::Cow<'a, str>,
    updated: String,
    summary: String,
}

/// RFC 3339 in UTC from a manifest's start time; a bare date is its midnight, and a run
/// without one sorts as the epoch (a feed entry must have a time).
fn updated(run: &RunView) -> String {
    let started = run.manifest.started_at.as_deref().unwrap_or("");
    if let Ok(t) = started.parse::<jiff::Timestamp>() {
        return t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    }
    format!("{}T00:00:00Z", run.date.as_deref().unwrap_or("1970-01-01"))
}

/// A figure's name as a fragment: letters and digits, the rest `-`.
fn fragment(name: &str) -> String {
    name.to_ascii_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// The runs, newest first, then each regression a series' history shows (a change point),
/// dated by the run it happened at.
pub fn render(
    cx: &PageContext,
    base_url: &str,
    (runs, regressions): (&[RunView], &[RegressionFound]),
    pages: &[String],
    sink: &dyn Sink,
    stats: &mut RenderStats,
) -> Result<()> {
    let mut paths: Vec<String> = pages.iter().map(|p| p.strip_suffix("index.html").unwrap_or(p).to_string()).collect();
    paths.sort();
    let sitemap = cx.env.get_template("sitemap.xml")?.render(context! { base_url => base_url, pages => paths })?;
    put_file(sink, "sitemap.xml", &sitemap, stats)?;
    let all: Vec<usize> = (0..runs.len()).collect();
    let mut entries: Vec<Entry> = newest_first(cx, &all)
        .into_iter()
        .take(FEED_ENTRIES)
        .map(|i| {
            let s = summary(&runs[i], &cx.titles[i], cx.capacity_of(i));
            let peak = s.peak_at.as_ref().map(|at| format!("peak {} total tok/s at {at}", s.peak_text));
            Entry {
                id: format!("runs/{}/", runs[i].id),
                link: format!("runs/{}/", runs[i].id),
                title: cx.titles[i].as_str().into(),
                updated: updated(&runs[i]),
                summary: peak.unwrap_or_else(|| "no valid decode cell".into()),
            }
        })
        .collect();
    let run_of = |id: &str| runs.iter().find(|r| r.id == id);
    entries.extend(regressions.iter().take(FEED_ENTRIES).map(|r| Entry {
        id: format!("series/{}/#{}-{}", r.series, r.run, fragment(r.figure)),
        link: format!("series/{}/", r.series),
        title: format!("Regression: {} {:+.1}% at {} ({})", r.figure, r.pct, r.version, r.series_title).into(),
        updated: run_of(r.run).map_or_else(|| "1970-01-01T00:00:00Z".into(), updated),
        summary: format!(
            "A lasting change over the series' history (95% interval {:+.1}% to {:+.1}%), first at run {}.",
            r.lo_pct, r.hi_pct, r.run
        ),
    }));
    let newest = entries.iter().map(|e| e.updated.clone()).max().unwrap_or_else(|| "1970-01-01T00:00:00Z".into());
    let feed = cx
        .env
        .get_template("feed.xml")?
        .render(context! { base_url => base_url, updated => newest, entries => ser(&entries) })?;
    put_file(sink, "feed.xml", &feed, stats)
}

//! What a built site weighs, by section, and whether the host it is published on takes it
//! (`[publish] host` in site.toml): checked on the staged folder's files (as the build
//! wrote or kept them) before it replaces the published one, so a build over a host's limits fails here, with the numbers, instead of
//! at deploy time.

use std::collections::HashMap;

use anyhow::Result;

use crate::format::{Host, HostLimits};
use crate::units::numbers;

/// The parts of a site a reader would name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// `runs/ID/` less its cells' evidence: run pages and their downloads.
    Runs,
    /// `runs/ID/evidence.js` and `cell/`: every cell's evidence and the one page that draws
    /// it.
    Cells,
    /// Leaderboards, capacity boards, Pareto fronts, trend series, comparisons.
    Boards,
    /// Model, hardware, engine and tool pages.
    Groups,
    /// The front page, its listing data, feeds, sitemap and the other site-wide pages.
    Site,
    /// Styles, scripts, icons.
    Assets,
}

impl Section {
    pub const ALL: [Section; 6] =
        [Section::Runs, Section::Cells, Section::Boards, Section::Groups, Section::Site, Section::Assets];

    pub fn name(self) -> &'static str {
        match self {
            Section::Runs => "runs",
            Section::Cells => "cells",
            Section::Boards => "boards",
            Section::Groups => "models, hardware, engines",
            Section::Site => "site pages",
            Section::Assets => "assets",
        }
    }

    /// The section of a file at `rel` (a `/`-separated path inside the site).
    pub fn of(rel: &str) -> Section {
        let mut parts = rel.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("runs"), Some(_), Some("evidence.js")) | (Some("cell"), Some(_), None) => Section::Cells,
            (Some("runs"), Some(_), Some(_)) => Section::Runs,
            (Some("leaderboards" | "targets" | "pareto" | "series" | "compare" | "trends"), Some(_), _) => {
                Section::Boards
            }
            (Some("models" | "hardware" | "engines" | "tools"), Some(_), _) => Section::Groups,
            (Some("static" | "assets"), Some(_), _) => Section::Assets,
            _ => Section::Site,
        }
    }
}

/// Files and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Weight {
    pub files: usize,
    pub bytes: u64,
}

impl Weight {
    fn add(&mut self, bytes: u64) {
        self.files += 1;
        self.bytes += bytes;
    }
}

/// What a site weighs, with the extremes a host's per-file and per-folder limits read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Footprint {
    pub total: Weight,
    /// In `Section::ALL` order.
    pub sections: Vec<(Section, Weight)>,
    /// The largest file, and the largest HTML page (path, bytes).
    pub largest_file: Option<(String, u64)>,
    pub largest_page: Option<(String, u64)>,
    /// The folder holding the most files (path, files).
    pub fullest_folder: Option<(String, usize)>,
}

impl Footprint {
    /// The footprint of files given as (path inside the site, bytes).
    pub fn of(files: &[(String, u64)]) -> Footprint {
        let mut fp = Footprint::default();
        let mut by_section: HashMap<Section, Weight> = HashMap::new();
        let mut by_folder: HashMap<&str, usize> = HashMap::new();
        let larger = |best: &mut Option<(String, u64)>, rel: &str, bytes: u64| {
            if best.as_ref().is_none_or(|(p, b)| bytes > *b || (bytes == *b && rel < p.as_str())) {
                *best = Some((rel.to_string(), bytes));
            }
        };
        for (rel, bytes) in files {
            fp.total.add(*bytes);
            by_section.entry(Section::of(rel)).or_default().add(*bytes);
            *by_folder.entry(rel.rsplit_once('/').map_or("", |(d, _)| d)).or_default() += 1;
            larger(&mut fp.largest_file, rel, *bytes);
            if rel.ends_with(".html") {
                larger(&mut fp.largest_page, rel, *bytes);
            }
        }
        fp.sections = Section::ALL.iter().map(|s| (*s, by_section.get(s).copied().unwrap_or_default())).collect();
        fp.fullest_folder = by_folder
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
            .map(|(d, n)| (if d.is_empty() { "/".to_string() } else { format!("{d}/") }, n));
        fp
    }

    /// One line a section: `runs 7 files, 517 KiB (12%)`.
    pub fn lines(&self) -> Vec<String> {
        let share = |b: u64| if self.total.bytes == 0 { 0.0 } else { b as f64 / self.total.bytes as f64 * 100.0 };
        self.sections
            .iter()
            .filter(|(_, w)| w.files > 0)
            .map(|(s, w)| {
                format!("{:<26}{:>8} files {:>10} ({:.0}%)", s.name(), w.files, bytes_text(w.bytes), share(w.bytes))
            })
            .collect()
    }
}

impl Footprint {
    /// The largest file and page, and the fullest folder, in one line: what a host's
    /// per-file and per-folder limits read.
    pub fn extremes(&self) -> String {
        let file =
            |f: &Option<(String, u64)>| f.as_ref().map_or("none".into(), |(p, b)| format!("{p} ({})", bytes_text(*b)));
        let folder = self
            .fullest_folder
            .as_ref()
            .map_or("none".into(), |(p, n)| format!("{p} ({n} {})", if *n == 1 { "file" } else { "files" }));
        format!(
            "Largest file: {}; largest page: {}; fullest folder: {folder}",
            file(&self.largest_file),
            file(&self.largest_page)
        )
    }
}

/// The most a page should weigh: past it, a reader on a slow link waits seconds for one
/// page (the budget every page of ours is built to).
pub const PAGE_BUDGET_BYTES: u64 = 200 * 1024;
/// The most any file should weigh: a fifth of the strictest host's per-file limit (25 MiB).
pub const FILE_BUDGET_BYTES: u64 = 5 << 20;

impl Footprint {
    /// The largest page over `PAGE_BUDGET_BYTES` and the largest file over
    /// `FILE_BUDGET_BYTES`, in words: what a build warns of (any host serves them).
    pub fn over_budget(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((p, b)) = self.largest_page.as_ref().filter(|(_, b)| *b > PAGE_BUDGET_BYTES) {
            out.push(format!(
                "{p} is {}, over the {} a page should weigh: readers on slow links wait for it",
                bytes_text(*b),
                bytes_text(PAGE_BUDGET_BYTES)
            ));
        }
        if let Some((p, b)) = self.largest_file.as_ref().filter(|(_, b)| *b > FILE_BUDGET_BYTES) {
            out.push(format!(
                "{p} is {}, over the {} a file should weigh (hosts refuse files from 25 MiB)",
                bytes_text(*b),
                bytes_text(FILE_BUDGET_BYTES)
            ));
        }
        out
    }
}

/// Bytes as a reader says them: `517 KiB`, `1.9 MiB`, `1.02 GB` (hosts state their limits
/// in decimal gigabytes).
pub fn bytes_text(b: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= KIB * KIB {
        format!("{} MiB", numbers::decimal1(b / KIB / KIB))
    } else {
        format!("{:.0} KiB", (b / KIB).ceil())
    }
}

/// Each limit of `host` the site goes over, in words with both numbers; empty: it fits.
pub fn over_limits(fp: &Footprint, host: Host) -> Vec<String> {
    let HostLimits { bytes, files, file_bytes, files_per_folder } = host.limits();
    let mut over = Vec::new();
    if let Some(limit) = bytes.filter(|l| fp.total.bytes > *l) {
        over.push(format!("{} in all, over its {}", bytes_text(fp.total.bytes), bytes_text(limit)));
    }
    if let Some(limit) = files.filter(|l| fp.total.files > *l) {
        over.push(format!("{} files, over its {}", fp.total.files, limit));
    }
    if let (Some(limit), Some((path, b))) = (file_bytes, &fp.largest_file) {
        if *b > limit {
            over.push(format!("{path} is {}, over its {} a file", bytes_text(*b), bytes_text(limit)));
        }
    }
    if let (Some(limit), Some((path, n))) = (files_per_folder, &fp.fullest_folder) {
        if *n > limit {
            over.push(format!("{path} holds {n} files, over its {limit} in one folder"));
        }
    }
    over
}

/// The check before a build is published: an error naming each limit gone over, the
/// sections' weights, and what to do.
pub fn check(fp: &Footprint, host: Host) -> Result<()> {
    let over = over_limits(fp, host);
    if over.is_empty() {
        return Ok(());
    }
    let heaviest = fp.sections.iter().max_by_key(|(_, w)| w.bytes).map(|(s, w)| (s.name(), *w));
    let (name, w) = heaviest.unwrap_or(("cells", Weight::default()));
    anyhow::bail!(
        "the site does not fit {} ([publish] host in site.toml): {}. By section: {}. The heaviest part is {name} ({} files, {}). To fit: publish the cells' evidence of recent runs only (`evidence_days = 365` under [publish]: about a third of a run's bytes), publish a site per model or hardware (a data folder each, each its own site), move runs no one compares any more out of the data folder, or publish to a host with higher limits (cloudflare-pages-paid, gitlab-pages); `host = \"none\"` checks nothing. The published site was left as it was.",
        host.name(),
        over.join("; "),
        fp.sections
            .iter()
            .filter(|(_, w)| w.files > 0)
            .map(|(s, w)| format!("{} {} files, {}", s.name(), w.files, bytes_text(w.bytes)))
            .collect::<Vec<_>>()
            .join("; "),
        w.files,
        bytes_text(w.bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_files_over_budget_are_named() {
        let fp = Footprint::of(&[
            ("runs/a/index.html".to_string(), 300 * 1024),
            ("index.js".to_string(), 6 << 20),
            ("runs/b/index.html".to_string(), 10),
        ]);
        let over = fp.over_budget();
        assert_eq!(over.len(), 2, "{over:?}");
        assert!(over[0].starts_with("runs/a/index.html is 300 KiB, over the 200 KiB a page"), "{}", over[0]);
        assert!(over[1].starts_with("index.js is 6.0 MiB, over the 5.0 MiB a file"), "{}", over[1]);
        assert!(Footprint::of(&[("runs/a/index.html".to_string(), 1000)]).over_budget().is_empty());
    }

    #[test]
    fn files_fall_in_the_sections_a_reader_names() {
        assert_eq!(Section::of("cell/index.html"), Section::Cells);
        assert_eq!(Section::of("runs/a/evidence.js"), Section::Cells);
        assert_eq!(Section::of("runs/a/index.html"), Section::Runs);
        assert_eq!(Section::of("runs/index.html"), Section::Site);
        assert_eq!(Section::of("leaderboards/1k-x4/index.html"), Section::Boards);
        assert_eq!(Section::of("models/m/index.html"), Section::Groups);
        assert_eq!(Section::of("static/style.css"), Section::Assets);
        assert_eq!(Section::of("index.js"), Section::Site);
    }

    fn site(n_files: usize, each: u64) -> Footprint {
        let files: Vec<(String, u64)> = (0..n_files).map(|i| (format!("runs/r{i}/index.html"), each)).collect();
        Footprint::of(&files)
    }

    #[test]
    fn a_host_refuses_only_what_goes_over_its_own_limits() {
        // 30,000 files of 40 KB: 1.2 GB. Over GitHub's size, Cloudflare's free file count;
        // within GitLab's 200,000 files but over its size; the paid plan takes it.
        let fp = site(30_000, 40_000);
        assert_eq!(over_limits(&fp, Host::GithubPages), ["1.20 GB in all, over its 1.00 GB"]);
        assert_eq!(over_limits(&fp, Host::CloudflarePages), ["30000 files, over its 20000"]);
        assert!(over_limits(&fp, Host::CloudflarePagesPaid).is_empty());
        assert!(over_limits(&fp, Host::None).is_empty());
        // Netlify counts files in one folder: 30,000 run folders hold one file each.
        assert!(over_limits(&fp, Host::Netlify).is_empty());
        let flat: Vec<(String, u64)> = (0..60_000).map(|i| (format!("runs/{i}.json"), 10)).collect();
        assert_eq!(
            over_limits(&Footprint::of(&flat), Host::Netlify),
            ["runs/ holds 60000 files, over its 54000 in one folder"]
        );
        // One file over Cloudflare's 25 MiB.
        let big = Footprint::of(&[("index.js".to_string(), 30 << 20)]);
        assert_eq!(over_limits(&big, Host::CloudflarePages), ["index.js is 30.0 MiB, over its 25.0 MiB a file"]);
        assert_eq!(
            fp.extremes(),
            "Largest file: runs/r0/index.html (40 KiB); largest page: runs/r0/index.html (40 KiB); fullest folder: runs/r0/ (1 file)"
        );
        let e = check(&fp, Host::GithubPages).unwrap_err().to_string();
        assert!(e.starts_with("the site does not fit github-pages"), "{e}");
        assert!(e.contains("The heaviest part is runs (30000 files, 1.20 GB)"), "{e}");
    }
}

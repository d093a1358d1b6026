//! `site.toml`: the site's own settings (title, base URL, comparison threshold, prices), all
//! optional. Unknown keys are refused with the file, line and column, as for data files.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Result};

use crate::units::numbers::brief;

const MAX_SETTINGS_BYTES: u64 = 1 << 20;
use serde::{Deserialize, Serialize};

/// The settings a site is built with; `Default` is a site without `site.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SiteSettings {
    pub title: String,
    pub description: String,
    /// `https://example.org/speed/`: absolute links, `sitemap.xml` and `feed.xml`. Always
    /// ends with `/` once loaded; no user info, query or fragment (they would be published in
    /// every link).
    #[serde(deserialize_with = "published_url")]
    pub base_url: Option<String>,
    /// Changes smaller than this (percent) are neither regressions nor improvements.
    #[serde(deserialize_with = "threshold_pct")]
    pub change_threshold_pct: f64,
    /// The run-to-run noise (percent, one standard deviation of a run's level) a comparison
    /// assumes before the site holds runs of one configuration measured more than once;
    /// evidence of such runs outweighs it as it grows (`docs/src/reference/statistics.md`).
    #[serde(deserialize_with = "threshold_pct")]
    pub change_noise_pct: f64,
    /// Dollars per device-hour by device name (as runs name it: `"H200 SXM" = 3.50`).
    #[serde(deserialize_with = "device_prices")]
    pub prices: BTreeMap<String, f64>,
    /// Named service-level objectives (`[slo.chat]`), in name order; a site without any
    /// gets `default_slos`. The first in `slo_order` is the one the heatmap outlines.
    #[serde(default = "default_slos")]
    pub slo: BTreeMap<String, Slo>,
    /// The order SLOs are shown in (default: name order); every name must be an `[slo.*]`,
    /// named once.
    #[serde(default, deserialize_with = "distinct_names")]
    pub slo_order: Vec<String>,
    /// Tok/s per user at which every run's throughput per device is read off its
    /// throughput-against-interactivity curve (the one-number summary).
    #[serde(default = "default_interactivity", deserialize_with = "interactivity_levels")]
    pub interactivity: Vec<f64>,
    /// Where the site is published (`[publish]`): a build over that host's limits fails.
    #[serde(default)]
    pub publish: Publish,
}

/// `[publish]` in site.toml.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Publish {
    #[serde(default)]
    pub host: Host,
    /// Runs that started more than this many days before the site's newest run publish no
    /// evidence file (every figure, page and download stays; the records stay in the data
    /// folder): the evidence is about a third of a run's bytes. `None`: every run's.
    #[serde(default)]
    pub evidence_days: Option<u32>,
}

/// A static host whose limits a build is checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Host {
    GithubPages,
    GitlabPages,
    CloudflarePages,
    CloudflarePagesPaid,
    Netlify,
    /// No host named: nothing is checked.
    #[default]
    None,
}

/// What a host takes; `None`: no such limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    pub bytes: Option<u64>,
    pub files: Option<usize>,
    pub file_bytes: Option<u64>,
    pub files_per_folder: Option<usize>,
}

impl Host {
    /// The name site.toml spells it with.
    pub fn name(self) -> &'static str {
        match self {
            Host::GithubPages => "github-pages",
            Host::GitlabPages => "gitlab-pages",
            Host::CloudflarePages => "cloudflare-pages",
            Host::CloudflarePagesPaid => "cloudflare-pages-paid",
            Host::Netlify => "netlify",
            Host::None => "none",
        }
    }

    /// The hosts' published limits (late 2026): GitHub Pages 1 GB a site and git's 100 MB a
    /// file; GitLab Pages 1 GB and 200,000 files; Cloudflare Pages 20,000 files (100,000 on
    /// a paid plan) and 25 MiB a file; Netlify 54,000 files in one folder.
    pub fn limits(self) -> HostLimits {
        const GB: u64 = 1_000_000_000;
        const MIB: u64 = 1 << 20;
        let none = HostLimits { bytes: None, files: None, file_bytes: None, files_per_folder: None };
        match self {
            Host::GithubPages => HostLimits { bytes: Some(GB), file_bytes: Some(100 * 1_000_000), ..none },
            Host::GitlabPages => HostLimits { bytes: Some(GB), files: Some(200_000), ..none },
            Host::CloudflarePages => HostLimits { files: Some(20_000), file_bytes: Some(25 * MIB), ..none },
            Host::CloudflarePagesPaid => HostLimits { files: Some(100_000), file_bytes: Some(25 * MIB), ..none },
            Host::Netlify => HostLimits { files_per_folder: Some(54_000), ..none },
            Host::None => none,
        }
    }
}

/// A service-level objective: what a cell must meet for its concurrency to count as
/// capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// One line for the pages (`Chat: reading speed for nine users in ten`).
    #[serde(default)]
    pub description: String,
    /// The least decode speed each user sees, tok/s per user, at `percentile`: time
    /// between tokens at that percentile at most 1000 / this many milliseconds.
    #[serde(deserialize_with = "positive_rate")]
    pub min_tps_per_user: f64,
    /// Which requests must meet the bounds: 50 (the median request), 90 or 99 (the slowest
    /// in ten, in a hundred). A cell with too few requests for it (10 for p90, 100 for
    /// p99) does not meet the SLO.
    #[serde(default = "median_percentile", deserialize_with = "slo_percentile")]
    pub percentile: u32,
    /// Time to first token at the same percentile, as measured in decode cells (after the
    /// prompt cache is warm, so mostly queueing and scheduling, not prefill).
    #[serde(default, deserialize_with = "optional_millis")]
    pub max_ttft_ms: Option<f64>,
    /// A fresh prompt's time to first token at the context (the prefill cell's median).
    #[serde(default, deserialize_with = "optional_millis")]
    pub max_prefill_ttft_ms: Option<f64>,
}

/// The SLOs a site gets when `site.toml` names none: a chat service (20 tok/s per user,
/// faster than people read, first token within 2 s) and batch work (5 tok/s per user, no
/// latency bound). Both at the median request, which every source reports; a site with
/// per-request records can ask for p90.
pub fn default_slos() -> BTreeMap<String, Slo> {
    BTreeMap::from([
        (
            "batch".to_string(),
            Slo {
                description: "Batch: at least 5 tok/s per request, no latency bound".into(),
                min_tps_per_user: 5.0,
                percentile: 50,
                max_ttft_ms: None,
                max_prefill_ttft_ms: None,
            },
        ),
        (
            "chat".to_string(),
            Slo {
                description: "Chat: at least 20 tok/s per user and the first token within 2 s (median request)".into(),
                min_tps_per_user: 20.0,
                percentile: 50,
                max_ttft_ms: Some(2000.0),
                max_prefill_ttft_ms: None,
            },
        ),
    ])
}

pub fn default_interactivity() -> Vec<f64> {
    vec![10.0, 20.0, 50.0]
}

/// A base URL every page may publish: absolute http(s), no user info (published in sitemap,
/// feed and canonical links), no query or fragment (`/s/#frag` makes every link
/// `#frag/runs/...`), nothing that needs quoting. The error never repeats the value.
fn published_url<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    use serde::de::Error;
    let url = String::deserialize(d)?;
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let Some(rest) = rest else {
        return Err(D::Error::custom("expected an absolute http(s) URL such as https://example.org/speed/"));
    };
    let authority = rest.split('/').next().unwrap_or("");
    if authority.contains('@') {
        return Err(D::Error::custom(
            "a user name or password in base_url would be published in every link: remove it",
        ));
    }
    if url.contains(['?', '#']) {
        return Err(D::Error::custom("base_url cannot have a query or fragment (? or #): every link is built on it"));
    }
    if authority.is_empty()
        || url.chars().any(|c| c.is_control() || c.is_whitespace() || matches!(c, '"' | '<' | '>' | '\\'))
    {
        return Err(D::Error::custom("expected an absolute http(s) URL such as https://example.org/speed/"));
    }
    Ok(Some(if url.ends_with('/') { url } else { format!("{url}/") }))
}

fn median_percentile() -> u32 {
    50
}

/// The percentiles the figures carry.
pub const SLO_PERCENTILES: [u32; 3] = [50, 90, 99];

/// The least and most tok/s per user a setting may name: below a tenth of a token a second
/// no page can show the rate (it reads "0.0"), and its time between tokens runs to
/// thousands of seconds.
pub const TPS_PER_USER_RANGE: (f64, f64) = (0.1, 100_000.0);

fn positive_rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    tps_per_user(v).map_err(serde::de::Error::custom)
}

fn tps_per_user(v: f64) -> Result<f64, String> {
    let (lo, hi) = TPS_PER_USER_RANGE;
    if !(v.is_finite() && (lo..=hi).contains(&v)) {
        return Err(format!("expected tok/s per user from {lo} to {}, found {}", shown(hi), shown(v)));
    }
    Ok(v)
}

fn threshold_pct<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    check_threshold_pct(v).map_err(serde::de::Error::custom)
}

/// A change threshold in percent: from 0 to 100 (the same bound for `site.toml`,
/// `compare.json` and `site diff --threshold`).
pub fn check_threshold_pct(v: f64) -> Result<f64, String> {
    if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
        return Err(format!("expected a percentage from 0 to 100, found {}", shown(v)));
    }
    Ok(v)
}

fn device_prices<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    /// Checked where it stands, so an error names the value's line and column.
    struct Price(f64);
    impl<'de> Deserialize<'de> for Price {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Price, D::Error> {
            let price = f64::deserialize(d)?;
            if !(price.is_finite() && price > 0.0 && price < 1e6) {
                return Err(serde::de::Error::custom(format!(
                    "expected dollars per device-hour above 0 and below 1,000,000, found {}",
                    shown(price)
                )));
            }
            Ok(Price(price))
        }
    }
    Ok(BTreeMap::<String, Price>::deserialize(d)?.into_iter().map(|(k, v)| (k, v.0)).collect())
}

fn distinct_names<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(serde::de::Error::custom(format!("{n:?} is named twice: name each SLO once")));
        }
    }
    Ok(names)
}

fn slo_percentile<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let v = u32::deserialize(d)?;
    if !SLO_PERCENTILES.contains(&v) {
        return Err(serde::de::Error::custom(format!("expected a percentile of 50, 90 or 99, found {v}")));
    }
    Ok(v)
}

fn optional_millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = f64::deserialize(d)?;
    // From a millisecond to a day.
    if !(v.is_finite() && (1.0..=86_400_000.0).contains(&v)) {
        return Err(serde::de::Error::custom(format!(
            "expected milliseconds from 1 to 86,400,000, found {}",
            shown(v)
        )));
    }
    Ok(Some(v))
}

fn interactivity_levels<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let v = Vec::<f64>::deserialize(d)?;
    if v.len() > 12 {
        return Err(serde::de::Error::custom(format!("expected at most 12 levels, found {}", v.len())));
    }
    for (i, x) in v.iter().enumerate() {
        tps_per_user(*x).map_err(serde::de::Error::custom)?;
        if i > 0 && *x <= v[i - 1] {
            return Err(serde::de::Error::custom(format!(
                "expected levels in rising order, found {} after {}",
                shown(*x),
                shown(v[i - 1])
            )));
        }
    }
    Ok(v)
}

pub const DEFAULT_CHANGE_THRESHOLD_PCT: f64 = 5.0;
/// A restarted llama.cpp server measured 6% below the last on one figure, and two quiet
/// restarts 20 minutes apart differed by more on another (`docs/src/reference/statistics.md`): 5% is the
/// run-to-run noise assumed until the site measures its own.
pub const DEFAULT_CHANGE_NOISE_PCT: f64 = 5.0;

impl Default for SiteSettings {
    fn default() -> Self {
        SiteSettings {
            title: "Speed Matrix".into(),
            description: "Prefill throughput and sustained decode of LLM inference servers, measured across context lengths and simultaneous requests.".into(),
            base_url: None,
            change_threshold_pct: DEFAULT_CHANGE_THRESHOLD_PCT,
            change_noise_pct: DEFAULT_CHANGE_NOISE_PCT,
            prices: BTreeMap::new(),
            slo: default_slos(),
            slo_order: Vec::new(),
            interactivity: default_interactivity(),
            publish: Publish::default(),
        }
    }
}

impl SiteSettings {
    /// Reads `path`; a missing file is the defaults.
    pub fn load(path: &Path) -> Result<SiteSettings> {
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(SiteSettings::default());
        }
        let text = crate::fsutil::read_data_file(path, MAX_SETTINGS_BYTES)?;
        SiteSettings::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<SiteSettings> {
        let s: SiteSettings = toml::from_str(text).map_err(|e| anyhow::anyhow!(located(text, &e)))?;
        if s.slo.len() > 8 {
            bail!("slo: expected at most 8 SLOs, found {}", s.slo.len());
        }
        for name in s.slo.keys() {
            if name.is_empty()
                || name.len() > 32
                || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                bail!("slo.{name:?}: expected a name of letters, digits, - and _ (at most 32), as it names pages");
            }
        }
        if let Some(name) = s.slo_order.iter().find(|n| !s.slo.contains_key(*n)) {
            let place = order_entry_place(text, name).map(|p| format!("{p}: ")).unwrap_or_default();
            bail!("{place}slo_order: {name:?} is not an [slo.{name}] table");
        }
        Ok(s)
    }

    /// The SLOs in the order the pages show them: `slo_order` first, then the rest by name.
    pub fn slos(&self) -> Vec<(&str, &Slo)> {
        let mut out: Vec<(&str, &Slo)> =
            self.slo_order.iter().filter_map(|n| self.slo.get_key_value(n)).map(|(k, v)| (k.as_str(), v)).collect();
        for (k, v) in &self.slo {
            if !self.slo_order.contains(k) {
                out.push((k.as_str(), v));
            }
        }
        out
    }

    /// Whether any device has a price (pages then show cost columns).
    pub fn price_known(&self) -> bool {
        !self.prices.is_empty()
    }

    /// The price of one device-hour of `device`, when configured.
    pub fn price(&self, device: &str) -> Option<f64> {
        self.prices.get(device).copied()
    }
}

/// `line L, column C` of `name` in `slo_order` (read again only to place an error).
fn order_entry_place(text: &str, name: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Order {
        slo_order: Vec<toml::Spanned<String>>,
    }
    let order: Order = toml::from_str(text).ok()?;
    let entry = order.slo_order.iter().find(|e| e.get_ref() == name)?;
    Some(line_column(text, entry.span().start))
}

fn line_column(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}")
}

/// `line L, column C: message` from a TOML error.
fn located(text: &str, e: &toml::de::Error) -> String {
    let message = e.message();
    match e.span() {
        Some(span) => format!("{}: {message}", line_column(text, span.start)),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_optional_and_every_key_read() {
        assert_eq!(SiteSettings::parse("").unwrap(), SiteSettings::default());
        let s = SiteSettings::parse(
            "title = \"GPU lab\"\nbase_url = \"https://example.org/speed\"\nchange_threshold_pct = 3\n[prices]\n\"H200 SXM\" = 3.5\n",
        )
        .unwrap();
        assert_eq!(s.title, "GPU lab");
        assert_eq!(s.base_url.as_deref(), Some("https://example.org/speed/"));
        assert_eq!(s.change_threshold_pct, 3.0);
        assert_eq!(s.price("H200 SXM"), Some(3.5));
        assert_eq!(s.price("H100"), None);
    }

    #[test]
    fn a_value_that_is_no_number_is_named() {
        for (text, found) in [("change_noise_pct = nan\n", "found NaN"), ("change_threshold_pct = inf\n", "found inf")]
        {
            let e = SiteSettings::parse(text).unwrap_err().to_string();
            assert!(e.contains(found), "{text}: {e}");
        }
    }

    #[test]
    fn unknown_keys_and_bad_values_say_where() {
        let e = SiteSettings::parse("title = \"x\"\n\ntheme = \"dark\"\n").unwrap_err().to_string();
        assert!(e.starts_with("line 3, column 1: unknown field `theme`"), "{e}");
        let e = SiteSettings::parse("[prices]\nH200 = -1\n").unwrap_err().to_string();
        assert!(
            e.starts_with("line 2, column 8: expected dollars per device-hour above 0 and below 1,000,000, found -1"),
            "{e}"
        );
        // Every bad value says where it stands, and a number is never hundreds of digits long.
        for (text, want) in [
            ("change_threshold_pct = -5\n", "line 1, column 24: expected a percentage from 0 to 100, found -5"),
            (
                "title = \"t\"\nchange_threshold_pct = 1e308\n",
                "line 2, column 24: expected a percentage from 0 to 100, found 1e308",
            ),
            (
                "[prices]\nH200 = 1e300\n",
                "line 2, column 8: expected dollars per device-hour above 0 and below 1,000,000, found 1e300",
            ),
        ] {
            let e = SiteSettings::parse(text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(e.len() < 160, "{e}");
        }
        let e = SiteSettings::parse("base_url = \"javascript:alert(1)\"").unwrap_err().to_string();
        assert!(e.starts_with("line 1, column 12: expected an absolute http(s) URL"), "{e}");
        let e = SiteSettings::parse("title = \"t\"\nbase_url = \"https://ops:hunter2@example.org/s/\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("line 2, column 12: a user name or password in base_url") && !e.contains("hunter2"),
            "{e}"
        );
        let e = SiteSettings::parse("base_url = \"https://example.org/s/#frag\"").unwrap_err().to_string();
        assert!(e.starts_with("line 1, column 12: base_url cannot have a query or fragment"), "{e}");
        let e = SiteSettings::parse("base_url = \"https://example.org/s/?token=abc\"").unwrap_err().to_string();
        assert!(e.contains("query or fragment") && !e.contains("token=abc"), "{e}");
    }

    #[test]
    fn slos_default_to_chat_and_batch_and_bad_ones_say_where() {
        let s = SiteSettings::parse("").unwrap();
        assert_eq!(s.slos().iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["batch", "chat"]);
        assert_eq!(s.interactivity, [10.0, 20.0, 50.0]);
        let s = SiteSettings::parse(
            "slo_order = [\"fast\"]\ninteractivity = [5, 30]\n[slo.fast]\nmin_tps_per_user = 50\npercentile = 90\nmax_ttft_ms = 500\n[slo.a]\nmin_tps_per_user = 1\n",
        )
        .unwrap();
        assert_eq!(
            s.slos().iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            ["fast", "a"],
            "a site's own SLOs replace the defaults"
        );
        assert_eq!((s.slo["fast"].percentile, s.slo["fast"].max_ttft_ms, s.slo["a"].percentile), (90, Some(500.0), 50));
        let e = SiteSettings::parse("[slo.chat]\nmin_tps_per_user = 20\npercentile = 95\n").unwrap_err().to_string();
        assert!(e.starts_with("line 3, column 14: expected a percentile of 50, 90 or 99, found 95"), "{e}");
        let e = SiteSettings::parse("[slo.chat]\nmin_tps_per_user = -2\n").unwrap_err().to_string();
        assert!(e.starts_with("line 2, column 20: expected tok/s per user from 0.1 to 100000, found -2"), "{e}");
        // Degenerate bounds no page can show.
        for (text, want) in [
            (
                "[slo.chat]\nmin_tps_per_user = 1e-300\n",
                "line 2, column 20: expected tok/s per user from 0.1 to 100000, found 1e-300",
            ),
            (
                "[slo.chat]\nmin_tps_per_user = 5\nmax_ttft_ms = 1e-300\n",
                "line 3, column 15: expected milliseconds from 1 to 86,400,000, found 1e-300",
            ),
            ("interactivity = [0.01]\n", "line 1, column 17: expected tok/s per user from 0.1 to 100000, found 0.01"),
        ] {
            let e = SiteSettings::parse(text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
        let e = SiteSettings::parse("interactivity = [20, 10]\n").unwrap_err().to_string();
        assert!(e.starts_with("line 1, column 17: expected levels in rising order, found 10 after 20"), "{e}");
        let e = SiteSettings::parse("[slo.chat]\nmax_ttft_ms = 100\n").unwrap_err().to_string();
        assert!(e.contains("missing field `min_tps_per_user`"), "{e}");
        let e = SiteSettings::parse("title = \"t\"\nslo_order = [\"chat\", \"x\"]\n").unwrap_err().to_string();
        assert_eq!(e, "line 2, column 22: slo_order: \"x\" is not an [slo.x] table");
        let e = SiteSettings::parse("slo_order = [\"chat\", \"batch\", \"chat\"]\n").unwrap_err().to_string();
        assert!(e.starts_with("line 1, column 13: \"chat\" is named twice: name each SLO once"), "{e}");
    }
}

/// A number in a message: `brief`, and `NaN` or `inf` where it is not finite (a message must
/// name what it found).
fn shown(v: f64) -> String {
    if v.is_finite() {
        brief(v)
    } else {
        v.to_string()
    }
}

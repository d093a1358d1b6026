//! `site.toml`: the site's own settings (title, base URL, comparison threshold, prices), all
//! optional. Unknown keys are refused with the file, line and column, as for data files.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Result};

const MAX_SETTINGS_BYTES: u64 = 1 << 20;
use serde::{Deserialize, Serialize};

/// The settings a site is built with; `Default` is a site without `site.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SiteSettings {
    pub title: String,
    pub description: String,
    /// `https://example.org/speed/`: absolute links, `sitemap.xml` and `feed.xml`. Always
    /// ends with `/` once loaded.
    pub base_url: Option<String>,
    /// Changes smaller than this (percent) are neither regressions nor improvements.
    pub change_threshold_pct: f64,
    /// Dollars per device-hour by device name (as runs name it: `"H200 SXM" = 3.50`).
    pub prices: BTreeMap<String, f64>,
}

pub const DEFAULT_CHANGE_THRESHOLD_PCT: f64 = 5.0;

impl Default for SiteSettings {
    fn default() -> Self {
        SiteSettings {
            title: "Speed Matrix".into(),
            description: "Prefill throughput and sustained decode of LLM inference servers, measured across context lengths and simultaneous requests.".into(),
            base_url: None,
            change_threshold_pct: DEFAULT_CHANGE_THRESHOLD_PCT,
            prices: BTreeMap::new(),
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
        let mut s: SiteSettings = toml::from_str(text).map_err(|e| anyhow::anyhow!(located(text, &e)))?;
        if !(s.change_threshold_pct.is_finite() && (0.0..=100.0).contains(&s.change_threshold_pct)) {
            bail!("change_threshold_pct: expected a percentage from 0 to 100, found {}", s.change_threshold_pct);
        }
        for (device, price) in &s.prices {
            if !(price.is_finite() && *price > 0.0 && *price < 1e6) {
                bail!("prices.\"{device}\": expected dollars per device-hour above 0, found {price}");
            }
        }
        if let Some(url) = &mut s.base_url {
            if !(url.starts_with("https://") || url.starts_with("http://")) || url.contains(['"', '<', '>', ' ']) {
                bail!("base_url: expected an absolute http(s) URL such as https://example.org/speed/, found {url:?}");
            }
            if !url.ends_with('/') {
                url.push('/');
            }
        }
        Ok(s)
    }

    /// The price of one device-hour of `device`, when configured.
    pub fn price(&self, device: &str) -> Option<f64> {
        self.prices.get(device).copied()
    }
}

/// `line L, column C: message` from a TOML error.
fn located(text: &str, e: &toml::de::Error) -> String {
    let message = e.message();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: {message}")
        }
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
    fn unknown_keys_and_bad_values_say_where() {
        let e = SiteSettings::parse("title = \"x\"\n\ntheme = \"dark\"\n").unwrap_err().to_string();
        assert!(e.starts_with("line 3, column 1: unknown field `theme`"), "{e}");
        let e = SiteSettings::parse("[prices]\nH200 = -1\n").unwrap_err().to_string();
        assert_eq!(e, "prices.\"H200\": expected dollars per device-hour above 0, found -1");
        let e = SiteSettings::parse("base_url = \"javascript:alert(1)\"").unwrap_err().to_string();
        assert!(e.starts_with("base_url: expected an absolute http(s) URL"), "{e}");
    }
}

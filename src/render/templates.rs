//! The minijinja environment: templates embedded in the binary as defaults, each one
//! replaceable by a file of the same name in a templates folder (`site-templates/`).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use minijinja::{AutoEscape, Environment, Value};

use super::common::state_label;
use super::heatmap;
use crate::analysis::compare::CellState;
use crate::format::SiteSettings;
use crate::units::{numbers, xml_escape};

/// Default templates, compiled in so a bare binary builds a site.
pub const DEFAULT_TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../../site-templates/base.html")),
    ("macros.html", include_str!("../../site-templates/macros.html")),
    ("index.html", include_str!("../../site-templates/index.html")),
    ("run.html", include_str!("../../site-templates/run.html")),
    ("entity.html", include_str!("../../site-templates/entity.html")),
    ("compare.html", include_str!("../../site-templates/compare.html")),
    ("glossary.html", include_str!("../../site-templates/glossary.html")),
    ("page.html", include_str!("../../site-templates/page.html")),
    ("404.html", include_str!("../../site-templates/404.html")),
    ("list.html", include_str!("../../site-templates/list.html")),
    ("cell.html", include_str!("../../site-templates/cell.html")),
    ("leaderboards.html", include_str!("../../site-templates/leaderboards.html")),
    ("leaderboard.html", include_str!("../../site-templates/leaderboard.html")),
    ("pareto.html", include_str!("../../site-templates/pareto.html")),
    ("series.html", include_str!("../../site-templates/series.html")),
    ("tools.html", include_str!("../../site-templates/tools.html")),
    ("targets.html", include_str!("../../site-templates/targets.html")),
    ("target.html", include_str!("../../site-templates/target.html")),
    ("sitemap.xml", include_str!("../../site-templates/sitemap.xml")),
    ("feed.xml", include_str!("../../site-templates/feed.xml")),
];

/// The auto-escape of `.xml` templates (sitemap, feed): XML's five entities only.
const XML: &str = "xml";

/// Builds the environment; `overrides` is a folder whose files replace defaults by name.
/// Every template sees the site's title and description.
pub fn environment(overrides: Option<&Path>, settings: &SiteSettings) -> Result<Environment<'static>> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".html") {
            AutoEscape::Html
        } else if name.ends_with(".xml") {
            AutoEscape::Custom(XML.into())
        } else {
            AutoEscape::None
        }
    });
    // HTML strings get the five entities that matter in text and quoted attributes (our
    // templates quote every attribute), not minijinja's `&#x2f;` for each slash: six bytes a
    // "tok/s" on pages whose size is budgeted. Characters XML forbids become U+FFFD here too.
    env.set_formatter(|out, state, value| {
        let escaped = match state.auto_escape() {
            AutoEscape::Custom(name) if name == XML => true,
            AutoEscape::Html => value.as_str().is_some(),
            _ => false,
        };
        if escaped && !value.is_safe() {
            return out.write_str(&xml_escape(&value.to_string())).map_err(minijinja::Error::from);
        }
        minijinja::escape_formatter(out, state, value)
    });
    // Lenient: optional fields of the data format are left out when absent, and a
    // template tests them for truth.
    for (name, source) in DEFAULT_TEMPLATES {
        let source = match overrides.map(|d| d.join(name)).filter(|p| p.is_file()) {
            Some(path) => fs::read_to_string(&path).with_context(|| format!("reading template {}", path.display()))?,
            None => source.to_string(),
        };
        env.add_template_owned(name.to_string(), source).with_context(|| format!("template {name} does not parse"))?;
    }
    register_filters(&mut env);
    env.add_global("site_title", settings.title.clone());
    env.add_global("site_description", settings.description.clone());
    env.add_global("base_url", settings.base_url.clone());
    // The SLO listings' capacity column is read at.
    env.add_global("first_slo", settings.slos().first().map(|(name, _)| name.to_string()));
    Ok(env)
}

/// A hash of every template's source (defaults and overrides): pages made with other
/// templates are never kept from a previous build.
pub fn source_hash(overrides: Option<&Path>) -> Result<u64> {
    let mut h = crate::units::InputHash::default();
    for (name, source) in DEFAULT_TEMPLATES {
        h.piece(name.as_bytes());
        match overrides.map(|d| d.join(name)).filter(|p| p.is_file()) {
            Some(path) => h.piece(&fs::read(&path).with_context(|| format!("reading template {}", path.display()))?),
            None => h.piece(source.as_bytes()),
        };
    }
    h.piece(env!("CARGO_PKG_VERSION").as_bytes());
    Ok(h.finish())
}

/// A figure filter: prints `—` for a missing figure.
fn figure(f: fn(f64) -> String) -> impl Fn(Value) -> String + Send + Sync + 'static {
    move |v: Value| match f64::try_from(v) {
        Ok(x) if x.is_finite() => f(x),
        _ => numbers::DASH.to_string(),
    }
}

/// A figure's uncertainty in words, from its serialized `Estimate`: `±3.1% · n 3`, with
/// `in one window` where the interval does not cover run-to-run noise, a range where n is
/// too small for 95%, and `noisy` above 10% CV. Empty where there is no estimate.
fn interval_note(e: Value) -> String {
    let num = |v: Value| f64::try_from(v).ok().filter(|x| x.is_finite());
    let (Some(value), Some(n)) = (e.get_attr("value").ok().and_then(num), e.get_attr("n").ok().and_then(num)) else {
        return String::new();
    };
    let basis = e.get_attr("basis").map(|b| b.to_string()).unwrap_or_default();
    let interval = e.get_attr("interval").ok().filter(|i| !i.is_none() && !i.is_undefined());
    let bound = |k: &str| interval.as_ref().and_then(|i| i.get_attr(k).ok()).and_then(num);
    let kind = interval.as_ref().and_then(|i| i.get_attr("kind").ok()).map(|k| k.to_string()).unwrap_or_default();
    let pct = |x: f64| format!("{:+.1}%", (x - value) / value.abs() * 100.0);
    let mut note = match (bound("lo"), bound("hi")) {
        (Some(lo), Some(hi)) if value != 0.0 && kind == "range" => format!("range {} to {}", pct(lo), pct(hi)),
        (Some(lo), Some(hi)) if value != 0.0 => format!("±{:.1}%", (hi - lo) / 2.0 / value.abs() * 100.0),
        _ => String::new(),
    };
    let what = match basis.as_str() {
        "repetitions" => format!("n {n}"),
        "window_batches" => format!("n {n} batches, in one window"),
        _ if n == 1.0 => "n 1 request, one run".to_string(),
        _ => format!("n {n} requests, one run"),
    };
    if !note.is_empty() {
        note.push_str(" · ");
    }
    note.push_str(&what);
    if e.get_attr("cv").ok().and_then(num).is_some_and(|cv| cv > crate::analysis::interval::NOISY_CV) {
        note.push_str(" · noisy");
    }
    note
}

fn register_filters(env: &mut Environment<'static>) {
    env.add_filter("interval_note", interval_note);
    env.add_filter("tps", figure(numbers::decimal1));
    env.add_filter("dec1", figure(numbers::decimal1));
    env.add_filter("dec2", figure(|v| format!("{v:.2}")));
    // A request rate as given: 0.5, 2, 12.25 (no trailing zeros).
    env.add_filter("rps", figure(numbers::rate));
    env.add_filter("compact", figure(numbers::compact));
    env.add_filter("ms", figure(numbers::millis));
    env.add_filter("ms1", figure(numbers::millis1));
    env.add_filter("s1", figure(numbers::seconds1));
    env.add_filter("int", figure(numbers::integer));
    env.add_filter("usd", figure(numbers::dollars));
    env.add_filter("secs", figure(numbers::seconds_setting));
    env.add_filter("ctx", figure(|v| numbers::context_label(v as u32)));
    env.add_filter("status_label", |s: String| status_label(&s).to_string());
    env.add_filter("pct", figure(|v| format!("{}{:.1}%", if v > 0.0 { "+" } else { "" }, v)));
    env.add_filter("trend_label", |s: String| {
        match s.as_str() {
            "improvement" => "Improvement",
            "regression" => "Regression",
            "mixed" => "Mixed",
            "inconclusive" => "Inconclusive",
            "not_judged" => "Single runs, not judged",
            _ => "Unchanged",
        }
        .to_string()
    });
    env.add_filter("verdict_label", |s: String| {
        match s.as_str() {
            "faster" => "faster",
            "slower" => "slower",
            "no_change" => "no change",
            "inconclusive" => "inconclusive",
            _ => "single measurements, not judged",
        }
        .to_string()
    });
    env.add_filter("rate_state_label", |s: String| {
        match s.as_str() {
            "kept_up" => "Kept up",
            "saturated" => "Saturated",
            "client_behind" => "Client behind",
            "error" => "Error",
            _ => "Not measured",
        }
        .to_string()
    });
    env.add_filter("phase_label", |s: String| match s.as_str() {
        "prefill" => "Prefill".to_string(),
        _ => "Sustained decode".to_string(),
    });
    env.add_function("heat_level", |value: Value, max: Value| -> u8 {
        match (f64::try_from(value), f64::try_from(max)) {
            (Ok(v), Ok(m)) => heatmap::level(v, m),
            _ => 0,
        }
    });
}

/// The label of a state name as templates hold it (`over_capacity` -> `Over capacity`).
pub fn status_label(name: &str) -> &'static str {
    let state = serde_json::from_value(serde_json::Value::String(name.to_string())).unwrap_or(CellState::Missing);
    state_label(state)
}

//! The rules of the data format, pure: what `site check` refuses in a manifest or a cell
//! on its own, the caps on names and numbers, and the readings a producer may keep. The
//! loader applies them to every file it reads; every writer (`site bench`, `site import`,
//! `RunWriter`) applies them before it writes, so nothing is written that the site refuses.

use anyhow::{bail, Result};

use super::model::*;

/// The most repetitions of one cell a run may hold (`site bench --repeat` refuses more).
pub const MAX_REPETITIONS: u32 = 100;
/// The most measured prefill requests per context and repetition (`--prefill-samples`).
pub const MAX_PREFILL_SAMPLES: u32 = 50;

/// The checks `site check` makes of a run manifest on its own (producers run them before
/// they write one).
/// The longest a launched server may have taken to become ready, as a run records it (a day).
pub const MAX_READY_S: f64 = 86_400.0;

/// A run's time as stored: an RFC 3339 time, a time without its offset (as other tools
/// write it: read as UTC), or a calendar date (the day's start, UTC).
pub fn date_time(text: &str) -> Option<jiff::Timestamp> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Some(t);
    }
    let civil = text
        .parse::<jiff::civil::DateTime>()
        .ok()
        .or_else(|| text.parse::<jiff::civil::Date>().ok().map(|d| d.into()))?;
    // The last hours of year 9999 lie past the latest instant there is: read as that instant.
    Some(civil.to_zoned(jiff::tz::TimeZone::UTC).map_or(jiff::Timestamp::MAX, |z| z.timestamp()))
}

pub fn validate_manifest(m: &RunManifest) -> Result<()> {
    let s = &m.settings;
    for (name, list) in
        [("contexts", &s.contexts), ("concurrency", &s.concurrency), ("prefill_contexts", &s.prefill_contexts)]
    {
        if list.contains(&0) {
            bail!("settings.{name} contains 0");
        }
        let mut sorted = list.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != list.len() {
            bail!("settings.{name} lists a value twice");
        }
    }
    for (field, value) in [("started_at", &m.started_at), ("finished_at", &m.finished_at)] {
        if let Some(v) = value.as_deref().filter(|v| date_time(v).is_none()) {
            bail!("{field}: expected an RFC 3339 time (2026-03-01T12:00:00Z) or a date (2026-03-01), found {v:?}");
        }
    }
    if !(s.duration_s.is_finite() && s.duration_s > 0.0) {
        bail!("settings.duration_s must be a positive number of seconds");
    }
    // The ranges `site bench --repeat` and `--prefill-samples` take.
    if let Some(r) = s.repeat.filter(|r| !(1..=MAX_REPETITIONS).contains(r)) {
        bail!("settings.repeat: expected 1 to {MAX_REPETITIONS} measurements of each cell, found {r}");
    }
    for (i, p) in m.server_processes.iter().enumerate() {
        if p.instance as usize != i + 1 {
            bail!(
                "server_processes[{i}].instance: expected {} (processes are numbered 1, 2, ... in order), found {}",
                i + 1,
                p.instance
            );
        }
        if !(p.ready_s.is_finite() && (0.0..=MAX_READY_S).contains(&p.ready_s)) {
            bail!("server_processes[{i}].ready_s: expected seconds from 0 to {MAX_READY_S}, found {}", p.ready_s);
        }
    }
    server_settings(&m.server_settings)?;
    if let Some(t) = &m.traffic {
        super::rates::validate_traffic(t)?;
    }
    if let Some(n) = s.prefill_samples.filter(|n| !(1..=MAX_PREFILL_SAMPLES).contains(n)) {
        bail!("settings.prefill_samples: expected 1 to {MAX_PREFILL_SAMPLES} prefill requests, found {n}");
    }
    check_numbers(&[("duration_s", Some(s.duration_s)), ("kv_budget_tokens", count(s.kv_budget_tokens))], |f| {
        format!("settings.{f}")
    })?;
    check_numbers(&[("memory_gb", m.hardware.memory_gb)], |f| format!("hardware.{f}"))?;
    if m.hardware.memory_gb == Some(0.0) {
        bail!("hardware.memory_gb is 0: leave it out when the memory is not known");
    }
    check_names(m)?;
    if m.model.id.trim().is_empty() {
        bail!("model.id is empty");
    }
    if m.engine.name.trim().is_empty() {
        bail!("engine.name is empty");
    }
    if m.hardware.count == 0 {
        bail!("hardware.count: expected at least 1 device, found 0 (per-device figures divide by it)");
    }
    if m.hardware.device.trim().is_empty() {
        bail!("hardware.device is empty");
    }
    Ok(())
}

/// The most characters a name (model id, engine, device...) may have: a Hugging Face id is
/// at most 96 + 1 + 96; beyond this a name is a mistake or an attack, and titles, tables and
/// folder names would carry it everywhere.
pub const MAX_NAME_CHARS: usize = 256;
/// The most characters of free text in a manifest (a launch command, a description).
pub const MAX_TEXT_CHARS: usize = 16_384;

/// Every name and text of a manifest within its cap.
fn check_names(m: &RunManifest) -> Result<()> {
    let names = [
        ("model.id", Some(&m.model.id)),
        ("model.served_name", m.model.served_name.as_ref()),
        ("model.revision", m.model.revision.as_ref()),
        ("hardware.kind", Some(&m.hardware.kind)),
        ("hardware.device", Some(&m.hardware.device)),
        ("hardware.os", m.hardware.os.as_ref()),
        ("hardware.cpu", m.hardware.cpu.as_ref()),
        ("engine.name", Some(&m.engine.name)),
        ("engine.version", Some(&m.engine.version)),
        ("engine.quantization", m.engine.quantization.as_ref()),
        ("engine.backend", m.engine.backend.as_ref()),
        ("engine.repository", m.engine.repository.as_ref()),
        ("engine.build", m.engine.build.as_ref()),
        ("engine.commit", m.engine.commit.as_ref()),
        ("bench_tool.name", Some(&m.bench_tool.name)),
        ("bench_tool.version", Some(&m.bench_tool.version)),
    ];
    for (field, value) in names {
        if let Some(v) = value.filter(|v| v.chars().count() > MAX_NAME_CHARS) {
            bail!("{field}: expected at most {MAX_NAME_CHARS} characters, found {}", v.chars().count());
        }
    }
    for (field, value) in [("launch_command", m.launch_command.as_ref()), ("description", m.description.as_ref())] {
        if let Some(v) = value.filter(|v| v.chars().count() > MAX_TEXT_CHARS) {
            bail!("{field}: expected at most {MAX_TEXT_CHARS} characters, found {}", v.chars().count());
        }
    }
    Ok(())
}

/// The checks `site check` makes of a cell on its own (producers run them before they write
/// one, so they never write what the site then refuses).
pub fn validate_cell(c: &Cell) -> Result<()> {
    if c.context == 0 {
        bail!("context must be at least 1 token");
    }
    if c.concurrency == 0 {
        bail!("concurrency must be at least 1");
    }
    if c.phase == Phase::Prefill && c.concurrency != 1 {
        bail!("a prefill cell has concurrency 1, found {}", c.concurrency);
    }
    if c.repetition == 0 || c.repetition > MAX_REPETITIONS {
        bail!("repetition: expected 1 to {MAX_REPETITIONS}, found {}", c.repetition);
    }
    if let Some(i) = c.server_instance.filter(|i| !(1..=MAX_REPETITIONS).contains(i)) {
        bail!("server_instance: expected 1 to {MAX_REPETITIONS}, found {i}");
    }
    if c.repetition > 1 && c.schema_version < 2 {
        bail!("repetition {} needs schema_version 2 (found {})", c.repetition, c.schema_version);
    }
    match c.status {
        Status::Valid => {
            if c.reported.is_none() && c.measurement.is_none() {
                bail!("a valid cell needs `reported` figures or a `measurement`");
            }
        }
        Status::OverCapacity => {
            if c.over_capacity.is_none() {
                bail!("status over_capacity needs `over_capacity` (the rule and its numbers)");
            }
        }
        Status::Error => {
            if c.error.is_none() {
                bail!("status error needs `error` with the message");
            }
        }
        Status::Looped => {}
    }
    if c.reported.is_some() && c.measurement.is_some() {
        bail!("a cell has either `reported` figures or a `measurement`, not both");
    }
    validate_numbers(c)?;
    if let Some(m) = &c.measurement {
        if let Some(w) = m.window {
            if !(w.start_s.is_finite() && w.end_s.is_finite() && w.end_s > w.start_s) {
                bail!("measurement.window must have end_s > start_s");
            }
        } else if c.phase == Phase::Decode && c.status == Status::Valid {
            bail!("a measured decode cell needs measurement.window");
        }
    }
    Ok(())
}

/// The largest figure, time or count a data file may hold. Far above any real measurement
/// (10^12 tok/s, 31,000 years in seconds), far below where sums and chart axes overflow.
pub const MAX_NUMBER: f64 = 1e12;

/// A reading (a gauge, a budget, a device's watts) a data file can hold: finite, not
/// negative, at most [`MAX_NUMBER`]; `None` for anything else, which producers drop.
pub fn reading(v: f64) -> Option<f64> {
    (v.is_finite() && (0.0..=MAX_NUMBER).contains(&v)).then_some(v)
}

/// A number of a data file: finite, not negative, at most [`MAX_NUMBER`]. The field's name
/// is only formatted for an error (this runs for every number of every cell).
fn check_number(v: f64, field: impl FnOnce() -> String) -> Result<()> {
    if !v.is_finite() {
        bail!("{} is not a finite number", field());
    }
    if v < 0.0 {
        bail!("{} is negative ({v})", field());
    }
    if v > MAX_NUMBER {
        bail!("{} is {v:e}, beyond the largest number a data file may hold ({MAX_NUMBER:e})", field());
    }
    Ok(())
}

/// [`check_number`] over named values, absent ones skipped; `name` gives the full field name.
fn check_numbers(values: &[(&str, Option<f64>)], name: impl Fn(&str) -> String) -> Result<()> {
    for &(field, v) in values {
        if let Some(v) = v {
            check_number(v, || name(field))?;
        }
    }
    Ok(())
}

/// The machine's load: readings, and no more cores busy than it has.
fn check_machine(m: &crate::format::MachineLoad) -> Result<()> {
    if m.cpus == 0 || m.cpus > 1 << 20 {
        bail!("measurement.machine.cpus: expected 1 to {}, found {}", 1 << 20, m.cpus);
    }
    let values = [
        ("busy_cores", Some(m.busy_cores)),
        ("server_cores", m.server_cores),
        ("load_average", m.load_average),
        ("cpu_mhz", m.cpu_mhz),
    ];
    check_numbers(&values, |f| format!("measurement.machine.{f}"))?;
    for (field, v) in [("busy_cores", Some(m.busy_cores)), ("server_cores", m.server_cores)] {
        if let Some(v) = v.filter(|v| *v > f64::from(m.cpus)) {
            bail!("measurement.machine.{field}: {v} cores busy on a machine of {} CPUs", m.cpus);
        }
    }
    Ok(())
}

fn count(v: Option<u64>) -> Option<f64> {
    v.map(|c| c as f64)
}

/// Every number of a cell, so that no figure, sum or chart axis can overflow later.
fn validate_numbers(c: &Cell) -> Result<()> {
    if let Some(r) = &c.reported {
        let figures = [
            ("prompt_tps", r.prompt_tps),
            ("total_tps", r.total_tps),
            ("per_request_tps", r.per_request_tps),
            ("ttft_ms", r.ttft_ms),
            ("ttft_p90_ms", r.ttft_p90_ms),
            ("ttft_p99_ms", r.ttft_p99_ms),
            ("tbt_ms", r.tbt_ms),
            ("tbt_p90_ms", r.tbt_p90_ms),
            ("tbt_p99_ms", r.tbt_p99_ms),
            ("avg_active", r.avg_active),
            ("measured_s", r.measured_s),
            ("completed", count(r.completed)),
            ("output_tokens", count(r.output_tokens)),
        ];
        check_numbers(&figures, |f| format!("reported.{f}"))?;
        for (i, s) in r.samples.iter().enumerate() {
            let values = [
                ("ttft_s", s.ttft_s),
                ("latency_s", s.latency_s),
                ("tbt_s", s.tbt_s),
                ("input_tokens", count(s.input_tokens)),
                ("output_tokens", count(s.output_tokens)),
            ];
            check_numbers(&values, |f| format!("reported.samples[{i}].{f}"))?;
        }
        for (i, t) in r.tool_figures.iter().enumerate() {
            if t.name.trim().is_empty() || t.name.len() > 100 || t.unit.len() > 20 {
                bail!("reported.tool_figures[{i}]: expected a name of 1 to 100 characters and a unit of at most 20");
            }
            if !t.value.is_finite() || t.value.abs() > MAX_NUMBER {
                bail!("reported.tool_figures[{i}].value: expected a finite number of at most {MAX_NUMBER:e}");
            }
        }
    }
    if let Some(m) = &c.measurement {
        if let Some(w) = m.window {
            check_numbers(&[("start_s", Some(w.start_s)), ("end_s", Some(w.end_s))], |f| {
                format!("measurement.window.{f}")
            })?;
        }
        for (i, r) in m.requests.iter().enumerate() {
            let values = [
                ("send_s", Some(r.send_s)),
                ("first_token_s", r.first_token_s),
                ("last_token_s", r.last_token_s),
                ("end_s", r.end_s),
                ("window_last_token_s", r.window_last_token_s),
                ("tokens", count(Some(r.tokens))),
                ("chunks", count(Some(r.chunks))),
                ("window_tokens", count(Some(r.window_tokens))),
                ("cached_prompt_tokens", count(r.cached_prompt_tokens)),
                ("server_decode_tps", r.server_decode_tps),
                ("reasoning_chunks", count(Some(r.reasoning_chunks))),
                ("first_answer_s", r.first_answer_s),
                ("turn", count(Some(r.turn))),
            ];
            check_numbers(&values, |f| format!("measurement.requests[{i}].{f}"))?;
        }
        if let Some(s) = &m.server_tokens {
            let values = [("start_s", Some(s.start_s)), ("end_s", Some(s.end_s)), ("tokens", Some(s.tokens))];
            check_numbers(&values, |f| format!("measurement.server_tokens.{f}"))?;
        }
        check_numbers(&[("client_cpu_s", m.client_cpu_s)], |f| format!("measurement.{f}"))?;
        if let Some(g) = &m.spec_decode_gauges {
            check_numbers(&[("accept_rate", g.accept_rate), ("accept_length", g.accept_length)], |f| {
                format!("measurement.spec_decode_gauges.{f}")
            })?;
        }
        if let Some(p) = &m.prefix_cache {
            check_numbers(&[("queries", Some(p.queries)), ("hits", Some(p.hits))], |f| {
                format!("measurement.prefix_cache.{f}")
            })?;
        }
        if let Some(s) = &m.spec_decode {
            let values = [
                ("drafts", Some(s.drafts)),
                ("draft_tokens", Some(s.draft_tokens)),
                ("accepted_tokens", Some(s.accepted_tokens)),
            ];
            check_numbers(&values, |f| format!("measurement.spec_decode.{f}"))?;
        }
        if let Some(load) = &m.machine {
            check_machine(load)?;
        }
        for (i, t) in m.telemetry.iter().enumerate() {
            let values = [
                ("t_s", Some(t.t_s)),
                ("power_w", t.power_w),
                ("utilization_pct", t.utilization_pct),
                ("memory_used_mib", t.memory_used_mib),
                ("sm_clock_mhz", t.sm_clock_mhz),
            ];
            check_numbers(&values, |f| format!("measurement.telemetry[{i}].{f}"))?;
        }
        for (i, g) in m.gauge.iter().enumerate() {
            let values = [("t_s", Some(g.t_s)), ("running", Some(g.running)), ("waiting", g.waiting)];
            check_numbers(&values, |f| format!("measurement.gauge[{i}].{f}"))?;
        }
    }
    if let Some(o) = &c.over_capacity {
        let values = [("required_tokens", count(Some(o.required_tokens))), ("budget_tokens", count(o.budget_tokens))];
        check_numbers(&values, |f| format!("over_capacity.{f}"))?;
    }
    Ok(())
}

pub(super) fn check_cell_in_matrix(c: &Cell, s: &RunSettings) -> Result<()> {
    let fits = match c.phase {
        Phase::Prefill => s.prefill_contexts.contains(&c.context),
        Phase::Decode => s.contexts.contains(&c.context) && s.concurrency.contains(&c.concurrency),
    };
    if !fits {
        bail!(
            "{} cell context {} concurrency {} is not in the run's settings (contexts {:?}, concurrency {:?}, prefill_contexts {:?})",
            c.phase.as_str(),
            c.context,
            c.concurrency,
            s.contexts,
            s.concurrency,
            s.prefill_contexts
        );
    }
    Ok(())
}

/// Most settings a manifest names, and the longest name and value.
pub const MAX_SERVER_SETTINGS: usize = 128;
pub const MAX_SETTING_NAME_CHARS: usize = 64;
pub const MAX_SETTING_VALUE_CHARS: usize = 256;

/// `server_settings`: a bounded table of names (letters, digits, `_ . -`) and printable values.
fn server_settings(settings: &std::collections::BTreeMap<String, String>) -> Result<()> {
    if settings.len() > MAX_SERVER_SETTINGS {
        bail!("server_settings: expected at most {MAX_SERVER_SETTINGS} settings, found {}", settings.len());
    }
    for (name, value) in settings {
        let name_ok = !name.is_empty()
            && name.chars().count() <= MAX_SETTING_NAME_CHARS
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !name_ok {
            bail!("server_settings: {name:?} is not a setting name (letters, digits, _ . -; at most {MAX_SETTING_NAME_CHARS})");
        }
        if value.chars().count() > MAX_SETTING_VALUE_CHARS || value.chars().any(char::is_control) {
            bail!("server_settings.{name}: expected a value of at most {MAX_SETTING_VALUE_CHARS} printable characters");
        }
    }
    Ok(())
}

//! `site import`: another tool's results as a run folder in our data format. Figures are kept
//! as reported (`origin: imported`), cells the tool leaves out are reconstructed, and the
//! tool's flags become our warnings.
//!
//! One pipeline for every format: `sources` finds the results files and tells their format,
//! the format's module converts them into [`Converted`] runs (one match over formats, in
//! [`convert_found`]), and [`write_imported`] writes each through `RunWriter`.

pub mod aiperf;
pub mod converted;
pub mod fixed_count;
pub mod guidellm;
pub mod inference_perf;
pub mod llm_inference_bench;
pub mod llmd;
pub mod release;
pub mod serving;
pub mod sources;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::format::facts::{Discovered, ManifestFacts};
use crate::format::writer::RunWriter;
use crate::format::{self, BenchTool, Cell, Origin, RunManifest, Status};
pub use converted::Converted;
use sources::{Format, Source};

#[derive(Debug)]
pub struct ImportSummary {
    pub run_dir: PathBuf,
    pub cells: usize,
    pub reconstructed_over_capacity: usize,
    pub warned: usize,
    /// What was found, in words: `vllm bench serve: 3 results, context 286, concurrency 1,2,4`.
    pub found: String,
    /// What the files do not tell (left empty or taken from flags).
    pub not_told: Vec<&'static str>,
}

/// One run converted from its sources, ready to be written.
struct Imported {
    converted: Converted,
    tool: BenchTool,
    /// The first source, named in errors.
    source: PathBuf,
}

/// `site import PATH...`: every results file under `paths` (one format), each setting a run.
/// Runs are named `run_id` (or after the first file), `-1`, `-2`, ... when there are several.
pub fn import_paths(
    paths: &[PathBuf],
    format: Option<Format>,
    data_dir: &Path,
    run_id: Option<&str>,
    force: bool,
    facts: &ManifestFacts,
    skip_broken: bool,
) -> Result<(Vec<ImportSummary>, Vec<sources::Broken>)> {
    let (found, broken) = sources::collect(paths, format, skip_broken)?;
    let base = match run_id {
        Some(id) => id.to_string(),
        None => crate::units::slugify(
            &found[0].path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        ),
    };
    let runs = convert_found(&found)?;
    let many = runs.len() > 1;
    let written = runs
        .into_iter()
        .enumerate()
        .map(|(i, run)| write_imported(run, data_dir, &numbered(&base, i, many), force, facts))
        .collect::<Result<Vec<_>>>()?;
    Ok((written, broken))
}

/// The runs the sources make, by their format (all of one format, `sources` makes sure).
fn convert_found(found: &[Source]) -> Result<Vec<Imported>> {
    let source = found[0].path.clone();
    match found[0].format {
        // One llm-inference-bench or guidellm file is one run.
        Format::LlmInferenceBench => found
            .iter()
            .map(|s| {
                let (converted, tool) = llm_inference_bench::convert(&s.path)?;
                Ok(Imported { converted, tool, source: s.path.clone() })
            })
            .collect(),
        Format::Guidellm => found
            .iter()
            .map(|s| {
                let at = format!("{}: ", s.path.display());
                let (converted, version) =
                    guidellm::convert(&format::json::parse_lean(&s.path, &s.text()?, guidellm::UNREAD)?, &at)?;
                let tool = BenchTool { name: guidellm::TOOL.into(), version };
                Ok(Imported { converted, tool, source: s.path.clone() })
            })
            .collect(),
        Format::Aiperf => aiperf_runs(found),
        Format::LlmdReport => llmd_runs(found),
        // One report folder is one run: the stages of two folders (another model, another
        // load) are never one run's cells.
        Format::InferencePerf => {
            let mut folders: std::collections::BTreeMap<Option<&Path>, Vec<&Source>> = Default::default();
            for s in found {
                folders.entry(s.path.parent()).or_default().push(s);
            }
            folders
                .into_values()
                .map(|stages| {
                    let (converted, version) = inference_perf_run(&stages)?;
                    let tool = BenchTool { name: inference_perf::TOOL.into(), version };
                    Ok(Imported { converted, tool, source: stages[0].path.clone() })
                })
                .collect()
        }
        Format::Vllm | Format::Sglang => {
            let tool = found[0].format.serving().expect("vLLM and SGLang are serving formats");
            let mut results = Vec::new();
            for s in found {
                for (at, v) in sources::serving_results(s)? {
                    results.push((format!("{}: {at}", s.path.display()), v));
                }
            }
            // Results carry their file in `at`, so errors name it.
            serving::group(tool, results)
                .iter()
                .map(|g| {
                    let mut converted = serving::convert_group(tool, g)?;
                    // A rate run's notes say how its rates were measured already.
                    if converted.rates.is_empty() {
                        converted.notes.push(tool.method_notes().to_string());
                    }
                    let bench_tool = BenchTool { name: tool.name().into(), version: "unknown".into() };
                    Ok(Imported { converted, tool: bench_tool, source: source.clone() })
                })
                .collect()
        }
    }
}

fn numbered(base: &str, i: usize, many: bool) -> String {
    if many {
        format!("{base}-{}", i + 1)
    } else {
        base.to_string()
    }
}

/// inference-perf stages (one report folder: its stages in stage order) as one run, with
/// the release (no file names it).
fn inference_perf_run(found: &[&Source]) -> Result<(Converted, String)> {
    let stage_number = |p: &Path| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.trim_start_matches("stage_").split('_').next().and_then(|n| n.parse::<u32>().ok()).unwrap_or(u32::MAX)
    };
    let mut ordered: Vec<&Source> = found.to_vec();
    ordered.sort_by_key(|s| stage_number(&s.path));
    let mut stages = Vec::new();
    for s in &ordered {
        stages.push((format!("{}: ", s.path.display()), format::json::parse_lean(&s.path, &s.text()?, &[])?));
    }
    let records_path = ordered[0].path.with_file_name("per_request_lifecycle_metrics.json");
    let config_path = ordered[0].path.with_file_name("config.yaml");
    let config = if fs::symlink_metadata(&config_path).is_ok() {
        let text = crate::fsutil::read_data_file(&config_path, 16 << 20)?;
        Some(format::yaml::parse(&config_path, &text)?)
    } else {
        None
    };
    if inference_perf::is_rate_run(&stages) {
        let times = if fs::symlink_metadata(&records_path).is_ok() {
            inference_perf::read_times(&records_path)?
        } else {
            Vec::new()
        };
        return Ok((inference_perf::convert_rates(&stages, &times, config.as_ref())?, "unknown".to_string()));
    }
    let records = if fs::symlink_metadata(&records_path).is_ok() {
        inference_perf::read_samples(&records_path)?
    } else {
        Vec::new()
    };
    Ok((inference_perf::convert(&stages, &records, config.as_ref())?, "unknown".to_string()))
}

/// llm-d Benchmark Reports, grouped by stack and load tool into runs.
fn llmd_runs(found: &[Source]) -> Result<Vec<Imported>> {
    let read = |s: &Source| {
        let report = llmd::read(format!("{}: ", s.path.display()), &format::yaml::parse(&s.path, &s.text()?)?)?;
        Ok((report.key.clone(), report))
    };
    grouped(found, read)?
        .into_iter()
        .map(|(_, g)| {
            let (converted, (name, version)) = llmd::convert(g)?;
            Ok(Imported { converted, tool: BenchTool { name, version }, source: found[0].path.clone() })
        })
        .collect()
}

/// Each source read into a keyed part, the parts grouped by key in the order first seen
/// (one group a run).
fn grouped<T>(found: &[Source], read: impl Fn(&Source) -> Result<(String, T)>) -> Result<Vec<(String, Vec<T>)>> {
    let mut groups: Vec<(String, Vec<T>)> = Vec::new();
    for s in found {
        let (key, part) = read(s)?;
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(part),
            None => groups.push((key, vec![part])),
        }
    }
    Ok(groups)
}

/// AIPerf profiles (with the request records beside each), grouped by setting into runs.
fn aiperf_runs(found: &[Source]) -> Result<Vec<Imported>> {
    // One profile at a time: its document and records are dropped once its cell is made.
    let read = |s: &Source| {
        let v: Value = format::json::parse_lean(&s.path, &s.text()?, &[])?;
        let records = s.path.with_file_name("profile_export.jsonl");
        let profile = aiperf::read_profile(format!("{}: ", s.path.display()), &v, &records)?;
        Ok((profile.key.clone(), profile))
    };
    grouped(found, read)?
        .into_iter()
        .map(|(_, g)| {
            let (converted, version) = aiperf::convert(g)?;
            let tool = BenchTool { name: aiperf::TOOL.into(), version };
            Ok(Imported { converted, tool, source: found[0].path.clone() })
        })
        .collect()
}

/// A converted run as a run folder: the manifest from the sources' facts and the flags, the
/// cells, the user's notes and the tool's method notes after them. Staged, validated, then
/// moved into place, so a failed import writes nothing and an existing run is replaced only
/// with `force`.
fn write_imported(
    run: Imported,
    data_dir: &Path,
    id: &str,
    force: bool,
    facts: &ManifestFacts,
) -> Result<ImportSummary> {
    format::ids::check_id("run id", id)?;
    let Imported { converted, tool, source } = run;
    let Converted {
        settings,
        cells,
        model,
        started_at,
        engine,
        engine_version,
        device,
        notes: mut method_notes,
        rates,
        traffic,
    } = converted;
    // The accelerator the sources name, where no flag names one.
    let mut facts = facts.clone();
    if let (None, None, Some((name, count))) = (&facts.device, &facts.cpu, device) {
        facts.device = Some(name);
        facts.device_count = facts.device_count.or(Some(count));
    }
    let facts = &facts;
    let model_unknown = model.is_none() && facts.model_id.is_none();
    if model_unknown {
        method_notes.push(format!(
            "The {} results do not name the model, and none was given (`--model-id`): the run's model is \"unknown\".",
            tool.name
        ));
    }
    let found = Discovered {
        // A model the sources name counts only when the user gave no --model-id (it is
        // often a local path), and is never stored as the served name.
        served_model: if facts.model_id.is_none() { model } else { None },
        engine,
        engine_version,
        ..Discovered::default()
    };
    let tool_name = tool.name.clone();
    let mut not_told = Vec::new();
    let mut bench_tool = tool;
    if bench_tool.version == "unknown" {
        match facts.tool_version.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            Some(v) => bench_tool.version = v.to_string(),
            None => not_told.push("tool version (the file does not record it; --tool-version gives it)"),
        }
    }
    let mut manifest = facts
        .manifest(found, settings, bench_tool, Origin::Imported)
        .with_context(|| format!("{}", source.display()))?;
    manifest.traffic = traffic;
    match started_at {
        Some(d) => manifest.started_at = Some(checked_start(&d).with_context(|| format!("{}", source.display()))?),
        None => not_told.push("date"),
    }
    let mut writer = RunWriter::stage(data_dir, id, force)?;
    writer.manifest(&manifest)?;
    for c in &cells {
        writer.cell(c);
    }
    writer.rate_cells(&rates)?;
    if model_unknown {
        not_told.push("model (the files do not name it; --model-id gives it)");
    }
    let notes: Vec<&str> = std::iter::once(facts.notes_markdown.as_deref().unwrap_or(""))
        .chain(method_notes.iter().map(String::as_str))
        .filter(|n| !n.is_empty())
        .collect();
    if !notes.is_empty() {
        writer.notes(&notes.join("\n\n"))?;
    }
    let dest = writer.commit()?;
    let mut said = summary(dest, &manifest, &cells, &tool_name, not_told);
    if !rates.is_empty() {
        let offered: Vec<String> = rates.iter().map(|r| crate::units::numbers::rate(r.rate_rps)).collect();
        said.found = format!(
            "{tool_name} {}: {} request-rate cells ({} requests/s)",
            manifest.bench_tool.version,
            rates.len(),
            offered.join(", ")
        );
    }
    Ok(said)
}

fn summary(
    run_dir: PathBuf,
    m: &RunManifest,
    cells: &[Cell],
    tool: &str,
    not_told: Vec<&'static str>,
) -> ImportSummary {
    let numbers = |v: &[u32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
    ImportSummary {
        run_dir,
        cells: cells.len(),
        reconstructed_over_capacity: cells.iter().filter(|c| c.status == Status::OverCapacity).count(),
        warned: cells.iter().filter(|c| !c.warnings.is_empty()).count(),
        found: format!(
            "{tool} {}: {} cells, contexts {}, concurrency {}",
            m.bench_tool.version,
            cells.len(),
            numbers(&m.settings.contexts),
            numbers(&m.settings.concurrency)
        ),
        not_told,
    }
}

/// A source's start time, as a time that has been: not a date, or one more than a day ahead
/// of this machine's clock, is refused (a run dated 9999 would stay "the newest" for ever).
fn checked_start(text: &str) -> Result<String> {
    let Some(t) = crate::format::validate::date_time(text) else {
        anyhow::bail!("the start time {text:?} is not a date (expected an RFC 3339 time such as 2026-03-01T12:00:00Z)");
    };
    let limit = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24);
    if t > limit {
        anyhow::bail!(
            "the start time {text} is in the future: this machine's clock says {}",
            jiff::Timestamp::now().strftime("%Y-%m-%d")
        );
    }
    Ok(text.to_string())
}

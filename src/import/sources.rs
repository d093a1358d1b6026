//! What `site import PATH...` was given: files and folders, each file's format told from its
//! content (not its name), and the results they hold.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::de::IgnoredAny;
use serde_json::Value;
use walkdir::WalkDir;

use super::serving::ServingTool;
use crate::format::json;
use crate::fsutil;

/// The formats `site import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    LlmInferenceBench,
    Vllm,
    Sglang,
    Guidellm,
    Aiperf,
    InferencePerf,
    LlmdReport,
}

impl Format {
    pub const ALL: [Format; 7] = [
        Format::LlmInferenceBench,
        Format::Vllm,
        Format::Sglang,
        Format::Guidellm,
        Format::Aiperf,
        Format::InferencePerf,
        Format::LlmdReport,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::LlmInferenceBench => "llm-inference-bench",
            Format::Vllm => "vllm",
            Format::Sglang => "sglang",
            Format::Guidellm => "guidellm",
            Format::Aiperf => "aiperf",
            Format::InferencePerf => "inference-perf",
            Format::LlmdReport => "llmd-br-0.2",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Format::LlmInferenceBench => "llm-inference-bench benchmark_results.json",
            Format::Vllm => "vllm bench serve --save-result JSON",
            Format::Sglang => "SGLang bench_serving --output-file JSONL",
            Format::Guidellm => "guidellm benchmarks.json",
            Format::Aiperf => "AIPerf profile_export_aiperf.json, a profile or a sweep folder",
            Format::InferencePerf => "inference-perf stage_N_lifecycle_metrics.json, a report folder",
            Format::LlmdReport => "llm-d Benchmark Report v0.2 YAML, a report or a folder of them",
        }
    }

    pub fn known() -> String {
        Format::ALL.iter().map(|f| format!("{} ({})", f.name(), f.describe())).collect::<Vec<_>>().join(", ")
    }

    pub fn parse(name: &str) -> Result<Format> {
        match Format::ALL.into_iter().find(|f| f.name() == name) {
            Some(f) => Ok(f),
            None => bail!("unknown format {name:?}: the formats are {}", Format::known()),
        }
    }

    pub fn serving(self) -> Option<ServingTool> {
        match self {
            Format::Vllm => Some(ServingTool::Vllm),
            Format::Sglang => Some(ServingTool::Sglang),
            Format::LlmInferenceBench
            | Format::Guidellm
            | Format::Aiperf
            | Format::InferencePerf
            | Format::LlmdReport => None,
        }
    }
}

/// A file's format from its first JSON value (a JSONL file's first line).
/// A file laid out as one tool's results but without the field `detect` tells its release
/// by: the tool, and that field.
fn near_miss(text: &str) -> Option<(Format, &'static str)> {
    let p: Probe = serde_json::from_str(text).ok()?;
    if p.benchmarks.is_some() && p.metadata.is_some() {
        return Some((Format::Guidellm, "metadata.guidellm_version"));
    }
    (p.input_config.is_some() && p.output_token_throughput.is_some()).then_some((Format::Aiperf, "aiperf_version"))
}

pub fn detect(text: &str) -> Option<Format> {
    let whole: Option<Probe> = serde_json::from_str(text).ok();
    if let Some(p) = &whole {
        if p.metadata.as_ref().is_some_and(|m| m.get("version").is_some()) && p.results.is_some() {
            return Some(Format::LlmInferenceBench);
        }
        // A concurrency result has `max_concurrency`; a rate result `request_rate` (and a null one).
        if (p.max_concurrency.is_some() || p.request_rate.is_some())
            && p.output_throughput.is_some()
            && p.endpoint_type.is_some()
            && p.model_id.is_some()
        {
            return Some(Format::Vllm);
        }
        if p.metadata.as_ref().is_some_and(|m| m.get("guidellm_version").is_some()) && p.benchmarks.is_some() {
            return Some(Format::Guidellm);
        }
        // guidellm before 0.5 wrote no metadata, only its benchmarks: told by their type, so
        // that the import refuses it by name rather than as a file of no known format.
        let generative = |b: &BenchmarkProbe| b.type_.as_deref() == Some("generative_benchmark");
        if p.metadata.is_none() && p.benchmarks.as_ref().is_some_and(|b| b.first().is_some_and(generative)) {
            return Some(Format::Guidellm);
        }
        let loadgen = p.input_config.as_ref().is_some_and(|c| c.get("loadgen").is_some());
        if p.input_config.is_some() && p.output_token_throughput.is_some() && (p.aiperf_version.is_some() || loadgen) {
            return Some(Format::Aiperf);
        }
        // A stage report (the summary of all stages has no concurrency and is not a cell).
        let concurrency = p
            .load_summary
            .as_ref()
            .is_some_and(|l| l.get("concurrency").is_some() || l.get("requested_rate").is_some());
        if p.benchmark_time_seconds.is_some() && p.successes.is_some() && p.failures.is_some() && concurrency {
            return Some(Format::InferencePerf);
        }
    }
    // One result a line (SGLang always, `vllm bench serve --append-result`): the first line
    // tells, read only when the whole text is not one document.
    let first_line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line: Probe = serde_json::from_str(&json::python_floats_as_null(first_line)).ok()?;
    let serving = line.max_concurrency.is_some() && line.output_throughput.is_some();
    if serving && line.backend.is_some() && line.dataset_name.is_some() {
        return Some(Format::Sglang);
    }
    let rate = line.request_rate.is_some() && line.output_throughput.is_some();
    ((serving || rate) && line.endpoint_type.is_some() && line.model_id.is_some()).then_some(Format::Vllm)
}

/// The keys that tell the formats apart, read without building the rest of the document
/// (a results file can be hundreds of megabytes; its records are skipped, not held).
#[derive(Debug, serde::Deserialize)]
struct Probe {
    metadata: Option<Value>,
    results: Option<IgnoredAny>,
    benchmarks: Option<Vec<BenchmarkProbe>>,
    max_concurrency: Option<IgnoredAny>,
    request_rate: Option<IgnoredAny>,
    output_throughput: Option<IgnoredAny>,
    endpoint_type: Option<IgnoredAny>,
    model_id: Option<IgnoredAny>,
    backend: Option<IgnoredAny>,
    dataset_name: Option<IgnoredAny>,
    input_config: Option<Value>,
    output_token_throughput: Option<IgnoredAny>,
    aiperf_version: Option<IgnoredAny>,
    benchmark_time_seconds: Option<IgnoredAny>,
    successes: Option<IgnoredAny>,
    failures: Option<IgnoredAny>,
    load_summary: Option<Value>,
}

/// A guidellm benchmark's type, the rest skipped.
#[derive(Debug, serde::Deserialize)]
struct BenchmarkProbe {
    type_: Option<String>,
}

/// A results file given or found. Its text is read when it is imported (`text`), so a sweep
/// of thousands of profiles never holds them all at once.
pub struct Source {
    pub path: PathBuf,
    pub format: Format,
}

impl Source {
    pub fn text(&self) -> Result<String> {
        read_text(&self.path)
    }
}

/// A results file's text, a byte order mark (some editors and Windows tools start UTF-8 with
/// one) taken off.
fn read_text(path: &Path) -> Result<String> {
    let text = fsutil::read_data_file(path, MAX_FILE_BYTES)?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Files a tool writes beside its results that are never results themselves (request
/// records, inputs, logs): not read when a folder is searched.
fn never_results(name: &str) -> bool {
    let data = name.ends_with(".json") || name.ends_with(".jsonl") || yaml_name(name);
    !data || matches!(name, "profile_export.jsonl" | "per_request_lifecycle_metrics.json" | "inputs.json")
}

/// A YAML file's name (llm-d Benchmark Reports; other tools' configurations sit beside them).
fn yaml_name(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// A YAML file's format: an llm-d Benchmark Report v0.2, or none.
fn detect_yaml(path: &Path, text: &str) -> Result<Option<Format>> {
    let v = crate::format::yaml::parse(path, text)?;
    Ok(super::llmd::is_report(&v).then_some(Format::LlmdReport))
}

/// Files larger than this are not results files.
const MAX_FILE_BYTES: u64 = 256 << 20;

/// A part of a result that could not be imported, and why.
#[derive(Debug, Clone)]
pub struct Broken {
    pub path: PathBuf,
    pub why: String,
}

/// Names that mark a file as a results file of a tool's folder: one that cannot be read is
/// named, never passed over (inference-perf's stage reports, AIPerf's profiles). The
/// request records beside them are read by their importer, which names them likewise.
fn result_part(name: &str) -> bool {
    let stage = name.strip_prefix("stage_").and_then(|r| r.strip_suffix("_lifecycle_metrics.json"));
    stage.is_some_and(|n| n.parse::<u32>().is_ok()) || name == "profile_export_aiperf.json"
}

/// An AIPerf sweep's folder of one setting (`concurrency_4`, `request_rate_2.0`): it must
/// hold a profile.
fn sweep_folder(name: &str) -> bool {
    ["concurrency_", "request_rate_", "run_"]
        .iter()
        .any(|p| name.strip_prefix(p).is_some_and(|n| n.parse::<f64>().is_ok()))
}

/// Every results file under `paths`: a file given by name must be one (`format` forced, or
/// detected); in a folder, files of no known format are passed over, except those named as
/// part of a result (`result_part`) and a sweep's setting folders, which must import: each
/// one that cannot is named with the reason (all of them, then an error), or with
/// `skip_broken` returned for the caller to list. All must be of one format.
pub fn collect(paths: &[PathBuf], format: Option<Format>, skip_broken: bool) -> Result<(Vec<Source>, Vec<Broken>)> {
    let mut sources = Vec::new();
    let mut broken = Vec::new();
    for p in paths {
        let meta = fs::symlink_metadata(p).with_context(|| format!("reading {}", p.display()))?;
        if meta.is_dir() {
            collect_folder(p, format, &mut sources, &mut broken)?;
        } else if let Some(s) = read(p, format, true)? {
            sources.push(s);
        }
    }
    if !broken.is_empty() && !skip_broken {
        // A line a part (printed one a line, each escaped), its path once.
        let problems: Vec<String> = broken
            .iter()
            .map(|b| {
                let path = b.path.display().to_string();
                match b.why.starts_with(&path) {
                    true => b.why.clone(),
                    false => format!("{path}: {}", b.why),
                }
            })
            .collect();
        let heading = format!(
            "{} part(s) of the results cannot be imported (fix them, or pass --skip-broken to import the rest):",
            broken.len()
        );
        return Err(crate::format::load::ProblemList { heading, problems }.into());
    }
    if sources.is_empty() {
        bail!("no results file of a known format in {} (the formats are {})", list(paths), Format::known());
    }
    if let Some(other) = sources.iter().find(|s| s.format != sources[0].format) {
        bail!(
            "{} is {} but {} is {}: import one tool's results at a time",
            sources[0].path.display(),
            sources[0].format.name(),
            other.path.display(),
            other.format.name()
        );
    }
    refuse_repeated(&sources)?;
    Ok((sources, broken))
}

/// One results file named twice (`site import P P`, a folder and a file inside it) or two
/// copies of one file would be imported as repetitions that agree exactly: evidence of no
/// noise that was never measured. Refused, naming both.
fn refuse_repeated(sources: &[Source]) -> Result<()> {
    let mut seen: rustc_hash::FxHashMap<(u64, u64), &Path> = rustc_hash::FxHashMap::default();
    for s in sources {
        let bytes = fs::read(&s.path).with_context(|| format!("reading {}", s.path.display()))?;
        let key = (bytes.len() as u64, twox_hash::XxHash64::oneshot(0, &bytes));
        if let Some(first) = seen.insert(key, &s.path) {
            let same_file = first.canonicalize().ok() == s.path.canonicalize().ok();
            bail!(
                "{} and {} {}: one measurement imported twice would read as two repetitions that agree exactly; import each result once",
                first.display(),
                s.path.display(),
                if same_file { "are the same file" } else { "hold identical results" }
            );
        }
    }
    Ok(())
}

fn collect_folder(
    root: &Path,
    format: Option<Format>,
    sources: &mut Vec<Source>,
    broken: &mut Vec<Broken>,
) -> Result<()> {
    let mut it = WalkDir::new(root).max_depth(4).sort_by_file_name().into_iter();
    while let Some(e) = it.next() {
        let e = e.with_context(|| format!("reading {}", root.display()))?;
        let rel = e.path().strip_prefix(root).unwrap_or(e.path());
        // AIPerf keeps a copy of each profile under `phases/`, and aggregates apart: read
        // the profile once.
        if !super::aiperf::is_profile(rel) || rel.components().any(|c| c.as_os_str() == "aggregate") {
            continue;
        }
        let name = e.file_name().to_string_lossy();
        let part = result_part(&name) || (e.depth() > 0 && sweep_folder(&name));
        let mut problem = |why: String| broken.push(Broken { path: e.path().to_path_buf(), why });
        if e.file_type().is_symlink() {
            if part {
                problem("a symbolic link: results are not read through links".into());
            }
        } else if e.file_type().is_dir() {
            if part && !e.path().join("profile_export_aiperf.json").exists() {
                problem("a sweep folder without its profile_export_aiperf.json".into());
                it.skip_current_dir();
            }
        } else if e.file_type().is_file() && (part || !never_results(&name)) {
            match read(e.path(), format, part).and_then(|s| match s {
                None if yaml_name(&name) => Ok(None),
                // A data file that is not even JSON is a broken result, not another file.
                None => not_json(e.path()).map(|()| None),
                s => Ok(s),
            }) {
                Ok(Some(s)) => sources.push(s),
                Ok(None) => {}
                Err(err) => problem(format!("{err:#}")),
            }
        }
    }
    Ok(())
}

/// Passes a `.json` or `.jsonl` file that holds JSON (of another tool, a config); an empty
/// one, or one that does not parse (a result cut short), is an error with its place.
fn not_json(path: &Path) -> Result<()> {
    let Ok(text) = read_text(path) else { return Ok(()) };
    if text.trim().is_empty() {
        bail!("{}: empty", path.display());
    }
    let whole = match serde_json::from_str::<IgnoredAny>(&text) {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    let line_ok = |l: &str| serde_json::from_str::<IgnoredAny>(&json::python_floats_as_null(l));
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    if !lines.next().is_some_and(|(_, first)| line_ok(first).is_ok()) {
        // One document, cut short or broken: where the parser stopped.
        return Err(json::located(path, &whole).context("not JSON"));
    }
    // JSON Lines (the first line parses alone): every line must.
    for (i, line) in lines {
        if let Err(e) = line_ok(line) {
            let message = e.to_string();
            let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
            bail!("{}:{}:{}: {message} (not JSON)", path.display(), i + 1, e.column());
        }
    }
    Ok(())
}

fn list(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// A results file: `Some` when of a known format; `None` for another file of a folder;
/// an error for a file that must be one (`named`: given by name, or part of a result).
fn read(path: &Path, format: Option<Format>, named: bool) -> Result<Option<Source>> {
    let text = match read_text(path) {
        Ok(t) => t,
        Err(_) if !named => return Ok(None),
        Err(e) => return Err(e),
    };
    if named && text.trim().is_empty() {
        bail!("{}: empty (a results file holds JSON)", path.display());
    }
    let yaml = yaml_name(&path.file_name().unwrap_or_default().to_string_lossy());
    if let (true, Some(asked)) = (yaml, format.filter(|f| *f != Format::LlmdReport)) {
        if let Ok(Some(found)) = detect_yaml(path, &text) {
            bail!(
                "{}: a file of {} ({}), not of {} (--format {}): pass --format {} or leave --format out",
                path.display(),
                found.name(),
                found.describe(),
                asked.name(),
                asked.name(),
                found.name()
            );
        }
    }
    if yaml && format.is_none() {
        // A YAML file found in a folder that does not parse or is no report is another
        // tool's configuration: passed over; named, it is an error that says why.
        return match detect_yaml(path, &text) {
            Ok(Some(format)) => Ok(Some(Source { path: path.to_path_buf(), format })),
            Ok(None) if named => {
                bail!("{}: not an llm-d Benchmark Report v0.2 (no `version: '0.2'` with `results`)", path.display())
            }
            Err(e) if named => Err(e),
            _ => Ok(None),
        };
    }
    match format.or_else(|| detect(&text)) {
        Some(format) => Ok(Some(Source { path: path.to_path_buf(), format })),
        None if named => {
            // Not even JSON: say where, as for data files.
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            if serde_json::from_str::<IgnoredAny>(&json::python_floats_as_null(first)).is_err() {
                json::parse::<Value>(path, &text)?;
            }
            if let Some((tool, missing)) = near_miss(&text) {
                bail!(
                    "{}: {} results without the field that names their release ({missing}); pass --format {} to read it by its layout",
                    path.display(),
                    tool.name(),
                    tool.name()
                )
            }
            bail!("{}: not a results file of a known format (the formats are {})", path.display(), Format::known())
        }
        None => Ok(None),
    }
}

/// The results in a serving tool's file, each with where it is (`line N: `, or nothing for a
/// one-result file). SGLang always writes one result a line; vLLM one result a file, or one a
/// line with `--append-result`.
pub fn serving_results(s: &Source) -> Result<Vec<(String, Value)>> {
    let text = s.text()?;
    let one_value = || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
    match s.format {
        Format::Vllm if one_value() => Ok(vec![(String::new(), json::parse_lean(&s.path, &text, &[])?)]),
        Format::Sglang | Format::Vllm => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                let v: Value = json::parse_python_lean(&s.path, l)
                    .map_err(|e| e.context(format!("{}: line {} is not a result", s.path.display(), i + 1)))?;
                Ok((format!("line {}: ", i + 1), v))
            })
            .collect(),
        _ => Ok(vec![(String::new(), json::parse_lean(&s.path, &text, &[])?)]),
    }
}

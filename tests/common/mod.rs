//! Test support: copy a fixture to a temp folder, run the real `site` binary on it.
#![allow(dead_code)]

pub mod rogue;
pub mod serve;
pub mod sim;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(rel: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(rel)
}

pub fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            fs::create_dir_all(&dest).unwrap();
        } else {
            fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A fixture copied into a fresh temp folder (the folder is removed on drop).
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn from_fixture(rel: &str) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&fixture(rel), dir.path());
        Workspace { dir }
    }
    pub fn from_repo_data() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&repo_root().join("data"), &dir.path().join("data"));
        Workspace { dir }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn site(&self, args: &[&str]) -> Output {
        site_in(self.path(), args)
    }
    pub fn write(&self, rel: &str, text: &str) {
        fs::write(self.path().join(rel), text).unwrap();
    }
    pub fn read(&self, rel: &str) -> String {
        let p = self.path().join(rel);
        fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
    }
}

/// `index.json`'s runs (arrays under one list of columns) as objects, as the listing's
/// script reads them.
pub fn index_rows(json: &str) -> Vec<serde_json::Value> {
    let index: serde_json::Value = serde_json::from_str(json).unwrap();
    let columns: Vec<&str> = index["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let row = |a: &serde_json::Value| {
        let fields = columns.iter().zip(a.as_array().unwrap()).map(|(c, v)| (c.to_string(), v.clone()));
        serde_json::Value::Object(fields.collect())
    };
    index["runs"].as_array().unwrap().iter().map(row).collect()
}

/// A published gzipped download (`board.csv.gz`, `cells.json.gz`), unpacked.
pub fn gunzip_text(p: &Path) -> String {
    use std::io::Read as _;
    let gz = fs::read(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text).unwrap();
    text
}

/// A run's JSON download (`runs/RUN/cells.json.gz` under `public`), unpacked.
pub fn cells_download(public: &Path, run: &str) -> serde_json::Value {
    serde_json::from_str(&gunzip_text(&public.join("runs").join(run).join("cells.json.gz"))).unwrap()
}

/// A run's published evidence file (`public/runs/RUN/evidence.js`) as data, under `dir`.
pub fn evidence(dir: &Path, run: &str) -> serde_json::Value {
    let p = dir.join("public/runs").join(run).join("evidence.js");
    let js = fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
    use std::io::Read as _;
    let packed = js.strip_prefix("window.SPEED_MATRIX_EVIDENCE='").and_then(|j| j.trim_end().strip_suffix("';"));
    let packed = packed.unwrap_or_else(|| panic!("{} is not an evidence file", p.display()));
    let gz = speed_matrix::units::base91::decode(packed).expect("basE91");
    let mut json = String::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut json).unwrap();
    serde_json::from_str(&json).unwrap()
}

/// Cell `slug` (`decode-8k-x2`) of a run's evidence as the viewer reads it: the file's texts
/// put back in place of their indexes (formulas, methods, labels), neighbours as [what, slug,
/// name], and the fields the file leaves out when empty filled in as empty.
pub fn evidence_cell(dir: &Path, run: &str, slug: &str) -> serde_json::Value {
    use serde_json::{json, Value};
    let data = evidence(dir, run);
    let texts: Vec<String> =
        data["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
    let cells = data["cells"].as_array().unwrap();
    let mut cell =
        cells.iter().find(|c| c["slug"] == slug).cloned().unwrap_or_else(|| panic!("{run} has no cell {slug}"));
    let text = |v: &mut Value| *v = Value::from(texts[v.as_u64().unwrap() as usize].clone());
    let fill = |v: &mut Value, keys: &[&str]| {
        for k in keys {
            if v.get(k).is_none() {
                v[*k] = json!([]);
            }
        }
    };
    fill(&mut cell, &["neighbours", "uncertainty", "tool_figures", "warnings", "reps"]);
    if cell.get("detail").is_none() {
        cell["detail"] = json!("");
    }
    text(&mut cell["status_label"]);
    for row in cell["uncertainty"].as_array_mut().unwrap() {
        for i in [0, 3, 5] {
            text(&mut row[i]);
        }
    }
    for n in cell["neighbours"].as_array_mut().unwrap() {
        let other = &cells[n[1].as_u64().unwrap() as usize];
        *n = json!([texts[n[0].as_u64().unwrap() as usize], other["slug"], other["name"]]);
    }
    for rep in cell["reps"].as_array_mut().unwrap() {
        for key in ["ttft", "answer_ttft", "tbt"] {
            if let Some(s) = rep.get(key).cloned() {
                rep[key] = stats_text(&s, &data["percentile_needs"]);
            }
        }
        for (key, rows) in [("lanes", lane_rows as fn(&Value) -> Value), ("gauge", gauge_rows)] {
            if let Some(columns) = rep.get(key) {
                rep[key] = rows(columns);
            }
        }
        fill(rep, &["formulas", "prefill", "lanes", "gauge", "throughput", "outcomes", "token_sources"]);
        for row in rep["formulas"].as_array_mut().unwrap() {
            text(&mut row[0]);
            text(&mut row[2]);
            text(&mut row[3]);
        }
        for row in rep["token_sources"].as_array_mut().unwrap() {
            text(&mut row[0]);
        }
    }
    cell
}

/// A repetition's lanes, stored as columns in whole milliseconds (each send after the one
/// before, first token and end after their send), as rows [send, first, end, outcome,
/// requests] in seconds: what the viewer turns them into.
/// A distribution's numbers as the viewer writes them (static/cell.js `statsText`).
fn stats_text(s: &serde_json::Value, needs: &serde_json::Value) -> serde_json::Value {
    let q = &s["q"];
    let ms1 = |v: &serde_json::Value| speed_matrix::units::numbers::millis1(v.as_f64().unwrap());
    let p = |i: usize| match q[i].is_null() {
        true => format!("needs {} requests (max of {}: {})", needs[i - 1], s["count"], ms1(&q[3])),
        false => ms1(&q[i]),
    };
    serde_json::json!({"count": s["count"], "p50": ms1(&q[0]), "p90": p(1), "p99": p(2), "max": ms1(&q[3]), "hist": s["hist"]})
}

fn lane_rows(c: &serde_json::Value) -> serde_json::Value {
    let col = |i: usize| c[i].as_array().unwrap().clone();
    let (mut t, sends) = (0i64, col(0));
    let rows: Vec<serde_json::Value> = (0..sends.len())
        .map(|i| {
            t += sends[i].as_i64().unwrap();
            let at = |v: &serde_json::Value| v.as_i64().map(|d| (t + d) as f64 / 1000.0);
            serde_json::json!([t as f64 / 1000.0, at(&c[1][i]), at(&c[2][i]), c[3][i], c[4][i]])
        })
        .collect();
    serde_json::Value::Array(rows)
}

/// A repetition's gauge, stored as columns (each time in milliseconds after the one before),
/// as rows [time in seconds, running, waiting].
fn gauge_rows(c: &serde_json::Value) -> serde_json::Value {
    let mut t = 0i64;
    let rows: Vec<serde_json::Value> = (0..c[0].as_array().unwrap().len())
        .map(|i| {
            t += c[0][i].as_i64().unwrap();
            serde_json::json!([t as f64 / 1000.0, c[1][i], c[2][i]])
        })
        .collect();
    serde_json::Value::Array(rows)
}

pub fn site_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_site")).args(args).current_dir(dir).output().expect("running site")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn assert_ok(o: &Output) {
    assert!(o.status.success(), "site failed:\nstdout:\n{}\nstderr:\n{}", stdout(o), stderr(o));
}

/// The visible text of an HTML fragment: tags dropped, entities decoded, SVGs skipped.
pub fn text_of(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if rest.starts_with("<svg") {
            let end = rest.find("</svg>").map(|e| e + 6).unwrap_or(rest.len());
            rest = &rest[end..];
            continue;
        }
        let end = rest.find('>').map(|e| e + 1).unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&#x2f;", "/")
        .replace("&amp;", "&")
}

/// Rows of an HTML table (by a substring of its opening tag) as lists of cell texts.
pub fn table_rows(html: &str, table_marker: &str) -> Vec<Vec<String>> {
    let start = html.find(table_marker).unwrap_or_else(|| panic!("no table {table_marker}"));
    let end = start + html[start..].find("</table>").unwrap();
    let table = &html[start..end];
    let mut rows = Vec::new();
    for tr in table.split("<tr").skip(1) {
        let mut cells = Vec::new();
        for (i, part) in tr.split("<t").enumerate() {
            if i == 0 || !(part.starts_with('d') || part.starts_with('h')) {
                continue;
            }
            let body = &part[part.find('>').unwrap() + 1..];
            let body = body.split("</t").next().unwrap();
            cells.push(text_of(body).trim().to_string());
        }
        rows.push(cells);
    }
    rows
}

/// All files under `dir` with their bytes, sorted by path.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    live_tree(dir).unwrap_or_else(|| panic!("a file under {} went away while it was read", dir.display()))
}

/// All files under `dir` while another process may still be writing there (serve): `None`
/// when a file or folder went away between the listing and the read, which means "not
/// settled yet", not a failure.
pub fn live_tree(dir: &Path) -> Option<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = match e {
            Ok(e) => e,
            Err(err) if err.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound) => return None,
            Err(err) => panic!("walking {}: {err}", dir.display()),
        };
        if e.file_type().is_file() {
            let bytes = match fs::read(e.path()) {
                Ok(b) => b,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
                Err(err) => panic!("reading {}: {err}", e.path().display()),
            };
            out.push((e.path().strip_prefix(dir).unwrap().display().to_string(), bytes));
        }
    }
    Some(out)
}

/// The points (circles) of each chart of a page, in page order.
pub fn chart_points(html: &str) -> Vec<usize> {
    html.split("<svg class=\"chart\"").skip(1).map(|svg| svg_points(&svg[..svg.find("</svg>").unwrap()])).collect()
}

/// Points of each chart a page carries as numbers for the browser to draw
/// (`<script type="application/json" class="chart-data">`).
pub fn chart_data_points(html: &str) -> Vec<usize> {
    html.split("<script type=\"application/json\" class=\"chart-data\">")
        .skip(1)
        .map(|rest| {
            let json: serde_json::Value = serde_json::from_str(&rest[..rest.find("</script>").unwrap()]).unwrap();
            json["series"].as_array().unwrap().iter().map(|s| s["points"].as_array().unwrap().len()).sum()
        })
        .collect()
}

/// Markers of class `point` in an SVG: an element each, or a series' one path (a subpath,
/// `M`, a marker).
pub fn svg_points(svg: &str) -> usize {
    svg.split("class=\"point\"")
        .skip(1)
        .map(|rest| {
            let element = &rest[..rest.find('>').unwrap_or(rest.len())];
            match element.split(" d=\"").nth(1) {
                Some(d) => d.split('"').next().unwrap_or("").matches('M').count(),
                None => 1,
            }
        })
        .sum()
}

/// Valid cells of `phase` with a figure, in the shipped data of run `id` (by the library).
pub fn valid_points(data: &Path, id: &str, phase: speed_matrix::format::Phase, only_c1: bool) -> usize {
    let run = speed_matrix::format::load_run_dir(&data.join("runs").join(id)).unwrap();
    let view = speed_matrix::analysis::normalize_run(&run, speed_matrix::analysis::RunSlugs::plain(&run.manifest));
    match phase {
        speed_matrix::format::Phase::Prefill => view.prefill_points().len(),
        speed_matrix::format::Phase::Decode if only_c1 => view.single_request_points().len(),
        speed_matrix::format::Phase::Decode => view
            .decode
            .iter()
            .filter(|c| c.status == speed_matrix::format::Status::Valid)
            .filter(|c| c.figures.total_tps.is_some() && c.figures.per_request_tps.is_some())
            .count(),
    }
}

/// A valid fixture's site loaded in process (its own `site.toml` where it has one), for
/// assertions on the model.
pub fn load_fixture(fixture: &str) -> speed_matrix::site::Site {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid").join(fixture);
    let out = tempfile::tempdir().unwrap();
    speed_matrix::site::Site::load(speed_matrix::site::SiteConfig {
        data_dir: root.join("data"),
        out_dir: out.path().join("public"),
        templates_dir: None,
        static_dir: None,
        settings_file: Some(root.join("site.toml")),
    })
    .unwrap()
}

/// The real binary in `dir` with extra environment variables.
pub fn site_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_site"));
    c.args(args).current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Every file under `dir`, path and text, as one string (to search for secrets).
pub fn all_files_text(dir: &Path) -> String {
    tree(dir).into_iter().map(|(p, b)| format!("{p}\n{}", String::from_utf8_lossy(&unpacked(&p, b)))).collect()
}

/// A file's bytes, unpacked where it is gzip (a run's cells file, compressed cells): what a
/// reader of the file would see.
fn unpacked(path: &str, bytes: Vec<u8>) -> Vec<u8> {
    use std::io::Read as _;
    if !path.ends_with(".gz") {
        return bytes;
    }
    let mut out = Vec::new();
    match flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut out) {
        Ok(_) => out,
        Err(_) => bytes,
    }
}

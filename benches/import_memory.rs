//! Peak memory of `site import` on large AIPerf results, against the size of the largest
//! file: a profile with a large `profile_export.jsonl`, and sweeps of many setting folders
//! (one profile each, as `aiperf profile --concurrency` sweeps write them).
//!
//! `cargo bench --bench import_memory` (release build of `site`; a few minutes). Prints a
//! table: what was imported (all of it, and its largest file), the peak resident memory of
//! the import, and that peak as a share of the input.

use std::fs;
use std::path::Path;
use std::process::Command;

const FIXTURE: &str = "tests/fixtures/peer/aiperf-0.13.0/single-c2";

/// A copy of the fixture profile whose records are repeated to about `mb` megabytes.
fn big_profile(dir: &Path, mb: usize) -> u64 {
    copy(Path::new(FIXTURE), dir);
    let records = fs::read_to_string(Path::new(FIXTURE).join("profile_export.jsonl")).unwrap();
    // Written a copy at a time: this process stays small, so the child's peak (which
    // starts from what it was forked from) is the import's own.
    let mut out = std::io::BufWriter::new(fs::File::create(dir.join("profile_export.jsonl")).unwrap());
    let mut written = 0;
    while written < mb << 20 {
        std::io::Write::write_all(&mut out, records.as_bytes()).unwrap();
        written += records.len();
    }
    written as u64
}

/// The guidellm fixture with each benchmark's requests repeated to about `mb` megabytes in
/// all (guidellm writes every request, its output text included, into one file).
fn big_guidellm(dir: &Path, mb: usize) -> u64 {
    let text = fs::read_to_string("tests/fixtures/peer/guidellm-0.8.1/benchmarks.json").unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let requests: usize =
        doc["benchmarks"].as_array().unwrap().iter().map(|b| b["requests"]["successful"].to_string().len()).sum();
    let copies = (mb << 20) / requests + 1;
    for b in doc["benchmarks"].as_array_mut().unwrap() {
        let ok = b["requests"]["successful"].as_array().unwrap().clone();
        let grown: Vec<serde_json::Value> = ok.iter().cycle().take(ok.len() * copies).cloned().collect();
        b["requests"]["successful"] = grown.into();
    }
    let path = dir.join("benchmarks.json");
    serde_json::to_writer(std::io::BufWriter::new(fs::File::create(&path).unwrap()), &doc).unwrap();
    drop(doc);
    fs::metadata(&path).unwrap().len()
}

/// A sweep of `n` setting folders, each a copy of the fixture profile at its own concurrency.
fn sweep(dir: &Path, n: usize) -> u64 {
    let profile = fs::read_to_string(Path::new(FIXTURE).join("profile_export_aiperf.json")).unwrap();
    let records = fs::read_to_string(Path::new(FIXTURE).join("profile_export.jsonl")).unwrap();
    for c in 1..=n {
        let d = dir.join(format!("concurrency_{c}"));
        fs::create_dir_all(&d).unwrap();
        let p = profile.replace("\"concurrency\": 2", &format!("\"concurrency\": {c}"));
        fs::write(d.join("profile_export_aiperf.json"), p).unwrap();
        fs::write(d.join("profile_export.jsonl"), &records).unwrap();
    }
    records.len().max(profile.len()) as u64
}

fn copy(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            fs::create_dir_all(&dest).unwrap();
        } else {
            fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Runs the import in a child process and returns its peak resident memory in KiB.
fn import_peak_kib(site: &Path, input: &Path, ws: &Path) -> u64 {
    let child = Command::new(site)
        .args(["import", input.to_str().unwrap(), "--run-id", "big", "--gpu", "G", "--force"])
        .current_dir(ws)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child fills the status and the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the import failed");
    usage.ru_maxrss as u64
}

/// Makes an input in a process of its own, so this one stays small (a child's peak memory
/// starts from what its parent held when it was forked).
fn made_apart(dir: &Path, how: &str, mb: usize) -> u64 {
    let me = std::env::current_exe().unwrap();
    let out = Command::new(me).args([how, dir.to_str().unwrap(), &mb.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--make-guidellm") {
        println!("{}", big_guidellm(Path::new(&args[2]), args[3].parse().unwrap()));
        return;
    }
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/site");
    assert!(
        Command::new("cargo").args(["build", "--release", "--quiet"]).status().unwrap().success(),
        "building the release binary"
    );
    println!("{:<34} {:>12} {:>14} {:>14} {:>8}", "import", "input", "largest file", "peak memory", "of input");
    let cases: [(&str, fn(&Path) -> u64); 4] = [
        ("one profile, 120 MB of records", |d| big_profile(d, 120)),
        ("sweep of 2,000 setting folders", |d| sweep(d, 2000)),
        ("sweep of 10,000 setting folders", |d| sweep(d, 10_000)),
        ("one guidellm file of 120 MB", |d| made_apart(d, "--make-guidellm", 120)),
    ];
    for (name, make) in cases {
        let ws = tempfile::tempdir().unwrap();
        let input = ws.path().join("input");
        fs::create_dir_all(&input).unwrap();
        let largest = make(&input);
        let total: u64 =
            walkdir::WalkDir::new(&input).into_iter().filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum();
        let peak = import_peak_kib(&site, &input, ws.path());
        println!(
            "{name:<34} {:>9.1} MB {:>11.1} MB {:>11.1} MB {:>7.1}x",
            total as f64 / 1e6,
            largest as f64 / 1e6,
            peak as f64 * 1024.0 / 1e6,
            peak as f64 * 1024.0 / total as f64
        );
    }
}

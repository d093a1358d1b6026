//! The simulated engine as a child process of the test, on a free loopback port.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

pub struct SimEngine {
    child: Child,
    pub url: String,
}

/// The simulated engine's flags, named: `SimArgs::new().steps(5, 0).flavor("llamacpp").start()`.
#[derive(Debug, Clone, Default)]
pub struct SimArgs {
    args: Vec<String>,
}

impl SimArgs {
    pub fn new() -> SimArgs {
        SimArgs::default()
    }

    /// Any flag of `site simulate-engine` and its value.
    pub fn flag(mut self, name: &str, value: impl ToString) -> SimArgs {
        self.args.push(name.to_string());
        self.args.push(value.to_string());
        self
    }

    /// A decode step of `base_ms`, plus `per_seq_ms` for each running sequence.
    pub fn steps(self, base_ms: u32, per_seq_ms: u32) -> SimArgs {
        self.step_ms(base_ms).flag("--step-ms-per-seq", per_seq_ms)
    }

    /// A decode step of `base_ms` (the per-sequence part left as the simulator has it).
    pub fn step_ms(self, base_ms: u32) -> SimArgs {
        self.flag("--step-ms-base", base_ms)
    }

    /// Which engine's responses and metrics it imitates: `vllm`, `sglang`, `llamacpp`.
    pub fn flavor(self, flavor: &str) -> SimArgs {
        self.flag("--flavor", flavor)
    }

    pub fn max_model_len(self, tokens: u32) -> SimArgs {
        self.flag("--max-model-len", tokens)
    }

    pub fn kv_tokens(self, tokens: u32) -> SimArgs {
        self.flag("--kv-tokens", tokens)
    }

    pub fn prefill_tps(self, tps: u32) -> SimArgs {
        self.flag("--prefill-tps", tps)
    }

    /// Requests served at once (llama.cpp's slots); the rest wait.
    pub fn slots(self, slots: u32) -> SimArgs {
        self.flag("--slots", slots)
    }

    /// Noise like a shared machine's at `seed`: a decode step of 8 ms + 1 ms a sequence, the
    /// server's level for its life within ±1.5%, a 2% drift over 7 s, ±10% per-step jitter.
    pub fn shared_machine_noise(self, seed: impl ToString) -> SimArgs {
        self.steps(8, 1)
            .flag("--noise-seed", seed)
            .flag("--level-pct", "1.5")
            .flag("--drift-pct", 2)
            .flag("--drift-period-s", 7)
            .flag("--jitter-pct", 10)
    }

    /// Served over TLS with this certificate and key.
    pub fn tls(self, cert: &str, key: &str) -> SimArgs {
        self.flag("--tls-cert", cert).flag("--tls-key", key)
    }

    pub fn start(self) -> SimEngine {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        SimEngine::start(&args)
    }
}

impl SimEngine {
    pub fn start(args: &[&str]) -> SimEngine {
        let mut child = Command::new(env!("CARGO_BIN_EXE_site"))
            .arg("simulate-engine")
            .args(["--lifetime-s", "300"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the simulated engine");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(
            line.starts_with("http://127.0.0.1:") || line.starts_with("https://127.0.0.1:"),
            "simulated engine said {line:?}"
        );
        SimEngine { child, url: line.trim().to_string() }
    }

    /// GET a JSON document from the simulator (e.g. `/sim/stats`).
    pub fn get_json(&self, path: &str) -> serde_json::Value {
        let addr = self.url.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        use std::io::{Read, Write};
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        let body = resp.split("\r\n\r\n").nth(1).unwrap();
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SimEngine {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Fast timing for tests: short windows, short holds.
pub const FAST: &[&str] = &[
    "--duration",
    "1.5s",
    "--warmup-hold",
    "0.3s",
    "--gauge-interval",
    "0.25s",
    "--drain-timeout",
    "10s",
    "--warmup-timeout",
    "20s",
];

pub fn bench(dir: &Path, url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_site"))
        .current_dir(dir)
        .args(["bench", "--endpoint", url, "--gpu", "Sim GPU", "--gpu-count", "1", "--max-output", "512"])
        .args(FAST)
        .args(args)
        .output()
        .unwrap()
}

/// A cell file of a run, as JSON.
/// A cell's request records as one object each, whichever shape the file holds them in
/// (schema 3: columns, a column of equal values written once and one of absent values left
/// out; schema 2: a list of records).
pub fn request_rows(cell: &serde_json::Value) -> Vec<serde_json::Value> {
    let requests = &cell["measurement"]["requests"];
    if let Some(rows) = requests.as_array() {
        return rows.clone();
    }
    let table = requests.as_object().expect("requests: columns or a list");
    let n = table["rows"].as_u64().expect("columns say how many rows") as usize;
    (0..n)
        .map(|i| {
            let row = table
                .iter()
                .filter(|(k, _)| k.as_str() != "rows")
                .map(|(k, col)| (k.clone(), col.as_array().map_or_else(|| col.clone(), |c| c[i].clone())))
                .filter(|(_, v)| !v.is_null())
                .collect();
            serde_json::Value::Object(row)
        })
        .collect()
}

/// The name a loose file of this cell has (`decode-256-c1-r2.json`): how tests name cells.
pub fn cell_name(cell: &serde_json::Value) -> String {
    let rep = match cell["repetition"].as_u64().unwrap_or(1) {
        1 => String::new(),
        r => format!("-r{r}"),
    };
    match cell["phase"].as_str().unwrap() {
        "prefill" => format!("prefill-{}{rep}.json", cell["context"]),
        _ => format!("decode-{}-c{}{rep}.json", cell["context"], cell["concurrency"]),
    }
}

fn pack_path(dir: &Path, run: &str) -> std::path::PathBuf {
    dir.join("data/runs").join(run).join("cells.jsonl.gz")
}

fn gunzip(bytes: &[u8]) -> String {
    use std::io::Read as _;
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(bytes).read_to_string(&mut text).unwrap();
    text
}

/// Every cell of a run as written, by name: the lines of its `cells.jsonl.gz` and any loose
/// files under `cells/`, each cell's JSON text.
pub fn cell_texts(dir: &Path, run: &str) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    if let Ok(bytes) = std::fs::read(pack_path(dir, run)) {
        for line in gunzip(&bytes).lines().filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            out.insert(cell_name(&v), line.to_string());
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("data/runs").join(run).join("cells")) {
        for e in entries.map(Result::unwrap) {
            let name = e.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(e.path()).unwrap();
            match name.strip_suffix(".gz") {
                Some(plain) => out.insert(plain.to_string(), gunzip(&bytes)),
                None => out.insert(name, String::from_utf8(bytes).unwrap()),
            };
        }
    }
    out
}

/// The names of a run's cells as written (`decode-256-c1.json`, ...), sorted.
pub fn cell_names(dir: &Path, run: &str) -> Vec<String> {
    cell_texts(dir, run).into_keys().collect()
}

/// Cell `name`'s JSON text as written (panics when the run has no such cell).
pub fn cell_text(dir: &Path, run: &str, name: &str) -> String {
    cell_texts(dir, run).remove(name).unwrap_or_else(|| panic!("run {run} has no cell {name}"))
}

pub fn has_cell(dir: &Path, run: &str, name: &str) -> bool {
    cell_texts(dir, run).contains_key(name)
}

/// Takes cell `name` out of a run's cells file, as if it had never been measured.
pub fn remove_cell(dir: &Path, run: &str, name: &str) {
    let path = pack_path(dir, run);
    let text = gunzip(&std::fs::read(&path).unwrap());
    let kept: Vec<&str> =
        text.lines().filter(|l| !l.is_empty() && cell_name(&serde_json::from_str(l).unwrap()) != name).collect();
    assert_eq!(kept.len() + 1, text.lines().filter(|l| !l.is_empty()).count(), "run {run} has no cell {name}");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, (kept.join("\n") + "\n").as_bytes()).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
}

/// When the cell's measurement began (its first request sent), in seconds of the bench's
/// clock: the order in which one `site bench` measured its cells.
pub fn measured_at(dir: &Path, run: &str, name: &str) -> f64 {
    let c = cell(dir, run, name);
    let send = &c["measurement"]["requests"]["send_s"];
    match send.as_array() {
        Some(all) => all.iter().map(|v| v.as_f64().unwrap()).fold(f64::INFINITY, f64::min),
        None => send.as_f64().unwrap(),
    }
}

pub fn cell(dir: &Path, run: &str, name: &str) -> serde_json::Value {
    serde_json::from_str(&cell_text(dir, run, name)).unwrap()
}

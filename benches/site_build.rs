//! `cargo bench --bench site_build`: for N = 100, 1,000 and 10,000 runs (4 in 5 synthetic
//! seed-sized imported runs, 6 contexts x 8 concurrency levels + 7 prefill cells; 1 in 5 a
//! copy of a shipped measured run with its raw records), times a cold `site build` (run
//! pages per second, peak memory), a build with no change, a build after one cell changed,
//! and `site serve`'s rebuild after one cell changed; and, for reference, the seconds the
//! filesystem takes to read the data files with nothing parsed and to write the same files
//! with nothing rendered (a cold build's floor: no build can take less than the two).
//! Each N runs in a child process of its own so its peak resident memory (VmHWM) is its own.
//! SITE_BENCH_NS=100,1000 chooses N.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use speed_matrix::format::json::to_pretty;
use speed_matrix::format::*;
use speed_matrix::format::{pack, writer};
use std::collections::BTreeSet;

use speed_matrix::site::{format_steps, input_fingerprint, up_to_date, Site, SiteConfig};
use speed_matrix::write::Sink;

/// The allocator the `site` binary uses, so the in-process figures are the binary's.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const CONTEXTS: [u32; 6] = [8192, 16384, 32768, 65536, 131072, 257024];
const CONCURRENCY: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
const PREFILL: [u32; 7] = [8192, 16384, 32768, 65536, 131072, 257024, 262144];

fn manifest(i: usize) -> RunManifest {
    RunManifest {
        schema_version: SCHEMA_VERSION,
        model: ModelInfo { id: format!("org/Model-{}", i % 20), served_name: None, revision: Some("main".into()) },
        hardware: HardwareInfo {
            kind: "Discrete GPU".into(),
            device: ["H200 SXM", "H100 SXM", "B200", "MI300X", "L40S"][i % 5].into(),
            count: [1, 2, 4, 8][i % 4],
            memory_gb: Some(141.0),
            os: Some("linux".into()),
            cpu: None,
        },
        engine: EngineInfo {
            name: ["vllm", "sglang", "llama.cpp"][i % 3].into(),
            version: format!("0.{}.0", i % 7),
            quantization: Some("BF16".into()),
            backend: Some("cuda".into()),
            repository: None,
            build: None,
            commit: None,
        },
        settings: RunSettings {
            contexts: CONTEXTS.to_vec(),
            concurrency: CONCURRENCY.to_vec(),
            prefill_contexts: PREFILL.to_vec(),
            duration_s: 30.0,
            max_output_tokens: 4096,
            decode_test: DecodeTest::FixedDuration,
            prefill_mode: PrefillMode::DecodeWarmup,
            api: None,
            kv_budget_tokens: Some(1_200_000),
            kv_budget_source: Some("synthetic".into()),
            repeat: None,
            prefill_samples: None,
            prefix_reuse_pct: None,
            turns: None,
        },
        launch_command: Some(format!("vllm serve org/Model-{} --tensor-parallel-size 4 --api-key <redacted>", i % 20)),
        bench_tool: BenchTool { name: "site bench".into(), version: "0.1.0".into() },
        origin: Origin::Imported,
        started_at: Some(format!("2026-{:02}-{:02}T{:02}:00:00Z", 1 + i % 12, 1 + i % 28, i % 24)),
        finished_at: None,
        description: None,
        server_access: None,
        paired_with: None,
        other_levels: Vec::new(),
        server_processes: Vec::new(),
        server_settings: Default::default(),
        traffic: None,
    }
}

fn cell(phase: Phase, ctx: u32, c: u32, i: usize) -> Cell {
    let scale = 1.0 + (i % 13) as f64 / 10.0;
    let fits = (c as u64) * (ctx as u64 + 4096) <= 1_200_000;
    let (status, reported, over) = match phase {
        Phase::Prefill => (
            Status::Valid,
            Some(ReportedFigures {
                prompt_tps: Some(30000.0 * scale / (1.0 + ctx as f64 / 300000.0)),
                ttft_ms: Some(ctx as f64 / 30.0),
                completed: Some(1),
                ..Default::default()
            }),
            None,
        ),
        Phase::Decode if !fits => (
            Status::OverCapacity,
            None,
            Some(OverCapacity {
                rule: CapacityRule::KvBudget,
                required_tokens: c as u64 * (ctx as u64 + 4096),
                budget_tokens: Some(1_200_000),
            }),
        ),
        Phase::Decode => {
            let per = 150.0 * scale / (1.0 + (c as f64).log2() * 0.2);
            (
                Status::Valid,
                Some(ReportedFigures {
                    total_tps: Some(per * c as f64),
                    per_request_tps: Some(per),
                    ttft_ms: Some(40.0 + c as f64 * 8.0),
                    tbt_ms: Some(1000.0 / per),
                    avg_active: Some(c as f64),
                    completed: Some(0),
                    output_tokens: Some((per * c as f64 * 30.0) as u64),
                    measured_s: Some(30.0),
                    ..Default::default()
                }),
                None,
            )
        }
    };
    Cell {
        schema_version: SCHEMA_VERSION,
        phase,
        context: ctx,
        prompt_tokens: Some(ctx - 7),
        concurrency: c,
        status,
        repetition: 1,
        server_instance: None,
        warnings: vec![],
        reported,
        measurement: None,
        over_capacity: over,
        loop_finding: None,
        error: None,
    }
}

/// The shipped runs measured by `site bench` (raw per-request records in every cell).
/// A run of 48 decode cells (6 contexts x 8 concurrency levels up to 128) and 6 prefill
/// contexts at `--repeat 3`, 1 s windows, measured by `site bench` on the simulated engine:
/// every request's records, compressed as the bench stores them. The run the site's
/// budgets are set for (at most 100 KB and 5 files a run published, 300 KB of data).
const MEASURED_48X3: &str = "benches/fixtures/measured-48x3";

/// Every run a copy of `MEASURED_48X3` (SITE_BENCH_MIX=measured; the first run is still an
/// imported one, the cell the change timings edit), or (the default) 4 in 5 seed-sized
/// imported runs and every fifth such a copy: the mix a real site of many runs has.
fn generate(data: &Path, n: usize) {
    let template = Path::new(env!("CARGO_MANIFEST_DIR")).join(MEASURED_48X3);
    let all_measured = std::env::var("SITE_BENCH_MIX").is_ok_and(|m| m == "measured");
    for i in 0..n {
        if (all_measured && i > 0) || i % 5 == 4 {
            let dir = data.join("runs").join(format!("measured-{i:05}"));
            copy_run(&template, &dir, i);
            continue;
        }
        let dir = data.join("runs").join(format!("run-{i:05}"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("run.json"), to_pretty(&manifest(i))).unwrap();
        let cells = PREFILL
            .iter()
            .map(|&p| cell(Phase::Prefill, p, 1, i))
            .chain(CONTEXTS.iter().flat_map(|&ctx| CONCURRENCY.iter().map(move |&c| cell(Phase::Decode, ctx, c, i))));
        let mut pack = pack::CellPack::default();
        for c in cells {
            pack.insert(pack::cell_key(&c), &pack::cell_line(&c));
        }
        writer::write_pack(&dir, &pack).unwrap();
    }
}

/// A copy of a run folder with its own start day.
fn copy_run(from: &Path, to: &Path, i: usize) {
    fs::create_dir_all(to).unwrap();
    fs::copy(from.join(CELLS_FILE), to.join(CELLS_FILE)).unwrap();
    let manifest = fs::read_to_string(from.join("run.json")).unwrap();
    // A model and device of twenty and five, as the imported runs have.
    let manifest = manifest
        .replacen("\"id\": \"sim/model\"", &format!("\"id\": \"sim/model-{}\"", i % 20), 1)
        .replacen("\"device\": \"Sim GPU\"", &format!("\"device\": \"Sim GPU {}\"", i % 5), 1);
    let day = format!("\"started_at\": \"2026-{:02}-{:02}T", 1 + i % 12, 1 + i % 28);
    let manifest = match manifest.find("\"started_at\": \"") {
        Some(at) => format!("{}{day}{}", &manifest[..at], &manifest[at + day.len()..]),
        None => manifest,
    };
    fs::write(to.join("run.json"), manifest).unwrap();
}

fn peak_rss_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The site of a generated folder: its `data/` built into its `public/`, default templates.
fn config_in(dir: &Path) -> SiteConfig {
    SiteConfig {
        data_dir: dir.join("data"),
        out_dir: dir.join("public"),
        templates_dir: None,
        static_dir: None,
        settings_file: None,
    }
}

/// Changes timed per serve measurement; the median is reported.
const SERVE_CHANGES: u32 = 3;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `site serve`'s rebuild in process: the site stays loaded; after one cell changes (its TTFT:
/// no run's place moves), the changed run is read again and the output rewritten in place
/// (the watcher's 30 ms settle not counted). Returns the median milliseconds from a change
/// to the rewritten output over `SERVE_CHANGES` successive changes
/// (`SITE_BENCH_SERVE_REPEAT=n` for n, to profile).
fn serve_one_change(dir: &Path, config: &SiteConfig) -> f64 {
    let (run, cell) = changed_cell(dir);
    let site = Site::load(config.clone()).unwrap();
    let mut written = speed_matrix::write::OutputIndex::default();
    site.build_in_place(&mut written).unwrap();
    let repeat = std::env::var("SITE_BENCH_SERVE_REPEAT").ok().and_then(|n| n.parse().ok()).unwrap_or(SERVE_CHANGES);
    let mut site = Some(site);
    let mut times = Vec::new();
    for n in 0..repeat.max(1) {
        edit_ttft(&cell, 2 + n);
        let t = Instant::now();
        let reloaded = site.take().unwrap().reload_runs(&BTreeSet::from([run.clone()])).unwrap();
        let report = reloaded.build_in_place(&mut written).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        eprintln!("serve, one cell changed\n{}", format_steps(&report.steps));
        site = Some(reloaded);
    }
    median(times)
}

/// `site serve` itself, the real binary with its OS watcher and 30 ms settle: milliseconds
/// from writing one cell file to the changed run page fetched again, as an open page does
/// (live reload tells it of the build over its WebSocket, it fetches itself): the median of
/// `SERVE_CHANGES` changes that move no run's place, and one change that does.
fn serve_watched(dir: &Path) -> (f64, f64) {
    use std::io::BufRead as _;
    let (run_id, cell) = changed_cell(dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_site"))
        .args(["serve", "--port", "0"])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            eprintln!("site serve: {line}");
            let _ = tx.send(line);
        }
    });
    let wait_for = |prefix: &str| loop {
        let line = rx.recv_timeout(std::time::Duration::from_secs(600)).expect("site serve went quiet");
        if line.starts_with(prefix) {
            return line;
        }
    };
    let serving = wait_for("Serving ");
    let addr = serving.split("http://").nth(1).and_then(|a| a.split('/').next()).unwrap().to_string();
    wait_for("Watching for changes");
    // What an open page does: hear the build over the socket, then fetch itself again.
    let (mut socket, _) = tungstenite::connect(format!("ws://{addr}/__build")).unwrap();
    let mut next_build = move || socket.read().unwrap();
    next_build();
    let page = format!("/runs/{run_id}/");
    let mut change = |edit: &dyn Fn(&Path)| {
        // Until serve has been quiet for a second: whatever it still had to do is done.
        while rx.recv_timeout(std::time::Duration::from_secs(1)).is_ok() {}
        let t = Instant::now();
        edit(&cell);
        next_build();
        assert!(http_get(&addr, &page).starts_with("HTTP/1.1 200"), "the run page is not served");
        t.elapsed().as_secs_f64() * 1000.0
    };
    // Changes that move no run's place (TTFT), then one that halves the cell's throughput and
    // so moves the run past many others on its leaderboard (each of their run pages shows
    // its place there).
    let small = median((0..SERVE_CHANGES).map(|n| change(&|c| edit_ttft(c, 2 + n))).collect());
    let halve = ["total_tps", "per_request_tps"];
    let large = change(&|c| edit_with(c, &halve, |v| v / 2.0));
    let _ = child.kill();
    let _ = child.wait();
    (small, large)
}

/// The whole answer to a plain `GET path` (the page a browser fetches when it reloads).
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// The child: build one generated data folder; print one line of figures: `run_pages files
/// cold_s peak_kib nochange_s onechange_s serve_ms write_floor_s site_serve_ms
/// places_move_ms render_only_s read_floor_s`.
fn one(dir: &Path) {
    let config = config_in(dir);
    // Cold: no output yet.
    let t = Instant::now();
    let fingerprint = input_fingerprint(&config);
    let mut site = Site::load(config.clone()).unwrap();
    site.fingerprint = Some(fingerprint);
    let report = site.build().unwrap();
    let (cold, cold_files) = (t.elapsed().as_secs_f64(), report.files);
    let site_weight = report.footprint.as_ref().expect("a build measures its site").total;
    eprintln!("cold build\n{}", format_steps(&report.steps));
    let peak = peak_rss_kib();
    // No change: what `site build` does first.
    let t = Instant::now();
    assert!(up_to_date(&config, input_fingerprint(&config)), "an unchanged site is not up to date");
    let nochange = t.elapsed().as_secs_f64();
    // One cell of one run changes: a full `site build`, keeping the other run pages.
    let (_, cell) = changed_cell(dir);
    edit(&cell, 1);
    let t = Instant::now();
    let mut site = Site::load(config.clone()).unwrap();
    site.fingerprint = Some(input_fingerprint(&config));
    let report = site.build().unwrap();
    let onechange = t.elapsed().as_secs_f64();
    eprintln!("one cell changed\n{}", format_steps(&report.steps));
    let serve_ms = serve_one_change(dir, &config);
    let (watched_ms, moved_ms) = serve_watched(dir);
    let read_floor = read_floor(&config.data_dir);
    let floor = write_floor(&config.out_dir);
    let render_only = render_only(&config);
    let data = files_under(&config.data_dir);
    let data_bytes: u64 = data.iter().map(|e| e.metadata().map_or(0, |m| m.len())).sum();
    println!(
        "{} {cold_files} {cold} {peak} {nochange} {onechange} {serve_ms} {floor} {watched_ms} {moved_ms} {render_only} {read_floor} {} {} {} {}",
        report.stats.run_pages,
        site_weight.bytes,
        site_weight.files,
        data_bytes,
        data.len()
    );
}

/// Every file under `root`.
fn files_under(root: &Path) -> Vec<walkdir::DirEntry> {
    walkdir::WalkDir::new(root).into_iter().filter_map(|e| e.ok()).filter(|e| e.file_type().is_file()).collect()
}

/// The filesystem's own floor for loading: seconds to read every file of the data folder
/// (on every core, nothing parsed), as a cold build's load does.
fn read_floor(data: &Path) -> f64 {
    use rayon::prelude::*;
    let files: Vec<std::path::PathBuf> = files_under(data).into_iter().map(|e| e.into_path()).collect();
    let t = Instant::now();
    let bytes: usize = files.par_iter().map(|f| fs::read(f).unwrap().len()).sum();
    let secs = t.elapsed().as_secs_f64();
    assert!(bytes > 0, "no data read from {}", data.display());
    secs
}

/// The filesystem's own floor for a cold build: seconds to write the files of `out` again
/// (same paths and sizes, on every core, nothing rendered) once `out` is removed.
fn write_floor(out: &Path) -> f64 {
    use rayon::prelude::*;
    let files: Vec<(std::path::PathBuf, usize)> = files_under(out)
        .into_iter()
        .map(|e| (e.path().strip_prefix(out).unwrap().to_path_buf(), e.metadata().unwrap().len() as usize))
        .collect();
    fs::remove_dir_all(out).unwrap();
    let to = out;
    let bytes = vec![b'x'; files.iter().map(|f| f.1).max().unwrap_or(0)];
    let t = Instant::now();
    files.par_iter().for_each(|(rel, len)| {
        let path = to.join(rel);
        if fs::write(&path, &bytes[..*len]).is_err() {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, &bytes[..*len]).unwrap();
        }
    });
    let secs = t.elapsed().as_secs_f64();
    fs::remove_dir_all(to).unwrap();
    secs
}

/// Where `render_only` puts pages: nowhere. It counts them.
#[derive(Default)]
struct Discard {
    files: std::sync::atomic::AtomicUsize,
}

impl Sink for Discard {
    fn put(&self, _rel_path: &str, _bytes: &[u8]) -> anyhow::Result<()> {
        self.files.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    fn previous_file(&self, _rel_path: &str) -> anyhow::Result<Option<Vec<u8>>> {
        Ok(None)
    }
    fn keep_files(&self, _files: &[String]) -> anyhow::Result<bool> {
        Ok(false)
    }

    fn unit_intact(&self, _key: &str, _files: &[String]) -> anyhow::Result<bool> {
        Ok(false)
    }
}

/// Seconds to load the site and render every page with nothing written: the cold build
/// less the filesystem's part.
fn render_only(config: &SiteConfig) -> f64 {
    let t = Instant::now();
    let site = Site::load(config.clone()).unwrap();
    let sink = Discard::default();
    let (steps, _) = site.render_into(&sink).unwrap();
    let secs = t.elapsed().as_secs_f64();
    eprintln!("render only\n{}", format_steps(&steps));
    eprintln!("{} files rendered", sink.files.load(std::sync::atomic::Ordering::Relaxed));
    secs
}

/// A decode cell of the first imported run, to edit.
fn changed_cell(dir: &Path) -> (String, std::path::PathBuf) {
    let runs = dir.join("data/runs");
    let mut ids: Vec<String> = fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|id| id.starts_with("run-"))
        .collect();
    ids.sort();
    (ids[0].clone(), runs.join(&ids[0]).join(CELLS_FILE))
}

/// Changes a cell's figures as a re-measured cell would: its first TTFT, total tok/s and
/// per-request tok/s each get `n` more (so its leaderboard, Pareto view and series change).
fn edit(cell: &Path, n: u32) {
    edit_with(cell, &["ttft_ms", "total_tps", "per_request_tps"], |v| v + n as f64);
}

/// Changes a cell's first TTFT by `n` ms: the run's pages, its board and its series change,
/// but no run's place on a leaderboard moves.
fn edit_ttft(cell: &Path, n: u32) {
    edit_with(cell, &["ttft_ms"], |v| v + n as f64);
}

/// Sets each of the first decode cell's figures named `keys` to `f` of it, in the run's
/// cells file `pack`, as a re-measured cell would be written.
fn edit_with(pack: &Path, keys: &[&str], f: impl Fn(f64) -> f64) {
    use std::io::Read as _;
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(fs::File::open(pack).unwrap()).read_to_string(&mut text).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let line = lines.iter_mut().find(|l| l.contains("\"phase\":\"decode\"")).unwrap();
    for key in keys {
        let key = format!("\"{key}\":");
        let at = line.find(&key).unwrap() + key.len();
        let end = at + line[at..].find([',', '}']).unwrap();
        let value: f64 = line[at..end].trim().parse().unwrap();
        *line = format!("{}{}{}", &line[..at], f(value), &line[end..]);
    }
    fs::write(pack, speed_matrix::units::gzip((lines.join("\n") + "\n").as_bytes())).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `--generate N DIR` writes a data folder to profile `--one DIR` on.
    if let Some(i) = args.iter().position(|a| a == "--generate") {
        generate(&Path::new(&args[i + 2]).join("data"), args[i + 1].parse().unwrap());
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--one") {
        one(Path::new(&args[i + 1]));
        return;
    }
    // `--cold DIR` times only a cold build (for profiling it).
    if let Some(i) = args.iter().position(|a| a == "--cold") {
        let config = config_in(Path::new(&args[i + 1]));
        let _ = fs::remove_dir_all(&config.out_dir);
        let t = Instant::now();
        let site = Site::load(config).unwrap();
        let rss = fs::read_to_string("/proc/self/status").unwrap_or_default();
        let rss = rss.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("").to_string();
        let rss = format!("{rss}, peak so far {} KiB", peak_rss_kib());
        let report = site.build().unwrap();
        eprintln!("{}\nloaded and analyzed: {rss}, peak {} KiB", format_steps(&report.steps), peak_rss_kib());
        eprintln!(
            "sizes: CellView {} RunView {} Figures {} Manifest {}",
            std::mem::size_of::<speed_matrix::analysis::CellView>(),
            std::mem::size_of::<speed_matrix::analysis::RunView>(),
            std::mem::size_of::<speed_matrix::analysis::Figures>(),
            std::mem::size_of::<RunManifest>()
        );
        println!("{:.2} s", t.elapsed().as_secs_f64());
        return;
    }
    // `--render-only DIR` times a cold build with nothing written.
    if let Some(i) = args.iter().position(|a| a == "--render-only") {
        println!("{:.2} s", render_only(&config_in(Path::new(&args[i + 1]))));
        return;
    }
    // `--floors DIR` times reading DIR's data and writing its last build's files again, with
    // nothing parsed or rendered (run `--cold DIR` first; its output is removed).
    if let Some(i) = args.iter().position(|a| a == "--floors") {
        let config = config_in(Path::new(&args[i + 1]));
        let read = read_floor(&config.data_dir);
        println!("read floor {read:.2} s, write floor {:.2} s", write_floor(&config.out_dir));
        return;
    }
    // `--fingerprint DIR` times only the inputs' fingerprint (the no-change check).
    if let Some(i) = args.iter().position(|a| a == "--fingerprint") {
        let config = config_in(Path::new(&args[i + 1]));
        for _ in 0..3 {
            let t = Instant::now();
            let f = input_fingerprint(&config);
            println!("{f:016x} {:.3} s", t.elapsed().as_secs_f64());
        }
        return;
    }
    // `--serve DIR` times only serve's rebuild (for profiling it).
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        println!("{:.1} ms", serve_one_change(Path::new(&args[i + 1]), &config_in(Path::new(&args[i + 1]))));
        return;
    }
    // `--serve-watched DIR` times only the real `site serve` after one change.
    if let Some(i) = args.iter().position(|a| a == "--serve-watched") {
        let (small, large) = serve_watched(Path::new(&args[i + 1]));
        println!("{small:.1} ms (no place moves), {large:.1} ms (one that moves the run's places)");
        return;
    }
    let ns: Vec<usize> = std::env::var("SITE_BENCH_NS")
        .unwrap_or_else(|_| "100,1000,10000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("SITE_BENCH_NS: numbers"))
        .collect();
    println!(
        "site build on N runs ({}), {} threads",
        if std::env::var("SITE_BENCH_MIX").is_ok_and(|m| m == "measured") {
            "every one a copy of a measured 48-cell run at --repeat 3"
        } else {
            "4 in 5 seed-sized imported, 1 in 5 a measured 48-cell run at --repeat 3 with raw records"
        },
        rayon::current_num_threads()
    );
    println!(
        "{:>6} {:>8} {:>9} {:>13} {:>14} {:>15} {:>12} {:>9} {:>14} {:>15} {:>12} {:>15} {:>17}",
        "N",
        "files",
        "build s",
        "read floor s",
        "write floor s",
        "render only s",
        "run pages/s",
        "peak MiB",
        "no change s",
        "one change s",
        "serve ms",
        "site serve ms",
        "places move ms"
    );
    let mut weights = Vec::new();
    for n in ns {
        let dir = tempfile::tempdir().unwrap();
        generate(&dir.path().join("data"), n);
        let out = Command::new(std::env::current_exe().unwrap()).arg("--one").arg(dir.path()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        if std::env::var_os("SITE_BENCH_STEPS").is_some() {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        }
        let line = String::from_utf8_lossy(&out.stdout);
        let f: Vec<f64> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
        let (pages, files, secs, kib, nochange, onechange, serve_ms, floor, watched_ms, moved_ms, render_only) =
            (f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10]);
        let read_floor = f[11];
        weights.push((n, f[12], f[13], f[14], f[15]));
        println!(
            "{:>6} {:>8} {:>9.2} {:>13.2} {:>14.2} {:>15.2} {:>12.0} {:>9.1} {:>14.3} {:>15.2} {:>12.0} {:>15.0} {:>17.0}",
            n,
            files,
            secs,
            read_floor,
            floor,
            render_only,
            pages / secs,
            kib / 1024.0,
            nochange,
            onechange,
            serve_ms,
            watched_ms,
            moved_ms
        );
    }
    println!();
    println!(
        "published site and data folder, in all and per run (budget: 100 KB and 5 files a run of site, 300 KB of data)"
    );
    println!(
        "{:>6} {:>12} {:>10} {:>12} {:>10} {:>12} {:>10} {:>12} {:>10}",
        "N", "site MB", "site files", "KB/run", "files/run", "data MB", "data files", "KB/run", "files/run"
    );
    for (n, site_bytes, site_files, data_bytes, data_files) in weights {
        let per = |x: f64| x / n as f64;
        println!(
            "{:>6} {:>12.1} {:>10.0} {:>12.1} {:>10.1} {:>12.1} {:>10.0} {:>12.1} {:>10.1}",
            n,
            site_bytes / 1e6,
            site_files,
            per(site_bytes) / 1e3,
            per(site_files),
            data_bytes / 1e6,
            data_files,
            per(data_bytes) / 1e3,
            per(data_files)
        );
    }
}

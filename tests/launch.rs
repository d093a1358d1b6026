//! `site bench --launch CMD --restarts K`: the bench starts the server itself (the simulated
//! engine here), spreads the repetitions over K processes, records each process and keeps
//! its output, redacted; a server that never answers or exits is a clear error with no run;
//! no process is left behind.
#![cfg(feature = "simulator")]

mod common;

use std::fs;
use std::path::Path;

use common::sim::{bench, cell};
use common::*;
use serde_json::Value;

/// Tests that measure the machine's load run alone; the others share it.
static CPU: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    CPU.write().unwrap_or_else(|e| e.into_inner())
}

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    CPU.read().unwrap_or_else(|e| e.into_inner())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ")
}

#[test]
fn repetitions_are_spread_over_launched_processes_each_recorded_and_stopped() {
    let _cpu = shared();
    let ws = tempfile::tempdir().unwrap();
    let port = free_port();
    let pids = ws.path().join("pids");
    let command = format!(
        "echo $$ >> {pids}; echo 'loading with token sk-abcdefghijklmnopqrstu1234'; exec {site} simulate-engine --port {port} --lifetime-s 120 --step-ms-base 5 --step-ms-per-seq 0",
        pids = pids.display(),
        site = env!("CARGO_BIN_EXE_site")
    );
    let url = format!("http://127.0.0.1:{port}");
    let args = ["--launch", &command, "--restarts", "2", "--repeat", "2", "--contexts", "256", "--concurrency", "1"];
    let out = bench(ws.path(), &url, &[&args[..], &["--run-id", "l"]].concat());
    assert_ok(&out);
    assert!(stderr(&out).contains("server process 2 ready after"), "{}", stderr(&out));
    let d = ws.path();
    for (name, instance) in
        [("prefill-256.json", 1), ("decode-256-c1.json", 1), ("prefill-256-r2.json", 2), ("decode-256-c1-r2.json", 2)]
    {
        assert_eq!(cell(d, "l", name)["server_instance"], instance, "{name}");
    }
    let run: Value = serde_json::from_str(&fs::read_to_string(d.join("data/runs/l/run.json")).unwrap()).unwrap();
    let processes = run["server_processes"].as_array().unwrap();
    assert_eq!(processes.iter().map(|p| p["instance"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    assert!(processes.iter().all(|p| p["ready_s"].as_f64().unwrap() > 0.0), "{run}");
    assert!(run["launch_command"].as_str().unwrap().contains("simulate-engine"), "{run}");
    let log = fs::read_to_string(d.join("data/runs/l/server.log")).unwrap();
    assert!(log.contains("== server process 1 (ready after") && log.contains("== server process 2"), "{log}");
    assert!(log.contains("loading with token") && !log.contains("sk-abcdefghijklmnopqrstu1234"), "{log}");
    assert!(!fs::read_to_string(d.join("data/runs/l/run.json")).unwrap().contains("sk-abcdefghijklmnopqrstu1234"));
    // Two processes started, none left running.
    let started: Vec<u32> = fs::read_to_string(&pids).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(started.len(), 2);
    assert!(started.iter().all(|&p| !alive(p)), "a server process was left running: {started:?}");
    // The site builds the run and checks it.
    assert_ok(&site_in(d, &["check"]));
}

#[test]
fn a_server_that_never_answers_or_exits_is_a_clear_error_and_no_run() {
    let _cpu = shared();
    let ws = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let pid = ws.path().join("pid");
    let hangs = format!("echo $$ > {}; echo 'still loading weights'; exec sleep 300", pid.display());
    let out = bench(ws.path(), &url, &["--launch", &hangs, "--launch-timeout", "2s", "--run-id", "h"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("did not answer") && err.contains("--launch-timeout"), "{err}");
    assert!(err.contains("still loading weights"), "the error quotes the server's last output: {err}");
    assert!(!ws.path().join("data/runs/h").exists(), "no run folder for a server that never answered");
    let pid: u32 = fs::read_to_string(&pid).unwrap().trim().parse().unwrap();
    assert!(!alive(pid), "the hung server was left running");
    let out = bench(ws.path(), &url, &["--launch", "echo 'port in use' >&2; exit 3", "--run-id", "x"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("exited (exit status: 3)") && stderr(&out).contains("port in use"),
        "{}",
        stderr(&out)
    );
    assert!(!ws.path().join("data/runs/x").exists());
}

#[test]
fn restarts_need_as_many_repetitions_and_a_launch() {
    let ws = tempfile::tempdir().unwrap();
    let out = bench(ws.path(), "http://127.0.0.1:9", &["--launch", "true", "--restarts", "3", "--repeat", "2"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--restarts 3 needs --repeat 3 or more"), "{}", stderr(&out));
    let out = bench(ws.path(), "http://127.0.0.1:9", &["--restarts", "2", "--repeat", "2"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--launch"), "{}", stderr(&out));
    let out = bench(ws.path(), "http://127.0.0.1:9", &["--launch", "true", "--launch-command", "vllm serve m"]);
    assert!(stderr(&out).contains("leave out --launch-command"), "{}", stderr(&out));
}

/// A run of `--repeat 3 --restarts 3` against the noisy simulator, each process at a seed
/// of its own (a server's level is drawn per process), `slowdown` percent slower. Runs of
/// one `config` share their launch command (a script in `dir` that counts its processes),
/// so they are one configuration. The noise is the verdicts bench's: a level drawn per
/// process (±1.5%), a slow drift (±2% over 7 s, its phase the clock's) and ±10% per-step
/// jitter. The drift and the jitter land in each process's one sample of a cell, so the
/// comparison over processes (one sample a process, the two-level interval) carries them in
/// its spread: the verdict procedure holds this noise, not a quieter simulator.
fn measure_restarted(dir: &Path, run: &str, config: &str, slowdown: u32) {
    let script = dir.join(format!("{config}.sh"));
    let port = if script.exists() {
        fs::read_to_string(dir.join(format!("{config}.port"))).unwrap().parse().unwrap()
    } else {
        let port = free_port();
        fs::write(dir.join(format!("{config}.port")), port.to_string()).unwrap();
        let counter = dir.join(format!("{config}.count"));
        let body = format!(
            "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; exec {site} simulate-engine --port {port} --lifetime-s 120 \
             --step-ms-base 8 --step-ms-per-seq 1 --noise-seed $((n+{seed})) --level-pct 1.5 --drift-pct 2 --drift-period-s 7 \
             --jitter-pct 10 --slowdown-pct {slowdown}\n",
            c = counter.display(),
            site = env!("CARGO_BIN_EXE_site"),
            seed = 11 + slowdown * 100
        );
        fs::write(&script, body).unwrap();
        port
    };
    let command = format!("sh {}", script.display());
    let url = format!("http://127.0.0.1:{port}");
    let args = ["--launch", &command, "--restarts", "3", "--repeat", "3", "--contexts", "256", "--concurrency", "1,4"];
    assert_ok(&bench(dir, &url, &[&args[..], &["--run-id", run]].concat()));
}

#[test]
fn runs_spread_over_processes_are_judged_on_their_processes_and_a_slowdown_is_found() {
    // Alone: another test's load during one run and not the other is a real difference
    // between the runs (the comparison would name it), not the simulated noise judged here.
    let _cpu = alone();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    measure_restarted(d, "a", "base", 0);
    measure_restarted(d, "a2", "base", 0);
    measure_restarted(d, "b", "slow", 10);
    let c = cell(d, "a", "decode-256-c4-r3.json");
    assert_eq!(c["server_instance"], 3);
    let out = site_in(d, &["diff", "a", "a2", "--out", "aa", "--fail-on-regression"]);
    let aa = fs::read_to_string(d.join("aa/comparison.csv")).unwrap_or_default();
    assert!(out.status.success(), "{}\n{}\n{aa}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("Run-to-run noise from the runs' own server processes (A 3, B 3"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("slower figures in"), "{}\n{aa}", stdout(&out));
    // The two runs of the configuration are the ones compared: no other run to pool.
    assert!(!stdout(&out).contains("is pooled with"), "{}", stdout(&out));
    let out = site_in(d, &["diff", "a", "b", "--out", "ab", "--fail-on-regression"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    // a2, the baseline's other run over processes, adds its spread to a's and b's.
    assert!(
        stdout(&out)
            .contains("The spread of each cell's repetitions is pooled with that of 1 other run of the same design"),
        "{}",
        stdout(&out)
    );
    // Both decode cells. (The simulator slows prefill alike, but a 256-token prefill takes
    // some 13 ms: on a busy machine its three samples a run may not tell 10%.)
    assert!(stdout(&out).contains("256 x 1, 256 x 4"), "{}", stdout(&out));
    let csv = fs::read_to_string(d.join("ab/comparison.csv")).unwrap();
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",processes,")), "{csv}");
}

/// A run beside a busy loop of the test's own: each cell records at least the cores the loop
/// used (its own CPU time, read by the test) as busy beyond the server, and the run page shows
/// it. The comparison's naming is checked on a copy of a run given a known amount of other
/// work, so neither check needs the machine to be idle.
#[test]
fn other_work_on_the_machine_is_recorded_and_a_comparison_names_a_difference() {
    let _cpu = alone();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let port = free_port();
    let command = format!("exec {} simulate-engine --port {port} --lifetime-s 120", env!("CARGO_BIN_EXE_site"));
    let url = format!("http://127.0.0.1:{port}");
    let args = ["--launch", &command, "--contexts", "256", "--concurrency", "1,2", "--run-id", "busy"];
    let mut burner = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
    let (t0, ticks0) = (std::time::Instant::now(), cpu_ticks(burner.id()));
    assert_ok(&bench(d, &url, &args));
    let burner_cores = (cpu_ticks(burner.id()) - ticks0) / ticks_per_s() / t0.elapsed().as_secs_f64();
    burner.kill().unwrap();
    burner.wait().unwrap();
    let c = cell(d, "busy", "decode-256-c2.json");
    let m = &c["measurement"]["machine"];
    assert!(m["cpus"].as_u64().unwrap() >= 1 && m["server_local"] == true, "{m}");
    let beyond_server = m["busy_cores"].as_f64().unwrap() - m["server_cores"].as_f64().unwrap();
    assert!(
        beyond_server >= 0.7 * burner_cores,
        "the loop used {burner_cores:.2} cores; the cell recorded {beyond_server:.2} beyond the server: {m}"
    );
    assert_ok(&site_in(d, &["build"]));
    let page = fs::read_to_string(d.join("public/runs/busy/index.html")).unwrap();
    assert!(page.contains("The load generator's machine") && page.contains("other work"), "run page");
    // The same run with a known half core more of other work in every decode cell: the
    // comparison names both figures, 0.5 apart. Both copies' other work is set from what
    // each window recorded of the client and the server (0.25 and 0.75 cores beyond them),
    // so the contrast is the test's own, whatever else the machine did meanwhile.
    for (id, other) in [("calm", 0.25), ("busier", 0.75)] {
        copy_dir(&d.join("data/runs/busy"), &d.join("data/runs").join(id));
        let file = d.join("data/runs").join(id).join("cells.jsonl.gz");
        let lines: Vec<String> = gunzip_text(&file).lines().map(|l| with_other_work(l, other)).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, (lines.join("\n") + "\n").as_bytes()).unwrap();
        fs::write(&file, gz.finish().unwrap()).unwrap();
    }
    let out = site_in(d, &["diff", "calm", "busier", "--out", "bb"]);
    assert_ok(&out);
    let said = stdout(&out);
    let line = said.lines().find(|l| l.starts_with("A ran beside")).unwrap_or_else(|| panic!("{said}"));
    let numbers: Vec<f64> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
    assert!(numbers.len() >= 2 && (numbers[0] - 0.25).abs() < 0.051 && (numbers[1] - 0.75).abs() < 0.051, "{line}");
    assert!(fs::read_to_string(d.join("bb/index.html")).unwrap().contains("cores of other work on the load generator"));
}

/// A decode cell's line with its machine's busy cores set to the client's and the server's
/// cores in its window plus `other` (a CPU more, so the sum always fits the machine).
fn with_other_work(line: &str, other: f64) -> String {
    let mut cell: Value = serde_json::from_str(line).unwrap();
    let m = &cell["measurement"];
    let window = m["window"]["end_s"].as_f64().zip(m["window"]["start_s"].as_f64()).map(|(e, s)| e - s);
    // As the run's summary reads it: no client figure is 0 cores.
    let client = window.map(|w| m["client_cpu_s"].as_f64().map_or(0.0, |cpu| cpu / w));
    if let (Some(client), Some(machine)) = (client, cell["measurement"]["machine"].as_object_mut()) {
        let (cpus, server) = (machine["cpus"].as_u64().unwrap(), machine["server_cores"].as_f64().unwrap_or(0.0));
        machine.insert("cpus".into(), Value::from(cpus + 1));
        machine.insert("busy_cores".into(), Value::from(client + server + other));
    }
    cell.to_string()
}

/// utime + stime of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().collect();
    f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf reads a constant of the system.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

fn sim_command(port: u16, extra: &str) -> String {
    format!(
        "{} simulate-engine --port {port} --lifetime-s 120 --step-ms-base 5 --step-ms-per-seq 0{extra}",
        env!("CARGO_BIN_EXE_site")
    )
}

fn pid_in(file: &Path) -> u32 {
    let t0 = std::time::Instant::now();
    loop {
        if let Ok(t) = fs::read_to_string(file) {
            if let Ok(pid) = t.trim().parse() {
                return pid;
            }
        }
        assert!(t0.elapsed().as_secs() < 30, "no pid in {}", file.display());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A server that leaves the launched command's process group (`setsid ... &`, the way a
/// daemonizing wrapper does) is found, its CPU counted, and stopped with the run.
#[test]
fn a_server_that_leaves_its_process_group_is_found_and_stopped() {
    let _cpu = shared();
    let ws = tempfile::tempdir().unwrap();
    let port = free_port();
    let pid = ws.path().join("pid");
    let command = format!(
        "setsid sh -c 'echo $$ > {pid}; exec {server}' >/dev/null 2>&1 & sleep 300",
        pid = pid.display(),
        server = sim_command(port, "")
    );
    let url = format!("http://127.0.0.1:{port}");
    let out =
        bench(ws.path(), &url, &["--launch", &command, "--contexts", "256", "--concurrency", "2", "--run-id", "d"]);
    assert_ok(&out);
    let server = pid_in(&pid);
    assert!(!alive(server), "the server that left its process group is still running: {server}");
    let c = cell(ws.path(), "d", "decode-256-c2.json");
    let cores = c["measurement"]["machine"]["server_cores"].as_f64().unwrap();
    assert!(cores > 0.0, "the server's CPU is counted though it left the group: {}", c["measurement"]["machine"]);
}

/// `--launch` refuses to start where another server already answers at the endpoint (it
/// would fail to bind, and the bench would measure the other one), naming that process.
#[test]
fn launch_refuses_an_endpoint_that_already_answers() {
    let _cpu = shared();
    let ws = tempfile::tempdir().unwrap();
    let other = common::sim::SimArgs::new().start();
    let port: u16 = other.url.rsplit(':').next().unwrap().trim_end_matches('/').parse().unwrap();
    let started = ws.path().join("started");
    let command = format!("touch {}; exec {}", started.display(), sim_command(port, ""));
    let out = bench(ws.path(), &other.url, &["--launch", &command, "--contexts", "256", "--run-id", "o"]);
    assert!(!out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("already answers at") && err.contains("(site)"), "{err}");
    assert!(!started.exists(), "nothing was launched");
    assert!(!ws.path().join("data/runs/o").exists());
}

/// SIGTERM and SIGHUP to the bench stop it as Ctrl-C does: the cells so far kept, the
/// launched server stopped, its output written beside the run.
#[test]
fn sigterm_and_sighup_stop_the_launched_server_and_keep_the_run() {
    let _cpu = shared();
    for (signal, id) in [(libc_sig::TERM, "t"), (libc_sig::HUP, "h")] {
        let ws = tempfile::tempdir().unwrap();
        let port = free_port();
        let pid = ws.path().join("pid");
        let command = format!(
            "echo $$ > {}; exec {}",
            pid.display(),
            sim_command(port, " --step-ms-base 40 --step-ms-per-seq 0")
        );
        let url = format!("http://127.0.0.1:{port}");
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_site"))
            .current_dir(ws.path())
            .args(["bench", "--endpoint", &url, "--gpu", "Sim GPU", "--gpu-count", "1", "--max-output", "512"])
            .args([
                "--launch",
                &command,
                "--contexts",
                "256",
                "--concurrency",
                "1,2,4",
                "--repeat",
                "3",
                "--run-id",
                id,
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let server = pid_in(&pid);
        let run = ws.path().join(format!("data/runs/{id}"));
        let t0 = std::time::Instant::now();
        while !fs::read_dir(&run).map(|d| d.count() > 1).unwrap_or(false) && t0.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let sent = std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
        assert!(sent.success());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains("interrupted"), "{signal}: {err}");
        assert!(!alive(server), "{signal}: the launched server was left running");
        assert!(run.join("server.log").exists(), "{signal}: the server's output is kept: {err}");
        assert!(run.join("cells.jsonl.gz").exists(), "{signal}: the cells so far are kept");
    }
}

mod libc_sig {
    pub const TERM: &str = "-TERM";
    pub const HUP: &str = "-HUP";
}

/// A key the launched server prints in its own forms, known to the bench only through the
/// server's output (read from a file by the command), is scrubbed; the key glued to a shell
/// operator in the command is taken out wherever it appears.
#[test]
fn a_launched_servers_secrets_never_reach_its_log_in_any_form() {
    let _cpu = shared();
    let ws = tempfile::tempdir().unwrap();
    let port = free_port();
    let outside = tempfile::tempdir().unwrap();
    let keyfile = outside.path().join("key");
    fs::write(&keyfile, "Zq8wKeyFromAFile42\n").unwrap();
    let command = format!(
        "true --api-key Gl9uedSecret7;K=$(cat {keyfile}); echo printed Gl9uedSecret7; echo \"non-default args: {{'api_key': ['$K'], 'port': {port}}}\"; echo \"api_key=['$K']\"; echo launching with --api-key $K; exec {server}",
        keyfile = keyfile.display(),
        server = sim_command(port, "")
    );
    let url = format!("http://127.0.0.1:{port}");
    let out =
        bench(ws.path(), &url, &["--launch", &command, "--contexts", "256", "--concurrency", "1", "--run-id", "s"]);
    assert_ok(&out);
    let log = fs::read_to_string(ws.path().join("data/runs/s/server.log")).unwrap();
    assert!(log.contains("printed <redacted>") && log.contains("launching with --api-key <redacted>"), "{log}");
    assert!(log.contains("'api_key': [<redacted>]") && log.contains("api_key=[<redacted>]"), "{log}");
    let everything = all_files_text(ws.path()) + &stderr(&out) + &stdout(&out);
    for secret in ["Gl9uedSecret7", "Zq8wKeyFromAFile42"] {
        assert!(!everything.contains(secret), "{secret} was written or printed");
    }
}

/// A launched server that exits during the run is noticed at once: the run stops naming its
/// exit status and last output, with what was measured kept for `--resume`.
#[test]
fn a_launched_server_that_exits_mid_run_is_named_at_once() {
    let _cpu = shared();
    let ws = tempfile::tempdir().unwrap();
    let port = free_port();
    let command = format!(
        "{server} & S=$!; sleep 2; kill $S; echo 'fatal: out of memory'; exit 7",
        server = sim_command(port, " --step-ms-base 40 --step-ms-per-seq 0")
    );
    let url = format!("http://127.0.0.1:{port}");
    let args =
        ["--launch", &command, "--contexts", "256,512", "--concurrency", "1,2,4,8", "--repeat", "3", "--run-id", "x"];
    let t0 = std::time::Instant::now();
    let out = bench(ws.path(), &url, &args);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("the launched server exited during the run (exit status: 7"), "{err}");
    assert!(err.contains("fatal: out of memory") && err.contains("--resume"), "{err}");
    assert!(t0.elapsed().as_secs() < 60, "noticed at once, not after a streak of unreachable cells");
}

/// `--resume` of a launched run keeps the log of the processes that measured before: this
/// session's processes are written after it.
#[test]
fn resuming_a_launched_run_keeps_the_earlier_processes_log() {
    let _cpu = shared();
    let ws = tempfile::tempdir().unwrap();
    let port = free_port();
    let command = format!("echo \"session $SESSION_MARK\"; exec {}", sim_command(port, ""));
    let url = format!("http://127.0.0.1:{port}");
    let args = ["--launch", &command, "--contexts", "256", "--concurrency", "1", "--run-id", "r"];
    let run = |extra: &[&str], mark: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_site"))
            .current_dir(ws.path())
            .env("SESSION_MARK", mark)
            .args(["bench", "--endpoint", &url, "--gpu", "Sim GPU", "--gpu-count", "1", "--max-output", "512"])
            .args(common::sim::FAST)
            .args(args)
            .args(extra)
            .output()
            .unwrap()
    };
    assert_ok(&run(&[], "first"));
    let resumed = run(&["--resume", "--repeat", "2", "--restarts", "2"], "second");
    assert_ok(&resumed);
    // Repetition 1 is on disk: the process started is repetition 2's, none only to discover.
    let said = stderr(&resumed);
    assert!(said.contains("starting server process 2") && !said.contains("starting server process 1"), "{said}");
    let log = fs::read_to_string(ws.path().join("data/runs/r/server.log")).unwrap();
    let (first, second) = (log.find("session first").unwrap(), log.find("session second").unwrap());
    assert!(first < log.find("== resumed").unwrap() && log.find("== resumed").unwrap() < second, "{log}");
}

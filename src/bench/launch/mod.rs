//! `site bench --launch CMD`: the server under test started by the bench itself, once per
//! server process the repetitions are spread over (`--restarts K`), so that a run measures
//! the noise between processes and not only inside one.
//!
//! Each process runs in a process group of its own, marked so that whatever it starts is
//! found wherever it goes ([`tree`]: `setsid`, `nohup ... &`, a double fork), and is stopped
//! whole: SIGTERM, then SIGKILL after a grace period, and a warning naming any process that
//! survives. Its output comes down a pipe, scrubbed line by line and bounded, in memory
//! ([`output`]). The bench refuses to launch where something already answers at the
//! endpoint (it would measure that instead), and notices at once when the server exits.
//! Dropping a `ServerProcess` kills all of it, so no exit path (an error, Ctrl-C, SIGTERM,
//! SIGHUP) leaves a server behind; the first process also gets SIGKILL from the kernel when
//! the bench itself is killed (a parent-death signal).

mod output;
pub mod tree;

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::client::http::HttpClient;
use super::discover::{self, ServerInfo};
pub use output::MAX_LOG_BYTES;
use output::{Output, Scrub};
use tree::ServerTree;

/// How long a stopped server has to exit after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// The server's last output lines an error quotes when it never became ready.
const TAIL_LINES: usize = 20;

/// How the bench starts and stops the server.
#[derive(Debug, Clone)]
pub struct LaunchSettings {
    /// Run by `/bin/sh -c`, as typed (its secrets are redacted wherever it is recorded).
    pub command: String,
    /// Server processes the repetitions are spread over.
    pub restarts: u32,
    /// How long a process may take to answer at the endpoint.
    pub ready_timeout: Duration,
}

/// The server process of repetition `rep` (1-based) of `repeat` spread over `restarts`
/// processes, in order: repetitions 1..=repeat in `restarts` runs of equal length (the
/// earlier ones longer by one where they do not divide).
pub fn instance_of(rep: u32, repeat: u32, restarts: u32) -> u32 {
    let k = restarts.clamp(1, repeat.max(1));
    ((rep.clamp(1, repeat.max(1)) - 1) * k / repeat.max(1)) + 1
}

/// One started server process and what it started.
pub struct ServerProcess {
    pub instance: u32,
    child: tokio::process::Child,
    tree: ServerTree,
    output: Output,
    /// Seconds from start until the endpoint answered.
    pub ready_s: f64,
    /// Processes that outlived SIGKILL, as `pid (name)`.
    pub survivors: Vec<String>,
}

impl ServerProcess {
    /// Starts `settings.command` and waits until the endpoint answers as a server does
    /// (`discover`), the process exits, or the timeout passes; the last two are errors that
    /// quote the server's last output lines, and leave no process behind.
    pub async fn start(
        settings: &LaunchSettings,
        instance: u32,
        client: &HttpClient,
        scrub: Scrub,
        interrupt: &tokio::sync::watch::Receiver<bool>,
    ) -> Result<(ServerProcess, ServerInfo)> {
        refuse_if_answering(client).await?;
        let mut process = ServerProcess::spawn(settings, instance, scrub)?;
        let t = Instant::now();
        eprintln!("starting server process {instance} (--launch)");
        loop {
            if *interrupt.borrow() {
                process.stop().await;
                bail!("interrupted");
            }
            if let Some(status) = process.child.try_wait()? {
                process.stop().await;
                bail!(
                    "the server (--launch) exited ({status}) before it answered at {}; its last output: {}",
                    client.endpoint.display(),
                    process.output.last_lines(TAIL_LINES)
                );
            }
            let probe = tokio::time::timeout(Duration::from_secs(5), discover::discover(client)).await;
            if let Ok(Ok(info)) = probe {
                process.ready_s = t.elapsed().as_secs_f64();
                process.check_answering_is_ours(client).await?;
                eprintln!("server process {instance} ready after {:.1} s", process.ready_s);
                return Ok((process, info));
            }
            if t.elapsed() >= settings.ready_timeout {
                let tail = process.output.last_lines(TAIL_LINES);
                process.stop().await;
                bail!(
                    "the server (--launch) did not answer at {} within {} s (--launch-timeout); its last output: {tail}",
                    client.endpoint.display(),
                    settings.ready_timeout.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    fn spawn(settings: &LaunchSettings, instance: u32, scrub: Scrub) -> Result<ServerProcess> {
        let (reader, writer) = std::io::pipe().context("creating a pipe for the server's output")?;
        let mark = tree::new_mark();
        let mut command = tokio::process::Command::new("/bin/sh");
        command.arg("-c").arg(&settings.command).stdin(Stdio::null()).env(tree::MARK_VAR, &mark);
        command.stdout(Stdio::from(writer.try_clone()?)).stderr(Stdio::from(writer));
        command.process_group(0).kill_on_drop(true);
        // SAFETY: between fork and exec only prctl(2), which is async-signal-safe.
        #[cfg(target_os = "linux")]
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                Ok(())
            });
        }
        let child = command.spawn().context("starting the server (--launch)")?;
        // Our copies of the pipe's writing end went with `command`: the reader sees its end
        // when the server's processes have all closed theirs.
        drop(command);
        let root = child.id().map_or(0, |id| id as i32);
        let output = Output::read_from(reader, scrub);
        Ok(ServerProcess {
            instance,
            child,
            tree: ServerTree { mark, root },
            output,
            ready_s: 0.0,
            survivors: Vec::new(),
        })
    }

    /// Where the endpoint is on this machine, the process listening there must be one the
    /// launch command started (not one that was there first and took the port).
    async fn check_answering_is_ours(&mut self, client: &HttpClient) -> Result<()> {
        if !client.endpoint.is_loopback() {
            return Ok(());
        }
        let listening = tree::listeners(client.endpoint.port);
        let ours = self.tree.pids();
        if listening.is_empty() || listening.iter().any(|(pid, _)| ours.contains(pid)) {
            return Ok(());
        }
        self.stop().await;
        bail!(
            "the process answering at {} is {}, not one that --launch started; stop it or launch on another port",
            client.endpoint.display(),
            describe(&listening)
        )
    }

    /// Its output so far (the last `MAX_LOG_BYTES`), scrubbed.
    pub fn output(&self) -> String {
        self.output.text()
    }

    /// The exit status of its first process where it has exited, with its last output.
    pub fn exited(&mut self) -> Option<String> {
        let status = self.child.try_wait().ok()??;
        Some(format!("{status}; its last output: {}", self.output.last_lines(TAIL_LINES)))
    }

    /// SIGTERM to all its processes, then SIGKILL after `STOP_GRACE`; waits for them.
    pub async fn stop(&mut self) {
        signal_group(self.tree.root, libc::SIGTERM);
        let tree = self.tree.clone();
        self.survivors = tokio::task::spawn_blocking(move || tree.stop(STOP_GRACE)).await.unwrap_or_default();
        signal_group(self.tree.root, libc::SIGKILL);
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        self.output.ended_within(Duration::from_secs(1)).await;
        if !self.survivors.is_empty() {
            eprintln!(
                "warning: server process {} left processes that could not be stopped: {}",
                self.instance,
                self.survivors.join(", ")
            );
        }
    }

    /// Its processes, for their CPU time.
    pub fn tree(&self) -> &ServerTree {
        &self.tree
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        signal_group(self.tree.root, libc::SIGKILL);
        for pid in self.tree.pids() {
            // SAFETY: kill(2) on a process id; no memory involved.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

fn signal_group(group: i32, signal: i32) {
    if group > 0 {
        // SAFETY: kill(2) with a negative pid signals the process group; no memory involved.
        unsafe {
            libc::kill(-group, signal);
        }
    }
}

/// `--launch` starts a server where none answers: with one there already, the new one fails
/// to bind and the bench would measure the old one.
async fn refuse_if_answering(client: &HttpClient) -> Result<()> {
    let e = &client.endpoint;
    let connect = tokio::net::TcpStream::connect((e.host.as_str(), e.port));
    if !matches!(tokio::time::timeout(Duration::from_secs(2), connect).await, Ok(Ok(_))) {
        return Ok(());
    }
    let holder = match e.is_loopback().then(|| tree::listeners(e.port)).unwrap_or_default() {
        l if l.is_empty() => String::new(),
        l => format!(" ({})", describe(&l)),
    };
    bail!(
        "something already answers at {}{holder}: --launch would measure it rather than the server it starts; stop it, or measure it without --launch",
        e.display()
    )
}

/// `process 123 (name)`, for each.
fn describe(processes: &[(i32, String)]) -> String {
    let names: Vec<String> = processes.iter().map(|(pid, name)| format!("process {pid} ({name})")).collect();
    names.join(", ")
}

/// The server processes of one run: the one running now, and what each one started said.
pub struct Launcher {
    settings: LaunchSettings,
    /// The API key and headers, and what the launch command's redaction took out of it.
    scrubber: std::sync::Arc<crate::redact::Scrubber>,
    current: Option<ServerProcess>,
    /// Each process stopped: its instance, seconds to ready, and its output.
    stopped: Vec<(u32, f64, String)>,
}

impl Launcher {
    pub fn new(settings: LaunchSettings, mut secrets: Vec<String>) -> Result<Launcher> {
        secrets.extend(crate::redact::command_secrets(&settings.command));
        tree::become_subreaper();
        Ok(Launcher {
            settings,
            scrubber: std::sync::Arc::new(crate::redact::Scrubber::new(secrets)),
            current: None,
            stopped: Vec::new(),
        })
    }

    pub fn settings(&self) -> &LaunchSettings {
        &self.settings
    }

    /// The process running now.
    pub fn instance(&self) -> Option<u32> {
        self.current.as_ref().map(|p| p.instance)
    }

    /// Its processes (for their CPU time).
    pub fn tree(&self) -> Option<ServerTree> {
        self.current.as_ref().map(|p| p.tree().clone())
    }

    /// The running process's exit, where it exited: its status and last output.
    pub fn exited(&mut self) -> Option<String> {
        self.current.as_mut()?.exited()
    }

    /// A line of the server's output with every known secret and anything secret-shaped
    /// taken out.
    fn line_scrubber(&self) -> Scrub {
        let known = self.scrubber.clone();
        std::sync::Arc::new(move |line: &str| crate::redact::scrub_log_line(&known.scrub(line)).into_owned())
    }

    /// Server process `instance` running and ready: the one running already, or the one
    /// running stopped and a new one started. `Some` with what it said when one started.
    pub async fn ensure(
        &mut self,
        instance: u32,
        client: &HttpClient,
        interrupt: &tokio::sync::watch::Receiver<bool>,
    ) -> Result<Option<ServerInfo>> {
        if self.instance() == Some(instance) {
            return Ok(None);
        }
        self.stop().await;
        let (process, info) =
            ServerProcess::start(&self.settings, instance, client, self.line_scrubber(), interrupt).await?;
        self.current = Some(process);
        Ok(Some(info))
    }

    /// Stops the process running, keeping what it said.
    pub async fn stop(&mut self) {
        if let Some(mut p) = self.current.take() {
            p.stop().await;
            self.stopped.push((p.instance, p.ready_s, p.output()));
        }
    }

    /// Every process started, by instance (a resumed run's later start of an instance
    /// replaces the earlier one's record).
    pub fn processes(&self, earlier: &[crate::format::ServerProcess]) -> Vec<crate::format::ServerProcess> {
        let mut by_instance: std::collections::BTreeMap<u32, f64> =
            earlier.iter().map(|p| (p.instance, p.ready_s)).collect();
        for &(instance, ready_s, _) in &self.stopped {
            by_instance.insert(instance, ready_s);
        }
        // Numbered 1, 2, ... with none missing: a process that never started has no record.
        by_instance
            .into_iter()
            .enumerate()
            .take_while(|(i, (instance, _))| *instance as usize == i + 1)
            .map(|(_, (instance, ready_s))| crate::format::ServerProcess {
                instance,
                ready_s: (ready_s * 1000.0).round() / 1000.0,
            })
            .collect()
    }

    /// What every stopped process said, each under a heading, secrets taken out.
    pub fn log(&self) -> String {
        let mut out = String::new();
        for (instance, ready_s, text) in &self.stopped {
            out.push_str(&format!("== server process {instance} (ready after {ready_s:.1} s)\n"));
            out.push_str(text);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetitions_spread_over_processes_in_order() {
        let of = |repeat, restarts| (1..=repeat).map(|r| instance_of(r, repeat, restarts)).collect::<Vec<_>>();
        assert_eq!(of(3, 3), [1, 2, 3]);
        assert_eq!(of(4, 2), [1, 1, 2, 2]);
        assert_eq!(of(5, 2), [1, 1, 1, 2, 2]);
        assert_eq!(of(3, 1), [1, 1, 1]);
        // More processes than repetitions: one each.
        assert_eq!(of(2, 5), [1, 2]);
    }
}

//! `site bench --launch CMD`: the server under test started by the bench itself, once per
//! server process the repetitions are spread over (`--restarts K`), so that a run measures
//! the noise between processes and not only inside one. Each process runs in a process
//! group of its own (a shell and what it starts), its output goes to a file of ours, and it
//! is stopped with SIGTERM, then SIGKILL after a grace period; dropping a `ServerProcess`
//! kills the group, so no exit path (an error, Ctrl-C) leaves a server behind.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::client::http::HttpClient;
use super::discover::{self, ServerInfo};

/// How long a stopped server has to exit after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// The server's last output lines an error quotes when it never became ready.
const TAIL_LINES: usize = 20;
/// The most of one process's output kept in the run folder (its end).
pub const MAX_LOG_BYTES: u64 = 1 << 20;

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

/// One started server process.
pub struct ServerProcess {
    pub instance: u32,
    child: tokio::process::Child,
    /// Its process group (the child's pid).
    group: i32,
    log: PathBuf,
    /// Seconds from start until the endpoint answered.
    pub ready_s: f64,
}

impl ServerProcess {
    /// Starts `settings.command` and waits until the endpoint answers as a server does
    /// (`discover`), the process exits, or the timeout passes; the last two are errors that
    /// quote the server's last output lines, and leave no process behind.
    pub async fn start(
        settings: &LaunchSettings,
        instance: u32,
        client: &HttpClient,
        log_dir: &std::path::Path,
        scrub: &dyn Fn(&str) -> String,
        interrupt: &tokio::sync::watch::Receiver<bool>,
    ) -> Result<(ServerProcess, ServerInfo)> {
        let log = log_dir.join(format!("server-{instance}.log"));
        let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut command = tokio::process::Command::new("/bin/sh");
        command.arg("-c").arg(&settings.command).stdin(Stdio::null());
        command.stdout(Stdio::from(out.try_clone()?)).stderr(Stdio::from(out));
        command.process_group(0).kill_on_drop(true);
        let child = command.spawn().context("starting the server (--launch)")?;
        let group = child.id().map_or(0, |id| id as i32);
        let mut process = ServerProcess { instance, child, group, log, ready_s: 0.0 };
        let t = Instant::now();
        eprintln!("starting server process {instance} (--launch)");
        loop {
            if *interrupt.borrow() {
                process.stop().await;
                bail!("interrupted");
            }
            if let Some(status) = process.child.try_wait()? {
                bail!(
                    "the server (--launch) exited ({status}) before it answered at {}; its last output: {}",
                    client.endpoint.display(),
                    scrub(&process.tail())
                );
            }
            let probe = tokio::time::timeout(Duration::from_secs(5), discover::discover(client)).await;
            if let Ok(Ok(info)) = probe {
                process.ready_s = t.elapsed().as_secs_f64();
                eprintln!("server process {instance} ready after {:.1} s", process.ready_s);
                return Ok((process, info));
            }
            if t.elapsed() >= settings.ready_timeout {
                let tail = scrub(&process.tail());
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

    /// The last lines of its output.
    fn tail(&self) -> String {
        let text = read_end(&self.log, 64 * 1024).unwrap_or_default();
        // One line for the terminal (an error is printed on one line): " | " between them.
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join(" | ")
    }

    /// Its output so far (the last `MAX_LOG_BYTES`).
    pub fn output(&self) -> String {
        read_end(&self.log, MAX_LOG_BYTES).unwrap_or_default()
    }

    /// SIGTERM to its group, then SIGKILL after `STOP_GRACE`; waits for it.
    pub async fn stop(&mut self) {
        signal_group(self.group, libc::SIGTERM);
        if tokio::time::timeout(STOP_GRACE, self.child.wait()).await.is_err() {
            signal_group(self.group, libc::SIGKILL);
            let _ = self.child.wait().await;
        }
        // What the shell started and left running.
        signal_group(self.group, libc::SIGKILL);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        signal_group(self.group, libc::SIGKILL);
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

/// The server processes of one run: the one running now, and what each one started said.
pub struct Launcher {
    settings: LaunchSettings,
    log_dir: tempfile::TempDir,
    /// The API key and headers, and what the launch command's redaction took out of it.
    scrubber: crate::redact::Scrubber,
    current: Option<ServerProcess>,
    /// Each process stopped: its instance, seconds to ready, and its output.
    stopped: Vec<(u32, f64, String)>,
}

impl Launcher {
    pub fn new(settings: LaunchSettings, mut secrets: Vec<String>) -> Result<Launcher> {
        secrets.extend(command_secrets(&settings.command));
        let log_dir = tempfile::tempdir().context("creating a folder for the server's output")?;
        Ok(Launcher {
            settings,
            log_dir,
            scrubber: crate::redact::Scrubber::new(secrets),
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

    /// Its process group (for its CPU time).
    pub fn group(&self) -> Option<i32> {
        self.current.as_ref().map(|p| p.group).filter(|g| *g > 0)
    }

    /// Text from the server with every known secret taken out.
    pub fn scrub(&self, text: &str) -> String {
        let known = self.scrubber.scrub(text);
        known.lines().map(|l| crate::redact::scrub_text(l).into_owned()).collect::<Vec<_>>().join("\n")
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
        let scrub = |t: &str| self.scrub(t);
        let (process, info) =
            ServerProcess::start(&self.settings, instance, client, self.log_dir.path(), &scrub, interrupt).await?;
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
            out.push_str(&self.scrub(text));
            out.push('\n');
        }
        out
    }
}

/// What the launch command's redaction takes out of it (`--api-key=sk-...` gives the word
/// and its value): the server may print them back.
fn command_secrets(command: &str) -> Vec<String> {
    let redacted: std::collections::HashSet<String> =
        shlex::split(&crate::redact::redact_command(command)).unwrap_or_default().into_iter().collect();
    let mut out = Vec::new();
    for word in shlex::split(command).unwrap_or_default().into_iter().filter(|w| !redacted.contains(w)) {
        if let Some((_, value)) = word.split_once('=') {
            out.push(value.to_string());
        }
        out.push(word);
    }
    out.retain(|w| w.len() >= 4);
    out
}

/// The last `max` bytes of `path` as text (from a line start where it was cut).
fn read_end(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let from = len.saturating_sub(max);
    f.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    f.take(max).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(match (from > 0, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_string(),
        _ => text,
    })
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

    #[test]
    fn the_secrets_the_command_redaction_takes_out_are_scrubbed_from_the_output() {
        let secrets = command_secrets(
            "vllm serve m --api-key sk-abcdefghijklmnop1234 --port 8000 --hf-token=hf_secret_value_0123",
        );
        assert!(secrets.contains(&"sk-abcdefghijklmnop1234".to_string()), "{secrets:?}");
        assert!(secrets.contains(&"hf_secret_value_0123".to_string()), "{secrets:?}");
        assert!(!secrets.iter().any(|s| s == "8000" || s == "serve"), "{secrets:?}");
    }

    #[test]
    fn the_end_of_a_long_output_starts_at_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, "first line\nsecond line\nthird\n").unwrap();
        assert_eq!(read_end(&p, 13).unwrap(), "third\n");
        assert_eq!(read_end(&p, 1000).unwrap(), "first line\nsecond line\nthird\n");
    }
}

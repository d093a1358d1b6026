//! The processes a launch command started, wherever they went: every one carries a mark in
//! its environment (inherited through `setsid`, `nohup`, a double fork), the bench is the
//! subreaper of whatever they leave orphaned, and the descendants of the first process are
//! counted too (one that cleared its environment). Read from Linux's `/proc`; elsewhere only
//! the process group is known.

use std::fs;
use std::time::{Duration, Instant};

/// The environment variable that marks a launched server's processes.
pub const MARK_VAR: &str = "SPEED_MATRIX_LAUNCH";

/// One launched server's processes: its mark and its first process (the shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTree {
    pub mark: String,
    pub root: i32,
}

/// A process found on the machine.
#[derive(Debug, Clone, PartialEq)]
struct Proc {
    pid: i32,
    ppid: i32,
    zombie: bool,
    /// utime + stime, in clock ticks.
    ticks: f64,
    name: String,
}

/// A fresh mark, unique on this machine while the bench runs.
pub fn new_mark() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// Orphans of the launched command (a server started with `setsid ... &`) become the bench's
/// children rather than init's, so they can be found, stopped and reaped.
pub fn become_subreaper() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer flag; no memory involved.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

impl ServerTree {
    /// Every live process of this server.
    fn members(&self) -> Vec<Proc> {
        let all = processes();
        let mut ours: Vec<i32> = all
            .iter()
            .filter(|p| p.pid == self.root || (!p.zombie && has_mark(p.pid, &self.mark)))
            .map(|p| p.pid)
            .collect();
        // Descendants of any of them, by parent, to a fixed point.
        loop {
            let more: Vec<i32> =
                all.iter().filter(|p| !ours.contains(&p.pid) && ours.contains(&p.ppid)).map(|p| p.pid).collect();
            if more.is_empty() {
                break;
            }
            ours.extend(more);
        }
        all.into_iter().filter(|p| ours.contains(&p.pid)).collect()
    }

    /// Process ids of its live processes.
    pub fn pids(&self) -> Vec<i32> {
        self.members().into_iter().filter(|p| !p.zombie).map(|p| p.pid).collect()
    }

    /// CPU seconds of its live processes.
    pub fn cpu_s(&self) -> f64 {
        self.members().iter().filter(|p| !p.zombie).map(|p| p.ticks).sum::<f64>() / ticks_per_s()
    }

    /// SIGTERM to every process, SIGKILL to what is left after `grace`; what could not be
    /// stopped, as `pid (name)`.
    pub fn stop(&self, grace: Duration) -> Vec<String> {
        self.signal(libc::SIGTERM);
        if !self.wait_gone(grace) {
            self.signal(libc::SIGKILL);
            self.wait_gone(Duration::from_secs(2));
        }
        self.members().into_iter().filter(|p| !p.zombie).map(|p| format!("{} ({})", p.pid, p.name)).collect()
    }

    fn signal(&self, signal: i32) {
        for p in self.members().iter().filter(|p| !p.zombie) {
            // SAFETY: kill(2) on a process id; no memory involved.
            unsafe {
                libc::kill(p.pid, signal);
            }
        }
    }

    /// Whether every process exited within `limit`; reaps the orphans that were ours.
    fn wait_gone(&self, limit: Duration) -> bool {
        let t = Instant::now();
        loop {
            let left: Vec<Proc> = self.members();
            for p in left.iter().filter(|p| p.zombie && p.pid != self.root) {
                reap(p.pid);
            }
            if left.iter().all(|p| p.zombie) || t.elapsed() >= limit {
                return left.iter().all(|p| p.zombie);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Collects an orphan that became our child (the first process is tokio's to wait for).
fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid on one pid with WNOHANG; `status` is a valid out pointer.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}

fn has_mark(pid: i32, mark: &str) -> bool {
    let Ok(env) = fs::read(format!("/proc/{pid}/environ")) else { return false };
    let want = format!("{MARK_VAR}={mark}");
    env.split(|b| *b == 0).any(|v| v == want.as_bytes())
}

fn processes() -> Vec<Proc> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter_map(|pid| fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|t| parse_stat(pid, &t)))
        .collect()
}

/// A `/proc/<pid>/stat` line: the name in parentheses may hold spaces and parentheses, so
/// fields are counted after its last `)`.
fn parse_stat(pid: i32, text: &str) -> Option<Proc> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(Proc { pid, ppid: f.get(1)?.parse().ok()?, zombie: matches!(f.first(), Some(&"Z" | &"X")), ticks, name })
}

/// Clock ticks a second, the unit of `/proc`'s CPU times.
pub(crate) fn ticks_per_s() -> f64 {
    // SAFETY: sysconf reads a constant of the system.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The processes listening on TCP `port` on this machine, as `(pid, name)`: the socket's
/// inode from `/proc/net/tcp{,6}`, then the process holding it. Empty where it cannot be
/// read (another user's process, another network namespace).
pub fn listeners(port: u16) -> Vec<(i32, String)> {
    let inodes: Vec<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| fs::read_to_string(p).ok())
        .flat_map(|t| listening_inodes(&t, port))
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let sockets: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    processes()
        .into_iter()
        .filter(|p| {
            fs::read_dir(format!("/proc/{}/fd", p.pid))
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .any(|e| fs::read_link(e.path()).is_ok_and(|l| sockets.iter().any(|s| l.as_os_str() == s.as_str())))
        })
        .map(|p| (p.pid, p.name))
        .collect()
}

/// Inodes of the sockets in LISTEN state (0A) on `port` in a `/proc/net/tcp` table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let local_port = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
            (local_port == port && *f.get(3)? == "0A").then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_parentheses_in_the_name() {
        let line = "4242 (llama (x) y) Z 17 4242 4242 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 8 0";
        let p = parse_stat(4242, line).unwrap();
        assert_eq!((p.ppid, p.zombie, p.ticks, p.name.as_str()), (17, true, 280.0, "llama (x) y"));
    }

    #[test]
    fn listening_sockets_on_a_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5555 1\n   1: 0100007F:1F40 0100007F:D2A2 01 00000000:00000000 00:00000000 00000000     0        0 6666 1\n";
        assert_eq!(listening_inodes(table, 8000), [5555]);
        assert!(listening_inodes(table, 8001).is_empty());
    }

    #[test]
    fn a_listener_of_this_process_is_found() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let found = listeners(port);
        assert_eq!(found.iter().map(|(pid, _)| *pid).collect::<Vec<_>>(), [std::process::id() as i32]);
    }
}

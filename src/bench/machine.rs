//! The load on the machine the bench runs on, read from Linux's `/proc` at a window's
//! edges: every CPU's busy time (`/proc/stat`), the server's own processes where the bench
//! started them (every process the launch command started, `launch::tree`), the load
//! average and the CPUs' clock. Elsewhere (no `/proc`) nothing is recorded.

use std::fs;

use crate::format::MachineLoad;

/// The machine's counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    cpus: u32,
    /// Seconds of busy CPU time since boot, all CPUs.
    busy_s: f64,
    /// CPU seconds of the launched server's processes, where one is given.
    server_s: Option<f64>,
}

/// Now; `server` is the launched server's processes.
pub fn snapshot(server: Option<&super::launch::tree::ServerTree>) -> Option<Snapshot> {
    let (cpus, busy_ticks) = parse_stat(&fs::read_to_string("/proc/stat").ok()?)?;
    let server_s = server.map(|t| t.cpu_s());
    Some(Snapshot { cpus, busy_s: busy_ticks / super::launch::tree::ticks_per_s(), server_s })
}

/// Between two snapshots `window_s` apart.
pub fn between(open: Snapshot, close: Snapshot, window_s: f64, server_local: bool) -> Option<MachineLoad> {
    if !(window_s > 0.0) {
        return None;
    }
    let rate = |a: f64, b: f64| ((b - a) / window_s).clamp(0.0, f64::from(close.cpus));
    Some(MachineLoad {
        cpus: close.cpus,
        busy_cores: round3(rate(open.busy_s, close.busy_s)),
        server_cores: open.server_s.zip(close.server_s).map(|(a, b)| round3(rate(a, b))),
        server_local,
        load_average: fs::read_to_string("/proc/loadavg").ok().and_then(|t| parse_loadavg(&t)),
        cpu_mhz: cpu_mhz(),
    })
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// (logical CPUs, busy ticks of all of them) from `/proc/stat`: user, nice, system, irq,
/// softirq and steal (guest time is inside user); idle and iowait are not busy.
fn parse_stat(text: &str) -> Option<(u32, f64)> {
    let mut lines = text.lines();
    let total = lines.next()?.strip_prefix("cpu ")?;
    let v: Vec<f64> = total.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0.0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    let cpus = lines.filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)).count();
    (v.len() >= 4 && cpus > 0).then_some((cpus as u32, busy))
}

/// The 1-minute load average; a reading beyond what a machine can have (a broken or hostile
/// `/proc`) is recorded as absent, never allowed to stop a measurement.
fn parse_loadavg(text: &str) -> Option<f64> {
    const MAX_LOAD: f64 = 1.0e6;
    text.split_whitespace().next()?.parse().ok().filter(|v: &f64| v.is_finite() && (0.0..=MAX_LOAD).contains(v))
}

/// The mean of the CPUs' current clocks (`scaling_cur_freq`, kHz), in MHz.
fn cpu_mhz() -> Option<f64> {
    let dir = fs::read_dir("/sys/devices/system/cpu").ok()?;
    let khz: Vec<f64> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| fs::read_to_string(e.path().join("cpufreq/scaling_cur_freq")).ok())
        .filter_map(|t| t.trim().parse::<f64>().ok())
        // kHz: at most 1 THz, else the reading is not a clock.
        .filter(|v| v.is_finite() && *v > 0.0 && *v < 1.0e9)
        .collect();
    (!khz.is_empty()).then(|| (khz.iter().sum::<f64>() / khz.len() as f64 / 1000.0).round())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_counts_user_system_interrupts_and_steal_not_idle() {
        let stat =
            "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\ncpu1 50 3 25 500 10 2 1 1 0 0\nintr 5\n";
        assert_eq!(parse_stat(stat), Some((2, 161.0)));
        assert_eq!(parse_stat("intr 5\n"), None);
    }

    #[test]
    fn rates_over_the_window_are_bounded_by_the_cpus() {
        let a = Snapshot { cpus: 2, busy_s: 10.0, server_s: Some(1.0) };
        let b = Snapshot { cpus: 2, busy_s: 13.0, server_s: Some(2.0) };
        let m = between(a, b, 2.0, true).unwrap();
        assert_eq!((m.busy_cores, m.server_cores), (1.5, Some(0.5)));
        assert_eq!(m.other_cores(0.25), Some(0.75));
        let wild = Snapshot { cpus: 2, busy_s: 1000.0, server_s: None };
        assert_eq!(between(a, wild, 1.0, false).unwrap().busy_cores, 2.0);
        assert_eq!(between(a, b, 0.0, true), None);
    }

    #[test]
    fn a_load_average_beyond_bounds_is_absent() {
        assert_eq!(parse_loadavg("0.52 0.40 0.30 1/123 456\n"), Some(0.52));
        assert_eq!(parse_loadavg("1e13 0 0 1/1 1\n"), None);
        assert_eq!(parse_loadavg("nan 0 0\n"), None);
        assert_eq!(parse_loadavg("-1 0 0\n"), None);
    }

    #[test]
    fn this_machine_can_be_read() {
        let s = snapshot(None).expect("/proc/stat on Linux");
        assert!(s.cpus >= 1 && s.busy_s > 0.0);
    }
}

//! Device telemetry during a run (`--telemetry nvidia-smi`): `nvidia-smi` sampling every
//! device once a second as CSV, each line stamped on the run clock as it arrives. Cells take
//! the samples inside their window. Without the tool the run goes on without telemetry.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::client::stream::WindowClock;
use crate::format::TelemetrySample;

/// The telemetry sources `--telemetry` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TelemetrySource {
    NvidiaSmi,
}

impl TelemetrySource {
    pub fn name(self) -> &'static str {
        match self {
            TelemetrySource::NvidiaSmi => "nvidia-smi",
        }
    }
}

/// The query: one line per device per sample.
pub const NVIDIA_SMI_ARGS: [&str; 3] =
    ["--query-gpu=index,power.draw,utilization.gpu,memory.used,clocks.sm", "--format=csv,noheader,nounits", "-lms"];

/// A line of `nvidia-smi --query-gpu=index,power.draw,utilization.gpu,memory.used,clocks.sm
/// --format=csv,noheader,nounits`: `0, 412.35, 98, 120123, 1980`; `[N/A]` or
/// `[Not Supported]` leave a reading out. `None` for a line that is not one.
pub fn parse_nvidia_smi_line(line: &str, t_s: f64) -> Option<TelemetrySample> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != 5 {
        return None;
    }
    // Anything outside what a device can read (a fake tool printing 1e308 watts) is dropped
    // with a warning, never stored: the cell would not load.
    let number = |s: &str, what: &'static str, max: f64| {
        let v = s.parse::<f64>().ok()?;
        let r = super::checked_reading(what, v).filter(|v| *v <= max);
        if r.is_none() && v.is_finite() && v >= 0.0 {
            super::warn_dropped(what, v);
        }
        r
    };
    let device: u32 = fields[0].parse().ok().filter(|d| *d < MAX_DEVICES)?;
    Some(TelemetrySample {
        t_s,
        device,
        power_w: number(fields[1], "device power (W)", 100_000.0),
        utilization_pct: number(fields[2], "device utilization (%)", 100.0),
        memory_used_mib: number(fields[3], "device memory used (MiB)", 1e9),
        sm_clock_mhz: number(fields[4], "device clock (MHz)", 100_000.0),
    })
}

/// Device indices beyond this are not a machine's.
const MAX_DEVICES: u32 = 1024;
/// A line longer than this is not an `nvidia-smi` CSV line (it is skipped whole).
const MAX_LINE_BYTES: usize = 4096;
/// At most this many samples are kept for a run (rate-limited to one per device per
/// interval, this is days of sampling 16 devices once a second).
const MAX_SAMPLES: usize = 2_000_000;

/// The next line of at most `max` bytes: `Some(Some(line))`, `Some(None)` for a longer line
/// (read and dropped, never held whole), `None` at the end.
async fn next_line<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> std::io::Result<Option<Option<String>>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            let ended = line.is_empty() && !too_long;
            return Ok((!ended).then(|| (!too_long).then(|| String::from_utf8_lossy(&line).into_owned())));
        }
        let newline = memchr::memchr(b'\n', buf);
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        if line.len() + chunk.len() > max {
            too_long = true;
            line = Vec::new();
        } else if !too_long {
            line.extend_from_slice(chunk);
        }
        let used = newline.map_or(buf.len(), |i| i + 1);
        r.consume(used);
        if newline.is_some() {
            return Ok(Some((!too_long).then(|| String::from_utf8_lossy(&line).into_owned())));
        }
    }
}

/// Keeps at most one sample per device per sampling interval, whatever the tool prints: a
/// tool flooding lines costs CPU time, never memory.
#[derive(Debug)]
struct RateLimit {
    min_gap_s: f64,
    last: std::collections::HashMap<u32, f64>,
}

impl RateLimit {
    fn new(interval_ms: u64) -> RateLimit {
        // Half the interval: the tool's own timing jitters.
        RateLimit { min_gap_s: interval_ms as f64 / 2000.0, last: Default::default() }
    }

    fn admit(&mut self, s: &TelemetrySample) -> bool {
        if self.last.len() >= MAX_DEVICES as usize && !self.last.contains_key(&s.device) {
            return false;
        }
        match self.last.get(&s.device) {
            Some(t) if s.t_s - t < self.min_gap_s => false,
            _ => {
                self.last.insert(s.device, s.t_s);
                true
            }
        }
    }
}

/// The sampler of a run: the child process and the samples read so far.
pub struct Telemetry {
    pub source: TelemetrySource,
    samples: Arc<Mutex<Vec<TelemetrySample>>>,
    _child: Child,
}

impl Telemetry {
    /// Starts sampling every `interval_ms`; `None` (and a line on the terminal) when the tool
    /// is not there or gives no reading within a few seconds (no GPU, no driver).
    pub async fn start(source: TelemetrySource, clock: Arc<WindowClock>, interval_ms: u64) -> Option<Telemetry> {
        let spawned = match source {
            TelemetrySource::NvidiaSmi => Command::new("nvidia-smi")
                .args(NVIDIA_SMI_ARGS)
                .arg(interval_ms.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn(),
        };
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "telemetry: {} cannot run here ({e}); the run goes on without device telemetry",
                    source.name()
                );
                return None;
            }
        };
        let stdout = child.stdout.take()?;
        let samples = Arc::new(Mutex::new(Vec::new()));
        let sink = samples.clone();
        let (first_tx, first_rx) = tokio::sync::oneshot::channel::<bool>();
        tokio::spawn(async move {
            let mut first = Some(first_tx);
            let mut limit = RateLimit::new(interval_ms);
            let mut out = BufReader::new(stdout);
            while let Ok(Some(line)) = next_line(&mut out, MAX_LINE_BYTES).await {
                let Some(s) = line.and_then(|l| parse_nvidia_smi_line(&l, clock.now_s())) else { continue };
                if let Some(tx) = first.take() {
                    let _ = tx.send(true);
                }
                if !limit.admit(&s) {
                    continue;
                }
                let mut all = sink.lock().unwrap();
                if all.len() < MAX_SAMPLES {
                    all.push(s);
                }
            }
        });
        let wait = std::time::Duration::from_millis(interval_ms * 3 + 2000);
        if !matches!(tokio::time::timeout(wait, first_rx).await, Ok(Ok(true))) {
            eprintln!("telemetry: {} gave no device reading (no GPU or no driver here?); the run goes on without device telemetry", source.name());
            return None;
        }
        eprintln!("telemetry: sampling with {} every {interval_ms} ms", source.name());
        Some(Telemetry { source, samples, _child: child })
    }

    /// The samples taken between `start_s` and `end_s`.
    pub fn between(&self, start_s: f64, end_s: f64) -> Vec<TelemetrySample> {
        self.samples.lock().unwrap().iter().filter(|s| s.t_s >= start_s && s.t_s <= end_s).copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_lines_parse_and_missing_readings_stay_missing() {
        let s = parse_nvidia_smi_line("0, 412.35, 98, 120123, 1980", 1.5).unwrap();
        assert_eq!(
            (s.device, s.power_w, s.utilization_pct, s.memory_used_mib, s.sm_clock_mhz),
            (0, Some(412.35), Some(98.0), Some(120123.0), Some(1980.0))
        );
        let s = parse_nvidia_smi_line("3, [N/A], 0, 512, [Not Supported]", 2.0).unwrap();
        assert_eq!((s.device, s.power_w, s.sm_clock_mhz), (3, None, None));
        assert_eq!(parse_nvidia_smi_line("index, power.draw [W]", 0.0), None);
        assert_eq!(parse_nvidia_smi_line("Failed to initialize NVML", 0.0), None);
    }

    #[test]
    fn absurd_readings_and_devices_are_dropped() {
        let s = parse_nvidia_smi_line("0, 1e308, 250, -4, 1500", 1.0).unwrap();
        assert_eq!((s.power_w, s.utilization_pct, s.memory_used_mib, s.sm_clock_mhz), (None, None, None, Some(1500.0)));
        assert_eq!(parse_nvidia_smi_line("99999, 300, 50, 1000, 1500", 1.0), None);
    }

    #[tokio::test]
    async fn long_lines_are_skipped_without_being_held() {
        let text = format!("0, 1, 2, 3, 4\n{}\n1, 1, 2, 3, 4\nlast", "x".repeat(10_000));
        let mut r = tokio::io::BufReader::with_capacity(64, text.as_bytes());
        let mut got = Vec::new();
        while let Some(line) = next_line(&mut r, 100).await.unwrap() {
            got.push(line);
        }
        assert_eq!(got, vec![Some("0, 1, 2, 3, 4".into()), None, Some("1, 1, 2, 3, 4".into()), Some("last".into())]);
    }

    #[test]
    fn one_sample_per_device_per_half_interval() {
        let mut limit = RateLimit::new(1000);
        let at = |device, t_s| parse_nvidia_smi_line(&format!("{device}, 1, 1, 1, 1"), t_s).unwrap();
        let kept: Vec<bool> = [at(0, 0.0), at(1, 0.0), at(0, 0.1), at(0, 0.49), at(0, 0.5), at(1, 0.6)]
            .iter()
            .map(|s| limit.admit(s))
            .collect();
        assert_eq!(kept, [true, true, false, false, true, true]);
    }
}

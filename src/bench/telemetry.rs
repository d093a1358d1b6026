//! Device telemetry during a run (`--telemetry nvidia-smi`): `nvidia-smi` sampling every
//! device once a second as CSV, each line stamped on the run clock as it arrives. Cells take
//! the samples inside their window. Without the tool the run goes on without telemetry.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};
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
    let number = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
    Some(TelemetrySample {
        t_s,
        device: fields[0].parse().ok()?,
        power_w: number(fields[1]),
        utilization_pct: number(fields[2]),
        memory_used_mib: number(fields[3]),
        sm_clock_mhz: number(fields[4]),
    })
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
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(s) = parse_nvidia_smi_line(&line, clock.now_s()) {
                    if let Some(tx) = first.take() {
                        let _ = tx.send(true);
                    }
                    let mut all = sink.lock().unwrap();
                    // Bounded: a week of once-a-second samples of 16 devices.
                    if all.len() < 10_000_000 {
                        all.push(s);
                    }
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
}

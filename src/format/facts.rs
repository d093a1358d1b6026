//! Run facts that producers take from the user (the server or the imported file cannot
//! tell them), and how they become the manifest's hardware.

use anyhow::{bail, Result};

use super::HardwareInfo;

/// The facts a server cannot tell about itself.
#[derive(Debug, Clone, Default)]
pub struct ManifestFacts {
    pub model_id: Option<String>,
    pub revision: Option<String>,
    pub hardware_kind: Option<String>,
    pub device: Option<String>,
    pub device_count: Option<u32>,
    pub memory_gb: Option<f64>,
    pub cpu: Option<String>,
    pub os: Option<String>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    pub quantization: Option<String>,
    pub backend: Option<String>,
    pub repository: Option<String>,
    pub build: Option<String>,
    pub commit: Option<String>,
    /// Redacted before it is stored.
    pub launch_command: Option<String>,
    pub notes_markdown: Option<String>,
    pub description: Option<String>,
}

impl ManifestFacts {
    /// The manifest's hardware: a GPU (`--gpu`, `--gpu-count`) or, for a CPU-only server,
    /// the CPU (`--cpu`). One of them is required: nothing else can tell.
    /// `default_os` fills the OS when the user gave none (the bench knows its own machine's).
    pub fn hardware(&self, default_os: Option<&str>) -> Result<HardwareInfo> {
        let (kind, device) = match (&self.device, &self.cpu) {
            (Some(d), _) => (self.hardware_kind.clone().unwrap_or_else(|| "Discrete GPU".into()), d.clone()),
            (None, Some(cpu)) => (self.hardware_kind.clone().unwrap_or_else(|| "CPU".into()), cpu.clone()),
            (None, None) => bail!(
                "say what the server runs on: --gpu NAME --gpu-count N (or --cpu NAME for a CPU-only server); the server cannot tell"
            ),
        };
        Ok(HardwareInfo {
            kind,
            device,
            count: self.device_count.unwrap_or(1),
            memory_gb: self.memory_gb,
            os: self.os.clone().or_else(|| default_os.map(str::to_string)),
            cpu: if self.device.is_some() { self.cpu.clone() } else { None },
        })
    }
}

//! Run facts that producers take from the user (the server or the imported file cannot
//! tell them), what the producer found out itself, and the one place both become a run
//! manifest (`site bench` and every importer build it here).

use anyhow::{bail, Result};

use super::{BenchTool, EngineInfo, HardwareInfo, ModelInfo, Origin, RunManifest, RunSettings, SCHEMA_VERSION};
use crate::redact::redact_command;

/// What a producer learned from the server or the file; the user's facts win over it.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// The model name the server was asked for (or the file names).
    pub served_model: Option<String>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    pub quantization: Option<String>,
    pub repository: Option<String>,
    pub build: Option<String>,
    /// The OS of the machine, when the producer knows it (the bench knows its own).
    pub os: Option<String>,
}

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
    /// The benchmark tool's version where its files do not record it (`site import`).
    pub tool_version: Option<String>,
}

impl ManifestFacts {
    /// The run manifest: the user's facts first, then what was discovered; the launch
    /// command redacted. Times are the producer's to set.
    pub fn manifest(
        &self,
        found: Discovered,
        settings: RunSettings,
        bench_tool: BenchTool,
        origin: Origin,
    ) -> Result<RunManifest> {
        // Only the file name of a local path is ever stored.
        let served = found.served_model.as_deref().map(crate::redact::model_name_without_path);
        let id = self.model_id.clone().or_else(|| served.clone()).unwrap_or_else(|| "unknown".into());
        let served_name = served.filter(|s| *s != id);
        Ok(RunManifest {
            schema_version: SCHEMA_VERSION,
            model: ModelInfo { id, served_name, revision: self.revision.clone() },
            hardware: self.hardware(found.os.as_deref())?,
            engine: EngineInfo {
                name: self.engine.clone().or(found.engine).unwrap_or_else(|| "openai-compatible".into()),
                version: self.engine_version.clone().or(found.engine_version).unwrap_or_else(|| "unknown".into()),
                quantization: self.quantization.clone().or(found.quantization),
                backend: self.backend.clone(),
                repository: self.repository.clone().or(found.repository),
                build: self.build.clone().or(found.build),
                commit: self.commit.clone(),
            },
            settings,
            launch_command: self.launch_command.as_deref().map(redact_command),
            bench_tool,
            origin,
            started_at: None,
            finished_at: None,
            description: self.description.clone(),
            server_access: None,
            server_processes: Vec::new(),
            server_settings: Default::default(),
            traffic: None,
            paired_with: None,
            other_levels: Vec::new(),
        })
    }

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

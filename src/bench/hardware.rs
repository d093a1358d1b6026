//! The machine's hardware, for a server on this machine (a loopback endpoint): GPUs from
//! `nvidia-smi` or `rocm-smi`, else the CPU from `/proc/cpuinfo`. Parsers are pure; only
//! [`detect`] runs commands and reads files. Flags always win over what is found here.

use std::process::Command;
use std::time::Duration;

use crate::format::facts::ManifestFacts;

/// What was found: the device, how many, memory per device (GiB rounded to whole: an H200's
/// 143,771 MiB is 140), the kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    pub kind: &'static str,
    pub device: String,
    pub count: u32,
    pub memory_gb: Option<f64>,
    /// The CPU's name (also set beside a GPU).
    pub cpu: Option<String>,
    /// Where it came from, for the terminal.
    pub source: &'static str,
}

/// `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits`: one line a GPU,
/// `NVIDIA H200, 143771`. The most common name is the device.
pub fn parse_nvidia_smi(csv: &str) -> Option<Detected> {
    let gpus: Vec<(String, Option<f64>)> = csv
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let mut fields = l.split(',').map(str::trim);
            let name = fields.next().filter(|n| !n.is_empty())?;
            let mib = fields.next().and_then(|m| m.parse::<f64>().ok());
            Some((name.strip_prefix("NVIDIA ").unwrap_or(name).to_string(), mib))
        })
        .collect();
    let (name, mib) = gpus.first()?.clone();
    Some(Detected {
        kind: "Discrete GPU",
        count: gpus.iter().filter(|(n, _)| *n == name).count() as u32,
        device: name,
        memory_gb: mib.and_then(|m| super::checked_reading("nvidia-smi memory.total", m)).map(|m| (m / 1024.0).round()),
        cpu: None,
        source: "nvidia-smi",
    })
}

/// `rocm-smi --showproductname --showmeminfo vram --csv`: a header line, then one line a GPU
/// with `Card series` (or `Card model`) and `VRAM Total Memory (B)` columns.
pub fn parse_rocm_smi(csv: &str) -> Option<Detected> {
    let mut lines = csv.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('='));
    let header: Vec<&str> = lines.next()?.split(',').map(str::trim).collect();
    let col = |names: &[&str]| header.iter().position(|h| names.iter().any(|n| h.eq_ignore_ascii_case(n)));
    let name_col = col(&["Card series", "Card SKU", "Card model"])?;
    let mem_col = col(&["VRAM Total Memory (B)"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').map(str::trim).collect()).collect();
    let first = rows.first()?;
    let name = first.get(name_col).filter(|n| !n.is_empty())?.to_string();
    let bytes = mem_col.and_then(|c| first.get(c)).and_then(|b| b.parse::<f64>().ok());
    Some(Detected {
        kind: "Discrete GPU",
        count: rows.len() as u32,
        device: name,
        memory_gb: bytes
            .and_then(|b| super::checked_reading("rocm-smi VRAM Total Memory", b / (1u64 << 30) as f64))
            .map(f64::round),
        cpu: None,
        source: "rocm-smi",
    })
}

/// `/proc/cpuinfo`: the first `model name` and the number of `processor` entries, named as
/// the shipped CPU runs are: `AMD EPYC 9654 96-Core Processor (2 cores)`.
pub fn parse_cpuinfo(text: &str) -> Option<Detected> {
    let value = |line: &str| line.split_once(':').map(|(_, v)| v.trim().to_string());
    let model = text.lines().find(|l| l.starts_with("model name")).and_then(value)?;
    let cores = text.lines().filter(|l| l.starts_with("processor")).count().max(1);
    Some(Detected {
        kind: "CPU",
        device: format!("{model} ({cores} cores)"),
        count: 1,
        memory_gb: None,
        cpu: Some(model),
        source: "/proc/cpuinfo",
    })
}

/// A command's standard output, if it ran and succeeded within a few seconds.
fn run(program: &str, args: &[&str]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait().ok()? {
            Some(status) if status.success() => break,
            Some(_) => return None,
            None if std::time::Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    Some(out)
}

/// This machine's accelerators, else its CPU.
pub fn detect() -> Option<Detected> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().as_deref().and_then(parse_cpuinfo);
    let gpu = run("nvidia-smi", &["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"])
        .as_deref()
        .and_then(parse_nvidia_smi)
        .or_else(|| {
            run("rocm-smi", &["--showproductname", "--showmeminfo", "vram", "--csv"])
                .as_deref()
                .and_then(parse_rocm_smi)
        });
    match gpu {
        Some(g) => Some(Detected { cpu: cpu.and_then(|c| c.cpu), ..g }),
        None => cpu,
    }
}

/// Fills what the flags left open from what was found; a flag always wins.
pub fn fill(facts: &mut ManifestFacts, found: &Detected) {
    if facts.device.is_some() || facts.cpu.is_some() && found.kind == "CPU" {
        return;
    }
    if found.kind == "CPU" {
        facts.cpu = Some(found.device.clone());
    } else {
        facts.device = Some(found.device.clone());
        facts.device_count = facts.device_count.or(Some(found.count));
        facts.memory_gb = facts.memory_gb.or(found.memory_gb);
        facts.cpu = facts.cpu.clone().or_else(|| found.cpu.clone());
    }
    facts.hardware_kind = facts.hardware_kind.clone().or_else(|| Some(found.kind.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_lines_give_name_count_and_memory() {
        let csv = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/hardware/nvidia-smi-gpus.csv"
        ))
        .unwrap();
        let d = parse_nvidia_smi(&csv).unwrap();
        assert_eq!((d.device.as_str(), d.count, d.memory_gb), ("H200", 4, Some(140.0)));
        assert_eq!(parse_nvidia_smi(""), None);
        // A reading no device has is dropped, not written into the run.
        for absurd in ["1e308", "-5", "inf", "NaN"] {
            assert_eq!(parse_nvidia_smi(&format!("NVIDIA H200, {absurd}")).unwrap().memory_gb, None, "{absurd}");
        }
    }

    #[test]
    fn rocm_smi_csv_gives_name_count_and_memory() {
        let csv = "device,Card series,Card model,Card vendor,VRAM Total Memory (B),VRAM Total Used Memory (B)\ncard0,AMD Instinct MI300X,0x74a1,Advanced Micro Devices,206141652992,292052992\ncard1,AMD Instinct MI300X,0x74a1,Advanced Micro Devices,206141652992,292052992\n";
        let d = parse_rocm_smi(csv).unwrap();
        assert_eq!((d.device.as_str(), d.count, d.memory_gb), ("AMD Instinct MI300X", 2, Some(192.0)));
    }

    #[test]
    fn cpuinfo_gives_the_model_and_cores() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hardware/cpuinfo")).unwrap();
        let d = parse_cpuinfo(&text).unwrap();
        assert_eq!(d.device, "AMD EPYC (2 cores)");
        assert_eq!(d.kind, "CPU");
    }

    #[test]
    fn flags_win_over_what_was_found() {
        let gpu = parse_nvidia_smi("NVIDIA H200, 143771\n").unwrap();
        let mut facts = ManifestFacts { device: Some("H200 SXM".into()), ..Default::default() };
        fill(&mut facts, &gpu);
        assert_eq!((facts.device.as_deref(), facts.device_count), (Some("H200 SXM"), None));
        let mut facts = ManifestFacts { device_count: Some(2), ..Default::default() };
        fill(&mut facts, &gpu);
        assert_eq!(
            (facts.device.as_deref(), facts.device_count, facts.memory_gb),
            (Some("H200"), Some(2), Some(140.0))
        );
        assert_eq!(facts.hardware_kind.as_deref(), Some("Discrete GPU"));
    }
}

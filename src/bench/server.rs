//! The server before the first cell: the client (TLS, credentials), the hardware it runs on
//! (flags, or detected for a server on this machine), what it says of itself and the cells
//! planned for it.

use anyhow::{bail, Context, Result};
use tokio::sync::watch;

use super::bench_plan::{BenchPlan, RunSpec, Target};
use super::client::http::{Endpoint, HttpClient};
use super::discover::{self, ServerInfo};
use super::hardware;
use super::plan::{self, Capacity, PlannedCell};
use super::ManifestFacts;
use crate::units::terminal_safe;

/// The client of the endpoint: TLS set up for https (and `--insecure` said out loud).
pub(super) fn connect(target: &Target) -> Result<HttpClient> {
    let endpoint = Endpoint::parse(&target.endpoint)?;
    let tls = if endpoint.tls {
        if target.tls.insecure {
            eprintln!("warning: --insecure: the server's certificate is not checked; the run records it");
        }
        Some(target.tls.connector()?)
    } else {
        if target.tls.insecure || target.tls.ca_cert.is_some() {
            eprintln!(
                "warning: --insecure and --ca-cert apply to https endpoints only; {} is plain http",
                endpoint.display()
            );
        }
        None
    };
    HttpClient::new(endpoint, target.credentials.clone(), tls)
}

/// The hardware the flags name; for a server on this machine, what is missing is detected.
/// A remote server's hardware cannot be known: the flags must say it (checked before any
/// request, so a missing flag costs nothing).
pub(super) fn resolve_hardware(facts: &mut ManifestFacts, endpoint: &Endpoint) -> Result<()> {
    if facts.device.is_some() || facts.cpu.is_some() {
        return Ok(());
    }
    if !endpoint.is_loopback() {
        bail!(
            "say what the server runs on: --gpu NAME --gpu-count N (or --cpu NAME for a CPU-only server); {} is not on this machine, so its hardware cannot be detected",
            endpoint.display()
        );
    }
    match hardware::detect() {
        Some(found) => {
            hardware::fill(facts, &found);
            let memory = found.memory_gb.map(|g| format!(", {g} GB each")).unwrap_or_default();
            let line = format!("hardware (from {}): {} x {}{memory}", found.source, found.count, found.device);
            eprintln!("{}", crate::units::terminal_safe(&line));
            Ok(())
        }
        None => bail!("could not detect this machine's hardware: say what the server runs on with --gpu NAME --gpu-count N or --cpu NAME"),
    }
}

/// The server's capacity, its KV budget replaced by `--kv-budget` where given.
pub(super) fn capacity(info: &ServerInfo, kv_budget: Option<u64>) -> Capacity {
    let mut cap = info.capacity.clone();
    if let Some(b) = kv_budget {
        cap.kv_budget_tokens = Some(b);
        cap.kv_budget_source = Some("--kv-budget".into());
    }
    cap
}

pub(super) fn server_line(info: &ServerInfo, client: &HttpClient, model: &str, cap: &Capacity) -> String {
    format!(
        "{} at {}: model {model}, KV budget {}, max model length {}, gauges {}",
        info.engine.name(),
        client.endpoint.display(),
        cap.kv_budget_tokens
            .map(|b| format!("{b} tokens ({})", cap.kv_budget_source.as_deref().unwrap_or("")))
            .unwrap_or_else(|| "unknown".into()),
        cap.max_model_len.map(|l| l.to_string()).unwrap_or_else(|| "unknown".into()),
        if info.metrics_available { "on" } else { "off (client in-flight count)" }
    )
}

/// A server as discovered: what it serves, its capacity and the cells planned for it.
pub(super) struct Server {
    pub info: ServerInfo,
    pub model: String,
    pub cap: Capacity,
    pub planned: Vec<PlannedCell>,
}

impl Server {
    pub async fn discover(
        plan: &BenchPlan,
        run: &RunSpec,
        client: &HttpClient,
        interrupt: &mut watch::Receiver<bool>,
    ) -> Result<Server> {
        let info = tokio::select! {
            r = discover::discover(client) => r.with_context(|| format!("discovering {}", client.endpoint.display()))?,
            Ok(_) = interrupt.wait_for(|i| *i) => bail!("interrupted"),
        };
        let model = served_model(&run.target, &info, client)?;
        let cap = capacity(&info, plan.matrix.kv_budget);
        let m = &plan.matrix;
        let shared = run.workload.prefix_reuse.unwrap_or(0);
        let planned =
            plan::plan(&m.contexts, &m.concurrency, &m.prefill_contexts, run.workload.max_output, shared, &cap);
        eprintln!("{}", terminal_safe(&server_line(&info, client, &model, &cap)));
        Ok(Server { info, model, cap, planned })
    }
}

/// The model the run measures: `--model`, else the first the server lists; warned where the
/// server does not list it, refused where its name is too long to publish.
fn served_model(target: &Target, info: &ServerInfo, client: &HttpClient) -> Result<String> {
    let model = match (&target.model, info.models.first()) {
        (Some(m), _) | (None, Some(m)) => m.clone(),
        (None, None) => bail!("the server at {} lists no model; pass --model", client.endpoint.display()),
    };
    if target.model.is_some() && !info.models.is_empty() && !info.models.contains(&model) {
        let listed: Vec<&str> = info.models.iter().take(5).map(String::as_str).collect();
        eprintln!(
            "warning: the server does not list --model {} (it lists {}): its answers may be errors",
            terminal_safe(&model),
            terminal_safe(&listed.join(", "))
        );
    }
    let chars = model.chars().count();
    if chars > crate::format::validate::MAX_NAME_CHARS {
        bail!(
            "the model id is {chars} characters long (at most {} can be published); pass --model with the name to use",
            crate::format::validate::MAX_NAME_CHARS
        );
    }
    Ok(model)
}

//! Throughput against interactivity across runs (per model, one view per context): every
//! valid decode cell is a point (per-request tok/s, tok/s per device); each configuration
//! (hardware x count, engine, quantization) has its Pareto frontier. With a price for the
//! device, each point also has its cost per million output tokens.

use std::collections::BTreeMap;

use serde::Serialize;

use super::interval::Basis;
use super::run::RunView;
use crate::format::{SiteSettings, Status};

/// What a frontier is drawn per: the hardware, how many devices, engine, quantization.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ConfigKey {
    pub device: String,
    pub count: u32,
    pub engine: String,
    pub quantization: Option<String>,
}

/// `ConfigKey`'s fields borrowed from a run, in its order (so it sorts as a `ConfigKey`
/// would): for grouping many runs without cloning their strings.
pub type ConfigKeyRef<'a> = (&'a str, u32, &'a str, Option<&'a str>);

impl ConfigKey {
    pub fn of(run: &RunView) -> ConfigKey {
        ConfigKey::owned(ConfigKey::borrowed(run))
    }

    pub fn borrowed(run: &RunView) -> ConfigKeyRef<'_> {
        let (hw, engine) = (&run.manifest.hardware, &run.manifest.engine);
        (hw.device.as_str(), hw.count, engine.name.as_str(), engine.quantization.as_deref())
    }

    pub fn owned((device, count, engine, quantization): ConfigKeyRef) -> ConfigKey {
        ConfigKey {
            device: device.to_string(),
            count,
            engine: engine.to_string(),
            quantization: quantization.map(str::to_string),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ParetoPoint {
    /// Index into `SiteModel::runs`.
    pub run: usize,
    pub concurrency: u32,
    /// x: tok/s each request saw.
    pub per_request_tps: f64,
    /// y: total tok/s over the run's device count.
    pub tps_per_device: f64,
    pub total_tps: f64,
    /// price x devices / 3600 / total tok/s x 1e6, where the device has a price.
    pub usd_per_mtok: Option<f64>,
    /// The 95% interval of `tps_per_device` across the cell's repetitions, where it has them.
    pub tps_per_device_interval: Option<(f64, f64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConfigPoints {
    pub key: ConfigKey,
    /// Sorted by per-request tok/s.
    pub points: Vec<ParetoPoint>,
    /// Indexes into `points` of the throughput frontier (no other point is both more
    /// interactive and higher per device), by per-request tok/s.
    pub frontier: Vec<usize>,
    /// The cost frontier (no other point is both more interactive and cheaper); empty
    /// without a price.
    pub cost_frontier: Vec<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParetoContext {
    pub context: u32,
    pub configs: Vec<ConfigPoints>,
}

/// One model's view: a chart per context.
#[derive(Debug, Clone, Serialize)]
pub struct ParetoView {
    /// Index into `SiteModel::models`.
    pub model: usize,
    pub contexts: Vec<ParetoContext>,
    /// Whether any point has a cost (a price was configured for its device).
    pub priced: bool,
}

/// Dollars per million output tokens at `total_tps` on `devices` devices at `price` per
/// device-hour.
pub fn usd_per_mtok(price: f64, devices: u32, total_tps: f64) -> f64 {
    price * devices as f64 / 3600.0 / total_tps * 1e6
}

/// The view of the runs `members` (one model's runs).
pub fn pareto(model: usize, runs: &[RunView], members: &[usize], settings: &SiteSettings) -> ParetoView {
    // Points by configuration (looked up once per run), then by context.
    let mut by_config: BTreeMap<ConfigKeyRef, BTreeMap<u32, Vec<ParetoPoint>>> = BTreeMap::new();
    for &i in members {
        let run = &runs[i];
        let devices = run.manifest.hardware.count.max(1);
        let price = settings.price(&run.manifest.hardware.device);
        let by_context = by_config.entry(ConfigKey::borrowed(run)).or_default();
        // Cells of a prefix-reuse workload are another workload: their boards are apart.
        for c in run.decode.iter().filter(|c| c.status == Status::Valid && c.workload.is_plain()) {
            let (Some(x), Some(total)) = (c.figures.per_request_tps, c.figures.total_tps) else { continue };
            if !(x.is_finite() && total.is_finite() && total > 0.0) {
                continue;
            }
            by_context.entry(c.context).or_default().push(ParetoPoint {
                run: i,
                concurrency: c.concurrency,
                per_request_tps: x,
                tps_per_device: total / devices as f64,
                total_tps: total,
                usd_per_mtok: price.map(|p| usd_per_mtok(p, devices, total)),
                tps_per_device_interval: c
                    .spread
                    .as_deref()
                    .and_then(|s| s.get(super::metric::Metric::TotalTps))
                    .filter(|e| e.basis == Basis::Repetitions)
                    .and_then(|e| e.interval)
                    .map(|i| (i.lo / devices as f64, i.hi / devices as f64)),
            });
        }
    }
    let mut by_context: BTreeMap<u32, Vec<(ConfigKey, Vec<ParetoPoint>)>> = BTreeMap::new();
    for (key, contexts) in by_config {
        let key = ConfigKey::owned(key);
        for (context, points) in contexts {
            by_context.entry(context).or_default().push((key.clone(), points));
        }
    }
    let contexts: Vec<ParetoContext> = by_context
        .into_iter()
        .map(|(context, configs)| ParetoContext { context, configs: configs.into_iter().map(config_points).collect() })
        .collect();
    let priced = contexts.iter().flat_map(|c| &c.configs).any(|c| !c.cost_frontier.is_empty());
    ParetoView { model, contexts, priced }
}

fn config_points((key, mut points): (ConfigKey, Vec<ParetoPoint>)) -> ConfigPoints {
    points.sort_by(|a, b| {
        a.per_request_tps.total_cmp(&b.per_request_tps).then(a.tps_per_device.total_cmp(&b.tps_per_device))
    });
    let frontier = frontier_by(&points, |p| Some(p.tps_per_device));
    let cost_frontier = frontier_by(&points, |p| p.usd_per_mtok.map(|c| -c));
    ConfigPoints { key, points, frontier, cost_frontier }
}

/// Indexes of the points (sorted by x, then y) that no other point beats on both x and `y` (higher
/// is better on both), in x order.
pub fn frontier_by(points: &[ParetoPoint], y: impl Fn(&ParetoPoint) -> Option<f64>) -> Vec<usize> {
    let mut best = f64::NEG_INFINITY;
    let mut keep = Vec::new();
    // From the most interactive down: a point joins when it beats every point to its right.
    for (i, p) in points.iter().enumerate().rev() {
        let Some(v) = y(p) else { continue };
        let next_x_equal = keep.last().is_some_and(|&j: &usize| points[j].per_request_tps == p.per_request_tps);
        if v > best && !next_x_equal {
            best = v;
            keep.push(i);
        }
    }
    keep.reverse();
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(x: f64, y: f64) -> ParetoPoint {
        ParetoPoint {
            run: 0,
            concurrency: 1,
            per_request_tps: x,
            tps_per_device: y,
            total_tps: y,
            usd_per_mtok: None,
            tps_per_device_interval: None,
        }
    }

    #[test]
    fn the_frontier_keeps_only_undominated_points() {
        // Sorted by x; (20, 50) is beaten by (30, 60) and (40, 10) by nothing on x.
        let pts = [p(5.0, 100.0), p(10.0, 90.0), p(20.0, 50.0), p(30.0, 60.0), p(40.0, 10.0)];
        assert_eq!(frontier_by(&pts, |p| Some(p.tps_per_device)), [0, 1, 3, 4]);
        // At equal x only the higher point counts.
        let pts = [p(10.0, 70.0), p(10.0, 80.0), p(20.0, 40.0)];
        assert_eq!(frontier_by(&pts, |p| Some(p.tps_per_device)), [1, 2]);
    }

    #[test]
    fn cost_per_million_tokens() {
        // 4 devices at $3.50 an hour making 10,000 tok/s: $14/h over 36M tokens an hour.
        let v = usd_per_mtok(3.5, 4, 10_000.0);
        assert!((v - 14.0 / 36.0).abs() < 1e-12, "{v}");
    }
}

//! The power model: what a CPU package draws in each P-state and idle state.
//!
//! # Terminology
//! - *cluster*: CPUs that share one P-state table and idle-state table (all cores of a Xeon; the
//!   big or the LITTLE cores of a big.LITTLE part). `shared_policy` says whether the cluster is
//!   also one cpufreq policy (one frequency for all its CPUs).
//! - *P-state*: a frequency (MHz) and the active power (W) of one core running at it.
//! - *normalised frequency* `f ∈ (0, 1]`: frequency / the cluster's maximum frequency (the
//!   planner's unit). It runs at the lowest P-state whose frequency is `≥ f · f_max` (what the
//!   EASS CPUFreq governor does).
//! - *idle state*: name, exit latency, target residency (the shortest idle period for which the
//!   state pays off, cpuidle's definition) and power, either in W or as a fraction of the active
//!   power at the current frequency (a polling idle loop).
//! - *uncore*: package power not attributable to a core (interconnect, LLC, memory controllers),
//!   drawn for the whole run.
//!
//! Models are JSON files in `models/` (format 1, documented in docs/energy.md) and are validated
//! here: every rule violation is a [`ModelError`] naming the field.

use crate::planner::policy::{Freqs, FreqsError};
use serde::Deserialize;

use thiserror::Error;

/// A validated power model.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerModel {
    pub name: String,
    pub description: String,
    pub uncore_w: f64,
    pub clusters: Vec<Cluster>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    pub name: String,
    pub first_cpu: u32,
    pub cpu_count: u32,
    pub shared_policy: bool,
    /// Time a frequency change stalls the core, µs.
    pub freq_switch_us: f64,
    /// Sorted by ascending frequency.
    pub pstates: Vec<PState>,
    /// Sorted from shallowest to deepest (ascending target residency).
    pub idle_states: Vec<IdleState>,
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PState {
    pub mhz: u32,
    pub active_w: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IdleState {
    pub name: String,
    pub exit_latency_us: f64,
    pub target_residency_us: f64,
    pub power: IdlePower,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IdlePower {
    Watts(f64),
    /// A fraction of the active power at the current frequency (polling idle).
    ActiveFraction(f64),
}

#[derive(Debug, Error)]
pub enum ModelError {
    #[error("reading power model {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("power model JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("power model: unsupported format {0} (expected 1)")]
    Format(u32),
    #[error("power model: {field}: {rule}")]
    Invalid { field: String, rule: String },
}

fn invalid(field: impl Into<String>, rule: impl Into<String>) -> ModelError {
    ModelError::Invalid {
        field: field.into(),
        rule: rule.into(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    format: u32,
    name: String,
    #[serde(default)]
    description: String,
    uncore_w: f64,
    clusters: Vec<RawCluster>,
    /// Free text: where each parameter comes from. Not used by the code.
    #[serde(default, rename = "sources")]
    _sources: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    name: String,
    first_cpu: u32,
    cpu_count: u32,
    #[serde(default)]
    shared_policy: bool,
    #[serde(default)]
    freq_switch_us: f64,
    pstates: Vec<PState>,
    idle_states: Vec<RawIdleState>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdleState {
    name: String,
    exit_latency_us: f64,
    target_residency_us: f64,
    power_w: Option<f64>,
    active_fraction: Option<f64>,
}

/// Parse and validate a model from JSON text.
pub fn from_str(text: &str) -> Result<PowerModel, ModelError> {
    let raw: RawModel = serde_json::from_str(text)?;
    PowerModel::try_from(raw)
}

fn non_negative(field: &str, v: f64) -> Result<f64, ModelError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(invalid(field, format!("{v} must be a finite number >= 0")))
    }
}

impl TryFrom<RawModel> for PowerModel {
    type Error = ModelError;

    fn try_from(raw: RawModel) -> Result<Self, ModelError> {
        if raw.format != 1 {
            return Err(ModelError::Format(raw.format));
        }
        let uncore_w = non_negative("uncore_w", raw.uncore_w)?;
        if raw.clusters.is_empty() {
            return Err(invalid("clusters", "at least one cluster is needed"));
        }
        let mut clusters = Vec::with_capacity(raw.clusters.len());
        for (i, rc) in raw.clusters.into_iter().enumerate() {
            clusters.push(validate_cluster(i, rc)?);
        }
        let mut spans: Vec<(u32, u32, usize)> = clusters
            .iter()
            .enumerate()
            .map(|(i, c)| (c.first_cpu, c.first_cpu + c.cpu_count, i))
            .collect();
        spans.sort();
        for w in spans.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(invalid(
                    format!("clusters[{}].first_cpu", w[1].2),
                    format!("CPU {} already belongs to clusters[{}]", w[1].0, w[0].2),
                ));
            }
        }
        Ok(PowerModel {
            name: raw.name,
            description: raw.description,
            uncore_w,
            clusters,
        })
    }
}

fn validate_cluster(i: usize, rc: RawCluster) -> Result<Cluster, ModelError> {
    let at = |f: &str| format!("clusters[{i}].{f}");
    if rc.cpu_count == 0 {
        return Err(invalid(at("cpu_count"), "must be >= 1"));
    }
    if rc.pstates.is_empty() {
        return Err(invalid(at("pstates"), "at least one P-state is needed"));
    }
    for (k, p) in rc.pstates.iter().enumerate() {
        if p.mhz == 0 {
            return Err(invalid(at(&format!("pstates[{k}].mhz")), "must be > 0"));
        }
        non_negative(&at(&format!("pstates[{k}].active_w")), p.active_w)?;
        if k > 0 && p.mhz <= rc.pstates[k - 1].mhz {
            return Err(invalid(
                at(&format!("pstates[{k}].mhz")),
                "P-states must be sorted by strictly ascending frequency",
            ));
        }
    }
    let mut idle_states = Vec::with_capacity(rc.idle_states.len());
    for (k, s) in rc.idle_states.into_iter().enumerate() {
        let f = |n: &str| at(&format!("idle_states[{k}].{n}"));
        let power = match (s.power_w, s.active_fraction) {
            (Some(w), None) => IdlePower::Watts(non_negative(&f("power_w"), w)?),
            (None, Some(a)) => IdlePower::ActiveFraction(non_negative(&f("active_fraction"), a)?),
            _ => {
                return Err(invalid(
                    f("power_w"),
                    "give exactly one of power_w and active_fraction",
                ))
            }
        };
        let state = IdleState {
            name: s.name,
            exit_latency_us: non_negative(&f("exit_latency_us"), s.exit_latency_us)?,
            target_residency_us: non_negative(&f("target_residency_us"), s.target_residency_us)?,
            power,
        };
        if let Some(prev) = idle_states.last() {
            let prev: &IdleState = prev;
            if state.target_residency_us < prev.target_residency_us {
                return Err(invalid(
                    f("target_residency_us"),
                    "idle states must be sorted from shallowest to deepest",
                ));
            }
        }
        idle_states.push(state);
    }
    Ok(Cluster {
        name: rc.name,
        first_cpu: rc.first_cpu,
        cpu_count: rc.cpu_count,
        shared_policy: rc.shared_policy,
        freq_switch_us: non_negative(&at("freq_switch_us"), rc.freq_switch_us)?,
        pstates: rc.pstates,
        idle_states,
    })
}

impl PowerModel {
    /// The frequencies EASS-DVFS chooses from: the P-states of the cluster holding CPU `cpu`
    /// (the first cluster if none does), normalised to that cluster's highest.
    pub fn dvfs_freqs(&self, cpu: u32) -> Result<Freqs, FreqsError> {
        let cluster = self
            .clusters
            .iter()
            .find(|c| (c.first_cpu..c.first_cpu + c.cpu_count).contains(&cpu))
            .or(self.clusters.first());
        let Some(cluster) = cluster else {
            return Err(FreqsError::Empty);
        };
        let max = f64::from(cluster.max_mhz());
        let normalised: Vec<f64> = cluster
            .pstates
            .iter()
            .map(|p| f64::from(p.mhz) / max)
            .collect();
        Freqs::new(&normalised)
    }

    /// The cluster CPU `cpu` belongs to.
    pub fn cluster_of(&self, cpu: u32) -> Option<&Cluster> {
        self.clusters
            .iter()
            .find(|c| cpu >= c.first_cpu && cpu < c.first_cpu + c.cpu_count)
    }

    /// Number of CPUs the model describes.
    pub fn cpu_count(&self) -> u32 {
        self.clusters.iter().map(|c| c.cpu_count).sum()
    }
}

impl Cluster {
    pub fn max_mhz(&self) -> u32 {
        self.pstates.last().map_or(0, |p| p.mhz)
    }

    pub fn min_mhz(&self) -> u32 {
        self.pstates.first().map_or(0, |p| p.mhz)
    }

    /// The P-state a normalised frequency runs at: the lowest one with `mhz ≥ f · max_mhz`
    /// (the maximum one when `f ≥ 1`). Rounding error below 1 kHz is ignored so that `f` values
    /// computed as `mhz / max_mhz` map back onto their own P-state.
    pub fn pstate_for(&self, freq: f64) -> PState {
        let want_khz = freq * f64::from(self.max_mhz()) * 1000.0;
        self.pstates
            .iter()
            .copied()
            .find(|p| f64::from(p.mhz) * 1000.0 >= want_khz - 1e-3)
            .unwrap_or(self.pstates[self.pstates.len() - 1])
    }

    /// Active power of one core at normalised frequency `freq`, W.
    pub fn active_w(&self, freq: f64) -> f64 {
        self.pstate_for(freq).active_w
    }

    /// Power of one core in idle state `state` while the cluster is at normalised `freq`, W.
    pub fn idle_w(&self, state: &IdleState, freq: f64) -> f64 {
        match state.power {
            IdlePower::Watts(w) => w,
            IdlePower::ActiveFraction(a) => a * self.active_w(freq),
        }
    }

    /// Energy of one entry into and exit from idle state `k` at normalised `freq`, J, derived
    /// from cpuidle's definition of target residency: the shortest idle time for which state
    /// `k`, entry and exit included, saves energy over the next shallower state. So
    /// `E_0 = 0` and `E_k = E_{k-1} + (P_{k-1} − P_k) · T_k` (increments below 0 count as 0),
    /// which makes the deepest state whose residency fits a period also the cheapest.
    pub fn transition_j(&self, k: usize, freq: f64) -> f64 {
        let mut e = 0.0;
        for i in 1..=k.min(self.idle_states.len().saturating_sub(1)) {
            let (shallow, deep) = (&self.idle_states[i - 1], &self.idle_states[i]);
            let saved_w = self.idle_w(shallow, freq) - self.idle_w(deep, freq);
            e += saved_w.max(0.0) * deep.target_residency_us * 1e-6;
        }
        e
    }

    /// Index of the deepest idle state among the first `allowed` whose target residency fits an
    /// idle period of `period_us` (the shallowest state when none fits). `None` when the cluster
    /// has no idle state or `allowed == 0`.
    pub fn deepest_fitting(&self, period_us: f64, allowed: usize) -> Option<usize> {
        let n = allowed.min(self.idle_states.len());
        if n == 0 {
            return None;
        }
        let fits = self.idle_states[..n]
            .iter()
            .rposition(|s| s.target_residency_us <= period_us);
        Some(fits.unwrap_or(0))
    }
}

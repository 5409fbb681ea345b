//! Energy of a per-slot trace under a [`PowerModel`], per CPU and per package.
//!
//! # Algorithm
//! ```text
//! for each CPU in the trace (records sorted by slot, missing slots = idle at the last freq):
//!   timeline = segments: a non-idle slot is busy for min(ran_ns + stolen_ns, slot) when the
//!              kernel measured it, else for the whole slot; the rest of a slot and idle slots
//!              are idle; consecutive idle pieces merge into one idle period
//!   busy segment of length t at f:    E += active_w(f) · t
//!   idle period of length L:          s  = state chosen by the idle governor for L
//!                                     E += idle_w(s, f) · L + transition_j(s, f)
//!   P-state change between segments:  E += freq_switch_us · active_w(higher of the two)
//! package = uncore_w · duration + Σ CPUs in the trace + CPUs of the model not in the trace
//!           (`Unlisted`: active at the maximum frequency, or left out)
//! ```
//! The governor [`IdleGovernor::Deepest`] picks the deepest state whose target residency fits the
//! period (a perfect-prediction cpuidle governor, and what EASS-DPM's deferred tick enables);
//! [`IdleGovernor::DeepestPerSlot`] does the same for every idle slot separately (the slot tick
//! wakes the CPU each slot); [`IdleGovernor::Shallowest`] always takes state 0 (the paper's BSS and EASS-DVFS setup, whose
//! CPUIdle governor never entered a low-power state).
//!
//! # Properties
//! 1. A fully busy CPU at normalised frequency f uses exactly `active_w(f) · duration`.
//! 2. Idle energy never exceeds the energy of staying in the shallowest state: transition
//!    energies are derived from target residencies as break-even times
//!    ([`Cluster::transition_j`]).
//! 3. The package total is the sum of its parts (uncore + CPUs + unlisted CPUs).

use super::model::{Cluster, PowerModel};
use super::residency::FreqResidency;
use crate::trace::{SlotKind, SlotRecord};
use std::collections::BTreeMap;
use thiserror::Error;

/// Which idle state an idle period uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleGovernor {
    /// Always idle state 0 (POLL on the Xeon model): no low-power state.
    Shallowest,
    /// The deepest state whose target residency fits the idle period; consecutive idle slots
    /// are one period (EASS-DPM defers the CPU's slot tick to the end of the period).
    Deepest,
    /// As `Deepest`, but the slot tick wakes the CPU at every slot boundary, so each idle slot
    /// is its own period: a stock cpuidle governor under a per-slot tick (plain slot shifting
    /// with C-states enabled).
    DeepestPerSlot,
}

impl IdleGovernor {
    /// The name in summaries and docs.
    pub fn name(self) -> &'static str {
        match self {
            IdleGovernor::Shallowest => "shallowest",
            IdleGovernor::Deepest => "deepest",
            IdleGovernor::DeepestPerSlot => "deepest_per_slot",
        }
    }
}

/// CPUs of the model that do not appear in the trace (housekeeping CPUs, unmanaged cores).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unlisted {
    /// Busy at the maximum frequency for the whole run (conservative: a constant).
    ActiveAtMax,
    /// Left out of the package figure.
    Excluded,
}

#[derive(Clone, Copy, Debug)]
pub struct EstimateOptions {
    pub slot_us: u64,
    pub idle: IdleGovernor,
    pub unlisted: Unlisted,
}

#[derive(Debug, Error, PartialEq)]
pub enum EstimateError {
    #[error("trace has CPU {0}, which the power model does not describe")]
    UnknownCpu(u32),
    #[error("slot length must be > 0 µs")]
    ZeroSlot,
    #[error("record for CPU {cpu} slot {slot}: frequency {freq} is not in (0, 1]")]
    BadFreq { cpu: u32, slot: u64, freq: f64 },
}

/// Energy of one CPU over the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuEnergy {
    pub cpu: u32,
    pub active_j: f64,
    pub idle_j: f64,
    pub transition_j: f64,
    pub busy_s: f64,
    pub idle_s: f64,
    /// Seconds in each idle state, by state name.
    pub idle_state_s: BTreeMap<String, f64>,
    /// Idle periods (each one entry into an idle state).
    pub idle_periods: u64,
    pub freq_switches: u64,
    pub residency: FreqResidency,
}

impl CpuEnergy {
    pub fn total_j(&self) -> f64 {
        self.active_j + self.idle_j + self.transition_j
    }
}

/// Energy of a whole trace. Always an estimate from the model (see [`super::meter`] for
/// measured energy).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EnergyEstimate {
    pub model: String,
    pub duration_s: f64,
    pub uncore_j: f64,
    pub unlisted_j: f64,
    pub cpus: Vec<CpuEnergy>,
}

impl EnergyEstimate {
    pub fn cpus_j(&self) -> f64 {
        self.cpus.iter().map(CpuEnergy::total_j).sum()
    }

    pub fn package_j(&self) -> f64 {
        self.uncore_j + self.unlisted_j + self.cpus_j()
    }

    /// Average package power, W (0 for an empty trace).
    pub fn package_w(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.package_j() / self.duration_s
        } else {
            0.0
        }
    }

    /// Average power of the traced CPUs only, W per CPU.
    pub fn mean_cpu_w(&self) -> f64 {
        if self.duration_s > 0.0 && !self.cpus.is_empty() {
            self.cpus_j() / self.duration_s / self.cpus.len() as f64
        } else {
            0.0
        }
    }
}

/// Estimate the energy of `records` (any order, any CPUs of the model).
pub fn estimate(
    model: &PowerModel,
    records: &[SlotRecord],
    opts: EstimateOptions,
) -> Result<EnergyEstimate, EstimateError> {
    if opts.slot_us == 0 {
        return Err(EstimateError::ZeroSlot);
    }
    let mut by_cpu: BTreeMap<u32, Vec<&SlotRecord>> = BTreeMap::new();
    for r in records {
        by_cpu.entry(r.cpu).or_default().push(r);
    }
    let first = records.iter().map(|r| r.slot).min().unwrap_or(0);
    let last = records.iter().map(|r| r.slot + 1).max().unwrap_or(0);
    let duration_s = (last - first) as f64 * opts.slot_us as f64 * 1e-6;

    let mut cpus = Vec::with_capacity(by_cpu.len());
    for (cpu, mut recs) in by_cpu {
        let cluster = model
            .cluster_of(cpu)
            .ok_or(EstimateError::UnknownCpu(cpu))?;
        recs.sort_by_key(|r| r.slot);
        let mut acc = CpuAccumulator::new(cpu, cluster.clone(), first, opts);
        for r in recs {
            acc.push(r)?;
        }
        acc.advance_to(last);
        cpus.push(acc.snapshot());
    }
    let listed: Vec<u32> = cpus.iter().map(|c| c.cpu).collect();
    Ok(EnergyEstimate {
        model: model.name.clone(),
        duration_s,
        uncore_j: model.uncore_w * duration_s,
        unlisted_j: unlisted_w(model, &listed, opts.unlisted) * duration_s,
        cpus,
    })
}

/// Power of the model's CPUs not in `listed`, W.
pub fn unlisted_w(model: &PowerModel, listed: &[u32], unlisted: Unlisted) -> f64 {
    match unlisted {
        Unlisted::Excluded => 0.0,
        Unlisted::ActiveAtMax => model
            .clusters
            .iter()
            .map(|c| {
                let others = (c.first_cpu..c.first_cpu + c.cpu_count)
                    .filter(|cpu| !listed.contains(cpu))
                    .count();
                others as f64 * c.active_w(1.0)
            })
            .sum(),
    }
}

/// The energy of one CPU, fed one record at a time in slot order (used by [`estimate`] and by
/// the live estimated meter).
#[derive(Clone, Debug)]
pub struct CpuAccumulator {
    cluster: Cluster,
    slot_us: f64,
    idle: IdleGovernor,
    /// The first slot not yet accounted.
    next_slot: u64,
    freq: Option<f64>,
    prev_mhz: Option<u32>,
    /// The idle period still open: (µs, normalised freq).
    open_idle: Option<(f64, f64)>,
    e: CpuEnergy,
}

impl CpuAccumulator {
    /// Starts accounting at slot `first`.
    pub fn new(cpu: u32, cluster: Cluster, first: u64, opts: EstimateOptions) -> Self {
        Self {
            cluster,
            slot_us: opts.slot_us as f64,
            idle: opts.idle,
            next_slot: first,
            freq: None,
            prev_mhz: None,
            open_idle: None,
            e: CpuEnergy {
                cpu,
                ..CpuEnergy::default()
            },
        }
    }

    /// Account one record. Records for slots already accounted are ignored (the first record of
    /// a slot wins); missing slots before it are idle at the last frequency.
    pub fn push(&mut self, r: &SlotRecord) -> Result<(), EstimateError> {
        if !(r.freq > 0.0 && r.freq <= 1.0) {
            return Err(EstimateError::BadFreq {
                cpu: r.cpu,
                slot: r.slot,
                freq: r.freq,
            });
        }
        if r.slot < self.next_slot {
            return Ok(());
        }
        if self.freq.is_none() {
            self.freq = Some(r.freq);
        }
        self.advance_to(r.slot);
        if self.idle == IdleGovernor::DeepestPerSlot {
            self.close_idle();
        }
        self.freq = Some(r.freq);
        let slot = self.slot_us;
        match r.kind {
            SlotKind::Idle => self.idle_for(slot, r.freq),
            _ => {
                let busy = match (r.ran_ns, r.stolen_ns) {
                    (None, None) => slot,
                    (ran, stolen) => {
                        let ns = ran.unwrap_or(0) + stolen.unwrap_or(0);
                        (ns as f64 / 1000.0).min(slot)
                    }
                };
                if busy > 0.0 {
                    self.close_idle();
                    self.account(busy, r.freq, false);
                }
                self.idle_for(slot - busy, r.freq);
            }
        }
        self.next_slot = r.slot + 1;
        Ok(())
    }

    /// Account slots up to (not including) `slot` as idle at the last frequency.
    pub fn advance_to(&mut self, slot: u64) {
        let f = self.freq.unwrap_or(1.0);
        if self.idle == IdleGovernor::DeepestPerSlot {
            while self.next_slot < slot {
                self.close_idle();
                self.idle_for(self.slot_us, f);
                self.next_slot += 1;
            }
        } else if slot > self.next_slot {
            self.idle_for((slot - self.next_slot) as f64 * self.slot_us, f);
            self.next_slot = slot;
        }
    }

    /// The energy so far, counting the open idle period as if it ended now.
    pub fn snapshot(&self) -> CpuEnergy {
        let mut copy = self.clone();
        copy.close_idle();
        copy.e
    }

    fn idle_for(&mut self, us: f64, freq: f64) {
        if us <= 0.0 {
            return;
        }
        match &mut self.open_idle {
            Some((open, f)) if *f == freq => *open += us,
            _ => {
                self.close_idle();
                self.open_idle = Some((us, freq));
            }
        }
    }

    fn close_idle(&mut self) {
        if let Some((us, f)) = self.open_idle.take() {
            self.account(us, f, true);
        }
    }

    fn account(&mut self, us: f64, freq: f64, idle: bool) {
        let c = &self.cluster;
        let e = &mut self.e;
        let p = c.pstate_for(freq);
        let s = us * 1e-6;
        if let Some(prev) = self.prev_mhz {
            if prev != p.mhz {
                e.freq_switches += 1;
                let higher = c.active_w(f64::from(prev.max(p.mhz)) / f64::from(c.max_mhz()));
                e.transition_j += c.freq_switch_us * 1e-6 * higher;
            }
        }
        self.prev_mhz = Some(p.mhz);
        e.residency.add(p.mhz, s);
        if !idle {
            e.busy_s += s;
            e.active_j += p.active_w * s;
            return;
        }
        e.idle_s += s;
        e.idle_periods += 1;
        let allowed = match self.idle {
            IdleGovernor::Shallowest => 1,
            IdleGovernor::Deepest | IdleGovernor::DeepestPerSlot => c.idle_states.len(),
        };
        match c.deepest_fitting(us, allowed) {
            // No idle state at all: the CPU spins at its active power.
            None => e.idle_j += p.active_w * s,
            Some(k) => {
                let st = &c.idle_states[k];
                let w = c.idle_w(st, freq);
                e.idle_j += w * s;
                e.transition_j += c.transition_j(k, freq);
                *e.idle_state_s.entry(st.name.clone()).or_insert(0.0) += s;
            }
        }
    }
}

//! Energy readout: measured through powercap RAPL when the machine has it, otherwise estimated
//! from the power model and the per-slot records, and always labelled which one it is.
//!
//! # RAPL
//! Top-level zones `/sys/class/powercap/intel-rapl:N` (one per package; AMD parts use the same
//! control type) hold `name` (`package-N`), `energy_uj` (a counter) and `max_energy_range_uj`
//! (where it wraps to 0). Subzones (`intel-rapl:N:M`: core, uncore, dram) are inside the package
//! figure and are not added again. Between two samples
//! `delta = now ≥ last ? now − last : (max_energy_range_uj − last) + now`; the counter must be
//! sampled at least once per wrap period (hours at server power), which `read()` does.
//!
//! # Live reporting (`scx_tt` stats and exit summary)
//! The loader opens one [`EnergyMeter`] at start, feeds every per-slot record it writes to
//! [`EnergyMeter::record`] (ignored when measuring) and to a [`super::residency::FreqResidency`]
//! per CPU, and prints [`EnergyMeter::read`] (its `Display` carries the label) in stats and at exit.

use super::estimate::{unlisted_w, CpuAccumulator, EstimateError, EstimateOptions};
use super::model::PowerModel;
use super::sysfs_error::SysfsError;
use crate::trace::SlotRecord;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum MeterError {
    #[error("no RAPL zone under {0} and no power model to estimate with")]
    NoSource(PathBuf),
    #[error(transparent)]
    Sysfs(#[from] SysfsError),
    #[error(transparent)]
    Estimate(#[from] EstimateError),
}

/// Counter delta with one wrap-around at `max_range_uj`.
pub fn wrapping_delta_uj(last: u64, now: u64, max_range_uj: u64) -> u64 {
    if now >= last {
        now - last
    } else {
        max_range_uj.saturating_sub(last) + now
    }
}

/// Live estimate from per-slot records.
#[derive(Clone, Debug)]
pub struct ModelMeter {
    pub(crate) model: PowerModel,
    opts: EstimateOptions,
    first_slot: Option<u64>,
    end_slot: u64,
    cpus: BTreeMap<u32, CpuAccumulator>,
}

impl ModelMeter {
    pub fn new(model: PowerModel, opts: EstimateOptions) -> Self {
        Self {
            model,
            opts,
            first_slot: None,
            end_slot: 0,
            cpus: BTreeMap::new(),
        }
    }

    /// Feed one record (per CPU in slot order).
    pub fn record(&mut self, r: &SlotRecord) -> Result<(), EstimateError> {
        let first = *self.first_slot.get_or_insert(r.slot);
        self.end_slot = self.end_slot.max(r.slot + 1);
        let acc = match self.cpus.entry(r.cpu) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let cluster = self
                    .model
                    .cluster_of(r.cpu)
                    .ok_or(EstimateError::UnknownCpu(r.cpu))?;
                v.insert(CpuAccumulator::new(
                    r.cpu,
                    cluster.clone(),
                    first,
                    self.opts,
                ))
            }
        };
        acc.push(r)
    }

    /// Package energy so far, J.
    pub fn joules(&self) -> f64 {
        let slots = self.end_slot - self.first_slot.unwrap_or(self.end_slot);
        let secs = slots as f64 * self.opts.slot_us as f64 * 1e-6;
        let listed: Vec<u32> = self.cpus.keys().copied().collect();
        let cpus: f64 = self
            .cpus
            .values()
            .map(|a| {
                let mut a = a.clone();
                a.advance_to(self.end_slot);
                a.snapshot().total_j()
            })
            .sum();
        cpus + (self.model.uncore_w + unlisted_w(&self.model, &listed, self.opts.unlisted)) * secs
    }
}

/// Where a reading comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnergyLabel {
    /// powercap RAPL zones (their names).
    Measured { zones: Vec<String> },
    /// The named power model.
    Estimated { model: String },
}

#[derive(Clone, Debug, PartialEq)]
pub struct EnergyReading {
    pub joules: f64,
    pub label: EnergyLabel,
}

/// `12.345 J (measured: RAPL package-0)` or `12.345 J (estimate: model xeon-gold-5218)`.
impl fmt::Display for EnergyReading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.label {
            EnergyLabel::Measured { zones } => {
                write!(
                    f,
                    "{:.3} J (measured: RAPL {})",
                    self.joules,
                    zones.join("+")
                )
            }
            EnergyLabel::Estimated { model } => {
                write!(f, "{:.3} J (estimate: model {model})", self.joules)
            }
        }
    }
}

impl ModelMeter {
    /// The name of the model it estimates with.
    pub fn model_name(&self) -> &str {
        &self.model.name
    }
}

//! Live energy for the run mode (docs/energy.md §3): RAPL when the machine has it, otherwise the
//! power model's estimate from the slot records, labelled either way. Neither a missing RAPL
//! (the test VM) nor a broken one stops the run: the first falls back to the estimate, the
//! second is reported once and leaves the energy figure out.

use scx_tt::accounting::EnergySummary;
use scx_tt::energy::estimate::{EstimateOptions, IdleGovernor, Unlisted};
use scx_tt::energy::meter::{EnergyMeter, ModelMeter, RaplMeter};
use scx_tt::energy::model::PowerModel;
use scx_tt::energy::sysfs::Root;
use scx_tt::trace::SlotRecord;

pub struct LiveEnergy {
    /// `None` once energy became unavailable (reported on stderr).
    meter: Option<EnergyMeter>,
}

impl LiveEnergy {
    /// RAPL under `root` if present and readable; else the estimate of `model`, when it
    /// describes every managed CPU; else no energy figure.
    pub fn open(root: &Root, model: &PowerModel, managed: &[u32], slot_us: u64) -> Self {
        let rapl = RaplMeter::open(root).unwrap_or_else(|e| {
            eprintln!("scx_tt: warning: reading RAPL: {e}; energy will be the model's estimate");
            None
        });
        if let Some(r) = rapl {
            return LiveEnergy {
                meter: Some(EnergyMeter::Measured(r)),
            };
        }
        if let Some(cpu) = managed.iter().find(|&&c| model.cluster_of(c).is_none()) {
            eprintln!(
                "scx_tt: warning: no RAPL under {} and power model {} does not describe managed \
                 CPU {cpu} ({} CPUs); no energy figure (give --power-model FILE)",
                root.dir().display(),
                model.name,
                model.cpu_count()
            );
            return LiveEnergy { meter: None };
        }
        let opts = EstimateOptions {
            slot_us,
            // The BPF scheduler does not limit idle states: a perfect cpuidle governor picks
            // the deepest that pays off for each idle period.
            idle: IdleGovernor::Deepest,
            // Housekeeping and unmanaged CPUs run what they like; only what the plan decides
            // is estimated (plus uncore).
            unlisted: Unlisted::Excluded,
        };
        LiveEnergy {
            meter: Some(EnergyMeter::Estimated(ModelMeter::new(model.clone(), opts))),
        }
    }

    /// One line for `-v`: where the energy figure comes from.
    pub fn describe(&self) -> String {
        match &self.meter {
            Some(EnergyMeter::Measured(r)) => {
                format!("energy measured from RAPL ({} zones)", r.zones().len())
            }
            Some(EnergyMeter::Estimated(_)) => {
                "energy estimated from the power model (no RAPL)".to_string()
            }
            None => "no energy figure".to_string(),
        }
    }

    /// Feed a slot record (used by the estimate).
    pub fn record(&mut self, r: &SlotRecord) {
        let Some(m) = self.meter.as_mut() else {
            return;
        };
        if let Err(e) = m.record(r) {
            eprintln!("scx_tt: warning: energy estimate stopped: {e}");
            self.meter = None;
        }
    }

    /// The energy since the start; `None` when unavailable or when this reading failed.
    pub fn read(&mut self) -> Option<EnergySummary> {
        match self.meter.as_mut()?.read() {
            Ok(r) => Some(EnergySummary::from(&r)),
            Err(e) => {
                eprintln!("scx_tt: warning: reading energy: {e}");
                None
            }
        }
    }
}

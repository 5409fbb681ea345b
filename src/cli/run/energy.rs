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

#[cfg(test)]
mod tests {
    use super::*;
    use scx_tt::accounting::EnergyKind;
    use scx_tt::energy::model;
    use scx_tt::trace::SlotKind;
    use std::path::PathBuf;

    /// A temporary directory standing for `/`, removed on drop.
    struct FakeRoot(PathBuf);

    impl FakeRoot {
        fn new(tag: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("scx_tt-live-energy-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            FakeRoot(dir)
        }

        fn put(&self, abs: &str, text: &str) {
            let p = self.0.join(abs.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }

        fn root(&self) -> Root {
            Root::new(self.0.clone())
        }
    }

    impl Drop for FakeRoot {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn xeon() -> PowerModel {
        model::from_str(super::super::BUNDLED_MODEL).expect("bundled model")
    }

    fn busy(slot: u64) -> SlotRecord {
        SlotRecord {
            slot,
            cpu: 1,
            kind: SlotKind::Tt,
            task: Some("a".into()),
            freq: 1.0,
            idle_until: None,
            ran_ns: Some(10_000_000),
            stolen_ns: Some(0),
            late_ns: Some(0),
        }
    }

    #[test]
    fn rapl_under_the_root_is_measured_with_wrap_around() {
        let fake = FakeRoot::new("rapl");
        let zone = "/sys/class/powercap/intel-rapl:0";
        fake.put(&format!("{zone}/name"), "package-0\n");
        fake.put(&format!("{zone}/max_energy_range_uj"), "1000000\n");
        fake.put(&format!("{zone}/energy_uj"), "900000\n");
        let mut e = LiveEnergy::open(&fake.root(), &xeon(), &[1], 10_000);
        // 900000 → wraps at 1000000 → 400000: 100000 + 400000 µJ = 0.5 J.
        fake.put(&format!("{zone}/energy_uj"), "400000\n");
        let r = e.read().expect("reading");
        assert_eq!(r.label, EnergyKind::Measured);
        assert_eq!(r.source, "RAPL package-0");
        assert!((r.joules - 0.5).abs() < 1e-9, "{}", r.joules);
    }

    #[test]
    fn no_rapl_is_the_labelled_estimate_of_the_records() {
        let fake = FakeRoot::new("none");
        let mut e = LiveEnergy::open(&fake.root(), &xeon(), &[1], 10_000);
        e.record(&busy(0));
        e.record(&busy(1));
        let r = e.read().expect("estimate");
        assert_eq!(r.label, EnergyKind::Estimated);
        assert_eq!(r.source, "model xeon-gold-5218");
        // 20 ms: uncore 25 W × 0.02 s = 0.5 J + CPU 1 busy at 2300 MHz, 6.25 W × 0.02 s =
        // 0.125 J; no idle, no frequency change.
        assert!((r.joules - 0.625).abs() < 1e-9, "{}", r.joules);
    }

    #[test]
    fn a_model_without_a_managed_cpu_leaves_the_energy_out_instead_of_failing() {
        let fake = FakeRoot::new("nocpu");
        let mut e = LiveEnergy::open(&fake.root(), &xeon(), &[99], 10_000);
        e.record(&busy(0));
        assert_eq!(e.read(), None);
    }
}

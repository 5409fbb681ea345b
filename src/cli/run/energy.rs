//! Live energy for the run mode (docs/energy.md §3): RAPL when the machine has it, otherwise the
//! power model's estimate from the slot records, labelled either way. Neither a missing RAPL
//! (the test VM) nor a broken one stops the run: the first falls back to the estimate, the
//! second is reported once and leaves the energy figure out.
//!
//! The estimate prices idle slots by the running policy's idle rule, the one `scx_tt simulate`
//! uses (`Policy::idle_governor`: bss and dvfs shallowest, dpm deepest over gathered periods),
//! which `--idle-control policy` (idle_ctl.rs) makes the managed cores follow; a static table
//! (no `--planner`), `--idle-control kernel` or a machine without pm_qos files by what the kernel
//! does: nothing then limits idle states or defers the slot tick, so a stock cpuidle governor
//! picks the deepest state that pays off within each idle slot (`deepest_per_slot`). A policy swap starts a new segment
//! from its first slot; the summary gives each segment's part (they add up to the total).
//! RAPL's figure is the package's over the run and is not split.

use scx_tt::accounting::{EnergyKind, EnergySegment, EnergySummary};
use scx_tt::energy::estimate::{EstimateOptions, IdleGovernor, Unlisted};
use scx_tt::energy::meter::{ModelMeter, RaplMeter};
use scx_tt::energy::model::PowerModel;
use scx_tt::energy::sysfs::Root;
use scx_tt::planner::Policy;
use scx_tt::trace::SlotRecord;

/// Slots priced under one idle rule, from `from_slot` on.
struct Segment {
    /// The policy (planner mode) or `None` for a static table.
    policy: Option<Policy>,
    from_slot: u64,
    rule: IdleGovernor,
    meter: ModelMeter,
}

enum Source {
    Measured(RaplMeter),
    Estimated {
        model: PowerModel,
        slot_us: u64,
        /// Idle states are the kernel's (not the policy's): every segment deepest per slot.
        kernel_idle: bool,
        /// In `from_slot` order.
        segments: Vec<Segment>,
    },
}

pub struct LiveEnergy {
    /// `None` once energy became unavailable (reported on stderr).
    source: Option<Source>,
}

/// The idle rule of `policy`, or of a static table (`None`) or idle states left to the kernel
/// (`kernel_idle`; see the module doc).
pub fn idle_rule(policy: Option<Policy>, kernel_idle: bool) -> IdleGovernor {
    match policy {
        Some(p) if !kernel_idle => p.idle_governor(),
        _ => IdleGovernor::DeepestPerSlot,
    }
}

fn meter(model: &PowerModel, slot_us: u64, rule: IdleGovernor) -> ModelMeter {
    let opts = EstimateOptions {
        slot_us,
        idle: rule,
        // Housekeeping and unmanaged CPUs run what they like; only what the plan decides
        // is estimated (plus uncore).
        unlisted: Unlisted::Excluded,
    };
    ModelMeter::new(model.clone(), opts)
}

impl LiveEnergy {
    /// RAPL under `root` if present and readable; else the estimate of `model` priced under
    /// `policy`'s idle rule (the kernel's when `kernel_idle`), when it describes every managed
    /// CPU; else no energy figure.
    pub fn open(
        root: &Root,
        model: &PowerModel,
        managed: &[u32],
        slot_us: u64,
        policy: Option<Policy>,
        kernel_idle: bool,
    ) -> Self {
        let rapl = RaplMeter::open(root).unwrap_or_else(|e| {
            eprintln!("scx_tt: warning: reading RAPL: {e}; energy will be the model's estimate");
            None
        });
        if let Some(r) = rapl {
            return LiveEnergy {
                source: Some(Source::Measured(r)),
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
            return LiveEnergy { source: None };
        }
        LiveEnergy {
            source: Some(Source::Estimated {
                model: model.clone(),
                slot_us,
                kernel_idle,
                segments: vec![Segment {
                    policy,
                    from_slot: 0,
                    rule: idle_rule(policy, kernel_idle),
                    meter: meter(model, slot_us, idle_rule(policy, kernel_idle)),
                }],
            }),
        }
    }

    /// One line for `-v`: where the energy figure comes from.
    pub fn describe(&self) -> String {
        match &self.source {
            Some(Source::Measured(r)) => {
                format!("energy measured from RAPL ({} zones)", r.zones().len())
            }
            Some(Source::Estimated { segments, .. }) => format!(
                "energy estimated from the power model (no RAPL), idle slots priced {}",
                segments.last().map_or("", |g| g.rule.name())
            ),
            None => "no energy figure".to_string(),
        }
    }

    /// The policy changes to `policy` from slot `from_slot` on (a swap over `--control`): the
    /// estimate prices the slots from there under its idle rule, as a segment of its own.
    pub fn policy_from(&mut self, policy: Policy, from_slot: u64) {
        if let Some(Source::Estimated {
            model,
            slot_us,
            kernel_idle,
            segments,
        }) = self.source.as_mut()
        {
            let rule = idle_rule(Some(policy), *kernel_idle);
            // two swaps before a slot was decided: the later one replaces the earlier (no
            // record of a slot at or after `from_slot`, the planner's next undecided one, has
            // come yet)
            segments.retain(|g| g.from_slot < from_slot);
            segments.push(Segment {
                policy: Some(policy),
                from_slot,
                rule,
                meter: meter(model, *slot_us, rule),
            });
        }
    }

    /// Feed a slot record (used by the estimate): to the segment its slot belongs to.
    pub fn record(&mut self, r: &SlotRecord) {
        let Some(Source::Estimated { segments, .. }) = self.source.as_mut() else {
            return;
        };
        let Some(g) = segments.iter_mut().rev().find(|g| g.from_slot <= r.slot) else {
            return;
        };
        if let Err(e) = g.meter.record(r) {
            eprintln!("scx_tt: warning: energy estimate stopped: {e}");
            self.source = None;
        }
    }

    /// The energy since the start; `None` when unavailable or when this reading failed.
    pub fn read(&mut self) -> Option<EnergySummary> {
        match self.source.as_mut()? {
            Source::Measured(r) => match r.poll() {
                Ok(uj) => Some(EnergySummary {
                    joules: uj as f64 * 1e-6,
                    label: EnergyKind::Measured,
                    source: format!(
                        "RAPL {}",
                        r.zones()
                            .iter()
                            .map(|z| z.name.as_str())
                            .collect::<Vec<_>>()
                            .join("+")
                    ),
                    segments: Vec::new(),
                }),
                Err(e) => {
                    eprintln!("scx_tt: warning: reading energy: {e}");
                    None
                }
            },
            Source::Estimated {
                model, segments, ..
            } => {
                let parts: Vec<EnergySegment> = segments
                    .iter()
                    .map(|g| EnergySegment {
                        policy: g.policy.map_or("static table".into(), |p| p.name().into()),
                        from_slot: g.from_slot,
                        idle: g.rule.name().into(),
                        joules: g.meter.joules(),
                    })
                    .collect();
                Some(EnergySummary {
                    joules: parts.iter().map(|g| g.joules).sum(),
                    label: EnergyKind::Estimated,
                    source: format!("model {}", model.name),
                    // outside planner mode there is one segment and nothing to split
                    segments: if segments.iter().any(|g| g.policy.is_some()) {
                        parts
                    } else {
                        Vec::new()
                    },
                })
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
        let mut e = LiveEnergy::open(&fake.root(), &xeon(), &[1], 10_000, None, false);
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
        let mut e = LiveEnergy::open(&fake.root(), &xeon(), &[1], 10_000, None, false);
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
        let mut e = LiveEnergy::open(&fake.root(), &xeon(), &[99], 10_000, None, false);
        e.record(&busy(0));
        assert_eq!(e.read(), None);
    }

    fn idle(slot: u64) -> SlotRecord {
        SlotRecord {
            kind: SlotKind::Idle,
            task: None,
            freq: 1.0,
            ran_ns: Some(0),
            ..busy(slot)
        }
    }

    /// Slots 0 and 11 busy, 1..=10 idle.
    fn feed(e: &mut LiveEnergy, slots: std::ops::Range<u64>) {
        for t in slots {
            e.record(&if t == 0 || t == 11 { busy(t) } else { idle(t) });
        }
    }

    /// What a ModelMeter alone gives for `slots` under `idle` (the reference).
    fn reference(idle_rule: IdleGovernor, slots: std::ops::Range<u64>) -> f64 {
        let mut m = ModelMeter::new(
            xeon(),
            EstimateOptions {
                slot_us: 10_000,
                idle: idle_rule,
                unlisted: Unlisted::Excluded,
            },
        );
        for t in slots {
            m.record(&if t == 0 || t == 11 { busy(t) } else { idle(t) })
                .expect("record");
        }
        m.joules()
    }

    #[test]
    fn idle_slots_are_priced_by_the_running_policys_rule() {
        let fake = FakeRoot::new("rule");
        let by = |policy| {
            let mut e = LiveEnergy::open(&fake.root(), &xeon(), &[1], 10_000, policy, false);
            feed(&mut e, 0..12);
            e.read().expect("estimate")
        };
        let bss = by(Some(Policy::Bss));
        let dvfs = by(Some(Policy::Dvfs));
        let table = by(None);
        assert!((bss.joules - reference(IdleGovernor::Shallowest, 0..12)).abs() < 1e-12);
        assert_eq!(bss.joules, dvfs.joules, "same rule, same records");
        assert!((table.joules - reference(IdleGovernor::DeepestPerSlot, 0..12)).abs() < 1e-12);
        assert!(
            table.joules < bss.joules,
            "a sleeping core costs less than a polling one"
        );
        assert!(
            table.segments.is_empty(),
            "a static table has nothing to split"
        );
        assert_eq!(bss.segments.len(), 1);
        assert_eq!(bss.segments[0].idle, "shallowest");
    }

    #[test]
    fn a_policy_swap_starts_a_segment_and_the_segments_add_up() {
        let fake = FakeRoot::new("swap");
        let mut e = LiveEnergy::open(
            &fake.root(),
            &xeon(),
            &[1],
            10_000,
            Some(Policy::Dvfs),
            false,
        );
        e.policy_from(Policy::Bss, 9); // replaced by the next one: same undecided slot
        e.policy_from(Policy::Dpm, 6);
        feed(&mut e, 0..12);
        let r = e.read().expect("estimate");
        let parts: Vec<(&str, u64, &str)> = r
            .segments
            .iter()
            .map(|g| (g.policy.as_str(), g.from_slot, g.idle.as_str()))
            .collect();
        assert_eq!(parts, [("dvfs", 0, "shallowest"), ("dpm", 6, "deepest")]);
        let first = reference(IdleGovernor::Shallowest, 0..6);
        let second = {
            let mut m = ModelMeter::new(
                xeon(),
                EstimateOptions {
                    slot_us: 10_000,
                    idle: IdleGovernor::Deepest,
                    unlisted: Unlisted::Excluded,
                },
            );
            for t in 6..12 {
                m.record(&if t == 11 { busy(t) } else { idle(t) })
                    .expect("record");
            }
            m.joules()
        };
        assert!((r.segments[0].joules - first).abs() < 1e-12, "{r:?}");
        assert!((r.segments[1].joules - second).abs() < 1e-12, "{r:?}");
        assert!((r.joules - first - second).abs() < 1e-12);
        assert!(r.to_string().contains("dpm from slot 6"), "{r}");
    }
}

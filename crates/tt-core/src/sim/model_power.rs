//! The power model as `simulate`'s per-slot charge ([`super::power::SlotPower`]), so
//! `scx_tt simulate` can report energy from `models/*.json` instead of the placeholder.
//!
//! ```text
//! busy slot at f:              active_w(f) · slot
//! idle slot (not in DPM):      idle power of the state `idle` picks for one slot at f, plus
//!                              its transition (the slot tick wakes the CPU every slot)
//! DPM idle period of n slots:  deepest state fitting n · slot, plus one transition
//! ```
//! Charges one cluster (the managed CPUs' cluster); the same arithmetic as
//! [`crate::energy::estimate`] for a single CPU.

use super::power::SlotPower;
use crate::energy::estimate::IdleGovernor;
use crate::energy::model::Cluster;

#[derive(Clone, Debug)]
pub struct ModelPower {
    pub cluster: Cluster,
    /// `Shallowest`: the paper's BSS/DVFS set-up; otherwise idle slots use the deepest state
    /// that fits one slot.
    pub idle: IdleGovernor,
}

impl ModelPower {
    fn idle_period_j(&self, us: f64, freq: f64, allowed: usize) -> f64 {
        let c = &self.cluster;
        let active = c.active_w(freq);
        match c.deepest_fitting(us, allowed) {
            None => active * us * 1e-6,
            Some(k) => {
                let s = &c.idle_states[k];
                let w = c.idle_w(s, freq);
                w * us * 1e-6 + c.transition_j(k, freq)
            }
        }
    }
}

impl SlotPower for ModelPower {
    fn busy_j(&self, f: f64, slot_s: f64) -> f64 {
        self.cluster.active_w(f) * slot_s
    }

    fn idle_j(&self, f: f64, slot_s: f64) -> f64 {
        let allowed = match self.idle {
            IdleGovernor::Shallowest => 1,
            IdleGovernor::Deepest | IdleGovernor::DeepestPerSlot => self.cluster.idle_states.len(),
        };
        self.idle_period_j(slot_s * 1e6, f, allowed)
    }

    fn sleep_j(&self, secs: f64, f: f64, _slot_s: f64) -> f64 {
        let n = self.cluster.idle_states.len();
        self.idle_period_j(secs * 1e6, f, n)
    }

    /// The model's `freq_switch_us` at the active power of the higher P-state, when the P-state
    /// changes (as `energy::estimate` charges it).
    fn switch_j(&self, from: f64, to: f64) -> f64 {
        let c = &self.cluster;
        let (a, b) = (c.pstate_for(from).mhz, c.pstate_for(to).mhz);
        if a == b {
            return 0.0;
        }
        c.freq_switch_us * 1e-6 * c.active_w(f64::from(a.max(b)) / f64::from(c.max_mhz()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::model;

    fn xeon() -> Cluster {
        let text = include_str!("../../../../models/xeon-gold-5218.json");
        model::from_str(text).expect("model").clusters[0].clone()
    }

    #[test]
    fn busy_slot_is_active_power_times_slot() {
        let p = ModelPower {
            cluster: xeon(),
            idle: IdleGovernor::Shallowest,
        };
        // 1 ms at 2.3 GHz: 6.25 W · 0.001 s.
        assert!((p.busy_j(1.0, 0.001) - 0.00625).abs() < 1e-12);
    }

    #[test]
    fn dpm_period_uses_c6_and_pays_one_exit() {
        let p = ModelPower {
            cluster: xeon(),
            idle: IdleGovernor::Shallowest,
        };
        // 3 slots of 1 ms = 3000 µs ≥ 600 µs: C6 0.05 W · 0.003 s plus the transition
        // (6.25 − 1.0) W · 2 µs + (1.0 − 0.7) W · 20 µs + (0.7 − 0.05) W · 600 µs = 406.5 µJ.
        let want = 0.05 * 0.003 + 406.5e-6;
        assert!((p.sleep_j(0.003, 1.0, 0.001) - want).abs() < 1e-12);
        // Polling one idle slot at full speed costs the active power.
        assert!((p.idle_j(1.0, 0.001) - 0.00625).abs() < 1e-12);
    }
}

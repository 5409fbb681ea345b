//! The power model `simulate` charges each slot with: a small trait so the energy module's
//! measured model can replace the placeholder.
//!
//! # Placeholder model (until the energy issue lands)
//! ```text
//! busy slot at normalised f:      P = static_w + dynamic_w · f³      (P ∝ f·V², V ∝ f)
//! idle slot, not in a DPM period: P = idle_w                        (shallow C-state)
//! DPM idle period of n slots:     P = sleep_w for every slot, plus wake_j once per period
//!                                 if n ≥ break_even_slots, otherwise idle_w
//! ```
//! Default numbers are round figures for one server core (static 2 W, dynamic 8 W at full speed,
//! shallow idle 1.5 W, deep sleep 0.2 W, 1 mJ per wake-up, break-even 2 slots); they only rank
//! policies, they are not a measurement.

/// Energy of slots.
pub trait SlotPower {
    /// Joules of one busy slot of `slot_s` seconds at normalised frequency `f`.
    fn busy_j(&self, f: f64, slot_s: f64) -> f64;
    /// Joules of one idle slot outside a DPM idle period (the CPU polls the next slot).
    fn idle_j(&self, f: f64, slot_s: f64) -> f64;
    /// Joules of a DPM idle period of `secs` seconds (its idle slots, plus the rest of the slot
    /// before them when a job finished early in it at the same frequency) at normalised
    /// frequency `f` (the frequency its slots are recorded at), wake-up included; `slot_s` is
    /// the slot length.
    fn sleep_j(&self, secs: f64, f: f64, slot_s: f64) -> f64;
    /// Joules of switching from normalised frequency `from` to `to` between two slots (0 when
    /// they are the same operating point). The placeholder has no switch cost.
    fn switch_j(&self, _from: f64, _to: f64) -> f64 {
        0.0
    }
}

/// The documented placeholder (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaceholderPower {
    pub static_w: f64,
    pub dynamic_w: f64,
    pub idle_w: f64,
    pub sleep_w: f64,
    pub wake_j: f64,
    pub break_even_slots: u64,
}

impl Default for PlaceholderPower {
    fn default() -> Self {
        PlaceholderPower {
            static_w: 2.0,
            dynamic_w: 8.0,
            idle_w: 1.5,
            sleep_w: 0.2,
            wake_j: 0.001,
            break_even_slots: 2,
        }
    }
}

impl SlotPower for PlaceholderPower {
    fn busy_j(&self, f: f64, slot_s: f64) -> f64 {
        (self.static_w + self.dynamic_w * f * f * f) * slot_s
    }
    fn idle_j(&self, _f: f64, slot_s: f64) -> f64 {
        self.idle_w * slot_s
    }
    fn sleep_j(&self, secs: f64, _f: f64, slot_s: f64) -> f64 {
        if secs >= self.break_even_slots as f64 * slot_s {
            self.sleep_w * secs + self.wake_j
        } else {
            self.idle_w * secs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_frequency_costs_less_per_slot_and_deep_sleep_beats_polling() {
        let p = PlaceholderPower::default();
        // 2 + 8·0.5³ = 3 W vs 10 W at full speed, 1 ms slots.
        assert!((p.busy_j(0.5, 1e-3) - 3e-3).abs() < 1e-12);
        assert!((p.busy_j(1.0, 1e-3) - 10e-3).abs() < 1e-12);
        // 10 slots: 0.2·10·1e-3 + 1e-3 = 3 mJ asleep vs 15 mJ polling.
        assert!(p.sleep_j(10.0 * 1e-3, 1.0, 1e-3) < 10.0 * p.idle_j(1.0, 1e-3));
        // Below break-even a sleep is charged as polling.
        assert_eq!(p.sleep_j(1e-3, 1.0, 1e-3), p.idle_j(1.0, 1e-3));
    }
}

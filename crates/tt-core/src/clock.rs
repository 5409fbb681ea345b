//! The slot clock: the one grid every part of scx_tt counts slots on. Slot `k` is
//! `[t0_ns + k·slot_ns, t0_ns + (k+1)·slot_ns)` of CLOCK_MONOTONIC (the clock of
//! `bpf_ktime_get_ns()`), with `t0_ns` the epoch the loader armed the BPF slot timers with.
//! The BPF side computes the same grid (src/bpf/tt_sched.bpf.c, B); the control protocol, the
//! planner thread and the run edge read slots through [`SlotClock`] only.

/// The slot grid of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotClock {
    /// Start of slot 0, ns of CLOCK_MONOTONIC.
    pub t0_ns: u64,
    /// Slot length, ns (> 0).
    pub slot_ns: u64,
}

impl SlotClock {
    pub fn new(t0_ns: u64, slot_ns: u64) -> Self {
        SlotClock {
            t0_ns,
            slot_ns: slot_ns.max(1),
        }
    }

    /// The slot in progress at `now_ns`; `None` before slot 0 starts.
    pub fn slot_at(&self, now_ns: u64) -> Option<u64> {
        (now_ns >= self.t0_ns).then(|| (now_ns - self.t0_ns) / self.slot_ns.max(1))
    }

    /// The slot in progress at `now_ns`, slot 0 before it starts.
    pub fn slot_or_first(&self, now_ns: u64) -> u64 {
        self.slot_at(now_ns).unwrap_or(0)
    }

    /// When slot `slot` starts (saturating at `u64::MAX`).
    pub fn start_ns(&self, slot: u64) -> u64 {
        self.t0_ns.saturating_add(slot.saturating_mul(self.slot_ns))
    }
}

/// The first release at or after `now`: `t0 + k * period`.
pub fn first_release(t0: u64, period: u64, now: u64) -> u64 {
    if now <= t0 {
        return t0;
    }
    t0 + (now - t0).div_ceil(period) * period
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_half_open_intervals_from_t0() {
        let c = SlotClock::new(1_000, 10);
        assert_eq!(c.slot_at(999), None);
        assert_eq!(c.slot_or_first(999), 0);
        assert_eq!(c.slot_at(1_000), Some(0));
        assert_eq!(c.slot_at(1_009), Some(0));
        assert_eq!(c.slot_at(1_010), Some(1));
        assert_eq!(c.start_ns(3), 1_030);
    }

    #[test]
    fn extreme_slots_saturate_instead_of_wrapping() {
        let c = SlotClock::new(u64::MAX - 5, 10);
        assert_eq!(c.start_ns(1), u64::MAX);
        assert_eq!(c.slot_at(u64::MAX), Some(0));
        assert_eq!(
            SlotClock::new(0, 0).slot_ns,
            1,
            "a zero slot length cannot divide by 0"
        );
    }
}

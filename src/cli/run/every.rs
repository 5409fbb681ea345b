//! The periodic duties of the run loop (ring buffer, control socket, exit checks, `--stats`):
//! each is due at a deadline on CLOCK_MONOTONIC and then every period after it
//! (`next += every`, so the period does not drift with the loop's own work). A duty run late by
//! more than a period is resynchronised to one period after now instead of catching up with a
//! burst of runs.
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Every {
    every_ns: u64,
    next_ns: u64,
}

impl Every {
    /// First due one period after `now_ns`.
    pub fn new(now_ns: u64, every_ns: u64) -> Self {
        let every_ns = every_ns.max(1);
        Every {
            every_ns,
            next_ns: now_ns.saturating_add(every_ns),
        }
    }

    /// When it is due next.
    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }

    /// Whether it is due at `now_ns`; if so, the deadline moves on by a period.
    pub fn due(&mut self, now_ns: u64) -> bool {
        if now_ns < self.next_ns {
            return false;
        }
        self.next_ns = self.next_ns.saturating_add(self.every_ns);
        if self.next_ns <= now_ns {
            self.next_ns = now_ns.saturating_add(self.every_ns);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_advance_by_the_period_without_drift() {
        let mut e = Every::new(1_000, 100);
        assert!(!e.due(1_099));
        // run 30 ns late: the next deadline is still on the grid (1200), not 1130 + 100
        assert!(e.due(1_130));
        assert_eq!(e.next_ns(), 1_200);
        assert!(!e.due(1_199));
        assert!(e.due(1_200));
        assert_eq!(e.next_ns(), 1_300);
    }

    #[test]
    fn a_duty_late_by_more_than_a_period_resynchronises_instead_of_bursting() {
        let mut e = Every::new(0, 100);
        // due at 100, looked at only at 450: one run, then due a period after now
        assert!(e.due(450));
        assert_eq!(e.next_ns(), 550);
        assert!(!e.due(451));
    }

    #[test]
    fn a_zero_period_is_one_nanosecond() {
        let mut e = Every::new(5, 0);
        assert_eq!(e.next_ns(), 6);
        assert!(e.due(6));
        assert_eq!(e.next_ns(), 7);
    }
}

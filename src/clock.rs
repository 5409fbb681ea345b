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

/// Nanoseconds of CLOCK_MONOTONIC, the clock of `bpf_ktime_get_ns()`.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Nanoseconds of clock `id`.
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until `ns` of CLOCK_MONOTONIC (absolute, so repeated sleeps do not drift; a signal
/// only resumes the sleep).
pub fn sleep_until_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is a valid timespec; the remaining-time pointer may be null for TIMER_ABSTIME.
    // The only other error, EINVAL, needs a bad timespec, which the division above rules out.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

// ---- helpers of the workload programs (src/bin/tt_jobs.rs, src/bin/tt_component.rs) ----

/// The first release at or after `now`: `t0 + k * period`.
pub fn first_release(t0: u64, period: u64, now: u64) -> u64 {
    if now <= t0 {
        return t0;
    }
    t0 + (now - t0).div_ceil(period) * period
}

/// CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Spins until the calling thread has used `ns` more CPU time (preemption does not shorten it).
pub fn spin_cpu(ns: u64) {
    let end = thread_cpu_ns() + ns;
    while thread_cpu_ns() < end {
        std::hint::spin_loop();
    }
}

/// Spins until CLOCK_MONOTONIC reaches `ns`.
pub fn spin_until(ns: u64) {
    while monotonic_ns() < ns {
        std::hint::spin_loop();
    }
}

/// How long [`t0_from`] waits for the header: a workload that scx_tt spawns reads it once scx_tt
/// has attached, after the kernel verified the BPF program (seconds under TCG, more on a loaded
/// host).
pub const T0_FROM_WAIT_S: u64 = 120;

/// `t0_ns` of the first line of `path` (a JSON object: scx_tt's `--trace` header), waiting up
/// to [`T0_FROM_WAIT_S`] for the file and the line.
pub fn t0_from(path: &std::path::Path) -> Result<u64, String> {
    let start = std::time::Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Some(line) = text.lines().next().filter(|_| text.contains('\n')) {
                let v: serde_json::Value = serde_json::from_str(line)
                    .map_err(|e| format!("the first line of {}: {e}", path.display()))?;
                return v["t0_ns"]
                    .as_u64()
                    .ok_or_else(|| format!("{} has no t0_ns in its header", path.display()));
            }
        }
        if start.elapsed() > std::time::Duration::from_secs(T0_FROM_WAIT_S) {
            return Err(format!(
                "{} did not get its header line within {T0_FROM_WAIT_S} s",
                path.display()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
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

    #[test]
    fn the_monotonic_clock_does_not_go_back() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(b >= a, "{a} then {b}");
        sleep_until_ns(monotonic_ns() + 1_000_000);
        assert!(monotonic_ns() >= b + 1_000_000);
    }
}

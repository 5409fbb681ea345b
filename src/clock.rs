//! The OS side of the slot clock: CLOCK_MONOTONIC (the clock of `bpf_ktime_get_ns()`), absolute
//! sleeps and the workload programs' CPU-time helpers. The grid itself ([`SlotClock`]) is pure
//! and lives in the core (`tt_core::clock`); it is re-exported here so that `scx_tt::clock` is
//! the one place to look.

pub use tt_core::clock::*;

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
    fn the_monotonic_clock_does_not_go_back() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(b >= a, "{a} then {b}");
        sleep_until_ns(monotonic_ns() + 1_000_000);
        assert!(monotonic_ns() >= b + 1_000_000);
    }
}

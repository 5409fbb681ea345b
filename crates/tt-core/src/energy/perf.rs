//! Normalised frequency → `scx_bpf_cpuperf_set()` performance target.
//!
//! sched_ext expresses a CPU's performance target in `[1, SCX_CPUPERF_ONE]` with
//! `SCX_CPUPERF_ONE = 1024` meaning the CPU's maximum performance; schedutil turns it into a
//! frequency. The planner's normalised frequency `f ∈ (0, 1]` is relative to the same maximum, so
//! the target is `⌈f · 1024⌉`, rounded up so a job never runs slower than planned.

use crate::abi::PERF_ONE as CPUPERF_ONE;

/// The cpuperf target for normalised frequency `freq`: `⌈freq · 1024⌉` clamped to `[1, 1024]`;
/// NaN or non-positive values give the minimum target 1.
pub fn cpuperf_target(freq: f64) -> u32 {
    if freq.is_nan() || freq <= 0.0 {
        return 1;
    }
    // Subtract a rounding tolerance so f = k/1024 computed in floating point maps back to k.
    let t = (freq * f64::from(CPUPERF_ONE) - 1e-9).ceil();
    (t as u32).clamp(1, CPUPERF_ONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_speed_is_cpuperf_one() {
        assert_eq!(cpuperf_target(1.0), 1024);
        assert_eq!(cpuperf_target(1.5), 1024);
    }

    #[test]
    fn rounds_up_so_a_job_never_runs_slower() {
        // 1.0 GHz of 2.3 GHz: 1024 · 0.43478 = 445.2 -> 446.
        assert_eq!(cpuperf_target(1000.0 / 2300.0), 446);
        assert_eq!(cpuperf_target(0.5), 512);
        assert_eq!(cpuperf_target(513.0 / 1024.0), 513);
    }

    #[test]
    fn degenerate_inputs_give_the_minimum() {
        assert_eq!(cpuperf_target(0.0), 1);
        assert_eq!(cpuperf_target(-1.0), 1);
        assert_eq!(cpuperf_target(f64::NAN), 1);
        assert_eq!(cpuperf_target(1e-6), 1);
    }
}

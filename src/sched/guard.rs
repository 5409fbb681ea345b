//! The guard band (src/bpf/tt_sched.bpf.c, B.2f): how long before the end of an owner's run
//! the BPF scheduler stops it, so that a late boundary tick does not let it run into the next
//! owner's slot. Pure: `--guard-us` as given, or by default a choice from the timer lateness
//! that the start-up calibration measured (`sched::calibrate`, the OS side).
//!
//! The default choice: `guard = clamp(p99 + 10 %, 5 % of the slot, 10 % of the slot)`.
//! - p99: an owner runs into the next slot only when the guard-band event comes later than the
//!   guard band, so a guard band at the p99 of the timer lateness keeps that to about 1 % of
//!   the events, the threshold of the summary's `hint:` line (crates/tt-core/src/accounting/render.rs). The
//!   10 % margin covers the sampling noise of a p99 taken from a few hundred wake-ups.
//! - The lower bound is the fixed default before calibration (5 % of the slot): on hardware
//!   whose timers are tens of microseconds late nothing changes.
//! - The upper bound caps what the guard band costs the owner: up to `guard` of each run's end
//!   goes idle, so at 10 % of the slot a single-slot run loses at most 10 %, the delivery
//!   tolerance of the VM tests (>= 90 % delivered, docs/vm-harness.md); a run of n slots at
//!   most 10/n %. When the p99 exceeds the cap, the cap is chosen and a warning says by how
//!   much owners will overrun at the tail (a larger `--guard-us` trades more of the owners'
//!   time for that).

use crate::accounting::Quantiles;
use serde::Serialize;

/// Lower bound of the default guard band, percent of the slot (the fixed default before
/// calibration, `config::default_guard_us`).
pub const MIN_PCT: u64 = 5;
/// Upper bound (cap) of the default guard band, percent of the slot.
pub const MAX_PCT: u64 = 10;
/// Margin over the measured p99, percent of the p99.
pub const MARGIN_PCT: u64 = 10;

/// The range the default guard band is chosen in, us (inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bound {
    pub min: u64,
    pub max: u64,
}

/// The bound for a slot of `slot_us`: 5 % to 10 % of the slot (always shorter than the slot).
pub fn bound(slot_us: u64) -> Bound {
    Bound {
        min: super::config::default_guard_us(slot_us),
        max: (u128::from(slot_us) * u128::from(MAX_PCT) / 100) as u64,
    }
}

/// What the start-up calibration measured: the wake-up lateness of a timer thread on each
/// managed CPU (`sched::calibrate`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Calibration {
    /// The CPUs measured (the plan's managed CPUs).
    pub cpus: Vec<u32>,
    /// Wake-ups measured, all CPUs together.
    pub samples: u64,
    /// Whether the timer threads ran SCHED_FIFO (false: the kernel refused, they ran
    /// SCHED_OTHER and the figures include the fair scheduler's wake-up latency).
    pub fifo: bool,
    /// How long the measurement took, ms.
    pub duration_ms: u64,
    /// Lateness of the wake-ups after their grid points, ns (nearest rank).
    pub late_ns: Quantiles,
}

/// Where the guard band of a run came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `--guard-us`, as given.
    Flag,
    /// The default: chosen from the start-up calibration.
    Calibrated,
}

/// The guard band of a run and how it was chosen (the summary JSON's `guard` object).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Guard {
    /// The guard band, us.
    pub us: u64,
    pub source: Source,
    /// Calibrated: the range it was chosen in; `null` for the flag.
    pub bound_us: Option<Bound>,
    /// Calibrated: p99 + margin, before the bound was applied, us; `null` for the flag or
    /// without samples.
    pub wanted_us: Option<u64>,
    /// Calibrated: the measured p99 is above the chosen guard band (the cap was chosen).
    pub capped: bool,
    /// Calibrated: what was measured; `null` for the flag.
    pub calibration: Option<Calibration>,
}

/// p99 plus the margin, rounded up to whole microseconds.
pub fn wanted_us(p99_ns: u64) -> u64 {
    let ns = u128::from(p99_ns) * u128::from(100 + MARGIN_PCT);
    u64::try_from(ns.div_ceil(100 * 1000)).unwrap_or(u64::MAX)
}

impl Guard {
    /// `--guard-us N`: exactly N.
    pub fn flag(us: u64) -> Guard {
        Guard {
            us,
            source: Source::Flag,
            bound_us: None,
            wanted_us: None,
            capped: false,
            calibration: None,
        }
    }

    /// The default guard band for a slot of `slot_us` from a calibration: p99 + margin,
    /// clamped to [`bound`]. Without samples: the lower bound.
    pub fn calibrated(calibration: Calibration, slot_us: u64) -> Guard {
        let b = bound(slot_us);
        let p99 = calibration.late_ns.p99.max(0) as u64;
        let wanted = (calibration.samples > 0).then(|| wanted_us(p99));
        let us = wanted.map_or(b.min, |w| w.clamp(b.min, b.max));
        Guard {
            us,
            source: Source::Calibrated,
            bound_us: Some(b),
            wanted_us: wanted,
            capped: wanted.is_some() && p99 > us * 1000,
            calibration: Some(calibration),
        }
    }

    /// The measured p99 minus the guard band, us, when the cap was chosen: about that much
    /// of the slowest 1 % of the guard-band events lands in the next owner's slot.
    pub fn excess_us(&self) -> Option<u64> {
        let p99 = self.calibration.as_ref()?.late_ns.p99.max(0) as u64;
        self.capped.then(|| (p99 / 1000).saturating_sub(self.us))
    }

    /// One line on what was chosen, e.g. `guard band 1200 us (calibrated: timer lateness p99
    /// 850 us on CPUs [1], bound 500..1000 us; ...)`.
    pub fn describe(&self) -> String {
        match (&self.calibration, self.bound_us) {
            (Some(c), Some(b)) => format!(
                "guard band {} us (calibrated: timer lateness p99 {} us on CPUs {:?}, bound \
                 {}..{} us; p50 {} us, max {} us, {} wake-ups in {} ms{})",
                self.us,
                us(c.late_ns.p99),
                c.cpus,
                b.min,
                b.max,
                us(c.late_ns.p50),
                us(c.late_ns.max),
                c.samples,
                c.duration_ms,
                if c.fifo { "" } else { ", not SCHED_FIFO" }
            ),
            _ => format!("guard band {} us (--guard-us)", self.us),
        }
    }

    /// The warning when the cap was chosen.
    pub fn warning(&self) -> Option<String> {
        let excess = self.excess_us()?;
        let b = self.bound_us?;
        Some(format!(
            "warning: the timer lateness p99 exceeds the guard band's cap of {} us ({MAX_PCT} % \
             of the slot): owners will overrun their runs by up to about {excess} us in the \
             slowest 1 % of the guard-band events; a larger --guard-us trades the owners' time \
             for that",
            b.max
        ))
    }
}

/// ns as whole us, rounded to nearest, for messages.
fn us(ns: i64) -> i64 {
    (ns + 500).div_euclid(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal(samples: u64, p50: i64, p99: i64, max: i64) -> Calibration {
        Calibration {
            cpus: vec![1],
            samples,
            fifo: true,
            duration_ms: 250,
            late_ns: Quantiles {
                min: 0,
                p50,
                p99,
                max,
            },
        }
    }

    #[test]
    fn the_bound_is_5_to_10_percent_of_the_slot() {
        assert_eq!(
            bound(10_000),
            Bound {
                min: 500,
                max: 1000
            }
        );
        assert_eq!(bound(5_000), Bound { min: 250, max: 500 });
        assert_eq!(bound(100), Bound { min: 5, max: 10 });
        // rounded down, and always shorter than the slot
        assert_eq!(bound(4_999), Bound { min: 249, max: 499 });
        assert_eq!(bound(1), Bound { min: 0, max: 0 });
        for slot in [1, 3, 99, 100, 101, 4_999, 1_000_000, u64::MAX / 2] {
            let b = bound(slot);
            assert!(b.min <= b.max && b.max < slot, "slot {slot}: {b:?}");
        }
    }

    #[test]
    fn wanted_is_p99_plus_ten_percent_rounded_up() {
        assert_eq!(wanted_us(850_000), 935);
        assert_eq!(wanted_us(1_000), 2); // 1.1 us
        assert_eq!(wanted_us(0), 0);
        assert_eq!(wanted_us(u64::MAX), 20_291_418_481_080_507);
    }

    #[test]
    fn a_p99_inside_the_bound_gives_p99_plus_the_margin() {
        let g = Guard::calibrated(cal(250, 120_000, 850_000, 2_000_000), 10_000);
        assert_eq!(g.us, 935);
        assert_eq!(g.source, Source::Calibrated);
        assert_eq!(g.wanted_us, Some(935));
        assert!(!g.capped);
        assert_eq!(g.excess_us(), None);
        assert_eq!(g.warning(), None);
        assert!(g.us * 1000 >= 850_000);
    }

    #[test]
    fn a_small_p99_gives_the_lower_bound() {
        let g = Guard::calibrated(cal(250, 5_000, 40_000, 90_000), 10_000);
        assert_eq!((g.us, g.wanted_us, g.capped), (500, Some(44), false));
    }

    #[test]
    fn a_p99_above_the_cap_gives_the_cap_and_a_warning_with_the_excess() {
        let g = Guard::calibrated(cal(250, 200_000, 3_400_000, 9_000_000), 10_000);
        assert_eq!((g.us, g.wanted_us, g.capped), (1000, Some(3740), true));
        assert_eq!(g.excess_us(), Some(2400));
        let w = g.warning().expect("a warning");
        assert!(
            w.contains("cap of 1000 us (10 % of the slot)") && w.contains("about 2400 us"),
            "{w}"
        );
    }

    #[test]
    fn a_p99_between_the_cap_and_the_cap_plus_margin_is_capped_but_not_exceeded() {
        // p99 950 us: wanted 1045 us > cap 1000, but the cap still covers the p99
        let g = Guard::calibrated(cal(250, 200_000, 950_000, 3_000_000), 10_000);
        assert_eq!((g.us, g.capped), (1000, false));
        assert_eq!(g.warning(), None);
        // exactly at the cap
        let g = Guard::calibrated(cal(250, 200_000, 1_000_000, 3_000_000), 10_000);
        assert_eq!((g.us, g.capped), (1000, false));
        let g = Guard::calibrated(cal(250, 200_000, 1_000_001, 3_000_000), 10_000);
        assert_eq!((g.us, g.capped, g.excess_us()), (1000, true, Some(0)));
    }

    #[test]
    fn without_samples_the_lower_bound() {
        let g = Guard::calibrated(cal(0, 0, 0, 0), 10_000);
        assert_eq!((g.us, g.wanted_us, g.capped), (500, None, false));
    }

    #[test]
    fn the_choice_always_lies_in_the_bound_and_covers_the_p99_unless_capped() {
        for slot in [100, 1_000, 4_000, 5_000, 10_000, 100_000] {
            let b = bound(slot);
            for p99 in (0..40).map(|i| i * slot * 25) {
                let g = Guard::calibrated(cal(100, 0, p99 as i64, p99 as i64), slot);
                assert!(
                    b.min <= g.us && g.us <= b.max,
                    "slot {slot} p99 {p99}: {g:?}"
                );
                assert_eq!(g.capped, p99 > g.us * 1000, "slot {slot} p99 {p99}");
                if !g.capped {
                    assert!(g.us * 1000 >= p99, "slot {slot} p99 {p99}: {g:?}");
                }
            }
        }
    }

    #[test]
    fn the_flag_is_taken_as_given() {
        for us in [0, 1, 500, 9_999] {
            let g = Guard::flag(us);
            assert_eq!(
                (g.us, g.source, g.bound_us, g.calibration.is_none()),
                (us, Source::Flag, None, true)
            );
        }
        assert_eq!(
            Guard::flag(2000).describe(),
            "guard band 2000 us (--guard-us)"
        );
    }

    #[test]
    fn the_line_names_the_choice_the_p99_the_cpus_and_the_bound() {
        let g = Guard::calibrated(cal(250, 120_400, 850_000, 2_000_000), 10_000);
        assert_eq!(
            g.describe(),
            "guard band 935 us (calibrated: timer lateness p99 850 us on CPUs [1], bound \
             500..1000 us; p50 120 us, max 2000 us, 250 wake-ups in 250 ms)"
        );
    }

    #[test]
    fn the_json_object_has_the_documented_fields() {
        let g = Guard::calibrated(cal(250, 1_000, 850_000, 2_000_000), 10_000);
        let v = serde_json::to_value(&g).expect("json");
        assert_eq!(v["us"], 935);
        assert_eq!(v["source"], "calibrated");
        assert_eq!(v["bound_us"]["min"], 500);
        assert_eq!(v["bound_us"]["max"], 1000);
        assert_eq!(v["calibration"]["late_ns"]["p99"], 850_000);
        assert_eq!(v["calibration"]["cpus"][0], 1);
        let f = serde_json::to_value(Guard::flag(2000)).expect("json");
        assert_eq!(f["source"], "flag");
        assert!(f["calibration"].is_null() && f["bound_us"].is_null());
    }
}

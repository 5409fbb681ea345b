//! The bandwidth controller and the supervisor (seed 003, Sections 4.2 and 5.3): the percentile
//! against a sort-based brute force, the budget rule, the conversion to slots, the supervisor
//! against a brute-force reference, and the supervisor with the planner's exact admission.

use proptest::prelude::*;
use scx_tt::adaptive::controller::{
    largest_divisor_at_most, BandwidthController, ControllerConfig, PercentileWindow,
};
use scx_tt::adaptive::supervisor::{
    supervise, AdaptiveRequest, Grant, PeriodicReservation, PlannerOracle,
};
use scx_tt::adaptive::AdmissionOracle;
use scx_tt::planner::offline::{edf, Job};
use scx_tt::planner::runtime::CpuInput;
use scx_tt::planner::{
    Admission, Freqs, JobEvent, Observation, Placement, Planner, PlannerConfig, Policy, Run,
};

const MS: u64 = 1_000_000;

/// The smallest sample `v` of `window` with at least a fraction `p` of the samples `≤ v`.
fn brute_percentile(window: &[u64], p: f64) -> Option<u64> {
    let mut s = window.to_vec();
    s.sort_unstable();
    let n = s.len() as f64;
    s.iter()
        .copied()
        .find(|&v| s.iter().filter(|&&w| w <= v).count() as f64 >= p * n - 1e-9)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn percentile_equals_the_sorted_brute_force(
        cap in 1usize..40,
        values in prop::collection::vec(0u64..50, 1..120),
        p in 0.01f64..=1.0,
    ) {
        let mut w = PercentileWindow::new(cap);
        for (i, &v) in values.iter().enumerate() {
            w.push(v);
            let from = (i + 1).saturating_sub(cap);
            let last = &values[from..=i];
            prop_assert_eq!(w.len(), last.len());
            prop_assert_eq!(w.percentile(p), brute_percentile(last, p), "after {} pushes", i + 1);
        }
    }

    #[test]
    fn slot_reservation_keeps_the_bandwidth_and_the_rules(
        period_ms in 5.0f64..500.0,
        samples in prop::collection::vec(0u64..400_000_000, 1..20),
        spread in 0.0f64..1.0,
        slot_us in prop::sample::select(vec![250u64, 500, 1000, 2000]),
        frame in prop::option::of(prop::sample::select(vec![120u64, 1000, 3600])),
    ) {
        let cfg = ControllerConfig { spread, ..ControllerConfig::default() };
        let mut c = BandwidthController::new(cfg.clone()).unwrap();
        for s in &samples {
            c.push_consumption(*s);
        }
        let r = c.request(period_ms * MS as f64).unwrap();
        let slot_ns = slot_us * 1000;
        let s = r.to_slots(slot_ns, frame).unwrap();
        // the period is at most the task's (or less than 1 % above it: the snap to a whole
        // number of slots), and divides the frame
        prop_assert!(s.period_slots >= 1);
        prop_assert!((s.period_slots * slot_ns) as f64 <= r.period_ns / 0.99 + 1e-6);
        let x = r.period_ns / slot_ns as f64;
        let whole = if x.fract() > 0.0 && x.ceil() * 0.99 <= x {
            x.ceil() as u64
        } else {
            x.floor() as u64
        };
        if frame.is_none() {
            prop_assert_eq!(s.period_slots, whole);
        }
        if let Some(f) = frame {
            prop_assert_eq!(f % s.period_slots, 0);
            // and is the largest such
            prop_assert!(((s.period_slots + 1)..=whole.min(f)).all(|d| f % d != 0));
        }
        let p = s.period_slots as f64;
        let cap = ((cfg.max_bandwidth * p).floor() as u64).max(1);
        prop_assert!(1 <= s.min_wcet_slots && s.min_wcet_slots <= s.wcet_slots);
        prop_assert!(s.wcet_slots <= cap.min(s.period_slots));
        // the bandwidth is kept (rounded up) unless the cap cuts it
        if s.wcet_slots < cap {
            prop_assert!(s.wcet_slots as f64 >= r.bandwidth * p - 1e-6);
            prop_assert!(s.wcet_slots == 1 || ((s.wcet_slots - 1) as f64) < r.bandwidth * p);
        }
    }
}

#[test]
fn budget_is_the_spread_percentile_scaled_to_the_period() {
    let cfg = ControllerConfig {
        percentile: 0.75,
        window: 8,
        spread: 0.2,
        sampling_ns: 1000 * MS,
        ..ControllerConfig::default()
    };
    let mut c = BandwidthController::new(cfg).unwrap();
    assert!(c.request(40.0 * MS as f64).is_none(), "no sample yet");
    // cumulative readings: consumption of each second 100, 300, 200, 400, 250 ms (the first
    // reading is the origin)
    let mut w = 5_000 * MS;
    assert_eq!(c.read(w), None);
    for used in [100, 300, 200, 400, 250] {
        w += used * MS;
        assert_eq!(c.read(w), Some(used * MS));
    }
    // sorted 100 200 250 300 400: 0.75 · 5 = 3.75 → the 4th smallest, 300 ms
    let r = c.request(40.0 * MS as f64).unwrap();
    assert_eq!(r.predicted_ns, 300 * MS);
    let want = 1.2 * 40e6 * 300e6 / 1000e6; // (1 + x) · P · C_p / S = 14.4 ms
    assert!((r.budget_ns - want).abs() < 1.0, "{r:?}");
    assert!((r.bandwidth - 0.36).abs() < 1e-12);
    assert!(!r.capped && !r.period_clamped);
    // in 1 ms slots: 40 slots, ⌈0.36 · 40⌉ = 15
    let s = r.to_slots(MS, None).unwrap();
    assert_eq!(
        (s.period_slots, s.wcet_slots, s.min_wcet_slots),
        (40, 15, 1)
    );
    // in a frame of 100 slots the period becomes 25 (the largest divisor ≤ 40): ⌈0.36 · 25⌉ = 9
    let s = r.to_slots(MS, Some(100)).unwrap();
    assert_eq!((s.period_slots, s.wcet_slots), (25, 9));
    // a restarted task (reading below the last) sets a new origin without a sample
    assert_eq!(c.read(10), None);
    assert_eq!(c.samples(), 5);
}

#[test]
fn an_inferred_period_just_below_a_whole_number_of_slots_is_that_number() {
    let mut c = BandwidthController::new(ControllerConfig::default()).unwrap();
    c.push_consumption(150 * MS); // 15 % of each second
    let slots = |period_ms: f64| {
        let s = c
            .request(period_ms * MS as f64)
            .unwrap()
            .to_slots(2 * MS, Some(120));
        s.unwrap().period_slots
    };
    // 2 ms slots, frame 120: 39.99 ms is 20 slots (0.025 % below), not 19 → 15
    assert_eq!(slots(39.99), 20);
    assert_eq!(slots(40.0), 20);
    assert_eq!(slots(40.7), 20);
    // 0.9 % below 20 slots (39.65 ms) still snaps; 39.5 ms (1.25 % below) is 19 → 15
    assert_eq!(slots(39.65), 20);
    assert_eq!(slots(39.5), 15);
    assert_eq!(slots(29.995), 15);
}

#[test]
fn budget_is_capped_and_the_period_clamped() {
    let cfg = ControllerConfig {
        max_bandwidth: 0.5,
        spread: 0.1,
        ..ControllerConfig::default()
    };
    let mut c = BandwidthController::new(cfg).unwrap();
    c.push_consumption(900 * MS); // 90 % of each second
    let r = c.request(1.0 * MS as f64).unwrap(); // below the 5 ms minimum
    assert!(r.period_clamped && r.capped, "{r:?}");
    assert_eq!(r.period_ns, 5.0 * MS as f64);
    assert!((r.bandwidth - 0.5).abs() < 1e-12);
    let s = r.to_slots(MS, None).unwrap();
    assert_eq!((s.period_slots, s.wcet_slots), (5, 2)); // ⌊0.5 · 5⌋
    let e = r.to_slots(10 * MS, None).unwrap_err();
    assert_eq!(e.field, "period_ns");
    assert_eq!(r.to_slots(0, None).unwrap_err().field, "slot_ns");
    assert!(c.request(f64::NAN).is_none());
}

#[test]
fn the_spread_factor_scales_the_budget_linearly() {
    let at = |x: f64| {
        let mut c = BandwidthController::new(ControllerConfig {
            spread: x,
            ..ControllerConfig::default()
        })
        .unwrap();
        for v in [120, 80, 100, 90] {
            c.push_consumption(v * MS);
        }
        c.request(40.0 * MS as f64).unwrap().budget_ns
    };
    let base = at(0.0);
    for x in [0.1, 0.2, 0.5] {
        assert!((at(x) / base - (1.0 + x)).abs() < 1e-12);
    }
}

#[test]
fn divisor_helper_against_a_scan() {
    for n in 1..200u64 {
        for m in 1..220u64 {
            let want = (1..=m.min(n)).rev().find(|d| n % d == 0).unwrap();
            assert_eq!(largest_divisor_at_most(n, m), want, "n {n} m {m}");
        }
    }
}

/// Σ wcet/period ≤ cap.
fn util_fits(set: &[PeriodicReservation], cap: f64) -> bool {
    set.iter()
        .map(|r| r.wcet as f64 / r.period as f64)
        .sum::<f64>()
        <= cap + 1e-12
}

/// The rule by brute force: the longest prefix whose minimums fit, then every level k/e
/// (k ≤ e, e an excess) from the highest down; the first whose grants fit.
fn brute_supervise(
    reqs: &[AdaptiveRequest],
    fits: &dyn Fn(&[PeriodicReservation]) -> bool,
) -> Vec<u64> {
    let grant = |kept: &[AdaptiveRequest], num: u64, den: u64| -> Vec<PeriodicReservation> {
        kept.iter()
            .map(|r| PeriodicReservation {
                id: r.id,
                period: r.period,
                wcet: r.min_wcet + (r.wcet - r.min_wcet) * num / den,
            })
            .collect()
    };
    let kept = (0..=reqs.len())
        .rev()
        .find(|&k| fits(&grant(&reqs[..k], 0, 1)))
        .expect("the empty set fits");
    let mut levels: Vec<(u64, u64)> = vec![(0, 1), (1, 1)];
    for r in &reqs[..kept] {
        let e = r.wcet - r.min_wcet;
        for k in 0..=e {
            levels.push((k, e.max(1)));
        }
    }
    levels.sort_by(|a, b| (b.0 * a.1).cmp(&(a.0 * b.1))); // descending
    let (num, den) = *levels
        .iter()
        .find(|&&(n, d)| fits(&grant(&reqs[..kept], n, d)))
        .expect("level 0 fits");
    let g = grant(&reqs[..kept], num, den);
    (0..reqs.len())
        .map(|i| g.get(i).map_or(0, |r| r.wcet))
        .collect()
}

fn arb_requests() -> impl Strategy<Value = Vec<AdaptiveRequest>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![4u64, 5, 6, 8, 10, 12, 20, 40]),
            0.0f64..1.0,
            0.0f64..1.0,
        ),
        0..6,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(id, (period, a, b))| {
                let wcet = 1 + (a * (period - 1) as f64) as u64;
                let min_wcet = 1 + (b * (wcet - 1) as f64) as u64;
                AdaptiveRequest {
                    id,
                    period,
                    wcet,
                    min_wcet,
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn supervisor_equals_the_brute_force_rule(reqs in arb_requests(), cap in 0.0f64..1.5) {
        let fits = |s: &[PeriodicReservation]| util_fits(s, cap);
        let mut oracle = fits;
        let got = supervise(&reqs, &mut oracle).unwrap();
        let granted: Vec<u64> = got.allocations.iter().map(|a| a.granted).collect();
        prop_assert_eq!(&granted, &brute_supervise(&reqs, &fits));
        // what is returned fits, never exceeds a request, never goes below a minimum unless
        // dropped, and the dropped ones are the last
        prop_assert!(fits(&got.reservations()));
        let mut dropped = false;
        for a in &got.allocations {
            match a.grant {
                Grant::Dropped => { dropped = true; prop_assert_eq!(a.granted, 0); }
                g => {
                    prop_assert!(!dropped, "a kept request after a dropped one");
                    prop_assert!(a.request.min_wcet <= a.granted && a.granted <= a.request.wcet);
                    prop_assert_eq!(g == Grant::Full, a.granted == a.request.wcet);
                }
            }
        }
        prop_assert_eq!(got.curbed(), !got.explain().is_empty());
    }
}

/// A planner with `jobs` on one CPU (the same construction as the oracle's, written here).
fn planner(jobs: &[Job], frame: u64) -> Planner {
    Planner::new(
        &[CpuInput {
            jobs: jobs.to_vec(),
            has_be: false,
        }],
        frame,
        PlannerConfig {
            policy: Policy::Bss,
            freqs: Freqs::max_only(),
            slot_ns: MS,
        },
    )
}

/// Periodic task `task`: `wcet` every `period` in a frame of `frame`.
fn periodic(task: usize, period: u64, wcet: u64, frame: u64) -> Vec<Job> {
    (0..frame / period)
        .map(|k| Job {
            task,
            instance: k as u32,
            release: k * period,
            deadline: (k + 1) * period,
            wcet,
        })
        .collect()
}

#[test]
fn supervisor_with_the_planners_exact_admission_keeps_guaranteed_tasks_whole() {
    const FRAME: u64 = 120;
    // guaranteed: 6 of every 20 and 9 of every 30 (0.3 + 0.3 = 60 % of the CPU)
    let mut guaranteed = periodic(0, 20, 6, FRAME);
    guaranteed.extend(periodic(1, 30, 9, FRAME));
    // adaptive requests: 0.4 + 0.25 + 0.2 = 85 % wanted, 40 % left
    let reqs = [
        AdaptiveRequest {
            id: 0,
            period: 40,
            wcet: 16,
            min_wcet: 4,
        },
        AdaptiveRequest {
            id: 1,
            period: 24,
            wcet: 6,
            min_wcet: 2,
        },
        AdaptiveRequest {
            id: 2,
            period: 60,
            wcet: 12,
            min_wcet: 3,
        },
    ];
    // the oracle: the real planner, admission by admission, on CPU 0 only
    let mut calls = 0;
    let mut real = |set: &[PeriodicReservation]| {
        calls += 1;
        let mut p = planner(&guaranteed, FRAME);
        set.iter().all(|r| {
            matches!(
                p.admit_periodic(100 + r.id, r.wcet, r.period, Placement::Only(0)),
                Admission::Accepted { .. }
            )
        })
    };
    let got = supervise(&reqs, &mut real).unwrap();
    for line in got.explain() {
        println!("{line}");
    }
    println!(
        "level λ = {:.3}, {} oracle calls, grants {:?}",
        got.level,
        got.oracle_calls,
        got.allocations
            .iter()
            .map(|a| (a.request.id, a.granted, a.request.wcet))
            .collect::<Vec<_>>()
    );
    assert!(got.curbed(), "85 % + 60 % cannot all fit");
    assert_eq!(got.oracle_calls, calls);
    // the crate's PlannerOracle decides the same
    let mut oracle = PlannerOracle::new(guaranteed.clone(), FRAME).unwrap();
    assert_eq!(supervise(&reqs, &mut oracle).unwrap(), got);
    // the brute-force rule with the real planner decides the same
    let fits = |set: &[PeriodicReservation]| {
        let mut p = planner(&guaranteed, FRAME);
        set.iter().all(|r| {
            matches!(
                p.admit_periodic(100 + r.id, r.wcet, r.period, Placement::Only(0)),
                Admission::Accepted { .. }
            )
        })
    };
    let granted: Vec<u64> = got.allocations.iter().map(|a| a.granted).collect();
    assert_eq!(granted, brute_supervise(&reqs, &fits));
    // the offline EDF of the guaranteed jobs and the grants: feasible
    let res = got.reservations();
    let mut all = guaranteed.clone();
    for r in &res {
        all.extend(periodic(100 + r.id, r.period, r.wcet, FRAME));
    }
    edf(&all, FRAME).expect("EDF-feasible frame with the granted reservations");

    // run the planner with the grants for four frames, every job taking its whole WCET: no
    // miss, every guaranteed job and every reservation gets its slots in each of its periods
    let mut p = planner(&guaranteed, FRAME);
    let mut from = 0;
    for r in &res {
        match p.admit_periodic(100 + r.id, r.wcet, r.period, Placement::Only(0)) {
            Admission::Accepted { bound, .. } => from = from.max(bound),
            other => panic!("{other:?}"),
        }
    }
    let end = from + 4 * FRAME;
    let mut owner = Vec::new();
    let mut last = Run::Idle;
    for s in 0..end {
        let obs = match last {
            Run::Job { .. } => Observation {
                ran_ns: MS,
                done: false,
            },
            _ => Observation {
                ran_ns: 0,
                done: false,
            },
        };
        let d = if s == 0 {
            p.step(s, &[]).unwrap()
        } else {
            p.step(s, &[obs]).unwrap()
        };
        last = d[0].run;
        owner.push(match last {
            Run::Job { task, .. } => Some(task),
            _ => None,
        });
        for (_, e) in p.events() {
            assert!(
                !matches!(e, JobEvent::Miss { .. } | JobEvent::Lost { .. }),
                "slot {s}: {e:?}"
            );
        }
    }
    let served = |task: usize, period: u64, wcet: u64, start: u64| {
        for w in (start..end).step_by(period as usize) {
            let got = (w..w + period)
                .filter(|&s| owner[s as usize] == Some(task))
                .count() as u64;
            assert!(
                got >= wcet,
                "task {task}: {got} of {wcet} slots in [{w}, {})",
                w + period
            );
        }
    };
    served(0, 20, 6, 0);
    served(1, 30, 9, 0);
    for r in &res {
        served(100 + r.id, r.period, r.wcet, from);
    }
    let used: f64 = res.iter().map(|r| r.wcet as f64 / r.period as f64).sum();
    println!(
        "granted adaptive bandwidth {:.3} next to 0.600 guaranteed (requested {:.3}); served over {} slots without a miss",
        used,
        reqs.iter().map(|r| r.wcet as f64 / r.period as f64).sum::<f64>(),
        end
    );
    assert!(used <= 0.4 + 1e-9);
}

#[test]
fn an_oracle_that_refuses_everything_drops_everything() {
    let reqs = [AdaptiveRequest {
        id: 7,
        period: 10,
        wcet: 5,
        min_wcet: 1,
    }];
    let mut never = |_: &[PeriodicReservation]| false;
    let got = supervise(&reqs, &mut never).unwrap();
    assert_eq!(got.allocations[0].grant, Grant::Dropped);
    assert!(got.reservations().is_empty());
    assert_eq!(got.level, 0.0);
    assert!(got.explain()[0].contains("dropped"));
    // a trait object works as an oracle too
    let mut boxed: Box<dyn AdmissionOracle> = Box::new(|s: &[PeriodicReservation]| s.len() < 2);
    assert!(boxed.fits(&[]));
}

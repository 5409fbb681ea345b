//! Adaptive reservations on the kernel path's planner (issue 17, docs/adaptive.md "In the
//! run"): the supervisor's oracle is `KernelPlanner::reservation_oracle`, a copy of the live
//! planner without the adaptive tasks' reservations; what it accepts, `admit_task` accepts, and
//! the changes `adaptive::live::changes` derives keep every guaranteed job's slots.

use scx_tt::adaptive::live::{changes, Change, Slots};
use scx_tt::adaptive::{supervise, AdaptiveRequest, AdmissionOracle, Grant, PeriodicReservation};
use scx_tt::plan::{self, Plan};
use scx_tt::planner::kernel_path::{
    KernelPathConfig, KernelPlanner, PeriodicOutcome, PeriodicTask,
};
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sched::config::SchedConfig;

/// One managed CPU, 2 ms slots, frame 120: tt-a 6 of every 20 slots (30 %), two adaptive tasks
/// (BPF indexes 1 and 2): the VM test's shape.
const PLAN: &str = r#"{ "version": 1, "slot_us": 2000, "frame_slots": 120,
  "cpus": { "managed": [1], "housekeeping": [0] },
  "tasks": [
    { "name": "tt-a", "pid": 10, "class": "tt", "cpu": 1, "period": 20, "wcet": 6 },
    { "name": "legacy", "pid": 11, "class": "adaptive", "cpu": 1 },
    { "name": "heavy", "pid": 12, "class": "adaptive", "cpu": 1 }
  ] }"#;

fn planner() -> (Plan, KernelPlanner) {
    let plan = plan::from_str(PLAN).unwrap_or_else(|e| panic!("{e}"));
    let online: Vec<u32> = (0..4).collect();
    let table = SchedConfig::from_plan(&plan, 0, &online)
        .expect("config")
        .entries();
    let cfg = KernelPathConfig {
        policy: Policy::Bss,
        lead: 2,
        frame_slots: plan.frame_slots,
        slot_ns: plan.slot_us * 1000,
        freqs: Freqs::xeon_default(),
    };
    let p = KernelPlanner::new(&plan.planner_inputs(), plan.tasks.len(), cfg, table)
        .expect("planner mode");
    (plan, p)
}

/// Admits `s` for BPF task `task` on CPU index 0 of `p`.
fn admit(p: &mut KernelPlanner, task: usize, s: Slots) -> bool {
    matches!(
        p.admit_task(&PeriodicTask::implicit(task, 0, s.period, s.wcet), "t"),
        PeriodicOutcome::Accepted { .. }
    )
}

/// The independent reference: tt-a's 6/20 plus the set, every period dividing 120, is EDF
/// feasible with implicit deadlines iff the utilisation is at most 1 (Liu and Layland).
fn utilisation_fits(set: &[PeriodicReservation]) -> bool {
    let u: f64 = set.iter().map(|r| r.wcet as f64 / r.period as f64).sum();
    set.iter().all(|r| 120 % r.period == 0) && 0.3 + u <= 1.0 + 1e-12
}

#[test]
fn the_oracle_agrees_with_edf_utilisation_and_with_the_live_admission() {
    let (_, mut p) = planner();
    // legacy already holds 4/20: the oracle leaves it out, so the set is judged as a whole
    assert!(admit(
        &mut p,
        1,
        Slots {
            period: 20,
            wcet: 4
        }
    ));
    let mut oracle = p.reservation_oracle(0, &[1, 2]);
    let mut checked = 0;
    for (p1, p2) in [(20, 20), (20, 15), (15, 10), (24, 40), (20, 7)] {
        for w1 in 1..=p1 {
            for w2 in [1, p2 / 2, p2] {
                let set = [
                    PeriodicReservation {
                        id: 1,
                        period: p1,
                        wcet: w1,
                    },
                    PeriodicReservation {
                        id: 2,
                        period: p2,
                        wcet: w2,
                    },
                ];
                let fits = oracle.fits(&set);
                assert_eq!(fits, utilisation_fits(&set), "{set:?}");
                // the live planner, after taking legacy's reservation out, agrees
                let (_, mut live) = planner();
                assert!(admit(
                    &mut live,
                    1,
                    Slots {
                        period: 20,
                        wcet: 4
                    }
                ));
                assert!(live.remove_admitted(1));
                let both = admit(
                    &mut live,
                    1,
                    Slots {
                        period: p1,
                        wcet: w1,
                    },
                ) && admit(
                    &mut live,
                    2,
                    Slots {
                        period: p2,
                        wcet: w2,
                    },
                );
                assert_eq!(fits, both, "{set:?}");
                checked += 1;
            }
        }
    }
    println!("{checked} sets: the oracle = utilisation ≤ 1 = the live admissions");
    // nothing changed in the live planner: legacy still holds its 4/20, and 10/20 more
    // (0.3 + 0.2 + 0.5 = 1) fits next to it, 11/20 does not
    assert!(!admit(
        &mut p,
        2,
        Slots {
            period: 20,
            wcet: 11
        }
    ));
    assert!(admit(
        &mut p,
        2,
        Slots {
            period: 20,
            wcet: 10
        }
    ));
}

#[test]
fn a_request_that_does_not_fit_is_compressed_and_applied_without_touching_tt_a() {
    let (_, mut p) = planner();
    // legacy asks 5/20 (25 %), heavy 8/10 (80 %): 0.3 + 0.25 + 0.8 > 1; both are compressed
    // proportionally, grants 1 + ⌊λ·4⌋ and 1 + ⌊λ·7⌋: at λ = 4/7, 3/20 and 5/10, 0.3 + 0.15 +
    // 0.5 = 0.95 fits; the next breakpoints (5/7: 3 and 6; 3/4: 4 and 6) give 1.05 and 1.1
    let reqs = [
        AdaptiveRequest {
            id: 1,
            period: 20,
            wcet: 5,
            min_wcet: 1,
        },
        AdaptiveRequest {
            id: 2,
            period: 10,
            wcet: 8,
            min_wcet: 1,
        },
    ];
    let mut oracle = p.reservation_oracle(0, &[1, 2]);
    let sup = supervise(&reqs, &mut oracle).expect("valid");
    let grants: Vec<(u64, Grant)> = sup
        .allocations
        .iter()
        .map(|a| (a.granted, a.grant))
        .collect();
    assert_eq!(grants, [(3, Grant::Compressed), (5, Grant::Compressed)]);
    assert!((sup.level - 4.0 / 7.0).abs() < 1e-9, "{}", sup.level);
    let lines = sup.explain();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[1].contains("compressed to 5 of 8 requested slots every 10"),
        "{}",
        lines[1]
    );
    let cs = changes(&sup, |_| None);
    assert_eq!(
        cs,
        [
            Change::Grant {
                id: 1,
                to: Slots {
                    period: 20,
                    wcet: 3
                }
            },
            Change::Grant {
                id: 2,
                to: Slots {
                    period: 10,
                    wcet: 5
                }
            },
        ]
    );
    let mut from = 0;
    for c in cs {
        if let Change::Grant { id, to } = c {
            match p.admit_task(&PeriodicTask::implicit(id, 0, to.period, to.wcet), "t") {
                PeriodicOutcome::Accepted { from_slot, .. } => from = from.max(from_slot),
                r => panic!("{c:?}: {r:?}"),
            }
        }
    }
    assert_eq!(from % 120, 0, "a frame start");
    // the planner then gives every task its slots, frame after frame: tt-a 6 in each of its
    // 20-slot periods, legacy 3, heavy 5 in each of its 10-slot periods (the reservations
    // from the frame after the admission)
    let frames: u64 = from / 120 + 2;
    let mut table = p.table().to_vec();
    let mut owners = Vec::new();
    for s in 0..frames * 120 {
        let adv = p.advance(Some(s.saturating_sub(1))).expect("advance");
        for w in adv.writes {
            if let Some(t) = w.task {
                table[w.frame_slot as usize] = t;
            }
        }
        owners.push(table[(s % 120) as usize]);
    }
    let owner = |e: u32| scx_tt::abi::entry_task(e);
    for (task, period, wcet) in [(0u32, 20usize, 6usize), (1, 20, 3), (2, 10, 5)] {
        for (k, w) in owners
            .chunks(period)
            .enumerate()
            .skip(from as usize / period)
        {
            let got = w.iter().filter(|&&e| owner(e) == Some(task)).count();
            assert_eq!(got, wcet, "task {task}, period {k}: {w:?}");
        }
    }
}

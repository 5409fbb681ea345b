//! Multicore negotiation of firm admissions (docs/planner.md, "Multicore negotiation"), checked
//! against the per-CPU acceptance test on random multi-CPU states:
//! - a job is accepted iff some CPU has enough free capacity before its deadline (each per-CPU
//!   test is exact; tests/planner_props.rs checks it against an EDF oracle);
//! - it lands on the requested CPU when that CPU has room, otherwise on the least loaded CPU
//!   that has room (load = template slots per frame + WCET of unfinished firm jobs; ties: lower
//!   index);
//! - a rejection names the CPU with the most free capacity and its exact numbers;
//! - the load figure stays equal to its from-scratch value as firm jobs come and go.

use proptest::prelude::*;
use scx_tt::planner::cpu::JobKind;
use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::{CpuInput, Rejection};
use scx_tt::planner::{Admission, Freqs, Observation, Placement, Planner, PlannerConfig, Policy};

const FRAME: u64 = 60;

/// One CPU's frame: tasks `(period, wcet)` with periods dividing the frame.
fn cpu_jobs(cpu: usize, tasks: &[(u64, u64)]) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (t, &(period, wcet)) in tasks.iter().enumerate() {
        for k in 0..FRAME / period {
            jobs.push(Job {
                task: cpu * 100 + t,
                instance: k as u32,
                release: k * period,
                deadline: (k + 1) * period,
                wcet,
            });
        }
    }
    jobs
}

fn task() -> impl Strategy<Value = (u64, u64)> {
    prop::sample::select(vec![10u64, 12, 15, 20, 30, 60])
        .prop_flat_map(|period| (Just(period), 1..=period / 2))
}

/// (slot of the arrival, wcet, relative deadline, requested CPU or none)
type Arrival = (u64, u64, u64, Option<usize>);

/// Per CPU its tasks `(period, wcet)`.
type Tasks = Vec<Vec<(u64, u64)>>;

fn arrival(cpus: usize) -> impl Strategy<Value = Arrival> {
    (0..4 * FRAME, 1u64..16, 2u64..80, prop::option::of(0..cpus))
}

fn case() -> impl Strategy<Value = (Tasks, Vec<Arrival>)> {
    (2usize..=5).prop_flat_map(|cpus| {
        (
            prop::collection::vec(prop::collection::vec(task(), 0..3), cpus),
            prop::collection::vec(arrival(cpus), 1..40),
        )
    })
}

/// The load figure recomputed from scratch: template work plus unfinished firm jobs.
fn load_from_scratch(p: &mut Planner, inputs: &[CpuInput], cpu: usize) -> u64 {
    let template: u64 = inputs[cpu].jobs.iter().map(|j| j.wcet).sum();
    let firm: u64 = p.cpus()[cpu]
        .live_jobs()
        .filter(|j| j.kind == JobKind::Firm)
        .map(|j| j.wcet as u64)
        .sum();
    template + firm
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn negotiation_accepts_where_the_per_cpu_test_allows_and_picks_the_documented_cpu(
        (tasks, mut arrivals) in case(),
        early in 0u64..3,
    ) {
        let inputs: Vec<CpuInput> = tasks
            .iter()
            .enumerate()
            .map(|(c, t)| CpuInput { jobs: cpu_jobs(c, t), has_be: false })
            .collect();
        let cpus = inputs.len();
        // At most two tasks of utilization ≤ 1/2 per CPU: every offline table is feasible.
        arrivals.sort_by_key(|a| a.0);
        let mut p = Planner::new(
            &inputs,
            FRAME,
            PlannerConfig { policy: Policy::Bss, freqs: Freqs::max_only(), slot_ns: 1_000_000 },
        );
        // Some jobs complete early (every third slot reports done when `early` > 0), so firm
        // jobs finish at different times and the load figure moves both ways.
        let mut next = 0;
        for slot in 0..5 * FRAME {
            let done = early > 0 && slot % 3 == 0;
            let obs = vec![Observation { ran_ns: 1_000_000, done }; cpus];
            let d = p.step(slot, &obs).expect("in order");
            prop_assert_eq!(d.len(), cpus);
            for c in 0..cpus {
                let load = p.cpus()[c].load_slots();
                prop_assert_eq!(
                    load,
                    load_from_scratch(&mut p, &inputs, c),
                    "load of CPU {} at slot {}", c, slot
                );
            }
            while next < arrivals.len() && arrivals[next].0 <= slot {
                let (_, wcet, rel, requested) = arrivals[next];
                let deadline = slot + 1 + rel;
                let now = p.now();
                let caps: Vec<_> = p
                    .cpus()
                    .iter()
                    .map(|c| c.acceptance(now, wcet, deadline))
                    .collect();
                let loads: Vec<u64> = p.cpus().iter().map(|c| c.load_slots()).collect();
                let fits = |c: usize| caps[c].available >= wcet as i64;
                let task = 10_000 + next;
                let got = p.admit_firm(task, wcet, deadline, Placement::prefer(requested));
                match got {
                    Admission::Accepted { cpu, bound } => {
                        let want = match requested {
                            Some(r) if fits(r) => r,
                            _ => (0..cpus)
                                .filter(|&c| Some(c) != requested && fits(c))
                                .min_by_key(|&c| (loads[c], c))
                                .expect("accepted, so some CPU fits"),
                        };
                        prop_assert_eq!(cpu, want, "caps {:?} loads {:?}", caps, loads);
                        prop_assert_eq!(bound, caps[cpu].deadline);
                        prop_assert_eq!(
                            p.cpus()[cpu].load_slots(),
                            loads[cpu] + wcet,
                            "the guarantee adds the job's WCET to the load"
                        );
                    }
                    Admission::Rejected(Rejection::Capacity { cpu, cap }) => {
                        prop_assert!((0..cpus).all(|c| !fits(c)), "rejected but a CPU fits: {:?}", caps);
                        let most = caps.iter().map(|c| c.available).max().expect("cpus");
                        prop_assert_eq!(cap.available, most);
                        prop_assert_eq!(cap, caps[cpu]);
                        prop_assert_eq!(cap.needed, wcet);
                    }
                    other => prop_assert!(false, "unexpected {:?}", other),
                }
                next += 1;
            }
        }
    }
}

/// Equal loads: repeated admissions for any CPU spread over the CPUs instead of piling onto
/// CPU 0 (each accepted job raises its CPU's load by its WCET).
#[test]
fn equal_cpus_take_turns() {
    let inputs: Vec<CpuInput> = (0..3)
        .map(|c| CpuInput {
            jobs: cpu_jobs(c, &[(10, 2)]),
            has_be: false,
        })
        .collect();
    let mut p = Planner::new(
        &inputs,
        FRAME,
        PlannerConfig {
            policy: Policy::Bss,
            freqs: Freqs::max_only(),
            slot_ns: 1_000_000,
        },
    );
    p.step(0, &[]).unwrap();
    // Loads 12, 12, 12 (6 instances × 2 slots): CPU 0 (tie, lower index), then 1, then 2, then
    // 0 again (13, 13, 13 after one job of 1 slot each).
    let got: Vec<usize> = (0..4)
        .map(|k| match p.admit_firm(500 + k, 1, 30, Placement::Any) {
            Admission::Accepted { cpu, .. } => cpu,
            other => panic!("job {k}: {other:?}"),
        })
        .collect();
    assert_eq!(got, vec![0, 1, 2, 0]);
    let loads: Vec<u64> = p.cpus().iter().map(|c| c.load_slots()).collect();
    assert_eq!(loads, vec![14, 13, 13]);
}

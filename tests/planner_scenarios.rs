//! Hand-worked planner scenarios; the arithmetic is in the comments.

use scx_tt::planner::cpu::UNIT;
use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::{CpuInput, Rejection};
use scx_tt::planner::{
    Admission, Freqs, Observation, Placement, Planner, PlannerConfig, Policy, Run,
};

const SLOT_NS: u64 = 1_000_000;

fn job(task: usize, release: u64, deadline: u64, wcet: u64) -> Job {
    Job {
        task,
        instance: 0,
        release,
        deadline,
        wcet,
    }
}

fn planner(jobs: Vec<Job>, frame: u64, policy: Policy, freqs: Freqs) -> Planner {
    Planner::new(
        &[CpuInput {
            jobs,
            has_be: false,
        }],
        frame,
        PlannerConfig {
            policy,
            freqs,
            slot_ns: SLOT_NS,
        },
    )
}

fn ivs(p: &Planner) -> Vec<(u64, u64, i64)> {
    let mut p = p.clone(); // `cpus()` charges quiet runs: read a copy
    p.cpus()[0]
        .intervals()
        .map(|i| (i.start, i.end, i.sc))
        .collect()
}

const FULL: Observation = Observation {
    ran_ns: SLOT_NS,
    done: false,
};
const DONE: Observation = Observation {
    ran_ns: SLOT_NS,
    done: true,
};

#[test]
fn acceptance_splits_the_interval_containing_the_deadline() {
    // A [0,10) wcet 4, B [0,20) wcet 6, frame 20.
    // sc([10,20)) = 10 - 6 = 4; sc([0,10)) = 10 - 4 + min(4, 0) = 6. Frame 1 repeats it.
    let mut p = planner(
        vec![job(0, 0, 10, 4), job(1, 0, 20, 6)],
        20,
        Policy::Bss,
        Freqs::max_only(),
    );
    assert_eq!(
        ivs(&p),
        vec![(0, 10, 6), (10, 20, 4), (20, 30, 6), (30, 40, 4)]
    );
    // Slot 0 runs A (EDF): sc([0,10)) = 6 - 1 (slot) + 1 (A's slot freed) = 6.
    let d = p.step(0, &[]).unwrap();
    assert!(matches!(d[0].run, Run::Job { task: 0, .. }));
    assert_eq!(ivs(&p)[0], (0, 10, 6));
    // Firm job, 3 slots before slot 15, from slot 1 on:
    // available = sc([0,10)) + min(15 - 10, sc([10,20))) = 6 + min(5, 4) = 10 >= 3: accept.
    let a = p.admit_firm(2, 3, 15, Placement::Any);
    assert_eq!(a, Admission::Accepted { cpu: 0, bound: 15 });
    // Split [10,20) at 15: [15,20) keeps B: sc = 4 - 5 = -1 (B borrows one slot);
    // [10,15): min(5, 4) = 4, minus the new job's 3 = 1; borrow of [0,10) unchanged (1 >= 0).
    assert_eq!(
        &ivs(&p)[..4],
        &[(0, 10, 6), (10, 15, 1), (15, 20, -1), (20, 30, 6)]
    );
}

#[test]
fn rejection_reports_needed_and_available_slots() {
    // Same CPU; after slot 0 a job of 12 slots before slot 15 needs 12 but
    // available = 6 + min(5, 4) = 10 < 12.
    let mut p = planner(
        vec![job(0, 0, 10, 4), job(1, 0, 20, 6)],
        20,
        Policy::Bss,
        Freqs::max_only(),
    );
    p.step(0, &[]).unwrap();
    match p.admit_firm(2, 12, 15, Placement::Any) {
        Admission::Rejected(Rejection::Capacity { cpu, cap }) => {
            assert_eq!(
                (cpu, cap.needed, cap.available, cap.deadline),
                (0, 12, 10, 15)
            );
        }
        other => panic!("expected a capacity rejection, got {other:?}"),
    }
    // Nothing changed.
    assert_eq!(&ivs(&p)[..2], &[(0, 10, 6), (10, 20, 4)]);
}

#[test]
fn negotiation_moves_a_rejected_job_to_another_cpu() {
    // CPU 0 is full in [0,10) (A wcet 10); CPU 1 is empty. Requested CPU 0 rejects
    // (available 0 < 2), CPU 1 has 9 free slots before 10 after slot 0: accepted there.
    let mut p = Planner::new(
        &[
            CpuInput {
                jobs: vec![job(0, 0, 10, 10)],
                has_be: false,
            },
            CpuInput {
                jobs: vec![],
                has_be: false,
            },
        ],
        10,
        PlannerConfig {
            policy: Policy::Bss,
            freqs: Freqs::max_only(),
            slot_ns: SLOT_NS,
        },
    );
    p.step(0, &[]).unwrap();
    assert_eq!(
        p.admit_firm(5, 2, 10, Placement::Prefer(0)),
        Admission::Accepted { cpu: 1, bound: 10 }
    );
}

#[test]
fn early_completion_frees_the_remaining_capacity() {
    // A [0,10) wcet 4, frame 10: sc = 6. Slot 0 runs A (sc stays 6: -1 + 1).
    // A completes inside slot 0 (done): it still held 3 slots -> sc = 6 + 3 = 9;
    // slot 1 is then idle (nothing ready) -> 9 - 1 = 8.
    let mut p = planner(vec![job(0, 0, 10, 4)], 10, Policy::Bss, Freqs::max_only());
    p.step(0, &[]).unwrap();
    let d = p
        .step(
            1,
            &[Observation {
                ran_ns: SLOT_NS / 2,
                done: true,
            }],
        )
        .unwrap();
    assert_eq!(d[0].run, Run::Idle);
    assert_eq!(ivs(&p)[0], (0, 10, 8));
}

#[test]
fn a_job_reaching_its_wcet_is_cut_off_and_reported() {
    // A wcet 1: after its slot it has no budget left; the observation says it did not
    // complete, so it is an overrun and does not run again.
    let mut p = planner(vec![job(0, 0, 10, 1)], 10, Policy::Bss, Freqs::max_only());
    p.step(0, &[]).unwrap();
    let d = p.step(1, &[FULL]).unwrap();
    assert_eq!(d[0].run, Run::Idle);
    assert!(matches!(
        p.events()[0].1,
        scx_tt::planner::JobEvent::Overrun { task: 0, .. }
    ));
}

#[test]
fn periodic_addition_runs_from_the_first_frame_not_yet_built_and_removal_returns_capacity() {
    // Frame 20: A [0,10) wcet 4, B [0,20) wcet 6 -> frame sc (6, 4).
    // Add P: wcet 2, period 10 (instances [0,10), [10,20)): EDF-feasible (4+6+4 = 14 <= 20).
    // During frame 0, frames 0 and 1 are complete and frame 2 is being built: it is finished
    // with the old template, so P runs from frame 3, slot 60.
    // New template: [0,10) has A+P = 6, [10,20) has B+P = 8 -> sc([10,20)) = 2,
    // sc([0,10)) = 10 - 6 + 0 = 4.
    let mut p = planner(
        vec![job(0, 0, 10, 4), job(1, 0, 20, 6)],
        20,
        Policy::Bss,
        Freqs::max_only(),
    );
    p.step(0, &[]).unwrap();
    assert_eq!(
        p.admit_periodic(2, 2, 10, Placement::Any),
        Admission::Accepted { cpu: 0, bound: 60 }
    );
    // Another 9-slot task every 10 slots cannot fit (4 + 2 + 9 > 10 in [0,10)).
    assert!(matches!(
        p.admit_periodic(3, 9, 10, Placement::Any),
        Admission::Rejected(Rejection::Infeasible { .. })
    ));
    let mut p_slots = 0;
    for s in 1..80 {
        let d = p.step(s, &[]).unwrap();
        if matches!(d[0].run, Run::Job { task: 2, .. }) {
            assert!(s >= 60, "P ran at slot {s}, before its first frame");
            p_slots += 1;
        }
        if s == 60 {
            // Slot 60 ran A (-1 + 1), so [60,70) still shows 4.
            assert_eq!(&ivs(&p)[..2], &[(60, 70, 4), (70, 80, 2)]);
        }
    }
    assert_eq!(p_slots, 4); // two instances of 2 slots in frame 3
                            // Removal: frame 4 ([80,100)) holds P's instances; removing P frees them at once:
                            // [80,90): 4 + 2 = 6, [90,100): 2 + 2 = 4.
    assert!(p.remove_task(2));
    let iv = ivs(&p);
    let f4: Vec<_> = iv.iter().filter(|i| i.0 >= 80).take(2).collect();
    assert_eq!(f4, vec![&(80, 90, 6), &(90, 100, 4)]);
}

#[test]
fn dpm_idles_for_the_spare_capacity_of_the_empty_intervals_up_to_the_next_work() {
    // A [0,10) wcet 2, B [12,20) wcet 3, frame 20.
    // Intervals: [0,10) A: 10 - 2 = 8; [10,12) empty: 2; [12,20) B: 8 - 3 = 5.
    // Slots 0, 1 run A (completes in slot 1). Slot 2: nothing ready, [0,10) has no work:
    // duration = sc([0,10)) + sc([10,12)) + sc([12,20)) = 8 + 2 + 5 = 15 -> idle until 17,
    // and B runs at 17, 18, 19: as late as possible, just in time.
    let mut p = planner(
        vec![job(0, 0, 10, 2), job(1, 12, 20, 3)],
        20,
        Policy::Dpm,
        Freqs::max_only(),
    );
    assert!(matches!(
        p.step(0, &[]).unwrap()[0].run,
        Run::Job { task: 0, .. }
    ));
    assert!(matches!(
        p.step(1, &[FULL]).unwrap()[0].run,
        Run::Job { task: 0, .. }
    ));
    let d = p.step(2, &[DONE]).unwrap()[0];
    assert_eq!((d.run, d.idle_until), (Run::Idle, Some(17)));
    for s in 3..17 {
        let d = p.step(s, &[]).unwrap()[0];
        assert_eq!((d.run, d.idle_until), (Run::Idle, Some(17)), "slot {s}");
    }
    for s in 17..20 {
        let d = p.step(s, &[]).unwrap()[0];
        assert!(matches!(d.run, Run::Job { task: 1, .. }), "slot {s}");
    }
    // B completes in slot 19: no miss at the frame boundary.
    let _ = p.step(20, &[DONE]).unwrap();
    assert!(p
        .events()
        .iter()
        .all(|e| !matches!(e.1, scx_tt::planner::JobEvent::Miss { .. })));
}

#[test]
fn dpm_idle_stops_at_the_spare_capacity_of_an_interval_with_work() {
    // A [0,10) wcet 2 and C [0,10) released at 0 but only 1 slot; D [5,10) wcet 4:
    // all in [0,10): sc = 10 - 7 = 3. Slots 0-2: A, A, C (EDF, ties by order).
    // Then D is not released before 5 and [0,10) still has work (D): duration = sc = 3
    // (slots 3, 4, 5), D runs 6..10.
    let mut p = planner(
        vec![job(0, 0, 10, 2), job(1, 0, 10, 1), job(2, 5, 10, 4)],
        10,
        Policy::Dpm,
        Freqs::max_only(),
    );
    p.step(0, &[]).unwrap();
    p.step(1, &[FULL]).unwrap();
    p.step(2, &[DONE]).unwrap();
    let d = p.step(3, &[DONE]).unwrap()[0];
    assert_eq!((d.run, d.idle_until), (Run::Idle, Some(6)));
}

#[test]
fn dvfs_picks_the_lowest_step_covering_c_over_c_plus_slack_and_converts_reserved_sc() {
    // A [0,10) wcet 2, frame 10: sc = 8. Frequencies 0.25, 0.5, 1.
    // Slot 0: c = 2, slack = 0 + 8 = 8: f = 2/10 = 0.2 -> 0.25.
    //   sc = 8 - 1 = 7, rem = 1.75, res = 0.25.
    // Slot 1: c = 1.75, slack = 0.25 + 7 = 7.25: f = 1.75/9 = 0.19 -> 0.25; sc 6, res 0.5.
    // Slot 2: f = 1.5/8 -> 0.25; sc 5, res 0.75.
    // Slot 3: f = 1.25/7 -> 0.25; res reaches 1.0 -> converted: sc = 5 - 1 + 1 = 5, res 0.
    let freqs = Freqs::new(&[0.25, 0.5, 1.0]).unwrap();
    let mut p = planner(vec![job(0, 0, 10, 2)], 10, Policy::Dvfs, freqs);
    let expect_sc = [7, 6, 5, 5];
    for (s, &sc) in expect_sc.iter().enumerate() {
        let d = p.step(s as u64, &[]).unwrap()[0];
        assert_eq!(d.freq_ppm, 250_000, "slot {s}");
        assert_eq!(ivs(&p)[0].2, sc, "slot {s}");
    }
    let j = p.cpus()[0].live_jobs().next().unwrap();
    assert_eq!((j.rem, j.res), (UNIT, 0));
    // The job needs 8 slots at 0.25 in total and finishes at slot 7, in time.
    for s in 4..8 {
        assert_eq!(p.step(s, &[]).unwrap()[0].freq_ppm, 250_000);
    }
    let d = p.step(8, &[DONE]).unwrap()[0];
    assert_eq!(d.run, Run::Idle);
    assert!(p
        .events()
        .iter()
        .all(|e| matches!(e.1, scx_tt::planner::JobEvent::Completed { .. })));
}

#[test]
fn dvfs_runs_at_full_speed_without_slack() {
    // A [0,4) wcet 4: no spare capacity, f = 4/(4+0) = 1.
    let mut p = planner(
        vec![job(0, 0, 4, 4)],
        4,
        Policy::Dvfs,
        Freqs::xeon_default(),
    );
    assert_eq!(p.step(0, &[]).unwrap()[0].freq_ppm, UNIT as u32);
}

#[test]
fn default_frequencies_are_the_xeon_steps_normalised_to_the_maximum() {
    // 1.0 .. 2.3 GHz in 0.1 GHz steps: 14 steps, lowest 1.0/2.3 = 0.434782.
    let f = Freqs::xeon_default();
    assert_eq!(f.ppm().len(), 14);
    assert_eq!(f.min_ppm(), 434_782);
    assert_eq!(*f.ppm().last().unwrap(), UNIT as u32);
    assert!(Freqs::new(&[0.5, 0.4, 1.0]).is_err());
    assert!(Freqs::new(&[0.5, 0.9]).is_err());
}

#[test]
fn steps_must_come_in_order() {
    let mut p = planner(vec![job(0, 0, 4, 1)], 4, Policy::Bss, Freqs::max_only());
    assert!(p.step(1, &[]).is_err());
    p.step(0, &[]).unwrap();
    assert!(p.step(1, &[FULL, FULL]).is_err());
}

#[test]
fn an_admission_keeps_a_dpm_idle_period_when_the_job_fits_after_it_and_ends_it_otherwise() {
    // A [0,10) wcet 2, B [12,20) wcet 3, frame 30: intervals [0,10) 8, [10,12) 2, [12,20) 5,
    // [20,30) empty 10. Slots 0, 1 run A; slot 2 starts an idle period of 8 + 2 + 5 = 15 slots
    // (until 17); after slot 2, sc([0,10)) = 7 and 14 idle slots are still promised.
    let mut p = planner(
        vec![job(0, 0, 10, 2), job(1, 12, 20, 3)],
        30,
        Policy::Dpm,
        Freqs::max_only(),
    );
    p.step(0, &[]).unwrap();
    p.step(1, &[FULL]).unwrap();
    assert_eq!(p.step(2, &[DONE]).unwrap()[0].idle_until, Some(17));
    // Firm job, 2 slots before 30: available = 7 + 2 + 5 + 10 = 24; minus the 14 promised
    // idle slots leaves 10 >= 2: the idle period stays, B runs 17-19 (deadline 20 first),
    // the firm job 20-21.
    assert_eq!(
        p.admit_firm(7, 2, 30, Placement::Any),
        Admission::Accepted { cpu: 0, bound: 30 }
    );
    let runs: Vec<Run> = (3..22).map(|s| p.step(s, &[]).unwrap()[0].run).collect();
    assert!(runs[..14].iter().all(|r| *r == Run::Idle));
    assert!(runs[14..17]
        .iter()
        .all(|r| matches!(r, Run::Job { task: 1, .. })));
    assert!(runs[17..]
        .iter()
        .all(|r| matches!(r, Run::Job { task: 7, .. })));

    // Same start, but 12 slots before 17: available = 7 + 2 + min(17 - 12, 5) = 14 >= 12,
    // yet only 14 - 14 = 0 remain after the idle period: the CPU is woken for slot 3.
    let mut p = planner(
        vec![job(0, 0, 10, 2), job(1, 12, 20, 3)],
        30,
        Policy::Dpm,
        Freqs::max_only(),
    );
    p.step(0, &[]).unwrap();
    p.step(1, &[FULL]).unwrap();
    p.step(2, &[DONE]).unwrap();
    assert_eq!(
        p.admit_firm(7, 12, 17, Placement::Any),
        Admission::Accepted { cpu: 0, bound: 17 }
    );
    let d = p.step(3, &[]).unwrap()[0];
    assert!(
        matches!(
            (d.run, d.idle_until),
            (
                Run::Job {
                    task: 7,
                    kind: scx_tt::planner::JobKind::Firm,
                    ..
                },
                None
            )
        ),
        "{d:?}"
    );
}

#[test]
fn a_deadline_already_past_is_rejected_with_zero_available() {
    let mut p = planner(vec![job(0, 0, 10, 2)], 10, Policy::Bss, Freqs::max_only());
    for s in 0..5 {
        p.step(s, &[]).unwrap();
    }
    match p.admit_firm(1, 1, 3, Placement::Any) {
        Admission::Rejected(Rejection::Capacity { cap, .. }) => assert_eq!(cap.available, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_partly_stolen_slot_gives_the_work_back_and_costs_capacity() {
    // A [0,10) wcet 2, frame 10: sc = 8. Slot 0 is charged as a full slot of A:
    // sc = 8 - 1 + 1 = 8, rem = 1.
    // A really ran only half of slot 0 and did not complete: rem = 1.5 slots, which hold
    // 2 whole slots again -> sc = 8 - 1 = 7 before slot 1 is charged.
    // Slot 1 runs A (-1, +1 converted): sc = 7; A holds rem 0.5 + res 0.5 = 1 slot, and
    // slots 2..9 (8) minus that 1 = 7: consistent.
    let mut p = planner(vec![job(0, 0, 10, 2)], 10, Policy::Bss, Freqs::max_only());
    p.step(0, &[]).unwrap();
    assert_eq!(ivs(&p)[0].2, 8);
    let half = Observation {
        ran_ns: SLOT_NS / 2,
        done: false,
    };
    let d = p.step(1, &[half]).unwrap()[0];
    assert!(matches!(d.run, Run::Job { task: 0, .. }));
    assert_eq!(ivs(&p)[0].2, 7);
    let j = p.cpus()[0].live_jobs().next().unwrap();
    assert_eq!((j.rem, j.res), (UNIT / 2, UNIT / 2));
}

//! Property tests of the offline analysis (`planner::offline`) over random job sets, each
//! property checked against an independent, slow, obviously-correct reference written here:
//!
//! - EDF-exact: `edf` finds a table iff the demand-bound oracle says the set is feasible.
//! - EDF-window: every job receives exactly its wcet inside its window, no slot twice.
//! - Differential: `edf` equals a slot-by-slot EDF simulation with the same tie-break.
//! - Intervals: sorted, disjoint, covering the frame.
//! - SC-latest: `max(0, sc(I))` equals the free slots of `I` when every job runs as late as
//!   possible (a backward slot-by-slot schedule).

use proptest::prelude::*;
use scx_tt::planner::offline::{edf, intervals, Job, Range, Slot};

/// Random jobs on one CPU: frame ≤ 40, up to 10 jobs, `release < deadline ≤ frame`,
/// `1 ≤ wcet ≤ deadline − release`; the task index is random so tie-breaks get exercised.
fn job_set() -> impl Strategy<Value = (Vec<Job>, Slot)> {
    (1u64..=40).prop_flat_map(|frame| {
        let job = (0..frame, 1..=frame, 0usize..4, 0u64..1000).prop_map(move |(a, b, task, w)| {
            let (release, deadline) = if a < b { (a, b) } else { (b - 1, a + 1) };
            let deadline = deadline.min(frame);
            let release = release.min(deadline - 1);
            Job {
                task,
                instance: 0,
                release,
                deadline,
                wcet: 1 + w % (deadline - release),
            }
        });
        (proptest::collection::vec(job, 0..10), Just(frame))
    })
}

/// Random feasible job sets: the jobs of `job_set` kept greedily while the oracle agrees, so
/// that dense, tight sets (negative spare capacities) are common.
fn feasible_set() -> impl Strategy<Value = (Vec<Job>, Slot)> {
    job_set().prop_map(|(jobs, frame)| {
        let mut kept: Vec<Job> = Vec::new();
        for j in jobs {
            kept.push(j);
            if !feasible(&kept, frame) {
                kept.pop();
            }
        }
        (kept, frame)
    })
}

/// Feasibility oracle: one CPU can run preemptive jobs with release times and deadlines iff no
/// window `[t1, t2)` holds more demand (jobs with `t1 ≤ release`, `deadline ≤ t2`) than slots.
fn feasible(jobs: &[Job], frame: Slot) -> bool {
    (0..=frame).all(|t1| {
        (t1..=frame).all(|t2| {
            let demand: u64 = jobs
                .iter()
                .filter(|j| t1 <= j.release && j.deadline <= t2)
                .map(|j| j.wcet)
                .sum();
            demand <= t2 - t1
        })
    })
}

/// Owner of each slot in a table (`None` = free).
fn owners(table: &[Range], frame: Slot) -> Vec<Option<usize>> {
    let mut slot = vec![None; frame as usize];
    for r in table {
        for s in r.start..r.end {
            assert!(slot[s as usize].is_none(), "slot {s} given twice");
            slot[s as usize] = Some(r.job);
        }
    }
    slot
}

/// Reference EDF: one slot at a time, pick the ready job with the least
/// (deadline, release, task, instance, index); `None` when some job misses.
fn slow_edf(jobs: &[Job], frame: Slot) -> Option<Vec<Option<usize>>> {
    let mut left: Vec<u64> = jobs.iter().map(|j| j.wcet).collect();
    let mut out = vec![None; frame as usize];
    for t in 0..frame {
        let pick = (0..jobs.len())
            .filter(|&j| left[j] > 0 && jobs[j].release <= t && t < jobs[j].deadline)
            .min_by_key(|&j| {
                let x = &jobs[j];
                (x.deadline, x.release, x.task, x.instance, j)
            });
        if let Some(j) = pick {
            left[j] -= 1;
            out[t as usize] = Some(j);
        }
    }
    left.iter().all(|&l| l == 0).then_some(out)
}

/// As-late-as-possible schedule: backwards from the frame's end, each slot goes to the job with
/// the latest release among those that may still run there (EDF in reversed time).
fn alap(jobs: &[Job], frame: Slot) -> Vec<Option<usize>> {
    let mut left: Vec<u64> = jobs.iter().map(|j| j.wcet).collect();
    let mut out = vec![None; frame as usize];
    for t in (0..frame).rev() {
        let pick = (0..jobs.len())
            .filter(|&j| left[j] > 0 && jobs[j].release <= t && t < jobs[j].deadline)
            .max_by_key(|&j| (jobs[j].release, std::cmp::Reverse(j)));
        if let Some(j) = pick {
            left[j] -= 1;
            out[t as usize] = Some(j);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn edf_exact_finds_a_table_iff_the_oracle_says_feasible((jobs, frame) in job_set()) {
        prop_assert_eq!(edf(&jobs, frame).is_ok(), feasible(&jobs, frame));
    }

    #[test]
    fn edf_window_every_job_gets_exactly_its_wcet_in_window((jobs, frame) in feasible_set()) {
        let table = edf(&jobs, frame);
        prop_assert!(table.is_ok(), "feasible set rejected: {:?}", table);
        if let Ok(table) = table {
            let slot = owners(&table, frame);
            for (j, job) in jobs.iter().enumerate() {
                let inside = (job.release..job.deadline)
                    .filter(|&s| slot[s as usize] == Some(j))
                    .count() as u64;
                let total = slot.iter().filter(|&&o| o == Some(j)).count() as u64;
                prop_assert_eq!(inside, job.wcet, "job {} inside its window", j);
                prop_assert_eq!(total, job.wcet, "job {} outside its window", j);
            }
            // Ranges are sorted, non-empty, and adjacent ranges of one job are merged.
            for w in table.windows(2) {
                prop_assert!(w[0].end <= w[1].start);
                prop_assert!(!(w[0].end == w[1].start && w[0].job == w[1].job));
            }
            prop_assert!(table.iter().all(|r| r.start < r.end && r.end <= frame));
        }
    }

    #[test]
    fn edf_matches_slot_by_slot_reference((jobs, frame) in job_set()) {
        match (edf(&jobs, frame), slow_edf(&jobs, frame)) {
            (Ok(table), Some(reference)) => prop_assert_eq!(owners(&table, frame), reference),
            (Err(_), None) => {}
            (fast, slow) => prop_assert!(false, "edf {:?} vs reference {:?}", fast, slow),
        }
    }

    #[test]
    fn intervals_cover_the_frame_in_order((jobs, frame) in job_set()) {
        let iv = intervals(&jobs, frame);
        let mut at = 0;
        for i in &iv {
            prop_assert_eq!(i.start, at);
            prop_assert!(i.start < i.end);
            at = i.end;
        }
        prop_assert_eq!(at, frame);
        // Every job belongs to the interval its deadline ends.
        let mut seen = vec![0; jobs.len()];
        for i in &iv {
            for &j in &i.jobs {
                prop_assert_eq!(jobs[j].deadline, i.end);
                seen[j] += 1;
            }
        }
        prop_assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn sc_latest_equals_free_slots_under_latest_execution((jobs, frame) in feasible_set()) {
        let late = alap(&jobs, frame);
        for i in intervals(&jobs, frame) {
            let free = (i.start..i.end).filter(|&s| late[s as usize].is_none()).count() as i64;
            prop_assert_eq!(i.sc.max(0), free, "interval [{}, {})", i.start, i.end);
        }
    }

    #[test]
    fn sc_feasible_first_interval_is_not_negative((jobs, frame) in feasible_set()) {
        if let Some(first) = intervals(&jobs, frame).first() {
            prop_assert!(first.sc >= 0);
        }
    }
}

//! Offline analysis of one managed CPU: the EDF table and the slot-shifting capacity intervals.
//!
//! # Problem
//! A managed CPU must run a finite set of jobs that repeats every frame. Each job needs `wcet`
//! slots inside its window `[release, deadline)`. We need (a) a table saying which job owns each
//! slot, and (b) the spare capacity of the frame, organised in capacity intervals, so that the
//! online planner can shift slots and admit new work without regenerating the table.
//!
//! # Terminology
//! - *slot*: the unit of time; slot `s` is `[s·slot_us, (s+1)·slot_us)` within the frame.
//! - *frame*: `frame_slots` slots that repeat forever (the hyperperiod of the periodic tasks).
//! - *job*: one instance of a task: `release` (first slot it may run), `deadline` (exclusive: it
//!   must finish before slot `deadline` starts), `wcet` (slots it needs). `0 ≤ release < deadline
//!   ≤ frame_slots`.
//! - *capacity interval* `I = [start, end)`: each distinct deadline `d` ends one interval; the
//!   jobs of `I` are the jobs whose deadline is `d`. Slots not covered by any such interval form
//!   *empty intervals* (no jobs).
//! - *spare capacity* `sc(I)`: slots of `I` not needed by the jobs of `I` or lent to a later
//!   interval. Negative when `I`'s jobs need more than `|I|`: they borrow from earlier intervals.
//!
//! # Algorithm
//! ```text
//! edf(jobs, frame):                         // preemptive EDF at slot granularity
//!   ready = {}                              // ordered by (deadline, release, task, instance)
//!   for each maximal run of slots where the ready set does not change by a release:
//!     run the first job of `ready` until it completes or the next release, then re-pick
//!   a job with remaining work at slot == deadline is a miss -> Err(first such job)
//!
//! intervals(jobs, frame):
//!   D = sorted distinct deadlines; prev_end = 0
//!   for d in D:
//!     start = max(prev_end, min release of jobs with deadline d)
//!     if start > prev_end: push empty interval [prev_end, start)
//!     push [start, d) with the jobs whose deadline is d; prev_end = d
//!   if prev_end < frame: push empty [prev_end, frame)
//!   backwards: sc(I_i) = |I_i| - Σ wcet(I_i) + min(sc(I_{i+1}), 0)    (sc(I_{n+1}) = 0)
//! ```
//!
//! # Properties
//! 1. (EDF-exact) `edf` returns a table iff the job set is feasible on one CPU (EDF is optimal
//!    for preemptive uniprocessor scheduling of jobs with release times and deadlines).
//! 2. (EDF-window) In the table every job receives exactly `wcet` slots inside
//!    `[release, deadline)`, and no slot is given twice.
//! 3. (Tie-break) Among ready jobs the earliest deadline runs; ties go to the earlier release,
//!    then the lower task index, then the lower instance: the table is a pure function of the
//!    job list.
//! 4. (Intervals) Intervals are disjoint, sorted, and cover `[0, frame)` exactly.
//! 5. (SC-feasible) A feasible job set has `sc(I_0) ≥ 0`. The converse does not hold (a late
//!    release can still overload a window), so `edf` is the authoritative feasibility check.
//! 6. (SC-latest) For every interval, `max(0, sc(I))` equals the number of free slots inside `I`
//!    when all jobs run as late as possible.

use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Slot index inside the frame.
pub type Slot = u64;

/// One job of the frame on one CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Job {
    /// Index of the task in the plan's task list.
    pub task: usize,
    /// Instance number of the task inside the frame (0-based).
    pub instance: u32,
    /// First slot the job may run in.
    pub release: Slot,
    /// Exclusive: the job must complete before this slot starts.
    pub deadline: Slot,
    /// Slots of execution the job needs.
    pub wcet: u64,
}

/// A run of slots `[start, end)` owned by one job (index into the job list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Range {
    pub start: Slot,
    pub end: Slot,
    pub job: usize,
}

/// A capacity interval `[start, end)` with its spare capacity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Interval {
    pub start: Slot,
    pub end: Slot,
    /// Spare capacity in slots (may be negative: the interval borrows from earlier ones).
    pub sc: i64,
    /// Indices into the job list of the jobs whose deadline ends this interval (empty for an
    /// empty interval).
    pub jobs: Vec<usize>,
}

impl Interval {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

/// The first job that misses its deadline under EDF.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("job {job} (task {task}, instance {instance}) misses its deadline at slot {deadline} with {remaining} of {wcet} slots left")]
pub struct Miss {
    pub job: usize,
    pub task: usize,
    pub instance: u32,
    pub deadline: Slot,
    pub remaining: u64,
    pub wcet: u64,
}

/// Jobs in release order, ties by `(task, instance, index)`: the position of a job in this
/// order is its rank among jobs of equal deadline (property 3), so the ready queue can order by
/// the packed integer `deadline · 2⁶⁴ + position` instead of a 5-field tuple.
fn release_order(jobs: &[Job]) -> Vec<usize> {
    let in_task_order = jobs
        .windows(2)
        .all(|w| (w[0].task, w[0].instance) <= (w[1].task, w[1].instance));
    if in_task_order {
        // Index order already is (task, instance, index) order: the usual case, linear.
        return sorted_by(jobs, |j| j.release);
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_unstable_by_key(|&j| (jobs[j].release, jobs[j].task, jobs[j].instance, j));
    order
}

/// Job indices sorted by `(slot_of(job), index)` — the hot spot of large plans. When the slots
/// span little more than there are jobs, a counting sort (linear); otherwise the pair packed in
/// one `u128` so the comparison sort compares plain integers.
fn sorted_by(jobs: &[Job], slot_of: impl Fn(&Job) -> Slot) -> Vec<usize> {
    let max = jobs.iter().map(&slot_of).max().unwrap_or(0);
    if max <= 8 * jobs.len() as Slot + 64 && jobs.len() < u32::MAX as usize {
        let mut start = vec![0u32; max as usize + 2];
        for job in jobs {
            start[slot_of(job) as usize + 1] += 1;
        }
        for s in 1..start.len() {
            start[s] += start[s - 1];
        }
        let mut out = vec![0; jobs.len()];
        for (j, job) in jobs.iter().enumerate() {
            let at = &mut start[slot_of(job) as usize];
            out[*at as usize] = j;
            *at += 1;
        }
        return out;
    }
    let mut keys: Vec<u128> = jobs
        .iter()
        .enumerate()
        .map(|(j, job)| (slot_of(job) as u128) << 64 | j as u128)
        .collect();
    keys.sort_unstable();
    keys.into_iter().map(|k| k as u64 as usize).collect()
}

/// Preemptive EDF over `[0, frame)` at slot granularity; returns the table as ranges sorted by
/// start (adjacent slots of the same job are merged) or the first miss (earliest deadline at which
/// a job still has work left). Jobs must satisfy `release < deadline ≤ frame`.
pub fn edf(jobs: &[Job], frame: Slot) -> Result<Vec<Range>, Miss> {
    let order = release_order(jobs);
    // Priority key of the job at `order[p]`: earliest deadline first, then the tie-break of
    // property 3 (release, task, instance, index), which is the order of `p`.
    let key = |p: usize| (jobs[order[p]].deadline as u128) << 64 | p as u128;
    let mut remaining: Vec<u64> = jobs.iter().map(|j| j.wcet).collect();
    let mut ready: BinaryHeap<Reverse<u128>> = BinaryHeap::new();
    // Preemptions happen only at releases, so there are at most 2·jobs ranges.
    let mut table: Vec<Range> = Vec::with_capacity(jobs.len());
    let mut next = 0; // next job in `order` to release
    let mut now: Slot = 0;
    let miss = |j: usize, rem: u64| Miss {
        job: j,
        task: jobs[j].task,
        instance: jobs[j].instance,
        deadline: jobs[j].deadline,
        remaining: rem,
        wcet: jobs[j].wcet,
    };
    loop {
        while next < order.len() && jobs[order[next]].release <= now {
            if remaining[order[next]] > 0 {
                ready.push(Reverse(key(next)));
            }
            next += 1;
        }
        let Some(&Reverse(top)) = ready.peek() else {
            if next >= order.len() {
                break;
            }
            now = jobs[order[next]].release;
            continue;
        };
        let j = order[top as u64 as usize];
        if jobs[j].deadline <= now {
            // Earliest-deadline ready job is already late: it is the first miss.
            return Err(miss(j, remaining[j]));
        }
        let next_release = order.get(next).map_or(Slot::MAX, |&n| jobs[n].release);
        let run_until = (now + remaining[j])
            .min(next_release)
            .min(jobs[j].deadline)
            .min(frame);
        if run_until <= now {
            return Err(miss(j, remaining[j]));
        }
        match table.last_mut() {
            Some(r) if r.job == j && r.end == now => r.end = run_until,
            _ => table.push(Range {
                start: now,
                end: run_until,
                job: j,
            }),
        }
        remaining[j] -= run_until - now;
        now = run_until;
        if remaining[j] == 0 {
            ready.pop();
        }
    }
    table.shrink_to_fit();
    Ok(table)
}

/// Capacity intervals of `[0, frame)` with spare capacities (see the module doc).
pub fn intervals(jobs: &[Job], frame: Slot) -> Vec<Interval> {
    let by_deadline = sorted_by(jobs, |j| j.deadline);
    let mut out: Vec<Interval> = Vec::new();
    let mut prev_end: Slot = 0;
    for group in by_deadline.chunk_by(|&a, &b| jobs[a].deadline == jobs[b].deadline) {
        let d = jobs[group[0]].deadline;
        let earliest = group.iter().map(|&j| jobs[j].release).min().unwrap_or(d);
        let members = group.to_vec();
        let start = prev_end.max(earliest);
        if start > prev_end {
            out.push(Interval {
                start: prev_end,
                end: start,
                sc: 0,
                jobs: Vec::new(),
            });
        }
        out.push(Interval {
            start,
            end: d,
            sc: 0,
            jobs: members,
        });
        prev_end = d;
    }
    if prev_end < frame {
        out.push(Interval {
            start: prev_end,
            end: frame,
            sc: 0,
            jobs: Vec::new(),
        });
    }
    out.shrink_to_fit();
    let mut borrow: i64 = 0; // min(sc(I_{i+1}), 0)
    for iv in out.iter_mut().rev() {
        let demand: u64 = iv.jobs.iter().map(|&j| jobs[j].wcet).sum();
        iv.sc = iv.len() as i64 - demand as i64 + borrow;
        borrow = iv.sc.min(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(task: usize, release: Slot, deadline: Slot, wcet: u64) -> Job {
        Job {
            task,
            instance: 0,
            release,
            deadline,
            wcet,
        }
    }

    #[test]
    fn edf_prefers_earlier_deadline_and_preempts() {
        // A: [0,10) wcet 4; B: released at 1, deadline 3, wcet 2.
        // slot 0: A (only ready); slots 1-2: B (deadline 3 < 10); slots 3-5: A's remaining 3.
        let jobs = vec![job(0, 0, 10, 4), job(1, 1, 3, 2)];
        let t = edf(&jobs, 10).unwrap();
        assert_eq!(
            t,
            vec![
                Range {
                    start: 0,
                    end: 1,
                    job: 0
                },
                Range {
                    start: 1,
                    end: 3,
                    job: 1
                },
                Range {
                    start: 3,
                    end: 6,
                    job: 0
                }
            ]
        );
    }

    #[test]
    fn edf_reports_first_miss() {
        // Two jobs due at 3 need 2 + 2 = 4 slots in [0,3): the later-ordered one (task 1) misses.
        let jobs = vec![job(0, 0, 3, 2), job(1, 0, 3, 2)];
        let m = edf(&jobs, 5).unwrap_err();
        assert_eq!((m.task, m.deadline, m.remaining), (1, 3, 1));
    }

    #[test]
    fn intervals_with_borrowing_and_empty_tail() {
        // J0 [0,4) wcet 1; J1 [2,6) wcet 3; frame 8. J1's interval starts at max(4, 2) = 4.
        // I0 = [0,4): 4 - 1 + min(sc(I1),0); I1 = [4,6): 2 - 3 + 0 = -1; I2 = [6,8) empty: 2.
        // backwards: sc(I2)=2, sc(I1)=2-3+min(2,0)=-1, sc(I0)=4-1+(-1)=2.
        let jobs = vec![job(0, 0, 4, 1), job(1, 2, 6, 3)];
        let iv = intervals(&jobs, 8);
        let got: Vec<_> = iv.iter().map(|i| (i.start, i.end, i.sc)).collect();
        assert_eq!(got, vec![(0, 4, 2), (4, 6, -1), (6, 8, 2)]);
    }

    fn spans(iv: &[Interval]) -> Vec<(Slot, Slot, i64)> {
        iv.iter().map(|i| (i.start, i.end, i.sc)).collect()
    }

    #[test]
    fn intervals_jobs_sharing_a_deadline_with_different_releases() {
        // J2 [0,2) w1; J0 [2,8) w1 and J1 [4,8) w2 share deadline 8. Frame 8.
        // I0 = [0,2) {J2}; I1 starts at max(2, min(2, 4)) = 2: [2,8) {J0, J1}.
        // sc(I1) = 6 - (1 + 2) + 0 = 3; sc(I0) = 2 - 1 + min(3, 0) = 1.
        let jobs = vec![job(0, 2, 8, 1), job(1, 4, 8, 2), job(2, 0, 2, 1)];
        let iv = intervals(&jobs, 8);
        assert_eq!(spans(&iv), vec![(0, 2, 1), (2, 8, 3)]);
        assert_eq!(iv[1].jobs, vec![0, 1]);
    }

    #[test]
    fn intervals_empty_interval_before_a_late_release() {
        // J0 [0,3) w1; J1 [5,8) w2; frame 10.
        // I0 = [0,3); J1's interval starts at max(3, 5) = 5, so [3,5) is an empty interval;
        // [8,10) is an empty tail. Backwards: tail 2; [5,8): 3 - 2 = 1; [3,5): 2 - 0 = 2;
        // [0,3): 3 - 1 = 2.
        let jobs = vec![job(0, 0, 3, 1), job(1, 5, 8, 2)];
        let iv = intervals(&jobs, 10);
        assert_eq!(
            spans(&iv),
            vec![(0, 3, 2), (3, 5, 2), (5, 8, 1), (8, 10, 2)]
        );
        assert!(iv[1].is_empty() && iv[3].is_empty());
    }

    #[test]
    fn intervals_negative_sc_borrows_from_predecessor() {
        // J0 [0,4) w1; J1 [1,6) w4. I0 = [0,4); I1 = [max(4, 1), 6) = [4,6).
        // sc(I1) = 2 - 4 = -2: J1 needs 2 slots before slot 4, lent by I0.
        // sc(I0) = 4 - 1 + (-2) = 1. Latest execution: J1 at 2,3,4,5; J0 at 1; slot 0 free.
        let jobs = vec![job(0, 0, 4, 1), job(1, 1, 6, 4)];
        assert_eq!(spans(&intervals(&jobs, 6)), vec![(0, 4, 1), (4, 6, -2)]);
    }

    #[test]
    fn intervals_borrowing_crosses_a_full_interval_into_an_empty_one() {
        // J1 [2,5) w3 (its interval starts at 2: [0,2) is empty); J2 [0,6) w2 ends [5,6).
        // sc([5,6)) = 1 - 2 = -1; sc([2,5)) = 3 - 3 + (-1) = -1; sc([0,2)) = 2 - 0 + (-1) = 1.
        // Latest execution: J2 at 5 and 1, J1 at 2,3,4: exactly slot 0 of [0,2) is free.
        let jobs = vec![job(1, 2, 5, 3), job(2, 0, 6, 2)];
        assert_eq!(
            spans(&intervals(&jobs, 6)),
            vec![(0, 2, 1), (2, 5, -1), (5, 6, -1)]
        );
    }

    #[test]
    fn intervals_cover_frame_without_jobs() {
        assert_eq!(spans(&intervals(&[], 7)), vec![(0, 7, 7)]);
    }

    #[test]
    fn tie_break_same_deadline_earlier_release_first() {
        // J0 [2,10) w2, J1 [0,10) w2, J2 [0,1) w1: slot 0 J2; slot 1 J1 (only ready);
        // slot 2: J0 and J1 tie on deadline 10, J1 released earlier: J1 [1,3), then J0 [3,5).
        let jobs = vec![job(0, 2, 10, 2), job(1, 0, 10, 2), job(2, 0, 1, 1)];
        let t: Vec<_> = edf(&jobs, 10)
            .unwrap()
            .iter()
            .map(|r| (r.start, r.end, r.job))
            .collect();
        assert_eq!(t, vec![(0, 1, 2), (1, 3, 1), (3, 5, 0)]);
    }

    #[test]
    fn tie_break_same_deadline_and_release_lower_task_first() {
        let jobs = vec![job(3, 0, 4, 1), job(1, 0, 4, 1)];
        let t = edf(&jobs, 4).unwrap();
        assert_eq!((t[0].job, t[1].job), (1, 0));
    }

    #[test]
    fn edf_idles_until_the_next_release() {
        // J0 [3,5) w2 alone: slots 0-2 free, J0 at [3,5).
        let t = edf(&[job(0, 3, 5, 2)], 6).unwrap();
        assert_eq!((t[0].start, t[0].end), (3, 5));
    }

    #[test]
    fn sorted_by_counting_and_comparison_paths_agree_with_a_plain_sort() {
        // Slots within 8·n + 64 take the counting sort; spread-out slots the comparison sort.
        let mut x: u64 = 12345;
        for spread in [10u64, 1_000_000] {
            let jobs: Vec<Job> = (0..200)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    job(i, (x >> 33) % spread, spread + 1, 1)
                })
                .collect();
            let mut want: Vec<usize> = (0..jobs.len()).collect();
            want.sort_by_key(|&j| (jobs[j].release, j));
            assert_eq!(sorted_by(&jobs, |j| j.release), want, "spread {spread}");
        }
    }
}

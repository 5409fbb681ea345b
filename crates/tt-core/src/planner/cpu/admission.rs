//! Firm aperiodic jobs on one CPU: the acceptance test over the spare capacities and the
//! guarantee routine that splits an interval at the new deadline.

use super::{Capacity, CpuState, Iv, JobKind, LiveJob, MAX_JOB_SLOTS, UNIT};
use crate::planner::offline::Slot;
use std::cmp::Reverse;

impl CpuState {
    /// Acceptance test for `wcet` slots before `deadline`, from slot `now` on. Slots promised to
    /// a DPM idle period count as free: the guarantee routine wakes the CPU if it needs them.
    pub fn acceptance(&self, now: Slot, wcet: u64, deadline: Slot) -> Capacity {
        self.acceptance_until(now, wcet, deadline, i64::MAX)
    }

    /// [`Self::acceptance`] that stops counting once `enough` free slots are found (then
    /// `available` is a lower bound ≥ `enough`).
    pub fn acceptance_until(&self, now: Slot, wcet: u64, deadline: Slot, enough: i64) -> Capacity {
        let d = deadline.min(self.horizon_end());
        let mut avail: i64 = 0;
        if d <= now {
            return Capacity {
                needed: wcet,
                available: 0,
                deadline: d,
            };
        }
        for iv in &self.ivs {
            if iv.end <= now {
                continue;
            }
            if iv.start >= d {
                break;
            }
            if iv.end <= d {
                avail += iv.sc.max(0);
                if avail >= enough {
                    break;
                }
            } else {
                avail += (d - iv.start.max(now)).min(iv.sc.max(0) as u64) as i64;
                break;
            }
        }
        Capacity {
            needed: wcet,
            available: avail,
            deadline: d,
        }
    }

    /// Guarantee routine: adds a firm job released at `now` that passed [`Self::acceptance`].
    /// `wcet` must be at most [`MAX_JOB_SLOTS`] (checked by `Planner::admit_firm`); a larger
    /// one is ignored here rather than wrapped into the spare capacity.
    pub fn guarantee(&mut self, now: Slot, task: usize, wcet: u64, deadline: Slot) {
        let d = deadline.min(self.horizon_end());
        if wcet == 0 || wcet > MAX_JOB_SLOTS {
            return;
        }
        self.forget_quiet();
        self.end_idle_unless_fits(now, wcet, d);
        let i = self.first_ending_from(d);
        if self.ivs[i].end != d {
            self.split_interval(i, d, now);
        }
        let seq = self.job_base + self.jobs.len();
        self.jobs.push_back(LiveJob {
            task,
            kind: JobKind::Firm,
            release: now,
            deadline: d,
            rem: wcet * UNIT,
            res: 0,
            wcet: wcet.min(u32::MAX as u64) as u32,
            done: false,
            parked: false,
            iv_at: super::Cached(self.iv_popped.0 + i as u64),
        });
        self.firm_slots += wcet.min(u32::MAX as u64);
        self.ivs[i].pending += 1;
        self.add_sc(i, -(wcet as i64));
        self.ready.push(Reverse((d, seq)));
    }

    /// A DPM idle period in progress keeps going only if a job of `wcet` slots due at `d` still
    /// fits after it; otherwise it ends now (the CPU is woken for the next slot).
    fn end_idle_unless_fits(&mut self, now: Slot, wcet: u64, d: Slot) {
        let promised = self.idle_until.saturating_sub(now) as i64;
        if promised > 0
            && self
                .acceptance_until(now, wcet, d, promised + wcet as i64)
                .available
                - promised
                < wcet as i64
        {
            self.idle_until = now;
        }
    }

    /// Splits interval `i`, [s, e) with d < e, at `d`, the deadline of a new firm job.
    fn split_interval(&mut self, i: usize, d: Slot, now: Slot) {
        // Split [s, e) at d: the part before d keeps the free slots that lie before d.
        self.iv_hint.0 = super::NO_HINT;
        let iv = self.ivs[i];
        let s_eff = iv.start.max(now) as i64;
        let before = (d as i64 - s_eff).min(iv.sc);
        self.ivs[i] = Iv {
            start: iv.start,
            end: d,
            sc: before,
            pending: 0,
        };
        self.ivs.insert(
            i + 1,
            Iv {
                start: d,
                end: iv.end,
                sc: iv.sc - (d as i64 - s_eff),
                pending: iv.pending,
            },
        );
        // `before` = |[s,d)| + min(0, sc([d,e))); nothing changes for earlier intervals.
        debug_assert_eq!(
            before,
            (d as i64 - s_eff) + (iv.sc - (d as i64 - s_eff)).min(0)
        );
    }
}

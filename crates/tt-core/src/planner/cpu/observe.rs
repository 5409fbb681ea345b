//! The closed loop of one CPU: consuming the decided slot, reconciling it with what really
//! ran (late observations, voided slots, lost work), and freeing what finished jobs hold.

use super::{CpuState, JobEvent, JobKind, Pending, Running, UNIT};
use crate::planner::offline::Slot;
use std::cmp::Reverse;

impl CpuState {
    /// Consumes the slot being decided (`self.now`): it is no longer spare. `run` says what
    /// runs in it; the slot stays pending until its observation is applied. A job whose whole
    /// remaining work is now credited leaves the ready queue (it is *parked*, it must be the
    /// EDF top the decision took) until a reconciliation gives work back.
    #[inline(always)]
    pub(crate) fn consume(&mut self, run: Running) -> Running {
        if self.defer_charge.0 && !matches!(run, Running::Soft { .. }) {
            // The first slot of a quiet run: charged with the run (`charge_quiet_run`), which
            // replaces this entry by the run's last slot and what it credited.
            self.pending.push_back(Pending {
                slot: self.now,
                run,
            });
            return run;
        }
        self.ivs[0].sc -= 1;
        let run = match run {
            Running::Job { idx, freq_ppm, .. } => {
                // at most `freq_ppm`
                let credited = self.charge(idx, freq_ppm) as u32;
                Running::Job {
                    idx,
                    credited,
                    freq_ppm,
                }
            }
            other => other,
        };
        self.pending.push_back(Pending {
            slot: self.now,
            run,
        });
        run
    }

    /// Job `seq` runs a slot at `freq_ppm`: up to that much of its remaining work moves to its
    /// reserved capacity, whose whole slots return to its interval (`convert` of the module
    /// doc). Returns the units credited.
    #[inline(always)]
    fn charge(&mut self, seq: usize, freq_ppm: u32) -> u64 {
        let j = &mut self.jobs[seq - self.job_base];
        let e = (freq_ppm as u64).min(j.rem);
        j.rem -= e;
        j.res += e;
        let park = j.rem == 0 && !j.parked;
        j.parked |= park;
        let whole = j.res / UNIT;
        j.res -= whole * UNIT;
        let deadline = j.deadline;
        if park {
            let top = self.ready.pop();
            debug_assert_eq!(top.map(|Reverse((_, s))| s), Some(seq));
        }
        if whole > 0 {
            let i = self.job_iv(seq);
            self.iv_hint.0 = (deadline, i);
            self.add_sc(i, whole as i64);
        }
        e
    }

    /// Charges slots `from..upto` that `Planner::step` decided without touching this CPU (a
    /// quiet run: `policy::quiet_run_end`): each ran `run` (idle or best-effort, or job `idx`
    /// at `f = freq_ppm` with work left when it was decided), the one before it was reconciled
    /// as run whole, and nothing else happened. The result is the state `k = upto − from`
    /// per-slot steps leave, in closed form:
    /// - every slot charges `sc(I_cur)`, so it drops by `k`;
    /// - the job's slots credit `f` each, the last one what is left if that is less: `e` in all, moved
    ///   from `rem` to `res`; `convert` returns the whole slots of `res` to the job's interval,
    ///   `⌊(res + e)/UNIT⌋` in all, and `add_sc(I_j, +1)` per slot equals `add_sc(I_j, +n)` once
    ///   (the borrowing `min(0, sc)` telescopes; `sc(I_cur)`'s own charges do not propagate);
    /// - the last slot is the one pending, with what it credited.
    ///
    /// A run may cross what [`Self::cross_due`] allows: the jobs released before `upto` are
    /// released first (in a job's run they come after the job in EDF order, so that order is
    /// the order per-slot steps push and pop the ready queue in), and each slot is charged to
    /// the interval it lies in, the intervals that end before `upto` dropped as `advance` drops
    /// them. A job's conversions are added to its interval once, after the drops: the change of
    /// borrowing `add_sc` propagates telescopes per interval, and what it would have propagated
    /// to the dropped intervals is gone with them.
    pub(crate) fn charge_quiet_run(&mut self, from: Slot, upto: Slot, run: Running) {
        let k = upto - from;
        debug_assert!(k > 0 && self.pending.len() == 1);
        let mut at = from;
        // Nothing is due before `quiet_until` (set by the `advance` the run started after, 0
        // once anything changed the CPU): a run that ends by then crosses nothing.
        if upto > self.quiet_until.0 {
            self.release_upto(upto - 1);
        }
        while self.ivs[0].end < upto {
            // (a run synced at `at` may have stopped where this interval ended)
            debug_assert!(self.ivs[0].end >= at);
            let end = self.ivs[0].end;
            self.ivs[0].sc -= (end - at) as i64;
            self.pop_interval();
            at = end;
        }
        self.ivs[0].sc -= (upto - at) as i64;
        let run = match run {
            Running::Job { idx, freq_ppm, .. } => {
                let f = freq_ppm as u64;
                let j = &mut self.jobs[idx - self.job_base];
                debug_assert!(j.res < UNIT && j.rem > (k - 1) * f && !j.done);
                let e = j.rem.min(k * f);
                let credited = e - (k - 1) * f;
                j.rem -= e;
                let res = j.res + e;
                let whole = res / UNIT;
                j.res = res - whole * UNIT;
                let park = j.rem == 0 && !j.parked;
                j.parked |= park;
                let deadline = j.deadline;
                if park {
                    let top = self.ready.pop();
                    debug_assert_eq!(top.map(|Reverse((_, s))| s), Some(idx));
                }
                if whole > 0 {
                    let i = self.job_iv(idx);
                    self.iv_hint.0 = (deadline, i);
                    self.add_sc(i, whole as i64);
                }
                Running::Job {
                    idx,
                    credited: credited as u32,
                    freq_ppm,
                }
            }
            other => other,
        };
        self.pending.pop_front();
        self.now = upto - 1;
        self.pending.push_back(Pending {
            slot: self.now,
            run,
        });
    }

    /// The oldest decided slot whose observation is pending.
    pub(crate) fn oldest_pending(&self) -> Option<Slot> {
        self.pending.front().map(|p| p.slot)
    }

    /// Applies what really ran in the oldest pending slot: `ran_ns` of `slot_ns` at the
    /// decided frequency, `done` if the job completed (or blocked for the rest of its
    /// instance). Slots decided later for a job that completed are *voided*: their slot numbers
    /// are appended to `voided` (they were charged as spent; the job no longer runs in them).
    pub(crate) fn reconcile(
        &mut self,
        ran_ns: u64,
        slot_ns: u64,
        done: bool,
        events: &mut Vec<JobEvent>,
    ) {
        self.reconcile_into(ran_ns, slot_ns, done, events, &mut Vec::new());
    }

    /// [`Self::reconcile`], appending the voided slots to `voided`.
    pub(crate) fn reconcile_into(
        &mut self,
        ran_ns: u64,
        slot_ns: u64,
        done: bool,
        events: &mut Vec<JobEvent>,
        voided: &mut Vec<Slot>,
    ) {
        let Some(Pending { run, .. }) = self.pending.pop_front() else {
            return;
        };
        match run {
            Running::Job {
                idx,
                credited,
                freq_ppm,
            } => {
                let ran = executed_units(ran_ns, slot_ns, freq_ppm);
                self.reconcile_job(idx, credited as u64, ran, done, events, voided);
            }
            Running::Soft { freq_ppm } => {
                let ran = executed_units(ran_ns, slot_ns, freq_ppm);
                self.reconcile_soft(ran, done, events);
            }
            Running::Other => {}
        }
    }

    /// Reconciles a slot decided for job `idx`, credited `credited` units, that executed `ran`
    /// units (`done`: the job completed): completion voids its later slots, work it did not do
    /// is given back or reported lost, and its last pending slot cuts an overrun off.
    fn reconcile_job(
        &mut self,
        idx: usize,
        credited: u64,
        ran: u64,
        done: bool,
        events: &mut Vec<JobEvent>,
        voided: &mut Vec<Slot>,
    ) {
        if self.is_done(idx) {
            return;
        }
        let j = self.job(idx);
        let (task, kind, deadline) = (j.task, j.kind, j.deadline);
        let later = self
            .pending
            .iter()
            .any(|p| matches!(p.run, Running::Job { idx: i, .. } if i == idx));
        if done {
            if later {
                self.void_pending(idx, Some(voided));
            }
            self.finish(idx);
            events.push(JobEvent::Completed { task, kind });
            return;
        }
        if ran < credited {
            if deadline <= self.now {
                // Observed after the deadline: the work it did not do can no longer
                // be given a slot (lost to the platform, after the fact). The slots
                // decided for it later are spent as well.
                self.void_pending(idx, None);
                self.finish(idx);
                events.push(JobEvent::Lost {
                    task,
                    kind,
                    deadline,
                    units: credited - ran,
                });
                return;
            }
            let units = self.uncredit(idx, credited - ran);
            if units > 0 {
                events.push(JobEvent::Lost {
                    task,
                    kind,
                    deadline,
                    units,
                });
            }
        }
        if !later && self.job(idx).rem == 0 {
            self.finish(idx);
            events.push(JobEvent::Overrun { task, kind });
        }
    }

    /// Reconciles a slot of the front soft job that executed `ran` units (`done`: it
    /// completed): it completes, is cut off when its units run out, or keeps the rest.
    fn reconcile_soft(&mut self, ran: u64, done: bool, events: &mut Vec<JobEvent>) {
        if let Some(front) = self.soft.front_mut() {
            front.rem = front.rem.saturating_sub(ran);
            let task = front.task;
            if done {
                self.soft.pop_front();
                events.push(JobEvent::SoftCompleted { task });
            } else if front.rem == 0 {
                self.soft.pop_front();
                events.push(JobEvent::SoftCutOff { task });
            }
        }
    }

    /// Turns the pending slots decided for job `seq` into [`Running::Other`]: they stay spent,
    /// the job no longer runs in them. Their slot numbers are appended to `voided` if given.
    pub(super) fn void_pending(&mut self, seq: usize, mut voided: Option<&mut Vec<Slot>>) {
        for p in self.pending.iter_mut() {
            if matches!(p.run, Running::Job { idx, .. } if idx == seq) {
                p.run = Running::Other;
                if let Some(voided) = voided.as_deref_mut() {
                    voided.push(p.slot);
                }
            }
        }
    }

    /// The job executed `units` less than credited (its slot was partly lost). A parked job
    /// that gets work back returns to the ready queue. What its reserved units do not cover
    /// needs whole slots of its interval: only free ones are taken (those the acceptance test
    /// would give a new job of the same deadline, a DPM idle period ending early if need be),
    /// so a loss never displaces another guarantee. Returns the units that could not be given
    /// back: the job absorbs them (it may be cut off before its work is done).
    fn uncredit(&mut self, seq: usize, units: u64) -> u64 {
        let j = self.job_mut(seq);
        let unpark = j.parked;
        let deadline = j.deadline;
        let (give, slots) = if j.res >= units {
            (units, 0)
        } else {
            let short = units - j.res;
            let want = short.div_ceil(UNIT);
            let now = self.now + 1;
            let promised = self.idle_until.saturating_sub(now) as i64;
            let enough = want as i64 + promised;
            let mut free = self.acceptance_until(now, want, deadline, enough).available;
            if promised > 0 && free - promised < want as i64 {
                // The DPM idle period in progress ends: its slots become free again.
                self.idle_until = now;
            } else {
                free -= promised;
            }
            let slots = want.min(free.max(0) as u64);
            if slots == want {
                (units, want)
            } else {
                (self.job(seq).res + slots * UNIT, slots)
            }
        };
        let j = self.job_mut(seq);
        j.rem += give;
        // `res + slots·UNIT − give` is the part of the last slot taken that the job does not need
        j.res = j.res + slots * UNIT - give;
        if give > 0 {
            j.parked = false;
            if unpark {
                self.ready.push(Reverse((deadline, seq)));
            }
        }
        if slots > 0 {
            let i = self.job_iv(seq);
            self.add_sc(i, -(slots as i64));
        }
        units - give
    }

    /// Frees what a finished job still holds.
    pub(super) fn finish(&mut self, seq: usize) {
        let deadline = self.job(seq).deadline;
        if deadline <= self.now && self.ivs.front().is_none_or(|iv| iv.start >= deadline) {
            // Its interval is over (a late observation): there is nothing left to free.
            self.retire(seq);
            return;
        }
        let j = self.job_mut(seq);
        debug_assert!(!j.done);
        j.done = true;
        let held = (j.rem + j.res) / UNIT;
        j.rem = 0;
        j.res = 0;
        if j.kind == JobKind::Firm {
            let wcet = j.wcet as u64;
            self.firm_slots -= wcet;
        }
        let i = self.job_iv(seq);
        self.ivs[i].pending -= 1;
        if held > 0 {
            self.add_sc(i, held as i64);
        }
        self.pop_done();
    }

    /// Marks a job whose interval has already ended finished (nothing to give back).
    fn retire(&mut self, seq: usize) {
        let j = self.job_mut(seq);
        debug_assert!(!j.done);
        j.done = true;
        j.rem = 0;
        j.res = 0;
        if j.kind == JobKind::Firm {
            let wcet = j.wcet as u64;
            self.firm_slots -= wcet;
        }
        self.pop_done();
    }

    fn pop_done(&mut self) {
        while self.jobs.front().is_some_and(|j| j.done) {
            self.jobs.pop_front();
            self.job_base += 1;
        }
    }
}

/// Units executed in a slot at `freq_ppm` that ran `ran_ns` of `slot_ns`.
fn executed_units(ran_ns: u64, slot_ns: u64, freq_ppm: u32) -> u64 {
    if ran_ns >= slot_ns && slot_ns > 0 {
        // The whole slot ran (the common case): no 128-bit division.
        freq_ppm as u64
    } else {
        (ran_ns as u128 * freq_ppm as u128 / slot_ns.max(1) as u128) as u64
    }
}

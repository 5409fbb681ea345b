//! Admissions and removals on the kernel path: firm jobs, periodic tasks of the plan, tasks
//! and aperiodic jobs the plan does not name (`scx_tt ctl admit`), their removal, and the
//! reservation oracle of the adaptive supervisor.

use super::{KernelPlanner, LogEvent};
use crate::planner::cpu::Capacity;
use crate::planner::offline::Slot;
use crate::planner::runtime::{Admission, Placement, Planner, Rejection};
use serde::{Deserialize, Serialize};

/// A validated firm admission request: `wcet` slots for plan task `task` (a tt task) on
/// managed CPU index `cpu`, due `deadline_slots` after the kernel slot in progress when the
/// planner admits it ([`KernelPlanner::admit_firm`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmJob {
    pub task: usize,
    pub cpu: usize,
    pub wcet: u64,
    pub deadline_slots: u64,
}

/// The planner's answer to a [`FirmJob`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirmOutcome {
    /// Guaranteed on managed CPU index `cpu` before `deadline_slot` (the deadline clamped to the
    /// planner's horizon); decisions from `first_slot` on may run it.
    Accepted {
        cpu: usize,
        deadline_slot: u64,
        first_slot: u64,
    },
    /// Not enough spare capacity on the task's CPU before `cap.deadline`.
    Rejected(Capacity),
}

/// A validated periodic admission: plan task `task` (declared `"start": "admitted"`), `wcet`
/// slots every `period` slots (deadline the period) on managed CPU index `cpu`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodicTask {
    pub task: usize,
    pub cpu: usize,
    pub period: u64,
    pub wcet: u64,
    /// Release of each job after its period's start (`ctl admit --offset-slots`; 0 otherwise).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: u64,
    /// Relative deadline (`ctl admit --deadline-slots`); `None`: the period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl PeriodicTask {
    /// `wcet` slots every `period` slots, released at the period's start, due at its end.
    pub fn implicit(task: usize, cpu: usize, period: u64, wcet: u64) -> Self {
        PeriodicTask {
            task,
            cpu,
            period,
            wcet,
            offset: 0,
            deadline: None,
        }
    }
}

/// The planner's answer to a [`PeriodicTask`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeriodicOutcome {
    /// In the template of managed CPU index `cpu`; it runs from `from_slot` on (the first slot
    /// of the first frame whose build had not started on that CPU).
    Accepted { cpu: usize, from_slot: u64 },
    /// The template plus its instances misses a deadline under EDF on its CPU (or the request
    /// is invalid); nothing changed.
    Rejected(Rejection),
}

impl KernelPlanner {
    /// Admission test and guarantee of `job` on its own CPU only (a tt task's threads run on no
    /// other CPU), due `job.deadline_slots` after `cur`, the kernel slot in progress (read by
    /// the caller while it holds this planner, so that the planner thread cannot step between
    /// the clock reading and the admission). The slots up to `now() - 1` are decided (written).
    pub fn admit_firm(&mut self, job: &FirmJob, cur: Slot) -> FirmOutcome {
        self.record(|| LogEvent::AdmitFirm {
            job: job.clone(),
            cur,
        });
        self.firm(job, cur, false)
    }

    /// The admission of `job` due `job.deadline_slots` after `cur` under a fresh planner id,
    /// mapped to BPF task `job.task`; `own`: the id is a task of its own (an aperiodic task
    /// added at run time, [`Self::adopt`]) rather than a job of a plan task.
    fn firm(&mut self, job: &FirmJob, cur: Slot, own: bool) -> FirmOutcome {
        let now = self.planner.now();
        let deadline = cur.saturating_add(job.deadline_slots);
        let id = self.task_of.len();
        match self
            .planner
            .admit_firm(id, job.wcet, deadline, Placement::Only(job.cpu))
        {
            Admission::Accepted { cpu, bound } => {
                match own {
                    true => self.adopt(id, job.task),
                    false => self.task_of.push(job.task as u32),
                }
                FirmOutcome::Accepted {
                    cpu,
                    deadline_slot: bound,
                    first_slot: now,
                }
            }
            Admission::Rejected(Rejection::Capacity { cap, .. }) => FirmOutcome::Rejected(cap),
            // an index that is no managed CPU: nothing is available there
            Admission::Rejected(_) => FirmOutcome::Rejected(Capacity {
                needed: job.wcet,
                available: 0,
                deadline,
            }),
        }
    }

    /// Admission test and template insertion of periodic task `t` on its own CPU only (see the
    /// module doc). A rejection changes nothing.
    pub fn admit_periodic(&mut self, t: &PeriodicTask) -> PeriodicOutcome {
        self.record(|| LogEvent::AdmitPeriodic { task: t.clone() });
        match self
            .planner
            .admit_periodic(t.task, t.wcet, t.period, Placement::Only(t.cpu))
        {
            Admission::Accepted { cpu, bound } => PeriodicOutcome::Accepted {
                cpu,
                from_slot: bound,
            },
            Admission::Rejected(r) => PeriodicOutcome::Rejected(r),
        }
    }

    /// Admission of a task the plan does not name (`scx_tt ctl admit`, docs/control.md): BPF
    /// task index `t.task` (after the plan's tasks and earlier admissions), `t.wcet` slots every
    /// `t.period` on managed CPU index `t.cpu` only, with the same test and the same joining
    /// frame as [`Self::admit_periodic`]. It gets a planner task id of its own (mapped to the
    /// BPF index like a firm job's); a rejection changes nothing.
    pub fn admit_task(&mut self, t: &PeriodicTask, name: &str) -> PeriodicOutcome {
        self.record(|| LogEvent::AdmitTask {
            task: t.clone(),
            name: name.into(),
        });
        let id = self.task_of.len();
        match self.planner.admit_periodic_window(
            id,
            t.wcet,
            t.period,
            t.offset,
            t.deadline.unwrap_or(t.period),
            Placement::Only(t.cpu),
        ) {
            Admission::Accepted { cpu, bound } => {
                self.adopt(id, t.task);
                PeriodicOutcome::Accepted {
                    cpu,
                    from_slot: bound,
                }
            }
            Admission::Rejected(r) => PeriodicOutcome::Rejected(r),
        }
    }

    /// Planner id `id` (just given) runs the threads of BPF task `index`, a task added at run
    /// time.
    fn adopt(&mut self, id: usize, index: usize) {
        self.task_of.push(index as u32);
        self.admitted.push(id);
        for l in &mut self.last_job {
            if l.len() <= index {
                l.resize(index + 1, usize::MAX);
            }
        }
    }

    /// Admission of an aperiodic task the plan does not name (`scx_tt ctl admit --wcet-slots C
    /// --deadline-slots D`, docs/control.md): one firm job of `job.wcet` slots for BPF task
    /// index `job.task` (after the plan's tasks and earlier admissions) on managed CPU index
    /// `job.cpu` only, due `job.deadline_slots` after `cur`, the kernel slot in progress —
    /// the same test and guarantee as [`Self::admit_firm`]. The task gets a planner id of its
    /// own; [`Self::admitted_job_done`] says when its job has had every slot, and
    /// [`Self::remove_admitted`] takes it out before. A rejection changes nothing.
    pub fn admit_aperiodic(&mut self, job: &FirmJob, cur: Slot, name: &str) -> FirmOutcome {
        self.record(|| LogEvent::AdmitAperiodic {
            job: job.clone(),
            cur,
            name: name.into(),
        });
        self.firm(job, cur, true)
    }

    /// The acceptance test alone of an aperiodic job of `wcet` slots due `deadline_slots` after
    /// `cur` on managed CPU index `cpu` (nothing changes): `Err` with the numbers when it does
    /// not fit. An [`Self::admit_aperiodic`] of the same job right after it accepts.
    pub fn aperiodic_fits(
        &mut self,
        cpu: usize,
        wcet: u64,
        deadline_slots: u64,
        cur: Slot,
    ) -> Result<(), Capacity> {
        self.planner
            .firm_fits(cpu, wcet, cur.saturating_add(deadline_slots))
    }

    /// Whether the firm job of the aperiodic task with BPF index `index`
    /// ([`Self::admit_aperiodic`]) has had all its slots decided (or was taken out): `Some(s)`
    /// with `s` the first slot decided without it ([`Self::now`]); `None` while it still needs
    /// slots, or when `index` is no admitted task.
    pub fn admitted_job_done(&self, index: usize) -> Option<u64> {
        let id = (self.nr_plan_tasks..self.task_of.len())
            .rev()
            .find(|&id| self.task_of[id] as usize == index && self.admitted.contains(&id))?;
        let pending = self.planner.has_unfinished(id);
        (!pending).then(|| self.planner.now())
    }

    /// The frame's slots CPU index `cpu`'s template leaves free (placement of `admit`).
    pub fn free_template_slots(&self, cpu: usize) -> i64 {
        self.planner.template(cpu).map_or(i64::MIN, |t| {
            self.frame as i64 - t.iter().map(|j| j.wcet as i64).sum::<i64>()
        })
    }

    /// Takes the task admitted with BPF index `index` ([`Self::admit_task`]) out (its threads
    /// are gone): it owns no slot from [`Self::now`] on; `false` when there is none.
    pub fn remove_admitted(&mut self, index: usize) -> bool {
        self.take_out(index, false)
    }

    /// [`Self::remove_admitted`] of an admission being undone in the same request (all or
    /// none of a VM's vCPUs): its planner id is given again.
    pub fn rollback_admitted(&mut self, index: usize) -> bool {
        self.take_out(index, true)
    }

    /// Runs `f` (admissions and their rollbacks: [`Self::admit_task`],
    /// [`Self::admit_aperiodic`], [`Self::rollback_admitted`], the tests they call) on this
    /// planner and then puts back everything they change, so that the answer is the planner's
    /// own and nothing is left of it (a dry run, `ctl admit` with `dry_run`): the online
    /// planner runs `f` as a copy and the original comes back, with the capacity of its job
    /// rings as it was (a rollback alone would finish the frame build early and leave the
    /// voided jobs in the rings); the planner ids and BPF index map `f` added are dropped and
    /// the replay log loses what `f` recorded. Costs one copy of the online planner's state
    /// (its intervals and live jobs, [`Self::size_items`]) under the caller's hold.
    pub fn dry_run<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let copy = self.planner.clone();
        let saved = std::mem::replace(&mut self.planner, copy);
        let (ids, admitted) = (self.task_of.len(), self.admitted.clone());
        let last_job: Vec<usize> = self.last_job.iter().map(Vec::len).collect();
        let (log, truncated) = (self.log.as_ref().map(Vec::len), self.log_truncated);
        let r = f(self);
        self.planner = saved;
        self.task_of.truncate(ids);
        self.admitted = admitted;
        for (l, n) in self.last_job.iter_mut().zip(last_job) {
            l.truncate(n);
        }
        if let (Some(l), Some(n)) = (self.log.as_mut(), log) {
            l.truncate(n);
        }
        self.log_truncated = truncated;
        r
    }

    /// What managed CPU index `cpu` holds now (`ctl capacity`): the slots per frame its
    /// template reserves (plan tasks and admitted periodic tasks), the slots of firm and
    /// aperiodic jobs still owed, and the spare capacity of its intervals from the next
    /// undecided slot [`Self::now`] to the end of its horizon (the acceptance test's count:
    /// what a firm job due at the horizon's end could still get). `None`: no such CPU.
    pub fn cpu_capacity(&mut self, cpu: usize) -> Option<CpuCapacity> {
        let now = self.planner.now();
        let c = self.planner.cpus().get(cpu)?;
        let until = c.horizon_end();
        Some(CpuCapacity {
            reserved_slots: c.template_slots,
            firm_slots: c.firm_slots,
            spare_slots: c.acceptance(now, 0, until).available.max(0) as u64,
            spare_until_slot: until,
        })
    }

    /// The planner id of the task admitted with BPF index `index` ([`Self::admit_task`]).
    fn admitted_id(&self, index: usize) -> Option<usize> {
        (self.nr_plan_tasks..self.task_of.len())
            .rev()
            .find(|&id| self.task_of[id] as usize == index && self.admitted.contains(&id))
    }

    /// The admission oracle of the adaptive supervisor (crates/tt-core/src/adaptive/supervisor.rs) on managed
    /// CPU index `cpu`: a copy of this planner without the reservations admitted for BPF
    /// indexes `without` (the adaptive tasks being supervised), which answers whether a set of
    /// periodic reservations fits by admitting each with [`Self::admit_task`]'s test (the
    /// planner's exact EDF admission next to everything guaranteed now). Nothing here changes.
    pub fn reservation_oracle(&self, cpu: usize, without: &[usize]) -> ReservationOracle {
        let mut planner = self.planner.clone();
        for &index in without {
            if let Some(id) = self.admitted_id(index) {
                planner.remove_task(id);
            }
        }
        ReservationOracle {
            planner,
            cpu,
            first_id: self.task_of.len(),
        }
    }

    fn take_out(&mut self, index: usize, forget: bool) -> bool {
        let Some(id) = self.admitted_id(index) else {
            return false;
        };
        self.admitted.retain(|&a| a != id);
        let removed = self.remove(id).0;
        // undone in the same request: the id was never used by anything else
        if forget && id + 1 == self.task_of.len() {
            self.task_of.pop();
        }
        removed
    }

    /// Removes plan task `task` (its periodic instances; firm jobs admitted for it keep their
    /// guarantee) and returns the first slot decided without it: `now()`. `false` in the first
    /// field when the planner had nothing of it.
    pub fn remove(&mut self, task: usize) -> (bool, u64) {
        self.record(|| LogEvent::Remove { task });
        let found = self.planner.remove_task(task);
        (found, self.planner.now())
    }
}

/// [`KernelPlanner::cpu_capacity`]: one managed CPU's capacity, in slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCapacity {
    /// Slots per frame the CPU's template reserves: the plan's jobs there and the periodic
    /// tasks admitted (utilisation `reserved_slots / frame`, exact).
    pub reserved_slots: u64,
    /// WCET slots of the firm and aperiodic jobs guaranteed there and not finished.
    pub firm_slots: u64,
    /// Free slots from the planner's next undecided slot to `spare_until_slot`.
    pub spare_slots: u64,
    /// The end of the CPU's horizon (exclusive).
    pub spare_until_slot: u64,
}

/// [`KernelPlanner::reservation_oracle`]: a planner copy that admits a set of reservations on
/// one CPU, each a fresh copy's question.
#[derive(Clone, Debug)]
pub struct ReservationOracle {
    planner: Planner,
    cpu: usize,
    first_id: usize,
}

impl crate::adaptive::AdmissionOracle for ReservationOracle {
    fn fits(&mut self, set: &[crate::adaptive::PeriodicReservation]) -> bool {
        let mut p = self.planner.clone();
        set.iter().enumerate().all(|(i, r)| {
            matches!(
                p.admit_periodic_window(
                    self.first_id + i,
                    r.wcet,
                    r.period,
                    0,
                    r.period,
                    Placement::Only(self.cpu)
                ),
                Admission::Accepted { .. }
            )
        })
    }
}

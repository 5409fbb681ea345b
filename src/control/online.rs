//! Planner mode of the kernel path (`scx_tt --table plan.json --planner bss|dvfs`,
//! docs/planner.md "Kernel path"): the online [`Planner`] decides every slot `lead` slots ahead
//! of the BPF slot clock, and its decisions become table entries and cpuperf targets. Pure: the
//! caller reads the clock, writes the entries to the BPF maps and serialises access (the
//! planner thread and the control socket share one `OnlinePlanner` behind a lock).
//!
//! # Slot clock and lead
//! ```text
//! kernel slot in progress: cur (None before slot 0 starts, i.e. "slot -1")
//! advance(cur):
//!     for t in planner.now() ..= cur + lead:      (before slot 0: 0 ..= lead - 1)
//!         decisions = planner.step(t, [])         (worst case: every decided job ran its slot)
//!         if t <= cur: late += 1                  (t already started: no write)
//!         else: for each CPU whose owner or cpuperf target for t differs from what the maps
//!               hold: write (cpu, t mod frame) — the perf entry first, then the owner
//! ```
//! So once on time, slot `t` is decided and written while slot `t - lead` runs, before the tick
//! that starts `t - 1` reads it (lead ≥ 2: that tick arms the guard-band event of `t`).
//!
//! # Frequencies
//! Every decision carries a frequency (`Decision::freq_ppm`; bss: always the maximum; dvfs: the
//! lowest of [`Freqs`] that still meets every deadline, the minimum in idle slots). It becomes
//! the slot's cpuperf target `⌈f · 1024⌉` ([`perf_of_ppm`]), which the BPF tick of slot `t`
//! passes to `scx_bpf_cpuperf_set`. Planner mode always loads the perf map, every entry at
//! [`PERF_ONE`] ([`initial_perf`]), so under bss nothing is ever written to it and a swap to
//! dvfs ([`OnlinePlanner::set_policy`]) needs no reload. Perf before owner: a write that races
//! the tick of its own slot (a late slot) then never runs the new owner at the old target; a
//! write in time (the normal case) is read by that tick in full whatever the order.
//!
//! # Policy swaps
//! `set_policy` changes the policy from the planner's next undecided slot `now()` on; the slots
//! already decided keep their entries. Both kernel-path policies charge every decided slot to
//! the spare capacity (Algorithm 1), and dvfs only ever spends slack the acceptance test did not
//! promise to anyone (docs/planner.md, policy.rs property 1), so every guarantee given before a
//! swap holds after it.
//!
//! # Task ids
//! Planner task ids below the number of plan tasks are plan task indices; each admitted firm
//! job gets a fresh id, mapped back to the plan task whose threads run it (`task_of`).
//!
//! # Periodic admissions and removals
//! A plan task declared `"start": "admitted"` is in no template until
//! [`OnlinePlanner::admit_periodic`] adds its instances (planner task id = its plan index) to
//! its CPU's template: tested on that CPU alone (EDF over the template plus its instances, like
//! `CpuState::add_periodic`), so an accepted task runs on the CPU its threads are pinned to.
//! It joins from the first frame the planner has not built yet (`from_slot`, a frame start;
//! docs/planner.md "Frames and horizon"). [`OnlinePlanner::remove`] drops a task from the
//! template and finishes its live jobs: the slots from `now()` on are decided without it (the
//! ones already decided and written keep it), and its capacity is free for admissions at once.

use crate::energy::model::PowerModel;
use crate::energy::perf::cpuperf_target;
use crate::plan::{Class, Plan};
use crate::planner::cpu::{Capacity, UNIT};
use crate::planner::offline::{edf, Job};
use crate::planner::policy::{Freqs, FreqsError, Policy, Run};
use crate::planner::runtime::{Admission, Planner, PlannerConfig, Rejection, StepError};
use crate::planner::sim::planner_inputs;
use crate::sched::config::{NO_TASK, PERF_ONE};
use thiserror::Error;

/// `--planner-lead-slots`: allowed range.
pub const LEAD_SLOTS: std::ops::RangeInclusive<u64> = 1..=8;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PlannerModeError {
    #[error(
        "--planner {0}: the kernel path supports bss and dvfs only (dpm would need deferred \
         slot ticks and an \"idle, run nothing\" table entry; not implemented)"
    )]
    Policy(String),
    #[error(
        "policy = {0:?}: the kernel path runs bss or dvfs only (dpm would need deferred slot \
         ticks and an \"idle, run nothing\" table entry; not implemented)"
    )]
    SetPolicy(String),
    #[error("--planner-lead-slots {0}: must be in 1..=8")]
    LeadRange(u64),
    #[error(
        "--planner-lead-slots {lead}: must be at most the frame of {frame} slots minus 2 (a \
         table entry serves every frame: the entry of slot s + L must not be the one of slot s \
         or s - 1, which may still be running or being accounted)"
    )]
    LeadFrame { lead: u64, frame: u64 },
    #[error("the initial table has {got} entries, expected {expected} (managed CPUs × frame)")]
    Table { got: usize, expected: usize },
}

/// A validated firm admission request: `wcet` slots for plan task `task` (a tt task) on
/// managed CPU index `cpu`, due `deadline_slots` after the current slot: before absolute slot
/// `deadline_slot`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirmJob {
    pub task: usize,
    pub cpu: usize,
    pub wcet: u64,
    pub deadline_slots: u64,
    pub deadline_slot: u64,
}

impl FirmJob {
    /// The same job with its deadline counted from slot `cur`: the caller reads the clock again
    /// once it holds the planner, so that the planner thread cannot step between the clock
    /// reading and the admission.
    pub fn due_from(&self, cur: u64) -> FirmJob {
        FirmJob {
            deadline_slot: cur + self.deadline_slots,
            ..self.clone()
        }
    }
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodicTask {
    pub task: usize,
    pub cpu: usize,
    pub period: u64,
    pub wcet: u64,
}

/// The planner's answer to a [`PeriodicTask`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeriodicOutcome {
    /// In the template of managed CPU index `cpu`; it runs from `from_slot` on (the first slot
    /// of the first frame not yet built).
    Accepted { cpu: usize, from_slot: u64 },
    /// The template plus its instances misses a deadline under EDF on its CPU (or the request
    /// is invalid); nothing changed.
    Rejected(Rejection),
}

/// The entries of one (managed CPU index, frame slot) to write: the cpuperf target (first)
/// and the owner, each only when it changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryWrite {
    pub cpu: usize,
    pub frame_slot: u64,
    /// New owner: a plan task index or `NO_TASK`.
    pub task: Option<u32>,
    /// New cpuperf target, 1..=`PERF_ONE`.
    pub perf: Option<u32>,
}

/// The cpuperf target of normalised frequency `ppm` (parts per million of the maximum):
/// `⌈ppm · 1024 / 10⁶⌉` in 1..=1024 (`energy::perf::cpuperf_target`: rounded up, so a job
/// never runs slower than planned).
pub fn perf_of_ppm(ppm: u32) -> u32 {
    cpuperf_target(f64::from(ppm) / UNIT as f64)
}

/// What the perf map holds at load in planner mode: `entries` targets at `PERF_ONE`.
pub fn initial_perf(entries: usize) -> Vec<u32> {
    vec![PERF_ONE; entries]
}

/// The frequencies dvfs chooses from: the P-states of the power model's cluster holding
/// managed CPU `cpu` (the first cluster if none does), normalised to its highest.
pub fn freqs_of_model(model: &PowerModel, cpu: u32) -> Result<Freqs, FreqsError> {
    let cluster = model
        .clusters
        .iter()
        .find(|c| (c.first_cpu..c.first_cpu + c.cpu_count).contains(&cpu))
        .or(model.clusters.first());
    let Some(cluster) = cluster else {
        return Err(FreqsError::Empty);
    };
    let max = f64::from(cluster.max_mhz());
    let normalised: Vec<f64> = cluster
        .pstates
        .iter()
        .map(|p| f64::from(p.mhz) / max)
        .collect();
    Freqs::new(&normalised)
}

/// What one [`OnlinePlanner::advance`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Advance {
    /// Slots stepped.
    pub stepped: u64,
    /// Of which already started (decided too late; not written).
    pub late: u64,
    /// Entries to write, in slot order.
    pub writes: Vec<EntryWrite>,
}

pub struct OnlinePlanner {
    planner: Planner,
    lead: u64,
    frame: u64,
    nr_cpus: usize,
    /// planner task id -> plan task index.
    task_of: Vec<u32>,
    /// What the table holds now (layout of `SchedConfig::table`).
    shadow: Vec<u32>,
    /// What the perf map holds now (same layout).
    perf: Vec<u32>,
    late_total: u64,
}

impl OnlinePlanner {
    /// The planner of `plan` under `policy`, deciding `lead` slots ahead; `table` is what the
    /// BPF table holds at start (`SchedConfig::from_plan(plan, ..).table`), the perf map holds
    /// [`initial_perf`]; dvfs picks its frequencies from `freqs` (also after a swap to it).
    pub fn new(
        plan: &Plan,
        policy: Policy,
        lead: u64,
        table: Vec<u32>,
        freqs: Freqs,
    ) -> Result<Self, PlannerModeError> {
        check(plan, policy, lead)?;
        let expected = plan.managed.len() * plan.frame_slots as usize;
        if table.len() != expected {
            return Err(PlannerModeError::Table {
                got: table.len(),
                expected,
            });
        }
        let planner = Planner::new(
            &planner_inputs(plan),
            plan.frame_slots,
            PlannerConfig {
                policy,
                freqs,
                slot_ns: plan.slot_us * 1000,
            },
        );
        Ok(OnlinePlanner {
            planner,
            lead,
            frame: plan.frame_slots,
            nr_cpus: plan.managed.len(),
            task_of: (0..plan.tasks.len() as u32).collect(),
            perf: initial_perf(table.len()),
            shadow: table,
            late_total: 0,
        })
    }

    pub fn lead(&self) -> u64 {
        self.lead
    }

    /// The policy of the slots decided from now on.
    pub fn policy(&self) -> Policy {
        self.planner.config().policy
    }

    /// Decides the slots from `now()` on under `policy` (bss or dvfs) and returns that first
    /// slot; the slots already decided keep their entries. A refused policy changes nothing.
    pub fn set_policy(&mut self, policy: Policy) -> Result<u64, PlannerModeError> {
        if !KERNEL_POLICIES.contains(&policy) {
            return Err(PlannerModeError::SetPolicy(policy.name().into()));
        }
        self.planner.set_policy(policy);
        Ok(self.planner.now())
    }

    /// The next slot the planner decides; an admission now can affect slots from here on.
    pub fn now(&self) -> u64 {
        self.planner.now()
    }

    /// Slots decided after they had started, since the start.
    pub fn late_slots(&self) -> u64 {
        self.late_total
    }

    /// Decides every slot up to `cur + lead` (`cur`: the kernel slot in progress, `None` before
    /// slot 0), see the module doc.
    pub fn advance(&mut self, cur: Option<u64>) -> Result<Advance, StepError> {
        let last = match cur {
            Some(c) => c + self.lead,
            None => self.lead - 1,
        };
        let mut out = Advance::default();
        while self.planner.now() <= last {
            let t = self.planner.now();
            let decisions = self.planner.step(t, &[])?;
            out.stepped += 1;
            if cur.is_some_and(|c| t <= c) {
                out.late += 1;
                continue;
            }
            let fs = t % self.frame;
            for (cpu, d) in decisions.iter().enumerate().take(self.nr_cpus) {
                let task = match d.run {
                    Run::Job { task, .. } | Run::Soft { task } => {
                        self.task_of.get(task).copied().unwrap_or(NO_TASK)
                    }
                    Run::Be | Run::Idle => NO_TASK,
                };
                let i = cpu * self.frame as usize + fs as usize;
                let w = EntryWrite {
                    cpu,
                    frame_slot: fs,
                    task: update(&mut self.shadow[i], task),
                    perf: update(&mut self.perf[i], perf_of_ppm(d.freq_ppm)),
                };
                if w.task.is_some() || w.perf.is_some() {
                    out.writes.push(w);
                }
            }
        }
        self.late_total += out.late;
        Ok(out)
    }

    /// Admission test and guarantee of `job` on its own CPU only (a tt task's threads run on no
    /// other CPU), at the planner's clock: the slots up to `now() - 1` are decided (written).
    pub fn admit_firm(&mut self, job: &FirmJob) -> FirmOutcome {
        let now = self.planner.now();
        let Some(state) = self.planner.cpus().get(job.cpu) else {
            return FirmOutcome::Rejected(Capacity {
                needed: job.wcet,
                available: 0,
                deadline: job.deadline_slot,
            });
        };
        // The negotiation of `Planner::admit_firm` would try other CPUs after a rejection:
        // test the task's CPU alone first, so that a call to it is accepted there.
        let cap = state.acceptance(now, job.wcet, job.deadline_slot);
        if cap.available < job.wcet as i64 {
            return FirmOutcome::Rejected(cap);
        }
        let id = self.task_of.len();
        self.task_of.push(job.task as u32);
        match self
            .planner
            .admit_firm(id, job.wcet, job.deadline_slot, Some(job.cpu))
        {
            Admission::Accepted { cpu, bound } if cpu == job.cpu => FirmOutcome::Accepted {
                cpu,
                deadline_slot: bound,
                first_slot: now,
            },
            // not reached (same test on the same state); undo rather than run it elsewhere
            _ => {
                self.planner.remove_task(id);
                FirmOutcome::Rejected(cap)
            }
        }
    }

    /// Admission test and template insertion of periodic task `t` on its own CPU only (see the
    /// module doc). A rejection changes nothing.
    pub fn admit_periodic(&mut self, t: &PeriodicTask) -> PeriodicOutcome {
        let Some(state) = self.planner.cpus().get(t.cpu) else {
            return PeriodicOutcome::Rejected(Rejection::Invalid(format!(
                "managed CPU index {} does not exist",
                t.cpu
            )));
        };
        if t.period > 0 && self.frame.is_multiple_of(t.period) && (1..=t.period).contains(&t.wcet) {
            // `Planner::admit_periodic` would try the other CPUs after a miss on this one
            let mut jobs = state.template.clone();
            jobs.extend((0..self.frame / t.period).map(|k| Job {
                task: t.task,
                instance: k as u32,
                release: k * t.period,
                deadline: (k + 1) * t.period,
                wcet: t.wcet,
            }));
            if let Err(miss) = edf(&jobs, self.frame) {
                return PeriodicOutcome::Rejected(Rejection::Infeasible { cpu: t.cpu, miss });
            }
        }
        match self
            .planner
            .admit_periodic(t.task, t.wcet, t.period, Some(t.cpu))
        {
            Admission::Accepted { cpu, bound } if cpu == t.cpu => PeriodicOutcome::Accepted {
                cpu,
                from_slot: bound,
            },
            // not reached (the same test on the same template); undo rather than run it
            // on a CPU its threads are not on
            Admission::Accepted { cpu, .. } => {
                self.planner.remove_task(t.task);
                PeriodicOutcome::Rejected(Rejection::Invalid(format!(
                    "the planner placed it on CPU index {cpu}, not its own {}",
                    t.cpu
                )))
            }
            Admission::Rejected(r) => PeriodicOutcome::Rejected(r),
        }
    }

    /// Removes plan task `task` (its periodic instances; firm jobs admitted for it keep their
    /// guarantee) and returns the first slot decided without it: `now()`. `false` in the first
    /// field when the planner had nothing of it.
    pub fn remove(&mut self, task: usize) -> (bool, u64) {
        let found = self.planner.remove_task(task);
        (found, self.planner.now())
    }
}

/// Sets `held` to `new`; `Some(new)` when that changed it (an entry to write).
fn update(held: &mut u32, new: u32) -> Option<u32> {
    (*held != new).then(|| {
        *held = new;
        new
    })
}

/// The policies of the kernel path.
pub const KERNEL_POLICIES: [Policy; 2] = [Policy::Bss, Policy::Dvfs];

/// Whether `plan` can run in planner mode under `policy`, `lead` slots ahead.
pub fn check(plan: &Plan, policy: Policy, lead: u64) -> Result<(), PlannerModeError> {
    if !KERNEL_POLICIES.contains(&policy) {
        return Err(PlannerModeError::Policy(policy.name().into()));
    }
    if !LEAD_SLOTS.contains(&lead) {
        return Err(PlannerModeError::LeadRange(lead));
    }
    if lead + 2 > plan.frame_slots {
        return Err(PlannerModeError::LeadFrame {
            lead,
            frame: plan.frame_slots,
        });
    }
    Ok(())
}

/// Whether `plan` task `task` can take firm jobs: a tt task (it has its own managed CPU).
pub fn firm_cpu(plan: &Plan, task: usize) -> Option<usize> {
    let t = plan.tasks.get(task)?;
    if t.class != Class::Tt {
        return None;
    }
    let cpu = t.cpu?;
    plan.managed.iter().position(|&c| c == cpu)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod periodic_tests;

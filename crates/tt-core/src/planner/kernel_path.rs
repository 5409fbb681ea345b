//! The planner's kernel-path adapter (`scx_tt --table plan.json --planner bss|dvfs|dpm|dpm+dvfs`,
//! docs/planner.md "Kernel path"): the online [`Planner`] decides every slot `lead` slots ahead
//! of the BPF slot clock, and its decisions become table entries and cpuperf targets. Pure: the
//! caller reads the clock, writes the entries to the BPF maps and serialises access (the
//! planner thread and the control socket share one [`KernelPlanner`] behind a lock). Inputs
//! are plain values (`CpuInput`s, the frame, the initial table), not a plan.
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
//! dvfs ([`KernelPlanner::set_policy`]) needs no reload. Perf before owner: a write that races
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
//! # Placement
//! A tt task's threads run on its own managed CPU only, so every admission here is
//! [`Placement::Only`] that CPU: the planner's own test decides, nothing is re-run here.
//!
//! # Periodic admissions and removals
//! A plan task declared `"start": "admitted"` is in no template until
//! [`KernelPlanner::admit_periodic`] adds its instances (planner task id = its plan index) to
//! its CPU's template: tested on that CPU alone (EDF over the template plus its instances,
//! `CpuState::add_periodic`), so an accepted task runs on the CPU its threads are pinned to.
//! It joins from the first frame whose build the planner has not started on that CPU (`k+2` or
//! `k+3` for the planner's frame `k`, by the CPU's build offset; `from_slot`, that frame's start;
//! docs/planner.md "Frames and horizon"). [`KernelPlanner::remove`] drops a task from the
//! template and finishes its live jobs: the slots from `now()` on are decided without it (the
//! ones already decided and written keep it), and its capacity is free for admissions at once.

use crate::abi::{DPM_IDLE, NO_TASK, PERF_ONE};
use crate::energy::perf::cpuperf_target;
use crate::planner::cpu::{Capacity, UNIT};
use crate::planner::offline::Slot;
use crate::planner::policy::{Freqs, Policy, Run};
use crate::planner::runtime::{
    Admission, CpuInput, Observation, Placement, Planner, PlannerConfig, Rejection, StepError,
};
use crate::planner::JobEvent;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use thiserror::Error;

/// Table-entry flag: the slot is the first one of a job of its owner (the BPF side clears the
/// owner's "job done" state there; docs/plan-format.md "completion").
pub const JOB_START: u32 = crate::abi::ENTRY_JOB_START;

/// The plan task of a table entry (flags stripped), `None` for `NO_TASK`.
pub fn entry_task(entry: u32) -> Option<u32> {
    crate::abi::entry_task(entry)
}

/// What BPF published for one slot of one managed CPU (src/bpf/intf.h `tt_slot_obs`), or that
/// nothing usable came (torn, overwritten, or never written in time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SlotObs {
    Seen {
        /// The owner the table held when the slot ran (plan task), `None`: free.
        owner: Option<u32>,
        /// The owner's job completed in the slot.
        done: bool,
        /// ns the owner ran in the slot.
        owner_ns: u64,
        /// ns of the slot the owner had a thread running or waiting to run (not done).
        avail_ns: u64,
    },
    Missing,
}

/// A slot counts whole when the owner was available for all of it but this much
/// (`max(slot / 50, 100 µs)`, capped at the slot): the switch gaps and tick lateness at its
/// edges are no reason to give a job a slice of another slot.
pub fn full_tolerance_ns(slot_ns: u64) -> u64 {
    (slot_ns / 50).max(100_000).min(slot_ns)
}

/// The counters of the closed loop (summary JSON `planner_observations`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopCounts {
    /// Observations applied.
    pub observed: u64,
    /// Slots reconciled with the worst case: no usable observation (torn, overwritten, late)
    /// or one whose owner was not the decided one (a late slot, a switch).
    pub worst_case: u64,
    /// Of which: the observed owner was not the decided one.
    pub owner_mismatch: u64,
    /// Decided slots reconciled with the worst case because no observation of them ever came
    /// (a tick that published nothing, an entry overwritten before it was read, a restart).
    pub unobserved: u64,
    /// Jobs observed completed early.
    pub completed: u64,
    /// Jobs that reached their WCET unfinished (cut off).
    pub overruns: u64,
    /// Jobs that still had work at their deadline.
    pub misses: u64,
    /// Jobs that lost work to the platform (a slot their owner used only in part) that no free
    /// slot before their deadline could give back (`JobEvent::Lost`), and that work in units
    /// (10⁻⁶ slot at full speed). Spare capacity other guarantees hold is never taken for it.
    #[serde(default)]
    pub lost: u64,
    #[serde(default)]
    pub lost_units: u64,
    /// Decided slots voided by a completion, and of those rewritten before they started.
    pub voided: u64,
    pub rewritten: u64,
}

/// One call on the planner, in order: the input of a replay (`scx_tt simulate --replay`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum LogEvent {
    Advance {
        cur: Option<u64>,
        last: u64,
    },
    Observe {
        cpu: usize,
        slot: u64,
        cur: Option<u64>,
        obs: SlotObs,
    },
    AdmitFirm {
        job: FirmJob,
        cur: u64,
    },
    AdmitPeriodic {
        task: PeriodicTask,
    },
    /// A task the plan does not name (`ctl admit`): `task.task` is its BPF task index,
    /// `name` its name (a replay compares the kernel's trace by name).
    AdmitTask {
        task: PeriodicTask,
        #[serde(default)]
        name: String,
    },
    /// An aperiodic task the plan does not name (`ctl admit --wcet-slots C --deadline-slots
    /// D`): `job.task` is its BPF task index.
    AdmitAperiodic {
        job: FirmJob,
        cur: u64,
        name: String,
    },
    Remove {
        task: usize,
    },
    SetPolicy {
        policy: String,
    },
}

/// Events kept at most in a run's planner log (about 100 bytes each in memory).
pub const LOG_CAP: usize = 4_000_000;

/// First line of a planner log file.
pub const LOG_FORMAT: &str = "scx_tt planner log v1";

/// The first line of a planner log (`scx_tt --planner-log`, docs/planner.md "Conformance"):
/// how to build the planner the events were made on (with the plan).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogHeader {
    pub format: String,
    /// The policy when logging started.
    pub policy: String,
    pub lead: u64,
    pub frame_slots: u64,
    pub slot_ns: u64,
    pub freqs_ppm: Vec<u32>,
    pub closed_loop: bool,
    /// The log stopped at [`LOG_CAP`] events.
    pub truncated: bool,
}

/// `--planner-lead-slots`: allowed range.
pub const LEAD_SLOTS: std::ops::RangeInclusive<u64> = 1..=8;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PlannerModeError {
    #[error("--planner {0}: the kernel path runs bss, dvfs, dpm or dpm+dvfs")]
    Policy(String),
    #[error("policy = {0:?}: the kernel path runs bss, dvfs, dpm or dpm+dvfs")]
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

/// How the kernel path runs the planner.
#[derive(Clone, Debug)]
pub struct KernelPathConfig {
    pub policy: Policy,
    /// Slots decided ahead of the slot in progress ([`LEAD_SLOTS`], at most the frame − 2).
    pub lead: u64,
    pub frame_slots: Slot,
    pub slot_ns: u64,
    /// The frequencies dvfs chooses from.
    pub freqs: Freqs,
}

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

/// The entries of one (managed CPU index, frame slot) to write: the cpuperf target (first)
/// and the owner, each only when it changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryWrite {
    pub cpu: usize,
    /// The slot decided (`frame_slot` = `slot % frame`): a write that lands once this slot's
    /// tick has fired is late (BPF keeps the tick's owner for the slot; planner_loop.rs).
    pub slot: u64,
    pub frame_slot: u64,
    /// New owner: a plan task index or `NO_TASK`.
    pub task: Option<u32>,
    /// New cpuperf target, 1..=`PERF_ONE`.
    pub perf: Option<u32>,
    /// New frequency in ppm of the maximum (what `perf` rounds up), for a backend that sets
    /// exact frequencies (cpufreq's `scaling_setspeed`); every entry starts at [`UNIT`].
    pub ppm: Option<u32>,
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

/// A new end of a managed CPU's DPM idle period for BPF (`dpm_until`, src/bpf/tt_sched.bpf.c
/// K), written after the entries of the same [`Advance`]; `kick`: it was lowered (an idle
/// period cut short), so the CPU must be kicked after the write (`dpm_kick`) for its deferred
/// tick to be re-armed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DpmWrite {
    pub cpu: usize,
    /// The slot whose decision published it: the CPU is idle from here to `until` (a kick:
    /// `from == until`, the period is over).
    pub from: u64,
    pub until: u64,
    pub kick: bool,
}

/// What one [`KernelPlanner::advance`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Advance {
    /// Slots stepped.
    pub stepped: u64,
    /// Of which already started (decided too late; not written).
    pub late: u64,
    /// Entries to write, in slot order.
    pub writes: Vec<EntryWrite>,
    /// Then the DPM idle period ends to publish (dpm and dpm+dvfs only), in order.
    pub dpm: Vec<DpmWrite>,
}

/// One CPU's decided slots awaiting their observation: (slot, the entry decided).
type Decided = VecDeque<(u64, Option<u32>)>;

pub struct KernelPlanner {
    planner: Planner,
    lead: u64,
    frame: u64,
    nr_cpus: usize,
    /// planner task id -> plan task index (BPF task index).
    task_of: Vec<u32>,
    /// The plan's tasks: planner ids below this are plan task indices.
    nr_plan_tasks: usize,
    /// Planner ids of the tasks [`Self::admit_task`] added.
    admitted: Vec<usize>,
    /// What the table holds now (layout of `SchedConfig::table`).
    shadow: Vec<u32>,
    /// What the perf map holds now (same layout).
    perf: Vec<u32>,
    /// The frequency of each entry in ppm (same layout; `perf` rounded it up).
    ppm: Vec<u32>,
    /// Per CPU: the end of the DPM idle period published to BPF (`dpm_until`; 0: none yet).
    dpm_until: Vec<u64>,
    late_total: u64,
    slot_ns: u64,
    /// Closed loop: per CPU, the decided slots whose observation is pending, with the entry
    /// the planner decided for each (`None`: the slot was late, its entry not written).
    decided: Option<Vec<Decided>>,
    /// Per CPU and plan task: the planner job number of the last slot decided for it.
    last_job: Vec<Vec<usize>>,
    counts: LoopCounts,
    log: Option<Vec<LogEvent>>,
    log_truncated: bool,
    log_header: Option<LogHeader>,
}

impl KernelPlanner {
    /// The planner of `cpus` (one input per managed CPU, plan order; planner task ids below
    /// `nr_tasks` are plan task indices) under `cfg`; `table` is what the BPF table holds at
    /// start (`SchedConfig::table`: managed CPUs × frame entries), the perf map holds
    /// [`initial_perf`]; dvfs picks its frequencies from `cfg.freqs` (also after a swap to it).
    pub fn new(
        cpus: &[CpuInput],
        nr_tasks: usize,
        cfg: KernelPathConfig,
        table: Vec<u32>,
    ) -> Result<Self, PlannerModeError> {
        check(cfg.policy, cfg.lead, cfg.frame_slots)?;
        let expected = cpus.len() * cfg.frame_slots as usize;
        if table.len() != expected {
            return Err(PlannerModeError::Table {
                got: table.len(),
                expected,
            });
        }
        let planner = Planner::new(
            cpus,
            cfg.frame_slots,
            PlannerConfig {
                policy: cfg.policy,
                freqs: cfg.freqs,
                slot_ns: cfg.slot_ns,
            },
        );
        Ok(KernelPlanner {
            planner,
            lead: cfg.lead,
            frame: cfg.frame_slots,
            nr_cpus: cpus.len(),
            task_of: (0..nr_tasks as u32).collect(),
            nr_plan_tasks: nr_tasks,
            admitted: Vec::new(),
            perf: initial_perf(table.len()),
            ppm: vec![UNIT as u32; table.len()],
            dpm_until: vec![0; cpus.len()],
            shadow: table,
            late_total: 0,
            slot_ns: cfg.slot_ns,
            decided: None,
            last_job: vec![vec![usize::MAX; nr_tasks]; cpus.len()],
            counts: LoopCounts::default(),
            log: None,
            log_truncated: false,
            log_header: None,
        })
    }

    /// Closes the loop: every decided slot waits for its observation ([`Self::observe`]) instead
    /// of being assumed to have run whole (docs/planner.md "Observations"). Up to a frame plus
    /// 64 slots may wait per CPU; older ones are reconciled with the worst case.
    pub fn close_loop(&mut self) {
        self.planner
            .defer_observations(self.frame.saturating_add(64) as usize);
        self.decided = Some(vec![VecDeque::new(); self.nr_cpus]);
    }

    pub fn loop_closed(&self) -> bool {
        self.decided.is_some()
    }

    /// Records every call from now on for a replay (at most [`LOG_CAP`] events); the header
    /// describes the planner as it is now.
    pub fn enable_log(&mut self) {
        self.log = Some(Vec::new());
        self.log_header = Some(LogHeader {
            format: LOG_FORMAT.into(),
            policy: self.policy().name().into(),
            lead: self.lead,
            frame_slots: self.frame,
            slot_ns: self.slot_ns,
            freqs_ppm: self.planner.config().freqs.ppm().to_vec(),
            closed_loop: self.loop_closed(),
            truncated: false,
        });
    }

    /// The header of the log and its events (empty when logging was never enabled).
    pub fn take_full_log(&mut self) -> Option<(LogHeader, Vec<LogEvent>)> {
        let mut h = self.log_header.clone()?;
        let (events, truncated) = self.take_log();
        h.truncated = truncated;
        Some((h, events))
    }

    /// The recorded calls, and whether the cap cut them short.
    pub fn take_log(&mut self) -> (Vec<LogEvent>, bool) {
        (
            self.log.as_mut().map(std::mem::take).unwrap_or_default(),
            self.log_truncated,
        )
    }

    fn record(&mut self, e: impl FnOnce() -> LogEvent) {
        if let Some(log) = &mut self.log {
            if log.len() < LOG_CAP {
                log.push(e());
            } else {
                self.log_truncated = true;
            }
        }
    }

    pub fn counts(&self) -> LoopCounts {
        LoopCounts {
            unobserved: self.planner.unobserved(),
            ..self.counts
        }
    }

    /// Applies what slot `slot` did on managed CPU index `cpu` (`cur`: the kernel slot in
    /// progress) and returns the entries to rewrite: slots decided for a job this observation
    /// completed that have not started yet go to best-effort work or idle (`NO_TASK`).
    /// Ignored (counted) when the loop is open, the CPU is unknown, or the slot was already
    /// reconciled.
    pub fn observe(
        &mut self,
        cpu: usize,
        slot: u64,
        obs: SlotObs,
        cur: Option<u64>,
    ) -> Vec<EntryWrite> {
        self.record(|| LogEvent::Observe {
            cpu,
            slot,
            cur,
            obs,
        });
        let mut out = Vec::new();
        let Some(decided) = self.decided.as_mut().and_then(|d| d.get_mut(cpu)) else {
            return out;
        };
        while decided.front().is_some_and(|&(s, _)| s < slot) {
            decided.pop_front();
        }
        let Some(&(s, entry)) = decided.front() else {
            return out;
        };
        if s != slot {
            return out;
        }
        decided.pop_front();
        let full = Observation {
            ran_ns: self.slot_ns,
            done: false,
        };
        let o = match obs {
            SlotObs::Seen { owner, .. } if entry.map(entry_task) != Some(owner) => {
                self.counts.owner_mismatch += 1;
                None
            }
            SlotObs::Seen {
                done,
                owner_ns,
                avail_ns,
                ..
            } => Some(if done {
                Observation {
                    ran_ns: owner_ns.min(self.slot_ns),
                    done: true,
                }
            } else if avail_ns.saturating_add(full_tolerance_ns(self.slot_ns)) >= self.slot_ns {
                full
            } else {
                Observation {
                    ran_ns: avail_ns,
                    done: false,
                }
            }),
            SlotObs::Missing => None,
        };
        match o {
            Some(_) => self.counts.observed += 1,
            None => self.counts.worst_case += 1,
        }
        let before = self.planner.events().len();
        let voided = match self.planner.observe(cpu, slot, o.unwrap_or(full)) {
            Ok(v) => v.to_vec(),
            Err(_) => return out,
        };
        for (_, e) in &self.planner.events()[before..] {
            match e {
                JobEvent::Completed { .. } => self.counts.completed += 1,
                JobEvent::Overrun { .. } => self.counts.overruns += 1,
                JobEvent::Miss { .. } => self.counts.misses += 1,
                JobEvent::Lost { units, .. } => {
                    self.counts.lost += 1;
                    self.counts.lost_units += units;
                }
                _ => {}
            }
        }
        for v in voided {
            self.counts.voided += 1;
            if cur.is_some_and(|c| v <= c) {
                continue;
            }
            let fs = v % self.frame;
            let i = cpu * self.frame as usize + fs as usize;
            // the entry serves every frame: only a slot still holding this job's decision
            if let Some(task) = update(&mut self.shadow[i], NO_TASK) {
                self.counts.rewritten += 1;
                // the slot will run free: that is what its observation must say
                if let Some(d) = self.decided.as_mut().and_then(|d| d.get_mut(cpu)) {
                    if let Some(e) = d.iter_mut().find(|e| e.0 == v) {
                        e.1 = Some(NO_TASK);
                    }
                }
                out.push(EntryWrite {
                    cpu,
                    slot: v,
                    frame_slot: fs,
                    task: Some(task),
                    perf: None,
                    ppm: None,
                });
            }
        }
        out
    }

    pub fn lead(&self) -> u64 {
        self.lead
    }

    /// Managed CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// What the table map holds (as far as this planner wrote it): managed CPUs × frame.
    pub fn table(&self) -> &[u32] {
        &self.shadow
    }

    /// The policy of the slots decided from now on.
    pub fn policy(&self) -> Policy {
        self.planner.config().policy
    }

    /// Decides the slots from `now()` on under `policy` (bss, dvfs, dpm or dpm+dvfs) and returns that first
    /// slot; the slots already decided keep their entries. A refused policy changes nothing.
    pub fn set_policy(&mut self, policy: Policy) -> Result<u64, PlannerModeError> {
        if !KERNEL_POLICIES.contains(&policy) {
            return Err(PlannerModeError::SetPolicy(policy.name().into()));
        }
        self.record(|| LogEvent::SetPolicy {
            policy: policy.name().into(),
        });
        self.planner.set_policy(policy);
        Ok(self.planner.now())
    }

    /// The frame, slots.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Capacity intervals, live jobs and template jobs over every CPU: what an admission or a
    /// removal walks, moves or rebuilds (its lock hold grows with this; `planner::shared`).
    pub fn size_items(&self) -> u64 {
        self.planner
            .cpus()
            .iter()
            .map(|c| (c.ivs.len() + c.jobs.len() + c.template.len()) as u64)
            .sum()
    }

    /// The next slot the planner decides; an admission now can affect slots from here on.
    pub fn now(&self) -> u64 {
        self.planner.now()
    }

    /// Slots decided after they had started, since the start.
    pub fn late_slots(&self) -> u64 {
        self.late_total
    }

    /// Everything the planner holds, as text (tests compare it before and after a request).
    #[cfg(test)]
    pub(crate) fn fingerprint(&self) -> String {
        format!(
            "{:?} lead {} frame {} cpus {} tasks {:?} table {:?} perf {:?} late {}",
            self.planner,
            self.lead,
            self.frame,
            self.nr_cpus,
            self.task_of,
            self.shadow,
            self.perf,
            self.late_total
        )
    }

    /// Decides every slot up to `cur + lead` (`cur`: the kernel slot in progress, `None` before
    /// slot 0), see the module doc.
    pub fn advance(&mut self, cur: Option<u64>) -> Result<Advance, StepError> {
        let last = match cur {
            Some(c) => c + self.lead,
            None => self.lead - 1,
        };
        self.advance_through(cur, last)
    }

    /// Decides every slot up to `last` (`cur`: the kernel slot in progress, `None` before slot
    /// 0), as [`Self::advance`] does up to `cur + lead`. Further than the lead is allowed up to
    /// `cur + frame - 2` (a table entry serves every frame); deciding a slot earlier does not
    /// change its decision (the kernel path steps with the worst-case observation), it only
    /// moves `now()`, the first slot an admission can use, later (docs/planner.md, "Admissions
    /// and slot decisions").
    pub fn advance_through(&mut self, cur: Option<u64>, last: u64) -> Result<Advance, StepError> {
        self.record(|| LogEvent::Advance { cur, last });
        let last = last.min(cur.unwrap_or(0) + self.frame.saturating_sub(2));
        let mut out = Advance::default();
        while self.planner.now() <= last {
            let t = self.planner.now();
            let decisions = self.planner.step(t, &[])?;
            out.stepped += 1;
            let is_late = cur.is_some_and(|c| t <= c);
            let fs = t % self.frame;
            for (cpu, d) in decisions.iter().enumerate().take(self.nr_cpus) {
                let task = match d.run {
                    Run::Job { task, job, .. } => {
                        let plan = self.task_of.get(task).copied().unwrap_or(NO_TASK);
                        match self
                            .last_job
                            .get_mut(cpu)
                            .and_then(|l| l.get_mut(plan as usize))
                        {
                            Some(last) if *last != job => {
                                *last = job;
                                plan | JOB_START
                            }
                            _ => plan,
                        }
                    }
                    Run::Soft { task } => self.task_of.get(task).copied().unwrap_or(NO_TASK),
                    // a DPM idle period: run nothing, not even be work (the core sleeps)
                    Run::Idle if d.idle_until.is_some() => DPM_IDLE,
                    Run::Be | Run::Idle => NO_TASK,
                };
                if let Some(dq) = self.decided.as_mut().and_then(|d| d.get_mut(cpu)) {
                    dq.push_back((t, (!is_late).then_some(task)));
                }
                if is_late {
                    continue;
                }
                let i = cpu * self.frame as usize + fs as usize;
                let w = EntryWrite {
                    cpu,
                    slot: t,
                    frame_slot: fs,
                    task: update(&mut self.shadow[i], task),
                    perf: update(&mut self.perf[i], perf_of_ppm(d.freq_ppm)),
                    ppm: update(&mut self.ppm[i], d.freq_ppm),
                };
                if w.task.is_some() || w.perf.is_some() || w.ppm.is_some() {
                    out.writes.push(w);
                }
                if let Some(until) = d.idle_until {
                    let cap = cur.unwrap_or(0) + self.frame.saturating_sub(2);
                    publish_dpm(
                        (&mut self.shadow, &mut self.dpm_until, self.frame),
                        (cpu, t, until, cap),
                        &mut out,
                    );
                }
            }
            // a published idle period that no longer covers t (cut short: an admission needed
            // the CPU) ends at t; BPF learns it from the lowered end and the kick
            for (cpu, d) in decisions.iter().enumerate().take(self.nr_cpus) {
                if d.idle_until.is_none() && self.dpm_until[cpu] > t {
                    self.dpm_until[cpu] = t;
                    out.dpm.push(DpmWrite {
                        cpu,
                        from: t,
                        until: t,
                        kick: true,
                    });
                }
            }
            if is_late {
                out.late += 1;
            }
        }
        self.late_total += out.late;
        Ok(out)
    }

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
        &self,
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
        let pending = self.planner.cpus().iter().any(|c| c.has_unfinished(id));
        (!pending).then(|| self.planner.now())
    }

    /// The frame's slots CPU index `cpu`'s template leaves free (placement of `admit`).
    pub fn free_template_slots(&self, cpu: usize) -> i64 {
        self.planner.cpus().get(cpu).map_or(i64::MIN, |c| {
            self.frame as i64 - c.template.iter().map(|j| j.wcet as i64).sum::<i64>()
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

/// Slot `t` on `cpu` is DPM idle until `until`: writes the period's entries ahead of their
/// decisions (they are `DPM_IDLE` unless an admission cuts the period short, and then they are
/// rewritten when decided) up to `cap` (`cur + frame - 2`: an entry serves one frame only, as
/// in [`KernelPlanner::advance_through`]), then publishes the period's end
/// (src/bpf/tt_sched.bpf.c K). `(shadow, dpm_until, frame)` are the planner's.
fn publish_dpm(
    (shadow, dpm_until, frame): (&mut [u32], &mut [u64], u64),
    (cpu, t, until, cap): (usize, u64, u64, u64),
    out: &mut Advance,
) {
    let end = until.min(cap + 1).max(t + 1);
    for s in t + 1..end {
        let fs = s % frame;
        let i = cpu * frame as usize + fs as usize;
        if let Some(task) = update(&mut shadow[i], DPM_IDLE) {
            out.writes.push(EntryWrite {
                cpu,
                slot: s,
                frame_slot: fs,
                task: Some(task),
                perf: None,
                ppm: None,
            });
        }
    }
    if end != dpm_until[cpu] {
        out.dpm.push(DpmWrite {
            cpu,
            from: t,
            until: end,
            kick: end < dpm_until[cpu],
        });
        dpm_until[cpu] = end;
    }
}

/// Sets `held` to `new`; `Some(new)` when that changed it (an entry to write).
fn update(held: &mut u32, new: u32) -> Option<u32> {
    (*held != new).then(|| {
        *held = new;
        new
    })
}

/// The policies of the kernel path (all of them; dpm and dpm+dvfs write `DPM_IDLE` entries and
/// publish their idle periods, src/bpf/tt_sched.bpf.c K).
pub const KERNEL_POLICIES: [Policy; 4] = Policy::ALL;

/// Whether a frame of `frame_slots` slots can run in planner mode under `policy`, `lead`
/// slots ahead.
pub fn check(policy: Policy, lead: u64, frame_slots: Slot) -> Result<(), PlannerModeError> {
    if !KERNEL_POLICIES.contains(&policy) {
        return Err(PlannerModeError::Policy(policy.name().into()));
    }
    if !LEAD_SLOTS.contains(&lead) {
        return Err(PlannerModeError::LeadRange(lead));
    }
    if lead.saturating_add(2) > frame_slots {
        return Err(PlannerModeError::LeadFrame {
            lead,
            frame: frame_slots,
        });
    }
    Ok(())
}

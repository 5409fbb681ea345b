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

use crate::abi::PERF_ONE;
use crate::energy::perf::cpuperf_target;
use crate::planner::cpu::UNIT;
use crate::planner::offline::Slot;
use crate::planner::policy::{Freqs, Policy};
use crate::planner::runtime::{CpuInput, Planner, PlannerConfig, StepExec};
use std::collections::VecDeque;
use thiserror::Error;

mod admit;
mod advance;
mod log;
mod observe;

pub use admit::{
    CpuCapacity, FirmJob, FirmOutcome, PeriodicOutcome, PeriodicTask, ReservationOracle,
};
pub use advance::{Advance, DpmWrite};
pub use log::{LogEvent, LogHeader, LOG_CAP, LOG_FORMAT};
pub use observe::{full_tolerance_ns, LoopCounts, SlotObs};

/// Table-entry flag: the slot is the first one of a job of its owner (the BPF side clears the
/// owner's "job done" state there; docs/plan-format.md "completion").
pub const JOB_START: u32 = crate::abi::ENTRY_JOB_START;

/// The plan task of a table entry (flags stripped), `None` for `NO_TASK`.
pub fn entry_task(entry: u32) -> Option<u32> {
    crate::abi::entry_task(entry)
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
    /// The executor of the sharded step ([`Self::set_step_exec`]); `None`: one thread.
    exec: Option<Box<dyn StepExec + Send>>,
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
            exec: None,
        })
    }

    /// Steps slots in which at least `min_due` CPUs are visited cut into `shards` shards, run
    /// by `exec` (e.g. the edge's helper threads, `scx_tt --planner-threads`); the decisions
    /// are the same as on one thread (`Planner::step_on`).
    pub fn set_step_exec(&mut self, exec: Box<dyn StepExec + Send>, shards: usize, min_due: usize) {
        self.planner.set_step_shards(shards, min_due);
        self.exec = Some(exec);
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
        self.planner.size_items()
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

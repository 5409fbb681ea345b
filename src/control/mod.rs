//! The control protocol of `scx_tt --table plan.json --control PATH` (docs/control.md): status
//! queries and table switches at run time; in planner mode firm admissions, policy swaps,
//! periodic admissions and removals. Pure: requests come in as text, the time through a
//! clock and plans through a loader the caller passes, decisions go out as values. The
//! socket lives in the binary (src/cli/run/control_socket.rs), the kernel write in
//! `Scheduler::switch_table`.
//!
//! # Terminology
//! - *slot k*: `[t0 + k·slot_ns, t0 + (k+1)·slot_ns)`, the BPF scheduler's grid;
//! - *frame start*: a slot k with `k mod frame_slots = 0`;
//! - *switch slot*: the first slot the new table owns, on every managed CPU at once;
//! - *pending*: a switch was written to the kernel and its slot has not ended yet.
//!
//! # Switch
//! ```text
//! switch_table(path) at time now:
//!     refuse if a switch is pending (one at a time: the table is only double buffered)
//!     new  = load + validate path          (the plan validation, every error)
//!     refuse unless compat::mismatches(running, new) is empty
//!     now  = the clock, read after loading
//!     k    = the first frame start with start(k − 1) >= now + MIN_LEAD_NS
//!            and k >= slot(now) + MIN_LEAD_SLOTS
//!     the caller writes new's table to the inactive half with switch slot k; on success:
//!     running = new, pending = k              (the reply: switch_slot k, at_ns = t0 + k·slot_ns)
//! ```
//!
//! Why start(k − 1): the BPF scheduler decides slot k's record owner (and whether the guard
//! band stops the owner before k) at the tick that starts slot k − 1, so the switch must be
//! written before that tick, with a margin for tick lateness and for writing a large table.
//!
//! # Properties
//! 1. The switch slot k is a frame start at least `MIN_LEAD_SLOTS` slots after the current one,
//!    slot k − 1 starts at least `MIN_LEAD_NS` after the clock reading, and k is the first
//!    frame start with both; so the frame in progress finishes under the old table on every
//!    CPU.
//! 2. A refused request changes nothing (the running plan, the pending switch).
//! 3. Only a plan compatible with the running one is ever handed to the kernel.

pub mod compat;
pub mod engine;
pub mod request;

pub use crate::planner::kernel_path::{
    self as online, FirmJob, FirmOutcome, KernelPlanner, PeriodicOutcome, PeriodicTask,
    PlannerModeError,
};
pub use compat::{mismatches, Mismatch};
pub use engine::Engine;
pub use request::{Request, RequestError, MAX_REQUEST_BYTES};

use crate::clock::SlotClock;
use crate::plan::{Class, LoadError, Plan, Start};
use crate::planner::Policy;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The switch slot is at least this many slots after the current slot.
pub const MIN_LEAD_SLOTS: u64 = 2;
/// ... and the slot before it starts at least this long after the request: the BPF tick at
/// that start already looks the switch slot up (its record owner, the guard band), and the
/// margin covers tick lateness (milliseconds under TCG) and writing a large table.
pub const MIN_LEAD_NS: u64 = 20_000_000;

/// A refused request; the reply is `{"ok":false,"error":"<Display>"}`.
#[derive(Debug, Error)]
pub enum ControlError {
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error("{path}: {reason}", path = path.display())]
    Plan { path: PathBuf, reason: String },
    #[error("plan {path} is incompatible with the running plan: {list}", path = path.display(), list = join(mismatches))]
    Incompatible {
        path: PathBuf,
        mismatches: Vec<Mismatch>,
    },
    #[error("a switch to {table} at slot {slot} is pending: one switch at a time, retry after slot {slot}")]
    SwitchPending { table: String, slot: u64 },
    #[error("writing the table to the kernel: {0}")]
    Kernel(String),
    #[error(
        "op = \"{op}\": only in planner mode (this scx_tt enforces the static table; start it \
         with --planner bss)"
    )]
    NotPlannerMode { op: &'static str },
    #[error(transparent)]
    Planner(#[from] PlannerModeError),
    #[error(
        "op = \"switch_table\": refused in planner mode (--planner {policy}): the planner \
         writes the table slot by slot; restart without --planner to switch tables"
    )]
    SwitchInPlannerMode { policy: String },
    #[error("task = {name:?}: no task of the plan has this name (its tt tasks: {tt})")]
    UnknownTask { name: String, tt: String },
    #[error("task = {name:?}: is not a tt task; firm jobs run in a tt task's threads on its CPU (its tt tasks: {tt})")]
    NotTt { name: String, tt: String },
    #[error("task = {name:?}: is not declared \"start\": \"admitted\" in the plan; only such a task can be admitted as a periodic task (they are: {admittable})")]
    NotAdmittable { name: String, admittable: String },
    #[error(
        "task = {name:?}: is already running (admitted from slot {from_slot}); remove it first"
    )]
    AlreadyAdmitted { name: String, from_slot: u64 },
    #[error("task = {name:?}: is not running (it {why}); nothing to remove")]
    NotRunning { name: String, why: String },
}

fn join(items: &[Mismatch]) -> String {
    items
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// One reply line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reply {
    Status {
        ok: bool,
        slot: u64,
        frame_slots: u64,
        table: String,
        pending_switch_slot: Option<u64>,
        /// Planner mode only.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        planner: Option<PlannerStatus>,
    },
    /// `admit_firm` accepted: guaranteed on CPU `cpu` before `deadline_slot`; the first slot
    /// the job can run in is `first_slot` (absolute slots of the kernel's slot clock).
    Admitted {
        ok: bool,
        accepted: bool,
        cpu: u32,
        deadline_slot: u64,
        first_slot: u64,
    },
    /// `admit_firm` rejected: `needed` slots, `available` free before `deadline_slot`.
    Rejected {
        ok: bool,
        accepted: bool,
        needed: u64,
        available: i64,
        deadline_slot: u64,
    },
    Switched {
        ok: bool,
        switch_slot: u64,
        at_ns: u64,
    },
    /// `set_policy` done: the planner decides the slots from `from_slot` on under `policy`.
    PolicySet {
        ok: bool,
        policy: String,
        from_slot: u64,
    },
    /// `admit_periodic` accepted: the task runs on CPU `cpu` from `from_slot` on (a frame
    /// start).
    PeriodicAdmitted {
        ok: bool,
        accepted: bool,
        cpu: u32,
        from_slot: u64,
    },
    /// `admit_periodic` rejected: the planner's reason (the EDF miss on the task's CPU).
    PeriodicRejected {
        ok: bool,
        accepted: bool,
        why: String,
    },
    /// `remove` done: the task owns no slot from `from_slot` on.
    Removed {
        ok: bool,
        removed: bool,
        from_slot: u64,
    },
    Error {
        ok: bool,
        error: String,
    },
}

impl Reply {
    pub fn error(e: &ControlError) -> Reply {
        Reply::Error {
            ok: false,
            // one line: plan validation errors come one per line
            error: e.to_string().replace('\n', "; "),
        }
    }

    pub fn ok(&self) -> bool {
        match self {
            Reply::Status { ok, .. }
            | Reply::Switched { ok, .. }
            | Reply::Admitted { ok, .. }
            | Reply::Rejected { ok, .. }
            | Reply::PolicySet { ok, .. }
            | Reply::PeriodicAdmitted { ok, .. }
            | Reply::PeriodicRejected { ok, .. }
            | Reply::Removed { ok, .. }
            | Reply::Error { ok, .. } => *ok,
        }
    }

    /// The reply as one JSON line, newline included.
    pub fn to_line(&self) -> String {
        let text = serde_json::to_string(self)
            .unwrap_or_else(|e| format!(r#"{{"ok":false,"error":"encoding the reply: {e}"}}"#));
        text + "\n"
    }
}

/// The planner part of a status reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannerStatus {
    pub policy: String,
    pub lead_slots: u64,
    /// Firm admissions.
    pub admissions_accepted: u64,
    pub admissions_rejected: u64,
    /// Tasks admitted (`admit_periodic`) or removed at run time, latest state of each, in the
    /// order of their first change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskChange>,
}

/// The run-time state of a task that was admitted or removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskChange {
    pub task: String,
    /// `admitted` or `removed`.
    pub state: String,
    /// The first slot of that state.
    pub from_slot: u64,
}

/// A validated, compatible switch for the caller to write to the kernel; `Control::committed`
/// records it once written.
#[derive(Clone, Debug)]
pub struct Switch {
    pub plan: Plan,
    /// The plan's name in status replies: the path it was loaded from.
    pub table: String,
    pub at_slot: u64,
    pub at_ns: u64,
}

/// What to do with a request.
#[derive(Debug)]
pub enum Step {
    /// Send this reply; nothing changed.
    Reply(Reply),
    /// Write this switch to the kernel, then call `committed` (or reply with the error).
    Switch(Switch),
    /// Planner mode: run this firm job's admission on the planner, then call `admission`.
    AdmitFirm(FirmJob),
    /// Planner mode: set the planner's policy (one of `online::KERNEL_POLICIES`), then call
    /// `policy_set` with the first slot it decides.
    SetPolicy(Policy),
    /// Planner mode: run this periodic admission on the planner, then call
    /// `periodic_admission`.
    AdmitPeriodic(PeriodicTask),
    /// Planner mode: remove plan task `task` from the planner, then call `removed` with the
    /// first slot decided without it.
    Remove { task: usize },
}

/// A table switch that was written to the kernel, for the exit report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchRecord {
    pub at_slot: u64,
    pub table: String,
}

/// The control state of one run.
#[derive(Debug)]
pub struct Control {
    /// The run's slot grid.
    clock: SlotClock,
    /// The plan in force, or about to be when a switch is pending.
    plan: Plan,
    /// The name of the plan in force.
    table: String,
    pending: Option<SwitchRecord>,
    history: Vec<SwitchRecord>,
    /// Planner mode (`--planner`): the policy, the lead and the admission counts.
    planner: Option<PlannerStatus>,
}

impl Control {
    /// `plan` (named `table`) runs on the slot grid `clock`.
    pub fn new(plan: Plan, table: String, clock: SlotClock) -> Self {
        Control {
            clock,
            plan,
            table,
            pending: None,
            history: Vec::new(),
            planner: None,
        }
    }

    /// Planner mode: `admit_firm` and `set_policy` are served, `switch_table` refused.
    pub fn with_planner(mut self, policy: &str, lead_slots: u64) -> Self {
        self.planner = Some(PlannerStatus {
            policy: policy.into(),
            lead_slots,
            admissions_accepted: 0,
            admissions_rejected: 0,
            tasks: Vec::new(),
        });
        self
    }

    /// The slot `now_ns` lies in (0 before slot 0 starts).
    pub fn slot_at(&self, now_ns: u64) -> u64 {
        self.clock.slot_or_first(now_ns)
    }

    /// The switch slot for a switch written at `now_ns` (property 1).
    pub fn switch_slot(&self, now_ns: u64) -> u64 {
        let frame = self.plan.frame_slots.max(1);
        // the first e with start(e - 1) = t0 + (e - 1)·slot >= now + MIN_LEAD_NS
        let before =
            (now_ns.saturating_sub(self.clock.t0_ns) + MIN_LEAD_NS).div_ceil(self.clock.slot_ns);
        let earliest = (before + 1).max(self.slot_at(now_ns) + MIN_LEAD_SLOTS);
        earliest.div_ceil(frame) * frame
    }

    /// A pending switch is over once its slot has ended (every CPU has ticked past it).
    fn settle(&mut self, now_ns: u64) {
        let slot = self.slot_at(now_ns);
        if let Some(p) = self.pending.take_if(|p| slot > p.at_slot) {
            self.table = p.table;
        }
    }

    /// The switches written so far, in order.
    pub fn history(&self) -> &[SwitchRecord] {
        &self.history
    }

    /// Handles one request line. `clock` reads CLOCK_MONOTONIC (again after loading a plan,
    /// which may take a while); `load` reads and validates a plan file (`plan::from_file` at
    /// the edge).
    pub fn handle(
        &mut self,
        line: &str,
        clock: impl Fn() -> u64,
        load: impl FnOnce(&Path) -> Result<Plan, LoadError>,
    ) -> Step {
        let now_ns = clock();
        self.settle(now_ns);
        let result = match Request::parse(line) {
            Ok(Request::Status) => Ok(Step::Reply(self.status(now_ns))),
            Ok(Request::SwitchTable { .. }) if self.planner.is_some() => {
                Err(ControlError::SwitchInPlannerMode {
                    policy: self.planner.as_ref().map_or("", |p| &p.policy).into(),
                })
            }
            Ok(Request::SwitchTable { plan }) => self.prepare(&plan, clock, load).map(Step::Switch),
            Ok(Request::AdmitFirm {
                task,
                wcet_slots,
                deadline_slots,
            }) => self
                .firm_job(&task, wcet_slots, deadline_slots, now_ns)
                .map(Step::AdmitFirm),
            Ok(Request::SetPolicy { policy }) => self.set_policy(policy),
            Ok(Request::AdmitPeriodic { task }) => {
                self.periodic_task(&task).map(Step::AdmitPeriodic)
            }
            Ok(Request::Remove { task }) => {
                self.running_task(&task).map(|task| Step::Remove { task })
            }
            Err(e) => Err(e.into()),
        };
        result.unwrap_or_else(|e| Step::Reply(Reply::error(&e)))
    }

    fn status(&self, now_ns: u64) -> Reply {
        Reply::Status {
            ok: true,
            slot: self.slot_at(now_ns),
            frame_slots: self.plan.frame_slots,
            table: self.table.clone(),
            pending_switch_slot: self.pending.as_ref().map(|p| p.at_slot),
            planner: self.planner.clone(),
        }
    }

    /// Validates an `admit_firm` request: a tt task of the plan, due `deadline_slots` after the
    /// current slot. Its CPU is the task's CPU (its threads run nowhere else).
    fn firm_job(
        &self,
        name: &str,
        wcet: u64,
        deadline_slots: u64,
        _now_ns: u64,
    ) -> Result<FirmJob, ControlError> {
        if self.planner.is_none() {
            return Err(ControlError::NotPlannerMode { op: "admit_firm" });
        }
        let tt = self
            .plan
            .tasks
            .iter()
            .filter(|t| t.class == crate::plan::Class::Tt)
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let Some(task) = self.plan.tasks.iter().position(|t| t.name == name) else {
            return Err(ControlError::UnknownTask {
                name: name.into(),
                tt,
            });
        };
        let Some(cpu) = self.plan.tt_cpu_index(task) else {
            return Err(ControlError::NotTt {
                name: name.into(),
                tt,
            });
        };
        Ok(FirmJob {
            task,
            cpu,
            wcet,
            deadline_slots,
        })
    }

    /// The latest run-time change of task `name`, if any.
    fn change(&self, name: &str) -> Option<&TaskChange> {
        self.planner
            .as_ref()
            .and_then(|p| p.tasks.iter().find(|c| c.task == name))
    }

    /// Records task `name`'s new state from `from_slot` on.
    fn record(&mut self, name: &str, state: &str, from_slot: u64) {
        let Some(p) = self.planner.as_mut() else {
            return;
        };
        let change = TaskChange {
            task: name.into(),
            state: state.into(),
            from_slot,
        };
        match p.tasks.iter_mut().find(|c| c.task == name) {
            Some(c) => *c = change,
            None => p.tasks.push(change),
        }
    }

    /// Validates an `admit_periodic` request: planner mode, a task declared `"start":
    /// "admitted"` (which implies tt with a CPU) and not running now.
    fn periodic_task(&self, name: &str) -> Result<PeriodicTask, ControlError> {
        if self.planner.is_none() {
            return Err(ControlError::NotPlannerMode {
                op: "admit_periodic",
            });
        }
        let admittable = self
            .plan
            .tasks
            .iter()
            .filter(|t| !t.start.is_table())
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let not_admittable = || ControlError::NotAdmittable {
            name: name.into(),
            admittable: if admittable.is_empty() {
                "none".into()
            } else {
                admittable.clone()
            },
        };
        let Some(task) = self.plan.tasks.iter().position(|t| t.name == name) else {
            return Err(not_admittable());
        };
        let (Start::Admitted { period, wcet }, Some(cpu)) =
            (self.plan.tasks[task].start, self.plan.tt_cpu_index(task))
        else {
            return Err(not_admittable());
        };
        if let Some(c) = self.change(name).filter(|c| c.state == "admitted") {
            return Err(ControlError::AlreadyAdmitted {
                name: name.into(),
                from_slot: c.from_slot,
            });
        }
        Ok(PeriodicTask {
            task,
            cpu,
            period,
            wcet,
        })
    }

    /// Validates a `remove` request: planner mode, a tt task that runs now (in the table and
    /// not removed, or admitted).
    fn running_task(&self, name: &str) -> Result<usize, ControlError> {
        if self.planner.is_none() {
            return Err(ControlError::NotPlannerMode { op: "remove" });
        }
        let tt = self
            .plan
            .tasks
            .iter()
            .filter(|t| t.class == Class::Tt)
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let Some(task) = self.plan.tasks.iter().position(|t| t.name == name) else {
            return Err(ControlError::UnknownTask {
                name: name.into(),
                tt,
            });
        };
        if self.plan.tasks[task].class != Class::Tt {
            return Err(ControlError::NotTt {
                name: name.into(),
                tt,
            });
        }
        let why = match self.change(name) {
            Some(c) if c.state == "admitted" => return Ok(task),
            Some(c) => format!("was removed from slot {}", c.from_slot),
            None if self.plan.tasks[task].start.is_table() => return Ok(task),
            None => "is declared \"start\": \"admitted\" and was not admitted".into(),
        };
        Err(ControlError::NotRunning {
            name: name.into(),
            why,
        })
    }

    /// Records the planner's answer to an `admit_periodic` and encodes the reply (CPU ids).
    pub fn periodic_admission(&mut self, t: &PeriodicTask, outcome: &PeriodicOutcome) -> Reply {
        match outcome {
            PeriodicOutcome::Accepted { cpu, from_slot } => {
                let name = self.plan.tasks[t.task].name.clone();
                self.record(&name, "admitted", *from_slot);
                Reply::PeriodicAdmitted {
                    ok: true,
                    accepted: true,
                    cpu: self.plan.managed.get(*cpu).copied().unwrap_or(u32::MAX),
                    from_slot: *from_slot,
                }
            }
            PeriodicOutcome::Rejected(r) => Reply::PeriodicRejected {
                ok: true,
                accepted: false,
                why: format!(
                    "{} slots every {} slots on cpu {}: {r}",
                    t.wcet,
                    t.period,
                    self.plan.managed.get(t.cpu).copied().unwrap_or(u32::MAX)
                ),
            },
        }
    }

    /// Records that plan task `task` owns no slot from `from_slot` on; returns the reply.
    pub fn removed(&mut self, task: usize, from_slot: u64) -> Reply {
        if let Some(name) = self.plan.tasks.get(task).map(|t| t.name.clone()) {
            self.record(&name, "removed", from_slot);
        }
        Reply::Removed {
            ok: true,
            removed: true,
            from_slot,
        }
    }

    /// Validates a `set_policy` request: planner mode, a policy of the kernel path.
    fn set_policy(&self, policy: Policy) -> Result<Step, ControlError> {
        if self.planner.is_none() {
            return Err(ControlError::NotPlannerMode { op: "set_policy" });
        }
        if !online::KERNEL_POLICIES.contains(&policy) {
            return Err(PlannerModeError::SetPolicy(policy.name().into()).into());
        }
        Ok(Step::SetPolicy(policy))
    }

    /// Records the policy the planner decides under from `from_slot` on; returns the reply.
    pub fn policy_set(&mut self, policy: Policy, from_slot: u64) -> Reply {
        if let Some(p) = self.planner.as_mut() {
            p.policy = policy.name().into();
        }
        Reply::PolicySet {
            ok: true,
            policy: policy.name().into(),
            from_slot,
        }
    }

    /// Counts the planner's answer to an `admit_firm` and encodes the reply (CPU ids).
    pub fn admission(&mut self, outcome: &FirmOutcome) -> Reply {
        let accepted = matches!(outcome, FirmOutcome::Accepted { .. });
        if let Some(p) = self.planner.as_mut() {
            if accepted {
                p.admissions_accepted += 1;
            } else {
                p.admissions_rejected += 1;
            }
        }
        match *outcome {
            FirmOutcome::Accepted {
                cpu,
                deadline_slot,
                first_slot,
            } => Reply::Admitted {
                ok: true,
                accepted: true,
                cpu: self.plan.managed.get(cpu).copied().unwrap_or(u32::MAX),
                deadline_slot,
                first_slot,
            },
            FirmOutcome::Rejected(cap) => Reply::Rejected {
                ok: true,
                accepted: false,
                needed: cap.needed,
                available: cap.available,
                deadline_slot: cap.deadline,
            },
        }
    }

    fn prepare(
        &self,
        path: &Path,
        clock: impl Fn() -> u64,
        load: impl FnOnce(&Path) -> Result<Plan, LoadError>,
    ) -> Result<Switch, ControlError> {
        if let Some(p) = &self.pending {
            return Err(ControlError::SwitchPending {
                table: p.table.clone(),
                slot: p.at_slot,
            });
        }
        let plan = load(path).map_err(|e| ControlError::Plan {
            path: path.to_path_buf(),
            reason: match e {
                LoadError::Io { source, .. } => format!("cannot read the plan: {source}"),
                LoadError::Invalid { errors, .. } => format!("invalid plan: {errors}"),
            },
        })?;
        let found = mismatches(&self.plan, &plan);
        if !found.is_empty() {
            return Err(ControlError::Incompatible {
                path: path.to_path_buf(),
                mismatches: found,
            });
        }
        let at_slot = self.switch_slot(clock());
        Ok(Switch {
            plan,
            table: path.display().to_string(),
            at_slot,
            at_ns: self.clock.start_ns(at_slot),
        })
    }

    /// Records a switch the caller wrote to the kernel; returns the reply.
    pub fn committed(&mut self, switch: Switch) -> Reply {
        let record = SwitchRecord {
            at_slot: switch.at_slot,
            table: switch.table,
        };
        self.plan = switch.plan;
        self.pending = Some(record.clone());
        self.history.push(record);
        Reply::Switched {
            ok: true,
            switch_slot: switch.at_slot,
            at_ns: switch.at_ns,
        }
    }

    /// Answers one request line, doing what it asks through `engine` (the kernel's table, the
    /// planner, the run log). A refused request changes nothing.
    pub fn serve(&mut self, line: &str, engine: &mut impl Engine) -> Reply {
        let step = self.handle(line, || engine.now_ns(), |p| engine.load_plan(p));
        match step {
            Step::Reply(reply) => reply,
            Step::Switch(switch) => self.write_switch(switch, engine),
            Step::AdmitFirm(job) => match engine.with_planner(|p, cur| p.admit_firm(&job, cur)) {
                Ok(outcome) => {
                    let reply = self.admission(&outcome);
                    engine.note(&format!(
                        "admit_firm {} (task {}): {}",
                        job.wcet,
                        job.task,
                        reply.to_line().trim_end()
                    ));
                    reply
                }
                Err(e) => Reply::error(&ControlError::Kernel(e)),
            },
            Step::SetPolicy(policy) => {
                let result = engine.with_planner(|p, _| {
                    let before = p.policy();
                    p.set_policy(policy).map(|from| (before, from))
                });
                match result {
                    Ok(Ok((before, from))) => {
                        engine.note(&format!("set_policy {before} -> {policy} from slot {from}"));
                        self.policy_set(policy, from)
                    }
                    Ok(Err(e)) => Reply::error(&ControlError::from(e)),
                    Err(e) => Reply::error(&ControlError::Kernel(e)),
                }
            }
            Step::AdmitPeriodic(task) => {
                match engine.with_planner(|p, _| p.admit_periodic(&task)) {
                    Ok(outcome) => {
                        let reply = self.periodic_admission(&task, &outcome);
                        engine.note(&format!(
                            "admit_periodic (task {}): {}",
                            task.task,
                            reply.to_line().trim_end()
                        ));
                        reply
                    }
                    Err(e) => Reply::error(&ControlError::Kernel(e)),
                }
            }
            Step::Remove { task } => match engine.with_planner(|p, _| p.remove(task)) {
                Ok((_, from)) => {
                    engine.note(&format!("remove (task {task}): no slots from slot {from}"));
                    self.removed(task, from)
                }
                Err(e) => Reply::error(&ControlError::Kernel(e)),
            },
        }
    }

    /// Writes a validated switch to the kernel and records it; warns when the write came after
    /// the tick that already looked the switch slot up.
    fn write_switch(&mut self, switch: Switch, engine: &mut impl Engine) -> Reply {
        if let Err(e) = engine.write_table(&switch.plan, switch.at_slot) {
            return Reply::error(&ControlError::Kernel(e));
        }
        let now = engine.now_ns();
        // The tick that starts the slot before the switch slot already looks the switch slot up.
        let decided_ns = switch.at_ns.saturating_sub(self.clock.slot_ns);
        if now >= decided_ns {
            engine.warn(&format!(
                "the table was written {:.1} ms after slot {} started: the slots around the \
                 switch may be enforced or accounted with the old table",
                (now - decided_ns) as f64 / 1e6,
                switch.at_slot - 1
            ));
        }
        engine.note(&format!(
            "table switch to {} at slot {} (a frame start, in {:.1} ms)",
            switch.table,
            switch.at_slot,
            switch.at_ns.saturating_sub(now) as f64 / 1e6
        ));
        self.committed(switch)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod periodic_tests;

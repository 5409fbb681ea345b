//! The control protocol of `scx_tt --table plan.json --control PATH` (docs/control.md): status
//! queries and table switches at run time; in planner mode firm admissions, policy swaps,
//! periodic admissions and removals, admissions' dry runs and capacity reports. A request
//! line is parsed once into a [`Request`], executed against the run through the narrow
//! [`Engine`] interface (clock, plan loader, table write, planner, run log) and answered with
//! one [`Reply`]. The socket is [`socket`]; the
//! run's engine lives in the binary (src/cli/run/engine.rs).
//!
//! # Terminology
//! - *slot k*: `[t0 + k·slot_ns, t0 + (k+1)·slot_ns)`, the BPF scheduler's grid;
//! - *frame start*: a slot k with `k mod frame_slots = 0`;
//! - *switch slot*: the first slot the new table owns, on every managed CPU at once;
//! - *pending*: a switch was written to the kernel and its slot has not ended yet;
//! - *planner mode*: `--planner`; the planner writes the table slot by slot, so the table is
//!   not switched but tasks are admitted and removed.
//!
//! # Serve
//! ```text
//! serve(line):
//!     now = engine.now_ns(); a pending switch whose slot has ended is in force
//!     request = Request::parse(line)         (refused: the error names the field)
//!     the op's method: check against the state, call the engine, record what it did
//!     reply {"ok":true, ...answer} or {"ok":false,"error":...}
//!     (an accepted switch_table answers later, from poll, once its plan is loaded)
//! ```
//!
//! # Switch
//! ```text
//! switch_table(path) at time now:
//!     refuse in planner mode, while another switch's plan loads, or if a switch is pending
//!     (the table is only double buffered)
//!     engine.start_load(path); loading = path   (off the run loop: a plan at the caps takes
//!                                               some 0.2 s to read, validate and tabulate,
//!                                               and seconds to write into the kernel's
//!                                               inactive half)
//! poll, as soon as the loader is done (the run loop wakes for it) and each turn:
//!     new  = engine.poll_load()              (None: still loading; the plan validation,
//!                                            every error)
//!     loading = none; now = engine.now_ns(); a pending switch whose slot has ended is in force
//!     refuse unless compat::mismatches(running, new) is empty
//!     now  = engine.now_ns(), read after loading
//!     k    = the first frame start with start(k − 1) >= now + MIN_LEAD_NS
//!            and k >= slot(now) + MIN_LEAD_SLOTS
//!     engine.write_table(new, k); refuse if it fails
//!     running = new, pending = k              (the reply: switch_slot k, at_ns = t0 + k·slot_ns)
//! ```
//!
//! Why start(k − 1): the BPF scheduler decides slot k's record owner (and whether the guard
//! band stops the owner before k) at the tick that starts slot k − 1, so the switch must be
//! written before that tick, with a margin for tick lateness (the run writes the table itself
//! before k is chosen, on the loader thread, and then only the switch slot and half); a write
//! that ends after that start is warned about.
//!
//! # Planner mode
//! `admit_firm`, `admit_periodic` and `remove` name a task of the plan; the state machine
//! checks the name against the plan and the task's run-time state, the planner (through
//! [`Engine::with_planner`]) decides, and the state machine records the answer: the firm
//! admission counts, each admitted or removed task's latest [`TaskState`], the policy in force.
//!
//! # Properties
//! 1. The switch slot k is a frame start at least `MIN_LEAD_SLOTS` slots after the current one,
//!    slot k − 1 starts at least `MIN_LEAD_NS` after the clock reading, and k is the first
//!    frame start with both; so the frame in progress finishes under the old table on every
//!    CPU.
//! 2. A refused request changes nothing (the running plan, the pending switch, the planner's
//!    counts, policy and task states), also when the engine fails it (the table write, the
//!    planner).
//! 3. Only a plan compatible with the running one is ever handed to the kernel.
//! 4. Status reports what the engine did: the plan in force is named after its switch slot
//!    has ended; the policy, the firm admission counts and the task states are the planner's
//!    answers.

mod admit;
mod capacity;
pub mod compat;
pub mod engine;
pub mod journal;
pub mod reply;
pub mod request;
mod switch;

pub use crate::planner::kernel_path::KernelPlanner;
use admit::base_name;
pub use admit::{timing, AdmitTiming, MAX_NAME};
pub use compat::{mismatches, Mismatch};

/// What the statistics (the edge's `scx_tt::metrics`) take from the control side that the
/// summary does not hold: the run-time state of the control side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Live {
    pub table: String,
    /// Planner mode's policy in force ("" without a planner).
    pub policy: String,
    pub admissions_accepted: u64,
    pub admissions_rejected: u64,
}
pub use engine::{Engine, NewTask};
pub use reply::{
    Answer, Capacity, CpuCapacity, DryRun, PlannerStatus, Reply, Status, TaskChange, TaskState,
};
pub use request::{Request, RequestError, MAX_REQUEST_BYTES};

use crate::clock::SlotClock;
#[cfg(test)]
use crate::plan::LoadError;
#[cfg(test)]
use crate::plan::Selector;
use crate::plan::{Class, Plan, Start, Task};
use crate::planner::kernel_path::{
    FirmJob, FirmOutcome, PeriodicOutcome, PeriodicTask, PlannerModeError,
};
use crate::planner::Policy;
use request::{Admit, AdmitClass, AdmitFirm, AdmitSelector, AfterJob};
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
    #[error(
        "a switch to {table} is loading its plan: one switch at a time, retry after its reply"
    )]
    SwitchLoading { table: String },
    #[error("writing the table to the kernel: {0}")]
    Kernel(String),
    #[error("the planner is not available: {0}")]
    PlannerUnavailable(String),
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
    #[error(
        "op = \"{op}\": refused: the run follows a DEmOS sequence (--demos with --planner): \
         its sequencer writes the table, so admissions, removals and policy swaps would not be \
         applied to it; nothing changed (run without --demos to admit)"
    )]
    Sequenced { op: &'static str },
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
    #[error("{field} = {value}: {rule}")]
    Admit {
        field: String,
        value: String,
        rule: String,
    },
    #[error("task = {name:?}: is not running (it {why}); nothing to remove")]
    NotRunning { name: String, why: String },
}

/// What an op's method returns: the answer, or why the request was refused.
type Answered = Result<Answer, ControlError>;

fn join(items: &[Mismatch]) -> String {
    items
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

impl From<ControlError> for Reply {
    fn from(e: ControlError) -> Reply {
        // one line: plan validation errors come one per line
        Reply::Err(e.to_string().replace('\n', "; "))
    }
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
    /// The plan file of an accepted `switch_table` that is loading off the run loop.
    loading: Option<PathBuf>,
    history: Vec<SwitchRecord>,
    /// Planner mode (`--planner`): the policy, the lead, the admission counts, the task states.
    planner: Option<PlannerStatus>,
    /// Planner mode with `--demos`: the DEmOS sequencer writes the table, the planner's
    /// decisions are not applied; the planner-mode ops are refused.
    sequenced: bool,
    /// Policy swaps not yet taken by [`Control::take_policy_swaps`]: (policy, first slot).
    swaps: Vec<(Policy, u64)>,
    /// Tasks admitted by `admit` (the plan does not name them), in BPF index order.
    added: Vec<AddedTask>,
    /// The parameters of each adaptive task `admit` added, by BPF index ([`Self::adaptive_params`]).
    adaptive_params: Vec<(usize, crate::adaptive::AdaptiveParams)>,
    /// Of which not yet taken by [`Control::take_added`].
    untaken: usize,
    /// What the requests changed, as the requests that rebuild it (`--resume`).
    journal: journal::Entries,
    /// Admissions of every kind (firm jobs, periodic tasks, `admit`): accepted, rejected by
    /// the acceptance test. For the statistics (src/metrics.rs).
    admissions: (u64, u64),
}

/// A task `admit` added at run time (one per thread group the request asked for: a vCPU).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddedTask {
    /// Its BPF task index (after the plan's tasks).
    pub index: usize,
    /// `NAME`, or `NAME/vcpuN` for a vCPU of a multi-vCPU VM.
    pub name: String,
    /// tt (owns slots by `period`/`wcet`) or be (runs in the slack; `period` = `wcet` = 0).
    pub class: Class,
    /// Its managed CPU (id); a be task without one runs on any managed CPU.
    pub cpu: Option<u32>,
    pub tids: Vec<u32>,
    pub period: u64,
    pub wcet: u64,
    pub from_slot: u64,
    /// Its threads are all gone: it owns no slot from this slot on ([`Control::reap`]).
    pub gone_from: Option<u64>,
    /// An aperiodic task's one job (`period` = 0, `wcet` its slots).
    pub job: Option<AperiodicJob>,
}

/// The job of an aperiodic task `admit` added (`wcet_slots` + `deadline_slots`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AperiodicJob {
    /// It has had its slots before this slot (the planner's guarantee).
    pub deadline_slot: u64,
    /// What its threads do once it has had them.
    pub after: AfterJob,
    /// The request's selector (the journal's be admission after the job).
    pub select: AdmitSelector,
    /// The first slot decided without it, once the planner has decided all its slots; its
    /// threads change ([`Control::finish_jobs`]) once the kernel is past it.
    pub done_from: Option<u64>,
}

impl Control {
    /// `plan` (named `table`) runs on the slot grid `clock`.
    pub fn new(plan: Plan, table: String, clock: SlotClock) -> Self {
        Control {
            clock,
            plan,
            table,
            pending: None,
            loading: None,
            history: Vec::new(),
            swaps: Vec::new(),
            planner: None,
            sequenced: false,
            added: Vec::new(),
            adaptive_params: Vec::new(),
            untaken: 0,
            journal: journal::Entries::default(),
            admissions: (0, 0),
        }
    }

    /// What the statistics (src/metrics.rs) take from the control side: the table in force,
    /// the policy (planner mode) and the admissions of every kind, accepted and rejected.
    pub fn metrics_live(&self) -> Live {
        Live {
            table: self.table.clone(),
            policy: self
                .planner
                .as_ref()
                .map_or(String::new(), |p| p.policy.clone()),
            admissions_accepted: self.admissions.0,
            admissions_rejected: self.admissions.1,
        }
    }

    /// Planner mode: `admit_firm`, `set_policy`, `admit_periodic` and `remove` are served,
    /// `switch_table` refused.
    pub fn with_planner(mut self, policy: &str, lead_slots: u64) -> Self {
        self.planner = Some(PlannerStatus {
            policy: policy.into(),
            lead_slots,
            admissions_accepted: 0,
            admissions_rejected: 0,
            tasks: Vec::new(),
            adaptive: Vec::new(),
        });
        self
    }

    /// Planner mode with `--demos` (the sequenced run, docs/demos.md): `admit_firm`,
    /// `set_policy`, `admit_periodic`, `remove` and `admit` are refused, naming why; `status`
    /// is served.
    pub fn sequenced(mut self) -> Self {
        self.sequenced = true;
        self
    }

    /// Planner mode: the adaptive tasks as the run sees them now, for `status` (nothing
    /// without a planner).
    pub fn set_adaptive(&mut self, views: Vec<crate::adaptive::AdaptiveView>) {
        if let Some(p) = self.planner.as_mut() {
            p.adaptive = views;
        }
    }

    /// The switches written so far, in order.
    pub fn history(&self) -> &[SwitchRecord] {
        &self.history
    }

    /// The policy swaps accepted since the last call, in order: (policy, the first slot it
    /// decides). For whoever prices slots by policy (the live energy estimate).
    pub fn take_policy_swaps(&mut self) -> Vec<(Policy, u64)> {
        std::mem::take(&mut self.swaps)
    }

    /// Tasks `admit` added whose threads are all gone (`alive(tid)` false for each) leave the
    /// planner: they own no slot from its next undecided slot on, and their capacity is free
    /// for the next admission at once (a VM that was shut down). Noted in the run's log and
    /// listed by `status` as `gone`. The run calls it every 100 ms.
    pub fn reap(&mut self, engine: &mut impl Engine, alive: impl Fn(u32) -> bool) {
        let gone: Vec<usize> = self
            .added
            .iter()
            .enumerate()
            .filter(|(_, a)| a.gone_from.is_none() && !a.tids.iter().any(|&t| alive(t)))
            .map(|(i, _)| i)
            .collect();
        for i in gone {
            let (index, class) = (self.added[i].index, self.added[i].class);
            let from = match class {
                // an adaptive task may hold a reservation (the run's supervisor, crates/tt-core/src/adaptive)
                Class::Tt | Class::Adaptive => match engine.with_planner(|p, _| {
                    p.remove_admitted(index);
                    p.now()
                }) {
                    Ok(from) => from,
                    Err(_) => return,
                },
                // in no planner: gone from the slot in progress
                Class::Be => self.clock.slot_or_first(engine.now_ns()),
            };
            let name = self.added[i].name.clone();
            self.added[i].gone_from = Some(from);
            self.record(&name, TaskState::Gone, from);
            engine.note(&format!(
                "admit {name}: its threads are gone: no slots from slot {from}, its capacity is free"
            ));
            // the request leaves the journal once every task it added is gone
            let base = base_name(&name);
            if self
                .added
                .iter()
                .all(|a| base_name(&a.name) != base || a.gone_from.is_some())
            {
                self.journal.set(journal::Key::Task(base.into()), None);
            }
        }
    }

    /// Aperiodic tasks `admit` added whose job has had its slots: once the kernel is past the
    /// last slot the planner decided for the job, the task leaves the planner and BPF, and its
    /// threads go on as its `after` says — a be task `NAME/be` on the same managed CPU (a new
    /// BPF index) or the housekeeping CPUs. The run calls it every 100 ms: a thread waits at
    /// most that long between its job's last slot and the be slack. Listed by `status` as
    /// `done`; the journal then holds the be admission (or nothing).
    pub fn finish_jobs(&mut self, engine: &mut impl Engine) {
        for i in 0..self.added.len() {
            let a = &self.added[i];
            let Some(job) = a.job.as_ref().filter(|_| a.gone_from.is_none()) else {
                continue;
            };
            let (index, known) = (a.index, job.done_from);
            let Ok((done, cur)) = engine.with_planner(|p, cur| (p.admitted_job_done(index), cur))
            else {
                return;
            };
            let Some(from) = known.or(done) else {
                continue;
            };
            if let Some(j) = self.added[i].job.as_mut() {
                j.done_from = Some(from);
            }
            if cur < from {
                continue;
            }
            let _ = engine.with_planner(|p, _| p.remove_admitted(index));
            let a = self.added[i].clone();
            let Some(job) = a.job.clone() else { continue };
            if let Err(e) = engine.release_task(index, a.cpu) {
                engine.warn(&format!(
                    "admit {}: releasing its threads after its job: {e}",
                    a.name
                ));
            }
            self.added[i].gone_from = Some(from);
            self.record(&a.name, TaskState::Done, from);
            let to = match job.after {
                AfterJob::Leave => "on the housekeeping CPUs".to_string(),
                AfterJob::Be => self.after_job_as_be(&a, cur, engine),
            };
            engine.note(&format!(
                "admit {}: its job had its {} slots before slot {from}: its threads run {to} \
                 from slot {cur}",
                a.name, a.wcet
            ));
            self.journal_after_jobs(&a.name, &job.select);
        }
    }

    /// Task `a`'s threads after its job, as be task `NAME/be` on its managed CPU from slot
    /// `cur`; says where they run now (the housekeeping CPUs when BPF refuses).
    fn after_job_as_be(&mut self, a: &AddedTask, cur: u64, engine: &mut impl Engine) -> String {
        let be = format!("{}/be", a.name);
        match engine.add_task(Class::Be, a.cpu, &a.tids) {
            Ok(index) => {
                self.record(&be, TaskState::Admitted, cur);
                self.added.push(AddedTask {
                    index,
                    name: be.clone(),
                    class: Class::Be,
                    cpu: a.cpu,
                    tids: a.tids.clone(),
                    period: 0,
                    wcet: 0,
                    from_slot: cur,
                    gone_from: None,
                    job: None,
                });
                format!("as be task {be}")
            }
            Err(e) => {
                engine.warn(&format!(
                    "admit {}: its threads cannot run as be ({e}): they run on the \
                     housekeeping CPUs",
                    a.name
                ));
                "on the housekeeping CPUs".to_string()
            }
        }
    }

    /// The journal entry of the `admit` that named task `name`, once every job of it is over:
    /// a be admission of `select` if its threads run as be, else none.
    fn journal_after_jobs(&mut self, name: &str, select: &AdmitSelector) {
        // the journal: once every job of the request is over, what its threads do now
        let base = base_name(name).to_string();
        let same = |t: &AddedTask| base_name(&t.name) == base;
        if self
            .added
            .iter()
            .all(|t| !same(t) || t.job.is_none() || t.gone_from.is_some())
        {
            let be = self
                .added
                .iter()
                .any(|t| same(t) && t.class == Class::Be && t.gone_from.is_none());
            let line = be
                .then(|| {
                    Request::Admit(Admit {
                        class: AdmitClass::Be,
                        ..Admit::new(base.clone(), select.clone())
                    })
                    .to_line()
                    .ok()
                })
                .flatten();
            self.journal.set(journal::Key::Task(base), line);
        }
    }

    /// Tasks `admit` added so far, in BPF index order (gone ones too: their index stays taken).
    pub fn added(&self) -> &[AddedTask] {
        &self.added
    }

    /// The analyser's and controller's parameters of the adaptive task `admit` added with BPF
    /// index `index` (its `adaptive` bounds, validated when it was admitted).
    pub fn adaptive_params(&self, index: usize) -> Option<&crate::adaptive::AdaptiveParams> {
        self.adaptive_params
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, p)| p)
    }

    /// The request lines that rebuild what the requests changed ([`journal`]), when they
    /// changed since the last call. The run stores them before it sends the reply.
    pub fn take_journal(&mut self) -> Option<Vec<String>> {
        self.journal.take_changed()
    }

    /// Tasks `admit` added since the last call (the run adds them to its accounting).
    pub fn take_added(&mut self) -> Vec<AddedTask> {
        let new = self.added[self.untaken..].to_vec();
        self.untaken = self.added.len();
        new
    }

    /// Answers one request line, doing what it asks through `engine`. A refused request
    /// changes nothing. `None`: an accepted `switch_table` whose plan now loads off the caller's
    /// thread ([`Engine::start_load`]); its reply comes from [`Control::poll`].
    pub fn serve(&mut self, line: &str, engine: &mut impl Engine) -> Option<Reply> {
        let now_ns = engine.now_ns();
        self.settle(now_ns);
        let answer = match Request::parse(line) {
            Ok(Request::Status) => Ok(self.status(now_ns)),
            Ok(Request::SwitchTable(r)) => match self.start_switch(&r.plan, engine) {
                Ok(()) => return None,
                Err(e) => Err(e),
            },
            Ok(Request::AdmitFirm(r)) => self.admit_firm(&r, engine),
            Ok(Request::SetPolicy(r)) => self.set_policy(r.policy, engine),
            Ok(Request::AdmitPeriodic(r)) => self.admit_periodic(&r.task, engine),
            Ok(Request::Remove(r)) => self.remove(&r.task, engine),
            Ok(Request::Admit(r)) => self.admit(&r, engine),
            Ok(Request::Capacity) => self.capacity(engine),
            Err(e) => Err(e.into()),
        };
        match answer.as_ref().ok().and_then(Answer::accepted) {
            Some(true) => self.admissions.0 += 1,
            Some(false) => self.admissions.1 += 1,
            None => {}
        }
        Some(answer.map_or_else(Reply::from, Reply::Ok))
    }

    /// The reply of the `switch_table` whose plan is loading, once [`Engine::poll_load`] has
    /// it: the switch is checked and written now (the switch slot from the clock read after
    /// loading). `None` while it loads, or when no plan is loading.
    pub fn poll(&mut self, engine: &mut impl Engine) -> Option<Reply> {
        self.loading.as_ref()?;
        let loaded = engine.poll_load()?;
        let path = self.loading.take()?;
        self.settle(engine.now_ns());
        let answer = self.finish_switch(&path, loaded, engine);
        Some(answer.map_or_else(Reply::from, Reply::Ok))
    }

    /// The plan file of a `switch_table` that is loading, if any.
    pub fn loading(&self) -> Option<&Path> {
        self.loading.as_deref()
    }

    /// A pending switch is over once its slot has ended (every CPU has ticked past it).
    fn settle(&mut self, now_ns: u64) {
        let slot = self.clock.slot_or_first(now_ns);
        if let Some(p) = self.pending.take_if(|p| slot > p.at_slot) {
            self.table = p.table;
        }
    }

    fn status(&self, now_ns: u64) -> Answer {
        Answer::Status(Status {
            slot: self.clock.slot_or_first(now_ns),
            frame_slots: self.plan.frame_slots,
            table: self.table.clone(),
            pending_switch_slot: self.pending.as_ref().map(|p| p.at_slot),
            planner: self.planner.clone(),
        })
    }

    /// A firm job for tt task `r.task` on its CPU (its threads run nowhere else), due
    /// `r.deadline_slots` after the kernel slot in progress.
    fn admit_firm(&mut self, r: &AdmitFirm, engine: &mut impl Engine) -> Answered {
        self.planner_mode("admit_firm")?;
        let (task, cpu) = self.tt_task(&r.task)?;
        let job = FirmJob {
            task,
            cpu,
            wcet: r.wcet_slots,
            deadline_slots: r.deadline_slots,
        };
        let outcome = engine
            .with_planner(|p, cur| p.admit_firm(&job, cur))
            .map_err(ControlError::PlannerUnavailable)?;
        let answer = match outcome {
            FirmOutcome::Accepted {
                cpu,
                deadline_slot,
                first_slot,
            } => Answer::FirmAccepted {
                cpu: self.cpu_id(cpu),
                deadline_slot,
                first_slot,
            },
            FirmOutcome::Rejected(cap) => Answer::FirmRejected {
                needed: cap.needed,
                available: cap.available,
                deadline_slot: cap.deadline,
            },
        };
        if let Some(p) = self.planner.as_mut() {
            match answer {
                Answer::FirmAccepted { .. } => p.admissions_accepted += 1,
                _ => p.admissions_rejected += 1,
            }
        }
        engine.note(&format!(
            "admit_firm {} (task {task}): {}",
            job.wcet,
            Reply::Ok(answer.clone()).to_line().trim_end()
        ));
        Ok(answer)
    }

    /// The planner decides the slots from its next undecided one on under `policy` (it refuses
    /// a policy the kernel path does not run).
    fn set_policy(&mut self, policy: Policy, engine: &mut impl Engine) -> Answered {
        self.planner_mode("set_policy")?;
        let (before, from_slot) = engine
            .with_planner(|p, _| {
                let before = p.policy();
                p.set_policy(policy).map(|from| (before, from))
            })
            .map_err(ControlError::PlannerUnavailable)??;
        if let Some(p) = self.planner.as_mut() {
            p.policy = policy.name().into();
        }
        self.swaps.push((policy, from_slot));
        let line = Request::SetPolicy(request::SetPolicy { policy }).to_line();
        self.journal.set(journal::Key::Policy, line.ok());
        engine.note(&format!(
            "set_policy {before} -> {policy} from slot {from_slot}"
        ));
        Ok(Answer::PolicySet {
            policy: policy.name().into(),
            from_slot,
        })
    }

    /// Admits task `name`, declared `"start": "admitted"` (which implies tt with a CPU) and not
    /// running now, with its plan timing on its CPU.
    fn admit_periodic(&mut self, name: &str, engine: &mut impl Engine) -> Answered {
        self.planner_mode("admit_periodic")?;
        let t = self.admittable(name)?;
        if let Some(from_slot) = self.admitted_from(name) {
            return Err(ControlError::AlreadyAdmitted {
                name: name.into(),
                from_slot,
            });
        }
        let outcome = engine
            .with_planner(|p, _| p.admit_periodic(&t))
            .map_err(ControlError::PlannerUnavailable)?;
        let answer = match outcome {
            PeriodicOutcome::Accepted { cpu, from_slot } => {
                self.record(name, TaskState::Admitted, from_slot);
                let line = Request::AdmitPeriodic(request::TaskArg { task: name.into() });
                self.journal
                    .set(journal::Key::Task(name.into()), line.to_line().ok());
                Answer::PeriodicAccepted {
                    cpu: self.cpu_id(cpu),
                    from_slot,
                }
            }
            PeriodicOutcome::Rejected(r) => Answer::PeriodicRejected {
                why: format!(
                    "{} slots every {} slots on cpu {}: {r}",
                    t.wcet,
                    t.period,
                    self.cpu_id(t.cpu)
                ),
            },
        };
        engine.note(&format!(
            "admit_periodic (task {}): {}",
            t.task,
            Reply::Ok(answer.clone()).to_line().trim_end()
        ));
        Ok(answer)
    }

    /// Takes tt task `name`, which runs now (in the table and not removed, or admitted), out
    /// of the planner; a task `admit` added (or every vCPU task of a VM it added, by the VM's
    /// name) leaves the plan altogether ([`Control::remove_added`]).
    fn remove(&mut self, name: &str, engine: &mut impl Engine) -> Answered {
        let added: Vec<usize> = (0..self.added.len())
            .filter(|&i| {
                let a = &self.added[i];
                a.gone_from.is_none() && (a.name == name || base_name(&a.name) == name)
            })
            .collect();
        if !added.is_empty() {
            return self.remove_added(name, &added, engine);
        }
        self.planner_mode("remove")?;
        let (task, _) = self.tt_task(name)?;
        self.running(name, task)?;
        let (_, from_slot) = engine
            .with_planner(|p, _| p.remove(task))
            .map_err(ControlError::PlannerUnavailable)?;
        self.record(name, TaskState::Removed, from_slot);
        // a task the plan starts admitted is back to what the plan says
        let line = match self.plan.tasks[task].start.is_table() {
            true => Request::Remove(request::TaskArg { task: name.into() })
                .to_line()
                .ok(),
            false => None,
        };
        self.journal.set(journal::Key::Task(name.into()), line);
        engine.note(&format!(
            "remove (task {task}): no slots from slot {from_slot}"
        ));
        Ok(Answer::Removed { from_slot })
    }

    /// Tasks `admit` added (`which`, indexes into `added`: one task, or every vCPU of a VM)
    /// leave the plan: tt ones leave the planner from its next undecided slot (their capacity
    /// is free at once), then BPF lets go of their threads, which run on the housekeeping
    /// CPUs as any other process from then on (src/bpf/tt_sched.bpf.c F). The admission
    /// leaves the journal once every task it added is gone or removed. A failure of BPF's part
    /// is reported; the planner's part stays done (the task owns no slot either way).
    fn remove_added(&mut self, name: &str, which: &[usize], engine: &mut impl Engine) -> Answered {
        // tt tasks, and adaptive ones, which may hold a reservation (the run's supervisor)
        let tt: Vec<usize> = which
            .iter()
            .filter(|&&i| self.added[i].class != Class::Be)
            .map(|&i| self.added[i].index)
            .collect();
        let from_slot = if tt.is_empty() {
            self.clock.slot_or_first(engine.now_ns())
        } else {
            engine
                .with_planner(|p, _| {
                    for &index in &tt {
                        p.remove_admitted(index);
                    }
                    p.now()
                })
                .map_err(ControlError::PlannerUnavailable)?
        };
        let mut failed = Vec::new();
        for &i in which {
            let (index, cpu) = (self.added[i].index, self.added[i].cpu);
            if let Err(e) = engine.release_task(index, cpu) {
                failed.push(format!("{}: {e}", self.added[i].name));
            }
            self.added[i].gone_from = Some(from_slot);
            let task = self.added[i].name.clone();
            self.record(&task, TaskState::Removed, from_slot);
        }
        let base = base_name(name).to_string();
        if self
            .added
            .iter()
            .all(|a| base_name(&a.name) != base || a.gone_from.is_some())
        {
            self.journal.set(journal::Key::Task(base), None);
        }
        engine.note(&format!(
            "remove {name}: {} task(s) left the plan: no slots from slot {from_slot}, their threads run on the housekeeping CPUs",
            which.len()
        ));
        if !failed.is_empty() {
            return Err(ControlError::Kernel(format!(
                "removed from the planner, but BPF kept threads of {}",
                failed.join("; ")
            )));
        }
        Ok(Answer::Removed { from_slot })
    }

    /// The planner-mode ops: refused without a planner, and in a sequenced run (the planner's
    /// decisions are not what the table gets).
    fn planner_mode(&self, op: &'static str) -> Result<(), ControlError> {
        match (&self.planner, self.sequenced) {
            (None, _) => Err(ControlError::NotPlannerMode { op }),
            (Some(_), true) => Err(ControlError::Sequenced { op }),
            (Some(_), false) => Ok(()),
        }
    }

    /// The index of plan task `name`: the one name → task lookup.
    fn find(&self, name: &str) -> Option<usize> {
        self.plan.tasks.iter().position(|t| t.name == name)
    }

    /// The names of the plan's tasks that `keep`, comma-separated ("none" when there are none).
    fn names(&self, keep: impl Fn(&Task) -> bool) -> String {
        let names: Vec<&str> = self
            .plan
            .tasks
            .iter()
            .filter(|t| keep(t))
            .map(|t| t.name.as_str())
            .collect();
        match names.is_empty() {
            true => "none".into(),
            false => names.join(", "),
        }
    }

    /// Tt task `name`: its plan index and its managed CPU index.
    fn tt_task(&self, name: &str) -> Result<(usize, usize), ControlError> {
        let tt = || self.names(|t| t.class == Class::Tt);
        let task = self.find(name).ok_or_else(|| ControlError::UnknownTask {
            name: name.into(),
            tt: tt(),
        })?;
        let cpu = self
            .plan
            .tt_cpu_index(task)
            .ok_or_else(|| ControlError::NotTt {
                name: name.into(),
                tt: tt(),
            })?;
        Ok((task, cpu))
    }

    /// Task `name` as a periodic admission: declared `"start": "admitted"`, with its CPU.
    fn admittable(&self, name: &str) -> Result<PeriodicTask, ControlError> {
        let found = self
            .find(name)
            .and_then(|task| match self.plan.tasks[task].start {
                Start::Admitted { period, wcet } => Some(PeriodicTask::implicit(
                    task,
                    self.plan.tt_cpu_index(task)?,
                    period,
                    wcet,
                )),
                Start::Table => None,
            });
        found.ok_or_else(|| ControlError::NotAdmittable {
            name: name.into(),
            admittable: self.names(|t| !t.start.is_table()),
        })
    }

    /// Whether tt task `name` (plan task `task`) runs now: in the table and not removed, or
    /// admitted.
    fn running(&self, name: &str, task: usize) -> Result<(), ControlError> {
        let why = match self.state(name) {
            Some(c) if c.state == TaskState::Removed => {
                format!("was removed from slot {}", c.from_slot)
            }
            None if !self.plan.tasks[task].start.is_table() => {
                "is declared \"start\": \"admitted\" and was not admitted".into()
            }
            _ => return Ok(()),
        };
        Err(ControlError::NotRunning {
            name: name.into(),
            why,
        })
    }

    /// The latest run-time change of task `name`, if any.
    fn state(&self, name: &str) -> Option<&TaskChange> {
        self.planner
            .as_ref()
            .and_then(|p| p.tasks.iter().find(|c| c.task == name))
    }

    /// The slot task `name` was admitted from, while it stays admitted.
    fn admitted_from(&self, name: &str) -> Option<u64> {
        self.state(name)
            .filter(|c| c.state == TaskState::Admitted)
            .map(|c| c.from_slot)
    }

    /// Records task `name`'s new state from `from_slot` on.
    fn record(&mut self, name: &str, state: TaskState, from_slot: u64) {
        let Some(p) = self.planner.as_mut() else {
            return;
        };
        let change = TaskChange {
            task: name.into(),
            state,
            from_slot,
        };
        match p.tasks.iter_mut().find(|c| c.task == name) {
            Some(c) => *c = change,
            None => p.tasks.push(change),
        }
    }

    /// The CPU id of managed CPU index `cpu`.
    fn cpu_id(&self, cpu: usize) -> u32 {
        self.plan.managed.get(cpu).copied().unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests;

//! The control protocol of `scx_tt --table plan.json --control PATH` (docs/control.md): status
//! queries and table switches at run time; in planner mode firm admissions, policy swaps,
//! periodic admissions and removals. A request line is parsed once into a [`Request`],
//! executed against the run through the narrow [`Engine`] interface (clock, plan loader, table
//! write, planner, run log) and answered with one [`Reply`]. The socket is [`socket`]; the
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

pub mod compat;
pub mod engine;
pub mod journal;
pub mod reply;
pub mod request;

pub use crate::planner::kernel_path::KernelPlanner;
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
pub use reply::{Answer, PlannerStatus, Reply, Status, TaskChange, TaskState};
pub use request::{Request, RequestError, MAX_REQUEST_BYTES};

use crate::abi::MAX_TASKS;
use crate::clock::SlotClock;
use crate::plan::{Class, LoadError, Plan, QemuSelector, Selector, Start, Task};
use crate::planner::kernel_path::{
    FirmJob, FirmOutcome, PeriodicOutcome, PeriodicTask, PlannerModeError,
};
use crate::planner::Policy;
use reply::AdmittedTask;
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

/// Where one task of an `admit` went: managed CPU index `cpu`, from `from_slot`; an aperiodic
/// one's job is due before `deadline_slot`.
struct Placed {
    cpu: usize,
    from_slot: u64,
    deadline_slot: Option<u64>,
}

/// The planner's admission of BPF task `index` with `timing` on managed CPU index `cpu` only,
/// `cur` the kernel slot in progress; `Err`: why not (nothing changed).
fn place(
    p: &mut KernelPlanner,
    cur: u64,
    timing: AdmitTiming,
    index: usize,
    cpu: usize,
    name: &str,
) -> Result<Placed, String> {
    match timing {
        AdmitTiming::Periodic {
            period,
            wcet,
            offset,
            deadline,
        } => {
            let t = PeriodicTask {
                offset,
                deadline: Some(deadline).filter(|&d| d != period),
                ..PeriodicTask::implicit(index, cpu, period, wcet)
            };
            match p.admit_task(&t, name) {
                PeriodicOutcome::Accepted { cpu, from_slot } => Ok(Placed {
                    cpu,
                    from_slot,
                    deadline_slot: None,
                }),
                PeriodicOutcome::Rejected(why) => Err(why.to_string()),
            }
        }
        AdmitTiming::Aperiodic { wcet, deadline } => {
            let job = FirmJob {
                task: index,
                cpu,
                wcet,
                deadline_slots: deadline,
            };
            match p.admit_aperiodic(&job, cur, name) {
                FirmOutcome::Accepted {
                    cpu,
                    deadline_slot,
                    first_slot,
                } => Ok(Placed {
                    cpu,
                    from_slot: first_slot,
                    deadline_slot: Some(deadline_slot),
                }),
                FirmOutcome::Rejected(cap) => Err(capacity_text(cap)),
            }
        }
    }
}

/// A failed acceptance test as a rejection says it.
fn capacity_text(cap: crate::planner::cpu::Capacity) -> String {
    format!(
        "{} slots free before slot {}, {} needed",
        cap.available.max(0),
        cap.deadline,
        cap.needed
    )
}

/// `timing` as a rejection says it.
fn timing_text(timing: AdmitTiming) -> String {
    match timing {
        AdmitTiming::Periodic {
            period,
            wcet,
            offset,
            deadline,
        } if offset == 0 && deadline == period => format!("{wcet} slots every {period} slots"),
        AdmitTiming::Periodic {
            period,
            wcet,
            offset,
            deadline,
        } => format!(
            "{wcet} slots every {period} slots in [{offset}, {}) of each period",
            offset + deadline
        ),
        AdmitTiming::Aperiodic { wcet, deadline } => {
            format!("one job of {wcet} slots within {deadline} slots")
        }
    }
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
                // an adaptive task may hold a reservation (the run's supervisor, src/adaptive)
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
            let Some(job) = a.job else { continue };
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
                AfterJob::Be => {
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
            };
            engine.note(&format!(
                "admit {}: its job had its {} slots before slot {from}: its threads run {to} \
                 from slot {cur}",
                a.name, a.wcet
            ));
            // the journal: once every job of the request is over, what its threads do now
            let base = base_name(&a.name).to_string();
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
                            ..Admit::new(base.clone(), job.select.clone())
                        })
                        .to_line()
                        .ok()
                    })
                    .flatten();
                self.journal.set(journal::Key::Task(base), line);
            }
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

    /// The switch slot for a switch written at `now_ns` (property 1).
    fn switch_slot(&self, now_ns: u64) -> u64 {
        let frame = self.plan.frame_slots.max(1);
        // the first e with start(e - 1) = t0 + (e - 1)·slot >= now + MIN_LEAD_NS
        let before =
            (now_ns.saturating_sub(self.clock.t0_ns) + MIN_LEAD_NS).div_ceil(self.clock.slot_ns);
        let earliest = (before + 1).max(self.clock.slot_or_first(now_ns) + MIN_LEAD_SLOTS);
        earliest.div_ceil(frame) * frame
    }

    /// A switch to the plan at `path`: refused now, or its loading started (the only state
    /// change: `loading`; the rest is [`Control::finish_switch`]'s once the plan is loaded).
    fn start_switch(&mut self, path: &Path, engine: &mut impl Engine) -> Result<(), ControlError> {
        if let Some(p) = &self.planner {
            return Err(ControlError::SwitchInPlannerMode {
                policy: p.policy.clone(),
            });
        }
        if let Some(loading) = &self.loading {
            return Err(ControlError::SwitchLoading {
                table: loading.display().to_string(),
            });
        }
        if let Some(p) = &self.pending {
            return Err(ControlError::SwitchPending {
                table: p.table.clone(),
                slot: p.at_slot,
            });
        }
        engine.start_load(path);
        self.loading = Some(path.to_path_buf());
        Ok(())
    }

    /// The switch to the plan loaded from `path`: checked against the running plan, written to
    /// the kernel, recorded. A refusal changes nothing.
    fn finish_switch(
        &mut self,
        path: &Path,
        loaded: Result<Plan, LoadError>,
        engine: &mut impl Engine,
    ) -> Answered {
        let plan = loaded.map_err(|e| ControlError::Plan {
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
        let at_slot = self.switch_slot(engine.now_ns());
        engine
            .write_table(&plan, at_slot)
            .map_err(ControlError::Kernel)?;
        let record = SwitchRecord {
            at_slot,
            table: path.display().to_string(),
        };
        let at_ns = self.clock.start_ns(at_slot);
        self.log_switch(&record, at_ns, engine);
        self.plan = plan;
        self.pending = Some(record.clone());
        self.history.push(record);
        let line = Request::SwitchTable(request::SwitchTable {
            plan: path.to_path_buf(),
        })
        .to_line();
        self.journal.set(journal::Key::Table, line.ok());
        Ok(Answer::Switched {
            switch_slot: at_slot,
            at_ns,
        })
    }

    /// Notes a switch written to the kernel; warns when the write ended after the tick that
    /// already looked the switch slot up.
    fn log_switch(&self, switch: &SwitchRecord, at_ns: u64, engine: &mut impl Engine) {
        let now = engine.now_ns();
        let decided_ns = at_ns.saturating_sub(self.clock.slot_ns);
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
            at_ns.saturating_sub(now) as f64 / 1e6
        ));
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

    /// A task the plan does not name (docs/control.md, `admit`): checks the name and the
    /// timing, resolves the threads (a QEMU process: one task per vCPU thread), places each
    /// on a managed CPU (`cpu`, else the least loaded not yet taken by a sibling, else the
    /// least loaded), admits all or none with the planner's exact test, and registers them in
    /// BPF before their first slot. A refusal changes nothing.
    fn admit(&mut self, r: &Admit, engine: &mut impl Engine) -> Answered {
        self.planner_mode("admit")?;
        let bad = |field: &str, value: String, rule: &str| ControlError::Admit {
            field: field.into(),
            value,
            rule: rule.into(),
        };
        let name = r.name.as_str();
        if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
            return Err(bad(
                "name",
                format!("{name:?}"),
                &format!("1 to {MAX_NAME} bytes, no control characters"),
            ));
        }
        if self.find(name).is_some() || self.added.iter().any(|a| base_name(&a.name) == name) {
            return Err(bad(
                "name",
                format!("{name:?}"),
                "already names a task of this run",
            ));
        }
        let cpus = match r.cpu {
            Some(c) => match self.plan.managed.iter().position(|&m| m == c) {
                Some(i) => vec![i],
                None => {
                    return Err(bad(
                        "cpu",
                        c.to_string(),
                        &format!(
                            "must be a managed CPU of the plan ({:?})",
                            self.plan.managed
                        ),
                    ))
                }
            },
            None => (0..self.plan.managed.len()).collect(),
        };
        let timed = [r.period_slots, r.wcet_slots, r.latency_us]
            .iter()
            .any(Option::is_some)
            || r.util.is_some();
        if r.adaptive.is_some() && r.class != AdmitClass::Adaptive {
            return Err(bad(
                "adaptive",
                serde_json::to_string(&r.adaptive).unwrap_or_default(),
                "is only for class adaptive",
            ));
        }
        let timing = match r.class {
            AdmitClass::Tt => Some(
                timing(r, self.plan.frame_slots, self.plan.slot_us)
                    .map_err(|(f, v, rule)| bad(f, v, &rule))?,
            ),
            AdmitClass::Be if timed || r.deadline_slots.is_some() || r.after.is_some() => {
                return Err(bad(
                    "class",
                    "\"be\"".into(),
                    "a be task takes no timing (period_slots, wcet_slots, deadline_slots, \
                     after, util, latency_us): it runs in the slack of the managed CPUs, \
                     without a guarantee",
                ))
            }
            AdmitClass::Be => None,
            AdmitClass::Adaptive => {
                check_adaptive(r, timed, self.plan.slot_us)
                    .map_err(|(f, v, rule)| bad(&f, v, &rule))?;
                None
            }
        };
        let sel = match &r.select {
            AdmitSelector::Pid(p) => Selector::Pid(*p),
            AdmitSelector::Tids(t) => Selector::Tids(t.clone()),
            AdmitSelector::Comm(c) => Selector::Comm(c.clone()),
            AdmitSelector::Cgroup(c) => Selector::Cgroup(c.clone()),
            AdmitSelector::QemuPid(p) => Selector::Qemu(QemuSelector::Pid(*p)),
            AdmitSelector::QemuName(n) => Selector::Qemu(QemuSelector::Name(n.clone())),
        };
        let tids = engine
            .resolve(&sel)
            .map_err(|e| bad("select", selector_text(&r.select), &e))?;
        if tids.is_empty() {
            return Err(bad("select", selector_text(&r.select), "selects no thread"));
        }
        let Some(timing) = timing else {
            // (r.cpu was checked to be a managed CPU above)
            return self.admit_slack(name, r, r.cpu, tids, engine);
        };
        // a VM: one task per vCPU thread; anything else: one task of all its threads
        let groups: Vec<Vec<u32>> = match sel {
            Selector::Qemu(_) => tids.iter().map(|&t| vec![t]).collect(),
            _ => vec![tids],
        };
        let first = engine.next_task_index().map_err(ControlError::Kernel)?;
        if first + groups.len() > MAX_TASKS {
            return Err(bad(
                "select",
                selector_text(&r.select),
                &format!(
                    "{} more tasks exceed the BPF task table of {MAX_TASKS}",
                    groups.len()
                ),
            ));
        }
        let n = groups.len();
        let task_name = |k: usize| match n {
            1 => name.to_string(),
            _ => format!("{name}/vcpu{k}"),
        };
        let managed = self.plan.managed.clone();
        let on = |c: usize| managed.get(c).map_or(c.to_string(), u32::to_string);
        let (outcome, added) = engine
            .with_planner_adding(|p, cur| {
                let outcome = (|| {
                    // an aperiodic VM's vCPUs: distinct CPUs, each chosen by the acceptance test
                    // alone, so that a rejection has changed nothing to undo
                    let mut chosen: Vec<usize> = Vec::new();
                    if let AdmitTiming::Aperiodic { wcet, deadline } = timing {
                        if n > cpus.len() {
                            return Err(format!(
                                "the {n} vCPUs of an aperiodic VM run on distinct managed CPUs, \
                             and {} can be used",
                                cpus.len()
                            ));
                        }
                        for _ in 0..n {
                            let mut order: Vec<usize> = cpus
                                .iter()
                                .copied()
                                .filter(|c| !chosen.contains(c))
                                .collect();
                            order
                                .sort_by_key(|&c| (std::cmp::Reverse(p.free_template_slots(c)), c));
                            let mut last = None;
                            for c in order {
                                match p.aperiodic_fits(c, wcet, deadline, cur) {
                                    Ok(()) => {
                                        chosen.push(c);
                                        last = None;
                                        break;
                                    }
                                    Err(cap) => last = Some((c, capacity_text(cap))),
                                }
                            }
                            if let Some((c, why)) = last {
                                return Err(format!(
                                    "{} on cpu {}: {why}",
                                    timing_text(timing),
                                    on(c)
                                ));
                            }
                        }
                    }
                    let mut placed = Vec::new();
                    for k in 0..n {
                        let order = match chosen.get(k) {
                            Some(&c) => vec![c],
                            None => {
                                let taken: Vec<usize> =
                                    placed.iter().map(|x: &Placed| x.cpu).collect();
                                let mut order: Vec<usize> = cpus.clone();
                                // siblings apart when possible, then the least loaded
                                order.sort_by_key(|&c| {
                                    (
                                        taken.contains(&c),
                                        std::cmp::Reverse(p.free_template_slots(c)),
                                        c,
                                    )
                                });
                                order
                            }
                        };
                        let mut last = None;
                        let mut ok = None;
                        for c in order {
                            match place(p, cur, timing, first + k, c, &task_name(k)) {
                                Ok(x) => {
                                    ok = Some(x);
                                    break;
                                }
                                Err(why) => last = Some((c, why)),
                            }
                        }
                        match ok {
                            Some(x) => placed.push(x),
                            None => {
                                // all or none: the vCPUs admitted so far leave again
                                for j in 0..placed.len() {
                                    p.rollback_admitted(first + j);
                                }
                                return Err(match last {
                                    Some((c, why)) => {
                                        format!("{} on cpu {}: {why}", timing_text(timing), on(c))
                                    }
                                    None => "no managed CPU".into(),
                                });
                            }
                        }
                    }
                    Ok(placed)
                })();
                // registered in BPF before the planner is let go: no slot of them is decided
                // before BPF has their threads
                let adds = match &outcome {
                    Ok(placed) => groups
                        .iter()
                        .zip(placed)
                        .map(|(g, x)| NewTask {
                            class: Class::Tt,
                            cpu: managed.get(x.cpu).copied(),
                            tids: g.clone(),
                        })
                        .collect(),
                    Err(_) => Vec::new(),
                };
                (outcome, adds)
            })
            .map_err(ControlError::PlannerUnavailable)?;
        let placed = match outcome {
            Ok(p) => p,
            Err(why) => {
                let answer = Answer::PeriodicRejected {
                    why: format!("{name}: {why}"),
                };
                engine.note(&format!(
                    "admit {name}: {}",
                    Reply::Ok(answer.clone()).to_line().trim_end()
                ));
                return Ok(answer);
            }
        };
        let wrong = added.iter().enumerate().find_map(|(k, a)| match a {
            Ok(i) if *i == first + k => None,
            Ok(i) => Some(format!("BPF gave task index {i}, expected {}", first + k)),
            Err(e) => Some(e.clone()),
        });
        if let Some(msg) = wrong.or_else(|| {
            (added.len() != n).then(|| format!("BPF added {} of {n} tasks", added.len()))
        }) {
            // BPF did not take them all: the planner forgets every vCPU of the request, and
            // the ones BPF took leave it again
            let _ = engine.with_planner(|p, _| {
                for j in 0..n {
                    p.rollback_admitted(first + j);
                }
            });
            for (a, x) in added.iter().zip(&placed) {
                if let Ok(i) = a {
                    let _ = engine.release_task(*i, Some(self.cpu_id(x.cpu)));
                }
            }
            return Err(ControlError::Kernel(msg));
        }
        let mut vcpus = Vec::new();
        for (k, (g, x)) in groups.iter().zip(&placed).enumerate() {
            let cpu_id = self.cpu_id(x.cpu);
            let index = first + k;
            let task_name = task_name(k);
            self.record(&task_name, TaskState::Admitted, x.from_slot);
            let (period, wcet, offset, deadline, job) = match timing {
                AdmitTiming::Periodic {
                    period,
                    wcet,
                    offset,
                    deadline,
                } => (
                    period,
                    wcet,
                    offset,
                    Some(deadline).filter(|&d| d != period),
                    None,
                ),
                AdmitTiming::Aperiodic { wcet, .. } => (
                    0,
                    wcet,
                    0,
                    None,
                    Some(AperiodicJob {
                        deadline_slot: x.deadline_slot.unwrap_or(0),
                        after: r.after.unwrap_or(AfterJob::Be),
                        select: r.select.clone(),
                        done_from: None,
                    }),
                ),
            };
            vcpus.push(AdmittedTask {
                task: task_name.clone(),
                class: AdmitClass::Tt,
                cpu: Some(cpu_id),
                from_slot: x.from_slot,
                period_slots: period,
                wcet_slots: wcet,
                offset_slots: offset,
                deadline_slots: deadline,
                deadline_slot: x.deadline_slot,
                after: job.as_ref().map(|j| j.after),
                tids: g.clone(),
            });
            self.added.push(AddedTask {
                index,
                name: task_name,
                class: Class::Tt,
                cpu: Some(cpu_id),
                tids: g.clone(),
                period,
                wcet,
                from_slot: x.from_slot,
                gone_from: None,
                job,
            });
        }
        let line = Request::Admit(r.clone()).to_line().ok();
        self.journal.set(journal::Key::Task(name.into()), line);
        let answer = Answer::TaskAdmitted { tasks: vcpus };
        engine.note(&format!(
            "admit {name}: {}",
            Reply::Ok(answer.clone()).to_line().trim_end()
        ));
        Ok(answer)
    }

    /// `admit` of a be or an adaptive task (`r.class`): its threads `tids` join the slack of
    /// managed CPU `cpu` (any managed CPU when `None`; an adaptive task always has one) at
    /// once; no planner, no timing, no guarantee (an adaptive task's reservation comes later,
    /// from the supervisor).
    fn admit_slack(
        &mut self,
        name: &str,
        r: &Admit,
        cpu: Option<u32>,
        tids: Vec<u32>,
        engine: &mut impl Engine,
    ) -> Answered {
        let first = engine.next_task_index().map_err(ControlError::Kernel)?;
        if first >= MAX_TASKS {
            return Err(ControlError::Admit {
                field: "select".into(),
                value: selector_text(&r.select),
                rule: format!("one more task exceeds the BPF task table of {MAX_TASKS}"),
            });
        }
        let class = match r.class {
            AdmitClass::Adaptive => Class::Adaptive,
            _ => Class::Be,
        };
        let index = match engine.add_task(class, cpu, &tids) {
            Ok(i) if i == first => i,
            Ok(i) => {
                return Err(ControlError::Kernel(format!(
                    "BPF gave task index {i}, expected {first}"
                )))
            }
            Err(e) => return Err(ControlError::Kernel(e)),
        };
        let from_slot = self.clock.slot_or_first(engine.now_ns());
        self.record(name, TaskState::Admitted, from_slot);
        if class == Class::Adaptive {
            // checked by check_adaptive before anything changed
            let bounds = r.adaptive.as_deref().cloned().unwrap_or_default();
            if let Ok(p) = bounds.params(Some(self.plan.slot_us)) {
                self.adaptive_params.push((index, p));
            }
        }
        self.added.push(AddedTask {
            index,
            name: name.into(),
            class,
            cpu,
            tids: tids.clone(),
            period: 0,
            wcet: 0,
            from_slot,
            gone_from: None,
            job: None,
        });
        let line = Request::Admit(r.clone()).to_line().ok();
        self.journal.set(journal::Key::Task(name.into()), line);
        let answer = Answer::TaskAdmitted {
            tasks: vec![AdmittedTask {
                task: name.into(),
                class: r.class,
                cpu,
                from_slot,
                period_slots: 0,
                wcet_slots: 0,
                offset_slots: 0,
                deadline_slots: None,
                deadline_slot: None,
                after: None,
                tids,
            }],
        };
        engine.note(&format!(
            "admit {name}: {}",
            Reply::Ok(answer.clone()).to_line().trim_end()
        ));
        Ok(answer)
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

/// The name an `admit` request gave (`NAME` of `NAME/vcpuK`).
fn base_name(task: &str) -> &str {
    task.split('/').next().unwrap_or(task)
}

/// Names of tasks `admit` adds: at most this many bytes.
pub const MAX_NAME: usize = 64;

fn selector_text(s: &AdmitSelector) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The timing of a tt `admit`, in slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmitTiming {
    /// `wcet` slots of every `period` (dividing the frame), released `offset` slots after the
    /// period's start and due `deadline` slots after the release.
    Periodic {
        period: u64,
        wcet: u64,
        offset: u64,
        deadline: u64,
    },
    /// One job of `wcet` slots due `deadline` slots after the slot the request arrives in.
    Aperiodic { wcet: u64, deadline: u64 },
}

/// The timing of a tt `admit`: `period_slots` + `wcet_slots` (+ `offset_slots`,
/// `deadline_slots`: the plan's rule `1 ≤ wcet ≤ deadline`, `offset + deadline ≤ period`), or
/// `wcet_slots` + `deadline_slots` alone (an aperiodic task: one job), or `util` +
/// `latency_us` (seed 000's and Tableau's VM model): the longest period P dividing the frame
/// whose budget Q = ⌈U·P⌉ leaves no gap longer than L between two services, 2·(P − Q) slots
/// (the budget at the start of one period, then at the end of the next). `Err`: (field, value,
/// rule).
pub fn timing(
    r: &Admit,
    frame: u64,
    slot_us: u64,
) -> Result<AdmitTiming, (&'static str, String, String)> {
    if r.after.is_some() && (r.period_slots.is_some() || r.util.is_some()) {
        return Err((
            "after",
            format!("{:?}", r.after),
            "only an aperiodic task (wcet_slots and deadline_slots without period_slots) has \
             a job after which its threads change"
                .into(),
        ));
    }
    if r.offset_slots.is_some() && r.period_slots.is_none() {
        return Err((
            "offset_slots",
            format!("{:?}", r.offset_slots),
            "needs period_slots: the offset is of each period's job".into(),
        ));
    }
    match (r.period_slots, r.wcet_slots, r.util, r.latency_us) {
        (Some(p), Some(w), None, None) => {
            if !frame.is_multiple_of(p) {
                return Err((
                    "period_slots",
                    p.to_string(),
                    format!("must divide the frame of {frame} slots"),
                ));
            }
            let offset = r.offset_slots.unwrap_or(0);
            let deadline = r.deadline_slots.unwrap_or(p);
            if offset.checked_add(deadline).is_none_or(|end| end > p) {
                let (field, value) = match r.deadline_slots {
                    Some(d) => ("deadline_slots", d),
                    None => ("offset_slots", offset),
                };
                return Err((
                    field,
                    value.to_string(),
                    format!(
                        "offset_slots {offset} + deadline_slots {deadline} must be at most \
                         period_slots = {p} (each job inside its period)"
                    ),
                ));
            }
            if w > deadline {
                let rule = match r.deadline_slots {
                    Some(d) => format!("must be at most deadline_slots = {d}"),
                    None => format!("must be at most period_slots = {p}"),
                };
                return Err(("wcet_slots", w.to_string(), rule));
            }
            Ok(AdmitTiming::Periodic {
                period: p,
                wcet: w,
                offset,
                deadline,
            })
        }
        (None, Some(w), None, None) => {
            let Some(d) = r.deadline_slots else {
                return Err((
                    "deadline_slots",
                    "None".into(),
                    "give period_slots and wcet_slots (periodic), wcet_slots and \
                     deadline_slots (aperiodic), or util and latency_us"
                        .into(),
                ));
            };
            if w > d {
                return Err((
                    "wcet_slots",
                    w.to_string(),
                    format!("must be at most deadline_slots = {d}"),
                ));
            }
            Ok(AdmitTiming::Aperiodic {
                wcet: w,
                deadline: d,
            })
        }
        (None, None, Some(u), Some(l)) => {
            if r.deadline_slots.is_some() {
                return Err((
                    "deadline_slots",
                    format!("{:?}", r.deadline_slots),
                    "util and latency_us give the timing; a deadline goes with period_slots \
                     or an aperiodic wcet_slots"
                        .into(),
                ));
            }
            if !(u > 0.0 && u < 1.0) {
                return Err((
                    "util",
                    u.to_string(),
                    "must be in (0, 1): a share of one CPU per vCPU".into(),
                ));
            }
            let slot = slot_us.max(1);
            let fits = |p: u64| {
                let q = (u * p as f64).ceil() as u64;
                (q <= p).then_some(q).filter(|&q| 2 * (p - q) * slot <= l)
            };
            (1..=frame)
                .rev()
                .filter(|p| frame.is_multiple_of(*p))
                .find_map(|p| {
                    fits(p).map(|q| AdmitTiming::Periodic {
                        period: p,
                        wcet: q,
                        offset: 0,
                        deadline: p,
                    })
                })
                .ok_or_else(|| {
                    (
                        "latency_us",
                        l.to_string(),
                        format!(
                        "no period dividing the frame of {frame} slots of {slot_us} us keeps the \
                         longest wait 2 x (period - budget) within it at util {u}"
                    ),
                    )
                })
        }
        _ => Err((
            "period_slots",
            format!("{:?}", r.period_slots),
            "give period_slots and wcet_slots (periodic), wcet_slots and deadline_slots \
             (aperiodic), or util and latency_us"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests;

/// An `admit` of class adaptive: no timing, a managed CPU (`cpu`), and bounds within their
/// rules (`crate::adaptive::bounds`). The error: field, value, rule.
fn check_adaptive(r: &Admit, timed: bool, slot_us: u64) -> Result<(), (String, String, String)> {
    if timed || r.deadline_slots.is_some() || r.after.is_some() || r.offset_slots.is_some() {
        return Err((
            "class".into(),
            "\"adaptive\"".into(),
            "an adaptive task takes no timing (period_slots, wcet_slots, offset_slots, \
             deadline_slots, after, util, latency_us): its period and budget are inferred at run \
             time; bound them with adaptive"
                .into(),
        ));
    }
    if r.cpu.is_none() {
        return Err((
            "cpu".into(),
            "null".into(),
            "is required for an adaptive task (the CPU of its reservation)".into(),
        ));
    }
    r.adaptive
        .as_deref()
        .cloned()
        .unwrap_or_default()
        .params(Some(slot_us))
        .map(drop)
        .map_err(|e| (format!("adaptive.{}", e.field), e.value, e.rule))
}

//! The plan: which tasks own which slots on which managed CPUs.
//!
//! A plan file (JSON, format version 1, `docs/plan-format.md`) is parsed into a raw, serde-level
//! form and validated at the boundary by `Plan::try_from(raw)`. Every derived quantity (periods
//! from utilization/latency, the frame, the CPU assignment, jobs, the EDF table, capacity
//! intervals and spare capacities) is recomputed here and never read from input.
//!
//! The types below are the contract other modules (planner, loader, simulate) build on.
//! Entry points: [`from_str`], [`from_file`], `Plan::try_from(RawPlan)` and
//! [`Plan::check_cpus_exist`].

pub mod cpus;
pub mod error;
pub mod explain;
pub mod gen;
pub mod limits;
pub mod raw;
pub mod strict;
mod table;
pub mod timing;
mod validate;

pub use cpus::parse_cpu_list;
pub use error::{LoadError, PlanError, PlanErrors, Rule};
pub use raw::RawPlan;

use crate::planner::offline::{Interval, Job, Range, Slot};
use crate::planner::runtime::CpuInput;
use serde::Serialize;
use std::path::Path;

/// Parse and validate a plan. JSON errors name the line, column and JSON path; validation errors
/// are all collected (see [`Rule`]).
pub fn from_str(text: &str) -> Result<Plan, PlanErrors> {
    Plan::try_from(parse_raw(text)?)
}

/// The largest plan file read (bytes): 4 MiB, some 40,000 tasks of the bundled examples' size,
/// far above the 512 tasks a plan may have; bounds the memory a parse can take.
pub const MAX_PLAN_BYTES: u64 = 4 << 20;

/// Parse and validate the bytes of plan file `path` (read by the edge: `scx_tt::plan::from_file`).
/// More than [`MAX_PLAN_BYTES`] or not UTF-8 is an invalid plan (one error: the size, or the
/// offset of the first bad byte).
pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Plan, LoadError> {
    let invalid = |errors| LoadError::Invalid {
        path: path.to_path_buf(),
        errors,
    };
    let text = decode(bytes, MAX_PLAN_BYTES).map_err(invalid)?;
    from_str(text).map_err(invalid)
}

/// The plan text of `bytes`: at most `cap` bytes of UTF-8.
pub fn decode(bytes: &[u8], cap: u64) -> Result<&str, PlanErrors> {
    if bytes.len() as u64 > cap {
        return Err(PlanErrors(vec![PlanError::new(
            "",
            None,
            Rule::FileTooLarge { limit: cap },
        )]));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        PlanErrors(vec![PlanError::new(
            "",
            None,
            Rule::NotUtf8 {
                offset: e.valid_up_to(),
            },
        )])
    })
}

/// The raw, unvalidated plan (for tools that rewrite plans).
pub fn parse_raw(text: &str) -> Result<RawPlan, PlanErrors> {
    let de = &mut serde_json::Deserializer::from_str(text);
    // `Object`: a plan is a JSON object, never serde's positional array form.
    let strict::Object(raw) = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        syntax(
            if path == "." { String::new() } else { path },
            e.into_inner(),
        )
    })?;
    // Nothing but whitespace may follow the plan.
    de.end().map_err(|e| syntax(String::new(), e))?;
    Ok(raw)
}

fn syntax(path: String, e: serde_json::Error) -> PlanErrors {
    PlanErrors(vec![PlanError::new(
        path,
        None,
        Rule::Syntax {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        },
    )])
}

/// serde_json appends " at line L column C"; the error carries those as fields already.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// A validated plan.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// Slot length in microseconds.
    pub slot_us: u64,
    /// Slots in the repeating major frame.
    pub frame_slots: Slot,
    /// Managed CPUs, in the order of `cpus`.
    pub managed: Vec<u32>,
    /// Housekeeping CPUs: everything not in the plan runs here.
    pub housekeeping: Vec<u32>,
    pub tasks: Vec<Task>,
    /// One entry per managed CPU, same order as `managed`.
    pub cpus: Vec<CpuPlan>,
    /// What a `tt` owner's unused slot time becomes (`server`, docs/plan-format.md).
    #[serde(skip_serializing_if = "ServerDesign::is_default")]
    pub server: ServerDesign,
}

/// Seed 001's server designs, for what happens to the time of a slot whose `tt` owner has no
/// runnable thread or whose job is done (docs/plan-format.md `server`, src/bpf/tt_sched.bpf.c C).
/// Free slots (owned by no task) go to `be` work under every design.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerDesign {
    /// Purely time-driven: the CPU idles for the rest of the owner's slot.
    Ptps,
    /// Work-conserving: `be` work runs (the behaviour before this option existed).
    #[default]
    Wcps,
    /// Capacity-reclaiming: another `tt` task of the CPU whose current job is released, not
    /// done and has a runnable thread runs first (earliest absolute deadline first); then `be`.
    Crps,
}

impl ServerDesign {
    pub fn is_default(&self) -> bool {
        *self == ServerDesign::Wcps
    }

    /// The value of rodata `server_design` (`enum tt_server`).
    pub fn abi(self) -> u8 {
        match self {
            ServerDesign::Ptps => crate::abi::SERVER_PTPS,
            ServerDesign::Wcps => crate::abi::SERVER_WCPS,
            ServerDesign::Crps => crate::abi::SERVER_CRPS,
        }
    }
}

impl std::str::FromStr for ServerDesign {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ptps" => Ok(ServerDesign::Ptps),
            "wcps" => Ok(ServerDesign::Wcps),
            "crps" => Ok(ServerDesign::Crps),
            _ => Err(format!("{s:?} is not a server design: ptps, wcps or crps")),
        }
    }
}

impl std::fmt::Display for ServerDesign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ServerDesign::Ptps => "ptps",
            ServerDesign::Wcps => "wcps",
            ServerDesign::Crps => "crps",
        })
    }
}

/// Local scheduling inside a `tt` task (seed 001, a component's own scheduler): the task's
/// threads named by its interface workload run in the task's slots by RM priority (shorter
/// period first) or by EDF on each thread's current deadline (its last wakeup + its period),
/// instead of FIFO (src/bpf/tt_sched.bpf.c D). Threads of the task the workload does not name
/// come after every named one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocalSched {
    pub scheduler: crate::planner::interface::Scheduler,
    pub threads: Vec<LocalThread>,
}

/// One periodic thread of a component's workload, in slots.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocalThread {
    pub thread: ThreadSelector,
    pub period: Slot,
    pub wcet: u64,
}

/// How a thread of a task is named in the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadSelector {
    /// Thread name (`/proc/<pid>/task/<tid>/comm`).
    Comm(String),
    Tid(u32),
}

impl Plan {
    /// The planner's view of the plan: per managed CPU (plan order), its frame's jobs (task ids
    /// are plan task indices) and whether a `be` task may use its slack. The input of
    /// `simulate` and of the kernel path's planner mode.
    pub fn planner_inputs(&self) -> Vec<CpuInput> {
        self.cpus
            .iter()
            .map(|c| CpuInput {
                jobs: c.jobs.clone(),
                has_be: self
                    .tasks
                    .iter()
                    .any(|t| t.runs_in_slack() && t.cpu.is_none_or(|x| x == c.cpu)),
            })
            .collect()
    }

    /// The managed CPU index (position in `managed`) of tt task `task`, whose threads run on
    /// that CPU only; `None` for a be task or an index out of range.
    pub fn tt_cpu_index(&self, task: usize) -> Option<usize> {
        let t = self.tasks.get(task)?;
        if t.class != Class::Tt {
            return None;
        }
        let cpu = t.cpu?;
        self.managed.iter().position(|&c| c == cpu)
    }
}

/// A task of the plan.
#[derive(Clone, Debug, Serialize)]
pub struct Task {
    pub name: String,
    pub selector: Selector,
    pub class: Class,
    /// The managed CPU a `tt` task was assigned to (given or by the partitioning heuristic).
    /// For a `be` task: the CPU it is restricted to, or `None` for any managed CPU. For an
    /// `adaptive` task: its managed CPU (always given).
    pub cpu: Option<u32>,
    /// When a `tt` task starts owning slots (`be` tasks: always `Table`).
    #[serde(skip_serializing_if = "Start::is_table")]
    pub start: Start,
    /// How a job of a `tt` task ends early (`be` tasks: always `None`).
    pub completion: Completion,
    /// Local scheduling of the task's threads (`interface` with named threads); `None`: FIFO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalSched>,
    /// The workload and its optimal interface Γ when the task's timing is an `interface`
    /// (its jobs are then Γ's: period Π, wcet Θ); shown by `plan explain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<timing::InterfaceTiming>,
    /// An `adaptive` task's controller and analyser parameters (`Some` exactly for that class).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<crate::adaptive::AdaptiveParams>,
}

impl Task {
    /// Whether the task runs in the slack of managed CPUs (a `be` task, and an `adaptive` task
    /// until it has a reservation).
    pub fn runs_in_slack(&self) -> bool {
        matches!(self.class, Class::Be | Class::Adaptive)
    }
}

/// How a job of a `tt` task ends before its slots do (docs/plan-format.md, `completion`;
/// src/bpf/tt_sched.bpf.c I). A completed job's remaining slots go to `be` work or idle, and
/// its owner is not started again until its next job's first slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Completion {
    /// Never early: the job runs all its slots.
    None,
    /// A thread of the task calls `sched_yield()` in one of its slots (the SCHED_DEADLINE
    /// convention).
    Yield,
    /// Every thread of the task is blocked at the end of a slot in which it ran.
    Block,
}

impl Completion {
    /// The default of a `tt` task found by `selector`: `None` for a QEMU vCPU (a halted vCPU
    /// blocks, but an interrupt may need it again before its deadline; and KVM's pause-loop
    /// exits yield), `Yield` for the rest (a task that never calls `sched_yield()` behaves
    /// exactly as with `None`).
    pub fn default_for(selector: &Selector) -> Self {
        match selector {
            Selector::Qemu(_) => Completion::None,
            _ => Completion::Yield,
        }
    }

    /// The value of `task_completion` in the BPF scheduler's rodata (`enum tt_completion`).
    pub fn abi(self) -> u8 {
        match self {
            Completion::None => crate::abi::COMPLETION_NONE,
            Completion::Yield => crate::abi::COMPLETION_YIELD,
            Completion::Block => crate::abi::COMPLETION_BLOCK,
        }
    }
}

/// When a task owns slots: from the start (in the table), or only once admitted at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// In the offline table, the intervals and the planner's template from slot 0.
    #[default]
    Table,
    /// Declared (its threads are found and loaded) but in no table, interval or template until
    /// a planner-mode `admit_periodic` admits it: `wcet` slots every `period` slots, deadline
    /// the period, released at multiples of the period.
    Admitted { period: Slot, wcet: u64 },
}

impl Start {
    pub fn is_table(&self) -> bool {
        *self == Start::Table
    }
}

/// How the threads of a task are found at run time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Selector {
    Pid(u32),
    Tids(Vec<u32>),
    /// Thread name (`/proc/<pid>/task/<tid>/comm`).
    Comm(String),
    /// cgroup v2 path; its `cgroup.threads`.
    Cgroup(String),
    /// A QEMU process; its vCPU threads ("CPU n/KVM", or "CPU n/TCG" without KVM).
    Qemu(QemuSelector),
    /// argv to spawn (demos and tests).
    Cmd(Vec<String>),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QemuSelector {
    Pid(u32),
    /// The `-name` of the guest.
    Name(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Time-triggered: owns slots of the table.
    Tt,
    /// Best effort: runs only in slack on managed CPUs.
    Be,
    /// A legacy task with no timing given (seed 003, docs/adaptive.md): best effort in the
    /// slack of its managed CPU until planner mode's supervisor grants it a periodic
    /// reservation sized from its observed wakeups and consumption.
    Adaptive,
}

impl Class {
    /// The class as the plan writes it.
    pub fn name(self) -> &'static str {
        match self {
            Class::Tt => "tt",
            Class::Be => "be",
            Class::Adaptive => "adaptive",
        }
    }
}

/// The offline schedule of one managed CPU.
#[derive(Clone, Debug, Serialize)]
pub struct CpuPlan {
    pub cpu: u32,
    /// Jobs of the frame on this CPU (`Job::task` indexes `Plan::tasks`).
    pub jobs: Vec<Job>,
    /// The table as slot ranges sorted by start (`Range::job` indexes `jobs`); slots not covered
    /// are free (slack).
    pub table: Vec<Range>,
    /// Capacity intervals with spare capacities, covering `[0, frame_slots)`.
    pub intervals: Vec<Interval>,
}

//! Validation errors: each names the JSON path, the offending value and the rule it breaks,
//! e.g. `tasks[2].wcet = 7: exceeds its deadline window of 5 slots`.

use std::fmt;
use std::path::PathBuf;

/// One broken rule.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanError {
    /// JSON path of the offending value (`tasks[2].wcet`); empty for the whole document.
    pub path: String,
    /// The offending value as JSON text, when there is one.
    pub value: Option<String>,
    pub rule: Rule,
}

impl PlanError {
    pub fn new(path: impl Into<String>, value: Option<String>, rule: Rule) -> Self {
        PlanError {
            path: path.into(),
            value,
            rule,
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.path[..], &self.value) {
            ("", _) => write!(f, "{}", self.rule),
            (p, Some(v)) => write!(f, "{p} = {v}: {}", self.rule),
            (p, None) => write!(f, "{p}: {}", self.rule),
        }
    }
}

/// The rules of plan format version 1 (`docs/plan-format.md`), one variant each.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Rule {
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("the file is not UTF-8: invalid byte at offset {offset}")]
    NotUtf8 { offset: usize },
    #[error("the file is larger than {limit} bytes (the plan file limit)")]
    FileTooLarge { limit: u64 },
    #[error("unsupported format version (only 1 exists)")]
    Version,
    #[error("is required")]
    Missing,
    #[error("is required {0}")]
    MissingWhen(&'static str),
    #[error("must be between {min} and {max}")]
    OutOfRange { min: String, max: String },
    #[error("must not be empty")]
    Empty,
    #[error("appears twice (also at {0})")]
    Duplicate(String),
    #[error("is both managed and housekeeping")]
    ManagedAndHousekeeping,
    #[error("is not a managed CPU")]
    NotManaged,
    #[error("is not present on this machine (online CPUs: {online})")]
    CpuOffline { online: String },
    #[error("needs exactly one selector (pid, tids, comm, cgroup, qemu, cmd), found {0}")]
    SelectorCount(String),
    #[error("needs exactly one of pid, name, found {0}")]
    QemuSelector(String),
    #[error("is longer than the kernel's 15-character thread name")]
    CommTooLong,
    #[error("must be an absolute cgroup v2 path starting with /")]
    CgroupNotAbsolute,
    #[error("must be \"tt\", \"be\" or \"adaptive\"")]
    Class,
    #[error("a tt task needs exactly one timing model (period+wcet, utilization+latency_us, jobs, interface), found {0}")]
    TimingCount(String),
    #[error("is a timing field; a be task has no timing (it runs only in slack)")]
    BeTiming,
    #[error("is a timing field; an adaptive task has no timing (its period and budget are inferred at run time; bound them in adaptive)")]
    AdaptiveTiming,
    #[error("is only for adaptive tasks (class \"adaptive\")")]
    AdaptiveNotAdaptive,
    /// An adaptive bound outside its rule (`crate::adaptive::bounds`).
    #[error("{0}")]
    Adaptive(String),
    #[error("must be at least 1")]
    Zero,
    #[error("exceeds its deadline window of {window} slots")]
    WcetExceedsWindow { window: u64 },
    #[error("offset + deadline = {sum} exceeds the period of {period} slots (every job must lie inside the frame)")]
    OffsetDeadlineExceedsPeriod { sum: u64, period: u64 },
    #[error("latency {latency_slots:.3} slots at utilization {utilization} gives period L/(2(1-U)) = {bound:.3} < 1 slot")]
    LatencyTooShort {
        latency_slots: f64,
        utilization: f64,
        bound: f64,
    },
    #[error("release must be before deadline {deadline}")]
    JobWindow { deadline: u64 },
    #[error("exceeds the frame of {frame} slots")]
    OutsideFrame { frame: u64 },
    #[error(
        "window overlaps the previous job of the same task (jobs must be sorted, windows disjoint)"
    )]
    JobsOverlap,
    #[error("is not a multiple of the period {period} of {task}")]
    FrameNotMultiple { period: u64, task: String },
    #[error("{what} is {frame} slots, above the cap of {cap} slots")]
    FrameTooLarge {
        /// "the frame" or "the lcm of the periods".
        what: &'static str,
        frame: u128,
        cap: u64,
    },
    #[error("cannot be derived: no task has a period, give frame_slots")]
    FrameUnknown,
    #[error("must be \"table\" or \"admitted\"")]
    Start,
    #[error("is only for tt tasks (a be task owns no slots; an adaptive task's reservation is granted at run time)")]
    StartNotTt,
    #[error("start = \"admitted\" needs period+wcet, utilization+latency_us or interface timing with the deadline equal to the period and no offset (it is admitted as an implicit-deadline periodic task)")]
    StartTiming,
    #[error("start = \"admitted\" cannot be combined with an explicit table (the table is the slots owned from the start; give one or the other)")]
    StartWithTable,
    #[error("must be \"yield\", \"block\" or \"none\"")]
    Completion,
    #[error("is only for tt tasks (a be task has no jobs)")]
    CompletionNotTt,
    #[error("must be \"ptps\", \"wcps\" or \"crps\" (the server design of unused slot time)")]
    Server,
    #[error("must be \"rm\" or \"edf\" (the component's own scheduler)")]
    Scheduler,
    #[error("must be \"general\" or \"aligned\"")]
    Supply,
    #[error("has {count} tasks, above the interface search's cap of {limit}")]
    InterfaceTooManyTasks { count: usize, limit: usize },
    #[error("is above the cap of {cap} slots (the planner's job-size cap)")]
    PeriodAboveCap { cap: u64 },
    #[error("exceeds the period {period} (implicit deadlines: 1 ≤ wcet ≤ period)")]
    WcetExceedsPeriod { period: u64 },
    #[error("names its thread twice: give one of thread, tid")]
    ThreadAndTid,
    #[error("names no thread, but {named} does: either every workload task names its thread (thread or tid) or none does")]
    ThreadMix { named: String },
    #[error("names a thread of a qemu task: a VM's guest orders its tasks with its own scheduler, so a VM's workload names no threads (remove thread and tid)")]
    VmThread,
    #[error("is not one of the task's tids ({tids})")]
    TidNotSelected { tids: String },
    #[error("not computed: the plan's interface searches have taken {spent} test-point evaluations, at or above the plan's cap of {cap} (all searches together); give this task the period and wcet of `scx_tt plan interface` instead")]
    InterfaceWorkCap { spent: u64, cap: u64 },
    /// No interface: the workload or the search is refused by `planner::interface` (its
    /// message; paths in it are relative to the `interface` object).
    #[error("{0}")]
    Interface(crate::planner::interface::InterfaceError),
    #[error("start must be before end {end}")]
    RangeEmpty { end: u64 },
    #[error("overlaps the range at {0}")]
    RangeOverlap(String),
    #[error("names no task of the plan")]
    UnknownTask,
    #[error("names task {task} which is not a tt task on cpu {cpu}")]
    RangeTaskNotHere { task: String, cpu: u32 },
    #[error("slot {slot} lies outside every job window of {task}")]
    RangeOutsideWindow { slot: u64, task: String },
    #[error("job {instance} of {task} (window [{release}, {deadline})) gets {got} slots in the table instead of its wcet {wcet}")]
    TableWcet {
        task: String,
        instance: u32,
        release: u64,
        deadline: u64,
        got: u64,
        wcet: u64,
    },
    #[error("has {count} tasks, above the BPF scheduler's limit of {limit} (TT_MAX_TASKS)")]
    TooManyTasks { count: usize, limit: usize },
    #[error("has {count} adaptive tasks, above the BPF scheduler's limit of {limit} wakeup rings (TT_MAX_ADAPTIVE)")]
    TooManyAdaptive { count: usize, limit: usize },
    #[error("is not below the BPF scheduler's limit of {limit} CPU ids (TT_MAX_CPUS)")]
    CpuIdTooLarge { limit: u32 },
    #[error("2 halves × {managed} managed CPUs × {frame} slots = {entries} table entries, above the BPF scheduler's limit of {limit}")]
    TableTooLarge {
        managed: usize,
        frame: u64,
        entries: u128,
        limit: u64,
    },
    #[error("{managed} managed CPUs × {frame} slots = {slots} CPU slots, above the limit of {limit} (plan and table memory)")]
    CpuSlotsTooMany {
        managed: usize,
        frame: u64,
        slots: u128,
        limit: u64,
    },
    #[error("the frame holds {jobs} jobs on {managed} managed CPUs, above the limit of {limit} (planner memory)")]
    TooManyJobs {
        jobs: u128,
        managed: usize,
        limit: usize,
    },
    #[error("brings the plan's distinct thread ids to {count}, above the BPF scheduler's limit of {limit} (TT_MAX_THREADS less scx_tt's own loader thread)")]
    TooManyThreads { count: usize, limit: usize },
    #[error("job {instance} of {task} (window [{release}, {deadline}), wcet {wcet}) misses its deadline on cpu {cpu} under EDF: {remaining} slots left at slot {deadline}")]
    Infeasible {
        task: String,
        cpu: u32,
        instance: u32,
        release: u64,
        deadline: u64,
        wcet: u64,
        remaining: u64,
    },
}

/// Every error found in one plan, in document order (syntax errors stop at the first).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct PlanErrors(pub Vec<PlanError>);

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl PlanErrors {
    pub fn iter(&self) -> std::slice::Iter<'_, PlanError> {
        self.0.iter()
    }
}

/// Why a plan file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read plan {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid plan {}:\n{errors}", path.display())]
    Invalid { path: PathBuf, errors: PlanErrors },
}

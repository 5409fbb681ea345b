//! What the control state machine ([`super::Control`]) needs from the run: a clock, a plan
//! loader, the kernel's table write and the planner. The run edge implements it
//! (`src/cli/run/engine.rs`: the BPF maps, CLOCK_MONOTONIC, the planner behind its lock);
//! tests implement it with a fake clock, plans from strings and a planner they own.
//!
//! The control layer decides everything (which slot a switch takes effect at, whether a task
//! may be admitted, what the reply says, what the run log says); the engine only does what
//! needs the machine.

use crate::plan::{LoadError, Plan};
use crate::planner::kernel_path::KernelPlanner;
use std::path::Path;

/// A task for BPF's task table ([`Engine::add_task`]'s arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTask {
    pub class: crate::plan::Class,
    pub cpu: Option<u32>,
    pub tids: Vec<u32>,
}

pub trait Engine {
    /// The time now, ns of CLOCK_MONOTONIC (the clock of the BPF slot grid).
    fn now_ns(&self) -> u64;

    /// Starts reading and validating the plan file at `path` without waiting for it (the run
    /// loads it on a worker thread: a plan at the caps takes some 0.2 s, and there also writes
    /// its table into the kernel's inactive half, seconds at the caps); [`Engine::poll_load`]
    /// hands the result over. Called only when no load is under way and no switch is pending.
    fn start_load(&mut self, path: &Path);

    /// The plan [`Engine::start_load`] asked for, once read and validated; `None` while it
    /// loads. Whatever the file holds, a result comes (plan files are regular files, opened
    /// non-blocking and read up to `plan::MAX_PLAN_BYTES`).
    fn poll_load(&mut self) -> Option<Result<Plan, LoadError>>;

    /// Writes `plan`'s table to the kernel so that it is in force from slot `at_slot` on, on
    /// every managed CPU at once (the double-buffered table, src/bpf/tt_sched.bpf.c F): the
    /// table itself is already in the inactive half when the loader wrote it, else it is
    /// written now. `Err` says why the switch was not written (nothing in force changed).
    fn write_table(&mut self, plan: &Plan, at_slot: u64) -> Result<(), String>;

    /// Planner mode: runs `f` on the planner together with the kernel slot in progress, read
    /// while the planner is held (so that the planner thread cannot step between the reading
    /// and `f`). `Err` when there is no planner or it cannot be had (a poisoned lock).
    fn with_planner<R>(
        &mut self,
        f: impl FnOnce(&mut KernelPlanner, u64) -> R,
    ) -> Result<R, String>;

    /// The threads `sel` selects now (`admit`), resolved as a plan's selectors are; `Err`: why
    /// none can be had (no such process, an ambiguous QEMU name, ...).
    fn resolve(&mut self, sel: &crate::plan::Selector) -> Result<Vec<u32>, String>;

    /// The CPUs thread `tid` may run on (its affinity, in increasing order); `Err`: why they
    /// cannot be read (the thread is gone).
    fn thread_cpus(&mut self, tid: u32) -> Result<Vec<u32>, String>;

    /// The BPF task index the next [`Engine::add_task`] gets.
    fn next_task_index(&mut self) -> Result<usize, String>;

    /// Adds a task of `class` on managed CPU `cpu` (a be task may have none: any managed CPU;
    /// completion none) with threads `tids` to the BPF task table and returns its index
    /// (src/bpf/tt_sched.bpf.c F).
    fn add_task(
        &mut self,
        class: crate::plan::Class,
        cpu: Option<u32>,
        tids: &[u32],
    ) -> Result<usize, String>;

    /// Planner mode: [`Engine::with_planner`], then, before the planner is let go, the
    /// additions to BPF's task table `f` asks for ([`NewTask`]), each answered with its index
    /// or why not, in order: the planner thread cannot decide a slot of an admitted task before
    /// BPF has its threads (an aperiodic task's first slot is the planner's next undecided
    /// one). The default does the additions after `f` (for engines without a planner thread).
    fn with_planner_adding<R>(
        &mut self,
        f: impl FnOnce(&mut KernelPlanner, u64) -> (R, Vec<NewTask>),
    ) -> Result<(R, Vec<Result<usize, String>>), String> {
        let (r, adds) = self.with_planner(f)?;
        let added = adds
            .into_iter()
            .map(|t| self.add_task(t.class, t.cpu, &t.tids))
            .collect();
        Ok((r, added))
    }

    /// Task `index`, which [`Engine::add_task`] added on `cpu`, leaves the plan: its threads
    /// (and those they forked) are no longer plan threads, and the ones queued on a managed
    /// CPU move to the housekeeping CPUs (src/bpf/tt_sched.bpf.c F, `release_task`).
    fn release_task(&mut self, index: usize, cpu: Option<u32>) -> Result<(), String>;

    /// A line for the run's log (stdout): what a request changed.
    fn note(&mut self, line: &str);

    /// A warning for the run's log (stderr).
    fn warn(&mut self, line: &str);
}

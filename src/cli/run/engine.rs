//! The run's side of the control protocol: [`scx_tt::control::Engine`] over the loaded BPF
//! scheduler, CLOCK_MONOTONIC and the planner behind its lock.

use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::control::Engine;
use scx_tt::plan::{self, LoadError, Plan};
use scx_tt::planner::kernel_path::KernelPlanner;
use scx_tt::planner::shared::PlannerHandle;
use scx_tt::sched::config::SchedConfig;
use scx_tt::sched::loader::Scheduler;
use std::path::Path;

pub struct RunEngine<'a, 'obj> {
    pub sched: &'a mut Scheduler<'obj>,
    /// The guard band the run was loaded with, us (a new table is configured with it).
    pub guard_us: u64,
    /// The machine's online CPUs (the housekeeping set of a new table's configuration).
    pub online: &'a [u32],
    /// Planner mode: the planner the planner thread steps.
    pub planner: Option<&'a PlannerHandle>,
    pub clock: SlotClock,
}

impl Engine for RunEngine<'_, '_> {
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }

    fn load_plan(&self, path: &Path) -> Result<Plan, LoadError> {
        plan::from_file(path)
    }

    fn write_table(&mut self, plan: &Plan, at_slot: u64) -> Result<(), String> {
        let cfg = SchedConfig::from_plan(plan, self.guard_us, self.online)
            .map_err(|e| format!("configuring the scheduler: {e}"))?;
        self.sched
            .switch_table(&cfg.table, at_slot)
            .map_err(|e| e.to_string())
    }

    fn with_planner<R>(
        &mut self,
        f: impl FnOnce(&mut KernelPlanner, u64) -> R,
    ) -> Result<R, String> {
        let planner = self.planner.ok_or("this run has no planner")?;
        // decides the slots `f` is expected to take first, so that the planner thread does not
        // wait for it; the slot in progress is read while the planner thread cannot step
        let clock = self.clock;
        planner
            .with_planner(|| clock.slot_at(monotonic_ns()), f)
            .map_err(|_| "its lock is poisoned (the planner thread panicked)".to_string())
    }

    fn note(&mut self, line: &str) {
        println!("scx_tt: {line}");
    }

    fn warn(&mut self, line: &str) {
        eprintln!("scx_tt: warning: {line}");
    }
}

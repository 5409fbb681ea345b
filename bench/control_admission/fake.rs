//! The fake BPF backend the control path runs over, and the planner thread with its maps faked.

use super::{FIFO_PRIORITY, FRAME, LEAD, ONLINE, RUN_NS, SLOT_NS};
use scx_tt::abi::NO_TASK;
use scx_tt::clock::{monotonic_ns, sleep_until_ns, SlotClock};
use scx_tt::control::{Engine, KernelPlanner};
use scx_tt::plan::{self, Class, LoadError, Plan, Selector};
use scx_tt::planner::kernel_path::KernelPathConfig;
use scx_tt::planner::shared::PlannerHandle;
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sched::config::{default_guard_us, SchedConfig};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The fake BPF backend.
pub(crate) struct FakeEngine {
    pub(crate) planner: Arc<PlannerHandle>,
    pub(crate) clock: SlotClock,
    /// The BPF task table: the next index, and the tasks added (class, CPU, threads).
    pub(crate) next_task: usize,
    pub(crate) added: Vec<(Class, Option<u32>, Vec<u32>)>,
    /// A `switch_table`'s plan (never in planner mode; for completeness).
    pub(crate) loading: Option<PathBuf>,
    /// The kernel's table: (switch slot, entries).
    pub(crate) tables: Vec<(u64, Vec<u32>)>,
    /// Per `with_planner`: ns until the operation ran (the lock, observations, decide-ahead)
    /// and ns it ran.
    pub(crate) lock_wait_ns: Vec<u64>,
    pub(crate) lock_hold_ns: Vec<u64>,
}

impl Engine for FakeEngine {
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }

    fn start_load(&mut self, path: &Path) {
        self.loading = Some(path.to_path_buf());
    }

    fn poll_load(&mut self) -> Option<Result<Plan, LoadError>> {
        self.loading.take().map(plan::from_file)
    }

    fn write_table(&mut self, plan: &Plan, at_slot: u64) -> Result<(), String> {
        let cfg = SchedConfig::from_plan(plan, default_guard_us(plan.slot_us), &ONLINE)
            .map_err(|e| e.to_string())?;
        self.tables.push((at_slot, cfg.entries()));
        Ok(())
    }

    fn with_planner<R>(
        &mut self,
        f: impl FnOnce(&mut KernelPlanner, u64) -> R,
    ) -> Result<R, String> {
        let clock = self.clock;
        let t0 = monotonic_ns();
        let mut ran = (0, 0);
        let r = self
            .planner
            .with_planner(
                || clock.slot_at(monotonic_ns()),
                |p, cur| {
                    let t1 = monotonic_ns();
                    let r = f(p, cur);
                    ran = (t1, monotonic_ns());
                    r
                },
            )
            .map_err(|e| e.to_string())?;
        self.lock_wait_ns.push(ran.0 - t0);
        self.lock_hold_ns.push(ran.1 - ran.0);
        Ok(r)
    }

    fn resolve(&mut self, _sel: &Selector) -> Result<Vec<u32>, String> {
        Err("the bench resolves no selectors".into())
    }

    fn thread_cpus(&mut self, _tid: u32) -> Result<Vec<u32>, String> {
        Err("the bench admits no threads".into())
    }

    fn next_task_index(&mut self) -> Result<usize, String> {
        Ok(self.next_task)
    }

    fn add_task(&mut self, class: Class, cpu: Option<u32>, tids: &[u32]) -> Result<usize, String> {
        self.added.push((class, cpu, tids.to_vec()));
        self.next_task += 1;
        Ok(self.next_task - 1)
    }

    fn release_task(&mut self, _index: usize, _cpu: Option<u32>) -> Result<(), String> {
        Ok(())
    }

    fn note(&mut self, _line: &str) {}

    fn warn(&mut self, _line: &str) {}
}

/// The planner of `plan` as the run builds it (planner_loop.rs `kernel_planner`, open loop).
pub(crate) fn kernel_planner(plan: &Plan) -> PlannerHandle {
    let cfg = SchedConfig::from_plan(plan, default_guard_us(plan.slot_us), &ONLINE)
        .expect("the bench plan configures");
    let config = KernelPathConfig {
        policy: Policy::Bss,
        lead: LEAD,
        frame_slots: plan.frame_slots,
        slot_ns: cfg.slot_ns,
        freqs: Freqs::xeon_default(),
    };
    let planner = KernelPlanner::new(
        &plan.planner_inputs(),
        plan.tasks.len(),
        config,
        cfg.entries(),
    )
    .expect("planner mode");
    PlannerHandle::new(planner, cfg.slot_ns)
}

/// Pins the calling thread to `cpu` under SCHED_FIFO, as the planner thread; says what was done.
fn prepare_planner_thread(cpu: u32) -> String {
    let pinned = match scx_tt::sched::affinity::set(&[cpu]) {
        Ok(()) => format!("pinned to CPU {cpu}"),
        Err(e) => format!("not pinned ({e})"),
    };
    let param = libc::sched_param {
        sched_priority: FIFO_PRIORITY,
    };
    // SAFETY: a plain syscall on the calling thread with a valid parameter.
    let fifo = match unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } {
        0 => format!("SCHED_FIFO {FIFO_PRIORITY}"),
        _ => format!("not SCHED_FIFO ({})", std::io::Error::last_os_error()),
    };
    format!("{pinned}, {fifo}")
}

#[derive(Default)]
pub(crate) struct PlannerStats {
    pub(crate) setup: String,
    pub(crate) turns: u64,
    pub(crate) max_wait_ns: u64,
    /// How late the thread woke after each slot boundary, ns.
    pub(crate) wake_late_ns: Vec<u64>,
}

/// The planner thread (planner_loop.rs `run`) with the maps faked.
pub(crate) fn planner_thread(
    handle: &PlannerHandle,
    clock: SlotClock,
    stop: &AtomicBool,
) -> PlannerStats {
    let mut stats = PlannerStats {
        setup: prepare_planner_thread(0),
        wake_late_ns: Vec::with_capacity(2 * (RUN_NS / SLOT_NS) as usize),
        ..PlannerStats::default()
    };
    let mut table = vec![NO_TASK; FRAME as usize];
    let mut perf = vec![0u32; FRAME as usize];
    while !stop.load(Ordering::Relaxed) {
        let cur = clock.slot_at(monotonic_ns());
        let turn = handle.turn(cur).expect("stepping the planner");
        for w in &turn.writes {
            let i = w.cpu * FRAME as usize + w.frame_slot as usize;
            if let Some(p) = w.perf {
                perf[i] = p;
            }
            if let Some(t) = w.task {
                table[i] = t;
            }
        }
        stats.turns += 1;
        stats.max_wait_ns = stats.max_wait_ns.max(turn.waited_ns);
        std::hint::black_box((&table, &perf));
        let next = match cur {
            Some(c) => clock.start_ns(c + 1),
            None => clock.t0_ns,
        };
        sleep_until_ns(next);
        stats.wake_late_ns.push(monotonic_ns().saturating_sub(next));
    }
    stats
}

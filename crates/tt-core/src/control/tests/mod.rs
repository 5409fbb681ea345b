//! The control layer's tests, by concern: the protocol's requests and replies (protocol.rs),
//! plan compatibility (compat.rs), table switches (switch.rs), the planner-mode ops
//! (planner.rs) and property 2 under random request sequences (refusals.rs). The fixtures are
//! here: plans from text, and a [`FakeEngine`] with a settable clock, plans by path, a
//! table-write recorder that fails on demand, a planner of its own and the run log it was
//! given.

mod adaptive;
mod admit;
mod aperiodic;
mod compat;
mod dry_run;
mod journal;
mod planner;
mod protocol;
mod refusals;
mod switch;

use super::*;
use crate::abi::NO_TASK;
use crate::plan;
use crate::planner::kernel_path::KernelPathConfig;
use crate::planner::policy::Freqs;
use std::cell::Cell;
use std::collections::HashMap;

pub const SLOT_NS: u64 = 10_000_000;
pub const T0_NS: u64 = 1_000_000_000;
/// The running plan's name.
pub const RUNNING: &str = "/p/a.json";

/// One managed CPU (1), frame 8, slots of `slot_us`: tt tasks a (`a_wcet` slots every 8) and b
/// (2 every 8) in the table, tt task v declared `"start": "admitted"` (2 every 8), be task c.
pub fn text(slot_us: u64, a_wcet: u64) -> String {
    format!(
        r#"{{ "version": 1, "slot_us": {slot_us},
  "cpus": {{ "managed": [1], "housekeeping": [0] }},
  "tasks": [
    {{ "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 8, "wcet": {a_wcet} }},
    {{ "name": "b", "pid": 11, "class": "tt", "cpu": 1, "period": 8, "wcet": 2 }},
    {{ "name": "v", "pid": 13, "class": "tt", "cpu": 1, "period": 8, "wcet": 2, "start": "admitted" }},
    {{ "name": "c", "pid": 12, "class": "be" }}
  ] }}"#
    )
}

pub fn plan_of(text: &str) -> Plan {
    plan::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The time in the middle of slot k.
pub fn at(k: u64) -> u64 {
    T0_NS + k * SLOT_NS + SLOT_NS / 2
}

/// `text(10_000, a_wcet)` running as `RUNNING`, slot 0 at `T0_NS`.
pub fn control_of(a_wcet: u64) -> Control {
    let clock = SlotClock::new(T0_NS, SLOT_NS);
    Control::new(plan_of(&text(10_000, a_wcet)), RUNNING.into(), clock)
}

/// The control of `text(10_000, 3)`, without a planner.
pub fn control() -> Control {
    control_of(3)
}

/// Planner mode under bss, 2 slots ahead, over `text(10_000, a_wcet)`: the control and an
/// engine with the planner of the same plan, at time `now`.
pub fn planner_run(a_wcet: u64, now: u64) -> (Control, FakeEngine) {
    let control = control_of(a_wcet).with_planner("bss", 2);
    let engine = FakeEngine::at(now).with_planner(&control.plan, 2);
    (control, engine)
}

/// The run, faked.
pub struct FakeEngine {
    /// CLOCK_MONOTONIC, ns.
    pub now: Cell<u64>,
    /// Loading a plan takes this long (the clock moves on when the load is handed over).
    pub load_ns: u64,
    /// While set, a started load is not done yet (`poll_load` answers `None`).
    pub hold_load: bool,
    /// The plan file whose load was started and not yet handed over.
    pub loading: Option<PathBuf>,
    /// Writing a table takes this long.
    pub write_ns: u64,
    /// Plan texts by path; any other path does not exist.
    pub files: HashMap<PathBuf, String>,
    /// The tables written: the switch slot and the plan.
    pub writes: Vec<(u64, Plan)>,
    /// Table writes fail with this reason.
    pub fail_write: Option<String>,
    /// Planner mode: the planner, stepped up to the kernel slot in progress plus the lead
    /// before each use (as the planner thread would be when on time).
    pub planner: Option<KernelPlanner>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    /// `admit`: the threads each selector selects (by its Debug text); any other selects none.
    pub threads: HashMap<String, Vec<u32>>,
    /// The BPF task table: the next index, and the tasks added (CPU, threads).
    pub next_task: usize,
    pub added: Vec<(u32, Vec<u32>)>,
    /// Tasks `release_task` took out of the plan: (index, cpu).
    pub released: Vec<(usize, Option<u32>)>,
    /// ... and their classes.
    pub classes: Vec<crate::plan::Class>,
    /// Adding a task fails with this reason.
    pub fail_add: Option<String>,
    /// Threads pinned to these CPUs (any other may run on every CPU).
    pub pins: HashMap<u32, Vec<u32>>,
    clock: SlotClock,
}

impl FakeEngine {
    /// An engine whose clock reads `now`, with no plan files and no planner.
    pub fn at(now: u64) -> Self {
        FakeEngine {
            now: Cell::new(now),
            load_ns: 0,
            hold_load: false,
            loading: None,
            write_ns: 0,
            files: HashMap::new(),
            writes: Vec::new(),
            fail_write: None,
            planner: None,
            notes: Vec::new(),
            warnings: Vec::new(),
            threads: HashMap::new(),
            next_task: 0,
            added: Vec::new(),
            released: Vec::new(),
            classes: Vec::new(),
            fail_add: None,
            pins: HashMap::new(),
            clock: SlotClock::new(T0_NS, SLOT_NS),
        }
    }

    /// `sel` selects `tids`.
    pub fn with_threads(mut self, sel: &crate::plan::Selector, tids: &[u32]) -> Self {
        self.threads.insert(format!("{sel:?}"), tids.to_vec());
        self
    }

    /// With the plan file `path` holding `text`.
    pub fn with_file(mut self, path: &str, text: String) -> Self {
        self.files.insert(path.into(), text);
        self
    }

    /// With the kernel-path planner of `plan` under bss, `lead` slots ahead, the table empty.
    pub fn with_planner(mut self, plan: &Plan, lead: u64) -> Self {
        let cfg = KernelPathConfig {
            policy: Policy::Bss,
            lead,
            frame_slots: plan.frame_slots,
            slot_ns: SLOT_NS,
            freqs: Freqs::xeon_default(),
        };
        let table = vec![NO_TASK; plan.managed.len() * plan.frame_slots as usize];
        let planner = KernelPlanner::new(&plan.planner_inputs(), plan.tasks.len(), cfg, table)
            .unwrap_or_else(|e| panic!("planner mode: {e}"));
        self.planner = Some(planner);
        self.next_task = plan.tasks.len();
        self
    }

    /// Serves `line` on `c` at the engine's clock; a switch is answered once its load is
    /// done (at once, unless `hold_load`).
    pub fn serve(&mut self, c: &mut Control, line: &str) -> Reply {
        match c.serve(line, self) {
            Some(reply) => reply,
            None => c
                .poll(self)
                .expect("a load that is not held is answered at the next poll"),
        }
    }

    /// Reads and validates the plan file at `path` from `files`.
    pub fn load_plan(&self, path: &Path) -> Result<Plan, LoadError> {
        self.now.set(self.now.get() + self.load_ns);
        let Some(text) = self.files.get(path) else {
            return Err(LoadError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        };
        plan::from_str(text).map_err(|errors| LoadError::Invalid {
            path: path.to_path_buf(),
            errors,
        })
    }

    /// Serves `request` on `c`.
    pub fn send(&mut self, c: &mut Control, request: &Request) -> Reply {
        self.serve(c, &line_of(request))
    }

    /// The status answer of `c`.
    pub fn status(&mut self, c: &mut Control) -> Status {
        match self.send(c, &Request::Status) {
            Reply::Ok(Answer::Status(s)) => s,
            other => panic!("expected a status, got {other:?}"),
        }
    }

    /// The planner part of `c`'s status.
    pub fn planner_status(&mut self, c: &mut Control) -> PlannerStatus {
        self.status(c).planner.expect("planner mode")
    }
}

impl Engine for FakeEngine {
    fn now_ns(&self) -> u64 {
        self.now.get()
    }

    fn start_load(&mut self, path: &Path) {
        assert!(self.loading.is_none(), "one load at a time");
        self.loading = Some(path.to_path_buf());
    }

    fn poll_load(&mut self) -> Option<Result<Plan, LoadError>> {
        if self.hold_load {
            return None;
        }
        let path = self.loading.take()?;
        Some(self.load_plan(&path))
    }

    fn write_table(&mut self, plan: &Plan, at_slot: u64) -> Result<(), String> {
        self.now.set(self.now.get() + self.write_ns);
        if let Some(reason) = &self.fail_write {
            return Err(reason.clone());
        }
        self.writes.push((at_slot, plan.clone()));
        Ok(())
    }

    fn with_planner<R>(
        &mut self,
        f: impl FnOnce(&mut KernelPlanner, u64) -> R,
    ) -> Result<R, String> {
        let p = self.planner.as_mut().ok_or("the fake run has no planner")?;
        let cur = self.clock.slot_at(self.now.get());
        p.advance(cur)
            .unwrap_or_else(|e| panic!("planner step: {e}"));
        Ok(f(p, cur.unwrap_or(0)))
    }

    fn resolve(&mut self, sel: &crate::plan::Selector) -> Result<Vec<u32>, String> {
        match self.threads.get(&format!("{sel:?}")) {
            Some(t) => Ok(t.clone()),
            None => Err("no such process".into()),
        }
    }

    fn thread_cpus(&mut self, tid: u32) -> Result<Vec<u32>, String> {
        Ok(self
            .pins
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| (0..crate::abi::MAX_CPUS).collect()))
    }

    fn next_task_index(&mut self) -> Result<usize, String> {
        Ok(self.next_task)
    }

    fn add_task(
        &mut self,
        class: crate::plan::Class,
        cpu: Option<u32>,
        tids: &[u32],
    ) -> Result<usize, String> {
        if let Some(e) = &self.fail_add {
            return Err(e.clone());
        }
        // a be task without a CPU: u32::MAX
        self.added.push((cpu.unwrap_or(u32::MAX), tids.to_vec()));
        self.classes.push(class);
        self.next_task += 1;
        Ok(self.next_task - 1)
    }

    fn release_task(&mut self, index: usize, cpu: Option<u32>) -> Result<(), String> {
        if let Some(e) = &self.fail_add {
            return Err(e.clone());
        }
        self.released.push((index, cpu));
        Ok(())
    }

    fn note(&mut self, line: &str) {
        self.notes.push(line.into());
    }

    fn warn(&mut self, line: &str) {
        self.warnings.push(line.into());
    }
}

/// The answer of an ok reply.
pub fn answer(reply: Reply) -> Answer {
    match reply {
        Reply::Ok(a) => a,
        Reply::Err(e) => panic!("expected an answer, got the error {e}"),
    }
}

/// The message of an error reply.
pub fn error(reply: Reply) -> String {
    match reply {
        Reply::Err(e) => e,
        Reply::Ok(a) => panic!("expected an error, got {a:?}"),
    }
}

/// The line `scx_tt ctl` sends for `request`.
pub fn line_of(request: &Request) -> String {
    request
        .to_line()
        .unwrap_or_else(|e| panic!("{request:?}: {e}"))
}

pub fn switch_line(path: &str) -> String {
    line_of(&Request::SwitchTable(request::SwitchTable {
        plan: path.into(),
    }))
}

/// Everything a request could change, as text: the status and the switch history.
pub fn state_of(c: &mut Control, e: &mut FakeEngine) -> String {
    format!("{:?} {:?}", e.status(c), c.history())
}

//! `Plan::try_from(RawPlan)`: every rule of `docs/plan-format.md`, checked in three stages.
//!
//! 1. Fields: version, slot_us, cpus, server, each task's name, selector, class, cpu and timing
//!    (an `interface` is computed here, [`check_interface`]), and the BPF scheduler's limits on
//!    them ([`limits`]: tasks, CPU ids, `tids`). All errors of this stage are collected.
//! 2. The frame: given or the lcm of the periods, under the cap; explicit jobs inside it; the
//!    table it gives fits the BPF scheduler.
//! 3. Per managed CPU: partitioning of `tt` tasks without `cpu` (worst-fit decreasing, see
//!    [`partition`]), the jobs of the frame, the table (the explicit one validated, or EDF), and
//!    the capacity intervals with spare capacities (always recomputed).
//!
//! A later stage runs only when the earlier ones found no error: its inputs would be meaningless.

use super::error::{PlanError, PlanErrors, Rule};
use super::limits;
use super::raw::{RawInterface, RawPlan, RawTask};
use super::table::check_table;
use super::timing::{lcm, vm_period_wcet, InterfaceTiming, Timing, WorkloadTask, FRAME_CAP_SLOTS};
use super::{
    Class, Completion, CpuPlan, Plan, QemuSelector, Selector, ServerDesign, Start, Task,
    ThreadSelector,
};
use crate::adaptive::AdaptiveParams;
use crate::planner::interface::{self, Scheduler, Supply, Workload};
use crate::planner::offline::{edf, intervals, Job, Slot};
use serde::Serialize;
use std::cell::Cell;
use std::collections::HashMap;

/// Longest thread name the kernel keeps (`TASK_COMM_LEN` − 1).
const COMM_MAX: usize = 15;
pub(crate) const SLOT_US_MIN: u64 = 100;
pub(crate) const SLOT_US_MAX: u64 = 1_000_000;

/// Error collector.
#[derive(Default)]
pub(super) struct Errors(pub Vec<PlanError>);

impl Errors {
    pub fn push(&mut self, path: impl Into<String>, value: Option<String>, rule: Rule) {
        self.0.push(PlanError::new(path, value, rule));
    }
    /// The error with the offending value rendered as JSON.
    pub fn value<T: Serialize + ?Sized>(&mut self, path: impl Into<String>, v: &T, rule: Rule) {
        self.push(path, Some(json(v)), rule);
    }
    fn finish(self) -> Result<(), PlanErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(PlanErrors(self.0))
        }
    }
}

pub(super) fn json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "?".into())
}

/// A task after stage 1.
struct Checked {
    name: String,
    selector: Selector,
    class: Class,
    cpu: Option<u32>,
    timing: Option<Timing>,
    /// The workload and Γ when the timing is an `interface` (then `timing` is Γ's).
    interface: Option<InterfaceTiming>,
    start: Start,
    completion: Completion,
    adaptive: Option<AdaptiveParams>,
}

/// What stage 1 establishes.
struct Fields {
    slot_us: u64,
    managed: Vec<u32>,
    housekeeping: Vec<u32>,
    tasks: Vec<Checked>,
    server: ServerDesign,
}

impl TryFrom<RawPlan> for Plan {
    type Error = PlanErrors;

    fn try_from(raw: RawPlan) -> Result<Plan, PlanErrors> {
        let f = check_fields(&raw)?;

        let mut errs = Errors::default();
        let frame = check_frame(raw.frame_slots, &f.tasks, &mut errs);
        if frame > 0 {
            limits::check_table_size(f.managed.len(), frame, raw.frame_slots.is_some(), &mut errs);
            limits::check_cpu_slots(f.managed.len(), frame, raw.frame_slots.is_some(), &mut errs);
            // every table task's instances (an upper bound of the jobs the CPUs get)
            let jobs: u128 = f
                .tasks
                .iter()
                .filter(|t| t.class == Class::Tt && t.start == Start::Table)
                .filter_map(|t| t.timing.as_ref())
                .map(|t| t.job_count(frame) as u128)
                .sum();
            limits::check_job_count(jobs, f.managed.len(), &mut errs);
        }
        errs.finish()?;

        let cpu_of = partition(&f.tasks, &f.managed, frame);
        let tasks: Vec<Task> = f
            .tasks
            .iter()
            .zip(&cpu_of)
            .map(|(t, &cpu)| Task {
                name: t.name.clone(),
                selector: t.selector.clone(),
                class: t.class,
                cpu,
                start: t.start,
                completion: t.completion,
                local: t.interface.as_ref().and_then(InterfaceTiming::local),
                interface: t.interface.clone(),
                adaptive: t.adaptive.clone(),
            })
            .collect();
        let mut cpus: Vec<CpuPlan> = f
            .managed
            .iter()
            .zip(cpu_jobs(&f.tasks, &cpu_of, &f.managed, frame))
            .map(|(&cpu, jobs)| CpuPlan {
                cpu,
                jobs,
                table: Vec::new(),
                intervals: Vec::new(),
            })
            .collect();
        match &raw.table {
            Some(table) => {
                let mut errs = Errors::default();
                check_table(table, &tasks, &mut cpus, frame, &mut errs);
                errs.finish()?;
            }
            None => edf_tables(&mut cpus, &tasks, frame)?,
        }
        for c in &mut cpus {
            c.intervals = intervals(&c.jobs, frame);
        }
        Ok(Plan {
            slot_us: f.slot_us,
            frame_slots: frame,
            managed: f.managed,
            housekeeping: f.housekeeping,
            tasks,
            cpus,
            server: f.server,
        })
    }
}

/// Stage 1: every field rule; all errors collected.
fn check_fields(raw: &RawPlan) -> Result<Fields, PlanErrors> {
    let mut errs = Errors::default();
    if let Some(v) = raw.version.filter(|&v| v != 1) {
        errs.value("version", &v, Rule::Version);
    }
    let slot_us = match raw.slot_us {
        None => {
            errs.push("slot_us", None, Rule::Missing);
            None
        }
        Some(s) if !(SLOT_US_MIN..=SLOT_US_MAX).contains(&s) => {
            let rule = Rule::OutOfRange {
                min: SLOT_US_MIN.to_string(),
                max: SLOT_US_MAX.to_string(),
            };
            errs.value("slot_us", &s, rule);
            None
        }
        Some(s) => Some(s),
    };
    let (managed, housekeeping) = check_cpus(raw, &mut errs);
    let server = match raw.server.as_deref().map(str::parse::<ServerDesign>) {
        None => ServerDesign::default(),
        Some(Ok(s)) => s,
        Some(Err(_)) => {
            errs.value("server", raw.server.as_deref().unwrap_or(""), Rule::Server);
            ServerDesign::default()
        }
    };
    let tasks: Vec<Checked> = match &raw.tasks {
        None => {
            errs.push("tasks", None, Rule::Missing);
            Vec::new()
        }
        Some(t) if t.is_empty() => {
            errs.value("tasks", t, Rule::Empty);
            Vec::new()
        }
        Some(t) => {
            limits::check_task_count(t, &mut errs);
            limits::check_thread_count(t, &mut errs);
            let mut seen: HashMap<&str, usize> = HashMap::new();
            let mut out = Vec::new();
            let interface_work = Cell::new(0);
            for (i, task) in t.iter().enumerate() {
                if let Some(name) = task.name.as_deref() {
                    if let Some(first) = seen.insert(name, i) {
                        let rule = Rule::Duplicate(format!("tasks[{first}].name"));
                        errs.value(format!("tasks[{i}].name"), name, rule);
                    }
                }
                let cx = TaskCx {
                    path: format!("tasks[{i}]"),
                    slot_us,
                    managed: managed.as_deref(),
                    table_given: raw.table.is_some(),
                    interface_work: &interface_work,
                };
                out.extend(check_task(task, &cx, &mut errs));
            }
            out
        }
    };
    // An absent or invalid slot_us or CPU list has pushed its error.
    match (slot_us, managed, housekeeping) {
        (Some(slot_us), Some(managed), Some(housekeeping)) if errs.0.is_empty() => Ok(Fields {
            slot_us,
            managed,
            housekeeping,
            tasks,
            server,
        }),
        _ => Err(PlanErrors(errs.0)),
    }
}

/// Stage 3 without a given table: the EDF table of every CPU, or the first miss of each CPU.
fn edf_tables(cpus: &mut [CpuPlan], tasks: &[Task], frame: Slot) -> Result<(), PlanErrors> {
    let mut errs = Errors::default();
    for c in cpus.iter_mut() {
        match edf(&c.jobs, frame) {
            Ok(t) => c.table = t,
            Err(m) => errs.push(
                format!("tasks[{}]", m.task),
                None,
                Rule::Infeasible {
                    task: tasks[m.task].name.clone(),
                    cpu: c.cpu,
                    instance: m.instance,
                    release: c.jobs[m.job].release,
                    deadline: m.deadline,
                    wcet: m.wcet,
                    remaining: m.remaining,
                },
            ),
        }
    }
    errs.finish()
}

type CpuLists = (Option<Vec<u32>>, Option<Vec<u32>>);

fn check_cpus(raw: &RawPlan, errs: &mut Errors) -> CpuLists {
    let Some(cpus) = &raw.cpus else {
        errs.push("cpus", None, Rule::Missing);
        return (None, None);
    };
    let mut list = |name: &str, v: &Option<Vec<u32>>| -> Option<Vec<u32>> {
        let path = format!("cpus.{name}");
        let Some(v) = v else {
            errs.push(path, None, Rule::Missing);
            return None;
        };
        if v.is_empty() {
            errs.value(path, v, Rule::Empty);
            return None;
        }
        let mut ok = limits::check_cpu_ids(&path, v, errs);
        for (i, c) in v.iter().enumerate() {
            if let Some(first) = v[..i].iter().position(|x| x == c) {
                errs.value(
                    format!("{path}[{i}]"),
                    c,
                    Rule::Duplicate(format!("{path}[{first}]")),
                );
                ok = false;
            }
        }
        ok.then(|| v.clone())
    };
    let managed = list("managed", &cpus.managed);
    let housekeeping = list("housekeeping", &cpus.housekeeping);
    if let (Some(m), Some(h)) = (&managed, &housekeeping) {
        for (i, c) in h.iter().enumerate() {
            if m.contains(c) {
                errs.value(
                    format!("cpus.housekeeping[{i}]"),
                    c,
                    Rule::ManagedAndHousekeeping,
                );
            }
        }
    }
    (managed, housekeeping)
}

struct TaskCx<'a> {
    path: String,
    slot_us: Option<u64>,
    managed: Option<&'a [u32]>,
    table_given: bool,
    /// Test-point evaluations the plan's interface searches have cost so far
    /// ([`INTERFACE_WORK_CAP`]).
    interface_work: &'a Cell<u64>,
}

/// Test-point evaluations of all the interface searches of one plan together: one search's cap
/// (`interface::MAX_EVALUATIONS`, 1-2 s), so that a plan of many costly workloads cannot hold
/// validation (and a run loop switching tables) for minutes. A search starts only below it,
/// so a plan costs at most about two searches' worth.
const INTERFACE_WORK_CAP: u64 = interface::MAX_EVALUATIONS;

/// What a refused search is charged: all of the cap when it hit the cap, else the RM test-point
/// cap twice (such a search stops at the dedicated-CPU test or earlier, tens of ms at most).
const FAILED_SEARCH_COST: u64 = 2 * interface::MAX_TEST_POINTS;

fn check_task(t: &RawTask, cx: &TaskCx, errs: &mut Errors) -> Option<Checked> {
    let p = &cx.path;
    let name = match t.name.as_deref() {
        None => {
            errs.push(format!("{p}.name"), None, Rule::Missing);
            None
        }
        Some("") => {
            errs.value(format!("{p}.name"), "", Rule::Empty);
            None
        }
        Some(n) => Some(n.to_string()),
    };
    let selector = check_selector(t, p, errs);
    let class = match t.class.as_deref() {
        None => {
            errs.push(format!("{p}.class"), None, Rule::Missing);
            None
        }
        Some("tt") => Some(Class::Tt),
        Some("be") => Some(Class::Be),
        Some("adaptive") => Some(Class::Adaptive),
        Some(other) => {
            errs.value(format!("{p}.class"), other, Rule::Class);
            None
        }
    };
    if let (Some(cpu), Some(managed)) = (t.cpu, cx.managed) {
        if !managed.contains(&cpu) {
            errs.value(format!("{p}.cpu"), &cpu, Rule::NotManaged);
        }
    }
    let timing = match class {
        Some(Class::Tt) => {
            if cx.table_given && t.cpu.is_none() {
                errs.push(
                    format!("{p}.cpu"),
                    None,
                    Rule::MissingWhen("for a tt task when a table is given"),
                );
            }
            Some(check_timing(t, cx, errs))
        }
        Some(Class::Be) => {
            for (field, set) in timing_fields(t) {
                if set {
                    errs.push(format!("{p}.{field}"), None, Rule::BeTiming);
                }
            }
            None
        }
        Some(Class::Adaptive) => {
            for (field, set) in timing_fields(t) {
                if set {
                    errs.push(format!("{p}.{field}"), None, Rule::AdaptiveTiming);
                }
            }
            if t.cpu.is_none() {
                errs.push(
                    format!("{p}.cpu"),
                    None,
                    Rule::MissingWhen("for an adaptive task (the CPU of its reservation)"),
                );
            }
            None
        }
        None => None,
    };
    let adaptive = check_adaptive(t, cx, class, errs);
    let (timing, interface) = match timing {
        Some(t) => {
            let (timing, interface) = t?;
            (Some(timing), interface)
        }
        None => (None, None),
    };
    let start = check_start(t, cx, class, timing.as_ref(), errs)?;
    let completion = check_completion(t, &cx.path, class, selector.as_ref(), errs)?;
    Some(Checked {
        name: name?,
        selector: selector?,
        class: class?,
        cpu: t.cpu,
        timing,
        interface,
        start,
        completion,
        adaptive: adaptive?,
    })
}

/// `adaptive`: an adaptive task's optional bounds ([`crate::adaptive::bounds`]), on that class
/// only. `Some(None)` for another class without them; `None` (with errors pushed) when invalid.
fn check_adaptive(
    t: &RawTask,
    cx: &TaskCx,
    class: Option<Class>,
    errs: &mut Errors,
) -> Option<Option<AdaptiveParams>> {
    let path = format!("{}.adaptive", cx.path);
    match (class, &t.adaptive) {
        (Some(Class::Adaptive), bounds) => {
            match bounds.clone().unwrap_or_default().params(cx.slot_us) {
                Ok(params) => Some(Some(params)),
                Err(e) => {
                    errs.push(
                        format!("{path}.{}", e.field),
                        Some(e.value),
                        Rule::Adaptive(e.rule),
                    );
                    None
                }
            }
        }
        (_, Some(_)) => {
            errs.push(path, None, Rule::AdaptiveNotAdaptive);
            None
        }
        (_, None) => Some(None),
    }
}

/// `completion`: "yield", "block" or "none" on a tt task; absent, the default of its selector
/// ([`Completion::default_for`]). A be task has none (and may not name one). `None` (with
/// errors pushed) when invalid.
fn check_completion(
    t: &RawTask,
    p: &str,
    class: Option<Class>,
    selector: Option<&Selector>,
    errs: &mut Errors,
) -> Option<Completion> {
    let path = format!("{p}.completion");
    let given = match t.completion.as_deref() {
        None => None,
        Some("yield") => Some(Completion::Yield),
        Some("block") => Some(Completion::Block),
        Some("none") => Some(Completion::None),
        Some(other) => {
            errs.value(path, other, Rule::Completion);
            return None;
        }
    };
    match (class, given) {
        (Some(Class::Be), Some(_)) => {
            errs.value(
                path,
                t.completion.as_deref().unwrap_or(""),
                Rule::CompletionNotTt,
            );
            None
        }
        (Some(Class::Be), None) => Some(Completion::None),
        (_, Some(c)) => Some(c),
        (_, None) => Some(selector.map_or(Completion::None, Completion::default_for)),
    }
}

/// `start`: "table" (the default) or "admitted" on a tt task with an explicit `cpu` and
/// implicit-deadline periodic (or VM) timing, in a plan without an explicit table. `None` (with
/// errors pushed) when invalid.
fn check_start(
    t: &RawTask,
    cx: &TaskCx,
    class: Option<Class>,
    timing: Option<&Timing>,
    errs: &mut Errors,
) -> Option<Start> {
    let path = format!("{}.start", cx.path);
    let value = match t.start.as_deref() {
        None | Some("table") => return Some(Start::Table),
        Some("admitted") => "admitted",
        Some(other) => {
            errs.value(path, other, Rule::Start);
            return None;
        }
    };
    let before = errs.0.len();
    if matches!(class, Some(Class::Be | Class::Adaptive)) {
        errs.value(path.as_str(), value, Rule::StartNotTt);
    }
    if cx.table_given {
        errs.value(path.as_str(), value, Rule::StartWithTable);
    }
    if class == Some(Class::Tt) && t.cpu.is_none() {
        errs.push(
            format!("{}.cpu", cx.path),
            None,
            Rule::MissingWhen("for a tt task with start \"admitted\""),
        );
    }
    if class == Some(Class::Tt) && t.jobs.is_some() {
        errs.value(path.as_str(), value, Rule::StartTiming);
    }
    let start = match timing {
        Some(&Timing::Periodic {
            period,
            wcet,
            offset: 0,
            deadline,
        }) if deadline == period => Some(Start::Admitted { period, wcet }),
        Some(Timing::Periodic { .. }) => {
            errs.value(path.as_str(), value, Rule::StartTiming);
            None
        }
        // jobs (reported above) or invalid timing (reported by check_timing)
        _ => None,
    };
    start.filter(|_| errs.0.len() == before)
}

fn timing_fields(t: &RawTask) -> [(&'static str, bool); 8] {
    [
        ("period", t.period.is_some()),
        ("wcet", t.wcet.is_some()),
        ("offset", t.offset.is_some()),
        ("deadline", t.deadline.is_some()),
        ("utilization", t.utilization.is_some()),
        ("latency_us", t.latency_us.is_some()),
        ("jobs", t.jobs.is_some()),
        ("interface", t.interface.is_some()),
    ]
}

fn check_selector(t: &RawTask, p: &str, errs: &mut Errors) -> Option<Selector> {
    let found: Vec<&str> = [
        ("pid", t.pid.is_some()),
        ("tids", t.tids.is_some()),
        ("comm", t.comm.is_some()),
        ("cgroup", t.cgroup.is_some()),
        ("qemu", t.qemu.is_some()),
        ("cmd", t.cmd.is_some()),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(n, _)| *n)
    .collect();
    if found.len() != 1 {
        let what = if found.is_empty() {
            "none".to_string()
        } else {
            found.join(", ")
        };
        errs.push(p, None, Rule::SelectorCount(what));
        return None;
    }
    let before = errs.0.len();
    let sel = if let Some(pid) = t.pid {
        if pid == 0 {
            errs.value(format!("{p}.pid"), &pid, Rule::Zero);
        }
        Selector::Pid(pid)
    } else if let Some(tids) = &t.tids {
        if tids.is_empty() {
            errs.value(format!("{p}.tids"), tids, Rule::Empty);
        }
        for (i, &tid) in tids.iter().enumerate() {
            if tid == 0 {
                errs.value(format!("{p}.tids[{i}]"), &tid, Rule::Zero);
            }
        }
        Selector::Tids(tids.clone())
    } else if let Some(comm) = &t.comm {
        if comm.is_empty() {
            errs.value(format!("{p}.comm"), comm, Rule::Empty);
        } else if comm.len() > COMM_MAX {
            errs.value(format!("{p}.comm"), comm, Rule::CommTooLong);
        }
        Selector::Comm(comm.clone())
    } else if let Some(cg) = &t.cgroup {
        if !cg.starts_with('/') {
            errs.value(format!("{p}.cgroup"), cg, Rule::CgroupNotAbsolute);
        }
        Selector::Cgroup(cg.clone())
    } else if let Some(q) = &t.qemu {
        let qp = format!("{p}.qemu");
        match (q.pid, &q.name) {
            (Some(0), None) => {
                errs.value(format!("{qp}.pid"), &0, Rule::Zero);
                Selector::Qemu(QemuSelector::Pid(0))
            }
            (Some(pid), None) => Selector::Qemu(QemuSelector::Pid(pid)),
            (None, Some(n)) => {
                if n.is_empty() {
                    errs.value(format!("{qp}.name"), n, Rule::Empty);
                }
                Selector::Qemu(QemuSelector::Name(n.clone()))
            }
            (pid, name) => {
                let n = [("pid", pid.is_some()), ("name", name.is_some())]
                    .iter()
                    .filter(|x| x.1)
                    .map(|x| x.0)
                    .collect::<Vec<_>>();
                let what = if n.is_empty() {
                    "none".into()
                } else {
                    n.join(", ")
                };
                errs.value(qp, q, Rule::QemuSelector(what));
                return None;
            }
        }
    } else if let Some(cmd) = &t.cmd {
        if cmd.is_empty() {
            errs.value(format!("{p}.cmd"), cmd, Rule::Empty);
        } else if cmd[0].is_empty() {
            errs.value(format!("{p}.cmd[0]"), "", Rule::Empty);
        }
        Selector::Cmd(cmd.clone())
    } else {
        return None;
    };
    (errs.0.len() == before).then_some(sel)
}

/// The single timing model of a `tt` task, with the workload and Γ when it is an `interface`;
/// `None` (with errors pushed) when invalid.
fn check_timing(
    t: &RawTask,
    cx: &TaskCx,
    errs: &mut Errors,
) -> Option<(Timing, Option<InterfaceTiming>)> {
    let p = &cx.path;
    let periodic =
        t.period.is_some() || t.wcet.is_some() || t.offset.is_some() || t.deadline.is_some();
    let vm = t.utilization.is_some() || t.latency_us.is_some();
    let jobs = t.jobs.is_some();
    let models: Vec<&str> = [
        (periodic, "period+wcet"),
        (vm, "utilization+latency_us"),
        (jobs, "jobs"),
        (t.interface.is_some(), "interface"),
    ]
    .iter()
    .filter(|m| m.0)
    .map(|m| m.1)
    .collect();
    if models.len() != 1 {
        let what = if models.is_empty() {
            "none".into()
        } else {
            models.join(" and ")
        };
        errs.push(p.as_str(), None, Rule::TimingCount(what));
        return None;
    }
    let before = errs.0.len();
    let timing = if periodic {
        check_periodic(t, p, errs).map(|t| (t, None))
    } else if vm {
        check_vm(t, cx, errs).map(|t| (t, None))
    } else if jobs {
        check_jobs(t.jobs.as_deref().unwrap_or_default(), p, errs).map(|t| (t, None))
    } else {
        let raw = t.interface.as_ref()?;
        check_interface(raw, t, cx, errs).map(|i| (i.timing(), Some(i)))
    };
    timing.filter(|_| errs.0.len() == before)
}

/// `interface` timing: the workload's fields (every error collected), its thread names, then
/// the optimal interface Γ of `planner::interface`, whose refusals (U_W > 1, not RM-schedulable,
/// not harmonic under aligned supply, a search cap) are errors at `{p}.interface`, as is a
/// search not started because the plan's searches reached [`INTERFACE_WORK_CAP`].
fn check_interface(
    raw: &RawInterface,
    t: &RawTask,
    cx: &TaskCx,
    errs: &mut Errors,
) -> Option<InterfaceTiming> {
    let ip = format!("{}.interface", cx.path);
    let before = errs.0.len();
    let scheduler = match raw.scheduler.as_deref() {
        None => {
            errs.push(format!("{ip}.scheduler"), None, Rule::Missing);
            None
        }
        Some(s) => match s.parse::<Scheduler>() {
            Ok(s) => Some(s),
            Err(_) => {
                errs.value(format!("{ip}.scheduler"), s, Rule::Scheduler);
                None
            }
        },
    };
    let supply = match raw.supply.as_deref() {
        None => Some(Supply::General),
        Some(s) => match s.parse::<Supply>() {
            Ok(s) => Some(s),
            Err(_) => {
                errs.value(format!("{ip}.supply"), s, Rule::Supply);
                None
            }
        },
    };
    let tp = format!("{ip}.tasks");
    let workload = match raw.tasks.as_deref() {
        None => {
            errs.push(tp, None, Rule::Missing);
            None
        }
        Some(w) if w.is_empty() => {
            errs.value(tp, w, Rule::Empty);
            None
        }
        Some(w) if w.len() > interface::MAX_TASKS => {
            let rule = Rule::InterfaceTooManyTasks {
                count: w.len(),
                limit: interface::MAX_TASKS,
            };
            errs.push(tp, None, rule);
            None
        }
        Some(w) => check_workload(w, t, &tp, errs),
    };
    if errs.0.len() != before {
        return None;
    }
    let (scheduler, supply, workload) = (scheduler?, supply?, workload?);
    let tasks: Vec<interface::Task> = workload
        .iter()
        .map(|w| interface::Task {
            period: w.period,
            wcet: w.wcet,
        })
        .collect();
    let w = match Workload::new(&tasks) {
        Ok(w) => w,
        Err(e) => {
            errs.push(ip, None, Rule::Interface(e));
            return None;
        }
    };
    let spent = cx.interface_work.get();
    if spent >= INTERFACE_WORK_CAP {
        let rule = Rule::InterfaceWorkCap {
            spent,
            cap: INTERFACE_WORK_CAP,
        };
        errs.push(ip, None, rule);
        return None;
    }
    let result = interface::optimal_interface(&w, scheduler, supply);
    let cost = match &result {
        Ok(i) => i.evaluations,
        Err(interface::InterfaceError::WorkCap { .. }) => interface::MAX_EVALUATIONS,
        Err(_) => FAILED_SEARCH_COST,
    };
    cx.interface_work.set(spent.saturating_add(cost));
    match result {
        Ok(result) => {
            let period = result.resource.period;
            if let Some(b) = raw.budget.filter(|&b| b == 0 || b > period) {
                let rule = Rule::OutOfRange {
                    min: "1".into(),
                    max: format!("{period} (the interface's period Π)"),
                };
                errs.value(format!("{ip}.budget"), &b, rule);
                return None;
            }
            Some(InterfaceTiming {
                scheduler,
                supply,
                workload,
                result,
                budget: raw.budget,
            })
        }
        Err(e) => {
            errs.push(ip, None, Rule::Interface(e));
            None
        }
    }
}

/// The tasks of an interface workload (1 ..= `interface::MAX_TASKS` of them): period and wcet
/// (1 ≤ wcet ≤ period ≤ `interface::MAX_PERIOD_SLOTS`), and the thread each names (`thread`, a
/// comm of 1 to 15 bytes, or `tid` ≥ 1; unique; every task or none; none in a qemu task; a
/// `tid` among the task's `tids` when it selects by `tids`). Every error is collected.
fn check_workload(
    w: &[super::raw::RawInterfaceTask],
    t: &RawTask,
    tp: &str,
    errs: &mut Errors,
) -> Option<Vec<WorkloadTask>> {
    let before = errs.0.len();
    let mut out = Vec::with_capacity(w.len());
    let mut comms: HashMap<&str, usize> = HashMap::new();
    let mut tids: HashMap<u32, usize> = HashMap::new();
    let mut named: Option<usize> = None;
    for (j, task) in w.iter().enumerate() {
        let jp = format!("{tp}[{j}]");
        for (field, v) in [("period", task.period), ("wcet", task.wcet)] {
            if v.is_none() {
                errs.push(format!("{jp}.{field}"), None, Rule::Missing);
            }
        }
        let period = match task.period {
            Some(0) => {
                errs.value(format!("{jp}.period"), &0, Rule::Zero);
                None
            }
            Some(x) if x > interface::MAX_PERIOD_SLOTS => {
                let rule = Rule::PeriodAboveCap {
                    cap: interface::MAX_PERIOD_SLOTS,
                };
                errs.value(format!("{jp}.period"), &x, rule);
                None
            }
            x => x,
        };
        match (task.wcet, period) {
            (Some(0), _) => errs.value(format!("{jp}.wcet"), &0, Rule::Zero),
            (Some(e), Some(p)) if e > p => errs.value(
                format!("{jp}.wcet"),
                &e,
                Rule::WcetExceedsPeriod { period: p },
            ),
            _ => {}
        }
        let thread = match (&task.thread, task.tid) {
            (Some(_), Some(_)) => {
                errs.push(jp.as_str(), None, Rule::ThreadAndTid);
                None
            }
            (Some(comm), None) => {
                let path = format!("{jp}.thread");
                if comm.is_empty() {
                    errs.value(path.as_str(), comm, Rule::Empty);
                } else if comm.len() > COMM_MAX {
                    errs.value(path.as_str(), comm, Rule::CommTooLong);
                }
                if let Some(first) = comms.insert(comm, j) {
                    let rule = Rule::Duplicate(format!("{tp}[{first}].thread"));
                    errs.value(path.as_str(), comm, rule);
                }
                Some((path, ThreadSelector::Comm(comm.clone())))
            }
            (None, Some(tid)) => {
                let path = format!("{jp}.tid");
                if tid == 0 {
                    errs.value(path.as_str(), &tid, Rule::Zero);
                }
                if let Some(first) = tids.insert(tid, j) {
                    let rule = Rule::Duplicate(format!("{tp}[{first}].tid"));
                    errs.value(path.as_str(), &tid, rule);
                }
                if let Some(list) = t.tids.as_ref().filter(|l| tid != 0 && !l.contains(&tid)) {
                    let rule = Rule::TidNotSelected { tids: json(list) };
                    errs.value(path.as_str(), &tid, rule);
                }
                Some((path, ThreadSelector::Tid(tid)))
            }
            (None, None) => None,
        };
        if let Some((path, sel)) = &thread {
            named.get_or_insert(j);
            if t.qemu.is_some() {
                let v = match sel {
                    ThreadSelector::Comm(c) => json(c),
                    ThreadSelector::Tid(x) => json(x),
                };
                errs.push(path.as_str(), Some(v), Rule::VmThread);
            }
        }
        if let (Some(period), Some(wcet)) = (period, task.wcet) {
            out.push(WorkloadTask {
                period,
                wcet,
                thread: thread.map(|(_, sel)| sel),
            });
        }
    }
    // Either every task names its thread or none does (a qemu task's names are refused above).
    if let (Some(first), None) = (named, t.qemu.as_ref()) {
        for (j, task) in w.iter().enumerate() {
            if task.thread.is_none() && task.tid.is_none() {
                let named = format!("{tp}[{first}]");
                errs.push(format!("{tp}[{j}]"), None, Rule::ThreadMix { named });
            }
        }
    }
    (errs.0.len() == before).then_some(out)
}

fn check_periodic(t: &RawTask, p: &str, errs: &mut Errors) -> Option<Timing> {
    let need = Rule::MissingWhen("for period+wcet timing");
    if t.period.is_none() {
        errs.push(format!("{p}.period"), None, need.clone());
    }
    if t.wcet.is_none() {
        errs.push(format!("{p}.wcet"), None, need);
    }
    let (period, wcet) = (t.period?, t.wcet?);
    let offset = t.offset.unwrap_or(0);
    let deadline = t.deadline.unwrap_or(period);
    let mut ok = true;
    for (field, v) in [("period", period), ("wcet", wcet), ("deadline", deadline)] {
        if v == 0 {
            errs.value(format!("{p}.{field}"), &v, Rule::Zero);
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    if wcet > deadline {
        errs.value(
            format!("{p}.wcet"),
            &wcet,
            Rule::WcetExceedsWindow { window: deadline },
        );
    }
    if offset.saturating_add(deadline) > period {
        let field = if t.deadline.is_some() {
            "deadline"
        } else {
            "offset"
        };
        let v = if t.deadline.is_some() {
            deadline
        } else {
            offset
        };
        errs.value(
            format!("{p}.{field}"),
            &v,
            Rule::OffsetDeadlineExceedsPeriod {
                sum: offset.saturating_add(deadline),
                period,
            },
        );
    }
    Some(Timing::Periodic {
        period,
        wcet,
        offset,
        deadline,
    })
}

fn check_vm(t: &RawTask, cx: &TaskCx, errs: &mut Errors) -> Option<Timing> {
    let p = &cx.path;
    let need = Rule::MissingWhen("for utilization+latency_us timing");
    if t.utilization.is_none() {
        errs.push(format!("{p}.utilization"), None, need.clone());
    }
    if t.latency_us.is_none() {
        errs.push(format!("{p}.latency_us"), None, need);
    }
    let (u, latency_us) = (t.utilization?, t.latency_us?);
    if !(u > 0.0 && u < 1.0) {
        errs.value(
            format!("{p}.utilization"),
            &u,
            Rule::OutOfRange {
                min: "0 (exclusive)".into(),
                max: "1 (exclusive)".into(),
            },
        );
        return None;
    }
    if latency_us == 0 {
        errs.value(format!("{p}.latency_us"), &latency_us, Rule::Zero);
        return None;
    }
    let slot_us = cx.slot_us?; // an invalid slot_us is reported on its own
    match vm_period_wcet(u, latency_us as f64 / slot_us as f64) {
        Ok((period, wcet)) => Some(Timing::Periodic {
            period,
            wcet,
            offset: 0,
            deadline: period,
        }),
        Err(rule) => {
            errs.value(format!("{p}.latency_us"), &latency_us, rule);
            None
        }
    }
}

fn check_jobs(jobs: &[super::raw::RawJob], p: &str, errs: &mut Errors) -> Option<Timing> {
    if jobs.is_empty() {
        errs.value(format!("{p}.jobs"), jobs, Rule::Empty);
        return None;
    }
    let mut out = Vec::new();
    let mut prev_deadline: Option<Slot> = None;
    for (j, job) in jobs.iter().enumerate() {
        let jp = format!("{p}.jobs[{j}]");
        for (field, v) in [
            ("release", job.release),
            ("deadline", job.deadline),
            ("wcet", job.wcet),
        ] {
            if v.is_none() {
                errs.push(format!("{jp}.{field}"), None, Rule::Missing);
            }
        }
        let (Some(r), Some(d), Some(w)) = (job.release, job.deadline, job.wcet) else {
            continue;
        };
        if r >= d {
            errs.value(format!("{jp}.release"), &r, Rule::JobWindow { deadline: d });
            continue;
        }
        if w == 0 {
            errs.value(format!("{jp}.wcet"), &w, Rule::Zero);
        } else if w > d - r {
            errs.value(
                format!("{jp}.wcet"),
                &w,
                Rule::WcetExceedsWindow { window: d - r },
            );
        }
        if prev_deadline.is_some_and(|pd| r < pd) {
            errs.value(jp, job, Rule::JobsOverlap);
        }
        prev_deadline = Some(d);
        out.push((r, d, w));
    }
    Some(Timing::Jobs(out))
}

fn check_frame(given: Option<Slot>, tasks: &[Checked], errs: &mut Errors) -> Slot {
    let periods: Vec<(Slot, &str)> = tasks
        .iter()
        .filter_map(|t| Some((t.timing.as_ref()?.period()?, t.name.as_str())))
        .collect();
    let frame = match given {
        Some(0) => {
            errs.value("frame_slots", &0, Rule::Zero);
            return 0;
        }
        Some(f) if f > FRAME_CAP_SLOTS => {
            errs.value(
                "frame_slots",
                &f,
                Rule::FrameTooLarge {
                    what: "the frame",
                    frame: f as u128,
                    cap: FRAME_CAP_SLOTS,
                },
            );
            return 0;
        }
        Some(f) => {
            for &(period, name) in &periods {
                if f % period != 0 {
                    errs.value(
                        "frame_slots",
                        &f,
                        Rule::FrameNotMultiple {
                            period,
                            task: name.to_string(),
                        },
                    );
                }
            }
            f
        }
        None if periods.is_empty() => {
            errs.push("frame_slots", None, Rule::FrameUnknown);
            return 0;
        }
        None => match lcm(periods.iter().map(|p| p.0), FRAME_CAP_SLOTS) {
            Ok(f) => f,
            Err(reached) => {
                errs.push(
                    "frame_slots",
                    None,
                    Rule::FrameTooLarge {
                        what: "the lcm of the periods",
                        frame: reached,
                        cap: FRAME_CAP_SLOTS,
                    },
                );
                return 0;
            }
        },
    };
    for (i, t) in tasks.iter().enumerate() {
        if let Some(Timing::Jobs(jobs)) = &t.timing {
            for (j, &(_, d, _)) in jobs.iter().enumerate() {
                if d > frame {
                    errs.value(
                        format!("tasks[{i}].jobs[{j}].deadline"),
                        &d,
                        Rule::OutsideFrame { frame },
                    );
                }
            }
        }
    }
    frame
}

/// The CPU of every task: the given `cpu`, or for a `tt` task without one, worst-fit decreasing
/// by utilization: tasks in decreasing order of demand per frame (ties: lower task index) go to
/// the managed CPU with the least demand so far (ties: earlier in `cpus.managed`). Worst fit
/// spreads load evenly, which leaves every CPU with similar slack; slot shifting turns that slack
/// into admission headroom for aperiodic jobs and new VMs on any CPU. Demands are integers (slots
/// per frame), so the result is exact and deterministic. `be` tasks keep their optional `cpu`.
fn partition(tasks: &[Checked], managed: &[u32], frame: Slot) -> Vec<Option<u32>> {
    let demand = |t: &Checked| t.timing.as_ref().map_or(0, |x| x.demand(frame));
    let mut load: Vec<u64> = vec![0; managed.len()];
    let mut cpu_of: Vec<Option<u32>> = tasks.iter().map(|t| t.cpu).collect();
    for t in tasks
        .iter()
        .filter(|t| t.class == Class::Tt && t.start.is_table())
    {
        if let Some(pos) = t.cpu.and_then(|c| managed.iter().position(|&m| m == c)) {
            load[pos] += demand(t);
        }
    }
    let mut free: Vec<usize> = (0..tasks.len())
        .filter(|&i| tasks[i].class == Class::Tt && tasks[i].cpu.is_none())
        .collect();
    free.sort_by_key(|&i| (std::cmp::Reverse(demand(&tasks[i])), i));
    for i in free {
        let pos = (0..managed.len())
            .min_by_key(|&p| (load[p], p))
            .unwrap_or_default();
        load[pos] += demand(&tasks[i]);
        cpu_of[i] = Some(managed[pos]);
    }
    cpu_of
}

/// The jobs of the frame per managed CPU: tasks in plan order, instances in time order. Tasks
/// with `start: "admitted"` have none (they join the planner's template when admitted).
fn cpu_jobs(
    tasks: &[Checked],
    cpu_of: &[Option<u32>],
    managed: &[u32],
    frame: Slot,
) -> Vec<Vec<Job>> {
    let pos: HashMap<u32, usize> = managed.iter().enumerate().map(|(p, &c)| (c, p)).collect();
    let mut on: Vec<Vec<usize>> = vec![Vec::new(); managed.len()];
    for (i, t) in tasks.iter().enumerate() {
        if let (Class::Tt, Start::Table, Some(p)) =
            (t.class, t.start, cpu_of[i].and_then(|c| pos.get(&c)))
        {
            on[*p].push(i);
        }
    }
    on.iter()
        .map(|tasks_here| {
            let timings = tasks_here
                .iter()
                .filter_map(|&i| Some((i, tasks[i].timing.as_ref()?)));
            let count = timings.clone().map(|(_, t)| t.job_count(frame)).sum();
            let mut jobs = Vec::with_capacity(count);
            for (i, timing) in timings {
                for (k, (release, deadline, wcet)) in timing.jobs(frame).enumerate() {
                    jobs.push(Job {
                        task: i,
                        instance: k as u32,
                        release,
                        deadline,
                        wcet,
                    });
                }
            }
            jobs
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::plan::{from_str, Start};

    /// One managed CPU 1; tasks a (in the table) and `extra` (the task under test).
    fn plan_with(extra: &str, table: bool) -> String {
        let table = if table {
            r#", "table": [{ "cpu": 1, "ranges": [{ "start": 0, "end": 2, "task": "a" }] }]"#
        } else {
            ""
        };
        format!(
            r#"{{ "slot_us": 10000, "cpus": {{ "managed": [1], "housekeeping": [0] }},
              "tasks": [ {{ "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 10, "wcet": 2 }},
                         {extra} ]{table} }}"#
        )
    }

    fn errors(text: &str) -> Vec<String> {
        match from_str(text) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn an_admitted_task_is_loaded_but_owns_no_job_slot_or_interval() {
        let text = plan_with(
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 15, "start": "admitted" }"#,
            false,
        );
        let plan = from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        // its period still shapes the frame, and it would not fit next to a (the point of
        // admitting it later: the table does not have to)
        assert_eq!(plan.frame_slots, 20);
        assert_eq!(
            plan.tasks[1].start,
            Start::Admitted {
                period: 20,
                wcet: 15
            }
        );
        assert_eq!(plan.tasks[1].cpu, Some(1));
        assert_eq!(plan.tasks[0].start, Start::Table);
        let c = &plan.cpus[0];
        assert!(c.jobs.iter().all(|j| j.task == 0), "{:?}", c.jobs);
        assert_eq!(c.jobs.len(), 2);
        let busy: u64 = c.table.iter().map(|r| r.end - r.start).sum();
        assert_eq!(busy, 4);
        let sc: i64 = c.intervals.iter().map(|iv| iv.sc.max(0)).sum();
        assert_eq!(sc, 16, "{:?}", c.intervals);
    }

    #[test]
    fn vm_timing_becomes_the_admitted_period_and_wcet() {
        let text = plan_with(
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "utilization": 0.25, "latency_us": 150000, "start": "admitted" }"#,
            false,
        );
        let plan = from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        let Start::Admitted { period, wcet } = plan.tasks[1].start else {
            panic!("{:?}", plan.tasks[1].start);
        };
        // L/(2(1-U)) = 15 / 1.5 = 10 slots; ⌈0.25 · 10⌉ = 3
        assert_eq!((period, wcet), (10, 3));
    }

    #[test]
    fn start_table_is_the_default_and_equal_to_absent() {
        let with = plan_with(
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "start": "table" }"#,
            false,
        );
        let without = plan_with(
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3 }"#,
            false,
        );
        let (a, b) = (
            from_str(&with).expect("valid"),
            from_str(&without).expect("valid"),
        );
        assert_eq!(a.cpus[0].table, b.cpus[0].table);
        assert_eq!(a.cpus[0].jobs.len(), 3);
        assert_eq!(a.tasks[1].start, Start::Table);
    }

    #[test]
    fn bad_starts_name_the_field_the_value_and_the_rule() {
        let cases: &[(&str, bool, &str)] = &[
            (
                r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "start": "later" }"#,
                false,
                r#"tasks[1].start = "later": must be "table" or "admitted""#,
            ),
            (
                r#"{ "name": "v", "pid": 11, "class": "be", "start": "admitted" }"#,
                false,
                r#"tasks[1].start = "admitted": is only for tt tasks"#,
            ),
            (
                r#"{ "name": "v", "pid": 11, "class": "tt", "period": 20, "wcet": 3, "start": "admitted" }"#,
                false,
                r#"tasks[1].cpu: is required for a tt task with start "admitted""#,
            ),
            (
                r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "jobs": [{ "release": 0, "deadline": 5, "wcet": 1 }], "start": "admitted" }"#,
                false,
                r#"tasks[1].start = "admitted": start = "admitted" needs period+wcet, utilization+latency_us or interface timing"#,
            ),
            (
                r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "deadline": 10, "start": "admitted" }"#,
                false,
                "with the deadline equal to the period and no offset",
            ),
            (
                r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "offset": 1, "deadline": 19, "start": "admitted" }"#,
                false,
                "with the deadline equal to the period and no offset",
            ),
            (
                r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "start": "admitted" }"#,
                true,
                r#"tasks[1].start = "admitted": start = "admitted" cannot be combined with an explicit table"#,
            ),
        ];
        for (task, table, want) in cases {
            let errs = errors(&plan_with(task, *table));
            assert!(
                errs.iter().any(|e| e.contains(want)),
                "{task}: want {want:?}, got {errs:?}"
            );
        }
    }
    #[test]
    fn completion_defaults_to_yield_but_none_for_qemu_vcpus_and_be_tasks() {
        use crate::plan::Completion;
        let text = plan_with(
            r#"{ "name": "vm", "qemu": { "name": "g" }, "class": "tt", "cpu": 1, "period": 10, "wcet": 2 },
               { "name": "b", "comm": "b", "class": "be" }"#,
            false,
        );
        let plan = from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<Completion> = plan.tasks.iter().map(|t| t.completion).collect();
        // a (pid): yield; vm (qemu): none; b (be): none
        assert_eq!(
            got,
            vec![Completion::Yield, Completion::None, Completion::None]
        );
    }

    #[test]
    fn an_explicit_completion_wins_over_the_default() {
        use crate::plan::Completion;
        for (value, want) in [
            ("yield", Completion::Yield),
            ("block", Completion::Block),
            ("none", Completion::None),
        ] {
            let text = plan_with(
                &format!(
                    r#"{{ "name": "vm", "qemu": {{ "pid": 5 }}, "class": "tt", "cpu": 1, "period": 10, "wcet": 2, "completion": "{value}" }}"#
                ),
                false,
            );
            let plan = from_str(&text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(plan.tasks[1].completion, want, "{value}");
        }
    }

    #[test]
    fn bad_completions_name_the_field_the_value_and_the_rule() {
        let cases = [
            (
                r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 10, "wcet": 2, "completion": "exit" }"#,
                r#"tasks[1].completion = "exit": must be "yield", "block" or "none""#,
            ),
            (
                r#"{ "name": "v", "pid": 11, "class": "be", "completion": "yield" }"#,
                r#"tasks[1].completion = "yield": is only for tt tasks (a be task has no jobs)"#,
            ),
        ];
        for (task, want) in cases {
            let errs = errors(&plan_with(task, false));
            assert!(
                errs.iter().any(|e| e.contains(want)),
                "{task}: want {want:?}, got {errs:?}"
            );
        }
    }
}

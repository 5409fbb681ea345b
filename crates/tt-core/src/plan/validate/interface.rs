//! Stage 1: `interface` timing: the workload's fields and thread names, then the search for the
//! optimal interface Γ, under a work cap shared by all the searches of one plan.

use super::task::TaskCx;
use super::{json, Errors, COMM_MAX};
use crate::plan::error::Rule;
use crate::plan::raw::{RawInterface, RawInterfaceTask, RawTask};
use crate::plan::timing::{InterfaceTiming, WorkloadTask};
use crate::plan::ThreadSelector;
use crate::planner::interface::{self, Interface, Scheduler, Supply, Workload};
use std::collections::HashMap;

/// Test-point evaluations of all the interface searches of one plan together: one search's cap
/// (`interface::MAX_EVALUATIONS`, 1-2 s), so that a plan of many costly workloads cannot hold
/// validation (and a run loop switching tables) for minutes. A search starts only below it,
/// so a plan costs at most about two searches' worth.
pub(super) const INTERFACE_WORK_CAP: u64 = interface::MAX_EVALUATIONS;

/// What a refused search is charged: all of the cap when it hit the cap, else the RM test-point
/// cap twice (such a search stops at the dedicated-CPU test or earlier, tens of ms at most).
const FAILED_SEARCH_COST: u64 = 2 * interface::MAX_TEST_POINTS;

/// `interface` timing: the workload's fields (every error collected), its thread names, then
/// the optimal interface Γ of `planner::interface`, whose refusals (U_W > 1, not RM-schedulable,
/// not harmonic under aligned supply, a search cap) are errors at `{p}.interface`, as is a
/// search not started because the plan's searches reached [`INTERFACE_WORK_CAP`].
pub(super) fn check_interface(
    raw: &RawInterface,
    t: &RawTask,
    cx: &TaskCx,
    errs: &mut Errors,
) -> Option<InterfaceTiming> {
    let ip = format!("{}.interface", cx.path);
    let before = errs.0.len();
    let scheduler = check_scheduler(raw.scheduler.as_deref(), &ip, errs);
    let supply = check_supply(raw.supply.as_deref(), &ip, errs);
    let workload = check_interface_tasks(raw.tasks.as_deref(), t, &format!("{ip}.tasks"), errs);
    if errs.0.len() != before {
        return None;
    }
    let (scheduler, supply, workload) = (scheduler?, supply?, workload?);
    let result = search(&workload, scheduler, supply, cx, &ip, errs)?;
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

/// `interface.scheduler`: required, "rm" or "edf".
fn check_scheduler(given: Option<&str>, ip: &str, errs: &mut Errors) -> Option<Scheduler> {
    match given {
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
    }
}

/// `interface.supply`: general when absent.
fn check_supply(given: Option<&str>, ip: &str, errs: &mut Errors) -> Option<Supply> {
    match given {
        None => Some(Supply::General),
        Some(s) => match s.parse::<Supply>() {
            Ok(s) => Some(s),
            Err(_) => {
                errs.value(format!("{ip}.supply"), s, Rule::Supply);
                None
            }
        },
    }
}

/// `interface.tasks`: present, not empty, at most `interface::MAX_TASKS`, each one valid.
fn check_interface_tasks(
    given: Option<&[RawInterfaceTask]>,
    t: &RawTask,
    tp: &str,
    errs: &mut Errors,
) -> Option<Vec<WorkloadTask>> {
    match given {
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
        Some(w) => check_workload(w, t, tp, errs),
    }
}

/// The optimal interface of a valid workload, unless the plan's searches so far reached
/// [`INTERFACE_WORK_CAP`]; its cost is charged to `cx.interface_work`. `None` (with the error
/// pushed at `ip`) when refused.
fn search(
    workload: &[WorkloadTask],
    scheduler: Scheduler,
    supply: Supply,
    cx: &TaskCx,
    ip: &str,
    errs: &mut Errors,
) -> Option<Interface> {
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
        Ok(result) => Some(result),
        Err(e) => {
            errs.push(ip, None, Rule::Interface(e));
            None
        }
    }
}

/// The thread names and tids the workload's tasks have named so far: task index by name or tid.
#[derive(Default)]
struct Named<'a> {
    comms: HashMap<&'a str, usize>,
    tids: HashMap<u32, usize>,
}

/// The tasks of an interface workload (1 ..= `interface::MAX_TASKS` of them): period and wcet
/// (1 ≤ wcet ≤ period ≤ `interface::MAX_PERIOD_SLOTS`), and the thread each names (`thread`, a
/// comm of 1 to 15 bytes, or `tid` ≥ 1; unique; every task or none; none in a qemu task; a
/// `tid` among the task's `tids` when it selects by `tids`). Every error is collected.
fn check_workload(
    w: &[RawInterfaceTask],
    t: &RawTask,
    tp: &str,
    errs: &mut Errors,
) -> Option<Vec<WorkloadTask>> {
    let before = errs.0.len();
    let mut out = Vec::with_capacity(w.len());
    let mut seen = Named::default();
    let mut named: Option<usize> = None;
    for (j, task) in w.iter().enumerate() {
        let jp = format!("{tp}[{j}]");
        let period = check_period_wcet(task, &jp, errs);
        let thread = check_thread(task, j, &jp, t, tp, &mut seen, errs);
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

/// A workload task's period and wcet, both required: the period when it is valid.
fn check_period_wcet(task: &RawInterfaceTask, jp: &str, errs: &mut Errors) -> Option<u64> {
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
    period
}

/// The thread workload task `j` names (`thread` or `tid`, not both), with the path of the
/// field that names it; `None` when it names none.
fn check_thread<'a>(
    task: &'a RawInterfaceTask,
    j: usize,
    jp: &str,
    t: &RawTask,
    tp: &str,
    seen: &mut Named<'a>,
    errs: &mut Errors,
) -> Option<(String, ThreadSelector)> {
    match (&task.thread, task.tid) {
        (Some(_), Some(_)) => {
            errs.push(jp, None, Rule::ThreadAndTid);
            None
        }
        (Some(comm), None) => {
            let path = format!("{jp}.thread");
            if comm.is_empty() {
                errs.value(path.as_str(), comm, Rule::Empty);
            } else if comm.len() > COMM_MAX {
                errs.value(path.as_str(), comm, Rule::CommTooLong);
            }
            if let Some(first) = seen.comms.insert(comm, j) {
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
            if let Some(first) = seen.tids.insert(tid, j) {
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
    }
}

//! A plan's local workloads under a server design: the components, windows and table of each
//! managed CPU taken from the plan (`scx_tt simulate`).

use super::{overflow, simulate, Component, Config, Design, Exec, LocalTask, ServerError};
use super::{ServerReport, Window};
use crate::plan::{Class, CpuPlan, Plan, ThreadSelector};
use crate::planner::interface::Scheduler;
use serde::Serialize;

/// One managed CPU's local workloads under a design (`scx_tt simulate`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuServers {
    pub cpu: u32,
    #[serde(flatten)]
    pub report: ServerReport,
}

/// The local-workload section of `scx_tt simulate` (docs/simulate.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanServers {
    pub design: Design,
    /// Execution-time factor of the local jobs.
    pub etf: f64,
    pub ticks_per_slot: u64,
    /// Managed CPUs with at least one task with a local workload, plan order.
    pub cpus: Vec<CpuServers>,
}

fn thread_name(t: &ThreadSelector) -> String {
    match t {
        ThreadSelector::Comm(c) => c.clone(),
        ThreadSelector::Tid(t) => format!("tid {t}"),
    }
}

/// The plan's `tt` tasks with a local workload (`Task::local`) on their CPUs' tables for
/// `frames` frames under `design`, every local job at `etf` × its WCET: `None` when no task has
/// a local workload. On each CPU the components are the `tt` tasks owning slots of its table,
/// in plan order; their windows are their jobs of the frame; a task without `local` is opaque
/// (uses all its slots). `be` work is present when a `be` task may run on the CPU.
pub fn simulate_plan(
    plan: &Plan,
    design: Design,
    etf: f64,
    frames: u64,
    ticks_per_slot: u64,
) -> Result<Option<PlanServers>, ServerError> {
    if !plan.tasks.iter().any(|t| t.local.is_some()) {
        return Ok(None);
    }
    if !(etf > 0.0 && etf <= 1.0) {
        return Err(ServerError::Plan(format!(
            "etf = {etf}: the execution-time factor must be in (0, 1]"
        )));
    }
    let frame = plan.frame_slots;
    let slots = frames
        .checked_mul(frame)
        .ok_or_else(|| overflow("frames · frame_slots", format!("{frames} · {frame}")))?;
    let inputs = plan.planner_inputs();
    let mut cpus = Vec::new();
    for (ci, cpu) in plan.cpus.iter().enumerate() {
        // components: tasks owning jobs on this CPU, plan order
        let mut ids: Vec<usize> = cpu.jobs.iter().map(|j| j.task).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.retain(|&t| plan.tasks.get(t).is_some_and(|x| x.class == Class::Tt));
        if !ids.iter().any(|&t| plan.tasks[t].local.is_some()) {
            continue;
        }
        let components: Vec<Component> =
            ids.iter().map(|&t| component(plan, cpu, t, etf)).collect();
        let table = cpu_table(cpu, &ids, frame);
        let report = simulate(&Config {
            table: &table,
            components: &components,
            ticks_per_slot,
            slots,
            design,
            be: inputs.get(ci).is_some_and(|i| i.has_be),
            seed: 0,
        })
        .map_err(|e| ServerError::Plan(format!("cpu {}: {e}", cpu.cpu)))?;
        cpus.push(CpuServers {
            cpu: cpu.cpu,
            report,
        });
    }
    Ok(Some(PlanServers {
        design,
        etf,
        ticks_per_slot,
        cpus,
    }))
}

/// Plan task `t` as a component of `cpu`: its jobs of the frame are its windows, its local
/// workload its tasks (opaque without one), at `etf` × their WCET.
fn component(plan: &Plan, cpu: &CpuPlan, t: usize, etf: f64) -> Component {
    let task = &plan.tasks[t];
    let mut windows: Vec<Window> = cpu
        .jobs
        .iter()
        .filter(|j| j.task == t)
        .map(|j| Window {
            release: j.release,
            deadline: j.deadline,
            budget: j.wcet,
        })
        .collect();
    windows.sort_by_key(|w| w.release);
    let period = plan.frame_slots / (windows.len() as u64).max(1);
    let (scheduler, tasks, opaque) = match &task.local {
        Some(l) => (
            l.scheduler,
            l.threads
                .iter()
                .map(|th| LocalTask {
                    name: thread_name(&th.thread),
                    period: th.period,
                    wcet: th.wcet,
                })
                .collect(),
            false,
        ),
        None => (Scheduler::Rm, Vec::new(), true),
    };
    Component {
        name: task.name.clone(),
        scheduler,
        tasks,
        opaque,
        windows,
        period,
        exec: Exec::Factor(etf),
    }
}

/// `cpu`'s table of `frame` slots with each slot's owner as an index into `ids` (the
/// components, sorted plan task indices); `None` for a free slot or another owner.
fn cpu_table(cpu: &CpuPlan, ids: &[usize], frame: u64) -> Vec<Option<usize>> {
    let comp_of = |task: usize| ids.binary_search(&task).ok();
    let mut table = vec![None; frame as usize];
    for r in &cpu.table {
        let owner = cpu.jobs.get(r.job).and_then(|j| comp_of(j.task));
        for s in r.start..r.end.min(frame) {
            table[s as usize] = owner;
        }
    }
    table
}

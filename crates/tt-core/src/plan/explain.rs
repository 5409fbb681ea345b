//! `plan explain`: a validated plan as the stable, documented JSON report of
//! `docs/plan-explain.md` (format `scx_tt-plan-explain`, version 1), and its text rendering.
//!
//! Fields are only ever added within a version; renaming or removing one bumps `version`.

use super::timing::InterfaceTiming;
use super::{Class, Plan, Selector, ServerDesign, Start, ThreadSelector};
use crate::planner::interface::{Scheduler, Supply};
use crate::planner::offline::Slot;
use serde::Serialize;
use std::fmt::Write;

pub const FORMAT: &str = "scx_tt-plan-explain";
pub const VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct Explain {
    pub format: &'static str,
    pub version: u32,
    pub slot_us: u64,
    pub frame_slots: Slot,
    pub managed: Vec<u32>,
    pub housekeeping: Vec<u32>,
    /// The plan's `server` design; only when not the default (`wcps`).
    #[serde(skip_serializing_if = "ServerDesign::is_default")]
    pub server: ServerDesign,
    pub tasks: Vec<TaskReport>,
    pub cpus: Vec<CpuReport>,
}

#[derive(Debug, Serialize)]
pub struct TaskReport {
    pub name: String,
    pub class: Class,
    /// Assigned CPU (`tt`), restriction (`be`), or null (`be` on any managed CPU).
    pub cpu: Option<u32>,
    pub selector: Selector,
    /// Slots per frame (0 for `be`, and for a task not in the table until admitted).
    pub demand_slots: u64,
    /// Only for `start: "admitted"`: `{"admitted":{"period":P,"wcet":W}}`, not in the table
    /// until a planner-mode `admit_periodic` admits it.
    #[serde(skip_serializing_if = "Start::is_table")]
    pub start: Start,
    /// Only for a task whose timing is an `interface`: the workload and Γ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<InterfaceReport>,
}

/// A task's compositional interface: its workload, and Γ = (Π, Θ) = (`period`, `budget`),
/// which are the task's period and wcet.
#[derive(Debug, Serialize)]
pub struct InterfaceReport {
    pub scheduler: Scheduler,
    pub supply: Supply,
    pub workload: Vec<WorkloadReport>,
    pub period: u64,
    pub budget: u64,
    /// U_Γ = Θ/Π, and exactly (`"2/3"`).
    pub bandwidth: f64,
    pub bandwidth_exact: String,
    /// U_W = Σ wcet/period, and exactly (null when the hyperperiod exceeds 2^64 − 1).
    pub utilization: f64,
    pub utilization_exact: Option<String>,
    /// U_Γ − U_W.
    pub overhead: f64,
    /// `interface.budget`: the budget the task gets instead of Θ (an experiment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_override: Option<u64>,
}

/// One task of a workload, with the thread it names (as in the plan: `thread` or `tid`).
#[derive(Debug, Serialize)]
pub struct WorkloadReport {
    pub period: Slot,
    pub wcet: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
}

impl InterfaceReport {
    fn new(i: &InterfaceTiming) -> Self {
        let r = &i.result;
        InterfaceReport {
            scheduler: i.scheduler,
            supply: i.supply,
            workload: i
                .workload
                .iter()
                .map(|w| WorkloadReport {
                    period: w.period,
                    wcet: w.wcet,
                    thread: match &w.thread {
                        Some(ThreadSelector::Comm(c)) => Some(c.clone()),
                        _ => None,
                    },
                    tid: match w.thread {
                        Some(ThreadSelector::Tid(t)) => Some(t),
                        _ => None,
                    },
                })
                .collect(),
            period: r.resource.period,
            budget: r.resource.budget,
            bandwidth: r.bandwidth.to_f64(),
            bandwidth_exact: r.bandwidth.to_string(),
            utilization: r.utilization,
            utilization_exact: r.utilization_exact.map(|u| u.to_string()),
            overhead: r.overhead,
            budget_override: i.budget,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct CpuReport {
    pub cpu: u32,
    /// busy_slots / frame_slots.
    pub utilization: f64,
    pub busy_slots: u64,
    pub free_slots: u64,
    pub jobs: Vec<JobReport>,
    pub intervals: Vec<IntervalReport>,
    pub table: Vec<RangeReport>,
}

#[derive(Debug, Serialize)]
pub struct JobReport {
    /// Index in this CPU's job list (what `intervals[].jobs` and `table[].job` refer to).
    pub id: usize,
    pub task: String,
    pub task_index: usize,
    pub instance: u32,
    pub release: Slot,
    pub deadline: Slot,
    pub wcet: u64,
}

#[derive(Debug, Serialize)]
pub struct IntervalReport {
    pub start: Slot,
    pub end: Slot,
    pub sc: i64,
    pub jobs: Vec<usize>,
}

#[derive(Debug, Serialize)]
pub struct RangeReport {
    pub start: Slot,
    pub end: Slot,
    pub job: usize,
    pub task: String,
}

pub fn explain(plan: &Plan) -> Explain {
    let name = |i: usize| plan.tasks[i].name.clone();
    let tasks = plan
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| TaskReport {
            name: t.name.clone(),
            class: t.class,
            cpu: t.cpu,
            selector: t.selector.clone(),
            demand_slots: plan
                .cpus
                .iter()
                .flat_map(|c| &c.jobs)
                .filter(|j| j.task == i)
                .map(|j| j.wcet)
                .sum(),
            start: t.start,
            interface: t.interface.as_ref().map(InterfaceReport::new),
        })
        .collect();
    let cpus = plan
        .cpus
        .iter()
        .map(|c| {
            let busy: u64 = c.table.iter().map(|r| r.end - r.start).sum();
            CpuReport {
                cpu: c.cpu,
                utilization: busy as f64 / plan.frame_slots as f64,
                busy_slots: busy,
                free_slots: plan.frame_slots - busy,
                jobs: c
                    .jobs
                    .iter()
                    .enumerate()
                    .map(|(id, j)| JobReport {
                        id,
                        task: name(j.task),
                        task_index: j.task,
                        instance: j.instance,
                        release: j.release,
                        deadline: j.deadline,
                        wcet: j.wcet,
                    })
                    .collect(),
                intervals: c
                    .intervals
                    .iter()
                    .map(|iv| IntervalReport {
                        start: iv.start,
                        end: iv.end,
                        sc: iv.sc,
                        jobs: iv.jobs.clone(),
                    })
                    .collect(),
                table: c
                    .table
                    .iter()
                    .map(|r| RangeReport {
                        start: r.start,
                        end: r.end,
                        job: r.job,
                        task: name(c.jobs[r.job].task),
                    })
                    .collect(),
            }
        })
        .collect();
    Explain {
        format: FORMAT,
        version: VERSION,
        slot_us: plan.slot_us,
        frame_slots: plan.frame_slots,
        managed: plan.managed.clone(),
        housekeeping: plan.housekeeping.clone(),
        server: plan.server,
        tasks,
        cpus,
    }
}

/// The interface lines of a task: scheduler, supply, Γ, then the figures, then the workload.
fn render_interface(s: &mut String, i: &InterfaceReport) {
    let exact = i
        .utilization_exact
        .as_deref()
        .unwrap_or("hyperperiod above 2^64");
    let _ = writeln!(
        s,
        "  interface: scheduler {}, supply {}: Γ = (period {}, budget {}) slots",
        i.scheduler, i.supply, i.period, i.budget
    );
    let _ = writeln!(
        s,
        "    bandwidth U_Γ = {:.6} ({}), U_W = {:.6} ({exact}), overhead U_Γ − U_W = {:.6}",
        i.bandwidth, i.bandwidth_exact, i.utilization, i.overhead
    );
    if let Some(b) = i.budget_override {
        let note = if b < i.budget {
            "below Θ: the workload is NOT guaranteed"
        } else {
            "at least Θ: still guaranteed"
        };
        let _ = writeln!(
            s,
            "    budget {b} slots from interface.budget instead of Θ ({note})"
        );
    }
    let _ = writeln!(s, "    workload (period, wcet):");
    for w in &i.workload {
        let thread = match (&w.thread, w.tid) {
            (Some(c), _) => format!(" thread {c:?}"),
            (None, Some(t)) => format!(" tid {t}"),
            (None, None) => String::new(),
        };
        let _ = writeln!(s, "      ({}, {}){thread}", w.period, w.wcet);
    }
}

/// Human-readable rendering of the same report.
pub fn render_text(e: &Explain) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "frame {} slots x {} us = {} ms; managed {:?}, housekeeping {:?}",
        e.frame_slots,
        e.slot_us,
        e.frame_slots * e.slot_us / 1000,
        e.managed,
        e.housekeeping
    );
    if !e.server.is_default() {
        let unused = match e.server {
            ServerDesign::Ptps => "is idle",
            ServerDesign::Wcps => "runs be work",
            ServerDesign::Crps => {
                "runs the CPU's other released, unfinished tt jobs (earliest deadline first), \
                 then be work"
            }
        };
        let _ = writeln!(
            s,
            "server {}: the unused time of a tt owner's slot {unused}",
            e.server
        );
    }
    for t in &e.tasks {
        let cpu = t.cpu.map_or("any".to_string(), |c| c.to_string());
        let class = t.class.name();
        let _ = write!(
            s,
            "task {:<16} {class} cpu {cpu:<4} demand {} slots/frame",
            t.name, t.demand_slots
        );
        let _ = match t.start {
            Start::Table => writeln!(s),
            Start::Admitted { period, wcet } => writeln!(
                s,
                " (period {period} wcet {wcet}: not in the table until admitted)"
            ),
        };
        if let Some(i) = &t.interface {
            render_interface(&mut s, i);
        }
    }
    for c in &e.cpus {
        let _ = writeln!(
            s,
            "\ncpu {}: utilization {:.3} ({} busy, {} free slots)",
            c.cpu, c.utilization, c.busy_slots, c.free_slots
        );
        let _ = writeln!(s, "  jobs (id task#instance [release, deadline) wcet):");
        for j in &c.jobs {
            let _ = writeln!(
                s,
                "    {:>4} {}#{} [{}, {}) {}",
                j.id, j.task, j.instance, j.release, j.deadline, j.wcet
            );
        }
        let _ = writeln!(s, "  intervals ([start, end) sc: jobs):");
        for iv in &c.intervals {
            let _ = writeln!(
                s,
                "    [{}, {}) sc {}: {:?}",
                iv.start, iv.end, iv.sc, iv.jobs
            );
        }
        let _ = writeln!(s, "  table ([start, end) job task):");
        for r in &c.table {
            let _ = writeln!(s, "    [{}, {}) {} {}", r.start, r.end, r.job, r.task);
        }
    }
    s
}

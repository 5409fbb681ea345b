//! `plan explain`: a validated plan as the stable, documented JSON report of
//! `docs/plan-explain.md` (format `scx_tt-plan-explain`, version 1), and its text rendering.
//!
//! Fields are only ever added within a version; renaming or removing one bumps `version`.

use super::{Class, Plan, Selector, Start};
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
        tasks,
        cpus,
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
    for t in &e.tasks {
        let cpu = t.cpu.map_or("any".to_string(), |c| c.to_string());
        let class = match t.class {
            Class::Tt => "tt",
            Class::Be => "be",
        };
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

//! Stage 3, per managed CPU: the partitioning of `tt` tasks without `cpu`, the jobs of the frame
//! and the EDF tables (when the plan gives none).

use super::{Checked, Errors};
use crate::plan::error::{PlanErrors, Rule};
use crate::plan::{Class, CpuPlan, Start, Task};
use crate::planner::offline::{edf, Job, Slot};
use std::collections::HashMap;

/// The CPU of every task: the given `cpu`, or for a `tt` task without one, worst-fit decreasing
/// by utilization: tasks in decreasing order of demand per frame (ties: lower task index) go to
/// the managed CPU with the least demand so far (ties: earlier in `cpus.managed`). Worst fit
/// spreads load evenly, which leaves every CPU with similar slack; slot shifting turns that slack
/// into admission headroom for aperiodic jobs and new VMs on any CPU. Demands are integers (slots
/// per frame), so the result is exact and deterministic. `be` tasks keep their optional `cpu`.
pub(super) fn partition(tasks: &[Checked], managed: &[u32], frame: Slot) -> Vec<Option<u32>> {
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
pub(super) fn cpu_jobs(
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

/// Stage 3 without a given table: the EDF table of every CPU, or the first miss of each CPU.
pub(super) fn edf_tables(
    cpus: &mut [CpuPlan],
    tasks: &[Task],
    frame: Slot,
) -> Result<(), PlanErrors> {
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

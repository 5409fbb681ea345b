//! `Plan::try_from(RawPlan)`: every rule of `docs/plan-format.md`, checked in three stages.
//!
//! 1. Fields: version, slot_us, cpus, server, each task's name, selector, class, cpu and timing
//!    (an `interface` is computed here, [`check_interface`](interface::check_interface)), and the BPF scheduler's limits on
//!    them ([`limits`]: tasks, CPU ids, `tids`). All errors of this stage are collected.
//! 2. The frame: given or the lcm of the periods, under the cap; explicit jobs inside it; the
//!    table it gives fits the BPF scheduler.
//! 3. Per managed CPU: partitioning of `tt` tasks without `cpu` (worst-fit decreasing, see
//!    [`partition`](per_cpu::partition)), the jobs of the frame, the table (the explicit one validated, or EDF), and
//!    the capacity intervals with spare capacities (always recomputed).
//!
//! A later stage runs only when the earlier ones found no error: its inputs would be meaningless.

mod frame;
mod interface;
mod per_cpu;
mod selector;
mod task;
#[cfg(test)]
mod tests;
mod timing;

use super::error::{PlanError, PlanErrors, Rule};
use super::limits;
use super::raw::RawPlan;
use super::table::check_table;
use super::timing::{InterfaceTiming, Timing};
use super::{Class, Completion, CpuPlan, Plan, Selector, ServerDesign, Start, Task};
use crate::adaptive::AdaptiveParams;
use crate::planner::offline::intervals;
use per_cpu::{cpu_jobs, edf_tables, partition};
use serde::Serialize;
use task::check_tasks;

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
        let frame = frame::check(&raw, &f)?;
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
            let table_given = raw.table.is_some();
            check_tasks(t, slot_us, managed.as_deref(), table_given, &mut errs)
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

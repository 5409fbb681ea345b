//! Validation of an explicit `table`: per managed CPU, slot ranges `[start, end) → task`.
//!
//! Rules: each CPU appears once and is managed; each range is non-empty, inside the frame, names
//! a `tt` task placed on that CPU, and overlaps no other range of the CPU; every slot of a range
//! lies inside a window `[release, deadline)` of one of that task's jobs (a range crossing two
//! windows is split between the two jobs); and every job receives exactly its `wcet` slots.
//! A managed CPU absent from the table has an empty table (so its jobs, if any, get 0 slots).

use super::error::Rule;
use super::raw::RawCpuTable;
use super::validate::Errors;
use super::{Class, CpuPlan, Task};
use crate::planner::offline::{Range, Slot};
use std::collections::HashMap;

/// A range that passed the per-range rules.
struct Checked {
    start: Slot,
    end: Slot,
    task: usize,
    path: String,
}

pub(super) fn check_table(
    table: &[RawCpuTable],
    tasks: &[Task],
    cpus: &mut [CpuPlan],
    frame: Slot,
    errs: &mut Errors,
) {
    let by_name: HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    let mut seen: HashMap<u32, usize> = HashMap::new();
    // CPUs whose ranges broke a rule: their per-job counts would only repeat that error.
    let mut broken = vec![false; cpus.len()];
    for (ti, ct) in table.iter().enumerate() {
        let p = format!("table[{ti}]");
        let Some(cpu) = ct.cpu else {
            errs.push(format!("{p}.cpu"), None, Rule::Missing);
            continue;
        };
        let Some(pos) = cpus.iter().position(|c| c.cpu == cpu) else {
            errs.value(format!("{p}.cpu"), &cpu, Rule::NotManaged);
            continue;
        };
        if let Some(first) = seen.insert(cpu, ti) {
            errs.value(
                format!("{p}.cpu"),
                &cpu,
                Rule::Duplicate(format!("table[{first}].cpu")),
            );
            continue;
        }
        let Some(ranges) = &ct.ranges else {
            errs.push(format!("{p}.ranges"), None, Rule::Missing);
            broken[pos] = true;
            continue;
        };
        let before = errs.0.len();
        let mut ok: Vec<Checked> = Vec::new();
        for (ri, r) in ranges.iter().enumerate() {
            let rp = format!("{p}.ranges[{ri}]");
            if let Some(c) = check_range(r, &rp, cpu, frame, &by_name, tasks, errs) {
                ok.push(c);
            }
        }
        ok.sort_by_key(|c| (c.start, c.end));
        for w in ok.windows(2) {
            if w[1].start < w[0].end {
                errs.value(
                    format!("{}.start", w[1].path),
                    &w[1].start,
                    Rule::RangeOverlap(w[0].path.clone()),
                );
            }
        }
        if errs.0.len() == before {
            assign(&ok, &mut cpus[pos], tasks, errs);
        }
        broken[pos] = errs.0.len() != before;
    }
    for (pos, c) in cpus.iter().enumerate() {
        if !broken[pos] {
            check_wcet(c, tasks, errs);
        }
    }
}

fn check_range(
    r: &super::raw::RawRange,
    rp: &str,
    cpu: u32,
    frame: Slot,
    by_name: &HashMap<&str, usize>,
    tasks: &[Task],
    errs: &mut Errors,
) -> Option<Checked> {
    for (field, set) in [
        ("start", r.start.is_some()),
        ("end", r.end.is_some()),
        ("task", r.task.is_some()),
    ] {
        if !set {
            errs.push(format!("{rp}.{field}"), None, Rule::Missing);
        }
    }
    let (start, end, name) = (r.start?, r.end?, r.task.as_deref()?);
    let before = errs.0.len();
    if start >= end {
        errs.value(format!("{rp}.start"), &start, Rule::RangeEmpty { end });
    } else if end > frame {
        errs.value(format!("{rp}.end"), &end, Rule::OutsideFrame { frame });
    }
    match by_name.get(name) {
        None => errs.value(format!("{rp}.task"), name, Rule::UnknownTask),
        Some(&i) if tasks[i].class != Class::Tt || tasks[i].cpu != Some(cpu) => errs.value(
            format!("{rp}.task"),
            name,
            Rule::RangeTaskNotHere {
                task: name.to_string(),
                cpu,
            },
        ),
        Some(&i) => {
            return (errs.0.len() == before).then(|| Checked {
                start,
                end,
                task: i,
                path: rp.to_string(),
            })
        }
    }
    None
}

/// Split the (sorted, disjoint) ranges into per-job pieces and store them as the CPU's table.
fn assign(ranges: &[Checked], cpu: &mut CpuPlan, tasks: &[Task], errs: &mut Errors) {
    let mut jobs_of: HashMap<usize, Vec<usize>> = HashMap::new();
    for (j, job) in cpu.jobs.iter().enumerate() {
        jobs_of.entry(job.task).or_default().push(j);
    }
    let mut table: Vec<Range> = Vec::new();
    for r in ranges {
        let own = jobs_of.get(&r.task).map_or(&[][..], |v| v.as_slice());
        // Windows of one task are sorted and disjoint: the first candidate is the first job
        // whose deadline is after the range's start.
        let mut k = own.partition_point(|&j| cpu.jobs[j].deadline <= r.start);
        let mut cursor = r.start;
        while cursor < r.end {
            let fits = own
                .get(k)
                .map(|&j| &cpu.jobs[j])
                .is_some_and(|job| job.release <= cursor && cursor < job.deadline);
            if !fits {
                errs.value(
                    r.path.clone(),
                    &[r.start, r.end],
                    Rule::RangeOutsideWindow {
                        slot: cursor,
                        task: tasks[r.task].name.clone(),
                    },
                );
                return;
            }
            let j = own[k];
            let piece_end = r.end.min(cpu.jobs[j].deadline);
            match table.last_mut() {
                Some(last) if last.job == j && last.end == cursor => last.end = piece_end,
                _ => table.push(Range {
                    start: cursor,
                    end: piece_end,
                    job: j,
                }),
            }
            cursor = piece_end;
            k += 1;
        }
    }
    cpu.table = table;
}

/// Every job of `cpu` must own exactly its `wcet` slots of the table.
fn check_wcet(cpu: &CpuPlan, tasks: &[Task], errs: &mut Errors) {
    let mut got = vec![0u64; cpu.jobs.len()];
    for r in &cpu.table {
        got[r.job] += r.end - r.start;
    }
    for (j, job) in cpu.jobs.iter().enumerate() {
        if got[j] != job.wcet {
            errs.push(
                format!("tasks[{}]", job.task),
                None,
                Rule::TableWcet {
                    task: tasks[job.task].name.clone(),
                    instance: job.instance,
                    release: job.release,
                    deadline: job.deadline,
                    got: got[j],
                    wcet: job.wcet,
                },
            );
        }
    }
}

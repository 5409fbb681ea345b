//! Stage 1: a `tt` task's timing, exactly one model: period+wcet, utilization+latency_us (a VM),
//! explicit jobs, or an `interface` (checked in [`super::interface`]).

use super::interface::check_interface;
use super::task::TaskCx;
use super::Errors;
use crate::plan::error::Rule;
use crate::plan::raw::{RawJob, RawTask};
use crate::plan::timing::{vm_period_wcet, InterfaceTiming, Timing};
use crate::planner::offline::Slot;

/// The single timing model of a `tt` task, with the workload and Γ when it is an `interface`;
/// `None` (with errors pushed) when invalid.
pub(super) fn check_timing(
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

fn check_jobs(jobs: &[RawJob], p: &str, errs: &mut Errors) -> Option<Timing> {
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

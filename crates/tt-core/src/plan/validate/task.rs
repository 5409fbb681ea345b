//! Stage 1 for one task: its name, class, `cpu`, `adaptive` bounds, `start` and `completion`,
//! calling on [`super::selector`] and [`super::timing`] for its selector and timing.

use super::selector::check_selector;
use super::timing::check_timing;
use super::{Checked, Errors};
use crate::adaptive::AdaptiveParams;
use crate::plan::error::Rule;
use crate::plan::limits;
use crate::plan::raw::RawTask;
use crate::plan::timing::Timing;
use crate::plan::{Class, Completion, Selector, Start};
use std::cell::Cell;
use std::collections::HashMap;

/// What every task's checks share: the task's path and the plan's fields they depend on.
pub(super) struct TaskCx<'a> {
    pub(super) path: String,
    pub(super) slot_us: Option<u64>,
    pub(super) managed: Option<&'a [u32]>,
    pub(super) table_given: bool,
    /// Test-point evaluations the plan's interface searches have cost so far
    /// ([`INTERFACE_WORK_CAP`](super::interface::INTERFACE_WORK_CAP)).
    pub(super) interface_work: &'a Cell<u64>,
}

/// Every task of a non-empty `tasks`: the BPF scheduler's limits on their number and threads,
/// unique names, then each task's own checks; the tasks that passed them.
pub(super) fn check_tasks(
    t: &[RawTask],
    slot_us: Option<u64>,
    managed: Option<&[u32]>,
    table_given: bool,
    errs: &mut Errors,
) -> Vec<Checked> {
    limits::check_task_count(t, errs);
    limits::check_thread_count(t, errs);
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
            managed,
            table_given,
            interface_work: &interface_work,
        };
        out.extend(check_task(task, &cx, errs));
    }
    out
}

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
    let class = check_class(t, p, errs);
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

/// `class`: required, "tt", "be" or "adaptive".
fn check_class(t: &RawTask, p: &str, errs: &mut Errors) -> Option<Class> {
    match t.class.as_deref() {
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
    }
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

//! `admit` (docs/control.md): a task the plan does not name joins the run. The checks every
//! class shares (planner mode, the name, the `cpu`, `adaptive` only for class adaptive) run
//! once here, in [`Control::admit`]; then the request's class picks its admission, one module
//! per class:
//! - [`tt`]: a time-triggered task, periodic or aperiodic, or a QEMU VM with one reservation per
//!   vCPU thread, all or none: its timing, the placement on managed CPUs by the planner's exact
//!   test, registration in BPF before its first slot, the reply;
//! - [`be`]: a best-effort task: no timing, it joins the slack of the managed CPUs at once;
//! - [`adaptive`]: an adaptive task: bounds instead of timing, one managed CPU, it joins the
//!   slack at once and its reservation comes later, from the supervisor.
//!
//! The seam is a `match` over [`AdmitClass`] (an enum, closed: the request parser knows every
//! class) rather than a trait: each class's admission is a method of [`Control`] that needs the
//! state machine and the engine, and no class is added from outside the crate. A refusal
//! changes nothing.

mod adaptive;
mod be;
mod dry;
mod tt;

pub use tt::{timing, AdmitTiming};

use super::reply::AdmittedTask;
use super::request::{Admit, AdmitClass, AdmitSelector};
use super::{
    journal, AddedTask, Answer, Answered, Control, ControlError, Engine, Reply, Request, TaskState,
};
use crate::abi::MAX_TASKS;
use crate::plan::{Class, QemuSelector, Selector};

/// A refusal of `admit`: `field` had `value`, against `rule`.
fn bad(field: &str, value: String, rule: &str) -> ControlError {
    ControlError::Admit {
        field: field.into(),
        value,
        rule: rule.into(),
    }
}

/// Whether `r` gives any of the timing fields a be or an adaptive task refuses (besides
/// `deadline_slots`, `after` and `offset_slots`, which each class checks itself).
fn timed(r: &Admit) -> bool {
    [r.period_slots, r.wcet_slots, r.latency_us]
        .iter()
        .any(Option::is_some)
        || r.util.is_some()
}

/// The threads `select` names, through the engine, and the selector they came from;
/// refused when it selects none.
fn resolve(
    select: &AdmitSelector,
    engine: &mut impl Engine,
) -> Result<(Selector, Vec<u32>), ControlError> {
    let sel = match select {
        AdmitSelector::Pid(p) => Selector::Pid(*p),
        AdmitSelector::Tids(t) => Selector::Tids(t.clone()),
        AdmitSelector::Comm(c) => Selector::Comm(c.clone()),
        AdmitSelector::Cgroup(c) => Selector::Cgroup(c.clone()),
        AdmitSelector::QemuPid(p) => Selector::Qemu(QemuSelector::Pid(*p)),
        AdmitSelector::QemuName(n) => Selector::Qemu(QemuSelector::Name(n.clone())),
    };
    let tids = engine
        .resolve(&sel)
        .map_err(|e| bad("select", selector_text(select), &e))?;
    if tids.is_empty() {
        return Err(bad("select", selector_text(select), "selects no thread"));
    }
    Ok((sel, tids))
}

impl Control {
    /// A task the plan does not name (docs/control.md, `admit`): the checks every class
    /// shares, then the admission of the request's class (see the module doc), or with
    /// `dry_run` the verdict of a tt admission alone ([`Control::admit_dry`]). A refusal
    /// changes nothing.
    pub(super) fn admit(&mut self, r: &Admit, engine: &mut impl Engine) -> Answered {
        self.planner_mode("admit")?;
        let cpus = self.admit_shared(r)?;
        if r.dry_run {
            return self.admit_dry(r, cpus, engine);
        }
        if let Some(v) = r.vcpus {
            return Err(bad(
                "vcpus",
                v.to_string(),
                "only with \"dry_run\": true (a real admission's tasks are its threads, select)",
            ));
        }
        let Some(select) = &r.select else {
            // Request::parse refuses this; a request built otherwise gets the same words
            return Err(ControlError::Request(super::RequestError::Field {
                op: "admit",
                field: None,
                message: "missing field `select`".into(),
            }));
        };
        match r.class {
            AdmitClass::Tt => self.admit_tt(r, select, cpus, engine),
            AdmitClass::Be => self.admit_be(r, select, engine),
            AdmitClass::Adaptive => self.admit_adaptive(r, select, engine),
        }
    }

    /// The checks every `admit` shares, a dry run's too: the name, the `cpu`, `adaptive` only
    /// for class adaptive. Returns the managed CPU indices the admission may use.
    fn admit_shared(&self, r: &Admit) -> Result<Vec<usize>, ControlError> {
        self.check_admit_name(&r.name)?;
        let cpus = self.admit_cpus(r.cpu)?;
        if let Some(ids) = &r.cpus {
            let rule = match (r.class, r.cpu) {
                (AdmitClass::Tt, None) => None,
                (AdmitClass::Tt, Some(_)) => Some("give cpu or cpus, not both"),
                _ => Some("only for class tt: the CPU of each task that reserves slots"),
            };
            if let Some(rule) = rule {
                return Err(bad("cpus", format!("{ids:?}"), rule));
            }
        }
        if r.adaptive.is_some() && r.class != AdmitClass::Adaptive {
            return Err(bad(
                "adaptive",
                serde_json::to_string(&r.adaptive).unwrap_or_default(),
                "is only for class adaptive",
            ));
        }
        Ok(cpus)
    }

    /// `name` is new to the run and within [`MAX_NAME`] bytes without control characters.
    fn check_admit_name(&self, name: &str) -> Result<(), ControlError> {
        if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
            return Err(bad(
                "name",
                format!("{name:?}"),
                &format!("1 to {MAX_NAME} bytes, no control characters"),
            ));
        }
        if generated_suffix(name) {
            return Err(bad(
                "name",
                format!("{name:?}"),
                "must not end in /be or /vcpuK: those name the tasks an admission adds",
            ));
        }
        if self.find(name).is_some() || self.added.iter().any(|a| base_name(&a.name) == name) {
            return Err(bad(
                "name",
                format!("{name:?}"),
                "already names a task of this run",
            ));
        }
        Ok(())
    }

    /// The managed CPU indices an admission may use: `cpu`'s alone (refused unless it is a
    /// managed CPU of the plan), else all.
    fn admit_cpus(&self, cpu: Option<u32>) -> Result<Vec<usize>, ControlError> {
        Ok(match cpu {
            Some(c) => match self.plan.managed.iter().position(|&m| m == c) {
                Some(i) => vec![i],
                None => {
                    return Err(bad(
                        "cpu",
                        c.to_string(),
                        &format!(
                            "must be a managed CPU of the plan ({:?})",
                            self.plan.managed
                        ),
                    ))
                }
            },
            None => (0..self.plan.managed.len()).collect(),
        })
    }

    /// `admit` of a be or an adaptive task (`r.class`): its threads `tids` join the slack of
    /// managed CPU `cpu` (any managed CPU when `None`; an adaptive task always has one) at
    /// once; no planner, no timing, no guarantee (an adaptive task's reservation comes later,
    /// from the supervisor).
    fn admit_slack(
        &mut self,
        name: &str,
        r: &Admit,
        select: &AdmitSelector,
        cpu: Option<u32>,
        tids: Vec<u32>,
        engine: &mut impl Engine,
    ) -> Answered {
        let first = engine.next_task_index().map_err(ControlError::Kernel)?;
        if first >= MAX_TASKS {
            return Err(ControlError::Admit {
                field: "select".into(),
                value: selector_text(select),
                rule: format!("one more task exceeds the BPF task table of {MAX_TASKS}"),
            });
        }
        let class = match r.class {
            AdmitClass::Adaptive => Class::Adaptive,
            _ => Class::Be,
        };
        let index = match engine.add_task(class, cpu, &tids) {
            Ok(i) if i == first => i,
            Ok(i) => {
                return Err(ControlError::Kernel(format!(
                    "BPF gave task index {i}, expected {first}"
                )))
            }
            Err(e) => return Err(ControlError::Kernel(e)),
        };
        let from_slot = self.clock.slot_or_first(engine.now_ns());
        self.record(name, TaskState::Admitted, from_slot);
        if class == Class::Adaptive {
            // checked by check_adaptive before anything changed
            let bounds = r.adaptive.as_deref().cloned().unwrap_or_default();
            if let Ok(p) = bounds.params(Some(self.plan.slot_us)) {
                self.adaptive_params.push((index, p));
            }
        }
        self.added.push(AddedTask {
            index,
            name: name.into(),
            class,
            cpu,
            tids: tids.clone(),
            period: 0,
            wcet: 0,
            from_slot,
            gone_from: None,
            job: None,
        });
        let line = Request::Admit(r.clone()).to_line().ok();
        self.journal.set(journal::Key::Task(name.into()), line);
        let answer = Answer::TaskAdmitted {
            tasks: vec![AdmittedTask {
                task: name.into(),
                class: r.class,
                cpu,
                from_slot,
                period_slots: 0,
                wcet_slots: 0,
                offset_slots: 0,
                deadline_slots: None,
                deadline_slot: None,
                after: None,
                tids,
            }],
        };
        engine.note(&format!(
            "admit {name}: {}",
            Reply::Ok(answer.clone()).to_line().trim_end()
        ));
        Ok(answer)
    }
}

/// The name an `admit` request gave (`NAME` of `NAME/vcpuK`).
/// The name an `admit` was given, of one of the tasks it added: `NAME`, `NAME/vcpuK` (a VM's
/// vCPU K), `NAME/be` or `NAME/vcpuK/be` (an aperiodic task's threads after its job). NAME may
/// itself hold '/' (a cluster's `namespace/name`), so only these suffixes are taken off; names
/// that end in one are refused by `admit` ([`generated_suffix`]).
pub(super) fn base_name(task: &str) -> &str {
    let task = task.strip_suffix("/be").unwrap_or(task);
    vcpu_base(task).unwrap_or(task)
}

/// `NAME` of `NAME/vcpuK`, K in decimal without leading zeros.
fn vcpu_base(task: &str) -> Option<&str> {
    let (base, k) = task.rsplit_once("/vcpu")?;
    let canonical =
        !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) && (k == "0" || !k.starts_with('0'));
    canonical.then_some(base)
}

/// Whether `name` ends the way the names of added tasks do (`/be`, `/vcpuK`), which would make
/// it another admission's task name.
pub(super) fn generated_suffix(name: &str) -> bool {
    name.ends_with("/be") || vcpu_base(name).is_some()
}

/// Names of tasks `admit` adds: at most this many bytes.
pub const MAX_NAME: usize = 64;

pub(super) fn selector_text(s: &AdmitSelector) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod name_tests {
    use super::{base_name, generated_suffix};

    #[test]
    fn base_names_take_off_only_the_suffixes_admit_adds() {
        for (task, base) in [
            ("vm", "vm"),
            ("vm/vcpu0", "vm"),
            ("vm/vcpu12", "vm"),
            ("vm/be", "vm"),
            ("vm/vcpu1/be", "vm"),
            ("ns/vm", "ns/vm"),
            ("ns/vm/vcpu3", "ns/vm"),
            ("ns/vm/vcpu3/be", "ns/vm"),
            ("ns/vm/vcpu03", "ns/vm/vcpu03"),
            ("ns/vm/vcpux", "ns/vm/vcpux"),
            ("ns/vm/vcpu", "ns/vm/vcpu"),
            ("a/b/c", "a/b/c"),
        ] {
            assert_eq!(base_name(task), base, "{task}");
        }
        for (name, generated) in [
            ("ns/vm", false),
            ("vm/vcpu0", true),
            ("ns/vm/be", true),
            ("ns/vcpu", false),
            ("ns/vcpu01", false),
            ("ns/bee", false),
        ] {
            assert_eq!(generated_suffix(name), generated, "{name}");
        }
    }
}

//! Whether a new plan may replace the running one at a frame boundary (docs/control.md).
//!
//! Everything the BPF scheduler fixed at load time must be equal: the slot length and the CPU
//! roles (rodata), the frame length (the table's size and the slot → frame-slot mapping), and
//! the tasks in the same order with the same name, class, CPU and selector (rodata holds each
//! task's class and CPU by index, `task_ctx` maps the threads found by the selectors to those
//! indices). Only the timing (period, wcet, offset, deadline, explicit jobs or ranges), and so
//! the table, may differ.

use crate::plan::Plan;
use serde::Serialize;
use std::fmt;

/// One property of the new plan that differs from the running plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// JSON path in the plan file: `slot_us`, `cpus.managed`, `tasks[1].cpu`.
    pub field: String,
    /// The new plan's value, as JSON text.
    pub value: String,
    /// The running plan's value, as JSON text.
    pub running: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} = {}: must equal the running plan's {}",
            self.field, self.value, self.running
        )
    }
}

/// Every mismatch of `new` against `running`, in plan-file order; empty when compatible.
pub fn mismatches(running: &Plan, new: &Plan) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut cmp = |field: String, new: &dyn Json, old: &dyn Json| {
        let (value, running) = (new.json(), old.json());
        if value != running {
            out.push(Mismatch {
                field,
                value,
                running,
            });
        }
    };
    cmp("slot_us".into(), &new.slot_us, &running.slot_us);
    cmp("frame_slots".into(), &new.frame_slots, &running.frame_slots);
    cmp("cpus.managed".into(), &new.managed, &running.managed);
    cmp(
        "cpus.housekeeping".into(),
        &new.housekeeping,
        &running.housekeeping,
    );
    for (i, (n, r)) in new.tasks.iter().zip(&running.tasks).enumerate() {
        cmp(format!("tasks[{i}].name"), &n.name, &r.name);
        cmp(format!("tasks[{i}].class"), &n.class, &r.class);
        cmp(format!("tasks[{i}].cpu"), &n.cpu, &r.cpu);
        cmp(format!("tasks[{i}].selector"), &n.selector, &r.selector);
    }
    if new.tasks.len() != running.tasks.len() {
        out.push(Mismatch {
            field: "tasks".into(),
            value: format!("{} tasks", new.tasks.len()),
            running: format!("{} tasks", running.tasks.len()),
        });
    }
    out
}

/// A value as compact JSON text, for comparison and for the message.
trait Json {
    fn json(&self) -> String;
}

impl<T: Serialize> Json for T {
    fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("<{e}>"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan;

    /// The VM test's shape: one managed CPU, two tt tasks and a be task, 10 ms slots, frame 8.
    fn plan_text(slot_us: u64, a_wcet: u64, extra: &str) -> String {
        format!(
            r#"{{ "version": 1, "slot_us": {slot_us},
  "cpus": {{ "managed": [1], "housekeeping": [0] }},
  "tasks": [
    {{ "name": "tt-a", "pid": 10, "class": "tt", "cpu": 1, "period": 8, "wcet": {a_wcet} }},
    {{ "name": "tt-b", "pid": 11, "class": "tt", "cpu": 1, "period": 8, "wcet": 2 }},
    {{ "name": "be-c", "pid": 12, "class": "be" }}{extra}
  ] }}"#
        )
    }

    fn load(text: &str) -> Plan {
        plan::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    fn errors(running: &str, new: &str) -> Vec<String> {
        mismatches(&load(running), &load(new))
            .iter()
            .map(|m| m.to_string())
            .collect()
    }

    #[test]
    fn only_timing_differs_so_the_plans_are_compatible() {
        let a = plan_text(10_000, 3, "");
        let b = plan_text(10_000, 5, "");
        assert_ne!(load(&a).cpus[0].table, load(&b).cpus[0].table);
        assert_eq!(errors(&a, &b), Vec::<String>::new());
    }

    #[test]
    fn another_slot_length_is_named_with_both_values() {
        assert_eq!(
            errors(&plan_text(10_000, 3, ""), &plan_text(5_000, 3, "")),
            vec!["slot_us = 5000: must equal the running plan's 10000"]
        );
    }

    #[test]
    fn another_frame_length_is_named() {
        let b = plan_text(10_000, 3, "")
            .replace("\"version\": 1,", "\"version\": 1, \"frame_slots\": 16,");
        assert_eq!(
            errors(&plan_text(10_000, 3, ""), &b),
            vec!["frame_slots = 16: must equal the running plan's 8"]
        );
    }

    #[test]
    fn other_cpu_roles_are_named() {
        let a = plan_text(10_000, 3, "");
        let b = a.replace(
            r#""managed": [1], "housekeeping": [0]"#,
            r#""managed": [1], "housekeeping": [0, 2]"#,
        );
        assert_eq!(
            errors(&a, &b),
            vec!["cpus.housekeeping = [0,2]: must equal the running plan's [0]"]
        );
        let c = a
            .replace(r#""managed": [1]"#, r#""managed": [2]"#)
            .replace(r#""cpu": 1"#, r#""cpu": 2"#);
        assert_eq!(
            errors(&a, &c),
            vec![
                "cpus.managed = [2]: must equal the running plan's [1]",
                "tasks[0].cpu = 2: must equal the running plan's 1",
                "tasks[1].cpu = 2: must equal the running plan's 1",
            ]
        );
    }

    #[test]
    fn each_task_property_is_named_by_its_index() {
        let a = plan_text(10_000, 3, "");
        let renamed = a.replace("\"tt-b\"", "\"tt-x\"");
        assert_eq!(
            errors(&a, &renamed),
            vec!["tasks[1].name = \"tt-x\": must equal the running plan's \"tt-b\""]
        );
        let reselected = a.replace("\"pid\": 12", "\"comm\": \"spin\"");
        assert_eq!(
            errors(&a, &reselected),
            vec![
                "tasks[2].selector = {\"comm\":\"spin\"}: must equal the running plan's {\"pid\":12}"
            ]
        );
        let reclassed = a.replace(
            r#""pid": 11, "class": "tt", "cpu": 1, "period": 8, "wcet": 2"#,
            r#""pid": 11, "class": "be""#,
        );
        assert_eq!(
            errors(&a, &reclassed),
            vec![
                "tasks[1].class = \"be\": must equal the running plan's \"tt\"",
                "tasks[1].cpu = null: must equal the running plan's 1",
            ]
        );
    }

    #[test]
    fn a_task_more_or_less_is_named() {
        let a = plan_text(10_000, 3, "");
        let b = plan_text(
            10_000,
            3,
            r#", { "name": "be-d", "pid": 13, "class": "be" }"#,
        );
        assert_eq!(
            errors(&a, &b),
            vec!["tasks = 4 tasks: must equal the running plan's 3 tasks"]
        );
    }

    #[test]
    fn reordered_tasks_are_incompatible() {
        let a = plan_text(10_000, 3, "");
        let swapped = a
            .replace("\"tt-a\", \"pid\": 10", "\"tmp\", \"pid\": 99")
            .replace("\"tt-b\", \"pid\": 11", "\"tt-a\", \"pid\": 10")
            .replace("\"tmp\", \"pid\": 99", "\"tt-b\", \"pid\": 11");
        let e = errors(&a, &swapped);
        assert_eq!(e.len(), 4, "{e:?}");
        assert!(e[0].starts_with("tasks[0].name = \"tt-b\""), "{e:?}");
    }
}

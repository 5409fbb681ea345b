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

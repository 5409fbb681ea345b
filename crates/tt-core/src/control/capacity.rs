//! `capacity` (planner mode, docs/control.md): per managed CPU what the planner holds now —
//! the slots per frame its tasks reserve, the firm work it still owes, the spare capacity of
//! its intervals up to the horizon — and the tasks there; plus the node's slot length and
//! frame. Read-only: what a cluster scheduler asks before it places a real-time pod or VM.

use super::reply::{Capacity, CpuCapacity};
use super::{Answer, Answered, Control, ControlError, Engine, TaskState};
use crate::plan::Class;

impl Control {
    /// The `capacity` answer: one planner reading (the planner held for it), the task names
    /// from the control state. Changes nothing.
    pub(super) fn capacity(&mut self, engine: &mut impl Engine) -> Answered {
        self.planner_mode("capacity")?;
        let n = self.plan.managed.len();
        let (from_slot, held) = engine
            .with_planner(|p, _| {
                (
                    p.now(),
                    (0..n).map(|c| p.cpu_capacity(c)).collect::<Vec<_>>(),
                )
            })
            .map_err(ControlError::PlannerUnavailable)?;
        let cpus = held
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let c = c.unwrap_or_default();
                CpuCapacity {
                    cpu: self.cpu_id(i),
                    reserved_slots: c.reserved_slots,
                    firm_slots: c.firm_slots,
                    spare_slots: c.spare_slots,
                    spare_until_slot: c.spare_until_slot,
                    tasks: self.tasks_on(self.cpu_id(i)),
                }
            })
            .collect();
        Ok(Answer::Capacity(Capacity {
            slot_us: self.plan.slot_us,
            frame_slots: self.plan.frame_slots,
            from_slot,
            cpus,
        }))
    }

    /// The tasks that may own slots on CPU id `cpu`: the plan's tt and adaptive tasks there
    /// that run (in the table and not removed, or admitted), then those `admit` added there
    /// (tt or adaptive) that are neither gone, removed nor done.
    fn tasks_on(&self, cpu: u32) -> Vec<String> {
        let planned = self.plan.tasks.iter().filter(|t| {
            let state = self.state(&t.name).map(|c| c.state);
            t.class != Class::Be
                && t.cpu == Some(cpu)
                && match state {
                    Some(s) => s == TaskState::Admitted,
                    None => t.start.is_table(),
                }
        });
        let added = self
            .added
            .iter()
            .filter(|a| a.class != Class::Be && a.cpu == Some(cpu) && a.gone_from.is_none());
        planned
            .map(|t| t.name.clone())
            .chain(added.map(|a| a.name.clone()))
            .collect()
    }
}

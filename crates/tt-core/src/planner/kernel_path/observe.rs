//! The closed loop of the kernel path: what BPF published for a slot ([`SlotObs`]), its
//! reconciliation with the slot's decision, the entries a completion frees, and the counters.

use super::{entry_task, update, EntryWrite, KernelPlanner, LogEvent};
use crate::abi::NO_TASK;
use crate::planner::runtime::Observation;
use crate::planner::JobEvent;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What BPF published for one slot of one managed CPU (src/bpf/intf.h `tt_slot_obs`), or that
/// nothing usable came (torn, overwritten, or never written in time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SlotObs {
    Seen {
        /// The owner the table held when the slot ran (plan task), `None`: free.
        owner: Option<u32>,
        /// The owner's job completed in the slot.
        done: bool,
        /// ns the owner ran in the slot.
        owner_ns: u64,
        /// ns of the slot the owner had a thread running or waiting to run (not done).
        avail_ns: u64,
    },
    Missing,
}

/// A slot counts whole when the owner was available for all of it but this much
/// (`max(slot / 50, 100 µs)`, capped at the slot): the switch gaps and tick lateness at its
/// edges are no reason to give a job a slice of another slot.
pub fn full_tolerance_ns(slot_ns: u64) -> u64 {
    (slot_ns / 50).max(100_000).min(slot_ns)
}

/// The counters of the closed loop (summary JSON `planner_observations`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopCounts {
    /// Observations applied.
    pub observed: u64,
    /// Slots reconciled with the worst case: no usable observation (torn, overwritten, late)
    /// or one whose owner was not the decided one (a late slot, a switch).
    pub worst_case: u64,
    /// Of which: the observed owner was not the decided one.
    pub owner_mismatch: u64,
    /// Decided slots reconciled with the worst case because no observation of them ever came
    /// (a tick that published nothing, an entry overwritten before it was read, a restart).
    pub unobserved: u64,
    /// Jobs observed completed early.
    pub completed: u64,
    /// Jobs that reached their WCET unfinished (cut off).
    pub overruns: u64,
    /// Jobs that still had work at their deadline.
    pub misses: u64,
    /// Jobs that lost work to the platform (a slot their owner used only in part) that no free
    /// slot before their deadline could give back (`JobEvent::Lost`), and that work in units
    /// (10⁻⁶ slot at full speed). Spare capacity other guarantees hold is never taken for it.
    #[serde(default)]
    pub lost: u64,
    #[serde(default)]
    pub lost_units: u64,
    /// Decided slots voided by a completion, and of those rewritten before they started.
    pub voided: u64,
    pub rewritten: u64,
}

impl KernelPlanner {
    /// Closes the loop: every decided slot waits for its observation ([`Self::observe`]) instead
    /// of being assumed to have run whole (docs/planner.md "Observations"). Up to a frame plus
    /// 64 slots may wait per CPU; older ones are reconciled with the worst case.
    pub fn close_loop(&mut self) {
        self.planner
            .defer_observations(self.frame.saturating_add(64) as usize);
        self.decided = Some(vec![VecDeque::new(); self.nr_cpus]);
    }

    pub fn loop_closed(&self) -> bool {
        self.decided.is_some()
    }

    pub fn counts(&self) -> LoopCounts {
        LoopCounts {
            unobserved: self.planner.unobserved(),
            ..self.counts
        }
    }

    /// Applies what slot `slot` did on managed CPU index `cpu` (`cur`: the kernel slot in
    /// progress) and returns the entries to rewrite: slots decided for a job this observation
    /// completed that have not started yet go to best-effort work or idle (`NO_TASK`).
    /// Ignored (counted) when the loop is open, the CPU is unknown, or the slot was already
    /// reconciled.
    pub fn observe(
        &mut self,
        cpu: usize,
        slot: u64,
        obs: SlotObs,
        cur: Option<u64>,
    ) -> Vec<EntryWrite> {
        self.record(|| LogEvent::Observe {
            cpu,
            slot,
            cur,
            obs,
        });
        let mut out = Vec::new();
        let Some(entry) = self.take_decided(cpu, slot) else {
            return out;
        };
        let o = self.observation(obs, entry);
        match o {
            Some(_) => self.counts.observed += 1,
            None => self.counts.worst_case += 1,
        }
        let before = self.planner.events().len();
        let voided = match self
            .planner
            .observe(cpu, slot, o.unwrap_or(self.whole_slot()))
        {
            Ok(v) => v.to_vec(),
            Err(_) => return out,
        };
        self.count_events(before);
        self.rewrite_voided(cpu, voided, cur, &mut out);
        out
    }

    /// The entry decided for `slot` on `cpu`, taken off the CPU's decided slots (older ones,
    /// never observed, are dropped); `None` when the loop is open, the CPU is unknown, or `slot`
    /// is not waiting for its observation.
    fn take_decided(&mut self, cpu: usize, slot: u64) -> Option<Option<u32>> {
        let decided = self.decided.as_mut().and_then(|d| d.get_mut(cpu))?;
        while decided.front().is_some_and(|&(s, _)| s < slot) {
            decided.pop_front();
        }
        let &(s, entry) = decided.front()?;
        if s != slot {
            return None;
        }
        decided.pop_front();
        Some(entry)
    }

    /// The slot ran whole: the worst case (every decided job ran its slot).
    fn whole_slot(&self) -> Observation {
        Observation {
            ran_ns: self.slot_ns,
            done: false,
        }
    }

    /// What the planner is told a slot did, from what BPF published and the `entry` decided
    /// for it; `None` (the worst case) when nothing usable came or another owner ran.
    fn observation(&mut self, obs: SlotObs, entry: Option<u32>) -> Option<Observation> {
        match obs {
            SlotObs::Seen { owner, .. } if entry.map(entry_task) != Some(owner) => {
                self.counts.owner_mismatch += 1;
                None
            }
            SlotObs::Seen {
                done,
                owner_ns,
                avail_ns,
                ..
            } => Some(if done {
                Observation {
                    ran_ns: owner_ns.min(self.slot_ns),
                    done: true,
                }
            } else if avail_ns.saturating_add(full_tolerance_ns(self.slot_ns)) >= self.slot_ns {
                self.whole_slot()
            } else {
                Observation {
                    ran_ns: avail_ns,
                    done: false,
                }
            }),
            SlotObs::Missing => None,
        }
    }

    /// Counts the job events the planner reported from index `before` on.
    fn count_events(&mut self, before: usize) {
        for (_, e) in &self.planner.events()[before..] {
            match e {
                JobEvent::Completed { .. } => self.counts.completed += 1,
                JobEvent::Overrun { .. } => self.counts.overruns += 1,
                JobEvent::Miss { .. } => self.counts.misses += 1,
                JobEvent::Lost { units, .. } => {
                    self.counts.lost += 1;
                    self.counts.lost_units += units;
                }
                _ => {}
            }
        }
    }

    /// Counts the slots of `cpu` a completion voided and rewrites to `NO_TASK` the entries of
    /// those that have not started (after `cur`), appending the writes to `out`.
    fn rewrite_voided(
        &mut self,
        cpu: usize,
        voided: Vec<u64>,
        cur: Option<u64>,
        out: &mut Vec<EntryWrite>,
    ) {
        for v in voided {
            self.counts.voided += 1;
            if cur.is_some_and(|c| v <= c) {
                continue;
            }
            let fs = v % self.frame;
            let i = cpu * self.frame as usize + fs as usize;
            // the entry serves every frame: only a slot still holding this job's decision
            if let Some(task) = update(&mut self.shadow[i], NO_TASK) {
                self.counts.rewritten += 1;
                // the slot will run free: that is what its observation must say
                if let Some(d) = self.decided.as_mut().and_then(|d| d.get_mut(cpu)) {
                    if let Some(e) = d.iter_mut().find(|e| e.0 == v) {
                        e.1 = Some(NO_TASK);
                    }
                }
                out.push(EntryWrite {
                    cpu,
                    slot: v,
                    frame_slot: fs,
                    task: Some(task),
                    perf: None,
                    ppm: None,
                });
            }
        }
    }
}

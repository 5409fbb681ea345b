//! Replay of a kernel-path run (`scx_tt simulate --replay LOG`, issue 13 item 5): the calls the
//! run made on its [`KernelPlanner`] (its planner log, [`LogEvent`]s in lock order) are made
//! again on a planner built from the same plan, and the table entry every slot started with is
//! reconstructed from the writes and the kernel slot in progress at each call. A kernel run's
//! trace says which owner each slot really had (the BPF record of the slot); the two are
//! compared slot by slot ([`agreement`]).
//!
//! # Which entry a slot starts with
//! Every call that writes entries carries the kernel slot `cur` in progress when it ran
//! (`Advance`, `Observe`, `AdmitFirm`); `cur` never decreases along the log (the log is in lock
//! order, the clock is monotonic). A call at `cur = c` writes only entries of slots after `c`,
//! so slot `t` starts with the entry the table held after every call with `cur < t`: before
//! applying a call at `c`, every slot up to `c` not resolved yet is resolved from the table as
//! it is.
//!
//! # Properties
//! 1. (Determinism) The same log on the same plan gives the same owners (the planner is pure).
//! 2. (Faithful) Without late slots, each resolved owner is the planner's own final decision
//!    for that slot (a voided slot that had not started: `NO_TASK`).

use super::kernel_path::EntryWrite;
use super::kernel_path::{
    entry_task, FirmOutcome, KernelPathConfig, KernelPlanner, LogEvent, LogHeader,
    PlannerModeError, LOG_FORMAT,
};
use super::runtime::{CpuInput, StepError};
use crate::drive::{drive, Backend, Cur, Decider};
use crate::planner::{Freqs, Policy};
use std::io::Write;

/// Writes a planner log: the header line, then one event per line.
pub fn write_log(
    w: &mut impl Write,
    header: &LogHeader,
    events: &[LogEvent],
) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, header)?;
    w.write_all(b"\n")?;
    for e in events {
        serde_json::to_writer(&mut *w, e)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Reads a planner log; an error names the line (1-based) and what is wrong.
pub fn read_log(text: &str) -> Result<(LogHeader, Vec<LogEvent>), String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines.next().ok_or("empty planner log")?;
    let header: LogHeader = serde_json::from_str(first)
        .map_err(|e| format!("line 1: not a planner log header: {e}"))?;
    if header.format != LOG_FORMAT {
        return Err(format!(
            "line 1: format = {:?}: expected {LOG_FORMAT:?}",
            header.format
        ));
    }
    let mut events = Vec::new();
    for (i, line) in lines {
        events.push(serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    Ok((header, events))
}

/// The planner a log's events were made on: `cpus`/`nr_tasks`/`table` from the plan as the run
/// built them, the rest from the header.
pub fn planner_for(
    header: &LogHeader,
    cpus: &[CpuInput],
    nr_tasks: usize,
    table: Vec<u32>,
) -> Result<KernelPlanner, String> {
    let policy: Policy = header
        .policy
        .parse()
        .map_err(|e| format!("policy = {:?}: {e}", header.policy))?;
    let freqs = Freqs::from_ppm(&header.freqs_ppm)
        .map_err(|e| format!("freqs_ppm = {:?}: {e}", header.freqs_ppm))?;
    let cfg = KernelPathConfig {
        policy,
        lead: header.lead,
        frame_slots: header.frame_slots,
        slot_ns: header.slot_ns,
        freqs,
    };
    let mut p = KernelPlanner::new(cpus, nr_tasks, cfg, table)
        .map_err(|e: PlannerModeError| e.to_string())?;
    if header.closed_loop {
        p.close_loop();
    }
    Ok(p)
}

/// Per managed CPU index, the table entry each slot started with (index = slot), as far as the
/// log's clock reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replayed {
    pub entries: Vec<Vec<u32>>,
    /// Slots the planner decided after they had started.
    pub late_slots: u64,
    /// Which slots those were.
    pub late: std::collections::BTreeSet<u64>,
    /// The answer to every firm admission of the log, in order: (kernel slot, answer).
    pub firm: Vec<(u64, FirmOutcome)>,
}

/// Replays `events` on `p` (built as the run built it: same plan, policy, lead, frequencies,
/// initial table; the loop closed if the run's was). Goes through the run driver
/// ([`crate::drive`]) as the kernel run did: the log is the backend, the planner the decider.
pub fn replay(p: KernelPlanner, events: &[LogEvent]) -> Result<Replayed, StepError> {
    let n = p.nr_cpus();
    let frame = p.frame() as usize;
    let mut log = LogBackend {
        events,
        next: 0,
        table: p.table().to_vec(),
        entries: vec![Vec::new(); n],
        frame,
    };
    let mut planner = Replayer {
        p,
        late: std::collections::BTreeSet::new(),
        firm: Vec::new(),
    };
    drive(&mut planner, &mut log)?;
    Ok(Replayed {
        entries: log.entries,
        late_slots: planner.p.late_slots(),
        late: planner.late,
        firm: planner.firm,
    })
}

/// A planner log as the driver's backend: one turn per logged advance, its inputs the calls
/// logged since the one before (in lock order), its effect the table every slot starts with.
struct LogBackend<'a> {
    events: &'a [LogEvent],
    next: usize,
    /// The table as the writes so far left it.
    table: Vec<u32>,
    /// Per CPU, the entry each slot started with, resolved so far.
    entries: Vec<Vec<u32>>,
    frame: usize,
}

/// What one logged call did: every slot up to `upto` started before it (module doc), then its
/// writes.
struct Effect {
    upto: Option<u64>,
    writes: Vec<EntryWrite>,
}

impl LogBackend<'_> {
    fn resolve(&mut self, upto: Option<u64>) {
        let Some(c) = upto else { return };
        for (cpu, e) in self.entries.iter_mut().enumerate() {
            while e.len() as u64 <= c {
                let t = e.len();
                e.push(self.table[cpu * self.frame + t % self.frame]);
            }
        }
    }
}

impl<'a> Backend for LogBackend<'a> {
    type Input = &'a LogEvent;
    type Decision = Vec<Effect>;
    type Error = StepError;

    /// The `cur` of the turn's advance (of its last call when the log ends without one).
    fn begin(&mut self) -> Option<Cur> {
        let rest = self.events.get(self.next..).filter(|r| !r.is_empty())?;
        let end = rest
            .iter()
            .position(|e| matches!(e, LogEvent::Advance { .. }))
            .unwrap_or(rest.len() - 1);
        Some(match &rest[end] {
            LogEvent::Advance { cur, .. } | LogEvent::Observe { cur, .. } => *cur,
            LogEvent::AdmitFirm { cur, .. } | LogEvent::AdmitAperiodic { cur, .. } => Some(*cur),
            _ => None,
        })
    }

    fn collect(&mut self, _cur: Cur, inputs: &mut Vec<&'a LogEvent>) -> Result<(), StepError> {
        let events = self.events;
        while let Some(e) = events.get(self.next) {
            self.next += 1;
            inputs.push(e);
            if matches!(e, LogEvent::Advance { .. }) {
                break;
            }
        }
        Ok(())
    }

    fn apply(
        &mut self,
        _cur: Cur,
        effects: &Vec<Effect>,
        _late: &mut Vec<(usize, u64)>,
    ) -> Result<(), StepError> {
        for e in effects {
            self.resolve(e.upto);
            for w in &e.writes {
                if let Some(task) = w.task {
                    self.table[w.cpu * self.frame + w.frame_slot as usize] = task;
                }
            }
        }
        Ok(())
    }
}

/// The planner as the replay's decider: each logged call made again, in order.
struct Replayer {
    p: KernelPlanner,
    late: std::collections::BTreeSet<u64>,
    firm: Vec<(u64, FirmOutcome)>,
}

impl Replayer {
    fn call(&mut self, e: &LogEvent) -> Result<Effect, StepError> {
        let none = |upto| Effect {
            upto,
            writes: Vec::new(),
        };
        Ok(match e {
            LogEvent::Advance { cur, last } => {
                let first = self.p.now();
                let adv = self.p.advance_through(*cur, *last)?;
                self.late.extend(first..first + adv.late);
                Effect {
                    upto: *cur,
                    writes: adv.writes,
                }
            }
            LogEvent::Observe {
                cpu,
                slot,
                cur,
                obs,
            } => Effect {
                upto: *cur,
                writes: self.p.observe(*cpu, *slot, *obs, *cur),
            },
            LogEvent::AdmitFirm { job, cur } => {
                self.firm.push((*cur, self.p.admit_firm(job, *cur)));
                none(Some(*cur))
            }
            LogEvent::AdmitPeriodic { task } => {
                self.p.admit_periodic(task);
                none(None)
            }
            LogEvent::AdmitTask { task, name } => {
                self.p.admit_task(task, name);
                none(None)
            }
            LogEvent::AdmitAperiodic { job, cur, name } => {
                self.firm
                    .push((*cur, self.p.admit_aperiodic(job, *cur, name)));
                none(Some(*cur))
            }
            LogEvent::Remove { task } => {
                self.p.remove(*task);
                none(None)
            }
            LogEvent::SetPolicy { policy } => {
                // a refused swap was refused in the run too
                if let Ok(pol) = policy.parse::<Policy>() {
                    let _ = self.p.set_policy(pol);
                }
                none(None)
            }
        })
    }
}

impl<'a> Decider<LogBackend<'a>> for Replayer {
    fn decide(
        &mut self,
        _cur: Cur,
        events: &mut Vec<&'a LogEvent>,
    ) -> Result<Vec<Effect>, StepError> {
        events.drain(..).map(|e| self.call(e)).collect()
    }
}

/// The same calls on a planner that never observes (the worst case): `p` must be built with the
/// loop open. Its answers to the log's firm admissions are what the run would have answered
/// without the closed loop, given the same requests at the same slots.
pub fn replay_worst_case(p: KernelPlanner, events: &[LogEvent]) -> Result<Replayed, StepError> {
    let open: Vec<LogEvent> = events
        .iter()
        .filter(|e| !matches!(e, LogEvent::Observe { .. }))
        .cloned()
        .collect();
    replay(p, &open)
}

/// One slot where the replay and the kernel disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub cpu: usize,
    pub slot: u64,
    /// The plan task the replay says the slot started with.
    pub replay: Option<u32>,
    /// The owner the kernel's record names.
    pub kernel: Option<u32>,
}

/// Slot-by-slot comparison of the replay with the kernel's records `(cpu index, slot, owner)`:
/// (identical, compared, differences). Records beyond what the replay resolved are not compared.
pub fn agreement(
    replayed: &Replayed,
    kernel: impl IntoIterator<Item = (usize, u64, Option<u32>)>,
) -> (u64, u64, Vec<Difference>) {
    let (mut same, mut total, mut diffs) = (0, 0, Vec::new());
    for (cpu, slot, owner) in kernel {
        let Some(&e) = replayed.entries.get(cpu).and_then(|v| v.get(slot as usize)) else {
            continue;
        };
        total += 1;
        let replay = entry_task(e);
        if replay == owner {
            same += 1;
        } else {
            diffs.push(Difference {
                cpu,
                slot,
                replay,
                kernel: owner,
            });
        }
    }
    (same, total, diffs)
}

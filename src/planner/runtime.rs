//! The planner of all managed CPUs: one `step` per slot, admissions between steps.
//!
//! # Protocol
//! ```text
//! planner = Planner::new(cpus, config)             // state at slot 0, frames 0 and 1 materialised
//! loop s = 0, 1, 2, ...:
//!   decisions = planner.step(s, observations of slot s-1)   // one Decision per CPU for slot s
//!   ...slot s runs...
//!   planner.admit_firm / admit_periodic / submit_soft / remove_task   // arrivals during slot s
//! ```
//! `step(s)` (1) reconciles slot `s-1` with what really ran (ns executed by the planned job, done
//! or not: completion frees its remaining capacity, reaching the WCET cuts it off and reports an
//! overrun), (2) moves every CPU to slot `s` (past intervals dropped, misses reported, the frame
//! after next materialised at a frame boundary, jobs released) and (3) decides slot `s` under the
//! policy, charging it to the spare capacity immediately. Admissions between `step(s)` and
//! `step(s+1)` therefore see slot `s` as spent and guarantee from slot `s+1` on.
//!
//! # Multicore negotiation (in the spirit of Schorr's global acceptance test)
//! A firm job is tested on the requested CPU first; if that CPU rejects (or none was requested),
//! on every CPU in decreasing order of the free capacity before the deadline (ties: lower index),
//! and guaranteed on the first that accepts. Jobs never migrate once guaranteed, so the test is
//! exact per CPU; a job that would only fit split across CPUs is rejected (see docs/planner.md).
//! Periodic tasks are tested the same way with the frame template's EDF feasibility.
//!
//! # Frames
//! The horizon holds the current and the next frame; during frame `k` the frame `k+2` is built
//! from the template (offline jobs plus admitted periodic tasks) a few intervals and jobs per
//! slot, so that it is complete when `k+1` starts. Firm deadlines are clamped to the horizon end
//! (at least one whole frame ahead), a source of pessimism for deadlines further away. A periodic
//! task admitted or removed in frame `k` changes the template from frame `k+3` on (`k+1` is
//! complete and `k+2` is finished with the old template first); a removal also frees the
//! capacity its live jobs still hold at once.

use super::cpu::{Capacity, CpuState, JobEvent, JobKind, SoftJob, UNIT};
use super::offline::{Job, Miss, Slot};
use super::policy::{self, Decision, Freqs, Policy};

/// Planner parameters.
#[derive(Clone, Debug)]
pub struct PlannerConfig {
    pub policy: Policy,
    pub freqs: Freqs,
    /// Slot length in ns (converts observed run time into work).
    pub slot_ns: u64,
}

/// What the job planned on a CPU did in the previous slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// ns the planned job (or soft job) ran inside the slot.
    pub ran_ns: u64,
    /// It completed (or blocked for the rest of its instance).
    pub done: bool,
}

/// One CPU's frame as the planner sees it.
#[derive(Clone, Debug)]
pub struct CpuInput {
    /// Jobs of the frame (`Job::task` is the caller's task id).
    pub jobs: Vec<Job>,
    /// Whether best-effort work may use this CPU's slack.
    pub has_be: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error("step for slot {got}, expected slot {expected}")]
    OutOfOrder { expected: Slot, got: Slot },
    #[error("{got} observations for {cpus} CPUs")]
    Observations { got: usize, cpus: usize },
}

/// Reply to an admission request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Guaranteed on `cpu` (index into the managed CPUs): a firm job completes before slot
    /// `bound`; a periodic task runs from slot `bound` on.
    Accepted {
        cpu: usize,
        bound: Slot,
    },
    Rejected(Rejection),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Not enough spare capacity before the deadline on any CPU; the numbers are those of the CPU
    /// with the most free capacity.
    Capacity { cpu: usize, cap: Capacity },
    /// The periodic task makes the frame infeasible on every CPU; the miss on the first CPU tried.
    Infeasible { cpu: usize, miss: Miss },
    /// The request itself is invalid (e.g. a period that does not divide the frame).
    Invalid(String),
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Capacity { cpu, cap } => write!(
                f,
                "needs {} slots before slot {}, best CPU (index {cpu}) has {}",
                cap.needed, cap.deadline, cap.available
            ),
            Rejection::Infeasible { cpu, miss } => {
                write!(f, "frame infeasible on CPU index {cpu}: {miss}")
            }
            Rejection::Invalid(why) => f.write_str(why),
        }
    }
}

/// The planner of all managed CPUs.
#[derive(Clone, Debug)]
pub struct Planner {
    cpus: Vec<CpuState>,
    cfg: PlannerConfig,
    frame: Slot,
    next_slot: Slot,
    decisions: Vec<Decision>,
    events: Vec<(usize, JobEvent)>,
    scratch: Vec<JobEvent>,
}

impl Planner {
    /// State at slot 0. `frame` is the frame length in slots; every CPU's jobs must be feasible.
    pub fn new(cpus: &[CpuInput], frame: Slot, cfg: PlannerConfig) -> Self {
        let states = cpus
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let kinds = vec![JobKind::Periodic; c.jobs.len()];
                let mut s = CpuState::new(&c.jobs, &kinds, frame, c.has_be);
                s.stagger_build(i, cpus.len());
                s
            })
            .collect();
        Planner {
            cpus: states,
            cfg,
            frame,
            next_slot: 0,
            decisions: Vec::with_capacity(cpus.len()),
            events: Vec::new(),
            scratch: Vec::new(),
        }
    }

    pub fn config(&self) -> &PlannerConfig {
        &self.cfg
    }

    pub fn frame(&self) -> Slot {
        self.frame
    }

    pub fn cpus(&self) -> &[CpuState] {
        &self.cpus
    }

    /// The next slot `step` expects; admissions made now guarantee from this slot on.
    pub fn now(&self) -> Slot {
        self.next_slot
    }

    /// Job events of the last `step`: (CPU index, event).
    pub fn events(&self) -> &[(usize, JobEvent)] {
        &self.events
    }

    /// Reconciles slot `slot-1` with `obs` (one per CPU; empty = every planned job ran its whole
    /// slot without completing), then decides slot `slot` for every CPU.
    pub fn step(&mut self, slot: Slot, obs: &[Observation]) -> Result<&[Decision], StepError> {
        if slot != self.next_slot {
            return Err(StepError::OutOfOrder {
                expected: self.next_slot,
                got: slot,
            });
        }
        if !obs.is_empty() && obs.len() != self.cpus.len() {
            return Err(StepError::Observations {
                got: obs.len(),
                cpus: self.cpus.len(),
            });
        }
        self.events.clear();
        self.decisions.clear();
        let full = Observation {
            ran_ns: self.cfg.slot_ns,
            done: false,
        };
        for (i, cpu) in self.cpus.iter_mut().enumerate() {
            let o = obs.get(i).copied().unwrap_or(full);
            if slot > 0 {
                cpu.reconcile(o.ran_ns, self.cfg.slot_ns, o.done, &mut self.scratch);
            }
            cpu.advance(slot, &mut self.scratch);
            self.events.extend(self.scratch.drain(..).map(|e| (i, e)));
            self.decisions
                .push(policy::decide(cpu, slot, self.cfg.policy, &self.cfg.freqs));
        }
        self.next_slot = slot + 1;
        Ok(&self.decisions)
    }

    /// Admits a firm aperiodic job released now: `wcet` slots before slot `deadline` (absolute,
    /// exclusive), preferably on CPU index `cpu`.
    pub fn admit_firm(
        &mut self,
        task: usize,
        wcet: u64,
        deadline: Slot,
        cpu: Option<usize>,
    ) -> Admission {
        let now = self.next_slot;
        if let Some(c) = cpu.filter(|&c| c < self.cpus.len()) {
            // The requested CPU first; counting stops as soon as the job fits.
            let cap = self.cpus[c].acceptance_until(now, wcet, deadline, wcet as i64);
            if cap.available >= wcet as i64 {
                self.cpus[c].guarantee(now, task, wcet, deadline);
                return Admission::Accepted {
                    cpu: c,
                    bound: cap.deadline,
                };
            }
        }
        // The others by decreasing free capacity (ties: lower index): the first that accepts is
        // the one with the most free capacity, if it has enough (each test is exact), so one pass
        // finds it, without sorting. The requested CPU, already rejected, cannot be it.
        let mut best: Option<(usize, Capacity)> = None;
        for (i, c) in self.cpus.iter().enumerate() {
            let cap = c.acceptance(now, wcet, deadline);
            if best.is_none_or(|(_, b)| cap.available > b.available) {
                best = Some((i, cap));
            }
        }
        match best {
            Some((i, cap)) if cap.available >= wcet as i64 => {
                self.cpus[i].guarantee(now, task, wcet, deadline);
                Admission::Accepted {
                    cpu: i,
                    bound: cap.deadline,
                }
            }
            Some((cpu, cap)) => Admission::Rejected(Rejection::Capacity { cpu, cap }),
            None => Admission::Rejected(Rejection::Invalid("no managed CPU".into())),
        }
    }

    /// Admits a periodic task (implicit deadlines, released at multiples of `period`) into the
    /// frame template without regenerating any table; it runs from the returned slot on.
    pub fn admit_periodic(
        &mut self,
        task: usize,
        wcet: u64,
        period: Slot,
        cpu: Option<usize>,
    ) -> Admission {
        if period == 0 || !self.frame.is_multiple_of(period) {
            return Admission::Rejected(Rejection::Invalid(format!(
                "period {period} does not divide the frame of {} slots",
                self.frame
            )));
        }
        if wcet == 0 || wcet > period {
            return Admission::Rejected(Rejection::Invalid(format!(
                "wcet {wcet} must be in 1..={period} (the period)"
            )));
        }
        let instances: Vec<Job> = (0..self.frame / period)
            .map(|k| Job {
                task,
                instance: k as u32,
                release: k * period,
                deadline: (k + 1) * period,
                wcet,
            })
            .collect();
        let spare: Vec<i64> = self
            .cpus
            .iter()
            .map(|c| {
                let demand: u64 = c.template.iter().map(|j| j.wcet).sum();
                self.frame as i64 - demand as i64
            })
            .collect();
        let order = negotiation_order(cpu, self.cpus.len(), |i| spare[i]);
        let mut first_miss = None;
        for &i in &order {
            match self.cpus[i].add_periodic(&instances) {
                Ok(from) => {
                    return Admission::Accepted {
                        cpu: i,
                        bound: from,
                    }
                }
                Err(miss) => {
                    first_miss.get_or_insert((i, miss));
                }
            }
        }
        match first_miss {
            Some((cpu, miss)) => Admission::Rejected(Rejection::Infeasible { cpu, miss }),
            None => Admission::Rejected(Rejection::Invalid("no managed CPU".into())),
        }
    }

    /// Queues a soft aperiodic job (no guarantee) on `cpu`, or on the CPU with the shortest soft
    /// queue (ties: most spare capacity in the current interval). Returns the CPU index.
    pub fn submit_soft(&mut self, task: usize, wcet: u64, cpu: Option<usize>) -> Option<usize> {
        let target = cpu.filter(|&c| c < self.cpus.len()).or_else(|| {
            (0..self.cpus.len()).min_by_key(|&i| {
                let c = &self.cpus[i];
                (c.soft.len(), -c.ivs[0].sc, i)
            })
        })?;
        self.cpus[target].soft.push_back(SoftJob {
            task,
            rem: wcet.max(1) * UNIT,
        });
        Some(target)
    }

    /// Removes a periodic task (or drops a firm job) everywhere; its capacity returns at once.
    pub fn remove_task(&mut self, task: usize) -> bool {
        let mut found = false;
        for c in &mut self.cpus {
            found |= c.remove_task(task);
        }
        found
    }
}

/// The requested CPU first, then all others by decreasing `free` (ties: lower index).
fn negotiation_order(
    requested: Option<usize>,
    n: usize,
    free: impl Fn(usize) -> i64,
) -> Vec<usize> {
    let requested = requested.filter(|&c| c < n);
    let mut rest: Vec<usize> = (0..n).filter(|&i| Some(i) != requested).collect();
    rest.sort_by_key(|&i| (-free(i), i));
    requested.into_iter().chain(rest).collect()
}

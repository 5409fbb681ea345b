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
//! On the kernel path observations come late (a slot's BPF result is read after the planner has
//! decided slots ahead of it), so there the protocol is the deferred one:
//! ```text
//! planner.defer_observations(window)               // step no longer reconciles slot s-1
//! loop:
//!   planner.step(s, &[])                           // decide slot s (ahead of the kernel)
//!   planner.observe(cpu, t, observation of t)      // any decided t not reconciled yet, in order;
//!                                                  // returns the decided slots it voided
//! ```
//! A pending slot older than `window` (or skipped by a later `observe`) is reconciled with the
//! worst case and counted (`unobserved`); docs/planner.md, "Observations: the closed loop".
//!
//! # Multicore negotiation (in the spirit of Schorr's global acceptance test)
//! A firm job is tested on the requested CPU first; if that CPU rejects (or none was requested),
//! on the other CPUs from the least loaded on (load = slots of guaranteed work per frame in the
//! template plus the WCET of unfinished firm jobs; ties: lower index), and guaranteed on the
//! first that accepts. Each test stops counting once the job fits, so an acceptance costs one
//! short test per CPU tried, not a walk over every CPU's intervals. Jobs never migrate once guaranteed, so the test is
//! exact per CPU; a job that would only fit split across CPUs is rejected (see docs/planner.md).
//! Periodic tasks are tested the same way with the frame template's EDF feasibility.
//!
//! # Frames
//! The horizon holds the current and the next frame; during frame `k` the frame `k+2` is built
//! from the template (offline jobs plus admitted periodic tasks) a few intervals and jobs per
//! slot, so that it is complete when `k+1` starts. Firm deadlines are clamped to the horizon end
//! (at least one whole frame ahead), a source of pessimism for deadlines further away. The CPUs
//! start that build at staggered offsets (`⌊i·⌊F/2⌋/n⌋` for CPU `i` of `n`). A periodic task
//! admitted after `step(s)` (frame `k`) joins from the first frame whose build has not started on
//! its CPU: `k+2` if `s mod F` is below that CPU's offset (nothing of `k+2` exists there yet),
//! else `k+3` (the build of `k+2` is finished with the old template first); the reply's `bound`
//! is that frame's first slot, the release of its first job (docs/planner.md "Frames and
//! horizon"). A removal changes the template the same way and also frees the capacity its live
//! jobs still hold at once.

use super::cpu::{Capacity, CpuState, JobEvent, JobKind, Running, SoftJob, MAX_JOB_SLOTS, UNIT};
use super::due::DueWheel;
use super::offline::{Job, Miss, Slot};
use super::policy::{Decision, Freqs, Policy, Run};

mod shard;
pub use shard::{InPlace, Shard, StepExec, MAX_SHARDS};
use shard::{ShardOut, StepCtx};

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

/// Why [`Planner::observe`] refused an observation (nothing changed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ObserveError {
    #[error("managed CPU index {cpu} does not exist ({cpus} managed CPUs)")]
    NoCpu { cpu: usize, cpus: usize },
    #[error("slot {slot} is not decided yet (the planner decides slot {now} next)")]
    NotDecided { slot: Slot, now: Slot },
    #[error("slot {slot} of CPU index {cpu} is already reconciled (oldest pending: {oldest:?})")]
    Reconciled {
        cpu: usize,
        slot: Slot,
        oldest: Option<Slot>,
    },
}

/// Where an admission may place its job or task (CPU indices of the managed CPUs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// This CPU only: a rejection there is final (a task whose threads run on one CPU).
    Only(usize),
    /// This CPU first, then the others by the negotiation order.
    Prefer(usize),
    /// Any CPU, by the negotiation order.
    Any,
}

impl Placement {
    /// `Prefer(cpu)` for `Some(cpu)`, else `Any`.
    pub fn prefer(cpu: Option<usize>) -> Placement {
        cpu.map_or(Placement::Any, Placement::Prefer)
    }

    fn preferred(self) -> Option<usize> {
        match self {
            Placement::Only(c) | Placement::Prefer(c) => Some(c),
            Placement::Any => None,
        }
    }
}

/// Reply to an admission request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Guaranteed on `cpu` (index into the managed CPUs): a firm job completes before slot
    /// `bound`; a periodic task runs from slot `bound` on (its first job is released there, the
    /// first slot of the first frame whose build had not started on `cpu`).
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

/// How many due CPUs ahead `step` prefetches a CPU's deque lines (and twice as many, its
/// state's hot lines).
const PREFETCH_AHEAD: usize = 3;

/// The fewest due CPUs for which `step` prefetches: below it their state stays in the cache
/// between slots and the prefetches are only instructions.
const PREFETCH_MIN: usize = 64;

/// A CPU's quiet run (`policy::quiet_run_end`): `step` decides the slots before `until` as it
/// decided the run's first slot, without touching the CPU's state; slots `from..` of them are
/// not charged yet ([`Planner::sync`] charges them). A run starts with `from` at the decided
/// slot itself (`CpuState::defer_charge`), or after it when that slot went to a soft job and was
/// charged at once; a sync moves `from` on. `until == 0`: no run.
#[derive(Clone, Copy, Debug, Default)]
struct QuietRun {
    from: Slot,
    until: Slot,
}

/// The planner of all managed CPUs.
#[derive(Clone)]
pub struct Planner {
    cpus: Vec<CpuState>,
    /// Per CPU, dense: the slots `step` skips (a cache: left out of `Debug`).
    runs: Vec<QuietRun>,
    /// The CPU indices `step` visits in the slot being decided (scratch).
    due: Vec<u32>,
    /// Which CPUs' runs end in which slot (a cache of `runs`: `step` takes its due CPUs from it
    /// instead of scanning every run).
    wheel: DueWheel,
    cfg: PlannerConfig,
    frame: Slot,
    next_slot: Slot,
    decisions: Vec<Decision>,
    events: Vec<(usize, JobEvent)>,
    scratch: Vec<JobEvent>,
    /// `cpus[i].load_slots()`, refreshed whenever it can change (each step, each admission or
    /// removal): the negotiation scans this compact copy instead of one cold `CpuState` per CPU.
    loads: Vec<u64>,
    /// Decided slots per CPU that may wait for their observation ([`Self::defer_observations`];
    /// 0: each `step` reconciles the slot before it).
    window: usize,
    /// Slots reconciled with the worst case because no observation came in time.
    unobserved: u64,
    /// Slots voided by the last [`Self::observe`].
    voided: Vec<Slot>,
    /// One buffer per shard of a step ([`Self::set_step_shards`]).
    outs: Vec<ShardOut>,
    /// The fewest due CPUs of a step that is cut into shards.
    shard_min: usize,
    /// Where the last step cut its CPUs (scratch).
    cuts: Vec<(usize, usize)>,
    /// `step` as it was before the event-driven advance (every CPU advanced fully every slot):
    /// kept for the benchmark's before/after rows and the equivalence tests
    /// ([`Self::set_reference_step`]).
    reference_step: bool,
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
            .collect::<Vec<CpuState>>();
        let idle = Decision {
            run: Run::Idle,
            freq_ppm: UNIT as u32,
            idle_until: None,
        };
        Planner {
            loads: states.iter().map(CpuState::load_slots).collect(),
            runs: vec![QuietRun::default(); states.len()],
            due: Vec::with_capacity(states.len()),
            wheel: DueWheel::new(states.len(), 0),
            cpus: states,
            cfg,
            frame,
            next_slot: 0,
            decisions: vec![idle; cpus.len()],
            events: Vec::new(),
            scratch: Vec::new(),
            window: 0,
            unobserved: 0,
            voided: Vec::new(),
            outs: vec![ShardOut::default()],
            shard_min: usize::MAX,
            cuts: Vec::new(),
            reference_step: false,
        }
    }

    /// Steps every CPU through the full `advance` in every slot, as before the event-driven
    /// step (decisions are identical either way): the baseline of bench/planner_step.rs and
    /// of the equivalence tests.
    #[doc(hidden)]
    pub fn set_reference_step(&mut self, on: bool) {
        self.touch_all();
        self.reference_step = on;
        for c in &mut self.cpus {
            c.forget_quiet();
        }
    }

    /// Lets observations arrive late: `step` no longer reconciles the slot before it with the
    /// worst case, every decided slot waits for [`Self::observe`] — up to `window` slots per
    /// CPU; older ones are reconciled with the worst case (counted, [`Self::unobserved`]).
    pub fn defer_observations(&mut self, window: usize) {
        self.touch_all();
        self.window = window;
    }

    /// Slots reconciled with the worst case (a full slot, not completed) because their
    /// observation never came or came too late.
    pub fn unobserved(&self) -> u64 {
        self.unobserved
    }

    /// The oldest decided slot of CPU `cpu` whose observation is pending.
    pub fn oldest_pending(&self, cpu: usize) -> Option<Slot> {
        let run = self.runs.get(cpu)?;
        let decided = run.until.min(self.next_slot);
        match decided > run.from {
            // a quiet run's slots: the last one decided is the one pending
            true => Some(decided - 1),
            false => self.cpus[cpu].oldest_pending(),
        }
    }

    /// Applies what slot `slot` did on CPU index `cpu` (a slot already decided): the late
    /// reconciliation of the deferred protocol (see "Observations" in docs/planner.md).
    /// Pending slots of that CPU before `slot` are reconciled with the worst case first.
    /// Returns the slots after `slot` that had been decided for a job this observation
    /// completed: they are spent (charged when decided), but the job no longer runs in them,
    /// so the caller may give them to best-effort work or idle if they have not started.
    /// Job events go to [`Self::events`] (until the next `step` clears them).
    pub fn observe(
        &mut self,
        cpu: usize,
        slot: Slot,
        obs: Observation,
    ) -> Result<&[Slot], ObserveError> {
        let cpus = self.cpus.len();
        if cpu >= cpus {
            return Err(ObserveError::NoCpu { cpu, cpus });
        }
        self.touch(cpu);
        let c = &mut self.cpus[cpu];
        if slot >= self.next_slot {
            return Err(ObserveError::NotDecided {
                slot,
                now: self.next_slot,
            });
        }
        let oldest = c.oldest_pending();
        if oldest.is_none_or(|o| slot < o) {
            return Err(ObserveError::Reconciled { cpu, slot, oldest });
        }
        self.voided.clear();
        c.forget_quiet();
        while c.oldest_pending().is_some_and(|o| o < slot) {
            c.reconcile_into(
                self.cfg.slot_ns,
                self.cfg.slot_ns,
                false,
                &mut self.scratch,
                &mut self.voided,
            );
            self.unobserved += 1;
        }
        c.reconcile_into(
            obs.ran_ns,
            self.cfg.slot_ns,
            obs.done,
            &mut self.scratch,
            &mut self.voided,
        );
        self.loads[cpu] = c.load_slots();
        self.events.extend(self.scratch.drain(..).map(|e| (cpu, e)));
        Ok(&self.voided)
    }

    pub fn config(&self) -> &PlannerConfig {
        &self.cfg
    }

    /// Decides the slots from `now()` on under `policy`. Every policy keeps Algorithm 1's
    /// accounting (each decided slot is charged to the spare capacity as it is decided), so a
    /// guarantee given before the change holds after it; the DPM policies' idle periods start
    /// only at a decision, so a change never cuts one short (`idle_until` stays in force).
    pub fn set_policy(&mut self, policy: Policy) {
        self.touch_all();
        self.cfg.policy = policy;
        for c in &mut self.cpus {
            c.forget_quiet();
        }
    }

    pub fn frame(&self) -> Slot {
        self.frame
    }

    /// Every CPU's state, with the slots of quiet runs charged ([`Self::sync`]).
    pub fn cpus(&mut self) -> &[CpuState] {
        self.sync_all();
        &self.cpus
    }

    /// Managed CPUs.
    pub fn cpu_count(&self) -> usize {
        self.cpus.len()
    }

    /// The frame template of CPU index `cpu` (plan jobs and admitted periodic tasks).
    pub fn template(&self, cpu: usize) -> Option<&[Job]> {
        Some(&self.cpus.get(cpu)?.template)
    }

    /// Whether best-effort work may use CPU index `cpu`'s slack.
    pub fn has_be(&self, cpu: usize) -> bool {
        self.cpus.get(cpu).is_some_and(|c| c.has_be)
    }

    /// Whether planner task `task` has a guaranteed job on some CPU that still needs slots.
    pub fn has_unfinished(&self, task: usize) -> bool {
        // `done` changes only by a reconciliation or a removal, never in a quiet run.
        self.cpus.iter().any(|c| c.has_unfinished(task))
    }

    /// Capacity intervals, live jobs and template jobs over every CPU (quiet runs add none).
    pub fn size_items(&self) -> u64 {
        self.cpus
            .iter()
            .map(|c| (c.ivs.len() + c.jobs.len() + c.template.len()) as u64)
            .sum()
    }

    /// Charges CPU index `i`'s quiet-run slots decided so far: its state becomes what
    /// per-slot steps would have left (`CpuState::charge_quiet_run`); the run goes on.
    fn sync(&mut self, i: usize) {
        catch_up(
            &mut self.cpus[i],
            &mut self.runs[i],
            &self.decisions[i],
            self.next_slot,
        );
    }

    fn sync_all(&mut self) {
        for i in 0..self.cpus.len() {
            self.sync(i);
        }
    }

    /// [`Self::sync`] before CPU index `i`'s state changes outside `step`: its run ends.
    fn touch(&mut self, i: usize) {
        self.sync(i);
        self.runs[i].until = 0;
        self.wheel.mark(i, 0, self.next_slot);
    }

    fn touch_all(&mut self) {
        for i in 0..self.cpus.len() {
            self.touch(i);
        }
    }

    /// The CPU indices the last `step` visited when it used quiet runs (no observations, the
    /// event-driven step): the others repeated their decision untouched.
    #[cfg(test)]
    pub(crate) fn visited(&self) -> &[u32] {
        &self.due
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
        self.step_on(slot, obs, &InPlace)
    }

    /// [`Self::step`], with the visits of a slot in which many CPUs are due cut into
    /// [`Self::set_step_shards`] shards that `exec` runs (on other threads:
    /// the edge's `StepPool`). Decisions, events and state are those of [`Self::step`].
    pub fn step_on(
        &mut self,
        slot: Slot,
        obs: &[Observation],
        exec: &dyn StepExec,
    ) -> Result<&[Decision], StepError> {
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
        // The quiet path reconciles the slot before as run whole, not completed: only when
        // `step` reconciles it and the observation (if any) says so.
        let quiet = !self.reference_step && self.window == 0 && self.cfg.slot_ns > 0;
        // Quiet runs: with no observation at all, a CPU in a run repeats its decision and is
        // not touched (its slots are charged when the run ends or its state is read).
        let runs = quiet && obs.is_empty();
        // With quiet runs, the CPUs due in this slot (the others keep their decision).
        let count = match runs {
            true => {
                self.due.clear();
                let runs = &self.runs;
                self.wheel.take(slot, |i| runs[i].until, &mut self.due);
                self.due.len()
            }
            false => self.cpus.len(),
        };
        let ctx = StepCtx {
            slot,
            pos: (slot / self.frame, slot % self.frame),
            cfg: &self.cfg,
            obs,
            quiet,
            runs,
            window: self.window,
            reference_step: self.reference_step,
            prefetch: runs && count >= PREFETCH_MIN,
        };
        let k = match count >= self.shard_min {
            true => self.outs.len(),
            false => 1,
        };
        match k {
            1 => Shard {
                ctx,
                base: 0,
                due: &self.due,
                cpus: &mut self.cpus,
                runs: &mut self.runs,
                decisions: &mut self.decisions,
                loads: &mut self.loads,
                out: &mut self.outs[0],
                done: false,
            }
            .run(),
            _ => {
                shard::cuts(
                    runs.then_some(&self.due[..]),
                    self.cpus.len(),
                    k,
                    &mut self.cuts,
                );
                let mut shards = shard::split(
                    ctx,
                    &self.due,
                    &self.cuts,
                    &mut self.cpus,
                    &mut self.runs,
                    &mut self.decisions,
                    &mut self.loads,
                    &mut self.outs,
                );
                exec.run(&mut shards);
                for s in &mut shards {
                    // a shard the executor left out: the step stays whole
                    s.run();
                }
            }
        }
        for out in &mut self.outs[..k] {
            self.events.append(&mut out.events);
            self.unobserved += std::mem::take(&mut out.unobserved);
        }
        match runs {
            true => {
                for &i in &self.due {
                    self.wheel
                        .mark(i as usize, self.runs[i as usize].until, slot);
                }
            }
            // every run ended (or none began): every CPU is due in the next slot
            false => self.wheel.mark_all(self.cpus.len(), slot + 1),
        }
        self.next_slot = slot + 1;
        Ok(&self.decisions)
    }

    /// Cuts the visits of a slot in which at least `min_due` CPUs are due (at least 2) into
    /// `shards` (1 to [`MAX_SHARDS`], clamped) for [`Self::step_on`]'s executor. 1 (the
    /// default): one thread. Below `min_due` the hand-over costs more than it saves: handing a
    /// shard to another core, and the CPU states it visits moving to that core's cache, cost
    /// 1–5 µs on the machines of bench/results/issue34-step.txt (session 38).
    pub fn set_step_shards(&mut self, shards: usize, min_due: usize) {
        self.outs
            .resize_with(shards.clamp(1, MAX_SHARDS), ShardOut::default);
        self.shard_min = min_due.max(2);
    }

    /// Admits a firm aperiodic job released now: `wcet` slots before slot `deadline` (absolute,
    /// exclusive), on a CPU `place` allows (see [`Placement`]). A `wcet` above
    /// [`MAX_JOB_SLOTS`] is refused as invalid; any `deadline` is clamped to the horizon.
    pub fn admit_firm(
        &mut self,
        task: usize,
        wcet: u64,
        deadline: Slot,
        place: Placement,
    ) -> Admission {
        let now = self.next_slot;
        let n = self.cpus.len();
        if wcet > MAX_JOB_SLOTS {
            return Admission::Rejected(Rejection::Invalid(too_long("wcet", wcet)));
        }
        if let Placement::Only(i) = place {
            if i >= n {
                return Admission::Rejected(Rejection::Invalid(no_cpu(i, n)));
            }
            return match self.try_firm(i, now, task, wcet, deadline) {
                Ok(a) => a,
                Err(cap) => Admission::Rejected(Rejection::Capacity { cpu: i, cap }),
            };
        }
        let requested = place.preferred().filter(|&c| c < n);
        // The CPU with the most free capacity among those that rejected, with its numbers.
        let mut best: Option<(usize, Capacity)> = None;
        let mut reject = |i: usize, cap: Capacity| {
            if best.is_none_or(|(_, b)| cap.available > b.available) {
                best = Some((i, cap));
            }
        };
        // The requested CPU first, then the least loaded of the others; usually one of them
        // accepts and the rest is never ordered.
        if let Some(i) = requested {
            match self.try_firm(i, now, task, wcet, deadline) {
                Ok(a) => return a,
                Err(cap) => reject(i, cap),
            }
        }
        let least = (0..n)
            .filter(|&c| Some(c) != requested)
            .min_by_key(|&c| (self.loads[c], c));
        if let Some(i) = least {
            match self.try_firm(i, now, task, wcet, deadline) {
                Ok(a) => return a,
                Err(cap) => reject(i, cap),
            }
        }
        if let Some(first) = least {
            let mut rest: Vec<usize> = (0..n)
                .filter(|&c| c != first && Some(c) != requested)
                .collect();
            rest.sort_unstable_by_key(|&c| (self.loads[c], c));
            for i in rest {
                match self.try_firm(i, now, task, wcet, deadline) {
                    Ok(a) => return a,
                    Err(cap) => reject(i, cap),
                }
            }
        }
        match best {
            Some((cpu, cap)) => Admission::Rejected(Rejection::Capacity { cpu, cap }),
            None => Admission::Rejected(Rejection::Invalid("no managed CPU".into())),
        }
    }

    /// The acceptance test alone of a firm job released now, `wcet` slots before slot
    /// `deadline` on CPU `i` (as [`Self::admit_firm`] with [`Placement::Only`] would run it;
    /// nothing changes): `Err` with the count when it does not fit.
    pub fn firm_fits(&mut self, i: usize, wcet: u64, deadline: Slot) -> Result<(), Capacity> {
        let refuse = || Capacity {
            needed: wcet,
            available: 0,
            deadline,
        };
        if wcet > MAX_JOB_SLOTS {
            return Err(refuse());
        }
        if i >= self.cpus.len() {
            return Err(refuse());
        }
        self.sync(i);
        let cap = self.cpus[i].acceptance_until(self.next_slot, wcet, deadline, wcet as i64);
        match cap.available >= wcet as i64 {
            true => Ok(()),
            false => Err(cap),
        }
    }

    /// Acceptance test of a firm job on CPU `i`, counting only until the job fits, and the
    /// guarantee routine if it does. A rejection returns the complete count (it never reached
    /// `wcet`).
    fn try_firm(
        &mut self,
        i: usize,
        now: Slot,
        task: usize,
        wcet: u64,
        deadline: Slot,
    ) -> Result<Admission, Capacity> {
        self.sync(i);
        let cap = self.cpus[i].acceptance_until(now, wcet, deadline, wcet as i64);
        if cap.available < wcet as i64 {
            return Err(cap);
        }
        self.touch(i);
        self.cpus[i].guarantee(now, task, wcet, deadline);
        self.loads[i] = self.cpus[i].load_slots();
        Ok(Admission::Accepted {
            cpu: i,
            bound: cap.deadline,
        })
    }

    /// Admits a periodic task (implicit deadlines, released at multiples of `period`) into the
    /// frame template without regenerating any table; it runs from the returned slot on: the
    /// first slot of frame `k+2` or `k+3` for the frame `k` of the last step, by the CPU's build
    /// offset (module doc, "Frames").
    pub fn admit_periodic(
        &mut self,
        task: usize,
        wcet: u64,
        period: Slot,
        place: Placement,
    ) -> Admission {
        self.admit_periodic_window(task, wcet, period, 0, period, place)
    }

    /// [`Self::admit_periodic`] with constrained windows: job `k` of the frame is released at
    /// `k·period + offset` and due `deadline` slots later. The plan's rule:
    /// `1 ≤ wcet ≤ deadline` and `offset + deadline ≤ period`, so every job lies inside its
    /// period and inside the frame.
    pub fn admit_periodic_window(
        &mut self,
        task: usize,
        wcet: u64,
        period: Slot,
        offset: Slot,
        deadline: Slot,
        place: Placement,
    ) -> Admission {
        if wcet > MAX_JOB_SLOTS {
            return Admission::Rejected(Rejection::Invalid(too_long("wcet", wcet)));
        }
        if period == 0 || !self.frame.is_multiple_of(period) {
            return Admission::Rejected(Rejection::Invalid(format!(
                "period {period} does not divide the frame of {} slots",
                self.frame
            )));
        }
        if offset.checked_add(deadline).is_none_or(|end| end > period) {
            return Admission::Rejected(Rejection::Invalid(format!(
                "offset {offset} + deadline {deadline} must be at most the period {period}"
            )));
        }
        if wcet == 0 || wcet > deadline {
            return Admission::Rejected(Rejection::Invalid(match deadline == period {
                true => format!("wcet {wcet} must be in 1..={period} (the period)"),
                false => format!("wcet {wcet} must be in 1..={deadline} (the deadline)"),
            }));
        }
        let instances: Vec<Job> = (0..self.frame / period)
            .map(|k| Job {
                task,
                instance: k as u32,
                release: k * period + offset,
                deadline: k * period + offset + deadline,
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
        let n = self.cpus.len();
        let order = match place {
            Placement::Only(i) if i >= n => {
                return Admission::Rejected(Rejection::Invalid(no_cpu(i, n)))
            }
            Placement::Only(i) => vec![i],
            _ => negotiation_order(place.preferred(), n, |i| spare[i]),
        };
        let mut first_miss = None;
        for &i in &order {
            self.touch(i);
            match self.cpus[i].add_periodic(&instances) {
                Ok(from) => {
                    self.loads[i] = self.cpus[i].load_slots();
                    return Admission::Accepted {
                        cpu: i,
                        bound: from,
                    };
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
        if cpu.is_none_or(|c| c >= self.cpus.len()) {
            self.sync_all();
        }
        let target = cpu.filter(|&c| c < self.cpus.len()).or_else(|| {
            (0..self.cpus.len()).min_by_key(|&i| {
                let c = &self.cpus[i];
                (c.soft.len(), -c.ivs[0].sc, i)
            })
        })?;
        self.touch(target);
        self.cpus[target].forget_quiet();
        self.cpus[target].soft.push_back(SoftJob {
            task,
            // no guarantee to keep: a budget above the bound is cut to it instead of wrapping
            rem: wcet.clamp(1, MAX_JOB_SLOTS) * UNIT,
        });
        Some(target)
    }

    /// Removes a periodic task (or drops a firm job) everywhere; its capacity returns at once.
    pub fn remove_task(&mut self, task: usize) -> bool {
        self.touch_all();
        let mut found = false;
        for (c, load) in self.cpus.iter_mut().zip(&mut self.loads) {
            found |= c.remove_task(task);
            *load = c.load_slots();
        }
        found
    }
}

/// Charges the slots of `run` decided before `upto` and not charged yet, each as `d` ran
/// ([`CpuState::charge_quiet_run`]).
#[inline]
fn catch_up(cpu: &mut CpuState, run: &mut QuietRun, d: &Decision, upto: Slot) {
    let end = upto.min(run.until);
    if end > run.from {
        let running = match d.run {
            Run::Job { job, .. } => Running::Job {
                idx: job,
                credited: 0,
                freq_ppm: d.freq_ppm,
            },
            _ => Running::Other,
        };
        cpu.charge_quiet_run(run.from, end, running);
        run.from = end;
    }
}

impl std::fmt::Debug for Planner {
    /// The state with every quiet run charged (what per-slot steps leave), the runs left out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut p = self.clone();
        p.sync_all();
        f.debug_struct("Planner")
            .field("cpus", &p.cpus)
            .field("cfg", &p.cfg)
            .field("frame", &p.frame)
            .field("next_slot", &p.next_slot)
            .field("decisions", &p.decisions)
            .field("events", &p.events)
            .field("scratch", &p.scratch)
            .field("loads", &p.loads)
            .field("window", &p.window)
            .field("unobserved", &p.unobserved)
            .field("voided", &p.voided)
            .field("reference_step", &p.reference_step)
            .finish()
    }
}

/// The refusal of a `field` above [`MAX_JOB_SLOTS`].
fn too_long(field: &str, value: u64) -> String {
    format!("{field} {value} slots is above the planner's bound of {MAX_JOB_SLOTS} slots")
}

fn no_cpu(i: usize, n: usize) -> String {
    format!("managed CPU index {i} does not exist ({n} managed CPUs)")
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

//! A step split over threads: the CPUs a slot visits, cut into contiguous shards that the
//! caller's executor may step at the same time (issue 34, 256 CPUs × 100 jobs).
//!
//! # Problem
//! A slot in which most CPUs are due (a release or completion every CPU has, a frame start)
//! costs one visit per due CPU, 70–150 ns each on the machines of bench/results/issue34-step.txt:
//! 18–40 µs at 256 CPUs, on one thread. The visits of different CPUs share nothing: each reads
//! and writes only its own state, run, decision and load, and appends its own events.
//!
//! # Design
//! `step` cuts the due CPUs (in CPU order) into `k` runs of equal length and the CPU range at
//! the first CPU of each run, so the shards hold disjoint sub-slices of the per-CPU vectors
//! (`split_at_mut`, no `unsafe`) and equal shares of the work. Each shard collects its events in
//! its own buffer; `step` appends them shard by shard, which is CPU order, as one thread would
//! have. What is shared is read-only ([`StepCtx`]); the due-wheel is marked after the shards,
//! from their runs (marking only records each run's end, so its place changes nothing).
//!
//! The planner starts no thread and takes no lock: the executor is the caller's
//! ([`StepExec`]), e.g. the edge's `StepPool` with helper threads on housekeeping CPUs. A
//! shard the executor did not run is run by `step` itself afterwards, so a lazy or wrong
//! executor makes a step slower, never different.

use super::{catch_up, QuietRun, PREFETCH_AHEAD};
use crate::planner::cpu::{CpuState, JobEvent};
use crate::planner::offline::Slot;
use crate::planner::policy::{self, Decision, Run};
use crate::planner::runtime::{Observation, PlannerConfig};

/// The most shards a step is cut into.
pub const MAX_SHARDS: usize = 16;

/// Runs the shards of one step ([`super::Planner::step_on`]).
pub trait StepExec {
    /// Runs [`Shard::run`] of each shard once, on any threads, and returns when all have run.
    fn run(&self, shards: &mut [Shard<'_>]);
}

/// Runs every shard on the calling thread, in order (what [`super::Planner::step`] does).
pub struct InPlace;

impl StepExec for InPlace {
    fn run(&self, shards: &mut [Shard<'_>]) {
        for s in shards {
            s.run();
        }
    }
}

/// What every shard of a step reads.
#[derive(Clone, Copy)]
pub(super) struct StepCtx<'a> {
    pub(super) slot: Slot,
    /// `(slot / frame, slot % frame)`.
    pub(super) pos: (u64, Slot),
    pub(super) cfg: &'a PlannerConfig,
    pub(super) obs: &'a [Observation],
    /// The event-driven quiet path may decide (see `Planner::step`).
    pub(super) quiet: bool,
    /// Quiet runs: only the due CPUs are visited.
    pub(super) runs: bool,
    pub(super) window: usize,
    pub(super) reference_step: bool,
    /// Enough CPUs are due in the step (all shards) for their states to be cold.
    pub(super) prefetch: bool,
}

/// A shard's buffers, kept by the planner between steps.
#[derive(Clone, Debug, Default)]
pub(super) struct ShardOut {
    scratch: Vec<JobEvent>,
    pub(super) events: Vec<(usize, JobEvent)>,
    pub(super) unobserved: u64,
}

/// One shard of a step: the CPUs `base..base + cpus.len()`, of which it visits those in `due`
/// (global indices, ascending) under quiet runs, else all.
pub struct Shard<'a> {
    pub(super) ctx: StepCtx<'a>,
    pub(super) base: usize,
    pub(super) due: &'a [u32],
    pub(super) cpus: &'a mut [CpuState],
    pub(super) runs: &'a mut [QuietRun],
    pub(super) decisions: &'a mut [Decision],
    pub(super) loads: &'a mut [u64],
    pub(super) out: &'a mut ShardOut,
    pub(super) done: bool,
}

impl Shard<'_> {
    /// CPUs this shard visits.
    pub fn visits(&self) -> usize {
        match self.ctx.runs {
            true => self.due.len(),
            false => self.cpus.len(),
        }
    }

    /// Steps the shard's CPUs (once: a second call does nothing).
    pub fn run(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let ctx = self.ctx;
        let slot = ctx.slot;
        let full = Observation {
            ran_ns: ctx.cfg.slot_ns,
            done: false,
        };
        let whole = |o: &Observation| o.ran_ns >= full.ran_ns && !o.done;
        let count = self.visits();
        // On a large node a CPU's state is not in the cache any more when its turn comes: the
        // state of the ones a few places ahead is prefetched, in two stages (the struct, then
        // the deque lines it points at).
        let prefetch = ctx.prefetch;
        for k in 0..count {
            if prefetch {
                if let Some(&j) = self.due.get(k + 2 * PREFETCH_AHEAD) {
                    self.cpus[j as usize - self.base].prefetch_state();
                }
                if let Some(&j) = self.due.get(k + PREFETCH_AHEAD) {
                    self.cpus[j as usize - self.base].prefetch_data();
                }
            }
            let l = match ctx.runs {
                true => self.due[k] as usize - self.base,
                false => k,
            };
            let i = self.base + l;
            let cpu = &mut self.cpus[l];
            catch_up(cpu, &mut self.runs[l], &self.decisions[l], slot);
            // In a run, the decided slot is charged with the run's other slots.
            cpu.defer_charge.0 = ctx.runs;
            let quick = match ctx.quiet && ctx.obs.get(i).is_none_or(whole) {
                true => policy::step_quiet(cpu, slot, ctx.cfg.policy, &ctx.cfg.freqs),
                false => None,
            };
            let d = match quick {
                Some(d) => d,
                None => {
                    let out = &mut *self.out;
                    if ctx.reference_step {
                        cpu.iv_hint.0 = crate::planner::cpu::NO_HINT;
                    }
                    if let Some(o) = ctx.obs.get(i) {
                        cpu.reconcile(o.ran_ns, ctx.cfg.slot_ns, o.done, &mut out.scratch);
                    } else if ctx.window == 0 {
                        cpu.reconcile(full.ran_ns, ctx.cfg.slot_ns, full.done, &mut out.scratch);
                    }
                    while cpu.pending.len() > ctx.window {
                        cpu.reconcile(full.ran_ns, ctx.cfg.slot_ns, full.done, &mut out.scratch);
                        out.unobserved += 1;
                    }
                    if ctx.reference_step {
                        cpu.advance_all(slot, ctx.pos, &mut out.scratch);
                    } else {
                        cpu.advance(slot, ctx.pos, &mut out.scratch);
                    }
                    if !out.scratch.is_empty() {
                        out.events.extend(out.scratch.drain(..).map(|e| (i, e)));
                    }
                    let d = policy::decide(cpu, slot, ctx.cfg.policy, &ctx.cfg.freqs);
                    self.loads[l] = cpu.load_slots();
                    d
                }
            };
            if ctx.runs {
                cpu.defer_charge.0 = false;
                let until = policy::quiet_run_end(cpu, &d, slot, ctx.cfg.policy, &ctx.cfg.freqs);
                // `slot` itself is not charged yet unless it went to a soft job (`consume`).
                let from = match d.run {
                    Run::Soft { .. } => slot + 1,
                    _ => slot,
                };
                self.runs[l] = QuietRun { from, until };
            } else if self.runs[l].until != 0 {
                self.runs[l] = QuietRun::default();
            }
            self.decisions[l] = d;
        }
    }
}

/// Where `step` cuts `n` CPUs into `k` shards: the first CPU of each shard after the first.
/// Under quiet runs each shard gets `⌊due·j/k⌋ − ⌊due·(j−1)/k⌋` of the due CPUs (`due` in
/// ascending order); else `n` is cut evenly. Cuts are ascending; an empty shard is possible
/// only when there are fewer due CPUs than shards.
pub(super) fn cuts(due: Option<&[u32]>, n: usize, k: usize, out: &mut Vec<(usize, usize)>) {
    out.clear();
    for j in 1..k {
        out.push(match due {
            Some(due) => {
                let at = due.len() * j / k;
                (due.get(at).map_or(n, |&c| c as usize), at)
            }
            None => (n * j / k, 0),
        });
    }
}

/// The shards of one step, cut at `cuts` ([`cuts`]): disjoint sub-slices of the per-CPU
/// vectors, and of `due` under quiet runs.
#[allow(clippy::too_many_arguments)]
pub(super) fn split<'a>(
    ctx: StepCtx<'a>,
    mut due: &'a [u32],
    cuts: &[(usize, usize)],
    mut cpus: &'a mut [CpuState],
    mut runs: &'a mut [QuietRun],
    mut decisions: &'a mut [Decision],
    mut loads: &'a mut [u64],
    outs: &'a mut [ShardOut],
) -> Vec<Shard<'a>> {
    let (n, count) = (cpus.len(), due.len());
    let mut shards = Vec::with_capacity(cuts.len() + 1);
    let (mut base, mut at) = (0, 0);
    for (j, out) in outs.iter_mut().take(cuts.len() + 1).enumerate() {
        let (end, due_end) = cuts.get(j).copied().unwrap_or((n, count));
        let len = end - base;
        let (c, c2) = std::mem::take(&mut cpus).split_at_mut(len);
        let (r, r2) = std::mem::take(&mut runs).split_at_mut(len);
        let (d, d2) = std::mem::take(&mut decisions).split_at_mut(len);
        let (l, l2) = std::mem::take(&mut loads).split_at_mut(len);
        (cpus, runs, decisions, loads) = (c2, r2, d2, l2);
        let mine: &[u32] = match ctx.runs {
            true => {
                let (m, rest) = due.split_at(due_end - at);
                due = rest;
                m
            }
            false => &[],
        };
        shards.push(Shard {
            ctx,
            base,
            due: mine,
            cpus: c,
            runs: r,
            decisions: d,
            loads: l,
            out,
            done: false,
        });
        (base, at) = (end, due_end);
    }
    shards
}

#[cfg(test)]
mod tests {
    use super::cuts;

    #[test]
    fn cuts_share_the_due_cpus_evenly_and_in_order() {
        let due: Vec<u32> = vec![0, 3, 4, 9, 10, 11, 200, 201];
        let mut out = Vec::new();
        cuts(Some(&due), 256, 2, &mut out);
        assert_eq!(out, vec![(10, 4)]);
        cuts(Some(&due), 256, 3, &mut out);
        assert_eq!(out, vec![(4, 2), (11, 5)]);
        cuts(None, 256, 4, &mut out);
        assert_eq!(out, vec![(64, 0), (128, 0), (192, 0)]);
        cuts(Some(&[5]), 8, 2, &mut out);
        assert_eq!(out, vec![(5, 0)]);
    }
}

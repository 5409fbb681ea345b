//! Timing of `tt` tasks: the three models of the format, normalised to one form, and the frame.
//!
//! - `period` + `wcet` (+ `offset`, default 0; `deadline`, relative, default `period`), in slots.
//!   Rule: `1 ≤ wcet ≤ deadline` and `offset + deadline ≤ period`, so every job of the frame lies
//!   inside the frame and the frame repeats without jobs spilling across its end.
//! - `utilization` U + `latency_us` L (the VM vCPU model of the EASS paper, Section III): a task
//!   scheduled at the very start of one period and the very end of the next leaves a gap of
//!   2(T − C) = 2T(1 − U), so T must satisfy T ≤ L / (2(1 − U)) with L in slots
//!   (`latency_us / slot_us`). We take the largest integer T (floor) and C = ⌈U·T⌉ (ceiling, so
//!   the reserved utilization is at least U; the gap 2(T − C) ≤ 2T(1 − U) ≤ L still holds).
//!   Both roundings tolerate 1e-9 of floating-point error (U·T = 3.0000000000000004 is 3).
//!   Requires 0 < U < 1; a spec whose bound is below one slot is rejected.
//! - `jobs`: explicit `[release, deadline)` windows with a `wcet` each, absolute slots inside the
//!   frame, sorted with disjoint windows.
//! - `interface`: a component's periodic workload and local scheduler (RM or EDF); the task is
//!   periodic with the optimal interface Γ = (Π, Θ) of [`crate::planner::interface`]: period Π,
//!   wcet Θ, offset 0, deadline Π ([`InterfaceTiming`] keeps the workload and the result).

use super::error::Rule;
use super::{LocalSched, LocalThread, ThreadSelector};
use crate::planner::interface::{Interface, Scheduler, Supply};
use crate::planner::offline::Slot;
use serde::Serialize;

/// Largest frame accepted: 1,000,000 slots (1000 s at 1 ms slots); the table, jobs and
/// intervals grow linearly with it.
pub const FRAME_CAP_SLOTS: u64 = 1_000_000;

/// Tolerance for the floor/ceil of the VM model.
const EPSILON: f64 = 1e-9;

/// A `tt` task's timing after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Timing {
    Periodic {
        period: Slot,
        wcet: u64,
        offset: Slot,
        /// Relative deadline.
        deadline: Slot,
    },
    /// Explicit `(release, deadline, wcet)` windows, sorted, disjoint.
    Jobs(Vec<(Slot, Slot, u64)>),
}

impl Timing {
    pub fn period(&self) -> Option<Slot> {
        match self {
            Timing::Periodic { period, .. } => Some(*period),
            Timing::Jobs(_) => None,
        }
    }

    /// `(release, deadline, wcet)` of every job inside `[0, frame)`, in time order.
    pub fn jobs(&self, frame: Slot) -> Box<dyn Iterator<Item = (Slot, Slot, u64)> + '_> {
        match self {
            &Timing::Periodic {
                period,
                wcet,
                offset,
                deadline,
            } => Box::new((0..frame / period).map(move |k| {
                let r = k * period + offset;
                (r, r + deadline, wcet)
            })),
            Timing::Jobs(j) => Box::new(j.iter().copied()),
        }
    }

    /// Number of jobs inside `[0, frame)`.
    pub fn job_count(&self, frame: Slot) -> usize {
        match self {
            Timing::Periodic { period, .. } => (frame / period) as usize,
            Timing::Jobs(j) => j.len(),
        }
    }

    /// Slots of execution demanded per frame.
    pub fn demand(&self, frame: Slot) -> u64 {
        match self {
            Timing::Periodic { period, wcet, .. } => frame / period * wcet,
            Timing::Jobs(j) => j.iter().map(|x| x.2).sum(),
        }
    }
}

/// The timing of a `tt` task given by `interface`: its workload, local scheduler and supply,
/// and the optimal interface computed for them. The task's timing is exactly
/// `period: result.resource.period, wcet: result.resource.budget` (offset 0, deadline the
/// period).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InterfaceTiming {
    pub scheduler: Scheduler,
    pub supply: Supply,
    /// The workload in plan order.
    pub workload: Vec<WorkloadTask>,
    /// `planner::interface::optimal_interface` of the workload: Γ = `result.resource`.
    pub result: Interface,
    /// `interface.budget`: the budget the task gets instead of Γ's Θ (an experiment: below Θ
    /// the workload is not guaranteed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<u64>,
}

/// One periodic task of an interface workload, in slots (deadline = period).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkloadTask {
    pub period: Slot,
    pub wcet: u64,
    /// The thread that runs it (`thread` or `tid` in the plan), if named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadSelector>,
}

impl InterfaceTiming {
    /// The periodic timing of Γ = (Π, Θ): period Π, wcet Θ (or `budget`), offset 0, deadline Π.
    pub fn timing(&self) -> Timing {
        let r = self.result.resource;
        Timing::Periodic {
            period: r.period,
            wcet: self.budget.unwrap_or(r.budget),
            offset: 0,
            deadline: r.period,
        }
    }

    /// The local scheduling of the task's threads when every workload task names its thread;
    /// `None` when none does (validation refuses a mix).
    pub fn local(&self) -> Option<LocalSched> {
        let threads = self
            .workload
            .iter()
            .map(|w| {
                Some(LocalThread {
                    thread: w.thread.clone()?,
                    period: w.period,
                    wcet: w.wcet,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(LocalSched {
            scheduler: self.scheduler,
            threads,
        })
    }
}

/// The VM model: `(period, wcet)` in slots for utilization `u` and latency `latency_slots`.
pub fn vm_period_wcet(u: f64, latency_slots: f64) -> Result<(Slot, u64), Rule> {
    let bound = latency_slots / (2.0 * (1.0 - u));
    let period = (bound + EPSILON).floor();
    if period < 1.0 {
        return Err(Rule::LatencyTooShort {
            latency_slots,
            utilization: u,
            bound,
        });
    }
    let period = period as u64; // saturates; an absurd period is caught by the frame cap
    let wcet = ((u * period as f64) - EPSILON).ceil().max(1.0) as u64;
    Ok((period, wcet.min(period)))
}

/// Least common multiple of `periods`; `Err(lcm)` when it exceeds `cap` (`u128::MAX` if it
/// does not even fit in 128 bits).
pub fn lcm(periods: impl IntoIterator<Item = Slot>, cap: u64) -> Result<Slot, u128> {
    let mut acc: u128 = 1;
    for p in periods {
        let p = p as u128;
        acc = (acc / gcd(acc, p)).saturating_mul(p);
    }
    if acc > cap as u128 {
        Err(acc)
    } else {
        Ok(acc as u64)
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_model_rounds_period_down_and_wcet_up() {
        // U = 0.25, L = 20 slots: bound 20 / (2 · 0.75) = 13.33 -> T = 13; C = ⌈3.25⌉ = 4.
        assert_eq!(vm_period_wcet(0.25, 20.0), Ok((13, 4)));
        // U = 0.3, L = 14 slots: bound 14 / 1.4 = 10 exactly (float 9.999..) -> T = 10;
        // C = ⌈0.3 · 10⌉ = 3 despite 0.3 · 10 = 3.0000000000000004 in f64.
        assert_eq!(vm_period_wcet(0.3, 14.0), Ok((10, 3)));
        // U = 0.5, L = 1.5 slots: bound 1.5 / 1 = 1.5 -> T = 1, C = ⌈0.5⌉ = 1 (full CPU).
        assert_eq!(vm_period_wcet(0.5, 1.5), Ok((1, 1)));
    }

    #[test]
    fn vm_model_rejects_sub_slot_period() {
        // U = 0.5, L = 1.9 slots: bound 1.9 / 1 = 1.9 ok; L = 0.9: bound 0.9 < 1 -> rejected.
        assert!(vm_period_wcet(0.5, 1.9).is_ok());
        assert!(matches!(
            vm_period_wcet(0.5, 0.9),
            Err(Rule::LatencyTooShort { .. })
        ));
    }

    #[test]
    fn lcm_reports_full_value_above_cap() {
        assert_eq!(lcm([4, 6, 10], 1000), Ok(60));
        // 999983 and 999979 are primes: the lcm is their product, far above the cap.
        assert_eq!(
            lcm([999_983, 999_979], 1_000_000),
            Err(999_983u128 * 999_979)
        );
    }

    #[test]
    fn an_interface_is_periodic_gamma_and_local_only_when_every_thread_is_named() {
        use crate::planner::interface::{optimal_interface, Task, Workload};
        let w = Workload::new(&[
            Task { period: 5, wcet: 1 },
            Task {
                period: 10,
                wcet: 2,
            },
        ])
        .unwrap();
        let result = optimal_interface(&w, Scheduler::Rm, Supply::General).unwrap();
        let r = result.resource;
        let named = |a: Option<ThreadSelector>, b: Option<ThreadSelector>| InterfaceTiming {
            scheduler: Scheduler::Rm,
            supply: Supply::General,
            workload: vec![
                WorkloadTask {
                    period: 5,
                    wcet: 1,
                    thread: a,
                },
                WorkloadTask {
                    period: 10,
                    wcet: 2,
                    thread: b,
                },
            ],
            result: result.clone(),
            budget: None,
        };
        let none = named(None, None);
        assert_eq!(
            none.timing(),
            Timing::Periodic {
                period: r.period,
                wcet: r.budget,
                offset: 0,
                deadline: r.period
            }
        );
        assert_eq!(none.local(), None);
        let comm = ThreadSelector::Comm("a".into());
        assert_eq!(named(Some(comm.clone()), None).local(), None);
        let local = named(Some(comm.clone()), Some(ThreadSelector::Tid(9)))
            .local()
            .unwrap();
        assert_eq!(local.scheduler, Scheduler::Rm);
        assert_eq!(
            local.threads,
            vec![
                LocalThread {
                    thread: comm,
                    period: 5,
                    wcet: 1
                },
                LocalThread {
                    thread: ThreadSelector::Tid(9),
                    period: 10,
                    wcet: 2
                }
            ]
        );
    }

    #[test]
    fn periodic_jobs_respect_offset_and_deadline() {
        let t = Timing::Periodic {
            period: 5,
            wcet: 2,
            offset: 1,
            deadline: 3,
        };
        assert_eq!(t.jobs(10).collect::<Vec<_>>(), vec![(1, 4, 2), (6, 9, 2)]);
        assert_eq!(t.job_count(10), 2);
        assert_eq!(t.demand(10), 4);
    }
}

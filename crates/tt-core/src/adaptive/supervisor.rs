//! The supervisor (seed 003, LFS++, Section 4.2): the adaptive budget requests are granted if
//! they fit next to the guaranteed tasks, curbed otherwise — never at a guaranteed task's
//! expense.
//!
//! # Rule
//! The paper leaves the rule open ("a weighted optimisation problem or a weighted compression
//! function"; its supervisor, Palopoli et al. 2009, keeps `Σ Q/T ≤ 1`). scx_tt's rule, on the
//! requests in priority order (the caller's order: first = most important), with an admission
//! oracle that answers "does this set of periodic reservations (period, WCET) fit next to the
//! guaranteed tasks?":
//! ```text
//! 1. all requests fit                  → every request granted (λ = 1)
//! 2. while the minimums of the kept requests do not fit: drop the last kept one
//!    (dropped: no reservation, the task runs as best effort; nothing kept → λ = 0)
//! 3. compression of the kept ones: grant_i(λ) = min_i + ⌊λ · (req_i − min_i)⌋, with the
//!    largest λ ∈ [0, 1] whose grants fit — searched by bisection over the breakpoints
//!    λ = k / (req_j − min_j) (exact rationals), where some grant changes
//! ```
//! Each kept request loses the same fraction `1 − λ` of its excess over its minimum
//! (proportional compression; the slots the floor leaves are not redistributed). The oracle must
//! be monotone (a set that fits still fits with smaller WCETs or fewer members): the planner's
//! EDF feasibility is. Only a set the oracle accepted is returned, so whatever the oracle
//! protects (the guaranteed tasks) is never put at risk.
//!
//! Oracle calls: 1 (fits), else at most `1 + (d + 1) + 1 + ⌈log₂(B + 1)⌉` for `d` drops and
//! the bisection over the `B < Σ (req − min)` breakpoints.

use super::ParamError;
use crate::planner::offline::{self, Job};
use crate::planner::runtime::CpuInput;
use crate::planner::{Admission, Freqs, Placement, Planner, PlannerConfig, Policy};
use std::cmp::Ordering;

/// A periodic reservation: `wcet` slots in every `period` slots (deadline the period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodicReservation {
    /// The adaptive task's id (the caller's).
    pub id: usize,
    pub period: u64,
    pub wcet: u64,
}

/// One adaptive task's request: `wcet` slots every `period`, compressible down to `min_wcet`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveRequest {
    pub id: usize,
    pub period: u64,
    pub wcet: u64,
    pub min_wcet: u64,
}

impl AdaptiveRequest {
    /// `1 ≤ min_wcet ≤ wcet ≤ period`.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.period == 0 {
            return Err(ParamError::new("period", 0, "must be at least 1 slot"));
        }
        if self.min_wcet == 0 {
            return Err(ParamError::new("min_wcet", 0, "must be at least 1 slot"));
        }
        if self.wcet < self.min_wcet {
            return Err(ParamError::new(
                "wcet",
                self.wcet,
                format!("must be at least min_wcet ({})", self.min_wcet),
            ));
        }
        if self.wcet > self.period {
            return Err(ParamError::new(
                "wcet",
                self.wcet,
                format!("must be at most the period ({})", self.period),
            ));
        }
        Ok(())
    }
}

/// "Does this set of adaptive reservations fit next to the guaranteed tasks?"
pub trait AdmissionOracle {
    fn fits(&mut self, set: &[PeriodicReservation]) -> bool;
}

impl<F: FnMut(&[PeriodicReservation]) -> bool> AdmissionOracle for F {
    fn fits(&mut self, set: &[PeriodicReservation]) -> bool {
        self(set)
    }
}

/// What one request got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// The whole request.
    Full,
    /// Less than asked (step 3).
    Compressed,
    /// Nothing: even the minimums of the higher-priority requests and this one did not fit.
    Dropped,
}

/// One request's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub request: AdaptiveRequest,
    /// Granted WCET in slots (0 when dropped).
    pub granted: u64,
    pub grant: Grant,
}

/// The supervisor's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Supervision {
    /// One per request, in the requests' order.
    pub allocations: Vec<Allocation>,
    /// The compression level λ (1: no compression).
    pub level: f64,
    /// Oracle calls made.
    pub oracle_calls: usize,
}

impl Supervision {
    /// The granted reservations (dropped requests left out): a set the oracle accepted.
    pub fn reservations(&self) -> Vec<PeriodicReservation> {
        self.allocations
            .iter()
            .filter(|a| a.granted > 0)
            .map(|a| PeriodicReservation {
                id: a.request.id,
                period: a.request.period,
                wcet: a.granted,
            })
            .collect()
    }

    /// Whether anything was compressed or dropped.
    pub fn curbed(&self) -> bool {
        self.allocations.iter().any(|a| a.grant != Grant::Full)
    }

    /// One line per curbed request, for logs ("says so"); empty when all were granted.
    pub fn explain(&self) -> Vec<String> {
        self.allocations
            .iter()
            .filter_map(|a| {
                let r = a.request;
                match a.grant {
                    Grant::Full => None,
                    Grant::Compressed => Some(format!(
                        "adaptive task {}: compressed to {} of {} requested slots every {} (minimum {}; level {:.3})",
                        r.id, a.granted, r.wcet, r.period, r.min_wcet, self.level
                    )),
                    Grant::Dropped => Some(format!(
                        "adaptive task {}: dropped (its minimum {} slots every {} does not fit next to the guaranteed tasks and the higher-priority adaptive tasks)",
                        r.id, r.min_wcet, r.period
                    )),
                }
            })
            .collect()
    }
}

/// A compression level `num/den` (den > 0).
#[derive(Clone, Copy, Debug)]
struct Level {
    num: u64,
    den: u64,
}

impl Level {
    fn cmp(&self, o: &Level) -> Ordering {
        (self.num as u128 * o.den as u128).cmp(&(o.num as u128 * self.den as u128))
    }
    /// `⌊level · excess⌋`.
    fn of(&self, excess: u64) -> u64 {
        (self.num as u128 * excess as u128 / self.den as u128) as u64
    }
}

fn grants(kept: &[AdaptiveRequest], level: Level) -> Vec<PeriodicReservation> {
    kept.iter()
        .map(|r| PeriodicReservation {
            id: r.id,
            period: r.period,
            wcet: r.min_wcet + level.of(r.wcet - r.min_wcet),
        })
        .collect()
}

/// The supervisor's rule (module doc) on `requests` (priority order) with `oracle`. Errors: an
/// invalid request (`1 ≤ min_wcet ≤ wcet ≤ period`) or a repeated id.
pub fn supervise(
    requests: &[AdaptiveRequest],
    oracle: &mut impl AdmissionOracle,
) -> Result<Supervision, ParamError> {
    for (i, r) in requests.iter().enumerate() {
        r.validate()?;
        if requests[..i].iter().any(|o| o.id == r.id) {
            return Err(ParamError::new(
                "id",
                r.id,
                "must be unique among the requests",
            ));
        }
    }
    let mut calls = 0;
    let mut ask = |set: &[PeriodicReservation]| {
        calls += 1;
        oracle.fits(set)
    };
    let full = Level { num: 1, den: 1 };
    let finish = |kept: usize, level: Level, calls: usize| {
        let g = grants(&requests[..kept], level);
        let allocations = requests
            .iter()
            .enumerate()
            .map(|(i, r)| match g.get(i) {
                Some(res) => Allocation {
                    request: *r,
                    granted: res.wcet,
                    grant: if res.wcet == r.wcet {
                        Grant::Full
                    } else {
                        Grant::Compressed
                    },
                },
                None => Allocation {
                    request: *r,
                    granted: 0,
                    grant: Grant::Dropped,
                },
            })
            .collect();
        Supervision {
            allocations,
            level: if kept == 0 {
                0.0
            } else {
                level.num as f64 / level.den as f64
            },
            oracle_calls: calls,
        }
    };
    // step 1
    if ask(&grants(requests, full)) {
        return Ok(finish(requests.len(), full, calls));
    }
    // step 2
    let zero = Level { num: 0, den: 1 };
    let mut kept = requests.len();
    while kept > 0 && !ask(&grants(&requests[..kept], zero)) {
        kept -= 1;
    }
    if kept == 0 {
        return Ok(finish(0, zero, calls));
    }
    let kept_reqs = &requests[..kept];
    if kept < requests.len() && ask(&grants(kept_reqs, full)) {
        return Ok(finish(kept, full, calls));
    }
    // step 3: breakpoints in (0, 1), ascending; 0 fits, 1 does not
    let mut levels: Vec<Level> = kept_reqs
        .iter()
        .map(|r| r.wcet - r.min_wcet)
        .filter(|&e| e > 1)
        .flat_map(|e| (1..e).map(move |k| Level { num: k, den: e }))
        .collect();
    levels.sort_by(|a, b| a.cmp(b));
    levels.dedup_by(|a, b| a.cmp(b) == Ordering::Equal);
    // invariant: levels[..lo] fit (or lo = 0: level 0 fits), levels[hi..] do not
    let (mut lo, mut hi) = (0, levels.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ask(&grants(kept_reqs, levels[mid])) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let level = if lo == 0 { zero } else { levels[lo - 1] };
    Ok(finish(kept, level, calls))
}

/// The planner's exact admission as an oracle: a fresh one-CPU [`Planner`] with the guaranteed
/// jobs of the frame, then [`Planner::admit_periodic`] of every reservation on that CPU (EDF
/// feasibility of the frame template). A reservation whose period does not divide the frame
/// does not fit.
#[derive(Clone, Debug)]
pub struct PlannerOracle {
    jobs: Vec<Job>,
    frame: u64,
    /// Planner task ids of the reservations: `first_id + position in the set`.
    first_id: usize,
}

impl PlannerOracle {
    /// The guaranteed `jobs` of one CPU's frame of `frame` slots; they must be EDF-feasible.
    pub fn new(jobs: Vec<Job>, frame: u64) -> Result<Self, ParamError> {
        if frame == 0 {
            return Err(ParamError::new("frame", 0, "must be at least 1 slot"));
        }
        if let Err(miss) = offline::edf(&jobs, frame) {
            return Err(ParamError::new(
                "jobs",
                format!("{} jobs", jobs.len()),
                format!("the guaranteed jobs must be feasible on their own: {miss}"),
            ));
        }
        let first_id = jobs.iter().map(|j| j.task + 1).max().unwrap_or(0);
        Ok(PlannerOracle {
            jobs,
            frame,
            first_id,
        })
    }
}

impl AdmissionOracle for PlannerOracle {
    fn fits(&mut self, set: &[PeriodicReservation]) -> bool {
        let mut planner = Planner::new(
            &[CpuInput {
                jobs: self.jobs.clone(),
                has_be: false,
            }],
            self.frame,
            PlannerConfig {
                policy: Policy::Bss,
                freqs: Freqs::max_only(),
                slot_ns: 1_000_000,
            },
        );
        set.iter().enumerate().all(|(i, r)| {
            matches!(
                planner.admit_periodic(self.first_id + i, r.wcet, r.period, Placement::Only(0)),
                Admission::Accepted { .. }
            )
        })
    }
}

/// Requests and a utilisation oracle for the unit tests here and in `live`.
#[cfg(test)]
pub(crate) mod testing {
    use super::{AdaptiveRequest, PeriodicReservation};

    pub(crate) fn req(id: usize, period: u64, wcet: u64, min_wcet: u64) -> AdaptiveRequest {
        AdaptiveRequest {
            id,
            period,
            wcet,
            min_wcet,
        }
    }

    /// Σ wcet/period ≤ cap (EDF with implicit deadlines).
    pub(crate) fn util(cap: f64) -> impl FnMut(&[PeriodicReservation]) -> bool {
        move |s: &[PeriodicReservation]| {
            s.iter()
                .map(|r| r.wcet as f64 / r.period as f64)
                .sum::<f64>()
                <= cap + 1e-12
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{req, util};
    use super::*;

    #[test]
    fn fitting_requests_are_granted_whole() {
        let s = supervise(&[req(0, 10, 3, 1), req(1, 20, 4, 1)], &mut util(1.0)).unwrap();
        assert!(!s.curbed());
        assert_eq!(s.level, 1.0);
        assert_eq!(s.oracle_calls, 1);
        assert!(s.explain().is_empty());
    }

    #[test]
    fn excess_is_compressed_proportionally() {
        // excesses 8 and 8 over minimum 1 in periods of 10: room 0.5 → 5 slots of 10 in all
        let s = supervise(&[req(0, 10, 9, 1), req(1, 10, 9, 1)], &mut util(0.5)).unwrap();
        let g: Vec<u64> = s.allocations.iter().map(|a| a.granted).collect();
        assert_eq!(g, vec![2, 2]); // λ = 1/8 gives 2+2 = 4; λ = 2/8 gives 3+3 = 6 > 5
        assert!(s.explain()[0].contains("compressed"));
    }

    #[test]
    fn the_last_requests_are_dropped_when_minimums_do_not_fit() {
        let s = supervise(
            &[req(0, 10, 5, 4), req(1, 10, 5, 4), req(2, 10, 5, 4)],
            &mut util(0.9),
        )
        .unwrap();
        let g: Vec<Grant> = s.allocations.iter().map(|a| a.grant).collect();
        assert_eq!(
            g,
            vec![Grant::Compressed, Grant::Compressed, Grant::Dropped]
        );
        assert_eq!(s.reservations().len(), 2);
    }

    #[test]
    fn bad_requests_name_the_field() {
        let e = supervise(&[req(0, 10, 11, 1)], &mut util(1.0)).unwrap_err();
        assert_eq!(e.field, "wcet");
        let e = supervise(&[req(0, 10, 2, 3)], &mut util(1.0)).unwrap_err();
        assert_eq!(e.field, "wcet");
        let e = supervise(&[req(0, 10, 2, 0)], &mut util(1.0)).unwrap_err();
        assert_eq!(e.field, "min_wcet");
        let e = supervise(&[req(0, 10, 2, 1), req(0, 5, 2, 1)], &mut util(1.0)).unwrap_err();
        assert_eq!(e.field, "id");
    }

    #[test]
    fn planner_oracle_refuses_a_period_not_dividing_the_frame() {
        let mut o = PlannerOracle::new(vec![], 100).unwrap();
        assert!(o.fits(&[PeriodicReservation {
            id: 0,
            period: 20,
            wcet: 20
        }]));
        assert!(!o.fits(&[PeriodicReservation {
            id: 0,
            period: 30,
            wcet: 1
        }]));
    }
}

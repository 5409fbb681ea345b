//! Periodic resource interfaces: the least bandwidth, in whole slots, that keeps a component's
//! periodic workload schedulable under its own RM or EDF scheduler.
//!
//! Source: J. Lee, S. Xi, S. Chen, L. T. X. Phan, C. Gill, I. Lee, C. Lu, O. Sokolsky,
//! "Realizing Compositional Scheduling Through Virtualization" (RTAS 2012), Sections II-A and
//! III-B, on I. Shin and I. Lee, "Compositional Real-time Scheduling Framework with Periodic
//! Model" (ACM TECS 2008).
//!
//! # Problem
//! A component (a VM whose guest runs real-time tasks, or a process whose threads are periodic
//! tasks) runs a workload W = {(p_i, e_i)} of periodic tasks with implicit deadlines under a
//! local scheduler, RM or EDF. The host gives it a periodic resource Γ = (Π, Θ): Θ slots in every
//! period of Π slots, placed anywhere inside the period. Find the Γ of least bandwidth Θ/Π under
//! which W meets every deadline whatever the placement: the component's *interface*, which the
//! host schedules like a periodic task of period Π and WCET Θ (a `tt` task of a plan). The slot
//! is the scheduling quantum, so Π and Θ are integers (the paper's "quantum-based platforms").
//!
//! # Terminology
//! - *task* (p, e): a job released every p slots from slot 0 (synchronous release), needing e
//!   slots before the next release. 1 ≤ e ≤ p. U_W = Σ e_i/p_i; H = lcm(p_i) the hyperperiod.
//! - *RM order*: shorter period first, equal periods in input order; *rank* i is the i-th task in
//!   it (0-based here).
//! - *resource* Γ = (Π, Θ), 0 ≤ Θ ≤ Π: Θ slots of supply in each window [kΠ, (k+1)Π).
//!   Bandwidth U_Γ = Θ/Π; *interface overhead* U_Γ − U_W. d = Π − Θ.
//! - *supply bound function* sbf_Γ(t): the least supply Γ gives in any t consecutive slots.
//!   *General supply* (the periods float against the workload): the worst window starts just
//!   after a period's budget was given as early as possible and the next one comes as late as
//!   possible, a *blackout* of 2d slots, then Θ on, d off, repeating (the paper's Eq. (1),
//!   non-harmonic case):
//!   `sbf(t) = 0 if t < d, else y·Θ + max(0, t − 2d − y·Π) with y = ⌊(t − d)/Π⌋`.
//!   *Aligned supply* (the paper's harmonic case): every job release falls on a period boundary
//!   of Γ, so windows that matter start there and the worst is the budget at the end of each
//!   period, a blackout of d: `sbf(t) = y·Θ + max(0, t − d − y·Π)` with y = ⌊t/Π⌋.
//! - *request bound* (RM, rank i): `rbf_i(t) = Σ_{k ≤ i} ⌈t/p_k⌉·e_k`, the work of rank ≤ i
//!   released in [0, t).
//! - *demand bound* (EDF): `dbf(t) = Σ_i ⌊t/p_i⌋·e_i`, the work released and due in [0, t].
//! - *scheduling points* S_i (RM, rank i): {j·p_k ≤ p_i : k ≤ i, j ≥ 1}, which contains p_i.
//!   rbf_i is constant on the slots between two consecutive points and sbf never decreases, so
//!   checking S_i is checking every t in (0, p_i].
//! - *MinExec(Π)*: the least Θ such that (Π, Θ) passes the test. *MaxResPeriod(κ)*: Theorem 1's
//!   bound on the period of every interface of bandwidth at most κ.
//! - *critical points* (of a result): where one slot less of budget fails the test — under RM,
//!   each binding task with the first scheduling point it passes at; under EDF, the deadlines
//!   that (Π, Θ − 1) violates. (The paper's critical points CrT, where the upper supply line
//!   touches rbf_i, serve only Theorem 1; see decision 7.)
//!
//! # Algorithm
//! ```text
//! test(Γ):                                       // Lemma 1 (RM), its demand form (EDF)
//!   RM:  for every rank i: some t in S_i has rbf_i(t) ≤ sbf_Γ(t)
//!   EDF: Θ·H ≥ U_W·Π·H and dbf(t) ≤ sbf_Γ(t) for every deadline t ≤ horizon(Γ), where
//!        horizon = min(lcm(H, Π) + d, ⌈2d·κ/(κ − U_W)⌉ when κ > U_W); aligned: H
//! MinExec(Π):  binary search for the least Θ in [⌈U_W·Π⌉, Π] passing test((Π, Θ))
//! MaxResPeriod(κ):                               // Theorem 1, κ < 1
//!   RM:  min over ranks i of max over t in S_i of ⌊(κt − rbf_i(t)) / (κ(1 − κ))⌋
//!   EDF: min over t in {deadlines ≤ p_n} ∪ {H} of ⌊(κt − dbf(t)) / (κ(1 − κ))⌋
//! optimal(W):                                    // Algorithm 1, general supply
//!   best = (p_n, MinExec(p_n))                   // p_n the largest period
//!   EDF, best has Θ = Π, U_W < 1 and dbf(t) ≤ t − 2 at every deadline t ≤ 2/(1 − U_W):
//!     Π* = ⌈4/(1 − U_W)⌉; best = the better of best and (Π*, MinExec(Π*))    // decision 5
//!   bound = MaxResPeriod(bandwidth(best)), or 1 when that bandwidth is 1    // decision 5
//!   RM: bound = min(bound, p_n)                                             // decision 6
//!   for Π = 1, 2, ... while Π ≤ bound:
//!     Θ = MinExec(Π)
//!     if Θ/Π < bandwidth(best), or equal with Π < period(best):             // decision 4
//!       best = (Π, Θ); bound = min(bound, MaxResPeriod(Θ/Π))
//! optimal_aligned(W):                            // harmonic W, aligned supply
//!   the best (Π, MinExec(Π)) over the divisors Π of p_1, the smallest period
//! ```
//!
//! # Decisions (where the paper's text is ambiguous or wrong, and what this module does)
//! 1. **Ceiling, not floor, in the RM request bound.** The paper prints
//!    rbf_i(t) = Σ_{k≤i} ⌊t/p_k⌋·e_k; its reference (Lehoczky, Sha, Ding, RTSS 1989) counts
//!    ⌈t/p_k⌉ jobs. The ceiling is right: under fixed priorities a job of a higher-priority task
//!    released before t delays rank i whether or not its deadline falls before t, and the job
//!    released at 0 is always there. The floor counts only jobs *due* by t (that is EDF's dbf);
//!    with it rbf_i(t) = 0 for every t < p_1, so the ∃t condition holds at t = 1 for any Γ with
//!    sbf(1) ≥ 0 — every workload passes, and Algorithm 1 would return Θ = 0. Example (a test):
//!    W = {(4, 2), (6, 3)} on a dedicated CPU: RM runs (4, 2) in [0, 2), (6, 3) in [2, 4), (4, 2)
//!    again in [4, 6), and (6, 3) misses at 6 with 1 slot left. The floor test accepts at t = 1
//!    (0 ≤ 1); the ceiling test rejects: S_1 = {4, 6}, rbf_1(4) = 2 + 3 = 5 > 4,
//!    rbf_1(6) = 4 + 3 = 7 > 6.
//! 2. **t ranges over (0, p_i], not [0, p_i].** Lemma 1 as printed admits t = 0, where
//!    rbf_i(0) = 0 = sbf(0) with either rounding: the condition would always hold.
//! 3. **The aligned (harmonic) supply needs Π to divide the periods.** Eq. (1) switches to the
//!    blackout Π − Θ "if W is harmonic". What the smaller blackout needs is that every release
//!    of W falls on a period boundary of Γ (Γ started with the workload, Π dividing every p_i,
//!    the setting of the ARINC-653 report the paper cites, where the partition period divides
//!    the task periods). A harmonic W alone is not enough: W = {(8, 1)} with Γ = (5, 1) passes
//!    the aligned test (sbf(8) = 1 + max(0, 8 − 4 − 5) = 1 ≥ 1), yet the job released at 16
//!    can see the budget of period [15, 20) at 15 and that of [20, 25) at 24: no supply in
//!    [16, 24), a miss. So aligned supply here requires a harmonic W (as the paper) and searches
//!    only the divisors Π of p_1, the smallest period (= the gcd of the periods).
//! 4. **Ties.** Algorithm 1 starts from (p_n, MinExec(p_n)) and replaces it only on a strictly
//!    smaller bandwidth, so an equal bandwidth at a smaller period loses to p_n but a later equal
//!    one loses to an earlier one. Here ties go to the smallest period: same bandwidth, shorter
//!    blackout (2(Π − Θ) scales with Π at a fixed ratio), so the component waits less and its
//!    slots are spread more evenly. Theorem 1's bound holds for every interface of bandwidth
//!    ≤ κ, not only < κ, so equal-bandwidth interfaces are inside the searched range.
//! 5. **κ = 1.** MaxResPeriod divides by κ(1 − κ), and Algorithm 1 has no bound when
//!    MinExec(p_n) = p_n. RM: for Π ≥ p_n, sbf(t) = max(0, t − 2d) on (0, p_n], the only t the
//!    test reads, and for any Π, sbf(t) ≤ max(0, t − 2d); so if (p_n, p_n − 1) fails, every
//!    Γ with d ≥ 1 fails, every interface has bandwidth 1 and the answer is (1, 1). EDF: an
//!    interface with d ≥ 1 exists iff U_W < 1 and dbf(t) ≤ t − 2 at every deadline
//!    (sbf(t) ≤ max(0, t − 2d) gives "only if"; for "if", (Π*, Π* − 1) with Π* = ⌈4/(1 − U_W)⌉
//!    passes: sbf(t) = t − 2 up to Π* + 1, and beyond it the linear lower bound
//!    sbf(t) ≥ κ(t − 2d) of Shin and Lee exceeds U_W·t ≥ dbf(t)); the check needs deadlines
//!    t ≤ 2/(1 − U_W) only, above which U_W·t ≤ t − 2. So Π* seeds the search and its
//!    bandwidth, below 1, makes the bound finite; when no such interface exists the answer is
//!    (1, 1).
//! 6. **RM: the optimal period is at most p_n.** By the argument of 5, for Π ≥ p_n the test
//!    depends on d only, and (p_n, p_n − d) has a smaller bandwidth than (Π, Π − d) for Π > p_n
//!    (or an equal one, 1, at a smaller period when d = 0). Theorem 1's bound is used below it.
//!    Under EDF the optimum can exceed p_n (W = {(4, 2), (10, 4)}: (19, 18)), because the test
//!    reads t beyond p_n.
//! 7. **Theorem 1's critical points.** The paper takes the max over CrT_{W,i}, the points where
//!    the upper supply line touches rbf_i. Here the max runs over all of S_i: for t between two
//!    points rbf_i is constant and (κt − rbf_i(t))/(κ(1 − κ)) grows with t, so the maximum over
//!    (0, p_i] is at a point of S_i and equals the paper's. Its proof needs only that κ is at
//!    least the optimal bandwidth (the bound grows with κ wherever it is non-negative), not
//!    Γ_c's optimality among smaller periods that the theorem assumes. For EDF the test is ∀t,
//!    so the bound is a min over t; any set of t gives a valid bound, and {deadlines ≤ p_n} ∪
//!    {H} (dbf(H) = U_W·H) is tight when κ is close to U_W.
//! 8. **EDF horizon.** κ ≥ U_W is checked first, exactly (Θ·H against U_W·H·Π). With a
//!    blackout (d ≥ 1), κ = U_W fails: dbf(H) = κH > κ(H − d) ≥ sbf(H). For κ > U_W,
//!    dbf(t) ≤ U_W·t ≤ κ(t − 2d) ≤ sbf(t) once t ≥ 2dκ/(κ − U_W); and dbf(t + L) =
//!    dbf(t) + U_W·L, sbf(t + L) = sbf(t) + κL for t ≥ d, with L = lcm(H, Π), so a violation
//!    after L + d repeats one L earlier: the horizon is the smaller of the two. Aligned supply
//!    is exactly Π-periodic, so H suffices. Neither the test nor the search needs H when it
//!    exceeds 2^64 (random periods of a few hundred slots do): the linear horizon, Π* and the
//!    bound of decision 5 are then computed in floating point from Σ e_i/p_i with a margin
//!    ([`U_ERROR`]) larger than its rounding error, so they only err upwards (a longer horizon,
//!    a larger Π*), and MaxResPeriod leaves out t = H.
//!
//! # Limits
//! Every cap is an error naming the value and the rule, never a wrap or a panic:
//! [`MAX_TASKS`] tasks; periods up to [`MAX_PERIOD_SLOTS`] (the planner's job-size cap), so
//! every product of the tests fits 128 bits; at most [`MAX_TEST_POINTS`] RM scheduling points;
//! at most [`MAX_EVALUATIONS`] test-point evaluations in one search (one to two seconds in a
//! release build). U_W ≤ 1 and κ against U_W are decided exactly at any hyperperiod (H and
//! U_W·H as big integers; decision 8 for the rest).
//!
//! # Properties
//! 1. (SBF-minimum) sbf_Γ(t) is the least supply of any window of t slots over every placement
//!    of Θ slots per period (general), or of windows starting at a period boundary (aligned).
//! 2. (SBF-order) sbf grows with t and with Θ; aligned ≥ general; sbf(t) ≤ max(0, t − 2d) and
//!    sbf(t) ≥ κ(t − 2d) (general).
//! 3. (Test-exact) `schedulable` agrees with a slot-by-slot simulation of W under RM or EDF on
//!    the worst-case supply pattern (blackout first), synchronous release, over the transient
//!    plus lcm(H, Π) (tests/interface.rs).
//! 4. (Ceiling) With the floor request bound the RM test accepts a workload that misses.
//! 5. (Necessary-U) A schedulable Γ has Θ/Π ≥ U_W, so U_Γ ≥ U_W and the overhead is ≥ 0; under
//!    general supply with d ≥ 1 it is > 0.
//! 6. (MinExec-least) (Π, MinExec(Π)) passes and (Π, MinExec(Π) − 1) fails.
//! 7. (Bound) MaxResPeriod(κ) ≥ Π for every schedulable Γ of bandwidth ≤ κ, in particular for
//!    the optimum and for the Γ that gave κ.
//! 8. (Optimal) `optimal_interface` has the least bandwidth over all periods, the smallest
//!    period among equals: the same as a brute-force search with the simulation of 3.
//! 9. (Aligned ≤ general) For Π dividing every period, MinExec_aligned(Π) ≤ MinExec_general(Π).
//!    Not: the aligned optimum ≤ the general optimum, since aligned periods must divide p_1
//!    (W = {(5, 1), (15, 1)} under RM: aligned (5, 2), general (3, 1)).
//! 10. (RM-period) Under RM the optimal period is at most p_n.

use serde::Serialize;
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

mod big;
mod error;
mod search;
mod tester;
#[cfg(test)]
mod tests;
mod workload;

use big::gcd;
pub use error::InterfaceError;
use tester::Tester;
pub use workload::{parse_tasks, Workload};

/// Tasks in one workload: 256. The RM test set grows with the square of the task count.
pub const MAX_TASKS: usize = 256;

/// Largest task period, in slots: 4,294,967,295 (`u32::MAX`), the planner's job-size cap
/// (`planner::cpu::MAX_JOB_SLOTS`). Below it every product of the tests fits 128 bits.
pub const MAX_PERIOD_SLOTS: u64 = u32::MAX as u64;

/// RM scheduling points over all ranks, Σ_i Σ_{k ≤ i} ⌊p_i/p_k⌋: 1,048,576 (they are kept in
/// memory, 24 bytes each, and read by every test).
pub const MAX_TEST_POINTS: u64 = 1 << 20;

/// Test-point evaluations of one search (a point is one sbf against one rbf or dbf):
/// 67,108,864, one to two seconds in a release build.
pub const MAX_EVALUATIONS: u64 = 1 << 26;

/// A bound on |Σ e_i/p_i in floating point − U_W| with room to spare: the recursive sum of
/// n ≤ 256 correctly rounded terms in [0, 1] adding up to at most 1 errs by at most n·2^-53 =
/// 2^-45, and κ = Θ/Π by 2^-53; 2^-40 leaves a factor above 30. Used only when the hyperperiod
/// exceeds 2^64, where U_W has no 64-bit fraction.
pub const U_ERROR: f64 = 1.0 / (1u64 << 40) as f64;

/// Float horizons at or above 2^100 slots are refused (no scan could reach them).
const LARGEST_FLOAT_HORIZON: f64 = 1.2676506002282294e30;

/// EDF critical points listed at most.
pub const MAX_CRITICAL_POINTS: usize = 16;

/// One periodic task of the workload, in slots; its deadline is its period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Task {
    pub period: u64,
    pub wcet: u64,
}

/// The component's local scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    /// Rate monotonic: fixed priorities, shorter period first (ties: input order).
    Rm,
    /// Earliest deadline first.
    Edf,
}

/// Where the budget can fall relative to the workload's releases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Supply {
    /// Anywhere in each period: worst-case blackout 2(Π − Θ).
    #[default]
    General,
    /// Releases on period boundaries (harmonic W, Π dividing p_1): blackout Π − Θ.
    Aligned,
}

impl FromStr for Scheduler {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rm" => Ok(Scheduler::Rm),
            "edf" => Ok(Scheduler::Edf),
            _ => Err(format!("{s:?} is not a scheduler: rm or edf")),
        }
    }
}

impl FromStr for Supply {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "general" => Ok(Supply::General),
            "aligned" => Ok(Supply::Aligned),
            _ => Err(format!("{s:?} is not a supply: general or aligned")),
        }
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scheduler::Rm => "rm",
            Scheduler::Edf => "edf",
        })
    }
}

impl fmt::Display for Supply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Supply::General => "general",
            Supply::Aligned => "aligned",
        })
    }
}

/// An exact non-negative fraction; compared by value (1/2 == 2/4), shown reduced.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Ratio {
    pub num: u64,
    pub den: u64,
}

impl Ratio {
    /// `num/den` reduced; `den` must be ≥ 1.
    pub fn new(num: u64, den: u64) -> Ratio {
        let g = gcd(u128::from(num), u128::from(den)).max(1) as u64;
        Ratio {
            num: num / g,
            den: den / g,
        }
    }
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl PartialEq for Ratio {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ratio {}
impl PartialOrd for Ratio {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ratio {
    fn cmp(&self, other: &Self) -> Ordering {
        (u128::from(self.num) * u128::from(other.den))
            .cmp(&(u128::from(other.num) * u128::from(self.den)))
    }
}
impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

/// A periodic resource Γ = (Π, Θ) = (`period`, `budget`) in slots, `1 ≤ period`,
/// `budget ≤ period`. The functions that take one refuse other values
/// ([`InterfaceError::InvalidResource`]); `sbf` clamps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Resource {
    pub period: u64,
    pub budget: u64,
}

impl Resource {
    pub fn bandwidth(&self) -> Ratio {
        Ratio::new(self.budget.min(self.period), self.period.max(1))
    }

    /// The longest interval without supply: 2(Π − Θ) (general) or Π − Θ (aligned).
    pub fn blackout(&self, supply: Supply) -> u64 {
        let d = self.period.saturating_sub(self.budget);
        match supply {
            Supply::General => d.saturating_mul(2),
            Supply::Aligned => d,
        }
    }

    /// sbf_Γ(t): the least supply in any `t` consecutive slots (module doc, Terminology).
    pub fn sbf(&self, supply: Supply, t: u64) -> u64 {
        // The result is at most t, so the narrowing cannot lose anything.
        sbf(*self, supply, u128::from(t)) as u64
    }

    fn check(&self) -> Result<(), InterfaceError> {
        if self.period == 0 || self.budget > self.period || self.period > MAX_PERIOD_SLOTS {
            return Err(InterfaceError::InvalidResource(*self));
        }
        Ok(())
    }
}

/// sbf over 128-bit time (EDF horizons exceed 64 bits). y·Θ ≤ t, so nothing overflows.
fn sbf(r: Resource, supply: Supply, t: u128) -> u128 {
    match u64::try_from(t) {
        // The same formula in 64 bits: a 128-bit division is a library call, 5–10× slower.
        Ok(t) => u128::from(sbf64(r, supply, t)),
        Err(_) => sbf128(r, supply, t),
    }
}

fn sbf64(r: Resource, supply: Supply, t: u64) -> u64 {
    let p = r.period.max(1);
    let theta = r.budget.min(r.period);
    let d = p - theta;
    let t = match supply {
        Supply::General if t < d => return 0,
        Supply::General => t - d,
        Supply::Aligned => t,
    };
    let y = t / p;
    y * theta + (t - y * p).saturating_sub(d)
}

fn sbf128(r: Resource, supply: Supply, t: u128) -> u128 {
    let p = u128::from(r.period.max(1));
    let theta = u128::from(r.budget.min(r.period));
    let d = p - theta;
    // General supply is the aligned pattern delayed by d.
    let t = match supply {
        Supply::General if t < d => return 0,
        Supply::General => t - d,
        Supply::Aligned => t,
    };
    let y = t / p;
    y * theta + (t - y * p).saturating_sub(d)
}

/// A point where the test decides the budget: with one slot less it fails here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CriticalPoint {
    /// RM: the binding task (input index); EDF: none (the demand of all tasks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<usize>,
    /// Interval length from the synchronous release, in slots.
    pub t: u64,
    /// rbf of the task's rank (RM) or dbf (EDF) at `t`.
    pub demand: u64,
    /// sbf of the interface at `t` (≥ demand).
    pub supply: u64,
}

/// The result of [`optimal_interface`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interface {
    pub scheduler: Scheduler,
    pub supply: Supply,
    pub resource: Resource,
    pub bandwidth: Ratio,
    /// U_W, and exactly when the hyperperiod is below 2^64.
    pub utilization: f64,
    pub utilization_exact: Option<Ratio>,
    /// U_Γ − U_W; exactly 0 when equal, exact then rounded when the hyperperiod is below 2^64.
    pub overhead: f64,
    pub harmonic: bool,
    /// Longest interval without supply (2(Π − Θ) general, Π − Θ aligned).
    pub blackout: u64,
    /// The last search bound on the period (MaxResPeriod, or p_1 when aligned).
    pub search_bound: u64,
    pub periods_examined: u64,
    pub evaluations: u64,
    /// RM: for each binding task, the first scheduling point it passes at. EDF: the first
    /// [`MAX_CRITICAL_POINTS`] deadlines (within the interface's own test horizon) that one
    /// slot less of budget would violate.
    pub critical_points: Vec<CriticalPoint>,
    /// One slot less of budget would be below U_W·Π: the long-run rate alone decides Θ.
    pub forced_by_utilization: bool,
}

/// U_Γ − U_W for an interface of `w` (never negative: Θ/Π ≥ U_W for every passing Γ).
fn overhead(w: &Workload, r: Resource) -> f64 {
    if w.compare_rate(r.budget, r.period) != Ordering::Greater {
        return 0.0;
    }
    match w.small {
        Some((h, e)) => {
            let (p, theta) = (u128::from(r.period), u128::from(r.budget));
            let (h, e) = (u128::from(h), u128::from(e));
            (theta * h - e * p) as f64 / (p * h) as f64
        }
        // Both rounded: keep a tiny true overhead from showing as negative.
        None => (r.bandwidth().to_f64() - w.utilization_f64()).max(0.0),
    }
}

/// Lemma 1 (RM) or the demand test (EDF) for `r`, exact (property 3).
pub fn schedulable(
    w: &Workload,
    scheduler: Scheduler,
    supply: Supply,
    r: Resource,
) -> Result<bool, InterfaceError> {
    r.check()?;
    check_aligned(w, supply, r.period)?;
    Tester::new(w, scheduler, supply)?.schedulable(r)
}

/// The least Θ such that (`period`, Θ) passes (property 6).
pub fn min_exec(
    w: &Workload,
    scheduler: Scheduler,
    supply: Supply,
    period: u64,
) -> Result<u64, InterfaceError> {
    Resource { period, budget: 0 }.check()?;
    check_aligned(w, supply, period)?;
    let mut tester = Tester::new(w, scheduler, supply)?;
    tester.require_dedicated()?;
    tester.min_exec(period)
}

/// Theorem 1: the largest period of any interface (general supply) of bandwidth at most
/// `r.bandwidth()`, or `None` when that bandwidth is 1 (no bound; decision 5).
pub fn max_res_period(
    w: &Workload,
    scheduler: Scheduler,
    r: Resource,
) -> Result<Option<u64>, InterfaceError> {
    r.check()?;
    Tester::new(w, scheduler, Supply::General)?.max_res_period(r)
}

/// Aligned supply is valid only for periods dividing p_1 (decision 3).
fn check_aligned(w: &Workload, supply: Supply, period: u64) -> Result<(), InterfaceError> {
    let p1 = w.min_period();
    if supply == Supply::Aligned && !p1.is_multiple_of(period) {
        return Err(InterfaceError::NotAligned { period, p1 });
    }
    Ok(())
}

/// Algorithm 1 (general supply) or the divisor search (aligned supply), with the decisions of
/// the module doc.
pub fn optimal_interface(
    w: &Workload,
    scheduler: Scheduler,
    supply: Supply,
) -> Result<Interface, InterfaceError> {
    let mut tester = Tester::new(w, scheduler, supply)?;
    tester.require_dedicated()?;
    let (resource, search_bound, periods_examined) = match supply {
        Supply::General => tester.search_general()?,
        Supply::Aligned => tester.search_aligned()?,
    };
    let (critical_points, forced_by_utilization) = tester.critical_points(resource)?;
    Ok(Interface {
        scheduler,
        supply,
        resource,
        bandwidth: resource.bandwidth(),
        utilization: w.utilization_f64(),
        utilization_exact: w.utilization(),
        overhead: overhead(w, resource),
        harmonic: w.is_harmonic(),
        blackout: resource.blackout(supply),
        search_bound,
        periods_examined,
        evaluations: tester.evaluations,
        critical_points,
        forced_by_utilization,
    })
}

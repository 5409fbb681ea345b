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
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;

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

/// Why a workload or a resource is refused, or a search cannot finish. Each message names the
/// field (`tasks[i].period`, as in the plan format), the value and the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterfaceError {
    #[error("tasks: empty: give at least one \"period,wcet\" pair")]
    Empty,
    #[error("tasks: {count} tasks, above the cap of {MAX_TASKS}")]
    TooManyTasks { count: usize },
    #[error("tasks[{task}] = {text:?}: expected \"period,wcet\" (two whole numbers of slots)")]
    Syntax { task: usize, text: String },
    #[error(
        "tasks[{task}].{field} = {text:?}: not a whole number of slots (digits only, below 2^64)"
    )]
    NotANumber {
        task: usize,
        field: &'static str,
        text: String,
    },
    #[error("tasks[{task}].period = 0: must be at least 1 slot")]
    ZeroPeriod { task: usize },
    #[error("tasks[{task}].period = {period}: above the cap of {MAX_PERIOD_SLOTS} slots")]
    PeriodTooLarge { task: usize, period: u64 },
    #[error("tasks[{task}].wcet = 0: must be at least 1 slot")]
    ZeroWcet { task: usize },
    #[error(
        "tasks[{task}].wcet = {wcet}: exceeds the period {period} \
         (implicit deadlines: 1 ≤ wcet ≤ period)"
    )]
    WcetAbovePeriod { task: usize, wcet: u64, period: u64 },
    #[error("tasks: utilization U_W = {utilization} > 1: no resource of one CPU can serve it")]
    Overloaded { utilization: String },
    #[error(
        "scheduler edf: resource (period {period}, budget {budget}) exceeds U_W by less than \
         2^-39 and the hyperperiod is above 2^64: no demand-test horizon can be computed"
    )]
    EdfHorizonTooLarge { period: u64, budget: u64 },
    #[error(
        "tasks[{task}] (period {period}, wcet {wcet}): not RM-schedulable even on a dedicated \
         CPU (its request bound exceeds t at every scheduling point up to {period}): no \
         interface exists"
    )]
    NotRmSchedulable { task: usize, period: u64, wcet: u64 },
    #[error(
        "supply aligned: tasks[{a}].period = {pa} and tasks[{b}].period = {pb} do not divide \
         each other; the aligned supply needs a harmonic workload"
    )]
    NotHarmonic {
        a: usize,
        pa: u64,
        b: usize,
        pb: u64,
    },
    #[error(
        "tasks: the RM test has {points} scheduling points (Σ_i Σ_(k ≤ i) ⌊p_i/p_k⌋), above \
         the cap of {MAX_TEST_POINTS}: the periods are too far apart"
    )]
    TooManyTestPoints { points: u128 },
    #[error(
        "the search needs more than {MAX_EVALUATIONS} test-point evaluations (the cap), \
         reached at resource period {period} (search bound {bound}): the periods are too \
         large or too far apart for the exact search"
    )]
    WorkCap { period: u64, bound: String },
    #[error(
        "the search must examine resource period {period} (⌈4/(1 − U_W)⌉, where a budget below \
         the period first passes), above the cap of {MAX_PERIOD_SLOTS} slots: U_W is too \
         close to 1"
    )]
    PeriodSearchTooLarge { period: String },
    #[error(
        "resource (period {}, budget {}): needs 1 ≤ period ≤ {MAX_PERIOD_SLOTS} and \
         budget ≤ period", .0.period, .0.budget
    )]
    InvalidResource(Resource),
    #[error(
        "supply aligned: resource period {period} does not divide the smallest task period \
         {p1}, so releases do not fall on period boundaries"
    )]
    NotAligned { period: u64, p1: u64 },
    #[error("internal error: {0}")]
    Internal(&'static str),
}

/// Parse `"p,e;p,e;..."` (slots; spaces around the numbers allowed, nothing else).
pub fn parse_tasks(text: &str) -> Result<Vec<Task>, InterfaceError> {
    if text.trim().is_empty() {
        return Err(InterfaceError::Empty);
    }
    let number = |task: usize, field: &'static str, s: &str| {
        let s = s.trim();
        let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        s.parse::<u64>()
            .ok()
            .filter(|_| digits)
            .ok_or_else(|| InterfaceError::NotANumber {
                task,
                field,
                text: s.to_string(),
            })
    };
    text.split(';')
        .enumerate()
        .map(|(task, entry)| {
            let mut fields = entry.split(',');
            match (fields.next(), fields.next(), fields.next()) {
                (Some(p), Some(e), None) => Ok(Task {
                    period: number(task, "period", p)?,
                    wcet: number(task, "wcet", e)?,
                }),
                _ => Err(InterfaceError::Syntax {
                    task,
                    text: entry.to_string(),
                }),
            }
        })
        .collect()
}

/// A validated workload: 1..=[`MAX_TASKS`] tasks, 1 ≤ wcet ≤ period ≤ [`MAX_PERIOD_SLOTS`],
/// U_W ≤ 1 (exactly, whatever the size of the hyperperiod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    tasks: Vec<Task>,
    rm_order: Vec<usize>,
    /// H and U_W·H = Σ e_i·H/p_i ≤ H, exact at any size.
    hyperperiod: Big,
    demand: Big,
    /// (H, U_W·H) when H < 2^64: the exact rationals and the EDF test use them.
    small: Option<(u64, u64)>,
}

impl Workload {
    pub fn new(tasks: &[Task]) -> Result<Workload, InterfaceError> {
        if tasks.is_empty() {
            return Err(InterfaceError::Empty);
        }
        if tasks.len() > MAX_TASKS {
            return Err(InterfaceError::TooManyTasks { count: tasks.len() });
        }
        for (task, t) in tasks.iter().enumerate() {
            if t.period == 0 {
                return Err(InterfaceError::ZeroPeriod { task });
            }
            if t.period > MAX_PERIOD_SLOTS {
                return Err(InterfaceError::PeriodTooLarge {
                    task,
                    period: t.period,
                });
            }
            if t.wcet == 0 {
                return Err(InterfaceError::ZeroWcet { task });
            }
            if t.wcet > t.period {
                return Err(InterfaceError::WcetAbovePeriod {
                    task,
                    wcet: t.wcet,
                    period: t.period,
                });
            }
        }
        // At most 256 periods below 2^32: H has at most 8192 bits.
        let mut h = Big::from(1);
        for t in tasks {
            let g = gcd(u128::from(t.period), u128::from(h.rem_small(t.period))) as u64;
            h = h.div_small(g).mul_small(t.period);
        }
        let e = tasks.iter().fold(Big::from(0), |e, t| {
            e.add(&h.div_small(t.period).mul_small(t.wcet))
        });
        let small = h.to_u64().zip(e.to_u64());
        if e > h {
            let utilization = match small {
                Some((h, e)) => Ratio::new(e, h).to_string(),
                None => format!("{:.12}", utilization_f64(tasks)),
            };
            return Err(InterfaceError::Overloaded { utilization });
        }
        let mut rm_order: Vec<usize> = (0..tasks.len()).collect();
        rm_order.sort_by_key(|&i| (tasks[i].period, i));
        Ok(Workload {
            tasks: tasks.to_vec(),
            rm_order,
            hyperperiod: h,
            demand: e,
            small,
        })
    }

    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Task indices in RM priority order (rank 0 first).
    pub fn rm_order(&self) -> &[usize] {
        &self.rm_order
    }

    /// H, when below 2^64.
    pub fn hyperperiod(&self) -> Option<u64> {
        self.small.map(|(h, _)| h)
    }

    /// U_W exactly, when H < 2^64.
    pub fn utilization(&self) -> Option<Ratio> {
        self.small.map(|(h, e)| Ratio::new(e, h))
    }

    /// U_W as a float (Σ e_i/p_i).
    pub fn utilization_f64(&self) -> f64 {
        utilization_f64(&self.tasks)
    }

    /// Θ/Π against U_W, exactly (Θ·H against U_W·H·Π).
    pub fn compare_rate(&self, budget: u64, period: u64) -> Ordering {
        self.hyperperiod
            .mul_small(budget)
            .cmp(&self.demand.mul_small(period))
    }

    /// Every two periods divide one another.
    pub fn is_harmonic(&self) -> bool {
        self.non_harmonic_pair().is_none()
    }

    fn non_harmonic_pair(&self) -> Option<(usize, usize)> {
        // In RM order periods grow; harmonic iff each divides the next.
        self.rm_order.windows(2).find_map(|w| {
            let (a, b) = (self.tasks[w[0]].period, self.tasks[w[1]].period);
            (!b.is_multiple_of(a)).then_some((w[0], w[1]))
        })
    }

    /// rbf of RM rank `rank` at `t`: Σ over ranks k ≤ rank of ⌈t/p_k⌉·e_k (decision 1).
    pub fn rbf(&self, rank: usize, t: u64) -> u128 {
        self.rm_order[..=rank.min(self.tasks.len() - 1)]
            .iter()
            .map(|&k| {
                let task = self.tasks[k];
                u128::from(t.div_ceil(task.period)) * u128::from(task.wcet)
            })
            .sum()
    }

    /// dbf at `t`: Σ ⌊t/p_i⌋·e_i.
    pub fn dbf(&self, t: u64) -> u128 {
        self.tasks
            .iter()
            .map(|task| u128::from(t / task.period) * u128::from(task.wcet))
            .sum()
    }

    fn max_period(&self) -> u64 {
        self.tasks[self.rm_order[self.tasks.len() - 1]].period
    }

    fn min_period(&self) -> u64 {
        self.tasks[self.rm_order[0]].period
    }
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

/// Where an EDF test must look.
enum Horizon {
    /// Θ = Π: sbf(t) = t ≥ U_W·t ≥ dbf(t).
    Dedicated,
    /// Θ < U_W·Π, or Θ = U_W·Π with a blackout: fails in the long run.
    Fails,
    /// Deadlines up to this t.
    Upto(u128),
}

/// One search: the workload, the test, the RM points and the work counter.
struct Tester<'a> {
    w: &'a Workload,
    scheduler: Scheduler,
    supply: Supply,
    /// RM: per rank, its scheduling points `(t, rbf_rank(t))` in increasing t.
    points: Vec<Vec<(u64, u128)>>,
    evaluations: u64,
    /// (period being examined, search bound) for the work-cap error.
    at: (u64, Option<u64>),
    /// EDF: the next deadline of each task, reused by every scan.
    heap: BinaryHeap<Reverse<(u128, usize)>>,
    /// (Π, lcm(H, Π)); Π = 0 before the first.
    lcm_cache: (u64, u128),
    /// (H, U_W·H) when H < 2^64; always for EDF and for aligned supply (harmonic: H = p_n).
    small: Option<(u128, u128)>,
}

impl<'a> Tester<'a> {
    fn new(
        w: &'a Workload,
        scheduler: Scheduler,
        supply: Supply,
    ) -> Result<Tester<'a>, InterfaceError> {
        if supply == Supply::Aligned {
            if let Some((a, b)) = w.non_harmonic_pair() {
                return Err(InterfaceError::NotHarmonic {
                    a,
                    pa: w.tasks[a].period,
                    b,
                    pb: w.tasks[b].period,
                });
            }
        }
        let small = w.small.map(|(h, e)| (u128::from(h), u128::from(e)));
        let points = match scheduler {
            Scheduler::Rm => rm_points(w)?,
            Scheduler::Edf => Vec::new(),
        };
        Ok(Tester {
            w,
            scheduler,
            supply,
            points,
            evaluations: 0,
            at: (0, None),
            heap: BinaryHeap::new(),
            lcm_cache: (0, 0),
            small,
        })
    }

    fn charge(&mut self, n: u64) -> Result<(), InterfaceError> {
        self.evaluations = self.evaluations.saturating_add(n);
        if self.evaluations > MAX_EVALUATIONS {
            return Err(InterfaceError::WorkCap {
                period: self.at.0,
                bound: self
                    .at
                    .1
                    .map_or_else(|| "not yet known".to_string(), |b| b.to_string()),
            });
        }
        Ok(())
    }

    /// RM needs the workload schedulable on a dedicated CPU, so that Θ = Π always passes.
    /// (EDF: U_W ≤ 1 is enough, and the workload checked it.)
    fn require_dedicated(&mut self) -> Result<(), InterfaceError> {
        let dedicated = Resource {
            period: 1,
            budget: 1,
        };
        if self.scheduler == Scheduler::Rm {
            if let Some(rank) = self.rm_failing_rank(dedicated)? {
                let task = self.w.rm_order[rank];
                return Err(InterfaceError::NotRmSchedulable {
                    task,
                    period: self.w.tasks[task].period,
                    wcet: self.w.tasks[task].wcet,
                });
            }
        }
        Ok(())
    }

    fn schedulable(&mut self, r: Resource) -> Result<bool, InterfaceError> {
        // Every test costs at least one evaluation, also when decided without a point.
        self.charge(1)?;
        Ok(match self.scheduler {
            Scheduler::Rm => self.rm_failing_rank(r)?.is_none(),
            Scheduler::Edf => self.edf_first_violation(r, r)?.is_none(),
        })
    }

    /// The first rank with no scheduling point where rbf ≤ sbf.
    fn rm_failing_rank(&mut self, r: Resource) -> Result<Option<usize>, InterfaceError> {
        for rank in 0..self.points.len() {
            if self.rm_witness(rank, r)?.is_none() {
                return Ok(Some(rank));
            }
        }
        Ok(None)
    }

    /// The first scheduling point of `rank` where rbf ≤ sbf under `r`, with the values.
    fn rm_witness(
        &mut self,
        rank: usize,
        r: Resource,
    ) -> Result<Option<(u64, u128, u128)>, InterfaceError> {
        let mut found = None;
        let mut scanned = 0;
        for &(t, rbf) in &self.points[rank] {
            scanned += 1;
            let s = sbf(r, self.supply, u128::from(t));
            if rbf <= s {
                found = Some((t, rbf, s));
                break;
            }
        }
        self.charge(scanned)?;
        Ok(found)
    }

    /// H when below 2^64 (always for aligned supply: W is harmonic, H = p_n).
    fn small_hyperperiod(&self) -> Result<u128, InterfaceError> {
        self.small
            .map(|(h, _)| h)
            .ok_or(InterfaceError::Internal("hyperperiod above 2^64"))
    }

    /// Θ/Π against U_W: 128-bit products when H < 2^64 (the hot path), else big integers.
    fn rate(&self, budget: u64, period: u64) -> Ordering {
        match self.small {
            // Θ·H and U_W·H·Π, both below 2^96.
            Some((h, e)) => (u128::from(budget) * h).cmp(&(e * u128::from(period))),
            None => self.w.compare_rate(budget, period),
        }
    }

    /// lcm(H, Π) ≤ 2^64·2^32, cached for the period last asked (a 128-bit gcd costs about a
    /// microsecond, and MinExec asks for the same period some 32 times).
    fn lcm_with_hyperperiod(&mut self, period: u64) -> Result<u128, InterfaceError> {
        if self.lcm_cache.0 != period {
            let (h, p) = (self.small_hyperperiod()?, u128::from(period));
            self.lcm_cache = (period, h / gcd(h, p) * p);
        }
        Ok(self.lcm_cache.1)
    }

    /// Decision 8.
    fn horizon(&mut self, r: Resource) -> Result<Horizon, InterfaceError> {
        let d = u128::from(r.period - r.budget);
        if d == 0 {
            return Ok(Horizon::Dedicated);
        }
        match (self.rate(r.budget, r.period), self.supply) {
            (Ordering::Less, _) => Ok(Horizon::Fails),
            (_, Supply::Aligned) => Ok(Horizon::Upto(self.small_hyperperiod()?)),
            // κ = U_W with a blackout: dbf(H) = κH > κ(H − d) ≥ sbf(H).
            (Ordering::Equal, Supply::General) => Ok(Horizon::Fails),
            (Ordering::Greater, Supply::General) => {
                let linear = self.linear_horizon(r)?;
                Ok(Horizon::Upto(match self.small {
                    Some(_) => linear.min(self.lcm_with_hyperperiod(r.period)? + d),
                    None => linear,
                }))
            }
        }
    }

    /// ⌈2d·κ/(κ − U_W)⌉ for κ > U_W, or a larger value (a longer horizon keeps the test
    /// exact). Exact in 128 bits when H < 2^64; else in floating point with U_W's rounding
    /// error ([`U_ERROR`]) as a margin.
    fn linear_horizon(&self, r: Resource) -> Result<u128, InterfaceError> {
        let (p, theta) = (u128::from(r.period), u128::from(r.budget));
        let d = p - theta;
        if let Some((h, e)) = self.small {
            // 2d·ΘH / (ΘH − EΠ). 2d·ΘH < 2^33·2^96 may not fit: then 2d·(⌊ΘH/(ΘH − EΠ)⌋ + 1),
            // a little larger; saturated, the periodic horizon (< 2^97) is the smaller.
            let (supply_rate, slack) = (theta * h, theta * h - e * p);
            return Ok(match (2 * d).checked_mul(supply_rate) {
                Some(n) => n.div_ceil(slack),
                None => (2 * d).saturating_mul(supply_rate / slack + 1),
            });
        }
        let kappa = r.budget as f64 / r.period as f64;
        let gap = kappa - self.w.utilization_f64() - U_ERROR;
        let t = 2.0 * d as f64 * kappa / gap * (1.0 + U_ERROR) + 1.0;
        if gap <= U_ERROR || t >= LARGEST_FLOAT_HORIZON {
            return Err(InterfaceError::EdfHorizonTooLarge {
                period: r.period,
                budget: r.budget,
            });
        }
        Ok(t.ceil() as u128)
    }

    /// An upper bound on k/(1 − U_W) (U_W < 1): exact ⌈k·H/(H − U_W·H)⌉ when H < 2^64, else
    /// in floating point with [`U_ERROR`] as a margin; None when U_W is too close to 1 for it.
    fn over_one_minus_u(&self, k: u128) -> Option<u128> {
        match self.small {
            Some((h, e)) => Some((k * h).div_ceil(h - e)),
            None => {
                let gap = 1.0 - self.w.utilization_f64() - U_ERROR;
                let v = k as f64 / gap * (1.0 + U_ERROR) + 1.0;
                (gap > U_ERROR && v < LARGEST_FLOAT_HORIZON).then(|| v.ceil() as u128)
            }
        }
    }

    /// EDF: the first deadline within `horizon_of`'s horizon where dbf > sbf_r, or None.
    /// (`horizon_of` is `r` for the test itself.)
    fn edf_first_violation(
        &mut self,
        r: Resource,
        horizon_of: Resource,
    ) -> Result<Option<(u128, u128)>, InterfaceError> {
        let bound = match self.horizon(horizon_of)? {
            Horizon::Dedicated => return Ok(None),
            Horizon::Fails => return Ok(Some((u128::MAX, 0))),
            Horizon::Upto(b) => b,
        };
        let supply = self.supply;
        let mut first = None;
        self.scan_deadlines(bound, |t, dbf| {
            let ok = dbf <= sbf(r, supply, t);
            if !ok {
                first = Some((t, dbf));
            }
            ok
        })?;
        Ok(first)
    }

    /// Visit every distinct deadline t ≤ `bound` in increasing order with dbf(t), until `visit`
    /// returns false. One evaluation per deadline.
    fn scan_deadlines(
        &mut self,
        bound: u128,
        visit: impl FnMut(u128, u128) -> bool,
    ) -> Result<(), InterfaceError> {
        let w = self.w;
        // The heap's memory is kept across scans (a scan per test, millions per search).
        let mut next = std::mem::take(&mut self.heap);
        next.clear();
        next.extend(
            w.tasks
                .iter()
                .enumerate()
                .map(|(k, task)| Reverse((u128::from(task.period), k))),
        );
        let result = self.scan_with(&mut next, bound, visit);
        self.heap = next;
        result
    }

    fn scan_with(
        &mut self,
        next: &mut BinaryHeap<Reverse<(u128, usize)>>,
        bound: u128,
        mut visit: impl FnMut(u128, u128) -> bool,
    ) -> Result<(), InterfaceError> {
        let w = self.w;
        let mut dbf: u128 = 0;
        while let Some(&Reverse((t, _))) = next.peek() {
            if t > bound {
                break;
            }
            while let Some(&Reverse((t2, k))) = next.peek() {
                if t2 != t {
                    break;
                }
                next.pop();
                let task = w.tasks[k];
                // dbf ≤ 256·t and t ≤ bound < 2^97: neither overflows.
                dbf += u128::from(task.wcet);
                next.push(Reverse((t + u128::from(task.period), k)));
            }
            self.charge(1)?;
            if !visit(t, dbf) {
                break;
            }
        }
        Ok(())
    }

    fn min_exec(&mut self, period: u64) -> Result<u64, InterfaceError> {
        // Θ ≥ ⌈U_W·Π⌉ is necessary (property 5), 1 when H is too large to say; Θ = Π passes
        // (require_dedicated).
        let least = self
            .small
            .map_or(1, |(h, e)| (e * u128::from(period)).div_ceil(h));
        let mut lo = (least as u64).max(1);
        let mut hi = period;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let r = Resource {
                period,
                budget: mid,
            };
            if self.schedulable(r)? {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(hi)
    }

    /// Theorem 1 with the critical points of decision 7; None when the bandwidth is 1.
    fn max_res_period(&mut self, r: Resource) -> Result<Option<u64>, InterfaceError> {
        let (a, b) = (u128::from(r.budget), u128::from(r.period));
        if a == b || a == 0 {
            return Ok(None);
        }
        // ⌊(κt − demand)/(κ(1 − κ))⌋ = ⌊b(at − demand·b) / (a(b − a))⌋, or None if negative.
        let term = |t: u128, demand: u128| -> Option<u64> {
            let x = (a * t).checked_sub(demand.checked_mul(b)?)?;
            let y = a * (b - a);
            let v = match b.checked_mul(x) {
                Some(n) => n / y,
                // Above 2^128: an upper bound is safe here (it only widens the search).
                None => (x / y + 1).saturating_mul(b),
            };
            Some(u64::try_from(v).unwrap_or(u64::MAX))
        };
        let bound = match self.scheduler {
            Scheduler::Rm => {
                let mut bound = u64::MAX;
                for rank in 0..self.points.len() {
                    let best = self.points[rank]
                        .iter()
                        .filter_map(|&(t, rbf)| term(u128::from(t), rbf))
                        .max()
                        .unwrap_or(0);
                    self.charge(self.points[rank].len() as u64)?;
                    bound = bound.min(best);
                }
                bound
            }
            Scheduler::Edf => {
                // t = H (dbf(H) = U_W·H) when H < 2^64; any set of t gives a valid bound.
                let mut bound = self
                    .small
                    .map_or(u64::MAX, |(h, e)| term(h, e).unwrap_or(0));
                let pn = u128::from(self.w.max_period());
                self.scan_deadlines(pn, |t, dbf| {
                    bound = bound.min(term(t, dbf).unwrap_or(0));
                    true
                })?;
                bound
            }
        };
        Ok(Some(bound))
    }

    /// Smaller bandwidth, or equal at a smaller period (decision 4).
    fn better(a: Resource, b: Resource) -> bool {
        let (ka, kb) = (a.bandwidth(), b.bandwidth());
        ka < kb || (ka == kb && a.period < b.period)
    }

    /// Algorithm 1 with decisions 4–6: (optimum, final bound, periods examined).
    fn search_general(&mut self) -> Result<(Resource, u64, u64), InterfaceError> {
        let pn = self.w.max_period();
        self.at = (pn, None);
        let mut best = Resource {
            period: pn,
            budget: self.min_exec(pn)?,
        };
        if self.scheduler == Scheduler::Edf
            && best.budget == best.period
            && self.rate(1, 1) == Ordering::Greater
            && self.edf_admits_blackout()?
        {
            let star = self.over_one_minus_u(4);
            let period = star
                .and_then(|p| u64::try_from(p).ok())
                .filter(|&p| p <= MAX_PERIOD_SLOTS)
                .ok_or_else(|| InterfaceError::PeriodSearchTooLarge {
                    period: star.map_or_else(|| "above 2^100".to_string(), |p| p.to_string()),
                })?;
            self.at = (period, None);
            let seed = Resource {
                period,
                budget: self.min_exec(period)?,
            };
            if seed.budget == seed.period {
                return Err(InterfaceError::Internal(
                    "EDF: (Π*, Π* − 1) should pass (decision 5)",
                ));
            }
            if Self::better(seed, best) {
                best = seed;
            }
        }
        let mut bound = self.max_res_period(best)?.unwrap_or(1);
        if self.scheduler == Scheduler::Rm {
            bound = bound.min(pn);
        }
        let mut examined = 0;
        let mut period = 1;
        while period <= bound {
            self.at = (period, Some(bound));
            let cand = Resource {
                period,
                budget: self.min_exec(period)?,
            };
            examined += 1;
            if Self::better(cand, best) {
                best = cand;
                if let Some(b) = self.max_res_period(best)? {
                    bound = bound.min(b);
                }
            }
            if period == u64::MAX {
                break;
            }
            period += 1;
        }
        Ok((best, bound, examined))
    }

    /// EDF, decision 5: dbf(t) ≤ t − 2 at every deadline t ≤ 2/(1 − U_W) (U_W < 1).
    fn edf_admits_blackout(&mut self) -> Result<bool, InterfaceError> {
        let bound =
            self.over_one_minus_u(2)
                .ok_or_else(|| InterfaceError::PeriodSearchTooLarge {
                    period: "above 2^100".to_string(),
                })?;
        let mut ok = true;
        self.scan_deadlines(bound, |t, dbf| {
            ok = t >= 2 && dbf <= t - 2;
            ok
        })?;
        Ok(ok)
    }

    /// The divisors of p_1 (harmonic W), each with its MinExec (decision 3).
    fn search_aligned(&mut self) -> Result<(Resource, u64, u64), InterfaceError> {
        let p1 = self.w.min_period();
        let mut divisors: Vec<u64> = Vec::new();
        let mut i: u64 = 1;
        while i * i <= p1 {
            if p1.is_multiple_of(i) {
                divisors.push(i);
                if i != p1 / i {
                    divisors.push(p1 / i);
                }
            }
            i += 1;
        }
        divisors.sort_unstable();
        let mut best: Option<Resource> = None;
        for &period in &divisors {
            self.at = (period, Some(p1));
            let cand = Resource {
                period,
                budget: self.min_exec(period)?,
            };
            if best.is_none_or(|b| Self::better(cand, b)) {
                best = Some(cand);
            }
        }
        let best = best.ok_or(InterfaceError::Internal("1 divides every period"))?;
        Ok((best, p1, divisors.len() as u64))
    }

    /// The critical points of `r` (see [`Interface::critical_points`]) and whether one slot less
    /// would be below the long-run rate.
    fn critical_points(
        &mut self,
        r: Resource,
    ) -> Result<(Vec<CriticalPoint>, bool), InterfaceError> {
        let lower = Resource {
            period: r.period,
            budget: r.budget.saturating_sub(1),
        };
        let forced = self.rate(lower.budget, r.period) == Ordering::Less;
        let narrow = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
        let mut out = Vec::new();
        match self.scheduler {
            Scheduler::Rm => {
                for rank in 0..self.points.len() {
                    if self.rm_witness(rank, lower)?.is_some() {
                        continue;
                    }
                    if let Some((t, rbf, s)) = self.rm_witness(rank, r)? {
                        out.push(CriticalPoint {
                            task: Some(self.w.rm_order[rank]),
                            t,
                            demand: narrow(rbf),
                            supply: narrow(s),
                        });
                    }
                }
            }
            Scheduler::Edf => {
                // Within r's own horizon (already scanned once to accept r), or the lower
                // resource's when r is dedicated.
                let bound = match (self.horizon(r)?, self.horizon(lower)?) {
                    (Horizon::Upto(b), _) | (Horizon::Dedicated, Horizon::Upto(b)) => b,
                    _ => 0,
                };
                let supply = self.supply;
                self.scan_deadlines(bound, |t, dbf| {
                    if dbf > sbf(lower, supply, t) {
                        out.push(CriticalPoint {
                            task: None,
                            t: narrow(t),
                            demand: narrow(dbf),
                            supply: narrow(sbf(r, supply, t)),
                        });
                    }
                    out.len() < MAX_CRITICAL_POINTS
                })?;
            }
        }
        Ok((out, forced))
    }
}

/// Per RM rank, the scheduling points with rbf, after counting them against the cap.
fn rm_points(w: &Workload) -> Result<Vec<Vec<(u64, u128)>>, InterfaceError> {
    let order = &w.rm_order;
    let mut count: u128 = 0;
    for (i, &ti) in order.iter().enumerate() {
        let pi = w.tasks[ti].period;
        for &k in &order[..=i] {
            count += u128::from(pi / w.tasks[k].period);
        }
    }
    if count > u128::from(MAX_TEST_POINTS) {
        return Err(InterfaceError::TooManyTestPoints { points: count });
    }
    Ok((0..order.len())
        .map(|i| {
            let pi = w.tasks[order[i]].period;
            let mut ts: Vec<u64> = order[..=i]
                .iter()
                .flat_map(|&k| {
                    let pk = w.tasks[k].period;
                    (1..=pi / pk).map(move |j| j * pk)
                })
                .collect();
            ts.sort_unstable();
            ts.dedup();
            ts.into_iter().map(|t| (t, w.rbf(i, t))).collect()
        })
        .collect())
}

fn utilization_f64(tasks: &[Task]) -> f64 {
    tasks.iter().map(|t| t.wcet as f64 / t.period as f64).sum()
}

/// A non-negative integer of any size: 64-bit limbs, least significant first, no leading zero
/// limb (so equal values have equal limbs). Only what the hyperperiod and U_W·H need.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u64>);

impl Big {
    fn from(v: u64) -> Big {
        Big(if v == 0 { Vec::new() } else { vec![v] })
    }

    fn mul_small(&self, m: u64) -> Big {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut carry: u128 = 0;
        for &limb in &self.0 {
            // limb·m + carry < 2^128: (2^64 − 1)² + 2^64 − 1 < 2^128.
            let v = u128::from(limb) * u128::from(m) + carry;
            out.push(v as u64);
            carry = v >> 64;
        }
        out.push(carry as u64);
        Big::trimmed(out)
    }

    /// ⌊self / d⌋, d ≥ 1.
    fn div_small(&self, d: u64) -> Big {
        let mut out = vec![0; self.0.len()];
        let mut rem: u128 = 0;
        for (i, &limb) in self.0.iter().enumerate().rev() {
            let v = rem << 64 | u128::from(limb);
            out[i] = (v / u128::from(d)) as u64;
            rem = v % u128::from(d);
        }
        Big::trimmed(out)
    }

    /// self mod d, d ≥ 1.
    fn rem_small(&self, d: u64) -> u64 {
        self.0.iter().rev().fold(0u128, |rem, &limb| {
            (rem << 64 | u128::from(limb)) % u128::from(d)
        }) as u64
    }

    fn add(&self, other: &Big) -> Big {
        let n = self.0.len().max(other.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = false;
        for i in 0..n {
            let (a, b) = (
                self.0.get(i).copied().unwrap_or(0),
                other.0.get(i).copied().unwrap_or(0),
            );
            let (s, c1) = a.overflowing_add(b);
            let (s, c2) = s.overflowing_add(u64::from(carry));
            out.push(s);
            carry = c1 || c2;
        }
        out.push(u64::from(carry));
        Big::trimmed(out)
    }

    fn to_u64(&self) -> Option<u64> {
        match self.0.len() {
            0 => Some(0),
            1 => Some(self.0[0]),
            _ => None,
        }
    }

    fn trimmed(mut limbs: Vec<u64>) -> Big {
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        Big(limbs)
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
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

    fn w(tasks: &[(u64, u64)]) -> Workload {
        let tasks: Vec<Task> = tasks
            .iter()
            .map(|&(period, wcet)| Task { period, wcet })
            .collect();
        Workload::new(&tasks).expect("valid workload")
    }

    fn res(period: u64, budget: u64) -> Resource {
        Resource { period, budget }
    }

    #[test]
    fn sbf_general_has_blackout_two_d_then_theta_on_d_off() {
        // Γ = (5, 2): d = 3, nothing in the first 6 slots, then 2 on, 3 off.
        let g = res(5, 2);
        let got: Vec<u64> = (0..=16).map(|t| g.sbf(Supply::General, t)).collect();
        assert_eq!(got, [0, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 3, 4, 4, 4, 4]);
        assert_eq!(g.blackout(Supply::General), 6);
    }

    #[test]
    fn sbf_aligned_has_blackout_d_then_theta_at_each_period_end() {
        // Γ = (5, 2) aligned: slots 3, 4 of every period.
        let g = res(5, 2);
        let got: Vec<u64> = (0..=10).map(|t| g.sbf(Supply::Aligned, t)).collect();
        assert_eq!(got, [0, 0, 0, 0, 1, 2, 2, 2, 2, 3, 4]);
        assert_eq!(g.blackout(Supply::Aligned), 3);
    }

    #[test]
    fn sbf_matches_the_papers_equation_one_literally() {
        // Eq. (1) as printed, for t ≥ Π − Θ: y·Θ + max(0, t − x − y·Π).
        for p in 1..=9u64 {
            for theta in 0..=p {
                for t in 0..=40u64 {
                    let (pi, th, ti) = (p as i64, theta as i64, t as i64);
                    let general = if ti >= pi - th {
                        let y = (ti - (pi - th)).div_euclid(pi);
                        y * th + 0.max(ti - 2 * (pi - th) - y * pi)
                    } else {
                        0
                    };
                    let aligned = if ti >= pi - th {
                        let y = ti.div_euclid(pi);
                        y * th + 0.max(ti - (pi - th) - y * pi)
                    } else {
                        0
                    };
                    let g = res(p, theta);
                    assert_eq!(g.sbf(Supply::General, t) as i64, general, "{p} {theta} {t}");
                    assert_eq!(g.sbf(Supply::Aligned, t) as i64, aligned, "{p} {theta} {t}");
                }
            }
        }
    }

    #[test]
    fn sbf_is_the_minimum_supply_over_all_placements() {
        // Property 1: every placement of Θ slots in each of three consecutive periods, every
        // window start in the first period, lengths up to 2Π (such a window lies inside the
        // three periods).
        for p in 1..=4u64 {
            for theta in 0..=p {
                let placements: Vec<u64> = (0u64..1 << p)
                    .filter(|m| m.count_ones() as u64 == theta)
                    .collect();
                for t in 0..=2 * p {
                    let mut least_any = u64::MAX;
                    let mut least_boundary = u64::MAX;
                    for &a in &placements {
                        for &b in &placements {
                            for &c in &placements {
                                let on = |s: u64| {
                                    let m = [a, b, c][(s / p) as usize];
                                    m >> (s % p) & 1 == 1
                                };
                                for start in 0..p {
                                    let got = (start..start + t).filter(|&s| on(s)).count() as u64;
                                    least_any = least_any.min(got);
                                    if start == 0 {
                                        least_boundary = least_boundary.min(got);
                                    }
                                }
                            }
                        }
                    }
                    let g = res(p, theta);
                    assert_eq!(
                        g.sbf(Supply::General, t),
                        least_any,
                        "Γ=({p},{theta}) t={t}"
                    );
                    assert_eq!(
                        g.sbf(Supply::Aligned, t),
                        least_boundary,
                        "Γ=({p},{theta}) t={t}"
                    );
                }
            }
        }
    }

    #[test]
    fn sbf_is_monotone_and_between_its_linear_bounds() {
        // Property 2.
        for p in 1..=12u64 {
            for theta in 0..=p {
                let g = res(p, theta);
                let d = p - theta;
                for t in 0..=60u64 {
                    let s = g.sbf(Supply::General, t);
                    assert!(s <= g.sbf(Supply::General, t + 1));
                    assert!(s <= g.sbf(Supply::Aligned, t));
                    assert!(s <= t.saturating_sub(2 * d));
                    // κ(t − 2d) ≤ sbf, i.e. Θ(t − 2d) ≤ Π·sbf
                    assert!(theta as i64 * (t as i64 - 2 * d as i64) <= (p * s) as i64);
                    if theta < p {
                        assert!(s <= res(p, theta + 1).sbf(Supply::General, t));
                    }
                }
            }
        }
    }

    #[test]
    fn rbf_counts_the_job_released_at_zero() {
        // Decision 1: W = {(4, 2), (6, 3)}, rank 1 at t = 1: ⌈1/4⌉·2 + ⌈1/6⌉·3 = 5 (floor: 0).
        let wl = w(&[(6, 3), (4, 2)]);
        assert_eq!(wl.rm_order(), &[1, 0]);
        assert_eq!(wl.rbf(1, 1), 5);
        assert_eq!(wl.rbf(1, 4), 5);
        assert_eq!(wl.rbf(1, 5), 7);
        assert_eq!(wl.rbf(0, 4), 2);
        assert_eq!(wl.dbf(4), 2);
        assert_eq!(wl.dbf(12), 12);
    }

    #[test]
    fn rm_test_rejects_the_ceiling_example_on_a_dedicated_cpu() {
        let wl = w(&[(4, 2), (6, 3)]);
        // U_W = 1/2 + 1/2 = 1, fine for EDF, not for RM (misses at 6).
        assert!(!schedulable(&wl, Scheduler::Rm, Supply::General, res(1, 1)).expect("test"));
        assert!(schedulable(&wl, Scheduler::Edf, Supply::General, res(1, 1)).expect("test"));
        assert_eq!(
            optimal_interface(&wl, Scheduler::Rm, Supply::General).unwrap_err(),
            InterfaceError::NotRmSchedulable {
                task: 1,
                period: 6,
                wcet: 3
            }
        );
    }

    #[test]
    fn min_exec_of_one_task_by_hand() {
        // W = {(10, 3)}, Π = 5, general: need sbf(10) ≥ 3 (the only point).
        // Θ = 3: d = 2, y = ⌊(10 − 2)/5⌋ = 1: sbf(10) = 3 + max(0, 10 − 4 − 5) = 4 ≥ 3
        // (supply in [4, 7) and [9, 10)).
        // Θ = 2: d = 3, y = ⌊7/5⌋ = 1: sbf(10) = 2 + max(0, 10 − 6 − 5) = 2 < 3.
        // So MinExec(5) = 3.
        let wl = w(&[(10, 3)]);
        assert_eq!(min_exec(&wl, Scheduler::Rm, Supply::General, 5), Ok(3));
        assert_eq!(min_exec(&wl, Scheduler::Edf, Supply::General, 5), Ok(3));
    }

    #[test]
    fn optimal_interface_of_one_task_by_hand() {
        // W = {(10, 1)} under EDF. Θ = 1 needs sbf(10) ≥ 1: blackout 2(Π − 1) ≤ 9 → Π ≤ 5,
        // and (5, 1) also meets t = 20 (3 slots by then ≥ 2) and every later deadline (κ = 0.2
        // > U = 0.1): bandwidth 1/5. No Π gives less: Θ = 1 needs Π ≤ 5; Θ = 2 needs
        // 2(Π − 2) ≤ 9, Π ≤ 6, bandwidth ≥ 1/3.
        let wl = w(&[(10, 1)]);
        let i = optimal_interface(&wl, Scheduler::Edf, Supply::General).expect("interface");
        assert_eq!(i.resource, res(5, 1));
        assert_eq!(i.bandwidth, Ratio::new(1, 5));
        assert!((i.overhead - 0.1).abs() < 1e-12);
        // The same under RM (one task: the tests coincide on (0, 10]).
        let r = optimal_interface(&wl, Scheduler::Rm, Supply::General).expect("interface");
        assert_eq!(r.resource, res(5, 1));
        // Critical: t = 10 for the task (with Θ = 0 nothing passes).
        assert_eq!(
            r.critical_points,
            vec![CriticalPoint {
                task: Some(0),
                t: 10,
                demand: 1,
                supply: 1
            }]
        );
    }

    #[test]
    fn aligned_harmonic_interface_can_have_zero_overhead() {
        // W = {(4, 1), (8, 2)}, U = 1/2. Aligned Π = 4, Θ = 2: sbf(4) = 2 ≥ rbf_0(4) = 1;
        // rbf_1(8) = 2·1 + 2 = 4 ≤ sbf(8) = 4. Bandwidth 1/2 = U: no overhead. Π = 2, Θ = 1
        // has the same bandwidth (sbf(t) = ⌊t/2⌋: sbf(4) = 2 ≥ 1, sbf(8) = 4 ≥ 4) and the
        // smaller period wins the tie (decision 4).
        let wl = w(&[(4, 1), (8, 2)]);
        assert_eq!(
            schedulable(&wl, Scheduler::Rm, Supply::Aligned, res(4, 2)),
            Ok(true)
        );
        let i = optimal_interface(&wl, Scheduler::Rm, Supply::Aligned).expect("interface");
        assert_eq!(i.resource, res(2, 1));
        assert_eq!(i.periods_examined, 3);
        assert_eq!(i.overhead, 0.0);
        // Under general supply the overhead is never 0 below bandwidth 1 (property 5).
        let g = optimal_interface(&wl, Scheduler::Rm, Supply::General).expect("interface");
        assert!(g.overhead > 0.0);
    }

    #[test]
    fn aligned_supply_refuses_a_non_harmonic_workload() {
        let wl = w(&[(4, 1), (6, 1)]);
        assert_eq!(
            optimal_interface(&wl, Scheduler::Edf, Supply::Aligned).unwrap_err(),
            InterfaceError::NotHarmonic {
                a: 0,
                pa: 4,
                b: 1,
                pb: 6
            }
        );
    }

    #[test]
    fn bandwidth_one_everywhere_gives_the_smallest_period() {
        // Decision 5. RM: (2, 1), (4, 1): at Π = 4, d = 1 gives sbf(2) = 0 < 1: only Θ = Π.
        let wl = w(&[(2, 1), (4, 1)]);
        let i = optimal_interface(&wl, Scheduler::Rm, Supply::General).expect("interface");
        assert_eq!(i.resource, res(1, 1));
        // EDF: (4, 3) alone forces d = 0 (dbf(4) = 3 > 4 − 2).
        let wl = w(&[(4, 3), (100, 1)]);
        let i = optimal_interface(&wl, Scheduler::Edf, Supply::General).expect("interface");
        assert_eq!(i.resource, res(1, 1));
        // U_W = 1 exactly.
        let wl = w(&[(2, 1), (4, 2)]);
        let i = optimal_interface(&wl, Scheduler::Edf, Supply::General).expect("interface");
        assert_eq!(i.resource, res(1, 1));
    }

    #[test]
    fn edf_optimum_beyond_the_largest_period_is_found() {
        // Decision 6: W = {(4, 2), (10, 4)}, U = 0.9, EDF. dbf(4) = 2 ≤ sbf(4) ≤ 4 − 2d forces
        // d ≤ 1 at every Π, so every interface below bandwidth 1 is (Π, Π − 1), and the long
        // run needs 1 − 1/Π ≥ 0.9: Π ≥ 10. (10, 9) and the next periods fail a later deadline
        // (brute force in tests/interface.rs agrees); (19, 18) is the first that passes.
        let wl = w(&[(4, 2), (10, 4)]);
        let i = optimal_interface(&wl, Scheduler::Edf, Supply::General).expect("interface");
        assert_eq!(i.resource, res(19, 18));
        assert!(i.resource.period > 10);
    }

    #[test]
    fn parse_is_strict() {
        assert_eq!(
            parse_tasks("10,2; 20 , 3"),
            Ok(vec![
                Task {
                    period: 10,
                    wcet: 2
                },
                Task {
                    period: 20,
                    wcet: 3
                }
            ])
        );
        assert_eq!(parse_tasks(" "), Err(InterfaceError::Empty));
        assert!(matches!(
            parse_tasks("10,2;"),
            Err(InterfaceError::Syntax { task: 1, .. })
        ));
        assert!(matches!(
            parse_tasks("10,2,3"),
            Err(InterfaceError::Syntax { task: 0, .. })
        ));
        assert!(matches!(
            parse_tasks("+10,2"),
            Err(InterfaceError::NotANumber {
                task: 0,
                field: "period",
                ..
            })
        ));
        assert!(matches!(
            parse_tasks("10,-2"),
            Err(InterfaceError::NotANumber {
                task: 0,
                field: "wcet",
                ..
            })
        ));
        assert!(matches!(
            parse_tasks("18446744073709551616,1"),
            Err(InterfaceError::NotANumber { .. })
        ));
    }

    #[test]
    fn workload_rules_name_the_task_and_field() {
        let t = |period, wcet| Task { period, wcet };
        assert_eq!(
            Workload::new(&[t(5, 1), t(0, 1)]),
            Err(InterfaceError::ZeroPeriod { task: 1 })
        );
        assert_eq!(
            Workload::new(&[t(5, 0)]),
            Err(InterfaceError::ZeroWcet { task: 0 })
        );
        assert_eq!(
            Workload::new(&[t(5, 7)]),
            Err(InterfaceError::WcetAbovePeriod {
                task: 0,
                wcet: 7,
                period: 5
            })
        );
        assert_eq!(
            Workload::new(&[t(2, 1), t(3, 2)]),
            Err(InterfaceError::Overloaded {
                utilization: "7/6".to_string()
            })
        );
        assert_eq!(
            Workload::new(&[t(u64::MAX, 1)]),
            Err(InterfaceError::PeriodTooLarge {
                task: 0,
                period: u64::MAX
            })
        );
        let e = InterfaceError::WcetAbovePeriod {
            task: 3,
            wcet: 7,
            period: 5,
        };
        assert_eq!(
            e.to_string(),
            "tasks[3].wcet = 7: exceeds the period 5 (implicit deadlines: 1 ≤ wcet ≤ period)"
        );
    }

    #[test]
    fn no_64_bit_hyperperiod_is_needed() {
        // Ten primes from 101 to 149: H = their product ≈ 2^69.
        let primes = [101, 103, 107, 109, 113, 127, 131, 137, 139, 149];
        let tasks: Vec<Task> = primes
            .iter()
            .map(|&p| Task { period: p, wcet: 3 })
            .collect();
        let wl = Workload::new(&tasks).expect("valid");
        assert_eq!(wl.hyperperiod(), None);
        assert_eq!(wl.utilization(), None);
        let u: f64 = primes.iter().map(|&p| 3.0 / p as f64).sum();
        assert!((wl.utilization_f64() - u).abs() < 1e-12);
        for s in [Scheduler::Rm, Scheduler::Edf] {
            let i = optimal_interface(&wl, s, Supply::General).expect("interface");
            assert!(i.overhead > 0.0 && i.utilization_exact.is_none());
            assert!(i.bandwidth.to_f64() >= u);
        }
        // U_W > 1 is still exact: wcet 14 everywhere gives U ≈ 1.1.
        let over: Vec<Task> = primes
            .iter()
            .map(|&p| Task {
                period: p,
                wcet: 14,
            })
            .collect();
        assert!(matches!(
            Workload::new(&over),
            Err(InterfaceError::Overloaded { .. })
        ));
    }

    /// `w` as if its hyperperiod exceeded 2^64: the float horizons and bounds, no t = H.
    fn without_small_hyperperiod(w: &Workload) -> Workload {
        Workload {
            small: None,
            ..w.clone()
        }
    }

    #[test]
    fn float_paths_for_huge_hyperperiods_give_the_exact_answers() {
        // The paths taken when H > 2^64 (decision 8's float horizon, Π* and the blackout check
        // of decision 5 in floating point, MaxResPeriod without t = H, MinExec from 1) only
        // ever look further than the exact ones, so on workloads with a small H they must
        // find the same interfaces. splitmix64-drawn sets, periods 2..=30, up to 5 tasks.
        let mut state = 16_008u64;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut compared = 0;
        while compared < 600 {
            let n = 1 + next() % 5;
            let tasks: Vec<Task> = (0..n)
                .map(|_| {
                    let period = 2 + next() % 29;
                    Task {
                        period,
                        wcet: 1 + next() % period.div_ceil(3),
                    }
                })
                .collect();
            let Ok(exact) = Workload::new(&tasks) else {
                continue;
            };
            let float = without_small_hyperperiod(&exact);
            for s in [Scheduler::Rm, Scheduler::Edf] {
                let a = optimal_interface(&exact, s, Supply::General);
                let b = optimal_interface(&float, s, Supply::General);
                match (a, b) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.resource, b.resource, "{tasks:?} {s}");
                        // The float horizon may be longer, so it may list more EDF points.
                        assert!(
                            b.critical_points.starts_with(&a.critical_points),
                            "{tasks:?} {s}"
                        );
                        assert!((a.overhead - b.overhead).abs() < 1e-12);
                        compared += 1;
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b),
                    (a, b) => panic!("{tasks:?} {s}: {a:?} vs {b:?}"),
                }
            }
        }
    }

    #[test]
    fn big_integers_do_what_the_hyperperiod_needs() {
        let two64 = Big::from(u64::MAX).add(&Big::from(1));
        assert_eq!(two64, Big(vec![0, 1]));
        assert_eq!(two64.rem_small(10), 6); // 18446744073709551616
        assert_eq!(two64.div_small(2), Big::from(1 << 63));
        assert_eq!(two64.mul_small(3).div_small(3), two64);
        assert!(two64 > Big::from(u64::MAX));
        assert_eq!(Big::from(0).mul_small(5), Big::from(0));
    }

    #[test]
    fn huge_periods_end_in_the_work_cap_not_a_hang() {
        // One task with the largest period: Algorithm 1 would examine ~2^32 periods.
        let wl = w(&[(MAX_PERIOD_SLOTS, 1)]);
        let err = optimal_interface(&wl, Scheduler::Rm, Supply::General).unwrap_err();
        assert!(matches!(err, InterfaceError::WorkCap { .. }), "{err}");
        // The test itself is cheap and exact at the edge.
        let g = res(MAX_PERIOD_SLOTS, MAX_PERIOD_SLOTS);
        assert_eq!(
            schedulable(&wl, Scheduler::Rm, Supply::General, g),
            Ok(true)
        );
        assert_eq!(
            schedulable(&wl, Scheduler::Edf, Supply::General, g),
            Ok(true)
        );
    }

    #[test]
    fn far_apart_periods_hit_the_test_point_cap() {
        // Rank 1 of {(2, 1), (2^22, 1)} has 2^21 + 1 points, rank 0 one.
        let wl = Workload::new(&[
            Task { period: 2, wcet: 1 },
            Task {
                period: 1 << 22,
                wcet: 1,
            },
        ])
        .expect("valid");
        assert_eq!(
            optimal_interface(&wl, Scheduler::Rm, Supply::General).unwrap_err(),
            InterfaceError::TooManyTestPoints {
                points: 1 + (1 << 21) + 1
            }
        );
    }

    #[test]
    fn invalid_resources_are_refused() {
        let wl = w(&[(4, 1)]);
        for r in [res(0, 0), res(3, 4), res(MAX_PERIOD_SLOTS + 1, 1)] {
            assert_eq!(
                schedulable(&wl, Scheduler::Rm, Supply::General, r),
                Err(InterfaceError::InvalidResource(r))
            );
        }
    }
}

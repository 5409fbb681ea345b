//! Why a workload or a resource is refused, or a search cannot finish.

use super::{Resource, MAX_EVALUATIONS, MAX_PERIOD_SLOTS, MAX_TASKS, MAX_TEST_POINTS};

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

//! Adaptive reservations for legacy applications (seed 003, LFS++): a task that announces no
//! timing gets a periodic `tt` reservation whose period is inferred from its wakeups and whose
//! budget follows its measured consumption. Pure logic: values in, values out; the event tracer
//! and the run edge feed it (issue 17). docs/adaptive.md has the whole story.
//!
//! # The three parts
//! - [`period`], the **period analyser** (Sections 5.1–5.2): the amplitude spectrum
//!   `|Σᵢ e^{-j2πf tᵢ}|` of the wakeup times of the last `H` over `[f_min, f_max]` with step
//!   `δf`; the local maxima above `α` times the spectrum's mean are candidates; each candidate's
//!   spectrum is accumulated at up to `k_max` of its multiples within a tolerance `ε`; the
//!   largest sum wins (then an optional refinement from the harmonics' interpolated peaks).
//!   Parameters: [`period::AnalyserConfig`].
//! - [`controller`], the **bandwidth controller** (Section 5.3): every sampling period `S` the
//!   consumption of the last `S` goes into a window of the last `N` samples; the budget request
//!   is `Q = (1 + x) · P · C_p / S`, `C_p` the window's `p`-th percentile (nearest rank), `P` the
//!   inferred period, capped at `max_bandwidth · P`; it becomes a periodic reservation in slots
//!   (period: the largest number of slots, dividing the frame if asked, not above `P`; WCET: the
//!   bandwidth times that period, rounded up). Parameters: [`controller::ControllerConfig`].
//! - [`supervisor`], the **supervisor** (Section 4.2): the adaptive requests go to an admission
//!   oracle that answers whether a set of periodic reservations fits next to the guaranteed
//!   tasks (e.g. [`supervisor::PlannerOracle`], the planner's exact EDF admission). If the
//!   requests fit they are granted; else the lowest-priority requests are dropped until their
//!   minimums fit, and the others are compressed proportionally: every grant is
//!   `min + ⌊λ·(request − min)⌋` with the largest `λ ∈ [0, 1]` that fits. Only a set the oracle
//!   accepted is ever returned, so guaranteed tasks are never put at risk.
//!
//! Every parameter is validated; a bad one is a [`ParamError`] naming the field, the value and
//! the rule.

pub mod bounds;
pub mod controller;
pub mod live;
pub mod period;
pub mod supervisor;
pub mod tracker;

pub use bounds::{AdaptiveBounds, AdaptiveParams};
pub use controller::{BandwidthController, BudgetRequest, ControllerConfig, PercentileWindow};
pub use live::{AdaptiveState, AdaptiveView, Change, Slots};
pub use period::{AnalyserConfig, Detection, PeriodAnalyser, PeriodEstimate};
pub use supervisor::{
    supervise, AdaptiveRequest, AdmissionOracle, Allocation, Grant, PeriodicReservation,
    PlannerOracle, Supervision,
};
pub use tracker::Tracker;

/// A parameter outside its rule: `field = value: rule`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value}: {rule}")]
pub struct ParamError {
    /// The parameter's name (the field of its configuration struct).
    pub field: &'static str,
    /// The value given, as text.
    pub value: String,
    /// The rule it breaks.
    pub rule: String,
}

impl ParamError {
    pub fn new(
        field: &'static str,
        value: impl std::fmt::Display,
        rule: impl Into<String>,
    ) -> Self {
        ParamError {
            field,
            value: value.to_string(),
            rule: rule.into(),
        }
    }
}

//! The bandwidth controller (seed 003, LFS++, Section 5.3): the budget of an adaptive
//! reservation from the consumption the task showed in the recent sampling periods.
//!
//! # Rule
//! ```text
//! every sampling period S (activation k of the loop):
//!   c_k   = W_k − W_{k−1}             consumption of the last S (W: cumulative CPU time)
//!   push c_k into the window of the last N samples
//!   C_p   = the p-th percentile of the window, nearest rank: the ⌈p·n⌉-th smallest of n
//!   Q_req = (1 + x) · P · C_p / S     P: the period of the analyser, clamped to the range
//!   Q_req = min(Q_req, max_bandwidth · P)
//! ```
//! `C_p / S` is the bandwidth the task used (in the percentile sense); times `P` it is the budget
//! per period, times `1 + x` the spread of the paper ("best chosen in [0.1, 0.2]"). The paper's
//! percentile of `N` samples for `p = (N − j)/N` is the `(j+1)`-th largest: nearest rank gives
//! exactly that (`N = 16`, `p = 0.9375`: the second largest) and is the smallest sample with
//! at least a fraction `p` of the window at or below it for any other `p`.
//!
//! # Reservation in slots ([`BudgetRequest::to_slots`])
//! - period: `⌊P / slot⌋` slots (a server period at or just below the task's keeps every task
//!   period served: the paper's Section 4 and its Fig. 2; a `P / slot` less than
//!   [`PERIOD_SNAP`] = 1 % below a whole number is that number: the analyser's accuracy), and
//!   if a frame is given the largest
//!   divisor of the frame not above it (the planner admits periodic tasks whose period divides
//!   the frame). At least 1 slot, else an error.
//! - WCET: `⌈(Q/P) · period_slots⌉` slots (the bandwidth is kept when the period is rounded),
//!   at most `max(1, ⌊max_bandwidth · period_slots⌋)`, at least the minimum
//!   `max(1, ⌈min_bandwidth · period_slots⌉)` (capped the same way).
//!
//! # Parameters ([`ControllerConfig`])
//! | field | default | rule |
//! |---|---|---|
//! | `period_min_ns` | 5 ms | `> 0` |
//! | `period_max_ns` | 500 ms | `≥ period_min_ns` |
//! | `max_bandwidth` | 0.9 | in `(0, 1]` |
//! | `min_bandwidth` | 0 | in `[0, max_bandwidth]` |
//! | `percentile` (p) | 0.9375 | in `(0, 1]` |
//! | `window` (N) | 16 | in `1..=4096` |
//! | `spread` (x) | 0.15 | finite, in `[0, 10]` |
//! | `sampling_ns` (S) | 1 s (the paper's) | `≥ period_max_ns` (a sample spans a whole period) |

use super::ParamError;
use std::collections::VecDeque;

/// Largest sliding window.
pub const MAX_WINDOW: usize = 4096;
/// Largest spread factor.
pub const MAX_SPREAD: f64 = 10.0;

/// The controller's parameters (module doc, "Parameters").
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ControllerConfig {
    /// Shortest period an adaptive task may be given, ns.
    pub period_min_ns: u64,
    /// Longest period, ns.
    pub period_max_ns: u64,
    /// Most bandwidth (budget / period) one adaptive reservation may request.
    pub max_bandwidth: f64,
    /// Least bandwidth the supervisor may compress it to (1 slot at least).
    pub min_bandwidth: f64,
    /// Percentile p of the consumption samples.
    pub percentile: f64,
    /// Samples N in the sliding window.
    pub window: usize,
    /// Spread factor x.
    pub spread: f64,
    /// Sampling period S of the loop, ns.
    pub sampling_ns: u64,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            period_min_ns: 5_000_000,
            period_max_ns: 500_000_000,
            max_bandwidth: 0.9,
            min_bandwidth: 0.0,
            percentile: 0.9375,
            window: 16,
            spread: 0.15,
            sampling_ns: 1_000_000_000,
        }
    }
}

impl ControllerConfig {
    /// Every rule of the module doc's table; the first broken one.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.period_min_ns == 0 {
            return Err(ParamError::new("period_min_ns", 0, "must be > 0"));
        }
        if self.period_max_ns < self.period_min_ns {
            return Err(ParamError::new(
                "period_max_ns",
                self.period_max_ns,
                format!("must be at least period_min_ns ({})", self.period_min_ns),
            ));
        }
        if !(self.max_bandwidth > 0.0 && self.max_bandwidth <= 1.0) {
            return Err(ParamError::new(
                "max_bandwidth",
                self.max_bandwidth,
                "must be in (0, 1]",
            ));
        }
        if !(self.min_bandwidth >= 0.0 && self.min_bandwidth <= self.max_bandwidth) {
            return Err(ParamError::new(
                "min_bandwidth",
                self.min_bandwidth,
                format!("must be in [0, max_bandwidth = {}]", self.max_bandwidth),
            ));
        }
        if !(self.percentile > 0.0 && self.percentile <= 1.0) {
            return Err(ParamError::new(
                "percentile",
                self.percentile,
                "must be in (0, 1]",
            ));
        }
        if !(1..=MAX_WINDOW).contains(&self.window) {
            return Err(ParamError::new(
                "window",
                self.window,
                format!("must be in 1..={MAX_WINDOW}"),
            ));
        }
        if !(self.spread >= 0.0 && self.spread <= MAX_SPREAD) {
            return Err(ParamError::new(
                "spread",
                self.spread,
                format!("must be in [0, {MAX_SPREAD}]"),
            ));
        }
        if self.sampling_ns < self.period_max_ns {
            return Err(ParamError::new(
                "sampling_ns",
                self.sampling_ns,
                format!(
                    "must be at least period_max_ns ({}): a sample spans a whole period",
                    self.period_max_ns
                ),
            ));
        }
        Ok(())
    }
}

/// The last `capacity` samples in arrival order and sorted, for the percentile in
/// `O(log N)` search plus an `O(N)` shift per sample.
#[derive(Clone, Debug)]
pub struct PercentileWindow {
    capacity: usize,
    arrival: VecDeque<u64>,
    sorted: Vec<u64>,
}

impl PercentileWindow {
    /// An empty window of `capacity ≥ 1` samples.
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        PercentileWindow {
            capacity,
            arrival: VecDeque::with_capacity(capacity),
            sorted: Vec::with_capacity(capacity),
        }
    }

    /// Adds a sample, dropping the oldest when full.
    pub fn push(&mut self, v: u64) {
        if self.arrival.len() == self.capacity {
            let old = self.arrival.pop_front().expect("full window");
            let at = self.sorted.partition_point(|&s| s < old);
            self.sorted.remove(at);
        }
        self.arrival.push_back(v);
        let at = self.sorted.partition_point(|&s| s <= v);
        self.sorted.insert(at, v);
    }

    pub fn len(&self) -> usize {
        self.arrival.len()
    }

    pub fn is_empty(&self) -> bool {
        self.arrival.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The `p`-th percentile (nearest rank: the `⌈p·n⌉`-th smallest of the `n` samples);
    /// `None` when empty. `p` is clamped to `(0, 1]`.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        let n = self.sorted.len();
        if n == 0 {
            return None;
        }
        // the guard absorbs p·n a hair above an integer (0.9375 · 16)
        let rank = ((p.clamp(0.0, 1.0) * n as f64) - 1e-9).ceil().max(1.0) as usize;
        Some(self.sorted[rank.min(n) - 1])
    }
}

/// One budget request of the controller.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetRequest {
    /// The period used (the analyser's, clamped to the range), ns.
    pub period_ns: f64,
    /// The requested budget per period, ns.
    pub budget_ns: f64,
    /// `budget_ns / period_ns`.
    pub bandwidth: f64,
    /// The percentile `C_p` of the consumption per sampling period, ns.
    pub predicted_ns: u64,
    /// The period was outside the range and clamped.
    pub period_clamped: bool,
    /// `max_bandwidth` cut the request.
    pub capped: bool,
    /// The configuration's bandwidth bounds (for the conversion to slots).
    pub max_bandwidth: f64,
    pub min_bandwidth: f64,
}

/// A periodic reservation in slots: `wcet_slots` in every `period_slots`, and the least WCET the
/// supervisor may compress it to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotReservation {
    pub period_slots: u64,
    pub wcet_slots: u64,
    pub min_wcet_slots: u64,
}

impl BudgetRequest {
    /// The request as a periodic reservation in slots of `slot_ns` (module doc, "Reservation in
    /// slots"); with `frame_slots`, the period divides the frame.
    pub fn to_slots(
        &self,
        slot_ns: u64,
        frame_slots: Option<u64>,
    ) -> Result<SlotReservation, ParamError> {
        if slot_ns == 0 {
            return Err(ParamError::new("slot_ns", 0, "must be > 0"));
        }
        if frame_slots == Some(0) {
            return Err(ParamError::new("frame_slots", 0, "must be > 0"));
        }
        let whole = whole_slots(self.period_ns, slot_ns);
        if whole.is_nan() || whole < 1.0 {
            return Err(ParamError::new(
                "period_ns",
                self.period_ns,
                format!("must be at least one slot ({slot_ns} ns)"),
            ));
        }
        let mut period = whole as u64;
        if let Some(frame) = frame_slots {
            period = largest_divisor_at_most(frame, period);
        }
        let p = period as f64;
        let cap = ((self.max_bandwidth * p + 1e-9).floor() as u64).clamp(1, period);
        let wcet = ((self.bandwidth * p - 1e-9).ceil() as u64).clamp(1, cap);
        let min_wcet = ((self.min_bandwidth * p - 1e-9).ceil() as u64).clamp(1, cap);
        Ok(SlotReservation {
            period_slots: period,
            wcet_slots: wcet.max(min_wcet),
            min_wcet_slots: min_wcet,
        })
    }
}

/// How far below a whole number of slots an inferred period may be and still count as that
/// number: the analyser's accuracy bound (1 %; measured errors are below 0.1 %), so that an
/// inferred 39.99 ms in 2 ms slots is 20 slots, not 19 (and then 15 in a frame of 120).
pub const PERIOD_SNAP: f64 = 0.01;

/// `period_ns` in whole slots of `slot_ns`: rounded down, or up to the next whole number when
/// that is at most [`PERIOD_SNAP`] above it (relative).
pub fn whole_slots(period_ns: f64, slot_ns: u64) -> f64 {
    let x = period_ns / slot_ns as f64;
    let up = (x - 1e-9).ceil();
    if up > 0.0 && up * (1.0 - PERIOD_SNAP) <= x {
        up
    } else {
        (x + 1e-9).floor()
    }
}

/// The largest divisor of `n ≥ 1` that is at most `at_most ≥ 1`.
pub fn largest_divisor_at_most(n: u64, at_most: u64) -> u64 {
    if at_most >= n {
        return n;
    }
    let mut best = 1;
    let mut d = 1;
    while d * d <= n {
        if n.is_multiple_of(d) {
            for c in [d, n / d] {
                if c <= at_most && c > best {
                    best = c;
                }
            }
        }
        d += 1;
    }
    best
}

/// The controller of one adaptive task.
#[derive(Clone, Debug)]
pub struct BandwidthController {
    cfg: ControllerConfig,
    window: PercentileWindow,
    last_reading: Option<u64>,
}

impl BandwidthController {
    /// A controller with a validated configuration and no samples.
    pub fn new(cfg: ControllerConfig) -> Result<Self, ParamError> {
        cfg.validate()?;
        Ok(BandwidthController {
            window: PercentileWindow::new(cfg.window),
            cfg,
            last_reading: None,
        })
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.cfg
    }

    /// Samples in the window.
    pub fn samples(&self) -> usize {
        self.window.len()
    }

    /// Adds the consumption of one sampling period, ns.
    pub fn push_consumption(&mut self, consumed_ns: u64) {
        self.window.push(consumed_ns);
    }

    /// The sensor read at activation `k`: `W_k`, the task's cumulative CPU time in ns. The
    /// first reading only sets the origin; a later one pushes `W_k − W_{k−1}` (a reading below
    /// the previous one, e.g. a restarted task, sets a new origin) and returns it.
    pub fn read(&mut self, cumulative_ns: u64) -> Option<u64> {
        let prev = self.last_reading.replace(cumulative_ns)?;
        let c = cumulative_ns.checked_sub(prev)?;
        self.window.push(c);
        Some(c)
    }

    /// The budget request for the (inferred) period `period_ns`; `None` before any sample or
    /// for a period that is not a positive number.
    pub fn request(&self, period_ns: f64) -> Option<BudgetRequest> {
        if !(period_ns.is_finite() && period_ns > 0.0) {
            return None;
        }
        let c = &self.cfg;
        let predicted = self.window.percentile(c.percentile)?;
        let period = period_ns.clamp(c.period_min_ns as f64, c.period_max_ns as f64);
        let want = (1.0 + c.spread) * period * predicted as f64 / c.sampling_ns as f64;
        let cap = c.max_bandwidth * period;
        let budget = want.min(cap);
        Some(BudgetRequest {
            period_ns: period,
            budget_ns: budget,
            bandwidth: budget / period,
            predicted_ns: predicted,
            period_clamped: period != period_ns,
            capped: want > cap,
            max_bandwidth: c.max_bandwidth,
            min_bandwidth: c.min_bandwidth,
        })
    }

    /// One activation of the loop: [`Self::read`] then [`Self::request`].
    pub fn step(&mut self, cumulative_ns: u64, period_ns: f64) -> Option<BudgetRequest> {
        self.read(cumulative_ns);
        self.request(period_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_parameter_names_its_field() {
        ControllerConfig::default().validate().unwrap();
        let d = ControllerConfig::default;
        let cases = [
            (
                ControllerConfig {
                    period_min_ns: 0,
                    ..d()
                },
                "period_min_ns",
            ),
            (
                ControllerConfig {
                    period_max_ns: 1,
                    ..d()
                },
                "period_max_ns",
            ),
            (
                ControllerConfig {
                    max_bandwidth: 1.5,
                    ..d()
                },
                "max_bandwidth",
            ),
            (
                ControllerConfig {
                    min_bandwidth: 0.95,
                    ..d()
                },
                "min_bandwidth",
            ),
            (
                ControllerConfig {
                    percentile: 0.0,
                    ..d()
                },
                "percentile",
            ),
            (ControllerConfig { window: 0, ..d() }, "window"),
            (
                ControllerConfig {
                    spread: f64::NAN,
                    ..d()
                },
                "spread",
            ),
            (
                ControllerConfig {
                    sampling_ns: 100_000_000,
                    ..d()
                },
                "sampling_ns",
            ),
        ];
        for (cfg, field) in cases {
            let e = cfg.validate().unwrap_err();
            assert_eq!(e.field, field, "{e}");
            let text = e.to_string();
            assert!(text.starts_with(field) && text.contains("must"), "{text}");
        }
    }

    #[test]
    fn the_papers_example_takes_the_second_largest() {
        let mut w = PercentileWindow::new(16);
        for v in 1..=16 {
            w.push(v * 10);
        }
        assert_eq!(w.percentile(1.0), Some(160));
        assert_eq!(w.percentile(0.9375), Some(150));
        w.push(5); // drops 10
        assert_eq!(w.len(), 16);
        assert_eq!(w.percentile(1e-9), Some(5));
    }

    #[test]
    fn divisors() {
        assert_eq!(largest_divisor_at_most(120, 41), 40);
        assert_eq!(largest_divisor_at_most(120, 39), 30);
        assert_eq!(largest_divisor_at_most(97, 50), 1);
        assert_eq!(largest_divisor_at_most(12, 100), 12);
    }
}

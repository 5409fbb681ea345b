//! The optional bounds of an `adaptive` task as a user writes them (the plan's `adaptive` object,
//! docs/plan-format.md, and `ctl admit --class adaptive`, docs/control.md), and their mapping onto
//! [`ControllerConfig`] and [`AnalyserConfig`] with those types' own rules.
//!
//! | field | default | maps to | rule |
//! |---|---|---|---|
//! | `period_min_us` | 5,000 (one slot if longer) | `period_min_ns`; analyser `f_max_hz = 1e6/period_min_us` | `≥ slot_us` (a reservation period is at least one slot) |
//! | `period_max_us` | 500,000 | `period_max_ns`; analyser `f_min_hz = 1e6/period_max_us`, horizon `max(2 s, 2·period_max)` | `> period_min_us` (the analyser needs a frequency range of at least `2·δf`) |
//! | `max_bandwidth` | 0.9 | `max_bandwidth` | `(0, 1]` |
//! | `min_bandwidth` | 0 | `min_bandwidth` | `[0, max_bandwidth]` |
//! | `percentile` (p) | 0.9375 | `percentile` | `(0, 1]` |
//! | `window` (N) | 16 | `window` | `1..=4096` |
//! | `spread` (x) | 0.15 | `spread` | `[0, 10]` |
//! | `sampling_us` (S) | 1,000,000 | `sampling_ns` | `≥ period_max_us` |
//!
//! A value in µs above `u64::MAX / 1000` is refused (its ns would wrap).

use super::{AnalyserConfig, ControllerConfig, ParamError};
use crate::plan::strict;
use serde::{Deserialize, Serialize};

/// The bounds as written; every field optional (the defaults of [`ControllerConfig`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveBounds {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub period_min_us: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub period_max_us: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub max_bandwidth: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub min_bandwidth: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub percentile: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub window: Option<usize>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub spread: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub sampling_us: Option<u64>,
}

/// The field names of [`AdaptiveBounds`] (the schema/doc agreement test).
pub const FIELDS: &[&str] = &[
    "period_min_us",
    "period_max_us",
    "max_bandwidth",
    "min_bandwidth",
    "percentile",
    "window",
    "spread",
    "sampling_us",
];

/// The validated parameters of one adaptive task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdaptiveParams {
    pub controller: ControllerConfig,
    pub analyser: AnalyserConfig,
}

/// The shortest analyser horizon H, ns (the analyser's default).
const MIN_HORIZON_NS: u64 = 2_000_000_000;

impl AdaptiveBounds {
    /// The parameters, for slots of `slot_us` µs (`None`: unknown, the one-slot rule is not
    /// checked). The error's `field` is the name in [`FIELDS`], its value as written.
    pub fn params(&self, slot_us: Option<u64>) -> Result<AdaptiveParams, ParamError> {
        let d = ControllerConfig::default();
        let ns = |field: &'static str, v: Option<u64>, default: u64| match v {
            None => Ok(default),
            Some(us) => us.checked_mul(1000).ok_or_else(|| {
                ParamError::new(field, us, format!("must be at most {} µs", u64::MAX / 1000))
            }),
        };
        // absent: the controller's default, at least one slot
        let min_default = d
            .period_min_ns
            .max(slot_us.unwrap_or(0).saturating_mul(1000));
        let controller = ControllerConfig {
            period_min_ns: ns("period_min_us", self.period_min_us, min_default)?,
            period_max_ns: ns("period_max_us", self.period_max_us, d.period_max_ns)?,
            max_bandwidth: self.max_bandwidth.unwrap_or(d.max_bandwidth),
            min_bandwidth: self.min_bandwidth.unwrap_or(d.min_bandwidth),
            percentile: self.percentile.unwrap_or(d.percentile),
            window: self.window.unwrap_or(d.window),
            spread: self.spread.unwrap_or(d.spread),
            sampling_ns: ns("sampling_us", self.sampling_us, d.sampling_ns)?,
        };
        controller.validate().map_err(|e| ParamError {
            field: written_name(e.field),
            value: written_value(e.field, &e.value),
            rule: written_rule(&e.rule),
        })?;
        if let Some(slot) = slot_us {
            if controller.period_min_ns < slot.saturating_mul(1000) {
                return Err(ParamError::new(
                    "period_min_us",
                    controller.period_min_ns / 1000,
                    format!("must be at least slot_us ({slot}): a reservation period is at least one slot"),
                ));
            }
        }
        if controller.period_max_ns == controller.period_min_ns {
            return Err(ParamError::new(
                "period_max_us",
                controller.period_max_ns / 1000,
                "must be above period_min_us: the period analyser searches a range of periods",
            ));
        }
        let analyser = AnalyserConfig {
            horizon_ns: MIN_HORIZON_NS.max(controller.period_max_ns.saturating_mul(2)),
            ..AnalyserConfig::for_periods(controller.period_min_ns, controller.period_max_ns)
        };
        analyser.validate().map_err(|e| {
            ParamError::new(
                "period_max_us",
                controller.period_max_ns / 1000,
                format!(
                    "with period_min_us = {}, the period analyser's {e}",
                    controller.period_min_ns / 1000
                ),
            )
        })?;
        Ok(AdaptiveParams {
            controller,
            analyser,
        })
    }
}

/// The written name of a [`ControllerConfig`] field.
fn written_name(field: &'static str) -> &'static str {
    match field {
        "period_min_ns" => "period_min_us",
        "period_max_ns" => "period_max_us",
        "sampling_ns" => "sampling_us",
        other => other,
    }
}

/// A value of a `_ns` field in µs (they came from µs, so exact).
fn written_value(field: &str, value: &str) -> String {
    match (field.ends_with("_ns"), value.parse::<u64>()) {
        (true, Ok(ns)) => (ns / 1000).to_string(),
        _ => value.to_string(),
    }
}

/// A rule's text with the written names; `(N)` values of ns fields in µs.
fn written_rule(rule: &str) -> String {
    let mut out = rule.to_string();
    for f in ["period_min_ns", "period_max_ns"] {
        let Some(at) = out.find(&format!("{f} (")) else {
            out = out.replace(f, written_name(f));
            continue;
        };
        let open = at + f.len() + 2;
        let close = out[open..].find(')').map(|i| open + i);
        if let Some(close) = close {
            if let Ok(ns) = out[open..close].parse::<u64>() {
                out.replace_range(open..close, &(ns / 1000).to_string());
            }
        }
        out = out.replace(f, written_name(f));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(b: AdaptiveBounds, slot: Option<u64>) -> String {
        b.params(slot).unwrap_err().to_string()
    }

    #[test]
    fn defaults_are_the_controllers_and_the_horizon_covers_two_longest_periods() {
        let p = AdaptiveBounds::default().params(Some(1000)).unwrap();
        assert_eq!(p.controller, ControllerConfig::default());
        // slots longer than the default shortest period: one slot
        let long = AdaptiveBounds::default().params(Some(10_000)).unwrap();
        assert_eq!(long.controller.period_min_ns, 10_000_000);
        assert_eq!(p.analyser.f_min_hz, 2.0);
        assert_eq!(p.analyser.f_max_hz, 200.0);
        assert_eq!(p.analyser.horizon_ns, 2_000_000_000);
        let b = AdaptiveBounds {
            period_max_us: Some(2_000_000),
            sampling_us: Some(4_000_000),
            ..Default::default()
        };
        let p = b.params(None).unwrap();
        assert_eq!(p.analyser.horizon_ns, 4_000_000_000);
        assert_eq!(p.analyser.f_min_hz, 0.5);
        assert_eq!(p.controller.sampling_ns, 4_000_000_000);
    }

    #[test]
    fn every_rule_names_the_written_field_and_value() {
        let cases: Vec<(AdaptiveBounds, &str)> = vec![
            (
                AdaptiveBounds {
                    period_min_us: Some(0),
                    ..Default::default()
                },
                "period_min_us = 0: must be > 0",
            ),
            (
                AdaptiveBounds {
                    period_min_us: Some(40_000),
                    period_max_us: Some(30_000),
                    ..Default::default()
                },
                "period_max_us = 30000: must be at least period_min_us (40000)",
            ),
            (
                AdaptiveBounds {
                    max_bandwidth: Some(1.5),
                    ..Default::default()
                },
                "max_bandwidth = 1.5: must be in (0, 1]",
            ),
            (
                AdaptiveBounds {
                    spread: Some(-0.1),
                    ..Default::default()
                },
                "spread = -0.1: must be in [0, 10]",
            ),
            (
                AdaptiveBounds {
                    window: Some(0),
                    ..Default::default()
                },
                "window = 0: must be in 1..=4096",
            ),
            (
                AdaptiveBounds {
                    sampling_us: Some(100_000),
                    ..Default::default()
                },
                "sampling_us = 100000: must be at least period_max_us (500000)",
            ),
            (
                AdaptiveBounds {
                    period_min_us: Some(1_000),
                    ..Default::default()
                },
                "period_min_us = 1000: must be at least slot_us (2000)",
            ),
            (
                AdaptiveBounds {
                    period_min_us: Some(40_000),
                    period_max_us: Some(40_000),
                    ..Default::default()
                },
                "period_max_us = 40000: must be above period_min_us",
            ),
            (
                AdaptiveBounds {
                    period_min_us: Some(40_000),
                    period_max_us: Some(40_001),
                    ..Default::default()
                },
                "period_max_us = 40001: with period_min_us = 40000, the period analyser's df_hz",
            ),
            (
                AdaptiveBounds {
                    sampling_us: Some(u64::MAX),
                    ..Default::default()
                },
                "sampling_us = 18446744073709551615: must be at most",
            ),
        ];
        for (b, want) in cases {
            let got = err(b.clone(), Some(2000));
            assert!(got.starts_with(want), "{b:?}: {got}");
        }
    }
}

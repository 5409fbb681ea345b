//! Frequency residency: how long each CPU spent at each frequency.
//!
//! Filled from simulated or kernel per-slot records ([`crate::trace::SlotRecord`]), or by the
//! loader from the frequencies it set; reported in `scx_tt` stats and exit summaries.

use std::collections::BTreeMap;
use std::fmt;

/// Seconds spent at each frequency (MHz), for one CPU or summed over several.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FreqResidency {
    by_mhz: BTreeMap<u32, f64>,
}

impl FreqResidency {
    pub fn new() -> Self {
        Self::default()
    }

    /// Account `seconds` at `mhz`.
    pub fn add(&mut self, mhz: u32, seconds: f64) {
        *self.by_mhz.entry(mhz).or_insert(0.0) += seconds;
    }

    /// Add every entry of `other` (e.g. to sum CPUs).
    pub fn merge(&mut self, other: &FreqResidency) {
        for (&mhz, &s) in &other.by_mhz {
            self.add(mhz, s);
        }
    }

    pub fn total_s(&self) -> f64 {
        self.by_mhz.values().sum()
    }

    /// Seconds at `mhz` (0 when never seen).
    pub fn seconds_at(&self, mhz: u32) -> f64 {
        self.by_mhz.get(&mhz).copied().unwrap_or(0.0)
    }

    /// `(mhz, fraction of the total)` by ascending frequency; empty when nothing was recorded.
    pub fn fractions(&self) -> Vec<(u32, f64)> {
        let total = self.total_s();
        if total <= 0.0 {
            return Vec::new();
        }
        self.by_mhz.iter().map(|(&m, &s)| (m, s / total)).collect()
    }

    /// Time-weighted mean frequency, MHz (0 when empty).
    pub fn mean_mhz(&self) -> f64 {
        let total = self.total_s();
        if total <= 0.0 {
            return 0.0;
        }
        self.by_mhz
            .iter()
            .map(|(&m, &s)| f64::from(m) * s)
            .sum::<f64>()
            / total
    }
}

/// One line, e.g. `1000MHz 62.5% 2300MHz 37.5%`.
impl fmt::Display for FreqResidency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (mhz, frac) in self.fractions() {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{mhz}MHz {:.1}%", frac * 100.0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_and_mean_are_time_weighted() {
        let mut r = FreqResidency::new();
        r.add(1000, 3.0);
        r.add(2000, 1.0);
        r.add(1000, 1.0);
        // 4 s at 1000, 1 s at 2000: mean = (4000 + 2000) / 5 = 1200 MHz.
        assert_eq!(r.fractions(), vec![(1000, 0.8), (2000, 0.2)]);
        assert!((r.mean_mhz() - 1200.0).abs() < 1e-9);
        assert_eq!(r.to_string(), "1000MHz 80.0% 2000MHz 20.0%");
    }

    #[test]
    fn empty_residency_has_no_fractions() {
        let r = FreqResidency::new();
        assert!(r.fractions().is_empty());
        assert_eq!(r.mean_mhz(), 0.0);
    }
}

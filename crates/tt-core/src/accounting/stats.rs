//! Lateness distribution: exact min/max and histogram, quantiles from a bounded sample.

use super::{HistBucket, Quantiles};

/// Upper bounds of the lateness histogram buckets, ns (a last bucket catches the rest).
pub const LATE_BUCKETS_NS: [u64; 14] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000, 20_000_000,
];

/// Samples kept for quantiles; runs with more ticks per CPU use a uniform reservoir sample.
pub const RESERVOIR: usize = 1 << 16;

#[derive(Clone, Debug, Default)]
pub struct LatenessStats {
    count: u64,
    min: Option<i64>,
    max: Option<i64>,
    buckets: [u64; LATE_BUCKETS_NS.len() + 1],
    sample: Vec<i64>,
    rng: u64,
}

impl LatenessStats {
    pub fn add(&mut self, late_ns: i64) {
        self.count += 1;
        self.min = Some(self.min.map_or(late_ns, |m| m.min(late_ns)));
        self.max = Some(self.max.map_or(late_ns, |m| m.max(late_ns)));
        let v = late_ns.max(0) as u64;
        let b = LATE_BUCKETS_NS
            .iter()
            .position(|&le| v <= le)
            .unwrap_or(LATE_BUCKETS_NS.len());
        self.buckets[b] += 1;
        if self.sample.len() < RESERVOIR {
            self.sample.push(late_ns);
        } else {
            // Algorithm R with a fixed-seed xorshift: deterministic for a given stream.
            self.rng = if self.rng == 0 {
                0x9e37_79b9_7f4a_7c15
            } else {
                self.rng
            };
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let j = self.rng % self.count;
            if (j as usize) < RESERVOIR {
                self.sample[j as usize] = late_ns;
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// min/p50/p99/max (nearest rank); all zero without samples.
    pub fn quantiles(&self) -> Quantiles {
        let (Some(min), Some(max)) = (self.min, self.max) else {
            return Quantiles::default();
        };
        let mut s = self.sample.clone();
        s.sort_unstable();
        let rank = |p: f64| s[((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
        Quantiles {
            min,
            p50: rank(0.50),
            p99: rank(0.99),
            max,
        }
    }

    pub fn histogram(&self) -> Vec<HistBucket> {
        LATE_BUCKETS_NS
            .iter()
            .map(|&le| Some(le))
            .chain(std::iter::once(None))
            .zip(self.buckets)
            .map(|(le_ns, count)| HistBucket { le_ns, count })
            .collect()
    }
}

//! Which CPUs `Planner::step` visits in a slot: those whose quiet run ends at or before it.
//!
//! # Problem
//! With quiet runs most CPUs are not due in most slots (at 256 CPUs × 100 jobs, none in 8 slots
//! of 10). Finding the due ones by scanning every CPU's run end costs ~1.3 ns per CPU per slot:
//! 0.33 µs of a 0.35 µs slot at 256 CPUs, about a tenth of the mean step.
//!
//! # Algorithm (a timing wheel of bit sets)
//! `WHEEL` buckets, one per slot modulo `WHEEL`, each a bit set of the CPUs (in CPU order, so the
//! due CPUs come out in the order the scan gave them). A CPU whose run ends at `until` is marked
//! in the bucket of `min(until, now + WHEEL − 1)`: a run that ends further away gets a
//! placeholder, moved on when its bucket comes round. Taking slot `s`'s bucket clears it and
//! yields each marked CPU whose run ends at or before `s`; a marked CPU whose run ends later (a
//! placeholder, or a mark left from a run that changed since) is marked again by the same rule.
//!
//! Invariant: a CPU whose run ends at `u` is marked in the bucket of `min(u, s + WHEEL − 1)` for
//! the next slot `s` to be taken once `u > s`, and in `s`'s own bucket once `u ≤ s`. Marking is
//! idempotent and extra marks are filtered by the run end, so the set yielded for `s` is exactly
//! `{ i : until(i) ≤ s }`, the scan's (tested against the scan below).

/// Slots the wheel spans (buckets).
const WHEEL: u64 = 64;

#[derive(Clone, Debug, Default)]
pub(crate) struct DueWheel {
    /// 64-bit words per bucket.
    words: usize,
    /// `WHEEL` buckets of `words` words each.
    bits: Vec<u64>,
}

impl DueWheel {
    /// A wheel for `cpus` CPUs, all of them due at slot `now`.
    pub(crate) fn new(cpus: usize, now: u64) -> Self {
        let words = cpus.div_ceil(64);
        let mut w = DueWheel {
            words,
            bits: vec![0; words * WHEEL as usize],
        };
        w.mark_all(cpus, now);
        w
    }

    fn bucket(&mut self, slot: u64) -> &mut [u64] {
        let b = (slot % WHEEL) as usize * self.words;
        &mut self.bits[b..b + self.words]
    }

    /// Marks CPU `i`, whose run ends at `until`, in the bucket of `max(until, now)` or, for a run
    /// ending further away, a placeholder at `now + WHEEL − 1`. `now`: a slot whose bucket has
    /// not been taken yet (the next `take`), or one whose bucket is taken already (or being
    /// taken, if `until > now`).
    #[inline]
    pub(crate) fn mark(&mut self, i: usize, until: u64, now: u64) {
        let at = until.max(now).min(now.saturating_add(WHEEL - 1));
        self.bucket(at)[i / 64] |= 1 << (i % 64);
    }

    /// Marks the first `cpus` CPUs due at slot `now`.
    pub(crate) fn mark_all(&mut self, cpus: usize, now: u64) {
        let b = self.bucket(now);
        for (k, w) in b.iter_mut().enumerate() {
            let bits = cpus.saturating_sub(k * 64).min(64);
            *w = match bits {
                64 => u64::MAX,
                n => (1u64 << n) - 1,
            };
        }
    }

    /// Takes slot `slot`'s bucket: appends to `due`, in CPU order, every CPU marked there whose
    /// run ends at or before `slot` (`until(i)`), and marks the others again for their run end.
    #[inline]
    pub(crate) fn take(&mut self, slot: u64, until: impl Fn(usize) -> u64, due: &mut Vec<u32>) {
        let base = (slot % WHEEL) as usize * self.words;
        for k in 0..self.words {
            let mut w = std::mem::take(&mut self.bits[base + k]);
            while w != 0 {
                let i = k * 64 + w.trailing_zeros() as usize;
                w &= w - 1;
                let u = until(i);
                if u <= slot {
                    due.push(i as u32);
                } else {
                    // `u > slot`: a bucket of `slot + 1 ..= slot + WHEEL - 1`, not this one
                    self.mark(i, u, slot);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wheel against the scan it replaces, over random run ends (near, far, beyond the
    /// wheel, and runs cut short between slots as `Planner::touch` does).
    #[test]
    fn the_wheel_yields_what_the_scan_of_every_run_end_yields() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for cpus in [1usize, 5, 64, 65, 130, 256] {
            let mut until = vec![0u64; cpus];
            let mut w = DueWheel::new(cpus, 0);
            let mut due = Vec::new();
            let mut visited = 0;
            for slot in 0..2_000u64 {
                // between steps: some runs end now (touch)
                if rnd(4) == 0 {
                    let i = rnd(cpus as u64) as usize;
                    until[i] = 0;
                    w.mark(i, 0, slot);
                }
                due.clear();
                w.take(slot, |i| until[i], &mut due);
                let want: Vec<u32> = (0..cpus as u32)
                    .filter(|&i| until[i as usize] <= slot)
                    .collect();
                assert_eq!(due, want, "{cpus} CPUs, slot {slot}");
                visited += due.len();
                for &i in &due {
                    let len = match rnd(3) {
                        0 => 1 + rnd(3),
                        1 => 1 + rnd(WHEEL),
                        _ => 1 + rnd(5 * WHEEL),
                    };
                    until[i as usize] = slot + len;
                    w.mark(i as usize, slot + len, slot + 1);
                }
            }
            assert!(visited > 500, "{cpus} CPUs: only {visited} visits");
        }
    }

    #[test]
    fn mark_all_marks_exactly_the_cpus() {
        for cpus in [1usize, 63, 64, 65, 128, 200] {
            let mut w = DueWheel::new(cpus, 7);
            let mut due = Vec::new();
            w.take(7, |_| 0, &mut due);
            assert_eq!(due, (0..cpus as u32).collect::<Vec<_>>());
            due.clear();
            w.take(7 + WHEEL, |_| 0, &mut due);
            assert!(due.is_empty(), "{cpus}: the bucket was not cleared");
        }
    }
}

//! DEmOS's budget jitter generator: `std::mt19937` seeded with `DEMOS_RAND_SEED`, drawn through
//! libstdc++'s `std::uniform_int_distribution<long>` over `[-(jitter/2), jitter - jitter/2]`.
//!
//! Mersenne Twister MT19937 (Matsumoto and Nishimura, 1998) is written here from its published
//! definition; the distribution is libstdc++'s "downscaling" method for a range smaller than
//! the generator's: `scaling = 0xffffffff / (range + 1)`, draws at or above
//! `(range + 1) · scaling` are rejected, the result is `low + draw / scaling`. (libstdc++ 11+
//! uses Lemire's multiply-and-shift for 32-bit generators instead; both give the same
//! sequence for DEmOS's golden jitter test, which `tests/demos_golden.rs` reproduces.) Every
//! draw consumes at least one number, even for a jitter of 0, as libstdc++ does.

const N: usize = 624;
const M: usize = 397;

/// MT19937, 32-bit.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; N],
    index: usize,
}

impl Mt19937 {
    /// `std::mt19937`'s default seed.
    pub const DEFAULT_SEED: u32 = 5489;

    pub fn new(seed: u32) -> Self {
        let mut state = [0u32; N];
        state[0] = seed;
        for i in 1..N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: N }
    }

    fn twist(&mut self) {
        for i in 0..N {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % N] & 0x7fff_ffff);
            let mut v = self.state[(i + M) % N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// Uniform in `low..=high` (libstdc++'s downscaling; `high - low < 2^32 - 1`).
    pub fn uniform(&mut self, low: i64, high: i64) -> i64 {
        debug_assert!(low <= high);
        let range = (high - low) as u64;
        let buckets = range + 1;
        let scaling = u64::from(u32::MAX) / buckets;
        let past = buckets * scaling;
        loop {
            let r = u64::from(self.next_u32());
            if r < past {
                return low + (r / scaling) as i64;
            }
        }
    }

    /// The budget of one activation: `budget + uniform(-(jitter/2), jitter - jitter/2)`.
    pub fn jittered(&mut self, budget: u64, jitter: u64) -> u64 {
        let half = (jitter / 2) as i64;
        let d = self.uniform(-half, jitter as i64 - half);
        (budget as i64 + d).max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_the_reference_outputs() {
        // the C++ standard requires the 10000th output of a default-seeded mt19937
        let mut g = Mt19937::new(Mt19937::DEFAULT_SEED);
        assert_eq!(g.next_u32(), 3_499_211_612);
        let mut g = Mt19937::new(Mt19937::DEFAULT_SEED);
        let mut last = 0;
        for _ in 0..10_000 {
            last = g.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
    }

    #[test]
    fn uniform_stays_in_range_and_always_draws() {
        let mut g = Mt19937::new(2);
        let draws: Vec<i64> = (0..6).map(|_| g.uniform(-1, 1)).collect();
        // DEmOS's "maximum jitter" test: budget 1, jitter 2, seed 2 gives 1, 0, 0, 2, 1, 2
        assert_eq!(draws, [0, -1, -1, 1, 0, 1]);
        let mut a = Mt19937::new(7);
        let mut b = Mt19937::new(7);
        a.uniform(0, 0);
        b.next_u32();
        assert_eq!(a.next_u32(), b.next_u32());
    }
}

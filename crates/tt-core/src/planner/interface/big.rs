//! Big integers (only what the hyperperiod and U_W·H need) and the gcd.

use std::cmp::Ordering;

/// A non-negative integer of any size: 64-bit limbs, least significant first, no leading zero
/// limb (so equal values have equal limbs). Only what the hyperperiod and U_W·H need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Big(pub(super) Vec<u64>);

impl Big {
    pub(super) fn from(v: u64) -> Big {
        Big(if v == 0 { Vec::new() } else { vec![v] })
    }

    pub(super) fn mul_small(&self, m: u64) -> Big {
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
    pub(super) fn div_small(&self, d: u64) -> Big {
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
    pub(super) fn rem_small(&self, d: u64) -> u64 {
        self.0.iter().rev().fold(0u128, |rem, &limb| {
            (rem << 64 | u128::from(limb)) % u128::from(d)
        }) as u64
    }

    pub(super) fn add(&self, other: &Big) -> Big {
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

    pub(super) fn to_u64(&self) -> Option<u64> {
        match self.0.len() {
            0 => Some(0),
            1 => Some(self.0[0]),
            _ => None,
        }
    }

    pub(super) fn trimmed(mut limbs: Vec<u64>) -> Big {
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

pub(super) fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

//! DEmOS CPU lists: `cpu: 1`, `cpu: 0-2`, `cpu: 0,2,5-7`, `cpu: 0-6:2` (a stride), or `all`.
//!
//! DEmOS keeps CPU sets of `MAX_CPUS` = 64 bits (its default build option) and silently drops
//! CPU numbers that do not fit; [`CpuSet`] does the same. Formatting follows the schedule log:
//! a single CPU `3`, two adjacent CPUs `0,1`, three or more adjacent CPUs `0-2`.

use std::fmt;

/// CPU numbers DEmOS can represent (its `max_cpus` build option, default 64).
pub const MAX_CPUS: u32 = 64;

/// A set of CPU numbers below [`MAX_CPUS`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuSet(pub u64);

impl CpuSet {
    pub const EMPTY: CpuSet = CpuSet(0);

    /// The CPUs `0..n` (at most [`MAX_CPUS`]).
    pub fn first_n(n: u32) -> CpuSet {
        if n >= MAX_CPUS {
            CpuSet(u64::MAX)
        } else {
            CpuSet((1u64 << n) - 1)
        }
    }

    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> CpuSet {
        let mut s = CpuSet::EMPTY;
        for c in cpus {
            s.insert(c);
        }
        s
    }

    /// Adds `cpu`; a CPU at or above [`MAX_CPUS`] is dropped, as DEmOS does.
    pub fn insert(&mut self, cpu: u32) {
        if cpu < MAX_CPUS {
            self.0 |= 1u64 << cpu;
        }
    }

    pub fn contains(self, cpu: u32) -> bool {
        cpu < MAX_CPUS && self.0 & (1u64 << cpu) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn count(self) -> u32 {
        self.0.count_ones()
    }

    pub fn lowest(self) -> Option<u32> {
        (!self.is_empty()).then(|| self.0.trailing_zeros())
    }

    pub fn intersects(self, other: CpuSet) -> bool {
        self.0 & other.0 != 0
    }

    pub fn and(self, other: CpuSet) -> CpuSet {
        CpuSet(self.0 & other.0)
    }

    pub fn or(self, other: CpuSet) -> CpuSet {
        CpuSet(self.0 | other.0)
    }

    pub fn iter(self) -> impl Iterator<Item = u32> {
        (0..MAX_CPUS).filter(move |&c| self.contains(c))
    }

    /// Parses a CPU list (not `all`). Every comma-separated item is `N`, `N-M` or `N-M:S` with
    /// `N <= M` and `S >= 1`; anything else is an error (DEmOS: "Could not parse cpulist").
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let bad = || format!("Could not parse cpulist: {text}");
        let num = |s: &str| -> Result<u32, String> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            s.parse::<u32>().map_err(|_| bad())
        };
        let mut set = CpuSet::EMPTY;
        for item in text.split(',') {
            let (range, stride) = match item.split_once(':') {
                Some((r, s)) => (r, num(s)?),
                None => (item, 1),
            };
            let (a, b) = match range.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None if item.contains(':') => return Err(bad()),
                None => {
                    let a = num(range)?;
                    (a, a)
                }
            };
            if stride == 0 || a > b {
                return Err(bad());
            }
            let mut c = a;
            while c <= b && c < MAX_CPUS {
                set.insert(c);
                c = match c.checked_add(stride) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
        Ok(set)
    }
}

impl fmt::Display for CpuSet {
    /// The schedule log's form: `0`, `0,1`, `0-2`, `0,2,5-7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut c = 0;
        while c < MAX_CPUS {
            if !self.contains(c) {
                c += 1;
                continue;
            }
            let mut end = c;
            while end + 1 < MAX_CPUS && self.contains(end + 1) {
                end += 1;
            }
            match end - c {
                0 => parts.push(format!("{c}")),
                1 => parts.push(format!("{c},{end}")),
                _ => parts.push(format!("{c}-{end}")),
            }
            c = end + 1;
        }
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_ranges_and_strides() {
        assert_eq!(CpuSet::parse("1").unwrap(), CpuSet(0b10));
        assert_eq!(CpuSet::parse("0-2").unwrap(), CpuSet(0b111));
        assert_eq!(CpuSet::parse("0,2,5-7").unwrap(), CpuSet(0b1110_0101));
        assert_eq!(CpuSet::parse("0-6:2").unwrap(), CpuSet(0b101_0101));
        // beyond MAX_CPUS: dropped, as DEmOS does
        assert_eq!(CpuSet::parse("63-100").unwrap(), CpuSet(1 << 63));
        for bad in [
            "", "x", "1-", "-1", "2-1", "1,,2", " 1", "1x", "0-4:0", "1:2", "a-b",
        ] {
            let e = CpuSet::parse(bad).unwrap_err();
            assert_eq!(e, format!("Could not parse cpulist: {bad}"));
        }
    }

    #[test]
    fn formats_like_the_schedule_log() {
        assert_eq!(CpuSet::parse("0").unwrap().to_string(), "0");
        assert_eq!(CpuSet::parse("0-1").unwrap().to_string(), "0,1");
        assert_eq!(CpuSet::parse("0-2").unwrap().to_string(), "0-2");
        assert_eq!(
            CpuSet::parse("0,2,5-7,9,10").unwrap().to_string(),
            "0,2,5-7,9,10"
        );
        assert_eq!(CpuSet::EMPTY.to_string(), "");
        assert_eq!(CpuSet::first_n(64).count(), 64);
        assert_eq!(CpuSet::first_n(4).to_string(), "0-3");
    }
}

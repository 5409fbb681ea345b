//! cpufreq: discover policies, take them over with the `userspace` governor, and set per-slot
//! frequencies so that a job never runs slower than planned.
//!
//! # Terminology
//! - *policy*: `/sys/devices/system/cpu/cpufreq/policyN`, one frequency for all its
//!   `affected_cpus` (online) out of `related_cpus` (all). On most x86 servers one CPU per policy;
//!   on big.LITTLE parts one policy per cluster.
//! - *frequencies*: `scaling_available_frequencies` (kHz) when the driver lists them
//!   (acpi-cpufreq, cpufreq-dt, scmi), else the range `cpuinfo_min_freq..=cpuinfo_max_freq`
//!   (intel_cpufreq, cppc_cpufreq, amd-pstate passive), where the driver rounds the request.
//!
//! # Algorithm
//! ```text
//! take_control(root):
//!   if intel_pstate/status == active: write passive (its active mode has no userspace governor)
//!   if amd_pstate/status   == active: write passive (same for amd-pstate-epp)
//!   for each policyN: "userspace" must be in scaling_available_governors, else error
//!     scaling_max_freq := cpuinfo_max_freq; scaling_min_freq := cpuinfo_min_freq
//!     scaling_governor := userspace                     (all three journaled, restored on exit)
//! khz_for(policy, f):   want = f · max_khz;  list: lowest ≥ want (max if none);  range: ⌈want⌉
//! plan(requests for the next slot, current kHz per policy):
//!   target(policy) = max over its affected CPUs with a request of khz_for(policy, f)
//!   raise = policies with target > current; lower = policies with target < current
//! per slot boundary:  before it: write raise;  after it starts: write lower
//! ```
//!
//! # Properties
//! 1. (Shared max) A policy is set to the highest frequency any of its requesting CPUs needs.
//! 2. (Never slower) Raises are written before the boundary and lowers after it, so the job of
//!    the ending slot is never slowed and the job of the starting slot never starts slow.
//! 3. (Restore) Governors, limits and driver modes are restored through the
//!    [`Journal`](super::sysfs::Journal) on every exit path; `scaling_setspeed` is not journaled
//!    (it only means something under `userspace`).
//!
//! Other drivers: with `schedutil` (no userspace governor, e.g. Android kernels) use the BPF
//! `scx_bpf_cpuperf_set()` path instead ([`super::perf`]); the test VM has no cpufreq at all,
//! which [`discover`] reports as [`CpufreqError::NoCpufreq`] so the caller can run without DVFS.

use super::sysfs_error::SysfsError;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CpufreqError {
    #[error("no cpufreq policies under {0} (no cpufreq driver: run without DVFS)")]
    NoCpufreq(PathBuf),
    #[error(transparent)]
    Sysfs(#[from] SysfsError),
    #[error("cpufreq policy{policy}: governor \"userspace\" unavailable (available: {available}); enable CONFIG_CPU_FREQ_GOV_USERSPACE or use the cpuperf path")]
    NoUserspaceGovernor { policy: u32, available: String },
    #[error("cpufreq: no policy{0}")]
    UnknownPolicy(u32),
}

/// Frequencies a policy can be set to, kHz.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frequencies {
    /// Ascending, deduplicated.
    List(Vec<u32>),
    Range {
        min: u32,
        max: u32,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub id: u32,
    pub affected_cpus: Vec<u32>,
    pub related_cpus: Vec<u32>,
    pub freqs: Frequencies,
    pub driver: String,
    pub governors: Vec<String>,
}

impl Policy {
    pub fn max_khz(&self) -> u32 {
        match &self.freqs {
            Frequencies::List(l) => l.last().copied().unwrap_or(0),
            Frequencies::Range { max, .. } => *max,
        }
    }

    pub fn min_khz(&self) -> u32 {
        match &self.freqs {
            Frequencies::List(l) => l.first().copied().unwrap_or(0),
            Frequencies::Range { min, .. } => *min,
        }
    }

    /// The lowest settable frequency ≥ `freq · max_khz` (normalised `freq`), kHz.
    pub fn khz_for(&self, freq: f64) -> u32 {
        let want = freq.clamp(0.0, 1.0) * f64::from(self.max_khz());
        match &self.freqs {
            // 1e-3 kHz of tolerance so that f = k / max maps back onto k.
            Frequencies::List(l) => l
                .iter()
                .copied()
                .find(|&k| f64::from(k) >= want - 1e-3)
                .unwrap_or(self.max_khz()),
            Frequencies::Range { min, max } => {
                ((want - 1e-3).ceil().max(0.0) as u32).clamp(*min, *max)
            }
        }
    }
}

/// Parse a kernel CPU list: `"0 1 2"` (cpufreq) or `"0-3,8"` (cpulist).
pub fn parse_cpus(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.split(|c: char| c == ',' || c.is_whitespace()) {
        if part.is_empty() {
            continue;
        }
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// Sets policy frequencies. Implemented by [`SysfsCpufreq`] and [`FakeCpufreq`].
pub trait CpufreqBackend {
    fn policies(&self) -> &[Policy];
    fn set_khz(&mut self, policy: u32, khz: u32) -> Result<(), CpufreqError>;
}

/// A backend that records `(policy, kHz)` calls instead of writing.
#[derive(Clone, Debug, Default)]
pub struct FakeCpufreq {
    pub policies: Vec<Policy>,
    pub calls: Vec<(u32, u32)>,
}

impl CpufreqBackend for FakeCpufreq {
    fn policies(&self) -> &[Policy] {
        &self.policies
    }

    fn set_khz(&mut self, policy: u32, khz: u32) -> Result<(), CpufreqError> {
        if !self.policies.iter().any(|p| p.id == policy) {
            return Err(CpufreqError::UnknownPolicy(policy));
        }
        self.calls.push((policy, khz));
        Ok(())
    }
}

/// Frequency changes for one slot boundary: `(policy id, kHz)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlotChange {
    /// Write before the boundary.
    pub raise: Vec<(u32, u32)>,
    /// Write after the boundary.
    pub lower: Vec<(u32, u32)>,
}

/// Pure: the changes that bring `current` (kHz per policy, `None` = unknown) to what `requests`
/// (`(cpu, normalised freq)` for the next slot) need. Policies without a requesting CPU are left
/// alone; a request for a CPU in no policy is ignored.
pub fn plan_slot(
    policies: &[Policy],
    current: &[Option<u32>],
    requests: &[(u32, f64)],
) -> SlotChange {
    let mut change = SlotChange::default();
    for (i, p) in policies.iter().enumerate() {
        let target = requests
            .iter()
            .filter(|(cpu, _)| p.affected_cpus.contains(cpu))
            .map(|&(_, f)| p.khz_for(f))
            .max();
        let Some(target) = target else { continue };
        match current.get(i).copied().flatten() {
            Some(cur) if cur == target => {}
            Some(cur) if cur > target => change.lower.push((p.id, target)),
            _ => change.raise.push((p.id, target)),
        }
    }
    change
}

/// One frequency write a [`FreqController`] made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreqWrite {
    pub policy: u32,
    pub khz: u32,
    /// A raise (written before its slot's boundary), else a lower (after it).
    pub raise: bool,
}

/// Applies per-slot frequency requests through a backend with raise-before / lower-after.
#[derive(Debug)]
pub struct FreqController<B: CpufreqBackend> {
    backend: B,
    current: Vec<Option<u32>>,
    pending_lower: Vec<(u32, u32)>,
}

impl<B: CpufreqBackend> FreqController<B> {
    pub fn new(backend: B) -> Self {
        let n = backend.policies().len();
        Self {
            backend,
            current: vec![None; n],
            pending_lower: Vec::new(),
        }
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    pub fn into_backend(self) -> B {
        self.backend
    }

    /// Current kHz of policy `id` as last written (`None` before the first write).
    pub fn current_khz(&self, id: u32) -> Option<u32> {
        let i = self.backend.policies().iter().position(|p| p.id == id)?;
        self.current[i]
    }

    fn set(&mut self, id: u32, khz: u32) -> Result<(), CpufreqError> {
        self.backend.set_khz(id, khz)?;
        if let Some(i) = self.backend.policies().iter().position(|p| p.id == id) {
            self.current[i] = Some(khz);
        }
        Ok(())
    }

    /// Call before the boundary of the next slot: writes the raises now and keeps the lowers
    /// for [`Self::after_boundary`]. Lowers still pending from the previous boundary (which has
    /// passed) are written first. Returns the writes made, in order.
    pub fn before_boundary(
        &mut self,
        requests: &[(u32, f64)],
    ) -> Result<Vec<FreqWrite>, CpufreqError> {
        let mut out = self.after_boundary()?;
        let change = plan_slot(self.backend.policies(), &self.current, requests);
        for (policy, khz) in change.raise {
            self.set(policy, khz)?;
            out.push(FreqWrite {
                policy,
                khz,
                raise: true,
            });
        }
        self.pending_lower = change.lower;
        Ok(out)
    }

    /// Call once the slot has started: writes the lowers planned by `before_boundary`.
    pub fn after_boundary(&mut self) -> Result<Vec<FreqWrite>, CpufreqError> {
        let mut out = Vec::new();
        for (policy, khz) in std::mem::take(&mut self.pending_lower) {
            self.set(policy, khz)?;
            out.push(FreqWrite {
                policy,
                khz,
                raise: false,
            });
        }
        Ok(out)
    }
}

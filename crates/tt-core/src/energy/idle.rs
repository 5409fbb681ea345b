//! Idle control for DPM: a per-CPU resume-latency limit, so deep idle states are allowed only
//! for idle periods long enough to pay off.
//!
//! # Mechanism
//! `/sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us` is a per-CPU device PM QoS
//! request that every cpuidle governor honours: only states with `exit latency ≤ limit` are
//! considered. Written values: `"0"` = no limit, `"n/a"` = no idle state with a non-zero exit
//! latency (polling only), `N` = `N` µs. The states themselves are read from
//! `/sys/devices/system/cpu/cpuN/cpuidle/stateK/{name,latency,residency}` (µs).
//!
//! # Algorithm
//! ```text
//! limit_for_period(states, idle_us):
//!   s = deepest state with residency ≤ idle_us (none: Poll)
//!   latency(s) == 0 ? Poll : Us(latency(s))
//! ```
//! The test VM has the `pm_qos_resume_latency_us` files but no cpuidle states: limits are still
//! written and restored; [`read_states`] returns an empty list.

use super::sysfs_error::SysfsError;

/// A cpuidle state as the kernel describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuidleState {
    pub index: u32,
    pub name: String,
    pub latency_us: u64,
    pub residency_us: u64,
}

/// A resume-latency limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyLimit {
    /// Any idle state (`"0"`).
    None,
    /// Only states with zero exit latency, i.e. polling (`"n/a"`).
    Poll,
    /// States with an exit latency of at most this many µs.
    Us(u64),
}

impl LatencyLimit {
    /// The text the kernel expects in `pm_qos_resume_latency_us`.
    pub fn sysfs_value(self) -> String {
        match self {
            LatencyLimit::None => "0".to_string(),
            LatencyLimit::Poll => "n/a".to_string(),
            LatencyLimit::Us(us) => us.max(1).to_string(),
        }
    }
}

/// The limit that allows the deepest state whose target residency fits `idle_us`.
pub fn limit_for_period(states: &[CpuidleState], idle_us: u64) -> LatencyLimit {
    match states
        .iter()
        .filter(|s| s.residency_us <= idle_us)
        .max_by_key(|s| s.residency_us)
    {
        None => LatencyLimit::Poll,
        Some(s) if s.latency_us == 0 => LatencyLimit::Poll,
        Some(s) => LatencyLimit::Us(s.latency_us),
    }
}

/// Sets per-CPU resume-latency limits. Implemented by [`PmQosIdle`] and [`FakeIdle`].
pub trait IdleBackend {
    fn set_limit(&mut self, cpu: u32, limit: LatencyLimit) -> Result<(), SysfsError>;
}

/// Records `(cpu, limit)` calls.
#[derive(Clone, Debug, Default)]
pub struct FakeIdle {
    pub calls: Vec<(u32, LatencyLimit)>,
}

impl IdleBackend for FakeIdle {
    fn set_limit(&mut self, cpu: u32, limit: LatencyLimit) -> Result<(), SysfsError> {
        self.calls.push((cpu, limit));
        Ok(())
    }
}

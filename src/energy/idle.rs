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

use super::sysfs::{Journal, Root, SysfsError};
use std::path::PathBuf;

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

fn cpu_dir(cpu: u32) -> PathBuf {
    PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}"))
}

fn qos_path(cpu: u32) -> PathBuf {
    cpu_dir(cpu).join("power/pm_qos_resume_latency_us")
}

/// The cpuidle states of `cpu`, sorted by index; empty when the CPU has no cpuidle directory.
pub fn read_states(root: &Root, cpu: u32) -> Result<Vec<CpuidleState>, SysfsError> {
    let dir = cpu_dir(cpu).join("cpuidle");
    let Ok(entries) = std::fs::read_dir(root.path(&dir)) else {
        return Ok(Vec::new());
    };
    let mut idx: Vec<u32> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("state")?.parse().ok())
        .collect();
    idx.sort();
    idx.into_iter()
        .map(|index| {
            let d = dir.join(format!("state{index}"));
            Ok(CpuidleState {
                index,
                name: root.read(d.join("name"))?,
                latency_us: root.read_u64(d.join("latency"))?,
                residency_us: root.read_u64(d.join("residency"))?,
            })
        })
        .collect()
}

/// Sets per-CPU resume-latency limits. Implemented by [`PmQosIdle`] and [`FakeIdle`].
pub trait IdleBackend {
    fn set_limit(&mut self, cpu: u32, limit: LatencyLimit) -> Result<(), SysfsError>;
}

/// The real backend; every CPU's original limit is restored on drop.
#[derive(Debug)]
pub struct PmQosIdle {
    journal: Journal,
    /// Last value written per CPU, to skip redundant writes.
    last: Vec<(u32, LatencyLimit)>,
}

impl PmQosIdle {
    /// Checks that every CPU in `cpus` has a readable limit file (clear error otherwise).
    pub fn new(root: Root, cpus: &[u32]) -> Result<Self, SysfsError> {
        for &cpu in cpus {
            root.read(qos_path(cpu))?;
        }
        Ok(Self {
            journal: Journal::new(root),
            last: Vec::new(),
        })
    }

    /// As [`Self::new`], through `journal` (a persistent one for a live run).
    pub fn with_journal(journal: Journal, cpus: &[u32]) -> Result<Self, SysfsError> {
        for &cpu in cpus {
            journal.root().read(qos_path(cpu))?;
        }
        Ok(Self {
            journal,
            last: Vec::new(),
        })
    }

    /// Restore now (also done on drop); returns the number of failures (each logged).
    pub fn restore(&mut self) -> usize {
        self.last.clear();
        self.journal.restore().len()
    }
}

impl IdleBackend for PmQosIdle {
    fn set_limit(&mut self, cpu: u32, limit: LatencyLimit) -> Result<(), SysfsError> {
        if self.last.iter().any(|&(c, l)| c == cpu && l == limit) {
            return Ok(());
        }
        self.journal.write(qos_path(cpu), &limit.sysfs_value())?;
        self.last.retain(|&(c, _)| c != cpu);
        self.last.push((cpu, limit));
        Ok(())
    }
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

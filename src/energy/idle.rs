//! pm_qos's sysfs side: reading a CPU's cpuidle states and [`PmQosIdle`], the backend that sets
//! `pm_qos_resume_latency_us` through a [`Journal`]. Which limit an idle period gets is pure:
//! `tt_core::energy::idle`, re-exported here.

pub use tt_core::energy::idle::*;

use super::sysfs::{Journal, Root, SysfsError};
use std::path::PathBuf;

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

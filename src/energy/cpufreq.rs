//! cpufreq's sysfs side: discovering the policies under a [`Root`], and [`SysfsCpufreq`], the
//! backend that takes them over with the `userspace` governor through a [`Journal`]. The
//! decisions (which frequency, when) and the [`CpufreqBackend`] trait are pure:
//! `tt_core::energy::cpufreq`, re-exported here.

pub use tt_core::energy::cpufreq::*;

use super::sysfs::{Journal, Root, SysfsError};
use std::path::{Path, PathBuf};

const CPUFREQ_DIR: &str = "/sys/devices/system/cpu/cpufreq";
const INTEL_PSTATE_STATUS: &str = "/sys/devices/system/cpu/intel_pstate/status";
const AMD_PSTATE_STATUS: &str = "/sys/devices/system/cpu/amd_pstate/status";

fn policy_dir(id: u32) -> PathBuf {
    Path::new(CPUFREQ_DIR).join(format!("policy{id}"))
}

/// The `status` file of a P-state driver in active mode (intel_pstate, amd-pstate), if any.
pub fn active_pstate_driver(root: &Root) -> Option<&'static str> {
    [INTEL_PSTATE_STATUS, AMD_PSTATE_STATUS]
        .into_iter()
        .find(|s| root.read(s).ok().as_deref() == Some("active"))
}

/// Read every `policyN` under `root`.
pub fn discover(root: &Root) -> Result<Vec<Policy>, CpufreqError> {
    let dir = root.path(CPUFREQ_DIR);
    let entries = std::fs::read_dir(&dir).map_err(|_| CpufreqError::NoCpufreq(dir.clone()))?;
    let mut ids: Vec<u32> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("policy")?.parse().ok())
        .collect();
    ids.sort();
    if ids.is_empty() {
        return Err(CpufreqError::NoCpufreq(dir));
    }
    ids.into_iter().map(|id| read_policy(root, id)).collect()
}

fn read_cpus(root: &Root, abs: &Path) -> Result<Vec<u32>, SysfsError> {
    let text = root.read(abs)?;
    parse_cpus(&text).ok_or(SysfsError::Parse {
        path: root.path(abs),
        text,
        what: "a CPU list",
    })
}

fn read_policy(root: &Root, id: u32) -> Result<Policy, CpufreqError> {
    let d = policy_dir(id);
    let list_path = d.join("scaling_available_frequencies");
    let freqs = match root.read(&list_path) {
        Ok(text) => {
            let mut l: Vec<u32> = text
                .split_whitespace()
                .map(|w| w.parse())
                .collect::<Result<_, _>>()
                .map_err(|_| SysfsError::Parse {
                    path: root.path(&list_path),
                    text: text.clone(),
                    what: "a list of kHz",
                })?;
            l.sort_unstable();
            l.dedup();
            if l.is_empty() {
                range(root, &d)?
            } else {
                Frequencies::List(l)
            }
        }
        Err(_) => range(root, &d)?,
    };
    Ok(Policy {
        id,
        affected_cpus: read_cpus(root, &d.join("affected_cpus"))?,
        related_cpus: read_cpus(root, &d.join("related_cpus"))?,
        freqs,
        driver: root.read(d.join("scaling_driver")).unwrap_or_default(),
        governors: root
            .read(d.join("scaling_available_governors"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    })
}

fn range(root: &Root, d: &Path) -> Result<Frequencies, SysfsError> {
    Ok(Frequencies::Range {
        min: root.read_u64(d.join("cpuinfo_min_freq"))? as u32,
        max: root.read_u64(d.join("cpuinfo_max_freq"))? as u32,
    })
}

/// The real backend: owns the policies under the `userspace` governor until dropped.
#[derive(Debug)]
pub struct SysfsCpufreq {
    journal: Journal,
    policies: Vec<Policy>,
}

impl SysfsCpufreq {
    /// Switch driver modes and every policy's governor (see the module doc); on error
    /// everything already changed is restored before returning (the journal is dropped).
    pub fn take_control(root: Root) -> Result<Self, CpufreqError> {
        Self::take_control_of(Journal::new(root), None)
    }

    /// As [`Self::take_control`], through `journal` (a persistent one for a live run), and only
    /// of the policies with an affected CPU in `cpus` (all when `None`): the others keep their
    /// governor. Each policy's `scaling_setspeed` is journaled with what it showed before the
    /// governor changed (restored before the governor: module doc of [`super::sysfs`]).
    pub fn take_control_of(
        mut journal: Journal,
        cpus: Option<&[u32]>,
    ) -> Result<Self, CpufreqError> {
        for status in [INTEL_PSTATE_STATUS, AMD_PSTATE_STATUS] {
            if journal.root().read(status).ok().as_deref() == Some("active") {
                journal.write(status, "passive")?;
            }
        }
        let mut policies = discover(journal.root())?;
        if let Some(cpus) = cpus {
            policies.retain(|p| p.affected_cpus.iter().any(|c| cpus.contains(c)));
        }
        for p in &policies {
            if !p.governors.iter().any(|g| g == "userspace") {
                return Err(CpufreqError::NoUserspaceGovernor {
                    policy: p.id,
                    available: p.governors.join(" "),
                });
            }
        }
        for p in &policies {
            let d = policy_dir(p.id);
            let (min, max) = cpuinfo_limits(journal.root(), &d, p)?;
            let setspeed = d.join("scaling_setspeed");
            let speed_before = journal.root().read_raw(&setspeed).ok();
            journal.write(d.join("scaling_max_freq"), &max.to_string())?;
            journal.write(d.join("scaling_min_freq"), &min.to_string())?;
            journal.write(d.join("scaling_governor"), "userspace")?;
            if let Some(text) = speed_before {
                journal.record(setspeed, text)?;
            }
        }
        Ok(Self { journal, policies })
    }

    /// The journal's file, when persistent.
    pub fn journal_file(&self) -> Option<&Path> {
        self.journal.file()
    }

    /// Restore everything now (also done on drop). Returns the number of files that could not
    /// be restored (each is logged).
    pub fn restore(&mut self) -> usize {
        self.journal.restore().len()
    }
}

fn cpuinfo_limits(root: &Root, d: &Path, p: &Policy) -> Result<(u32, u32), SysfsError> {
    let min = root.read_u64(d.join("cpuinfo_min_freq")).map(|v| v as u32);
    let max = root.read_u64(d.join("cpuinfo_max_freq")).map(|v| v as u32);
    Ok((min.unwrap_or(p.min_khz()), max.unwrap_or(p.max_khz())))
}

impl CpufreqBackend for SysfsCpufreq {
    fn policies(&self) -> &[Policy] {
        &self.policies
    }

    fn set_khz(&mut self, policy: u32, khz: u32) -> Result<(), CpufreqError> {
        if !self.policies.iter().any(|p| p.id == policy) {
            return Err(CpufreqError::UnknownPolicy(policy));
        }
        let path = policy_dir(policy).join("scaling_setspeed");
        Ok(self.journal.write_volatile(path, &khz.to_string())?)
    }
}

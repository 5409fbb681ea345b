//! Checks of the machine before loading: root, sched_ext present and free, plan CPUs online.
//! Reads sysfs from a redirectable root so the checks are tested on a fake tree.

use crate::resolve::parse_cpu_list;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SystemError {
    #[error("scx_tt must run as root (it loads a BPF scheduler)")]
    NotRoot,
    #[error(
        "this kernel has no sched_ext ({0} is missing): it needs CONFIG_SCHED_CLASS_EXT=y. \
         `make demo` boots a VM with such a kernel and runs scx_tt there"
    )]
    NoSchedExt(String),
    #[error("another sched_ext scheduler is attached: {0} (stop it first)")]
    OtherScheduler(String),
    #[error("sched_ext is busy (state {0}); try again when it reads `disabled`")]
    Busy(String),
    #[error("plan CPU {cpu} does not exist or is offline (online CPUs: {online})")]
    CpuMissing { cpu: u32, online: String },
}

#[derive(Clone, Debug)]
pub struct SysFs {
    pub root: PathBuf,
}

impl Default for SysFs {
    fn default() -> Self {
        SysFs {
            root: "/sys".into(),
        }
    }
}

impl SysFs {
    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// `/sys/kernel/sched_ext/state`: enabled, disabled, enabling, disabling...
    pub fn sched_ext_state(&self) -> Result<String, SystemError> {
        self.read("kernel/sched_ext/state").ok_or_else(|| {
            SystemError::NoSchedExt(self.root.join("kernel/sched_ext").display().to_string())
        })
    }

    /// The name of the attached scheduler, if any.
    pub fn attached_ops(&self) -> Option<String> {
        self.read("kernel/sched_ext/root/ops")
            .filter(|s| !s.is_empty())
    }

    pub fn online_cpus(&self) -> Vec<u32> {
        self.read("devices/system/cpu/online")
            .map(|s| parse_cpu_list(&s))
            .unwrap_or_default()
    }

    /// sched_ext exists and no scheduler is attached.
    pub fn check_sched_ext_free(&self) -> Result<(), SystemError> {
        match self.sched_ext_state()?.as_str() {
            "disabled" => Ok(()),
            state => Err(match self.attached_ops() {
                Some(ops) => SystemError::OtherScheduler(ops),
                None => SystemError::Busy(state.to_string()),
            }),
        }
    }

    /// Every CPU the plan names is online.
    pub fn check_cpus(&self, cpus: &[u32]) -> Result<(), SystemError> {
        let online = self.online_cpus();
        match cpus.iter().find(|c| !online.contains(c)) {
            Some(&cpu) => Err(SystemError::CpuMissing {
                cpu,
                online: self.read("devices/system/cpu/online").unwrap_or_default(),
            }),
            None => Ok(()),
        }
    }

    /// Poll the online CPU list until `cpu` is (`online`) or is not in it, or `timeout` passes;
    /// returns whether it got there. A CPU going offline leaves the list only after the kernel
    /// told sched_ext (which exits the scheduler first).
    pub fn wait_cpu(&self, cpu: u32, online: bool, timeout: Duration) -> bool {
        let start = Instant::now();
        loop {
            if self.online_cpus().contains(&cpu) == online {
                return true;
            }
            if start.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Poll the state until it reads `disabled` or `timeout` passes; returns the last state.
    pub fn wait_disabled(&self, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let state = self.sched_ext_state().unwrap_or_else(|e| e.to_string());
            if state == "disabled" || start.elapsed() >= timeout {
                return state;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

pub fn check_root() -> Result<(), SystemError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(SystemError::NotRoot);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn fake(name: &str, state: Option<&str>, ops: Option<&str>, online: &str) -> SysFs {
        let root = std::env::temp_dir().join(format!("scx_tt-sysfs-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("devices/system/cpu")).expect("mkdir");
        fs::write(root.join("devices/system/cpu/online"), online).expect("write");
        if let Some(state) = state {
            fs::create_dir_all(root.join("kernel/sched_ext/root")).expect("mkdir");
            fs::write(root.join("kernel/sched_ext/state"), format!("{state}\n")).expect("write");
            fs::write(root.join("kernel/sched_ext/root/ops"), ops.unwrap_or("")).expect("write");
        }
        SysFs { root }
    }

    #[test]
    fn missing_sched_ext_names_the_config_option_and_the_demo() {
        let err = fake("none", None, None, "0-1")
            .check_sched_ext_free()
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("CONFIG_SCHED_CLASS_EXT") && msg.contains("make demo"),
            "{msg}"
        );
    }

    #[test]
    fn another_scheduler_is_named() {
        let err = fake("other", Some("enabled"), Some("bpfland_1.0"), "0-1").check_sched_ext_free();
        assert_eq!(err, Err(SystemError::OtherScheduler("bpfland_1.0".into())));
        assert_eq!(
            fake("free", Some("disabled"), None, "0-1").check_sched_ext_free(),
            Ok(())
        );
    }

    #[test]
    fn waiting_for_a_cpu_state_sees_the_online_list() {
        let s = fake("wait", Some("disabled"), None, "0,2\n");
        let no_wait = Duration::ZERO;
        assert!(s.wait_cpu(1, false, no_wait));
        assert!(s.wait_cpu(2, true, no_wait));
        assert!(!s.wait_cpu(2, false, Duration::from_millis(30)));
    }

    #[test]
    fn offline_cpu_is_reported_with_the_online_list() {
        let s = fake("cpus", Some("disabled"), None, "0-2\n");
        assert_eq!(s.check_cpus(&[0, 2]), Ok(()));
        assert_eq!(
            s.check_cpus(&[1, 5]),
            Err(SystemError::CpuMissing {
                cpu: 5,
                online: "0-2".into()
            })
        );
    }
}

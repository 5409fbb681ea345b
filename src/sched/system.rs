//! Checks of the machine before loading: root, sched_ext present and free, plan CPUs online
//! ([`check_start`], a pure function of a [`SystemView`]). Reads sysfs from a redirectable root
//! so the checks are tested on a fake tree.

use crate::resolve::parse_cpu_list;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why `scx_tt --table` refuses to start on this machine. Each message names the cause and the
/// next step (docs/run-output.md, "Start-up" step 1); tested one by one on fake system views.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SystemError {
    #[error(
        "scx_tt must run as root to load its BPF scheduler (running as uid {0}): start it with \
         sudo, or as the systemd service scx_tt.service (docs/service.md); the subcommands \
         (plan, simulate, ctl) need no root"
    )]
    NotRoot(u32),
    #[error(
        "this kernel has no sched_ext ({0} is missing): it needs CONFIG_SCHED_CLASS_EXT=y. Boot \
         a kernel built with it (Linux 6.12 or later), or run `make demo`, which boots a VM \
         with such a kernel and runs scx_tt there"
    )]
    NoSchedExt(String),
    #[error(
        "another scx_tt is attached as the sched_ext scheduler (root/ops reads {0:?}): stop it \
         first (`systemctl stop scx_tt` when the service runs it, else SIGINT that scx_tt), \
         then start again"
    )]
    OtherScxTt(String),
    #[error(
        "another sched_ext scheduler is attached: {} (root/ops reads {ops:?}): stop it first \
         (`systemctl stop scx` when scx.service runs it, else end the process that loaded \
         it), then start scx_tt again",
        scx_binary(ops)
    )]
    OtherScheduler { ops: String },
    #[error(
        "sched_ext is busy (state {0}): a scheduler is being attached or detached; wait until \
         /sys/kernel/sched_ext/state reads `disabled`, then start again"
    )]
    Busy(String),
    #[error(
        "plan CPU {cpu} is offline (online CPUs: {online}): bring it online (`echo 1 > \
         /sys/devices/system/cpu/cpu{cpu}/online`) or take it out of the plan's cpus \
         (docs/plan-format.md; `scx_tt plan check PLAN` lists the CPUs it needs)"
    )]
    CpuOffline { cpu: u32, online: String },
    #[error(
        "plan CPU {cpu} does not exist on this machine (online CPUs: {online}): change the \
         plan's cpus to CPUs of this machine (docs/plan-format.md; `scx_tt plan check PLAN` \
         warns about them)"
    )]
    CpuMissing { cpu: u32, online: String },
}

/// The binary of scx's scheduler whose ops name `/sys/kernel/sched_ext/root/ops` shows
/// (`bpfland_1.0.2_g...` → `scx_bpfland`).
fn scx_binary(ops: &str) -> String {
    let name = ops.split('_').next().unwrap_or(ops);
    if name.starts_with("scx_") {
        name.to_string()
    } else {
        format!("scx_{name}")
    }
}

/// What the start-up checks look at, read once ([`SystemView::read`]) so that the checks
/// ([`check_start`]) are a pure function of it, tested without root and without sched_ext.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemView {
    /// The effective uid of the process.
    pub euid: u32,
    /// `kernel/sched_ext` under the sysfs root (for the message).
    pub sched_ext_dir: String,
    /// `kernel/sched_ext/state`, None when sched_ext is missing.
    pub state: Option<String>,
    /// `kernel/sched_ext/root/ops`, None when empty or missing.
    pub ops: Option<String>,
    /// `devices/system/cpu/online` as written (a CPU list).
    pub online: String,
    /// `devices/system/cpu/present`, None when unreadable.
    pub present: Option<String>,
}

impl SystemView {
    /// Reads the view under `sysfs` with the process's effective uid `euid`.
    pub fn read(sysfs: &SysFs, euid: u32) -> Self {
        SystemView {
            euid,
            sched_ext_dir: sysfs.root.join("kernel/sched_ext").display().to_string(),
            state: sysfs.read("kernel/sched_ext/state"),
            ops: sysfs.attached_ops(),
            online: sysfs.read("devices/system/cpu/online").unwrap_or_default(),
            present: sysfs.read("devices/system/cpu/present"),
        }
    }

    /// This process on `/sys`.
    pub fn this_process(sysfs: &SysFs) -> Self {
        // SAFETY: geteuid has no preconditions.
        Self::read(sysfs, unsafe { libc::geteuid() })
    }
}

/// Start-up step 1 of `scx_tt --table` (and again before a restart): root, sched_ext present
/// and free, every CPU in `plan_cpus` online, in this order; returns the online CPUs. Pure: the
/// run calls it before it changes anything on the machine.
pub fn check_start(view: &SystemView, plan_cpus: &[u32]) -> Result<Vec<u32>, SystemError> {
    if view.euid != 0 {
        return Err(SystemError::NotRoot(view.euid));
    }
    match view.state.as_deref() {
        None => return Err(SystemError::NoSchedExt(view.sched_ext_dir.clone())),
        Some("disabled") => {}
        Some(state) => {
            return Err(match &view.ops {
                Some(ops) if ops == "tt" || ops.starts_with("tt_") => {
                    SystemError::OtherScxTt(ops.clone())
                }
                Some(ops) => SystemError::OtherScheduler { ops: ops.clone() },
                None => SystemError::Busy(state.to_string()),
            })
        }
    }
    let online = parse_cpu_list(&view.online);
    if let Some(&cpu) = plan_cpus.iter().find(|c| !online.contains(c)) {
        let online_text = view.online.clone();
        let present = view.present.as_deref().map(parse_cpu_list);
        return Err(match present {
            Some(p) if !p.contains(&cpu) => SystemError::CpuMissing {
                cpu,
                online: online_text,
            },
            _ => SystemError::CpuOffline {
                cpu,
                online: online_text,
            },
        });
    }
    Ok(online)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A fake sysfs tree: sched_ext's state and ops when `state` is given, the online (and
    /// present, when given) CPU lists.
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

    /// The refusal of `check_start` as root on `sysfs` for a plan on `cpus`.
    fn refusal(sysfs: &SysFs, cpus: &[u32]) -> String {
        let err = check_start(&SystemView::read(sysfs, 0), cpus).unwrap_err();
        let _ = fs::remove_dir_all(&sysfs.root);
        err.to_string()
    }

    fn has_all(msg: &str, words: &[&str]) {
        for w in words {
            assert!(msg.contains(w), "{w:?} missing from: {msg}");
        }
    }

    #[test]
    fn a_free_sched_ext_with_the_plan_cpus_online_passes() {
        let s = fake("free", Some("disabled"), None, "0-3\n");
        let view = SystemView::read(&s, 0);
        assert_eq!(check_start(&view, &[0, 2, 3]), Ok(vec![0, 1, 2, 3]));
        let _ = fs::remove_dir_all(&s.root);
    }

    #[test]
    fn not_root_names_the_uid_and_sudo_or_the_service() {
        // checked first: a user on a kernel without sched_ext hears about root
        let s = fake("user", None, None, "0-1");
        let msg = check_start(&SystemView::read(&s, 1000), &[0])
            .unwrap_err()
            .to_string();
        has_all(
            &msg,
            &["must run as root", "uid 1000", "sudo", "scx_tt.service"],
        );
        let _ = fs::remove_dir_all(&s.root);
    }

    #[test]
    fn missing_sched_ext_names_the_config_option_and_the_demo() {
        let s = fake("none", None, None, "0-1");
        let dir = s.root.join("kernel/sched_ext").display().to_string();
        has_all(
            &refusal(&s, &[0]),
            &[
                "no sched_ext",
                &format!("{dir} is missing"),
                "CONFIG_SCHED_CLASS_EXT=y",
                "Boot a kernel built with it",
                "make demo",
            ],
        );
    }

    #[test]
    fn another_scx_scheduler_is_named_with_systemctl_stop_scx() {
        let s = fake("other", Some("enabled"), Some("rustland_1.0.4_gabc"), "0-1");
        has_all(
            &refusal(&s, &[0]),
            &[
                "another sched_ext scheduler is attached: scx_rustland",
                "\"rustland_1.0.4_gabc\"",
                "stop it first",
                "`systemctl stop scx`",
            ],
        );
    }

    #[test]
    fn another_scx_tt_is_named_with_systemctl_stop_scx_tt() {
        let s = fake("twice", Some("enabled"), Some("tt"), "0-1");
        has_all(
            &refusal(&s, &[0]),
            &[
                "another scx_tt is attached",
                "\"tt\"",
                "`systemctl stop scx_tt`",
            ],
        );
    }

    #[test]
    fn a_busy_sched_ext_says_wait_for_disabled() {
        let s = fake("busy", Some("disabling"), None, "0-1");
        has_all(
            &refusal(&s, &[0]),
            &[
                "sched_ext is busy (state disabling)",
                "wait until",
                "`disabled`",
            ],
        );
    }

    #[test]
    fn an_offline_plan_cpu_says_how_to_bring_it_online() {
        let s = fake("offline", Some("disabled"), None, "0,2\n");
        fs::write(s.root.join("devices/system/cpu/present"), "0-3\n").expect("write");
        let msg = refusal(&s, &[0, 1, 2]);
        // "plan CPU N " starts the message: the VM test `restart` looks for it
        assert!(msg.starts_with("plan CPU 1 is offline"), "{msg}");
        has_all(
            &msg,
            &[
                "online CPUs: 0,2",
                "echo 1 > /sys/devices/system/cpu/cpu1/online",
                "take it out of the plan's cpus",
            ],
        );
    }

    #[test]
    fn a_plan_cpu_the_machine_lacks_says_change_the_plan() {
        let s = fake("absent", Some("disabled"), None, "0-2\n");
        fs::write(s.root.join("devices/system/cpu/present"), "0-2\n").expect("write");
        let msg = refusal(&s, &[1, 7]);
        assert!(msg.starts_with("plan CPU 7 does not exist"), "{msg}");
        has_all(
            &msg,
            &["online CPUs: 0-2", "change the plan's cpus", "plan check"],
        );
    }

    #[test]
    fn waiting_for_a_cpu_state_sees_the_online_list() {
        let s = fake("wait", Some("disabled"), None, "0,2\n");
        let no_wait = Duration::ZERO;
        assert!(s.wait_cpu(1, false, no_wait));
        assert!(s.wait_cpu(2, true, no_wait));
        assert!(!s.wait_cpu(2, false, Duration::from_millis(30)));
        let _ = fs::remove_dir_all(&s.root);
    }
}

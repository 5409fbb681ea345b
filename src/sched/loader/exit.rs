//! How the BPF scheduler ended: [`ExitKind`], [`ExitInfo`] and [`Detached`], and
//! `Scheduler::exit_info`, which reads them from the skeleton's `user_exit_info`.

use super::Scheduler;
use std::ffi::CStr;

/// `scx_exit_kind`: how a sched_ext scheduler ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExitKind {
    /// It has not exited.
    #[default]
    None,
    Done,
    /// Userspace detached it (scx_tt's own end of the run).
    Unregistered,
    /// The BPF program called `scx_bpf_exit()`.
    UnregisteredByBpf,
    /// The kernel unregistered it, e.g. on CPU hotplug (with a restart request).
    UnregisteredByKernel,
    SysRq,
    Error,
    ErrorByBpf,
    /// The watchdog found a runnable task not run for too long.
    Stall,
    Other(i32),
}

impl ExitKind {
    fn of_raw(kind: i32) -> Self {
        use scx_utils::ScxExitKind as K;
        [
            (K::None, ExitKind::None),
            (K::Done, ExitKind::Done),
            (K::Unreg, ExitKind::Unregistered),
            (K::UnregBPF, ExitKind::UnregisteredByBpf),
            (K::UnregKern, ExitKind::UnregisteredByKernel),
            (K::SysRq, ExitKind::SysRq),
            (K::Error, ExitKind::Error),
            (K::ErrorBPF, ExitKind::ErrorByBpf),
            (K::ErrorStall, ExitKind::Stall),
        ]
        .into_iter()
        .find_map(|(raw, ours)| (raw as i32 == kind).then_some(ours))
        .unwrap_or(ExitKind::Other(kind))
    }
}

/// How the BPF scheduler ended: its `user_exit_info` (written by ops.exit) as scx_utils'
/// `UserExitInfo` reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExitInfo {
    pub kind: ExitKind,
    /// The kernel's reason, e.g. "unregistered from the main kernel".
    pub reason: String,
    /// The exit message, e.g. "cpu 2 going offline, exiting scheduler".
    pub message: String,
    /// The exit code asks for a restart (`SCX_ECODE_ACT_RESTART`, `UserExitInfo::should_restart`):
    /// the kernel set it because a CPU went on- or offline and the scheduler has no
    /// cpu_online/cpu_offline ops (kernel/sched/ext.c, handle_hotplug).
    pub restart: bool,
    /// The exit code names CPU hotplug as the reason (`SCX_ECODE_RSN_HOTPLUG`).
    pub hotplug: bool,
}

impl ExitInfo {
    pub fn should_restart(&self) -> bool {
        self.restart
    }

    /// The kernel ended the scheduler by itself (an error, the watchdog, sysrq, a CPU hotplug
    /// request, or the BPF program's own exit): anything but "still running" and userspace's
    /// own detach.
    pub fn ended_by_kernel(&self) -> bool {
        !matches!(self.kind, ExitKind::None | ExitKind::Unregistered)
    }

    /// The message, or the reason when there is no message.
    pub fn describe(&self) -> &str {
        if self.message.is_empty() {
            &self.reason
        } else {
            &self.message
        }
    }
}

/// What `Scheduler::shutdown` leaves: the sched_ext state after detaching and the exit info.
#[derive(Clone, Debug)]
pub struct Detached {
    pub state: String,
    pub exit: ExitInfo,
}

/// A NUL-terminated C string in a fixed array, as text.
fn c_text(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned())
}

impl Scheduler<'_> {
    /// How the scheduler ended so far (kind 0 while it runs), read without printing anything.
    pub fn exit_info(&self) -> ExitInfo {
        let Some(data) = self.skel.maps.data_data.as_ref() else {
            return ExitInfo::default();
        };
        // SAFETY: a volatile copy of the record ops.exit writes (plain old data).
        let uei = unsafe { std::ptr::read_volatile(&data.uei) };
        let user = scx_utils::uei_read!(&self.skel, uei);
        let hotplug_code = *scx_utils::SCX_ECODE_RSN_HOTPLUG as i64;
        ExitInfo {
            kind: ExitKind::of_raw(uei.kind),
            reason: c_text(&uei.reason),
            message: c_text(&uei.msg),
            restart: user.should_restart(),
            hotplug: user
                .exit_code()
                .is_some_and(|c| hotplug_code != 0 && c & hotplug_code != 0),
        }
    }
}

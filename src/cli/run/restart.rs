//! Restarts of the BPF scheduler during one run. The kernel exits a sched_ext scheduler and
//! asks for a restart (`SCX_ECODE_ACT_RESTART | SCX_ECODE_RSN_HOTPLUG`) when a CPU goes on- or
//! offline and the scheduler has no cpu_online/cpu_offline ops, as tt_sched.bpf.c has none: its
//! CPU roles, timers and table are fixed at load. scx_tt then loads and attaches a new
//! scheduler with the same configuration, the table state of the old one and the same slot
//! grid, while the plan's tasks, the control socket and the accounting carry on (one summary).
//!
//! The bound: at most [`MAX_RESTARTS`] restarts within any [`RESTART_WINDOW_NS`]. Each restart
//! follows an event an operator made (a CPU taken on- or offline), so a handful in a minute is a
//! machine being reconfigured; more is a loop (e.g. a CPU flapping, or a scheduler the kernel
//! exits as soon as it attaches), and the run ends with exit code 1 instead. A restart after a
//! plan CPU went offline fails the system checks and ends the run the same way, naming the CPU.
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use scx_tt::sched::system::SysFs;
use std::time::Duration;

/// Restarts allowed within [`RESTART_WINDOW_NS`].
pub const MAX_RESTARTS: usize = 8;
/// The sliding window of the restart bound: one minute.
pub const RESTART_WINDOW_NS: u64 = 60_000_000_000;
/// How long a restart waits for the CPU the kernel named to finish going on- or offline.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(2);

/// One restart, for the summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restart {
    /// The kernel's exit message, e.g. "cpu 2 going offline, exiting scheduler".
    pub reason: String,
    /// The first slot the new scheduler's timers tick (on the run's slot grid).
    pub from_slot: u64,
}

#[derive(Debug, Default)]
pub struct Restarts {
    /// When each restart was admitted (CLOCK_MONOTONIC ns).
    at_ns: Vec<u64>,
    log: Vec<Restart>,
}

impl Restarts {
    /// Admits one more restart at `now_ns` and returns its number (1, 2, ...), or refuses it
    /// with the reason when the bound is reached.
    pub fn admit(&mut self, now_ns: u64) -> Result<usize, String> {
        let recent = self
            .at_ns
            .iter()
            .filter(|&&t| now_ns.saturating_sub(t) < RESTART_WINDOW_NS)
            .count();
        if recent >= MAX_RESTARTS {
            return Err(format!(
                "the BPF scheduler asked for a restart more than {MAX_RESTARTS} times within \
                 {} s; not restarting it again",
                RESTART_WINDOW_NS / 1_000_000_000
            ));
        }
        self.at_ns.push(now_ns);
        Ok(self.at_ns.len())
    }

    /// Notes the restart admitted last as done.
    pub fn done(&mut self, reason: &str, from_slot: u64) {
        self.log.push(Restart {
            reason: reason.to_string(),
            from_slot,
        });
    }

    /// Restarts done (the summary's `restarts`).
    pub fn count(&self) -> usize {
        self.log.len()
    }

    pub fn log(&self) -> &[Restart] {
        &self.log
    }
}

/// The CPU and its new state from a hotplug exit message of the kernel
/// ("cpu 2 going offline, exiting scheduler" → (2, false)).
pub fn hotplug_cpu(message: &str) -> Option<(u32, bool)> {
    let rest = message.strip_prefix("cpu ")?;
    let (cpu, rest) = rest.split_once(' ')?;
    let online = match rest.split(',').next()? {
        "going online" => true,
        "going offline" => false,
        _ => return None,
    };
    Some((cpu.parse().ok()?, online))
}

/// The kernel exits the scheduler while a CPU is still going on- or offline; waits (up to
/// 2 s) until the online list shows the CPU named in `message` in its new state, so that the
/// system checks and the new configuration see the machine as it will be.
pub fn settle(sysfs: &SysFs, message: &str) {
    if let Some((cpu, online)) = hotplug_cpu(message) {
        if !sysfs.wait_cpu(cpu, online, SETTLE_TIMEOUT) {
            eprintln!(
                "scx_tt: warning: CPU {cpu} is not {} after {SETTLE_TIMEOUT:?}; restarting anyway",
                if online { "online" } else { "offline" }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn at_most_max_restarts_within_the_window() {
        let mut r = Restarts::default();
        for i in 0..MAX_RESTARTS as u64 {
            assert_eq!(r.admit(i * S), Ok(i as usize + 1));
        }
        // the ninth within a minute of the first is refused
        let refused = r.admit(59 * S).unwrap_err();
        assert!(
            refused.contains("more than 8 times within 60 s"),
            "{refused}"
        );
        // once the first has left the window (t = 0 s, now 60 s), one more is admitted
        assert_eq!(r.admit(60 * S), Ok(MAX_RESTARTS + 1));
    }

    #[test]
    fn only_restarts_done_are_counted_and_logged() {
        let mut r = Restarts::default();
        assert_eq!(r.admit(0), Ok(1));
        assert_eq!(r.count(), 0, "admitted is not done");
        r.done("cpu 2 going offline, exiting scheduler", 812);
        assert_eq!(r.count(), 1);
        assert_eq!(r.log()[0].from_slot, 812);
    }

    #[test]
    fn the_hotplug_message_of_the_kernel_names_the_cpu_and_its_new_state() {
        assert_eq!(
            hotplug_cpu("cpu 2 going offline, exiting scheduler"),
            Some((2, false))
        );
        assert_eq!(
            hotplug_cpu("cpu 13 going online, exiting scheduler"),
            Some((13, true))
        );
        assert_eq!(hotplug_cpu("unregistered from user space"), None);
        assert_eq!(hotplug_cpu("cpu x going offline"), None);
        assert_eq!(hotplug_cpu("cpu 1 going sideways"), None);
    }
}

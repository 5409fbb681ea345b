//! `--idle-control`: whether planner mode makes the managed CPUs idle the way its policy is
//! defined (docs/energy.md, "Idle control").
//!
//! - `policy` (default in planner mode): bss and dvfs keep idle managed cores polling, the
//!   paper's set-up for its BSS and EASS-DVFS ("a CPUIdle governor that doesn't put the cores
//!   in a low power state"), which is also how `simulate` and the live estimate price their idle
//!   slots: each managed CPU's `power/pm_qos_resume_latency_us` is set to `n/a` (no idle state
//!   with an exit latency: polling) for the run, journaled under `--run-dir` before the change
//!   and restored on every exit path (the next start or `scx_tt restore` after a SIGKILL). The
//!   DPM policies will set a limit per idle period (`energy::idle::limit_for_period`) once they
//!   run in the kernel path.
//! - `kernel`: idle states are left to the kernel's cpuidle governor; the live estimate then
//!   prices each idle slot with the deepest state that pays off within it (`deepest_per_slot`).
//!
//! A machine without the pm_qos files (a fake sysfs tree that lacks them) runs as `kernel`, with
//! a warning. Without `--planner` nothing is changed.
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use anyhow::Result;
use scx_tt::energy::idle::{IdleBackend, LatencyLimit, PmQosIdle};
use scx_tt::energy::sysfs::{Journal, Root};
use std::path::Path;

/// `--idle-control`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IdleControlArg {
    Policy,
    Kernel,
}

/// Journal name of the idle control under `--run-dir`.
pub const JOURNAL: &str = "pmqos";

/// The run's idle control: `Some` while the managed CPUs' limits are set (restored on drop).
pub struct IdleControl {
    qos: Option<PmQosIdle>,
}

impl IdleControl {
    /// None: idle states are the kernel's.
    pub fn kernel() -> Self {
        IdleControl { qos: None }
    }

    /// Takes the managed CPUs' idle states as `mode` says for planner mode (see the module doc).
    pub fn take(mode: IdleControlArg, root: Root, run_dir: &Path, managed: &[u32]) -> Result<Self> {
        if mode == IdleControlArg::Kernel {
            return Ok(Self::kernel());
        }
        let journal = Journal::persistent(root.clone(), run_dir, JOURNAL)?;
        let mut qos = match PmQosIdle::with_journal(journal, managed) {
            Ok(q) => q,
            Err(e) => {
                eprintln!(
                    "scx_tt: warning: --idle-control policy: {e}; idle states are left to the \
                     kernel (--idle-control kernel)"
                );
                return Ok(Self::kernel());
            }
        };
        for &cpu in managed {
            qos.set_limit(cpu, LatencyLimit::Poll)?;
        }
        Ok(IdleControl { qos: Some(qos) })
    }

    /// Whether the managed cores are kept polling (the live estimate's idle rule follows).
    pub fn polling(&self) -> bool {
        self.qos.is_some()
    }

    /// Restores the limits now (also on drop); the number of files that failed.
    pub fn restore(&mut self) -> usize {
        self.qos.take().map_or(0, |mut q| q.restore())
    }
}

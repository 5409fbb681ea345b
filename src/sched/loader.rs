//! The loader of src/bpf/tt_sched.bpf.c, in the order of scx_bpfland: open → rodata → map
//! sizes → load → maps (table, tid map) → attach → arm timers; then the run loop reads the ring
//! buffer and counters; `shutdown` (also run by Drop) disarms, detaches, waits for `disabled`
//! and returns the scheduler's exit info ([`ExitInfo`]: why it ended, and whether the kernel
//! asks for a restart). A restart loads a new scheduler and carries the old one's
//! [`TableState`] into it.

use super::affinity;
use super::config::SchedConfig;
use super::obs::ObsReader;
use super::system::SysFs;
use crate::abi;
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use libbpf_rs::{MapCore, MapFlags, OpenObject, ProgramInput};
use scx_utils::{compat, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;
use thiserror::Error;

mod exit;
#[cfg(test)]
mod libbpf_message_tests;
mod maps;
mod setup;
mod stats;
mod tasks;

pub use exit::{Detached, ExitInfo, ExitKind};
use maps::{read_u32_array, write_u32_array};
pub use maps::{DpmWriter, HalfWriter, TableWriter, WrittenHalf};
pub use setup::benign_libbpf_message;
use setup::filter_libbpf_messages;

#[derive(Debug, Error)]
pub enum LoadError {
    #[error("opening the BPF object: {0}")]
    Open(String),
    #[error("loading the BPF scheduler (verifier or kernel refused it): {0}")]
    Load(String),
    #[error(
        "attaching the BPF scheduler: {0} (if another sched_ext scheduler attached since the \
         start-up checks, /sys/kernel/sched_ext/root/ops names it: stop it and start again)"
    )]
    Attach(String),
    #[error("writing BPF map {map}: {msg}")]
    Map { map: &'static str, msg: String },
    #[error("arming the slot timer of CPU {cpu}: {msg}")]
    Arm { cpu: u32, msg: String },
    #[error("the BPF object has no {0} section")]
    Section(&'static str),
}

/// The run-time table state of a loaded scheduler, which a restart carries into the next one:
/// both halves of the double-buffered table with the half in use and a pending switch (the
/// table switches of `--control`), and the perf map (the planner thread's cpuperf targets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableState {
    /// Both halves: `2 × managed CPUs × frame slots` entries.
    pub table: Vec<u32>,
    pub active: u32,
    pub next: u32,
    /// `NO_SWITCH`, or the slot from which `next` is in force.
    pub switch_slot: u64,
    pub perf: Option<Vec<u32>>,
}

fn map_err(map: &'static str) -> impl Fn(libbpf_rs::Error) -> LoadError {
    move |e| LoadError::Map {
        map,
        msg: e.to_string(),
    }
}

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    link: Option<libbpf_rs::Link>,
    managed: Vec<u32>,
    table_len: usize,
    /// Entries of the perf map when loaded with `perf_enabled`.
    perf_len: Option<usize>,
    armed: Vec<u32>,
    stats_fd: Option<OwnedFd>,
    /// The helper-thread slot clock's priority (`None`: the bpf_timer) and, once armed, its
    /// threads (src/sched/rt_clock.rs).
    rt_prio: Option<u8>,
    rt_clock: Option<crate::sched::rt_clock::RtClock>,
    /// How long `load` took to open (the object, its BTF, the kernel's compat checks), to load
    /// (relocation, map creation, the verifier) and to fill the maps.
    phases: [std::time::Duration; 3],
}

impl<'a> Scheduler<'a> {
    /// Open, configure and load (not attached yet). `threads`: (tid, task index).
    pub fn load(
        open_object: &'a mut MaybeUninit<OpenObject>,
        cfg: &SchedConfig,
        threads: &[(u32, usize)],
    ) -> Result<Self, LoadError> {
        filter_libbpf_messages();
        let t0 = std::time::Instant::now();
        let builder = BpfSkelBuilder::default();
        let mut skel = scx_ops_open!(
            builder,
            open_object,
            tt_ops,
            None::<libbpf_rs::libbpf_sys::bpf_object_open_opts>
        )
        .map_err(|e| LoadError::Open(format!("{e:#}")))?;
        setup::set_rodata(&mut skel, cfg)?;
        // exiting and migration-disabled tasks through ops.enqueue too (src/bpf/tt_sched.bpf.c
        // C, "Exiting and migration-disabled tasks"); each flag only where the kernel has it
        skel.struct_ops.tt_ops_mut().flags |=
            *compat::SCX_OPS_ENQ_EXITING | *compat::SCX_OPS_ENQ_MIGRATION_DISABLED;
        setup::set_task_table(&mut skel, cfg)?;
        setup::size_maps(&mut skel, cfg)?;
        let opened = t0.elapsed();

        let skel =
            scx_ops_load!(skel, tt_ops, uei).map_err(|e| LoadError::Load(format!("{e:#}")))?;
        let loaded = t0.elapsed();

        setup::fill_maps(&skel, cfg, threads)?;
        let phases = [opened, loaded - opened, t0.elapsed() - loaded];
        Ok(Scheduler {
            phases,
            skel,
            link: None,
            managed: cfg.managed.clone(),
            table_len: cfg.table.len(),
            perf_len: cfg.perf.as_ref().map(Vec::len),
            armed: Vec::new(),
            stats_fd: None,
            rt_prio: cfg.rt_clock,
            rt_clock: None,
        })
    }

    /// `load`'s phases: open, load (the verifier's part), fill.
    pub fn load_phases(&self) -> [std::time::Duration; 3] {
        self.phases
    }

    pub fn attach(&mut self) -> Result<(), LoadError> {
        let link =
            scx_ops_attach!(self.skel, tt_ops).map_err(|e| LoadError::Attach(format!("{e:#}")))?;
        self.link = Some(link);
        Ok(())
    }

    /// Replace the table from slot `at_slot` on (absolute, in the future; ideally a frame
    /// start), on all managed CPUs at the same boundary: the inactive half of the double-
    /// buffered table is filled, then `table_next`, then `table_switch_slot` are written
    /// (src/bpf/tt_sched.bpf.c, F). `table` has the layout of `SchedConfig::table` and holds
    /// BPF entries (`SchedConfig::entries`: owners with job-start flags). A previous
    /// switch must have taken effect (its slot passed) before the next one is requested.
    pub fn switch_table(&mut self, table: &[u32], at_slot: u64) -> Result<(), LoadError> {
        let half = table.len();
        if half != self.table_len {
            return Err(LoadError::Map {
                map: "table",
                msg: format!(
                    "a new table must have {} entries, not {half}",
                    self.table_len
                ),
            });
        }
        let pending = self.data_mut()?.table_switch_slot != abi::NO_SWITCH;
        let bss = self.bss_mut()?;
        if pending {
            // fold the previous switch: both lookups now agree on the half in use
            bss.table_active = bss.table_next;
        }
        let next = 1 - bss.table_active;
        if pending {
            self.data_mut()?.table_switch_slot = abi::NO_SWITCH;
        }
        write_u32_array(&self.skel.maps.table, (next as usize * half) as u32, table)
            .map_err(map_err("table"))?;
        self.bss_mut()?.table_next = next;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.data_mut()?.table_switch_slot = at_slot;
        Ok(())
    }

    /// A reader of the observation ring (src/sched/obs.rs): the `slot_obs` map mmapped
    /// read-only. `Send`; the mapping keeps the map alive after this scheduler is dropped (it
    /// then no longer changes: after a restart, take a reader of the new scheduler).
    pub fn obs_reader(&mut self) -> Result<ObsReader, LoadError> {
        let fd = self.skel.maps.slot_obs.as_fd();
        ObsReader::map(fd, &self.managed).map_err(|e| LoadError::Map {
            map: "slot_obs",
            msg: format!("mapping the observation ring read-only: {e}"),
        })
    }

    /// The skeleton's mmapped `.bss` (run-time state userspace writes while running).
    fn bss_mut(&mut self) -> Result<&mut crate::bpf_skel::types::bss, LoadError> {
        self.skel
            .maps
            .bss_data
            .as_deref_mut()
            .ok_or(LoadError::Section("bss"))
    }

    /// The skeleton's mmapped `.data`.
    fn data_mut(&mut self) -> Result<&mut crate::bpf_skel::types::data, LoadError> {
        self.skel
            .maps
            .data_data
            .as_deref_mut()
            .ok_or(LoadError::Section("data"))
    }

    /// Set slot 0 to start at `t0_ns` and arm one timer per managed CPU, from this thread
    /// pinned to that CPU in turn (its affinity is restored afterwards).
    pub fn arm(&mut self, t0_ns: u64) -> Result<(), LoadError> {
        self.bss_mut()?.t0_ns = t0_ns;
        // While pinned to a managed CPU this thread is counted as kthread time, not foreign.
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let marker = abi::tt_task_ctx {
            task: abi::LOADER_TASK,
            inherited: 0,
            period_ns: 0,
        };
        // SAFETY: tt_task_ctx is plain old data of the size checked above.
        let bytes: [u8; 16] = unsafe { std::mem::transmute(marker) };
        self.skel
            .maps
            .task_ctx
            .update(&tid.to_ne_bytes(), &bytes, MapFlags::ANY)
            .map_err(map_err("task_ctx"))?;
        let saved = affinity::get();
        let result = self.managed.clone().into_iter().try_for_each(|cpu| {
            affinity::set(&[cpu]).map_err(|e| LoadError::Arm {
                cpu,
                msg: e.to_string(),
            })?;
            match self.run_timer_prog(cpu, true) {
                0 => {
                    self.armed.push(cpu);
                    Ok(())
                }
                rc => Err(LoadError::Arm {
                    cpu,
                    msg: abi::arm_result_text(rc),
                }),
            }
        });
        if let Err(e) = affinity::set(&saved) {
            eprintln!("scx_tt: warning: restoring the loader's CPU affinity: {e}");
        }
        result?;
        if let Some(prio) = self.rt_prio {
            // the helper threads start from this thread's restored (housekeeping) affinity
            let prog = self
                .skel
                .progs
                .rt_tick
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| LoadError::Arm {
                    cpu: self.managed.first().copied().unwrap_or(0),
                    msg: format!("duplicating rt_tick's fd: {e}"),
                })?;
            let clock = crate::sched::rt_clock::RtClock::start(&self.managed, prio, &prog)
                .map_err(|e| LoadError::Arm {
                    cpu: self.managed.first().copied().unwrap_or(0),
                    msg: format!("starting the slot clock threads: {e}"),
                })?;
            self.rt_clock = Some(clock);
        }
        Ok(())
    }

    /// Whether the slot clock is scx_tt's helper threads (src/bpf/tt_sched.bpf.c B.5).
    pub fn rt_clock(&self) -> bool {
        self.rt_prio.is_some()
    }

    /// The first failure of a slot clock thread (helper-thread clock only).
    pub fn clock_failure(&self) -> Option<String> {
        self.rt_clock.as_ref().and_then(|c| c.failure())
    }

    fn run_timer_prog(&mut self, cpu: u32, arm: bool) -> i32 {
        let mut arg = abi::tt_arm_arg {
            cpu: cpu as i32,
            pad: 0,
        };
        // SAFETY: the program reads the 8-byte context we pass and nothing beyond it.
        let ctx = unsafe {
            std::slice::from_raw_parts_mut(&mut arg as *mut _ as *mut u8, size_of_val(&arg))
        };
        let input = ProgramInput {
            context_in: Some(ctx),
            ..Default::default()
        };
        let prog = if arm {
            &self.skel.progs.arm_timer
        } else {
            &self.skel.progs.disarm_timer
        };
        match prog.test_run(input) {
            Ok(out) => out.return_value as i32,
            Err(e) => -(e.kind() as i32).abs().max(1),
        }
    }

    /// Whether the BPF scheduler has exited on its own (error, sysrq, watchdog).
    pub fn exited(&self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// The table state to carry into the next scheduler at a restart.
    pub fn table_state(&mut self) -> Result<TableState, LoadError> {
        let table =
            read_u32_array(&self.skel.maps.table, 2 * self.table_len).map_err(map_err("table"))?;
        let perf = match self.perf_len {
            Some(len) => Some(
                read_u32_array(&self.skel.maps.perf_target, len).map_err(map_err("perf_target"))?,
            ),
            None => None,
        };
        let (active, next) = {
            let bss = self.bss_mut()?;
            (bss.table_active, bss.table_next)
        };
        Ok(TableState {
            table,
            active,
            next,
            switch_slot: self.data_mut()?.table_switch_slot,
            perf,
        })
    }

    /// Loads `state` (from the scheduler this one replaces, loaded with the same
    /// configuration) into the maps; before `attach`.
    pub fn restore(&mut self, state: &TableState) -> Result<(), LoadError> {
        let wrong = |map, what: &str| LoadError::Map {
            map,
            msg: format!("the carried {what} does not fit this scheduler"),
        };
        if state.table.len() != 2 * self.table_len || state.active > 1 || state.next > 1 {
            return Err(wrong("table", "table"));
        }
        if state.perf.as_ref().map(Vec::len) != self.perf_len {
            return Err(wrong("perf_target", "perf row"));
        }
        write_u32_array(&self.skel.maps.table, 0, &state.table).map_err(map_err("table"))?;
        if let Some(perf) = &state.perf {
            write_u32_array(&self.skel.maps.perf_target, 0, perf)
                .map_err(map_err("perf_target"))?;
        }
        let bss = self.bss_mut()?;
        bss.table_active = state.active;
        bss.table_next = state.next;
        self.data_mut()?.table_switch_slot = state.switch_slot;
        Ok(())
    }

    /// Disarm the timers, detach, and wait (up to `timeout`) for sched_ext to read `disabled`.
    /// Returns the final state and the exit info; the exit is reported on stderr (scx_utils'
    /// `uei_report!`: "EXIT: reason (message)", or the error of a failed scheduler).
    pub fn shutdown(&mut self, sysfs: &SysFs, timeout: Duration) -> Detached {
        if let Some(clock) = self.rt_clock.take() {
            clock.stop();
        }
        for cpu in std::mem::take(&mut self.armed) {
            let rc = self.run_timer_prog(cpu, false);
            if rc < 0 {
                eprintln!("scx_tt: warning: disarming the timer of CPU {cpu}: {rc}");
            }
        }
        if self.link.take().is_none() {
            return Detached {
                state: sysfs.sched_ext_state().unwrap_or_default(),
                exit: self.exit_info(),
            };
        }
        let state = sysfs.wait_disabled(timeout);
        if let Err(e) = uei_report!(&self.skel, uei) {
            eprintln!("scx_tt: BPF scheduler exit: {e:#}");
        }
        Detached {
            state,
            exit: self.exit_info(),
        }
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        if self.link.is_some() || !self.armed.is_empty() || self.rt_clock.is_some() {
            let state = self
                .shutdown(&SysFs::default(), Duration::from_secs(2))
                .state;
            if state != "disabled" {
                eprintln!("scx_tt: warning: sched_ext state is {state} after detaching");
            }
        }
    }
}

/// The running kernel's pieces that scx_tt's features need (`sched::kernel`): its release, whether
/// it is PREEMPT_RT, and what its BTF has (the kfunc `scx_bpf_cpuperf_set`, the ops flags).
pub fn probe_kernel() -> crate::sched::kernel::KernelPieces {
    crate::sched::kernel::KernelPieces {
        release: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "(release unknown)".into()),
        preempt_rt: crate::sched::rt_clock::kernel_is_rt(),
        cpuperf_set: compat::ksym_exists("scx_bpf_cpuperf_set").unwrap_or(false),
        enq_exiting: *compat::SCX_OPS_ENQ_EXITING != 0,
        enq_migration_disabled: *compat::SCX_OPS_ENQ_MIGRATION_DISABLED != 0,
    }
}

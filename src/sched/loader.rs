//! The loader of src/bpf/tt_sched.bpf.c, in the order of scx_bpfland: open → rodata → map
//! sizes → load → maps (table, tid map) → attach → arm timers; then the run loop reads the ring
//! buffer and counters; `shutdown` (also run by Drop) disarms, detaches, waits for `disabled`
//! and returns the scheduler's exit info ([`ExitInfo`]: why it ended, and whether the kernel
//! asks for a restart). A restart loads a new scheduler and carries the old one's
//! [`TableState`] into it.

use super::affinity;
use super::config::{SchedConfig, TimerFault, TIMER_FAULT_ENV};
use super::obs::ObsReader;
use super::system::SysFs;
use crate::abi::{self, MAX_TASKS, NO_TASK};
use crate::accounting::{CpuCounters, ProgStats, SlotSample, TaskCounters};
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::plan::Class;
use libbpf_rs::{MapCore, MapFlags, OpenObject, ProgramInput, RingBuffer, RingBufferBuilder};
use scx_utils::{compat, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;
use thiserror::Error;

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

/// A NUL-terminated C string in a fixed array, as text.
fn c_text(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned())
}

/// libbpf warnings that say nothing wrong about this scheduler: the sched_ext headers of
/// scx_utils know struct_ops members newer kernels added (left zero, so libbpf skips them), and
/// libbpf-cargo's skeleton has no link slot for the struct_ops map, which scx_tt attaches
/// itself (`attach`). Dropped unless SCX_TT_LIBBPF_VERBOSE=1 (docs/run-output.md).
const BENIGN_LIBBPF: &[&str] = &[
    "not found in kernel, skipping it as it's set to zero",
    "BPF map skeleton link is uninitialized",
];

/// Whether a libbpf message is one of `BENIGN_LIBBPF`.
pub fn benign_libbpf_message(msg: &str) -> bool {
    BENIGN_LIBBPF.iter().any(|b| msg.contains(b))
}

fn print_libbpf(_level: libbpf_rs::PrintLevel, msg: String) {
    if !benign_libbpf_message(&msg) {
        eprint!("{msg}");
    }
}

/// Route libbpf's messages (warnings and worse) through `print_libbpf`.
fn filter_libbpf_messages() {
    if std::env::var_os("SCX_TT_LIBBPF_VERBOSE").is_some_and(|v| v == "1") {
        return;
    }
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, print_libbpf)));
}

/// Entries written per `BPF_MAP_UPDATE_BATCH` call.
const BATCH_ENTRIES: usize = 64 * 1024;

/// Writes `values` into the u32 ARRAY map `map` at keys `first_key..`, in batches (one syscall
/// per 64 Ki entries instead of one per entry: a 256-CPU × 10,000-slot table has 5 M entries);
/// falls back to one update per entry when the kernel refuses batch operations on the map.
fn write_u32_array(
    map: &impl MapCore,
    first_key: u32,
    values: &[u32],
) -> Result<(), libbpf_rs::Error> {
    for (c, chunk) in values.chunks(BATCH_ENTRIES).enumerate() {
        let base = first_key + (c * BATCH_ENTRIES) as u32;
        let keys: Vec<u8> = (0..chunk.len() as u32)
            .flat_map(|i| (base + i).to_ne_bytes())
            .collect();
        let vals: Vec<u8> = chunk.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let batch = map.update_batch(
            &keys,
            &vals,
            chunk.len() as u32,
            MapFlags::ANY,
            MapFlags::ANY,
        );
        match batch {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    libbpf_rs::ErrorKind::InvalidInput | libbpf_rs::ErrorKind::Unsupported
                ) =>
            {
                for (i, v) in chunk.iter().enumerate() {
                    map.update(
                        &(base + i as u32).to_ne_bytes(),
                        &v.to_ne_bytes(),
                        MapFlags::ANY,
                    )?;
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads keys `0..len` of the u32 ARRAY map `map`: in batches when the kernel supports them,
/// else (or when a batch came back short) one lookup per entry.
fn read_u32_array(map: &impl MapCore, len: usize) -> Result<Vec<u32>, libbpf_rs::Error> {
    let mut out = vec![0u32; len];
    let mut seen = 0;
    if let Ok(batches) = map.lookup_batch(BATCH_ENTRIES as u32, MapFlags::ANY, MapFlags::ANY) {
        for (k, v) in batches {
            let (Ok(k), Ok(v)) = (<[u8; 4]>::try_from(k), <[u8; 4]>::try_from(v)) else {
                break;
            };
            if let Some(slot) = out.get_mut(u32::from_ne_bytes(k) as usize) {
                *slot = u32::from_ne_bytes(v);
                seen += 1;
            }
        }
    }
    if seen == len {
        return Ok(out);
    }
    for (key, slot) in out.iter_mut().enumerate() {
        let value = map.lookup(&(key as u32).to_ne_bytes(), MapFlags::ANY)?;
        let bytes = value
            .and_then(|v| <[u8; 4]>::try_from(v).ok())
            .ok_or_else(|| {
                libbpf_rs::Error::from(std::io::Error::other(format!("no entry {key}")))
            })?;
        *slot = u32::from_ne_bytes(bytes);
    }
    Ok(out)
}

fn map_err(map: &'static str) -> impl Fn(libbpf_rs::Error) -> LoadError {
    move |e| LoadError::Map {
        map,
        msg: e.to_string(),
    }
}

/// Writes entries of the active half of the BPF table (`Scheduler::table_writer`) or of the
/// perf map (`Scheduler::perf_writer`); `Send`, so the planner thread owns it. One
/// `bpf_map_update_elem` per entry: a u32 store the BPF side reads atomically.
pub struct TableWriter {
    fd: OwnedFd,
    /// The map's name, for errors.
    map: &'static str,
    /// First key of the active half (0 for the perf map).
    base: usize,
    /// Entries per half: managed CPUs × frame slots.
    len: usize,
}

/// Publishes the end of each managed CPU's DPM idle period to BPF (`Scheduler::dpm_writer`):
/// `dpm_until[managed index]`, then, when it was lowered, a test run of `dpm_kick` for the CPU
/// (src/bpf/tt_sched.bpf.c K). `Send`, so the planner thread owns it.
pub struct DpmWriter {
    until: OwnedFd,
    kick: OwnedFd,
    managed: Vec<u32>,
}

impl DpmWriter {
    /// Writes `until` for managed CPU index `midx`, then kicks that CPU when `kick`.
    pub fn publish(&self, midx: usize, until: u64, kick: bool) -> std::io::Result<()> {
        let Some(&cpu) = self.managed.get(midx) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "managed CPU index {midx} is not one of {} managed CPUs",
                    self.managed.len()
                ),
            ));
        };
        // the map's key and value sizes are 4 and 8 bytes (src/bpf/tt_sched.bpf.c `dpm_until`)
        update_elem(&self.until, midx as u32, &until)?;
        if !kick {
            return Ok(());
        }
        let mut arg = abi::tt_arm_arg {
            cpu: cpu as i32,
            pad: 0,
        };
        let mut opts = libbpf_rs::libbpf_sys::bpf_test_run_opts {
            sz: size_of::<libbpf_rs::libbpf_sys::bpf_test_run_opts>() as _,
            ctx_in: (&mut arg as *mut abi::tt_arm_arg).cast(),
            ctx_size_in: size_of::<abi::tt_arm_arg>() as u32,
            ..Default::default()
        };
        // SAFETY: the program reads the 8-byte context, which lives across the call.
        let ret = unsafe {
            libbpf_rs::libbpf_sys::bpf_prog_test_run_opts(self.kick.as_raw_fd(), &mut opts)
        };
        if ret < 0 {
            return Err(std::io::Error::from_raw_os_error(-ret));
        }
        match opts.retval as i32 {
            0 => Ok(()),
            rc => Err(std::io::Error::other(format!(
                "dpm_kick of CPU {cpu}: {}",
                abi::arm_result_text(rc)
            ))),
        }
    }
}

impl TableWriter {
    /// Sets entry `index` (`managed index × frame_slots + frame slot`, the layout of
    /// `SchedConfig::table`) of the table in force (or of the perf map) to `task` (the target).
    pub fn write(&self, index: usize, task: u32) -> std::io::Result<()> {
        if index >= self.len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} entry {index} is outside the map's {} entries",
                    self.map, self.len
                ),
            ));
        }
        // the map's key and value sizes are 4 bytes (src/bpf/tt_sched.bpf.c `table`,
        // `perf_target`)
        update_elem(&self.fd, (self.base + index) as u32, &task)
    }
}

/// `bpf_map_update_elem(fd, &key, value, BPF_ANY)` of an array map whose value is a `T` (the
/// caller checks the map's value size).
fn update_elem<T: Copy>(fd: &OwnedFd, key: u32, value: &T) -> std::io::Result<()> {
    // SAFETY: key and value point to plain values that live across the call; the kernel reads
    // the map's key and value sizes from them.
    let ret = unsafe {
        libbpf_rs::libbpf_sys::bpf_map_update_elem(
            fd.as_raw_fd(),
            (&key as *const u32).cast(),
            (value as *const T).cast(),
            libbpf_rs::libbpf_sys::BPF_ANY as u64,
        )
    };
    if ret < 0 {
        return Err(std::io::Error::from_raw_os_error(-ret));
    }
    Ok(())
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
}

impl<'a> Scheduler<'a> {
    /// Open, configure and load (not attached yet). `threads`: (tid, task index).
    pub fn load(
        open_object: &'a mut MaybeUninit<OpenObject>,
        cfg: &SchedConfig,
        threads: &[(u32, usize)],
    ) -> Result<Self, LoadError> {
        filter_libbpf_messages();
        let builder = BpfSkelBuilder::default();
        let mut skel = scx_ops_open!(
            builder,
            open_object,
            tt_ops,
            None::<libbpf_rs::libbpf_sys::bpf_object_open_opts>
        )
        .map_err(|e| LoadError::Open(format!("{e:#}")))?;
        {
            let ro = skel
                .maps
                .rodata_data
                .as_mut()
                .ok_or(LoadError::Section("rodata"))?;
            ro.slot_ns = cfg.slot_ns;
            ro.guard_ns = cfg.guard_ns;
            ro.frame_slots = cfg.frame_slots;
            ro.nr_managed = cfg.managed.len() as u32;
            ro.nr_housekeeping = cfg.housekeeping.len() as u32;
            for (m, &cpu) in cfg.managed.iter().enumerate() {
                ro.cpu_role[cpu as usize] = abi::tt_cpu_role_TT_CPU_MANAGED as u8;
                ro.cpu_midx[cpu as usize] = m as u32;
            }
            for (i, &cpu) in cfg.housekeeping.iter().enumerate() {
                ro.housekeeping_cpus[i] = cpu;
            }
            ro.perf_enabled = cfg.perf.is_some();
            ro.dpm_enabled = cfg.dpm;
            ro.dpm_be = cfg.dpm_be;
            ro.rt_clock = cfg.rt_clock.is_some();
            ro.server_design = cfg.server.abi();
            if let Some(f) = TimerFault::from_env(&cfg.managed).map_err(LoadError::Open)? {
                if cfg.rt_clock.is_some() {
                    eprintln!(
                        "scx_tt: test seam: the slot clock thread of CPU {} will stall from slot \
                         {} on ({TIMER_FAULT_ENV})",
                        f.cpu, f.slot
                    );
                } else {
                    eprintln!(
                        "scx_tt: test seam: arming the slot timer of CPU {} for slot {} will \
                         fail ({TIMER_FAULT_ENV})",
                        f.cpu, f.slot
                    );
                }
                ro.test_fault_timer = true;
                ro.test_fault_cpu = f.cpu as i32;
                ro.test_fault_slot = f.slot;
            }
        }
        // exiting and migration-disabled tasks through ops.enqueue too (src/bpf/tt_sched.bpf.c
        // C, "Exiting and migration-disabled tasks"); each flag only where the kernel has it
        skel.struct_ops.tt_ops_mut().flags |=
            *compat::SCX_OPS_ENQ_EXITING | *compat::SCX_OPS_ENQ_MIGRATION_DISABLED;
        {
            // the task table is run-time state (.bss): the plan's tasks from load on, tasks
            // admitted at run time after them (`Scheduler::add_task`)
            let bss = skel
                .maps
                .bss_data
                .as_mut()
                .ok_or(LoadError::Section("bss"))?;
            bss.nr_tasks = cfg.tasks.len().min(MAX_TASKS) as u32;
            for (t, &(class, cpu)) in cfg.tasks.iter().enumerate().take(MAX_TASKS) {
                bss.task_class[t] = class_abi(class);
                bss.task_cpu[t] = cpu.map_or(-1, |c| c as i32);
                if class == Class::Adaptive {
                    bss.task_adaptive[t] = next_wake_ring(&bss.task_adaptive[..t])?;
                }
            }
            for (t, c) in cfg.completion.iter().enumerate().take(MAX_TASKS) {
                bss.task_completion[t] = c.abi();
            }
            for t in 0..cfg.tasks.len().min(MAX_TASKS) {
                bss.task_local[t] = cfg.local_abi(t);
            }
            for (t, p) in cfg.periodic.iter().enumerate().take(MAX_TASKS) {
                if let Some(p) = p {
                    bss.task_period[t] = p.period;
                    bss.task_offset[t] = p.offset;
                    bss.task_deadline[t] = p.deadline;
                }
            }
        }
        let entries = (2 * cfg.table.len()).max(1) as u32;
        skel.maps
            .table
            .set_max_entries(entries)
            .map_err(map_err("table"))?;
        let obs_entries = (cfg.managed.len() as u64 * abi::OBS_RING).max(1) as u32;
        skel.maps
            .slot_obs
            .set_max_entries(obs_entries)
            .map_err(map_err("slot_obs"))?;
        let perf_entries = cfg.perf.as_ref().map_or(1, |p| p.len().max(1)) as u32;
        skel.maps
            .perf_target
            .set_max_entries(perf_entries)
            .map_err(map_err("perf_target"))?;

        let skel =
            scx_ops_load!(skel, tt_ops, uei).map_err(|e| LoadError::Load(format!("{e:#}")))?;

        // the owners with the job-start flags (src/bpf/tt_sched.bpf.c, I)
        let entries = cfg.entries();
        let half = entries.len();
        write_u32_array(&skel.maps.table, 0, &entries).map_err(map_err("table"))?;
        write_u32_array(&skel.maps.table, half as u32, &entries).map_err(map_err("table"))?;
        if let Some(perf) = &cfg.perf {
            write_u32_array(&skel.maps.perf_target, 0, perf).map_err(map_err("perf_target"))?;
        }
        for &(tid, task) in threads {
            let ctx = abi::tt_task_ctx {
                task: task as u32,
                inherited: 0,
                period_ns: cfg.thread_period_ns(task, tid, thread_comm(tid).as_deref()),
            };
            // SAFETY: tt_task_ctx is plain old data of the size checked above.
            let bytes: [u8; 16] = unsafe { std::mem::transmute(ctx) };
            skel.maps
                .task_ctx
                .update(&tid.to_ne_bytes(), &bytes, MapFlags::ANY)
                .map_err(map_err("task_ctx"))?;
        }
        Ok(Scheduler {
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

    /// A handle that writes single entries of the table in force from another thread (the
    /// planner mode of `scx_tt --planner`, which never switches tables): it owns a duplicate of
    /// the table map's fd and the index of the active half.
    pub fn table_writer(&mut self) -> Result<TableWriter, LoadError> {
        if self.data_mut()?.table_switch_slot != abi::NO_SWITCH {
            return Err(LoadError::Map {
                map: "table",
                msg: "a table switch is pending: entries would go to the wrong half".into(),
            });
        }
        let half = self.bss_mut()?.table_active;
        let fd = self
            .skel
            .maps
            .table
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| LoadError::Map {
                map: "table",
                msg: format!("duplicating the map fd: {e}"),
            })?;
        Ok(TableWriter {
            fd,
            map: "table",
            base: half as usize * self.table_len,
            len: self.table_len,
        })
    }

    /// A handle that writes single cpuperf targets of the perf map from another thread (planner
    /// mode); the scheduler must have been loaded with a perf row (`SchedConfig::perf`).
    pub fn perf_writer(&mut self) -> Result<TableWriter, LoadError> {
        let Some(len) = self.perf_len else {
            return Err(LoadError::Map {
                map: "perf_target",
                msg: "loaded without a perf row: perf_enabled is off".into(),
            });
        };
        let fd = self
            .skel
            .maps
            .perf_target
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| LoadError::Map {
                map: "perf_target",
                msg: format!("duplicating the map fd: {e}"),
            })?;
        Ok(TableWriter {
            fd,
            map: "perf_target",
            base: 0,
            len,
        })
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

    /// Local scheduling (src/bpf/tt_sched.bpf.c D): give every thread in the task map whose
    /// task schedules its own threads the period of the workload thread its name (or tid) says
    /// now — a thread forked after load, or renamed since, starts unnamed (0: last). Returns
    /// how many entries changed. Reads every entry of the map: call it only when
    /// [`SchedConfig::has_local`].
    pub fn refresh_local(&mut self, cfg: &SchedConfig) -> Result<usize, LoadError> {
        let map = &self.skel.maps.task_ctx;
        let mut changed = 0;
        let keys: Vec<Vec<u8>> = map.keys().collect();
        for key in keys {
            let Ok(tid_bytes) = <[u8; 4]>::try_from(key.as_slice()) else {
                continue;
            };
            let tid = u32::from_ne_bytes(tid_bytes);
            let Ok(Some(value)) = map.lookup(&key, MapFlags::ANY) else {
                continue;
            };
            let Ok(bytes) = <[u8; 16]>::try_from(value.as_slice()) else {
                continue;
            };
            // SAFETY: tt_task_ctx is plain old data of the size checked in abi.rs.
            let mut ctx: abi::tt_task_ctx = unsafe { std::mem::transmute(bytes) };
            let task = ctx.task as usize;
            if cfg.local.get(task).is_none_or(Option::is_none) {
                continue;
            }
            let period = cfg.thread_period_ns(task, tid, thread_comm(tid).as_deref());
            if period == ctx.period_ns {
                continue;
            }
            ctx.period_ns = period;
            // SAFETY: as above.
            let bytes: [u8; 16] = unsafe { std::mem::transmute(ctx) };
            // BPF_EXIST: a thread that exited meanwhile (exit_task deleted it) stays deleted
            if map.update(&key, &bytes, MapFlags::EXIST).is_ok() {
                changed += 1;
            }
        }
        Ok(changed)
    }

    /// Task `index` (added at run time, [`Self::add_task`]) leaves the plan
    /// (src/bpf/tt_sched.bpf.c F): every thread of it in the task map is deleted (those forked
    /// since too), then BPF moves the ones still queued on a managed CPU's queues to the
    /// housekeeping CPUs. Returns (threads deleted from the map, threads BPF moved).
    pub fn release_task(
        &mut self,
        index: usize,
        cpu: Option<u32>,
    ) -> Result<(usize, u32), LoadError> {
        let map = &self.skel.maps.task_ctx;
        let mut deleted = 0;
        let keys: Vec<Vec<u8>> = map.keys().collect();
        for key in keys {
            let Ok(Some(value)) = map.lookup(&key, MapFlags::ANY) else {
                continue;
            };
            let Ok(bytes) = <[u8; 16]>::try_from(value.as_slice()) else {
                continue;
            };
            // SAFETY: tt_task_ctx is plain old data of the size checked in abi.rs.
            let ctx: abi::tt_task_ctx = unsafe { std::mem::transmute(bytes) };
            if ctx.task as usize == index && map.delete(&key).is_ok() {
                deleted += 1;
            }
        }
        let moved = run_task_prog(&self.skel.progs.release_task, "release_task", index, cpu)?;
        Ok((deleted, moved))
    }

    /// The task index the next [`Self::add_task`] gets (the tasks so far: the plan's, then those
    /// admitted at run time).
    pub fn nr_tasks(&mut self) -> Result<usize, LoadError> {
        Ok(self.bss_mut()?.nr_tasks as usize)
    }

    /// Adds a task at index [`Self::nr_tasks`] (src/bpf/tt_sched.bpf.c F): its class, CPU and
    /// completion first, then `nr_tasks` raised, then its threads into the task map. Returns
    /// the index. A failure leaves BPF without the task's threads (they stay outside the plan).
    pub fn add_task(
        &mut self,
        class: Class,
        cpu: Option<u32>,
        completion: crate::plan::Completion,
        tids: &[u32],
    ) -> Result<usize, LoadError> {
        let bss = self.bss_mut()?;
        let index = bss.nr_tasks as usize;
        if index >= MAX_TASKS {
            return Err(LoadError::Map {
                map: "task table",
                msg: format!("{index} tasks: the BPF task table holds at most {MAX_TASKS}"),
            });
        }
        bss.task_class[index] = class_abi(class);
        bss.task_cpu[index] = cpu.map_or(-1, |c| c as i32);
        bss.task_completion[index] = completion.abi();
        bss.task_adaptive[index] = match class {
            Class::Adaptive => next_wake_ring(&bss.task_adaptive[..index])?,
            _ => 0,
        };
        // the entries before the count (F): a reader that sees the index sees them
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: a u32 of the mmapped .bss that BPF reads; a volatile store.
        unsafe { std::ptr::write_volatile(&mut bss.nr_tasks, index as u32 + 1) };
        for &tid in tids {
            let ctx = abi::tt_task_ctx {
                task: index as u32,
                inherited: 0,
                period_ns: 0,
            };
            // SAFETY: tt_task_ctx is plain old data of the size checked in abi.rs.
            let bytes: [u8; 16] = unsafe { std::mem::transmute(ctx) };
            self.skel
                .maps
                .task_ctx
                .update(&tid.to_ne_bytes(), &bytes, MapFlags::ANY)
                .map_err(map_err("task_ctx"))?;
        }
        // a thread running on a housekeeping CPU now is enqueued again, as a plan thread
        run_task_prog(&self.skel.progs.join_task, "join_task", index, cpu)?;
        Ok(index)
    }

    /// Adaptive task `index` gets (`Class::Tt`) or loses (`Class::Be`) its reservation
    /// (src/bpf/tt_sched.bpf.c F, `reclass_task`): its class changes and its queued threads
    /// move to the new class's queue. Called again with the same class, it moves the threads an
    /// enqueue racing with the change left in the old queue. Returns 1 when a thread moved, 0
    /// when none did; an error for a task that is not adaptive (BPF refuses it, -EINVAL) or
    /// another class.
    pub fn reclass_task(&mut self, index: usize, class: Class) -> Result<u32, LoadError> {
        if !matches!(class, Class::Tt | Class::Be) {
            return Err(LoadError::Map {
                map: "reclass_task",
                msg: format!(
                    "task {index}: class {class:?}: an adaptive task is reclassed to tt or be only"
                ),
            });
        }
        let arg = abi::tt_reclass_arg {
            task: index as u32,
            class: class_abi(class) as u32,
        };
        run_prog_with(&self.skel.progs.reclass_task, "reclass_task", index, arg)
    }

    /// The wakeup ring of adaptive task `task` (src/bpf/tt_sched.bpf.c L), in the mmapped
    /// .bss; `None` for a task that is not adaptive (or an index past the table).
    pub fn wake_ring(&self, task: usize) -> Option<&crate::sched::wake::WakeRing> {
        let bss = self.skel.maps.bss_data.as_deref()?;
        // SAFETY: a u8 BPF never writes; userspace wrote it before nr_tasks covered the task.
        let a = unsafe { std::ptr::read_volatile(bss.task_adaptive.get(task)?) } as usize;
        let ring = bss.wake_rings.get(a.checked_sub(1)?)?;
        // SAFETY: tt_wake_ring is u64s only, laid out as WakeRing (sizes asserted in
        // sched::wake); BPF writes it concurrently, which WakeRing reads as atomics.
        Some(unsafe { &*(ring as *const _ as *const crate::sched::wake::WakeRing) })
    }

    /// The writer of the DPM idle period ends (`dpm_until`) and the kick that makes a
    /// lowered one take effect (src/bpf/tt_sched.bpf.c K), for the planner thread.
    pub fn dpm_writer(&mut self) -> Result<DpmWriter, LoadError> {
        let dup = |fd: BorrowedFd<'_>, map: &'static str| {
            fd.try_clone_to_owned().map_err(|e| LoadError::Map {
                map,
                msg: format!("duplicating the fd: {e}"),
            })
        };
        Ok(DpmWriter {
            until: dup(self.skel.maps.dpm_until.as_fd(), "dpm_until")?,
            kick: dup(self.skel.progs.dpm_kick.as_fd(), "dpm_kick")?,
            managed: self.managed.clone(),
        })
    }

    /// Whether the BPF scheduler has exited on its own (error, sysrq, watchdog).
    pub fn exited(&self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// A ring buffer reader calling `sink` for every slot record.
    pub fn slot_records<'cb>(
        &self,
        mut sink: impl FnMut(SlotSample) + 'cb,
    ) -> Result<RingBuffer<'cb>, LoadError> {
        let mut b = RingBufferBuilder::new();
        b.add(&self.skel.maps.slot_recs, move |bytes: &[u8]| {
            if bytes.len() >= size_of::<abi::tt_slot_rec>() {
                // SAFETY: the ring buffer record is a tt_slot_rec written by BPF.
                let r: abi::tt_slot_rec =
                    unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
                sink(sample_of(&r));
            }
            0
        })
        .map_err(map_err("slot_recs"))?;
        b.build().map_err(map_err("slot_recs"))
    }

    /// Task `task`'s CPU time so far (BPF's `task_stats.run_ns`), ns; `None` past the table.
    pub fn task_run_ns(&self, task: usize) -> Option<u64> {
        let bss = self.skel.maps.bss_data.as_ref()?;
        // SAFETY: a volatile copy of a counter BPF updates concurrently.
        Some(unsafe { std::ptr::read_volatile(&bss.task_stats.get(task)?.run_ns) })
    }

    /// Per-task totals (plan order) and per managed CPU counters.
    pub fn counters(&self, nr_tasks: usize) -> (Vec<TaskCounters>, BTreeMap<u32, CpuCounters>) {
        let Some(bss) = self.skel.maps.bss_data.as_ref() else {
            return (vec![TaskCounters::default(); nr_tasks], BTreeMap::new());
        };
        // SAFETY: volatile copies of counters BPF updates concurrently.
        let tasks = (0..nr_tasks.min(MAX_TASKS))
            .map(|t| {
                let s = unsafe { std::ptr::read_volatile(&bss.task_stats[t]) };
                TaskCounters {
                    run_ns: s.run_ns,
                    inside_ns: s.inside_ns,
                    jobs_done: s.jobs_done,
                    jobs_carried: s.jobs_carried,
                    reclaimed_ns: s.reclaimed_ns,
                }
            })
            .collect();
        let cpus = self
            .managed
            .iter()
            .map(|&c| {
                // Exhaustive on both sides: a counter added to intf.h without a summary field
                // (or the reverse) does not compile.
                let crate::bpf_skel::types::tt_cpu_stats {
                    ticks,
                    tick_cost_ns,
                    late_skips,
                    pin_mismatch,
                    rec_drops,
                    lost_ns,
                    stop_events,
                    stop_late,
                    stop_kicks,
                    stop_cost_ns,
                    timer_errors,
                    releases,
                    dpm_defers,
                    dpm_slots,
                    dpm_shortened,
                    evictions,
                    evicted_ns,
                } = unsafe { std::ptr::read_volatile(&bss.cpu_stats[c as usize]) };
                let counters = CpuCounters {
                    ticks,
                    tick_cost_ns,
                    late_skips,
                    pin_mismatch,
                    rec_drops,
                    lost_ns,
                    stop_events,
                    stop_late,
                    stop_kicks,
                    stop_cost_ns,
                    timer_errors,
                    releases,
                    dpm_defers,
                    dpm_slots,
                    dpm_shortened,
                    evictions,
                    evicted_ns,
                };
                (c, counters)
            })
            .collect();
        (tasks, cpus)
    }

    /// Turn on kernel.bpf_stats run-time accounting for as long as this scheduler lives
    /// (BPF_ENABLE_STATS: the kernel turns it off when the fd closes, even on SIGKILL).
    pub fn enable_bpf_stats(&mut self) -> std::io::Result<()> {
        // SAFETY: plain syscall wrapper; a non-negative result is a new fd we own.
        let fd = unsafe {
            libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
        };
        if fd < 0 {
            return Err(std::io::Error::from_raw_os_error(-fd));
        }
        // SAFETY: fd is a fresh descriptor returned by the kernel.
        self.stats_fd = Some(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(())
    }

    /// run_cnt / run_time_ns of the scheduler's struct_ops programs (zero without bpf_stats).
    pub fn prog_stats(&self) -> Vec<ProgStats> {
        let p = &self.skel.progs;
        [
            ("select_cpu", p.tt_select_cpu.as_fd()),
            ("enqueue", p.tt_enqueue.as_fd()),
            ("dispatch", p.tt_dispatch.as_fd()),
            ("running", p.tt_running.as_fd()),
            ("stopping", p.tt_stopping.as_fd()),
            ("runnable", p.tt_runnable.as_fd()),
        ]
        .into_iter()
        .filter_map(|(name, fd)| {
            // SAFETY: bpf_prog_info is plain data; the kernel fills at most `len` bytes.
            let mut info: libbpf_rs::libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
            let mut len = size_of_val(&info) as u32;
            let rc = unsafe {
                libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len)
            };
            (rc == 0).then(|| ProgStats {
                name: name.to_string(),
                run_cnt: info.run_cnt,
                run_time_ns: info.run_time_ns,
                ns_per_run: info.run_time_ns.checked_div(info.run_cnt).unwrap_or(0),
            })
        })
        .collect()
    }

    /// Every program's name and the instructions the kernel's verifier walked to load it
    /// (`bpf_prog_info.verified_insns`): what the load's time grows with (`-v` prints them).
    pub fn verified_insns(&self) -> Vec<(String, u32)> {
        use libbpf_rs::skel::Skel;
        self.skel
            .object()
            .progs()
            .filter_map(|prog| {
                // SAFETY: as in `prog_stats`.
                let mut info: libbpf_rs::libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
                let mut len = size_of_val(&info) as u32;
                let rc = unsafe {
                    libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(
                        prog.as_fd().as_raw_fd(),
                        &mut info,
                        &mut len,
                    )
                };
                (rc == 0).then(|| {
                    (
                        prog.name().to_string_lossy().into_owned(),
                        info.verified_insns,
                    )
                })
            })
            .collect()
    }

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

/// The half of the BPF table that the next switch fills, to be written whole on another thread
/// (the `switch_table` loader thread, so that the run loop never waits on up to 2^24 entries):
/// `Scheduler::half_writer` hands it out, [`HalfWriter::write`] fills it, and
/// `Scheduler::switch_to_written` makes it the table from a slot on. The BPF side never reads
/// that half until `table_switch_slot` is written (src/bpf/tt_sched.bpf.c, F), so filling it
/// while the scheduler runs changes nothing that is enforced or accounted.
pub struct HalfWriter {
    map: libbpf_rs::MapHandle,
    written: WrittenHalf,
}

/// Which half of which map [`HalfWriter::write`] filled, for `Scheduler::switch_to_written`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrittenHalf {
    /// The kernel's id of the table map (a restart loads a scheduler with another map).
    map_id: u32,
    /// 0 or 1.
    half: u32,
    /// Entries per half.
    len: usize,
}

impl HalfWriter {
    /// A writer of half `half` (0 or 1) of `len` entries of the u32 ARRAY `map`, which must
    /// hold both halves (benchmarks and tests pass a map of their own).
    pub fn new(map: libbpf_rs::MapHandle, half: u32, len: usize) -> Result<Self, LoadError> {
        let wrong = |msg: String| LoadError::Map { map: "table", msg };
        if half > 1 || (map.max_entries() as usize) < 2 * len {
            return Err(wrong(format!(
                "half {half} of {len} entries does not fit a map of {} entries",
                map.max_entries()
            )));
        }
        let map_id = map
            .info()
            .map_err(|e| wrong(format!("reading the map's id: {e}")))?
            .info
            .id;
        Ok(HalfWriter {
            map,
            written: WrittenHalf { map_id, half, len },
        })
    }

    /// Fills the half with `table` (the layout of `SchedConfig::table`), in batches.
    pub fn write(self, table: &[u32]) -> Result<WrittenHalf, LoadError> {
        let w = self.written;
        if table.len() != w.len {
            return Err(LoadError::Map {
                map: "table",
                msg: format!(
                    "a new table must have {} entries, not {}",
                    w.len,
                    table.len()
                ),
            });
        }
        write_u32_array(&self.map, w.half * w.len as u32, table).map_err(map_err("table"))?;
        Ok(w)
    }
}

impl Scheduler<'_> {
    /// A [`HalfWriter`] of the half the next switch fills: the one no lookup uses once the
    /// previous switch (if any) has taken effect. Like `switch_table`, only after the previous
    /// switch's slot has passed.
    pub fn half_writer(&mut self) -> Result<HalfWriter, LoadError> {
        let next = self.next_half()?;
        let map =
            libbpf_rs::MapHandle::try_from(&self.skel.maps.table).map_err(|e| LoadError::Map {
                map: "table",
                msg: format!("duplicating the map fd: {e}"),
            })?;
        HalfWriter::new(map, next, self.table_len)
    }

    /// Whether `written` is the half the next switch of this scheduler fills (not so after a
    /// restart, which loads another map, or once another switch was written).
    pub fn is_next_half(&mut self, written: &WrittenHalf) -> bool {
        let id = self.skel.maps.table.info().map(|i| i.info.id).ok();
        id == Some(written.map_id)
            && written.len == self.table_len
            && self.next_half().ok() == Some(written.half)
    }

    /// `switch_table` for a table already written by a [`HalfWriter`]: the previous switch
    /// is folded, then `table_next` and last `table_switch_slot` are written (src/bpf/
    /// tt_sched.bpf.c, F); a few stores, nothing of the table's size. Changes nothing unless
    /// `is_next_half(written)`.
    pub fn switch_to_written(
        &mut self,
        written: &WrittenHalf,
        at_slot: u64,
    ) -> Result<(), LoadError> {
        if !self.is_next_half(written) {
            return Err(LoadError::Map {
                map: "table",
                msg: "the half written is not the one this scheduler switches to".into(),
            });
        }
        if self.data_mut()?.table_switch_slot != abi::NO_SWITCH {
            // fold the previous switch: both lookups now agree on the half in use
            let bss = self.bss_mut()?;
            bss.table_active = bss.table_next;
            self.data_mut()?.table_switch_slot = abi::NO_SWITCH;
        }
        self.bss_mut()?.table_next = written.half;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.data_mut()?.table_switch_slot = at_slot;
        Ok(())
    }

    /// The half `switch_table` fills next: the other one than the lookups use once the
    /// previous switch (if any) has taken effect.
    fn next_half(&mut self) -> Result<u32, LoadError> {
        let pending = self.data_mut()?.table_switch_slot != abi::NO_SWITCH;
        let bss = self.bss_mut()?;
        Ok(1 - if pending {
            bss.table_next
        } else {
            bss.table_active
        })
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

/// The name of thread `tid` (`/proc/<tid>/comm`), `None` when it is gone.
fn thread_comm(tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

/// The `task_adaptive` value of the next adaptive task after `before` (src/bpf/tt_sched.bpf.c
/// L): its wakeup ring + 1, rings given in task order.
fn next_wake_ring(before: &[u8]) -> Result<u8, LoadError> {
    let used = before.iter().filter(|&&a| a != 0).count();
    if used >= abi::MAX_ADAPTIVE {
        return Err(LoadError::Map {
            map: "wake_rings",
            msg: format!(
                "adaptive task {}: the BPF scheduler traces at most {} adaptive tasks \
                 (TT_MAX_ADAPTIVE)",
                used + 1,
                abi::MAX_ADAPTIVE
            ),
        });
    }
    Ok(used as u8 + 1)
}

fn class_abi(class: Class) -> u8 {
    (match class {
        Class::Tt => abi::tt_class_TT_CLASS_TT,
        // an adaptive task is best effort until the supervisor grants it a reservation
        Class::Be | Class::Adaptive => abi::tt_class_TT_CLASS_BE,
    }) as u8
}

fn sample_of(r: &abi::tt_slot_rec) -> SlotSample {
    let task = |t: u32| (t != NO_TASK).then_some(t as usize);
    SlotSample {
        slot: r.slot,
        cpu: r.cpu,
        owner: task(r.owner),
        owner_ns: r.owner_ns,
        be_ns: r.be_ns,
        other_tt_ns: r.other_tt_ns,
        kthread_ns: r.kthread_ns,
        foreign_ns: r.foreign_ns,
        be_ready_ns: r.be_ready_ns,
        be_kick_ns: r.be_kick_ns,
        late_ns: r.late_ns,
        be_top: task(r.be_top),
        perf: (r.perf != 0).then_some(r.perf),
    }
}

/// Test-runs the SEC("syscall") task program `prog` (`release_task`, `join_task`; src/bpf/
/// tt_sched.bpf.c F) for task `index` on `cpu`: its non-negative return value, or an error
/// naming the program.
fn run_task_prog(
    prog: &libbpf_rs::ProgramMut<'_>,
    name: &'static str,
    index: usize,
    cpu: Option<u32>,
) -> Result<u32, LoadError> {
    let arg = abi::tt_release_arg {
        task: index as u32,
        cpu: cpu.map_or(-1, |c| c as i32),
    };
    run_prog_with(prog, name, index, arg)
}

/// Test-runs the SEC("syscall") program `prog` for task `index` with context `arg` (an
/// 8-byte struct of src/bpf/intf.h): its non-negative return value, or an error naming the
/// program.
fn run_prog_with<T: Copy>(
    prog: &libbpf_rs::ProgramMut<'_>,
    name: &'static str,
    index: usize,
    mut arg: T,
) -> Result<u32, LoadError> {
    // SAFETY: `arg` is a plain-old-data context struct of intf.h; the program reads its bytes
    // and nothing beyond them.
    let ctx =
        unsafe { std::slice::from_raw_parts_mut(&mut arg as *mut T as *mut u8, size_of_val(&arg)) };
    let input = ProgramInput {
        context_in: Some(ctx),
        ..Default::default()
    };
    let out = prog.test_run(input).map_err(map_err(name))?;
    u32::try_from(out.return_value as i32).map_err(|_| LoadError::Map {
        map: name,
        msg: format!(
            "task {index}: the BPF program returned {}",
            out.return_value as i32
        ),
    })
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

#[cfg(test)]
mod libbpf_message_tests {
    use super::benign_libbpf_message;

    #[test]
    fn only_the_known_harmless_libbpf_warnings_are_dropped() {
        assert!(benign_libbpf_message(
            "libbpf: struct_ops tt_ops: member sub_cid_sched_updated not found in kernel, \
             skipping it as it's set to zero\n"
        ));
        assert!(benign_libbpf_message(
            "libbpf: map 'tt_ops': BPF map skeleton link is uninitialized\n"
        ));
        assert!(!benign_libbpf_message(
            "libbpf: struct_ops init_kern tt_ops: member dispatch not found in kernel\n"
        ));
        assert!(!benign_libbpf_message(
            "libbpf: prog 'tt_dispatch': BPF program load failed: Permission denied\n"
        ));
    }
}

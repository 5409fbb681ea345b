//! The steps of `Scheduler::load` before and after the kernel loads the object: libbpf's
//! message filter, the read-only configuration (.rodata), the task table (.bss), the map
//! sizes, and the maps' first contents.

use super::tasks::{class_abi, next_wake_ring, thread_comm};
use super::{map_err, maps::write_u32_array, LoadError};
use crate::abi::{self, MAX_TASKS};
use crate::bpf_skel::{BpfSkel, OpenBpfSkel};
use crate::plan::Class;
use crate::sched::config::{SchedConfig, TimerFault, TIMER_FAULT_ENV};
use libbpf_rs::{MapCore, MapFlags};

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
pub(super) fn filter_libbpf_messages() {
    if std::env::var_os("SCX_TT_LIBBPF_VERBOSE").is_some_and(|v| v == "1") {
        return;
    }
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, print_libbpf)));
}

/// Writes the read-only configuration (.rodata) of the opened object from `cfg`.
pub(super) fn set_rodata(skel: &mut OpenBpfSkel<'_>, cfg: &SchedConfig) -> Result<(), LoadError> {
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
    Ok(())
}

/// Writes the plan's tasks into the task table (.bss) of the opened object.
pub(super) fn set_task_table(
    skel: &mut OpenBpfSkel<'_>,
    cfg: &SchedConfig,
) -> Result<(), LoadError> {
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
    Ok(())
}

/// Sizes the table, observation ring, perf, timer and DPM maps of the opened object for `cfg`.
pub(super) fn size_maps(skel: &mut OpenBpfSkel<'_>, cfg: &SchedConfig) -> Result<(), LoadError> {
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
    // per managed CPU, not per TT_MAX_CPUS: the slot clocks by CPU id, the DPM ends by index
    skel.maps
        .timers
        .set_max_entries(cfg.timer_entries())
        .map_err(map_err("timers"))?;
    skel.maps
        .dpm_until
        .set_max_entries(cfg.managed.len().max(1) as u32)
        .map_err(map_err("dpm_until"))?;
    Ok(())
}

/// Fills the loaded object's maps: both table halves, the perf row, and the task map's
/// entries of `threads` ((tid, task index)).
pub(super) fn fill_maps(
    skel: &BpfSkel<'_>,
    cfg: &SchedConfig,
    threads: &[(u32, usize)],
) -> Result<(), LoadError> {
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
    Ok(())
}

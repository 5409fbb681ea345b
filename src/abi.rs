//! The BPF ↔ Rust ABI (`src/bpf/intf.h`). The constants and the table-entry encoding are pure
//! and live in the core (`tt_core::abi`, re-exported here); this file adds the struct layouts
//! bindgen generates from intf.h (feature `bpf`) and checks, at compile time, that both sides
//! agree.

pub use tt_core::abi::*;

/// The struct layouts, from bindgen (feature `bpf`): [`tt_slot_rec`] (one per managed CPU and
/// slot, through the ring buffer), [`tt_slot_obs`] (the observation ring, read by
/// `sched::obs`), [`tt_task_ctx`], [`tt_arm_arg`], [`tt_task_stats`], [`tt_cpu_stats`], and the
/// enums `tt_cpu_role_*`, `tt_class_*`.
#[cfg(feature = "bpf")]
pub use crate::bpf_intf::{
    tt_arm_arg, tt_class_TT_CLASS_BE, tt_class_TT_CLASS_TT, tt_cpu_role_TT_CPU_MANAGED,
    tt_cpu_stats, tt_reclass_arg, tt_release_arg, tt_slot_obs, tt_slot_rec, tt_task_ctx,
    tt_task_stats, tt_tick_arg, tt_wake_ev, tt_wake_ring,
};

#[cfg(feature = "bpf")]
mod checks {
    use super::*;
    use crate::bpf_intf as c;
    #[allow(unused_imports)]
    use std::mem::size_of;

    const _: () = assert!(c::tt_limits_TT_MAX_CPUS == MAX_CPUS);
    const _: () = assert!(c::tt_limits_TT_MAX_TASKS as usize == MAX_TASKS);
    const _: () = assert!(c::tt_limits_TT_MAX_THREADS as usize == MAX_THREADS);
    const _: () = assert!(c::tt_limits_TT_PERF_ONE == PERF_ONE);
    const _: () = assert!(c::TT_NO_TASK == NO_TASK);
    const _: () = assert!(c::TT_DPM_IDLE == DPM_IDLE);
    const _: () = assert!(c::tt_limits_TT_DPM_MAX_SLOTS as u64 == DPM_MAX_SLOTS);
    const _: () = assert!(c::TT_LOADER_TASK == LOADER_TASK);
    const _: () = assert!(c::tt_limits_TT_OBS_RING as u64 == OBS_RING);
    const _: () = assert!(c::tt_limits_TT_MAX_ADAPTIVE as usize == MAX_ADAPTIVE);
    const _: () = assert!(c::tt_limits_TT_WAKE_RING as u64 == WAKE_RING);
    const _: () = assert!(WAKE_RING.is_power_of_two() && MAX_ADAPTIVE.is_power_of_two());
    // task_adaptive is a u8 holding ring + 1
    const _: () = assert!(MAX_ADAPTIVE < 256);
    const _: () = assert!(c::TT_OBS_DONE == OBS_DONE);
    const _: () = assert!(c::TT_ENTRY_TASK_MASK == ENTRY_TASK_MASK);
    const _: () = assert!(c::TT_ENTRY_JOB_START == ENTRY_JOB_START);
    const _: () = assert!(c::tt_completion_TT_COMPLETION_NONE as u8 == COMPLETION_NONE);
    const _: () = assert!(c::tt_completion_TT_COMPLETION_YIELD as u8 == COMPLETION_YIELD);
    const _: () = assert!(c::tt_completion_TT_COMPLETION_BLOCK as u8 == COMPLETION_BLOCK);
    const _: () = assert!(c::tt_server_TT_SERVER_WCPS as u8 == SERVER_WCPS);
    const _: () = assert!(c::tt_server_TT_SERVER_PTPS as u8 == SERVER_PTPS);
    const _: () = assert!(c::tt_server_TT_SERVER_CRPS as u8 == SERVER_CRPS);
    const _: () = assert!(c::tt_local_TT_LOCAL_FIFO as u8 == LOCAL_FIFO);
    const _: () = assert!(c::tt_local_TT_LOCAL_RM as u8 == LOCAL_RM);
    const _: () = assert!(c::tt_local_TT_LOCAL_EDF as u8 == LOCAL_EDF);
    // task ids and flags do not overlap
    const _: () = assert!((MAX_TASKS as u32 - 1) & !ENTRY_TASK_MASK == 0);
    const _: () = assert!(ENTRY_JOB_START & ENTRY_TASK_MASK == 0);
    const _: () = assert!(c::tt_arm_result_TT_ARM_WRONG_CPU as i32 == ARM_WRONG_CPU);
    const _: () = assert!(c::tt_arm_result_TT_ARM_NOT_MANAGED as i32 == ARM_NOT_MANAGED);
    const _: () = assert!(c::tt_arm_result_TT_ARM_NO_T0 as i32 == ARM_NO_T0);
    const _: () = assert!(c::tt_arm_result_TT_ARM_NO_TIMER as i32 == ARM_NO_TIMER);
    const _: () = assert!(c::tt_arm_result_TT_ARM_NOT_RT_CLOCK as i32 == ARM_NOT_RT_CLOCK);
    const _: () = assert!(c::tt_arm_result_TT_TICK_WRONG_CPU as i32 == TICK_WRONG_CPU);
    // bindgen gives the all-ones 64-bit #define as -1 (i32); sign extension restores it.
    const _: () = assert!(c::TT_NO_SWITCH as i64 as u64 == NO_SWITCH);
    // The sizes of intf.h's _Static_assert lines.
    const _: () = assert!(size_of::<tt_task_ctx>() == 16);
    const _: () = assert!(size_of::<tt_wake_ev>() == 16);
    const _: () = assert!(size_of::<tt_wake_ring>() == 16 + 16 * WAKE_RING as usize);
    const _: () = assert!(size_of::<tt_arm_arg>() == 8);
    const _: () = assert!(size_of::<tt_tick_arg>() == 16);
    const _: () = assert!(size_of::<tt_reclass_arg>() == 8);
    const _: () = assert!(size_of::<tt_slot_rec>() == 88);
    const _: () = assert!(size_of::<tt_slot_obs>() == 56);
    const _: () = assert!(size_of::<tt_task_stats>() == 48);
    const _: () = assert!(size_of::<tt_cpu_stats>() == 152);
}

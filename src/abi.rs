//! The BPF ↔ Rust ABI of `src/bpf/intf.h`, the one Rust source of its constants and structs.
//!
//! The constants are written here so that pure code (plan validation, the planner's kernel-path
//! adapter, the accounting) can use them without the `bpf` feature, which is what runs bindgen
//! over `intf.h`. With the feature on, every constant is checked against bindgen's value and
//! every struct's size against `intf.h`'s `_Static_assert`s at compile time (below), so the two
//! sides cannot drift: change `intf.h` and this file together.

/// CPU ids must be below this (`TT_MAX_CPUS`: sizes the BPF per-CPU arrays).
pub const MAX_CPUS: u32 = 256;
/// Plan tasks (tt + be) per run (`TT_MAX_TASKS`: sizes the per-task rodata and statistics).
pub const MAX_TASKS: usize = 512;
/// Threads that may belong to plan tasks at once (`TT_MAX_THREADS`: the tid → task map).
pub const MAX_THREADS: usize = 65_536;
/// Thread ids a plan may bring into the tid → task map: `TT_MAX_THREADS` less the entry of
/// scx_tt's own loader thread while it arms the timers ([`LOADER_TASK`]).
pub const MAX_PLAN_THREADS: usize = MAX_THREADS - 1;
/// Full performance of `scx_bpf_cpuperf_set` (`TT_PERF_ONE` = the kernel's `SCX_CPUPERF_ONE`).
pub const PERF_ONE: u32 = 1024;
/// "No task": a free slot in the table, or no be task in a record (`TT_NO_TASK`).
pub const NO_TASK: u32 = u32::MAX;
/// `task_ctx` value of scx_tt's loader thread while it arms the timers (`TT_LOADER_TASK`).
pub const LOADER_TASK: u32 = 0xffff_fffe;
/// `table_switch_slot` when no table switch is pending (`TT_NO_SWITCH`).
pub const NO_SWITCH: u64 = u64::MAX;
/// Entries of the BPF `table` map at most (both halves of the double buffer): a BPF array's
/// size in bytes (`max_entries` × 4-byte values) must stay below 4 GiB.
pub const MAX_TABLE_ENTRIES: u64 = u32::MAX as u64 / 4;

/// The struct layouts, from bindgen (feature `bpf`): [`tt_slot_rec`] (one per managed CPU and
/// slot, through the ring buffer), [`tt_task_ctx`], [`tt_arm_arg`], [`tt_task_stats`],
/// [`tt_cpu_stats`], and the enums `tt_cpu_role_*`, `tt_class_*`.
#[cfg(feature = "bpf")]
pub use crate::bpf_intf::{
    tt_arm_arg, tt_class_TT_CLASS_BE, tt_class_TT_CLASS_TT, tt_cpu_role_TT_CPU_MANAGED,
    tt_cpu_stats, tt_slot_rec, tt_task_ctx, tt_task_stats,
};

#[cfg(feature = "bpf")]
mod checks {
    use super::*;
    use crate::bpf_intf as c;
    use std::mem::size_of;

    const _: () = assert!(c::tt_limits_TT_MAX_CPUS == MAX_CPUS);
    const _: () = assert!(c::tt_limits_TT_MAX_TASKS as usize == MAX_TASKS);
    const _: () = assert!(c::tt_limits_TT_MAX_THREADS as usize == MAX_THREADS);
    const _: () = assert!(c::tt_limits_TT_PERF_ONE == PERF_ONE);
    const _: () = assert!(c::TT_NO_TASK == NO_TASK);
    const _: () = assert!(c::TT_LOADER_TASK == LOADER_TASK);
    // bindgen gives the all-ones 64-bit #define as -1 (i32); sign extension restores it.
    const _: () = assert!(c::TT_NO_SWITCH as i64 as u64 == NO_SWITCH);
    // The sizes of intf.h's _Static_assert lines.
    const _: () = assert!(size_of::<tt_task_ctx>() == 8);
    const _: () = assert!(size_of::<tt_arm_arg>() == 8);
    const _: () = assert!(size_of::<tt_slot_rec>() == 88);
    const _: () = assert!(size_of::<tt_task_stats>() == 24);
    const _: () = assert!(size_of::<tt_cpu_stats>() == 80);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `intf.h` itself, so the constants are checked against the header even in builds
    /// without the `bpf` feature (no bindgen).
    #[test]
    fn constants_match_intf_h() {
        let h = include_str!("bpf/intf.h");
        let value = |name: &str| -> String {
            let line = h
                .lines()
                .find(|l| {
                    let l = l.trim_start();
                    l.starts_with(&format!("{name} ="))
                        || l.starts_with(&format!("#define {name} "))
                })
                .unwrap_or_else(|| panic!("{name} not in intf.h"));
            line.split(['=', ' ', ','])
                .filter(|w| !w.is_empty())
                .next_back()
                .map(str::to_string)
                .expect("a value")
        };
        assert_eq!(value("TT_MAX_CPUS"), MAX_CPUS.to_string());
        assert_eq!(value("TT_MAX_TASKS"), MAX_TASKS.to_string());
        assert_eq!(value("TT_MAX_THREADS"), MAX_THREADS.to_string());
        assert_eq!(value("TT_PERF_ONE"), PERF_ONE.to_string());
        assert_eq!(value("TT_NO_TASK"), format!("{NO_TASK:#x}u"));
        assert_eq!(value("TT_LOADER_TASK"), format!("{LOADER_TASK:#x}u"));
        assert_eq!(value("TT_NO_SWITCH"), format!("{NO_SWITCH:#x}ULL"));
    }
}

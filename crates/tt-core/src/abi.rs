//! The BPF ↔ Rust ABI of `src/bpf/intf.h`, the one Rust source of its constants and structs.
//!
//! The constants are written here so that pure code (plan validation, the planner's kernel-path
//! adapter, the accounting) can use them without the `bpf` feature, which is what runs bindgen
//! over `intf.h`. With the feature on, every constant is checked against bindgen's value and
//! every struct's size against `intf.h`'s `_Static_assert`s at compile time (below), so the two
//! sides cannot drift: change `intf.h` and this file together.

/// CPU ids must be below this (`TT_MAX_CPUS`, a power of two: sizes the BPF per-CPU `.bss`
/// arrays; the per-CPU maps `timers` and `dpm_until` are sized from the plan at load).
pub const MAX_CPUS: u32 = 1024;
/// Tasks (tt + be) per run, the plan's and those admitted at run time (`TT_MAX_TASKS`: sizes the
/// BPF task table and statistics).
pub const MAX_TASKS: usize = 1024;
/// Threads that may belong to plan tasks at once (`TT_MAX_THREADS`: the tid → task map).
pub const MAX_THREADS: usize = 65_536;
/// Thread ids a plan may bring into the tid → task map: `TT_MAX_THREADS` less the entry of
/// scx_tt's own loader thread while it arms the timers ([`LOADER_TASK`]).
pub const MAX_PLAN_THREADS: usize = MAX_THREADS - 1;
/// Full performance of `scx_bpf_cpuperf_set` (`TT_PERF_ONE` = the kernel's `SCX_CPUPERF_ONE`).
pub const PERF_ONE: u32 = 1024;
/// "No task": a free slot in the table, or no be task in a record (`TT_NO_TASK`).
pub const NO_TASK: u32 = u32::MAX;
/// "DPM idle: run nothing" (`TT_DPM_IDLE`, src/bpf/tt_sched.bpf.c K): a table entry with no
/// owner that, unlike [`NO_TASK`], keeps be work off the slot; written by the planner under
/// dpm and dpm+dvfs, never with flags.
pub const DPM_IDLE: u32 = 0xffff_fffd;
/// Slots one deferred slot tick skips at most (`TT_DPM_MAX_SLOTS`).
pub const DPM_MAX_SLOTS: u64 = 1024;
/// `task_ctx` value of scx_tt's loader thread while it arms the timers (`TT_LOADER_TASK`).
pub const LOADER_TASK: u32 = 0xffff_fffe;
/// `table_switch_slot` when no table switch is pending (`TT_NO_SWITCH`).
pub const NO_SWITCH: u64 = u64::MAX;
/// `arm_timer` results of scx_tt's own checks (`enum tt_arm_result`); 0 is success, a negative
/// value the errno of a `bpf_timer_*` helper.
pub const ARM_WRONG_CPU: i32 = 1;
pub const ARM_NOT_MANAGED: i32 = 2;
pub const ARM_NO_T0: i32 = 3;
pub const ARM_NO_TIMER: i32 = 4;
/// `rt_tick` called while the slot clock is the bpf_timer (src/bpf/tt_sched.bpf.c B.5).
pub const ARM_NOT_RT_CLOCK: i32 = 5;
/// `rt_tick` ran on another CPU than its helper's (`TT_TICK_WRONG_CPU`): the kernel moved the
/// helper (its CPU is going offline, or its affinity was changed); nothing ran.
pub const TICK_WRONG_CPU: i32 = 6;
/// Slots per managed CPU in the observation ring (`TT_OBS_RING`, a power of two): the entry of
/// (managed index `m`, slot `s`) is `m * OBS_RING + s % OBS_RING` (src/sched/obs.rs).
pub const OBS_RING: u64 = 16;
/// Adaptive tasks traced at once, one wakeup ring each (`TT_MAX_ADAPTIVE`, src/bpf/tt_sched.bpf.c
/// L): bss `task_adaptive[task]` is its ring + 1.
pub const MAX_ADAPTIVE: usize = 16;
/// Wakeups per ring (`TT_WAKE_RING`, a power of two; src/sched/wake.rs).
pub const WAKE_RING: u64 = 256;
/// Observation flag: the owner's current job completed in the slot (`TT_OBS_DONE`).
pub const OBS_DONE: u32 = 1;
/// The task bits of a table entry (`TT_ENTRY_TASK_MASK`): task indices are below
/// [`MAX_TASKS`], flags sit above them; [`NO_TASK`] (all bits set) is checked first.
pub const ENTRY_TASK_MASK: u32 = 0xffff;
/// Table entry flag: the slot is the first of a job of the entry's task (`TT_ENTRY_JOB_START`,
/// src/bpf/tt_sched.bpf.c I): its tick ends the task's previous job's completion.
pub const ENTRY_JOB_START: u32 = 1 << 16;
/// `enum tt_completion`: how a tt task's job ends early (`task_completion` rodata).
pub const COMPLETION_NONE: u8 = 0;
pub const COMPLETION_YIELD: u8 = 1;
pub const COMPLETION_BLOCK: u8 = 2;
/// `enum tt_server`: what a tt owner's unused slot time becomes (`server_design` rodata).
pub const SERVER_WCPS: u8 = 0;
pub const SERVER_PTPS: u8 = 1;
pub const SERVER_CRPS: u8 = 2;
/// `enum tt_local`: how a tt task orders its threads (`task_local` bss).
pub const LOCAL_FIFO: u8 = 0;
pub const LOCAL_RM: u8 = 1;
pub const LOCAL_EDF: u8 = 2;
/// Entries of the BPF `table` map at most (both halves of the double buffer): a BPF array's
/// size in bytes (`max_entries` × 4-byte values) must stay below 4 GiB.
pub const MAX_TABLE_ENTRIES: u64 = u32::MAX as u64 / 4;

/// The table entry of slot owner `task` (`None`: a free slot), with [`ENTRY_JOB_START`] when
/// the slot is the first of a job. `task` must be below [`MAX_TASKS`].
pub fn entry(task: Option<u32>, job_start: bool) -> u32 {
    match task {
        None => NO_TASK,
        Some(t) => {
            debug_assert!((t as usize) < MAX_TASKS, "task {t} is not below MAX_TASKS");
            (t & ENTRY_TASK_MASK) | if job_start { ENTRY_JOB_START } else { 0 }
        }
    }
}

/// The owner of a table entry, its flags stripped (`None`: a free slot, [`NO_TASK`] or
/// [`DPM_IDLE`]).
pub fn entry_task(entry: u32) -> Option<u32> {
    (entry != NO_TASK && entry != DPM_IDLE).then_some(entry & ENTRY_TASK_MASK)
}

/// Whether a table entry starts a job of its task ([`NO_TASK`] and [`DPM_IDLE`] never do).
pub fn entry_job_start(entry: u32) -> bool {
    entry_task(entry).is_some() && entry & ENTRY_JOB_START != 0
}

/// Why `arm_timer` refused to arm a CPU's slot timer (`rc` ≠ 0), for the loader's error.
pub fn arm_result_text(rc: i32) -> String {
    match rc {
        0 => "armed".into(),
        ARM_WRONG_CPU => "arm_timer ran on another CPU: the loader's thread was not pinned to it \
                          (sched_setaffinity did not hold)"
            .into(),
        ARM_NOT_MANAGED => "it is not a managed CPU of the loaded plan".into(),
        ARM_NO_T0 => "t0_ns was not written before arming".into(),
        ARM_NO_TIMER => "it has no entry in the BPF timers map".into(),
        ARM_NOT_RT_CLOCK => "rt_tick ran while the slot clock is the BPF timer (the loader did \
                             not set rt_clock)"
            .into(),
        TICK_WRONG_CPU => "rt_tick ran on another CPU than its slot clock thread's: the \
                           kernel moved the thread off its CPU"
            .into(),
        e if e < 0 => format!(
            "a bpf_timer helper (init, set_callback or start) returned {e}: {}; when it was \
             bpf_timer_start, the scheduler's exit message names the slot",
            std::io::Error::from_raw_os_error(-e)
        ),
        other => format!("arm_timer returned {other}, which intf.h does not define"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arm_result_has_its_own_text() {
        let texts: Vec<String> = [
            ARM_WRONG_CPU,
            ARM_NOT_MANAGED,
            ARM_NO_T0,
            ARM_NO_TIMER,
            ARM_NOT_RT_CLOCK,
            TICK_WRONG_CPU,
            -22,
            -1,
            99,
        ]
        .into_iter()
        .map(arm_result_text)
        .collect();
        for (i, t) in texts.iter().enumerate() {
            assert!(!texts[..i].contains(t), "{t}");
        }
        assert!(
            texts[6].contains("returned -22: Invalid argument"),
            "{}",
            texts[6]
        );
        assert!(
            texts[7].contains("returned -1: Operation not permitted"),
            "{}",
            texts[7]
        );
    }

    /// Reads `intf.h` itself, so the constants are checked against the header even in builds
    /// without the `bpf` feature (no bindgen).
    #[test]
    fn constants_match_intf_h() {
        let h = include_str!("../../../src/bpf/intf.h");
        let value = |name: &str| -> String {
            let line = h
                .lines()
                .find(|l| {
                    let l = l.trim_start();
                    l.starts_with(&format!("{name} ="))
                        || l.starts_with(&format!("#define {name} "))
                })
                .unwrap_or_else(|| panic!("{name} not in intf.h"));
            // the value is the last word before a trailing comment
            let code = line.split("/*").next().unwrap_or(line);
            code.split(['=', ' ', ','])
                .rfind(|w| !w.is_empty())
                .map(str::to_string)
                .expect("a value")
        };
        assert_eq!(value("TT_MAX_CPUS"), MAX_CPUS.to_string());
        assert_eq!(value("TT_MAX_TASKS"), MAX_TASKS.to_string());
        assert_eq!(value("TT_MAX_THREADS"), MAX_THREADS.to_string());
        assert_eq!(value("TT_PERF_ONE"), PERF_ONE.to_string());
        assert_eq!(value("TT_NO_TASK"), format!("{NO_TASK:#x}u"));
        assert_eq!(value("TT_DPM_IDLE"), format!("{DPM_IDLE:#x}u"));
        assert_eq!(value("TT_DPM_MAX_SLOTS"), DPM_MAX_SLOTS.to_string());
        assert_eq!(value("TT_LOADER_TASK"), format!("{LOADER_TASK:#x}u"));
        assert_eq!(value("TT_NO_SWITCH"), format!("{NO_SWITCH:#x}ULL"));
        assert_eq!(value("TT_ARM_WRONG_CPU"), ARM_WRONG_CPU.to_string());
        assert_eq!(value("TT_ARM_NOT_MANAGED"), ARM_NOT_MANAGED.to_string());
        assert_eq!(value("TT_ARM_NO_T0"), ARM_NO_T0.to_string());
        assert_eq!(value("TT_ARM_NO_TIMER"), ARM_NO_TIMER.to_string());
        assert_eq!(value("TT_ARM_NOT_RT_CLOCK"), ARM_NOT_RT_CLOCK.to_string());
        assert_eq!(value("TT_TICK_WRONG_CPU"), TICK_WRONG_CPU.to_string());
        assert_eq!(value("TT_OBS_RING"), OBS_RING.to_string());
        assert_eq!(value("TT_MAX_ADAPTIVE"), MAX_ADAPTIVE.to_string());
        assert_eq!(value("TT_WAKE_RING"), WAKE_RING.to_string());
        assert_eq!(value("TT_OBS_DONE"), format!("{OBS_DONE}u"));
        assert_eq!(
            value("TT_ENTRY_TASK_MASK"),
            format!("{ENTRY_TASK_MASK:#x}u")
        );
        assert_eq!(
            value("TT_ENTRY_JOB_START"),
            format!("{ENTRY_JOB_START:#x}u")
        );
        assert_eq!(value("TT_COMPLETION_NONE"), COMPLETION_NONE.to_string());
        assert_eq!(value("TT_COMPLETION_YIELD"), COMPLETION_YIELD.to_string());
        assert_eq!(value("TT_COMPLETION_BLOCK"), COMPLETION_BLOCK.to_string());
        assert_eq!(value("TT_SERVER_WCPS"), SERVER_WCPS.to_string());
        assert_eq!(value("TT_SERVER_PTPS"), SERVER_PTPS.to_string());
        assert_eq!(value("TT_SERVER_CRPS"), SERVER_CRPS.to_string());
        assert_eq!(value("TT_LOCAL_FIFO"), LOCAL_FIFO.to_string());
        assert_eq!(value("TT_LOCAL_RM"), LOCAL_RM.to_string());
        assert_eq!(value("TT_LOCAL_EDF"), LOCAL_EDF.to_string());
        assert_eq!(ENTRY_JOB_START, 1 << 16);
    }

    #[test]
    fn entries_compose_and_strip_and_no_task_stays_all_ones() {
        assert_eq!(entry(None, false), NO_TASK);
        assert_eq!(entry(None, true), NO_TASK);
        assert_eq!(entry(Some(7), false), 7);
        assert_eq!(entry(Some(7), true), 7 | ENTRY_JOB_START);
        assert_eq!(entry_task(entry(Some(511), true)), Some(511));
        assert_eq!(entry_task(NO_TASK), None);
        assert_eq!(entry_task(DPM_IDLE), None);
        assert!(!entry_job_start(DPM_IDLE));
        assert!(entry_job_start(entry(Some(0), true)));
        assert!(!entry_job_start(entry(Some(0), false)));
        // NO_TASK has the flag bit set but is no job start
        assert!(!entry_job_start(NO_TASK));
    }
}

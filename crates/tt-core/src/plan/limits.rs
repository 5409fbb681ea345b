//! The BPF scheduler's load limits as plan rules, checked at the boundary so that `plan check`
//! reports a plan that cannot load (the model: scx_layered's `verify_layer_specs`, one error per
//! BPF limit before anything is loaded).
//!
//! Each limit is a constant of `src/bpf/intf.h`, read through [`crate::abi`]:
//!
//! | limit | rule | path |
//! |---|---|---|
//! | `TT_MAX_TASKS` | tasks (tt + be) ≤ 1024 | `tasks` |
//! | `TT_MAX_CPUS` | every CPU id < 1024 | `cpus.managed[i]`, `cpus.housekeeping[i]` |
//! | `MAX_TABLE_ENTRIES` | 2 halves × managed CPUs × frame slots ≤ 1,073,741,823 | `frame_slots` |
//! | `TT_MAX_THREADS` | distinct ids of the `tids` lists ≤ 65,535 | `tasks[i].tids` |
//!
//! Selectors other than `tids` (`pid`, `comm`, `cgroup`, `qemu`, `cmd`) name their threads only
//! at run time; the loader reports a full thread map then (`writing BPF map task_ctx`).
//! `TT_LOOKAHEAD_SLOTS`, `TT_MAX_PIECES` and `TT_RINGBUF_BYTES` limit behaviour, not loading
//! (docs/plan-format.md, "BPF limits").
//!
//! `SchedConfig::from_plan` re-asserts the same limits (the Xen ARINC 653 habit: validate at the
//! boundary, re-assert inside), through [`table_entries`] for the table.

use super::error::Rule;
use super::raw::RawTask;
use super::validate::Errors;
use crate::abi::{MAX_CPUS, MAX_PLAN_THREADS, MAX_TABLE_ENTRIES, MAX_TASKS};
use std::collections::HashSet;

/// Entries of the BPF `table` map for `managed` CPUs and a frame of `frame` slots: two halves
/// (the double buffer of src/bpf/tt_sched.bpf.c, F) of one row per managed CPU.
pub fn table_entries(managed: usize, frame: u64) -> u128 {
    2 * managed as u128 * u128::from(frame)
}

/// `tasks`: at most `TT_MAX_TASKS` (the BPF task table and statistics arrays).
pub(super) fn check_task_count(tasks: &[RawTask], errs: &mut Errors) {
    let adaptive = tasks
        .iter()
        .filter(|t| t.class.as_deref() == Some("adaptive"))
        .count();
    if adaptive > crate::abi::MAX_ADAPTIVE {
        errs.push(
            "tasks",
            None,
            Rule::TooManyAdaptive {
                count: adaptive,
                limit: crate::abi::MAX_ADAPTIVE,
            },
        );
    }
    if tasks.len() > MAX_TASKS {
        errs.push(
            "tasks",
            None,
            Rule::TooManyTasks {
                count: tasks.len(),
                limit: MAX_TASKS,
            },
        );
    }
}

/// `cpus.<list>[i]`: below `TT_MAX_CPUS` (the per-CPU arrays). Whether all of them are.
pub(super) fn check_cpu_ids(path: &str, cpus: &[u32], errs: &mut Errors) -> bool {
    let mut ok = true;
    for (i, &c) in cpus.iter().enumerate() {
        if c >= MAX_CPUS {
            errs.value(
                format!("{path}[{i}]"),
                &c,
                Rule::CpuIdTooLarge { limit: MAX_CPUS },
            );
            ok = false;
        }
    }
    ok
}

/// `tasks[i].tids`: the distinct thread ids of all `tids` lists fit the tid → task map, next to
/// scx_tt's loader thread (`MAX_PLAN_THREADS`). Reported at the list that crosses the limit.
pub(super) fn check_thread_count(tasks: &[RawTask], errs: &mut Errors) {
    let mut seen: HashSet<u32> = HashSet::new();
    for (i, t) in tasks.iter().enumerate() {
        let Some(tids) = &t.tids else { continue };
        seen.extend(tids.iter().copied());
        if seen.len() > MAX_PLAN_THREADS {
            errs.push(
                format!("tasks[{i}].tids"),
                None,
                Rule::TooManyThreads {
                    count: seen.len(),
                    limit: MAX_PLAN_THREADS,
                },
            );
            return;
        }
    }
}

/// `frame_slots`: the double-buffered table of `managed` CPUs × `frame` slots fits one BPF
/// array (`MAX_TABLE_ENTRIES`). `given`: the plan wrote `frame_slots` (else it is the lcm of the
/// periods and has no value in the file).
///
/// With today's caps this cannot fire for a plan file: managed CPUs × frame slots ≤
/// [`MAX_CPU_FRAME_SLOTS`] (checked first; the table is checked only within it) makes at most
/// 2 × 16,777,216 = 33,554,432 entries, far below the limit, at any number of CPUs (up to 1,023
/// managed ones) and any frame. It is checked anyway, so that raising a cap cannot let a plan
/// through that the kernel refuses.
pub(super) fn check_table_size(managed: usize, frame: u64, given: bool, errs: &mut Errors) {
    let entries = table_entries(managed, frame);
    if entries > u128::from(MAX_TABLE_ENTRIES) {
        let rule = Rule::TableTooLarge {
            managed,
            frame,
            entries,
            limit: MAX_TABLE_ENTRIES,
        };
        frame_error(frame, given, rule, errs);
    }
}

/// An error at `frame_slots`, with its value when the plan wrote it (`given`; else the frame is
/// the lcm of the periods and has no value in the file).
fn frame_error(frame: u64, given: bool, rule: Rule, errs: &mut Errors) {
    if given {
        errs.value("frame_slots", &frame, rule);
    } else {
        errs.push("frame_slots", None, rule);
    }
}

/// Managed CPUs × frame slots of a plan: 16,777,216 (16 CPUs at the 1,000,000-slot frame cap, or
/// 1,023 CPUs at 16,400 slots). Per CPU and slot the plan, the loader and the BPF table each hold
/// an entry, so this bounds their memory (below 2 GiB together) whatever the number of CPUs:
/// the CPU-id limit (`TT_MAX_CPUS` = 1024) does not enter it, and the table rule alone would
/// allow 1,073,741,823 entries.
pub const MAX_CPU_FRAME_SLOTS: u64 = 1 << 24;

/// Jobs in one frame over all managed CPUs: 1,048,576. The planner keeps three frames of them
/// per CPU (about 140 bytes a job with its intervals and rings), so this bounds its memory to
/// some 450 MiB.
pub const MAX_PLAN_JOBS: usize = 1 << 20;

/// `frame_slots`: managed CPUs × frame slots ≤ [`MAX_CPU_FRAME_SLOTS`]. Whether they are.
pub(super) fn check_cpu_slots(managed: usize, frame: u64, given: bool, errs: &mut Errors) -> bool {
    let slots = managed as u128 * u128::from(frame);
    let ok = slots <= u128::from(MAX_CPU_FRAME_SLOTS);
    if !ok {
        let rule = Rule::CpuSlotsTooMany {
            managed,
            frame,
            slots,
            limit: MAX_CPU_FRAME_SLOTS,
        };
        frame_error(frame, given, rule, errs);
    }
    ok
}

/// `tasks`: the jobs of one frame (every table task's instances) ≤ [`MAX_PLAN_JOBS`]. Counted
/// before any job is built.
pub(super) fn check_job_count(jobs: u128, managed: usize, errs: &mut Errors) {
    if jobs > MAX_PLAN_JOBS as u128 {
        errs.push(
            "tasks",
            None,
            Rule::TooManyJobs {
                jobs,
                managed,
                limit: MAX_PLAN_JOBS,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(f: impl FnOnce(&mut Errors)) -> Vec<String> {
        let mut errs = Errors::default();
        f(&mut errs);
        errs.0.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn the_table_rule_fires_above_the_limit_and_names_frame_and_cpus() {
        // 2 × 537 × 1,000,000 = 1,074,000,000 > 1,073,741,823; 2 × 536 × 1,000,000 fits.
        let got = errors(|e| check_table_size(537, 1_000_000, true, e));
        assert_eq!(
            got,
            vec![
                "frame_slots = 1000000: 2 halves × 537 managed CPUs × 1000000 slots = \
                 1074000000 table entries, above the BPF scheduler's limit of 1073741823"
                    .to_string()
            ]
        );
        assert!(errors(|e| check_table_size(536, 1_000_000, true, e)).is_empty());
        // a derived frame has no value in the file
        let derived = errors(|e| check_table_size(537, 1_000_000, false, e));
        assert!(
            derived[0].starts_with("frame_slots: 2 halves"),
            "{derived:?}"
        );
    }

    #[test]
    fn the_cpu_slot_cap_keeps_plan_files_inside_the_table_limit_at_any_cpu_count() {
        // the table grows with managed CPUs × frame slots, which MAX_CPU_FRAME_SLOTS caps
        let most = table_entries(1, MAX_CPU_FRAME_SLOTS);
        assert_eq!(most, 33_554_432);
        assert!(most <= u128::from(MAX_TABLE_ENTRIES), "{most}");
        // the CPU-id and frame caps alone would not: 2 × 1,023 managed × 1,000,000 slots
        let ids_and_frame =
            table_entries(MAX_CPUS as usize - 1, super::super::timing::FRAME_CAP_SLOTS);
        assert!(ids_and_frame > u128::from(MAX_TABLE_ENTRIES));
        // ... and such a plan gets the CPU-slot error alone, not the table's as well
        let mut errs = Errors::default();
        let within = check_cpu_slots(MAX_CPUS as usize - 1, 1_000_000, true, &mut errs);
        assert!(!within);
        assert_eq!(errs.0.len(), 1);
        assert!(
            errs.0[0]
                .to_string()
                .contains("1023 managed CPUs × 1000000 slots"),
            "{}",
            errs.0[0]
        );
    }

    #[test]
    fn cpu_ids_up_to_1023_fit_and_1024_to_u32_max_are_refused_by_value() {
        let ids = [0, 1, 255, 256, 1000, MAX_CPUS - 1];
        assert!(errors(|e| assert!(check_cpu_ids("cpus.managed", &ids, e))).is_empty());
        for (c, text) in [
            (MAX_CPUS, "1024"),
            (4096, "4096"),
            (u32::MAX - 1, "4294967294"),
            (u32::MAX, "4294967295"),
        ] {
            let got = errors(|e| assert!(!check_cpu_ids("cpus.housekeeping", &[0, c], e)));
            assert_eq!(
                got,
                vec![format!(
                    "cpus.housekeeping[1] = {text}: is not below the BPF scheduler's limit of \
                     1024 CPU ids (TT_MAX_CPUS)"
                )]
            );
        }
    }

    #[test]
    fn repeated_tids_count_once() {
        let task = |tids: Vec<u32>| RawTask {
            tids: Some(tids),
            ..Default::default()
        };
        let half = (MAX_PLAN_THREADS / 2) as u32;
        // two lists of `half` ids sharing one: half * 2 - 1 distinct ids ≤ the limit
        let a = task((1..=half).collect());
        let b = task((half..2 * half).collect());
        assert!(errors(|e| check_thread_count(&[a.clone(), b], e)).is_empty());
        // the second list brings the distinct count to MAX_PLAN_THREADS + 1
        let c = task((half + 1..=2 * half + 2).collect());
        let got = errors(|e| check_thread_count(&[a, c], e));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].starts_with("tasks[1].tids: "), "{got:?}");
    }
}

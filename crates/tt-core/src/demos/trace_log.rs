//! DEmOS's schedule log from a slot trace of an imported plan (issue 18 item 2): the kernel
//! path's `--trace` or `simulate --trace` of `plan import --demos`'s plan, written as DEmOS's
//! `DEMOS_SCHEDULE_LOG` lines (`time: cpus=N cmd='...' budget=B`), so that a kernel run can be
//! compared with `simulate --demos` (DEmOS's own semantics) line for line.
//!
//! Only SC processes have lines: the plan gives them their own slots (`PARTITION.k` tasks, one
//! run of consecutive slots per window), while BE work runs in anonymous slack that the trace
//! does not attribute. A line is written at the first slot of each run of slots a task owns
//! inside one window (a run that continues across a window boundary starts again there, as
//! DEmOS starts the partition again in every window); its time is the slot's start in ms since
//! slot 0 (the run's start, window 0's start), its CPUs the slice's, its budget the process's
//! nominal budget (the trace does not know a jittered activation's draw).

use super::config::Config;
use super::cpuset::CpuSet;
use super::sim::LogLine;
use crate::trace::{SlotKind, SlotRecord};

/// The SC lines of the schedule log of `records` (slots of `slot_us`) under the plan that
/// `plan import --demos` made of `config` (`all_cpus`: what `cpu: all` meant), in time order
/// (ties: CPU order). Records of tasks that are no SC process of `config` are ignored.
pub fn sc_log(
    config: &Config,
    all_cpus: CpuSet,
    slot_us: u64,
    records: &[SlotRecord],
) -> Vec<LogLine> {
    let frame_ms = config.major_frame_ms().max(1);
    let mut recs: Vec<&SlotRecord> = records
        .iter()
        .filter(|r| r.kind == SlotKind::Tt || r.kind == SlotKind::Aperiodic)
        .collect();
    recs.sort_by_key(|r| (r.cpu, r.slot));
    // the window of a time (ms since slot 0) and its start
    let window_at = |t: u64| -> (usize, u64) {
        let mut at = t - t % frame_ms;
        let mut rest = t % frame_ms;
        for (w, win) in config.windows.iter().enumerate() {
            if rest < win.length {
                return (w, at);
            }
            rest -= win.length;
            at += win.length;
        }
        (config.windows.len().saturating_sub(1), at)
    };
    let mut lines = Vec::new();
    let mut prev: Option<(u32, u64, &str, usize)> = None;
    for r in recs {
        let Some(task) = r.task.as_deref() else {
            continue;
        };
        let Some((part, k)) = task.rsplit_once('.') else {
            continue;
        };
        let (Some(p), Ok(k)) = (config.partition(part), k.parse::<usize>()) else {
            continue;
        };
        let Some(q) = p.processes.get(k) else {
            continue;
        };
        let t = r.slot.saturating_mul(slot_us) / 1000;
        let (w, _) = window_at(t);
        let Some(slice) = config.windows[w]
            .slices()
            .iter()
            .find(|s| s.sc_partition.as_deref() == Some(part))
        else {
            continue;
        };
        let continues = prev.is_some_and(|(cpu, slot, name, pw)| {
            cpu == r.cpu && slot + 1 == r.slot && name == task && pw == w
        });
        if !continues {
            lines.push(LogLine {
                time_ms: t,
                cpus: slice.cpus(all_cpus),
                cmd: q.cmd.clone(),
                budget: q.budget,
            });
        }
        prev = Some((r.cpu, r.slot, task, w));
    }
    lines.sort_by_key(|l| l.time_ms);
    lines
}

/// The lines of `log` (e.g. `simulate --demos`'s) that are starts of SC processes of `config`
/// (the ones [`sc_log`] writes), in order.
pub fn sc_lines(config: &Config, log: &[LogLine]) -> Vec<LogLine> {
    let sc: Vec<&str> = config
        .windows
        .iter()
        .flat_map(|w| w.slices())
        .filter_map(|s| s.sc_partition.as_deref())
        .filter_map(|name| config.partition(name))
        .flat_map(|p| p.processes.iter().map(|q| q.cmd.as_str()))
        .collect();
    log.iter()
        .filter(|l| sc.contains(&l.cmd.as_str()))
        .cloned()
        .collect()
}

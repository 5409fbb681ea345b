//! What the run prints after the summary (table switches, scheduler restarts, the guard band)
//! and the `--summary-json` file: the library's summary plus the run-edge fields `t0_ns`,
//! `guard` and `restarts`.
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use super::freq::FreqReport;
use super::restart::Restart;
use anyhow::{Context, Result};
use scx_tt::accounting::{Accounting, Summary, TableSwitch};
use scx_tt::sched::guard::Guard;
use serde::Serialize;
use std::path::Path;

/// `--summary-json`: `t0_ns`, the summary's fields, then `guard` and `restarts`
/// (docs/run-output.md).
#[derive(Serialize)]
struct SummaryJson<'a> {
    /// CLOCK_MONOTONIC ns at which slot 0 started: the slot grid (`t0_ns + k * slot`) the
    /// records and the trace count on, for aligning other clocks' events with them.
    t0_ns: u64,
    #[serde(flatten)]
    summary: &'a Summary,
    /// The guard band and where it came from (`--guard-us` or the start-up calibration).
    guard: &'a Guard,
    /// Restarts of the BPF scheduler the kernel asked for (CPU hotplug), 0 without.
    restarts: usize,
    /// Planner mode: the frequency backend and, for cpufreq, its writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    freq: Option<&'a FreqReport>,
}

/// The summary JSON text (pretty, newline-terminated).
/// The table switches written so far, for the summary (and the statistics).
pub fn table_switches(control: &scx_tt::control::Control) -> Vec<TableSwitch> {
    control
        .history()
        .iter()
        .map(|s| TableSwitch {
            slot: s.at_slot,
            table: s.table.clone(),
        })
        .collect()
}

pub fn summary_json(
    t0_ns: u64,
    summary: &Summary,
    guard: &Guard,
    restarts: usize,
    freq: Option<&FreqReport>,
) -> Result<String> {
    let json = SummaryJson {
        t0_ns,
        summary,
        guard,
        restarts,
        freq,
    };
    Ok(serde_json::to_string_pretty(&json).context("encoding the summary")? + "\n")
}

pub fn write_summary_json(
    path: &Path,
    t0_ns: u64,
    summary: &Summary,
    guard: &Guard,
    restarts: usize,
    freq: Option<&FreqReport>,
) -> Result<()> {
    std::fs::write(path, summary_json(t0_ns, summary, guard, restarts, freq)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// After the summary: the guard band of the run (and the warning when the cap was chosen).
pub fn print_guard(guard: &Guard) {
    println!("{}", guard.describe());
    if let Some(w) = guard.warning() {
        println!("{w}");
    }
}

/// The slots the timeline shows: (first, last) of the last N slots kept.
fn timeline_span(acc: &Accounting, managed: &[u32]) -> Option<(u64, u64)> {
    let last = managed
        .iter()
        .filter_map(|&cpu| acc.timeline(cpu)?.last().map(|c| c.0))
        .max()?;
    Some(((last + 1).saturating_sub(acc.timeline_slots() as u64), last))
}

/// " (timeline column N)" when `slot` is in the timeline's span.
fn column(span: Option<(u64, u64)>, slot: u64) -> String {
    match span {
        Some((first, last)) if (first..=last).contains(&slot) => {
            format!(" (timeline column {})", slot - first + 1)
        }
        _ => String::new(),
    }
}

/// After the summary: the table switches of the run, and where one falls in the timeline.
pub fn print_switches(switches: &[TableSwitch], acc: &Accounting, managed: &[u32]) {
    if switches.is_empty() {
        return;
    }
    let span = timeline_span(acc, managed);
    println!("table switches (each slot's record carries the owner of the table in force):");
    for s in switches {
        println!(
            "  from slot {}: {}{}",
            s.slot,
            s.table,
            column(span, s.slot)
        );
    }
}

/// After the summary: the restarts of the BPF scheduler (nothing without one).
pub fn print_restarts(log: &[Restart], acc: &Accounting, managed: &[u32]) {
    if log.is_empty() {
        return;
    }
    let span = timeline_span(acc, managed);
    println!("scheduler restarts (asked for by the kernel; no slot records in between):");
    for (i, r) in log.iter().enumerate() {
        println!(
            "  {}: {}; enforcing again from slot {}{}",
            i + 1,
            r.reason,
            r.from_slot,
            column(span, r.from_slot)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scx_tt::accounting::{ExitReason, RunFacts};
    use std::collections::BTreeMap;

    fn summary() -> Summary {
        let acc = Accounting::new(10_000_000, Vec::new(), &[1], 0);
        acc.summary(&RunFacts {
            duration_ns: 1_000,
            exit: ExitReason::Duration,
            tids: Vec::new(),
            states: Vec::new(),
            task_counters: Vec::new(),
            cpu_counters: BTreeMap::new(),
            prog_stats: Vec::new(),
        })
        .with_planner_late_slots(Some(3))
    }

    #[test]
    fn the_summary_json_is_t0_then_the_library_summary_then_guard_and_restarts() {
        let s = summary();
        let text = summary_json(7, &s, &Guard::flag(300), 2, None).expect("json");
        let library = serde_json::to_string_pretty(&s).expect("json");
        // the same text, with t0_ns first, then guard and restarts last
        let body = library
            .strip_prefix("{\n")
            .and_then(|b| b.strip_suffix("\n}"))
            .expect("braces");
        let guard = "  \"guard\": {\n    \"us\": 300,\n    \"source\": \"flag\",\n    \
                     \"bound_us\": null,\n    \"wanted_us\": null,\n    \"capped\": false,\n    \
                     \"calibration\": null\n  }";
        assert_eq!(
            text,
            format!("{{\n  \"t0_ns\": 7,\n{body},\n{guard},\n  \"restarts\": 2\n}}\n")
        );
    }

    #[test]
    fn a_restart_in_the_timeline_span_names_its_column() {
        assert_eq!(column(Some((10, 19)), 12), " (timeline column 3)");
        assert_eq!(column(Some((10, 19)), 20), "");
        assert_eq!(column(None, 12), "");
    }
}

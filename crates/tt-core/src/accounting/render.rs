//! Human-readable output: the exit summary, the per-slot timeline, the lateness histogram and
//! the one-line periodic stats.

use super::{Accounting, Cell, CpuSummary, FreqShare, HistBucket, Summary};
use crate::plan::Class;
use std::fmt::Write;

/// One letter per task: the first letter of its name if free, else the next free letter;
/// uppercase for tt, lowercase for be.
pub fn task_letters(acc: &Accounting) -> Vec<char> {
    let mut used = Vec::new();
    acc.tasks()
        .iter()
        .map(|t| {
            let first = t
                .name
                .chars()
                .find(|c| c.is_ascii_alphabetic())
                .map(|c| c.to_ascii_uppercase());
            let letter = first
                .filter(|c| !used.contains(c))
                .or_else(|| ('A'..='Z').find(|c| !used.contains(c)))
                .unwrap_or('?');
            used.push(letter);
            match t.class {
                Class::Tt => letter,
                Class::Be | Class::Adaptive => letter.to_ascii_lowercase(),
            }
        })
        .collect()
}

fn cell_char(cell: Cell, letters: &[char]) -> char {
    match cell {
        Cell::Idle => '.',
        Cell::Stolen => '*',
        Cell::Task(t) => letters.get(t).copied().unwrap_or('?'),
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1e3
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |p| format!("{p:.1}%"))
}

fn render_hist(out: &mut String, cpu: u32, hist: &[HistBucket]) {
    let total: u64 = hist.iter().map(|b| b.count).sum();
    let _ = writeln!(out, "lateness histogram cpu {cpu} ({total} ticks):");
    let widest = hist.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let mut lower = 0u64;
    for b in hist {
        if b.count > 0 {
            let label = match b.le_ns {
                None => format!("> {:>8.0} us", lower as f64 / 1e3),
                Some(le) => format!("<= {:>7.0} us", le as f64 / 1e3),
            };
            let bar = "#".repeat(((b.count * 40).div_ceil(widest)) as usize);
            let _ = writeln!(out, "  {label} {:>7} {bar}", b.count);
        }
        lower = b.le_ns.unwrap_or(lower);
    }
}

/// `bpf counters cpu N: ticks 990 tick_cost_ns ... timer_errors 0`: every BPF counter of the
/// CPU; then, when its slot clock broke, an `error:` line naming the counters.
fn render_counters(out: &mut String, c: &CpuSummary) {
    let all: Vec<String> = c
        .bpf_counters
        .named()
        .iter()
        .map(|(name, v)| format!("{name} {v}"))
        .collect();
    let _ = writeln!(out, "bpf counters cpu {}: {}", c.cpu, all.join(" "));
    let faults = c.bpf_counters.clock_faults();
    if !faults.is_empty() {
        let named: Vec<String> = faults.iter().map(|(n, v)| format!("{n} {v}")).collect();
        let _ = writeln!(
            out,
            "error: cpu {}: the slot clock broke ({}); the BPF scheduler exited, see its exit \
             message",
            c.cpu,
            named.join(", ")
        );
    }
}

/// A hint when more than 1 % of a CPU's guard-band events came after the boundary they guard:
/// each of those let the ending owner run into the next slot (src/bpf/tt_sched.bpf.c, B.2f).
pub fn guard_hint(c: &CpuSummary) -> Option<String> {
    if c.guard_late == 0 || c.guard_late * 100 <= c.guard_events {
        return None;
    }
    Some(format!(
        "hint: cpu {}: {} of {} guard-band events came after their boundary (tick lateness p99 \
         {:.0} us); owners ran into the next slot until then. A --guard-us above the platform's \
         timer lateness keeps them inside their slots.",
        c.cpu,
        c.guard_late,
        c.guard_events,
        us(c.late_ns.p99)
    ))
}

/// The exit summary printed on stdout, starting with `=== scx_tt summary ===`.
pub fn render_summary(acc: &Accounting, s: &Summary) -> String {
    let mut out = String::new();
    render_run_line(&mut out, s);
    render_task_table(&mut out, s);
    render_cpu_table(&mut out, s);
    for c in &s.cpus {
        if let Some(hint) = guard_hint(c) {
            let _ = writeln!(out, "{hint}");
        }
    }
    for c in &s.cpus {
        render_counters(&mut out, c);
    }
    for p in &s.bpf_prog_stats {
        let _ = writeln!(
            out,
            "bpf_stats {:<16} {:>10} runs {:>8} ns/run",
            p.name, p.run_cnt, p.ns_per_run
        );
    }
    render_planner_lines(&mut out, s);
    render_energy(&mut out, s);
    render_timeline(&mut out, acc, s);
    for c in &s.cpus {
        render_hist(&mut out, c.cpu, &c.late_hist);
    }
    out
}

/// The title and the run line: duration, slot length and how the run ended.
fn render_run_line(out: &mut String, s: &Summary) {
    let exit = serde_json::to_value(s.exit)
        .ok()
        .and_then(|v| v.as_str().map(String::from));
    let _ = writeln!(out, "=== scx_tt summary ===");
    let _ = writeln!(
        out,
        "run {:.2} s, slot {} us, exit: {}",
        s.duration_ns as f64 / 1e9,
        s.slot_us,
        exit.unwrap_or_default()
    );
}

/// The task table: plan, delivery, time outside the slots and jobs done per task.
fn render_task_table(out: &mut String, s: &Summary) {
    let _ = writeln!(
        out,
        "{:<12} {:<8} {:>4} {:<9} {:>11} {:>13} {:>7} {:>11} {:>8} {:>10} {:>9}",
        "task",
        "class",
        "cpu",
        "state",
        "planned_ms",
        "delivered_ms",
        "deliv",
        "outside_ms",
        "outside",
        "run_ms",
        "jobs_done"
    );
    for t in &s.tasks {
        let class = t.class.name();
        let state = serde_json::to_value(t.state)
            .ok()
            .and_then(|v| v.as_str().map(String::from));
        let _ = writeln!(
            out,
            "{:<12} {:<8} {:>4} {:<9} {:>11.1} {:>13.1} {:>7} {:>11.1} {:>8} {:>10.1} {:>9}",
            t.name,
            class,
            t.cpu.map_or("any".to_string(), |c| c.to_string()),
            state.unwrap_or_default(),
            ms(t.planned_ns),
            ms(t.delivered_ns),
            pct(t.delivered_pct()),
            ms(t.outside_ns),
            pct(t.outside_pct()),
            ms(t.run_ns),
            match t.class {
                Class::Tt => t.jobs_done.to_string(),
                Class::Be | Class::Adaptive => "-".to_string(),
            }
        );
    }
}

/// The CPU table: tick lateness, stolen time, ticks' cost and guard-band events per CPU.
fn render_cpu_table(out: &mut String, s: &Summary) {
    let _ = writeln!(
        out,
        "{:>4} {:>6} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>12} {:>8} {:>19}",
        "cpu",
        "ticks",
        "late_min",
        "late_p50",
        "late_p99",
        "late_max",
        "stolen_ms",
        "kthread_ms",
        "foreign_ms",
        "be_ready_ms",
        "tick_ns",
        "guard_stop/late/all"
    );
    let _ = writeln!(
        out,
        "{:>4} {:>6} {:>9} {:>9} {:>9} {:>9}",
        "", "", "us", "us", "us", "us"
    );
    for c in &s.cpus {
        let _ = writeln!(
            out,
            "{:>4} {:>6} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>8} {:>19}",
            c.cpu,
            c.ticks,
            us(c.late_ns.min),
            us(c.late_ns.p50),
            us(c.late_ns.p99),
            us(c.late_ns.max),
            ms(c.stolen_ns),
            ms(c.kthread_ns),
            ms(c.foreign_ns),
            ms(c.be_while_tt_ready_ns),
            c.bpf_tick_ns_avg,
            format!("{}/{}/{}", c.guard_stops, c.guard_late, c.guard_events)
        );
    }
}

/// The planner's lines: late slots and writes, adaptive tasks and its observations.
fn render_planner_lines(out: &mut String, s: &Summary) {
    if let Some(late) = s.planner_late_slots {
        let _ = writeln!(
            out,
            "planner_late_slots {late} (slots the planner decided after they had started)"
        );
    }
    if let Some(w) = &s.planner_late_writes {
        let _ = writeln!(
            out,
            "planner_late_writes {} (slots decided in time whose entries were written after \
             they had started: they ran the entries before){}",
            w.slots,
            if w.first.is_empty() {
                String::new()
            } else {
                format!(
                    ": first [cpu index, slot] {:?}",
                    &w.first[..w.first.len().min(8)]
                )
            }
        );
    }
    for a in &s.adaptive {
        let _ = writeln!(out, "adaptive {}", a.text(s.slot_us.saturating_mul(1000)));
    }
    if let Some(c) = &s.planner_observations {
        let _ = writeln!(
            out,
            "planner_observations observed {} worst_case {} (owner_mismatch {}) unobserved {} \
             completed {} overruns {} misses {} lost {} ({} units) voided {} (rewritten {})",
            c.observed,
            c.worst_case,
            c.owner_mismatch,
            c.unobserved,
            c.completed,
            c.overruns,
            c.misses,
            c.lost,
            c.lost_units,
            c.voided,
            c.rewritten
        );
    }
}

/// The energy line and each CPU's frequency residency.
fn render_energy(out: &mut String, s: &Summary) {
    match &s.energy {
        Some(e) => {
            let _ = writeln!(out, "energy {e}");
        }
        None => {
            let _ = writeln!(out, "energy unavailable");
        }
    }
    for c in s.cpus.iter().filter(|c| !c.freq_residency.is_empty()) {
        let _ = writeln!(
            out,
            "freq residency cpu {}: {}",
            c.cpu,
            residency_text(&c.freq_residency)
        );
    }
}

fn render_timeline(out: &mut String, acc: &Accounting, s: &Summary) {
    let letters = task_letters(acc);
    let rows: Vec<_> = s
        .cpus
        .iter()
        .filter_map(|c| acc.timeline(c.cpu).map(|t| (c.cpu, t)))
        .collect();
    let Some(last) = rows
        .iter()
        .filter_map(|(_, cells)| cells.last().map(|c| c.0))
        .max()
    else {
        return;
    };
    let first = (last + 1).saturating_sub(acc.timeline_slots() as u64);
    let _ = writeln!(
        out,
        "timeline (one column per slot, slots {first}..={last}):"
    );
    for (cpu, cells) in &rows {
        let line: String = (first..=last)
            .map(|slot| match cells.iter().find(|c| c.0 == slot) {
                Some(&(_, cell)) => cell_char(cell, &letters),
                None => ' ',
            })
            .collect();
        let _ = writeln!(out, "  cpu {cpu:>3} |{line}|");
    }
    let legend: Vec<String> = acc
        .tasks()
        .iter()
        .zip(&letters)
        .map(|(t, l)| format!("{l}={}", t.name))
        .collect();
    let _ = writeln!(
        out,
        "  legend: {}; uppercase tt, lowercase be, '.' idle, '*' stolen/foreign, ' ' no record (tick skipped)",
        legend.join(" ")
    );
}

/// `1000MHz 25.0% 2300MHz 75.0%`.
pub fn residency_text(shares: &[FreqShare]) -> String {
    shares
        .iter()
        .map(|f| format!("{}MHz {:.1}%", f.mhz, f.fraction * 100.0))
        .collect::<Vec<_>>()
        .join(" ")
}

//! Aggregation of the kernel path's per-slot records into the run summary.
//!
//! # Problem
//! The BPF scheduler emits one record per (managed CPU, slot): who owned the slot, how long
//! the owner ran in it, what else ran (be, other tt, kthreads, foreign tasks) and how late the
//! slot tick fired. Userspace must turn that stream into per-task figures (planned vs delivered
//! slot time, time outside own slots) and per-CPU figures (lateness distribution, stolen time),
//! plus the trace lines and the timeline. This module is pure: samples and counters come in as
//! values, the summary goes out as a value; nothing here touches BPF, files or clocks.
//!
//! # Terminology
//! - *planned* time of a tt task: slot length × number of recorded slots it owns.
//! - *delivered*: ns the owner ran inside its own slots (`owner_ns`).
//! - *outside*: ns a plan task ran anywhere else (other slots, other CPUs): BPF run total minus
//!   BPF inside total, so it also covers CPUs and moments no slot record sees.
//! - *stolen* (per CPU): time inside a slot owned by a tt task used by anything but that task
//!   (be, other tt, kthreads, foreign), plus kthread/foreign/other-tt time in free slots.
//!   be work in a free slot is the plan's intent and is not stolen.
//!
//! # Properties
//! 1. (Conservation) For every CPU, Σ over slots of owner + be + other_tt + kthread + foreign
//!    ≤ slots × slot length: a record never holds more time than its slot.
//! 2. (Planned) planned_ns of a task = slot_ns × (records whose owner is the task).
//! 3. (Lateness) min ≤ p50 ≤ p99 ≤ max, and the histogram counts sum to `ticks`.

mod render;
mod stats;

pub use render::{render_stats_line, render_summary};
pub use stats::LatenessStats;

use crate::plan::Class;
use crate::trace::{SlotKind, SlotRecord};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// One (CPU, slot) record from the kernel, in domain form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotSample {
    pub slot: u64,
    pub cpu: u32,
    /// Task index of the slot's owner, `None` for a free slot.
    pub owner: Option<usize>,
    pub owner_ns: u64,
    pub be_ns: u64,
    pub other_tt_ns: u64,
    pub kthread_ns: u64,
    pub foreign_ns: u64,
    /// be was started while the owner had a runnable thread waiting (a wrong decision).
    pub be_ready_ns: u64,
    /// be kept running after the owner woke or the slot ticked, until the kick took effect.
    pub be_kick_ns: u64,
    pub late_ns: i64,
    /// The be task that ran last in the slot.
    pub be_top: Option<usize>,
    /// cpuperf target BPF requested at the slot's tick (of 1024), with a perf table.
    pub perf: Option<u32>,
}

impl SlotSample {
    /// Time anything other than the slot's planned use ran (see module doc, *stolen*).
    pub fn stolen_ns(&self) -> u64 {
        let be = if self.owner.is_some() { self.be_ns } else { 0 };
        be + self.other_tt_ns + self.kthread_ns + self.foreign_ns
    }
}

/// What the summary needs to know about a plan task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    pub name: String,
    pub class: Class,
    pub cpu: Option<u32>,
}

/// Per-task totals kept by BPF over all CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskCounters {
    pub run_ns: u64,
    /// tt: inside its own slots on its CPU; be: on a managed CPU.
    pub inside_ns: u64,
}

/// Per-CPU counters kept by BPF.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCounters {
    pub ticks: u64,
    pub tick_cost_ns: u64,
    pub late_skips: u64,
    pub rec_drops: u64,
    pub lost_ns: u64,
}

/// Whether a task's threads were found and are still alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Running,
    Exited,
    NotFound,
}

/// Why the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    Signal,
    Duration,
    TasksExited,
    /// The BPF scheduler exited on its own (error or kernel request); see the message printed.
    SchedulerExited,
}

/// The figures of one timeline cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    Idle,
    Stolen,
    Task(usize),
}

#[derive(Clone, Debug, Default)]
struct CpuAcc {
    records: u64,
    late: LatenessStats,
    stolen_ns: u64,
    kthread_ns: u64,
    foreign_ns: u64,
    be_ready_ns: u64,
    be_kick_ns: u64,
    timeline: VecDeque<(u64, Cell)>,
}

#[derive(Clone, Debug, Default)]
struct TaskAcc {
    planned_slots: u64,
    delivered_ns: u64,
}

/// Streams slot samples in and produces the summary at the end.
#[derive(Clone, Debug)]
pub struct Accounting {
    slot_ns: u64,
    tasks: Vec<TaskInfo>,
    cpus: BTreeMap<u32, CpuAcc>,
    per_task: Vec<TaskAcc>,
    timeline_slots: usize,
}

impl Accounting {
    /// `timeline_slots`: keep the last N cells per CPU for the timeline (0: none).
    pub fn new(slot_ns: u64, tasks: Vec<TaskInfo>, managed: &[u32], timeline_slots: usize) -> Self {
        let cpus = managed.iter().map(|&c| (c, CpuAcc::default())).collect();
        let per_task = vec![TaskAcc::default(); tasks.len()];
        Accounting {
            slot_ns,
            tasks,
            cpus,
            per_task,
            timeline_slots,
        }
    }

    pub fn slot_ns(&self) -> u64 {
        self.slot_ns
    }

    pub fn tasks(&self) -> &[TaskInfo] {
        &self.tasks
    }

    /// Records seen so far on `cpu`.
    pub fn records(&self, cpu: u32) -> u64 {
        self.cpus.get(&cpu).map_or(0, |c| c.records)
    }

    pub fn add(&mut self, s: &SlotSample) {
        let timeline_slots = self.timeline_slots;
        let cell = self.cell(s);
        let acc = self.cpus.entry(s.cpu).or_default();
        acc.records += 1;
        acc.late.add(s.late_ns);
        acc.stolen_ns += s.stolen_ns();
        acc.kthread_ns += s.kthread_ns;
        acc.foreign_ns += s.foreign_ns;
        acc.be_ready_ns += s.be_ready_ns;
        acc.be_kick_ns += s.be_kick_ns;
        if timeline_slots > 0 {
            if acc.timeline.len() == timeline_slots {
                acc.timeline.pop_front();
            }
            acc.timeline.push_back((s.slot, cell));
        }
        if let Some(t) = s.owner.and_then(|o| self.per_task.get_mut(o)) {
            t.planned_slots += 1;
            t.delivered_ns += s.owner_ns;
        }
    }

    /// What mostly happened in the slot: the owner, a be task, stolen time or idle.
    pub fn cell(&self, s: &SlotSample) -> Cell {
        let stolen = s.other_tt_ns + s.kthread_ns + s.foreign_ns;
        let busy = s.owner_ns + s.be_ns + stolen;
        let idle = self.slot_ns.saturating_sub(busy);
        let candidates = [
            (s.owner_ns, s.owner.map(Cell::Task)),
            (s.be_ns, s.be_top.map(Cell::Task)),
            (stolen, Some(Cell::Stolen)),
            (idle, Some(Cell::Idle)),
        ];
        candidates
            .iter()
            .filter_map(|&(ns, c)| c.filter(|_| ns > 0).map(|c| (ns, c)))
            .fold(None, |best: Option<(u64, Cell)>, (ns, c)| match best {
                Some((b, _)) if b >= ns => best,
                _ => Some((ns, c)),
            })
            .map_or(Cell::Idle, |(_, c)| c)
    }

    /// The trace line of a sample (docs/trace-format.md).
    pub fn trace_record(&self, s: &SlotSample) -> SlotRecord {
        let owner = s.owner.and_then(|o| self.tasks.get(o));
        let (kind, task) = match owner {
            Some(t) => (SlotKind::Tt, Some(t.name.clone())),
            None => match s.be_top.and_then(|b| self.tasks.get(b)) {
                Some(b) if s.be_ns > 0 => (SlotKind::Be, Some(b.name.clone())),
                _ => (SlotKind::Idle, None),
            },
        };
        let ran_ns = if owner.is_some() { s.owner_ns } else { s.be_ns };
        SlotRecord {
            slot: s.slot,
            cpu: s.cpu,
            kind,
            task,
            freq: s.perf.map_or(1.0, |p| p as f64 / 1024.0),
            idle_until: None,
            ran_ns: Some(ran_ns),
            stolen_ns: Some(s.stolen_ns()),
            late_ns: Some(s.late_ns),
        }
    }

    /// The timeline cells kept for `cpu`, oldest first, with their slot numbers (slots whose
    /// tick was skipped have no cell).
    pub fn timeline(&self, cpu: u32) -> Option<Vec<(u64, Cell)>> {
        Some(self.cpus.get(&cpu)?.timeline.iter().copied().collect())
    }

    /// Timeline slots kept per CPU.
    pub fn timeline_slots(&self) -> usize {
        self.timeline_slots
    }

    /// The summary at the end of the run. `tasks[i]` of `run` describes `self.tasks[i]`.
    pub fn summary(&self, run: &RunFacts) -> Summary {
        let tasks = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, info)| {
                let counters = run.task_counters.get(i).copied().unwrap_or_default();
                let acc = &self.per_task[i];
                let (planned_ns, delivered_ns) = match info.class {
                    Class::Tt => (acc.planned_slots * self.slot_ns, acc.delivered_ns),
                    Class::Be => (0, counters.inside_ns),
                };
                TaskSummary {
                    name: info.name.clone(),
                    class: info.class,
                    cpu: info.cpu,
                    tids: run.tids.get(i).cloned().unwrap_or_default(),
                    state: run.states.get(i).copied().unwrap_or(TaskState::NotFound),
                    planned_ns,
                    delivered_ns,
                    outside_ns: counters.run_ns.saturating_sub(counters.inside_ns),
                    run_ns: counters.run_ns,
                }
            })
            .collect();
        let cpus = self
            .cpus
            .iter()
            .map(|(&cpu, acc)| {
                let counters = run.cpu_counters.get(&cpu).copied().unwrap_or_default();
                CpuSummary {
                    cpu,
                    managed: true,
                    ticks: acc.records,
                    late_ns: acc.late.quantiles(),
                    late_hist: acc.late.histogram(),
                    stolen_ns: acc.stolen_ns,
                    kthread_ns: acc.kthread_ns,
                    foreign_ns: acc.foreign_ns,
                    be_while_tt_ready_ns: acc.be_ready_ns,
                    be_kick_latency_ns: acc.be_kick_ns,
                    bpf_tick_ns_avg: counters
                        .tick_cost_ns
                        .checked_div(counters.ticks)
                        .unwrap_or(0),
                    late_skips: counters.late_skips,
                    record_drops: counters.rec_drops,
                }
            })
            .collect();
        Summary {
            slot_us: self.slot_ns / 1000,
            duration_ns: run.duration_ns,
            exit: run.exit,
            tasks,
            cpus,
            bpf_prog_stats: run.prog_stats.clone(),
        }
    }
}

/// What the loader knows at the end of the run besides the slot records.
#[derive(Clone, Debug)]
pub struct RunFacts {
    pub duration_ns: u64,
    pub exit: ExitReason,
    /// Per task (plan order).
    pub tids: Vec<Vec<u32>>,
    pub states: Vec<TaskState>,
    pub task_counters: Vec<TaskCounters>,
    pub cpu_counters: BTreeMap<u32, CpuCounters>,
    /// bpf_stats of the scheduler's programs, when kernel.bpf_stats_enabled could be turned on.
    pub prog_stats: Vec<ProgStats>,
}

/// kernel.bpf_stats_enabled figures of one BPF program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProgStats {
    pub name: String,
    pub run_cnt: u64,
    pub run_time_ns: u64,
    pub ns_per_run: u64,
}

/// `--summary-json` (docs/run-output.md).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub slot_us: u64,
    pub duration_ns: u64,
    pub exit: ExitReason,
    pub tasks: Vec<TaskSummary>,
    pub cpus: Vec<CpuSummary>,
    pub bpf_prog_stats: Vec<ProgStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskSummary {
    pub name: String,
    pub class: Class,
    pub cpu: Option<u32>,
    pub tids: Vec<u32>,
    pub state: TaskState,
    pub planned_ns: u64,
    pub delivered_ns: u64,
    pub outside_ns: u64,
    pub run_ns: u64,
}

impl TaskSummary {
    /// delivered / planned in percent (tt tasks with planned time only).
    pub fn delivered_pct(&self) -> Option<f64> {
        (self.planned_ns > 0).then(|| 100.0 * self.delivered_ns as f64 / self.planned_ns as f64)
    }

    /// outside / run in percent.
    pub fn outside_pct(&self) -> Option<f64> {
        (self.run_ns > 0).then(|| 100.0 * self.outside_ns as f64 / self.run_ns as f64)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CpuSummary {
    pub cpu: u32,
    pub managed: bool,
    pub ticks: u64,
    pub late_ns: Quantiles,
    pub late_hist: Vec<HistBucket>,
    pub stolen_ns: u64,
    pub kthread_ns: u64,
    pub foreign_ns: u64,
    pub be_while_tt_ready_ns: u64,
    pub be_kick_latency_ns: u64,
    pub bpf_tick_ns_avg: u64,
    pub late_skips: u64,
    pub record_drops: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Quantiles {
    pub min: i64,
    pub p50: i64,
    pub p99: i64,
    pub max: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct HistBucket {
    /// Upper bound of the bucket (inclusive); `None` (JSON null) for the last, open bucket.
    pub le_ns: Option<u64>,
    pub count: u64,
}

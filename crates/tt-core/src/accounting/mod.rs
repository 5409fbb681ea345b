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
//! 4. (Residency) With a power model, a CPU's frequency residency sums to records × slot
//!    length: every record counts one slot at the P-state its requested frequency maps to.
//!
//! # Energy
//! Energy itself is read at the edge (`energy::meter::EnergyMeter`, RAPL or the model's
//! estimate); the summary only carries the reading, as an [`EnergySummary`] with its label.

mod render;
mod stats;

pub use render::{render_summary, residency_text};
pub use stats::LatenessStats;

use crate::energy::meter::{EnergyLabel, EnergyReading};
use crate::energy::model::PowerModel;
use crate::energy::residency::FreqResidency;
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

impl TaskInfo {
    /// The plan's tasks, in plan order (task index = position).
    pub fn of_plan(plan: &crate::plan::Plan) -> Vec<TaskInfo> {
        plan.tasks
            .iter()
            .map(|t| TaskInfo {
                name: t.name.clone(),
                class: t.class,
                cpu: t.cpu,
            })
            .collect()
    }
}

/// Per-task totals kept by BPF over all CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskCounters {
    pub run_ns: u64,
    /// tt: inside its own slots on its CPU; be: on a managed CPU.
    pub inside_ns: u64,
    /// tt: jobs completed early by the task's completion rule (`yield` or `block`).
    pub jobs_done: u64,
    /// tt, `yield`: of `jobs_done`, the jobs that ended in the next job's slots (they overran;
    /// their yield did not end the next job).
    pub jobs_carried: u64,
    /// tt: ran in another owner's unused slot of its CPU (`server: crps`).
    pub reclaimed_ns: u64,
}

/// Declares [`CpuCounters`] from one field list: the struct, its `named()` list and its sum
/// (a restart carries the counters of the schedulers that already exited), so a counter added
/// to `intf.h` is added in one place here.
macro_rules! bpf_cpu_counters {
    ($(#[$sm:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident: u64,)* }) => {
        $(#[$sm])*
        pub struct $name {
            $($(#[$fm])* pub $f: u64,)*
        }

        impl $name {
            /// Every counter with its `intf.h` name, in the struct's order.
            pub fn named(&self) -> [(&'static str, u64); [$(stringify!($f)),*].len()] {
                [$((stringify!($f), self.$f)),*]
            }
        }

        impl std::ops::Add for $name {
            type Output = $name;
            /// Counter by counter (saturating).
            fn add(self, other: $name) -> $name {
                $name {
                    $($f: self.$f.saturating_add(other.$f),)*
                }
            }
        }
    };
}

bpf_cpu_counters! {
/// Per-CPU counters kept by BPF: `struct tt_cpu_stats` of src/bpf/intf.h, field for field and
/// under the same names (the loader fills it exhaustively; the summary carries it whole as
/// `cpus[].bpf_counters`, docs/run-output.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuCounters {
    /// Slot timer callbacks (boundary ticks; guard-band events count in `stop_events`).
    pub ticks: u64,
    /// Time spent inside the slot timer callbacks.
    pub tick_cost_ns: u64,
    /// Callbacks so late that whole slots were skipped (they have no record).
    pub late_skips: u64,
    /// This CPU's slot timer callback ran on another CPU (the scheduler exits: B.4).
    pub pin_mismatch: u64,
    /// Slot records lost because the ring buffer was full.
    pub rec_drops: u64,
    /// Run time that could not be attributed to a slot record.
    pub lost_ns: u64,
    /// Guard-band events (one before each boundary that ends an owner's run).
    pub stop_events: u64,
    /// Guard-band events that fired after the boundary (too late to stop anything).
    pub stop_late: u64,
    /// Guard-band events that found the ending owner running and preempted it.
    pub stop_kicks: u64,
    /// Time spent inside the in-time guard-band callbacks.
    pub stop_cost_ns: u64,
    /// `bpf_timer_start` refused to (re-)arm this CPU's slot timer (the scheduler exits: B.4).
    pub timer_errors: u64,
    /// A higher scheduling class (stopper, deadline, RT) took this CPU from sched_ext; the
    /// tasks its local queue held went back to ops.enqueue, so dispatch decides again when
    /// the CPU returns (src/bpf/tt_sched.bpf.c, C).
    pub releases: u64,
    /// DPM idle periods whose slot ticks were deferred to one wake (planner mode under dpm,
    /// src/bpf/tt_sched.bpf.c K), the slots those deferrals skipped (their records closed at
    /// the wake), and deferrals cut short by an admission (the planner kicked the CPU).
    pub dpm_defers: u64,
    pub dpm_slots: u64,
    pub dpm_shortened: u64,
    /// Foreign tasks that started on this managed CPU without being routed there (the kernel
    /// kept one where it ran: priority inheritance into the RT class and back, on PREEMPT_RT)
    /// and were sent to the housekeeping CPUs at once, and their run time here until they left
    /// (part of the records' `foreign_ns`; src/bpf/tt_sched.bpf.c, D).
    pub evictions: u64,
    pub evicted_ns: u64,
    /// Dispatches on this CPU, while it ran no sched_ext task, that queued nothing because a
    /// task of a higher class was runnable there and would run first: sched_ext gives no
    /// cpu_release then to take back what went stale meanwhile (src/bpf/tt_sched.bpf.c, C).
    pub higher_waits: u64,
    /// Plan threads that were enqueued with migration disabled on this managed CPU, away from
    /// their own CPU (a be task of no CPU, or a thread of another CPU's task): queued as this
    /// CPU's be work, so that they run only when be work may, never over a waiting owner
    /// (src/bpf/tt_sched.bpf.c, C "Exiting and migration-disabled tasks"). Frequent on
    /// PREEMPT_RT, where sleeping spinlocks disable migration.
    pub pinned_be: u64,
}
}

impl CpuCounters {
    /// The invariant counters that are not 0: the CPU's slot clock broke (`pin_mismatch`,
    /// `timer_errors`), which ended the scheduler (src/bpf/tt_sched.bpf.c, B.4).
    pub fn clock_faults(&self) -> Vec<(&'static str, u64)> {
        [
            ("pin_mismatch", self.pin_mismatch),
            ("timer_errors", self.timer_errors),
        ]
        .into_iter()
        .filter(|&(_, v)| v > 0)
        .collect()
    }
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
    residency: FreqResidency,
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
    /// Maps a slot's requested frequency to a P-state for the residency (none: no residency).
    model: Option<PowerModel>,
    /// The adaptive tasks as the run last saw them ([`Self::set_adaptive`]).
    adaptive: Vec<crate::adaptive::AdaptiveView>,
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
            model: None,
            adaptive: Vec::new(),
        }
    }

    /// The adaptive tasks' inferred periods, reservations and states now (planner mode; the
    /// run sets them every sampling period and at the end): [`Summary::adaptive`].
    pub fn set_adaptive(&mut self, views: Vec<crate::adaptive::AdaptiveView>) {
        self.adaptive = views;
    }

    /// Keep a frequency residency per CPU: each record's requested frequency (1.0 without a
    /// perf table) at the P-state of `model` it maps to (the lowest at or above it). CPUs the
    /// model does not describe get none.
    pub fn with_power_model(mut self, model: PowerModel) -> Self {
        self.model = Some(model);
        self
    }

    pub fn slot_ns(&self) -> u64 {
        self.slot_ns
    }

    pub fn tasks(&self) -> &[TaskInfo] {
        &self.tasks
    }

    /// A task admitted at run time (`scx_tt ctl admit`): the next task index, as in BPF.
    pub fn add_task(&mut self, t: TaskInfo) -> usize {
        self.tasks.push(t);
        self.per_task.push(TaskAcc::default());
        self.tasks.len() - 1
    }

    /// Records seen so far on `cpu`.
    pub fn records(&self, cpu: u32) -> u64 {
        self.cpus.get(&cpu).map_or(0, |c| c.records)
    }

    pub fn add(&mut self, s: &SlotSample) {
        let timeline_slots = self.timeline_slots;
        let cell = self.cell(s);
        let mhz = self.model.as_ref().and_then(|m| {
            let cluster = m.cluster_of(s.cpu)?;
            Some(cluster.pstate_for(sample_freq(s)).mhz)
        });
        let slot_s = self.slot_ns as f64 * 1e-9;
        let acc = self.cpus.entry(s.cpu).or_default();
        if let Some(mhz) = mhz {
            acc.residency.add(mhz, slot_s);
        }
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
            freq: sample_freq(s),
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
                    Class::Be | Class::Adaptive => (0, counters.inside_ns),
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
                    jobs_done: counters.jobs_done,
                    jobs_carried: counters.jobs_carried,
                    reclaimed_ns: counters.reclaimed_ns,
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
                    guard_events: counters.stop_events,
                    guard_late: counters.stop_late,
                    guard_stops: counters.stop_kicks,
                    record_drops: counters.rec_drops,
                    freq_residency: freq_shares(&acc.residency),
                    bpf_counters: counters,
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
            energy: None,
            table_switches: Vec::new(),
            planner_late_slots: None,
            planner_late_writes: None,
            planner_observations: None,
            adaptive: self.adaptive.clone(),
        }
    }
}

/// The normalised frequency a sample's tick requested (1.0 when it requested none).
fn sample_freq(s: &SlotSample) -> f64 {
    s.perf
        .map_or(1.0, |p| f64::from(p) / f64::from(crate::abi::PERF_ONE))
}

fn freq_shares(r: &FreqResidency) -> Vec<FreqShare> {
    r.fractions()
        .into_iter()
        .map(|(mhz, fraction)| FreqShare {
            mhz,
            seconds: r.seconds_at(mhz),
            fraction,
        })
        .collect()
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
    /// Energy since the start, measured or estimated (null when no reading could be made).
    pub energy: Option<EnergySummary>,
    /// Tables switched to while running (`--control`, docs/control.md), in order.
    pub table_switches: Vec<TableSwitch>,
    /// Planner mode (`--planner`): slots the planner thread decided only after they had
    /// started (stepped, not written; docs/planner.md). Absent without `--planner`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planner_late_slots: Option<u64>,
    /// Planner mode: entries decided in time but written after their slot had started (the
    /// slot ran the entry before; BPF keeps its tick's owner and target). Absent without
    /// `--planner`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planner_late_writes: Option<crate::planner::late_writes::LateWrites>,
    /// Planner mode with the loop closed: what the planner learned from BPF's per-slot
    /// observations (docs/planner.md, "Observations: the closed loop"). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planner_observations: Option<crate::planner::kernel_path::LoopCounts>,
    /// Planner mode: each adaptive task's state, last inferred period and reservation
    /// (docs/adaptive.md). Absent without adaptive tasks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub adaptive: Vec<crate::adaptive::AdaptiveView>,
}

/// A table switch: from `slot` on, every managed CPU followed the plan loaded from `table`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableSwitch {
    pub slot: u64,
    pub table: String,
}

impl Summary {
    pub fn with_energy(mut self, energy: Option<EnergySummary>) -> Self {
        self.energy = energy;
        self
    }

    pub fn with_table_switches(mut self, switches: Vec<TableSwitch>) -> Self {
        self.table_switches = switches;
        self
    }

    pub fn with_planner_late_slots(mut self, late: Option<u64>) -> Self {
        self.planner_late_slots = late;
        self
    }

    pub fn with_planner_late_writes(
        mut self,
        late: Option<crate::planner::late_writes::LateWrites>,
    ) -> Self {
        self.planner_late_writes = late;
        self
    }

    pub fn with_planner_loop(
        mut self,
        counts: Option<crate::planner::kernel_path::LoopCounts>,
    ) -> Self {
        self.planner_observations = counts;
        self
    }
}

/// Where an energy figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergyKind {
    /// powercap RAPL counters.
    Measured,
    /// The power model applied to the slot records.
    Estimated,
}

/// An energy reading in the summary: `12.345 J (estimated: model xeon-gold-5218)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnergySummary {
    pub joules: f64,
    pub label: EnergyKind,
    /// The RAPL zones (`RAPL package-0+package-1`) or the model (`model xeon-gold-5218`).
    pub source: String,
    /// An estimate's parts per policy segment (planner mode; a policy swap starts a segment):
    /// they add up to `joules`. Empty for a measured figure (RAPL reads the package over the
    /// run) and outside planner mode.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<EnergySegment>,
}

/// The estimate of the slots run under one policy (`from_slot` up to the next segment).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnergySegment {
    pub policy: String,
    pub from_slot: u64,
    /// The idle rule the segment was priced with (`shallowest`, `deepest`, `deepest_per_slot`:
    /// docs/energy.md).
    pub idle: String,
    pub joules: f64,
}

impl From<&EnergyReading> for EnergySummary {
    fn from(r: &EnergyReading) -> Self {
        let (label, source) = match &r.label {
            EnergyLabel::Measured { zones } => {
                (EnergyKind::Measured, format!("RAPL {}", zones.join("+")))
            }
            EnergyLabel::Estimated { model } => (EnergyKind::Estimated, format!("model {model}")),
        };
        EnergySummary {
            joules: r.joules,
            label,
            source,
            segments: Vec::new(),
        }
    }
}

impl std::fmt::Display for EnergySummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let label = match self.label {
            EnergyKind::Measured => "measured",
            EnergyKind::Estimated => "estimated",
        };
        write!(f, "{:.3} J ({label}: {})", self.joules, self.source)?;
        if !self.segments.is_empty() {
            let parts: Vec<String> = self
                .segments
                .iter()
                .map(|g| {
                    format!(
                        "{} from slot {} {:.3} J (idle {})",
                        g.policy, g.from_slot, g.joules, g.idle
                    )
                })
                .collect();
            write!(f, " [{}]", parts.join(", "))?;
        }
        Ok(())
    }
}

/// Time a CPU's records spent at one P-state.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FreqShare {
    pub mhz: u32,
    pub seconds: f64,
    /// Share of the CPU's recorded time.
    pub fraction: f64,
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
    /// tt: jobs that ended early by the task's completion rule (docs/run-output.md).
    pub jobs_done: u64,
    /// tt, `yield`: of `jobs_done`, the jobs that ended in the next job's slots
    /// (docs/plan-format.md, `completion`).
    pub jobs_carried: u64,
    /// tt: ns it ran in another owner's unused slots of its CPU (`server: crps`); part of
    /// `outside_ns`.
    pub reclaimed_ns: u64,
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
    /// Guard-band events: one guard_ns before each boundary that ends an owner's run.
    pub guard_events: u64,
    /// Of those, how many fired after the boundary they guard (too late to stop the owner).
    pub guard_late: u64,
    /// Of those, how many found the ending owner running and stopped it (docs/run-output.md).
    pub guard_stops: u64,
    pub record_drops: u64,
    /// Per P-state of the power model, by ascending MHz (empty without a model).
    pub freq_residency: Vec<FreqShare>,
    /// Every counter BPF keeps for the CPU, raw (`struct tt_cpu_stats`); the fields above that
    /// come from counters (late_skips, guard_*, record_drops, bpf_tick_ns_avg) repeat or derive
    /// some of them under their summary names.
    pub bpf_counters: CpuCounters,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::model;

    const SLOT: u64 = 10_000_000; // 10 ms

    fn xeon() -> PowerModel {
        model::from_str(include_str!("../../../../models/xeon-gold-5218.json"))
            .expect("bundled model")
    }

    fn acc() -> Accounting {
        let tasks = vec![TaskInfo {
            name: "spin-a".into(),
            class: Class::Tt,
            cpu: Some(1),
        }];
        Accounting::new(SLOT, tasks, &[1], 0)
    }

    fn sample(slot: u64, cpu: u32, perf: Option<u32>) -> SlotSample {
        SlotSample {
            slot,
            cpu,
            owner: Some(0),
            owner_ns: SLOT,
            perf,
            ..Default::default()
        }
    }

    fn facts() -> RunFacts {
        RunFacts {
            duration_ns: 4 * SLOT,
            exit: ExitReason::Duration,
            tids: vec![vec![10]],
            states: vec![TaskState::Running],
            task_counters: Vec::new(),
            cpu_counters: BTreeMap::new(),
            prog_stats: Vec::new(),
        }
    }

    #[test]
    fn residency_counts_each_record_at_the_pstate_of_its_requested_frequency() {
        let mut a = acc().with_power_model(xeon());
        // Xeon: 1.0-2.3 GHz in 100 MHz steps; the P-state is the lowest at or above f × 2300.
        // 512/1024 = 0.5 → 1150 → 1200 MHz; 1024 and no request → 2300; 256 → 575 → 1000.
        a.add(&sample(0, 1, Some(512)));
        a.add(&sample(1, 1, Some(1024)));
        a.add(&sample(2, 1, None));
        a.add(&sample(3, 1, Some(256)));
        let s = a.summary(&facts());
        let r = &s.cpus[0].freq_residency;
        let got: Vec<(u32, f64)> = r.iter().map(|f| (f.mhz, f.fraction)).collect();
        assert_eq!(got, vec![(1000, 0.25), (1200, 0.25), (2300, 0.5)]);
        // Property 4: 4 records × 10 ms.
        let total: f64 = r.iter().map(|f| f.seconds).sum();
        assert!((total - 0.04).abs() < 1e-12, "{total}");
    }

    #[test]
    fn without_a_model_or_outside_it_there_is_no_residency() {
        let mut a = acc();
        a.add(&sample(0, 1, Some(512)));
        assert!(a.summary(&facts()).cpus[0].freq_residency.is_empty());
        // The Xeon model describes CPUs 0-15.
        let mut b = Accounting::new(SLOT, Vec::new(), &[99], 0).with_power_model(xeon());
        b.add(&sample(0, 99, Some(512)));
        assert!(b.summary(&facts()).cpus[0].freq_residency.is_empty());
    }

    #[test]
    fn energy_is_in_the_json_text_and_stats_line_with_its_label() {
        let mut a = acc().with_power_model(xeon());
        a.add(&sample(0, 1, None));
        let reading = EnergyReading {
            joules: 1.5,
            label: EnergyLabel::Estimated {
                model: "xeon-gold-5218".into(),
            },
        };
        let s = a
            .summary(&facts())
            .with_energy(Some(EnergySummary::from(&reading)));
        let json = serde_json::to_value(&s).expect("json");
        assert_eq!(
            json["energy"],
            serde_json::json!({"joules": 1.5, "label": "estimated", "source": "model xeon-gold-5218"})
        );
        assert_eq!(
            json["cpus"][0]["freq_residency"],
            serde_json::json!([{"mhz": 2300, "seconds": 0.01, "fraction": 1.0}])
        );
        let text = render::render_summary(&a, &s);
        assert!(
            text.contains("energy 1.500 J (estimated: model xeon-gold-5218)\n"),
            "{text}"
        );
        assert!(
            text.contains("freq residency cpu 1: 2300MHz 100.0%\n"),
            "{text}"
        );
        // the stats line of the same summary: src/metrics.rs tests (the edge)
    }

    #[test]
    fn measured_energy_names_its_rapl_zones_and_missing_energy_says_so() {
        let reading = EnergyReading {
            joules: 20.0,
            label: EnergyLabel::Measured {
                zones: vec!["package-0".into(), "package-1".into()],
            },
        };
        let e = EnergySummary::from(&reading);
        assert_eq!(e.label, EnergyKind::Measured);
        assert_eq!(
            e.to_string(),
            "20.000 J (measured: RAPL package-0+package-1)"
        );
        let a = acc();
        let s = a.summary(&facts());
        assert_eq!(
            serde_json::to_value(&s).expect("json")["energy"],
            serde_json::Value::Null
        );
        assert!(render::render_summary(&a, &s).contains("energy unavailable\n"));
    }

    #[test]
    fn cpu_counters_add_counter_by_counter_and_saturate() {
        let mut a = CpuCounters::default();
        let mut b = CpuCounters::default();
        // distinct values per counter, so a field summed into another one shows
        for (i, (name, _)) in CpuCounters::default().named().iter().enumerate() {
            let i = i as u64;
            match *name {
                "ticks" => (a.ticks, b.ticks) = (i, 100 * i),
                "timer_errors" => (a.timer_errors, b.timer_errors) = (i, 100 * i),
                _ => {}
            }
        }
        a.lost_ns = u64::MAX - 1;
        b.lost_ns = 5;
        let sum = a + b;
        for ((name, x), ((_, y), (_, z))) in sum.named().iter().zip(a.named().iter().zip(b.named()))
        {
            let want = y.saturating_add(z);
            assert_eq!(*x, want, "{name}");
        }
        assert_eq!(sum.lost_ns, u64::MAX, "saturates");
        assert_eq!(sum.ticks, 101 * a.ticks);
        assert_eq!(
            CpuCounters::default().named().len(),
            19,
            "every field of tt_cpu_stats"
        );
    }
}

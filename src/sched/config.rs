//! What the BPF scheduler is loaded with, derived from a validated plan. Pure: no BPF here,
//! so the translation is tested without root or the `bpf` feature.

use crate::plan::limits::table_entries;
use crate::plan::{Class, Completion, LocalSched, Plan, ServerDesign, Start, ThreadSelector};
use crate::planner::interface::Scheduler as LocalScheduler;
use crate::planner::offline::Job;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use thiserror::Error;

use crate::abi::{self, MAX_CPUS, MAX_TABLE_ENTRIES, MAX_TASKS, NO_TASK};

#[derive(Debug, Error, PartialEq)]
pub enum ConfigError {
    #[error("cpu {0} is not below the scheduler's limit of {MAX_CPUS} CPUs")]
    CpuTooLarge(u32),
    #[error("the plan has {0} tasks; the scheduler supports at most {MAX_TASKS}")]
    TooManyTasks(usize),
    #[error("the table of {cpus} CPUs x {frame} slots x 2 buffers exceeds the BPF array limit")]
    TableTooLarge { cpus: usize, frame: u64 },
    #[error(
        "guard band {guard_us} us must be shorter than the slot ({slot_us} us): give a smaller \
         --guard-us, or leave it out to have it calibrated at start"
    )]
    GuardTooLong { guard_us: u64, slot_us: u64 },
    #[error("perf table: cpu {0} is not a managed CPU of the plan")]
    PerfCpu(u32),
    #[error("perf table: cpu {cpu} has {got} entries, the frame has {frame} slots")]
    PerfLength { cpu: u32, got: usize, frame: u64 },
    #[error("perf table: cpu {cpu} slot {slot}: {value} is not a normalised frequency in (0, 1]")]
    PerfValue { cpu: u32, slot: usize, value: f64 },
    #[error("perf table: at {path}: {msg}")]
    PerfSyntax { path: String, msg: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    pub slot_ns: u64,
    pub guard_ns: u64,
    pub frame_slots: u64,
    pub managed: Vec<u32>,
    /// Every other CPU of the machine: the plan's housekeeping CPUs and CPUs it does not name.
    pub housekeeping: Vec<u32>,
    /// Per plan task: class and CPU (`None`: a be task for any managed CPU).
    pub tasks: Vec<(Class, Option<u32>)>,
    /// Per plan task: how its jobs end early (`Completion::None` for be tasks).
    pub completion: Vec<Completion>,
    /// `managed.len() * frame_slots` entries: the owning task index of each slot, or NO_TASK
    /// (no flags: the owners; [`SchedConfig::entries`] is what the BPF table holds).
    pub table: Vec<u32>,
    /// Same layout as `table`: the slot is the first of a job of its owner (a job split over
    /// several ranges of the plan's table is flagged at its first slot only).
    pub job_start: Vec<bool>,
    /// Same layout as `table`: cpuperf target per slot (1..=PERF_ONE), 0 to leave it alone.
    pub perf: Option<Vec<u32>>,
    /// Planner mode: `DPM_IDLE` entries defer the slot tick over DPM idle periods
    /// (src/bpf/tt_sched.bpf.c K); `dpm_be`: be work may run in them instead (no deferral).
    pub dpm: bool,
    pub dpm_be: bool,
    /// The slot clock: `None`, the bpf_timer; `Some(prio)`, scx_tt's SCHED_FIFO helper threads
    /// at that priority (src/bpf/tt_sched.bpf.c B.5, rodata `rt_clock`).
    pub rt_clock: Option<u8>,
    /// What an owner's unused slot time becomes (rodata `server_design`).
    pub server: ServerDesign,
    /// Per plan task: its local scheduling (`None`: FIFO), for `task_local` and the threads'
    /// `period_ns` (src/bpf/tt_sched.bpf.c D).
    pub local: Vec<Option<LocalSched>>,
    /// Per plan task: its jobs as periodic `(period, offset, relative deadline)` in slots, for
    /// reclaiming (crps, src/bpf/tt_sched.bpf.c C); `None` for a be task, a task admitted at run
    /// time (it has no job until then) and a task whose jobs are not periodic.
    pub periodic: Vec<Option<Periodic>>,
}

/// A task's jobs as released at `offset + k * period`, each due `deadline` slots later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Periodic {
    pub period: u64,
    pub offset: u64,
    pub deadline: u64,
}

impl Periodic {
    /// The jobs of one task in a frame of `frame` slots (any order) as periodic, when they
    /// are: equally spaced releases covering the frame, one relative deadline.
    pub fn of_jobs(jobs: &[&Job], frame: u64) -> Option<Periodic> {
        let n = jobs.len() as u64;
        if n == 0 || !frame.is_multiple_of(n) {
            return None;
        }
        let period = frame / n;
        let mut rel: Vec<(u64, u64)> = jobs.iter().map(|j| (j.release, j.deadline)).collect();
        rel.sort_unstable();
        let (offset, first_deadline) = rel[0];
        let deadline = first_deadline.checked_sub(offset)?;
        let periodic = rel.iter().enumerate().all(|(k, &(r, d))| {
            r == offset + k as u64 * period && d.checked_sub(r) == Some(deadline)
        });
        (periodic && offset < period && deadline > 0 && deadline <= period).then_some(Periodic {
            period,
            offset,
            deadline,
        })
    }
}

/// The environment variable that turns on the BPF test seam ([`TimerFault`]).
pub const TIMER_FAULT_ENV: &str = "SCX_TT_TEST_TIMER_FAULT";

/// The BPF test seam (src/bpf/tt_sched.bpf.c, H): the first arming of managed CPU `cpu`'s slot
/// timer for a boundary at or after slot `slot` fails in the kernel, so the failure path
/// (`scx_bpf_error` naming the CPU and the slot) runs for real. Set only from `SCX_TT_TEST_TIMER_FAULT=CPU:SLOT`
/// (VM tests, docs/vm-harness.md); no flag and no plan field reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerFault {
    pub cpu: u32,
    pub slot: u64,
}

impl TimerFault {
    /// `CPU:SLOT`, where CPU must be one of `managed` (else the fault would never fire).
    pub fn parse(text: &str, managed: &[u32]) -> Result<Self, String> {
        let bad = |why: &str| format!("{TIMER_FAULT_ENV}={text:?}: {why}");
        let (cpu, slot) = text
            .split_once(':')
            .ok_or_else(|| bad("expected CPU:SLOT"))?;
        let cpu: u32 = cpu.trim().parse().map_err(|_| bad("CPU is not a number"))?;
        let slot: u64 = slot
            .trim()
            .parse()
            .map_err(|_| bad("SLOT is not a number"))?;
        if !managed.contains(&cpu) {
            return Err(bad(&format!("cpu {cpu} is not a managed CPU of the plan")));
        }
        Ok(TimerFault { cpu, slot })
    }

    /// From the environment: `None` when the variable is not set.
    pub fn from_env(managed: &[u32]) -> Result<Option<Self>, String> {
        match std::env::var(TIMER_FAULT_ENV) {
            Ok(text) => Self::parse(&text, managed).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(format!("{TIMER_FAULT_ENV}: {e}")),
        }
    }
}

/// A normalised frequency in (0, 1] as a cpuperf target in 1..=PERF_ONE, rounded up (a slot
/// never asks for less than its table says): the same conversion as planner mode's dvfs.
pub fn perf_of_freq(freq: f64) -> u32 {
    crate::energy::perf::cpuperf_target(freq)
}

/// The default guard band: 5 % of the slot.
pub fn default_guard_us(slot_us: u64) -> u64 {
    slot_us / 20
}

/// A `--perf-table` file: `{"<managed cpu>": [normalised frequency per frame slot], ...}`.
/// [`SchedConfig::with_perf`] checks it against the plan.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct PerfTable(BTreeMap<CpuKey, Vec<f64>>);

/// A JSON object key that names a CPU ("3").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct CpuKey(u32);

impl<'de> Deserialize<'de> for CpuKey {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let key = String::deserialize(de)?;
        key.parse()
            .map(CpuKey)
            .map_err(|_| serde::de::Error::custom(format!("key {key:?} is not a CPU id")))
    }
}

impl PerfTable {
    /// Parses the file's text; errors name the key (and the index) at fault.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| ConfigError::PerfSyntax {
            path: match e.path().to_string() {
                p if p == "." => "the top level".to_string(),
                p => p,
            },
            msg: e.inner().to_string(),
        })
    }

    /// (CPU, its row), by CPU.
    pub fn rows(&self) -> Vec<(u32, Vec<f64>)> {
        self.0.iter().map(|(c, row)| (c.0, row.clone())).collect()
    }
}

impl SchedConfig {
    /// `online`: the CPUs of this machine; those not managed by the plan do housekeeping.
    ///
    /// The BPF limits on the plan (tasks, CPU ids, table size) are plan rules
    /// (`plan::limits`), so for a plan that came through `Plan::try_from` the `TooManyTasks`,
    /// `TableTooLarge` and (for the plan's own CPUs) `CpuTooLarge` errors below cannot happen;
    /// they stay as the inside re-assertion of those rules, for a `Plan` built in code.
    /// Reachable for a validated plan: `GuardTooLong` (the guard band is a flag, not part of
    /// the plan) and `CpuTooLarge` for an online CPU of a machine with more than `MAX_CPUS`.
    pub fn from_plan(plan: &Plan, guard_us: u64, online: &[u32]) -> Result<Self, ConfigError> {
        if guard_us >= plan.slot_us {
            return Err(ConfigError::GuardTooLong {
                guard_us,
                slot_us: plan.slot_us,
            });
        }
        if plan.tasks.len() > MAX_TASKS {
            return Err(ConfigError::TooManyTasks(plan.tasks.len()));
        }
        let mut cpus: Vec<u32> = plan
            .managed
            .iter()
            .chain(&plan.housekeeping)
            .chain(online)
            .copied()
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        if let Some(&c) = cpus.iter().find(|&&c| c >= MAX_CPUS) {
            return Err(ConfigError::CpuTooLarge(c));
        }
        let housekeeping = cpus
            .into_iter()
            .filter(|c| !plan.managed.contains(c))
            .collect();
        let frame = plan.frame_slots;
        if table_entries(plan.managed.len(), frame) > u128::from(MAX_TABLE_ENTRIES) {
            return Err(ConfigError::TableTooLarge {
                cpus: plan.managed.len(),
                frame,
            });
        }
        let mut table = vec![NO_TASK; plan.managed.len() * frame as usize];
        let mut job_start = vec![false; table.len()];
        for (m, cpu_plan) in plan.cpus.iter().enumerate() {
            let row = m * frame as usize..(m + 1) * frame as usize;
            for r in &cpu_plan.table {
                let task = cpu_plan.jobs[r.job].task as u32;
                for s in r.start..r.end.min(frame) {
                    table[row.start + s as usize] = task;
                }
            }
            // the first slot of each job: the earliest start of its ranges
            let mut first: Vec<Option<u64>> = vec![None; cpu_plan.jobs.len()];
            for r in cpu_plan.table.iter().filter(|r| r.start < frame) {
                let f = &mut first[r.job];
                *f = Some(f.map_or(r.start, |s| s.min(r.start)));
            }
            for s in first.into_iter().flatten() {
                job_start[row.start + s as usize] = true;
            }
        }
        Ok(SchedConfig {
            slot_ns: plan.slot_us * 1000,
            guard_ns: guard_us * 1000,
            frame_slots: frame,
            managed: plan.managed.clone(),
            housekeeping,
            tasks: plan.tasks.iter().map(|t| (t.class, t.cpu)).collect(),
            completion: plan.tasks.iter().map(|t| t.completion).collect(),
            table,
            job_start,
            perf: None,
            dpm: false,
            dpm_be: false,
            rt_clock: None,
            server: plan.server,
            local: plan.tasks.iter().map(|t| t.local.clone()).collect(),
            periodic: plan
                .tasks
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    if t.class != Class::Tt || t.start != Start::Table {
                        return None;
                    }
                    let m = plan.tt_cpu_index(i)?;
                    let jobs: Vec<&Job> =
                        plan.cpus[m].jobs.iter().filter(|j| j.task == i).collect();
                    Periodic::of_jobs(&jobs, frame)
                })
                .collect(),
        })
    }

    /// `task_local` of plan task `task` (`enum tt_local`); FIFO past the plan's tasks.
    pub fn local_abi(&self, task: usize) -> u8 {
        match self.local.get(task).and_then(Option::as_ref) {
            None => abi::LOCAL_FIFO,
            Some(l) => match l.scheduler {
                LocalScheduler::Rm => abi::LOCAL_RM,
                LocalScheduler::Edf => abi::LOCAL_EDF,
            },
        }
    }

    /// `period_ns` of thread `tid` (named `comm`) of plan task `task` under local scheduling:
    /// the period of the workload thread it is (by tid first, then by name), 0 when the task
    /// has no local scheduling or the workload does not name the thread.
    pub fn thread_period_ns(&self, task: usize, tid: u32, comm: Option<&str>) -> u64 {
        let Some(local) = self.local.get(task).and_then(Option::as_ref) else {
            return 0;
        };
        let by_tid = local
            .threads
            .iter()
            .find(|t| t.thread == ThreadSelector::Tid(tid));
        let by_comm = || {
            comm.and_then(|c| {
                local
                    .threads
                    .iter()
                    .find(|t| matches!(&t.thread, ThreadSelector::Comm(n) if n == c))
            })
        };
        by_tid
            .or_else(by_comm)
            .map_or(0, |t| t.period.saturating_mul(self.slot_ns).max(1))
    }

    /// Whether any task schedules its own threads (then thread names are re-read while
    /// running: a thread named after load gets its period).
    pub fn has_local(&self) -> bool {
        self.local.iter().any(Option::is_some)
    }

    /// Add a per-slot frequency table: for some managed CPUs (the others stay at 0, untouched),
    /// one normalised frequency per frame slot.
    pub fn with_perf(mut self, freqs: &[(u32, Vec<f64>)]) -> Result<Self, ConfigError> {
        let frame = self.frame_slots as usize;
        let mut perf = vec![0; self.table.len()];
        for (cpu, row) in freqs {
            let m = self
                .managed
                .iter()
                .position(|c| c == cpu)
                .ok_or(ConfigError::PerfCpu(*cpu))?;
            if row.len() != frame {
                return Err(ConfigError::PerfLength {
                    cpu: *cpu,
                    got: row.len(),
                    frame: self.frame_slots,
                });
            }
            for (slot, &value) in row.iter().enumerate() {
                if !(value > 0.0 && value <= 1.0) {
                    return Err(ConfigError::PerfValue {
                        cpu: *cpu,
                        slot,
                        value,
                    });
                }
                perf[m * frame + slot] = perf_of_freq(value);
            }
        }
        self.perf = Some(perf);
        Ok(self)
    }

    /// The entries of the BPF table (one half; layout of `table`): the owner with
    /// [`abi::ENTRY_JOB_START`] at the first slot of each job (src/bpf/tt_sched.bpf.c, I). This,
    /// not `table`, is what the loader and a table switch write.
    pub fn entries(&self) -> Vec<u32> {
        self.table
            .iter()
            .zip(&self.job_start)
            .map(|(&t, &start)| abi::entry(abi::entry_task(t), start))
            .collect()
    }

    /// Entries of the BPF `timers` map, keyed by CPU id: the highest managed CPU id + 1 (at
    /// most `MAX_CPUS`, as every id is below it), so that a plan of low CPU ids does not pay
    /// for `TT_MAX_CPUS` timers.
    pub fn timer_entries(&self) -> u32 {
        self.managed.iter().max().map_or(1, |&c| c + 1)
    }

    /// Owner of `slot` (absolute) on managed CPU index `m`.
    pub fn owner(&self, m: usize, slot: u64) -> Option<usize> {
        let i = m * self.frame_slots as usize + (slot % self.frame_slots) as usize;
        self.table
            .get(i)
            .copied()
            .filter(|&t| t != NO_TASK)
            .map(|t| t as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Completion, CpuPlan, Selector, Start, Task};
    use crate::planner::offline::{Job, Range};

    fn task(name: &str, class: Class, cpu: Option<u32>) -> Task {
        Task {
            name: name.into(),
            selector: Selector::Pid(1),
            class,
            cpu,
            start: Start::Table,
            completion: match class {
                Class::Tt => Completion::Yield,
                Class::Be | Class::Adaptive => Completion::None,
            },
            local: None,
            interface: None,
            adaptive: None,
        }
    }

    fn job(task: usize) -> Job {
        Job {
            task,
            instance: 0,
            release: 0,
            deadline: 4,
            wcet: 1,
        }
    }

    /// CPU 1: a owns [0,2), b owns [3,4); CPU 2: c owns [1,4). Frame 4, slot 1 ms.
    fn plan() -> Plan {
        Plan {
            slot_us: 1000,
            frame_slots: 4,
            managed: vec![1, 2],
            housekeeping: vec![0],
            tasks: vec![
                task("a", Class::Tt, Some(1)),
                task("b", Class::Tt, Some(1)),
                task("c", Class::Tt, Some(2)),
                task("bg", Class::Be, None),
            ],
            cpus: vec![
                CpuPlan {
                    cpu: 1,
                    jobs: vec![job(0), job(1)],
                    table: vec![
                        Range {
                            start: 0,
                            end: 2,
                            job: 0,
                        },
                        Range {
                            start: 3,
                            end: 4,
                            job: 1,
                        },
                    ],
                    intervals: Vec::new(),
                },
                CpuPlan {
                    cpu: 2,
                    jobs: vec![job(2)],
                    table: vec![Range {
                        start: 1,
                        end: 4,
                        job: 0,
                    }],
                    intervals: Vec::new(),
                },
            ],
            server: Default::default(),
        }
    }

    #[test]
    fn table_rows_follow_managed_order_and_map_jobs_to_tasks() {
        let cfg = SchedConfig::from_plan(&plan(), 50, &[0, 1, 2, 3]).expect("config");
        assert_eq!(cfg.table, vec![0, 0, NO_TASK, 1, NO_TASK, 2, 2, 2]);
        assert_eq!(cfg.owner(0, 5), Some(0)); // slot 5 = frame slot 1 on CPU 1
        assert_eq!(cfg.owner(0, 6), None);
        assert_eq!(cfg.owner(1, 7), Some(2));
        assert_eq!((cfg.slot_ns, cfg.guard_ns), (1_000_000, 50_000));
    }

    #[test]
    fn the_first_slot_of_each_job_carries_the_job_start_flag() {
        let mut p = plan();
        // CPU 1: job 0 of a split over [0,1) and [2,3) (flagged once, at 0), b's job at 3
        p.cpus[0].table = vec![
            Range {
                start: 0,
                end: 1,
                job: 0,
            },
            Range {
                start: 2,
                end: 3,
                job: 0,
            },
            Range {
                start: 3,
                end: 4,
                job: 1,
            },
        ];
        let cfg = SchedConfig::from_plan(&p, 50, &[0, 1, 2]).expect("config");
        let js = abi::ENTRY_JOB_START;
        assert_eq!(cfg.table, vec![0, NO_TASK, 0, 1, NO_TASK, 2, 2, 2]);
        assert_eq!(
            cfg.entries(),
            vec![js, NO_TASK, 0, 1 | js, NO_TASK, 2 | js, 2, 2]
        );
        // the owners stay flag-free
        assert_eq!(cfg.owner(0, 2), Some(0));
        assert_eq!(cfg.completion[0], Completion::Yield);
        assert_eq!(cfg.completion[3], Completion::None);
    }

    #[test]
    fn consecutive_jobs_of_one_task_are_each_flagged() {
        let plan = crate::plan::from_str(
            r#"{ "slot_us": 1000, "cpus": { "managed": [1], "housekeeping": [0] },
                 "tasks": [{ "name": "a", "pid": 5, "class": "tt", "cpu": 1, "period": 2, "wcet": 2 }],
                 "frame_slots": 6 }"#,
        )
        .expect("plan");
        let cfg = SchedConfig::from_plan(&plan, 50, &[0, 1]).expect("config");
        let js = abi::ENTRY_JOB_START;
        assert_eq!(cfg.entries(), vec![js, 0, js, 0, js, 0]);
    }

    #[test]
    fn cpus_the_plan_does_not_name_do_housekeeping() {
        let cfg = SchedConfig::from_plan(&plan(), 50, &[0, 1, 2, 3]).expect("config");
        assert_eq!(cfg.housekeeping, vec![0, 3]);
        assert_eq!(cfg.tasks[3], (Class::Be, None));
    }

    #[test]
    fn guard_must_be_shorter_than_the_slot() {
        let err = SchedConfig::from_plan(&plan(), 1000, &[0, 1, 2]).unwrap_err();
        assert_eq!(
            err,
            ConfigError::GuardTooLong {
                guard_us: 1000,
                slot_us: 1000
            }
        );
        assert_eq!(default_guard_us(10_000), 500);
    }

    #[test]
    fn perf_table_rows_land_in_the_managed_cpus_row() {
        let cfg = SchedConfig::from_plan(&plan(), 50, &[0, 1, 2]).expect("config");
        let cfg = cfg
            .with_perf(&[(2, vec![1.0, 0.5, 0.25, 0.001])])
            .expect("perf");
        // CPU 2 is managed index 1: entries 4..8; 0.5 * 1024 = 512; 0.001 * 1024 = 1.024 rounds
        // up to 2 (never below the table's frequency)
        assert_eq!(cfg.perf, Some(vec![0, 0, 0, 0, 1024, 512, 256, 2]));
    }

    #[test]
    fn perf_table_errors_name_cpu_and_slot() {
        let cfg = || SchedConfig::from_plan(&plan(), 50, &[0, 1, 2]).expect("config");
        assert_eq!(
            cfg().with_perf(&[(0, vec![1.0; 4])]).unwrap_err(),
            ConfigError::PerfCpu(0)
        );
        assert_eq!(
            cfg().with_perf(&[(1, vec![1.0; 3])]).unwrap_err(),
            ConfigError::PerfLength {
                cpu: 1,
                got: 3,
                frame: 4
            }
        );
        assert_eq!(
            cfg()
                .with_perf(&[(1, vec![1.0, 1.5, 1.0, 1.0])])
                .unwrap_err(),
            ConfigError::PerfValue {
                cpu: 1,
                slot: 1,
                value: 1.5
            }
        );
    }

    #[test]
    fn a_perf_table_file_parses_into_rows_by_cpu() {
        let t = PerfTable::parse(r#"{"2": [1.0, 0.5], "1": [0.25, 1]}"#).expect("parse");
        assert_eq!(t.rows(), vec![(1, vec![0.25, 1.0]), (2, vec![1.0, 0.5])]);
    }

    #[test]
    fn perf_table_syntax_errors_name_the_key_and_the_value() {
        let err = |text: &str| PerfTable::parse(text).unwrap_err().to_string();
        let bad_key = err(r#"{"cpu1": [1.0]}"#);
        assert!(
            bad_key.contains(r#"key "cpu1" is not a CPU id"#),
            "{bad_key}"
        );
        let bad_value = err(r#"{"1": [1.0, "fast"]}"#);
        assert!(
            bad_value.contains("at 1[1]") && bad_value.contains(r#""fast""#),
            "{bad_value}"
        );
        let not_a_row = err(r#"{"1": 0.5}"#);
        assert!(not_a_row.contains("at 1:"), "{not_a_row}");
        let not_an_object = err("[1.0]");
        assert!(
            not_an_object.contains("at the top level"),
            "{not_an_object}"
        );
    }

    #[test]
    fn timer_fault_is_cpu_colon_slot_on_a_managed_cpu() {
        assert_eq!(
            TimerFault::parse("2:40", &[1, 2]),
            Ok(TimerFault { cpu: 2, slot: 40 })
        );
        for (text, why) in [
            ("2", "expected CPU:SLOT"),
            ("x:40", "CPU is not a number"),
            ("2:-1", "SLOT is not a number"),
            ("0:40", "cpu 0 is not a managed CPU"),
        ] {
            let e = TimerFault::parse(text, &[1, 2]).unwrap_err();
            assert!(e.starts_with(TIMER_FAULT_ENV) && e.contains(why), "{e}");
        }
    }

    #[test]
    fn cpus_beyond_the_bpf_limit_are_rejected() {
        // a machine whose highest CPU id is 1023 runs the plan (its other CPUs housekeep)
        let cfg = SchedConfig::from_plan(&plan(), 50, &[0, 1, 2, 300, MAX_CPUS - 1])
            .expect("CPU ids up to 1023");
        assert_eq!(cfg.housekeeping, vec![0, 300, 1023]);
        for c in [MAX_CPUS, 4096, u32::MAX] {
            let err = SchedConfig::from_plan(&plan(), 50, &[0, 1, 2, c]).unwrap_err();
            assert_eq!(err, ConfigError::CpuTooLarge(c));
        }
        assert_eq!(
            ConfigError::CpuTooLarge(1024).to_string(),
            "cpu 1024 is not below the scheduler's limit of 1024 CPUs"
        );
    }

    #[test]
    fn the_timers_map_holds_the_managed_cpu_ids_not_tt_max_cpus() {
        // managed CPUs 1 and 2: ids 0..=2, whatever else the machine has
        let cfg = SchedConfig::from_plan(&plan(), 50, &[0, 1, 2, 900]).expect("config");
        assert_eq!(cfg.timer_entries(), 3);
        let mut p = plan();
        p.managed = vec![1, MAX_CPUS - 1];
        p.cpus[1].cpu = MAX_CPUS - 1;
        p.tasks[2].cpu = Some(MAX_CPUS - 1);
        let cfg = SchedConfig::from_plan(&p, 50, &[0]).expect("config");
        assert_eq!(cfg.timer_entries(), MAX_CPUS);
    }

    fn jobs(task: usize, windows: &[(u64, u64)]) -> Vec<Job> {
        windows
            .iter()
            .enumerate()
            .map(|(i, &(release, deadline))| Job {
                task,
                instance: i as u32,
                release,
                deadline,
                wcet: 1,
            })
            .collect()
    }

    /// The reference: a job of `p` is current at `slot` iff some `offset + k·period ≤ slot <
    /// offset + k·period + deadline`, by brute force over k; the same for explicit windows
    /// repeated every `frame`.
    fn current_by_windows(windows: &[(u64, u64)], frame: u64, slot: u64) -> Option<u64> {
        (0..=slot / frame + 1).find_map(|f| {
            windows.iter().find_map(|&(r, d)| {
                let (r, d) = (f * frame + r, f * frame + d);
                (r <= slot && slot < d).then_some(d)
            })
        })
    }

    fn current_by_periodic(p: Periodic, slot: u64) -> Option<u64> {
        // the BPF rule (current_deadline in src/bpf/tt_sched.bpf.c), in Rust
        if slot < p.offset {
            return None;
        }
        let r = p.offset + (slot - p.offset) / p.period * p.period;
        (slot < r + p.deadline).then_some(r + p.deadline)
    }

    #[test]
    fn periodic_jobs_are_recognised_and_give_the_current_deadline_of_their_windows() {
        let frame = 20;
        for (windows, want) in [
            (vec![(0, 5), (5, 10), (10, 15), (15, 20)], Some((5, 0, 5))),
            (vec![(2, 6), (12, 16)], Some((10, 2, 4))),
            (vec![(12, 16), (2, 6)], Some((10, 2, 4))), // any order
            (vec![(3, 20)], Some((20, 3, 17))),
            (vec![(0, 5), (10, 14)], None),          // two deadlines
            (vec![(0, 5), (7, 12)], None),           // not equally spaced
            (vec![(0, 5), (5, 10), (10, 15)], None), // 3 does not divide 20
            (vec![], None),
        ] {
            let js = jobs(0, &windows);
            let refs: Vec<&Job> = js.iter().collect();
            let got = Periodic::of_jobs(&refs, frame);
            assert_eq!(
                got.map(|p| (p.period, p.offset, p.deadline)),
                want,
                "{windows:?}"
            );
            if let Some(p) = got {
                for slot in 0..5 * frame {
                    assert_eq!(
                        current_by_periodic(p, slot),
                        current_by_windows(&windows, frame, slot),
                        "{windows:?} at slot {slot}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_server_local_order_and_thread_periods_reach_the_config() {
        use crate::plan::LocalThread;
        let mut p = plan();
        p.server = ServerDesign::Crps;
        p.tasks[0].local = Some(LocalSched {
            scheduler: LocalScheduler::Edf,
            threads: vec![
                LocalThread {
                    thread: ThreadSelector::Comm("hi".into()),
                    period: 4,
                    wcet: 1,
                },
                LocalThread {
                    thread: ThreadSelector::Tid(77),
                    period: 8,
                    wcet: 1,
                },
            ],
        });
        let cfg = SchedConfig::from_plan(&p, 50, &[0, 1, 2]).expect("config");
        assert_eq!(cfg.server, ServerDesign::Crps);
        assert!(cfg.has_local());
        assert_eq!(
            (cfg.local_abi(0), cfg.local_abi(1), cfg.local_abi(9)),
            (abi::LOCAL_EDF, abi::LOCAL_FIFO, abi::LOCAL_FIFO)
        );
        // 1 ms slots: by name, by tid (before the name), unnamed, a task without local order
        assert_eq!(cfg.thread_period_ns(0, 5, Some("hi")), 4_000_000);
        assert_eq!(cfg.thread_period_ns(0, 77, Some("hi")), 8_000_000);
        assert_eq!(cfg.thread_period_ns(0, 5, Some("other")), 0);
        assert_eq!(cfg.thread_period_ns(0, 5, None), 0);
        assert_eq!(cfg.thread_period_ns(1, 5, Some("hi")), 0);
        // the fixture's jobs: a and b one job each in the frame of 4 (release 0, deadline 4)
        assert_eq!(
            cfg.periodic[0],
            Some(Periodic {
                period: 4,
                offset: 0,
                deadline: 4
            })
        );
        assert_eq!(cfg.periodic[3], None, "a be task never reclaims");
        assert_eq!(
            SchedConfig::from_plan(&plan(), 50, &[0]).unwrap().server,
            ServerDesign::Wcps
        );
    }
}

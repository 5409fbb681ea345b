//! A virtual slot clock driving the [`Planner`] over a plan and a list of arrivals: the library
//! behind `scx_tt simulate`, also called directly by the energy benchmark.
//!
//! # Problem
//! Show, without root or sched_ext, what the planner would do with a plan: admissions and their
//! reasons, deadline misses (0 for guaranteed jobs), utilization, idle periods, frequency
//! residency and energy, and a per-slot trace in the format the kernel path writes.
//!
//! # Algorithm
//! ```text
//! planner = Planner::new(plan's CPUs); obs = []
//! for slot in 0 .. frames·frame_slots:
//!   decisions = planner.step(slot, obs)
//!   for each CPU: a job runs f·UNIT units of its actual execution (drawn once per job from
//!     the execution model, as a fraction of its WCET); obs = (ns it ran, done?)
//!   record (slot, cpu, kind, task, freq) and the statistics
//!   arrivals with at_slot == slot are submitted after the decisions (they see slot as spent)
//! ```
//! Names: each plan task and each arrival is its own planner task; `remove` addresses the live
//! periodic task of a name (at most one, see `Names`), so a task removed and admitted again under
//! its name is removed again by name.
//!
//! The actual execution of a job is `wcet · factor` (`ExecModel::Factor`) or uniform in
//! `[lo, hi] · wcet` from a seeded generator (`ExecModel::Range`); a factor above 1 makes jobs
//! overrun, which the planner cuts off at their WCET and reports.

pub mod experiment;
pub mod model_power;
pub mod power;
pub mod servers;

use crate::plan::{strict, Plan};
use crate::planner::cpu::{JobEvent, JobKind, MAX_JOB_SLOTS, UNIT};
use crate::planner::policy::{Freqs, Policy, Run};
use crate::planner::runtime::{
    Admission, Observation, Placement, Planner, PlannerConfig, Rejection,
};
use crate::trace::{SlotKind, SlotRecord};
use power::SlotPower;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One arrival of `arrivals.json` (see docs/simulate.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arrival {
    pub at_slot: u64,
    /// Names the job or task in the trace and the report; at most one live periodic task has a
    /// given name (a periodic admission under a live task's name is refused), aperiodic jobs
    /// may share names.
    pub name: String,
    pub kind: ArrivalKind,
    /// Slots of execution (WCET), at most [`MAX_JOB_SLOTS`]; unused for `remove`.
    #[serde(default, deserialize_with = "strict::job_slots")]
    pub wcet: u64,
    /// Firm aperiodic: relative deadline in slots after `at_slot`, at most [`MAX_JOB_SLOTS`].
    /// Absent: a soft job.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_job_slots"
    )]
    pub deadline: Option<u64>,
    /// Periodic: period in slots (must divide the frame); the deadline is the period.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_job_slots"
    )]
    pub period: Option<u64>,
    /// Preferred managed CPU id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::present"
    )]
    pub cpu: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalKind {
    /// With `deadline`: firm (guaranteed or rejected); without: soft (served in slack).
    Aperiodic,
    Periodic,
    /// Removes the live periodic task called `name` (a tt task of the plan or an accepted
    /// periodic admission, not removed since); aperiodic jobs are not removable.
    Remove,
}

/// Actual execution time of jobs relative to their WCET.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ExecModel {
    Factor(f64),
    Range { lo: f64, hi: f64, seed: u64 },
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub policy: Policy,
    pub freqs: Freqs,
    pub frames: u64,
    pub exec: ExecModel,
    /// Keep every `SlotRecord` in the output (the energy benchmark wants them; the CLI streams).
    pub keep_records: bool,
}

/// How an arrival was handled.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdmissionRecord {
    pub at_slot: u64,
    pub name: String,
    /// `firm`, `soft`, `periodic` or `remove`.
    pub kind: &'static str,
    pub accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Firm: completes before this slot; periodic: runs from this slot on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_slot: Option<u64>,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CpuStats {
    pub cpu: u32,
    pub tt_slots: u64,
    pub aperiodic_slots: u64,
    pub be_slots: u64,
    pub idle_slots: u64,
    /// Busy slots / all slots.
    pub utilization: f64,
    /// Idle-period lengths: bucket lower bound (1, 2, 4, 8, ... slots) -> periods.
    pub idle_periods: BTreeMap<u64, u64>,
    /// Normalised frequency (as text, 3 decimals) -> slots.
    pub freq_residency: BTreeMap<String, u64>,
    pub energy_j: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SimReport {
    pub policy: String,
    pub slots: u64,
    pub admissions: Vec<AdmissionRecord>,
    /// Guaranteed jobs (plan, admitted periodic, firm) with work left at their deadline.
    pub guaranteed_misses: u64,
    /// Jobs cut off at their WCET.
    pub overruns: u64,
    pub completed_jobs: u64,
    pub soft_completed: u64,
    pub cpus: Vec<CpuStats>,
    pub energy_j: f64,
}

pub struct SimOutput {
    pub report: SimReport,
    /// Every (slot, CPU) record if `keep_records`.
    pub records: Vec<SlotRecord>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("arrival {name:?}: {why}")]
    Arrival { name: String, why: String },
    #[error(transparent)]
    Step(#[from] crate::planner::StepError),
}

/// The largest arrivals file `scx_tt simulate` reads (bytes): 16 MiB, some 150,000 arrivals.
pub const MAX_ARRIVALS_BYTES: u64 = 16 << 20;

/// Why an arrivals file was refused: the JSON path of the offending value (`[3].wcet`; empty for
/// the whole file), the position and the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message} at line {line} column {column}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct ArrivalsError {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Parses `arrivals.json` (a JSON list of [`Arrival`] objects; docs/simulate.md). Positional
/// arrays, `null` values, duplicate fields and slot counts above [`MAX_JOB_SLOTS`] are refused
/// with the path of the value.
pub fn parse_arrivals(text: &str) -> Result<Vec<Arrival>, ArrivalsError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let read = serde_path_to_error::deserialize::<_, strict::Objects<Arrival>>(&mut *de)
        .map_err(|e| {
            let path = e.path().to_string();
            (
                if path == "." { String::new() } else { path },
                e.into_inner(),
            )
        })
        .and_then(|list| de.end().map(|()| list.0).map_err(|e| (String::new(), e)));
    read.map_err(|(path, e)| {
        let message = e.to_string();
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        ArrivalsError {
            path,
            line: e.line(),
            column: e.column(),
            message,
        }
    })
}

/// splitmix64: a small seeded generator (no dependency, reproducible across platforms).
struct Rng(u64);
impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Runs `plan` plus `arrivals` for `cfg.frames` frames; `sink` sees every slot record.
pub fn simulate(
    plan: &Plan,
    arrivals: &[Arrival],
    cfg: &SimConfig,
    power: &dyn SlotPower,
    sink: &mut dyn FnMut(&SlotRecord),
) -> Result<SimOutput, SimError> {
    let frame = plan.frame_slots;
    let slot_ns = plan.slot_us * 1000;
    let slot_s = plan.slot_us as f64 * 1e-6;
    let inputs = plan.planner_inputs();
    let mut planner = Planner::new(
        &inputs,
        frame,
        PlannerConfig {
            policy: cfg.policy,
            freqs: cfg.freqs.clone(),
            slot_ns,
        },
    );
    let mut wcet_of: HashMap<usize, u64> = HashMap::new();
    for c in &plan.cpus {
        for j in &c.jobs {
            wcet_of.entry(j.task).or_insert(j.wcet);
        }
    }
    let mut names = Names::of_plan(plan, |t| wcet_of.contains_key(&t));
    let mut order: Vec<&Arrival> = arrivals.iter().collect();
    order.sort_by_key(|a| a.at_slot);
    let mut next_arrival = 0;
    let mut rng = Rng(match cfg.exec {
        ExecModel::Range { seed, .. } => seed,
        ExecModel::Factor(_) => 0,
    });
    // A plan task whose jobs never end early (`completion: none`) runs every job at least to
    // its WCET: a draw below it is raised to it (the kernel path keeps such a job's slots and
    // cuts it off at its WCET); a draw above it overruns as any other.
    let whole: Vec<bool> = plan
        .tasks
        .iter()
        .map(|t| t.completion == crate::plan::Completion::None)
        .collect();
    let mut draw = |task: usize, wcet: u64| -> u64 {
        let k = match cfg.exec {
            ExecModel::Factor(f) => f,
            ExecModel::Range { lo, hi, .. } => lo + (hi - lo) * rng.next_f64(),
        };
        let k = if whole.get(task).copied().unwrap_or(false) {
            k.max(1.0)
        } else {
            k
        };
        ((wcet.min(MAX_JOB_SLOTS) * UNIT) as f64 * k)
            .ceil()
            .max(1.0) as u64
    };
    // Actual work left of the current instance of (cpu, task).
    let mut actual: HashMap<(usize, usize), u64> = HashMap::new();
    let n = plan.cpus.len();
    let mut report = SimReport {
        policy: cfg.policy.name().into(),
        slots: cfg.frames * frame,
        cpus: plan
            .cpus
            .iter()
            .map(|c| CpuStats {
                cpu: c.cpu,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut idle_run = vec![IdleRun::default(); n];
    // per CPU: the idle rest of the last slot (a job finished early), not yet priced
    let mut rest: Vec<Option<(f64, f64)>> = vec![None; n];
    // per CPU: the frequency of the last slot (switch energy)
    let mut prev_f: Vec<Option<f64>> = vec![None; n];
    let mut records = Vec::new();
    let mut obs = vec![
        Observation {
            ran_ns: 0,
            done: false
        };
        n
    ];
    let total = cfg.frames * frame;
    for slot in 0..total {
        let decisions = planner
            .step(slot, if slot == 0 { &[] } else { &obs })?
            .to_vec();
        for &(_, ev) in planner.events() {
            match ev {
                JobEvent::Completed { .. } => report.completed_jobs += 1,
                JobEvent::Overrun { .. } => report.overruns += 1,
                JobEvent::Miss { .. } => report.guaranteed_misses += 1,
                JobEvent::SoftCompleted { .. } => report.soft_completed += 1,
                // simulate's observations are whole slots or completions: nothing is lost
                JobEvent::SoftCutOff { .. } | JobEvent::Lost { .. } => {}
            }
        }
        for &(cpu, ev) in planner.events() {
            let (JobEvent::Completed { task, .. }
            | JobEvent::Overrun { task, .. }
            | JobEvent::Miss { task, .. }
            | JobEvent::SoftCompleted { task }
            | JobEvent::SoftCutOff { task }) = ev
            else {
                continue; // a job that lost work goes on
            };
            actual.remove(&(cpu, task));
        }
        for (i, d) in decisions.iter().enumerate() {
            let f = d.freq_ppm as f64 / UNIT as f64;
            let st = &mut report.cpus[i];
            *st.freq_residency.entry(format!("{f:.3}")).or_default() += 1;
            let (kind, task) = match d.run {
                Run::Job { task, kind, .. } => (
                    match kind {
                        JobKind::Periodic => SlotKind::Tt,
                        JobKind::Firm => SlotKind::Aperiodic,
                    },
                    Some(task),
                ),
                Run::Soft { task } => (SlotKind::Be, Some(task)),
                Run::Be => (SlotKind::Be, None),
                Run::Idle => (SlotKind::Idle, None),
            };
            obs[i] = match (d.run, task) {
                (Run::Job { .. } | Run::Soft { .. }, Some(t)) => {
                    let left = actual
                        .entry((i, t))
                        .or_insert_with(|| draw(t, wcet_of.get(&t).copied().unwrap_or(1)));
                    let step = d.freq_ppm as u64;
                    if *left <= step {
                        let ran_ns =
                            (*left as u128 * slot_ns as u128).div_ceil(step as u128) as u64;
                        *left = 0;
                        Observation { ran_ns, done: true }
                    } else {
                        *left -= step;
                        Observation {
                            ran_ns: slot_ns,
                            done: false,
                        }
                    }
                }
                _ => Observation {
                    ran_ns: 0,
                    done: false,
                },
            };
            match kind {
                SlotKind::Tt => st.tt_slots += 1,
                SlotKind::Aperiodic => st.aperiodic_slots += 1,
                SlotKind::Be => st.be_slots += 1,
                SlotKind::Idle => st.idle_slots += 1,
            }
            // A job or soft job that completes inside its slot leaves the rest of the slot to
            // best-effort work if the CPU has any (the kernel path runs it there), else idle.
            let (ran_ns, stolen_ns) = match d.run {
                Run::Job { .. } | Run::Soft { .. } => {
                    let ran = obs[i].ran_ns.min(slot_ns);
                    let rest = if planner.cpus()[i].has_be {
                        slot_ns - ran
                    } else {
                        0
                    };
                    (Some(ran), Some(rest))
                }
                Run::Be | Run::Idle => (None, None),
            };
            // a P-state change between this slot and the one before (docs/energy.md §4)
            if let Some(p) = prev_f[i].replace(f) {
                st.energy_j += power.switch_j(p, f);
            }
            if kind == SlotKind::Idle {
                let r = &mut idle_run[i];
                // the rest of the slot before, after a job finished early, is one idle period
                // with a DPM period that follows at the same frequency (docs/energy.md §4)
                match rest[i].take() {
                    Some((rs, rf)) if r.len == 0 && d.idle_until.is_some() && rf == f => {
                        r.lead_s = rs;
                    }
                    Some((rs, rf)) => st.energy_j += power.idle_j(rf, rs),
                    None => {}
                }
                r.len += 1;
                r.dpm |= d.idle_until.is_some();
                // each polled slot at the frequency it is recorded at (dvfs: the minimum)
                r.polled_j += power.idle_j(f, slot_s);
                r.freq = f;
            } else {
                close_idle_run(&mut idle_run[i], st, power, slot_s);
                if let Some((rs, rf)) = rest[i].take() {
                    st.energy_j += power.idle_j(rf, rs);
                }
                let busy_s = match (ran_ns, stolen_ns) {
                    (Some(r), Some(o)) => (r + o).min(slot_ns) as f64 / 1e9,
                    _ => slot_s,
                };
                st.energy_j += power.busy_j(f, busy_s);
                if slot_s - busy_s > 0.0 {
                    rest[i] = Some((slot_s - busy_s, f));
                }
            }
            let rec = SlotRecord {
                slot,
                cpu: plan.cpus[i].cpu,
                kind,
                task: task.and_then(|t| names.of.get(t).cloned()),
                freq: f,
                idle_until: d.idle_until,
                ran_ns,
                stolen_ns,
                late_ns: None,
            };
            sink(&rec);
            if cfg.keep_records {
                records.push(rec);
            }
        }
        while next_arrival < order.len() && order[next_arrival].at_slot <= slot {
            let a = order[next_arrival];
            next_arrival += 1;
            let rec = submit(&mut planner, plan, a, &mut names, &mut wcet_of)?;
            report.admissions.push(rec);
        }
    }
    for (i, st) in report.cpus.iter_mut().enumerate() {
        close_idle_run(&mut idle_run[i], st, power, slot_s);
        if let Some((rs, rf)) = rest[i].take() {
            st.energy_j += power.idle_j(rf, rs);
        }
        let busy = st.tt_slots + st.aperiodic_slots + st.be_slots;
        st.utilization = busy as f64 / total.max(1) as f64;
        report.energy_j += st.energy_j;
    }
    Ok(SimOutput { report, records })
}

/// Task names. Every plan task and every arrival gets its own task id (the planner's), named in
/// the trace by `of`. A name addresses a *live periodic task* — a tt task of the plan's table, or
/// an accepted periodic admission, not removed since — for `remove`, and at most one live
/// periodic task has a given name at a time: a periodic admission under a live name is refused.
/// Aperiodic (firm and soft) jobs are single jobs: any number of them may carry the same name,
/// also a live periodic task's, and `remove` does not address them.
struct Names {
    /// Name of each task id: the plan's tasks first, then one id per arrival.
    of: Vec<String>,
    /// The live periodic task of each name, with the slot of its admission (`None`: the plan's).
    live: HashMap<String, (usize, Option<u64>)>,
}

impl Names {
    /// The plan's task names; `in_table(t)` says whether plan task `t` is in the planner (has
    /// jobs in the table: not a `be` task nor one declared `"start": "admitted"`).
    fn of_plan(plan: &Plan, in_table: impl Fn(usize) -> bool) -> Names {
        let of: Vec<String> = plan.tasks.iter().map(|t| t.name.clone()).collect();
        let live = of
            .iter()
            .enumerate()
            .filter(|&(t, _)| in_table(t))
            .map(|(t, n)| (n.clone(), (t, None)))
            .collect();
        Names { of, live }
    }

    /// A fresh task id named `name`.
    fn add(&mut self, name: &str) -> usize {
        self.of.push(name.to_string());
        self.of.len() - 1
    }
}

/// The rejection in words, naming CPUs by id.
fn reject_reason(why: &Rejection, plan: &Plan) -> String {
    let id = |i: usize| plan.managed.get(i).copied().unwrap_or(u32::MAX);
    match why {
        Rejection::Capacity { cpu, cap } => format!(
            "needs {} slots before slot {}; the best CPU ({}) has {} free",
            cap.needed,
            cap.deadline,
            id(*cpu),
            cap.available
        ),
        Rejection::Infeasible { cpu, miss } => format!(
            "the frame would be infeasible on every CPU; on CPU {}: instance {} misses slot {} with {} of {} slots left",
            id(*cpu),
            miss.instance,
            miss.deadline,
            miss.remaining,
            miss.wcet
        ),
        Rejection::Invalid(why) => why.clone(),
    }
}

/// Consecutive idle slots of a CPU, priced when the run ends: as one DPM idle period when a
/// slot of it is in one (at the frequency its slots are recorded at), else each slot polled at
/// its own recorded frequency.
#[derive(Clone, Copy, Debug, Default)]
struct IdleRun {
    len: u64,
    dpm: bool,
    polled_j: f64,
    freq: f64,
    /// The idle rest of the slot before the run (a job finished early in it at the run's
    /// frequency), s: part of the DPM period.
    lead_s: f64,
}

fn close_idle_run(run: &mut IdleRun, st: &mut CpuStats, power: &dyn SlotPower, slot_s: f64) {
    if run.len == 0 {
        return;
    }
    *st.idle_periods.entry(1u64 << run.len.ilog2()).or_default() += 1;
    st.energy_j += if run.dpm {
        power.sleep_j(run.lead_s + run.len as f64 * slot_s, run.freq, slot_s)
    } else {
        run.polled_j
    };
    *run = IdleRun::default();
}

fn submit(
    planner: &mut Planner,
    plan: &Plan,
    a: &Arrival,
    names: &mut Names,
    wcet_of: &mut HashMap<usize, u64>,
) -> Result<AdmissionRecord, SimError> {
    let bad = |why: String| SimError::Arrival {
        name: a.name.clone(),
        why,
    };
    let cpu = match a.cpu {
        Some(id) => Some(
            plan.managed
                .iter()
                .position(|&c| c == id)
                .ok_or_else(|| bad(format!("cpu {id} is not a managed CPU")))?,
        ),
        None => None,
    };
    let mut rec = AdmissionRecord {
        at_slot: a.at_slot,
        name: a.name.clone(),
        kind: "remove",
        accepted: false,
        cpu: None,
        bound_slot: None,
        reason: String::new(),
    };
    if a.kind == ArrivalKind::Remove {
        // A live periodic task is always in its CPU's template, so the planner finds it.
        let found = names.live.remove(&a.name);
        rec.accepted = found.is_some_and(|(t, _)| planner.remove_task(t));
        rec.reason = if rec.accepted {
            "removed; its capacity returns".into()
        } else {
            format!("name = {:?}: no live periodic task has this name", a.name)
        };
        return Ok(rec);
    }
    if a.wcet == 0 {
        return Err(bad("wcet must be at least 1 slot".into()));
    }
    if a.kind == ArrivalKind::Periodic {
        rec.kind = "periodic";
        if a.period.is_none() {
            return Err(bad("periodic without period".into()));
        }
        if let Some(&(_, since)) = names.live.get(&a.name) {
            rec.reason = format!(
                "name = {:?}: a live periodic task already has this name ({}); remove it first",
                a.name,
                match since {
                    Some(at) => format!("admitted at slot {at}"),
                    None => "a task of the plan".into(),
                }
            );
            return Ok(rec);
        }
    }
    let task = names.add(&a.name);
    wcet_of.insert(task, a.wcet);
    let reply = match (a.kind, a.deadline, a.period) {
        (ArrivalKind::Aperiodic, None, _) => {
            rec.kind = "soft";
            let c = planner.submit_soft(task, a.wcet, cpu);
            rec.accepted = c.is_some();
            rec.cpu = c.map(|i| plan.managed[i]);
            rec.reason = "served in slack, no guarantee".into();
            return Ok(rec);
        }
        (ArrivalKind::Aperiodic, Some(d), _) => {
            rec.kind = "firm";
            // a deadline past the last slot is as good as the last slot (clamped to the horizon)
            planner.admit_firm(
                task,
                a.wcet,
                a.at_slot.saturating_add(d),
                Placement::prefer(cpu),
            )
        }
        (ArrivalKind::Periodic, _, Some(p)) => {
            rec.kind = "periodic";
            planner.admit_periodic(task, a.wcet, p, Placement::prefer(cpu))
        }
        (ArrivalKind::Periodic, _, None) | (ArrivalKind::Remove, ..) => {
            unreachable!("handled above")
        }
    };
    match reply {
        Admission::Accepted { cpu, bound } => {
            if rec.kind == "periodic" {
                names.live.insert(a.name.clone(), (task, Some(a.at_slot)));
            }
            rec.accepted = true;
            rec.cpu = Some(plan.managed[cpu]);
            rec.bound_slot = Some(bound);
            rec.reason = match rec.kind {
                "firm" => format!("guaranteed to complete before slot {bound}"),
                _ => format!("fits the frame; runs from slot {bound}"),
            };
        }
        Admission::Rejected(why) => rec.reason = reject_reason(&why, plan),
    }
    Ok(rec)
}

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
mod virtual_clock;

use crate::plan::{strict, Plan};
use crate::planner::policy::{Freqs, Policy};
use crate::planner::runtime::{Admission, Placement, Planner, Rejection};
use crate::trace::SlotRecord;
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

/// Runs `plan` plus `arrivals` for `cfg.frames` frames; `sink` sees every slot record. The
/// slot loop is the run driver's ([`crate::drive`]): the planner with the arrivals is the
/// decider ([`virtual_clock::Arrivals`]), the virtual clock with the execution model and the
/// energy charge the backend ([`virtual_clock::VirtualClock`]).
pub fn simulate(
    plan: &Plan,
    arrivals: &[Arrival],
    cfg: &SimConfig,
    power: &dyn SlotPower,
    sink: &mut dyn FnMut(&SlotRecord),
) -> Result<SimOutput, SimError> {
    let mut decider = virtual_clock::Arrivals::new(plan, arrivals, cfg);
    let mut clock = virtual_clock::VirtualClock::new(plan, cfg, power, sink);
    crate::drive::drive(&mut decider, &mut clock)?;
    Ok(clock.finish(decider.admissions))
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

/// Submits arrival `a` to the planner (an admission, a soft job, or a removal by name) and
/// records the planner's answer; an error for an arrival that is not well formed.
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
    let mut rec = blank_record(a);
    if a.kind == ArrivalKind::Remove {
        remove_by_name(planner, a, names, &mut rec);
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
        if let Some(reason) = name_taken(names, &a.name) {
            rec.reason = reason;
            return Ok(rec);
        }
    }
    let task = names.add(&a.name);
    wcet_of.insert(task, a.wcet);
    if let Some(reply) = admit(planner, plan, a, task, cpu, &mut rec) {
        record_reply(reply, plan, a, task, names, &mut rec);
    }
    Ok(rec)
}

/// The record of arrival `a` before the planner answers: kind `remove`, not accepted.
fn blank_record(a: &Arrival) -> AdmissionRecord {
    AdmissionRecord {
        at_slot: a.at_slot,
        name: a.name.clone(),
        kind: "remove",
        accepted: false,
        cpu: None,
        bound_slot: None,
        reason: String::new(),
    }
}

/// A `remove` arrival: removes the live periodic task of its name, recording whether there was
/// one.
fn remove_by_name(
    planner: &mut Planner,
    a: &Arrival,
    names: &mut Names,
    rec: &mut AdmissionRecord,
) {
    // A live periodic task is always in its CPU's template, so the planner finds it.
    let found = names.live.remove(&a.name);
    rec.accepted = found.is_some_and(|(t, _)| planner.remove_task(t));
    rec.reason = if rec.accepted {
        "removed; its capacity returns".into()
    } else {
        format!("name = {:?}: no live periodic task has this name", a.name)
    };
}

/// The refusal's reason when a live periodic task already has the name `name`.
fn name_taken(names: &Names, name: &str) -> Option<String> {
    let &(_, since) = names.live.get(name)?;
    Some(format!(
        "name = {:?}: a live periodic task already has this name ({}); remove it first",
        name,
        match since {
            Some(at) => format!("admitted at slot {at}"),
            None => "a task of the plan".into(),
        }
    ))
}

/// Hands arrival `a` (planner task `task`) to the planner by its kind: the admission's reply,
/// or `None` for a soft job, which `rec` then records in full.
fn admit(
    planner: &mut Planner,
    plan: &Plan,
    a: &Arrival,
    task: usize,
    cpu: Option<usize>,
    rec: &mut AdmissionRecord,
) -> Option<Admission> {
    Some(match (a.kind, a.deadline, a.period) {
        (ArrivalKind::Aperiodic, None, _) => {
            rec.kind = "soft";
            let c = planner.submit_soft(task, a.wcet, cpu);
            rec.accepted = c.is_some();
            rec.cpu = c.map(|i| plan.managed[i]);
            rec.reason = "served in slack, no guarantee".into();
            return None;
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
    })
}

/// Records the planner's reply to an admission in `rec`; an accepted periodic task becomes the
/// live task of its name.
fn record_reply(
    reply: Admission,
    plan: &Plan,
    a: &Arrival,
    task: usize,
    names: &mut Names,
    rec: &mut AdmissionRecord,
) {
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
}

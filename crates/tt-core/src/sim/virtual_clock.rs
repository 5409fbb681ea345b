//! `simulate` on the run driver ([`crate::drive`]): [`Arrivals`], the runtime planner fed with
//! the arrivals, decides; [`VirtualClock`] counts slots, draws each job's execution time from
//! the execution model, turns the decisions into observations for the next slot, slot records
//! and the energy charge.

use super::power::SlotPower;
use super::{
    close_idle_run, submit, AdmissionRecord, Arrival, CpuStats, ExecModel, IdleRun, Names, Rng,
    SimConfig, SimError, SimOutput, SimReport,
};
use crate::drive::{Backend, Cur, Decider};
use crate::plan::Plan;
use crate::planner::cpu::{JobEvent, JobKind, MAX_JOB_SLOTS, UNIT};
use crate::planner::policy::{Decision, Run};
use crate::planner::runtime::{Observation, Planner, PlannerConfig};
use crate::trace::{SlotKind, SlotRecord};
use std::collections::HashMap;

/// One slot's decisions, with what the clock needs to know of each CPU's task.
pub(super) struct SlotDecisions {
    decisions: Vec<Decision>,
    /// The planner's job events of the step, per CPU index.
    events: Vec<(usize, JobEvent)>,
    /// Per CPU: the running task's name and WCET (slots), if a task runs.
    tasks: Vec<Option<(String, u64)>>,
    /// Per CPU: it has best-effort work for the rest of a slot a job leaves.
    has_be: Vec<bool>,
}

/// The planner and the arrivals, submitted after the step of the slot they arrive in.
pub(super) struct Arrivals<'a> {
    planner: Planner,
    plan: &'a Plan,
    order: Vec<&'a Arrival>,
    next: usize,
    names: Names,
    wcet_of: HashMap<usize, u64>,
    pub(super) admissions: Vec<AdmissionRecord>,
}

impl<'a> Arrivals<'a> {
    pub(super) fn new(plan: &'a Plan, arrivals: &'a [Arrival], cfg: &SimConfig) -> Self {
        let inputs = plan.planner_inputs();
        let planner = Planner::new(
            &inputs,
            plan.frame_slots,
            PlannerConfig {
                policy: cfg.policy,
                freqs: cfg.freqs.clone(),
                slot_ns: plan.slot_us * 1000,
            },
        );
        let mut wcet_of: HashMap<usize, u64> = HashMap::new();
        for c in &plan.cpus {
            for j in &c.jobs {
                wcet_of.entry(j.task).or_insert(j.wcet);
            }
        }
        let names = Names::of_plan(plan, |t| wcet_of.contains_key(&t));
        let mut order: Vec<&Arrival> = arrivals.iter().collect();
        order.sort_by_key(|a| a.at_slot);
        Arrivals {
            planner,
            plan,
            order,
            next: 0,
            names,
            wcet_of,
            admissions: Vec::new(),
        }
    }

    fn task_of(&self, run: Run) -> Option<(String, u64)> {
        let t = match run {
            Run::Job { task, .. } | Run::Soft { task } => task,
            Run::Be | Run::Idle => return None,
        };
        let name = self.names.of.get(t).cloned().unwrap_or_default();
        Some((name, self.wcet_of.get(&t).copied().unwrap_or(1)))
    }
}

impl<'s, 'a> Decider<VirtualClock<'s>> for Arrivals<'a> {
    fn decide(&mut self, cur: Cur, obs: &mut Vec<Observation>) -> Result<SlotDecisions, SimError> {
        let slot = cur.unwrap_or(0);
        let decisions = self.planner.step(slot, obs)?.to_vec();
        obs.clear();
        let out = SlotDecisions {
            tasks: decisions.iter().map(|d| self.task_of(d.run)).collect(),
            events: self.planner.events().to_vec(),
            has_be: (0..self.planner.cpu_count())
                .map(|c| self.planner.has_be(c))
                .collect(),
            decisions,
        };
        while self.next < self.order.len() && self.order[self.next].at_slot <= slot {
            let a = self.order[self.next];
            self.next += 1;
            let rec = submit(
                &mut self.planner,
                self.plan,
                a,
                &mut self.names,
                &mut self.wcet_of,
            )?;
            self.admissions.push(rec);
        }
        Ok(out)
    }
}

/// The virtual clock: slots `0..frames × frame`, each as long as the plan's slot.
pub(super) struct VirtualClock<'s> {
    slot: u64,
    total: u64,
    slot_ns: u64,
    slot_s: f64,
    cpu_ids: Vec<u32>,
    keep_records: bool,
    exec: ExecModel,
    rng: Rng,
    /// Per plan task: its jobs never end early (`completion: none`).
    whole: Vec<bool>,
    /// Actual work left of the current instance of (cpu, task), in UNIT per slot at full speed.
    actual: HashMap<(usize, usize), u64>,
    power: &'s dyn SlotPower,
    sink: &'s mut dyn FnMut(&SlotRecord),
    report: SimReport,
    idle_run: Vec<IdleRun>,
    /// Per CPU: the idle rest of the last slot (a job finished early), not yet priced.
    rest: Vec<Option<(f64, f64)>>,
    /// Per CPU: the frequency of the last slot (switch energy).
    prev_f: Vec<Option<f64>>,
    records: Vec<SlotRecord>,
    /// What each CPU did in the last slot: the next step's observations.
    obs: Vec<Observation>,
}

impl<'s> VirtualClock<'s> {
    pub(super) fn new(
        plan: &Plan,
        cfg: &SimConfig,
        power: &'s dyn SlotPower,
        sink: &'s mut dyn FnMut(&SlotRecord),
    ) -> Self {
        let n = plan.cpus.len();
        let total = cfg.frames * plan.frame_slots;
        VirtualClock {
            slot: 0,
            total,
            slot_ns: plan.slot_us * 1000,
            slot_s: plan.slot_us as f64 * 1e-6,
            cpu_ids: plan.cpus.iter().map(|c| c.cpu).collect(),
            keep_records: cfg.keep_records,
            exec: cfg.exec,
            rng: Rng(match cfg.exec {
                ExecModel::Range { seed, .. } => seed,
                ExecModel::Factor(_) => 0,
            }),
            // A plan task whose jobs never end early (`completion: none`) runs every job at
            // least to its WCET: a draw below it is raised to it (the kernel path keeps such a
            // job's slots and cuts it off at its WCET); a draw above it overruns as any other.
            whole: plan
                .tasks
                .iter()
                .map(|t| t.completion == crate::plan::Completion::None)
                .collect(),
            actual: HashMap::new(),
            power,
            sink,
            report: SimReport {
                policy: cfg.policy.name().into(),
                slots: total,
                cpus: plan
                    .cpus
                    .iter()
                    .map(|c| CpuStats {
                        cpu: c.cpu,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
            idle_run: vec![IdleRun::default(); n],
            rest: vec![None; n],
            prev_f: vec![None; n],
            records: Vec::new(),
            obs: vec![
                Observation {
                    ran_ns: 0,
                    done: false
                };
                n
            ],
        }
    }

    /// A job's actual execution, in UNIT per slot at full speed, drawn from the model.
    fn draw(&mut self, task: usize, wcet: u64) -> u64 {
        let k = match self.exec {
            ExecModel::Factor(f) => f,
            ExecModel::Range { lo, hi, .. } => lo + (hi - lo) * self.rng.next_f64(),
        };
        let k = if self.whole.get(task).copied().unwrap_or(false) {
            k.max(1.0)
        } else {
            k
        };
        ((wcet.min(MAX_JOB_SLOTS) * UNIT) as f64 * k)
            .ceil()
            .max(1.0) as u64
    }

    /// Counts the step's job events; a finished job's drawn work is forgotten.
    fn count_events(&mut self, events: &[(usize, JobEvent)]) {
        for &(cpu, ev) in events {
            match ev {
                JobEvent::Completed { .. } => self.report.completed_jobs += 1,
                JobEvent::Overrun { .. } => self.report.overruns += 1,
                JobEvent::Miss { .. } => self.report.guaranteed_misses += 1,
                JobEvent::SoftCompleted { .. } => self.report.soft_completed += 1,
                // simulate's observations are whole slots or completions: nothing is lost
                JobEvent::SoftCutOff { .. } | JobEvent::Lost { .. } => {}
            }
            let (JobEvent::Completed { task, .. }
            | JobEvent::Overrun { task, .. }
            | JobEvent::Miss { task, .. }
            | JobEvent::SoftCompleted { task }
            | JobEvent::SoftCutOff { task }) = ev
            else {
                continue; // a job that lost work goes on
            };
            self.actual.remove(&(cpu, task));
        }
    }

    /// What CPU `i` did in the slot for decision `d`: the next step's observation.
    fn execute(&mut self, i: usize, d: &Decision, task: Option<usize>, wcet: u64) -> Observation {
        let (Run::Job { .. } | Run::Soft { .. }, Some(t)) = (d.run, task) else {
            return Observation {
                ran_ns: 0,
                done: false,
            };
        };
        let left = match self.actual.get(&(i, t)) {
            Some(&l) => l,
            None => {
                let l = self.draw(t, wcet);
                self.actual.insert((i, t), l);
                l
            }
        };
        let step = d.freq_ppm as u64;
        let left_now = self.actual.get_mut(&(i, t)).expect("inserted above");
        if left <= step {
            *left_now = 0;
            let ran_ns = (left as u128 * self.slot_ns as u128).div_ceil(step as u128) as u64;
            Observation { ran_ns, done: true }
        } else {
            *left_now -= step;
            Observation {
                ran_ns: self.slot_ns,
                done: false,
            }
        }
    }

    /// The energy of CPU `i`'s slot of `kind` at frequency `f` (docs/energy.md §4).
    fn charge(&mut self, i: usize, kind: SlotKind, f: f64, dpm: bool, ran: Option<(u64, u64)>) {
        let (power, slot_s, slot_ns) = (self.power, self.slot_s, self.slot_ns);
        let st = &mut self.report.cpus[i];
        // a P-state change between this slot and the one before
        if let Some(p) = self.prev_f[i].replace(f) {
            st.energy_j += power.switch_j(p, f);
        }
        if kind == SlotKind::Idle {
            let r = &mut self.idle_run[i];
            // the rest of the slot before, after a job finished early, is one idle period
            // with a DPM period that follows at the same frequency
            match self.rest[i].take() {
                Some((rs, rf)) if r.len == 0 && dpm && rf == f => r.lead_s = rs,
                Some((rs, rf)) => st.energy_j += power.idle_j(rf, rs),
                None => {}
            }
            r.len += 1;
            r.dpm |= dpm;
            // each polled slot at the frequency it is recorded at (dvfs: the minimum)
            r.polled_j += power.idle_j(f, slot_s);
            r.freq = f;
            return;
        }
        close_idle_run(&mut self.idle_run[i], st, power, slot_s);
        if let Some((rs, rf)) = self.rest[i].take() {
            st.energy_j += power.idle_j(rf, rs);
        }
        let busy_s = match ran {
            Some((r, o)) => (r + o).min(slot_ns) as f64 / 1e9,
            None => slot_s,
        };
        st.energy_j += power.busy_j(f, busy_s);
        if slot_s - busy_s > 0.0 {
            self.rest[i] = Some((slot_s - busy_s, f));
        }
    }

    /// One CPU's slot: its observation for the next step, counts, energy and record.
    fn slot_of_cpu(
        &mut self,
        slot: u64,
        i: usize,
        d: &Decision,
        task: Option<&(String, u64)>,
        has_be: bool,
    ) {
        let f = d.freq_ppm as f64 / UNIT as f64;
        *self.report.cpus[i]
            .freq_residency
            .entry(format!("{f:.3}"))
            .or_default() += 1;
        let (kind, id) = match d.run {
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
        self.obs[i] = self.execute(i, d, id, task.map_or(1, |t| t.1));
        let st = &mut self.report.cpus[i];
        match kind {
            SlotKind::Tt => st.tt_slots += 1,
            SlotKind::Aperiodic => st.aperiodic_slots += 1,
            SlotKind::Be => st.be_slots += 1,
            SlotKind::Idle => st.idle_slots += 1,
        }
        // A job or soft job that completes inside its slot leaves the rest of the slot to
        // best-effort work if the CPU has any (the kernel path runs it there), else idle.
        let ran = match d.run {
            Run::Job { .. } | Run::Soft { .. } => {
                let ran = self.obs[i].ran_ns.min(self.slot_ns);
                Some((ran, if has_be { self.slot_ns - ran } else { 0 }))
            }
            Run::Be | Run::Idle => None,
        };
        self.charge(i, kind, f, d.idle_until.is_some(), ran);
        let rec = SlotRecord {
            slot,
            cpu: self.cpu_ids[i],
            kind,
            task: id.and(task.map(|t| t.0.clone())),
            freq: f,
            idle_until: d.idle_until,
            ran_ns: ran.map(|r| r.0),
            stolen_ns: ran.map(|r| r.1),
            late_ns: None,
        };
        (self.sink)(&rec);
        if self.keep_records {
            self.records.push(rec);
        }
    }

    /// The run's report: the idle runs and rests still open priced, utilisation, energy.
    pub(super) fn finish(mut self, admissions: Vec<AdmissionRecord>) -> SimOutput {
        let (power, slot_s, total) = (self.power, self.slot_s, self.total);
        for (i, st) in self.report.cpus.iter_mut().enumerate() {
            close_idle_run(&mut self.idle_run[i], st, power, slot_s);
            if let Some((rs, rf)) = self.rest[i].take() {
                st.energy_j += power.idle_j(rf, rs);
            }
            let busy = st.tt_slots + st.aperiodic_slots + st.be_slots;
            st.utilization = busy as f64 / total.max(1) as f64;
            self.report.energy_j += st.energy_j;
        }
        self.report.admissions = admissions;
        SimOutput {
            report: self.report,
            records: self.records,
        }
    }
}

impl Backend for VirtualClock<'_> {
    type Input = Observation;
    type Decision = SlotDecisions;
    type Error = SimError;

    fn begin(&mut self) -> Option<Cur> {
        (self.slot < self.total).then_some(Some(self.slot))
    }

    /// The last slot's observations (none before the first).
    fn collect(&mut self, cur: Cur, inputs: &mut Vec<Observation>) -> Result<(), SimError> {
        if cur != Some(0) {
            inputs.extend_from_slice(&self.obs);
        }
        Ok(())
    }

    fn apply(
        &mut self,
        cur: Cur,
        s: &SlotDecisions,
        _late: &mut Vec<(usize, u64)>,
    ) -> Result<(), SimError> {
        let slot = cur.unwrap_or(0);
        self.count_events(&s.events);
        for (i, d) in s.decisions.iter().enumerate() {
            self.slot_of_cpu(slot, i, d, s.tasks[i].as_ref(), s.has_be[i]);
        }
        Ok(())
    }

    fn wait(&mut self, _cur: Cur) {
        self.slot += 1;
    }
}

//! `admit` of class tt: a periodic task, an aperiodic one (one job), or a QEMU VM with one
//! task per vCPU thread. Its timing ([`timing`]) is checked, each task is placed on a managed
//! CPU by the planner's exact test, all or none ([`place`]), registered in BPF before the
//! planner is let go, and recorded with its reply.

use super::{bad, resolve, selector_text};
use crate::abi::MAX_TASKS;
use crate::control::reply::AdmittedTask;
use crate::control::request::{Admit, AdmitClass, AdmitSelector, AfterJob};
use crate::control::{
    journal, AddedTask, Answer, Answered, AperiodicJob, Control, ControlError, Engine, NewTask,
    Reply, Request, TaskState,
};
use crate::plan::{Class, Selector};
use crate::planner::kernel_path::{
    FirmJob, FirmOutcome, KernelPlanner, PeriodicOutcome, PeriodicTask,
};

/// One tt `admit` in progress: `n` tasks (one per vCPU thread of a VM, else one) named after
/// `name`, with `timing`, task `k` on one of the managed CPU indices `allowed[k]` (those the
/// request allows that every thread of the task may run on), the tasks of a VM on distinct
/// CPUs, taking BPF task indices `first..first + n`.
pub(super) struct TtAdmission<'a> {
    name: &'a str,
    timing: AdmitTiming,
    allowed: Vec<Vec<usize>>,
    managed: Vec<u32>,
    first: usize,
    n: usize,
}

impl TtAdmission<'_> {
    /// The name of task `k`: `name`, or `name/vcpuK` for a VM of several vCPUs.
    fn task_name(&self, k: usize) -> String {
        match self.n {
            1 => self.name.to_string(),
            _ => format!("{}/vcpu{k}", self.name),
        }
    }

    /// The CPUs task `k` may take, but those in `taken` (its siblings'), the one with the most
    /// free template slots first; `Err`: none is left.
    fn cpu_order(
        &self,
        p: &KernelPlanner,
        k: usize,
        taken: &[usize],
    ) -> Result<Vec<usize>, String> {
        let mut order: Vec<usize> = self.allowed[k]
            .iter()
            .copied()
            .filter(|c| !taken.contains(c))
            .collect();
        if order.is_empty() {
            return Err(self.no_cpu_left(k));
        }
        order.sort_by_key(|&c| (std::cmp::Reverse(p.free_template_slots(c)), c));
        Ok(order)
    }

    /// Why task `k` finds no CPU: those its threads may use hold its siblings already.
    fn no_cpu_left(&self, k: usize) -> String {
        let ids: Vec<u32> = self.allowed[k].iter().map(|&c| self.managed[c]).collect();
        format!(
            "{}: the managed CPUs its threads may run on ({ids:?}) hold another vCPU of the VM \
             already (one vCPU per CPU)",
            self.task_name(k)
        )
    }

    /// Managed CPU index `c` as a rejection names it (its CPU id).
    fn on(&self, c: usize) -> String {
        self.managed.get(c).map_or(c.to_string(), u32::to_string)
    }

    /// The planner's admission of all `n` tasks, `cur` the kernel slot in progress; `Err`:
    /// why not, with nothing left admitted.
    pub(super) fn plan(&self, p: &mut KernelPlanner, cur: u64) -> Result<Vec<Placed>, String> {
        let chosen = self.aperiodic_cpus(p, cur)?;
        let mut placed = Vec::new();
        for k in 0..self.n {
            match self.place_task(p, cur, k, chosen.get(k).copied(), &placed) {
                Ok(x) => placed.push(x),
                Err(why) => {
                    // all or none: the vCPUs admitted so far leave again
                    for j in 0..placed.len() {
                        p.rollback_admitted(self.first + j);
                    }
                    return Err(why);
                }
            }
        }
        Ok(placed)
    }

    /// An aperiodic VM's vCPUs: distinct CPUs, each chosen by the acceptance test alone, so
    /// that a rejection has changed nothing to undo (empty for a periodic timing).
    fn aperiodic_cpus(&self, p: &mut KernelPlanner, cur: u64) -> Result<Vec<usize>, String> {
        let mut chosen: Vec<usize> = Vec::new();
        let AdmitTiming::Aperiodic { wcet, deadline } = self.timing else {
            return Ok(chosen);
        };
        for k in 0..self.n {
            let order = self.cpu_order(p, k, &chosen)?;
            let mut last = None;
            for c in order {
                match p.aperiodic_fits(c, wcet, deadline, cur) {
                    Ok(()) => {
                        chosen.push(c);
                        last = None;
                        break;
                    }
                    Err(cap) => last = Some((c, capacity_text(cap))),
                }
            }
            if let Some((c, why)) = last {
                return Err(format!(
                    "{} on cpu {}: {why}",
                    timing_text(self.timing),
                    self.on(c)
                ));
            }
        }
        Ok(chosen)
    }

    /// Task `k` placed by the planner on `chosen`, else on the first CPU that takes it of
    /// those not yet taken by a sibling in `placed`, then the least loaded.
    fn place_task(
        &self,
        p: &mut KernelPlanner,
        cur: u64,
        k: usize,
        chosen: Option<usize>,
        placed: &[Placed],
    ) -> Result<Placed, String> {
        let order = match chosen {
            Some(c) => vec![c],
            None => {
                // a VM's vCPUs on distinct CPUs, the least loaded first
                let taken: Vec<usize> = placed.iter().map(|x: &Placed| x.cpu).collect();
                self.cpu_order(p, k, &taken)?
            }
        };
        let mut last = None;
        for c in order {
            match place(p, cur, self.timing, self.first + k, c, &self.task_name(k)) {
                Ok(x) => return Ok(x),
                Err(why) => last = Some((c, why)),
            }
        }
        Err(match last {
            Some((c, why)) => format!("{} on cpu {}: {why}", timing_text(self.timing), self.on(c)),
            None => "no managed CPU".into(),
        })
    }
}

impl Control {
    /// `admit` of class tt, after the shared checks; `cpus`: the managed CPU indices it may
    /// use. Resolves the threads (a QEMU process: one task per vCPU thread), places each on a
    /// managed CPU (`cpu`, else the least loaded not yet taken by a sibling, else the least
    /// loaded), admits all or none with the planner's exact test, and registers them in BPF
    /// before their first slot. A refusal changes nothing.
    pub(super) fn admit_tt(
        &mut self,
        r: &Admit,
        select: &AdmitSelector,
        cpus: Vec<usize>,
        engine: &mut impl Engine,
    ) -> Answered {
        let name = r.name.as_str();
        let (a, groups) = self.prepare_tt(r, Some(select), cpus, engine)?;
        let (outcome, added) = engine
            .with_planner_adding(|p, cur| {
                let outcome = a.plan(p, cur);
                // registered in BPF before the planner is let go: no slot of them is decided
                // before BPF has their threads
                let adds = match &outcome {
                    Ok(placed) => groups
                        .iter()
                        .zip(placed)
                        .map(|(g, x)| NewTask {
                            class: Class::Tt,
                            cpu: a.managed.get(x.cpu).copied(),
                            tids: g.clone(),
                        })
                        .collect(),
                    Err(_) => Vec::new(),
                };
                (outcome, adds)
            })
            .map_err(ControlError::PlannerUnavailable)?;
        let placed = match outcome {
            Ok(p) => p,
            Err(why) => {
                let answer = Answer::PeriodicRejected {
                    why: format!("{name}: {why}"),
                };
                engine.note(&format!(
                    "admit {name}: {}",
                    Reply::Ok(answer.clone()).to_line().trim_end()
                ));
                return Ok(answer);
            }
        };
        self.check_registered(&a, &added, &placed, engine)?;
        let vcpus = self.record_tt(&a, r, select, &groups, &placed);
        // journaled with the CPUs it got: a --resume puts each task back there
        let pinned = Admit {
            cpus: Some(placed.iter().map(|x| a.managed[x.cpu]).collect()),
            ..r.clone()
        };
        let line = Request::Admit(pinned).to_line().ok();
        self.journal.set(journal::Key::Task(name.into()), line);
        let answer = Answer::TaskAdmitted { tasks: vcpus };
        engine.note(&format!(
            "admit {name}: {}",
            Reply::Ok(answer.clone()).to_line().trim_end()
        ));
        Ok(answer)
    }

    /// What a tt `admit` (or its dry run) places, before the planner is asked: its timing, the
    /// threads `select` names (a QEMU process: one task per vCPU thread), or without
    /// `select` (a dry run) `r.vcpus` tasks without threads, the CPUs each task may use (of
    /// `cpus`) and the BPF task indices they would take. Returns the admission and the threads
    /// of each task. Refused, naming the field, the value and the rule; nothing changes.
    pub(super) fn prepare_tt<'r>(
        &self,
        r: &'r Admit,
        select: Option<&AdmitSelector>,
        cpus: Vec<usize>,
        engine: &mut impl Engine,
    ) -> Result<(TtAdmission<'r>, Vec<Vec<u32>>), ControlError> {
        let timing = timing(r, self.plan.frame_slots, self.plan.slot_us)
            .map_err(|(f, v, rule)| bad(f, v, &rule))?;
        let (groups, allowed, field, value) = match select {
            Some(select) => {
                let (sel, tids) = resolve(select, engine)?;
                // a VM: one task per vCPU thread; anything else: one task of all its threads
                let groups: Vec<Vec<u32>> = match sel {
                    Selector::Qemu(_) => tids.iter().map(|&t| vec![t]).collect(),
                    _ => vec![tids],
                };
                let allowed =
                    allowed_cpus(select, &sel, &groups, &cpus, &self.plan.managed, engine)?;
                (groups, allowed, "select", selector_text(select))
            }
            None => {
                let n = self.dry_vcpus(r.vcpus, &cpus)?;
                let v = r.vcpus.map_or("null".into(), |v| v.to_string());
                (vec![Vec::new(); n], vec![cpus; n], "vcpus", v)
            }
        };
        let allowed = match &r.cpus {
            Some(ids) => self.pinned(ids, allowed)?,
            None => allowed,
        };
        let first = engine.next_task_index().map_err(ControlError::Kernel)?;
        if first + groups.len() > MAX_TASKS {
            return Err(bad(
                field,
                value,
                &format!(
                    "{} more tasks exceed the BPF task table of {MAX_TASKS}",
                    groups.len()
                ),
            ));
        }
        let a = TtAdmission {
            name: &r.name,
            timing,
            allowed,
            managed: self.plan.managed.clone(),
            first,
            n: groups.len(),
        };
        Ok((a, groups))
    }

    /// `cpus`: task `k` on CPU id `ids[k]` alone, which must be one it may use (`allowed[k]`,
    /// indices), one per task, distinct.
    fn pinned(
        &self,
        ids: &[u32],
        allowed: Vec<Vec<usize>>,
    ) -> Result<Vec<Vec<usize>>, ControlError> {
        let text = format!("{ids:?}");
        if ids.len() != allowed.len() {
            return Err(bad(
                "cpus",
                text,
                &format!(
                    "one CPU per task: this admission makes {} tasks",
                    allowed.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(ids.len());
        for (k, (&id, ok)) in ids.iter().zip(&allowed).enumerate() {
            let c = self.plan.managed.iter().position(|&m| m == id);
            match c {
                Some(c) if ok.contains(&c) && !out.contains(&vec![c]) => out.push(vec![c]),
                Some(c) if ok.contains(&c) => {
                    return Err(bad(
                        "cpus",
                        text,
                        &format!("cpu {id} twice: one vCPU per CPU"),
                    ))
                }
                _ => {
                    let may: Vec<u32> = ok.iter().map(|&c| self.plan.managed[c]).collect();
                    return Err(bad(
                        "cpus",
                        text,
                        &format!("task {k} may use the managed CPUs {may:?} only (the plan's managed CPUs, cpu, its threads' affinity)"),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The reservations of a dry run without threads: `vcpus` (default 1), at least 1 and at
    /// most one per managed CPU the request may use (`cpus`, indices).
    fn dry_vcpus(&self, vcpus: Option<u32>, cpus: &[usize]) -> Result<usize, ControlError> {
        let n = vcpus.unwrap_or(1);
        let ids: Vec<u32> = cpus.iter().map(|&c| self.cpu_id(c)).collect();
        let managed = self.plan.managed.len();
        let rule = if n == 0 {
            "must be at least 1 (the reservations to test, one per vCPU)".to_string()
        } else if n as usize > managed {
            format!(
                "must be at most the {managed} managed CPUs of the plan ({:?}): a VM runs one \
                 vCPU per managed CPU",
                self.plan.managed
            )
        } else if n as usize > cpus.len() {
            format!(
                "a VM runs one vCPU per managed CPU: its {n} vCPUs need {n} and this admission \
                 may use {} ({ids:?})",
                cpus.len()
            )
        } else {
            return Ok(n as usize);
        };
        Err(bad("vcpus", n.to_string(), &rule))
    }

    /// BPF took every task of `a` at its index (`added`: its answers, in order); else the
    /// planner forgets every vCPU of the request, the ones BPF took leave it again, and the
    /// error says what went wrong.
    fn check_registered(
        &self,
        a: &TtAdmission,
        added: &[Result<usize, String>],
        placed: &[Placed],
        engine: &mut impl Engine,
    ) -> Result<(), ControlError> {
        let (first, n) = (a.first, a.n);
        let wrong = added.iter().enumerate().find_map(|(k, a)| match a {
            Ok(i) if *i == first + k => None,
            Ok(i) => Some(format!("BPF gave task index {i}, expected {}", first + k)),
            Err(e) => Some(e.clone()),
        });
        if let Some(msg) = wrong.or_else(|| {
            (added.len() != n).then(|| format!("BPF added {} of {n} tasks", added.len()))
        }) {
            // BPF did not take them all: the planner forgets every vCPU of the request, and
            // the ones BPF took leave it again
            let _ = engine.with_planner(|p, _| {
                for j in 0..n {
                    p.rollback_admitted(first + j);
                }
            });
            for (a, x) in added.iter().zip(placed) {
                if let Ok(i) = a {
                    let _ = engine.release_task(*i, Some(self.cpu_id(x.cpu)));
                }
            }
            return Err(ControlError::Kernel(msg));
        }
        Ok(())
    }

    /// Records the admitted tasks of `a` (threads `groups`, placed at `placed`): their state,
    /// an [`AddedTask`] each (with its job if aperiodic); returns them as the reply lists them.
    fn record_tt(
        &mut self,
        a: &TtAdmission,
        r: &Admit,
        select: &AdmitSelector,
        groups: &[Vec<u32>],
        placed: &[Placed],
    ) -> Vec<AdmittedTask> {
        let mut vcpus = Vec::new();
        for (k, (g, x)) in groups.iter().zip(placed).enumerate() {
            let cpu_id = self.cpu_id(x.cpu);
            let index = a.first + k;
            let task_name = a.task_name(k);
            self.record(&task_name, TaskState::Admitted, x.from_slot);
            let (period, wcet, offset, deadline, job) = match a.timing {
                AdmitTiming::Periodic {
                    period,
                    wcet,
                    offset,
                    deadline,
                } => (
                    period,
                    wcet,
                    offset,
                    Some(deadline).filter(|&d| d != period),
                    None,
                ),
                AdmitTiming::Aperiodic { wcet, .. } => (
                    0,
                    wcet,
                    0,
                    None,
                    Some(AperiodicJob {
                        deadline_slot: x.deadline_slot.unwrap_or(0),
                        after: r.after.unwrap_or(AfterJob::Be),
                        select: select.clone(),
                        done_from: None,
                    }),
                ),
            };
            vcpus.push(AdmittedTask {
                task: task_name.clone(),
                class: AdmitClass::Tt,
                cpu: Some(cpu_id),
                from_slot: x.from_slot,
                period_slots: period,
                wcet_slots: wcet,
                offset_slots: offset,
                deadline_slots: deadline,
                deadline_slot: x.deadline_slot,
                after: job.as_ref().map(|j| j.after),
                tids: g.clone(),
            });
            self.added.push(AddedTask {
                index,
                name: task_name,
                class: Class::Tt,
                cpu: Some(cpu_id),
                tids: g.clone(),
                period,
                wcet,
                from_slot: x.from_slot,
                gone_from: None,
                job,
            });
        }
        vcpus
    }
}

/// The managed CPU indices each task of an admission (`groups`: its threads) may use: those of
/// `cpus` (what the request allows) on which every one of its threads may run (their
/// affinity). Refused, naming the field and the rule: a VM of more vCPUs than `cpus` (one vCPU
/// per managed CPU), and a task with a thread that may run on none of them (pinned to
/// housekeeping CPUs: its slots would pass unused).
fn allowed_cpus(
    select: &AdmitSelector,
    sel: &Selector,
    groups: &[Vec<u32>],
    cpus: &[usize],
    managed: &[u32],
    engine: &mut impl Engine,
) -> Result<Vec<Vec<usize>>, ControlError> {
    let ids = |cs: &[usize]| -> Vec<u32> { cs.iter().map(|&c| managed[c]).collect() };
    if matches!(sel, Selector::Qemu(_)) && groups.len() > cpus.len() {
        return Err(bad(
            "select",
            selector_text(select),
            &format!(
                "a VM runs one vCPU per managed CPU: its {} vCPU threads need {} and this \
                 admission may use {} ({:?})",
                groups.len(),
                groups.len(),
                cpus.len(),
                ids(cpus)
            ),
        ));
    }
    let mut allowed = Vec::with_capacity(groups.len());
    for g in groups {
        let mut ok: Vec<usize> = cpus.to_vec();
        for &tid in g {
            let on = engine.thread_cpus(tid).map_err(|e| {
                bad(
                    "select",
                    selector_text(select),
                    &format!("thread {tid}: its CPUs cannot be read: {e}"),
                )
            })?;
            ok.retain(|&c| on.contains(&managed[c]));
            if ok.is_empty() {
                return Err(bad(
                    "select",
                    selector_text(select),
                    &format!(
                        "thread {tid} may run only on CPUs {} (its affinity), none of them a \
                         managed CPU this admission may use ({:?}): widen its affinity \
                         (taskset -a -p -c LIST PID)",
                        crate::plan::cpus::format_cpu_list(&on),
                        ids(cpus)
                    ),
                ));
            }
        }
        allowed.push(ok);
    }
    Ok(allowed)
}

/// Where one task of an `admit` went: managed CPU index `cpu`, from `from_slot`; an aperiodic
/// one's job is due before `deadline_slot`.
pub(super) struct Placed {
    pub(super) cpu: usize,
    from_slot: u64,
    deadline_slot: Option<u64>,
}

/// The planner's admission of BPF task `index` with `timing` on managed CPU index `cpu` only,
/// `cur` the kernel slot in progress; `Err`: why not (nothing changed).
fn place(
    p: &mut KernelPlanner,
    cur: u64,
    timing: AdmitTiming,
    index: usize,
    cpu: usize,
    name: &str,
) -> Result<Placed, String> {
    match timing {
        AdmitTiming::Periodic {
            period,
            wcet,
            offset,
            deadline,
        } => {
            let t = PeriodicTask {
                offset,
                deadline: Some(deadline).filter(|&d| d != period),
                ..PeriodicTask::implicit(index, cpu, period, wcet)
            };
            match p.admit_task(&t, name) {
                PeriodicOutcome::Accepted { cpu, from_slot } => Ok(Placed {
                    cpu,
                    from_slot,
                    deadline_slot: None,
                }),
                PeriodicOutcome::Rejected(why) => Err(why.to_string()),
            }
        }
        AdmitTiming::Aperiodic { wcet, deadline } => {
            let job = FirmJob {
                task: index,
                cpu,
                wcet,
                deadline_slots: deadline,
            };
            match p.admit_aperiodic(&job, cur, name) {
                FirmOutcome::Accepted {
                    cpu,
                    deadline_slot,
                    first_slot,
                } => Ok(Placed {
                    cpu,
                    from_slot: first_slot,
                    deadline_slot: Some(deadline_slot),
                }),
                FirmOutcome::Rejected(cap) => Err(capacity_text(cap)),
            }
        }
    }
}

/// A failed acceptance test as a rejection says it.
fn capacity_text(cap: crate::planner::cpu::Capacity) -> String {
    format!(
        "{} slots free before slot {}, {} needed",
        cap.available.max(0),
        cap.deadline,
        cap.needed
    )
}

/// `timing` as a rejection says it.
fn timing_text(timing: AdmitTiming) -> String {
    match timing {
        AdmitTiming::Periodic {
            period,
            wcet,
            offset,
            deadline,
        } if offset == 0 && deadline == period => format!("{wcet} slots every {period} slots"),
        AdmitTiming::Periodic {
            period,
            wcet,
            offset,
            deadline,
        } => format!(
            "{wcet} slots every {period} slots in [{offset}, {}) of each period",
            offset + deadline
        ),
        AdmitTiming::Aperiodic { wcet, deadline } => {
            format!("one job of {wcet} slots within {deadline} slots")
        }
    }
}

/// The timing of a tt `admit`, in slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmitTiming {
    /// `wcet` slots of every `period` (dividing the frame), released `offset` slots after the
    /// period's start and due `deadline` slots after the release.
    Periodic {
        period: u64,
        wcet: u64,
        offset: u64,
        deadline: u64,
    },
    /// One job of `wcet` slots due `deadline` slots after the slot the request arrives in.
    Aperiodic { wcet: u64, deadline: u64 },
}

/// The timing of a tt `admit`: `period_slots` + `wcet_slots` (+ `offset_slots`,
/// `deadline_slots`: the plan's rule `1 ≤ wcet ≤ deadline`, `offset + deadline ≤ period`), or
/// `wcet_slots` + `deadline_slots` alone (an aperiodic task: one job), or `util` +
/// `latency_us` (seed 000's and Tableau's VM model): the longest period P dividing the frame
/// whose budget Q = ⌈U·P⌉ leaves no gap longer than L between two services, 2·(P − Q) slots
/// (the budget at the start of one period, then at the end of the next). `Err`: (field, value,
/// rule).
pub fn timing(r: &Admit, frame: u64, slot_us: u64) -> Result<AdmitTiming, TimingError> {
    if r.after.is_some() && (r.period_slots.is_some() || r.util.is_some()) {
        return Err((
            "after",
            format!("{:?}", r.after),
            "only an aperiodic task (wcet_slots and deadline_slots without period_slots) has \
             a job after which its threads change"
                .into(),
        ));
    }
    if r.offset_slots.is_some() && r.period_slots.is_none() {
        return Err((
            "offset_slots",
            format!("{:?}", r.offset_slots),
            "needs period_slots: the offset is of each period's job".into(),
        ));
    }
    match (r.period_slots, r.wcet_slots, r.util, r.latency_us) {
        (Some(p), Some(w), None, None) => periodic(r, p, w, frame),
        (None, Some(w), None, None) => aperiodic(r, w),
        (None, None, Some(u), Some(l)) => from_util(r, u, l, frame, slot_us),
        _ => Err((
            "period_slots",
            format!("{:?}", r.period_slots),
            "give period_slots and wcet_slots (periodic), wcet_slots and deadline_slots \
             (aperiodic), or util and latency_us"
                .into(),
        )),
    }
}

/// A refused timing: (field, value, rule).
type TimingError = (&'static str, String, String);

/// `period_slots` `p` + `wcet_slots` `w` (+ `offset_slots`, `deadline_slots`): `p` divides the
/// frame of `frame` slots, `offset + deadline ≤ p`, `w ≤ deadline`.
fn periodic(r: &Admit, p: u64, w: u64, frame: u64) -> Result<AdmitTiming, TimingError> {
    if !frame.is_multiple_of(p) {
        return Err((
            "period_slots",
            p.to_string(),
            format!("must divide the frame of {frame} slots"),
        ));
    }
    let offset = r.offset_slots.unwrap_or(0);
    let deadline = r.deadline_slots.unwrap_or(p);
    if offset.checked_add(deadline).is_none_or(|end| end > p) {
        let (field, value) = match r.deadline_slots {
            Some(d) => ("deadline_slots", d),
            None => ("offset_slots", offset),
        };
        return Err((
            field,
            value.to_string(),
            format!(
                "offset_slots {offset} + deadline_slots {deadline} must be at most \
                 period_slots = {p} (each job inside its period)"
            ),
        ));
    }
    if w > deadline {
        let rule = match r.deadline_slots {
            Some(d) => format!("must be at most deadline_slots = {d}"),
            None => format!("must be at most period_slots = {p}"),
        };
        return Err(("wcet_slots", w.to_string(), rule));
    }
    Ok(AdmitTiming::Periodic {
        period: p,
        wcet: w,
        offset,
        deadline,
    })
}

/// `wcet_slots` `w` + `deadline_slots` alone: one job, `w ≤ deadline`.
fn aperiodic(r: &Admit, w: u64) -> Result<AdmitTiming, TimingError> {
    let Some(d) = r.deadline_slots else {
        return Err((
            "deadline_slots",
            "None".into(),
            "give period_slots and wcet_slots (periodic), wcet_slots and \
             deadline_slots (aperiodic), or util and latency_us"
                .into(),
        ));
    };
    if w > d {
        return Err((
            "wcet_slots",
            w.to_string(),
            format!("must be at most deadline_slots = {d}"),
        ));
    }
    Ok(AdmitTiming::Aperiodic {
        wcet: w,
        deadline: d,
    })
}

/// `util` `u` + `latency_us` `l`: the longest period dividing the frame of `frame` slots of
/// `slot_us` whose budget ⌈u·P⌉ keeps the longest wait 2·(P − Q) slots within `l`.
fn from_util(
    r: &Admit,
    u: f64,
    l: u64,
    frame: u64,
    slot_us: u64,
) -> Result<AdmitTiming, TimingError> {
    if r.deadline_slots.is_some() {
        return Err((
            "deadline_slots",
            format!("{:?}", r.deadline_slots),
            "util and latency_us give the timing; a deadline goes with period_slots \
             or an aperiodic wcet_slots"
                .into(),
        ));
    }
    if !(u > 0.0 && u < 1.0) {
        return Err((
            "util",
            u.to_string(),
            "must be in (0, 1): a share of one CPU per vCPU".into(),
        ));
    }
    let slot = slot_us.max(1);
    let fits = |p: u64| {
        let q = (u * p as f64).ceil() as u64;
        (q <= p).then_some(q).filter(|&q| 2 * (p - q) * slot <= l)
    };
    (1..=frame)
        .rev()
        .filter(|p| frame.is_multiple_of(*p))
        .find_map(|p| {
            fits(p).map(|q| AdmitTiming::Periodic {
                period: p,
                wcet: q,
                offset: 0,
                deadline: p,
            })
        })
        .ok_or_else(|| {
            (
                "latency_us",
                l.to_string(),
                format!(
                    "no period dividing the frame of {frame} slots of {slot_us} us keeps the \
                 longest wait 2 x (period - budget) within it at util {u}"
                ),
            )
        })
}

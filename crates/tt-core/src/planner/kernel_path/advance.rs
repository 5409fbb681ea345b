//! Deciding slots ahead of the BPF slot clock: each decision becomes a table entry and a
//! cpuperf target, and DPM idle periods are published to BPF (the `kernel_path` module doc,
//! "Slot clock and lead").

use super::{perf_of_ppm, update, Decided, EntryWrite, KernelPlanner, LogEvent, JOB_START};
use crate::abi::{DPM_IDLE, NO_TASK};
use crate::planner::policy::{Decision, Run};
use crate::planner::runtime::StepError;

/// A new end of a managed CPU's DPM idle period for BPF (`dpm_until`, src/bpf/tt_sched.bpf.c
/// K), written after the entries of the same [`Advance`]; `kick`: it was lowered (an idle
/// period cut short), so the CPU must be kicked after the write (`dpm_kick`) for its deferred
/// tick to be re-armed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DpmWrite {
    pub cpu: usize,
    /// The slot whose decision published it: the CPU is idle from here to `until` (a kick:
    /// `from == until`, the period is over).
    pub from: u64,
    pub until: u64,
    pub kick: bool,
}

/// What one [`KernelPlanner::advance`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Advance {
    /// Slots stepped.
    pub stepped: u64,
    /// Of which already started (decided too late; not written).
    pub late: u64,
    /// Entries to write, in slot order.
    pub writes: Vec<EntryWrite>,
    /// Then the DPM idle period ends to publish (dpm and dpm+dvfs only), in order.
    pub dpm: Vec<DpmWrite>,
}

impl KernelPlanner {
    /// Decides every slot up to `cur + lead` (`cur`: the kernel slot in progress, `None` before
    /// slot 0), see the module doc.
    pub fn advance(&mut self, cur: Option<u64>) -> Result<Advance, StepError> {
        let last = match cur {
            Some(c) => c + self.lead,
            None => self.lead - 1,
        };
        self.advance_through(cur, last)
    }

    /// Decides every slot up to `last` (`cur`: the kernel slot in progress, `None` before slot
    /// 0), as [`Self::advance`] does up to `cur + lead`. Further than the lead is allowed up to
    /// `cur + frame - 2` (a table entry serves every frame); deciding a slot earlier does not
    /// change its decision (the kernel path steps with the worst-case observation), it only
    /// moves `now()`, the first slot an admission can use, later (docs/planner.md, "Admissions
    /// and slot decisions").
    pub fn advance_through(&mut self, cur: Option<u64>, last: u64) -> Result<Advance, StepError> {
        self.record(|| LogEvent::Advance { cur, last });
        let last = last.min(cur.unwrap_or(0) + self.frame.saturating_sub(2));
        let mut out = Advance::default();
        let mut writer = Writer {
            frame: self.frame,
            nr_cpus: self.nr_cpus,
            task_of: &self.task_of,
            last_job: &mut self.last_job,
            decided: self.decided.as_mut(),
            shadow: &mut self.shadow,
            perf: &mut self.perf,
            ppm: &mut self.ppm,
            dpm_until: &mut self.dpm_until,
        };
        while self.planner.now() <= last {
            let t = self.planner.now();
            let decisions = match &self.exec {
                Some(exec) => self.planner.step_on(t, &[], &**exec)?,
                None => self.planner.step(t, &[])?,
            };
            writer.slot(t, decisions, cur, &mut out);
        }
        self.late_total += out.late;
        Ok(out)
    }
}

/// What the maps hold, borrowed from the [`KernelPlanner`] for one advance while its planner
/// steps: turns each slot's decisions into entry, cpuperf and DPM idle-period writes.
struct Writer<'a> {
    frame: u64,
    nr_cpus: usize,
    task_of: &'a [u32],
    last_job: &'a mut [Vec<usize>],
    decided: Option<&'a mut Vec<Decided>>,
    shadow: &'a mut [u32],
    perf: &'a mut [u32],
    ppm: &'a mut [u32],
    dpm_until: &'a mut [u64],
}

impl Writer<'_> {
    /// Slot `t` decided (`decisions`: one per CPU; `cur`: the kernel slot in progress).
    fn slot(&mut self, t: u64, decisions: &[Decision], cur: Option<u64>, out: &mut Advance) {
        out.stepped += 1;
        let is_late = cur.is_some_and(|c| t <= c);
        for (cpu, d) in decisions.iter().enumerate().take(self.nr_cpus) {
            self.decision(cpu, t, d, cur, is_late, out);
        }
        self.end_cut_idle_periods(t, decisions, out);
        if is_late {
            out.late += 1;
        }
    }

    /// CPU `cpu`'s decision `d` for slot `t`: its entry joins the slots awaiting their
    /// observation (closed loop, `None` when late) and, unless slot `t` already started
    /// (`is_late`), the entry and the cpuperf target are written where they change and a DPM
    /// idle period `d` is in is published.
    fn decision(
        &mut self,
        cpu: usize,
        t: u64,
        d: &Decision,
        cur: Option<u64>,
        is_late: bool,
        out: &mut Advance,
    ) {
        let task = self.entry(cpu, d);
        if let Some(dq) = self.decided.as_mut().and_then(|d| d.get_mut(cpu)) {
            dq.push_back((t, (!is_late).then_some(task)));
        }
        if is_late {
            return;
        }
        let fs = t % self.frame;
        let i = cpu * self.frame as usize + fs as usize;
        let w = EntryWrite {
            cpu,
            slot: t,
            frame_slot: fs,
            task: update(&mut self.shadow[i], task),
            perf: update(&mut self.perf[i], perf_of_ppm(d.freq_ppm)),
            ppm: update(&mut self.ppm[i], d.freq_ppm),
        };
        if w.task.is_some() || w.perf.is_some() || w.ppm.is_some() {
            out.writes.push(w);
        }
        if let Some(until) = d.idle_until {
            let cap = cur.unwrap_or(0) + self.frame.saturating_sub(2);
            self.publish_dpm(cpu, t, until, cap, out);
        }
    }

    /// The table entry of decision `d` on `cpu`: the plan task running (with [`JOB_START`] in
    /// the first slot of one of its jobs), `DPM_IDLE` or `NO_TASK`.
    fn entry(&mut self, cpu: usize, d: &Decision) -> u32 {
        match d.run {
            Run::Job { task, job, .. } => {
                let plan = self.task_of.get(task).copied().unwrap_or(NO_TASK);
                match self
                    .last_job
                    .get_mut(cpu)
                    .and_then(|l| l.get_mut(plan as usize))
                {
                    Some(last) if *last != job => {
                        *last = job;
                        plan | JOB_START
                    }
                    _ => plan,
                }
            }
            Run::Soft { task } => self.task_of.get(task).copied().unwrap_or(NO_TASK),
            // a DPM idle period: run nothing, not even be work (the core sleeps)
            Run::Idle if d.idle_until.is_some() => DPM_IDLE,
            Run::Be | Run::Idle => NO_TASK,
        }
    }

    /// A published idle period that no longer covers `t` (cut short: an admission needed the
    /// CPU) ends at `t`; BPF learns it from the lowered end and the kick.
    fn end_cut_idle_periods(&mut self, t: u64, decisions: &[Decision], out: &mut Advance) {
        for (cpu, d) in decisions.iter().enumerate().take(self.nr_cpus) {
            if d.idle_until.is_none() && self.dpm_until[cpu] > t {
                self.dpm_until[cpu] = t;
                out.dpm.push(DpmWrite {
                    cpu,
                    from: t,
                    until: t,
                    kick: true,
                });
            }
        }
    }

    /// Slot `t` on `cpu` is DPM idle until `until`: writes the period's entries ahead of their
    /// decisions (they are `DPM_IDLE` unless an admission cuts the period short, and then they are
    /// rewritten when decided) up to `cap` (`cur + frame - 2`: an entry serves one frame only, as
    /// in [`KernelPlanner::advance_through`]), then publishes the period's end
    /// (src/bpf/tt_sched.bpf.c K).
    fn publish_dpm(&mut self, cpu: usize, t: u64, until: u64, cap: u64, out: &mut Advance) {
        let frame = self.frame;
        let end = until.min(cap + 1).max(t + 1);
        for s in t + 1..end {
            let fs = s % frame;
            let i = cpu * frame as usize + fs as usize;
            if let Some(task) = update(&mut self.shadow[i], DPM_IDLE) {
                out.writes.push(EntryWrite {
                    cpu,
                    slot: s,
                    frame_slot: fs,
                    task: Some(task),
                    perf: None,
                    ppm: None,
                });
            }
        }
        if end != self.dpm_until[cpu] {
            out.dpm.push(DpmWrite {
                cpu,
                from: t,
                until: end,
                kick: end < self.dpm_until[cpu],
            });
            self.dpm_until[cpu] = end;
        }
    }
}

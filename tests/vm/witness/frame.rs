//! Run segments and the frame a run is judged in (plan, records, declared pids).

use super::*;

/// A run of one thread on one CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub cpu: u32,
    pub pid: u32,
    pub comm: String,
    pub start: u64,
    pub end: u64,
    /// the task's prio when it was switched in (`next_prio`; 120 when unknown: a CPU's first
    /// segment); below 100 it ran in the RT or deadline class
    pub prio: u32,
}

/// The plan's view the witness needs: classes and CPUs of the tasks, the slot grid, and the
/// owner of every recorded (CPU, slot).
#[derive(Clone, Debug, Default)]
pub struct Frame {
    pub t0_ns: u64,
    pub slot_ns: u64,
    /// End of the judged window (t0 + the run's duration).
    pub end_ns: u64,
    pub managed: Vec<u32>,
    /// task name → (class, cpu)
    pub tasks: BTreeMap<String, (String, Option<u32>)>,
    /// tid → task name (threads found at start; forks are followed from the trace)
    pub tids: HashMap<u32, String>,
    /// (cpu, slot) → owner (None: a free slot), for every record
    pub owners: HashMap<(u32, u64), Option<String>>,
    /// (cpu, slot) → the record's `ran_ns` (the owner's time), for `tt` records
    pub ran_ns: HashMap<(u32, u64), u64>,
    /// (cpu, slot) → how late the slot's tick came (the record's `late_ns`): until then BPF
    /// still enforces the slot before
    pub late_ns: HashMap<(u32, u64), u64>,
    /// The guard band (the summary's `guard.us`): the scheduler's timer that ends an owner's
    /// run fires this long before the boundary.
    pub guard_ns: u64,
    /// pids a scenario placed on managed CPUs on purpose (an RT load)
    pub allowed: HashSet<u32>,
    /// pids of kernel threads (children of kthreadd, listed by the guest at start and stop)
    pub kthreads: HashSet<u32>,
    /// task → windows `[from_ns, to_ns)` in which its job is over by the workload's own log
    /// (tt_jobs: from a job's finish to the next release): a task that ended its job with
    /// `sched_yield` is runnable there, yet not owed the CPU (docs/plan-format.md
    /// "completion"); a be start then is counted apart, not judged.
    pub done: HashMap<String, Vec<(u64, u64)>>,
    /// task → windows `[from_ns, to_ns)` in which BPF had it in class be although slots may
    /// name it: an adaptive task between reservations (docs/adaptive.md; the run's class-change
    /// lines). A slot decided for its old reservation (up to the lead) or its new one before a
    /// late class change runs be work by design; a be start then is counted apart, not judged.
    pub be_class: HashMap<String, Vec<(u64, u64)>>,
    /// task → when it joined the plan (a task admitted at run time, `scx_tt ctl admit`):
    /// before that its threads are outside the plan, judged as any other process.
    pub joined: HashMap<String, u64>,
    /// task → `[from, until)`: it left the plan at `from` (`scx_tt ctl remove` of a task `admit`
    /// added); in the window its threads are not judged (a thread running on the managed CPU
    /// when BPF let go of it runs on until the kick reaches it), from `until` on they are
    /// outside the plan, judged as any other process.
    pub left: HashMap<String, (u64, u64)>,
    /// task → `[from, until)`: BPF registered its threads in this window (`from` before the
    /// registration, `until` after it plus the time the kick needs to move a thread that ran
    /// on a housekeeping CPU then); in the window its threads are not judged.
    pub joining: HashMap<String, (u64, u64)>,
}

/// What the witness saw, in figures.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub events: usize,
    /// per tt task: (run on any CPU, in its own slots, outside them, on non-managed CPUs)
    pub tt: BTreeMap<String, TaskFig>,
    /// per managed CPU: ns of tasks outside the plan that are no kthread / idle / allowed
    pub foreign_ns: BTreeMap<u32, u64>,
    /// the largest foreign runs: (cpu, comm, pid, ns)
    pub foreign_top: Vec<(u32, String, u32, u64)>,
    /// per entry of `foreign_top`: its runs, when, and the kernel's last events about that pid
    /// before its first foreign run (a wakeup's target CPU, a migration, a switch): how it
    /// reached the managed CPU, printed with a failed foreign check
    pub foreign_how: Vec<String>,
    /// per managed CPU: ns of tasks outside the plan that ran there in the RT or deadline
    /// class (switched in with a prio below 100), which sched_ext does not schedule; printed,
    /// not failed (see `Frame::run`)
    pub higher_class_ns: BTreeMap<u32, u64>,
    /// the largest of them: (cpu, comm, pid, ns)
    pub higher_class_top: Vec<(u32, String, u32, u64)>,
    pub kthread_ns: BTreeMap<u32, u64>,
    /// kernel threads that are not per-CPU ones of that CPU by name (an unbound worker whose
    /// pool a CPU hotplug narrowed to this CPU): printed, not failed, as scx_tt counts every
    /// kthread as kthread time
    pub other_kthread_ns: BTreeMap<u32, u64>,
    pub allowed_ns: BTreeMap<u32, u64>,
    pub loader_ns: BTreeMap<u32, u64>,
    /// per managed CPU: ns and runs of scx_tt's slot clock thread of that CPU (`--slot-clock
    /// rt`); its switch-ins are the clock's events, as the BPF timer's expiries are
    pub clock_ns: BTreeMap<u32, u64>,
    pub clock_runs: BTreeMap<u32, u64>,
    /// switches to a be thread while the slot's owner waited runnable >= RACE_NS
    pub be_over_owner: Vec<BeStart>,
    /// the same for a thread of another tt task (after the slot's tick, the owner waiting, the
    /// same exceptions): a thread that reached the CPU without dispatch deciding for the slot
    /// (`BeStart::be` is that tt task); printed by every scenario, judged where
    /// `Bounds::tt_starts` says so (every scenario by default)
    pub tt_over_owner: Vec<BeStart>,
    /// the same within RACE_NS (counted, not a violation)
    pub be_near_race: usize,
    /// be starts while the owner waited runnable but its job was over by its own log
    pub be_after_done: usize,
    /// be starts over an owner that BPF had in class be then ([`Frame::be_class`])
    pub be_over_be_class: usize,
    /// starts of an adaptive task that BPF had in class tt then (outside its be windows,
    /// [`Frame::be_class`]): no be work; its time outside its slots is judged as a tt task's
    /// (the scenario's outside share), counted here, not judged by the be rule
    pub adaptive_in_tt: usize,
    /// be starts after the slot's nominal start but before its (late) tick: BPF still ran the
    /// slot before's decision (tick lateness has checks of its own); counted, not judged
    pub be_before_tick: usize,
    /// (cpu, slot, record ran_ns - witness owner ns, switches on the CPU in the slot, how late
    /// the scheduler's timer came at the slot's start and end together) per tt record, slot 0
    /// excepted
    pub diffs: Vec<(u32, u64, i64, u64, u64)>,
    /// the same for slot 0 (the first slot after arming: cold paths, not judged)
    pub slot0: Vec<(u32, i64)>,
    /// ns of the run excluded between `pause` and `resume` marks
    pub paused_ns: u64,
    /// (cpu, slot) in the window without a record
    pub unrecorded_slots: usize,
    /// BPF timer expiries the kernel traced (0: the kernel gave none, nothing is explained)
    pub timers: usize,
    /// of `timers`, the BPF timer's expiries (the rest: clock thread switch-ins)
    pub bpf_timers: usize,
    /// per judged boundary on a managed CPU: how late the first BPF timer at or after it fired
    pub tick_late: Vec<u64>,
    /// per ending owner's run past its boundary: how long it ran after the enforcing timer fired
    pub kick: Vec<u64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskFig {
    pub run_ns: u64,
    pub inside_ns: u64,
    pub outside_ns: u64,
    /// the part of `outside_ns` an ending owner ran past its boundary before the scheduler's
    /// timer fired (late, by the kernel's trace) and [`KICK_NS`] after
    pub late_timer_ns: u64,
    pub off_managed_ns: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BeStart {
    pub cpu: u32,
    pub slot: u64,
    pub ts_ns: u64,
    pub be: String,
    pub owner: String,
    pub owner_waited_ns: u64,
    /// how long the be thread then ran before the CPU switched again
    pub ran_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum State {
    Running,
    Waiting(u64),
    Blocked,
}

/// The scheduler's slot clock events per CPU, sorted: the BPF timer's expiries and, under the
/// helper-thread clock, its thread's switch-ins on its CPU.
pub fn clock_events(events: &[Event]) -> HashMap<u32, Vec<u64>> {
    let mut fires: HashMap<u32, Vec<u64>> = HashMap::new();
    for e in events {
        let clock = match &e.kind {
            Kind::Timer => true,
            Kind::Switch { next_comm, .. } => is_clock_thread_of(next_comm, e.cpu),
            _ => false,
        };
        if clock {
            fires.entry(e.cpu).or_default().push(e.ts_ns);
        }
    }
    for v in fires.values_mut() {
        v.sort_unstable();
    }
    fires
}

/// The first clock event on `cpu` at or after `t` (`fires`: [`clock_events`]), less the
/// trace's resolution: ftrace prints µs, cut, so a timer that fired on time may print up to
/// 1 µs before its expiry.
pub fn first_fire(fires: &HashMap<u32, Vec<u64>>, cpu: u32, t: u64) -> Option<u64> {
    let v = fires.get(&cpu)?;
    let t = t.saturating_sub(1_000);
    v.get(v.partition_point(|&x| x < t)).copied()
}

/// Per-CPU run segments from the switch events (a CPU's first segment starts at its first
/// switch; the last one ends at `end`).
pub fn segments(events: &[Event], end: u64) -> Vec<Segment> {
    // per CPU: the running task's (pid, comm, since, prio)
    let mut cur: BTreeMap<u32, (u32, String, u64, u32)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        if let Kind::Switch {
            prev_pid,
            prev_comm,
            next_pid,
            next_comm,
            next_prio,
            ..
        } = &e.kind
        {
            let (start, prio) = cur.get(&e.cpu).map_or((e.ts_ns, 120), |c| (c.2, c.3));
            if start < e.ts_ns {
                out.push(Segment {
                    cpu: e.cpu,
                    pid: *prev_pid,
                    comm: prev_comm.clone(),
                    start,
                    end: e.ts_ns,
                    prio,
                });
            }
            cur.insert(e.cpu, (*next_pid, next_comm.clone(), e.ts_ns, *next_prio));
        }
    }
    for (cpu, (pid, comm, start, prio)) in cur {
        if start < end {
            out.push(Segment {
                cpu,
                pid,
                comm,
                start,
                end,
                prio,
            });
        }
    }
    out
}

impl Frame {
    /// One line on a foreign run of `pid` on managed CPU `cpu`: how many runs, the first one's
    /// time and slot, and the kernel's last events about `pid` up to its first run there.
    pub(super) fn foreign_how(
        &self,
        events: &[Event],
        cpu: u32,
        comm: &str,
        pid: u32,
        runs: &[(u64, u64)],
    ) -> String {
        let rel = |t: u64| (t as i64 - self.t0_ns as i64) as f64 / 1e6;
        let first = runs.first().map_or(0, |r| r.0);
        let about: Vec<String> = events
            .iter()
            .filter(|e| e.ts_ns <= first)
            .filter(|e| match &e.kind {
                Kind::Switch {
                    prev_pid, next_pid, ..
                } => *prev_pid == pid || *next_pid == pid,
                Kind::Wakeup { pid: p, .. } | Kind::Migrate { pid: p, .. } => *p == pid,
                Kind::Fork { child, .. } => *child == pid,
                _ => false,
            })
            .map(|e| format!("{:+.3} ms [{}] {:?}", rel(e.ts_ns), e.cpu, e.kind))
            .collect();
        let tail = &about[about.len().saturating_sub(6)..];
        format!(
            "{comm} {pid} on CPU {cpu}: {} runs, the first from {:+.3} ms (first judged piece {:+.3} ms, slot {}); \
             before it: {}",
            runs.len(),
            rel(first),
            rel(runs[0].1),
            self.slot_of(runs[0].1),
            if tail.is_empty() {
                "no event about it since the witness started".to_string()
            } else {
                tail.join("; ")
            }
        )
    }

    pub(super) fn slot_of(&self, t: u64) -> u64 {
        (t - self.t0_ns) / self.slot_ns
    }

    pub(super) fn slot_start(&self, s: u64) -> u64 {
        self.t0_ns + s * self.slot_ns
    }

    /// When the scheduler's timer came for slot `slot` on `cpu` (the first BPF timer expiry
    /// from its start on, within the slot), by the kernel's trace.
    pub(super) fn tick_fire(
        &self,
        fires: &HashMap<u32, Vec<u64>>,
        cpu: u32,
        slot: u64,
    ) -> Option<u64> {
        first_fire(fires, cpu, self.slot_start(slot)).filter(|&t| t < self.slot_start(slot + 1))
    }

    /// Cuts `[a, b)` at slot boundaries inside the window: (slot, piece start, piece end).
    pub(super) fn pieces(&self, a: u64, b: u64) -> Vec<(u64, u64, u64)> {
        let (mut a, b) = (a.max(self.t0_ns), b.min(self.end_ns));
        let mut out = Vec::new();
        while a < b {
            let s = self.slot_of(a);
            let e = self.slot_start(s + 1).min(b);
            out.push((s, a, e));
            a = e;
        }
        out
    }

    /// Judges the events (sorted by time).
    pub fn analyse(&self, events: &[Event]) -> Report {
        // windows the scenario marked (pause .. resume): their slots are not judged
        let mut windows = Vec::new();
        let mut open: Option<u64> = None;
        for e in events {
            match &e.kind {
                Kind::Mark(m) if m == "pause" => open = Some(e.ts_ns),
                Kind::Mark(m) if m == "resume" => {
                    if let Some(a) = open.take() {
                        windows.push((a, e.ts_ns));
                    }
                }
                _ => {}
            }
        }
        if let Some(a) = open {
            windows.push((a, self.end_ns));
        }
        if !windows.is_empty() {
            let mut f = self.clone();
            let (t0, slot_ns) = (f.t0_ns, f.slot_ns);
            f.owners.retain(|&(_, slot), _| {
                let (a, b) = (t0 + slot * slot_ns, t0 + (slot + 1) * slot_ns);
                !windows.iter().any(|&(x, y)| a < y && x < b)
            });
            f.ran_ns.retain(|k, _| f.owners.contains_key(k));
            let mut r = f.analyse_judged(events);
            r.paused_ns = windows.iter().map(|w| w.1 - w.0).sum();
            return r;
        }
        self.analyse_judged(events)
    }
}

/// A `--trace` record, the fields the witness needs (the harness's own reader, like
/// [`Summary`]).
#[derive(Debug, Deserialize)]
pub(super) struct Rec {
    slot: u64,
    cpu: u32,
    kind: String,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    ran_ns: Option<u64>,
    #[serde(default)]
    late_ns: Option<u64>,
}

/// The frame of a run: its summary and trace files (the trace header must carry the summary's
/// `t0_ns`), and the declared pids.
pub fn frame(
    out: &VmOutput,
    run: &str,
    summary: &str,
    trace: &str,
    allowed: &[u32],
) -> Result<Frame> {
    let s: Summary = out.summary(summary)?;
    let header = out.trace_header(trace)?;
    if header.t0_ns != Some(s.t0_ns) {
        return Err(format!(
            "{trace}: header t0_ns {:?} differs from the summary's {}",
            header.t0_ns, s.t0_ns
        ));
    }
    let recs: Vec<Rec> = out.records(trace)?;
    let kthreads = out.file(&format!("{run}.kthreads"))?;
    let mut f = Frame {
        t0_ns: s.t0_ns,
        slot_ns: header.slot_ns,
        end_ns: s.t0_ns + s.duration_ns,
        guard_ns: s.guard.as_ref().map_or(0, |g| g.us * 1000),
        managed: header.cpus.clone(),
        allowed: allowed.iter().copied().collect(),
        kthreads: kthreads
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect(),
        ..Frame::default()
    };
    for t in &s.tasks {
        // an adaptive task runs as be until it has a reservation, then in its slots only
        // (docs/adaptive.md): judged as be, its owner time counted in the slots it owns
        let class = match t.class.as_str() {
            "adaptive" => "be".to_string(),
            other => other.to_string(),
        };
        f.tasks.insert(t.name.clone(), (class, t.cpu));
        for &tid in &t.tids {
            f.tids.insert(tid, t.name.clone());
        }
    }
    for r in recs {
        let owner = (r.kind == "tt").then(|| r.task.clone()).flatten();
        if let (Some(_), Some(ns)) = (&owner, r.ran_ns) {
            f.ran_ns.insert((r.cpu, r.slot), ns);
        }
        if let Some(l) = r.late_ns {
            f.late_ns.insert((r.cpu, r.slot), l);
        }
        f.owners.insert((r.cpu, r.slot), owner);
    }
    Ok(f)
}

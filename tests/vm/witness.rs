//! The witness: judges a run by the kernel's own scheduling events, not by scx_tt's records.
//!
//! The guest records `sched_switch`, `sched_wakeup(_new)`, `sched_process_fork` and `sched_migrate_task` on every CPU
//! with ftrace (`witness_start` / `witness_stop NAME` in tests/vm/guest/lib.sh), time-stamped
//! with the `mono` trace clock, which is CLOCK_MONOTONIC: the clock of scx_tt's `t0_ns`
//! (summary JSON and `--trace` header). Here the events become per-CPU run segments, aligned to
//! the slot grid `t0_ns + k * slot`, and are checked against the plan:
//!
//! - **owners only in their slots**: a `tt` task's run time on a managed CPU in slots it does
//!   not own, and on any other CPU (housekeeping CPUs never run a plan task once slot 0 began);
//! - **nothing outside the plan on managed CPUs** but per-CPU kernel threads of that CPU (by
//!   name, `name/N` or `name/N:...`), the idle task, scx_tt's own threads (the loader arms a
//!   timer there) and the pids a scenario declares (an RT task it placed there on purpose);
//! - **be work never starts while the owner is runnable**: a switch to a `be` thread on a
//!   managed CPU in a slot whose owner had been runnable (woken, or preempted while runnable)
//!   and not running for at least [`RACE_NS`] before;
//! - **records agree**: each `tt` record's `ran_ns` against the owner's run time in that slot
//!   on that CPU from the witness, within [`agreement_tol_ns`].
//!
//! Which slot a CPU's table gives to whom is taken from scx_tt's records (`kind` `tt`, `task`):
//! the owner checks of each scenario compare those owners with the plan's tables; the witness
//! judges what ran against them. Slots without a record (a tick more than a slot late) are not
//! judged and are counted. docs/vm-harness.md ("The witness") has the tolerances.

use crate::harness::{Checks, Result, Summary, VmOutput};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A switch to a be thread counts as "while the owner was runnable" only when the owner had
/// been waiting this long: an owner woken on another CPU becomes visible to the managed CPU's
/// dispatch only after its enqueue, and the dispatch → switch path itself takes time (BPF,
/// under TCG tens of µs; src/bpf/tt_sched.bpf.c G names the race).
pub const RACE_NS: u64 = 200_000;

/// How far a record's `ran_ns` may differ from the witness's owner time in the slot: scx_tt
/// charges from ops.running to ops.stopping, the kernel's trace point fires between those
/// two, and the trace clock has µs resolution; per switch in the slot a few µs of emulated
/// kernel work separate them. 200 µs, or 2 % of the slot when that is more.
pub fn agreement_tol_ns(slot_ns: u64) -> u64 {
    (slot_ns / 50).max(200_000)
}

/// Added to [`agreement_tol_ns`] per context switch the witness saw on the CPU in the slot:
/// scx_tt charges the time from one task's ops.stopping to the next one's ops.running to no
/// one, the witness to the task switched out; under TCG that is 5-10 us per switch (measured:
/// a slot with ~150 fork/exec ping-pong switches of `semantics`' sleeper, 1.12 ms, 7.5 us each).
pub const PER_SWITCH_TOL_NS: u64 = 20_000;

/// How long after one of the scheduler's BPF timers fired on a CPU (the kernel's
/// `hrtimer_expire_entry`) an owner whose slot is over may still run: the callback itself (the
/// `tick_ns` column, 40-200 us under TCG), the return from the interrupt and `__schedule`.
/// An ending owner's run past its boundary is the timer's lateness (the platform's) up to the
/// first timer at or after `boundary - guard`, plus this; beyond it, the scheduler's.
pub const KICK_NS: u64 = 500_000;

/// One scheduling event of the kernel's trace.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Switch {
        prev_pid: u32,
        prev_comm: String,
        /// `R`/`R+` = preempted while runnable; anything else = blocked or exiting.
        prev_state: String,
        next_pid: u32,
        next_comm: String,
        /// the kernel's prio of the next task: below 100 in the RT or deadline class (a task
        /// priority-inherited from an RT waiter is there too, out of sched_ext's hands)
        next_prio: u32,
    },
    Wakeup {
        pid: u32,
        /// the CPU the task was woken onto (`target_cpu`)
        target: u32,
    },
    /// `sched_migrate_task`: the kernel moved `pid` from `orig` to `dest` (diagnostics only:
    /// how a foreign task reached a managed CPU)
    Migrate {
        pid: u32,
        orig: u32,
        dest: u32,
    },
    Fork {
        parent: u32,
        child: u32,
    },
    /// `witness_mark TEXT` of the guest (ftrace's trace_marker): `pause` / `resume` bracket a
    /// window the scenario takes the scheduler away on purpose (a restart), not judged.
    Mark(String),
    /// A BPF timer's hrtimer expired on the event's CPU (`hrtimer_expire_entry` with
    /// `function=bpf_timer_cb`): the moment the scheduler's slot or guard-band callback ran, as
    /// the kernel saw it.
    Timer,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub ts_ns: u64,
    pub cpu: u32,
    pub kind: Kind,
}

/// `seconds.micros` of the trace clock, in ns.
fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let sec: u64 = sec.parse().ok()?;
    let frac_ns: u64 = format!("{frac:0<9}").parse().ok()?;
    sec.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// The value of `key=` in `s`, up to the next ` next_key=` (or the end): comms may hold spaces.
fn field<'a>(s: &'a str, key: &str, next: Option<&str>) -> Option<&'a str> {
    let start = s.find(&format!("{key}="))? + key.len() + 1;
    let rest = &s[start..];
    let end = match next {
        Some(n) => rest.find(&format!(" {n}="))?,
        None => rest.len(),
    };
    Some(rest[..end].trim())
}

fn num(s: &str, key: &str, next: Option<&str>) -> Option<u32> {
    field(s, key, next)?.parse().ok()
}

/// One line of ftrace's text output; `Ok(None)` for events the witness does not use.
pub fn parse_line(line: &str) -> std::result::Result<Option<Event>, String> {
    let bad = || format!("not an ftrace event line: {line:?}");
    // "<comm>-<pid> [CPU] FLAGS TS: EVENT: FIELDS"
    let (head, rest) = if let Some((head, text)) = line.split_once(": tracing_mark_write: ") {
        (head, format!("mark: {}", text.trim()))
    } else if let Some((head, args)) = line.split_once(": hrtimer_expire_entry: ") {
        (head, format!("hrtimer: {}", args.trim()))
    } else {
        let (head, rest) = line.split_once(": sched_").ok_or_else(bad)?;
        (head, rest.to_string())
    };
    let mut toks = head.split_whitespace().rev();
    let ts = toks.next().unwrap_or("");
    let ts_ns = parse_ts(ts).ok_or_else(bad)?;
    let _flags = toks.next();
    let cpu = toks
        .next()
        .and_then(|t| t.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
        .ok_or_else(bad)?;
    let (name, args) = rest.split_once(": ").ok_or_else(bad)?;
    let kind = match name {
        "mark" => match args.strip_prefix("tt-witness ") {
            Some(m) => Kind::Mark(m.to_string()),
            None => return Ok(None),
        },
        "hrtimer" => match field(args, "function", Some("now")) {
            Some("bpf_timer_cb") => Kind::Timer,
            Some(_) => return Ok(None),
            None => return Err(bad()),
        },
        "switch" => Kind::Switch {
            prev_comm: field(args, "prev_comm", Some("prev_pid"))
                .ok_or_else(bad)?
                .into(),
            prev_pid: num(args, "prev_pid", Some("prev_prio")).ok_or_else(bad)?,
            prev_state: field(args, "prev_state", None)
                .and_then(|v| v.split(" ==>").next())
                .ok_or_else(bad)?
                .into(),
            next_comm: field(args, "next_comm", Some("next_pid"))
                .ok_or_else(bad)?
                .into(),
            next_pid: num(args, "next_pid", Some("next_prio")).ok_or_else(bad)?,
            next_prio: field(args, "next_prio", None)
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .ok_or_else(bad)?,
        },
        "wakeup" | "wakeup_new" => Kind::Wakeup {
            pid: num(args, "pid", Some("prio")).ok_or_else(bad)?,
            target: field(args, "target_cpu", None)
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .ok_or_else(bad)?,
        },
        "migrate_task" => Kind::Migrate {
            pid: num(args, "pid", Some("prio")).ok_or_else(bad)?,
            orig: num(args, "orig_cpu", Some("dest_cpu")).ok_or_else(bad)?,
            dest: field(args, "dest_cpu", None)
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .ok_or_else(bad)?,
        },
        "process_fork" => Kind::Fork {
            parent: num(args, "pid", Some("child_comm")).ok_or_else(bad)?,
            child: num(args, "child_pid", None).ok_or_else(bad)?,
        },
        _ => return Ok(None),
    };
    Ok(Some(Event { ts_ns, cpu, kind }))
}

pub fn parse(text: &str) -> std::result::Result<Vec<Event>, String> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(e) = parse_line(line).map_err(|e| format!("line {}: {e}", i + 1))? {
            events.push(e);
        }
    }
    // per-CPU buffers are merged by time stamp; keep that order (stable for equal stamps)
    events.sort_by_key(|e| e.ts_ns);
    Ok(events)
}

/// scx_tt's slot clock thread of `cpu` (`--slot-clock rt`, src/sched/rt_clock.rs): `tt-clock/1`.
/// Judged before the per-CPU kthread rule, which its name would otherwise pass.
pub fn is_clock_thread_of(comm: &str, cpu: u32) -> bool {
    comm.strip_prefix("tt-clock/")
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n == cpu)
}

/// A per-CPU kernel thread of `cpu` by its name: `ksoftirqd/1`, `migration/1`, `kworker/1:2H`.
pub fn is_percpu_kthread_of(comm: &str, cpu: u32) -> bool {
    let Some((_, tail)) = comm.rsplit_once('/') else {
        return false;
    };
    let n = tail.split(':').next().unwrap_or("");
    n.parse::<u32>().is_ok_and(|n| n == cpu)
}

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
enum State {
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
    fn foreign_how(
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

    fn slot_of(&self, t: u64) -> u64 {
        (t - self.t0_ns) / self.slot_ns
    }

    fn slot_start(&self, s: u64) -> u64 {
        self.t0_ns + s * self.slot_ns
    }

    /// When the scheduler's timer came for slot `slot` on `cpu` (the first BPF timer expiry
    /// from its start on, within the slot), by the kernel's trace.
    fn tick_fire(&self, fires: &HashMap<u32, Vec<u64>>, cpu: u32, slot: u64) -> Option<u64> {
        first_fire(fires, cpu, self.slot_start(slot)).filter(|&t| t < self.slot_start(slot + 1))
    }

    /// Cuts `[a, b)` at slot boundaries inside the window: (slot, piece start, piece end).
    fn pieces(&self, a: u64, b: u64) -> Vec<(u64, u64, u64)> {
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

    fn analyse_judged(&self, events: &[Event]) -> Report {
        let mut r = Report {
            events: events.len(),
            ..Report::default()
        };
        // the task of every thread: found at start, or forked by a thread of the task
        let mut task_of = self.tids.clone();
        for e in events {
            if let Kind::Fork { parent, child } = e.kind {
                if let Some(t) = task_of.get(&parent).cloned() {
                    task_of.insert(child, t);
                }
            }
        }
        let class = |pid: u32, at: u64| -> Option<(&str, &String)> {
            let t = task_of.get(&pid)?;
            if self
                .joining
                .get(t)
                .is_some_and(|&(from, until)| at >= from && at < until)
            {
                return Some(("leaving", t));
            }
            if self.joined.get(t).is_some_and(|&j| at < j)
                || self.left.get(t).is_some_and(|&(_, until)| at >= until)
            {
                return None;
            }
            if self.left.get(t).is_some_and(|&(from, _)| at >= from) {
                return Some(("leaving", t));
            }
            Some((self.tasks.get(t)?.0.as_str(), t))
        };
        for name in self.tasks.iter().filter(|t| t.1 .0 == "tt").map(|t| t.0) {
            r.tt.insert(name.clone(), TaskFig::default());
        }
        let managed: HashSet<u32> = self.managed.iter().copied().collect();
        let fires = clock_events(events);
        r.bpf_timers = events.iter().filter(|e| e.kind == Kind::Timer).count();
        r.timers = fires.values().map(Vec::len).sum();
        for e in events {
            if let Kind::Switch { next_comm, .. } = &e.kind {
                if is_clock_thread_of(next_comm, e.cpu) {
                    *r.clock_runs.entry(e.cpu).or_default() += 1;
                }
            }
        }
        // how late the scheduler's timer came after each recorded boundary (a slot's start)
        let tick_late = |cpu: u32, slot: u64| -> u64 {
            self.tick_fire(&fires, cpu, slot)
                .map_or(0, |t| t.saturating_sub(self.slot_start(slot)))
        };
        let mut keys: Vec<_> = self.owners.keys().copied().collect();
        keys.sort();
        for &(cpu, slot) in &keys {
            if slot > 0 && self.tick_fire(&fires, cpu, slot).is_some() {
                r.tick_late.push(tick_late(cpu, slot));
            }
        }
        let mut foreign: BTreeMap<(u32, String, u32), u64> = BTreeMap::new();
        let mut higher: BTreeMap<(u32, String, u32), u64> = BTreeMap::new();
        // (cpu, pid) -> (segment start, first judged piece) per foreign run
        let mut foreign_runs: BTreeMap<(u32, u32), Vec<(u64, u64)>> = BTreeMap::new();
        let mut owner_ns: HashMap<(u32, u64), u64> = HashMap::new();
        for seg in segments(events, self.end_ns) {
            let on_managed = managed.contains(&seg.cpu);
            for (slot, a, b) in self.pieces(seg.start, seg.end) {
                let ns = b - a;
                // only slots with a record are judged (not those a late tick skipped, nor a
                // restart's gap, when no scheduler was attached)
                if on_managed && !self.owners.contains_key(&(seg.cpu, slot)) {
                    continue;
                }
                match class(seg.pid, a) {
                    Some(("tt", t)) => {
                        let f = r.tt.get_mut(t).expect("tt task");
                        let own_cpu = self.tasks.get(t).and_then(|x| x.1);
                        if !on_managed
                            && !own_cpu.is_some_and(|c| self.owners.contains_key(&(c, slot)))
                        {
                            continue;
                        }
                        f.run_ns += ns;
                        let owner = self.owners.get(&(seg.cpu, slot));
                        if !on_managed {
                            f.off_managed_ns += ns;
                        } else if owner.is_some_and(|o| o.as_ref() == Some(t)) {
                            f.inside_ns += ns;
                            *owner_ns.entry((seg.cpu, slot)).or_default() += ns;
                        } else if owner.is_some() {
                            f.outside_ns += ns;
                            // the ending owner past its boundary, until the scheduler's
                            // timer (guard band or slot tick) fired and a kick's time after
                            // (a run that crossed the boundary, of the slot before's owner; a
                            // timer later than the slot explains nothing)
                            let bnd = self.slot_start(slot);
                            let ended = slot > 0
                                && a == bnd
                                && self.owners.get(&(seg.cpu, slot - 1)) == Some(&Some(t.clone()));
                            let fire =
                                first_fire(&fires, seg.cpu, bnd.saturating_sub(self.guard_ns))
                                    .filter(|&x| x < self.slot_start(slot + 1));
                            if let (true, Some(fire)) = (ended, fire) {
                                let until = fire.max(bnd) + KICK_NS;
                                f.late_timer_ns += b.min(until) - a;
                                if b > fire {
                                    r.kick.push(b - fire);
                                }
                            }
                        }
                    }
                    // a be-class task owns a slot only as an adaptive task holding a
                    // reservation (docs/adaptive.md): its run there is the record's owner time
                    Some((_, t)) => {
                        if on_managed && self.owners.get(&(seg.cpu, slot)) == Some(&Some(t.clone()))
                        {
                            *owner_ns.entry((seg.cpu, slot)).or_default() += ns;
                        }
                    }
                    None if !on_managed || seg.pid == 0 => {}
                    None if is_clock_thread_of(&seg.comm, seg.cpu) => {
                        *r.clock_ns.entry(seg.cpu).or_default() += ns
                    }
                    None if is_percpu_kthread_of(&seg.comm, seg.cpu) => {
                        *r.kthread_ns.entry(seg.cpu).or_default() += ns
                    }
                    None if self.kthreads.contains(&seg.pid) => {
                        *r.other_kthread_ns.entry(seg.cpu).or_default() += ns
                    }
                    None if self.allowed.contains(&seg.pid) => {
                        *r.allowed_ns.entry(seg.cpu).or_default() += ns
                    }
                    None if seg.comm == "scx_tt" => *r.loader_ns.entry(seg.cpu).or_default() += ns,
                    // switched in in the RT or deadline class: out of sched_ext's hands (an
                    // RT task whose affinity allows the CPU, or a task priority-inherited
                    // from an RT waiter and pulled here by RT balancing; BPF sends it away
                    // as soon as it is back in sched_ext: its `evictions`)
                    None if seg.prio < 100 => {
                        *r.higher_class_ns.entry(seg.cpu).or_default() += ns;
                        *higher
                            .entry((seg.cpu, seg.comm.clone(), seg.pid))
                            .or_default() += ns;
                    }
                    None => {
                        *r.foreign_ns.entry(seg.cpu).or_default() += ns;
                        *foreign
                            .entry((seg.cpu, seg.comm.clone(), seg.pid))
                            .or_default() += ns;
                        let runs = foreign_runs.entry((seg.cpu, seg.pid)).or_default();
                        if runs.last().is_none_or(|&(s, _)| s != seg.start) {
                            runs.push((seg.start, a));
                        }
                    }
                }
            }
        }
        for &cpu in &self.managed {
            r.foreign_ns.entry(cpu).or_default();
        }
        let mut top: Vec<_> = higher.into_iter().collect();
        top.sort_by_key(|x| std::cmp::Reverse(x.1));
        r.higher_class_top = top
            .into_iter()
            .take(5)
            .map(|((c, comm, pid), ns)| (c, comm, pid, ns))
            .collect();
        let mut top: Vec<_> = foreign.into_iter().collect();
        top.sort_by_key(|x| std::cmp::Reverse(x.1));
        r.foreign_top = top
            .into_iter()
            .take(5)
            .map(|((c, comm, pid), ns)| (c, comm, pid, ns))
            .collect();
        r.foreign_how = r
            .foreign_top
            .iter()
            .map(|(cpu, comm, pid, _)| {
                let runs = &foreign_runs[&(*cpu, *pid)];
                self.foreign_how(events, *cpu, comm, *pid, runs)
            })
            .collect();
        // record agreement
        let mut switches: HashMap<(u32, u64), u64> = HashMap::new();
        for e in events {
            if matches!(e.kind, Kind::Switch { .. })
                && e.ts_ns >= self.t0_ns
                && e.ts_ns < self.end_ns
            {
                *switches.entry((e.cpu, self.slot_of(e.ts_ns))).or_default() += 1;
            }
        }
        let mut keys: Vec<_> = self.ran_ns.keys().copied().collect();
        keys.sort();
        for k in keys {
            let w = owner_ns.get(&k).copied().unwrap_or(0);
            let d = self.ran_ns[&k] as i64 - w as i64;
            if k.1 == 0 {
                r.slot0.push((k.0, d));
            } else {
                r.diffs.push((
                    k.0,
                    k.1,
                    d,
                    switches.get(&k).copied().unwrap_or(0),
                    tick_late(k.0, k.1) + tick_late(k.0, k.1 + 1),
                ));
            }
        }
        // slots of the window without a record
        let last = self.slot_of(self.end_ns.max(self.t0_ns + 1) - 1);
        for &cpu in &self.managed {
            r.unrecorded_slots += (0..last)
                .filter(|s| !self.owners.contains_key(&(cpu, *s)))
                .count();
        }
        self.be_starts(events, &task_of, &fires, &mut r);
        r
    }

    /// Replays the events: who waits runnable, and every switch to a be thread on a managed CPU.
    fn be_starts(
        &self,
        events: &[Event],
        task_of: &HashMap<u32, String>,
        fires: &HashMap<u32, Vec<u64>>,
        r: &mut Report,
    ) {
        let mut state: HashMap<u32, State> = HashMap::new();
        // (a tt start: index into tt_over_owner, else into be_over_owner; cpu)
        let mut pending: Option<(bool, usize, u32)> = None;
        let managed: HashSet<u32> = self.managed.iter().copied().collect();
        for e in events {
            match &e.kind {
                Kind::Wakeup { pid, .. } => {
                    let s = state.entry(*pid).or_insert(State::Blocked);
                    if *s == State::Blocked {
                        *s = State::Waiting(e.ts_ns);
                    }
                }
                Kind::Fork { .. } | Kind::Mark(_) | Kind::Timer | Kind::Migrate { .. } => {}
                Kind::Switch {
                    prev_pid,
                    prev_state,
                    next_pid,
                    next_comm: _,
                    ..
                } => {
                    if let Some((tt, i, cpu)) = pending {
                        if cpu == e.cpu {
                            let b = if tt {
                                &mut r.tt_over_owner[i]
                            } else {
                                &mut r.be_over_owner[i]
                            };
                            b.ran_ns = e.ts_ns - b.ts_ns;
                            pending = None;
                        }
                    }
                    let prev = if prev_state.starts_with('R') {
                        State::Waiting(e.ts_ns)
                    } else {
                        State::Blocked
                    };
                    if *prev_pid != 0 {
                        state.insert(*prev_pid, prev);
                    }
                    state.insert(*next_pid, State::Running);
                    if !managed.contains(&e.cpu) || e.ts_ns < self.t0_ns || e.ts_ns >= self.end_ns {
                        continue;
                    }
                    let Some(be) = task_of.get(next_pid) else {
                        continue;
                    };
                    let class = self.tasks.get(be).map(|t| t.0.as_str());
                    let is_tt = class == Some("tt");
                    if class != Some("be") && !is_tt {
                        continue;
                    }
                    let slot = self.slot_of(e.ts_ns);
                    let Some(Some(owner)) = self.owners.get(&(e.cpu, slot)) else {
                        continue;
                    };
                    if is_tt && owner == be {
                        continue;
                    }
                    // an owner whose threads are not (yet, or any more) in the plan does not
                    // wait for its slot: joining, before it joined, leaving or left
                    let t = e.ts_ns;
                    if self
                        .joining
                        .get(owner)
                        .is_some_and(|&(a, b)| t >= a && t < b)
                        || self.joined.get(owner).is_some_and(|&j| t < j)
                        || self.left.get(owner).is_some_and(|&(a, _)| t >= a)
                    {
                        continue;
                    }
                    // the owner waits when one of its threads is runnable and none runs
                    let mut since: Option<u64> = None;
                    let mut running = false;
                    for (pid, t) in task_of {
                        if t != owner {
                            continue;
                        }
                        match state.get(pid) {
                            Some(State::Running) => running = true,
                            Some(State::Waiting(s)) => {
                                since = Some(since.map_or(*s, |x: u64| x.min(*s)))
                            }
                            _ => {}
                        }
                    }
                    let Some(since) = since.filter(|_| !running) else {
                        continue;
                    };
                    let waited = e.ts_ns - since;
                    let over = self.done.get(owner).is_some_and(|w| {
                        w.iter().any(|&(from, to)| from <= e.ts_ns && e.ts_ns < to)
                    });
                    if over {
                        if !is_tt {
                            r.be_after_done += 1;
                        }
                        continue;
                    }
                    let be_class = self.be_class.get(owner).is_some_and(|w| {
                        w.iter().any(|&(from, to)| from <= e.ts_ns && e.ts_ns < to)
                    });
                    if be_class {
                        if !is_tt {
                            r.be_over_be_class += 1;
                        }
                        continue;
                    }
                    // the slot's tick: the kernel's timer trace, else the record's lateness
                    let start = self.slot_start(slot);
                    let tick = match self.tick_fire(fires, e.cpu, slot) {
                        Some(t) => t,
                        None => start + self.late_ns.get(&(e.cpu, slot)).copied().unwrap_or(0),
                    };
                    if e.ts_ns < tick {
                        if !is_tt {
                            r.be_before_tick += 1;
                        }
                        continue;
                    }
                    if waited < RACE_NS {
                        if !is_tt {
                            r.be_near_race += 1;
                        }
                        continue;
                    }
                    if !is_tt
                        && self.be_class.get(be).is_some_and(|w| {
                            !w.iter().any(|&(from, to)| from <= e.ts_ns && e.ts_ns < to)
                        })
                    {
                        r.adaptive_in_tt += 1;
                        continue;
                    }
                    let list = if is_tt {
                        &mut r.tt_over_owner
                    } else {
                        &mut r.be_over_owner
                    };
                    list.push(BeStart {
                        cpu: e.cpu,
                        slot,
                        ts_ns: e.ts_ns,
                        be: be.clone(),
                        owner: owner.clone(),
                        owner_waited_ns: waited,
                        ran_ns: 0,
                    });
                    pending = Some((is_tt, list.len() - 1, e.cpu));
                }
            }
        }
    }
}

/// A `--trace` record, the fields the witness needs (the harness's own reader, like
/// [`Summary`]).
#[derive(Debug, Deserialize)]
struct Rec {
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

/// Bounds of the witness checks a scenario chooses.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// pids placed on managed CPUs on purpose
    pub allowed: Vec<u32>,
    /// a tt task's run time outside its own slots, share of its run time (timing)
    pub outside_share: f64,
    /// per task, windows in which its job is over by the workload's own log ([`Frame::done`])
    pub done: HashMap<String, Vec<(u64, u64)>>,
    /// per adaptive task, windows in which BPF had it in class be ([`Frame::be_class`])
    pub be_class: HashMap<String, Vec<(u64, u64)>>,
    /// per task admitted at run time, when it joined the plan ([`Frame::joined`])
    pub joined: HashMap<String, u64>,
    /// per task removed at run time, when it left the plan ([`Frame::left`])
    pub left: HashMap<String, (u64, u64)>,
    /// per task admitted at run time, when BPF registered it ([`Frame::joining`])
    pub joining: HashMap<String, (u64, u64)>,
    /// share of the tt records whose `ran_ns` may differ from the witness by more than
    /// [`agreement_tol_ns`] (timing: the host descheduling the vCPU thread between
    /// ops.running and the trace point, both inside one __schedule, makes the record give the
    /// stall to the owner and the witness to the task before it; docs/vm-harness.md)
    pub disagree_share: f64,
    /// Judge [`Report::tt_over_owner`] (exact; the default): no thread of a tt task starts in
    /// another owner's slot after its tick while that owner waits. `false` only prints it.
    pub tt_starts: bool,
    /// The run's slot clock was scx_tt's helper threads (`--slot-clock rt`): judge (exact)
    /// that no BPF timer fired and that each managed CPU's clock thread ran, on that CPU only
    /// (elsewhere it is foreign time).
    pub rt_clock: bool,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            allowed: Vec::new(),
            done: HashMap::new(),
            be_class: HashMap::new(),
            joined: HashMap::new(),
            left: HashMap::new(),
            joining: HashMap::new(),
            outside_share: 0.05,
            disagree_share: 0.02,
            tt_starts: true,
            rt_clock: false,
        }
    }
}

/// The `p` quantile of `sorted` (nearest rank), 0 when empty.
fn quantile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        0
    } else {
        sorted[((sorted.len() - 1) as f64 * p).round() as usize]
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Reads the witness of run `run` and checks it (exact: nothing foreign, no plan task on a
/// housekeeping CPU, no be start over a waiting owner, nothing lost; timing: outside share,
/// record agreement). Prints every figure. Returns the analysis (None when the witness could not
/// be read, which is a failed check) for a caller's checks that derive a bound from it.
pub fn check(c: &mut Checks, out: &VmOutput, run: &str, b: &Bounds) -> Option<Report> {
    let (summary, trace) = (format!("{run}.json"), format!("{run}.trace.jsonl"));
    check_files(c, out, run, &summary, &trace, b)
}

/// [`check`] for a run whose summary and trace have other names than `RUN.json` and
/// `RUN.trace.jsonl` (the witness is `RUN.witness` either way).
pub fn check_files(
    c: &mut Checks,
    out: &VmOutput,
    run: &str,
    summary: &str,
    trace: &str,
    b: &Bounds,
) -> Option<Report> {
    let lost = out.number(&format!("{run}_witness_lost"));
    c.check(
        lost == Ok(0),
        format!("{run}: witness: ftrace lost no event (lost {lost:?})"),
    );
    let (f, events) = match frame(out, run, summary, trace, &b.allowed).and_then(|f| {
        let text = out.file(&format!("{run}.witness"))?;
        Ok((f, parse(&text).map_err(|e| format!("{run}.witness: {e}"))?))
    }) {
        Ok(x) => x,
        Err(e) => {
            c.check(false, format!("{run}: witness: {e}"));
            return None;
        }
    };
    let mut f = f;
    f.done = b.done.clone();
    f.be_class = b.be_class.clone();
    f.joined = b.joined.clone();
    f.left = b.left.clone();
    f.joining = b.joining.clone();
    let r = f.analyse(&events);
    report(c, run, &f, &r, b);
    Some(r)
}

/// The checks and figures of one analysed witness.
pub fn report(c: &mut Checks, run: &str, f: &Frame, r: &Report, b: &Bounds) {
    println!(
        "  {run}: witness: {} events, t0 {} ns, slot {} us, window {:.2} s, {} (CPU, slot)s without a record, {:.3} s marked paused",
        r.events,
        f.t0_ns,
        f.slot_ns / 1000,
        (f.end_ns - f.t0_ns) as f64 / 1e9,
        r.unrecorded_slots,
        r.paused_ns as f64 / 1e9
    );
    c.check(
        r.events > 0,
        format!("{run}: witness: events recorded ({})", r.events),
    );
    for (cpu, ns) in &r.foreign_ns {
        c.check(
            *ns == 0,
            format!(
                "{run}: witness: CPU {cpu}: nothing outside the plan ran but kthreads \
                 ({:.3} ms per-CPU kthreads, {:.3} ms other kthreads, {:.3} ms declared, {:.3} ms \
                 scx_tt, {:.3} ms in {} runs of its slot clock thread, {:.3} ms in a higher class{}, \
                 foreign {:.3} ms{})",
                ms(r.kthread_ns.get(cpu).copied().unwrap_or(0)),
                ms(r.other_kthread_ns.get(cpu).copied().unwrap_or(0)),
                ms(r.allowed_ns.get(cpu).copied().unwrap_or(0)),
                ms(r.loader_ns.get(cpu).copied().unwrap_or(0)),
                ms(r.clock_ns.get(cpu).copied().unwrap_or(0)),
                r.clock_runs.get(cpu).copied().unwrap_or(0),
                ms(r.higher_class_ns.get(cpu).copied().unwrap_or(0)),
                if r.higher_class_ns.get(cpu).is_some_and(|&n| n > 0) {
                    format!(" {:?}", r.higher_class_top)
                } else {
                    String::new()
                },
                ms(*ns),
                if *ns > 0 {
                    format!(": {:?}; {}", r.foreign_top, r.foreign_how.join(" | "))
                } else {
                    String::new()
                }
            ),
        );
    }
    if b.rt_clock {
        c.check(
            r.bpf_timers == 0,
            format!(
                "{run}: witness: no BPF timer fired under the helper-thread clock ({} expiries)",
                r.bpf_timers
            ),
        );
        for cpu in &f.managed {
            let (runs, ns) = (
                r.clock_runs.get(cpu).copied().unwrap_or(0),
                r.clock_ns.get(cpu).copied().unwrap_or(0),
            );
            c.check(
                runs > 0,
                format!(
                    "{run}: witness: CPU {cpu}'s slot clock thread ran there {runs} times, {:.3} ms \
                     in all ({:.1} us a run)",
                    ms(ns),
                    ns as f64 / 1e3 / runs.max(1) as f64
                ),
            );
        }
    }
    for (t, fig) in &r.tt {
        c.check(
            fig.off_managed_ns == 0,
            format!(
                "{run}: witness: {t} never ran on a housekeeping CPU after t0 ({:.3} ms)",
                ms(fig.off_managed_ns)
            ),
        );
        let own = fig.outside_ns - fig.late_timer_ns;
        let share = own as f64 / fig.run_ns.max(1) as f64;
        c.check_timing(
            share <= b.outside_share,
            format!(
                "{run}: witness: {t} ran {:.1} ms, {:.1} ms in its slots, {:.2} ms ({:.2} %) in \
                 other slots: {:.2} ms before the scheduler's late timer fired (+{} us), {:.2} ms \
                 ({:.2} %) the scheduler's (bound {:.1} %)",
                ms(fig.run_ns),
                ms(fig.inside_ns),
                ms(fig.outside_ns),
                100.0 * fig.outside_ns as f64 / fig.run_ns.max(1) as f64,
                ms(fig.late_timer_ns),
                KICK_NS / 1000,
                ms(own),
                100.0 * share,
                100.0 * b.outside_share
            ),
        );
    }
    let worst: Vec<_> = r.be_over_owner.iter().take(3).collect();
    c.check(
        r.be_over_owner.is_empty(),
        format!(
            "{run}: witness: no be task started while the slot's owner waited runnable >= {} us \
             ({} starts, {:.3} ms of be run after them; {} starts within the race window, {} \
             after the owner's job was over by its own log, {} over an adaptive owner in class be, \
             {} before the slot's late tick, {} of an adaptive task in class tt: judged by its \
             outside share){}",
            RACE_NS / 1000,
            r.be_over_owner.len(),
            ms(r.be_over_owner.iter().map(|b| b.ran_ns).sum()),
            r.be_near_race,
            r.be_after_done,
            r.be_over_be_class,
            r.be_before_tick,
            r.adaptive_in_tt,
            if worst.is_empty() {
                String::new()
            } else {
                format!(": first {worst:?}")
            }
        ),
    );
    let tt_what =
        format!(
        "{run}: witness: no thread of a tt task started in another owner's slot after its tick \
         while that owner waited runnable >= {} us ({} starts, {:.3} ms of run after them){}",
        RACE_NS / 1000,
        r.tt_over_owner.len(),
        ms(r.tt_over_owner.iter().map(|b| b.ran_ns).sum()),
        if r.tt_over_owner.is_empty() {
            String::new()
        } else {
            format!(": first {:?}", r.tt_over_owner.iter().take(3).collect::<Vec<_>>())
        }
    );
    if b.tt_starts {
        c.check(r.tt_over_owner.is_empty(), tt_what);
    } else {
        println!("  {tt_what} (printed, not judged here)");
    }
    let (mut tick_late, mut kick) = (r.tick_late.clone(), r.kick.clone());
    tick_late.sort_unstable();
    kick.sort_unstable();
    let us = |v: &[u64], p: f64| quantile(v, p) as f64 / 1e3;
    println!(
        "  {run}: witness: {} BPF timer expiries in the kernel's trace; the slot's timer after its \
         start p50 {:.1} us, p99 {:.1} us, max {:.1} us over {} boundaries; ending owners ran on \
         after the enforcing timer p50 {:.1} us, p99 {:.1} us, max {:.1} us ({} runs, {} us \
         allowed)",
        r.timers,
        us(&tick_late, 0.5),
        us(&tick_late, 0.99),
        us(&tick_late, 1.0),
        tick_late.len(),
        us(&kick, 0.5),
        us(&kick, 0.99),
        us(&kick, 1.0),
        kick.len(),
        KICK_NS / 1000
    );
    if !tick_late.is_empty() {
        c.note_timer_late_p50(tick_late[(tick_late.len() - 1) / 2]);
    }
    let tol = agreement_tol_ns(f.slot_ns);
    let tol_of = |switches: u64, late: u64| tol + PER_SWITCH_TOL_NS * switches + late;
    let mut abs: Vec<u64> = r.diffs.iter().map(|d| d.2.unsigned_abs()).collect();
    abs.sort_unstable();
    let pct = |p: f64| quantile(&abs, p);
    let over: Vec<_> = r
        .diffs
        .iter()
        .filter(|d| d.2.unsigned_abs() > tol_of(d.3, d.4))
        .collect();
    let share = over.len() as f64 / r.diffs.len().max(1) as f64;
    c.check(
        !r.diffs.is_empty(),
        format!("{run}: witness: tt records to compare ({})", r.diffs.len()),
    );
    c.check_timing(
        share <= b.disagree_share,
        format!(
            "{run}: witness: record owner_ns vs witness over {} tt records: |diff| p50 {:.1} us, \
             p99 {:.1} us, max {:.1} us; {} ({:.2} %) beyond {} us + {} us per switch in the \
             slot + the lateness of the scheduler's timer at its start and end (kernel trace) \
             (bound {:.1} %){}; slot 0 (not judged) {:?}",
            r.diffs.len(),
            pct(0.5) as f64 / 1e3,
            pct(0.99) as f64 / 1e3,
            abs.last().copied().unwrap_or(0) as f64 / 1e3,
            over.len(),
            100.0 * share,
            tol / 1000,
            PER_SWITCH_TOL_NS / 1000,
            100.0 * b.disagree_share,
            if over.is_empty() {
                String::new()
            } else {
                format!(
                    ": first (cpu, slot, record - witness ns, switches, timer lateness ns) {:?}",
                    &over[..over.len().min(5)]
                )
            },
            r.slot0
        ),
    );
}

/// The time that the kernel's own threads (per-CPU ones by name, and every child of kthreadd)
/// and scx_tt's slot clock thread (`tt-clock/N`) ran on the managed CPUs, by the witness: time
/// no task could have, whatever the scheduler decides. On PREEMPT_RT kernels it is several % of
/// a CPU (interrupts and softirqs run as threads; the clock thread wakes every slot), on the
/// cloud kernel a fraction of 1 %. A delivered-share bound subtracts its share of the planned
/// time ([`Taken::bound`]), so that the bound is derived from the run it judges.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Taken {
    pub kthread_ns: u64,
    pub clock_ns: u64,
}

impl Taken {
    /// `base_pct` less the share of `planned_ns` that kthreads and the clock thread took.
    pub fn bound(&self, base_pct: f64, planned_ns: u64) -> f64 {
        base_pct - self.pct(planned_ns)
    }

    pub fn pct(&self, planned_ns: u64) -> f64 {
        100.0 * (self.kthread_ns + self.clock_ns) as f64 / planned_ns.max(1) as f64
    }

    /// "90 less 7.9 % that kthreads (x ms) and the slot clock thread (y ms) took on the
    /// managed CPUs, by the witness": how a bound from [`Taken::bound`] came about.
    pub fn explain(&self, base_pct: f64, planned_ns: u64) -> String {
        format!(
            "{base_pct} less {:.1} % that kthreads ({:.1} ms) and the slot clock thread ({:.1} \
             ms) took on the managed CPUs, by the witness",
            self.pct(planned_ns),
            self.kthread_ns as f64 / 1e6,
            self.clock_ns as f64 / 1e6
        )
    }
}

/// [`Taken`] from the switch events `events`: the runs on a CPU of `managed` within
/// `[from, to)`, of the clock thread of that CPU, of a per-CPU kthread of it by name, or of a
/// pid in `kthreads`.
pub fn taken_from(
    events: &[Event],
    kthreads: &HashSet<u32>,
    managed: &[u32],
    (from, to): (u64, u64),
) -> Taken {
    let mut t = Taken::default();
    for g in segments(events, to) {
        if !managed.contains(&g.cpu) || g.pid == 0 {
            continue;
        }
        let ns = g.end.min(to).saturating_sub(g.start.max(from));
        if is_clock_thread_of(&g.comm, g.cpu) {
            t.clock_ns += ns;
        } else if is_percpu_kthread_of(&g.comm, g.cpu) || kthreads.contains(&g.pid) {
            t.kthread_ns += ns;
        }
    }
    t
}

/// [`taken_from`] for run `run` of `out` (`RUN.witness`, `RUN.kthreads`), from the summary's
/// start for its duration.
pub fn taken(out: &VmOutput, run: &str, s: &Summary) -> Result<Taken> {
    let events =
        parse(&out.file(&format!("{run}.witness"))?).map_err(|e| format!("{run}.witness: {e}"))?;
    let kthreads = out
        .file(&format!("{run}.kthreads"))?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let managed: Vec<u32> = s.managed().map(|c| c.cpu).collect();
    Ok(taken_from(
        &events,
        &kthreads,
        &managed,
        (s.t0_ns, s.t0_ns + s.duration_ns),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A debugging aid, not a test of its own: checks the witness of a run directory left by an
    /// earlier boot, e.g. `SCX_TT_WITNESS_DIR=target/vm/runs/preempt SCX_TT_WITNESS_RUN=preempt
    /// cargo test --release --test vm witness::tests::run_dir -- --ignored --nocapture`
    /// (`SCX_TT_WITNESS_FILES=summary.json,trace.jsonl` for other file names).
    #[test]
    #[ignore = "reads SCX_TT_WITNESS_DIR"]
    fn run_dir() {
        let dir = std::env::var("SCX_TT_WITNESS_DIR").expect("SCX_TT_WITNESS_DIR");
        let run = std::env::var("SCX_TT_WITNESS_RUN").expect("SCX_TT_WITNESS_RUN");
        let out = crate::harness::open_run(std::path::Path::new(&dir)).unwrap();
        let allowed = out
            .number("rt_pid")
            .map(|p| vec![p as u32])
            .unwrap_or_default();
        // SCX_TT_WITNESS_FILES=SUMMARY,TRACE for other names than RUN.json, RUN.trace.jsonl
        let files = std::env::var("SCX_TT_WITNESS_FILES")
            .unwrap_or_else(|_| format!("{run}.json,{run}.trace.jsonl"));
        let (summary, trace) = files.split_once(',').expect("SUMMARY,TRACE");
        let mut c = Checks::default();
        let b = Bounds {
            allowed,
            ..Bounds::default()
        };
        check_files(&mut c, &out, &run, summary, trace, &b);
        c.finish();
    }

    const SW: &str = "          <idle>-0       [001] d..2.     6.321346: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=CPU 0/TCG next_pid=145 next_prio=120";

    #[test]
    fn lines_parse_with_spaces_in_comms() {
        let e = parse_line(SW).unwrap().unwrap();
        assert_eq!(e.ts_ns, 6_321_346_000);
        assert_eq!(e.cpu, 1);
        assert_eq!(
            e.kind,
            Kind::Switch {
                prev_pid: 0,
                prev_comm: "swapper/1".into(),
                prev_state: "R".into(),
                next_pid: 145,
                next_comm: "CPU 0/TCG".into(),
                next_prio: 120
            }
        );
        let w = "  sh-122     [000] d.s4.     6.320512: sched_wakeup: comm=kworker/0:0 pid=9 prio=120 target_cpu=000";
        assert_eq!(
            parse_line(w).unwrap().unwrap().kind,
            Kind::Wakeup { pid: 9, target: 0 }
        );
        let f = "  sh-122     [000] .....     6.320868: sched_process_fork: comm=sh pid=122 child_comm=sh child_pid=145";
        assert_eq!(
            parse_line(f).unwrap().unwrap().kind,
            Kind::Fork {
                parent: 122,
                child: 145
            }
        );
        let m = "  migration/0-21 [000] d..5. 7.000100: sched_migrate_task: comm=sh pid=74 prio=120 orig_cpu=0 dest_cpu=1";
        assert_eq!(
            parse_line(m).unwrap().unwrap().kind,
            Kind::Migrate {
                pid: 74,
                orig: 0,
                dest: 1
            }
        );
        // a wakeup without target_cpu, a migration without dest_cpu: refused, not guessed
        assert!(
            parse_line("  sh-1 [000] d..2. 1.000001: sched_wakeup: comm=a pid=1 prio=1").is_err()
        );
        assert!(parse_line(
            "  sh-1 [000] d..2. 1.000001: sched_migrate_task: comm=a pid=1 prio=1 orig_cpu=0"
        )
        .is_err());
        assert!(parse_line("garbage").is_err());
        assert!(parse_line("  sh-1 [000] d..2. 1.x: sched_wakeup: comm=a pid=1 prio=1").is_err());
        assert_eq!(parse_ts("12.000001"), Some(12_000_001_000));
        assert_eq!(parse_ts("12."), None);
    }

    #[test]
    fn percpu_kthreads_by_name() {
        assert!(is_percpu_kthread_of("ksoftirqd/1", 1));
        assert!(is_percpu_kthread_of("kworker/1:2H", 1));
        assert!(!is_percpu_kthread_of("kworker/11:2", 1));
        assert!(!is_percpu_kthread_of("kworker/u4:1", 1));
        assert!(!is_percpu_kthread_of("sh", 1));
    }

    /// A line of ftrace text for a switch at `us` µs on `cpu`.
    fn sw(us: u64, cpu: u32, prev: (&str, u32, &str), next: (&str, u32)) -> String {
        format!(
            "  x-1 [{cpu:03}] d..2. {}.{:06}: sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> next_comm={} next_pid={} next_prio=120",
            us / 1_000_000,
            us % 1_000_000,
            prev.0,
            prev.1,
            prev.2,
            next.0,
            next.1
        )
    }

    /// Kthread and clock-thread time on the managed CPUs, cut to the window: by hand, run by
    /// run (CPU 1 managed, CPU 0 not; window [1 ms, 9 ms)).
    #[test]
    fn taken_counts_kthreads_and_the_clock_thread_on_managed_cpus_within_the_window() {
        let lines = [
            // CPU 1: busy 0-2 ms (tt), ksoftirqd/1 2-3, tt-clock/1 3-3.5, tt-clock/0 (another
            // CPU's clock: neither) 3.5-4, kworker pid 50 (a kthreadd child) 4-6, idle 6-8,
            // migration/1 8-10 (1 ms of it inside the window)
            sw(0, 1, ("swapper/1", 0, "R"), ("busy", 10)),
            sw(2_000, 1, ("busy", 10, "R"), ("ksoftirqd/1", 20)),
            sw(3_000, 1, ("ksoftirqd/1", 20, "S"), ("tt-clock/1", 30)),
            sw(3_500, 1, ("tt-clock/1", 30, "S"), ("tt-clock/0", 31)),
            sw(4_000, 1, ("tt-clock/0", 31, "S"), ("unbound", 50)),
            sw(6_000, 1, ("unbound", 50, "S"), ("swapper/1", 0)),
            sw(8_000, 1, ("swapper/1", 0, "R"), ("migration/1", 60)),
            sw(10_000, 1, ("migration/1", 60, "S"), ("busy", 10)),
            // CPU 0 (housekeeping): a kthread there counts for nothing
            sw(1_000, 0, ("swapper/0", 0, "R"), ("ksoftirqd/0", 21)),
            sw(5_000, 0, ("ksoftirqd/0", 21, "S"), ("swapper/0", 0)),
        ];
        let events = parse(&lines.join("\n")).unwrap();
        let t = taken_from(&events, &HashSet::from([50]), &[1], (1_000_000, 9_000_000));
        assert_eq!(
            t,
            Taken {
                kthread_ns: 1_000_000 + 2_000_000 + 1_000_000,
                clock_ns: 500_000
            }
        );
        // 4.5 ms of 45 ms planned: 10 %
        assert!((t.bound(90.0, 45_000_000) - 80.0).abs() < 1e-9);
        assert!(t.explain(90.0, 45_000_000).contains("90 less 10.0 %"));
    }

    /// A BPF timer's hrtimer expiring at `us` µs on `cpu`.
    fn timer(us: u64, cpu: u32) -> String {
        format!(
            "  <idle>-0 [{cpu:03}] d.h2. {}.{:06}: hrtimer_expire_entry: hrtimer=00000000a1b2c3d4 function=bpf_timer_cb now={}",
            us / 1_000_000,
            us % 1_000_000,
            us * 1000
        )
    }

    fn wake(us: u64, pid: u32) -> String {
        format!(
            "  x-1 [000] d..2. {}.{:06}: sched_wakeup: comm=t pid={pid} prio=120 target_cpu=001",
            us / 1_000_000,
            us % 1_000_000
        )
    }

    /// t0 = 1 s, slots of 10 ms, CPU 1 managed; task a (tid 10) owns even slots, b (be, tid
    /// 20); slot 0..4 recorded with ran_ns.
    fn frame(ran: [u64; 2]) -> Frame {
        let mut f = Frame {
            t0_ns: 1_000_000_000,
            slot_ns: 10_000_000,
            end_ns: 1_040_000_000,
            managed: vec![1],
            ..Frame::default()
        };
        f.tasks.insert("a".into(), ("tt".into(), Some(1)));
        f.tasks.insert("b".into(), ("be".into(), None));
        f.tids.insert(10, "a".into());
        f.tids.insert(20, "b".into());
        for s in 0..4u64 {
            let own = (s % 2 == 0).then(|| "a".to_string());
            if own.is_some() {
                f.ran_ns.insert((1, s), ran[(s / 2) as usize]);
            }
            f.owners.insert((1, s), own);
        }
        f
    }

    fn run(f: &Frame, lines: &[String]) -> Report {
        f.analyse(&parse(&lines.join("\n")).unwrap())
    }

    #[test]
    fn an_exact_run_passes_and_figures_add_up() {
        // a runs slots 0 and 2 fully (1.000-1.010, 1.020-1.030), b the others
        let l = [
            sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
            sw(1_010_000, 1, ("a", 10, "R"), ("b", 20)),
            sw(1_020_000, 1, ("b", 20, "R"), ("a", 10)),
            sw(1_030_000, 1, ("a", 10, "R"), ("b", 20)),
        ];
        let r = run(&frame([10_000_000, 10_000_000]), &l);
        let a = &r.tt["a"];
        assert_eq!(
            (a.run_ns, a.inside_ns, a.outside_ns, a.off_managed_ns),
            (20_000_000, 20_000_000, 0, 0)
        );
        assert_eq!(r.foreign_ns[&1], 0);
        assert!(r.be_over_owner.is_empty());
        assert_eq!(r.diffs, vec![(1, 2, 0, 1, 0)], "slot 2, one switch in it");
        assert_eq!(r.slot0, vec![(1, 0)], "slot 0 apart");
        assert_eq!(r.unrecorded_slots, 0);
    }

    /// An ending owner's run past its boundary is the platform's until the scheduler's timer
    /// fired (by the kernel's trace) and KICK_NS after; the rest is the scheduler's. A timer
    /// that is not a BPF timer's explains nothing.
    #[test]
    fn an_owner_past_a_late_timer_is_explained_until_the_timer_fired() {
        // a owns slot 0 and runs 3 ms into slot 1 (1.010-1.013), then b runs
        let base = vec![
            sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
            sw(1_013_000, 1, ("a", 10, "R"), ("b", 20)),
            sw(1_020_000, 1, ("b", 20, "R"), ("a", 10)),
            sw(1_030_000, 1, ("a", 10, "R"), ("b", 20)),
        ];
        let f = frame([13_000_000, 10_000_000]);
        let with = |extra: &[String], f: &Frame| {
            let mut l = base.clone();
            l.extend_from_slice(extra);
            run(f, &l)
        };
        // no timer in the trace: all 3 ms are the scheduler's
        let r = with(&[], &f);
        assert_eq!(
            (r.tt["a"].outside_ns, r.tt["a"].late_timer_ns, r.timers),
            (3_000_000, 0, 0)
        );
        // the slot-1 timer fired 2.8 ms late: the run until then + 0.2 ms is explained
        let r = with(&[timer(1_012_800, 1)], &f);
        assert_eq!(r.tt["a"].late_timer_ns, 3_000_000);
        assert_eq!(r.kick, vec![200_000]);
        assert_eq!(
            r.tick_late,
            vec![2_800_000],
            "slot 1's timer; slots 2, 3 have none"
        );
        // it fired on time: KICK_NS of the 3 ms is explained, the rest is the scheduler's
        let r = with(&[timer(1_010_000, 1)], &f);
        assert_eq!(r.tt["a"].late_timer_ns, KICK_NS);
        // another hrtimer (not bpf_timer_cb), or one on another CPU, explains nothing
        let other = "  <idle>-0 [001] d.h2. 1.012800: hrtimer_expire_entry: hrtimer=00000000a1b2c3d4 function=tick_nohz_handler now=1012800000".to_string();
        let r = with(&[other, timer(1_012_800, 0)], &f);
        assert_eq!((r.tt["a"].late_timer_ns, r.timers), (0, 1));
        // with a 1 ms guard band, the guard timer fired on time at 1.009 s: the owner should
        // have stopped then; only until the boundary + KICK_NS is explained
        let mut fg = f.clone();
        fg.guard_ns = 1_000_000;
        let r = with(&[timer(1_009_000, 1), timer(1_012_800, 1)], &fg);
        assert_eq!(r.tt["a"].late_timer_ns, KICK_NS);
        // the guard timer itself came late: explained until it fired
        let r = with(&[timer(1_012_800, 1)], &fg);
        assert_eq!(r.tt["a"].late_timer_ns, 3_000_000);
        // a run in the middle of a slot it does not own is never explained: a in slot 3
        let mut l = base.clone();
        l.pop();
        l.push(sw(1_030_000, 1, ("a", 10, "R"), ("b", 20)));
        l.push(sw(1_035_000, 1, ("b", 20, "R"), ("a", 10)));
        l.push(sw(1_036_000, 1, ("a", 10, "R"), ("b", 20)));
        l.push(timer(1_034_900, 1));
        let r = run(&f, &l);
        assert_eq!(r.tt["a"].outside_ns, 4_000_000);
        assert_eq!(
            r.tt["a"].late_timer_ns, 0,
            "slot 1's first timer is in slot 3, too late to explain; slot 3's run is mid-slot"
        );
        // record agreement: slot 2's timer 300 us late and slot 3's on time give the record of
        // slot 2 a 300 us tolerance more
        let r = with(&[timer(1_020_300, 1), timer(1_030_000, 1)], &f);
        assert_eq!(r.diffs, vec![(1, 2, 0, 1, 300_000)]);
    }

    #[test]
    fn a_foreign_task_in_a_higher_class_is_printed_apart() {
        // sh (pid 99) switched in on CPU 1 at prio 98: priority-inherited into the RT class
        // (PREEMPT_RT), out of sched_ext's hands; the same run at prio 120 is foreign
        let boosted = |prio: u32| {
            vec![
                sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
                format!("  x-1 [001] d..2. 1.010500: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=sh next_pid=99 next_prio={prio}"),
                sw(1_011_500, 1, ("sh", 99, "S"), ("a", 10)),
                sw(1_020_000, 1, ("a", 10, "S"), ("swapper/1", 0)),
            ]
        };
        let f = frame([10_000_000, 9_900_000]);
        let r = run(&f, &boosted(98));
        assert_eq!((r.foreign_ns[&1], r.higher_class_ns[&1]), (0, 1_000_000));
        assert_eq!(
            r.higher_class_top,
            vec![(1, "sh".to_string(), 99, 1_000_000)]
        );
        let r = run(&f, &boosted(120));
        assert_eq!(r.foreign_ns[&1], 1_000_000);
        assert!(r.higher_class_ns.is_empty());
    }

    #[test]
    fn each_violation_is_seen() {
        // slot 2: b is switched in at 1.0215 s although a was woken at 1.020 s (1.5 ms
        // waiting); a runs only from 1.025 s, while the record claims 9.9 ms; a
        // foreign sh runs 1 ms in slot 1; a runs 0.5 ms into slot 1 (outside) and on CPU 0.
        let l = [
            sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
            "  migration/0-21 [000] d..5. 1.010000: sched_migrate_task: comm=sh pid=99 prio=120 orig_cpu=0 dest_cpu=1".into(),
            sw(1_010_500, 1, ("a", 10, "S"), ("sh", 99)),
            sw(1_011_500, 1, ("sh", 99, "S"), ("b", 20)),
            wake(1_020_000, 10),
            sw(1_020_000, 1, ("b", 20, "R"), ("migration/1", 15)),
            sw(1_021_500, 1, ("migration/1", 15, "S"), ("b", 20)),
            sw(1_025_000, 1, ("b", 20, "R"), ("a", 10)),
            sw(1_030_000, 1, ("a", 10, "R"), ("ksoftirqd/1", 16)),
            sw(1_030_100, 1, ("ksoftirqd/1", 16, "S"), ("swapper/1", 0)),
            sw(1_035_000, 0, ("swapper/0", 0, "R"), ("a", 11)),
            "  x-1 [000] ..... 1.001000: sched_process_fork: comm=a pid=10 child_comm=a child_pid=11".into(),
            sw(1_036_000, 0, ("a", 11, "S"), ("swapper/0", 0)),
        ];
        let mut f = frame([10_000_000, 9_900_000]);
        let r = run(&f, &l);
        let a = &r.tt["a"];
        assert_eq!(a.outside_ns, 500_000);
        assert_eq!(a.off_managed_ns, 1_000_000, "the forked thread 11 on CPU 0");
        assert_eq!(r.foreign_ns[&1], 1_000_000);
        assert_eq!(r.foreign_top[0], (1, "sh".to_string(), 99, 1_000_000));
        // how it came: its one run, from 10.5 ms after t0, after the kernel moved it to CPU 1
        let how = &r.foreign_how[0];
        assert!(
            how.starts_with("sh 99 on CPU 1: 1 runs, the first from +10.500 ms"),
            "{how}"
        );
        assert!(
            how.contains("+10.000 ms [0] Migrate { pid: 99, orig: 0, dest: 1 }"),
            "{how}"
        );
        assert!(
            how.ends_with("next_pid: 99, next_comm: \"sh\", next_prio: 120 }"),
            "{how}"
        );
        assert_eq!(r.kthread_ns[&1], 1_600_000);
        assert_eq!(r.be_over_owner.len(), 1);
        let b = &r.be_over_owner[0];
        assert_eq!(
            (b.slot, b.owner_waited_ns, b.ran_ns),
            (2, 1_500_000, 3_500_000)
        );
        // record 2 claims 9.9 ms, the witness saw 5 ms
        assert_eq!(r.diffs[0], (1, 2, 4_900_000, 3, 0));
        // the same be start within the race window is not a violation
        let mut l2 = l.clone();
        l2[4] = wake(1_021_400, 10);
        let r2 = run(&f, &l2);
        assert!(r2.be_over_owner.is_empty());
        assert_eq!(r2.be_near_race, 1);
        // a be start before the slot's late tick is BPF still enforcing the slot before:
        // counted apart; a tick that came before the be start leaves it judged
        let mut ft = f.clone();
        ft.late_ns.insert((1, 2), 2_000_000);
        let rt = run(&ft, &l);
        assert!(rt.be_over_owner.is_empty());
        assert_eq!(rt.be_before_tick, 1);
        ft.late_ns.insert((1, 2), 1_000_000);
        assert_eq!(run(&ft, &l).be_over_owner.len(), 1);
        // an owner whose job is over by its own log (it yielded) is not owed the CPU
        let mut fd = f.clone();
        fd.done
            .insert("a".into(), vec![(1_019_000_000, 1_030_000_000)]);
        let rd = run(&fd, &l);
        assert!(rd.be_over_owner.is_empty());
        assert_eq!(rd.be_after_done, 1);
        // a window that ends before the be start changes nothing
        fd.done
            .insert("a".into(), vec![(1_019_000_000, 1_021_000_000)]);
        assert_eq!(run(&fd, &l).be_over_owner.len(), 1);
        // an adaptive owner that BPF had in class be then is counted apart, not judged
        let mut fb = f.clone();
        fb.be_class
            .insert("a".into(), vec![(1_019_000_000, 1_030_000_000)]);
        let rb = run(&fb, &l);
        assert!(rb.be_over_owner.is_empty());
        assert_eq!(rb.be_over_be_class, 1);
        fb.be_class
            .insert("a".into(), vec![(1_019_000_000, 1_021_000_000)]);
        assert_eq!(run(&fb, &l).be_over_owner.len(), 1);
        // the starting task adaptive and in class tt then (outside its be windows): judged
        // as tt by its outside share, counted apart; inside a be window it is be work
        let mut fa = f.clone();
        fa.be_class.insert("b".into(), vec![(0, 1_019_000_000)]);
        let ra = run(&fa, &l);
        assert!(ra.be_over_owner.is_empty());
        assert_eq!(ra.adaptive_in_tt, 1);
        fa.be_class.insert("b".into(), vec![(0, 1_030_000_000)]);
        assert_eq!(run(&fa, &l).be_over_owner.len(), 1);
        // the starting task another tt task of the CPU: a tt start over the waiting owner,
        // counted apart from the be starts, with its run
        let mut fo = f.clone();
        fo.tasks.insert("b".into(), ("tt".into(), Some(1)));
        let ro = run(&fo, &l);
        assert!(ro.be_over_owner.is_empty());
        assert_eq!(ro.tt_over_owner.len(), 1);
        let t = &ro.tt_over_owner[0];
        assert_eq!((t.be.as_str(), t.owner.as_str(), t.slot), ("b", "a", 2));
        assert_eq!(t.ran_ns, 3_500_000);
        // in its own slot a tt task's start is none of that
        fo.owners.insert((1, 2), Some("b".into()));
        assert!(run(&fo, &l).tt_over_owner.is_empty());
        // a kernel thread by pid (not per-CPU by name) is printed apart, not foreign
        let mut fk = f.clone();
        fk.kthreads.insert(99);
        let rk = run(&fk, &l);
        assert_eq!((rk.foreign_ns[&1], rk.other_kthread_ns[&1]), (0, 1_000_000));
        // declaring sh allowed moves its time out of foreign
        f.allowed.insert(99);
        let r3 = run(&f, &l);
        assert_eq!((r3.foreign_ns[&1], r3.allowed_ns[&1]), (0, 1_000_000));
        // and the checks fail on the first run's figures
        let mut c = Checks::default();
        let tight = Bounds {
            outside_share: 0.01,
            ..Bounds::default()
        };
        report(&mut c, "t", &frame([0, 0]), &r, &tight);
        let fails = c.failures().join("\n");
        for what in [
            "foreign 1.000 ms",
            "housekeeping",
            "1 starts",
            "other slots",
            "beyond",
        ] {
            assert!(fails.contains(what), "{what} not in {fails}");
        }
    }

    #[test]
    fn a_marked_pause_is_not_judged() {
        // sh (foreign) runs in slot 1 between the pause and resume marks: not judged; the
        // same run without marks fails
        let mark = |us: u64, m: &str| {
            format!(
                "  sh-5 [000] ..... {}.{:06}: tracing_mark_write: tt-witness {m}",
                us / 1_000_000,
                us % 1_000_000
            )
        };
        let l = [
            sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
            mark(1_009_000, "pause"),
            sw(1_010_000, 1, ("a", 10, "R"), ("sh", 99)),
            sw(1_019_000, 1, ("sh", 99, "S"), ("swapper/1", 0)),
            mark(1_019_500, "resume"),
            sw(1_020_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
            sw(1_030_000, 1, ("a", 10, "R"), ("swapper/1", 0)),
        ];
        let f = frame([10_000_000, 10_000_000]);
        let r = run(&f, &l);
        assert_eq!(r.foreign_ns[&1], 0);
        assert_eq!(r.paused_ns, 10_500_000);
        assert_eq!(
            r.tt["a"].inside_ns, 10_000_000,
            "slot 0 was paused too, slot 2 judged"
        );
        let unmarked: Vec<String> = l
            .iter()
            .filter(|x| !x.contains("tt-witness"))
            .cloned()
            .collect();
        assert_eq!(run(&f, &unmarked).foreign_ns[&1], 9_000_000);
        // other markers are ignored
        let other = "  sh-5 [000] ..... 1.000001: tracing_mark_write: hello";
        assert_eq!(parse_line(other).unwrap(), None);
    }

    #[test]
    fn a_blocked_owner_lets_be_start() {
        // a blocks at 1.001 (state S): b may run the rest of slot 0; a wakes at 1.005 and b
        // is already running: no start, no violation
        let l = [
            sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
            sw(1_001_000, 1, ("a", 10, "S"), ("b", 20)),
            wake(1_005_000, 10),
            sw(1_005_100, 1, ("b", 20, "R"), ("a", 10)),
        ];
        let r = run(&frame([5_000_000, 0]), &l);
        assert!(r.be_over_owner.is_empty(), "{:?}", r.be_over_owner);
        assert_eq!(r.tt["a"].inside_ns, 1_000_000 + 4_900_000 + 10_000_000);
    }
}

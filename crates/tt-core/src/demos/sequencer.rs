//! DEmOS's sequencing semantics stepped slot by slot (pure, no OS effects): for an imported
//! configuration, which process owns each (managed CPU, slot), deciding one slot at a time from
//! the completions reported so far, and DEmOS's schedule log lines of the starts it decides.
//! The kernel path's planner thread drives it in planner mode with `--demos` (docs/demos.md
//! "Sequenced kernel run"); [`super::sim`] is the millisecond reference it is tested against
//! (tests/demos_seq.rs).
//!
//! # Semantics (DEmOS's, as in [`super::sim`])
//! - Windows repeat in order. At a window start each slice starts its SC partition from its
//!   first process; a slice without one is done with SC at once.
//! - A partition runs one process at a time; a process runs until its budget is used up or its
//!   job completes ([`Sequencer::complete`]), then the next pending process of the partition
//!   starts in the same slot boundary. A process that used its budget or completed is not
//!   pending again in this activation of its partition.
//! - When the SC partitions of every slice of the window are done, every slice starts its BE
//!   partition (DEmOS's default "BE after all SC of the window"), from its cursor (a BE partition
//!   continues where it stopped; after a pass over all its processes the cursor moves past the
//!   one it started from, as DEmOS's `seek_pending_process`).
//! - At the window end every process is stopped: a BE process keeps its remaining budget and
//!   resumes with it the next time its partition runs; an SC process still running is cut (an
//!   overrun, counted); a budget ending exactly at the window end counts as used up.
//! - Jitter: each activation's budget is drawn as DEmOS draws it (`budget ± jitter/2`, its
//!   generator, [`super::rng`]), in the order the starts are decided; a drawn 0 skips the process.
//!
//! # Completion input and the slot grid
//! `complete(proc, s)` says the process's job was done during slot `s` (the kernel's per-slot
//! observation: the owner's job completed in the slot). It ends the process before the first
//! slot not yet decided, [`Sequencer::now`]: with `s + 1 == now` (the slot right after) that is
//! exactly DEmOS's behaviour on a grid; when slots up to `now - 1 > s` were already decided (the
//! kernel path decides `lead` slots ahead) the process keeps those slots and the next one starts
//! `now - 1 - s` slots late: the lag of writing the table ahead. A completion that reaches the
//! window end is dropped (the window end preempts it, as in DEmOS, where the window timer comes
//! first; a BE process keeps its remaining budget); a completion of a process that is not
//! running, or of an earlier activation (`s` before the current one's first slot), is stale and
//! ignored.
//!
//! # Where the slot grid changes DEmOS's semantics
//! With 1 ms slots and completions at whole milliseconds the log equals DEmOS's line for line
//! (tests/demos_seq.rs). Otherwise:
//! - a completion inside a slot wastes the rest of it: DEmOS starts the next process at the
//!   completion instant, the sequencer at the next slot boundary (later by less than a slot);
//! - a budget (or drawn jittered budget, or carried BE remainder) that is not a whole number of
//!   slots is rounded up to whole slots (the process gets up to a slot more); the carried
//!   remainder is kept in µs, so the rounding does not accumulate across windows;
//! - log times are the slot's start in whole ms (truncated when the slot is not whole ms);
//! - window lengths must be whole slots ([`Sequencer::new`] refuses others, naming the window).
//!
//! # Events
//! Each decision also carries DEmOS's scheduler events ([`Event`], the power policies' hooks)
//! that happen at the slot's start, in DEmOS's order (as [`super::power::events_from_sim`]
//! orders them): the window end and the processes it stops (slice order); the window start
//! and SC start; SC process ends and starts (slice order); BE start; BE process ends and
//! starts (slice order). A process ends at the start of the slot after its last one (its budget
//! used up, its completion taken) or at the window end. [`Event::Init`] is not the sequencer's
//! (the run makes it before slot 0). tests/demos_seq_events.rs checks the stream against
//! `events_from_sim` of the millisecond simulator.
//!
//! Not modelled: process exits (an exited process keeps its slots until its budget, as DEmOS's
//! budget timer; DEmOS also skips it later), `init` phases, DEmOS's stop when every process
//! exited. A process runs on its task's CPU ([`TaskRef::cpu`]) when that CPU is in the slice;
//! otherwise it owns no CPU (the import drops such an appearance) but is still sequenced.

use super::config::Config;
use super::cpuset::CpuSet;
use super::power::{Event, ProcId};
use super::rng::Mt19937;
use super::sim::{check_runnable, LogLine};
use crate::plan::Plan;

/// The BPF task of a process: its index in the plan's tasks and its CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRef {
    pub task: u32,
    pub cpu: u32,
}

#[derive(Clone, Debug)]
pub struct SeqOptions {
    /// What `cpu: all` means (DEmOS: its CPU affinity; the import's `all_cpus`).
    pub all_cpus: CpuSet,
    pub slot_us: u64,
    /// `DEMOS_RAND_SEED` for the jitter draws.
    pub seed: u32,
}

/// The decision of one slot.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotDecision {
    pub slot: u64,
    /// The owner (BPF task index) of each managed CPU, in the order given to
    /// [`Sequencer::new`]; `None`: idle (free for `be` work).
    pub owners: Vec<Option<u32>>,
    /// Per managed CPU: the slot is the first of its owner's activation (a new job of the
    /// task: the table entry's job-start flag).
    pub first: Vec<bool>,
    /// The processes running in the slot, in slice order.
    pub running: Vec<ProcId>,
    /// The schedule log lines of the processes starting at this slot.
    pub log: Vec<LogLine>,
    /// DEmOS's events at the slot's start, in its order (module doc, "Events").
    pub events: Vec<Event>,
}

#[derive(Clone, Debug)]
struct SliceSpec {
    cpus: CpuSet,
    sc: Option<usize>,
    be: Option<usize>,
}

#[derive(Clone, Debug)]
struct WindowSpec {
    slots: u64,
    slices: Vec<SliceSpec>,
}

#[derive(Clone, Debug)]
struct ProcSpec {
    budget_ms: u64,
    jitter_ms: u64,
    cmd: String,
    /// The `frequency` key (MHz), for `per_process`.
    freq_mhz: Option<f64>,
    task: Option<TaskRef>,
}

#[derive(Clone, Debug, Default)]
struct ProcRt {
    /// Used its budget or completed in the partition's current activation.
    done: bool,
    /// A BE remainder (µs) cut at a window end.
    carried_us: Option<u64>,
}

/// The process a slice runs.
#[derive(Clone, Copy, Debug)]
struct Running {
    process: usize,
    left_us: u64,
    /// The activation's first slot.
    from: u64,
    completed: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct SliceRt {
    partition: Option<usize>,
    running: Option<Running>,
}

#[derive(Clone)]
pub struct Sequencer {
    slot_us: u64,
    windows: Vec<WindowSpec>,
    /// Per partition, per process.
    procs: Vec<Vec<ProcSpec>>,
    managed: Vec<u32>,
    cursor: Vec<usize>,
    state: Vec<Vec<ProcRt>>,
    slices: Vec<SliceRt>,
    sc_done: usize,
    window: usize,
    window_end: u64,
    now: u64,
    rng: Mt19937,
    log: Vec<LogLine>,
    events: Vec<Event>,
    overruns: u64,
    stale: u64,
}

impl Sequencer {
    /// A sequencer for `config`, deciding owners of the `managed` CPUs; `tasks[p][k]` is the
    /// task of process `k` of partition `p` (`None`: the process owns no CPU).
    pub fn new(
        config: &Config,
        opts: &SeqOptions,
        managed: &[u32],
        tasks: &[Vec<Option<TaskRef>>],
    ) -> Result<Self, String> {
        check_runnable(config).map_err(|e| e.to_string())?;
        if opts.slot_us == 0 {
            return Err("slot_us = 0: the slot must be at least 1 us".into());
        }
        if opts.all_cpus.is_empty() {
            return Err("the CPU set of `all` is empty".into());
        }
        let index = config.partition_index();
        let mut windows = Vec::new();
        for w in &config.windows {
            let us = w
                .length
                .checked_mul(1000)
                .filter(|us| us % opts.slot_us == 0);
            let Some(us) = us else {
                return Err(format!(
                    "{}.length = {} ms: not a whole number of {} us slots",
                    w.path, w.length, opts.slot_us
                ));
            };
            let slices = w
                .slices()
                .iter()
                .map(|s| {
                    let cpus = s.cpus(opts.all_cpus).and(opts.all_cpus);
                    SliceSpec {
                        cpus: if cpus.is_empty() {
                            CpuSet::from_cpus(opts.all_cpus.lowest())
                        } else {
                            cpus
                        },
                        sc: s.sc_partition.as_deref().map(|n| index[n]),
                        be: s.be_partition.as_deref().map(|n| index[n]),
                    }
                })
                .collect();
            windows.push(WindowSpec {
                slots: us / opts.slot_us,
                slices,
            });
        }
        let mut procs = Vec::new();
        for (p, part) in config.partitions.iter().enumerate() {
            let mut v = Vec::new();
            for (k, q) in part.processes.iter().enumerate() {
                let task = tasks.get(p).and_then(|t| t.get(k)).copied().flatten();
                v.push(ProcSpec {
                    budget_ms: q.budget,
                    jitter_ms: q.jitter,
                    cmd: q.cmd.clone(),
                    freq_mhz: q.frequency,
                    task,
                });
            }
            procs.push(v);
        }
        let state = procs.iter().map(|v| vec![ProcRt::default(); v.len()]);
        Ok(Sequencer {
            slot_us: opts.slot_us,
            cursor: vec![0; procs.len()],
            state: state.collect(),
            procs,
            windows,
            managed: managed.to_vec(),
            slices: Vec::new(),
            sc_done: 0,
            window: 0,
            window_end: 0,
            now: 0,
            rng: Mt19937::new(opts.seed),
            log: Vec::new(),
            events: Vec::new(),
            overruns: 0,
            stale: 0,
        })
    }

    /// A sequencer for `plan`, the import of `config` (`plan import --demos`): process `k` of
    /// partition `P` is the plan task named `P.k`, on that task's CPU. Only `tt` tasks own
    /// slots: a BE process is imported as a `be` task, which the BPF scheduler runs in any free
    /// slot of its CPU, so its turns are free slots (`None`).
    pub fn for_plan(
        config: &Config,
        plan: &Plan,
        all_cpus: CpuSet,
        seed: u32,
    ) -> Result<Self, String> {
        let tasks: Vec<Vec<Option<TaskRef>>> = config
            .partitions
            .iter()
            .map(|p| {
                (0..p.processes.len())
                    .map(|k| {
                        let name = format!("{}.{k}", p.name);
                        let i = plan.tasks.iter().position(|t| t.name == name)?;
                        if plan.tasks[i].class != crate::plan::Class::Tt {
                            return None;
                        }
                        let cpu = plan.tasks[i].cpu?;
                        Some(TaskRef {
                            task: u32::try_from(i).ok()?,
                            cpu,
                        })
                    })
                    .collect()
            })
            .collect();
        let opts = SeqOptions {
            all_cpus,
            slot_us: plan.slot_us,
            seed,
        };
        Self::new(config, &opts, &plan.managed, &tasks)
    }

    /// The first slot not decided yet.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// SC processes cut at a window end so far.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// Completions ignored as stale (not running, earlier activation, window ended first).
    pub fn stale(&self) -> u64 {
        self.stale
    }

    /// The process whose task is `task`, if any.
    pub fn process_of_task(&self, task: u32) -> Option<ProcId> {
        self.procs.iter().enumerate().find_map(|(p, v)| {
            let k = v
                .iter()
                .position(|q| q.task.is_some_and(|t| t.task == task))?;
            Some(ProcId {
                partition: p,
                process: k,
            })
        })
    }

    /// Process `proc`'s job was done during slot `slot`: it ends before slot [`Self::now`]
    /// (module doc). Returns whether it was taken (false: stale, counted).
    pub fn complete(&mut self, proc: ProcId, slot: u64) -> bool {
        let hit = self.slices.iter_mut().find_map(|s| {
            let r = s.running.as_mut()?;
            (s.partition == Some(proc.partition) && r.process == proc.process).then_some(r)
        });
        match hit {
            Some(r) if r.from <= slot && slot < self.now => {
                r.completed = true;
                true
            }
            _ => {
                self.stale += 1;
                false
            }
        }
    }

    /// Decides slot [`Self::now`] and moves on to the next.
    pub fn decide(&mut self) -> SlotDecision {
        let n = self.now;
        if n == 0 || n == self.window_end {
            if n > 0 {
                self.end_window();
                self.window = (self.window + 1) % self.windows.len();
            }
            self.window_end = n + self.windows[self.window].slots;
            self.start_window(n);
        } else {
            for s in 0..self.slices.len() {
                let ends = self.slices[s]
                    .running
                    .is_some_and(|r| r.completed || r.left_us == 0);
                if ends {
                    self.finish(s);
                    self.start_next(s, n);
                }
            }
        }
        let mut owners = vec![None; self.managed.len()];
        let mut first = vec![false; self.managed.len()];
        let mut running = Vec::new();
        let specs = &self.windows[self.window].slices;
        for (s, rt) in self.slices.iter_mut().enumerate() {
            let (Some(p), Some(r)) = (rt.partition, rt.running.as_mut()) else {
                continue;
            };
            r.left_us = r.left_us.saturating_sub(self.slot_us);
            running.push(ProcId {
                partition: p,
                process: r.process,
            });
            if let Some(t) = self.procs[p][r.process].task {
                let i = self.managed.iter().position(|&c| c == t.cpu);
                if let (Some(i), true) = (i, specs[s].cpus.contains(t.cpu)) {
                    owners[i] = Some(t.task);
                    first[i] = r.from == n;
                }
            }
        }
        self.now = n + 1;
        SlotDecision {
            slot: n,
            owners,
            first,
            running,
            log: std::mem::take(&mut self.log),
            events: std::mem::take(&mut self.events),
        }
    }

    /// The running process of slice `s` used its budget or completed.
    fn finish(&mut self, s: usize) {
        if let (Some(p), Some(r)) = (self.slices[s].partition, self.slices[s].running.take()) {
            self.state[p][r.process].done = true;
            self.process_end(s, p, r.process);
        }
    }

    fn process_end(&mut self, slice: usize, partition: usize, process: usize) {
        self.events.push(Event::ProcessEnd {
            window: self.window,
            slice,
            proc: ProcId { partition, process },
        });
    }

    /// DEmOS's `seek_pending_process` on partition `p`.
    fn seek(&mut self, p: usize) -> Option<usize> {
        let n = self.procs[p].len();
        for _ in 0..n {
            let c = self.cursor[p];
            if !self.state[p][c].done {
                return Some(c);
            }
            self.cursor[p] = (c + 1) % n;
        }
        if n > 0 {
            self.cursor[p] = (self.cursor[p] + 1) % n;
        }
        None
    }

    fn start_next(&mut self, s: usize, n: u64) {
        let spec = self.windows[self.window].slices[s].clone();
        let Some(p) = self.slices[s].partition else {
            return;
        };
        loop {
            let Some(k) = self.seek(p) else {
                if Some(p) == spec.sc {
                    self.sc_finished(n);
                }
                return;
            };
            let (budget, jitter, cmd, freq_mhz) = {
                let q = &self.procs[p][k];
                (q.budget_ms, q.jitter_ms, q.cmd.clone(), q.freq_mhz)
            };
            let budget_us = match self.state[p][k].carried_us.take() {
                Some(us) => us,
                None => self.rng.jittered(budget, jitter).saturating_mul(1000),
            };
            if budget_us == 0 {
                self.state[p][k].done = true;
                continue;
            }
            self.log.push(LogLine {
                time_ms: n.saturating_mul(self.slot_us) / 1000,
                cpus: spec.cpus,
                cmd,
                budget: budget_us / 1000,
            });
            self.events.push(Event::ProcessStart {
                window: self.window,
                slice: s,
                proc: ProcId {
                    partition: p,
                    process: k,
                },
                cpus: spec.cpus,
                freq_mhz,
            });
            self.slices[s].running = Some(Running {
                process: k,
                left_us: budget_us,
                from: n,
                completed: false,
            });
            return;
        }
    }

    fn start_partition(&mut self, s: usize, p: usize, n: u64, first: bool) {
        self.slices[s].partition = Some(p);
        for st in &mut self.state[p] {
            st.done = false;
        }
        if first {
            self.cursor[p] = 0;
        }
        self.start_next(s, n);
    }

    fn sc_finished(&mut self, n: u64) {
        self.sc_done += 1;
        if self.sc_done != self.slices.len() {
            return;
        }
        self.events.push(Event::BeStart {
            window: self.window,
        });
        for s in 0..self.slices.len() {
            if let Some(be) = self.windows[self.window].slices[s].be {
                self.start_partition(s, be, n, false);
            }
        }
    }

    fn start_window(&mut self, n: u64) {
        self.events.push(Event::WindowStart {
            window: self.window,
        });
        self.events.push(Event::ScStart {
            window: self.window,
        });
        self.sc_done = 0;
        self.slices = vec![SliceRt::default(); self.windows[self.window].slices.len()];
        for s in 0..self.slices.len() {
            match self.windows[self.window].slices[s].sc {
                Some(sc) => self.start_partition(s, sc, n, true),
                None => self.sc_finished(n),
            }
        }
    }

    /// The window end: a used-up budget counts as done (the cursor moves on), a BE process
    /// keeps its remainder, an SC process is cut; a completion not yet applied is dropped.
    fn end_window(&mut self) {
        self.events.push(Event::WindowEnd {
            window: self.window,
        });
        for s in 0..self.slices.len() {
            let (Some(r), Some(p)) = (self.slices[s].running, self.slices[s].partition) else {
                continue;
            };
            self.process_end(s, p, r.process);
            if r.completed {
                self.stale += 1;
            }
            if r.left_us == 0 {
                self.state[p][r.process].done = true;
                self.slices[s].running = None;
                // DEmOS moves the cursor on to the next pending process
                let _ = self.seek(p);
                continue;
            }
            if Some(p) == self.windows[self.window].slices[s].be {
                self.state[p][r.process].carried_us = Some(r.left_us);
            } else {
                self.overruns += 1;
            }
            self.slices[s].running = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demos::config::Source;

    fn seq(yaml: &str, slot_us: u64) -> Result<Sequencer, String> {
        let c = Config::from_yaml(yaml, Source::Inline).unwrap();
        let opts = SeqOptions {
            all_cpus: CpuSet::first_n(2),
            slot_us,
            seed: 1,
        };
        let tasks: Vec<Vec<Option<TaskRef>>> = c
            .partitions
            .iter()
            .scan(0, |n, p| {
                let v = (0..p.processes.len())
                    .map(|_| {
                        *n += 1;
                        Some(TaskRef {
                            task: *n - 1,
                            cpu: 0,
                        })
                    })
                    .collect();
                Some(v)
            })
            .collect();
        Sequencer::new(&c, &opts, &[0, 1], &tasks)
    }

    const AB: &str = "{windows: [{length: 10, cpu: 0,
        sc_processes: [{cmd: a, budget: 3}, {cmd: b, budget: 3}],
        be_processes: [{cmd: c, budget: 9}]}]}";

    #[test]
    fn a_window_that_is_not_whole_slots_is_refused_naming_it() {
        let e = seq(AB, 3000).err().unwrap();
        assert_eq!(
            e,
            "windows[0].length = 10 ms: not a whole number of 3000 us slots"
        );
        assert!(seq(AB, 2500).is_ok());
    }

    #[test]
    fn budgets_round_up_to_whole_slots_and_the_be_remainder_is_kept_in_us() {
        // 2 ms slots: a and b get 2 slots (4 ms) each, c starts at 8 ms and is cut at 10 ms
        // with 7 ms left, which it resumes with in the next window after a and b
        let mut s = seq(AB, 2000).unwrap();
        let mut log = Vec::new();
        for _ in 0..10 {
            log.extend(s.decide().log.iter().map(|l| l.to_string()));
        }
        assert_eq!(
            log,
            [
                "     0: cpus=0 cmd='a' budget=3",
                "     4: cpus=0 cmd='b' budget=3",
                "     8: cpus=0 cmd='c' budget=9",
                "    10: cpus=0 cmd='a' budget=3",
                "    14: cpus=0 cmd='b' budget=3",
                "    18: cpus=0 cmd='c' budget=7",
            ]
        );
    }

    #[test]
    fn stale_completions_are_ignored_and_counted() {
        let mut s = seq(AB, 1000).unwrap();
        let a = ProcId {
            partition: 0,
            process: 0,
        };
        let b = ProcId {
            partition: 0,
            process: 1,
        };
        // not decided yet, not running
        assert!(!s.complete(a, 0));
        let d = s.decide();
        assert_eq!(d.owners, [Some(0), None]);
        assert!(!s.complete(b, 0));
        assert!(s.complete(a, 0));
        let d = s.decide();
        assert_eq!((d.slot, d.owners[0]), (1, Some(1)));
        assert_eq!(d.log[0].cmd, "b");
        // a completion of a's earlier activation after a new one started
        for _ in 2..10 {
            s.decide();
        }
        assert_eq!(s.decide().running, [a]);
        assert!(!s.complete(a, 5));
        assert_eq!(s.stale(), 3);
        assert_eq!(
            s.process_of_task(2),
            Some(ProcId {
                partition: 1,
                process: 0
            })
        );
    }

    /// An event as `slot: NAME[ p.k]` for comparing streams by eye.
    fn short(slot: u64, e: &Event) -> String {
        let p = |p: &ProcId| format!("{}.{}", p.partition, p.process);
        match e {
            Event::WindowStart { window } => format!("{slot}: ws{window}"),
            Event::ScStart { window } => format!("{slot}: sc{window}"),
            Event::BeStart { window } => format!("{slot}: be{window}"),
            Event::WindowEnd { window } => format!("{slot}: we{window}"),
            Event::ProcessStart { proc, .. } => format!("{slot}: +{}", p(proc)),
            Event::ProcessEnd { proc, .. } => format!("{slot}: -{}", p(proc)),
            Event::Init => format!("{slot}: init"),
        }
    }

    #[test]
    fn events_come_at_the_slot_they_happen_in_demos_order() {
        // 1 ms slots: a (0.0) 3 slots, b (0.1) completes in slot 4, BE c (1.0) from slot 5
        // with 9 ms, cut at 10 with 4 ms left and resumed after a and b of the next window
        let mut s = seq(AB, 1000).unwrap();
        let b = ProcId {
            partition: 0,
            process: 1,
        };
        let mut got = Vec::new();
        for n in 0..21 {
            if n == 5 {
                assert!(s.complete(b, 4));
            }
            let d = s.decide();
            got.extend(d.events.iter().map(|e| short(d.slot, e)));
        }
        assert_eq!(
            got,
            [
                "0: ws0", "0: sc0", "0: +0.0", "3: -0.0", "3: +0.1", "5: -0.1", "5: be0",
                "5: +1.0", "10: we0", "10: -1.0", "10: ws0", "10: sc0", "10: +0.0", "13: -0.0",
                "13: +0.1", "16: -0.1", "16: be0", "16: +1.0", "20: we0", "20: -1.0", "20: ws0",
                "20: sc0", "20: +0.0"
            ]
        );
        // the process starts carry the slice's CPUs and the frequency key
        let mut s = seq(
            "{windows: [{length: 2, cpu: 1, sc_processes: [{cmd: a, budget: 1, frequency: 600}]}]}",
            1000,
        )
        .unwrap();
        let d = s.decide();
        assert_eq!(
            d.events[2],
            Event::ProcessStart {
                window: 0,
                slice: 0,
                proc: ProcId {
                    partition: 0,
                    process: 0
                },
                cpus: CpuSet::from_cpus([1]),
                freq_mhz: Some(600.0),
            }
        );
    }

    #[test]
    fn an_sc_process_cut_at_the_window_end_is_an_overrun() {
        let mut s = seq(
            "{windows: [{length: 4, cpu: 0, sc_processes: [{cmd: a, budget: 6}]}]}",
            1000,
        )
        .unwrap();
        for _ in 0..9 {
            s.decide();
        }
        assert_eq!(s.overruns(), 2);
    }
}

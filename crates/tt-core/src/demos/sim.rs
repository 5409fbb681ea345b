//! A simulator of DEmOS's scheduling semantics, in whole milliseconds, writing DEmOS's schedule
//! log (`DEMOS_SCHEDULE_LOG`): one line per process start,
//! `format!("{:6}: cpus={} cmd='{}' budget={}", ms, cpus, cmd, budget)`.
//!
//! Semantics (DEmOS's `MajorFrame`, `Window`, `Slice`, `Partition`, `Process`):
//! - Windows run in order and repeat (the major frame). At a window start every slice starts
//!   its SC partition, in slice order; a slice without one counts as finished at once.
//! - A partition runs one process at a time on the slice's CPUs. An SC partition starts from its
//!   first process in every window; a BE partition continues from where it stopped (a cyclic
//!   cursor: after running all its processes it moves past the last one).
//! - A process runs until its budget runs out or it signals completion (its job is done), then
//!   the partition's next pending process starts at once. A process that has exited, or has
//!   already run out of budget or completed in this activation of the partition, is not
//!   pending. A process that exits does not end its turn: the slice idles until its budget
//!   timer; later activations skip it. When every process has exited, DEmOS stops.
//! - When the last SC partition of the window is done, every slice starts its BE partition
//!   (DEmOS's default "BE after all SC of the window" mode). BE is preempted at the window end;
//!   the preempted process keeps its remaining budget and resumes with it (without a new
//!   jitter draw) the next time the partition runs. An SC process still running at the window
//!   end is stopped (a warning, as DEmOS's "Window ended before all SC partitions finished").
//! - A budget that ends exactly at the window end counts as used up (the process is completed
//!   and the partition's cursor moves on), as DEmOS's `Slice::stop` does.
//! - The budget of each activation is `budget ± jitter/2` drawn from DEmOS's generator
//!   ([`super::rng`]); a drawn budget of 0 skips the process (no log line).
//! - Time limit (`demos-sched -t T`): window starts at `t ≤ T` happen (they are logged), any
//!   other event at `T` does not (DEmOS's process timers have a lower priority than its window
//!   and timeout timers).
//! - Simultaneous events of different slices are handled in slice order.
//!
//! The process model (a simulated process has no code): see [`ProcessModel`].

use super::config::{Config, ConfigError};
use super::cpuset::CpuSet;
use super::power::{Event, ProcId, Timed};
use super::rng::Mt19937;
use std::fmt;

/// How a simulated process behaves, read from its command (`ProcessModel::from_cmd`):
/// - default: it never completes and never exits (a busy loop, `pause()`, DEmOS's `dummy`
///   test program): it runs its whole budget in every activation;
/// - `TT_SIM_WORK_MS=N` as a leading shell assignment: every job needs N ms of execution, then
///   the process signals completion (`demos_completed()`) and its next job starts at its next
///   activation; an unfinished job carries over to the next activation (the process was only
///   frozen);
/// - `TT_SIM_EXIT_MS=N`: it exits after N ms of execution in total;
/// - a command whose first word is `true`, `false`, `exit`, `:` or `echo` exits as soon as it
///   first runs (0 ms), unless `TT_SIM_EXIT_MS` says otherwise.
///
/// The assignments are valid shell, so the same configuration runs unchanged under DEmOS (the
/// real process just sees two more environment variables).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessModel {
    pub work_ms: Option<u64>,
    pub exit_ms: Option<u64>,
}

impl ProcessModel {
    pub fn from_cmd(cmd: &str) -> ProcessModel {
        let mut m = ProcessModel::default();
        let mut words = cmd.split_whitespace().peekable();
        while let Some(w) = words.peek() {
            let Some((name, value)) = w.split_once('=') else {
                break;
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                break;
            }
            match name {
                "TT_SIM_WORK_MS" => m.work_ms = value.parse().ok(),
                "TT_SIM_EXIT_MS" => m.exit_ms = value.parse().ok(),
                _ => {}
            }
            words.next();
        }
        if m.exit_ms.is_none() {
            if let Some(first) = words.next() {
                if ["true", "false", "exit", ":", "echo"].contains(&first) {
                    m.exit_ms = Some(0);
                }
            }
        }
        m
    }
}

/// The process model of every process of `config`, per partition ([`ProcessModel::from_cmd`]).
pub fn process_models(config: &Config) -> Vec<Vec<ProcessModel>> {
    config
        .partitions
        .iter()
        .map(|p| {
            p.processes
                .iter()
                .map(|q| ProcessModel::from_cmd(&q.cmd))
                .collect()
        })
        .collect()
}

/// One line of the schedule log: a process started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    pub time_ms: u64,
    pub cpus: CpuSet,
    pub cmd: String,
    pub budget: u64,
}

impl fmt::Display for LogLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:6}: cpus={} cmd='{}' budget={}",
            self.time_ms, self.cpus, self.cmd, self.budget
        )
    }
}

/// The log as DEmOS writes it: every line ends with a newline.
pub fn render_log(lines: &[LogLine]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[derive(Clone, Debug)]
pub struct SimOptions {
    /// The CPUs `cpu: all` means (DEmOS: its own CPU affinity). Slice CPUs outside this set are
    /// dropped, and a slice left with none runs on the lowest of these, as DEmOS does.
    pub all_cpus: CpuSet,
    /// Run until this time (ms), as `demos-sched -t`.
    pub until_ms: u64,
    /// `DEMOS_RAND_SEED` for the jitter draws.
    pub seed: u32,
}

#[derive(Clone, Debug, Default)]
pub struct SimResult {
    pub log: Vec<LogLine>,
    /// DEmOS's warnings (SC overruns, CPU restrictions), at most [`MAX_WARNINGS`].
    pub warnings: Vec<String>,
    /// When the run ended (ms): `until_ms`, or earlier when every process exited.
    pub end_ms: u64,
    pub all_exited: bool,
    /// With [`simulate_events`]: DEmOS's scheduler events (its `PowerPolicy` hooks) in the
    /// order DEmOS's scheduler makes them, each with the number of log lines written before it
    /// (for `-m`/`-M` messages and power writes between the log lines).
    pub events: Vec<(usize, Timed)>,
}

pub const MAX_WARNINGS: usize = 100;
/// The largest log the simulator writes; a run that would write more stops with an error.
pub const MAX_LOG_LINES: usize = 10_000_000;

/// Configurations DEmOS accepts but cannot run sensibly: no window, or one partition in two
/// slices of the same window (both slices would drive the same processes).
pub fn check_runnable(config: &Config) -> Result<(), ConfigError> {
    if config.windows.is_empty() {
        return Err(ConfigError {
            path: "windows".into(),
            message: "no window to schedule".into(),
        });
    }
    for (i, w) in config.windows.iter().enumerate() {
        let mut seen = std::collections::HashSet::new();
        for s in w.slices() {
            for (key, p) in [
                ("sc_partition", &s.sc_partition),
                ("be_partition", &s.be_partition),
            ] {
                if let Some(p) = p {
                    let path = format!("{}.{key}", s.path);
                    if !seen.insert(p.as_str()) {
                        return Err(ConfigError {
                            path,
                            message: format!(
                                "partition '{p}' is used twice in window #{i}: DEmOS would run \
                                 the same processes from two slices at once (not supported)"
                            ),
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

#[derive(Clone, Debug, Default)]
struct ProcState {
    completed: bool,
    exited: bool,
    /// A BE budget cut at a window end, to resume with.
    stored_budget: Option<u64>,
    /// Execution of the current job (with `work_ms`).
    progress: u64,
    /// Execution in total (with `exit_ms`).
    executed: u64,
}

#[derive(Clone, Debug)]
struct PartState {
    cursor: usize,
    procs: Vec<ProcState>,
}

#[derive(Clone, Debug, Default)]
struct SliceRt {
    cpus: CpuSet,
    sc: Option<usize>,
    be: Option<usize>,
    /// The partition running (SC, then BE).
    partition: Option<usize>,
    /// The process running: index in `partition`.
    running: Option<usize>,
    started: u64,
    timeout: u64,
}

struct Sim<'a> {
    config: &'a Config,
    models: Vec<Vec<ProcessModel>>,
    parts: Vec<PartState>,
    slices: Vec<SliceRt>,
    finished_sc: usize,
    stopping: bool,
    rng: Mt19937,
    out: SimResult,
    alive: usize,
    /// The window running (index in `config.windows`).
    window: usize,
    /// Record the events ([`simulate_events`]).
    record: bool,
}

impl Sim<'_> {
    fn emit(&mut self, time_ms: u64, event: Event) {
        if self.record {
            let at = self.out.log.len();
            self.out.events.push((at, Timed { time_ms, event }));
        }
    }

    fn warn(&mut self, w: String) {
        if self.out.warnings.len() < MAX_WARNINGS {
            self.out.warnings.push(w);
        }
    }

    fn pending(&self, p: usize, i: usize) -> bool {
        let s = &self.parts[p].procs[i];
        !s.exited && !s.completed
    }

    /// DEmOS's `seek_pending_process`.
    fn seek(&mut self, p: usize) -> Option<usize> {
        let n = self.parts[p].procs.len();
        if n == 0 {
            return None;
        }
        for _ in 0..n {
            let c = self.parts[p].cursor;
            if self.pending(p, c) {
                return Some(c);
            }
            self.parts[p].cursor = (c + 1) % n;
        }
        self.parts[p].cursor = (self.parts[p].cursor + 1) % n;
        None
    }

    /// `load_next_process`: the next pending process, or the SC-done signal.
    fn load_next(&mut self, s: usize, t: u64) -> Option<usize> {
        let p = self.slices[s].partition?;
        let next = self.seek(p);
        if next.is_none() && self.slices[s].partition == self.slices[s].sc {
            self.sc_done(t);
        }
        next
    }

    fn start_next(&mut self, s: usize, t: u64) -> Result<(), String> {
        loop {
            let Some(i) = self.load_next(s, t) else {
                return Ok(());
            };
            let p = self.slices[s].partition.expect("a partition runs");
            let proc = &self.config.partitions[p].processes[i];
            let budget = match self.parts[p].procs[i].stored_budget.take() {
                Some(b) => b,
                None => self.rng.jittered(proc.budget, proc.jitter),
            };
            if budget == 0 {
                self.parts[p].procs[i].completed = true;
                continue;
            }
            if self.out.log.len() >= MAX_LOG_LINES {
                return Err(format!(
                    "the schedule log would exceed {MAX_LOG_LINES} lines: simulate less time"
                ));
            }
            let freq_mhz = proc.frequency;
            self.out.log.push(LogLine {
                time_ms: t,
                cpus: self.slices[s].cpus,
                cmd: proc.cmd.clone(),
                budget,
            });
            let event = Event::ProcessStart {
                window: self.window,
                slice: s,
                proc: ProcId {
                    partition: p,
                    process: i,
                },
                cpus: self.slices[s].cpus,
                freq_mhz,
            };
            self.emit(t, event);
            let rt = &mut self.slices[s];
            rt.running = Some(i);
            rt.started = t;
            rt.timeout = t + budget;
            return Ok(());
        }
    }

    /// Charges the running process of slice `s` for its execution up to `t`; a job that
    /// reaches its work starts over (its completion is taken by the caller).
    fn account(&mut self, s: usize, t: u64) {
        let (Some(p), Some(i)) = (self.slices[s].partition, self.slices[s].running) else {
            return;
        };
        let ran = t - self.slices[s].started;
        self.slices[s].started = t;
        let model = self.models[p][i];
        let st = &mut self.parts[p].procs[i];
        if st.exited {
            return;
        }
        st.executed += ran;
        st.progress += ran;
        if let Some(w) = model.work_ms {
            if st.progress >= w {
                st.progress = 0;
            }
        }
        if let Some(e) = model.exit_ms {
            if st.executed >= e {
                st.exited = true;
                self.alive -= 1;
            }
        }
    }

    fn stop_current(&mut self, s: usize, completed: bool, t: u64) {
        if let (Some(p), Some(i)) = (self.slices[s].partition, self.slices[s].running.take()) {
            if completed {
                self.parts[p].procs[i].completed = true;
            }
            let event = Event::ProcessEnd {
                window: self.window,
                slice: s,
                proc: ProcId {
                    partition: p,
                    process: i,
                },
            };
            self.emit(t, event);
        }
    }

    fn start_partition(&mut self, s: usize, p: usize, t: u64, first: bool) -> Result<(), String> {
        self.slices[s].partition = Some(p);
        for st in &mut self.parts[p].procs {
            st.completed = false;
        }
        if first {
            self.parts[p].cursor = 0;
        }
        self.start_next(s, t)
    }

    fn sc_done(&mut self, t: u64) {
        self.finished_sc += 1;
        if self.stopping || self.finished_sc != self.slices.len() {
            return;
        }
        self.emit(
            t,
            Event::BeStart {
                window: self.window,
            },
        );
        for s in 0..self.slices.len() {
            if let Some(be) = self.slices[s].be {
                // errors (log size) surface at the next start_next call
                let _ = self.start_partition(s, be, t, false);
            }
        }
    }

    fn start_window(&mut self, t: u64) -> Result<(), String> {
        self.finished_sc = 0;
        self.emit(
            t,
            Event::WindowStart {
                window: self.window,
            },
        );
        self.emit(
            t,
            Event::ScStart {
                window: self.window,
            },
        );
        for s in 0..self.slices.len() {
            match self.slices[s].sc {
                Some(sc) => self.start_partition(s, sc, t, true)?,
                None => self.sc_done(t),
            }
        }
        Ok(())
    }

    fn stop_window(&mut self, t: u64) {
        self.stopping = true;
        self.emit(
            t,
            Event::WindowEnd {
                window: self.window,
            },
        );
        for s in 0..self.slices.len() {
            if self.slices[s].running.is_none() {
                continue;
            }
            self.account(s, t);
            let remaining = self.slices[s].timeout - t;
            if remaining == 0 {
                self.stop_current(s, true, t);
                let _ = self.load_next(s, t);
                continue;
            }
            if self.slices[s].partition == self.slices[s].be && self.slices[s].be.is_some() {
                let (p, i) = (
                    self.slices[s].partition.unwrap(),
                    self.slices[s].running.unwrap(),
                );
                self.parts[p].procs[i].stored_budget = Some(remaining);
            }
            self.stop_current(s, false, t);
        }
        self.stopping = false;
    }

    /// The earliest event of the running processes: (time, slice).
    fn next_event(&self) -> Option<(u64, usize)> {
        let mut best: Option<(u64, usize)> = None;
        for (s, rt) in self.slices.iter().enumerate() {
            let (Some(p), Some(i)) = (rt.partition, rt.running) else {
                continue;
            };
            let st = &self.parts[p].procs[i];
            let m = self.models[p][i];
            let mut t = rt.timeout;
            if !st.exited {
                if let Some(w) = m.work_ms {
                    t = t.min(rt.started + w.saturating_sub(st.progress));
                }
                if let Some(e) = m.exit_ms {
                    t = t.min(rt.started + e.saturating_sub(st.executed));
                }
            }
            if best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, s));
            }
        }
        best
    }

    /// Handles the event of slice `s` at `t`: the budget timer, the job's completion or the
    /// process's exit (an exit alone leaves the slice idle until the budget timer).
    fn event(&mut self, s: usize, t: u64) -> Result<(), String> {
        let (p, i) = (
            self.slices[s].partition.expect("running"),
            self.slices[s].running.expect("running"),
        );
        let st = &self.parts[p].procs[i];
        let ran = t - self.slices[s].started;
        let completes = !st.exited
            && self.models[p][i]
                .work_ms
                .is_some_and(|w| st.progress + ran >= w);
        self.account(s, t);
        if self.alive == 0 {
            return Ok(());
        }
        if completes || t >= self.slices[s].timeout {
            self.stop_current(s, true, t);
            self.start_next(s, t)?;
        }
        Ok(())
    }
}

/// Simulate `config` for `opts.until_ms` milliseconds.
pub fn simulate(config: &Config, opts: &SimOptions) -> Result<SimResult, String> {
    run(config, opts, false)
}

/// [`simulate`], also recording DEmOS's scheduler events in `SimResult::events`, exactly as
/// the simulator makes them: [`Event::Init`] at 0; at a window end `WindowEnd`, then a
/// `ProcessEnd` for each process it stops (slice order); at a window start `WindowStart`,
/// `ScStart`, the SC processes' starts (slice order), and `BeStart` when the last SC
/// partition is done (at once when no SC work is pending), followed by the BE starts; a
/// process's end (budget or completion) comes right before the next start of its slice. An
/// exit ends nothing (the slice idles until the budget timer, as DEmOS). No event at the end of
/// the run stops the processes still running.
pub fn simulate_events(config: &Config, opts: &SimOptions) -> Result<SimResult, String> {
    run(config, opts, true)
}

fn run(config: &Config, opts: &SimOptions, record: bool) -> Result<SimResult, String> {
    check_runnable(config).map_err(|e| e.to_string())?;
    if opts.all_cpus.is_empty() {
        return Err("the CPU set of `all` is empty".into());
    }
    let mut sim = Sim::new(config, opts, record);
    sim.emit(0, Event::Init);
    let windows = sim.window_slices(opts);
    sim.run_windows(&windows, opts.until_ms)
}

impl<'a> Sim<'a> {
    /// A simulator at time 0, before the first window: every process alive, no slice yet.
    fn new(config: &'a Config, opts: &SimOptions, record: bool) -> Sim<'a> {
        let models = process_models(config);
        let parts = config
            .partitions
            .iter()
            .map(|p| PartState {
                cursor: 0,
                procs: vec![ProcState::default(); p.processes.len()],
            })
            .collect();
        let alive = config.partitions.iter().map(|p| p.processes.len()).sum();
        Sim {
            config,
            models,
            parts,
            slices: Vec::new(),
            finished_sc: 0,
            stopping: false,
            rng: Mt19937::new(opts.seed),
            out: SimResult::default(),
            alive,
            window: 0,
            record,
        }
    }

    /// Each window's slices with their effective CPUs (warning for every restricted slice).
    fn window_slices(&mut self, opts: &SimOptions) -> Vec<Vec<SliceRt>> {
        let config = self.config;
        let index = config.partition_index();
        let mut windows = Vec::new();
        for w in &config.windows {
            let mut rts = Vec::new();
            for s in w.slices() {
                let want = s.cpus(opts.all_cpus);
                let mut cpus = want.and(opts.all_cpus);
                if cpus.is_empty() {
                    cpus = CpuSet::from_cpus(opts.all_cpus.lowest());
                    self.warn(format!(
                        "{}.cpu: slice CPUs '{want}' are not available (available: '{}'); the slice \
                         runs on CPU {cpus} instead",
                        s.path, opts.all_cpus
                    ));
                } else if cpus != want {
                    self.warn(format!(
                        "{}.cpu: slice runs on CPUs '{cpus}' instead of '{want}' (available: '{}')",
                        s.path, opts.all_cpus
                    ));
                }
                rts.push(SliceRt {
                    cpus,
                    sc: s.sc_partition.as_deref().map(|n| index[n]),
                    be: s.be_partition.as_deref().map(|n| index[n]),
                    ..SliceRt::default()
                });
            }
            windows.push(rts);
        }
        windows
    }

    /// Runs the major frames window after window until `until`, or until every process exited.
    fn run_windows(mut self, windows: &[Vec<SliceRt>], until: u64) -> Result<SimResult, String> {
        let alive = self.alive;
        let mut t = 0;
        let mut w = 0;
        self.slices = windows[0].clone();
        self.start_window(0)?;
        loop {
            let end = t + self.config.windows[w].length;
            if let Some(et) = self.window_events(end, until, alive)? {
                return Ok(self.all_exited_at(et));
            }
            if end > until {
                break;
            }
            self.end_window(end, w);
            if alive > 0 && self.alive == 0 {
                return Ok(self.all_exited_at(end));
            }
            t = end;
            w = (w + 1) % self.config.windows.len();
            self.window = w;
            self.slices = windows[w].clone();
            self.start_window(t)?;
            if t == until {
                break;
            }
        }
        self.out.end_ms = until;
        Ok(self.out)
    }

    /// Handles the events of the window ending at `end`; `Some(t)`: every process (of the
    /// `alive` at the start) exited at `t`.
    fn window_events(&mut self, end: u64, until: u64, alive: usize) -> Result<Option<u64>, String> {
        // events strictly inside the window and before the time limit
        while let Some((et, s)) = self.next_event() {
            if et >= end || et >= until {
                break;
            }
            self.event(s, et)?;
            if alive > 0 && self.alive == 0 {
                return Ok(Some(et));
            }
        }
        Ok(None)
    }

    /// Stops window `w` at `end`, warning when its SC work is not all done.
    fn end_window(&mut self, end: u64, w: usize) {
        self.stop_window(end);
        if self.finished_sc < self.slices.len() {
            self.warn(format!(
                "{end} ms: window #{w} ended before all SC partitions finished"
            ));
        }
    }

    /// The result of a run whose processes all exited at `end_ms`.
    fn all_exited_at(mut self, end_ms: u64) -> SimResult {
        self.out.end_ms = end_ms;
        self.out.all_exited = true;
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demos::config::Source;

    fn run(yaml: &str, until_ms: u64) -> SimResult {
        let c = Config::from_yaml(yaml, Source::Inline).unwrap();
        let o = SimOptions {
            all_cpus: CpuSet::first_n(4),
            until_ms,
            seed: Mt19937::DEFAULT_SEED,
        };
        simulate(&c, &o).unwrap()
    }

    fn lines(r: &SimResult) -> Vec<String> {
        r.log
            .iter()
            .map(|l| format!("{} {} {}", l.time_ms, l.cmd, l.budget))
            .collect()
    }

    #[test]
    fn process_models_are_read_from_the_command() {
        assert_eq!(ProcessModel::from_cmd("dummy"), ProcessModel::default());
        let m = ProcessModel::from_cmd("FOO=1 TT_SIM_WORK_MS=3 TT_SIM_EXIT_MS=9 ./app x");
        assert_eq!((m.work_ms, m.exit_ms), (Some(3), Some(9)));
        assert_eq!(ProcessModel::from_cmd("echo hello").exit_ms, Some(0));
        assert_eq!(
            ProcessModel::from_cmd("TT_SIM_EXIT_MS=4 true").exit_ms,
            Some(4)
        );
        assert_eq!(ProcessModel::from_cmd("./echo").exit_ms, None);
    }

    #[test]
    fn completion_starts_the_next_process_and_then_be() {
        let r = run(
            "{windows: [{length: 10, cpu: 0,
               sc_processes: [{cmd: 'TT_SIM_WORK_MS=2 a', budget: 5}, {cmd: b, budget: 3}],
               be_processes: [{cmd: c, budget: 10}]}]}",
            10,
        );
        assert_eq!(
            lines(&r),
            [
                "0 TT_SIM_WORK_MS=2 a 5",
                "2 b 3",
                "5 c 10",
                "10 TT_SIM_WORK_MS=2 a 5"
            ]
        );
    }

    #[test]
    fn an_unfinished_job_carries_over_to_the_next_window() {
        let r = run(
            "{windows: [{length: 10, cpu: 0,
               sc_processes: [{cmd: 'TT_SIM_WORK_MS=7 a', budget: 5}, {cmd: b, budget: 2}]}]}",
            20,
        );
        let a = "TT_SIM_WORK_MS=7 a";
        // 5 ms of the 7 ms job in window 1, the last 2 ms in window 2 (then b starts early)
        assert_eq!(
            lines(&r),
            [
                format!("0 {a} 5"),
                "5 b 2".into(),
                format!("10 {a} 5"),
                "12 b 2".into(),
                format!("20 {a} 5")
            ]
        );
    }

    #[test]
    fn an_exit_idles_the_slice_until_the_budget_timer_and_is_skipped_later() {
        let r = run(
            "{windows: [{length: 10, cpu: 0,
               sc_processes: [{cmd: 'TT_SIM_EXIT_MS=3 a', budget: 5}, {cmd: b, budget: 2}]}]}",
            30,
        );
        assert_eq!(
            lines(&r),
            [
                "0 TT_SIM_EXIT_MS=3 a 5",
                "5 b 2",
                "10 b 2",
                "20 b 2",
                "30 b 2"
            ]
        );
        assert!(!r.all_exited);
        // every process exited: DEmOS stops
        let r = run(
            "{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: echo hi, budget: 5}]}]}",
            100,
        );
        assert_eq!(lines(&r), ["0 echo hi 5"]);
        assert!(r.all_exited);
        assert_eq!(r.end_ms, 0);
    }

    #[test]
    fn a_be_budget_ending_at_the_window_end_moves_the_cursor_on() {
        let r = run(
            "{windows: [{length: 10, cpu: 0, be_processes: [{cmd: x, budget: 10}, {cmd: y, budget: 4}]}]}",
            30,
        );
        assert_eq!(
            lines(&r),
            ["0 x 10", "10 y 4", "14 x 10", "20 x 4", "24 y 4", "30 x 10"]
        );
    }

    #[test]
    fn slices_without_sc_wait_for_the_other_slices_sc() {
        let r = run(
            "{windows: [{length: 10, slices: [
                {cpu: 0, be_processes: [{cmd: b0, budget: 9}]},
                {cpu: 1-3, sc_processes: [{cmd: s1, budget: 4}]}]}]}",
            10,
        );
        let text = render_log(&r.log);
        assert_eq!(
            text,
            "     0: cpus=1-3 cmd='s1' budget=4\n     4: cpus=0 cmd='b0' budget=9\n    10: cpus=1-3 cmd='s1' budget=4\n"
        );
    }

    #[test]
    fn all_means_the_given_cpus_and_unavailable_cpus_are_dropped() {
        let c = Config::from_yaml(
            "{windows: [{length: 5, sc_processes: a}, {length: 5, cpu: 6-7, sc_processes: b}]}",
            Source::Inline,
        )
        .unwrap();
        let o = SimOptions {
            all_cpus: CpuSet::first_n(2),
            until_ms: 5,
            seed: 1,
        };
        let r = simulate(&c, &o).unwrap();
        assert_eq!(
            render_log(&r.log),
            "     0: cpus=0,1 cmd='a' budget=3\n     5: cpus=0 cmd='b' budget=3\n"
        );
        assert!(
            r.warnings.iter().any(|w| w.contains("windows[1].cpu")),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn a_partition_twice_in_one_window_is_refused() {
        let c = Config::from_yaml(
            "{partitions: [{name: P, processes: [{cmd: a, budget: 1}]}],
              windows: [{length: 5, slices: [{cpu: 0, sc_partition: P}, {cpu: 1, be_partition: P}]}]}",
            Source::Inline,
        )
        .unwrap();
        let e = check_runnable(&c).unwrap_err();
        assert_eq!(e.path, "windows[0].slices[1].be_partition");
    }
}

//! The simulation of one run (the module doc's algorithm): releases, the current windows, who
//! runs at each event of a slot, the time accounting, and the report at the end.

use super::check::validate;
use super::{ComponentStats, Config, Design, Exec, Ratios, ServerError, ServerReport};
use super::{TaskStats, TimeSplit};
use crate::plan::gen::SplitMix64;
use crate::planner::interface::Scheduler;
use std::collections::VecDeque;

/// One released, unfinished job.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// Release slot.
    release: u64,
    /// Work left, ticks.
    left: u64,
}

struct TaskState {
    comp: usize,
    /// Index within its component.
    local: usize,
    period: u64,
    period_ticks: u64,
    wcet_ticks: u64,
    next_release: u64,
    released: u64,
    queue: VecDeque<Pending>,
    misses: u64,
    ratios: Vec<f64>,
}

#[derive(Clone, Copy, Default)]
struct WindowState {
    /// Index of the first window (in `windows`, frame `frame_no`) not over yet.
    idx: usize,
    frame_no: u64,
    active: bool,
    /// Absolute deadline slot of the current window (when active).
    deadline: u64,
    /// wcps-paper: budget ticks left in the current window.
    budget: u64,
    /// Whether the budget of window (idx, frame_no) was filled.
    filled: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runner {
    Comp(usize),
    Be,
    Idle,
}

/// The execution factor of job `k` of task `task` of component `comp`.
pub(super) fn factor(exec: Exec, seed: u64, comp: usize, task: usize, k: u64) -> f64 {
    match exec {
        Exec::Factor(f) => f,
        Exec::Uniform { min } => {
            let mut key = SplitMix64::new(seed).next_u64() ^ comp as u64;
            key = SplitMix64::new(key).next_u64() ^ task as u64;
            key = SplitMix64::new(key).next_u64() ^ k;
            let u = SplitMix64::new(key).next_f64();
            min + (1.0 - min) * u
        }
    }
}

/// Actual ticks of a job of `wcet_ticks` at factor `f` (0 < f ≤ 1): ⌈f·wcet⌉, at least 1.
pub(super) fn actual_ticks(f: f64, wcet_ticks: u64) -> u64 {
    ((f * wcet_ticks as f64).ceil() as u64).clamp(1, wcet_ticks)
}

/// Runs one CPU's table with its components under `cfg.design` (module doc).
pub fn simulate(cfg: &Config) -> Result<ServerReport, ServerError> {
    validate(cfg)?;
    let mut run = Run::new(*cfg);
    for s in 0..cfg.slots {
        run.slot(s);
    }
    Ok(run.report())
}

/// The state of a run between events.
struct Run<'a> {
    cfg: Config<'a>,
    tps: u64,
    /// The table's length.
    frame: u64,
    tasks: Vec<TaskState>,
    /// Per component: its task indices (into `tasks`) in RM order (period, index).
    order: Vec<Vec<usize>>,
    /// Per component: its tasks with ready work.
    ready: Vec<usize>,
    win: Vec<WindowState>,
    time: TimeSplit,
    stats: Vec<ComponentStats>,
}

impl<'a> Run<'a> {
    fn new(cfg: Config<'a>) -> Run<'a> {
        let tps = cfg.ticks_per_slot;
        let comps = cfg.components;
        let n = comps.len();
        let mut tasks: Vec<TaskState> = Vec::new();
        let mut order: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (c, comp) in comps.iter().enumerate() {
            let first = tasks.len();
            for (i, t) in comp.tasks.iter().enumerate() {
                tasks.push(TaskState {
                    comp: c,
                    local: i,
                    period: t.period,
                    period_ticks: t.period * tps,
                    wcet_ticks: t.wcet * tps,
                    next_release: 0,
                    released: 0,
                    queue: VecDeque::new(),
                    misses: 0,
                    ratios: Vec::new(),
                });
            }
            let mut o: Vec<usize> = (first..tasks.len()).collect();
            o.sort_by_key(|&t| (tasks[t].period, t));
            order[c] = o;
        }
        let stats = comps
            .iter()
            .map(|c| ComponentStats {
                name: c.name.clone(),
                opaque: c.opaque,
                ..Default::default()
            })
            .collect();
        Run {
            cfg,
            tps,
            frame: cfg.table.len() as u64,
            tasks,
            order,
            ready: vec![0usize; n],
            win: vec![WindowState::default(); n],
            time: TimeSplit::default(),
            stats,
        }
    }

    /// Slot `s`: its releases and windows, then event by event until the slot ends.
    fn slot(&mut self, s: u64) {
        self.release(s);
        self.advance_windows(s);
        let tps = self.tps;
        let owner = self.cfg.table[(s % self.frame) as usize];
        if let Some(o) = owner {
            self.stats[o].owned += tps;
        }
        let mut t = 0u64;
        while t < tps {
            let runner = self.choose(owner);
            let dt = self.run(runner, owner, s, t);
            debug_assert!(dt > 0);
            // the owner's budget passes with its slot (wcps-paper)
            if let Some(o) = owner {
                if self.cfg.design == Design::WcpsPaper {
                    self.win[o].budget = self.win[o].budget.saturating_sub(dt);
                }
            }
            self.account(runner, owner, dt);
            t += dt;
        }
    }

    /// The jobs released at slot `s`.
    fn release(&mut self, s: u64) {
        let comps = self.cfg.components;
        for t in self.tasks.iter_mut() {
            if t.next_release == s {
                let f = factor(
                    comps[t.comp].exec,
                    self.cfg.seed,
                    t.comp,
                    t.local,
                    t.released,
                );
                if t.queue.is_empty() {
                    self.ready[t.comp] += 1;
                }
                t.queue.push_back(Pending {
                    release: s,
                    left: actual_ticks(f, t.wcet_ticks),
                });
                t.released += 1;
                t.next_release = s + t.period;
            }
        }
    }

    /// Moves each component to its current window at slot `s` (wcps-paper: a new window
    /// refills the budget).
    fn advance_windows(&mut self, s: u64) {
        let (comps, frame, tps) = (self.cfg.components, self.frame, self.tps);
        for (c, w) in self.win.iter_mut().enumerate() {
            let ws = &comps[c].windows;
            w.active = false;
            if ws.is_empty() {
                continue;
            }
            loop {
                let x = ws[w.idx];
                let base = w.frame_no * frame;
                if base + x.deadline <= s {
                    w.idx += 1;
                    if w.idx == ws.len() {
                        w.idx = 0;
                        w.frame_no += 1;
                    }
                    w.filled = false;
                    continue;
                }
                if base + x.release <= s {
                    w.active = true;
                    w.deadline = base + x.deadline;
                    if !w.filled {
                        w.budget = x.budget * tps;
                        w.filled = true;
                    }
                }
                break;
            }
        }
    }

    /// Who runs now in a slot of `owner` (the rule of the module doc).
    fn choose(&self, owner: Option<usize>) -> Runner {
        let (cfg, comps) = (&self.cfg, self.cfg.components);
        let owner_runs = owner.is_some_and(|o| {
            comps[o].opaque
                || (self.ready[o] > 0
                    && (cfg.design != Design::WcpsPaper || self.win[o].budget > 0))
        });
        match owner {
            None => {
                if cfg.be {
                    Runner::Be
                } else {
                    Runner::Idle
                }
            }
            Some(o) if owner_runs => Runner::Comp(o),
            Some(o) => match self.reclaimer(o) {
                Some(c) => Runner::Comp(c),
                None if cfg.be && cfg.design != Design::Ptps => Runner::Be,
                None => Runner::Idle,
            },
        }
    }

    /// The component that runs in the slot of `o` while `o` does not: crps, the earliest
    /// server deadline; wcps-paper, the highest priority below `o` with budget left.
    fn reclaimer(&self, o: usize) -> Option<usize> {
        let (comps, win, ready) = (self.cfg.components, &self.win, &self.ready);
        let n = comps.len();
        match self.cfg.design {
            Design::Ptps | Design::Wcps => None,
            Design::Crps => (0..n)
                .filter(|&c| c != o && !comps[c].opaque && win[c].active && ready[c] > 0)
                .min_by_key(|&c| (win[c].deadline, c)),
            Design::WcpsPaper => (0..n)
                .filter(|&c| {
                    (comps[c].period, c) > (comps[o].period, o)
                        && !comps[c].opaque
                        && win[c].active
                        && win[c].budget > 0
                        && ready[c] > 0
                })
                .min_by_key(|&c| (comps[c].period, c)),
        }
    }

    /// The job component `c`'s local scheduler runs: its task index, or `None`.
    fn pick(&self, c: usize) -> Option<usize> {
        let (tasks, order) = (&self.tasks, &self.order);
        match self.cfg.components[c].scheduler {
            Scheduler::Rm => order[c]
                .iter()
                .copied()
                .find(|&t| !tasks[t].queue.is_empty()),
            Scheduler::Edf => order[c]
                .iter()
                .copied()
                .filter_map(|t| {
                    tasks[t]
                        .queue
                        .front()
                        .map(|j| (j.release + tasks[t].period, t))
                })
                .min()
                .map(|(_, t)| t),
        }
    }

    /// Runs `runner` from tick `t` of slot `s` until its job completes, a budget runs out or
    /// the slot ends; the ticks it ran.
    fn run(&mut self, runner: Runner, owner: Option<usize>, s: u64, t: u64) -> u64 {
        let rest = self.tps - t;
        let c = match runner {
            Runner::Comp(c) if !self.cfg.components[c].opaque => c,
            Runner::Comp(_) | Runner::Be | Runner::Idle => return rest,
        };
        let ti = self.pick(c).expect("a ready component has a job");
        let job = self.tasks[ti].queue.front_mut().expect("picked job");
        let mut dt = rest.min(job.left);
        if self.cfg.design == Design::WcpsPaper {
            dt = dt.min(self.win[c].budget);
            if Some(c) != owner {
                self.win[c].budget -= dt;
            }
        }
        job.left -= dt;
        if job.left == 0 {
            self.complete(c, ti, s * self.tps + t + dt);
        }
        dt
    }

    /// The front job of task `ti` of component `c` completes at tick `finish`.
    fn complete(&mut self, c: usize, ti: usize, finish: u64) {
        let tk = &mut self.tasks[ti];
        let job = tk.queue.pop_front().expect("picked job");
        if tk.queue.is_empty() {
            self.ready[c] -= 1;
        }
        let release = job.release * self.tps;
        if finish > release + tk.period_ticks {
            tk.misses += 1;
        }
        tk.ratios
            .push((finish - release) as f64 / tk.period_ticks as f64);
    }

    /// Accounts `dt` ticks of `runner` in a slot of `owner`.
    fn account(&mut self, runner: Runner, owner: Option<usize>, dt: u64) {
        let (time, stats) = (&mut self.time, &mut self.stats);
        match (runner, owner) {
            (Runner::Comp(c), Some(o)) if c == o => {
                time.owner += dt;
                stats[c].ran_own += dt;
            }
            (Runner::Comp(c), Some(o)) => {
                time.reclaimed += dt;
                stats[c].ran_reclaimed += dt;
                stats[o].given += dt;
            }
            (Runner::Comp(_), None) => unreachable!("free slots run no component"),
            (Runner::Be, o) | (Runner::Idle, o) => {
                if runner == Runner::Be {
                    time.be += dt;
                } else {
                    time.idle += dt;
                }
                if let Some(o) = o {
                    stats[o].unused += dt;
                }
            }
        }
    }

    /// The report at the end of the run: every task's statistics, summed per component.
    fn report(self) -> ServerReport {
        let Run {
            cfg,
            tps,
            tasks,
            time,
            mut stats,
            ..
        } = self;
        let per_task = task_stats(&cfg, tasks);
        let mut jobs = 0;
        let mut misses = 0;
        for (c, ts) in per_task.into_iter().enumerate() {
            let st = &mut stats[c];
            st.jobs = ts.iter().map(|t| t.jobs).sum();
            st.misses = ts.iter().map(|t| t.misses).sum();
            st.pending = ts.iter().map(|t| t.pending).sum();
            st.tasks = ts;
            let all: Vec<f64> = st.ratios().collect();
            st.response = Ratios::of(&all);
            jobs += st.jobs;
            misses += st.misses;
        }
        ServerReport {
            design: cfg.design,
            ticks_per_slot: tps,
            slots: cfg.slots,
            jobs,
            misses,
            time,
            components: stats,
        }
    }
}

/// Every task's statistics per component, with the jobs unfinished at the end of the run: a
/// miss once due (response = end − release, a lower bound), else pending.
fn task_stats(cfg: &Config, tasks: Vec<TaskState>) -> Vec<Vec<TaskStats>> {
    let tps = cfg.ticks_per_slot;
    let end = cfg.slots * tps;
    let mut per_task: Vec<Vec<TaskStats>> = cfg
        .components
        .iter()
        .map(|c| {
            c.tasks
                .iter()
                .map(|t| TaskStats {
                    name: t.name.clone(),
                    period: t.period,
                    wcet: t.wcet,
                    ..Default::default()
                })
                .collect()
        })
        .collect();
    for tk in tasks {
        let st = &mut per_task[tk.comp][tk.local];
        let mut ratios = tk.ratios;
        st.misses = tk.misses;
        for j in &tk.queue {
            let release = j.release * tps;
            if release + tk.period_ticks <= end {
                st.misses += 1;
                ratios.push((end - release) as f64 / tk.period_ticks as f64);
            } else {
                st.pending += 1;
            }
        }
        st.jobs = ratios.len() as u64;
        st.response = Ratios::of(&ratios);
        st.ratios = ratios;
    }
    per_task
}

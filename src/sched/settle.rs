//! When a spawned (`cmd`) task has started: the pure rule of the settle period (the OS side is
//! `sched::spawn`, the run edge `cli/run/tasks.rs`). Before the scheduler attaches, scx_tt lets
//! its spawned tasks run under the kernel's own scheduler until each has *settled*, then
//! stops them again, attaches and lets them go on at slot 0. Without this, a task's start-up
//! (exec, dynamic loading, page faults, forked helpers, waits) happened in its slots only: in
//! the test VM for dozens of slots an owner ran a fraction of its slot and blocked, and be
//! work took the rest.
//!
//! A task has settled when, after the exec of its command, a whole [`WINDOW_NS`] passed in
//! which its process group
//! - started or lost no thread or process (the same thread ids at both ends: no exec of a
//!   multi-threaded process, no forked helper, no worker started),
//! - took at most [`MAX_FAULTS`] page faults (loading and first touches of memory fault a lot;
//!   a running loop does not), and
//! - ran on a CPU, or was asleep at the end (a task whose steady state is waiting); a task that
//!   neither ran nor slept waited for a CPU the whole window, which says nothing, and is
//!   judged again over the next window.
//!
//! A task that has exited is settled. The period ends when every task has settled, or after
//! the timeout (`--settle-ms`, default [`DEFAULT_TIMEOUT_MS`]): tasks whose steady state itself
//! forks or faults all the time, and start-ups longer than the timeout, then go on in their
//! slots. A start-up that sleeps longer than the window in one piece looks settled.
//!
//! A DEmOS process with `init: yes` (docs/demos.md, "Initialisation") is judged by its own
//! signal instead ([`Settle::init`]): it has finished its initialisation when, after the exec,
//! a process of its group stopped itself (`kill -STOP $$`, `raise(SIGSTOP)`: what DEmOS's
//! `demos_initialization_completed()` does to the caller, it suspends it), or it exited. The
//! period then lasts until every such process has signalled (the run's `--init-timeout-ms`
//! bounds it; the quiet-window rule does not apply to them).

use std::fmt::Write;

/// The quiet window.
pub const WINDOW_NS: u64 = 50_000_000;
/// Page faults of the process group allowed in the window.
pub const MAX_FAULTS: u64 = 8;
/// Default bound of the settle period, ms (`--settle-ms`).
pub const DEFAULT_TIMEOUT_MS: u64 = 2000;
/// How often the tasks are looked at.
pub const POLL_NS: u64 = 10_000_000;

/// One look at a spawned task's process group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// CLOCK_MONOTONIC ns of the look.
    pub at_ns: u64,
    /// The spawned process has exited.
    pub exited: bool,
    /// It has exec'd its command (its command line is no longer the spawn wrapper's).
    pub execd: bool,
    /// The thread ids of its process group, sorted.
    pub tids: Vec<u32>,
    /// Page faults (minor and major) of the group's processes and of the children they have
    /// waited for, summed.
    pub faults: u64,
    /// CPU time of the group's threads and of the children its processes have waited for,
    /// summed, ns.
    pub cpu_ns: u64,
    /// Every thread of the group is asleep (blocked, not runnable).
    pub asleep: bool,
    /// A thread of the group is stopped by a signal (state `T`).
    pub stopped: bool,
}

/// The fields of `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) the settle period reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// R (running or runnable), S, D, T, Z, ...
    pub state: char,
    /// Process group.
    pub pgrp: u32,
    /// Page faults, minor and major, of the process (of all its threads) and of its children
    /// it has waited for: a helper process that has come and gone between two looks still
    /// counts (its faults move to its parent's `cminflt` when the parent reaps it).
    pub faults: u64,
    /// utime + stime, clock ticks (of the thread, or of all threads of a process).
    pub cpu_ticks: u64,
    /// cutime + cstime, clock ticks: the children it has waited for.
    pub child_cpu_ticks: u64,
}

/// Parses a `stat` file: after the command name's closing parenthesis come the state (field
/// 3), the parent, the process group (5), ..., minflt (10), cminflt, majflt, cmajflt (13),
/// utime (14), stime, cutime, cstime (17).
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let f: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    let num = |i: usize| f.get(i)?.parse::<u64>().ok();
    let sum = |from: usize, to: usize| {
        (from..=to).try_fold(0u64, |acc, i| Some(acc.saturating_add(num(i)?)))
    };
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        pgrp: u32::try_from(num(2)?).ok()?,
        faults: sum(7, 10)?,
        cpu_ticks: sum(11, 12)?,
        child_cpu_ticks: sum(13, 14)?,
    })
}

/// The run time of a thread from `/proc/PID/task/TID/schedstat` (its first field, ns).
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The settle state of one task, fed one [`Sample`] per look.
#[derive(Clone, Debug, Default)]
pub struct Settle {
    /// The start of the current quiet window.
    base: Option<Sample>,
    /// When it settled.
    settled_ns: Option<u64>,
    /// The last look.
    last: Option<Sample>,
    /// A DEmOS `init: yes` process: settled by its own signal (it stops itself) only.
    init: bool,
}

impl Settle {
    /// The state of a DEmOS `init: yes` process: settled when, after its exec, a process of
    /// its group stopped itself, or when it exited.
    pub fn init() -> Settle {
        Settle {
            init: true,
            ..Settle::default()
        }
    }

    pub fn is_init(&self) -> bool {
        self.init
    }

    /// Takes a look; returns whether the task has settled (then it stays settled).
    pub fn observe(&mut self, s: Sample) -> bool {
        if self.settled_ns.is_some() {
            return true;
        }
        self.last = Some(s.clone());
        if s.exited || (self.init && s.execd && s.stopped) {
            self.settled_ns = Some(s.at_ns);
            return true;
        }
        if !s.execd || self.init {
            self.base = None;
            return false;
        }
        let Some(b) = &self.base else {
            self.base = Some(s);
            return false;
        };
        let quiet = b.tids == s.tids && s.faults <= b.faults.saturating_add(MAX_FAULTS);
        if !quiet {
            self.base = Some(s);
            return false;
        }
        if s.at_ns.saturating_sub(b.at_ns) < WINDOW_NS {
            return false;
        }
        if s.cpu_ns > b.cpu_ns || s.asleep {
            self.settled_ns = Some(s.at_ns);
            return true;
        }
        // waited for a CPU the whole window: judge the next one
        self.base = Some(s);
        false
    }

    pub fn settled(&self) -> bool {
        self.settled_ns.is_some()
    }

    /// What became of the task, `start_ns` being the start of the settle period.
    pub fn outcome(&self, start_ns: u64) -> Outcome {
        let last = self.last.clone().unwrap_or_default();
        Outcome {
            settled_ms: self
                .settled_ns
                .map(|t| t.saturating_sub(start_ns) / 1_000_000),
            exited: last.exited,
            execd: last.execd,
            cpu_ns: last.cpu_ns,
            init: self.init,
        }
    }
}

/// What became of one task in the settle period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// ms after the start of the period it settled; `None`: it had not when the period ended.
    pub settled_ms: Option<u64>,
    pub exited: bool,
    pub execd: bool,
    /// CPU time of its process group at the last look, ns.
    pub cpu_ns: u64,
    /// A DEmOS `init: yes` process ([`Settle::init`]).
    pub init: bool,
}

/// The line printed at start: `spawned tasks started before slot 0 in 310 ms: ng-a settled
/// after 290 ms (41.2 ms CPU), fill not settled within 1000 ms (12.0 ms CPU)`.
/// `timeout_ms` bounds the others, `init_timeout_ms` the `init: yes` processes.
pub fn describe(
    tasks: &[(String, Outcome)],
    period_ms: u64,
    timeout_ms: u64,
    init_timeout_ms: u64,
) -> String {
    let mut line = format!("spawned tasks started before slot 0 in {period_ms} ms:");
    for (i, (name, o)) in tasks.iter().enumerate() {
        let sep = if i == 0 { " " } else { ", " };
        let cpu = o.cpu_ns as f64 / 1e6;
        let what = match (o.settled_ms, o.exited, o.execd) {
            (Some(ms), true, _) => format!("exited after {ms} ms"),
            (Some(ms), false, _) if o.init => {
                format!("initialised after {ms} ms ({cpu:.1} ms CPU)")
            }
            (Some(ms), false, _) => format!("settled after {ms} ms ({cpu:.1} ms CPU)"),
            (None, _, false) => {
                format!("had not exec'd its command within {timeout_ms} ms")
            }
            (None, _, true) if o.init => format!(
                "did not signal the end of its initialisation within {init_timeout_ms} ms \
                 ({cpu:.1} ms CPU)"
            ),
            (None, _, true) => {
                format!("not settled within {timeout_ms} ms ({cpu:.1} ms CPU)")
            }
        };
        let _ = write!(line, "{sep}{name} {what}");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A look at `ms`: exec'd, threads `tids`, `faults`, `cpu_ms` of CPU, running.
    fn look(ms: u64, tids: &[u32], faults: u64, cpu_ms: u64) -> Sample {
        Sample {
            at_ns: ms * MS,
            exited: false,
            execd: true,
            tids: tids.to_vec(),
            faults,
            cpu_ns: cpu_ms * MS,
            asleep: false,
            stopped: false,
        }
    }

    /// Feeds looks 10 ms apart; returns the time (ms) of the first look that settled.
    fn settles_at(looks: impl IntoIterator<Item = Sample>) -> Option<u64> {
        let mut s = Settle::default();
        looks.into_iter().find_map(|l| {
            let at = l.at_ns / MS;
            s.observe(l).then_some(at)
        })
    }

    #[test]
    fn a_busy_loop_settles_one_quiet_window_after_its_exec() {
        // exec seen at 0 ms, then nothing changes but the CPU time
        let looks = (0..20).map(|i| look(i * 10, &[7], 100, i * 10));
        assert_eq!(settles_at(looks), Some(50));
    }

    #[test]
    fn nothing_settles_before_the_exec() {
        let looks = (0..20).map(|i| Sample {
            execd: i >= 10,
            ..look(i * 10, &[7], 100, i * 10)
        });
        assert_eq!(settles_at(looks), Some(150));
    }

    #[test]
    fn page_faults_above_the_limit_restart_the_window() {
        // 30 faults per look until 100 ms (loading), then 1 per look
        let faults = |i: u64| if i <= 10 { 30 * i } else { 300 + (i - 10) };
        let looks = (0..30).map(|i| look(i * 10, &[7], faults(i), i * 10));
        assert_eq!(settles_at(looks), Some(150));
        // at most MAX_FAULTS over the window is quiet
        let looks = (0..30).map(|i| look(i * 10, &[7], 100 + i * MAX_FAULTS / 5, i * 10));
        assert_eq!(settles_at(looks), Some(50));
        let looks = (0..30).map(|i| look(i * 10, &[7], 100 + i * (MAX_FAULTS / 5 + 1), i * 10));
        assert_eq!(settles_at(looks), None);
    }

    #[test]
    fn a_new_or_lost_thread_restarts_the_window() {
        // a helper process 8 exists from 20 to 60 ms, a worker 9 starts at 90 ms
        let tids = |ms: u64| -> Vec<u32> {
            let mut t = vec![7];
            if (20..60).contains(&ms) {
                t.push(8);
            }
            if ms >= 90 {
                t.push(9);
            }
            t
        };
        let looks = (0..30).map(|i| look(i * 10, &tids(i * 10), 100, i * 10));
        assert_eq!(settles_at(looks), Some(140));
        // a task that forks every 30 ms never settles
        let looks = (0..100).map(|i| look(i * 10, &[7, 100 + (i / 3) as u32], 100, i * 10));
        assert_eq!(settles_at(looks), None);
    }

    #[test]
    fn a_task_that_neither_ran_nor_slept_is_judged_again() {
        // runnable without a CPU from 0 to 70 ms, then runs
        let cpu = |ms: u64| ms.saturating_sub(70);
        let looks = (0..30).map(|i| look(i * 10, &[7], 100, cpu(i * 10)));
        // the window 0..50 had no CPU: judged again from 50; 50..100 ran
        assert_eq!(settles_at(looks), Some(100));
    }

    #[test]
    fn a_task_asleep_without_cpu_settles() {
        let looks = (0..30).map(|i| Sample {
            asleep: true,
            ..look(i * 10, &[7], 100, 3)
        });
        assert_eq!(settles_at(looks), Some(50));
    }

    #[test]
    fn an_exited_task_settles_at_once_and_a_settled_task_stays_settled() {
        let mut s = Settle::default();
        assert!(!s.observe(Sample {
            execd: false,
            ..look(0, &[7], 0, 0)
        }));
        assert!(s.observe(Sample {
            exited: true,
            ..look(10, &[], 0, 0)
        }));
        assert!(s.observe(look(20, &[1, 2, 3], 9999, 0)));
        let o = s.outcome(0);
        assert_eq!((o.settled_ms, o.exited), (Some(10), true));
    }

    #[test]
    fn stat_files_give_state_group_faults_and_ticks() {
        // pid 12, comm "a) 9 (b" (parentheses and spaces in a comm), state R, ppid 10, pgrp
        // 10, session 10, tty 0, tpgid -1, flags 4194560, minflt 120, cminflt 5, majflt 3,
        // cmajflt 1, utime 7, stime 2, cutime 4, cstime 1
        let text = "12 (a) 9 (b) R 10 10 10 0 -1 4194560 120 5 3 1 7 2 4 1 20 0 1 0 99\n";
        assert_eq!(
            parse_stat(text),
            Some(ProcStat {
                state: 'R',
                pgrp: 10,
                faults: 129,
                cpu_ticks: 9,
                child_cpu_ticks: 5
            })
        );
        assert_eq!(parse_stat("12 (sh) S 1 10 10 0 -1 0 5 0 0 0 1 1"), None);
        assert_eq!(parse_stat("12 (sh) S 1 10"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
        assert_eq!(parse_schedstat("1234567 890 12\n"), Some(1_234_567));
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn the_line_names_each_task_and_what_became_of_it() {
        let o = |settled_ms, exited, execd, cpu_ns| Outcome {
            settled_ms,
            exited,
            execd,
            cpu_ns,
            init: false,
        };
        let tasks = vec![
            ("ng-a".to_string(), o(Some(290), false, true, 41_200_000)),
            ("gone".to_string(), o(Some(30), true, true, 1_000_000)),
            ("fill".to_string(), o(None, false, true, 12_000_000)),
            ("stuck".to_string(), o(None, false, false, 0)),
        ];
        assert_eq!(
            describe(&tasks, 1010, 1000, 60000),
            "spawned tasks started before slot 0 in 1010 ms: ng-a settled after 290 ms \
             (41.2 ms CPU), gone exited after 30 ms, fill not settled within 1000 ms (12.0 ms \
             CPU), stuck had not exec'd its command within 1000 ms"
        );
    }

    #[test]
    fn an_init_process_settles_when_it_stops_itself_not_when_quiet() {
        let feed = |mut s: Settle, looks: Vec<Sample>| {
            looks.into_iter().find_map(|l| {
                let at = l.at_ns / MS;
                s.observe(l).then_some(at)
            })
        };
        // busy and quiet for 300 ms, stopped from 300 ms on
        let looks = |stop_from: u64| -> Vec<Sample> {
            (0..40)
                .map(|i| Sample {
                    stopped: i * 10 >= stop_from,
                    ..look(i * 10, &[7], 100, i * 10)
                })
                .collect()
        };
        assert_eq!(feed(Settle::default(), looks(300)), Some(50));
        assert_eq!(feed(Settle::init(), looks(300)), Some(300));
        assert_eq!(feed(Settle::init(), looks(1000)), None);
        // the spawn wrapper's own stop before the exec is not the signal
        let before_exec: Vec<Sample> = (0..40)
            .map(|i| Sample {
                execd: i >= 20,
                stopped: !(10..30).contains(&i),
                ..look(i * 10, &[7], 100, i * 10)
            })
            .collect();
        assert_eq!(feed(Settle::init(), before_exec), Some(300));
        // an exit ends its initialisation too
        let exits = vec![
            look(0, &[7], 1, 0),
            Sample {
                exited: true,
                ..look(10, &[], 0, 0)
            },
        ];
        assert_eq!(feed(Settle::init(), exits), Some(10));
        let mut s = Settle::init();
        s.observe(look(0, &[7], 1, 1));
        let o = s.outcome(0);
        assert!(o.init && o.settled_ms.is_none());
        assert!(describe(&[("a".into(), o)], 5, 2000, 60000)
            .contains("a did not signal the end of its initialisation within 60000 ms"));
    }
}

//! The plan's tasks at the run edge: their threads (selectors resolved, `cmd` tasks spawned
//! stopped, then started before the scheduler attaches: [`Tasks::settle`]), the spawned
//! children, and what becomes of both across a restart of the BPF scheduler. Spawned tasks are
//! never killed and spawned again by a restart: they keep running
//! (under the kernel's default scheduler until the new BPF scheduler attaches) and every
//! thread of their process group goes into the new scheduler's task map. Other tasks' selectors
//! are resolved again, joined by the threads found at the start that are still alive. Forks of
//! non-`cmd` threads made during the run joined their task in BPF only (the kernel forgets
//! those entries when it disables the scheduler), so after a restart they are outside the plan.

use anyhow::{bail, Context, Result};
use scx_tt::accounting::TaskState;
use scx_tt::clock::monotonic_ns;
use scx_tt::plan::{Plan, Selector};
use scx_tt::resolve::{ProcFs, ResolveError};
use scx_tt::sched::settle::{self, Settle, POLL_NS};
use scx_tt::sched::spawn::{process_stats, Spawned};
use std::time::Duration;

/// How long [`Tasks::settle`] waits for the spawned process groups to stop (a process in an
/// uninterruptible sleep stops when it wakes; it cannot fork before).
const STOP_TIMEOUT_NS: u64 = 200_000_000;

pub struct Tasks {
    /// Per plan task: the threads found at the start (the summary's `tids`).
    found: Vec<Vec<u32>>,
    /// (plan task index, child) of the `cmd` tasks, killed (with their process groups) on
    /// drop.
    children: Vec<(usize, Spawned)>,
}

impl Tasks {
    /// Resolves every task's threads and spawns `cmd` tasks stopped. Missing pids/tids and a
    /// `qemu` name that several QEMU processes have are errors; a selector that matches nothing is a warning (the task's slots go to be work).
    pub fn resolve(plan: &Plan, procfs: &ProcFs) -> Result<Self> {
        let mut tasks = Tasks {
            found: Vec::with_capacity(plan.tasks.len()),
            children: Vec::new(),
        };
        for (i, task) in plan.tasks.iter().enumerate() {
            let found = match &task.selector {
                Selector::Cmd(argv) => {
                    let child = Spawned::stopped(argv)
                        .with_context(|| format!("spawning task {} ({argv:?})", task.name))?;
                    let pid = child.pid;
                    tasks.children.push((i, child));
                    vec![pid]
                }
                sel => match procfs.resolve(sel) {
                    Ok(t) => t,
                    Err(
                        e @ (ResolveError::NoSuchPid(_)
                        | ResolveError::NoSuchTid(_)
                        | ResolveError::AmbiguousQemuName { .. }),
                    ) => {
                        bail!("task {}: {e}", task.name)
                    }
                    Err(e) => {
                        eprintln!(
                            "scx_tt: warning: task {}: {e}; its slots go to be work",
                            task.name
                        );
                        Vec::new()
                    }
                },
            };
            if found.is_empty() {
                eprintln!(
                    "scx_tt: warning: task {}: no threads found; its slots go to be work",
                    task.name
                );
            }
            tasks.found.push(found);
        }
        Ok(tasks)
    }

    /// The settle period (`sched::settle`): lets the spawned tasks run under the kernel's own
    /// scheduler until each has settled, at most `timeout_ms` or until `stop()` says so, then
    /// stops their process groups again and takes every thread of each group as the task's
    /// threads found at the start. Returns the line that says what became of them (`None`
    /// without spawned tasks or with `timeout_ms` 0: they then exec in their slots from slot
    /// 0, as they did before the settle period existed).
    ///
    /// The plan tasks in `init` (DEmOS `init: yes` processes, docs/demos.md "Initialisation")
    /// are settled by their own signal only, and the period waits for them up to
    /// `init_timeout_ms` (also with `timeout_ms` 0); one that has not signalled by then is an
    /// error (the run does not start its windows: the children are killed on drop).
    pub fn settle(
        &mut self,
        plan: &Plan,
        procfs: &ProcFs,
        timeout_ms: u64,
        init: &[usize],
        init_timeout_ms: u64,
        stop: impl Fn() -> bool,
    ) -> Result<Option<String>> {
        let has_init = self.children.iter().any(|(i, _)| init.contains(i));
        if self.children.is_empty() || (timeout_ms == 0 && !has_init) {
            return Ok(None);
        }
        let start = monotonic_ns();
        let after = |ms: u64| start.saturating_add(ms.saturating_mul(1_000_000));
        let (others_end, init_end) = (after(timeout_ms), after(init_timeout_ms));
        let mut states: Vec<Settle> = self
            .children
            .iter()
            .map(|(i, _)| {
                if init.contains(i) {
                    Settle::init()
                } else {
                    Settle::default()
                }
            })
            .collect();
        for (_, c) in &mut self.children {
            c.resume()
                .with_context(|| format!("starting spawned pid {}", c.pid))?;
        }
        loop {
            let now = monotonic_ns();
            let mut all = true;
            for ((_, c), st) in self.children.iter_mut().zip(&mut states) {
                // each kind until its own bound: --settle-ms, --init-timeout-ms
                let waited = now < if st.is_init() { init_end } else { others_end };
                if !st.settled() && waited {
                    all &= st.observe(c.sample(procfs, now));
                }
            }
            if all || stop() {
                break;
            }
            std::thread::sleep(Duration::from_nanos(POLL_NS));
        }
        let period_ms = (monotonic_ns() - start) / 1_000_000;
        self.stop_groups(procfs)?;
        let outcomes = self
            .children
            .iter()
            .zip(&states)
            .map(|((i, _), st)| (plan.tasks[*i].name.clone(), st.outcome(start)))
            .collect::<Vec<_>>();
        let line = settle::describe(&outcomes, period_ms, timeout_ms, init_timeout_ms);
        let missing: Vec<&str> = outcomes
            .iter()
            .filter(|(_, o)| o.init && o.settled_ms.is_none())
            .map(|(n, _)| n.as_str())
            .collect();
        if !missing.is_empty() && !stop() {
            bail!(
                "{line}; next step: an `init: yes` process ends its initialisation by stopping \
                 itself (`kill -STOP $$`, raise(SIGSTOP)), as DEmOS's \
                 demos_initialization_completed() suspends it: make {} do so, or give a longer \
                 --init-timeout-ms (now {init_timeout_ms})",
                missing.join(", ")
            );
        }
        Ok(Some(line))
    }

    /// Stops every spawned process group, waits (bounded) until they have stopped, and takes
    /// their threads as the tasks' threads found at the start.
    fn stop_groups(&mut self, procfs: &ProcFs) -> Result<()> {
        for (_, c) in &mut self.children {
            c.stop_group()
                .with_context(|| format!("stopping spawned pid {}", c.pid))?;
        }
        let end = monotonic_ns() + STOP_TIMEOUT_NS;
        loop {
            let procs = process_stats(procfs);
            if self.children.iter().all(|(_, c)| c.group_stopped(&procs)) || monotonic_ns() >= end {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        for (i, c) in &self.children {
            let mut tids = c.group_threads(procfs);
            tids.push(c.pid);
            tids.sort_unstable();
            tids.dedup();
            self.found[*i] = tids;
        }
        Ok(())
    }

    /// Per plan task, the threads found at the start (then the tasks admitted at run time).
    pub fn found(&self) -> &[Vec<u32>] {
        &self.found
    }

    /// A task admitted at run time (`scx_tt ctl admit`) with its threads: the next index.
    pub fn add_admitted(&mut self, tids: Vec<u32>) -> usize {
        self.found.push(tids);
        self.found.len() - 1
    }

    /// (tid, task index) of the threads found at the start: the first scheduler's task map.
    pub fn threads_at_start(&self) -> Vec<(u32, usize)> {
        flatten(&self.found)
    }

    /// (tid, task index) as they are now: the task map of a scheduler loaded by a restart.
    pub fn threads_now(&self, plan: &Plan, procfs: &ProcFs) -> Vec<(u32, usize)> {
        let now: Vec<Vec<u32>> = plan
            .tasks
            .iter()
            .enumerate()
            .map(|(i, task)| {
                let mut tids = match self.child(i) {
                    Some(child) => child.group_threads(procfs),
                    None => procfs.resolve(&task.selector).unwrap_or_default(),
                };
                tids.extend(self.found[i].iter().filter(|&&t| procfs.tid_alive(t)));
                tids.sort_unstable();
                tids.dedup();
                tids
            })
            .collect();
        flatten(&now)
    }

    fn child(&self, task: usize) -> Option<&Spawned> {
        self.children
            .iter()
            .find(|(i, _)| *i == task)
            .map(|(_, c)| c)
    }

    /// Lets the spawned tasks run (after the first attach): their process groups continue.
    pub fn resume(&mut self) -> Result<()> {
        for (_, c) in &mut self.children {
            c.resume()
                .with_context(|| format!("resuming spawned pid {}", c.pid))?;
        }
        Ok(())
    }

    /// Per plan task: running while a thread found at the start (a spawned child) is alive.
    pub fn states(&mut self, procfs: &ProcFs) -> Vec<TaskState> {
        (0..self.found.len())
            .map(|i| {
                if self.found[i].is_empty() {
                    return TaskState::NotFound;
                }
                let spawned = self.children.iter_mut().find(|(task, _)| *task == i);
                let alive = match spawned {
                    Some((_, c)) => !c.exited(),
                    None => self.found[i].iter().any(|&tid| procfs.tid_alive(tid)),
                };
                if alive {
                    TaskState::Running
                } else {
                    TaskState::Exited
                }
            })
            .collect()
    }

    /// Kills the spawned tasks with their process groups.
    pub fn kill_all(&mut self) {
        for (_, c) in &mut self.children {
            if let Err(e) = c.kill() {
                eprintln!("scx_tt: warning: killing spawned pid {}: {e}", c.pid);
            }
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn flatten(tids: &[Vec<u32>]) -> Vec<(u32, usize)> {
    tids.iter()
        .enumerate()
        .flat_map(|(i, t)| t.iter().map(move |&tid| (tid, i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A QEMU name that several processes have stops the run (an error, exit 1 in main), while
    /// a name no process has is only "not found" (a warning).
    #[test]
    fn an_ambiguous_qemu_name_is_an_error_and_a_missing_one_a_warning() {
        let root = std::env::temp_dir().join(format!("scx_tt-tasks-qemu-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for pid in [40, 50] {
            fs::create_dir_all(root.join(format!("{pid}/task/{}", pid + 1))).expect("mkdir");
            fs::write(
                root.join(format!("{pid}/cmdline")),
                "/usr/bin/qemu-system-x86_64\0-name\0vm1\0",
            )
            .expect("write");
            fs::write(
                root.join(format!("{pid}/task/{}/comm", pid + 1)),
                "CPU 0/TCG\n",
            )
            .expect("write");
        }
        let procfs = ProcFs {
            proc_root: root.clone(),
            cgroup_root: root.clone(),
        };
        let plan = |name: &str| {
            scx_tt::plan::from_str(&format!(
                r#"{{"slot_us": 10000, "frame_slots": 10, "cpus": {{"managed": [1], "housekeeping": [0]}},
                    "tasks": [{{"name": "guest", "qemu": {{"name": "{name}"}}, "class": "be"}}]}}"#
            ))
            .expect("plan")
        };
        let err = Tasks::resolve(&plan("vm1"), &procfs)
            .err()
            .expect("two QEMU processes named vm1");
        let msg = format!("{err:#}");
        assert!(
            msg.starts_with("task guest: qemu name \"vm1\"") && msg.contains("pids 40, 50"),
            "{msg}"
        );
        let missing = Tasks::resolve(&plan("vm2"), &procfs).expect("a missing name is no error");
        assert_eq!(missing.found(), &[Vec::<u32>::new()]);
        let _ = fs::remove_dir_all(&root);
    }
}

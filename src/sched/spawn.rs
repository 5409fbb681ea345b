//! `cmd` tasks: spawned stopped before they exec the workload, started under the kernel's own
//! scheduler for a settle period before the scheduler attaches (the rule: `sched::settle`;
//! the loop: `cli/run/tasks.rs`), then stopped again as a whole process group, so that every
//! thread of the group is in the BPF task map when the scheduler attaches (a process group
//! stop leaves no fork half done: the kernel restarts a fork that a group signal interrupts);
//! continued after attach, and killed with their process group at exit. Forks made after the
//! attach inherit the task in BPF. A restart of the BPF scheduler finds the task's threads
//! again by its process group ([`Spawned::group_threads`]). If scx_tt itself dies without
//! cleaning up (SIGKILL), the kernel kills the spawned process too (its parent-death signal);
//! processes the workload forked itself are not covered by that (they keep running, as the
//! children of any killed parent do). The spawned process is its descendants' child subreaper,
//! so a descendant that left the process group (`setsid`, a daemon's double fork) stays below it:
//! it is collected with the group and killed with it at exit.

use crate::resolve::ProcFs;
use crate::sched::settle::{parse_schedstat, parse_stat, ProcStat, Sample};
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

pub struct Spawned {
    pub child: Child,
    pub pid: u32,
    exited: bool,
    /// `/proc/PID/cmdline` of the stopped wrapper shell: a different one means the exec of
    /// the workload happened.
    wrapper: Vec<u8>,
}

impl Spawned {
    /// Spawn `argv` in its own process group, stopped before it execs the workload: a shell
    /// stops itself, then `exec`s argv in the same process (same pid). (A SIGSTOP in a
    /// pre_exec hook would deadlock: std waits for the exec to report success.)
    pub fn stopped(argv: &[String]) -> io::Result<Spawned> {
        if argv.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty cmd"));
        }
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", r#"kill -STOP $$ && exec "$@""#, "scx_tt-spawn"])
            .args(argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0);
        let parent = std::process::id();
        // SAFETY: prctl and getppid are async-signal-safe; the closure touches no allocator.
        unsafe {
            cmd.pre_exec(move || {
                // SIGKILL when scx_tt dies (the thread that forked: the main thread, which lives
                // as long as the process); survives the exec of the workload.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // orphaned descendants (a daemon's double fork, busybox `timeout`'s watchdog)
                // are re-parented to the task's process instead of init, so they stay part of
                // the task (group_threads); kept across the exec of the workload
                if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // scx_tt died before the prctl: nobody would ever resume or kill us
                if libc::getppid() as u32 != parent {
                    return Err(io::Error::other("scx_tt exited while spawning"));
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let pid = child.id();
        let mut status = 0;
        // SAFETY: waiting for a stop of our own child; WUNTRACED does not reap it.
        if unsafe { libc::waitpid(pid as i32, &mut status, libc::WUNTRACED) } < 0 {
            return Err(io::Error::last_os_error());
        }
        if !libc::WIFSTOPPED(status) {
            return Err(io::Error::other(format!(
                "{} did not stop before exec (status {status:#x})",
                argv[0]
            )));
        }
        let wrapper = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        Ok(Spawned {
            child,
            pid,
            exited: false,
            wrapper,
        })
    }

    /// Lets its process group run (the first time: exec the workload). Nothing to do when it
    /// has exited.
    pub fn resume(&mut self) -> io::Result<()> {
        self.signal_group(libc::SIGCONT)
    }

    /// Stops its whole process group (SIGSTOP); [`Spawned::group_stopped`] says when every
    /// process of it has stopped.
    pub fn stop_group(&mut self) -> io::Result<()> {
        self.signal_group(libc::SIGSTOP)
    }

    fn signal_group(&mut self, sig: i32) -> io::Result<()> {
        if self.exited() {
            return Ok(());
        }
        // SAFETY: the group was created by process_group(0) with our (unreaped) child as
        // leader, so its id is not reused.
        if unsafe { libc::kill(-(self.pid as i32), sig) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ESRCH) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Whether every process of its group (in `procs`, [`process_stats`]) has stopped or
    /// exited.
    pub fn group_stopped(&self, procs: &[(u32, ProcStat)]) -> bool {
        group_stopped(procs, self.pid)
    }

    /// A look at its process group for the settle period: the spawned process and its
    /// descendants in its group (found through `/proc/PID/task/TID/children`; every process
    /// of the group when the kernel has no such files).
    pub fn sample(&mut self, procfs: &ProcFs, at_ns: u64) -> Sample {
        if self.exited() {
            return Sample {
                at_ns,
                exited: true,
                ..Sample::default()
            };
        }
        let execd = std::fs::read(procfs.proc_root.join(format!("{}/cmdline", self.pid)))
            .is_ok_and(|c| c != self.wrapper);
        let mut s = Sample {
            at_ns,
            execd,
            asleep: true,
            ..Sample::default()
        };
        let procs = descendants_in_group(procfs, self.pid, self.pid).unwrap_or_else(|| {
            let mut all = process_stats(procfs);
            all.retain(|(_, st)| st.pgrp == self.pid);
            all
        });
        for (pid, st) in &procs {
            s.faults = s.faults.saturating_add(st.faults);
            let children = st.child_cpu_ticks.saturating_mul(tick_ns());
            s.cpu_ns = s.cpu_ns.saturating_add(children);
            for tid in procfs.threads(*pid).unwrap_or_default() {
                let task = procfs.proc_root.join(format!("{pid}/task/{tid}"));
                let stat = std::fs::read_to_string(task.join("stat"))
                    .ok()
                    .and_then(|t| parse_stat(&t));
                let Some(stat) = stat else {
                    continue; // gone meanwhile
                };
                let cpu = std::fs::read_to_string(task.join("schedstat"))
                    .ok()
                    .and_then(|t| parse_schedstat(&t))
                    .unwrap_or_else(|| stat.cpu_ticks.saturating_mul(tick_ns()));
                s.tids.push(tid);
                s.cpu_ns = s.cpu_ns.saturating_add(cpu);
                s.asleep &= stat.state != 'R';
                s.stopped |= stat.state == 'T';
            }
        }
        s.tids.sort_unstable();
        s
    }

    /// Whether it has exited (reaps it).
    pub fn exited(&mut self) -> bool {
        if !self.exited {
            self.exited = matches!(self.child.try_wait(), Ok(Some(_)));
        }
        self.exited
    }

    /// Every thread of its process group: the task and the processes it forked (unless they
    /// left the group), as `procfs` lists them now.
    pub fn group_threads(&self, procfs: &ProcFs) -> Vec<u32> {
        group_threads(procfs, self.pid)
    }

    /// Kill its whole process group and reap it.
    pub fn kill(&mut self) -> io::Result<()> {
        if self.exited() {
            return Ok(());
        }
        // descendants that left the process group die with it
        let procfs = ProcFs::default();
        for pid in task_processes(&procfs, self.pid) {
            if pid != self.pid && process_group(&procfs, pid) != Some(self.pid) {
                // SAFETY: plain kill of a process below our child.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
        // SAFETY: the group was created by process_group(0) with our child as leader.
        unsafe { libc::kill(-(self.pid as i32), libc::SIGKILL) };
        self.child.wait()?;
        self.exited = true;
        Ok(())
    }
}

/// The threads of every process in process group `pgid` (the spawned task's leader) and of
/// every descendant of the leader that left the group (`setsid`, a daemon's double fork: the
/// leader is their child subreaper, so they stay below it even when their parent exits).
fn group_threads(procfs: &ProcFs, pgid: u32) -> Vec<u32> {
    task_processes(procfs, pgid)
        .into_iter()
        .flat_map(|pid| procfs.threads(pid).unwrap_or_default())
        .collect()
}

/// The processes of the spawned task led by `leader`: its process group and its descendants.
fn task_processes(procfs: &ProcFs, leader: u32) -> Vec<u32> {
    let pids = procfs.pids();
    let parents: std::collections::HashMap<u32, u32> = pids
        .iter()
        .filter_map(|&p| Some((p, parent(procfs, p)?)))
        .collect();
    let below = |mut p: u32| {
        // bounded: a pid reused meanwhile cannot make the walk loop
        for _ in 0..64 {
            if p == leader {
                return true;
            }
            match parents.get(&p) {
                Some(&q) if q != p && q > 1 => p = q,
                _ => return false,
            }
        }
        false
    };
    pids.into_iter()
        .filter(|&pid| process_group(procfs, pid) == Some(leader) || below(pid))
        .collect()
}

/// The parent pid of `pid` (`/proc/<pid>/stat`, after the state).
fn parent(procfs: &ProcFs, pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(procfs.proc_root.join(format!("{pid}/stat"))).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The process group of `pid` (`/proc/<pid>/stat`: after the comm's closing parenthesis come
/// the state, the parent pid and the process group).
fn process_group(procfs: &ProcFs, pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(procfs.proc_root.join(format!("{pid}/stat"))).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// `root` and its descendants that are in process group `pgid`, with their `stat`, walking
/// `/proc/PID/task/TID/children` (a descendant that left the group is not followed further);
/// `None` when the kernel has no `children` files (CONFIG_PROC_CHILDREN).
fn descendants_in_group(procfs: &ProcFs, root: u32, pgid: u32) -> Option<Vec<(u32, ProcStat)>> {
    let read = |path: String| std::fs::read_to_string(procfs.proc_root.join(path));
    if read(format!("{root}/task/{root}/children")).is_err() && procfs.tid_alive(root) {
        return None;
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        let Some(st) = read(format!("{pid}/stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        else {
            continue; // gone meanwhile
        };
        if st.pgrp != pgid || found.iter().any(|(p, _)| *p == pid) {
            continue;
        }
        found.push((pid, st));
        for tid in procfs.threads(pid).unwrap_or_default() {
            let children = read(format!("{pid}/task/{tid}/children")).unwrap_or_default();
            queue.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    found.sort_unstable_by_key(|(p, _)| *p);
    Some(found)
}

/// `/proc/PID/stat` of every process now.
pub fn process_stats(procfs: &ProcFs) -> Vec<(u32, ProcStat)> {
    procfs
        .pids()
        .into_iter()
        .filter_map(|pid| {
            let text = std::fs::read_to_string(procfs.proc_root.join(format!("{pid}/stat")));
            Some((pid, parse_stat(&text.ok()?)?))
        })
        .collect()
}

/// Whether every process of group `pgid` in `procs` has stopped or exited.
fn group_stopped(procs: &[(u32, ProcStat)], pgid: u32) -> bool {
    procs
        .iter()
        .filter(|(_, st)| st.pgrp == pgid)
        .all(|(_, st)| matches!(st.state, 'T' | 't' | 'Z' | 'X'))
}

/// One clock tick of `stat`'s utime/stime, ns.
fn tick_ns() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / u64::try_from(hz).unwrap_or(100).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn descendants_that_left_the_group_stay_in_the_task() {
        let root = std::env::temp_dir().join(format!("scx_tt_spawn_desc_{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        // 10 leads group 10; 14 left it (setsid) but is 10's child; 15 is 14's child; 16 is
        // someone else's (parent 1) in its own group; 17's parent is 16
        for (pid, stat) in [
            (10, "10 (sh) S 1 10 10 0"),
            (14, "14 (w) S 10 14 14 0"),
            (15, "15 (w) S 14 14 14 0"),
            (16, "16 (x) S 1 16 16 0"),
            (17, "17 (y) S 16 16 16 0"),
        ] {
            fs::create_dir_all(root.join(format!("{pid}/task/{pid}"))).expect("mkdir");
            fs::write(
                root.join(format!("{pid}/stat")),
                format!("{stat} -1 0 5 0 0 0 1 1 0 0"),
            )
            .expect("write");
        }
        let procfs = ProcFs {
            proc_root: root.clone(),
            cgroup_root: root.clone(),
        };
        assert_eq!(parent(&procfs, 15), Some(14));
        let mut t = group_threads(&procfs, 10);
        t.sort_unstable();
        assert_eq!(t, vec![10, 14, 15]);
        let mut t = group_threads(&procfs, 16);
        t.sort_unstable();
        assert_eq!(t, vec![16, 17]);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn the_process_group_collects_the_threads_of_its_members_only() {
        let root = std::env::temp_dir().join(format!("scx_tt-spawn-pg-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        // pid 10 leads group 10 (threads 10, 11); pid 12 (comm with ") 9 ") is in group 10;
        // pid 13 is in group 13.
        for (pid, stat, tids) in [
            (10, "10 (sh) S 1 10 10 0", &[10, 11][..]),
            (12, "12 (a) 9 (b) R 10 10 10 0", &[12][..]),
            (13, "13 (sh) S 1 13 13 0", &[13][..]),
        ] {
            for tid in tids {
                fs::create_dir_all(root.join(format!("{pid}/task/{tid}"))).expect("mkdir");
            }
            // then tpgid, flags, minflt, cminflt, majflt, cmajflt, utime, stime, cutime, cstime
            fs::write(
                root.join(format!("{pid}/stat")),
                format!("{stat} -1 0 5 0 0 0 1 1 0 0"),
            )
            .expect("write");
        }
        let procfs = ProcFs {
            proc_root: root.clone(),
            cgroup_root: root.clone(),
        };
        assert_eq!(process_group(&procfs, 12), Some(10));
        assert_eq!(group_threads(&procfs, 10), vec![10, 11, 12]);
        assert_eq!(group_threads(&procfs, 13), vec![13]);
        let procs = process_stats(&procfs);
        assert_eq!(
            procs
                .iter()
                .map(|(p, st)| (*p, st.pgrp))
                .collect::<Vec<_>>(),
            vec![(10, 10), (12, 10), (13, 13)]
        );
        // 10 sleeps (S), 12 runs (R): group 10 has not stopped; 13 sleeps too
        assert!(!group_stopped(&procs, 10) && !group_stopped(&procs, 13));
        fs::write(
            root.join("10/stat"),
            "10 (sh) T 1 10 10 0 -1 0 5 0 0 0 1 1 0 0",
        )
        .expect("write");
        fs::write(
            root.join("12/stat"),
            "12 (a) 9 (b) Z 10 10 10 0 -1 0 5 0 0 0 1 1 0 0",
        )
        .expect("write");
        assert!(group_stopped(&process_stats(&procfs), 10));
        // without children files: None; with them, 10's thread 11 forked 12, which forked 13
        // (13 left the group)
        assert_eq!(descendants_in_group(&procfs, 10, 10), None);
        fs::write(root.join("10/task/10/children"), "").expect("write");
        fs::write(root.join("10/task/11/children"), "12 ").expect("write");
        fs::write(root.join("12/task/12/children"), "13").expect("write");
        let d = descendants_in_group(&procfs, 10, 10).expect("children files");
        assert_eq!(d.iter().map(|(p, _)| *p).collect::<Vec<_>>(), vec![10, 12]);
        let _ = fs::remove_dir_all(&root);
    }
}

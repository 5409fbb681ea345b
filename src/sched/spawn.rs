//! `cmd` tasks: spawned stopped (so their tid is in the BPF map before they run a single
//! instruction of the workload, and their forks inherit the task), resumed after attach, and
//! killed with their process group at exit. A restart of the BPF scheduler finds the task's
//! threads again by its process group ([`Spawned::group_threads`]). If scx_tt itself dies
//! without cleaning up (SIGKILL), the kernel kills the spawned process too (its parent-death
//! signal); processes the workload forked itself are not covered by that (they keep running,
//! as the children of any killed parent do).

use crate::resolve::ProcFs;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

pub struct Spawned {
    pub child: Child,
    pub pid: u32,
    exited: bool,
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
        Ok(Spawned {
            child,
            pid,
            exited: false,
        })
    }

    /// Let it run (exec the workload).
    pub fn resume(&self) -> io::Result<()> {
        // SAFETY: signalling our own child.
        if unsafe { libc::kill(self.pid as i32, libc::SIGCONT) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
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
        // SAFETY: the group was created by process_group(0) with our child as leader.
        unsafe { libc::kill(-(self.pid as i32), libc::SIGKILL) };
        self.child.wait()?;
        self.exited = true;
        Ok(())
    }
}

/// The threads of every process in process group `pgid`.
fn group_threads(procfs: &ProcFs, pgid: u32) -> Vec<u32> {
    procfs
        .pids()
        .into_iter()
        .filter(|&pid| process_group(procfs, pid) == Some(pgid))
        .flat_map(|pid| procfs.threads(pid).unwrap_or_default())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
            fs::write(root.join(format!("{pid}/stat")), stat).expect("write");
        }
        let procfs = ProcFs {
            proc_root: root.clone(),
            cgroup_root: root.clone(),
        };
        assert_eq!(process_group(&procfs, 12), Some(10));
        assert_eq!(group_threads(&procfs, 10), vec![10, 11, 12]);
        assert_eq!(group_threads(&procfs, 13), vec![13]);
        let _ = fs::remove_dir_all(&root);
    }
}

//! `cmd` tasks: spawned stopped (so their tid is in the BPF map before they run a single
//! instruction of the workload, and their forks inherit the task), resumed after attach, and
//! killed with their process group at exit.

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

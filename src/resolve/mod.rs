//! Selector → thread ids.
//!
//! The plan names its tasks by selector (`pid`, `tids`, `comm`, `cgroup`, `qemu`, `cmd`); the
//! scheduler needs the kernel thread ids. The parsers here are pure functions of /proc and
//! cgroupfs text; [`ProcFs`] reads that text from a redirectable root so tests run on a fake
//! tree without root. `cmd` selectors are spawned by the loader (src/sched/spawn.rs), not here.

mod parse;

pub use parse::{is_qemu_vcpu_comm, parse_cpu_list, parse_tid_list, qemu_name_from_cmdline};

use crate::plan::{QemuSelector, Selector};
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ResolveError {
    #[error("pid {0} does not exist")]
    NoSuchPid(u32),
    #[error("thread id {0} does not exist")]
    NoSuchTid(u32),
    #[error("cgroup {path} has no cgroup.threads: {source}")]
    Cgroup {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`cmd` selectors are spawned by the loader, not resolved")]
    Spawned,
    #[error(
        "qemu name {name:?}: {} QEMU processes have this -name (pids {}); \
         select one with {{\"pid\": N}}",
        pids.len(),
        pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    )]
    AmbiguousQemuName { name: String, pids: Vec<u32> },
}

/// Where /proc and the cgroup v2 hierarchy are read from.
#[derive(Clone, Debug)]
pub struct ProcFs {
    pub proc_root: PathBuf,
    pub cgroup_root: PathBuf,
}

impl Default for ProcFs {
    fn default() -> Self {
        ProcFs {
            proc_root: "/proc".into(),
            cgroup_root: "/sys/fs/cgroup".into(),
        }
    }
}

fn numeric_entries(dir: &Path) -> Vec<u32> {
    let mut ids: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

impl ProcFs {
    /// All processes (numeric entries of the proc root).
    pub fn pids(&self) -> Vec<u32> {
        numeric_entries(&self.proc_root)
    }

    /// Thread ids of process `pid`.
    pub fn threads(&self, pid: u32) -> Result<Vec<u32>, ResolveError> {
        let dir = self.proc_root.join(pid.to_string()).join("task");
        if !dir.is_dir() {
            return Err(ResolveError::NoSuchPid(pid));
        }
        Ok(numeric_entries(&dir))
    }

    /// Whether thread `tid` exists (any process; /proc/<tid> resolves threads too).
    pub fn tid_alive(&self, tid: u32) -> bool {
        let stat = self.proc_root.join(tid.to_string()).join("stat");
        match std::fs::read_to_string(stat) {
            // a zombie has state Z after the comm (which may contain spaces and parens)
            Ok(s) => s
                .rsplit_once(')')
                .is_none_or(|(_, rest)| !rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    /// The comm of thread `tid` of process `pid`.
    pub fn comm(&self, pid: u32, tid: u32) -> Option<String> {
        let p = self.proc_root.join(format!("{pid}/task/{tid}/comm"));
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim_end_matches('\n').to_string())
    }

    /// Threads whose comm equals `name`, over all processes.
    pub fn threads_by_comm(&self, name: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for pid in self.pids() {
            for tid in self.threads(pid).unwrap_or_default() {
                if self.comm(pid, tid).as_deref() == Some(name) {
                    out.push(tid);
                }
            }
        }
        out
    }

    /// The vCPU threads of QEMU process `pid`: "CPU n/KVM", or "CPU n/TCG" without KVM.
    pub fn qemu_vcpus(&self, pid: u32) -> Result<Vec<u32>, ResolveError> {
        Ok(self
            .threads(pid)?
            .into_iter()
            .filter(|&tid| self.comm(pid, tid).is_some_and(|c| is_qemu_vcpu_comm(&c)))
            .collect())
    }

    /// The QEMU process started with `-name NAME` (or `-name guest=NAME,...`); `None` when
    /// there is none. Several such processes are an error listing their pids: which one the
    /// plan means is not for the scheduler to guess.
    pub fn qemu_by_name(&self, name: &str) -> Result<Option<u32>, ResolveError> {
        let pids: Vec<u32> = self
            .pids()
            .into_iter()
            .filter(|pid| {
                std::fs::read(self.proc_root.join(format!("{pid}/cmdline")))
                    .is_ok_and(|c| qemu_name_from_cmdline(&c).as_deref() == Some(name))
            })
            .collect();
        match pids.as_slice() {
            [] => Ok(None),
            [pid] => Ok(Some(*pid)),
            _ => Err(ResolveError::AmbiguousQemuName {
                name: name.to_string(),
                pids,
            }),
        }
    }

    /// Thread ids listed in `cgroup.threads` of the cgroup v2 `path` (relative to the root).
    pub fn cgroup_threads(&self, path: &str) -> Result<Vec<u32>, ResolveError> {
        let file = self
            .cgroup_root
            .join(path.trim_start_matches('/'))
            .join("cgroup.threads");
        let text = std::fs::read_to_string(&file).map_err(|source| ResolveError::Cgroup {
            path: file.clone(),
            source,
        })?;
        Ok(parse_tid_list(&text))
    }

    /// Resolve a selector. `pid`/`tids` that do not exist are errors, and so is a `qemu` name
    /// that several QEMU processes have; `comm`, `cgroup` and `qemu` may legitimately match
    /// nothing yet (an empty list: the task is "not found").
    pub fn resolve(&self, sel: &Selector) -> Result<Vec<u32>, ResolveError> {
        match sel {
            Selector::Pid(pid) => self.threads(*pid),
            Selector::Tids(tids) => {
                for &t in tids {
                    if !self.proc_root.join(t.to_string()).exists() {
                        return Err(ResolveError::NoSuchTid(t));
                    }
                }
                Ok(tids.clone())
            }
            Selector::Comm(name) => Ok(self.threads_by_comm(name)),
            Selector::Cgroup(path) => self.cgroup_threads(path),
            Selector::Qemu(QemuSelector::Pid(pid)) => self.qemu_vcpus(*pid),
            Selector::Qemu(QemuSelector::Name(name)) => match self.qemu_by_name(name)? {
                Some(pid) => self.qemu_vcpus(pid),
                None => Ok(Vec::new()),
            },
            Selector::Cmd(_) => Err(ResolveError::Spawned),
        }
    }
}

//! The processes a simulated node pretends to run (`scx_tt --simulated-node`): QEMU processes
//! of N vCPU threads each, which the node API starts for a pod it admits without `select` and
//! stops when the pod is removed. They are kept in `RUN_DIR/simulated-processes.json`, written
//! atomically at each change, so that they outlive a restart of scx_tt as real VMs would, and
//! a `--resume` finds their threads again.

use crate::plan::{QemuSelector, Selector};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The first simulated process id (above any real pid_max default, so no simulated thread is
/// mistaken for a real one in the logs).
const FIRST_PID: u32 = 10_000_000;
/// The largest file read back.
const MAX_FILE_BYTES: u64 = 16 << 20;
/// The most processes held (a pod per name; far above what a node's CPUs can admit).
pub const MAX_PROCESSES: usize = 100_000;

/// One simulated QEMU process: its pid and its vCPU threads (`CPU k/KVM`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    pub pid: u32,
    pub vcpus: Vec<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    next_pid: u32,
    processes: BTreeMap<String, Process>,
}

/// The simulated processes of a node, shared by the node API and the simulated engine.
pub struct Processes {
    file: PathBuf,
    table: Mutex<Table>,
}

impl Processes {
    /// The processes kept under `run_dir` (none when there is no file yet).
    pub fn open(run_dir: &Path) -> Result<Self, String> {
        let file = run_dir.join("simulated-processes.json");
        let table = match std::fs::metadata(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Table {
                next_pid: FIRST_PID,
                ..Table::default()
            },
            Err(e) => return Err(format!("{}: {e}", file.display())),
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                return Err(format!(
                    "{}: {} bytes, more than the {MAX_FILE_BYTES} this file may hold",
                    file.display(),
                    m.len()
                ))
            }
            Ok(_) => {
                let text = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
                serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", file.display()))?
            }
        };
        Ok(Processes {
            file,
            table: Mutex::new(table),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn store(&self, t: &Table) -> Result<(), String> {
        let text = serde_json::to_vec_pretty(t).map_err(|e| e.to_string())?;
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        crate::energy::journal_file::store_atomic(&self.file, &text)
            .map_err(|e| format!("{}: {e}", self.file.display()))
    }

    /// Starts a QEMU process named `name` with `vcpus` vCPU threads; `Err` when the name runs
    /// already, the table is full or the file cannot be written (then nothing changed).
    pub fn start(&self, name: &str, vcpus: u32) -> Result<Process, String> {
        let mut t = self.lock();
        if t.processes.contains_key(name) {
            return Err(format!("a simulated process named {name:?} runs already"));
        }
        if t.processes.len() >= MAX_PROCESSES {
            return Err(format!("{MAX_PROCESSES} simulated processes run already"));
        }
        let pid = t.next_pid;
        let next = pid
            .checked_add(vcpus)
            .and_then(|p| p.checked_add(1))
            .ok_or("the simulated pids are used up")?;
        let p = Process {
            pid,
            vcpus: (1..=vcpus).map(|k| pid + k).collect(),
        };
        let mut new = t.clone();
        new.next_pid = next;
        new.processes.insert(name.to_string(), p.clone());
        self.store(&new)?;
        *t = new;
        Ok(p)
    }

    /// Stops the process named `name`, if it runs; `Err` when the file cannot be written.
    pub fn stop(&self, name: &str) -> Result<bool, String> {
        let mut t = self.lock();
        if !t.processes.contains_key(name) {
            return Ok(false);
        }
        let mut new = t.clone();
        new.processes.remove(name);
        self.store(&new)?;
        *t = new;
        Ok(true)
    }

    /// The names of the processes that run.
    pub fn names(&self) -> Vec<String> {
        self.lock().processes.keys().cloned().collect()
    }

    /// Whether `tid` is a thread (or the main thread) of a running process.
    pub fn alive(&self, tid: u32) -> bool {
        self.lock()
            .processes
            .values()
            .any(|p| p.pid == tid || p.vcpus.contains(&tid))
    }

    /// The threads `sel` selects, as the procfs resolver would: a QEMU process's vCPU threads,
    /// a pid's threads, tids that run. comm and cgroup select nothing here (say so).
    pub fn resolve(&self, sel: &Selector) -> Result<Vec<u32>, String> {
        let t = self.lock();
        let by_pid = |pid: u32| t.processes.values().find(|p| p.pid == pid);
        match sel {
            Selector::Qemu(QemuSelector::Name(n)) => t
                .processes
                .get(n)
                .map(|p| p.vcpus.clone())
                .ok_or_else(|| format!("no simulated QEMU process named {n:?}")),
            Selector::Qemu(QemuSelector::Pid(pid)) => by_pid(*pid)
                .map(|p| p.vcpus.clone())
                .ok_or_else(|| format!("no simulated QEMU process {pid}")),
            Selector::Pid(pid) => by_pid(*pid)
                .map(|p| std::iter::once(p.pid).chain(p.vcpus.clone()).collect())
                .ok_or_else(|| format!("no simulated process {pid}")),
            Selector::Tids(tids) => match tids.iter().find(|&&tid| {
                !t.processes
                    .values()
                    .any(|p| p.pid == tid || p.vcpus.contains(&tid))
            }) {
                Some(tid) => Err(format!("no simulated thread {tid}")),
                None => Ok(tids.clone()),
            },
            other => Err(format!(
                "a simulated node runs simulated QEMU processes only: select them by qemu_name, \
                 qemu_pid, pid or tids, not {other:?}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_outlive_a_reopen_and_resolve_as_a_vms_vcpus() {
        let dir = std::env::temp_dir().join(format!("scx_tt-simproc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let procs = Processes::open(&dir).unwrap();
        let a = procs.start("ns/a", 2).unwrap();
        let b = procs.start("ns/b", 1).unwrap();
        assert_eq!(a.vcpus, vec![a.pid + 1, a.pid + 2]);
        assert!(b.pid > a.vcpus[1], "{a:?} {b:?}");
        assert!(procs.start("ns/a", 1).is_err());
        let again = Processes::open(&dir).unwrap();
        let sel = Selector::Qemu(QemuSelector::Name("ns/a".into()));
        assert_eq!(again.resolve(&sel).unwrap(), a.vcpus);
        assert!(again.alive(a.vcpus[1]) && again.alive(b.pid));
        assert!(again.stop("ns/a").unwrap());
        assert!(!again.stop("ns/a").unwrap());
        assert!(again.resolve(&sel).is_err());
        assert!(!again.alive(a.vcpus[1]));
        assert_eq!(
            Processes::open(&dir).unwrap().names(),
            vec!["ns/b".to_string()]
        );
        assert!(again.resolve(&Selector::Tids(vec![b.vcpus[0], 7])).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

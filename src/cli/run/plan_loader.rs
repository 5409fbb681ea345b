//! The loader of `switch_table` plans: a worker thread per request, so that the run loop never
//! waits on reading, validating and tabulating a plan (docs/control.md, "The socket").
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use scx_tt::plan::{self, LoadError, Plan};
use scx_tt::sched::config::SchedConfig;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, TryRecvError};

/// What the loader thread hands over: the plan, and the table of its configuration (built
/// there too: up to 2^24 entries, some 60 ms at the caps).
type Loaded = Result<(Plan, Result<Vec<u32>, String>), LoadError>;

/// Loads the plan of a `switch_table` request on a worker thread, one at a time, so that the
/// run loop never waits on it: reading, validating and tabulating the largest plan the caps
/// accept takes some 0.2-0.3 s (docs/control.md, "The socket"), while the loop drains the
/// ring buffer, serves other connections and sees signals. The thread always ends: plan files
/// are regular files, opened non-blocking, read up to `plan::MAX_PLAN_BYTES`. A thread still
/// loading when the run ends is left to end with the process.
#[derive(Default)]
pub struct PlanLoader {
    job: Option<(PathBuf, Receiver<Loaded>)>,
    /// The table of the plan `poll` handed over last, for `write_table`.
    table: Option<Result<Vec<u32>, String>>,
}

impl PlanLoader {
    /// Starts loading `path` (the table configured with `guard_us` for `online`).
    pub fn start(&mut self, path: &Path, guard_us: u64, online: &[u32]) {
        let (tx, rx) = mpsc::channel();
        let file = path.to_path_buf();
        let online = online.to_vec();
        let spawned = std::thread::Builder::new()
            .name("scx_tt-plan-load".into())
            .spawn(move || {
                let loaded = plan::from_file(&file).map(|p| {
                    let table = SchedConfig::from_plan(&p, guard_us, &online)
                        .map(|cfg| cfg.table)
                        .map_err(|e| format!("configuring the scheduler: {e}"));
                    (p, table)
                });
                let _ = tx.send(loaded);
            });
        if let Err(e) = spawned {
            // no thread: the request is answered with why at the next poll
            let (tx, rx) = mpsc::channel();
            let _ = tx.send(Err(LoadError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other(format!("starting the loader thread: {e}")),
            }));
            self.job = Some((path.to_path_buf(), rx));
            return;
        }
        self.job = Some((path.to_path_buf(), rx));
    }

    /// The loaded plan once the thread is done; `None` while it loads or when nothing loads.
    pub fn poll(&mut self) -> Option<Result<Plan, LoadError>> {
        let (path, rx) = self.job.as_ref()?;
        self.table = None;
        let loaded = match rx.try_recv() {
            Ok(loaded) => loaded,
            Err(TryRecvError::Empty) => return None,
            Err(TryRecvError::Disconnected) => Err(LoadError::Io {
                path: path.clone(),
                source: std::io::Error::other("the loader thread panicked"),
            }),
        };
        self.job = None;
        Some(loaded.map(|(plan, table)| {
            self.table = Some(table);
            plan
        }))
    }

    /// The table of the plan `poll` handed over last (once).
    pub fn take_table(&mut self) -> Option<Result<Vec<u32>, String>> {
        self.table.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The largest plan the caps accept by CPUs × frame and jobs: 16 managed CPUs × 1,000,000
    /// slots, one task of period 16 per CPU (1,000,000 jobs).
    fn worst_plan() -> String {
        let tasks: Vec<String> = (1..=16)
            .map(|c| {
                format!(
                    r#"{{"name":"t{c}","tids":[{c}],"class":"tt","cpu":{c},"period":16,"wcet":8}}"#
                )
            })
            .collect();
        let managed: Vec<String> = (1..=16).map(|c| c.to_string()).collect();
        format!(
            r#"{{"version":1,"slot_us":100,"frame_slots":1000000,"cpus":{{"managed":[{}],"housekeeping":[0]}},"tasks":[{}]}}"#,
            managed.join(","),
            tasks.join(",")
        )
    }

    /// Issue 12 item 2, "off the run loop": starting the load of the largest accepted plan
    /// returns at once and the caller is free while it loads (some 0.2 s in a release build,
    /// docs/control.md); the plan and its table come within a generous bound.
    #[test]
    fn the_largest_accepted_plan_loads_off_the_callers_thread() {
        let dir = std::env::temp_dir().join(format!("scx_tt-loader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("worst.json");
        std::fs::write(&path, worst_plan()).expect("write");
        let mut loader = PlanLoader::default();
        let t0 = Instant::now();
        loader.start(&path, 10, &[0]);
        let started = t0.elapsed();
        assert!(loader.poll().is_none(), "still loading right after start");
        let polled = t0.elapsed();
        // the run loop's turn: start and poll cost far less than a 100 us slot... with room for
        // a loaded machine
        assert!(
            polled < Duration::from_millis(20),
            "start {started:?}, poll {polled:?}"
        );
        let plan = loop {
            if let Some(got) = loader.poll() {
                break got.expect("a valid plan");
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "loaded within 20 s");
            std::thread::sleep(Duration::from_millis(2));
        };
        eprintln!(
            "the largest accepted plan loaded and tabulated in {:?}",
            t0.elapsed()
        );
        assert_eq!(plan.frame_slots, 1_000_000);
        let table = loader.take_table().expect("its table").expect("configures");
        assert_eq!(table.len(), 16 * 1_000_000);
        assert!(loader.take_table().is_none(), "handed over once");
        assert!(loader.poll().is_none(), "nothing loads now");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_or_invalid_plan_comes_back_as_its_error() {
        let mut loader = PlanLoader::default();
        loader.start(Path::new("/nonexistent/plan.json"), 10, &[0]);
        let t0 = Instant::now();
        let got = loop {
            if let Some(got) = loader.poll() {
                break got;
            }
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        };
        assert!(matches!(got, Err(LoadError::Io { .. })), "{got:?}");
        assert!(loader.take_table().is_none());
    }
}

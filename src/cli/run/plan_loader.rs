//! The loader of `switch_table` plans: a worker thread per request, so that the run loop never
//! waits on reading, validating, tabulating a plan or writing its table to the kernel
//! (docs/control.md, "The socket").
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use scx_tt::plan::{self, LoadError, Plan};
use scx_tt::sched::config::SchedConfig;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// What the loader thread does with the table once it is built: writes it where the switch
/// takes it from (the run: the inactive half of the kernel's table, `HalfWriter`), so that the
/// run loop is left a few stores. `W` says where it went.
pub type Stage<W> = Box<dyn FnOnce(&[u32]) -> Result<W, String> + Send>;

/// How long each step of the loader thread took, and when it handed the result over.
#[derive(Clone, Copy, Debug)]
pub struct LoadTimes {
    /// `plan::from_file`: read, parse, validate, tabulate the jobs.
    pub load: Duration,
    /// `SchedConfig::from_plan`: the table.
    pub table: Duration,
    /// The stage (the kernel write); zero without one.
    pub stage: Duration,
    /// When the result was sent to the run loop.
    pub done: Instant,
}

/// The table of a loaded plan, built on the loader thread.
pub struct Tabulated<W> {
    /// `SchedConfig::table` of the plan (kept for a write on the run loop when the staged
    /// table cannot be used, e.g. after a restart).
    pub table: Vec<u32>,
    /// What the stage did with it; `None` without a stage.
    pub staged: Option<Result<W, String>>,
    pub times: LoadTimes,
}

/// What the loader thread hands over: the plan, and its table or why it has none.
type Loaded<W> = Result<(Plan, Result<Tabulated<W>, String>), LoadError>;

/// Loads the plan of a `switch_table` request on a worker thread, one at a time, so that the
/// run loop never waits on it: reading, validating and tabulating the largest plan the caps
/// accept takes some 0.2-0.3 s and writing its table into the kernel's inactive half (2^24
/// entries) about as long again (docs/control.md, "The socket"), while the loop drains the
/// ring buffer, serves other connections and sees signals. The thread always ends: plan files
/// are regular files, opened non-blocking, read up to `plan::MAX_PLAN_BYTES`. A thread still
/// loading when the run ends is left to end with the process.
pub struct PlanLoader<W> {
    job: Option<(PathBuf, Receiver<Loaded<W>>)>,
    /// What `wait` received, for `poll`.
    ready: Option<Loaded<W>>,
    /// The table of the plan `poll` handed over last, for `take_table`.
    table: Option<Result<Tabulated<W>, String>>,
}

impl<W> Default for PlanLoader<W> {
    fn default() -> Self {
        PlanLoader {
            job: None,
            ready: None,
            table: None,
        }
    }
}

impl<W: Send + 'static> PlanLoader<W> {
    /// Starts loading `path` (the table configured with `guard_us` for `online`, then given
    /// to `stage`).
    pub fn start(&mut self, path: &Path, guard_us: u64, online: &[u32], stage: Option<Stage<W>>) {
        let (tx, rx) = mpsc::channel();
        let file = path.to_path_buf();
        let online = online.to_vec();
        self.ready = None;
        let spawned = std::thread::Builder::new()
            .name("scx_tt-plan-load".into())
            .spawn(move || {
                let _ = tx.send(load(&file, guard_us, &online, stage));
            });
        let rx = match spawned {
            Ok(_) => rx,
            Err(e) => {
                // no thread: the request is answered with why at the next poll
                let (tx, rx) = mpsc::channel();
                let _ = tx.send(Err(LoadError::Io {
                    path: path.to_path_buf(),
                    source: std::io::Error::other(format!("starting the loader thread: {e}")),
                }));
                rx
            }
        };
        self.job = Some((path.to_path_buf(), rx));
    }
}

impl<W> PlanLoader<W> {
    /// Whether a plan is loading (its result not handed over by `poll` yet).
    pub fn loading(&self) -> bool {
        self.job.is_some()
    }

    /// Waits up to `timeout` for the loading plan, so that the run loop answers the request as
    /// soon as it has loaded; true when `poll` now has it. Returns at once when nothing loads.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        let Some((_, rx)) = &self.job else {
            return false;
        };
        if self.ready.is_some() {
            return true;
        }
        match rx.recv_timeout(timeout) {
            Ok(loaded) => {
                self.ready = Some(loaded);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            // `poll` reports it
            Err(RecvTimeoutError::Disconnected) => true,
        }
    }

    /// The loaded plan once the thread is done; `None` while it loads or when nothing loads.
    pub fn poll(&mut self) -> Option<Result<Plan, LoadError>> {
        let (path, rx) = self.job.as_ref()?;
        self.table = None;
        let loaded = match self.ready.take().map_or_else(|| rx.try_recv(), Ok) {
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
    pub fn take_table(&mut self) -> Option<Result<Tabulated<W>, String>> {
        self.table.take()
    }
}

/// The loader thread's work: the plan, its table, the stage.
fn load<W>(path: &Path, guard_us: u64, online: &[u32], stage: Option<Stage<W>>) -> Loaded<W> {
    let t0 = Instant::now();
    let plan = plan::from_file(path)?;
    let t1 = Instant::now();
    let table = SchedConfig::from_plan(&plan, guard_us, online)
        .map(|cfg| cfg.entries())
        .map_err(|e| format!("configuring the scheduler: {e}"));
    let t2 = Instant::now();
    let tabulated = table.map(|table| {
        let staged = stage.map(|s| s(&table));
        let t3 = Instant::now();
        Tabulated {
            table,
            staged,
            times: LoadTimes {
                load: t1 - t0,
                table: t2 - t1,
                stage: t3 - t2,
                done: t3,
            },
        }
    });
    Ok((plan, tabulated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

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

    fn temp_plan(name: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("scx_tt-loader-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("plan.json");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    /// Issue 12 item 2, "off the run loop": starting the load of the largest accepted plan
    /// returns at once and the caller is free while it loads, tabulates and stages the table
    /// (some 0.2 s in a release build, docs/control.md); the plan, its table and the stage's
    /// result come within a generous bound.
    #[test]
    fn the_largest_accepted_plan_loads_and_stages_off_the_callers_thread() {
        let (dir, path) = temp_plan("worst", &worst_plan());
        let mut loader = PlanLoader::default();
        let staged_len = Arc::new(Mutex::new(None));
        let seen = staged_len.clone();
        let t0 = Instant::now();
        loader.start(
            &path,
            10,
            &[0],
            Some(Box::new(move |t: &[u32]| {
                *seen.lock().unwrap() = Some(t.len());
                Ok(t.len())
            })),
        );
        let started = t0.elapsed();
        assert!(loader.poll().is_none(), "still loading right after start");
        let polled = t0.elapsed();
        // the run loop's turn: start and poll cost far less than a 100 us slot... with room for
        // a loaded machine
        assert!(
            polled < Duration::from_millis(20),
            "start {started:?}, poll {polled:?}"
        );
        assert!(loader.loading());
        let plan = loop {
            if let Some(got) = loader.poll() {
                break got.expect("a valid plan");
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "loaded within 20 s");
            std::thread::sleep(Duration::from_millis(2));
        };
        assert_eq!(plan.frame_slots, 1_000_000);
        let tab = loader.take_table().expect("its table").expect("configures");
        eprintln!(
            "the largest accepted plan: loaded in {:?}, tabulated in {:?}, staged in {:?}",
            tab.times.load, tab.times.table, tab.times.stage
        );
        assert_eq!(tab.table.len(), 16 * 1_000_000);
        assert_eq!(tab.staged.expect("staged").expect("ok"), 16 * 1_000_000);
        assert_eq!(*staged_len.lock().unwrap(), Some(16 * 1_000_000));
        assert!(loader.take_table().is_none(), "handed over once");
        assert!(loader.poll().is_none(), "nothing loads now");
        assert!(!loader.loading());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 12 (the reply waits up to one loop turn): `wait` returns as soon as the loader
    /// thread has handed the plan over, not at the end of its timeout (the run loop's 100 ms).
    #[test]
    fn wait_returns_as_soon_as_the_plan_has_loaded() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schedules/demo.json"))
                .expect("demo plan");
        let (dir, path) = temp_plan("wait", &text);
        let mut loader: PlanLoader<()> = PlanLoader::default();
        assert!(
            !loader.wait(Duration::from_secs(5)),
            "nothing loads: at once"
        );
        let mut worst = Duration::ZERO;
        for _ in 0..20 {
            loader.start(&path, 10, &[0], Some(Box::new(|_: &[u32]| Ok(()))));
            // the run loop's turn: wait up to 100 ms at a time
            let t0 = Instant::now();
            while !loader.wait(Duration::from_millis(100)) {
                assert!(t0.elapsed() < Duration::from_secs(10));
            }
            let woke = Instant::now();
            assert!(loader.poll().expect("loaded").is_ok());
            let tab = loader.take_table().expect("table").expect("configures");
            worst = worst.max(woke.saturating_duration_since(tab.times.done));
        }
        eprintln!("wait returned at most {worst:?} after the loader thread handed the plan over");
        // a wake-up, not a timeout: far below the 100 ms turn, with room for a loaded machine
        assert!(worst < Duration::from_millis(50), "{worst:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_stage_comes_back_with_the_table() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schedules/demo.json"))
                .expect("demo plan");
        let (dir, path) = temp_plan("stage", &text);
        let mut loader: PlanLoader<()> = PlanLoader::default();
        loader.start(
            &path,
            10,
            &[0],
            Some(Box::new(|_: &[u32]| Err("no map".into()))),
        );
        while !loader.wait(Duration::from_millis(100)) {}
        assert!(loader.poll().expect("loaded").is_ok());
        let tab = loader.take_table().expect("table").expect("configures");
        assert!(!tab.table.is_empty());
        assert_eq!(tab.staged, Some(Err("no map".to_string())));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_or_invalid_plan_comes_back_as_its_error() {
        let mut loader: PlanLoader<()> = PlanLoader::default();
        loader.start(Path::new("/nonexistent/plan.json"), 10, &[0], None);
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

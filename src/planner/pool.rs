//! Helper threads for the planner's sharded step (`Planner::step_on`, tt-core's
//! `planner/runtime/shard.rs`): on a node with many managed CPUs, the slots in which most of
//! them are due are stepped by the planner thread and `helpers` more threads at once.
//!
//! # Design
//! Each helper has one state word: `SPINNING` (waiting for a shard, spinning), `ASSIGNED` (the
//! planner thread has put a shard in its cell), `DONE` (it has run it), `PARKED` (it spun for
//! `spin` without work and sleeps), `STOP`. The planner thread hands a shard only to a helper it
//! finds `SPINNING` (a compare-and-swap to `ASSIGNED`, after writing the cell), runs the other
//! shards itself, and waits for `DONE`. A parked helper is never waited for: its shard runs on the
//! planner thread, and the helper is woken to spin for the next step (waking a thread takes
//! 10–50 µs, more than a whole step). [`StepPool::wake`] wakes them ahead of a step, e.g. when
//! the planner thread starts waiting for the next slot.
//!
//! A shard borrows the planner; the cell holds a pointer to it that lives only until the helper
//! stores `DONE`, and `run` does not return (nor unwind) before every assigned helper has, so
//! the borrow outlives every use (the argument of `std::thread::scope`, with threads that stay).
//! A helper's panic is caught, reported as `DONE`, and resumed on the planner thread.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tt_core::planner::runtime::{Shard, StepExec};

const SPINNING: u32 = 0;
const ASSIGNED: u32 = 1;
const DONE: u32 = 2;
const PARKED: u32 = 3;
const STOP: u32 = 4;

type Payload = Box<dyn std::any::Any + Send>;

/// One helper's state word and cell, on a cache line of its own.
#[repr(align(128))]
struct Cell {
    state: AtomicU32,
    job: UnsafeCell<*mut Shard<'static>>,
    panic: Mutex<Option<Payload>>,
}

// SAFETY: `job` is written by the planner thread only while the state is not `ASSIGNED` (the
// helper does not read it then) and read by the helper only in `ASSIGNED`; the state's
// release/acquire orders the two. The pointee is a `Shard`, which is `Send` (checked below).
unsafe impl Sync for Cell {}
unsafe impl Send for Cell {}

const _: () = {
    const fn send<T: Send>() {}
    send::<Shard<'static>>();
};

/// Helper threads that run shards of the planner's step ([`StepExec`]).
pub struct StepPool {
    cells: Arc<[Cell]>,
    /// Shards run on helpers so far.
    lent: std::sync::atomic::AtomicU64,
    threads: Vec<JoinHandle<()>>,
}

impl StepPool {
    /// `helpers` threads; each runs `setup(h)` first (e.g. pins itself to a housekeeping CPU)
    /// and spins for `spin` after each shard (and after [`Self::wake`]) before it parks.
    pub fn new(
        helpers: usize,
        spin: Duration,
        setup: impl Fn(usize) + Send + Sync + 'static,
    ) -> std::io::Result<StepPool> {
        let cells: Arc<[Cell]> = (0..helpers)
            .map(|_| Cell {
                state: AtomicU32::new(SPINNING),
                job: UnsafeCell::new(std::ptr::null_mut()),
                panic: Mutex::new(None),
            })
            .collect();
        let setup = Arc::new(setup);
        let mut pool = StepPool {
            cells: cells.clone(),
            lent: Default::default(),
            threads: Vec::with_capacity(helpers),
        };
        for h in 0..helpers {
            let (cells, setup) = (cells.clone(), setup.clone());
            let t = std::thread::Builder::new()
                .name(format!("tt-step-{h}"))
                .spawn(move || {
                    setup(h);
                    helper(&cells[h], spin);
                })?;
            pool.threads.push(t);
        }
        Ok(pool)
    }

    /// Helper threads.
    pub fn helpers(&self) -> usize {
        self.cells.len()
    }

    /// Wakes the parked helpers to spin (for `spin`) for the next step.
    pub fn wake(&self) {
        for (c, t) in self.cells.iter().zip(&self.threads) {
            if c.state
                .compare_exchange(PARKED, SPINNING, AcqRel, Acquire)
                .is_ok()
            {
                t.thread().unpark();
            }
        }
    }

    /// Shards run on helpers (not on the calling thread) so far.
    pub fn lent(&self) -> u64 {
        self.lent.load(Relaxed)
    }

    /// Helpers spinning now, ready for a shard (for tests and the bench's report).
    pub fn spinning(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.state.load(Acquire) == SPINNING)
            .count()
    }
}

fn helper(cell: &Cell, spin: Duration) {
    let mut since = Instant::now();
    let mut polls = 0u32;
    loop {
        match cell.state.load(Acquire) {
            ASSIGNED => {
                // SAFETY: in `ASSIGNED` the cell holds a shard the planner thread lent us until
                // we store `DONE` (module doc); nothing else touches it meanwhile.
                let shard = unsafe { &mut **cell.job.get() };
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shard.run()));
                if let Err(p) = r {
                    *cell.panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
                }
                cell.state.store(DONE, Release);
                since = Instant::now();
            }
            STOP => return,
            PARKED => std::thread::park(),
            s => {
                // SPINNING, or DONE until the planner thread has seen it
                std::hint::spin_loop();
                polls = polls.wrapping_add(1);
                if s == SPINNING && polls % 256 == 0 && since.elapsed() >= spin {
                    if cell
                        .state
                        .compare_exchange(SPINNING, PARKED, AcqRel, Acquire)
                        .is_ok()
                    {
                        while cell.state.load(Acquire) == PARKED {
                            std::thread::park();
                        }
                    }
                    since = Instant::now();
                }
            }
        }
    }
}

impl StepExec for StepPool {
    fn run(&self, shards: &mut [Shard<'_>]) {
        let (n, all) = (shards.len(), shards.as_mut_ptr());
        // Shard `h + 1` goes to helper `h` if it is spinning; from here on every access to a
        // shard goes through `all`, and none to a lent one until its helper is done.
        let mut lent = [false; tt_core::planner::runtime::MAX_SHARDS];
        for (h, cell) in self.cells.iter().enumerate().take(n.saturating_sub(1)) {
            if cell.state.load(Relaxed) != SPINNING {
                continue;
            }
            // SAFETY: the helper reads the cell only in `ASSIGNED`, which only the exchange
            // below enters; the lifetime is erased for the helper's type only: `run` waits for
            // `DONE` before `shards` can go (the guard below, on every path out).
            unsafe {
                *cell.job.get() = all.add(h + 1).cast::<Shard<'static>>();
            }
            lent[h] = cell
                .state
                .compare_exchange(SPINNING, ASSIGNED, AcqRel, Acquire)
                .is_ok();
        }
        // Waits for the lent shards on every way out of `run`, unwinding included.
        struct Wait<'p> {
            cells: &'p [Cell],
            lent: &'p [bool],
        }
        impl Drop for Wait<'_> {
            fn drop(&mut self) {
                for (c, _) in self.cells.iter().zip(self.lent).filter(|(_, &l)| l) {
                    while c.state.load(Acquire) != DONE {
                        std::hint::spin_loop();
                    }
                    c.state.store(SPINNING, Release);
                }
            }
        }
        {
            let _wait = Wait {
                cells: &self.cells,
                lent: &lent,
            };
            for k in (0..n).filter(|&k| k == 0 || !lent.get(k - 1).copied().unwrap_or(false)) {
                // SAFETY: `k < n`, and shard `k` is not lent (only shards 1.. are).
                unsafe { (*all.add(k)).run() };
            }
        }
        let k = lent.iter().filter(|&&l| l).count() as u64;
        self.lent.fetch_add(k, Relaxed);
        self.wake();
        for c in self.cells.iter() {
            if let Some(p) = c.panic.lock().unwrap_or_else(|e| e.into_inner()).take() {
                std::panic::resume_unwind(p);
            }
        }
    }
}

impl Drop for StepPool {
    fn drop(&mut self) {
        for (c, t) in self.cells.iter().zip(&self.threads) {
            c.state.store(STOP, Release);
            t.thread().unpark();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StepPool;
    use std::time::{Duration, Instant};
    use tt_core::planner::offline::Job;
    use tt_core::planner::runtime::CpuInput;
    use tt_core::planner::{Freqs, Observation, Planner, PlannerConfig, Policy};

    /// `cpus` CPUs with the bench's shape: job k released at 10·k, due at 10·k + 10 + (k·c mod
    /// 3)·10 (clamped), 1 + (k + c) mod 5 slots of work; every CPU releases in the same slots.
    fn planner(cpus: usize, policy: Policy) -> Planner {
        let frame = 100;
        let inputs: Vec<CpuInput> = (0..cpus)
            .map(|c| CpuInput {
                jobs: (0..10u64)
                    .map(|k| Job {
                        task: k as usize,
                        instance: 0,
                        release: 10 * k,
                        deadline: (10 * k + 10 + (k * c as u64 % 3) * 10).min(frame),
                        wcet: 1 + (k + c as u64) % 5,
                    })
                    .collect(),
                has_be: c % 3 == 0,
            })
            .collect();
        let cfg = PlannerConfig {
            policy,
            freqs: Freqs::xeon_default(),
            slot_ns: 1000,
        };
        Planner::new(&inputs, frame, cfg)
    }

    /// Stepped with two helpers that spin throughout (and with one that parks between steps,
    /// whose shards the planner thread runs itself), the planner decides and reports as on one
    /// thread, slot by slot, with and without observations.
    #[test]
    fn a_pool_steps_as_one_thread() {
        for (spin, policy, observed) in [
            (Duration::from_secs(5), Policy::Dvfs, false),
            (Duration::from_secs(5), Policy::Bss, true),
            (Duration::ZERO, Policy::Dpm, false),
        ] {
            let pool = StepPool::new(2, spin, |_| {}).expect("threads");
            let (mut a, mut b) = (planner(130, policy), planner(130, policy));
            a.set_step_shards(3);
            for s in 0..300u64 {
                let obs: Vec<Observation> = match observed && s > 0 {
                    true => (0..130)
                        .map(|c| Observation {
                            ran_ns: 1000 * ((s + c) % 2),
                            done: (s + c) % 3 == 0,
                        })
                        .collect(),
                    false => Vec::new(),
                };
                let da = a.step_on(s, &obs, &pool).expect("in order").to_vec();
                let db = b.step(s, &obs).expect("in order").to_vec();
                assert_eq!(da, db, "{policy} slot {s}");
                assert_eq!(a.events(), b.events(), "{policy} events of slot {s}");
            }
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{policy}: state");
            // two helpers: every slot cut (observed, 600), or the 30-odd releases and
            // completions with many CPUs due (quiet runs); fewer when they park at once
            match (spin.is_zero(), observed) {
                (true, _) => assert!(pool.lent() < 200, "{policy}: {} lent", pool.lent()),
                (false, false) => assert!(pool.lent() >= 40, "{policy}: {} lent", pool.lent()),
                (false, true) => assert!(pool.lent() >= 500, "{policy}: {} lent", pool.lent()),
            }
        }
    }

    /// Helpers park after `spin` without work and spin again after `wake`; dropping the pool
    /// stops and joins them.
    #[test]
    fn helpers_park_when_idle_and_wake_on_demand() {
        let pool = StepPool::new(2, Duration::from_millis(20), |_| {}).expect("threads");
        let until = |want: usize, what: &str| {
            let t0 = Instant::now();
            while pool.spinning() != want {
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "{what}: {} of 2 helpers spinning after 10 s",
                    pool.spinning()
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        until(0, "parked after the spin");
        pool.wake();
        assert_eq!(pool.spinning(), 2, "woken helpers spin at once");
        until(0, "parked again");
        let t0 = Instant::now();
        drop(pool);
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "drop joined in {:?}",
            t0.elapsed()
        );
    }
}

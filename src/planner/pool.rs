//! Helper threads for the planner's sharded step (`Planner::step_on`, tt-core's
//! `planner/runtime/shard.rs`): on a node with many managed CPUs, the slots in which most of
//! them are due are stepped by the planner thread and `helpers` more threads at once.
//!
//! # Design
//! A step publishes its shards under a new epoch in one word, `claim = epoch << 32 | next`;
//! the planner thread and every awake helper take shards by a compare-and-swap of `next` to
//! `next + 1` within that epoch, run them, and count them in `done`. The planner thread, once
//! no shard is left to take, waits only for shards a helper has taken and not finished. So
//! the threads share the work by how fast each gets through it (a step is cut into more shards
//! than there are threads), and a helper that is preempted, throttled, asleep or not started
//! never holds a step up by more than the one shard it is in the middle of.
//!
//! A helper spins for `spin` after its last shard, then parks; each step that finds a helper
//! parked wakes it for the next (waking a thread takes 10–50 µs, more than a whole step), and
//! [`StepPool::wake`] wakes them ahead of a step, e.g. when the planner thread starts waiting
//! for the next slot.
//!
//! A shard borrows the planner. Its pointer is read by a helper only after it has claimed the
//! shard in the current epoch, and the planner thread does not return (nor unwind) from `run`
//! before every claimed shard of the epoch is done, so the borrow outlives every use (the
//! argument of `std::thread::scope`, with threads that stay). A helper's panic is caught,
//! counted as done, and resumed on the planner thread.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tt_core::planner::runtime::{Shard, StepExec};

type Payload = Box<dyn std::any::Any + Send>;

/// What the planner thread and the helpers share.
struct Shared {
    /// `epoch << 32 | next shard to take`.
    claim: CacheLine<AtomicU64>,
    /// Shards of the current epoch run to the end.
    done: CacheLine<AtomicUsize>,
    /// The current epoch's shards and their count: written by the planner thread before it
    /// publishes the epoch.
    shards: AtomicPtr<Shard<'static>>,
    count: AtomicUsize,
    /// Per helper: parked (or about to).
    parked: Vec<CacheLine<AtomicBool>>,
    stop: AtomicBool,
    panic: Mutex<Option<Payload>>,
    /// Shards run by helpers so far.
    lent: AtomicU64,
    /// [`StepPool::wake_on_demand`]: helpers park once a step they took part in is over, and a
    /// step does not wake them for the next.
    on_demand: AtomicBool,
}

#[repr(align(128))]
struct CacheLine<T>(T);

// A shard goes to another thread: it must be `Send`.
const _: () = {
    const fn send<T: Send>() {}
    send::<Shard<'static>>();
};

/// Helper threads that run shards of the planner's step ([`StepExec`]).
pub struct StepPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// The last epoch published.
    epoch: std::sync::atomic::AtomicU32,
    /// A `run` is in progress: a second one at the same time (two planners on two threads
    /// sharing the pool) runs its shards on its own thread.
    busy: AtomicBool,
}

impl StepPool {
    /// `helpers` threads; each runs `setup(h)` first (e.g. pins itself to a housekeeping CPU)
    /// and spins for `spin` after its last shard (and after [`Self::wake`]) before it parks.
    pub fn new(
        helpers: usize,
        spin: Duration,
        setup: impl Fn(usize) + Send + Sync + 'static,
    ) -> std::io::Result<StepPool> {
        let shared = Arc::new(Shared {
            claim: CacheLine(AtomicU64::new(0)),
            done: CacheLine(AtomicUsize::new(0)),
            shards: AtomicPtr::new(std::ptr::null_mut()),
            count: AtomicUsize::new(0),
            parked: (0..helpers)
                .map(|_| CacheLine(AtomicBool::new(false)))
                .collect(),
            stop: AtomicBool::new(false),
            panic: Mutex::new(None),
            lent: AtomicU64::new(0),
            on_demand: AtomicBool::new(false),
        });
        let setup = Arc::new(setup);
        let mut pool = StepPool {
            shared: shared.clone(),
            threads: Vec::with_capacity(helpers),
            epoch: Default::default(),
            busy: AtomicBool::new(false),
        };
        for h in 0..helpers {
            let (shared, setup) = (shared.clone(), setup.clone());
            let t = std::thread::Builder::new()
                .name(format!("tt-step-{h}"))
                .spawn(move || {
                    setup(h);
                    helper(&shared, h, spin);
                })?;
            pool.threads.push(t);
        }
        Ok(pool)
    }

    /// Helper threads.
    pub fn helpers(&self) -> usize {
        self.threads.len()
    }

    /// Wakes the parked helpers to spin (for `spin`) for the next step.
    pub fn wake(&self) {
        for (p, t) in self.shared.parked.iter().zip(&self.threads) {
            if p.0.load(Acquire) {
                t.thread().unpark();
            }
        }
    }

    /// Helpers awake now, ready for shards (for tests and the bench).
    pub fn spinning(&self) -> usize {
        self.shared
            .parked
            .iter()
            .filter(|p| !p.0.load(Acquire))
            .count()
    }

    /// Shards run by helpers (not by the planner thread) so far.
    pub fn lent(&self) -> u64 {
        self.shared.lent.load(Relaxed)
    }

    /// From now on helpers spin only after [`Self::wake`] (for `spin`, or until they ran
    /// shards of a step), then park: for an owner that steps at known times (the daemon's
    /// planner loop wakes them just before each slot tick), so they spin only around the step.
    pub fn wake_on_demand(&self) {
        self.shared.on_demand.store(true, Release);
    }
}

/// A pool shared with its owner's other threads: the kernel path's planner steps through it
/// (`KernelPlanner::set_step_exec` takes the executor by value) while the planner loop wakes
/// the helpers ahead of each slot ([`StepPool::wake`]) and the run reports [`StepPool::lent`].
#[derive(Clone)]
pub struct SharedPool(pub Arc<StepPool>);

impl StepExec for SharedPool {
    fn run(&self, shards: &mut [Shard<'_>]) {
        self.0.run(shards)
    }
}

/// Takes and runs shards of the epoch in `word` until none is left; returns how many it ran.
/// `None` when the epoch has moved on (nothing taken).
fn take_and_run(shared: &Shared, mut word: u64) -> usize {
    let mut ran = 0;
    loop {
        // What these are worth is known only once a claim in this epoch succeeds: the planner
        // thread is then still in its `run` for it, which wrote them before publishing it.
        let (all, n) = (shared.shards.load(Relaxed), shared.count.load(Relaxed));
        let k = (word & u32::MAX as u64) as usize;
        if k >= n {
            return ran;
        }
        match shared
            .claim
            .0
            .compare_exchange_weak(word, word + 1, AcqRel, Acquire)
        {
            Ok(_) => {
                // SAFETY: shard `k < n` of this epoch is ours alone until `done` counts it.
                let shard = unsafe { &mut *all.add(k) };
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shard.run()));
                if let Err(p) = r {
                    *shared.panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
                }
                shared.done.0.fetch_add(1, Release);
                ran += 1;
                word += 1;
            }
            Err(now) if now >> 32 == word >> 32 => word = now,
            Err(_) => return ran,
        }
    }
}

fn helper(shared: &Shared, h: usize, spin: Duration) {
    let mut seen = shared.claim.0.load(Acquire) >> 32;
    let mut since = Instant::now();
    let mut polls = 0u32;
    while !shared.stop.load(Relaxed) {
        let word = shared.claim.0.load(Acquire);
        let mut over = false;
        if word >> 32 != seen {
            seen = word >> 32;
            let ran = take_and_run(shared, word);
            shared.lent.fetch_add(ran as u64, Relaxed);
            since = Instant::now();
            // on demand: its part of the step is done, the next wake-up comes before the next
            over = ran > 0 && shared.on_demand.load(Relaxed);
            if !over {
                continue;
            }
        }
        std::hint::spin_loop();
        polls = polls.wrapping_add(1);
        if over || (polls.is_multiple_of(256) && since.elapsed() >= spin) {
            shared.parked[h].0.store(true, Release);
            // an epoch published since the last look is not waited for: its planner thread
            // runs what nobody takes
            if shared.claim.0.load(Acquire) >> 32 == seen && !shared.stop.load(Relaxed) {
                std::thread::park();
            }
            shared.parked[h].0.store(false, Release);
            since = Instant::now();
        }
    }
}

impl StepExec for StepPool {
    fn run(&self, shards: &mut [Shard<'_>]) {
        if self.busy.swap(true, Acquire) {
            shards.iter_mut().for_each(Shard::run);
            return;
        }
        struct Free<'p>(&'p AtomicBool);
        impl Drop for Free<'_> {
            fn drop(&mut self) {
                self.0.store(false, Release);
            }
        }
        let _free = Free(&self.busy);
        let n = shards.len();
        let shared = &*self.shared;
        let epoch = self.epoch.load(Relaxed).wrapping_add(1);
        self.epoch.store(epoch, Relaxed);
        // The lifetime is erased for the helpers' type only (module doc: `run` waits for every
        // claimed shard, the guard below on every way out).
        shared
            .shards
            .store(shards.as_mut_ptr().cast::<Shard<'static>>(), Relaxed);
        shared.count.store(n, Relaxed);
        shared.done.0.store(0, Relaxed);
        let word = (epoch as u64) << 32;
        shared.claim.0.store(word, Release);
        // Waits for the shards taken, on every way out of `run`, unwinding included.
        struct Wait<'p>(&'p Shared, usize);
        impl Drop for Wait<'_> {
            fn drop(&mut self) {
                // no shard is left to take: close the epoch to new claims, then wait for those
                // taken (`taken` of them)
                let c = &self.0.claim.0;
                let taken = (c.fetch_or(u32::MAX as u64, AcqRel) & u32::MAX as u64) as usize;
                let taken = taken.min(self.1);
                while self.0.done.0.load(Acquire) < taken {
                    std::hint::spin_loop();
                }
            }
        }
        let wait = Wait(shared, n);
        take_and_run(shared, word);
        drop(wait);
        if !shared.on_demand.load(Relaxed) {
            self.wake();
        }
        if let Some(p) = shared
            .panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            std::panic::resume_unwind(p);
        }
    }
}

impl Drop for StepPool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Release);
        for t in &self.threads {
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

    /// Stepped with two helpers that spin throughout (and with ones that park between steps,
    /// whose shards the planner thread runs itself), the planner decides and reports as on one
    /// thread, slot by slot, with and without observations. With spinning helpers it steps on
    /// (at least 300 slots) until a helper has run a shard: on a loaded host the planner thread
    /// may take every shard of many steps before a helper gets a CPU.
    #[test]
    fn a_pool_steps_as_one_thread() {
        for (spin, policy, observed) in [
            (Duration::from_secs(5), Policy::Dvfs, false),
            (Duration::from_secs(5), Policy::Bss, true),
            (Duration::ZERO, Policy::Dpm, false),
        ] {
            let pool = StepPool::new(2, spin, |_| {}).expect("threads");
            let (mut a, mut b) = (planner(130, policy), planner(130, policy));
            a.set_step_shards(3, 48);
            let t0 = Instant::now();
            for s in 0u64.. {
                if s >= 300 && (spin.is_zero() || pool.lent() >= 1) {
                    break;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(20),
                    "{policy}: no helper ran a shard in {s} slots"
                );
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
        }
    }

    /// `wake_on_demand` (the daemon's planner loop): a helper that ran its part of a step
    /// parks at once and is not woken by the steps after it, only by `wake`; decisions stay
    /// those of one thread throughout.
    #[test]
    fn on_demand_helpers_park_after_their_part_of_a_step() {
        let pool = StepPool::new(1, Duration::from_secs(30), |_| {}).expect("threads");
        pool.wake_on_demand();
        let (mut a, mut b) = (planner(100, Policy::Dvfs), planner(100, Policy::Dvfs));
        a.set_step_shards(2, 2);
        let t0 = Instant::now();
        let mut s = 0u64;
        // steps until the helper took a shard (it spins for 30 s from its start, so it is
        // awake; on a loaded host the planner thread may take both shards of many steps)
        while pool.lent() == 0 {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no shard lent in {s} steps"
            );
            let da = a.step_on(s, &[], &pool).expect("in order").to_vec();
            assert_eq!(da, b.step(s, &[]).expect("in order"), "slot {s}");
            s += 1;
        }
        // its part done, the helper parks at once (not after its 30 s spin), and a step does
        // not wake it again
        let spinning = |want: usize, what: &str| {
            let t = Instant::now();
            while pool.spinning() != want {
                assert!(t.elapsed() < Duration::from_secs(10), "{what} after 10 s");
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        spinning(0, "still spinning");
        let lent = pool.lent();
        for k in 0..50 {
            let da = a.step_on(s + k, &[], &pool).expect("in order").to_vec();
            assert_eq!(da, b.step(s + k, &[]).expect("in order"), "slot {}", s + k);
        }
        assert_eq!(
            (pool.lent(), pool.spinning()),
            (lent, 0),
            "parked helpers took shards"
        );
        // `wake` makes it spin (and take shards) again
        pool.wake();
        spinning(1, "not awake");
    }

    /// Two planners stepped at the same time from two threads share one pool: a `run` that
    /// finds the pool busy steps its shards on its own thread; both decide as one thread.
    #[test]
    fn two_planners_share_a_pool() {
        let pool = StepPool::new(1, Duration::from_secs(5), |_| {}).expect("threads");
        std::thread::scope(|sc| {
            for policy in [Policy::Dvfs, Policy::Bss] {
                let pool = &pool;
                sc.spawn(move || {
                    let (mut a, mut b) = (planner(100, policy), planner(100, policy));
                    a.set_step_shards(2, 2);
                    for s in 0..400u64 {
                        let da = a.step_on(s, &[], pool).expect("in order").to_vec();
                        let db = b.step(s, &[]).expect("in order").to_vec();
                        assert_eq!(da, db, "{policy} slot {s}");
                        assert_eq!(a.events(), b.events(), "{policy} events of slot {s}");
                    }
                    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{policy}: state");
                });
            }
        });
    }

    /// Helpers park after `spin` without work and spin again after `wake`; dropping the pool
    /// stops and joins them.
    #[test]
    fn helpers_park_when_idle_and_wake_on_demand() {
        let pool = StepPool::new(2, Duration::from_millis(200), |_| {}).expect("threads");
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
        until(2, "spinning after the wake-up");
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

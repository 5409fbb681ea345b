//! The event-driven step (quiet slots skip `advance` and the reconciliation, the interval of the
//! running job is cached) against the reference step (`Planner::set_reference_step`: every CPU
//! reconciled, advanced and decided in full every slot, no cache): two planners fed the same
//! random plans, admissions, soft jobs, removals, policy swaps and observations (by `step`, late
//! by `observe`, or none) must take the same decisions, report the same events and admissions
//! and hold the same state (`Debug` of every CPU, caches left out) after every slot.

use super::offline::{Job, Slot};
use super::runtime::CpuInput;
use super::Decision;
use super::{Observation, Placement, Planner, PlannerConfig, Policy};
use proptest::prelude::*;

const SLOT_NS: u64 = 1000;

/// `n` jobs in a frame of `frame` slots, as bench/planner_common.rs builds them: job k released
/// at the start of segment k, at most half a segment of work, due 0–3 segments after its own
/// segment ends: always EDF-feasible.
pub(super) fn frame_jobs(n: u64, frame: u64, seed: u64, wcet_of: &[u64]) -> Vec<Job> {
    let seg = (frame / n).max(2);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n.min(frame / seg))
        .map(|k| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Job {
                task: k as usize,
                instance: 0,
                release: k * seg,
                deadline: ((k + 1 + x % 4) * seg).min(frame),
                wcet: 1 + wcet_of[k as usize % wcet_of.len()] % (seg / 2).max(1),
            }
        })
        .collect()
}

/// One thing done between two steps, with its random parameters.
#[derive(Clone, Debug)]
enum Op {
    Nothing,
    Firm {
        wcet: u64,
        rel: u64,
        cpu: usize,
        only: bool,
    },
    Soft {
        wcet: u64,
        cpu: Option<usize>,
    },
    Periodic {
        wcet: u64,
        period_ix: usize,
    },
    Remove {
        task: usize,
    },
    Policy(usize),
    /// The acceptance test alone (`firm_fits`, what the kernel path's dry runs ask).
    Fits {
        wcet: u64,
        rel: u64,
        cpu: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Nothing),
        3 => (1..6u64, 1..80u64, 0..3usize, any::<bool>())
            .prop_map(|(wcet, rel, cpu, only)| Op::Firm { wcet, rel, cpu, only }),
        1 => (1..5u64, proptest::option::of(0..3usize))
            .prop_map(|(wcet, cpu)| Op::Soft { wcet, cpu }),
        1 => (1..4u64, 0..4usize).prop_map(|(wcet, period_ix)| Op::Periodic { wcet, period_ix }),
        1 => (0..12usize).prop_map(|task| Op::Remove { task }),
        1 => (0..4usize).prop_map(Op::Policy),
        2 => (1..6u64, 1..80u64, 0..3usize)
            .prop_map(|(wcet, rel, cpu)| Op::Fits { wcet, rel, cpu }),
    ]
}

/// How observations reach the planners.
#[derive(Clone, Copy, Debug)]
enum Feed {
    /// `step(s, &[])`: every slot ran whole.
    None,
    /// `step(s, obs)` with random observations.
    Step,
    /// `defer_observations(2)` and `observe` of slot `s − 2`.
    Late,
}

/// Applies `op` to both planners; the replies must agree.
fn apply(a: &mut Planner, b: &mut Planner, op: &Op, next_task: &mut usize) {
    let n = a.cpu_count();
    match *op {
        Op::Nothing => {}
        Op::Firm {
            wcet,
            rel,
            cpu,
            only,
        } => {
            let place = match only {
                true => Placement::Only(cpu % n),
                false => Placement::Prefer(cpu % n),
            };
            let d = a.now() + rel;
            *next_task += 1;
            let ra = a.admit_firm(*next_task, wcet, d, place);
            assert_eq!(ra, b.admit_firm(*next_task, wcet, d, place), "admit_firm");
        }
        Op::Soft { wcet, cpu } => {
            *next_task += 1;
            let ra = a.submit_soft(*next_task, wcet, cpu);
            assert_eq!(ra, b.submit_soft(*next_task, wcet, cpu), "submit_soft");
        }
        Op::Periodic { wcet, period_ix } => {
            let period = [5, 10, 15, 30][period_ix];
            *next_task += 1;
            let ra = a.admit_periodic(*next_task, wcet, period, Placement::Any);
            assert_eq!(
                ra,
                b.admit_periodic(*next_task, wcet, period, Placement::Any),
                "admit_periodic"
            );
        }
        Op::Remove { task } => assert_eq!(a.remove_task(task), b.remove_task(task), "remove"),
        Op::Policy(p) => {
            a.set_policy(Policy::ALL[p]);
            b.set_policy(Policy::ALL[p]);
        }
        Op::Fits { wcet, rel, cpu } => {
            let d = a.now() + rel;
            let fa = a.firm_fits(cpu % n, wcet, d);
            assert_eq!(fa, b.firm_fits(cpu % n, wcet, d), "firm_fits");
        }
    }
}

/// Every CPU's state as `Debug` text, with the ready queue as its sorted live entries: the queue
/// drops finished jobs lazily, when they reach its top, and the reference step (which advances
/// every slot) looks at the top more often; the live entries, hence the order in which jobs are
/// picked, are the same.
fn state(p: &Planner) -> String {
    let mut out = String::new();
    // A copy: `cpus()` charges the quiet runs' slots, and `p` must go on with its runs as they
    // are (charged when they end), or the comparison would never see a run longer than a slot.
    let mut p = p.clone();
    for c in p.cpus() {
        let mut c = c.clone();
        let (base, jobs) = (c.job_base, c.jobs.clone());
        let live = |seq: usize| seq >= base && !jobs[seq - base].done;
        let ready: Vec<_> = std::mem::take(&mut c.ready)
            .into_sorted_vec()
            .into_iter()
            .filter(|r| live(r.0 .1))
            .collect();
        out += &format!("{c:?} ready {ready:?}\n");
    }
    out
}

/// A random observation from two draws.
fn observation(r: u64) -> Observation {
    Observation {
        ran_ns: [0, SLOT_NS / 3, SLOT_NS, SLOT_NS, SLOT_NS][(r % 5) as usize],
        done: (r / 5).is_multiple_of(4),
    }
}

/// The observations of slot `s` under `feed`, drawn from `draw`: those `step` takes (returned),
/// or, late, slot `s − 2`'s given to both planners by `observe` (the replies must agree).
fn feed_slot(
    a: &mut Planner,
    b: &mut Planner,
    s: u64,
    feed: Feed,
    draw: &mut impl Iterator<Item = u64>,
) -> Vec<Observation> {
    let cpus = a.cpu_count();
    if let Feed::Late = feed {
        for c in 0..cpus {
            let o = observation(draw.next().unwrap());
            if s >= 2 {
                let va = a.observe(c, s - 2, o).map(<[u64]>::to_vec);
                assert_eq!(va, b.observe(c, s - 2, o).map(<[u64]>::to_vec), "observe");
            }
        }
    }
    match feed {
        Feed::Step if s > 0 => (0..cpus)
            .map(|_| observation(draw.next().unwrap()))
            .collect(),
        _ => Vec::new(),
    }
}

/// Two planners, one with the reference step, fed `frames` frames of `frame` slots on `cpus`
/// CPUs and `ops` between the steps: the same decisions, events, replies and states.
#[allow(clippy::too_many_arguments)]
fn run_frame(
    cpus: usize,
    frame: u64,
    jobs: u64,
    frames: u64,
    policy: usize,
    wcets: &[u64],
    ops: &[Op],
    draws: &[u64],
    feed: Feed,
) {
    let inputs: Vec<CpuInput> = (0..cpus)
        .map(|c| CpuInput {
            jobs: frame_jobs(jobs, frame, c as u64 + 1, wcets),
            has_be: c % 2 == 1,
        })
        .collect();
    let cfg = PlannerConfig {
        policy: Policy::ALL[policy],
        freqs: super::Freqs::xeon_default(),
        slot_ns: SLOT_NS,
    };
    let mut a = Planner::new(&inputs, frame, cfg.clone());
    let mut b = Planner::new(&inputs, frame, cfg);
    b.set_reference_step(true);
    if let Feed::Late = feed {
        a.defer_observations(2);
        b.defer_observations(2);
    }
    let mut next_task = 1000;
    let mut draw = draws.iter().copied().cycle();
    for s in 0..frames * frame {
        let obs = feed_slot(&mut a, &mut b, s, feed, &mut draw);
        let da = a.step(s, &obs).expect("in order").to_vec();
        let db = b.step(s, &obs).expect("in order").to_vec();
        assert_eq!(da, db, "decisions of slot {s}");
        assert_eq!(a.events(), b.events(), "events of slot {s}");
        apply(&mut a, &mut b, &ops[s as usize % ops.len()], &mut next_task);
        assert_eq!(state(&a), state(&b), "state after slot {s}");
        for c in 0..cpus {
            assert_eq!(
                a.oldest_pending(c),
                b.oldest_pending(c),
                "oldest pending, CPU {c}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn the_event_driven_step_decides_as_the_reference_step(
        cpus in 1..4usize,
        jobs in 1..8u64,
        frames in 2..6u64,
        policy in 0..4usize,
        wcets in proptest::collection::vec(0..20u64, 1..6),
        ops in proptest::collection::vec(op(), 1..40),
        draws in proptest::collection::vec(any::<u64>(), 1..50),
        feed in prop_oneof![Just(Feed::None), Just(Feed::Step), Just(Feed::Late)],
    ) {
        run_frame(cpus, 30, jobs, frames, policy, &wcets, &ops, &draws, feed);
    }
}

/// The bench's shape (many quiet slots), every policy, no arrivals: the same decisions.
#[test]
fn bench_like_plans_decide_the_same_under_every_policy() {
    for policy in 0..4 {
        for feed in [Feed::None, Feed::Step, Feed::Late] {
            run_frame(
                4,
                30,
                6,
                4,
                policy,
                &[7, 3, 11],
                &[Op::Nothing],
                &[2, 3, 7, 2, 2],
                feed,
            );
        }
    }
}

/// One CPU's frame of 20 slots: job 0 released at 0, due at 10; job 1 released at `release_1`,
/// due at 20; two slots of work each. Returns the event-driven planner's decisions and whether
/// it visited the CPU, per slot of `frames` frames, after checking every decision against the
/// reference step's.
fn visits(policy: Policy, release_1: Slot, frames: u64) -> Vec<(Decision, bool)> {
    let jobs = [(0, 10), (release_1, 20)].map(|(release, deadline)| Job {
        task: release as usize,
        instance: 0,
        release,
        deadline,
        wcet: 2,
    });
    let inputs = [CpuInput {
        jobs: jobs.to_vec(),
        has_be: false,
    }];
    let cfg = PlannerConfig {
        policy,
        freqs: super::Freqs::xeon_default(),
        slot_ns: SLOT_NS,
    };
    let mut a = Planner::new(&inputs, 20, cfg.clone());
    let mut b = Planner::new(&inputs, 20, cfg);
    b.set_reference_step(true);
    (0..frames * 20)
        .map(|s| {
            let d = a.step(s, &[]).expect("in order")[0];
            assert_eq!(d, b.step(s, &[]).expect("in order")[0], "slot {s}");
            (d, a.visited().contains(&0))
        })
        .collect()
}

/// A quiet run goes on past what cannot change it (`CpuState::cross_due`): under DPM the idle
/// period after job 0 (slots 2..18: the free rest of job 0's interval and job 1's slack) is one
/// run across job 1's release (slot 5) and the end of job 0's interval (slot 10); under DVFS
/// job 0, stretched over its interval, runs on across job 1's release (slot 3, a later
/// deadline). Each is a slot the step used to visit. The decisions are the reference step's.
#[test]
fn quiet_runs_cross_releases_and_interval_ends_that_cannot_change_them() {
    let dpm = visits(Policy::Dpm, 5, 3);
    for frame in 0..3 {
        let f = frame * 20;
        let idle = |s: u64| matches!(dpm[s as usize].0.run, super::Run::Idle);
        assert!(
            (f + 2..f + 18).all(idle),
            "frame {frame}: {:?}",
            &dpm[f as usize..][..20]
        );
        for s in [f + 5, f + 10] {
            assert!(!dpm[s as usize].1, "DPM visited the CPU in slot {s}");
        }
        assert!(
            dpm[(f + 18) as usize].1,
            "the idle period ends with a visit"
        );
    }
    let dvfs = visits(Policy::Dvfs, 3, 3);
    for frame in 0..3 {
        let s = (frame * 20 + 3) as usize;
        assert_eq!(dvfs[s].0, dvfs[s - 1].0, "job 0 runs on at slot {s}");
        assert!(
            matches!(dvfs[s].0.run, super::Run::Job { task: 0, .. }),
            "{:?}",
            dvfs[s]
        );
        assert!(!dvfs[s].1, "DVFS visited the CPU in slot {s}");
    }
}

/// Bench-shaped CPUs under the DVFS policies, long enough frames for many overlapping jobs
/// (runs that cross releases and the ends of other jobs' intervals, `CpuState::cross_due`):
/// the same decisions, events and states as the reference step, with and without arrivals.
#[test]
fn dvfs_runs_across_releases_and_interval_ends_decide_as_the_reference_step() {
    let firm = Op::Firm {
        wcet: 3,
        rel: 40,
        cpu: 1,
        only: false,
    };
    for policy in [2, 3] {
        for ops in [
            &[Op::Nothing][..],
            &[Op::Nothing, Op::Nothing, firm.clone()],
        ] {
            for wcets in [&[9, 4, 2, 7, 5, 1][..], &[4], &[4, 3]] {
                run_frame(8, 200, 20, 3, policy, wcets, ops, &[1], Feed::None);
            }
        }
    }
}

/// How a sharded step's executor runs the shards (`Planner::step_on`). The core starts no
/// thread: shards on real threads are tested with the edge's `StepPool` (src/planner/pool.rs).
#[derive(Clone, Copy, Debug)]
enum Exec {
    /// In order.
    InOrder,
    /// In reverse order.
    Reversed,
    /// None: `step_on` must run them itself.
    Lazy,
}

impl super::runtime::StepExec for (Exec, std::cell::Cell<usize>) {
    fn run(&self, shards: &mut [super::runtime::Shard<'_>]) {
        self.1.set(self.1.get() + shards.len());
        match self.0 {
            Exec::InOrder => shards.iter_mut().for_each(|s| s.run()),
            Exec::Reversed => shards.iter_mut().rev().for_each(|s| s.run()),
            Exec::Lazy => {}
        }
    }
}

/// A planner whose step is cut into `shards` shards run by `exec`, against one that steps on one
/// thread, on `cpus` CPUs whose releases line up (so that many CPUs are due in a slot), with
/// `ops` between the steps: the same decisions, events, replies and states after every slot.
#[allow(clippy::too_many_arguments)]
fn run_sharded(
    cpus: usize,
    shards: usize,
    exec: Exec,
    policy: usize,
    wcets: &[u64],
    ops: &[Op],
    draws: &[u64],
    feed: Feed,
) {
    let frame = 30;
    let inputs: Vec<CpuInput> = (0..cpus)
        .map(|c| CpuInput {
            jobs: frame_jobs(5, frame, c as u64 % 7 + 1, wcets),
            has_be: c % 2 == 1,
        })
        .collect();
    let cfg = PlannerConfig {
        policy: Policy::ALL[policy],
        freqs: super::Freqs::xeon_default(),
        slot_ns: SLOT_NS,
    };
    let mut a = Planner::new(&inputs, frame, cfg.clone());
    let mut b = Planner::new(&inputs, frame, cfg);
    a.set_step_shards(shards, 48);
    if let Feed::Late = feed {
        a.defer_observations(2);
        b.defer_observations(2);
    }
    let exec = (exec, std::cell::Cell::new(0));
    let mut next_task = 1000;
    let mut draw = draws.iter().copied().cycle();
    for s in 0..3 * frame {
        let obs = feed_slot(&mut a, &mut b, s, feed, &mut draw);
        let da = a.step_on(s, &obs, &exec).expect("in order").to_vec();
        let db = b.step(s, &obs).expect("in order").to_vec();
        assert_eq!(da, db, "decisions of slot {s}");
        assert_eq!(a.events(), b.events(), "events of slot {s}");
        assert_eq!(a.unobserved(), b.unobserved(), "unobserved after slot {s}");
        apply(&mut a, &mut b, &ops[s as usize % ops.len()], &mut next_task);
        if s % 7 == 0 || s % frame == frame - 1 {
            assert_eq!(state(&a), state(&b), "state after slot {s}");
        }
    }
    assert_eq!(state(&a), state(&b), "state at the end");
    let handed = exec.1.get();
    assert!(
        handed >= 2 * shards,
        "the executor was handed {handed} shards: the step was never cut"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The step cut into shards (`Planner::set_step_shards`, `step_on`) decides as one thread.
    #[test]
    fn a_sharded_step_decides_as_one_thread(
        cpus in 48..100usize,
        shards in 2..6usize,
        exec in prop_oneof![Just(Exec::InOrder), Just(Exec::Reversed), Just(Exec::Lazy)],
        policy in 0..4usize,
        wcets in proptest::collection::vec(0..20u64, 1..6),
        ops in proptest::collection::vec(op(), 1..20),
        draws in proptest::collection::vec(any::<u64>(), 1..50),
        feed in prop_oneof![Just(Feed::None), Just(Feed::Step), Just(Feed::Late)],
    ) {
        run_sharded(cpus, shards, exec, policy, &wcets, &ops, &draws, feed);
    }
}

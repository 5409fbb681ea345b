//! The closed loop with late observations (issue 13, item 3): the kernel path learns what a slot
//! did only after it has decided the next `lead` slots, so it defers the reconciliation
//! (`Planner::defer_observations`) and feeds each slot's observation late (`Planner::observe`).
//!
//! Judged against a *reality* written here: every job gets an actual execution time (at most
//! its WCET) drawn when it is first seen; a decided slot runs the job for the slot or until its
//! execution is used up, and that slot's observation says so (`done`). A slot decided for a job
//! that has already completed runs nothing. The guarantee is judged from the reality's ledger,
//! not from the planner's events: every periodic instance and every accepted firm job must have
//! received its actual execution before its deadline.
//!
//! The reality can also take part of a slot from an owner that is ready (the platform: a late
//! wake-up at a job's release, kick latency, a kthread): the observation then says the owner ran
//! less than the slot without completing. The planner gives that work back only from free
//! capacity, so such a loss never makes *another* guaranteed job miss; the job that lost work may
//! miss only if the planner reported it (`JobEvent::Lost`, or a `Miss` when the loss was observed
//! after its deadline).

use proptest::prelude::*;
use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::CpuInput;
use scx_tt::planner::{
    Admission, Freqs, JobEvent, Observation, Placement, Planner, PlannerConfig, Policy, Run,
};
use std::collections::{HashMap, VecDeque};

const SLOT_NS: u64 = 1000;
/// Work units per slot at full speed (`scx_tt::planner::UNIT`).
const UNIT: u64 = 1_000_000;
const FRAME: u64 = 60;
const PERIODS: [u64; 5] = [10, 12, 15, 20, 30];

fn planner(tasks: &[(u64, u64)], policy: Policy) -> Planner {
    let jobs = tasks
        .iter()
        .enumerate()
        .flat_map(|(t, &(period, wcet))| {
            (0..FRAME / period).map(move |k| Job {
                task: t,
                instance: k as u32,
                release: k * period,
                deadline: (k + 1) * period,
                wcet,
            })
        })
        .collect();
    Planner::new(
        &[CpuInput { jobs, has_be: true }],
        FRAME,
        PlannerConfig {
            policy,
            freqs: Freqs::xeon_default(),
            slot_ns: SLOT_NS,
        },
    )
}

/// A small deterministic generator (the reality's draws must not depend on the planner).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Identity of a job in the reality: (task, release) — a periodic instance's release is
/// `⌊s / period⌋ · period` for any slot `s` it runs in (its deadline is the next release); a
/// firm job has a task id of its own.
type Key = (usize, u64);

#[derive(Debug)]
struct RealJob {
    /// Work in units of 10⁻⁶ slot at full speed (the planner's unit: its rounding and the
    /// reality's are then the same).
    need: u64,
    got: u64,
    deadline: u64,
    done_at: Option<u64>,
    /// The platform took part of one of its slots.
    lost: bool,
}

struct Reality {
    periods: Vec<u64>,
    firm: HashMap<usize, (u64, u64)>,
    jobs: HashMap<Key, RealJob>,
    rng: Rng,
    /// Per-mille of jobs that run their whole WCET (the rest run 30–100 % of it).
    full_permille: u64,
    /// Every job runs this percentage of its WCET instead (hand-worked scenarios).
    exec_pct: Option<u64>,
    /// Per-mille of a ready owner's slots of which the platform takes 5-60 %.
    loss_permille: u64,
}

impl Reality {
    fn key(&self, task: usize, slot: u64) -> (Key, u64, u64) {
        if let Some(&(release, deadline)) = self.firm.get(&task) {
            return ((task, release), deadline, 0);
        }
        let p = self.periods[task];
        ((task, slot / p * p), slot / p * p + p, p)
    }

    /// What slot `slot` decided for `task` with WCET `wcet` at `freq_ppm` really did: the job
    /// does `freq · UNIT` units of full-speed work per slot; the observation is wall-clock ns.
    fn run(&mut self, task: usize, wcet: u64, slot: u64, freq_ppm: u32) -> Observation {
        let (key, deadline, _) = self.key(task, slot);
        let full = self.rng.below(1000) < self.full_permille;
        let draw = self.exec_pct.unwrap_or(30 + self.rng.below(71));
        let j = self.jobs.entry(key).or_insert_with(|| RealJob {
            need: if full {
                wcet * UNIT
            } else {
                (wcet * UNIT * draw / 100).max(1)
            },
            got: 0,
            deadline,
            done_at: None,
            lost: false,
        });
        if j.done_at.is_some() {
            return Observation {
                ran_ns: 0,
                done: false,
            };
        }
        // the wall-clock ns the platform leaves the owner in this slot
        let mut supply = SLOT_NS;
        if self.loss_permille > 0 && self.rng.below(1000) < self.loss_permille {
            supply -= SLOT_NS * (5 + self.rng.below(56)) / 100;
            j.lost = true;
        }
        let f = u64::from(freq_ppm);
        let work = (supply * f / SLOT_NS).min(j.need - j.got);
        j.got += work;
        let done = j.got == j.need;
        let ran = if done {
            (work * SLOT_NS).div_ceil(f).min(SLOT_NS)
        } else {
            supply
        };
        if done {
            j.done_at = Some(slot);
        }
        Observation { ran_ns: ran, done }
    }

    /// Every job whose deadline is at most `until` and that the reality did not see completed
    /// before its deadline, except jobs that lost work to the platform and were `reported` by
    /// the planner (`Lost`, or `Miss` when observed after the deadline).
    fn misses(&self, until: u64, reported: &[Key]) -> Vec<String> {
        self.jobs
            .iter()
            .filter(|(_, j)| j.deadline <= until)
            .filter(|(_, j)| j.done_at.is_none_or(|d| d >= j.deadline))
            .filter(|(k, j)| !(j.lost && reported.contains(k)))
            .map(|(k, j)| format!("job {k:?}: {j:?}"))
            .collect()
    }

    /// The reality's key of the job of `task` due at `deadline` (a planner event).
    fn key_due(&self, task: usize, deadline: u64) -> Key {
        match self.firm.get(&task) {
            Some(&(release, _)) => (task, release),
            None => (task, deadline - self.periods[task]),
        }
    }
}

struct Run_ {
    decided: Vec<Run>,
    accepted: usize,
    misses: Vec<String>,
    planner_misses: usize,
    /// `JobEvent::Lost` reports, and the jobs they name.
    lost: usize,
    reported: Vec<Key>,
    unobserved: u64,
}

impl Run_ {
    /// Counts the planner's last events: misses and losses (a job that lost work to the
    /// platform may miss; its `Miss` then counts apart from the guaranteed misses).
    fn tally(&mut self, p: &Planner, reality: &Reality) {
        for &(_, e) in p.events() {
            match e {
                JobEvent::Lost { task, deadline, .. } => {
                    self.lost += 1;
                    self.reported.push(reality.key_due(task, deadline));
                }
                JobEvent::Miss { task, deadline, .. } => {
                    let k = reality.key_due(task, deadline);
                    if reality.jobs.get(&k).is_some_and(|j| j.lost) {
                        self.reported.push(k);
                    } else {
                        self.planner_misses += 1;
                    }
                }
                _ => {}
            }
        }
    }
}

/// Runs `frames` frames with observations delivered `lag` slots late (`None`: the step-by-step
/// protocol, each slot's observation given to the next `step`; `Some(0)`: deferred, observed
/// right after the next step), firm arrivals `(at, wcet, rel_deadline)`, on a platform that
/// takes 5-60 % of `loss_permille` of the ready owners' slots (0: none).
#[allow(clippy::too_many_arguments)]
fn run(
    tasks: &[(u64, u64)],
    policy: Policy,
    lag: Option<u64>,
    arrivals: &[(u64, u64, u64)],
    seed: u64,
    full_permille: u64,
    worst_case: bool,
    loss_permille: u64,
) -> Run_ {
    let mut p = planner(tasks, policy);
    if lag.is_some() {
        p.defer_observations(64);
    }
    let mut reality = Reality {
        periods: tasks.iter().map(|t| t.0).collect(),
        firm: HashMap::new(),
        jobs: HashMap::new(),
        rng: Rng(seed | 1),
        full_permille,
        exec_pct: (seed == 0).then_some(20),
        loss_permille,
    };
    let mut wcet_of: HashMap<usize, u64> = tasks.iter().map(|t| t.1).enumerate().collect();
    let end = 4 * FRAME;
    let mut queue: VecDeque<(u64, Observation)> = VecDeque::new();
    let mut prev: Option<Observation> = None;
    let mut out = Run_ {
        decided: Vec::new(),
        accepted: 0,
        misses: Vec::new(),
        planner_misses: 0,
        lost: 0,
        reported: Vec::new(),
        unobserved: 0,
    };
    for s in 0..end {
        let obs: Vec<Observation> = match (lag, prev.take()) {
            (None, Some(o)) => vec![o],
            _ => vec![],
        };
        let d = p.step(s, &obs).expect("in order")[0];
        out.tally(&p, &reality);
        out.decided.push(d.run);
        let o = match d.run {
            Run::Job { task, .. } => reality.run(task, wcet_of[&task], s, d.freq_ppm),
            _ => Observation {
                ran_ns: 0,
                done: false,
            },
        };
        let o = if worst_case {
            Observation {
                ran_ns: SLOT_NS,
                done: false,
            }
        } else {
            o
        };
        for (i, &(at, wcet, rel)) in arrivals.iter().enumerate() {
            if at != s {
                continue;
            }
            let task = 1000 + i;
            if let Admission::Accepted { bound, .. } =
                p.admit_firm(task, wcet, s + rel, Placement::Only(0))
            {
                out.accepted += 1;
                reality.firm.insert(task, (s + 1, bound));
                wcet_of.insert(task, wcet);
            }
        }
        match lag {
            None => prev = Some(o),
            Some(l) => {
                queue.push_back((s, o));
                while queue.front().is_some_and(|&(t, _)| t + l <= s) {
                    let (t, o) = queue.pop_front().unwrap();
                    p.observe(0, t, o).expect("pending");
                    out.tally(&p, &reality);
                }
            }
        }
    }
    out.misses = reality.misses(end - FRAME, &out.reported);
    out.unobserved = p.unobserved();
    out
}

/// Periodic task sets of one CPU with utilisation at most 1 (EDF-feasible, implicit deadlines).
fn task_set() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((0..PERIODS.len(), 1u64..=4), 1..=4).prop_map(|v| {
        let mut util = 0.0;
        let mut out = Vec::new();
        for (pi, w) in v {
            let p = PERIODS[pi];
            let w = w.min(p);
            if util + w as f64 / p as f64 <= 1.0 {
                util += w as f64 / p as f64;
                out.push((p, w));
            }
        }
        if out.is_empty() {
            out.push((10, 1));
        }
        out
    })
}

fn arrivals() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    prop::collection::vec((0..3 * FRAME, 1u64..=8, 2u64..=40), 0..=12)
}

fn cases() -> u32 {
    std::env::var("SCX_TT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(96)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Deferred observations delivered right after the next step are the step-by-step protocol:
    /// the same decisions and admissions, slot for slot.
    #[test]
    fn deferred_with_no_lag_decides_as_the_step_protocol(
        tasks in task_set(), arr in arrivals(), seed in any::<u64>(),
        policy in prop::sample::select(vec![Policy::Bss, Policy::Dvfs, Policy::Dpm]),
    ) {
        let a = run(&tasks, policy, None, &arr, seed, 200, false, 0);
        let b = run(&tasks, policy, Some(0), &arr, seed, 200, false, 0);
        prop_assert_eq!(&a.decided, &b.decided);
        prop_assert_eq!(a.accepted, b.accepted);
    }

    /// Observations 1–8 slots late never make a guaranteed job miss (judged by the reality's
    /// ledger), whatever the jobs' actual execution, and the planner reports no miss either.
    #[test]
    fn late_observations_never_make_a_guaranteed_job_miss(
        tasks in task_set(), arr in arrivals(), seed in any::<u64>(), lag in 1u64..=8,
        full in prop::sample::select(vec![0u64, 300, 1000]),
        policy in prop::sample::select(vec![Policy::Bss, Policy::Dvfs, Policy::Dpm]),
    ) {
        let r = run(&tasks, policy, Some(lag), &arr, seed, full, false, 0);
        prop_assert!(r.misses.is_empty(), "lag {}: {:?}", lag, r.misses);
        prop_assert_eq!(r.planner_misses, 0);
        prop_assert_eq!(r.unobserved, 0);
    }

    /// A platform that takes 5-60 % of some of a ready owner's slots (observed 0-8 slots late,
    /// or step by step): no job that lost nothing misses (by the reality's ledger), and a job
    /// that lost work and missed was reported by the planner (`Lost`, or `Miss` when the loss
    /// was observed after its deadline). Before the loss was bounded by free capacity, a loss
    /// taken from promised spare capacity made other jobs miss here.
    #[test]
    fn platform_losses_never_make_another_guaranteed_job_miss(
        tasks in task_set(), arr in arrivals(), seed in any::<u64>(),
        lag in prop::option::of(0u64..=8),
        loss in prop::sample::select(vec![30u64, 150, 500]),
        full in prop::sample::select(vec![0u64, 300, 1000]),
        policy in prop::sample::select(vec![Policy::Bss, Policy::Dvfs, Policy::Dpm]),
    ) {
        let r = run(&tasks, policy, lag, &arr, seed | 2, full, false, loss);
        prop_assert!(r.misses.is_empty(), "lag {:?}: {:?}", lag, r.misses);
        prop_assert_eq!(r.planner_misses, 0);
    }
}

/// Hand-worked: one task of 5 slots every 10 (frame 60) whose jobs really take 1 slot (20 %;
/// seed 0 selects it). A firm job of 8 slots due at slot 22, admitted after slot 13 is decided
/// (observations 2 slots late: the planner knows slots up to 10 then): under the worst case
/// instance 1 ran slots 10–13 and holds 1 more, so [14, 20) has 5 free slots and [20, 22) 2
/// (instance 2 runs as late as possible in [20, 30)): 7 < 8, rejected. With the observations,
/// instance 1 completed in slot 10: slots 11–13 are spent, its last slot is freed: 8 ≥ 8,
/// accepted — and the reality sees the firm job complete in time.
#[test]
fn reclaimed_capacity_admits_what_the_worst_case_rejects() {
    let tasks = [(10, 5)];
    let arr = [(13, 8, 9)];
    let worst = run(&tasks, Policy::Bss, Some(2), &arr, 0, 0, true, 0);
    assert_eq!(worst.accepted, 0, "the worst case must reject");
    let closed = run(&tasks, Policy::Bss, Some(2), &arr, 0, 0, false, 0);
    println!(
        "firm 8 slots in 10: worst case accepted {}, with observations {}",
        worst.accepted, closed.accepted
    );
    assert_eq!(closed.accepted, 1, "reclaim must accept");
    assert!(closed.misses.is_empty(), "{:?}", closed.misses);
}

/// A job that completes in its first slot while its next two slots are already decided: the
/// observation voids them (returned to the caller) and frees the rest of its WCET at once.
#[test]
fn completion_voids_the_slots_decided_after_it() {
    let mut p = planner(&[(10, 3)], Policy::Bss);
    p.defer_observations(16);
    for s in 0..3 {
        assert!(matches!(
            p.step(s, &[]).unwrap()[0].run,
            Run::Job { task: 0, .. }
        ));
    }
    let free_before = p.cpus()[0].acceptance(3, 1, 10).available;
    let voided = p
        .observe(
            0,
            0,
            Observation {
                ran_ns: 300,
                done: true,
            },
        )
        .unwrap()
        .to_vec();
    assert_eq!(voided, vec![1, 2]);
    assert!(p
        .events()
        .iter()
        .any(|e| matches!(e.1, JobEvent::Completed { task: 0, .. })));
    // slots 1 and 2 stay spent (their time passes whatever runs); nothing else changes
    let free_after = p.cpus()[0].acceptance(3, 1, 10).available;
    assert_eq!(
        free_after, free_before,
        "the job's 3 slots were all decided"
    );
    // a voided slot's own observation is ignored
    p.observe(
        0,
        1,
        Observation {
            ran_ns: 0,
            done: false,
        },
    )
    .unwrap();
    assert!(p
        .events()
        .iter()
        .all(|e| !matches!(e.1, JobEvent::Miss { .. })));
}

/// An owner that did not run in its slot keeps its work: the job is decided again.
#[test]
fn a_slot_the_owner_did_not_use_is_given_back() {
    let mut p = planner(&[(10, 2)], Policy::Bss);
    p.defer_observations(16);
    let mut ran = Vec::new();
    for s in 0..10 {
        let d = p.step(s, &[]).unwrap()[0];
        if matches!(d.run, Run::Job { .. }) {
            ran.push(s);
        }
        if s == 2 {
            // slot 0's owner was not runnable; slot 1 ran fully
            let z = Observation {
                ran_ns: 0,
                done: false,
            };
            p.observe(0, 0, z).unwrap();
        }
    }
    assert_eq!(
        ran,
        vec![0, 1, 3],
        "slot 0's work is decided again after the observation"
    );
}

/// A loss observed after spare capacity was promised is not taken from that promise. One task
/// of 5 slots every 10 runs slots 0-4; after slot 1 is decided a firm job of 5 slots due at 10
/// takes the interval's last 5 free slots; then slot 0's observation (2 slots late) says the
/// platform took half of it. Giving that half back would need a sixth slot before 10, which
/// only the firm job's promise holds: the periodic job absorbs it (`Lost`, half a slot), the
/// firm job keeps its 5 slots, and no one is reported missing. With free capacity the same loss
/// is given back (`a_slot_the_owner_did_not_use_is_given_back`).
#[test]
fn a_platform_loss_is_not_taken_from_promised_capacity() {
    let mut p = planner(&[(10, 5)], Policy::Bss);
    p.defer_observations(16);
    let mut owners = Vec::new();
    for s in 0..10 {
        let d = p.step(s, &[]).unwrap()[0];
        assert!(
            p.events()
                .iter()
                .all(|e| !matches!(e.1, JobEvent::Miss { .. })),
            "slot {s}: {:?}",
            p.events()
        );
        owners.push(match d.run {
            Run::Job { task, .. } => Some(task),
            _ => None,
        });
        if s == 1 {
            let a = p.admit_firm(7, 5, 10, Placement::Only(0));
            assert!(matches!(a, Admission::Accepted { .. }), "{a:?}");
        }
        if s == 2 {
            let half = Observation {
                ran_ns: SLOT_NS / 2,
                done: false,
            };
            p.observe(0, 0, half).unwrap();
            let lost: Vec<_> = lost_of(&p).iter().map(|&(t, _, u)| (t, u)).collect();
            assert_eq!(lost, vec![(0, 500_000)], "{:?}", p.events());
        }
        if s >= 2 {
            let full = Observation {
                ran_ns: SLOT_NS,
                done: false,
            };
            if s >= 3 {
                p.observe(0, s - 2, full).unwrap();
            }
            assert!(
                p.events()
                    .iter()
                    .all(|e| !matches!(e.1, JobEvent::Miss { .. })),
                "slot {s}: {:?}",
                p.events()
            );
        }
    }
    let firm = owners.iter().filter(|o| **o == Some(7)).count();
    let periodic = owners.iter().filter(|o| **o == Some(0)).count();
    assert_eq!((firm, periodic), (5, 5), "slots 0-9: {owners:?}");
}

/// The `Lost` events of the planner's last call: (task, deadline, units).
fn lost_of(p: &Planner) -> Vec<(usize, u64, u64)> {
    p.events()
        .iter()
        .filter_map(|e| match e.1 {
            JobEvent::Lost {
                task,
                deadline,
                units,
                ..
            } => Some((task, deadline, units)),
            _ => None,
        })
        .collect()
}

/// Observed after its deadline, an unused slot cannot be given back: the loss is reported
/// (`Lost`, not `Miss`: a miss is the planner's own failure).
#[test]
fn work_lost_after_the_deadline_is_reported_lost() {
    let mut p = planner(&[(10, 10)], Policy::Bss);
    p.defer_observations(32);
    for s in 0..12 {
        p.step(s, &[]).unwrap();
    }
    let z = Observation {
        ran_ns: 0,
        done: false,
    };
    p.observe(0, 9, z).unwrap();
    assert!(
        p.events()
            .iter()
            .all(|e| !matches!(e.1, JobEvent::Miss { .. })),
        "{:?}",
        p.events()
    );
    let lost = lost_of(&p);
    assert_eq!(lost, vec![(0, 10, 1_000_000)], "{:?}", p.events());
    // slots 0..9 were reconciled with the worst case on the way (no observation for them)
    assert_eq!(p.unobserved(), 9);
}

#[test]
fn refused_observations_change_nothing() {
    let mut p = planner(&[(10, 2)], Policy::Bss);
    p.defer_observations(4);
    for s in 0..3 {
        p.step(s, &[]).unwrap();
    }
    let o = Observation {
        ran_ns: 0,
        done: true,
    };
    let before = format!("{p:?}");
    assert!(p.observe(1, 0, o).is_err(), "no CPU 1");
    assert!(p.observe(0, 3, o).is_err(), "slot 3 is not decided");
    p.observe(0, 1, o).unwrap();
    let mid = format!("{p:?}");
    assert_ne!(before, mid);
    assert!(
        p.observe(0, 0, o).is_err(),
        "slot 0 was reconciled on the way"
    );
    assert_eq!(mid, format!("{p:?}"));
}

/// Issue 13, item 7 (simulation): the gain of closing the loop. Random task sets (UUniFast
/// utilisations over 2–4 tasks, total 0.4–0.8, periods from `PERIODS`), jobs that run a uniform
/// 30–100 % of their WCET, 12 firm arrivals each (1–8 slots, due in 2–40), observations 2 slots
/// late (the kernel path's lead): the share of firm arrivals accepted with observations beside
/// the worst case (every slot whole, no early completion), same task sets, same arrivals, same
/// draws. The guarantee is judged by the reality's ledger (every periodic instance and every
/// accepted firm job got its actual execution before its deadline), not by the planner.
#[test]
fn closing_the_loop_accepts_more_firm_jobs_and_misses_none() {
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let (mut offered, mut worst_acc, mut closed_acc, mut sets) = (0usize, 0usize, 0usize, 0usize);
    let (mut better, mut worse) = (0usize, 0usize);
    for _ in 0..300 {
        // UUniFast (Bini & Buttazzo): n utilisations summing to `total`
        let n = 2 + rng.below(3) as usize;
        let total = (40 + rng.below(41)) as f64 / 100.0;
        let mut left = total;
        let mut utils = Vec::new();
        for i in 1..n {
            let r = (rng.below(1_000_000) as f64 + 0.5) / 1_000_000.0;
            let next = left * r.powf(1.0 / (n - i) as f64);
            utils.push(left - next);
            left = next;
        }
        utils.push(left);
        let tasks: Vec<(u64, u64)> = utils
            .iter()
            .map(|u| {
                let p = PERIODS[rng.below(PERIODS.len() as u64) as usize];
                (p, ((u * p as f64).round() as u64).clamp(1, p))
            })
            .collect();
        if tasks.iter().map(|&(p, w)| w as f64 / p as f64).sum::<f64>() > 1.0 {
            continue;
        }
        let arr: Vec<(u64, u64, u64)> = (0..12)
            .map(|_| (rng.below(3 * FRAME), 1 + rng.below(8), 2 + rng.below(39)))
            .collect();
        let seed = rng.next() | 2; // never 0 (seed 0 selects the hand-worked 20 % execution)
        let worst = run(&tasks, Policy::Bss, Some(2), &arr, seed, 0, true, 0);
        let closed = run(&tasks, Policy::Bss, Some(2), &arr, seed, 0, false, 0);
        assert!(
            worst.misses.is_empty() && closed.misses.is_empty(),
            "tasks {tasks:?} arrivals {arr:?}: worst case {:?}, closed {:?}",
            worst.misses,
            closed.misses
        );
        assert_eq!(worst.planner_misses + closed.planner_misses, 0);
        sets += 1;
        offered += arr.len();
        worst_acc += worst.accepted;
        closed_acc += closed.accepted;
        better += usize::from(closed.accepted > worst.accepted);
        worse += usize::from(closed.accepted < worst.accepted);
    }
    let pct = |x: usize| 100.0 * x as f64 / offered.max(1) as f64;
    println!(
        "{sets} task sets, {offered} firm arrivals: worst case accepted {worst_acc} ({:.1} %), \
         with observations {closed_acc} ({:.1} %): gain {:+.1} points; more accepted in {better} \
         sets, fewer in {worse}; 0 misses by the reality's ledger",
        pct(worst_acc),
        pct(closed_acc),
        pct(closed_acc) - pct(worst_acc)
    );
    assert!(sets >= 250, "only {sets} task sets were feasible");
    assert!(
        closed_acc > worst_acc,
        "closing the loop must accept more firm jobs ({closed_acc} vs {worst_acc})"
    );
}

/// The VM scenario `planner_loop`'s workload, in simulation: tt-a 7 of every 10 slots, tt-b 2 of
/// every 20, jobs running 30-100 % of their WCET, observations 2 slots late, 16 firm requests
/// of 5 slots due in 10 at every phase of tt-a's period. The host-side counterpart of what that
/// scenario prints (its live runs so far saw no gain; see docs/planner.md).
#[test]
fn the_planner_loop_workload_gains_from_reclaim_in_simulation() {
    let tasks = [(10, 7), (20, 2)];
    let (mut w, mut cl, mut n) = (0, 0, 0);
    for seed in 1..200u64 {
        let arr: Vec<(u64, u64, u64)> = (0..16).map(|k| (20 + k * 13 + seed % 7, 5, 10)).collect();
        let worst = run(&tasks, Policy::Bss, Some(2), &arr, seed * 7919, 0, true, 0);
        let closed = run(&tasks, Policy::Bss, Some(2), &arr, seed * 7919, 0, false, 0);
        assert!(closed.misses.is_empty(), "seed {seed}: {:?}", closed.misses);
        assert!(worst.misses.is_empty(), "seed {seed}: {:?}", worst.misses);
        w += worst.accepted;
        cl += closed.accepted;
        n += arr.len();
    }
    println!(
        "planner_loop's workload: {n} firm requests, worst case accepted {w}, closed loop {cl}"
    );
    assert!(cl > w, "closed {cl} vs worst case {w}");
}

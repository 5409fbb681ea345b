//! Periodic resource interfaces (crates/tt-core/src/planner/interface.rs, `scx_tt plan interface`): the
//! paper's algorithm against an independent brute force, hand-worked examples, the properties
//! the paper states, and the command's exit codes and output.
//!
//! The brute force shares nothing with the module but the task tuple: it simulates the
//! component slot by slot on the worst-case supply pattern and checks every deadline.

mod common;

use common::{run, text};
use scx_tt::plan::gen::SplitMix64;
use scx_tt::planner::interface::{
    max_res_period, min_exec, optimal_interface, schedulable, InterfaceError, Resource, Scheduler,
    Supply, Task, Workload,
};

// ---------------------------------------------------------------------------------------------
// The reference: a slot-by-slot simulation.

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

/// Whether slot `s` is supplied by Γ = (pi, theta) in its worst-case pattern.
/// General: the budget of the period before 0 came as early as possible, every later one as
/// late as possible: nothing in [0, 2d), then theta on, d off, repeating (d = pi − theta).
/// Aligned: periods start at 0 and each budget comes as late as possible: the last theta slots
/// of every period.
fn supplied(aligned: bool, pi: u64, theta: u64, s: u64) -> bool {
    let d = pi - theta;
    if aligned {
        s % pi >= d
    } else {
        s >= 2 * d && (s - 2 * d) % pi < theta
    }
}

/// Run `tasks` (period, wcet) released together at 0 under RM (shorter period first, ties by
/// index) or EDF (earlier absolute deadline first, ties by index) on the supply pattern, and
/// report whether every job completes by its deadline (the next release of its task).
///
/// Why the horizon suffices: at a multiple of the hyperperiod H every task's deadline falls,
/// so a run without a miss carries no backlog there; from τ0 (the first multiple of H after
/// the pattern's transient) the pattern is periodic with pi, so the run from τ0 + lcm(H, pi)
/// is the run from τ0 again. Checking every deadline up to τ0 + lcm(H, pi) checks them all.
fn simulate(tasks: &[(u64, u64)], edf: bool, aligned: bool, pi: u64, theta: u64) -> bool {
    let n = tasks.len();
    let h = tasks.iter().fold(1, |h, &(p, _)| lcm(h, p));
    let transient = if aligned { 0 } else { 2 * (pi - theta) };
    let end = transient.div_ceil(h) * h + lcm(h, pi);
    let mut remaining = vec![0u64; n];
    let mut deadline = vec![0u64; n];
    for s in 0..=end {
        for (i, &(p, e)) in tasks.iter().enumerate() {
            if s % p == 0 {
                if remaining[i] > 0 {
                    return false; // the job due at s is not done
                }
                remaining[i] = e;
                deadline[i] = s + p;
            }
        }
        if s < end && supplied(aligned, pi, theta, s) {
            let ready = (0..n).filter(|&i| remaining[i] > 0);
            let pick = if edf {
                ready.min_by_key(|&i| (deadline[i], i))
            } else {
                ready.min_by_key(|&i| (tasks[i].0, i))
            };
            if let Some(i) = pick {
                remaining[i] -= 1;
            }
        }
    }
    true
}

/// The smallest budget with which the simulation meets every deadline at period `pi`, found by
/// trying 0, 1, 2, ... (None: not even pi).
fn brute_min_budget(tasks: &[(u64, u64)], edf: bool, aligned: bool, pi: u64) -> Option<u64> {
    (0..=pi).find(|&theta| simulate(tasks, edf, aligned, pi, theta))
}

/// The least bandwidth over the given periods, ties to the smaller period.
fn brute_optimum(
    tasks: &[(u64, u64)],
    edf: bool,
    aligned: bool,
    periods: impl Iterator<Item = u64>,
) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    for pi in periods {
        if let Some(theta) = brute_min_budget(tasks, edf, aligned, pi) {
            // theta/pi < b/bp, compared without division
            if best.is_none_or(|(bp, bt)| theta * bp < bt * pi) {
                best = Some((pi, theta));
            }
        }
    }
    best
}

// ---------------------------------------------------------------------------------------------
// Random small workloads.

/// The library's splitmix64 (fully specified: a failure names a reproducible seed).
struct Rng(SplitMix64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed))
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.0.below(hi - lo + 1)
    }
}

/// Largest hyperperiod drawn, to keep the simulation (lcm(H, Π) slots per budget) fast.
const MAX_DRAWN_HYPERPERIOD: u64 = 2520;

/// 1–5 tasks, periods 2..=20, wcets 1..=period (mostly ≤ period/3), U_W ≤ 1, H ≤ 2520
/// (others redrawn).
fn random_workload(rng: &mut Rng) -> Vec<(u64, u64)> {
    loop {
        let n = rng.range(1, 5);
        let tasks: Vec<(u64, u64)> = (0..n)
            .map(|_| {
                let p = rng.range(2, 20);
                // mostly light tasks, so several fit
                let e = if rng.range(0, 3) == 0 {
                    rng.range(1, p)
                } else {
                    rng.range(1, p.div_ceil(3))
                };
                (p, e)
            })
            .collect();
        let h = tasks.iter().fold(1, |h, &(p, _)| lcm(h, p));
        let demand: u64 = tasks.iter().map(|&(p, e)| e * (h / p)).sum();
        if h <= MAX_DRAWN_HYPERPERIOD && demand <= h {
            return tasks;
        }
    }
}

/// Harmonic: p_1 in 2..=6, each next period the previous times 1, 2 or 3.
fn random_harmonic_workload(rng: &mut Rng) -> Vec<(u64, u64)> {
    loop {
        let n = rng.range(1, 4);
        let mut p = rng.range(2, 6);
        let mut tasks = Vec::new();
        for _ in 0..n {
            tasks.push((p, rng.range(1, p.div_ceil(3))));
            p *= rng.range(1, 3);
        }
        let h = tasks.iter().fold(1, |h, &(p, _)| lcm(h, p));
        let demand: u64 = tasks.iter().map(|&(p, e)| e * (h / p)).sum();
        if demand <= h {
            return tasks;
        }
    }
}

fn workload(tasks: &[(u64, u64)]) -> Workload {
    let tasks: Vec<Task> = tasks
        .iter()
        .map(|&(period, wcet)| Task { period, wcet })
        .collect();
    Workload::new(&tasks).expect("valid workload")
}

fn sched(edf: bool) -> Scheduler {
    if edf {
        Scheduler::Edf
    } else {
        Scheduler::Rm
    }
}

fn res(period: u64, budget: u64) -> Resource {
    Resource { period, budget }
}

/// RM-schedulable on a dedicated CPU (else no interface exists; the module says so).
fn rm_feasible(tasks: &[(u64, u64)]) -> bool {
    simulate(tasks, false, false, 1, 1)
}

// ---------------------------------------------------------------------------------------------
// Algorithm 1 against the brute force.

/// Workloads in the comparison, each under RM and EDF (`SCX_TT_INTERFACE_CASES` overrides;
/// the default takes a few seconds in a release build).
fn compared_workloads() -> usize {
    std::env::var("SCX_TT_INTERFACE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

#[test]
fn algorithm_1_finds_the_brute_force_optimum_general_supply() {
    // Property 8. For each workload and scheduler: the brute force tries every period up to
    // max(3·p_n, 2·Π_alg), and for each the budgets 0, 1, 2, ... with the simulation; the
    // least bandwidth it finds (ties to the smaller period) must be Algorithm 1's interface.
    let mut rng = Rng::new(16_001);
    let mut compared = 0;
    let mut beyond_pn = 0;
    let mut rm_skipped = 0;
    let cases = compared_workloads();
    for _ in 0..cases {
        let tasks = random_workload(&mut rng);
        let w = workload(&tasks);
        let pn = tasks.iter().map(|t| t.0).max().expect("tasks");
        for edf in [false, true] {
            if !edf && !rm_feasible(&tasks) {
                assert!(matches!(
                    optimal_interface(&w, Scheduler::Rm, Supply::General),
                    Err(InterfaceError::NotRmSchedulable { .. })
                ));
                rm_skipped += 1;
                continue;
            }
            let got = optimal_interface(&w, sched(edf), Supply::General)
                .unwrap_or_else(|e| panic!("{tasks:?} edf={edf}: {e}"));
            let g = got.resource;
            let bound = (3 * pn).max(2 * g.period);
            let want = brute_optimum(&tasks, edf, false, 1..=bound).expect("Θ = Π passes");
            assert_eq!(
                (g.period, g.budget),
                want,
                "{tasks:?} edf={edf}: Algorithm 1 {g:?}, brute force over 1..={bound} {want:?}"
            );
            compared += 1;
            if g.period > pn {
                beyond_pn += 1;
                assert!(edf, "RM optimum beyond p_n (property 10): {tasks:?} {g:?}");
            }
        }
    }
    eprintln!(
        "{compared} interfaces compared ({rm_skipped} RM sets infeasible even on a dedicated \
         CPU, {beyond_pn} EDF optima beyond p_n)"
    );
    // The default sample exercises both schedulers and the EDF periods beyond p_n (2,000
    // workloads: 3,922 interfaces, 78 RM sets skipped, 58 beyond p_n).
    assert!(compared >= cases, "{compared} compared");
    assert!(rm_skipped < cases / 4);
    assert!(beyond_pn > 0 || cases < 1000);
}

#[test]
fn aligned_search_finds_the_brute_force_optimum_over_the_divisors_of_p1() {
    // The harmonic case (decision 3): the brute force simulates the aligned pattern at every
    // divisor of p_1.
    let mut rng = Rng::new(16_002);
    for _ in 0..1000 {
        let tasks = random_harmonic_workload(&mut rng);
        let w = workload(&tasks);
        let p1 = tasks.iter().map(|t| t.0).min().expect("tasks");
        for edf in [false, true] {
            let got = optimal_interface(&w, sched(edf), Supply::Aligned)
                .unwrap_or_else(|e| panic!("{tasks:?} edf={edf}: {e}"));
            let want = brute_optimum(&tasks, edf, true, (1..=p1).filter(|d| p1 % d == 0))
                .expect("Θ = Π passes");
            assert_eq!(
                (got.resource.period, got.resource.budget),
                want,
                "{tasks:?} edf={edf}"
            );
        }
    }
}

#[test]
fn the_test_agrees_with_the_simulation_at_every_budget() {
    // Property 3, directly: Lemma 1 (RM, ceiling) and the EDF demand test against the
    // simulation, for every Θ at random periods, both supplies (aligned at divisors of p_1).
    let mut rng = Rng::new(16_003);
    let mut checked = 0;
    for _ in 0..500 {
        let tasks = random_workload(&mut rng);
        let w = workload(&tasks);
        let p1 = tasks.iter().map(|t| t.0).min().expect("tasks");
        let harmonic = w.is_harmonic();
        for edf in [false, true] {
            if !edf && !rm_feasible(&tasks) {
                continue;
            }
            for _ in 0..3 {
                let pi = rng.range(1, 24);
                for theta in 0..=pi {
                    let r = res(pi, theta);
                    let test = schedulable(&w, sched(edf), Supply::General, r).expect("test");
                    assert_eq!(
                        test,
                        simulate(&tasks, edf, false, pi, theta),
                        "{tasks:?} edf={edf} Γ={r:?}"
                    );
                    checked += 1;
                }
            }
            if harmonic {
                for pi in (1..=p1).filter(|d| p1 % d == 0) {
                    for theta in 0..=pi {
                        let r = res(pi, theta);
                        let test = schedulable(&w, sched(edf), Supply::Aligned, r).expect("test");
                        assert_eq!(test, simulate(&tasks, edf, true, pi, theta), "{tasks:?}");
                    }
                }
            }
        }
    }
    assert!(checked > 5000, "{checked}");
}

// ---------------------------------------------------------------------------------------------
// Decision 1: the floor request bound accepts what misses.

/// The request bound as the paper prints it: Σ_{k ≤ i} ⌊t/p_k⌋·e_k.
fn rbf_floor(tasks: &[(u64, u64)], rank: usize, t: u64) -> u64 {
    let mut sorted = tasks.to_vec();
    sorted.sort();
    sorted[..=rank].iter().map(|&(p, e)| t / p * e).sum()
}

/// Lemma 1 with the floor (t in (0, p_i], so not even the t = 0 reading is needed).
fn lemma_1_floor(tasks: &[(u64, u64)], r: Resource) -> bool {
    let mut sorted = tasks.to_vec();
    sorted.sort();
    (0..sorted.len())
        .all(|i| (1..=sorted[i].0).any(|t| rbf_floor(tasks, i, t) <= r.sbf(Supply::General, t)))
}

#[test]
fn floor_request_bound_accepts_a_workload_that_misses() {
    // W = {(4, 2), (6, 3)}, U_W = 1, a dedicated CPU. RM: (4, 2) runs [0, 2), (6, 3) runs
    // [2, 4), (4, 2) runs [4, 6): (6, 3) still has 1 slot at its deadline 6.
    let tasks = [(4, 2), (6, 3)];
    let dedicated = res(1, 1);
    assert!(!simulate(&tasks, false, false, 1, 1), "RM misses");
    // Floor: rank 1 at t = 1: ⌊1/4⌋·2 + ⌊1/6⌋·3 = 0 ≤ sbf(1) = 1: accepted.
    assert_eq!(rbf_floor(&tasks, 1, 1), 0);
    assert!(lemma_1_floor(&tasks, dedicated));
    // Ceiling (the module): rbf_1(4) = 2 + 3 = 5 > 4, rbf_1(6) = 4 + 3 = 7 > 6: rejected.
    let w = workload(&tasks);
    assert_eq!(w.rbf(1, 4), 5);
    assert_eq!(w.rbf(1, 6), 7);
    assert_eq!(
        schedulable(&w, Scheduler::Rm, Supply::General, dedicated),
        Ok(false)
    );
    // Worse: with the floor every workload passes with no budget at all, since rbf(t) = 0
    // below p_1. W = {(10, 3)} and Γ = (10, 0):
    assert!(lemma_1_floor(&[(10, 3)], res(10, 0)));
    assert!(!simulate(&[(10, 3)], false, false, 10, 0));
    assert_eq!(
        schedulable(
            &workload(&[(10, 3)]),
            Scheduler::Rm,
            Supply::General,
            res(10, 0)
        ),
        Ok(false)
    );
}

// ---------------------------------------------------------------------------------------------
// Decision 3: the harmonic (aligned) supply bound needs Π to divide the periods.

/// Supply of a period: its budget at the start (early) or the end (late).
fn run_with_placement(
    tasks: &[(u64, u64)],
    pi: u64,
    theta: u64,
    horizon: u64,
    early: impl Fn(u64) -> bool,
) -> bool {
    let (p, e) = tasks[0];
    assert_eq!(tasks.len(), 1, "one task keeps this readable");
    let mut remaining = 0;
    for s in 0..=horizon {
        if s % p == 0 {
            if remaining > 0 {
                return false;
            }
            remaining = e;
        }
        let k = s / pi;
        let off = s % pi;
        let on = if early(k) {
            off < theta
        } else {
            off >= pi - theta
        };
        if on && remaining > 0 {
            remaining -= 1;
        }
    }
    true
}

#[test]
fn harmonic_sbf_with_a_period_not_dividing_the_tasks_is_unsafe() {
    // W = {(8, 1)} (harmonic: one task), Γ = (5, 1) started with it. The aligned bound
    // accepts: sbf(8) = ⌊8/5⌋·1 + max(0, 8 − 4 − 5) = 1 ≥ 1.
    let r = res(5, 1);
    assert_eq!(r.sbf(Supply::Aligned, 8), 1);
    // But the job released at 16 sees period [15, 20) give its slot at 15 (early) and
    // [20, 25) at 24 (late): nothing in [16, 24).
    let late_after_3 = |k: u64| k <= 3;
    assert!(!run_with_placement(&[(8, 1)], 5, 1, 40, late_after_3));
    // The module refuses that period for aligned supply, and under general supply (5, 1)
    // fails: sbf(8) = 0 (blackout 8).
    let w = workload(&[(8, 1)]);
    assert_eq!(
        schedulable(&w, Scheduler::Rm, Supply::Aligned, r),
        Err(InterfaceError::NotAligned { period: 5, p1: 8 })
    );
    assert_eq!(
        schedulable(&w, Scheduler::Rm, Supply::General, r),
        Ok(false)
    );
    // With Π dividing 8, no placement of (4, 1) makes it miss: each job's window holds two
    // whole periods, one slot each. Every early/late choice over 4 periods:
    for mask in 0u64..16 {
        assert!(run_with_placement(&[(8, 1)], 4, 1, 15, |k| mask >> k & 1 == 1));
    }
}

// ---------------------------------------------------------------------------------------------
// The properties the paper states.

#[test]
fn interface_bandwidth_is_at_least_the_utilization() {
    // Property 5: U_Γ ≥ U_W, i.e. the overhead is ≥ 0; under general supply with a blackout
    // (Θ < Π) it is > 0.
    let mut rng = Rng::new(16_004);
    for _ in 0..300 {
        let tasks = random_workload(&mut rng);
        let w = workload(&tasks);
        for edf in [false, true] {
            let Ok(i) = optimal_interface(&w, sched(edf), Supply::General) else {
                continue;
            };
            let u = i.utilization_exact.expect("H ≤ 2520");
            assert!(i.bandwidth >= u, "{tasks:?}");
            assert!(i.overhead >= 0.0);
            if i.resource.budget < i.resource.period {
                assert!(
                    i.bandwidth > u && i.overhead > 0.0,
                    "{tasks:?} {:?}",
                    i.resource
                );
            }
        }
    }
}

#[test]
fn max_res_period_bounds_every_interface_no_wider_than_kappa() {
    // Property 7 (Theorem 1) against the brute force: for a schedulable Γ_c = (Π_c, MinExec)
    // at a random Π_c, every period up to 3·p_n whose brute-force budget gives bandwidth ≤ κ_c
    // lies at or below MaxResPeriod(κ_c), and so does Π_c itself.
    let mut rng = Rng::new(16_005);
    let mut bounded = 0;
    for _ in 0..400 {
        let tasks = random_workload(&mut rng);
        let w = workload(&tasks);
        let pn = tasks.iter().map(|t| t.0).max().expect("tasks");
        for edf in [false, true] {
            if !edf && !rm_feasible(&tasks) {
                continue;
            }
            let table: Vec<(u64, u64)> = (1..=3 * pn)
                .map(|pi| (pi, brute_min_budget(&tasks, edf, false, pi).expect("Θ = Π")))
                .collect();
            let pc = rng.range(1, 3 * pn);
            let gc = res(
                pc,
                min_exec(&w, sched(edf), Supply::General, pc).expect("min exec"),
            );
            assert_eq!(
                gc.budget,
                table[pc as usize - 1].1,
                "{tasks:?} MinExec({pc})"
            );
            let Some(bound) = max_res_period(&w, sched(edf), gc).expect("bound") else {
                assert_eq!(gc.budget, gc.period, "no bound only at bandwidth 1");
                continue;
            };
            assert!(bound >= pc, "{tasks:?} edf={edf} Γ_c={gc:?} bound {bound}");
            for &(pi, theta) in &table {
                if theta * gc.period <= gc.budget * pi {
                    assert!(
                        pi <= bound,
                        "{tasks:?} edf={edf} Γ_c={gc:?}: ({pi}, {theta})"
                    );
                }
            }
            bounded += 1;
        }
    }
    assert!(bounded > 500, "{bounded}");
}

#[test]
fn aligned_supply_never_needs_more_budget_at_the_same_period() {
    // Property 9, the precise form of "an interface computed assuming a harmonic workload has
    // a smaller (possibly zero) overhead": for harmonic W and every Π dividing p_1,
    // MinExec_aligned(Π) ≤ MinExec_general(Π); so the aligned interface's overhead is at most
    // that of the general interface at any such period (sbf_aligned ≥ sbf_general pointwise).
    let mut rng = Rng::new(16_006);
    let mut strictly_smaller = 0;
    for _ in 0..200 {
        let tasks = random_harmonic_workload(&mut rng);
        let w = workload(&tasks);
        let p1 = tasks.iter().map(|t| t.0).min().expect("tasks");
        for edf in [false, true] {
            for pi in (1..=p1).filter(|d| p1 % d == 0) {
                let a = min_exec(&w, sched(edf), Supply::Aligned, pi).expect("aligned");
                let g = min_exec(&w, sched(edf), Supply::General, pi).expect("general");
                assert!(
                    a <= g,
                    "{tasks:?} edf={edf} Π={pi}: aligned {a} > general {g}"
                );
                strictly_smaller += usize::from(a < g);
            }
            let aligned = optimal_interface(&w, sched(edf), Supply::Aligned).expect("aligned");
            let at_p1 = min_exec(&w, sched(edf), Supply::General, p1).expect("general");
            assert!(aligned.resource.budget * p1 <= at_p1 * aligned.resource.period);
        }
    }
    assert!(strictly_smaller > 0);
}

#[test]
fn aligned_optimum_can_exceed_the_general_optimum() {
    // What property 9 does not say. W = {(5, 1), (15, 1)}, RM, U_W = 4/15.
    // Aligned periods divide 5: Π = 5 needs sbf(5) ≥ 1 and rbf_1 ≤ sbf at 5, 10 or 15
    // (rbf_1 = 2, 3, 4): Θ = 1 gives sbf = 1, 2, 3: fails; Θ = 2: sbf(5) = 2 ≥ 2. → 2/5.
    // General supply may use Π = 3: Θ = 1, d = 2, blackout 4: sbf(5) = 1 ≥ 1 and
    // sbf(15) = 4 ≥ rbf_1(15) = 4. → 1/3 < 2/5.
    let w = workload(&[(5, 1), (15, 1)]);
    let a = optimal_interface(&w, Scheduler::Rm, Supply::Aligned).expect("aligned");
    let g = optimal_interface(&w, Scheduler::Rm, Supply::General).expect("general");
    assert_eq!(a.resource, res(5, 2));
    assert_eq!(g.resource, res(3, 1));
    assert!(simulate(&[(5, 1), (15, 1)], false, false, 3, 1));
}

#[test]
fn hand_worked_rm_interface_of_two_tasks() {
    // W = {(5, 1), (10, 2)}, RM, U_W = 2/5. Scheduling points: S_0 = {5}, S_1 = {5, 10};
    // rbf_0(5) = 1, rbf_1(5) = 1 + 2 = 3, rbf_1(10) = 2 + 2 = 4.
    // Π = 3, Θ = 2 (d = 1, blackout 2, then 2 on 1 off): sbf(5) = 2 + max(0, 5 − 2 − 3)
    // = 2 (y = ⌊4/3⌋ = 1), sbf(10) = 6 (y = 3: 6 + max(0, 10 − 2 − 9) = 6).
    // Rank 0: 1 ≤ 2. Rank 1: 3 > 2 at 5, but 4 ≤ 6 at 10. Passes, bandwidth 2/3.
    // Θ = 1 (d = 2, blackout 4): sbf(5) = 1 (y = 1: 1 + max(0, 5 − 4 − 3)), sbf(10) = 2
    // (y = ⌊8/3⌋ = 2: 2 + max(0, 10 − 4 − 6)): rank 1 fails (3 > 1, 4 > 2).
    let w = workload(&[(5, 1), (10, 2)]);
    assert_eq!(res(3, 2).sbf(Supply::General, 5), 2);
    assert_eq!(res(3, 2).sbf(Supply::General, 10), 6);
    assert_eq!(res(3, 1).sbf(Supply::General, 10), 2);
    assert_eq!(min_exec(&w, Scheduler::Rm, Supply::General, 3), Ok(2));
    // Π = 5, Θ = 3 (d = 2, blackout 4): sbf(5) = 1, sbf(10) = 3 + max(0, 10 − 4 − 5) = 4:
    // rank 0 passes at 5, rank 1 at 10 (4 ≤ 4). Θ = 2 (blackout 6): sbf(10) = 2 < 4 and
    // sbf(5) = 0: fails. Bandwidth 3/5.
    assert_eq!(min_exec(&w, Scheduler::Rm, Supply::General, 5), Ok(3));
    // Π = 2, Θ = 1 (blackout 2, then 1 on 1 off): sbf(5) = 2 ≥ 1, sbf(10) = 4 ≥ 4: 1/2.
    // Π = 4, Θ = 2 (blackout 4): sbf(5) = 1, sbf(10) = 2·2 + max(0, 10 − 4 − 8) = 4: 1/2,
    // tied with (2, 1): the smaller period wins (decision 4). Bandwidth 2/5 = U_W would need
    // no blackout (property 5), and the brute force finds nothing between 2/5 and 1/2.
    assert_eq!(min_exec(&w, Scheduler::Rm, Supply::General, 4), Ok(2));
    let i = optimal_interface(&w, Scheduler::Rm, Supply::General).expect("interface");
    assert_eq!(i.resource, res(2, 1));
    assert!((i.overhead - 0.1).abs() < 1e-12);
    assert_eq!(
        brute_optimum(&[(5, 1), (10, 2)], false, false, 1..=30),
        Some((2, 1))
    );
}

#[test]
fn hand_worked_edf_interface_of_two_tasks() {
    // W = {(3, 1), (4, 1)}, EDF, U_W = 7/12. dbf(3) = 1, dbf(4) = 2, dbf(6) = 3, dbf(8) = 4,
    // dbf(9) = 5, dbf(12) = 7.
    // Γ = (3, 2): d = 1, blackout 2, then 2 on 1 off: sbf(3) = 1, sbf(4) = 2, sbf(6) = 3,
    // sbf(8) = 4, sbf(9) = 5, sbf(12) = 7: every deadline met, tight at 3, 4, 6, 8, 9, 12.
    // κ = 2/3 > 7/12, horizon ⌈2·1·(2/3) / (2/3 − 7/12)⌉ = 16: dbf(15) = 8 ≤ sbf(15) = 9,
    // dbf(16) = 9 ≤ sbf(16) = 10.
    let w = workload(&[(3, 1), (4, 1)]);
    let r = res(3, 2);
    for (t, dbf, sbf) in [
        (3, 1, 1),
        (4, 2, 2),
        (6, 3, 3),
        (8, 4, 4),
        (9, 5, 5),
        (12, 7, 7),
    ] {
        assert_eq!(w.dbf(t), dbf, "dbf({t})");
        assert_eq!(r.sbf(Supply::General, t), sbf, "sbf({t})");
    }
    assert_eq!(
        schedulable(&w, Scheduler::Edf, Supply::General, r),
        Ok(true)
    );
    // Θ = 1 would leave sbf(3) = 0 < 1.
    assert_eq!(min_exec(&w, Scheduler::Edf, Supply::General, 3), Ok(2));
    let i = optimal_interface(&w, Scheduler::Edf, Supply::General).expect("interface");
    assert_eq!(
        Some((i.resource.period, i.resource.budget)),
        brute_optimum(&[(3, 1), (4, 1)], true, false, 1..=40)
    );
}

#[test]
fn critical_points_are_where_one_slot_less_fails() {
    // The reported points hold the values of the bounds, pass under Γ and fail under
    // (Π, Θ − 1); RM lists one per binding task (there is always one, as Θ − 1 fails).
    let mut rng = Rng::new(16_007);
    let mut edf_empty_unforced = 0;
    for _ in 0..400 {
        let tasks = random_workload(&mut rng);
        let w = workload(&tasks);
        for edf in [false, true] {
            let Ok(i) = optimal_interface(&w, sched(edf), Supply::General) else {
                continue;
            };
            let (g, supply) = (i.resource, Supply::General);
            let lower = res(g.period, g.budget - 1);
            if !edf {
                assert!(!i.critical_points.is_empty(), "{tasks:?}");
            } else if i.critical_points.is_empty() && !i.forced_by_utilization {
                edf_empty_unforced += 1;
            }
            for c in &i.critical_points {
                let demand = match c.task {
                    Some(k) => {
                        let rank = w.rm_order().iter().position(|&x| x == k).expect("rank");
                        w.rbf(rank, c.t)
                    }
                    None => w.dbf(c.t),
                };
                assert_eq!(u128::from(c.demand), demand, "{tasks:?} {c:?}");
                assert_eq!(c.supply, g.sbf(supply, c.t));
                assert!(c.demand <= c.supply);
                assert!(c.demand > lower.sbf(supply, c.t), "{tasks:?} {c:?}");
                assert_eq!(c.task.is_some(), !edf);
            }
        }
    }
    assert_eq!(edf_empty_unforced, 0);
}

// ---------------------------------------------------------------------------------------------
// Edges: no wrap, no panic, a clear error.

#[test]
fn edge_inputs_give_errors_not_wraps() {
    let t = |period, wcet| Task { period, wcet };
    assert!(matches!(
        Workload::new(&[t(u64::MAX, u64::MAX)]),
        Err(InterfaceError::PeriodTooLarge { .. })
    ));
    // The largest accepted period with full utilization: bandwidth 1, answered at once.
    let p = u64::from(u32::MAX);
    let w = Workload::new(&[t(p, p)]).expect("valid");
    let i = optimal_interface(&w, Scheduler::Edf, Supply::General).expect("interface");
    assert_eq!(i.resource, res(1, 1));
    // Two huge coprime periods: hyperperiod ~2^64 fits, U_W exact.
    let w = Workload::new(&[t(p, 1), t(p - 1, 1)]).expect("valid");
    assert!(w.utilization().expect("H < 2^64").to_f64() < 1e-9);
    // Searching it is refused by a cap, not by an overflow.
    for s in [Scheduler::Rm, Scheduler::Edf] {
        let e = optimal_interface(&w, s, Supply::General).unwrap_err();
        assert!(
            matches!(
                e,
                InterfaceError::WorkCap { .. } | InterfaceError::TooManyTestPoints { .. }
            ),
            "{e}"
        );
    }
    // Resources at the edge: the test answers exactly.
    let w = Workload::new(&[t(p, 1)]).expect("valid");
    assert_eq!(
        schedulable(&w, Scheduler::Edf, Supply::General, res(p, p / 2 + 1)),
        Ok(true)
    );
    assert_eq!(
        schedulable(&w, Scheduler::Edf, Supply::General, res(p, p / 2)),
        Ok(false)
    );
}

// ---------------------------------------------------------------------------------------------
// The command.

#[test]
fn plan_interface_prints_the_interface() {
    let out = run(&["plan", "interface", "--tasks", "5,1;10,2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.contains("interface Γ = (period 2, budget 1) slots"),
        "{s}"
    );
    assert!(s.contains("bandwidth U_Γ = Θ/Π = 0.500000 (1/2)"), "{s}");
    assert!(s.contains("U_W = 0.400000 (2/5)"), "{s}");
    assert!(s.contains("overhead U_Γ − U_W = 0.100000"), "{s}");
    assert!(s.contains("critical points"), "{s}");
}

#[test]
fn plan_interface_json_has_the_fields() {
    let out = run(&[
        "plan",
        "interface",
        "--tasks",
        "3,1;4,1",
        "--scheduler",
        "edf",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let w = workload(&[(3, 1), (4, 1)]);
    let i = optimal_interface(&w, Scheduler::Edf, Supply::General).expect("interface");
    assert_eq!(v["period"], i.resource.period);
    assert_eq!(v["budget"], i.resource.budget);
    assert_eq!(v["scheduler"], "edf");
    assert_eq!(v["supply"], "general");
    assert_eq!(v["utilization_exact"], "7/12");
    assert!(v["overhead"].as_f64().expect("overhead") > 0.0);
    assert!(v["critical_points"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    assert_eq!(v["tasks"][1]["wcet"], 1);
}

#[test]
fn plan_interface_refuses_bad_input_with_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--tasks", ""], "tasks: empty"),
        (
            &["--tasks", "10,2;0,1"],
            "tasks[1].period = 0: must be at least 1 slot",
        ),
        (
            &["--tasks", "5,7"],
            "tasks[0].wcet = 7: exceeds the period 5",
        ),
        (
            &["--tasks", "5,x"],
            "tasks[0].wcet = \"x\": not a whole number",
        ),
        (
            &["--tasks", "5;6"],
            "tasks[0] = \"5\": expected \"period,wcet\"",
        ),
        (
            &["--tasks", "99999999999999999999,1"],
            "tasks[0].period = \"99999999999999999999\": not a whole number",
        ),
        (
            &["--tasks", "8589934592,1"],
            "above the cap of 4294967295 slots",
        ),
        (&["--tasks", "2,1;3,2"], "utilization U_W = 7/6 > 1"),
        (
            &["--tasks", "4,2;6,3"],
            "not RM-schedulable even on a dedicated CPU",
        ),
        (
            &["--tasks", "4,1;6,1", "--supply", "aligned"],
            "do not divide each other",
        ),
        (
            &["--tasks", "4,1", "--scheduler", "fifo"],
            "not a scheduler",
        ),
        (&["--tasks", "2,1;4194304,1"], "scheduling points"),
    ];
    for (args, want) in cases {
        let mut all = vec!["plan", "interface"];
        all.extend_from_slice(args);
        let out = run(&all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // EDF accepts the RM-infeasible set (U_W = 1): bandwidth 1.
    let out = run(&[
        "plan",
        "interface",
        "--tasks",
        "4,2;6,3",
        "--scheduler",
        "edf",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

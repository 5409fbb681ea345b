//! Seed 001's server designs on a slot table (crates/tt-core/src/sim/servers.rs, docs/servers.md): the
//! simulator against an independent tick-by-tick brute force, a hand-worked example where the
//! designs differ, the guarantee (Lemma 1 + the EDF table + the simulator: no job of a
//! component whose interface comes from Algorithm 1 ever misses, under any design and any
//! ETF ≤ 1), crps never behind ptps, and `scx_tt simulate --server/--etf`.
//!
//! The brute force shares only the input types with the module: it walks every tick, finds the
//! current window of each component by scanning its windows, keeps the wcps-paper budgets in a
//! map keyed by (frame, window), and applies the rules of docs/servers.md in its own words.

mod common;

use common::scx_tt;
use proptest::prelude::*;
use scx_tt::planner::interface::{optimal_interface, Resource, Scheduler, Supply, Task, Workload};
use scx_tt::sim::servers::{
    self, server_table, Component, Config, Design, Exec, LocalTask, ServerReport, TableKind,
    Window, DESIGNS,
};
use std::collections::HashMap;

// ---------------------------------------------------------------------------------------------
// The reference: one tick at a time.

/// Per task (component-major order) every judged job's response/deadline in release order;
/// the CPU's (owner, reclaimed, be, idle) ticks; per component (ran_own, ran_reclaimed, given,
/// unused).
#[derive(Debug, PartialEq)]
struct Reference {
    ratios: Vec<Vec<f64>>,
    misses: Vec<u64>,
    time: [u64; 4],
    comps: Vec<[u64; 4]>,
}

/// The wcps-paper budget of component `c`'s window at slot `s` (filled on first use), if `s`
/// is in one of its windows.
fn budget_of<'a>(
    budget: &'a mut HashMap<(usize, u64, usize), u64>,
    comps: &[Component],
    f: u64,
    tps: u64,
    c: usize,
    s: u64,
) -> Option<&'a mut u64> {
    let at = s % f;
    let i = comps[c]
        .windows
        .iter()
        .position(|w| w.release <= at && at < w.deadline)?;
    Some(
        budget
            .entry((c, s / f, i))
            .or_insert(comps[c].windows[i].budget * tps),
    )
}

fn reference(
    table: &[Option<usize>],
    comps: &[Component],
    tps: u64,
    slots: u64,
    design: Design,
    be: bool,
) -> Reference {
    let f = table.len() as u64;
    // tasks: (component, period, wcet ticks, queue of (release tick, left))
    struct T {
        comp: usize,
        period: u64,
        exec: u64,
        queue: Vec<(u64, u64)>,
        ratios: Vec<f64>,
        misses: u64,
    }
    let mut tasks: Vec<T> = Vec::new();
    for (c, comp) in comps.iter().enumerate() {
        let factor = match comp.exec {
            Exec::Factor(x) => x,
            Exec::Uniform { .. } => panic!("the reference takes fixed factors only"),
        };
        for t in &comp.tasks {
            let w = t.wcet * tps;
            let exec = ((factor * w as f64).ceil() as u64).clamp(1, w);
            tasks.push(T {
                comp: c,
                period: t.period,
                exec,
                queue: Vec::new(),
                ratios: Vec::new(),
                misses: 0,
            });
        }
    }
    // current window of component c at slot s: (frame number, window index)
    let window = |c: usize, s: u64| -> Option<(u64, usize)> {
        let at = s % f;
        comps[c]
            .windows
            .iter()
            .position(|w| w.release <= at && at < w.deadline)
            .map(|i| (s / f, i))
    };
    let mut budget: HashMap<(usize, u64, usize), u64> = HashMap::new();
    let mut time = [0u64; 4];
    let mut per = vec![[0u64; 4]; comps.len()];
    // the job a component runs: the index of the task
    let job_of = |tasks: &[T], c: usize| -> Option<usize> {
        let mine = (0..tasks.len()).filter(|&i| tasks[i].comp == c && !tasks[i].queue.is_empty());
        match comps[c].scheduler {
            Scheduler::Rm => mine.min_by_key(|&i| (tasks[i].period, i)),
            Scheduler::Edf => {
                mine.min_by_key(|&i| (tasks[i].queue[0].0 + tasks[i].period * tps, i))
            }
        }
    };
    for tick in 0..slots * tps {
        let s = tick / tps;
        if tick % tps == 0 {
            for t in tasks.iter_mut() {
                if s.is_multiple_of(t.period) {
                    t.queue.push((tick, t.exec));
                }
            }
        }
        // wcps-paper budget left (read only: a window not yet touched is full)
        let left = |budget: &HashMap<(usize, u64, usize), u64>, c: usize| -> u64 {
            window(c, s).map_or(0, |(fr, i)| {
                budget
                    .get(&(c, fr, i))
                    .copied()
                    .unwrap_or(comps[c].windows[i].budget * tps)
            })
        };
        let busy = |c: usize| comps[c].opaque || job_of(&tasks, c).is_some();
        let owner = table[(s % f) as usize];
        // who runs this tick: Some(component) or None (be or idle)
        let runner: Option<usize> = match owner {
            None => None,
            Some(o) => {
                let o_ok = busy(o)
                    && (design != Design::WcpsPaper || comps[o].opaque || left(&budget, o) > 0);
                if o_ok {
                    Some(o)
                } else {
                    match design {
                        Design::Ptps | Design::Wcps => None,
                        Design::Crps => (0..comps.len())
                            .filter(|&c| c != o && !comps[c].opaque && busy(c))
                            .filter_map(|c| {
                                let (fr, i) = window(c, s)?;
                                Some((fr * f + comps[c].windows[i].deadline, c))
                            })
                            .min()
                            .map(|(_, c)| c),
                        Design::WcpsPaper => (0..comps.len())
                            .filter(|&c| {
                                (comps[c].period, c) > (comps[o].period, o)
                                    && !comps[c].opaque
                                    && busy(c)
                                    && left(&budget, c) > 0
                            })
                            .min_by_key(|&c| (comps[c].period, c)),
                    }
                }
            }
        };
        if design == Design::WcpsPaper {
            if let Some(c) = runner.filter(|&c| Some(c) != owner) {
                *budget_of(&mut budget, comps, f, tps, c, s).expect("a reclaimer has a window") -=
                    1;
            }
            if let Some(o) = owner {
                if let Some(b) = budget_of(&mut budget, comps, f, tps, o, s) {
                    *b = b.saturating_sub(1);
                }
            }
        }
        match (runner, owner) {
            (Some(c), Some(o)) => {
                if c == o {
                    time[0] += 1;
                    per[c][0] += 1;
                } else {
                    time[1] += 1;
                    per[c][1] += 1;
                    per[o][2] += 1;
                }
                if !comps[c].opaque {
                    let i = job_of(&tasks, c).expect("busy");
                    let t = &mut tasks[i];
                    t.queue[0].1 -= 1;
                    if t.queue[0].1 == 0 {
                        let (release, _) = t.queue.remove(0);
                        let finish = tick + 1;
                        let d = t.period * tps;
                        if finish > release + d {
                            t.misses += 1;
                        }
                        t.ratios.push((finish - release) as f64 / d as f64);
                    }
                }
            }
            (None, o) => {
                let to_be = be && (o.is_none() || design != Design::Ptps);
                time[if to_be { 2 } else { 3 }] += 1;
                if let Some(o) = o {
                    per[o][3] += 1;
                }
            }
            (Some(_), None) => unreachable!(),
        }
    }
    let end = slots * tps;
    for t in tasks.iter_mut() {
        let d = t.period * tps;
        for &(release, _) in &t.queue {
            if release + d <= end {
                t.misses += 1;
                t.ratios.push((end - release) as f64 / d as f64);
            }
        }
    }
    Reference {
        ratios: tasks.iter().map(|t| t.ratios.clone()).collect(),
        misses: tasks.iter().map(|t| t.misses).collect(),
        time,
        comps: per,
    }
}

fn of_report(r: &ServerReport) -> Reference {
    Reference {
        ratios: r
            .components
            .iter()
            .flat_map(|c| c.tasks.iter().map(|t| t.ratios.clone()))
            .collect(),
        misses: r
            .components
            .iter()
            .flat_map(|c| c.tasks.iter().map(|t| t.misses))
            .collect(),
        time: [r.time.owner, r.time.reclaimed, r.time.be, r.time.idle],
        comps: r
            .components
            .iter()
            .map(|c| [c.ran_own, c.ran_reclaimed, c.given, c.unused])
            .collect(),
    }
}

fn task(period: u64, wcet: u64) -> LocalTask {
    LocalTask {
        name: format!("({period},{wcet})"),
        period,
        wcet,
    }
}

fn run(
    table: &[Option<usize>],
    comps: &[Component],
    tps: u64,
    slots: u64,
    design: Design,
    be: bool,
) -> ServerReport {
    servers::simulate(&Config {
        table,
        components: comps,
        ticks_per_slot: tps,
        slots,
        design,
        be,
        seed: 7,
    })
    .expect("a valid run")
}

// ---------------------------------------------------------------------------------------------
// Hand-worked: two components, one slot each in turn.

/// A: Γ = (2, 1), workload {(4, 1)}; B: Γ = (4, 2), workload {(4, 3)}; table A B A B (frame 4),
/// 8 slots, ETF 1. A needs 1 slot in 4 and owns 2: one of its slots in each 4 is unused. B needs
/// 3 and owns 2: its interface is too small (an overloaded component).
fn hand_example() -> (Vec<Option<usize>>, Vec<Component>) {
    let table = vec![Some(0), Some(1), Some(0), Some(1)];
    let comps = vec![
        Component::with_interface(
            "a",
            Scheduler::Rm,
            vec![task(4, 1)],
            Resource {
                period: 2,
                budget: 1,
            },
            4,
            Exec::Factor(1.0),
        ),
        Component::with_interface(
            "b",
            Scheduler::Rm,
            vec![task(4, 3)],
            Resource {
                period: 4,
                budget: 2,
            },
            4,
            Exec::Factor(1.0),
        ),
    ];
    (table, comps)
}

#[test]
fn hand_worked_two_components_ptps_wcps_crps_and_the_papers_wcps_differ_as_predicted() {
    let (table, comps) = hand_example();
    for tps in [1, 10] {
        let r = |d| run(&table, &comps, tps, 8, d, true);
        // ptps. slot 0 A runs A0 (done at 1: 1/4). slot 1 B runs B0 (3 -> 2 left). slot 2 is
        // A's, A has nothing: idle. slot 3 B (1 left). At 4 B0 is late and runs on; A1 and B1
        // are released. slot 4 A1 (done at 5: 1/4). slot 5 B0 done at 6: (6 - 0)/4 = 1.5, a
        // miss. slot 6 idle. slot 7 B1 (3 -> 2). At 8 B1 is due and unfinished: a miss, its
        // response taken as 8 - 4 = 4: 1.0. Time: owner 6 slots, idle 2.
        let p = r(Design::Ptps);
        assert_eq!(p.components[0].tasks[0].ratios, vec![0.25, 0.25]);
        assert_eq!(p.components[1].tasks[0].ratios, vec![1.5, 1.0]);
        assert_eq!((p.components[0].misses, p.components[1].misses), (0, 2));
        assert_eq!(
            (p.time.owner, p.time.idle, p.time.be),
            (6 * tps, 2 * tps, 0)
        );
        // wcps (scx_tt): the same for A and B; slots 2 and 6 go to be work.
        let w = r(Design::Wcps);
        assert_eq!(w.components, p.components);
        assert_eq!(
            (w.time.owner, w.time.be, w.time.idle),
            (6 * tps, 2 * tps, 0)
        );
        // crps: in slot 2 B (window [0, 4), work left) reclaims A's slot: B0 runs slots 1, 2,
        // 3 and is done at 4 = its deadline: 4/4 = 1.0, no miss. B1 likewise in 5, 6, 7: done
        // at 8: 1.0. B's own slots are not charged for slot 2: 2 owner + 1 reclaimed each
        // period. Time: owner 6, reclaimed 2.
        let c = r(Design::Crps);
        assert_eq!(c.components[0].tasks[0].ratios, vec![0.25, 0.25]);
        assert_eq!(c.components[1].tasks[0].ratios, vec![1.0, 1.0]);
        assert_eq!(c.misses, 0);
        assert_eq!(
            (c.time.owner, c.time.reclaimed, c.time.be),
            (6 * tps, 2 * tps, 0)
        );
        assert_eq!(c.components[0].given, 2 * tps);
        // wcps-paper: A (Π 2) has priority over B (Π 4); budgets A 1 per [2k, 2k + 2), B 2 per
        // [4k, 4k + 4). slot 0: A0 runs (A's budget 1 -> 0). slot 1: B0 runs (B's budget
        // 2 -> 1; B0 3 -> 2 left). slot 2: A is idle with budget 1; B is of lower priority, has
        // work and budget 1: B0 runs (2 -> 1 left), B's budget 1 -> 0, A's 1 -> 0. slot 3: B's
        // own slot, but its budget is spent: B may not run, nobody is below B: be work. At 4 B0
        // is late (1 left) and runs on. slot 4: A1. slot 5: B's new window (budget 2): B0 done
        // at 6: 1.5, a miss (budget 1 left). slot 6: A idle, B reclaims for B1 (3 -> 2 left),
        // budget 0. slot 7: be again. B1 unfinished at 8: a miss, 1.0. The same misses as
        // ptps: B spends its budget earlier, not more of it. Time: owner 4, reclaimed 2, be 2.
        let x = r(Design::WcpsPaper);
        assert_eq!(x.components[1].tasks[0].ratios, vec![1.5, 1.0]);
        assert_eq!(x.components[1].misses, 2);
        assert_eq!(
            (x.time.owner, x.time.reclaimed, x.time.be),
            (4 * tps, 2 * tps, 2 * tps)
        );
        // and the brute force agrees on every design
        for d in DESIGNS {
            assert_eq!(
                of_report(&r(d)),
                reference(&table, &comps, tps, 8, d, true),
                "{d}"
            );
        }
    }
}

#[test]
fn when_every_owner_uses_all_its_slots_every_design_gives_the_same_results() {
    // Each component is one task (Π, Θ) under Γ = (Π, Θ): the EDF table gives its job exactly
    // its Θ slots in [kΠ, (k+1)Π), so at ETF 1 no slot is ever unused and no design has
    // anything to hand out.
    let gammas = [(4, 1), (6, 2), (12, 3)];
    let servers: Vec<Resource> = gammas
        .iter()
        .map(|&(period, budget)| Resource { period, budget })
        .collect();
    let t = server_table(&servers, 48).expect("table");
    assert_eq!(
        (t.kind, t.repeats, t.table.len()),
        (TableKind::Edf, true, 12)
    );
    let comps: Vec<Component> = gammas
        .iter()
        .enumerate()
        .map(|(i, &(p, e))| Component {
            name: format!("c{i}"),
            scheduler: Scheduler::Rm,
            tasks: vec![task(p, e)],
            opaque: false,
            windows: t.windows[i].clone(),
            period: p,
            exec: Exec::Factor(1.0),
        })
        .collect();
    let base = run(&t.table, &comps, 1, 48, Design::Ptps, false);
    assert_eq!(base.misses, 0);
    assert_eq!(base.time.reclaimed, 0);
    for d in DESIGNS {
        let r = run(&t.table, &comps, 1, 48, d, false);
        assert_eq!(r.components, base.components, "{d}");
        assert_eq!(r.time, base.time, "{d}");
        assert_eq!(of_report(&r), reference(&t.table, &comps, 1, 48, d, false));
    }
}

// ---------------------------------------------------------------------------------------------
// Random inputs.

/// A random CPU: frame F, components whose windows are [kΠ, kΠ + D) with Π dividing F and
/// 1 ≤ D ≤ Π (gaps between windows when D < Π: no current server job there), budget
/// Θ ≤ D; each slot owned by a random component whose window covers it, or free; local tasks;
/// a fixed ETF.
fn arb_cpu() -> impl Strategy<Value = (Vec<Option<usize>>, Vec<Component>)> {
    let frames = prop::sample::select(vec![4u64, 6, 8, 12]);
    (frames, 1usize..=3).prop_flat_map(|(f, n)| {
        let divisors: Vec<u64> = (1..=f).filter(|d| f % d == 0).collect();
        let comp = (
            prop::sample::select(divisors),
            1u64..=12,
            0u64..=12,
            prop::collection::vec((1u64..=9, 1u64..=9), 0..=3),
            prop::bool::weighted(0.6),
            prop::bool::weighted(0.1),
            prop::sample::select(vec![1.0, 0.77, 0.5, 0.2]),
        );
        (
            prop::collection::vec(comp, n),
            prop::collection::vec(prop::option::weighted(0.85, 0usize..6), f as usize),
        )
            .prop_map(move |(cs, picks)| {
                let comps: Vec<Component> = cs
                    .into_iter()
                    .enumerate()
                    .map(|(i, (p, d, theta, ts, rm, opaque, etf))| {
                        let d = d.min(p);
                        Component {
                            name: format!("c{i}"),
                            scheduler: if rm { Scheduler::Rm } else { Scheduler::Edf },
                            tasks: ts
                                .into_iter()
                                .map(|(a, b)| task(a.max(b), a.min(b)))
                                .collect(),
                            opaque,
                            windows: (0..f / p)
                                .map(|k| Window {
                                    release: k * p,
                                    deadline: k * p + d,
                                    budget: theta.min(d),
                                })
                                .collect(),
                            period: p,
                            exec: Exec::Factor(etf),
                        }
                    })
                    .collect();
                let table = picks
                    .into_iter()
                    .enumerate()
                    .map(|(s, pick)| {
                        let s = s as u64;
                        let covers: Vec<usize> = (0..comps.len())
                            .filter(|&c| {
                                comps[c]
                                    .windows
                                    .iter()
                                    .any(|w| w.release <= s && s < w.deadline)
                            })
                            .collect();
                        pick.filter(|_| !covers.is_empty())
                            .map(|k| covers[k % covers.len()])
                    })
                    .collect();
                (table, comps)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// The event-stepped simulator equals the tick-by-tick brute force on every design.
    #[test]
    fn the_simulator_equals_the_tick_by_tick_brute_force(
        (table, comps) in arb_cpu(),
        tps in prop::sample::select(vec![1u64, 2, 3, 10]),
        slots in 1u64..40,
        be in any::<bool>(),
    ) {
        for d in DESIGNS {
            let got = of_report(&run(&table, &comps, tps, slots, d, be));
            prop_assert_eq!(got, reference(&table, &comps, tps, slots, d, be), "{}", d);
        }
    }

    /// Property 5 of the module and the supply argument of property 4: scx_tt's wcps gives the
    /// components exactly what ptps gives, and under crps every job finishes no later than
    /// under ptps (so crps never has more misses), on any table, overloaded or not.
    #[test]
    fn wcps_equals_ptps_and_crps_never_finishes_a_job_later_than_ptps(
        (table, comps) in arb_cpu(),
        tps in prop::sample::select(vec![1u64, 4]),
        slots in 1u64..60,
    ) {
        let p = run(&table, &comps, tps, slots, Design::Ptps, true);
        let w = run(&table, &comps, tps, slots, Design::Wcps, true);
        let c = run(&table, &comps, tps, slots, Design::Crps, true);
        prop_assert_eq!(&w.components, &p.components);
        prop_assert!(c.misses <= p.misses, "crps {} > ptps {}", c.misses, p.misses);
        for (cc, pc) in c.components.iter().zip(&p.components) {
            for (ct, pt) in cc.tasks.iter().zip(&pc.tasks) {
                prop_assert!(ct.ratios.len() >= pt.ratios.len());
                for (a, b) in ct.ratios.iter().zip(&pt.ratios) {
                    prop_assert!(a <= b, "{}: crps {:?} ptps {:?}", ct.name, ct.ratios, pt.ratios);
                }
            }
        }
    }
}

/// Random components whose workloads fit one CPU, with their Γ from Algorithm 1.
fn arb_guaranteed() -> impl Strategy<Value = Vec<(Scheduler, Vec<Task>, Resource)>> {
    let tasks = prop::collection::vec((2u64..=12, 1u64..=4), 1..=3);
    let comp = (any::<bool>(), tasks);
    prop::collection::vec(comp, 1..=4).prop_filter_map("interfaces fit one CPU", |cs| {
        let mut out = Vec::new();
        let mut u = 0.0;
        for (rm, ts) in cs {
            let ts: Vec<Task> = ts
                .into_iter()
                .map(|(p, e)| Task {
                    period: p,
                    wcet: e.min(p),
                })
                .collect();
            let s = if rm { Scheduler::Rm } else { Scheduler::Edf };
            let w = Workload::new(&ts).ok()?;
            let g = optimal_interface(&w, s, Supply::General).ok()?.resource;
            u += g.budget as f64 / g.period as f64;
            out.push((s, ts, g));
        }
        (u <= 1.0).then_some(out)
    })
}

fn guaranteed_cpu(
    set: &[(Scheduler, Vec<Task>, Resource)],
    slots: u64,
    exec: Exec,
) -> (Vec<Option<usize>>, Vec<Component>) {
    let gammas: Vec<Resource> = set.iter().map(|c| c.2).collect();
    let t = server_table(&gammas, slots).expect("table");
    assert_eq!(t.kind, TableKind::Edf, "Σ U_Γ ≤ 1: EDF places every budget");
    assert!(t.short_windows.iter().all(|&n| n == 0));
    let comps = set
        .iter()
        .enumerate()
        .map(|(i, (s, ts, g))| Component {
            name: format!("c{i}"),
            scheduler: *s,
            tasks: ts.iter().map(|t| task(t.period, t.wcet)).collect(),
            opaque: false,
            windows: t.windows[i].clone(),
            period: g.period,
            exec,
        })
        .collect();
    (t.table, comps)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10000))]

    /// Lemma 1 + the EDF table + the simulator: with Γ from Algorithm 1 and the table giving
    /// Θ in every window, no job misses, under every design, at ETF 1 and at any ETF ≤ 1
    /// (fixed or drawn per job); reclaiming never takes time from a guaranteed job.
    #[test]
    fn no_job_of_a_guaranteed_component_misses_under_any_design_or_etf(
        set in arb_guaranteed(),
        tps in prop::sample::select(vec![1u64, 3, 100]),
        exec in prop_oneof![
            Just(Exec::Factor(1.0)),
            (0.05f64..=1.0).prop_map(Exec::Factor),
            (0.05f64..=1.0).prop_map(|min| Exec::Uniform { min }),
        ],
        seed in any::<u64>(),
    ) {
        let slots = 600;
        let (table, comps) = guaranteed_cpu(&set, slots, exec);
        for d in DESIGNS {
            let r = servers::simulate(&Config {
                table: &table,
                components: &comps,
                ticks_per_slot: tps,
                slots,
                design: d,
                be: true,
                seed,
            })
            .expect("run");
            prop_assert_eq!(r.misses, 0, "{} missed under {}: {:?}", r.misses, d, set);
            for c in &r.components {
                prop_assert!(c.response.max <= 1.0);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs refused.

#[test]
fn overflowing_or_invalid_inputs_are_refused_with_the_value_named() {
    let (table, mut comps) = hand_example();
    let cfg = |comps: &[Component], slots: u64, tps: u64| {
        servers::simulate(&Config {
            table: &table,
            components: comps,
            ticks_per_slot: tps,
            slots,
            design: Design::Crps,
            be: false,
            seed: 0,
        })
    };
    let e = cfg(&comps, u64::MAX / 10, 100).unwrap_err().to_string();
    assert!(
        e.contains("slots · ticks_per_slot") && e.contains("overflows"),
        "{e}"
    );
    let e = cfg(&comps, 8, 2_000_000).unwrap_err().to_string();
    assert!(e.contains("ticks_per_slot = 2000000"), "{e}");
    comps[1].tasks[0].wcet = 5;
    let e = cfg(&comps, 8, 1).unwrap_err().to_string();
    assert!(
        e.contains("components[1].tasks[0]") && e.contains("wcet = 5"),
        "{e}"
    );
    comps[1].tasks[0].wcet = 3;
    comps[0].exec = Exec::Factor(1.5);
    let e = cfg(&comps, 8, 1).unwrap_err().to_string();
    assert!(
        e.contains("components[0].exec = 1.5") && e.contains("(0, 1]"),
        "{e}"
    );
    comps[0].exec = Exec::Factor(1.0);
    comps[0].windows = vec![Window {
        release: 0,
        deadline: 9,
        budget: 1,
    }];
    let e = cfg(&comps, 8, 1).unwrap_err().to_string();
    assert!(e.contains("components[0].windows[0]"), "{e}");
    assert!(cfg(&hand_example().1, 8, 1).is_ok());
    let e = cfg(
        &[
            hand_example().1[0].clone(),
            Component {
                tasks: vec![task(u64::MAX / 2, 1)],
                ..hand_example().1[1].clone()
            },
        ],
        8,
        100,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("components[1].tasks[0].period") && e.contains("overflows"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// `scx_tt simulate --server/--etf` and the plan hook.

const PLAN: &str = r#"{"version":1,"slot_us":1000,"frame_slots":20,
  "cpus":{"managed":[1],"housekeeping":[0]},
  "tasks":[
    {"name":"a","comm":"a","class":"tt","cpu":1,"period":2,"wcet":1},
    {"name":"b","comm":"b","class":"tt","cpu":1,"period":4,"wcet":2},
    {"name":"batch","comm":"batch","class":"be"}]}"#;

/// The plan of the hand-worked example, with `local` set directly (the validator fills it from
/// a task's `interface` with named threads).
fn plan_with_local() -> scx_tt::plan::Plan {
    use scx_tt::plan::{LocalSched, LocalThread, ThreadSelector};
    let mut plan = scx_tt::plan::from_str(PLAN).expect("plan");
    let local = |period, wcet, name: &str| LocalSched {
        scheduler: Scheduler::Rm,
        threads: vec![LocalThread {
            thread: ThreadSelector::Comm(name.into()),
            period,
            wcet,
        }],
    };
    plan.tasks[0].local = Some(local(4, 1, "a-main"));
    plan.tasks[1].local = Some(local(4, 3, "b-main"));
    plan
}

#[test]
fn the_plan_hook_runs_each_cpus_table_with_the_tasks_local_workloads() {
    let plan = scx_tt::plan::from_str(PLAN).expect("plan");
    assert_eq!(
        servers::simulate_plan(&plan, Design::Crps, 1.0, 2, 10).unwrap(),
        None,
        "no local workload: no section"
    );
    let plan = plan_with_local();
    let at = |d: Design, etf: f64| {
        servers::simulate_plan(&plan, d, etf, 2, 10)
            .unwrap()
            .expect("a section")
    };
    // the plan's EDF table is A B B A (at slot 2 both jobs are due at 4; the earlier release,
    // B's, goes first): B gets 2 of the 3 slots it needs in each 4 and misses every job under
    // ptps (10 in 40 slots); under crps it reclaims A's idle slot 3 and misses none
    let p = at(Design::Ptps, 1.0);
    let c = at(Design::Crps, 1.0);
    assert_eq!(p.cpus.len(), 1);
    assert_eq!(p.cpus[0].cpu, 1);
    let names: Vec<&str> = p.cpus[0]
        .report
        .components
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(p.cpus[0].report.components[1].tasks[0].name, "b-main");
    assert_eq!(p.cpus[0].report.components[1].misses, 10);
    assert_eq!(c.cpus[0].report.misses, 0);
    // the be task takes the unused time under wcps, not under ptps
    let w = at(Design::Wcps, 1.0);
    assert_eq!(w.cpus[0].report.time.be, p.cpus[0].report.time.idle);
    assert!(servers::simulate_plan(&plan, Design::Crps, 0.0, 2, 10).is_err());
    // at ETF 0.5 B needs 1.5 slots of its 2: no misses under any design
    for d in [Design::Ptps, Design::Wcps, Design::Crps] {
        assert_eq!(at(d, 0.5).cpus[0].report.misses, 0, "{d}");
    }
}

fn write_plan(name: &str, text: &str) -> std::path::PathBuf {
    let path =
        std::env::temp_dir().join(format!("scx_tt_servers_{}_{name}.json", std::process::id()));
    std::fs::write(&path, text).expect("write plan");
    path
}

#[test]
fn etf_and_server_flags_are_checked_naming_the_flag_the_value_and_the_rule() {
    let plan = write_plan("flags", PLAN);
    for (flag, value, rule) in [
        ("--etf", "0", "(0, 1]"),
        ("--etf", "1.5", "(0, 1]"),
        ("--etf", "x", "not a number"),
        ("--server", "wcps-paper", "ptps, wcps or crps"),
    ] {
        let out = scx_tt()
            .args(["simulate", "--table"])
            .arg(&plan)
            .args([flag, value])
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(
            err.contains(flag) && err.contains(value) && err.contains(rule),
            "{flag} {value}: {err}"
        );
    }
    // without local workloads the flags change nothing: the report is the same as without them
    let plain = scx_tt()
        .args(["simulate", "--json", "--table"])
        .arg(&plan)
        .output()
        .expect("runs");
    let flagged = scx_tt()
        .args([
            "simulate", "--json", "--server", "crps", "--etf", "0.5", "--table",
        ])
        .arg(&plan)
        .output()
        .expect("runs");
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(plain.stdout, flagged.stdout);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("\"servers\""));
    let _ = std::fs::remove_file(&plan);
}

/// End to end through the plan format: a `tt` task's `interface` with named threads becomes
/// its `local` workload (the validator, docs/plan-format.md).
#[test]
fn simulate_reports_the_local_threads_under_the_chosen_design() {
    let plan = write_plan(
        "local",
        r#"{"version":1,"slot_us":1000,"cpus":{"managed":[1],"housekeeping":[0]},"server":"ptps",
          "tasks":[
            {"name":"cam","comm":"cam","class":"tt","cpu":1,
             "interface":{"scheduler":"rm","tasks":[
               {"period":5,"wcet":1,"thread":"grab"},{"period":10,"wcet":2,"thread":"proc"}]}},
            {"name":"ctl","comm":"ctl","class":"tt","cpu":1,"period":10,"wcet":2},
            {"name":"batch","comm":"batch","class":"be"}]}"#,
    );
    let text = |args: &[&str]| {
        let out = scx_tt()
            .args(["simulate", "--frames", "5", "--table"])
            .arg(&plan)
            .args(args)
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let t = text(&[]);
    assert!(t.contains("local workloads: server ptps, ETF 1"), "{t}");
    assert!(
        t.contains("grab (period 5, wcet 1)") && t.contains("missed 0"),
        "{t}"
    );
    assert!(t.contains("ctl: no local workload"), "{t}");
    let t = text(&["--server", "crps", "--etf", "0.5"]);
    assert!(t.contains("local workloads: server crps, ETF 0.5"), "{t}");
    let j = text(&["--json"]);
    let v: serde_json::Value = serde_json::from_str(&j).expect("json");
    assert_eq!(v["servers"]["design"], "ptps");
    assert_eq!(v["servers"]["cpus"][0]["components"][0]["name"], "cam");
    assert_eq!(v["servers"]["cpus"][0]["misses"], 0);
    assert!(
        v["guaranteed_misses"].is_u64(),
        "the planner's report is still there"
    );
    let _ = std::fs::remove_file(&plan);
}

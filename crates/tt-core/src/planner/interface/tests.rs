use super::big::Big;
use super::*;

fn w(tasks: &[(u64, u64)]) -> Workload {
    let tasks: Vec<Task> = tasks
        .iter()
        .map(|&(period, wcet)| Task { period, wcet })
        .collect();
    Workload::new(&tasks).expect("valid workload")
}

fn res(period: u64, budget: u64) -> Resource {
    Resource { period, budget }
}

#[test]
fn sbf_general_has_blackout_two_d_then_theta_on_d_off() {
    // Γ = (5, 2): d = 3, nothing in the first 6 slots, then 2 on, 3 off.
    let g = res(5, 2);
    let got: Vec<u64> = (0..=16).map(|t| g.sbf(Supply::General, t)).collect();
    assert_eq!(got, [0, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 3, 4, 4, 4, 4]);
    assert_eq!(g.blackout(Supply::General), 6);
}

#[test]
fn sbf_aligned_has_blackout_d_then_theta_at_each_period_end() {
    // Γ = (5, 2) aligned: slots 3, 4 of every period.
    let g = res(5, 2);
    let got: Vec<u64> = (0..=10).map(|t| g.sbf(Supply::Aligned, t)).collect();
    assert_eq!(got, [0, 0, 0, 0, 1, 2, 2, 2, 2, 3, 4]);
    assert_eq!(g.blackout(Supply::Aligned), 3);
}

#[test]
fn sbf_matches_the_papers_equation_one_literally() {
    // Eq. (1) as printed, for t ≥ Π − Θ: y·Θ + max(0, t − x − y·Π).
    for p in 1..=9u64 {
        for theta in 0..=p {
            for t in 0..=40u64 {
                let (pi, th, ti) = (p as i64, theta as i64, t as i64);
                let general = if ti >= pi - th {
                    let y = (ti - (pi - th)).div_euclid(pi);
                    y * th + 0.max(ti - 2 * (pi - th) - y * pi)
                } else {
                    0
                };
                let aligned = if ti >= pi - th {
                    let y = ti.div_euclid(pi);
                    y * th + 0.max(ti - (pi - th) - y * pi)
                } else {
                    0
                };
                let g = res(p, theta);
                assert_eq!(g.sbf(Supply::General, t) as i64, general, "{p} {theta} {t}");
                assert_eq!(g.sbf(Supply::Aligned, t) as i64, aligned, "{p} {theta} {t}");
            }
        }
    }
}

#[test]
fn sbf_is_the_minimum_supply_over_all_placements() {
    // Property 1: every placement of Θ slots in each of three consecutive periods, every
    // window start in the first period, lengths up to 2Π (such a window lies inside the
    // three periods).
    for p in 1..=4u64 {
        for theta in 0..=p {
            let placements: Vec<u64> = (0u64..1 << p)
                .filter(|m| m.count_ones() as u64 == theta)
                .collect();
            for t in 0..=2 * p {
                let mut least_any = u64::MAX;
                let mut least_boundary = u64::MAX;
                for &a in &placements {
                    for &b in &placements {
                        for &c in &placements {
                            let on = |s: u64| {
                                let m = [a, b, c][(s / p) as usize];
                                m >> (s % p) & 1 == 1
                            };
                            for start in 0..p {
                                let got = (start..start + t).filter(|&s| on(s)).count() as u64;
                                least_any = least_any.min(got);
                                if start == 0 {
                                    least_boundary = least_boundary.min(got);
                                }
                            }
                        }
                    }
                }
                let g = res(p, theta);
                assert_eq!(
                    g.sbf(Supply::General, t),
                    least_any,
                    "Γ=({p},{theta}) t={t}"
                );
                assert_eq!(
                    g.sbf(Supply::Aligned, t),
                    least_boundary,
                    "Γ=({p},{theta}) t={t}"
                );
            }
        }
    }
}

#[test]
fn sbf_is_monotone_and_between_its_linear_bounds() {
    // Property 2.
    for p in 1..=12u64 {
        for theta in 0..=p {
            let g = res(p, theta);
            let d = p - theta;
            for t in 0..=60u64 {
                let s = g.sbf(Supply::General, t);
                assert!(s <= g.sbf(Supply::General, t + 1));
                assert!(s <= g.sbf(Supply::Aligned, t));
                assert!(s <= t.saturating_sub(2 * d));
                // κ(t − 2d) ≤ sbf, i.e. Θ(t − 2d) ≤ Π·sbf
                assert!(theta as i64 * (t as i64 - 2 * d as i64) <= (p * s) as i64);
                if theta < p {
                    assert!(s <= res(p, theta + 1).sbf(Supply::General, t));
                }
            }
        }
    }
}

#[test]
fn rbf_counts_the_job_released_at_zero() {
    // Decision 1: W = {(4, 2), (6, 3)}, rank 1 at t = 1: ⌈1/4⌉·2 + ⌈1/6⌉·3 = 5 (floor: 0).
    let wl = w(&[(6, 3), (4, 2)]);
    assert_eq!(wl.rm_order(), &[1, 0]);
    assert_eq!(wl.rbf(1, 1), 5);
    assert_eq!(wl.rbf(1, 4), 5);
    assert_eq!(wl.rbf(1, 5), 7);
    assert_eq!(wl.rbf(0, 4), 2);
    assert_eq!(wl.dbf(4), 2);
    assert_eq!(wl.dbf(12), 12);
}

#[test]
fn rm_test_rejects_the_ceiling_example_on_a_dedicated_cpu() {
    let wl = w(&[(4, 2), (6, 3)]);
    // U_W = 1/2 + 1/2 = 1, fine for EDF, not for RM (misses at 6).
    assert!(!schedulable(&wl, Scheduler::Rm, Supply::General, res(1, 1)).expect("test"));
    assert!(schedulable(&wl, Scheduler::Edf, Supply::General, res(1, 1)).expect("test"));
    assert_eq!(
        optimal_interface(&wl, Scheduler::Rm, Supply::General).unwrap_err(),
        InterfaceError::NotRmSchedulable {
            task: 1,
            period: 6,
            wcet: 3
        }
    );
}

#[test]
fn min_exec_of_one_task_by_hand() {
    // W = {(10, 3)}, Π = 5, general: need sbf(10) ≥ 3 (the only point).
    // Θ = 3: d = 2, y = ⌊(10 − 2)/5⌋ = 1: sbf(10) = 3 + max(0, 10 − 4 − 5) = 4 ≥ 3
    // (supply in [4, 7) and [9, 10)).
    // Θ = 2: d = 3, y = ⌊7/5⌋ = 1: sbf(10) = 2 + max(0, 10 − 6 − 5) = 2 < 3.
    // So MinExec(5) = 3.
    let wl = w(&[(10, 3)]);
    assert_eq!(min_exec(&wl, Scheduler::Rm, Supply::General, 5), Ok(3));
    assert_eq!(min_exec(&wl, Scheduler::Edf, Supply::General, 5), Ok(3));
}

#[test]
fn optimal_interface_of_one_task_by_hand() {
    // W = {(10, 1)} under EDF. Θ = 1 needs sbf(10) ≥ 1: blackout 2(Π − 1) ≤ 9 → Π ≤ 5,
    // and (5, 1) also meets t = 20 (3 slots by then ≥ 2) and every later deadline (κ = 0.2
    // > U = 0.1): bandwidth 1/5. No Π gives less: Θ = 1 needs Π ≤ 5; Θ = 2 needs
    // 2(Π − 2) ≤ 9, Π ≤ 6, bandwidth ≥ 1/3.
    let wl = w(&[(10, 1)]);
    let i = optimal_interface(&wl, Scheduler::Edf, Supply::General).expect("interface");
    assert_eq!(i.resource, res(5, 1));
    assert_eq!(i.bandwidth, Ratio::new(1, 5));
    assert!((i.overhead - 0.1).abs() < 1e-12);
    // The same under RM (one task: the tests coincide on (0, 10]).
    let r = optimal_interface(&wl, Scheduler::Rm, Supply::General).expect("interface");
    assert_eq!(r.resource, res(5, 1));
    // Critical: t = 10 for the task (with Θ = 0 nothing passes).
    assert_eq!(
        r.critical_points,
        vec![CriticalPoint {
            task: Some(0),
            t: 10,
            demand: 1,
            supply: 1
        }]
    );
}

#[test]
fn aligned_harmonic_interface_can_have_zero_overhead() {
    // W = {(4, 1), (8, 2)}, U = 1/2. Aligned Π = 4, Θ = 2: sbf(4) = 2 ≥ rbf_0(4) = 1;
    // rbf_1(8) = 2·1 + 2 = 4 ≤ sbf(8) = 4. Bandwidth 1/2 = U: no overhead. Π = 2, Θ = 1
    // has the same bandwidth (sbf(t) = ⌊t/2⌋: sbf(4) = 2 ≥ 1, sbf(8) = 4 ≥ 4) and the
    // smaller period wins the tie (decision 4).
    let wl = w(&[(4, 1), (8, 2)]);
    assert_eq!(
        schedulable(&wl, Scheduler::Rm, Supply::Aligned, res(4, 2)),
        Ok(true)
    );
    let i = optimal_interface(&wl, Scheduler::Rm, Supply::Aligned).expect("interface");
    assert_eq!(i.resource, res(2, 1));
    assert_eq!(i.periods_examined, 3);
    assert_eq!(i.overhead, 0.0);
    // Under general supply the overhead is never 0 below bandwidth 1 (property 5).
    let g = optimal_interface(&wl, Scheduler::Rm, Supply::General).expect("interface");
    assert!(g.overhead > 0.0);
}

#[test]
fn aligned_supply_refuses_a_non_harmonic_workload() {
    let wl = w(&[(4, 1), (6, 1)]);
    assert_eq!(
        optimal_interface(&wl, Scheduler::Edf, Supply::Aligned).unwrap_err(),
        InterfaceError::NotHarmonic {
            a: 0,
            pa: 4,
            b: 1,
            pb: 6
        }
    );
}

#[test]
fn bandwidth_one_everywhere_gives_the_smallest_period() {
    // Decision 5. RM: (2, 1), (4, 1): at Π = 4, d = 1 gives sbf(2) = 0 < 1: only Θ = Π.
    let wl = w(&[(2, 1), (4, 1)]);
    let i = optimal_interface(&wl, Scheduler::Rm, Supply::General).expect("interface");
    assert_eq!(i.resource, res(1, 1));
    // EDF: (4, 3) alone forces d = 0 (dbf(4) = 3 > 4 − 2).
    let wl = w(&[(4, 3), (100, 1)]);
    let i = optimal_interface(&wl, Scheduler::Edf, Supply::General).expect("interface");
    assert_eq!(i.resource, res(1, 1));
    // U_W = 1 exactly.
    let wl = w(&[(2, 1), (4, 2)]);
    let i = optimal_interface(&wl, Scheduler::Edf, Supply::General).expect("interface");
    assert_eq!(i.resource, res(1, 1));
}

#[test]
fn edf_optimum_beyond_the_largest_period_is_found() {
    // Decision 6: W = {(4, 2), (10, 4)}, U = 0.9, EDF. dbf(4) = 2 ≤ sbf(4) ≤ 4 − 2d forces
    // d ≤ 1 at every Π, so every interface below bandwidth 1 is (Π, Π − 1), and the long
    // run needs 1 − 1/Π ≥ 0.9: Π ≥ 10. (10, 9) and the next periods fail a later deadline
    // (brute force in tests/interface.rs agrees); (19, 18) is the first that passes.
    let wl = w(&[(4, 2), (10, 4)]);
    let i = optimal_interface(&wl, Scheduler::Edf, Supply::General).expect("interface");
    assert_eq!(i.resource, res(19, 18));
    assert!(i.resource.period > 10);
}

#[test]
fn parse_is_strict() {
    assert_eq!(
        parse_tasks("10,2; 20 , 3"),
        Ok(vec![
            Task {
                period: 10,
                wcet: 2
            },
            Task {
                period: 20,
                wcet: 3
            }
        ])
    );
    assert_eq!(parse_tasks(" "), Err(InterfaceError::Empty));
    assert!(matches!(
        parse_tasks("10,2;"),
        Err(InterfaceError::Syntax { task: 1, .. })
    ));
    assert!(matches!(
        parse_tasks("10,2,3"),
        Err(InterfaceError::Syntax { task: 0, .. })
    ));
    assert!(matches!(
        parse_tasks("+10,2"),
        Err(InterfaceError::NotANumber {
            task: 0,
            field: "period",
            ..
        })
    ));
    assert!(matches!(
        parse_tasks("10,-2"),
        Err(InterfaceError::NotANumber {
            task: 0,
            field: "wcet",
            ..
        })
    ));
    assert!(matches!(
        parse_tasks("18446744073709551616,1"),
        Err(InterfaceError::NotANumber { .. })
    ));
}

#[test]
fn workload_rules_name_the_task_and_field() {
    let t = |period, wcet| Task { period, wcet };
    assert_eq!(
        Workload::new(&[t(5, 1), t(0, 1)]),
        Err(InterfaceError::ZeroPeriod { task: 1 })
    );
    assert_eq!(
        Workload::new(&[t(5, 0)]),
        Err(InterfaceError::ZeroWcet { task: 0 })
    );
    assert_eq!(
        Workload::new(&[t(5, 7)]),
        Err(InterfaceError::WcetAbovePeriod {
            task: 0,
            wcet: 7,
            period: 5
        })
    );
    assert_eq!(
        Workload::new(&[t(2, 1), t(3, 2)]),
        Err(InterfaceError::Overloaded {
            utilization: "7/6".to_string()
        })
    );
    assert_eq!(
        Workload::new(&[t(u64::MAX, 1)]),
        Err(InterfaceError::PeriodTooLarge {
            task: 0,
            period: u64::MAX
        })
    );
    let e = InterfaceError::WcetAbovePeriod {
        task: 3,
        wcet: 7,
        period: 5,
    };
    assert_eq!(
        e.to_string(),
        "tasks[3].wcet = 7: exceeds the period 5 (implicit deadlines: 1 ≤ wcet ≤ period)"
    );
}

#[test]
fn no_64_bit_hyperperiod_is_needed() {
    // Ten primes from 101 to 149: H = their product ≈ 2^69.
    let primes = [101, 103, 107, 109, 113, 127, 131, 137, 139, 149];
    let tasks: Vec<Task> = primes
        .iter()
        .map(|&p| Task { period: p, wcet: 3 })
        .collect();
    let wl = Workload::new(&tasks).expect("valid");
    assert_eq!(wl.hyperperiod(), None);
    assert_eq!(wl.utilization(), None);
    let u: f64 = primes.iter().map(|&p| 3.0 / p as f64).sum();
    assert!((wl.utilization_f64() - u).abs() < 1e-12);
    for s in [Scheduler::Rm, Scheduler::Edf] {
        let i = optimal_interface(&wl, s, Supply::General).expect("interface");
        assert!(i.overhead > 0.0 && i.utilization_exact.is_none());
        assert!(i.bandwidth.to_f64() >= u);
    }
    // U_W > 1 is still exact: wcet 14 everywhere gives U ≈ 1.1.
    let over: Vec<Task> = primes
        .iter()
        .map(|&p| Task {
            period: p,
            wcet: 14,
        })
        .collect();
    assert!(matches!(
        Workload::new(&over),
        Err(InterfaceError::Overloaded { .. })
    ));
}

/// `w` as if its hyperperiod exceeded 2^64: the float horizons and bounds, no t = H.
fn without_small_hyperperiod(w: &Workload) -> Workload {
    Workload {
        small: None,
        ..w.clone()
    }
}

#[test]
fn float_paths_for_huge_hyperperiods_give_the_exact_answers() {
    // The paths taken when H > 2^64 (decision 8's float horizon, Π* and the blackout check
    // of decision 5 in floating point, MaxResPeriod without t = H, MinExec from 1) only
    // ever look further than the exact ones, so on workloads with a small H they must
    // find the same interfaces. splitmix64-drawn sets, periods 2..=30, up to 5 tasks.
    let mut state = 16_008u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut compared = 0;
    while compared < 600 {
        let n = 1 + next() % 5;
        let tasks: Vec<Task> = (0..n)
            .map(|_| {
                let period = 2 + next() % 29;
                Task {
                    period,
                    wcet: 1 + next() % period.div_ceil(3),
                }
            })
            .collect();
        let Ok(exact) = Workload::new(&tasks) else {
            continue;
        };
        let float = without_small_hyperperiod(&exact);
        for s in [Scheduler::Rm, Scheduler::Edf] {
            let a = optimal_interface(&exact, s, Supply::General);
            let b = optimal_interface(&float, s, Supply::General);
            match (a, b) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.resource, b.resource, "{tasks:?} {s}");
                    // The float horizon may be longer, so it may list more EDF points.
                    assert!(
                        b.critical_points.starts_with(&a.critical_points),
                        "{tasks:?} {s}"
                    );
                    assert!((a.overhead - b.overhead).abs() < 1e-12);
                    compared += 1;
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                (a, b) => panic!("{tasks:?} {s}: {a:?} vs {b:?}"),
            }
        }
    }
}

#[test]
fn big_integers_do_what_the_hyperperiod_needs() {
    let two64 = Big::from(u64::MAX).add(&Big::from(1));
    assert_eq!(two64, Big(vec![0, 1]));
    assert_eq!(two64.rem_small(10), 6); // 18446744073709551616
    assert_eq!(two64.div_small(2), Big::from(1 << 63));
    assert_eq!(two64.mul_small(3).div_small(3), two64);
    assert!(two64 > Big::from(u64::MAX));
    assert_eq!(Big::from(0).mul_small(5), Big::from(0));
}

#[test]
fn huge_periods_end_in_the_work_cap_not_a_hang() {
    // One task with the largest period: Algorithm 1 would examine ~2^32 periods.
    let wl = w(&[(MAX_PERIOD_SLOTS, 1)]);
    let err = optimal_interface(&wl, Scheduler::Rm, Supply::General).unwrap_err();
    assert!(matches!(err, InterfaceError::WorkCap { .. }), "{err}");
    // The test itself is cheap and exact at the edge.
    let g = res(MAX_PERIOD_SLOTS, MAX_PERIOD_SLOTS);
    assert_eq!(
        schedulable(&wl, Scheduler::Rm, Supply::General, g),
        Ok(true)
    );
    assert_eq!(
        schedulable(&wl, Scheduler::Edf, Supply::General, g),
        Ok(true)
    );
}

#[test]
fn far_apart_periods_hit_the_test_point_cap() {
    // Rank 1 of {(2, 1), (2^22, 1)} has 2^21 + 1 points, rank 0 one.
    let wl = Workload::new(&[
        Task { period: 2, wcet: 1 },
        Task {
            period: 1 << 22,
            wcet: 1,
        },
    ])
    .expect("valid");
    assert_eq!(
        optimal_interface(&wl, Scheduler::Rm, Supply::General).unwrap_err(),
        InterfaceError::TooManyTestPoints {
            points: 1 + (1 << 21) + 1
        }
    );
}

#[test]
fn invalid_resources_are_refused() {
    let wl = w(&[(4, 1)]);
    for r in [res(0, 0), res(3, 4), res(MAX_PERIOD_SLOTS + 1, 1)] {
        assert_eq!(
            schedulable(&wl, Scheduler::Rm, Supply::General, r),
            Err(InterfaceError::InvalidResource(r))
        );
    }
}

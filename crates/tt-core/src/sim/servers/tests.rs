use super::run::{actual_ticks, factor};
use super::*;

fn task(period: u64, wcet: u64) -> LocalTask {
    LocalTask {
        name: format!("({period},{wcet})"),
        period,
        wcet,
    }
}

fn two(design: Design, tps: u64) -> ServerReport {
    // module doc example (tests/simulate_servers.rs works it by hand): A = (2, 1) with
    // {(4, 1)}, B = (4, 2) with {(4, 3)}; table A B A B
    let table = [Some(0), Some(1), Some(0), Some(1)];
    let comps = [
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
    simulate(&Config {
        table: &table,
        components: &comps,
        ticks_per_slot: tps,
        slots: 8,
        design,
        be: true,
        seed: 1,
    })
    .unwrap()
}

#[test]
fn crps_reclaims_the_idle_owner_slot_and_ptps_does_not() {
    for tps in [1, 7] {
        let p = two(Design::Ptps, tps);
        let w = two(Design::Wcps, tps);
        let c = two(Design::Crps, tps);
        let x = two(Design::WcpsPaper, tps);
        assert_eq!((p.misses, w.misses, c.misses, x.misses), (2, 2, 0, 2));
        assert_eq!(p.time.idle, 2 * tps);
        assert_eq!(w.time.be, 2 * tps);
        assert_eq!(c.time.reclaimed, 2 * tps);
        assert_eq!(x.time.reclaimed, 2 * tps);
        assert_eq!(x.time.be, 2 * tps);
        assert_eq!(c.components[1].response.max, 1.0);
        assert_eq!(p.components[1].response.max, 1.5);
    }
}

#[test]
fn an_empty_table_or_a_slot_outside_its_owners_windows_is_refused() {
    let comps = [Component {
        name: "a".into(),
        scheduler: Scheduler::Edf,
        tasks: vec![task(2, 1)],
        opaque: false,
        windows: vec![Window {
            release: 0,
            deadline: 1,
            budget: 1,
        }],
        period: 2,
        exec: Exec::Factor(1.0),
    }];
    let cfg = |table: &'static [Option<usize>]| Config {
        table,
        components: &comps,
        ticks_per_slot: 10,
        slots: 4,
        design: Design::Crps,
        be: false,
        seed: 0,
    };
    assert_eq!(simulate(&cfg(&[])), Err(ServerError::EmptyTable));
    assert_eq!(
        simulate(&cfg(&[None, Some(0)])),
        Err(ServerError::OutsideWindow { slot: 1, owner: 0 })
    );
    assert!(matches!(
        simulate(&cfg(&[Some(1), None])),
        Err(ServerError::NoSuchOwner { .. })
    ));
    let mut big = cfg(&[Some(0), None]);
    big.slots = u64::MAX / 2;
    let e = simulate(&big).unwrap_err().to_string();
    assert!(e.contains("overflows 64 bits"), "{e}");
    let mut t = cfg(&[Some(0), None]);
    t.ticks_per_slot = 0;
    assert_eq!(simulate(&t), Err(ServerError::Ticks(0)));
}

#[test]
fn the_edf_table_gives_every_window_its_budget_and_overload_falls_back_to_rm() {
    let r = |period, budget| Resource { period, budget };
    let t = server_table(&[r(2, 1), r(3, 1)], 100).unwrap();
    assert_eq!(
        (t.kind, t.repeats, t.table.len()),
        (TableKind::Edf, true, 6)
    );
    for (c, ws) in t.windows.iter().enumerate() {
        for w in ws {
            let got = (w.release..w.deadline)
                .filter(|&s| t.table[s as usize] == Some(c))
                .count() as u64;
            assert_eq!(got, w.budget);
        }
    }
    let o = server_table(&[r(2, 1), r(3, 2)], 12).unwrap();
    assert_eq!(o.kind, TableKind::RmOverloaded);
    assert_eq!(o.short_windows[0], 0);
    assert!(o.short_windows[1] > 0);
    // no common multiple within the run: one table at least as long as the run
    let l = server_table(&[r(7, 1), r(11, 1), r(13, 1)], 50).unwrap();
    assert!(!l.repeats && l.table.len() >= 50);
}

#[test]
fn uniform_draws_depend_on_the_job_not_on_the_order() {
    let a = factor(Exec::Uniform { min: 0.1 }, 3, 1, 2, 7);
    let b = factor(Exec::Uniform { min: 0.1 }, 3, 1, 2, 7);
    let c = factor(Exec::Uniform { min: 0.1 }, 3, 1, 2, 8);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!((0.1..=1.0).contains(&a));
    assert_eq!(actual_ticks(0.01, 100), 1);
    assert_eq!(actual_ticks(0.5, 101), 51);
    assert_eq!(actual_ticks(1.0, 100), 100);
}

#[test]
fn ratios_use_the_nearest_rank() {
    let v: Vec<f64> = (1..=200).map(f64::from).collect();
    let r = Ratios::of(&v);
    assert_eq!((r.p99, r.max), (198.0, 200.0));
    assert_eq!(Ratios::of(&[]), Ratios::default());
}

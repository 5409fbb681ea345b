//! The benchmark's task sets: every policy keeps 0 guaranteed deadline misses, with actual
//! execution = WCET and 50–100 % of WCET, and the energy-aware policies never draw more than
//! plain slot shifting. (The benchmark runs 10 sets per combination and also fails on a miss;
//! this test runs 2 per combination so it stays fast.)

use scx_tt::energy::model;
use scx_tt::sim::experiment::{run, task_set, Case, Exec, VARIANTS};
use std::path::Path;

#[test]
fn every_policy_keeps_zero_guaranteed_misses_on_the_benchmark_sets() {
    let m =
        model::from_path(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models/xeon-gold-5218.json"))
            .expect("model");
    let mut runs = 0;
    for u_sched in [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8] {
        for u_new in [0.1, 0.2, 0.5] {
            for set in 0..2 {
                let case = Case {
                    u_sched,
                    u_new,
                    set,
                    slot_us: 1000,
                };
                let (plan, arrivals) = task_set(&case).expect("task set");
                assert!((1800..=2200).contains(&plan.frame_slots), "{case:?}");
                for exec in [Exec::Wcet, Exec::Range(0.5, 1.0)] {
                    let mut bss_w = None;
                    for v in VARIANTS {
                        let r = run(&m, &plan, &arrivals, v, exec, 7).expect("run");
                        assert_eq!(r.guaranteed_misses, 0, "{} {case:?} {exec:?}", v.name);
                        assert!(r.accepted <= r.offered);
                        match v.name {
                            "bss" => bss_w = Some(r.package_w),
                            _ => {
                                let bss = bss_w.expect("bss runs first");
                                assert!(r.package_w <= bss + 1e-9, "{} {case:?}", v.name);
                            }
                        }
                        runs += 1;
                    }
                }
            }
        }
    }
    assert_eq!(runs, 7 * 3 * 2 * 2 * VARIANTS.len());
}

#[test]
fn new_jobs_add_up_to_the_requested_utilization() {
    for u_new in [0.1, 0.2, 0.5] {
        let case = Case {
            u_sched: 0.5,
            u_new,
            set: 3,
            slot_us: 3000,
        };
        let (plan, arrivals) = task_set(&case).expect("task set");
        let sum: u64 = arrivals.iter().map(|a| a.wcet).sum();
        let want = u_new * plan.frame_slots as f64;
        // Jobs are drawn until the sum reaches the budget: at most one WCET (≤ 15) above it.
        assert!(
            sum as f64 >= want && (sum as f64) < want + 15.0,
            "{sum} vs {want}"
        );
        for a in &arrivals {
            assert!((10..=15).contains(&a.wcet));
            let d = a.deadline.expect("firm");
            assert!(d >= a.wcet + 10 && d <= a.wcet + 15);
            assert!(a.at_slot + d <= plan.frame_slots);
        }
    }
}

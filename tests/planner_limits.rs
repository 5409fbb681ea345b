//! Bounds of the planner's inputs (docs/planner.md, "Limits"): a WCET or deadline the planner
//! cannot represent is refused at admission, never wrapped, in debug and release builds alike.

use scx_tt::plan;
use scx_tt::planner::cpu::MAX_JOB_SLOTS;
use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::{CpuInput, Rejection};
use scx_tt::planner::{Admission, Freqs, Placement, Planner, PlannerConfig, Policy};
use scx_tt::sim::power::PlaceholderPower;
use scx_tt::sim::{self, ExecModel, SimConfig};

fn planner() -> Planner {
    let jobs = vec![Job {
        task: 0,
        instance: 0,
        release: 0,
        deadline: 10,
        wcet: 4,
    }];
    Planner::new(
        &[
            CpuInput {
                jobs: jobs.clone(),
                has_be: false,
            },
            CpuInput {
                jobs,
                has_be: false,
            },
        ],
        10,
        PlannerConfig {
            policy: Policy::Bss,
            freqs: Freqs::xeon_default(),
            slot_ns: 1_000_000,
        },
    )
}

/// The free slots of every CPU's horizon, the planner's whole guarantee state.
fn spare(p: &Planner) -> Vec<Vec<(u64, u64, i64)>> {
    let mut p = p.clone(); // `cpus()` charges quiet runs: read a copy
    p.cpus()
        .iter()
        .map(|c| c.intervals().map(|i| (i.start, i.end, i.sc)).collect())
        .collect()
}

#[test]
fn a_firm_wcet_above_the_bound_is_refused_and_changes_nothing() {
    for wcet in [
        MAX_JOB_SLOTS + 1,
        1 << 63,
        (1 << 63) + 5,
        u64::MAX / 1_000_000 + 1,
        u64::MAX,
    ] {
        for place in [Placement::Any, Placement::Only(1), Placement::Prefer(0)] {
            let mut p = planner();
            let before = spare(&p);
            let got = p.admit_firm(7, wcet, 15, place);
            assert!(
                matches!(got, Admission::Rejected(Rejection::Invalid(ref why)) if why.contains("wcet")),
                "wcet {wcet}: {got:?}"
            );
            assert_eq!(spare(&p), before, "wcet {wcet}");
        }
    }
}

#[test]
fn a_firm_wcet_at_the_bound_is_a_capacity_rejection() {
    let mut p = planner();
    let before = spare(&p);
    let got = p.admit_firm(7, MAX_JOB_SLOTS, u64::MAX, Placement::Any);
    assert!(
        matches!(got, Admission::Rejected(Rejection::Capacity { .. })),
        "{got:?}"
    );
    assert_eq!(spare(&p), before);
}

#[test]
fn periodic_and_soft_bounds_hold() {
    let mut p = planner();
    let got = p.admit_periodic(7, u64::MAX, 10, Placement::Any);
    assert!(
        matches!(got, Admission::Rejected(Rejection::Invalid(_))),
        "{got:?}"
    );
    let got = p.admit_periodic(7, 1, u64::MAX, Placement::Any);
    assert!(
        matches!(got, Admission::Rejected(Rejection::Invalid(_))),
        "{got:?}"
    );
    // a soft job has no guarantee: its budget saturates at the bound instead of wrapping
    assert!(p.submit_soft(8, u64::MAX, None).is_some());
    assert_eq!(
        p.cpus().iter().map(|c| c.soft_queue_len()).sum::<usize>(),
        1
    );
}

/// The reproducer of issue 12 item 1: a firm job of wcet 2^64 − 1 arriving at slot 3 of the
/// demo plan.
#[test]
fn a_huge_firm_arrival_is_refused_by_the_parser_with_the_field() {
    let text = r#"[{"at_slot":3,"name":"x","kind":"aperiodic","wcet":18446744073709551615,"deadline":10,"cpu":1}]"#;
    let err = sim::parse_arrivals(text).unwrap_err().to_string();
    assert!(err.contains("[0].wcet"), "{err}");
    for field in ["deadline", "period"] {
        let text = format!(
            r#"[{{"at_slot":3,"name":"x","kind":"aperiodic","wcet":1,"{field}":18446744073709551615}}]"#
        );
        let err = sim::parse_arrivals(&text).unwrap_err().to_string();
        assert!(err.contains(&format!("[0].{field}")), "{err}");
    }
}

/// The planner refuses the job even when an arrival bypasses the parser.
#[test]
fn a_huge_firm_arrival_built_in_code_breaks_no_guarantee() {
    let root = env!("CARGO_MANIFEST_DIR");
    let plan = plan::from_file(format!("{root}/schedules/demo.json")).expect("demo plan");
    let cfg = SimConfig {
        policy: Policy::Bss,
        freqs: Freqs::xeon_default(),
        frames: 2,
        exec: ExecModel::Factor(1.0),
        keep_records: false,
    };
    for (wcet, deadline, at) in [
        (u64::MAX, 10, 3),
        (1 << 63, 10, 3),
        (5, u64::MAX, 3),
        (5, u64::MAX - 1, u64::MAX - 2),
    ] {
        let a = sim::Arrival {
            at_slot: at,
            name: "x".into(),
            kind: sim::ArrivalKind::Aperiodic,
            wcet,
            deadline: Some(deadline),
            period: None,
            cpu: Some(1),
        };
        let out = sim::simulate(&plan, &[a], &cfg, &PlaceholderPower::default(), &mut |_| {})
            .expect("simulates");
        assert_eq!(
            out.report.guaranteed_misses, 0,
            "wcet {wcet}: {:?}",
            out.report.admissions
        );
        if wcet > MAX_JOB_SLOTS {
            assert!(
                !out.report.admissions[0].accepted,
                "{:?}",
                out.report.admissions
            );
        }
    }
}

//! `simulate` on the demo plan and on generated plans, under every policy: no guaranteed miss,
//! a complete trace, and the energy policies never cost more than plain slot shifting.

use proptest::prelude::*;
use scx_tt::plan;
use scx_tt::planner::power::PlaceholderPower;
use scx_tt::planner::sim::{self, ExecModel, SimConfig, SimOutput};
use scx_tt::planner::{Freqs, Policy};
use scx_tt::trace::{SlotKind, SlotRecord};

fn run(plan: &plan::Plan, arrivals: &[sim::Arrival], policy: Policy, exec: ExecModel) -> SimOutput {
    let cfg = SimConfig {
        policy,
        freqs: Freqs::xeon_default(),
        frames: 6,
        exec,
        keep_records: true,
    };
    sim::simulate(
        plan,
        arrivals,
        &cfg,
        &PlaceholderPower::default(),
        &mut |_| {},
    )
    .expect("simulation runs")
}

fn demo() -> (plan::Plan, Vec<sim::Arrival>) {
    let root = env!("CARGO_MANIFEST_DIR");
    let plan = plan::from_file(format!("{root}/schedules/demo.json")).expect("demo plan");
    let text = std::fs::read_to_string(format!("{root}/schedules/arrivals/demo.json"))
        .expect("demo arrivals");
    (plan, sim::parse_arrivals(&text).expect("arrivals parse"))
}

#[test]
fn demo_runs_under_every_policy_without_guaranteed_misses() {
    let (plan, arrivals) = demo();
    for policy in Policy::ALL {
        for exec in [
            ExecModel::Factor(1.0),
            ExecModel::Range {
                lo: 0.3,
                hi: 1.0,
                seed: 7,
            },
        ] {
            let out = run(&plan, &arrivals, policy, exec);
            let r = &out.report;
            assert_eq!(r.guaranteed_misses, 0, "{policy} {exec:?}");
            assert_eq!(r.overruns, 0, "{policy} {exec:?}");
            assert_eq!(r.admissions.len(), arrivals.len());
            // too-big needs 15 slots before slot 17: the frame of 20 slots cannot give it.
            let too_big = r.admissions.iter().find(|a| a.name == "too-big").unwrap();
            assert!(!too_big.accepted && too_big.reason.contains("needs 15 slots"));
            let burst = r.admissions.iter().find(|a| a.name == "burst-1").unwrap();
            assert!(burst.accepted, "{policy}: {}", burst.reason);
            assert_eq!(burst.bound_slot, Some(13)); // at_slot 3 + deadline 10
                                                    // One record per CPU and slot, in order.
            let frame = plan.frame_slots;
            assert_eq!(out.records.len() as u64, 6 * frame * plan.cpus.len() as u64);
            for (k, rec) in out.records.iter().enumerate() {
                assert_eq!(rec.slot, k as u64 / plan.cpus.len() as u64);
            }
        }
    }
}

#[test]
fn trace_records_round_trip_through_json_lines() {
    let (plan, arrivals) = demo();
    let out = run(&plan, &arrivals, Policy::DpmDvfs, ExecModel::Factor(0.8));
    for rec in out.records.iter().take(200) {
        let line = serde_json::to_string(rec).unwrap();
        let back: SlotRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(&back, rec);
        assert!(
            !line.contains("ran_ns"),
            "kernel-only fields are omitted: {line}"
        );
    }
    // DPM idle records carry idle_until beyond their slot.
    assert!(out
        .records
        .iter()
        .any(|r| r.kind == SlotKind::Idle && r.idle_until.is_some_and(|u| u > r.slot)));
}

#[test]
fn an_exec_factor_above_one_is_cut_off_and_reported_not_missed() {
    let (plan, _) = demo();
    let out = run(&plan, &[], Policy::Bss, ExecModel::Factor(1.5));
    assert!(out.report.overruns > 0);
    assert_eq!(out.report.guaranteed_misses, 0);
}

/// A plan with `cpus` managed CPUs, tasks from UUnifast-like utilizations.
fn plan_text(tasks: &[(u32, u64, u64)], cpus: u32) -> String {
    let managed: Vec<String> = (1..=cpus).map(|c| c.to_string()).collect();
    let tasks: Vec<String> = tasks
        .iter()
        .enumerate()
        .map(|(i, &(cpu, period, wcet))| {
            format!(
                r#"{{"name":"t{i}","cmd":["/bin/true"],"class":"tt","cpu":{cpu},"period":{period},"wcet":{wcet}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"version":1,"slot_us":1000,"cpus":{{"managed":[{}],"housekeeping":[0]}},"tasks":[{}]}}"#,
        managed.join(","),
        tasks.join(",")
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn generated_plans_run_without_misses_and_energy_policies_cost_no_more(
        cpus in 1u32..4,
        raw in prop::collection::vec((0u32..4, 0usize..4, 0.05f64..0.35), 1..10),
        arrivals in prop::collection::vec((0u64..200, 1u64..6, prop::option::of(5u64..60)), 0..8),
        seed in 0u64..1000,
    ) {
        const PERIODS: [u64; 4] = [10, 20, 25, 50];
        let mut load = vec![0.0; cpus as usize];
        let mut tasks = Vec::new();
        for &(c, pi, u) in &raw {
            let cpu = c % cpus;
            if load[cpu as usize] + u > 0.9 {
                continue;
            }
            load[cpu as usize] += u;
            let p = PERIODS[pi];
            tasks.push((cpu + 1, p, ((u * p as f64).round() as u64).max(1)));
        }
        prop_assume!(!tasks.is_empty());
        let plan = plan::from_str(&plan_text(&tasks, cpus));
        prop_assume!(plan.is_ok());
        let plan = plan.unwrap();
        let arrivals: Vec<sim::Arrival> = arrivals
            .iter()
            .enumerate()
            .map(|(i, &(at, wcet, deadline))| sim::Arrival {
                at_slot: at,
                name: format!("a{i}"),
                kind: sim::ArrivalKind::Aperiodic,
                wcet,
                deadline,
                period: None,
                cpu: None,
            })
            .collect();
        let mut energy = Vec::new();
        for policy in Policy::ALL {
            let exec = ExecModel::Range { lo: 0.4, hi: 1.0, seed };
            let out = run(&plan, &arrivals, policy, exec);
            prop_assert_eq!(out.report.guaranteed_misses, 0, "{}", policy);
            energy.push(out.report.energy_j);
        }
        // bss, dpm, dvfs, dpm+dvfs: the energy-aware ones never cost more than bss.
        for (k, e) in energy.iter().enumerate().skip(1) {
            prop_assert!(*e <= energy[0] * (1.0 + 1e-9), "policy {k}: {e} > bss {}", energy[0]);
        }
    }
}

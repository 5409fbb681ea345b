//! `simulate` on the demo plan and on generated plans, under every policy: no guaranteed miss,
//! a complete trace, and the energy policies never cost more than plain slot shifting for the
//! same work.

use proptest::prelude::*;
use scx_tt::plan;
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sim::power::{PlaceholderPower, SlotPower};
use scx_tt::sim::{self, ExecModel, SimConfig, SimOutput};
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
        // Job slots say how much of the slot the job ran (and what best-effort work ran after
        // it); best-effort and idle slots carry neither; the tick lateness is kernel-only.
        let job_slot = matches!(rec.kind, SlotKind::Tt | SlotKind::Aperiodic);
        assert_eq!(
            rec.ran_ns.is_some(),
            job_slot || rec.task.is_some() && rec.kind == SlotKind::Be,
            "{line}"
        );
        if let (Some(ran), Some(stolen)) = (rec.ran_ns, rec.stolen_ns) {
            assert!(ran + stolen <= plan.slot_us * 1000, "{line}");
        }
        assert!(!line.contains("late_ns"), "kernel-only field: {line}");
    }
    // Jobs run 0.8 of their WCET: some end inside a slot, which the record shows.
    let slot_ns = plan.slot_us * 1000;
    assert!(out
        .records
        .iter()
        .any(|r| r.ran_ns.is_some_and(|ran| ran > 0 && ran < slot_ns)));
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

/// Work a run executed: full-speed slot equivalents (the frequency of every busy slot, summed).
fn work(out: &SimOutput) -> f64 {
    out.records
        .iter()
        .filter(|r| r.kind != SlotKind::Idle)
        .map(|r| r.freq)
        .sum()
}

type Raw = Vec<(u32, usize, f64)>;
type RawArrivals = Vec<(u64, u64, Option<u64>)>;

/// Generated plan and arrivals under every policy: 0 guaranteed misses, and the energy-aware
/// policies cost no more than bss *for the same work*. Soft arrivals are served in slack, so a
/// policy may execute more of them within the simulated frames than bss (dpm gathers slack
/// differently); each full-speed slot of extra work may then cost up to one busy slot at full
/// speed (an upper bound for dpm, which runs at full speed, and for dvfs at the model's
/// frequencies, where a slot of work at frequency f costs (2 + 8 f³) / f <= 10 W for f >= 0.25).
fn check_generated(
    cpus: u32,
    raw: &Raw,
    arrivals: &RawArrivals,
    seed: u64,
) -> Result<(), TestCaseError> {
    const PERIODS: [u64; 4] = [10, 20, 25, 50];
    let mut load = vec![0.0; cpus as usize];
    let mut tasks = Vec::new();
    for &(c, pi, u) in raw {
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
    let power = PlaceholderPower::default();
    let slot_s = plan.slot_us as f64 * 1e-6;
    let mut runs = Vec::new();
    for policy in Policy::ALL {
        let exec = ExecModel::Range {
            lo: 0.4,
            hi: 1.0,
            seed,
        };
        let out = run(&plan, &arrivals, policy, exec);
        prop_assert_eq!(out.report.guaranteed_misses, 0, "{}", policy);
        runs.push((policy, out.report.energy_j, work(&out)));
    }
    // bss, dpm, dvfs, dpm+dvfs: the energy-aware ones never cost more than bss for its work.
    let (_, bss_j, bss_work) = runs[0];
    for &(policy, e, w) in &runs[1..] {
        let extra = (w - bss_work).max(0.0) * power.busy_j(1.0, slot_s);
        prop_assert!(
            e <= (bss_j + extra) * (1.0 + 1e-9),
            "{}: {} J for work {} > bss {} J for work {} + {} J for the extra work",
            policy,
            e,
            w,
            bss_j,
            bss_work,
            extra
        );
    }
    Ok(())
}

#[test]
fn a_policy_that_serves_more_soft_work_may_spend_that_work_s_energy() {
    // Found by the proptest below: dpm served more of the soft arrivals within the six frames
    // (work 91 slots against 87) than bss and spent 0.9208 J against bss's 0.9195 J.
    let raw = vec![
        (0, 0, 0.05),
        (0, 1, 0.25812076052947314),
        (0, 1, 0.05),
        (0, 0, 0.34683451145342),
        (0, 0, 0.05),
    ];
    let arrivals = vec![(16, 2, None), (26, 2, Some(34)), (0, 2, None)];
    check_generated(1, &raw, &arrivals, 405).unwrap_or_else(|e| panic!("{e}"));
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
        check_generated(cpus, &raw, &arrivals, seed)?;
    }
}

/// A job that ends inside its slot is charged busy only for the part it ran; the rest of the
/// slot idles (no best-effort work on the CPU) or runs best-effort work (it has some).
#[test]
fn a_partly_used_last_slot_is_charged_busy_only_for_the_part_that_ran() {
    // One CPU, one task: period 4, wcet 2, 1 ms slots; jobs run 0.75 of their WCET = 1.5 slots.
    // Placeholder power, f = 1: busy 2 + 8 = 10 W, idle 1.5 W. Per frame under bss:
    //   slot 0: busy 1 ms                  = 10 mJ
    //   slot 1: busy 0.5 ms + idle 0.5 ms  = 5 + 0.75 = 5.75 mJ
    //   slots 2-3: idle (no be work)        = 2 × 1.5 = 3 mJ
    //   total 18.75 mJ per frame (a whole busy slot 1 would give 23 mJ).
    // With a best-effort task on the CPU, be work fills slot 1 after the job and slots 2-3:
    //   4 × 10 = 40 mJ per frame.
    let text = |be: &str| {
        format!(
            r#"{{"slot_us": 1000, "cpus": {{"managed": [1], "housekeeping": [0]}},
               "tasks": [{{"name": "a", "comm": "a", "class": "tt", "cpu": 1, "period": 4, "wcet": 2}}{be}]}}"#
        )
    };
    let cfg = SimConfig {
        policy: Policy::Bss,
        freqs: Freqs::max_only(),
        frames: 5,
        exec: ExecModel::Factor(0.75),
        keep_records: true,
    };
    let power = PlaceholderPower::default();
    for (be, per_frame_mj) in [
        ("", 18.75),
        (
            r#", {"name": "b", "comm": "b", "class": "be", "cpu": 1}"#,
            40.0,
        ),
    ] {
        let plan = plan::from_str(&text(be)).expect("plan");
        let out = sim::simulate(&plan, &[], &cfg, &power, &mut |_| {}).expect("runs");
        let want_j = 5.0 * per_frame_mj / 1000.0;
        assert!(
            (out.report.energy_j - want_j).abs() < 1e-9,
            "be {be:?}: {} J, want {want_j} J",
            out.report.energy_j
        );
        let half = out
            .records
            .iter()
            .find(|r| r.slot == 1)
            .expect("slot 1 record");
        assert_eq!(half.ran_ns, Some(500_000), "{half:?}");
        assert_eq!(
            half.stolen_ns,
            Some(if be.is_empty() { 0 } else { 500_000 }),
            "{half:?}"
        );
    }
}

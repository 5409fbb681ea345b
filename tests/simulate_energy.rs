//! `simulate`'s energy equals a recomputation from its own trace, under every policy and both
//! power models (issue 14 item 7). The recomputation here reads nothing but the slot records
//! and the per-slot prices of `SlotPower`, and applies the rule `simulate` documents
//! (crates/tt-core/src/sim/mod.rs, docs/energy.md §4): a non-idle slot is busy for `min(ran_ns + stolen_ns,
//! slot)` when recorded (else whole) at its recorded frequency and idle for the rest at that
//! frequency; consecutive idle slots form a run, priced as one DPM idle period at its slots'
//! frequency when any slot of it carries `idle_until`, else slot by slot, each at its own
//! recorded frequency; the idle rest of the slot just before a DPM run, at the run's
//! frequency, is part of that period (the estimator's rule: one idle stretch, one exit).
//! A P-state change between consecutive slots costs `SlotPower::switch_j` (the model's
//! `freq_switch_us` at the higher P-state's active power; the placeholder: nothing). A second
//! test checks the rule against the estimator itself (`energy::estimate`).

use scx_tt::energy::estimate::IdleGovernor;
use scx_tt::energy::model;
use scx_tt::plan;
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sim::model_power::ModelPower;
use scx_tt::sim::power::{PlaceholderPower, SlotPower};
use scx_tt::sim::{self, ExecModel, SimConfig};
use scx_tt::trace::{SlotKind, SlotRecord};
use std::collections::BTreeMap;

fn recompute(records: &[SlotRecord], power: &dyn SlotPower, slot_ns: u64) -> f64 {
    let slot_s = slot_ns as f64 / 1e9;
    let mut by_cpu: BTreeMap<u32, Vec<&SlotRecord>> = BTreeMap::new();
    for r in records {
        by_cpu.entry(r.cpu).or_default().push(r);
    }
    let mut total = 0.0;
    for recs in by_cpu.values_mut() {
        recs.sort_by_key(|r| r.slot);
        // the idle rest of the last non-idle slot, not priced yet: (seconds, frequency)
        let mut rest: Option<(f64, f64)> = None;
        // a P-state change between consecutive slots costs the model's switch energy
        for w in recs.windows(2) {
            total += power.switch_j(w[0].freq, w[1].freq);
        }
        let mut k = 0;
        while k < recs.len() {
            let r = recs[k];
            if r.kind != SlotKind::Idle {
                if let Some((s, f)) = rest.take() {
                    total += power.idle_j(f, s);
                }
                let busy = match (r.ran_ns, r.stolen_ns) {
                    (Some(a), Some(b)) => (a + b).min(slot_ns),
                    _ => slot_ns,
                } as f64
                    / 1e9;
                total += power.busy_j(r.freq, busy);
                if slot_s - busy > 0.0 {
                    rest = Some((slot_s - busy, r.freq));
                }
                k += 1;
                continue;
            }
            let start = k;
            while k < recs.len() && recs[k].kind == SlotKind::Idle {
                k += 1;
            }
            let run = &recs[start..k];
            if run.iter().any(|r| r.idle_until.is_some()) {
                let f = run.last().expect("non-empty").freq;
                let mut secs = run.len() as f64 * slot_s;
                match rest.take() {
                    Some((s, rf)) if rf == run[0].freq && run[0].idle_until.is_some() => secs += s,
                    Some((s, rf)) => total += power.idle_j(rf, s),
                    None => {}
                }
                total += power.sleep_j(secs, f, slot_s);
            } else {
                if let Some((s, rf)) = rest.take() {
                    total += power.idle_j(rf, s);
                }
                total += run
                    .iter()
                    .map(|r| power.idle_j(r.freq, slot_s))
                    .sum::<f64>();
            }
        }
        if let Some((s, f)) = rest.take() {
            total += power.idle_j(f, s);
        }
    }
    total
}

/// The demo plan and its arrivals (schedules/).
fn demo() -> (plan::Plan, Vec<sim::Arrival>) {
    let root = env!("CARGO_MANIFEST_DIR");
    let plan = plan::from_file(format!("{root}/schedules/demo.json")).expect("demo plan");
    let text = std::fs::read_to_string(format!("{root}/schedules/arrivals/demo.json"))
        .expect("demo arrivals");
    (plan, sim::parse_arrivals(&text).expect("arrivals"))
}

/// Execution = WCET, and 30–100 % of it drawn with `seed`.
fn execs(seed: u64) -> [ExecModel; 2] {
    [
        ExecModel::Factor(1.0),
        ExecModel::Range {
            lo: 0.3,
            hi: 1.0,
            seed,
        },
    ]
}

/// Six frames of the demo under `policy` and `exec`, records kept.
fn run_demo(policy: Policy, exec: ExecModel, power: &dyn SlotPower) -> sim::SimOutput {
    let (plan, arrivals) = demo();
    let cfg = SimConfig {
        policy,
        freqs: Freqs::xeon_default(),
        frames: 6,
        exec,
        keep_records: true,
    };
    sim::simulate(&plan, &arrivals, &cfg, power, &mut |_| {}).expect("simulation runs")
}

fn xeon(idle: IdleGovernor) -> ModelPower {
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/models/xeon-gold-5218.json");
    let m = model::from_path(std::path::Path::new(&path)).expect("model");
    ModelPower {
        cluster: m.clusters[0].clone(),
        idle,
    }
}

#[test]
fn simulate_energy_equals_its_trace_recomputed_under_every_policy() {
    let slot_ns = demo().0.slot_us * 1000;
    for policy in Policy::ALL {
        let model = xeon(policy.idle_governor());
        let powers: [(&str, &dyn SlotPower); 2] = [
            ("placeholder", &PlaceholderPower::default()),
            ("xeon", &model),
        ];
        for (name, power) in powers {
            for exec in execs(11) {
                let out = run_demo(policy, exec, power);
                let want = recompute(&out.records, power, slot_ns);
                let got = out.report.energy_j;
                println!("{policy} {name} {exec:?}: simulate {got:.6} J, recomputed {want:.6} J");
                assert!(
                    (got - want).abs() <= 1e-9 * want.max(1e-12),
                    "{policy} {name} {exec:?}: simulate {got} J, its trace recomputed {want} J"
                );
            }
        }
    }
}

/// The issue's reproducer: under dvfs an idle slot is recorded at the minimum frequency and must
/// be charged there, not at full frequency (it was: 0.04088 J, about twice the right figure).
#[test]
fn dvfs_idle_slots_are_charged_at_their_recorded_frequency() {
    let plan = plan::from_str(
        r#"{"version":1,"slot_us":1000,"frame_slots":10,"cpus":{"managed":[1],"housekeeping":[0]},
            "tasks":[{"name":"a","comm":"a","class":"tt","cpu":1,"period":10,"wcet":2}]}"#,
    )
    .expect("plan");
    let power = xeon(IdleGovernor::Shallowest);
    let cfg = SimConfig {
        policy: Policy::Dvfs,
        freqs: Freqs::xeon_default(),
        frames: 1,
        exec: ExecModel::Factor(1.0),
        keep_records: true,
    };
    let out = sim::simulate(&plan, &[], &cfg, &power, &mut |_| {}).expect("runs");
    let idle: Vec<&SlotRecord> = out
        .records
        .iter()
        .filter(|r| r.kind == SlotKind::Idle)
        .collect();
    assert!(!idle.is_empty(), "the plan leaves idle slots");
    let fmin = idle[0].freq;
    assert!(
        fmin < 1.0,
        "dvfs idles at the minimum frequency, recorded {fmin}"
    );
    let (busy_j, idle_j): (f64, f64) = out.records.iter().fold((0.0, 0.0), |(b, i), r| {
        if r.kind == SlotKind::Idle {
            (b, i + power.idle_j(r.freq, 1e-3))
        } else {
            (b + power.busy_j(r.freq, 1e-3), i)
        }
    });
    let at_full: f64 = idle.len() as f64 * power.idle_j(1.0, 1e-3);
    println!(
        "dvfs: {} idle slots at f = {fmin:.3}: {idle_j:.6} J (at full frequency {at_full:.6} J); \
         busy {busy_j:.6} J; simulate {:.6} J",
        idle.len(),
        out.report.energy_j
    );
    assert!(
        idle_j < at_full,
        "polling at the minimum frequency costs less"
    );
    assert!((out.report.energy_j - (busy_j + idle_j)).abs() < 1e-12);
}

/// One rule for simulate and the estimator: with the model, `simulate`'s energy for the managed
/// cores equals `energy::estimate` of its own records under the policy's idle rule (the
/// estimator merges the idle rest of a slot with the idle slots after it at the same frequency).
#[test]
fn simulate_and_the_estimator_price_the_same_records_alike() {
    use scx_tt::energy::estimate::{estimate, EstimateOptions, Unlisted};
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/models/xeon-gold-5218.json");
    let m = model::from_path(std::path::Path::new(&path)).expect("model");
    let slot_us = demo().0.slot_us;
    for policy in Policy::ALL {
        let idle = policy.idle_governor();
        let power = xeon(idle);
        for exec in execs(5) {
            let out = run_demo(policy, exec, &power);
            let e = estimate(
                &m,
                &out.records,
                EstimateOptions {
                    slot_us,
                    idle,
                    unlisted: Unlisted::Excluded,
                },
            )
            .expect("estimate");
            let (got, want) = (out.report.energy_j, e.cpus_j());
            println!("{policy} {exec:?}: simulate {got:.6} J, estimator {want:.6} J");
            assert!(
                (got - want).abs() <= 1e-6 * want,
                "{policy} {exec:?}: simulate {got} J, the estimator {want} J"
            );
        }
    }
}

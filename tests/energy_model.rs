//! The power model and trace energy, checked against energies worked out by hand.
//!
//! Test model (`TINY`): one cluster of CPUs 0 and 1; P-states 1000 MHz → 1 W, 2000 MHz → 4 W;
//! idle states POLL (0 µs, 0 µs, active power), C1 (2 µs exit, 2 µs residency, 0.5 W), C6
//! (100 µs exit, 600 µs residency, 0.1 W); uncore 2 W; a frequency switch costs 10 µs.

use proptest::prelude::*;
use scx_tt::energy::estimate::{
    estimate, EnergyEstimate, EstimateError, EstimateOptions, IdleGovernor, Unlisted,
};
use scx_tt::energy::meter::ModelMeter;
use scx_tt::energy::model::{self, ModelError, PowerModel};
use scx_tt::trace::{SlotKind, SlotRecord};
use std::path::Path;

const TINY: &str = r#"{
  "format": 1, "name": "tiny", "uncore_w": 2.0,
  "clusters": [{
    "name": "c", "first_cpu": 0, "cpu_count": 2, "freq_switch_us": 10,
    "pstates": [{"mhz": 1000, "active_w": 1.0}, {"mhz": 2000, "active_w": 4.0}],
    "idle_states": [
      {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "active_fraction": 1.0},
      {"name": "C1", "exit_latency_us": 2, "target_residency_us": 2, "power_w": 0.5},
      {"name": "C6", "exit_latency_us": 100, "target_residency_us": 600, "power_w": 0.1}
    ]
  }]
}"#;

fn tiny() -> PowerModel {
    model::from_str(TINY).expect("tiny model is valid")
}

/// Built through serde so optional fields added to the trace format later default to absent.
fn rec(slot: u64, cpu: u32, kind: SlotKind, freq: f64) -> SlotRecord {
    serde_json::from_value(
        serde_json::json!({"slot": slot, "cpu": cpu, "kind": kind, "freq": freq}),
    )
    .expect("slot record")
}

fn opts(slot_us: u64, idle: IdleGovernor) -> EstimateOptions {
    EstimateOptions {
        slot_us,
        idle,
        unlisted: Unlisted::Excluded,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
}

fn run(recs: &[SlotRecord], o: EstimateOptions) -> EnergyEstimate {
    estimate(&tiny(), recs, o).expect("estimate")
}

#[test]
fn busy_cpu_at_full_speed_uses_active_power_times_duration() {
    // 10 slots of 1 ms at 2000 MHz: 4 W · 0.01 s = 0.04 J; uncore 2 W · 0.01 s = 0.02 J.
    let recs: Vec<_> = (0..10).map(|s| rec(s, 0, SlotKind::Tt, 1.0)).collect();
    let e = run(&recs, opts(1000, IdleGovernor::Deepest));
    assert!(close(e.duration_s, 0.01));
    assert!(close(e.cpus[0].active_j, 0.04));
    assert_eq!(e.cpus[0].idle_j, 0.0);
    assert!(close(e.package_j(), 0.06));
    assert!(close(e.package_w(), 6.0));
}

#[test]
fn unlisted_cpus_count_as_active_at_max() {
    // CPU 1 is not in the trace: + 4 W · 0.01 s = 0.04 J.
    let recs: Vec<_> = (0..10).map(|s| rec(s, 0, SlotKind::Tt, 1.0)).collect();
    let mut o = opts(1000, IdleGovernor::Deepest);
    o.unlisted = Unlisted::ActiveAtMax;
    let e = run(&recs, o);
    assert!(close(e.unlisted_j, 0.04));
    assert!(close(e.package_j(), 0.10));
}

#[test]
fn long_idle_period_goes_to_the_deepest_fitting_state() {
    // Busy, then 3 idle slots of 1 ms = one 3000 µs period ≥ 600 µs: C6.
    // idle       = 0.1 W · 0.003 s                                  = 0.0003 J
    // transition = (4 − 0.5) W · 2 µs + (0.5 − 0.1) W · 600 µs = 7 + 240 µJ = 0.000247 J
    //              (each state's target residency is its break-even against the shallower one)
    let recs = [
        rec(0, 0, SlotKind::Tt, 1.0),
        rec(1, 0, SlotKind::Idle, 1.0),
        rec(2, 0, SlotKind::Idle, 1.0),
        rec(3, 0, SlotKind::Idle, 1.0),
    ];
    let e = run(&recs, opts(1000, IdleGovernor::Deepest));
    let c = &e.cpus[0];
    assert!(close(c.active_j, 0.004));
    assert!(close(c.idle_j, 0.0003));
    assert!(close(c.transition_j, 0.000247));
    assert_eq!(c.idle_periods, 1);
    assert!(close(c.idle_state_s["C6"], 0.003));
}

#[test]
fn shallowest_governor_polls_at_active_power() {
    // The paper's BSS: 3 idle ms polling at 2000 MHz = 4 W · 0.003 s = 0.012 J, no exit cost.
    let recs = [
        rec(0, 0, SlotKind::Idle, 1.0),
        rec(1, 0, SlotKind::Idle, 1.0),
        rec(2, 0, SlotKind::Idle, 1.0),
    ];
    let e = run(&recs, opts(1000, IdleGovernor::Shallowest));
    assert!(close(e.cpus[0].idle_j, 0.012));
    assert_eq!(e.cpus[0].transition_j, 0.0);
    assert!(close(e.cpus[0].idle_state_s["POLL"], 0.003));
}

#[test]
fn short_idle_period_stops_at_c1() {
    // Slot 500 µs: one idle slot is 500 µs < 600 µs, so C1.
    // idle = 0.5 W · 0.0005 s = 0.00025 J; transition = (4 − 0.5) W · 2 µs = 0.000007 J.
    let recs = [rec(0, 0, SlotKind::Tt, 1.0), rec(1, 0, SlotKind::Idle, 1.0)];
    let e = run(&recs, opts(500, IdleGovernor::Deepest));
    assert!(close(e.cpus[0].idle_j, 0.00025));
    assert!(close(e.cpus[0].transition_j, 0.000007));
}

#[test]
fn frequency_switch_costs_the_higher_power() {
    // busy@2000, busy@1000 (f = 0.5): 4 W·1 ms + 1 W·1 ms = 0.005 J; one switch 10 µs·4 W.
    let recs = [rec(0, 0, SlotKind::Tt, 1.0), rec(1, 0, SlotKind::Tt, 0.5)];
    let e = run(&recs, opts(1000, IdleGovernor::Deepest));
    let c = &e.cpus[0];
    assert!(close(c.active_j, 0.005));
    assert_eq!(c.freq_switches, 1);
    assert!(close(c.transition_j, 0.00004));
    assert!(close(c.residency.seconds_at(1000), 0.001));
    assert!(close(c.residency.seconds_at(2000), 0.001));
}

#[test]
fn normalised_frequency_rounds_up_to_the_next_pstate() {
    // f = 0.6 needs 1200 MHz: only 2000 MHz is ≥, so 4 W.
    let recs = [rec(0, 0, SlotKind::Tt, 0.6)];
    let e = run(&recs, opts(1000, IdleGovernor::Deepest));
    assert!(close(e.cpus[0].active_j, 0.004));
}

#[test]
fn measured_run_time_splits_a_slot_into_busy_and_idle() {
    // 1000 µs slot, ran 400 µs: 4 W · 0.0004 = 0.0016 J busy; 600 µs idle fits C6:
    // 0.1 W · 0.0006 = 0.00006 J, transition 247 µJ (as above).
    let mut r = rec(0, 0, SlotKind::Tt, 1.0);
    r.ran_ns = Some(400_000);
    let e = run(&[r], opts(1000, IdleGovernor::Deepest));
    let c = &e.cpus[0];
    assert!(close(c.active_j, 0.0016));
    assert!(close(c.idle_j, 0.00006));
    assert!(close(c.transition_j, 0.000247));
}

#[test]
fn missing_slots_are_idle_at_the_last_frequency() {
    // Slots 0 and 3 busy, 1 and 2 missing: 2000 µs idle (C6) between them.
    let recs = [rec(0, 0, SlotKind::Tt, 1.0), rec(3, 0, SlotKind::Tt, 1.0)];
    let e = run(&recs, opts(1000, IdleGovernor::Deepest));
    assert!(close(e.duration_s, 0.004));
    assert!(close(e.cpus[0].idle_j, 0.1 * 0.002));
    assert!(close(e.cpus[0].busy_s, 0.002));
}

#[test]
fn errors_name_the_problem() {
    let bad_cpu = [rec(0, 7, SlotKind::Tt, 1.0)];
    assert_eq!(
        estimate(&tiny(), &bad_cpu, opts(1000, IdleGovernor::Deepest)),
        Err(EstimateError::UnknownCpu(7))
    );
    let bad_freq = [rec(3, 0, SlotKind::Tt, 0.0)];
    assert!(matches!(
        estimate(&tiny(), &bad_freq, opts(1000, IdleGovernor::Deepest)),
        Err(EstimateError::BadFreq {
            cpu: 0,
            slot: 3,
            ..
        })
    ));
    assert_eq!(
        estimate(&tiny(), &bad_cpu, opts(0, IdleGovernor::Deepest)),
        Err(EstimateError::ZeroSlot)
    );
}

fn invalid_field(text: &str) -> String {
    match model::from_str(text) {
        Err(ModelError::Invalid { field, .. }) => field,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn validation_names_the_offending_field() {
    let unsorted = TINY.replace(r#""mhz": 2000"#, r#""mhz": 900"#);
    assert_eq!(invalid_field(&unsorted), "clusters[0].pstates[1].mhz");
    let both = TINY.replace(
        r#""power_w": 0.5"#,
        r#""power_w": 0.5, "active_fraction": 1.0"#,
    );
    assert_eq!(invalid_field(&both), "clusters[0].idle_states[1].power_w");
    let negative = TINY.replace(r#""uncore_w": 2.0"#, r#""uncore_w": -1"#);
    assert_eq!(invalid_field(&negative), "uncore_w");
    let overlap = TINY.replace(
        r#""clusters": [{"#,
        r#""clusters": [{"name": "x", "first_cpu": 1, "cpu_count": 1,
            "pstates": [{"mhz": 1, "active_w": 1}], "idle_states": []}, {"#,
    );
    // "x" (clusters[0]) starts at CPU 1, inside "c" (clusters[1], CPUs 0-1).
    assert_eq!(invalid_field(&overlap), "clusters[0].first_cpu");
    let v2 = TINY.replace(r#""format": 1"#, r#""format": 2"#);
    assert!(matches!(model::from_str(&v2), Err(ModelError::Format(2))));
}

fn shipped(name: &str) -> PowerModel {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(name);
    model::from_path(&path).expect("shipped model is valid")
}

#[test]
fn xeon_model_matches_the_papers_part() {
    let m = shipped("xeon-gold-5218.json");
    assert_eq!(m.cpu_count(), 16);
    let c = &m.clusters[0];
    let mhz: Vec<u32> = c.pstates.iter().map(|p| p.mhz).collect();
    assert_eq!(mhz, (10..=23).map(|k| k * 100).collect::<Vec<_>>());
    // 16 cores at 2.3 GHz plus uncore is the 125 W TDP the model is anchored to.
    assert!((16.0 * c.active_w(1.0) + m.uncore_w - 125.0).abs() < 0.01);
    // 1.0 GHz of 2.3 GHz maps onto the 1.0 GHz P-state, not 1.1 GHz.
    assert_eq!(c.pstate_for(1000.0 / 2300.0).mhz, 1000);
    assert_eq!(c.pstate_for(0.44).mhz, 1100);
    let names: Vec<&str> = c.idle_states.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["POLL", "C1", "C1E", "C6"]);
}

#[test]
fn big_little_model_has_two_clusters_with_shared_policies() {
    let m = shipped("big-little-4x4.json");
    assert_eq!(m.cpu_count(), 8);
    let little = m.cluster_of(2).expect("cpu 2");
    let big = m.cluster_of(5).expect("cpu 5");
    assert!(little.shared_policy && big.shared_policy);
    assert!(little.max_mhz() < big.max_mhz());
    // A big core at full speed draws more than a LITTLE one.
    assert!(big.active_w(1.0) > 4.0 * little.active_w(1.0));
    assert!(m.cluster_of(8).is_none());
}

fn kinds() -> impl Strategy<Value = Vec<(bool, u8)>> {
    prop::collection::vec((any::<bool>(), 0u8..2), 1..200)
}

fn trace_of(pattern: &[(bool, u8)]) -> Vec<SlotRecord> {
    pattern
        .iter()
        .enumerate()
        .map(|(i, &(busy, f))| {
            let kind = if busy { SlotKind::Tt } else { SlotKind::Idle };
            rec(i as u64, 0, kind, if f == 0 { 0.5 } else { 1.0 })
        })
        .collect()
}

proptest! {
    /// Property 2: idling in the deepest fitting state never costs more than polling, because
    /// transition energies make every target residency a break-even time.
    #[test]
    fn deepest_idle_never_costs_more_than_polling(p in kinds(), slot_us in 100u64..3000) {
        let recs = trace_of(&p);
        let deep = run(&recs, opts(slot_us, IdleGovernor::Deepest));
        let poll = run(&recs, opts(slot_us, IdleGovernor::Shallowest));
        prop_assert!(deep.package_j() <= poll.package_j() + 1e-12);
        prop_assert!(close(deep.cpus[0].busy_s + deep.cpus[0].idle_s, deep.duration_s));
    }

    /// Property 3 and the live meter: feeding records one by one gives the batch package total.
    #[test]
    fn live_meter_agrees_with_the_batch_estimate(p in kinds(), slot_us in 100u64..3000) {
        let recs = trace_of(&p);
        let o = EstimateOptions { slot_us, idle: IdleGovernor::Deepest, unlisted: Unlisted::ActiveAtMax };
        let batch = estimate(&tiny(), &recs, o).expect("estimate");
        let mut live = ModelMeter::new(tiny(), o);
        for r in &recs {
            live.record(r).expect("record");
        }
        prop_assert!(close(live.joules(), batch.package_j()));
        let parts = batch.uncore_j + batch.unlisted_j + batch.cpus_j();
        prop_assert!(close(parts, batch.package_j()));
    }
}

#[test]
fn per_slot_tick_splits_idle_periods() {
    // Three idle slots of 1 ms. Merged: one C6 period with one transition (247 µJ).
    // Per-slot tick: three periods of 1000 µs, each C6 with its own transition: 3 · 247 µJ.
    let recs: Vec<_> = (0..3).map(|s| rec(s, 0, SlotKind::Idle, 1.0)).collect();
    let merged = run(&recs, opts(1000, IdleGovernor::Deepest));
    let split = run(&recs, opts(1000, IdleGovernor::DeepestPerSlot));
    assert_eq!(merged.cpus[0].idle_periods, 1);
    assert_eq!(split.cpus[0].idle_periods, 3);
    assert!(close(merged.cpus[0].transition_j, 0.000247));
    assert!(close(split.cpus[0].transition_j, 3.0 * 0.000247));
    assert!(close(split.cpus[0].idle_j, merged.cpus[0].idle_j));
    // 500 µs slots: each slot alone is too short for C6 (600 µs), together they are not.
    let merged = run(&recs, opts(500, IdleGovernor::Deepest));
    let split = run(&recs, opts(500, IdleGovernor::DeepestPerSlot));
    assert!(close(merged.cpus[0].idle_state_s["C6"], 0.0015));
    assert!(close(split.cpus[0].idle_state_s["C1"], 0.0015));
}

#[test]
fn target_residency_is_the_break_even_against_the_shallower_state() {
    // At exactly 600 µs, C6 (0.1 W, 247 µJ transition) and C1 (0.5 W, 7 µJ) cost the same:
    // 0.1 · 600 + 247 = 307 µJ = 0.5 · 600 + 7.
    let m = tiny();
    let c = &m.clusters[0];
    let cost =
        |k: usize, us: f64| c.idle_w(&c.idle_states[k], 1.0) * us * 1e-6 + c.transition_j(k, 1.0);
    assert!(close(cost(2, 600.0), cost(1, 600.0)));
    assert!(cost(2, 700.0) < cost(1, 700.0));
    assert!(cost(2, 500.0) > cost(1, 500.0));
    assert_eq!(c.transition_j(0, 1.0), 0.0);
}

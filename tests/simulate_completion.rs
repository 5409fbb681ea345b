//! Under `simulate`, a task's `completion` decides how its jobs' drawn execution ends (issue 13
//! item 2): `yield` and `block` end a job when its drawn execution is done (its later slots go to
//! others), `none` never ends a job early: it runs every job to its WCET. Judged from the slot
//! records: slots a task owns in each of its periods, counted here.

use scx_tt::plan;
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sim::power::PlaceholderPower;
use scx_tt::sim::{self, ExecModel, SimConfig};
use std::collections::BTreeMap;

/// Slots task `task` owns in each `period`-slot window of the records.
fn per_period(out: &sim::SimOutput, task: &str, period: u64) -> BTreeMap<u64, u64> {
    let mut n = BTreeMap::new();
    for r in &out.records {
        if r.task.as_deref() == Some(task) {
            *n.entry(r.slot / period).or_default() += 1;
        }
    }
    n
}

fn run(b_completion: &str) -> sim::SimOutput {
    let plan = plan::from_str(&format!(
        r#"{{"version":1,"slot_us":1000,"frame_slots":20,"cpus":{{"managed":[1],"housekeeping":[0]}},
            "tasks":[
              {{"name":"a","comm":"a","class":"tt","cpu":1,"period":10,"wcet":4,"completion":"yield"}},
              {{"name":"b","comm":"b","class":"tt","cpu":1,"period":20,"wcet":6,"completion":"{b_completion}"}}]}}"#
    ))
    .expect("plan");
    let cfg = SimConfig {
        policy: Policy::Bss,
        freqs: Freqs::xeon_default(),
        frames: 10,
        exec: ExecModel::Range {
            lo: 0.3,
            hi: 0.6,
            seed: 5,
        },
        keep_records: true,
    };
    sim::simulate(&plan, &[], &cfg, &PlaceholderPower::default(), &mut |_| {}).expect("runs")
}

#[test]
fn completion_none_runs_every_job_to_its_wcet_and_yield_ends_it_at_its_drawn_execution() {
    let none = run("none");
    let a = per_period(&none, "a", 10);
    let b = per_period(&none, "b", 20);
    println!("b none: slots per period {b:?}; a yield: {a:?}");
    assert_eq!(b.len(), 10, "every period of b ran");
    assert!(
        b.values().all(|&n| n == 6),
        "none: every job owns its 6 slots: {b:?}"
    );
    // a's jobs draw 30-60 % of 4 slots (1.2-2.4): 2 or 3 slots, never all 4
    assert!(a.values().all(|&n| (2..=3).contains(&n)), "yield: {a:?}");
    assert_eq!(none.report.guaranteed_misses, 0);

    let y = run("yield");
    let b = per_period(&y, "b", 20);
    println!("b yield: slots per period {b:?}");
    // 30-60 % of 6 slots: 1.8-3.6, so 2-4 slots
    assert!(b.values().all(|&n| (2..=4).contains(&n)), "yield: {b:?}");
    let block = run("block");
    assert_eq!(
        per_period(&block, "b", 20),
        b,
        "block ends a job where yield does (the simulation has no wake-ups)"
    );
}

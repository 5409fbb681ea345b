//! `scx_tt simulate`'s periodic admissions and removals, judged from the per-slot trace it
//! writes (which task owns which slot), not from its own report: task names map to the live task
//! (docs/simulate.md, "arrivals.json"), and an admitted task runs from the slot the admission
//! reports (docs/planner.md, "Frames and horizon").

mod common;

use scx_tt::trace::{read_trace, SlotRecord};
use serde_json::Value;

/// One managed CPU (1), frame 10 slots, t0 2 of every 10.
const ONE_CPU: &str = r#"{"version":1,"slot_us":10000,"cpus":{"managed":[1],"housekeeping":[0]},
  "tasks":[{"name":"t0","comm":"t0","class":"tt","period":10,"wcet":2}]}"#;

/// Two managed CPUs (1, 2), frame 10 slots: a on CPU 1, b on CPU 2, each 2 of every 10.
const TWO_CPUS: &str = r#"{"version":1,"slot_us":10000,"cpus":{"managed":[1,2],"housekeeping":[0]},
  "tasks":[{"name":"a","comm":"a","class":"tt","cpu":1,"period":10,"wcet":2},
           {"name":"b","comm":"b","class":"tt","cpu":2,"period":10,"wcet":2}]}"#;

/// Runs `simulate --json --trace` on `plan` and `arrivals`: the report and the trace records.
fn simulate(plan: &str, arrivals: &str, frames: u64) -> (Value, Vec<SlotRecord>) {
    // one directory per call: the tests of this file run in parallel
    let dir = common::fresh_temp_dir("sim-adm", "simulate");
    let (p, a, t) = (
        dir.join("plan.json"),
        dir.join("arr.json"),
        dir.join("t.jsonl"),
    );
    std::fs::write(&p, plan).expect("plan written");
    std::fs::write(&a, arrivals).expect("arrivals written");
    let out = common::scx_tt()
        .args([
            "simulate",
            "--json",
            "--frames",
            &frames.to_string(),
            "--table",
        ])
        .arg(&p)
        .arg("--arrivals")
        .arg(&a)
        .arg("--trace")
        .arg(&t)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let text = std::fs::read_to_string(&t).expect("trace written");
    let (_, records) = read_trace(&text).expect("trace reads");
    let _ = std::fs::remove_dir_all(&dir);
    (report, records)
}

/// Slots in which `task` owns a CPU, in order.
fn slots_of(records: &[SlotRecord], task: &str) -> Vec<u64> {
    records
        .iter()
        .filter(|r| r.task.as_deref() == Some(task))
        .map(|r| r.slot)
        .collect()
}

/// The admission records of `name` in the report, in order.
fn admissions<'a>(report: &'a Value, name: &str) -> Vec<&'a Value> {
    report["admissions"]
        .as_array()
        .expect("admissions")
        .iter()
        .filter(|a| a["name"] == name)
        .collect()
}

#[test]
fn a_task_removed_and_admitted_again_under_its_name_can_be_removed_again() {
    // Issue 13 item 8: vm admitted at 0 (runs from frame 3 = slot 30, 1 slot per 10), removed at
    // 35, admitted again at 36 (from frame 6 = slot 60), removed again at 75. Before the fix the
    // second removal looked the name up and found the first, dead task: vm ran on in 82..112.
    let arrivals = r#"[{"at_slot":0,"name":"vm","kind":"periodic","wcet":1,"period":10},
        {"at_slot":35,"name":"vm","kind":"remove"},
        {"at_slot":36,"name":"vm","kind":"periodic","wcet":1,"period":10},
        {"at_slot":75,"name":"vm","kind":"remove"}]"#;
    let (_, records) = simulate(ONE_CPU, arrivals, 12);
    // t0 and vm both due at the frame end: EDF runs t0 (the lower id) first, vm in slot 2 of
    // each frame it is in. Removed after slot 35's and 75's decisions: nothing after them.
    assert_eq!(slots_of(&records, "vm"), [32, 62, 72]);
    assert_eq!(slots_of(&records, "t0").len(), 12 * 2);
}

#[test]
fn a_periodic_admission_under_a_live_name_is_refused_and_changes_nothing() {
    let base = r#"[{"at_slot":0,"name":"vm","kind":"periodic","wcet":1,"period":10}"#;
    let (_, want) = simulate(ONE_CPU, &format!("{base}]"), 8);
    // vm again while the first vm is live, and the plan task's name: both refused, the trace is
    // the run without them, slot for slot.
    let (report, got) = simulate(
        ONE_CPU,
        &format!(
            r#"{base},
            {{"at_slot":4,"name":"vm","kind":"periodic","wcet":3,"period":10}},
            {{"at_slot":5,"name":"t0","kind":"periodic","wcet":1,"period":5}}]"#
        ),
        8,
    );
    let first_difference = got.iter().zip(&want).find(|(g, w)| g != w);
    assert!(
        got.len() == want.len() && first_difference.is_none(),
        "{} records, {} without the refused arrivals; first difference (got, want): \
         {first_difference:?}",
        got.len(),
        want.len()
    );
    let vm = admissions(&report, "vm");
    assert_eq!(vm.len(), 2);
    assert_eq!(vm[1]["accepted"], false);
    assert_eq!(
        vm[1]["reason"],
        "name = \"vm\": a live periodic task already has this name (admitted at slot 0); \
         remove it first"
    );
    assert_eq!(
        admissions(&report, "t0")[0]["reason"],
        "name = \"t0\": a live periodic task already has this name (a task of the plan); \
         remove it first"
    );
    assert_eq!(slots_of(&got, "vm"), [32, 42, 52, 62, 72]);
}

#[test]
fn a_removed_plan_task_frees_its_name_and_aperiodic_jobs_may_share_names() {
    // t0 removed at 5: its name is free, a periodic t0 (1 of every 5) joins from frame 3. Two firm
    // jobs called burst (one live while the other arrives) and one called t0 are all accepted;
    // removing t0 again at 44 removes the periodic t0 only (the firm job of that name was done).
    let arrivals = r#"[{"at_slot":5,"name":"t0","kind":"remove"},
        {"at_slot":6,"name":"t0","kind":"periodic","wcet":1,"period":5},
        {"at_slot":10,"name":"burst","kind":"aperiodic","wcet":3,"deadline":15},
        {"at_slot":11,"name":"burst","kind":"aperiodic","wcet":2,"deadline":15},
        {"at_slot":12,"name":"t0","kind":"aperiodic","wcet":1,"deadline":5},
        {"at_slot":44,"name":"t0","kind":"remove"}]"#;
    let (report, records) = simulate(ONE_CPU, arrivals, 6);
    let accepted: Vec<bool> = report["admissions"]
        .as_array()
        .expect("admissions")
        .iter()
        .map(|a| a["accepted"] == true)
        .collect();
    assert_eq!(accepted, [true; 6], "{report}");
    // The plan's t0 ran in slots 0 and 1 (removed after slot 5's decision, its job was done);
    // the firm t0 once in [13, 17); the periodic t0 once in every period of [30, 45).
    let t0 = slots_of(&records, "t0");
    let (plan_t0, rest): (Vec<u64>, Vec<u64>) = t0.iter().partition(|&&s| s < 10);
    assert_eq!(plan_t0, [0, 1]);
    assert_eq!(rest.iter().filter(|&&s| (13..17).contains(&s)).count(), 1);
    let periodic: Vec<u64> = rest.iter().copied().filter(|&s| s >= 30).collect();
    assert_eq!(periodic, [30, 35, 40], "{t0:?}");
    assert_eq!(slots_of(&records, "burst").len(), 5);
}

#[test]
fn a_periodic_task_runs_from_the_first_frame_its_cpu_has_not_started_building() {
    // Frame 10, 2 CPUs: CPU index 0 (id 1) builds frame k+2 from offset 0 of frame k, CPU index
    // 1 (id 2) from offset 1·5/2 = 2. Admitted after slot 1's decisions (frame 0, offset 1):
    // CPU 1 has built frame 2 with the old template, so p1 joins frame 3 (slot 30); CPU 2 has
    // not started frame 2, so p2 joins it (slot 20). Period 5: due before a's and b's jobs, so
    // EDF runs each at its first release, the reported slot.
    let arrivals = r#"[{"at_slot":1,"name":"p1","kind":"periodic","wcet":1,"period":5,"cpu":1},
        {"at_slot":1,"name":"p2","kind":"periodic","wcet":1,"period":5,"cpu":2}]"#;
    let (report, records) = simulate(TWO_CPUS, arrivals, 6);
    for (name, cpu, from) in [("p1", 1, 30), ("p2", 2, 20)] {
        let adm = admissions(&report, name);
        assert_eq!(
            (adm[0]["cpu"].as_u64(), adm[0]["bound_slot"].as_u64()),
            (Some(cpu), Some(from))
        );
        let ran = slots_of(&records, name);
        assert_eq!(ran.first(), Some(&from), "{name} ran in {ran:?}");
        assert!(records
            .iter()
            .all(|r| r.task.as_deref() != Some(name) || r.cpu == cpu as u32));
        // then once in every period
        let want: Vec<u64> = (from..60).step_by(5).collect();
        assert_eq!(ran, want, "{name}");
    }
    // The same tasks with the plan tasks' period 10 and wcet 2: the same frames; EDF runs a and
    // b first (equal deadlines, lower ids), so each runs 2 slots into every period from there.
    let arrivals = arrivals.replace(r#""wcet":1,"period":5"#, r#""wcet":2,"period":10"#);
    let (report, records) = simulate(TWO_CPUS, &arrivals, 6);
    for (name, from) in [("p1", 30), ("p2", 20)] {
        assert_eq!(
            admissions(&report, name)[0]["bound_slot"].as_u64(),
            Some(from)
        );
        let want: Vec<u64> = (from..60)
            .step_by(10)
            .flat_map(|s| [s + 2, s + 3])
            .collect();
        assert_eq!(slots_of(&records, name), want, "{name}");
    }
}

//! The kernel path's closed loop against a fake kernel written here, and the replay of its
//! planner log (issue 13, items 3–5).
//!
//! The fake kernel keeps its own copy of the table map (only the writes the planner hands out
//! change it), starts each slot with the entry it holds, runs the owner's job for a drawn share
//! of its WCET (the owner's "job done" state is kept here the way BPF keeps it: set at the
//! completion, cleared at an entry with the job-start flag) and publishes the slot's observation
//! one turn later. The replay of the planner log must then name, slot for slot, the owner the
//! fake kernel ran: 100 % without late slots; with planner stalls, every difference is a slot
//! the planner decided late.

mod common;

use scx_tt::plan::{self, Plan};
use scx_tt::planner::kernel_path::{
    entry_task, FirmJob, FirmOutcome, KernelPathConfig, KernelPlanner, SlotObs, JOB_START,
};
use scx_tt::planner::replay::{agreement, replay};
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sched::config::SchedConfig;
use std::collections::HashMap;

/// One managed CPU, tt tasks a (period 10, wcet 4) and b (period 20, wcet 6), a be task, and
/// f, a tt task in no table (`start: admitted`) whose slots are only ever a firm job's; 1 ms
/// slots, frame 20.
const PLAN: &str = r#"{ "version": 1, "slot_us": 1000,
  "cpus": { "managed": [1], "housekeeping": [0] },
  "tasks": [
    { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 10, "wcet": 4 },
    { "name": "b", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 6 },
    { "name": "c", "pid": 12, "class": "be" },
    { "name": "f", "pid": 13, "class": "tt", "cpu": 1, "period": 20, "wcet": 1,
      "start": "admitted" }
  ] }"#;
const SLOT_NS: u64 = 1_000_000;
/// Plan task index of f.
const FIRM_TASK: u32 = 3;

fn plan() -> Plan {
    plan_of(PLAN)
}

fn plan_of(text: &str) -> Plan {
    plan::from_str(text).unwrap_or_else(|e| panic!("{e}"))
}

/// The VM test's plan (tests/vm/scenarios/planner_loop): a 7 of every 10 slots, b 2 of 20.
const HEAVY: &str = r#"{ "version": 1, "slot_us": 1000,
  "cpus": { "managed": [1], "housekeeping": [0] },
  "tasks": [
    { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 10, "wcet": 7 },
    { "name": "b", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 2 },
    { "name": "c", "pid": 12, "class": "be" },
    { "name": "f", "pid": 13, "class": "tt", "cpu": 1, "period": 20, "wcet": 1,
      "start": "admitted" }
  ] }"#;

fn table(plan: &Plan) -> Vec<u32> {
    SchedConfig::from_plan(plan, 0, &[0, 1, 2, 3])
        .expect("config")
        .entries()
}

fn planner(plan: &Plan, policy: Policy, closed: bool) -> KernelPlanner {
    let cfg = KernelPathConfig {
        policy,
        lead: 2,
        frame_slots: plan.frame_slots,
        slot_ns: SLOT_NS,
        freqs: Freqs::xeon_default(),
    };
    let mut p = KernelPlanner::new(&plan.planner_inputs(), plan.tasks.len(), cfg, table(plan))
        .expect("planner mode");
    if closed {
        p.close_loop();
    }
    p
}

struct Outcome {
    /// (cpu index, slot, owner) as the fake kernel ran it.
    kernel: Vec<(usize, u64, Option<u32>)>,
    accepted: u64,
    completed_in_time: bool,
    late: u64,
    counts: scx_tt::planner::kernel_path::LoopCounts,
    log: Vec<scx_tt::planner::kernel_path::LogEvent>,
}

/// `slots` slots; jobs run `pct`% of their WCET (in whole slots, at least 1); a firm job of
/// `firm.1` slots due `firm.2` after slot `firm.0` for task a; the planner thread misses its
/// turns in the slots of `stalls`.
fn drive(closed: bool, slots: u64, pct: u64, firm: (u64, u64, u64), stalls: &[u64]) -> Outcome {
    drive_plan(PLAN, closed, slots, pct, firm, stalls)
}

fn drive_plan(
    text: &str,
    closed: bool,
    slots: u64,
    pct: u64,
    firm: (u64, u64, u64),
    stalls: &[u64],
) -> Outcome {
    let plan = plan_of(text);
    let wcets: Vec<u64> = plan.cpus[0].jobs.iter().fold(vec![0; 2], |mut w, j| {
        if j.task < 2 {
            w[j.task] = j.wcet;
        }
        w
    });
    let mut p = planner(&plan, Policy::Bss, closed);
    p.enable_log();
    let frame = plan.frame_slots as usize;
    let mut map = table(&plan);
    // per plan task: slots its current job still needs, done state
    let mut need: HashMap<u32, u64> = HashMap::new();
    let mut done: HashMap<u32, bool> = HashMap::new();
    let wcet = |t: u32| match t {
        0 | 1 => wcets[t as usize],
        _ => firm.1,
    };
    // a and b finish early; the firm job (task f) runs its whole WCET
    let share = |t: u32| if t == FIRM_TASK { 100 } else { pct };
    let mut pending_obs: Vec<(usize, u64, SlotObs)> = Vec::new();
    let mut kernel = Vec::new();
    let (mut accepted, mut firm_left, mut firm_deadline) = (0, 0u64, 0u64);
    let mut completed_in_time = true;
    let write = |map: &mut Vec<u32>, ws: &[scx_tt::planner::kernel_path::EntryWrite]| {
        for w in ws {
            if let Some(t) = w.task {
                map[w.cpu * frame + w.frame_slot as usize] = t;
            }
        }
    };
    let adv = p.advance(None).expect("advance");
    write(&mut map, &adv.writes);
    for s in 0..slots {
        // the planner thread's turn in slot s (unless stalled): observations, then decisions
        if !stalls.contains(&s) {
            for (cpu, slot, o) in pending_obs.drain(..) {
                let w = p.observe(cpu, slot, o, Some(s));
                write(&mut map, &w);
            }
            let adv = p.advance(Some(s)).expect("advance");
            write(&mut map, &adv.writes);
        }
        if s == firm.0 {
            let job = FirmJob {
                task: FIRM_TASK as usize,
                cpu: 0,
                wcet: firm.1,
                deadline_slots: firm.2,
            };
            if let FirmOutcome::Accepted { deadline_slot, .. } = p.admit_firm(&job, s) {
                accepted += 1;
                firm_left = firm.1;
                firm_deadline = deadline_slot;
            }
        }
        // the kernel runs slot s with the entry it holds
        let e = map[s as usize % frame];
        let owner = entry_task(e);
        kernel.push((0, s, owner));
        let obs = match owner {
            Some(t) => {
                if e & JOB_START != 0 {
                    done.insert(t, false);
                    need.insert(t, (wcet(t) * share(t)).div_ceil(100).max(1));
                }
                if done.get(&t).copied().unwrap_or(false) {
                    SlotObs::Seen {
                        owner,
                        done: false,
                        owner_ns: 0,
                        avail_ns: 0,
                    }
                } else {
                    let n = need.entry(t).or_insert(wcet(t));
                    *n = n.saturating_sub(1);
                    let fin = *n == 0;
                    if fin {
                        done.insert(t, true);
                    }
                    SlotObs::Seen {
                        owner,
                        done: fin,
                        owner_ns: if fin { SLOT_NS / 2 } else { SLOT_NS },
                        avail_ns: SLOT_NS,
                    }
                }
            }
            None => SlotObs::Seen {
                owner: None,
                done: false,
                owner_ns: 0,
                avail_ns: 0,
            },
        };
        pending_obs.push((0, s, obs));
    }
    if accepted > 0 {
        // judged from the slots the kernel ran: f's slots before the deadline
        let f_slots = kernel
            .iter()
            .filter(|&&(_, s, o)| o == Some(FIRM_TASK) && s < firm_deadline)
            .count() as u64;
        firm_left = firm_left.saturating_sub(f_slots);
        completed_in_time = firm_left == 0;
    }
    let (log, truncated) = p.take_log();
    assert!(!truncated);
    Outcome {
        kernel,
        accepted,
        completed_in_time,
        late: p.late_slots(),
        counts: p.counts(),
        log,
    }
}

#[test]
fn the_closed_loop_reclaims_and_the_replay_names_every_slot_the_kernel_ran() {
    let slots = 400;
    let out = drive(true, slots, 25, (42, 9, 12), &[]);
    println!("closed loop: {:?}", out.counts);
    assert!(out.counts.completed > 20, "{:?}", out.counts);
    assert!(
        out.counts.voided > 0 && out.counts.rewritten > 0,
        "{:?}",
        out.counts
    );
    assert_eq!(out.counts.misses, 0);
    assert_eq!(
        (out.counts.worst_case, out.counts.owner_mismatch),
        (0, 0),
        "{:?}",
        out.counts
    );
    let replayed = replay(planner(&plan(), Policy::Bss, true), &out.log).expect("replay");
    let (same, total, diffs) = agreement(&replayed, out.kernel.iter().copied());
    println!("replay: {same} of {total} slots identical");
    assert_eq!(total, slots);
    assert!(diffs.is_empty(), "{diffs:?}");
}

#[test]
fn a_firm_job_the_worst_case_rejects_is_accepted_with_reclaim_and_runs_in_time() {
    // Admitted in slot 42 (lead 2: slots up to 44 are decided, the job can use [45, 54)).
    // Under the worst case a's and b's jobs hold their WCETs and 7 slots do not fit; with the
    // observations (a's first job of the frame done after 1 slot, seen one turn later) the
    // slots it held come back and they do. The case was found by `search` below (ignored).
    let open = drive(false, 200, 25, (42, 7, 12), &[]);
    let closed = drive(true, 200, 25, (42, 7, 12), &[]);
    println!(
        "firm 7 slots due in 12: worst case accepted {}, closed loop accepted {}",
        open.accepted, closed.accepted
    );
    assert_eq!(open.accepted, 0);
    assert_eq!(closed.accepted, 1);
    assert!(closed.completed_in_time);
}

#[test]
fn with_planner_stalls_every_difference_is_a_late_slot() {
    let stalls: Vec<u64> = (100..104).chain(250..253).collect();
    let out = drive(true, 400, 50, (500, 1, 1), &stalls);
    let replayed = replay(planner(&plan(), Policy::Bss, true), &out.log).expect("replay");
    let (same, total, diffs) = agreement(&replayed, out.kernel.iter().copied());
    println!(
        "stalls: {} late slots, replay {same} of {total} identical, differences {diffs:?}",
        out.late
    );
    assert!(out.late > 0);
    assert!(diffs.len() as u64 <= out.late, "{diffs:?}");
    assert_eq!(replayed.late_slots, out.late);
}

/// Where the worst case rejects and the closed loop accepts a firm job of task f that then
/// runs in time (prints the cases; by hand: `--ignored search`).
#[test]
#[ignore]
fn search() {
    for at in 40..60 {
        for w in 4..12 {
            for d in 6..16 {
                let open = drive(false, 120, 25, (at, w, d), &[]);
                let closed = drive(true, 120, 25, (at, w, d), &[]);
                if open.accepted == 0 && closed.accepted == 1 && closed.completed_in_time {
                    println!("found at {at} wcet {w} deadline {d}");
                }
            }
        }
    }
}

/// Share of arrival slots where a firm job is accepted, worst case vs closed loop, on the VM
/// test's plan with jobs taking 10 % of their WCET (by hand: `--ignored search_wcet`).
#[test]
#[ignore]
fn search_wcet() {
    for pct in [10, 30, 50] {
        for (w, d) in [(4u64, 8u64), (5, 10), (6, 12), (8, 12), (8, 16), (10, 20)] {
            let share = |closed: bool| {
                (40..140)
                    .filter(|&at| {
                        drive_plan(HEAVY, closed, at + 2, pct, (at, w, d), &[]).accepted == 1
                    })
                    .count()
            };
            println!(
                "jobs {pct} % of WCET, firm wcet {w} deadline {d}: accepted at {} of 100 arrival \
                 slots under the worst case, {} with the loop closed",
                share(false),
                share(true)
            );
        }
    }
}

/// `scx_tt simulate --replay LOG --replay-trace TRACE` on a fake kernel's run: the files as the
/// kernel path writes them, the figures as the VM tests read them.
#[test]
fn simulate_replay_prints_conformance_and_the_reclaim_of_each_admission() {
    let out = drive(true, 200, 25, (42, 7, 12), &[]);
    let dir = common::temp_dir("replay", "simulate");
    let plan_path = dir.join("plan.json");
    std::fs::write(&plan_path, PLAN).unwrap();
    let mut p = planner(&plan(), Policy::Bss, true);
    p.enable_log();
    let header = p.take_full_log().unwrap().0;
    let mut log = Vec::new();
    scx_tt::planner::replay::write_log(&mut log, &header, &out.log).unwrap();
    std::fs::write(dir.join("run.plog"), log).unwrap();
    let names = ["a", "b", "c", "f"];
    let trace: String = out
        .kernel
        .iter()
        .map(|&(_, slot, owner)| {
            let rec = scx_tt::trace::SlotRecord {
                slot,
                cpu: 1,
                kind: if owner.is_some() {
                    scx_tt::trace::SlotKind::Tt
                } else {
                    scx_tt::trace::SlotKind::Idle
                },
                task: owner.map(|t| names[t as usize].to_string()),
                freq: 1.0,
                idle_until: None,
                ran_ns: Some(0),
                stolen_ns: Some(0),
                late_ns: Some(0),
            };
            serde_json::to_string(&rec).unwrap() + "\n"
        })
        .collect();
    std::fs::write(dir.join("run.trace"), trace).unwrap();
    let run = common::scx_tt()
        .args(["simulate", "--table"])
        .arg(&plan_path)
        .arg("--replay")
        .arg(dir.join("run.plog"))
        .arg("--replay-trace")
        .arg(dir.join("run.trace"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    println!("{text}{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success());
    assert!(
        text.contains("conformance: 200 of 200 slots identical (100.00 %)"),
        "{text}"
    );
    assert!(
        text.contains("reclaim: 1 of 1 firm admissions accepted with the loop closed, 0 under the worst case; 1 accepted only with reclaim"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

//! Planner mode: periodic admissions of tasks declared `"start": "admitted"` and removals.

use super::*;
use crate::plan::{self, Start};
use crate::sched::config::SchedConfig;

/// `ONE_CPU` of tests.rs plus three admitted tasks on CPU 1: v (period 50, wcet 10) fits next
/// to a and b (40 of 100 slots), w (period 100, wcet 80) never does, x (period 100, wcet 50)
/// only without v. `{v}` is v's start.
const PLAN: &str = r#"{ "version": 1, "slot_us": 10000,
  "cpus": { "managed": [1], "housekeeping": [0] },
  "tasks": [
    { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 50, "wcet": 10 },
    { "name": "b", "pid": 11, "class": "tt", "cpu": 1, "period": 100, "wcet": 20 },
    { "name": "c", "pid": 12, "class": "be" },
    { "name": "v", "pid": 13, "class": "tt", "cpu": 1, "period": 50, "wcet": 10, "start": "{v}" },
    { "name": "w", "pid": 14, "class": "tt", "cpu": 1, "period": 100, "wcet": 80, "start": "admitted" },
    { "name": "x", "pid": 15, "class": "tt", "cpu": 1, "period": 100, "wcet": 50, "start": "admitted" }
  ] }"#;
const A: u32 = 0;
const B: u32 = 1;
const V: usize = 3;
const W: usize = 4;
const X: usize = 5;
const FRAME: u64 = 100;

fn load(v_start: &str) -> Plan {
    plan::from_str(&PLAN.replace("{v}", v_start)).unwrap_or_else(|e| panic!("{e}"))
}

fn online(plan: &Plan, lead: u64) -> OnlinePlanner {
    let online: Vec<u32> = (0..4).collect();
    let table = SchedConfig::from_plan(plan, 0, &online)
        .expect("config")
        .table;
    OnlinePlanner::new(plan, Policy::Bss, lead, table, Freqs::xeon_default()).expect("planner")
}

fn periodic(plan: &Plan, task: usize) -> PeriodicTask {
    let Start::Admitted { period, wcet } = plan.tasks[task].start else {
        panic!("{} is not declared admitted", plan.tasks[task].name);
    };
    PeriodicTask {
        task,
        cpu: 0,
        period,
        wcet,
    }
}

/// Runs the kernel-side loop with lead 2 over `slots` slots: before slot `s` starts (the
/// thread has decided up to `s + 1`), `act(s, planner)` may admit or remove. Returns the
/// owner of every slot as the table held it when the slot ran.
fn run(plan: &Plan, slots: u64, mut act: impl FnMut(u64, &mut OnlinePlanner)) -> Vec<u32> {
    let mut p = online(plan, 2);
    let online: Vec<u32> = (0..4).collect();
    let mut table = SchedConfig::from_plan(plan, 0, &online)
        .expect("config")
        .table;
    let apply = |adv: Advance, table: &mut Vec<u32>| {
        for w in adv.writes {
            if let Some(task) = w.task {
                table[w.frame_slot as usize] = task;
            }
        }
    };
    apply(p.advance(None).expect("step"), &mut table);
    let mut owners = Vec::new();
    for s in 0..slots {
        act(s, &mut p);
        apply(p.advance(Some(s)).expect("step"), &mut table);
        assert_eq!(p.late_slots(), 0);
        owners.push(table[(s % FRAME) as usize]);
    }
    owners
}

fn count(owners: &[u32], from: u64, to: u64, task: u32) -> usize {
    owners[from as usize..to as usize]
        .iter()
        .filter(|&&t| t == task)
        .count()
}

#[test]
fn an_admitted_task_owns_nothing_before_its_first_frame_and_then_what_a_table_task_would() {
    let plan = load("admitted");
    let mut reply = None;
    let owners = run(&plan, 6 * FRAME, |s, p| {
        if s == 130 {
            reply = Some(p.admit_periodic(&periodic(&plan, V)));
        }
    });
    let Some(PeriodicOutcome::Accepted { cpu, from_slot }) = reply else {
        panic!("expected an acceptance, got {reply:?}");
    };
    // admitted during frame k = 1: frame 2 is being built with the old template, v joins from
    // frame k + 3 (docs/planner.md "Frames and horizon")
    assert_eq!(cpu, 0);
    assert_eq!(from_slot, (130 / FRAME + 3) * FRAME);
    assert_eq!(
        count(&owners, 0, from_slot, V as u32),
        0,
        "nothing before F"
    );
    // From F on, the decisions equal those of a planner that had v in its table from slot 0.
    let reference = run(&load("table"), 6 * FRAME, |_, _| {});
    assert_eq!(
        &owners[from_slot as usize..],
        &reference[from_slot as usize..],
        "from F = {from_slot} on"
    );
    for f in from_slot / FRAME..6 {
        let (lo, hi) = (f * FRAME, (f + 1) * FRAME);
        for (task, share) in [(V as u32, 20), (A, 20), (B, 20)] {
            assert_eq!(count(&owners, lo, hi, task), share, "frame {f} task {task}");
        }
        for k in 0..2 {
            let (plo, phi) = (lo + k * 50, lo + (k + 1) * 50);
            assert_eq!(
                count(&owners, plo, phi, V as u32),
                10,
                "period [{plo}, {phi})"
            );
        }
    }
}

#[test]
fn a_rejection_names_the_edf_miss_and_changes_no_entry() {
    let plan = load("admitted");
    let mut reply = None;
    let owners = run(&plan, 4 * FRAME, |s, p| {
        if s == 130 {
            let before = p.now();
            reply = Some(p.admit_periodic(&periodic(&plan, W)));
            assert_eq!(p.now(), before);
        }
    });
    let Some(PeriodicOutcome::Rejected(r @ Rejection::Infeasible { cpu: 0, miss })) = &reply else {
        panic!("expected an EDF miss on CPU index 0, got {reply:?}");
    };
    assert_eq!(miss.wcet, 80);
    assert!(miss.remaining > 0);
    assert!(
        r.to_string().contains("frame infeasible on CPU index 0"),
        "{r}"
    );
    let untouched = run(&plan, 4 * FRAME, |_, _| {});
    assert_eq!(owners, untouched, "a rejection changes no entry");
}

#[test]
fn a_removed_task_owns_nothing_from_now_and_its_capacity_admits_another_at_once() {
    let plan = load("table");
    let mut removed = None;
    let mut before_removal = None;
    let mut after_removal = None;
    let owners = run(&plan, 6 * FRAME, |s, p| {
        if s == 140 {
            // x needs 50 of the 40 free slots per frame while v runs
            before_removal = Some(p.admit_periodic(&periodic(&plan, X)));
            removed = Some(p.remove(V));
            after_removal = Some(p.admit_periodic(&periodic(&plan, X)));
        }
    });
    assert!(
        matches!(before_removal, Some(PeriodicOutcome::Rejected(_))),
        "{before_removal:?}"
    );
    let Some((true, from)) = removed else {
        panic!("{removed:?}");
    };
    assert_eq!(from, 142, "slots 140 and 141 were decided (lead 2)");
    let Some(PeriodicOutcome::Accepted { from_slot, .. }) = after_removal else {
        panic!("x fits once v is gone: {after_removal:?}");
    };
    assert_eq!(from_slot, (140 / FRAME + 3) * FRAME);
    assert_eq!(
        count(&owners, from, 6 * FRAME, V as u32),
        0,
        "v after {from}"
    );
    assert!(count(&owners, 100, from, V as u32) > 0, "v ran before");
    assert_eq!(count(&owners, 0, from_slot, X as u32), 0);
    for f in from_slot / FRAME..6 {
        let (lo, hi) = (f * FRAME, (f + 1) * FRAME);
        for (task, share) in [(X as u32, 50), (A, 20), (B, 20)] {
            assert_eq!(count(&owners, lo, hi, task), share, "frame {f} task {task}");
        }
    }
    // Removing again finds nothing.
    let mut p = online(&plan, 2);
    assert!(p.remove(V).0);
    assert!(!p.remove(V).0);
}

/// Independent oracle: implicit-deadline periodic tasks released together are EDF-feasible on
/// one CPU iff their utilization is at most 1 (Liu and Layland). a and b use 40 of 100 slots,
/// so a task of `wcet` every `period` slots fits iff 40 + (100 / period) · wcet <= 100.
#[test]
fn acceptance_equals_the_utilization_bound_for_every_period_and_wcet() {
    let plan = load("admitted");
    let mut cases = 0;
    for period in (1..=FRAME).filter(|p| FRAME.is_multiple_of(*p)) {
        for wcet in 1..=period {
            let mut p = online(&plan, 2);
            p.advance(None).expect("step");
            for s in 0..30 {
                p.advance(Some(s)).expect("step");
            }
            let task = PeriodicTask {
                task: V,
                cpu: 0,
                period,
                wcet,
            };
            let fits = 40 + FRAME / period * wcet <= FRAME;
            let got = p.admit_periodic(&task);
            assert_eq!(
                matches!(got, PeriodicOutcome::Accepted { from_slot: 300, .. }),
                fits,
                "{wcet} every {period}: {got:?}"
            );
            cases += 1;
        }
    }
    assert_eq!(cases, 217);
}

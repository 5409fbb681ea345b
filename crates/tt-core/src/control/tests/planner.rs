//! Planner mode: `admit_firm`, `set_policy`, `admit_periodic` and `remove` against a real
//! kernel-path planner owned by the fake engine; every refusal; an engine without a planner.

use super::*;
use crate::control::request::{AdmitFirm, SetPolicy, TaskArg};

fn firm(task: &str, wcet: u64, deadline: u64) -> Request {
    Request::AdmitFirm(AdmitFirm {
        task: task.into(),
        wcet_slots: wcet,
        deadline_slots: deadline,
    })
}

fn policy(policy: Policy) -> Request {
    Request::SetPolicy(SetPolicy { policy })
}

fn admit(task: &str) -> Request {
    Request::AdmitPeriodic(TaskArg { task: task.into() })
}

fn remove(task: &str) -> Request {
    Request::Remove(TaskArg { task: task.into() })
}

/// The planner's task states in `c`'s status, as (task, state, from slot).
fn states(c: &mut Control, e: &mut FakeEngine) -> Vec<(String, TaskState, u64)> {
    e.planner_status(c)
        .tasks
        .into_iter()
        .map(|t| (t.task, t.state, t.from_slot))
        .collect()
}

#[test]
fn every_planner_op_is_refused_without_planner_mode() {
    let mut c = control();
    let mut e = FakeEngine::at(at(3));
    for (request, op) in [
        (firm("a", 2, 10), "admit_firm"),
        (policy(Policy::Dvfs), "set_policy"),
        (admit("v"), "admit_periodic"),
        (remove("a"), "remove"),
    ] {
        assert_eq!(
            error(e.send(&mut c, &request)),
            format!(
                "op = \"{op}\": only in planner mode (this scx_tt enforces the static table; \
                 start it with --planner bss)"
            )
        );
    }
    assert!(e.notes.is_empty());
}

#[test]
fn property_2_every_planner_op_is_refused_in_a_sequenced_run_and_changes_nothing() {
    // --planner with --demos: the DEmOS sequencer writes the table, not the planner
    let (c, mut e) = planner_run(3, at(3));
    let mut c = c.sequenced();
    let before = (
        state_of(&mut c, &mut e),
        e.planner.as_ref().map(|p| p.fingerprint()),
    );
    let admit_line =
        r#"{"op":"admit","name":"vm1","select":{"pid":3},"period_slots":8,"wcet_slots":1}"#;
    for (line, op) in [
        (line_of(&firm("a", 2, 10)), "admit_firm"),
        (line_of(&policy(Policy::Dvfs)), "set_policy"),
        (line_of(&admit("v")), "admit_periodic"),
        (line_of(&remove("a")), "remove"),
        (admit_line.to_string(), "admit"),
    ] {
        assert_eq!(
            error(e.serve(&mut c, &line)),
            format!(
                "op = \"{op}\": refused: the run follows a DEmOS sequence (--demos with \
                 --planner): its sequencer writes the table, so admissions, removals and policy \
                 swaps would not be applied to it; nothing changed (run without --demos to admit)"
            )
        );
    }
    // status is served and nothing changed: no admission counted, no note, no task added
    let p = e.planner_status(&mut c);
    assert_eq!((p.admissions_accepted, p.admissions_rejected), (0, 0));
    assert_eq!(
        (
            state_of(&mut c, &mut e),
            e.planner.as_ref().map(|p| p.fingerprint())
        ),
        before
    );
    assert!(e.notes.is_empty() && e.added.is_empty() && c.take_journal().is_none());
    assert_eq!(c.metrics_live().admissions_rejected, 0);
}

#[test]
fn property_2_admit_firm_names_an_unknown_task_and_a_be_task_and_changes_nothing() {
    let (mut c, mut e) = planner_run(3, at(3));
    let before = state_of(&mut c, &mut e);
    assert_eq!(
        error(e.send(&mut c, &firm("zz", 2, 10))),
        "task = \"zz\": no task of the plan has this name (its tt tasks: a, b, v)"
    );
    assert_eq!(
        error(e.send(&mut c, &firm("c", 2, 10))),
        "task = \"c\": is not a tt task; firm jobs run in a tt task's threads on its CPU (its tt \
         tasks: a, b, v)"
    );
    assert_eq!(
        error(e.serve(
            &mut c,
            r#"{"op":"admit_firm","task":"a","wcet_slots":0,"deadline_slots":9}"#
        )),
        "wcet_slots: invalid value: integer `0`, expected an integer of at least 1 (slots)"
    );
    // nothing was counted
    assert_eq!(state_of(&mut c, &mut e), before);
    let p = e.planner_status(&mut c);
    assert_eq!((p.admissions_accepted, p.admissions_rejected), (0, 0));
    assert!(e.notes.is_empty());
}

#[test]
fn admit_firm_runs_on_the_task_cpu_due_from_the_current_slot_and_counts_the_answers() {
    // a and b take 5 of the 8 slots of each frame on CPU 1; at 13.5 slots the planner has
    // decided up to slot 15 (lead 2), so the first slot a job can get is 16
    let (mut c, mut e) = planner_run(3, at(13));
    let accepted = e.send(&mut c, &firm("b", 2, 10));
    assert_eq!(
        accepted.to_line(),
        "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"deadline_slot\":23,\"first_slot\":16}\n"
    );
    // the planner took it for plan task 1 (b), 2 slots
    assert_eq!(
        e.notes,
        [format!(
            "admit_firm 2 (task 1): {}",
            accepted.to_line().trim_end()
        )]
    );
    // due at 33, clamped to the planner's horizon (the frames 16..24 and 24..32 seen from 16):
    // 1 slot left in the first frame, 3 in the second
    let rejected = e.send(&mut c, &firm("b", 40, 20));
    assert_eq!(
        rejected.to_line(),
        "{\"ok\":true,\"accepted\":false,\"needed\":40,\"available\":4,\"deadline_slot\":32}\n"
    );
    e.now.set(at(14));
    assert_eq!(
        e.send(&mut c, &Request::Status).to_line(),
        "{\"ok\":true,\"slot\":14,\"frame_slots\":8,\"table\":\"/p/a.json\",\
         \"pending_switch_slot\":null,\"planner\":{\"policy\":\"bss\",\"lead_slots\":2,\
         \"admissions_accepted\":1,\"admissions_rejected\":1}}\n"
    );
}

#[test]
fn property_2_set_policy_refuses_an_unknown_policy_and_changes_nothing() {
    let (mut c, mut e) = planner_run(3, at(3));
    let before = state_of(&mut c, &mut e);
    assert_eq!(
        error(e.serve(&mut c, r#"{"op":"set_policy","policy":"turbo"}"#)),
        "policy: invalid value: string \"turbo\", expected a policy name: \"bss\", \"dvfs\", \
         \"dpm\" or \"dpm+dvfs\""
    );
    assert_eq!(state_of(&mut c, &mut e), before);
    assert_eq!(e.planner_status(&mut c).policy, "bss");
    assert_eq!(e.planner.as_ref().map(|p| p.policy()), Some(Policy::Bss));
    assert!(e.notes.is_empty());
}

#[test]
fn set_policy_to_dpm_is_served_from_the_next_undecided_slot() {
    let (mut c, mut e) = planner_run(3, at(3));
    for p in [Policy::Dpm, Policy::DpmDvfs] {
        let reply = e.send(&mut c, &policy(p)).to_line();
        assert!(
            reply.starts_with(&format!("{{\"ok\":true,\"policy\":\"{p}\",\"from_slot\":")),
            "{reply}"
        );
        assert_eq!(e.planner.as_ref().map(|x| x.policy()), Some(p));
    }
}

#[test]
fn property_4_set_policy_swaps_the_planner_and_status_reports_the_policy_in_force() {
    // at 3.5 slots the planner has decided up to slot 5: the swap takes effect from 6
    let (mut c, mut e) = planner_run(3, at(3));
    assert_eq!(
        e.send(&mut c, &policy(Policy::Dvfs)).to_line(),
        "{\"ok\":true,\"policy\":\"dvfs\",\"from_slot\":6}\n"
    );
    assert_eq!(e.planner.as_ref().map(|p| p.policy()), Some(Policy::Dvfs));
    assert_eq!(e.planner_status(&mut c).policy, "dvfs");
    assert_eq!(e.notes, ["set_policy bss -> dvfs from slot 6"]);
}

#[test]
fn admit_periodic_takes_only_a_task_declared_admitted_with_its_plan_timing() {
    let (mut c, mut e) = planner_run(3, T0_NS);
    let before = state_of(&mut c, &mut e);
    for name in ["a", "c", "nope"] {
        assert_eq!(
            error(e.send(&mut c, &admit(name))),
            format!(
                "task = \"{name}\": is not declared \"start\": \"admitted\" in the plan; only \
                 such a task can be admitted as a periodic task (they are: v)"
            )
        );
    }
    assert_eq!(state_of(&mut c, &mut e), before);
    // from the first frame the planner has not built yet
    let accepted = e.send(&mut c, &admit("v"));
    assert_eq!(
        accepted.to_line(),
        "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"from_slot\":24}\n"
    );
    // plan task 2 (v) on its CPU
    assert_eq!(
        e.notes,
        [format!(
            "admit_periodic (task 2): {}",
            accepted.to_line().trim_end()
        )]
    );
}

#[test]
fn property_4_an_acceptance_is_recorded_a_second_admission_refused_and_a_rejection_records_nothing()
{
    // a takes 5 slots: v's 2 more do not fit with b's 2 in a frame of 8
    let (mut c, mut e) = planner_run(5, T0_NS);
    let Answer::PeriodicRejected { why } = answer(e.send(&mut c, &admit("v"))) else {
        panic!("expected a rejection");
    };
    assert!(
        why.starts_with("2 slots every 8 slots on cpu 1: frame infeasible on CPU index 0"),
        "{why}"
    );
    assert!(states(&mut c, &mut e).is_empty());
    // the statistics count the rejection, and nothing else
    let live = c.metrics_live();
    assert_eq!((live.admissions_accepted, live.admissions_rejected), (0, 1));
    assert_eq!(live.policy, "bss");

    let (mut c, mut e) = planner_run(3, T0_NS);
    assert_eq!(
        answer(e.send(&mut c, &admit("v"))),
        Answer::PeriodicAccepted {
            cpu: 1,
            from_slot: 24
        }
    );
    assert_eq!(
        states(&mut c, &mut e),
        [("v".into(), TaskState::Admitted, 24)]
    );
    assert_eq!(
        error(e.send(&mut c, &admit("v"))),
        "task = \"v\": is already running (admitted from slot 24); remove it first"
    );
    // a refused request is not an admission the acceptance test decided
    let live = c.metrics_live();
    assert_eq!((live.admissions_accepted, live.admissions_rejected), (1, 0));
}

#[test]
fn remove_takes_a_running_tt_task_and_status_lists_the_change() {
    let (mut c, mut e) = planner_run(3, at(3));
    assert_eq!(
        error(e.send(&mut c, &remove("v"))),
        "task = \"v\": is not running (it is declared \"start\": \"admitted\" and was not \
         admitted); nothing to remove"
    );
    assert!(error(e.send(&mut c, &remove("c"))).starts_with("task = \"c\": is not a tt task"));
    assert!(error(e.send(&mut c, &remove("x"))).starts_with("task = \"x\": no task of the plan"));
    // at 3.5 slots the planner has decided up to slot 5
    assert_eq!(
        e.send(&mut c, &remove("a")).to_line(),
        "{\"ok\":true,\"removed\":true,\"from_slot\":6}\n"
    );
    assert_eq!(e.notes, ["remove (task 0): no slots from slot 6"]);
    assert_eq!(
        error(e.send(&mut c, &remove("a"))),
        "task = \"a\": is not running (it was removed from slot 6); nothing to remove"
    );
    // v admitted, then removed: each task's latest state, in the order of first change
    e.now.set(at(9));
    assert!(matches!(
        answer(e.send(&mut c, &admit("v"))),
        Answer::PeriodicAccepted { .. }
    ));
    e.now.set(at(30));
    assert_eq!(
        answer(e.send(&mut c, &remove("v"))),
        Answer::Removed { from_slot: 33 }
    );
    assert_eq!(
        states(&mut c, &mut e),
        [
            ("a".into(), TaskState::Removed, 6),
            ("v".into(), TaskState::Removed, 33)
        ]
    );
    // a removed admitted task can be admitted again
    assert!(matches!(
        answer(e.send(&mut c, &admit("v"))),
        Answer::PeriodicAccepted { .. }
    ));
}

#[test]
fn property_2_without_a_planner_the_engine_refuses_every_planner_op_and_nothing_changes() {
    let mut c = control().with_planner("bss", 2);
    let mut e = FakeEngine::at(at(3));
    let before = state_of(&mut c, &mut e);
    for request in [
        firm("a", 2, 10),
        policy(Policy::Dvfs),
        admit("v"),
        remove("a"),
    ] {
        assert_eq!(
            error(e.send(&mut c, &request)),
            "the planner is not available: the fake run has no planner"
        );
    }
    assert_eq!(state_of(&mut c, &mut e), before);
    assert!(e.notes.is_empty());
}

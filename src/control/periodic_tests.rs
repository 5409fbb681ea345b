//! The control state machine's `admit_periodic` and `remove`: validation, replies, status.

use super::*;
use crate::plan;
use crate::planner::runtime::Rejection;

const T0_NS: u64 = 1_000_000_000;

/// CPU 1 holds tt a (in the table) and v (declared admitted, period 8 wcet 2); c is be.
const PLAN: &str = r#"{ "version": 1, "slot_us": 10000,
  "cpus": { "managed": [1], "housekeeping": [0] },
  "tasks": [
    { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 8, "wcet": 3 },
    { "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 8, "wcet": 2, "start": "admitted" },
    { "name": "c", "pid": 12, "class": "be" }
  ] }"#;

fn control(planner: bool) -> Control {
    let plan = plan::from_str(PLAN).unwrap_or_else(|e| panic!("{e}"));
    let clock = SlotClock::new(T0_NS, plan.slot_us * 1000);
    let c = Control::new(plan, "/p/a.json".into(), clock);
    if planner {
        c.with_planner("bss", 2)
    } else {
        c
    }
}

fn no_plans(p: &Path) -> Result<Plan, LoadError> {
    Err(LoadError::Io {
        path: p.to_path_buf(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    })
}

fn handle(c: &mut Control, request: Request) -> Step {
    c.handle(&request.to_line(), || T0_NS, no_plans)
}

fn admit(task: &str) -> Request {
    Request::AdmitPeriodic { task: task.into() }
}

fn remove(task: &str) -> Request {
    Request::Remove { task: task.into() }
}

fn error_of(step: Step) -> String {
    match step {
        Step::Reply(Reply::Error { ok: false, error }) => error,
        other => panic!("expected an error reply, got {other:?}"),
    }
}

fn changes(c: &mut Control) -> Vec<TaskChange> {
    match handle(c, Request::Status) {
        Step::Reply(Reply::Status {
            planner: Some(p), ..
        }) => p.tasks,
        other => panic!("expected a planner status, got {other:?}"),
    }
}

#[test]
fn both_ops_are_refused_without_planner_mode() {
    let mut c = control(false);
    assert_eq!(
        error_of(handle(&mut c, admit("v"))),
        "op = \"admit_periodic\": only in planner mode (this scx_tt enforces the static table; \
         start it with --planner bss)"
    );
    assert!(error_of(handle(&mut c, remove("a"))).starts_with("op = \"remove\": only in planner"));
}

#[test]
fn admit_periodic_takes_only_a_task_declared_admitted_with_its_plan_timing() {
    let mut c = control(true);
    for name in ["a", "c", "nope"] {
        assert_eq!(
            error_of(handle(&mut c, admit(name))),
            format!(
                "task = \"{name}\": is not declared \"start\": \"admitted\" in the plan; only \
                 such a task can be admitted as a periodic task (they are: v)"
            )
        );
    }
    let Step::AdmitPeriodic(t) = handle(&mut c, admit("v")) else {
        panic!("expected a periodic admission");
    };
    assert_eq!(
        t,
        PeriodicTask {
            task: 1,
            cpu: 0,
            period: 8,
            wcet: 2
        }
    );
    // nothing recorded until the caller reports the planner's answer
    assert!(changes(&mut c).is_empty());
}

#[test]
fn an_acceptance_is_recorded_a_second_admission_refused_and_a_rejection_records_nothing() {
    let mut c = control(true);
    let Step::AdmitPeriodic(t) = handle(&mut c, admit("v")) else {
        panic!("expected a periodic admission");
    };
    let miss = crate::planner::offline::Miss {
        job: 3,
        task: 1,
        instance: 0,
        deadline: 8,
        remaining: 1,
        wcet: 2,
    };
    let rejected = c.periodic_admission(
        &t,
        &PeriodicOutcome::Rejected(Rejection::Infeasible { cpu: 0, miss }),
    );
    let Reply::PeriodicRejected {
        ok: true,
        accepted: false,
        why,
    } = &rejected
    else {
        panic!("{rejected:?}");
    };
    assert!(
        why.starts_with("2 slots every 8 slots on cpu 1: frame infeasible on CPU index 0"),
        "{why}"
    );
    assert!(changes(&mut c).is_empty());
    let accepted = c.periodic_admission(
        &t,
        &PeriodicOutcome::Accepted {
            cpu: 0,
            from_slot: 24,
        },
    );
    assert_eq!(
        accepted.to_line(),
        "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"from_slot\":24}\n"
    );
    for r in [&rejected, &accepted] {
        let back: Reply = serde_json::from_str(&r.to_line()).expect("parses");
        assert_eq!(&back, r);
    }
    assert_eq!(
        changes(&mut c),
        vec![TaskChange {
            task: "v".into(),
            state: "admitted".into(),
            from_slot: 24
        }]
    );
    assert_eq!(
        error_of(handle(&mut c, admit("v"))),
        "task = \"v\": is already running (admitted from slot 24); remove it first"
    );
}

#[test]
fn remove_takes_a_running_tt_task_and_status_lists_the_change() {
    let mut c = control(true);
    assert_eq!(
        error_of(handle(&mut c, remove("v"))),
        "task = \"v\": is not running (it is declared \"start\": \"admitted\" and was not \
         admitted); nothing to remove"
    );
    assert!(error_of(handle(&mut c, remove("c"))).starts_with("task = \"c\": is not a tt task"));
    assert!(error_of(handle(&mut c, remove("x"))).starts_with("task = \"x\": no task of the plan"));
    let Step::Remove { task } = handle(&mut c, remove("a")) else {
        panic!("expected a removal");
    };
    assert_eq!(task, 0);
    let r = c.removed(task, 9);
    assert_eq!(
        r.to_line(),
        "{\"ok\":true,\"removed\":true,\"from_slot\":9}\n"
    );
    let back: Reply = serde_json::from_str(&r.to_line()).expect("parses");
    assert_eq!(back, r);
    assert_eq!(
        error_of(handle(&mut c, remove("a"))),
        "task = \"a\": is not running (it was removed from slot 9); nothing to remove"
    );
    // v admitted, then removed: each task's latest state, in the order of first change
    let Step::AdmitPeriodic(t) = handle(&mut c, admit("v")) else {
        panic!("expected a periodic admission");
    };
    c.periodic_admission(
        &t,
        &PeriodicOutcome::Accepted {
            cpu: 0,
            from_slot: 24,
        },
    );
    let Step::Remove { task } = handle(&mut c, remove("v")) else {
        panic!("expected a removal");
    };
    c.removed(task, 30);
    let got: Vec<(String, String, u64)> = changes(&mut c)
        .into_iter()
        .map(|c| (c.task, c.state, c.from_slot))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a".into(), "removed".into(), 9),
            ("v".into(), "removed".into(), 30)
        ]
    );
    // a removed admitted task can be admitted again
    assert!(matches!(handle(&mut c, admit("v")), Step::AdmitPeriodic(_)));
}

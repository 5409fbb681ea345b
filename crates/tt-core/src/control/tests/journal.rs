//! The control journal (`--resume`, crates/tt-core/src/control/journal.rs): after any sequence of requests the
//! journal holds exactly what rebuilds the run's state. Judged by an independent replay: a fresh
//! control and planner serve the journal's lines, and the tasks that run, the tasks removed and
//! the policy in force must equal the original's; a refused request never changes the journal.

use super::*;
use crate::control::request::{Admit, AdmitSelector, SetPolicy, TaskArg};
use crate::plan::{QemuSelector, Selector};

/// The requests of the sequences: admissions by pid and of a 2-vCPU VM, periodic admission and
/// removal of plan tasks, policy swaps, firm jobs (never journaled), and nonsense.
fn pool() -> Vec<Request> {
    let admit = |name: &str, select: AdmitSelector, p: u64, w: u64| {
        Request::Admit(Admit {
            period_slots: Some(p),
            wcet_slots: Some(w),
            ..Admit::new(name, select)
        })
    };
    let task = |t: &str| TaskArg { task: t.into() };
    vec![
        admit("app", AdmitSelector::Pid(500), 8, 1),
        admit("big", AdmitSelector::Pid(510), 8, 3),
        admit("vm", AdmitSelector::QemuName("vm".into()), 8, 1),
        admit("ghost", AdmitSelector::Pid(999), 8, 1),
        Request::AdmitPeriodic(task("v")),
        Request::Remove(task("v")),
        Request::Remove(task("b")),
        Request::Remove(task("app")),
        Request::Remove(task("vm")),
        Request::SetPolicy(SetPolicy {
            policy: Policy::Dvfs,
        }),
        Request::SetPolicy(SetPolicy {
            policy: Policy::Bss,
        }),
        Request::AdmitFirm(request::AdmitFirm {
            task: "a".into(),
            wcet_slots: 1,
            deadline_slots: 30,
        }),
        Request::Status,
    ]
}

fn engine_with_threads(e: FakeEngine) -> FakeEngine {
    e.with_threads(&Selector::Pid(500), &[500])
        .with_threads(&Selector::Pid(510), &[510])
        .with_threads(
            &Selector::Qemu(QemuSelector::Name("vm".into())),
            &[601, 602],
        )
}

/// What the journal must rebuild: (task, state) of every task that runs by a request or was
/// removed by one, sorted, and the policy. A task the plan declares admitted (v) that was
/// removed is as the plan says: not running, as if never admitted; so is a task `admit` added
/// and a request removed (it left the plan: its admission left the journal).
fn state_of(c: &mut Control, e: &mut FakeEngine) -> (Vec<(String, String)>, String) {
    let p = e.planner_status(c);
    let mut tasks: Vec<(String, String)> = p
        .tasks
        .iter()
        .filter(|t| t.state != TaskState::Gone)
        .filter(|t| !(t.task == "v" && t.state == TaskState::Removed))
        .filter(|t| {
            let planned = ["a", "b", "c", "v"].contains(&t.task.as_str());
            planned || t.state != TaskState::Removed
        })
        .map(|t| (t.task.clone(), format!("{:?}", t.state)))
        .collect();
    tasks.sort();
    (tasks, p.policy)
}

#[test]
fn replaying_the_journal_on_a_fresh_run_rebuilds_the_state() {
    let pool = pool();
    let mut seed = 0x9e3779b97f4a7c15u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for case in 0..300 {
        let (mut c, e) = planner_run(3, at(3));
        let mut e = engine_with_threads(e);
        let mut log = Vec::new();
        let mut alive: Vec<u32> = vec![500, 510, 601, 602];
        for step in 0..next(12) + 1 {
            e.now.set(at(3 + 5 * step as u64));
            if next(6) == 0 {
                // a process or the VM exits: its task is reaped and leaves the journal
                let who = [500u32, 510, 601][next(3)];
                alive.retain(|&t| t != who && !(who == 601 && t == 602));
                e.threads
                    .retain(|_, tids| tids.iter().all(|t| alive.contains(t)));
                c.reap(&mut e, |t| alive.contains(&t));
                log.push(format!("exit {who}"));
                let _ = c.take_journal();
                continue;
            }
            let r = &pool[next(pool.len())];
            let reply = e.send(&mut c, r).to_line();
            log.push(format!("{} -> {}", line_of(r).trim_end(), reply.trim_end()));
            let changed = c.take_journal();
            if reply.contains("\"ok\":false") || reply.contains("\"accepted\":false") {
                assert_eq!(
                    changed, None,
                    "case {case}: a refusal changed the journal\n{log:#?}"
                );
            }
            if matches!(r, Request::AdmitFirm(_) | Request::Status) {
                assert_eq!(changed, None, "case {case}: {r:?} is not journaled");
            }
        }
        let want = state_of(&mut c, &mut e);
        let lines = c.journal.lines();
        // the replay: a fresh run, the same processes still there
        let (mut fresh, e2) = planner_run(3, at(500));
        let mut e2 = engine_with_threads(e2);
        e2.threads
            .retain(|_, tids| tids.iter().all(|t| alive.contains(t)));
        for line in &lines {
            let reply = e2.serve(&mut fresh, line.trim_end()).to_line();
            assert!(
                reply.contains("\"ok\":true") && !reply.contains("\"accepted\":false"),
                "case {case}: {line} -> {reply}\n{log:#?}"
            );
        }
        assert_eq!(
            state_of(&mut fresh, &mut e2),
            want,
            "case {case}: journal {lines:#?}\n{log:#?}"
        );
        assert_eq!(
            fresh.journal.lines(),
            lines,
            "case {case}: the replay journals the same"
        );
    }
}

#[test]
fn the_journal_keeps_the_latest_per_thing_and_forgets_what_the_plan_says_anyway() {
    let (mut c, e) = planner_run(3, at(3));
    let mut e = engine_with_threads(e);
    let task = |t: &str| TaskArg { task: t.into() };
    for r in [
        Request::SetPolicy(SetPolicy {
            policy: Policy::Dvfs,
        }),
        Request::AdmitPeriodic(task("v")),
        Request::SetPolicy(SetPolicy {
            policy: Policy::Bss,
        }),
        Request::Remove(task("b")),
    ] {
        e.send(&mut c, &r);
    }
    assert_eq!(
        c.take_journal(),
        Some(vec![
            "{\"op\":\"admit_periodic\",\"task\":\"v\"}\n".to_string(),
            "{\"op\":\"set_policy\",\"policy\":\"bss\"}\n".to_string(),
            "{\"op\":\"remove\",\"task\":\"b\"}\n".to_string(),
        ])
    );
    // v is declared admitted: removing it is what the plan says, nothing to journal
    e.send(&mut c, &Request::Remove(task("v")));
    assert_eq!(
        c.take_journal(),
        Some(vec![
            "{\"op\":\"set_policy\",\"policy\":\"bss\"}\n".to_string(),
            "{\"op\":\"remove\",\"task\":\"b\"}\n".to_string(),
        ])
    );
}

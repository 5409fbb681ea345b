//! `admit` with constrained windows (`offset_slots`, `deadline_slots`) and aperiodic tasks (one
//! job of `wcet_slots` before `deadline_slots`, then `after`: be or leave). The plan: one
//! managed CPU (1), frame 8, tt tasks a (3 of 8) and b (2 of 8) in the table. Judged by
//! references written here: the demand bound of the frame's jobs for the periodic test, and
//! the owner of every slot the planner decides (from its table writes) for the slots a task
//! gets.

use super::admit::snapshot;
use super::*;
use crate::abi::entry_task;
use crate::control::request::{Admit, AdmitSelector, AfterJob};
use crate::plan::{Class, Selector};

const FRAME: u64 = 8;
/// The BPF index the first added task gets (after the plan's four tasks).
const FIRST: u32 = 4;

fn request(name: &str, pid: u32, f: impl FnOnce(&mut Admit)) -> Request {
    let mut a = Admit::new(name, AdmitSelector::Pid(pid));
    f(&mut a);
    Request::Admit(a)
}

/// Steps the planner (and `c`'s jobs, as the run loop does each turn) through kernel slots
/// `from..until`, and returns the owner of every slot it decided, as BPF reads it from the
/// table: (slot, BPF task index or None).
fn run(c: &mut Control, e: &mut FakeEngine, from: u64, until: u64) -> Vec<(u64, Option<u32>)> {
    let mut shadow = vec![NO_TASK; FRAME as usize];
    let mut owners = Vec::new();
    for cur in from..until {
        e.now.set(at(cur));
        let p = e.planner.as_mut().expect("planner");
        let before = p.now();
        let adv = p.advance(Some(cur)).expect("in order");
        for w in &adv.writes {
            if let Some(t) = w.task {
                shadow[w.frame_slot as usize] = t;
            }
        }
        for s in before..p.now() {
            owners.push((s, entry_task(shadow[(s % FRAME) as usize])));
        }
        c.finish_jobs(e);
    }
    owners
}

/// Whether the frame's jobs — a (3 slots) and b (2 slots) in [0, 8), and one job of `w` slots
/// in [k·p + o, k·p + o + d) for each period k — are feasible on one CPU: every interval holds
/// at most its length of the jobs that lie inside it (the demand criterion, exact for jobs
/// within one frame).
fn feasible(p: u64, w: u64, o: u64, d: u64) -> bool {
    let mut jobs = vec![(0, FRAME, 3), (0, FRAME, 2)];
    jobs.extend((0..FRAME / p).map(|k| (k * p + o, k * p + o + d, w)));
    (0..FRAME).all(|t1| {
        (t1 + 1..=FRAME).all(|t2| {
            let demand: u64 = jobs
                .iter()
                .filter(|&&(r, dl, _)| r >= t1 && dl <= t2)
                .map(|j| j.2)
                .sum();
            demand <= t2 - t1
        })
    })
}

/// Every (period, wcet, offset, deadline) the rule allows on a frame of 8: accepted exactly
/// when the demand criterion holds, and then each of the task's jobs gets its wcet inside its
/// window, and no slot outside it.
#[test]
fn constrained_windows_are_admitted_exactly_when_feasible_and_confine_every_job() {
    let (mut tried, mut accepted) = (0, 0);
    for p in [1u64, 2, 4, 8] {
        for o in 0..p {
            for d in 1..=p - o {
                for w in 1..=d {
                    let (mut c, e) = planner_run(3, at(3));
                    let mut e = e.with_threads(&Selector::Pid(500), &[500]);
                    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
                    let r = request("app", 500, |a| {
                        a.period_slots = Some(p);
                        a.wcet_slots = Some(w);
                        a.offset_slots = (o > 0).then_some(o);
                        a.deadline_slots = Some(d);
                    });
                    let before = snapshot(&mut c, &mut e);
                    let answer = answer(e.send(&mut c, &r));
                    let want = feasible(p, w, o, d);
                    tried += 1;
                    let from = match answer {
                        Answer::TaskAdmitted { tasks } => {
                            assert!(want, "p {p} w {w} o {o} d {d}: accepted, infeasible");
                            let t = &tasks[0];
                            assert_eq!((t.period_slots, t.wcet_slots, t.offset_slots), (p, w, o));
                            assert_eq!(t.deadline_slots, Some(d).filter(|&d| d != p));
                            t.from_slot
                        }
                        Answer::PeriodicRejected { why } => {
                            assert!(!want, "p {p} w {w} o {o} d {d}: rejected ({why})");
                            assert_eq!(snapshot(&mut c, &mut e), before, "a rejection changed");
                            continue;
                        }
                        other => panic!("{other:?}"),
                    };
                    accepted += 1;
                    assert_eq!(from % FRAME, 0, "joins at a frame start");
                    let owners = run(&mut c, &mut e, 3, from + 3 * FRAME);
                    let mine: Vec<u64> = owners
                        .iter()
                        .filter(|&&(s, t)| s >= from && t == Some(FIRST))
                        .map(|&(s, _)| s)
                        .collect();
                    let decided = owners.iter().filter(|&&(s, _)| s >= from).count() as u64;
                    for k in 0..decided / p {
                        let (lo, hi) = (from + k * p + o, from + k * p + o + d);
                        let inside = mine.iter().filter(|&&s| s >= lo && s < hi).count();
                        assert_eq!(inside as u64, w, "p {p} w {w} o {o} d {d}: job {k}");
                    }
                    for s in &mine {
                        let q = (s - from) % p;
                        assert!(q >= o && q < o + d, "p {p} o {o} d {d}: slot {s} outside");
                    }
                }
            }
        }
    }
    println!("{accepted} of {tried} windowed timings accepted, all as the demand criterion says");
    assert!(accepted > 10 && accepted < tried, "{accepted} of {tried}");
}

/// The timing rule, against its statement: period dividing the frame, offset + deadline within
/// the period, wcet within the deadline; each refusal names the field.
#[test]
fn the_window_rule_is_the_plans_and_names_the_field() {
    for p in 1..=9u64 {
        for o in 0..=9u64 {
            for d in 1..=9u64 {
                for w in 1..=9u64 {
                    let Request::Admit(r) = request("x", 1, |a| {
                        a.period_slots = Some(p);
                        a.wcet_slots = Some(w);
                        a.offset_slots = Some(o);
                        a.deadline_slots = Some(d);
                    }) else {
                        unreachable!()
                    };
                    let ok = FRAME.is_multiple_of(p) && o + d <= p && w <= d;
                    match timing(&r, FRAME, 1000) {
                        Ok(t) => {
                            assert!(ok, "{p} {w} {o} {d}");
                            assert_eq!(
                                t,
                                AdmitTiming::Periodic {
                                    period: p,
                                    wcet: w,
                                    offset: o,
                                    deadline: d
                                }
                            );
                        }
                        Err((field, value, rule)) => {
                            assert!(!ok, "{p} {w} {o} {d}: {field} {rule}");
                            let want = if !FRAME.is_multiple_of(p) {
                                "period_slots"
                            } else if o + d > p {
                                "deadline_slots"
                            } else {
                                "wcet_slots"
                            };
                            assert_eq!(field, want, "{p} {w} {o} {d}: {rule}");
                            assert!(!value.is_empty() && !rule.is_empty());
                        }
                    }
                }
            }
        }
    }
    let err = |f: fn(&mut Admit)| {
        let (mut c, e) = planner_run(3, at(3));
        let mut e = e.with_threads(&Selector::Pid(1), &[1]);
        error(e.send(&mut c, &request("x", 1, f)))
    };
    assert_eq!(
        err(|a| {
            a.period_slots = Some(8);
            a.wcet_slots = Some(1);
            a.offset_slots = Some(2);
            a.deadline_slots = Some(7);
        }),
        "deadline_slots = 7: offset_slots 2 + deadline_slots 7 must be at most period_slots = 8 \
         (each job inside its period)"
    );
    assert_eq!(
        err(|a| {
            a.wcet_slots = Some(5);
            a.deadline_slots = Some(4);
        }),
        "wcet_slots = 5: must be at most deadline_slots = 4"
    );
    assert!(err(|a| {
        a.wcet_slots = Some(1);
        a.offset_slots = Some(1);
        a.deadline_slots = Some(4);
    })
    .starts_with("offset_slots = Some(1): needs period_slots"));
    assert!(err(|a| {
        a.period_slots = Some(8);
        a.wcet_slots = Some(1);
        a.after = Some(AfterJob::Leave);
    })
    .starts_with("after = Some(Leave): only an aperiodic task"));
    assert!(err(|a| a.wcet_slots = Some(1)).starts_with("deadline_slots = None: give"));
}

/// An aperiodic task: its job gets exactly its slots, all before its deadline slot, none after;
/// once the kernel is past the last of them its threads leave the task for a be task `NAME/be`
/// on the same CPU (`after` be, the default) or for the housekeeping CPUs (`leave`); `status`
/// and the journal follow.
#[test]
fn an_aperiodic_job_gets_its_slots_before_its_deadline_and_its_threads_then_move_on() {
    for after in [None, Some(AfterJob::Leave)] {
        let (mut c, e) = planner_run(3, at(3));
        let mut e = e.with_threads(&Selector::Pid(900), &[900, 901]);
        let r = request("job", 900, |a| {
            a.wcet_slots = Some(2);
            a.deadline_slots = Some(12);
            a.after = after;
        });
        let Answer::TaskAdmitted { tasks } = answer(e.send(&mut c, &r)) else {
            panic!("rejected");
        };
        let t = &tasks[0];
        assert_eq!((t.period_slots, t.wcet_slots), (0, 2));
        assert_eq!(t.after, Some(after.unwrap_or(AfterJob::Be)));
        let deadline = t
            .deadline_slot
            .expect("an aperiodic reply names its deadline slot");
        assert!(deadline <= 3 + 12, "deadline slot {deadline}");
        let line = Reply::Ok(Answer::TaskAdmitted {
            tasks: tasks.clone(),
        })
        .to_line();
        assert!(
            line.contains(&format!("\"deadline_slot\":{deadline}")),
            "{line}"
        );
        assert_eq!(e.added, vec![(1, vec![900, 901])]);
        c.take_journal();
        // the planner decides; the run loop's turns move the threads once the job is over
        let mut released_at = None;
        let mut owners = Vec::new();
        for cur in 3..40 {
            owners.extend(run(&mut c, &mut e, cur, cur + 1));
            if released_at.is_none() && !e.released.is_empty() {
                released_at = Some(cur);
            }
        }
        let mine: Vec<u64> = owners
            .iter()
            .filter(|&&(_, o)| o == Some(FIRST))
            .map(|&(s, _)| s)
            .collect();
        assert_eq!(mine.len(), 2, "{mine:?}");
        assert!(
            mine.iter().all(|&s| s >= t.from_slot && s < deadline),
            "{mine:?}"
        );
        let released_at = released_at.expect("released after the job");
        assert!(
            released_at > *mine.last().unwrap(),
            "released in slot {released_at}, before its last slot {mine:?}"
        );
        assert_eq!(e.released, vec![(FIRST as usize, Some(1))]);
        let tasks = e.planner_status(&mut c).tasks;
        let state = |n: &str| tasks.iter().find(|t| t.task == n).map(|t| t.state);
        assert_eq!(state("job"), Some(TaskState::Done));
        let journal = c.take_journal().expect("the journal changed");
        match after {
            None => {
                assert_eq!(state("job/be"), Some(TaskState::Admitted));
                assert_eq!(e.added.len(), 2);
                assert_eq!(e.added[1], (1, vec![900, 901]));
                assert_eq!(e.classes[1], Class::Be);
                assert_eq!(
                    journal,
                    vec![
                        "{\"op\":\"admit\",\"name\":\"job\",\"select\":{\"pid\":900},\
                          \"class\":\"be\"}\n"
                            .to_string()
                    ]
                );
                // removing the VM's name takes the be task out too
                let line = e
                    .send(
                        &mut c,
                        &Request::Remove(request::TaskArg { task: "job".into() }),
                    )
                    .to_line();
                assert!(line.starts_with("{\"ok\":true,\"removed\":true"), "{line}");
                assert_eq!(e.released.len(), 2);
            }
            Some(_) => {
                assert_eq!(state("job/be"), None);
                assert_eq!(e.added.len(), 1, "leave: no be task");
                assert!(journal.is_empty(), "{journal:?}");
            }
        }
        assert!(
            e.notes
                .iter()
                .any(|n| n.contains("its job had its 2 slots")),
            "{:?}",
            e.notes
        );
    }
}

/// An aperiodic job that does not fit is rejected with the planner's numbers; a VM's vCPUs are
/// admitted all or none (the second of two does not fit: neither is); nothing changes.
#[test]
fn an_aperiodic_job_that_does_not_fit_is_rejected_with_numbers_and_changes_nothing() {
    let (mut c, e) = planner_run(3, at(3));
    let vm = Selector::Qemu(crate::plan::QemuSelector::Name("vm".into()));
    let mut e = e
        .with_threads(&Selector::Pid(900), &[900])
        .with_threads(&vm, &[31, 32]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let before = snapshot(&mut c, &mut e);
    let why = match answer(e.send(
        &mut c,
        &request("big", 900, |a| {
            a.wcet_slots = Some(6);
            a.deadline_slots = Some(8);
        }),
    )) {
        Answer::PeriodicRejected { why } => why,
        other => panic!("{other:?}"),
    };
    assert!(
        why.starts_with("big: one job of 6 slots within 8 slots on cpu 1: ")
            && why.ends_with(", 6 needed"),
        "{why}"
    );
    assert_eq!(snapshot(&mut c, &mut e), before);
    // a VM of 2 vCPUs: distinct CPUs, and this plan has one
    let mut two = request("vm", 0, |a| {
        a.wcet_slots = Some(1);
        a.deadline_slots = Some(6);
    });
    if let Request::Admit(a) = &mut two {
        a.select = Some(AdmitSelector::QemuName("vm".into()));
    }
    assert_eq!(
        error(e.send(&mut c, &two)),
        "select = {\"qemu_name\":\"vm\"}: a VM runs one vCPU per managed CPU: its 2 vCPU threads \
         need 2 and this admission may use 1 ([1])"
    );
    assert_eq!(snapshot(&mut c, &mut e), before);
    // two managed CPUs, 3 and 1 slots free per frame: 3 slots within 10 fit on CPU 1, not on
    // CPU 2: neither vCPU is admitted, and nothing changed
    let text = r#"{ "version": 1, "slot_us": 10000,
      "cpus": { "managed": [1, 2], "housekeeping": [0] },
      "tasks": [
        { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 8, "wcet": 5 },
        { "name": "b", "pid": 11, "class": "tt", "cpu": 2, "period": 8, "wcet": 7 }
      ] }"#;
    let plan = plan_of(text);
    let mut c = Control::new(plan.clone(), RUNNING.into(), SlotClock::new(T0_NS, SLOT_NS))
        .with_planner("bss", 2);
    let mut e = FakeEngine::at(at(3))
        .with_planner(&plan, 2)
        .with_threads(&vm, &[31, 32]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let before = snapshot(&mut c, &mut e);
    let mut two = request("vm", 0, |a| {
        a.wcet_slots = Some(3);
        a.deadline_slots = Some(10);
    });
    if let Request::Admit(a) = &mut two {
        a.select = Some(AdmitSelector::QemuName("vm".into()));
    }
    let why = match answer(e.send(&mut c, &two)) {
        Answer::PeriodicRejected { why } => why,
        other => panic!("{other:?}"),
    };
    assert!(
        why.starts_with("vm: one job of 3 slots within 10 slots on cpu 2: ")
            && why.ends_with(", 3 needed"),
        "{why}"
    );
    assert_eq!(snapshot(&mut c, &mut e), before, "all or none");
    // one slot each fits: both admitted, on distinct CPUs
    let mut two = request("vm", 0, |a| {
        a.wcet_slots = Some(1);
        a.deadline_slots = Some(12);
    });
    if let Request::Admit(a) = &mut two {
        a.select = Some(AdmitSelector::QemuName("vm".into()));
    }
    let Answer::TaskAdmitted { tasks } = answer(e.send(&mut c, &two)) else {
        panic!("rejected");
    };
    let cpus: Vec<Option<u32>> = tasks.iter().map(|t| t.cpu).collect();
    assert_eq!(cpus, vec![Some(1), Some(2)]);
    assert_eq!(
        (tasks[0].task.as_str(), tasks[1].task.as_str()),
        ("vm/vcpu0", "vm/vcpu1")
    );
    // the wire form round-trips
    let r = request("job", 900, |a| {
        a.wcet_slots = Some(2);
        a.deadline_slots = Some(6);
        a.after = Some(AfterJob::Leave);
    });
    assert_eq!(
        line_of(&r),
        "{\"op\":\"admit\",\"name\":\"job\",\"select\":{\"pid\":900},\"wcet_slots\":2,\
         \"deadline_slots\":6,\"after\":\"leave\"}\n"
    );
    assert_eq!(Request::parse(line_of(&r).trim_end()), Ok(r));
}

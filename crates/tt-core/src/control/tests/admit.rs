//! `admit` (issue 15): a task the plan does not name, by its threads and its timing. The plan
//! of these tests: one managed CPU (1), frame 8, tt tasks a (3 of 8) and b (2 of 8) in the
//! table, v declared admitted, be task c: 3 slots of every 8 are free in the template.

use super::*;
use crate::control::request::{Admit, AdmitClass, AdmitSelector};
use crate::plan::{QemuSelector, Selector};

fn admit(name: &str, select: AdmitSelector, period: u64, wcet: u64) -> Request {
    Request::Admit(admit_of(name, select, Some((period, wcet)), None))
}

/// An `admit` with slots `(period, wcet)` or `(util, latency_us)`.
fn admit_of(
    name: &str,
    select: AdmitSelector,
    slots: Option<(u64, u64)>,
    ul: Option<(f64, u64)>,
) -> Admit {
    Admit {
        name: name.into(),
        select: Some(select),
        class: AdmitClass::Tt,
        period_slots: slots.map(|s| s.0),
        wcet_slots: slots.map(|s| s.1),
        offset_slots: None,
        deadline_slots: None,
        after: None,
        util: ul.map(|x| x.0),
        latency_us: ul.map(|x| x.1),
        cpu: None,
        adaptive: None,
        dry_run: false,
        vcpus: None,
        cpus: None,
    }
}

/// The planner's state, the engine's BPF task table and the control's status: what a refused
/// request must leave as it was.
pub(super) fn snapshot(c: &mut Control, e: &mut FakeEngine) -> String {
    let status = e.status(c);
    let planner = e.planner.as_ref().map(|p| p.fingerprint());
    format!("{status:?}\n{planner:?}\n{:?} {}", e.added, e.next_task)
}

#[test]
fn a_process_is_admitted_by_pid_and_registered_before_its_first_slot() {
    let (mut c, e) = planner_run(3, at(3));
    let mut e = e.with_threads(&Selector::Pid(500), &[500, 501]);
    let reply = e.send(&mut c, &admit("app", AdmitSelector::Pid(500), 8, 2));
    let line = reply.to_line();
    assert!(
        line.starts_with("{\"ok\":true,\"accepted\":true,\"tasks\":[{\"task\":\"app\",\"cpu\":1,"),
        "{line}"
    );
    assert!(
        line.contains("\"period_slots\":8,\"wcet_slots\":2,\"tids\":[500,501]"),
        "{line}"
    );
    // BPF: one task after the plan's four, on CPU 1, with both threads
    assert_eq!(e.added, vec![(1, vec![500, 501])]);
    let added = c.take_added();
    assert_eq!(added.len(), 1);
    assert_eq!(
        (added[0].index, added[0].cpu, added[0].wcet),
        (4, Some(1), 2)
    );
    assert!(c.take_added().is_empty(), "taken once");
    // the status lists it; its first slot is a frame start after the planner's next slot
    let tasks = e.planner_status(&mut c).tasks;
    let t = tasks.iter().find(|t| t.task == "app").expect("listed");
    assert_eq!(t.state, TaskState::Admitted);
    assert_eq!(t.from_slot % 8, 0);
    // the planner decides its slots from there on: 2 of every 8, under BPF index 4
    let p = e.planner.as_mut().expect("planner");
    let mut owned = 0;
    for cur in 3..t.from_slot + 16 {
        let adv = p.advance(Some(cur)).expect("in order");
        owned += adv
            .writes
            .iter()
            .filter(|w| w.task.and_then(crate::abi::entry_task) == Some(4))
            .count();
    }
    assert!(
        owned >= 2,
        "the admitted task's entries are written ({owned})"
    );
}

/// Two managed CPUs (1 and 2), frame 8: a takes 5 slots of CPU 1, b 6 of CPU 2 (3 and 2 free).
fn two_cpu_run() -> (Control, FakeEngine, Plan) {
    let text = r#"{ "version": 1, "slot_us": 10000,
      "cpus": { "managed": [1, 2], "housekeeping": [0] },
      "tasks": [
        { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 8, "wcet": 5 },
        { "name": "b", "pid": 11, "class": "tt", "cpu": 2, "period": 8, "wcet": 6 }
      ] }"#;
    let plan = plan_of(text);
    let c = Control::new(plan.clone(), RUNNING.into(), SlotClock::new(T0_NS, SLOT_NS))
        .with_planner("bss", 2);
    let e = FakeEngine::at(at(3)).with_planner(&plan, 2);
    (c, e, plan)
}

#[test]
fn a_process_is_admitted_on_managed_cpu_1023() {
    // the highest CPU id (TT_MAX_CPUS - 1) as a managed CPU of the plan and an admit's `cpu`
    let text = r#"{ "version": 1, "slot_us": 10000,
      "cpus": { "managed": [1, 1023], "housekeeping": [0, 1022] },
      "tasks": [
        { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 8, "wcet": 5 },
        { "name": "b", "pid": 11, "class": "tt", "cpu": 1023, "period": 8, "wcet": 6 }
      ] }"#;
    let plan = plan_of(text);
    let mut c = Control::new(plan.clone(), RUNNING.into(), SlotClock::new(T0_NS, SLOT_NS))
        .with_planner("bss", 2);
    let mut e = FakeEngine::at(at(3))
        .with_planner(&plan, 2)
        .with_threads(&Selector::Pid(500), &[500]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let line = r#"{"op":"admit","name":"app","select":{"pid":500},"period_slots":8,"wcet_slots":2,"cpu":1023}"#;
    let reply = e.send(&mut c, &Request::parse(line).expect("parses"));
    assert!(
        reply.to_line().contains("\"accepted\":true"),
        "{}",
        reply.to_line()
    );
    // registered with BPF on CPU 1023
    assert_eq!(e.added, vec![(1023, vec![500])]);
}

#[test]
fn a_vm_is_one_task_per_vcpu_on_distinct_cpus_all_or_none() {
    // one managed CPU: a VM of 2 vCPUs is refused by the rule, whatever its timing
    let (mut c, e) = planner_run(3, at(3));
    let vm = Selector::Qemu(QemuSelector::Pid(700));
    let mut e = e.with_threads(&vm, &[701, 702]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let before = snapshot(&mut c, &mut e);
    assert_eq!(
        error(e.send(&mut c, &admit("vm", AdmitSelector::QemuPid(700), 8, 1))),
        "select = {\"qemu_pid\":700}: a VM runs one vCPU per managed CPU: its 2 vCPU threads \
         need 2 and this admission may use 1 ([1])"
    );
    assert_eq!(snapshot(&mut c, &mut e), before, "nothing changed");
    // two managed CPUs with 3 and 2 free slots: two vCPUs of 3 slots every 8 fit on CPU 1, not
    // on CPU 2: neither is taken
    let (mut c, e, _) = two_cpu_run();
    let mut e = e.with_threads(&vm, &[701, 702]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let before = snapshot(&mut c, &mut e);
    let reply = e.send(&mut c, &admit("vm", AdmitSelector::QemuPid(700), 8, 3));
    let line = reply.to_line();
    assert!(
        line.starts_with(
            "{\"ok\":true,\"accepted\":false,\"why\":\"vm: 3 slots every 8 slots on cpu 2: "
        ),
        "{line}"
    );
    assert_eq!(snapshot(&mut c, &mut e), before, "all or none");
    assert!(e.added.is_empty());
    // 2 slots each fit: both, named per vCPU, one per CPU (the least loaded first)
    let reply = e.send(&mut c, &admit("vm", AdmitSelector::QemuPid(700), 8, 2));
    let line = reply.to_line();
    assert!(
        line.contains("\"task\":\"vm/vcpu0\"") && line.contains("\"task\":\"vm/vcpu1\""),
        "{line}"
    );
    assert_eq!(e.added, vec![(1, vec![701]), (2, vec![702])]);
}

#[test]
fn a_thread_pinned_away_from_the_managed_cpus_is_refused_and_a_pin_is_followed() {
    let (mut c, e, _) = two_cpu_run();
    let vm = Selector::Qemu(QemuSelector::Pid(700));
    let mut e = e
        .with_threads(&vm, &[701, 702])
        .with_threads(&Selector::Pid(500), &[500, 501]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let before = snapshot(&mut c, &mut e);
    // a process with one thread pinned to the housekeeping CPU: refused, naming the thread
    e.pins.insert(501, vec![0]);
    assert_eq!(
        error(e.send(&mut c, &admit("app", AdmitSelector::Pid(500), 8, 1))),
        "select = {\"pid\":500}: thread 501 may run only on CPUs 0 (its affinity), none of them \
         a managed CPU this admission may use ([1, 2]): widen its affinity (taskset -a -p -c \
         LIST PID)"
    );
    assert_eq!(snapshot(&mut c, &mut e), before, "nothing changed");
    // with `cpu` 1 and the thread pinned to 0 and 2: refused as well
    e.pins.insert(501, vec![0, 2, 3, 4, 5]);
    let mut r = admit_of("app", AdmitSelector::Pid(500), Some((8, 1)), None);
    r.cpu = Some(1);
    assert_eq!(
        error(e.send(&mut c, &Request::Admit(r))),
        "select = {\"pid\":500}: thread 501 may run only on CPUs 0,2-5 (its affinity), none of \
         them a managed CPU this admission may use ([1]): widen its affinity (taskset -a -p -c \
         LIST PID)"
    );
    assert_eq!(snapshot(&mut c, &mut e), before, "nothing changed");
    // a VM whose vCPU 0 is pinned to CPU 2 (libvirt's <vcpupin>): vcpu0 goes there although
    // CPU 1 has more free slots, vcpu1 to the other
    e.pins.insert(701, vec![2]);
    let reply = e.send(&mut c, &admit("vm", AdmitSelector::QemuPid(700), 8, 1));
    assert!(
        reply.to_line().contains("\"accepted\":true"),
        "{}",
        reply.to_line()
    );
    assert_eq!(e.added, vec![(2, vec![701]), (1, vec![702])]);
    // both vCPUs pinned to CPU 2: one vCPU per CPU, so the second finds none: all or none
    let vm2 = Selector::Qemu(QemuSelector::Pid(800));
    e = e.with_threads(&vm2, &[801, 802]);
    e.pins.insert(801, vec![2]);
    e.pins.insert(802, vec![2]);
    let before = snapshot(&mut c, &mut e);
    let reply = e.send(&mut c, &admit("vm2", AdmitSelector::QemuPid(800), 8, 1));
    let line = reply.to_line();
    assert!(
        line.contains("\"accepted\":false")
            && line.contains(
                "vm2/vcpu1: the managed CPUs its threads may run on ([2]) hold another vCPU of \
                 the VM already (one vCPU per CPU)"
            ),
        "{line}"
    );
    assert_eq!(snapshot(&mut c, &mut e), before, "all or none");
}

#[test]
fn a_failed_bpf_registration_takes_the_planner_admission_back() {
    let (mut c, e) = planner_run(3, at(3));
    let mut e = e.with_threads(&Selector::Pid(500), &[500]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let before = snapshot(&mut c, &mut e);
    e.fail_add = Some("the task table is full".into());
    let reply = e.send(&mut c, &admit("app", AdmitSelector::Pid(500), 8, 2));
    assert_eq!(
        error(reply),
        "writing the table to the kernel: the task table is full"
    );
    assert_eq!(snapshot(&mut c, &mut e), before, "the planner forgot it");
    // and all 3 free slots are there for the next request
    e.fail_add = None;
    let reply = e.send(&mut c, &admit("app", AdmitSelector::Pid(500), 8, 3));
    assert!(
        reply.to_line().contains("\"accepted\":true"),
        "{}",
        reply.to_line()
    );
}

#[test]
fn bad_admissions_name_the_field_the_value_and_the_rule_and_change_nothing() {
    let (mut c, e) = planner_run(3, at(3));
    let mut e = e.with_threads(&Selector::Pid(500), &[500]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let before = snapshot(&mut c, &mut e);
    let with = |f: &dyn Fn(&mut Admit)| {
        let mut a = admit_of("app", AdmitSelector::Pid(500), Some((8, 1)), None);
        f(&mut a);
        Request::Admit(a)
    };
    let cases: Vec<(Request, &str)> = vec![
        (
            with(&|a| a.name = String::new()),
            "name = \"\": 1 to 64 bytes, no control characters",
        ),
        (
            with(&|a| a.name = "a".into()),
            "name = \"a\": already names a task of this run",
        ),
        (
            with(&|a| a.cpu = Some(0)),
            "cpu = 0: must be a managed CPU of the plan ([1])",
        ),
        // beyond the CPU-id limit and at the edge of u32: the same rule, the value unwrapped
        (
            with(&|a| a.cpu = Some(crate::abi::MAX_CPUS)),
            "cpu = 1024: must be a managed CPU of the plan ([1])",
        ),
        (
            with(&|a| a.cpu = Some(u32::MAX)),
            "cpu = 4294967295: must be a managed CPU of the plan ([1])",
        ),
        (
            with(&|a| a.period_slots = Some(3)),
            "period_slots = 3: must divide the frame of 8 slots",
        ),
        (
            with(&|a| a.wcet_slots = Some(9)),
            "wcet_slots = 9: must be at most period_slots = 8",
        ),
        (
            with(&|a| {
                a.period_slots = None;
                a.wcet_slots = None;
            }),
            "period_slots = None: give period_slots and wcet_slots (periodic), wcet_slots and deadline_slots (aperiodic), or util and latency_us",
        ),
        (
            with(&|a| {
                a.period_slots = None;
                a.wcet_slots = None;
                a.util = Some(1.0);
                a.latency_us = Some(1000);
            }),
            "util = 1: must be in (0, 1): a share of one CPU per vCPU",
        ),
        (
            with(&|a| a.select = Some(AdmitSelector::Pid(99))),
            "select = {\"pid\":99}: no such process",
        ),
    ];
    for (req, want) in cases {
        assert_eq!(error(e.send(&mut c, &req)), want);
        assert_eq!(snapshot(&mut c, &mut e), before, "{want}");
    }
    // without a planner: refused naming the op
    let mut plain = control();
    let mut e2 = FakeEngine::at(at(3));
    let msg = error(e2.send(&mut plain, &admit("x", AdmitSelector::Pid(1), 8, 1)));
    assert!(
        msg.starts_with("op = \"admit\": only in planner mode"),
        "{msg}"
    );
}

/// `util` + `latency_us`: the longest period dividing the frame whose budget ⌈U·P⌉ keeps the
/// longest wait within L. The reference finds the longest wait by brute force over every
/// placement of the budget in two consecutive periods (the planner may put it anywhere in
/// each), for small periods.
#[test]
fn util_and_latency_choose_the_longest_period_whose_worst_wait_fits() {
    fn worst_wait(p: u64, q: u64) -> u64 {
        // slots of two periods; the budget at offsets a (first period) and b (second)
        let mut worst = 0;
        for a in 0..=p - q {
            for b in 0..=p - q {
                // the last service of period 1 ends at a + q, the first of period 2 starts at
                // p + b
                worst = worst.max(p + b - (a + q));
            }
        }
        worst
    }
    let frame = 24;
    for u in [0.1, 0.25, 0.5, 0.7, 0.9] {
        for l_slots in 0..=24 {
            let slot_us = 1000;
            let r = admit_of(
                "x",
                AdmitSelector::Pid(1),
                None,
                Some((u, l_slots * slot_us)),
            );
            let want = (1..=frame)
                .rev()
                .filter(|p| frame % p == 0)
                .map(|p| (p, (u * p as f64).ceil() as u64))
                .find(|&(p, q)| q <= p && worst_wait(p, q) <= l_slots);
            let got = timing(&r, frame, slot_us).ok().map(|t| match t {
                AdmitTiming::Periodic { period, wcet, .. } => (period, wcet),
                other => panic!("util and latency gave {other:?}"),
            });
            assert_eq!(got, want, "util {u} latency {l_slots} slots");
        }
    }
}

#[test]
fn the_admit_request_parses_and_round_trips() {
    let line = r#"{"op":"admit","name":"vm1","select":{"qemu_name":"guest"},"util":0.2,"latency_us":40000}"#;
    let r = Request::parse(line).expect("parses");
    assert_eq!(
        r,
        Request::Admit(admit_of(
            "vm1",
            AdmitSelector::QemuName("guest".into()),
            None,
            Some((0.2, 40000))
        ))
    );
    assert_eq!(
        Request::parse(&r.to_line().expect("line")).expect("again"),
        r
    );
    let err = |l: &str| Request::parse(l).expect_err(l).to_string();
    assert!(
        err(r#"{"op":"admit","name":"x","select":{"pidd":3},"period_slots":8,"wcet_slots":1}"#)
            .starts_with("select: unknown variant `pidd`"),
        "{}",
        err(r#"{"op":"admit","name":"x","select":{"pidd":3},"period_slots":8,"wcet_slots":1}"#)
    );
    // a CPU beyond u32 (2^32 would wrap to CPU 0) or negative: refused naming the field
    for (cpu, want) in [
        (
            "4294967296",
            "cpu: invalid value: integer `4294967296`, expected u32",
        ),
        ("-1", "cpu: invalid value: integer `-1`, expected u32"),
    ] {
        let l = format!(
            r#"{{"op":"admit","name":"x","select":{{"pid":3}},"period_slots":8,"wcet_slots":1,"cpu":{cpu}}}"#
        );
        assert_eq!(err(&l), want);
    }
    let l = r#"{"op":"admit","name":"x","select":{"pid":3},"period_slots":8,"wcet_slots":1,"cpu":1023}"#;
    assert!(matches!(Request::parse(l), Ok(Request::Admit(a)) if a.cpu == Some(1023)));
    assert!(
        err(r#"{"op":"admit","name":"x","select":{"pid":3},"period_slots":0,"wcet_slots":1}"#)
            .starts_with("period_slots: invalid value: integer `0`"),
        "{}",
        err(r#"{"op":"admit","name":"x","select":{"pid":3},"period_slots":0,"wcet_slots":1}"#)
    );
}

#[test]
fn a_be_task_joins_the_slack_at_once_without_timing_or_planner() {
    let (mut c, e) = planner_run(3, at(3));
    let mut e = e.with_threads(&Selector::Pid(800), &[800, 801]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let planner_before = e.planner.as_ref().map(|p| p.fingerprint());
    let be = |cpu: Option<u32>, timing: Option<(u64, u64)>| {
        let mut a = admit_of("batch", AdmitSelector::Pid(800), timing, None);
        a.class = AdmitClass::Be;
        a.cpu = cpu;
        Request::Admit(a)
    };
    // a be task with timing, or on a CPU the plan does not manage: refused, nothing changes
    let before = snapshot(&mut c, &mut e);
    assert_eq!(
        error(e.send(&mut c, &be(None, Some((8, 1))))),
        "class = \"be\": a be task takes no timing (period_slots, wcet_slots, deadline_slots, \
         after, util, latency_us): it runs in the slack of the managed CPUs, without a guarantee"
    );
    assert!(error(e.send(&mut c, &be(Some(0), None))).starts_with("cpu = 0: must be a managed CPU"));
    assert_eq!(snapshot(&mut c, &mut e), before);
    // accepted on any managed CPU: BPF gets a be task without a CPU, the planner nothing
    let line = e.send(&mut c, &be(None, None)).to_line();
    assert_eq!(
        line,
        format!(
            "{{\"ok\":true,\"accepted\":true,\"tasks\":[{{\"task\":\"batch\",\"class\":\"be\",\
             \"cpu\":null,\"from_slot\":{},\"period_slots\":0,\"wcet_slots\":0,\
             \"tids\":[800,801]}}]}}\n",
            3
        )
    );
    assert_eq!(e.added, vec![(u32::MAX, vec![800, 801])]);
    assert_eq!(e.classes, vec![crate::plan::Class::Be]);
    assert_eq!(e.planner.as_ref().map(|p| p.fingerprint()), planner_before);
    let added = c.take_added();
    assert_eq!(
        (added[0].class, added[0].cpu, added[0].index),
        (crate::plan::Class::Be, None, 4)
    );
    // its threads gone: listed gone, the planner untouched
    c.reap(&mut e, |_| false);
    let tasks = e.planner_status(&mut c).tasks;
    assert_eq!(tasks.len(), 1);
    assert_eq!(
        (tasks[0].task.as_str(), tasks[0].state),
        ("batch", TaskState::Gone)
    );
    assert_eq!(e.planner.as_ref().map(|p| p.fingerprint()), planner_before);
    // the wire form of `--class be --cpu 1`
    let r = be(Some(1), None);
    assert_eq!(
        line_of(&r),
        "{\"op\":\"admit\",\"name\":\"batch\",\"select\":{\"pid\":800},\"class\":\"be\",\"cpu\":1}\n"
    );
    assert_eq!(Request::parse(line_of(&r).trim_end()), Ok(r));
}

#[test]
fn remove_takes_an_added_task_out_of_the_planner_and_bpf_and_frees_its_capacity() {
    let (mut c, e) = planner_run(3, at(3));
    let mut e = e
        .with_threads(&Selector::Pid(500), &[500])
        .with_threads(&Selector::Pid(510), &[510])
        .with_threads(&Selector::Pid(800), &[800]);
    // app takes 2 of the 3 free slots of every 8; big (2 of 8) then does not fit
    let line = e
        .send(&mut c, &admit("app", AdmitSelector::Pid(500), 8, 2))
        .to_line();
    assert!(line.contains("\"accepted\":true"), "{line}");
    let line = e
        .send(&mut c, &admit("big", AdmitSelector::Pid(510), 8, 2))
        .to_line();
    assert!(line.contains("\"accepted\":false"), "{line}");
    let mut be = admit_of("batch", AdmitSelector::Pid(800), None, None);
    be.class = AdmitClass::Be;
    assert!(e
        .send(&mut c, &Request::Admit(be))
        .to_line()
        .contains("\"accepted\":true"));
    assert!(c.take_journal().is_some());
    let remove = |t: &str| Request::Remove(crate::control::request::TaskArg { task: t.into() });
    // removing app: the planner lets go of it, BPF releases its threads (index 4, CPU 1)
    let from = match answer(e.send(&mut c, &remove("app"))) {
        Answer::Removed { from_slot } => from_slot,
        other => panic!("{other:?}"),
    };
    assert_eq!(e.released, vec![(4, Some(1))]);
    let tasks = e.planner_status(&mut c).tasks;
    let app = tasks.iter().find(|t| t.task == "app").expect("listed");
    assert_eq!((app.state, app.from_slot), (TaskState::Removed, from));
    // its capacity is free at once: big fits now
    let line = e
        .send(&mut c, &admit("big", AdmitSelector::Pid(510), 8, 2))
        .to_line();
    assert!(line.contains("\"accepted\":true"), "{line}");
    // the be task leaves without the planner; the journal keeps big only
    let planner = e.planner.as_ref().map(|p| p.fingerprint());
    assert!(matches!(
        answer(e.send(&mut c, &remove("batch"))),
        Answer::Removed { .. }
    ));
    assert_eq!(e.released, vec![(4, Some(1)), (5, None)]);
    assert_eq!(e.planner.as_ref().map(|p| p.fingerprint()), planner);
    let journal = c.take_journal().expect("changed").join("\n");
    assert!(
        journal.contains("\"name\":\"big\"")
            && !journal.contains("\"app\"")
            && !journal.contains("batch"),
        "{journal}"
    );
    // removed once: a second remove is refused and changes nothing
    let before = snapshot(&mut c, &mut e);
    assert!(error(e.send(&mut c, &remove("app"))).contains("app"));
    assert_eq!(snapshot(&mut c, &mut e), before);
    assert_eq!(e.released.len(), 2);
}

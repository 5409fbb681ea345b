//! Scenarios of the control state machine: the happy path and every refusal.

use super::*;
use crate::plan;

const SLOT_NS: u64 = 10_000_000;
const T0_NS: u64 = 1_000_000_000;

/// One managed CPU, tasks a, b (tt) and c (be), 10 ms slots, frame 8; `a_wcet` varies the table.
fn text(slot_us: u64, a_wcet: u64) -> String {
    format!(
        r#"{{ "version": 1, "slot_us": {slot_us},
  "cpus": {{ "managed": [1], "housekeeping": [0] }},
  "tasks": [
    {{ "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 8, "wcet": {a_wcet} }},
    {{ "name": "b", "pid": 11, "class": "tt", "cpu": 1, "period": 8, "wcet": 2 }},
    {{ "name": "c", "pid": 12, "class": "be" }}
  ] }}"#
    )
}

fn plan_of(text: &str) -> Plan {
    plan::from_str(text).unwrap_or_else(|e| panic!("{e}"))
}

/// A loader serving plan texts by path, like `plan::from_file` over a fake directory.
fn files<'a>(entries: &'a [(&'a str, String)]) -> impl Fn(&Path) -> Result<Plan, LoadError> + 'a {
    move |path: &Path| {
        let Some((_, text)) = entries.iter().find(|(p, _)| Path::new(p) == path) else {
            return Err(LoadError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        };
        plan::from_str(text).map_err(|errors| LoadError::Invalid {
            path: path.to_path_buf(),
            errors,
        })
    }
}

fn control() -> Control {
    let clock = SlotClock::new(T0_NS, 10_000_000);
    Control::new(plan_of(&text(10_000, 3)), "/p/a.json".into(), clock)
}

/// The time in the middle of slot k.
fn at(k: u64) -> u64 {
    T0_NS + k * SLOT_NS + SLOT_NS / 2
}

fn reply(step: Step) -> Reply {
    match step {
        Step::Reply(r) => r,
        Step::Switch(s) => panic!("expected a reply, got a switch to {}", s.table),
        Step::AdmitFirm(j) => panic!("expected a reply, got an admission of {j:?}"),
        Step::SetPolicy(p) => panic!("expected a reply, got a policy swap to {p}"),
        Step::AdmitPeriodic(t) => panic!("expected a reply, got a periodic admission {t:?}"),
        Step::Remove { task } => panic!("expected a reply, got a removal of task {task}"),
    }
}

fn error_of(step: Step) -> String {
    match reply(step) {
        Reply::Error { ok: false, error } => error,
        other => panic!("expected an error reply, got {other:?}"),
    }
}

fn switch_line(path: &str) -> String {
    Request::SwitchTable { plan: path.into() }.to_line()
}

#[test]
fn status_reports_the_slot_the_frame_and_the_table() {
    let mut c = control();
    let r = reply(c.handle(r#"{"op":"status"}"#, || at(13), files(&[])));
    assert_eq!(
        r.to_line(),
        "{\"ok\":true,\"slot\":13,\"frame_slots\":8,\"table\":\"/p/a.json\",\"pending_switch_slot\":null}\n"
    );
}

#[test]
fn happy_path_switches_at_the_next_frame_start_far_enough_ahead_then_settles() {
    let plans = [("/p/b.json", text(10_000, 5))];
    let mut c = control();
    // at 13.5 slots: slot 15 starts 15 ms later (< 20 ms), so 16 is too early -> 24
    let Step::Switch(sw) = c.handle(&switch_line("/p/b.json"), || at(13), files(&plans)) else {
        panic!("expected a switch");
    };
    assert_eq!((sw.at_slot, sw.at_ns), (24, T0_NS + 24 * SLOT_NS));
    assert_eq!(sw.plan.cpus[0].table, plan_of(&plans[0].1).cpus[0].table);
    let r = c.committed(sw);
    assert_eq!(
        r.to_line(),
        format!(
            "{{\"ok\":true,\"switch_slot\":24,\"at_ns\":{}}}\n",
            T0_NS + 24 * SLOT_NS
        )
    );
    let status = |c: &mut Control, k| reply(c.handle(r#"{"op":"status"}"#, || at(k), files(&[])));
    // pending until slot 24 has ended; the plan in force keeps its name until then
    for k in [14, 24] {
        assert_eq!(
            status(&mut c, k),
            Reply::Status {
                ok: true,
                slot: k,
                frame_slots: 8,
                table: "/p/a.json".into(),
                pending_switch_slot: Some(24),
                planner: None,
            }
        );
    }
    assert_eq!(
        status(&mut c, 25),
        Reply::Status {
            ok: true,
            slot: 25,
            frame_slots: 8,
            table: "/p/b.json".into(),
            pending_switch_slot: None,
            planner: None,
        }
    );
    assert_eq!(
        c.history(),
        &[SwitchRecord {
            at_slot: 24,
            table: "/p/b.json".into()
        }]
    );
}

/// Whether slot `s` is far enough ahead of `now` for a switch (property 1 without the frame).
fn far_enough(s: u64, now: u64) -> bool {
    let k = now.saturating_sub(T0_NS) / SLOT_NS;
    s >= k + MIN_LEAD_SLOTS && s >= 1 && T0_NS + (s - 1) * SLOT_NS >= now + MIN_LEAD_NS
}

#[test]
fn the_switch_slot_is_the_first_frame_start_whose_previous_slot_starts_20_ms_ahead() {
    let c = control();
    for k in 0..40 {
        for off in [0, 1, SLOT_NS / 2, SLOT_NS - 1] {
            let now = T0_NS + k * SLOT_NS + off;
            let s = c.switch_slot(now);
            assert_eq!(s % 8, 0, "slot {k} + {off} ns -> {s}");
            assert!(far_enough(s, now), "slot {k} + {off} ns -> {s}");
            assert!(
                s < 8 || !far_enough(s - 8, now),
                "slot {k} + {off} ns -> {s}: not the first"
            );
        }
    }
    // at the start of slot 5: slot 7 starts 20 ms later, so 8 is just far enough; 1 ns later
    // it is not, and the switch waits for 16
    assert_eq!(c.switch_slot(T0_NS + 5 * SLOT_NS), 8);
    assert_eq!(c.switch_slot(T0_NS + 5 * SLOT_NS + 1), 16);
    // before slot 0 starts (the timers are armed a little in the future)
    assert_eq!(c.switch_slot(T0_NS - 5), 8);
}

#[test]
fn the_clock_is_read_again_after_loading_the_plan() {
    let plans = [("/p/b.json", text(10_000, 5))];
    let mut c = control();
    // the request arrives at 1.5 slots (switch at 8), loading ends at 5.5 slots (switch at 16)
    let reads = std::cell::Cell::new(0);
    let clock = || {
        reads.set(reads.get() + 1);
        if reads.get() == 1 {
            at(1)
        } else {
            at(5)
        }
    };
    let Step::Switch(sw) = c.handle(&switch_line("/p/b.json"), clock, files(&plans)) else {
        panic!("expected a switch");
    };
    assert_eq!((sw.at_slot, reads.get()), (16, 2));
}

#[test]
fn short_slots_get_a_lead_of_at_least_min_lead_ns() {
    // 100 us slots: 20 ms is 200 slots; frame 8 -> the first frame start >= k + 200
    let c = Control::new(
        plan_of(&text(100, 3)),
        "a".into(),
        SlotClock::new(0, 100_000),
    );
    let s = c.switch_slot(50 * 100_000);
    assert_eq!(s, 256);
    assert!((s - 50) * 100_000 >= MIN_LEAD_NS);
}

#[test]
fn a_second_switch_while_one_is_pending_is_refused_and_changes_nothing() {
    let plans = [
        ("/p/b.json", text(10_000, 5)),
        ("/p/c.json", text(10_000, 4)),
    ];
    let mut c = control();
    let Step::Switch(sw) = c.handle(&switch_line("/p/b.json"), || at(1), files(&plans)) else {
        panic!("expected a switch");
    };
    c.committed(sw);
    let e = error_of(c.handle(&switch_line("/p/c.json"), || at(3), files(&plans)));
    assert_eq!(
        e,
        "a switch to /p/b.json at slot 8 is pending: one switch at a time, retry after slot 8"
    );
    assert_eq!(c.history().len(), 1);
    // once slot 8 has ended a new switch goes through (at 9.5 slots: 16 is far enough)
    let Step::Switch(sw) = c.handle(&switch_line("/p/c.json"), || at(9), files(&plans)) else {
        panic!("expected a switch after the pending one settled");
    };
    assert_eq!(sw.at_slot, 16);
}

#[test]
fn an_incompatible_plan_is_refused_with_field_value_and_rule() {
    let plans = [("/p/bad.json", text(5_000, 3))];
    let mut c = control();
    let e = error_of(c.handle(&switch_line("/p/bad.json"), || at(2), files(&plans)));
    assert_eq!(
        e,
        "plan /p/bad.json is incompatible with the running plan: \
         slot_us = 5000: must equal the running plan's 10000"
    );
    let r = reply(c.handle(r#"{"op":"status"}"#, || at(2), files(&[])));
    assert!(
        matches!(
            r,
            Reply::Status {
                pending_switch_slot: None,
                ..
            }
        ),
        "{r:?}"
    );
    assert!(c.history().is_empty());
}

#[test]
fn an_invalid_plan_is_refused_with_every_validation_error_on_one_line() {
    // wcet 9 > period 8 and slot_us out of range
    let plans = [("/p/inv.json", text(50, 9))];
    let mut c = control();
    let e = error_of(c.handle(&switch_line("/p/inv.json"), || at(2), files(&plans)));
    assert!(e.starts_with("/p/inv.json: invalid plan: "), "{e}");
    assert!(e.contains("slot_us = 50: must be between"), "{e}");
    assert!(e.contains("tasks[0].wcet = 9"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    assert!(c.history().is_empty());
}

#[test]
fn a_missing_plan_file_is_refused() {
    let mut c = control();
    let e = error_of(c.handle(&switch_line("/p/none.json"), || at(2), files(&[])));
    assert!(e.starts_with("/p/none.json: cannot read the plan: "), "{e}");
}

#[test]
fn malformed_requests_are_refused_with_their_reason() {
    let mut c = control();
    let cases = [
        ("not json", "request is not JSON: "),
        (r#"{"op":"reboot"}"#, "op = \"reboot\": unknown operation"),
        (r#"{"op":"status","x":1}"#, "x: unknown field for op status"),
        (
            r#"{"op":"switch_table","plan":"b.json"}"#,
            "plan = \"b.json\": must be an absolute path",
        ),
    ];
    for (line, want) in cases {
        let e = error_of(c.handle(line, || at(2), files(&[])));
        assert!(e.starts_with(want), "{line}: {e}");
    }
    let long = "x".repeat(MAX_REQUEST_BYTES + 1);
    assert_eq!(
        error_of(c.handle(&long, || at(2), files(&[]))),
        format!("request is longer than {MAX_REQUEST_BYTES} bytes")
    );
}

#[test]
fn a_kernel_failure_reply_is_an_error_line() {
    let r = Reply::error(&ControlError::Kernel("writing BPF map table: EPERM".into()));
    assert!(!r.ok());
    assert_eq!(
        r.to_line(),
        "{\"ok\":false,\"error\":\"writing the table to the kernel: writing BPF map table: EPERM\"}\n"
    );
}

#[test]
fn reply_lines_parse_back_for_the_client() {
    for r in [
        Reply::Switched {
            ok: true,
            switch_slot: 8,
            at_ns: 5,
        },
        Reply::Error {
            ok: false,
            error: "x".into(),
        },
    ] {
        let back: Reply = serde_json::from_str(&r.to_line()).expect("parses");
        assert_eq!(back, r);
    }
}

fn planner_control() -> Control {
    control().with_planner("bss", 2)
}

fn firm_line(task: &str, wcet: u64, deadline: u64) -> String {
    Request::AdmitFirm {
        task: task.into(),
        wcet_slots: wcet,
        deadline_slots: deadline,
    }
    .to_line()
}

#[test]
fn admit_firm_is_refused_without_planner_mode() {
    let mut c = control();
    assert_eq!(
        error_of(c.handle(&firm_line("a", 2, 10), || at(3), files(&[]))),
        "op = \"admit_firm\": only in planner mode (this scx_tt enforces the static table; \
         start it with --planner bss)"
    );
}

#[test]
fn switch_table_is_refused_in_planner_mode_and_changes_nothing() {
    let plans = [("/p/b.json", text(10_000, 5))];
    let mut c = planner_control();
    assert_eq!(
        error_of(c.handle(&switch_line("/p/b.json"), || at(3), files(&plans))),
        "op = \"switch_table\": refused in planner mode (--planner bss): the planner writes the \
         table slot by slot; restart without --planner to switch tables"
    );
    assert!(c.history().is_empty());
}

#[test]
fn admit_firm_names_an_unknown_task_and_a_be_task() {
    let mut c = planner_control();
    assert_eq!(
        error_of(c.handle(&firm_line("zz", 2, 10), || at(3), files(&[]))),
        "task = \"zz\": no task of the plan has this name (its tt tasks: a, b)"
    );
    assert_eq!(
        error_of(c.handle(&firm_line("c", 2, 10), || at(3), files(&[]))),
        "task = \"c\": is not a tt task; firm jobs run in a tt task's threads on its CPU (its tt \
         tasks: a, b)"
    );
    let bad = c.handle(
        r#"{"op":"admit_firm","task":"a","wcet_slots":0,"deadline_slots":9}"#,
        || at(3),
        files(&[]),
    );
    assert_eq!(
        error_of(bad),
        "wcet_slots = 0: must be an integer of at least 1 (slots)"
    );
    // nothing was counted
    let Reply::Status { planner, .. } = reply(c.handle(r#"{"op":"status"}"#, || at(3), files(&[])))
    else {
        panic!("status");
    };
    let p = planner.expect("planner mode");
    assert_eq!((p.admissions_accepted, p.admissions_rejected), (0, 0));
}

#[test]
fn admit_firm_names_the_task_cpu_and_the_absolute_deadline_then_counts_the_answers() {
    let mut c = planner_control();
    let Step::AdmitFirm(job) = c.handle(&firm_line("b", 20, 60), || at(13), files(&[])) else {
        panic!("expected an admission");
    };
    assert_eq!(
        job,
        FirmJob {
            task: 1,
            cpu: 0,
            wcet: 20,
            deadline_slots: 60,
        }
    );
    let accepted = c.admission(&FirmOutcome::Accepted {
        cpu: 0,
        deadline_slot: 73,
        first_slot: 16,
    });
    assert_eq!(
        accepted.to_line(),
        "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"deadline_slot\":73,\"first_slot\":16}\n"
    );
    let rejected = c.admission(&FirmOutcome::Rejected(crate::planner::cpu::Capacity {
        needed: 40,
        available: 12,
        deadline: 33,
    }));
    assert_eq!(
        rejected.to_line(),
        "{\"ok\":true,\"accepted\":false,\"needed\":40,\"available\":12,\"deadline_slot\":33}\n"
    );
    let status = reply(c.handle(r#"{"op":"status"}"#, || at(14), files(&[])));
    assert_eq!(
        status.to_line(),
        "{\"ok\":true,\"slot\":14,\"frame_slots\":8,\"table\":\"/p/a.json\",\
         \"pending_switch_slot\":null,\"planner\":{\"policy\":\"bss\",\"lead_slots\":2,\
         \"admissions_accepted\":1,\"admissions_rejected\":1}}\n"
    );
}

fn policy_line(policy: Policy) -> String {
    Request::SetPolicy { policy }.to_line()
}

fn status_policy(c: &mut Control) -> Option<String> {
    let Reply::Status { planner, .. } = reply(c.handle(r#"{"op":"status"}"#, || at(3), files(&[])))
    else {
        panic!("status");
    };
    planner.map(|p| p.policy)
}

#[test]
fn set_policy_is_refused_without_planner_mode() {
    let mut c = control();
    assert_eq!(
        error_of(c.handle(&policy_line(Policy::Dvfs), || at(3), files(&[]))),
        "op = \"set_policy\": only in planner mode (this scx_tt enforces the static table; \
         start it with --planner bss)"
    );
}

#[test]
fn set_policy_refuses_the_dpm_policies_and_changes_nothing() {
    let mut c = planner_control();
    for policy in [Policy::Dpm, Policy::DpmDvfs] {
        assert_eq!(
            error_of(c.handle(&policy_line(policy), || at(3), files(&[]))),
            format!(
                "policy = \"{policy}\": the kernel path runs bss or dvfs only (dpm would need \
                 deferred slot ticks and an \"idle, run nothing\" table entry; not implemented)"
            )
        );
    }
    let bad = c.handle(
        r#"{"op":"set_policy","policy":"turbo"}"#,
        || at(3),
        files(&[]),
    );
    assert_eq!(
        error_of(bad),
        "policy = \"turbo\": must be a policy name: \"bss\" or \"dvfs\" in the kernel path"
    );
    assert_eq!(status_policy(&mut c).as_deref(), Some("bss"));
}

#[test]
fn set_policy_hands_the_swap_to_the_caller_and_status_reports_the_policy_in_force() {
    let mut c = planner_control();
    let Step::SetPolicy(policy) = c.handle(&policy_line(Policy::Dvfs), || at(3), files(&[])) else {
        panic!("expected a policy swap");
    };
    assert_eq!(policy, Policy::Dvfs);
    // the caller has not set it yet: status still names bss
    assert_eq!(status_policy(&mut c).as_deref(), Some("bss"));
    let r = c.policy_set(policy, 6);
    assert_eq!(
        r.to_line(),
        "{\"ok\":true,\"policy\":\"dvfs\",\"from_slot\":6}\n"
    );
    let back: Reply = serde_json::from_str(&r.to_line()).expect("parses");
    assert_eq!(back, r);
    assert_eq!(status_policy(&mut c).as_deref(), Some("dvfs"));
}

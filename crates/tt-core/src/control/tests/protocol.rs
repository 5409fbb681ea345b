//! The protocol: request lines parsed into [`Request`] (every error names the field) and
//! written back for `scx_tt ctl`; reply lines, pinned field for field per kind.

use super::*;
use crate::control::request::{AdmitFirm, SetPolicy, SwitchTable, TaskArg};

fn parse_err(line: &str) -> String {
    match Request::parse(line) {
        Err(e) => e.to_string(),
        Ok(r) => panic!("{line}: parsed as {r:?}"),
    }
}

fn task(name: &str) -> TaskArg {
    TaskArg { task: name.into() }
}

#[test]
fn status_and_switch_table_parse() {
    assert_eq!(Request::parse(r#"{"op":"status"}"#), Ok(Request::Status));
    assert_eq!(
        Request::parse(r#" {"plan":"/p/b.json", "op":"switch_table"} "#),
        Ok(Request::SwitchTable(SwitchTable {
            plan: PathBuf::from("/p/b.json")
        }))
    );
}

#[test]
fn to_line_round_trips_through_parse() {
    for r in [
        Request::Status,
        Request::SwitchTable(SwitchTable {
            plan: PathBuf::from("/a b/\"q\".json"),
        }),
        Request::AdmitFirm(AdmitFirm {
            task: "tt-a".into(),
            wcet_slots: 20,
            deadline_slots: 60,
        }),
        Request::SetPolicy(SetPolicy {
            policy: Policy::Dvfs,
        }),
        Request::SetPolicy(SetPolicy {
            policy: Policy::DpmDvfs,
        }),
        Request::AdmitPeriodic(task("vm")),
        Request::Remove(task("a \"b\"")),
    ] {
        let line = line_of(&r);
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        assert_eq!(Request::parse(line.trim_end()), Ok(r));
    }
}

#[test]
fn to_line_writes_the_documented_lines_op_first() {
    let firm = Request::AdmitFirm(AdmitFirm {
        task: "tt-a".into(),
        wcet_slots: 20,
        deadline_slots: 60,
    });
    assert_eq!(
        line_of(&firm),
        "{\"op\":\"admit_firm\",\"task\":\"tt-a\",\"wcet_slots\":20,\"deadline_slots\":60}\n"
    );
    assert_eq!(line_of(&Request::Status), "{\"op\":\"status\"}\n");
    assert_eq!(
        switch_line("/p/b.json"),
        "{\"op\":\"switch_table\",\"plan\":\"/p/b.json\"}\n"
    );
    let policy = Request::SetPolicy(SetPolicy {
        policy: Policy::DpmDvfs,
    });
    assert_eq!(
        line_of(&policy),
        "{\"op\":\"set_policy\",\"policy\":\"dpm+dvfs\"}\n"
    );
    assert_eq!(
        line_of(&Request::Remove(task("vm"))),
        "{\"op\":\"remove\",\"task\":\"vm\"}\n"
    );
}

#[test]
fn a_plan_path_json_cannot_carry_is_an_error_not_a_line() {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::OsStr::from_bytes(b"/p/\xff.json");
    let r = Request::SwitchTable(SwitchTable { plan: path.into() });
    assert!(r.to_line().is_err());
}

#[test]
fn bad_json_names_the_position() {
    let err = Request::parse(r#"{"op":"status""#).unwrap_err();
    assert!(
        matches!(&err, RequestError::Json(m) if m.contains("line 1")),
        "{err}"
    );
}

#[test]
fn a_non_object_is_rejected_with_its_value() {
    assert_eq!(
        parse_err("[1,2]"),
        "request = [1,2]: must be a JSON object such as {\"op\":\"status\"}"
    );
}

#[test]
fn missing_and_unknown_ops_are_named() {
    assert_eq!(Request::parse("{}"), Err(RequestError::MissingOp));
    assert_eq!(
        parse_err("{}"),
        "op: is required (one of status, switch_table, admit_firm, set_policy, \
         admit_periodic, remove, admit, capacity)"
    );
    assert_eq!(
        parse_err(r#"{"op":"reboot"}"#),
        "op = \"reboot\": unknown operation (one of status, switch_table, admit_firm, \
         set_policy, admit_periodic, remove, admit, capacity)"
    );
    assert_eq!(
        Request::parse(r#"{"op":7}"#),
        Err(RequestError::UnknownOp("7".into()))
    );
}

#[test]
fn unknown_fields_are_rejected_per_op() {
    assert_eq!(
        parse_err(r#"{"op":"status","plan":"/x.json"}"#),
        "plan: unknown field `plan`, there are no fields"
    );
    assert_eq!(
        parse_err(r#"{"op":"switch_table","plan":"/x","at_slot":3}"#),
        "at_slot: unknown field `at_slot`, expected `plan`"
    );
}

#[test]
fn switch_table_needs_an_absolute_plan_string() {
    assert_eq!(
        parse_err(r#"{"op":"switch_table"}"#),
        "op = \"switch_table\": missing field `plan`"
    );
    assert_eq!(
        parse_err(r#"{"op":"switch_table","plan":5}"#),
        "plan: invalid type: integer `5`, expected an absolute path (scx_tt's working \
         directory is not the client's)"
    );
    assert_eq!(
        parse_err(r#"{"op":"switch_table","plan":"b.json"}"#),
        "plan: invalid value: string \"b.json\", expected an absolute path (scx_tt's working \
         directory is not the client's)"
    );
}

#[test]
fn admit_firm_parses_and_names_every_bad_field() {
    assert_eq!(
        Request::parse(r#"{"op":"admit_firm","task":"a","wcet_slots":3,"deadline_slots":9}"#),
        Ok(Request::AdmitFirm(AdmitFirm {
            task: "a".into(),
            wcet_slots: 3,
            deadline_slots: 9
        }))
    );
    assert_eq!(
        parse_err(r#"{"op":"admit_firm","wcet_slots":3,"deadline_slots":9}"#),
        "op = \"admit_firm\": missing field `task`"
    );
    assert_eq!(
        parse_err(r#"{"op":"admit_firm","task":"a","deadline_slots":9}"#),
        "op = \"admit_firm\": missing field `wcet_slots`"
    );
    assert_eq!(
        parse_err(r#"{"op":"admit_firm","task":"a","wcet_slots":3}"#),
        "op = \"admit_firm\": missing field `deadline_slots`"
    );
    assert_eq!(
        parse_err(r#"{"op":"admit_firm","task":7,"wcet_slots":3,"deadline_slots":9}"#),
        "task: invalid type: integer `7`, expected a string"
    );
    for (bad, what) in [
        ("0", "invalid value: integer `0`"),
        ("-2", "invalid value: integer `-2`"),
        ("1.5", "invalid type: floating point `1.5`"),
        ("\"3\"", "invalid type: string \"3\""),
        ("null", "invalid type: null"),
    ] {
        assert_eq!(
            parse_err(&format!(
                r#"{{"op":"admit_firm","task":"a","wcet_slots":{bad},"deadline_slots":9}}"#
            )),
            format!("wcet_slots: {what}, expected an integer of at least 1 (slots)")
        );
        assert_eq!(
            parse_err(&format!(
                r#"{{"op":"admit_firm","task":"a","wcet_slots":3,"deadline_slots":{bad}}}"#
            )),
            format!("deadline_slots: {what}, expected an integer of at least 1 (slots)")
        );
    }
    assert_eq!(
        parse_err(r#"{"op":"admit_firm","task":"a","wcet_slots":3,"deadline_slots":9,"cpu":1}"#),
        "cpu: unknown field `cpu`, expected one of `task`, `wcet_slots`, `deadline_slots`"
    );
}

#[test]
fn set_policy_parses_a_policy_name_and_names_every_bad_field() {
    assert_eq!(
        Request::parse(r#"{"op":"set_policy","policy":"dvfs"}"#),
        Ok(Request::SetPolicy(SetPolicy {
            policy: Policy::Dvfs
        }))
    );
    // dpm parses (a policy); the planner refuses it (planner.rs)
    assert_eq!(
        Request::parse(r#"{"op":"set_policy","policy":"dpm"}"#),
        Ok(Request::SetPolicy(SetPolicy {
            policy: Policy::Dpm
        }))
    );
    assert_eq!(
        parse_err(r#"{"op":"set_policy"}"#),
        "op = \"set_policy\": missing field `policy`"
    );
    for (bad, what) in [
        ("\"fast\"", "invalid value: string \"fast\""),
        ("3", "invalid type: integer `3`"),
        ("null", "invalid type: null"),
        ("\"BSS\"", "invalid value: string \"BSS\""),
    ] {
        assert_eq!(
            parse_err(&format!(r#"{{"op":"set_policy","policy":{bad}}}"#)),
            format!(
                "policy: {what}, expected a policy name: \"bss\", \"dvfs\", \"dpm\" or \"dpm+dvfs\""
            )
        );
    }
    assert_eq!(
        parse_err(r#"{"op":"set_policy","policy":"bss","from_slot":3}"#),
        "from_slot: unknown field `from_slot`, expected `policy`"
    );
}

#[test]
fn an_oversized_line_is_refused_before_parsing() {
    let line = format!(
        r#"{{"op":"status","pad":"{}"}}"#,
        "x".repeat(MAX_REQUEST_BYTES)
    );
    assert_eq!(Request::parse(&line), Err(RequestError::TooLong));
    assert_eq!(
        parse_err(&line),
        format!("request is longer than {MAX_REQUEST_BYTES} bytes")
    );
}

#[test]
fn admit_periodic_and_remove_parse_and_name_every_bad_field() {
    assert_eq!(
        Request::parse(r#"{"op":"admit_periodic","task":"vm"}"#),
        Ok(Request::AdmitPeriodic(task("vm")))
    );
    assert_eq!(
        Request::parse(r#"{"op":"remove","task":"a"}"#),
        Ok(Request::Remove(task("a")))
    );
    assert_eq!(
        parse_err(r#"{"op":"admit_periodic"}"#),
        "op = \"admit_periodic\": missing field `task`"
    );
    assert_eq!(
        parse_err(r#"{"op":"remove"}"#),
        "op = \"remove\": missing field `task`"
    );
    assert_eq!(
        parse_err(r#"{"op":"remove","task":3}"#),
        "task: invalid type: integer `3`, expected a string"
    );
    assert_eq!(
        parse_err(r#"{"op":"admit_periodic","task":"vm","wcet_slots":3}"#),
        "wcet_slots: unknown field `wcet_slots`, expected `task`"
    );
}

#[test]
fn malformed_requests_are_refused_through_serve_with_their_reason() {
    let mut c = control();
    let mut e = FakeEngine::at(at(2));
    let cases = [
        ("not json", "request is not JSON: "),
        (r#"{"op":"reboot"}"#, "op = \"reboot\": unknown operation"),
        (r#"{"op":"status","x":1}"#, "x: unknown field `x`"),
        (
            r#"{"op":"switch_table","plan":"b.json"}"#,
            "plan: invalid value: string \"b.json\", expected an absolute path",
        ),
    ];
    for (line, want) in cases {
        let got = error(e.serve(&mut c, line));
        assert!(got.starts_with(want), "{line}: {got}");
    }
    let long = "x".repeat(MAX_REQUEST_BYTES + 1);
    assert_eq!(
        error(e.serve(&mut c, &long)),
        format!("request is longer than {MAX_REQUEST_BYTES} bytes")
    );
}

// Replies: one test per kind pins the exact line (clients and the VM tests read these fields).

fn line(answer: Answer) -> String {
    Reply::Ok(answer).to_line()
}

#[test]
fn a_status_reply_line() {
    let status = Status {
        slot: 13,
        frame_slots: 8,
        table: "/p/a.json".into(),
        pending_switch_slot: None,
        planner: None,
    };
    assert_eq!(
        line(Answer::Status(status.clone())),
        "{\"ok\":true,\"slot\":13,\"frame_slots\":8,\"table\":\"/p/a.json\",\
         \"pending_switch_slot\":null}\n"
    );
    let planner = PlannerStatus {
        policy: "bss".into(),
        lead_slots: 2,
        admissions_accepted: 1,
        admissions_rejected: 0,
        tasks: vec![TaskChange {
            task: "v".into(),
            state: TaskState::Admitted,
            from_slot: 24,
        }],
        adaptive: Vec::new(),
    };
    let with_planner = Status {
        pending_switch_slot: Some(16),
        planner: Some(planner),
        ..status
    };
    assert_eq!(
        line(Answer::Status(with_planner)),
        "{\"ok\":true,\"slot\":13,\"frame_slots\":8,\"table\":\"/p/a.json\",\
         \"pending_switch_slot\":16,\"planner\":{\"policy\":\"bss\",\"lead_slots\":2,\
         \"admissions_accepted\":1,\"admissions_rejected\":0,\
         \"tasks\":[{\"task\":\"v\",\"state\":\"admitted\",\"from_slot\":24}]}}\n"
    );
}

#[test]
fn a_status_reply_names_each_adaptive_task_s_state_period_and_reservation() {
    use crate::adaptive::{AdaptiveState, AdaptiveView, Slots};
    let mut c = super::control_of(2).with_planner("bss", 2);
    let view = AdaptiveView {
        name: "legacy".into(),
        task: 3,
        state: AdaptiveState::Reserved,
        period_us: Some(40_000),
        reservation: Some(Slots {
            period: 20,
            wcet: 4,
        }),
        changes: 1,
    };
    c.set_adaptive(vec![view]);
    let Answer::Status(st) = c.status(0) else {
        panic!("a status")
    };
    let text = line(Answer::Status(st));
    assert!(
        text.contains(
            "\"adaptive\":[{\"name\":\"legacy\",\"task\":3,\"state\":\"reserved\",\
             \"period_us\":40000,\"reservation\":{\"period\":20,\"wcet\":4},\"changes\":1}]"
        ),
        "{text}"
    );
}

#[test]
fn a_task_state_is_admitted_or_removed_on_the_wire() {
    for (state, wire) in [
        (TaskState::Admitted, "\"admitted\""),
        (TaskState::Removed, "\"removed\""),
    ] {
        assert_eq!(serde_json::to_string(&state).ok().as_deref(), Some(wire));
    }
}

#[test]
fn a_switched_reply_line() {
    assert_eq!(
        line(Answer::Switched {
            switch_slot: 24,
            at_ns: 1_240_000_000
        }),
        "{\"ok\":true,\"switch_slot\":24,\"at_ns\":1240000000}\n"
    );
}

#[test]
fn firm_admission_reply_lines() {
    assert_eq!(
        line(Answer::FirmAccepted {
            cpu: 1,
            deadline_slot: 73,
            first_slot: 16
        }),
        "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"deadline_slot\":73,\"first_slot\":16}\n"
    );
    assert_eq!(
        line(Answer::FirmRejected {
            needed: 40,
            available: 12,
            deadline_slot: 33
        }),
        "{\"ok\":true,\"accepted\":false,\"needed\":40,\"available\":12,\"deadline_slot\":33}\n"
    );
}

#[test]
fn a_policy_set_reply_line() {
    assert_eq!(
        line(Answer::PolicySet {
            policy: "dvfs".into(),
            from_slot: 6
        }),
        "{\"ok\":true,\"policy\":\"dvfs\",\"from_slot\":6}\n"
    );
}

#[test]
fn periodic_admission_reply_lines() {
    assert_eq!(
        line(Answer::PeriodicAccepted {
            cpu: 1,
            from_slot: 24
        }),
        "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"from_slot\":24}\n"
    );
    assert_eq!(
        line(Answer::PeriodicRejected {
            why: "2 slots every 8 slots on cpu 1: \"x\"".into()
        }),
        "{\"ok\":true,\"accepted\":false,\"why\":\"2 slots every 8 slots on cpu 1: \\\"x\\\"\"}\n"
    );
}

#[test]
fn a_removed_reply_line() {
    assert_eq!(
        line(Answer::Removed { from_slot: 9 }),
        "{\"ok\":true,\"removed\":true,\"from_slot\":9}\n"
    );
}

#[test]
fn an_error_reply_line_is_one_line() {
    let r = Reply::from(ControlError::Kernel("writing BPF map table: EPERM".into()));
    assert_eq!(
        r.to_line(),
        "{\"ok\":false,\"error\":\"writing the table to the kernel: writing BPF map table: EPERM\"}\n"
    );
    let multi = Reply::from(ControlError::Plan {
        path: "/p/b.json".into(),
        reason: "invalid plan: x\ny".into(),
    });
    assert_eq!(
        multi.to_line(),
        "{\"ok\":false,\"error\":\"/p/b.json: invalid plan: x; y\"}\n"
    );
}

#[test]
fn reply_lines_are_json_objects_for_the_client() {
    // what `scx_tt ctl` reads: `ok`, and `accepted` for an admission
    let cases = [
        (line(Answer::Removed { from_slot: 1 }), true, None),
        (
            line(Answer::FirmRejected {
                needed: 1,
                available: 0,
                deadline_slot: 2,
            }),
            true,
            Some(false),
        ),
        (Reply::Err("x".into()).to_line(), false, None),
    ];
    for (text, ok, accepted) in cases {
        let v: serde_json::Value = serde_json::from_str(&text).expect("a JSON line");
        assert_eq!(v["ok"].as_bool(), Some(ok), "{text}");
        assert_eq!(v["accepted"].as_bool(), accepted, "{text}");
    }
}

#[test]
fn slot_counts_above_the_planner_bound_are_refused_with_the_field() {
    use crate::planner::cpu::MAX_JOB_SLOTS;
    let at = MAX_JOB_SLOTS;
    assert!(Request::parse(&format!(
        r#"{{"op":"admit_firm","task":"a","wcet_slots":{at},"deadline_slots":{at}}}"#
    ))
    .is_ok());
    for bad in [MAX_JOB_SLOTS + 1, 1 << 63, u64::MAX] {
        assert_eq!(
            parse_err(&format!(
                r#"{{"op":"admit_firm","task":"a","wcet_slots":{bad},"deadline_slots":9}}"#
            )),
            format!(
                "wcet_slots: invalid value: integer `{bad}`, expected at most {MAX_JOB_SLOTS} \
                 slots (the planner's bound)"
            )
        );
        assert!(parse_err(&format!(
            r#"{{"op":"admit_firm","task":"a","wcet_slots":1,"deadline_slots":{bad}}}"#
        ))
        .starts_with("deadline_slots: invalid value"));
    }
    // above u64: a float to serde_json, refused as such
    assert!(parse_err(
        r#"{"op":"admit_firm","task":"a","wcet_slots":18446744073709551616,"deadline_slots":9}"#
    )
    .starts_with("wcet_slots: invalid type"));
}

#[test]
fn duplicate_keys_are_refused_wherever_they_are() {
    // serde_json's Value keeps the last one: this would run `status`
    assert_eq!(
        parse_err(r#"{"op":"remove","task":"a","op":"status"}"#),
        "op: appears twice (a key may appear once)"
    );
    assert_eq!(
        parse_err(r#"{"op":"admit_firm","task":"a","task":"b","wcet_slots":3,"deadline_slots":9}"#),
        "task: appears twice (a key may appear once)"
    );
    assert_eq!(
        parse_err(r#"{"op":"remove","task":{"x":1,"x":2}}"#),
        "task.x: appears twice (a key may appear once)"
    );
}

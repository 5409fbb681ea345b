use crate::plan::{from_str, Start};

/// One managed CPU 1; tasks a (in the table) and `extra` (the task under test).
fn plan_with(extra: &str, table: bool) -> String {
    let table = if table {
        r#", "table": [{ "cpu": 1, "ranges": [{ "start": 0, "end": 2, "task": "a" }] }]"#
    } else {
        ""
    };
    format!(
        r#"{{ "slot_us": 10000, "cpus": {{ "managed": [1], "housekeeping": [0] }},
          "tasks": [ {{ "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 10, "wcet": 2 }},
                     {extra} ]{table} }}"#
    )
}

fn errors(text: &str) -> Vec<String> {
    match from_str(text) {
        Ok(_) => Vec::new(),
        Err(e) => e.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn an_admitted_task_is_loaded_but_owns_no_job_slot_or_interval() {
    let text = plan_with(
        r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 15, "start": "admitted" }"#,
        false,
    );
    let plan = from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    // its period still shapes the frame, and it would not fit next to a (the point of
    // admitting it later: the table does not have to)
    assert_eq!(plan.frame_slots, 20);
    assert_eq!(
        plan.tasks[1].start,
        Start::Admitted {
            period: 20,
            wcet: 15
        }
    );
    assert_eq!(plan.tasks[1].cpu, Some(1));
    assert_eq!(plan.tasks[0].start, Start::Table);
    let c = &plan.cpus[0];
    assert!(c.jobs.iter().all(|j| j.task == 0), "{:?}", c.jobs);
    assert_eq!(c.jobs.len(), 2);
    let busy: u64 = c.table.iter().map(|r| r.end - r.start).sum();
    assert_eq!(busy, 4);
    let sc: i64 = c.intervals.iter().map(|iv| iv.sc.max(0)).sum();
    assert_eq!(sc, 16, "{:?}", c.intervals);
}

#[test]
fn vm_timing_becomes_the_admitted_period_and_wcet() {
    let text = plan_with(
        r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "utilization": 0.25, "latency_us": 150000, "start": "admitted" }"#,
        false,
    );
    let plan = from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let Start::Admitted { period, wcet } = plan.tasks[1].start else {
        panic!("{:?}", plan.tasks[1].start);
    };
    // L/(2(1-U)) = 15 / 1.5 = 10 slots; ⌈0.25 · 10⌉ = 3
    assert_eq!((period, wcet), (10, 3));
}

#[test]
fn start_table_is_the_default_and_equal_to_absent() {
    let with = plan_with(
        r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "start": "table" }"#,
        false,
    );
    let without = plan_with(
        r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3 }"#,
        false,
    );
    let (a, b) = (
        from_str(&with).expect("valid"),
        from_str(&without).expect("valid"),
    );
    assert_eq!(a.cpus[0].table, b.cpus[0].table);
    assert_eq!(a.cpus[0].jobs.len(), 3);
    assert_eq!(a.tasks[1].start, Start::Table);
}

#[test]
fn bad_starts_name_the_field_the_value_and_the_rule() {
    let cases: &[(&str, bool, &str)] = &[
        (
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "start": "later" }"#,
            false,
            r#"tasks[1].start = "later": must be "table" or "admitted""#,
        ),
        (
            r#"{ "name": "v", "pid": 11, "class": "be", "start": "admitted" }"#,
            false,
            r#"tasks[1].start = "admitted": is only for tt tasks"#,
        ),
        (
            r#"{ "name": "v", "pid": 11, "class": "tt", "period": 20, "wcet": 3, "start": "admitted" }"#,
            false,
            r#"tasks[1].cpu: is required for a tt task with start "admitted""#,
        ),
        (
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "jobs": [{ "release": 0, "deadline": 5, "wcet": 1 }], "start": "admitted" }"#,
            false,
            r#"tasks[1].start = "admitted": start = "admitted" needs period+wcet, utilization+latency_us or interface timing"#,
        ),
        (
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "deadline": 10, "start": "admitted" }"#,
            false,
            "with the deadline equal to the period and no offset",
        ),
        (
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "offset": 1, "deadline": 19, "start": "admitted" }"#,
            false,
            "with the deadline equal to the period and no offset",
        ),
        (
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 20, "wcet": 3, "start": "admitted" }"#,
            true,
            r#"tasks[1].start = "admitted": start = "admitted" cannot be combined with an explicit table"#,
        ),
    ];
    for (task, table, want) in cases {
        let errs = errors(&plan_with(task, *table));
        assert!(
            errs.iter().any(|e| e.contains(want)),
            "{task}: want {want:?}, got {errs:?}"
        );
    }
}
#[test]
fn completion_defaults_to_yield_but_none_for_qemu_vcpus_and_be_tasks() {
    use crate::plan::Completion;
    let text = plan_with(
        r#"{ "name": "vm", "qemu": { "name": "g" }, "class": "tt", "cpu": 1, "period": 10, "wcet": 2 },
           { "name": "b", "comm": "b", "class": "be" }"#,
        false,
    );
    let plan = from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<Completion> = plan.tasks.iter().map(|t| t.completion).collect();
    // a (pid): yield; vm (qemu): none; b (be): none
    assert_eq!(
        got,
        vec![Completion::Yield, Completion::None, Completion::None]
    );
}

#[test]
fn an_explicit_completion_wins_over_the_default() {
    use crate::plan::Completion;
    for (value, want) in [
        ("yield", Completion::Yield),
        ("block", Completion::Block),
        ("none", Completion::None),
    ] {
        let text = plan_with(
            &format!(
                r#"{{ "name": "vm", "qemu": {{ "pid": 5 }}, "class": "tt", "cpu": 1, "period": 10, "wcet": 2, "completion": "{value}" }}"#
            ),
            false,
        );
        let plan = from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.tasks[1].completion, want, "{value}");
    }
}

#[test]
fn bad_completions_name_the_field_the_value_and_the_rule() {
    let cases = [
        (
            r#"{ "name": "v", "pid": 11, "class": "tt", "cpu": 1, "period": 10, "wcet": 2, "completion": "exit" }"#,
            r#"tasks[1].completion = "exit": must be "yield", "block" or "none""#,
        ),
        (
            r#"{ "name": "v", "pid": 11, "class": "be", "completion": "yield" }"#,
            r#"tasks[1].completion = "yield": is only for tt tasks (a be task has no jobs)"#,
        ),
    ];
    for (task, want) in cases {
        let errs = errors(&plan_with(task, false));
        assert!(
            errs.iter().any(|e| e.contains(want)),
            "{task}: want {want:?}, got {errs:?}"
        );
    }
}

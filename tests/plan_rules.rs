//! One test per validation rule of the plan format: each breaks exactly one rule of a valid plan
//! and asserts the error names the JSON path, the offending value (where there is one) and the
//! rule.

use scx_tt::plan::{self, PlanError, Rule};
use serde_json::{json, Value};

/// A valid plan: two managed CPUs, one periodic tt task, one be task.
fn base() -> Value {
    json!({
        "slot_us": 1000,
        "cpus": { "managed": [1, 2], "housekeeping": [0] },
        "tasks": [
            { "name": "a", "pid": 10, "class": "tt", "period": 10, "wcet": 2 },
            { "name": "b", "comm": "worker", "class": "be" }
        ]
    })
}

fn errors(v: &Value) -> Vec<PlanError> {
    match plan::from_str(&v.to_string()) {
        Ok(_) => Vec::new(),
        Err(e) => e.0,
    }
}

/// The error at `path` whose rule matches; also checks the rendered message starts with the
/// path (and the value, when given).
macro_rules! expect {
    ($v:expr, $path:expr, $value:expr, $rule:pat) => {{
        let errs = errors(&$v);
        let hit = errs
            .iter()
            .find(|e| e.path == $path && matches!(e.rule, $rule))
            .unwrap_or_else(|| {
                panic!(
                    "no {} error at {}; got {:#?}",
                    stringify!($rule),
                    $path,
                    errs
                )
            });
        let shown = hit.to_string();
        let value: Option<&str> = $value;
        match value {
            Some(v) => assert!(
                shown.starts_with(&format!("{} = {}: ", $path, v)),
                "message {shown:?} does not name path and value"
            ),
            None => assert!(
                shown.starts_with(&format!("{}: ", $path)),
                "message {shown:?}"
            ),
        }
        owned(hit)
    }};
}

/// Not `must_use`, unlike `clone`: most tests only need the assertions of `expect!`.
fn owned(e: &PlanError) -> PlanError {
    e.clone()
}

fn set(v: &mut Value, pointer: &str, new: Value) {
    let (parent, field) = pointer.rsplit_once('/').expect("pointer with a field");
    v.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .expect("object in the base plan")
        .insert(field.to_string(), new);
}

fn remove(v: &mut Value, pointer: &str, field: &str) {
    v.pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .expect("object")
        .remove(field);
}

fn push_task(v: &mut Value, task: Value) {
    v["tasks"].as_array_mut().expect("tasks").push(task);
}

#[test]
fn base_plan_is_valid() {
    assert_eq!(errors(&base()), Vec::new());
}

#[test]
fn syntax_error_names_line_and_column() {
    let e = plan::from_str("{\n  \"slot_us\": 1000,\n  \"cpus\": }").unwrap_err();
    assert!(
        matches!(
            e.0[0].rule,
            Rule::Syntax {
                line: 3,
                column: 11,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("line 3, column 11"), "{e}");
}

#[test]
fn trailing_text_after_the_plan_is_a_syntax_error() {
    let text = format!("{}\n]", base());
    let e = plan::from_str(&text).unwrap_err();
    assert!(matches!(e.0[0].rule, Rule::Syntax { line: 2, .. }), "{e}");
}

#[test]
fn unknown_field_is_rejected_with_its_path() {
    let mut v = base();
    set(&mut v, "/tasks/0/wcett", json!(3));
    let e = plan::from_str(&v.to_string()).unwrap_err();
    assert_eq!(e.0[0].path, "tasks[0].wcett");
    assert!(e.to_string().contains("unknown field `wcett`"), "{e}");
}

#[test]
fn wrong_type_names_its_path() {
    let mut v = base();
    set(&mut v, "/tasks/0/period", json!(-3));
    let e = plan::from_str(&v.to_string()).unwrap_err();
    assert_eq!(e.0[0].path, "tasks[0].period");
}

#[test]
fn version_other_than_1() {
    let mut v = base();
    v["version"] = json!(2);
    expect!(v, "version", Some("2"), Rule::Version);
}

#[test]
fn missing_field() {
    let mut v = base();
    remove(&mut v, "", "slot_us");
    expect!(v, "slot_us", None, Rule::Missing);
    let mut v = base();
    remove(&mut v, "/tasks/1", "class");
    expect!(v, "tasks[1].class", None, Rule::Missing);
}

#[test]
fn slot_us_out_of_range() {
    let mut v = base();
    set(&mut v, "/slot_us", json!(99));
    expect!(v, "slot_us", Some("99"), Rule::OutOfRange { .. });
    set(&mut v, "/slot_us", json!(1_000_001));
    expect!(v, "slot_us", Some("1000001"), Rule::OutOfRange { .. });
}

#[test]
fn empty_cpu_list() {
    let mut v = base();
    set(&mut v, "/cpus/housekeeping", json!([]));
    expect!(v, "cpus.housekeeping", Some("[]"), Rule::Empty);
}

#[test]
fn duplicate_cpu() {
    let mut v = base();
    set(&mut v, "/cpus/managed", json!([1, 2, 1]));
    let e = expect!(v, "cpus.managed[2]", Some("1"), Rule::Duplicate(_));
    assert!(e.to_string().contains("cpus.managed[0]"), "{e}");
}

#[test]
fn cpu_both_managed_and_housekeeping() {
    let mut v = base();
    set(&mut v, "/cpus/housekeeping", json!([0, 2]));
    expect!(
        v,
        "cpus.housekeeping[1]",
        Some("2"),
        Rule::ManagedAndHousekeeping
    );
}

#[test]
fn task_cpu_not_managed() {
    let mut v = base();
    set(&mut v, "/tasks/0/cpu", json!(0));
    expect!(v, "tasks[0].cpu", Some("0"), Rule::NotManaged);
}

#[test]
fn cpu_not_on_this_machine_is_an_error_when_running() {
    let p = plan::from_str(&base().to_string()).unwrap();
    assert!(p.check_cpus_exist(&[0, 1, 2, 3]).is_ok());
    let e = p.check_cpus_exist(&[0, 1]).unwrap_err();
    assert_eq!(e.0.len(), 1);
    assert_eq!(e.0[0].path, "cpus.managed[1]");
    assert!(matches!(e.0[0].rule, Rule::CpuOffline { .. }));
    assert!(e.to_string().starts_with("cpus.managed[1] = 2: "), "{e}");
    assert!(e.to_string().contains("0-1"), "{e}");
}

#[test]
fn empty_tasks() {
    let mut v = base();
    set(&mut v, "/tasks", json!([]));
    expect!(v, "tasks", Some("[]"), Rule::Empty);
}

#[test]
fn empty_task_name() {
    let mut v = base();
    set(&mut v, "/tasks/0/name", json!(""));
    expect!(v, "tasks[0].name", Some("\"\""), Rule::Empty);
}

#[test]
fn duplicate_task_name() {
    let mut v = base();
    set(&mut v, "/tasks/1/name", json!("a"));
    expect!(v, "tasks[1].name", Some("\"a\""), Rule::Duplicate(_));
}

#[test]
fn no_selector_or_two_selectors() {
    let mut v = base();
    remove(&mut v, "/tasks/0", "pid");
    let e = expect!(v, "tasks[0]", None, Rule::SelectorCount(_));
    assert!(e.to_string().contains("found none"), "{e}");
    let mut v = base();
    set(&mut v, "/tasks/1/cmd", json!(["/bin/true"]));
    let e = expect!(v, "tasks[1]", None, Rule::SelectorCount(_));
    assert!(e.to_string().contains("found comm, cmd"), "{e}");
}

#[test]
fn zero_pid_and_tid() {
    let mut v = base();
    set(&mut v, "/tasks/0/pid", json!(0));
    expect!(v, "tasks[0].pid", Some("0"), Rule::Zero);
    let mut v = base();
    remove(&mut v, "/tasks/0", "pid");
    set(&mut v, "/tasks/0/tids", json!([5, 0]));
    expect!(v, "tasks[0].tids[1]", Some("0"), Rule::Zero);
}

#[test]
fn empty_cmd() {
    let mut v = base();
    remove(&mut v, "/tasks/1", "comm");
    set(&mut v, "/tasks/1/cmd", json!([]));
    expect!(v, "tasks[1].cmd", Some("[]"), Rule::Empty);
}

#[test]
fn comm_longer_than_kernel_keeps() {
    let mut v = base();
    set(&mut v, "/tasks/1/comm", json!("a-very-long-thread"));
    expect!(
        v,
        "tasks[1].comm",
        Some("\"a-very-long-thread\""),
        Rule::CommTooLong
    );
}

#[test]
fn cgroup_must_be_absolute() {
    let mut v = base();
    remove(&mut v, "/tasks/1", "comm");
    set(&mut v, "/tasks/1/cgroup", json!("rt/vm1"));
    expect!(
        v,
        "tasks[1].cgroup",
        Some("\"rt/vm1\""),
        Rule::CgroupNotAbsolute
    );
}

#[test]
fn qemu_needs_exactly_pid_or_name() {
    let mut v = base();
    remove(&mut v, "/tasks/0", "pid");
    set(&mut v, "/tasks/0/qemu", json!({ "pid": 4, "name": "vm1" }));
    expect!(
        v,
        "tasks[0].qemu",
        Some(r#"{"pid":4,"name":"vm1"}"#),
        Rule::QemuSelector(_)
    );
}

#[test]
fn unknown_class() {
    let mut v = base();
    set(&mut v, "/tasks/0/class", json!("rt"));
    expect!(v, "tasks[0].class", Some("\"rt\""), Rule::Class);
}

#[test]
fn tt_task_needs_exactly_one_timing_model() {
    let mut v = base();
    remove(&mut v, "/tasks/0", "period");
    remove(&mut v, "/tasks/0", "wcet");
    expect!(v, "tasks[0]", None, Rule::TimingCount(_));
    let mut v = base();
    set(&mut v, "/tasks/0/utilization", json!(0.5));
    let e = expect!(v, "tasks[0]", None, Rule::TimingCount(_));
    assert!(
        e.to_string()
            .contains("period+wcet and utilization+latency_us"),
        "{e}"
    );
}

#[test]
fn incomplete_timing_model() {
    let mut v = base();
    remove(&mut v, "/tasks/0", "wcet");
    expect!(v, "tasks[0].wcet", None, Rule::MissingWhen(_));
}

#[test]
fn be_task_has_no_timing() {
    let mut v = base();
    set(&mut v, "/tasks/1/period", json!(10));
    expect!(v, "tasks[1].period", None, Rule::BeTiming);
}

#[test]
fn zero_period() {
    let mut v = base();
    set(&mut v, "/tasks/0/period", json!(0));
    expect!(v, "tasks[0].period", Some("0"), Rule::Zero);
}

#[test]
fn wcet_exceeds_deadline_window() {
    // The example of the issue: wcet 7 with a relative deadline of 5 slots.
    let mut v = base();
    set(&mut v, "/tasks/0/wcet", json!(7));
    set(&mut v, "/tasks/0/deadline", json!(5));
    let e = expect!(
        v,
        "tasks[0].wcet",
        Some("7"),
        Rule::WcetExceedsWindow { window: 5 }
    );
    assert_eq!(
        e.to_string(),
        "tasks[0].wcet = 7: exceeds its deadline window of 5 slots"
    );
}

#[test]
fn offset_plus_deadline_exceeds_period() {
    // offset 3 + deadline (default = period 10) = 13 > 10.
    let mut v = base();
    set(&mut v, "/tasks/0/offset", json!(3));
    expect!(
        v,
        "tasks[0].offset",
        Some("3"),
        Rule::OffsetDeadlineExceedsPeriod {
            sum: 13,
            period: 10
        }
    );
}

fn vm_task(v: &mut Value, utilization: Value, latency_us: u64) {
    for f in ["period", "wcet"] {
        remove(v, "/tasks/0", f);
    }
    set(v, "/tasks/0/utilization", utilization);
    set(v, "/tasks/0/latency_us", json!(latency_us));
}

#[test]
fn vm_timing_derives_period_and_wcet() {
    // slot 1000 us, L = 20000 us = 20 slots, U = 0.25: T = ⌊20 / 1.5⌋ = 13, C = ⌈3.25⌉ = 4.
    let mut v = base();
    vm_task(&mut v, json!(0.25), 20_000);
    let p = plan::from_str(&v.to_string()).unwrap();
    assert_eq!(p.frame_slots, 13);
    let jobs = &p.cpus[0].jobs;
    assert_eq!((jobs[0].deadline, jobs[0].wcet), (13, 4));
}

#[test]
fn utilization_outside_zero_one() {
    let mut v = base();
    vm_task(&mut v, json!(1.0), 20_000);
    expect!(
        v,
        "tasks[0].utilization",
        Some("1.0"),
        Rule::OutOfRange { .. }
    );
}

#[test]
fn latency_too_short_for_a_slot() {
    // slot 1000 us, L = 900 us = 0.9 slots, U = 0.5: T ≤ 0.9 / (2 · 0.5) = 0.9 < 1.
    let mut v = base();
    vm_task(&mut v, json!(0.5), 900);
    expect!(
        v,
        "tasks[0].latency_us",
        Some("900"),
        Rule::LatencyTooShort { .. }
    );
}

fn with_jobs(jobs: Value) -> Value {
    let mut v = base();
    for f in ["period", "wcet"] {
        remove(&mut v, "/tasks/0", f);
    }
    set(&mut v, "/tasks/0/jobs", jobs);
    v["frame_slots"] = json!(20);
    v
}

#[test]
fn explicit_jobs_are_valid() {
    let v = with_jobs(json!([
        { "release": 0, "deadline": 5, "wcet": 2 },
        { "release": 5, "deadline": 20, "wcet": 3 }
    ]));
    assert_eq!(errors(&v), Vec::new());
}

#[test]
fn job_release_not_before_deadline() {
    let v = with_jobs(json!([{ "release": 5, "deadline": 5, "wcet": 1 }]));
    expect!(
        v,
        "tasks[0].jobs[0].release",
        Some("5"),
        Rule::JobWindow { deadline: 5 }
    );
}

#[test]
fn job_outside_frame() {
    let v = with_jobs(json!([{ "release": 5, "deadline": 25, "wcet": 1 }]));
    expect!(
        v,
        "tasks[0].jobs[0].deadline",
        Some("25"),
        Rule::OutsideFrame { frame: 20 }
    );
}

#[test]
fn job_windows_overlap() {
    let v = with_jobs(json!([
        { "release": 0, "deadline": 6, "wcet": 1 },
        { "release": 5, "deadline": 9, "wcet": 1 }
    ]));
    expect!(
        v,
        "tasks[0].jobs[1]",
        Some(r#"{"release":5,"deadline":9,"wcet":1}"#),
        Rule::JobsOverlap
    );
}

#[test]
fn frame_unknown_without_periods() {
    let mut v = with_jobs(json!([{ "release": 0, "deadline": 6, "wcet": 1 }]));
    remove(&mut v, "", "frame_slots");
    expect!(v, "frame_slots", None, Rule::FrameUnknown);
}

#[test]
fn frame_not_a_multiple_of_a_period() {
    let mut v = base();
    v["frame_slots"] = json!(25);
    let e = expect!(
        v,
        "frame_slots",
        Some("25"),
        Rule::FrameNotMultiple { period: 10, .. }
    );
    assert!(e.to_string().contains("period 10 of a"), "{e}");
}

#[test]
fn frame_above_cap_says_how_large() {
    // Periods 999983 and 999979 (primes): lcm = 999983 · 999979 = 999962000357 slots.
    let mut v = base();
    set(&mut v, "/tasks/0/period", json!(999_983));
    push_task(
        &mut v,
        json!({ "name": "c", "pid": 11, "class": "tt", "period": 999_979, "wcet": 1 }),
    );
    let e = expect!(v, "frame_slots", None, Rule::FrameTooLarge { .. });
    assert!(e.to_string().contains("999962000357"), "{e}");
    let mut v = base();
    v["frame_slots"] = json!(2_000_000);
    expect!(
        v,
        "frame_slots",
        Some("2000000"),
        Rule::FrameTooLarge { .. }
    );
}

#[test]
fn infeasible_names_first_missing_job_and_slot() {
    // On cpu 1: a (period 10, wcet 6) and c (period 5, wcet 3) need 6 + 2·3 = 12 > 10 slots.
    // EDF: c#0 [0,3); deadlines tie at 10 between a (release 0) and c#1 (release 5): a runs
    // [3,5) and [5,9) (earlier release wins), c#1 gets only [9,10): 2 of 3 slots left at 10.
    let mut v = base();
    set(&mut v, "/tasks/0/cpu", json!(1));
    set(&mut v, "/tasks/0/wcet", json!(6));
    push_task(
        &mut v,
        json!({ "name": "c", "pid": 11, "class": "tt", "cpu": 1, "period": 5, "wcet": 3 }),
    );
    let e = expect!(
        v,
        "tasks[2]",
        None,
        Rule::Infeasible {
            cpu: 1,
            instance: 1,
            deadline: 10,
            remaining: 2,
            ..
        }
    );
    assert!(e.to_string().contains("at slot 10"), "{e}");
}

fn with_table(ranges: Value) -> Value {
    let mut v = base();
    set(&mut v, "/tasks/0/cpu", json!(1));
    v["table"] = json!([{ "cpu": 1, "ranges": ranges }]);
    v
}

#[test]
fn explicit_table_is_kept() {
    // Frame 10, a needs 2 slots of [0,10): give it [7,9).
    let v = with_table(json!([{ "start": 7, "end": 9, "task": "a" }]));
    let p = plan::from_str(&v.to_string()).unwrap();
    assert_eq!((p.cpus[0].table[0].start, p.cpus[0].table[0].end), (7, 9));
}

#[test]
fn table_needs_cpu_on_every_tt_task() {
    let mut v = with_table(json!([{ "start": 0, "end": 2, "task": "a" }]));
    remove(&mut v, "/tasks/0", "cpu");
    expect!(v, "tasks[0].cpu", None, Rule::MissingWhen(_));
}

#[test]
fn table_cpu_not_managed() {
    let mut v = with_table(json!([]));
    v["table"] = json!([{ "cpu": 0, "ranges": [] }]);
    expect!(v, "table[0].cpu", Some("0"), Rule::NotManaged);
}

#[test]
fn table_cpu_twice() {
    let mut v = with_table(json!([{ "start": 0, "end": 2, "task": "a" }]));
    v["table"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "cpu": 1, "ranges": [] }));
    expect!(v, "table[1].cpu", Some("1"), Rule::Duplicate(_));
}

#[test]
fn table_range_empty() {
    let v = with_table(json!([{ "start": 3, "end": 3, "task": "a" }]));
    expect!(
        v,
        "table[0].ranges[0].start",
        Some("3"),
        Rule::RangeEmpty { end: 3 }
    );
}

#[test]
fn table_range_outside_frame() {
    let v = with_table(json!([{ "start": 9, "end": 11, "task": "a" }]));
    expect!(
        v,
        "table[0].ranges[0].end",
        Some("11"),
        Rule::OutsideFrame { frame: 10 }
    );
}

#[test]
fn table_unknown_task() {
    let v = with_table(json!([{ "start": 0, "end": 2, "task": "zz" }]));
    expect!(
        v,
        "table[0].ranges[0].task",
        Some("\"zz\""),
        Rule::UnknownTask
    );
}

#[test]
fn table_task_on_other_cpu_or_be() {
    let v = with_table(json!([{ "start": 0, "end": 2, "task": "b" }]));
    expect!(
        v,
        "table[0].ranges[0].task",
        Some("\"b\""),
        Rule::RangeTaskNotHere { .. }
    );
}

#[test]
fn table_ranges_overlap() {
    let v = with_table(json!([
        { "start": 0, "end": 2, "task": "a" },
        { "start": 1, "end": 2, "task": "a" }
    ]));
    let e = expect!(
        v,
        "table[0].ranges[1].start",
        Some("1"),
        Rule::RangeOverlap(_)
    );
    assert!(e.to_string().contains("table[0].ranges[0]"), "{e}");
}

#[test]
fn table_range_outside_job_window() {
    // a (period 10, offset 2, deadline 6): window [2, 8); slot 1 is outside it.
    let mut v = with_table(json!([{ "start": 1, "end": 3, "task": "a" }]));
    set(&mut v, "/tasks/0/offset", json!(2));
    set(&mut v, "/tasks/0/deadline", json!(6));
    let e = expect!(
        v,
        "table[0].ranges[0]",
        Some("[1,3]"),
        Rule::RangeOutsideWindow { slot: 1, .. }
    );
    assert!(e.to_string().contains("slot 1"), "{e}");
}

#[test]
fn table_job_gets_wrong_number_of_slots() {
    let v = with_table(json!([{ "start": 0, "end": 3, "task": "a" }]));
    expect!(
        v,
        "tasks[0]",
        None,
        Rule::TableWcet {
            got: 3,
            wcet: 2,
            ..
        }
    );
}

#[test]
fn errors_are_collected_not_first_only() {
    let mut v = base();
    set(&mut v, "/slot_us", json!(5));
    set(&mut v, "/tasks/0/class", json!("x"));
    set(&mut v, "/tasks/1/comm", json!(""));
    assert_eq!(errors(&v).len(), 3, "{:#?}", errors(&v));
}

// ---- the BPF scheduler's limits (crates/tt-core/src/plan/limits.rs, src/bpf/intf.h) ----

/// The base plan with `n` be tasks in all (a plan that loads has at most `abi::MAX_TASKS`).
fn with_tasks(n: usize) -> Value {
    let mut v = base();
    v["frame_slots"] = json!(10);
    v["tasks"] = json!((0..n)
        .map(|i| json!({ "name": format!("t{i}"), "pid": 100 + i, "class": "be" }))
        .collect::<Vec<_>>());
    v
}

#[test]
fn task_count_above_the_bpf_limit() {
    use scx_tt::abi::MAX_TASKS;
    assert_eq!(errors(&with_tasks(MAX_TASKS)), Vec::new());
    let v = with_tasks(MAX_TASKS + 1);
    let e = expect!(v, "tasks", None, Rule::TooManyTasks { .. });
    assert_eq!(
        e.to_string(),
        "tasks: has 1025 tasks, above the BPF scheduler's limit of 1024 (TT_MAX_TASKS)"
    );
    // the only error: every task is valid on its own
    assert_eq!(errors(&v).len(), 1);
}

#[test]
fn cpu_id_at_or_above_the_bpf_limit() {
    use scx_tt::abi::MAX_CPUS;
    assert_eq!(MAX_CPUS, 1024);
    let mut v = base();
    set(&mut v, "/cpus/managed", json!([1, MAX_CPUS]));
    let e = expect!(
        v,
        "cpus.managed[1]",
        Some("1024"),
        Rule::CpuIdTooLarge { .. }
    );
    assert_eq!(
        e.to_string(),
        "cpus.managed[1] = 1024: is not below the BPF scheduler's limit of 1024 CPU ids \
         (TT_MAX_CPUS)"
    );
    // the only error: nothing else of the plan is judged against a refused CPU list
    assert_eq!(errors(&v).len(), 1, "{:?}", errors(&v));
    let mut v = base();
    set(&mut v, "/cpus/housekeeping", json!([0, 4096]));
    expect!(
        v,
        "cpus.housekeeping[1]",
        Some("4096"),
        Rule::CpuIdTooLarge { limit: 1024 }
    );
    // the edges of u32: refused by value, not wrapped to a small id
    for c in [u32::MAX - 1, u32::MAX] {
        let text = c.to_string();
        let mut v = base();
        set(&mut v, "/cpus/housekeeping", json!([0, c]));
        expect!(
            v,
            "cpus.housekeeping[1]",
            Some(text.as_str()),
            Rule::CpuIdTooLarge { limit: 1024 }
        );
    }
    // the highest id the per-CPU arrays hold is fine
    let mut v = base();
    set(&mut v, "/cpus/housekeeping", json!([0, MAX_CPUS - 1]));
    assert_eq!(errors(&v), Vec::new());
}

#[test]
fn cpu_ids_beyond_u32_or_negative_are_refused_at_their_path() {
    // 2^32 would wrap to CPU 0 (a housekeeping CPU here), 2^32 + 1 to managed CPU 1, -1 to
    // u32::MAX: each is refused where it stands, as the JSON reader's error, nothing else
    // judged (the reader stops at it)
    for (pointer, bad, path, why) in [
        (
            "/cpus/managed",
            json!([1, 4_294_967_296u64]),
            "cpus.managed[1]",
            "invalid value: integer `4294967296`, expected u32",
        ),
        (
            "/cpus/managed",
            json!([1, 4_294_967_297u64]),
            "cpus.managed[1]",
            "invalid value: integer `4294967297`, expected u32",
        ),
        (
            "/cpus/housekeeping",
            json!([-1]),
            "cpus.housekeeping[0]",
            "invalid value: integer `-1`, expected u32",
        ),
        (
            "/cpus/managed",
            json!([1, 1e3]),
            "cpus.managed[1]",
            "invalid type: floating point `1000.0`, expected u32",
        ),
    ] {
        let mut v = base();
        set(&mut v, pointer, bad.clone());
        let errs = errors(&v);
        assert_eq!(errs.len(), 1, "{bad}: {errs:#?}");
        assert_eq!(errs[0].path, path);
        let shown = errs[0].to_string();
        assert!(
            shown.starts_with(&format!("{path}: line 1, column ")) && shown.ends_with(why),
            "{bad}: {shown}"
        );
    }
    // a task's CPU beyond u32 is refused the same way, not taken as CPU 1
    let mut v = base();
    v["tasks"][0]["cpu"] = json!(4_294_967_297u64);
    let errs = errors(&v);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].path, "tasks[0].cpu");
    assert!(
        errs[0]
            .to_string()
            .ends_with("invalid value: integer `4294967297`, expected u32"),
        "{}",
        errs[0]
    );
}

#[test]
fn a_plan_on_cpu_1023_is_accepted_with_its_table_there() {
    use scx_tt::abi::MAX_CPUS;
    let top = MAX_CPUS - 1;
    let mut v = base();
    set(&mut v, "/cpus/managed", json!([512, top]));
    set(&mut v, "/cpus/housekeeping", json!([0, 1022]));
    v["tasks"][0]["cpu"] = json!(top);
    let p = plan::from_str(&v.to_string()).expect("CPU ids up to 1023 are valid");
    assert_eq!(p.managed, vec![512, top]);
    assert_eq!(p.housekeeping, vec![0, 1022]);
    assert_eq!(p.tasks[0].cpu, Some(top));
    assert_eq!(p.cpus[1].cpu, top);
    assert_eq!(
        p.cpus[1].table.iter().map(|r| r.end - r.start).sum::<u64>(),
        2
    );
    // the same plan with the task on 1024: refused at the CPU list, the task's CPU unmanaged
    let mut v = base();
    set(&mut v, "/cpus/managed", json!([512, MAX_CPUS]));
    v["tasks"][0]["cpu"] = json!(MAX_CPUS);
    let errs = errors(&v);
    assert!(
        errs.iter()
            .any(|e| e.path == "cpus.managed[1]" && e.rule == Rule::CpuIdTooLarge { limit: 1024 }),
        "{errs:#?}"
    );
}

#[test]
fn tids_above_the_bpf_thread_limit() {
    use scx_tt::abi::{MAX_PLAN_THREADS, MAX_THREADS};
    // one entry of the tid map is scx_tt's loader thread
    assert_eq!(MAX_PLAN_THREADS, MAX_THREADS - 1);
    let mut v = base();
    v["tasks"][1] = json!({ "name": "b", "tids": (1..=MAX_PLAN_THREADS as u32).collect::<Vec<_>>(), "class": "be" });
    assert_eq!(errors(&v), Vec::new());
    push_task(
        &mut v,
        json!({ "name": "c", "tids": [1, 2, MAX_THREADS as u32], "class": "be" }),
    );
    let e = expect!(v, "tasks[2].tids", None, Rule::TooManyThreads { .. });
    assert!(
        e.to_string()
            .contains("distinct thread ids to 65536, above the BPF scheduler's limit of 65535"),
        "{e}"
    );
}

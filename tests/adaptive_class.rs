//! Issue 17, item 1: the `adaptive` class of plan task. Valid tasks map their bounds onto the
//! controller's and the analyser's parameters; each broken rule names the JSON path, the value
//! and the rule, and the plan is refused.

mod common;

use scx_tt::adaptive::{AnalyserConfig, ControllerConfig};
use scx_tt::plan::{self, Class, PlanError, Rule};
use serde_json::{json, Value};

/// A valid plan: 2 ms slots, frame 120, one tt task and one adaptive task on CPU 1.
fn base() -> Value {
    json!({
        "slot_us": 2000,
        "frame_slots": 120,
        "cpus": { "managed": [1], "housekeeping": [0] },
        "tasks": [
            { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 20, "wcet": 4 },
            { "name": "legacy", "comm": "legacy", "class": "adaptive", "cpu": 1 }
        ]
    })
}

fn errors(v: &Value) -> Vec<PlanError> {
    match plan::from_str(&v.to_string()) {
        Ok(_) => Vec::new(),
        Err(e) => e.0,
    }
}

/// The single error of plan `v`, with its rendered message.
fn only_error(v: &Value) -> (PlanError, String) {
    let errs = errors(v);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let shown = errs[0].to_string();
    (errs[0].clone(), shown)
}

fn with(mut v: Value, task: usize, field: &str, value: Value) -> Value {
    v["tasks"][task][field] = value;
    v
}

#[test]
fn an_adaptive_task_runs_in_slack_with_the_default_parameters() {
    let p = plan::from_str(&base().to_string()).expect("valid");
    let t = &p.tasks[1];
    assert_eq!((t.class, t.cpu), (Class::Adaptive, Some(1)));
    let params = t.adaptive.as_ref().expect("params");
    assert_eq!(params.controller, ControllerConfig::default());
    assert_eq!(params.analyser, AnalyserConfig::default());
    assert!(p.tasks[0].adaptive.is_none());
    // no jobs of its own; the CPU has a slack user
    assert!(p.cpus[0].jobs.iter().all(|j| j.task == 0));
    assert_eq!(p.cpus[0].jobs.len(), 6);
    assert!(p.planner_inputs()[0].has_be);
    assert!(p.tasks[1].runs_in_slack() && !p.tasks[0].runs_in_slack());
    let shown = serde_json::to_value(&p).expect("serialize");
    assert_eq!(shown["tasks"][1]["class"], "adaptive");
}

#[test]
fn bounds_map_onto_the_controller_and_the_analyser() {
    let v = with(
        base(),
        1,
        "adaptive",
        json!({ "period_min_us": 10000, "period_max_us": 100000, "max_bandwidth": 0.5,
                "min_bandwidth": 0.1, "percentile": 0.9, "window": 8, "spread": 0.3,
                "sampling_us": 500000 }),
    );
    let p = plan::from_str(&v.to_string()).expect("valid");
    let a = p.tasks[1].adaptive.as_ref().expect("params");
    let c = &a.controller;
    assert_eq!(
        (c.period_min_ns, c.period_max_ns, c.sampling_ns, c.window),
        (10_000_000, 100_000_000, 500_000_000, 8)
    );
    assert_eq!(
        (c.max_bandwidth, c.min_bandwidth, c.percentile, c.spread),
        (0.5, 0.1, 0.9, 0.3)
    );
    // the analyser's frequency range is the period range's
    assert_eq!((a.analyser.f_min_hz, a.analyser.f_max_hz), (10.0, 100.0));
    assert_eq!(a.analyser.horizon_ns, 2_000_000_000);
}

#[test]
fn each_broken_rule_names_path_value_and_rule() {
    let bad = |bounds: Value| with(base(), 1, "adaptive", bounds);
    let cases: Vec<(Value, &str)> = vec![
        (
            bad(json!({ "spread": -0.5 })),
            "tasks[1].adaptive.spread = -0.5: must be in [0, 10]",
        ),
        (
            bad(json!({ "max_bandwidth": 0 })),
            "tasks[1].adaptive.max_bandwidth = 0: must be in (0, 1]",
        ),
        (
            bad(json!({ "min_bandwidth": 0.95 })),
            "tasks[1].adaptive.min_bandwidth = 0.95: must be in [0, max_bandwidth = 0.9]",
        ),
        (
            bad(json!({ "percentile": 1.5 })),
            "tasks[1].adaptive.percentile = 1.5: must be in (0, 1]",
        ),
        (
            bad(json!({ "window": 5000 })),
            "tasks[1].adaptive.window = 5000: must be in 1..=4096",
        ),
        (
            bad(json!({ "period_min_us": 1000 })),
            "tasks[1].adaptive.period_min_us = 1000: must be at least slot_us (2000): a \
             reservation period is at least one slot",
        ),
        (
            bad(json!({ "period_min_us": 50000, "period_max_us": 40000 })),
            "tasks[1].adaptive.period_max_us = 40000: must be at least period_min_us (50000)",
        ),
        (
            bad(json!({ "sampling_us": 100000 })),
            "tasks[1].adaptive.sampling_us = 100000: must be at least period_max_us (500000): \
             a sample spans a whole period",
        ),
        (
            with(base(), 1, "period", json!(20)),
            "tasks[1].period: is a timing field; an adaptive task has no timing",
        ),
        (
            with(base(), 0, "adaptive", json!({})),
            "tasks[0].adaptive: is only for adaptive tasks (class \"adaptive\")",
        ),
        (
            with(base(), 1, "start", json!("admitted")),
            "tasks[1].start = \"admitted\": is only for tt tasks",
        ),
        (
            with(base(), 1, "class", json!("rt")),
            "tasks[1].class = \"rt\": must be \"tt\", \"be\" or \"adaptive\"",
        ),
    ];
    for (v, want) in cases {
        let (_, shown) = only_error(&v);
        assert!(shown.starts_with(want), "got {shown:?}, want {want:?}");
    }
    // the rule variants
    let (e, _) = only_error(&bad(json!({ "spread": 11 })));
    assert!(matches!(e.rule, Rule::Adaptive(_)));
    assert_eq!(e.value.as_deref(), Some("11"));
    let (e, _) = only_error(&with(base(), 1, "wcet", json!(2)));
    assert_eq!(e.rule, Rule::AdaptiveTiming);
    let (e, _) = only_error(&with(base(), 0, "adaptive", json!({ "spread": 0.1 })));
    assert_eq!(e.rule, Rule::AdaptiveNotAdaptive);
}

#[test]
fn an_adaptive_task_needs_a_managed_cpu() {
    let mut v = base();
    v["tasks"][1]
        .as_object_mut()
        .expect("task")
        .remove("cpu")
        .expect("cpu");
    let (e, shown) = only_error(&v);
    assert_eq!(e.path, "tasks[1].cpu");
    assert_eq!(
        shown,
        "tasks[1].cpu: is required for an adaptive task (the CPU of its reservation)"
    );
    let (e, _) = only_error(&with(base(), 1, "cpu", json!(3)));
    assert_eq!(
        (e.path.as_str(), e.rule),
        ("tasks[1].cpu", Rule::NotManaged)
    );
}

#[test]
fn unknown_and_null_bounds_are_refused_with_their_path() {
    for (bounds, want) in [
        (json!({ "period": 5 }), "unknown field `period`"),
        (json!({ "spread": null }), "invalid type: null"),
        (json!([1]), "a JSON object"),
    ] {
        let e = errors(&with(base(), 1, "adaptive", bounds.clone()));
        assert_eq!(e.len(), 1, "{bounds}: {e:#?}");
        let shown = e[0].to_string();
        assert!(e[0].path.starts_with("tasks[1].adaptive"), "{shown}");
        assert!(shown.contains(want), "{bounds}: {shown}");
    }
}

#[test]
fn completion_applies_to_the_reservation() {
    let v = with(base(), 1, "completion", json!("block"));
    let p = plan::from_str(&v.to_string()).expect("valid");
    assert_eq!(p.tasks[1].completion, plan::Completion::Block);
}

/// `scx_tt --table` without `--planner` refuses a plan with an adaptive task, naming it, before
/// anything else (no root or sched_ext needed): its `cmd` never runs.
#[test]
fn a_run_without_the_planner_refuses_an_adaptive_task_by_name() {
    let dir = common::temp_dir("adaptive", "legacy");
    let marker = dir.join("spawned");
    let mut v = base();
    v["tasks"][1]
        .as_object_mut()
        .expect("task")
        .remove("comm")
        .expect("comm");
    v["tasks"][1]["cmd"] = json!(["/bin/sh", "-c", format!("touch {}", marker.display())]);
    let plan = dir.join("plan.json");
    std::fs::write(&plan, v.to_string()).expect("plan");
    let out = common::run(&[
        "--table",
        plan.to_str().expect("utf-8"),
        "--duration-s",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("task legacy: class adaptive needs planner mode")
            && err.contains("--planner bss"),
        "{err}"
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(!marker.exists(), "the adaptive task's cmd ran: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

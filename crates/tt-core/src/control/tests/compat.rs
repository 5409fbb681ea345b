//! Whether a new plan may replace the running one: every mismatch is named with both values.

use super::*;

fn running() -> String {
    text(10_000, 3)
}

fn errors(running: &str, new: &str) -> Vec<String> {
    mismatches(&plan_of(running), &plan_of(new))
        .iter()
        .map(|m| m.to_string())
        .collect()
}

#[test]
fn only_timing_differs_so_the_plans_are_compatible() {
    let (a, b) = (running(), text(10_000, 5));
    assert_ne!(plan_of(&a).cpus[0].table, plan_of(&b).cpus[0].table);
    assert_eq!(errors(&a, &b), Vec::<String>::new());
}

#[test]
fn another_slot_length_is_named_with_both_values() {
    assert_eq!(
        errors(&running(), &text(5_000, 3)),
        vec!["slot_us = 5000: must equal the running plan's 10000"]
    );
}

#[test]
fn another_frame_length_is_named() {
    let b = running().replace("\"version\": 1,", "\"version\": 1, \"frame_slots\": 16,");
    assert_eq!(
        errors(&running(), &b),
        vec!["frame_slots = 16: must equal the running plan's 8"]
    );
}

#[test]
fn other_cpu_roles_are_named() {
    let a = running();
    let b = a.replace(
        r#""managed": [1], "housekeeping": [0]"#,
        r#""managed": [1], "housekeeping": [0, 2]"#,
    );
    assert_eq!(
        errors(&a, &b),
        vec!["cpus.housekeeping = [0,2]: must equal the running plan's [0]"]
    );
    let c = a
        .replace(r#""managed": [1]"#, r#""managed": [2]"#)
        .replace(r#""cpu": 1"#, r#""cpu": 2"#);
    assert_eq!(
        errors(&a, &c),
        vec![
            "cpus.managed = [2]: must equal the running plan's [1]",
            "tasks[0].cpu = 2: must equal the running plan's 1",
            "tasks[1].cpu = 2: must equal the running plan's 1",
            "tasks[2].cpu = 2: must equal the running plan's 1",
        ]
    );
}

#[test]
fn each_task_property_is_named_by_its_index() {
    let a = running();
    let renamed = a.replace(r#""name": "b""#, r#""name": "x""#);
    assert_eq!(
        errors(&a, &renamed),
        vec!["tasks[1].name = \"x\": must equal the running plan's \"b\""]
    );
    let reselected = a.replace("\"pid\": 12", "\"comm\": \"spin\"");
    assert_eq!(
        errors(&a, &reselected),
        vec!["tasks[3].selector = {\"comm\":\"spin\"}: must equal the running plan's {\"pid\":12}"]
    );
    let reclassed = a.replace(
        r#""pid": 11, "class": "tt", "cpu": 1, "period": 8, "wcet": 2"#,
        r#""pid": 11, "class": "be""#,
    );
    assert_eq!(
        errors(&a, &reclassed),
        vec![
            "tasks[1].class = \"be\": must equal the running plan's \"tt\"",
            "tasks[1].cpu = null: must equal the running plan's 1",
        ]
    );
}

#[test]
fn a_task_more_or_less_is_named() {
    let a = running();
    let b = a.replace(
        r#"{ "name": "c", "pid": 12, "class": "be" }"#,
        r#"{ "name": "c", "pid": 12, "class": "be" }, { "name": "d", "pid": 14, "class": "be" }"#,
    );
    assert_eq!(
        errors(&a, &b),
        vec!["tasks = 5 tasks: must equal the running plan's 4 tasks"]
    );
    assert_eq!(
        errors(&b, &a),
        vec!["tasks = 4 tasks: must equal the running plan's 5 tasks"]
    );
}

#[test]
fn reordered_tasks_are_incompatible() {
    let a = running();
    let swapped = a
        .replace(r#""a", "pid": 10"#, r#""tmp", "pid": 99"#)
        .replace(r#""b", "pid": 11"#, r#""a", "pid": 10"#)
        .replace(r#""tmp", "pid": 99"#, r#""b", "pid": 11"#);
    let e = errors(&a, &swapped);
    assert_eq!(e.len(), 4, "{e:?}");
    assert!(e[0].starts_with("tasks[0].name = \"b\""), "{e:?}");
}

//! Issue 12, item 6: what docs/plan.schema.json forbids but serde's derive would take (the
//! positional array form of an object, `null` for an absent field) is refused with the path.

use scx_tt::plan;
use scx_tt::sim;

fn plan_error(text: &str) -> String {
    plan::from_str(text).unwrap_err().to_string()
}

const TASK: &str = r#"{"name":"a","cmd":["/bin/true"],"class":"tt","cpu":1,"period":10,"wcet":3}"#;

#[test]
fn a_plan_in_positional_form_is_refused() {
    let e = plan_error(
        r#"[1, 10000, null, [[1],[0]], [["a",null,null,null,null,null,["/bin/true"],"tt",1,10,3]]]"#,
    );
    assert!(
        e.contains("invalid type: sequence, expected a JSON object"),
        "{e}"
    );
    let e = plan_error(&format!(
        r#"{{"slot_us":10000,"cpus":[[1],[0]],"tasks":[{TASK}]}}"#
    ));
    assert!(e.starts_with("cpus: "), "{e}");
    let e = plan_error(&format!(
        r#"{{"slot_us":10000,"cpus":{{"managed":[1],"housekeeping":[0]}},"tasks":[{TASK},["b"]]}}"#
    ));
    assert!(e.starts_with("tasks[1]: "), "{e}");
    let e = plan_error(
        r#"{"slot_us":10000,"cpus":{"managed":[1],"housekeeping":[0]},
            "tasks":[{"name":"a","cmd":["/bin/true"],"class":"tt","cpu":1,"jobs":[[0,10,3]]}]}"#,
    );
    assert!(e.starts_with("tasks[0].jobs[0]: "), "{e}");
    let e = plan_error(&format!(
        r#"{{"slot_us":10000,"frame_slots":10,"cpus":{{"managed":[1],"housekeeping":[0]}},
            "tasks":[{TASK}],"table":[{{"cpu":1,"ranges":[[0,3,"a"]]}}]}}"#
    ));
    assert!(e.starts_with("table[0].ranges[0]: "), "{e}");
    let e = plan_error(
        r#"{"slot_us":10000,"cpus":{"managed":[1],"housekeeping":[0]},
            "tasks":[{"name":"q","qemu":[1],"class":"tt","cpu":1,"period":10,"wcet":3}]}"#,
    );
    assert!(e.starts_with("tasks[0].qemu: "), "{e}");
}

#[test]
fn null_is_not_absent() {
    let ok = format!(
        r#"{{"version":1,"slot_us":10000,"cpus":{{"managed":[1],"housekeeping":[0]}},"tasks":[{TASK}]}}"#
    );
    plan::from_str(&ok).expect("the plan is valid");
    for (field, path) in [
        (r#""version":1"#, "version"),
        (r#""slot_us":10000"#, "slot_us"),
        (r#""housekeeping":[0]"#, "cpus.housekeeping"),
        (r#""wcet":3"#, "tasks[0].wcet"),
        (r#""cmd":["/bin/true"]"#, "tasks[0].cmd"),
    ] {
        let name = field.split(':').next().unwrap();
        let text = ok.replacen(field, &format!("{name}:null"), 1);
        let e = plan_error(&text);
        assert!(
            e.starts_with(&format!("{path}: ")) && e.contains("invalid type: null"),
            "{path}: {e}"
        );
    }
}

#[test]
fn arrivals_in_positional_form_or_with_null_are_refused() {
    let e = sim::parse_arrivals(r#"[[9,"spin-a","remove"]]"#)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("[0]: invalid type: sequence"), "{e}");
    let e = sim::parse_arrivals(r#"{"at_slot":9}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected a JSON array of objects"), "{e}");
    let e = sim::parse_arrivals(
        r#"[{"at_slot":9,"name":"x","kind":"aperiodic","wcet":2,"deadline":null}]"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("[0].deadline: invalid type: null"), "{e}");
    let e = sim::parse_arrivals(r#"[{"at_slot":9,"name":"x","kind":"remove","name":"y"}]"#)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("[0]: duplicate field `name`"), "{e}");
    let e = sim::parse_arrivals(r#"[] x"#).unwrap_err().to_string();
    assert!(e.starts_with("trailing characters"), "{e}");
}

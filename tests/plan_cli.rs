//! `scx_tt plan check|explain|gen` end to end: exit codes, output and determinism.

mod common;

use common::{run, text};
use std::path::PathBuf;

/// The path of a file `name` in an empty directory of its own.
fn scratch(name: &str) -> PathBuf {
    common::temp_dir("plan-cli", name).join(name)
}

#[test]
fn check_valid_plans_exits_0_with_a_summary() {
    let out = run(&[
        "plan",
        "check",
        "schedules/demo.json",
        "schedules/vm-example.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("schedules/demo.json: ok"), "{stdout}");
    assert!(
        stdout.contains("cpu 1:") && stdout.contains("utilization"),
        "{stdout}"
    );
}

#[test]
fn check_invalid_plan_exits_2_naming_the_path() {
    let bad = scratch("bad.json");
    std::fs::write(
        &bad,
        r#"{"slot_us": 1000, "cpus": {"managed": [1], "housekeeping": [0]},
            "tasks": [{"name": "a", "pid": 5, "class": "tt", "period": 5, "wcet": 7}]}"#,
    )
    .expect("write");
    let out = run(&[
        "plan",
        "check",
        "schedules/demo.json",
        bad.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("tasks[0].wcet = 7: exceeds its deadline window of 5 slots"),
        "{stderr}"
    );
}

#[test]
fn check_unreadable_file_exits_1() {
    let out = run(&["plan", "check", "no/such/plan.json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

#[test]
fn explain_json_is_the_documented_format() {
    let out = run(&["plan", "explain", "--json", "schedules/demo.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["format"], "scx_tt-plan-explain");
    assert_eq!(v["version"], 1);
    // demo cpu 1: spin-a (period 10, wcet 4) and spin-b (offset 2, deadline 15, wcet 5) in a
    // 20-slot frame: 4 + 4 + 5 = 13 busy slots.
    assert_eq!(v["cpus"][0]["busy_slots"], 13);
    let text_out = run(&["plan", "explain", "schedules/demo.json"]);
    assert!(text(&text_out.stdout).contains("intervals"));
}

#[test]
fn gen_same_seed_same_plan_and_it_validates() {
    let args = |out: &str| {
        vec![
            "plan",
            "gen",
            "--tasks",
            "10",
            "--util",
            "1.2",
            "--cpus",
            "2",
            "--wcet",
            "1..15",
            "--period",
            "15..50",
            "--frame-slots",
            "480",
            "--seed",
            "9",
            "--out",
        ]
        .into_iter()
        .map(String::from)
        .chain([out.to_string()])
        .collect::<Vec<_>>()
    };
    let (a, b) = (scratch("gen-a.json"), scratch("gen-b.json"));
    for p in [&a, &b] {
        let argv = args(p.to_str().expect("utf-8"));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = run(&argv);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let (ta, tb) = (
        std::fs::read_to_string(&a).expect("a"),
        std::fs::read_to_string(&b).expect("b"),
    );
    assert_eq!(ta, tb);
    let out = run(&["plan", "check", a.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn gen_reports_retried_seeds() {
    // Seeds 2 and 3 draw 7 periods in 15..50 whose lcm exceeds the 1,000,000-slot cap; the
    // command retries, says so on stderr, and uses seed 4.
    let out = run(&[
        "plan", "gen", "--tasks", "7", "--util", "0.5", "--cpus", "1", "--seed", "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("seed 2: frame_slots: the lcm of the periods is"),
        "{stderr}"
    );
    assert!(stderr.contains("retrying with the next seed"), "{stderr}");
    assert!(stderr.contains("plan gen: seed 4:"), "{stderr}");
}

#[test]
fn check_plan_above_the_bpf_task_limit_exits_2_naming_tasks() {
    // MAX_TASKS + 1 be tasks, each valid on its own: the plan cannot load (TT_MAX_TASKS).
    let n = scx_tt::abi::MAX_TASKS + 1;
    let tasks: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({ "name": format!("t{i}"), "pid": 100 + i, "class": "be" }))
        .collect();
    let plan = serde_json::json!({
        "slot_us": 1000,
        "frame_slots": 10,
        "cpus": { "managed": [1], "housekeeping": [0] },
        "tasks": tasks,
    });
    let path = scratch("too-many-tasks.json");
    std::fs::write(&path, plan.to_string()).expect("write");
    let out = run(&["plan", "check", path.to_str().expect("utf-8")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "tasks: has {n} tasks, above the BPF scheduler's limit of {} (TT_MAX_TASKS)",
            n - 1
        )),
        "{stderr}"
    );
}

/// Issue 12, item 7: a plan that is not UTF-8 is an invalid plan (exit 2), reported once with
/// the offset of the first bad byte.
#[test]
fn check_non_utf8_plan_exits_2_with_the_offset_once() {
    let bad = scratch("latin1.json");
    std::fs::write(
        &bad,
        b"{\"slot_us\": 1000, \"tasks\": [{\"name\": \"caf\xe9\"}]}",
    )
    .expect("write");
    let out = run(&["plan", "check", bad.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("UTF-8").count(), 1, "{stderr}");
    assert!(
        stderr.contains("not UTF-8: invalid byte at offset 41"),
        "{stderr}"
    );
}

/// A plan file above the size cap is refused before it is parsed (exit 2).
#[test]
fn check_oversized_plan_exits_2() {
    let big = scratch("big.json");
    let mut body = String::from("{\"slot_us\": 1000");
    body.push_str(&" ".repeat(scx_tt::plan::MAX_PLAN_BYTES as usize));
    body.push('}');
    std::fs::write(&big, body).expect("write");
    let out = run(&["plan", "check", big.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("larger than"),
        "{}",
        text(&out.stderr)
    );
}

/// `plan gen` arguments that are refused, each with the flag and value the message must name:
/// clap's own (a malformed number or range) and scx_tt's range checks after parsing alike exit
/// 2, the contract of an invalid input (docs/plan-format.md, "Generated plans"), print nothing
/// on stdout and write no `--out` file.
#[test]
fn gen_refused_arguments_exit_2_naming_the_flag_and_value() {
    let base = ["--tasks", "3", "--util", "0.5", "--cpus", "2"];
    let cases: &[(&[&str], &str)] = &[
        (&["--tasks", "0"], "--tasks 0"),
        (&["--tasks", "1025"], "--tasks 1025"),
        (&["--cpus", "0"], "--cpus 0"),
        (&["--cpus", "4294967295"], "--cpus 4294967295"),
        (&["--util", "0"], "--util 0"),
        (&["--util", "3"], "--util 3"),
        (&["--util", "NaN"], "--util NaN"),
        (&["--util", "inf"], "--util inf"),
        (&["--wcet", "0..3"], "--wcet 0..3"),
        (&["--period", "9..2"], "--period 9..2"),
        (
            &["--period", "1..18446744073709551615"],
            "--period 1..18446744073709551615",
        ),
        (&["--period", "2..3", "--wcet", "5..9"], "--period 2..3"),
        (&["--frame-slots", "0"], "--frame-slots 0"),
        (&["--frame-slots", "1000001"], "--frame-slots 1000001"),
        (&["--slot-us", "99"], "--slot-us 99"),
        (&["--slot-us", "1000001"], "--slot-us 1000001"),
        // clap's errors name the flag and the value too
        (&["--period", "x"], "--period"),
        (&["--seed", "-1"], "--seed"),
        (&["--util", "-0.5"], "--util -0.5"),
        (&["--tasks", "three"], "--tasks"),
    ];
    for (extra, names) in cases {
        let out_file = scratch("gen-refused.json");
        let _ = std::fs::remove_file(&out_file);
        let mut args = vec!["plan", "gen"];
        args.extend(base);
        // a later flag replaces the base's: clap refuses duplicates, so drop those first
        for pair in base.chunks(2) {
            if extra.contains(&pair[0]) {
                let at = args.iter().position(|a| *a == pair[0]).expect("base flag");
                args.drain(at..at + 2);
            }
        }
        args.extend(extra.iter());
        args.extend(["--out", out_file.to_str().expect("utf-8")]);
        let out = run(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
        assert!(!out_file.exists(), "{args:?} wrote {}", out_file.display());
    }
}

/// A valid argument set for which no seed yields a valid plan is not a refused argument: exit
/// 1 with the reason of the last seed (as an unwritable `--out`).
#[test]
fn gen_without_a_valid_plan_in_the_seeds_exits_1() {
    let out = run(&[
        "plan",
        "gen",
        "--tasks",
        "4",
        "--util",
        "2",
        "--cpus",
        "2",
        "--wcet",
        "7..7",
        "--period",
        "7..7",
        "--frame-slots",
        "7",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no valid plan in 1000 seeds"), "{stderr}");
}

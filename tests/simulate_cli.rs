//! `scx_tt simulate` end to end: exit codes, report, trace file.

use std::process::Command;

fn scx_tt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scx_tt"))
}

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

#[test]
fn demo_with_arrivals_reports_admissions_and_writes_one_trace_line_per_cpu_and_slot() {
    let trace = std::env::temp_dir().join(format!("scx_tt_sim_{}.jsonl", std::process::id()));
    let out = scx_tt()
        .args(["simulate", "--table"])
        .arg(format!("{}/schedules/demo.json", root()))
        .arg("--arrivals")
        .arg(format!("{}/schedules/arrivals/demo.json", root()))
        .args(["--policy", "dpm", "--frames", "10", "--trace"])
        .arg(&trace)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("guaranteed deadline misses: 0"), "{text}");
    assert!(
        text.contains("too-big") && text.contains("rejected"),
        "{text}"
    );
    assert!(text.contains("idle periods"), "{text}");
    // Demo: frame 20 slots (lcm of 10 and 20), 2 managed CPUs, 10 frames.
    let lines = std::fs::read_to_string(&trace).expect("trace written");
    assert_eq!(lines.lines().count(), 10 * 20 * 2);
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn json_report_parses_and_names_the_policy() {
    let out = scx_tt()
        .args([
            "simulate",
            "--json",
            "--policy",
            "dpm+dvfs",
            "--exec-factor",
            "0.7",
            "--table",
        ])
        .arg(format!("{}/schedules/demo.json", root()))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(v["policy"], "dpm+dvfs");
    assert_eq!(v["guaranteed_misses"], 0);
    assert_eq!(v["cpus"].as_array().map(|a| a.len()), Some(2));
}

#[test]
fn an_invalid_plan_exits_2_and_a_range_without_seed_is_refused() {
    let bad = std::env::temp_dir().join(format!("scx_tt_bad_{}.json", std::process::id()));
    std::fs::write(&bad, r#"{"version": 1}"#).unwrap();
    let out = scx_tt()
        .args(["simulate", "--table"])
        .arg(&bad)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_file(&bad);
    let out = scx_tt()
        .args(["simulate", "--exec-range", "0.5..1.0", "--table"])
        .arg(format!("{}/schedules/demo.json", root()))
        .output()
        .expect("runs");
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seed"));
}

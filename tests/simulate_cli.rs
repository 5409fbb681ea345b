//! `scx_tt simulate` end to end: exit codes, report, trace file.

mod common;

use common::{scx_tt, ROOT};

#[test]
fn demo_with_arrivals_reports_admissions_and_writes_a_header_and_one_trace_line_per_cpu_and_slot() {
    let trace = std::env::temp_dir().join(format!("scx_tt_sim_{}.jsonl", std::process::id()));
    let out = scx_tt()
        .args(["simulate", "--table"])
        .arg(format!("{}/schedules/demo.json", ROOT))
        .arg("--arrivals")
        .arg(format!("{}/schedules/arrivals/demo.json", ROOT))
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
    let (header, records) = scx_tt::trace::read_trace(&lines).expect("trace reads");
    let header = header.expect("the first line is the header");
    assert_eq!(
        (
            header.source.as_str(),
            header.slot_ns,
            header.t0_ns,
            header.cpus
        ),
        ("simulate", 10_000_000, None, vec![1, 2])
    );
    assert_eq!(records.len(), 10 * 20 * 2);
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
        .arg(format!("{}/schedules/demo.json", ROOT))
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
        .arg(format!("{}/schedules/demo.json", ROOT))
        .output()
        .expect("runs");
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seed"));
}

/// Energy in `simulate --json`, from the bundled model or a given one.
fn energy_j(policy: &str, model: Option<&str>) -> f64 {
    let mut cmd = scx_tt();
    cmd.args([
        "simulate", "--json", "--frames", "20", "--policy", policy, "--table",
    ])
    .arg(format!("{}/schedules/demo.json", ROOT));
    if let Some(m) = model {
        cmd.arg("--power-model").arg(format!("{}/models/{m}", ROOT));
    }
    let out = cmd.output().expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json report");
    v["energy_j"].as_f64().expect("energy_j in the report")
}

#[test]
fn energy_comes_from_the_power_model_and_ranks_the_policies() {
    // Demo plan, no arrivals: cpu 1 is 65 % busy, cpu 2 40 %. bss polls in idle slots at full
    // speed (the paper's set-up); dpm sleeps in deep states; dvfs slows the busy slots down.
    let bss = energy_j("bss", None);
    let dpm = energy_j("dpm", None);
    let dvfs = energy_j("dvfs", None);
    assert!(dpm < bss && dvfs < bss, "bss {bss} dpm {dpm} dvfs {dvfs}");
    // A different model gives a different figure: the flag is used.
    let little = energy_j("bss", Some("big-little-4x4.json"));
    assert!(
        (little - bss).abs() > 1e-6 * bss,
        "big.LITTLE {little} vs Xeon {bss}"
    );
}

#[test]
fn a_missing_power_model_is_an_error_naming_the_file() {
    let out = scx_tt()
        .args([
            "simulate",
            "--power-model",
            "/nonexistent/model.json",
            "--table",
        ])
        .arg(format!("{}/schedules/demo.json", ROOT))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/model.json"), "{err}");
}

/// `simulate ... | head -1`: the reader goes away after one line; simulate ends on SIGPIPE,
/// as other Unix tools do, without a panic message on stderr.
#[test]
fn a_reader_that_closes_the_pipe_ends_simulate_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = scx_tt()
        .current_dir(ROOT)
        .args([
            "simulate",
            "--demos",
            "schedules/demos-example.yaml",
            "--frames",
            "20000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn scx_tt");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read the first line");
    // the reader (and with it the pipe's read end) is dropped here
    let out = child.wait_with_output().expect("wait for scx_tt");
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!(
        "first line {first:?}; status {:?}; stderr {stderr:?}",
        out.status
    );
    assert!(
        first.contains("cmd="),
        "a schedule log line first: {first:?}"
    );
    assert!(!stderr.contains("panicked"), "no panic: {stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "ended by SIGPIPE: {:?}",
        out.status
    );
}

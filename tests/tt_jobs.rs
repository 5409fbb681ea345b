//! `tt_jobs --mid-sleep-us`: every job sleeps once, halfway, with its work unfinished (the
//! `servers` VM test's owner that wakes while a reclaimer runs). Judged from the job log: a job's
//! response is at least its execution plus the sleep.

use std::path::PathBuf;
use std::process::Command;

/// A log path of this test process (the log is removed after reading).
fn log_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("scx_tt_tt_jobs_{}_{name}.log", std::process::id()))
}

/// Runs `tt_jobs` for `jobs` jobs with `extra` arguments; returns its log's (release, finish,
/// exec) lines.
fn run(jobs: u64, extra: &[&str]) -> Vec<(u64, u64, u64)> {
    let log = log_path("run");
    let out = Command::new(env!("CARGO_BIN_EXE_tt_jobs"))
        .args([
            "--period-us",
            "40000",
            "--exec-us",
            "4000",
            "--exec-min-pct",
            "100",
        ])
        .args(["--jobs", &jobs.to_string(), "--end", "block", "--log"])
        .arg(&log)
        .args(extra)
        .output()
        .expect("tt_jobs runs");
    assert!(
        out.status.success(),
        "tt_jobs: {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).expect("the log");
    let _ = std::fs::remove_file(&log);
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let n: Vec<u64> = l.split_whitespace().map(|w| w.parse().unwrap()).collect();
            (n[0], n[1], n[2])
        })
        .collect()
}

#[test]
fn each_job_sleeps_once_halfway_and_still_runs_all_of_its_work() {
    let sleep_ns = 10_000_000;
    let jobs = run(3, &["--mid-sleep-us", "10000"]);
    assert_eq!(jobs.len(), 3, "{jobs:?}");
    for &(release, finish, exec) in &jobs {
        assert_eq!(exec, 4_000_000, "the drawn execution is logged: {jobs:?}");
        let response = finish - release;
        println!("release {release} response {response} ns (exec {exec} + sleep {sleep_ns})");
        assert!(
            response >= exec + sleep_ns,
            "a job's response {response} ns >= its execution {exec} + the sleep {sleep_ns}"
        );
    }
}

#[test]
fn a_mid_sleep_past_u64_ns_is_refused_by_name() {
    let log = log_path("refused");
    let out = Command::new(env!("CARGO_BIN_EXE_tt_jobs"))
        .args(["--period-us", "1000", "--exec-us", "100", "--jobs", "1"])
        .args(["--mid-sleep-us", &u64::MAX.to_string(), "--log"])
        .arg(&log)
        .output()
        .expect("tt_jobs runs");
    let _ = std::fs::remove_file(&log);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--mid-sleep-us"),
        "{err}"
    );
}

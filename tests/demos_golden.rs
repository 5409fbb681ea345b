//! DEmOS's own golden schedules (CTU-IIG/demos-sched `test/0300-schedule.t`, renamed `.bats`
//! later with the same cases), reproduced line for line by scx_tt's DEmOS simulator.
//!
//! Each case is a pair of fixtures in `tests/demos/`: `NN-name.yaml` (the inline `-C` config of
//! the DEmOS test, with its title and `demos-sched -t` in a comment) and `NN-name.log` (the
//! expected `DEMOS_SCHEDULE_LOG`). All nine cases run, the jitter one ("maximum jitter",
//! `DEMOS_RAND_SEED=2`) included: scx_tt implements DEmOS's generator (mt19937 + libstdc++'s
//! uniform_int_distribution, crates/tt-core/src/demos/rng.rs), so none is skipped.

mod common;

use scx_tt::demos::{self, Config, CpuSet, ImportOptions, SimOptions, Source};
use std::path::{Path, PathBuf};

#[path = "demos/cases.rs"]
mod cases;
use cases::CASES;

fn fixture(name: &str, ext: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/demos")
        .join(format!("{name}.{ext}"))
}

fn read(name: &str, ext: &str) -> String {
    std::fs::read_to_string(fixture(name, ext)).unwrap()
}

fn config(name: &str) -> Config {
    // DEmOS's tests pass these configs inline (-C)
    Config::from_yaml(&read(name, "yaml"), Source::Inline).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn opts(until_ms: u64, seed: Option<u32>) -> SimOptions {
    SimOptions {
        all_cpus: CpuSet::first_n(8),
        until_ms,
        seed: seed.unwrap_or(demos::rng::Mt19937::DEFAULT_SEED),
    }
}

/// Line-by-line comparison with the first differing line in the message.
fn assert_same_log(name: &str, got: &str, expected: &str) {
    let g: Vec<&str> = got.lines().collect();
    let e: Vec<&str> = expected.lines().collect();
    for (i, (a, b)) in g.iter().zip(&e).enumerate() {
        assert_eq!(
            a,
            b,
            "{name}: line {} differs\n--- got\n{got}--- expected\n{expected}",
            i + 1
        );
    }
    assert_eq!(
        g.len(),
        e.len(),
        "{name}: {} lines, expected {}\n--- got\n{got}--- expected\n{expected}",
        g.len(),
        e.len()
    );
}

#[test]
fn every_golden_schedule_is_reproduced_line_for_line() {
    for &(name, until, seed) in CASES {
        let r = demos::simulate(&config(name), &opts(until, seed)).unwrap();
        assert_same_log(name, &demos::render_log(&r.log), &read(name, "log"));
        assert_eq!(r.end_ms, until, "{name}");
    }
}

#[test]
fn the_log_format_is_demos_own() {
    // `{:6}: cpus={} cmd='{}' budget={}`, one line per process start, newline-terminated
    let r = demos::simulate(&config("07-be-after-all-sc"), &opts(20, None)).unwrap();
    let text = demos::render_log(&r.log);
    assert!(
        text.starts_with("     0: cpus=0 cmd='dummy SC1' budget=5\n"),
        "{text}"
    );
    assert!(
        text.ends_with("    20: cpus=1 cmd='dummy SC2' budget=3\n"),
        "{text}"
    );
}

#[test]
fn a_changed_config_or_seed_gives_a_different_log() {
    // the comparison can fail: one budget more, or another seed, changes the schedule
    let text = read("03-two-sc-processes", "yaml").replace("budget: 3", "budget: 4");
    let c = Config::from_yaml(&text, Source::Inline).unwrap();
    let r = demos::simulate(&c, &opts(20, None)).unwrap();
    assert_ne!(
        demos::render_log(&r.log),
        read("03-two-sc-processes", "log")
    );
    let r = demos::simulate(&config("09-maximum-jitter"), &opts(10, Some(3))).unwrap();
    assert_ne!(demos::render_log(&r.log), read("09-maximum-jitter", "log"));
}

#[test]
fn sc_overrun_is_warned_as_demos_does() {
    let r = demos::simulate(&config("02-one-sc-budget-above-window"), &opts(20, None)).unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("window #0 ended before all SC partitions finished")),
        "{:?}",
        r.warnings
    );
    let r = demos::simulate(&config("01-one-sc-budget-below-window"), &opts(20, None)).unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn the_cli_writes_the_same_logs() {
    let dir = common::temp_dir("demos-golden", "logs");
    for &(name, until, seed) in CASES {
        let log = dir.join(format!("{name}.log"));
        let mut cmd = common::scx_tt();
        cmd.arg("simulate")
            .arg("--demos")
            .arg(fixture(name, "yaml"))
            .args(["--demos-ms", &until.to_string(), "--demos-cpus", "0-7"])
            .arg("--schedule-log")
            .arg(&log);
        if let Some(s) = seed {
            cmd.args(["--seed", &s.to_string()]);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        assert_same_log(
            name,
            &std::fs::read_to_string(&log).unwrap(),
            &read(name, "log"),
        );
    }
    // --frames counts major frames: 2 frames of 10 ms is -t 20
    let out = common::scx_tt()
        .args(["simulate", "--frames", "2", "--demos-cpus", "0"])
        .arg("--demos")
        .arg(fixture("03-two-sc-processes", "yaml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_same_log(
        "03 via --frames",
        &String::from_utf8(out.stdout).unwrap(),
        &read("03-two-sc-processes", "log"),
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_golden_config_imports_to_a_valid_plan() {
    for &(name, _, _) in CASES {
        let c = config(name);
        let o = ImportOptions {
            slot_us: None,
            all_cpus: CpuSet::first_n(8),
            config_dir: None,
        };
        let imported = demos::import(&c, &o).unwrap_or_else(|e| panic!("{name}: {e}"));
        let json = serde_json::to_string(&imported.raw).unwrap();
        scx_tt::plan::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
}

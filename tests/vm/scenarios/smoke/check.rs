//! VM smoke tests: the guest kernel has sched_ext and the initramfs is complete; the harness
//! reports scenario failures (scenario `fail`) and retries crashed and hung guests (`crash`,
//! `hang`). Run first by `make test-vm` (`cargo test --release --test vm smoke -- --ignored
//! --nocapture`).

use crate::harness::{self, Vm};

#[test]
#[ignore = "boots a VM: make test-vm"]
fn guest_kernel_has_sched_ext_and_every_binary_runs() {
    let out = Vm::new("smoke").run().unwrap_or_else(|e| panic!("{e}"));
    for (k, v) in &out.results {
        println!("  {k} = {v}");
    }
    assert_eq!(
        out.result("sched_ext"),
        Ok("present"),
        "guest kernel without sched_ext"
    );
    assert_eq!(
        out.result("state"),
        Ok("disabled"),
        "a scheduler is attached at boot"
    );
    for bin in [
        "scx_tt",
        "tt_timer_baseline",
        "stress-ng",
        "cyclictest",
        "bpftool",
    ] {
        assert_eq!(
            out.result(&format!("bin_{bin}")),
            Ok("runs"),
            "{bin} does not run in the guest"
        );
    }
    assert_eq!(
        out.result("run_mode"),
        Ok("yes"),
        "scx_tt has no run mode (--summary-json)"
    );
    assert_eq!(out.rc, 0);
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn failing_scenario_reports_its_exit_code_and_results() {
    let out = Vm::new("fail")
        .tries(1)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.rc, 7);
    assert_eq!(out.number("answer"), Ok(42));
}

/// Boots `scenario`, whose guest crashes or hangs, `tries` times: run.sh must exit 3 and the
/// run must not look completed. Returns `tries`.
fn failed_boot(scenario: &str, tries: u32, timeout_s: u32) -> u32 {
    let (code, out) = Vm::new(scenario)
        .tries(tries)
        .timeout_s(timeout_s)
        .run_status();
    assert_eq!(
        code,
        Some(3),
        "run.sh must exit 3 when every try of {scenario} failed"
    );
    assert!(out.is_err(), "a {scenario} run must not look completed");
    tries
}

/// The console log of boot `t` of `scenario`.
fn try_log(scenario: &str, t: u32) -> String {
    let dir = harness::repo().join("target/vm/runs").join(scenario);
    std::fs::read_to_string(dir.join(format!("try-{t}.console.log"))).unwrap_or_default()
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn crashed_guest_is_retried_then_fails_loudly() {
    for t in 1..=failed_boot("crash", 2, 60) {
        let log = try_log("crash", t);
        assert!(
            log.contains("Kernel panic"),
            "try {t} did not record the panic"
        );
    }
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn hung_guest_is_stopped_at_the_timeout_and_fails_loudly() {
    failed_boot("hang", 1, 25);
    let log = try_log("hang", 1);
    assert!(
        log.contains("=== tt-vm: boot"),
        "the guest booted before hanging"
    );
    assert!(
        !log.contains("=== tt-vm: done"),
        "a hung guest cannot have completed"
    );
}

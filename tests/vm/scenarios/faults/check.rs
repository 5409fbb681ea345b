//! VM test, issue 10 item 6: BPF invariants fail loudly. The BPF test seam
//! (src/bpf/tt_sched.bpf.c, H) makes the kernel refuse a real `bpf_timer_start` of CPU 1's slot
//! timer, once at a re-arm from the slot tick (slot 100, 1 s into a 10 s run) and once while
//! scx_tt arms the timers (slot 0). Each time scx_tt must exit 1 with the BPF scheduler's exit
//! message naming the CPU and the slot on stderr, and sched_ext must be `disabled` afterwards;
//! after the re-arm failure the summary is still printed (text and JSON) and counts the failure
//! (`bpf_counters.timer_errors`). Guest: guest.sh and faults.json beside this file. Run by
//! `make test-vm`. On a PREEMPT_RT kernel the first test checks that the timer clock is refused
//! instead; the second breaks the helper-thread clock (issue 32) on every kernel.

use crate::harness::{Checks, Vm, VmOutput};

const FAULT_SLOT: u64 = 100;
const RUN_MS: i64 = 10_000;

/// The slot named by `... for slot <S>: bpf_timer_start returned -22` in `stderr` after `prefix`.
fn failed_slot(stderr: &str, prefix: &str) -> Option<u64> {
    let rest = &stderr[stderr.find(prefix)? + prefix.len()..];
    let (slot, tail) = rest.split_once(':')?;
    tail.trim_start()
        .starts_with("bpf_timer_start returned -22")
        .then(|| slot.trim().parse().ok())
        .flatten()
}

/// Prints the guest's wall time of a case (result NAME_ms): from scx_tt's start to its exit,
/// the load (verifier, guard-band calibration) included, seconds under TCG.
fn print_wall_ms(out: &VmOutput, case: &str) {
    println!(
        "--- {case}: scx_tt ran {:?} ms from its start to its exit, load included",
        out.number(&format!("{case}_ms"))
    );
}

/// Checks that the run of `case` ended before its duration, from slot 0 by its summary's
/// `duration_ns` (the wall time also holds the load: 13.7 s on a slow CI host for a run the
/// watchdog ended on time).
fn check_ended_early(c: &mut Checks, case: &str, summary: &serde_json::Value) {
    let ran_ms = summary["duration_ns"].as_u64().map(|ns| ns / 1_000_000);
    c.check(
        ran_ms.is_some_and(|ms| ms < RUN_MS as u64),
        format!(
            "{case}: scx_tt stopped before its {RUN_MS} ms duration: ran {ran_ms:?} ms from slot 0 \
             (the summary's duration_ns)"
        ),
    );
}

/// Prints the first non-blank lines of a case's stderr.
fn print_stderr_head(case: &str, err: &str) {
    println!("--- {case}: stderr (first lines)");
    for l in err.lines().filter(|l| !l.trim().is_empty()).take(6) {
        println!("  {l}");
    }
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn a_refused_slot_timer_start_ends_the_scheduler_naming_the_cpu_and_the_slot() {
    let out = Vm::new("faults")
        .arg("fault_slot", FAULT_SLOT)
        .timeout_s(180)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut c = Checks::default();
    if out.result("kernel_rt") == Ok("1") {
        // A PREEMPT_RT kernel: its verifier refuses bpf_timer, so there is no timer to break;
        // asking for the timer clock must be refused before anything is attached.
        let err = out.file("refused.err").unwrap_or_default();
        println!(
            "--- PREEMPT_RT kernel: --slot-clock timer: stderr {}",
            err.trim()
        );
        c.check(
            out.rc("refused") == "1",
            format!("refused: exit code 1, got {}", out.rc("refused")),
        );
        c.check(
            err.contains(&format!(
                "--slot-clock timer: kernel {} lacks bpf_timer",
                out.result("kernel_release").unwrap_or("?")
            )) && err.contains("PREEMPT_RT"),
            format!(
                "refused: the error names the flag, the kernel ({:?}) and the missing piece",
                out.result("kernel_release")
            ),
        );
        c.check(
            out.result("refused_state") == Ok("disabled"),
            format!(
                "refused: sched_ext state afterwards {:?}",
                out.result("refused_state")
            ),
        );
        c.finish();
        return;
    }

    // The re-arm from the slot tick.
    let err = out.file("rearm.err").unwrap_or_default();
    let stdout = out.file("rearm.out").unwrap_or_default();
    print_stderr_head("rearm", &err);
    c.check(
        out.rc("rearm") == "1",
        format!("rearm: exit code 1, got {}", out.rc("rearm")),
    );
    let slot = failed_slot(&err, "slot timer of CPU 1 cannot be re-armed for slot ");
    c.check(
        slot.is_some_and(|s| s >= FAULT_SLOT),
        format!("rearm: the exit message names CPU 1 and a slot >= {FAULT_SLOT}: {slot:?}"),
    );
    c.check(
        err.contains("scx_bpf_error"),
        "rearm: the exit kind is scx_bpf_error".to_string(),
    );
    c.check(
        out.result("rearm_state") == Ok("disabled"),
        format!(
            "rearm: sched_ext state afterwards {:?}",
            out.result("rearm_state")
        ),
    );
    print_wall_ms(&out, "rearm");
    c.check(
        stdout.contains("=== scx_tt summary ===")
            && stdout.contains("bpf counters cpu 1: ")
            && stdout.contains("error: cpu 1: the slot clock broke (timer_errors 1)"),
        "rearm: the text summary is printed with the counters and the error line".to_string(),
    );
    match out.json::<serde_json::Value>("rearm.json") {
        Ok(s) => {
            let cpu = &s["cpus"][0];
            let counters = &cpu["bpf_counters"];
            println!("--- rearm: cpu 1 bpf_counters {counters}");
            check_ended_early(&mut c, "rearm", &s);
            c.check(
                s["exit"] == "scheduler_exited",
                format!("rearm: summary exit {}", s["exit"]),
            );
            c.check(
                counters["timer_errors"] == 1 && counters["pin_mismatch"] == 0,
                "rearm: timer_errors 1, pin_mismatch 0".to_string(),
            );
            // the slot clock stopped at the failed slot: at most one tick and one record per
            // slot before it (a tick more than a slot late skips slots, so fewer)
            let ticks = counters["ticks"].as_u64().unwrap_or(u64::MAX);
            let records = cpu["ticks"].as_u64().unwrap_or(u64::MAX);
            c.check(
                slot.is_some_and(|s| ticks <= s && records <= s),
                format!("rearm: {ticks} slot ticks and {records} records before slot {slot:?}"),
            );
            // without a skipped slot, every slot before the one whose tick failed has its
            // record (slot 1 included: arm_timer opens it, E), and the last one is S - 1's
            // predecessor: the tick at S - 1 closed S - 2
            if counters["late_skips"] == 0 {
                c.check(
                    slot.is_some_and(|s| records == s - 1),
                    format!(
                        "rearm: {records} records, one per slot before slot {} but the last \
                         (no late skips)",
                        slot.unwrap_or(0)
                    ),
                );
            }
        }
        Err(e) => c.check(false, format!("rearm: summary JSON: {e}")),
    }

    // arm_timer while scx_tt arms the timers.
    let err = out.file("arm.err").unwrap_or_default();
    print_stderr_head("arm", &err);
    c.check(
        out.rc("arm") == "1",
        format!("arm: exit code 1, got {}", out.rc("arm")),
    );
    c.check(
        failed_slot(&err, "slot timer of CPU 1 cannot be armed for slot ") == Some(0),
        "arm: the exit message names CPU 1 and slot 0".to_string(),
    );
    c.check(
        err.contains("arming the slot timer of CPU 1: a bpf_timer helper (init, set_callback or start) returned -22"),
        "arm: scx_tt's error names the CPU and the helper's errno".to_string(),
    );
    c.check(
        out.result("arm_state") == Ok("disabled"),
        format!(
            "arm: sched_ext state afterwards {:?}",
            out.result("arm_state")
        ),
    );
    c.finish();
}

#[test]
fn failed_slot_reads_the_slot_of_the_exit_message() {
    let p = "slot timer of CPU 1 cannot be re-armed for slot ";
    let err = "scx_tt: BPF scheduler exit: EXIT: scx_bpf_error (slot timer of CPU 1 cannot be \
               re-armed for slot 101: bpf_timer_start returned -22)";
    assert_eq!(failed_slot(err, p), Some(101));
    assert_eq!(
        failed_slot("slot timer of CPU 2 cannot be re-armed for slot 9: x", p),
        None
    );
    assert_eq!(
        failed_slot(&err.replace("-22", "-16"), p),
        None,
        "another errno is not the seam's"
    );
}

/// The slot named by `slot clock of CPU 1 stalled: its event for slot <S> is <M> ms overdue`.
fn stalled_slot(stderr: &str) -> Option<(u64, u64)> {
    const PREFIX: &str = "slot clock of CPU 1 stalled: its event for slot ";
    let rest = &stderr[stderr.find(PREFIX)? + PREFIX.len()..];
    let (slot, tail) = rest.split_once(" is ")?;
    let ms = tail.split_once(" ms overdue")?.0;
    Some((slot.trim().parse().ok()?, ms.trim().parse().ok()?))
}

/// Issue 32, item 1: the helper-thread clock (`--slot-clock rt`, on any kernel) whose helper of
/// CPU 1 stalls from slot 100 on (the seam H: no tick, it sleeps a second at a time) must be
/// caught by the BPF watchdog in ops.tick, which ends the scheduler naming the CPU, the slot
/// and how overdue it is (at least 20 slots and 1 s), and leaves sched_ext disabled.
#[test]
#[ignore = "boots a VM: make test-vm"]
fn a_stalled_clock_thread_ends_the_scheduler_naming_the_cpu_and_the_slot() {
    let out = Vm::new("faults")
        .arg("fault_slot", FAULT_SLOT)
        .arg("case", "stall")
        .timeout_s(180)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut c = Checks::default();
    let err = out.file("stall.err").unwrap_or_default();
    let stdout = out.file("stall.out").unwrap_or_default();
    print_stderr_head("stall", &err);
    c.check(
        err.contains("scx_tt: slot clock: rt (SCHED_FIFO")
            && err.contains("the slot clock thread of CPU 1 will stall from slot 100"),
        "stall: scx_tt ran the helper-thread clock, with the seam set".to_string(),
    );
    c.check(
        out.rc("stall") == "1",
        format!("stall: exit code 1, got {}", out.rc("stall")),
    );
    let stalled = stalled_slot(&err);
    c.check(
        stalled.is_some_and(|(s, ms)| s >= FAULT_SLOT && ms >= 1000),
        format!(
            "stall: the exit message names CPU 1, a slot >= {FAULT_SLOT} and >= 1000 ms \
             overdue: {stalled:?}"
        ),
    );
    c.check(
        err.contains("scx_bpf_error"),
        "stall: the exit kind is scx_bpf_error".to_string(),
    );
    c.check(
        out.result("stall_state") == Ok("disabled"),
        format!(
            "stall: sched_ext state afterwards {:?}",
            out.result("stall_state")
        ),
    );
    c.check(
        stdout.contains("=== scx_tt summary ===") && stdout.contains("bpf counters cpu 1: "),
        "stall: the text summary is printed with the counters".to_string(),
    );
    print_wall_ms(&out, "stall");
    match out.json::<serde_json::Value>("stall.json") {
        Ok(s) => {
            check_ended_early(&mut c, "stall", &s);
            let counters = &s["cpus"][0]["bpf_counters"];
            println!("--- stall: cpu 1 bpf_counters {counters}");
            c.check(
                s["exit"] == "scheduler_exited",
                format!("stall: summary exit {}", s["exit"]),
            );
            let ticks = counters["ticks"].as_u64().unwrap_or(u64::MAX);
            c.check(
                stalled.is_some_and(|(s, _)| ticks <= s),
                format!("stall: {ticks} slot ticks on CPU 1, none past slot {stalled:?}"),
            );
        }
        Err(e) => c.check(false, format!("stall: summary JSON: {e}")),
    }
    c.finish();
}

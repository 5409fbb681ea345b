//! VM test, issue 3 item 6 c): an invalid plan exits 2; a plan naming a missing pid or CPU, a
//! run without root, and a run while another sched_ext scheduler is attached exit 1 with a
//! message naming the cause; sched_ext is `disabled` after each. Run by `make test-vm`.

use crate::harness::{Checks, Vm, VmOutput};

#[test]
#[ignore = "boots a VM: make test-vm"]
fn failures_exit_nonzero_with_a_clear_message_and_leave_sched_ext_disabled() {
    Vm::new("errors").timeout_s(180).check(check);
}

fn check(out: &VmOutput, c: &mut Checks) {
    let ops = out.result("attached_ops").unwrap_or("").to_string();
    // (case, exit code, words the message must contain, case-insensitive); the refused second
    // scheduler must name the attached one as /sys/kernel/sched_ext/root/ops does.
    let cases: [(&str, &str, Vec<&str>); 5] = [
        ("invalid_plan", "2", vec!["slot_us", "50"]),
        ("missing_pid", "1", vec!["999999"]),
        ("missing_cpu", "1", vec!["7"]),
        ("not_root", "1", vec!["root"]),
        (
            "second",
            "1",
            vec![ops.split('_').next().unwrap_or("scx_tt")],
        ),
    ];
    for (case, want_rc, words) in cases {
        let err = out.file(&format!("{case}.err")).unwrap_or_default();
        let msg = err.trim();
        println!(
            "--- {case}: exit code {:?}; stderr: {msg}",
            out.result(&format!("{case}_rc"))
        );
        c.check(
            out.result(&format!("{case}_rc")) == Ok(want_rc),
            format!("{case}: exit code {want_rc}"),
        );
        for w in words {
            c.check(
                msg.to_lowercase().contains(&w.to_lowercase()),
                format!("{case}: the message names {w:?}"),
            );
        }
        if case != "second" {
            c.check(
                out.result(&format!("{case}_state")) == Ok("disabled"),
                format!(
                    "{case}: sched_ext state afterwards {:?}",
                    out.result(&format!("{case}_state"))
                ),
            );
        }
    }
    // The refused second scheduler must not have disturbed the first one.
    c.check(
        !ops.is_empty(),
        format!("the first scx_tt attached (ops {ops:?})"),
    );
    out.check_result(
        c,
        "second_state_while_first_runs",
        "enabled",
        "the first scheduler still enabled",
    );
    out.check_result(c, "first_rc", "0", "the first scx_tt exit code");
    out.check_ms(
        c,
        "first_disable_ms",
        None,
        "disabled after the first one exits",
    );
}

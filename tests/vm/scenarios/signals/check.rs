//! VM test, issue 3 item 6 d): SIGINT gives exit code 0 and sched_ext `disabled` within 2 s;
//! after SIGKILL the kernel detaches scx_tt by itself (within 5 s here) and shell commands
//! still run on every CPU. Run by `make test-vm`.

use crate::harness::{Checks, Vm, VmOutput};

const SIGINT_DISABLE_MAX_MS: i64 = 2000;
const SIGKILL_DISABLE_MAX_MS: i64 = 5000;

#[test]
#[ignore = "boots a VM: make test-vm"]
fn sigint_detaches_cleanly_and_sigkill_leaves_a_working_system() {
    Vm::new("signals").timeout_s(180).check(check);
}

fn check(out: &VmOutput, c: &mut Checks) {
    for (k, v) in &out.results {
        println!("  {k} = {v}");
    }
    let ms = |key: &str| out.number(key).unwrap_or(i64::MAX);
    c.check(
        out.number("sigint_enable_ms").is_ok(),
        format!(
            "scx_tt attached after {:?} ms",
            out.result("sigint_enable_ms")
        ),
    );
    c.check(
        out.result("sigint_rc") == Ok("0"),
        format!("SIGINT: exit code {:?}", out.result("sigint_rc")),
    );
    c.check(
        ms("sigint_disable_ms") <= SIGINT_DISABLE_MAX_MS,
        format!(
            "SIGINT: disabled after {:?} ms (<= {SIGINT_DISABLE_MAX_MS})",
            out.result("sigint_disable_ms")
        ),
    );
    c.check(
        ms("sigint_exit_ms") <= SIGINT_DISABLE_MAX_MS,
        format!(
            "SIGINT: process exited after {:?} ms (<= {SIGINT_DISABLE_MAX_MS})",
            out.result("sigint_exit_ms")
        ),
    );
    c.check(
        out.number("sigkill_enable_ms").is_ok(),
        format!(
            "scx_tt attached again after {:?} ms",
            out.result("sigkill_enable_ms")
        ),
    );
    c.check(
        out.result("sigkill_rc") == Ok("137"),
        format!("SIGKILL: exit code {:?}", out.result("sigkill_rc")),
    );
    c.check(
        ms("sigkill_disable_ms") <= SIGKILL_DISABLE_MAX_MS,
        format!(
            "SIGKILL: disabled after {:?} ms (<= {SIGKILL_DISABLE_MAX_MS})",
            out.result("sigkill_disable_ms")
        ),
    );
    c.check(
        out.result("sigkill_shell") == Ok("alive"),
        "SIGKILL: a shell command still runs".into(),
    );
    let cpus = out.number("cpus_online").unwrap_or(2);
    for cpu in 0..cpus {
        let key = format!("sigkill_cpu{cpu}");
        c.check(
            out.result(&key) == Ok("alive"),
            format!(
                "SIGKILL: a command runs on cpu {cpu}: {:?}",
                out.result(&key)
            ),
        );
    }
}

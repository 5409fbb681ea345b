//! VM test, issue 3 item 6 d): SIGINT gives exit code 0 and sched_ext `disabled` within 2 s;
//! after SIGKILL the kernel detaches scx_tt by itself (within 5 s here) and shell commands
//! still run on every CPU. Run by `make test-vm`. The exit codes, the states and that both
//! waits ended (within the guest's 10 s) are exact; the 2 s and 5 s are timing bounds: under
//! TCG the same detach took 0.2 s here and 0.9 s (exit 2.8 s) on a slower CI host.

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
    for (sig, run, rc, max_ms) in [
        ("SIGINT", "sigint", "0", SIGINT_DISABLE_MAX_MS),
        ("SIGKILL", "sigkill", "137", SIGKILL_DISABLE_MAX_MS),
    ] {
        let key = |what: &str| format!("{run}_{what}");
        out.check_ms(
            c,
            &key("enable_ms"),
            None,
            &format!("{sig}: scx_tt attached"),
        );
        out.check_result(c, &key("rc"), rc, &format!("{sig}: exit code"));
        out.check_ms_timing(c, &key("disable_ms"), max_ms, &format!("{sig}: disabled"));
    }
    out.check_ms_timing(
        c,
        "sigint_exit_ms",
        SIGINT_DISABLE_MAX_MS,
        "SIGINT: process exited",
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

//! VM test of the planner on two threads (`scx_tt --planner-threads 2 --planner-shard-min 2`,
//! docs/planner.md "The step on several threads"): `--planner dvfs` (closed loop) on
//! planner_threads.json at `-smp 4` (managed CPUs 1 and 2; housekeeping 0, the planner thread's,
//! and 3, its helper's), so every slot's step is cut in two shards of one CPU each; two firm
//! admissions over the socket, one per CPU. Judged by:
//! - the replies: both firm jobs accepted, each on its task's CPU (1 and 2);
//! - the run's own report: the helper stepped shards (at least one; printed), so the decisions
//!   the kernel enforced came from the pooled step;
//! - conformance: `scx_tt simulate --replay` of the planner log (one thread) names the kernel's
//!   owner in every slot (the pooled step decided as one thread would, observations and
//!   admissions included);
//! - the witness (the kernel's sched_switch trace) and the summary: nothing foreign on the
//!   managed CPUs, no be task over a waiting owner; scx_tt exits 0 and sched_ext is disabled;
//! - a second start with `--planner-threads 3` (no third housekeeping CPU) is refused with an
//!   error naming the flag, the value and the CPUs, and leaves sched_ext disabled.

use crate::harness::{Checks, Vm, VmOutput};
use crate::planner_checks as pc;

const RUN: &str = "threads";

/// The replies and the refused start; `Some(())` when the run can be judged.
fn protocol(c: &mut Checks, out: &VmOutput) -> Option<()> {
    for (name, cpu) in [("firm_a", 1), ("firm_c", 2)] {
        let reply = pc::reply(out, name);
        c.check(
            out.rc(name) == "0" && reply["accepted"] == true && reply["cpu"] == cpu,
            format!("{name}: accepted on its task's CPU {cpu}"),
        );
    }
    let err = out.file("three.err").unwrap_or_default();
    c.check(
        out.result("three_rc").is_ok_and(|rc| rc != "0")
            && out.result("three_state") == Ok("disabled")
            && ["--planner-threads 3", "housekeeping CPU", "(CPU 0)", "[3]"]
                .iter()
                .all(|p| err.contains(p)),
        format!(
            "--planner-threads 3 refused (rc {:?}, sched_ext {:?}), naming the flag, the rule and \
             the CPUs: {err:?}",
            out.result("three_rc"),
            out.result("three_state")
        ),
    );
    let text = out.file(&format!("{RUN}.out")).unwrap_or_default();
    let lent = text
        .lines()
        .find(|l| l.starts_with("planner threads: 2 "))
        .and_then(|l| l.split("helpers stepped ").nth(1))
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok());
    println!("--- the helper stepped {lent:?} shards");
    c.check(
        lent.is_some_and(|n| n >= 1),
        format!("the run reports its helper thread stepped shards: {lent:?} (>= 1)"),
    );
    Some(())
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn the_planner_on_two_threads_decides_what_one_thread_replays() {
    Vm::new("planner_threads")
        .smp(4)
        .timeout_s(400)
        .check_control(
            RUN,
            (
                "planner_threads.json under --planner dvfs --planner-threads 2",
                "no run to judge",
            ),
            |c, out| {
                let key = protocol(c, out);
                pc::conformance(
                    c,
                    out,
                    &pc::plan_path("planner_threads", "planner_threads.json"),
                    RUN,
                    300,
                );
                key
            },
            |c, _out, s, trace, ()| {
                pc::check_summary(c, s, None, &[]);
                c.check(
                    trace.len() >= 600,
                    format!(
                        "{} slot records on the two managed CPUs (>= 600)",
                        trace.len()
                    ),
                );
            },
        );
}

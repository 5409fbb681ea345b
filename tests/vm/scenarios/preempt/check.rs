//! VM test, issue 11 defect 2: after a higher scheduling class (here an RT task; in the field
//! the stopper thread `migration/N`) preempted a task on a managed CPU, the CPU goes back to the
//! slot's owner. `preempt.json` (this folder): `spin` owns every other 10 ms slot of CPU 1 and
//! is always runnable, `filler` (be) runs in the others; `tt_timer_baseline --spin-us` on CPU 1
//! (SCHED_FIFO 50) wakes every 3.3 ms and spins 1 ms, so RT runs span slot boundaries at
//! rotating phases. Before the fix, the be task the RT task had preempted kept the head of the
//! CPU's local queue with its slice and ran on into `spin`'s slot (`be → RT → be` with the owner
//! runnable; 536 ms of `be_while_tt_ready_ns` in 6 s, `spin` delivered 43 %).
//!
//! Judged by the witness (tests/vm/witness/, the kernel's sched_switch trace): no be start
//! while the owner waited (exact), nothing foreign on CPU 1 but kthreads and the declared RT
//! task (exact), records agree with the witness and spin ran in its own slots (timing); and by
//! scx_tt's own `be_while_tt_ready_ns` (exact 0).

use crate::harness::{Checks, Vm, VmOutput};
use crate::witness;

fn check(out: &VmOutput, c: &mut Checks) {
    out.check_clean_exit(c, "preempt");
    let rt_rc = out.result("rt_rc");
    c.check(
        rt_rc == Ok("0"),
        format!("the RT task ran and exited 0 ({rt_rc:?})"),
    );
    let rt: Vec<u32> = out
        .number("rt_pid")
        .map(|p| vec![p as u32])
        .unwrap_or_default();
    witness::check(
        c,
        out,
        "preempt",
        &witness::Bounds {
            allowed: rt,
            ..witness::Bounds::default()
        },
    );
    match out.summary("preempt.json") {
        Ok(s) => {
            for cpu in s.cpus.iter().filter(|x| x.managed) {
                c.check(
                    cpu.be_while_tt_ready_ns == 0,
                    format!(
                        "scx_tt's own count: CPU {}: be_while_tt_ready_ns {}",
                        cpu.cpu, cpu.be_while_tt_ready_ns
                    ),
                );
            }
        }
        Err(e) => c.check(false, e),
    }
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn after_an_rt_preemption_the_cpu_goes_back_to_the_owner() {
    Vm::new("preempt")
        .smp(2)
        .timeout_s(240)
        .arg("duration_s", 6)
        .check(check);
}

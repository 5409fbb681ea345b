//! The witness: judges a run by the kernel's own scheduling events, not by scx_tt's records.
//!
//! The guest records `sched_switch`, `sched_wakeup(_new)`, `sched_process_fork` and `sched_migrate_task` on every CPU
//! with ftrace (`witness_start` / `witness_stop NAME` in tests/vm/guest/lib.sh), time-stamped
//! with the `mono` trace clock, which is CLOCK_MONOTONIC: the clock of scx_tt's `t0_ns`
//! (summary JSON and `--trace` header). Here the events become per-CPU run segments, aligned to
//! the slot grid `t0_ns + k * slot`, and are checked against the plan:
//!
//! - **owners only in their slots**: a `tt` task's run time on a managed CPU in slots it does
//!   not own, and on any other CPU (housekeeping CPUs never run a plan task once slot 0 began);
//! - **nothing outside the plan on managed CPUs** but per-CPU kernel threads of that CPU (by
//!   name, `name/N` or `name/N:...`), the idle task, scx_tt's own threads (the loader arms a
//!   timer there) and the pids a scenario declares (an RT task it placed there on purpose);
//! - **be work never starts while the owner is runnable**: a switch to a `be` thread on a
//!   managed CPU in a slot whose owner had been runnable (woken, or preempted while runnable)
//!   and not running for at least [`RACE_NS`] before;
//! - **records agree**: each `tt` record's `ran_ns` against the owner's run time in that slot
//!   on that CPU from the witness, within [`agreement_tol_ns`].
//!
//! Which slot a CPU's table gives to whom is taken from scx_tt's records (`kind` `tt`, `task`):
//! the owner checks of each scenario compare those owners with the plan's tables; the witness
//! judges what ran against them. Slots without a record (a tick more than a slot late) are not
//! judged and are counted. docs/vm-harness.md ("The witness") has the tolerances.

use crate::harness::{Checks, Result, Summary, VmOutput};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A switch to a be thread counts as "while the owner was runnable" only when the owner had
/// been waiting this long: an owner woken on another CPU becomes visible to the managed CPU's
/// dispatch only after its enqueue, and the dispatch → switch path itself takes time (BPF,
/// under TCG tens of µs; src/bpf/tt_sched.bpf.c G names the race).
pub const RACE_NS: u64 = 200_000;

/// How far a record's `ran_ns` may differ from the witness's owner time in the slot: scx_tt
/// charges from ops.running to ops.stopping, the kernel's trace point fires between those
/// two, and the trace clock has µs resolution; per switch in the slot a few µs of emulated
/// kernel work separate them. 200 µs, or 2 % of the slot when that is more.
pub fn agreement_tol_ns(slot_ns: u64) -> u64 {
    (slot_ns / 50).max(200_000)
}

/// Added to [`agreement_tol_ns`] per context switch the witness saw on the CPU in the slot:
/// scx_tt charges the time from one task's ops.stopping to the next one's ops.running to no
/// one, the witness to the task switched out; under TCG that is 5-10 us per switch (measured:
/// a slot with ~150 fork/exec ping-pong switches of `semantics`' sleeper, 1.12 ms, 7.5 us each).
pub const PER_SWITCH_TOL_NS: u64 = 20_000;

/// How long after one of the scheduler's BPF timers fired on a CPU (the kernel's
/// `hrtimer_expire_entry`) an owner whose slot is over may still run: the callback itself (the
/// `tick_ns` column, 40-200 us under TCG), the return from the interrupt and `__schedule`.
/// An ending owner's run past its boundary is the timer's lateness (the platform's) up to the
/// first timer at or after `boundary - guard`, plus this; beyond it, the scheduler's.
pub const KICK_NS: u64 = 500_000;

mod analyse;
mod frame;
mod parse;
mod report;
mod taken;
#[cfg(test)]
mod tests;

pub use frame::*;
pub use parse::*;
pub use report::*;
// the benches that share this module do not use every part of it
#[allow(unused_imports)]
pub use taken::*;

//! VM test, issue 3 item 3: what becomes of a tt task's slots when it blocks mid-slot, exits,
//! or cannot be found. `semantics.json` (this folder) on managed CPU 1 (`-smp 2`):
//!   - `sleeper` (slots 0-2 of each 10-slot frame) spins a while (several ms under TCG), sleeps
//!     4 ms, over and over: be work must fill most of what it leaves, and must never be
//!     *started* while it waits runnable (`be_while_tt_ready_ns == 0`, exact);
//!   - `quitter` (slots 3-5) is a busy loop that `timeout` kills after 3 s: the summary reports
//!     it `exited`, and from 1 s after that on its slots run no thread of it and go to be work;
//!   - `ghost` (slots 6-7) selects a thread name nothing has: scx_tt warns that its slots go to be
//!     work, reports it `not_found`, and its slots go to be work from the start.
//!
//! Asserted on the per-slot trace (`ran_ns`: the owner's time in the slot, `stolen_ns`: everything
//! else, here the be task `filler` and a little kthread time; docs/trace-format.md) and the
//! summary. The shares of slots that be work filled are timing bounds (a late tick or a busy
//! housekeeping CPU moves them); the rest is exact. Run by `make test-vm`.

use crate::harness::{Checks, Vm, VmOutput};
use crate::witness;
use scx_tt::trace::SlotRecord;

const DURATION_S: u64 = 8;
const SLOT_NS: u64 = 10_000_000;
/// quitter is killed 3 s after it starts; its slots are judged from 4 s on.
const QUITTER_GONE_SLOT: u64 = 400;
/// A slot counts as "taken by be work" when others ran at least half of it.
const TAKEN_NS: u64 = SLOT_NS / 2;
/// Share of an absent task's slots that be work must take (timing bound: a tick later than the
/// guard band or kthread bursts can eat a slot; measured figures are printed).
const MIN_TAKEN_PCT: f64 = 90.0;
/// Share of the time sleeper leaves in its own slots (slot time minus its run time) that be work
/// must fill. Measured 65-80 %; the rest is the guard band at the end of sleeper's run and the
/// time the accounting charges to no one, from ops.stopping to the next ops.running (emulated
/// scheduler and BPF work; sleeper forks a busybox `usleep` every cycle, so each cycle has
/// several switches). A sched_switch trace showed CPU 1 practically never idle after a block
/// (docs/vm-harness.md). A scheduler that kept be work out of a tt slot would fill 0 %.
const MIN_SLEEPER_GAP_FILLED_PCT: f64 = 50.0;

fn pct(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// The trace records of `task`'s slots from `from_slot` on.
fn slots_of<'a>(trace: &'a [SlotRecord], task: &str, from_slot: u64) -> Vec<&'a SlotRecord> {
    trace
        .iter()
        .filter(|r| r.task.as_deref() == Some(task) && r.slot >= from_slot)
        .collect()
}

/// Checks that `task` never ran in its slots (exact) and that be work took them (timing). A
/// slot whose tick came more than half a slot late is not judged for the be share: the CPU
/// idles from the guard band of the previous run until the tick says the slot began (such
/// slots are counted and printed).
fn check_absent(c: &mut Checks, trace: &[SlotRecord], task: &str, from_slot: u64) {
    let slots = slots_of(trace, task, from_slot);
    let ran: u64 = slots.iter().map(|r| r.ran_ns.unwrap_or(0)).sum();
    let judged: Vec<_> = slots
        .iter()
        .filter(|r| r.late_ns.unwrap_or(0) <= TAKEN_NS as i64)
        .collect();
    let taken = judged
        .iter()
        .filter(|r| r.stolen_ns.unwrap_or(0) >= TAKEN_NS)
        .count() as u64;
    c.check(
        !slots.is_empty() && ran == 0,
        format!(
            "{task}: ran {ran} ns in its {} slots from slot {from_slot} on (want 0)",
            slots.len()
        ),
    );
    c.check_timing(
        !judged.is_empty() && pct(taken, judged.len() as u64) >= MIN_TAKEN_PCT,
        format!(
            "{task}: be work took {taken} of its {} slots from slot {from_slot} on whose tick came \
             in time ({:.1} %, >= {MIN_TAKEN_PCT} %; {} slots with a tick later than half a slot not judged)",
            judged.len(),
            pct(taken, judged.len() as u64),
            slots.len() - judged.len()
        ),
    );
}

fn check(out: &VmOutput, c: &mut Checks) {
    out.print_file("semantics.out");
    let err = out.file("semantics.err").unwrap_or_default();
    print!("{err}");
    out.check_clean_exit(c, "semantics");
    let bounds = witness::Bounds::default();
    witness::check_files(c, out, "semantics", "summary.json", "trace.jsonl", &bounds);
    c.check(
        err.contains("task ghost") && err.contains("its slots go to be work"),
        "scx_tt warned that ghost was not found and its slots go to be work".to_string(),
    );

    let s = out
        .summary("summary.json")
        .unwrap_or_else(|e| panic!("{e}"));
    s.print("semantics.json: sleeper blocks, quitter exits, ghost is missing");
    let state_of = |name: &str| {
        s.tasks
            .iter()
            .find(|t| t.name == name)
            .map_or("absent".to_string(), |t| t.state.clone())
    };
    for (task, want) in [
        ("sleeper", "running"),
        ("quitter", "exited"),
        ("ghost", "not_found"),
        ("filler", "running"),
    ] {
        let got = state_of(task);
        c.check(got == want, format!("{task}: reported {got} (want {want})"));
    }
    s.check_managed_clean(c);

    let trace: Vec<SlotRecord> = out.records("trace.jsonl").unwrap_or_else(|e| panic!("{e}"));
    println!("--- trace: {} records", trace.len());

    // sleeper blocks mid-slot: be work fills the gaps, and sleeper still runs in its slots.
    let sleeper = slots_of(&trace, "sleeper", 0);
    let own: u64 = sleeper.iter().map(|r| r.ran_ns.unwrap_or(0)).sum();
    let others: u64 = sleeper.iter().map(|r| r.stolen_ns.unwrap_or(0)).sum();
    let total = sleeper.len() as u64 * SLOT_NS;
    let gap = total.saturating_sub(own);
    println!(
        "--- sleeper's {} slots: sleeper ran {:.1} %, others (be) {:.1} %, so be filled {:.1} % of what sleeper left",
        sleeper.len(),
        pct(own, total),
        pct(others, total),
        pct(others, gap)
    );
    c.check(
        own > 0,
        format!("sleeper ran {own} ns in its slots (want > 0)"),
    );
    c.check_timing(
        gap > 0 && pct(others, gap) >= MIN_SLEEPER_GAP_FILLED_PCT,
        format!(
            "be work filled {:.1} % of the time sleeper left in its slots (>= {MIN_SLEEPER_GAP_FILLED_PCT} %)",
            pct(others, gap)
        ),
    );

    // quitter ran before it was killed, then its slots go to be work.
    let before: u64 = slots_of(&trace, "quitter", 0)
        .iter()
        .filter(|r| r.slot < 250)
        .map(|r| r.ran_ns.unwrap_or(0))
        .sum();
    c.check(
        before > 0,
        format!("quitter ran {before} ns in its slots before it was killed (want > 0)"),
    );
    check_absent(c, &trace, "quitter", QUITTER_GONE_SLOT);
    check_absent(c, &trace, "ghost", 0);
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn blocked_exited_and_missing_tasks_leave_their_slots_to_be_work() {
    Vm::new("semantics")
        .smp(2)
        .timeout_s(240)
        .arg("duration_s", DURATION_S)
        .check(check);
}

//! VM test of an adaptive task's reservation across a restart of the BPF scheduler (issue 17's
//! leftover; docs/adaptive.md "Restarts"). adaptive_restart.json: managed CPU 1, 2 ms slots;
//! tt-a (busy, 6 slots every 20) and `legacy`, class adaptive (jobs every 40 ms, 4-8 ms of CPU,
//! blocking between them). `--planner bss`; at 7 s CPU 2 (not in the plan) goes offline and
//! the kernel asks for a restart.
//!
//! Checked:
//!   - the run ends cleanly (exit 0, sched_ext disabled) after one restart (`attached again`);
//!   - legacy held a reservation before the restart (its `BPF class tt from T ns` line with T
//!     before the witness's pause mark), and the run kept it across the restart: its `restart:
//!     reservation W/P slots ... kept, class tt again` line, and no second grant (the planner
//!     still holds the first one; a run that forgot it would ask again) (exact);
//!   - by the witness (the kernel's switch trace) from 1 s after the restart to the run's end,
//!     while BPF has legacy in class tt (its `BPF class tt/be from T ns` lines: a resize puts it
//!     in class be until the new reservation starts): legacy ran on CPU 1 in the slots the
//!     records give it, at most [`MAX_OUTSIDE_SHARE`] of its time in other slots (timing). A
//!     restarted scheduler loads every adaptive task as be: without the class given back,
//!     legacy may run in the slack (be work in any free slot) until its next reservation
//!     change; this share does not tell that apart reliably (with the class left be on
//!     purpose: 13.0 % in one boot, 0.6 % in another, legacy's jobs mostly falling in its own
//!     slots), the exact checks above do the run's side.

use crate::adaptive::{pids_of, run_by_owner, tt_spans};
use crate::harness::{Checks, Vm, VmOutput};
use crate::witness;

const RUN: &str = "adaptive_restart";
/// The adaptive test's bound for a reserved adaptive task (a hard reservation; measured
/// there 0.9 %): its wakeups that land in other slots wait, except for edge effects of the
/// guard band and late ticks under TCG.
const MAX_OUTSIDE_SHARE: f64 = 0.05;

#[test]
#[ignore = "boots a VM: make test-vm"]
fn an_adaptive_task_keeps_its_reservation_and_class_across_a_restart() {
    Vm::new(RUN)
        .smp(3)
        .timeout_s(300)
        .arg("duration_s", 14)
        .check(check);
}

fn check(out: &VmOutput, c: &mut Checks) {
    for (k, v) in &out.results {
        println!("  {k} = {v}");
    }
    out.check_clean_exit(c, RUN);
    let text = out.file(&format!("{RUN}.out")).unwrap_or_default();
    let err = out.file(&format!("{RUN}.err")).unwrap_or_default();
    let restarts = err.matches("attached again").count();
    c.check(
        restarts == 1 && out.result("offline_rc") == Ok("0"),
        format!("one restart on the hotplug ({restarts} `attached again` lines)"),
    );
    let events = match out
        .file(&format!("{RUN}.witness"))
        .and_then(|t| witness::parse(&t))
    {
        Ok(e) => e,
        Err(e) => return c.check(false, format!("witness: {e}")),
    };
    let mark = |m: &str| {
        events.iter().find_map(|e| match &e.kind {
            witness::Kind::Mark(k) if k == m => Some(e.ts_ns),
            _ => None,
        })
    };
    let (Some(pause), Some(resume)) = (mark("pause"), mark("resume")) else {
        return c.check(
            false,
            "the witness has the restart's pause and resume marks".into(),
        );
    };
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("scx_tt: adaptive legacy: "))
        .filter(|l| !l.contains(" ns: "))
        .collect();
    for l in &lines {
        println!("  {l}");
    }
    let spans = tt_spans(&text, "legacy", u64::MAX);
    let before = spans.first().is_some_and(|&(from, _)| from < pause);
    let grants = lines
        .iter()
        .filter(|l| l.starts_with("scx_tt: adaptive legacy: reservation "))
        .count();
    let kept = lines
        .iter()
        .any(|l| l.contains("restart: reservation ") && l.ends_with("kept, class tt again"));
    c.check(
        before && grants == 1 && kept,
        format!(
            "legacy reserved before the restart ({before}), its reservation kept and class tt \
             given back after it ({kept}), granted once ({grants} grants)"
        ),
    );

    let summary = match out.summary(&format!("{RUN}.json")) {
        Ok(s) => s,
        Err(e) => return c.check(false, format!("summary: {e}")),
    };
    let f = match witness::frame(
        out,
        RUN,
        &format!("{RUN}.json"),
        &format!("{RUN}.trace.jsonl"),
        &[],
    ) {
        Ok(f) => f,
        Err(e) => return c.check(false, format!("the witness's frame: {e}")),
    };
    let end = summary.t0_ns + summary.duration_ns;
    let segs = witness::segments(&events, end);
    let legacy = pids_of(&f, &events, "legacy");
    let from = resume + 1_000_000_000;
    // Judged while BPF has legacy in class tt: a resize puts it in class be until its new
    // reservation starts, and be work runs in any free slot (a CI run under load resized it twice
    // in the window, 0.3 and 0.5 s in class be, and counted that as 10.7 % outside).
    let judged: Vec<(u64, u64)> = spans
        .iter()
        .map(|&(a, b)| (a.max(from), b.min(end)))
        .filter(|&(a, b)| a < b)
        .collect();
    let (inside, outside, unknown) = run_by_owner(&f, &segs, &legacy, (1, "legacy"), &judged);
    let share = outside as f64 / (inside + outside).max(1) as f64;
    println!(
        "  legacy after the restart ({:.1} s from 1 s after it, {:.1} s of it in class tt): {:.1} \
         ms in its slots, {:.1} ms in others ({:.2} %), {:.1} ms in unrecorded slots",
        end.saturating_sub(from) as f64 / 1e9,
        judged.iter().map(|&(a, b)| b - a).sum::<u64>() as f64 / 1e9,
        inside as f64 / 1e6,
        outside as f64 / 1e6,
        share * 100.0,
        unknown as f64 / 1e6
    );
    c.check(
        inside >= 100_000_000,
        format!(
            "legacy ran after the restart ({:.1} ms in its slots)",
            inside as f64 / 1e6
        ),
    );
    c.check_timing(
        share <= MAX_OUTSIDE_SHARE,
        format!(
            "witness: legacy after the restart ran {:.2} % of its time outside its slots (bound \
             {:.0} %): class tt again",
            share * 100.0,
            MAX_OUTSIDE_SHARE * 100.0
        ),
    );
}

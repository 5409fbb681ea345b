//! VM test, issue 11 items 4 and 5: the start-up of a run (docs/run-output.md, "Start-up").
//! `startup.json` (this folder) on managed CPU 1 (`-smp 2`, 10 ms slots, single-slot runs): two
//! spawned tt tasks `app-a`, `app-b` that start like an application with a start-up script (12
//! helper processes that each wait 20 ms, then the exec of stress-ng, which loads its shared
//! libraries and forks its busy worker), and a be busy loop. The guest runs it twice:
//!   - `old`: `--settle-ms 0 --guard-us 500`, the start of scx_tt before items 4 and 5: the
//!     tasks exec in their slots from slot 0, the guard band is the flag's;
//!   - `startup`: the defaults: the tasks run under the kernel's scheduler until they have
//!     settled, then the scheduler attaches; the guard band is calibrated.
//!
//! Item 5, from the `--trace` records (`ran_ns` of the tasks' `tt` records): the mean owner
//! time per owned slot in the first 50 slots after t0 must be at least 85 % of the mean from
//! slot 200 on (the steady state). Timing check: host noise moves single slots (a tick a few ms
//! late). Measured: `old` 46.7-57.4 % (each helper's wait ends outside the task's slot, so the
//! start-up blocks in the tasks' slots for 100+ slots), `startup` 96.7-108.7 %. The same
//! measure on `old` must stay below the bound (the check sees a slow start). scx_tt says both
//! tasks settled before slot 0, and the stress-ng worker forked in the settle period is one of
//! the task's threads at the start (timing checks too: how long the start-up takes under TCG
//! depends on the host; it took 0.62-0.94 s of the 2 s bound).
//!
//! Item 4, from the summary JSON's `guard` and scx_tt's stderr (exact): `startup`'s guard band
//! is `calibrated`, its bound 5-10 % of the slot (500..1000 us), the choice inside it and at or
//! above the measured p99 unless capped (then the cap, with the warning); `old`'s is the flag's
//! 500 us, not calibrated. The calibrated p99 is printed next to the run's own BPF tick
//! lateness (measured: calibrated p99 3.3-4.5 ms, capped at 1 ms; then 1.7-2.0 % of the
//! guard-band events came after their boundary, against 8.8-15 % with `old`'s 500 us). Run by
//! `make test-vm`.

use crate::harness::{ms, us, Checks, Summary, Vm, VmOutput};
use scx_tt::trace::{SlotKind, SlotRecord};

const DURATION_S: u64 = 6;
const SLOT_US: u64 = 10_000;
/// The spawned tt tasks of startup.json.
const TASKS: [&str; 2] = ["app-a", "app-b"];
/// The slots after t0 that item 5 judges.
const FIRST_SLOTS: u64 = 50;
/// The steady state: records from this slot on (1 s after t0; `old`'s start-up ends before).
const STEADY_FROM: u64 = 200;
/// Bound: mean owner time in the first slots, percent of the steady state's mean.
const MIN_FIRST_PCT: f64 = 85.0;
/// The calibration's grid points per CPU (src/sched/calibrate.rs POINTS).
const CALIBRATION_POINTS: u64 = 250;

/// Owner time of `task` per owned slot: (mean over its records before FIRST_SLOTS, their
/// count, mean from STEADY_FROM on, their count), ns.
fn owner_time(trace: &[SlotRecord], task: &str) -> (f64, usize, f64, usize) {
    let ran = |keep: &dyn Fn(u64) -> bool| -> Vec<u64> {
        trace
            .iter()
            .filter(|r| r.kind == SlotKind::Tt && r.task.as_deref() == Some(task))
            .filter(|r| keep(r.slot))
            .map(|r| r.ran_ns.unwrap_or(0))
            .collect()
    };
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
    let first = ran(&|s| s < FIRST_SLOTS);
    let steady = ran(&|s| s >= STEADY_FROM);
    (mean(&first), first.len(), mean(&steady), steady.len())
}

/// Item 5 figures of one run: per task, the first slots' owner time as a percent of the
/// steady state's (printed).
fn start_figures(run: &str, trace: &[SlotRecord]) -> Vec<(&'static str, f64)> {
    TASKS
        .iter()
        .map(|&task| {
            let (first, n_first, steady, n_steady) = owner_time(trace, task);
            let pct = 100.0 * first / steady.max(1.0);
            let firsts: Vec<String> = trace
                .iter()
                .filter(|r| r.kind == SlotKind::Tt && r.task.as_deref() == Some(task))
                .take(12)
                .map(|r| format!("{}:{:.1}", r.slot, ms(r.ran_ns.unwrap_or(0))))
                .collect();
            println!(
                "--- {run}: {task} ran {:.2} ms per owned slot in slots 0..{FIRST_SLOTS} ({n_first} \
                 slots), {:.2} ms from slot {STEADY_FROM} on ({n_steady} slots): {pct:.1} %; \
                 first owned slots (slot:ms) {}",
                first / 1e6,
                steady / 1e6,
                firsts.join(" ")
            );
            (task, pct)
        })
        .collect()
}

/// The run's summary, stderr and trace; a missing file is a failed check.
fn run_files(
    out: &VmOutput,
    c: &mut Checks,
    run: &str,
) -> Option<(Summary, String, Vec<SlotRecord>)> {
    out.check_clean_exit(c, run);
    let err = out.file(&format!("{run}.err")).unwrap_or_default();
    println!("--- {run}: scx_tt's stderr");
    print!("{err}");
    let summary = out.summary(&format!("{run}.json"));
    let trace = out.records::<SlotRecord>(&format!("{run}.trace.jsonl"));
    match (summary, trace) {
        (Ok(s), Ok(t)) => {
            s.print(run);
            // be work started over a runnable owner (`be_while_tt_ready_ns`) is issue 11 item
            // 2, seen here too now and then (19 ms in one of eight runs); printed above, not
            // judged here
            for cpu in s.managed() {
                cpu.check_foreign(c, 0, "");
            }
            Some((s, err, t))
        }
        (s, t) => {
            c.check(
                false,
                format!("{run}: summary {:?} / trace {:?}", s.err(), t.err()),
            );
            None
        }
    }
}

/// Item 4 on the default run: the calibrated guard band, its bound, the choice, the messages.
fn check_calibrated(c: &mut Checks, s: &Summary, err: &str) {
    let Some(g) = &s.guard else {
        c.check(
            false,
            "startup: the summary has no guard object".to_string(),
        );
        return;
    };
    c.check(
        g.source == "calibrated",
        format!("startup: guard source {} (want calibrated)", g.source),
    );
    let (Some(b), Some(cal)) = (&g.bound_us, &g.calibration) else {
        c.check(
            false,
            format!("startup: guard without bound or calibration: {g:?}"),
        );
        return;
    };
    c.check(
        (b.min, b.max) == (SLOT_US / 20, SLOT_US / 10),
        format!(
            "startup: guard bound {}..{} us (want 5-10 % of the slot: {}..{})",
            b.min,
            b.max,
            SLOT_US / 20,
            SLOT_US / 10
        ),
    );
    let p99 = cal.late_ns.p99.max(0) as u64;
    c.check(
        b.min <= g.us && g.us <= b.max,
        format!(
            "startup: guard band {} us inside {}..{} us",
            g.us, b.min, b.max
        ),
    );
    c.check(
        if g.capped {
            g.us == b.max && p99 > g.us * 1000 && err.contains("exceeds the guard band's cap")
        } else {
            g.us * 1000 >= p99
        },
        format!(
            "startup: guard band {} us against the calibrated p99 {:.0} us: {}",
            g.us,
            us(p99 as i64),
            if g.capped {
                "capped (the cap, and the warning on stderr)"
            } else {
                "not capped (>= the p99)"
            }
        ),
    );
    c.check(
        cal.cpus == [1] && cal.samples > 0 && cal.samples <= CALIBRATION_POINTS,
        format!(
            "startup: calibration on CPUs {:?}, {} wake-ups (1..={CALIBRATION_POINTS}), {} ms, \
             SCHED_FIFO {}",
            cal.cpus, cal.samples, cal.duration_ms, cal.fifo
        ),
    );
    let line = format!(
        "scx_tt: guard band {} us (calibrated: timer lateness p99",
        g.us
    );
    c.check(
        err.contains(&line),
        format!("startup: stderr says what it chose ({line} ...)"),
    );
    for cpu in s.managed() {
        println!(
            "--- startup: calibrated timer lateness p50 {:.0} us p99 {:.0} us max {:.0} us; the \
             run's BPF slot tick on cpu {}: p50 {:.0} us p99 {:.0} us max {:.0} us; {} of {} \
             guard-band events after their boundary ({:.1} %)",
            us(cal.late_ns.p50),
            us(cal.late_ns.p99),
            us(cal.late_ns.max),
            cpu.cpu,
            us(cpu.late_ns.p50),
            us(cpu.late_ns.p99),
            us(cpu.late_ns.max),
            cpu.guard_late,
            cpu.guard_events,
            100.0 * cpu.guard_late as f64 / cpu.guard_events.max(1) as f64
        );
    }
}

fn check(out: &VmOutput, c: &mut Checks) {
    // `old`: the tasks exec in their slots; the flag's guard band
    if let Some((s, err, trace)) = run_files(out, c, "old") {
        let g = s.guard.as_ref();
        c.check(
            g.is_some_and(|g| g.source == "flag" && g.us == 500 && g.calibration.is_none())
                && !err.contains("calibrated"),
            format!("old: guard {g:?} (want the flag's 500 us, no calibration)"),
        );
        for (task, pct) in start_figures("old", &trace) {
            c.check_timing(
                pct < MIN_FIRST_PCT,
                format!(
                    "old (--settle-ms 0): {task}'s first {FIRST_SLOTS} slots {pct:.1} % of its \
                     steady owner time (below {MIN_FIRST_PCT} %: the check sees the slow start)"
                ),
            );
        }
    }
    // `startup`: the settle period and the calibrated guard band, judged by the witness too
    crate::witness::check(c, out, "startup", &crate::witness::Bounds::default());
    if let Some((s, err, trace)) = run_files(out, c, "startup") {
        for task in TASKS {
            c.check_timing(
                err.contains(&format!("{task} settled after")),
                format!("startup: scx_tt says {task} settled before slot 0"),
            );
            let tids = s
                .tasks
                .iter()
                .find(|t| t.name == task)
                .map(|t| t.tids.clone());
            c.check_timing(
                tids.as_ref().is_some_and(|t| t.len() >= 2),
                format!(
                    "startup: {task}'s threads at the start {tids:?} (the shell and the stress-ng \
                     worker it forked before the attach)"
                ),
            );
        }
        for (task, pct) in start_figures("startup", &trace) {
            c.check_timing(
                pct >= MIN_FIRST_PCT,
                format!(
                    "startup: {task}'s first {FIRST_SLOTS} slots {pct:.1} % of its steady owner \
                     time (>= {MIN_FIRST_PCT} %)"
                ),
            );
        }
        check_calibrated(c, &s, &err);
    }
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn spawned_tasks_start_before_slot_0_and_the_guard_band_is_calibrated() {
    Vm::new("startup")
        .smp(2)
        .timeout_s(240)
        .arg("duration_s", DURATION_S)
        .check(check);
}

//! VM test, issue 17: adaptive tasks in planner mode (docs/adaptive.md, docs/vm-harness.md).
//! `adaptive.json` (this folder) on managed CPU 1 (`-smp 2`), 2 ms slots, frame 120: the tt
//! busy loop tt-a (6 slots every 20), `legacy`, class adaptive (spread 0.3, minimum bandwidth
//! 0.3: above its largest job, which the supervisor's proportional compression keeps), a tt_jobs
//! program that blocks between jobs released every 40 ms (250 jobs, 4-8 ms each), then every
//! 30 ms (3-6 ms), and `heavy`, class adaptive after it, tt_jobs from 6 s on (once legacy holds
//! its reservation) with 9 ms every 20 ms (45 %), whose request does not fit next to tt-a and
//! legacy's minimum: none announces its period. scx_tt traces their wakeups in BPF, infers their
//! periods every second and grants, resizes or removes their reservations. Checked, every
//! figure printed:
//! - the inferred period: every detection from `SETTLE_NS` after the first 40 ms release to the
//!   last one is within 1 % of 40 ms; after the change, the first detection within 1 % of 30 ms
//!   comes at most `FOLLOW_NS` after the first 30 ms release, and every later one is within 1 %;
//! - the tracer lost no wakeup and handed over as many as the program's jobs (±the wakeups of
//!   its start and of the shell between the two programs); its cost per event is printed;
//! - the reservation (the run's log lines, the summary): legacy gets one; the one in force at
//!   the last 40 ms release is 20 slots (40 ms) with a WCET in `WCET_BOUNDS_40`, the one at the
//!   end 15 slots (30 ms) with a WCET in `WCET_BOUNDS_30` (the upper bounds are timing: the
//!   controller sizes them from measured consumption, see `check_wcet`), first in force at most
//!   `FOLLOW_RES_NS` after the first 30 ms release; the summary says reserved or compressed
//!   (heavy's request makes the supervisor compress both, down to legacy's minimum at most),
//!   30 ms, that reservation; heavy's request does not fit next to tt-a and legacy: the
//!   supervisor's "compressed" line;
//! - the program's own deadline-miss ratio (a job that finished after its next release, by its
//!   log) while it holds a settled reservation is at most `MAX_RESERVED_MISS_PCT`; the ratio
//!   from 1 s after slot 0 (learning included: as be in the slack shared with heavy) is printed;
//! - the witness (the kernel's sched_switch trace): tt-a keeps its slots and nothing runs where
//!   it must not (adaptive tasks judged as be), tt-a ran at least `MIN_TT_SHARE` of its recorded
//!   slots, and legacy, while BPF has it as class tt (the run's `BPF class` lines), ran at most
//!   `MAX_OUTSIDE_SHARE` of its time outside the slots the planner gave it (a hard
//!   reservation, src/bpf/tt_sched.bpf.c F).

use crate::completion::{parse_log, JobLine};
use crate::harness::{Checks, Vm, VmOutput};
use crate::witness;
use std::collections::HashSet;

const RUN: &str = "adaptive";
const DURATION_S: u64 = 24;
/// Detections are judged from this long after the first 40 ms release: the analyser's window
/// (2 s) full, plus one sampling period.
const SETTLE_NS: u64 = 3_000_000_000;
/// After the change the new period must be found within this: the window's horizon (2 s) for
/// the old wakeups to leave it, a sampling period (1 s), a drain period (0.1 s), margin 0.4 s.
const FOLLOW_NS: u64 = 3_500_000_000;
/// The analyser's accuracy once settled (the issue's bound).
const MAX_PERIOD_ERR: f64 = 0.01;
/// legacy's WCET in slots with its reservation, at 40 ms (20 slots) and at 30 ms (15 slots):
/// from its minimum, `min_bandwidth` 0.3 (above its largest job, 8 ms of 40 and 6 of 30, so
/// that the supervisor compresses heavy, not legacy): ⌈0.3 · 20⌉ = 6, ⌈0.3 · 15⌉ = 5, to
/// (1 + x) times its largest job, 1.3 · 8 / 40 = 26 % (1.3 · 6 / 30), below that minimum,
/// plus one slot (the CPU time of the shell and the kernel's work on its behalf).
const WCET_BOUNDS_40: (u64, u64) = (6, 7);
const WCET_BOUNDS_30: (u64, u64) = (5, 6);
/// The reservation in force with period 15 at most this long after the first 30 ms release:
/// the detection (`FOLLOW_NS`) and the rest of the frame it is admitted in (0.24 s).
const FOLLOW_RES_NS: u64 = 3_800_000_000;
/// A reservation is judged settled this long after it took effect (two sampling periods: the
/// controller's window sees the reserved task's own consumption).
const SETTLE_RES_NS: u64 = 2_000_000_000;
/// legacy's deadline misses while it holds a settled reservation, share of those jobs
/// (timing). A reservation of Q slots every P whose slots sit at the same place of every
/// period finishes every job of at most Q before the next release; but the planner's EDF
/// places them where tt-a (period 20) leaves room, which moves within the frame when P is 15,
/// so a job released just after one period's slots may wait up to 2 (P − Q) (the periodic
/// resource's supply bound): at 30 ms, 4 of 15 slots, 22 slots, and a 6 ms job ends up to
/// ~7 ms late. Measured 13 % (57 of 382 at 30 ms, latest by 6.5 ms; 5 of 94 at 40 ms).
const MAX_RESERVED_MISS_PCT: f64 = 25.0;
/// legacy's run time outside its own slots while it holds a reservation, share (timing: the
/// boundary's kick latency under TCG; the witness's bound for tt tasks).
const MAX_OUTSIDE_SHARE: f64 = 0.05;
/// tt-a's run time in its recorded slots, share of those slots (timing: the guard band, 0.5 ms
/// of each 12 ms run, and the kick latency).
const MIN_TT_SHARE: f64 = 0.9;
/// The program's releases start at slot 0 (`tt_jobs --t0-from` the run's trace header; heavy
/// starts 6 s after it). It used to start when scx_tt spawned it, before the attach (seconds of
/// verification under TCG, longer on a loaded host), and its first jobs piled up until then: 74
/// of 250 late on a loaded host, caught up back to back after the attach. That backlog was
/// in the controller's window (16 samples of 1 s) and the analyser's, so how slow the host
/// was decided legacy's first WCET (8 slots where the demand gives 6..=7: a fresh-clone run,
/// identical on two boots) and whether a settled detection found no period (`inf %`).
/// Misses are judged from this long after slot 0 (the tracer and the controller learning).
const JUDGED_AFTER_T0_NS: u64 = 1_000_000_000;

/// One detection line of the run's output.
#[derive(Debug, PartialEq)]
struct Detection {
    at_ns: u64,
    period_ms: Option<f64>,
}

/// `scx_tt: adaptive legacy: at T ns: period P ms (...)` or `... at T ns: no period ...`.
fn detections(text: &str) -> Vec<Detection> {
    text.lines()
        .filter_map(|l| l.strip_prefix("scx_tt: adaptive legacy: at "))
        .filter_map(|rest| {
            let (at, rest) = rest.split_once(" ns: ")?;
            let period_ms = rest
                .strip_prefix("period ")
                .and_then(|r| r.split_once(" ms"))
                .and_then(|(p, _)| p.parse().ok());
            Some(Detection {
                at_ns: at.parse().ok()?,
                period_ms,
            })
        })
        .collect()
}

/// `N` of the first `N WORD` in `line`.
fn number_before(line: &str, word: &str) -> Option<f64> {
    let at = line.find(word)?;
    line[..at].split_whitespace().last()?.parse().ok()
}

/// Jobs that finished after their next release, of all, and the largest lateness (ns).
fn misses(jobs: &[JobLine], period_ns: u64) -> (usize, usize, u64) {
    let late = |j: &JobLine| j.finish_ns.saturating_sub(j.release_ns + period_ns);
    let n = jobs.iter().filter(|j| late(j) > 0).count();
    (n, jobs.len(), jobs.iter().map(late).max().unwrap_or(0))
}

/// Jobs that began with a wakeup: the first, and each released after the previous one's
/// finish (one released before it starts at once, without blocking: no wakeup).
fn woken(jobs: &[JobLine]) -> usize {
    woken_after(jobs, 0)
}

/// The jobs that began after a wait of at least `gap_ns` since the job before finished (and
/// the first): with a gap that short the program's sleep may return before it blocked (its
/// log line and the call come after the finish), so only a long enough gap is sure to be one
/// wakeup the tracer must see.
fn woken_after(jobs: &[JobLine], gap_ns: u64) -> usize {
    jobs.len().min(1)
        + jobs
            .windows(2)
            .filter(|w| w[1].release_ns >= w[0].finish_ns.saturating_add(gap_ns))
            .count()
}

/// The kernel's wakeups of legacy's thread by the witness (`sched_wakeup`): (within the run,
/// in the whole trace). (0, 0) when the witness or the summary is missing.
fn legacy_wakeups(out: &VmOutput) -> (usize, usize) {
    let Ok(summary) = out.summary(&format!("{RUN}.json")) else {
        return (0, 0);
    };
    let Some(tids) = summary
        .tasks
        .iter()
        .find(|t| t.name == "legacy")
        .map(|t| t.tids.clone())
    else {
        return (0, 0);
    };
    let Ok(events) = out
        .file(&format!("{RUN}.witness"))
        .and_then(|t| witness::parse(&t).map_err(|e| e.to_string()))
    else {
        return (0, 0);
    };
    let end = summary.t0_ns + summary.duration_ns;
    let wakeups: Vec<u64> = events
        .iter()
        .filter_map(|e| match e.kind {
            witness::Kind::Wakeup { pid, .. } if tids.contains(&pid) => Some(e.ts_ns),
            _ => None,
        })
        .collect();
    let in_run = wakeups
        .iter()
        .filter(|&&t| t >= summary.t0_ns && t < end)
        .count();
    (in_run, wakeups.len())
}

fn check(out: &VmOutput, c: &mut Checks) {
    out.check_clean_exit(c, RUN);
    let text = out.file(&format!("{RUN}.out")).unwrap_or_default();
    // an adaptive task owns slots while in class be only by design (docs/adaptive.md): the
    // windows between its tt spans, by the run's own class-change lines
    let be_class = ["legacy", "heavy"]
        .map(|name| {
            (
                name.to_string(),
                be_windows(&tt_spans(&text, name, u64::MAX)),
            )
        })
        .into_iter()
        .collect();
    witness::check(
        c,
        out,
        RUN,
        &witness::Bounds {
            be_class,
            ..witness::Bounds::default()
        },
    );
    let logs = ["legacy40.log", "legacy30.log"].map(|f| {
        out.file(f).and_then(|t| parse_log(&t)).unwrap_or_else(|e| {
            c.check(false, format!("{f}: {e}"));
            Vec::new()
        })
    });
    let [l40, l30] = &logs;
    let (Some(first40), Some(last40), Some(first30)) = (l40.first(), l40.last(), l30.first())
    else {
        return c.check(false, "the program logged jobs at both periods".into());
    };
    let ds = detections(&text);
    println!("  {} detections:", ds.len());
    for d in &ds {
        println!(
            "    at {:.3} s: {:?} ms",
            d.at_ns as f64 / 1e9 - first40.release_ns as f64 / 1e9,
            d.period_ms
        );
    }
    let err = |p: Option<f64>, truth: f64| p.map_or(f64::INFINITY, |p| (p / truth - 1.0).abs());
    let settled: Vec<&Detection> = ds
        .iter()
        .filter(|d| d.at_ns >= first40.release_ns + SETTLE_NS && d.at_ns <= last40.release_ns)
        .collect();
    let worst40 = settled
        .iter()
        .map(|d| err(d.period_ms, 40.0))
        .fold(0.0, f64::max);
    c.check(
        settled.len() >= 3,
        format!("{} settled detections at 40 ms (at least 3)", settled.len()),
    );
    c.check_timing(
        worst40 <= MAX_PERIOD_ERR,
        format!(
            "40 ms: worst error of the settled detections {:.4} % (bound 1 %)",
            worst40 * 100.0
        ),
    );
    let after: Vec<&Detection> = ds.iter().filter(|d| d.at_ns > first30.release_ns).collect();
    let found = after
        .iter()
        .position(|d| err(d.period_ms, 30.0) <= MAX_PERIOD_ERR);
    match found {
        Some(i) => {
            let follow = after[i].at_ns - first30.release_ns;
            c.check_timing(
                follow <= FOLLOW_NS,
                format!(
                    "30 ms found {:.3} s after the change (bound {:.1} s): {:?} ms",
                    follow as f64 / 1e9,
                    FOLLOW_NS as f64 / 1e9,
                    after[i].period_ms
                ),
            );
            let worst30 = after[i..]
                .iter()
                .map(|d| err(d.period_ms, 30.0))
                .fold(0.0, f64::max);
            c.check_timing(
                worst30 <= MAX_PERIOD_ERR,
                format!(
                    "30 ms: worst error from then on {:.4} % ({} detections)",
                    worst30 * 100.0,
                    after.len() - i
                ),
            );
        }
        None => c.check_timing(
            false,
            format!(
                "30 ms never found ({} detections after the change)",
                after.len()
            ),
        ),
    }
    let last = text
        .lines()
        .find(|l| l.starts_with("scx_tt: adaptive legacy: last period"))
        .unwrap_or_default();
    println!("  {last}");
    let traced = number_before(last, "wakeups traced");
    let lost = number_before(last, "lost");
    let cost = number_before(last, "ns/event");
    let jobs = woken(l40) + woken(l30);
    c.check(
        lost == Some(0.0),
        format!("the tracer lost no wakeup (lost {lost:?})"),
    );
    // The kernel's own wakeups of legacy's thread (the witness: sched_wakeup) bound the
    // tracer's count: at least those within the run, at most those in the whole witness, which
    // starts before scx_tt and ends after it (±2 % + 10: the tracer's window is the attached
    // scheduler's, not the run's). The program's log alone cannot say which of its jobs began
    // with a wakeup: a job preempted right after it finished reaches its sleep after the next
    // release and does not block (a slower host missed 23 of 554 "sure" ones, 2026-11-29).
    let (in_run, in_witness) = legacy_wakeups(out);
    let tol = |n: usize| 10.0 + n as f64 * 0.02;
    c.check(
        traced.is_some_and(|n| {
            n >= in_run as f64 - tol(in_run) && n <= in_witness as f64 + tol(in_witness)
        }) && in_run > 0,
        format!(
            "wakeups traced {traced:?} within the kernel's wakeups of legacy by the witness: \
             {in_run} within the run, {in_witness} in the whole trace (±2 % + 10; the \
             program's log: {jobs} jobs after any wait)"
        ),
    );
    c.check(
        cost.is_some(),
        format!("the tracer's cost per event: {cost:?} ns"),
    );
    let t0 = out
        .summary(&format!("{RUN}.json"))
        .map_or(u64::MAX, |s| s.t0_ns);
    let from = t0.saturating_add(JUDGED_AFTER_T0_NS);
    let judged = |l: &[JobLine]| -> Vec<JobLine> {
        l.iter().filter(|j| j.release_ns >= from).copied().collect()
    };
    let (all40, _, _) = misses(l40, 40_000_000);
    println!(
        "  jobs late from the program's start (before and after the attach): {all40} of {} at 40 ms",
        l40.len()
    );
    let (m40, n40, w40) = misses(&judged(l40), 40_000_000);
    let (m30, n30, w30) = misses(&judged(l30), 30_000_000);
    let pct = 100.0 * (m40 + m30) as f64 / (n40 + n30).max(1) as f64;
    println!(
        "  the program's deadline misses from 1 s after slot 0 (learning included): {m40}/{n40} at 40 ms (latest by {:.1} ms), {m30}/{n30} at 30 ms (latest by {:.1} ms): {pct:.2} %",
        w40 as f64 / 1e6,
        w30 as f64 / 1e6
    );
    check_reservations(out, c, &text, (l40, l30));
}

/// The reservations (docs/adaptive.md "In the run"): legacy converges to one whose period is
/// its own and whose WCET is within its demand's bounds, runs in its slots only while it holds
/// one (the witness), misses at most `MAX_RESERVED_MISS_PCT` of its jobs then, follows the
/// change to 30 ms within `FOLLOW_RES_NS`; heavy is compressed (the supervisor's line); tt-a
/// keeps its slots (the witness).
fn check_reservations(out: &VmOutput, c: &mut Checks, text: &str, logs: (&[JobLine], &[JobLine])) {
    let (l40, l30) = logs;
    let (Some(first30), Some(last30)) = (l30.first(), l30.last()) else {
        return;
    };
    let summary = out.summary(&format!("{RUN}.json"));
    let json = out.file(&format!("{RUN}.json")).unwrap_or_default();
    let (t0, slot_ns) = summary
        .as_ref()
        .map_or((0, 1), |s| (s.t0_ns, s.slot_us * 1000));
    let at = |slot: u64| t0 + slot * slot_ns;
    let changes = reservation_changes(text, "legacy");
    println!("  legacy's reservation changes:");
    for r in &changes {
        println!(
            "    {:?} from {:.3} s after its first release: {}",
            r.held,
            r.from_slot
                .map_or(f64::NAN, |s| (at(s) as f64 - l40[0].release_ns as f64)
                    / 1e9),
            r.line
        );
    }
    let held_before = |t: u64| {
        changes
            .iter()
            .rfind(|r| r.from_slot.is_some_and(|s| at(s) <= t))
            .and_then(|r| r.held)
    };
    let first_grant = changes.iter().find_map(|r| r.held.and(r.from_slot).map(at));
    c.check(
        first_grant.is_some(),
        format!("legacy was granted a reservation (from {first_grant:?} ns)"),
    );
    let Some(granted_ns) = first_grant else {
        return;
    };
    // converged at 40 ms: the reservation in force at the last 40 ms release
    let last40 = l40.last().map_or(0, |j| j.release_ns);
    let r40 = held_before(last40);
    check_wcet(c, "at 40 ms", r40, 20, WCET_BOUNDS_40);
    // after the change: the first reservation of period 15 (30 ms), and the one at the end
    let follow = changes
        .iter()
        .find(|r| r.held.is_some_and(|(p, _)| p == 15))
        .and_then(|r| r.from_slot)
        .map(|s| at(s).saturating_sub(first30.release_ns));
    c.check_timing(
        follow.is_some_and(|f| f <= FOLLOW_RES_NS),
        format!(
            "the reservation followed 40 -> 30 ms {:.3} s after the first 30 ms release (bound {:.1} s)",
            follow.map_or(f64::NAN, |f| f as f64 / 1e9),
            FOLLOW_RES_NS as f64 / 1e9
        ),
    );
    let r30 = held_before(last30.release_ns);
    check_wcet(c, "at 30 ms", r30, 15, WCET_BOUNDS_30);
    let end = summary_adaptive(&json, "legacy");
    println!("  summary: legacy {end:?}");
    c.check(
        end.as_ref().is_some_and(|(s, p, r)| {
            (s == "reserved" || s == "compressed")
                && p.is_some_and(|p| p.abs_diff(30_000) <= 300)
                && *r == r30
        }),
        format!("the summary's legacy: state reserved or compressed, period 30 ms ±1 %, reservation as the last change ({end:?})"),
    );
    let heavy = summary_adaptive(&json, "heavy");
    println!("  summary: heavy {heavy:?}");
    let squeezed = text
        .lines()
        .filter(|l| {
            l.starts_with("scx_tt: adaptive heavy: supervisor: ") && l.contains("compressed to")
        })
        .collect::<Vec<_>>();
    for l in squeezed.iter().take(3) {
        println!("    {l}");
    }
    c.check(
        !squeezed.is_empty(),
        format!(
            "heavy's request did not fit: {} supervisor lines say it was compressed",
            squeezed.len()
        ),
    );
    // legacy's deadline misses while it holds a settled reservation: from SETTLE_RES_NS after
    // the grant to the change, and from SETTLE_RES_NS after the 30 ms reservation to the end
    let after30 = follow.map_or(u64::MAX, |f| first30.release_ns + f);
    let judged = |l: &[JobLine], from: u64| -> Vec<JobLine> {
        l.iter().filter(|j| j.release_ns >= from).copied().collect()
    };
    let (m40, n40, w40) = misses(&judged(l40, granted_ns + SETTLE_RES_NS), 40_000_000);
    let (m30, n30, w30) = misses(
        &judged(l30, after30.saturating_add(SETTLE_RES_NS)),
        30_000_000,
    );
    let pct = 100.0 * (m40 + m30) as f64 / (n40 + n30).max(1) as f64;
    c.check(
        n40 + n30 >= 200,
        format!(
            "{} jobs judged with a reservation (at least 200)",
            n40 + n30
        ),
    );
    c.check_timing(
        pct <= MAX_RESERVED_MISS_PCT,
        format!(
            "legacy's deadline misses with its reservation: {m40}/{n40} at 40 ms (latest by {:.1} ms), {m30}/{n30} at 30 ms (latest by {:.1} ms): {pct:.2} % (bound {MAX_RESERVED_MISS_PCT} %)",
            w40 as f64 / 1e6,
            w30 as f64 / 1e6
        ),
    );
    // the witness: legacy in its own slots while it holds one; tt-a in all of its slots
    let Ok(s) = summary else { return };
    let frame = witness::frame(
        out,
        RUN,
        &format!("{RUN}.json"),
        &format!("{RUN}.trace.jsonl"),
        &[],
    );
    let events = out
        .file(&format!("{RUN}.witness"))
        .and_then(|t| witness::parse(&t));
    let (Ok(f), Ok(events)) = (frame, events) else {
        return c.check(false, "the witness and the trace could be read".into());
    };
    let end_ns = s.t0_ns + s.duration_ns;
    let segs = witness::segments(&events, end_ns);
    let legacy = pids_of(&f, &events, "legacy");
    let spans = tt_spans(text, "legacy", end_ns);
    println!(
        "  legacy's BPF class tt: {}",
        spans
            .iter()
            .map(|(a, b)| format!(
                "[{:.3}, {:.3}) s",
                (a - s.t0_ns) as f64 / 1e9,
                (b - s.t0_ns) as f64 / 1e9
            ))
            .collect::<Vec<_>>()
            .join(" ")
    );
    c.check(
        !spans.is_empty(),
        format!("legacy was class tt in BPF ({} spans)", spans.len()),
    );
    let (inside, outside, unknown) = run_by_owner(&f, &segs, &legacy, (1, "legacy"), &spans);
    let share = outside as f64 / (inside + outside).max(1) as f64;
    c.check_timing(
        share <= MAX_OUTSIDE_SHARE,
        format!(
            "witness: legacy while class tt ran {:.1} ms in its own slots, {:.1} ms outside ({:.2} %, bound {:.0} %), {:.1} ms in unrecorded slots",
            inside as f64 / 1e6,
            outside as f64 / 1e6,
            100.0 * share,
            100.0 * MAX_OUTSIDE_SHARE,
            unknown as f64 / 1e6
        ),
    );
    let tt_a = pids_of(&f, &events, "tt-a");
    let (ran, _, _) = run_by_owner(&f, &segs, &tt_a, (1, "tt-a"), &[(s.t0_ns, end_ns)]);
    let owned = f
        .owners
        .iter()
        .filter(|((cpu, _), o)| *cpu == 1 && o.as_deref() == Some("tt-a"))
        .count() as u64;
    let got = ran as f64 / (owned * f.slot_ns).max(1) as f64;
    c.check_timing(
        got >= MIN_TT_SHARE,
        format!(
            "witness: tt-a ran {:.1} ms of its {owned} recorded slots ({:.1} ms): {:.2} % (bound {:.0} %)",
            ran as f64 / 1e6,
            (owned * f.slot_ns) as f64 / 1e6,
            100.0 * got,
            100.0 * MIN_TT_SHARE
        ),
    );
}

/// One reservation change of the run's log: from slot `from_slot` on, `held` (None: removed).
#[derive(Debug, PartialEq)]
struct ResChange {
    from_slot: Option<u64>,
    held: Option<(u64, u64)>,
    line: String,
}

/// The complement of `spans` (sorted, disjoint) in `[0, u64::MAX)`.
fn be_windows(spans: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    for &(from, to) in spans {
        if from > at {
            out.push((at, from));
        }
        at = at.max(to);
    }
    if at < u64::MAX {
        out.push((at, u64::MAX));
    }
    out
}

/// The spans in which task `name` was class tt in BPF, by the run's `scx_tt: adaptive NAME:
/// BPF class tt|be from T ns` lines (the last one open until `end_ns`).
pub(crate) fn tt_spans(text: &str, name: &str, end_ns: u64) -> Vec<(u64, u64)> {
    let prefix = format!("scx_tt: adaptive {name}: BPF class ");
    let mut spans = Vec::new();
    let mut open: Option<u64> = None;
    for rest in text.lines().filter_map(|l| l.strip_prefix(&prefix)) {
        let Some((class, at)) = rest.split_once(" from ") else {
            continue;
        };
        let Some(at) = at.strip_suffix(" ns").and_then(|a| a.parse().ok()) else {
            continue;
        };
        match (class, open) {
            ("tt", None) => open = Some(at),
            ("be", Some(from)) => {
                spans.push((from, at));
                open = None;
            }
            _ => {}
        }
    }
    spans.extend(open.map(|from| (from, end_ns)));
    spans
}

/// `W/P slots` → (P, W).
fn slots_of(text: &str) -> Option<(u64, u64)> {
    let (w, rest) = text.split_once('/')?;
    let p = rest.split_whitespace().next()?;
    Some((p.parse().ok()?, w.trim().parse().ok()?))
}

/// `scx_tt: adaptive NAME: reservation W/P slots (...) from slot S`, `... resized from A to
/// W/P slots (...) from slot S`, `... resize to ... refused ...: A again from slot S`, `...
/// removed (...): A from slot S`, in order.
/// The reservation `held` at one point: its period exactly `period` slots and its WCET at
/// least legacy's minimum (exact: the analyser's period and the supervisor's floor); at most
/// `hi` is timing, because the controller sizes it from legacy's measured consumption, which a
/// slow host inflates (late ticks take its slots, its jobs pile up and then run back to back:
/// 9 of 20 on a CI host with calibration factor about 1.7, where this host gives 6-7).
fn check_wcet(
    c: &mut Checks,
    when: &str,
    held: Option<(u64, u64)>,
    period: u64,
    (lo, hi): (u64, u64),
) {
    c.check(
        held.is_some_and(|(p, w)| p == period && w >= lo),
        format!("{when}: reservation (period, WCET) {held:?} slots: period {period}, WCET >= {lo}"),
    );
    c.check_timing(
        held.is_some_and(|(_, w)| w <= hi),
        format!("{when}: reservation (period, WCET) {held:?} slots: WCET <= {hi}"),
    );
}

fn reservation_changes(text: &str, name: &str) -> Vec<ResChange> {
    let prefix = format!("scx_tt: adaptive {name}: ");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|rest| {
            let from_slot = rest
                .rsplit_once(" from slot ")
                .and_then(|(_, s)| s.trim().parse().ok());
            let held = if let Some(r) = rest.strip_prefix("reservation ") {
                if r.contains("refused") {
                    return None;
                }
                slots_of(r)
            } else if let Some(r) = rest.strip_prefix("resized from ") {
                slots_of(r.split_once(" to ")?.1)
            } else if rest.starts_with("resize to ") {
                slots_of(rest.split_once(": ")?.1)
            } else if rest.starts_with("removed") {
                None
            } else {
                return None;
            };
            Some(ResChange {
                from_slot,
                held,
                line: rest.to_string(),
            })
        })
        .collect()
}

/// A reservation (period, WCET) in slots.
type Res = Option<(u64, u64)>;

/// The adaptive task `name` of the summary JSON: (state, period_us, reservation).
fn summary_adaptive(json: &str, name: &str) -> Option<(String, Option<u64>, Res)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let a = v["adaptive"]
        .as_array()?
        .iter()
        .find(|a| a["name"] == name)?;
    let r = &a["reservation"];
    Some((
        a["state"].as_str()?.to_string(),
        a["period_us"].as_u64(),
        r["period"].as_u64().zip(r["wcet"].as_u64()),
    ))
}

/// The pids of task `name` by the witness: its threads at the start (the summary's tids) and
/// every process they forked (the shell's `tt_jobs` children).
pub(crate) fn pids_of(f: &witness::Frame, events: &[witness::Event], name: &str) -> HashSet<u32> {
    let mut pids: HashSet<u32> = f
        .tids
        .iter()
        .filter(|(_, t)| t.as_str() == name)
        .map(|(&p, _)| p)
        .collect();
    for e in events {
        if let witness::Kind::Fork { parent, child } = e.kind {
            if pids.contains(&parent) {
                pids.insert(child);
            }
        }
    }
    pids
}

/// Of `pids`' run time on `cpu` within the disjoint windows `spans` ([from, to) ns each): (in
/// slots whose record names `owner`, in other recorded slots, in unrecorded slots), by the
/// witness's segments.
pub(crate) fn run_by_owner(
    f: &witness::Frame,
    segs: &[witness::Segment],
    pids: &HashSet<u32>,
    (cpu, owner): (u32, &str),
    spans: &[(u64, u64)],
) -> (u64, u64, u64) {
    let (mut inside, mut outside, mut unknown) = (0, 0, 0);
    let mine: Vec<&witness::Segment> = segs
        .iter()
        .filter(|s| s.cpu == cpu && pids.contains(&s.pid))
        .collect();
    for &(from_ns, to_ns) in spans {
        for s in &mine {
            let mut t = s.start.max(from_ns);
            let end = s.end.min(to_ns);
            while t < end {
                let slot = (t - f.t0_ns) / f.slot_ns;
                let cut = (f.t0_ns + (slot + 1) * f.slot_ns).min(end);
                match f.owners.get(&(cpu, slot)) {
                    Some(Some(o)) if o == owner => inside += cut - t,
                    Some(_) => outside += cut - t,
                    None => unknown += cut - t,
                }
                t = cut;
            }
        }
    }
    (inside, outside, unknown)
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn an_adaptive_task_s_period_and_reservation_follow_it_while_tt_keeps_its_slots() {
    Vm::new(RUN)
        .smp(2)
        .timeout_s(400)
        .arg("duration_s", DURATION_S)
        .check(check);
}

#[test]
fn detection_lines_parse() {
    let text = "scx_tt: adaptive legacy: at 12 ns: period 40.012 ms (peak/mean 9.0, 50 wakeups in the window); 3 wakeups traced, 0 lost, 0 out of order; tracer 250 ns/event\n\
                scx_tt: adaptive legacy: at 13 ns: no period yet: 2 wakeups in the window; x\n\
                scx_tt: other\n";
    assert_eq!(
        detections(text),
        vec![
            Detection {
                at_ns: 12,
                period_ms: Some(40.012)
            },
            Detection {
                at_ns: 13,
                period_ms: None
            }
        ]
    );
    let line = "scx_tt: adaptive legacy: last period 40.000 ms (20 detections); 600 wakeups traced, 0 lost, 1 out of order; tracer 312 ns/event";
    assert_eq!(number_before(line, "wakeups traced"), Some(600.0));
    assert_eq!(number_before(line, "lost"), Some(0.0));
    assert_eq!(number_before(line, "ns/event"), Some(312.0));
    let j = |release_ns, finish_ns| JobLine {
        release_ns,
        finish_ns,
        exec_ns: 1,
    };
    // the third job is released before the second finishes: no wakeup for it
    let jobs = [j(0, 5), j(10, 25), j(20, 26), j(30, 31)];
    assert_eq!(woken(&jobs), 3);
    // the waits are 5 ns (before the second job) and 4 ns (before the fourth)
    assert_eq!(woken_after(&jobs, 4), 3);
    assert_eq!(woken_after(&jobs, 5), 2);
    assert_eq!(woken_after(&jobs, 6), 1);
    assert_eq!(misses(&jobs, 10), (1, 4, 5));
}

#[test]
fn reservation_lines_parse() {
    let text = "scx_tt: adaptive legacy: reservation 4/20 slots (8 ms every 40 ms) from slot 1200\n\
                scx_tt: adaptive heavy: reservation 4/10 slots (8 ms every 20 ms) from slot 1200\n\
                scx_tt: adaptive legacy: resized from 4/20 slots (8 ms every 40 ms) to 5/20 slots (10 ms every 40 ms) from slot 1680\n\
                scx_tt: adaptive legacy: at 5 ns: period 40.000 ms (x)\n\
                scx_tt: adaptive legacy: resize to 9/15 slots (18 ms every 30 ms) refused by the planner (x): 5/20 slots (10 ms every 40 ms) again from slot 2040\n\
                scx_tt: adaptive legacy: supervisor: adaptive task 1: compressed to 3 of 4 requested slots every 15 (minimum 1; level 0.667)\n\
                scx_tt: adaptive legacy: reservation 9/15 slots (18 ms every 30 ms) refused by the planner: x\n\
                scx_tt: adaptive legacy: removed (it runs as be in the slack): 5/20 slots (10 ms every 40 ms) from slot 3000\n";
    let got: Vec<(Option<u64>, Res)> = reservation_changes(text, "legacy")
        .into_iter()
        .map(|r| (r.from_slot, r.held))
        .collect();
    assert_eq!(
        got,
        [
            (Some(1200), Some((20, 4))),
            (Some(1680), Some((20, 5))),
            (Some(2040), Some((20, 5))),
            (Some(3000), None),
        ]
    );
    let classes = "scx_tt: adaptive legacy: BPF class tt from 100 ns\n\
                   scx_tt: adaptive heavy: BPF class tt from 120 ns\n\
                   scx_tt: adaptive legacy: BPF class be from 300 ns\n\
                   scx_tt: adaptive legacy: BPF class tt from 450 ns\n";
    assert_eq!(tt_spans(classes, "legacy", 1000), [(100, 300), (450, 1000)]);
    assert_eq!(tt_spans(classes, "heavy", 1000), [(120, 1000)]);
    assert_eq!(
        be_windows(&[(100, 300), (450, 1000)]),
        [(0, 100), (300, 450), (1000, u64::MAX)]
    );
    assert_eq!(be_windows(&[]), [(0, u64::MAX)]);
    let json = r#"{"adaptive":[{"name":"legacy","task":1,"state":"reserved","period_us":30001,"reservation":{"period":15,"wcet":4},"changes":3},{"name":"heavy","task":2,"state":"learning","period_us":null,"reservation":null,"changes":0}]}"#;
    assert_eq!(
        summary_adaptive(json, "legacy"),
        Some(("reserved".into(), Some(30001), Some((15, 4))))
    );
    assert_eq!(
        summary_adaptive(json, "heavy"),
        Some(("learning".into(), None, None))
    );
}

//! VM test, issue 17: an adaptive task in planner mode (docs/adaptive.md, docs/vm-harness.md).
//! `adaptive.json` (this folder) on managed CPU 1 (`-smp 2`), 2 ms slots, frame 120: the tt
//! busy loop tt-a (6 slots every 20) and `legacy`, class adaptive, a tt_jobs program that
//! blocks between jobs released every 40 ms (250 jobs), then every 30 ms; it announces neither.
//! scx_tt traces legacy's wakeups in BPF and prints its inferred period every second. Checked,
//! every figure printed:
//! - the inferred period: every detection from `SETTLE_NS` after the first 40 ms release to the
//!   last one is within 1 % of 40 ms; after the change, the first detection within 1 % of 30 ms
//!   comes at most `FOLLOW_NS` after the first 30 ms release, and every later one is within 1 %;
//! - the tracer lost no wakeup and handed over as many as the program's jobs (±the wakeups of
//!   its start and of the shell between the two programs); its cost per event is printed;
//! - the program's own deadline-miss ratio (a job that finished after its next release, by its
//!   log) is at most `MAX_MISS_PCT` (it runs in the slack: no reservation is granted yet);
//! - tt-a keeps its slots and nothing runs where it must not: the witness (the kernel's
//!   sched_switch trace), with legacy judged as be.

use crate::completion::{parse_log, JobLine};
use crate::harness::{Checks, Vm, VmOutput};
use crate::witness;

const RUN: &str = "adaptive";
const DURATION_S: u64 = 24;
/// Detections are judged from this long after the first 40 ms release: the analyser's window
/// (2 s) full, plus one sampling period.
const SETTLE_NS: u64 = 3_000_000_000;
/// After the change the new period must be found within this: the window's horizon (2 s) for
/// the old wakeups to leave it, a sampling period (1 s), a drain period (0.1 s), margin 0.4 s.
const FOLLOW_NS: u64 = 3_500_000_000;
/// The analyser's accuracy once settled (the bound).
const MAX_PERIOD_ERR: f64 = 0.01;
/// The program's deadline misses, share of its jobs released from `JUDGED_AFTER_T0_NS` after
/// slot 0 on (timing: TCG stalls of the vCPU; as be in the slack of a CPU 30 % used by tt-a, a
/// job of 4-8 ms has 28 ms of 40 to finish).
const MAX_MISS_PCT: f64 = 5.0;
/// The program starts before scx_tt is attached (scx_tt spawns it, then loads the BPF
/// scheduler: seconds of verification under TCG), so its first jobs wait for the attach (1.4 s
/// measured: 36 jobs late, then it catches up); misses are judged from this long after slot 0.
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
    jobs.len().min(1)
        + jobs
            .windows(2)
            .filter(|w| w[1].release_ns >= w[0].finish_ns)
            .count()
}

fn check(out: &VmOutput, c: &mut Checks) {
    out.check_clean_exit(c, RUN);
    witness::check(c, out, RUN, &witness::Bounds::default());
    let text = out.file(&format!("{RUN}.out")).unwrap_or_default();
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
    c.check(
        traced.is_some_and(|n| (n - jobs as f64).abs() <= 10.0 + jobs as f64 * 0.02),
        format!("wakeups traced {traced:?} against the program's {jobs} jobs that began with a wakeup (±2 % + 10)"),
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
    c.check_timing(
        pct <= MAX_MISS_PCT,
        format!(
            "the program's deadline misses from 1 s after slot 0: {m40}/{n40} at 40 ms (latest by {:.1} ms), {m30}/{n30} at 30 ms (latest by {:.1} ms): {pct:.2} % (bound {MAX_MISS_PCT} %)",
            w40 as f64 / 1e6,
            w30 as f64 / 1e6
        ),
    );
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn an_adaptive_task_s_period_is_inferred_and_followed_while_tt_keeps_its_slots() {
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
    assert_eq!(misses(&jobs, 10), (1, 4, 5));
}

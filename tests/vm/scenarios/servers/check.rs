//! VM test, issue 16 item 4: seed 001's server designs in the kernel, judged by the kernel's
//! switch trace (the witness) and the workloads' own logs. `servers_{ptps,crps}.json` (this
//! folder) on managed CPU 1 (`-smp 2`), 10 ms slots, frame 10, differ only in `server`:
//!   - `a` (slots [0, 3), completion none) runs 20-40 % of its 30 ms budget from its release at
//!     the frame's start, sleeping 2 ms halfway, and sleeps until its next release: most of its
//!     slots are left unused;
//!   - `b` (3 slots) is always runnable (it wants 60 ms of CPU every 100 ms);
//!   - `filler` is be work.
//!
//! Checked, over the judged slots (from the second second on) of a's:
//!   - ptps: the unused time idles: b and filler together run at most [`MAX_OTHER_PCT`] of a's
//!     slot time (what a late tick lets the previous slot's task run on);
//!   - crps: b reclaims it: b runs at least [`MIN_RECLAIM_PCT`] of the time a leaves in its
//!     slots, filler at most [`MAX_OTHER_PCT`]; scx_tt's `reclaimed_ns` for b agrees with the
//!     witness's b-in-a's-slots within [`RECLAIM_AGREE_PCT`];
//!   - both: a's jobs (its own log) are not delayed by the reclaiming: a's median and p99
//!     response under crps are above ptps's by at most what the host's timer lateness in the
//!     crps run explains. a's response is counted from its nominal release, so a release timer
//!     the host fires late lengthens it in either run: the slack is the crps run's own timer
//!     lateness at the slot boundaries (the witness, from the kernel's timer trace), its p99 for
//!     the median and its maximum for the p99, and at least [`A_RESPONSE_SLACK_NS`]. (It was a
//!     fixed 2 ms on the p99, which a CI run under stress-ng missed by 3 ms with a loaded host.)
//!     The witness's own checks (nothing foreign, be never over a waiting owner, records agree)
//!     hold, with b's time outside its slots under crps allowed, as it is the reclaiming
//!     measured above.
//!
//!   - crps: the owner's wake-up preempts the reclaimer (C in src/bpf/tt_sched.bpf.c). Each of
//!     a's jobs sleeps 2 ms halfway (`tt_jobs --mid-sleep-us`; a's completion is `none`, so the
//!     job is not over when its thread blocks): b reclaims the slot meanwhile, and when a wakes
//!     b must leave the CPU within a kick. From the witness: a's wake-ups in its judged slots
//!     that found b running, at least half as many as a's judged jobs (timing: b must have been
//!     switched in during the 2 ms), and for at least [`KICKED_PCT`] of them b left the CPU
//!     within [`A_RESPONSE_SLACK_NS`] or, if larger, the p99 of the same wake-ups' switch to a
//!     under ptps, where they find the CPU idle (what a wake-up's switch takes on this host in
//!     this measurement). Measured 2026-12-07 with the host under load: b left 0.19-0.20 ms
//!     after a's wake-up at the median, 0.44 ms at most; a came 0.12 ms after a wake-up on the
//!     idle CPU at the median, 0.29 ms at most. A build without the kick under crps fails it in
//!     each of its three measurements (b ran on 2.4-3.0 ms at the median, 5-14 of 68-70 within
//!     1 ms), and before this check it passed every other one here: a's wake-ups, at its
//!     releases only, had only ever found be work running.
//!
//! Under wcps (the default, tests `completion` and others) filler takes a's unused time. Every
//! figure is printed.

use crate::completion::parse_log;
use crate::harness::{Checks, Vm, VmOutput};
use crate::planner_checks::Table;
use crate::witness::{self, ms, quantile, Frame, Segment};
use std::collections::HashSet;

const DURATION_S: u64 = 8;
const CPU: u32 = 1;
/// Slots from this one on are judged (TCG translates the workloads' paths in the first second).
const FIRST_JUDGED_SLOT: u64 = 100;
/// Under ptps, other tasks' share of a's slot time at most (a late tick lets the previous
/// slot's be work run on until the kick: up to a few ms per frame under TCG).
const MAX_OTHER_PCT: f64 = 5.0;
/// Under crps, b's share of the time a leaves unused in its slots at least (the rest: the
/// guard band, switch and kick gaps).
const MIN_RECLAIM_PCT: f64 = 70.0;
/// scx_tt's reclaimed_ns for b against the witness's b-in-a's-slots (the whole run, both
/// split the same way; they differ by the charge points, a few us per switch).
const RECLAIM_AGREE_PCT: f64 = 10.0;
/// The least slack of a's response under crps over ptps's (a kick's latency under TCG, up to
/// ~1 ms); the run's own timer lateness decides above it (see the module doc).
const A_RESPONSE_SLACK_NS: u64 = 1_000_000;

/// Share of a's wake-ups over b after which b left the CPU within the bound, at least.
const KICKED_PCT: f64 = 95.0;

/// What one run gives the comparison of a's response times.
#[derive(Clone, Debug)]
struct RunFigures {
    /// a's median and p99 response (finish - release) over its judged jobs, from its own log.
    a_p50: u64,
    a_p99: u64,
    /// a's judged jobs, and for each of a's wake-ups in its judged slots how long the task
    /// running went on (until the next switch there): those that found b running, and those
    /// that found the CPU idle (each sorted).
    a_jobs: usize,
    wakes_over_b: Vec<u64>,
    wakes_idle: Vec<u64>,
    /// How late the scheduler's timer fired at the run's slot boundaries (the witness, from the
    /// kernel's timer trace): p99 and maximum.
    late_p99: u64,
    late_max: u64,
}

/// Time in a's judged slots, by who ran.
#[derive(Debug, Default)]
struct Split {
    slots: u64,
    a_ns: u64,
    b_ns: u64,
    filler_ns: u64,
    /// b in a's slots over the whole run (scx_tt's reclaimed_ns counts all of it)
    b_all_ns: u64,
}

fn pids_of(f: &Frame, events: &[witness::Event], task: &str) -> HashSet<u32> {
    let mut pids: HashSet<u32> = f
        .tids
        .iter()
        .filter(|(_, t)| t.as_str() == task)
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

fn split(table: &Table, f: &Frame, events: &[witness::Event], segs: &[Segment]) -> Split {
    let (a, b, filler) = (
        pids_of(f, events, "a"),
        pids_of(f, events, "b"),
        pids_of(f, events, "filler"),
    );
    let mut s = Split::default();
    let last = (f.end_ns - f.t0_ns) / f.slot_ns;
    let a_slots: Vec<u64> = (0..last)
        .filter(|&k| table.owner(CPU, k) == Some("a") && f.owners.contains_key(&(CPU, k)))
        .collect();
    s.slots = a_slots.iter().filter(|&&k| k >= FIRST_JUDGED_SLOT).count() as u64;
    for seg in segs.iter().filter(|x| x.cpu == CPU) {
        for &k in &a_slots {
            let (x, y) = (f.t0_ns + k * f.slot_ns, f.t0_ns + (k + 1) * f.slot_ns);
            let ns = seg.end.min(y).saturating_sub(seg.start.max(x));
            if ns == 0 {
                continue;
            }
            if b.contains(&seg.pid) {
                s.b_all_ns += ns;
            }
            if k < FIRST_JUDGED_SLOT {
                continue;
            }
            if a.contains(&seg.pid) {
                s.a_ns += ns;
            } else if b.contains(&seg.pid) {
                s.b_ns += ns;
            } else if filler.contains(&seg.pid) {
                s.filler_ns += ns;
            }
        }
    }
    s
}

fn pct(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// Who ran on the CPU when a woke.
#[derive(Clone, Copy, PartialEq)]
enum Found {
    B,
    Idle,
    Other,
}

/// Each of a's wake-ups in its judged slots, from the witness: who it found running on the CPU,
/// and the time until the next switch there (that task leaving the CPU).
fn a_wakes(table: &Table, f: &Frame, events: &[witness::Event]) -> Vec<(Found, u64)> {
    let (a, b) = (pids_of(f, events, "a"), pids_of(f, events, "b"));
    let (mut running, mut woke) = (0u32, None::<(Found, u64)>);
    let mut out = Vec::new();
    for e in events {
        match e.kind {
            witness::Kind::Switch { next_pid, .. } if e.cpu == CPU => {
                if let Some((found, t)) = woke.take() {
                    out.push((found, e.ts_ns - t));
                }
                running = next_pid;
            }
            witness::Kind::Wakeup { pid, target } if target == CPU && a.contains(&pid) => {
                let Some(slot) = e.ts_ns.checked_sub(f.t0_ns).map(|d| d / f.slot_ns) else {
                    continue;
                };
                if slot >= FIRST_JUDGED_SLOT
                    && e.ts_ns < f.end_ns
                    && table.owner(CPU, slot) == Some("a")
                    && !a.contains(&running)
                    && woke.is_none()
                {
                    let found = match running {
                        0 => Found::Idle,
                        p if b.contains(&p) => Found::B,
                        _ => Found::Other,
                    };
                    woke = Some((found, e.ts_ns));
                }
            }
            _ => {}
        }
    }
    out
}

/// a's median and p99 response time (finish - release) over its judged jobs, and their number,
/// from its own log.
fn a_response(c: &mut Checks, out: &VmOutput, run: &str, f: &Frame) -> Option<(u64, u64, usize)> {
    let log = match out
        .file(&format!("{run}-a.log"))
        .and_then(|t| parse_log(&t))
    {
        Ok(l) => l,
        Err(e) => {
            c.check(false, format!("{run}: a's log: {e}"));
            return None;
        }
    };
    // jobs whose window lies in the run (after it the scheduler is gone: plain CFS)
    let from = f.t0_ns + FIRST_JUDGED_SLOT * f.slot_ns;
    let to = f.end_ns.saturating_sub(100_000_000);
    let mut r: Vec<u64> = log
        .iter()
        .filter(|j| j.release_ns >= from && j.release_ns <= to)
        .map(|j| j.finish_ns - j.release_ns)
        .collect();
    r.sort_unstable();
    c.check(
        r.len() >= 50,
        format!("{run}: a: enough judged jobs ({})", r.len()),
    );
    if r.is_empty() {
        return None;
    }
    Some((quantile(&r, 0.5), quantile(&r, 0.99), r.len()))
}

fn run_one(c: &mut Checks, out: &VmOutput, run: &str) -> Option<RunFigures> {
    out.check_clean_exit(c, run);
    let table = Table::of("servers", &format!("{run}.json"));
    let (f, events) = match witness::frame(
        out,
        run,
        &format!("{run}.json"),
        &format!("{run}.trace.jsonl"),
        &[],
    )
    .and_then(|f| {
        let text = out.file(&format!("{run}.witness"))?;
        Ok((
            f,
            witness::parse(&text).map_err(|e| format!("{run}.witness: {e}"))?,
        ))
    }) {
        Ok(x) => x,
        Err(e) => {
            c.check(false, format!("{run}: witness: {e}"));
            return None;
        }
    };
    let r = f.analyse(&events);
    let crps = run.ends_with("crps");
    let bounds = witness::Bounds {
        // under crps, b's time outside its own slots is the reclaiming, judged below
        outside_share: if crps { 1.0 } else { 0.05 },
        ..witness::Bounds::default()
    };
    witness::report(c, run, &f, &r, &bounds);
    let segs = witness::segments(&events, f.end_ns);
    let s = split(&table, &f, &events, &segs);
    let slot_time = s.slots * f.slot_ns;
    let unused = slot_time.saturating_sub(s.a_ns);
    println!(
        "  {run}: a's {} judged slots ({:.1} ms): a {:.1} ms, b {:.1} ms ({:.1} % of a's unused {:.1} ms), filler {:.1} ms ({:.2} %)",
        s.slots,
        slot_time as f64 / 1e6,
        s.a_ns as f64 / 1e6,
        s.b_ns as f64 / 1e6,
        pct(s.b_ns, unused),
        unused as f64 / 1e6,
        s.filler_ns as f64 / 1e6,
        pct(s.filler_ns, slot_time)
    );
    c.check(
        s.slots >= 50,
        format!("{run}: judged slots of a ({})", s.slots),
    );
    let reclaimed = out
        .json::<serde_json::Value>(&format!("{run}.json"))
        .ok()
        .and_then(|v| {
            v["tasks"].as_array()?.iter().find(|t| t["name"] == "b")?["reclaimed_ns"].as_u64()
        });
    if crps {
        c.check_timing(
            pct(s.b_ns, unused) >= MIN_RECLAIM_PCT,
            format!(
                "{run}: b reclaims a's unused time: {:.1} % >= {MIN_RECLAIM_PCT} %",
                pct(s.b_ns, unused)
            ),
        );
        c.check_timing(
            pct(s.filler_ns, slot_time) <= MAX_OTHER_PCT,
            format!(
                "{run}: be work stays out of a's slots while b can reclaim: {:.2} % <= {MAX_OTHER_PCT} %",
                pct(s.filler_ns, slot_time)
            ),
        );
        let agree = reclaimed.is_some_and(|ns| {
            (ns as f64 - s.b_all_ns as f64).abs() <= RECLAIM_AGREE_PCT / 100.0 * s.b_all_ns as f64
        });
        c.check_timing(
            agree,
            format!(
                "{run}: scx_tt's reclaimed_ns of b {:?} agrees with the witness's {} ns within {RECLAIM_AGREE_PCT} %",
                reclaimed, s.b_all_ns
            ),
        );
    } else {
        let other = s.b_ns + s.filler_ns;
        c.check_timing(
            pct(other, slot_time) <= MAX_OTHER_PCT,
            format!(
                "{run}: a's unused time idles: b + filler {:.2} % of a's slot time <= {MAX_OTHER_PCT} %",
                pct(other, slot_time)
            ),
        );
        c.check(
            reclaimed == Some(0),
            format!("{run}: nothing reclaimed ({reclaimed:?})"),
        );
    }
    let (a_p50, a_p99, a_jobs) = a_response(c, out, run, &f)?;
    let wakes = a_wakes(&table, &f, &events);
    let sorted = |mut v: Vec<u64>| {
        v.sort_unstable();
        v
    };
    let of = |x: Found| sorted(wakes.iter().filter(|w| w.0 == x).map(|w| w.1).collect());
    let (wakes_over_b, wakes_idle) = (of(Found::B), of(Found::Idle));
    let late = sorted(r.tick_late.clone());
    Some(RunFigures {
        a_p50,
        a_p99,
        a_jobs,
        wakes_over_b,
        wakes_idle,
        late_p99: quantile(&late, 0.99),
        late_max: quantile(&late, 1.0),
    })
}

fn check(out: &VmOutput, c: &mut Checks) {
    let ptps = run_one(c, out, "servers_ptps");
    let crps = run_one(c, out, "servers_crps");
    let (Some(p), Some(r)) = (ptps, crps) else {
        c.check(false, "servers: a's response in both runs".to_string());
        return;
    };
    for (run, x) in [("ptps", &p), ("crps", &r)] {
        let w = |v: &[u64]| {
            format!(
                "{}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
                v.len(),
                ms(quantile(v, 0.5)),
                ms(quantile(v, 0.99)),
                ms(quantile(v, 1.0))
            )
        };
        println!(
            "  {run}: a's response p50 {:.2} ms, p99 {:.2} ms over {} jobs; timer lateness p99 {:.2} ms, max {:.2} ms; after a's wake-ups that found b running, b ran on {}; after those that found the CPU idle, a came {}",
            ms(x.a_p50),
            ms(x.a_p99),
            x.a_jobs,
            ms(x.late_p99),
            ms(x.late_max),
            w(&x.wakes_over_b),
            w(&x.wakes_idle)
        );
    }
    // ptps's wake-ups of a halfway through its jobs find the CPU idle: how long the switch to a
    // takes on this host in this measurement.
    let ptps_wake_p99 = quantile(&p.wakes_idle, 0.99);
    let kick_bound = A_RESPONSE_SLACK_NS.max(ptps_wake_p99);
    let kicked = r
        .wakes_over_b
        .iter()
        .filter(|&&ns| ns <= kick_bound)
        .count();
    c.check_timing(
        r.wakes_over_b.len() * 2 >= r.a_jobs,
        format!(
            "servers_crps: a's wake-ups found b reclaiming in {} of {} jobs (>= half)",
            r.wakes_over_b.len(),
            r.a_jobs
        ),
    );
    c.check_timing(
        pct(kicked as u64, r.wakes_over_b.len() as u64) >= KICKED_PCT,
        format!(
            "servers_crps: a's wake-up preempts the reclaimer: b left within {:.2} ms (the p99 of a's switch-in after its wake-ups on the idle CPU under ptps, at least {:.0} ms) after {kicked} of {} ({:.1} % >= {KICKED_PCT} %)",
            ms(kick_bound),
            ms(A_RESPONSE_SLACK_NS),
            r.wakes_over_b.len(),
            pct(kicked as u64, r.wakes_over_b.len() as u64)
        ),
    );
    let slack_p50 = A_RESPONSE_SLACK_NS.max(r.late_p99);
    let slack_p99 = A_RESPONSE_SLACK_NS.max(r.late_max);
    c.check_timing(
        r.a_p50 <= p.a_p50 + slack_p50,
        format!(
            "servers: reclaiming takes nothing from a: its median response under crps {:.2} ms <= ptps {:.2} ms + {:.2} ms (the crps run's timer lateness p99, at least {:.0} ms)",
            ms(r.a_p50),
            ms(p.a_p50),
            ms(slack_p50),
            ms(A_RESPONSE_SLACK_NS)
        ),
    );
    c.check_timing(
        r.a_p99 <= p.a_p99 + slack_p99,
        format!(
            "servers: reclaiming takes nothing from a: its p99 response under crps {:.2} ms <= ptps {:.2} ms + {:.2} ms (the crps run's largest timer lateness, at least {:.0} ms)",
            ms(r.a_p99),
            ms(p.a_p99),
            ms(slack_p99),
            ms(A_RESPONSE_SLACK_NS)
        ),
    );
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn ptps_idles_an_owners_unused_slots_and_crps_lets_another_tt_task_reclaim_them() {
    Vm::new("servers")
        .smp(2)
        .timeout_s(300)
        .arg("duration_s", DURATION_S)
        .check(check);
}

#[test]
fn the_plans_differ_only_in_the_server_design() {
    for run in ["servers_ptps", "servers_crps"] {
        let t = Table::of("servers", &format!("{run}.json"));
        assert_eq!((t.frame, t.managed.as_slice()), (10, &[CPU][..]));
        assert_eq!(t.static_count("a", 0, 10), 3, "{run}");
        assert_eq!(t.static_count("b", 0, 10), 3, "{run}");
        assert_eq!(
            t.owner(CPU, 0),
            Some("a"),
            "{run}: a's job starts the frame"
        );
    }
    let server = |run: &str| Table::of("servers", &format!("{run}.json")).plan.server;
    assert_eq!(server("servers_ptps"), scx_tt::plan::ServerDesign::Ptps);
    assert_eq!(server("servers_crps"), scx_tt::plan::ServerDesign::Crps);
}

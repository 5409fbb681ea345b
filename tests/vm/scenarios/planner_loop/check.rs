//! VM test of the closed planner loop (issue 13; docs/planner.md, "Observations: the closed
//! loop"): `scx_tt --planner bss` on planner_loop.json at `-smp 2` (managed CPU 1, 10 ms slots,
//! frame 20): tt-a owns 7 of every 10 slots, its jobs (tt_jobs on the slot grid) run 30–100 %
//! of that and then sched_yield (completion yield); tt-b 2 of every 20, 20–50 %, then it sleeps
//! to its next release (completion block); tt-f, declared admitted, runs only firm jobs (a busy
//! loop, completion none); be fills the slack. 16 firm jobs of 5 slots due in 10 are asked for
//! tt-f during the run. The run writes its planner log; the host replays it with
//! `scx_tt simulate --replay` against the run's trace.
//!
//! Checks, each figure printed:
//! - the planner observed the slots (≥ 90 % observed, timing), saw completions (exact: > 0) and
//!   no miss (exact unless a slot was decided late; platform losses are reported as `lost`);
//! - the kernel's own records show the reclaim: tt-a and tt-b own fewer slots than their
//!   static share (voided slots rewritten to be work), tt-f owns exactly 5 slots for every
//!   accepted job (completion none never ends a job early);
//! - every accepted firm job got its 5 slots before its deadline, from the trace;
//! - printed, not judged: the requests accepted only with reclaim (the worst-case twin, the
//!   replay of the same log without observations, rejects them) and the free capacity before
//!   each request's deadline on both;
//! - conformance: the replay names the owner the kernel ran in 100 % of the slots when no slot
//!   was decided late, ≥ 99 % otherwise (every difference listed);
//! - the witness (the kernel's sched_switch trace) judges the run;
//! - scx_tt exits 0, sched_ext is disabled, the socket is gone.
//!
//! Then the run `reclaim` on planner_reclaim.json, built so that reclaim is certain: firm
//! requests the worst-case twin rejects are accepted with reclaim and run their slots before
//! their deadlines by the kernel's records (`check_reclaim`).

use crate::harness::{repo, Checks, Summary, Vm, VmOutput};
use crate::planner_checks::{self as pc, check_owners, owned, recorded};
use crate::witness::Bounds;
use scx_tt::trace::SlotRecord;

const RUN: &str = "closed";
/// The run on planner_reclaim.json (reclaim certain: see `check_reclaim`).
const RECLAIM: &str = "reclaim";
const RECLAIM_WCET: u64 = 25;
const RECLAIM_REQUESTS: usize = 5;
const FIRM_WCET: u64 = 5;
const REQUESTS: usize = 16;
/// Share of the slots whose observation the planner must have applied (TCG: a tick may come
/// late enough that its slot is reconciled with the worst case instead).
const MIN_OBSERVED_PCT: f64 = 90.0;

fn plan_path() -> std::path::PathBuf {
    repo().join("tests/vm/scenarios/planner_loop/planner_loop.json")
}

fn reclaim_plan_path() -> std::path::PathBuf {
    repo().join("tests/vm/scenarios/planner_loop/planner_reclaim.json")
}

/// (first_slot, deadline_slot) of every accepted firm job of run `run` (requests
/// `RUN_f0`.. `RUN_f{requests-1}`; a request the guest did not send is skipped).
fn accepted(c: &mut Checks, out: &VmOutput, run: &str, requests: usize) -> Vec<(u64, u64)> {
    let mut acc = Vec::new();
    let (mut yes, mut no) = (0, 0);
    for k in 0..requests {
        let name = format!("{run}_f{k}");
        if run != RUN && out.rc(&name) == "?" {
            continue;
        }
        let r = out.reply(&name);
        match (out.rc(&name).as_str(), r["accepted"].as_bool()) {
            ("0", Some(true)) => {
                yes += 1;
                if let (Some(f), Some(d)) = (r["first_slot"].as_u64(), r["deadline_slot"].as_u64())
                {
                    acc.push((f, d));
                }
            }
            ("3", Some(false)) => no += 1,
            (rc, _) => c.check(false, format!("{name}: exit {rc}, reply {r}")),
        }
    }
    println!("--- {run}: firm admissions: {yes} accepted, {no} rejected of {requests}");
    acc
}

/// The firm admissions of a replay against its worst-case twin, from `simulate --replay`'s
/// `admit_firm at slot ...` lines: (free slots before the deadlines capped at `wcet`, closed
/// loop; the same, worst case; requests accepted only with reclaim).
fn twin(text: &str, wcet: u64) -> (i64, i64, usize) {
    let (mut closed_free, mut worst_free, mut only) = (0i64, 0i64, 0);
    for l in text.lines().filter(|l| l.starts_with("admit_firm at slot")) {
        // "admit_firm at slot S: closed loop VERDICT, worst case VERDICT[: accepted only with
        // reclaim]", VERDICT = "accepted (due D)" or "rejected (N of W slots free)"
        let free = |verdict: &str| -> i64 {
            if verdict.starts_with("accepted") {
                wcet as i64
            } else {
                verdict
                    .split('(')
                    .nth(1)
                    .and_then(|t| t.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0)
            }
        };
        let (a, b) = l.split_once(", worst case ").unwrap_or((l, ""));
        let a = a.split_once("closed loop ").map_or("", |x| x.1);
        let b = b.split(": ").next().unwrap_or("");
        closed_free += free(a).min(wcet as i64);
        worst_free += free(b).min(wcet as i64);
        only += usize::from(l.ends_with("accepted only with reclaim"));
    }
    (closed_free, worst_free, only)
}

/// Conformance of the run's planner log with its trace (`planner_checks::conformance`), and
/// the firm admissions of the replay against its worst-case twin.
fn replay(c: &mut Checks, out: &VmOutput) {
    let text = pc::conformance(c, out, &plan_path(), RUN, 400);
    // the free capacity the closed loop saw against its worst-case twin, request by request
    let (closed_free, worst_free, only) = twin(&text, FIRM_WCET);
    // Printed, not judged: whether a request finds tt-a's job done depends on the phase it
    // arrives at and on tt-a's drawn execution, and on this workload only requests at slots 2-3
    // of tt-a's period can gain (later ones find the current interval nearly spent either way,
    // the next one full): 1-2 of 16 live requests (2026-11-23), 0 of 48 while the control
    // socket was served every 100 ms, which put every request at slot 2 of tt-a's period;
    // 1-3 % of requests in simulation (tests/planner_late_obs.rs). The reclaim itself is
    // judged there and in tests/planner_replay.rs; docs/planner.md has the analysis.
    println!(
        "--- {only} of {REQUESTS} firm requests accepted only with reclaim (free slots before \
         the deadlines, capped at the WCET: closed {closed_free}, worst case {worst_free})"
    );
}

fn check_run(c: &mut Checks, out: &VmOutput, s: &Summary, trace: &[SlotRecord]) {
    let late = pc::check_summary(c, s, None, &[]);
    let text = out.file(&format!("{RUN}.json")).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let o = &json["planner_observations"];
    let slots = s.duration_ns / (s.slot_us * 1000).max(1);
    let observed = o["observed"].as_u64().unwrap_or(0);
    let pct = 100.0 * observed as f64 / slots.max(1) as f64;
    println!("--- planner_observations {o}");
    c.check(o.is_object(), "the summary has planner_observations".into());
    c.check_timing(
        pct >= MIN_OBSERVED_PCT,
        format!("observed {observed} of {slots} slots ({pct:.1} %, >= {MIN_OBSERVED_PCT} %)"),
    );
    c.check(
        o["completed"].as_u64().unwrap_or(0) > 0,
        format!("completions seen ({})", o["completed"]),
    );
    // No guaranteed job misses. Time the platform took from a ready owner (kick latency,
    // kthreads: 0.3-0.5 ms at many job starts under TCG) is given back to the job only from
    // free capacity (`CpuState::uncredit`); what no free slot can hold is reported `lost` and
    // absorbed by that job, so a loss never makes another job miss. Judged as timing only when
    // the planner decided a slot late (its entry then ran one frame old: docs/run-output.md).
    let misses = o["misses"].as_u64().unwrap_or(u64::MAX);
    let what = format!(
        "guaranteed misses {misses} ({late} late planner slots; {} jobs lost {} units to the \
         platform that no free slot could give back)",
        o["lost"], o["lost_units"]
    );
    if late > 0 {
        c.check_timing(misses == 0, what);
    } else {
        c.check(misses == 0, what);
    }
    let cpu1 = pc::on_cpu(trace);
    let last = cpu1.iter().map(|r| r.slot).max().unwrap_or(0);
    // the first second (attach, settle of the loop) is not judged
    let from = 100.min(last);
    let n = recorded(&cpu1, from, last + 1);
    // tt-a's jobs end within their first slots: the slots decided for them beyond the lead
    // are rewritten to be work before they start. (tt-b's 2 slots are both decided before its
    // first ends, so its records keep their owner; its reclaim is in the planner's figures.)
    let got = owned(&cpu1, "tt-a", from, last + 1);
    let static_share = (0.7 * n as f64).round() as u64;
    check_owners(
        c,
        late,
        got < static_share,
        format!(
            "tt-a owns {got} of {n} recorded slots, below its static share {static_share} \
             (reclaimed slots went to be work)"
        ),
    );
    let acc = accepted(c, out, RUN, REQUESTS);
    let mut short = Vec::new();
    let mut after_end = Vec::new();
    for &(f, d) in &acc {
        // a job due after the run's last recorded slot had no chance to run whole
        if d > last + 1 {
            after_end.push((f, d));
            continue;
        }
        let got = owned_delivered(&cpu1, "tt-f", f, d);
        if got != FIRM_WCET {
            short.push(format!("[{f}, {d}): {got}"));
        }
    }
    check_owners(
        c,
        late,
        short.is_empty(),
        format!(
            "each of {} accepted firm jobs owns exactly {FIRM_WCET} tt-f slots before its deadline (completion none; wrong: {short:?}; due after the run's last slot {last}, not judged: {after_end:?})",
            acc.len() - after_end.len()
        ),
    );
    replay(c, out);
    out.check_clean_exit(c, RUN);
    out.check_results(c, &[("socket_left", "no")]);
}

/// The run `reclaim` (planner_reclaim.json): tt-a owns 80 of every 100 slots, its jobs run 10 %
/// of that and yield; once per period, at phase ~30 (the guest reads the slot from `ctl
/// status`), a firm job of 25 slots due in 40 is asked for tt-f. Under the worst case 20 slots
/// are free before such a deadline, so the worst-case twin rejects every request; with tt-a's
/// completion observed about 70 are. Judged: requests rejected by the twin are accepted by the
/// closed loop (at least half of those sent: timing, a host stall can push a request past phase
/// 60 where it no longer gains), the closed loop's free capacity above the twin's, every
/// accepted job's 25 slots owned by tt-f before its deadline in the kernel's records, no
/// guaranteed miss, conformance of the replay.
fn check_reclaim(c: &mut Checks, out: &VmOutput) {
    let s = match out.summary(&format!("{RECLAIM}.json")) {
        Ok(s) => s,
        Err(e) => return c.check(false, format!("{RECLAIM}: summary: {e}")),
    };
    s.print("planner_reclaim.json under --planner bss, loop closed");
    let trace: Vec<SlotRecord> = out
        .records(&format!("{RECLAIM}.trace.jsonl"))
        .unwrap_or_else(|e| {
            c.check(false, format!("{RECLAIM}: trace: {e}"));
            Vec::new()
        });
    let late = pc::check_summary(c, &s, None, &[]);
    let text = out.file(&format!("{RECLAIM}.json")).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let o = &json["planner_observations"];
    println!("--- {RECLAIM}: planner_observations {o}");
    let misses = o["misses"].as_u64().unwrap_or(u64::MAX);
    let what = format!("{RECLAIM}: guaranteed misses {misses} ({late} late planner slots)");
    if late > 0 {
        c.check_timing(misses == 0, what);
    } else {
        c.check(misses == 0, what);
    }
    let acc = accepted(c, out, RECLAIM, RECLAIM_REQUESTS);
    let sent = (0..RECLAIM_REQUESTS)
        .filter(|k| out.rc(&format!("{RECLAIM}_f{k}")) != "?")
        .count();
    c.check(
        sent >= 3,
        format!("{RECLAIM}: {sent} firm requests sent (>= 3)"),
    );
    let cpu1 = pc::on_cpu(&trace);
    let last = cpu1.iter().map(|r| r.slot).max().unwrap_or(0);
    let mut short = Vec::new();
    for &(f, d) in &acc {
        let got = if d > last + 1 {
            None
        } else {
            Some(owned_delivered(&cpu1, "tt-f", f, d))
        };
        if got.is_some_and(|g| g != RECLAIM_WCET) {
            short.push(format!("[{f}, {d}): {got:?}"));
        }
    }
    check_owners(
        c,
        late,
        short.is_empty(),
        format!(
            "{RECLAIM}: each of {} accepted firm jobs owns exactly {RECLAIM_WCET} tt-f slots \
             before its deadline in the kernel's records (wrong: {short:?})",
            acc.len()
        ),
    );
    let text = pc::conformance(c, out, &reclaim_plan_path(), RECLAIM, 400);
    let (closed_free, worst_free, only) = twin(&text, RECLAIM_WCET);
    println!(
        "--- {RECLAIM}: {only} of {sent} firm requests accepted only with reclaim (free slots \
         before the deadlines, capped at the WCET: closed {closed_free}, worst case {worst_free})"
    );
    c.check_timing(
        only >= 1 && 2 * only >= sent,
        format!(
            "{RECLAIM}: {only} of {sent} firm requests rejected by the worst case were accepted \
             with reclaim (>= 1 and >= half)"
        ),
    );
    c.check_timing(
        closed_free > worst_free,
        format!(
            "{RECLAIM}: free capacity before the deadlines with observations {closed_free} > \
             worst case {worst_free}"
        ),
    );
    out.check_clean_exit(c, RECLAIM);
    let mut b = Bounds::default();
    let log = out.file("tt-a.reclaim.jobs").unwrap_or_default();
    let w = done_windows(&log, 1_000_000_000);
    println!("--- {RECLAIM}: tt-a: {} jobs in its log", w.len());
    c.check(!w.is_empty(), "tt-a.reclaim.jobs lists its jobs".into());
    b.done.insert("tt-a".to_string(), w);
    crate::witness::check(c, out, RECLAIM, &b);
}

/// Windows `[finish, next release)` of the jobs in a tt_jobs log (`release finish exec` per
/// line, ns): the task's job is over there by its own account. The next release is the first
/// point of the task's release grid (the first release plus whole periods) after the finish:
/// a job that ran past its period yields into a period whose job the planner starts at its
/// next job-start slot, not at once.
/// Slots of `task` in `[from, to)` in the records, less those lost to a tick more than a slot
/// late (its `late_ns` >= the slot: the slot never ran its owner; the planner observes the loss
/// and gives the job another slot, so counting both would count the job's slot twice; seen in
/// a fresh-clone CI run: slot 144 lost, 166 given, 26 counted).
fn owned_delivered(records: &[&SlotRecord], task: &str, from: u64, to: u64) -> u64 {
    let slot_ns = 10_000_000; // planner_loop.json and planner_reclaim.json: 10 ms slots
    let lost: Vec<&SlotRecord> = records
        .iter()
        .copied()
        .filter(|r| r.late_ns.is_some_and(|l| l >= slot_ns))
        .collect();
    owned(records, task, from, to) - owned(&lost, task, from, to)
}

/// The windows in which tt_jobs' task has no pending job by its own log: from each logged
/// finish to the next release, and from the release after the last logged job on (that job's
/// line is written at the next release, which the run's end cuts: its end is unknown, so it is
/// not judged; seen in a fresh-clone CI run: be started at slot 1009 after tt-a's last job
/// had yielded at 1008).
fn done_windows(text: &str, period_ns: u64) -> Vec<(u64, u64)> {
    let jobs: Vec<(u64, u64)> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().map(|x| x.parse::<u64>().ok());
            Some((w.next()??, w.next()??))
        })
        .collect();
    let Some(&(first, _)) = jobs.first() else {
        return Vec::new();
    };
    let period = period_ns.max(1);
    let mut w: Vec<(u64, u64)> = jobs
        .iter()
        .map(|&(_, finish)| {
            let k = finish.saturating_sub(first) / period + 1;
            (finish, first + k * period)
        })
        .collect();
    if let Some(&(_, next)) = w.last() {
        w.push((next, u64::MAX));
    }
    w
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn the_closed_loop_reclaims_early_completions_and_the_replay_conforms() {
    Vm::new("planner_loop")
        .smp(2)
        .timeout_s(400)
        .check(|out, c| {
            out.print_file(&format!("{RUN}.out"));
            let s = match out.summary(&format!("{RUN}.json")) {
                Ok(s) => s,
                Err(e) => return c.check(false, format!("summary: {e}")),
            };
            s.print("planner_loop.json under --planner bss, loop closed");
            let trace: Vec<SlotRecord> =
                out.records(&format!("{RUN}.trace.jsonl"))
                    .unwrap_or_else(|e| {
                        c.check(false, format!("trace: {e}"));
                        Vec::new()
                    });
            check_run(c, out, &s, &trace);
            // tt-a yields when its job is done and then spins runnable to its next release:
            // the witness learns those windows from tt_jobs' own log, not from scx_tt
            let mut b = Bounds::default();
            for (task, period_ns) in [("tt-a", 100_000_000), ("tt-b", 200_000_000)] {
                let log = out.file(&format!("{task}.jobs")).unwrap_or_default();
                let w = done_windows(&log, period_ns);
                println!("--- {task}: {} jobs in its log", w.len());
                c.check(!w.is_empty(), format!("{task}.jobs lists its jobs"));
                b.done.insert(task.to_string(), w);
            }
            check_carried(c, out);
            crate::witness::check(c, out, RUN, &b);
            check_reclaim(c, out);
        });
}

/// tt-a's yields taken as the end of a job that overran (`jobs_carried`, docs/plan-format.md):
/// at most its jobs that finished after their period (a job in step is done by its own yield;
/// exact). A carry taken when none overran leaves tt-a never done again (it spins to its next
/// release): before the rule took the run loop's start-up as an overrun, all 84 of its yields
/// here were carried and nothing was reclaimed.
fn check_carried(c: &mut Checks, out: &VmOutput) {
    let v: serde_json::Value = match out.json(&format!("{RUN}.json")) {
        Ok(v) => v,
        Err(e) => return c.check(false, format!("summary: {e}")),
    };
    let carried = v["tasks"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "tt-a"))
        .and_then(|t| t["jobs_carried"].as_u64());
    let log = out.file("tt-a.jobs").unwrap_or_default();
    let late = log
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let n: Vec<u64> = l
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            (n.len() == 3).then(|| n[1] >= n[0] + 100_000_000)
        })
        .filter(|&late| late)
        .count() as u64;
    c.check(
        carried.is_some_and(|n| n <= late),
        format!(
            "tt-a: jobs_carried {carried:?} <= {late}, its jobs that finished after their period"
        ),
    );
}

#[test]
fn done_windows_run_from_a_jobs_finish_to_the_next_release() {
    let log = "100 130 30\n200 260 60\n300 420 90\n";
    // the third job ran past its period: its window ends at the grid point after its finish
    // and the job after the last line is not judged
    assert_eq!(
        done_windows(log, 100),
        vec![(130, 200), (260, 300), (420, 500), (500, u64::MAX)]
    );
}

#[test]
fn twin_reads_the_free_slots_of_both_verdicts() {
    let text = "admit_firm at slot 149: closed loop accepted (due 189), worst case rejected (20 of 25 slots free): accepted only with reclaim\n\
                admit_firm at slot 476: closed loop rejected (4 of 5 slots free), worst case rejected (3 of 5 slots free)\n\
                admit_firm at slot 533: closed loop accepted (due 543), worst case accepted (due 543)\n";
    // capped at the WCET 25: 25 + 4 + 25 closed, 20 + 3 + 25 worst case
    assert_eq!(twin(text, 25), (54, 48, 1));
}

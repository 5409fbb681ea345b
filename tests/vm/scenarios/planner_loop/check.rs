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
//!   no miss (timing: platform losses given back from promised spare capacity, see below);
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

use crate::harness::{repo, Checks, Summary, Vm, VmOutput};
use crate::planner_checks::{self as pc, check_owners, owned, recorded};
use crate::witness::Bounds;
use scx_tt::trace::SlotRecord;

const RUN: &str = "closed";
const FIRM_WCET: u64 = 5;
const REQUESTS: usize = 16;
/// Share of the slots whose observation the planner must have applied (TCG: a tick may come
/// late enough that its slot is reconciled with the worst case instead).
const MIN_OBSERVED_PCT: f64 = 90.0;

fn plan_path() -> std::path::PathBuf {
    repo().join("tests/vm/scenarios/planner_loop/planner_loop.json")
}

/// (first_slot, deadline_slot) of every accepted firm job.
fn accepted(c: &mut Checks, out: &VmOutput) -> Vec<(u64, u64)> {
    let mut acc = Vec::new();
    let (mut yes, mut no) = (0, 0);
    for k in 0..REQUESTS {
        let name = format!("{RUN}_f{k}");
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
    println!("--- firm admissions: {yes} accepted, {no} rejected of {REQUESTS}");
    acc
}

/// Conformance of the run's planner log with its trace (`planner_checks::conformance`), and
/// the firm admissions of the replay against its worst-case twin.
fn replay(c: &mut Checks, out: &VmOutput) {
    let text = pc::conformance(c, out, &plan_path(), RUN, 400);
    // the free capacity the closed loop saw against its worst-case twin, request by request
    let (mut closed_free, mut worst_free, mut only) = (0i64, 0i64, 0);
    for l in text.lines().filter(|l| l.starts_with("admit_firm at slot")) {
        let free = |part: &str| -> i64 {
            if part.contains("accepted") {
                FIRM_WCET as i64
            } else {
                part.split('(')
                    .nth(1)
                    .and_then(|t| t.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0)
            }
        };
        let (a, b) = l.split_once(", worst case ").unwrap_or((l, ""));
        closed_free += free(a).min(FIRM_WCET as i64);
        worst_free += free(b).min(FIRM_WCET as i64);
        only += usize::from(l.ends_with("accepted only with reclaim"));
    }
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
    // No guaranteed job misses. Judged as timing: a slot the planner decided late runs the
    // entry one frame old (docs/run-output.md, planner_late_slots), and time the platform took
    // from an available owner (kick latency, kthreads: 0.3-0.5 ms at many job starts under TCG)
    // is given back to the job from spare capacity that admissions may already have promised
    // (`CpuState::uncredit`, docs/planner.md "Limits"): a platform loss, not a wrong decision.
    // Seen in 1 of ~15 runs (CI, 2026-11-23: 1 miss, 0 late slots, 47 partly used slots);
    // a measurement with a miss is repeated.
    let misses = o["misses"].as_u64().unwrap_or(u64::MAX);
    c.check_timing(
        misses == 0,
        format!("guaranteed misses {misses} ({late} late planner slots)"),
    );
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
    let acc = accepted(c, out);
    let mut short = Vec::new();
    let mut after_end = Vec::new();
    for &(f, d) in &acc {
        // a job due after the run's last recorded slot had no chance to run whole
        if d > last + 1 {
            after_end.push((f, d));
            continue;
        }
        let got = owned(&cpu1, "tt-f", f, d);
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

/// Windows `[finish, next release)` of the jobs in a tt_jobs log (`release finish exec` per
/// line, ns): the task's job is over there by its own account. The next release is the first
/// point of the task's release grid (the first release plus whole periods) after the finish:
/// a job that ran past its period yields into a period whose job the planner starts at its
/// next job-start slot, not at once.
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
    jobs.iter()
        .map(|&(_, finish)| {
            let k = finish.saturating_sub(first) / period + 1;
            (finish, first + k * period)
        })
        .collect()
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn the_closed_loop_reclaims_early_completions_and_the_replay_conforms() {
    Vm::new("planner_loop")
        .smp(2)
        .timeout_s(300)
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
            crate::witness::check(c, out, RUN, &b);
        });
}

#[test]
fn done_windows_run_from_a_jobs_finish_to_the_next_release() {
    let log = "100 130 30\n200 260 60\n300 420 90\n";
    // the third job ran past its period: its window ends at the grid point after its finish
    assert_eq!(
        done_windows(log, 100),
        vec![(130, 200), (260, 300), (420, 500)]
    );
}

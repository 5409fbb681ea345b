//! How long the planner lock is held: one `step` of the kernel path (`KernelPlanner::advance` of
//! one slot), one firm admission, one periodic admission and one removal, at frames of 10^3 to
//! 10^6 slots (one CPU, a job every 4 slots: `frame / 4` jobs and about as many capacity
//! intervals per frame). An admission holds the lock for its whole run, so these are the times a
//! slot decision waited behind it before admissions were decoupled from the slot decisions
//! (docs/planner.md, "Admissions and slot decisions"; `planner::shared`). The effect of the
//! decoupling on the planner thread (late slots, its longest wait, under a stream of admissions,
//! next to the plain lock in the same run) is measured by the test
//! `planner::shared::tests::a_stream_of_admissions_never_makes_a_slot_decision_late`.
//!
//! `cargo bench --no-default-features --bench planner_latency`

#[path = "planner_common.rs"]
mod common;

use scx_tt::planner::kernel_path::{FirmJob, KernelPathConfig, KernelPlanner, PeriodicTask};
use scx_tt::planner::{Freqs, Policy};
use std::hint::black_box;
use std::time::Instant;

const FRAMES: [u64; 4] = [1_000, 10_000, 100_000, 1_000_000];
const SLOT_NS: u64 = 1_000_000;
const LEAD: u64 = 2;

/// A kernel-path planner of one CPU with `frame / 4` jobs, plan task 0 being `"start":
/// "admitted"` (no instances) and the plan tasks 1.. the frame's jobs; stepped to a third of the
/// first frame.
fn planner(frame: u64) -> KernelPlanner {
    let inputs = common::cpus(1, frame / 4, frame);
    let nr_tasks = inputs[0].jobs.len() + 1;
    let mut inputs = inputs;
    for j in &mut inputs[0].jobs {
        j.task += 1;
    }
    let cfg = KernelPathConfig {
        policy: Policy::Bss,
        lead: LEAD,
        frame_slots: frame,
        slot_ns: SLOT_NS,
        freqs: Freqs::max_only(),
    };
    let table = vec![scx_tt::abi::NO_TASK; frame as usize];
    let mut p = KernelPlanner::new(&inputs, nr_tasks, cfg, table).expect("valid");
    p.advance(Some(frame / 3)).expect("in order");
    p
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// Times of one step, of firm admissions (typical and the longest, a rejection that walks every
/// interval), of one periodic admission and one removal; per item (`size_items`: intervals,
/// live jobs and template jobs), the rate `planner::shared::NS_PER_ITEM` estimates holds with.
fn costs(frame: u64) {
    let mut p = planner(frame);
    let mut cur = frame / 3;
    // steps: one slot each
    let mut steps: Vec<u64> = (0..2_000)
        .map(|_| {
            cur += 1;
            let t0 = Instant::now();
            black_box(p.advance(Some(cur)).expect("in order"));
            t0.elapsed().as_nanos() as u64
        })
        .collect();
    let (smean, _, s999) = common::stats(&mut steps);
    let smax = *steps.last().unwrap_or(&0);
    // firm admissions, deadlines spread over the horizon
    let mut firm: Vec<u64> = (0..40u64)
        .map(|k| {
            let job = FirmJob {
                task: 0,
                cpu: 0,
                wcet: 1 + k % 2,
                deadline_slots: 20 + (k * 7919) % (frame + frame / 2),
            };
            let t0 = Instant::now();
            black_box(p.admit_firm(&job, cur));
            t0.elapsed().as_nanos() as u64
        })
        .collect();
    common::stats(&mut firm);
    let fmed = common::median(&firm);
    let fmax = *firm.last().unwrap_or(&0);
    // the longest firm test: more slots than are free before the horizon end, so the
    // acceptance test walks every interval (a rejection)
    let items = p.size_items();
    let worst = FirmJob {
        task: 0,
        cpu: 0,
        wcet: 2 * frame,
        deadline_slots: 2 * frame,
    };
    let t0 = Instant::now();
    black_box(p.admit_firm(&worst, cur));
    let walk = t0.elapsed().as_nanos() as u64;
    // a periodic task of 1 slot every frame/10, then its removal
    let t = PeriodicTask::implicit(0, 0, frame / 10, 1);
    let t0 = Instant::now();
    let outcome = black_box(p.admit_periodic(&t));
    let periodic = t0.elapsed().as_nanos() as u64;
    let t0 = Instant::now();
    black_box(p.remove(0));
    let remove = t0.elapsed().as_nanos() as u64;
    let accepted = matches!(
        outcome,
        scx_tt::planner::kernel_path::PeriodicOutcome::Accepted { .. }
    );
    let per_item = |ns: u64| ns as f64 / items.max(1) as f64;
    println!(
        "  frame {frame:>9} ({items:>7} items): step mean {smean:>4.0} ns p99.9 {s999:>5} ns max {smax:>6} ns | firm admission median {} max {} | firm rejection walking every interval {} ({:.1} ns/item) | periodic admission {} ({}, {:.1} ns/item) | remove {} ({:.1} ns/item)",
        ms(fmed),
        ms(fmax),
        ms(walk),
        per_item(walk),
        ms(periodic),
        if accepted { "accepted" } else { "rejected" },
        per_item(periodic),
        ms(remove),
        per_item(remove),
    );
}

fn main() {
    common::header("planner_latency");
    println!(
        "lock hold per operation, 1 CPU, a job every 4 slots, bss, lead {LEAD}, slot {} us:",
        SLOT_NS / 1000
    );
    for frame in FRAMES {
        costs(frame);
    }
}

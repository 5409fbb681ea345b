//! Admission latency (acceptance test + guarantee routine) next to a full table regeneration
//! (EDF table and capacity intervals re-synthesised for the whole frame with the new job, as a
//! system without slot shifting must), both measured in this run; goal ratio ≥ 100×.
//!
//! Two pairs per configuration:
//! - a firm job for a named CPU vs regenerating that CPU's frame;
//! - a firm job for any CPU (negotiation over every CPU, least loaded first) vs regenerating the
//!   frames of every CPU (the node-wide synthesis).
//!
//! `cargo bench --no-default-features --bench planner_admission`

#[path = "planner_common.rs"]
mod common;

use scx_tt::planner::offline::{self, Job};
use scx_tt::planner::{Admission, Freqs, Planner, PlannerConfig, Policy};
use std::hint::black_box;
use std::time::Instant;

const TRIES: u64 = 300;

fn regenerate(frames: &[Vec<Job>], frame: u64, new: &Job, target: usize) {
    for (i, jobs) in frames.iter().enumerate() {
        let mut all = jobs.clone();
        if i == target {
            all.push(new.clone());
        }
        black_box(offline::edf(&all, frame).ok());
        black_box(offline::intervals(&all, frame));
    }
}

fn run(cpus: usize, frame: u64, jobs: u64) {
    let cfg = PlannerConfig {
        policy: Policy::Bss,
        freqs: Freqs::max_only(),
        slot_ns: 1_000_000,
    };
    let inputs = common::cpus(cpus, jobs, frame);
    let frames: Vec<Vec<Job>> = inputs.iter().map(|c| c.jobs.clone()).collect();
    let mut p = Planner::new(&inputs, frame, cfg);
    for s in 0..frame / 3 {
        p.step(s, &[]).expect("in order");
    }
    let now = p.now();
    let args = |k: u64| {
        let wcet = 1 + k % 2;
        let deadline = now + 20 + (k * 37) % (frame - 20);
        let new = Job {
            task: 10_000,
            instance: 0,
            release: now % frame,
            deadline: (deadline % frame).max(now % frame + 1),
            wcet,
        };
        (wcet, deadline, (k as usize * 7) % cpus, new)
    };
    // Batch timing (one clock read per 300 operations): no timer overhead in the ratio.
    let mut p_batch = p.clone();
    let t0 = Instant::now();
    for k in 0..TRIES {
        let (wcet, deadline, target, _) = args(k);
        black_box(p_batch.admit_firm(10_000 + k as usize, wcet, deadline, Some(target)));
    }
    let batch_adm = t0.elapsed().as_nanos() as f64 / TRIES as f64;
    let t0 = Instant::now();
    for k in 0..TRIES {
        let (_, _, target, new) = args(k);
        regenerate(&frames[target..=target], frame, &new, 0);
    }
    let batch_regen = t0.elapsed().as_nanos() as f64 / TRIES as f64;
    // Per operation: admissions accumulate on two copies of the same state.
    let mut p_named = p.clone();
    let mut p_any = p;
    let (mut named, mut any, mut regen_one, mut regen_all) = (vec![], vec![], vec![], vec![]);
    // Each kind in its own loop, so that one does not evict the other's data from the caches.
    let mut accepted = 0;
    for k in 0..TRIES {
        let (wcet, deadline, target, _) = args(k);
        let t0 = Instant::now();
        let a = p_named.admit_firm(10_000 + k as usize, wcet, deadline, Some(target));
        named.push(t0.elapsed().as_nanos() as u64);
        accepted += matches!(a, Admission::Accepted { .. }) as u32;
        black_box(a);
    }
    for k in 0..TRIES {
        let (wcet, deadline, _, _) = args(k);
        let t0 = Instant::now();
        black_box(p_any.admit_firm(20_000 + k as usize, wcet, deadline, None));
        any.push(t0.elapsed().as_nanos() as u64);
    }
    for k in 0..TRIES {
        let (_, _, target, new) = args(k);
        let t0 = Instant::now();
        regenerate(&frames[target..=target], frame, &new, 0);
        regen_one.push(t0.elapsed().as_nanos() as u64);
    }
    for k in 0..TRIES {
        let (_, _, target, new) = args(k);
        let t0 = Instant::now();
        regenerate(&frames, frame, &new, target);
        regen_all.push(t0.elapsed().as_nanos() as u64);
    }
    let (nm, _, n999) = common::stats(&mut named);
    let (am, _, a999) = common::stats(&mut any);
    let (r1m, _, _) = common::stats(&mut regen_one);
    let (ram, _, _) = common::stats(&mut regen_all);
    let (n50, a50) = (common::median(&named), common::median(&any));
    let (r150, ra50) = (common::median(&regen_one), common::median(&regen_all));
    println!("{cpus:>3} CPUs frame {frame:>4} jobs/CPU {jobs:>4} ({accepted}/{TRIES} accepted)");
    println!(
        "    named CPU: admission median {n50:>7} mean {nm:>8.0} p99.9 {n999:>8} ns | regenerate 1 CPU median {r150:>8} mean {r1m:>9.0} ns | ratio of medians {:>6.1}x [goal >= 100x]",
        r150 as f64 / n50.max(1) as f64
    );
    println!(
        "    named CPU, batch of {TRIES}: admission {batch_adm:>7.0} ns/op | regenerate 1 CPU {batch_regen:>9.0} ns/op | ratio {:>6.1}x [goal >= 100x]",
        batch_regen / batch_adm
    );
    println!(
        "    any CPU:   admission median {a50:>7} mean {am:>8.0} p99.9 {a999:>8} ns | regenerate node  median {ra50:>8} mean {ram:>9.0} ns | ratio of medians {:>6.1}x [goal >= 100x]",
        ra50 as f64 / a50.max(1) as f64
    );
}

fn main() {
    common::header("planner_admission");
    for (cpus, frame, jobs) in [
        (1, 1000, 100),
        (15, 1000, 100),
        (1, 2000, 1000),
        (15, 2000, 1000),
        (64, 500, 10),
    ] {
        run(cpus, frame, jobs);
    }
}

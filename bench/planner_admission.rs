//! Admission latency (acceptance test + guarantee routine) next to a full table regeneration
//! (EDF table and capacity intervals re-synthesised for the whole frame with the new job, as a
//! system without slot shifting must), both measured in this run; goal ratio ≥ 100×.
//!
//! `cargo bench --no-default-features --bench planner_admission`

#[path = "planner_common.rs"]
mod common;

use scx_tt::planner::offline::{self, Job};
use scx_tt::planner::{Admission, Freqs, Planner, PlannerConfig, Policy};
use std::hint::black_box;
use std::time::Instant;

fn run(cpus: usize, frame: u64, jobs: u64) {
    let cfg = PlannerConfig {
        policy: Policy::Bss,
        freqs: Freqs::max_only(),
        slot_ns: 1_000_000,
    };
    let inputs = common::cpus(cpus, jobs, frame);
    let mut p = Planner::new(&inputs, frame, cfg);
    for s in 0..frame / 3 {
        p.step(s, &[]).expect("in order");
    }
    let now = p.now();
    let (mut adm, mut regen) = (Vec::new(), Vec::new());
    let mut accepted = 0;
    for k in 0..300u64 {
        let wcet = 1 + k % 3;
        let deadline = now + 20 + (k * 37) % (frame - 20);
        let mut q = p.clone();
        let t0 = Instant::now();
        let a = q.admit_firm(10_000, wcet, deadline, None);
        adm.push(t0.elapsed().as_nanos() as u64);
        accepted += matches!(a, Admission::Accepted { .. }) as u32;
        black_box(a);
        // Regeneration: the CPU's frame jobs plus the new job, table and intervals from scratch
        // (one CPU: the cheapest case for regeneration).
        let mut all: Vec<Job> = inputs[0].jobs.clone();
        all.push(Job {
            task: 10_000,
            instance: 0,
            release: now % frame,
            deadline: (deadline % frame).max(now % frame + 1),
            wcet,
        });
        let t0 = Instant::now();
        let table = offline::edf(&all, frame);
        let ivs = offline::intervals(&all, frame);
        regen.push(t0.elapsed().as_nanos() as u64);
        black_box((table, ivs));
    }
    let (am, _, a999) = common::stats(&mut adm);
    let (rm, _, r999) = common::stats(&mut regen);
    println!(
        "{cpus:>4} CPUs frame {frame:>5} jobs/CPU {jobs:>5}: admission mean {am:>8.0} ns p99.9 {a999:>8} ns | regeneration mean {rm:>10.0} ns p99.9 {r999:>10} ns | ratio {:>7.1}x [goal >= 100x] ({accepted}/300 accepted)",
        rm / am
    );
}

fn main() {
    println!("planner_admission on {}", common::machine());
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

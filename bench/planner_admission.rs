//! Admission latency (acceptance test + guarantee routine) next to a full table regeneration, as
//! a system without slot shifting must do for every new job, both measured in this run; goal
//! ratio ≥ 100×.
//!
//! Regeneration baselines, per CPU whose frame gets the new job:
//! - (a) synthesis: `offline::edf` + `offline::intervals` on the frame's jobs plus the new one
//!   (the EDF ranges and capacity intervals; what this bench measured first);
//! - (b) full: (a) plus the per-slot table the kernel path loads (`frame` entries, slot → task,
//!   filled from the EDF ranges as `SchedConfig::from_plan` does, into a reused buffer). This is
//!   "re-running the offline synthesis for the whole frame with the new job" of issue 4 and the
//!   baseline the goal is judged against;
//! - (c) table only: `offline::edf` + the per-slot table, without intervals (a system without
//!   slot shifting needs no intervals): the cheapest possible regeneration, shown for reference.
//!
//! Two settings per configuration: a firm job for a named CPU vs regenerating that CPU's frame;
//! a firm job for any CPU (negotiation over every CPU) vs regenerating every CPU's frame.
//! Admissions are timed per operation (median, includes ~20–40 ns of clock reads) and in one
//! batch of 300 (mean, no clock overhead). Each measurement starts from its own freshly built
//! planner: a clone would hold deques with no spare capacity, whose first insertions reallocate.
//!
//! `cargo bench --no-default-features --bench planner_admission`

#[path = "planner_common.rs"]
mod common;

use scx_tt::abi::NO_TASK;
use scx_tt::planner::offline::{self, Job};
use scx_tt::planner::runtime::CpuInput;
use scx_tt::planner::{Admission, Freqs, Placement, Planner, PlannerConfig, Policy};
use std::hint::black_box;
use std::time::Instant;

const TRIES: u64 = 300;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Regen {
    Synthesis,
    Full,
    TableOnly,
}

impl Regen {
    const ALL: [Regen; 3] = [Regen::Synthesis, Regen::Full, Regen::TableOnly];

    fn label(self) -> &'static str {
        match self {
            Regen::Synthesis => "(a) edf+intervals",
            Regen::Full => "(b) full: edf+intervals+table",
            Regen::TableOnly => "(c) edf+table",
        }
    }
}

/// Regenerates the frames of `frames` with `new` added to frame `target`; `table` is the reused
/// per-slot buffer (`frame` entries).
fn regenerate(
    how: Regen,
    frames: &[Vec<Job>],
    frame: u64,
    new: &Job,
    target: usize,
    table: &mut [u32],
) {
    for (i, jobs) in frames.iter().enumerate() {
        let mut all = jobs.clone();
        if i == target {
            all.push(new.clone());
        }
        let ranges = offline::edf(&all, frame);
        if how != Regen::TableOnly {
            black_box(offline::intervals(&all, frame));
        }
        if how != Regen::Synthesis {
            table.fill(NO_TASK);
            for r in ranges.iter().flatten() {
                table[r.start as usize..r.end as usize].fill(all[r.job].task as u32);
            }
            black_box(&*table);
        }
        black_box(ranges.ok());
    }
}

/// (wcet, absolute deadline, named CPU, the new job as a frame job) of try `k` at slot `now`.
fn request(k: u64, now: u64, frame: u64, cpus: usize) -> (u64, u64, usize, Job) {
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
}

/// A planner stepped to a third of the first frame.
fn fresh(inputs: &[CpuInput], frame: u64) -> Planner {
    let cfg = PlannerConfig {
        policy: Policy::Bss,
        freqs: Freqs::max_only(),
        slot_ns: 1_000_000,
    };
    let mut p = Planner::new(inputs, frame, cfg);
    for s in 0..frame / 3 {
        p.step(s, &[]).expect("in order");
    }
    p
}

/// Admits every request on a fresh planner: (per-op samples, accepted count, batch ns/op).
fn admissions(inputs: &[CpuInput], frame: u64, named: bool) -> (Vec<u64>, u32, f64) {
    let cpus = inputs.len();
    let cpu_of = |k: u64| named.then(|| request(k, 0, frame, cpus).2);
    let mut p = fresh(inputs, frame);
    let now = p.now();
    let mut samples = black_box(vec![1u64; TRIES as usize]);
    let mut accepted = 0;
    for (k, sample) in samples.iter_mut().enumerate() {
        let k = k as u64;
        let (wcet, deadline, _, _) = request(k, now, frame, cpus);
        let t0 = Instant::now();
        let a = p.admit_firm(
            10_000 + k as usize,
            wcet,
            deadline,
            Placement::prefer(cpu_of(k)),
        );
        *sample = t0.elapsed().as_nanos() as u64;
        accepted += matches!(a, Admission::Accepted { .. }) as u32;
        black_box(a);
    }
    let mut p = fresh(inputs, frame);
    let t0 = Instant::now();
    for k in 0..TRIES {
        let (wcet, deadline, _, _) = request(k, now, frame, cpus);
        black_box(p.admit_firm(
            10_000 + k as usize,
            wcet,
            deadline,
            Placement::prefer(cpu_of(k)),
        ));
    }
    let batch = t0.elapsed().as_nanos() as f64 / TRIES as f64;
    (samples, accepted, batch)
}

/// Regenerations for every request: (per-op median, batch ns/op).
fn regenerations(how: Regen, frames: &[Vec<Job>], frame: u64, now: u64, named: bool) -> (u64, f64) {
    let cpus = frames.len();
    let mut table = vec![NO_TASK; frame as usize];
    let mut samples = black_box(vec![1u64; TRIES as usize]);
    let one = |k: u64, table: &mut [u32]| {
        let (_, _, target, new) = request(k, now, frame, cpus);
        if named {
            regenerate(how, &frames[target..=target], frame, &new, 0, table);
        } else {
            regenerate(how, frames, frame, &new, target, table);
        }
    };
    for (k, sample) in samples.iter_mut().enumerate() {
        let t0 = Instant::now();
        one(k as u64, &mut table);
        *sample = t0.elapsed().as_nanos() as u64;
    }
    let t0 = Instant::now();
    for k in 0..TRIES {
        one(k, &mut table);
    }
    let batch = t0.elapsed().as_nanos() as f64 / TRIES as f64;
    samples.sort_unstable();
    (common::median(&samples), batch)
}

fn run(cpus: usize, frame: u64, jobs: u64) {
    let inputs = common::cpus(cpus, jobs, frame);
    let frames: Vec<Vec<Job>> = inputs.iter().map(|c| c.jobs.clone()).collect();
    let now = frame / 3;
    println!("{cpus:>3} CPUs frame {frame:>4} jobs/CPU {jobs:>4}");
    for named in [true, false] {
        let (mut adm, accepted, adm_batch) = admissions(&inputs, frame, named);
        let (am, _, a999) = common::stats(&mut adm);
        let a50 = common::median(&adm);
        let (what, regen_what) = if named {
            ("named CPU", "regenerate that CPU")
        } else {
            ("any CPU  ", "regenerate every CPU")
        };
        println!(
            "    {what}: admission median {a50:>6} mean {am:>7.0} p99.9 {a999:>7} ns, batch {adm_batch:>6.0} ns/op ({accepted}/{TRIES} accepted); {regen_what}:"
        );
        for how in Regen::ALL {
            let (r50, r_batch) = regenerations(how, &frames, frame, now, named);
            let ratio = r50 as f64 / a50.max(1) as f64;
            let ratio_batch = r_batch / adm_batch.max(1.0);
            let verdict = match (how, ratio >= 100.0) {
                (Regen::Full, true) => "  [goal >= 100x: met]",
                (Regen::Full, false) => "  [goal >= 100x: missed]",
                _ => "",
            };
            println!(
                "      {:<30} median {r50:>8} ns, batch {r_batch:>9.0} ns/op | ratio of medians {ratio:>6.1}x, of batches {ratio_batch:>6.1}x{verdict}",
                how.label()
            );
        }
    }
}

fn main() {
    common::header("planner_admission");
    println!(
        "(goal judged on (b), the ratio of per-operation medians; the admission median includes the clock reads)"
    );
    for (cpus, frame, jobs) in [
        (1, 500, 10),
        (1, 1000, 10),
        (1, 1000, 100),
        (15, 1000, 100),
        (1, 2000, 1000),
        (15, 2000, 1000),
        (64, 500, 10),
    ] {
        run(cpus, frame, jobs);
    }
}

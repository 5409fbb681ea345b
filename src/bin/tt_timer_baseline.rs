//! tt_timer_baseline: the userspace time-triggered baseline for the slot-start lateness
//! benchmark (bench/lateness.rs).
//!
//! Userspace time-triggered schedulers switch slots from a real-time thread: a SCHED_FIFO thread
//! pinned to a CPU sleeps with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until the next
//! slot boundary `t0 + k * slot`, wakes up, and (re)assigns the CPU. This program does exactly
//! the sleeping part and measures how late it wakes: lateness = `clock_gettime` right after the
//! wake-up minus the boundary. That is the best case for such a scheduler (it has not acted yet),
//! to be set against scx_tt's BPF slot timer, whose lateness is measured in the timer callback.
//!
//! Prints lateness min/p50/p99/max (and a histogram); `--json FILE` writes the same figures in
//! the shape of scx_tt's summary (`late_ns`, `late_hist`).

use anyhow::{bail, Context, Result};
use clap::Parser;
use scx_tt::clock::{monotonic_ns, sleep_until_ns};
use scx_tt::sched::affinity;
use serde::Serialize;
use std::path::PathBuf;

/// Measures the wake-up lateness of a SCHED_FIFO thread sleeping until each slot boundary.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Slot length in microseconds: the grid the thread wakes up on.
    #[arg(long, default_value_t = 10_000)]
    slot_us: u64,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 10)]
    duration_s: u64,
    /// CPU to pin the thread to (default: not pinned).
    #[arg(long)]
    cpu: Option<u32>,
    /// SCHED_FIFO priority (1-99).
    #[arg(long, default_value_t = 90)]
    fifo_priority: i32,
    /// Write the figures as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// After each wake-up, spin this many microseconds before sleeping again (must be shorter
    /// than the slot): an RT load that preempts whatever runs on the CPU, for the VM tests of
    /// what a scheduler does after a higher scheduling class took the CPU. 0: no spinning.
    #[arg(long, default_value_t = 0)]
    spin_us: u64,
}

/// Upper bounds of the histogram buckets, ns (the last bucket is open).
const HIST_LE_NS: [u64; 12] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000,
];

#[derive(Debug, PartialEq, Serialize)]
struct LateNs {
    min: u64,
    p50: u64,
    p99: u64,
    max: u64,
}

#[derive(Debug, PartialEq, Serialize)]
struct Bucket {
    /// Upper bound, ns; `None` for the open last bucket.
    le_ns: Option<u64>,
    count: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    slot_us: u64,
    cpu: Option<u32>,
    fifo_priority: i32,
    /// Boundaries the thread woke up for.
    ticks: u64,
    /// Boundaries that passed while the thread was still late for an earlier one.
    missed: u64,
    late_ns: LateNs,
    late_hist: Vec<Bucket>,
}

/// Nearest-rank percentile of sorted samples: the smallest sample with at least `p` percent of
/// the samples at or below it. `sorted` must be non-empty.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn summarize(samples: &mut [u64]) -> Option<LateNs> {
    samples.sort_unstable();
    Some(LateNs {
        min: *samples.first()?,
        p50: percentile(samples, 50.0),
        p99: percentile(samples, 99.0),
        max: *samples.last()?,
    })
}

fn histogram(samples: &[u64]) -> Vec<Bucket> {
    let mut hist: Vec<Bucket> = HIST_LE_NS
        .iter()
        .map(|&le| Bucket {
            le_ns: Some(le),
            count: 0,
        })
        .chain(std::iter::once(Bucket {
            le_ns: None,
            count: 0,
        }))
        .collect();
    for &s in samples {
        let i = HIST_LE_NS.partition_point(|&le| le < s);
        hist[i].count += 1;
    }
    hist
}

/// Pins the calling thread, makes it SCHED_FIFO and locks its memory, as an RT thread would.
fn become_rt(cpu: Option<u32>, priority: i32) -> Result<()> {
    if let Some(cpu) = cpu {
        affinity::set(&[cpu]).with_context(|| format!("pinning to CPU {cpu}"))?;
    }
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: param is valid for the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("setting SCHED_FIFO priority {priority} (needs root)"));
    }
    // SAFETY: no pointers involved.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        eprintln!(
            "tt_timer_baseline: warning: mlockall failed: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Wakes up on every slot boundary for `duration_ns`; returns the lateness samples and the
/// number of boundaries missed.
fn measure(slot_ns: u64, duration_ns: u64, spin_ns: u64) -> Result<(Vec<u64>, u64)> {
    let start = monotonic_ns();
    // The grid: multiples of the slot, like the BPF path's common slot grid; skip one slot so
    // the first sleep is a real one.
    let t0 = (start / slot_ns + 2) * slot_ns;
    let end = t0 + duration_ns;
    let mut samples = Vec::with_capacity((duration_ns / slot_ns) as usize + 1);
    let mut missed = 0;
    let mut boundary = t0;
    while boundary < end {
        sleep_until_ns(boundary);
        let late = monotonic_ns().saturating_sub(boundary);
        samples.push(late);
        let spin_end = boundary + late + spin_ns;
        while monotonic_ns() < spin_end {
            std::hint::spin_loop();
        }
        let late = monotonic_ns().saturating_sub(boundary);
        let next = boundary + slot_ns;
        let skipped = late / slot_ns;
        missed += skipped;
        boundary = next + skipped * slot_ns;
    }
    Ok((samples, missed))
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.slot_us == 0 || args.duration_s == 0 {
        bail!("--slot-us and --duration-s must be positive");
    }
    if !(1..=99).contains(&args.fifo_priority) {
        bail!("--fifo-priority {} is outside 1-99", args.fifo_priority);
    }
    if args.spin_us >= args.slot_us {
        bail!(
            "--spin-us {} must be shorter than --slot-us {}",
            args.spin_us,
            args.slot_us
        );
    }
    become_rt(args.cpu, args.fifo_priority)?;
    let (mut samples, missed) = measure(
        args.slot_us * 1000,
        args.duration_s * 1_000_000_000,
        args.spin_us * 1000,
    )?;
    let late_hist = histogram(&samples);
    let late_ns = summarize(&mut samples).context("no boundary was reached")?;
    println!(
        "tt_timer_baseline: slot {} us, cpu {}, SCHED_FIFO {}: {} ticks, {} missed; lateness us: \
         min {:.1} p50 {:.1} p99 {:.1} max {:.1}",
        args.slot_us,
        args.cpu.map_or("any".to_string(), |c| c.to_string()),
        args.fifo_priority,
        samples.len(),
        missed,
        us(late_ns.min),
        us(late_ns.p50),
        us(late_ns.p99),
        us(late_ns.max)
    );
    for b in &late_hist {
        let bound = b
            .le_ns
            .map_or("    inf".to_string(), |le| format!("{:>7.0}", us(le)));
        println!("  <= {bound} us: {}", b.count);
    }
    if let Some(path) = &args.json {
        let report = Report {
            slot_us: args.slot_us,
            cpu: args.cpu,
            fifo_priority: args.fifo_priority,
            ticks: samples.len() as u64,
            missed,
            late_ns,
            late_hist,
        };
        let text = serde_json::to_string(&report).context("encoding the report")?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let s: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&s, 50.0), 50);
        assert_eq!(percentile(&s, 99.0), 99);
        assert_eq!(percentile(&s, 100.0), 100);
        // 3 samples: p50 is the 2nd (rank ceil(1.5) = 2), p99 the 3rd.
        assert_eq!(percentile(&[10, 20, 30], 50.0), 20);
        assert_eq!(percentile(&[10, 20, 30], 99.0), 30);
        assert_eq!(percentile(&[7], 0.0), 7);
    }

    #[test]
    fn summarize_sorts_and_rejects_empty() {
        let mut s = vec![30, 10, 20];
        assert_eq!(
            summarize(&mut s),
            Some(LateNs {
                min: 10,
                p50: 20,
                p99: 30,
                max: 30
            })
        );
        assert_eq!(summarize(&mut []), None);
    }

    #[test]
    fn histogram_buckets_are_inclusive_upper_bounds() {
        // 1000 is <= 1 us; 1001 falls in <= 2 us; 6 ms is past the last bound (open bucket).
        let h = histogram(&[0, 1_000, 1_001, 6_000_000]);
        assert_eq!(h[0].count, 2);
        assert_eq!(h[1].count, 1);
        assert_eq!(h.last().map(|b| (b.le_ns, b.count)), Some((None, 1)));
        assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), 4);
    }
}

//! Shared by the planner benchmarks: synthetic CPUs and the machine description.

use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::CpuInput;

/// `n` feasible jobs in a frame of `frame` slots: job k is released at the start of segment k
/// (segments of `frame / n` slots), needs half a segment and is due 0–3 segments after its own
/// segment ends (pseudo-random, seeded): always EDF-feasible, with many distinct deadlines.
pub fn cpu_jobs(n: u64, frame: u64, seed: u64) -> Vec<Job> {
    let seg = frame / n;
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|k| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ext = x % 4;
            Job {
                task: k as usize,
                instance: 0,
                release: k * seg,
                deadline: ((k + 1 + ext) * seg).min(frame),
                wcet: (seg / 2).max(1),
            }
        })
        .collect()
}

pub fn cpus(count: usize, jobs: u64, frame: u64) -> Vec<CpuInput> {
    (0..count)
        .map(|c| CpuInput {
            jobs: cpu_jobs(jobs, frame, c as u64 + 1),
            has_be: false,
        })
        .collect()
}

/// "model name, kernel release" of this machine.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown kernel".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into());
    format!("{model} ({cores} CPUs), Linux {kernel}, load average {load}")
}

/// (mean, p99, p99.9) of `samples` in ns.
pub fn stats(samples: &mut [u64]) -> (f64, u64, u64) {
    samples.sort_unstable();
    let n = samples.len().max(1);
    let mean = samples.iter().sum::<u64>() as f64 / n as f64;
    let q = |p: f64| samples[((n as f64 * p) as usize).min(n - 1)];
    (mean, q(0.99), q(0.999))
}

/// Median of sorted `samples` (call after [`stats`]).
pub fn median(sorted: &[u64]) -> u64 {
    sorted.get(sorted.len() / 2).copied().unwrap_or(0)
}

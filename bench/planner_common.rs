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
    format!("{model} ({cores} CPUs), Linux {kernel}")
}

/// The 1, 5 and 15 minute load averages of /proc/loadavg.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|e| format!("unknown ({e})"))
}

/// Priority of the benchmark thread under SCHED_FIFO: above ordinary threaded IRQ handlers (50)
/// is not needed, above every SCHED_OTHER task is enough.
const FIFO_PRIORITY: i32 = 10;

/// Runs the calling thread the way the real planner runs on its housekeeping CPU: pinned to one
/// CPU (the last one online) and under SCHED_FIFO. Each part is done when permitted; the returned
/// line says what was done and, for what was not, why. Needs root (or CAP_SYS_NICE) for FIFO.
/// Under the kernel's RT throttling (`sched_rt_runtime_us`), other tasks still get their share.
/// The executor of a step cut into `threads` shards: `threads − 1` helper threads
/// (`scx_tt::planner::pool::StepPool`), each pinned to a CPU below the benchmark thread's and
/// SCHED_FIFO like it (when permitted), spinning for `spin` after each shard. Call it before
/// [`isolate`], so that the helpers start on the other CPUs.
#[allow(dead_code)]
pub fn step_pool(threads: usize, spin: std::time::Duration) -> scx_tt::planner::pool::StepPool {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    scx_tt::planner::pool::StepPool::new(threads.saturating_sub(1), spin, move |h| {
        if let Err(e) = pin(h % cpus.saturating_sub(1).max(1)) {
            eprintln!("step helper {h} not pinned: {e}");
        }
        let param = libc::sched_param {
            sched_priority: FIFO_PRIORITY,
        };
        // SAFETY: `param` lives across the call, which only reads it.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    })
    .expect("helper threads")
}

/// Pins the calling thread to `cpu`; `Err` with the reason.
fn pin(cpu: usize) -> Result<(), std::io::Error> {
    // SAFETY: `set` is a plain bit mask owned by this frame; the calls only read it.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    match r {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

pub fn isolate() -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = cpus - 1;
    let pinned = match pin(cpu) {
        Ok(()) => format!("pinned to CPU {cpu}"),
        Err(e) => format!("not pinned ({e})"),
    };
    let param = libc::sched_param {
        sched_priority: FIFO_PRIORITY,
    };
    // SAFETY: `param` lives across the call, which only reads it.
    let fifo = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    let fifo = if fifo == 0 {
        let rt = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into());
        format!("SCHED_FIFO priority {FIFO_PRIORITY} (RT throttling: {rt} us of every second)")
    } else {
        format!(
            "not SCHED_FIFO ({}), default policy",
            std::io::Error::last_os_error()
        )
    };
    format!("{pinned}, {fifo}")
}

/// Median ns of an empty timed region (`Instant::now` then `elapsed`): what every per-operation
/// sample includes on top of the operation.
pub fn clock_overhead_ns() -> u64 {
    let mut samples: Vec<u64> = (0..10_000)
        .map(|_| {
            let t0 = std::time::Instant::now();
            std::hint::black_box(());
            t0.elapsed().as_nanos() as u64
        })
        .collect();
    samples.sort_unstable();
    median(&samples)
}

/// Header lines every planner benchmark prints: machine, load, isolation, clock overhead.
pub fn header(name: &str) {
    println!("{name} on {}", machine());
    println!("load average at start: {}", load_average());
    println!("benchmark thread: {}", isolate());
    println!(
        "clock read overhead per timed sample: {} ns (median, included in every per-operation figure)",
        clock_overhead_ns()
    );
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

/// Writes an experiment's `STEM.txt` (its printed table) and `STEM.svg` (its plot) into `dir`
/// and says so. (Only the experiments write files; the other benchmarks include this module too.)
#[allow(dead_code)]
pub fn write_outputs(
    dir: &std::path::Path,
    stem: &str,
    report: &str,
    svg: &str,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let txt = dir.join(format!("{stem}.txt"));
    std::fs::write(&txt, report)?;
    std::fs::write(dir.join(format!("{stem}.svg")), svg)?;
    println!("wrote {} and {stem}.svg", txt.display());
    Ok(())
}

//! The start-up calibration of the default guard band (the OS side; the choice is
//! [`super::guard`]): before the scheduler attaches, one thread pinned to each managed CPU
//! (SCHED_FIFO priority 90 if the kernel permits, else SCHED_OTHER) sleeps with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to [`POINTS`] grid points [`GRID_NS`]
//! apart, all CPUs on the same grid, and measures how late it wakes up; a second thread per
//! CPU (SCHED_IDLE) spins meanwhile, so the timer interrupts a busy CPU, as the guard-band
//! event interrupts a running owner. This is the userspace timer baseline of the lateness
//! benchmark (`tt_timer_baseline`, docs/vm-harness.md "The lateness benchmark"), whose p99
//! was 1.0-1.1 times the BPF slot timer's in the test VM: a slight over-estimate of the
//! lateness the guard band has to cover.

use super::affinity;
use super::guard::Calibration;
use crate::accounting::LatenessStats;
use crate::clock::{monotonic_ns, sleep_until_ns};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Distance of the grid points.
pub const GRID_NS: u64 = 1_000_000;
/// Grid points per CPU: the calibration takes `POINTS * GRID_NS` (250 ms) plus two points.
pub const POINTS: u64 = 250;
/// SCHED_FIFO priority of the timer threads (the lateness benchmark's).
pub const FIFO_PRIORITY: i32 = 90;

/// What one CPU's timer thread measured.
struct CpuResult {
    late_ns: Vec<u64>,
    fifo: bool,
    /// From the first grid point to the last wake-up, ns.
    span_ns: u64,
}

/// A calibration under way: [`start`] it, do other start-up work, [`Running::finish`] it.
pub struct Running {
    cpus: Vec<u32>,
    timers: Vec<(u32, JoinHandle<std::io::Result<CpuResult>>)>,
    load: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

/// Starts the calibration on `cpus` with `points` grid points per CPU ([`POINTS`] in a run).
pub fn start(cpus: &[u32], points: u64) -> std::io::Result<Running> {
    let stop = Arc::new(AtomicBool::new(false));
    // the grid: multiples of GRID_NS from two points ahead (the threads start meanwhile)
    let first = (monotonic_ns() / GRID_NS + 2) * GRID_NS;
    let mut running = Running {
        cpus: cpus.to_vec(),
        timers: Vec::new(),
        load: Vec::new(),
        stop: stop.clone(),
    };
    for &cpu in cpus {
        let flag = stop.clone();
        running.load.push(
            std::thread::Builder::new()
                .name(format!("tt-calib-load{cpu}"))
                .spawn(move || spin(cpu, &flag))?,
        );
        running.timers.push((
            cpu,
            std::thread::Builder::new()
                .name(format!("tt-calib{cpu}"))
                .spawn(move || measure(cpu, first, points))?,
        ));
    }
    Ok(running)
}

impl Running {
    /// Waits for the measurement to end and summarises it.
    pub fn finish(mut self) -> std::io::Result<Calibration> {
        let mut stats = LatenessStats::default();
        let mut fifo = true;
        let mut span_ns = 0;
        let mut failed = None;
        for (cpu, t) in std::mem::take(&mut self.timers) {
            match t.join() {
                Ok(Ok(r)) => {
                    fifo &= r.fifo;
                    span_ns = span_ns.max(r.span_ns);
                    r.late_ns
                        .iter()
                        .for_each(|&l| stats.add(l.min(i64::MAX as u64) as i64));
                }
                Ok(Err(e)) => {
                    failed = Some(std::io::Error::new(e.kind(), format!("cpu {cpu}: {e}")))
                }
                Err(_) => {
                    failed = Some(std::io::Error::other(format!(
                        "cpu {cpu}: the timer thread panicked"
                    )))
                }
            }
        }
        self.stop_load();
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(Calibration {
            cpus: self.cpus.clone(),
            samples: stats.count(),
            fifo,
            duration_ms: span_ns / 1_000_000,
            late_ns: stats.quantiles(),
        })
    }

    fn stop_load(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for l in self.load.drain(..) {
            let _ = l.join();
        }
    }
}

impl Drop for Running {
    /// A calibration dropped unfinished (an error elsewhere): the spinning threads stop; the
    /// timer threads end by themselves within the calibration's length.
    fn drop(&mut self) {
        self.stop_load();
    }
}

/// The timer thread of `cpu`: pinned, SCHED_FIFO if permitted, wakes at `points` grid points
/// from `first`; a wake-up later than the next point skips the points already passed.
fn measure(cpu: u32, first: u64, points: u64) -> std::io::Result<CpuResult> {
    affinity::set(&[cpu])?;
    let param = libc::sched_param {
        sched_priority: FIFO_PRIORITY,
    };
    // SAFETY: param is valid for the call; 0 is the calling thread.
    let fifo = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
    let end = first + points * GRID_NS;
    let mut late_ns = Vec::with_capacity(points as usize);
    let mut point = first;
    while point < end {
        sleep_until_ns(point);
        let late = monotonic_ns().saturating_sub(point);
        late_ns.push(late);
        point += GRID_NS * (late / GRID_NS + 1);
    }
    let span_ns = monotonic_ns().saturating_sub(first);
    Ok(CpuResult {
        late_ns,
        fifo,
        span_ns,
    })
}

/// Keeps `cpu` busy at the lowest priority (SCHED_IDLE) until `stop`.
fn spin(cpu: u32, stop: &AtomicBool) {
    if affinity::set(&[cpu]).is_err() {
        return;
    }
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: param is valid for the call; 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    while !stop.load(Ordering::Relaxed) {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_calibration_on_an_allowed_cpu_measures_every_point() {
        let cpu = affinity::get()[0];
        let c = start(&[cpu], 20)
            .and_then(Running::finish)
            .expect("calibration");
        assert_eq!(c.cpus, vec![cpu]);
        // 20 points, fewer only when a wake-up came later than the next point
        assert!((1..=20).contains(&c.samples), "{c:?}");
        assert!(c.late_ns.min >= 0 && c.late_ns.min <= c.late_ns.p99);
        assert!(c.duration_ms >= 19, "{c:?}");
    }

    #[test]
    fn a_cpu_that_cannot_be_pinned_fails_naming_it() {
        let err = start(&[libc::CPU_SETSIZE as u32 + 7], 5)
            .and_then(Running::finish)
            .expect_err("no such cpu");
        assert!(err.to_string().contains("cpu 1031"), "{err}");
    }
}

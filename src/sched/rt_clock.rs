//! The helper-thread slot clock (src/bpf/tt_sched.bpf.c B.5): one SCHED_FIFO thread per
//! managed CPU, pinned there, sleeping with `clock_nanosleep(TIMER_ABSTIME)` to the expiry the
//! BPF side armed and then test-running the SEC("syscall") program `rt_tick` on that CPU. It
//! replaces the bpf_timer where the kernel's verifier refuses bpf_timer (PREEMPT_RT), or where
//! `--slot-clock rt` asks for it.
//!
//! The thread becomes SCHED_FIFO before it moves to its managed CPU, so it never runs there as a
//! sched_ext task (BPF never sees it: its time is no foreign time). A thread that fails (the
//! kernel refuses the policy, the affinity or a test run) ends and says why
//! ([`RtClock::failure`]); the BPF watchdog (ops.tick) ends the scheduler when a CPU's clock
//! event stays overdue, so the table is never left without its clock.

use crate::abi;
use crate::sched::affinity;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The longest single sleep: a stop request is seen within this.
const MAX_SLEEP_NS: u64 = 50_000_000;

/// What one CPU's clock thread did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockThreadStats {
    pub cpu: u32,
    /// `rt_tick` runs that ran an event.
    pub ticks: u64,
    /// `rt_tick` runs that came before the armed expiry (nothing ran).
    pub early: u64,
}

/// The running helper threads; dropping it stops and joins them.
pub struct RtClock {
    stop: Arc<AtomicBool>,
    threads: Vec<(u32, JoinHandle<Result<ClockThreadStats, String>>)>,
    failure: Arc<Mutex<Option<String>>>,
}

/// One test run of `rt_tick` for `cpu` (the calling thread must be pinned there).
fn run_tick(prog: &OwnedFd, arg: &mut abi::tt_tick_arg) -> Result<(), String> {
    let mut opts = libbpf_rs::libbpf_sys::bpf_test_run_opts {
        sz: size_of::<libbpf_rs::libbpf_sys::bpf_test_run_opts>() as _,
        // a syscall program's context is copied back to ctx_in (ctx_out must stay unset)
        ctx_in: (arg as *mut abi::tt_tick_arg).cast(),
        ctx_size_in: size_of::<abi::tt_tick_arg>() as u32,
        ..Default::default()
    };
    // SAFETY: the kernel reads and writes back the 16-byte context, which lives across the
    // call.
    let ret = unsafe { libbpf_rs::libbpf_sys::bpf_prog_test_run_opts(prog.as_raw_fd(), &mut opts) };
    if ret < 0 {
        return Err(format!(
            "test run of rt_tick: {}",
            std::io::Error::from_raw_os_error(-ret)
        ));
    }
    match opts.retval as i32 {
        0 => Ok(()),
        rc => Err(format!("rt_tick: {}", abi::arm_result_text(rc))),
    }
}

/// Sleeps to `until_ns` (CLOCK_MONOTONIC, absolute), at most [`MAX_SLEEP_NS`].
fn sleep_until(until_ns: u64) {
    let now = crate::clock::monotonic_ns();
    let until = until_ns.min(now.saturating_add(MAX_SLEEP_NS));
    let ts = libc::timespec {
        tv_sec: (until / 1_000_000_000) as libc::time_t,
        tv_nsec: (until % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; EINTR simply ends the sleep early (the caller loops).
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        );
    }
}

/// Makes the calling thread SCHED_FIFO at `prio`, then pins it to `cpu` (in that order: it
/// never runs on `cpu` as a sched_ext task).
fn become_clock_thread(cpu: u32, prio: u8) -> Result<(), String> {
    let param = libc::sched_param {
        sched_priority: i32::from(prio),
    };
    // SAFETY: plain syscall on the calling thread with a valid parameter.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(format!(
            "SCHED_FIFO priority {prio}: {}",
            std::io::Error::last_os_error()
        ));
    }
    affinity::set(&[cpu]).map_err(|e| format!("pinning to CPU {cpu}: {e}"))
}

fn clock_thread(
    cpu: u32,
    prio: u8,
    prog: OwnedFd,
    stop: &AtomicBool,
) -> Result<ClockThreadStats, String> {
    become_clock_thread(cpu, prio)?;
    let mut stats = ClockThreadStats {
        cpu,
        ..Default::default()
    };
    let mut arg = abi::tt_tick_arg {
        cpu: cpu as i32,
        ticked: 0,
        next_ns: 0,
    };
    // the first run only reads the expiry arm_timer set (slot 0's boundary, or later)
    run_tick(&prog, &mut arg)?;
    while !stop.load(Ordering::Relaxed) {
        let next = arg.next_ns;
        if crate::clock::monotonic_ns() < next {
            sleep_until(next);
            if crate::clock::monotonic_ns() < next {
                continue;
            }
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        run_tick(&prog, &mut arg)?;
        if arg.ticked != 0 {
            stats.ticks += 1;
        } else {
            stats.early += 1;
        }
    }
    Ok(stats)
}

impl RtClock {
    /// Starts one clock thread per CPU of `cpus`, at SCHED_FIFO priority `prio`; `prog` is
    /// `rt_tick` (duplicated per thread). Call it after `arm_timer` ran for every CPU.
    pub fn start(cpus: &[u32], prio: u8, prog: &OwnedFd) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let failure = Arc::new(Mutex::new(None));
        let mut clock = RtClock {
            stop: stop.clone(),
            threads: Vec::new(),
            failure: failure.clone(),
        };
        for &cpu in cpus {
            let fd = prog.try_clone()?;
            let (stop, failure) = (stop.clone(), failure.clone());
            let handle = std::thread::Builder::new()
                .name(format!("tt-clock/{cpu}"))
                .spawn(move || {
                    let r = clock_thread(cpu, prio, fd, &stop);
                    if let Err(e) = &r {
                        let msg = format!("slot clock thread of CPU {cpu}: {e}");
                        eprintln!("scx_tt: error: {msg}");
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(msg);
                        }
                    }
                    r
                })?;
            clock.threads.push((cpu, handle));
        }
        Ok(clock)
    }

    /// The first failure of a clock thread, if one ended with an error.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Stops and joins the threads; their figures, in CPU order.
    pub fn stop(mut self) -> Vec<ClockThreadStats> {
        self.stop_threads()
    }

    fn stop_threads(&mut self) -> Vec<ClockThreadStats> {
        self.stop.store(true, Ordering::Relaxed);
        std::mem::take(&mut self.threads)
            .into_iter()
            .filter_map(|(cpu, h)| match h.join() {
                Ok(Ok(s)) => Some(s),
                Ok(Err(_)) => None,
                Err(_) => {
                    eprintln!("scx_tt: error: the slot clock thread of CPU {cpu} panicked");
                    None
                }
            })
            .collect()
    }
}

impl Drop for RtClock {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

/// Whether the running kernel is PREEMPT_RT: `/sys/kernel/realtime` reads 1 (the kernel has
/// it since PREEMPT_RT is in mainline), else its version string names PREEMPT_RT.
pub fn kernel_is_rt() -> bool {
    if let Ok(s) = std::fs::read_to_string("/sys/kernel/realtime") {
        return s.trim() == "1";
    }
    std::fs::read_to_string("/proc/sys/kernel/version").is_ok_and(|v| v.contains("PREEMPT_RT"))
}

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
    /// `rt_tick` runs on another CPU: the kernel had moved the thread (nothing ran).
    pub moved: u64,
    /// The thread ended because its CPU went offline.
    pub offline: bool,
}

/// The running helper threads; dropping it stops and joins them.
pub struct RtClock {
    stop: Arc<AtomicBool>,
    threads: Vec<(u32, JoinHandle<Result<ClockThreadStats, String>>)>,
    failure: Arc<Mutex<Option<String>>>,
}

/// What one test run of `rt_tick` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tick {
    /// It ran on the thread's CPU (an event ran or not: `arg.ticked`).
    Ran,
    /// It ran on another CPU and did nothing: the kernel moved the thread off its CPU.
    Moved,
}

/// One test run of `rt_tick` for `cpu` (the calling thread must be pinned there).
fn run_tick(prog: &OwnedFd, arg: &mut abi::tt_tick_arg) -> Result<Tick, String> {
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
        0 => Ok(Tick::Ran),
        abi::TICK_WRONG_CPU => Ok(Tick::Moved),
        rc => Err(format!("rt_tick: {}", abi::arm_result_text(rc))),
    }
}

/// What a clock thread does once the kernel moved it off `cpu`.
#[derive(Debug, PartialEq, Eq)]
enum Moved {
    /// It is pinned to `cpu` again (its affinity had been changed under it).
    Repinned,
    /// `cpu` is no longer active (going offline): the thread ends, and the kernel's hotplug
    /// exit ends the scheduler as it does under the bpf_timer clock (a CPU that stays
    /// active without its clock is the watchdog's).
    Offline,
}

/// Decides what a thread moved off `cpu` does: the kernel refuses an affinity of CPUs that are
/// all inactive (EINVAL), which is how a CPU going offline shows, whereas an affinity someone
/// else changed is simply put back. A thread moved more than `max_moves` times in a row (no
/// run on its CPU in between) fails: something keeps taking it away.
fn after_move(cpu: u32, moves_in_a_row: u32, max_moves: u32) -> Result<Moved, String> {
    if moves_in_a_row > max_moves {
        return Err(format!(
            "moved off CPU {cpu} {moves_in_a_row} times in a row (its affinity keeps changing)"
        ));
    }
    match affinity::set(&[cpu]) {
        Ok(()) => Ok(Moved::Repinned),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(Moved::Offline),
        Err(e) => Err(format!(
            "moved off CPU {cpu}, and pinning it again failed: {e}"
        )),
    }
}

/// Moves in a row after which a clock thread gives up (see [`after_move`]).
const MAX_MOVES_IN_A_ROW: u32 = 3;

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
    let mut tick = run_tick(&prog, &mut arg)?;
    let mut moves = 0;
    loop {
        match tick {
            Tick::Ran => moves = 0,
            Tick::Moved => {
                moves += 1;
                stats.moved += 1;
                if after_move(cpu, moves, MAX_MOVES_IN_A_ROW)? == Moved::Offline {
                    eprintln!(
                        "scx_tt: slot clock thread of CPU {cpu}: the CPU is going offline; \
                         the thread ends"
                    );
                    stats.offline = true;
                    return Ok(stats);
                }
            }
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        // after a move the tick runs at once (early is harmless: nothing runs before its time)
        let next = arg.next_ns;
        if tick == Tick::Ran && crate::clock::monotonic_ns() < next {
            sleep_until(next);
            if crate::clock::monotonic_ns() < next {
                continue;
            }
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        tick = run_tick(&prog, &mut arg)?;
        if tick == Tick::Ran {
            if arg.ticked != 0 {
                stats.ticks += 1;
            } else {
                stats.early += 1;
            }
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
        let away: Vec<u32> = affinity::get()
            .into_iter()
            .filter(|c| !cpus.contains(c))
            .collect();
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
            // SCHED_FIFO from here, before its first run, kept off the managed CPUs until it
            // pins itself to `cpu` (become_clock_thread): it never runs on a managed CPU as a
            // sched_ext task, nor as a FIFO thread of another CPU
            let _ = affinity::start_fifo(
                &handle,
                (!away.is_empty()).then_some(&away[..]),
                i32::from(prio),
            );
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a thread of its own: `after_move` changes the calling thread's affinity.
    fn on_own_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().expect("the thread ran")
    }

    #[test]
    fn a_thread_moved_off_an_active_cpu_is_pinned_back_to_it() {
        let (moved, cpu_after) = on_own_thread(|| {
            // SAFETY: plain syscall.
            let cpu = unsafe { libc::sched_getcpu() } as u32;
            (
                after_move(cpu, 1, MAX_MOVES_IN_A_ROW),
                (cpu, affinity::get()),
            )
        });
        assert_eq!(moved, Ok(Moved::Repinned));
        assert_eq!(vec![cpu_after.0], cpu_after.1, "pinned to its CPU alone");
    }

    #[test]
    fn a_cpu_that_is_not_active_ends_the_thread_quietly() {
        // the last CPU id of a cpu_set_t, which no machine this runs on has: the kernel
        // refuses it as it refuses a CPU going offline (no active CPU in the mask: EINVAL)
        let absent = libc::CPU_SETSIZE as u32 - 1;
        let moved = on_own_thread(move || after_move(absent, 1, MAX_MOVES_IN_A_ROW));
        assert_eq!(moved, Ok(Moved::Offline));
    }

    #[test]
    fn a_thread_moved_again_and_again_fails_naming_its_cpu() {
        let moved = on_own_thread(|| after_move(3, MAX_MOVES_IN_A_ROW + 1, MAX_MOVES_IN_A_ROW));
        let e = moved.expect_err("too many moves");
        assert!(e.contains("CPU 3") && e.contains("4 times in a row"), "{e}");
    }
}

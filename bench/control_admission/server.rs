//! The server thread: the run loop's control part over the socket, and its statistics.

use super::fake::FakeEngine;
use super::{Every, CONTROL_POLL_NS, LEAD, REQUESTS};
use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::control::socket::ControlSocket;
use scx_tt::control::Control;
use scx_tt::plan::Plan;
use scx_tt::planner::shared::PlannerHandle;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handler {
    /// `Control::serve` over the fake engine: the product's path.
    Control,
    /// A fixed reply: the socket and the loop alone.
    Echo,
}

const ECHO_REPLY: &str =
    "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"deadline_slot\":0,\"first_slot\":0}\n";

#[derive(Default)]
pub(crate) struct ServerStats {
    pub(crate) turns: u64,
    pub(crate) asked: u64,
    /// ns per request in the handler (`Control::serve` and `to_line`).
    pub(crate) handler_ns: Vec<u64>,
    pub(crate) lock_wait_ns: Vec<u64>,
    pub(crate) lock_hold_ns: Vec<u64>,
    pub(crate) accepted: u64,
    pub(crate) rejected: u64,
    pub(crate) late_slots: u64,
    /// The server thread's CPU time, ns, and its involuntary context switches (preempted).
    pub(crate) cpu_ns: u64,
    pub(crate) preempted: u64,
    /// The longest turn: from `wait` returning to the end of the turn, ns.
    pub(crate) longest_turn_ns: u64,
    /// The thread's scheduling policy.
    pub(crate) policy: String,
}

/// (CPU time ns, involuntary context switches) of the calling thread.
fn thread_usage() -> (u64, u64) {
    // SAFETY: an all-zero rusage is a valid out-parameter; the call only writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (ns(ru.ru_utime) + ns(ru.ru_stime), ru.ru_nivcsw as u64)
}

/// (busy jiffies of the whole machine without steal, steal jiffies, jiffies of this process)
/// from /proc.
pub(crate) fn cpu_jiffies() -> (u64, u64, u64) {
    let all = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest time is
    // already in user and nice)
    let v: Vec<u64> = all
        .lines()
        .next()
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    let steal = at(7);
    let me = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // after the ")" of the name: state is field 3, utime 14 and stime 15
    let own = me
        .rsplit_once(')')
        .map(|(_, rest)| {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let at = |i: usize| {
                f.get(i - 3)
                    .and_then(|x| x.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            at(14) + at(15)
        })
        .unwrap_or(0);
    (busy, steal, own)
}

/// The run loop's control part (enforce.rs `run` and `control_turn`).
pub(crate) fn server_thread(
    sock: &mut ControlSocket,
    plan: Plan,
    clock: SlotClock,
    handle: Arc<PlannerHandle>,
    handler: Handler,
    stop: &AtomicBool,
) -> ServerStats {
    let mut control =
        Control::new(plan.clone(), "bench.json".into(), clock).with_planner("bss", LEAD);
    let mut engine = FakeEngine {
        planner: handle.clone(),
        clock,
        next_task: plan.tasks.len(),
        added: Vec::new(),
        loading: None,
        tables: Vec::new(),
        lock_wait_ns: Vec::with_capacity(2 * REQUESTS),
        lock_hold_ns: Vec::with_capacity(2 * REQUESTS),
    };
    let mut stats = ServerStats {
        handler_ns: Vec::with_capacity(2 * REQUESTS),
        ..ServerStats::default()
    };
    let usage0 = thread_usage();
    let mut every = Every::new(monotonic_ns(), CONTROL_POLL_NS);
    while !stop.load(Ordering::Relaxed) {
        let timeout = Duration::from_nanos(every.next_ns.saturating_sub(monotonic_ns()));
        let asked = sock.wait(timeout);
        let now = monotonic_ns();
        // as the run loop: the 10 ms turn serves every connection and reaps, a wake for the
        // socket only what was ready
        let full = every.due(now);
        if full || asked {
            stats.turns += 1;
            stats.asked += asked as u64;
            if let Some(reply) = control.poll(&mut engine) {
                sock.deliver(&reply.to_line());
            }
            let handler_ns = &mut stats.handler_ns;
            let handle = |line: &str| {
                let t0 = monotonic_ns();
                let reply = match handler {
                    Handler::Control => control.serve(line, &mut engine).map(|r| r.to_line()),
                    Handler::Echo => Some(ECHO_REPLY.to_string()),
                };
                handler_ns.push(monotonic_ns() - t0);
                reply
            };
            match full {
                true => sock.serve(handle),
                false => sock.serve_ready(handle),
            }
            if full {
                control.reap(&mut engine, |_| true);
            }
            let _ = control.take_added();
            let _ = control.take_policy_swaps();
            stats.longest_turn_ns = stats.longest_turn_ns.max(monotonic_ns() - now);
        }
    }
    let usage1 = thread_usage();
    stats.cpu_ns = usage1.0 - usage0.0;
    stats.preempted = usage1.1 - usage0.1;
    stats.lock_wait_ns = std::mem::take(&mut engine.lock_wait_ns);
    stats.lock_hold_ns = std::mem::take(&mut engine.lock_hold_ns);
    if let Some(scx_tt::control::Answer::Status(s)) =
        match control.serve("{\"op\":\"status\"}", &mut engine) {
            Some(scx_tt::control::Reply::Ok(a)) => Some(a),
            _ => None,
        }
    {
        if let Some(p) = s.planner {
            stats.accepted = p.admissions_accepted;
            stats.rejected = p.admissions_rejected;
        }
    }
    stats.late_slots = handle.read(|p| p.late_slots()).unwrap_or(0);
    stats
}

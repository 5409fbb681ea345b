//! The printed rows, distributions, attribution lines and verdicts.

use super::client::Tally;
use super::run::SocketRun;
use super::GOAL_P99_NS;

/// Percentile `q` of sorted `v` (nearest rank), ns.
pub(crate) fn pct(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

pub(crate) fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

pub(crate) fn header_row() {
    println!(
        "{:<62} {:>8} {:>8} {:>6} {:>6} {:>9} {:>9} {:>9}  accepted/rejected/refused",
        "case", "requests", "replies", "lost", "unsent", "p50 us", "p99 us", "max us"
    );
}

pub(crate) fn row(case: &str, t: &Tally, lat: &[u64], counts: bool) {
    let counts = if counts {
        format!("{}/{}/{}", t.accepted, t.rejected, t.refused)
    } else {
        format!("({} refused)", t.refused)
    };
    println!(
        "{case:<62} {:>8} {:>8} {:>6} {:>6} {:>9.1} {:>9.1} {:>9.1}  {counts}",
        t.requests,
        t.replies,
        t.lost,
        t.unsent,
        us(pct(lat, 0.5)),
        us(pct(lat, 0.99)),
        us(lat.last().copied().unwrap_or(0)),
    );
}

/// A socket case's three latency rows: from the scheduled send (the goal's), the same without
/// the client's own timer lateness, from the actual send.
pub(crate) fn rows(case: &str, t: &Tally, counts: bool) {
    row(&format!("{case}, from schedule"), t, &t.from_sched, counts);
    row(
        "  excluding the client's own timer lateness",
        t,
        &t.from_due,
        counts,
    );
    row("  from the actual send", t, &t.from_sent, counts);
}

pub(crate) fn dist(label: &str, v: &mut [u64]) {
    v.sort_unstable();
    println!(
        "    {label:<58} n {:>6}  p50 {:>8.1}  p99 {:>8.1}  max {:>9.1} us",
        v.len(),
        us(pct(v, 0.5)),
        us(pct(v, 0.99)),
        us(v.last().copied().unwrap_or(0))
    );
}

pub(crate) fn server_lines(name: &str, r: &mut SocketRun) {
    let s = &mut r.server;
    println!(
        "  {name}: CPU during the run ({:.1} s, all {} CPUs = 100 %): this bench {:.0} %, other \
         processes {:.0} %, steal {:.1} %; the server thread ({}) {:.0} % of one CPU, preempted {} times, longest turn \
         {:.1} us; replies > 1 ms after their schedule: {} ({} distinct 10-ms windows)",
        r.wall_ns as f64 / 1e9,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        100.0 * r.own_share,
        100.0 * r.others_share,
        100.0 * r.steal_share,
        s.policy,
        100.0 * s.cpu_ns as f64 / r.wall_ns.max(1) as f64,
        s.preempted,
        us(s.longest_turn_ns),
        r.tally.over_1ms,
        r.tally.over_1ms_windows
    );
    println!(
        "  {name}: {} loop turns ({} woken by the socket), planner: {} turns, {} late slots, \
         longest turn wait {:.1} us ({}); planner status {} accepted / {} rejected",
        s.turns,
        s.asked,
        r.planner.turns,
        s.late_slots,
        us(r.planner.max_wait_ns),
        r.planner.setup,
        s.accepted,
        s.rejected
    );
    dist("server: time in the handler per request", &mut s.handler_ns);
    if !s.lock_wait_ns.is_empty() {
        dist(
            "server: planner lock, wait (incl. decide-ahead)",
            &mut s.lock_wait_ns,
        );
        dist(
            "server: planner lock, hold (admit_firm)",
            &mut s.lock_hold_ns,
        );
    }
    dist(
        "planner thread (SCHED_FIFO): wake-up after the slot boundary",
        &mut r.planner.wake_late_ns,
    );
    dist("client: send behind schedule", &mut r.tally.send_late);
    if !r.tally.close_ns.is_empty() {
        dist(
            "client: connect (socket, connect, 2 timeouts), in the RTT",
            &mut r.tally.connect_ns,
        );
        dist(
            "client: close after the reply, outside the RTT",
            &mut r.tally.close_ns,
        );
    }
    if let Some(e) = &r.tally.first_loss {
        println!("    first loss: {e}");
    }
    if let Some(e) = &r.tally.first_refusal {
        println!("    first refusal: {e}");
    }
}

pub(crate) fn verdict(case: &str, t: &Tally) -> bool {
    let p99 = pct(&t.from_sched, 0.99);
    let met = p99 <= GOAL_P99_NS && t.lost == 0 && t.unsent == 0;
    println!(
        "goal (p99 <= {:.0} us and 0 lost), {case}: {} (p99 {:.1} us from the schedule; {:.1} us \
         without the client's timer lateness, {:.1} us from the send; {} lost of {}{})",
        us(GOAL_P99_NS),
        if met { "met" } else { "NOT met" },
        us(p99),
        us(pct(&t.from_due, 0.99)),
        us(pct(&t.from_sent, 0.99)),
        t.lost,
        t.requests,
        match t.refused {
            0 => String::new(),
            n => format!(", {n} refused"),
        }
    );
    if t.unsent > 0 {
        println!(
            "  (the load was not offered: {} requests never sent, their clients starved of CPU)",
            t.unsent
        );
    }
    met
}

//! The open-loop clients and the tally of their samples.

use super::{request_line, CLIENTS, GIVE_UP_NS, INTERVAL_NS, REPLY_TIMEOUT_NS, REQUESTS, RUN_NS};
use scx_tt::clock::{monotonic_ns, sleep_until_ns};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Accepted,
    Rejected,
    /// `{"ok":false,...}` (e.g. too many connections).
    Refused,
    Lost,
}

struct Sample {
    sched: u64,
    sent: u64,
    done: u64,
    /// ns in `socket` + `connect` + the two timeouts (0 on a connection already open).
    connect_ns: u64,
    outcome: Outcome,
}

#[derive(Default)]
pub(crate) struct ClientOut {
    samples: Vec<Sample>,
    /// Requests never sent (the client gave up).
    unsent: u64,
    first_refusal: Option<String>,
    first_loss: Option<String>,
    /// ns in `close` per connection (a connection per request).
    close_ns: Vec<u64>,
}

/// One exchange on `conn` (connected first when `None`, the time that took into
/// `connect_ns`): the reply line.
fn exchange(
    path: &Path,
    conn: &mut Option<BufReader<UnixStream>>,
    line: &str,
    connect_ns: &mut u64,
) -> std::io::Result<String> {
    if conn.is_none() {
        let t0 = monotonic_ns();
        let s = UnixStream::connect(path)?;
        let t = Some(Duration::from_nanos(REPLY_TIMEOUT_NS));
        s.set_read_timeout(t)?;
        s.set_write_timeout(t)?;
        *conn = Some(BufReader::new(s));
        *connect_ns = monotonic_ns() - t0;
    }
    let r = conn.as_mut().expect("connected");
    r.get_mut().write_all(line.as_bytes())?;
    let mut reply = String::new();
    r.read_line(&mut reply)?;
    if !reply.ends_with('\n') {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(reply)
}

/// Client `c`: requests k = 8 i + c at `start + k · INTERVAL_NS`, open loop.
pub(crate) fn client(path: &Path, c: usize, start: u64, per_request: bool) -> ClientOut {
    // SAFETY: prctl on the calling thread with an integer argument: sleeps end on time (the
    // default 50 us timer slack would count as server latency from the schedule).
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let per = REQUESTS / CLIENTS;
    let give_up = start + RUN_NS + GIVE_UP_NS;
    let mut out = ClientOut {
        samples: Vec::with_capacity(per),
        ..ClientOut::default()
    };
    let mut conn = None;
    for i in 0..per {
        let k = (i * CLIENTS + c) as u64;
        let sched = start + k * INTERVAL_NS;
        let line = request_line(k);
        if monotonic_ns() >= give_up {
            out.unsent += (per - i) as u64;
            break;
        }
        sleep_until_ns(sched);
        let sent = monotonic_ns();
        let mut connect_ns = 0;
        let reply = exchange(path, &mut conn, &line, &mut connect_ns);
        let done = monotonic_ns();
        let outcome = match reply {
            Ok(_) if done - sent > REPLY_TIMEOUT_NS => Outcome::Lost,
            Ok(r) if r.contains("\"accepted\":true") => Outcome::Accepted,
            Ok(r) if r.contains("\"accepted\":false") => Outcome::Rejected,
            Ok(r) => {
                out.first_refusal.get_or_insert(r.trim_end().to_string());
                Outcome::Refused
            }
            Err(e) => {
                out.first_loss.get_or_insert(e.to_string());
                Outcome::Lost
            }
        };
        if outcome == Outcome::Lost || per_request {
            // out of step (or done): the next request connects anew (the close is timed, off
            // the round trip: the client's reply is in)
            let t0 = monotonic_ns();
            conn = None;
            if per_request {
                out.close_ns.push(monotonic_ns() - t0);
            }
        }
        out.samples.push(Sample {
            sched,
            sent,
            done,
            connect_ns,
            outcome,
        });
    }
    out
}

#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) requests: u64,
    pub(crate) replies: u64,
    pub(crate) lost: u64,
    pub(crate) accepted: u64,
    pub(crate) rejected: u64,
    pub(crate) refused: u64,
    /// Latency of every reply from its scheduled send, and from its actual send, ns.
    pub(crate) from_sched: Vec<u64>,
    pub(crate) from_sent: Vec<u64>,
    /// From the scheduled send when the previous reply held the request back (it came after
    /// the schedule), else from the actual send: the client's own timer lateness left out.
    pub(crate) from_due: Vec<u64>,
    /// How late each request was sent (behind a late reply, or the client's own wakeup).
    pub(crate) send_late: Vec<u64>,
    /// A connection per request: the client's connect (socket, connect, timeouts), inside the
    /// round trip, and its close after the reply, outside it; ns.
    pub(crate) connect_ns: Vec<u64>,
    pub(crate) close_ns: Vec<u64>,
    pub(crate) first_refusal: Option<String>,
    pub(crate) first_loss: Option<String>,
    /// Requests sent per second, measured.
    pub(crate) rate: f64,
    /// Requests never sent: a client fell 2 s behind its schedule (starved of CPU).
    pub(crate) unsent: u64,
    /// Replies later than 1 ms after their schedule, and in how many distinct 10 ms windows of
    /// the schedule they were due.
    pub(crate) over_1ms: u64,
    pub(crate) over_1ms_windows: u64,
}

pub(crate) fn tally(outs: Vec<ClientOut>) -> Tally {
    let mut t = Tally::default();
    let (mut first, mut last) = (u64::MAX, 0);
    let mut windows = std::collections::BTreeSet::new();
    for o in outs {
        t.requests += o.samples.len() as u64 + o.unsent;
        t.unsent += o.unsent;
        t.first_refusal = t.first_refusal.or(o.first_refusal);
        t.first_loss = t.first_loss.or(o.first_loss);
        t.close_ns.extend(o.close_ns);
        let mut prev_done = 0;
        for s in o.samples {
            let start = if prev_done > s.sched { s.sched } else { s.sent };
            prev_done = s.done;
            first = first.min(s.sched);
            last = last.max(s.sent);
            t.send_late.push(s.sent - s.sched);
            if s.connect_ns > 0 {
                t.connect_ns.push(s.connect_ns);
            }
            match s.outcome {
                Outcome::Lost => {
                    t.lost += 1;
                    continue;
                }
                Outcome::Accepted => t.accepted += 1,
                Outcome::Rejected => t.rejected += 1,
                Outcome::Refused => t.refused += 1,
            }
            t.replies += 1;
            if s.done - s.sched > 1_000_000 {
                t.over_1ms += 1;
                windows.insert(s.sched / 10_000_000);
            }
            t.from_sched.push(s.done - s.sched);
            t.from_sent.push(s.done - s.sent);
            t.from_due.push(s.done - start);
        }
    }
    for v in [
        &mut t.from_sched,
        &mut t.from_sent,
        &mut t.from_due,
        &mut t.send_late,
    ] {
        v.sort_unstable();
    }
    t.over_1ms_windows = windows.len() as u64;
    if last > first {
        t.rate = (t.requests.saturating_sub(1)) as f64 * 1e9 / (last - first) as f64;
    }
    t
}

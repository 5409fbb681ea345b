//! The reader of the adaptive tasks' wakeup rings (src/bpf/tt_sched.bpf.c L; `struct
//! tt_wake_ring` in src/bpf/intf.h), in the mmapped .bss: no system call per read.
//!
//! BPF appends wakeup `n` (from 0) at `ev[n % WAKE_RING]`: it reserves `n` with a fetch-add of
//! `head`, sets `seq = 0`, writes `t_ns`, then sets `seq = n + 1` (both seq stores full
//! barriers), so a reader that sees the same `seq` before and after its load of `t_ns` read
//! that event's time (a seqlock per entry). The reader keeps its own
//! count `taken` of the events handed over and, for event `taken`, loads `seq` (acquire), `t_ns`,
//! an acquire fence, and `seq` again:
//! - both are `taken + 1`: the event, complete and not overwritten meanwhile;
//! - the first is smaller (0, or an older lap's): not written yet (a writer between its
//!   fetch-add and its last seq store): stop, the next drain takes it;
//! - else the ring lapped the reader (more than `WAKE_RING` events since the last drain): the
//!   event is lost, counted, and the reader moves on. When `head` is more than `WAKE_RING` ahead
//!   the overwritten ones are counted lost at once.
//!
//! The decoding ([`drain`]) is pure: it takes any [`WakeSource`]; the tests give it a ring
//! written by a fake writer, concurrently and in every interleaving of a reservation.

use crate::abi::WAKE_RING;
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// What a drain reads: the ring's head and one entry's (seq, t_ns, seq again).
pub trait WakeSource {
    /// Events reserved so far.
    fn head(&self) -> u64;
    /// Entry `i` (`< WAKE_RING`): seq (acquire), t_ns, an acquire fence, seq again.
    fn entry(&self, i: usize) -> (u64, u64, u64);
}

/// The events a drain took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// Wakeup times, ns of CLOCK_MONOTONIC, in ring order.
    pub times_ns: Vec<u64>,
    /// Events overwritten before they were read.
    pub lost: u64,
}

/// Take the events of `src` from `*taken` on (module doc); `*taken` moves past what was taken
/// or lost.
pub fn drain(src: &impl WakeSource, taken: &mut u64) -> Drained {
    let head = src.head();
    let mut out = Drained::default();
    if head > taken.saturating_add(WAKE_RING) {
        out.lost = head - WAKE_RING - *taken;
        *taken = head - WAKE_RING;
    }
    while *taken < head {
        let want = *taken + 1;
        let (seq1, t, seq2) = src.entry((*taken % WAKE_RING) as usize);
        if seq1 == want && seq2 == want {
            out.times_ns.push(t);
        } else if seq1 < want {
            break;
        } else {
            out.lost += 1;
        }
        *taken += 1;
    }
    out
}

/// A ring as atomics over the mmapped `struct tt_wake_ring` (same layout: head, cost_ns, then
/// `WAKE_RING` pairs of seq, t_ns).
#[repr(C)]
pub struct WakeRing {
    pub head: AtomicU64,
    pub cost_ns: AtomicU64,
    pub ev: [(AtomicU64, AtomicU64); WAKE_RING as usize],
}

const _: () = assert!(std::mem::size_of::<WakeRing>() == 16 + 16 * WAKE_RING as usize);
#[cfg(feature = "bpf")]
const _: () =
    assert!(std::mem::size_of::<WakeRing>() == std::mem::size_of::<crate::abi::tt_wake_ring>());

impl WakeSource for WakeRing {
    fn head(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    fn entry(&self, i: usize) -> (u64, u64, u64) {
        let (seq, t) = &self.ev[i % WAKE_RING as usize];
        let seq1 = seq.load(Ordering::Acquire);
        let t_ns = t.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        (seq1, t_ns, seq.load(Ordering::Relaxed))
    }
}

impl WakeRing {
    /// The tracer's own time per event so far (cost_ns / head), ns; `None` before any event.
    pub fn cost_per_event_ns(&self) -> Option<f64> {
        let n = self.head.load(Ordering::Relaxed);
        (n > 0).then(|| self.cost_ns.load(Ordering::Relaxed) as f64 / n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ring() -> Box<WakeRing> {
        // SAFETY: WakeRing is atomics only; all zero is its valid empty state.
        unsafe { Box::new(std::mem::zeroed()) }
    }

    /// The writer of tt_sched.bpf.c L: reserve, write the time, publish the seq.
    fn write(r: &WakeRing, t: u64) {
        let n = r.head.fetch_add(1, Ordering::SeqCst);
        let (seq, time) = &r.ev[(n % WAKE_RING) as usize];
        seq.swap(0, Ordering::SeqCst);
        time.store(t, Ordering::Relaxed);
        seq.swap(n + 1, Ordering::SeqCst);
    }

    #[test]
    fn events_come_out_in_order_once() {
        let r = ring();
        let mut taken = 0;
        assert_eq!(drain(&*r, &mut taken), Drained::default());
        for t in 1..=10 {
            write(&r, t * 100);
        }
        let d = drain(&*r, &mut taken);
        assert_eq!(d.times_ns, (1..=10).map(|t| t * 100).collect::<Vec<_>>());
        assert_eq!((d.lost, taken), (0, 10));
        assert_eq!(drain(&*r, &mut taken), Drained::default());
        write(&r, 5000);
        assert_eq!(drain(&*r, &mut taken).times_ns, vec![5000]);
    }

    #[test]
    fn a_lapped_reader_counts_what_it_lost_and_keeps_the_newest_ring() {
        let r = ring();
        let mut taken = 0;
        let n = 3 * WAKE_RING + 7;
        for t in 0..n {
            write(&r, t);
        }
        let d = drain(&*r, &mut taken);
        assert_eq!(d.lost, n - WAKE_RING);
        assert_eq!(d.times_ns, (n - WAKE_RING..n).collect::<Vec<_>>());
        assert_eq!(taken, n);
    }

    #[test]
    fn a_reserved_but_unwritten_event_stops_the_drain_until_written() {
        let r = ring();
        let mut taken = 0;
        write(&r, 10);
        // a writer between its fetch-add and its seq store
        let n = r.head.fetch_add(1, Ordering::SeqCst);
        write(&r, 30);
        let d = drain(&*r, &mut taken);
        assert_eq!((d.times_ns, d.lost, taken), (vec![10], 0, 1));
        // ... which then completes: both come out, in ring order
        r.ev[n as usize].1.store(20, Ordering::Relaxed);
        r.ev[n as usize].0.swap(n + 1, Ordering::SeqCst);
        assert_eq!(drain(&*r, &mut taken).times_ns, vec![20, 30]);
    }

    /// An entry overwritten between the reader's two seq loads is lost, not misread.
    #[test]
    fn an_entry_overwritten_while_read_is_lost() {
        struct Torn(Box<WakeRing>);
        impl WakeSource for Torn {
            fn head(&self) -> u64 {
                self.0.head()
            }
            fn entry(&self, i: usize) -> (u64, u64, u64) {
                let (s1, t, _) = self.0.entry(i);
                (s1, t, s1 + WAKE_RING)
            }
        }
        let r = ring();
        write(&r, 1);
        let mut taken = 0;
        let d = drain(&Torn(r), &mut taken);
        assert_eq!((d.times_ns.len(), d.lost, taken), (0, 1, 1));
    }

    /// Four writers and a reader at once: every event is taken exactly once or counted lost,
    /// and a taken time is one a writer wrote for that event's position among its own.
    #[test]
    fn concurrent_writers_and_a_reader_lose_or_take_each_event_once() {
        let r: Arc<WakeRing> = Arc::from(ring());
        let per = 20_000u64;
        let writers: Vec<_> = (0..4u64)
            .map(|w| {
                let r = Arc::clone(&r);
                std::thread::spawn(move || {
                    for k in 0..per {
                        write(&r, (w << 32) | k);
                    }
                })
            })
            .collect();
        let mut taken = 0;
        let (mut got, mut lost) = (Vec::new(), 0);
        while writers.iter().any(|w| !w.is_finished()) {
            let d = drain(&*r, &mut taken);
            got.extend(d.times_ns);
            lost += d.lost;
        }
        for w in writers {
            w.join().expect("writer");
        }
        // Every write is done: one more drain takes what is readable. What it cannot reach is
        // lost: a writer preempted between its reservation and its writes for a whole lap of
        // the ring writes its older sequence over a newer writer's entry, and the drain waits
        // at that entry until the ring laps it (it took the test's reader for ever when no
        // write was left to lap it: the CI hang of 2026-11-30 under stress-ng).
        let d = drain(&*r, &mut taken);
        got.extend(d.times_ns);
        lost += d.lost + (r.head() - taken);
        assert_eq!(got.len() as u64 + lost, 4 * per);
        // per writer, the times taken are strictly increasing (each taken once, in order)
        for w in 0..4u64 {
            let mine: Vec<u64> = got.iter().filter(|&&t| t >> 32 == w).copied().collect();
            assert!(mine.windows(2).all(|p| p[0] < p[1]), "writer {w}");
        }
        println!("taken {}, lost {lost}", got.len());
    }
}

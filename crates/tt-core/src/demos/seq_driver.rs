//! The sequencer on the kernel path (pure): `scx_tt --table plan.json --planner bss --demos
//! config.yaml` (docs/demos.md "Sequenced kernel run"). The planner thread
//! (src/cli/run/planner_loop.rs) feeds it BPF's per-slot observations and the slot clock, and
//! writes the table entries it returns.
//!
//! ```text
//! observe(cpu, slot, owner, done):  done and owner = a process's task → sequencer.complete
//! advance(cur):                     (cur: the kernel slot in progress, None before slot 0)
//!     for t in sequencer.now() ..= cur + lead      (before slot 0: 0 ..= lead - 1)
//!         d = sequencer.decide()                   (slot t)
//!         if t <= cur: late += 1                   (already started: not written)
//!         else: each managed CPU whose entry for t differs from what the table holds:
//!               write (cpu, t mod frame) := owner | JOB_START on an activation's first slot
//! ```
//!
//! Events (`-m`/`-M`/`-p`, docs/demos.md "Messages and power policies in a sequenced run"): with
//! [`SeqDriver::with_events`] every decided slot's DEmOS events go into a bounded queue with
//! their slot, late slots' too; the run loop takes them ([`SeqDriver::take_events`]) once their
//! slot has begun, not when they are decided (`lead` slots earlier).
//!
//! Lag: a completion in slot `s` is observed once slot `s` closed (the thread waits for that
//! observation up to half a slot after the boundary), while slots up to `s + lead` are already
//! decided; the next process starts at the first undecided slot, `s + 1 + lead`: `lead` slots
//! after DEmOS's start on the grid (one more when the observation comes later than that).
//! Those slots stay with the done owner: BPF gives a done owner's time to `be` work under the
//! default server design (`wcps`): the CPU's `be` tasks, not DEmOS's BE processes, which own
//! their turns in a sequenced run (`import::sequenced_plan`).

use super::power::Event;
use super::sequencer::Sequencer;
use super::sim::LogLine;
use crate::abi;
use std::collections::VecDeque;

/// Schedule log lines kept at most (about 100 bytes each); later ones are counted only.
pub const LOG_CAP: usize = 1_000_000;
/// Lags kept at most for the end-of-run percentiles.
const LAG_CAP: usize = 1_000_000;
/// Events queued at most for the run loop (it takes them every slot or so: a full queue
/// means it stalled); later ones are dropped and counted.
pub const EVENT_CAP: usize = 65_536;

/// One table entry to write: (managed CPU index, frame slot, entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqWrite {
    pub cpu: usize,
    /// The slot decided (`frame_slot` = `slot % frame`).
    pub slot: u64,
    pub frame_slot: u64,
    pub entry: u32,
}

pub struct SeqDriver {
    seq: Sequencer,
    lead: u64,
    frame: u64,
    nr_cpus: usize,
    /// What the table holds, per (cpu, frame slot); `None`: not written by the driver yet.
    held: Vec<Option<u32>>,
    log: Vec<LogLine>,
    log_dropped: u64,
    late: u64,
    /// Slots whose entries the caller wrote after they had started ([`Self::note_late_writes`]).
    late_writes: u64,
    /// Per completion taken: slots between its slot + 1 and the first undecided slot.
    lags: Vec<u64>,
    /// The decided slots' events not taken yet, (slot, event) in order; `None`: not queued.
    events: Option<VecDeque<(u64, Event)>>,
    events_dropped: u64,
}

/// End-of-run figures of a sequenced run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeqSummary {
    pub decided: u64,
    pub late: u64,
    /// Decided in time, written after the slot had started (it ran the entry before).
    pub late_writes: u64,
    pub completions: u64,
    pub stale: u64,
    pub overruns: u64,
    /// Lag of the completions taken (slots): p50, p99, max.
    pub lag: Option<(u64, u64, u64)>,
    /// Events dropped with the queue full ([`EVENT_CAP`]).
    pub events_dropped: u64,
}

impl SeqDriver {
    /// `lead ≥ 1` slots ahead, `frame` slots per table frame, `nr_cpus` managed CPUs.
    pub fn new(seq: Sequencer, lead: u64, frame: u64, nr_cpus: usize) -> Result<Self, String> {
        if lead == 0 || frame == 0 {
            return Err(format!(
                "lead {lead}, frame {frame}: both must be at least 1 slot"
            ));
        }
        let entries = usize::try_from(frame)
            .ok()
            .and_then(|f| f.checked_mul(nr_cpus))
            .ok_or_else(|| format!("{nr_cpus} CPUs × {frame} slots: too many table entries"))?;
        Ok(SeqDriver {
            seq,
            lead,
            frame,
            nr_cpus,
            held: vec![None; entries],
            log: Vec::new(),
            log_dropped: 0,
            late: 0,
            late_writes: 0,
            lags: Vec::new(),
            events: None,
            events_dropped: 0,
        })
    }

    /// Queues every decided slot's events for [`Self::take_events`].
    pub fn with_events(mut self) -> Self {
        self.events = Some(VecDeque::new());
        self
    }

    /// The slot of the first queued event not taken yet (`None`: none queued).
    pub fn next_event_slot(&self) -> Option<u64> {
        Some(self.events.as_ref()?.front()?.0)
    }

    /// The first slot not decided yet: no event of an earlier slot can be queued later.
    pub fn undecided(&self) -> u64 {
        self.seq.now()
    }

    /// The queued events of slots up to `slot` (slots that have begun), in order.
    pub fn take_events(&mut self, slot: u64) -> Vec<(u64, Event)> {
        let Some(q) = self.events.as_mut() else {
            return Vec::new();
        };
        let n = q.iter().take_while(|e| e.0 <= slot).count();
        q.drain(..n).collect()
    }

    pub fn lead(&self) -> u64 {
        self.lead
    }

    /// BPF's observation of `slot` on a managed CPU: its owner, and whether the owner's job
    /// completed in it. Returns whether a completion was taken.
    pub fn observe(&mut self, slot: u64, owner: Option<u32>, done: bool) -> bool {
        let Some(proc) = owner
            .filter(|_| done)
            .and_then(|t| self.seq.process_of_task(t))
        else {
            return false;
        };
        let taken = self.seq.complete(proc, slot);
        if taken && self.lags.len() < LAG_CAP {
            self.lags.push(self.seq.now().saturating_sub(slot + 1));
        }
        taken
    }

    /// Decides every slot up to `cur + lead` and returns the entries to write, in slot order.
    pub fn advance(&mut self, cur: Option<u64>) -> Vec<SeqWrite> {
        let last = match cur {
            Some(c) => c.saturating_add(self.lead),
            None => self.lead - 1,
        };
        let mut writes = Vec::new();
        while self.seq.now() <= last {
            let d = self.seq.decide();
            if let Some(q) = self.events.as_mut() {
                for e in d.events {
                    if q.len() < EVENT_CAP {
                        q.push_back((d.slot, e));
                    } else {
                        self.events_dropped += 1;
                    }
                }
            }
            for l in d.log {
                if self.log.len() < LOG_CAP {
                    self.log.push(l);
                } else {
                    self.log_dropped += 1;
                }
            }
            if cur.is_some_and(|c| d.slot <= c) {
                self.late += 1;
                continue;
            }
            let frame_slot = d.slot % self.frame;
            for cpu in 0..self.nr_cpus {
                let entry = abi::entry(d.owners[cpu], d.first[cpu]);
                // frame ≥ 1 and cpu < nr_cpus: inside `held` (its size was checked)
                let held = &mut self.held[cpu * self.frame as usize + frame_slot as usize];
                if *held != Some(entry) {
                    *held = Some(entry);
                    writes.push(SeqWrite {
                        cpu,
                        slot: d.slot,
                        frame_slot,
                        entry,
                    });
                }
            }
        }
        writes
    }

    /// The caller wrote `n` slots' entries after those slots had started.
    pub fn note_late_writes(&mut self, n: u64) {
        self.late_writes = self.late_writes.saturating_add(n);
    }

    /// The schedule log so far (DEmOS's format with `super::render_log`) and the lines left
    /// out above [`LOG_CAP`].
    pub fn log(&self) -> (&[LogLine], u64) {
        (&self.log, self.log_dropped)
    }

    pub fn summary(&self) -> SeqSummary {
        let mut lags = self.lags.clone();
        lags.sort_unstable();
        let pct = |q: usize| lags[(lags.len() - 1) * q / 100];
        SeqSummary {
            decided: self.seq.now(),
            late: self.late,
            late_writes: self.late_writes,
            completions: self.lags.len() as u64,
            stale: self.seq.stale(),
            overruns: self.seq.overruns(),
            lag: (!lags.is_empty()).then(|| (pct(50), pct(99), pct(100))),
            events_dropped: self.events_dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demos::config::{Config, Source};
    use crate::demos::cpuset::CpuSet;
    use crate::demos::sequencer::{SeqOptions, TaskRef};

    fn driver(lead: u64) -> SeqDriver {
        let c = Config::from_yaml(
            "{windows: [{length: 10, cpu: 1,
               sc_processes: [{cmd: a, budget: 4}, {cmd: b, budget: 4}]}]}",
            Source::Inline,
        )
        .unwrap();
        let opts = SeqOptions {
            all_cpus: CpuSet::from_cpus([1, 2]),
            slot_us: 1000,
            seed: 1,
        };
        let t = |task| Some(TaskRef { task, cpu: 1 });
        let seq = Sequencer::new(&c, &opts, &[1, 2], &[vec![t(0), t(1)]]).unwrap();
        SeqDriver::new(seq, lead, 10, 2).unwrap()
    }

    fn entries(w: &[SeqWrite], cpu: usize) -> Vec<(u64, u32)> {
        w.iter()
            .filter(|w| w.cpu == cpu)
            .map(|w| (w.frame_slot, w.entry))
            .collect()
    }

    #[test]
    fn slots_are_decided_lead_ahead_and_only_changes_are_written() {
        let mut d = driver(2);
        let w = d.advance(None);
        let start = abi::entry(Some(0), true);
        assert_eq!(entries(&w, 0), [(0, start), (1, 0)]);
        assert_eq!(entries(&w, 1), [(0, abi::NO_TASK), (1, abi::NO_TASK)]);
        let w = d.advance(Some(0));
        assert_eq!(entries(&w, 0), [(2, 0)]);
        // a jump of the clock: slots 3..=5 already started are late, 6..=7 written
        let w = d.advance(Some(5));
        assert_eq!(d.summary().late, 3);
        assert_eq!(entries(&w, 0), [(6, 1), (7, 1)]);
        // the next frame repeats the first: nothing is written again
        d.advance(Some(9));
        assert_eq!(d.advance(Some(10)), []);
    }

    #[test]
    fn a_completion_starts_the_next_process_at_the_first_undecided_slot() {
        let mut d = driver(2);
        d.advance(None);
        d.advance(Some(0));
        // a's job was done in slot 0, observed while slot 1 runs (slots up to 3 decided)
        d.advance(Some(1));
        assert!(d.observe(0, Some(0), true));
        // not done, another owner, a stale repeat
        assert!(!d.observe(0, Some(0), false));
        assert!(!d.observe(1, None, true));
        let w = d.advance(Some(2));
        assert_eq!(entries(&w, 0), [(4, abi::entry(Some(1), true))]);
        let (log, dropped) = d.log();
        let text: Vec<String> = log.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            text,
            [
                "     0: cpus=1 cmd='a' budget=4",
                "     4: cpus=1 cmd='b' budget=4"
            ]
        );
        assert_eq!(dropped, 0);
        let s = d.summary();
        assert_eq!((s.completions, s.lag), (1, Some((3, 3, 3))));
    }

    #[test]
    fn events_wait_in_the_queue_until_their_slot_has_begun() {
        let mut d = driver(2);
        d.advance(None);
        assert_eq!(d.next_event_slot(), None, "not queued without with_events");
        let mut d = driver(2).with_events();
        assert_eq!(d.next_event_slot(), None);
        d.advance(None);
        // slots 0 and 1 decided: the window's start at 0, nothing at 1
        assert_eq!(d.next_event_slot(), Some(0));
        let e = d.take_events(0);
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e.iter().all(|e| e.0 == 0));
        assert_eq!((d.next_event_slot(), d.undecided()), (None, 2));
        d.advance(Some(2));
        d.advance(Some(3));
        // b starts at 4 (a's budget), decided while slot 2 runs, not taken before 4
        assert_eq!(d.next_event_slot(), Some(4));
        assert!(d.take_events(3).is_empty());
        let e = d.take_events(4);
        assert!(
            matches!(
                &e[..],
                [
                    (4, Event::ProcessEnd { .. }),
                    (4, Event::ProcessStart { .. })
                ]
            ),
            "{e:?}"
        );
        // a late slot's events are queued too
        d.advance(Some(20));
        assert_eq!(d.next_event_slot(), Some(8));
        assert_eq!(d.summary().events_dropped, 0);
    }

    #[test]
    fn a_full_event_queue_drops_and_counts() {
        let mut d = driver(1).with_events();
        // 8 events a 10-slot window (window start, SC start, a, b, BE start, window end)
        let windows = EVENT_CAP as u64 / 8 + 2;
        for cur in 0..windows * 10 {
            d.advance(Some(cur));
        }
        let s = d.summary();
        assert_eq!(d.events.as_ref().map(|q| q.len()), Some(EVENT_CAP));
        assert!(s.events_dropped >= 8, "{s:?}");
        assert_eq!(
            d.take_events(u64::MAX).len() as u64 + s.events_dropped,
            8 * windows + 3,
            "every event queued or counted (slot {}: the next window's start, SC start, a)",
            windows * 10
        );
    }

    #[test]
    fn lead_zero_is_refused() {
        let seq = driver(1).seq;
        let e = SeqDriver::new(seq, 0, 10, 2).err().unwrap();
        assert!(e.contains("lead 0"), "{e}");
    }
}

//! The observation ring (src/bpf/tt_sched.bpf.c, J): what each slot of each managed CPU
//! delivered, published by the BPF slot tick when the slot closes and read here without a
//! system call, so the planner thread can learn every slot's outcome a few slots after it.
//!
//! # Layout
//!
//! `struct tt_slot_obs` (src/bpf/intf.h) entries in a `BPF_F_MMAPABLE` array, `OBS_RING` per
//! managed CPU: (managed index `m`, slot `s`) lives at `m * OBS_RING + s % OBS_RING`.
//! [`ObsReader`] maps the array read-only; [`ObsReader::read`] names the CPU by its id.
//!
//! # The seqlock
//!
//! BPF, the only writer of an entry (the tick of its CPU), stores `seq = 2s + 1`, the fields,
//! then `seq = 2s + 2`, each `seq` store an `xchg` (a full barrier on every BPF JIT). A reader
//! loads `seq` (acquire), the fields (relaxed atomics), an acquire fence, and `seq` again
//! ([`load`]); [`decode`] then decides, from the two `seq` values alone, what the fields are
//! worth for the slot asked for:
//!
//! | first `seq` | second `seq` | result |
//! |---|---|---|
//! | 0 | any | [`ObsRead::NotYet`] (never written) |
//! | `2s + 2` (complete, this slot) | the same | [`ObsRead::Ready`] |
//! | `2s + 2` | another | [`ObsRead::Torn`] (rewritten while read) |
//! | `2s + 1` (being written) | any | [`ObsRead::Torn`] |
//! | for a slot before `s` | any | [`ObsRead::NotYet`] (the entry still holds an older slot) |
//! | for a slot after `s` | any | [`ObsRead::Overwritten`] (`OBS_RING` slots later) |
//!
//! A torn read is retried at once, a few times ([`TORN_TRIES`]): the writer holds an entry for
//! a few stores. A slot whose tick was skipped (a tick more than a slot late, `late_skips`) is
//! never written: its entry reads `NotYet` until it reads `Overwritten`.

use crate::abi::{NO_TASK, OBS_DONE, OBS_RING};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicI64, AtomicU32, AtomicU64, Ordering};

/// One slot's observation, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SlotObs {
    /// Absolute slot number.
    pub slot: u64,
    /// The slot's owner in the table (task index), `None` for a free slot.
    pub owner: Option<u32>,
    /// The owner's current job completed in this slot (its `completion` rule).
    pub done: bool,
    /// ns the owner's threads ran in the slot (the slot record's `owner_ns`).
    pub owner_ns: u64,
    /// ns of the slot the owner had a thread running or runnable and its job was not done.
    pub avail_ns: u64,
    /// Of `avail_ns`: ns other threads ran while the owner waited runnable.
    pub stolen_ns: u64,
    /// The slot's tick lateness.
    pub late_ns: i64,
}

/// What reading one (CPU, slot) gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObsRead {
    Ready(SlotObs),
    /// Not published yet (the slot has not closed, or its tick was skipped).
    NotYet,
    /// Being rewritten while read, on every try.
    Torn,
    /// Already replaced by a slot `OBS_RING` (or more) later.
    Overwritten,
}

/// One entry as the reader sees it: the memory layout of `struct tt_slot_obs`, every field an
/// atomic (BPF writes them while we read; the checks below tie the offsets to intf.h).
#[repr(C)]
#[derive(Debug, Default)]
pub struct ObsEntry {
    pub seq: AtomicU64,
    pub slot: AtomicU64,
    pub owner: AtomicU32,
    pub flags: AtomicU32,
    pub owner_ns: AtomicU64,
    pub avail_ns: AtomicU64,
    pub stolen_ns: AtomicU64,
    pub late_ns: AtomicI64,
}

const _: () = assert!(std::mem::size_of::<ObsEntry>() == 56);
#[cfg(feature = "bpf")]
const _: () = {
    use crate::abi::tt_slot_obs as c;
    use std::mem::offset_of;
    assert!(std::mem::size_of::<c>() == std::mem::size_of::<ObsEntry>());
    assert!(offset_of!(c, seq) == offset_of!(ObsEntry, seq));
    assert!(offset_of!(c, slot) == offset_of!(ObsEntry, slot));
    assert!(offset_of!(c, owner) == offset_of!(ObsEntry, owner));
    assert!(offset_of!(c, flags) == offset_of!(ObsEntry, flags));
    assert!(offset_of!(c, owner_ns) == offset_of!(ObsEntry, owner_ns));
    assert!(offset_of!(c, avail_ns) == offset_of!(ObsEntry, avail_ns));
    assert!(offset_of!(c, stolen_ns) == offset_of!(ObsEntry, stolen_ns));
    assert!(offset_of!(c, late_ns) == offset_of!(ObsEntry, late_ns));
};

/// The fields of an entry as loaded between its two `seq` loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawObs {
    pub slot: u64,
    pub owner: u32,
    pub flags: u32,
    pub owner_ns: u64,
    pub avail_ns: u64,
    pub stolen_ns: u64,
    pub late_ns: i64,
}

/// Tries of a read that found its entry being written.
pub const TORN_TRIES: u32 = 4;

/// The entry's seq once slot `slot` is completely written.
pub fn seq_complete(slot: u64) -> u64 {
    2 * slot + 2
}

/// What `fields`, loaded between `seq1` and `seq2`, are worth for slot `want` (the table in
/// the module doc). Pure.
pub fn decode(want: u64, seq1: u64, fields: RawObs, seq2: u64) -> ObsRead {
    if seq1 == 0 {
        return ObsRead::NotYet;
    }
    // the slot the entry held (complete) or was being written for (odd)
    let held = (seq1 - 1) / 2;
    if held < want {
        return ObsRead::NotYet;
    }
    if held > want {
        return ObsRead::Overwritten;
    }
    if seq1 % 2 == 1 || seq2 != seq1 || fields.slot != want {
        return ObsRead::Torn;
    }
    ObsRead::Ready(SlotObs {
        slot: want,
        owner: (fields.owner != NO_TASK).then_some(fields.owner),
        done: fields.flags & OBS_DONE != 0,
        owner_ns: fields.owner_ns,
        avail_ns: fields.avail_ns,
        stolen_ns: fields.stolen_ns,
        late_ns: fields.late_ns,
    })
}

/// One seqlock read of `e`: (first seq, fields, second seq). The fields are relaxed atomic
/// loads after an acquire load of `seq`; the acquire fence orders them before the second
/// `seq` load (a seqlock reader in the C++/Rust memory model: on x86 both are plain loads,
/// on arm64 the fence is a `dmb ishld`).
pub fn load(e: &ObsEntry) -> (u64, RawObs, u64) {
    let seq1 = e.seq.load(Ordering::Acquire);
    let fields = RawObs {
        slot: e.slot.load(Ordering::Relaxed),
        owner: e.owner.load(Ordering::Relaxed),
        flags: e.flags.load(Ordering::Relaxed),
        owner_ns: e.owner_ns.load(Ordering::Relaxed),
        avail_ns: e.avail_ns.load(Ordering::Relaxed),
        stolen_ns: e.stolen_ns.load(Ordering::Relaxed),
        late_ns: e.late_ns.load(Ordering::Relaxed),
    };
    fence(Ordering::Acquire);
    let seq2 = e.seq.load(Ordering::Relaxed);
    (seq1, fields, seq2)
}

/// Reads slot `want` from entry `e`, retrying a torn read up to [`TORN_TRIES`] times.
pub fn read_entry(e: &ObsEntry, want: u64) -> ObsRead {
    let mut r = ObsRead::Torn;
    for _ in 0..TORN_TRIES {
        let (seq1, fields, seq2) = load(e);
        r = decode(want, seq1, fields, seq2);
        if r != ObsRead::Torn {
            break;
        }
        std::hint::spin_loop();
    }
    r
}

/// The index of (managed index `m`, `slot`) in the ring.
pub fn index(m: usize, slot: u64) -> usize {
    m * OBS_RING as usize + (slot % OBS_RING) as usize
}

/// The observation ring of a loaded scheduler, mmapped read-only (`Scheduler::obs_reader`).
/// `Send`: the mapping is shared, read-only memory accessed through atomics only.
pub struct ObsReader {
    base: NonNull<ObsEntry>,
    /// Bytes mapped.
    len: usize,
    /// Managed CPUs in plan order (entry rows).
    managed: Vec<u32>,
}

// SAFETY: the mapping is read-only shared memory, read only through atomics; nothing in it is
// tied to the thread that created it, and munmap in Drop is valid from any thread.
unsafe impl Send for ObsReader {}

impl ObsReader {
    /// Maps the `slot_obs` map `fd` (`managed.len() * OBS_RING` entries) read-only.
    pub fn map(fd: BorrowedFd<'_>, managed: &[u32]) -> std::io::Result<Self> {
        let entries = managed.len().max(1) * OBS_RING as usize;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let len = (entries * std::mem::size_of::<ObsEntry>()).div_ceil(page) * page;
        // SAFETY: a new shared read-only mapping of the map's value area (a BPF_F_MMAPABLE
        // array maps its values from offset 0); the result is checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = NonNull::new(ptr.cast::<ObsEntry>())
            .ok_or_else(|| std::io::Error::other("mmap returned a null mapping"))?;
        Ok(ObsReader {
            base,
            len,
            managed: managed.to_vec(),
        })
    }

    /// The managed CPUs, in the order of the plan (the rows of the ring).
    pub fn managed(&self) -> &[u32] {
        &self.managed
    }

    /// The observation of `slot` on managed CPU `cpu` (its CPU id). A CPU that is not managed
    /// has no entry: `NotYet` (and a debug assertion).
    pub fn read(&self, cpu: u32, slot: u64) -> ObsRead {
        match self.managed.iter().position(|&c| c == cpu) {
            Some(m) => self.read_index(m, slot),
            None => {
                debug_assert!(false, "cpu {cpu} is not a managed CPU");
                ObsRead::NotYet
            }
        }
    }

    /// The observation of `slot` on the managed CPU of index `m` (plan order).
    pub fn read_index(&self, m: usize, slot: u64) -> ObsRead {
        if m >= self.managed.len() {
            return ObsRead::NotYet;
        }
        // SAFETY: index(m, slot) < managed.len() * OBS_RING entries, all inside the mapping;
        // the memory lives as long as self and is only read through atomics.
        let e = unsafe { &*self.base.as_ptr().add(index(m, slot)) };
        read_entry(e, slot)
    }
}

impl Drop for ObsReader {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly the mapping created in `map`, unmapped once.
        let rc = unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        if rc != 0 {
            eprintln!(
                "scx_tt: warning: unmapping the observation ring: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Reads every closed slot of every managed CPU once, in order, from a ring that is polled
/// (about) once a slot: the reader of the test hook `SCX_TT_TEST_OBS` (docs/run-output.md).
/// Pure: the ring comes in as a read function.
#[derive(Clone, Debug)]
pub struct ObsFollower {
    /// Per managed index: the next slot to read.
    next: Vec<u64>,
    pub counts: FollowCounts,
}

/// What an [`ObsFollower`] met.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FollowCounts {
    pub ready: u64,
    /// Reads that were torn on every try (retried at the next poll).
    pub torn: u64,
    /// Slots replaced before they were read.
    pub overwritten: u64,
    /// Slots never published (a skipped tick), given up [`MISSING_AFTER`] slots later.
    pub missing: u64,
}

/// A slot still `NotYet` this many slots after it is given up as never published: a tick may
/// come several slots late under TCG before it publishes (and a late skip publishes nothing
/// for the slots it skips); half the ring leaves the slots after it time to be read.
pub const MISSING_AFTER: u64 = OBS_RING / 2;

impl ObsFollower {
    /// Follows `cpus` managed CPUs from slot `first`.
    pub fn new(cpus: usize, first: u64) -> Self {
        ObsFollower {
            next: vec![first; cpus],
            counts: FollowCounts::default(),
        }
    }

    /// Reads, per managed index `m`, the slots from the next unread one up to `cur - 1` (`cur`:
    /// the slot in progress, which has not closed) with `read(m, slot)`, and hands each
    /// observation to `out(m, obs)`. A torn read or a slot not published yet stops that CPU
    /// until the next poll.
    pub fn poll(
        &mut self,
        cur: u64,
        mut read: impl FnMut(usize, u64) -> ObsRead,
        mut out: impl FnMut(usize, SlotObs),
    ) {
        for (m, next) in self.next.iter_mut().enumerate() {
            while *next < cur {
                match read(m, *next) {
                    ObsRead::Ready(o) => {
                        self.counts.ready += 1;
                        out(m, o);
                    }
                    ObsRead::Overwritten => self.counts.overwritten += 1,
                    ObsRead::Torn => {
                        self.counts.torn += 1;
                        break;
                    }
                    ObsRead::NotYet if cur >= *next + MISSING_AFTER => self.counts.missing += 1,
                    ObsRead::NotYet => break,
                }
                *next += 1;
            }
        }
    }
}

/// The test hook's comparison of the observation ring with the ring-buffer records: both are
/// written by the same tick from the same accumulator, so owner, owner_ns and late_ns must be
/// equal for every (CPU, slot) read from both.
#[derive(Clone, Debug, Default)]
pub struct ObsAudit {
    /// (cpu, slot) → the observation read.
    obs: std::collections::HashMap<(u32, u64), SlotObs>,
    /// (cpu, slot) → (owner, owner_ns, late_ns) of the record.
    recs: std::collections::HashMap<(u32, u64), (Option<u32>, u64, i64)>,
}

/// The outcome of an [`ObsAudit`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AuditReport {
    pub records: u64,
    pub observations: u64,
    /// Records with an observation of the same (CPU, slot).
    pub compared: u64,
    pub agree: u64,
    /// The first few disagreements, as text.
    pub disagree: Vec<String>,
    pub disagree_count: u64,
    pub records_without_observation: u64,
    pub observations_without_record: u64,
    /// Observations flagged done.
    pub done: u64,
}

impl ObsAudit {
    pub fn observation(&mut self, cpu: u32, o: SlotObs) {
        self.obs.insert((cpu, o.slot), o);
    }

    pub fn record(&mut self, cpu: u32, slot: u64, owner: Option<u32>, owner_ns: u64, late_ns: i64) {
        self.recs.insert((cpu, slot), (owner, owner_ns, late_ns));
    }

    pub fn report(&self) -> AuditReport {
        let mut r = AuditReport {
            records: self.recs.len() as u64,
            observations: self.obs.len() as u64,
            done: self.obs.values().filter(|o| o.done).count() as u64,
            ..AuditReport::default()
        };
        let mut keys: Vec<_> = self.recs.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let rec = self.recs[&k];
            let Some(o) = self.obs.get(&k) else {
                r.records_without_observation += 1;
                continue;
            };
            r.compared += 1;
            if (o.owner, o.owner_ns, o.late_ns) == rec {
                r.agree += 1;
            } else {
                r.disagree_count += 1;
                if r.disagree.len() < 5 {
                    r.disagree.push(format!(
                        "cpu {} slot {}: record (owner, owner_ns, late_ns) {rec:?}, observation \
                         ({:?}, {}, {})",
                        k.0, k.1, o.owner, o.owner_ns, o.late_ns
                    ));
                }
            }
        }
        r.observations_without_record = self
            .obs
            .keys()
            .filter(|k| !self.recs.contains_key(k))
            .count() as u64;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes slot `slot` into `e` as BPF does (odd seq, fields, even seq).
    fn publish(e: &ObsEntry, slot: u64, owner: u32, flags: u32) {
        e.seq.store(2 * slot + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        e.slot.store(slot, Ordering::Relaxed);
        e.owner.store(owner, Ordering::Relaxed);
        e.flags.store(flags, Ordering::Relaxed);
        e.owner_ns.store(1_000 + slot, Ordering::Relaxed);
        e.avail_ns.store(2_000 + slot, Ordering::Relaxed);
        e.stolen_ns.store(300, Ordering::Relaxed);
        e.late_ns.store(-5, Ordering::Relaxed);
        e.seq.store(2 * slot + 2, Ordering::Release);
    }

    fn buffer(cpus: usize) -> Vec<ObsEntry> {
        (0..cpus * OBS_RING as usize)
            .map(|_| ObsEntry::default())
            .collect()
    }

    #[test]
    fn a_never_written_entry_is_not_yet() {
        let buf = buffer(1);
        assert_eq!(read_entry(&buf[index(0, 3)], 3), ObsRead::NotYet);
        // slot 0's entry too: seq 0 is "never", seq 2 would be slot 0 complete
        assert_eq!(read_entry(&buf[index(0, 0)], 0), ObsRead::NotYet);
    }

    #[test]
    fn a_complete_entry_decodes_every_field() {
        let buf = buffer(2);
        publish(&buf[index(1, 21)], 21, 4, OBS_DONE);
        assert_eq!(
            read_entry(&buf[index(1, 21)], 21),
            ObsRead::Ready(SlotObs {
                slot: 21,
                owner: Some(4),
                done: true,
                owner_ns: 1_021,
                avail_ns: 2_021,
                stolen_ns: 300,
                late_ns: -5,
            })
        );
        // the other CPU's row is untouched
        assert_eq!(read_entry(&buf[index(0, 21)], 21), ObsRead::NotYet);
    }

    #[test]
    fn a_free_slot_has_no_owner_and_slot_zero_is_readable() {
        let buf = buffer(1);
        publish(&buf[index(0, 0)], 0, NO_TASK, 0);
        match read_entry(&buf[index(0, 0)], 0) {
            ObsRead::Ready(o) => assert_eq!((o.slot, o.owner, o.done), (0, None, false)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_entry_of_an_older_slot_is_stale_not_yet_and_of_a_newer_one_overwritten() {
        let buf = buffer(1);
        // slot 5 and slot 5 + OBS_RING share an entry
        publish(&buf[index(0, 5)], 5, 1, 0);
        assert_eq!(read_entry(&buf[index(0, 21)], 21), ObsRead::NotYet);
        publish(&buf[index(0, 21)], 21, 1, 0);
        assert_eq!(read_entry(&buf[index(0, 5)], 5), ObsRead::Overwritten);
        assert!(matches!(
            read_entry(&buf[index(0, 21)], 21),
            ObsRead::Ready(_)
        ));
    }

    #[test]
    fn an_entry_being_written_is_torn() {
        let buf = buffer(1);
        let e = &buf[index(0, 7)];
        publish(e, 7, 1, 0);
        // the writer has stored the odd seq of slot 7 + OBS_RING: that slot reads torn, slot
        // 7 overwritten (its data is being replaced), an even later slot not yet
        let next = 7 + OBS_RING;
        e.seq.store(2 * next + 1, Ordering::SeqCst);
        assert_eq!(read_entry(e, next), ObsRead::Torn);
        assert_eq!(read_entry(e, 7), ObsRead::Overwritten);
        assert_eq!(read_entry(e, next + OBS_RING), ObsRead::NotYet);
    }

    #[test]
    fn a_seq_that_changes_between_the_two_loads_is_torn() {
        let fields = RawObs {
            slot: 9,
            ..RawObs::default()
        };
        // complete for 9 at the first load, then rewritten (odd) or completed again (even)
        assert_eq!(decode(9, 20, fields, 21 + 32), ObsRead::Torn);
        assert_eq!(decode(9, 20, fields, 20 + 32), ObsRead::Torn);
        // the same seq twice, but fields of another slot: torn as well (never misread)
        let other = RawObs {
            slot: 25,
            ..RawObs::default()
        };
        assert_eq!(decode(9, 20, other, 20), ObsRead::Torn);
        assert!(matches!(decode(9, 20, fields, 20), ObsRead::Ready(_)));
    }

    #[test]
    fn seq_numbers_follow_the_intf_h_encoding() {
        assert_eq!(seq_complete(0), 2);
        assert_eq!(seq_complete(41), 84);
        // 2s+1 while written
        assert_eq!(decode(41, 83, RawObs::default(), 83), ObsRead::Torn);
    }

    #[test]
    fn concurrent_writes_are_never_misread() {
        // a writer republishes one entry for ever-later slots (all sharing the entry) while a
        // reader reads; every Ready must carry the fields of the slot it asked for. Both go on
        // for at least 20,000 operations each (or 10 s on a busy host).
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let buf: Arc<Vec<ObsEntry>> = Arc::new(buffer(1));
        let stop = Arc::new(AtomicBool::new(false));
        let writes = Arc::new(AtomicU64::new(0));
        let w = {
            let (buf, stop, writes) = (buf.clone(), stop.clone(), writes.clone());
            std::thread::spawn(move || {
                let mut k = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    publish(&buf[0], k * OBS_RING, 3, (k % 2) as u32);
                    k += 1;
                    writes.store(k, Ordering::Relaxed);
                }
            })
        };
        let start = std::time::Instant::now();
        let (mut reads, mut ready, mut torn) = (0u64, 0u64, 0u64);
        while (writes.load(Ordering::Relaxed) < 20_000 || reads < 20_000)
            && start.elapsed().as_secs() < 10
        {
            // the slot most recently written, or the one being written now
            let want = (writes.load(Ordering::Relaxed).saturating_sub(1)) * OBS_RING;
            match read_entry(&buf[0], want) {
                ObsRead::Ready(o) => {
                    assert_eq!(o.slot, want);
                    assert_eq!(o.owner_ns, 1_000 + want);
                    assert_eq!(o.avail_ns, 2_000 + want);
                    ready += 1;
                }
                ObsRead::Torn => torn += 1,
                ObsRead::NotYet | ObsRead::Overwritten => {}
            }
            reads += 1;
        }
        stop.store(true, Ordering::Relaxed);
        w.join().expect("writer");
        assert!(reads > 0, "{reads} reads, {ready} ready, {torn} torn");
    }
    fn obs(slot: u64) -> SlotObs {
        SlotObs {
            slot,
            owner: Some(1),
            done: false,
            owner_ns: 10,
            avail_ns: 10,
            stolen_ns: 0,
            late_ns: 3,
        }
    }

    #[test]
    fn the_follower_reads_each_closed_slot_once_and_waits_for_unpublished_ones() {
        let mut f = ObsFollower::new(2, 0);
        let mut seen = Vec::new();
        // CPU 0 has slots 0-2 published, CPU 1 only 0; slot 3 is in progress
        f.poll(
            3,
            |m, s| {
                if m == 0 || s == 0 {
                    ObsRead::Ready(obs(s))
                } else {
                    ObsRead::NotYet
                }
            },
            |m, o| seen.push((m, o.slot)),
        );
        assert_eq!(seen, vec![(0, 0), (0, 1), (0, 2), (1, 0)]);
        // later: CPU 1's slot 1 is published now, slot 2 torn (retried next time)
        seen.clear();
        f.poll(
            4,
            |m, s| match (m, s) {
                (1, 2) => ObsRead::Torn,
                _ => ObsRead::Ready(obs(s)),
            },
            |m, o| seen.push((m, o.slot)),
        );
        assert_eq!(seen, vec![(0, 3), (1, 1)]);
        assert_eq!(f.counts.torn, 1);
        assert_eq!(f.counts.ready, 6);
    }

    #[test]
    fn the_follower_gives_up_a_slot_never_published_and_counts_overwritten_ones() {
        let mut f = ObsFollower::new(1, 10);
        // slot 10 was skipped (never published), 11 overwritten, the rest readable
        let read = |_: usize, s: u64| match s {
            10 => ObsRead::NotYet,
            11 => ObsRead::Overwritten,
            _ => ObsRead::Ready(obs(s)),
        };
        let mut n = 0;
        f.poll(10 + MISSING_AFTER - 1, read, |_, _| n += 1);
        assert_eq!(
            (n, f.counts.missing),
            (0, 0),
            "too early to give slot 10 up"
        );
        f.poll(10 + MISSING_AFTER, read, |_, _| n += 1);
        assert_eq!(f.counts.missing, 1);
        assert_eq!(f.counts.overwritten, 1);
        assert_eq!(n, MISSING_AFTER - 2);
    }

    #[test]
    fn the_audit_compares_owner_owner_ns_and_lateness_per_cpu_and_slot() {
        let mut a = ObsAudit::default();
        a.observation(1, obs(5));
        a.observation(
            1,
            SlotObs {
                done: true,
                ..obs(6)
            },
        );
        a.observation(1, obs(7));
        a.record(1, 5, Some(1), 10, 3);
        a.record(1, 6, Some(1), 11, 3);
        a.record(1, 8, None, 0, 0);
        let r = a.report();
        assert_eq!((r.records, r.observations, r.compared), (3, 3, 2));
        assert_eq!((r.agree, r.disagree_count, r.done), (1, 1, 1));
        assert!(
            r.disagree[0].starts_with("cpu 1 slot 6"),
            "{:?}",
            r.disagree
        );
        assert_eq!(
            (r.records_without_observation, r.observations_without_record),
            (1, 1)
        );
    }
}

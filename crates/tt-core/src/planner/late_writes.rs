//! Late writes: table entries the planner decided in time but the edge wrote after their slot
//! had started (counted by the planner thread, reported in the summary).

/// Entries the planner thread wrote after their slot's tick had fired (a thread delayed between
/// deciding a slot and writing it: the decision was in time, the write was not). BPF keeps
/// the owner and cpuperf target its tick read for the whole slot (src/bpf/tt_sched.bpf.c F),
/// so such a slot ran the entry's previous value; the new one serves the entry's next use.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LateWrites {
    /// Distinct (CPU index, slot) pairs written late.
    pub slots: u64,
    /// The first [`LATE_WRITES_KEPT`] of them, as `[managed CPU index, slot]`.
    pub first: Vec<[u64; 2]>,
}

/// How many late-written slots [`LateWrites::first`] lists.
pub const LATE_WRITES_KEPT: usize = 64;

impl LateWrites {
    /// Counts the (CPU index, slot) pairs of `late` (in slot order per turn; repeats of the
    /// last pair, a slot's perf and owner entries, count once).
    pub fn note(&mut self, late: &[(usize, u64)]) {
        let mut last = None;
        for &(cpu, slot) in late {
            if last == Some((cpu, slot)) || self.first.contains(&[cpu as u64, slot]) {
                continue;
            }
            last = Some((cpu, slot));
            self.slots += 1;
            if self.first.len() < LATE_WRITES_KEPT {
                self.first.push([cpu as u64, slot]);
            }
        }
    }
}

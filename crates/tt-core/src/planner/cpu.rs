//! Online slot-shifting state of one managed CPU: capacity intervals with their current spare
//! capacity, the jobs with remaining and reserved execution, and the acceptance test and
//! guarantee routine for firm aperiodic jobs.
//!
//! # Problem
//! The offline table of a CPU repeats every frame. At run time jobs finish early, run slowly
//! (DVFS), leave slots idle (DPM) and new jobs arrive. The planner must always know how many slots
//! before any deadline are not committed to a guaranteed job, so that it can shift work, admit new
//! work and spend slack on energy without ever making a guaranteed job miss.
//!
//! # Terminology
//! - *slot*, *frame*, *job*, *capacity interval*: as in [`super::offline`]; here slots are
//!   absolute (slot 0 starts frame 0), frame `k` is `[k·F, (k+1)·F)`.
//! - *work unit*: [`UNIT`] units are one slot of execution at full speed; a slot at normalised
//!   frequency `f` executes `f·UNIT` units (`f` in parts per million, `freq_ppm`).
//! - *remaining* `rem(j)`: units job `j` may still execute (starts at `wcet·UNIT`).
//! - *reserved spare capacity* `res(j)`: executed units not yet returned to `j`'s interval. Every
//!   whole slot of it is converted into spare capacity of `j`'s interval (Algorithm 1 of
//!   000_f6515751863e6efa). `rem(j) + res(j)` is always a multiple of `UNIT`: the slots `j` still
//!   holds.
//! - *spare capacity* `sc(I)`: slots of `I` (from now on) not needed by guaranteed jobs, with
//!   borrowing: `sc(I) = |I ∩ [now,∞)| − Σ_{j∈I} (rem+res)(j)/UNIT + min(0, sc(next(I)))`.
//! - *horizon*: the current frame and the next one, complete; the frame after them is built a
//!   little every slot. Firm deadlines are clamped to the horizon end (a job meeting an earlier
//!   deadline meets its own).
//!
//! # Algorithm
//! ```text
//! per slot s (consume, then reconcile at s+1 with what really ran):
//!   consume(s):    sc(I_cur) -= 1
//!                  if job j runs at f: e = min(f, rem j); rem -= e; res += e; convert(j)
//!   convert(j):    while res(j) >= UNIT: res -= UNIT; add_sc(I_j, +1)
//!   reconcile(a):  a = units j really executed; if a < e and j not done: undo (e - a),
//!                  taking a slot back from I_j if res goes below 0
//!   finish(j):     add_sc(I_j, (rem + res)/UNIT)   // early completion frees what is left
//!   add_sc(I, δ):  sc(I) += δ; δ' = min(0,sc_new) - min(0,sc_old); repeat on prev(I) while
//!                  δ' != 0 and I != I_cur
//!
//! acceptance(c, d):  avail = Σ_{I ⊆ [now,d)} max(0, sc(I))
//!                          + min(d - max(start,now), max(0, sc(I_d)))   // I_d ∋ d, split part
//!                   accept iff avail >= c
//!                   (a DPM idle period in progress is ended early if the job needs its slots)
//! guarantee(c, d):  if d inside I = [s,e): split into [s,d) (sc = min(d-s', sc(I)), no jobs)
//!                   and [d,e) (sc = sc(I) - (d-s'))
//!                   add the job to the interval ending at d; add_sc(that interval, -c)
//! ```
//!
//! # Observations (the closed loop)
//! Every decided slot is *pending* until its observation is applied (`reconcile`, oldest
//! first). The step-by-step protocol reconciles slot `s-1` before deciding `s`; the kernel path
//! learns what a slot did only `lead` slots later, so several slots may be pending
//! (`Planner::defer_observations`). A job whose whole remaining work is credited to pending
//! slots is *parked*: out of the ready queue, so no slot is decided for work it does not have.
//! A late reconciliation then
//! - gives back what the job did not run (`uncredit`, which unparks it), unless the job's
//!   interval is over: that work is lost (reported `Lost`; `Miss` stays the planner's own
//!   failure: work left at a deadline by its accounting). Whole slots it needs for that
//!   come only from free capacity (what the acceptance test would give a new job of the same
//!   deadline): the work no free slot can hold is reported `Lost` and absorbed by the job, so a
//!   platform loss never displaces another guarantee;
//! - on completion frees what the job holds and *voids* the slots decided for it later: they
//!   stay spent (time passed or will pass whatever runs in them), the job no longer runs there;
//! - cuts a job off as an overrun only at its last pending slot (`rem = 0`, not done).
//!
//! # Properties
//! 1. (SC-exact) `max(0, sc(I))` is the number of slots of `I` left free when every guaranteed job
//!    runs as late as possible; the acceptance test is therefore exact on the current state.
//! 2. (SC-nonneg) With jobs executing at most their WCET, `sc(I_cur) ≥ 0` after every slot.
//! 3. (Commit) `rem(j) + res(j) ≡ 0 (mod UNIT)` for every live job.
//! 4. (Cover) Intervals are sorted, disjoint and cover `[horizon start, horizon end)`.

use super::offline::{self, Job, Slot};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

mod admission;
mod observe;
mod template;

/// Work units per slot at full speed (normalised frequency 1.0 = `UNIT` parts per million).
pub const UNIT: u64 = 1_000_000;

/// The largest WCET, relative deadline or period (in slots) the planner represents:
/// `u32::MAX`. Below it `wcet · UNIT` fits 64 bits with room (and `wcet` an `i64`), so the job's
/// work and the spare-capacity counters cannot wrap; it is far above any horizon (two frames of at
/// most 1,000,000 slots each), so no job this long could be accepted anyway. Admissions above it
/// are refused (`Rejection::Invalid`), and the control and arrivals parsers refuse such values
/// with the field's name (docs/planner.md, "Limits").
pub const MAX_JOB_SLOTS: u64 = u32::MAX as u64;

/// A value derived from the rest of a CPU's state only to skip work (a cache): left out of
/// `Debug`, so that states that differ only in what they have cached print the same (the
/// control tests compare planner states by their `Debug` text).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cached<T>(pub(crate) T);

impl<T> std::fmt::Debug for Cached<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("_")
    }
}

/// What the last decision of a CPU found, for the quiet path (`policy::step_quiet`): the next
/// slot with nothing due finds the same, as long as nothing changed outside `step`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Quiet {
    /// Nothing known: the general decision.
    #[default]
    No,
    /// No soft job queued, no job ready, no idle period (`bss`, `dvfs`): best-effort or idle.
    Idle,
    /// No soft job queued, no idle period: the EDF top ran.
    Job,
}

/// The state a `dvfs`/`dpm+dvfs` job decision was taken on (before its slot was charged):
/// `policy::dvfs_run` derives the run that follows from it without reading the slack again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SlackSeen {
    /// The slot decided (`CpuState::now`) and the job.
    pub(crate) now: Slot,
    pub(crate) job: usize,
    /// The job's remaining work and Algorithm 3's slack.
    pub(crate) c: u64,
    pub(crate) a: u64,
    /// The index of the job's interval, its spare capacity and the current interval's.
    pub(crate) ij: usize,
    pub(crate) sc_j: i64,
    pub(crate) sc0: i64,
    /// Whether the current interval has no unfinished job.
    pub(crate) free0: bool,
}

/// [`CpuState::iv_hint`] when it names no interval.
pub(crate) const NO_HINT: (Slot, usize) = (Slot::MAX, 0);

/// How a guaranteed job came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// An instance of a periodic task (offline table or admitted at run time).
    Periodic,
    /// An admitted firm aperiodic job.
    Firm,
}

/// A capacity interval of the horizon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Iv {
    pub start: Slot,
    pub end: Slot,
    /// Spare capacity in slots (negative: borrows from earlier intervals).
    pub sc: i64,
    /// Jobs of the interval that still hold capacity (unfinished).
    pub pending: u32,
}

/// A guaranteed job of the horizon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveJob {
    pub task: usize,
    pub kind: JobKind,
    pub release: Slot,
    pub deadline: Slot,
    /// Units the job may still execute.
    pub rem: u64,
    /// Reserved spare capacity in units (see the module doc).
    pub res: u64,
    /// WCET in slots (saturated at `u32::MAX`), for the CPU's load figure.
    pub wcet: u32,
    pub done: bool,
    /// Every unit of `rem` is credited to decided slots whose observations are still pending:
    /// the job is out of the ready queue until a reconciliation gives work back (see
    /// "Observations" in the module doc).
    pub parked: bool,
    /// Where the job's interval was when the job entered the horizon, as a count of intervals
    /// since slot 0 ([`CpuState::iv_popped`] plus its index then): [`CpuState::job_iv`] finds
    /// the interval without a search while no split moved it (a cache: checked before use).
    pub(crate) iv_at: Cached<u64>,
}

/// A soft aperiodic job: served in slack, no guarantee.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoftJob {
    pub task: usize,
    /// Units left before the job is cut off.
    pub rem: u64,
}

/// Result of the acceptance test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// Slots needed.
    pub needed: u64,
    /// Free slots before the (clamped) deadline.
    pub available: i64,
    /// The deadline the test used (the requested one clamped to the horizon).
    pub deadline: Slot,
}

/// What happened to a job during reconciliation or advancing, reported by `step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobEvent {
    Completed {
        task: usize,
        kind: JobKind,
    },
    /// Reached its WCET without completing: cut off.
    Overrun {
        task: usize,
        kind: JobKind,
    },
    /// Still had work at its deadline (never happens while jobs respect their WCET).
    Miss {
        task: usize,
        kind: JobKind,
        deadline: Slot,
        rem_units: u64,
    },
    /// Lost `units` of work to the platform (an owner that was not ready, or whose slot the
    /// platform took in part) that free capacity could not give back: every free slot before
    /// its deadline is promised to other guaranteed jobs, or the loss was observed after its
    /// deadline. The job absorbs the loss (it may be cut off before its work is done).
    Lost {
        task: usize,
        kind: JobKind,
        deadline: Slot,
        units: u64,
    },
    SoftCompleted {
        task: usize,
    },
    SoftCutOff {
        task: usize,
    },
}

/// What a CPU was told to run in the slot being consumed, for reconciliation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Running {
    Job {
        idx: usize,
        /// Units credited: at most `freq_ppm`, so at most [`UNIT`] (32 bits keep a pending slot
        /// at 32 bytes, two of the CPU's hot lines hold the whole queue).
        credited: u32,
        freq_ppm: u32,
    },
    Soft {
        freq_ppm: u32,
    },
    Other,
}

/// A decided slot whose observation has not been applied yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    pub(crate) slot: Slot,
    pub(crate) run: Running,
}

/// The decided slots of a CPU whose observations are pending, oldest first: a deque whose
/// oldest entry is kept inline. With observations applied by each `step` (the step-by-step
/// protocol) at most one slot is pending, so the queue never leaves the CPU's hot lines.
#[derive(Clone, Debug, Default)]
#[repr(align(64))]
pub(crate) struct PendingQueue {
    /// The oldest pending slot (`None` only when the queue is empty).
    head: Option<Pending>,
    rest: VecDeque<Pending>,
}

impl PendingQueue {
    pub(crate) fn len(&self) -> usize {
        self.head.is_some() as usize + self.rest.len()
    }

    pub(crate) fn front(&self) -> Option<&Pending> {
        self.head.as_ref()
    }

    pub(crate) fn push_back(&mut self, p: Pending) {
        if self.head.is_none() {
            self.head = Some(p);
        } else {
            self.rest.push_back(p);
        }
    }

    /// What runs in the one pending slot, if exactly one slot is pending.
    pub(crate) fn only(&self) -> Option<Running> {
        match self.head {
            Some(p) if self.rest.is_empty() => Some(p.run),
            _ => None,
        }
    }

    pub(crate) fn pop_front(&mut self) -> Option<Pending> {
        let front = self.head.take();
        if !self.rest.is_empty() {
            self.head = self.rest.pop_front();
        }
        front
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Pending> + '_ {
        self.head.iter().chain(self.rest.iter())
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Pending> + '_ {
        self.head.iter_mut().chain(self.rest.iter_mut())
    }
}

/// The online state of one managed CPU.
///
/// Intervals and jobs live in deques: the front interval is the current one (past intervals are
/// popped as time passes), jobs are addressed by a sequence number (`seq - job_base` indexes
/// `jobs`; finished jobs are popped from the front). The frame after next is built a few
/// intervals and jobs per slot during the current frame, so no slot pays for a whole frame.
#[derive(Clone, Debug)]
// `repr(C)`, aligned: the fields every `step` reads come first, in the first cache lines of the
// state (the compiler's own order scattered them over all seven), so that a slot with nothing
// due touches few lines of each CPU. The cold ones (template, build cursors) follow.
#[repr(C, align(64))]
pub struct CpuState {
    /// `advance` has nothing to do before this slot (no interval ends, no job is released or
    /// due, no share of the build): the first slot something is due, computed by the last full
    /// `advance` ([`Self::next_due`]); 0 = unknown. Every change outside `step` resets it.
    pub(crate) quiet_until: Cached<Slot>,
    /// First slot not promised to a DPM idle period.
    pub(crate) idle_until: Slot,
    /// The slot of the last `advance` (the slot being decided).
    pub(crate) now: Slot,
    /// Sequence number of `jobs[0]`.
    pub(crate) job_base: usize,
    /// Intervals popped from the front of `ivs` since slot 0 (`LiveJob::iv_at`).
    pub(crate) iv_popped: Cached<u64>,
    /// `(deadline, index in ivs)` of the interval a job last charged in `consume` ended at:
    /// [`Self::iv_of`] answers it without a search until `ivs` is popped or split
    /// ([`NO_HINT`] then).
    pub(crate) iv_hint: Cached<(Slot, usize)>,
    /// What the last decision found (reset with `quiet_until`, and by a soft job's arrival).
    pub(crate) quiet: Cached<Quiet>,
    /// What Equation 3 read for the last job decision under `dvfs`/`dpm+dvfs`, before the slot
    /// was charged (`policy::run_job`), for `policy::dvfs_run`.
    pub(crate) slack_seen: Cached<SlackSeen>,
    /// Whether best-effort work may run in this CPU's slack.
    pub has_be: bool,
    /// Set by `Planner::step` around a decision that starts a quiet run: `consume` then only
    /// records the slot as pending and the run's closed-form charge takes it with the rest
    /// ([`Self::charge_quiet_run`]; a soft slot is charged at once, it starts no run).
    pub(crate) defer_charge: Cached<bool>,
    /// Decided slots not reconciled yet, oldest first (one in the step-by-step protocol, up to
    /// the observation window when observations arrive late).
    pub(crate) pending: PendingQueue,
    /// Intervals from the current one on: the horizon, then the frame being built.
    pub(crate) ivs: VecDeque<Iv>,
    pub(crate) jobs: VecDeque<LiveJob>,
    pub(crate) soft: VecDeque<SoftJob>,
    /// Released unfinished jobs by (deadline, seq); finished ones are dropped lazily.
    pub(crate) ready: BinaryHeap<Reverse<(Slot, usize)>>,
    /// Slots of work per frame in the template (offline jobs plus admitted periodic tasks).
    pub(crate) template_slots: u64,
    /// WCET slots of the firm jobs guaranteed here and not finished.
    pub(crate) firm_slots: u64,
    pub(crate) frame: Slot,
    /// Frames before this one are complete: the horizon ends at `next_frame · frame`.
    pub(crate) next_frame: u64,
    /// Offset in the frame from which this CPU builds the frame after next (see
    /// [`Self::stagger_build`]).
    pub(crate) build_offset: Slot,
    /// Unreleased jobs (seq) in release order.
    pub(crate) unreleased: VecDeque<usize>,
    /// Build cursors into `template_ivs` and `template_by_release` for frame `next_frame`.
    pub(crate) build_iv: usize,
    pub(crate) build_job: usize,
    /// `iv_popped + index` of frame `next_frame`'s first interval (`LiveJob::iv_at`).
    pub(crate) build_iv_at: Cached<u64>,
    /// Intervals and jobs built per slot while building (`⌈items / (frame/2)⌉ + 1`, at least
    /// 64).
    pub(crate) build_per_slot: usize,
    /// Extra job slots of the job rings beyond three frames plus 64 (see [`Self::stagger_build`]).
    pub(crate) ring_pad: usize,
    /// Frame template: offline jobs plus admitted periodic tasks.
    pub(crate) template: Vec<Job>,
    pub(crate) template_kind: Vec<JobKind>,
    /// Template jobs in release order.
    pub(crate) template_by_release: Vec<usize>,
    pub(crate) template_ivs: Vec<offline::Interval>,
    /// `template_ivs` and the jobs of `template_by_release` as they enter the horizon, relative to
    /// the frame start: the build copies these flat arrays instead of chasing the template's
    /// per-interval job lists, which are cold after half a frame without a build.
    pub(crate) build_ivs: Vec<Iv>,
    pub(crate) build_jobs: Vec<LiveJob>,
}

impl CpuState {
    /// State at slot 0 from the CPU's frame jobs (validated feasible offline).
    pub fn new(jobs: &[Job], kinds: &[JobKind], frame: Slot, has_be: bool) -> Self {
        let mut s = CpuState {
            frame,
            template: jobs.to_vec(),
            template_kind: kinds.to_vec(),
            template_by_release: Vec::new(),
            template_ivs: Vec::new(),
            build_ivs: Vec::new(),
            build_jobs: Vec::new(),
            ivs: VecDeque::new(),
            jobs: VecDeque::new(),
            job_base: 0,
            iv_popped: Cached(0),
            ready: BinaryHeap::new(),
            unreleased: VecDeque::new(),
            soft: VecDeque::new(),
            next_frame: 0,
            build_iv: 0,
            build_job: 0,
            build_iv_at: Cached(0),
            build_offset: 0,
            build_per_slot: 1,
            ring_pad: 0,
            idle_until: 0,
            pending: PendingQueue::default(),
            now: 0,
            quiet_until: Cached(0),
            iv_hint: Cached(NO_HINT),
            slack_seen: Cached(SlackSeen::default()),
            quiet: Cached(Quiet::No),
            has_be,
            defer_charge: Cached(false),
            template_slots: 0,
            firm_slots: 0,
        };
        s.rebuild_template();
        s.build(usize::MAX);
        s.build(usize::MAX);
        s
    }

    /// Load figure of the multicore negotiation: slots of guaranteed work per frame in the
    /// template plus the WCET slots of unfinished firm jobs. Lower is less loaded.
    pub fn load_slots(&self) -> u64 {
        self.template_slots + self.firm_slots
    }

    /// End of the horizon (the complete frames).
    pub fn horizon_end(&self) -> Slot {
        self.next_frame * self.frame
    }

    /// Intervals of the horizon, the current one first.
    pub fn intervals(&self) -> impl DoubleEndedIterator<Item = &Iv> + '_ {
        let n = self.ivs.partition_point(|iv| iv.end <= self.horizon_end());
        self.ivs.range(..n)
    }

    /// Whether planner task `task` has a guaranteed job here that still needs slots (within the
    /// horizon or beyond it).
    pub fn has_unfinished(&self, task: usize) -> bool {
        self.jobs.iter().any(|j| j.task == task && !j.done)
    }

    /// Unfinished guaranteed jobs of the horizon.
    pub fn live_jobs(&self) -> impl Iterator<Item = &LiveJob> + '_ {
        let end = self.horizon_end();
        self.jobs
            .iter()
            .filter(move |j| !j.done && j.deadline <= end)
    }

    pub fn soft_queue_len(&self) -> usize {
        self.soft.len()
    }

    /// Bytes of this CPU's planner state (struct plus heap capacity).
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        size_of::<Self>()
            + self.template.capacity() * size_of::<Job>()
            + self.template_kind.capacity() * size_of::<JobKind>()
            + self.template_by_release.capacity() * size_of::<usize>()
            + self
                .template_ivs
                .iter()
                .map(|i| size_of::<offline::Interval>() + i.jobs.capacity() * size_of::<usize>())
                .sum::<usize>()
            + self.build_ivs.capacity() * size_of::<Iv>()
            + self.build_jobs.capacity() * size_of::<LiveJob>()
            + self.ivs.capacity() * size_of::<Iv>()
            + self.jobs.capacity() * size_of::<LiveJob>()
            + self.ready.capacity() * size_of::<Reverse<(Slot, usize)>>()
            + self.unreleased.capacity() * size_of::<usize>()
            + self.soft.capacity() * size_of::<SoftJob>()
    }

    pub(crate) fn job(&self, seq: usize) -> &LiveJob {
        &self.jobs[seq - self.job_base]
    }

    fn job_mut(&mut self, seq: usize) -> &mut LiveJob {
        &mut self.jobs[seq - self.job_base]
    }

    /// Whether job `seq` is finished (or already dropped).
    fn is_done(&self, seq: usize) -> bool {
        seq < self.job_base || self.jobs[seq - self.job_base].done
    }

    /// Index of job `seq`'s interval: where the job's [`LiveJob::iv_at`] says if the interval
    /// ending at its deadline is there (it is unless a firm job's split has moved it since the
    /// job entered the horizon), else [`Self::iv_of`]'s search. Saves the search's probe loop,
    /// whose exit differs from CPU to CPU (a mispredicted branch per lookup), when a job's
    /// first slot is charged.
    #[inline]
    pub(crate) fn job_iv(&self, seq: usize) -> usize {
        let j = self.job(seq);
        let at = j.iv_at.0.wrapping_sub(self.iv_popped.0) as usize;
        match self.ivs.get(at) {
            Some(iv) if iv.end == j.deadline => at,
            _ => self.iv_of(j.deadline),
        }
    }

    /// Index of the interval ending at `deadline` (every live job's interval ends at its deadline).
    pub(crate) fn iv_of(&self, deadline: Slot) -> usize {
        let Cached((hint_deadline, hint)) = self.iv_hint;
        if hint_deadline == deadline {
            debug_assert_eq!(self.ivs[hint].end, deadline);
            return hint;
        }
        // Running jobs are mostly due within the next few intervals: probe those first.
        let near = self.ivs.iter().take(8).position(|iv| iv.end >= deadline);
        let i = near.unwrap_or_else(|| self.first_ending_from(deadline));
        debug_assert!(i < self.ivs.len() && self.ivs[i].end == deadline);
        i
    }

    /// Index of the first interval ending at or after `slot` (`ivs.len()` if none): the
    /// `partition_point(|iv| iv.end < slot)` of the deque, found by interpolation. Interval ends
    /// spread roughly evenly over the horizon, so the guess `(slot − start) / span · len` lands
    /// within a few intervals of the answer: one or two cache lines instead of the ~8 probes of a
    /// binary search, each a miss on a CPU whose state is cold (admissions). A guess that misses
    /// by more than a few intervals falls back to the binary search on the narrowed range.
    pub(crate) fn first_ending_from(&self, slot: Slot) -> usize {
        const WALK: usize = 4;
        let ivs = &self.ivs;
        let n = ivs.len();
        let (Some(first), Some(last)) = (ivs.front(), ivs.back()) else {
            return 0;
        };
        if first.end >= slot {
            return 0;
        }
        if last.end < slot {
            return n;
        }
        // Invariant: ivs[lo].end < slot <= ivs[hi].end.
        let (mut lo, mut hi) = (0, n - 1);
        let span = (last.end - first.start).max(1) as u128;
        let guess = ((slot - first.start) as u128 * n as u128 / span) as usize;
        let g = guess.clamp(lo + 1, hi);
        if ivs[g].end < slot {
            lo = g;
            for _ in 0..WALK {
                if lo + 1 == hi || ivs[lo + 1].end >= slot {
                    return lo + 1;
                }
                lo += 1;
            }
        } else {
            hi = g;
            for _ in 0..WALK {
                if hi - 1 == lo || ivs[hi - 1].end < slot {
                    return hi;
                }
                hi -= 1;
            }
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if ivs[mid].end < slot {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }

    /// `sc(I_i) += delta`, propagating the change of borrowing to earlier intervals (down to the
    /// current one).
    pub(crate) fn add_sc(&mut self, mut i: usize, mut delta: i64) {
        loop {
            let old = self.ivs[i].sc;
            let new = old + delta;
            self.ivs[i].sc = new;
            if i == 0 {
                return;
            }
            delta = new.min(0) - old.min(0);
            if delta == 0 {
                return;
            }
            i -= 1;
        }
    }

    /// Asks the cache for the lines of this CPU's state a full `step` reads first (the struct's
    /// hot fields): issued a few CPUs ahead by `Planner::step`, so that the misses of the CPUs
    /// due in one slot overlap instead of following one another.
    #[inline(always)]
    pub(crate) fn prefetch_state(&self) {
        let p = (self as *const Self).cast::<u8>();
        prefetch(p);
        prefetch(p.wrapping_add(64));
        prefetch(p.wrapping_add(128));
    }

    /// [`Self::prefetch_state`]'s second stage (the state's lines are in the cache by now):
    /// the lines its deques point at — the current interval and the next ones, the ready
    /// heap's top, the next job to release and its entry.
    #[inline(always)]
    pub(crate) fn prefetch_data(&self) {
        if let Some(iv) = self.ivs.front() {
            let p = (iv as *const Iv).cast::<u8>();
            prefetch(p);
            prefetch(p.wrapping_add(64));
        }
        prefetch(self.ready.as_slice().as_ptr().cast());
        if let Some(seq) = self.unreleased.front() {
            if let Some(j) = self.jobs.get(seq.wrapping_sub(self.job_base)) {
                prefetch((j as *const LiveJob).cast());
            }
        }
        if let Some(j) = self.jobs.front() {
            prefetch((j as *const LiveJob).cast());
        }
    }

    /// Forgets what the quiet path knows (a change outside `step`): the next step of this CPU
    /// takes the general path.
    pub(crate) fn forget_quiet(&mut self) {
        self.quiet_until.0 = 0;
        self.quiet.0 = Quiet::No;
    }

    /// [`Self::advance_all`], event-driven: a slot before [`Self::quiet_until`] only moves the
    /// clock (nothing is due in it), the others advance fully and find the next due slot.
    pub(crate) fn advance(&mut self, slot: Slot, pos: (u64, Slot), events: &mut Vec<JobEvent>) {
        if slot < self.quiet_until.0 {
            self.now = slot;
            return;
        }
        self.advance_all(slot, pos, events);
        self.quiet_until.0 = self.next_due(slot);
    }

    /// The first slot after `slot` (the slot of a full `advance`) at which `advance` has
    /// something to do: the current interval ends (every live job's deadline is an interval
    /// end, so no miss comes earlier; the ready top is counted too, conservatively), the next
    /// job is released, or this CPU's share of the build of the frame after next starts.
    pub(crate) fn next_due(&self, slot: Slot) -> Slot {
        let mut due = self.ivs.front().map_or(slot + 1, |iv| iv.end);
        if let Some(&Reverse((deadline, _))) = self.ready.peek() {
            due = due.min(deadline);
        }
        if let Some(&seq) = self.unreleased.front() {
            due = due.min(match self.is_done(seq) {
                true => slot + 1,
                false => self.job(seq).release,
            });
        }
        // Frame `next_frame` is built from offset `build_offset` of frame `next_frame - 2` on.
        let build = self.next_frame.saturating_sub(2) * self.frame + self.build_offset;
        due.min(build).max(slot + 1)
    }

    /// How far a quiet run decided at `slot` that would go on until `end` may go past
    /// [`Self::quiet_until`] (the first slot `advance` has something to do) because what is
    /// due there cannot change the run's decisions; `quiet_until` when nothing can be crossed.
    /// - `job = Some(seq)`: job `seq` runs (the EDF top).
    ///   - A release is crossed when the released job comes after `seq` in EDF order (a later
    ///     deadline, or the same deadline and a later sequence number): `seq` stays the top, and
    ///     a release changes no spare capacity nor any interval's count of unfinished jobs.
    ///   - An interval end is crossed. Under `bss` and `dpm` the job runs at full speed whatever
    ///     the slack. Under `dvfs`/`dpm+dvfs` the run has one of `policy::dvfs_run`'s regimes:
    ///     the job's own interval is current (the run ends by the job's deadline, that
    ///     interval's end); the current interval leads a free run (the run ends before its
    ///     `sc` is spent, or goes on where the spent `sc` and the interval end together, in the
    ///     next interval's regime: `policy::dvfs_phases`); or the slack is
    ///     `res + max(0, sc(I_j))` alone (`d = 0`). In the last, the current interval either
    ///     has an unfinished job due before `seq` (unreleased, or it would be the top: its
    ///     release stops the run first) or has no work and `sc ≤ 0`, so the next interval
    ///     borrows (`sc < 0`) and cannot lead a free run either; by induction no interval that
    ///     becomes current adds to the slack, and when the job's own interval becomes current
    ///     the slack only starts to fall by a slot per slot, which delays the frequency's drop
    ///     (`(c − m·f)·UNIT ≤ fl·(c + a − …)` holds later). So the decisions of the run stay
    ///     `seq` at `f`.
    ///
    ///   The closed-form charge charges each slot to the interval it lies in
    ///   ([`Self::charge_quiet_run`]).
    /// - `job = None`: a DPM idle period, which `decide` keeps whatever is released or ends
    ///   (`slot < idle_until` comes first). Releases and interval ends are crossed.
    ///
    /// Never crossed: the build of the frame after next (it goes on every slot once started),
    /// the deadline of the ready top or of a job released in the run (a miss is reported at its
    /// deadline), an unreleased job that is finished already (`advance` drops it at once).
    pub(crate) fn cross_due(&self, slot: Slot, end: Slot, job: Option<usize>) -> Slot {
        let due = self.quiet_until.0;
        let build = self.next_frame.saturating_sub(2) * self.frame + self.build_offset;
        let mut bound = end.min(build.max(slot + 1));
        if let Some(&Reverse((deadline, _))) = self.ready.peek() {
            bound = bound.min(deadline);
        }
        let key = job.map(|seq| (self.job(seq).deadline, seq));
        for &seq in &self.unreleased {
            let Some(j) = self.jobs.get(seq.wrapping_sub(self.job_base)) else {
                return due;
            };
            if j.release >= bound {
                break;
            }
            if j.done {
                return due;
            }
            if key.is_some_and(|k| (j.deadline, seq) < k) {
                bound = j.release;
                break;
            }
            bound = bound.min(j.deadline);
        }
        bound.max(due)
    }

    /// Drops the current interval (it has ended).
    pub(crate) fn pop_interval(&mut self) {
        self.ivs.pop_front();
        self.iv_popped.0 += 1;
        self.iv_hint.0 = NO_HINT;
    }

    /// Releases the jobs released at or before `slot` (what `advance` does at each slot up to
    /// `slot`), in release order.
    pub(crate) fn release_upto(&mut self, slot: Slot) {
        while let Some(&seq) = self.unreleased.front() {
            if !self.is_done(seq) && self.job(seq).release > slot {
                break;
            }
            self.unreleased.pop_front();
            if !self.is_done(seq) {
                self.ready.push(Reverse((self.job(seq).deadline, seq)));
            }
        }
    }

    /// Moves to `slot`: reports misses, drops past intervals, builds a share of the frame after
    /// next, releases jobs.
    pub(crate) fn advance_all(&mut self, slot: Slot, pos: (u64, Slot), events: &mut Vec<JobEvent>) {
        self.now = slot;
        while let Some(&Reverse((deadline, seq))) = self.ready.peek() {
            if deadline > slot && !self.is_done(seq) {
                break;
            }
            self.ready.pop();
            if !self.is_done(seq) {
                let j = self.job(seq);
                events.push(JobEvent::Miss {
                    task: j.task,
                    kind: j.kind,
                    deadline,
                    rem_units: j.rem,
                });
                // The job's interval is over: it holds nothing any more.
                self.job_mut(seq).rem = 0;
                self.job_mut(seq).res = 0;
                self.finish(seq);
            }
        }
        while self.ivs.front().is_some_and(|iv| iv.end <= slot) {
            self.pop_interval();
        }
        // `slot / frame` and `slot % frame`, the same for every CPU: computed once per step.
        let (k, offset) = pos;
        while self.next_frame < k + 2 {
            self.build(usize::MAX);
        }
        if self.next_frame == k + 2 && offset >= self.build_offset {
            // Spread frame k+2 over half of frame k, from this CPU's offset on.
            self.build(self.build_per_slot);
        }
        self.release_upto(slot);
    }

    /// The earliest-deadline released unfinished job.
    pub(crate) fn edf_top(&mut self) -> Option<usize> {
        while let Some(&Reverse((_, seq))) = self.ready.peek() {
            if !self.is_done(seq) {
                return Some(seq);
            }
            self.ready.pop();
        }
        None
    }
}

/// A hint that the line holding `p` is read soon (no effect on the program's state).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` never faults and changes no architectural state, whatever the
    // address (it is a hint: an invalid address is ignored); SSE is part of x86_64's baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of `n` jobs with uneven interval lengths (deadlines clustered, then sparse).
    fn state(n: u64, frame: Slot) -> CpuState {
        let jobs: Vec<Job> = (0..n)
            .map(|k| Job {
                task: k as usize,
                instance: 0,
                release: 0,
                deadline: if k < n / 2 {
                    k + 1
                } else {
                    frame - (n - k - 1) * 7
                },
                wcet: 1,
            })
            .collect();
        CpuState::new(&jobs, &vec![JobKind::Periodic; jobs.len()], frame, false)
    }

    /// `job_iv` against the search over the whole deque, for every live job at every slot of a
    /// CPU that builds frames, releases, runs and finishes jobs, and admits firm jobs that split
    /// intervals during its first frame: always the job's interval. The cached position misses
    /// while a split has moved the interval (the check matters) and is the one used for every
    /// job of the frames built after the splits (else the saving is gone).
    #[test]
    fn a_jobs_cached_interval_position_is_checked_and_mostly_right() {
        use crate::planner::policy::{decide, Freqs, Policy};
        let frame = 200;
        let mut cpu = state(20, frame);
        let (mut events, freqs) = (Vec::new(), Freqs::xeon_default());
        let (mut lookups, mut cached, mut splits) = (0u64, 0u64, 0u64);
        let (mut late, mut late_cached) = (0u64, 0u64);
        for slot in 0..6 * frame {
            if slot > 0 {
                cpu.reconcile(UNIT, UNIT, slot % 4 == 0, &mut events);
            }
            cpu.advance_all(slot, (slot / frame, slot % frame), &mut events);
            if slot % 23 == 0 && slot < frame {
                let d = slot + 1 + (slot * 7) % frame;
                let before = cpu.ivs.len();
                if cpu.acceptance(slot, 1, d).available >= 1 {
                    cpu.guarantee(slot, 5000 + slot as usize, 1, d);
                    splits += (cpu.ivs.len() > before) as u64;
                }
            }
            for seq in cpu.job_base..cpu.job_base + cpu.jobs.len() {
                let j = cpu.job(seq);
                if j.done || j.deadline <= slot {
                    continue;
                }
                let want = cpu.ivs.partition_point(|iv| iv.end < j.deadline);
                assert_eq!(cpu.job_iv(seq), want, "slot {slot} job {seq}");
                let hit = (j.iv_at.0.wrapping_sub(cpu.iv_popped.0) == want as u64) as u64;
                lookups += 1;
                cached += hit;
                // frames 4 and 5 were built from frame 2 on, after the last split
                if j.release >= 4 * frame {
                    late += 1;
                    late_cached += hit;
                }
            }
            decide(&mut cpu, slot, Policy::Bss, &freqs);
        }
        assert!(splits > 3, "only {splits} splits");
        assert!(
            cached < lookups,
            "no lookup needed the search ({lookups} lookups)"
        );
        assert!(late > 1000, "only {late} lookups after the splits");
        assert_eq!(late_cached, late, "after the splits");
    }

    #[test]
    fn interpolated_search_equals_the_partition_point_for_every_slot() {
        for (n, frame) in [(1, 5), (3, 40), (20, 200), (60, 1000)] {
            let mut cpu = state(n, frame);
            // Firm jobs split intervals at arbitrary deadlines: the ends get uneven.
            for k in 0..30u64 {
                let d = 1 + (k * 53) % (2 * frame - 1);
                if cpu.acceptance(0, 1, d).available >= 1 {
                    cpu.guarantee(0, 1000 + k as usize, 1, d);
                }
                for slot in 0..=cpu.horizon_end() + 2 {
                    let want = cpu.ivs.partition_point(|iv| iv.end < slot);
                    assert_eq!(cpu.first_ending_from(slot), want, "n {n} slot {slot}");
                }
            }
        }
    }
}

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

/// Work units per slot at full speed (normalised frequency 1.0 = `UNIT` parts per million).
pub const UNIT: u64 = 1_000_000;

/// The largest WCET, relative deadline or period (in slots) the planner represents:
/// `u32::MAX`. Below it `wcet · UNIT` fits 64 bits with room (and `wcet` an `i64`), so the job's
/// work and the spare-capacity counters cannot wrap; it is far above any horizon (two frames of at
/// most 1,000,000 slots each), so no job this long could be accepted anyway. Admissions above it
/// are refused (`Rejection::Invalid`), and the control and arrivals parsers refuse such values
/// with the field's name (docs/planner.md, "Limits").
pub const MAX_JOB_SLOTS: u64 = u32::MAX as u64;

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
        credited: u64,
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

/// Grows `d` to hold at least `want` items (if it cannot already) and writes every free slot
/// once, so that the memory is mapped before the hot path uses it. Contents are unchanged.
fn reserve_touched<T: Clone>(d: &mut VecDeque<T>, want: usize, filler: T) {
    if d.capacity() >= want {
        return;
    }
    let len = d.len();
    d.reserve_exact(want - len);
    while d.len() < d.capacity() {
        d.push_back(filler.clone());
    }
    d.truncate(len);
}

/// The online state of one managed CPU.
///
/// Intervals and jobs live in deques: the front interval is the current one (past intervals are
/// popped as time passes), jobs are addressed by a sequence number (`seq - job_base` indexes
/// `jobs`; finished jobs are popped from the front). The frame after next is built a few
/// intervals and jobs per slot during the current frame, so no slot pays for a whole frame.
#[derive(Clone, Debug)]
pub struct CpuState {
    pub(crate) frame: Slot,
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
    /// Intervals from the current one on: the horizon, then the frame being built.
    pub(crate) ivs: VecDeque<Iv>,
    pub(crate) jobs: VecDeque<LiveJob>,
    /// Sequence number of `jobs[0]`.
    pub(crate) job_base: usize,
    /// Released unfinished jobs by (deadline, seq); finished ones are dropped lazily.
    pub(crate) ready: BinaryHeap<Reverse<(Slot, usize)>>,
    /// Unreleased jobs (seq) in release order.
    pub(crate) unreleased: VecDeque<usize>,
    pub(crate) soft: VecDeque<SoftJob>,
    /// Frames before this one are complete: the horizon ends at `next_frame · frame`.
    pub(crate) next_frame: u64,
    /// Build cursors into `template_ivs` and `template_by_release` for frame `next_frame`.
    pub(crate) build_iv: usize,
    pub(crate) build_job: usize,
    /// Offset in the frame from which this CPU builds the frame after next (see
    /// [`Self::stagger_build`]).
    pub(crate) build_offset: Slot,
    /// Intervals and jobs built per slot while building (`⌈items / (frame/2)⌉ + 1`).
    pub(crate) build_per_slot: usize,
    /// Extra job slots of the job rings beyond three frames plus 64 (see [`Self::stagger_build`]).
    pub(crate) ring_pad: usize,
    /// First slot not promised to a DPM idle period.
    pub(crate) idle_until: Slot,
    /// Decided slots not reconciled yet, oldest first (one in the step-by-step protocol, up to
    /// the observation window when observations arrive late).
    pub(crate) pending: VecDeque<Pending>,
    /// The slot of the last `advance` (the slot being decided).
    pub(crate) now: Slot,
    /// Whether best-effort work may run in this CPU's slack.
    pub has_be: bool,
    /// Slots of work per frame in the template (offline jobs plus admitted periodic tasks).
    pub(crate) template_slots: u64,
    /// WCET slots of the firm jobs guaranteed here and not finished.
    pub(crate) firm_slots: u64,
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
            ready: BinaryHeap::new(),
            unreleased: VecDeque::new(),
            soft: VecDeque::new(),
            next_frame: 0,
            build_iv: 0,
            build_job: 0,
            build_offset: 0,
            build_per_slot: 1,
            ring_pad: 0,
            idle_until: 0,
            pending: VecDeque::new(),
            now: 0,
            has_be,
            template_slots: 0,
            firm_slots: 0,
        };
        s.rebuild_template();
        s.build(usize::MAX);
        s.build(usize::MAX);
        s
    }

    /// Staggers the build of the frame after next: CPU `index` of `cpus` starts it at offset
    /// `index · (frame/2) / cpus` of each frame instead of at the frame boundary. The first build
    /// slot of a CPU reads template data and writes deque slots untouched for half a frame or
    /// more (cache and TLB misses); when every CPU started in the same slot, that slot paid for
    /// all of them (2–4 µs for 15 CPUs, the deterministic maximum of `step`). The build of one
    /// frame takes at most half a frame, so it still completes before the next boundary.
    ///
    /// The job rings (`jobs`, `unreleased`, the ready heap) are padded the same way, by
    /// `index · (jobs/2) / cpus` entries, so that CPUs with templates of the same size do not
    /// wrap their rings in the same slot.
    pub(crate) fn stagger_build(&mut self, index: usize, cpus: usize) {
        let cpus = cpus.max(1);
        let half = (self.frame / 2) as u128;
        self.build_offset = (index as u128 * half / cpus as u128) as Slot;
        self.ring_pad = index * (self.template_by_release.len() / 2) / cpus;
        self.reserve_horizon();
    }

    pub(crate) fn rebuild_template(&mut self) {
        self.template_ivs = offline::intervals(&self.template, self.frame);
        self.template_slots = self.template.iter().map(|j| j.wcet).sum();
        let mut order: Vec<usize> = (0..self.template.len())
            .filter(|&j| self.template[j].wcet > 0)
            .collect();
        order.sort_by_key(|&j| (self.template[j].release, self.template[j].deadline, j));
        self.template_by_release = order;
        self.build_ivs = self
            .template_ivs
            .iter()
            .map(|t| Iv {
                start: t.start,
                end: t.end,
                sc: t.sc,
                pending: t
                    .jobs
                    .iter()
                    .filter(|&&j| self.template[j].wcet > 0)
                    .count() as u32,
            })
            .collect();
        self.build_jobs = self
            .template_by_release
            .iter()
            .map(|&j| {
                let t = &self.template[j];
                LiveJob {
                    task: t.task,
                    kind: self.template_kind[j],
                    release: t.release,
                    deadline: t.deadline,
                    rem: t.wcet * UNIT,
                    res: 0,
                    wcet: t.wcet.min(u32::MAX as u64) as u32,
                    done: false,
                    parked: false,
                }
            })
            .collect();
        let items = self.template_ivs.len().max(self.template_by_release.len()) as u64;
        self.build_per_slot = (items.div_ceil((self.frame / 2).max(1)) + 1) as usize;
        self.reserve_horizon();
    }

    /// Makes room for three frames of the template (the horizon plus the frame being built) and
    /// some firm jobs, so that the per-slot build never grows a deque. Growing one is a copy into
    /// fresh memory, page faults included, and happens in the same slot on every CPU with a
    /// similar template: it was the largest per-slot cost (hundreds of µs for 15 CPUs). The new
    /// memory is touched here, outside `step`, so its page faults are not paid in a slot either.
    fn reserve_horizon(&mut self) {
        let ivs = 3 * self.template_ivs.len() + 64;
        let jobs = 3 * self.template_by_release.len() + 64 + self.ring_pad;
        let filler_iv = Iv {
            start: 0,
            end: 0,
            sc: 0,
            pending: 0,
        };
        let filler_job = LiveJob {
            task: 0,
            kind: JobKind::Periodic,
            release: 0,
            deadline: 0,
            rem: 0,
            res: 0,
            wcet: 0,
            done: true,
            parked: false,
        };
        reserve_touched(&mut self.ivs, ivs, filler_iv);
        reserve_touched(&mut self.jobs, jobs, filler_job);
        reserve_touched(&mut self.unreleased, jobs, 0);
        if self.ready.capacity() < jobs {
            // Entries are unique (seq), so the heap pops in the same order after the round trip.
            let mut v = std::mem::take(&mut self.ready).into_vec();
            let len = v.len();
            v.reserve_exact(jobs - len);
            v.resize(v.capacity(), Reverse((0, 0)));
            v.truncate(len);
            self.ready = BinaryHeap::from(v);
        }
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

    /// Builds up to `budget` intervals and `budget` jobs of frame `next_frame`; completes the
    /// frame when both are done.
    fn build(&mut self, budget: usize) {
        let base = self.next_frame * self.frame;
        let iv_end = self
            .template_ivs
            .len()
            .min(self.build_iv.saturating_add(budget));
        for t in &self.build_ivs[self.build_iv..iv_end] {
            self.ivs.push_back(Iv {
                start: base + t.start,
                end: base + t.end,
                ..*t
            });
        }
        self.build_iv = iv_end;
        let job_end = self
            .template_by_release
            .len()
            .min(self.build_job.saturating_add(budget));
        for t in &self.build_jobs[self.build_job..job_end] {
            self.unreleased.push_back(self.job_base + self.jobs.len());
            self.jobs.push_back(LiveJob {
                release: base + t.release,
                deadline: base + t.deadline,
                ..t.clone()
            });
        }
        self.build_job = job_end;
        if self.build_iv == self.template_ivs.len()
            && self.build_job == self.template_by_release.len()
        {
            self.next_frame += 1;
            self.build_iv = 0;
            self.build_job = 0;
        }
    }

    /// Completes the frame being built (before the template changes).
    fn finish_build(&mut self) {
        if self.build_iv > 0 || self.build_job > 0 {
            self.build(usize::MAX);
        }
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

    /// Index of the interval ending at `deadline` (every live job's interval ends at its deadline).
    pub(crate) fn iv_of(&self, deadline: Slot) -> usize {
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

    fn convert(&mut self, seq: usize) {
        let whole = self.job(seq).res / UNIT;
        if whole > 0 {
            self.job_mut(seq).res -= whole * UNIT;
            let i = self.iv_of(self.job(seq).deadline);
            self.add_sc(i, whole as i64);
        }
    }

    /// Frees what a finished job still holds.
    fn finish(&mut self, seq: usize) {
        let deadline = self.job(seq).deadline;
        if deadline <= self.now && self.ivs.front().is_none_or(|iv| iv.start >= deadline) {
            // Its interval is over (a late observation): there is nothing left to free.
            self.retire(seq);
            return;
        }
        let j = self.job_mut(seq);
        debug_assert!(!j.done);
        j.done = true;
        let held = (j.rem + j.res) / UNIT;
        j.rem = 0;
        j.res = 0;
        if j.kind == JobKind::Firm {
            let wcet = j.wcet as u64;
            self.firm_slots -= wcet;
        }
        let i = self.iv_of(deadline);
        self.ivs[i].pending -= 1;
        if held > 0 {
            self.add_sc(i, held as i64);
        }
        self.pop_done();
    }

    /// Marks a job whose interval has already ended finished (nothing to give back).
    fn retire(&mut self, seq: usize) {
        let j = self.job_mut(seq);
        debug_assert!(!j.done);
        j.done = true;
        j.rem = 0;
        j.res = 0;
        if j.kind == JobKind::Firm {
            let wcet = j.wcet as u64;
            self.firm_slots -= wcet;
        }
        self.pop_done();
    }

    fn pop_done(&mut self) {
        while self.jobs.front().is_some_and(|j| j.done) {
            self.jobs.pop_front();
            self.job_base += 1;
        }
    }

    /// Consumes the slot being decided (`self.now`): it is no longer spare. `run` says what
    /// runs in it; the slot stays pending until its observation is applied. A job whose whole
    /// remaining work is now credited leaves the ready queue (it is *parked*, it must be the
    /// EDF top the decision took) until a reconciliation gives work back.
    pub(crate) fn consume(&mut self, run: Running) -> Running {
        self.ivs[0].sc -= 1;
        let run = match run {
            Running::Job { idx, freq_ppm, .. } => {
                let e = (freq_ppm as u64).min(self.job(idx).rem);
                let j = self.job_mut(idx);
                j.rem -= e;
                j.res += e;
                if j.rem == 0 && !j.parked {
                    j.parked = true;
                    let top = self.ready.pop();
                    debug_assert_eq!(top.map(|Reverse((_, s))| s), Some(idx));
                }
                self.convert(idx);
                Running::Job {
                    idx,
                    credited: e,
                    freq_ppm,
                }
            }
            other => other,
        };
        self.pending.push_back(Pending {
            slot: self.now,
            run,
        });
        run
    }

    /// The oldest decided slot whose observation is pending.
    pub(crate) fn oldest_pending(&self) -> Option<Slot> {
        self.pending.front().map(|p| p.slot)
    }

    /// Applies what really ran in the oldest pending slot: `ran_ns` of `slot_ns` at the
    /// decided frequency, `done` if the job completed (or blocked for the rest of its
    /// instance). Slots decided later for a job that completed are *voided*: their slot numbers
    /// are appended to `voided` (they were charged as spent; the job no longer runs in them).
    pub(crate) fn reconcile(
        &mut self,
        ran_ns: u64,
        slot_ns: u64,
        done: bool,
        events: &mut Vec<JobEvent>,
    ) {
        self.reconcile_into(ran_ns, slot_ns, done, events, &mut Vec::new());
    }

    pub(crate) fn reconcile_into(
        &mut self,
        ran_ns: u64,
        slot_ns: u64,
        done: bool,
        events: &mut Vec<JobEvent>,
        voided: &mut Vec<Slot>,
    ) {
        let Some(Pending { run, .. }) = self.pending.pop_front() else {
            return;
        };
        let work = |freq_ppm: u32| {
            if ran_ns >= slot_ns && slot_ns > 0 {
                // The whole slot ran (the common case): no 128-bit division.
                freq_ppm as u64
            } else {
                (ran_ns as u128 * freq_ppm as u128 / slot_ns.max(1) as u128) as u64
            }
        };
        match run {
            Running::Job {
                idx,
                credited,
                freq_ppm,
            } => {
                if self.is_done(idx) {
                    return;
                }
                let j = self.job(idx);
                let (task, kind, deadline) = (j.task, j.kind, j.deadline);
                let later = self
                    .pending
                    .iter()
                    .any(|p| matches!(p.run, Running::Job { idx: i, .. } if i == idx));
                if done {
                    if later {
                        for p in self.pending.iter_mut() {
                            if matches!(p.run, Running::Job { idx: i, .. } if i == idx) {
                                p.run = Running::Other;
                                voided.push(p.slot);
                            }
                        }
                    }
                    self.finish(idx);
                    events.push(JobEvent::Completed { task, kind });
                    return;
                }
                let ran = work(freq_ppm);
                if ran < credited {
                    if deadline <= self.now {
                        // Observed after the deadline: the work it did not do can no longer
                        // be given a slot (lost to the platform, after the fact). The slots
                        // decided for it later are spent as well.
                        for p in self.pending.iter_mut() {
                            if matches!(p.run, Running::Job { idx: i, .. } if i == idx) {
                                p.run = Running::Other;
                            }
                        }
                        self.finish(idx);
                        events.push(JobEvent::Lost {
                            task,
                            kind,
                            deadline,
                            units: credited - ran,
                        });
                        return;
                    }
                    let units = self.uncredit(idx, credited - ran);
                    if units > 0 {
                        events.push(JobEvent::Lost {
                            task,
                            kind,
                            deadline,
                            units,
                        });
                    }
                }
                if !later && self.job(idx).rem == 0 {
                    self.finish(idx);
                    events.push(JobEvent::Overrun { task, kind });
                }
            }
            Running::Soft { freq_ppm } => {
                let ran = work(freq_ppm);
                if let Some(front) = self.soft.front_mut() {
                    front.rem = front.rem.saturating_sub(ran);
                    let task = front.task;
                    if done {
                        self.soft.pop_front();
                        events.push(JobEvent::SoftCompleted { task });
                    } else if front.rem == 0 {
                        self.soft.pop_front();
                        events.push(JobEvent::SoftCutOff { task });
                    }
                }
            }
            Running::Other => {}
        }
    }

    /// The job executed `units` less than credited (its slot was partly lost). A parked job
    /// that gets work back returns to the ready queue. What its reserved units do not cover
    /// needs whole slots of its interval: only free ones are taken (those the acceptance test
    /// would give a new job of the same deadline, a DPM idle period ending early if need be),
    /// so a loss never displaces another guarantee. Returns the units that could not be given
    /// back: the job absorbs them (it may be cut off before its work is done).
    fn uncredit(&mut self, seq: usize, units: u64) -> u64 {
        let j = self.job_mut(seq);
        let unpark = j.parked;
        let deadline = j.deadline;
        let (give, slots) = if j.res >= units {
            (units, 0)
        } else {
            let short = units - j.res;
            let want = short.div_ceil(UNIT);
            let now = self.now + 1;
            let promised = self.idle_until.saturating_sub(now) as i64;
            let enough = want as i64 + promised;
            let mut free = self.acceptance_until(now, want, deadline, enough).available;
            if promised > 0 && free - promised < want as i64 {
                // The DPM idle period in progress ends: its slots become free again.
                self.idle_until = now;
            } else {
                free -= promised;
            }
            let slots = want.min(free.max(0) as u64);
            if slots == want {
                (units, want)
            } else {
                (self.job(seq).res + slots * UNIT, slots)
            }
        };
        let j = self.job_mut(seq);
        j.rem += give;
        // `res + slots·UNIT − give` is the part of the last slot taken that the job does not need
        j.res = j.res + slots * UNIT - give;
        if give > 0 {
            j.parked = false;
            if unpark {
                self.ready.push(Reverse((deadline, seq)));
            }
        }
        if slots > 0 {
            let i = self.iv_of(deadline);
            self.add_sc(i, -(slots as i64));
        }
        units - give
    }

    /// Moves to `slot`: reports misses, drops past intervals, builds a share of the frame after
    /// next, releases jobs.
    pub(crate) fn advance(&mut self, slot: Slot, pos: (u64, Slot), events: &mut Vec<JobEvent>) {
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
            self.ivs.pop_front();
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

    /// Acceptance test for `wcet` slots before `deadline`, from slot `now` on. Slots promised to
    /// a DPM idle period count as free: the guarantee routine wakes the CPU if it needs them.
    pub fn acceptance(&self, now: Slot, wcet: u64, deadline: Slot) -> Capacity {
        self.acceptance_until(now, wcet, deadline, i64::MAX)
    }

    /// [`Self::acceptance`] that stops counting once `enough` free slots are found (then
    /// `available` is a lower bound ≥ `enough`).
    pub fn acceptance_until(&self, now: Slot, wcet: u64, deadline: Slot, enough: i64) -> Capacity {
        let d = deadline.min(self.horizon_end());
        let mut avail: i64 = 0;
        if d <= now {
            return Capacity {
                needed: wcet,
                available: 0,
                deadline: d,
            };
        }
        for iv in &self.ivs {
            if iv.end <= now {
                continue;
            }
            if iv.start >= d {
                break;
            }
            if iv.end <= d {
                avail += iv.sc.max(0);
                if avail >= enough {
                    break;
                }
            } else {
                avail += (d - iv.start.max(now)).min(iv.sc.max(0) as u64) as i64;
                break;
            }
        }
        Capacity {
            needed: wcet,
            available: avail,
            deadline: d,
        }
    }

    /// Guarantee routine: adds a firm job released at `now` that passed [`Self::acceptance`].
    /// `wcet` must be at most [`MAX_JOB_SLOTS`] (checked by `Planner::admit_firm`); a larger
    /// one is ignored here rather than wrapped into the spare capacity.
    pub fn guarantee(&mut self, now: Slot, task: usize, wcet: u64, deadline: Slot) {
        let d = deadline.min(self.horizon_end());
        if wcet == 0 || wcet > MAX_JOB_SLOTS {
            return;
        }
        // A DPM idle period in progress keeps going only if the job still fits after it;
        // otherwise it ends now (the CPU is woken for the next slot).
        let promised = self.idle_until.saturating_sub(now) as i64;
        if promised > 0
            && self
                .acceptance_until(now, wcet, d, promised + wcet as i64)
                .available
                - promised
                < wcet as i64
        {
            self.idle_until = now;
        }
        let i = self.first_ending_from(d);
        if self.ivs[i].end != d {
            // Split [s, e) at d: the part before d keeps the free slots that lie before d.
            let iv = self.ivs[i];
            let s_eff = iv.start.max(now) as i64;
            let before = (d as i64 - s_eff).min(iv.sc);
            self.ivs[i] = Iv {
                start: iv.start,
                end: d,
                sc: before,
                pending: 0,
            };
            self.ivs.insert(
                i + 1,
                Iv {
                    start: d,
                    end: iv.end,
                    sc: iv.sc - (d as i64 - s_eff),
                    pending: iv.pending,
                },
            );
            // `before` = |[s,d)| + min(0, sc([d,e))); nothing changes for earlier intervals.
            debug_assert_eq!(
                before,
                (d as i64 - s_eff) + (iv.sc - (d as i64 - s_eff)).min(0)
            );
        }
        let seq = self.job_base + self.jobs.len();
        self.jobs.push_back(LiveJob {
            task,
            kind: JobKind::Firm,
            release: now,
            deadline: d,
            rem: wcet * UNIT,
            res: 0,
            wcet: wcet.min(u32::MAX as u64) as u32,
            done: false,
            parked: false,
        });
        self.firm_slots += wcet.min(u32::MAX as u64);
        self.ivs[i].pending += 1;
        self.add_sc(i, -(wcet as i64));
        self.ready.push(Reverse((d, seq)));
    }

    /// Finishes every live job of `task` (its capacity returns) and drops it from the template
    /// (the frame being built is completed first, with the old template).
    pub fn remove_task(&mut self, task: usize) -> bool {
        self.finish_build();
        let before = self.template.len();
        let mut keep = Vec::new();
        let mut kinds = Vec::new();
        for (j, k) in self.template.iter().zip(&self.template_kind) {
            if j.task != task {
                keep.push(j.clone());
                kinds.push(*k);
            }
        }
        let in_template = keep.len() != before;
        self.template = keep;
        self.template_kind = kinds;
        self.rebuild_template();
        let mut live = false;
        let seqs: Vec<usize> = (self.job_base..self.job_base + self.jobs.len())
            .filter(|&s| !self.is_done(s) && self.job(s).task == task)
            .collect();
        for seq in seqs {
            for p in self.pending.iter_mut() {
                if matches!(p.run, Running::Job { idx, .. } if idx == seq) {
                    p.run = Running::Other;
                }
            }
            if !self.is_done(seq) {
                self.finish(seq);
                live = true;
            }
        }
        in_template || live
    }

    /// Adds the instances of a periodic task to the frame template if the template stays
    /// EDF-feasible; they join from the first frame whose build has not started: `next_frame`
    /// before this CPU's build offset, else the one after it (the frame being built is completed
    /// with the old template first). Safe for `next_frame` too: no firm job or idle period
    /// reaches past the horizon end, and frames do not borrow capacity from one another.
    /// Returns the first slot of that frame, or the EDF miss.
    pub fn add_periodic(&mut self, instances: &[Job]) -> Result<Slot, offline::Miss> {
        let mut jobs = self.template.clone();
        jobs.extend_from_slice(instances);
        offline::edf(&jobs, self.frame)?;
        self.finish_build();
        self.template = jobs;
        self.template_kind
            .extend(std::iter::repeat_n(JobKind::Periodic, instances.len()));
        self.rebuild_template();
        Ok(self.horizon_end())
    }
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

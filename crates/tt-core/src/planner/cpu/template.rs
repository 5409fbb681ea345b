//! The frame template of a CPU (offline jobs plus admitted periodic tasks) and the horizon
//! built from it: the flat build arrays, the per-slot build of the frame after next, the
//! reserved ring memory, and the changes of the template (`add_periodic`, `remove_task`).

use super::{CpuState, Iv, JobKind, LiveJob, UNIT};
use crate::planner::offline::{self, Job, Slot};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The fewest intervals (and jobs) a build slot adds to the frame after next.
const BUILD_CHUNK: u64 = 64;

impl CpuState {
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
        self.forget_quiet();
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
        let ivs = &self.template_ivs;
        self.build_jobs = self
            .template_by_release
            .iter()
            .map(|&j| {
                let t = &self.template[j];
                LiveJob {
                    // the index of the template interval ending at the deadline
                    iv_at: super::Cached(ivs.partition_point(|iv| iv.end < t.deadline) as u64),
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
        // At least BUILD_CHUNK items per build slot: a CPU that builds is taken off the quiet
        // path for that slot (its state is touched in full), so a few large shares cost less
        // than one or two items in each of many slots (50 slots per frame for 100 jobs, when a
        // quarter of a 256-CPU node was building in every slot).
        let rate = items.div_ceil((self.frame / 2).max(1)) + 1;
        self.build_per_slot = rate.max(BUILD_CHUNK) as usize;
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
            iv_at: super::Cached(0),
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

    /// Builds up to `budget` intervals and `budget` jobs of frame `next_frame`; completes the
    /// frame when both are done.
    pub(super) fn build(&mut self, budget: usize) {
        let base = self.next_frame * self.frame;
        if self.build_iv == 0 && self.build_job == 0 {
            // every frame before this one is in `ivs`
            self.build_iv_at.0 = self.iv_popped.0 + self.ivs.len() as u64;
        }
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
                iv_at: super::Cached(self.build_iv_at.0 + t.iv_at.0),
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
        self.forget_quiet();
        self.finish_build();
        self.template = jobs;
        self.template_kind
            .extend(std::iter::repeat_n(JobKind::Periodic, instances.len()));
        self.rebuild_template();
        Ok(self.horizon_end())
    }

    /// Finishes every live job of `task` (its capacity returns) and drops it from the template
    /// (the frame being built is completed first, with the old template).
    pub fn remove_task(&mut self, task: usize) -> bool {
        self.forget_quiet();
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
            self.void_pending(seq, None);
            if !self.is_done(seq) {
                self.finish(seq);
                live = true;
            }
        }
        in_template || live
    }
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

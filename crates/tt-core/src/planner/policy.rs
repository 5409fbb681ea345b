//! Per-slot decision policies: plain slot shifting and the energy-aware variants of
//! 000_f6515751863e6efa (EASS-DPM, Algorithm 2; EASS-DVFS, Algorithm 3 and Equation 3) plus a
//! combination of both.
//!
//! # Problem
//! Given one CPU's spare capacities, decide what runs in the next slot and at which normalised
//! frequency, spending slack on responsiveness (`bss`), long idle periods (`dpm`), low frequency
//! (`dvfs`) or both (`dpm+dvfs`), never spending capacity a guaranteed job needs.
//!
//! # Algorithm
//! ```text
//! decide(slot):
//!   if slot < idle_until: idle                      // a DPM idle period in progress
//!   elif soft job queued and sc(I_cur) > 0: soft     // slot shifting: serve aperiodics first
//!   elif j = EDF(ready guaranteed jobs):
//!     bss, dpm:  run j at f = 1
//!     dvfs:      f = c/(c + avail(j, free_intervals = true)), rounded up to an available step
//!     dpm+dvfs:  f = c/(c + avail(j, free_intervals = false))
//!   elif bss/dvfs: best-effort work if the CPU has some, else idle
//!   else (dpm, dpm+dvfs): idle until slot + idle_duration()
//!
//! idle_duration():                                  // Algorithm 2
//!   d = sc(I_cur)
//!   if I_cur has no remaining work:
//!     for I after I_cur: d += max(0, sc(I)); stop after the first I with remaining work
//!
//! avail(j, free_intervals):                         // Algorithm 3
//!   a = res(j) + max(0, sc(I_j))
//!   if free_intervals: for I from I_cur while I != I_j, I has no work and sc(I) > 0: a += sc(I)
//! ```
//!
//! # dpm+dvfs (our design; named future work in the paper)
//! Ready jobs run back to back as in DPM, but each at the lowest frequency its *own* slack
//! allows — its reserved capacity and the spare capacity of its own interval — while the slack
//! of the work-free intervals in front of it (what Algorithm 3 adds for plain DVFS) is left to
//! DPM, which merges it into one long idle period once nothing is ready. Stretching inside the
//! job's interval cannot create an idle period before the job's deadline anyway, whereas the
//! intervals in front of it can; so the combination keeps DPM's long sleeps and lowers the
//! frequency of the busy stretches.
//!
//! # Properties
//! 1. (Safe-freq) The chosen frequency `f` satisfies `f·(c + a) ≥ c` with `a` a subset of the
//!    slack Algorithm 3 counts: the job finishes inside the capacity it holds plus `a`, which is
//!    spare capacity no guaranteed job needs. `dpm+dvfs` uses a subset of `dvfs`'s `a`, hence a
//!    frequency at least as high: every `dvfs` safety argument carries over.
//! 2. (Safe-idle) An idle period never exceeds the free slots that lie in front of the next
//!    remaining work when every job runs as late as possible, so idling consumes only spare
//!    capacity; each idle slot is charged to `sc(I_cur)` like any other slot.
//! 3. Every policy decision is taken against the current spare capacities, which Algorithm 1
//!    keeps exact after each slot; admissions made during an idle period see the idle slots as
//!    already spent.

use super::cpu::{CpuState, JobKind, Quiet, Running, SlackSeen, UNIT};
use super::offline::Slot;
use crate::energy::estimate::IdleGovernor;

/// Slot-level policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Plain slot shifting, full speed.
    Bss,
    /// EASS-DPM: run ready jobs to completion, then sleep as long as spare capacity allows.
    Dpm,
    /// EASS-DVFS: stretch each job over its available spare capacity.
    Dvfs,
    /// DPM idle periods with jobs stretched over their own slack (see the module doc).
    DpmDvfs,
}

impl Policy {
    pub const ALL: [Policy; 4] = [Policy::Bss, Policy::Dpm, Policy::Dvfs, Policy::DpmDvfs];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Bss => "bss",
            Policy::Dpm => "dpm",
            Policy::Dvfs => "dvfs",
            Policy::DpmDvfs => "dpm+dvfs",
        }
    }

    /// How the policy's idle slots are priced (`simulate`, the live estimate, docs/energy.md):
    /// the DPM policies gather idle slots into periods the core sleeps through in the deepest
    /// state that pays off; bss and dvfs keep idle cores in the shallowest state (the paper's
    /// set-up for its BSS and DVFS baselines).
    pub fn idle_governor(self) -> IdleGovernor {
        match self {
            Policy::Dpm | Policy::DpmDvfs => IdleGovernor::Deepest,
            Policy::Bss | Policy::Dvfs => IdleGovernor::Shallowest,
        }
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown policy {s:?} (expected bss, dpm, dvfs or dpm+dvfs)"))
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The available normalised frequencies, ascending, in parts per million of the maximum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Freqs(Vec<u32>);

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FreqsError {
    #[error("the frequency list is empty")]
    Empty,
    #[error("frequency {0} is outside (0, 1]")]
    OutOfRange(f64),
    #[error("frequencies must be strictly ascending ({0} follows {1})")]
    NotAscending(f64, f64),
    #[error("the highest normalised frequency must be 1.0, got {0}")]
    NoMax(f64),
}

impl Freqs {
    /// From normalised frequencies (ascending, in (0, 1], ending with 1.0).
    pub fn new(normalised: &[f64]) -> Result<Self, FreqsError> {
        let Some(&last) = normalised.last() else {
            return Err(FreqsError::Empty);
        };
        let mut ppm = Vec::with_capacity(normalised.len());
        for (i, &f) in normalised.iter().enumerate() {
            if !(f > 0.0 && f <= 1.0) {
                return Err(FreqsError::OutOfRange(f));
            }
            if i > 0 && f <= normalised[i - 1] {
                return Err(FreqsError::NotAscending(f, normalised[i - 1]));
            }
            // Round down: a frequency step never executes more than it claims.
            ppm.push(((f * UNIT as f64) as u64).clamp(1, UNIT) as u32);
        }
        if (last - 1.0).abs() > 1e-9 {
            return Err(FreqsError::NoMax(last));
        }
        *ppm.last_mut().expect("non-empty") = UNIT as u32;
        Ok(Freqs(ppm))
    }

    /// From parts per million of the maximum (ascending, ending with 10⁶): what
    /// [`Self::ppm`] returned, e.g. read back from a planner log.
    pub fn from_ppm(ppm: &[u32]) -> Result<Self, FreqsError> {
        let f: Vec<f64> = ppm.iter().map(|&p| p as f64 / UNIT as f64).collect();
        Freqs::new(&f)?;
        if ppm.first() == Some(&0) || ppm.last() != Some(&(UNIT as u32)) {
            return Err(FreqsError::NoMax(f.last().copied().unwrap_or(0.0)));
        }
        Ok(Freqs(ppm.to_vec()))
    }

    /// The default: 1.0–2.3 GHz in 0.1 GHz steps normalised to 2.3 GHz (the paper's Xeon).
    pub fn xeon_default() -> Self {
        let ghz: Vec<f64> = (10..=23).map(|k| k as f64 / 23.0).collect();
        Freqs::new(&ghz).expect("valid default frequencies")
    }

    /// Full speed only (no DVFS).
    pub fn max_only() -> Self {
        Freqs(vec![UNIT as u32])
    }

    pub fn min_ppm(&self) -> u32 {
        self.0[0]
    }

    pub fn ppm(&self) -> &[u32] {
        &self.0
    }

    /// Lowest available frequency `f` with `f·(c + avail) ≥ c·UNIT` (Equation 3, rounded up).
    pub fn for_work(&self, c: u64, avail: u64) -> u32 {
        // The first step with f·span ≥ need, in 128 bits (no product can wrap): a binary search
        // of products, which costs less than the 64-bit division that finding ⌈need/span⌉
        // first would take (the division was the larger part of a `dvfs` decision).
        let need = c as u128 * UNIT as u128;
        let span = c as u128 + avail as u128;
        let i = self.0.partition_point(|&f| (f as u128) * span < need);
        self.0.get(i).copied().unwrap_or(UNIT as u32)
    }
}

/// What a CPU runs in a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// A guaranteed job of `task`.
    Job {
        task: usize,
        kind: JobKind,
        /// The job's sequence number on its CPU, unique over the run: tells one job's slots
        /// from the next job's of the same task (the kernel path marks where a job starts).
        job: usize,
    },
    /// A soft aperiodic job of `task`.
    Soft {
        task: usize,
    },
    /// Best-effort work.
    Be,
    Idle,
}

/// The decision for one CPU and one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub run: Run,
    /// Normalised frequency, parts per million of the maximum.
    pub freq_ppm: u32,
    /// During a DPM idle period: the first slot the CPU runs again (its slot tick may be deferred
    /// until then).
    pub idle_until: Option<Slot>,
}

/// Algorithm 2: slots the CPU may stay idle from now on (nothing is ready).
pub fn idle_duration(cpu: &CpuState) -> u64 {
    let end = cpu.horizon_end();
    let mut ivs = cpu.ivs.iter().take_while(|iv| iv.end <= end);
    let Some(cur) = ivs.next() else {
        return 0;
    };
    let mut d = cur.sc.max(0) as u64;
    if cur.pending == 0 {
        for iv in ivs {
            d += iv.sc.max(0) as u64;
            if iv.pending > 0 {
                break;
            }
        }
    }
    d
}

/// Algorithm 3: units of slack job `seq` may spend by running slower.
///
/// `res(j) + max(0, sc(I_j))`, plus (with `free_intervals`) the positive sc of the leading
/// intervals that have no remaining work, up to `I_j`.
pub fn available_slack(cpu: &CpuState, seq: usize, free_intervals: bool) -> u64 {
    slack_and_interval(cpu, seq, free_intervals).0
}

/// [`available_slack`] and the index of the job's interval: the interval from
/// [`CpuState::job_iv`] (no search while no split has moved it), the free run in front of it
/// summed until it ends.
fn slack_and_interval(cpu: &CpuState, seq: usize, free_intervals: bool) -> (u64, usize) {
    let j = cpu.job(seq);
    let ij = cpu.job_iv(seq);
    let mut free = 0u64;
    if free_intervals {
        for iv in cpu.ivs.range(..ij) {
            if iv.pending != 0 || iv.sc <= 0 {
                break;
            }
            free += iv.sc as u64 * UNIT;
        }
    }
    (j.res + cpu.ivs[ij].sc.max(0) as u64 * UNIT + free, ij)
}

/// Decides slot `slot` for one CPU and charges it to the spare capacity.
pub(crate) fn decide(cpu: &mut CpuState, slot: Slot, policy: Policy, freqs: &Freqs) -> Decision {
    let max = UNIT as u32;
    cpu.quiet.0 = Quiet::No;
    if slot < cpu.idle_until {
        cpu.consume(Running::Other);
        return Decision {
            run: Run::Idle,
            freq_ppm: sleep_ppm(policy, freqs),
            idle_until: Some(cpu.idle_until),
        };
    }
    if let Some(front) = cpu.soft.front() {
        if cpu.ivs[0].sc > 0 {
            let task = front.task;
            cpu.consume(Running::Soft { freq_ppm: max });
            return Decision {
                run: Run::Soft { task },
                freq_ppm: max,
                idle_until: None,
            };
        }
    }
    if let Some(idx) = cpu.edf_top() {
        cpu.quiet.0 = match cpu.soft.is_empty() {
            true => Quiet::Job,
            false => Quiet::No,
        };
        return run_job(cpu, idx, policy, freqs);
    }
    match policy {
        Policy::Bss | Policy::Dvfs => {
            if cpu.soft.is_empty() {
                cpu.quiet.0 = Quiet::Idle;
            }
            no_job(cpu, policy, freqs)
        }
        Policy::Dpm | Policy::DpmDvfs => {
            let until = slot + idle_duration(cpu).max(1);
            cpu.idle_until = until;
            cpu.consume(Running::Other);
            Decision {
                run: Run::Idle,
                freq_ppm: sleep_ppm(policy, freqs),
                idle_until: Some(until),
            }
        }
    }
}

/// The frequency of an idle slot: the minimum under the DVFS policies.
fn sleep_ppm(policy: Policy, freqs: &Freqs) -> u32 {
    match policy {
        Policy::Bss | Policy::Dpm => UNIT as u32,
        Policy::Dvfs | Policy::DpmDvfs => freqs.min_ppm(),
    }
}

/// Nothing ready under `bss` or `dvfs`: best-effort work if the CPU has some, else idle.
#[inline(always)]
fn no_job(cpu: &mut CpuState, policy: Policy, freqs: &Freqs) -> Decision {
    cpu.consume(Running::Other);
    let (run, freq_ppm) = match cpu.has_be {
        true => (Run::Be, UNIT as u32),
        false => (Run::Idle, sleep_ppm(policy, freqs)),
    };
    Decision {
        run,
        freq_ppm,
        idle_until: None,
    }
}

/// Runs job `idx`, the EDF top, in the slot being decided, at the policy's frequency, and
/// charges the slot.
#[inline]
pub(crate) fn run_job(cpu: &mut CpuState, idx: usize, policy: Policy, freqs: &Freqs) -> Decision {
    let freq_ppm = match policy {
        Policy::Bss | Policy::Dpm => UNIT as u32,
        Policy::Dvfs | Policy::DpmDvfs => {
            let (a, ij) = slack_and_interval(cpu, idx, policy == Policy::Dvfs);
            let c = cpu.job(idx).rem;
            cpu.slack_seen.0 = SlackSeen {
                now: cpu.now,
                job: idx,
                c,
                a,
                ij,
                sc_j: cpu.ivs[ij].sc,
                sc0: cpu.ivs[0].sc,
                free0: cpu.ivs[0].pending == 0,
            };
            freqs.for_work(c, a)
        }
    };
    let (task, kind) = (cpu.job(idx).task, cpu.job(idx).kind);
    cpu.consume(Running::Job {
        idx,
        credited: 0,
        freq_ppm,
    });
    Decision {
        run: Run::Job {
            task,
            kind,
            job: idx,
        },
        freq_ppm,
        idle_until: None,
    }
}

/// The whole step of one CPU in a slot where nothing is due (the common slot), or `None` for
/// the general path. The slot is before [`CpuState::quiet_until`]: no interval ends, no job is
/// released, no build share is due (`advance` has nothing to do), and no admission or
/// observation came since the last full `advance`. The one pending slot ran whole without
/// completing (the worst case `step` applies) and reconciling it changes nothing: it was idle
/// or best-effort, or it was a job's that still has work. Then the decision is `decide`'s; when
/// that job goes on (no idle period or soft job comes first) it is still the EDF top — nothing
/// entered the ready queue and it did not leave it — and runs without a look at the queue.
#[inline(always)]
pub(crate) fn step_quiet(
    cpu: &mut CpuState,
    slot: Slot,
    policy: Policy,
    freqs: &Freqs,
) -> Option<Decision> {
    if slot >= cpu.quiet_until.0 {
        return None;
    }
    match (cpu.pending.only()?, cpu.quiet.0) {
        // Still nothing ready: no release came, no soft job, no reconciliation gave work back.
        (Running::Other, Quiet::Idle) if matches!(policy, Policy::Bss | Policy::Dvfs) => {
            cpu.pending.pop_front();
            cpu.now = slot;
            Some(no_job(cpu, policy, freqs))
        }
        (Running::Other, _) => {
            cpu.pending.pop_front();
            cpu.now = slot;
            Some(decide(cpu, slot, policy, freqs))
        }
        (Running::Job { idx, .. }, quiet) => {
            let j = cpu.jobs.get(idx.checked_sub(cpu.job_base)?)?;
            if j.done || j.rem == 0 {
                return None;
            }
            cpu.pending.pop_front();
            cpu.now = slot;
            if quiet != Quiet::Job && (slot < cpu.idle_until || !cpu.soft.is_empty()) {
                return Some(decide(cpu, slot, policy, freqs));
            }
            Some(run_job(cpu, idx, policy, freqs))
        }
        (Running::Soft { .. }, _) => None,
    }
}

/// After `cpu` decided `slot` as `d` (step-by-step protocol, no observation pending but that
/// slot's): the first slot whose decision may differ from `d` or that has something due, so
/// that every slot before it repeats `d` and would take [`step_quiet`] with the same outcome,
/// charging the same way. `Planner::step` leaves those slots' CPU state untouched and charges
/// them at once later ([`CpuState::charge_quiet_run`]). `slot + 1` (no such run) unless
/// - `d` runs a job at full speed (`bss`, `dpm`) found the quiet way (no soft job queued):
///   it goes on while it has work, `⌈rem/UNIT⌉` more slots;
/// - `d` runs a job at a frequency the next slots keep (`dvfs`, `dpm+dvfs`; [`dvfs_run`]);
/// - `d` is `bss`/`dvfs` best-effort or idle with nothing ready and no soft job;
/// - `d` is a slot of a DPM idle period: it goes on until `idle_until`;
///
/// each at most until [`CpuState::quiet_until`], the next slot `advance` has something to do
/// (a release, an interval end, a share of the build), unless what is due there cannot change
/// the run ([`CpuState::cross_due`]: a job's run goes on past releases of jobs after it in EDF
/// order, a DPM idle period past releases and interval ends).
pub(crate) fn quiet_run_end(
    cpu: &CpuState,
    d: &Decision,
    slot: Slot,
    policy: Policy,
    freqs: &Freqs,
) -> Slot {
    let due = cpu.quiet_until.0;
    if due <= slot + 1 || cpu.pending.len() != 1 {
        return slot + 1;
    }
    // (the end, what runs: a job, or nothing in a DPM idle period)
    let (end, job) = match (d.run, policy, cpu.quiet.0) {
        (Run::Job { job, .. }, Policy::Bss | Policy::Dpm, Quiet::Job) => {
            // `slot` is not charged yet (`CpuState::defer_charge`): the job has work for
            // `⌈rem/UNIT⌉` slots from `slot` on.
            let j = cpu.job(job);
            match j.done {
                true => return slot + 1,
                false => (slot + j.rem.div_ceil(UNIT).max(1), Some(job)),
            }
        }
        (Run::Job { job, .. }, Policy::Dvfs | Policy::DpmDvfs, Quiet::Job) => (
            slot + 1 + dvfs_run(cpu, job, d.freq_ppm, policy, freqs),
            Some(job),
        ),
        (Run::Idle | Run::Be, Policy::Bss | Policy::Dvfs, Quiet::Idle) => return due,
        (Run::Idle, Policy::Dpm | Policy::DpmDvfs, _) => match d.idle_until {
            Some(until) if until > slot + 1 => (until, None),
            _ => return slot + 1,
        },
        _ => return slot + 1,
    };
    match end > due {
        // Past what is due: crossed if it cannot change the run (`CpuState::cross_due`).
        true => end.min(cpu.cross_due(slot, end, job)),
        false => end,
    }
}

/// How many slots after the one just decided (job `seq` at `f` ppm, charged) [`step_quiet`]
/// would decide the same way — `seq` at `f`, each slot crediting it `f` whole but the last — with
/// nothing due: 0 when it cannot tell. Derived from the state that decision read
/// ([`SlackSeen`], before its slot was charged; `m = 0` below), with no second look at the
/// slack. The frequency of a slot is Equation 3 on the state the slots before it left,
/// `least = ⌈c·UNIT/(c + a)⌉` rounded up to a step, with `c` the job's remaining work and `a`
/// its available slack (Algorithm 3). Within such slots
/// - `c` drops by `f` per slot;
/// - `c + a` drops by `d` per slot, `d = UNIT` when the slot consumed is counted in `a` (the
///   job's own interval is the current one, or, under `dvfs`, the current interval leads the
///   free run in front of it) and `d = 0` otherwise: charging moves work from `rem` to `res`,
///   converting moves whole slots from `res` to the interval's spare capacity, both within `a`;
///
/// as long as no `max(0, ·)` of Algorithm 3 changes side and the free run keeps its intervals:
/// the job's interval keeps `sc ≥ 0` (only conversions add to it, unless it is the current one:
/// then `sc − m + ⌊(res + m·f)/UNIT⌋ ≥ 0`, i.e. `m·(UNIT − f) ≤ a`, bounds `m`) and a current
/// interval in the free run keeps `sc > 0` (`m < sc`); no conversion propagates (the job's
/// interval starts with `sc ≥ 0`). (The two bounds on `m` are implied by Property 2 and by how
/// borrowing works — a current interval whose `sc` falls short of its remaining length leaves no
/// free interval behind it — and never bind in the tests; they are kept as cheap guards.) Then
/// the frequency never rises (`(c−f)/(c+a−d) ≤ c/(c+a)` when `f·(c+a) ≥ c`, Property 1) and
/// drops below `f` at the first `m` with
/// `(c − m·f)·UNIT ≤ fl·(c + a − m·d)`, `fl` the step below `f`:
/// `m = ⌈(c·UNIT − fl·(c+a)) / (f·UNIT − fl·d)⌉`. Every slot but the last credits `f` whole
/// (`⌈c/f⌉` slots in all; the last takes what is left and parks the job). The run is the slots
/// after the decided one: `m = 1..=k`.
pub(crate) fn dvfs_run(cpu: &CpuState, seq: usize, f: u32, policy: Policy, freqs: &Freqs) -> u64 {
    let seen = cpu.slack_seen.0;
    if seen.now != cpu.now || seen.job != seq || seen.c == 0 || f == 0 || cpu.job(seq).done {
        return 0;
    }
    let SlackSeen {
        c,
        a,
        ij,
        sc_j,
        sc0,
        free0,
        ..
    } = seen;
    let fw = f as u64;
    // (d, the largest `m` the sign conditions allow, the interval whose regime follows when the
    // current one's spare capacity runs out exactly where it ends)
    let (d, lim, next) = if ij == 0 {
        match (sc0 >= 0, UNIT.saturating_sub(fw)) {
            (false, _) => return 0,
            (true, 0) => (UNIT, u64::MAX, None),
            (true, gap) => (UNIT, a / gap, None),
        }
    } else {
        if sc_j < 0 {
            // Conversions would change the borrowing of the intervals in front of it.
            return 0;
        }
        match (policy, free0 && sc0 > 0) {
            (Policy::Dvfs, true) => {
                let left = cpu.ivs[0].end - cpu.now;
                (UNIT, sc0 as u64 - 1, (sc0 as u64 == left).then_some(1))
            }
            _ => (0, u64::MAX, None),
        }
    };
    let k = c.div_ceil(fw) - 1;
    let steps = freqs.ppm();
    let i = steps.partition_point(|&s| s < f);
    debug_assert_eq!(steps.get(i), Some(&f), "the decided frequency is a step");
    let fl = match i {
        0 => None,
        _ => Some(steps[i - 1] as u64),
    };
    if let Some(fl) = fl {
        if k > 0 {
            // `f` was chosen on this state, so `c·UNIT > fl·(c + a)`: the numerator is positive.
            // In 64 bits when the products fit (a 128-bit division costs several times more).
            let drop = match (
                c.checked_mul(UNIT),
                c.checked_add(a).and_then(|s| s.checked_mul(fl)),
            ) {
                (Some(cu), Some(fls)) => (cu - fls).div_ceil(fw * UNIT - fl * d),
                _ => phase_drop(c, a, fw, fl, d, 0, 0),
            };
            if drop <= lim {
                return k.min(drop - 1);
            }
        }
    }
    if k <= lim || next.is_none() {
        return k.min(lim);
    }
    k.min(dvfs_phases(cpu, &seen, fw, fl, policy, (d, lim, next)))
}

/// [`dvfs_run`] past the end of a current interval that led the free run in front of the job's
/// interval and whose spare capacity runs out exactly where it ends (`sc = ` its remaining
/// slots: nothing borrows from it). At that end Algorithm 3's slack goes on without a jump — the
/// interval's last free slot is spent as the interval ends, and the free run (if any) goes on
/// from the next interval — and the next interval sets the next regime: the job's own
/// interval (`d = UNIT`, the sign bound `(m − m₀)·(UNIT − f) ≤ a(m₀)`), another free one with
/// `sc > 0` under `dvfs` (`d = UNIT` up to its spare capacity, and on to the next one if that
/// runs out where it ends), or anything else (`d = 0`: the slack in front of the job's
/// interval is gone, `a = res + sc(I_j)`). Within a phase starting at slot `m₀` after the
/// decided one, with `c + a` fallen by `spent` by then, the frequency drops at the first
/// `m ≥ m₀` with `(c − m·f)·UNIT ≤ fl·(c + a − spent − (m − m₀)·d)` ([`phase_drop`]). Returns the
/// run's largest `m`, at most the last phase's bound (`u64::MAX` when no bound applies).
fn dvfs_phases(
    cpu: &CpuState,
    seen: &SlackSeen,
    fw: u64,
    fl: Option<u64>,
    policy: Policy,
    first: (u64, u64, Option<usize>),
) -> u64 {
    let SlackSeen { c, a, ij, .. } = *seen;
    let (mut d, mut lim, mut next) = first;
    let (mut m0, mut spent) = (0u64, 0u128);
    while let Some(idx) = next {
        let Some(iv) = cpu.ivs.get(idx) else {
            return lim;
        };
        spent += (lim + 1 - m0) as u128 * d as u128;
        m0 = lim + 1;
        // Algorithm 3's slack at `m₀`: `c + a − spent − c(m₀)`, `c(m₀) = c − m₀·f`
        let a0 = (a as u128 + m0 as u128 * fw as u128).saturating_sub(spent);
        (d, lim, next) = if idx == ij {
            match UNIT.saturating_sub(fw) {
                0 => (UNIT, u64::MAX, None),
                gap => (UNIT, sat(m0 as u128 + a0 / gap as u128), None),
            }
        } else if policy == Policy::Dvfs && iv.pending == 0 && iv.sc > 0 {
            let sc = iv.sc as u64;
            let whole = sc == iv.end - iv.start;
            (UNIT, m0 + sc - 1, whole.then_some(idx + 1))
        } else {
            (0, u64::MAX, None)
        };
        if let Some(fl) = fl {
            let drop = phase_drop(c, a, fw, fl, d, m0, spent);
            if drop <= lim {
                return drop - 1;
            }
        }
    }
    lim
}

/// The first `m ≥ m0` at which the frequency of a run at `f` drops to `fl` (see
/// [`dvfs_phases`]): `c·UNIT − fl·(c + a − spent + m0·d) ≤ m·(f·UNIT − fl·d)`, in 128 bits.
fn phase_drop(c: u64, a: u64, f: u64, fl: u64, d: u64, m0: u64, spent: u128) -> u64 {
    let unit = UNIT as i128;
    let s = c as i128 + a as i128 - spent as i128 + m0 as i128 * d as i128;
    let need = c as i128 * unit - fl as i128 * s;
    let per = f as i128 * unit - fl as i128 * d as i128;
    match need <= 0 {
        true => m0,
        false => sat((need as u128).div_ceil(per as u128)).max(m0),
    }
}

/// `v` as a `u64`, saturated.
fn sat(v: u128) -> u64 {
    v.min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::cpu::JobKind;
    use crate::planner::offline::Job;

    /// Algorithm 3's available slack by its definition, walked by index (the code before the
    /// one-pass version).
    fn slack_by_definition(cpu: &CpuState, seq: usize, free_intervals: bool) -> u64 {
        let j = cpu.job(seq);
        let ij = (0..cpu.ivs.len())
            .find(|&i| cpu.ivs[i].end == j.deadline)
            .expect("the job's interval");
        let mut a = j.res + cpu.ivs[ij].sc.max(0) as u64 * UNIT;
        if free_intervals {
            let mut i = 0;
            while i != ij && cpu.ivs[i].pending == 0 && cpu.ivs[i].sc > 0 {
                a += cpu.ivs[i].sc as u64 * UNIT;
                i += 1;
            }
        }
        a
    }

    #[test]
    fn one_pass_available_slack_equals_its_definition_at_every_slot() {
        let mut compared = 0;
        for (n, frame, spread) in [(6u64, 60u64, 7u64), (30, 300, 11), (120, 1200, 13)] {
            // Deadlines spread unevenly (short jobs early, sparse late ones), WCETs 1..3, so
            // the job's interval is sometimes the first, sometimes beyond the first 8.
            let jobs: Vec<Job> = (0..n)
                .map(|k| Job {
                    task: k as usize,
                    instance: 0,
                    release: (k * spread) % (frame / 2),
                    deadline: frame / 2 + (k * spread * 3) % (frame / 2) + 1,
                    wcet: 1 + k % 3,
                })
                .collect();
            let mut cpu = CpuState::new(&jobs, &vec![JobKind::Periodic; jobs.len()], frame, false);
            let mut events = Vec::new();
            for slot in 0..3 * frame {
                if slot > 0 {
                    // Every third slot's job completes early: intervals free up unevenly.
                    cpu.reconcile(1_000_000, 1_000_000, slot % 3 == 0, &mut events);
                }
                cpu.advance(slot, (slot / frame, slot % frame), &mut events);
                if let Some(top) = cpu.edf_top() {
                    for free in [false, true] {
                        assert_eq!(
                            available_slack(&cpu, top, free),
                            slack_by_definition(&cpu, top, free),
                            "n {n} slot {slot} free_intervals {free}"
                        );
                        compared += 1;
                    }
                }
                decide(&mut cpu, slot, Policy::Dvfs, &Freqs::xeon_default());
            }
        }
        assert!(compared > 1000, "only {compared} comparisons");
    }

    /// Steps one CPU with `jobs` per slot (every slot run whole) for three frames under
    /// `policy`; after every job decision the quiet path could extend, checks that every slot of
    /// the run `dvfs_run` predicts — across what `cross_due` allows, as `Planner::step` takes
    /// it — decides the same job at the same frequency. Returns (job slots, predicted slots
    /// summed over the decisions, runs that went past the current interval).
    fn check_dvfs_runs(
        jobs: &[Job],
        frame: Slot,
        policy: Policy,
        freqs: &Freqs,
    ) -> (u64, u64, u64) {
        let (mut job_slots, mut predicted, mut phases) = (0u64, 0u64, 0u64);
        let kinds = vec![JobKind::Periodic; jobs.len()];
        let mut cpu = CpuState::new(jobs, &kinds, frame, false);
        let mut events = Vec::new();
        let step = |cpu: &mut CpuState, slot: Slot, events: &mut Vec<_>| {
            if slot > 0 {
                cpu.reconcile(UNIT, UNIT, false, events);
            }
            cpu.advance_all(slot, (slot / frame, slot % frame), events);
            decide(cpu, slot, policy, freqs)
        };
        for slot in 0..3 * frame {
            let d = step(&mut cpu, slot, &mut events);
            let Run::Job { job, .. } = d.run else {
                continue;
            };
            job_slots += 1;
            if cpu.quiet.0 != Quiet::Job {
                continue;
            }
            let k = dvfs_run(&cpu, job, d.freq_ppm, policy, freqs);
            let end = slot.saturating_add(k).saturating_add(1);
            let k = k.min(cpu.cross_due(slot, end, Some(job)) - slot - 1);
            predicted += k;
            phases += (slot + k >= cpu.ivs[0].end) as u64;
            let mut copy = cpu.clone();
            for t in 1..=k {
                let e = step(&mut copy, slot + t, &mut events);
                assert_eq!(
                    (e.run, e.freq_ppm),
                    (d.run, d.freq_ppm),
                    "{policy}: slot {} of the run from slot {slot} ({k} slots), jobs {jobs:?}",
                    slot + t
                );
            }
        }
        (job_slots, predicted, phases)
    }

    /// `dvfs_run` against stepping on the equivalence test's plans (the bench's shape): the
    /// prediction holds, covers most job slots, and some runs go on past the current interval
    /// (`dvfs_phases`).
    #[test]
    fn dvfs_runs_are_the_slots_stepping_decides_the_same_way() {
        use crate::planner::equivalence_tests::frame_jobs;
        for policy in [Policy::Dvfs, Policy::DpmDvfs] {
            let (mut job_slots, mut predicted, mut phases) = (0u64, 0u64, 0u64);
            for seed in 1..12u64 {
                // WCETs of 1-5 slots
                let wcets: &[u64] = match seed % 3 {
                    0 => &[6, 2, 9, 3, 7, 4],
                    1 => &[4],
                    _ => &[4, 4, 1],
                };
                let jobs = frame_jobs(20, 200, seed, wcets);
                let (j, p, ph) = check_dvfs_runs(&jobs, 200, policy, &Freqs::xeon_default());
                (job_slots, predicted, phases) = (job_slots + j, predicted + p, phases + ph);
            }
            assert!(
                predicted * 2 >= job_slots,
                "{policy}: only {predicted} of {job_slots} job slots predicted"
            );
            assert!(phases > 0, "{policy}: no run went past its interval");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

        /// `dvfs_run` against stepping on random EDF-feasible frames (any releases, deadlines
        /// and WCETs, so intervals that borrow, free runs of several intervals, jobs whose own
        /// interval becomes current in a run).
        #[test]
        fn dvfs_runs_hold_on_random_feasible_frames(
            frame in 20..90u64,
            raw in proptest::collection::vec((0..100u64, 1..100u64, 1..8u64), 1..12),
        ) {
            let jobs: Vec<Job> = raw
                .iter()
                .enumerate()
                .map(|(k, &(r, span, w))| {
                    let release = r % frame;
                    let deadline = (release + 1 + span % (frame - release)).min(frame);
                    Job {
                        task: k,
                        instance: 0,
                        release,
                        deadline,
                        wcet: w.min(deadline - release),
                    }
                })
                .collect();
            proptest::prop_assume!(crate::planner::offline::edf(&jobs, frame).is_ok());
            // the paper's steps (most slack runs at the lowest) and twenty fine ones (the
            // frequency drops within most runs)
            let fine: Vec<f64> = (1..=20).map(|k| k as f64 / 20.0).collect();
            for freqs in [Freqs::xeon_default(), Freqs::new(&fine).expect("valid")] {
                for policy in [Policy::Dvfs, Policy::DpmDvfs] {
                    check_dvfs_runs(&jobs, frame, policy, &freqs);
                }
            }
        }
    }

    #[test]
    fn for_work_is_the_lowest_step_that_covers_the_work() {
        let freqs = Freqs::xeon_default();
        for c in [
            0,
            1,
            7,
            UNIT / 3,
            UNIT,
            5 * UNIT + 1,
            40 * UNIT,
            u64::MAX / 2,
        ] {
            for avail in [0, 1, 13, UNIT / 2, UNIT, 3 * UNIT, 1_000 * UNIT, u64::MAX] {
                let got = freqs.for_work(c, avail);
                // Equation 3 by search: the first step f with f·(c + avail) ≥ c·UNIT.
                let want = freqs
                    .ppm()
                    .iter()
                    .copied()
                    .find(|&f| f as u128 * (c as u128 + avail as u128) >= c as u128 * UNIT as u128)
                    .unwrap_or(UNIT as u32);
                assert_eq!(got, want, "c {c} avail {avail}");
            }
        }
    }
}

//! VM test, issue 13 item 2: job completion on a static table (no planner), judged by the
//! kernel's own switch trace (the witness) and the workloads' own logs, not by scx_tt's report.
//! `completion.json` (this folder) on managed CPU 1 (`-smp 2`), 10 ms slots, frame 10: three
//! `tt_jobs` tasks released every 100 ms on the slot grid, each job spinning 30-100 % of its
//! budget (thread CPU time), and the be busy loop `filler`:
//!   - `jy` (3 slots, completion `yield`): sched_yield() at each job's end, then spins runnable
//!     until its next release. After the yield it must not run again in that job's slots, and
//!     be work takes them. Its job released at t0 + 3 s (`OVERRUN_RELEASE`) runs 36 ms, more
//!     than its 30 ms of slots, and so ends in the next job's slots: that yield ends the job
//!     that overran, not the next one, which goes on (counted in `jobs_carried`), and the jobs
//!     after it are in step again (the witness check: no be start over jy before the logged
//!     finish of the job whose window it is in). Without the carry rule (issue 31), the yield
//!     ended the next job too and jy stayed one job behind for the rest of the run: each
//!     window's be work started over a jy whose job was pending;
//!   - `jb` (3 slots, completion `block`): sleeps until its next release in 3 ms naps, so it
//!     wakes up ~3 times a slot while its job is done: from the slot after the one it blocked
//!     in, it must not be switched in again in that job's slots (unless the slot's tick found
//!     it awake between two naps: then its job ends at a later slot's end, the rule);
//!   - `jn` (2 slots, completion `none`): yields like jy, which must change nothing: it runs
//!     its slots to their end, and no job of it is counted done.
//!
//! And exactly (from scx_tt's figures, checked against the logs): `jobs_done` of jy is its
//! logged jobs (±1 at the run's end), jb's at most its logged jobs and at least 90 % of them
//! (timing), jn's 0. The observation ring, read every slot by the run loop's test hook
//! (`SCX_TT_TEST_OBS`, docs/run-output.md), agrees with every ring-buffer record it was read for
//! (owner, owner_ns, late_ns: exact), flags done the slot each logged job ended in, and its
//! avail_ns is the whole slot for a busy owner, the time until the yield in the slot of a yield,
//! and 0 in the slots of a job after its end. Every figure is printed.
//!
//! The checks fail without the rule: the same plan with `completion` "none" for jy and jb
//! (SCX_TT_INITRD_EXTRA replacing completion.json) gave jobs_done 0 (exact failure), jy
//! running 1336 ms after its yields (every job, up to 23 ms), be work 0 % of what jy "left",
//! jb switched in 2.49 times a slot after its block, no done flags.

use crate::harness::{ms, Checks, Vm, VmOutput};
use crate::planner_checks::Table;
use crate::witness::{self, Event, Frame, Segment};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};

const DURATION_S: u64 = 10;
const RUN: &str = "completion";
const CPU: u32 = 1;
/// Jobs are judged from this slot on (the first second after slot 0 is not: the workloads
/// align to the slot grid and TCG translates their paths).
const FIRST_JUDGED_SLOT: u64 = 100;
/// A yielding job's owner may still run this long after its logged finish: the sched_yield()
/// call and the switch away take emulated time, and a host stall inside them adds to it
/// (measured: at most 0.49-0.74 ms per job; without the completion rule the owner would run
/// the rest of its job's slots, several ms).
const AFTER_YIELD_NS: u64 = 1_000_000;
/// Bound on the share of jobs whose owner ran longer than that after its end (timing: a host
/// stall between the finish time and the yield).
const MAX_LATE_END_PCT: f64 = 2.0;
/// be work must fill at least this share of the slot time a job leaves after its yield (the
/// rest: the guard band before the next owner's run, switch gaps; measured figures printed).
const MIN_BE_FILL_PCT: f64 = 50.0;
/// jb's switch-ins per slot of a job after the slot it blocked in (without the completion rule
/// it runs after each of its ~3 nap wake-ups a slot: 2.49 measured with `completion` "none";
/// with it, only when a slot's end found it awake): at most this many on average (timing).
const MAX_BLOCK_SWITCHES_PER_SLOT: f64 = 0.5;
/// A busy owner's avail_ns is the whole slot within this (the wake-up path of an owner that
/// was woken just before the boundary: none here, but a kthread's preemption moves the count).
const AVAIL_TOL_NS: u64 = 200_000;
/// The avail_ns of the slot a job ended in against the workload's own finish time: the yield
/// comes after it (the switch away under TCG).
const AVAIL_END_TOL_NS: u64 = 1_000_000;
/// The same after a block: the block comes after the finish time, and each nap wake-up in the
/// rest of the slot is runnable time until the owner runs and sleeps again (0.2-0.4 ms of kick
/// latency under TCG, up to 3 of them).
const AVAIL_BLOCK_TOL_NS: u64 = 2_500_000;
/// Share of the judged obs checks that must hold (timing: TCG stalls; measured 98-101 % in
/// session 6, 94.4 % once in a session 7 CI run).
const MIN_OBS_OK_PCT: f64 = 90.0;
const MIN_DELIVERED_PCT: f64 = 90.0;
/// jy's job released at t0 + this many periods overruns (completion.json: `--overrun-release`).
const OVERRUN_RELEASE: u64 = 30;

/// One line of a tt_jobs log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobLine {
    pub release_ns: u64,
    pub finish_ns: u64,
    pub exec_ns: u64,
}

/// Parses a tt_jobs log (`# ...` comments, then `release_ns finish_ns exec_ns` lines).
pub fn parse_log(text: &str) -> Result<Vec<JobLine>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let n: Vec<u64> = l
                .split_whitespace()
                .map(|w| w.parse().map_err(|_| format!("not a number in {l:?}")))
                .collect::<Result<_, _>>()?;
            match n[..] {
                [release_ns, finish_ns, exec_ns] => Ok(JobLine {
                    release_ns,
                    finish_ns,
                    exec_ns,
                }),
                _ => Err(format!("not 3 numbers: {l:?}")),
            }
        })
        .collect()
}

/// ns of `[a, b)` covered by `segs` (sorted or not).
pub fn overlap(segs: &[&Segment], a: u64, b: u64) -> u64 {
    segs.iter()
        .map(|s| s.end.min(b).saturating_sub(s.start.max(a)))
        .sum()
}

/// One line of the hook's observation file.
#[derive(Clone, Debug, Deserialize)]
struct Obs {
    cpu: u32,
    slot: u64,
    owner: Option<usize>,
    done: bool,
    owner_ns: u64,
    avail_ns: u64,
    stolen_ns: u64,
    late_ns: i64,
}

/// The hook's final stderr line.
#[derive(Debug, Deserialize)]
struct ObsReport {
    reads: Reads,
    audit: Audit,
}

#[derive(Debug, Deserialize)]
struct Reads {
    ready: u64,
    torn: u64,
    overwritten: u64,
    missing: u64,
}

#[derive(Debug, Deserialize)]
struct Audit {
    records: u64,
    observations: u64,
    compared: u64,
    agree: u64,
    disagree: Vec<String>,
    disagree_count: u64,
    records_without_observation: u64,
    observations_without_record: u64,
    done: u64,
}

/// The summary fields this test needs beyond the harness's (`jobs_done`).
#[derive(Debug, Deserialize)]
struct JobsSummary {
    tasks: Vec<JobsTask>,
}

#[derive(Debug, Deserialize)]
struct JobsTask {
    name: String,
    jobs_done: u64,
    jobs_carried: u64,
}

fn pct(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// What the test knows of the run: the slot grid, the table, the witness, the logs.
struct Run {
    table: Table,
    f: Frame,
    events: Vec<Event>,
    segs: Vec<Segment>,
    logs: BTreeMap<&'static str, Vec<JobLine>>,
    obs: HashMap<(u32, u64), Obs>,
}

impl Run {
    fn slot_of(&self, t: u64) -> u64 {
        (t - self.f.t0_ns) / self.f.slot_ns
    }

    fn start(&self, slot: u64) -> u64 {
        self.f.t0_ns + slot * self.f.slot_ns
    }

    /// The segments of `task`'s threads on the managed CPU.
    fn segs_of(&self, task: &str) -> Vec<&Segment> {
        let pids: HashSet<u32> = self
            .f
            .tids
            .iter()
            .filter(|(_, t)| t.as_str() == task)
            .map(|(&p, _)| p)
            .collect();
        self.segs
            .iter()
            .filter(|s| s.cpu == CPU && pids.contains(&s.pid))
            .collect()
    }

    /// `task`'s slots in the window of the job released at `release_ns`.
    fn job_slots(&self, task: &str, release_ns: u64) -> Vec<u64> {
        let first = self.slot_of(release_ns);
        let period = self.table.frame; // every task's period is the frame here
        (first..first + period)
            .filter(|&s| self.table.owner(CPU, s) == Some(task))
            .collect()
    }

    /// The start of the first slot of `task`'s job after the one released at `release_ns`:
    /// a job that finishes at or after it ended in the next job's slots (it overran).
    fn next_job_start(&self, task: &str, release_ns: u64) -> u64 {
        let next = release_ns + self.table.frame * self.f.slot_ns;
        self.job_slots(task, next)
            .first()
            .map_or(next, |&s| self.start(s))
    }

    /// Whether job `j` of `task` ended in the next job's slots.
    fn overran(&self, task: &str, j: &JobLine) -> bool {
        j.finish_ns >= self.next_job_start(task, j.release_ns)
    }

    /// The jobs of `task` whose whole window lies in the judged part of the run.
    fn judged(&self, task: &str) -> Vec<JobLine> {
        let last = self.slot_of(self.f.end_ns) - self.table.frame;
        self.logs[task]
            .iter()
            .filter(|j| {
                j.release_ns >= self.f.t0_ns && {
                    let s = self.slot_of(j.release_ns);
                    (FIRST_JUDGED_SLOT..last).contains(&s)
                }
            })
            .copied()
            .collect()
    }

    /// Switch-ins of `task`'s threads on the managed CPU in `[a, b)`.
    fn switch_ins(&self, task: &str, a: u64, b: u64) -> u64 {
        self.events
            .iter()
            .filter(|e| e.cpu == CPU && e.ts_ns >= a && e.ts_ns < b)
            .filter(|e| match &e.kind {
                witness::Kind::Switch { next_pid, .. } => {
                    self.f.tids.get(next_pid).map(String::as_str) == Some(task)
                }
                _ => false,
            })
            .count() as u64
    }
}

/// The witness of the run, with the be starts that the completion rule allows taken out: a be
/// start over a waiting owner whose job had ended (jy: after its logged finish; jb: in a slot
/// after the one it blocked in) is what `completion` asks for. Counted and printed.
fn check_witness(c: &mut Checks, run: &Run) {
    let mut r = run.f.analyse(&run.events);
    let ended = |owner: &str, slot: u64, ts: u64| -> bool {
        let Some(log) = run.logs.get(owner) else {
            return false;
        };
        log.iter().any(|j| {
            let w = run.slot_of(j.release_ns.max(run.f.t0_ns));
            slot >= w
                && slot < w + run.table.frame
                && match owner {
                    "jy" => ts >= j.finish_ns,
                    "jb" => slot > run.slot_of(j.finish_ns),
                    _ => false,
                }
        })
    };
    let before = r.be_over_owner.len();
    r.be_over_owner
        .retain(|b| !ended(&b.owner, b.slot, b.ts_ns));
    println!(
        "  {RUN}: witness: {} be starts over a runnable owner whose job had ended (allowed: \
         completion), {} others",
        before - r.be_over_owner.len(),
        r.be_over_owner.len()
    );
    // Records that disagree with the witness: the documented host stall between ops.running and
    // the sched_switch trace point (docs/vm-harness.md, "The witness"), which this scenario
    // meets more often than the 2 % of the default bound: every job yields or blocks and jb
    // wakes up every 3 ms, so its slots see several switches each (measured 3.3-4.3 % of the
    // records, with +-1.3 ms stalls at wake-ups whose kick took 2.4 ms; a fresh-clone CI run
    // in session 7 measured 6.3-11.5 % over three tries, so the bound is 12 %).
    let bounds = witness::Bounds {
        disagree_share: 0.12,
        ..witness::Bounds::default()
    };
    witness::report(c, RUN, &run.f, &r, &bounds);
}

/// jy: after each job's yield, jy does not run in that job's slots; be work does.
fn check_yield(c: &mut Checks, run: &Run) {
    let jobs = run.judged("jy");
    let (jy, filler) = (run.segs_of("jy"), run.segs_of("filler"));
    let (mut late, mut after_ns, mut left_ns, mut be_ns) = (0, 0u64, 0u64, 0u64);
    let mut worst = (0u64, 0u64);
    for j in &jobs {
        let mut ran = 0;
        for s in run.job_slots("jy", j.release_ns) {
            let (a, b) = (run.start(s).max(j.finish_ns), run.start(s + 1));
            if a >= b {
                continue;
            }
            ran += overlap(&jy, a, b);
            left_ns += b - a;
            be_ns += overlap(&filler, a, b);
        }
        after_ns += ran;
        if ran > AFTER_YIELD_NS {
            late += 1;
        }
        worst = worst.max((ran, j.release_ns));
    }
    c.check(!jobs.is_empty(), format!("jy: {} judged jobs", jobs.len()));
    c.check_timing(
        pct(late, jobs.len() as u64) <= MAX_LATE_END_PCT,
        format!(
            "jy: after its yield, jy ran in the job's slots more than {} us in {late} of {} jobs \
             ({:.1} %, <= {MAX_LATE_END_PCT} %); {:.3} ms over all jobs, the most {:.3} ms (job \
             released at {} ns)",
            AFTER_YIELD_NS / 1000,
            jobs.len(),
            pct(late, jobs.len() as u64),
            ms(after_ns),
            ms(worst.0),
            worst.1
        ),
    );
    c.check_timing(
        pct(be_ns, left_ns) >= MIN_BE_FILL_PCT,
        format!(
            "jy: be work ran {:.1} % of the {:.1} ms of slot time jy's jobs left after their \
             yield (>= {MIN_BE_FILL_PCT} %)",
            pct(be_ns, left_ns),
            ms(left_ns)
        ),
    );
}

/// jb: from the slot after the one its job blocked in, jb is not switched in again in that
/// job's slots (it wakes up every 1 ms), and be work takes them.
fn check_block(c: &mut Checks, run: &Run) {
    let jobs = run.judged("jb");
    let filler = run.segs_of("filler");
    let (mut slots, mut switches, mut left_ns, mut be_ns) = (0u64, 0u64, 0u64, 0u64);
    let mut jobs_with = 0;
    for j in &jobs {
        let blocked_in = run.slot_of(j.finish_ns);
        let mut n = 0;
        for s in run
            .job_slots("jb", j.release_ns)
            .into_iter()
            .filter(|&s| s > blocked_in)
        {
            let (a, b) = (run.start(s), run.start(s + 1));
            slots += 1;
            n += run.switch_ins("jb", a, b);
            left_ns += b - a;
            be_ns += overlap(&filler, a, b);
        }
        switches += n;
        jobs_with += u64::from(n > 0);
    }
    let per_slot = switches as f64 / slots.max(1) as f64;
    c.check(
        !jobs.is_empty() && slots > 0,
        format!(
            "jb: {} judged jobs, {slots} of their slots after the one the job blocked in",
            jobs.len()
        ),
    );
    c.check_timing(
        per_slot <= MAX_BLOCK_SWITCHES_PER_SLOT,
        format!(
            "jb: switched in {switches} times in those {slots} slots ({per_slot:.2} a slot, <= \
             {MAX_BLOCK_SWITCHES_PER_SLOT}; 2.5 measured without the completion rule), in {jobs_with} \
             of {} jobs",
            jobs.len()
        ),
    );
    c.check_timing(
        pct(be_ns, left_ns) >= MIN_BE_FILL_PCT,
        format!(
            "jb: be work ran {:.1} % of those slots ({:.1} ms; >= {MIN_BE_FILL_PCT} %)",
            pct(be_ns, left_ns),
            ms(left_ns)
        ),
    );
}

/// jn: completion `none` ignores its yields: it runs its slots, nothing is done.
fn check_none(c: &mut Checks, run: &Run, jobs_done: &BTreeMap<String, u64>) {
    let r = run.f.analyse(&run.events);
    let fig = r.tt.get("jn").cloned().unwrap_or_default();
    let owned = (0..run.slot_of(run.f.end_ns))
        .filter(|&s| run.f.owners.get(&(CPU, s)) == Some(&Some("jn".to_string())))
        .count() as u64;
    let planned = owned * run.f.slot_ns;
    c.check_timing(
        pct(fig.inside_ns, planned) >= MIN_DELIVERED_PCT,
        format!(
            "jn: ran {:.1} % of its {owned} recorded slots ({:.1} of {:.1} ms, witness; >= \
             {MIN_DELIVERED_PCT} %) although it yields at each job's end",
            pct(fig.inside_ns, planned),
            ms(fig.inside_ns),
            ms(planned)
        ),
    );
    let done = jobs_done.get("jn").copied();
    c.check(
        done == Some(0),
        format!("jn: jobs_done {done:?} (want 0: completion none)"),
    );
}

/// jobs_done against the logs: the jobs that finished while the scheduler ran (the workloads
/// outlive it by the time scx_tt takes to detach and kill them; a log line is written when the
/// next job is released, so the last one may be missing: ±1).
fn check_counts(c: &mut Checks, run: &Run, jobs_done: &BTreeMap<String, u64>) {
    let logged = |t: &str| {
        run.logs[t]
            .iter()
            .filter(|j| j.finish_ns < run.f.end_ns)
            .count() as u64
    };
    let (jy, jb) = (
        jobs_done.get("jy").copied().unwrap_or(0),
        jobs_done.get("jb").copied().unwrap_or(0),
    );
    c.check(
        jy + 1 >= logged("jy") && jy <= logged("jy") + 1,
        format!(
            "jy: jobs_done {jy}, {} jobs logged as finished before the run's end (equal up to the \
             job the end cut)",
            logged("jy")
        ),
    );
    c.check(
        jb <= logged("jb") + 1,
        format!("jb: jobs_done {jb} <= {} jobs logged + 1", logged("jb")),
    );
    c.check_timing(
        pct(jb, logged("jb")) >= 90.0,
        format!(
            "jb: jobs_done {jb} of {} jobs logged ({:.1} %, >= 90 %: a job is done when it \
             blocked by the end of one of its slots)",
            logged("jb"),
            pct(jb, logged("jb"))
        ),
    );
}

/// jobs_carried against the logs (exact): jy's jobs that ended in the next job's slots, its
/// injected overrun among them; jb and jn none (block ends a job at a slot's end; none never).
/// A yield between the next job's first boundary and its tick (late) still ends the job that
/// overran as a plain completion: a finish within the tick lateness of that boundary may go
/// either way, so the count is judged between the sure and the possible (printed).
fn check_carried(c: &mut Checks, run: &Run, carried: &BTreeMap<String, u64>) {
    let log = &run.logs["jy"];
    let in_run: Vec<&JobLine> = log.iter().filter(|j| j.finish_ns < run.f.end_ns).collect();
    let possible = in_run.iter().filter(|j| run.overran("jy", j)).count() as u64;
    let sure = in_run
        .iter()
        .filter(|j| j.finish_ns >= run.next_job_start("jy", j.release_ns) + AFTER_YIELD_NS)
        .count() as u64;
    let overrun_at = run.f.t0_ns + OVERRUN_RELEASE * run.table.frame * run.f.slot_ns;
    let injected = log.iter().find(|j| j.release_ns == overrun_at);
    let jy = carried.get("jy").copied().unwrap_or(0);
    c.check(
        injected.is_some_and(|j| run.overran("jy", j)),
        format!(
            "jy: its job released at t0 + {OVERRUN_RELEASE} periods ended in the next job's \
             slots (finish {:?} ns, that job's first slot {} ns)",
            injected.map(|j| j.finish_ns),
            run.next_job_start("jy", overrun_at)
        ),
    );
    c.check(
        (sure..=possible).contains(&jy) && jy >= 1,
        format!(
            "jy: jobs_carried {jy}; the log has {sure} jobs that surely ended in the next job's \
             slots (finish >= its first slot + {} us) and {possible} that may have (want \
             between, and >= 1: the injected overrun)",
            AFTER_YIELD_NS / 1000
        ),
    );
    for t in ["jb", "jn"] {
        let n = carried.get(t).copied().unwrap_or(0);
        c.check(
            n == 0,
            format!("{t}: jobs_carried {n} (want 0: not a yield task)"),
        );
    }
}

/// The observation ring: agreement with the records (the hook's audit) and what it says about
/// each judged job. `jobs_done`: the jobs that ended in their own slots (a carried job's end is
/// no done flag: the job whose slots it was in goes on).
fn check_obs(c: &mut Checks, run: &Run, report: &ObsReport, jobs_done: &BTreeMap<String, u64>) {
    let (r, a) = (&report.reads, &report.audit);
    println!(
        "  observation ring: reads ready {} torn {} overwritten {} missing {}; audit: {} records, \
         {} observations, {} compared, {} agree, {} disagree, {} records without and {} \
         observations without a counterpart, {} done",
        r.ready,
        r.torn,
        r.overwritten,
        r.missing,
        a.records,
        a.observations,
        a.compared,
        a.agree,
        a.disagree_count,
        a.records_without_observation,
        a.observations_without_record,
        a.done
    );
    c.check(
        a.disagree_count == 0 && a.compared == a.agree,
        format!(
            "observations agree with the ring-buffer records (owner, owner_ns, late_ns) in {} of \
             {} compared{}",
            a.agree,
            a.compared,
            if a.disagree.is_empty() {
                String::new()
            } else {
                format!(": {:?}", a.disagree)
            }
        ),
    );
    c.check_timing(
        pct(a.compared, a.records) >= MIN_OBS_OK_PCT,
        format!(
            "the run loop read the observation of {:.1} % of the records (>= {MIN_OBS_OK_PCT} %)",
            pct(a.compared, a.records)
        ),
    );
    let name = |o: &Obs| o.owner.map(|t| run.table.plan.tasks[t].name.as_str());
    for t in ["jy", "jb", "jn"] {
        let flagged = run
            .obs
            .values()
            .filter(|o| o.done && name(o) == Some(t))
            .count() as u64;
        let counted = jobs_done.get(t).copied().unwrap_or(0);
        // a completion in the slot in progress when the scheduler detached has no observation
        let unread = a.records_without_observation + r.missing + 1;
        c.check(
            flagged <= counted && counted - flagged <= unread,
            format!(
                "{t}: {flagged} observations flagged done, jobs_done {counted} (equal but for the \
                 {unread} slots not read, the one in progress at the end included)"
            ),
        );
    }
    let slot = run.f.slot_ns;
    // per judged job of jy and jb: the done slot, avail_ns in it and after it
    for t in ["jy", "jb"] {
        let jobs = run.judged(t);
        let (mut judged, mut at_end, mut avail_ok, mut avail_n, mut zero_after, mut after_n) =
            (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
        let mut avail_err: Vec<i64> = Vec::new();
        let mut busy_ok = 0u64;
        let mut busy_n = 0u64;
        let tol = if t == "jy" {
            AVAIL_END_TOL_NS
        } else {
            AVAIL_BLOCK_TOL_NS
        };
        let mut overran = 0u64;
        for j in &jobs {
            // a job that ended in the next job's slots has no done flag (check_carried)
            if run.overran(t, j) {
                overran += 1;
                continue;
            }
            let slots = run.job_slots(t, j.release_ns);
            let read: Vec<&Obs> = slots
                .iter()
                .filter_map(|&s| run.obs.get(&(CPU, s)))
                .collect();
            if read.len() != slots.len() {
                continue;
            }
            judged += 1;
            let f_slot = run.slot_of(j.finish_ns);
            let done: Vec<u64> = read.iter().filter(|o| o.done).map(|o| o.slot).collect();
            // yield: the slot of the finish (or the one before while its tick was late, or
            // the next when the yield came after the boundary); block: the slot it blocked in,
            // or a later one of the job when it was awake at that slot's tick
            let ok_slot = |d: u64| match t {
                "jy" => d + 1 >= f_slot && d <= run.slot_of(j.finish_ns + AVAIL_END_TOL_NS),
                _ => d >= f_slot,
            };
            if done.len() == 1 && ok_slot(done[0]) {
                at_end += 1;
            }
            for o in &read {
                if done.first().is_some_and(|&d| o.slot > d) {
                    // 0, but in the slot after the done slot the owner is available from the
                    // boundary until a yield that came before that slot's (late) tick, which
                    // the done flag gave to the slot before (tt_sched.bpf.c, I)
                    after_n += 1;
                    let before_tick = done.first() == Some(&(o.slot - 1))
                        && o.avail_ns <= o.late_ns.max(0) as u64;
                    zero_after += u64::from(o.avail_ns == 0 || before_tick);
                } else if o.slot < f_slot && run.start(o.slot) >= j.release_ns {
                    // a whole slot of the job before its end: the owner was busy or waiting
                    busy_n += 1;
                    busy_ok += u64::from(o.avail_ns + AVAIL_TOL_NS >= slot);
                } else if done.first() == Some(&o.slot) && o.slot == f_slot {
                    let want = j.finish_ns - run.start(o.slot).max(j.release_ns);
                    let err = o.avail_ns as i64 - want as i64;
                    avail_err.push(err);
                    avail_n += 1;
                    avail_ok += u64::from(err.unsigned_abs() <= tol);
                }
            }
        }
        avail_err.sort_unstable();
        let p = |q: f64| {
            avail_err
                .get(((avail_err.len().max(1) - 1) as f64 * q) as usize)
                .map_or(0.0, |&e| e as f64 / 1e3)
        };
        c.check(
            judged > 0,
            format!(
                "{t}: {judged} of {} judged jobs have every slot observed ({overran} ended in \
                 the next job's slots: not judged here)",
                jobs.len()
            ),
        );
        c.check_timing(
            pct(at_end, judged) >= MIN_OBS_OK_PCT,
            format!(
                "{t}: exactly one observation flagged done, in the slot the log says the job \
                 ended, for {at_end} of {judged} jobs ({:.1} %, >= {MIN_OBS_OK_PCT} %)",
                pct(at_end, judged)
            ),
        );
        c.check(
            zero_after == after_n,
            format!(
                "{t}: avail_ns 0 (or at most the tick lateness, right after the done slot) in \
                 {zero_after} of the {after_n} slots of a job after its done slot (exact: a done \
                 job is not available)"
            ),
        );
        c.check_timing(
            pct(busy_ok, busy_n) >= MIN_OBS_OK_PCT,
            format!(
                "{t}: avail_ns >= slot - {} us in {busy_ok} of {busy_n} slots of a job before the \
                 slot it ended in ({:.1} %, >= {MIN_OBS_OK_PCT} %)",
                AVAIL_TOL_NS / 1000,
                pct(busy_ok, busy_n)
            ),
        );
        c.check_timing(
            avail_n > 0 && pct(avail_ok, avail_n) >= 90.0,
            format!(
                "{t}: avail_ns of the slot the job ended in vs the log's finish - slot start: \
                 within {} us in {avail_ok} of {avail_n} ({:.1} %, >= 90 %); error p50 {:.1} us, \
                 p90 {:.1} us, min {:.1} us, max {:.1} us",
                tol / 1000,
                pct(avail_ok, avail_n),
                p(0.5),
                p(0.9),
                p(0.0),
                p(1.0)
            ),
        );
    }
    // jn (none, always runnable): every slot available, little stolen
    let jn: Vec<&Obs> = run
        .obs
        .values()
        .filter(|o| name(o) == Some("jn") && o.slot >= FIRST_JUDGED_SLOT)
        .collect();
    let full = jn
        .iter()
        .filter(|o| o.avail_ns + AVAIL_TOL_NS >= slot)
        .count() as u64;
    let stolen: u64 = jn.iter().map(|o| o.stolen_ns).sum();
    let owner_over = run
        .obs
        .values()
        .filter(|o| o.owner_ns > o.avail_ns + AVAIL_TOL_NS)
        .count();
    c.check_timing(
        pct(full, jn.len() as u64) >= MIN_OBS_OK_PCT,
        format!(
            "jn: avail_ns >= slot - {} us in {full} of its {} observed slots ({:.1} %, >= \
             {MIN_OBS_OK_PCT} %); stolen {:.2} ms in all",
            AVAIL_TOL_NS / 1000,
            jn.len(),
            pct(full, jn.len() as u64),
            ms(stolen)
        ),
    );
    println!(
        "  observations with owner_ns > avail_ns + {} us: {owner_over} of {} (printed, not \
         judged: an owner runs a few us after its yield)",
        AVAIL_TOL_NS / 1000,
        run.obs.len()
    );
    if let Some(o) = run.obs.values().find(|o| o.late_ns < 0) {
        c.check(
            false,
            format!("an observation with negative lateness: {o:?}"),
        );
    }
}

fn load(out: &VmOutput) -> Result<Run, String> {
    let table = Table::of("completion", "completion.json");
    let f = witness::frame(
        out,
        RUN,
        &format!("{RUN}.json"),
        &format!("{RUN}.trace.jsonl"),
        &[],
    )?;
    let events = witness::parse(&out.file(&format!("{RUN}.witness"))?)?;
    let segs = witness::segments(&events, f.end_ns);
    let mut logs = BTreeMap::new();
    for t in ["jy", "jb", "jn"] {
        logs.insert(t, parse_log(&out.file(&format!("{t}.log"))?)?);
    }
    let obs: Vec<Obs> = out.records(&format!("{RUN}.obs.jsonl"))?;
    let obs = obs.into_iter().map(|o| ((o.cpu, o.slot), o)).collect();
    Ok(Run {
        table,
        f,
        events,
        segs,
        logs,
        obs,
    })
}

fn obs_report(err: &str) -> Result<ObsReport, String> {
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("scx_tt: test: observations "))
        .ok_or("scx_tt printed no observation report")?;
    serde_json::from_str(line).map_err(|e| format!("the observation report: {e}"))
}

fn check(out: &VmOutput, c: &mut Checks) {
    out.print_file(&format!("{RUN}.out"));
    let err = out.file(&format!("{RUN}.err")).unwrap_or_default();
    print!("{err}");
    out.check_clean_exit(c, RUN);
    let s = out
        .summary(&format!("{RUN}.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    s.print("completion.json: jy yields, jb blocks, jn yields under completion none");
    s.check_managed_clean(c);
    let (jobs_done, carried): (BTreeMap<String, u64>, BTreeMap<String, u64>) =
        match out.json::<JobsSummary>(&format!("{RUN}.json")) {
            Ok(j) => (
                j.tasks
                    .iter()
                    .map(|t| (t.name.clone(), t.jobs_done))
                    .collect(),
                j.tasks
                    .iter()
                    .map(|t| (t.name.clone(), t.jobs_carried))
                    .collect(),
            ),
            Err(e) => return c.check(false, format!("summary jobs_done: {e}")),
        };
    println!("--- jobs_done {jobs_done:?}, jobs_carried {carried:?}");
    let run = match load(out) {
        Ok(r) => r,
        Err(e) => return c.check(false, format!("reading the run: {e}")),
    };
    for (t, log) in &run.logs {
        let exec: Vec<u64> = log.iter().map(|j| j.exec_ns).collect();
        let resp: Vec<u64> = log.iter().map(|j| j.finish_ns - j.release_ns).collect();
        println!(
            "--- {t}: {} jobs logged, exec {:.1}..{:.1} ms, release to finish {:.1}..{:.1} ms",
            log.len(),
            ms(exec.iter().copied().min().unwrap_or(0)),
            ms(exec.iter().copied().max().unwrap_or(0)),
            ms(resp.iter().copied().min().unwrap_or(0)),
            ms(resp.iter().copied().max().unwrap_or(0))
        );
        // every job ends inside its window (its deadline), judged from the log; jy's injected
        // overrun is not counted (it ends late by design), the jobs after it are
        let overrun_at = run.f.t0_ns + OVERRUN_RELEASE * run.table.frame * run.f.slot_ns;
        let missed = log
            .iter()
            .filter(|j| !(*t == "jy" && j.release_ns == overrun_at))
            .filter(|j| j.finish_ns > j.release_ns + run.table.frame * run.f.slot_ns)
            .count();
        // timing: a job's CPU time stretches in wall time when the host steals the vCPU (a
        // fresh-clone CI run in session 7: jn 1 of 100 and 1 of 102 late); at most 2 %
        c.check_timing(
            missed * 50 <= log.len(),
            format!(
                "{t}: {missed} of {} jobs finished after their deadline (at most 2 %)",
                log.len()
            ),
        );
        c.check(
            log.iter().all(|j| {
                j.release_ns >= run.f.t0_ns
                    && (j.release_ns - run.f.t0_ns) % (run.table.frame * run.f.slot_ns) == 0
            }),
            format!("{t}: every release is on the slot grid (t0 + k x 100 ms)"),
        );
    }
    check_witness(c, &run);
    check_yield(c, &run);
    check_block(c, &run);
    check_none(c, &run, &jobs_done);
    check_counts(c, &run, &jobs_done);
    check_carried(c, &run, &carried);
    let not_carried: BTreeMap<String, u64> = jobs_done
        .iter()
        .map(|(t, &d)| {
            (
                t.clone(),
                d.saturating_sub(carried.get(t).copied().unwrap_or(0)),
            )
        })
        .collect();
    match obs_report(&err) {
        Ok(r) => check_obs(c, &run, &r, &not_carried),
        Err(e) => c.check(false, e),
    }
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn a_completed_job_leaves_its_slots_to_be_work_and_its_observations_say_so() {
    Vm::new("completion")
        .smp(2)
        .timeout_s(300)
        .arg("duration_s", DURATION_S)
        .check(check);
}

#[test]
fn the_plan_gives_each_job_task_one_run_per_period() {
    let t = Table::of("completion", "completion.json");
    assert_eq!((t.frame, t.managed.as_slice()), (10, &[CPU][..]));
    for (task, n) in [("jy", 3), ("jb", 3), ("jn", 2)] {
        assert_eq!(t.static_count(task, 0, 10), n, "{task}");
    }
}

#[test]
fn job_logs_parse_and_overlaps_add_up() {
    let log = parse_log("# release_ns finish_ns exec_ns\n100 250 120\n\n200 260 50\n").unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(
        log[1],
        JobLine {
            release_ns: 200,
            finish_ns: 260,
            exec_ns: 50
        }
    );
    assert!(parse_log("1 2\n").is_err());
    let seg = |start, end| Segment {
        cpu: 1,
        pid: 7,
        comm: "x".into(),
        start,
        end,
        prio: 120,
    };
    let (a, b) = (seg(0, 10), seg(20, 30));
    assert_eq!(overlap(&[&a, &b], 5, 25), 10);
    assert_eq!(overlap(&[&a, &b], 10, 20), 0);
}

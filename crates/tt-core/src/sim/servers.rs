//! Seed 001's server designs in slots: what a component's unused slot time becomes, simulated
//! on one CPU at sub-slot resolution, with every local job's response time.
//!
//! Source: J. Lee, S. Xi, S. Chen, L. T. X. Phan, C. Gill, I. Lee, C. Lu, O. Sokolsky,
//! "Realizing Compositional Scheduling Through Virtualization" (RTAS 2012), Sections II-C,
//! III-A (PTPS, WCPS, CRPS, Lemma 2) and IV-B (the synthetic experiment).
//!
//! # Problem
//! A *component* (a VM, a process: a `tt` task of a plan) runs a workload of periodic tasks under
//! its own RM or EDF scheduler, and owns slots of an offline table: its interface Γ = (Π, Θ)
//! (crates/tt-core/src/planner/interface.rs) placed by EDF, Θ slots in every window [kΠ, (k+1)Π). Its jobs
//! often need less than that (the interface overhead U_Γ − U_W, and jobs that run below their
//! WCET). Where does the owner's unused slot time go, and what does that do to the response times
//! of every component's jobs? The paper answers with three server designs and measures them in
//! Xen; this module replays them on a slot table, tick by tick, so that they can be compared
//! (bench/server_designs.rs, docs/servers.md) and so that `scx_tt simulate` can show a plan's
//! local threads under the plan's design (docs/simulate.md).
//!
//! # Terminology
//! - *tick*: the time unit here, `ticks_per_slot` per slot (100 by default). Every job release
//!   and every window boundary falls on a slot boundary; only completions fall inside slots.
//! - *table*: `table[s]` is the component owning frame slot `s`, or `None` (a *free* slot); it
//!   repeats every `table.len()` slots (a table at least as long as the run is used once).
//! - *window*: a server job of a component: `[release, deadline)` in frame slots with `budget`
//!   slots; windows repeat with the table. For Γ = (Π, Θ) the windows are [kΠ, (k+1)Π) with Θ.
//!   A component's *current server job* at slot s is the window with release ≤ s < deadline,
//!   if any. Every slot a component owns lies in one of its windows (checked).
//! - *local task* (p, e): a job released at every multiple of p slots from 0, needing e slots,
//!   due p slots later (implicit deadline). Its actual execution is ⌈f·e·ticks_per_slot⌉ ticks
//!   (at least 1), f the execution-time factor (ETF): fixed, or drawn per job uniformly in
//!   [ETF, 1] (the paper's ETF) from the seed and the job's identity, so that every design sees
//!   the very same jobs.
//! - *ready work* of a component: a released, unfinished job of one of its tasks. Its local
//!   scheduler runs the first of them: RM, the task of the shortest period (ties: lower index);
//!   EDF, the earliest absolute deadline (ties: lower index). Jobs of one task run in release
//!   order.
//! - *opaque* component: a `tt` task with no known local workload; it is taken to use every
//!   tick of its slots, so it neither gives time away nor reclaims any.
//! - *priority* of a component (wcps-paper only): RM on its period Π, shorter first (ties: lower
//!   index).
//! - *be work*: best-effort work, always ready when present (`be`).
//!
//! # The designs (at every tick of a slot owned by component o)
//! ```text
//! o has ready work                  -> o runs                         (all designs; under
//!                                                                      wcps-paper o also needs
//!                                                                      budget left)
//! else ptps                         -> idle
//! else wcps                         -> be work, else idle
//! else crps                         -> the component c != o, not opaque, in its current server
//!                                      job, with ready work, of the earliest absolute deadline
//!                                      of that server job (ties: lower index); else be, idle
//! else wcps-paper                   -> the component c of lower priority than o, not opaque,
//!                                      with ready work and budget left in its current server
//!                                      job, of the highest priority; it consumes its own
//!                                      budget; else be, else idle
//! free slot (no owner)              -> be work, else idle              (all designs)
//! ```
//! scx_tt's `wcps` hands an idle owner's time to `be` work, not to other components: for the
//! components it is exactly `ptps` (their jobs see the same supply; only the be-time differs).
//! The paper's WCPS is the `wcps-paper` variant here (an experiment only, no product design): in
//! the paper the VMM schedules the servers by RM, and while the *current* server C_H (the one
//! whose budget is being consumed) is idle, the highest-priority non-idle *lower-priority*
//! server C_L runs, consuming its own budget and C_H's at once (rules (1)-(3) of Section III-A).
//! On a table the slot owner plays C_H. Budget accounting (a budget of Θ·ticks per window,
//! refilled at the window's release): every tick of the owner's slot consumes the owner's
//! budget while any is left, whoever runs; a tick the reclaimer runs consumes the reclaimer's
//! budget; an owner whose budget is spent (by its own earlier reclaiming) may not run in its own
//! slot, whose time is then offered to lower-priority components as if the owner were idle (the
//! paper's VMM would pick the next server with budget; on a table the owner's slot is the only
//! place to look). The paper's rule (3)(d), "C_H has no more budget", has no counterpart: the
//! owner's slot lasts to its end whatever the budget.
//! The paper's CRPS gives an idle server's residual capacity to *any* non-idle server without
//! touching that server's budget: `crps` here, with the choice among several reclaimers made by
//! the earliest deadline of their server jobs (the paper leaves it open; scx_tt's BPF side does
//! the same).
//!
//! # Algorithm
//! ```text
//! for slot s in 0 .. slots:
//!   release the jobs of tasks with s ≡ 0 mod p; move each component to its current window
//!   (wcps-paper: a new window refills the budget to budget·ticks)
//!   t = 0
//!   while t < ticks:
//!     pick who runs by the rule above
//!     run it for dt = min(ticks − t, its job's remaining work, [wcps-paper] the budgets that
//!       limit it); account dt as owner / reclaimed / be / idle time; t += dt
//!     a job whose work reaches 0 completes at s·ticks + t
//! at the end: a job unfinished past its deadline is a miss, its response taken as end − release
//! (a lower bound); a job unfinished and not yet due is not judged
//! ```
//! The loop steps by events rather than by ticks: ready work only shrinks inside a slot (releases
//! are on slot boundaries), so a choice holds until the running job completes, a budget runs out
//! or the slot ends. tests/simulate_servers.rs checks it against a tick-by-tick brute force.
//!
//! **Late jobs run on.** A job not finished by its deadline keeps running (the paper's Xen lets
//! it finish) and is counted as a miss with response / deadline > 1; the next job of its task
//! waits behind it.
//!
//! # Properties
//! 1. (Supply) Under ptps and wcps a component runs exactly in the ticks of its own slots in
//!    which it has ready work. Under crps it runs in those too, and possibly in others' slots.
//! 2. (Owner first) Under crps, wcps and ptps a component is never kept from running in its own
//!    slot while it has ready work: reclaiming and be work start only when the owner has none,
//!    and it can get none until the slot ends (releases are on slot boundaries).
//! 3. (Same jobs) Job releases and actual execution times do not depend on the design.
//! 4. (Guarantee) If the table gives each component Θ slots in every window and Γ passes
//!    Lemma 1 for its workload under the *general* supply (Θ anywhere in each window), then with
//!    any ETF ≤ 1 no job misses under ptps, wcps, crps or wcps-paper. Argument:
//!    - ptps/wcps: the supply is the component's table slots, a placement of Θ per window, and
//!      Lemma 1 holds for every placement; less execution than the WCET never delays a job
//!      (see the next point with equal supply).
//!    - crps: reclaimed time is never taken from a guaranteed job: by property 2 the owner gets
//!      every tick of its slots while it has ready work, as under ptps, so each component's
//!      supply under crps contains its ptps supply. More supply never delays a job of a local
//!      scheduler with job-level fixed priorities (RM with FIFO per task, EDF): let W(t) be the
//!      remaining work at t of the jobs of priority at least that of a job J under ptps, W'(t)
//!      the same under crps; the releases are the same, both decrease at rate 1 while supplied
//!      and non-empty, and W' is supplied whenever W is; so W'(t) ≤ W(t) at every t (when W
//!      decreases and W' does not, W' is empty), and J, done when its W reaches 0, is done no
//!      later under crps. Each job finishes no later under crps than under ptps: crps never
//!      has more misses than ptps, with or without a guarantee (tested on overloaded inputs).
//!    - wcps-paper (the paper's Lemma 2): a component's budget is consumed only while it runs
//!      or while its own slot passes, and its own slots alone would spend it by the window's
//!      end; so in every window exactly Θ·ticks of ticks are *its* (it runs in them whenever it
//!      has ready work), a placement of Θ per window again — the general supply of Lemma 1.
//!
//!    With the aligned supply (Π dividing p_1) the argument for crps still holds; for
//!    wcps-paper it would not (the aligned sbf assumes the table's placement).
//! 5. (wcps = ptps) scx_tt's wcps gives every component the same ticks as ptps.
//!
//! # Limits
//! Every value that could overflow is refused with an error naming it: `slots · ticks_per_slot`
//! and every `period · ticks_per_slot` must fit 64 bits; at most [`MAX_TICKS_PER_SLOT`] ticks a
//! slot, [`MAX_TABLE_SLOTS`] table slots and [`MAX_JOBS`] jobs in a run (their response times
//! are kept for the percentiles, 8 bytes each).

use crate::plan::gen::SplitMix64;
use crate::plan::{Class, Plan, ServerDesign, ThreadSelector};
use crate::planner::interface::{Resource, Scheduler};
use crate::planner::offline::{self, Job};
use serde::Serialize;
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

/// Ticks per slot when none is given: 100 (a 1 ms slot in 10 µs ticks).
pub const DEFAULT_TICKS_PER_SLOT: u64 = 100;
/// Most ticks per slot: 1,000,000 (a nanosecond resolution of a 1 ms slot).
pub const MAX_TICKS_PER_SLOT: u64 = 1_000_000;
/// Longest table: 4,194,304 slots (4 plan frame caps; 16 bytes a slot).
pub const MAX_TABLE_SLOTS: u64 = 1 << 22;
/// Most local jobs in one run: 8,388,608 (their response times are kept, 8 bytes each).
pub const MAX_JOBS: u64 = 1 << 23;

/// A server design: the product's three (`plan::ServerDesign`) and the paper's WCPS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// The owner's unused time idles.
    Ptps,
    /// The owner's unused time goes to `be` work (scx_tt's wcps).
    Wcps,
    /// Another component in its current server job with ready work reclaims it (earliest
    /// server deadline first), then `be` work.
    Crps,
    /// The paper's WCPS: a lower-priority (RM on Π) non-idle component with budget left runs,
    /// consuming its own budget too. Experiment only.
    WcpsPaper,
}

/// Every design, in the order the experiment prints them.
pub const DESIGNS: [Design; 4] = [Design::Ptps, Design::Wcps, Design::Crps, Design::WcpsPaper];

impl From<ServerDesign> for Design {
    fn from(d: ServerDesign) -> Design {
        match d {
            ServerDesign::Ptps => Design::Ptps,
            ServerDesign::Wcps => Design::Wcps,
            ServerDesign::Crps => Design::Crps,
        }
    }
}

impl FromStr for Design {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ptps" => Ok(Design::Ptps),
            "wcps" => Ok(Design::Wcps),
            "crps" => Ok(Design::Crps),
            "wcps-paper" => Ok(Design::WcpsPaper),
            _ => Err(format!(
                "{s:?} is not a server design: ptps, wcps, crps or wcps-paper"
            )),
        }
    }
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Design::Ptps => "ptps",
            Design::Wcps => "wcps",
            Design::Crps => "crps",
            Design::WcpsPaper => "wcps-paper",
        })
    }
}

/// Actual execution time of a component's jobs against their WCET.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exec {
    /// Every job runs ⌈f · wcet · ticks_per_slot⌉ ticks, 0 < f ≤ 1.
    Factor(f64),
    /// Each job runs ⌈f · wcet · ticks_per_slot⌉ ticks with f uniform in [min, 1], drawn from
    /// the run's seed and the job's identity (the paper's ETF), 0 < min ≤ 1.
    Uniform { min: f64 },
}

/// One periodic task of a component's workload, in slots (deadline = period).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocalTask {
    pub name: String,
    pub period: u64,
    pub wcet: u64,
}

/// One server job of a component, in frame slots: `[release, deadline)` with `budget` slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    pub release: u64,
    pub deadline: u64,
    pub budget: u64,
}

/// A component: a slot owner of the table with its local workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Component {
    pub name: String,
    pub scheduler: Scheduler,
    pub tasks: Vec<LocalTask>,
    /// No known workload: uses every tick of its slots, never gives time or reclaims.
    pub opaque: bool,
    /// Its server jobs in one frame: sorted, disjoint, inside `[0, table.len())`.
    pub windows: Vec<Window>,
    /// Π, its priority among components under wcps-paper (shorter first).
    pub period: u64,
    pub exec: Exec,
}

impl Component {
    /// A component with interface `gamma` over a frame of `frame` slots: windows
    /// [kΠ, (k+1)Π) with Θ slots for every k with (k+1)Π ≤ `frame`.
    pub fn with_interface(
        name: impl Into<String>,
        scheduler: Scheduler,
        tasks: Vec<LocalTask>,
        gamma: Resource,
        frame: u64,
        exec: Exec,
    ) -> Component {
        Component {
            name: name.into(),
            scheduler,
            tasks,
            opaque: false,
            windows: periodic_windows(gamma, frame),
            period: gamma.period,
            exec,
        }
    }
}

/// The windows of Γ = (Π, Θ) that end by `frame`: [kΠ, (k+1)Π) with budget Θ.
pub fn periodic_windows(gamma: Resource, frame: u64) -> Vec<Window> {
    if gamma.period == 0 {
        return Vec::new();
    }
    (0..frame / gamma.period)
        .map(|k| Window {
            release: k * gamma.period,
            deadline: (k + 1) * gamma.period,
            budget: gamma.budget,
        })
        .collect()
}

/// One run: a table, its components, the design.
#[derive(Clone, Copy, Debug)]
pub struct Config<'a> {
    /// The frame: owner component of each slot, `None` for a free slot; repeats.
    pub table: &'a [Option<usize>],
    pub components: &'a [Component],
    pub ticks_per_slot: u64,
    /// Slots to simulate.
    pub slots: u64,
    pub design: Design,
    /// Whether `be` work is present (always ready).
    pub be: bool,
    /// Seed of [`Exec::Uniform`] draws.
    pub seed: u64,
}

/// CPU time by kind, in ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TimeSplit {
    /// A component ran in its own slot.
    pub owner: u64,
    /// A component ran in a slot another component owns.
    pub reclaimed: u64,
    /// `be` work ran (in an owner's unused time or a free slot).
    pub be: u64,
    pub idle: u64,
}

/// Response time / deadline of judged jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Ratios {
    pub mean: f64,
    /// Nearest rank: the smallest value with at least 99 % of the jobs at or below it.
    pub p99: f64,
    pub max: f64,
}

impl Ratios {
    /// The statistics of `values` (all zero when empty).
    pub fn of(values: &[f64]) -> Ratios {
        if values.is_empty() {
            return Ratios::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let rank = (n * 99).div_ceil(100).max(1);
        Ratios {
            mean: v.iter().sum::<f64>() / n as f64,
            p99: v[rank - 1],
            max: v[n - 1],
        }
    }
}

/// Results of one local task.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TaskStats {
    pub name: String,
    pub period: u64,
    pub wcet: u64,
    /// Judged jobs: finished, or unfinished past their deadline.
    pub jobs: u64,
    /// Jobs finished after their deadline or unfinished past it.
    pub misses: u64,
    /// Jobs unfinished at the end and not yet due (not judged).
    pub pending: u64,
    /// Response time / deadline of the judged jobs.
    pub response: Ratios,
    /// Every judged job's response time / deadline, in release order.
    #[serde(skip)]
    pub ratios: Vec<f64>,
}

/// Results of one component.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ComponentStats {
    pub name: String,
    pub opaque: bool,
    pub jobs: u64,
    pub misses: u64,
    pub pending: u64,
    pub response: Ratios,
    /// Ticks of the table it owns in the run.
    pub owned: u64,
    /// Ticks it ran in its own slots.
    pub ran_own: u64,
    /// Ticks it ran in other components' slots.
    pub ran_reclaimed: u64,
    /// Ticks of its slots other components ran in.
    pub given: u64,
    /// Ticks of its slots that went to `be` work or idled.
    pub unused: u64,
    pub tasks: Vec<TaskStats>,
}

impl ComponentStats {
    /// Every judged job's response time / deadline.
    pub fn ratios(&self) -> impl Iterator<Item = f64> + '_ {
        self.tasks.iter().flat_map(|t| t.ratios.iter().copied())
    }
}

/// Results of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerReport {
    pub design: Design,
    pub ticks_per_slot: u64,
    pub slots: u64,
    pub jobs: u64,
    pub misses: u64,
    pub time: TimeSplit,
    pub components: Vec<ComponentStats>,
}

/// Why a run, a table or a plan's local workloads were refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ServerError {
    #[error("ticks_per_slot = {0}: must be in 1..={MAX_TICKS_PER_SLOT}")]
    Ticks(u64),
    #[error("table: empty: needs at least one slot")]
    EmptyTable,
    #[error("table: {0} slots, above the cap of {MAX_TABLE_SLOTS}")]
    TableTooLong(u64),
    #[error("table[{slot}] = {owner}: no such component ({count} components)")]
    NoSuchOwner {
        slot: u64,
        owner: usize,
        count: usize,
    },
    #[error(
        "table[{slot}] = {owner}: the slot lies outside every window (server job) of \
         components[{owner}]"
    )]
    OutsideWindow { slot: u64, owner: usize },
    #[error("components[{component}].tasks[{task}]: {why}")]
    Task {
        component: usize,
        task: usize,
        why: String,
    },
    #[error("components[{component}].windows[{window}] = {window_text}: {why}")]
    Window {
        component: usize,
        window: usize,
        window_text: String,
        why: &'static str,
    },
    #[error("components[{component}].exec = {value}: the execution-time factor must be in (0, 1]")]
    Exec { component: usize, value: f64 },
    #[error("components[{component}].period = 0: design wcps-paper needs a period of at least 1 slot (its RM priority)")]
    NoPeriod { component: usize },
    #[error("{what} = {value}: overflows 64 bits")]
    Overflow { what: String, value: String },
    #[error("the run has {jobs} local jobs, above the cap of {MAX_JOBS}: simulate fewer slots")]
    TooManyJobs { jobs: u128 },
    #[error("servers[{server}] = (period {period}, budget {budget}): needs 1 ≤ period and budget ≤ period")]
    Server {
        server: usize,
        period: u64,
        budget: u64,
    },
    #[error("plan: {0}")]
    Plan(String),
}

/// How [`server_table`] placed the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableKind {
    /// Preemptive EDF of the server jobs (`planner::offline::edf`): every window gets its
    /// budget.
    Edf,
    /// Σ Θ/Π > 1, EDF has no table: fixed priorities by Π (the paper's RM at the VMM), a
    /// server job's budget left at its deadline dropped; some windows get less.
    RmOverloaded,
}

/// A table of servers for one CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerTable {
    /// Owner server of each slot.
    pub table: Vec<Option<usize>>,
    /// The windows of each server within the table.
    pub windows: Vec<Vec<Window>>,
    pub kind: TableKind,
    /// Whether the table is the hyperperiod (lcm of the periods) and repeats; else it is at
    /// least `slots` long and is used once.
    pub repeats: bool,
    /// Per server: windows of the table that got less than their budget (0 under EDF).
    pub short_windows: Vec<u64>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The table for servers Γ_c = `servers[c]` on one CPU and a run of `slots` slots: the
/// hyperperiod when it is at most `max(slots, 1)` and [`MAX_TABLE_SLOTS`] (then it repeats),
/// else one table of ⌈slots/Π⌉·Π slots (the largest over the servers), used once. Placed by
/// the crate's offline EDF (`planner::offline::edf`, ties by server index); when the servers
/// overload the CPU (Σ Θ/Π > 1: the paper's "overloaded" domains) by fixed priorities, the
/// shortest period first (the paper's VMM), dropping budget not served by a window's end.
pub fn server_table(servers: &[Resource], slots: u64) -> Result<ServerTable, ServerError> {
    for (i, r) in servers.iter().enumerate() {
        if r.period == 0 || r.budget > r.period {
            return Err(ServerError::Server {
                server: i,
                period: r.period,
                budget: r.budget,
            });
        }
    }
    let slots = slots.max(1);
    let mut hyper: Option<u64> = Some(1);
    for r in servers {
        hyper = hyper
            .and_then(|h| (h / gcd(h, r.period)).checked_mul(r.period))
            .filter(|&h| h <= slots.min(MAX_TABLE_SLOTS));
    }
    let (frame, repeats) = match hyper {
        Some(h) => (h, true),
        None => {
            let frame = servers
                .iter()
                .map(|r| u128::from(slots.div_ceil(r.period)) * u128::from(r.period))
                .max()
                .unwrap_or(1);
            if frame > u128::from(MAX_TABLE_SLOTS) {
                return Err(ServerError::TableTooLong(
                    u64::try_from(frame).unwrap_or(u64::MAX),
                ));
            }
            (frame as u64, false)
        }
    };
    let windows: Vec<Vec<Window>> = servers
        .iter()
        .map(|&r| {
            // windows that start inside the run (the ones after cannot matter)
            let n = if repeats {
                frame / r.period
            } else {
                slots.div_ceil(r.period)
            };
            (0..n)
                .map(|k| Window {
                    release: k * r.period,
                    deadline: (k + 1) * r.period,
                    budget: r.budget,
                })
                .collect()
        })
        .collect();
    let mut jobs = Vec::new();
    for (c, ws) in windows.iter().enumerate() {
        for (k, w) in ws.iter().enumerate() {
            if w.budget > 0 {
                jobs.push(Job {
                    task: c,
                    instance: k as u32,
                    release: w.release,
                    deadline: w.deadline,
                    wcet: w.budget,
                });
            }
        }
    }
    let mut table = vec![None; frame as usize];
    match offline::edf(&jobs, frame) {
        Ok(ranges) => {
            for r in ranges {
                for s in r.start..r.end {
                    table[s as usize] = Some(jobs[r.job].task);
                }
            }
            Ok(ServerTable {
                table,
                short_windows: vec![0; servers.len()],
                windows,
                kind: TableKind::Edf,
                repeats,
            })
        }
        Err(_) => {
            // fixed priorities, the shortest period first; a window's budget not served by its
            // end is dropped
            let mut order: Vec<usize> = (0..servers.len()).collect();
            order.sort_by_key(|&c| (servers[c].period, c));
            let mut left = vec![0u64; servers.len()];
            for s in 0..frame {
                for (c, r) in servers.iter().enumerate() {
                    if s % r.period == 0 {
                        let k = (s / r.period) as usize;
                        left[c] = windows[c].get(k).map_or(0, |w| w.budget);
                    }
                }
                if let Some(&c) = order.iter().find(|&&c| left[c] > 0) {
                    table[s as usize] = Some(c);
                    left[c] -= 1;
                }
            }
            let short_windows = windows
                .iter()
                .enumerate()
                .map(|(c, ws)| {
                    ws.iter()
                        .filter(|w| {
                            let got = (w.release..w.deadline)
                                .filter(|&s| table[s as usize] == Some(c))
                                .count() as u64;
                            got < w.budget
                        })
                        .count() as u64
                })
                .collect();
            Ok(ServerTable {
                table,
                windows,
                kind: TableKind::RmOverloaded,
                repeats,
                short_windows,
            })
        }
    }
}

/// One released, unfinished job.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// Release slot.
    release: u64,
    /// Work left, ticks.
    left: u64,
}

struct TaskState {
    comp: usize,
    /// Index within its component.
    local: usize,
    period: u64,
    period_ticks: u64,
    wcet_ticks: u64,
    next_release: u64,
    released: u64,
    queue: VecDeque<Pending>,
    misses: u64,
    ratios: Vec<f64>,
}

#[derive(Clone, Copy, Default)]
struct WindowState {
    /// Index of the first window (in `windows`, frame `frame_no`) not over yet.
    idx: usize,
    frame_no: u64,
    active: bool,
    /// Absolute deadline slot of the current window (when active).
    deadline: u64,
    /// wcps-paper: budget ticks left in the current window.
    budget: u64,
    /// Whether the budget of window (idx, frame_no) was filled.
    filled: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runner {
    Comp(usize),
    Be,
    Idle,
}

fn overflow(what: impl Into<String>, value: impl fmt::Display) -> ServerError {
    ServerError::Overflow {
        what: what.into(),
        value: value.to_string(),
    }
}

/// The execution factor of job `k` of task `task` of component `comp`.
fn factor(exec: Exec, seed: u64, comp: usize, task: usize, k: u64) -> f64 {
    match exec {
        Exec::Factor(f) => f,
        Exec::Uniform { min } => {
            let mut key = SplitMix64::new(seed).next_u64() ^ comp as u64;
            key = SplitMix64::new(key).next_u64() ^ task as u64;
            key = SplitMix64::new(key).next_u64() ^ k;
            let u = SplitMix64::new(key).next_f64();
            min + (1.0 - min) * u
        }
    }
}

/// Actual ticks of a job of `wcet_ticks` at factor `f` (0 < f ≤ 1): ⌈f·wcet⌉, at least 1.
fn actual_ticks(f: f64, wcet_ticks: u64) -> u64 {
    ((f * wcet_ticks as f64).ceil() as u64).clamp(1, wcet_ticks)
}

fn validate(cfg: &Config) -> Result<(), ServerError> {
    let tps = cfg.ticks_per_slot;
    if !(1..=MAX_TICKS_PER_SLOT).contains(&tps) {
        return Err(ServerError::Ticks(tps));
    }
    let frame = cfg.table.len() as u64;
    if frame == 0 {
        return Err(ServerError::EmptyTable);
    }
    if frame > MAX_TABLE_SLOTS {
        return Err(ServerError::TableTooLong(frame));
    }
    let end_ticks = cfg
        .slots
        .checked_mul(tps)
        .ok_or_else(|| overflow("slots · ticks_per_slot", format!("{} · {tps}", cfg.slots)))?;
    // window deadlines reach at most one frame past the run
    cfg.slots
        .checked_add(frame)
        .and_then(|x| x.checked_mul(tps))
        .ok_or_else(|| overflow("(slots + table length) · ticks_per_slot", end_ticks))?;
    let mut jobs: u128 = 0;
    for (c, comp) in cfg.components.iter().enumerate() {
        let f = match comp.exec {
            Exec::Factor(f) => f,
            Exec::Uniform { min } => min,
        };
        if !(f > 0.0 && f <= 1.0) {
            return Err(ServerError::Exec {
                component: c,
                value: f,
            });
        }
        if cfg.design == Design::WcpsPaper && comp.period == 0 {
            return Err(ServerError::NoPeriod { component: c });
        }
        for (i, t) in comp.tasks.iter().enumerate() {
            let bad = |why: String| ServerError::Task {
                component: c,
                task: i,
                why,
            };
            if t.period == 0 {
                return Err(bad("period = 0: must be at least 1 slot".into()));
            }
            if t.wcet == 0 || t.wcet > t.period {
                return Err(bad(format!(
                    "wcet = {}: needs 1 ≤ wcet ≤ period ({})",
                    t.wcet, t.period
                )));
            }
            t.period
                .checked_mul(tps)
                .and_then(|p| p.checked_add(end_ticks))
                .ok_or_else(|| {
                    overflow(
                        format!("components[{c}].tasks[{i}].period · ticks_per_slot"),
                        format!("{} · {tps}", t.period),
                    )
                })?;
            jobs += u128::from(cfg.slots.div_ceil(t.period));
        }
        let mut prev_end = 0;
        for (w, win) in comp.windows.iter().enumerate() {
            let bad = |why| ServerError::Window {
                component: c,
                window: w,
                window_text: format!("[{}, {}) budget {}", win.release, win.deadline, win.budget),
                why,
            };
            if win.release >= win.deadline || win.deadline > frame {
                return Err(bad("needs release < deadline ≤ the table length"));
            }
            if win.release < prev_end {
                return Err(bad("windows must be sorted and disjoint"));
            }
            if win.budget > win.deadline - win.release {
                return Err(bad("budget exceeds the window"));
            }
            prev_end = win.deadline;
        }
    }
    if jobs > u128::from(MAX_JOBS) {
        return Err(ServerError::TooManyJobs { jobs });
    }
    // every owned slot lies in a window of its owner
    let mut at = vec![0usize; cfg.components.len()];
    for (s, owner) in cfg.table.iter().enumerate() {
        let Some(o) = *owner else { continue };
        let comp = cfg.components.get(o).ok_or(ServerError::NoSuchOwner {
            slot: s as u64,
            owner: o,
            count: cfg.components.len(),
        })?;
        let s = s as u64;
        while at[o] < comp.windows.len() && comp.windows[at[o]].deadline <= s {
            at[o] += 1;
        }
        match comp.windows.get(at[o]) {
            Some(w) if w.release <= s => {}
            _ => return Err(ServerError::OutsideWindow { slot: s, owner: o }),
        }
    }
    Ok(())
}

/// Runs one CPU's table with its components under `cfg.design` (module doc).
pub fn simulate(cfg: &Config) -> Result<ServerReport, ServerError> {
    validate(cfg)?;
    let tps = cfg.ticks_per_slot;
    let frame = cfg.table.len() as u64;
    let comps = cfg.components;
    let n = comps.len();
    let mut tasks: Vec<TaskState> = Vec::new();
    // per component: its task indices (into `tasks`) in RM order (period, index)
    let mut order: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (c, comp) in comps.iter().enumerate() {
        let first = tasks.len();
        for (i, t) in comp.tasks.iter().enumerate() {
            tasks.push(TaskState {
                comp: c,
                local: i,
                period: t.period,
                period_ticks: t.period * tps,
                wcet_ticks: t.wcet * tps,
                next_release: 0,
                released: 0,
                queue: VecDeque::new(),
                misses: 0,
                ratios: Vec::new(),
            });
        }
        let mut o: Vec<usize> = (first..tasks.len()).collect();
        o.sort_by_key(|&t| (tasks[t].period, t));
        order[c] = o;
    }
    let mut ready = vec![0usize; n];
    let mut win = vec![WindowState::default(); n];
    let mut time = TimeSplit::default();
    let mut stats: Vec<ComponentStats> = comps
        .iter()
        .map(|c| ComponentStats {
            name: c.name.clone(),
            opaque: c.opaque,
            ..Default::default()
        })
        .collect();

    // The job a component's local scheduler runs: (task index) or None.
    let pick = |c: usize, tasks: &[TaskState], order: &[Vec<usize>]| -> Option<usize> {
        match comps[c].scheduler {
            Scheduler::Rm => order[c]
                .iter()
                .copied()
                .find(|&t| !tasks[t].queue.is_empty()),
            Scheduler::Edf => order[c]
                .iter()
                .copied()
                .filter_map(|t| {
                    tasks[t]
                        .queue
                        .front()
                        .map(|j| (j.release + tasks[t].period, t))
                })
                .min()
                .map(|(_, t)| t),
        }
    };

    for s in 0..cfg.slots {
        // releases
        for t in tasks.iter_mut() {
            if t.next_release == s {
                let f = factor(comps[t.comp].exec, cfg.seed, t.comp, t.local, t.released);
                if t.queue.is_empty() {
                    ready[t.comp] += 1;
                }
                t.queue.push_back(Pending {
                    release: s,
                    left: actual_ticks(f, t.wcet_ticks),
                });
                t.released += 1;
                t.next_release = s + t.period;
            }
        }
        // current windows
        for (c, w) in win.iter_mut().enumerate() {
            let ws = &comps[c].windows;
            w.active = false;
            if ws.is_empty() {
                continue;
            }
            loop {
                let x = ws[w.idx];
                let base = w.frame_no * frame;
                if base + x.deadline <= s {
                    w.idx += 1;
                    if w.idx == ws.len() {
                        w.idx = 0;
                        w.frame_no += 1;
                    }
                    w.filled = false;
                    continue;
                }
                if base + x.release <= s {
                    w.active = true;
                    w.deadline = base + x.deadline;
                    if !w.filled {
                        w.budget = x.budget * tps;
                        w.filled = true;
                    }
                }
                break;
            }
        }
        let owner = cfg.table[(s % frame) as usize];
        if let Some(o) = owner {
            stats[o].owned += tps;
        }
        let mut t = 0u64;
        while t < tps {
            let rest = tps - t;
            let owner_runs = owner.is_some_and(|o| {
                comps[o].opaque
                    || (ready[o] > 0 && (cfg.design != Design::WcpsPaper || win[o].budget > 0))
            });
            let runner = match owner {
                None => {
                    if cfg.be {
                        Runner::Be
                    } else {
                        Runner::Idle
                    }
                }
                Some(o) if owner_runs => Runner::Comp(o),
                Some(o) => {
                    let other = match cfg.design {
                        Design::Ptps | Design::Wcps => None,
                        Design::Crps => (0..n)
                            .filter(|&c| {
                                c != o && !comps[c].opaque && win[c].active && ready[c] > 0
                            })
                            .min_by_key(|&c| (win[c].deadline, c)),
                        Design::WcpsPaper => (0..n)
                            .filter(|&c| {
                                (comps[c].period, c) > (comps[o].period, o)
                                    && !comps[c].opaque
                                    && win[c].active
                                    && win[c].budget > 0
                                    && ready[c] > 0
                            })
                            .min_by_key(|&c| (comps[c].period, c)),
                    };
                    match other {
                        Some(c) => Runner::Comp(c),
                        None if cfg.be && cfg.design != Design::Ptps => Runner::Be,
                        None => Runner::Idle,
                    }
                }
            };
            let dt = match runner {
                Runner::Comp(c) if comps[c].opaque => rest,
                Runner::Comp(c) => {
                    let ti = pick(c, &tasks, &order).expect("a ready component has a job");
                    let job = tasks[ti].queue.front_mut().expect("picked job");
                    let mut dt = rest.min(job.left);
                    if cfg.design == Design::WcpsPaper {
                        dt = dt.min(win[c].budget);
                        if Some(c) != owner {
                            win[c].budget -= dt;
                        }
                    }
                    job.left -= dt;
                    if job.left == 0 {
                        let job = *job;
                        let tk = &mut tasks[ti];
                        tk.queue.pop_front();
                        if tk.queue.is_empty() {
                            ready[c] -= 1;
                        }
                        let finish = s * tps + t + dt;
                        let release = job.release * tps;
                        if finish > release + tk.period_ticks {
                            tk.misses += 1;
                        }
                        tk.ratios
                            .push((finish - release) as f64 / tk.period_ticks as f64);
                    }
                    dt
                }
                Runner::Be | Runner::Idle => rest,
            };
            debug_assert!(dt > 0);
            // the owner's budget passes with its slot (wcps-paper)
            if let Some(o) = owner {
                if cfg.design == Design::WcpsPaper {
                    win[o].budget = win[o].budget.saturating_sub(dt);
                }
            }
            match (runner, owner) {
                (Runner::Comp(c), Some(o)) if c == o => {
                    time.owner += dt;
                    stats[c].ran_own += dt;
                }
                (Runner::Comp(c), Some(o)) => {
                    time.reclaimed += dt;
                    stats[c].ran_reclaimed += dt;
                    stats[o].given += dt;
                }
                (Runner::Comp(_), None) => unreachable!("free slots run no component"),
                (Runner::Be, o) | (Runner::Idle, o) => {
                    if runner == Runner::Be {
                        time.be += dt;
                    } else {
                        time.idle += dt;
                    }
                    if let Some(o) = o {
                        stats[o].unused += dt;
                    }
                }
            }
            t += dt;
        }
    }
    // unfinished jobs: a miss once due (response = end − release, a lower bound), else pending
    let end = cfg.slots * tps;
    let mut per_task: Vec<Vec<TaskStats>> = comps
        .iter()
        .map(|c| {
            c.tasks
                .iter()
                .map(|t| TaskStats {
                    name: t.name.clone(),
                    period: t.period,
                    wcet: t.wcet,
                    ..Default::default()
                })
                .collect()
        })
        .collect();
    for tk in tasks {
        let st = &mut per_task[tk.comp][tk.local];
        let mut ratios = tk.ratios;
        st.misses = tk.misses;
        for j in &tk.queue {
            let release = j.release * tps;
            if release + tk.period_ticks <= end {
                st.misses += 1;
                ratios.push((end - release) as f64 / tk.period_ticks as f64);
            } else {
                st.pending += 1;
            }
        }
        st.jobs = ratios.len() as u64;
        st.response = Ratios::of(&ratios);
        st.ratios = ratios;
    }
    let mut jobs = 0;
    let mut misses = 0;
    for (c, ts) in per_task.into_iter().enumerate() {
        let st = &mut stats[c];
        st.jobs = ts.iter().map(|t| t.jobs).sum();
        st.misses = ts.iter().map(|t| t.misses).sum();
        st.pending = ts.iter().map(|t| t.pending).sum();
        st.tasks = ts;
        let all: Vec<f64> = st.ratios().collect();
        st.response = Ratios::of(&all);
        jobs += st.jobs;
        misses += st.misses;
    }
    Ok(ServerReport {
        design: cfg.design,
        ticks_per_slot: tps,
        slots: cfg.slots,
        jobs,
        misses,
        time,
        components: stats,
    })
}

/// One managed CPU's local workloads under a design (`scx_tt simulate`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuServers {
    pub cpu: u32,
    #[serde(flatten)]
    pub report: ServerReport,
}

/// The local-workload section of `scx_tt simulate` (docs/simulate.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanServers {
    pub design: Design,
    /// Execution-time factor of the local jobs.
    pub etf: f64,
    pub ticks_per_slot: u64,
    /// Managed CPUs with at least one task with a local workload, plan order.
    pub cpus: Vec<CpuServers>,
}

fn thread_name(t: &ThreadSelector) -> String {
    match t {
        ThreadSelector::Comm(c) => c.clone(),
        ThreadSelector::Tid(t) => format!("tid {t}"),
    }
}

/// The plan's `tt` tasks with a local workload (`Task::local`) on their CPUs' tables for
/// `frames` frames under `design`, every local job at `etf` × its WCET: `None` when no task has
/// a local workload. On each CPU the components are the `tt` tasks owning slots of its table,
/// in plan order; their windows are their jobs of the frame; a task without `local` is opaque
/// (uses all its slots). `be` work is present when a `be` task may run on the CPU.
pub fn simulate_plan(
    plan: &Plan,
    design: Design,
    etf: f64,
    frames: u64,
    ticks_per_slot: u64,
) -> Result<Option<PlanServers>, ServerError> {
    if !plan.tasks.iter().any(|t| t.local.is_some()) {
        return Ok(None);
    }
    if !(etf > 0.0 && etf <= 1.0) {
        return Err(ServerError::Plan(format!(
            "etf = {etf}: the execution-time factor must be in (0, 1]"
        )));
    }
    let frame = plan.frame_slots;
    let slots = frames
        .checked_mul(frame)
        .ok_or_else(|| overflow("frames · frame_slots", format!("{frames} · {frame}")))?;
    let inputs = plan.planner_inputs();
    let mut cpus = Vec::new();
    for (ci, cpu) in plan.cpus.iter().enumerate() {
        // components: tasks owning jobs on this CPU, plan order
        let mut ids: Vec<usize> = cpu.jobs.iter().map(|j| j.task).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.retain(|&t| plan.tasks.get(t).is_some_and(|x| x.class == Class::Tt));
        if !ids.iter().any(|&t| plan.tasks[t].local.is_some()) {
            continue;
        }
        let comp_of = |task: usize| ids.binary_search(&task).ok();
        let mut components = Vec::with_capacity(ids.len());
        for &t in &ids {
            let task = &plan.tasks[t];
            let mut windows: Vec<Window> = cpu
                .jobs
                .iter()
                .filter(|j| j.task == t)
                .map(|j| Window {
                    release: j.release,
                    deadline: j.deadline,
                    budget: j.wcet,
                })
                .collect();
            windows.sort_by_key(|w| w.release);
            let period = frame / (windows.len() as u64).max(1);
            let (scheduler, tasks, opaque) = match &task.local {
                Some(l) => (
                    l.scheduler,
                    l.threads
                        .iter()
                        .map(|th| LocalTask {
                            name: thread_name(&th.thread),
                            period: th.period,
                            wcet: th.wcet,
                        })
                        .collect(),
                    false,
                ),
                None => (Scheduler::Rm, Vec::new(), true),
            };
            components.push(Component {
                name: task.name.clone(),
                scheduler,
                tasks,
                opaque,
                windows,
                period,
                exec: Exec::Factor(etf),
            });
        }
        let mut table = vec![None; frame as usize];
        for r in &cpu.table {
            let owner = cpu.jobs.get(r.job).and_then(|j| comp_of(j.task));
            for s in r.start..r.end.min(frame) {
                table[s as usize] = owner;
            }
        }
        let report = simulate(&Config {
            table: &table,
            components: &components,
            ticks_per_slot,
            slots,
            design,
            be: inputs.get(ci).is_some_and(|i| i.has_be),
            seed: 0,
        })
        .map_err(|e| ServerError::Plan(format!("cpu {}: {e}", cpu.cpu)))?;
        cpus.push(CpuServers {
            cpu: cpu.cpu,
            report,
        });
    }
    Ok(Some(PlanServers {
        design,
        etf,
        ticks_per_slot,
        cpus,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(period: u64, wcet: u64) -> LocalTask {
        LocalTask {
            name: format!("({period},{wcet})"),
            period,
            wcet,
        }
    }

    fn two(design: Design, tps: u64) -> ServerReport {
        // module doc example (tests/simulate_servers.rs works it by hand): A = (2, 1) with
        // {(4, 1)}, B = (4, 2) with {(4, 3)}; table A B A B
        let table = [Some(0), Some(1), Some(0), Some(1)];
        let comps = [
            Component::with_interface(
                "a",
                Scheduler::Rm,
                vec![task(4, 1)],
                Resource {
                    period: 2,
                    budget: 1,
                },
                4,
                Exec::Factor(1.0),
            ),
            Component::with_interface(
                "b",
                Scheduler::Rm,
                vec![task(4, 3)],
                Resource {
                    period: 4,
                    budget: 2,
                },
                4,
                Exec::Factor(1.0),
            ),
        ];
        simulate(&Config {
            table: &table,
            components: &comps,
            ticks_per_slot: tps,
            slots: 8,
            design,
            be: true,
            seed: 1,
        })
        .unwrap()
    }

    #[test]
    fn crps_reclaims_the_idle_owner_slot_and_ptps_does_not() {
        for tps in [1, 7] {
            let p = two(Design::Ptps, tps);
            let w = two(Design::Wcps, tps);
            let c = two(Design::Crps, tps);
            let x = two(Design::WcpsPaper, tps);
            assert_eq!((p.misses, w.misses, c.misses, x.misses), (2, 2, 0, 2));
            assert_eq!(p.time.idle, 2 * tps);
            assert_eq!(w.time.be, 2 * tps);
            assert_eq!(c.time.reclaimed, 2 * tps);
            assert_eq!(x.time.reclaimed, 2 * tps);
            assert_eq!(x.time.be, 2 * tps);
            assert_eq!(c.components[1].response.max, 1.0);
            assert_eq!(p.components[1].response.max, 1.5);
        }
    }

    #[test]
    fn an_empty_table_or_a_slot_outside_its_owners_windows_is_refused() {
        let comps = [Component {
            name: "a".into(),
            scheduler: Scheduler::Edf,
            tasks: vec![task(2, 1)],
            opaque: false,
            windows: vec![Window {
                release: 0,
                deadline: 1,
                budget: 1,
            }],
            period: 2,
            exec: Exec::Factor(1.0),
        }];
        let cfg = |table: &'static [Option<usize>]| Config {
            table,
            components: &comps,
            ticks_per_slot: 10,
            slots: 4,
            design: Design::Crps,
            be: false,
            seed: 0,
        };
        assert_eq!(simulate(&cfg(&[])), Err(ServerError::EmptyTable));
        assert_eq!(
            simulate(&cfg(&[None, Some(0)])),
            Err(ServerError::OutsideWindow { slot: 1, owner: 0 })
        );
        assert!(matches!(
            simulate(&cfg(&[Some(1), None])),
            Err(ServerError::NoSuchOwner { .. })
        ));
        let mut big = cfg(&[Some(0), None]);
        big.slots = u64::MAX / 2;
        let e = simulate(&big).unwrap_err().to_string();
        assert!(e.contains("overflows 64 bits"), "{e}");
        let mut t = cfg(&[Some(0), None]);
        t.ticks_per_slot = 0;
        assert_eq!(simulate(&t), Err(ServerError::Ticks(0)));
    }

    #[test]
    fn the_edf_table_gives_every_window_its_budget_and_overload_falls_back_to_rm() {
        let r = |period, budget| Resource { period, budget };
        let t = server_table(&[r(2, 1), r(3, 1)], 100).unwrap();
        assert_eq!(
            (t.kind, t.repeats, t.table.len()),
            (TableKind::Edf, true, 6)
        );
        for (c, ws) in t.windows.iter().enumerate() {
            for w in ws {
                let got = (w.release..w.deadline)
                    .filter(|&s| t.table[s as usize] == Some(c))
                    .count() as u64;
                assert_eq!(got, w.budget);
            }
        }
        let o = server_table(&[r(2, 1), r(3, 2)], 12).unwrap();
        assert_eq!(o.kind, TableKind::RmOverloaded);
        assert_eq!(o.short_windows[0], 0);
        assert!(o.short_windows[1] > 0);
        // no common multiple within the run: one table at least as long as the run
        let l = server_table(&[r(7, 1), r(11, 1), r(13, 1)], 50).unwrap();
        assert!(!l.repeats && l.table.len() >= 50);
    }

    #[test]
    fn uniform_draws_depend_on_the_job_not_on_the_order() {
        let a = factor(Exec::Uniform { min: 0.1 }, 3, 1, 2, 7);
        let b = factor(Exec::Uniform { min: 0.1 }, 3, 1, 2, 7);
        let c = factor(Exec::Uniform { min: 0.1 }, 3, 1, 2, 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!((0.1..=1.0).contains(&a));
        assert_eq!(actual_ticks(0.01, 100), 1);
        assert_eq!(actual_ticks(0.5, 101), 51);
        assert_eq!(actual_ticks(1.0, 100), 100);
    }

    #[test]
    fn ratios_use_the_nearest_rank() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        let r = Ratios::of(&v);
        assert_eq!((r.p99, r.max), (198.0, 200.0));
        assert_eq!(Ratios::of(&[]), Ratios::default());
    }
}

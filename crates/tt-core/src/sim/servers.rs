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

mod check;
mod plan;
mod run;
mod table;
#[cfg(test)]
mod tests;

pub use plan::{simulate_plan, CpuServers, PlanServers};
pub use run::simulate;
pub use table::{server_table, ServerTable, TableKind};

use crate::plan::ServerDesign;
use crate::planner::interface::{Resource, Scheduler};
use serde::Serialize;
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

/// The error for a value `what` (shown as `value`) that overflows 64 bits.
fn overflow(what: impl Into<String>, value: impl fmt::Display) -> ServerError {
    ServerError::Overflow {
        what: what.into(),
        value: value.to_string(),
    }
}

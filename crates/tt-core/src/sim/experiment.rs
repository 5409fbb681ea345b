//! The power experiment of the EASS paper (Section VI-A), repeated in simulation: the task sets,
//! the runs and the power figures. `bench/energy_experiment.rs` prints and plots them; the tests
//! check that no policy misses a guaranteed deadline on them.
//!
//! # Task sets (paper Table I, and how it is read here)
//! - Scheduled VMs: UUnifast (`plan gen`) with total utilization `u_sched` ∈ 20..80 %, WCET
//!   [1, 15] slots, periods [15, 50] slots, `round(10 · u_sched)` tasks (at least 2), on one
//!   managed CPU. The frame is one of 1800, 1920, 2000, 2100, 2160, 2200 slots (periods are
//!   drawn among its divisors), so a schedule is 1,800–2,200 slots long like the paper's.
//! - New jobs: the table gives WCET [10, 15] and "period" [10, 15], which cannot be periodic
//!   tasks of 10–50 % utilization (WCET ≥ 10 and period ≤ 15 is ≥ 67 % each). They are read as
//!   firm aperiodic jobs: WCET `c` uniform in [10, 15], relative deadline `c + p` with `p`
//!   uniform in [10, 15] (the "period" as the laxity window), arrival uniform over the frame,
//!   drawn until their WCETs sum to `u_new` of the frame. The planner admits or rejects each.
//! - Each set runs under every policy with the same plan and arrivals, at slot lengths
//!   1/3/10 ms, with actual execution = WCET (the paper) or uniform 50–100 % of WCET.
//!
//! # Power
//! One managed core is simulated per set; the package figure is
//! `uncore + housekeeping core (active at max) + 15 · mean managed-core power` over the sets
//! of a combination, i.e. 15 managed cores each running a set like these (the paper's CPU1–15).
//! Idle governor per policy, as in the paper: BSS and EASS-DVFS never enter a low-power state
//! (`Shallowest` = POLL), EASS-DPM and dpm+dvfs use the deepest state that fits the idle period.
//! The extra baseline `bss+cstates` is BSS with a stock cpuidle governor under a per-slot tick.

use super::power::PlaceholderPower;
use super::{simulate, Arrival, ArrivalKind, ExecModel, SimConfig, SimError};
use crate::energy::estimate::{estimate, EstimateError, EstimateOptions, IdleGovernor, Unlisted};
use crate::energy::model::PowerModel;
use crate::plan::gen::{generate, GenError, GenParams, SplitMix64};
use crate::plan::Plan;
use crate::planner::{Freqs, Policy};
use crate::trace::SlotKind;
use thiserror::Error;

/// Frames a generated schedule may have (slots).
pub const FRAMES: [u64; 6] = [1800, 1920, 2000, 2100, 2160, 2200];
/// Managed cores in the package figure: every CPU of the model but the housekeeping CPU 0
/// (15 on the Xeon: the paper's CPU1–CPU15). All are charged like the simulated core.
pub fn managed_cores(model: &PowerModel) -> u32 {
    model.cpu_count().saturating_sub(1)
}

#[derive(Debug, Error)]
pub enum ExperimentError {
    #[error("generating the task set: {0}")]
    Gen(#[from] GenError),
    #[error("simulating: {0}")]
    Sim(#[from] SimError),
    #[error("energy: {0}")]
    Energy(#[from] EstimateError),
}

/// One task set of the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Case {
    /// Utilization of the scheduled VMs, e.g. 0.2.
    pub u_sched: f64,
    /// Utilization of the new jobs, e.g. 0.1.
    pub u_new: f64,
    /// Index of the set within its combination (0..10), also its seed.
    pub set: u32,
    pub slot_us: u64,
}

/// Actual execution time relative to WCET.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Exec {
    /// Every job runs its WCET (the paper).
    Wcet,
    /// Uniform in [lo, hi] · WCET.
    Range(f64, f64),
}

/// A run's policy: the planner policy and the idle governor the energy is computed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    pub name: &'static str,
    pub policy: Policy,
    pub idle: IdleGovernor,
}

/// The paper's three schedulers, this project's combination, and BSS with C-states.
pub const VARIANTS: [Variant; 5] = [
    Variant {
        name: "bss",
        policy: Policy::Bss,
        idle: IdleGovernor::Shallowest,
    },
    Variant {
        name: "dpm",
        policy: Policy::Dpm,
        idle: IdleGovernor::Deepest,
    },
    Variant {
        name: "dvfs",
        policy: Policy::Dvfs,
        idle: IdleGovernor::Shallowest,
    },
    Variant {
        name: "dpm+dvfs",
        policy: Policy::DpmDvfs,
        idle: IdleGovernor::Deepest,
    },
    Variant {
        name: "bss+cstates",
        policy: Policy::Bss,
        idle: IdleGovernor::DeepestPerSlot,
    },
];

/// Plan and arrivals of a case (independent of policy and slot length, except `slot_us`).
pub fn task_set(case: &Case) -> Result<(Plan, Vec<Arrival>), ExperimentError> {
    let seed = 1000 * (case.u_sched * 100.0).round() as u64
        + 10 * (case.u_new * 100.0).round() as u64
        + u64::from(case.set) * 100_003;
    let frame = FRAMES[(case.set as usize) % FRAMES.len()];
    let tasks = ((case.u_sched * 10.0).round() as usize).max(2);
    let gen = generate(&GenParams {
        tasks,
        util: case.u_sched,
        cpus: 1,
        wcet: (1, 15),
        period: (15, 50),
        seed,
        slot_us: case.slot_us,
        frame_slots: Some(frame),
        cmd: vec!["true".into()],
    })?;
    let frame = gen.plan.frame_slots;
    let mut rng = SplitMix64::new(seed ^ 0x005e_ed0f_a9e1);
    let budget = (case.u_new * frame as f64).round() as u64;
    let mut arrivals = Vec::new();
    let mut sum = 0;
    while sum < budget {
        let wcet = 10 + rng.below(6);
        let deadline = wcet + 10 + rng.below(6);
        let at_slot = rng.below(frame.saturating_sub(deadline).max(1));
        arrivals.push(Arrival {
            at_slot,
            name: format!("new{}", arrivals.len()),
            kind: ArrivalKind::Aperiodic,
            wcet,
            deadline: Some(deadline),
            period: None,
            cpu: None,
        });
        sum += wcet;
    }
    arrivals.sort_by_key(|a| a.at_slot);
    Ok((gen.plan, arrivals))
}

/// What one (case, variant, exec) run gives.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// Mean power of the managed core, W.
    pub core_w: f64,
    /// The package figure (see the module doc), W.
    pub package_w: f64,
    pub guaranteed_misses: u64,
    /// New jobs accepted / offered.
    pub accepted: usize,
    pub offered: usize,
    /// Busy slots / all slots on the managed core.
    pub busy: f64,
    /// Time-weighted mean frequency of the managed core, MHz.
    pub mean_mhz: f64,
    /// Energy of the managed core over the run, J.
    pub core_j: f64,
    /// Work the managed core did, in seconds at full speed: Σ over its job slots (tt and
    /// accepted aperiodic) of the time the job ran × the slot's normalised frequency.
    pub work_s: f64,
}

/// Run one case under one variant.
pub fn run(
    model: &PowerModel,
    plan: &Plan,
    arrivals: &[Arrival],
    variant: Variant,
    exec: Exec,
    seed: u64,
) -> Result<RunResult, ExperimentError> {
    let cluster = &model.clusters[0];
    let ghz: Vec<f64> = cluster
        .pstates
        .iter()
        .map(|p| f64::from(p.mhz) / f64::from(cluster.max_mhz()))
        .collect();
    let freqs = Freqs::new(&ghz).unwrap_or_else(|_| Freqs::xeon_default());
    let cfg = SimConfig {
        policy: variant.policy,
        freqs,
        frames: 1,
        exec: match exec {
            Exec::Wcet => ExecModel::Factor(1.0),
            Exec::Range(lo, hi) => ExecModel::Range { lo, hi, seed },
        },
        keep_records: true,
    };
    let out = simulate(
        plan,
        arrivals,
        &cfg,
        &PlaceholderPower::default(),
        &mut |_| {},
    )?;
    let e = estimate(
        model,
        &out.records,
        EstimateOptions {
            slot_us: plan.slot_us,
            idle: variant.idle,
            unlisted: Unlisted::Excluded,
        },
    )?;
    let core_w = e.mean_cpu_w();
    let hk_w = cluster.active_w(1.0);
    let package_w = model.uncore_w + hk_w + f64::from(managed_cores(model)) * core_w;
    let offered = arrivals.len();
    let accepted = out.report.admissions.iter().filter(|a| a.accepted).count();
    let busy = e.cpus.iter().map(|c| c.busy_s).sum::<f64>() / e.duration_s.max(f64::MIN_POSITIVE);
    let mean_mhz = e.cpus.first().map_or(0.0, |c| c.residency.mean_mhz());
    let slot_ns = plan.slot_us * 1000;
    let work_s = out
        .records
        .iter()
        .filter(|r| matches!(r.kind, SlotKind::Tt | SlotKind::Aperiodic))
        .map(|r| r.freq * r.ran_ns.unwrap_or(slot_ns).min(slot_ns) as f64 * 1e-9)
        .sum();
    Ok(RunResult {
        core_w,
        package_w,
        guaranteed_misses: out.report.guaranteed_misses,
        accepted,
        offered,
        busy,
        mean_mhz,
        core_j: core_w * e.duration_s,
        work_s,
    })
}

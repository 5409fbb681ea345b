//! Slot-shifting planner: pure algorithms, no clock, no file, no BPF.
//!
//! - [`offline`]: the EDF table and capacity intervals of one CPU's frame.
//! - [`cpu`]: the online state of one CPU (spare capacities, jobs, acceptance, guarantee).
//! - [`policy`]: per-slot decisions under `bss`, `dpm`, `dvfs`, `dpm+dvfs`.
//! - [`runtime`]: [`Planner`], all managed CPUs: `step(slot, observations) -> decisions`,
//!   admission with multicore negotiation.
//! - [`kernel_path`]: the kernel path's adapter: decisions `lead` slots ahead of the BPF slot
//!   clock as table and cpuperf entry writes, late slots, admissions on a task's own CPU.
//!
//! Inputs are plain values (`CpuInput`, slots, observations); nothing here reads a plan file,
//! a clock or a BPF map (the simulation driver is `crate::sim`, the kernel edge `src/cli/run`).

pub mod cpu;
mod due;
#[cfg(test)]
mod equivalence_tests;
pub mod interface;
pub mod kernel_path;
pub mod late_writes;
pub mod offline;
pub mod policy;
pub mod replay;
pub mod runtime;

pub use cpu::{JobEvent, JobKind, UNIT};
pub use policy::{Decision, Freqs, Policy, Run};
pub use runtime::{
    Admission, Observation, ObserveError, Placement, Planner, PlannerConfig, StepError,
};

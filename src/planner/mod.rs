//! Slot-shifting planner: pure algorithms, no clock, no file, no BPF.
//!
//! - [`offline`]: the EDF table and capacity intervals of one CPU's frame.
//! - [`cpu`]: the online state of one CPU (spare capacities, jobs, acceptance, guarantee).
//! - [`policy`]: per-slot decisions under `bss`, `dpm`, `dvfs`, `dpm+dvfs`.
//! - [`runtime`]: [`Planner`], all managed CPUs: `step(slot, observations) -> decisions`,
//!   admission with multicore negotiation.
//! - [`sim`]: a virtual slot clock driving the planner over a plan and arrivals (`simulate`).
//! - [`power`]: the placeholder power model used by `simulate`.

pub mod cpu;
pub mod offline;
pub mod policy;
pub mod power;
pub mod runtime;
pub mod sim;

pub use cpu::{JobEvent, JobKind, UNIT};
pub use policy::{Decision, Freqs, Policy, Run};
pub use runtime::{Admission, Observation, Planner, PlannerConfig, StepError};

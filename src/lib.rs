//! scx_tt: time-triggered, table-driven real-time scheduling for Linux/KVM nodes as a sched_ext
//! scheduler, with slot shifting for run-time admission and energy-aware policies.
//!
//! # Layout (where each concept lives)
//! Two crates (issue 33):
//! - `tt-core` (`crates/tt-core`): the pure core. Plan, planner, the run driver, simulation,
//!   the analysers (adaptive reservations, the interface search), DEmOS's semantics, the energy
//!   model and decisions, the control state machine, accounting. Its dependencies cannot do I/O;
//!   `tests/core_purity.rs` checks its dependencies and sources. Its modules are re-exported here at the same
//!   paths (`scx_tt::plan`, `scx_tt::planner`, …), so a reader looks up a concept once.
//! - this crate, `scx_tt`: the edge — everything that touches the OS — and the binary.
//!   Where a concept has an OS side, the module here re-exports the core module and adds it:
//!   - [`plan`]: + reading plan files, the online CPUs;
//!   - [`planner`]: + [`planner::shared`], the planner shared by the planner and control threads;
//!   - [`energy`]: + the sysfs backends (cpufreq, pm_qos, RAPL, the restore journal);
//!   - [`control`]: + the unix socket and the journal's file;
//!   - [`demos`]: + configuration files, `cpu: all`, the cpufreq driver, `-m`/`-M`/`-p` output;
//!   - [`clock`]: + CLOCK_MONOTONIC, absolute sleeps;
//!   - [`abi`]: + the bindgen struct layouts, checked against the core's constants.
//!
//!   And the edge only: [`sched`] (plan → BPF configuration, system checks, the BPF loader,
//!   the PREEMPT_RT slot clock, spawned tasks, affinity), [`resolve`] (task selectors → thread
//!   ids from /proc), [`metrics`] (scx_stats), [`report`] (the HTML page), [`export`] (Perfetto).
//!
//! Outside the library: `src/bpf/` the sched_ext scheduler (its header comment is the design
//! document of the slot tick protocol), `src/cli/` the binary's subcommands (`cli/run/` the run
//! daemon), `bench/` the benchmarks, `tests/` (with `tests/common/`, the shared helpers, and
//! `tests/vm/`, the QEMU harness).

pub use tt_core::{accounting, adaptive, drive, sim, trace};

pub mod abi;
#[cfg(feature = "bpf")]
mod bpf_intf;
#[cfg(feature = "bpf")]
mod bpf_skel;
pub mod clock;
pub mod control;
pub mod demos;
pub mod energy;
pub mod export;
pub mod metrics;
pub mod node_api;
pub mod plan;
pub mod planner;
pub mod report;
pub mod resolve;
pub mod sched;

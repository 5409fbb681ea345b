//! Enforcement on a sched_ext kernel: the plan → BPF configuration (pure, [`config`]), the
//! system checks and the loader of src/bpf/tt_sched.bpf.c (feature `bpf`).

pub mod affinity;
pub mod config;
#[cfg(feature = "bpf")]
pub mod loader;
#[cfg(feature = "bpf")]
pub mod spawn;
pub mod system;

pub use config::SchedConfig;

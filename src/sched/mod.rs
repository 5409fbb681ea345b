//! Enforcement on a sched_ext kernel: the plan → BPF configuration (pure, [`config`]), the
//! guard band's choice ([`guard`], pure) and its start-up calibration ([`calibrate`]), what the
//! running kernel offers each feature ([`kernel`], pure), the settle rule of spawned tasks
//! ([`settle`], pure), the reader of the per-slot observation ring ([`obs`]: its seqlock decoding
//! is pure), the system checks and the loader of src/bpf/tt_sched.bpf.c and the spawned tasks
//! (feature `bpf`).

pub mod affinity;
pub mod calibrate;
pub mod config;
pub mod guard;
pub mod kernel;
#[cfg(feature = "bpf")]
pub mod loader;
pub mod obs;
#[cfg(feature = "bpf")]
pub mod rt_clock;
pub mod settle;
#[cfg(feature = "bpf")]
pub mod spawn;
pub mod system;
pub mod wake;

pub use config::SchedConfig;

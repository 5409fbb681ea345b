//! scx_tt: time-triggered, table-driven real-time scheduling for Linux/KVM nodes as a sched_ext
//! scheduler, with slot shifting for run-time admission and energy-aware policies.
//!
//! Pure logic lives in [`plan`] (plan format and validation), [`planner`] (offline table,
//! intervals, online slot shifting) and [`energy`] (power model); OS effects live at the edge.

pub mod abi;
pub mod accounting;
#[cfg(feature = "bpf")]
mod bpf_intf;
#[cfg(feature = "bpf")]
mod bpf_skel;
pub mod clock;
pub mod control;
pub mod energy;
pub mod plan;
pub mod planner;
pub mod resolve;
pub mod sched;
pub mod sim;
pub mod trace;

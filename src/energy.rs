//! Energy: the power model, estimates and frequency/idle decisions are pure
//! (`tt_core::energy`, re-exported here); the OS backends live here: the redirectable sysfs
//! root and restore journal ([`sysfs`], [`journal_file`]), cpufreq ([`cpufreq`]), pm_qos
//! ([`idle`]), powercap RAPL ([`meter`]) and the model file ([`model`]). Each module here
//! re-exports its pure half from the core, so `scx_tt::energy::cpufreq` is the one place to look.
//! Every backend is rooted at a configurable directory (`/` normally, a fake tree in tests) and
//! restores what it changed (see [`sysfs::Journal`]).

pub use tt_core::energy::*;

pub mod cpufreq;
pub mod idle;
pub mod journal_file;
pub mod meter;
pub mod model;
pub mod sysfs;

//! Energy, the pure half: the power model, energy estimates and residency, the cpuperf
//! conversion, and the frequency and idle decisions behind the backend traits
//! ([`cpufreq::CpufreqBackend`], [`idle::IdleBackend`]). The backends that touch sysfs (cpufreq,
//! pm_qos, powercap RAPL, the restore journal) are the edge's: `scx_tt::energy`.
//!
//! - [`model`]: the power model (P-states, idle states, uncore power), parsed from JSON text.
//! - [`estimate`]: energy of a per-slot trace under a model, per CPU and per package.
//! - [`residency`]: frequency residency for stats and summaries.
//! - [`perf`]: normalised frequency → `scx_bpf_cpuperf_set()` target.
//! - [`cpufreq`]: policies, frequencies, raise-before / lower-after per slot ([`cpufreq::FreqController`]).
//! - [`idle`]: cpuidle states and the pm_qos limit an idle period gets.
//! - [`meter`]: estimated energy and the measured/estimated labels.
//! - [`sysfs_error`]: the error a backend reports, as a value.

pub mod cpufreq;
pub mod estimate;
pub mod idle;
pub mod meter;
pub mod model;
pub mod perf;
pub mod residency;
pub mod sysfs_error;

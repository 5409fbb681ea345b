//! Energy: power model, energy estimates, and the OS backends that set frequencies and idle
//! limits and read energy.
//!
//! - [`model`]: the power model (P-states, idle states, uncore power), loaded from `models/*.json`.
//! - [`estimate`]: energy of a per-slot trace under a model, per CPU and per package.
//! - [`residency`]: frequency residency for stats and summaries.
//! - [`perf`]: normalised frequency → `scx_bpf_cpuperf_set()` target.
//! - [`sysfs`]: the redirectable root and the restore journal every backend writes through.
//! - [`cpufreq`]: cpufreq policies, the `userspace` governor, raise-before / lower-after.
//! - [`idle`]: per-CPU `pm_qos_resume_latency_us` limits for DPM.
//! - [`meter`]: measured (powercap RAPL) or estimated energy, labelled.
//!
//! Pure parts (model, estimate, residency, perf, the frequency decisions of cpufreq) take values
//! and return values. Every OS effect goes through a trait with a real backend rooted at a
//! configurable directory (`/` normally, a temporary fake tree in tests) and a fake that records
//! calls; everything changed is restored on exit (see [`sysfs::Journal`]).

pub mod cpufreq;
pub mod estimate;
pub mod idle;
pub mod journal_file;
pub mod meter;
pub mod model;
pub mod perf;
pub mod residency;
pub mod sysfs;

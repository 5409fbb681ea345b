//! DEmOS configurations on scx_tt (issue 18, seed 002; docs/demos.md).
//!
//! DEmOS (CTU-IIG/demos-sched) is a userspace static scheduler: a major frame of windows; in
//! each window, slices bind a safety-critical (SC) and an optional best-effort (BE) partition to
//! a CPU set; the processes of a partition run one after another, each until its budget runs
//! out or it signals completion; BE runs after all the SC work of the window and keeps its
//! unused budget across windows.
//!
//! - [`config`]: both YAML forms (canonical and simplified) → one normalised [`Config`], with
//!   DEmOS's validation and an error naming the YAML path of every problem.
//! - [`sim`]: DEmOS's semantics on a millisecond clock, writing DEmOS's schedule log
//!   (`scx_tt simulate --demos`); reproduces DEmOS's own golden schedules
//!   (tests/demos_golden.rs).
//! - [`import`]: a configuration → a scx_tt plan (`scx_tt plan import --demos`).
//! - [`power`]: DEmOS's power policies (`-p`): the pure engine and the cpufreq driver.
//! - [`follow`]: the DEmOS events of a kernel run of an imported plan (the slot grid and the
//!   enforced table), the check that the plan is the configuration's import, `-m`/`-M` lines.
//! - [`sequencer`]: the same semantics stepped slot by slot from observed completions, for the
//!   kernel path in planner mode (`--planner ... --demos`).
//! - [`cpuset`], [`rng`]: DEmOS's CPU lists and its jitter generator.

pub mod config;
pub mod cpuset;
pub mod follow;
pub mod import;
pub mod power;
pub mod rng;
pub mod seq_driver;
pub mod sequencer;
pub mod sim;
pub mod trace_log;

pub use config::{Config, ConfigError, Source};
pub use cpuset::CpuSet;
pub use import::{import, ImportOptions, Imported};
pub use sim::{
    render_log, simulate, simulate_events, LogLine, ProcessModel, SimOptions, SimResult,
};

/// A `--...-cpus` flag's value: `all` is not allowed here, a CPU list is.
pub fn parse_cpus_flag(text: &str) -> Result<CpuSet, String> {
    let s = CpuSet::parse(text.trim())?;
    if s.is_empty() {
        return Err(format!(
            "{text:?} selects no CPU below {}",
            cpuset::MAX_CPUS
        ));
    }
    Ok(s)
}

/// `cpu: all` for `plan import`: `all` (the machine's CPUs) without CPU 0, which stays the
/// housekeeping CPU (a one-CPU machine keeps CPU 0).
pub fn all_but_cpu0(all: CpuSet) -> CpuSet {
    let without0 = CpuSet(all.0 & !1);
    if without0.is_empty() {
        all
    } else {
        without0
    }
}

//! scx_tt: time-triggered, table-driven real-time scheduling for Linux/KVM nodes as a sched_ext
//! scheduler, with slot shifting for run-time admission and energy-aware policies.
//!
//! # Layout (what each module owns)
//! Pure logic first (values in, values out, tested without root), then the edge.
//! - [`plan`]: the plan format: parsing, validation at the boundary (BPF limits included),
//!   `plan explain`, `plan gen`.
//! - [`planner`]: the algorithms: offline EDF table and capacity intervals, online slot
//!   shifting (acceptance, guarantee, placement), the per-slot policies, and the kernel-path
//!   adapter (decisions → table and cpuperf entries, lead, late slots). No plan, clock or BPF.
//! - [`sim`]: a virtual slot clock driving the planner over a plan and arrivals (`simulate`),
//!   its per-slot power charge and the energy experiment.
//! - [`energy`]: power model, energy estimates and residency, the cpuperf conversion, and the
//!   cpufreq / pm_qos / powercap backends behind traits with redirectable roots.
//! - [`control`]: the control protocol: requests, replies, the switch and admission state
//!   machine, and the [`control::Engine`] interface the run edge implements.
//! - [`accounting`]: per-slot records → per task and CPU figures, summaries, text and JSON.
//! - [`trace`]: the per-slot trace record shared by `simulate` and the kernel path.
//! - [`report`]: a trace (with its summary and plan) as one self-contained HTML page (`report`).
//! - [`export`]: a run's files in other tools' formats (Perfetto).
//! - [`abi`]: the BPF ↔ Rust ABI (`src/bpf/intf.h`): constants and structs, checked both ways.
//! - [`clock`]: the slot clock (the slot at a time, the start of a slot) and CLOCK_MONOTONIC.
//! - [`resolve`]: task selectors (pid, tids, comm, cgroup, QEMU) → thread ids from /proc.
//! - [`sched`]: the kernel edge: plan → BPF configuration, system checks, the BPF loader,
//!   spawned tasks, CPU affinity.
//!
//! Outside the library: `src/bpf/` the sched_ext scheduler (its header comment is the design
//! document of the slot tick protocol), `src/cli/` the binary's subcommands (`cli/run/` the run
//! daemon), `bench/` the benchmarks, `tests/` (with `tests/vm/`, the QEMU harness).

pub mod abi;
pub mod accounting;
pub mod adaptive;
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
pub mod plan;
pub mod planner;
pub mod report;
pub mod resolve;
pub mod sched;
pub mod sim;
pub mod trace;

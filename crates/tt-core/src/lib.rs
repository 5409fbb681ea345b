//! tt-core: the pure core of scx_tt. Values in, values out: no file, clock, thread, lock or BPF
//! (the crate's dependencies cannot do I/O; `tests/core_purity.rs` checks the dependency closure and the sources).
//! Time and the OS come in as values or through the traits defined here, implemented by the edge
//! (the `scx_tt` package: the BPF loader, sysfs backends, the control socket, the stats server,
//! the planner thread).
//!
//! # Layout (where each concept lives)
//! - [`plan`]: the plan format: parsing from text or bytes, validation at the boundary (BPF limits
//!   included), `plan explain`, `plan gen`.
//! - [`planner`]: the algorithms: offline EDF table and capacity intervals, online slot shifting
//!   (acceptance, guarantee, placement), the per-slot policies, the kernel-path adapter
//!   (decisions → table and cpuperf entries, lead, late slots), the interface search, replay.
//! - [`drive`]: the one slot loop (a decider and a backend) that `simulate`, replay and the kernel
//!   run all go through.
//! - [`sim`]: `simulate`'s virtual clock backend, its per-slot power charge, the experiments, the
//!   server designs.
//! - [`adaptive`]: adaptive reservations (the period analyser, the controller, the supervisor).
//! - [`demos`]: DEmOS configurations, import, the sequencer and its reference simulation.
//! - [`energy`]: the power model, estimates, residency, the cpuperf conversion, and the
//!   frequency/idle decisions behind the `CpufreqBackend` / `IdleBackend` traits.
//! - [`control`]: the control protocol and the switch/admission state machine behind
//!   [`control::Engine`], the trait the run edge implements.
//! - [`accounting`]: per-slot records → per task and CPU figures, summaries, text and JSON.
//! - [`trace`]: the per-slot trace record shared by `simulate` and the kernel path.
//! - [`abi`]: the BPF ↔ Rust constants and entry encoding (the struct layouts are the edge's).
//! - [`clock`]: the slot grid ([`clock::SlotClock`]): the slot at a time, the start of a slot.

pub mod abi;
pub mod accounting;
pub mod adaptive;
pub mod clock;
pub mod control;
pub mod demos;
pub mod drive;
pub mod energy;
pub mod plan;
pub mod planner;
pub mod sim;
pub mod trace;

//! Rust side of the VM harness, shared by the VM tests (`tests/vm.rs`, one module per
//! `tests/vm/scenarios/NAME/check.rs`) and the lateness benchmark (`bench/lateness.rs`): boots a
//! guest scenario through `tests/vm/run.sh`, reads what the guest sent back, including scx_tt's
//! summary JSON (docs/run-output.md), and runs the skeleton every VM test shares
//! (`Vm::check`: boot, check, measure again when only timing bounds failed). Every test thread
//! that boots a guest leaves one row in target/vm/summary.tsv when it ends ([`ledger`]).
//!
//! The kernel and the initramfs must exist (`make vm-initrd`); the VM tests are `#[ignore]`d so
//! a plain `cargo test` stays fast, and `make test-vm` runs them.
#![allow(dead_code)]

use scx_tt::trace::SlotRecord;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub type Result<T> = std::result::Result<T, String>;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

mod checks;
mod summary;
#[cfg(test)]
mod tests;
mod vm;

pub use checks::*;
pub use summary::*;
pub use vm::*;

/// The per-test ledger: what each VM test cost, one row per test in target/vm/summary.tsv
/// (docs/vm-harness.md, "The summary table"), which `make test-vm` prints at the end with
/// scripts/vm-summary.sh. A test's log says everything, but thirty logs of minutes each do not
/// show at a glance which test needed four boots or three measurements.
///
/// libtest runs every test in a thread of its own named after the test
/// (`adaptive::an_adaptive_task...`) and joins that thread before it starts the next test under
/// `--test-threads=1` (and before it exits in any case). So the ledger is a thread-local that
/// the harness fills as the test goes ([`note`]: boots from `Vm::run_status`, measurements from
/// `measure_until_settled`) and whose destructor, run when the test's thread exits, appends the
/// row. libtest catches the test's panic before the thread exits, so the destructor cannot see
/// it; a panic hook, installed once, marks the panicking thread's ledger failed instead. A
/// thread that booted no guest (the harness's own unit tests) writes no row, and neither does a
/// thread named `main` (the benchmarks that share this file run there, outside libtest).
pub mod ledger;

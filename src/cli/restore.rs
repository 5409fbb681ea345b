//! `scx_tt restore`: put back what a run that did not exit cleanly (SIGKILL, a crash) left
//! changed on the machine, from the restore journal under `--run-dir` (docs/energy.md, "Crash
//! safety"). A clean exit restores by itself; the next `scx_tt` start also does this first.
//!
//! Exit codes: 0 nothing left changed (restored now, or nothing to do), 1 a journal could not
//! be read, belongs to a running scx_tt, or a value could not be written back (kept in the
//! journal for another try).

use anyhow::{Context, Result};
use clap::Args;
use scx_tt::energy::journal_file::{self, DEFAULT_RUN_DIR};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The run directory the journal is in (as given to the run's `--run-dir`).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_RUN_DIR)]
    pub run_dir: PathBuf,
}

pub fn run(args: RestoreArgs) -> Result<i32> {
    let recovered = journal_file::recover(&args.run_dir).context("scx_tt restore")?;
    if recovered.is_empty() {
        println!(
            "nothing to restore: no journal under {}",
            args.run_dir.display()
        );
        return Ok(0);
    }
    let mut failed = 0;
    for r in &recovered {
        println!("{}", r.describe());
        failed += r.failures.len();
    }
    if failed > 0 {
        eprintln!(
            "scx_tt: error: {failed} value(s) could not be restored; they stay in the journal"
        );
        return Ok(1);
    }
    Ok(0)
}

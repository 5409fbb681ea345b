//! `scx_tt plan check|explain|gen`.

use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum PlanCmd {
    /// Validate plan files; print a summary or the errors (exit 2 when invalid).
    Check { files: Vec<PathBuf> },
}

pub fn run(cmd: PlanCmd) -> anyhow::Result<i32> {
    match cmd {
        PlanCmd::Check { files } => anyhow::bail!("plan check of {files:?}: not implemented yet"),
    }
}

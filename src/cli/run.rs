//! `scx_tt --table plan.json`: load the plan and enforce it with the BPF scheduler.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Plan file to enforce (JSON, docs/plan-format.md).
    #[arg(long)]
    pub table: Option<PathBuf>,
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    match args.table {
        Some(t) => anyhow::bail!("enforcing {}: not implemented yet", t.display()),
        None => anyhow::bail!("nothing to do: give --table plan.json or a subcommand (see --help)"),
    }
}

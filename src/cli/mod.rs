//! Subcommand handlers. Each returns the process exit code.

pub mod ctl;
pub mod plan;
pub mod run;
pub mod simulate;

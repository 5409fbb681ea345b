//! Subcommand handlers. Each returns the process exit code.

pub mod args;
pub mod ctl;
pub mod plan;
pub mod report;
pub mod restore;
pub mod run;
pub mod simulate;
pub mod trace;

//! The error of a sysfs read or write, as a value (the reads and writes themselves are the
//! edge's: `scx_tt::energy::sysfs`). The core's backend traits report it.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SysfsError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing {value:?} to {path}: {source}")]
    Write {
        path: PathBuf,
        value: String,
        source: std::io::Error,
    },
    #[error("{path}: cannot parse {text:?} as {what}")]
    Parse {
        path: PathBuf,
        text: String,
        what: &'static str,
    },
    #[error("restore journal {path}: {msg}")]
    Journal { path: PathBuf, msg: String },
}

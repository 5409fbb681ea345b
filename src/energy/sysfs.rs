//! The redirectable sysfs root and the restore journal.
//!
//! Every backend reads and writes through a [`Root`]: `/` on a real machine, a temporary
//! directory laid out like the kernel's `/sys` in tests (`--sysfs-root`). Every value scx_tt
//! changes goes through a [`Journal`], which saves the file's original contents before the first
//! write and writes them back, newest first, when it is restored or dropped.
//!
//! # Properties
//! 1. (Exact restore) After `restore()` every journaled file holds the text it held before the
//!    first journaled write to it.
//! 2. (Reverse order) Files are restored newest first, so a write that depends on an earlier one
//!    (a governor after the driver mode it needs) is undone before the earlier one.
//! 3. (Idempotent) `restore()` twice, or `restore()` then drop, restores once.
//! 4. (No panic) A failed restore is logged to stderr and returned, never unwrapped; the other
//!    files are still restored.
//!
//! Exit paths: normal return and `?` errors drop the journal; a panic drops it while unwinding;
//! SIGINT/SIGTERM must be turned into a normal return by the caller (the `ctrlc` crate's handler
//! sets a flag the run loop polls, see `examples/energy_guard.rs`). SIGKILL cannot be handled.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
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
}

/// The directory that stands for `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
}

impl Default for Root {
    fn default() -> Self {
        Self::new("/")
    }
}

impl Root {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The real path of an absolute kernel path such as `/sys/devices/system/cpu`.
    pub fn path(&self, abs: impl AsRef<Path>) -> PathBuf {
        let abs = abs.as_ref();
        self.dir.join(abs.strip_prefix("/").unwrap_or(abs))
    }

    pub fn exists(&self, abs: impl AsRef<Path>) -> bool {
        self.path(abs).exists()
    }

    /// Contents of a file with surrounding whitespace trimmed.
    pub fn read(&self, abs: impl AsRef<Path>) -> Result<String, SysfsError> {
        let path = self.path(abs);
        std::fs::read_to_string(&path)
            .map(|s| s.trim().to_string())
            .map_err(|source| SysfsError::Read { path, source })
    }

    /// A file parsed as an unsigned integer.
    pub fn read_u64(&self, abs: impl AsRef<Path>) -> Result<u64, SysfsError> {
        let text = self.read(&abs)?;
        text.parse().map_err(|_| SysfsError::Parse {
            path: self.path(abs),
            text,
            what: "an unsigned integer",
        })
    }

    /// Write `value` to an existing file (never creates one: sysfs attributes exist or not).
    pub fn write(&self, abs: impl AsRef<Path>, value: &str) -> Result<(), SysfsError> {
        let path = self.path(abs);
        let res = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .and_then(|mut f| f.write_all(value.as_bytes()));
        res.map_err(|source| SysfsError::Write {
            path,
            value: value.to_string(),
            source,
        })
    }
}

/// A file the journal failed to restore.
#[derive(Debug)]
pub struct RestoreFailure {
    pub path: PathBuf,
    pub original: String,
    pub error: SysfsError,
}

/// Saves original contents before the first write to each file and restores them.
#[derive(Debug)]
pub struct Journal {
    root: Root,
    /// (absolute kernel path, original text), in order of first write.
    saved: Vec<(PathBuf, String)>,
}

impl Journal {
    pub fn new(root: Root) -> Self {
        Self {
            root,
            saved: Vec::new(),
        }
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Files currently saved for restore, in order of first write.
    pub fn saved(&self) -> &[(PathBuf, String)] {
        &self.saved
    }

    /// Write `value` to `abs`, saving its original contents first if this is the first write.
    pub fn write(&mut self, abs: impl AsRef<Path>, value: &str) -> Result<(), SysfsError> {
        let abs = abs.as_ref();
        if !self.saved.iter().any(|(p, _)| p == abs) {
            let original = self.root.read(abs)?;
            self.saved.push((abs.to_path_buf(), original));
        }
        self.root.write(abs, value)
    }

    /// Write without saving: for values that only mean something while an earlier journaled
    /// write holds (`scaling_setspeed` under the `userspace` governor).
    pub fn write_volatile(&self, abs: impl AsRef<Path>, value: &str) -> Result<(), SysfsError> {
        self.root.write(abs, value)
    }

    /// Restore every saved file, newest first. Failures are logged and returned; the journal is
    /// empty afterwards, so a second call does nothing.
    pub fn restore(&mut self) -> Vec<RestoreFailure> {
        let mut failures = Vec::new();
        while let Some((abs, original)) = self.saved.pop() {
            if let Err(error) = self.root.write(&abs, &original) {
                eprintln!(
                    "scx_tt: could not restore {} to {original:?}: {error}",
                    abs.display()
                );
                failures.push(RestoreFailure {
                    path: abs,
                    original,
                    error,
                });
            }
        }
        failures
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.restore();
    }
}

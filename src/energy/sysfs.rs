//! The redirectable sysfs root and the restore journal.
//!
//! Every backend reads and writes through a [`Root`]: `/` on a real machine, a temporary
//! directory laid out like the kernel's `/sys` in tests (`--sysfs-root`). Every value scx_tt
//! changes goes through a [`Journal`], which saves the file's original contents (its exact
//! bytes) before the first write and writes them back, newest first, when it is restored or
//! dropped. A persistent journal ([`Journal::persistent`]) also keeps the saved originals in a
//! file under the run directory (`/run/scx_tt`), written atomically *before* each first change,
//! so that what a killed run left changed can be put back by the next start or by
//! `scx_tt restore` ([`super::journal_file::recover`]).
//!
//! # Properties
//! 1. (Exact restore) After `restore()` every journaled file holds the bytes it held before the
//!    first journaled write to it (sysfs attributes that refuse the trailing newline they show
//!    get the trimmed text; a `scaling_setspeed` that showed `<unsupported>`, i.e. another
//!    governor than `userspace`, cannot be written back and needs not be: the kernel shows it
//!    again once the governor is restored).
//! 2. (Reverse order) Files are restored newest first, so a write that depends on an earlier one
//!    (a governor after the driver mode it needs) is undone before the earlier one.
//! 3. (Idempotent) `restore()` twice, or `restore()` then drop, restores once.
//! 4. (No panic) A failed restore is logged to stderr and returned, never unwrapped; the other
//!    files are still restored (a persistent journal keeps the failed ones on disk).
//! 5. (Journal first) A persistent journal's file holds a file's original before that file is
//!    first changed; a change whose journal entry could not be written is not made.
//!
//! Exit paths: normal return and `?` errors drop the journal; a panic drops it while unwinding;
//! SIGINT/SIGTERM must be turned into a normal return by the caller (the `ctrlc` crate's handler
//! sets a flag the run loop polls). SIGKILL cannot be handled: the persistent journal's file is
//! what the next start or `scx_tt restore` restores from.

use super::journal_file::JournalFile;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use tt_core::energy::sysfs_error::SysfsError;

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

    /// Contents of a file exactly as read (for the journal).
    pub fn read_raw(&self, abs: impl AsRef<Path>) -> Result<String, SysfsError> {
        let path = self.path(abs);
        std::fs::read_to_string(&path).map_err(|source| SysfsError::Read { path, source })
    }

    /// Writes back `original` (as [`Self::read_raw`] returned it): the exact text first; a file
    /// that refuses it gets it without surrounding whitespace; a refused `<unsupported>` is
    /// success (module doc, property 1).
    pub fn write_original(&self, abs: impl AsRef<Path>, original: &str) -> Result<(), SysfsError> {
        let abs = abs.as_ref();
        let first = self.write(abs, original);
        let trimmed = original.trim();
        if first.is_ok() || trimmed == original {
            return first.or_else(|e| unsupported_ok(trimmed, e));
        }
        self.write(abs, trimmed)
            .or_else(|e| unsupported_ok(trimmed, e))
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

/// What `scaling_setspeed` shows under another governor than `userspace`.
pub const UNSUPPORTED: &str = "<unsupported>";

fn unsupported_ok(trimmed: &str, e: SysfsError) -> Result<(), SysfsError> {
    if trimmed == UNSUPPORTED {
        Ok(())
    } else {
        Err(e)
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
    /// The journal's file, for a persistent journal.
    file: Option<JournalFile>,
}

impl Journal {
    /// A journal in memory only (restored on every exit path but SIGKILL).
    pub fn new(root: Root) -> Self {
        Self {
            root,
            saved: Vec::new(),
            file: None,
        }
    }

    /// A journal also kept in `run_dir/NAME.journal.json` (see the module doc). Fails when that
    /// file exists: a killed run's changes must be restored first
    /// ([`super::journal_file::recover`]).
    pub fn persistent(root: Root, run_dir: &Path, name: &str) -> Result<Self, SysfsError> {
        let file = JournalFile::create(run_dir, name, &root)?;
        Ok(Self {
            root,
            saved: Vec::new(),
            file: Some(file),
        })
    }

    /// The journal's file, when persistent.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_ref().map(JournalFile::path)
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
            let original = self.root.read_raw(abs)?;
            self.record(abs, original)?;
        }
        self.root.write(abs, value)
    }

    /// Saves `original` as what `abs` held before the run, without writing: for a value read
    /// before a change that alters it (`scaling_setspeed` before the governor), restored in
    /// this place of the order. Does nothing when `abs` is saved already.
    pub fn record(&mut self, abs: impl AsRef<Path>, original: String) -> Result<(), SysfsError> {
        let abs = abs.as_ref();
        if self.saved.iter().any(|(p, _)| p == abs) {
            return Ok(());
        }
        self.saved.push((abs.to_path_buf(), original));
        if let Some(f) = &self.file {
            if let Err(e) = f.store(&self.saved) {
                self.saved.pop();
                return Err(e);
            }
        }
        Ok(())
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
            if let Err(error) = self.root.write_original(&abs, &original) {
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
        if let Some(f) = &self.file {
            // keep what failed on disk, oldest first, for `scx_tt restore`
            let left: Vec<(PathBuf, String)> = failures
                .iter()
                .rev()
                .map(|f| (f.path.clone(), f.original.clone()))
                .collect();
            let res = if left.is_empty() {
                f.remove()
            } else {
                f.store(&left)
            };
            if let Err(e) = res {
                eprintln!("scx_tt: warning: {e}");
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

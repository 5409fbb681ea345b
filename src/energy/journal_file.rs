//! The restore journal on disk: what a run changed on the machine, so that a run killed by
//! SIGKILL (or a power cut of the process: OOM killer, a crash in a library) leaves nothing
//! changed for good. The next `scx_tt` start and `scx_tt restore` call [`recover`].
//!
//! # Format
//! `RUN_DIR/NAME.journal.json` (`RUN_DIR` is `--run-dir`, `/run/scx_tt` by default: a tmpfs,
//! so a reboot, which resets sysfs anyway, also forgets the journal):
//! ```json
//! {"format": "scx_tt journal v1", "pid": 1234, "root": "/",
//!  "entries": [{"path": "/sys/devices/system/cpu/cpufreq/policy1/scaling_governor",
//!               "original": "schedutil\n"}]}
//! ```
//! `entries` in the order the files were first changed; `original` is the file's exact text
//! before; `root` the `--sysfs-root` the paths are under.
//!
//! # Protocol
//! ```text
//! first change of file F:   entries += (F, original); store (write tmp, fsync, rename, fsync dir)
//!                           then write F                     (a failed store: F is not written)
//! restore (every exit):     write back newest first; all restored: remove the file,
//!                           else store the failed entries
//! recover(run_dir):         for each *.journal.json: held by a live scx_tt (its pid, comm
//!                           "scx_tt", not us)? refuse; else restore its entries newest first,
//!                           report each value put back, remove the file (or keep the failures)
//! ```
//! A crash between "store" and "write F" leaves an entry whose file is unchanged: recovering it
//! writes the same text back (reported as unchanged). A crash during "store" leaves the old file
//! (the rename is atomic) and a stray temporary, which [`recover`] removes.
//!
//! # Limits
//! A journal file over [`MAX_FILE_BYTES`] or with an entry outside `ROOT/sys/` is refused, naming
//! the file and the rule, and left in place: nothing is written from it.

use super::sysfs::{RestoreFailure, Root, SysfsError};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// First field of a journal file.
pub const FORMAT: &str = "scx_tt journal v1";

/// The default `--run-dir`.
pub const DEFAULT_RUN_DIR: &str = "/run/scx_tt";

/// A journal larger than this is not read (a run journals a few files per CPU).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

const SUFFIX: &str = ".journal.json";

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OnDisk {
    format: String,
    pid: u32,
    root: PathBuf,
    entries: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    path: PathBuf,
    original: String,
}

/// One journal's file (owned by a [`super::sysfs::Journal`]).
#[derive(Debug)]
pub struct JournalFile {
    path: PathBuf,
    root: PathBuf,
}

fn err(path: &Path, msg: impl Into<String>) -> SysfsError {
    SysfsError::Journal {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

/// Replaces the file at `path` with `bytes` atomically, durably: written to `PATH`'s
/// extension replaced by `tmp.PID`, fsynced, renamed over `path`, the directory fsynced. A
/// crash leaves the old file or the new one, and at most a stray temporary.
pub fn store_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Creates `dir` (mode 0700) if needed.
pub fn make_run_dir(dir: &Path) -> Result<(), SysfsError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| err(dir, format!("cannot create the run directory: {e}")))
}

impl JournalFile {
    /// The file `run_dir/NAME.journal.json` for a journal of `root`; refused when it exists.
    pub fn create(run_dir: &Path, name: &str, root: &Root) -> Result<Self, SysfsError> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(err(
                run_dir,
                format!("journal name {name:?}: use [A-Za-z0-9-]+"),
            ));
        }
        make_run_dir(run_dir)?;
        let path = run_dir.join(format!("{name}{SUFFIX}"));
        if path.exists() {
            return Err(err(
                &path,
                "exists: a run that was killed left values changed; `scx_tt restore` puts them \
                 back",
            ));
        }
        let root = std::path::absolute(root.dir())
            .map_err(|e| err(&path, format!("the sysfs root: {e}")))?;
        Ok(Self { path, root })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Atomically replaces the file with `entries` (see the module doc).
    pub fn store(&self, entries: &[(PathBuf, String)]) -> Result<(), SysfsError> {
        let doc = OnDisk {
            format: FORMAT.into(),
            pid: std::process::id(),
            root: self.root.clone(),
            entries: entries
                .iter()
                .map(|(p, o)| Entry {
                    path: p.clone(),
                    original: o.clone(),
                })
                .collect(),
        };
        let text = serde_json::to_vec_pretty(&doc).map_err(|e| err(&self.path, e.to_string()))?;
        store_atomic(&self.path, &text).map_err(|e| err(&self.path, format!("cannot write: {e}")))
    }

    /// Removes the file (nothing left to restore); a missing file is fine.
    pub fn remove(&self) -> Result<(), SysfsError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(err(&self.path, format!("cannot remove: {e}"))),
        }
    }
}

/// A value [`recover`] put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// Absolute kernel path (under the journal's root).
    pub path: PathBuf,
    /// What the file held (trimmed), or `None` when unreadable.
    pub was: Option<String>,
    /// What it holds again (the original, trimmed).
    pub original: String,
}

/// What [`recover`] did with one journal file.
#[derive(Debug)]
pub struct Recovered {
    pub file: PathBuf,
    /// The run that wrote it.
    pub pid: u32,
    pub root: PathBuf,
    /// Values that differed from their original and were written back, newest first.
    pub restored: Vec<Restored>,
    /// Entries whose file already held its original.
    pub unchanged: usize,
    /// Entries that could not be written back (kept in the file).
    pub failures: Vec<RestoreFailure>,
}

impl Recovered {
    /// One line, then one line per value put back.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{}: a run (pid {}) that did not exit cleanly left {} value(s) changed under {}: \
             restored {}, {} already at their original, {} failed",
            self.file.display(),
            self.pid,
            self.restored.len() + self.failures.len(),
            self.root.display(),
            self.restored.len(),
            self.unchanged,
            self.failures.len()
        );
        for r in &self.restored {
            s.push_str(&format!(
                "\n  {}: {} -> {:?}",
                r.path.display(),
                r.was
                    .as_deref()
                    .map_or("(unreadable)".into(), |w| format!("{w:?}")),
                r.original
            ));
        }
        for f in &self.failures {
            s.push_str(&format!("\n  {}: FAILED: {}", f.path.display(), f.error));
        }
        s
    }
}

/// The pid of a live `scx_tt` process other than this one, if `pid` is one.
fn live_scx_tt(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "scx_tt")
}

/// An entry's path must be absolute, under `/sys/`, without `..`.
fn check_entry(file: &Path, e: &Entry) -> Result<(), SysfsError> {
    let ok = e.path.is_absolute()
        && e.path.starts_with("/sys/")
        && e.path.components().all(|c| c != Component::ParentDir);
    if ok {
        Ok(())
    } else {
        Err(err(
            file,
            format!(
                "entry path {}: must be an absolute path under /sys/ without \"..\"; nothing \
                 restored from this journal",
                e.path.display()
            ),
        ))
    }
}

fn read_journal(path: &Path) -> Result<OnDisk, SysfsError> {
    let meta = std::fs::metadata(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(err(
            path,
            format!(
                "{} bytes: a journal holds at most {MAX_FILE_BYTES}; nothing restored from it",
                meta.len()
            ),
        ));
    }
    let text = std::fs::read(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
    let de = &mut serde_json::Deserializer::from_slice(&text);
    let doc: OnDisk = serde_path_to_error::deserialize(de).map_err(|e| {
        err(
            path,
            format!(
                "field {}: {}; nothing restored from it",
                e.path(),
                e.inner()
            ),
        )
    })?;
    if doc.format != FORMAT {
        return Err(err(
            path,
            format!("format {:?}: expected {FORMAT:?}", doc.format),
        ));
    }
    for e in &doc.entries {
        check_entry(path, e)?;
    }
    Ok(doc)
}

/// Restores every journal a previous run left in `run_dir` (see the module doc); a missing
/// `run_dir` is nothing to do. Refuses, changing nothing, when a journal belongs to a live
/// `scx_tt` or cannot be read.
pub fn recover(run_dir: &Path) -> Result<Vec<Recovered>, SysfsError> {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(SUFFIX) {
            files.push(p);
        } else if name.contains(".journal.tmp.") {
            // a store cut short: the rename never happened, the journal it was replacing holds
            let _ = std::fs::remove_file(&p);
        }
    }
    files.sort();
    // read and check all first: a refusal changes nothing
    let mut docs = Vec::new();
    for f in files {
        let doc = read_journal(&f)?;
        if live_scx_tt(doc.pid) {
            return Err(err(
                &f,
                format!(
                    "held by the running scx_tt (pid {}); stop it (it restores on exit)",
                    doc.pid
                ),
            ));
        }
        docs.push((f, doc));
    }
    let mut out = Vec::new();
    for (file, doc) in docs {
        let root = Root::new(&doc.root);
        let mut rec = Recovered {
            file: file.clone(),
            pid: doc.pid,
            root: doc.root.clone(),
            restored: Vec::new(),
            unchanged: 0,
            failures: Vec::new(),
        };
        let mut left = Vec::new();
        for e in doc.entries.into_iter().rev() {
            let was = root.read_raw(&e.path).ok();
            if was.as_deref() == Some(e.original.as_str()) {
                rec.unchanged += 1;
                continue;
            }
            match root.write_original(&e.path, &e.original) {
                Ok(()) => rec.restored.push(Restored {
                    path: e.path,
                    was: was.map(|w| w.trim().to_string()),
                    original: e.original.trim().to_string(),
                }),
                Err(error) => {
                    left.push((e.path.clone(), e.original.clone()));
                    rec.failures.push(RestoreFailure {
                        path: e.path,
                        original: e.original,
                        error,
                    });
                }
            }
        }
        let jf = JournalFile {
            path: file,
            root: doc.root,
        };
        if left.is_empty() {
            jf.remove()?;
        } else {
            left.reverse();
            jf.store(&left)?;
        }
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::sysfs::Journal;
    use super::*;

    struct Tmp(PathBuf);
    impl Tmp {
        fn new(tag: &str) -> Self {
            let d =
                std::env::temp_dir().join(format!("scx_tt-journal-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(d.join("root/sys/x")).expect("mkdir");
            Tmp(d)
        }
        fn root(&self) -> Root {
            Root::new(self.0.join("root"))
        }
        fn run(&self) -> PathBuf {
            self.0.join("run")
        }
        fn put(&self, name: &str, text: &str) {
            std::fs::write(self.0.join("root/sys/x").join(name), text).expect("write");
        }
        fn get(&self, name: &str) -> String {
            std::fs::read_to_string(self.0.join("root/sys/x").join(name)).expect("read")
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_forgotten_journal_is_recovered_byte_for_byte_newest_first_and_removed() {
        let t = Tmp::new("recover");
        t.put("a", "schedutil\n");
        t.put("b", "<unsupported>\n");
        let mut j = Journal::persistent(t.root(), &t.run(), "cpufreq").expect("journal");
        j.write("/sys/x/a", "userspace").expect("write a");
        j.write("/sys/x/b", "1200000").expect("write b");
        j.write("/sys/x/a", "userspace").expect("again");
        let file = j.file().expect("file").to_path_buf();
        assert!(file.exists(), "the journal is on disk before the run ends");
        std::mem::forget(j); // SIGKILL: no restore
        assert_eq!(t.get("a"), "userspace");
        let rec = recover(&t.run()).expect("recover");
        assert_eq!(rec.len(), 1);
        let names: Vec<_> = rec[0].restored.iter().map(|r| r.path.clone()).collect();
        assert_eq!(
            names,
            [PathBuf::from("/sys/x/b"), PathBuf::from("/sys/x/a")],
            "newest first"
        );
        assert_eq!(rec[0].restored[1].was.as_deref(), Some("userspace"));
        assert_eq!(t.get("a"), "schedutil\n");
        assert_eq!(t.get("b"), "<unsupported>\n");
        assert!(!file.exists(), "removed once restored");
        assert!(recover(&t.run()).expect("again").is_empty());
        let d = rec[0].describe();
        assert!(
            d.contains("restored 2") && d.contains("\"userspace\" -> \"schedutil\""),
            "{d}"
        );
    }

    #[test]
    fn a_clean_restore_removes_the_file_and_a_second_journal_is_refused_while_one_exists() {
        let t = Tmp::new("clean");
        t.put("a", "0\n");
        let mut j = Journal::persistent(t.root(), &t.run(), "pmqos").expect("journal");
        j.write("/sys/x/a", "n/a").expect("write");
        let e = Journal::persistent(t.root(), &t.run(), "pmqos").unwrap_err();
        assert!(e.to_string().contains("scx_tt restore"), "{e}");
        let file = j.file().expect("file").to_path_buf();
        drop(j);
        assert_eq!(t.get("a"), "0\n");
        assert!(!file.exists());
        Journal::persistent(t.root(), &t.run(), "pmqos").expect("free again");
    }

    #[test]
    fn bad_journals_are_refused_naming_the_rule_and_change_nothing() {
        let t = Tmp::new("bad");
        t.put("a", "userspace\n");
        std::fs::create_dir_all(t.run()).expect("run");
        let root = t.root().dir().display().to_string();
        for (text, want) in [
            ("{".to_string(), "field"),
            (
                format!(r#"{{"format":"v0","pid":1,"root":"{root}","entries":[]}}"#),
                "expected",
            ),
            (
                format!(
                    r#"{{"format":"{FORMAT}","pid":1,"root":"{root}","entries":[{{"path":"/etc/passwd","original":"x"}}]}}"#
                ),
                "under /sys/",
            ),
            (
                format!(
                    r#"{{"format":"{FORMAT}","pid":1,"root":"{root}","entries":[{{"path":"/sys/../etc/x","original":"x"}}]}}"#
                ),
                "under /sys/",
            ),
            (
                format!(r#"{{"format":"{FORMAT}","pid":1,"root":"{root}","entries":[],"x":1}}"#),
                "unknown field",
            ),
        ] {
            let f = t.run().join("c.journal.json");
            std::fs::write(&f, &text).expect("write");
            let e = recover(&t.run()).unwrap_err().to_string();
            assert!(
                e.contains(want) && e.contains("c.journal.json"),
                "{text}: {e}"
            );
            assert!(f.exists(), "a refused journal stays");
            assert_eq!(t.get("a"), "userspace\n");
        }
        let f = t.run().join("c.journal.json");
        std::fs::write(&f, vec![b' '; MAX_FILE_BYTES as usize + 1]).expect("write");
        let e = recover(&t.run()).unwrap_err().to_string();
        assert!(e.contains("at most"), "{e}");
    }

    #[test]
    fn a_journal_of_a_live_scx_tt_is_refused_and_recovered_once_it_is_gone() {
        let t = Tmp::new("live");
        t.put("a", "schedutil\n");
        // a live process whose comm is "scx_tt": a copy of sleep(1) under that name
        let bin = t.0.join("scx_tt");
        std::fs::copy("/bin/sleep", &bin).expect("copy sleep");
        let mut child = std::process::Command::new(&bin)
            .arg("30")
            .spawn()
            .expect("spawn");
        let root = t.root().dir().display().to_string();
        std::fs::create_dir_all(t.run()).expect("run");
        std::fs::write(
            t.run().join("cpufreq.journal.json"),
            format!(
                r#"{{"format":"{FORMAT}","pid":{},"root":"{root}","entries":[{{"path":"/sys/x/a","original":"ondemand\n"}}]}}"#,
                child.id()
            ),
        )
        .expect("write");
        // wait until the exec shows in comm
        for _ in 0..200 {
            if live_scx_tt(child.id()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let e = recover(&t.run()).unwrap_err().to_string();
        assert!(e.contains(&format!("pid {}", child.id())), "{e}");
        assert_eq!(t.get("a"), "schedutil\n", "nothing restored while it runs");
        child.kill().expect("kill");
        child.wait().expect("wait");
        let rec = recover(&t.run()).expect("recover");
        assert_eq!(rec[0].restored.len(), 1);
        assert_eq!(t.get("a"), "ondemand\n");
        assert!(
            !live_scx_tt(std::process::id()),
            "this run is never another one"
        );
    }

    #[test]
    fn a_stray_temporary_is_removed_and_a_missing_run_dir_is_nothing_to_do() {
        let t = Tmp::new("tmp");
        assert!(recover(&t.run()).expect("missing").is_empty());
        std::fs::create_dir_all(t.run()).expect("run");
        let stray = t.run().join("cpufreq.journal.tmp.99");
        std::fs::write(&stray, "{").expect("write");
        assert!(recover(&t.run()).expect("recover").is_empty());
        assert!(!stray.exists());
    }
}

//! The control journal: what the control protocol changed in a run, so that `scx_tt --resume`
//! can bring it back after a crash or a restart (docs/control.md, "Restarts and --resume").
//!
//! # What is journaled
//! The run's state as the requests that rebuild it, one canonical request line per thing that
//! differs from the plan ([`Control`](super::Control) keeps the list):
//! - the latest accepted `set_policy`;
//! - the latest accepted `switch_table` (static mode);
//! - per plan task, its latest accepted `admit_periodic` or `remove` (an `admit_periodic` undone
//!   by a `remove` leaves nothing: the task is back to what the plan says);
//! - per task `admit` added, its `admit` request, until its threads are all gone.
//!
//! Firm jobs (`admit_firm`) are not journaled: a job's deadline is relative to the slot of its
//! request, and a restarted run has no way to keep a guarantee for a job half done.
//!
//! # Format and protocol
//! `RUN_DIR/control-state.json` (`--run-dir`, /run/scx_tt by default):
//! ```json
//! {"format": "scx_tt control state v1", "table": "/etc/scx_tt/plan.json",
//!  "requests": ["{\"op\":\"admit\",\"name\":\"vm1\",...}"]}
//! ```
//! Written before the reply of the request that changed it (write a temporary, fsync, rename,
//! fsync the directory): a client that got "accepted" finds its admission in the journal. A
//! crash leaves the old state or the new one. `--resume` reads it at the start and serves each
//! request again through the same path as a client's (re-resolving threads, re-running the
//! acceptance test on the fresh state); what no longer fits is reported and leaves the
//! journal. A start without `--resume` sets an existing state aside as `control-state.json.old`
//! and says so.

use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// First field of the state file.
pub const FORMAT: &str = "scx_tt control state v1";

/// The file name under the run directory.
pub const FILE: &str = "control-state.json";

/// A state file larger than this is not read: at most `MAX_TASKS` admissions plus a handful of
/// plan-task, policy and table entries, each one request line.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// The state file's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub format: String,
    /// The `--table` of the run that wrote it.
    pub table: String,
    /// The request lines that rebuild the run's state, in the order they were last accepted.
    pub requests: Vec<String>,
}

/// What a journal entry is about: a later entry with the same key replaces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    Policy,
    Table,
    /// A task by name: a plan task's `admit_periodic`/`remove`, or an `admit`.
    Task(String),
}

/// The journal's entries, kept in [`Control`](super::Control).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entries {
    entries: Vec<(Key, String)>,
    /// Changed since [`Entries::take_changed`] last said so.
    changed: bool,
}

impl Entries {
    /// `key` is now described by `line` (`None`: by nothing, back to the plan).
    pub fn set(&mut self, key: Key, line: Option<String>) {
        let before = self.entries.len();
        self.entries.retain(|(k, _)| *k != key);
        let removed = self.entries.len() != before;
        if let Some(line) = line {
            self.entries.push((key, line));
            self.changed = true;
        } else if removed {
            self.changed = true;
        }
    }

    /// The request lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.entries.iter().map(|(_, l)| l.clone()).collect()
    }

    /// The lines, when they changed since the last call.
    pub fn take_changed(&mut self) -> Option<Vec<String>> {
        std::mem::take(&mut self.changed).then(|| self.lines())
    }
}

/// The state file under `run_dir`.
pub fn path(run_dir: &Path) -> PathBuf {
    run_dir.join(FILE)
}

/// Writes the state atomically (module doc), creating `run_dir` (0700) if needed.
pub fn store(run_dir: &Path, state: &State) -> Result<(), String> {
    let file = path(run_dir);
    let fail = |e: &dyn std::fmt::Display| format!("{}: cannot write: {e}", file.display());
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(run_dir)
            .map_err(|e| fail(&e))?;
    }
    let text = serde_json::to_vec_pretty(state).map_err(|e| fail(&e))?;
    crate::energy::journal_file::store_atomic(&file, &text).map_err(|e| fail(&e))
}

/// Reads the state under `run_dir`: `Ok(None)` when there is none. Refused (naming the file and
/// the rule) when it is larger than [`MAX_FILE_BYTES`], not JSON of this format, or not
/// a regular file.
pub fn load(run_dir: &Path) -> Result<Option<State>, String> {
    let file = path(run_dir);
    let meta = match std::fs::symlink_metadata(&file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    if !meta.file_type().is_file() {
        return Err(format!("{}: is not a regular file", file.display()));
    }
    let mut text = String::new();
    std::fs::File::open(&file)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", file.display()))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{}: larger than {MAX_FILE_BYTES} bytes; not read",
            file.display()
        ));
    }
    let state: State =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    if state.format != FORMAT {
        return Err(format!(
            "{}: format = {:?}: must be {FORMAT:?}",
            file.display(),
            state.format
        ));
    }
    Ok(Some(state))
}

/// A start without `--resume`: an existing state is renamed to `control-state.json.old`
/// (replacing an older one); returns how many requests it held, if there was one.
pub fn set_aside(run_dir: &Path) -> Result<Option<usize>, String> {
    let found = load(run_dir)?;
    let Some(state) = found else {
        return Ok(None);
    };
    let file = path(run_dir);
    std::fs::rename(&file, file.with_extension("json.old"))
        .map_err(|e| format!("{}: setting it aside: {e}", file.display()))?;
    Ok(Some(state.requests.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("scx_tt-cj-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_later_entry_replaces_one_with_the_same_key_and_none_removes_it() {
        let mut e = Entries::default();
        assert_eq!(e.take_changed(), None);
        e.set(Key::Policy, Some("p1".into()));
        e.set(Key::Task("vm1".into()), Some("a1".into()));
        e.set(Key::Policy, Some("p2".into()));
        assert_eq!(e.take_changed(), Some(vec!["a1".into(), "p2".into()]));
        assert_eq!(e.take_changed(), None, "unchanged since");
        e.set(Key::Task("vm2".into()), None);
        assert_eq!(e.take_changed(), None, "removing nothing changes nothing");
        e.set(Key::Task("vm1".into()), None);
        assert_eq!(e.take_changed(), Some(vec!["p2".into()]));
    }

    #[test]
    fn the_state_round_trips_and_bad_files_are_refused_naming_the_rule() {
        let d = dir("rt");
        assert_eq!(load(&d), Ok(None), "no run dir: nothing to resume");
        let s = State {
            format: FORMAT.into(),
            table: "/p/plan.json".into(),
            requests: vec![r#"{"op":"set_policy","policy":"dvfs"}"#.into()],
        };
        store(&d, &s).expect("store");
        assert_eq!(load(&d), Ok(Some(s.clone())));
        // no temporary is left behind
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(FILE)]);
        for (text, rule) in [
            ("{", "EOF"),
            (
                r#"{"format":"x","table":"t","requests":[]}"#,
                "format = \"x\"",
            ),
            (
                r#"{"format":"scx_tt control state v1","table":"t","requests":[],"more":1}"#,
                "unknown field `more`",
            ),
        ] {
            std::fs::write(path(&d), text).unwrap();
            let e = load(&d).expect_err(text);
            assert!(e.contains(FILE) && e.contains(rule), "{text}: {e}");
        }
        let big = vec![b' '; MAX_FILE_BYTES as usize + 1];
        std::fs::write(path(&d), big).unwrap();
        assert!(load(&d).unwrap_err().contains("larger than"));
        // set aside: the state moves to .old, nothing is left to resume
        store(&d, &s).expect("store");
        assert_eq!(set_aside(&d), Ok(Some(1)));
        assert_eq!(load(&d), Ok(None));
        assert!(path(&d).with_extension("json.old").exists());
        assert_eq!(set_aside(&d), Ok(None));
        let _ = std::fs::remove_dir_all(&d);
    }
}

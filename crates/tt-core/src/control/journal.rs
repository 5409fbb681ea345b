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

/// The state in `text`, read from `file` (the edge reads it: `scx_tt::control::journal::load`):
/// refused, naming the file and the rule, when it is larger than [`MAX_FILE_BYTES`] or not JSON
/// of this format.
pub fn parse(file: &Path, text: &str) -> Result<State, String> {
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{}: larger than {MAX_FILE_BYTES} bytes; not read",
            file.display()
        ));
    }
    let state: State =
        serde_json::from_str(text).map_err(|e| format!("{}: {e}", file.display()))?;
    if state.format != FORMAT {
        return Err(format!(
            "{}: format = {:?}: must be {FORMAT:?}",
            file.display(),
            state.format
        ));
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

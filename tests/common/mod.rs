//! What the integration tests share (issue 33): the scx_tt binary as a command, running it and
//! reading its output, repository files, scratch directories, and the round trips that
//! `scx_tt ctl batch --timing` prints. A test file takes it with `mod common;`; a folder with a
//! `mod.rs`, so cargo does not build it as a test binary of its own.
//!
//! Every test binary compiles the whole module and uses only some of it, hence the allow below.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// The scx_tt binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_scx_tt");

/// The repository's root (the scx_tt package), where cargo runs the tests.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// [`ROOT`] as a path.
pub fn root() -> &'static Path {
    Path::new(ROOT)
}

/// The text of the repository file `rel` (a path from the root); panics naming it.
pub fn read_repo(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

// ---- running scx_tt ----

/// `scx_tt` as a command to add arguments to, in the repository's root (relative paths such as
/// `schedules/demo.json` name the repository's files).
pub fn scx_tt() -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(ROOT);
    c
}

/// `scx_tt ARGS`, run to its end: its exit status and output.
pub fn run(args: &[&str]) -> Output {
    scx_tt().args(args).output().expect("run scx_tt")
}

/// `scx_tt ARGS`: (exit code, -1 when a signal ended it; standard error).
pub fn code_and_stderr(args: &[&str]) -> (i32, String) {
    let out = run(args);
    (out.status.code().unwrap_or(-1), text(&out.stderr))
}

/// Output bytes as text (invalid UTF-8 replaced).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---- scratch directories ----

/// An empty directory `$TMPDIR/scx_tt-FILE-PID-NAME` (a previous run's removed first): FILE names
/// the test file, NAME the test; the tests of a file run in parallel in one process, so NAME
/// must differ between them. The directory is left for a failed test's artefacts.
pub fn temp_dir(file: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scx_tt-{file}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A [`temp_dir`] of its own for each call, `$TMPDIR/scx_tt-FILE-PID-NAME-N` (N counts the calls
/// of the process), for helpers that several tests call with the same NAME.
pub fn fresh_temp_dir(file: &str, name: &str) -> PathBuf {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    temp_dir(file, &format!("{name}-{n}"))
}

// ---- scx_tt ctl ----

/// The round trips `scx_tt ctl batch --timing` printed on standard error, in µs, in the order of
/// the requests: the number of each line `... round trip N us` (the summary line has none).
pub fn round_trips_us(stderr: &str) -> Vec<u64> {
    stderr
        .lines()
        .filter_map(|l| {
            l.split("round trip ")
                .nth(1)?
                .strip_suffix(" us")?
                .parse()
                .ok()
        })
        .collect()
}

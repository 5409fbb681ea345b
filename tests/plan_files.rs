//! Plan files are read from regular files only, and never block: a FIFO with no writer, a
//! device that never ends and a directory are refused at once, naming what they are (issue 12
//! item 2: a `switch_table` request naming a FIFO used to freeze the run loop until someone
//! wrote a plan into it).

mod common;

use scx_tt::plan::{self, LoadError};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

/// `plan::from_file(path)`'s error text, or a failure if it takes more than 2 s.
fn load_error(path: PathBuf) -> String {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(plan::from_file(&path).map(|_| ()));
    });
    match rx.recv_timeout(Duration::from_secs(2)) {
        Ok(Err(e @ LoadError::Io { .. })) => e.to_string(),
        Ok(other) => panic!("expected a read error, got {other:?}"),
        Err(_) => panic!("plan::from_file blocked for more than 2 s"),
    }
}

#[test]
fn a_fifo_without_a_writer_is_refused_at_once() {
    let dir = common::temp_dir("plan-files", "fifo");
    let fifo = dir.join("plan.fifo");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let e = load_error(fifo);
    assert!(
        e.contains("is a FIFO") && e.contains("regular files only"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn devices_and_directories_are_refused_naming_what_they_are() {
    let e = load_error(PathBuf::from("/dev/zero"));
    assert!(e.contains("is a device"), "{e}");
    let dir = common::temp_dir("plan-files", "dir");
    let e = load_error(dir.clone());
    assert!(e.contains("is a directory"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_regular_plan_file_still_loads() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schedules/demo.json");
    assert!(plan::from_file(p).is_ok());
}

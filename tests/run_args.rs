//! Number flags of the run mode and of `ctl` are refused by the argument parser (exit 2, the
//! flag and the range named) before anything is loaded: no infinity, NaN or overflowing
//! duration reaches `Duration` (issue 12 item 5: these used to panic after attaching).

mod common;

use common::code_and_stderr;

#[test]
fn infinite_nan_and_huge_seconds_are_refused_naming_the_flag() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--table", "schedules/demo.json", "--duration-s", "inf"],
            "--duration-s",
        ),
        (
            &["--table", "schedules/demo.json", "--duration-s", "NaN"],
            "--duration-s",
        ),
        (
            &["--table", "schedules/demo.json", "--stats", "1e300"],
            "--stats",
        ),
        (
            &["--table", "schedules/demo.json", "--stats", "0"],
            "--stats",
        ),
        (
            &[
                "ctl",
                "--socket",
                "/nonexistent.sock",
                "--timeout-s",
                "inf",
                "status",
            ],
            "--timeout-s",
        ),
    ];
    for (args, flag) in cases {
        let (code, err) = code_and_stderr(args);
        assert_eq!(code, 2, "{args:?}: exit code; stderr: {err}");
        assert!(
            err.contains(flag) && err.contains("must be a number of seconds in"),
            "{args:?}: the error names {flag} and the range: {err}"
        );
    }
}

/// Issue 12 item 8: a `--control` path in a directory others can write to without the sticky
/// bit is refused (exit 1) naming the directory, its mode and the rule, before anything else of
/// the run (here: before the machine checks, which would fail on the plan's missing CPU 200 on
/// any host, so that nothing is ever attached by this test). The run mode checks root first, so
/// the test needs root and the BPF build.
#[cfg(feature = "bpf")]
#[test]
fn a_control_socket_in_a_world_writable_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the run mode needs root");
        return;
    }
    let dir = common::temp_dir("run-args", "control");
    let open = dir.join("open");
    std::fs::create_dir_all(&open).expect("dir");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        r#"{ "version": 1, "slot_us": 1000, "frame_slots": 10,
             "cpus": { "managed": [200], "housekeeping": [0] },
             "tasks": [ { "name": "a", "pid": 1, "class": "tt", "period": 10, "wcet": 1 } ] }"#,
    )
    .expect("plan");
    let sock = open.join("ctl.sock");
    let (code, err) = code_and_stderr(&[
        "--table",
        plan.to_str().expect("utf-8"),
        "--control",
        sock.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("directory {} (mode 0777", open.display()))
            && err.contains("without the sticky bit"),
        "the error names the directory, its mode and the rule: {err}"
    );
    assert!(!sock.exists(), "no socket was created");
    let _ = std::fs::remove_dir_all(&dir);
}

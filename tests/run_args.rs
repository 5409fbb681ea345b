//! Number flags of the run mode and of `ctl` are refused by the argument parser (exit 2, the
//! flag and the range named) before anything is loaded: no infinity, NaN or overflowing
//! duration reaches `Duration` (issue 12 item 5: these used to panic after attaching).

use std::process::Command;

fn scx_tt(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_scx_tt"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run scx_tt");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

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
        let (code, err) = scx_tt(args);
        assert_eq!(code, 2, "{args:?}: exit code; stderr: {err}");
        assert!(
            err.contains(flag) && err.contains("must be a number of seconds in"),
            "{args:?}: the error names {flag} and the range: {err}"
        );
    }
}

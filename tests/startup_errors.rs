//! Issue 19 item 5: every start-up refusal of `scx_tt --table PLAN.json` names the cause and
//! the next step. The machine checks (root, sched_ext present and free, the plan's CPUs) are a
//! pure function of a system view, tested one message each in src/sched/system.rs (fake sysfs
//! trees, no root, no sched_ext needed); here: the plan that cannot load, and that a refused
//! machine check changes nothing (no task spawned, no socket, no run directory).

mod common;

use common::code_and_stderr;
use std::process::Command;

fn has_all(msg: &str, words: &[&str]) {
    for w in words {
        assert!(msg.contains(w), "{w:?} missing from: {msg}");
    }
}

#[test]
fn a_missing_plan_file_names_the_path_and_where_plans_come_from() {
    let (code, err) = code_and_stderr(&["--table", "/nonexistent/scx_tt/plan.json"]);
    assert_eq!(code, 1, "{err}");
    has_all(
        &err,
        &[
            "cannot read plan /nonexistent/scx_tt/plan.json",
            "No such file",
            "next step: give the path of an existing plan file",
            "schedules/demo.json",
            "scx_tt plan gen",
            "SCX_TT_TABLE in /etc/default/scx_tt",
        ],
    );
}

#[test]
fn a_plan_that_is_not_json_names_the_line_and_plan_check() {
    let dir = common::temp_dir("startup", "json");
    let plan = dir.join("plan.json");
    std::fs::write(&plan, "{ \"version\": 1,\n  \"slot_us\": 1000,, }\n").expect("write");
    let p = plan.to_str().expect("utf-8");
    let (code, err) = code_and_stderr(&["--table", p]);
    assert_eq!(code, 2, "{err}");
    has_all(
        &err,
        &[
            &format!("invalid plan {p}"),
            "line 2, column",
            "next step: the file is not valid JSON",
            &format!("`scx_tt plan check {p}`"),
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_invalid_plan_names_the_value_the_rule_and_plan_check() {
    let dir = common::temp_dir("startup", "invalid");
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        r#"{ "version": 1, "slot_us": 50, "frame_slots": 10,
             "cpus": { "managed": [1], "housekeeping": [0] },
             "tasks": [ { "name": "a", "pid": 1, "class": "tt", "period": 10, "wcet": 1 } ] }"#,
    )
    .expect("write");
    let p = plan.to_str().expect("utf-8");
    let (code, err) = code_and_stderr(&["--table", p]);
    assert_eq!(code, 2, "{err}");
    // the VM test `errors` looks for "slot_us" and "50"
    has_all(
        &err,
        &[
            "slot_us = 50",
            "next step: fix each value named above",
            "docs/plan-format.md",
            &format!("`scx_tt plan check {p}`"),
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// On any host the start is refused by the machine checks: not root, no sched_ext, another
/// scheduler attached, or (a free sched_ext as root) the plan's CPU 200, which no test machine
/// has. The refusal comes before anything else: the plan's `cmd` task never ran, no control
/// socket and no run directory exist.
#[test]
fn a_refused_machine_check_spawns_and_changes_nothing() {
    let dir = common::temp_dir("startup", "nothing");
    let marker = dir.join("spawned");
    let sock = dir.join("ctl.sock");
    let run_dir = dir.join("run");
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        format!(
            r#"{{ "version": 1, "slot_us": 1000, "frame_slots": 10,
                 "cpus": {{ "managed": [200], "housekeeping": [0] }},
                 "tasks": [ {{ "name": "a", "cmd": ["/bin/sh", "-c", "touch {}"],
                              "class": "tt", "period": 10, "wcet": 1 }} ] }}"#,
            marker.display()
        ),
    )
    .expect("plan");
    let (code, err) = code_and_stderr(&[
        "--table",
        plan.to_str().expect("utf-8"),
        "--control",
        sock.to_str().expect("utf-8"),
        "--run-dir",
        run_dir.to_str().expect("utf-8"),
        "--settle-ms",
        "0",
        "--duration-s",
        "1",
    ]);
    assert_eq!(code, 1, "{err}");
    let refusals = [
        "must run as root",
        "this kernel has no sched_ext",
        "is attached",
        "sched_ext is busy",
        "plan CPU 200 does not exist",
    ];
    assert!(
        refusals.iter().any(|r| err.contains(r)),
        "a machine check refused the start: {err}"
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!marker.exists(), "the plan's cmd task ran: {err}");
    assert!(!sock.exists(), "a control socket was created: {err}");
    assert!(!run_dir.exists(), "the run directory was created: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A live socket at the `--control` path refuses the start before the machine checks, naming
/// the next step (the VM test `switch` starts a second scx_tt on the first one's socket and
/// looks for "another process is listening").
#[test]
fn a_live_control_socket_is_refused_before_the_machine_checks() {
    let dir = common::temp_dir("startup", "live");
    let sock = dir.join("ctl.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("listen");
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        r#"{ "version": 1, "slot_us": 1000, "frame_slots": 10,
             "cpus": { "managed": [200], "housekeeping": [0] },
             "tasks": [ { "name": "a", "pid": 1, "class": "tt", "period": 10, "wcet": 1 } ] }"#,
    )
    .expect("plan");
    let s = sock.to_str().expect("utf-8");
    let (code, err) = code_and_stderr(&[
        "--table",
        plan.to_str().expect("utf-8"),
        "--control",
        s,
        "--run-dir",
        dir.join("run").to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{err}");
    has_all(
        &err,
        &[
            &format!("--control {s}: another process is listening"),
            &format!("`scx_tt ctl --socket {s} status`"),
            "give another --control path",
        ],
    );
    assert!(sock.exists(), "the live socket is left alone");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A refused start still puts back what a killed run left changed (its restore journal under
/// --run-dir), then says why it refused: the machine is never left changed because a start
/// failed. As root (the journal restores sysfs values, here in a fake tree).
#[test]
fn a_refused_start_still_restores_what_a_killed_run_left_changed() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root (the journal is restored as root only)");
        return;
    }
    let dir = common::temp_dir("startup", "journal");
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("sys/x")).expect("tree");
    std::fs::write(root.join("sys/x/a"), "userspace\n").expect("value");
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir).expect("run dir");
    // a run that is gone: the pid of a child that has exited
    let mut child = Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    child.wait().expect("wait");
    std::fs::write(
        run_dir.join("cpufreq.journal.json"),
        format!(
            r#"{{"format":"scx_tt journal v1","pid":{pid},"root":"{}","entries":[{{"path":"/sys/x/a","original":"schedutil\n"}}]}}"#,
            root.display()
        ),
    )
    .expect("journal");
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        r#"{ "version": 1, "slot_us": 1000, "frame_slots": 10,
             "cpus": { "managed": [200], "housekeeping": [0] },
             "tasks": [ { "name": "a", "pid": 1, "class": "tt", "period": 10, "wcet": 1 } ] }"#,
    )
    .expect("plan");
    let (code, err) = code_and_stderr(&[
        "--table",
        plan.to_str().expect("utf-8"),
        "--run-dir",
        run_dir.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("this kernel has no sched_ext")
            || err.contains("plan CPU 200 does not exist")
            || err.contains("is attached")
            || err.contains("sched_ext is busy"),
        "a machine check refused the start: {err}"
    );
    assert!(
        err.contains(&format!("a run (pid {pid}) that did not exit cleanly")),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("sys/x/a")).expect("value"),
        "schedutil\n",
        "the killed run's value is restored: {err}"
    );
    assert!(!run_dir.join("cpufreq.journal.json").exists(), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

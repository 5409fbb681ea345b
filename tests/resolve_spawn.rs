//! `cmd` tasks are spawned stopped, keep their pid across exec, die with their group, and die
//! with scx_tt when it is killed (parent-death signal).
#![cfg(feature = "bpf")]

use scx_tt::resolve::ProcFs;
use scx_tt::sched::spawn::Spawned;

fn state_of(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, r)| r.trim_start().chars().next())
        .unwrap_or('?')
}

#[test]
fn spawned_task_waits_stopped_until_resumed_then_is_killed() {
    let argv: Vec<String> = ["/bin/sh", "-c", "while :; do sleep 0.01; done"]
        .map(String::from)
        .into();
    let mut child = Spawned::stopped(&argv).expect("spawn");
    assert_eq!(state_of(child.pid), 'T', "stopped before exec");
    child.resume().expect("resume");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_ne!(state_of(child.pid), 'T', "running after SIGCONT");
    assert!(ProcFs::default().tid_alive(child.pid));
    assert!(!child.exited());
    child.kill().expect("kill");
    assert!(child.exited());
    assert!(!ProcFs::default().tid_alive(child.pid));
}

/// Env var that makes `spawned_task_dies_with_a_killed_parent` act as the parent: it spawns a
/// sleeper, prints its pid and waits to be killed.
const PARENT: &str = "SCX_TT_TEST_SPAWN_PARENT";

#[test]
fn spawned_task_dies_with_a_killed_parent() {
    if std::env::var_os(PARENT).is_some() {
        let argv: Vec<String> = ["/bin/sleep", "60"].map(String::from).into();
        let child = Spawned::stopped(&argv).expect("spawn");
        child.resume().expect("resume");
        println!("child {}", child.pid);
        std::thread::sleep(std::time::Duration::from_secs(60));
        return;
    }
    use std::io::{BufRead, BufReader};
    let mut parent = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "spawned_task_dies_with_a_killed_parent",
            "--nocapture",
        ])
        .env(PARENT, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("parent");
    let mut pid = None;
    for line in BufReader::new(parent.stdout.take().expect("stdout")).lines() {
        let line = line.expect("line");
        if let Some(p) = line.trim().strip_prefix("child ") {
            pid = p.parse::<u32>().ok();
            break;
        }
    }
    let pid = pid.expect("the parent printed its child's pid");
    assert!(ProcFs::default().tid_alive(pid), "the sleeper runs");
    parent.kill().expect("SIGKILL the parent");
    let _ = parent.wait();
    // dead, or a zombie waiting for its new parent to reap it
    let gone = |pid| !ProcFs::default().tid_alive(pid) || state_of(pid) == 'Z';
    let start = std::time::Instant::now();
    while !gone(pid) && start.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let state = state_of(pid);
    if !gone(pid) {
        // SAFETY: cleaning up the orphan this test failed to see killed
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(
        gone(pid),
        "the spawned sleeper {pid} outlived its SIGKILLed parent (state {state})"
    );
}

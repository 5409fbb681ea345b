//! `cmd` tasks are spawned stopped, keep their pid across exec, settle after their exec, stop
//! and continue as a whole process group, die with their group, and die with scx_tt when it is
//! killed (parent-death signal).
#![cfg(feature = "bpf")]

use scx_tt::clock::monotonic_ns;
use scx_tt::resolve::ProcFs;
use scx_tt::sched::settle::Settle;
use scx_tt::sched::spawn::{process_stats, Spawned};

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

#[test]
fn a_spawned_task_settles_after_its_exec_and_its_group_stops_and_continues() {
    // a forked sleeper in the group, and a busy loop
    let argv: Vec<String> = ["/bin/sh", "-c", "sleep 60 & while :; do :; done"]
        .map(String::from)
        .into();
    let procfs = ProcFs::default();
    let mut child = Spawned::stopped(&argv).expect("spawn");
    let before = child.sample(&procfs, monotonic_ns());
    assert!(!before.execd && !before.exited, "{before:?}");
    child.resume().expect("resume");
    let start = monotonic_ns();
    let mut settle = Settle::default();
    let mut last = before;
    while !settle.settled() && monotonic_ns() - start < 5_000_000_000 {
        last = child.sample(&procfs, monotonic_ns());
        settle.observe(last.clone());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(settle.settled(), "settled within 5 s: {last:?}");
    // the shell exec'd sh (its command line changed), forked the sleeper, and ran
    assert!(
        last.execd && last.tids.len() == 2 && last.cpu_ns > 0,
        "{last:?}"
    );
    assert!(last.tids.contains(&child.pid), "{last:?}");
    child.stop_group().expect("stop");
    let start = monotonic_ns();
    while !child.group_stopped(&process_stats(&procfs)) && monotonic_ns() - start < 2_000_000_000 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    for &tid in &last.tids {
        assert_eq!(state_of(tid), 'T', "{tid} of the group stopped");
    }
    child.resume().expect("resume");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_ne!(state_of(child.pid), 'T', "the loop runs again");
    child.kill().expect("kill");
    // kill() reaps the leader; SIGKILL reaches the other processes asynchronously
    for &tid in &last.tids {
        let gone = || !procfs.tid_alive(tid) || state_of(tid) == 'Z';
        let start = monotonic_ns();
        while !gone() && monotonic_ns() - start < 2_000_000_000 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(gone(), "{tid} of the group was killed (within 2 s)");
    }
}

/// Env var that makes `spawned_task_dies_with_a_killed_parent` act as the parent: it spawns a
/// sleeper, prints its pid and waits to be killed.
const PARENT: &str = "SCX_TT_TEST_SPAWN_PARENT";

#[test]
fn spawned_task_dies_with_a_killed_parent() {
    if std::env::var_os(PARENT).is_some() {
        let argv: Vec<String> = ["/bin/sleep", "60"].map(String::from).into();
        let mut child = Spawned::stopped(&argv).expect("spawn");
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

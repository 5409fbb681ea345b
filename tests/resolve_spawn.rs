//! `cmd` tasks are spawned stopped, keep their pid across exec, and die with their group.
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

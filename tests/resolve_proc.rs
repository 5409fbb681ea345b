//! Selector resolution against a fake /proc and cgroup tree (no root needed).

mod common;

use scx_tt::plan::{QemuSelector, Selector};
use scx_tt::resolve::{qemu_name_from_cmdline, ProcFs, ResolveError};
use std::fs;
use std::path::PathBuf;

/// A fake tree under the temp dir: processes with threads (comm per thread) and cgroups.
struct Fake {
    root: PathBuf,
}

impl Fake {
    fn new(name: &str) -> Fake {
        let root = common::temp_dir("resolve", name);
        fs::create_dir_all(root.join("proc")).expect("mkdir");
        fs::create_dir_all(root.join("cgroup")).expect("mkdir");
        Fake { root }
    }

    fn process(&self, pid: u32, cmdline: &[&str], threads: &[(u32, &str)]) -> &Self {
        let p = self.root.join(format!("proc/{pid}"));
        fs::create_dir_all(p.join("task")).expect("mkdir");
        fs::write(p.join("cmdline"), cmdline.join("\0") + "\0").expect("write");
        for (tid, comm) in threads {
            let t = p.join(format!("task/{tid}"));
            fs::create_dir_all(&t).expect("mkdir");
            fs::write(t.join("comm"), format!("{comm}\n")).expect("write");
            // /proc/<tid> also resolves threads
            let top = self.root.join(format!("proc/{tid}"));
            fs::create_dir_all(&top).expect("mkdir");
            fs::write(top.join("stat"), format!("{tid} ({comm}) R 1 1 1")).expect("write");
        }
        self
    }

    fn cgroup(&self, path: &str, tids: &str) -> &Self {
        let d = self.root.join("cgroup").join(path);
        fs::create_dir_all(&d).expect("mkdir");
        fs::write(d.join("cgroup.threads"), tids).expect("write");
        self
    }

    fn procfs(&self) -> ProcFs {
        ProcFs {
            proc_root: self.root.join("proc"),
            cgroup_root: self.root.join("cgroup"),
        }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[test]
fn pid_selector_gives_all_threads_and_missing_pid_is_an_error() {
    let f = Fake::new("pid");
    f.process(
        100,
        &["/usr/bin/app"],
        &[(100, "app"), (101, "worker"), (102, "worker")],
    );
    let p = f.procfs();
    assert_eq!(
        p.resolve(&Selector::Pid(100)).expect("pid 100"),
        vec![100, 101, 102]
    );
    assert!(matches!(
        p.resolve(&Selector::Pid(999)),
        Err(ResolveError::NoSuchPid(999))
    ));
}

#[test]
fn tids_selector_checks_every_tid() {
    let f = Fake::new("tids");
    f.process(100, &["app"], &[(100, "app"), (101, "w")]);
    let p = f.procfs();
    assert_eq!(
        p.resolve(&Selector::Tids(vec![101])).expect("tid"),
        vec![101]
    );
    assert!(matches!(
        p.resolve(&Selector::Tids(vec![101, 555])),
        Err(ResolveError::NoSuchTid(555))
    ));
}

#[test]
fn comm_selector_matches_threads_of_every_process() {
    let f = Fake::new("comm");
    f.process(100, &["a"], &[(100, "a"), (101, "rt-loop")]);
    f.process(200, &["b"], &[(200, "rt-loop"), (201, "rt-loop2")]);
    let p = f.procfs();
    assert_eq!(
        p.resolve(&Selector::Comm("rt-loop".into())).expect("comm"),
        vec![101, 200]
    );
    assert!(p
        .resolve(&Selector::Comm("absent".into()))
        .expect("comm")
        .is_empty());
}

#[test]
fn qemu_selectors_pick_vcpu_threads_only() {
    let f = Fake::new("qemu");
    let argv = [
        "/usr/bin/qemu-system-x86_64",
        "-name",
        "guest=vm1,debug-threads=on",
        "-smp",
        "2",
    ];
    f.process(
        300,
        &argv,
        &[
            (300, "qemu-system-x86"),
            (301, "CPU 0/KVM"),
            (302, "CPU 1/KVM"),
            (303, "IO mon_iothread"),
        ],
    );
    f.process(400, &["/bin/sh"], &[(400, "CPU 0/KVM")]);
    let p = f.procfs();
    assert_eq!(
        p.resolve(&Selector::Qemu(QemuSelector::Pid(300)))
            .expect("qemu pid"),
        vec![301, 302]
    );
    assert_eq!(
        p.resolve(&Selector::Qemu(QemuSelector::Name("vm1".into())))
            .expect("qemu name"),
        vec![301, 302]
    );
    assert!(p
        .resolve(&Selector::Qemu(QemuSelector::Name("vm2".into())))
        .expect("no vm2")
        .is_empty());
}

#[test]
fn qemu_selectors_match_tcg_vcpu_threads() {
    // Without KVM, QEMU names its vCPU threads "CPU n/TCG".
    let f = Fake::new("qemu-tcg");
    f.process(
        300,
        &[
            "/usr/bin/qemu-system-x86_64",
            "-name",
            "tcgvm",
            "-accel",
            "tcg",
        ],
        &[
            (300, "qemu-system-x86"),
            (301, "CPU 0/TCG"),
            (302, "CPU 1/TCG"),
            (303, "CPU 2/TCG"),
            (304, "TCG/x"),
            (305, "CPU 3/HVF"),
        ],
    );
    let p = f.procfs();
    assert_eq!(
        p.resolve(&Selector::Qemu(QemuSelector::Pid(300)))
            .expect("qemu pid"),
        vec![301, 302, 303]
    );
    assert_eq!(
        p.resolve(&Selector::Qemu(QemuSelector::Name("tcgvm".into())))
            .expect("qemu name"),
        vec![301, 302, 303]
    );
}

#[test]
fn two_qemu_processes_with_one_name_are_refused_naming_both_pids() {
    let f = Fake::new("qemu-twice");
    for (pid, accel) in [(700, "KVM"), (650, "TCG")] {
        f.process(
            pid,
            &[
                "/usr/bin/qemu-system-x86_64",
                "-name",
                "guest=dup,debug-threads=on",
            ],
            &[
                (pid, "qemu-system-x86"),
                (pid + 1, &format!("CPU 0/{accel}")),
            ],
        );
    }
    // another guest's QEMU is not part of the ambiguity
    f.process(
        800,
        &["/usr/bin/qemu-system-x86_64", "-name", "other"],
        &[(800, "qemu-system-x86"), (801, "CPU 0/KVM")],
    );
    let p = f.procfs();
    let err = p
        .resolve(&Selector::Qemu(QemuSelector::Name("dup".into())))
        .expect_err("two QEMU processes named dup");
    match &err {
        ResolveError::AmbiguousQemuName { name, pids } => {
            assert_eq!(name, "dup");
            assert_eq!(pids, &vec![650, 700]);
        }
        other => panic!("wrong error {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "qemu name \"dup\": 2 QEMU processes have this -name (pids 650, 700); \
         select one with {\"pid\": N}"
    );
    // the name that is unique still resolves, and so does each pid
    assert_eq!(
        p.resolve(&Selector::Qemu(QemuSelector::Name("other".into())))
            .expect("other"),
        vec![801]
    );
    assert_eq!(
        p.resolve(&Selector::Qemu(QemuSelector::Pid(650)))
            .expect("pid 650"),
        vec![651]
    );
}

#[test]
fn qemu_name_forms() {
    let cmd = |args: &[&str]| args.join("\0").into_bytes();
    assert_eq!(
        qemu_name_from_cmdline(&cmd(&["qemu-system-x86_64", "-name", "plain"])).as_deref(),
        Some("plain")
    );
    assert_eq!(
        qemu_name_from_cmdline(&cmd(&["/x/qemu-kvm", "-name", "vm,debug-threads=on"])).as_deref(),
        Some("vm")
    );
    assert_eq!(
        qemu_name_from_cmdline(&cmd(&["/bin/bash", "-name", "x"])),
        None
    );
}

#[test]
fn cgroup_selector_reads_cgroup_threads() {
    let f = Fake::new("cgroup");
    f.cgroup("machine.slice/vm1", "7\n8\n\n9\n");
    let p = f.procfs();
    assert_eq!(
        p.resolve(&Selector::Cgroup("/machine.slice/vm1".into()))
            .expect("cgroup"),
        vec![7, 8, 9]
    );
    assert!(matches!(
        p.resolve(&Selector::Cgroup("nope".into())),
        Err(ResolveError::Cgroup { .. })
    ));
}

#[test]
fn zombie_threads_are_not_alive() {
    let f = Fake::new("zombie");
    f.process(500, &["z"], &[(500, "z (x)")]);
    let p = f.procfs();
    assert!(p.tid_alive(500));
    fs::write(f.root.join("proc/500/stat"), "500 (z (x)) Z 1 1 1").expect("write");
    assert!(!p.tid_alive(500));
    assert!(!p.tid_alive(501));
}

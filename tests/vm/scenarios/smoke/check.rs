//! VM smoke tests: the guest kernel has sched_ext and the initramfs is complete; files come
//! back from the guest byte for byte; the harness reports scenario failures (scenario `fail`)
//! and retries crashed and hung guests (`crash`, `hang`). Run first by `make test-vm`
//! (`cargo test --release --test vm smoke -- --ignored --nocapture`).
//!
//! Without a VM (plain `cargo test`): run.sh with a stand-in for QEMU whose "guest" sends files
//! with the guest's own `send_out_files` (the transfer minus the tty), run.sh's `--out` rules
//! (it replaces only its own run directories), and mkinitrd.sh's refusal of a wrong
//! `SCX_TT_INITRD_EXTRA` entry.

use crate::harness::{self, Vm, VmOutput};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files smoke/guest.sh writes into /out and their exact bytes: with and without a final
/// newline, empty, ending in a blank line, with a tab and a carriage return.
const TRANSFER: [(&str, &[u8]); 4] = [
    (
        "xfer_eol.jsonl",
        b"{\"a\": 1}\n\n\t{\"b\": \"tab\"}\r\n{\"c\": 3}\n",
    ),
    ("xfer_noeol.txt", b"first line\nno newline at the end"),
    ("xfer_empty.txt", b""),
    ("xfer_blank_end.txt", b"a blank line follows\n\n"),
];

/// Every TRANSFER file arrived in `dir` (a run directory's files/) with exactly its bytes; a
/// mismatch names the file and shows both contents escaped.
fn assert_transferred_exactly(dir: &Path) {
    for (name, want) in TRANSFER {
        let got = std::fs::read(dir.join(name))
            .unwrap_or_else(|e| panic!("{name} did not arrive in {}: {e}", dir.display()));
        assert!(
            got == want,
            "{name} changed on its way from the guest: got {:?}, sent {:?}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want)
        );
        println!("  {name}: {} bytes, identical", got.len());
    }
}

/// The md5 of a file, by the host's md5sum.
fn host_md5(path: &Path) -> String {
    let out = Command::new("md5sum")
        .arg(path)
        .output()
        .expect("running md5sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn guest_kernel_has_sched_ext_and_every_binary_runs() {
    let out = Vm::new("smoke").run().unwrap_or_else(|e| panic!("{e}"));
    for (k, v) in &out.results {
        println!("  {k} = {v}");
    }
    assert_eq!(
        out.result("sched_ext"),
        Ok("present"),
        "guest kernel without sched_ext"
    );
    assert_eq!(
        out.result("state"),
        Ok("disabled"),
        "a scheduler is attached at boot"
    );
    for bin in [
        "scx_tt",
        "tt_timer_baseline",
        "stress-ng",
        "cyclictest",
        "bpftool",
    ] {
        assert_eq!(
            out.result(&format!("bin_{bin}")),
            Ok("runs"),
            "{bin} does not run in the guest"
        );
    }
    assert_eq!(
        out.result("run_mode"),
        Ok("yes"),
        "scx_tt has no run mode (--summary-json)"
    );
    kernel_notes(&out);
    // The files the guest wrote arrive byte-identical: the bytes this test expects, and the
    // size and md5 the guest computed.
    let files = out.dir.join("files");
    assert_transferred_exactly(&files);
    for (name, want) in TRANSFER {
        assert_eq!(
            out.number(&format!("{name}_bytes")),
            Ok(want.len() as i64),
            "{name}: the guest's size"
        );
        assert_eq!(
            out.result(&format!("{name}_md5")),
            Ok(host_md5(&files.join(name)).as_str()),
            "{name}: the guest's md5 against the copy's"
        );
    }
    assert_eq!(out.rc, 0);
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn failing_scenario_reports_its_exit_code_and_results() {
    let out = Vm::new("fail")
        .tries(1)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.rc, 7);
    assert_eq!(out.number("answer"), Ok(42));
}

/// Boots `scenario`, whose guest crashes or hangs, `tries` times: run.sh must exit 3 and the
/// run must not look completed. Returns `tries`.
fn failed_boot(scenario: &str, tries: u32, timeout_s: u32) -> u32 {
    let (code, out) = Vm::new(scenario)
        .tries(tries)
        .timeout_s(timeout_s)
        .run_status();
    assert_eq!(
        code,
        Some(3),
        "run.sh must exit 3 when every try of {scenario} failed"
    );
    assert!(out.is_err(), "a {scenario} run must not look completed");
    tries
}

/// The console log of boot `t` of `scenario`.
fn try_log(scenario: &str, t: u32) -> String {
    let dir = harness::repo().join("target/vm/runs").join(scenario);
    std::fs::read_to_string(dir.join(format!("try-{t}.console.log"))).unwrap_or_default()
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn crashed_guest_is_retried_then_fails_loudly() {
    for t in 1..=failed_boot("crash", 2, 60) {
        let log = try_log("crash", t);
        assert!(
            log.contains("Kernel panic"),
            "try {t} did not record the panic"
        );
    }
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn hung_guest_is_stopped_at_the_timeout_and_fails_loudly() {
    // two tries allowed, one used: a guest that hangs after it booted is a defect, not
    // MTTCG's boot-time race, and is not retried
    failed_boot("hang", 2, 60);
    let log = try_log("hang", 1);
    assert!(
        try_log("hang", 2).is_empty(),
        "a guest that hung after it booted must not be booted again"
    );
    assert!(
        log.contains("=== tt-vm: boot"),
        "the guest booted before hanging"
    );
    assert!(
        !log.contains("=== tt-vm: done"),
        "a hung guest cannot have completed"
    );
}

/// A scratch tree for run.sh without a VM: a kernel and an initramfs that only need to exist,
/// and a stand-in `qemu-system-x86_64` first on PATH whose "guest" boots, sends the files of
/// `guest_out/` with the guest's own `send_out_files` (tests/vm/guest/lib.sh) to the file of
/// QEMU's second serial port, and completes with exit code 0.
struct FakeQemu {
    root: PathBuf,
}

const FAKE_QEMU: &str = r#"#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in
    -chardev) serial=${2##*path=}; shift 2 ;;
    *) shift ;;
  esac
done
echo "=== tt-vm: boot kernel=fake"
. "$FAKE_GUEST_LIB"
OUT=$FAKE_GUEST_OUT TT_FILES_TTY=$serial
send_out_files
echo "=== tt-vm: done rc=0"
"#;

impl FakeQemu {
    fn new(name: &str) -> FakeQemu {
        use std::os::unix::fs::PermissionsExt;
        let root = crate::common::temp_dir("runsh", name);
        for dir in ["cache/kernel", "vm/runs", "bin", "guest_out"] {
            std::fs::create_dir_all(root.join(dir)).expect("mkdir");
        }
        std::fs::write(root.join("cache/kernel/vmlinuz"), "").expect("write");
        std::fs::write(root.join("vm/initrd.cpio"), "").expect("write");
        let qemu = root.join("bin/qemu-system-x86_64");
        std::fs::write(&qemu, FAKE_QEMU).expect("write");
        std::fs::set_permissions(&qemu, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        FakeQemu { root }
    }

    /// run.sh --scenario fake --out OUT: its exit code and stderr.
    fn run_sh(&self, out: &Path) -> (Option<i32>, String) {
        let path = format!(
            "{}:{}",
            self.root.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = Command::new("bash")
            .arg(harness::repo().join("tests/vm/run.sh"))
            .args([
                "--scenario",
                "fake",
                "--tries",
                "1",
                "--timeout-s",
                "30",
                "--out",
            ])
            .arg(out)
            .env("PATH", path)
            .env("SCX_TT_CACHE", self.root.join("cache"))
            .env("SCX_TT_VM_DIR", self.root.join("vm"))
            .env("SCX_TT_VM_NICE", "0")
            .env(
                "FAKE_GUEST_LIB",
                harness::repo().join("tests/vm/guest/lib.sh"),
            )
            .env("FAKE_GUEST_OUT", self.root.join("guest_out"))
            .output()
            .expect("running run.sh");
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        println!(
            "run.sh --out {}: {:?}\n{stderr}",
            out.display(),
            o.status.code()
        );
        (o.status.code(), stderr)
    }
}

impl Drop for FakeQemu {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn files_arrive_byte_identical_through_run_sh_without_a_vm() {
    let f = FakeQemu::new("xfer");
    for (name, bytes) in TRANSFER {
        std::fs::write(f.root.join("guest_out").join(name), bytes).expect("write");
    }
    // over lib.sh's GZ_MIN_BYTES: sent gzip'd in base64; every byte value, \r\n and \0
    // included, and no newline at the end
    let big: Vec<u8> = (0..70_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(f.root.join("guest_out/xfer_big.bin"), &big).expect("write");
    let out = f.root.join("run");
    assert_eq!(f.run_sh(&out).0, Some(0), "the fake guest completed");
    assert_transferred_exactly(&out.join("files"));
    let got = std::fs::read(out.join("files/xfer_big.bin")).expect("xfer_big.bin arrived");
    assert!(
        got == big,
        "xfer_big.bin changed on its way ({} of {} bytes)",
        got.len(),
        big.len()
    );
    let serial = std::fs::read_to_string(out.join("try-1.serial1.raw")).unwrap_or_default();
    assert!(
        serial.contains("=== tt-file xfer_big.bin begin gz64"),
        "the big file went compressed"
    );
    assert!(
        !out.join("files/xfer_big.bin.gz64").exists(),
        "the decoded file's base64 is removed"
    );
}

#[test]
fn run_sh_refuses_an_out_dir_it_did_not_make() {
    let f = FakeQemu::new("refuse");
    let mine = f.root.join("mine");
    std::fs::create_dir_all(&mine).expect("mkdir");
    std::fs::write(mine.join("keep.txt"), "precious").expect("write");
    let (code, err) = f.run_sh(&mine);
    assert_eq!(code, Some(2), "a foreign non-empty --out is refused");
    assert!(
        err.contains(&format!("--out {} exists, is not empty", mine.display()))
            && err.contains(".tt-vm-run")
            && err.contains("refusing to delete it"),
        "the message names the directory and the rule: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("keep.txt"))
            .ok()
            .as_deref(),
        Some("precious"),
        "the refused directory is untouched"
    );
    assert!(
        !mine.join("try-1.console.log").exists(),
        "no guest was booted"
    );

    let file = f.root.join("a-file");
    std::fs::write(&file, "not a directory").expect("write");
    let (code, err) = f.run_sh(&file);
    assert_eq!(code, Some(2), "a file as --out is refused");
    assert!(err.contains("exists and is not a directory"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&file).ok().as_deref(),
        Some("not a directory")
    );
}

#[test]
fn run_sh_replaces_its_own_run_dirs_and_uses_empty_ones() {
    let f = FakeQemu::new("replace");
    // An empty directory is used, and gets the marker.
    let out = f.root.join("empty");
    std::fs::create_dir_all(&out).expect("mkdir");
    assert_eq!(f.run_sh(&out).0, Some(0));
    assert!(
        out.join(".tt-vm-run").is_file(),
        "the run directory is marked"
    );
    assert!(out.join("scenario.rc").is_file());
    // A marked directory (the run above) is replaced: what an earlier run left is gone.
    std::fs::write(out.join("stale.txt"), "old").expect("write");
    assert_eq!(
        f.run_sh(&out).0,
        Some(0),
        "a marked run directory is replaced"
    );
    assert!(
        !out.join("stale.txt").exists(),
        "the earlier run's files are gone"
    );
    assert!(out.join(".tt-vm-run").is_file());
    // A directory inside the run directories ($SCX_TT_VM_DIR/runs) is the harness's own even
    // without the marker (runs older than it).
    let old = f.root.join("vm/runs/old");
    std::fs::create_dir_all(&old).expect("mkdir");
    std::fs::write(old.join("console.log"), "old run").expect("write");
    assert_eq!(
        f.run_sh(&old).0,
        Some(0),
        "a default run directory is replaced"
    );
    assert_eq!(
        std::fs::read_to_string(old.join("console.log"))
            .unwrap_or_default()
            .lines()
            .next(),
        Some("=== tt-vm: boot kernel=fake"),
        "the old console log was replaced by the new run's"
    );
    assert!(old.join(".tt-vm-run").is_file());
}

#[test]
fn mkinitrd_refuses_a_wrong_extra_path_naming_it() {
    let cargo_toml = harness::repo().join("Cargo.toml");
    let file = cargo_toml.display().to_string();
    let vm_dir = std::env::temp_dir().join(format!("scx_tt-mkinitrd-{}", std::process::id()));
    for (extra, want) in [
        (
            "/nonexistent/tool:/usr/bin/tool".to_string(),
            "host path '/nonexistent/tool' does not exist".to_string(),
        ),
        (
            format!("{file}:relative/x"),
            "guest path 'relative/x' must be absolute".to_string(),
        ),
        (
            format!("{file}:/a/../b"),
            "guest path '/a/../b' must be".to_string(),
        ),
        (format!("{file}:/"), "guest path '/' must be".to_string()),
        (
            file.clone(),
            format!("entry '{file}' is not HOSTPATH:GUESTPATH"),
        ),
    ] {
        let out = Command::new("bash")
            .arg(harness::repo().join("tests/vm/mkinitrd.sh"))
            .arg("--out")
            .arg(vm_dir.join("initrd.cpio"))
            .env("SCX_TT_VM_DIR", &vm_dir)
            .env("SCX_TT_INITRD_EXTRA", format!("{file}:/tt/ok.toml {extra}"))
            .output()
            .expect("running mkinitrd.sh");
        let err = String::from_utf8_lossy(&out.stderr);
        println!("SCX_TT_INITRD_EXTRA={extra}: {:?} {err}", out.status.code());
        assert_eq!(out.status.code(), Some(1), "{extra}: {err}");
        assert!(err.contains(&want), "{extra}: the message names it: {err}");
        assert!(
            !vm_dir.join("initrd.cpio").exists(),
            "nothing is built after a wrong entry"
        );
    }
    let _ = std::fs::remove_dir_all(&vm_dir);
}

/// scx_tt ran on this kernel for a second, and its start-up notes name exactly the ops flags
/// that bpftool does not find in the kernel's BTF (src/sched/kernel.rs `notes`); the kfunc of
/// the frequency targets is printed (every kernel of the matrix has it).
fn kernel_notes(out: &VmOutput) {
    let err = out.file("run.err").unwrap_or_default();
    println!(
        "  kernel {:?}: scx_tt's notes: {:?}",
        out.result("kernel_release"),
        err.lines()
            .filter(|l| l.starts_with("scx_tt: note: kernel"))
            .collect::<Vec<_>>()
    );
    assert!(
        out.rc("run") == "0" && out.result("run_state") == Ok("disabled"),
        "scx_tt's 1 s run: exit code {}, sched_ext {:?} after it; stderr:\n{err}",
        out.rc("run"),
        out.result("run_state")
    );
    let release = out.result("kernel_release").unwrap_or("?");
    // a note where the kernel has a local-DSQ shortcut the flag would turn off: exiting tasks
    // (every kernel with sched_ext); the migration-disabled shortcut came with its flag, so a
    // kernel without that flag (6.12) calls ops.enqueue for such tasks and gets no note
    for (flag, note_when_missing) in [
        ("SCX_OPS_ENQ_EXITING", true),
        ("SCX_OPS_ENQ_MIGRATION_DISABLED", false),
    ] {
        let in_btf = out.result(&format!("btf_{flag}"));
        let noted = err.contains(&format!("note: kernel {release} lacks {flag}:"));
        assert!(
            in_btf.is_ok() && noted == (note_when_missing && in_btf == Ok("no")),
            "{flag}: bpftool finds it in the BTF: {in_btf:?}; scx_tt notes it missing: {noted}"
        );
    }
    println!(
        "  scx_bpf_cpuperf_set in the BTF: {:?}",
        out.result("btf_scx_bpf_cpuperf_set")
    );
}

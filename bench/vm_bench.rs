//! What the benchmarks that boot the VM share (`lateness`, `demos_lateness`): the run length,
//! the boot itself, and the host facts printed beside the numbers.

use crate::harness::{Vm, VmOutput};
use std::process::Command;

/// Seconds per measured run: `SCX_TT_BENCH_DURATION_S`, 10 by default.
pub fn duration_s() -> u64 {
    std::env::var("SCX_TT_BENCH_DURATION_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

/// Boots guest scenario `scenario` with `-smp 2` for `duration_s` per run; exits 1 naming the
/// benchmark when the VM fails.
pub fn boot(bench: &str, scenario: &str, duration_s: u64, timeout_s: u32) -> VmOutput {
    match Vm::new(scenario)
        .smp(2)
        .timeout_s(timeout_s)
        .arg("duration_s", duration_s)
        .run()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("bench {bench}: {e}");
            std::process::exit(1);
        }
    }
}

/// The first line of a command's output, trimmed (or why it could not run).
pub fn sh(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .unwrap_or_else(|e| format!("({cmd}: {e})"))
}

/// The version line of the QEMU that run.sh boots the VMs with (tests/vm/common.sh `qemu_bin`:
/// the backport qemu.sh fetched, else the host's).
pub fn qemu_version() -> String {
    let common = crate::harness::repo().join("tests/vm/common.sh");
    let script = format!("source '{}' && \"$(qemu_bin)\" --version", common.display());
    sh("bash", &["-c", &script])
}

/// The host's load averages (1, 5, 15 min).
pub fn load() -> String {
    let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

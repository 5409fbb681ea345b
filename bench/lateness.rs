//! Slot-start lateness benchmark (issue 3 item 7, issue 32 item 5): in one VM (`-smp 2`, TCG),
//! scx_tt's slot clocks (the bpf_timer and the helper-thread clock; only the latter on a
//! PREEMPT_RT kernel) and the userspace time-triggered baseline (`tt_timer_baseline`: a SCHED_FIFO thread
//! sleeping with clock_nanosleep TIMER_ABSTIME on the same slot grid) at 1 ms and 10 ms slots,
//! both on CPU 1 with CPU 1 kept busy. Prints lateness p50/p99/max side by side with the
//! ratio baseline / BPF (the figure of merit: > 1 means the BPF timer starts slots earlier), and
//! the BPF time per tick from kernel.bpf_stats_enabled (run_time_ns / run_cnt, reported by
//! scx_tt as bpf_tick_ns_avg), and the helper thread's CPU time per slot. Writes the table to
//! bench/results/lateness.txt, or lateness-KERNEL.txt under SCX_TT_VM_KERNEL=KERNEL.
//!
//! Run: `make bench-lateness` (boots the VM; needs the kernel and initramfs of `make vm-initrd`).
//! The guest side is tests/vm/scenarios/lateness/ (guest.sh and the two plans).
//! Environment: SCX_TT_BENCH_DURATION_S (default 10 s per measurement).

#[path = "../tests/vm/harness/mod.rs"]
mod harness;
#[path = "vm_bench.rs"]
mod vm_bench;
// the harness's control-run checks call the witness
#[path = "../tests/vm/witness/mod.rs"]
#[allow(dead_code)]
mod witness;

use harness::{us, Summary};
use serde::Deserialize;
use std::fmt::Write as _;
use vm_bench::{load, sh};

#[derive(Deserialize)]
struct Baseline {
    ticks: u64,
    missed: u64,
    late_ns: Late,
}

#[derive(Deserialize)]
struct Late {
    p50: i64,
    p99: i64,
    max: i64,
}

/// One entry of `bpftool -j prog show` (run_* only with kernel.bpf_stats_enabled=1).
#[derive(Deserialize)]
struct Prog {
    id: u64,
    #[serde(default)]
    name: String,
    #[serde(default)]
    run_time_ns: u64,
    #[serde(default)]
    run_cnt: u64,
}

const SLOTS_US: [u64; 2] = [1_000, 10_000];
const MEASURED_CPU: u32 = 1;

fn ratio(base: i64, bpf: i64) -> String {
    if bpf <= 0 {
        "-".into()
    } else {
        format!("{:.1}x", base as f64 / bpf as f64)
    }
}

/// Per-program BPF run time between the two bpftool snapshots of one slot length, and the total
/// per slot (all CPUs) and as a share of one CPU.
fn bpf_programs(out: &harness::VmOutput, clock: &str, slot_us: u64) -> Result<String, String> {
    let a: Vec<Prog> = out.json(&format!("bpf_{clock}_{slot_us}_a.json"))?;
    let b: Vec<Prog> = out.json(&format!("bpf_{clock}_{slot_us}_b.json"))?;
    let window_ms = out
        .number(&format!("bpf_{clock}_{slot_us}_window_ms"))?
        .max(1) as u64;
    let slots = (window_ms * 1000 / slot_us).max(1);
    let mut t = String::new();
    let mut total_ns = 0;
    for p in b.iter().filter(|p| p.run_cnt > 0) {
        let (t0, c0) = a
            .iter()
            .find(|q| q.id == p.id)
            .map_or((0, 0), |q| (q.run_time_ns, q.run_cnt));
        let (dt, dc) = (
            p.run_time_ns.saturating_sub(t0),
            p.run_cnt.saturating_sub(c0),
        );
        if dc == 0 {
            continue;
        }
        total_ns += dt;
        let avg = dt as f64 / dc as f64;
        let _ = writeln!(
            t,
            "  {clock:<5} {slot_us:>6} us slots  {:<24} {dc:>8} runs  {avg:>8.0} ns/run",
            p.name
        );
    }
    let _ = writeln!(
        t,
        "  {clock:<5} {slot_us:>6} us slots  total {:.0} ns of BPF per slot ({slots} slots in {window_ms} ms), {:.2} % of one CPU",
        total_ns as f64 / slots as f64,
        100.0 * total_ns as f64 / (window_ms as f64 * 1e6)
    );
    if total_ns == 0 {
        return Err(format!("{t}no BPF run time recorded (bpf_stats_enabled?)"));
    }
    Ok(t)
}

/// A slot clock the guest measured (result `clocks`), as the table names it.
fn clock_label(clock: &str) -> &'static str {
    match clock {
        "timer" => "scx_tt bpf_timer clock",
        "rt" => "scx_tt helper-thread clock",
        _ => "scx_tt ?",
    }
}

/// The helper thread's CPU time per slot over the bpftool window (`rt` clock only).
fn thread_ns_per_slot(out: &harness::VmOutput, clock: &str, slot_us: u64) -> Option<f64> {
    if clock != "rt" {
        return None;
    }
    let a = out.number(&format!("rt_{slot_us}_thread_ns_a")).ok()?;
    let b = out.number(&format!("rt_{slot_us}_thread_ns_b")).ok()?;
    let window_ms = out
        .number(&format!("bpf_rt_{slot_us}_window_ms"))
        .ok()?
        .max(1) as u64;
    let slots = (window_ms * 1000 / slot_us).max(1);
    (a > 0 && b > a).then(|| (b - a) as f64 / slots as f64)
}

fn main() {
    // `cargo bench` passes --bench; this benchmark takes no arguments.
    let duration_s = vm_bench::duration_s();
    let load_before = load();
    let kernel_name = std::env::var("SCX_TT_VM_KERNEL").unwrap_or_else(|_| "default".into());
    let out = vm_bench::boot("lateness", "lateness", duration_s, 420);
    let guest = out
        .console
        .lines()
        .find_map(|l| l.split("kernel=").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or("?")
        .to_string();
    let clocks: Vec<String> = out
        .result("clocks")
        .unwrap_or("timer")
        .split_whitespace()
        .map(str::to_string)
        .collect();

    let mut t = String::new();
    let _ = writeln!(
        t,
        "slot-start lateness: scx_tt's slot clocks vs userspace SCHED_FIFO timer (same VM, same CPU)"
    );
    let _ = writeln!(
        t,
        "host: {} cores, kernel {}, {}; guest: -smp 2 {}, kernel {guest} (SCX_TT_VM_KERNEL={kernel_name}); {duration_s} s per row; CPU {MEASURED_CPU} busy",
        sh("nproc", &[]),
        sh("uname", &["-r"]),
        vm_bench::qemu_version(),
        std::env::var("SCX_TT_VM_ACCEL").unwrap_or_else(|_| "tcg,thread=multi".into()),
    );
    let _ = writeln!(
        t,
        "run: SCX_TT_VM_KERNEL={kernel_name} make bench-lateness   ({}); host load average before {load_before}, after {}",
        sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        load()
    );
    let _ = writeln!(
        t,
        "goal: ratio baseline/scx_tt >= 1 at p50 and p99 (scx_tt's clock starts slots no later);\n\
         BPF ns/tick: scx_tt's own time per tick event; thread ns/slot: the helper thread's CPU\n\
         time per slot (wake-up, test run of rt_tick, sleep), the helper-thread clock's whole cost\n"
    );
    let _ = writeln!(
        t,
        "{:<6} {:<28} {:>7} {:>7} {:>10} {:>10} {:>10} {:>12} {:>14}",
        "slot",
        "path",
        "ticks",
        "missed",
        "p50 us",
        "p99 us",
        "max us",
        "BPF ns/tick",
        "thread ns/slot"
    );
    let mut failed = false;
    for slot in SLOTS_US {
        let label = format!("{} ms", slot as f64 / 1000.0);
        let base: Result<Baseline, String> = out.json(&format!("baseline_{slot}.json"));
        let base = match base {
            Ok(b) => b,
            Err(e) => {
                let _ = writeln!(t, "{slot} us: no baseline figures: {e}");
                failed = true;
                continue;
            }
        };
        let b = &base.late_ns;
        for clock in &clocks {
            let bpf: Result<Summary, String> = out.summary(&format!("bpf_{clock}_{slot}.json"));
            let bpf = match bpf {
                Ok(s) => s,
                Err(e) => {
                    let _ = writeln!(t, "{slot} us, clock {clock}: no figures: {e}");
                    failed = true;
                    continue;
                }
            };
            let Some(cpu) = bpf.cpus.iter().find(|c| c.cpu == MEASURED_CPU) else {
                let _ = writeln!(
                    t,
                    "{slot} us, clock {clock}: scx_tt reported no CPU {MEASURED_CPU}"
                );
                failed = true;
                continue;
            };
            let l = &cpu.late_ns;
            let thread = thread_ns_per_slot(&out, clock, slot)
                .map_or_else(|| "-".to_string(), |ns| format!("{ns:.0}"));
            if clock == "rt" && thread == "-" {
                failed = true;
            }
            let _ = writeln!(
                t,
                "{label:<6} {:<28} {:>7} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>12.0} {:>14}",
                clock_label(clock),
                cpu.ticks,
                "-",
                us(l.p50),
                us(l.p99),
                us(l.max),
                cpu.bpf_tick_ns_avg,
                thread
            );
            let _ = writeln!(
                t,
                "{label:<6} {:<28} {:>7} {:>7} {:>10} {:>10} {:>10}",
                format!("  ratio baseline/{clock}"),
                "",
                "",
                ratio(b.p50, l.p50),
                ratio(b.p99, l.p99),
                ratio(b.max, l.max)
            );
        }
        let _ = writeln!(
            t,
            "{label:<6} {:<28} {:>7} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>12} {:>14}",
            "userspace FIFO timer",
            base.ticks,
            base.missed,
            us(b.p50),
            us(b.p99),
            us(b.max),
            "-",
            "-"
        );
    }
    if clocks.iter().any(|c| c == "rt") {
        let source = match out.result("thread_time_source") {
            Ok("schedstat") => "exact run time (/proc/PID/task/TID/schedstat)",
            Ok("stat") => {
                "utime + stime of /proc/PID/task/TID/stat, sampled at the scheduler tick (this \
                 kernel has no CONFIG_SCHED_INFO): a coarse figure"
            }
            _ => "not measured",
        };
        let _ = writeln!(t, "thread ns/slot: {source}");
    }
    let _ = writeln!(
        t,
        "\nBPF programs over a steady-state window (bpftool, run_time_ns / run_cnt):"
    );
    for clock in &clocks {
        for slot in SLOTS_US {
            match bpf_programs(&out, clock, slot) {
                Ok(text) => t.push_str(&text),
                Err(e) => {
                    let _ = writeln!(t, "{clock} {slot} us: {e}");
                    failed = true;
                }
            }
        }
    }
    print!("{t}");
    let file = if kernel_name == "default" {
        "lateness.txt".to_string()
    } else {
        format!("lateness-{kernel_name}.txt")
    };
    let path = harness::repo().join("bench/results").join(file);
    if let Err(e) = std::fs::write(&path, &t) {
        eprintln!("bench lateness: writing {}: {e}", path.display());
        failed = true;
    } else {
        println!("written to {}", path.display());
    }
    if failed {
        std::process::exit(1);
    }
}

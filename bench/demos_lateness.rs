//! DEmOS comparison (issue 18 item 6): window-start lateness of scx_tt beside a DEmOS-like
//! userspace window switcher, on the same DEmOS configuration, in one VM run (`-smp 2`, TCG),
//! both judged by the kernel's own sched_switch trace (the witness, tests/vm/witness/).
//!
//! The configuration is tests/vm/scenarios/demos_lateness/demos.yaml (windows of 10 and 5 ms on
//! CPU 1, SC processes of 3 + 2 and 4 ms, BE filling the rest). In the guest
//! (tests/vm/scenarios/demos_lateness/guest.sh) it is imported with `scx_tt plan import --demos`
//! and run by scx_tt (once with its default guard band, once with `--guard-us 0`), then by
//! `tt_demos_baseline` (src/bin/tt_demos_baseline.rs: a SCHED_FIFO 99 thread sleeping with an
//! absolute clock_nanosleep until each window start and budget end, stopping and starting the
//! processes with the cgroup v2 freezer as DEmOS does, or with SIGSTOP/SIGCONT), with its
//! timer thread on the measured CPU 1 and on CPU 0.
//!
//! Window-start lateness: for each window start `t0 + k * frame + offset` from the second
//! second of a run on (TCG translates new code paths in the first), the time from that nominal
//! start to the first moment the window's first SC process runs on CPU 1 by the witness.
//! Printed per path with p50/p90/p99/max and the ratio baseline / scx_tt (> 1: scx_tt starts
//! windows earlier), with the host, guest kernel and host load; written to
//! bench/results/demos_lateness.txt. docs/demos-comparison.md says what the figures mean.
//!
//! Run: `make bench-demos` (boots the VM; needs `make vm-initrd`). Without the VM,
//! `cargo test --release --bench demos_lateness` checks the analysis on a synthetic
//! sched_switch trace (this target has no test harness: without `--bench`, main runs the
//! checks). Environment: SCX_TT_BENCH_DURATION_S (default 10 s per run).

#[path = "../tests/vm/harness/mod.rs"]
mod harness;
#[path = "vm_bench.rs"]
mod vm_bench;
#[path = "../tests/vm/witness/mod.rs"]
#[allow(dead_code)]
mod witness;

use harness::VmOutput;
use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{simulate, Config, CpuSet, SimOptions};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use vm_bench::{load, sh};
use witness::Segment;

const CONFIG: &str = "tests/vm/scenarios/demos_lateness/demos.yaml";
const CPU: u32 = 1;
/// Window starts before this (ms of schedule time) are not measured: TCG translates the new
/// code paths of a run in its first second.
const SKIP_MS: u64 = 1000;
/// A process whose first run began this long before its window's nominal start counts as
/// early (the trace prints µs; below this, on time).
const EARLY_TOL_NS: u64 = 100_000;

/// A window start to judge: the window's first SC process `pid` should run from `at_ns` until
/// `until_ns` (its part of the window: its budget, by DEmOS's schedule).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Start {
    at_ns: u64,
    until_ns: u64,
    pid: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    /// It first ran this long after the nominal start (0: on time).
    Late(u64),
    /// It first ran this long after the nominal start, after its part of the window was over:
    /// it did not run in this window (a later one's start ended its wait).
    Skipped(u64),
    /// It was already running this long before the nominal start.
    Early(u64),
    /// It never ran on the CPU after the nominal start.
    Missing,
}

/// For each start, when its process first ran on `cpu` at or after it: the first witness
/// segment of the pid on the CPU that ends after the nominal start.
fn lateness(segments: &[Segment], cpu: u32, starts: &[Start]) -> Vec<Outcome> {
    let mut by_pid: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for g in segments.iter().filter(|g| g.cpu == cpu) {
        by_pid.entry(g.pid).or_default().push((g.start, g.end));
    }
    for v in by_pid.values_mut() {
        // one thread's runs on one CPU do not overlap: sorted by start, their ends are sorted
        v.sort_unstable();
    }
    starts
        .iter()
        .map(|s| {
            let Some(runs) = by_pid.get(&s.pid) else {
                return Outcome::Missing;
            };
            match runs.get(runs.partition_point(|&(_, end)| end <= s.at_ns)) {
                None => Outcome::Missing,
                Some(&(start, _)) if start + EARLY_TOL_NS < s.at_ns => {
                    Outcome::Early(s.at_ns - start)
                }
                Some(&(start, _)) if start >= s.until_ns => Outcome::Skipped(start - s.at_ns),
                Some(&(start, _)) => Outcome::Late(start.saturating_sub(s.at_ns)),
            }
        })
        .collect()
}

/// For each start, how long after it the scheduler first got control (`times`: sorted; scx_tt:
/// its BPF timer's hrtimer expiries on the CPU, the baseline: its timer thread switched in), at
/// or after the nominal start less the trace's 1 µs resolution.
fn control(times: &[u64], starts: &[Start]) -> Vec<Option<u64>> {
    starts
        .iter()
        .map(|s| {
            let from = s.at_ns.saturating_sub(1_000);
            times
                .get(times.partition_point(|&t| t < from))
                .map(|&t| t.saturating_sub(s.at_ns))
        })
        .collect()
}

/// A window start of DEmOS's schedule: when (ms), the window's first SC process
/// (`PARTITION.INDEX`, as `plan import --demos` names tasks) and its budget (ms).
type WindowStart = (u64, String, u64);

/// The window starts of `config` up to `until_ms` (schedule time), from DEmOS's own schedule
/// (the simulator's log: the SC process that starts at the window's start).
fn window_starts(config: &Config, cpus: CpuSet, until_ms: u64) -> Result<Vec<WindowStart>, String> {
    let log = simulate(
        config,
        &SimOptions {
            all_cpus: cpus,
            until_ms,
            seed: 5489,
        },
    )?
    .log;
    let frame = config.major_frame_ms().max(1);
    let mut offsets = Vec::new();
    let mut off = 0;
    for w in &config.windows {
        let sc: Vec<&str> = w
            .slices()
            .iter()
            .filter_map(|s| s.sc_partition.as_deref())
            .collect();
        offsets.push((off, sc));
        off += w.length;
    }
    let mut name_of: HashMap<&str, (String, &str)> = HashMap::new();
    for p in &config.partitions {
        for (i, q) in p.processes.iter().enumerate() {
            name_of.insert(q.cmd.as_str(), (format!("{}.{i}", p.name), p.name.as_str()));
        }
    }
    let mut out: Vec<WindowStart> = Vec::new();
    for l in &log {
        let Some((_, sc)) = offsets.iter().find(|(o, _)| *o == l.time_ms % frame) else {
            continue;
        };
        let Some((name, part)) = name_of.get(l.cmd.as_str()) else {
            return Err(format!("log line '{l}': no process has this cmd"));
        };
        if sc.contains(part) && out.last().is_none_or(|(t, _, _)| *t != l.time_ms) {
            out.push((l.time_ms, name.clone(), l.budget));
        }
    }
    Ok(out)
}

/// Nearest-rank percentile of sorted `v`.
fn pct(v: &[u64], p: usize) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v[(v.len() * p).div_ceil(100).clamp(1, v.len()) - 1]
}

/// One measured path: its outcomes, summarised.
struct Row {
    label: String,
    /// Lateness of every start whose process ran (Late and Skipped), sorted.
    late: Vec<u64>,
    skipped: usize,
    early: usize,
    missing: usize,
    /// For the Late starts: until the scheduler got control, and from then until the process
    /// ran (sorted each).
    control: Vec<u64>,
    after: Vec<u64>,
}

impl Row {
    fn new(label: String, outcomes: &[Outcome], controls: &[Option<u64>]) -> Row {
        let mut late: Vec<u64> = outcomes
            .iter()
            .filter_map(|o| match o {
                Outcome::Late(n) | Outcome::Skipped(n) => Some(*n),
                _ => None,
            })
            .collect();
        late.sort_unstable();
        let (mut control, mut after) = (Vec::new(), Vec::new());
        for (o, c) in outcomes.iter().zip(controls) {
            if let (Outcome::Late(n), Some(c)) = (o, c) {
                if c <= n {
                    control.push(*c);
                    after.push(n - c);
                }
            }
        }
        control.sort_unstable();
        after.sort_unstable();
        let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
        Row {
            label,
            late,
            skipped: count(|o| matches!(o, Outcome::Skipped(_))),
            early: count(|o| matches!(o, Outcome::Early(_))),
            missing: count(|o| matches!(o, Outcome::Missing)),
            control,
            after,
        }
    }

    /// p50, p90, p99, max of the lateness.
    fn figs(&self) -> [u64; 4] {
        [
            pct(&self.late, 50),
            pct(&self.late, 90),
            pct(&self.late, 99),
            self.late.last().copied().unwrap_or(0),
        ]
    }
}

/// The baseline's JSON (src/bin/tt_demos_baseline.rs).
#[derive(Deserialize)]
struct Baseline {
    method: String,
    timer_cpu: u32,
    timer_tid: u32,
    t0_ns: u64,
    duration_ms: u64,
    processes: Vec<BaseProc>,
    wake_late_ns: Option<Figs>,
    switch_ns: Option<Figs>,
}

#[derive(Deserialize)]
struct BaseProc {
    name: String,
    pid: u32,
}

#[derive(Deserialize)]
struct Figs {
    p50: u64,
    p99: u64,
    max: u64,
}

/// Where a run's scheduler gets control, by the witness.
enum Control {
    /// scx_tt: its BPF timer's hrtimer expiries on the CPU.
    BpfTimer(u32),
    /// The baseline: its timer thread switched in on its CPU.
    Thread { tid: u32, cpu: u32 },
}

/// One run to judge: its witness's name, its time 0, its end and the pid of each process.
struct Run<'a> {
    name: &'a str,
    t0_ns: u64,
    end_ns: u64,
    pid_of: &'a dyn Fn(&str) -> Option<u32>,
    control: Control,
}

/// Judges one run: the lateness of each window start and when its scheduler got control.
fn measure(
    out: &VmOutput,
    run: &Run,
    starts: &[WindowStart],
) -> Result<(Vec<Outcome>, Vec<Option<u64>>), String> {
    let name = run.name;
    let lost = out.number(&format!("{name}_witness_lost"))?;
    if lost != 0 {
        return Err(format!("{name}: the witness lost {lost} events"));
    }
    let events = witness::parse(&out.file(&format!("{name}.witness"))?)?;
    let segments = witness::segments(&events, run.end_ns);
    let mut judged = Vec::new();
    for (t_ms, proc, budget_ms) in starts {
        let at_ns = run.t0_ns + t_ms * 1_000_000;
        // whole windows inside the run only
        if *t_ms < SKIP_MS || at_ns + 20_000_000 > run.end_ns {
            continue;
        }
        let pid = (run.pid_of)(proc).ok_or_else(|| format!("{name}: no pid for process {proc}"))?;
        judged.push(Start {
            at_ns,
            until_ns: at_ns + budget_ms * 1_000_000,
            pid,
        });
    }
    let mut times: Vec<u64> = match run.control {
        Control::BpfTimer(cpu) => events
            .iter()
            .filter(|e| e.cpu == cpu && e.kind == witness::Kind::Timer)
            .map(|e| e.ts_ns)
            .collect(),
        Control::Thread { tid, cpu } => segments
            .iter()
            .filter(|g| g.pid == tid && g.cpu == cpu)
            .map(|g| g.start)
            .collect(),
    };
    times.sort_unstable();
    Ok((lateness(&segments, CPU, &judged), control(&times, &judged)))
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn ratio(base: u64, tt: u64) -> String {
    if tt == 0 {
        "-".into()
    } else {
        format!("{:.1}x", base as f64 / tt as f64)
    }
}

/// The scx_tt runs and the baseline runs of the guest (tests/vm/scenarios/demos_lateness).
const SCX_RUNS: [(&str, &str); 2] = [
    ("scx_guard", "scx_tt (default guard band)"),
    ("scx_noguard", "scx_tt --guard-us 0"),
];
const BASE_RUNS: [&str; 3] = ["freezer_cpu1", "freezer_cpu0", "signals_cpu1"];

fn report(out: &VmOutput, duration_s: u64, load_before: &str) -> Result<(String, bool), String> {
    let config = Config::from_file(&harness::repo().join(CONFIG)).map_err(|e| e.to_string())?;
    let starts = window_starts(&config, CpuSet::from_cpus([CPU]), duration_s * 1000 + 1000)?;
    let guest = out
        .console
        .lines()
        .find_map(|l| l.split("kernel=").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or("?")
        .to_string();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "window-start lateness: scx_tt vs a DEmOS-like userspace switcher (same VM, same config {CONFIG}, CPU {CPU})"
    );
    let _ = writeln!(
        t,
        "host: {} cores, kernel {}, {}; guest: -smp 2 {}, kernel {guest}; {duration_s} s per run; first {SKIP_MS} ms of each run skipped",
        sh("nproc", &[]),
        sh("uname", &["-r"]),
        vm_bench::qemu_version(),
        std::env::var("SCX_TT_VM_ACCEL").unwrap_or_else(|_| "tcg,thread=multi".into()),
    );
    let _ = writeln!(
        t,
        "run: make bench-demos   ({}); host load average before {load_before}, after {}",
        sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        load()
    );
    let _ = writeln!(
        t,
        "lateness: nominal window start -> the window's first SC process first runs on CPU {CPU}, by the kernel's sched_switch trace\n"
    );
    let _ = writeln!(
        t,
        "{:<44} {:>6} {:>5} {:>5} {:>5} {:>9} {:>9} {:>9} {:>9}",
        "path", "starts", "skip", "early", "never", "p50 us", "p90 us", "p99 us", "max us"
    );
    let mut failed = false;
    let mut rows: Vec<Row> = Vec::new();
    let mut notes = String::new();
    for (run, label) in SCX_RUNS {
        let s = out.summary(&format!("{run}.json"))?;
        let pid_of = |n: &str| {
            s.tasks
                .iter()
                .find(|t| t.name == n)
                .and_then(|t| t.tids.first().copied())
        };
        let (o, c) = measure(
            out,
            &Run {
                name: run,
                t0_ns: s.t0_ns,
                end_ns: s.t0_ns + s.duration_ns,
                pid_of: &pid_of,
                control: Control::BpfTimer(CPU),
            },
            &starts,
        )?;
        let guard = s.guard.as_ref().map_or("?".into(), |g| g.us.to_string());
        if let Some(c) = s.cpus.iter().find(|c| c.cpu == CPU) {
            let _ = writeln!(
                notes,
                "  {label}: guard {guard} us; its own slot-timer lateness p50 {:.1} us, p99 {:.1} us, max {:.1} us; {} ns BPF per tick",
                harness::us(c.late_ns.p50),
                harness::us(c.late_ns.p99),
                harness::us(c.late_ns.max),
                c.bpf_tick_ns_avg as u64
            );
        }
        rows.push(Row::new(format!("{label} (guard {guard} us)"), &o, &c));
    }
    for run in BASE_RUNS {
        let b: Baseline = out.json(&format!("{run}.json"))?;
        let pid_of = |n: &str| b.processes.iter().find(|p| p.name == n).map(|p| p.pid);
        let (o, c) = measure(
            out,
            &Run {
                name: run,
                t0_ns: b.t0_ns,
                end_ns: b.t0_ns + b.duration_ms * 1_000_000,
                pid_of: &pid_of,
                control: Control::Thread {
                    tid: b.timer_tid,
                    cpu: b.timer_cpu,
                },
            },
            &starts,
        )?;
        let label = format!(
            "DEmOS-like, {}, timer FIFO 99 on CPU {}",
            b.method, b.timer_cpu
        );
        if let (Some(w), Some(s)) = (&b.wake_late_ns, &b.switch_ns) {
            let _ = writeln!(
                notes,
                "  {label}: timer wake-up late p50 {:.1} p99 {:.1} max {:.1} us; stop+start calls p50 {:.1} p99 {:.1} max {:.1} us",
                us(w.p50), us(w.p99), us(w.max), us(s.p50), us(s.p99), us(s.max)
            );
        }
        rows.push(Row::new(label, &o, &c));
    }
    for r in &rows {
        let f = r.figs();
        let _ = writeln!(
            t,
            "{:<44} {:>6} {:>5} {:>5} {:>5} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            r.label,
            r.late.len() + r.early + r.missing,
            r.skipped,
            r.early,
            r.missing,
            us(f[0]),
            us(f[1]),
            us(f[2]),
            us(f[3])
        );
        failed |= r.late.len() < 100 || r.missing > 0;
    }
    let _ = writeln!(
        t,
        "\nratio DEmOS-like / scx_tt (> 1: scx_tt starts windows earlier); lateness, then its switch part (below):"
    );
    for b in &rows[SCX_RUNS.len()..] {
        for s in &rows[..SCX_RUNS.len()] {
            let (fb, fs) = (b.figs(), s.figs());
            let _ = writeln!(
                t,
                "  {:<44} / {:<36} p50 {:>5} p90 {:>5} p99 {:>5} max {:>5} | switch p50 {:>5} p99 {:>5}",
                b.label,
                s.label,
                ratio(fb[0], fs[0]),
                ratio(fb[1], fs[1]),
                ratio(fb[2], fs[2]),
                ratio(fb[3], fs[3]),
                ratio(pct(&b.after, 50), pct(&s.after, 50)),
                ratio(pct(&b.after, 99), pct(&s.after, 99))
            );
        }
    }
    let _ = writeln!(
        t,
        "\nwhere the time goes (starts not skipped), by the witness: nominal start -> the scheduler got control\n\
         (scx_tt: its BPF timer's hrtimer expired on CPU {CPU}; DEmOS-like: its timer thread switched in) -> the SC process ran"
    );
    let _ = writeln!(
        t,
        "{:<44} {:>12} {:>12} {:>12} {:>12}",
        "path", "control p50", "control p99", "switch p50", "switch p99"
    );
    for r in &rows {
        let _ = writeln!(
            t,
            "{:<44} {:>9.1} us {:>9.1} us {:>9.1} us {:>9.1} us",
            r.label,
            us(pct(&r.control, 50)),
            us(pct(&r.control, 99)),
            us(pct(&r.after, 50)),
            us(pct(&r.after, 99))
        );
    }
    let _ = write!(t, "\nthe schedulers' own views (not the witness):\n{notes}");
    Ok((t, failed))
}

/// The analysis on a synthetic trace (`cargo test --bench demos_lateness`), CPU 1 judged
/// (`s` = 10 s; a start's process should run from its time until its `until`):
/// 1. at s, pid 20 (until s+3 ms), first runs at s+250 us: late 250 us;
/// 2. at s+10 ms, pid 30, running since s+9.5 ms: early 500 us;
/// 3. at s+11 ms, pid 20 (until s+14 ms), runs on CPU 0 from exactly then (not the judged CPU)
///    and on CPU 1 from s+13 ms: late 2000 us;
/// 4. at s+14 ms, pid 30, which never runs on CPU 1 again: never;
/// 5. at s+13 ms, pid 20, running from s+13 ms (then switched away and back): late 0;
/// 6. at s+11 ms, pid 20 with until s+12 ms: its first run at s+13 ms is past it: skipped
///    (2000 us).
///
/// The scheduler's timer fires at s+100 us, s+10.05 ms and s+12.999 ms: control after 100 us
/// (1), 50 us (2), 1999 us (3, 6), none (4), 0 (5: 1 us before the start, the trace's
/// resolution). By hand, the row: late (ran) 0, 250, 2000, 2000 us: p50 (rank 2) 250 us, p90
/// (rank 4) 2000 us; skipped 1, early 1, never 1; control of the late ones 0, 100, 1999 us,
/// switch after it 0, 1, 150 us.
fn self_check() -> Result<(), String> {
    let sw = |us: u64, cpu: u32, prev: u32, next: u32| {
        format!(
            "  x-1 [{cpu:03}] d..2. {}.{:06}: sched_switch: prev_comm=p{prev} prev_pid={prev} prev_prio=120 prev_state=R ==> next_comm=p{next} next_pid={next} next_prio=120",
            us / 1_000_000,
            us % 1_000_000
        )
    };
    let s = 10_000_000; // 10 s in us
    let trace = [
        sw(s - 5_000, 1, 0, 40),  // be (40) runs on CPU 1
        sw(s + 250, 1, 40, 20),   // SC 20 at +250 us
        sw(s + 3_000, 1, 20, 40), // be again
        sw(s + 9_500, 1, 40, 30), // 30 starts 500 us before its window
        sw(s + 11_000, 0, 0, 20), // 20 on CPU 0 only
        sw(s + 11_500, 0, 20, 0),
        sw(s + 11_600, 1, 30, 40),
        sw(s + 13_000, 1, 40, 20), // on time
        sw(s + 13_200, 1, 20, 0),
        sw(s + 13_400, 1, 0, 20),
    ]
    .join("\n");
    let events = witness::parse(&trace)?;
    let segments = witness::segments(&events, (s + 20_000) * 1000);
    let at = |us: u64, until_us: u64, pid: u32| Start {
        at_ns: us * 1000,
        until_ns: until_us * 1000,
        pid,
    };
    let starts = [
        at(s, s + 3_000, 20),
        at(s + 10_000, s + 13_000, 30),
        at(s + 11_000, s + 14_000, 20),
        at(s + 14_000, s + 17_000, 30),
        at(s + 13_000, s + 16_000, 20),
        at(s + 11_000, s + 12_000, 20),
    ];
    let got = lateness(&segments, 1, &starts);
    let want = [
        Outcome::Late(250_000),
        Outcome::Early(500_000),
        Outcome::Late(2_000_000),
        Outcome::Missing,
        Outcome::Late(0),
        Outcome::Skipped(2_000_000),
    ];
    if got != want {
        return Err(format!("lateness: got {got:?}, want {want:?}"));
    }
    let timers = [(s + 100) * 1000, (s + 10_050) * 1000, (s + 12_999) * 1000];
    let c = control(&timers, &starts);
    let want_c = [
        Some(100_000),
        Some(50_000),
        Some(1_999_000),
        None,
        Some(0),
        Some(1_999_000),
    ];
    if c != want_c {
        return Err(format!("control: got {c:?}, want {want_c:?}"));
    }
    let r = Row::new("x".into(), &got, &c);
    let row = (
        r.late.as_slice(),
        (r.skipped, r.early, r.missing),
        r.figs(),
        r.control.as_slice(),
        r.after.as_slice(),
    );
    let want_row = (
        &[0, 250_000, 2_000_000, 2_000_000][..],
        (1, 1, 1),
        [250_000, 2_000_000, 2_000_000, 2_000_000],
        &[0, 100_000, 1_999_000][..],
        &[0, 1_000, 150_000][..],
    );
    if row != want_row {
        return Err(format!("row: got {row:?}, want {want_row:?}"));
    }
    // the window starts of the bench's configuration, by hand: windows at 0 and 10 ms of each
    // 15 ms frame, first SC processes SC1.0 and SC2.0
    let config = Config::from_file(&harness::repo().join(CONFIG)).map_err(|e| e.to_string())?;
    let ws = window_starts(&config, CpuSet::from_cpus([CPU]), 45)?;
    let want: Vec<WindowStart> = [
        (0, "SC1.0", 3),
        (10, "SC2.0", 4),
        (15, "SC1.0", 3),
        (25, "SC2.0", 4),
        (30, "SC1.0", 3),
        (40, "SC2.0", 4),
        (45, "SC1.0", 3),
    ]
    .iter()
    .map(|(t, n, b)| (*t, n.to_string(), *b))
    .collect();
    if ws != want {
        return Err(format!("window starts: got {ws:?}, want {want:?}"));
    }
    Ok(())
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        match self_check() {
            Ok(()) => {
                println!("demos_lateness: analysis checks passed (synthetic trace, window starts)")
            }
            Err(e) => {
                eprintln!("demos_lateness: analysis check failed: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let duration_s = vm_bench::duration_s();
    let load_before = load();
    let out = vm_bench::boot("demos_lateness", "demos_lateness", duration_s, 600);
    let (t, mut failed) = match report(&out, duration_s, &load_before) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench demos_lateness: {e} (files in {})", out.dir.display());
            std::process::exit(1);
        }
    };
    print!("{t}");
    let path = harness::repo().join("bench/results/demos_lateness.txt");
    if let Err(e) = std::fs::write(&path, &t) {
        eprintln!("bench demos_lateness: writing {}: {e}", path.display());
        failed = true;
    } else {
        println!("written to {}", path.display());
    }
    if failed {
        eprintln!(
            "bench demos_lateness: fewer than 100 judged window starts or starts that never ran"
        );
        std::process::exit(1);
    }
}

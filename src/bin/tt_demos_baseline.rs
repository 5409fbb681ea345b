//! tt_demos_baseline: a DEmOS-like userspace window switcher, the baseline of the DEmOS
//! comparison (bench/demos_lateness.rs, docs/demos-comparison.md).
//!
//! DEmOS (seed 002, its thesis §3.5.2, §4.2, §4.6) runs as one real-time process: a timer
//! (`timerfd` through libev, absolute on the steady clock) wakes it at each window start and
//! each budget end; it then freezes the processes that must stop (a cgroup v2 freezer per
//! process, `cgroup.freeze`) and thaws the one that must run. This program does the same job on
//! the same configuration:
//!
//! 1. it loads the DEmOS YAML and computes the schedule with scx_tt's DEmOS simulator
//!    (`scx_tt::demos::simulate`, checked against DEmOS's golden logs): every process start
//!    with its budget; a process runs until its budget ends, the next start on its CPUs or its
//!    window's end, whichever comes first ([`runs`]), which gives the switch actions at each
//!    instant, stops before starts, as DEmOS stops a window before it starts the next
//!    ([`actions`]);
//! 2. it spawns every process of the configuration (`/bin/sh -c CMD`, in the configuration's
//!    folder when `set_cwd`), pinned to the CPUs of the slices its partition runs in (DEmOS:
//!    a cpuset cgroup), and stops them all;
//! 3. its main thread becomes SCHED_FIFO 99 (DEmOS: "real-time priority"), pinned to
//!    `--timer-cpu`, with its memory locked, and sleeps with `clock_nanosleep(CLOCK_MONOTONIC,
//!    TIMER_ABSTIME)` until each action's instant `t0 + at_ms` (the same hrtimer a timerfd
//!    arms; DEmOS adds the epoll wake-up of libev on top), then stops and starts processes
//!    with `--method freezer` (cgroup v2 `cgroup.freeze`, one cgroup per process under
//!    `--cgroup`, as DEmOS) or `--method signals` (SIGSTOP / SIGCONT to the process).
//!
//! What it does not do: BE budgets are DEmOS's (from the simulator), but processes never
//! signal completion (the configurations of the comparison are busy loops); no power policy.
//!
//! `--json FILE` writes t0 (CLOCK_MONOTONIC ns of the schedule's time 0), the pid of every
//! process (named `PARTITION.INDEX`, as `plan import --demos` names the tasks) and, at each
//! window start, how late the thread woke (`wake_late_ns`) and how long the switch took from
//! the wake-up to the last stop/start done (`switch_ns`): its own view. The comparison judges
//! both schedulers by the kernel's sched_switch trace instead.

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use scx_tt::clock::{monotonic_ns, sleep_until_ns};
use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{simulate, Config, CpuSet, LogLine, SimOptions};
use scx_tt::sched::affinity;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// Runs a DEmOS configuration the way DEmOS does: a real-time timer thread that stops and
/// starts the processes at each window start and budget end.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The DEmOS configuration (YAML).
    config: PathBuf,
    /// The CPUs `cpu: all` means, as a CPU list (e.g. `1` or `0-3`).
    #[arg(long)]
    all_cpus: String,
    /// How long to run the schedule, in seconds.
    #[arg(long, default_value_t = 10)]
    duration_s: u64,
    /// The CPU of the timer thread.
    #[arg(long)]
    timer_cpu: u32,
    /// SCHED_FIFO priority of the timer thread (1-99).
    #[arg(long, default_value_t = 99)]
    fifo_priority: i32,
    /// How processes are stopped and started.
    #[arg(long, value_enum, default_value_t = Method::Freezer)]
    method: Method,
    /// With `--method freezer`: the cgroup v2 folder to create the per-process cgroups in
    /// (must not exist; removed at the end).
    #[arg(long, default_value = "/sys/fs/cgroup/tt_demos_baseline")]
    cgroup: PathBuf,
    /// Write t0, the pids and the self-measured figures as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Method {
    /// cgroup v2 freezer (`cgroup.freeze`), one cgroup per process: DEmOS's way.
    Freezer,
    /// SIGSTOP / SIGCONT.
    Signals,
}

/// A process of the configuration: `PARTITION.INDEX`, its command and its CPUs.
#[derive(Clone, Debug, PartialEq)]
struct Proc {
    name: String,
    cmd: String,
    cpus: CpuSet,
}

/// A process's run: it is started at `start_ms` and stopped at `end_ms` (schedule time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    proc: usize,
    start_ms: u64,
    end_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Stop(usize),
    Start(usize),
}

/// What the timer thread does at `at_ms`: `ops` in order (stops first).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Action {
    at_ms: u64,
    ops: Vec<Op>,
    window_start: bool,
}

/// Every process of `config` with the CPUs of the slices its partition runs in.
fn processes(config: &Config, all_cpus: CpuSet) -> Vec<Proc> {
    let mut out = Vec::new();
    for p in &config.partitions {
        let mut cpus = CpuSet::default();
        for s in config.windows.iter().flat_map(|w| w.slices()) {
            if s.sc_partition.as_deref() == Some(p.name.as_str())
                || s.be_partition.as_deref() == Some(p.name.as_str())
            {
                cpus = cpus.or(s.cpus(all_cpus).and(all_cpus));
            }
        }
        for (i, q) in p.processes.iter().enumerate() {
            out.push(Proc {
                name: format!("{}.{i}", p.name),
                cmd: q.cmd.clone(),
                cpus: if cpus.is_empty() { all_cpus } else { cpus },
            });
        }
    }
    out
}

/// The window starts within one major frame (ms from its start).
fn window_offsets(config: &Config) -> Vec<u64> {
    config
        .windows
        .iter()
        .scan(0, |off, w| {
            let start = *off;
            *off += w.length;
            Some(start)
        })
        .collect()
}

/// The end of the window that contains `t_ms`.
fn window_end(config: &Config, t_ms: u64) -> u64 {
    let frame = config.major_frame_ms().max(1);
    let (base, pos) = (t_ms - t_ms % frame, t_ms % frame);
    let mut end = 0;
    for w in &config.windows {
        end += w.length;
        if pos < end {
            break;
        }
    }
    base + end
}

/// Each logged start as a run: until its budget ends, the next start on overlapping CPUs or
/// its window's end. A command must name one process (the log only gives commands).
fn runs(config: &Config, procs: &[Proc], log: &[LogLine]) -> Result<Vec<Run>> {
    let mut by_cmd: HashMap<&str, usize> = HashMap::new();
    for (i, p) in procs.iter().enumerate() {
        if by_cmd.insert(p.cmd.as_str(), i).is_some() {
            bail!(
                "process {}: its cmd '{}' is another process's too: the schedule log could not \
                 tell them apart (give each a distinct command, e.g. a '# tag')",
                p.name,
                p.cmd
            );
        }
    }
    let mut out = Vec::new();
    for (i, l) in log.iter().enumerate() {
        let proc = *by_cmd
            .get(l.cmd.as_str())
            .with_context(|| format!("schedule log line '{l}': no process has this cmd"))?;
        let next = log[i + 1..]
            .iter()
            .find(|m| m.cpus.intersects(l.cpus))
            .map_or(u64::MAX, |m| m.time_ms);
        let end = l
            .time_ms
            .saturating_add(l.budget)
            .min(next)
            .min(window_end(config, l.time_ms));
        if end > l.time_ms {
            out.push(Run {
                proc,
                start_ms: l.time_ms,
                end_ms: end,
            });
        }
    }
    Ok(out)
}

/// The switch actions of `runs`: at each instant the stops, then the starts; a process stopped
/// and started at the same instant keeps running (no op).
fn actions(config: &Config, runs: &[Run]) -> Vec<Action> {
    let mut at: BTreeMap<u64, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for r in runs {
        at.entry(r.end_ms).or_default().0.push(r.proc);
        at.entry(r.start_ms).or_default().1.push(r.proc);
    }
    let frame = config.major_frame_ms().max(1);
    let offsets = window_offsets(config);
    at.into_iter()
        .map(|(t, (stops, starts))| {
            let ops = stops
                .iter()
                .filter(|p| !starts.contains(p))
                .map(|&p| Op::Stop(p))
                .chain(
                    starts
                        .iter()
                        .filter(|p| !stops.contains(p))
                        .map(|&p| Op::Start(p)),
                )
                .collect();
            Action {
                at_ms: t,
                ops,
                window_start: offsets.contains(&(t % frame)),
            }
        })
        .collect()
}

/// Stops and starts the spawned processes (by index).
trait Switcher {
    fn stop(&mut self, proc: usize) -> Result<()>;
    fn start(&mut self, proc: usize) -> Result<()>;
}

/// SIGSTOP / SIGCONT.
struct Signals {
    pids: Vec<i32>,
}

impl Signals {
    fn send(&self, proc: usize, sig: i32) -> Result<()> {
        let pid = *self.pids.get(proc).context("no such process")?;
        // SAFETY: kill takes plain integers.
        if unsafe { libc::kill(pid, sig) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("signal {sig} to pid {pid}"));
        }
        Ok(())
    }
}

impl Switcher for Signals {
    fn stop(&mut self, proc: usize) -> Result<()> {
        self.send(proc, libc::SIGSTOP)
    }
    fn start(&mut self, proc: usize) -> Result<()> {
        self.send(proc, libc::SIGCONT)
    }
}

/// The cgroup v2 freezer: `cgroup.freeze` of each process's cgroup, kept open.
struct Freezer {
    files: Vec<std::fs::File>,
}

impl Freezer {
    fn write(&mut self, proc: usize, v: &[u8]) -> Result<()> {
        use std::io::Write;
        let f = self.files.get_mut(proc).context("no such process")?;
        f.write_all(v).context("writing cgroup.freeze")
    }
}

impl Switcher for Freezer {
    fn stop(&mut self, proc: usize) -> Result<()> {
        self.write(proc, b"1")
    }
    fn start(&mut self, proc: usize) -> Result<()> {
        self.write(proc, b"0")
    }
}

/// Puts every process into a cgroup of its own under `root` and returns the freezer.
fn freezer(root: &Path, procs: &[Proc], children: &[Child]) -> Result<Freezer> {
    let mut files = Vec::new();
    for (p, c) in procs.iter().zip(children) {
        let dir = root.join(&p.name);
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("cgroup.procs"), c.id().to_string())
            .with_context(|| format!("moving pid {} into {}", c.id(), dir.display()))?;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.freeze"))
            .with_context(|| format!("opening {}/cgroup.freeze", dir.display()))?;
        files.push(f);
    }
    Ok(Freezer { files })
}

/// Runs `actions` from `t0_ns`; returns (wake lateness, switch time) of each window start.
fn execute(sw: &mut dyn Switcher, t0_ns: u64, actions: &[Action]) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for a in actions {
        let at = t0_ns + a.at_ms * 1_000_000;
        sleep_until_ns(at);
        let woke = monotonic_ns();
        for op in &a.ops {
            match *op {
                Op::Stop(p) => sw.stop(p)?,
                Op::Start(p) => sw.start(p)?,
            }
        }
        if a.window_start {
            out.push((woke.saturating_sub(at), monotonic_ns().saturating_sub(woke)));
        }
    }
    Ok(out)
}

/// Pins the calling thread, makes it SCHED_FIFO and locks its memory.
fn become_rt(cpu: u32, priority: i32) -> Result<()> {
    affinity::set(&[cpu]).with_context(|| format!("pinning the timer thread to CPU {cpu}"))?;
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: param is valid for the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("setting SCHED_FIFO priority {priority} (needs root)"));
    }
    // SAFETY: no pointers involved.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        eprintln!(
            "tt_demos_baseline: warning: mlockall failed: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

#[derive(Serialize)]
struct Figures {
    min: u64,
    p50: u64,
    p90: u64,
    p99: u64,
    max: u64,
}

/// Nearest-rank percentiles of `v` (sorted here); `None` when empty.
fn figures(v: &mut [u64]) -> Option<Figures> {
    v.sort_unstable();
    let pct = |p: usize| v[(v.len() * p).div_ceil(100).clamp(1, v.len()) - 1];
    Some(Figures {
        min: *v.first()?,
        p50: pct(50),
        p90: pct(90),
        p99: pct(99),
        max: *v.last()?,
    })
}

#[derive(Serialize)]
struct ProcOut {
    name: String,
    cmd: String,
    pid: u32,
}

#[derive(Serialize)]
struct Report {
    method: Method,
    timer_cpu: u32,
    /// The timer thread's id (the main thread: the process id), for the witness.
    timer_tid: u32,
    fifo_priority: i32,
    /// CLOCK_MONOTONIC ns of the schedule's time 0.
    t0_ns: u64,
    frame_ms: u64,
    duration_ms: u64,
    actions: usize,
    window_starts: usize,
    processes: Vec<ProcOut>,
    wake_late_ns: Option<Figures>,
    switch_ns: Option<Figures>,
}

fn spawn_all(config_path: &Path, config: &Config, procs: &[Proc]) -> Result<Vec<Child>> {
    let dir = config_path.parent().filter(|d| !d.as_os_str().is_empty());
    let mut children = Vec::new();
    for p in procs {
        let cpus: Vec<u32> = p.cpus.iter().collect();
        // the child inherits the spawning thread's affinity
        affinity::set(&cpus).with_context(|| format!("{}: pinning to CPUs {}", p.name, p.cpus))?;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(&p.cmd);
        if let (true, Some(d)) = (config.set_cwd, dir) {
            cmd.current_dir(d);
        }
        children.push(
            cmd.spawn()
                .with_context(|| format!("{}: spawning", p.name))?,
        );
    }
    Ok(children)
}

fn run(args: &Args, children: &mut Vec<Child>) -> Result<Report> {
    let config = Config::from_file(&args.config)?;
    let all_cpus = scx_tt::demos::parse_cpus_flag(&args.all_cpus)
        .map_err(|e| anyhow::anyhow!("--all-cpus '{}': {e}", args.all_cpus))?;
    let until_ms = args.duration_s.saturating_mul(1000);
    let sim = simulate(
        &config,
        &SimOptions {
            all_cpus,
            until_ms,
            seed: 5489,
        },
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", args.config.display()))?;
    let procs = processes(&config, all_cpus);
    let acts = actions(&config, &runs(&config, &procs, &sim.log)?);
    *children = spawn_all(&args.config, &config, &procs)?;
    let mut sw: Box<dyn Switcher> = match args.method {
        Method::Signals => Box::new(Signals {
            pids: children.iter().map(|c| c.id() as i32).collect(),
        }),
        Method::Freezer => {
            std::fs::create_dir(&args.cgroup).with_context(|| {
                format!(
                    "--cgroup {}: creating it (cgroup2 mounted there?)",
                    args.cgroup.display()
                )
            })?;
            Box::new(freezer(&args.cgroup, &procs, children)?)
        }
    };
    for i in 0..procs.len() {
        sw.stop(i)?;
    }
    become_rt(args.timer_cpu, args.fifo_priority)?;
    // the schedule starts on a whole second at least half a second from now
    let t0_ns = (monotonic_ns() / 1_000_000_000 + 2) * 1_000_000_000;
    let samples = execute(sw.as_mut(), t0_ns, &acts)?;
    let (mut wake, mut switch): (Vec<u64>, Vec<u64>) = samples.into_iter().unzip();
    Ok(Report {
        method: args.method,
        timer_cpu: args.timer_cpu,
        timer_tid: std::process::id(),
        fifo_priority: args.fifo_priority,
        t0_ns,
        frame_ms: config.major_frame_ms(),
        duration_ms: until_ms,
        actions: acts.len(),
        window_starts: wake.len(),
        processes: procs
            .iter()
            .zip(children.iter())
            .map(|(p, c)| ProcOut {
                name: p.name.clone(),
                cmd: p.cmd.clone(),
                pid: c.id(),
            })
            .collect(),
        wake_late_ns: figures(&mut wake),
        switch_ns: figures(&mut switch),
    })
}

/// Kills and reaps the processes, then removes their cgroups (errors are reported, not fatal:
/// the run's figures are kept).
fn clean_up(args: &Args, children: &mut [Child]) {
    for c in children.iter_mut() {
        if let Err(e) = c.kill().and_then(|_| c.wait().map(|_| ())) {
            eprintln!("tt_demos_baseline: killing pid {}: {e}", c.id());
        }
    }
    if args.method == Method::Freezer && args.cgroup.exists() {
        if let Ok(dirs) = std::fs::read_dir(&args.cgroup) {
            for d in dirs.flatten().filter(|d| d.path().is_dir()) {
                if let Err(e) = std::fs::remove_dir(d.path()) {
                    eprintln!("tt_demos_baseline: removing {}: {e}", d.path().display());
                }
            }
        }
        if let Err(e) = std::fs::remove_dir(&args.cgroup) {
            eprintln!("tt_demos_baseline: removing {}: {e}", args.cgroup.display());
        }
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.duration_s == 0 {
        bail!("--duration-s must be positive");
    }
    if !(1..=99).contains(&args.fifo_priority) {
        bail!("--fifo-priority {} is outside 1-99", args.fifo_priority);
    }
    let mut children = Vec::new();
    let result = run(&args, &mut children);
    clean_up(&args, &mut children);
    let report = result?;
    let us = |f: &Option<Figures>| {
        f.as_ref().map_or("-".into(), |f| {
            format!(
                "p50 {:.1} p99 {:.1} max {:.1}",
                f.p50 as f64 / 1e3,
                f.p99 as f64 / 1e3,
                f.max as f64 / 1e3
            )
        })
    };
    println!(
        "tt_demos_baseline: {:?}, timer on CPU {}, SCHED_FIFO {}: {} actions, {} window starts; \
         wake-up lateness us {}; switch us {}",
        report.method,
        report.timer_cpu,
        report.fifo_priority,
        report.actions,
        report.window_starts,
        us(&report.wake_late_ns),
        us(&report.switch_ns)
    );
    if let Some(path) = &args.json {
        let text = serde_json::to_string(&report).context("encoding the report")?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use scx_tt::demos::Source;

    /// tests/vm/scenarios/demos_lateness/demos.yaml's shape: SC1 (3 + 2 ms) and BE in a 10 ms
    /// window, SC2 (4 ms) and BE in a 5 ms one, all on CPU 1.
    const YAML: &str = "
partitions:
  - {name: SC1, processes: [{cmd: 'a', budget: 3}, {cmd: 'b', budget: 2}]}
  - {name: SC2, processes: [{cmd: 'c', budget: 4}]}
  - {name: BE1, processes: [{cmd: 'e', budget: 1000}, {cmd: 'f', budget: 1000}]}
windows:
  - {length: 10, slices: [{cpu: 1, sc_partition: SC1, be_partition: BE1}]}
  - {length: 5, slices: [{cpu: 1, sc_partition: SC2, be_partition: BE1}]}
";

    fn plan(until_ms: u64) -> (Config, Vec<Proc>, Vec<Action>) {
        let config = Config::from_yaml(YAML, Source::Inline).unwrap();
        let cpus = CpuSet::from_cpus([1]);
        let log = simulate(
            &config,
            &SimOptions {
                all_cpus: cpus,
                until_ms,
                seed: 5489,
            },
        )
        .unwrap()
        .log;
        let procs = processes(&config, cpus);
        let acts = actions(&config, &runs(&config, &procs, &log).unwrap());
        (config, procs, acts)
    }

    #[test]
    fn processes_are_named_as_the_import_names_tasks_and_pinned_to_their_slices() {
        let (_, procs, _) = plan(15);
        let names: Vec<&str> = procs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["SC1.0", "SC1.1", "SC2.0", "BE1.0", "BE1.1"]);
        assert!(procs.iter().all(|p| p.cpus == CpuSet::from_cpus([1])));
    }

    #[test]
    fn one_frame_gives_demos_switches_stops_first() {
        // by hand: a [0,3) b [3,5) e [5,10) | c [10,14) e [14,15) | a [15,18) ...
        // (indices: a 0, b 1, c 2, e 3)
        let (_, _, acts) = plan(16);
        let first: Vec<(u64, Vec<Op>, bool)> = acts
            .iter()
            .take(6)
            .map(|a| (a.at_ms, a.ops.clone(), a.window_start))
            .collect();
        use Op::*;
        assert_eq!(
            first,
            vec![
                (0, vec![Start(0)], true),
                (3, vec![Stop(0), Start(1)], false),
                (5, vec![Stop(1), Start(3)], false),
                (10, vec![Stop(3), Start(2)], true),
                (14, vec![Stop(2), Start(3)], false),
                (15, vec![Stop(3), Start(0)], true),
            ]
        );
    }

    #[test]
    fn window_starts_are_the_frame_offsets() {
        let (_, _, acts) = plan(300);
        let starts: Vec<u64> = acts
            .iter()
            .filter(|a| a.window_start)
            .map(|a| a.at_ms)
            .collect();
        // 0, 10, 15, 25, ... up to 300 (simulate's last window start is at the limit)
        let want: Vec<u64> = (0..=300).filter(|t| [0, 10].contains(&(t % 15))).collect();
        assert_eq!(starts, want);
    }

    #[test]
    fn equal_commands_are_refused_naming_the_process() {
        let config = Config::from_yaml(
            "partitions: [{name: P, processes: [{cmd: x, budget: 1}, {cmd: x, budget: 1}]}]\n\
             windows: [{length: 2, sc_partition: P, cpu: 0}]",
            Source::Inline,
        )
        .unwrap();
        let procs = processes(&config, CpuSet::from_cpus([0]));
        let err = runs(&config, &procs, &[]).unwrap_err().to_string();
        assert!(err.contains("P.1") && err.contains("'x'"), "{err}");
    }

    /// Records the calls: the switcher's order is the action's.
    struct Fake(Vec<Op>);
    impl Switcher for Fake {
        fn stop(&mut self, p: usize) -> Result<()> {
            self.0.push(Op::Stop(p));
            Ok(())
        }
        fn start(&mut self, p: usize) -> Result<()> {
            self.0.push(Op::Start(p));
            Ok(())
        }
    }

    #[test]
    fn execute_does_the_ops_in_order_and_times_window_starts_only() {
        let (_, _, acts) = plan(16);
        let mut fake = Fake(Vec::new());
        // a t0 in the past: no sleeping
        let samples = execute(&mut fake, 0, &acts[..4]).unwrap();
        use Op::*;
        assert_eq!(
            fake.0,
            vec![
                Start(0),
                Stop(0),
                Start(1),
                Stop(1),
                Start(3),
                Stop(3),
                Start(2)
            ]
        );
        assert_eq!(samples.len(), 2);
    }

    #[test]
    fn figures_are_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        let f = figures(&mut v).unwrap();
        assert_eq!((f.min, f.p50, f.p90, f.p99, f.max), (1, 50, 90, 99, 100));
        assert!(figures(&mut []).is_none());
    }
}

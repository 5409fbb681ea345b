//! The enforcing run (feature `bpf`): see the order in the parent module's doc.

use super::control_socket::ControlSocket;
use super::energy::LiveEnergy;
use super::engine::RunEngine;
use super::planner_loop::{PlannerLoop, Writers};
use super::RunArgs;
use anyhow::{bail, Context, Result};
use scx_tt::accounting::{
    render_stats_line, render_summary, Accounting, ExitReason, RunFacts, SlotSample, TableSwitch,
    TaskInfo, TaskState,
};
use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::control::{Control, KernelPlanner};
use scx_tt::energy::model::PowerModel;
use scx_tt::energy::sysfs::Root;
use scx_tt::plan::{Plan, Selector};
use scx_tt::planner::kernel_path::{initial_perf, KernelPathConfig};
use scx_tt::planner::Freqs;
use scx_tt::resolve::{ProcFs, ResolveError};
use scx_tt::sched::config::{default_guard_us, SchedConfig};
use scx_tt::sched::loader::Scheduler;
use scx_tt::sched::spawn::Spawned;
use scx_tt::sched::system::{check_root, SysFs};
use std::cell::RefCell;
use std::io::{BufWriter, Write};
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `--perf-table`: {"<cpu>": [freq per frame slot], ...}.
fn read_perf_table(path: &std::path::Path) -> Result<Vec<(u32, Vec<f64>)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let raw: std::collections::BTreeMap<String, Vec<f64>> =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    raw.into_iter()
        .map(|(cpu, row)| {
            let cpu = cpu
                .parse()
                .with_context(|| format!("{}: key {cpu:?} is not a CPU id", path.display()))?;
            Ok((cpu, row))
        })
        .collect()
}

/// Spawned `cmd` tasks, killed (with their process groups) when dropped.
#[derive(Default)]
struct Children(Vec<(usize, Spawned)>);

impl Children {
    fn kill_all(&mut self) {
        for (_, c) in &mut self.0 {
            if let Err(e) = c.kill() {
                eprintln!("scx_tt: warning: killing spawned pid {}: {e}", c.pid);
            }
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Resolve every task's threads; spawn `cmd` tasks stopped. Missing pids/tids are errors.
fn resolve_tasks(plan: &Plan, procfs: &ProcFs, children: &mut Children) -> Result<Vec<Vec<u32>>> {
    let mut tids = Vec::with_capacity(plan.tasks.len());
    for (i, task) in plan.tasks.iter().enumerate() {
        let found = match &task.selector {
            Selector::Cmd(argv) => {
                let child = Spawned::stopped(argv)
                    .with_context(|| format!("spawning task {} ({argv:?})", task.name))?;
                let pid = child.pid;
                children.0.push((i, child));
                vec![pid]
            }
            sel => match procfs.resolve(sel) {
                Ok(t) => t,
                Err(e @ (ResolveError::NoSuchPid(_) | ResolveError::NoSuchTid(_))) => {
                    bail!("task {}: {e}", task.name)
                }
                Err(e) => {
                    eprintln!(
                        "scx_tt: warning: task {}: {e}; its slots go to be work",
                        task.name
                    );
                    Vec::new()
                }
            },
        };
        if found.is_empty() {
            eprintln!(
                "scx_tt: warning: task {}: no threads found; its slots go to be work",
                task.name
            );
        }
        tids.push(found);
    }
    Ok(tids)
}

fn task_states(tids: &[Vec<u32>], children: &mut Children, procfs: &ProcFs) -> Vec<TaskState> {
    tids.iter()
        .enumerate()
        .map(|(i, t)| {
            if t.is_empty() {
                return TaskState::NotFound;
            }
            let spawned = children.0.iter_mut().find(|(task, _)| *task == i);
            let alive = match spawned {
                Some((_, c)) => !c.exited(),
                None => t.iter().any(|&tid| procfs.tid_alive(tid)),
            };
            if alive {
                TaskState::Running
            } else {
                TaskState::Exited
            }
        })
        .collect()
}

pub fn enforce(args: &RunArgs, plan: &Plan, model: &PowerModel) -> Result<i32> {
    let sysfs = SysFs::default();
    let procfs = ProcFs::default();
    check_root()?;
    // First: a live socket at the path (another scx_tt) refuses the start whatever else holds.
    let mut control_socket = args
        .control
        .as_deref()
        .map(ControlSocket::bind)
        .transpose()?;
    sysfs.check_sched_ext_free()?;
    let online = sysfs.online_cpus();
    let plan_cpus: Vec<u32> = plan
        .managed
        .iter()
        .chain(&plan.housekeeping)
        .copied()
        .collect();
    sysfs.check_cpus(&plan_cpus)?;
    let guard_us = args
        .guard_us
        .unwrap_or_else(|| default_guard_us(plan.slot_us));
    let mut cfg =
        SchedConfig::from_plan(plan, guard_us, &online).context("configuring the scheduler")?;
    if let Some(path) = &args.perf_table {
        cfg = cfg
            .with_perf(&read_perf_table(path)?)
            .context("configuring the scheduler")?;
    }
    if args.planner.is_some() {
        // the planner writes a cpuperf target per slot (all at full speed until then)
        cfg.perf = Some(initial_perf(cfg.table.len()));
    }

    let mut children = Children::default();
    let tids = resolve_tasks(plan, &procfs, &mut children)?;
    let threads: Vec<(u32, usize)> = tids
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.iter().map(move |&tid| (tid, i)))
        .collect();

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("installing the SIGINT/SIGTERM handler")?;
    }

    let verbose = |msg: &str| {
        if args.verbose {
            eprintln!("scx_tt: {msg}");
        }
    };
    let mut open_object = MaybeUninit::uninit();
    let t_load = Instant::now();
    let mut sched = Scheduler::load(&mut open_object, &cfg, &threads)?;
    verbose(&format!("loaded in {:?}", t_load.elapsed()));
    if let Err(e) = sched.enable_bpf_stats() {
        eprintln!("scx_tt: warning: kernel.bpf_stats not available: {e}");
    }
    sched.attach()?;
    verbose(&format!(
        "attached ({})",
        sysfs.attached_ops().unwrap_or_default()
    ));
    let t0_ns = monotonic_ns() + (2 * cfg.slot_ns).max(100_000_000);
    sched.arm(t0_ns)?;
    verbose(&format!(
        "timers armed on CPUs {:?}, slot 0 at t0={t0_ns} ns",
        cfg.managed
    ));
    let table_name = args
        .table
        .as_ref()
        .map_or_else(String::new, |p| p.display().to_string());
    let clock = SlotClock::new(t0_ns, cfg.slot_ns);
    let mut control = Control::new(plan.clone(), table_name, clock);
    // Planner mode: the thread starts before slot 0 and decides slots 0..lead first.
    let (planner, mut planner_loop) = match args.planner {
        Some(policy) => {
            let freqs = dvfs_freqs(args, plan, model)?;
            verbose(&format!(
                "dvfs frequencies (of the maximum, ppm): {:?}",
                freqs.ppm()
            ));
            let shared = Arc::new(Mutex::new(
                KernelPlanner::new(
                    &plan.planner_inputs(),
                    plan.tasks.len(),
                    KernelPathConfig {
                        policy,
                        lead: args.planner_lead_slots,
                        frame_slots: plan.frame_slots,
                        slot_ns: cfg.slot_ns,
                        freqs,
                    },
                    cfg.table.clone(),
                )
                .context("planner mode")?,
            ));
            let writers = Writers {
                table: sched.table_writer()?,
                perf: sched.perf_writer()?,
            };
            let lp = PlannerLoop::start(
                shared.clone(),
                writers,
                cfg.frame_slots,
                clock,
                plan.housekeeping.first().copied(),
            )?;
            control = control.with_planner(policy.name(), args.planner_lead_slots);
            verbose(&format!(
                "planner {policy} deciding {} slots ahead on a housekeeping CPU",
                args.planner_lead_slots
            ));
            (Some(shared), Some(lp))
        }
        None => (None, None),
    };
    if let Some(sock) = &control_socket {
        verbose(&format!("control socket at {}", sock.path().display()));
    }
    for (_, c) in &children.0 {
        c.resume()
            .with_context(|| format!("resuming spawned pid {}", c.pid))?;
    }

    let infos = TaskInfo::of_plan(plan);
    let mut acc = Accounting::new(cfg.slot_ns, infos, &cfg.managed, args.timeline_slots)
        .with_power_model(model.clone());
    let mut energy = LiveEnergy::open(
        &Root::new(args.sysfs_root.clone()),
        model,
        &cfg.managed,
        plan.slot_us,
    );
    verbose(&format!("{} ({})", energy.describe(), model.name));
    let mut trace = match &args.trace {
        Some(p) => Some(BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating trace {}", p.display()))?,
        )),
        None => None,
    };
    let samples: Rc<RefCell<Vec<SlotSample>>> = Rc::default();
    let ring = {
        let samples = samples.clone();
        sched.slot_records(move |s| samples.borrow_mut().push(s))?
    };

    let deadline = args.duration_s.map(|s| Duration::from_secs_f64(s.max(0.0)));
    let stats_every = args.stats.map(|s| Duration::from_secs_f64(s.max(0.1)));
    let start = Instant::now();
    let mut next_stats = stats_every.map(|d| start + d);
    let facts = |sched: &Scheduler, exit, states: Vec<TaskState>| {
        let (task_counters, cpu_counters) = sched.counters(plan.tasks.len());
        RunFacts {
            duration_ns: monotonic_ns().saturating_sub(t0_ns),
            exit,
            tids: tids.clone(),
            states,
            task_counters,
            cpu_counters,
            prog_stats: sched.prog_stats(),
        }
    };
    let mut drain = |acc: &mut Accounting, energy: &mut LiveEnergy| -> Result<()> {
        for s in samples.borrow_mut().drain(..) {
            acc.add(&s);
            let rec = acc.trace_record(&s);
            energy.record(&rec);
            if let Some(w) = trace.as_mut() {
                serde_json::to_writer(&mut *w, &rec).context("writing the trace")?;
                w.write_all(b"\n").context("writing the trace")?;
            }
        }
        Ok(())
    };

    let exit = loop {
        // BPF submits without wakeups, so poll is a 100 ms sleep; consume drains the ring.
        // EINTR from the signal handler is expected; the flag is checked below.
        let _ = ring.poll(Duration::from_millis(100));
        let _ = ring.consume();
        drain(&mut acc, &mut energy)?;
        if let Some(sock) = control_socket.as_mut() {
            let mut engine = RunEngine {
                sched: &mut sched,
                guard_us,
                online: &online,
                planner: planner.as_deref(),
                clock,
            };
            sock.serve(|line| control.serve(line, &mut engine).to_line());
        }
        if stop.load(Ordering::SeqCst) {
            break ExitReason::Signal;
        }
        if deadline.is_some_and(|d| start.elapsed() >= d) {
            break ExitReason::Duration;
        }
        if sched.exited() {
            break ExitReason::SchedulerExited;
        }
        if planner_loop.as_ref().is_some_and(PlannerLoop::finished) {
            // only an error ends the planner thread; it is reported after the summary
            break ExitReason::Signal;
        }
        if args.exit_when_tasks_exit {
            let states = task_states(&tids, &mut children, &procfs);
            if states.iter().all(|s| *s != TaskState::Running) {
                break ExitReason::TasksExited;
            }
        }
        if let (Some(at), Some(every)) = (next_stats, stats_every) {
            if Instant::now() >= at {
                let states = task_states(&tids, &mut children, &procfs);
                let summary = acc
                    .summary(&facts(&sched, ExitReason::Duration, states))
                    .with_energy(energy.read());
                println!("{}", render_stats_line(&summary));
                next_stats = Some(at + every);
            }
        }
    };

    let planner_result = planner_loop.as_mut().map(PlannerLoop::stop);
    let late_slots = planner
        .as_ref()
        .and_then(|p| p.lock().ok().map(|p| p.late_slots()));
    let _ = ring.consume();
    drain(&mut acc, &mut energy)?;
    let states = task_states(&tids, &mut children, &procfs);
    let run = facts(&sched, exit, states);
    let reading = energy.read();
    let state = sched.shutdown(&sysfs, Duration::from_secs(2));
    drop(ring);
    verbose(&format!("detached, sched_ext state {state}"));
    children.kill_all();

    drop(control_socket.take());
    let switches = control
        .history()
        .iter()
        .map(|s| TableSwitch {
            slot: s.at_slot,
            table: s.table.clone(),
        })
        .collect();
    let summary = acc
        .summary(&run)
        .with_energy(reading)
        .with_table_switches(switches)
        .with_planner_late_slots(late_slots);
    print!("{}", render_summary(&acc, &summary));
    print_switches(&control, &acc, &cfg.managed);
    if let Some(w) = trace.as_mut() {
        w.flush().context("writing the trace")?;
    }
    if let Some(p) = &args.summary_json {
        let text = serde_json::to_string_pretty(&summary).context("encoding the summary")?;
        std::fs::write(p, text + "\n").with_context(|| format!("writing {}", p.display()))?;
    }
    if state != "disabled" {
        bail!("sched_ext state is {state} after detaching (expected disabled)");
    }
    if let Some(Err(e)) = planner_result {
        return Err(e.context("the planner thread stopped"));
    }
    Ok(if exit == ExitReason::SchedulerExited {
        1
    } else {
        0
    })
}

/// The frequencies dvfs chooses from: the P-states of `--power-model` when given (the cluster
/// of the first managed CPU), else `Freqs::xeon_default()` as `scx_tt simulate`.
fn dvfs_freqs(args: &RunArgs, plan: &Plan, model: &PowerModel) -> Result<Freqs> {
    if args.power_model.is_none() {
        return Ok(Freqs::xeon_default());
    }
    let cpu = plan.managed.first().copied().unwrap_or(0);
    model.dvfs_freqs(cpu).with_context(|| {
        format!(
            "the P-states of power model {} as dvfs frequencies",
            model.name
        )
    })
}

/// After the summary: the table switches of the run, and where one falls in the timeline.
fn print_switches(control: &Control, acc: &Accounting, managed: &[u32]) {
    if control.history().is_empty() {
        return;
    }
    let last = managed
        .iter()
        .filter_map(|&cpu| acc.timeline(cpu)?.last().map(|c| c.0))
        .max();
    let shown = last.map(|last| ((last + 1).saturating_sub(acc.timeline_slots() as u64), last));
    println!("table switches (each slot's record carries the owner of the table in force):");
    for s in control.history() {
        let column = match shown {
            Some((first, last)) if (first..=last).contains(&s.at_slot) => {
                format!(" (timeline column {})", s.at_slot - first + 1)
            }
            _ => String::new(),
        };
        println!("  from slot {}: {}{column}", s.at_slot, s.table);
    }
}

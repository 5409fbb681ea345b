//! The run daemon of `scx_tt --table plan.json` (feature `bpf`), in the shape of scx's Rust
//! schedulers. [`enforce`] is the whole run:
//!
//! ```text
//! daemon = Daemon::init()                  1. system checks  2. configuration, tasks
//!                                          2b. start-up: spawned tasks settle while the
//!                                          guard band is calibrated (docs/run-output.md)
//! loop {
//!     enforcer = Enforcer::start(kept)     3. open/load/attach  4. arm  5. planner thread
//!                                          6. control  7. stats (enforce.rs)
//!     exit = enforcer.run(shutdown)        until a signal, --duration-s, the tasks' or the
//!                                          scheduler's exit
//!     match enforcer.stop(exit) {          detach; the BPF exit info
//!         Restart(kept) => daemon.prepare_restart()   bounded (restart.rs), or finish + error
//!         Final(end) => return daemon.finish(end)     summary, trace, JSON; exit code
//!     }
//! }
//! ```
//!
//! [`Daemon`] is what a run keeps across restarts of the BPF scheduler: the inputs, the
//! control socket, the BPF configuration (built once, with the guard band chosen at start: a
//! restart does not calibrate again), the plan's tasks and spawned children, the counters of
//! exited schedulers and the restarts. What counts on the slot grid (the
//! clock, the control protocol, the planner, the accounting) is `enforce::Live`, created by
//! the first start and handed from one scheduler to the next.
//! Exit codes: 0 clean end, 2 invalid plan (run.rs), 1 any other error.

use super::carry::Counters;
use super::enforce::{End, Enforcer, Live, Stopped};
use super::freq::{self, Backend, Freq, FreqBackendArg, FreqDriver};
use super::idle_ctl::IdleControl;
use super::report;
use super::restart::{self, Restarts, MAX_RESTARTS, RESTART_WINDOW_NS};
use super::tasks::Tasks;
use super::RunArgs;
use anyhow::{bail, Context, Result};
use scx_tt::accounting::{render_summary, ExitReason, RunFacts, Summary};
use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::control::journal as control_journal;
use scx_tt::control::socket::{check_free, Access, ControlSocket, Group};
use scx_tt::demos::ConfigFile as _;
use scx_tt::energy::journal_file;
use scx_tt::energy::model::PowerModel;
use scx_tt::energy::sysfs::Root;
use scx_tt::plan::Plan;
use scx_tt::resolve::ProcFs;
use scx_tt::sched::calibrate;
use scx_tt::sched::config::{PerfTable, SchedConfig};
use scx_tt::sched::guard::{self, Guard};
use scx_tt::sched::kernel::{lacks, Feature};
use scx_tt::sched::loader::ExitInfo;
use scx_tt::sched::system::{check_start, SysFs, SystemView};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The run: start, restart while the kernel asks (bounded), finish. Returns the exit code.
pub fn enforce(args: &RunArgs, plan: &Plan, model: &PowerModel) -> Result<i32> {
    // first, so that a signal during the start-up ends the settle period
    let shutdown = Shutdown::install()?;
    let mut daemon = Daemon::init(args, plan, model, &shutdown)?;
    let mut open_object = MaybeUninit::uninit();
    let mut kept = None;
    loop {
        let mut enforcer = Enforcer::start(&mut daemon, kept.take(), &mut open_object)?;
        let exit = enforcer.run(&shutdown)?;
        let k = match enforcer.stop(exit)? {
            Stopped::Final(end) => {
                let summary = daemon.finish(end)?;
                return Ok(i32::from(summary.exit == ExitReason::SchedulerExited));
            }
            Stopped::Restart(k) if shutdown.requested() => {
                // SIGINT/SIGTERM came while the scheduler exited: the run ends here
                let end = daemon.end(k.live, ExitReason::Signal, Ok(()));
                daemon.finish(end)?;
                return Ok(0);
            }
            Stopped::Restart(k) => k,
        };
        if let Err(e) = daemon.prepare_restart(&k.exit) {
            // the run ends as if the scheduler had exited for good, then says why
            let end = daemon.end(k.live, ExitReason::SchedulerExited, Ok(()));
            daemon.finish(end)?;
            return Err(e);
        }
        kept = Some(k);
    }
}

/// SIGINT/SIGTERM: the run loop ends at its next wake-up (a signal cuts its sleep short).
pub struct Shutdown(Arc<AtomicBool>);

impl Shutdown {
    fn install() -> Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let set = flag.clone();
        ctrlc::set_handler(move || set.store(true, Ordering::SeqCst))
            .context("installing the SIGINT/SIGTERM handler")?;
        Ok(Shutdown(flag))
    }

    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

pub struct Daemon<'a> {
    pub(super) args: &'a RunArgs,
    pub(super) plan: &'a Plan,
    pub(super) model: &'a PowerModel,
    pub(super) sysfs: SysFs,
    pub(super) procfs: ProcFs,
    /// `--control`: bound by the system checks, removed when dropped.
    pub(super) socket: Option<ControlSocket>,
    /// `--node-api`: the node admission API, whose requests go through `socket` (declared
    /// after it: the socket is closed first, so a request in flight fails at once).
    #[allow(dead_code)] // held for its threads, stopped when dropped
    pub(super) node_api: Option<scx_tt::node_api::NodeApi>,
    /// The machine's online CPUs (its other CPUs than the managed ones do housekeeping).
    pub(super) online: Vec<u32>,
    /// The guard band: `--guard-us`, or calibrated at start (kept by restarts).
    pub(super) guard: Guard,
    /// The plan's BPF configuration, every scheduler of the run is loaded with.
    pub(super) cfg: SchedConfig,
    pub(super) tasks: Tasks,
    /// The BPF counters of the schedulers that already exited.
    pub(super) counters: Counters,
    pub(super) restarts: Restarts,
    /// Planner mode's frequency backend (cpufreq: the policies taken over, restored when the
    /// daemon is dropped, on every exit path).
    pub(super) freq: Freq,
    /// Planner mode's idle control (pm_qos limits, restored when dropped).
    pub(super) idle: Arc<Mutex<IdleControl>>,
    /// `--resume`: the control state an earlier run journaled, served again once the
    /// scheduler runs.
    pub(super) resume: Option<control_journal::State>,
}

impl<'a> Daemon<'a> {
    /// Steps 1 (system checks) and 2 (configuration, tasks, and the start-up: the spawned
    /// tasks settle while the guard band is calibrated), in this order: nothing on the machine
    /// changes before the checks passed, nothing is spawned before the configuration passed.
    pub fn init(
        args: &'a RunArgs,
        plan: &'a Plan,
        model: &'a PowerModel,
        shutdown: &Shutdown,
    ) -> Result<Self> {
        let sysfs = SysFs::default();
        let procfs = ProcFs::default();
        // 1. the machine, the journals of a killed run, the control socket
        let (online, access) = system_checks(args, plan, &sysfs)?;
        let (socket, resume) = open_control(args, &access)?;
        let node_api = super::simulated::start_node_api(args, None)?;
        // 2. the configuration is checked before anything is spawned; the calibrated guard
        // band lies in its bound, below the slot, so it passes the same check
        let provisional = args
            .guard_us
            .unwrap_or_else(|| guard::bound(plan.slot_us).min);
        let mut cfg = configure(args, plan, provisional, &online)?;
        super::planner_loop::helper_cpus(args, plan, &cfg)?;
        let freq = take_frequencies(args, plan, &mut cfg)?;
        let idle = Arc::new(Mutex::new(take_idle(args, plan, model)?));
        // 2b. start-up: the tasks settle while the guard band is calibrated
        let (tasks, guard) = start_up(args, plan, &procfs, provisional, shutdown)?;
        cfg.guard_ns = guard.us * 1000;
        Ok(Daemon {
            args,
            plan,
            model,
            sysfs,
            procfs,
            socket,
            node_api,
            online,
            guard,
            cfg,
            tasks,
            counters: Counters::default(),
            restarts: Restarts::default(),
            freq,
            idle,
            resume,
        })
    }

    /// Before a restart the kernel asked for (`exit`): the bound, then steps 1 and 2 again
    /// for the machine as it is now (a plan CPU gone offline fails here, naming the CPU).
    pub fn prepare_restart(&mut self, exit: &ExitInfo) -> Result<()> {
        let n = self
            .restarts
            .admit(monotonic_ns())
            .map_err(anyhow::Error::msg)?;
        eprintln!(
            "scx_tt: the kernel asked for a restart of the BPF scheduler ({}): restart {n} \
             (at most {MAX_RESTARTS} within {} s)",
            exit.describe(),
            RESTART_WINDOW_NS / 1_000_000_000
        );
        if exit.hotplug {
            restart::settle(&self.sysfs, &exit.message);
        }
        self.online =
            check_machine(&self.sysfs, self.plan).context("restarting the BPF scheduler")?;
        // The housekeeping set is every online CPU the plan does not manage; derived by the
        // one rule (SchedConfig::from_plan), which also checks a new CPU against the BPF limit.
        self.cfg.housekeeping = SchedConfig::from_plan(self.plan, self.guard.us, &self.online)
            .context("restarting the BPF scheduler")?
            .housekeeping;
        Ok(())
    }

    /// What the loader knows about the run besides the records: `now` holds the counters of
    /// the scheduler still loaded (none at the end: they were carried when it stopped).
    pub(super) fn facts(&mut self, clock: SlotClock, exit: ExitReason, now: &Counters) -> RunFacts {
        let counters = self.counters.plus(now);
        RunFacts {
            duration_ns: monotonic_ns().saturating_sub(clock.t0_ns),
            exit,
            tids: self.tasks.found().to_vec(),
            states: self.tasks.states(&self.procfs),
            task_counters: counters.tasks,
            cpu_counters: counters.cpus,
            prog_stats: counters.progs,
        }
    }

    /// The end of the run once no scheduler is loaded (`state`: sched_ext's, read now).
    pub(super) fn end(&mut self, mut live: Live, exit: ExitReason, planner: Result<()>) -> End {
        let facts = self.facts(live.clock, exit, &Counters::default());
        let energy = live.stats.energy.read();
        End {
            state: self.sysfs.sched_ext_state().unwrap_or_default(),
            live,
            facts,
            energy,
            planner,
        }
    }

    /// Ends the run: kills the spawned tasks, removes the socket, prints the summary (and the
    /// table switches and restarts after it), writes the trace and `--summary-json`. Fails,
    /// after all that, when sched_ext is not `disabled` or the planner thread failed.
    pub fn finish(&mut self, end: End) -> Result<Summary> {
        let End {
            mut live,
            facts,
            energy,
            state,
            planner,
        } = end;
        let t_finish = std::time::Instant::now();
        self.tasks.kill_all();
        drop(self.socket.take());
        let late = live
            .planner
            .as_ref()
            .and_then(|p| p.read(|p| p.late_slots()).ok());
        let late_writes = live.planner.as_ref().map(|p| p.late_writes());
        let loop_counts = live
            .planner
            .as_ref()
            .and_then(|p| p.read(|p| p.loop_closed().then(|| p.counts())).ok())
            .flatten();
        if let (Some(path), Some(p)) = (&self.args.planner_log, &live.planner) {
            if let Ok(Some((header, events))) = p.update(|p| p.take_full_log()) {
                write_planner_log(path, &header, &events)?;
            }
        }
        let switches = report::table_switches(&live.control);
        let acc = &live.stats.acc;
        let summary = acc
            .summary(&facts)
            .with_energy(energy)
            .with_table_switches(switches)
            .with_planner_late_slots(late)
            .with_planner_late_writes(late_writes)
            .with_planner_loop(loop_counts);
        self.verbose(&format!(
            "the summary computed {:?} after the run's end",
            t_finish.elapsed()
        ));
        print!("{}", render_summary(acc, &summary));
        report::print_switches(&summary.table_switches, acc, &self.cfg.managed);
        report::print_restarts(self.restarts.log(), acc, &self.cfg.managed);
        report::print_guard(&self.guard);
        if let Some(pool) = live.planner.as_ref().and_then(|p| p.pool()) {
            println!(
                "planner threads: {} (--planner-threads; slots of at least {} CPUs cut): the \
                 helpers stepped {} shards",
                pool.helpers() + 1,
                self.args.planner_shard_min,
                pool.lent()
            );
        }
        let freq = self.args.planner.map(|_| self.freq.report());
        if let Some(f) = &freq {
            println!("{}", f.describe());
        }
        live.stats.flush_trace()?;
        if let (Some(path), Some(d)) = (&self.args.freq_log, &self.freq.driver) {
            d.lock()
                .unwrap_or_else(|e| e.into_inner())
                .write_log(path)?;
        }
        // the machine's frequencies and idle limits back as they were before the summary file
        // says "done"
        self.restore_frequencies();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = &self.args.idle_log {
            idle.write_log(path)?;
        }
        if self.args.planner.is_some() && idle.polling() {
            let (n, errors) = idle.counts();
            println!(
                "idle control: {n} DPM idle period limits written (states from {}), {errors} \
                 failed writes",
                idle.source()
            );
        }
        if idle.restore() > 0 {
            eprintln!(
                "scx_tt: warning: pm_qos limits could not all be restored; they stay in the \
                 journal under {} for `scx_tt restore`",
                self.args.run_dir.display()
            );
        }
        if let Some(p) = &self.args.summary_json {
            let (t0_ns, restarts) = (live.clock.t0_ns, self.restarts.count());
            report::write_summary_json(p, t0_ns, &summary, &self.guard, restarts, freq.as_ref())?;
        }
        if state != "disabled" {
            bail!("sched_ext state is {state} after detaching (expected disabled)");
        }
        planner.map_err(|e| e.context("the planner thread stopped"))?;
        Ok(summary)
    }

    /// Restores the cpufreq policies now (the drop of the last handle would do it too).
    fn restore_frequencies(&mut self) {
        if let Some(d) = self.freq.driver.take() {
            let failed = d.lock().unwrap_or_else(|e| e.into_inner()).restore();
            if failed > 0 {
                eprintln!(
                    "scx_tt: warning: {failed} cpufreq value(s) could not be restored; they stay \
                     in the journal under {} for `scx_tt restore`",
                    self.args.run_dir.display()
                );
            }
        }
    }

    pub(super) fn verbose(&self, msg: &str) {
        if self.args.verbose {
            eprintln!("scx_tt: {msg}");
        }
    }
}

/// Writes the planner log of `--planner-log` (docs/planner.md, "Conformance").
fn write_planner_log(
    path: &std::path::Path,
    header: &scx_tt::planner::kernel_path::LogHeader,
    events: &[scx_tt::planner::kernel_path::LogEvent],
) -> Result<()> {
    let f = std::fs::File::create(path)
        .with_context(|| format!("creating the planner log {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    scx_tt::planner::replay::write_log(&mut w, header, events)
        .and_then(|()| std::io::Write::flush(&mut w))
        .with_context(|| format!("writing the planner log {}", path.display()))?;
    if header.truncated {
        eprintln!(
            "scx_tt: warning: the planner log {} stopped at {} events",
            path.display(),
            events.len()
        );
    }
    Ok(())
}

/// Restores what the journals under `run_dir` hold (a run that was killed), saying what.
fn recover_journals(run_dir: &std::path::Path) -> Result<()> {
    let recovered = journal_file::recover(run_dir).context("the restore journal")?;
    for r in &recovered {
        eprintln!("scx_tt: {}", r.describe());
        if !r.failures.is_empty() {
            bail!(
                "{} value(s) a previous run changed could not be restored (see above); fix them \
                 or run `scx_tt restore --run-dir {}`",
                r.failures.len(),
                run_dir.display()
            );
        }
    }
    Ok(())
}

/// Planner mode's frequency backend (freq.rs): cpufreq takes the managed CPUs' policies over
/// now; none loads no perf map (BPF asks for no frequency).
fn take_frequencies(args: &RunArgs, plan: &Plan, cfg: &mut SchedConfig) -> Result<Freq> {
    let root = Root::new(&args.sysfs_root);
    let backend = match args.planner {
        Some(_) => freq::resolve(args.freq_backend, &root, &plan.managed, args.verbose),
        None => Backend::Cpuperf,
    };
    // BPF's frequency targets need the kernel's cpuperf kfunc: asked for, a kernel without it
    // refuses the run; chosen by auto (or planner-less), the targets are dropped instead
    let cpuperf_missing = match backend {
        Backend::Cpuperf if cfg.perf.is_some() => lacks(
            &probe_kernel(),
            Feature::CpuperfTargets("--freq-backend cpuperf"),
        ),
        _ => None,
    };
    let backend = match cpuperf_missing {
        Some(m) if args.planner.is_some() && args.freq_backend == FreqBackendArg::Cpuperf => {
            bail!("{m}")
        }
        Some(m) => {
            eprintln!("scx_tt: note: {m}: BPF asks for no frequency (backend none)");
            Backend::None
        }
        None => backend,
    };
    let driver = match backend {
        Backend::Cpufreq => {
            let d = FreqDriver::take_control(
                root,
                &args.run_dir,
                &plan.managed,
                plan.frame_slots,
                args.freq_log.is_some(),
            )?;
            eprintln!("scx_tt: {}", d.describe());
            Some(Arc::new(std::sync::Mutex::new(d)))
        }
        Backend::None => {
            cfg.perf = None;
            None
        }
        Backend::Cpuperf => None,
    };
    Ok(Freq { backend, driver })
}

/// Root, sched_ext present and free, the plan's CPUs online (scx_tt::sched::system::
/// check_start on the machine as it is now); returns the online CPUs.
fn check_machine(sysfs: &SysFs, plan: &Plan) -> Result<Vec<u32>> {
    let plan_cpus: Vec<u32> = plan
        .managed
        .iter()
        .chain(&plan.housekeeping)
        .copied()
        .collect();
    Ok(check_start(&SystemView::this_process(sysfs), &plan_cpus)?)
}

/// The running kernel's pieces (`scx_tt::sched::kernel`); without the `bpf` feature (no
/// kernel path) a kernel that has them all.
fn probe_kernel() -> scx_tt::sched::kernel::KernelPieces {
    #[cfg(feature = "bpf")]
    return scx_tt::sched::loader::probe_kernel();
    #[cfg(not(feature = "bpf"))]
    scx_tt::sched::kernel::KernelPieces {
        release: "(no kernel path in this build)".into(),
        preempt_rt: false,
        cpuperf_set: true,
        enq_exiting: true,
        enq_migration_disabled: true,
    }
}

/// The plan → BPF configuration, with `--perf-table` (or planner mode's initial targets).
fn configure(args: &RunArgs, plan: &Plan, guard_us: u64, online: &[u32]) -> Result<SchedConfig> {
    let mut cfg =
        SchedConfig::from_plan(plan, guard_us, online).context("configuring the scheduler")?;
    if let Some(path) = &args.perf_table {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let table =
            PerfTable::parse(&text).with_context(|| format!("parsing {}", path.display()))?;
        cfg = cfg
            .with_perf(&table.rows())
            .context("configuring the scheduler")?;
    }
    // what the running kernel offers: a feature it lacks is refused here, before anything is
    // attached (scx_tt::sched::kernel)
    let kernel = probe_kernel();
    for note in scx_tt::sched::kernel::notes(&kernel) {
        eprintln!("scx_tt: note: {note}");
    }
    if args.slot_clock.is_rt(kernel.preempt_rt) {
        cfg.rt_clock = Some(args.slot_clock_prio);
    } else if let Some(m) = lacks(&kernel, Feature::TimerSlotClock) {
        bail!("{m}");
    }
    if args.perf_table.is_some() {
        if let Some(m) = lacks(&kernel, Feature::CpuperfTargets("--perf-table")) {
            bail!("{m}");
        }
    }
    if args.planner.is_some() {
        // the planner writes a cpuperf target per slot (all at full speed until then)
        cfg.perf = Some(scx_tt::planner::kernel_path::initial_perf(cfg.table.len()));
        // DPM idle entries defer the slot tick under dpm and dpm+dvfs, also after a swap to them
        cfg.dpm = true;
        cfg.dpm_be = args.dpm_be;
    }
    Ok(cfg)
}

/// Step 1: the flags' refusals that read the machine but change nothing (the --control group,
/// directory and path: a live socket there refuses the start whatever else holds;
/// ControlSocket::bind checks again), then root, sched_ext present and free and the plan's
/// CPUs online, before anything is changed on the machine (docs/run-output.md, "Start-up");
/// then what a killed run left changed is put back. Returns the online CPUs.
fn system_checks(args: &RunArgs, plan: &Plan, sysfs: &SysFs) -> Result<(Vec<u32>, Access)> {
    let access = Access {
        group: args
            .control_group
            .as_deref()
            .map(Group::lookup)
            .transpose()?,
    };
    if let Some(path) = &args.control {
        check_free(path)?;
    }
    let online = match check_machine(sysfs, plan) {
        Ok(online) => online,
        Err(e) => {
            // a refused start still puts back what a killed run left changed (as root; a
            // journal a running scx_tt holds is left to it), then says why it refused
            if unsafe { libc::geteuid() } == 0 {
                let _ = recover_journals(&args.run_dir);
            }
            return Err(e);
        }
    };
    // what a killed run left changed on the machine is put back before anything else
    recover_journals(&args.run_dir)?;
    Ok((online, access))
}

/// `--control`: the socket (a live socket at the path, another process's, refuses the start)
/// and, with `--resume`, the control state an earlier run journaled; without it that state is
/// set aside.
fn open_control(
    args: &RunArgs,
    access: &Access,
) -> Result<(Option<ControlSocket>, Option<control_journal::State>)> {
    let socket = args
        .control
        .as_deref()
        .map(|path| ControlSocket::bind(path, access))
        .transpose()?;
    let resume = match (&socket, args.resume) {
        (None, _) => None,
        (Some(_), true) => {
            let state = control_journal::load(&args.run_dir)
                .map_err(anyhow::Error::msg)
                .context("--resume")?;
            if state.is_none() {
                eprintln!(
                    "scx_tt: --resume: no control state under {}: nothing to bring back",
                    args.run_dir.display()
                );
            }
            state
        }
        (Some(_), false) => {
            let aside = control_journal::set_aside(&args.run_dir)
                .map_err(anyhow::Error::msg)
                .context("the control state of an earlier run")?;
            if let Some(n) = aside {
                eprintln!(
                    "scx_tt: the control state of an earlier run ({n} requests) is set \
                     aside as {}.old; start with --resume to bring it back",
                    control_journal::path(&args.run_dir).display()
                );
            }
            None
        }
    };
    Ok((socket, resume))
}

/// Planner mode's idle control (pm_qos limits, journaled, restored when dropped); the
/// kernel's own idle governor otherwise.
fn take_idle(args: &RunArgs, plan: &Plan, model: &PowerModel) -> Result<IdleControl> {
    Ok(match args.planner {
        Some(_) => IdleControl::take(
            args.idle_control,
            Root::new(&args.sysfs_root),
            &args.run_dir,
            &plan.managed,
            model,
            plan.slot_us,
        )?,
        None => IdleControl::kernel(),
    })
}

/// Step 2b: the plan's tasks are found or spawned and settle (DEmOS's init commands run)
/// while the guard band is calibrated on the managed CPUs (`--guard-us` skips the
/// calibration: `provisional` is the flag's value then).
fn start_up(
    args: &RunArgs,
    plan: &Plan,
    procfs: &ProcFs,
    provisional: u64,
    shutdown: &Shutdown,
) -> Result<(Tasks, Guard)> {
    let mut tasks = Tasks::resolve(plan, procfs)?;
    let calibration = match args.guard_us {
        Some(_) => None,
        None => Some(
            calibrate::start(&plan.managed, calibrate::POINTS)
                .context("calibrating the guard band")?,
        ),
    };
    let init = match &args.demos {
        Some(path) => scx_tt::demos::import::init_tasks(
            &scx_tt::demos::Config::from_file(path)
                .with_context(|| format!("--demos {}", path.display()))?,
            plan,
        ),
        None => Vec::new(),
    };
    let settled = tasks.settle(
        plan,
        procfs,
        args.settle_ms,
        &init,
        args.init_timeout_ms,
        || shutdown.requested(),
    )?;
    if let Some(line) = settled {
        eprintln!("scx_tt: {line}");
    }
    let guard = match calibration {
        Some(c) => Guard::calibrated(
            c.finish().context("calibrating the guard band")?,
            plan.slot_us,
        ),
        None => Guard::flag(provisional), // --guard-us, as given
    };
    if guard.source == guard::Source::Calibrated {
        eprintln!("scx_tt: {}", guard.describe());
    }
    if let Some(w) = guard.warning() {
        eprintln!("scx_tt: {w}");
    }
    Ok((tasks, guard))
}

//! `scx_tt --table plan.json --planner bss --simulated-node --control S`: the run's admission
//! engine with nothing attached (issue 35, docs/cluster.md "Simulated nodes"). The planner
//! steps on its own slot clock (CLOCK_MONOTONIC cut into the plan's slots, no kernel), its table
//! and frequency writes go to memory, the tasks are simulated QEMU processes
//! (`scx_tt::node_api::simulated`), and the control socket, the control journal and
//! `--resume`, and the node API (`--node-api`) are the real ones. Needs no root and no
//! sched_ext: a cluster test runs several on one machine.

use super::RunArgs;
use anyhow::{bail, Context, Result};
use scx_tt::clock::{monotonic_ns, sleep_until_ns, SlotClock};
use scx_tt::control::journal as control_journal;
use scx_tt::control::socket::{Access, ControlSocket};
use scx_tt::control::{Control, Engine, KernelPlanner};
use scx_tt::node_api::{self, simulated::Processes};
use scx_tt::plan::{self, Class, LoadError, Plan, Selector};
use scx_tt::planner::kernel_path::KernelPathConfig;
use scx_tt::planner::shared::PlannerHandle;
use scx_tt::planner::Freqs;
use scx_tt::sched::config::{default_guard_us, SchedConfig};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The run loop's turn: the longest a control request waits, and how often gone tasks are
/// reaped.
const TURN: Duration = Duration::from_millis(100);

/// The engine: the planner on its slot clock, the BPF task table as a counter, the threads
/// those of the simulated processes.
struct SimEngine {
    planner: Arc<PlannerHandle>,
    clock: SlotClock,
    procs: Arc<Processes>,
    managed: Vec<u32>,
    online: Vec<u32>,
    next_task: usize,
    loading: Option<PathBuf>,
    verbose: bool,
}

impl Engine for SimEngine {
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }

    fn start_load(&mut self, path: &Path) {
        self.loading = Some(path.to_path_buf());
    }

    fn poll_load(&mut self) -> Option<Result<Plan, LoadError>> {
        self.loading.take().map(plan::from_file)
    }

    fn write_table(&mut self, plan: &Plan, _at_slot: u64) -> Result<(), String> {
        SchedConfig::from_plan(plan, default_guard_us(plan.slot_us), &self.online)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn with_planner<R>(
        &mut self,
        f: impl FnOnce(&mut KernelPlanner, u64) -> R,
    ) -> Result<R, String> {
        let clock = self.clock;
        self.planner
            .with_planner(|| clock.slot_at(monotonic_ns()), f)
            .map_err(|e| e.to_string())
    }

    fn resolve(&mut self, sel: &Selector) -> Result<Vec<u32>, String> {
        self.procs.resolve(sel)
    }

    fn thread_cpus(&mut self, _tid: u32) -> Result<Vec<u32>, String> {
        // a simulated thread may run on every managed CPU
        Ok(self.managed.clone())
    }

    fn next_task_index(&mut self) -> Result<usize, String> {
        Ok(self.next_task)
    }

    fn add_task(
        &mut self,
        _class: Class,
        _cpu: Option<u32>,
        _tids: &[u32],
    ) -> Result<usize, String> {
        self.next_task += 1;
        Ok(self.next_task - 1)
    }

    fn release_task(&mut self, _index: usize, _cpu: Option<u32>) -> Result<(), String> {
        Ok(())
    }

    fn note(&mut self, line: &str) {
        if self.verbose {
            eprintln!("scx_tt: {line}");
        }
    }

    fn warn(&mut self, line: &str) {
        eprintln!("scx_tt: warning: {line}");
    }
}

/// The flags a simulated node needs and those it cannot honour, refused by name.
fn check_flags(args: &RunArgs) -> Result<()> {
    if args.planner.is_none() {
        bail!("--simulated-node: needs --planner (bss, dvfs, dpm or dpm+dvfs): the node's admission engine is the planner");
    }
    if args.control.is_none() {
        bail!("--simulated-node: needs --control PATH: the node API and `scx_tt ctl` reach the engine through it");
    }
    for (given, flag) in [
        (args.demos.is_some(), "--demos"),
        (args.trace.is_some(), "--trace"),
        (args.perf_table.is_some(), "--perf-table"),
        (args.planner_log.is_some(), "--planner-log"),
        (args.exit_when_tasks_exit, "--exit-when-tasks-exit"),
        (args.planner_threads > 1, "--planner-threads"),
    ] {
        if given {
            bail!("{flag} with --simulated-node: refused (nothing runs on the CPUs of a simulated node)");
        }
    }
    Ok(())
}

/// The planner of `plan` under `--planner`, open loop (no kernel observations), as the run
/// builds it (planner_loop.rs `kernel_planner`).
fn planner(args: &RunArgs, plan: &Plan, cfg: &SchedConfig) -> Result<Arc<PlannerHandle>> {
    let policy = args.planner.expect("checked");
    let config = KernelPathConfig {
        policy,
        lead: args.planner_lead_slots,
        frame_slots: plan.frame_slots,
        slot_ns: cfg.slot_ns,
        freqs: Freqs::xeon_default(),
    };
    let p = KernelPlanner::new(
        &plan.planner_inputs(),
        plan.tasks.len(),
        config,
        cfg.entries(),
    )
    .context("planner mode")?;
    Ok(Arc::new(PlannerHandle::new(p, cfg.slot_ns)))
}

/// The planner thread: one turn per slot on `clock`, its writes dropped (there is no table).
fn planner_thread(
    handle: Arc<PlannerHandle>,
    clock: SlotClock,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    while !stop.load(Ordering::Relaxed) {
        let cur = clock.slot_at(monotonic_ns());
        handle.turn(cur).context("stepping the planner")?;
        let next = cur.map_or(clock.t0_ns, |c| clock.start_ns(c + 1));
        sleep_until_ns(next.min(monotonic_ns() + 100_000_000));
    }
    Ok(())
}

/// Stores the control state when a request changed it (scx_tt::control::journal), for the
/// kernel run and the simulated node alike; a failure is warned about (the change itself holds).
pub(super) fn store_control_state(args: &RunArgs, control: &mut Control) {
    let Some(requests) = control.take_journal() else {
        return;
    };
    let state = control_journal::State {
        format: control_journal::FORMAT.into(),
        table: args
            .table
            .as_deref()
            .map(|t| t.display().to_string())
            .unwrap_or_default(),
        requests,
    };
    if let Err(e) = control_journal::store(&args.run_dir, &state) {
        eprintln!("scx_tt: warning: the control state: {e} (a restart with --resume would not bring this change back)");
    }
}

/// `--resume`: the journaled requests, served again in order before any client.
fn resume(args: &RunArgs, control: &mut Control, engine: &mut SimEngine) -> Result<()> {
    let Some(state) = control_journal::load(&args.run_dir)
        .map_err(anyhow::Error::msg)
        .context("--resume")?
    else {
        eprintln!(
            "scx_tt: --resume: no control state under {}: nothing to bring back",
            args.run_dir.display()
        );
        return Ok(());
    };
    let (mut held, total) = (0, state.requests.len());
    for line in &state.requests {
        let mut reply = control.serve(line.trim_end(), engine);
        if reply.is_none() {
            reply = control.poll(engine);
        }
        let text = reply.map_or_else(|| "no reply".into(), |r| r.to_line());
        let ok = text.contains("\"ok\":true") && !text.contains("\"accepted\":false");
        held += usize::from(ok);
        if !ok {
            eprintln!(
                "scx_tt: --resume: NO LONGER HOLDS: {}: {}",
                line.trim_end(),
                text.trim_end()
            );
        }
    }
    eprintln!("scx_tt: --resume: {held} of {total} journaled requests hold again");
    store_control_state(args, control);
    Ok(())
}

/// The simulated node until SIGINT/SIGTERM or `--duration-s`.
pub fn run(args: &RunArgs, plan: &Plan) -> Result<i32> {
    check_flags(args)?;
    let online: Vec<u32> = plan
        .managed
        .iter()
        .chain(&plan.housekeeping)
        .copied()
        .collect();
    let cfg = SchedConfig::from_plan(plan, default_guard_us(plan.slot_us), &online)
        .context("the plan's configuration")?;
    let procs = Arc::new(Processes::open(&args.run_dir).map_err(anyhow::Error::msg)?);
    let sock_path = args.control.clone().expect("checked");
    let mut sock = ControlSocket::bind(&sock_path, &Access { group: None })?;
    if !args.resume {
        if let Some(n) = control_journal::set_aside(&args.run_dir).map_err(anyhow::Error::msg)? {
            eprintln!("scx_tt: the control state of an earlier run ({n} requests) is set aside; start with --resume to bring it back");
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let s = stop.clone();
        ctrlc::set_handler(move || s.store(true, Ordering::SeqCst))
            .context("the signal handler")?;
    }
    let handle = planner(args, plan, &cfg)?;
    let clock = SlotClock::new(monotonic_ns() + cfg.slot_ns, cfg.slot_ns);
    let thread = {
        let (h, s) = (handle.clone(), stop.clone());
        std::thread::Builder::new()
            .name("planner".into())
            .spawn(move || planner_thread(h, clock, s))?
    };
    let policy = args.planner.expect("checked");
    let table = args
        .table
        .as_deref()
        .map(|t| t.display().to_string())
        .unwrap_or_default();
    let mut control = Control::new(plan.clone(), table, clock)
        .with_planner(policy.name(), args.planner_lead_slots);
    let mut engine = SimEngine {
        planner: handle,
        clock,
        procs: procs.clone(),
        managed: plan.managed.clone(),
        online,
        next_task: plan.tasks.len(),
        loading: None,
        verbose: args.verbose,
    };
    if args.resume {
        resume(args, &mut control, &mut engine)?;
    }
    let api = start_node_api(args, Some(procs.clone()))?;
    eprintln!(
        "scx_tt: simulated node: {} managed CPUs, slots of {} us, frame {} slots, planner {policy}, control socket {}",
        plan.managed.len(),
        plan.slot_us,
        plan.frame_slots,
        sock_path.display()
    );
    let deadline = args
        .duration_s
        .map(|s| monotonic_ns().saturating_add((s * 1e9) as u64));
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| monotonic_ns() < d) {
        if thread.is_finished() {
            break;
        }
        turn(args, &mut sock, &mut control, &mut engine);
    }
    // the socket first: a node API request still in flight then fails at once instead of
    // waiting out its timeout on a socket nobody serves
    drop(sock);
    drop(api);
    stop.store(true, Ordering::SeqCst);
    let planned = thread
        .join()
        .map_err(|_| anyhow::anyhow!("the planner thread panicked"))?;
    planned?;
    eprintln!("scx_tt: simulated node stopped");
    Ok(0)
}

/// One turn of the loop: wait up to [`TURN`] for the socket, serve it, deliver a deferred
/// reply, reap the tasks whose simulated processes stopped, journal what changed.
fn turn(args: &RunArgs, sock: &mut ControlSocket, control: &mut Control, engine: &mut SimEngine) {
    let ready = sock.wait(TURN);
    let mut serve = |line: &str| {
        let r = control.serve(line, engine).map(|r| r.to_line());
        store_control_state(args, control);
        r
    };
    match ready {
        true => sock.serve_ready(&mut serve),
        false => sock.serve(&mut serve),
    }
    if let Some(reply) = control.poll(engine) {
        sock.deliver(&reply.to_line());
    }
    let procs = engine.procs.clone();
    control.reap(engine, |tid| procs.alive(tid));
    control.finish_jobs(engine);
    control.take_added();
    store_control_state(args, control);
}

/// `--node-api`: the node admission API on the `--control` socket (a simulated node's with its
/// processes), or nothing without the flag.
pub fn start_node_api(
    args: &RunArgs,
    procs: Option<Arc<Processes>>,
) -> Result<Option<node_api::NodeApi>> {
    let Some(listen) = args.node_api else {
        return Ok(None);
    };
    let api = node_api::NodeApi::start(node_api::Config {
        listen,
        token_file: args
            .node_token_file
            .clone()
            .context("--node-api needs --node-token-file")?,
        node: node_name(args),
        control: args.control.clone().context("--node-api needs --control")?,
        procs,
    })
    .map_err(anyhow::Error::msg)?;
    eprintln!("scx_tt: node API listening on {}", api.addr);
    Ok(Some(api))
}

/// `--node-name`, else the host name.
pub fn node_name(args: &RunArgs) -> String {
    args.node_name.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".into())
    })
}

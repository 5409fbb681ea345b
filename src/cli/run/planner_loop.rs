//! The planner thread of `scx_tt --planner bss|dvfs` (docs/planner.md, "Kernel path"): on a
//! housekeeping CPU, once per slot of the BPF slot clock (`t0_ns + k · slot_ns`, the epoch the
//! loader armed the timers with), it steps the shared [`KernelPlanner`] up to `lead` slots
//! ahead and writes the changed entries (each slot's cpuperf target first, then its owner).
//! The pure part (which slots, which entries, late slots) is `KernelPlanner::advance`, shared
//! with the control socket's admissions through `PlannerHandle::turn` (which keeps a long
//! admission from delaying the slot decisions, `planner::shared`); this
//! file builds the planner, and is the clock, the thread and the map writes. The planner
//! outlives a restart of the BPF scheduler; each scheduler gets its own thread and writers.
//!
//! With `--demos CONFIG` the slots are DEmOS's sequence instead (docs/demos.md "Sequenced
//! kernel run"): each turn the thread feeds BPF's observations to the sequencer's driver
//! (`scx_tt::demos::seq_driver`, pure) and writes the entries it decides `lead` slots ahead;
//! the online planner is built but not stepped. The driver outlives a restart like the planner
//! (the run keeps both, [`demos_seq`]); at each stop of the thread its schedule log is written to `--schedule-log` and
//! its figures to stderr.

use super::freq::{Backend, Freq, FreqDriver};
use super::idle_ctl::IdleControl;
use super::RunArgs;
use anyhow::{anyhow, Context, Result};
use scx_tt::clock::{monotonic_ns, sleep_until_ns, SlotClock};
use scx_tt::demos::seq_driver::SeqDriver;
use scx_tt::demos::sequencer::Sequencer;
use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{render_log, Config, CpuSet};
use scx_tt::drive;
use scx_tt::energy::model::PowerModel;
use scx_tt::plan::Plan;
use scx_tt::planner::kernel_path::SlotObs;
use scx_tt::planner::kernel_path::{KernelPathConfig, KernelPlanner};
use scx_tt::planner::pool::StepPool;
use scx_tt::planner::shared::{PlannerHandle, Turn};
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sched::affinity;
use scx_tt::sched::config::SchedConfig;
use scx_tt::sched::loader::{DpmWriter, Scheduler, TableWriter};
use scx_tt::sched::obs::{ObsFollower, ObsReader};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The sequenced DEmOS run of `--planner ... --demos`, shared by the planner threads of the
/// run's BPF schedulers (one run per process: the daemon enforces one plan) and the run loop,
/// which takes the decided slots' events (`-m`/`-M`/`-p`, demos.rs) as their slots begin.
pub struct DemosSeq {
    driver: Arc<Mutex<SeqDriver>>,
    schedule_log: Option<PathBuf>,
}

/// With `--demos`: the sequencer of the configuration (the plan is its import, checked by
/// `demos::check`), its processes on the plan's tasks, `all` = the managed CPUs.
pub fn demos_seq(args: &RunArgs, plan: &Plan) -> Result<Option<Arc<DemosSeq>>> {
    let Some(path) = &args.demos else {
        return Ok(None);
    };
    let config = Config::from_file(path).with_context(|| format!("--demos {}", path.display()))?;
    let all = CpuSet::from_cpus(plan.managed.iter().copied());
    let seed = scx_tt::demos::rng::Mt19937::DEFAULT_SEED;
    let seq = Sequencer::for_plan(&config, plan, all, seed)
        .map_err(|e| anyhow!("--demos {}: {e}", path.display()))?;
    let driver = SeqDriver::new(
        seq,
        args.planner_lead_slots,
        plan.frame_slots,
        plan.managed.len(),
    )
    .map_err(|e| anyhow!("--demos {}: {e}", path.display()))?
    .with_events();
    Ok(Some(Arc::new(DemosSeq {
        driver: Arc::new(Mutex::new(driver)),
        schedule_log: args.schedule_log.clone(),
    })))
}

impl DemosSeq {
    /// The driver, for the run loop's events (demos.rs).
    pub fn driver(&self) -> Arc<Mutex<SeqDriver>> {
        self.driver.clone()
    }

    /// The schedule log to `--schedule-log`, the figures on stderr.
    fn report(&self) -> Result<()> {
        let d = self.driver.lock().unwrap_or_else(|e| e.into_inner());
        let (log, dropped) = d.log();
        if let Some(path) = &self.schedule_log {
            std::fs::write(path, render_log(log))
                .with_context(|| format!("--schedule-log {}", path.display()))?;
        }
        let s = d.summary();
        let lag = s.lag.map_or_else(
            || "none taken".to_string(),
            |(p50, p99, max)| format!("lag p50 {p50}, p99 {p99}, max {max} slots"),
        );
        eprintln!(
            "scx_tt: demos: {} slots sequenced ({} decided late, {} written late), {} log lines \
             ({dropped} over the cap), {} completions taken ({lag}), {} stale, {} SC overruns, \
             {} events over the queue's cap",
            s.decided,
            s.late,
            s.late_writes,
            log.len(),
            s.completions,
            s.stale,
            s.overruns,
            s.events_dropped
        );
        Ok(())
    }
}

/// SCHED_FIFO priority of the planner thread (above normal tasks on its housekeeping CPU).
const FIFO_PRIORITY: i32 = 10;
/// With `--demos`: how often the thread looks again for the observation of the slot that just
/// closed (up to half a slot after the boundary).
const OBS_RETRY_NS: u64 = 200_000;

pub struct PlannerLoop {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<()>>>,
}

/// The map writers of the planner thread.
pub struct Writers {
    pub table: TableWriter,
    /// The perf map (`None` under `--freq-backend none`: no perf map is loaded).
    pub perf: Option<TableWriter>,
    /// The cpufreq backend, written after the maps each turn (freq.rs).
    pub freq: Option<Arc<Mutex<FreqDriver>>>,
    /// The closed loop: BPF's per-slot observations, read each turn.
    pub obs: Option<ObsReader>,
    /// DPM idle period ends and kicks (src/bpf/tt_sched.bpf.c K), after the entries.
    pub dpm: Option<DpmWriter>,
    /// The idle control: a pm_qos limit per DPM idle period (idle_ctl.rs).
    pub idle: Option<Arc<Mutex<IdleControl>>>,
    /// `--demos`: the sequencer decides the slots instead of the planner.
    pub demos: Option<Arc<DemosSeq>>,
    /// `--planner-threads`: the helpers, woken [`helper_wake_ahead_ns`] before each slot tick.
    pub helpers: Option<Arc<StepPool>>,
}

/// The planner of `--planner POLICY`, deciding from the table `cfg` loads (all at full speed).
pub fn kernel_planner(
    policy: Policy,
    args: &RunArgs,
    plan: &Plan,
    model: &PowerModel,
    cfg: &SchedConfig,
) -> Result<Arc<PlannerHandle>> {
    let freqs = dvfs_freqs(args, plan, model)?;
    if args.verbose {
        eprintln!(
            "scx_tt: dvfs frequencies (of the maximum, ppm): {:?}",
            freqs.ppm()
        );
    }
    let config = KernelPathConfig {
        policy,
        lead: args.planner_lead_slots,
        frame_slots: plan.frame_slots,
        slot_ns: cfg.slot_ns,
        freqs,
    };
    let planner = KernelPlanner::new(
        &plan.planner_inputs(),
        plan.tasks.len(),
        config,
        cfg.entries(),
    )
    .context("planner mode")?;
    let mut planner = planner;
    if !args.planner_open_loop {
        planner.close_loop();
    }
    if args.planner_log.is_some() {
        planner.enable_log();
    }
    let cpus = helper_cpus(args, plan, cfg)?;
    if cpus.is_empty() {
        return Ok(Arc::new(PlannerHandle::new(planner, cfg.slot_ns)));
    }
    let spin = std::time::Duration::from_nanos(2 * helper_wake_ahead_ns(cfg.slot_ns));
    let pinned = cpus.clone();
    let pool = StepPool::new(cpus.len(), spin, move |h| prepare_thread(Some(pinned[h])))
        .context("starting the planner's helper threads (--planner-threads)")?;
    pool.wake_on_demand();
    if args.verbose {
        eprintln!(
            "scx_tt: the planner steps on {} threads: helpers on CPUs {cpus:?}, slots of at \
             least {} CPUs cut",
            cpus.len() + 1,
            args.planner_shard_min
        );
    }
    Ok(Arc::new(PlannerHandle::with_pool(
        planner,
        cfg.slot_ns,
        Arc::new(pool),
        args.planner_shard_min as usize,
    )))
}

/// How long before a slot tick the planner loop wakes its helper threads (they spin twice as
/// long, through the step after the tick): 200 µs, at most a quarter of the slot. Waking a
/// parked thread takes 10-50 µs on the machines of bench/results/issue34-step.txt.
pub fn helper_wake_ahead_ns(slot_ns: u64) -> u64 {
    (slot_ns / 4).min(200_000)
}

/// The CPUs of the `--planner-threads` helpers: housekeeping CPUs (`cfg.housekeeping`, every
/// online CPU the plan does not manage) other than the planner thread's (the plan's first
/// housekeeping CPU), one per helper, in order; empty for one thread. Refused, naming the
/// flag, its value and the rule, when the node has too few.
pub fn helper_cpus(args: &RunArgs, plan: &Plan, cfg: &SchedConfig) -> Result<Vec<u32>> {
    let helpers = args.planner_threads.saturating_sub(1) as usize;
    if args.planner.is_none() || helpers == 0 {
        return Ok(Vec::new());
    }
    let planner_cpu = plan.housekeeping.first().copied();
    let free: Vec<u32> = cfg
        .housekeeping
        .iter()
        .copied()
        .filter(|&c| Some(c) != planner_cpu)
        .collect();
    if free.len() < helpers {
        anyhow::bail!(
            "--planner-threads {}: each of its {helpers} helper thread(s) needs a housekeeping \
             CPU of its own besides the planner thread's (CPU {}); this node has {} more \
             ({free:?}); next step: --planner-threads {} or fewer, or more online CPUs the \
             plan does not manage",
            args.planner_threads,
            planner_cpu.map_or_else(|| "none".to_string(), |c| c.to_string()),
            free.len(),
            free.len() + 1
        );
    }
    Ok(free[..helpers].to_vec())
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

impl PlannerLoop {
    /// Starts the thread of `planner` (or of the DEmOS sequencer `demos`) writing into
    /// `sched`'s table and perf map, pinned to the plan's first housekeeping CPU.
    pub fn for_scheduler(
        planner: &Arc<PlannerHandle>,
        demos: Option<&Arc<DemosSeq>>,
        sched: &mut Scheduler,
        plan: &Plan,
        clock: SlotClock,
        freq: &Freq,
        idle: &Arc<Mutex<IdleControl>>,
    ) -> Result<Self> {
        let closed = planner.read(|p| p.loop_closed()).unwrap_or(false);
        let writers = Writers {
            table: sched.table_writer()?,
            perf: match freq.backend {
                Backend::None => None,
                Backend::Cpufreq | Backend::Cpuperf => Some(sched.perf_writer()?),
            },
            freq: freq.driver.clone(),
            obs: if closed {
                Some(sched.obs_reader()?)
            } else {
                None
            },
            dpm: Some(sched.dpm_writer()?),
            idle: idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .polling()
                .then(|| idle.clone()),
            demos: demos.cloned(),
            helpers: planner.pool().cloned(),
        };
        Self::start(
            planner.clone(),
            writers,
            plan.frame_slots,
            clock,
            plan.housekeeping.first().copied(),
        )
    }

    /// Starts the thread, pinned to `cpu` (a housekeeping CPU) when given.
    pub fn start(
        online: Arc<PlannerHandle>,
        writers: Writers,
        frame_slots: u64,
        clock: SlotClock,
        cpu: Option<u32>,
    ) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("scx_tt-planner".into())
                .spawn(move || {
                    prepare_thread(cpu);
                    match writers.demos.clone() {
                        Some(d) => {
                            let ran = run_demos(&d, &writers, frame_slots, clock, &stop);
                            let reported = d.report();
                            ran.and(reported)
                        }
                        None => run(&online, &writers, frame_slots, clock, &stop),
                    }
                })
                .context("starting the planner thread")?
        };
        // its CPU and class from here, before its first run (the thread sets both again, and
        // warns if refused)
        let _ = affinity::start_fifo(
            &handle,
            cpu.as_ref().map(std::slice::from_ref),
            FIFO_PRIORITY,
        );
        Ok(PlannerLoop {
            stop,
            handle: Some(handle),
        })
    }

    /// The thread ended (an error: it only ends when told to).
    pub fn finished(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Stops the thread and returns its error, if it had one.
    pub fn stop(&mut self) -> Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| anyhow!("the planner thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for PlannerLoop {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("scx_tt: warning: planner thread: {e:#}");
        }
    }
}

/// Pin to the housekeeping CPU and ask for SCHED_FIFO; warn (and go on) when refused.
fn prepare_thread(cpu: Option<u32>) {
    if let Some(cpu) = cpu {
        let ret = affinity::set(&[cpu]);
        if let Err(e) = ret {
            eprintln!("scx_tt: warning: pinning the planner thread to CPU {cpu}: {e}");
        }
    }
    let param = libc::sched_param {
        sched_priority: FIFO_PRIORITY,
    };
    // SAFETY: plain syscall on the calling thread with a valid parameter.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        eprintln!(
            "scx_tt: warning: the planner thread runs without SCHED_FIFO ({}); it may decide \
             slots late under load (planner_late_slots)",
            std::io::Error::last_os_error()
        );
    }
}

/// While the run loop holds the planner for a control operation (an admission's test and its
/// BPF registration), it runs at the planner thread's SCHED_FIFO priority on the planner's CPU:
/// as a normal task on a busy housekeeping CPU it was preempted while holding the lock, and the
/// planner thread, which then has to wait, decided nothing (the admit VM test, 2026-11-29: a
/// registration held the lock 203 ms beside four busy processes, the planner thread's 20 us
/// polls took 228 ms of that CPU, 47 slots were decided late). At the same priority the
/// planner thread does not preempt it either. Dropped: the thread's policy and CPUs as before.
/// Refused (no CAP_SYS_NICE, a CPU set it may not use): nothing changes, the operation runs as
/// before.
pub struct HoldBoost {
    before: Option<(i32, libc::sched_param, Vec<u32>)>,
}

impl HoldBoost {
    pub fn new(cpu: Option<u32>) -> Self {
        let none = HoldBoost { before: None };
        let Some(cpu) = cpu else { return none };
        // SAFETY: plain syscalls on the calling thread with parameters we own.
        let (policy, mut param) = (unsafe { libc::sched_getscheduler(0) }, unsafe {
            std::mem::zeroed::<libc::sched_param>()
        });
        if policy < 0 || unsafe { libc::sched_getparam(0, &mut param) } != 0 {
            return none;
        }
        if policy & !libc::SCHED_RESET_ON_FORK != libc::SCHED_OTHER {
            // already real-time (or batch/idle by the admin's choice): left as it is
            return none;
        }
        let cpus = affinity::get();
        if cpus.is_empty() || affinity::set(&[cpu]).is_err() {
            return none;
        }
        let fifo = libc::sched_param {
            sched_priority: FIFO_PRIORITY,
        };
        // SAFETY: as above.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &fifo) } != 0 {
            let _ = affinity::set(&cpus);
            return none;
        }
        HoldBoost {
            before: Some((policy, param, cpus)),
        }
    }
}

impl Drop for HoldBoost {
    fn drop(&mut self) {
        if let Some((policy, param, cpus)) = self.before.take() {
            // SAFETY: restores the calling thread's own policy with the parameter it had.
            unsafe { libc::sched_setscheduler(0, policy, &param) };
            let _ = affinity::set(&cpus);
        }
    }
}

/// The kernel as the run driver's backend (`scx_tt::drive`): the slot clock is CLOCK_MONOTONIC
/// on the grid BPF arms its timers with, the inputs are the slots BPF observed (the closed
/// loop's ring), and the effects are the map writes, then DPM, pm_qos and cpufreq.
struct Kernel<'a> {
    writers: &'a Writers,
    frame_slots: u64,
    clock: SlotClock,
    stop: &'a AtomicBool,
    /// The closed loop: every slot that closes from this thread's start on (after a restart,
    /// the slots of the gap were never published: the planner counts them whole).
    follower: Option<(ObsFollower, &'a ObsReader)>,
}

impl<'a> Kernel<'a> {
    fn new(writers: &'a Writers, frame_slots: u64, clock: SlotClock, stop: &'a AtomicBool) -> Self {
        let follower = writers.obs.as_ref().map(|r| {
            let first = clock.slot_at(monotonic_ns()).unwrap_or(0);
            (ObsFollower::new(r.managed().len(), first), r)
        });
        Kernel {
            writers,
            frame_slots,
            clock,
            stop,
            follower,
        }
    }

    fn index(&self, cpu: usize, frame_slot: u64) -> usize {
        cpu * self.frame_slots as usize + frame_slot as usize
    }

    /// The slot `slot` has started by now: a write for it is late (BPF keeps what its tick read).
    fn started(&self, slot: u64) -> bool {
        self.clock
            .slot_at(monotonic_ns())
            .is_some_and(|c| c >= slot)
    }
}

impl drive::Backend for Kernel<'_> {
    type Input = (usize, u64, SlotObs);
    type Decision = Turn;
    type Error = anyhow::Error;

    fn begin(&mut self) -> Option<drive::Cur> {
        (!self.stop.load(Ordering::SeqCst)).then(|| self.clock.slot_at(monotonic_ns()))
    }

    fn collect(&mut self, cur: drive::Cur, inputs: &mut Vec<Self::Input>) -> Result<()> {
        if let (Some((f, reader)), Some(c)) = (self.follower.as_mut(), cur) {
            f.poll(
                c,
                |m, slot| reader.read_index(m, slot),
                |m, o| {
                    inputs.push((
                        m,
                        o.slot,
                        SlotObs::Seen {
                            owner: o.owner,
                            done: o.done,
                            owner_ns: o.owner_ns,
                            avail_ns: o.avail_ns,
                        },
                    ))
                },
            );
        }
        Ok(())
    }

    /// Each slot's cpuperf target first, then its owner.
    fn apply(&mut self, _cur: drive::Cur, adv: &Turn, late: &mut Vec<(usize, u64)>) -> Result<()> {
        let w = self.writers;
        for e in &adv.writes {
            let index = self.index(e.cpu, e.frame_slot);
            if let (Some(perf), Some(writer)) = (e.perf, &w.perf) {
                writer
                    .write(index, perf)
                    .with_context(|| format!("writing perf entry {index}"))?;
            }
            if let Some(task) = e.task {
                w.table
                    .write(index, task)
                    .with_context(|| format!("writing table entry {index}"))?;
            }
            // decided in time, but written once its slot had started: the slot runs the
            // entry's previous value (BPF keeps its tick's), counted in the summary
            if (e.task.is_some() || (e.perf.is_some() && w.perf.is_some())) && self.started(e.slot)
            {
                late.push((e.cpu, e.slot));
            }
        }
        Ok(())
    }

    /// The ends of DPM idle periods, after their entries (a lowered one with a kick); each
    /// period's idle-state limit (pm_qos) once BPF knows the period; then the frequencies
    /// (sysfs writes, slower than map writes): lowers for cur, raises for cur + 1.
    fn settle(&mut self, cur: drive::Cur, adv: &Turn) -> Result<()> {
        let w = self.writers;
        if let Some(dpm) = &w.dpm {
            for d in &adv.dpm {
                dpm.publish(d.cpu, d.until, d.kick).with_context(|| {
                    format!(
                        "publishing the DPM idle period end {} of CPU index {}",
                        d.until, d.cpu
                    )
                })?;
            }
        }
        if let (Some(idle), false) = (&w.idle, adv.dpm.is_empty()) {
            let mut i = idle.lock().unwrap_or_else(|e| e.into_inner());
            for d in &adv.dpm {
                i.period(d.cpu, d.from, d.until, cur);
            }
        }
        if let Some(freq) = &w.freq {
            let mut f = freq.lock().unwrap_or_else(|e| e.into_inner());
            for e in &adv.writes {
                if let Some(ppm) = e.ppm {
                    f.set_entry(e.cpu, e.frame_slot, ppm);
                }
            }
            f.turn(cur, &self.clock);
        }
        Ok(())
    }

    /// Just after the next boundary of the slot clock; with helper threads, they are woken
    /// [`helper_wake_ahead_ns`] before it, to spin through the step that follows.
    fn wait(&mut self, cur: drive::Cur) {
        let at = match cur {
            Some(c) => self.clock.start_ns(c + 1),
            None => self.clock.t0_ns,
        };
        if let Some(pool) = &self.writers.helpers {
            let ahead = helper_wake_ahead_ns(self.clock.slot_ns);
            sleep_until_ns(at.saturating_sub(ahead));
            pool.wake();
        }
        sleep_until_ns(at);
    }
}

/// The shared planner as the decider: a turn takes the planner lock only when a slot up to
/// cur + lead is undecided (an admission decides the slots its run covers first,
/// planner::shared); observations are applied by whoever holds the planner next.
struct Shared<'a>(&'a PlannerHandle);

impl<'k> drive::Decider<Kernel<'k>> for Shared<'_> {
    fn decide(&mut self, cur: drive::Cur, obs: &mut Vec<(usize, u64, SlotObs)>) -> Result<Turn> {
        self.0
            .turn_observing(cur, std::mem::take(obs))
            .context("stepping the planner")
    }

    fn note_late(&mut self, late: &[(usize, u64)]) {
        self.0.note_late_writes(late);
    }
}

fn run(
    online: &PlannerHandle,
    writers: &Writers,
    frame_slots: u64,
    clock: SlotClock,
    stop: &AtomicBool,
) -> Result<()> {
    let mut kernel = Kernel::new(writers, frame_slots, clock, stop);
    drive::drive(&mut Shared(online), &mut kernel).map(|_| ())
}

/// `--demos`: the kernel backend with DEmOS's sequencer deciding. Its inputs are each observed
/// slot's (slot, owner, done); a turn waits up to half a slot for the tick of the slot before
/// (below), and a write counts late once per slot.
struct Sequenced<'a> {
    kernel: Kernel<'a>,
    /// The last slot observed per CPU.
    seen: Vec<Option<u64>>,
    lead: u64,
}

impl drive::Backend for Sequenced<'_> {
    type Input = (u64, Option<u32>, bool);
    type Decision = Vec<scx_tt::demos::seq_driver::SeqWrite>;
    type Error = anyhow::Error;

    fn begin(&mut self) -> Option<drive::Cur> {
        self.kernel.begin()
    }

    /// The tick that publishes slot c - 1 may come after this turn's wake-up: with lead >= 2,
    /// wait for it up to half a slot (slot c + lead is due before the tick of c + lead - 1), so
    /// that a completion in c - 1 is not a slot later.
    fn collect(&mut self, cur: drive::Cur, inputs: &mut Vec<Self::Input>) -> Result<()> {
        let Some(c) = cur else { return Ok(()) };
        let Some((follower, reader)) = self.kernel.follower.as_mut() else {
            return Ok(());
        };
        let until = self.kernel.clock.start_ns(c) + self.kernel.clock.slot_ns / 2;
        loop {
            let seen = &mut self.seen;
            follower.poll(
                c,
                |m, slot| reader.read_index(m, slot),
                |m, o| {
                    seen[m] = seen[m].max(Some(o.slot));
                    inputs.push((o.slot, o.owner, o.done));
                },
            );
            let all = c == 0 || self.seen.iter().all(|s| *s >= Some(c - 1));
            if all
                || self.lead < 2
                || monotonic_ns() >= until
                || self.kernel.stop.load(Ordering::SeqCst)
            {
                return Ok(());
            }
            sleep_until_ns(monotonic_ns() + OBS_RETRY_NS);
        }
    }

    /// Written once its slot had started: the slot runs the entry before (BPF F).
    fn apply(
        &mut self,
        _cur: drive::Cur,
        writes: &Self::Decision,
        late: &mut Vec<(usize, u64)>,
    ) -> Result<()> {
        let mut last_late = None;
        for w in writes {
            let index = self.kernel.index(w.cpu, w.frame_slot);
            self.kernel
                .writers
                .table
                .write(index, w.entry)
                .with_context(|| format!("writing table entry {index}"))?;
            if last_late != Some(w.slot) && self.kernel.started(w.slot) {
                last_late = Some(w.slot);
                late.push((w.cpu, w.slot));
            }
        }
        Ok(())
    }

    fn wait(&mut self, cur: drive::Cur) {
        self.kernel.wait(cur)
    }
}

/// DEmOS's sequencer as the decider: observations in order, then the slots through the lead.
struct SeqDecider<'a>(&'a DemosSeq);

impl<'k> drive::Decider<Sequenced<'k>> for SeqDecider<'_> {
    fn decide(
        &mut self,
        cur: drive::Cur,
        obs: &mut Vec<(u64, Option<u32>, bool)>,
    ) -> Result<Vec<scx_tt::demos::seq_driver::SeqWrite>> {
        let mut d = self.0.driver.lock().unwrap_or_else(|e| e.into_inner());
        for (slot, owner, done) in obs.drain(..) {
            d.observe(slot, owner, done);
        }
        Ok(d.advance(cur))
    }

    /// One per slot written late.
    fn note_late(&mut self, late: &[(usize, u64)]) {
        if !late.is_empty() {
            self.0
                .driver
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .note_late_writes(late.len() as u64);
        }
    }
}

/// The thread's loop with `--demos`: observations to the sequencer, its entries to the table.
fn run_demos(
    demos: &DemosSeq,
    writers: &Writers,
    frame_slots: u64,
    clock: SlotClock,
    stop: &AtomicBool,
) -> Result<()> {
    if writers.obs.is_none() {
        anyhow::bail!("--demos in planner mode needs the closed loop's observations");
    }
    let kernel = Kernel::new(writers, frame_slots, clock, stop);
    let cpus = writers.obs.as_ref().map_or(0, |r| r.managed().len());
    let lead = demos
        .driver
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .lead();
    let mut backend = Sequenced {
        kernel,
        seen: vec![None; cpus],
        lead,
    };
    drive::drive(&mut SeqDecider(demos), &mut backend).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn run_args(argv: &[&str]) -> Result<RunArgs, clap::Error> {
        <Cli as clap::Parser>::try_parse_from(std::iter::once("scx_tt").chain(argv.iter().copied()))
            .map(|c| c.run)
    }

    /// `--planner-threads N`: N - 1 helpers, each on a housekeeping CPU of its own besides the
    /// planner thread's; too few is refused naming the flag, the value and the CPUs there are,
    /// and numbers outside the ranges are refused by the parser naming the flag.
    #[test]
    fn planner_threads_take_housekeeping_cpus_of_their_own_or_are_refused() {
        let plan = scx_tt::plan::from_str(include_str!("../../../schedules/demo.json"))
            .expect("the demo plan");
        assert_eq!(
            (plan.managed.clone(), plan.housekeeping.clone()),
            (vec![1, 2], vec![0])
        );
        let cfg = SchedConfig::from_plan(&plan, 0, &[0, 1, 2, 3, 4]).expect("config");
        let helpers = |argv: &[&str]| {
            let mut all = vec!["--table", "x.json", "--planner", "dvfs"];
            all.extend_from_slice(argv);
            helper_cpus(&run_args(&all).expect("parses"), &plan, &cfg)
        };
        assert_eq!(helpers(&[]).expect("one thread"), Vec::<u32>::new());
        assert_eq!(
            helpers(&["--planner-threads", "1"]).expect("one"),
            Vec::<u32>::new()
        );
        assert_eq!(helpers(&["--planner-threads", "2"]).expect("two"), vec![3]);
        assert_eq!(
            helpers(&["--planner-threads", "3"]).expect("three"),
            vec![3, 4]
        );
        let e = helpers(&["--planner-threads", "4"])
            .expect_err("four")
            .to_string();
        for part in [
            "--planner-threads 4",
            "(CPU 0)",
            "has 2 more ([3, 4])",
            "3 or fewer",
        ] {
            assert!(e.contains(part), "{part:?} not in {e:?}");
        }
        for (flag, bad) in [
            ("--planner-threads", "0"),
            ("--planner-threads", "17"),
            ("--planner-threads", "-1"),
            ("--planner-threads", "18446744073709551617"),
            ("--planner-shard-min", "1"),
            ("--planner-shard-min", "1025"),
        ] {
            let mut argv = vec!["--table", "x.json", "--planner", "bss"];
            if flag != "--planner-threads" {
                argv.extend_from_slice(&["--planner-threads", "2"]);
            }
            let given = format!("{flag}={bad}");
            argv.push(&given);
            let e = run_args(&argv).err().map(|e| e.to_string());
            assert!(
                e.as_ref()
                    .is_some_and(|e| e.contains(flag) && e.contains(bad)),
                "{flag} {bad}: {e:?}"
            );
        }
        // the helpers' flags need planner mode
        assert!(run_args(&["--table", "x.json", "--planner-threads", "2"]).is_err());
        assert!(run_args(&[
            "--table",
            "x.json",
            "--planner",
            "bss",
            "--planner-shard-min",
            "8"
        ])
        .is_err());
    }

    fn policy() -> (i32, i32) {
        let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
        // SAFETY: queries of the calling thread into a parameter we own.
        let policy = unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK;
        unsafe { libc::sched_getparam(0, &mut param) };
        (policy, param.sched_priority)
    }

    /// The boost gives the thread the planner's SCHED_FIFO priority on the planner's CPU and
    /// gives back both when dropped; where the kernel refuses it (no CAP_SYS_NICE), nothing
    /// changes. On a thread of its own: the test harness's threads are shared.
    #[test]
    fn hold_boost_runs_at_the_planners_priority_on_its_cpu_and_restores_both() {
        std::thread::spawn(|| {
            let cpus = affinity::get();
            let before = policy();
            assert_eq!(
                before.0,
                libc::SCHED_OTHER,
                "a test thread starts SCHED_OTHER"
            );
            let cpu = *cpus.last().expect("some CPU");
            {
                let boost = HoldBoost::new(Some(cpu));
                if boost.before.is_some() {
                    assert_eq!(policy(), (libc::SCHED_FIFO, FIFO_PRIORITY));
                    assert_eq!(affinity::get(), vec![cpu]);
                } else {
                    println!("boost refused here (no CAP_SYS_NICE?): nothing changed");
                    assert_eq!(policy(), before);
                    assert_eq!(affinity::get(), cpus);
                }
            }
            assert_eq!(policy(), before, "the policy is restored");
            assert_eq!(affinity::get(), cpus, "the CPUs are restored");
            // no planner CPU (no planner thread pinned anywhere): nothing to do
            assert!(HoldBoost::new(None).before.is_none());
            assert_eq!(policy(), before);
        })
        .join()
        .expect("the test thread");
    }
}

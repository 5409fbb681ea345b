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
use scx_tt::energy::model::PowerModel;
use scx_tt::plan::Plan;
use scx_tt::planner::kernel_path::SlotObs;
use scx_tt::planner::kernel_path::{KernelPathConfig, KernelPlanner};
use scx_tt::planner::shared::PlannerHandle;
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
    Ok(Arc::new(PlannerHandle::new(planner, cfg.slot_ns)))
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

fn run(
    online: &PlannerHandle,
    writers: &Writers,
    frame_slots: u64,
    clock: SlotClock,
    stop: &AtomicBool,
) -> Result<()> {
    // the closed loop reads every slot that closes from this thread's start on (after a
    // restart, the slots of the gap were never published: the planner counts them whole)
    let mut follower = writers.obs.as_ref().map(|r| {
        let first = clock.slot_at(monotonic_ns()).unwrap_or(0);
        (ObsFollower::new(r.managed().len(), first), r)
    });
    let mut batch = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let cur = clock.slot_at(monotonic_ns());
        if let (Some((f, reader)), Some(c)) = (follower.as_mut(), cur) {
            f.poll(
                c,
                |m, slot| reader.read_index(m, slot),
                |m, o| {
                    batch.push((
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
        // takes the planner lock only when a slot up to cur + lead is undecided: an admission
        // decides the slots its run covers first (planner::shared); observations are applied
        // by whoever holds the planner next
        let adv = online
            .turn_observing(cur, std::mem::take(&mut batch))
            .context("stepping the planner")?;
        let mut late = Vec::new();
        for w in &adv.writes {
            let index = w.cpu * frame_slots as usize + w.frame_slot as usize;
            if let (Some(perf), Some(writer)) = (w.perf, &writers.perf) {
                writer
                    .write(index, perf)
                    .with_context(|| format!("writing perf entry {index}"))?;
            }
            if let Some(task) = w.task {
                writers
                    .table
                    .write(index, task)
                    .with_context(|| format!("writing table entry {index}"))?;
            }
            // decided in time, but written once its slot had started: the slot runs the
            // entry's previous value (BPF keeps its tick's), counted in the summary
            if (w.task.is_some() || (w.perf.is_some() && writers.perf.is_some()))
                && clock.slot_at(monotonic_ns()).is_some_and(|c| c >= w.slot)
            {
                late.push((w.cpu, w.slot));
            }
        }
        online.note_late_writes(&late);
        // then the ends of DPM idle periods, after their entries (a lowered one with a kick)
        if let Some(dpm) = &writers.dpm {
            for w in &adv.dpm {
                dpm.publish(w.cpu, w.until, w.kick).with_context(|| {
                    format!(
                        "publishing the DPM idle period end {} of CPU index {}",
                        w.until, w.cpu
                    )
                })?;
            }
        }
        // and each period's idle-state limit (pm_qos), once BPF knows the period
        if let (Some(idle), false) = (&writers.idle, adv.dpm.is_empty()) {
            let mut i = idle.lock().unwrap_or_else(|e| e.into_inner());
            for w in &adv.dpm {
                i.period(w.cpu, w.from, w.until, cur);
            }
        }
        // then the frequencies (sysfs writes, slower than map writes): lowers for cur, raises
        // for cur + 1
        if let Some(freq) = &writers.freq {
            let mut d = freq.lock().unwrap_or_else(|e| e.into_inner());
            for w in &adv.writes {
                if let Some(ppm) = w.ppm {
                    d.set_entry(w.cpu, w.frame_slot, ppm);
                }
            }
            d.turn(cur, &clock);
        }
        // wake just after the next boundary of the slot clock
        let next = match cur {
            Some(c) => clock.start_ns(c + 1),
            None => clock.t0_ns,
        };
        sleep_until_ns(next);
    }
    Ok(())
}

/// The thread's loop with `--demos`: observations to the sequencer, its entries to the table.
fn run_demos(
    demos: &DemosSeq,
    writers: &Writers,
    frame_slots: u64,
    clock: SlotClock,
    stop: &AtomicBool,
) -> Result<()> {
    let Some(reader) = writers.obs.as_ref() else {
        anyhow::bail!("--demos in planner mode needs the closed loop's observations");
    };
    let cpus = reader.managed().len();
    let first = clock.slot_at(monotonic_ns()).unwrap_or(0);
    let mut follower = ObsFollower::new(cpus, first);
    // the last slot observed per CPU
    let mut seen: Vec<Option<u64>> = vec![None; cpus];
    let lead = demos
        .driver
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .lead();
    while !stop.load(Ordering::SeqCst) {
        let cur = clock.slot_at(monotonic_ns());
        if let Some(c) = cur {
            // the tick that publishes slot c - 1 may come after this turn's wake-up: with
            // lead >= 2, wait for it up to half a slot (slot c + lead is due before the tick of
            // c + lead - 1), so that a completion in c - 1 is not a slot later
            let until = clock.start_ns(c) + clock.slot_ns / 2;
            loop {
                let mut d = demos.driver.lock().unwrap_or_else(|e| e.into_inner());
                follower.poll(
                    c,
                    |m, slot| reader.read_index(m, slot),
                    |m, o| {
                        seen[m] = seen[m].max(Some(o.slot));
                        d.observe(o.slot, o.owner, o.done);
                    },
                );
                drop(d);
                let all = c == 0 || seen.iter().all(|s| *s >= Some(c - 1));
                if all || lead < 2 || monotonic_ns() >= until || stop.load(Ordering::SeqCst) {
                    break;
                }
                sleep_until_ns(monotonic_ns() + OBS_RETRY_NS);
            }
        }
        let writes = demos
            .driver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .advance(cur);
        let mut late = 0u64;
        let mut last_late = None;
        for w in &writes {
            let index = w.cpu * frame_slots as usize + w.frame_slot as usize;
            writers
                .table
                .write(index, w.entry)
                .with_context(|| format!("writing table entry {index}"))?;
            // written once its slot had started: the slot runs the entry before (BPF F)
            if last_late != Some(w.slot)
                && clock.slot_at(monotonic_ns()).is_some_and(|c| c >= w.slot)
            {
                last_late = Some(w.slot);
                late += 1;
            }
        }
        if late > 0 {
            demos
                .driver
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .note_late_writes(late);
        }
        let next = match cur {
            Some(c) => clock.start_ns(c + 1),
            None => clock.t0_ns,
        };
        sleep_until_ns(next);
    }
    Ok(())
}

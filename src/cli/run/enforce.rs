//! One BPF scheduler of the run (feature `bpf`): [`Enforcer::start`] loads, attaches and arms
//! it (steps 3–7 of daemon.rs), [`Enforcer::run`] is the run loop, [`Enforcer::stop`] detaches
//! it and says whether the kernel asked for a restart. The first start creates what counts on
//! the slot grid ([`Live`]); a restart takes it over from the scheduler before, with that
//! scheduler's table state, and arms its timers on the same grid.

use super::adaptive::AdaptiveRun;
use super::carry::Counters;
use super::daemon::{Daemon, Shutdown};
use super::engine::RunEngine;
use super::every::Every;
use super::plan_loader::PlanLoader;
use super::planner_loop::{self, DemosSeq, PlannerLoop};
use super::simulated::store_control_state;
use super::stats::Stats;
use anyhow::{Context, Result};
use libbpf_rs::{OpenObject, RingBuffer};
use scx_tt::accounting::{EnergySummary, ExitReason, RunFacts, TaskInfo, TaskState};
use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::control::Control;
use scx_tt::energy::estimate::IdleGovernor;
use scx_tt::metrics::{Metrics, MetricsServer};
use scx_tt::plan::Completion;
use scx_tt::planner::shared::PlannerHandle;
use scx_tt::sched::loader::{ExitInfo, Scheduler, TableState, WrittenHalf};
use scx_tt::sched::obs::ObsReader;
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The period of the ring buffer reads and the exit checks.
const POLL_NS: u64 = 100_000_000;
/// The period of the control socket's turn: a request waits at most this long. Not POLL_NS: a
/// firm job's deadline counts from the slot its request is served in, and at 100 ms every
/// request of a run was served at the same phase of the slot grid (the VM's `planner_loop`
/// saw all 16 at slot 2 of a 10-slot period).
const CONTROL_POLL_NS: u64 = 10_000_000;
/// How long `stop` waits for sched_ext to read `disabled` after detaching.
const DETACH_TIMEOUT: Duration = Duration::from_secs(2);

/// Planner mode: the planner the planner thread steps and the control engine admits into.
pub type SharedPlanner = Arc<PlannerHandle>;

/// What planner mode starts: the planner, the DEmOS sequencer of `--demos` and the thread.
type PlannerParts = (SharedPlanner, Option<Arc<DemosSeq>>, PlannerLoop);

/// What counts on the slot grid: created by the first start, kept across restarts.
pub struct Live {
    pub clock: SlotClock,
    pub control: Control,
    /// Loads the plans of `switch_table` requests off the run loop (and writes their tables).
    pub loader: PlanLoader<WrittenHalf>,
    /// Planner mode: the planner the planner thread steps.
    pub planner: Option<SharedPlanner>,
    /// Planner mode with `--demos`: the DEmOS sequencer the planner thread follows instead.
    pub demos: Option<Arc<DemosSeq>>,
    pub stats: Stats,
    /// `--duration-s`: when the run ends (CLOCK_MONOTONIC ns).
    pub deadline_ns: Option<u64>,
    /// The stats socket (`--stats-socket`; src/metrics.rs), answered from the run loop. None
    /// when it could not be bound (a warning said why).
    pub metrics: Option<MetricsServer>,
}

/// What a restart takes from the scheduler it replaces.
pub struct Kept {
    pub live: Live,
    pub table: TableState,
    pub exit: ExitInfo,
    /// The adaptive tasks' tracking, controllers, reservations and classes: the planner keeps
    /// their reservations across the restart, so the run must keep what it knows of them.
    pub adaptive: AdaptiveRun,
}

/// The end of the run, for `Daemon::finish`.
pub struct End {
    pub live: Live,
    pub facts: RunFacts,
    pub energy: Option<EnergySummary>,
    /// sched_ext's state after detaching.
    pub state: String,
    /// The planner thread's result (planner mode).
    pub planner: Result<()>,
}

pub enum Stopped {
    Final(End),
    /// The kernel asked for a restart (CPU hotplug).
    Restart(Kept),
}

pub struct Enforcer<'d, 'a, 'obj> {
    d: &'d mut Daemon<'a>,
    live: Live,
    sched: Scheduler<'obj>,
    ring: RingBuffer<'static>,
    thread: Option<PlannerLoop>,
    /// The observation ring, read every slot by the test hook (obs_test.rs) when it is on.
    obs: Option<ObsReader>,
    /// The adaptive tasks' wakeup tracing and period inference (adaptive.rs).
    adaptive: AdaptiveRun,
}

impl<'d, 'a, 'obj> Enforcer<'d, 'a, 'obj> {
    /// The first start (`kept` = None) or a restart.
    pub fn start(
        d: &'d mut Daemon<'a>,
        kept: Option<Kept>,
        open_object: &'obj mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        match kept {
            None => Self::first(d, open_object),
            Some(k) => Self::again(d, k, open_object).context("restarting the BPF scheduler"),
        }
    }

    /// Steps 3–7 of the first start.
    fn first(d: &'d mut Daemon<'a>, obj: &'obj mut MaybeUninit<OpenObject>) -> Result<Self> {
        // 3. open → load → attach, with the threads found at the start
        let mut sched = load_and_attach(d, obj, &d.tasks.threads_at_start(), None)?;
        // 4. arm: slot 0 starts a little ahead (two slots, at least 100 ms)
        let t0_ns = monotonic_ns() + (2 * d.cfg.slot_ns).max(100_000_000);
        sched.arm(t0_ns)?;
        d.verbose(&format!(
            "timers armed on CPUs {:?}, slot 0 at t0={t0_ns} ns",
            d.cfg.managed
        ));
        match d.cfg.rt_clock {
            Some(prio) => eprintln!(
                "scx_tt: slot clock: rt (SCHED_FIFO {prio} helper threads on CPUs {:?})",
                d.cfg.managed
            ),
            None => eprintln!("scx_tt: slot clock: timer (BPF timers)"),
        }
        let clock = SlotClock::new(t0_ns, d.cfg.slot_ns);
        // 5. planner thread, 6. control; then the spawned tasks run
        let (control, planner) = start_planner(d, &mut sched, clock)?;
        let (planner, demos, thread) = match planner {
            Some((p, demos, t)) => (Some(p), demos, Some(t)),
            None => (None, None, None),
        };
        if let Some(sock) = &d.socket {
            d.verbose(&format!("control socket at {}", sock.path().display()));
        }
        d.tasks.resume()?;
        // 7. stats
        let stats = Stats::open(
            d.args,
            d.plan,
            d.model,
            &d.cfg,
            &clock,
            !d.idle.lock().unwrap_or_else(|e| e.into_inner()).polling(),
            demos.as_deref(),
        )?;
        let ring = stats.reader(&sched)?;
        let deadline_ns = d
            .args
            .duration_s
            .map(|s| monotonic_ns().saturating_add(secs_ns(s)));
        let obs = obs_reader(&mut sched, &stats)?;
        // the stats socket: only now, with the machine's sched_ext ours (a scheduler that
        // was attached keeps its socket)
        let metrics = match MetricsServer::launch(&d.args.stats_socket) {
            Ok(m) => {
                d.verbose(&format!("stats socket at {}", m.path().display()));
                Some(m)
            }
            Err(e) => {
                eprintln!(
                    "scx_tt: warning: no stats socket (--monitor will not see this run): {e:#}"
                );
                None
            }
        };
        let live = Live {
            clock,
            control,
            loader: PlanLoader::default(),
            planner,
            demos,
            stats,
            deadline_ns,
            metrics,
        };
        let adaptive = AdaptiveRun::new(d.plan, monotonic_ns())?;
        Ok(Enforcer {
            d,
            live,
            sched,
            ring,
            thread,
            obs,
            adaptive,
        })
    }

    /// Steps 3–5 and 7 after a restart: the tasks' threads now, the carried table state, the
    /// same slot grid, planner, control and stats; the spawned tasks never stopped.
    fn again(
        d: &'d mut Daemon<'a>,
        k: Kept,
        obj: &'obj mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        let threads = d.tasks.threads_now(d.plan, &d.procfs);
        // Until the new scheduler is attached the plan's tasks run under the fair class,
        // next to this thread, whose bpf() call verifies the programs: that load is the
        // restart's critical path (seconds under TCG), so it runs at the highest nice value.
        let sched = {
            let _boost = NiceBoost::new(-20);
            load_and_attach(d, obj, &threads, Some(&k.table))
        };
        let mut sched = sched?;
        // the tasks `admit` added, at the same BPF indexes (gone ones without threads)
        for a in k.live.control.added() {
            let tids: Vec<u32> = match a.gone_from {
                Some(_) => Vec::new(),
                None => a
                    .tids
                    .iter()
                    .copied()
                    .filter(|&t| d.procfs.tid_alive(t))
                    .collect(),
            };
            let index = sched
                .add_task(a.class, a.cpu, Completion::None, &tids)
                .with_context(|| format!("restart: admitted task {}", a.name))?;
            if index != a.index {
                anyhow::bail!(
                    "restart: admitted task {} got BPF index {index}, not {}",
                    a.name,
                    a.index
                );
            }
        }
        let clock = k.live.clock;
        sched.arm(clock.t0_ns)?;
        let from_slot = clock.slot_or_first(monotonic_ns()) + 1;
        d.verbose(&format!(
            "timers armed again on CPUs {:?}, from slot {from_slot}",
            d.cfg.managed
        ));
        let thread = match &k.live.planner {
            Some(p) => Some(PlannerLoop::for_scheduler(
                p,
                k.live.demos.as_ref(),
                &mut sched,
                d.plan,
                clock,
                &d.freq,
                &d.idle,
            )?),
            None => None,
        };
        let ring = k.live.stats.reader(&sched)?;
        let obs = obs_reader(&mut sched, &k.live.stats)?;
        d.restarts.done(k.exit.describe(), from_slot);
        eprintln!(
            "scx_tt: restart {}: the BPF scheduler is attached again ({} threads of the plan); \
             enforcing from slot {from_slot}",
            d.restarts.count(),
            threads.len()
        );
        let mut adaptive = k.adaptive;
        adaptive.reattach(&mut sched, monotonic_ns());
        Ok(Enforcer {
            d,
            live: k.live,
            sched,
            ring,
            thread,
            obs,
            adaptive,
        })
    }

    /// The run loop: every periodic duty on its own deadline (every.rs); the loop sleeps in
    /// the ring buffer's poll until the earliest one (BPF submits records without wakeups, so
    /// only the timeout or a signal ends the poll). Returns why the run (or this scheduler)
    /// ended.
    pub fn run(&mut self, shutdown: &Shutdown) -> Result<ExitReason> {
        self.resume_control();
        let now = monotonic_ns();
        let mut ring = Every::new(now, POLL_NS);
        let mut control = Every::new(now, CONTROL_POLL_NS);
        let mut checks = Every::new(now, POLL_NS);
        // the test hook reads the observation ring every slot, as the planner thread would
        let mut obs = self
            .obs
            .as_ref()
            .map(|_| Every::new(now, self.live.clock.slot_ns));
        let mut stats = self
            .d
            .args
            .stats
            .map(|s| Every::new(now, secs_ns(s.max(0.1))));
        // local scheduling (src/bpf/tt_sched.bpf.c D): thread names are read again every
        // 100 ms, so a thread forked or renamed after the start gets its period
        let mut local = self.d.cfg.has_local().then(|| Every::new(now, 100_000_000));
        loop {
            let wake = [ring, control, checks]
                .iter()
                .chain(&stats)
                .chain(&local)
                .chain(&obs)
                .map(Every::next_ns)
                .chain(self.live.deadline_ns)
                .chain(self.live.stats.demos.as_ref().and_then(|d| d.wake_ns()))
                .min()
                .unwrap_or(now);
            let timeout = Duration::from_nanos(wake.saturating_sub(monotonic_ns()));
            // A switch's plan is loading: wake as soon as the loader thread has it, so that the
            // reply does not wait for the next turn. Else sleep on the control socket, waking
            // when a client connects or sends (a request is answered when it arrives), or in
            // the ring buffer's poll (EINTR from the signal handler is expected; the flag is
            // checked below).
            let (mut loaded, mut asked) = (false, false);
            if self.live.loader.loading() {
                loaded = self.live.loader.wait(timeout);
            } else if let Some(sock) = self.d.socket.as_mut() {
                asked = sock.wait(timeout);
            } else {
                let _ = self.ring.poll(timeout);
            }
            let now = monotonic_ns();
            if obs.as_mut().is_some_and(|o| o.due(now)) {
                self.poll_obs(now)?;
            }
            let demos_due = self.live.stats.demos.as_mut().is_some_and(|d| d.due(now));
            if ring.due(now) || demos_due {
                let _ = self.ring.consume();
                self.live.stats.drain()?;
                self.adaptive.sync(&self.live.control, now);
                if !self.adaptive.is_empty() {
                    let planner = self.live.planner.as_deref();
                    (self.adaptive).poll(&mut self.sched, planner, self.live.clock, now);
                    self.live.control.set_adaptive(self.adaptive.views());
                    self.live.stats.acc.set_adaptive(self.adaptive.views());
                }
            }
            if control.due(now) {
                self.control_turn(Turn::Full);
            } else if asked {
                self.control_turn(Turn::Ready);
            } else if loaded {
                self.control_turn(Turn::Switch);
            }
            if shutdown.requested() {
                return Ok(ExitReason::Signal);
            }
            let past_deadline = self.live.deadline_ns.is_some_and(|d| now >= d);
            if checks.due(now) || past_deadline {
                if let Some(exit) = self.exit_check(now) {
                    return Ok(exit);
                }
            }
            if stats.as_mut().is_some_and(|s| s.due(now)) {
                let line = self.metrics().line();
                println!("{line}");
            }
            if let Some(mut server) = self.live.metrics.take() {
                server.serve(now, || self.metrics());
                self.live.metrics = Some(server);
            }
            if local.as_mut().is_some_and(|l| l.due(now)) {
                match self.sched.refresh_local(&self.d.cfg) {
                    Ok(n) if n > 0 => self
                        .d
                        .verbose(&format!("local scheduling: {n} thread(s) renamed")),
                    Ok(_) => {}
                    Err(e) => eprintln!("scx_tt: warning: local scheduling: {e}"),
                }
            }
        }
    }

    /// The test hook: reads the observations of the slots closed by `now`.
    fn poll_obs(&mut self, now: u64) -> Result<()> {
        let (Some(reader), Some(test), Some(cur)) = (
            self.obs.as_ref(),
            self.live.stats.obs_test.as_mut(),
            self.live.clock.slot_at(now),
        ) else {
            return Ok(());
        };
        test.poll(reader, cur)
    }

    /// A switch whose plan has loaded is written first, then answered on its connection; then
    /// the socket's requests as `turn` says.
    fn control_turn(&mut self, turn: Turn) {
        let d = &mut *self.d;
        let args = d.args;
        let Some(sock) = d.socket.as_mut() else {
            return;
        };
        let mut engine = RunEngine {
            sched: &mut self.sched,
            loader: &mut self.live.loader,
            guard_us: d.guard.us,
            online: &d.online,
            planner: self.live.planner.as_deref(),
            clock: self.live.clock,
            planner_cpu: d.plan.housekeeping.first().copied(),
        };
        let control = &mut self.live.control;
        // what a request changed is journaled before its reply is sent
        if let Some(reply) = control.poll(&mut engine) {
            store_control_state(args, control);
            sock.deliver(&reply.to_line());
        }
        let handle = |line: &str| {
            let reply = control.serve(line, &mut engine);
            store_control_state(args, control);
            reply.map(|r| r.to_line())
        };
        match turn {
            Turn::Full => sock.serve(handle),
            Turn::Ready => sock.serve_ready(handle),
            Turn::Switch => {}
        }
        if turn == Turn::Full {
            // admitted tasks whose threads are gone free their capacity
            control.reap(&mut engine, |tid| d.procfs.tid_alive(tid));
            // aperiodic tasks whose job is over: their threads go on as be, or leave
            control.finish_jobs(&mut engine);
            store_control_state(args, control);
        }
        // tasks `admit` added: into the accounting and the summary, at their BPF index
        for t in control.take_added() {
            let at = self.live.stats.acc.add_task(TaskInfo {
                name: t.name.clone(),
                class: t.class,
                cpu: t.cpu,
            });
            let found = d.tasks.add_admitted(t.tids.clone());
            if at != t.index || found != t.index {
                eprintln!(
                    "scx_tt: warning: admitted task {} has BPF index {}, accounting {at}, \
                     threads {found}",
                    t.name, t.index
                );
            }
        }
        for (policy, from_slot) in control.take_policy_swaps() {
            self.live.stats.energy.policy_from(policy, from_slot);
            // bss and dvfs poll; the DPM policies set a limit per idle period
            if policy.idle_governor() == IdleGovernor::Shallowest {
                d.idle.lock().unwrap_or_else(|e| e.into_inner()).poll_all();
            }
        }
    }

    /// `--resume`: serves the journaled requests of an earlier run again, in order, on the
    /// fresh state (threads resolved now, the acceptance test on this run's planner), and says
    /// of each whether it holds again. Before any client is served.
    fn resume_control(&mut self) {
        let Some(state) = self.d.resume.take() else {
            return;
        };
        if Some(Path::new(&state.table)) != self.d.args.table.as_deref() {
            eprintln!(
                "scx_tt: --resume: the earlier run enforced {}, this one {}: its requests are \
                 asked again all the same",
                state.table,
                self.d
                    .args
                    .table
                    .as_deref()
                    .unwrap_or(Path::new("?"))
                    .display()
            );
        }
        let (mut held, total) = (0, state.requests.len());
        for line in &state.requests {
            let mut engine = RunEngine {
                sched: &mut self.sched,
                loader: &mut self.live.loader,
                guard_us: self.d.guard.us,
                online: &self.d.online,
                planner: self.live.planner.as_deref(),
                clock: self.live.clock,
                planner_cpu: self.d.plan.housekeeping.first().copied(),
            };
            let control = &mut self.live.control;
            let mut reply = control.serve(line.trim_end(), &mut engine);
            // a table switch answers once its plan is loaded (bounded: the loader always
            // answers; 60 s covers a plan at the caps under TCG)
            let start = std::time::Instant::now();
            while reply.is_none() && start.elapsed() < Duration::from_secs(60) {
                engine.loader.wait(Duration::from_millis(100));
                reply = control.poll(&mut engine);
            }
            let text = reply.map_or_else(|| "no reply within 60 s".into(), |r| r.to_line());
            let ok = text.contains("\"ok\":true") && !text.contains("\"accepted\":false");
            held += usize::from(ok);
            eprintln!(
                "scx_tt: --resume: {} {}: {}",
                match ok {
                    true => "holds again:",
                    false => "NO LONGER HOLDS:",
                },
                line.trim_end(),
                text.trim_end()
            );
        }
        eprintln!("scx_tt: --resume: {held} of {total} journaled requests hold again");
        store_control_state(self.d.args, &mut self.live.control);
    }

    /// Why the run ends now, if it does (the signal is checked by the caller).
    fn exit_check(&mut self, now_ns: u64) -> Option<ExitReason> {
        if self.live.deadline_ns.is_some_and(|d| now_ns >= d) {
            return Some(ExitReason::Duration);
        }
        if self.sched.exited() {
            return Some(ExitReason::SchedulerExited);
        }
        if let Some(e) = self.sched.clock_failure() {
            // the thread printed it; the BPF watchdog would end the scheduler within a second
            eprintln!("scx_tt: the slot clock failed ({e}): detaching");
            return Some(ExitReason::SchedulerExited);
        }
        if self.thread.as_ref().is_some_and(PlannerLoop::finished) {
            // only an error ends the planner thread; it is reported after the summary
            return Some(ExitReason::Signal);
        }
        if self.d.args.exit_when_tasks_exit {
            let states = self.d.tasks.states(&self.d.procfs);
            if states.iter().all(|s| *s != TaskState::Running) {
                return Some(ExitReason::TasksExited);
            }
        }
        None
    }

    /// The statistics so far (src/metrics.rs): what the stats socket serves and `--stats`
    /// prints.
    fn metrics(&mut self) -> Metrics {
        let now = counters(&self.sched, self.d.tasks.found().len());
        let facts = self.d.facts(self.live.clock, ExitReason::Duration, &now);
        let late = self
            .live
            .planner
            .as_ref()
            .and_then(|p| p.read(|p| p.late_slots()).ok());
        let late_writes = self.live.planner.as_ref().map(|p| p.late_writes());
        let switches = super::report::table_switches(&self.live.control);
        let stats = &mut self.live.stats;
        let summary = stats
            .acc
            .summary(&facts)
            .with_energy(stats.energy.read())
            .with_table_switches(switches)
            .with_planner_late_slots(late)
            .with_planner_late_writes(late_writes);
        Metrics::from_summary(&summary, &self.live.control.metrics_live())
    }

    /// Stops the planner thread, reads the last records and the counters, detaches. A
    /// scheduler the kernel exited with a restart request (and no planner error) hands its
    /// table state and [`Live`] over to the next one; otherwise this is the end of the run.
    pub fn stop(self, exit: ExitReason) -> Result<Stopped> {
        let Enforcer {
            d,
            mut live,
            mut sched,
            ring,
            mut thread,
            obs,
            mut adaptive,
        } = self;
        let planner = thread.as_mut().map_or(Ok(()), PlannerLoop::stop);
        // the last observations (the slots closed since the last poll)
        if let (Some(reader), Some(test), Some(cur)) = (
            obs.as_ref(),
            live.stats.obs_test.as_mut(),
            live.clock.slot_at(monotonic_ns()),
        ) {
            test.poll(reader, cur)?;
        }
        let _ = ring.consume();
        live.stats.drain()?;
        adaptive.drain(&sched);
        live.stats.acc.set_adaptive(adaptive.views());
        d.counters = d.counters.plus(&counters(&sched, d.tasks.found().len()));
        let restart = exit == ExitReason::SchedulerExited
            && sched.exit_info().should_restart()
            && planner.is_ok();
        if restart {
            let table = sched
                .table_state()
                .context("reading the table state to carry into the restart")?;
            let detached = sched.shutdown(&d.sysfs, DETACH_TIMEOUT);
            drop(ring);
            d.verbose(&format!("detached, sched_ext state {}", detached.state));
            let exit = detached.exit;
            return Ok(Stopped::Restart(Kept {
                live,
                table,
                exit,
                adaptive,
            }));
        }
        adaptive.finish(&sched);
        let exit = ended_before_detach(exit, &sched.exit_info());
        let mut end = d.end(live, exit, planner);
        let detached = sched.shutdown(&d.sysfs, DETACH_TIMEOUT);
        drop(ring);
        d.verbose(&format!("detached, sched_ext state {}", detached.state));
        end.state = detached.state; // the state after detaching
        Ok(Stopped::Final(end))
    }
}

/// The run's exit reason once it stops for `exit`, given how the kernel says the scheduler
/// ended before scx_tt detached it: a run that reached its duration (or a signal, or its
/// tasks' exit) in the same poll in which the kernel ended the scheduler (an error, the
/// watchdog, sysrq) did not end cleanly, and says so (`SchedulerExited`, exit code 1; the
/// kernel's reason is printed by the detach as `EXIT: ...`). A restart request at that moment
/// is not an error: the run was ending anyway.
fn ended_before_detach(exit: ExitReason, ended: &ExitInfo) -> ExitReason {
    if exit == ExitReason::SchedulerExited || !ended.ended_by_kernel() {
        return exit;
    }
    if ended.should_restart() {
        eprintln!(
            "scx_tt: the kernel asked for a restart of the BPF scheduler ({}) as the run ended \
             ({exit:?}): not restarted",
            ended.describe()
        );
        return exit;
    }
    eprintln!(
        "scx_tt: error: the kernel had ended the BPF scheduler ({:?}: {}) before scx_tt \
         detached it at the run's end ({exit:?}); the run did not end cleanly",
        ended.kind,
        ended.describe()
    );
    ExitReason::SchedulerExited
}

/// The calling thread's nice value set to `nice` for as long as this lives (then restored);
/// nothing happens where the kernel refuses (no CAP_SYS_NICE).
struct NiceBoost(Option<i32>);

impl NiceBoost {
    fn new(nice: i32) -> Self {
        // SAFETY: plain syscalls on the calling thread (a tid names one thread for
        // PRIO_PROCESS on Linux); errno is reset first because -1 is a valid priority.
        unsafe {
            let tid = libc::gettid() as libc::id_t;
            *libc::__errno_location() = 0;
            let old = libc::getpriority(libc::PRIO_PROCESS, tid);
            if *libc::__errno_location() != 0 || old <= nice {
                return NiceBoost(None);
            }
            if libc::setpriority(libc::PRIO_PROCESS, tid, nice) != 0 {
                return NiceBoost(None);
            }
            NiceBoost(Some(old))
        }
    }
}

impl Drop for NiceBoost {
    fn drop(&mut self) {
        if let Some(old) = self.0 {
            // SAFETY: as in `new`.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, old) };
        }
    }
}

/// Step 3: open, load (the task map `threads`, the carried table state of a restart) and
/// attach.
fn load_and_attach<'obj>(
    d: &Daemon,
    obj: &'obj mut MaybeUninit<OpenObject>,
    threads: &[(u32, usize)],
    carried: Option<&TableState>,
) -> Result<Scheduler<'obj>> {
    let t_load = Instant::now();
    let mut sched = Scheduler::load(obj, &d.cfg, threads)?;
    if let Some(state) = carried {
        sched.restore(state)?;
    }
    if d.args.verbose {
        let mut insns = sched.verified_insns();
        insns.sort_by_key(|x| std::cmp::Reverse(x.1));
        let total: u64 = insns.iter().map(|x| x.1 as u64).sum();
        let top: Vec<String> = insns
            .iter()
            .take(4)
            .map(|(n, i)| format!("{n} {i}"))
            .collect();
        let [open, load, fill] = sched.load_phases();
        d.verbose(&format!(
            "loaded in {:?} (open {open:?}, load {load:?}, maps filled {fill:?}); the verifier \
             walked {total} instructions (largest: {})",
            t_load.elapsed(),
            top.join(", ")
        ));
    }
    if let Err(e) = sched.enable_bpf_stats() {
        eprintln!("scx_tt: warning: kernel.bpf_stats not available: {e}");
    }
    sched.attach()?;
    d.verbose(&format!(
        "attached ({})",
        d.sysfs.attached_ops().unwrap_or_default()
    ));
    Ok(sched)
}

/// The control protocol on `clock` and, in planner mode, the planner and its thread (which
/// starts before slot 0 and decides slots 0..lead first).
fn start_planner(
    d: &Daemon,
    sched: &mut Scheduler,
    clock: SlotClock,
) -> Result<(Control, Option<PlannerParts>)> {
    let table_name = d
        .args
        .table
        .as_ref()
        .map_or_else(String::new, |p| p.display().to_string());
    let control = Control::new(d.plan.clone(), table_name, clock);
    let Some(policy) = d.args.planner else {
        return Ok((control, None));
    };
    let planner = planner_loop::kernel_planner(policy, d.args, d.plan, d.model, &d.cfg)?;
    let demos = planner_loop::demos_seq(d.args, d.plan)?;
    let thread = PlannerLoop::for_scheduler(
        &planner,
        demos.as_ref(),
        sched,
        d.plan,
        clock,
        &d.freq,
        &d.idle,
    )?;
    let control = control.with_planner(policy.name(), d.args.planner_lead_slots);
    // the sequenced run: the planner's admissions would not reach the table (docs/demos.md)
    let control = match demos {
        Some(_) => control.sequenced(),
        None => control,
    };
    d.verbose(&format!(
        "planner {policy} deciding {} slots ahead on a housekeeping CPU",
        d.args.planner_lead_slots
    ));
    Ok((control, Some((planner, demos, thread))))
}

/// The observation ring's reader when the test hook is on (obs_test.rs).
fn obs_reader(sched: &mut Scheduler, stats: &Stats) -> Result<Option<ObsReader>> {
    match stats.obs_test {
        Some(_) => Ok(Some(sched.obs_reader()?)),
        None => Ok(None),
    }
}

/// The current scheduler's counters.
fn counters(sched: &Scheduler, nr_tasks: usize) -> Counters {
    let (tasks, cpus) = sched.counters(nr_tasks);
    Counters {
        tasks,
        cpus,
        progs: sched.prog_stats(),
    }
}

/// Seconds of a flag as ns (negative: 0; too large: the longest).
fn secs_ns(s: f64) -> u64 {
    Duration::try_from_secs_f64(s.max(0.0))
        .map_or(u64::MAX, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
}

/// What a turn of the run loop does with the control socket, after writing and answering a
/// switch whose plan has loaded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// The 10 ms turn: every connection (timeouts too), then the reaping of admitted tasks.
    Full,
    /// The loop woke for the socket: what `ControlSocket::wait` saw ready.
    Ready,
    /// Only the switch.
    Switch,
}

#[cfg(test)]
mod tests {
    use super::*;
    use scx_tt::sched::loader::ExitKind;

    fn ended(kind: ExitKind, restart: bool) -> ExitInfo {
        ExitInfo {
            kind,
            reason: "reason".into(),
            message: "message".into(),
            restart,
            hotplug: restart,
        }
    }

    #[test]
    fn an_error_the_kernel_reported_before_the_detach_ends_the_run_as_exited() {
        let d = ExitReason::Duration;
        // still running, or ended by scx_tt's own detach: the run's reason stands
        assert_eq!(ended_before_detach(d, &ended(ExitKind::None, false)), d);
        assert_eq!(
            ended_before_detach(d, &ended(ExitKind::Unregistered, false)),
            d
        );
        // a restart request as the run ends: not an error
        assert_eq!(
            ended_before_detach(d, &ended(ExitKind::UnregisteredByKernel, true)),
            d
        );
        for kind in [
            ExitKind::Error,
            ExitKind::ErrorByBpf,
            ExitKind::Stall,
            ExitKind::SysRq,
        ] {
            for reason in [
                ExitReason::Duration,
                ExitReason::Signal,
                ExitReason::TasksExited,
            ] {
                assert_eq!(
                    ended_before_detach(reason, &ended(kind, false)),
                    ExitReason::SchedulerExited,
                    "{kind:?} before a {reason:?} end"
                );
            }
        }
    }
}

//! One BPF scheduler of the run (feature `bpf`): [`Enforcer::start`] loads, attaches and arms
//! it (steps 3–7 of daemon.rs), [`Enforcer::run`] is the run loop, [`Enforcer::stop`] detaches
//! it and says whether the kernel asked for a restart. The first start creates what counts on
//! the slot grid ([`Live`]); a restart takes it over from the scheduler before, with that
//! scheduler's table state, and arms its timers on the same grid.

use super::carry::Counters;
use super::daemon::{Daemon, Shutdown};
use super::engine::RunEngine;
use super::every::Every;
use super::plan_loader::PlanLoader;
use super::planner_loop::{self, PlannerLoop};
use super::stats::Stats;
use anyhow::{Context, Result};
use libbpf_rs::{OpenObject, RingBuffer};
use scx_tt::accounting::{render_stats_line, EnergySummary, ExitReason, RunFacts, TaskState};
use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::control::Control;
use scx_tt::planner::shared::PlannerHandle;
use scx_tt::sched::loader::{ExitInfo, Scheduler, TableState};
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The period of the ring buffer reads, the control socket and the exit checks.
const POLL_NS: u64 = 100_000_000;
/// How long `stop` waits for sched_ext to read `disabled` after detaching.
const DETACH_TIMEOUT: Duration = Duration::from_secs(2);

/// Planner mode: the planner the planner thread steps and the control engine admits into.
pub type SharedPlanner = Arc<PlannerHandle>;

/// What counts on the slot grid: created by the first start, kept across restarts.
pub struct Live {
    pub clock: SlotClock,
    pub control: Control,
    /// Loads the plans of `switch_table` requests off the run loop.
    pub loader: PlanLoader,
    /// Planner mode: the planner the planner thread steps.
    pub planner: Option<SharedPlanner>,
    pub stats: Stats,
    /// `--duration-s`: when the run ends (CLOCK_MONOTONIC ns).
    pub deadline_ns: Option<u64>,
}

/// What a restart takes from the scheduler it replaces.
pub struct Kept {
    pub live: Live,
    pub table: TableState,
    pub exit: ExitInfo,
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
        let clock = SlotClock::new(t0_ns, d.cfg.slot_ns);
        // 5. planner thread, 6. control; then the spawned tasks run
        let (control, planner) = start_planner(d, &mut sched, clock)?;
        let (planner, thread) = planner.unzip();
        if let Some(sock) = &d.socket {
            d.verbose(&format!("control socket at {}", sock.path().display()));
        }
        d.tasks.resume()?;
        // 7. stats
        let stats = Stats::open(d.args, d.plan, d.model, &d.cfg, &clock)?;
        let ring = stats.reader(&sched)?;
        let deadline_ns = d
            .args
            .duration_s
            .map(|s| monotonic_ns().saturating_add(secs_ns(s)));
        let live = Live {
            clock,
            control,
            loader: PlanLoader::default(),
            planner,
            stats,
            deadline_ns,
        };
        Ok(Enforcer {
            d,
            live,
            sched,
            ring,
            thread,
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
        let mut sched = load_and_attach(d, obj, &threads, Some(&k.table))?;
        let clock = k.live.clock;
        sched.arm(clock.t0_ns)?;
        let from_slot = clock.slot_or_first(monotonic_ns()) + 1;
        d.verbose(&format!(
            "timers armed again on CPUs {:?}, from slot {from_slot}",
            d.cfg.managed
        ));
        let thread = match &k.live.planner {
            Some(p) => Some(PlannerLoop::for_scheduler(p, &mut sched, d.plan, clock)?),
            None => None,
        };
        let ring = k.live.stats.reader(&sched)?;
        d.restarts.done(k.exit.describe(), from_slot);
        eprintln!(
            "scx_tt: restart {}: the BPF scheduler is attached again ({} threads of the plan); \
             enforcing from slot {from_slot}",
            d.restarts.count(),
            threads.len()
        );
        Ok(Enforcer {
            d,
            live: k.live,
            sched,
            ring,
            thread,
        })
    }

    /// The run loop: every periodic duty on its own deadline (every.rs); the loop sleeps in
    /// the ring buffer's poll until the earliest one (BPF submits records without wakeups, so
    /// only the timeout or a signal ends the poll). Returns why the run (or this scheduler)
    /// ended.
    pub fn run(&mut self, shutdown: &Shutdown) -> Result<ExitReason> {
        let now = monotonic_ns();
        let mut ring = Every::new(now, POLL_NS);
        let mut control = Every::new(now, POLL_NS);
        let mut checks = Every::new(now, POLL_NS);
        let mut stats = self
            .d
            .args
            .stats
            .map(|s| Every::new(now, secs_ns(s.max(0.1))));
        loop {
            let wake = [ring, control, checks]
                .iter()
                .chain(&stats)
                .map(Every::next_ns)
                .chain(self.live.deadline_ns)
                .min()
                .unwrap_or(now);
            // EINTR from the signal handler is expected; the flag is checked below.
            let _ = self
                .ring
                .poll(Duration::from_nanos(wake.saturating_sub(monotonic_ns())));
            let now = monotonic_ns();
            if ring.due(now) {
                let _ = self.ring.consume();
                self.live.stats.drain()?;
            }
            if control.due(now) {
                self.serve_control();
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
                self.print_stats();
            }
        }
    }

    /// Answers the control socket's requests against this scheduler.
    fn serve_control(&mut self) {
        let d = &mut *self.d;
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
        };
        let control = &mut self.live.control;
        // a switch whose plan has loaded is written first, then answered on its connection
        if let Some(reply) = control.poll(&mut engine) {
            sock.deliver(&reply.to_line());
        }
        sock.serve(|line| control.serve(line, &mut engine).map(|r| r.to_line()));
    }

    /// Why the run ends now, if it does (the signal is checked by the caller).
    fn exit_check(&mut self, now_ns: u64) -> Option<ExitReason> {
        if self.live.deadline_ns.is_some_and(|d| now_ns >= d) {
            return Some(ExitReason::Duration);
        }
        if self.sched.exited() {
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

    /// `--stats`: one line of the summary so far.
    fn print_stats(&mut self) {
        let now = counters(&self.sched, self.d.plan.tasks.len());
        let facts = self.d.facts(self.live.clock, ExitReason::Duration, &now);
        let stats = &mut self.live.stats;
        let summary = stats.acc.summary(&facts).with_energy(stats.energy.read());
        println!("{}", render_stats_line(&summary));
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
        } = self;
        let planner = thread.as_mut().map_or(Ok(()), PlannerLoop::stop);
        let _ = ring.consume();
        live.stats.drain()?;
        d.counters = d.counters.plus(&counters(&sched, d.plan.tasks.len()));
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
            return Ok(Stopped::Restart(Kept { live, table, exit }));
        }
        let mut end = d.end(live, exit, planner);
        let detached = sched.shutdown(&d.sysfs, DETACH_TIMEOUT);
        drop(ring);
        d.verbose(&format!("detached, sched_ext state {}", detached.state));
        end.state = detached.state; // the state after detaching
        Ok(Stopped::Final(end))
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
    d.verbose(&format!("loaded in {:?}", t_load.elapsed()));
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
) -> Result<(Control, Option<(SharedPlanner, PlannerLoop)>)> {
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
    let thread = PlannerLoop::for_scheduler(&planner, sched, d.plan, clock)?;
    let control = control.with_planner(policy.name(), d.args.planner_lead_slots);
    d.verbose(&format!(
        "planner {policy} deciding {} slots ahead on a housekeeping CPU",
        d.args.planner_lead_slots
    ));
    Ok((control, Some((planner, thread))))
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

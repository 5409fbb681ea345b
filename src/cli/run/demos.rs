//! The DEmOS part of a kernel run of an imported plan (`scx_tt --table plan.json --demos
//! config.yaml [-m MSG] [-M MSG] [-p POLICY]`; docs/demos.md, "Messages and power policies in
//! a run" and "... in a sequenced run"). The events are `scx_tt::demos::follow`'s (the windows
//! on the slot grid, the SC processes from the table) or, with `--planner` (the sequenced
//! run), the sequencer's (`scx_tt::demos::seq_driver`: the planner thread queues each decided
//! slot's events `lead` slots ahead); either way they happen when the run observes their slot:
//!
//! - a slot `s > 0` has begun when a record of slot `s - 1` arrives (BPF submits it from the
//!   tick that starts slot `s`, src/bpf/tt_sched.bpf.c `close_slot`); slot 0 when the clock
//!   reaches t0 (the timers are armed for it);
//! - the run loop wakes [`MARGIN_NS`] after the next event's slot boundary and reads the ring
//!   then, every [`RETRY_NS`] until the record is there (hooks in enforce.rs);
//! - at a window start `-M` (window 0) and `-m` are printed on stdout and flushed, then the
//!   power policy's writes are made (`-p`, through `SysfsCpufreq` under `--sysfs-root`,
//!   journaled in `--run-dir` as `demos-cpufreq`, restored at the end of the run, on an error
//!   and by the next start after a kill).
//!
//! The latency of each message after its window's start on the slot grid is measured and
//! reported at the end (stderr).

#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use super::RunArgs;
use anyhow::{Context, Result};
use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::demos::follow::{check_import, frame_events, messages, Follower};
use scx_tt::demos::output::{label, write_line, Power};
use scx_tt::demos::power::{Event, PowerPolicy};
use scx_tt::demos::seq_driver::SeqDriver;
use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{Config, CpuSet};
use scx_tt::energy::cpufreq;
use scx_tt::energy::sysfs::{Journal, Root};
use scx_tt::plan::Plan;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// The restore journal's name in `--run-dir`.
pub const JOURNAL: &str = "demos-cpufreq";
/// The run loop looks for an event's record this long after its slot boundary ...
const MARGIN_NS: u64 = 50_000;
/// ... and again this often until it is there.
const RETRY_NS: u64 = 200_000;

/// `--demos` and its flags, checked before anything changes on the machine: the configuration
/// loads, the plan is its import, the power policy parses. Returns the configuration.
pub fn check(args: &RunArgs, plan: &Plan) -> Result<Option<(Config, PowerPolicy)>> {
    let Some(path) = &args.demos else {
        return Ok(None);
    };
    let config = Config::from_file(path).with_context(|| format!("--demos {}", path.display()))?;
    check_import(&config, plan).map_err(|e| anyhow::anyhow!("--demos {}: {e}", path.display()))?;
    if args.planner.is_some() {
        check_sequenced(args)?;
    } else if args.schedule_log.is_some() {
        anyhow::bail!(
            "--schedule-log needs --planner: without it the plan's static table runs; its SC log \
             is `scx_tt simulate --demos CONFIG --from-trace RUN.trace.jsonl`"
        );
    }
    let policy = match &args.power_policy {
        Some(p) => PowerPolicy::parse(p).context("--power-policy")?,
        None => PowerPolicy::None,
    };
    if policy.is_active() {
        // what taking cpufreq over needs, read now: the policies, their userspace governor,
        // the configuration's frequencies against them (DEmOS's `validate`)
        let root = Root::new(&args.sysfs_root);
        let all = CpuSet::from_cpus(plan.managed.iter().copied());
        Power::open(policy, &config, all, root.clone(), None)?;
        let policies = cpufreq::discover(&root).context("--power-policy")?;
        if let Some(p) = policies
            .iter()
            .find(|p| !p.governors.iter().any(|g| g == "userspace"))
        {
            anyhow::bail!(
                "--power-policy {policy}: cpufreq policy{} has no userspace governor \
                 (available: {}): scx_tt cannot set its frequency",
                p.id,
                p.governors.join(" ")
            );
        }
    }
    Ok(Some((config, policy)))
}

/// `--demos` with `--planner` (the sequenced run, planner_loop.rs): the sequencer needs the
/// closed loop's completions.
fn check_sequenced(args: &RunArgs) -> Result<()> {
    if args.planner_open_loop {
        anyhow::bail!(
            "--demos with --planner-open-loop: the DEmOS sequence needs the closed loop's \
             completions (drop --planner-open-loop)"
        );
    }
    Ok(())
}

/// Where the run's events come from.
enum Source {
    /// The static table's frames (follow.rs).
    Static(Follower),
    /// The sequencer's queue, filled by the planner thread (planner_loop.rs `DemosSeq`).
    Sequenced(Arc<Mutex<SeqDriver>>),
}

impl Source {
    /// The slot of the next event to wait for: the static table's next one; the sequencer's
    /// first queued one, or with none queued the first slot not decided yet, at the earliest
    /// the slot after the one in progress at `now_ns` (a stalled planner thread, a restart).
    fn next_slot(&self, clock: &SlotClock, now_ns: u64) -> Option<u64> {
        match self {
            Source::Static(f) => f.next_slot(),
            Source::Sequenced(d) => {
                let d = d.lock().unwrap_or_else(|e| e.into_inner());
                d.next_event_slot().or_else(|| {
                    let next = clock.slot_at(now_ns).map_or(0, |c| c.saturating_add(1));
                    Some(d.undecided().max(next))
                })
            }
        }
    }

    /// The events at slots up to `slot` not returned yet, in order.
    fn until(&mut self, slot: u64) -> Vec<(u64, Event)> {
        match self {
            Source::Static(f) => f.until(slot),
            Source::Sequenced(d) => d
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take_events(slot),
        }
    }
}

pub struct DemosRun {
    config: Config,
    source: Source,
    clock: SlotClock,
    window_msg: Option<String>,
    mf_msg: Option<String>,
    power: Option<Power>,
    /// Events at slots up to this one are due (`None`: slot 0 has not begun).
    due_upto: Option<u64>,
    last_poll_ns: u64,
    /// Per window start: its message latency (ns after the slot boundary).
    latencies: Vec<u64>,
    writes: u64,
    /// `--verbose`: every cpufreq write on stderr.
    verbose: bool,
}

impl DemosRun {
    /// With `--demos`: the run's events, the messages and the power policy (cpufreq taken
    /// over now, its set-up writes made). `sequenced`: the sequencer's driver of a run with
    /// `--planner` (its events instead of the static table's).
    pub fn open(
        args: &RunArgs,
        plan: &Plan,
        clock: &SlotClock,
        sequenced: Option<Arc<Mutex<SeqDriver>>>,
    ) -> Result<Option<DemosRun>> {
        let Some((config, policy)) = check(args, plan)? else {
            return Ok(None);
        };
        let source = match (args.planner, sequenced) {
            (None, _) => {
                Source::Static(Follower::new(frame_events(&config, plan), plan.frame_slots))
            }
            (Some(_), Some(d)) => Source::Sequenced(d),
            (Some(p), None) => anyhow::bail!("--demos with --planner {p}: no sequencer"),
        };
        let all = CpuSet::from_cpus(plan.managed.iter().copied());
        let power = match policy.is_active() {
            true => {
                let root = Root::new(&args.sysfs_root);
                let journal = Journal::persistent(root.clone(), &args.run_dir, JOURNAL)
                    .context("--power-policy: the restore journal")?;
                Power::open(policy, &config, all, root, Some(journal))?
            }
            false => None,
        };
        let mut run = DemosRun {
            source,
            config,
            clock: *clock,
            window_msg: args.window_message.clone(),
            mf_msg: args.mf_message.clone(),
            power,
            due_upto: None,
            last_poll_ns: 0,
            latencies: Vec::new(),
            writes: 0,
            verbose: args.verbose,
        };
        if let Some(p) = run.power.as_mut() {
            let made = p.apply(&Event::Init)?;
            run.writes += made.len() as u64;
            if run.verbose {
                for w in &made {
                    eprintln!("scx_tt: demos: {}", write_line(0, w, "set-up"));
                }
            }
            for w in p.engine().warnings() {
                eprintln!("scx_tt: --power-policy: warning: {w}");
            }
            eprintln!(
                "scx_tt: power policy {policy}: cpufreq policies {:?} taken over",
                p.engine()
                    .domains()
                    .iter()
                    .map(|d| d.id)
                    .collect::<Vec<_>>()
            );
        }
        Ok(Some(run))
    }

    /// When the run loop should read the ring next for this part (CLOCK_MONOTONIC ns).
    pub fn wake_ns(&self) -> Option<u64> {
        let slot = self.source.next_slot(&self.clock, monotonic_ns())?;
        let at = slot
            .checked_mul(self.clock.slot_ns)?
            .checked_add(self.clock.t0_ns)?
            .saturating_add(MARGIN_NS);
        Some(at.max(self.last_poll_ns.saturating_add(RETRY_NS)))
    }

    /// Whether the ring should be read now (then `record` and `emit` follow from the drain).
    pub fn due(&mut self, now_ns: u64) -> bool {
        if self.wake_ns().is_none_or(|w| now_ns < w) {
            return false;
        }
        self.last_poll_ns = now_ns;
        if now_ns >= self.clock.t0_ns && self.due_upto.is_none() {
            self.due_upto = Some(0);
        }
        true
    }

    /// A slot record of `slot` arrived: slot `slot + 1` has begun.
    pub fn record(&mut self, slot: u64) {
        let next = slot.saturating_add(1);
        self.due_upto = Some(self.due_upto.map_or(next, |d| d.max(next)));
    }

    /// The events due: messages (flushed), power writes.
    pub fn emit(&mut self) -> Result<()> {
        let Some(upto) = self.due_upto else {
            return Ok(());
        };
        let events = self.source.until(upto);
        if events.is_empty() {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        for (slot, e) in events {
            let lines = messages(&e, self.window_msg.as_deref(), self.mf_msg.as_deref());
            if !lines.is_empty() {
                for l in lines {
                    writeln!(out, "{l}").context("writing a window message")?;
                }
                out.flush().context("writing a window message")?;
            }
            if matches!(e, Event::WindowStart { .. }) {
                let start = self
                    .clock
                    .t0_ns
                    .saturating_add(slot.saturating_mul(self.clock.slot_ns));
                self.latencies.push(monotonic_ns().saturating_sub(start));
            }
            if let Some(p) = self.power.as_mut() {
                let made = p
                    .apply(&e)
                    .with_context(|| format!("power policy at slot {slot}"))?;
                self.writes += made.len() as u64;
                if self.verbose {
                    let ms = slot.saturating_mul(self.clock.slot_ns) / 1_000_000;
                    for w in &made {
                        eprintln!(
                            "scx_tt: demos: {}",
                            write_line(ms, w, &label(&self.config, &e))
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// The end of the run: cpufreq restored, the message latencies reported.
    pub fn finish(&mut self) {
        if let Some(p) = self.power.take() {
            let failed = p.finish();
            eprintln!(
                "scx_tt: power policy: {} cpufreq writes, restored{}",
                self.writes,
                if failed > 0 {
                    format!(" but {failed} value(s) that stay in the journal for `scx_tt restore`")
                } else {
                    String::new()
                }
            );
        }
        let mut l = self.latencies.clone();
        l.sort_unstable();
        let pct = |p: f64| {
            let i = ((l.len() as f64 * p).ceil() as usize).saturating_sub(1);
            l.get(i).map_or(0.0, |&v| v as f64 / 1e6)
        };
        eprintln!(
            "scx_tt: demos: {} window starts observed ({} windows a major frame); message \
             latency after the window start: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            l.len(),
            self.config.windows.len(),
            pct(0.5),
            pct(0.99),
            l.last().map_or(0.0, |&v| v as f64 / 1e6)
        );
    }
}

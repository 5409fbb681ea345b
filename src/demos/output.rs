//! What DEmOS's `-m`/`-M` and `-p` make of a run's events ([`Event`]), shared by
//! `simulate --demos` and the kernel run (docs/demos.md, "Messages and power policies in a
//! run"): the policy's writes, through the engine alone or a cpufreq driver ([`Power`]), and
//! the lines `simulate --demos` prints ([`render`]).

use super::config::Config;
use super::cpuset::CpuSet;
use super::follow::messages;
use super::power::{domains_of, Event, PowerDriver, PowerEngine, PowerError, PowerPolicy, Write};
use super::sim::{LogLine, SimResult};
use super::SysfsPowerDriver;
use crate::energy::cpufreq::{self, SysfsCpufreq};
use crate::energy::sysfs::{Journal, Root};

/// A power policy at work: its engine alone (the writes are only reported), or a driver that
/// makes them through the `userspace` governor, journaled and restored.
#[derive(Debug)]
pub enum Power {
    Engine(PowerEngine),
    Driver(PowerDriver<SysfsCpufreq>),
}

impl Power {
    /// `policy` over the cpufreq policies under `root`: reported only (`journal` None: the tree
    /// is read, not written), or applied through `journal` (a tree taken over, restored by
    /// [`Power::finish`] or a drop). `Ok(None)` for `none`.
    pub fn open(
        policy: PowerPolicy,
        config: &Config,
        all_cpus: CpuSet,
        root: Root,
        journal: Option<Journal>,
    ) -> Result<Option<Power>, PowerError> {
        if !policy.is_active() {
            return Ok(None);
        }
        if let Some(journal) = journal {
            return Ok(PowerDriver::<SysfsCpufreq>::take_control(
                journal, None, policy, config, all_cpus,
            )?
            .map(Power::Driver));
        }
        let policies = cpufreq::discover(&root)
            .map_err(|e| PowerError(format!("power policy '{policy}': {e}")))?;
        PowerEngine::new(policy, domains_of(&policies), config, all_cpus)
            .map(|e| Some(Power::Engine(e)))
    }

    /// The writes `event` makes: every write DEmOS makes (engine), or those that change a
    /// domain's frequency (driver, after writing them).
    pub fn apply(&mut self, event: &Event) -> Result<Vec<Write>, PowerError> {
        match self {
            Power::Engine(e) => e.on_event(event),
            Power::Driver(d) => d.apply(event),
        }
    }

    pub fn engine(&self) -> &PowerEngine {
        match self {
            Power::Engine(e) => e,
            Power::Driver(d) => d.engine(),
        }
    }

    /// Restores what a driver changed; the number of files that could not be (each logged).
    pub fn finish(self) -> usize {
        match self {
            Power::Engine(_) => 0,
            Power::Driver(d) => d.finish(),
        }
    }
}

/// A short name of `event` for the power lines.
pub fn label(config: &Config, event: &Event) -> String {
    let cmd = |p: &super::power::ProcId| {
        config
            .partitions
            .get(p.partition)
            .and_then(|q| q.processes.get(p.process))
            .map_or("?", |q| q.cmd.as_str())
    };
    match event {
        Event::Init => "set-up".into(),
        Event::WindowStart { window } => format!("window #{window} start"),
        Event::ScStart { window } => format!("SC start, window #{window}"),
        Event::BeStart { window } => format!("BE start, window #{window}"),
        Event::WindowEnd { window } => format!("window #{window} end"),
        Event::ProcessStart { proc, .. } => format!("process start '{}'", cmd(proc)),
        Event::ProcessEnd { proc, .. } => format!("process end '{}'", cmd(proc)),
    }
}

/// One power line: `  TIME: cpufreq policyN KHZ kHz (EVENT)`, the time right-aligned in 6
/// columns as the schedule log's.
pub fn write_line(time_ms: u64, w: &Write, label: &str) -> String {
    format!(
        "{time_ms:6}: cpufreq policy{} {} kHz ({label})",
        w.domain, w.khz
    )
}

/// What `simulate --demos` prints on stdout with `-m`/`-M`/`-p`, from a run of
/// [`super::simulate_events`]: at each event, in order, the log lines written before it (when
/// `log` says which to print; `None`: the log goes elsewhere), DEmOS's messages (`-M` then
/// `-m` at a window start) and the power policy's writes; then the rest of the log.
pub fn render(
    config: &Config,
    r: &SimResult,
    log: Option<&dyn Fn(&LogLine) -> bool>,
    window_msg: Option<&str>,
    mf_msg: Option<&str>,
    mut power: Option<&mut Power>,
) -> Result<String, PowerError> {
    let mut out = String::new();
    let mut printed = 0;
    let mut flush_log = |upto: usize, out: &mut String| {
        if let Some(keep) = log {
            for l in r.log[printed..upto].iter().filter(|l| keep(l)) {
                out.push_str(&format!("{l}\n"));
            }
        }
        printed = upto;
    };
    for (at, t) in &r.events {
        flush_log(*at, &mut out);
        for m in messages(&t.event, window_msg, mf_msg) {
            out.push_str(m);
            out.push('\n');
        }
        if let Some(p) = power.as_deref_mut() {
            for w in p.apply(&t.event)? {
                out.push_str(&write_line(t.time_ms, &w, &label(config, &t.event)));
                out.push('\n');
            }
        }
    }
    flush_log(r.log.len(), &mut out);
    Ok(out)
}

//! DEmOS power policies (`demos-sched -p NAME`, seed 002 §3.6 and §4.8): which frequency each
//! cpufreq policy (and so each CPU) runs at, in reaction to DEmOS's scheduler events.
//!
//! # Pieces
//! - [`PowerPolicy`]: a policy parsed from DEmOS's `-p` value (`NAME[:ARG,...]`, the name
//!   case-insensitive, as DEmOS).
//! - [`Domain`]: one cpufreq policy (`policyN`): its CPUs and the frequencies it can be set to,
//!   built from [`crate::energy::cpufreq::Policy`].
//! - [`Event`]: DEmOS's `PowerPolicy` hooks (`on_window_start`, `on_sc_start`, `on_be_start`,
//!   `on_window_end`, `on_process_start`, `on_process_end`) plus [`Event::Init`], the policy's
//!   constructor (before the first window).
//! - [`PowerEngine`]: pure: a policy + the domains + the configuration → for each event, the
//!   frequency writes DEmOS makes ([`Write`]) and the frequency of every domain and CPU after it.
//! - [`events_from_sim`]: the event stream of a [`super::simulate`] run, rebuilt from its
//!   schedule log and the configuration (checked against the log: see its doc); the
//!   independent reference for the simulator's own events ([`super::simulate_events`]).
//! - [`PowerDriver`]: applies an engine's decisions through a
//!   [`CpufreqBackend`](crate::energy::cpufreq::CpufreqBackend) (the `userspace` governor's
//!   `scaling_setspeed`); with [`SysfsCpufreq`] everything it changed is restored by the journal.
//!
//! # Policies (DEmOS's `src/power_policy/*.hpp`)
//! | name | Init | window start | SC start | BE start | process start |
//! |---|---|---|---|---|---|
//! | `none` (or no `-p`) | — | — | — | — | — |
//! | `minbe` | all max | — | all max | all min | — |
//! | `low` | all min | — | — | — | — |
//! | `high` | all max | — | — | — | — |
//! | `per_process` | — | — | — | — | its `frequency` on the domains of its slice's CPUs |
//! | `per_slice` | — | each domain: its slices' `frequency` | — | — | — |
//!
//! "All" is every domain with an online CPU (DEmOS's `PowerManager` takes every `policyN`),
//! min/max are the domain's lowest/highest frequency. A `frequency` (MHz, a float) becomes
//! `(f · 10⁶) as u64` Hz, as DEmOS, and is written in kHz (`Hz / 1000`). `per_process`: a
//! domain keeps the frequency after the process ends; two processes running at once on one
//! domain with different frequencies are an error (DEmOS's runtime error). `per_slice`: the
//! slices of a window that share a domain must agree (checked up front here, at window start
//! in DEmOS). Both validate every frequency of the configuration against the domains of its
//! slice's CPUs up front (DEmOS's `validate`): at least the minimum, at most the maximum, and
//! one of the listed frequencies when the driver lists them. `imx8_per_process` and
//! `imx8_per_slice` are DEmOS's i.MX8-only versions (cpufreq `policy0` and `policy4` only); here
//! they are aliases of the general ones. DEmOS's `imx8_fixed` and `imx8_alternating` (test
//! policies taking P-state indices of the i.MX8's two clusters) are refused.
//!
//! Events at one instant: DEmOS calls `on_window_start` and `on_sc_start` after starting the
//! slices, so in a window whose SC work is all done at its start (no SC partition, or nothing
//! pending) its `on_be_start` comes first and `minbe` leaves BE at the highest frequency; here
//! the order is window start, SC start, then BE start, and `minbe` runs that BE at the lowest
//! (the seed's "BE at the lowest P-state"). No policy depends on the order of process events
//! relative to window events.

use super::config::Config;
use super::cpuset::CpuSet;
use super::sim::{process_models, ProcessModel, SimOptions, SimResult};
use crate::energy::cpufreq::{CpufreqBackend, Frequencies, Policy as CpufreqPolicy};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// The names `-p` accepts (besides the aliases `imx8_per_process`, `imx8_per_slice`).
pub const POLICY_NAMES: &[&str] = &["none", "minbe", "low", "high", "per_process", "per_slice"];

/// A DEmOS power policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerPolicy {
    /// No power management (DEmOS without `-p`, or `-p none`): cpufreq is not touched.
    None,
    /// SC at the highest frequency, BE at the lowest.
    MinBe,
    /// Every domain at its lowest frequency for the whole run.
    Low,
    /// Every domain at its highest frequency for the whole run.
    High,
    /// A process's `frequency` while it runs (others leave the frequency as it is).
    PerProcess,
    /// A slice's `frequency` from the start of its window.
    PerSlice,
}

/// A `-p` value that is not a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    pub value: String,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "power policy {:?}: {}", self.value, self.message)
    }
}

impl std::error::Error for PolicyError {}

fn valid_list() -> String {
    format!(
        "valid policies: {} (aliases: imx8_per_process, imx8_per_slice)",
        POLICY_NAMES.join(", ")
    )
}

impl PowerPolicy {
    /// Parses DEmOS's `-p` value: `NAME[:ARG1[,ARG2...]]`, NAME case-insensitive; an empty
    /// value is `none`. None of the supported policies takes arguments (DEmOS counts `minbe:`
    /// as one empty argument and refuses it too).
    pub fn parse(value: &str) -> Result<PowerPolicy, PolicyError> {
        let err = |message: String| PolicyError {
            value: value.to_string(),
            message,
        };
        let (name, args) = match value.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (value, None),
        };
        let name = name.to_ascii_lowercase();
        let policy = match name.as_str() {
            "" | "none" => PowerPolicy::None,
            "minbe" => PowerPolicy::MinBe,
            "low" => PowerPolicy::Low,
            "high" => PowerPolicy::High,
            "per_process" | "imx8_per_process" => PowerPolicy::PerProcess,
            "per_slice" | "imx8_per_slice" => PowerPolicy::PerSlice,
            "imx8_fixed" | "imx8_alternating" => {
                return Err(err(format!(
                    "'{name}' is one of DEmOS's i.MX8-only test policies (P-state indices of \
                     cpufreq policy0 and policy4), not supported; {}",
                    valid_list()
                )))
            }
            _ => {
                return Err(err(format!(
                    "unknown power policy '{name}'; {}",
                    valid_list()
                )))
            }
        };
        if let Some(args) = args {
            let n = args.split(',').count();
            return Err(err(format!(
                "the '{name}' power policy takes no arguments, got {n} ('{args}')"
            )));
        }
        Ok(policy)
    }

    pub fn name(self) -> &'static str {
        match self {
            PowerPolicy::None => "none",
            PowerPolicy::MinBe => "minbe",
            PowerPolicy::Low => "low",
            PowerPolicy::High => "high",
            PowerPolicy::PerProcess => "per_process",
            PowerPolicy::PerSlice => "per_slice",
        }
    }

    /// Whether the policy manages frequencies at all (DEmOS takes cpufreq over only then).
    pub fn is_active(self) -> bool {
        self != PowerPolicy::None
    }
}

impl FromStr for PowerPolicy {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PowerPolicy::parse(s)
    }
}

impl fmt::Display for PowerPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One cpufreq policy (`policyN`): one frequency for all its CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Domain {
    /// N of `policyN`.
    pub id: u32,
    /// The online CPUs it drives (`affected_cpus`); empty: inactive, never written (DEmOS).
    pub cpus: CpuSet,
    pub min_khz: u32,
    pub max_khz: u32,
    /// `scaling_available_frequencies` (ascending), when the driver lists them.
    pub available_khz: Option<Vec<u32>>,
}

impl Domain {
    pub fn from_cpufreq(p: &CpufreqPolicy) -> Domain {
        Domain {
            id: p.id,
            cpus: CpuSet::from_cpus(p.affected_cpus.iter().copied()),
            min_khz: p.min_khz(),
            max_khz: p.max_khz(),
            available_khz: match &p.freqs {
                Frequencies::List(l) => Some(l.clone()),
                Frequencies::Range { .. } => None,
            },
        }
    }

    fn active(&self) -> bool {
        !self.cpus.is_empty()
    }

    /// DEmOS's `validate_frequency` of a configured `frequency` (MHz): the kHz to write.
    pub fn khz_for_mhz(&self, mhz: f64) -> Result<u32, String> {
        let hz = (mhz * 1_000_000.0) as u64;
        let (min, max) = (
            u64::from(self.min_khz) * 1000,
            u64::from(self.max_khz) * 1000,
        );
        let name = format!("policy{}", self.id);
        if hz < min {
            return Err(format!(
                "{mhz} MHz is below the minimum of cpufreq {name} ({} MHz)",
                self.min_khz as f64 / 1000.0
            ));
        }
        if hz > max {
            return Err(format!(
                "{mhz} MHz is above the maximum of cpufreq {name} ({} MHz)",
                self.max_khz as f64 / 1000.0
            ));
        }
        if let Some(list) = &self.available_khz {
            if !hz.is_multiple_of(1000) || !list.contains(&((hz / 1000) as u32)) {
                let l: Vec<String> = list
                    .iter()
                    .map(|k| (*k as f64 / 1000.0).to_string())
                    .collect();
                return Err(format!(
                    "{mhz} MHz is not a frequency of cpufreq {name} (available: {} MHz)",
                    l.join(", ")
                ));
            }
        }
        Ok((hz / 1000) as u32)
    }
}

/// The domains of a backend's cpufreq policies.
pub fn domains_of(policies: &[CpufreqPolicy]) -> Vec<Domain> {
    policies.iter().map(Domain::from_cpufreq).collect()
}

/// A process of the configuration: `config.partitions[partition].processes[process]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcId {
    pub partition: usize,
    pub process: usize,
}

/// A DEmOS scheduler event, as its `PowerPolicy` hooks receive them.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The policy is set up, before the first window (DEmOS's policy constructor).
    Init,
    /// `on_window_start`: window `window` (index in `config.windows`) starts.
    WindowStart { window: usize },
    /// `on_sc_start`: the window's SC partitions start (right after the window start).
    ScStart { window: usize },
    /// `on_be_start`: the last SC partition of the window is done; the BE partitions start.
    BeStart { window: usize },
    /// `on_process_start`: a process starts (or resumes) on slice `slice` of `window`, whose
    /// CPUs are `cpus`; `freq_mhz` is the process's `frequency` key.
    ProcessStart {
        window: usize,
        slice: usize,
        proc: ProcId,
        cpus: CpuSet,
        freq_mhz: Option<f64>,
    },
    /// `on_process_end`: the process stops (budget, completion or window end).
    ProcessEnd {
        window: usize,
        slice: usize,
        proc: ProcId,
    },
    /// `on_window_end`: the window ends (before its slices are stopped).
    WindowEnd { window: usize },
}

/// An event at a time (ms since the scheduler started).
#[derive(Clone, Debug, PartialEq)]
pub struct Timed {
    pub time_ms: u64,
    pub event: Event,
}

/// A frequency write: `policy{domain}/scaling_setspeed` := `khz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub domain: u32,
    pub khz: u32,
}

/// A configuration the policy cannot run, or a runtime conflict (DEmOS's errors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerError(pub String);

impl fmt::Display for PowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PowerError {}

/// The CPUs each slice of each window runs on, as the simulator computes them: the slice's
/// CPUs (`all` = `all_cpus`) within `all_cpus`, else the lowest of `all_cpus`.
pub fn slice_cpus(config: &Config, all_cpus: CpuSet) -> Vec<Vec<CpuSet>> {
    config
        .windows
        .iter()
        .map(|w| {
            w.slices()
                .iter()
                .map(|s| {
                    let cpus = s.cpus(all_cpus).and(all_cpus);
                    if cpus.is_empty() {
                        CpuSet::from_cpus(all_cpus.lowest())
                    } else {
                        cpus
                    }
                })
                .collect()
        })
        .collect()
}

/// The pure policy: events in, frequency writes out.
#[derive(Clone, Debug)]
pub struct PowerEngine {
    policy: PowerPolicy,
    domains: Vec<Domain>,
    /// `per_slice`: per window, per domain, the kHz its slices ask for.
    slice_khz: Vec<Vec<Option<u32>>>,
    /// Last written kHz per domain (`None`: not written yet).
    current: Vec<Option<u32>>,
    /// `per_process`: per domain, the running processes that asked for a frequency (with it, Hz).
    requesting: Vec<Vec<((usize, ProcId), u64)>>,
    warnings: Vec<String>,
}

impl PowerEngine {
    /// Validates the configuration's `frequency` keys against `domains` for `policy` (DEmOS's
    /// `validate`; errors name the YAML path). `all_cpus` is what `cpu: all` means.
    pub fn new(
        policy: PowerPolicy,
        domains: Vec<Domain>,
        config: &Config,
        all_cpus: CpuSet,
    ) -> Result<PowerEngine, PowerError> {
        let cpus = slice_cpus(config, all_cpus);
        let mut warnings = Vec::new();
        let has_proc_freq = config
            .partitions
            .iter()
            .any(|p| p.processes.iter().any(|q| q.frequency.is_some()));
        let has_slice_freq = config
            .windows
            .iter()
            .any(|w| w.slices().iter().any(|s| s.frequency.is_some()));
        if has_proc_freq && policy != PowerPolicy::PerProcess {
            warnings.push(format!(
                "per-process frequency specified in the configuration, but not supported by the \
                 power policy '{policy}' (use per_process)"
            ));
        }
        if has_slice_freq && policy != PowerPolicy::PerSlice {
            warnings.push(format!(
                "per-slice frequency specified in the configuration, but not supported by the \
                 power policy '{policy}' (use per_slice)"
            ));
        }
        let mut slice_khz = vec![vec![None; domains.len()]; config.windows.len()];
        for (wi, w) in config.windows.iter().enumerate() {
            for (si, s) in w.slices().iter().enumerate() {
                let sc = cpus[wi][si];
                let touching = || {
                    domains
                        .iter()
                        .enumerate()
                        .filter(|(_, d)| d.cpus.intersects(sc))
                };
                if policy == PowerPolicy::PerProcess {
                    for name in [&s.sc_partition, &s.be_partition].into_iter().flatten() {
                        let Some(part) = config.partition(name) else {
                            continue;
                        };
                        for q in &part.processes {
                            if let Some(f) = q.frequency {
                                for (_, d) in touching() {
                                    d.khz_for_mhz(f).map_err(|e| {
                                        PowerError(format!("{}.frequency: {e}", q.path))
                                    })?;
                                }
                            }
                        }
                    }
                }
                if policy == PowerPolicy::PerSlice {
                    if let Some(f) = s.frequency {
                        for (di, d) in touching() {
                            let khz = d
                                .khz_for_mhz(f)
                                .map_err(|e| PowerError(format!("{}.frequency: {e}", s.path)))?;
                            match slice_khz[wi][di] {
                                Some(other) if other != khz => {
                                    return Err(PowerError(format!(
                                        "{}.frequency: scheduled slices require different \
                                         frequencies on the CPU(s) {} (cpufreq policy{}): '{} \
                                         MHz', '{} MHz'",
                                        s.path,
                                        d.cpus,
                                        d.id,
                                        other as f64 / 1000.0,
                                        khz as f64 / 1000.0
                                    )))
                                }
                                _ => slice_khz[wi][di] = Some(khz),
                            }
                        }
                    }
                }
            }
        }
        let n = domains.len();
        Ok(PowerEngine {
            policy,
            domains,
            slice_khz,
            current: vec![None; n],
            requesting: vec![Vec::new(); n],
            warnings,
        })
    }

    pub fn policy(&self) -> PowerPolicy {
        self.policy
    }

    pub fn domains(&self) -> &[Domain] {
        &self.domains
    }

    /// DEmOS's warnings (frequency keys the policy ignores).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The writes DEmOS makes for `event` (every one, also those that write the frequency a
    /// domain already has), in domain order; the engine's state moves on.
    pub fn on_event(&mut self, event: &Event) -> Result<Vec<Write>, PowerError> {
        use PowerPolicy as P;
        let mut targets: Vec<(usize, u32)> = Vec::new();
        let all = |max: bool, ds: &[Domain]| -> Vec<(usize, u32)> {
            ds.iter()
                .enumerate()
                .filter(|(_, d)| d.active())
                .map(|(i, d)| (i, if max { d.max_khz } else { d.min_khz }))
                .collect()
        };
        match (self.policy, event) {
            (P::MinBe | P::High, Event::Init) => targets = all(true, &self.domains),
            (P::Low, Event::Init) => targets = all(false, &self.domains),
            (P::MinBe, Event::ScStart { .. }) => targets = all(true, &self.domains),
            (P::MinBe, Event::BeStart { .. }) => targets = all(false, &self.domains),
            (P::PerSlice, Event::WindowStart { window }) => {
                if let Some(per_domain) = self.slice_khz.get(*window) {
                    targets = per_domain
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| self.domains[*i].active())
                        .filter_map(|(i, k)| k.map(|k| (i, k)))
                        .collect();
                }
            }
            (
                P::PerProcess,
                Event::ProcessStart {
                    slice,
                    proc,
                    cpus,
                    freq_mhz: Some(f),
                    ..
                },
            ) => {
                let hz = (f * 1_000_000.0) as u64;
                for (i, d) in self.domains.iter().enumerate() {
                    if !d.active() || !d.cpus.intersects(*cpus) {
                        continue;
                    }
                    if let Some(&(_, other)) = self.requesting[i].first() {
                        if other != hz {
                            return Err(PowerError(format!(
                                "scheduled processes require different frequencies on the \
                                 CPU(s) {} (cpufreq policy{}): '{} MHz', '{} MHz' (partition \
                                 #{} process #{} starting on CPUs {cpus})",
                                d.cpus,
                                d.id,
                                other as f64 / 1e6,
                                hz as f64 / 1e6,
                                proc.partition,
                                proc.process
                            )));
                        }
                    }
                    self.requesting[i].push(((*slice, *proc), hz));
                    targets.push((i, (hz / 1000) as u32));
                }
            }
            (P::PerProcess, Event::ProcessEnd { slice, proc, .. }) => {
                for r in &mut self.requesting {
                    r.retain(|(who, _)| *who != (*slice, *proc));
                }
            }
            _ => {}
        }
        Ok(targets
            .into_iter()
            .map(|(i, khz)| {
                self.current[i] = Some(khz);
                Write {
                    domain: self.domains[i].id,
                    khz,
                }
            })
            .collect())
    }

    /// The last frequency written to domain `id` (kHz).
    pub fn domain_khz(&self, id: u32) -> Option<u32> {
        let i = self.domains.iter().position(|d| d.id == id)?;
        self.current[i]
    }

    /// The frequency CPU `cpu` runs at by this policy's writes (kHz); `None` before its domain
    /// was first written, or for a CPU in no domain.
    pub fn cpu_khz(&self, cpu: u32) -> Option<u32> {
        let i = self.domains.iter().position(|d| d.cpus.contains(cpu))?;
        self.current[i]
    }
}

/// Rebuilds the [`Event`]s of a [`super::simulate`] run from its schedule log: the simulator
/// reports process starts only, the rest follows from DEmOS's semantics (docs/demos.md).
///
/// - Windows start at `0, l0, l0+l1, ...` up to `result.end_ms` (inclusive unless every process
///   exited, then only if a process starts then); a window ends when the next one starts.
/// - A log line belongs to the slice of its window with the same CPUs (an error when two slices
///   of a window run on the same CPUs). Per slice, the SC partition's processes start at the
///   window start, one after the other, in configuration order; the rest are BE, from the
///   partition's cursor.
/// - A run ends at its budget, at its job's completion (`TT_SIM_WORK_MS`, tracked across
///   activations as the simulator does) or at the window end. An SC partition is done when its
///   last run ends (at once without a run); BE starts when every slice's SC is done, strictly
///   before the window end and the end of the run.
/// - Check: every line must start where the previous run of its slice ended (the first SC line
///   at the window start, the first BE line at the BE start); a log that does not fit is an
///   error naming the line (a process whose command appears twice in a slice's partitions can
///   be mistaken for the other).
///
/// Order at one instant: window end, the processes it stops (slice order); window start, SC
/// start; SC process ends and starts (slice order); BE start; BE process ends and starts.
pub fn events_from_sim(
    config: &Config,
    opts: &SimOptions,
    result: &SimResult,
) -> Result<Vec<Timed>, String> {
    let cpus = slice_cpus(config, opts.all_cpus);
    let index = config.partition_index();
    let models = process_models(config);
    let mut runs: Vec<Vec<RunState>> = config
        .partitions
        .iter()
        .map(|p| vec![RunState::default(); p.processes.len()])
        .collect();
    let mut be_cursor = vec![0usize; config.partitions.len()];
    let log = &result.log;
    let end = result.end_ms;
    // (time, group, slice rank, seq, event)
    let mut evs: Vec<(u64, u8, usize, u8, Event)> = Vec::new();
    let mut li = 0;
    let (mut t0, mut w) = (0u64, 0usize);
    if config.windows.is_empty() {
        return Err("no window".into());
    }
    loop {
        if t0 > end
            || (t0 == end && result.all_exited && log.get(li).is_none_or(|l| l.time_ms != t0))
        {
            break;
        }
        let window = &config.windows[w];
        let t1 = t0 + window.length;
        let horizon = t1.min(end);
        let first = li;
        while li < log.len() && log[li].time_ms < t1 {
            li += 1;
        }
        let lines = &log[first..li];
        if let Some(l) = lines.iter().find(|l| l.time_ms < t0) {
            return Err(format!("log line before its window start {t0}: {l}"));
        }
        evs.push((t0, 1, 0, 0, Event::WindowStart { window: w }));
        evs.push((t0, 1, 0, 1, Event::ScStart { window: w }));
        let slices = window.slices();
        let wc = &cpus[w];
        for (a, ca) in wc.iter().enumerate() {
            if wc[..a].contains(ca) {
                return Err(format!(
                    "{}: two slices of window #{w} run on CPUs {ca}: their processes cannot be \
                     told apart in the log",
                    slices[a].path
                ));
            }
        }
        if let Some(l) = lines.iter().find(|l| !wc.contains(&l.cpus)) {
            return Err(format!("log line on CPUs of no slice of window #{w}: {l}"));
        }
        // per slice: the index of its first BE line, the SC end (None: not done)
        let mut sc_end: Vec<Option<u64>> = Vec::new();
        let mut be_from: Vec<usize> = Vec::new();
        let mut running_at_end: Vec<(usize, ProcId)> = Vec::new();
        for (s, slice) in slices.iter().enumerate() {
            let own: Vec<&super::sim::LogLine> = lines.iter().filter(|l| l.cpus == wc[s]).collect();
            let mut k = 0;
            let mut at = t0;
            let mut done = Some(t0);
            if let Some(p) = slice.sc_partition.as_deref().map(|n| index[n]) {
                let procs = &config.partitions[p].processes;
                let mut next = 0;
                while k < own.len() && own[k].time_ms == at {
                    let Some(i) = (next..procs.len()).find(|&i| procs[i].cmd == own[k].cmd) else {
                        break;
                    };
                    let proc = ProcId {
                        partition: p,
                        process: i,
                    };
                    let stop = run_end(&models, &runs, proc, own[k].time_ms, own[k].budget, t1);
                    account(&models, &mut runs, proc, own[k].time_ms, stop.min(horizon));
                    push_run(
                        &mut evs,
                        w,
                        s,
                        proc,
                        wc[s],
                        procs[i].frequency,
                        own[k].time_ms,
                        2,
                    );
                    if stop < horizon {
                        evs.push((
                            stop,
                            2,
                            s,
                            0,
                            Event::ProcessEnd {
                                window: w,
                                slice: s,
                                proc,
                            },
                        ));
                    } else if stop >= t1 && t1 <= end {
                        running_at_end.push((s, proc));
                    }
                    at = stop;
                    next = i + 1;
                    k += 1;
                }
                done = (at < t1).then_some(at);
            }
            sc_end.push(done);
            be_from.push(k);
        }
        let be_start = sc_end
            .iter()
            .try_fold(t0, |m, e| e.map(|e| m.max(e)))
            // at the window start BE starts within the window start (also at the time limit)
            .filter(|&b| b < horizon || b == t0);
        if let Some(b) = be_start {
            evs.push((b, 3, 0, 0, Event::BeStart { window: w }));
        }
        for (s, slice) in slices.iter().enumerate() {
            let own: Vec<&super::sim::LogLine> = lines.iter().filter(|l| l.cpus == wc[s]).collect();
            let rest = &own[be_from[s]..];
            let Some(first_be) = rest.first() else {
                continue;
            };
            let (Some(b), Some(q)) = (be_start, slice.be_partition.as_deref().map(|n| index[n]))
            else {
                return Err(format!(
                    "log line of slice {} that is not its SC partition's next process and no \
                     BE can start: {first_be}",
                    slice.path
                ));
            };
            let procs = &config.partitions[q].processes;
            let n = procs.len();
            let mut at = b;
            for l in rest {
                if l.time_ms != at {
                    return Err(format!(
                        "log line of slice {} at {} where its previous run ends at {at}: {l}",
                        slice.path, l.time_ms
                    ));
                }
                let Some(i) = (0..n)
                    .map(|d| (be_cursor[q] + d) % n)
                    .find(|&i| procs[i].cmd == l.cmd)
                else {
                    return Err(format!(
                        "log line of slice {} matches no process of its BE partition: {l}",
                        slice.path
                    ));
                };
                let proc = ProcId {
                    partition: q,
                    process: i,
                };
                let stop = run_end(&models, &runs, proc, l.time_ms, l.budget, t1);
                account(&models, &mut runs, proc, l.time_ms, stop.min(horizon));
                push_run(
                    &mut evs,
                    w,
                    s,
                    proc,
                    wc[s],
                    procs[i].frequency,
                    l.time_ms,
                    4,
                );
                // the cursor stays on a process cut with budget left, else moves past it
                be_cursor[q] = if stop == t1 && l.time_ms + l.budget > t1 {
                    i
                } else {
                    (i + 1) % n
                };
                if stop < horizon {
                    evs.push((
                        stop,
                        4,
                        s,
                        0,
                        Event::ProcessEnd {
                            window: w,
                            slice: s,
                            proc,
                        },
                    ));
                } else if stop >= t1 && t1 <= end {
                    running_at_end.push((s, proc));
                }
                at = stop;
            }
        }
        if t1 > end {
            break;
        }
        evs.push((t1, 0, 0, 0, Event::WindowEnd { window: w }));
        for (s, proc) in running_at_end {
            evs.push((
                t1,
                0,
                s + 1,
                0,
                Event::ProcessEnd {
                    window: w,
                    slice: s,
                    proc,
                },
            ));
        }
        t0 = t1;
        w = (w + 1) % config.windows.len();
    }
    if li < log.len() {
        return Err(format!("log line after the end of the run: {}", log[li]));
    }
    evs.sort_by_key(|e| (e.0, e.1, e.2, e.3));
    let mut out = vec![Timed {
        time_ms: 0,
        event: Event::Init,
    }];
    out.extend(evs.into_iter().map(|e| Timed {
        time_ms: e.0,
        event: e.4,
    }));
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn push_run(
    evs: &mut Vec<(u64, u8, usize, u8, Event)>,
    window: usize,
    slice: usize,
    proc: ProcId,
    cpus: CpuSet,
    freq_mhz: Option<f64>,
    t: u64,
    group: u8,
) {
    evs.push((
        t,
        group,
        slice,
        1,
        Event::ProcessStart {
            window,
            slice,
            proc,
            cpus,
            freq_mhz,
        },
    ));
}

#[derive(Clone, Debug, Default)]
struct RunState {
    progress: u64,
    executed: u64,
    exited: bool,
}

/// When a run of `proc` from `start` with `budget` stops: its budget, its job's completion
/// (before an exit; a tie completes, as the simulator) or the window end `t1`.
fn run_end(
    models: &[Vec<ProcessModel>],
    runs: &[Vec<RunState>],
    proc: ProcId,
    start: u64,
    budget: u64,
    t1: u64,
) -> u64 {
    let m = models[proc.partition][proc.process];
    let st = &runs[proc.partition][proc.process];
    let mut stop = (start + budget).min(t1);
    if !st.exited {
        if let Some(w) = m.work_ms {
            let done = start + w.saturating_sub(st.progress);
            let exit = m.exit_ms.map(|e| start + e.saturating_sub(st.executed));
            if exit.is_none_or(|x| done <= x) {
                stop = stop.min(done);
            }
        }
    }
    stop
}

/// Charges a run `[start, stop)` to `proc` as the simulator's `account`.
fn account(
    models: &[Vec<ProcessModel>],
    runs: &mut [Vec<RunState>],
    proc: ProcId,
    start: u64,
    stop: u64,
) {
    let m = models[proc.partition][proc.process];
    let st = &mut runs[proc.partition][proc.process];
    if st.exited || stop <= start {
        return;
    }
    let exit = m.exit_ms.map(|e| start + e.saturating_sub(st.executed));
    let until = exit.map_or(stop, |x| x.min(stop));
    let ran = until - start;
    st.executed += ran;
    st.progress += ran;
    if let Some(w) = m.work_ms {
        if st.progress >= w {
            st.progress = 0;
        }
    }
    if exit.is_some_and(|x| x <= stop) {
        st.exited = true;
    }
}

/// Applies a [`PowerEngine`]'s decisions through a cpufreq backend: writes a domain only when
/// its frequency changes (DEmOS rewrites the same value; the result is the same).
#[derive(Debug)]
pub struct PowerDriver<B: CpufreqBackend> {
    backend: B,
    engine: PowerEngine,
    written: HashMap<u32, u32>,
}

impl<B: CpufreqBackend> PowerDriver<B> {
    /// An engine over the backend's policies.
    pub fn new(
        backend: B,
        policy: PowerPolicy,
        config: &Config,
        all_cpus: CpuSet,
    ) -> Result<Self, PowerError> {
        let engine = PowerEngine::new(policy, domains_of(backend.policies()), config, all_cpus)?;
        Ok(PowerDriver {
            backend,
            engine,
            written: HashMap::new(),
        })
    }

    /// Handles `event`: returns the writes made (changes only).
    pub fn apply(&mut self, event: &Event) -> Result<Vec<Write>, PowerError> {
        let mut made = Vec::new();
        for wr in self.engine.on_event(event)? {
            if self.written.get(&wr.domain) == Some(&wr.khz) {
                continue;
            }
            self.backend
                .set_khz(wr.domain, wr.khz)
                .map_err(|e| PowerError(format!("setting cpufreq policy{}: {e}", wr.domain)))?;
            self.written.insert(wr.domain, wr.khz);
            made.push(wr);
        }
        Ok(made)
    }

    pub fn engine(&self) -> &PowerEngine {
        &self.engine
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn into_backend(self) -> B {
        self.backend
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demos::config::Source;
    use crate::demos::sim::simulate;

    fn cfg(yaml: &str) -> Config {
        Config::from_yaml(yaml, Source::Inline).unwrap()
    }

    /// i.MX8QM: A53 cluster (CPUs 0-3) and A72 cluster (CPUs 4-5).
    fn imx8() -> Vec<Domain> {
        vec![
            Domain {
                id: 0,
                cpus: CpuSet::from_cpus(0..4),
                min_khz: 600_000,
                max_khz: 1_200_000,
                available_khz: Some(vec![600_000, 896_000, 1_104_000, 1_200_000]),
            },
            Domain {
                id: 4,
                cpus: CpuSet::from_cpus(4..6),
                min_khz: 600_000,
                max_khz: 1_596_000,
                available_khz: Some(vec![600_000, 1_056_000, 1_296_000, 1_596_000]),
            },
        ]
    }

    #[test]
    fn parses_names_like_demos_and_refuses_others_listing_the_valid_ones() {
        assert_eq!(PowerPolicy::parse("minbe"), Ok(PowerPolicy::MinBe));
        assert_eq!(PowerPolicy::parse("MinBE"), Ok(PowerPolicy::MinBe));
        assert_eq!(PowerPolicy::parse(""), Ok(PowerPolicy::None));
        assert_eq!(PowerPolicy::parse("none"), Ok(PowerPolicy::None));
        assert_eq!(
            PowerPolicy::parse("imx8_per_process"),
            Ok(PowerPolicy::PerProcess)
        );
        assert_eq!("high".parse::<PowerPolicy>(), Ok(PowerPolicy::High));
        let e = PowerPolicy::parse("turbo").unwrap_err().to_string();
        assert!(e.contains("\"turbo\""), "{e}");
        for n in POLICY_NAMES {
            assert!(e.contains(n), "{e}");
        }
        let e = PowerPolicy::parse("minbe:").unwrap_err().to_string();
        assert!(e.contains("takes no arguments, got 1"), "{e}");
        let e = PowerPolicy::parse("low:1,2").unwrap_err().to_string();
        assert!(e.contains("got 2"), "{e}");
        let e = PowerPolicy::parse("imx8_fixed:1,2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("i.MX8-only"), "{e}");
    }

    #[test]
    fn minbe_low_high_write_every_active_domain() {
        let c = cfg("{windows: [{length: 10, sc_processes: a}]}");
        let mut ds = imx8();
        ds.push(Domain {
            id: 6,
            cpus: CpuSet::EMPTY,
            min_khz: 1,
            max_khz: 2,
            available_khz: None,
        });
        let all = CpuSet::first_n(6);
        let mut e = PowerEngine::new(PowerPolicy::MinBe, ds.clone(), &c, all).unwrap();
        let w = |d, khz| Write { domain: d, khz };
        assert_eq!(
            e.on_event(&Event::Init).unwrap(),
            [w(0, 1_200_000), w(4, 1_596_000)]
        );
        assert_eq!(
            e.on_event(&Event::BeStart { window: 0 }).unwrap(),
            [w(0, 600_000), w(4, 600_000)]
        );
        assert_eq!(e.cpu_khz(5), Some(600_000));
        assert_eq!(e.on_event(&Event::WindowStart { window: 0 }).unwrap(), []);
        assert_eq!(e.on_event(&Event::ScStart { window: 0 }).unwrap().len(), 2);
        assert_eq!(e.cpu_khz(1), Some(1_200_000));
        assert_eq!(e.cpu_khz(6), None);
        let mut l = PowerEngine::new(PowerPolicy::Low, ds.clone(), &c, all).unwrap();
        assert_eq!(
            l.on_event(&Event::Init).unwrap(),
            [w(0, 600_000), w(4, 600_000)]
        );
        assert_eq!(l.on_event(&Event::ScStart { window: 0 }).unwrap(), []);
        assert_eq!(l.on_event(&Event::BeStart { window: 0 }).unwrap(), []);
        let mut h = PowerEngine::new(PowerPolicy::High, ds, &c, all).unwrap();
        assert_eq!(
            h.on_event(&Event::Init).unwrap(),
            [w(0, 1_200_000), w(4, 1_596_000)]
        );
        assert_eq!(h.on_event(&Event::BeStart { window: 0 }).unwrap(), []);
    }

    #[test]
    fn per_process_validates_and_detects_conflicts_on_a_shared_domain() {
        let c = cfg("{partitions: [{name: A, processes: [{cmd: a, budget: 5, frequency: 896}]},
                     {name: B, processes: [{cmd: b, budget: 5, frequency: 1200}]}],
                     windows: [{length: 10, slices: [{cpu: 0, sc_partition: A}, {cpu: 1, sc_partition: B}]}]}");
        let all = CpuSet::first_n(6);
        let mut e = PowerEngine::new(PowerPolicy::PerProcess, imx8(), &c, all).unwrap();
        let start = |slice, partition, f| Event::ProcessStart {
            window: 0,
            slice,
            proc: ProcId {
                partition,
                process: 0,
            },
            cpus: CpuSet::from_cpus([slice as u32]),
            freq_mhz: Some(f),
        };
        assert_eq!(
            e.on_event(&start(0, 0, 896.0)).unwrap(),
            [Write {
                domain: 0,
                khz: 896_000
            }]
        );
        let err = e.on_event(&start(1, 1, 1200.0)).unwrap_err().0;
        assert!(err.contains("'896 MHz', '1200 MHz'"), "{err}");
        // after the first ends, the second may start
        let mut e = PowerEngine::new(PowerPolicy::PerProcess, imx8(), &c, all).unwrap();
        e.on_event(&start(0, 0, 896.0)).unwrap();
        e.on_event(&Event::ProcessEnd {
            window: 0,
            slice: 0,
            proc: ProcId {
                partition: 0,
                process: 0,
            },
        })
        .unwrap();
        assert_eq!(e.on_event(&start(1, 1, 1200.0)).unwrap().len(), 1);
        assert_eq!(e.cpu_khz(3), Some(1_200_000));
        assert_eq!(e.cpu_khz(4), None);
        // 1000 MHz is within the A53's range but not one of its frequencies
        let bad = cfg("{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: a, budget: 5, frequency: 1000}]}]}");
        let err = PowerEngine::new(PowerPolicy::PerProcess, imx8(), &bad, all)
            .unwrap_err()
            .0;
        assert!(
            err.starts_with("windows[0].sc_processes[0].frequency: 1000 MHz is not a frequency of cpufreq policy0 (available: 600, 896, 1104, 1200 MHz)"),
            "{err}"
        );
        // other policies warn that they ignore it
        let e = PowerEngine::new(PowerPolicy::MinBe, imx8(), &bad, all).unwrap();
        assert!(e.warnings()[0].contains("per-process frequency"));
    }

    #[test]
    fn per_slice_sets_each_windows_frequencies_and_refuses_disagreeing_slices() {
        let c = cfg("{windows: [{length: 10, slices: [{cpu: 0, frequency: 896, sc_processes: a},
                                                        {cpu: 4, frequency: 1296, be_processes: b}]},
                                {length: 10, slices: [{cpu: 5, frequency: 600, be_processes: c}]}]}");
        let all = CpuSet::first_n(6);
        let mut e = PowerEngine::new(PowerPolicy::PerSlice, imx8(), &c, all).unwrap();
        assert_eq!(e.on_event(&Event::Init).unwrap(), []);
        let w0 = e.on_event(&Event::WindowStart { window: 0 }).unwrap();
        assert_eq!(
            w0,
            [
                Write {
                    domain: 0,
                    khz: 896_000
                },
                Write {
                    domain: 4,
                    khz: 1_296_000
                }
            ]
        );
        let w1 = e.on_event(&Event::WindowStart { window: 1 }).unwrap();
        assert_eq!(
            w1,
            [Write {
                domain: 4,
                khz: 600_000
            }]
        );
        assert_eq!(e.cpu_khz(0), Some(896_000));
        let bad = cfg("{windows: [{length: 10, slices: [{cpu: 0, frequency: 896, sc_processes: a},
                                                          {cpu: 1, frequency: 600, sc_processes: b}]}]}");
        let err = PowerEngine::new(PowerPolicy::PerSlice, imx8(), &bad, all)
            .unwrap_err()
            .0;
        assert!(
            err.starts_with("windows[0].slices[1].frequency: scheduled slices require different frequencies on the CPU(s) 0-3"),
            "{err}"
        );
    }

    fn names(evs: &[Timed]) -> Vec<String> {
        evs.iter()
            .map(|t| {
                let e = match &t.event {
                    Event::Init => "init".to_string(),
                    Event::WindowStart { window } => format!("ws{window}"),
                    Event::ScStart { window } => format!("sc{window}"),
                    Event::BeStart { window } => format!("be{window}"),
                    Event::WindowEnd { window } => format!("we{window}"),
                    Event::ProcessStart { slice, proc, .. } => {
                        format!("+{slice}:{}.{}", proc.partition, proc.process)
                    }
                    Event::ProcessEnd { slice, proc, .. } => {
                        format!("-{slice}:{}.{}", proc.partition, proc.process)
                    }
                };
                format!("{} {e}", t.time_ms)
            })
            .collect()
    }

    #[test]
    fn rebuilds_events_with_completions_and_be_carry_over() {
        let c = cfg("{windows: [{length: 10, cpu: 0,
               sc_processes: [{cmd: 'TT_SIM_WORK_MS=2 a', budget: 5}, {cmd: b, budget: 3}],
               be_processes: [{cmd: c, budget: 7}]}]}");
        let opts = SimOptions {
            all_cpus: CpuSet::first_n(2),
            until_ms: 20,
            seed: 5489,
        };
        let r = simulate(&c, &opts).unwrap();
        let evs = events_from_sim(&c, &opts, &r).unwrap();
        // SC: a completes at 2, b runs to 5; BE c runs 5..10 (cut, 2 left), then 15..17
        assert_eq!(
            names(&evs),
            [
                "0 init",
                "0 ws0",
                "0 sc0",
                "0 +0:0.0",
                "2 -0:0.0",
                "2 +0:0.1",
                "5 -0:0.1",
                "5 be0",
                "5 +0:1.0",
                "10 we0",
                "10 -0:1.0",
                "10 ws0",
                "10 sc0",
                "10 +0:0.0",
                "12 -0:0.0",
                "12 +0:0.1",
                "15 -0:0.1",
                "15 be0",
                "15 +0:1.0",
                "17 -0:1.0",
                "20 we0",
                "20 ws0",
                "20 sc0",
                "20 +0:0.0"
            ]
        );
    }

    #[test]
    fn a_window_without_sc_starts_be_at_once_and_an_overrun_never_does() {
        let c = cfg("{windows: [{length: 10, cpu: 0, be_processes: [{cmd: x, budget: 4}]},
                                {length: 10, cpu: 0, sc_processes: [{cmd: y, budget: 12}], be_processes: [{cmd: z, budget: 1}]}]}");
        let opts = SimOptions {
            all_cpus: CpuSet::first_n(1),
            until_ms: 20,
            seed: 5489,
        };
        let r = simulate(&c, &opts).unwrap();
        let evs = events_from_sim(&c, &opts, &r).unwrap();
        assert_eq!(
            names(&evs),
            [
                "0 init",
                "0 ws0",
                "0 sc0",
                "0 be0",
                "0 +0:0.0",
                "4 -0:0.0",
                "10 we0",
                "10 ws1",
                "10 sc1",
                "10 +0:1.0",
                "20 we1",
                "20 -0:1.0",
                "20 ws0",
                "20 sc0",
                "20 be0",
                "20 +0:0.0"
            ]
        );
    }

    #[test]
    fn a_log_that_does_not_fit_the_config_is_refused() {
        let c = cfg("{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: a, budget: 4}]}]}");
        let opts = SimOptions {
            all_cpus: CpuSet::first_n(1),
            until_ms: 10,
            seed: 5489,
        };
        let mut r = simulate(&c, &opts).unwrap();
        r.log[0].time_ms = 3;
        assert!(events_from_sim(&c, &opts, &r).is_err());
    }
}

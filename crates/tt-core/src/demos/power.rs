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
use crate::energy::cpufreq::{CpufreqBackend, Frequencies, Policy as CpufreqPolicy};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// [`events_from_sim`]: the events of a simulator run, rebuilt from its log.
mod sim_events;

pub use sim_events::events_from_sim;

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
mod tests;

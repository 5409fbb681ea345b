//! `--freq-backend`: how planner mode's per-slot frequencies reach the hardware
//! (docs/energy.md, "Frequency backends").
//!
//! - `cpufreq`: the managed CPUs' cpufreq policies go to the `userspace` governor (intel_pstate
//!   and amd-pstate to passive mode first), journaled under `--run-dir` before the first change
//!   and restored on every exit path (`energy::journal_file`); the planner thread writes
//!   `scaling_setspeed` once per slot: at the start of slot `c` (just after its boundary) it
//!   writes the lowers slot `c` needs, then the raises slot `c + 1` needs — a raise lands a slot
//!   ahead, a lower only once its slot has started, and a policy shared by several managed CPUs
//!   gets the highest frequency any of them needs (`energy::cpufreq::plan_slot`). A raise that
//!   lands after its slot started is counted (`late_raises`: that slot began slower than
//!   planned, a guarantee at risk).
//! - `cpuperf`: the BPF tick of each slot passes the slot's target to `scx_bpf_cpuperf_set`
//!   (honoured by schedutil only).
//! - `none`: frequencies are left to the kernel (the planner still decides them; the records
//!   say full speed, the perf map asks for nothing).
//! - `auto` (default): `cpufreq` when every managed CPU has a cpufreq policy that offers the
//!   `userspace` governor, else `cpuperf` (schedutil-only kernels, machines without cpufreq such
//!   as the test VM).
//!
//! In every backend the perf map carries the planned target so that the slot records (and the
//! energy estimate) say at what frequency each slot was meant to run; under `cpufreq` BPF's
//! `scx_bpf_cpuperf_set` calls are no-ops (the userspace governor ignores them).
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use anyhow::{Context, Result};
use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::energy::cpufreq::{
    self, CpufreqBackend, CpufreqError, FreqController, FreqWrite, SysfsCpufreq,
};
use scx_tt::energy::sysfs::{Journal, Root};
use scx_tt::planner::UNIT;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `--freq-backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FreqBackendArg {
    Auto,
    Cpufreq,
    Cpuperf,
    None,
}

impl FreqBackendArg {
    pub fn name(self) -> &'static str {
        match self {
            FreqBackendArg::Auto => "auto",
            FreqBackendArg::Cpufreq => "cpufreq",
            FreqBackendArg::Cpuperf => "cpuperf",
            FreqBackendArg::None => "none",
        }
    }
}

/// The backend a run uses, once `auto` is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Cpufreq,
    Cpuperf,
    None,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpufreq => "cpufreq",
            Backend::Cpuperf => "cpuperf",
            Backend::None => "none",
        }
    }
}

/// A run's frequency backend and, for cpufreq, its driver (shared by the planner threads of
/// the run's schedulers; dropping the last handle restores the policies).
pub struct Freq {
    pub backend: Backend,
    pub driver: Option<std::sync::Arc<std::sync::Mutex<FreqDriver>>>,
}

impl Freq {
    /// What the summary says about the frequency backend.
    pub fn report(&self) -> FreqReport {
        FreqReport {
            backend: self.backend,
            cpufreq: self
                .driver
                .as_ref()
                .map(|d| d.lock().unwrap_or_else(|e| e.into_inner()).counts()),
        }
    }
}

/// `--summary-json`'s `freq` (planner mode).
#[derive(Clone, Debug, Serialize)]
pub struct FreqReport {
    pub backend: Backend,
    /// The cpufreq backend's writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpufreq: Option<FreqCounts>,
}

impl FreqReport {
    /// The line printed after the summary.
    pub fn describe(&self) -> String {
        match &self.cpufreq {
            Some(c) => format!(
                "frequency backend cpufreq: {} raises (ahead of their slot), {} lowers (after \
                 their slot started), {} late raises{}, {} failed writes",
                c.raises,
                c.lowers,
                c.late_raises,
                if c.late_raises > 0 {
                    " (those slots began slower than planned: a guarantee at risk)"
                } else {
                    ""
                },
                c.errors
            ),
            None => format!("frequency backend {}", self.backend.name()),
        }
    }
}

/// Journal name of the cpufreq backend under `--run-dir`.
pub const JOURNAL: &str = "cpufreq";

/// Why `auto` did not pick cpufreq (for `-v`), or `None` when every managed CPU can. Under
/// intel_pstate or amd-pstate in active mode the governors are not checked here: the passive
/// mode the backend switches to offers the generic ones (`take_control` checks them after the
/// switch and restores the mode when `userspace` is missing).
pub fn cpufreq_unusable(root: &Root, managed: &[u32]) -> Option<String> {
    let policies = match cpufreq::discover(root) {
        Ok(p) => p,
        Err(e) => return Some(e.to_string()),
    };
    let active = cpufreq::active_pstate_driver(root).is_some();
    for &cpu in managed {
        match policies.iter().find(|p| p.affected_cpus.contains(&cpu)) {
            None => return Some(format!("managed CPU {cpu} is in no cpufreq policy")),
            Some(p) if !active && !p.governors.iter().any(|g| g == "userspace") => {
                return Some(format!(
                    "cpufreq policy{} (CPU {cpu}) offers no userspace governor ({})",
                    p.id,
                    p.governors.join(" ")
                ))
            }
            Some(_) => {}
        }
    }
    None
}

/// `auto` → cpufreq or cpuperf (see the module doc).
pub fn resolve(arg: FreqBackendArg, root: &Root, managed: &[u32], verbose: bool) -> Backend {
    match arg {
        FreqBackendArg::Cpufreq => Backend::Cpufreq,
        FreqBackendArg::Cpuperf => Backend::Cpuperf,
        FreqBackendArg::None => Backend::None,
        FreqBackendArg::Auto => match cpufreq_unusable(root, managed) {
            None => Backend::Cpufreq,
            Some(why) => {
                if verbose {
                    eprintln!("scx_tt: --freq-backend auto: cpuperf ({why})");
                }
                Backend::Cpuperf
            }
        },
    }
}

/// One `scaling_setspeed` write, for `--freq-log` (docs/run-output.md).
#[derive(Clone, Debug, Serialize)]
pub struct LoggedWrite {
    /// CLOCK_MONOTONIC when the write returned.
    pub t_ns: u64,
    /// The slot the frequency is for.
    pub slot: u64,
    /// Its start on the slot clock.
    pub slot_start_ns: u64,
    pub policy: u32,
    pub khz: u32,
    /// "raise" (due before `slot_start_ns`) or "lower" (due after it).
    pub kind: &'static str,
}

/// Counts of a run's frequency writes (summary: "cpufreq").
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct FreqCounts {
    pub raises: u64,
    pub lowers: u64,
    /// Raises that returned after their slot had started (the slot began slower than planned:
    /// a guarantee at risk), including those of slots whose turn the planner thread missed.
    pub late_raises: u64,
    /// Writes that failed (the first of each kind is printed).
    pub errors: u64,
}

/// At most this many writes are kept for `--freq-log` (a write is ~100 bytes).
pub const LOG_CAP: usize = 1 << 20;

/// The cpufreq backend driven by the planner thread (see the module doc).
pub struct FreqDriver {
    ctl: FreqController<SysfsCpufreq>,
    managed: Vec<u32>,
    frame: u64,
    /// Frequency per (managed CPU index, frame slot), ppm, as the planner decided it.
    ppm: Vec<u32>,
    counts: FreqCounts,
    log: Option<Vec<LoggedWrite>>,
    last_error: Option<String>,
    /// The slot the last raises were written for (its lowers are pending).
    raised_for: Option<u64>,
}

impl FreqDriver {
    /// Takes the managed CPUs' policies over (journaled under `run_dir`).
    pub fn take_control(
        root: Root,
        run_dir: &Path,
        managed: &[u32],
        frame: u64,
        log: bool,
    ) -> Result<Self> {
        if let Some(why) = cpufreq_unusable(&root, managed) {
            anyhow::bail!("--freq-backend cpufreq: {why}");
        }
        let journal = Journal::persistent(root, run_dir, JOURNAL)
            .context("--freq-backend cpufreq: the restore journal")?;
        let backend = SysfsCpufreq::take_control_of(journal, Some(managed))
            .context("--freq-backend cpufreq: taking the cpufreq policies over")?;
        Ok(FreqDriver {
            ctl: FreqController::new(backend),
            managed: managed.to_vec(),
            frame,
            ppm: vec![UNIT as u32; managed.len() * frame as usize],
            counts: FreqCounts::default(),
            log: log.then(Vec::new),
            last_error: None,
            raised_for: None,
        })
    }

    /// One line for the start-up: the policies taken over.
    pub fn describe(&self) -> String {
        let ps: Vec<String> = self
            .ctl
            .backend()
            .policies()
            .iter()
            .map(|p| {
                format!(
                    "policy{} (CPUs {:?}, {}, {}-{} kHz)",
                    p.id,
                    p.affected_cpus,
                    p.driver,
                    p.min_khz(),
                    p.max_khz()
                )
            })
            .collect();
        format!(
            "cpufreq backend: userspace governor on {}; journal {}",
            ps.join(", "),
            self.ctl
                .backend()
                .journal_file()
                .map_or("(none)".into(), |p| p.display().to_string())
        )
    }

    /// The planner's new frequency of entry (managed CPU index, frame slot).
    pub fn set_entry(&mut self, cpu: usize, frame_slot: u64, ppm: u32) {
        let i = cpu * self.frame as usize + frame_slot as usize;
        if let Some(e) = self.ppm.get_mut(i) {
            *e = ppm;
        }
    }

    /// The turn of the planner thread in slot `cur` (`None` before slot 0), after the planner
    /// decided up to `cur + lead` and its entries were applied: lowers for `cur`, raises for
    /// `cur + 1`. When the thread missed the turn that raises for `cur` (it woke a slot late),
    /// `cur`'s raises are written first, late. A failed write is reported once and counted;
    /// the run goes on.
    pub fn turn(&mut self, cur: Option<u64>, clock: &SlotClock) {
        if let Some(c) = cur {
            if self.raised_for.is_none_or(|r| r < c) {
                self.raise_for(c, clock);
            }
            // the lowers planned for `cur` (its boundary has passed)
            let lowered = self.ctl.after_boundary();
            self.account(lowered, c, clock);
        }
        self.raise_for(cur.map_or(0, |c| c + 1), clock);
    }

    /// Writes what `slot` needs that is above the current frequencies now (and the lowers
    /// still pending, which are for the slot raised for last), and plans its lowers.
    fn raise_for(&mut self, slot: u64, clock: &SlotClock) {
        let fs = (slot % self.frame) as usize;
        let requests: Vec<(u32, f64)> = self
            .managed
            .iter()
            .enumerate()
            .map(|(m, &cpu)| {
                let ppm = self.ppm[m * self.frame as usize + fs];
                (cpu, f64::from(ppm) / UNIT as f64)
            })
            .collect();
        let res = self.ctl.before_boundary(&requests);
        let lower_slot = self.raised_for.unwrap_or(slot);
        match res {
            Ok(writes) => {
                let (raises, lowers): (Vec<_>, Vec<_>) = writes.into_iter().partition(|w| w.raise);
                self.account(Ok(lowers), lower_slot, clock);
                self.account(Ok(raises), slot, clock);
            }
            Err(e) => self.account(Err(e), slot, clock),
        }
        self.raised_for = Some(slot);
    }

    /// Counts and logs `res`, writes for `slot`, which returned just now.
    fn account(&mut self, res: Result<Vec<FreqWrite>, CpufreqError>, slot: u64, clock: &SlotClock) {
        let t = monotonic_ns();
        let writes = match res {
            Ok(w) => w,
            Err(e) => {
                self.counts.errors += 1;
                let msg = e.to_string();
                if self.last_error.as_deref() != Some(msg.as_str()) {
                    eprintln!("scx_tt: warning: cpufreq: {msg}");
                    self.last_error = Some(msg);
                }
                return;
            }
        };
        let start = clock.start_ns(slot);
        for w in writes {
            if w.raise {
                self.counts.raises += 1;
                if t > start {
                    self.counts.late_raises += 1;
                }
            } else {
                self.counts.lowers += 1;
            }
            if let Some(log) = self.log.as_mut().filter(|l| l.len() < LOG_CAP) {
                log.push(LoggedWrite {
                    t_ns: t,
                    slot,
                    slot_start_ns: start,
                    policy: w.policy,
                    khz: w.khz,
                    kind: if w.raise { "raise" } else { "lower" },
                });
            }
        }
    }

    pub fn counts(&self) -> FreqCounts {
        self.counts.clone()
    }

    /// Restores the policies now (also on drop); the number of files that failed.
    pub fn restore(&mut self) -> usize {
        self.ctl.backend_mut().restore()
    }

    /// Writes `--freq-log` (one JSON object per line).
    pub fn write_log(&self, path: &PathBuf) -> Result<()> {
        let f = std::fs::File::create(path)
            .with_context(|| format!("creating the frequency log {}", path.display()))?;
        let mut w = std::io::BufWriter::new(f);
        for e in self.log.iter().flatten() {
            serde_json::to_writer(&mut w, e)?;
            w.write_all(b"\n")?;
        }
        w.flush()
            .with_context(|| format!("writing the frequency log {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tree: one acpi-cpufreq policy shared by CPUs 1 and 2, 1.0-2.3 GHz in 0.1 steps.
    struct Tree(PathBuf);

    impl Tree {
        fn new(tag: &str) -> Tree {
            let d = std::env::temp_dir().join(format!("scx_tt-freq-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            let p = d.join("root/sys/devices/system/cpu/cpufreq/policy1");
            std::fs::create_dir_all(&p).expect("mkdir");
            let list: Vec<String> = (10..=23).map(|k| (k * 100_000).to_string()).collect();
            for (f, v) in [
                ("affected_cpus", "1 2"),
                ("related_cpus", "1 2"),
                ("scaling_available_frequencies", list.join(" ").as_str()),
                ("cpuinfo_min_freq", "1000000"),
                ("cpuinfo_max_freq", "2300000"),
                ("scaling_min_freq", "1000000"),
                ("scaling_max_freq", "2300000"),
                ("scaling_driver", "acpi-cpufreq"),
                ("scaling_governor", "ondemand"),
                ("scaling_available_governors", "ondemand userspace"),
                ("scaling_setspeed", "<unsupported>"),
            ] {
                std::fs::write(p.join(f), format!("{v}\n")).expect("write");
            }
            Tree(d)
        }

        fn driver(&self, frame: u64) -> FreqDriver {
            FreqDriver::take_control(
                Root::new(self.0.join("root")),
                &self.0.join("run"),
                &[1, 2],
                frame,
                true,
            )
            .expect("take control")
        }

        fn setspeed(&self) -> String {
            std::fs::read_to_string(
                self.0
                    .join("root/sys/devices/system/cpu/cpufreq/policy1/scaling_setspeed"),
            )
            .expect("read")
            .trim()
            .to_string()
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn log(d: &FreqDriver) -> Vec<(u64, u32, &'static str)> {
        d.log
            .iter()
            .flatten()
            .map(|w| (w.slot, w.khz, w.kind))
            .collect()
    }

    #[test]
    fn a_shared_policy_is_raised_a_slot_ahead_and_lowered_once_its_slot_started() {
        let t = Tree::new("ahead");
        let mut d = t.driver(4);
        // slot 1: CPU 1 at 0.5, CPU 2 at 0.7 -> 0.7 * 2.3 GHz = 1.61 GHz -> 1.7 GHz listed
        d.set_entry(0, 1, 500_000);
        d.set_entry(1, 1, 700_000);
        // slot 2: both at 0.9 -> 2.07 GHz -> 2.1 GHz (a raise)
        d.set_entry(0, 2, 900_000);
        d.set_entry(1, 2, 900_000);
        let clock = SlotClock::new(monotonic_ns() + 10_000_000_000, 100_000_000);
        d.turn(None, &clock);
        assert_eq!(t.setspeed(), "2300000", "slot 0 at full speed");
        d.turn(Some(0), &clock);
        assert_eq!(t.setspeed(), "2300000", "slot 1's lower waits for slot 1");
        d.turn(Some(1), &clock);
        assert_eq!(
            t.setspeed(),
            "2100000",
            "lowered in slot 1, then raised for slot 2"
        );
        assert_eq!(
            log(&d),
            [
                (0, 2_300_000, "raise"),
                (1, 1_700_000, "lower"),
                (2, 2_100_000, "raise")
            ]
        );
        let c = d.counts();
        assert_eq!((c.raises, c.lowers, c.late_raises, c.errors), (2, 1, 0, 0));
        d.restore();
        assert_eq!(t.setspeed(), "<unsupported>");
    }

    #[test]
    fn a_missed_turn_writes_its_raise_late_and_counts_it() {
        let t = Tree::new("late");
        let mut d = t.driver(4);
        d.set_entry(0, 0, 500_000);
        d.set_entry(1, 0, 500_000);
        d.set_entry(0, 1, 500_000);
        d.set_entry(1, 1, 500_000);
        // slot 0 started long ago: every slot's start is in the past
        let clock = SlotClock::new(monotonic_ns() - 10_000_000_000, 100_000_000);
        d.turn(Some(0), &clock); // no turn before slot 0: its raise (1.2 GHz) comes late
        d.turn(Some(3), &clock); // turns 1 and 2 missed: slot 3 (full speed) raised late
        assert_eq!(
            log(&d),
            [(0, 1_200_000, "raise"), (3, 2_300_000, "raise")],
            "slot 1's value was already in force: nothing to write for it"
        );
        let c = d.counts();
        assert_eq!((c.raises, c.late_raises), (2, 2));
    }
}

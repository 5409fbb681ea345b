//! `--idle-control`: whether planner mode makes the managed CPUs idle the way its policy is
//! defined (docs/energy.md, "Idle control").
//!
//! - `policy` (default in planner mode): bss and dvfs keep idle managed cores polling, the
//!   paper's set-up for its BSS and EASS-DVFS ("a CPUIdle governor that doesn't put the cores
//!   in a low power state"), which is also how `simulate` and the live estimate price their idle
//!   slots: each managed CPU's `power/pm_qos_resume_latency_us` is set to `n/a` (no idle state
//!   with an exit latency: polling) for the run, journaled under `--run-dir` before the change
//!   and restored on every exit path (the next start or `scx_tt restore` after a SIGKILL). Under
//!   dpm and dpm+dvfs the planner thread sets a limit per DPM idle period when it publishes the
//!   period ([`IdleControl::period`]): `energy::idle::limit_for_period` of the period's length,
//!   i.e. the deepest idle state whose target residency the period pays for, from the kernel's
//!   cpuidle states when the CPU has them, else from the power model's. A swap to bss or dvfs
//!   puts the cores back to polling ([`IdleControl::poll_all`]).
//! - `kernel`: idle states are left to the kernel's cpuidle governor; the live estimate then
//!   prices each idle slot with the deepest state that pays off within it (`deepest_per_slot`).
//!
//! A machine without the pm_qos files (a fake sysfs tree that lacks them) runs as `kernel`, with
//! a warning. Without `--planner` nothing is changed.
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use anyhow::{Context, Result};
use scx_tt::clock::monotonic_ns;
use scx_tt::energy::idle::{
    limit_for_period, read_states, CpuidleState, IdleBackend, LatencyLimit, PmQosIdle,
};
use scx_tt::energy::model::PowerModel;
use scx_tt::energy::sysfs::{Journal, Root};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// `--idle-control`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IdleControlArg {
    Policy,
    Kernel,
}

/// Journal name of the idle control under `--run-dir`.
pub const JOURNAL: &str = "pmqos";

/// Entries of the `--idle-log` at most (one per published DPM idle period and CPU).
pub const LOG_CAP: usize = 100_000;

/// One limit written for a DPM idle period (`--idle-log`, one JSON object per line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PeriodLimit {
    /// CLOCK_MONOTONIC when the limit was written.
    pub t_ns: u64,
    pub cpu: u32,
    /// The idle slots the limit was chosen for: `[from_slot, until_slot)`.
    pub from_slot: u64,
    pub until_slot: u64,
    /// What `pm_qos_resume_latency_us` was set to (`n/a`, `0` or µs).
    pub limit: String,
}

/// The run's idle control: `Some` while the managed CPUs' limits are set (restored on drop).
pub struct IdleControl {
    qos: Option<PmQosIdle>,
    /// Per managed CPU (plan order): the CPU and the idle states a DPM period's limit is chosen
    /// from.
    states: Vec<(u32, Vec<CpuidleState>)>,
    /// Where `states` came from: `cpuidle` or `model NAME`.
    source: String,
    slot_us: u64,
    log: Vec<PeriodLimit>,
    errors: u64,
}

impl IdleControl {
    /// None: idle states are the kernel's.
    pub fn kernel() -> Self {
        IdleControl {
            qos: None,
            states: Vec::new(),
            source: String::new(),
            slot_us: 0,
            log: Vec::new(),
            errors: 0,
        }
    }

    /// Takes the managed CPUs' idle states as `mode` says for planner mode (see the module doc):
    /// polling from now on; the states of DPM periods from cpuidle, else from `model`.
    pub fn take(
        mode: IdleControlArg,
        root: Root,
        run_dir: &Path,
        managed: &[u32],
        model: &PowerModel,
        slot_us: u64,
    ) -> Result<Self> {
        if mode == IdleControlArg::Kernel {
            return Ok(Self::kernel());
        }
        let journal = Journal::persistent(root.clone(), run_dir, JOURNAL)?;
        let mut qos = match PmQosIdle::with_journal(journal, managed) {
            Ok(q) => q,
            Err(e) => {
                eprintln!(
                    "scx_tt: warning: --idle-control policy: {e}; idle states are left to the \
                     kernel (--idle-control kernel)"
                );
                return Ok(Self::kernel());
            }
        };
        for &cpu in managed {
            qos.set_limit(cpu, LatencyLimit::Poll)?;
        }
        let mut states = Vec::new();
        let mut from_model = false;
        for &cpu in managed {
            let mut s = read_states(&root, cpu)
                .with_context(|| format!("reading the cpuidle states of CPU {cpu}"))?;
            if s.is_empty() {
                s = model_states(model, cpu);
                from_model = true;
            }
            states.push((cpu, s));
        }
        Ok(IdleControl {
            qos: Some(qos),
            states,
            source: if from_model {
                format!("model {}", model.name)
            } else {
                "cpuidle".into()
            },
            slot_us,
            log: Vec::new(),
            errors: 0,
        })
    }

    /// Whether the managed cores are kept polling (the live estimate's idle rule follows).
    pub fn polling(&self) -> bool {
        self.qos.is_some()
    }

    /// Where the DPM periods' idle states come from (`cpuidle` or `model NAME`; empty under
    /// `kernel`).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// A DPM idle period of managed CPU index `midx` published by the planner: idle from
    /// `from` (at the earliest the slot after `cur`, the slot in progress) to `until`. Sets the
    /// CPU's limit to the deepest state the period pays for (a write only when it changes). A
    /// failed write is counted and warned about once; the run goes on.
    pub fn period(&mut self, midx: usize, from: u64, until: u64, cur: Option<u64>) {
        let Some(qos) = self.qos.as_mut() else {
            return;
        };
        let Some((cpu, states)) = self.states.get(midx) else {
            return;
        };
        let from = from.max(cur.map_or(0, |c| c + 1));
        let idle_us = until.saturating_sub(from).saturating_mul(self.slot_us);
        let limit = limit_for_period(states, idle_us);
        if let Err(e) = qos.set_limit(*cpu, limit) {
            if self.errors == 0 {
                eprintln!("scx_tt: warning: DPM idle limit of CPU {cpu}: {e}");
            }
            self.errors += 1;
            return;
        }
        if self.log.len() < LOG_CAP {
            self.log.push(PeriodLimit {
                t_ns: monotonic_ns(),
                cpu: *cpu,
                from_slot: from,
                until_slot: until,
                limit: limit.sysfs_value(),
            });
        }
    }

    /// Every managed core back to polling (a swap to bss or dvfs).
    pub fn poll_all(&mut self) {
        let Some(qos) = self.qos.as_mut() else {
            return;
        };
        for (cpu, _) in &self.states {
            if let Err(e) = qos.set_limit(*cpu, LatencyLimit::Poll) {
                self.errors += 1;
                eprintln!("scx_tt: warning: polling limit of CPU {cpu}: {e}");
            }
        }
    }

    /// Limits written for DPM periods, and writes that failed.
    pub fn counts(&self) -> (usize, u64) {
        (self.log.len(), self.errors)
    }

    /// Writes the `--idle-log` (one [`PeriodLimit`] per line).
    pub fn write_log(&self, path: &Path) -> Result<()> {
        let f = std::fs::File::create(path)
            .with_context(|| format!("creating the idle log {}", path.display()))?;
        let mut w = std::io::BufWriter::new(f);
        for e in &self.log {
            serde_json::to_writer(&mut w, e)?;
            w.write_all(b"\n")?;
        }
        w.flush()
            .with_context(|| format!("writing the idle log {}", path.display()))
    }

    /// Restores the limits now (also on drop); the number of files that failed.
    pub fn restore(&mut self) -> usize {
        self.qos.take().map_or(0, |mut q| q.restore())
    }
}

/// The power model's idle states of `cpu`'s cluster as cpuidle would list them (µs rounded up:
/// a limit never allows a state whose exit latency exceeds the model's).
fn model_states(model: &PowerModel, cpu: u32) -> Vec<CpuidleState> {
    model
        .cluster_of(cpu)
        .map(|c| {
            c.idle_states
                .iter()
                .enumerate()
                .map(|(i, s)| CpuidleState {
                    index: i as u32,
                    name: s.name.clone(),
                    latency_us: s.exit_latency_us.ceil() as u64,
                    residency_us: s.target_residency_us.ceil() as u64,
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tree with the pm_qos files of CPUs 0-2 (no cpuidle directory: the model's states).
    fn tree(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("scx_tt-idle-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for cpu in 0..3 {
            let p = d.join(format!("root/sys/devices/system/cpu/cpu{cpu}/power"));
            std::fs::create_dir_all(&p).expect("mkdir");
            std::fs::write(p.join("pm_qos_resume_latency_us"), "0\n").expect("write");
        }
        d
    }

    fn qos(d: &Path, cpu: u32) -> String {
        std::fs::read_to_string(d.join(format!(
            "root/sys/devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us"
        )))
        .expect("read")
        .trim()
        .to_string()
    }

    /// Each period gets the deepest state of the model whose target residency it covers (the
    /// expectation written from the model's numbers here, not from `limit_for_period`), a swap
    /// polls again, the log lists each write, restore puts the original back.
    #[test]
    fn a_dpm_period_gets_the_deepest_state_it_pays_for_and_restore_puts_the_original_back() {
        let d = tree("period");
        let model =
            scx_tt::energy::model::from_str(include_str!("../../../models/xeon-gold-5218.json"))
                .expect("the bundled model");
        let slot_us = 1000;
        let mut c = IdleControl::take(
            IdleControlArg::Policy,
            Root::new(d.join("root")),
            &d.join("run"),
            &[1, 2],
            &model,
            slot_us,
        )
        .expect("take");
        assert_eq!(qos(&d, 1), "n/a");
        assert_eq!(qos(&d, 0), "0", "not managed: untouched");
        assert!(c.source().starts_with("model "), "{}", c.source());
        let states = &model.cluster_of(1).expect("cluster").idle_states;
        let want = |idle_us: f64| {
            let mut best: Option<&scx_tt::energy::model::IdleState> = None;
            for s in states {
                if s.target_residency_us <= idle_us {
                    best = Some(s);
                }
            }
            match best {
                Some(s) if s.exit_latency_us > 0.0 => (s.exit_latency_us.ceil() as u64).to_string(),
                _ => "n/a".to_string(),
            }
        };
        // a long period (40 slots of 1 ms) and a short one (1 slot), from the slot after cur
        c.period(0, 10, 50, Some(9));
        assert_eq!(qos(&d, 1), want(40_000.0));
        c.period(1, 20, 21, Some(19));
        assert_eq!(qos(&d, 2), want(1_000.0));
        // a period published late counts from the slot after cur only
        c.period(0, 10, 12, Some(10));
        assert_eq!(qos(&d, 1), want(1_000.0));
        assert_eq!(c.counts(), (3, 0));
        let log = d.join("idle.jsonl");
        c.write_log(&log).expect("log");
        let text = std::fs::read_to_string(&log).expect("read");
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(
            text.contains("\"from_slot\":11,\"until_slot\":12"),
            "{text}"
        );
        c.poll_all();
        assert_eq!((qos(&d, 1), qos(&d, 2)), ("n/a".into(), "n/a".into()));
        assert_eq!(c.restore(), 0);
        assert_eq!((qos(&d, 1), qos(&d, 2)), ("0".into(), "0".into()));
        let _ = std::fs::remove_dir_all(&d);
    }
}

//! The test hook `SCX_TT_TEST_OBS=PATH` (feature `bpf`; VM test `completion`,
//! docs/run-output.md "Test hooks"): the run loop reads the observation ring
//! (src/sched/obs.rs) every slot, as the planner thread does, writes every observation to PATH
//! (JSON lines) and compares each with the ring-buffer record of the same CPU and slot. At the
//! end one stderr line, `scx_tt: test: observations {JSON}`, gives the follower's counts (ready,
//! torn, overwritten, missing) and the comparison (`ObsAudit`). Nothing else reads it.

use anyhow::{Context, Result};
use scx_tt::accounting::SlotSample;
use scx_tt::sched::obs::{AuditReport, FollowCounts, ObsAudit, ObsFollower, ObsReader, SlotObs};
use serde::Serialize;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// The environment variable of the hook.
pub const OBS_TEST_ENV: &str = "SCX_TT_TEST_OBS";

pub struct ObsTest {
    path: PathBuf,
    out: BufWriter<File>,
    managed: Vec<u32>,
    follower: ObsFollower,
    audit: ObsAudit,
}

/// One line of PATH.
#[derive(Serialize)]
struct Line<'a> {
    cpu: u32,
    #[serde(flatten)]
    obs: &'a SlotObs,
}

/// The final stderr line's object.
#[derive(Serialize)]
struct Report<'a> {
    reads: FollowCounts,
    audit: &'a AuditReport,
}

impl ObsTest {
    /// The hook when `SCX_TT_TEST_OBS` names a file: following the ring of `managed` from slot 0.
    pub fn from_env(managed: &[u32]) -> Result<Option<Self>> {
        let Some(path) = std::env::var_os(OBS_TEST_ENV).map(PathBuf::from) else {
            return Ok(None);
        };
        eprintln!(
            "scx_tt: test hook: reading the observation ring every slot into {}",
            path.display()
        );
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Some(ObsTest {
            path,
            out: BufWriter::new(file),
            managed: managed.to_vec(),
            follower: ObsFollower::new(managed.len(), 0),
            audit: ObsAudit::default(),
        }))
    }

    /// Reads every closed slot up to `cur - 1` from `reader`.
    pub fn poll(&mut self, reader: &ObsReader, cur: u64) -> Result<()> {
        let mut got = Vec::new();
        self.follower
            .poll(cur, |m, s| reader.read_index(m, s), |m, o| got.push((m, o)));
        for (m, o) in got {
            let cpu = self.managed[m];
            self.audit.observation(cpu, o);
            serde_json::to_writer(&mut self.out, &Line { cpu, obs: &o })
                .and_then(|()| self.out.write_all(b"\n").map_err(serde_json::Error::io))
                .with_context(|| format!("writing {}", self.path.display()))?;
        }
        Ok(())
    }

    /// A ring-buffer record, for the comparison.
    pub fn record(&mut self, s: &SlotSample) {
        self.audit.record(
            s.cpu,
            s.slot,
            s.owner.map(|t| t as u32),
            s.owner_ns,
            s.late_ns,
        );
    }

    /// Flushes PATH and prints the counts (stderr).
    pub fn finish(&mut self) -> Result<()> {
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))?;
        let audit = self.audit.report();
        let line = serde_json::to_string(&Report {
            reads: self.follower.counts,
            audit: &audit,
        })
        .context("encoding the observation report")?;
        eprintln!("scx_tt: test: observations {line}");
        Ok(())
    }
}

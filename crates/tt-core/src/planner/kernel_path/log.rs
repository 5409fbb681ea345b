//! The planner log of a kernel run (`scx_tt --planner-log`): every call on the planner, in
//! order, with a header saying how to rebuild the planner (the input of a replay).

use super::{FirmJob, KernelPlanner, PeriodicTask, SlotObs};
use serde::{Deserialize, Serialize};

/// One call on the planner, in order: the input of a replay (`scx_tt simulate --replay`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum LogEvent {
    Advance {
        cur: Option<u64>,
        last: u64,
    },
    Observe {
        cpu: usize,
        slot: u64,
        cur: Option<u64>,
        obs: SlotObs,
    },
    AdmitFirm {
        job: FirmJob,
        cur: u64,
    },
    AdmitPeriodic {
        task: PeriodicTask,
    },
    /// A task the plan does not name (`ctl admit`): `task.task` is its BPF task index,
    /// `name` its name (a replay compares the kernel's trace by name).
    AdmitTask {
        task: PeriodicTask,
        #[serde(default)]
        name: String,
    },
    /// An aperiodic task the plan does not name (`ctl admit --wcet-slots C --deadline-slots
    /// D`): `job.task` is its BPF task index.
    AdmitAperiodic {
        job: FirmJob,
        cur: u64,
        name: String,
    },
    Remove {
        task: usize,
    },
    SetPolicy {
        policy: String,
    },
}

/// Events kept at most in a run's planner log (about 100 bytes each in memory).
pub const LOG_CAP: usize = 4_000_000;

/// First line of a planner log file.
pub const LOG_FORMAT: &str = "scx_tt planner log v1";

/// The first line of a planner log (`scx_tt --planner-log`, docs/planner.md "Conformance"):
/// how to build the planner the events were made on (with the plan).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogHeader {
    pub format: String,
    /// The policy when logging started.
    pub policy: String,
    pub lead: u64,
    pub frame_slots: u64,
    pub slot_ns: u64,
    pub freqs_ppm: Vec<u32>,
    pub closed_loop: bool,
    /// The log stopped at [`LOG_CAP`] events.
    pub truncated: bool,
}

impl KernelPlanner {
    /// Records every call from now on for a replay (at most [`LOG_CAP`] events); the header
    /// describes the planner as it is now.
    pub fn enable_log(&mut self) {
        self.log = Some(Vec::new());
        self.log_header = Some(LogHeader {
            format: LOG_FORMAT.into(),
            policy: self.policy().name().into(),
            lead: self.lead,
            frame_slots: self.frame,
            slot_ns: self.slot_ns,
            freqs_ppm: self.planner.config().freqs.ppm().to_vec(),
            closed_loop: self.loop_closed(),
            truncated: false,
        });
    }

    /// The header of the log and its events (empty when logging was never enabled).
    pub fn take_full_log(&mut self) -> Option<(LogHeader, Vec<LogEvent>)> {
        let mut h = self.log_header.clone()?;
        let (events, truncated) = self.take_log();
        h.truncated = truncated;
        Some((h, events))
    }

    /// The recorded calls, and whether the cap cut them short.
    pub fn take_log(&mut self) -> (Vec<LogEvent>, bool) {
        (
            self.log.as_mut().map(std::mem::take).unwrap_or_default(),
            self.log_truncated,
        )
    }

    pub(super) fn record(&mut self, e: impl FnOnce() -> LogEvent) {
        if let Some(log) = &mut self.log {
            if log.len() < LOG_CAP {
                log.push(e());
            } else {
                self.log_truncated = true;
            }
        }
    }
}

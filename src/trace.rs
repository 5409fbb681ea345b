//! The per-slot trace record shared by `scx_tt simulate --trace` and `scx_tt --trace` (the kernel
//! path), one JSON object per line, so a simulated and an enforced run can be compared slot by
//! slot. Documented in docs/trace-format.md.

use serde::{Deserialize, Serialize};

/// What a CPU did (or was told to do) in one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotKind {
    /// A time-triggered job of the plan (or an admitted periodic task).
    Tt,
    /// An admitted firm aperiodic job.
    Aperiodic,
    /// Best-effort or soft aperiodic work in slack.
    Be,
    /// Nothing runs.
    Idle,
}

/// One (CPU, slot) record. Fields after `idle_until` are measured by the kernel path only and are
/// omitted from simulated traces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlotRecord {
    /// Absolute slot number since the run started (slot 0 starts frame 0).
    pub slot: u64,
    pub cpu: u32,
    pub kind: SlotKind,
    /// Name of the task that owns the slot (`None` for idle or anonymous slack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Normalised frequency in (0, 1] the slot runs at (1.0 without DVFS).
    pub freq: f64,
    /// During a DPM idle period: the first slot the CPU runs again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_until: Option<u64>,
    /// ns the planned task ran inside the slot (kernel path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_ns: Option<u64>,
    /// ns anything else ran inside the slot (kernel path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stolen_ns: Option<u64>,
    /// Slot tick lateness: timer callback time minus the slot boundary, ns (kernel path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_ns: Option<i64>,
}

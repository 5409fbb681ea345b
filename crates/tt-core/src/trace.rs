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

impl SlotKind {
    /// `tt`, `aperiodic`, `be` or `idle`: the name in the trace (and in the report's and the
    /// Perfetto export's categories).
    pub fn name(self) -> &'static str {
        match self {
            SlotKind::Tt => "tt",
            SlotKind::Aperiodic => "aperiodic",
            SlotKind::Be => "be",
            SlotKind::Idle => "idle",
        }
    }
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

/// The first line of a trace file: what the records that follow are and where their slot grid
/// lies in time (docs/trace-format.md). Records carry absolute slot numbers; with `t0_ns` a
/// reader aligns them with another clock's events (the VM tests align the kernel's own
/// `sched_switch` trace, recorded with ftrace's `mono` clock, to it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceHeader {
    /// Always [`TRACE_FORMAT`]: tells the header from a record.
    pub format: String,
    /// `kernel` (`scx_tt --trace`) or `simulate` (`scx_tt simulate --trace`).
    pub source: String,
    pub slot_ns: u64,
    /// Kernel path: CLOCK_MONOTONIC time of the start of slot 0 (slot k starts at
    /// `t0_ns + k * slot_ns` on every managed CPU, across restarts). Absent for `simulate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t0_ns: Option<u64>,
    /// The managed CPUs the records cover, in the plan's order.
    pub cpus: Vec<u32>,
}

/// [`TraceHeader::format`] of this version of the format.
pub const TRACE_FORMAT: &str = "scx_tt slot trace v1";

impl TraceHeader {
    pub fn kernel(slot_ns: u64, t0_ns: u64, cpus: &[u32]) -> Self {
        TraceHeader {
            format: TRACE_FORMAT.into(),
            source: "kernel".into(),
            slot_ns,
            t0_ns: Some(t0_ns),
            cpus: cpus.to_vec(),
        }
    }

    pub fn simulate(slot_ns: u64, cpus: &[u32]) -> Self {
        TraceHeader {
            format: TRACE_FORMAT.into(),
            source: "simulate".into(),
            slot_ns,
            t0_ns: None,
            cpus: cpus.to_vec(),
        }
    }
}

/// Reads a trace file's text: the header (when the first line is one) and the records.
/// Errors name the line.
pub fn read_trace(text: &str) -> Result<(Option<TraceHeader>, Vec<SlotRecord>), String> {
    let mut header = None;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if i == 0 {
            if let Ok(h) = serde_json::from_str::<TraceHeader>(line) {
                if h.format != TRACE_FORMAT {
                    return Err(format!(
                        "line 1: trace format {:?}, this reader knows {TRACE_FORMAT:?}",
                        h.format
                    ));
                }
                header = Some(h);
                continue;
            }
        }
        records.push(serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    Ok((header, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_then_records_round_trip() {
        let h = TraceHeader::kernel(10_000_000, 123_456_789, &[1, 2]);
        let r = SlotRecord {
            slot: 3,
            cpu: 1,
            kind: SlotKind::Tt,
            task: Some("a".into()),
            freq: 1.0,
            idle_until: None,
            ran_ns: Some(5),
            stolen_ns: Some(0),
            late_ns: Some(-1),
        };
        let text = format!(
            "{}\n{}\n",
            serde_json::to_string(&h).unwrap(),
            serde_json::to_string(&r).unwrap()
        );
        assert!(text.starts_with(r#"{"format":"scx_tt slot trace v1","source":"kernel","slot_ns":10000000,"t0_ns":123456789,"cpus":[1,2]}"#));
        let (hh, rr) = read_trace(&text).unwrap();
        assert_eq!(hh.as_ref(), Some(&h));
        assert_eq!(rr, vec![r.clone()]);
        // without a header (older files) the records still read
        let (none, rr) = read_trace(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!((none, rr.len()), (None, 1));
        // another format version is refused by name
        let e = read_trace(
            r#"{"format":"scx_tt slot trace v9","source":"kernel","slot_ns":1,"cpus":[]}"#,
        )
        .unwrap_err();
        assert!(e.contains("v9"), "{e}");
        // a bad record names its line
        let e = read_trace(&format!(
            "{}\n{{\"slot\":1}}\n",
            serde_json::to_string(&h).unwrap()
        ))
        .unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
    }
}

//! A slot trace (docs/trace-format.md) as a Perfetto trace (`scx_tt trace export --perfetto`,
//! docs/perfetto.md): Perfetto's protobuf format (`perfetto.protos.Trace`, a file of
//! `TracePacket`s), track events with plain (not interned) names on one packet sequence.
//!
//! What the file holds:
//! - per managed CPU, a slice track `CPU n`: one slice per run of consecutive slots with the same
//!   owner and kind (name: the task, or the kind when the slot has no task; category: `tt`,
//!   `aperiodic`, `be` or `idle`), and inside it a nested `stolen` slice (category `stolen`) for
//!   every slot whose record has `stolen_ns > 0`. The trace records how much time was stolen in
//!   a slot, not when: the nested slice starts at the slot's start and lasts `stolen_ns` (at most
//!   the slot);
//! - per managed CPU, a counter track `CPU n freq` (the slot's normalised frequency, a sample
//!   when it changes) and, when the trace has tick lateness, `CPU n late_ns` (a sample per slot
//!   at its start);
//! - a track `scx_tt events` with instant events (categories `admission`, `removal`, `policy`,
//!   `table`) from the optional inputs: the run's summary JSON (table switches), its planner log
//!   (admissions, removals, policy switches) or a `simulate --json` report (admissions and
//!   removals).
//!
//! Times: slot k starts at `t0_ns + k · slot_ns` (the header's; `t0_ns` 0 for `simulate`). They
//! are written on the trace's default clock, so a kernel trace shows CLOCK_MONOTONIC times.
//!
//! Everything here is pure (text in, bytes out); errors name the line (1-based) and the field.

use crate::trace::{SlotKind, SlotRecord, TraceHeader};
use prost::Message;
use std::fmt;

mod input;
mod markers;

/// The messages of Perfetto's `protos/perfetto/trace/perfetto_trace.proto` this export writes,
/// the fields it uses only, with the official field numbers. Enums are written as `int32` (the
/// same varint on the wire); a `oneof` member as a plain optional field (the same encoding when
/// one member is set).
pub mod proto;
mod tracks;

pub use input::read_slot_trace;
pub use markers::{planner_log_markers, sim_report_markers, summary_markers};
use tracks::Tracks;

/// What is wrong with an input, and where: `line N: FIELD: what` (line 1-based; the field as a
/// path inside the line's JSON object, e.g. `freq` or `task.period`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub line: Option<usize>,
    pub field: Option<String>,
    pub msg: String,
}

impl InputError {
    fn at(line: usize, field: &str, msg: impl Into<String>) -> Self {
        InputError {
            line: Some(line),
            field: Some(field.to_string()),
            msg: msg.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = self.line {
            write!(f, "line {l}: ")?;
        }
        if let Some(p) = &self.field {
            write!(f, "{p}: ")?;
        }
        f.write_str(&self.msg)
    }
}

impl std::error::Error for InputError {}

/// A slot trace as read for the export: its header and its records with their line numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotTrace {
    pub header: TraceHeader,
    pub records: Vec<(usize, SlotRecord)>,
}

impl SlotTrace {
    /// The start of `slot`, ns (`t0_ns + slot · slot_ns`), `None` past u64.
    pub fn slot_start(&self, slot: u64) -> Option<u64> {
        slot.checked_mul(self.header.slot_ns)?
            .checked_add(self.header.t0_ns.unwrap_or(0))
    }
}

/// One slice of a CPU track: slots `[first_slot, end_slot)` with the same owner and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRun {
    pub cpu: u32,
    pub first_slot: u64,
    pub end_slot: u64,
    pub kind: SlotKind,
    pub task: Option<String>,
    /// (slot, stolen ns) of the slots with `stolen_ns > 0`.
    pub stolen: Vec<(u64, u64)>,
}

impl OwnerRun {
    /// The slice's name: the task, or the kind for a slot without one.
    pub fn name(&self) -> &str {
        self.task.as_deref().unwrap_or(self.kind.name())
    }
}

/// The owner runs of each CPU, CPUs in the order of `cpus`: consecutive slots (no slot
/// missing between them) of the same kind and task make one run.
pub fn owner_runs(cpus: &[u32], records: &[SlotRecord]) -> Vec<OwnerRun> {
    let mut out = Vec::new();
    for &cpu in cpus {
        let mut cur: Option<OwnerRun> = None;
        for r in records.iter().filter(|r| r.cpu == cpu) {
            let extends = cur
                .as_ref()
                .is_some_and(|c| c.end_slot == r.slot && c.kind == r.kind && c.task == r.task);
            if !extends {
                out.extend(cur.take());
                cur = Some(OwnerRun {
                    cpu,
                    first_slot: r.slot,
                    end_slot: r.slot,
                    kind: r.kind,
                    task: r.task.clone(),
                    stolen: Vec::new(),
                });
            }
            let c = cur.as_mut().expect("set above");
            c.end_slot = r.slot + 1;
            if let Some(s) = r.stolen_ns.filter(|&s| s > 0) {
                c.stolen.push((r.slot, s));
            }
        }
        out.extend(cur);
    }
    out
}

/// What an instant event marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    Admission,
    Removal,
    Policy,
    Table,
}

impl MarkerKind {
    /// The instant's category.
    pub fn category(self) -> &'static str {
        match self {
            MarkerKind::Admission => "admission",
            MarkerKind::Removal => "removal",
            MarkerKind::Policy => "policy",
            MarkerKind::Table => "table",
        }
    }
}

/// An instant event on the `scx_tt events` track, at the start of `slot`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    pub slot: u64,
    pub kind: MarkerKind,
    pub name: String,
    /// Which input it came from: `summary`, `planner log` or `simulate report`.
    pub source: &'static str,
}

/// Track uuids: the events track, then four per managed CPU (index i): slices, freq, late_ns.
pub const EVENTS_TRACK: u64 = 1;

pub fn cpu_track(i: usize) -> u64 {
    16 + 4 * i as u64
}

pub fn freq_track(i: usize) -> u64 {
    cpu_track(i) + 1
}

pub fn late_track(i: usize) -> u64 {
    cpu_track(i) + 2
}

/// The packet sequence every packet is written on.
pub const SEQUENCE_ID: u32 = 1;

/// The Perfetto trace of a slot trace and its markers (see the module doc for the layout).
pub fn build(trace: &SlotTrace, markers: &[Marker]) -> proto::Trace {
    let h = &trace.header;
    let records: Vec<SlotRecord> = trace.records.iter().map(|(_, r)| r.clone()).collect();
    let mut tracks = Tracks::new(trace);
    if !markers.is_empty() {
        tracks.markers(markers);
    }
    let runs = owner_runs(&h.cpus, &records);
    for (i, &cpu) in h.cpus.iter().enumerate() {
        tracks.cpu_slices(i, cpu, &runs);
        tracks.cpu_counters(i, cpu, &records);
    }
    tracks.into_trace()
}

/// The file's bytes.
pub fn encode(trace: &proto::Trace) -> Vec<u8> {
    trace.encode_to_vec()
}

#[cfg(test)]
mod tests;

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

use crate::planner::kernel_path::{
    FirmJob, LogEvent, LogHeader, PeriodicTask, SlotObs, LOG_FORMAT,
};
use crate::trace::{SlotKind, SlotRecord, TraceHeader, TRACE_FORMAT};
use prost::Message;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// The messages of Perfetto's `protos/perfetto/trace/perfetto_trace.proto` this export writes,
/// the fields it uses only, with the official field numbers. Enums are written as `int32` (the
/// same varint on the wire); a `oneof` member as a plain optional field (the same encoding when
/// one member is set).
pub mod proto {
    /// `perfetto.protos.Trace`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Trace {
        #[prost(message, repeated, tag = "1")]
        pub packet: Vec<TracePacket>,
    }

    /// `perfetto.protos.TracePacket`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TracePacket {
        #[prost(uint64, optional, tag = "8")]
        pub timestamp: Option<u64>,
        /// `oneof optional_trusted_packet_sequence_id`.
        #[prost(uint32, optional, tag = "10")]
        pub trusted_packet_sequence_id: Option<u32>,
        #[prost(message, optional, tag = "11")]
        pub track_event: Option<TrackEvent>,
        #[prost(uint32, optional, tag = "13")]
        pub sequence_flags: Option<u32>,
        #[prost(message, optional, tag = "60")]
        pub track_descriptor: Option<TrackDescriptor>,
    }

    /// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;

    /// `perfetto.protos.TrackDescriptor`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackDescriptor {
        #[prost(uint64, optional, tag = "1")]
        pub uuid: Option<u64>,
        /// `oneof static_or_dynamic_name`.
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
        #[prost(message, optional, tag = "8")]
        pub counter: Option<CounterDescriptor>,
        #[prost(string, optional, tag = "14")]
        pub description: Option<String>,
    }

    /// `perfetto.protos.CounterDescriptor`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct CounterDescriptor {
        /// `CounterDescriptor.Unit`.
        #[prost(int32, optional, tag = "3")]
        pub unit: Option<i32>,
        #[prost(string, optional, tag = "6")]
        pub unit_name: Option<String>,
    }

    /// `CounterDescriptor.Unit.UNIT_TIME_NS`.
    pub const UNIT_TIME_NS: i32 = 1;

    /// `perfetto.protos.TrackEvent`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackEvent {
        #[prost(message, repeated, tag = "4")]
        pub debug_annotations: Vec<DebugAnnotation>,
        /// `TrackEvent.Type`.
        #[prost(int32, optional, tag = "9")]
        pub r#type: Option<i32>,
        #[prost(uint64, optional, tag = "11")]
        pub track_uuid: Option<u64>,
        #[prost(string, repeated, tag = "22")]
        pub categories: Vec<String>,
        /// `oneof name_field`.
        #[prost(string, optional, tag = "23")]
        pub name: Option<String>,
        /// `oneof counter_value_field`.
        #[prost(int64, optional, tag = "30")]
        pub counter_value: Option<i64>,
        /// `oneof counter_value_field`.
        #[prost(double, optional, tag = "44")]
        pub double_counter_value: Option<f64>,
    }

    /// `TrackEvent.Type` values.
    pub const TYPE_SLICE_BEGIN: i32 = 1;
    pub const TYPE_SLICE_END: i32 = 2;
    pub const TYPE_INSTANT: i32 = 3;
    pub const TYPE_COUNTER: i32 = 4;

    /// `perfetto.protos.DebugAnnotation` (a slice's or instant's arguments in the UI).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DebugAnnotation {
        /// `oneof name_field`.
        #[prost(string, optional, tag = "10")]
        pub name: Option<String>,
        /// `oneof value`.
        #[prost(uint64, optional, tag = "3")]
        pub uint_value: Option<u64>,
        /// `oneof value`.
        #[prost(string, optional, tag = "6")]
        pub string_value: Option<String>,
    }
}

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

/// Parses one JSON line; an error names the line and the field path.
fn parse_line<T: DeserializeOwned>(line_no: usize, text: &str) -> Result<T, InputError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // serde_json appends " at line 1 column C" (the column inside this line): keep the
        // column, drop its line.
        let msg = inner.to_string().replace(" at line 1 column", " at column");
        InputError {
            line: Some(line_no),
            field: (path != "." && path != "?").then_some(path),
            msg,
        }
    })
}

/// Non-blank lines with their 1-based numbers.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty())
}

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

/// Reads and checks a slot trace: a header (required: it gives `slot_ns` and `t0_ns`), records
/// of the header's CPUs only, each CPU's slots strictly increasing, frequencies finite and
/// positive, every slot's end representable in ns.
pub fn read_slot_trace(text: &str) -> Result<SlotTrace, InputError> {
    let mut it = lines(text);
    let Some((first_no, first)) = it.next() else {
        return Err(InputError {
            line: None,
            field: None,
            msg: "empty file: no trace header".into(),
        });
    };
    let is_header = serde_json::from_str::<serde_json::Value>(first)
        .ok()
        .is_some_and(|v| v.get("format").is_some());
    if !is_header {
        return Err(InputError::at(
            first_no,
            "format",
            format!(
                "no trace header (a {TRACE_FORMAT:?} line): the export needs its slot_ns and \
                 t0_ns (docs/trace-format.md)"
            ),
        ));
    }
    let header: TraceHeader = parse_line(first_no, first)?;
    if header.format != TRACE_FORMAT {
        return Err(InputError::at(
            first_no,
            "format",
            format!("{:?}: this reader knows {TRACE_FORMAT:?}", header.format),
        ));
    }
    if header.slot_ns == 0 {
        return Err(InputError::at(first_no, "slot_ns", "must be > 0"));
    }
    for (i, c) in header.cpus.iter().enumerate() {
        if header.cpus[..i].contains(c) {
            return Err(InputError::at(
                first_no,
                &format!("cpus[{i}]"),
                format!("CPU {c} is listed twice"),
            ));
        }
    }
    let mut trace = SlotTrace {
        header,
        records: Vec::new(),
    };
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    for (no, line) in it {
        let r: SlotRecord = parse_line(no, line)?;
        if !trace.header.cpus.contains(&r.cpu) {
            return Err(InputError::at(
                no,
                "cpu",
                format!(
                    "{} is not a managed CPU of the header {:?}",
                    r.cpu, trace.header.cpus
                ),
            ));
        }
        if let Some(&prev) = last.get(&r.cpu) {
            if r.slot <= prev {
                return Err(InputError::at(
                    no,
                    "slot",
                    format!(
                        "{} after slot {prev} on CPU {}: a CPU's records must be in increasing \
                         slot order",
                        r.slot, r.cpu
                    ),
                ));
            }
        }
        if !(r.freq.is_finite() && r.freq > 0.0) {
            return Err(InputError::at(
                no,
                "freq",
                format!("{}: must be a finite number > 0", r.freq),
            ));
        }
        if r.slot
            .checked_add(1)
            .and_then(|end| trace.slot_start(end))
            .is_none()
        {
            return Err(InputError::at(
                no,
                "slot",
                format!("{}: its end in ns does not fit 64 bits", r.slot),
            ));
        }
        last.insert(r.cpu, r.slot);
        trace.records.push((no, r));
    }
    Ok(trace)
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

fn check_marker_slot(
    trace: &SlotTrace,
    line: usize,
    field: &str,
    slot: u64,
) -> Result<(), InputError> {
    match trace.slot_start(slot) {
        Some(_) => Ok(()),
        None => Err(InputError::at(
            line,
            field,
            format!("slot {slot}: its time in ns does not fit 64 bits"),
        )),
    }
}

/// The line (1-based) a serde_json error points at in a whole-file document.
fn json_line(e: &serde_json::Error) -> Option<usize> {
    (e.line() > 0).then_some(e.line())
}

/// Parses a whole-file JSON document; an error names the line and the field path.
fn parse_document<T: DeserializeOwned>(text: &str) -> Result<T, InputError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let line = json_line(&inner);
        let mut msg = inner.to_string();
        if let Some(i) = msg.rfind(" at line ") {
            msg.truncate(i);
        }
        InputError {
            line,
            field: (path != "." && path != "?").then_some(path),
            msg,
        }
    })
}

/// The 1-based line of the first occurrence of `needle` at or after line `from`, for naming
/// the line of a value that parsed but is wrong.
fn line_of(text: &str, needle: &str, from: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| l.contains(needle))
        .map_or(from.max(1), |(i, _)| i + 1)
}

#[derive(Deserialize)]
struct SummaryIn {
    #[serde(default)]
    t0_ns: Option<u64>,
    #[serde(default)]
    slot_us: Option<u64>,
    table_switches: Vec<TableSwitchIn>,
}

#[derive(Deserialize)]
struct TableSwitchIn {
    slot: u64,
    table: String,
}

/// Table switches from a run's `--summary-json` file (`table_switches`, docs/run-output.md).
/// Its `t0_ns` and `slot_us` must agree with the trace header's.
pub fn summary_markers(text: &str, trace: &SlotTrace) -> Result<Vec<Marker>, InputError> {
    let s: SummaryIn = parse_document(text)?;
    if let (Some(a), Some(b)) = (s.t0_ns, trace.header.t0_ns) {
        if a != b {
            return Err(InputError::at(
                line_of(text, "\"t0_ns\"", 1),
                "t0_ns",
                format!("{a} differs from the trace header's t0_ns {b}: another run's summary?"),
            ));
        }
    }
    if let Some(us) = s.slot_us {
        if us.checked_mul(1000) != Some(trace.header.slot_ns) {
            return Err(InputError::at(
                line_of(text, "\"slot_us\"", 1),
                "slot_us",
                format!(
                    "{us} µs differs from the trace header's slot_ns {}",
                    trace.header.slot_ns
                ),
            ));
        }
    }
    let start = line_of(text, "\"table_switches\"", 1);
    let mut out = Vec::new();
    for (i, sw) in s.table_switches.into_iter().enumerate() {
        check_marker_slot(trace, start, &format!("table_switches[{i}].slot"), sw.slot)?;
        out.push(Marker {
            slot: sw.slot,
            kind: MarkerKind::Table,
            name: format!("switch_table {}", sw.table),
            source: "summary",
        });
    }
    Ok(out)
}

/// Admissions, removals and policy switches from a run's `--planner-log` file (docs/planner.md,
/// "Conformance"). The log records each call made on the planner (not its answer) with the kernel
/// slot in progress: `admit_firm`/`admit_aperiodic` carry it (`cur`), the others happen at the
/// slot of the latest `advance` (slot 0 before any). Task numbers are the plan's task indices.
pub fn planner_log_markers(text: &str, trace: &SlotTrace) -> Result<Vec<Marker>, InputError> {
    let mut it = lines(text);
    let Some((first_no, first)) = it.next() else {
        return Err(InputError {
            line: None,
            field: None,
            msg: "empty planner log".into(),
        });
    };
    let header: LogHeader = parse_line(first_no, first)?;
    if header.format != LOG_FORMAT {
        return Err(InputError::at(
            first_no,
            "format",
            format!("{:?}: expected {LOG_FORMAT:?}", header.format),
        ));
    }
    if header.slot_ns != trace.header.slot_ns {
        return Err(InputError::at(
            first_no,
            "slot_ns",
            format!(
                "{} differs from the trace header's slot_ns {}",
                header.slot_ns, trace.header.slot_ns
            ),
        ));
    }
    let mut now = 0u64;
    let mut out = Vec::new();
    for (no, line) in it {
        let e: LogEvent = parse_line(no, line).map_err(|mut e| {
            if e.field.is_none() {
                e.field = serde_json::from_str(line)
                    .ok()
                    .and_then(|v| log_event_field(&v));
            }
            e
        })?;
        let (slot, kind, name) = match e {
            LogEvent::Advance { cur, .. } => {
                now = cur.unwrap_or(0);
                continue;
            }
            LogEvent::Observe { .. } => continue,
            LogEvent::AdmitFirm { job, cur } => (
                cur,
                MarkerKind::Admission,
                format!(
                    "admit_firm task {} ({} slots within {})",
                    job.task, job.wcet, job.deadline_slots
                ),
            ),
            LogEvent::AdmitPeriodic { task } => (
                now,
                MarkerKind::Admission,
                format!(
                    "admit_periodic task {} ({} slots every {})",
                    task.task, task.wcet, task.period
                ),
            ),
            LogEvent::AdmitTask { task, name } => (
                now,
                MarkerKind::Admission,
                format!("admit {name} ({} slots every {})", task.wcet, task.period),
            ),
            LogEvent::AdmitAperiodic { job, cur, name } => (
                cur,
                MarkerKind::Admission,
                format!(
                    "admit {name} ({} slots within {})",
                    job.wcet, job.deadline_slots
                ),
            ),
            LogEvent::Remove { task } => (now, MarkerKind::Removal, format!("remove task {task}")),
            LogEvent::SetPolicy { policy } => {
                (now, MarkerKind::Policy, format!("set_policy {policy}"))
            }
        };
        check_marker_slot(trace, no, "cur", slot)?;
        out.push(Marker {
            slot,
            kind,
            name,
            source: "planner log",
        });
    }
    Ok(out)
}

/// The path of the value serde refused in a planner log line. [`LogEvent`] is tagged by `op`, and
/// serde reads a tagged enum through a buffer that loses the path: each field of the line's
/// variant is read again on its own (types as in [`LogEvent`]).
fn log_event_field(v: &serde_json::Value) -> Option<String> {
    fn probe<T: DeserializeOwned>(v: &serde_json::Value) -> Result<(), String> {
        serde_path_to_error::deserialize::<_, T>(v)
            .map(drop)
            .map_err(|e| e.path().to_string())
    }
    let obj = v.as_object()?;
    let op = obj.get("op")?.as_str()?;
    for (k, val) in obj {
        let r = match (op, k.as_str()) {
            ("advance" | "observe", "cur") => probe::<Option<u64>>(val),
            ("admit_firm" | "admit_aperiodic", "cur")
            | ("advance", "last")
            | ("observe", "slot") => probe::<u64>(val),
            ("observe", "cpu") | ("remove", "task") => probe::<usize>(val),
            ("observe", "obs") => probe::<SlotObs>(val),
            ("admit_firm" | "admit_aperiodic", "job") => probe::<FirmJob>(val),
            ("admit_periodic" | "admit_task", "task") => probe::<PeriodicTask>(val),
            ("admit_task" | "admit_aperiodic", "name") | ("set_policy", "policy") => {
                probe::<String>(val)
            }
            _ => continue,
        };
        if let Err(path) = r {
            return Some(match path.as_str() {
                "." | "?" | "" => k.clone(),
                p => format!("{k}.{p}"),
            });
        }
    }
    None
}

#[derive(Deserialize)]
struct SimReportIn {
    admissions: Vec<SimAdmissionIn>,
}

#[derive(Deserialize)]
struct SimAdmissionIn {
    at_slot: u64,
    name: String,
    kind: String,
    accepted: bool,
}

/// Admissions and removals from a `scx_tt simulate --json` report (`admissions`,
/// docs/simulate.md "Report"), with their answers.
pub fn sim_report_markers(text: &str, trace: &SlotTrace) -> Result<Vec<Marker>, InputError> {
    let r: SimReportIn = parse_document(text)?;
    let start = line_of(text, "\"admissions\"", 1);
    let mut out = Vec::new();
    for (i, a) in r.admissions.into_iter().enumerate() {
        check_marker_slot(trace, start, &format!("admissions[{i}].at_slot"), a.at_slot)?;
        let (kind, verb) = match a.kind.as_str() {
            "remove" => (MarkerKind::Removal, "remove".to_string()),
            k => (MarkerKind::Admission, format!("admit {k}")),
        };
        let answer = if a.accepted { "accepted" } else { "rejected" };
        out.push(Marker {
            slot: a.at_slot,
            kind,
            name: format!("{verb} {}: {answer}", a.name),
            source: "simulate report",
        });
    }
    Ok(out)
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

fn annotation_u(name: &str, v: u64) -> proto::DebugAnnotation {
    proto::DebugAnnotation {
        name: Some(name.into()),
        uint_value: Some(v),
        string_value: None,
    }
}

fn annotation_s(name: &str, v: &str) -> proto::DebugAnnotation {
    proto::DebugAnnotation {
        name: Some(name.into()),
        uint_value: None,
        string_value: Some(v.into()),
    }
}

fn descriptor(uuid: u64, name: String, desc: &str) -> proto::TrackDescriptor {
    proto::TrackDescriptor {
        uuid: Some(uuid),
        name: Some(name),
        counter: None,
        description: Some(desc.into()),
    }
}

fn event(track: u64, ty: i32) -> proto::TrackEvent {
    proto::TrackEvent {
        r#type: Some(ty),
        track_uuid: Some(track),
        ..Default::default()
    }
}

/// The Perfetto trace of a slot trace and its markers (see the module doc for the layout).
pub fn build(trace: &SlotTrace, markers: &[Marker]) -> proto::Trace {
    let h = &trace.header;
    let ts = |slot: u64| trace.slot_start(slot).expect("checked by read_slot_trace");
    let records: Vec<SlotRecord> = trace.records.iter().map(|(_, r)| r.clone()).collect();

    let mut descriptors = Vec::new();
    // (timestamp, event): stable-sorted by time, so each track keeps the order it was made in
    // (a slice's end before the next one's begin at the same time, children inside parents).
    let mut events: Vec<(u64, proto::TrackEvent)> = Vec::new();

    if !markers.is_empty() {
        descriptors.push(descriptor(
            EVENTS_TRACK,
            "scx_tt events".into(),
            "admissions, removals, policy and table switches (at the start of their slot)",
        ));
        for m in markers {
            let mut e = event(EVENTS_TRACK, proto::TYPE_INSTANT);
            e.name = Some(m.name.clone());
            e.categories = vec![m.kind.category().into()];
            e.debug_annotations = vec![
                annotation_u("slot", m.slot),
                annotation_s("source", m.source),
            ];
            events.push((ts(m.slot), e));
        }
    }

    let runs = owner_runs(&h.cpus, &records);
    for (i, &cpu) in h.cpus.iter().enumerate() {
        descriptors.push(descriptor(
            cpu_track(i),
            format!("CPU {cpu}"),
            "slot owners: one slice per run of slots with the same owner and kind; nested \
             'stolen' slices: time other tasks ran in a slot (drawn from the slot's start)",
        ));
        for run in runs.iter().filter(|r| r.cpu == cpu) {
            let mut b = event(cpu_track(i), proto::TYPE_SLICE_BEGIN);
            b.name = Some(run.name().into());
            b.categories = vec![run.kind.name().into()];
            b.debug_annotations = vec![
                annotation_u("first_slot", run.first_slot),
                annotation_u("slots", run.end_slot - run.first_slot),
            ];
            events.push((ts(run.first_slot), b));
            for &(slot, ns) in &run.stolen {
                let mut sb = event(cpu_track(i), proto::TYPE_SLICE_BEGIN);
                sb.name = Some("stolen".into());
                sb.categories = vec!["stolen".into()];
                sb.debug_annotations =
                    vec![annotation_u("slot", slot), annotation_u("stolen_ns", ns)];
                events.push((ts(slot), sb));
                events.push((
                    ts(slot) + ns.min(h.slot_ns),
                    event(cpu_track(i), proto::TYPE_SLICE_END),
                ));
            }
            events.push((ts(run.end_slot), event(cpu_track(i), proto::TYPE_SLICE_END)));
        }

        descriptors.push(proto::TrackDescriptor {
            counter: Some(proto::CounterDescriptor {
                unit: None,
                unit_name: Some("normalised frequency".into()),
            }),
            ..descriptor(
                freq_track(i),
                format!("CPU {cpu} freq"),
                "the slot's normalised frequency in (0, 1] (1.0 without DVFS)",
            )
        });
        let mut last_freq: Option<f64> = None;
        let mut has_late = false;
        for r in records.iter().filter(|r| r.cpu == cpu) {
            if last_freq != Some(r.freq) {
                let mut e = event(freq_track(i), proto::TYPE_COUNTER);
                e.double_counter_value = Some(r.freq);
                events.push((ts(r.slot), e));
                last_freq = Some(r.freq);
            }
            if let Some(late) = r.late_ns {
                has_late = true;
                let mut e = event(late_track(i), proto::TYPE_COUNTER);
                e.counter_value = Some(late);
                events.push((ts(r.slot), e));
            }
        }
        if has_late {
            descriptors.push(proto::TrackDescriptor {
                counter: Some(proto::CounterDescriptor {
                    unit: Some(proto::UNIT_TIME_NS),
                    unit_name: None,
                }),
                ..descriptor(
                    late_track(i),
                    format!("CPU {cpu} late_ns"),
                    "slot tick lateness: timer callback time minus the slot boundary, ns",
                )
            });
        }
    }

    events.sort_by_key(|(t, _)| *t);
    let mut packet = Vec::with_capacity(descriptors.len() + events.len());
    for d in descriptors {
        packet.push(proto::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            track_descriptor: Some(d),
            ..Default::default()
        });
    }
    for (t, e) in events {
        packet.push(proto::TracePacket {
            timestamp: Some(t),
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            track_event: Some(e),
            ..Default::default()
        });
    }
    if let Some(p) = packet.first_mut() {
        p.sequence_flags = Some(proto::SEQ_INCREMENTAL_STATE_CLEARED);
    }
    proto::Trace { packet }
}

/// The file's bytes.
pub fn encode(trace: &proto::Trace) -> Vec<u8> {
    trace.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::proto::*;
    use super::*;

    const HEADER_K: &str = r#"{"format":"scx_tt slot trace v1","source":"kernel","slot_ns":1000,"t0_ns":5000,"cpus":[1,2]}"#;
    const HEADER_S: &str =
        r#"{"format":"scx_tt slot trace v1","source":"simulate","slot_ns":1000,"cpus":[3]}"#;

    fn rec(slot: u64, cpu: u32, kind: &str, task: Option<&str>) -> String {
        let task = task.map_or(String::new(), |t| format!(r#","task":"{t}""#));
        format!(r#"{{"slot":{slot},"cpu":{cpu},"kind":"{kind}"{task},"freq":1.0}}"#)
    }

    fn text(header: &str, lines: &[String]) -> String {
        let mut s = format!("{header}\n");
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    /// (timestamp, event) of every track event, in file order.
    fn events(t: &Trace) -> Vec<(u64, TrackEvent)> {
        t.packet
            .iter()
            .filter_map(|p| Some((p.timestamp?, p.track_event.clone()?)))
            .collect()
    }

    fn on_track(t: &Trace, uuid: u64) -> Vec<(u64, TrackEvent)> {
        events(t)
            .into_iter()
            .filter(|(_, e)| e.track_uuid == Some(uuid))
            .collect()
    }

    /// (begin, end, name, category) of the slices of a track, rebuilt from begin/end pairs.
    fn slices(t: &Trace, uuid: u64) -> Vec<(u64, u64, String, String)> {
        let mut open: Vec<(u64, String, String)> = Vec::new();
        let mut out = Vec::new();
        for (ts, e) in on_track(t, uuid) {
            match e.r#type {
                Some(TYPE_SLICE_BEGIN) => open.push((
                    ts,
                    e.name.clone().unwrap(),
                    e.categories.first().cloned().unwrap(),
                )),
                Some(TYPE_SLICE_END) => {
                    let (b, n, c) = open.pop().expect("an end without a begin");
                    assert!(ts >= b, "slice {n} ends before it begins");
                    out.push((b, ts, n, c));
                }
                other => panic!("{other:?} on a slice track"),
            }
        }
        assert!(open.is_empty(), "unclosed slices {open:?}");
        out.sort();
        out
    }

    fn export(text: &str, markers: &[Marker]) -> Trace {
        let t = read_slot_trace(text).expect("valid trace");
        let built = build(&t, markers);
        // what is written is what is decoded
        let bytes = encode(&built);
        let back = Trace::decode(bytes.as_slice()).expect("decodes");
        assert_eq!(back, built);
        back
    }

    #[test]
    fn consecutive_slots_of_one_owner_and_kind_make_one_slice() {
        let t = text(
            HEADER_K,
            &[
                rec(0, 1, "tt", Some("a")),
                rec(0, 2, "idle", None),
                rec(1, 1, "tt", Some("a")),
                rec(1, 2, "idle", None),
                // same task, other kind: a new slice
                rec(2, 1, "aperiodic", Some("a")),
                rec(2, 2, "be", None),
                rec(3, 1, "tt", Some("b")),
                rec(3, 2, "be", None),
                // a missing slot (4) ends a slice even for the same owner
                rec(5, 1, "tt", Some("b")),
                rec(5, 2, "be", None),
            ],
        );
        let out = export(&t, &[]);
        let ns = |s: u64| 5000 + s * 1000;
        let s = |b: u64, e: u64, n: &str, c: &str| (ns(b), ns(e), n.to_string(), c.to_string());
        assert_eq!(
            slices(&out, cpu_track(0)),
            vec![
                s(0, 2, "a", "tt"),
                s(2, 3, "a", "aperiodic"),
                s(3, 4, "b", "tt"),
                s(5, 6, "b", "tt"),
            ]
        );
        assert_eq!(
            slices(&out, cpu_track(1)),
            vec![
                s(0, 2, "idle", "idle"),
                s(2, 4, "be", "be"),
                s(5, 6, "be", "be")
            ]
        );
        // the owner runs the slices come from, with their slot ranges
        let trace = read_slot_trace(&t).unwrap();
        let recs: Vec<_> = trace.records.iter().map(|(_, r)| r.clone()).collect();
        let runs = owner_runs(&[1, 2], &recs);
        assert_eq!(runs.len(), 7);
        assert_eq!(
            (runs[0].first_slot, runs[0].end_slot, runs[0].name()),
            (0, 2, "a")
        );
        // a slice's end and the next one's begin at the same time come in that order
        let track0 = on_track(&out, cpu_track(0));
        let at2: Vec<_> = track0
            .iter()
            .filter(|(t, _)| *t == ns(2))
            .map(|(_, e)| e.r#type)
            .collect();
        assert_eq!(at2, vec![Some(TYPE_SLICE_END), Some(TYPE_SLICE_BEGIN)]);
        // timestamps never go back in the file
        let all = events(&out);
        assert!(all.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn stolen_time_is_a_nested_slice_from_the_slot_start() {
        let t = text(
            HEADER_S,
            &[
                r#"{"slot":0,"cpu":3,"kind":"tt","task":"a","freq":1.0,"stolen_ns":0}"#.into(),
                r#"{"slot":1,"cpu":3,"kind":"tt","task":"a","freq":1.0,"stolen_ns":250}"#.into(),
                // more than a slot (a measurement across a late tick): capped at the slot
                r#"{"slot":2,"cpu":3,"kind":"tt","task":"a","freq":1.0,"stolen_ns":4000}"#.into(),
            ],
        );
        let out = export(&t, &[]);
        assert_eq!(
            slices(&out, cpu_track(0)),
            vec![
                (0, 3000, "a".into(), "tt".into()),
                (1000, 1250, "stolen".into(), "stolen".into()),
                (2000, 3000, "stolen".into(), "stolen".into()),
            ]
        );
        // the last stolen slice ends with its parent: two ends at that time
        let ends = on_track(&out, cpu_track(0))
            .into_iter()
            .filter(|(ts, e)| *ts == 3000 && e.r#type == Some(TYPE_SLICE_END))
            .count();
        assert_eq!(ends, 2);
        let stolen = events(&out)
            .into_iter()
            .find(|(_, e)| e.name.as_deref() == Some("stolen"))
            .unwrap()
            .1;
        assert!(stolen
            .debug_annotations
            .iter()
            .any(|a| a.name.as_deref() == Some("stolen_ns") && a.uint_value == Some(250)));
    }

    #[test]
    fn frequency_is_sampled_on_change_and_lateness_every_slot() {
        let t = text(
            HEADER_K,
            &[
                r#"{"slot":0,"cpu":1,"kind":"tt","task":"a","freq":0.5,"late_ns":10}"#.into(),
                r#"{"slot":1,"cpu":1,"kind":"tt","task":"a","freq":0.5,"late_ns":-3}"#.into(),
                r#"{"slot":2,"cpu":1,"kind":"idle","freq":1.0,"late_ns":7}"#.into(),
                r#"{"slot":3,"cpu":1,"kind":"idle","freq":1.0}"#.into(),
                r#"{"slot":0,"cpu":2,"kind":"idle","freq":1.0}"#.into(),
            ],
        );
        let out = export(&t, &[]);
        let values = |uuid| -> Vec<(u64, Option<i64>, Option<f64>)> {
            on_track(&out, uuid)
                .into_iter()
                .map(|(ts, e)| {
                    assert_eq!(e.r#type, Some(TYPE_COUNTER));
                    (ts, e.counter_value, e.double_counter_value)
                })
                .collect()
        };
        assert_eq!(
            values(freq_track(0)),
            vec![(5000, None, Some(0.5)), (7000, None, Some(1.0))]
        );
        assert_eq!(
            values(late_track(0)),
            vec![
                (5000, Some(10), None),
                (6000, Some(-3), None),
                (7000, Some(7), None)
            ]
        );
        assert_eq!(values(freq_track(1)), vec![(5000, None, Some(1.0))]);
        // CPU 2 has no lateness: no late track, but a freq track
        let names: Vec<_> = out
            .packet
            .iter()
            .filter_map(|p| p.track_descriptor.as_ref()?.name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "CPU 1",
                "CPU 1 freq",
                "CPU 1 late_ns",
                "CPU 2",
                "CPU 2 freq"
            ]
        );
        let late = out
            .packet
            .iter()
            .filter_map(|p| p.track_descriptor.as_ref())
            .find(|d| d.uuid == Some(late_track(0)))
            .unwrap();
        assert_eq!(late.counter.as_ref().unwrap().unit, Some(UNIT_TIME_NS));
    }

    #[test]
    fn instants_come_from_the_summary_the_planner_log_and_the_simulate_report() {
        let t = text(HEADER_K, &[rec(0, 1, "tt", Some("a"))]);
        let trace = read_slot_trace(&t).unwrap();
        let summary =
            r#"{"t0_ns": 5000, "slot_us": 1, "table_switches": [{"slot": 7, "table": "b.json"}]}"#;
        let m = summary_markers(summary, &trace).unwrap();
        assert_eq!(
            m,
            vec![Marker {
                slot: 7,
                kind: MarkerKind::Table,
                name: "switch_table b.json".into(),
                source: "summary"
            }]
        );
        let plog = [
            r#"{"format":"scx_tt planner log v1","policy":"bss","lead":2,"frame_slots":20,"slot_ns":1000,"freqs_ppm":[1000000],"closed_loop":false,"truncated":false}"#,
            r#"{"op":"admit_periodic","task":{"task":3,"cpu":0,"period":20,"wcet":14}}"#,
            r#"{"op":"advance","cur":null,"last":1}"#,
            r#"{"op":"advance","cur":4,"last":6}"#,
            r#"{"op":"remove","task":3}"#,
            r#"{"op":"admit_firm","job":{"task":1,"cpu":0,"wcet":2,"deadline_slots":9},"cur":5}"#,
            r#"{"op":"set_policy","policy":"dvfs"}"#,
            r#"{"op":"admit","task":{"task":5,"cpu":0,"period":10,"wcet":1},"name":"vm1"}"#,
        ]
        .join("\n");
        // `admit` is not an op of the log: its line and field are named
        let e = planner_log_markers(&plog, &trace).unwrap_err();
        assert_eq!(e.line, Some(8), "{e}");
        let plog = plog.replace(r#""op":"admit","#, r#""op":"admit_task","#);
        let m = planner_log_markers(&plog, &trace).unwrap();
        let got: Vec<_> = m
            .iter()
            .map(|m| (m.slot, m.kind, m.name.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    0,
                    MarkerKind::Admission,
                    "admit_periodic task 3 (14 slots every 20)"
                ),
                (4, MarkerKind::Removal, "remove task 3"),
                (
                    5,
                    MarkerKind::Admission,
                    "admit_firm task 1 (2 slots within 9)"
                ),
                (4, MarkerKind::Policy, "set_policy dvfs"),
                (4, MarkerKind::Admission, "admit vm1 (1 slots every 10)"),
            ]
        );
        let report = r#"{"policy":"bss","admissions":[
            {"at_slot":3,"name":"burst","kind":"firm","accepted":false,"reason":"x"},
            {"at_slot":9,"name":"vm","kind":"remove","accepted":true,"reason":"y"}]}"#;
        let m = sim_report_markers(report, &trace).unwrap();
        let got: Vec<_> = m
            .iter()
            .map(|m| (m.slot, m.kind, m.name.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (3, MarkerKind::Admission, "admit firm burst: rejected"),
                (9, MarkerKind::Removal, "remove vm: accepted")
            ]
        );
        let out = export(&t, &m);
        let instants = on_track(&out, EVENTS_TRACK);
        assert_eq!(instants.len(), 2);
        assert_eq!(instants[0].0, 5000 + 3 * 1000);
        assert_eq!(instants[0].1.r#type, Some(TYPE_INSTANT));
        assert_eq!(instants[1].1.categories, vec!["removal".to_string()]);
        // no markers: no events track
        let out = export(&t, &[]);
        assert!(out
            .packet
            .iter()
            .all(|p| p.track_descriptor.as_ref().map(|d| d.uuid) != Some(Some(EVENTS_TRACK))));
    }

    #[test]
    fn another_runs_summary_or_log_is_refused_by_field() {
        let t = text(HEADER_K, &[rec(0, 1, "tt", Some("a"))]);
        let trace = read_slot_trace(&t).unwrap();
        let e = summary_markers("{\n\"t0_ns\": 9,\n\"table_switches\": []\n}", &trace).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(2), Some("t0_ns")),
            "{e}"
        );
        let e = summary_markers(r#"{"slot_us": 2, "table_switches": []}"#, &trace).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("slot_us"), "{e}");
        let e = summary_markers(
            "{\n\"table_switches\": [{\"slot\": -1, \"table\": \"x\"}]\n}",
            &trace,
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(2), Some("table_switches[0].slot")),
            "{e}"
        );
        let e = summary_markers("{}", &trace).unwrap_err();
        assert!(e.msg.contains("table_switches"), "{e}");
        let plog = r#"{"format":"scx_tt planner log v1","policy":"bss","lead":2,"frame_slots":20,"slot_ns":7,"freqs_ppm":[1000000],"closed_loop":false,"truncated":false}"#;
        let e = planner_log_markers(plog, &trace).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(1), Some("slot_ns")),
            "{e}"
        );
        let bad = format!(
            "{plog}\n{}\n{}",
            r#"{"op":"remove","task":2}"#,
            r#"{"op":"admit_periodic","task":{"task":3,"cpu":0,"period":"x","wcet":14}}"#
        );
        let e = planner_log_markers(&bad.replace("\"slot_ns\":7", "\"slot_ns\":1000"), &trace)
            .unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(3), Some("task.period")),
            "{e}"
        );
        let e = sim_report_markers(r#"{"admissions":[{"at_slot":1}]}"#, &trace).unwrap_err();
        assert!(
            e.to_string().contains("admissions[0]") && e.msg.contains("name"),
            "{e}"
        );
    }

    #[test]
    fn an_empty_trace_has_its_tracks_and_no_events() {
        let out = export(&format!("{HEADER_K}\n"), &[]);
        assert!(events(&out).is_empty());
        assert_eq!(
            out.packet
                .iter()
                .filter(|p| p.track_descriptor.is_some())
                .count(),
            4
        );
        assert_eq!(
            out.packet[0].sequence_flags,
            Some(SEQ_INCREMENTAL_STATE_CLEARED)
        );
        assert!(out
            .packet
            .iter()
            .all(|p| p.trusted_packet_sequence_id == Some(SEQUENCE_ID)));
        let e = read_slot_trace("\n\n").unwrap_err();
        assert!(e.msg.contains("empty"), "{e}");
    }

    #[test]
    fn bad_input_names_the_line_and_the_field() {
        let cases: Vec<(String, usize, Option<&str>, &str)> = vec![
            // no header: the slot length is unknown
            (rec(0, 1, "tt", None), 1, Some("format"), "no trace header"),
            (HEADER_K.replace("v1", "v9"), 1, Some("format"), "v9"),
            (HEADER_K.replace("1000", "0"), 1, Some("slot_ns"), "> 0"),
            (
                HEADER_K.replace("[1,2]", "[1,1]"),
                1,
                Some("cpus[1]"),
                "twice",
            ),
            (
                text(HEADER_K, &[rec(0, 7, "tt", None)]),
                2,
                Some("cpu"),
                "not a managed CPU",
            ),
            (
                text(
                    HEADER_K,
                    &[
                        rec(0, 1, "tt", None),
                        rec(0, 2, "tt", None),
                        rec(0, 1, "be", None),
                    ],
                ),
                4,
                Some("slot"),
                "increasing",
            ),
            (
                text(HEADER_K, &[rec(0, 1, "busy", None)]),
                2,
                Some("kind"),
                "busy",
            ),
            (
                text(
                    HEADER_K,
                    &[r#"{"slot":0,"cpu":1,"kind":"tt","freq":0}"#.into()],
                ),
                2,
                Some("freq"),
                "> 0",
            ),
            (
                text(
                    HEADER_K,
                    &[r#"{"slot":0,"cpu":1,"kind":"tt","freq":1,"late_ns":"x"}"#.into()],
                ),
                2,
                Some("late_ns"),
                "invalid type",
            ),
            (
                text(HEADER_K, &[r#"{"slot":0,"cpu":1,"freq":1}"#.into()]),
                2,
                None,
                "missing field `kind`",
            ),
            (
                text(
                    HEADER_K,
                    &[r#"{"slot":18446744073709551615,"cpu":1,"kind":"tt","freq":1}"#.into()],
                ),
                2,
                Some("slot"),
                "64 bits",
            ),
            (
                format!("{HEADER_K}\n\n{{not json"),
                3,
                None,
                "key must be a string",
            ),
        ];
        for (input, line, field, needle) in cases {
            let e = read_slot_trace(&input).expect_err(&input);
            assert_eq!(e.line, Some(line), "{input}: {e}");
            assert_eq!(e.field.as_deref(), field, "{input}: {e}");
            assert!(e.to_string().contains(needle), "{input}: {e}");
            assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
        }
    }
}

//! The instant events' markers, from a run's summary, its planner log or a `simulate --json`
//! report.

use super::input::{line_of, lines, parse_document, parse_line};
use super::{InputError, Marker, MarkerKind, SlotTrace};
use crate::planner::kernel_path::{
    FirmJob, LogEvent, LogHeader, PeriodicTask, SlotObs, LOG_FORMAT,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// Checks that a marker's slot has a time in ns; an error names the line and the field.
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

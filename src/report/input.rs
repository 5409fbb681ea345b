//! What the run report reads: the trace (docs/trace-format.md), the `--summary-json` summary
//! (docs/run-output.md; only the fields the report draws, unknown fields ignored) and the plan's
//! capacity intervals (`plan explain`, docs/plan-explain.md). Errors name the line and the field.

use crate::plan::explain::Explain;
use crate::trace::{SlotRecord, TraceHeader, TRACE_FORMAT};
use serde::Deserialize;

/// An input file that cannot be read as what it should be: where and why. `Display` gives
/// `line L, field F: message` (the caller prefixes the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The JSON path of the offending field (`cpu`, `tasks[2].planned_ns`), when known.
    pub field: Option<String>,
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(l) = self.line {
            write!(f, "line {l}, ")?;
        }
        match &self.field {
            Some(p) => write!(f, "field {p}: {}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

/// `serde_json` says "missing field `x`" without a path; take the name from the message.
fn missing_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_string())
}

/// Deserializes one JSON text, keeping the path of the field that failed.
fn parse_json<T: for<'de> Deserialize<'de>>(
    text: &str,
    line_offset: usize,
) -> Result<T, InputError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // serde_json appends " at line L column C"; the line is reported separately.
        let full = inner.to_string();
        let msg = match full.rfind(" at line ") {
            Some(i) => full[..i].to_string(),
            None => full,
        };
        let field = if path == "." || path.is_empty() {
            missing_field(&msg)
        } else {
            Some(match missing_field(&msg) {
                Some(m) => format!("{path}.{m}"),
                None => path,
            })
        };
        let line = if inner.line() > 0 {
            Some(line_offset + inner.line())
        } else {
            None
        };
        InputError {
            line,
            field,
            message: msg,
        }
    })?;
    Ok(value)
}

/// Reads a trace's text like [`crate::trace::read_trace`] (header optional), with errors that
/// name the line and the field.
pub fn read_trace(text: &str) -> Result<(Option<TraceHeader>, Vec<SlotRecord>), InputError> {
    let mut header = None;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if records.is_empty() && header.is_none() && line.contains("\"format\"") {
            let h: TraceHeader = parse_json(line, i)?;
            if h.format != TRACE_FORMAT {
                return Err(InputError {
                    line: Some(i + 1),
                    field: Some("format".into()),
                    message: format!(
                        "trace format {:?}, this reader knows {TRACE_FORMAT:?}",
                        h.format
                    ),
                });
            }
            header = Some(h);
            continue;
        }
        let r: SlotRecord = parse_json(line, i)?;
        if !(r.freq.is_finite() && r.freq >= 0.0) {
            return Err(InputError {
                line: Some(i + 1),
                field: Some("freq".into()),
                message: format!("{} is not a frequency in (0, 1]", r.freq),
            });
        }
        records.push(r);
    }
    Ok((header, records))
}

/// The part of the `--summary-json` summary the report draws.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SummaryView {
    pub slot_us: u64,
    pub duration_ns: u64,
    #[serde(default)]
    pub exit: Option<String>,
    pub tasks: Vec<TaskView>,
    pub cpus: Vec<CpuView>,
    #[serde(default)]
    pub energy: Option<EnergyView>,
    #[serde(default)]
    pub planner_late_slots: Option<u64>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct TaskView {
    pub name: String,
    pub class: String,
    #[serde(default)]
    pub cpu: Option<u32>,
    pub planned_ns: u64,
    pub delivered_ns: u64,
    #[serde(default)]
    pub outside_ns: u64,
    #[serde(default)]
    pub run_ns: u64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct CpuView {
    pub cpu: u32,
    pub managed: bool,
    #[serde(default)]
    pub late_hist: Vec<HistBucketView>,
    #[serde(default)]
    pub stolen_ns: u64,
    #[serde(default)]
    pub freq_residency: Vec<FreqShareView>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct HistBucketView {
    pub le_ns: Option<u64>,
    pub count: u64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct FreqShareView {
    pub mhz: u32,
    pub seconds: f64,
    pub fraction: f64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct EnergyView {
    pub joules: f64,
    pub label: String,
    pub source: String,
    #[serde(default)]
    pub segments: Vec<EnergySegmentView>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct EnergySegmentView {
    pub policy: String,
    pub from_slot: u64,
    pub idle: String,
    pub joules: f64,
}

/// Reads a `--summary-json` file's text.
pub fn read_summary(text: &str) -> Result<SummaryView, InputError> {
    parse_json(text, 0)
}

/// The plan as the report draws it: per managed CPU, the frame's table and capacity intervals.
#[derive(Clone, Debug, Default)]
pub struct PlanView {
    pub slot_us: u64,
    pub frame_slots: u64,
    pub cpus: Vec<PlanCpu>,
}

#[derive(Clone, Debug, Default)]
pub struct PlanCpu {
    pub cpu: u32,
    /// `(start, end, spare capacity)` in frame slots, covering the frame.
    pub intervals: Vec<(u64, u64, i64)>,
    /// `(start, end, task)`: the offline table's ranges.
    pub table: Vec<(u64, u64, String)>,
}

impl From<&Explain> for PlanView {
    fn from(e: &Explain) -> Self {
        PlanView {
            slot_us: e.slot_us,
            frame_slots: e.frame_slots,
            cpus: e
                .cpus
                .iter()
                .map(|c| PlanCpu {
                    cpu: c.cpu,
                    intervals: c.intervals.iter().map(|i| (i.start, i.end, i.sc)).collect(),
                    table: c
                        .table
                        .iter()
                        .map(|r| (r.start, r.end, r.task.clone()))
                        .collect(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_errors_name_line_and_field() {
        let h = r#"{"format":"scx_tt slot trace v1","source":"kernel","slot_ns":10,"cpus":[1]}"#;
        let ok = r#"{"slot":0,"cpu":1,"kind":"tt","task":"a","freq":1.0}"#;
        let (hh, rr) = read_trace(&format!("{h}\n{ok}\n")).unwrap();
        assert_eq!((hh.unwrap().cpus, rr.len()), (vec![1], 1));
        let e = read_trace(&format!(
            "{h}\n{ok}\n{{\"slot\":1,\"kind\":\"tt\",\"freq\":1}}\n"
        ))
        .unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("cpu")), "{e}");
        let e = read_trace(&format!(
            "{h}\n{{\"slot\":1,\"cpu\":\"x\",\"kind\":\"tt\",\"freq\":1}}\n"
        ))
        .unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(2), Some("cpu")), "{e}");
        assert!(
            e.to_string().starts_with("line 2, field cpu: invalid type"),
            "{e}"
        );
        let e = read_trace(&format!(
            "{h}\n{{\"slot\":1,\"cpu\":1,\"kind\":\"busy\",\"freq\":1}}\n"
        ))
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("kind"), "{e}");
        let e = read_trace(
            "{\"format\":\"scx_tt slot trace v9\",\"source\":\"kernel\",\"slot_ns\":1,\"cpus\":[]}",
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(1), Some("format")),
            "{e}"
        );
        let e = read_trace("not json").unwrap_err();
        assert_eq!(e.line, Some(1), "{e}");
    }

    #[test]
    fn summary_errors_name_the_path() {
        let e = read_summary(
            "{\"slot_us\":1,\"duration_ns\":1,\n\"tasks\":[{\"name\":\"a\",\"class\":\"tt\",\n\"planned_ns\":\"x\",\"delivered_ns\":1}],\"cpus\":[]}",
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(3), Some("tasks[0].planned_ns")),
            "{e}"
        );
        let e = read_summary("{\"slot_us\":1,\"duration_ns\":1,\"tasks\":[{\"name\":\"a\",\"class\":\"tt\",\"planned_ns\":1}],\"cpus\":[]}").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tasks[0].delivered_ns"), "{e}");
    }
}

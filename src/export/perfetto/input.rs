//! Reading the inputs: JSON lines and whole-file JSON documents, with errors that name the
//! line and the field, and the slot trace itself.

use super::{InputError, SlotTrace};
use crate::trace::{SlotRecord, TraceHeader, TRACE_FORMAT};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

/// Parses one JSON line; an error names the line and the field path.
pub(super) fn parse_line<T: DeserializeOwned>(line_no: usize, text: &str) -> Result<T, InputError> {
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
pub(super) fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty())
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

/// The line (1-based) a serde_json error points at in a whole-file document.
fn json_line(e: &serde_json::Error) -> Option<usize> {
    (e.line() > 0).then_some(e.line())
}

/// Parses a whole-file JSON document; an error names the line and the field path.
pub(super) fn parse_document<T: DeserializeOwned>(text: &str) -> Result<T, InputError> {
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
pub(super) fn line_of(text: &str, needle: &str, from: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| l.contains(needle))
        .map_or(from.max(1), |(i, _)| i + 1)
}

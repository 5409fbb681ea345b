//! `scx_tt report`: a run's per-slot trace (with its summary and plan when given) as one
//! self-contained HTML page: an SVG Gantt chart per managed CPU (zoomable to the slot), lateness
//! histograms, delivered vs planned per task, frequency over time and idle residency, energy,
//! and the plan's capacity intervals with their spare capacity under the Gantt. No network: the
//! CSS, the script and the SVG are inline. Every string from an input file is escaped. Pure:
//! values in, a `String` out (docs/report.md).

pub mod input;
mod page;

pub use input::{read_summary, read_trace, InputError, PlanCpu, PlanView, SummaryView};

use crate::trace::{SlotKind, SlotRecord, TraceHeader};
use std::collections::BTreeMap;

/// Everything the page is built from.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// Shown as the page's title (the trace file's name).
    pub title: &'a str,
    pub header: Option<&'a TraceHeader>,
    pub records: &'a [SlotRecord],
    pub summary: Option<&'a SummaryView>,
    pub plan: Option<&'a PlanView>,
}

/// The page.
pub fn build(inputs: &Inputs) -> String {
    page::render(inputs)
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Records that get a Gantt bar: every record that is not idle.
pub fn bar_count(records: &[SlotRecord]) -> usize {
    records.iter().filter(|r| r.kind != SlotKind::Idle).count()
}

/// The CPUs of the report in order: the header's, then any other CPU of the records in the
/// order they first appear.
pub fn cpus(header: Option<&TraceHeader>, records: &[SlotRecord]) -> Vec<u32> {
    let mut out: Vec<u32> = header.map(|h| h.cpus.clone()).unwrap_or_default();
    for r in records {
        if !out.contains(&r.cpu) {
            out.push(r.cpu);
        }
    }
    out
}

/// Upper bounds (inclusive, ns) of the lateness histogram's buckets, as the summary's
/// `late_hist`; below the first a bucket for negative lateness, above the last an open bucket.
pub const LATE_BOUNDS_NS: [i64; 14] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000, 20_000_000,
];

/// One bucket of a lateness histogram: values in `(lower, upper]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bin {
    pub label: String,
    pub count: u64,
}

/// `1 µs`, `20 ms`: a bound in ns as people read it.
pub fn fmt_ns_short(ns: i64) -> String {
    let a = ns.unsigned_abs();
    let sign = if ns < 0 { "-" } else { "" };
    if a >= 1_000_000_000 && a.is_multiple_of(1_000_000_000) {
        format!("{sign}{} s", a / 1_000_000_000)
    } else if a >= 1_000_000 && a.is_multiple_of(1_000_000) {
        format!("{sign}{} ms", a / 1_000_000)
    } else if a >= 1_000 && a.is_multiple_of(1_000) {
        format!("{sign}{} µs", a / 1_000)
    } else {
        format!("{sign}{a} ns")
    }
}

/// The lateness histogram of some `late_ns` values: `< 0`, `≤ 1 µs`, ..., `≤ 20 ms`, `> 20 ms`.
pub fn late_histogram(values: &[i64]) -> Vec<Bin> {
    let mut bins: Vec<Bin> = Vec::with_capacity(LATE_BOUNDS_NS.len() + 2);
    bins.push(Bin {
        label: "< 0".into(),
        count: 0,
    });
    for b in LATE_BOUNDS_NS {
        bins.push(Bin {
            label: format!("≤ {}", fmt_ns_short(b)),
            count: 0,
        });
    }
    bins.push(Bin {
        label: format!(
            "> {}",
            fmt_ns_short(LATE_BOUNDS_NS[LATE_BOUNDS_NS.len() - 1])
        ),
        count: 0,
    });
    for &v in values {
        let i = if v < 0 {
            0
        } else {
            1 + LATE_BOUNDS_NS.iter().take_while(|&&b| v > b).count()
        };
        bins[i].count += 1;
    }
    bins
}

/// What one CPU did over the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuStats {
    pub slots: u64,
    pub tt: u64,
    pub aperiodic: u64,
    pub be: u64,
    pub idle: u64,
    /// Idle slots inside a DPM idle period (`idle_until` set).
    pub dpm_idle: u64,
    /// Mean `freq` of the non-idle slots (None without any).
    pub busy_freq_mean: Option<f64>,
    /// The `late_ns` values, in record order.
    pub late: Vec<i64>,
}

impl CpuStats {
    /// idle / slots (0 without slots).
    pub fn idle_fraction(&self) -> f64 {
        if self.slots == 0 {
            0.0
        } else {
            self.idle as f64 / self.slots as f64
        }
    }
}

/// Per CPU figures of the records.
pub fn cpu_stats(records: &[SlotRecord]) -> BTreeMap<u32, CpuStats> {
    let mut out: BTreeMap<u32, CpuStats> = BTreeMap::new();
    let mut fsum: BTreeMap<u32, f64> = BTreeMap::new();
    for r in records {
        let s = out.entry(r.cpu).or_default();
        s.slots += 1;
        match r.kind {
            SlotKind::Tt => s.tt += 1,
            SlotKind::Aperiodic => s.aperiodic += 1,
            SlotKind::Be => s.be += 1,
            SlotKind::Idle => {
                s.idle += 1;
                if r.idle_until.is_some() {
                    s.dpm_idle += 1;
                }
            }
        }
        if r.kind != SlotKind::Idle {
            *fsum.entry(r.cpu).or_default() += r.freq;
        }
        if let Some(l) = r.late_ns {
            s.late.push(l);
        }
    }
    for (cpu, s) in out.iter_mut() {
        let busy = s.slots - s.idle;
        if busy > 0 {
            s.busy_freq_mean = Some(fsum.get(cpu).copied().unwrap_or(0.0) / busy as f64);
        }
    }
    out
}

/// Delivered against planned time of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    pub task: String,
    pub class: String,
    pub cpu: Option<u32>,
    pub planned_ns: u64,
    /// None when the trace measured nothing (no `ran_ns`).
    pub delivered_ns: Option<u64>,
}

/// Delivered vs planned per task: from the summary when given (its tasks, in plan order), else
/// from the trace (the slots a task owns × the slot length as planned, the sum of their
/// `ran_ns` as delivered; tasks in the order they first appear).
pub fn deliveries(
    records: &[SlotRecord],
    slot_ns: Option<u64>,
    summary: Option<&SummaryView>,
) -> Vec<Delivery> {
    if let Some(s) = summary {
        return s
            .tasks
            .iter()
            .map(|t| Delivery {
                task: t.name.clone(),
                class: t.class.clone(),
                cpu: t.cpu,
                planned_ns: t.planned_ns,
                delivered_ns: Some(t.delivered_ns),
            })
            .collect();
    }
    let slot_ns = slot_ns.unwrap_or(0);
    let mut out: Vec<Delivery> = Vec::new();
    let mut index: BTreeMap<(&str, &'static str), usize> = BTreeMap::new();
    for r in records {
        let Some(task) = &r.task else { continue };
        let kind = r.kind.name();
        let i = *index.entry((task.as_str(), kind)).or_insert_with(|| {
            out.push(Delivery {
                task: task.clone(),
                class: kind.to_string(),
                cpu: Some(r.cpu),
                planned_ns: 0,
                delivered_ns: None,
            });
            out.len() - 1
        });
        let d = &mut out[i];
        d.planned_ns += slot_ns;
        if let Some(ran) = r.ran_ns {
            d.delivered_ns = Some(d.delivered_ns.unwrap_or(0) + ran);
        }
        if d.cpu != Some(r.cpu) {
            d.cpu = None;
        }
    }
    out
}

#[cfg(test)]
mod tests;

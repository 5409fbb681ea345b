//! `scx_tt report RUN.jsonl [--summary SUMMARY.json] [--plan PLAN.json] -o report.html`: the
//! run report page (src/report, docs/report.md).
//!
//! Exit codes: 0 written; 2 an input cannot be read as what it should be (the message names
//! the file, the line and the field; nothing is written); 1 the page could not be written.

use anyhow::{Context, Result};
use clap::Args;
use scx_tt::plan::{self, explain::explain, LoadError};
use scx_tt::report::{self, Inputs, PlanView};
use std::path::{Path, PathBuf};

const EXIT_INPUT: i32 = 2;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The per-slot trace (`scx_tt --trace` or `scx_tt simulate --trace`, docs/trace-format.md).
    #[arg(value_name = "RUN.jsonl")]
    pub trace: PathBuf,
    /// The run's `--summary-json` file: delivered vs planned, energy, frequency residency.
    #[arg(long, value_name = "SUMMARY.json")]
    pub summary: Option<PathBuf>,
    /// The run's plan: its capacity intervals and spare capacity are drawn under the Gantt.
    #[arg(long, value_name = "PLAN.json")]
    pub plan: Option<PathBuf>,
    /// Where to write the HTML page.
    #[arg(short = 'o', long = "out", value_name = "report.html")]
    pub out: PathBuf,
}

/// An input that cannot be used: printed as `scx_tt: error: report: FILE: ...`.
struct Refusal(String);

fn read_text(path: &Path) -> Result<String, Refusal> {
    let bytes = std::fs::read(path)
        .map_err(|e| Refusal(format!("{}: cannot read: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        Refusal(format!("{}: line {line}: not UTF-8 text", path.display()))
    })
}

struct Loaded {
    header: Option<scx_tt::trace::TraceHeader>,
    records: Vec<scx_tt::trace::SlotRecord>,
    summary: Option<report::SummaryView>,
    plan: Option<PlanView>,
}

fn load(a: &ReportArgs) -> Result<Loaded, Refusal> {
    let text = read_text(&a.trace)?;
    let (header, records) =
        report::read_trace(&text).map_err(|e| Refusal(format!("{}: {e}", a.trace.display())))?;
    let trace_slot_ns = header.as_ref().map(|h| h.slot_ns);
    let summary = match &a.summary {
        None => None,
        Some(p) => {
            let s = report::read_summary(&read_text(p)?)
                .map_err(|e| Refusal(format!("{}: {e}", p.display())))?;
            if let Some(ns) = trace_slot_ns.filter(|&ns| ns != s.slot_us * 1000) {
                return Err(Refusal(format!(
                    "{}: field slot_us: {} µs, but the trace {} has slots of {ns} ns (line 1, \
                     field slot_ns): not the same run",
                    p.display(),
                    s.slot_us,
                    a.trace.display()
                )));
            }
            Some(s)
        }
    };
    let plan = match &a.plan {
        None => None,
        Some(p) => {
            let plan = plan::from_file(p).map_err(|e| match e {
                LoadError::Invalid { path, errors } => {
                    let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                    Refusal(format!(
                        "{}: invalid plan: {}",
                        path.display(),
                        lines.join("; ")
                    ))
                }
                e @ LoadError::Io { .. } => Refusal(e.to_string()),
            })?;
            let view = PlanView::from(&explain(&plan));
            if let Some(ns) = trace_slot_ns.filter(|&ns| ns != view.slot_us * 1000) {
                return Err(Refusal(format!(
                    "{}: field slot_us: {} µs, but the trace {} has slots of {ns} ns (line 1, \
                     field slot_ns): not the run's plan",
                    p.display(),
                    view.slot_us,
                    a.trace.display()
                )));
            }
            Some(view)
        }
    };
    Ok(Loaded {
        header,
        records,
        summary,
        plan,
    })
}

pub fn run(a: ReportArgs) -> Result<i32> {
    let loaded = match load(&a) {
        Ok(l) => l,
        Err(Refusal(msg)) => {
            eprintln!("scx_tt: error: report: {msg}");
            return Ok(EXIT_INPUT);
        }
    };
    let title = a
        .trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| a.trace.display().to_string());
    let html = report::build(&Inputs {
        title: &title,
        header: loaded.header.as_ref(),
        records: &loaded.records,
        summary: loaded.summary.as_ref(),
        plan: loaded.plan.as_ref(),
    });
    // Written next to the target, then renamed: a failed write leaves no partial page.
    let mut tmp = a.out.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, &html).with_context(|| format!("writing {}", tmp.display()))?;
    if let Err(e) = std::fs::rename(&tmp, &a.out) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", a.out.display()));
    }
    let cpus = report::cpus(loaded.header.as_ref(), &loaded.records).len();
    println!(
        "scx_tt: report: {} ({} Gantt bars on {cpus} CPU(s), {} slot records)",
        a.out.display(),
        report::bar_count(&loaded.records),
        loaded.records.len()
    );
    Ok(0)
}

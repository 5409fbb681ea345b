//! `scx_tt trace export --perfetto RUN.jsonl -o RUN.pftrace`: a slot trace as a Perfetto trace
//! (docs/perfetto.md), with a run's summary, planner log or simulate report as optional inputs
//! of instant events.
//!
//! Exit codes: 0 written, 2 an input is invalid (the message names the file, the line and the
//! field; nothing is written), 1 a file could not be read or written.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use scx_tt::export::perfetto::{self, InputError, Marker, SlotTrace};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Exit code for an invalid input file.
const EXIT_INVALID: i32 = 2;

#[derive(Subcommand, Debug)]
pub enum TraceCmd {
    /// Convert a slot trace (`--trace`, `simulate --trace`) for another tool: `--perfetto`
    /// writes a Perfetto protobuf trace for ui.perfetto.dev (docs/perfetto.md).
    Export(ExportArgs),
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Write Perfetto's protobuf trace format (the only format so far; required).
    #[arg(long, required = true)]
    perfetto: bool,
    /// The slot trace (JSON lines with its header, docs/trace-format.md).
    #[arg(value_name = "RUN.jsonl")]
    trace: PathBuf,
    /// Where to write the Perfetto trace (e.g. RUN.pftrace).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// The run's `--summary-json` file: its table switches become instant events.
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// The run's `--planner-log` file: admissions, removals and policy switches become instant
    /// events.
    #[arg(long, value_name = "FILE")]
    planner_log: Option<PathBuf>,
    /// A `scx_tt simulate --json` report: its admissions and removals become instant events.
    #[arg(long, value_name = "FILE")]
    sim_report: Option<PathBuf>,
}

pub fn run(cmd: TraceCmd) -> Result<i32> {
    match cmd {
        TraceCmd::Export(args) => export(args),
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn invalid(path: &Path, e: InputError) -> i32 {
    eprintln!("scx_tt trace export: {}: {e}", path.display());
    eprintln!("scx_tt trace export: nothing written");
    EXIT_INVALID
}

type MarkerReader = fn(&str, &SlotTrace) -> Result<Vec<Marker>, InputError>;

fn export(args: ExportArgs) -> Result<i32> {
    debug_assert!(args.perfetto, "clap requires --perfetto");
    let trace = match perfetto::read_slot_trace(&read(&args.trace)?) {
        Ok(t) => t,
        Err(e) => return Ok(invalid(&args.trace, e)),
    };
    let inputs: [(&Option<PathBuf>, MarkerReader); 3] = [
        (&args.summary, perfetto::summary_markers),
        (&args.planner_log, perfetto::planner_log_markers),
        (&args.sim_report, perfetto::sim_report_markers),
    ];
    let mut markers = Vec::new();
    for (path, reader) in inputs {
        let Some(path) = path else { continue };
        match reader(&read(path)?, &trace) {
            Ok(m) => markers.extend(m),
            Err(e) => return Ok(invalid(path, e)),
        }
    }
    let out = perfetto::build(&trace, &markers);
    let bytes = perfetto::encode(&out);
    write_atomically(&args.output, &bytes)?;
    let (mut owners, mut stolen) = (0, 0);
    for e in out.packet.iter().filter_map(|p| p.track_event.as_ref()) {
        if e.r#type == Some(perfetto::proto::TYPE_SLICE_BEGIN) {
            if e.categories.iter().any(|c| c == "stolen") {
                stolen += 1;
            } else {
                owners += 1;
            }
        }
    }
    println!(
        "{}: {} CPU track(s), {owners} owner slice(s), {stolen} stolen slice(s), {} instant \
         event(s), {} bytes",
        args.output.display(),
        trace.header.cpus.len(),
        markers.len(),
        bytes.len()
    );
    Ok(0)
}

/// Writes `bytes` to a temporary file beside `path`, then renames it: a failure leaves no
/// partial file.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let res = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}

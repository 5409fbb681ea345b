//! scx_tt command line: wires the subcommands together; each lives in `src/cli/`.

mod cli;

use clap::{Parser, Subcommand};

/// `scx_tt --version`: the crate version and the git revision it was built from (build.rs:
/// `git rev-parse --short HEAD`, `-dirty` with uncommitted changes, `unknown` outside git).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("SCX_TT_GIT_REV"),
    ")"
);

/// Time-triggered, table-driven real-time scheduling for Linux/KVM nodes (sched_ext).
///
/// `scx_tt --table plan.json` enforces the plan's slot table on the managed CPUs (root, a kernel
/// with CONFIG_SCHED_CLASS_EXT=y). The subcommands work without root or sched_ext.
#[derive(Parser, Debug)]
#[command(name = "scx_tt", version = VERSION, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(flatten)]
    run: cli::run::RunArgs,

    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Validate, explain and generate plan files.
    #[command(subcommand)]
    Plan(cli::plan::PlanCmd),
    /// Run the slot-shifting planner on a virtual slot clock (no root, no sched_ext).
    Simulate(Box<cli::simulate::SimulateArgs>),
    /// Talk to a running `scx_tt --control PATH`: status, switch-table, admit-firm,
    /// admit-periodic, admit (processes and VMs), remove, set-policy, batch (docs/control.md).
    Ctl(cli::ctl::CtlArgs),
    /// Put back what a run killed by SIGKILL (or a crash) left changed on the machine (cpufreq
    /// governors, limits, speeds), from its journal under --run-dir.
    Restore(cli::restore::RestoreArgs),
    /// Draw a run's per-slot trace (with its summary and plan) as one self-contained HTML page:
    /// Gantt per CPU, lateness, delivered vs planned, frequency, energy (docs/report.md).
    Report(cli::report::ReportArgs),
    /// Work with slot traces: `trace export --perfetto RUN.jsonl -o RUN.pftrace` writes a
    /// Perfetto trace (docs/perfetto.md).
    #[command(subcommand)]
    Trace(cli::trace::TraceCmd),
}

fn main() {
    let cli = Cli::parse();
    if cli.cmd.as_ref().is_some_and(Cmd::writes_to_a_pipe) {
        default_sigpipe();
    }
    let result = match cli.cmd {
        Some(Cmd::Plan(cmd)) => cli::plan::run(cmd),
        Some(Cmd::Simulate(args)) => cli::simulate::run(*args),
        Some(Cmd::Ctl(args)) => cli::ctl::run(args),
        Some(Cmd::Restore(args)) => cli::restore::run(args),
        Some(Cmd::Report(args)) => cli::report::run(args),
        Some(Cmd::Trace(cmd)) => cli::trace::run(cmd),
        None => cli::run::run(cli.run),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("scx_tt: error: {e:#}");
            std::process::exit(1);
        }
    }
}

impl Cmd {
    /// The offline subcommands whose output is read through a pipe (`simulate ... | head`):
    /// they end quietly when the reader goes away, as other Unix tools do. The run daemon and
    /// `ctl` keep Rust's ignored SIGPIPE, so a control client or stats reader that closes its
    /// socket early gets an EPIPE error, never a killed scheduler.
    fn writes_to_a_pipe(&self) -> bool {
        matches!(
            self,
            Cmd::Plan(_) | Cmd::Simulate(_) | Cmd::Report(_) | Cmd::Trace(_)
        )
    }
}

/// SIGPIPE back to its default action (terminate) for this process.
fn default_sigpipe() {
    // SAFETY: signal(2) with SIG_DFL installs no handler; it only changes the disposition,
    // before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

//! `scx_tt --table plan.json`: enforce a plan with the BPF scheduler (src/sched), stream its
//! per-slot records into the accounting (crates/tt-core/src/accounting), and print the summary at exit.
//! This file is the flags and the plan; the run is a daemon in the shape of scx's Rust
//! schedulers (feature `bpf`):
//! - `daemon.rs`: the run: `Daemon` (steps 1–2: system checks, configuration, tasks; what a
//!   restart keeps), the restart loop (`enforce`), `finish` → the summary;
//! - `enforce.rs`: one BPF scheduler: `Enforcer` start (steps 3–7: load/attach, arm, planner
//!   thread, control, stats), the run loop, stop (detach, exit info, restart or end);
//! - `restart.rs`: the restart bound and the hotplug settle; `carry.rs`: counters over
//!   restarts; `every.rs`: the run loop's periodic deadlines;
//! - `tasks.rs`: the plan's threads and spawned children; `stats.rs`: accounting, energy and
//!   trace fed by the ring buffer; `energy.rs`: the live energy meter; `report.rs`: what is
//!   printed after the summary and the summary JSON;
//! - `planner_loop.rs`: planner mode's planner and thread; `engine.rs`: the control protocol's
//!   engine over the loaded scheduler (the `--control` socket is scx_tt::control::socket);
//!   `plan_loader.rs`: the worker thread that loads the plans of `switch_table` requests;
//!   `obs_test.rs`: the test hook that checks the observation ring against the records.
//!
//! Exit codes: 0 clean end, 2 invalid plan, 1 any other error.

#[cfg(feature = "bpf")]
mod adaptive;
mod carry;
#[cfg(feature = "bpf")]
mod daemon;
mod demos;
#[cfg(feature = "bpf")]
mod energy;
#[cfg(feature = "bpf")]
mod enforce;
#[cfg(feature = "bpf")]
mod engine;
mod every;
mod freq;
mod idle_ctl;
mod monitor;
#[cfg(feature = "bpf")]
mod obs_test;
mod plan_loader;
#[cfg(feature = "bpf")]
mod planner_loop;
mod report;
mod restart;
mod simulated;
#[cfg(feature = "bpf")]
mod stats;
#[cfg(feature = "bpf")]
mod tasks;

use anyhow::{bail, Context, Result};
use clap::Args;
use scx_tt::energy::model::{self, PowerModel};
use scx_tt::plan;
use scx_tt::planner::kernel_path as online;
use scx_tt::planner::Policy;
use std::path::{Path, PathBuf};

/// The default `--power-model`, built in so the binary works alone (e.g. in the VM initramfs).
const BUNDLED_MODEL: &str = include_str!("../../models/xeon-gold-5218.json");

/// `--slot-clock` (src/bpf/tt_sched.bpf.c B.5).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotClockArg {
    /// The BPF timer, or the helper threads where the kernel is PREEMPT_RT.
    Auto,
    /// The BPF timer (refused at load on a PREEMPT_RT kernel).
    Timer,
    /// scx_tt's SCHED_FIFO helper threads.
    Rt,
}

impl SlotClockArg {
    /// Whether the helper-thread clock runs, on a kernel that is PREEMPT_RT or not (used by the
    /// daemon, which needs the `bpf` feature).
    #[cfg_attr(not(feature = "bpf"), allow(dead_code))]
    pub fn is_rt(self, kernel_rt: bool) -> bool {
        match self {
            SlotClockArg::Auto => kernel_rt,
            SlotClockArg::Timer => false,
            SlotClockArg::Rt => true,
        }
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Plan file to enforce (JSON, docs/plan-format.md). Needs root and CONFIG_SCHED_CLASS_EXT.
    #[arg(long, value_name = "PLAN.json")]
    pub table: Option<PathBuf>,
    /// Stop after this many seconds (default: run until SIGINT/SIGTERM).
    #[arg(long, value_name = "N", value_parser = super::args::duration_secs)]
    pub duration_s: Option<f64>,
    /// Stop when every thread of the plan's tasks has exited.
    #[arg(long)]
    pub exit_when_tasks_exit: bool,
    /// Print a one-line summary every SECS seconds (the statistics the stats socket serves).
    #[arg(long, value_name = "SECS", value_parser = super::args::stats_secs)]
    pub stats: Option<f64>,
    /// The unix socket the run serves its statistics on with scx_stats (scx's convention;
    /// `--monitor` reads it; docs/run-output.md "Statistics"). Also where `--monitor` looks.
    #[arg(long, value_name = "PATH", default_value = scx_tt::metrics::DEFAULT_STATS_SOCKET)]
    pub stats_socket: PathBuf,
    /// Do not run a scheduler: print the statistics of a running scx_tt every SECS seconds,
    /// read from its stats socket (--stats-socket), until SIGINT. Needs no plan, loads nothing.
    #[arg(long, value_name = "SECS", value_parser = super::args::stats_secs, conflicts_with = "table")]
    pub monitor: Option<f64>,
    /// List every statistic (served on the stats socket, printed by --stats and --monitor)
    /// with its type, unit and meaning, and exit.
    #[arg(long, conflicts_with = "table")]
    pub help_stats: bool,
    /// Write one JSON object per (CPU, slot) to FILE (docs/trace-format.md).
    #[arg(long, value_name = "FILE.jsonl")]
    pub trace: Option<PathBuf>,
    /// Write the exit summary as JSON to FILE (docs/run-output.md).
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<PathBuf>,
    /// Print a per-slot timeline of the last N slots of each managed CPU at exit.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub timeline_slots: usize,
    /// Guard band, us: an owner is stopped this long before the end of its run, and no task
    /// starts with less than this left (default: calibrated at start from the measured timer
    /// lateness, p99 + 10 % within 5-10 % of the slot; docs/run-output.md "Start-up"). Given,
    /// it is used as is and nothing is calibrated.
    #[arg(long, value_name = "N")]
    pub guard_us: Option<u64>,
    /// What fires the slot ticks (docs/run-output.md, "The slot clock"): `auto` (default) the
    /// BPF timer, or scx_tt's helper threads on a PREEMPT_RT kernel, whose verifier refuses
    /// bpf_timer; `timer` or `rt` forces one. `rt`: one SCHED_FIFO thread per managed CPU,
    /// pinned there, at --slot-clock-prio.
    #[arg(long, value_enum, value_name = "CLOCK", default_value_t = SlotClockArg::Auto)]
    pub slot_clock: SlotClockArg,
    /// SCHED_FIFO priority (1-99) of the `rt` slot clock's threads: above every RT thread that
    /// may delay a slot tick on a managed CPU (PREEMPT_RT's interrupt threads run at 50).
    #[arg(long, value_name = "PRIO", default_value_t = 90,
          value_parser = clap::value_parser!(u8).range(1..=99))]
    pub slot_clock_prio: u8,
    /// At most this long (ms) the spawned (`cmd`) tasks run under the kernel's own scheduler
    /// before the scheduler attaches, until each has settled after its exec (docs/run-output.md
    /// "Start-up"); 0: they exec in their slots from slot 0.
    #[arg(long, value_name = "MS", default_value_t = scx_tt::sched::settle::DEFAULT_TIMEOUT_MS)]
    pub settle_ms: u64,
    /// Per-slot frequencies to request with scx_bpf_cpuperf_set at each slot tick (schedutil
    /// systems): JSON object from managed CPU id to one normalised frequency in (0, 1] per
    /// frame slot, e.g. {"1": [1.0, 0.5, ...]}.
    #[arg(long, value_name = "FILE.json")]
    pub perf_table: Option<PathBuf>,
    /// Root under which /sys is read and written for energy (powercap RAPL, cpufreq); a fake
    /// tree in tests.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub sysfs_root: PathBuf,
    /// Planner mode: how each slot's frequency is applied (docs/energy.md, "Frequency
    /// backends"): cpufreq (the managed CPUs' policies on the userspace governor, the planner
    /// thread writes scaling_setspeed ahead of each slot), cpuperf (scx_bpf_cpuperf_set at each
    /// slot tick: schedutil), none (left to the kernel), or auto: cpufreq when every managed
    /// CPU's policy offers the userspace governor, else cpuperf.
    #[arg(long, value_enum, value_name = "BACKEND", default_value = "auto")]
    pub freq_backend: freq::FreqBackendArg,
    /// Planner mode: policy (default) keeps idle managed cores the way the policy is defined
    /// (bss and dvfs: polling, the paper's set-up, through each managed CPU's
    /// pm_qos_resume_latency_us, journaled and restored), kernel leaves idle states to cpuidle
    /// (docs/energy.md, "Idle control"). The live energy estimate follows the choice.
    #[arg(long, value_enum, value_name = "MODE", default_value = "policy")]
    pub idle_control: idle_ctl::IdleControlArg,
    /// Planner mode, cpufreq backend: write every scaling_setspeed write (time, slot, policy,
    /// kHz, raise or lower) to FILE at exit, one JSON object per line (docs/run-output.md).
    #[arg(long, value_name = "FILE.jsonl", requires = "planner")]
    pub freq_log: Option<PathBuf>,
    /// Planner mode with `--idle-control policy`: write every pm_qos limit set for a DPM idle
    /// period (time, CPU, the period's slots, the value) to FILE at exit, one JSON object per
    /// line (docs/run-output.md).
    #[arg(long, value_name = "FILE.jsonl", requires = "planner")]
    pub idle_log: Option<PathBuf>,
    /// Where the restore journal lives: every value scx_tt changes on the machine (cpufreq
    /// governors, limits, speeds) is journaled here before the change, restored at exit, and
    /// after a crash by the next start or `scx_tt restore`.
    #[arg(long, value_name = "DIR", default_value = scx_tt::energy::journal_file::DEFAULT_RUN_DIR)]
    pub run_dir: PathBuf,
    /// Power model (JSON, docs/energy.md) for the energy estimate when there is no RAPL, and
    /// for the frequency residency (default: the bundled models/xeon-gold-5218.json).
    #[arg(long, value_name = "FILE.json")]
    pub power_model: Option<PathBuf>,
    /// Serve the control protocol on a unix socket at PATH (mode 0600, removed at exit):
    /// status and table switches at run time (docs/control.md, `scx_tt ctl`).
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// With --control: the socket is mode 0660 with group GROUP (a name or a gid), and that
    /// group's members may use it besides root; every connection's peer credentials are
    /// checked (docs/control.md, "The socket").
    #[arg(long, value_name = "GROUP", requires = "control")]
    pub control_group: Option<String>,
    /// With --control: bring back what the control requests of an earlier run changed
    /// (admissions, removals, the policy, a table switch), from the state it journaled under
    /// --run-dir: each is asked again on the fresh state and the run says which fit and which
    /// no longer do (docs/control.md, "Restarts and --resume"). Without it an earlier state is
    /// set aside.
    #[arg(long, requires = "control")]
    pub resume: bool,
    /// Planner mode: the online slot-shifting planner under POLICY (bss, dvfs, dpm or
    /// dpm+dvfs) decides every slot a few slots ahead and rewrites the table and the slot's
    /// cpuperf target (dvfs: from --power-model's P-states if given, else 1.0-2.3 GHz in 0.1
    /// GHz steps); firm jobs are
    /// admitted and the policy swapped over --control (docs/planner.md, "Kernel path").
    #[arg(long, value_name = "POLICY")]
    pub planner: Option<Policy>,
    /// Planner mode under dpm or dpm+dvfs: let be work run in the DPM idle slots (the CPU then
    /// ticks every slot and does not sleep through the period). Default: DPM idle slots run
    /// nothing, so the core sleeps (docs/planner.md, "Kernel path", DPM).
    #[arg(long, requires = "planner")]
    pub dpm_be: bool,
    /// Planner mode: how many slots ahead of the slot clock the planner decides (1..=8, at most
    /// the frame minus 2; 2 or more keeps the guard band exact).
    #[arg(long, value_name = "L", default_value_t = 2, requires = "planner")]
    pub planner_lead_slots: u64,
    /// Planner mode: threads that step the planner, 1..=16 (for nodes with many managed CPUs):
    /// the planner thread on the plan's first housekeeping CPU and N-1 helpers, each pinned to
    /// another housekeeping CPU (one per helper: refused when the node has too few) at the
    /// planner thread's SCHED_FIFO priority. A slot that steps at least --planner-shard-min
    /// CPUs is cut into N shards stepped at once, with the same decisions as on one thread;
    /// the helpers are woken shortly before each slot tick and spin until its step, then sleep
    /// (docs/planner.md, "The step on several threads").
    #[arg(long, value_name = "N", default_value_t = 1, requires = "planner",
          value_parser = clap::value_parser!(u64).range(1..=16))]
    pub planner_threads: u64,
    /// With --planner-threads: the fewest CPUs a slot must step to be cut into shards (2..=1024;
    /// below it handing a shard over costs more than it saves).
    #[arg(long, value_name = "CPUS", default_value_t = 64, requires = "planner_threads",
          value_parser = clap::value_parser!(u64).range(2..=1024))]
    pub planner_shard_min: u64,
    /// Planner mode: decide as if every slot ran whole and no job completed early (the worst
    /// case: no reclaim) instead of reading BPF's per-slot observations (docs/planner.md,
    /// "Observations: the closed loop"). For comparison.
    #[arg(long, requires = "planner")]
    pub planner_open_loop: bool,
    /// Planner mode: at exit, write every call made on the planner (observations, the clock of
    /// each decision, admissions, removals, policy swaps) to FILE, one JSON object per line, for
    /// `scx_tt simulate --replay` (docs/planner.md, "Conformance").
    #[arg(long, value_name = "FILE.jsonl", requires = "planner")]
    pub planner_log: Option<PathBuf>,
    /// The DEmOS configuration the plan was imported from (`plan import --demos`): the run
    /// knows its windows, for -m/-M/-p (docs/demos.md). Refused unless the plan is its import.
    /// With --planner: the slots follow DEmOS's sequence (early starts on completion, BE after
    /// all SC) instead of the plan's table (docs/demos.md, "Sequenced kernel run").
    #[arg(long, value_name = "CONFIG.yaml")]
    pub demos: Option<PathBuf>,
    /// With --demos and --planner: write the sequenced run's schedule log (DEmOS's format) to
    /// FILE when the run ends.
    #[arg(long, value_name = "FILE", requires = "demos")]
    pub schedule_log: Option<PathBuf>,
    /// With --demos: how long (ms) the start-up waits for the `init: yes` processes to end
    /// their initialisation (each stops itself) before slot 0; past it the run ends with an
    /// error naming them (docs/demos.md, "Initialisation").
    #[arg(long, value_name = "MS", default_value_t = 60_000, requires = "demos")]
    pub init_timeout_ms: u64,
    /// With --demos: print MSG on stdout at each window start (DEmOS's -m).
    #[arg(short = 'm', long, value_name = "MSG", requires = "demos")]
    pub window_message: Option<String>,
    /// With --demos: print MSG on stdout at each major frame start (DEmOS's -M).
    #[arg(short = 'M', long, value_name = "MSG", requires = "demos")]
    pub mf_message: Option<String>,
    /// With --demos: DEmOS's power policy (none, minbe, low, high, per_process, per_slice),
    /// through cpufreq's userspace governor under --sysfs-root, restored at exit.
    #[arg(short = 'p', long, value_name = "POLICY", requires = "demos")]
    pub power_policy: Option<String>,
    /// Run the admission engine alone, with nothing attached (no root, no sched_ext, no BPF):
    /// the planner on its own slot clock, the tasks simulated QEMU processes, the control
    /// socket, journal and --resume the real ones (docs/cluster.md, "Simulated nodes"). Needs
    /// --planner and --control. For cluster tests: one machine runs many nodes.
    #[arg(long, requires_all = ["planner", "control"])]
    pub simulated_node: bool,
    /// Serve the node admission API `scx_tt.node/v1` (JSON over HTTP: capacity, dry run,
    /// admit, remove, watch; docs/cluster.md) on ADDR (e.g. 0.0.0.0:7443; port 0: any free
    /// port, printed at start). Its requests go through the --control socket. Needs
    /// --node-token-file.
    #[arg(long, value_name = "ADDR", requires_all = ["control", "node_token_file"])]
    pub node_api: Option<std::net::SocketAddr>,
    /// With --node-api: the bearer token clients must send, in a file only its owner may read
    /// (mode 0600).
    #[arg(long, value_name = "FILE", requires = "node_api")]
    pub node_token_file: Option<PathBuf>,
    /// With --node-api: the node's name in its answers (default: the host name).
    #[arg(long, value_name = "NAME", requires = "node_api")]
    pub node_name: Option<String>,
    /// Print what is being done.
    #[arg(short, long)]
    pub verbose: bool,
}

pub fn run(args: RunArgs) -> Result<i32> {
    if args.help_stats {
        print!("{}", scx_tt::metrics::describe());
        return Ok(0);
    }
    if let Some(secs) = args.monitor {
        return monitor::run(&args.stats_socket, secs);
    }
    let Some(path) = args.table.clone() else {
        bail!("nothing to do: give --table plan.json or a subcommand (see --help)");
    };
    let plan = match plan::from_file(&path) {
        Ok(p) => p,
        Err(e @ plan::LoadError::Invalid { .. }) => {
            eprintln!("scx_tt: {e}");
            eprintln!("scx_tt: next step: {}", plan_load_next_step(&e));
            return Ok(2);
        }
        Err(e) => bail!(
            "loading the plan: {e}; next step: {}",
            plan_load_next_step(&e)
        ),
    };
    if args.planner.is_none() && args.freq_backend != freq::FreqBackendArg::Auto {
        bail!(
            "--freq-backend {}: only planner mode (--planner) sets frequencies per slot; \
             without it use --perf-table (cpuperf)",
            args.freq_backend.name()
        );
    }
    if let (None, Some(t)) = (
        args.planner,
        plan.tasks.iter().find(|t| t.class == plan::Class::Adaptive),
    ) {
        bail!(
            "task {}: class adaptive needs planner mode: its reservation is granted at run time \
             through the planner's admission (docs/adaptive.md); next step: run with --planner \
             bss (or dvfs), or give the task class be or tt",
            t.name
        );
    }
    if let Some(policy) = args.planner {
        online::check(policy, args.planner_lead_slots, plan.frame_slots)?;
        if args.perf_table.is_some() {
            bail!(
                "--perf-table with --planner {policy}: refused (the perf table follows frame \
                 slots, the planner moves jobs between slots and writes each slot's cpuperf \
                 target itself)"
            );
        }
    }
    let plan = match demos::check(&args, &plan) {
        Err(e) => {
            eprintln!("scx_tt: {e:#}");
            return Ok(2);
        }
        // a sequenced run: the BE processes own the slots the sequencer gives them
        Ok(Some((config, _))) if args.planner.is_some() => {
            let mut plan = plan;
            let owners = scx_tt::demos::import::sequenced_plan(&mut plan, &config);
            if !owners.is_empty() {
                eprintln!(
                    "scx_tt: demos: BE processes {} own their sequenced turns (class tt)",
                    owners.join(", ")
                );
            }
            plan
        }
        Ok(_) => plan,
    };
    if args.simulated_node {
        return simulated::run(&args, &plan);
    }
    let model = load_power_model(args.power_model.as_deref())?;
    #[cfg(feature = "bpf")]
    return daemon::enforce(&args, &plan, &model);
    #[cfg(not(feature = "bpf"))]
    bail!(
        "{} ({} tasks, power model {}): this scx_tt was built without the `bpf` feature and \
         cannot enforce plans",
        path.display(),
        plan.tasks.len(),
        model.name
    )
}

/// What to do about a plan that cannot be loaded (docs/run-output.md, "Start-up").
fn plan_load_next_step(e: &plan::LoadError) -> String {
    use std::io::ErrorKind;
    match e {
        plan::LoadError::Io { source, .. } => match source.kind() {
            ErrorKind::NotFound => "give the path of an existing plan file: examples are in \
                 schedules/ (e.g. schedules/demo.json), `scx_tt plan gen` writes one \
                 (docs/plan-format.md); under the service the path is SCX_TT_TABLE in \
                 /etc/default/scx_tt"
                .to_string(),
            ErrorKind::PermissionDenied => {
                "make the plan file readable by the user scx_tt runs as (root)".to_string()
            }
            _ => "give the path of a plan file: a regular file of JSON (docs/plan-format.md)"
                .to_string(),
        },
        plan::LoadError::Invalid { path, errors } => {
            let syntax = errors
                .iter()
                .any(|e| matches!(e.rule, plan::Rule::Syntax { .. }));
            let what = if syntax {
                "the file is not valid JSON: fix it at the line and column above"
            } else {
                "fix each value named above (docs/plan-format.md states every rule)"
            };
            format!(
                "{what}; `scx_tt plan check {}` checks a plan without root or \
                 sched_ext",
                path.display()
            )
        }
    }
}

/// `--power-model FILE`, or the bundled Xeon model.
fn load_power_model(path: Option<&Path>) -> Result<PowerModel> {
    match path {
        Some(p) => {
            model::from_path(p).with_context(|| format!("loading power model {}", p.display()))
        }
        None => model::from_str(BUNDLED_MODEL).context("loading the bundled power model"),
    }
}

#[cfg(test)]
mod slot_clock_tests {
    use super::SlotClockArg;

    #[test]
    fn auto_is_the_helper_clock_exactly_on_a_preempt_rt_kernel() {
        for (arg, on_rt, on_other) in [
            (SlotClockArg::Auto, true, false),
            (SlotClockArg::Timer, false, false),
            (SlotClockArg::Rt, true, true),
        ] {
            assert_eq!(arg.is_rt(true), on_rt, "{arg:?} on PREEMPT_RT");
            assert_eq!(arg.is_rt(false), on_other, "{arg:?} elsewhere");
        }
    }
}

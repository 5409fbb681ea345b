//! `scx_tt simulate`: the planner on a virtual slot clock (docs/simulate.md).

use anyhow::{bail, Context};
use clap::Args;
use scx_tt::energy::model;
use scx_tt::plan::ServerDesign;
use scx_tt::plan::{self, LoadError};
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sim::model_power::ModelPower;
use scx_tt::sim::servers::{self, PlanServers};
use scx_tt::sim::{self, Arrival, ExecModel, SimConfig, SimReport};
use scx_tt::trace::{SlotRecord, TraceHeader};
use std::io::Write;
use std::path::PathBuf;

/// Exit code when a guaranteed job missed its deadline.
const EXIT_MISS: i32 = 3;
/// Exit code for an invalid plan or arrivals file.
const EXIT_INVALID: i32 = 2;

mod demos;
mod replay;
use replay::replay;

/// Run the slot-shifting planner over a plan without root or sched_ext.
#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Plan file (docs/plan-format.md).
    #[arg(long, required_unless_present = "demos")]
    table: Option<PathBuf>,
    /// Simulate a DEmOS configuration (YAML) with DEmOS's semantics instead of a plan, writing
    /// DEmOS's schedule log (docs/demos.md). --frames counts major frames; --seed is
    /// DEMOS_RAND_SEED for budget jitter (default 5489).
    #[arg(long, value_name = "CONFIG.yaml", conflicts_with_all = ["table", "arrivals", "replay", "trace", "json"])]
    demos: Option<PathBuf>,
    /// With --demos: write the schedule log here (default: stdout).
    #[arg(long, value_name = "FILE", requires = "demos")]
    schedule_log: Option<PathBuf>,
    /// With --demos: run this many milliseconds instead of --frames (demos-sched -t).
    #[arg(
        long,
        value_name = "MS",
        requires = "demos",
        allow_negative_numbers = true
    )]
    demos_ms: Option<u64>,
    /// With --demos: instead of simulating, write the SC lines of the schedule log of this slot
    /// trace (a kernel run's --trace, or simulate --trace) of the plan `plan import --demos`
    /// made of the configuration (docs/demos.md, "A kernel run's schedule log").
    #[arg(long, value_name = "RUN.trace.jsonl", requires = "demos")]
    from_trace: Option<PathBuf>,
    /// With --demos: write only the SC processes' lines (the ones --from-trace gives).
    #[arg(long, requires = "demos")]
    sc_only: bool,
    /// With --demos: the CPUs `cpu: all` means, as a CPU list (default: this machine's online
    /// CPUs, as DEmOS).
    #[arg(long, value_name = "LIST", requires = "demos", value_parser = scx_tt::demos::parse_cpus_flag)]
    demos_cpus: Option<scx_tt::demos::CpuSet>,
    /// With --demos: print MSG on stdout at the start of each window (DEmOS's -m).
    #[arg(
        short = 'm',
        long,
        value_name = "MSG",
        requires = "demos",
        conflicts_with = "from_trace"
    )]
    window_message: Option<String>,
    /// With --demos: print MSG on stdout at the start of each major frame, before the window's
    /// (DEmOS's -M).
    #[arg(
        short = 'M',
        long,
        value_name = "MSG",
        requires = "demos",
        conflicts_with = "from_trace"
    )]
    mf_message: Option<String>,
    /// With --demos: DEmOS's power policy (-p NAME: none, minbe, low, high, per_process,
    /// per_slice; docs/demos.md): print the cpufreq writes each event makes on stdout.
    #[arg(
        short = 'p',
        long,
        value_name = "POLICY",
        requires = "demos",
        conflicts_with = "from_trace"
    )]
    power_policy: Option<String>,
    /// With --power-policy: apply the writes to the cpufreq policies under this root (a fake
    /// sysfs tree laid out like /sys), through the userspace governor, and restore it at the
    /// end. Without it the machine's /sys is only read (its policies' frequencies).
    #[arg(long, value_name = "DIR", requires = "power_policy")]
    cpufreq_root: Option<PathBuf>,
    /// Arrivals: JSON list of {at_slot, name, kind, wcet, deadline|period, cpu?}.
    #[arg(long)]
    arrivals: Option<PathBuf>,
    /// bss | dpm | dvfs | dpm+dvfs.
    #[arg(long, default_value = "bss")]
    policy: Policy,
    /// Frames to simulate.
    #[arg(long, default_value_t = 10)]
    frames: u64,
    /// Actual execution = WCET x factor for every job (above 1: overruns, cut off at the WCET).
    #[arg(long, conflicts_with = "exec_range")]
    exec_factor: Option<f64>,
    /// Actual execution uniform in [A, B] x WCET, e.g. 0.5..1.0 (needs --seed).
    #[arg(long, requires = "seed")]
    exec_range: Option<String>,
    /// Seed of --exec-range.
    #[arg(long)]
    seed: Option<u64>,
    /// Available frequencies in MHz, comma separated (normalised to the highest);
    /// default 1000..2300 in 100 MHz steps.
    #[arg(long, value_delimiter = ',')]
    freqs_mhz: Option<Vec<u32>>,
    /// Write the per-slot trace (docs/trace-format.md) as JSON lines.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Power model for the energy estimate (docs/energy.md); default: the bundled
    /// models/xeon-gold-5218.json. Its first cluster is charged for every managed CPU.
    #[arg(long)]
    power_model: Option<PathBuf>,
    /// Replay a kernel run instead of simulating: its planner log (`scx_tt --planner-log`) on
    /// this plan (docs/planner.md, "Conformance").
    #[arg(long, value_name = "LOG.jsonl", conflicts_with_all = ["arrivals", "trace"])]
    replay: Option<PathBuf>,
    /// With --replay: the run's `--trace`; prints how many slots the kernel ran with the owner
    /// the replayed planner decided, and lists every difference.
    #[arg(long, value_name = "TRACE.jsonl", requires = "replay")]
    replay_trace: Option<PathBuf>,
    /// Server design of the local-workload section: ptps | wcps | crps (default: the plan's
    /// `server`). Only tasks with a local workload are affected (docs/servers.md).
    #[arg(long, value_name = "DESIGN")]
    server: Option<ServerDesign>,
    /// Execution-time factor of the local workloads: every local job runs F x its WCET,
    /// 0 < F <= 1.
    #[arg(long, value_name = "F", default_value = "1.0", value_parser = super::args::etf)]
    etf: f64,
}

/// The model bundled into the binary, so `simulate` reports energy without extra files.
const DEFAULT_MODEL: &str = include_str!("../../models/xeon-gold-5218.json");

/// The per-slot energy charge: the model's managed cluster; deep idle states only for the DPM
/// policies (the paper's BSS and DVFS set-ups keep cores in the shallowest state).
fn power_for(args: &SimulateArgs) -> anyhow::Result<(ModelPower, String)> {
    let m = match &args.power_model {
        Some(path) => model::from_path(path)
            .with_context(|| format!("loading power model {}", path.display()))?,
        None => model::from_str(DEFAULT_MODEL).context("the bundled power model")?,
    };
    let cluster = m
        .clusters
        .first()
        .cloned()
        .with_context(|| format!("power model {} has no cluster", m.name))?;
    let idle = args.policy.idle_governor();
    Ok((ModelPower { cluster, idle }, m.name))
}

pub fn run(args: SimulateArgs) -> anyhow::Result<i32> {
    if let Some(config) = &args.demos {
        return demos::demos(config, &args);
    }
    let table = args
        .table
        .clone()
        .context("--table is required without --demos")?;
    let plan = match load_plan(&table)? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if let Some(log) = &args.replay {
        return replay(&plan, log, args.replay_trace.as_deref());
    }
    let arrivals = match read_arrivals(args.arrivals.as_deref())? {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    let exec = exec_model(&args)?;
    let freqs = freqs_of(args.freqs_mhz.as_deref())?;
    let cfg = SimConfig {
        policy: args.policy,
        freqs,
        frames: args.frames,
        exec,
        keep_records: false,
    };
    let mut trace = TraceFile::create(args.trace.as_deref(), &plan)?;
    let (power, model_name) = power_for(&args)?;
    let mut sink = |r: &SlotRecord| trace.record(r);
    let out = sim::simulate(&plan, &arrivals, &cfg, &power, &mut sink).context("simulating")?;
    trace.finish()?;
    let local = local_workloads(&args, &plan)?;
    print_report(
        &args,
        &out.report,
        local.as_ref(),
        plan.slot_us,
        &model_name,
    )?;
    Ok(if out.report.guaranteed_misses > 0 {
        EXIT_MISS
    } else {
        0
    })
}

/// The local workloads (tasks with `local`) under the server design, after the planner's
/// run and independent of it; `None` (no section) when no task has one.
fn local_workloads(args: &SimulateArgs, plan: &plan::Plan) -> anyhow::Result<Option<PlanServers>> {
    let design = args.server.unwrap_or(plan.server);
    servers::simulate_plan(
        plan,
        design.into(),
        args.etf,
        args.frames,
        servers::DEFAULT_TICKS_PER_SLOT,
    )
    .context("simulating the local workloads")
}

/// The plan of `--table`; `Err` is the exit code of an invalid plan (its errors printed).
fn load_plan(table: &std::path::Path) -> anyhow::Result<Result<plan::Plan, i32>> {
    match plan::from_file(table) {
        Ok(p) => Ok(Ok(p)),
        Err(LoadError::Invalid { path, errors }) => {
            eprintln!("{}: invalid plan:", path.display());
            for e in errors.iter() {
                eprintln!("  {e}");
            }
            Ok(Err(EXIT_INVALID))
        }
        Err(e) => Err(e).context("loading the plan"),
    }
}

/// The arrivals of `--arrivals` (none without it); `Err` is the exit code of an invalid file
/// (the reason printed).
fn read_arrivals(path: Option<&std::path::Path>) -> anyhow::Result<Result<Vec<Arrival>, i32>> {
    let Some(path) = path else {
        return Ok(Ok(Vec::new()));
    };
    let bytes = plan::read_capped(path, sim::MAX_ARRIVALS_BYTES)
        .with_context(|| format!("reading arrivals {}", path.display()))?;
    let invalid = |why: String| {
        eprintln!("{}: invalid arrivals: {why}", path.display());
        Ok(Err(EXIT_INVALID))
    };
    if bytes.len() as u64 > sim::MAX_ARRIVALS_BYTES {
        return invalid(format!(
            "larger than {} bytes (the arrivals file limit)",
            sim::MAX_ARRIVALS_BYTES
        ));
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            return invalid(format!(
                "not UTF-8: invalid byte at offset {}",
                e.valid_up_to()
            ))
        }
    };
    match sim::parse_arrivals(text) {
        Ok(a) => Ok(Ok(a)),
        Err(e) => invalid(e.to_string()),
    }
}

/// The execution model of `--exec-range` / `--exec-factor` (the WCET without either).
fn exec_model(args: &SimulateArgs) -> anyhow::Result<ExecModel> {
    Ok(match (&args.exec_range, args.exec_factor) {
        (Some(r), _) => {
            let (lo, hi) = parse_range(r).with_context(|| format!("--exec-range {r:?}"))?;
            ExecModel::Range {
                lo,
                hi,
                seed: args.seed.unwrap_or(0),
            }
        }
        (None, Some(f)) if f > 0.0 => ExecModel::Factor(f),
        (None, Some(f)) => bail!("--exec-factor must be positive, got {f}"),
        (None, None) => ExecModel::Factor(1.0),
    })
}

/// The frequencies of `--freqs-mhz`, normalised to the highest (the Xeon default without it).
fn freqs_of(freqs_mhz: Option<&[u32]>) -> anyhow::Result<Freqs> {
    Ok(match freqs_mhz {
        Some(mhz) => {
            let mut mhz = mhz.to_vec();
            mhz.sort_unstable();
            mhz.dedup();
            let max = *mhz.last().context("--freqs-mhz is empty")? as f64;
            let norm: Vec<f64> = mhz.iter().map(|&m| m as f64 / max).collect();
            Freqs::new(&norm).context("--freqs-mhz")?
        }
        None => Freqs::xeon_default(),
    })
}

/// The `--trace` file being written: its header first, then one line per slot record; the
/// first write error is kept and reported by `finish`.
struct TraceFile {
    w: Option<std::io::BufWriter<std::fs::File>>,
    err: Option<std::io::Error>,
}

impl TraceFile {
    /// Creates the trace file (when `path` is set) and writes its header.
    fn create(path: Option<&std::path::Path>, plan: &plan::Plan) -> anyhow::Result<Self> {
        let w = match path {
            Some(path) => {
                let mut w = std::io::BufWriter::new(
                    std::fs::File::create(path)
                        .with_context(|| format!("creating trace {}", path.display()))?,
                );
                let header = TraceHeader::simulate(plan.slot_us * 1000, &plan.managed);
                serde_json::to_writer(&mut w, &header).context("writing the trace")?;
                w.write_all(b"\n").context("writing the trace")?;
                Some(w)
            }
            None => None,
        };
        Ok(TraceFile { w, err: None })
    }

    /// Writes one slot record as a JSON line, unless an earlier write failed.
    fn record(&mut self, r: &SlotRecord) {
        if let (Some(w), None) = (self.w.as_mut(), &self.err) {
            let res = serde_json::to_writer(&mut *w, r)
                .map_err(std::io::Error::from)
                .and_then(|_| w.write_all(b"\n"));
            if let Err(e) = res {
                self.err = Some(e);
            }
        }
    }

    /// The first write error, else the file flushed.
    fn finish(self) -> anyhow::Result<()> {
        if let Some(e) = self.err {
            return Err(e).context("writing the trace");
        }
        if let Some(mut w) = self.w {
            w.flush().context("writing the trace")?;
        }
        Ok(())
    }
}

/// Prints the report (with the local-workload section when there is one) as text, or as
/// JSON with `--json`.
fn print_report(
    args: &SimulateArgs,
    report: &SimReport,
    local: Option<&PlanServers>,
    slot_us: u64,
    model_name: &str,
) -> anyhow::Result<()> {
    if args.json {
        match local {
            None => println!("{}", serde_json::to_string_pretty(report)?),
            Some(l) => {
                /// The report with the local-workload section after its fields.
                #[derive(serde::Serialize)]
                struct WithServers<'a> {
                    #[serde(flatten)]
                    report: &'a SimReport,
                    servers: &'a PlanServers,
                }
                let v = WithServers { report, servers: l };
                println!("{}", serde_json::to_string_pretty(&v)?);
            }
        }
    } else {
        print!("{}", render(report, slot_us, model_name));
        if let Some(l) = local {
            print!("{}", render_servers(l));
        }
    }
    Ok(())
}

fn parse_range(s: &str) -> anyhow::Result<(f64, f64)> {
    let (a, b) = s.split_once("..").context("expected A..B")?;
    let lo: f64 = a.trim().parse().context("lower bound")?;
    let hi: f64 = b.trim().parse().context("upper bound")?;
    if !(lo > 0.0 && lo <= hi) {
        bail!("need 0 < A <= B");
    }
    Ok((lo, hi))
}

fn render(r: &SimReport, slot_us: u64, model_name: &str) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "policy {}: {} slots of {slot_us} us; guaranteed deadline misses: {}; overruns cut off: {}; jobs completed: {}; soft completed: {}",
        r.policy, r.slots, r.guaranteed_misses, r.overruns, r.completed_jobs, r.soft_completed
    );
    if !r.admissions.is_empty() {
        let _ = writeln!(s, "admissions:");
        for a in &r.admissions {
            let cpu = a.cpu.map(|c| format!(" cpu {c}")).unwrap_or_default();
            let verdict = if a.accepted { "accepted" } else { "rejected" };
            let _ = writeln!(
                s,
                "  slot {:>6} {:<8} {:<16} {verdict}{cpu}: {}",
                a.at_slot, a.kind, a.name, a.reason
            );
        }
    }
    for c in &r.cpus {
        let _ = writeln!(
            s,
            "cpu {}: utilization {:.1}% (tt {} aperiodic {} be/soft {} idle {} slots), energy {:.4} J (estimated)",
            c.cpu,
            c.utilization * 100.0,
            c.tt_slots,
            c.aperiodic_slots,
            c.be_slots,
            c.idle_slots,
            c.energy_j
        );
        let hist: Vec<String> = c
            .idle_periods
            .iter()
            .map(|(b, n)| format!("{b}..{}: {n}", 2 * b - 1))
            .collect();
        let _ = writeln!(s, "  idle periods (slots: count): {}", hist.join(", "));
        let res: Vec<String> = c
            .freq_residency
            .iter()
            .map(|(f, n)| format!("{f}: {n}"))
            .collect();
        let _ = writeln!(
            s,
            "  frequency residency (normalised: slots): {}",
            res.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "energy total: {:.4} J (estimated, power model {model_name}; managed cores only)",
        r.energy_j
    );
    s
}

/// The local-workload section (docs/simulate.md, "Local workloads").
fn render_servers(l: &PlanServers) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "local workloads: server {}, ETF {}, {} ticks a slot (docs/servers.md)",
        l.design, l.etf, l.ticks_per_slot
    );
    for c in &l.cpus {
        let r = &c.report;
        let t = r.time;
        let all = (t.owner + t.reclaimed + t.be + t.idle).max(1) as f64;
        let pct = |x: u64| 100.0 * x as f64 / all;
        let _ = writeln!(
            s,
            "cpu {}: local jobs {}, missed {}; CPU time: owner {:.1}% reclaimed {:.1}% be {:.1}% idle {:.1}%",
            c.cpu,
            r.jobs,
            r.misses,
            pct(t.owner),
            pct(t.reclaimed),
            pct(t.be),
            pct(t.idle)
        );
        for comp in &r.components {
            if comp.opaque {
                let _ = writeln!(
                    s,
                    "  {}: no local workload (taken to use all of its slots)",
                    comp.name
                );
                continue;
            }
            let _ = writeln!(
                s,
                "  {}: jobs {}, missed {}, response/deadline mean {:.3} p99 {:.3} max {:.3}; of the CPU: ran {:.1}% in its slots + {:.1}% reclaimed, its slots {:.1}% to others + {:.1}% unused",
                comp.name,
                comp.jobs,
                comp.misses,
                comp.response.mean,
                comp.response.p99,
                comp.response.max,
                pct(comp.ran_own),
                pct(comp.ran_reclaimed),
                pct(comp.given),
                pct(comp.unused)
            );
            for th in &comp.tasks {
                let _ = writeln!(
                    s,
                    "    {} (period {}, wcet {}): jobs {}, missed {}, response/deadline mean {:.3} p99 {:.3} max {:.3}",
                    th.name,
                    th.period,
                    th.wcet,
                    th.jobs,
                    th.misses,
                    th.response.mean,
                    th.response.p99,
                    th.response.max
                );
            }
        }
    }
    s
}

//! `scx_tt plan check|explain|gen|interface|import`.

use anyhow::Context;
use clap::Subcommand;
use scx_tt::demos::ConfigFile as _;
use scx_tt::plan::cpus::format_cpu_list;
use scx_tt::plan::explain::{explain, render_text};
use scx_tt::plan::gen::{generate, GenError, GenParams};
use scx_tt::plan::{self, LoadError, Plan};
use scx_tt::plan::{read_online_cpus, ONLINE_CPUS_PATH};
use scx_tt::planner::interface::{
    optimal_interface, parse_tasks, CriticalPoint, Interface, InterfaceError, Scheduler, Supply,
    Task, Workload,
};
use serde::Serialize;
use std::path::PathBuf;

/// Exit code for an invalid plan or a refused `plan gen` argument.
const EXIT_INVALID: i32 = 2;

#[derive(Subcommand, Debug)]
pub enum PlanCmd {
    /// Validate plan files; print a summary or the errors (exit 2 when any is invalid).
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Per CPU: jobs, capacity intervals with spare capacity, and the offline table.
    Explain {
        file: PathBuf,
        /// The stable JSON report of docs/plan-explain.md instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Generate a random periodic plan with UUnifast (reproducible from --seed).
    Gen(GenArgs),
    /// The optimal periodic resource interface (period, budget) of a periodic workload under
    /// its local RM or EDF scheduler (docs/plan-format.md, "Compositional interfaces").
    Interface(InterfaceArgs),
    /// Import a DEmOS configuration (YAML, canonical or simplified form) as a plan
    /// (docs/demos.md): windows → frame, SC processes → tt jobs, BE processes → be tasks.
    Import(ImportArgs),
}

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The DEmOS configuration file.
    #[arg(long, value_name = "CONFIG.yaml")]
    demos: PathBuf,
    /// Slot length in microseconds; must divide every window length and budget. Default: their
    /// gcd (at most 1 s).
    #[arg(long, allow_negative_numbers = true)]
    slot_us: Option<u64>,
    /// The CPUs `cpu: all` means, as a CPU list. Default: this machine's online CPUs but CPU 0
    /// (the housekeeping CPU).
    #[arg(long, value_name = "LIST", value_parser = scx_tt::demos::parse_cpus_flag)]
    all_cpus: Option<scx_tt::demos::CpuSet>,
    /// Write the plan here instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct InterfaceArgs {
    /// The component's tasks as "period,wcet;period,wcet;..." in slots (deadline = period).
    #[arg(long, allow_hyphen_values = true)]
    tasks: String,
    /// The component's local scheduler: rm or edf.
    #[arg(long, default_value = "rm")]
    scheduler: Scheduler,
    /// general: the budget may fall anywhere in each period (worst gap 2(period - budget));
    /// aligned: the component's releases fall on period boundaries (harmonic tasks, period
    /// dividing the smallest task period; worst gap period - budget).
    #[arg(long, default_value = "general")]
    supply: Supply,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Numeric flags take a negative value as their value (refused by the type or the range check,
/// naming the flag) rather than as an unknown argument.
#[derive(clap::Args, Debug)]
pub struct GenArgs {
    /// Number of tt tasks.
    #[arg(long, allow_negative_numbers = true)]
    tasks: usize,
    /// Total utilization of the set (sum of wcet/period over all tasks), at most --cpus.
    #[arg(long, allow_negative_numbers = true)]
    util: f64,
    /// Managed CPUs (1..=K); CPU 0 is housekeeping.
    #[arg(long, allow_negative_numbers = true)]
    cpus: u32,
    /// WCET range in slots, inclusive: A..B.
    #[arg(long, value_parser = parse_range, default_value = "1..15")]
    wcet: (u64, u64),
    /// Period range in slots, inclusive: A..B.
    #[arg(long, value_parser = parse_range, default_value = "15..50")]
    period: (u64, u64),
    /// PRNG seed; an invalid set is retried with the next seed (reported on stderr).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    /// Slot length in microseconds.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    slot_us: u64,
    /// Fix the frame: periods are drawn among its divisors. Without it the frame is the lcm of
    /// random periods, which exceeds the cap for more than a few tasks.
    #[arg(long, allow_negative_numbers = true)]
    frame_slots: Option<u64>,
    /// Write the plan here instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// `A..B` (inclusive) as `(A, B)`.
fn parse_range(text: &str) -> Result<(u64, u64), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("{text:?} is not a range A..B"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<u64>()
            .map_err(|e| format!("{x:?} in {text:?}: {e}"))
    };
    Ok((num(a)?, num(b)?))
}

pub fn run(cmd: PlanCmd) -> anyhow::Result<i32> {
    match cmd {
        PlanCmd::Check { files } => check(&files),
        PlanCmd::Explain { file, json } => {
            let Some(plan) = load(&file)? else {
                return Ok(EXIT_INVALID);
            };
            let report = explain(&plan);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", render_text(&report));
            }
            Ok(0)
        }
        PlanCmd::Gen(args) => gen(args),
        PlanCmd::Interface(args) => interface(args),
        PlanCmd::Import(args) => import(args),
    }
}

/// `plan import --demos`: exit 0 with the plan written, 2 for a configuration DEmOS (or the
/// import) refuses, with one message naming the YAML path.
fn import(a: ImportArgs) -> anyhow::Result<i32> {
    use scx_tt::demos::{self, Config, ImportOptions};
    let config = match Config::from_file(&a.demos) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("scx_tt: error: plan import: {e:#}");
            return Ok(EXIT_INVALID);
        }
    };
    let dir = a
        .demos
        .parent()
        .map(|d| {
            if d.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                d
            }
        })
        .and_then(|d| std::fs::canonicalize(d).ok());
    let opts = ImportOptions {
        slot_us: a.slot_us,
        all_cpus: a.all_cpus.unwrap_or_else(demos::import_all_cpus),
        config_dir: dir,
    };
    let imported = match demos::import(&config, &opts) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("scx_tt: error: plan import: {}: {e}", a.demos.display());
            return Ok(EXIT_INVALID);
        }
    };
    for w in &imported.warnings {
        eprintln!("plan import: warning: {w}");
    }
    let text = serde_json::to_string_pretty(&imported.raw)? + "\n";
    match &a.out {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("writing the plan to {}", path.display()))?,
        None => print!("{text}"),
    }
    eprintln!(
        "plan import: {}: {} windows, major frame {} ms = {} slots x {} us; {} tasks",
        a.demos.display(),
        config.windows.len(),
        config.major_frame_ms(),
        imported.frame_slots,
        imported.slot_us,
        imported.plan.tasks.len()
    );
    Ok(0)
}

/// `plan interface --json`: the input, Γ and the figures of the text form.
#[derive(Serialize)]
struct InterfaceReport<'a> {
    tasks: &'a [Task],
    scheduler: Scheduler,
    supply: Supply,
    harmonic: bool,
    /// Γ's period Π and budget Θ, in slots.
    period: u64,
    budget: u64,
    /// Θ/Π, U_W and U_Γ − U_W as numbers, and the first two exactly ("num/den"; U_W only
    /// when the hyperperiod is below 2^64).
    bandwidth: f64,
    bandwidth_exact: String,
    utilization: f64,
    utilization_exact: Option<String>,
    overhead: f64,
    blackout_slots: u64,
    critical_points: &'a [CriticalPoint],
    forced_by_utilization: bool,
    search_bound: u64,
    periods_examined: u64,
    evaluations: u64,
}

fn interface(a: InterfaceArgs) -> anyhow::Result<i32> {
    let computed = parse_tasks(&a.tasks).and_then(|tasks| {
        let w = Workload::new(&tasks)?;
        Ok((tasks, optimal_interface(&w, a.scheduler, a.supply)?))
    });
    let (tasks, i) = match computed {
        Ok(v) => v,
        Err(e @ InterfaceError::Internal(_)) => return Err(e).context("plan interface"),
        Err(e) => {
            eprintln!("scx_tt: error: plan interface: {e}");
            return Ok(EXIT_INVALID);
        }
    };
    if a.json {
        let report = InterfaceReport {
            tasks: &tasks,
            scheduler: i.scheduler,
            supply: i.supply,
            harmonic: i.harmonic,
            period: i.resource.period,
            budget: i.resource.budget,
            bandwidth: i.bandwidth.to_f64(),
            bandwidth_exact: i.bandwidth.to_string(),
            utilization: i.utilization,
            utilization_exact: i.utilization_exact.map(|u| u.to_string()),
            overhead: i.overhead,
            blackout_slots: i.blackout,
            critical_points: &i.critical_points,
            forced_by_utilization: i.forced_by_utilization,
            search_bound: i.search_bound,
            periods_examined: i.periods_examined,
            evaluations: i.evaluations,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", interface_text(&tasks, &i));
    }
    Ok(0)
}

fn interface_text(tasks: &[Task], i: &Interface) -> String {
    let exact = i
        .utilization_exact
        .map_or_else(|| "hyperperiod above 2^64".to_string(), |u| u.to_string());
    let mut s = format!(
        "workload: {} tasks, U_W = {:.6} ({exact}), {}harmonic; scheduler {}, supply {}\n",
        tasks.len(),
        i.utilization,
        if i.harmonic { "" } else { "not " },
        i.scheduler,
        i.supply,
    );
    s += &format!(
        "interface Γ = (period {}, budget {}) slots\n\
         bandwidth U_Γ = Θ/Π = {:.6} ({})\n\
         overhead U_Γ − U_W = {:.6}\n\
         blackout: up to {} slots without supply\n",
        i.resource.period,
        i.resource.budget,
        i.bandwidth.to_f64(),
        i.bandwidth,
        i.overhead,
        i.blackout,
    );
    s += "critical points (one slot less of budget fails here):\n";
    for c in &i.critical_points {
        let who = match c.task {
            Some(k) => format!(
                "tasks[{k}] (period {}, wcet {}): ",
                tasks[k].period, tasks[k].wcet
            ),
            None => String::new(),
        };
        s += &format!(
            "  {who}t = {}: demand {} <= supply {}\n",
            c.t, c.demand, c.supply
        );
    }
    if i.forced_by_utilization {
        s += "  and one slot less would be below U_W·Π (the long-run rate)\n";
    }
    s += &format!(
        "search: {} periods examined up to the bound {}, {} test-point evaluations\n",
        i.periods_examined, i.search_bound, i.evaluations
    );
    s
}

/// Every generated task spins, so a generated plan runs as a demo as it is.
const SPIN: [&str; 3] = ["/bin/sh", "-c", "while :; do :; done"];

fn gen(a: GenArgs) -> anyhow::Result<i32> {
    let params = GenParams {
        tasks: a.tasks,
        util: a.util,
        cpus: a.cpus,
        wcet: a.wcet,
        period: a.period,
        seed: a.seed,
        slot_us: a.slot_us,
        frame_slots: a.frame_slots,
        cmd: SPIN.iter().map(|s| s.to_string()).collect(),
    };
    let g = match generate(&params) {
        Ok(g) => g,
        Err(GenError::Params(m)) => {
            // a refused argument is an invalid input, as clap's own refusals (exit 2)
            eprintln!("scx_tt: error: plan gen: {m}");
            return Ok(EXIT_INVALID);
        }
        Err(e @ GenError::Exhausted { .. }) => return Err(e.into()),
    };
    for r in &g.retries {
        eprintln!("plan gen: {r}; retrying with the next seed");
    }
    let text = serde_json::to_string_pretty(&g.raw)? + "\n";
    match &a.out {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("writing the plan to {}", path.display()))?,
        None => print!("{text}"),
    }
    eprintln!(
        "plan gen: seed {}: {} tasks, frame {} slots, utilization per cpu {}",
        g.seed,
        g.plan.tasks.len(),
        g.plan.frame_slots,
        g.plan
            .cpus
            .iter()
            .map(|c| {
                let busy: u64 = c.jobs.iter().map(|j| j.wcet).sum();
                format!("{}:{:.3}", c.cpu, busy as f64 / g.plan.frame_slots as f64)
            })
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(0)
}

/// The plan, or `None` after printing its errors; an unreadable file is an error.
fn load(file: &PathBuf) -> anyhow::Result<Option<Plan>> {
    match plan::from_file(file) {
        Ok(p) => Ok(Some(p)),
        Err(LoadError::Invalid { path, errors }) => {
            eprintln!("{}: invalid plan:", path.display());
            for e in errors.iter() {
                eprintln!("  {e}");
            }
            Ok(None)
        }
        Err(e @ LoadError::Io { .. }) => Err(e).context("loading the plan"),
    }
}

fn check(files: &[PathBuf]) -> anyhow::Result<i32> {
    let online = read_online_cpus();
    if let Err(e) = &online {
        eprintln!("warning: cannot read {ONLINE_CPUS_PATH}: {e}; CPUs are not checked");
    }
    let mut code = 0;
    for file in files {
        let Some(plan) = load(file)? else {
            code = EXIT_INVALID;
            continue;
        };
        println!("{}: ok", file.display());
        print!("{}", summary(&plan));
        for t in plan.tasks.iter().filter(|t| !t.start.is_table()) {
            eprintln!(
                "  warning: task {:?} has start \"admitted\": it owns no slot until admitted \
                 (scx_tt --planner ... --control PATH, then `scx_tt ctl ... admit-periodic \
                 --task {}`); without --planner it never runs in slots",
                t.name, t.name
            );
        }
        if let Ok(online) = &online {
            if let Err(errs) = plan.check_cpus_exist(online) {
                for e in errs.iter() {
                    eprintln!("  warning: {e}");
                }
                eprintln!(
                    "  warning: this machine has CPUs {}; running this plan here will fail",
                    format_cpu_list(online)
                );
            }
        }
    }
    Ok(code)
}

fn summary(plan: &Plan) -> String {
    let tt = plan
        .tasks
        .iter()
        .filter(|t| t.class == scx_tt::plan::Class::Tt)
        .count();
    let mut s = format!(
        "  {} tasks ({tt} tt, {} be), frame {} slots x {} us, managed CPUs {}, housekeeping {}\n",
        plan.tasks.len(),
        plan.tasks.len() - tt,
        plan.frame_slots,
        plan.slot_us,
        format_cpu_list(&plan.managed),
        format_cpu_list(&plan.housekeeping),
    );
    for c in &plan.cpus {
        let busy: u64 = c.jobs.iter().map(|j| j.wcet).sum();
        s += &format!(
            "  cpu {}: {} jobs, utilization {:.3}, {} free slots per frame\n",
            c.cpu,
            c.jobs.len(),
            busy as f64 / plan.frame_slots as f64,
            plan.frame_slots - busy,
        );
    }
    s
}

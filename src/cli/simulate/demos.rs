//! `simulate --demos CONFIG`: a DEmOS configuration simulated with DEmOS's semantics, or the
//! schedule log of a kernel run's slot trace (docs/demos.md).

use super::replay::read_text;
use super::{SimulateArgs, EXIT_INVALID};
use anyhow::Context;
use scx_tt::demos::power::PowerPolicy;
use scx_tt::demos::ConfigFile as _;

/// `simulate --demos CONFIG`: exit 0 with the log written, 2 for a refused configuration.
pub(super) fn demos(config: &std::path::Path, args: &SimulateArgs) -> anyhow::Result<i32> {
    use scx_tt::demos::{self, Config, SimOptions};
    let c = match Config::from_file(config) {
        Ok(c) => c,
        Err(e) => return Ok(refuse(format!("{e:#}"))),
    };
    let (seed, until_ms) = match seed_and_length(&c, args) {
        Ok(v) => v,
        Err(msg) => return Ok(refuse(msg)),
    };
    let all_cpus = args.demos_cpus.unwrap_or_else(demos::machine_cpus);
    if let Some(trace) = &args.from_trace {
        return from_trace(&c, trace, all_cpus, args);
    }
    let opts = SimOptions {
        all_cpus,
        until_ms,
        seed,
    };
    let policy = match args
        .power_policy
        .as_deref()
        .map(PowerPolicy::parse)
        .transpose()
    {
        Ok(p) => p.unwrap_or(PowerPolicy::None),
        Err(e) => return Ok(refuse(format!("--power-policy: {e}"))),
    };
    let streamed = args.window_message.is_some() || args.mf_message.is_some() || policy.is_active();
    if streamed {
        return demos_stream(&c, config, args, &opts, policy);
    }
    simulate_log(&c, config, args, &opts)
}

/// Prints `msg` as simulate's error and gives the exit code of a refused configuration.
fn refuse(msg: impl std::fmt::Display) -> i32 {
    eprintln!("scx_tt: error: simulate: {msg}");
    EXIT_INVALID
}

/// The DEmOS seed (`--seed`, 32-bit) and the run's length in ms (`--demos-ms`, else
/// `--frames` major frames); `Err` holds the refusal's message.
fn seed_and_length(c: &scx_tt::demos::Config, args: &SimulateArgs) -> Result<(u32, u64), String> {
    let seed = match args.seed {
        None => scx_tt::demos::rng::Mt19937::DEFAULT_SEED,
        Some(s) => match u32::try_from(s) {
            Ok(s) => s,
            Err(_) => return Err(format!("--seed {s}: DEmOS seeds are 32-bit")),
        },
    };
    let until_ms = match args.demos_ms {
        Some(ms) => ms,
        None => match c.major_frame_ms().checked_mul(args.frames) {
            Some(ms) => ms,
            None => return Err(format!("--frames {} is too many", args.frames)),
        },
    };
    Ok((seed, until_ms))
}

/// Writes the schedule log to `--schedule-log`, or to stdout without it.
fn write_log(args: &SimulateArgs, log: String) -> anyhow::Result<()> {
    match &args.schedule_log {
        Some(path) => std::fs::write(path, log)
            .with_context(|| format!("writing the schedule log to {}", path.display())),
        None => {
            print!("{log}");
            Ok(())
        }
    }
}

/// `--from-trace`: the SC lines of the schedule log of a slot trace instead of a simulation.
fn from_trace(
    c: &scx_tt::demos::Config,
    trace: &std::path::Path,
    all_cpus: scx_tt::demos::CpuSet,
    args: &SimulateArgs,
) -> anyhow::Result<i32> {
    use scx_tt::demos;
    let text = read_text(trace, "trace")?;
    let (header, records) = scx_tt::trace::read_trace(&text)
        .map_err(|e| anyhow::anyhow!("trace {}: {e}", trace.display()))?;
    let Some(header) = header else {
        return Ok(refuse(format!(
            "trace {}: no header line (its slot length is needed)",
            trace.display()
        )));
    };
    let lines = demos::trace_log::sc_log(c, all_cpus, header.slot_ns / 1000, &records);
    write_log(args, demos::render_log(&lines))?;
    eprintln!(
        "simulate: {}: {} SC process starts in {} slot records",
        trace.display(),
        lines.len(),
        records.len()
    );
    Ok(0)
}

/// Simulates the configuration and writes its schedule log (all lines, or `--sc-only`'s).
fn simulate_log(
    c: &scx_tt::demos::Config,
    config: &std::path::Path,
    args: &SimulateArgs,
    opts: &scx_tt::demos::SimOptions,
) -> anyhow::Result<i32> {
    use scx_tt::demos;
    let r = match demos::simulate(c, opts) {
        Ok(r) => r,
        Err(e) => return Ok(refuse(format!("{}: {e}", config.display()))),
    };
    for w in &r.warnings {
        eprintln!("simulate: warning: {w}");
    }
    let log = match args.sc_only {
        true => demos::render_log(&demos::trace_log::sc_lines(c, &r.log)),
        false => demos::render_log(&r.log),
    };
    write_log(args, log)?;
    eprintln!(
        "simulate: {}: {} ms, {} process starts{}",
        config.display(),
        r.end_ms,
        r.log.len(),
        if r.all_exited {
            " (every process exited)"
        } else {
            ""
        }
    );
    Ok(0)
}

/// `simulate --demos` with `-m`/`-M`/`-p`: the messages and the power writes on stdout between
/// the schedule log's lines (when the log goes to stdout), in the order of DEmOS's events.
fn demos_stream(
    c: &scx_tt::demos::Config,
    config: &std::path::Path,
    args: &SimulateArgs,
    opts: &scx_tt::demos::SimOptions,
    policy: PowerPolicy,
) -> anyhow::Result<i32> {
    use scx_tt::demos::{self, output};
    use scx_tt::energy::sysfs::{Journal, Root};
    let root = Root::new(args.cpufreq_root.clone().unwrap_or_else(|| "/".into()));
    let journal = args
        .cpufreq_root
        .as_ref()
        .map(|_| Journal::new(root.clone()));
    let mut power = match output::Power::open(policy, c, opts.all_cpus, root, journal) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("scx_tt: error: simulate: {}: {e}", config.display());
            return Ok(EXIT_INVALID);
        }
    };
    for w in power.iter().flat_map(|p| p.engine().warnings()) {
        eprintln!("simulate: warning: {w}");
    }
    let r = match demos::simulate_events(c, opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("scx_tt: error: simulate: {}: {e}", config.display());
            return Ok(EXIT_INVALID);
        }
    };
    for w in &r.warnings {
        eprintln!("simulate: warning: {w}");
    }
    let sc = demos::trace_log::sc_lines(c, &r.log);
    let keep = |l: &demos::LogLine| !args.sc_only || sc.contains(l);
    let on_stdout = args.schedule_log.is_none();
    let text = output::render(
        c,
        &r,
        on_stdout.then_some(&keep as &dyn Fn(&demos::LogLine) -> bool),
        args.window_message.as_deref(),
        args.mf_message.as_deref(),
        power.as_mut(),
    );
    // the tree back as it was, also when a policy stopped the run
    let failed = power.map_or(0, output::Power::finish);
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            eprintln!("scx_tt: error: simulate: {}: {e}", config.display());
            return Ok(1);
        }
    };
    print!("{text}");
    if let Some(path) = &args.schedule_log {
        let log: Vec<demos::LogLine> = r.log.iter().filter(|l| keep(l)).cloned().collect();
        std::fs::write(path, demos::render_log(&log))
            .with_context(|| format!("writing the schedule log to {}", path.display()))?;
    }
    eprintln!(
        "simulate: {}: {} ms, {} process starts, {} events{}",
        config.display(),
        r.end_ms,
        r.log.len(),
        r.events.len(),
        if failed > 0 {
            format!("; {failed} cpufreq file(s) could not be restored")
        } else {
            String::new()
        }
    );
    Ok(i32::from(failed > 0))
}

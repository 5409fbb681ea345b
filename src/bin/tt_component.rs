//! tt_component: a multi-threaded real-time component for the compositional-scheduling tests
//! (seed 001; docs/plan-format.md, `interface`; tests/vm/scenarios/compositional).
//!
//! Each `--thread NAME:PERIOD_US:EXEC_US` is a periodic thread named NAME (`prctl(PR_SET_NAME)`,
//! so scx_tt's local scheduling finds its period in the plan by that name). Job k of a thread is
//! released at `t0 + k * period` (`--t0-from` scx_tt's `--trace` header, else the start), spins
//! EXEC_US of the thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`, so preemption does not
//! shorten it) and sleeps until its next release; a job released while the previous one still
//! runs starts when that one ends. Its deadline is its next release (implicit deadlines).
//!
//! Every job gets one line in `--log-prefix`NAME.log: `release_ns finish_ns` (CLOCK_MONOTONIC),
//! written by the thread itself right after the job (each thread has its own file, so no thread
//! ever waits for another's lock). The threads stop after `--duration-s`.

use anyhow::{bail, Context, Result};
use clap::Parser;
use scx_tt::clock::{first_release, monotonic_ns, sleep_until_ns, spin_cpu, t0_from};
use std::io::Write;
use std::path::PathBuf;

/// Periodic threads with fixed execution times, each logging its jobs' releases and finishes.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// A periodic thread: NAME:PERIOD_US:EXEC_US (NAME at most 15 bytes: a thread name).
    #[arg(long = "thread", required = true)]
    threads: Vec<String>,
    /// Read t0 from the `t0_ns` of the first line of this file (scx_tt's `--trace` header).
    #[arg(long)]
    t0_from: Option<PathBuf>,
    /// Stop releasing jobs after this many seconds.
    #[arg(long)]
    duration_s: f64,
    /// Each thread's log is this followed by NAME.log (`/out/run-` gives /out/run-NAME.log).
    #[arg(long)]
    log_prefix: String,
}

#[derive(Clone, Debug, PartialEq)]
struct Spec {
    name: String,
    period_ns: u64,
    exec_ns: u64,
}

fn parse_spec(text: &str) -> Result<Spec> {
    let parts: Vec<&str> = text.split(':').collect();
    let [name, period, exec] = parts.as_slice() else {
        bail!("--thread {text:?}: expected NAME:PERIOD_US:EXEC_US");
    };
    if name.is_empty() || name.len() > 15 {
        bail!("--thread {text:?}: NAME must have 1 to 15 bytes (a thread name)");
    }
    let us = |what: &str, v: &str| -> Result<u64> {
        let n: u64 = v
            .parse()
            .with_context(|| format!("--thread {text:?}: {what} {v:?} is not a number"))?;
        if n == 0 || n > 3_600_000_000 {
            bail!("--thread {text:?}: {what} {n} must be in 1..=3600000000 us");
        }
        Ok(n * 1000)
    };
    let (period_ns, exec_ns) = (us("PERIOD_US", period)?, us("EXEC_US", exec)?);
    if exec_ns > period_ns {
        bail!("--thread {text:?}: EXEC_US must not exceed PERIOD_US");
    }
    Ok(Spec {
        name: name.to_string(),
        period_ns,
        exec_ns,
    })
}

fn set_thread_name(name: &str) -> Result<()> {
    let c = std::ffi::CString::new(name).context("thread name")?;
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    if unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr(), 0, 0, 0) } != 0 {
        bail!(
            "prctl(PR_SET_NAME, {name:?}): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

fn run(spec: &Spec, t0: u64, end_ns: u64, log_prefix: &str) -> Result<u64> {
    set_thread_name(&spec.name)?;
    let path = PathBuf::from(format!("{log_prefix}{}.log", spec.name));
    let file =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let mut log = std::io::LineWriter::new(file);
    writeln!(log, "# release_ns finish_ns").context("writing the log")?;
    let mut release = first_release(t0, spec.period_ns, monotonic_ns());
    let mut jobs = 0;
    while release < end_ns {
        sleep_until_ns(release);
        spin_cpu(spec.exec_ns);
        let finish = monotonic_ns();
        writeln!(log, "{release} {finish}").context("writing the log")?;
        jobs += 1;
        release += spec.period_ns;
    }
    Ok(jobs)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let specs: Vec<Spec> = args
        .threads
        .iter()
        .map(|t| parse_spec(t))
        .collect::<Result<_>>()?;
    if !(args.duration_s > 0.0 && args.duration_s <= 86_400.0) {
        bail!("--duration-s {} must be in (0, 86400]", args.duration_s);
    }
    let t0 = match &args.t0_from {
        Some(p) => t0_from(p).map_err(anyhow::Error::msg)?,
        None => monotonic_ns(),
    };
    let end_ns = monotonic_ns() + (args.duration_s * 1e9) as u64;
    let handles: Vec<_> = specs
        .into_iter()
        .map(|spec| {
            let prefix = args.log_prefix.clone();
            std::thread::spawn(move || run(&spec, t0, end_ns, &prefix).map(|n| (spec.name, n)))
        })
        .collect();
    for h in handles {
        match h.join() {
            Ok(Ok((name, n))) => eprintln!("tt_component: {name}: {n} jobs"),
            Ok(Err(e)) => return Err(e),
            Err(_) => bail!("a thread panicked"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_refuse_with_the_rule() {
        assert_eq!(
            parse_spec("hi:40000:8000").unwrap(),
            Spec {
                name: "hi".into(),
                period_ns: 40_000_000,
                exec_ns: 8_000_000
            }
        );
        for (bad, want) in [
            ("hi:40000", "expected NAME:PERIOD_US:EXEC_US"),
            ("a-name-longer-than-15:1:1", "1 to 15 bytes"),
            ("hi:x:1", "PERIOD_US \"x\" is not a number"),
            ("hi:0:1", "must be in 1..="),
            ("hi:10:20", "must not exceed PERIOD_US"),
        ] {
            let e = parse_spec(bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}

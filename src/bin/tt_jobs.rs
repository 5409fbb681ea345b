//! tt_jobs: a periodic job workload for the job-completion tests (docs/plan-format.md,
//! `completion`; tests/vm/scenarios/completion).
//!
//! Job k is released at `t0 + k * period` (on the slot grid when `t0` is scx_tt's: `--t0-ns`,
//! or `--t0-from` a `--trace` file whose header carries it; free-running from the start
//! otherwise). Each job spins a random share of `--exec-us` of the thread's own CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`, so preemption does not shorten it), drawn uniformly from
//! `--exec-min-pct..=--exec-max-pct` with a seeded generator, and then ends by `--end`:
//!
//! - `yield`: `sched_yield()`, then wait for the next release spinning (runnable: a scheduler
//!   that honours the yield as a job end must not run it again before its next job);
//! - `block`: sleep until the next release (`--nap-us N`: in naps of N us, each wake-up a
//!   runnable thread whose job is done);
//! - `none`: spin until the next release.
//!
//! `--mid-sleep-us N`: each job sleeps N us once, halfway through its execution (a job that waits
//! for I/O midway): its thread blocks with its job unfinished and wakes N us later.
//!
//! `--overrun-release K --overrun-exec-us N`: the job released at `t0 + K * period` spins N us
//! instead of its draw (the draw is still made, so the other jobs keep theirs): one job that
//! overruns its budget, to test what a scheduler does with the jobs after it.
//!
//! A job released while the previous one still runs starts as soon as that one ends. Every job
//! gets one line in `--log`: `release_ns finish_ns exec_ns` (CLOCK_MONOTONIC ns; `finish_ns`
//! is taken right before the job's end action), so a test can judge deadlines and completions
//! from the kernel's trace and this log instead of the scheduler's report. The line is written
//! when the next job is released, not between the finish and the end action (a write there
//! would delay the yield or the block); the last job's line is lost when the process is killed.

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use scx_tt::clock::{first_release, monotonic_ns, sleep_until_ns, spin_cpu, spin_until, t0_from};
use scx_tt::plan::gen::SplitMix64;
use std::io::Write;
use std::path::PathBuf;

/// Periodic jobs of random execution time, ended by sched_yield, by blocking, or not at all.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Release period in microseconds.
    #[arg(long)]
    period_us: u64,
    /// Execution budget of a job in microseconds of thread CPU time (100 %).
    #[arg(long)]
    exec_us: u64,
    /// Smallest share of --exec-us a job runs, percent.
    #[arg(long, default_value_t = 30)]
    exec_min_pct: u64,
    /// Largest share of --exec-us a job runs, percent.
    #[arg(long, default_value_t = 100)]
    exec_max_pct: u64,
    /// Seed of the execution-time draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How a job ends.
    #[arg(long, value_enum)]
    end: End,
    /// CLOCK_MONOTONIC ns of slot 0: releases are at t0 + k * period.
    #[arg(long, conflicts_with = "t0_from")]
    t0_ns: Option<u64>,
    /// Read t0 from the `t0_ns` of the first line of this file (scx_tt's `--trace` header),
    /// waiting up to 120 s for it to appear (scx_tt writes it once attached).
    #[arg(long)]
    t0_from: Option<PathBuf>,
    /// `--end block`: sleep in naps of this many microseconds (0: one sleep per job).
    #[arg(long, default_value_t = 0)]
    nap_us: u64,
    /// Each job sleeps this many microseconds halfway through its execution (0: never).
    #[arg(long, default_value_t = 0)]
    mid_sleep_us: u64,
    /// The job released at t0 + K * period runs --overrun-exec-us instead of its draw.
    #[arg(long, requires = "overrun_exec_us")]
    overrun_release: Option<u64>,
    /// Execution time of the --overrun-release job, microseconds (may exceed --exec-us).
    #[arg(long, requires = "overrun_release")]
    overrun_exec_us: Option<u64>,
    /// Stop after this many jobs (default: run until killed).
    #[arg(long)]
    jobs: Option<u64>,
    /// One line per job: `release_ns finish_ns exec_ns`.
    #[arg(long)]
    log: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum End {
    Yield,
    Block,
    None,
}

/// The execution time of a job: `exec_ns` × a share drawn in `min_pct..=max_pct` percent, at
/// 0.01 % resolution.
fn draw_exec_ns(rng: &mut SplitMix64, exec_ns: u64, min_pct: u64, max_pct: u64) -> u64 {
    let basis_points = min_pct * 100 + rng.below((max_pct - min_pct) * 100 + 1);
    (exec_ns as u128 * basis_points as u128 / 10_000) as u64
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.period_us == 0 || args.exec_us == 0 {
        bail!("--period-us and --exec-us must be positive");
    }
    if args.exec_min_pct > args.exec_max_pct || args.exec_max_pct > 100 {
        bail!(
            "--exec-min-pct {} .. --exec-max-pct {} must be an interval within 0..=100",
            args.exec_min_pct,
            args.exec_max_pct
        );
    }
    let period = args
        .period_us
        .checked_mul(1000)
        .context("--period-us: at most u64::MAX / 1000")?;
    let exec_ns = args
        .exec_us
        .checked_mul(1000)
        .context("--exec-us: at most u64::MAX / 1000")?;
    let mid_sleep_ns = args
        .mid_sleep_us
        .checked_mul(1000)
        .context("--mid-sleep-us: at most u64::MAX / 1000")?;
    let overrun_ns = match args.overrun_exec_us {
        Some(us) => Some(
            us.checked_mul(1000)
                .context("--overrun-exec-us: at most u64::MAX / 1000")?,
        ),
        None => None,
    };
    let file = std::fs::File::create(&args.log)
        .with_context(|| format!("creating {}", args.log.display()))?;
    let mut log = std::io::LineWriter::new(file);
    writeln!(log, "# release_ns finish_ns exec_ns").context("writing the log")?;
    let t0 = match (&args.t0_from, args.t0_ns) {
        (Some(p), _) => t0_from(p).map_err(anyhow::Error::msg)?,
        (None, Some(t0)) => t0,
        (None, None) => monotonic_ns(),
    };
    let overrun_at = args
        .overrun_release
        .map(|k| {
            k.checked_mul(period)
                .and_then(|d| d.checked_add(t0))
                .context("--overrun-release: t0 + K * period overflows u64 ns")
        })
        .transpose()?;
    let mut rng = SplitMix64::new(args.seed);
    let mut release = first_release(t0, period, monotonic_ns());
    let mut done = 0u64;
    // the previous job's line, written once the next job is released
    let mut pending: Option<(u64, u64, u64)> = None;
    while args.jobs.is_none_or(|n| done < n) {
        sleep_until_ns(release);
        if let Some((r, f, e)) = pending.take() {
            writeln!(log, "{r} {f} {e}").context("writing the log")?;
        }
        let drawn = draw_exec_ns(&mut rng, exec_ns, args.exec_min_pct, args.exec_max_pct);
        let exec = match (overrun_at, overrun_ns) {
            (Some(at), Some(ns)) if at == release => ns,
            _ => drawn,
        };
        match mid_sleep_ns {
            0 => spin_cpu(exec),
            ns => {
                spin_cpu(exec / 2);
                sleep_until_ns(monotonic_ns().saturating_add(ns));
                spin_cpu(exec - exec / 2);
            }
        }
        let finish = monotonic_ns();
        pending = Some((release, finish, exec));
        done += 1;
        let next = release.saturating_add(period);
        match args.end {
            End::Yield => {
                // SAFETY: no arguments.
                unsafe { libc::sched_yield() };
                spin_until(next);
            }
            End::Block if args.nap_us > 0 => {
                while monotonic_ns() < next {
                    sleep_until_ns(next.min(monotonic_ns() + args.nap_us * 1000));
                }
            }
            End::Block => sleep_until_ns(next),
            End::None => spin_until(next),
        }
        release = next;
    }
    if let Some((r, f, e)) = pending {
        writeln!(log, "{r} {f} {e}").context("writing the log")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_on_the_grid_at_or_after_now() {
        assert_eq!(first_release(1_000, 100, 500), 1_000);
        assert_eq!(first_release(1_000, 100, 1_000), 1_000);
        assert_eq!(first_release(1_000, 100, 1_001), 1_100);
        assert_eq!(first_release(1_000, 100, 1_250), 1_300);
    }

    #[test]
    fn execution_draws_stay_in_the_share_and_follow_the_seed() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1_000 {
            let x = draw_exec_ns(&mut a, 20_000_000, 30, 100);
            assert!((6_000_000..=20_000_000).contains(&x), "{x}");
            assert_eq!(x, draw_exec_ns(&mut b, 20_000_000, 30, 100));
        }
        // a single share is exact
        assert_eq!(draw_exec_ns(&mut a, 1_000, 50, 50), 500);
    }
}

//! VM test, issue 18 items 2-3: a DEmOS configuration on the kernel path. `demos.yaml` (this
//! folder) is imported with `scx_tt plan import --demos` and enforced by scx_tt on CPU 1
//! (`-smp 2`, 10 ms slots, major frame 150 ms): SC1's two busy processes own [0, 30) and
//! [30, 50) ms of the 100 ms window, SC2's one [100, 140) ms of the 50 ms window, BE1 the rest.
//!
//! Checked:
//!   - the import succeeds and warns that BE budgets are not in the plan format;
//!   - the SC schedule log of the kernel run (`simulate --demos --from-trace` of the run's
//!     trace) equals DEmOS's own (`simulate --demos --sc-only`, DEmOS's semantics, itself
//!     checked against DEmOS's golden schedules) line for line over the run;
//!   - the times: each logged start from the second second on, against the kernel's own switch
//!     trace (the witness): the process's thread first runs at most [`START_P99_NS`] after the
//!     logged time at the 99th percentile and [`START_MAX_NS`] at worst (TCG: ticks come late
//!     by up to a few ms; timing checks), and never before it;
//!   - the witness's own checks: every SC process runs only in its slots, nothing foreign on
//!     CPU 1, be work never over a waiting owner.

use crate::harness::{Checks, Vm, VmOutput};
use crate::witness;

const RUN: &str = "demos";
/// A logged start that the thread's first run may follow by, at the 99th percentile (TCG tick
/// lateness; measured on a quiet host: p99 below 1 ms, on a host loaded 2.5-4.5 by other VM
/// runs and builds 3.7-10.8 ms over 9 boots, 2026-11-27): the bound of demos_golden, set on a
/// loaded host, so that a loaded CI host does not fail it three times over.
const START_P99_NS: u64 = 12_000_000;
/// ... and at worst (a host hiccup).
const START_MAX_NS: u64 = 30_000_000;
/// The shortest window of `demos.yaml` (SC2's, 50 ms).
const WINDOW_MIN_NS: i64 = 50_000_000;

/// (time ms, cmd) of the schedule log `text`.
fn lines(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter_map(|l| {
            let (t, rest) = l.split_once(": ")?;
            let cmd = rest.split("cmd='").nth(1)?.split("' budget=").next()?;
            Some((t.trim().parse().ok()?, cmd.to_string()))
        })
        .collect()
}

fn check(out: &VmOutput, c: &mut Checks) {
    let import = out.file("import.err").unwrap_or_default();
    println!("--- import:\n{}", import.trim());
    c.check(
        out.number("import_rc").ok() == Some(0)
            && import.contains("BE partition 'BE1': budgets, sequencing and carry-over"),
        "plan import --demos succeeds and says what the plan format cannot state".to_string(),
    );
    let sim = out.file("sim.log").unwrap_or_default();
    let kernel = out.file("kernel.log").unwrap_or_default();
    let (s, k) = (lines(&sim), lines(&kernel));
    let summary = match out.summary(&format!("{RUN}.json")) {
        Ok(s) => s,
        Err(e) => return c.check(false, format!("summary: {e}")),
    };
    summary.print("the imported demos.yaml");
    // the run's trace covers whole slots up to its end: compare up to the last logged start
    let end_ms = summary.duration_ns / 1_000_000;
    let s_run: Vec<&(u64, String)> = s.iter().filter(|l| l.0 + 150 <= end_ms).collect();
    let k_run: Vec<&(u64, String)> = k.iter().filter(|l| l.0 + 150 <= end_ms).collect();
    let first_diff = s_run.iter().zip(&k_run).position(|(a, b)| a != b);
    println!(
        "  SC log lines within the run: simulate --demos {}, the kernel's {}; first difference \
         at line {first_diff:?}",
        s_run.len(),
        k_run.len()
    );
    let equal = out.number("kernel_log_rc").ok() == Some(0)
        && s_run.len() >= 90
        && s_run == k_run
        && sim.lines().take(k_run.len()).collect::<Vec<_>>()
            == kernel.lines().take(k_run.len()).collect::<Vec<_>>();
    let what = format!(
        "the kernel run's SC schedule log equals DEmOS's own line for line ({} lines)",
        k_run.len()
    );
    // A guest the host stalled for a whole window (the shortest is 50 ms) cannot run that
    // window: its starts are missing from the kernel's log, which then measures the host, not
    // the sequencing. Seen once under stress-ng (2026-12-07: a tick 99.9 ms late, the window at
    // 4650 ms missing, every other line equal). Only then is the equality a timing check (the
    // harness measures it again); otherwise it is exact.
    let stall_ns = summary
        .cpus
        .iter()
        .filter(|c| c.managed)
        .map(|c| c.late_ns.max)
        .max()
        .unwrap_or(0);
    match stall_ns >= WINDOW_MIN_NS {
        true => {
            println!(
                "  a managed CPU's tick came {:.1} ms late (a whole window): the log equality is \
                 judged as timing",
                stall_ns as f64 / 1e6
            );
            c.check_timing(equal, what)
        }
        false => c.check(equal, what),
    }
    // the times, by the witness
    let events = match out
        .file(&format!("{RUN}.witness"))
        .and_then(|t| witness::parse(&t).map_err(|e| e.to_string()))
    {
        Ok(e) => e,
        Err(e) => return c.check(false, format!("witness: {e}")),
    };
    let run_end = summary.t0_ns + summary.duration_ns;
    let segments = witness::segments(&events, run_end);
    let pid_of = |cmd: &str| -> Option<u32> {
        let tag = cmd.rsplit("# ").next()?;
        let name = match tag {
            "sc1a" => "SC1.0",
            "sc1b" => "SC1.1",
            "sc2" => "SC2.0",
            _ => return None,
        };
        summary
            .tasks
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.tids.first().copied())
    };
    let mut delays = Vec::new();
    let mut early = 0;
    for (t, cmd) in k_run.iter().filter(|l| l.0 >= 1000) {
        let Some(pid) = pid_of(cmd) else { continue };
        let at = summary.t0_ns + t * 1_000_000;
        // its first run from the logged start on (or one that began just before it)
        let first = segments
            .iter()
            .filter(|g| g.pid == pid && g.cpu == 1 && g.end > at)
            .map(|g| g.start)
            .min();
        match first {
            Some(s) if s + 100_000 < at => early += 1,
            Some(s) => delays.push(s.saturating_sub(at)),
            None => delays.push(u64::MAX),
        }
    }
    delays.sort_unstable();
    let pct = |p: f64| -> u64 {
        delays
            .get(((delays.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(u64::MAX)
    };
    let (p50, p99, max) = (
        pct(0.5),
        pct(0.99),
        delays.last().copied().unwrap_or(u64::MAX),
    );
    println!(
        "  logged starts vs the witness ({} starts from 1 s): first run after the logged time p50 \
         {:.3} ms, p99 {:.3} ms, max {:.3} ms; {early} ran before it",
        delays.len(),
        p50 as f64 / 1e6,
        p99 as f64 / 1e6,
        max as f64 / 1e6
    );
    c.check(
        delays.len() >= 60 && early == 0,
        format!(
            "every logged SC start is a real start: the thread did not run before it ({early})"
        ),
    );
    c.check_timing(
        p99 <= START_P99_NS && max <= START_MAX_NS,
        format!(
            "the SC processes start on time: p99 {:.3} ms <= {:.1} ms, max {:.3} ms <= {:.1} ms",
            p99 as f64 / 1e6,
            START_P99_NS as f64 / 1e6,
            max as f64 / 1e6,
            START_MAX_NS as f64 / 1e6
        ),
    );
    witness::check(c, out, RUN, &witness::Bounds::default());
    out.check_clean_exit(c, RUN);
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn an_imported_demos_configuration_runs_its_schedule_on_the_kernel_path() {
    Vm::new("demos").smp(2).timeout_s(300).check(check);
}

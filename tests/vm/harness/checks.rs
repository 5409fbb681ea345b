//! `Checks`, the timing retries and the host calibration.

use super::*;

/// Checks with their measured figures, printed either way; collects failures so a test reports
/// all of them at once. Timing checks (bounds on figures that host noise can move) are kept
/// apart from exact ones, so a test may measure again when only timing checks failed.
#[derive(Default)]
pub struct Checks {
    failures: Vec<String>,
    timing_failures: Vec<String>,
    /// The largest median lateness of the scheduler's BPF timers the witness measured in this
    /// measurement, from the kernel's own hrtimer trace (not scx_tt's records): how slow the
    /// emulated platform was ([`NOISY_TIMER_P50_NS`]).
    timer_late_p50_ns: Option<u64>,
}

impl Checks {
    pub fn check(&mut self, ok: bool, what: String) {
        println!("  [{}] {what}", if ok { "ok" } else { "FAIL" });
        if !ok {
            self.failures.push(what);
        }
    }

    pub fn check_timing(&mut self, ok: bool, what: String) {
        println!("  [{}] {what}", if ok { "ok" } else { "FAIL (timing)" });
        if !ok {
            self.timing_failures.push(what);
        }
    }

    /// Every failure, exact ones first.
    pub fn failures(&self) -> Vec<String> {
        self.failures
            .iter()
            .chain(&self.timing_failures)
            .cloned()
            .collect()
    }

    /// Notes a median timer lateness the witness measured (the largest of a measurement counts).
    pub fn note_timer_late_p50(&mut self, ns: u64) {
        self.timer_late_p50_ns = Some(self.timer_late_p50_ns.map_or(ns, |x| x.max(ns)));
    }

    /// The platform was too slow to judge timing: the witness measured a median timer lateness
    /// of at least [`NOISY_TIMER_P50_NS`].
    pub(super) fn platform_too_slow(&self) -> bool {
        self.timer_late_p50_ns
            .is_some_and(|x| x >= NOISY_TIMER_P50_NS)
    }

    /// Only timing checks failed.
    pub fn only_timing_failed(&self) -> bool {
        self.failures.is_empty() && !self.timing_failures.is_empty()
    }

    pub fn finish(self) {
        if self.only_timing_failed() && host_too_slow() {
            ledger::note(|l| l.timing_not_judged = true);
            println!(
                "--- TIMING NOT JUDGED: only timing bounds were missed, on a host {:.2} times \
                 slower than the reference by the guest's calibration (>= {SLOW_HOST_FACTOR}: \
                 the bounds were measured on the reference host). Missed: {}",
                host_factor().unwrap_or_default(),
                self.timing_failures.join("; ")
            );
            return;
        }
        let all = self.failures();
        assert!(all.is_empty(), "failed checks:\n  {}", all.join("\n  "));
    }
}

/// How many times a scenario with timing bounds is measured at most. A TCG guest on this
/// 2-core, itself virtualised, machine sometimes loses its vCPU threads for 5-40 ms at a time
/// (host steal); a 10 s measurement then misses a timing bound although the scheduler did
/// nothing wrong. Seen in about 1 measurement of 4 on a bad stretch, so three measurements
/// make a false failure rare (docs/vm-harness.md).
pub const TIMING_TRIES: u32 = 3;

/// A measurement whose slot timers came this late or later at the median, by the kernel's own
/// hrtimer trace (the witness), ran on a host too slow or too loaded for the timing bounds: on
/// this machine the median is 65-285 us (tick callback 40-50 us); a CI host that failed every
/// timing bound three times over had slot-tick medians of 460-930 us and 190 us tick callbacks
/// (scx_tt's records; 2026-11-22). When every measurement only missed timing bounds and every
/// one was that slow, the timing failures are printed as not judged and the test passes on its
/// exact checks; the figures stay printed (docs/vm-harness.md, "Timing bounds").
pub const NOISY_TIMER_P50_NS: u64 = 400_000;

/// The guest's calibration (tests/vm/guest/init: the median of three `dd | sha256sum` of
/// 4 MiB, user-space CPU time under TCG, before the scenario) on the reference host: this
/// project's 2-core machine (2026-11-29: 390-430 ms with parallel builds beside at load 4-5;
/// 870-1170 ms with `SCX_TT_VM_CPU_PERCENT=130`).
pub const CALIBRATION_REFERENCE_MS: f64 = 400.0;

/// A host whose guest calibration took this many times the reference's or more is too slow for
/// the timing bounds, which were measured on the reference host: a measurement there that
/// missed only timing bounds is printed as not judged, at once (no second boot), and the test
/// passes on its exact checks. A CI host missed timing bounds in 10 VM tests three times over
/// (2026-11-28); `SCX_TT_VM_CPU_PERCENT` reproduces such a host (tests/vm/run.sh).
pub const SLOW_HOST_FACTOR: f64 = 1.25;

thread_local! {
    /// The slowest calibration factor of this test's boots (libtest runs each test in a thread
    /// of its own).
    static HOST_FACTOR: std::cell::Cell<Option<f64>> = const { std::cell::Cell::new(None) };
}

/// Reads a boot's calibration line, prints it against the reference and keeps the slowest of
/// the test's boots.
pub(super) fn note_calibration(console: &str) {
    let ms = console
        .lines()
        .filter_map(|l| l.strip_prefix("=== tt-vm: calibration sha256_4mib_ms="))
        .filter_map(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .next_back();
    let Some(ms) = ms else { return };
    let factor = (CALIBRATION_REFERENCE_MS > 0.0).then(|| ms / CALIBRATION_REFERENCE_MS);
    eprintln!(
        "vm: host calibration: 4 MiB sha256 in the guest took {ms:.0} ms (reference host \
         {CALIBRATION_REFERENCE_MS:.0} ms: factor {}; timing bounds judged below {SLOW_HOST_FACTOR})",
        factor.map_or("-".to_string(), |f| format!("{f:.2}"))
    );
    if let Some(f) = factor {
        HOST_FACTOR.with(|h| h.set(Some(h.get().map_or(f, |x: f64| x.max(f)))));
    }
}

/// The slowest calibration factor of this test's boots so far.
pub fn host_factor() -> Option<f64> {
    HOST_FACTOR.with(|h| h.get())
}

/// This test's host is too slow for the timing bounds ([`SLOW_HOST_FACTOR`]).
pub fn host_too_slow() -> bool {
    host_factor().is_some_and(|f| f >= SLOW_HOST_FACTOR)
}

/// Measures with `measure` (given a label per try) until a measurement passes, fails an exact
/// check (never measured again), or TIMING_TRIES measurements failed only timing bounds; the last
/// measurement decides and every one is printed.
pub fn measure_until_settled(label: &str, measure: impl Fn(&str) -> Checks) {
    ledger::note(|_| {});
    let mut c = measure(label);
    let mut all_slow = c.platform_too_slow();
    for k in 2..=TIMING_TRIES {
        if !c.only_timing_failed() || host_too_slow() {
            break;
        }
        println!(
            "--- only timing bounds failed ({}); measuring again ({k} of {TIMING_TRIES})",
            c.failures().join("; ")
        );
        ledger::note(|l| l.remeasured += 1);
        c = measure(&format!("{label}-try{k}"));
        all_slow &= c.platform_too_slow();
    }
    if c.only_timing_failed() && all_slow {
        ledger::note(|l| l.timing_not_judged = true);
        println!(
            "--- TIMING NOT JUDGED: every one of {TIMING_TRIES} measurements missed only timing \
             bounds, and in each the scheduler's timers came >= {} us late at the median by the \
             kernel's trace: this host is too slow for the bounds (NOISY_TIMER_P50_NS). Missed: {}",
            NOISY_TIMER_P50_NS / 1000,
            c.failures().join("; ")
        );
        return;
    }
    c.finish();
}

//! The bounds a scenario judges with, and the report of a run against them.

use super::*;

/// Bounds of the witness checks a scenario chooses.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// pids placed on managed CPUs on purpose
    pub allowed: Vec<u32>,
    /// a tt task's run time outside its own slots, share of its run time (timing)
    pub outside_share: f64,
    /// per task, windows in which its job is over by the workload's own log ([`Frame::done`])
    pub done: HashMap<String, Vec<(u64, u64)>>,
    /// per adaptive task, windows in which BPF had it in class be ([`Frame::be_class`])
    pub be_class: HashMap<String, Vec<(u64, u64)>>,
    /// per task admitted at run time, when it joined the plan ([`Frame::joined`])
    pub joined: HashMap<String, u64>,
    /// per task removed at run time, when it left the plan ([`Frame::left`])
    pub left: HashMap<String, (u64, u64)>,
    /// per task admitted at run time, when BPF registered it ([`Frame::joining`])
    pub joining: HashMap<String, (u64, u64)>,
    /// share of the tt records whose `ran_ns` may differ from the witness by more than
    /// [`agreement_tol_ns`] (timing: the host descheduling the vCPU thread between
    /// ops.running and the trace point, both inside one __schedule, makes the record give the
    /// stall to the owner and the witness to the task before it; docs/vm-harness.md)
    pub disagree_share: f64,
    /// Judge [`Report::tt_over_owner`] (exact; the default): no thread of a tt task starts in
    /// another owner's slot after its tick while that owner waits. `false` only prints it.
    pub tt_starts: bool,
    /// The run's slot clock was scx_tt's helper threads (`--slot-clock rt`): judge (exact)
    /// that no BPF timer fired and that each managed CPU's clock thread ran, on that CPU only
    /// (elsewhere it is foreign time).
    pub rt_clock: bool,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            allowed: Vec::new(),
            done: HashMap::new(),
            be_class: HashMap::new(),
            joined: HashMap::new(),
            left: HashMap::new(),
            joining: HashMap::new(),
            outside_share: 0.05,
            disagree_share: 0.02,
            tt_starts: true,
            rt_clock: false,
        }
    }
}

/// The `p` quantile of `sorted` (nearest rank), 0 when empty.
pub fn quantile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        0
    } else {
        sorted[((sorted.len() - 1) as f64 * p).round() as usize]
    }
}

/// ns as ms.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Reads the witness of run `run` and checks it (exact: nothing foreign, no plan task on a
/// housekeeping CPU, no be start over a waiting owner, nothing lost; timing: outside share,
/// record agreement). Prints every figure. Returns the analysis (None when the witness could not
/// be read, which is a failed check) for a caller's checks that derive a bound from it.
pub fn check(c: &mut Checks, out: &VmOutput, run: &str, b: &Bounds) -> Option<Report> {
    let (summary, trace) = (format!("{run}.json"), format!("{run}.trace.jsonl"));
    check_files(c, out, run, &summary, &trace, b)
}

/// [`check`] for a run whose summary and trace have other names than `RUN.json` and
/// `RUN.trace.jsonl` (the witness is `RUN.witness` either way).
pub fn check_files(
    c: &mut Checks,
    out: &VmOutput,
    run: &str,
    summary: &str,
    trace: &str,
    b: &Bounds,
) -> Option<Report> {
    let lost = out.number(&format!("{run}_witness_lost"));
    c.check(
        lost == Ok(0),
        format!("{run}: witness: ftrace lost no event (lost {lost:?})"),
    );
    let (f, events) = match frame(out, run, summary, trace, &b.allowed).and_then(|f| {
        let text = out.file(&format!("{run}.witness"))?;
        Ok((f, parse(&text).map_err(|e| format!("{run}.witness: {e}"))?))
    }) {
        Ok(x) => x,
        Err(e) => {
            c.check(false, format!("{run}: witness: {e}"));
            return None;
        }
    };
    let mut f = f;
    f.done = b.done.clone();
    f.be_class = b.be_class.clone();
    f.joined = b.joined.clone();
    f.left = b.left.clone();
    f.joining = b.joining.clone();
    let r = f.analyse(&events);
    report(c, run, &f, &r, b);
    Some(r)
}

/// The checks and figures of one analysed witness.
pub fn report(c: &mut Checks, run: &str, f: &Frame, r: &Report, b: &Bounds) {
    println!(
        "  {run}: witness: {} events, t0 {} ns, slot {} us, window {:.2} s, {} (CPU, slot)s without a record, {:.3} s marked paused",
        r.events,
        f.t0_ns,
        f.slot_ns / 1000,
        (f.end_ns - f.t0_ns) as f64 / 1e9,
        r.unrecorded_slots,
        r.paused_ns as f64 / 1e9
    );
    c.check(
        r.events > 0,
        format!("{run}: witness: events recorded ({})", r.events),
    );
    for (cpu, ns) in &r.foreign_ns {
        c.check(
            *ns == 0,
            format!(
                "{run}: witness: CPU {cpu}: nothing outside the plan ran but kthreads \
                 ({:.3} ms per-CPU kthreads, {:.3} ms other kthreads, {:.3} ms declared, {:.3} ms \
                 scx_tt, {:.3} ms in {} runs of its slot clock thread, {:.3} ms in a higher class{}, \
                 foreign {:.3} ms{})",
                ms(r.kthread_ns.get(cpu).copied().unwrap_or(0)),
                ms(r.other_kthread_ns.get(cpu).copied().unwrap_or(0)),
                ms(r.allowed_ns.get(cpu).copied().unwrap_or(0)),
                ms(r.loader_ns.get(cpu).copied().unwrap_or(0)),
                ms(r.clock_ns.get(cpu).copied().unwrap_or(0)),
                r.clock_runs.get(cpu).copied().unwrap_or(0),
                ms(r.higher_class_ns.get(cpu).copied().unwrap_or(0)),
                if r.higher_class_ns.get(cpu).is_some_and(|&n| n > 0) {
                    format!(" {:?}", r.higher_class_top)
                } else {
                    String::new()
                },
                ms(*ns),
                if *ns > 0 {
                    format!(": {:?}; {}", r.foreign_top, r.foreign_how.join(" | "))
                } else {
                    String::new()
                }
            ),
        );
    }
    if b.rt_clock {
        c.check(
            r.bpf_timers == 0,
            format!(
                "{run}: witness: no BPF timer fired under the helper-thread clock ({} expiries)",
                r.bpf_timers
            ),
        );
        for cpu in &f.managed {
            let (runs, ns) = (
                r.clock_runs.get(cpu).copied().unwrap_or(0),
                r.clock_ns.get(cpu).copied().unwrap_or(0),
            );
            c.check(
                runs > 0,
                format!(
                    "{run}: witness: CPU {cpu}'s slot clock thread ran there {runs} times, {:.3} ms \
                     in all ({:.1} us a run)",
                    ms(ns),
                    ns as f64 / 1e3 / runs.max(1) as f64
                ),
            );
        }
    }
    for (t, fig) in &r.tt {
        c.check(
            fig.off_managed_ns == 0,
            format!(
                "{run}: witness: {t} never ran on a housekeeping CPU after t0 ({:.3} ms)",
                ms(fig.off_managed_ns)
            ),
        );
        let own = fig.outside_ns - fig.late_timer_ns;
        let share = own as f64 / fig.run_ns.max(1) as f64;
        c.check_timing(
            share <= b.outside_share,
            format!(
                "{run}: witness: {t} ran {:.1} ms, {:.1} ms in its slots, {:.2} ms ({:.2} %) in \
                 other slots: {:.2} ms before the scheduler's late timer fired (+{} us), {:.2} ms \
                 ({:.2} %) the scheduler's (bound {:.1} %)",
                ms(fig.run_ns),
                ms(fig.inside_ns),
                ms(fig.outside_ns),
                100.0 * fig.outside_ns as f64 / fig.run_ns.max(1) as f64,
                ms(fig.late_timer_ns),
                KICK_NS / 1000,
                ms(own),
                100.0 * share,
                100.0 * b.outside_share
            ),
        );
    }
    let worst: Vec<_> = r.be_over_owner.iter().take(3).collect();
    c.check(
        r.be_over_owner.is_empty(),
        format!(
            "{run}: witness: no be task started while the slot's owner waited runnable >= {} us \
             ({} starts, {:.3} ms of be run after them; {} starts within the race window, {} \
             after the owner's job was over by its own log, {} over an adaptive owner in class be, \
             {} before the slot's late tick, {} of an adaptive task in class tt: judged by its \
             outside share){}",
            RACE_NS / 1000,
            r.be_over_owner.len(),
            ms(r.be_over_owner.iter().map(|b| b.ran_ns).sum()),
            r.be_near_race,
            r.be_after_done,
            r.be_over_be_class,
            r.be_before_tick,
            r.adaptive_in_tt,
            if worst.is_empty() {
                String::new()
            } else {
                format!(": first {worst:?}")
            }
        ),
    );
    let tt_what =
        format!(
        "{run}: witness: no thread of a tt task started in another owner's slot after its tick \
         while that owner waited runnable >= {} us ({} starts, {:.3} ms of run after them){}",
        RACE_NS / 1000,
        r.tt_over_owner.len(),
        ms(r.tt_over_owner.iter().map(|b| b.ran_ns).sum()),
        if r.tt_over_owner.is_empty() {
            String::new()
        } else {
            format!(": first {:?}", r.tt_over_owner.iter().take(3).collect::<Vec<_>>())
        }
    );
    if b.tt_starts {
        c.check(r.tt_over_owner.is_empty(), tt_what);
    } else {
        println!("  {tt_what} (printed, not judged here)");
    }
    let (mut tick_late, mut kick) = (r.tick_late.clone(), r.kick.clone());
    tick_late.sort_unstable();
    kick.sort_unstable();
    let us = |v: &[u64], p: f64| quantile(v, p) as f64 / 1e3;
    println!(
        "  {run}: witness: {} BPF timer expiries in the kernel's trace; the slot's timer after its \
         start p50 {:.1} us, p99 {:.1} us, max {:.1} us over {} boundaries; ending owners ran on \
         after the enforcing timer p50 {:.1} us, p99 {:.1} us, max {:.1} us ({} runs, {} us \
         allowed)",
        r.timers,
        us(&tick_late, 0.5),
        us(&tick_late, 0.99),
        us(&tick_late, 1.0),
        tick_late.len(),
        us(&kick, 0.5),
        us(&kick, 0.99),
        us(&kick, 1.0),
        kick.len(),
        KICK_NS / 1000
    );
    if !tick_late.is_empty() {
        c.note_timer_late_p50(tick_late[(tick_late.len() - 1) / 2]);
    }
    let tol = agreement_tol_ns(f.slot_ns);
    let tol_of = |switches: u64, late: u64| tol + PER_SWITCH_TOL_NS * switches + late;
    let mut abs: Vec<u64> = r.diffs.iter().map(|d| d.2.unsigned_abs()).collect();
    abs.sort_unstable();
    let pct = |p: f64| quantile(&abs, p);
    let over: Vec<_> = r
        .diffs
        .iter()
        .filter(|d| d.2.unsigned_abs() > tol_of(d.3, d.4))
        .collect();
    let share = over.len() as f64 / r.diffs.len().max(1) as f64;
    c.check(
        !r.diffs.is_empty(),
        format!("{run}: witness: tt records to compare ({})", r.diffs.len()),
    );
    c.check_timing(
        share <= b.disagree_share,
        format!(
            "{run}: witness: record owner_ns vs witness over {} tt records: |diff| p50 {:.1} us, \
             p99 {:.1} us, max {:.1} us; {} ({:.2} %) beyond {} us + {} us per switch in the \
             slot + the lateness of the scheduler's timer at its start and end (kernel trace) \
             (bound {:.1} %){}; slot 0 (not judged) {:?}",
            r.diffs.len(),
            pct(0.5) as f64 / 1e3,
            pct(0.99) as f64 / 1e3,
            abs.last().copied().unwrap_or(0) as f64 / 1e3,
            over.len(),
            100.0 * share,
            tol / 1000,
            PER_SWITCH_TOL_NS / 1000,
            100.0 * b.disagree_share,
            if over.is_empty() {
                String::new()
            } else {
                format!(
                    ": first (cpu, slot, record - witness ns, switches, timer lateness ns) {:?}",
                    &over[..over.len().min(5)]
                )
            },
            r.slot0
        ),
    );
}

//! Which slots each task took, from the witness, for the scenarios' own checks.

use super::*;

/// The time that the kernel's own threads (per-CPU ones by name, and every child of kthreadd)
/// and scx_tt's slot clock thread (`tt-clock/N`) ran on the managed CPUs, by the witness: time
/// no task could have, whatever the scheduler decides. On PREEMPT_RT kernels it is several % of
/// a CPU (interrupts and softirqs run as threads; the clock thread wakes every slot), on the
/// cloud kernel a fraction of 1 %. A delivered-share bound subtracts its share of the planned
/// time ([`Taken::bound`]), so that the bound is derived from the run it judges.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Taken {
    pub kthread_ns: u64,
    pub clock_ns: u64,
}

impl Taken {
    /// `base_pct` less the share of `planned_ns` that kthreads and the clock thread took.
    pub fn bound(&self, base_pct: f64, planned_ns: u64) -> f64 {
        base_pct - self.pct(planned_ns)
    }

    pub fn pct(&self, planned_ns: u64) -> f64 {
        100.0 * (self.kthread_ns + self.clock_ns) as f64 / planned_ns.max(1) as f64
    }

    /// "90 less 7.9 % that kthreads (x ms) and the slot clock thread (y ms) took on the
    /// managed CPUs, by the witness": how a bound from [`Taken::bound`] came about.
    pub fn explain(&self, base_pct: f64, planned_ns: u64) -> String {
        format!(
            "{base_pct} less {:.1} % that kthreads ({:.1} ms) and the slot clock thread ({:.1} \
             ms) took on the managed CPUs, by the witness",
            self.pct(planned_ns),
            self.kthread_ns as f64 / 1e6,
            self.clock_ns as f64 / 1e6
        )
    }
}

/// [`Taken`] from the switch events `events`: the runs on a CPU of `managed` within
/// `[from, to)`, of the clock thread of that CPU, of a per-CPU kthread of it by name, or of a
/// pid in `kthreads`.
pub fn taken_from(
    events: &[Event],
    kthreads: &HashSet<u32>,
    managed: &[u32],
    (from, to): (u64, u64),
) -> Taken {
    let mut t = Taken::default();
    for g in segments(events, to) {
        if !managed.contains(&g.cpu) || g.pid == 0 {
            continue;
        }
        let ns = g.end.min(to).saturating_sub(g.start.max(from));
        if is_clock_thread_of(&g.comm, g.cpu) {
            t.clock_ns += ns;
        } else if is_percpu_kthread_of(&g.comm, g.cpu) || kthreads.contains(&g.pid) {
            t.kthread_ns += ns;
        }
    }
    t
}

/// [`taken_from`] for run `run` of `out` (`RUN.witness`, `RUN.kthreads`), from the summary's
/// start for its duration.
pub fn taken(out: &VmOutput, run: &str, s: &Summary) -> Result<Taken> {
    let events =
        parse(&out.file(&format!("{run}.witness"))?).map_err(|e| format!("{run}.witness: {e}"))?;
    let kthreads = out
        .file(&format!("{run}.kthreads"))?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let managed: Vec<u32> = s.managed().map(|c| c.cpu).collect();
    Ok(taken_from(
        &events,
        &kthreads,
        &managed,
        (s.t0_ns, s.t0_ns + s.duration_ns),
    ))
}

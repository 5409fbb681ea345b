//! Planner mode's adaptive tasks at run time (issue 17; src/bpf/tt_sched.bpf.c L): every 100 ms
//! the run drains each adaptive plan task's wakeup ring (`sched::wake`) into its
//! [`Tracker`]; every sampling period the tracker's period analyser detects, and the run prints
//! one line per task (docs/run-output.md, "Adaptive tasks"); at the end a last line with the
//! totals and the tracer's measured cost per event.

use scx_tt::adaptive::{Detection, Tracker};
use scx_tt::plan::Plan;
use scx_tt::sched::loader::Scheduler;
use scx_tt::sched::wake;

/// The adaptive tasks of the plan being traced.
pub struct AdaptiveRun {
    tasks: Vec<Traced>,
}

struct Traced {
    name: String,
    /// Its BPF task index (its plan index).
    task: usize,
    /// Wakeups taken from its ring so far.
    taken: u64,
    tracker: Tracker,
}

impl AdaptiveRun {
    /// The plan's adaptive tasks, their first detection one sampling period after `now_ns`.
    pub fn new(plan: &Plan, now_ns: u64) -> anyhow::Result<Self> {
        let mut tasks = Vec::new();
        for (task, t) in plan.tasks.iter().enumerate() {
            let Some(params) = t.adaptive.as_ref() else {
                continue;
            };
            let tracker = Tracker::new(params, now_ns)
                .map_err(|e| anyhow::anyhow!("adaptive task {}: {e}", t.name))?;
            tasks.push(Traced {
                name: t.name.clone(),
                task,
                taken: 0,
                tracker,
            });
        }
        Ok(AdaptiveRun { tasks })
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Drains every ring; prints the detections that are due at `now_ns`.
    pub fn poll(&mut self, sched: &Scheduler, now_ns: u64) {
        for t in &mut self.tasks {
            let Some(ring) = sched.wake_ring(t.task) else {
                continue;
            };
            let d = wake::drain(ring, &mut t.taken);
            t.tracker.feed(&d.times_ns, d.lost);
            if let Some(det) = t.tracker.sample(now_ns) {
                println!(
                    "scx_tt: adaptive {}: at {now_ns} ns: {}; {}",
                    t.name,
                    detection_text(&det),
                    totals(&t.tracker, ring.cost_per_event_ns())
                );
            }
        }
    }

    /// The last drain and one line per task with its totals (the end of the run).
    pub fn finish(&mut self, sched: &Scheduler) {
        for t in &mut self.tasks {
            let Some(ring) = sched.wake_ring(t.task) else {
                continue;
            };
            let d = wake::drain(ring, &mut t.taken);
            t.tracker.feed(&d.times_ns, d.lost);
            let period = t
                .tracker
                .period
                .as_ref()
                .map_or("none found".to_string(), |e| {
                    format!("{:.3} ms", e.period_ns / 1e6)
                });
            println!(
                "scx_tt: adaptive {}: last period {period} ({} detections); {}",
                t.name,
                t.tracker.samples,
                totals(&t.tracker, ring.cost_per_event_ns())
            );
        }
    }
}

fn detection_text(d: &Detection) -> String {
    match d {
        Detection::Periodic(e) => format!(
            "period {:.3} ms (peak/mean {:.1}, {} wakeups in the window)",
            e.period_ns / 1e6,
            e.peak_ratio,
            e.events
        ),
        Detection::NonPeriodic { events } => {
            format!("no period: not periodic ({events} wakeups in the window)")
        }
        Detection::TooFewEvents { events } => {
            format!("no period yet: {events} wakeups in the window")
        }
    }
}

fn totals(t: &Tracker, cost: Option<f64>) -> String {
    format!(
        "{} wakeups traced, {} lost, {} out of order; tracer {}",
        t.wakeups,
        t.lost,
        t.out_of_order,
        cost.map_or("-".to_string(), |c| format!("{c:.0} ns/event"))
    )
}

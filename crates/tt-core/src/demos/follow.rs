//! The DEmOS side of a kernel run of an imported plan (`scx_tt --table plan.json --demos
//! config.yaml`, docs/demos.md "Messages and power policies in a run"): pure logic, the run's
//! effects are in `src/cli/run/demos.rs`.
//!
//! - [`check_import`]: the plan must be what `plan import --demos` makes of the configuration
//!   (slot, frame, CPUs, tasks, jobs and table), else the windows would not be where the run
//!   believes them.
//! - [`frame_events`]: DEmOS's scheduler events ([`Event`]) of one major frame on the slot
//!   grid, from the windows and the enforced table: a window starts (`WindowStart`, `ScStart`)
//!   at its first slot; an SC process starts (`ProcessStart`) at the first slot of each run of
//!   slots it owns in a window and ends (`ProcessEnd`) at the run's end; `BeStart` is the
//!   first slot of the window after all its SC work (the window start when it has none), if
//!   that is before the window end; `WindowEnd` at the window's end. BE processes run in any
//!   free slot under the plan (docs/demos.md, "Import"): they have no start or end events.
//! - [`Follower`]: walks those events over the frames as the run observes slots.

use super::config::Config;
use super::cpuset::CpuSet;
use super::import::{import, sequenced_plan, ImportOptions};
use super::power::{Event, ProcId};
use crate::plan::{Class, Plan};

/// Refuses `plan` unless it is the import of `config` (`cpu: all` = the plan's managed CPUs):
/// the first difference names the field and both values.
pub fn check_import(config: &Config, plan: &Plan) -> Result<(), String> {
    let opts = ImportOptions {
        slot_us: Some(plan.slot_us),
        all_cpus: CpuSet::from_cpus(plan.managed.iter().copied()),
        config_dir: None,
    };
    let imported = import(config, &opts)
        .map_err(|e| format!("the plan (slot_us {}) is not its import: {e}", plan.slot_us))?;
    let mut want = imported.plan;
    // a sequenced run's plan has the BE processes as slot owners (`import::sequenced_plan`)
    let owners = |p: &Plan| p.tasks.iter().filter(|t| t.class == Class::Tt).count();
    if owners(plan) > owners(&want) {
        sequenced_plan(&mut want, config);
    }
    let want = &want;
    let differ = |field: &str, plan_v: String, import_v: String| -> Result<(), String> {
        if plan_v == import_v {
            return Ok(());
        }
        Err(format!(
            "the plan is not its import (`scx_tt plan import --demos`): {field}: the plan has \
             {plan_v}, the import has {import_v}"
        ))
    };
    differ(
        "frame_slots",
        plan.frame_slots.to_string(),
        want.frame_slots.to_string(),
    )?;
    differ(
        "cpus.managed",
        format!("{:?}", plan.managed),
        format!("{:?}", want.managed),
    )?;
    let tasks = |p: &Plan| -> Vec<String> {
        p.tasks
            .iter()
            .map(|t| format!("{} ({:?}, CPU {:?})", t.name, t.class, t.cpu))
            .collect()
    };
    differ("tasks", tasks(plan).join(", "), tasks(want).join(", "))?;
    for (a, b) in plan.cpus.iter().zip(&want.cpus) {
        let jobs = |c: &crate::plan::CpuPlan, p: &Plan| -> String {
            let v: Vec<String> = c
                .jobs
                .iter()
                .map(|j| {
                    format!(
                        "{} [{}, {}) wcet {}",
                        p.tasks[j.task].name, j.release, j.deadline, j.wcet
                    )
                })
                .collect();
            v.join(", ")
        };
        differ(&format!("CPU {} jobs", a.cpu), jobs(a, plan), jobs(b, want))?;
        let table = |c: &crate::plan::CpuPlan| -> String {
            let v: Vec<String> = c
                .table
                .iter()
                .map(|r| format!("[{}, {}) job {}", r.start, r.end, r.job))
                .collect();
            v.join(", ")
        };
        differ(&format!("table of CPU {}", a.cpu), table(a), table(b))?;
    }
    Ok(())
}

/// Where each window of `config` starts in a frame of `slot_us` slots, and the frame's end.
pub fn window_slots(config: &Config, slot_us: u64) -> Vec<u64> {
    let mut at = 0u64;
    let mut v = vec![0];
    for w in &config.windows {
        at = at.saturating_add(w.length.saturating_mul(1000) / slot_us.max(1));
        v.push(at);
    }
    v
}

/// The events of one major frame of `plan` (the import of `config`, [`check_import`]) as
/// (slot in the frame, event), in DEmOS's order: by slot; at one slot a window's end, the
/// processes it stops, the next window's start and SC start, process ends, process starts,
/// BE start. The last window's end is at slot `frame_slots` (the next frame's first slot).
pub fn frame_events(config: &Config, plan: &Plan) -> Vec<(u64, Event)> {
    let all = CpuSet::from_cpus(plan.managed.iter().copied());
    let bounds = window_slots(config, plan.slot_us);
    // (slot, rank, seq, event)
    let mut evs: Vec<(u64, u8, usize, Event)> = Vec::new();
    for (w, win) in config.windows.iter().enumerate() {
        let (ws, we) = (bounds[w], bounds[w + 1]);
        evs.push((ws, 2, 0, Event::WindowStart { window: w }));
        evs.push((ws, 3, 0, Event::ScStart { window: w }));
        let mut sc_end = ws;
        for (s, slice) in win.slices().iter().enumerate() {
            let Some(part) = slice.sc_partition.as_deref() else {
                continue;
            };
            let Some(p) = config.partition_index().get(part).copied() else {
                continue;
            };
            for c in &plan.cpus {
                // the runs of one task inside the window, merged across adjacent ranges
                let mut runs: Vec<(u64, u64, usize)> = Vec::new();
                for r in &c.table {
                    let (start, end) = (r.start.max(ws), r.end.min(we));
                    if start >= end {
                        continue;
                    }
                    let task = &plan.tasks[c.jobs[r.job].task].name;
                    let Some(i) = task
                        .strip_prefix(part)
                        .and_then(|k| k.strip_prefix('.'))
                        .and_then(|k| k.parse::<usize>().ok())
                    else {
                        continue;
                    };
                    match runs.last_mut() {
                        Some(last) if last.1 == start && last.2 == i => last.1 = end,
                        _ => runs.push((start, end, i)),
                    }
                }
                for (start, end, i) in runs {
                    let proc = ProcId {
                        partition: p,
                        process: i,
                    };
                    let freq_mhz = config.partitions[p]
                        .processes
                        .get(i)
                        .and_then(|q| q.frequency);
                    evs.push((
                        start,
                        5,
                        s,
                        Event::ProcessStart {
                            window: w,
                            slice: s,
                            proc,
                            cpus: slice.cpus(all),
                            freq_mhz,
                        },
                    ));
                    evs.push((
                        end,
                        if end == we { 1 } else { 4 },
                        s,
                        Event::ProcessEnd {
                            window: w,
                            slice: s,
                            proc,
                        },
                    ));
                    sc_end = sc_end.max(end);
                }
            }
        }
        if sc_end < we {
            evs.push((sc_end, 6, 0, Event::BeStart { window: w }));
        }
        evs.push((we, 0, 0, Event::WindowEnd { window: w }));
    }
    evs.sort_by_key(|e| (e.0, e.1, e.2));
    evs.into_iter().map(|e| (e.0, e.3)).collect()
}

/// Walks a frame's events over the run's frames: [`Follower::until`] returns every event at
/// or before an observed slot, once, in order, with its absolute slot.
#[derive(Clone, Debug)]
pub struct Follower {
    events: Vec<(u64, Event)>,
    frame_slots: u64,
    frame: u64,
    next: usize,
}

impl Follower {
    pub fn new(events: Vec<(u64, Event)>, frame_slots: u64) -> Follower {
        Follower {
            events,
            frame_slots: frame_slots.max(1),
            frame: 0,
            next: 0,
        }
    }

    /// The absolute slot of the next event (`None`: there is none).
    pub fn next_slot(&self) -> Option<u64> {
        let (s, _) = self.events.get(self.next)?;
        self.frame.checked_mul(self.frame_slots)?.checked_add(*s)
    }

    /// The events at absolute slots up to `slot` not returned yet.
    pub fn until(&mut self, slot: u64) -> Vec<(u64, Event)> {
        let mut out = Vec::new();
        while let Some(at) = self.next_slot().filter(|&at| at <= slot) {
            out.push((at, self.events[self.next].1.clone()));
            self.next += 1;
            if self.next == self.events.len() {
                self.next = 0;
                self.frame += 1;
            }
        }
        out
    }
}

/// DEmOS's `-m`/`-M`: the lines printed for `event` (its `MajorFrame::start`: the major-frame
/// message first, at the start of window 0, then the window message), each without its newline.
pub fn messages<'a>(
    event: &Event,
    window: Option<&'a str>,
    major_frame: Option<&'a str>,
) -> Vec<&'a str> {
    let Event::WindowStart { window: w } = event else {
        return Vec::new();
    };
    let mf = major_frame.filter(|m| !m.is_empty() && *w == 0);
    mf.into_iter()
        .chain(window.filter(|m| !m.is_empty()))
        .collect()
}

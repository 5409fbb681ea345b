//! The baseline: regenerate the rest of the frame's table and reload it, in-process.

use super::run::temp_dir;
use super::{job, FRAME, INTERVAL_NS, LEAD, ONLINE, PLAN, REQUESTS, SLOT_NS, SLOT_US};
use scx_tt::abi::NO_TASK;
use scx_tt::clock::monotonic_ns;
use scx_tt::plan;
use scx_tt::planner::offline::{self, Job};
use scx_tt::sched::config::{default_guard_us, SchedConfig};
use std::path::PathBuf;

/// A firm job the baseline admitted in the current frame: its lane (the plan task that holds
/// it: jobs of one task may not overlap, so a job goes to the first lane whose last job's
/// window has ended) and its window and wcet in frame slots.
#[derive(Clone)]
struct FirmIn {
    lane: usize,
    release: u64,
    deadline: u64,
    wcet: u64,
}

/// Plan task index of lane `l` in the regenerated plan (after a, b, c).
const FIRST_LANE: usize = 3;

/// The baseline's state: the current frame's table in force, its firm jobs, the reload's file
/// and the fake kernel half.
struct Regen {
    /// The plan's jobs of the frame (task 0 = a, 1 = b).
    plan_jobs: Vec<Job>,
    /// The plan's own table (each frame starts with it).
    plan_table: Vec<u32>,
    /// The table in force for the current frame, slot → plan task.
    owner: Vec<u32>,
    firm: Vec<FirmIn>,
    /// Per lane: the deadline of its last job.
    lanes: Vec<u64>,
    frame_index: u64,
    path: PathBuf,
    inactive: Vec<u32>,
}

pub(crate) struct BaselineRun {
    pub(crate) all_ns: Vec<u64>,
    pub(crate) accepted_ns: Vec<u64>,
    pub(crate) rejected_ns: Vec<u64>,
    /// The regeneration alone (EDF and the per-slot table), every request.
    pub(crate) regen_ns: Vec<u64>,
    /// The reload's parts over the accepted requests: file write, plan load, table build, ns.
    pub(crate) write_ns: Vec<u64>,
    pub(crate) load_ns: Vec<u64>,
    pub(crate) table_ns: Vec<u64>,
    pub(crate) max_firm: usize,
    pub(crate) max_lanes: usize,
    pub(crate) max_bytes: usize,
}

/// The regenerated plan: the running plan's tasks, one tt task per lane with its firm jobs, and
/// the regenerated table (explicit: the slots before the change keep what ran in them).
fn regenerated_text(firm: &[FirmIn], lanes: usize, owner: &[u32]) -> String {
    let mut tasks = vec![
        r#"{ "name": "a", "tids": [101], "class": "tt", "cpu": 1, "period": 10, "wcet": 2 }"#
            .to_string(),
        r#"{ "name": "b", "tids": [102], "class": "tt", "cpu": 1, "period": 50, "wcet": 5 }"#
            .to_string(),
        r#"{ "name": "c", "tids": [103], "class": "be" }"#.to_string(),
    ];
    for l in 0..lanes {
        let jobs: Vec<String> = firm
            .iter()
            .filter(|j| j.lane == l)
            .map(|j| {
                format!(
                    r#"{{ "release": {}, "deadline": {}, "wcet": {} }}"#,
                    j.release, j.deadline, j.wcet
                )
            })
            .collect();
        tasks.push(format!(
            r#"{{ "name": "firm{l}", "tids": [{}], "class": "tt", "cpu": 1, "jobs": [{}] }}"#,
            1000 + l,
            jobs.join(", ")
        ));
    }
    let name = |t: u32| match t as usize {
        0 => "a".to_string(),
        1 => "b".to_string(),
        l => format!("firm{}", l - FIRST_LANE),
    };
    let mut ranges = Vec::new();
    let mut s = 0;
    while s < owner.len() {
        let t = owner[s];
        let e = s + owner[s..].iter().take_while(|&&x| x == t).count();
        if t != NO_TASK {
            ranges.push(format!(
                r#"{{ "start": {s}, "end": {e}, "task": "{}" }}"#,
                name(t)
            ));
        }
        s = e;
    }
    format!(
        r#"{{ "version": 1, "slot_us": {SLOT_US}, "frame_slots": {FRAME},
  "cpus": {{ "managed": [1], "housekeeping": [0] }},
  "tasks": [
    {}
  ],
  "table": [ {{ "cpu": 1, "ranges": [ {} ] }} ] }}"#,
        tasks.join(",\n    "),
        ranges.join(", ")
    )
}

impl Regen {
    /// Request k, arriving in slot k·INTERVAL/SLOT: regenerate the rest of the frame with it,
    /// and reload when EDF meets every deadline. Returns whether it was accepted; `parts` gets
    /// the regeneration's and the reload's times.
    fn admit(&mut self, k: u64, parts: &mut [u64; 4]) -> bool {
        let t0 = monotonic_ns();
        let (_, wcet, deadline_slots) = job(k);
        let slot = k * INTERVAL_NS / SLOT_NS;
        // the first slot a new table can change (the planner's lead), and the due slot
        let release_abs = slot + LEAD + 1;
        let deadline_abs = slot + deadline_slots;
        let f = release_abs / FRAME;
        if f != self.frame_index {
            self.frame_index = f;
            self.owner.copy_from_slice(&self.plan_table);
            self.firm.clear();
            self.lanes.clear();
        }
        let rel = release_abs % FRAME;
        // a window crossing the frame's end is cut there: the frame's table is regenerated
        let dl = deadline_abs.saturating_sub(f * FRAME).min(FRAME);
        let lane = self.lanes.iter().position(|&end| end <= rel);
        let lane = lane.unwrap_or(self.lanes.len());
        // every job's work left from `rel` on: its wcet less the slots it owned before `rel`
        let done = |owner: &[u32], task: usize, r: u64, d: u64| {
            let end = d.min(rel);
            if r >= end {
                return 0;
            }
            owner[r as usize..end as usize]
                .iter()
                .filter(|&&o| o as usize == task)
                .count() as u64
        };
        let mut jobs: Vec<Job> = Vec::new();
        let left = |task: usize, r: u64, d: u64, w: u64, jobs: &mut Vec<Job>| {
            let w = w - done(&self.owner, task, r, d);
            if d > rel && w > 0 {
                jobs.push(Job {
                    task,
                    instance: 0,
                    release: r.max(rel),
                    deadline: d,
                    wcet: w,
                });
            }
        };
        for j in &self.plan_jobs {
            left(j.task, j.release, j.deadline, j.wcet, &mut jobs);
        }
        for j in &self.firm {
            left(
                FIRST_LANE + j.lane,
                j.release,
                j.deadline,
                j.wcet,
                &mut jobs,
            );
        }
        let feasible = dl >= rel + wcet && {
            jobs.push(Job {
                task: FIRST_LANE + lane,
                instance: 0,
                release: rel,
                deadline: dl,
                wcet,
            });
            match offline::edf(&jobs, FRAME) {
                Ok(ranges) => {
                    // the regenerated table: what ran before `rel`, then the new EDF ranges
                    self.owner[rel as usize..].fill(NO_TASK);
                    for r in &ranges {
                        self.owner[r.start as usize..r.end as usize].fill(jobs[r.job].task as u32);
                    }
                    true
                }
                Err(_) => false,
            }
        };
        let t1 = monotonic_ns();
        parts[0] = t1 - t0;
        if !feasible {
            return false;
        }
        self.firm.push(FirmIn {
            lane,
            release: rel,
            deadline: dl,
            wcet,
        });
        match self.lanes.get_mut(lane) {
            Some(end) => *end = dl,
            None => self.lanes.push(dl),
        }
        // reload: the plan file, then what the loader thread does for switch_table
        let text = regenerated_text(&self.firm, self.lanes.len(), &self.owner);
        std::fs::write(&self.path, &text).expect("writing the plan file");
        let t2 = monotonic_ns();
        let plan = plan::from_file(&self.path)
            .unwrap_or_else(|e| panic!("the regenerated plan is invalid: {e}\n{text}"));
        let t3 = monotonic_ns();
        let entries = SchedConfig::from_plan(&plan, default_guard_us(plan.slot_us), &ONLINE)
            .expect("configures")
            .entries();
        self.inactive.copy_from_slice(&entries);
        std::hint::black_box(&self.inactive);
        let t4 = monotonic_ns();
        parts[1..].copy_from_slice(&[t2 - t1, t3 - t2, t4 - t3]);
        true
    }
}

pub(crate) fn baseline() -> BaselineRun {
    let dir = temp_dir("control-baseline");
    let plan = plan::from_str(PLAN).expect("the bench plan is valid");
    let cpu = &plan.cpus[0];
    let mut plan_table = vec![NO_TASK; FRAME as usize];
    for r in &cpu.table {
        plan_table[r.start as usize..r.end as usize].fill(cpu.jobs[r.job].task as u32);
    }
    let mut regen = Regen {
        plan_jobs: cpu.jobs.clone(),
        owner: plan_table.clone(),
        plan_table,
        firm: Vec::new(),
        lanes: Vec::new(),
        frame_index: 0,
        path: dir.join("regenerated.json"),
        inactive: vec![NO_TASK; FRAME as usize],
    };
    let mut run = BaselineRun {
        all_ns: Vec::with_capacity(REQUESTS),
        accepted_ns: Vec::new(),
        rejected_ns: Vec::new(),
        regen_ns: Vec::with_capacity(REQUESTS),
        write_ns: Vec::new(),
        load_ns: Vec::new(),
        table_ns: Vec::new(),
        max_firm: 0,
        max_lanes: 0,
        max_bytes: 0,
    };
    for k in 0..REQUESTS as u64 {
        let mut parts = [0; 4];
        let t0 = monotonic_ns();
        let accepted = regen.admit(k, &mut parts);
        let ns = monotonic_ns() - t0;
        run.all_ns.push(ns);
        run.regen_ns.push(parts[0]);
        if accepted {
            run.accepted_ns.push(ns);
            run.write_ns.push(parts[1]);
            run.load_ns.push(parts[2]);
            run.table_ns.push(parts[3]);
            run.max_bytes = run
                .max_bytes
                .max(std::fs::metadata(&regen.path).map_or(0, |m| m.len() as usize));
        } else {
            run.rejected_ns.push(ns);
        }
        run.max_firm = run.max_firm.max(regen.firm.len());
        run.max_lanes = run.max_lanes.max(regen.lanes.len());
    }
    for v in [
        &mut run.all_ns,
        &mut run.accepted_ns,
        &mut run.rejected_ns,
        &mut run.regen_ns,
        &mut run.write_ns,
        &mut run.load_ns,
        &mut run.table_ns,
    ] {
        v.sort_unstable();
    }
    let _ = std::fs::remove_dir_all(&dir);
    run
}

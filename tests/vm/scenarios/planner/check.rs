//! VM test of planner mode (docs/planner.md, "Kernel path"): `scx_tt --planner bss` enforces
//! tests/vm/plans/planner.json at `-smp 2` (managed CPU 1: tt-a 10 of every 50 slots, tt-b 20 of
//! every 100, 10 ms slots, frame 100, no explicit table) with `--control` and `--trace`. After 2 s
//! `scx_tt ctl admit-firm` sends (a) 40 slots for tt-a due in 30 (cannot fit: rejected, exit 3),
//! (b) a job for an unknown task (exit 1), (c) 20 slots for tt-a due in 60 (accepted, exit 0),
//! then a table switch (refused in planner mode, exit 1). Expectations are computed here from the
//! plan with the library (`SchedConfig::from_plan` for the static table, an EDF demand count
//! for the free capacity), not taken from scx_tt.
//!
//! Checks: the rejection's `needed` is 40 and its `available` equals the free capacity before
//! its deadline computed here (when the planner is L or L+1 slots ahead of the current slot);
//! before the accepted job's `first_slot` every record's owner is the static table's; in
//! `[first_slot, deadline_slot)` tt-a owns at least 20 slots more than its periodic jobs that
//! lie entirely in that window must have; over the frames that overlap the window tt-a owns
//! exactly its static count + 20 and tt-b exactly its static count (jobs are shifted, not
//! lost); from the first frame start at or after the deadline every record has the static
//! owner again; every tt task gets >= 90 % of its owned time and no time is foreign;
//! `planner_late_slots` is printed and at most 2 % of the run's slots (see `LATE_PCT`); scx_tt
//! exits 0, sched_ext is disabled, the socket is gone.

#[path = "vm/harness.rs"]
mod harness;

use harness::{Checks, Summary, VmOutput};
use scx_tt::plan::{self, Plan};
use scx_tt::sched::config::{default_guard_us, SchedConfig};
use scx_tt::trace::SlotRecord;

const DURATION_S: u64 = 6;
const MIN_DELIVERED_PCT: f64 = 90.0;
/// Lead of the planner (the default of --planner-lead-slots).
const LEAD: u64 = 2;
/// Tolerated share of slots decided late (the planner thread slept through `LEAD` boundaries):
/// under TCG on a shared host a stall of 20 ms or more happens a few times per run; none is
/// expected on hardware.
const LATE_PCT: f64 = 2.0;
const FIRM_WCET: u64 = 20;
const FIRM_DEADLINE: u64 = 60;
const REJECT_WCET: u64 = 40;
const REJECT_DEADLINE: u64 = 30;

struct Expect {
    plan: Plan,
    frame: u64,
    /// Owner task index per frame slot of managed CPU 1.
    table: Vec<Option<usize>>,
}

impl Expect {
    fn new() -> Expect {
        let path = harness::repo().join("tests/vm/plans/planner.json");
        let text = std::fs::read_to_string(&path).expect("planner.json");
        let plan: Plan = plan::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        let cfg = SchedConfig::from_plan(&plan, default_guard_us(plan.slot_us), &[0, 1])
            .unwrap_or_else(|e| panic!("{e}"));
        let table = (0..cfg.frame_slots).map(|s| cfg.owner(0, s)).collect();
        Expect {
            frame: plan.frame_slots,
            plan,
            table,
        }
    }

    fn index(&self, name: &str) -> usize {
        self.plan
            .tasks
            .iter()
            .position(|t| t.name == name)
            .expect("task of the plan")
    }

    fn owner(&self, slot: u64) -> Option<&str> {
        self.table[(slot % self.frame) as usize].map(|t| self.plan.tasks[t].name.as_str())
    }

    /// Static slots of `task` in `[from, to)`.
    fn static_count(&self, task: &str, from: u64, to: u64) -> u64 {
        (from..to).filter(|&s| self.owner(s) == Some(task)).count() as u64
    }

    /// Periodic jobs in absolute slots (release, deadline, wcet, task) of frames 0..=`last`.
    fn jobs(&self, last: u64) -> Vec<(u64, u64, u64, usize)> {
        (0..=last)
            .flat_map(|k| {
                self.plan.cpus[0].jobs.iter().map(move |j| {
                    let base = k * self.frame;
                    (base + j.release, base + j.deadline, j.wcet, j.task)
                })
            })
            .collect()
    }

    /// Free slots in `[from, d)` when every periodic job runs as late as possible, the slots
    /// before `from` having run the static table: `(d - from) - Σ remaining work of the jobs due
    /// by d` (one live job per task: deadlines are the periods).
    fn free(&self, from: u64, d: u64) -> i64 {
        let demand: u64 = self
            .jobs(d / self.frame + 1)
            .into_iter()
            .filter(|&(r, dl, ..)| dl <= d && dl > from && r < d)
            .map(|(r, _, wcet, task)| {
                let name = self.plan.tasks[task].name.as_str();
                wcet - self.static_count(name, r, from.max(r))
            })
            .sum();
        (d - from) as i64 - demand as i64
    }

    /// Work of `task`'s periodic jobs released at or after `from` and due by `to`.
    fn inside(&self, task: &str, from: u64, to: u64) -> u64 {
        let t = self.index(task);
        self.jobs(to / self.frame + 1)
            .into_iter()
            .filter(|&(r, dl, _, k)| k == t && r >= from && dl <= to)
            .map(|(.., wcet, _)| wcet)
            .sum()
    }
}

/// The accepted admission: (first_slot, deadline_slot).
fn check_protocol(c: &mut Checks, out: &VmOutput, e: &Expect) -> Option<(u64, u64)> {
    println!("--- replies");
    let status = out.reply("status");
    println!("  status: {status}");
    c.check(
        status["planner"]["policy"] == "bss" && status["planner"]["lead_slots"] == LEAD,
        "status names the planner policy bss and its lead".into(),
    );
    let rej = out.reply("reject");
    println!("  reject: {rej}");
    let deadline = rej["deadline_slot"].as_u64().unwrap_or(0);
    let cur = deadline.saturating_sub(REJECT_DEADLINE);
    let candidates: Vec<(u64, i64)> = (cur + 1..=cur + LEAD + 1)
        .map(|f| (f, e.free(f, deadline)))
        .collect();
    let available = rej["available"].as_i64();
    c.check(
        out.rc("reject") == "3"
            && rej["accepted"] == false
            && rej["needed"] == REJECT_WCET
            && available.is_some_and(|a| candidates.iter().any(|&(_, f)| f == a)),
        format!(
            "{REJECT_WCET} slots due in {REJECT_DEADLINE} are rejected (client exit {}): \
             available {available:?}, computed here for the planner's next slot (F: free) {:?}",
            out.rc("reject"),
            candidates
        ),
    );
    let bad = out.file("bad.reply").unwrap_or_default();
    println!("  bad:    {}", bad.trim());
    c.check(
        out.rc("bad") == "1" && bad.contains("task = \\\"nope\\\": no task of the plan"),
        format!(
            "an unknown task is refused naming it (client exit {})",
            out.rc("bad")
        ),
    );
    let acc = out.reply("accept");
    println!("  accept: {acc}");
    let first = acc["first_slot"].as_u64();
    let dl = acc["deadline_slot"].as_u64();
    let ok = out.rc("accept") == "0"
        && acc["accepted"] == true
        && acc["cpu"] == 1
        && matches!((first, dl), (Some(f), Some(d)) if (FIRM_DEADLINE - LEAD - 1..FIRM_DEADLINE).contains(&(d - f)));
    c.check(
        ok,
        format!(
            "{FIRM_WCET} slots for tt-a due in {FIRM_DEADLINE} are accepted on CPU 1 (client exit \
             {}): first_slot {first:?}, deadline_slot {dl:?} (deadline - first in {}..{})",
            out.rc("accept"),
            FIRM_DEADLINE - LEAD - 1,
            FIRM_DEADLINE
        ),
    );
    let sw = out.file("switch.reply").unwrap_or_default();
    println!("  switch: {}", sw.trim());
    c.check(
        out.rc("switch") == "1" && sw.contains("refused in planner mode"),
        format!(
            "switch_table is refused in planner mode (client exit {})",
            out.rc("switch")
        ),
    );
    for (key, want) in [
        ("planner_rc", "0"),
        ("planner_state", "disabled"),
        ("socket_left", "no"),
    ] {
        let got = out.result(key).unwrap_or("?");
        c.check(got == want, format!("{key} = {got} (want {want})"));
    }
    match (first, dl) {
        (Some(f), Some(d)) if ok => Some((f, d)),
        _ => None,
    }
}

fn check_trace(
    c: &mut Checks,
    trace: &[SlotRecord],
    e: &Expect,
    (first, dl): (u64, u64),
    late: u64,
) {
    let cpu1: Vec<&SlotRecord> = trace.iter().filter(|r| r.cpu == 1).collect();
    let frame = e.frame;
    let clean_from = dl.div_ceil(frame) * frame;
    let window_frames = (first / frame * frame, clean_from);
    println!(
        "--- trace: {} records on CPU 1; admission [first {first}, deadline {dl}); static again \
         from {clean_from}; frames overlapping the window {window_frames:?}",
        cpu1.len()
    );
    // With late slots, entries the planner decided were not written: the owners then lag the
    // planner by design, so the owner checks become timing checks.
    let exact = |c: &mut Checks, ok: bool, what: String| {
        if late == 0 {
            c.check(ok, what)
        } else {
            c.check_timing(ok, format!("{what} [{late} late slots]"))
        }
    };
    let wrong = |from: u64, to: u64| -> Vec<String> {
        cpu1.iter()
            .filter(|r| (from..to).contains(&r.slot) && harness::tt_owner(r) != e.owner(r.slot))
            .map(|r| {
                format!(
                    "slot {}: {:?} want {:?}",
                    r.slot,
                    harness::tt_owner(r),
                    e.owner(r.slot)
                )
            })
            .collect()
    };
    let before = wrong(0, first);
    let n_before = cpu1.iter().filter(|r| r.slot < first).count();
    exact(
        c,
        before.is_empty() && n_before > 100,
        format!(
            "before first_slot {first}: {} of {n_before} records have the static owner (first \
             wrong: {:?})",
            n_before - before.len(),
            before.first()
        ),
    );
    let after = wrong(clean_from, u64::MAX);
    let n_after = cpu1.iter().filter(|r| r.slot >= clean_from).count();
    exact(
        c,
        after.is_empty() && n_after > 50,
        format!(
            "from slot {clean_from}: {} of {n_after} records have the static owner again (first \
             wrong: {:?})",
            n_after - after.len(),
            after.first()
        ),
    );
    let count = |task: &str, from: u64, to: u64| {
        cpu1.iter()
            .filter(|r| (from..to).contains(&r.slot) && harness::tt_owner(r) == Some(task))
            .count() as u64
    };
    let recorded = cpu1
        .iter()
        .filter(|r| (window_frames.0..window_frames.1).contains(&r.slot))
        .count() as u64;
    let a_window = count("tt-a", first, dl);
    let a_bound = e.inside("tt-a", first, dl) + FIRM_WCET;
    let a_static = e.static_count("tt-a", first, dl);
    exact(
        c,
        a_window >= a_bound,
        format!(
            "in [{first}, {dl}) tt-a owns {a_window} slots: >= {a_bound} (its jobs inside the \
             window + {FIRM_WCET}); the static table gives it {a_static} there"
        ),
    );
    let (f0, f1) = window_frames;
    for (task, extra) in [("tt-a", FIRM_WCET), ("tt-b", 0)] {
        let got = count(task, f0, f1);
        let want = e.static_count(task, f0, f1) + extra;
        exact(
            c,
            got == want && recorded == f1 - f0,
            format!(
                "frames [{f0}, {f1}) ({recorded} records): {task} owns {got} slots (static + \
                 {extra} = {want})"
            ),
        );
    }
}

fn check_summary(c: &mut Checks, s: &Summary) -> u64 {
    harness::check_planner_summary(c, s, Some(MIN_DELIVERED_PCT), &[], LATE_PCT)
}

fn measure(label: &str) -> Checks {
    let out = harness::Vm::new("planner")
        .label(label)
        .smp(2)
        .timeout_s(300)
        .arg("duration_s", DURATION_S)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    print!("{}", out.file("planner.out").unwrap_or_default());
    let text = out.file("planner.out").unwrap_or_default();
    let e = Expect::new();
    let mut c = Checks::default();
    c.check(
        text.contains("planner_late_slots "),
        "the summary text prints planner_late_slots".into(),
    );
    let admission = check_protocol(&mut c, &out, &e);
    match (out.summary("planner.json"), admission) {
        (Ok(s), Some(adm)) => {
            s.print("planner.json under --planner bss, one firm admission");
            let late = check_summary(&mut c, &s);
            let trace: Vec<SlotRecord> = out.records("planner.trace.jsonl").unwrap_or_else(|err| {
                c.check(false, format!("trace: {err}"));
                Vec::new()
            });
            check_trace(&mut c, &trace, &e, adm, late);
        }
        (Err(err), _) => c.check(false, format!("summary: {err}")),
        (_, None) => c.check(
            false,
            "no accepted admission: the trace cannot be checked".into(),
        ),
    }
    c
}

/// When only timing checks failed (a host stall under TCG), the scenario is measured again, up
/// to harness::TIMING_TRIES times; exact checks are never measured again.
#[test]
#[ignore = "boots a VM: make test-vm"]
fn planner_mode_admits_a_firm_job_over_the_control_socket_and_shifts_the_table() {
    harness::measure_until_settled("planner", measure);
}

#[test]
fn the_expectations_of_the_test_plan() {
    let e = Expect::new();
    assert_eq!(e.frame, 100);
    // tt-a: 10 per 50 slots, tt-b: 20 per 100: 40 of 100 slots busy
    assert_eq!(e.static_count("tt-a", 0, 100), 20);
    assert_eq!(e.static_count("tt-b", 0, 100), 20);
    // from a frame start, 30 slots ahead: nothing is due by 30, all 30 free
    assert_eq!(e.free(100, 130), 30);
    // 60 ahead: tt-a's first job (10) is due by 50
    assert_eq!(e.free(100, 160), 50);
    // the rejected request cannot fit anywhere: 40 > 30 slots in its window
    assert!((0..300).all(|f| e.free(f, f + REJECT_DEADLINE) < REJECT_WCET as i64));
    // the accepted one always fits (60 slots hold at most 2 tt-a and 1 tt-b job: 40 of work)
    assert!((0..300).all(|f| e.free(f, f + FIRM_DEADLINE - LEAD - 1) >= FIRM_WCET as i64));
    assert_eq!(e.inside("tt-a", 100, 160), 10);
}

//! Shared fixtures of the control-socket VM checks (scenarios `planner`, `planner_dvfs`,
//! `planner_admit` and `switch`): their plans and static tables computed with the library (not
//! taken from scx_tt), the replies of `ctl` requests (lib.sh `ctl NAME ...`: NAME.reply and
//! result NAME_rc), the summary checks of planner mode, and owner counts over a CPU's trace.
//! The skeleton of these tests (boot, replies, summary, trace, measure again) is
//! `Vm::check_control` in the harness.
#![allow(dead_code)]

use crate::harness::{self, pct, Checks, Summary, VmOutput};
use scx_tt::plan::{self, Plan};
use scx_tt::sched::config::{default_guard_us, SchedConfig};
use scx_tt::trace::SlotRecord;

/// The managed CPU of every planner-mode test plan (`-smp 2`, housekeeping CPU 0).
pub const CPU: u32 = 1;
/// Lead of the planner (the default of --planner-lead-slots).
pub const LEAD: u64 = 2;
/// Each running tt task's delivered share of its owned time (timing).
pub const MIN_DELIVERED_PCT: f64 = 90.0;
/// Tolerated share of slots decided late (the planner thread slept through `LEAD` boundaries):
/// under TCG on a shared host a stall of 20 ms or more happens a few times per run; none is
/// expected on hardware.
pub const LATE_PCT: f64 = 2.0;

/// A test plan of scenario `scenario` (tests/vm/scenarios/SCENARIO/FILE), loaded with the library.
/// The path of test plan FILE of scenario SCENARIO.
pub fn plan_path(scenario: &str, file: &str) -> std::path::PathBuf {
    harness::repo()
        .join("tests/vm/scenarios")
        .join(scenario)
        .join(file)
}

pub fn load_plan(scenario: &str, file: &str) -> Plan {
    let path = plan_path(scenario, file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    plan::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The library's planner for `plan` under dvfs, as scx_tt builds it without `--power-model`
/// (`Freqs::xeon_default()`), every job running its whole slots when stepped with no
/// observations: what `--planner dvfs --planner-open-loop` decides.
pub fn dvfs_planner(plan: &Plan) -> scx_tt::planner::Planner {
    use scx_tt::planner::{Freqs, Planner, PlannerConfig, Policy};
    Planner::new(
        &plan.planner_inputs(),
        plan.frame_slots,
        PlannerConfig {
            policy: Policy::Dvfs,
            freqs: Freqs::xeon_default(),
            slot_ns: plan.slot_us * 1000,
        },
    )
}

/// A test plan with its static table (`SchedConfig::from_plan`, the default guard band, CPUs 0
/// and 1 online): owner task index per managed CPU and frame slot.
pub struct Table {
    pub plan: Plan,
    pub managed: Vec<u32>,
    pub frame: u64,
    owners: Vec<Vec<Option<usize>>>,
}

impl Table {
    pub fn of(scenario: &str, file: &str) -> Table {
        let plan = load_plan(scenario, file);
        let cfg = SchedConfig::from_plan(&plan, default_guard_us(plan.slot_us), &[0, 1])
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let owners = (0..cfg.managed.len())
            .map(|m| (0..cfg.frame_slots).map(|s| cfg.owner(m, s)).collect())
            .collect();
        Table {
            plan,
            managed: cfg.managed,
            frame: cfg.frame_slots,
            owners,
        }
    }

    /// The static owner's name of `slot` on `cpu`; `None` for a free slot or an unmanaged CPU.
    pub fn owner(&self, cpu: u32, slot: u64) -> Option<&str> {
        let m = self.managed.iter().position(|&c| c == cpu)?;
        self.owners[m][(slot % self.frame) as usize].map(|t| self.plan.tasks[t].name.as_str())
    }

    /// Static slots of `task` on `CPU` in `[from, to)`.
    pub fn static_count(&self, task: &str, from: u64, to: u64) -> u64 {
        (from..to)
            .filter(|&s| self.owner(CPU, s) == Some(task))
            .count() as u64
    }

    /// Index of the plan's task `name`.
    pub fn index(&self, name: &str) -> usize {
        self.plan
            .tasks
            .iter()
            .position(|t| t.name == name)
            .expect("task of the plan")
    }
}

/// The JSON reply of `ctl` request NAME (`Null` when absent or not JSON), printed for the test log.
pub fn reply(out: &VmOutput, name: &str) -> serde_json::Value {
    let v = out.reply(name);
    println!("  {name}: {v}");
    v
}

/// Checks that `ctl` request NAME was refused: client exit `rc` and the raw reply (printed)
/// containing `words`; `what` says what the check means.
pub fn check_refused(
    c: &mut Checks,
    out: &VmOutput,
    name: &str,
    rc: &str,
    words: &str,
    what: &str,
) {
    let text = out.file(&format!("{name}.reply")).unwrap_or_default();
    println!("  {name}: {}", text.trim());
    c.check(
        out.rc(name) == rc && text.contains(words),
        format!("{what} (client exit {})", out.rc(name)),
    );
}

/// The planner-mode summary checks: 0 ns foreign on every managed CPU (exact); each `tt` task
/// (but those in `skip`) delivered at least `min_delivered_pct` % of its owned time, if given
/// (timing); `planner_late_slots` present (exact) and at most `LATE_PCT` % of the run's slots
/// (timing). Returns the slots whose decision missed their tick: decided late plus written
/// late (`Summary::planner_late`).
pub fn check_summary(
    c: &mut Checks,
    s: &Summary,
    min_delivered: Option<(f64, String)>,
    skip: &[&str],
) -> u64 {
    check_summary_foreign(c, s, min_delivered, skip, 0)
}

/// The delivered-share bound of run `run`, and how it came about: [`MIN_DELIVERED_PCT`] less
/// the share of the planned time of its tt tasks that kthreads and the slot clock thread took
/// on the managed CPUs by the witness ([`crate::witness::Taken`]; on the rt kernels 5-12 %, on
/// the cloud kernel < 1 %). Without a readable witness: a failed check and the plain bound.
pub fn delivered_bound(c: &mut Checks, out: &VmOutput, run: &str, s: &Summary) -> (f64, String) {
    let planned = s.planned_tt_ns();
    match crate::witness::taken(out, run, s) {
        Ok(t) => (
            t.bound(MIN_DELIVERED_PCT, planned),
            t.explain(MIN_DELIVERED_PCT, planned),
        ),
        Err(e) => {
            c.check(false, format!("{run}: witness: {e}"));
            (MIN_DELIVERED_PCT, format!("{MIN_DELIVERED_PCT} %"))
        }
    }
}

/// [`check_summary`] of a run in which tasks left the plan at run time: scx_tt's own records
/// count a released thread as foreign from the deletion of its task-map entry until the kick
/// reaches it (it may be running on its CPU then), so each managed CPU may count up to
/// `foreign_allowed_ns` (the witness skips that window, `Bounds::left`).
pub fn check_summary_foreign(
    c: &mut Checks,
    s: &Summary,
    min_delivered: Option<(f64, String)>,
    skip: &[&str],
    foreign_allowed_ns: u64,
) -> u64 {
    for cpu in s.managed() {
        cpu.check_foreign(c, foreign_allowed_ns, "threads leaving the plan");
    }
    if let Some((min, why)) = min_delivered {
        for t in s
            .tasks
            .iter()
            .filter(|t| t.class == "tt" && !skip.contains(&t.name.as_str()))
        {
            c.check_timing(
                t.planned_ns > 0 && t.delivered_pct() >= min,
                format!(
                    "{}: delivered {:.1} % of its owned time (>= {min:.1} %: {why})",
                    t.name,
                    t.delivered_pct()
                ),
            );
        }
    }
    let slots = s.duration_ns / (s.slot_us * 1000).max(1);
    let late = s.planner_late_slots;
    let writes = s.planner_late_writes.as_ref().map_or(0, |w| w.slots);
    let pct = pct(late.unwrap_or(0), slots);
    println!(
        "--- planner_late_slots {late:?} of {slots} slots ({pct:.2} %); planner_late_writes {writes} \
         (first {:?})",
        s.planner_late_writes.as_ref().map(|w| &w.first)
    );
    c.check(
        late.is_some(),
        "the summary JSON has planner_late_slots".into(),
    );
    c.check_timing(
        pct <= LATE_PCT,
        format!("planner_late_slots {late:?} is {pct:.2} % of {slots} slots (<= {LATE_PCT} %)"),
    );
    s.planner_late()
}

/// An owner check of a planner-mode trace: exact when every slot's decision reached BPF before
/// its tick; with `late` slots decided or written late the owners then lag the planner by
/// design (such a slot runs the entry before), so the check becomes a timing check.
pub fn check_owners(c: &mut Checks, late: u64, ok: bool, what: String) {
    if late == 0 {
        c.check(ok, what)
    } else {
        c.check_timing(ok, format!("{what} [{late} late slots]"))
    }
}

/// The trace records of `CPU`, in trace order.
pub fn on_cpu(trace: &[SlotRecord]) -> Vec<&SlotRecord> {
    trace.iter().filter(|r| r.cpu == CPU).collect()
}

/// How many of `records` have a slot in `[from, to)`.
pub fn recorded(records: &[&SlotRecord], from: u64, to: u64) -> u64 {
    records
        .iter()
        .filter(|r| (from..to).contains(&r.slot))
        .count() as u64
}

/// How many of `records` with a slot in `[from, to)` `task` owns.
pub fn owned(records: &[&SlotRecord], task: &str, from: u64, to: u64) -> u64 {
    records
        .iter()
        .filter(|r| (from..to).contains(&r.slot) && harness::tt_owner(r) == Some(task))
        .count() as u64
}

/// Conformance (issue 13 item 5): `scx_tt simulate --replay` of run `run`'s planner log
/// (`RUN.plog`, written by `--planner-log`) against its trace, on the plan at `plan_path`. The
/// replay must name the owner the kernel ran in 100 % of the slots when the run decided no slot
/// late (exact), >= 99 % otherwise (timing); at least `min_slots` compared. Returns the replay's
/// output (planner_loop reads its firm admissions from it).
pub fn conformance(
    c: &mut Checks,
    out: &VmOutput,
    plan_path: &std::path::Path,
    run: &str,
    min_slots: u64,
) -> String {
    let late = out
        .summary(&format!("{run}.json"))
        .ok()
        .map_or(0, |s| s.planner_late());
    let files = out.dir.join("files");
    let replay = std::process::Command::new(harness::repo().join("target/release/scx_tt"))
        .args(["simulate", "--table"])
        .arg(plan_path)
        .arg("--replay")
        .arg(files.join(format!("{run}.plog")))
        .arg("--replay-trace")
        .arg(files.join(format!("{run}.trace.jsonl")))
        .output();
    let Ok(replay) = replay else {
        c.check(false, format!("{run}: running scx_tt simulate --replay"));
        return String::new();
    };
    let text = String::from_utf8_lossy(&replay.stdout).to_string();
    println!(
        "--- {run}: scx_tt simulate --replay\n{text}{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    c.check(
        replay.status.success(),
        format!("{run}: simulate --replay exit {:?}", replay.status.code()),
    );
    let conf = text
        .lines()
        .find(|l| l.starts_with("conformance: "))
        .unwrap_or("");
    let nums: Vec<u64> = conf
        .split(|ch: char| !ch.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    let (same, total) = (
        nums.first().copied().unwrap_or(0),
        nums.get(1).copied().unwrap_or(0),
    );
    let pct = 100.0 * same as f64 / total.max(1) as f64;
    let what = format!(
        "{run}: conformance {same} of {total} slots ({pct:.2} %), {late} late planner slots"
    );
    if late == 0 {
        c.check(
            total >= min_slots && same == total,
            format!("{what}: want 100 % of >= {min_slots}"),
        );
    } else {
        c.check_timing(
            total >= min_slots && pct >= 99.0,
            format!("{what}: want >= 99 % of >= {min_slots}"),
        );
    }
    text
}

/// The closing checks of a run that admitted tasks at run time (`admit`, `resume`): the replay
/// of RUN's planner log against the plan at `plan` (a path in the repository) conforms, scx_tt
/// exited cleanly, and the witness judges each task of `joined` (name, first slot) from its
/// first slot on (`Bounds::joined`), each of `left` (name, `[from, until)` ns) as having left
/// the plan in that window (`Bounds::left`), and none of `joining` (name, `[from, until)` ns:
/// BPF registered it then, an aperiodic task's first slot may come before; `Bounds::joining`)
/// in that window.
#[allow(clippy::too_many_arguments)]
pub fn admitted_run_closing(
    c: &mut Checks,
    out: &VmOutput,
    plan: &str,
    run: &str,
    s: &Summary,
    joined: &[(&str, u64)],
    left: &[(&str, (u64, u64))],
    joining: &[(&str, (u64, u64))],
) {
    admitted_run_closing_with(
        c,
        out,
        (plan, run, s),
        (joined, left, joining),
        crate::witness::Bounds::default(),
    );
}

/// Tasks that joined or left at run time, by name (see [`admitted_run_closing`]): joined (first
/// slot), left (`[from, until)` ns), joining (`[from, until)` ns).
pub type Admitted<'a> = (
    &'a [(&'a str, u64)],
    &'a [(&'a str, (u64, u64))],
    &'a [(&'a str, (u64, u64))],
);

/// [`admitted_run_closing`] with the witness bounds `b` (a scenario's own timing bounds).
pub fn admitted_run_closing_with(
    c: &mut Checks,
    out: &VmOutput,
    (plan, run, s): (&str, &str, &Summary),
    (joined, left, joining): Admitted<'_>,
    mut b: crate::witness::Bounds,
) {
    conformance(c, out, &harness::repo().join(plan), run, 300);
    out.check_clean_exit(c, run);
    let at = |slot: u64| s.t0_ns + slot * s.slot_us * 1000;
    for &(name, slot) in joined {
        b.joined.insert(name.into(), at(slot));
    }
    for &(name, window) in left {
        b.left.insert(name.into(), window);
    }
    for &(name, window) in joining {
        b.joining.insert(name.into(), window);
    }
    crate::witness::check(c, out, run, &b);
}

/// The records of RUN's `--trace` (RUN.trace.jsonl); none, with a failed check saying why, when
/// it cannot be read.
pub fn trace_of(c: &mut Checks, out: &VmOutput, run: &str) -> Vec<SlotRecord> {
    out.records(&format!("{run}.trace.jsonl"))
        .unwrap_or_else(|e| {
            c.check(false, format!("trace: {e}"));
            Vec::new()
        })
}

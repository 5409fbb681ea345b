//! VM test of run-time admission of tasks the plan does not name (issue 15 items 1-4 and 7;
//! docs/control.md, `admit`): `scx_tt --planner bss` on admit.json at `-smp 2` (managed CPU 1,
//! 10 ms slots, frame 10: tt-a 4 of every 10, be in the slack). Outside the plan: two busy
//! processes and two real QEMU VMs (nested TCG, a vCPU spinning in its boot sector). `ctl admit
//! --pid` takes the first process as `app`, 3 slots every 10; `--qemu vm1 --util 0.2
//! --latency-us 100000` takes vm1's vCPU thread, 1 slot every 5; vm2 does not fit, nor 5 of 10
//! for the second process (`big`); a SCHED_FIFO thread is refused; vm1 is killed, its capacity
//! freed, and vm2 then fits. app is removed by request; then a new busy process `job` is
//! admitted aperiodic (`--wcet-slots 6 --deadline-slots 30 --after leave`).
//!
//! Judged by the kernel's records and by the witness:
//! - `app` accepted (exit 0) on CPU 1 from a frame start F; `big` rejected (exit 3) with the
//!   planner's reason naming its timing and the CPU; a SCHED_FIFO thread refused (exit 1) with
//!   the reason and what to do;
//! - from F on, `app` owns at least 3 slots and tt-a at least 4 of every whole frame recorded,
//!   vm1 at least 2 while admitted (none after it is gone) and vm2 at least 2 from its first
//!   slot (one more when a platform loss was given back from free capacity; exact unless the
//!   planner decided a slot late; the planner's decisions are judged exactly by the replay);
//!   tt-a and app delivered >= 90 % of the time they owned, the nested vCPUs >= 70 % (timing,
//!   they also wait for their QEMU's main thread); the summary lists `app` with its pid; the
//!   VMs' replies name their `CPU 0/TCG` threads;
//! - the witness (the kernel's sched_switch trace): from F on `app` runs only in its own slots
//!   (outside share within the usual bound, timing), never on the housekeeping CPU; before F
//!   it is outside the plan (`Bounds::joined`); nothing foreign on CPU 1;
//! - the witness, exact: from its registration (the run's `joined the plan in [T1, T2]` line)
//!   until it leaves the plan, neither app's nor job's thread starts a run on the housekeeping
//!   CPU (a joining thread waiting in the housekeeping DSQ is moved to its task: sweep_joined);
//! - job: accepted with its deadline slot; it owns >= 6 slots, all in [first slot, deadline
//!   slot); the run says when its job is over; its thread then leaves the plan (never on CPU 1
//!   again, by the witness); `status` lists it `done`;
//! - conformance: the replay of the planner log (with the admission) names the kernel's owner
//!   in 100 % of the slots;
//! - scx_tt exits 0, sched_ext is disabled.

use crate::harness::{Checks, Summary, Vm, VmOutput};
use crate::planner_checks::{self as pc, check_owners, owned};
use crate::witness;

const RUN: &str = "admit";
const FRAME: u64 = 10;
/// A nested QEMU vCPU's delivered share of its owned time, at least (see `check`).
const VCPU_DELIVERED_PCT: f64 = 70.0;

fn check(out: &VmOutput, c: &mut Checks) {
    out.print_file(&format!("{RUN}.out"));
    let s = match out.summary(&format!("{RUN}.json")) {
        Ok(s) => s,
        Err(e) => return c.check(false, format!("summary: {e}")),
    };
    s.print("admit.json under --planner bss");
    // the busy tasks, the admitted process too, got at least MIN_DELIVERED_PCT % of the time
    // they owned, less the share that kthreads and the slot clock thread took on the managed
    // CPU by the witness (timing; on the rt kernels 5-10 %); the nested QEMU vCPUs are judged
    // below. app and job leave the plan: each may be counted foreign by scx_tt until its kick
    // lands.
    let min = pc::delivered_bound(c, out, RUN, &s);
    let late = pc::check_summary_foreign(c, &s, Some(min), &["vm1", "vm2"], 2 * LEAVE_FOREIGN_NS);
    // A nested-TCG vCPU thread is not always runnable: it waits for its QEMU's main thread (the
    // big lock: timers, interrupts), which runs on the busy housekeeping CPU, so its slots are
    // partly idle by the VM's own doing. Judged: at least VCPU_DELIVERED_PCT (timing; measured
    // 79-89 % under TCG, 2026-11-24); the scheduler's part is judged by the witness below (no
    // run outside its slots, no be work over it while it waits).
    // (a task whose first slot came less than a second before the end is not judged)
    let horizon = s.duration_ns / (s.slot_us * 1000).max(1);
    let first_of = |name: &str| -> u64 {
        [out.reply("vm1"), out.reply("vm2b")]
            .iter()
            .find(|r| r["tasks"][0]["task"] == name)
            .and_then(|r| r["tasks"][0]["from_slot"].as_u64())
            .unwrap_or(u64::MAX)
    };
    for t in s.tasks.iter().filter(|t| t.name.starts_with("vm")) {
        if first_of(&t.name).saturating_add(100) > horizon {
            c.check(
                false,
                format!(
                    "{}: admitted too late to judge (first slot {})",
                    t.name,
                    first_of(&t.name)
                ),
            );
            continue;
        }
        let pct = 100.0 * t.delivered_ns as f64 / t.planned_ns.max(1) as f64;
        c.check_timing(
            t.planned_ns > 0 && pct >= VCPU_DELIVERED_PCT,
            format!(
                "{}: the vCPU thread ran {pct:.1} % of the time its slots gave it (>= \
                 {VCPU_DELIVERED_PCT} %: it also waits for its QEMU's main thread)",
                t.name
            ),
        );
    }
    let app = out.reply("app");
    let big = out.reply("big");
    println!("--- app: rc {} {app}", out.rc("app"));
    println!("--- big: rc {} {big}", out.rc("big"));
    let from = app["tasks"][0]["from_slot"].as_u64();
    c.check(
        out.rc("app") == "0"
            && app["accepted"] == true
            && app["tasks"][0]["cpu"] == 1
            && app["tasks"][0]["wcet_slots"] == 3
            && from.is_some_and(|f| f % FRAME == 0),
        format!("app admitted on CPU 1 from a frame start: {app}"),
    );
    let why = big["why"].as_str().unwrap_or("");
    c.check(
        out.rc("big") == "3"
            && big["accepted"] == false
            && why.starts_with("big: 5 slots every 10 slots on cpu 1: "),
        format!(
            "big rejected with the planner's reason (exit {}): {why:?}",
            out.rc("big")
        ),
    );
    let rt = out.file("rt.reply").unwrap_or_default();
    println!("--- rt: rc {} {}", out.rc("rt"), rt.trim());
    c.check(
        out.rc("rt") == "1" && rt.contains("runs SCHED_FIFO") && rt.contains("chrt -o -p 0"),
        format!(
            "a SCHED_FIFO thread is refused saying why and what to do (exit {})",
            out.rc("rt")
        ),
    );
    let pid: u32 = out.number("app_pid").unwrap_or(0) as u32;
    let listed = s.tasks.iter().find(|t| t.name == "app");
    c.check(
        listed.is_some_and(|t| t.tids == vec![pid] && t.cpu == Some(1) && t.class == "tt"),
        format!("the summary lists app (pid {pid}) on CPU 1: {listed:?}"),
    );
    let Some(f) = from else { return };
    // the VMs: vm1 accepted (its vCPU thread, 1 slot every 5), vm2 rejected while vm1 runs,
    // accepted once vm1 is gone
    let (vm1, vm2, vm2b) = (out.reply("vm1"), out.reply("vm2"), out.reply("vm2b"));
    for (n, r) in [("vm1", &vm1), ("vm2", &vm2), ("vm2b", &vm2b)] {
        println!("--- {n}: rc {} {r}", out.rc(n));
    }
    let vcpu = |vm: &str| -> Vec<u32> {
        out.file(&format!("{vm}.threads"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.ends_with(" CPU 0/TCG"))
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect()
    };
    let (t1, t2) = (vcpu("vm1"), vcpu("vm2"));
    c.check(
        !t1.is_empty() && !t2.is_empty(),
        format!("each QEMU has a vCPU thread named CPU 0/TCG (vm1 {t1:?}, vm2 {t2:?})"),
    );
    let timing_of = |r: &serde_json::Value| {
        (
            r["tasks"][0]["period_slots"].as_u64(),
            r["tasks"][0]["wcet_slots"].as_u64(),
        )
    };
    c.check(
        out.rc("vm1") == "0"
            && vm1["accepted"] == true
            && vm1["tasks"].as_array().map(Vec::len) == Some(1)
            && vm1["tasks"][0]["task"] == "vm1"
            && timing_of(&vm1) == (Some(5), Some(1))
            && vm1["tasks"][0]["tids"] == serde_json::json!(t1),
        format!(
            "vm1 admitted by its QEMU name: its vCPU thread, util 0.2 within 100 ms = 1 slot \
             every 5: {vm1}"
        ),
    );
    c.check(
        out.rc("vm2") == "3"
            && vm2["accepted"] == false
            && vm2["why"]
                .as_str()
                .is_some_and(|w| w.starts_with("vm2: 1 slots every 5 slots on cpu 1: ")),
        format!("vm2 rejected while vm1 runs (4 + 3 + 2 + 2 > 10): {vm2}"),
    );
    c.check(
        out.rc("vm2b") == "0"
            && vm2b["accepted"] == true
            && vm2b["tasks"][0]["tids"] == serde_json::json!(t2),
        format!("vm2 admitted once vm1 is gone: {vm2b}"),
    );
    let log = out.file(&format!("{RUN}.out")).unwrap_or_default();
    let gone: Option<u64> = log
        .lines()
        .find(|l| l.contains("admit vm1: its threads are gone: no slots from slot "))
        .and_then(|l| {
            l.rsplit("from slot ")
                .next()?
                .split(',')
                .next()?
                .trim()
                .parse()
                .ok()
        });
    c.check(
        gone.is_some(),
        format!(
            "the run noticed vm1's vCPU thread gone and freed its capacity (from slot {gone:?})"
        ),
    );
    let (f1, f2) = (
        vm1["tasks"][0]["from_slot"].as_u64().unwrap_or(u64::MAX),
        vm2b["tasks"][0]["from_slot"].as_u64().unwrap_or(u64::MAX),
    );
    let r1 = gone.unwrap_or(u64::MAX);
    // app removed by request: from the reply's slot on it owns nothing, and its thread runs
    // as any other process (on the housekeeping CPU; the witness judges CPU 1 below)
    let rm = out.reply("rm_app");
    println!("--- rm_app: rc {} {rm}", out.rc("rm_app"));
    let rm_from = rm["removed"]["from_slot"]
        .as_u64()
        .or_else(|| rm["from_slot"].as_u64());
    c.check(
        out.rc("rm_app") == "0" && rm_from.is_some(),
        format!("remove --task app: accepted with its first slot without app ({rm})"),
    );
    let rm_from = rm_from.unwrap_or(u64::MAX);
    let index_of = |name: &str| s.tasks.iter().position(|t| t.name == name);
    let released = index_of("app").and_then(|i| log_window(&log, i, "left"));
    c.check(
        released.is_some(),
        format!("the run's log says when app's thread left BPF's task map ({released:?})"),
    );
    if let (Some((_, registered)), Some((leaving, _))) = (
        index_of("app").and_then(|i| registration(&log, i, "joined")),
        released,
    ) {
        check_no_housekeeping_start(c, out, &s, "app", pid, (registered, leaving));
    }
    // not judged until the kick reached a thread running on CPU 1 then
    let left = released.map(|(a, b)| (a, b + LEAVE_GRACE_NS));
    if let Some(w) = left {
        check_left(c, out, &s, "app", pid, w.1);
    }
    let job = check_job(c, out, &s, &log);
    let joined = |name: &str| index_of(name).and_then(|i| log_window(&log, i, "joined"));
    let trace = pc::trace_of(c, out, RUN);
    let cpu1 = pc::on_cpu(&trace);
    let last = cpu1.iter().map(|r| r.slot).max().unwrap_or(0);
    // per whole frame from app's first: app 3, tt-a 4, vm1 2 while admitted (frames that
    // straddle its first slot or its removal are not judged for it), vm2 2 from its first; at
    // least those: the closed loop gives a task the work the platform took from a slot back
    // from free capacity (docs/planner.md "Platform losses"), which can make it one more (the
    // planner's decisions themselves are judged exactly by the replay below)
    let mut wrong = Vec::new();
    let mut frames = 0;
    let mut k = f / FRAME;
    while (k + 1) * FRAME <= last + 1 {
        let (a, b) = (k * FRAME, (k + 1) * FRAME);
        let got = |t: &str| owned(&cpu1, t, a, b);
        let want_vm = |from: u64, to: u64| -> Option<u64> {
            if b <= from || a >= to {
                Some(0)
            } else if a >= from && b <= to {
                Some(2)
            } else {
                None
            }
        };
        frames += 1;
        let at_least = |t: &str, w: u64| if w == 0 { got(t) == 0 } else { got(t) >= w };
        let app_ok = if b <= rm_from {
            at_least("app", 3)
        } else if a >= rm_from {
            got("app") == 0
        } else {
            true
        };
        let ok = app_ok
            && at_least("tt-a", 4)
            && want_vm(f1, r1).is_none_or(|w| at_least("vm1", w))
            && want_vm(f2, u64::MAX).is_none_or(|w| at_least("vm2", w));
        if !ok {
            wrong.push((a, got("app"), got("tt-a"), got("vm1"), got("vm2")));
        }
        k += 1;
    }
    check_owners(
        c,
        late,
        frames >= 10 && wrong.is_empty(),
        format!(
            "from slot {f}: each of {frames} frames: app >= 3 until {rm_from} (0 after), tt-a >= \
             4, vm1 >= 2 in [{f1}, {r1}) (0 outside), vm2 >= 2 from {f2} (wrong: (slot, app, \
             tt-a, vm1, vm2) {wrong:?})"
        ),
    );
    // the aperiodic job: its 6 slots, all within [first slot, deadline slot), none after
    if let Some(j) = &job {
        let inside = owned(&cpu1, "job", j.from, j.deadline);
        let all = owned(&cpu1, "job", 0, u64::MAX);
        check_owners(
            c,
            late,
            inside >= 6 && all == inside,
            format!(
                "job owns {inside} slots in [{}, {}) (>= 6: its wcet; more only when the closed \
                 loop gave a platform loss back) and {} outside",
                j.from,
                j.deadline,
                all - inside
            ),
        );
    }
    let before = owned(&cpu1, "app", 0, f);
    c.check(
        before == 0,
        format!("app owns no slot before its first ({before})"),
    );
    pc::admitted_run_closing(
        c,
        out,
        "tests/vm/scenarios/admit/admit.json",
        RUN,
        &s,
        &[
            ("app", judged_from(&s, f, joined("app"))),
            ("vm1", judged_from(&s, f1, joined("vm1"))),
            ("vm2", judged_from(&s, f2, joined("vm2"))),
            (
                "job",
                job.as_ref()
                    .map_or(u64::MAX, |j| judged_from(&s, j.from, j.joining)),
            ),
        ],
        &left
            .map(|w| ("app", w))
            .into_iter()
            .chain(job.as_ref().and_then(|j| j.left).map(|w| ("job", w)))
            .collect::<Vec<_>>(),
        &["app", "vm1", "vm2"]
            .into_iter()
            .filter_map(|n| joined(n).map(|(a, b)| (n, (a, b + JOIN_HANDOVER_NS))))
            .chain(job.as_ref().and_then(|j| j.joining).map(|w| ("job", w)))
            .collect::<Vec<_>>(),
    );
}

/// After its registration, a thread that was running on a housekeeping CPU runs on there until
/// its be slice (20 ms) ends: BPF does not kick it when it joins the plan (a fresh-clone CI run
/// saw app run 20.3 ms on CPU 0 after its first judged slot, 2026-11-29). The witness does not
/// judge it as a tt task until then (`Bounds::joining`; the registration window already has
/// [`LEAVE_GRACE_NS`] after it).
pub(crate) const JOIN_HANDOVER_NS: u64 = 20_000_000;

/// "scx_tt: task I WHAT the plan in [T1, T2] ns (CLOCK_MONOTONIC): ..." (WHAT: `left` or
/// `joined`) of BPF task `index`, widened by [`LEAVE_GRACE_NS`].
pub(crate) fn log_window(log: &str, index: usize, what: &str) -> Option<(u64, u64)> {
    log.lines()
        .find(|l| l.contains(&format!("task {index} {what} the plan in [")))
        .and_then(|l| {
            let inner = l.split('[').nth(1)?.split(']').next()?;
            let (a, b) = inner.split_once(',')?;
            let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            Some((a, b + LEAVE_GRACE_NS))
        })
}

/// The aperiodic task `job`: its first slot, its deadline slot, and when its thread left the
/// plan after the job.
struct Job {
    from: u64,
    /// When BPF registered its thread, widened by the kick's time to move it (ns): its first
    /// slot may come before that ends (the control path under TCG can be slower than the
    /// planner's lead; the closed loop gives a slot it missed back); not judged in it.
    joining: Option<(u64, u64)>,
    deadline: u64,
    left: Option<(u64, u64)>,
}

/// `job` (`admit --pid --wcet-slots 6 --deadline-slots 30 --after leave`): accepted with its
/// deadline slot; once its job has had its slots the run says so and BPF lets go of its thread,
/// which then runs only on the housekeeping CPU; `status` lists it `done`; the summary lists
/// it on CPU 1 with its 6 slots planned.
fn check_job(c: &mut Checks, out: &VmOutput, s: &Summary, log: &str) -> Option<Job> {
    let r = out.reply("job");
    println!("--- job: rc {} {r}", out.rc("job"));
    let t = &r["tasks"][0];
    let (from, deadline) = (t["from_slot"].as_u64(), t["deadline_slot"].as_u64());
    c.check(
        out.rc("job") == "0"
            && r["accepted"] == true
            && t["cpu"] == 1
            && t["wcet_slots"] == 6
            && t["after"] == "leave"
            && from
                .zip(deadline)
                .is_some_and(|(f, d)| d > f && d <= f + 32),
        format!("job admitted aperiodic on CPU 1 with its deadline slot: {r}"),
    );
    let (from, deadline) = (from?, deadline?);
    let done = log
        .lines()
        .find(|l| l.contains("admit job: its job had its 6 slots before slot "));
    println!(
        "--- {}",
        done.unwrap_or("job: no line says its job is over")
    );
    c.check(
        done.is_some_and(|l| l.contains("its threads run on the housekeeping CPUs")),
        "the run says when job's job had its slots and that its thread leaves the plan".to_string(),
    );
    let st = out.reply("st");
    let state = st["planner"]["tasks"]
        .as_array()
        .and_then(|ts| ts.iter().find(|x| x["task"] == "job"))
        .map(|x| x["state"].clone());
    c.check(
        state == Some(serde_json::json!("done")),
        format!("status lists job done after its job ({state:?})"),
    );
    let listed = s.tasks.iter().position(|t| t.name == "job");
    let planned = listed.map(|i| s.tasks[i].planned_ns);
    // its slots are in the trace only when the planner wrote them in time (a late slot runs
    // the entry before: an owner check, exact without late slots)
    pc::check_owners(
        c,
        s.planner_late(),
        listed.is_some_and(|i| s.tasks[i].cpu == Some(1))
            && planned.is_some_and(|p| p >= 6 * s.slot_us * 1000),
        format!("the summary lists job on CPU 1 with its 6 slots planned ({planned:?} ns)"),
    );
    let left = listed.and_then(|i| log_window(log, i, "left"));
    c.check(
        left.is_some(),
        format!("the run's log says when job's thread left BPF's task map ({left:?})"),
    );
    let pid = out.number("job_pid").unwrap_or(0) as u32;
    if let Some(w) = left {
        check_left(c, out, s, "job", pid, w.1);
    }
    // "scx_tt: task I joined the plan in [T1, T2] ns (CLOCK_MONOTONIC): ..."
    let joining = listed.and_then(|i| log_window(log, i, "joined"));
    c.check(
        joining.is_some(),
        format!("the run's log says when BPF registered job's thread ({joining:?})"),
    );
    if let (Some((_, registered)), Some((leaving, _))) =
        (listed.and_then(|i| registration(log, i, "joined")), left)
    {
        check_no_housekeeping_start(c, out, s, "job", pid, (registered, leaving));
    }
    Some(Job {
        from,
        joining,
        deadline,
        left,
    })
}

/// The first slot from which a task admitted at run time is judged as a task of the plan:
/// its first slot `from`, or the first slot that starts after BPF began registering its thread
/// (`joining`, the run's "joined the plan in [T1, T2]") when that came later: on a loaded host
/// the control path can be slower than the planner's lead, and until its registration the
/// thread is a process outside the plan, which runs on the housekeeping CPU (the registration
/// itself is `Bounds::joining`).
pub(crate) fn judged_from(s: &Summary, from: u64, joining: Option<(u64, u64)>) -> u64 {
    let slot_ns = (s.slot_us * 1000).max(1);
    let registering = joining.map_or(0, |(t1, _)| t1.saturating_sub(s.t0_ns).div_ceil(slot_ns));
    from.max(registering)
}

/// What scx_tt's own records may count as foreign per task that leaves the plan: a thread
/// running on CPU 1 when BPF lets go of it runs on until the kick lands (TCG: 1-2 ms seen).
pub(crate) const LEAVE_FOREIGN_NS: u64 = 5_000_000;

/// The window "scx_tt: task I WHAT the plan in [T1, T2] ns" of BPF task `index` (WHAT:
/// `joined` or `left`), as the run logged it.
fn registration(log: &str, index: usize, what: &str) -> Option<(u64, u64)> {
    log_window(log, index, what).map(|(a, b)| (a, b - LEAVE_GRACE_NS))
}

/// Exact, by the witness: after its registration (`joined` window's end: join_task has run)
/// until it leaves the plan, the thread `pid` of `name` never starts a run on a housekeeping
/// CPU. At its registration the thread waits in the housekeeping DSQ (the control thread
/// that registers it holds the only housekeeping CPU at -smp 2). Before the sweep of that DSQ
/// (src/bpf/tt_sched.bpf.c, sweep_joined) it waited there behind every other process and then
/// started on CPU 0 once more, every time (0.1-0.25 ms until ops.running's kick ended the run;
/// on a loaded host 54 ms in the queue first, over its task's first slots, which went to be
/// work: a fresh-clone run, issue 31).
fn check_no_housekeeping_start(
    c: &mut Checks,
    out: &VmOutput,
    s: &Summary,
    name: &str,
    pid: u32,
    (from, until): (u64, u64),
) {
    let starts: Vec<(u32, u64)> = out
        .file(&format!("{RUN}.witness"))
        .ok()
        .and_then(|t| witness::parse(&t).ok())
        .map(|events| {
            witness::segments(&events, s.t0_ns + s.duration_ns)
                .into_iter()
                .filter(|g| g.pid == pid && g.cpu != 1 && g.start > from && g.start < until)
                .map(|g| (g.cpu, g.start - from))
                .collect()
        })
        .unwrap_or_else(|| vec![(u32::MAX, 0)]);
    c.check(
        starts.is_empty(),
        format!(
            "{name}: witness: no run started on a housekeeping CPU between its registration \
             and its leaving ({} ms): {} (first: (CPU, ns after the registration) {:?})",
            until.saturating_sub(from) / 1_000_000,
            starts.len(),
            starts.first()
        ),
    );
}

/// After a thread that ran on the managed CPU when BPF let go of it got the kick (timer + IPI
/// under TCG: a few ms), it is outside the plan.
pub(crate) const LEAVE_GRACE_NS: u64 = 20_000_000;

/// After it left the plan, task `name`'s busy thread `pid` runs on the housekeeping CPU 0 (BPF
/// moved it off CPU 1's queue and out of the task map): never on CPU 1 (exact), and at least a
/// fifth of the time from `from` to the end (or its exit) on CPU 0 (timing: CPU 0 is shared
/// with app or job, the QEMU main threads and the guest's own work; measured 30-50 %).
fn check_left(c: &mut Checks, out: &VmOutput, s: &Summary, name: &str, pid: u32, from: u64) {
    let events = match out
        .file(&format!("{RUN}.witness"))
        .and_then(|t| witness::parse(&t).map_err(|e| e.to_string()))
    {
        Ok(e) => e,
        Err(e) => return c.check(false, format!("witness: {e}")),
    };
    let run_end = s.t0_ns + s.duration_ns;
    let segments = witness::segments(&events, run_end);
    // a thread killed before the end: judged until its last run
    let end = segments
        .iter()
        .filter(|g| g.pid == pid)
        .map(|g| g.end)
        .max()
        .unwrap_or(run_end)
        .min(run_end);
    let on = |cpu: u32| -> u64 {
        segments
            .iter()
            .filter(|g| g.pid == pid && g.cpu == cpu)
            .map(|g| g.end.min(end).saturating_sub(g.start.max(from)))
            .sum()
    };
    let (cpu0, cpu1) = (on(0), on(1));
    let window = end.saturating_sub(from);
    println!(
        "  {name} after it left the plan ({:.2} s): {:.1} ms on CPU 0, {:.1} ms on CPU 1",
        window as f64 / 1e9,
        cpu0 as f64 / 1e6,
        cpu1 as f64 / 1e6
    );
    c.check(
        window > 0 && cpu1 == 0,
        format!("{name} never ran on the managed CPU after it left the plan ({cpu1} ns)"),
    );
    c.check_timing(
        window > 0 && cpu0 * 5 >= window,
        format!(
            "{name}'s thread ran on the housekeeping CPU after it left the plan ({:.1} of {:.1} \
             ms, >= a fifth)",
            cpu0 as f64 / 1e6,
            window as f64 / 1e6
        ),
    );
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn a_process_outside_the_plan_is_admitted_at_run_time_and_runs_only_in_its_slots() {
    Vm::new("admit").smp(2).timeout_s(400).check(check);
}

/// Checks an earlier boot's run directory again, e.g. one left by the code before a fix:
/// `SCX_TT_ADMIT_DIR=target/vm/runs/admit cargo test --release --test vm admit::run_dir --
/// --ignored --nocapture` (make test-vm skips it).
#[test]
#[ignore = "reads SCX_TT_ADMIT_DIR"]
fn run_dir() {
    let dir = std::env::var("SCX_TT_ADMIT_DIR").expect("SCX_TT_ADMIT_DIR");
    let out = crate::harness::open_run(std::path::Path::new(&dir)).expect("a run directory");
    let mut c = Checks::default();
    check(&out, &mut c);
    c.finish();
}

//! VM test of the restart on CPU hotplug (docs/run-output.md, "Restarts"), at `-smp 3` with the
//! switch scenario's switch_a.json (managed CPU 1, housekeeping CPU 0; CPU 2 is not in the plan
//! and housekeeps by default).
//!
//! Case 1: while scx_tt runs (`--control`, `--trace`), a table switch to switch_b.json, then
//! CPU 2 goes offline. Exact checks: the kernel exited the scheduler asking for a restart and
//! scx_tt attached again, seen from scx_tt (stderr, `restarts` = 1 in the summary JSON, exit 0,
//! `duration`) and independently from the kernel (sched_ext's `enable_seq` grew by 2 over the
//! run, `hotplug_seq` grew, dmesg logs the kernel, not user space, unregistering tt and tt
//! enabled again, the root ops is tt again, CPU 2 left the online list); the spawned tasks kept their pids (children
//! of scx_tt before and after, the summary's tids); the control socket answered after the
//! restart; every trace record has the owner of the table in force (switch_a.json before the
//! switch slot, switch_b.json from it, also after the restart: the switched table was carried
//! into the new scheduler), with records after the restart on the same slot grid (numbers go
//! on); sched_ext is `disabled` at the end. Timing check (measured again if only it fails):
//! each tt task gets >= 90 % of its planned time over the run; the share after the restart is
//! printed.
//!
//! Case 3: the same hotplug in planner mode (`--planner bss`): exit 0, `restarts` = 1, tt
//! owners in the records after the restart (a new planner thread steps the kept planner).
//!
//! Case 2: CPU 1 (managed) goes offline: scx_tt reports one restart request only (and dmesg
//! no enable after the kernel's exit), fails naming the CPU, exits 1 with sched_ext
//! `disabled`, its summary written (`scheduler_exited`), and no spawned task left.

use crate::harness::{self, Checks, Vm, VmOutput};
use crate::planner_checks::Table;
use scx_tt::trace::SlotRecord;

/// The hotplug run's --duration-s: its attach (4-6 s of verification under TCG), 4 s of table
/// switch, the offline and a restart that verifies again (3.8 s loaded, 6.2 s re-enabled after
/// the offline in a fresh-clone run, 2026-11-29), then the checks after it. At 14 s that run's
/// duration ended 70 ms after it enforced again, before the status and children read after
/// the restart.
const DURATION_S: u64 = 24;
const MIN_DELIVERED_PCT: f64 = 90.0;
const CPU: u32 = 1;
/// scx_tt reports the first slot after it armed every managed CPU's timer; a timer armed
/// earlier in the call (or the slot in progress when it was) may record up to this many slots
/// before it (arming takes a few ms, more under TCG).
const ARM_SLOTS: u64 = 5;

#[test]
#[ignore = "boots a VM: make test-vm"]
fn a_hotplug_restart_keeps_tasks_table_and_run_and_a_managed_cpu_going_ends_it() {
    Vm::new("restart")
        .smp(3)
        .timeout_s(300)
        .arg("duration_s", DURATION_S)
        .check(check);
}

fn check(out: &VmOutput, c: &mut Checks) {
    for (k, v) in &out.results {
        println!("  {k} = {v}");
    }
    hotplug(c, out);
    // Record agreement: 2.0-2.4 % of this scenario's records (10 ms slots, a table switch and
    // a be spinner next to the owners) differ from the witness by more than the tolerance
    // (measured in session 7 over six runs, |diff| p99 240-320 us); other scenarios stay
    // below 1 %. The bound here is 3 %, and every run prints the measured share.
    let bounds = crate::witness::Bounds {
        disagree_share: 0.03,
        ..crate::witness::Bounds::default()
    };
    let hot = crate::witness::check(c, out, "hotplug", &bounds);
    // what ran on the managed CPU beside the plan, by the witness: kernel threads, and the
    // helper-thread slot clock (none under the bpf_timer)
    let taken = hot.map_or(crate::witness::Taken::default(), |r| {
        crate::witness::Taken {
            kthread_ns: r.kthread_ns.values().sum::<u64>()
                + r.other_kthread_ns.values().sum::<u64>(),
            clock_ns: r.clock_ns.values().sum(),
        }
    });
    delivered(c, out, taken);
    // app (admitted at run time) is judged from its first slot on
    let mut bounds = bounds;
    let json: serde_json::Value = out.json("planner.json").unwrap_or_default();
    if let (Some(f), Some(t0), Some(slot_us)) = (
        out.reply("app")["tasks"][0]["from_slot"].as_u64(),
        json["t0_ns"].as_u64(),
        json["slot_us"].as_u64(),
    ) {
        bounds.joined.insert("app".into(), t0 + f * slot_us * 1000);
    }
    crate::witness::check(c, out, "planner", &bounds);
    planner_mode(c, out);
    managed_cpu(c, out);
}

/// The slot from which the restarted scheduler enforces, from scx_tt's stderr line.
fn restart_slot(err: &str) -> Option<u64> {
    let line = err.lines().find(|l| l.contains("attached again"))?;
    line.rsplit("from slot ").next()?.trim().parse().ok()
}

/// The checks of the hotplug run but its delivered shares (which take the witness's figures).
fn hotplug(c: &mut Checks, out: &VmOutput) {
    let err = out.file("hotplug.err").unwrap_or_default();
    let stdout = out.file("hotplug.out").unwrap_or_default();
    let json: serde_json::Value = out.json("hotplug.json").unwrap_or_default();
    c.check(
        out.rc("hotplug") == "0" && out.result("hotplug_state") == Ok("disabled"),
        format!(
            "exit code {} (want 0), sched_ext {:?} at the end",
            out.rc("hotplug"),
            out.result("hotplug_state")
        ),
    );
    c.check(
        out.result("offline_rc") == Ok("0") && out.result("cpus_after_offline") == Ok("0-1"),
        format!(
            "CPU 2 went offline (rc {:?}, online {:?})",
            out.result("offline_rc"),
            out.result("cpus_after_offline")
        ),
    );
    c.check(
        json["restarts"] == 1 && json["exit"] == "duration",
        format!(
            "summary: restarts {} (want 1), exit {}",
            json["restarts"], json["exit"]
        ),
    );
    let asked = err.matches("the kernel asked for a restart").count();
    c.check(
        asked == 1
            && err.contains("cpu 2 going offline")
            && err.contains("restart 1: the BPF scheduler is attached again"),
        format!("stderr reports one restart request ({asked}) for cpu 2 and the re-attach"),
    );
    c.check(
        stdout.contains("scheduler restarts") && stdout.contains("1: cpu 2 going offline"),
        "stdout lists the restart after the summary".into(),
    );
    // issue 11 item 4: the guard band is calibrated once, at the start; the restart keeps it
    let calibrated = err.matches("scx_tt: guard band").count();
    c.check(
        calibrated == 1 && json["guard"]["source"] == "calibrated",
        format!(
            "the guard band was calibrated once ({calibrated} stderr lines) and kept by the \
             restart: {} us ({})",
            json["guard"]["us"], json["guard"]["source"]
        ),
    );
    kernel_evidence(c, out);
    same_children(c, out, &json);
    c.check(
        out.rc("status_after") == "0",
        format!(
            "the control socket answered after the restart (ctl exit {})",
            out.rc("status_after")
        ),
    );
    trace_owners(c, out, &json, restart_slot(&err));
}

/// What the kernel says, independently of scx_tt.
fn kernel_evidence(c: &mut Checks, out: &VmOutput) {
    let dmesg = out.file("dmesg.txt").unwrap_or_default();
    c.check(
        out.result("enable_seq_delta") == Ok("2"),
        format!(
            "sched_ext enabled a scheduler twice during the run (enable_seq +{:?})",
            out.result("enable_seq_delta")
        ),
    );
    c.check(
        out.number("hotplug_seq_delta").unwrap_or(0) >= 1,
        format!(
            "sched_ext saw the hotplug (hotplug_seq +{:?})",
            out.result("hotplug_seq_delta")
        ),
    );
    let tt = |key: &str| out.result(key).is_ok_and(|ops| ops.starts_with("tt_"));
    c.check(
        tt("ops_before") && tt("ops_after"),
        format!(
            "the root scheduler is tt before ({:?}) and after ({:?}) the restart; it left \
             `enabled` {:?} ms after the offline and was enabled again {:?} ms later",
            out.result("ops_before"),
            out.result("ops_after"),
            out.result("left_enabled_ms"),
            out.result("reenabled_ms")
        ),
    );
    // The kernel's log of the boot: warm-up (enabled, detached by scx_tt); cases 1 and 3
    // (enabled, unregistered by the kernel, enabled again, detached by scx_tt); case 2
    // (enabled, unregistered by the kernel, never again).
    let lines: Vec<&str> = dmesg
        .lines()
        .filter(|l| l.contains("BPF scheduler \"tt_"))
        .collect();
    let events: Vec<&str> = lines.iter().map(|l| dmesg_event(l)).collect();
    let want = [
        "enabled", "user", // warm-up
        "enabled", "kernel", "enabled", "user", // case 1
        "enabled", "kernel", "enabled", "user", // case 3
        "enabled", "kernel", // case 2
    ];
    c.check(
        events == want,
        format!(
            "dmesg: sched_ext events {events:?}, want {want:?}{}",
            if events == want {
                String::new()
            } else {
                // every sched_ext line of the boot (an error exit has a second line with its
                // message), so that a failure says what the kernel said
                format!(
                    "; the kernel's sched_ext lines:\n    {}",
                    dmesg.lines().collect::<Vec<_>>().join("\n    ")
                )
            }
        ),
    );
}

/// The event a `sched_ext: BPF scheduler "tt_..." ...` line of dmesg says: `enabled`, `user` or
/// `kernel` (unregistered from user space or from the main kernel), or the line itself (any
/// other end: an error, the watchdog, sysrq).
fn dmesg_event(line: &str) -> &str {
    if line.ends_with(" enabled") {
        "enabled"
    } else if line.ends_with("disabled (unregistered from user space)") {
        "user"
    } else if line.ends_with("disabled (unregistered from the main kernel)") {
        "kernel"
    } else {
        line
    }
}

/// The spawned tasks kept their pids across the restart.
fn same_children(c: &mut Checks, out: &VmOutput, json: &serde_json::Value) {
    let before = out.result("children_before").unwrap_or("");
    let after = out.result("children_after").unwrap_or("");
    let mut pids: Vec<u64> = before
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    c.check(
        pids.len() == 3 && before == after,
        format!("scx_tt's children before ({before}) and after ({after}) the restart"),
    );
    let mut tids: Vec<u64> = json["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["tids"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_u64())
        .collect();
    pids.sort_unstable();
    tids.sort_unstable();
    c.check(
        pids == tids,
        format!("the summary's tids {tids:?} are those children"),
    );
}

/// Every record has the owner of the table in force, before and after the restart.
fn trace_owners(c: &mut Checks, out: &VmOutput, json: &serde_json::Value, from: Option<u64>) {
    let records: Vec<SlotRecord> = out
        .records("hotplug.trace.jsonl")
        .unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (
        Table::of("switch", "switch_a.json"),
        Table::of("switch", "switch_b.json"),
    );
    let switch = json["table_switches"][0]["slot"].as_u64();
    c.check(
        switch.is_some() && from.is_some_and(|f| switch < Some(f)),
        format!("the switch (slot {switch:?}) came before the restart (slot {from:?})"),
    );
    let (Some(switch), Some(from)) = (switch, from) else {
        return;
    };
    let cpu: Vec<&SlotRecord> = records.iter().filter(|r| r.cpu == CPU).collect();
    let wrong: Vec<String> = cpu
        .iter()
        .filter_map(|r| {
            let table = if r.slot < switch { &a } else { &b };
            let want = table.owner(CPU, r.slot);
            let got = harness::tt_owner(r);
            (got != want).then(|| format!("slot {}: {got:?}, want {want:?}", r.slot))
        })
        .collect();
    // the restart's gap: the longest run of slots without a record
    let mut slots: Vec<u64> = cpu.iter().map(|r| r.slot).collect();
    slots.sort_unstable();
    let gap = slots
        .windows(2)
        .max_by_key(|w| w[1] - w[0])
        .map(|w| (w[0], w[1]));
    let after: Vec<&&SlotRecord> = cpu.iter().filter(|r| r.slot >= from).collect();
    c.check(
        wrong.is_empty(),
        format!(
            "{} of {} records have the owner of the table in force ({} after the restart){}",
            cpu.len() - wrong.len(),
            cpu.len(),
            after.len(),
            wrong
                .first()
                .map_or(String::new(), |w| format!("; first wrong {w}"))
        ),
    );
    let differ_after = after
        .iter()
        .filter(|r| a.owner(CPU, r.slot) != b.owner(CPU, r.slot))
        .count();
    c.check(
        after.len() >= 200
            && differ_after >= 100
            && gap.is_some_and(|(_, next)| next <= from && from - next <= ARM_SLOTS),
        format!(
            "records go on after the restart on the same slot grid: no record from slot {:?} \
             to {:?} (the restart), then records again within {ARM_SLOTS} slots of the \
             reported slot {from}; {} from it ({differ_after} in slots where the plan's table \
             and the switched one differ)",
            gap.map(|g| g.0 + 1),
            gap.map(|g| g.1 - 1),
            after.len()
        ),
    );
    let ran: u64 = after
        .iter()
        .filter(|r| harness::tt_owner(r).is_some())
        .map(|r| r.ran_ns.unwrap_or(0))
        .sum();
    let owned = after
        .iter()
        .filter(|r| harness::tt_owner(r).is_some())
        .count() as u64;
    println!(
        "  after the restart: owners ran {:.1} % of {owned} owned slots",
        harness::pct(ran, owned * 10_000_000)
    );
}

/// Each tt task delivered at least [`MIN_DELIVERED_PCT`] % of its planned time, less the share
/// of all tasks' planned time that the witness saw other work take on the managed CPU: kernel
/// threads (`taken.0`; on PREEMPT_RT interrupts and softirqs run as threads) and the
/// helper-thread slot clock (`taken.1`; the bpf_timer's callback runs in interrupt context
/// instead). An upper bound of what they took from the owners (they also run in free slots).
/// Measured on the rt kernels at `-smp 3`: kthreads 210-330 ms, the clock thread 220-320 ms in
/// 1150-1520 runs, together 7-9 % of the owned time; the owners delivered 85-90 %.
fn delivered(c: &mut Checks, out: &VmOutput, taken: crate::witness::Taken) {
    let s = match out.summary("hotplug.json") {
        Ok(s) => s,
        Err(e) => return c.check(false, format!("hotplug.json: {e}")),
    };
    let all_planned = s.planned_tt_ns();
    let bound = taken.bound(MIN_DELIVERED_PCT, all_planned);
    for t in s.tasks.iter().filter(|t| t.class == "tt") {
        let pct = harness::pct(t.delivered_ns, t.planned_ns);
        c.check_timing(
            pct >= bound,
            format!(
                "{} delivered {pct:.1} % of {:.0} ms planned over the run (>= {bound:.1}: {})",
                t.name,
                harness::ms(t.planned_ns),
                taken.explain(MIN_DELIVERED_PCT, all_planned)
            ),
        );
    }
}

/// Planner mode restarts too: a new planner thread on the kept planner.
fn planner_mode(c: &mut Checks, out: &VmOutput) {
    let err = out.file("planner.err").unwrap_or_default();
    let json: serde_json::Value = out.json("planner.json").unwrap_or_default();
    c.check(
        out.rc("planner") == "0"
            && out.result("planner_state") == Ok("disabled")
            && json["restarts"] == 1
            && json["exit"] == "signal"
            && err.contains("restart 1: the BPF scheduler is attached again"),
        format!(
            "planner mode: exit code {}, sched_ext {:?}, restarts {}, exit {} (SIGINT 3 s after \
             the re-attach)",
            out.rc("planner"),
            out.result("planner_state"),
            json["restarts"],
            json["exit"]
        ),
    );
    let records: Vec<SlotRecord> = out
        .records("planner.trace.jsonl")
        .unwrap_or_else(|e| panic!("{e}"));
    let from = restart_slot(&err).unwrap_or(u64::MAX);
    let after: Vec<&SlotRecord> = records
        .iter()
        .filter(|r| r.cpu == CPU && r.slot >= from)
        .collect();
    let owned = after
        .iter()
        .filter(|r| harness::tt_owner(r).is_some())
        .count();
    c.check(
        owned >= 100,
        format!(
            "planner mode: {} records from slot {from} on, {owned} owned by a tt task; \
             planner_late_slots {} (the restart's gap counts)",
            after.len(),
            json["planner_late_slots"]
        ),
    );
    // the task `ctl admit` added before the restart: its 2 slots in every whole frame after
    // it (from the second frame start after the restart slot: the restart's gap), and it ran
    // in them: the new scheduler registered its thread again (without it the thread is
    // foreign to the new scheduler and runs on the housekeeping CPU only). Judged in the frames
    // with a record for each of their 8 slots: a tick the host delayed by more than a slot
    // skips slots (late_skips, no record; seen: 123 ms at host load 7), and a frame without
    // records says nothing about ownership; the skipped frames are counted and printed.
    let reply = out.reply("app");
    c.check(
        out.rc("app") == "0" && reply["accepted"] == true,
        format!("planner mode: app admitted before the restart: {reply}"),
    );
    let start = from.div_ceil(8) * 8 + 8;
    let last = after.iter().map(|r| r.slot).max().unwrap_or(0);
    let (mut frames, mut partial, mut wrong) = (0, 0, Vec::new());
    let mut a = start;
    while a + 8 <= last + 1 {
        let in_frame: Vec<&&SlotRecord> = after
            .iter()
            .filter(|r| (a..a + 8).contains(&r.slot))
            .collect();
        if in_frame.len() < 8 {
            partial += 1;
        } else {
            let n = in_frame
                .iter()
                .filter(|r| harness::tt_owner(r) == Some("app"))
                .count();
            frames += 1;
            if n < 2 {
                wrong.push((a, n));
            }
        }
        a += 8;
    }
    c.check(
        frames >= 20 && wrong.is_empty(),
        format!(
            "planner mode: app owns >= 2 slots in each of {frames} whole frames after the \
             restart (wrong: (slot, owned) {wrong:?}; {partial} frames with skipped slots not \
             judged)"
        ),
    );
    let ran: u64 = after
        .iter()
        .filter(|r| harness::tt_owner(r) == Some("app"))
        .filter_map(|r| r.ran_ns)
        .sum();
    let slots = after
        .iter()
        .filter(|r| harness::tt_owner(r) == Some("app"))
        .count() as u64;
    let pct = 100.0 * ran as f64 / (slots * 10_000_000).max(1) as f64;
    c.check_timing(
        pct >= 80.0,
        format!(
            "planner mode: app ran {pct:.1} % of its {slots} slots after the restart (>= 80 %: \
             registered again)"
        ),
    );
}

fn managed_cpu(c: &mut Checks, out: &VmOutput) {
    let err = out.file("managed.err").unwrap_or_default();
    let json: serde_json::Value = out.json("managed.json").unwrap_or_default();
    c.check(
        out.rc("managed") == "1" && out.result("managed_state") == Ok("disabled"),
        format!(
            "managed CPU offline: exit code {} (want 1) after {:?} ms, sched_ext {:?}",
            out.rc("managed"),
            out.result("managed_exit_ms"),
            out.result("managed_state")
        ),
    );
    let asked = err.matches("the kernel asked for a restart").count();
    c.check(
        asked == 1 && err.contains("restarting the BPF scheduler: plan CPU 1 "),
        format!(
            "one restart request ({asked}), refused naming CPU 1: {:?}",
            err.lines().find(|l| l.contains("error:"))
        ),
    );
    c.check(
        json["exit"] == "scheduler_exited" && json["restarts"] == 0,
        format!(
            "its summary: exit {}, restarts {}",
            json["exit"], json["restarts"]
        ),
    );
    let kids = out.result("managed_children").unwrap_or("");
    c.check(
        kids.split_whitespace().count() == 3
            && out.result("managed_children_left") == Ok("")
            && out.result("managed_spinners_left") == Ok(""),
        format!(
            "no spawned task left (children {kids}; left {:?}, spinners {:?})",
            out.result("managed_children_left"),
            out.result("managed_spinners_left")
        ),
    );
}

//! VM test of who may use the control socket and of admissions surviving a SIGKILL of scx_tt
//! (issue 15 items 5-7; docs/control.md, "The socket" and "Restarts and --resume"): scx_tt
//! --planner bss on ../admit/admit.json at `-smp 2` (managed CPU 1, 10 ms slots, frame 10:
//! tt-a 4 of every 10) with `--control-group 4242`.
//!
//! Judged:
//! - the socket is 0660 root:4242; alice (in group 4242) is served; bob (not in it) cannot
//!   connect (exit 2, the message says who may); with the socket made 0666 bob is refused by
//!   his peer credentials (exit 1, the reply names his uid and the group);
//! - root admits `app` (a busy process, 3 slots every 10), `vm1` (a real QEMU VM's vCPU
//!   thread, util 0.2 within 100 ms: 1 slot every 5) and `batch` (a busy process as be work on
//!   CPU 1, `--class be --cpu 1`); the control state journaled before the kill holds the three
//!   requests;
//! - SIGKILL ends the first run; sched_ext goes back to disabled; the second run first restores
//!   the pm_qos value the killed one left changed;
//! - the second run with `--resume` says all three hold again, lists them in its summary and
//!   status; batch ran in CPU 1's slack (delivered > 0, be over a waiting owner judged by the
//!   witness); from their resumed first slots app owns >= 3 and vm1 >= 2 of every whole frame in
//!   the kernel's records, tt-a >= 4; app delivered >= 90 % of its owned time, vm1's vCPU >= 70 %
//!   (timing, as in `admit`);
//! - the witness (the kernel's sched_switch trace) of the second run: the resumed tasks run only
//!   in their slots from their first one on; nothing foreign on CPU 1; the replay of its planner
//!   log (with the resumed admissions) names the kernel's owner in every slot; exit 0.

use crate::harness::{Checks, Vm, VmOutput};
use crate::planner_checks::{self as pc, check_owners, owned};

const RUN: &str = "second";
const PLAN: &str = "tests/vm/scenarios/admit/admit.json";
const FRAME: u64 = 10;
/// As `admit`'s: a nested QEMU vCPU also waits for its QEMU's main thread.
const VCPU_DELIVERED_PCT: f64 = 70.0;

fn check(out: &VmOutput, c: &mut Checks) {
    // who may use the socket
    out.check_result(
        c,
        "socket_mode",
        "660 0 4242",
        "the socket's mode, owner and group",
    );
    let alice = out.reply("alice");
    c.check(
        out.rc("alice") == "0" && alice["ok"] == true && alice["slot"].is_u64(),
        format!(
            "alice (group 4242) is served: rc {} {alice}",
            out.rc("alice")
        ),
    );
    let bob = out.file("bob.err").unwrap_or_default();
    c.check(
        out.rc("bob") == "2"
            && bob.contains("Permission denied")
            && bob.contains("--control-group"),
        format!(
            "bob cannot connect to the 0660 socket: rc {} {}",
            out.rc("bob"),
            bob.trim()
        ),
    );
    let creds = out.reply("bob_creds");
    let why = creds["error"].as_str().unwrap_or("");
    c.check(
        out.rc("bob_creds") == "1"
            && creds["ok"] == false
            && why.starts_with("permission denied: uid 1001 ")
            && why.contains("control group 4242 (gid 4242"),
        format!(
            "bob is refused by his peer credentials on a 0666 socket: rc {} {creds}",
            out.rc("bob_creds")
        ),
    );
    // the first run's admissions and what it journaled
    let (app, vm1, batch) = (out.reply("app"), out.reply("vm1"), out.reply("batch"));
    c.check(
        app["accepted"] == true && vm1["accepted"] == true,
        format!("the first run admits app and vm1: {app} {vm1}"),
    );
    c.check(
        out.rc("batch") == "0"
            && batch["accepted"] == true
            && batch["tasks"][0]["class"] == "be"
            && batch["tasks"][0]["cpu"] == 1
            && batch["tasks"][0]["wcet_slots"] == 0,
        format!("the first run admits batch as be work on CPU 1: {batch}"),
    );
    let state = out.file("state-before-kill.json").unwrap_or_default();
    let journaled: serde_json::Value = serde_json::from_str(&state).unwrap_or_default();
    let requests: Vec<&str> = journaled["requests"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r.as_str()).collect())
        .unwrap_or_default();
    c.check(
        requests.len() == 3
            && requests[0].contains("\"name\":\"app\"")
            && requests[1].contains("\"qemu_name\":\"vm1\"")
            && requests[2].contains("\"class\":\"be\""),
        format!("the control state before the kill holds the three admissions: {requests:?}"),
    );
    out.check_results(c, &[("first_rc", "137")]);
    out.check_ms(
        c,
        "first_disabled_ms",
        Some(10_000),
        "sched_ext disabled after the SIGKILL",
    );
    // the second run brings them back
    let err = out.file(&format!("{RUN}.err")).unwrap_or_default();
    print!("{err}");
    // what the killed run changed on the machine (planner mode's pm_qos limit on CPU 1) is
    // put back by the next start before anything else
    c.check(
        err.contains("pmqos.journal.json: a run (pid ")
            && err.contains("did not exit cleanly left 1 value(s) changed")
            && err.contains("restored 1, 0 already at their original, 0 failed"),
        "the second run restores the pm_qos value the killed run left changed".into(),
    );
    c.check(
        err.contains("--resume: 3 of 3 journaled requests hold again"),
        "the second run says the three journaled admissions hold again".into(),
    );
    let from_of = |name: &str| -> Option<u64> {
        let line = err
            .lines()
            .find(|l| l.contains("holds again:") && l.contains(&format!("\"task\":\"{name}\"")))?;
        let reply: serde_json::Value = serde_json::from_str(line.rsplit_once(": ")?.1).ok()?;
        reply["tasks"][0]["from_slot"].as_u64()
    };
    let (fa, fv) = (from_of("app"), from_of("vm1"));
    c.check(
        fa.is_some() && fv.is_some(),
        format!("the resumed replies name the first slots (app {fa:?}, vm1 {fv:?})"),
    );
    let status = out.reply("status");
    let listed: Vec<String> = status["planner"]["tasks"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|t| t["state"] == "admitted")
                .filter_map(|t| Some(t["task"].as_str()?.to_string()))
                .collect()
        })
        .unwrap_or_default();
    c.check(
        listed == ["app", "vm1", "batch"],
        format!("status of the second run lists app, vm1 and batch admitted: {listed:?}"),
    );
    let s = match out.summary(&format!("{RUN}.json")) {
        Ok(s) => s,
        Err(e) => return c.check(false, format!("summary: {e}")),
    };
    s.print("the resumed run");
    let min = pc::delivered_bound(c, out, RUN, &s);
    let late = pc::check_summary(c, &s, Some(min), &["vm1"]);
    let batch_pid = out.number("batch_pid").unwrap_or(0) as u32;
    let listed = s.tasks.iter().find(|t| t.name == "batch");
    c.check(
        listed.is_some_and(|t| {
            t.class == "be" && t.cpu == Some(1) && t.tids == vec![batch_pid] && t.delivered_ns > 0
        }),
        format!("the summary lists batch (pid {batch_pid}) as be on CPU 1 that ran: {listed:?}"),
    );
    if let Some(t) = s.tasks.iter().find(|t| t.name == "vm1") {
        let pct = 100.0 * t.delivered_ns as f64 / t.planned_ns.max(1) as f64;
        c.check_timing(
            t.planned_ns > 0 && pct >= VCPU_DELIVERED_PCT,
            format!("vm1: the vCPU thread ran {pct:.1} % of its slots (>= {VCPU_DELIVERED_PCT} %)"),
        );
    } else {
        c.check(false, "the summary lists vm1".into());
    }
    let (Some(fa), Some(fv)) = (fa, fv) else {
        return;
    };
    let trace = pc::trace_of(c, out, RUN);
    let cpu1 = pc::on_cpu(&trace);
    let last = cpu1.iter().map(|r| r.slot).max().unwrap_or(0);
    let first = fa.max(fv).div_ceil(FRAME) * FRAME;
    // A frame with a slot that has no record is not judged: its owners' slots cannot be
    // counted (under host load a tick came 100.8 ms late in a fresh-clone CI run, 2026-12-08,
    // and the nine slots it skipped have no record; the planner's decisions for them are
    // judged by the replay below).
    let (mut frames, mut skipped, mut wrong) = (0, Vec::new(), Vec::new());
    let mut a = first;
    while a + FRAME <= last + 1 {
        let got = |t: &str| owned(&cpu1, t, a, a + FRAME);
        if pc::recorded(&cpu1, a, a + FRAME) < FRAME {
            skipped.push(a);
        } else {
            frames += 1;
            if !(got("app") >= 3 && got("vm1") >= 2 && got("tt-a") >= 4) {
                wrong.push((a, got("app"), got("vm1"), got("tt-a")));
            }
        }
        a += FRAME;
    }
    check_owners(
        c,
        late,
        frames >= 10 && wrong.is_empty(),
        format!(
            "from slot {first}: each of {frames} whole frames: app >= 3, vm1 >= 2, tt-a >= 4 \
             (wrong: (slot, app, vm1, tt-a) {wrong:?}; not judged, a slot without a record: \
             {skipped:?})"
        ),
    );
    let before = owned(&cpu1, "app", 0, fa) + owned(&cpu1, "vm1", 0, fv);
    c.check(
        before == 0,
        format!("the resumed tasks own no slot before their first ({before})"),
    );
    let mut joined = vec![("app", fa), ("vm1", fv)];
    joined.extend(from_of("batch").map(|fb| ("batch", fb)));
    pc::admitted_run_closing(c, out, PLAN, RUN, &s, &joined, &[], &[]);
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn admissions_survive_a_sigkill_with_resume_and_only_the_control_group_may_ask() {
    Vm::new("resume").smp(2).timeout_s(400).check(check);
}

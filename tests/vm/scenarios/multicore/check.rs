//! VM test of a multi-core node (issue 34 item 2): `scx_tt --planner bss` on multicore.json at
//! `-smp 5` (CPUs 1-4 managed, CPU 0 housekeeping; 10 ms slots, frame 20), a plan that `scx_tt
//! plan gen --cpus 4` wrote (checked: the file is that command's output). While the table runs,
//! over the control socket: a real nested QEMU VM of 2 vCPUs (`admit --qemu vmm --util 0.2
//! --latency-us 100000`), a busy process with one aperiodic job (`admit --pid --wcet-slots 6
//! --deadline-slots 30 --after leave`), and a firm job of 2 slots within 30 for every plan task
//! (`admit-firm`). The VM's second vCPU waits halted for a start-up IPI (the boot sector runs
//! on CPU 0 only): an idle vCPU thread, admitted like the other.
//!
//! Judged by the replies, the kernel's records and the witness:
//! - vm accepted, one task per vCPU thread (`vm/vcpu0`, `vm/vcpu1`, their tids those of `CPU
//!   0/TCG` and `CPU 1/TCG`), on two distinct managed CPUs, 1 slot every 5 each; job accepted on
//!   a managed CPU with its deadline slot; every firm job accepted on its task's CPU (the plan
//!   is light: at most 40 % of a CPU);
//! - per CPU (the records of that CPU only), in every whole frame from the task's first slot:
//!   each plan task owns at least its slots (wcet per period), each vCPU at least 4 on its own
//!   CPU and none on another; job at least 6 in [first slot, deadline slot) on its CPU and
//!   none elsewhere (exact unless the planner decided a slot late; the planner's decisions are
//!   judged exactly by the replay);
//! - conformance: the replay of the planner log names the kernel's owner in 100 % of the slots;
//! - the witness (the kernel's sched_switch trace): every admitted thread runs only in its own
//!   slots on its own CPU, nothing foreign on the managed CPUs, no be task over a waiting
//!   owner; scx_tt exits 0 and sched_ext is disabled.

use crate::admit::{judged_from, log_window, JOIN_HANDOVER_NS, LEAVE_FOREIGN_NS};
use crate::harness::{self, Checks, Vm, VmOutput};
use crate::planner_checks::{self as pc, check_owners};
use crate::witness;
use scx_tt::trace::SlotRecord;

const RUN: &str = "multicore";
const PLAN: &str = "tests/vm/scenarios/multicore/multicore.json";
const FRAME: u64 = 20;
/// A plan task's delivered share of its owned time, at least (timing). At `-smp 5` on two host
/// cores each vCPU gets about 40 % of a core, so the slot tick comes late (by the kernel's
/// trace: p50 0.59-0.84 ms, p99 8.5-9.4 ms of 10 ms slots) and a task of one slot per run (t2)
/// loses most: measured 50.1-57.9 % for t2, 79-91 % for the others, in three boots
/// (2026-11-29). The scheduler's part is judged by the witness below.
const DELIVERED_FLOOR_PCT: f64 = 40.0;
/// A tt task's run outside its slots that the witness charges to the scheduler, share of its
/// run (timing; the witness's default is 5 %): what remains after the time before the slot's
/// late timer and [`witness::KICK_NS`] after it. At `-smp 5` on two host cores the ending
/// owner runs on after the enforcing timer p50 0.5 ms, p99 5.7-9.4 ms (kernel trace): a vCPU
/// the host does not run cannot switch. Measured 6.4-15.8 % (t2, the vCPUs) in three boots.
const OUTSIDE_SHARE: f64 = 0.30;
/// The `plan gen` arguments of multicore.json.
const GEN: [&str; 16] = [
    "--tasks",
    "6",
    "--util",
    "1.6",
    "--cpus",
    "4",
    "--slot-us",
    "10000",
    "--frame-slots",
    "20",
    "--period",
    "10..20",
    "--wcet",
    "1..4",
    "--seed",
    "7",
];

/// Slots `task` owns on `cpu` in `[from, to)` by the kernel's records.
fn owned_on(trace: &[SlotRecord], cpu: u32, task: &str, from: u64, to: u64) -> u64 {
    let on: Vec<&SlotRecord> = trace.iter().filter(|r| r.cpu == cpu).collect();
    pc::owned(&on, task, from, to)
}

/// The plan file is `scx_tt plan gen GEN...`'s output, byte for byte.
fn check_plan_file(c: &mut Checks) {
    let file = std::fs::read_to_string(harness::repo().join(PLAN)).unwrap_or_default();
    let gen = std::process::Command::new(harness::repo().join("target/release/scx_tt"))
        .args(["plan", "gen"])
        .args(GEN)
        .output();
    let fresh = gen
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    c.check(
        !file.is_empty() && file.trim_end() == fresh.trim_end(),
        format!("{PLAN} is `scx_tt plan gen {}`", GEN.join(" ")),
    );
}

/// One admitted task of a reply: (name, cpu, first slot, deadline slot, tids).
struct Placed {
    name: String,
    cpu: u32,
    from: u64,
    deadline: Option<u64>,
}

fn placed(r: &serde_json::Value) -> Vec<Placed> {
    r["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some(Placed {
                name: t["task"].as_str()?.to_string(),
                cpu: t["cpu"].as_u64()? as u32,
                from: t["from_slot"].as_u64()?,
                deadline: t["deadline_slot"].as_u64(),
            })
        })
        .collect()
}

fn check(out: &VmOutput, c: &mut Checks) {
    check_plan_file(c);
    out.print_file(&format!("{RUN}.out"));
    let s = match out.summary(&format!("{RUN}.json")) {
        Ok(s) => s,
        Err(e) => return c.check(false, format!("summary: {e}")),
    };
    s.print("multicore.json under --planner bss");
    let managed: Vec<u32> = s.managed().map(|m| m.cpu).collect();
    c.check(
        managed == [1, 2, 3, 4],
        format!("managed CPUs 1-4 ({managed:?})"),
    );
    // the nested vCPUs wait for their QEMU's main thread (vcpu1 is halted): not judged by share
    let late = pc::check_summary_foreign(
        c,
        &s,
        Some((
            DELIVERED_FLOOR_PCT,
            "-smp 5 on two host cores: late slot ticks, see DELIVERED_FLOOR_PCT".into(),
        )),
        &["vm/vcpu0", "vm/vcpu1", "job"],
        LEAVE_FOREIGN_NS,
    );
    let trace = pc::trace_of(c, out, RUN);
    let last = trace.iter().map(|r| r.slot).max().unwrap_or(0);
    let frames_from =
        |f: u64| (f.div_ceil(FRAME)..).take_while(move |k| (k + 1) * FRAME <= last + 1);
    // a frame is judged on a CPU only when each of its slots there has a record (a tick more
    // than a slot late leaves none: TCG)
    let recorded: std::collections::HashSet<(u32, u64)> =
        trace.iter().map(|r| (r.cpu, r.slot)).collect();
    let whole =
        |cpu: u32, k: u64| (k * FRAME..(k + 1) * FRAME).all(|x| recorded.contains(&(cpu, x)));
    let mut unjudged = 0;

    // the VM: two vCPU threads on two distinct managed CPUs
    let vm = out.reply("vm");
    println!("--- vm: rc {} {vm}", out.rc("vm"));
    let threads = out.file("vmm.threads").unwrap_or_default();
    let tid_of = |k: usize| -> Option<u32> {
        threads
            .lines()
            .find(|l| l.ends_with(&format!(" CPU {k}/TCG")))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
    };
    let vcpus = placed(&vm);
    let cpus: Vec<u32> = vcpus.iter().map(|p| p.cpu).collect();
    c.check(
        out.rc("vm") == "0"
            && vm["accepted"] == true
            && vcpus.len() == 2
            && (0..2).all(|k| {
                vm["tasks"][k]["task"] == format!("vm/vcpu{k}")
                    && vm["tasks"][k]["period_slots"] == 5
                    && vm["tasks"][k]["wcet_slots"] == 1
                    && tid_of(k).is_some_and(|t| vm["tasks"][k]["tids"] == serde_json::json!([t]))
            })
            && cpus[0] != cpus[1]
            && cpus.iter().all(|c| managed.contains(c)),
        format!(
            "vm admitted as two tasks, one per vCPU thread (CPU 0/TCG {:?}, CPU 1/TCG {:?}), 1 \
             slot every 5 each, on two distinct managed CPUs ({cpus:?})",
            tid_of(0),
            tid_of(1)
        ),
    );
    // the aperiodic job
    let job = out.reply("job");
    println!("--- job: rc {} {job}", out.rc("job"));
    let jobs = placed(&job);
    c.check(
        out.rc("job") == "0"
            && job["accepted"] == true
            && jobs.len() == 1
            && jobs[0]
                .deadline
                .is_some_and(|d| d > jobs[0].from && d <= jobs[0].from + 32)
            && managed.contains(&jobs[0].cpu),
        format!("job admitted aperiodic on a managed CPU with its deadline slot: {job}"),
    );
    // the firm jobs: each on its task's CPU
    let mut firm_wrong = Vec::new();
    for t in s.tasks.iter().filter(|t| t.name.starts_with('t')) {
        let r = out.reply(&format!("firm_{}", t.name));
        if !(out.rc(&format!("firm_{}", t.name)) == "0"
            && r["accepted"] == true
            && t.cpu.is_some_and(|c| r["cpu"] == c))
        {
            firm_wrong.push((t.name.clone(), t.cpu, r));
        }
    }
    c.check(
        firm_wrong.is_empty(),
        format!(
            "a firm job of 2 slots within 30 accepted for each of the 6 plan tasks, on its \
             task's CPU (wrong: {firm_wrong:?})"
        ),
    );

    // owners per CPU and frame
    let plan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(harness::repo().join(PLAN)).unwrap_or_default(),
    )
    .unwrap_or_default();
    let mut wrong = Vec::new();
    let mut judged = 0;
    let start = vcpus.iter().map(|p| p.from).min().unwrap_or(0);
    for t in plan["tasks"].as_array().into_iter().flatten() {
        let (Some(name), Some(p), Some(w)) =
            (t["name"].as_str(), t["period"].as_u64(), t["wcet"].as_u64())
        else {
            continue;
        };
        let Some(cpu) = s.tasks.iter().find(|x| x.name == name).and_then(|x| x.cpu) else {
            wrong.push((name.to_string(), 0, 0));
            continue;
        };
        for k in frames_from(start) {
            if !whole(cpu, k) {
                unjudged += 1;
                continue;
            }
            judged += 1;
            let got = owned_on(&trace, cpu, name, k * FRAME, (k + 1) * FRAME);
            if got < w * (FRAME / p) {
                wrong.push((name.to_string(), k * FRAME, got));
            }
        }
    }
    for v in &vcpus {
        for k in frames_from(v.from) {
            if managed.iter().any(|&c| !whole(c, k)) {
                unjudged += 1;
                continue;
            }
            judged += 1;
            let (a, b) = (k * FRAME, (k + 1) * FRAME);
            let here = owned_on(&trace, v.cpu, &v.name, a, b);
            let elsewhere: u64 = managed
                .iter()
                .filter(|&&c| c != v.cpu)
                .map(|&c| owned_on(&trace, c, &v.name, a, b))
                .sum();
            if here < FRAME / 5 || elsewhere > 0 {
                wrong.push((v.name.clone(), a, here));
            }
        }
    }
    check_owners(
        c,
        late,
        judged >= 40 && wrong.is_empty(),
        format!(
            "per CPU, each whole frame from the VM's first slot: every plan task owns its \
             slots, each vCPU >= 4 on its own CPU and none elsewhere ({judged} task-frames; \
             {unjudged} not judged: a slot without a record; wrong (task, frame slot, owned): {wrong:?})"
        ),
    );
    if let Some(j) = jobs.first() {
        let d = j.deadline.unwrap_or(j.from);
        let inside = owned_on(&trace, j.cpu, "job", j.from, d);
        let all: u64 = managed
            .iter()
            .map(|&c| owned_on(&trace, c, "job", 0, u64::MAX))
            .sum();
        check_owners(
            c,
            late,
            inside >= 6 && all == inside,
            format!(
                "job owns {inside} slots on CPU {} in [{}, {d}) (>= 6) and {} elsewhere or \
                 outside",
                j.cpu,
                j.from,
                all - inside
            ),
        );
    }
    let log = out.file(&format!("{RUN}.out")).unwrap_or_default();
    let index_of = |name: &str| s.tasks.iter().position(|t| t.name == name);
    let joined = |name: &str| index_of(name).and_then(|i| log_window(&log, i, "joined"));
    let left = index_of("job").and_then(|i| log_window(&log, i, "left"));
    let all: Vec<&Placed> = vcpus.iter().chain(jobs.iter()).collect();
    let judged_slots: Vec<(&str, u64)> = all
        .iter()
        .map(|p| (p.name.as_str(), judged_from(&s, p.from, joined(&p.name))))
        .collect();
    let joining: Vec<(&str, (u64, u64))> = all
        .iter()
        .filter_map(|p| joined(&p.name).map(|(a, b)| (p.name.as_str(), (a, b + JOIN_HANDOVER_NS))))
        .collect();
    let left: Vec<(&str, (u64, u64))> = left.map(|w| ("job", w)).into_iter().collect();
    pc::admitted_run_closing_with(
        c,
        out,
        (PLAN, RUN, &s),
        (&judged_slots, &left, &joining),
        witness::Bounds {
            outside_share: OUTSIDE_SHARE,
            ..witness::Bounds::default()
        },
    );
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn four_managed_cpus_admit_a_two_vcpu_vm_a_job_and_firm_jobs_across_cpus() {
    Vm::new("multicore").smp(5).timeout_s(500).check(check);
}

//! VM test of planner mode under dvfs and of a policy swap (docs/planner.md, "Kernel path"):
//! `scx_tt --planner dvfs` enforces planner_dvfs.json at `-smp 2` (managed CPU
//! 1: tt-a 15 of every 50 slots, tt-b 30 of every 100, 10 ms slots, frame 100) with `--control`
//! and `--trace`. After 2 s `scx_tt ctl` asks the status (policy dvfs), a swap to bss (exit 0,
//! reply `from_slot` F) and the status again (policy bss).
//!
//! The expectations come from the library, not from scx_tt: a `Planner` built from the plan
//! (`Plan::planner_inputs`, `Freqs::xeon_default()`, as `scx_tt` without `--power-model`) is stepped
//! here under dvfs up to F - 1 and under bss from F on, every planned job running its whole slot
//! (no admissions). Checks:
//!   - every record before F carries the planner's frequency for its slot (`freq` = the cpuperf
//!     target BPF requested at the tick / 1024 = ⌈f · 1024⌉ / 1024) and its owner; at least two
//!     distinct targets below full speed;
//!   - every record from F on has freq 1.0 and the planner's owner, which from the first frame
//!     start at or after F is the static table's (`SchedConfig::from_plan`);
//!   - records whose tick came more than a slot late are counted, printed and excluded (as
//!     the cpuperf scenario does); with slots the planner decided late the entry checks become timing
//!     checks (the entries then lag the planner by design);
//!   - no foreign time; `planner_late_slots` at most `LATE_PCT` % of the run's slots; scx_tt
//!     exits 0, sched_ext is disabled, the socket is gone.

use crate::harness::{tt_owner, Checks, Vm, VmOutput};
use crate::planner_checks::{self as pc, check_owners, Table, CPU};
use scx_tt::energy::perf::cpuperf_target;
use scx_tt::planner::{Policy, Run, UNIT};
use scx_tt::trace::SlotRecord;

/// The plan: planner.json with 60 % instead of 40 % of the slots busy, so that dvfs picks
/// several frequencies (at 40 % every job stretches down to the minimum, 1.0 of 2.3 GHz).
const PLAN: &str = "planner_dvfs.json";
const DURATION_S: u64 = 5;
/// A requested frequency is k/1024; anything closer than this is the same request.
const FREQ_TOLERANCE: f64 = 1e-9;

/// What the planner decides for CPU 1 in one slot: owner (plan task name) and requested freq.
#[derive(Clone, Debug, PartialEq)]
struct Want {
    owner: Option<String>,
    freq: f64,
}

/// planner_dvfs.json's static table and the planner's decisions for it.
struct Expect(Table);

impl Expect {
    fn new() -> Expect {
        Expect(Table::of("planner_dvfs", PLAN))
    }

    fn static_owner(&self, slot: u64) -> Option<&str> {
        self.0.owner(CPU, slot)
    }

    /// The planner's decisions for slots `0..to`: dvfs before `swap`, bss from `swap` on.
    fn decisions(&self, swap: u64, to: u64) -> Vec<Want> {
        let plan = &self.0.plan;
        let mut p = pc::dvfs_planner(plan);
        (0..to)
            .map(|t| {
                if t == swap {
                    p.set_policy(Policy::Bss);
                }
                let d = p.step(t, &[]).expect("in order")[0];
                Want {
                    owner: match d.run {
                        Run::Job { task, .. } | Run::Soft { task } => {
                            Some(plan.tasks[task].name.clone())
                        }
                        Run::Be | Run::Idle => None,
                    },
                    freq: f64::from(cpuperf_target(f64::from(d.freq_ppm) / UNIT as f64)) / 1024.0,
                }
            })
            .collect()
    }
}

/// The swap's `from_slot`.
fn check_protocol(c: &mut Checks, out: &VmOutput) -> Option<u64> {
    println!("--- replies");
    for (name, policy) in [("status_dvfs", "dvfs"), ("status_bss", "bss")] {
        let s = pc::reply(out, name);
        c.check(
            out.rc(name) == "0" && s["planner"]["policy"] == policy,
            format!("{name}: status names the policy in force {policy}"),
        );
    }
    let swap = pc::reply(out, "swap");
    let from = swap["from_slot"].as_u64();
    c.check(
        out.rc("swap") == "0" && swap["ok"] == true && swap["policy"] == "bss" && from.is_some(),
        format!(
            "set-policy bss is accepted (client exit {}), from_slot {from:?}",
            out.rc("swap")
        ),
    );
    out.check_clean_exit(c, "dvfs");
    out.check_results(c, &[("socket_left", "no")]);
    check_energy_segments(c, out, from);
    from
}

/// The summary's estimate is split at the swap (docs/energy.md §3): dvfs from slot 0, bss from
/// the swap's `from_slot`, both priced shallowest, adding up to the total.
fn check_energy_segments(c: &mut Checks, out: &VmOutput, from: Option<u64>) {
    let e = match out.json::<serde_json::Value>("dvfs.json") {
        Ok(s) => s["energy"].clone(),
        Err(err) => return c.check(false, format!("dvfs.json: {err}")),
    };
    let parts: Vec<(String, Option<u64>, String)> = e["segments"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|g| {
                    (
                        g["policy"].as_str().unwrap_or("?").to_string(),
                        g["from_slot"].as_u64(),
                        g["idle"].as_str().unwrap_or("?").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let sum: f64 = e["segments"]
        .as_array()
        .map(|a| a.iter().filter_map(|g| g["joules"].as_f64()).sum())
        .unwrap_or(f64::NAN);
    let total = e["joules"].as_f64().unwrap_or(f64::NAN);
    let shallow = "shallowest".to_string();
    c.check(
        parts
            == [
                ("dvfs".to_string(), Some(0), shallow.clone()),
                ("bss".to_string(), from, shallow),
            ]
            && (sum - total).abs() <= 1e-9 * total.max(1.0),
        format!("energy segments {parts:?} (want dvfs from 0, bss from {from:?}), sum {sum:.6} J of {total:.6} J"),
    );
}

/// Records of CPU 1 in `range` compared with `want`: (matching, late ticks excluded, wrong).
fn compare(
    cpu1: &[&SlotRecord],
    want: &[Want],
    range: std::ops::Range<u64>,
    slot_ns: u64,
) -> (usize, Vec<String>, Vec<String>) {
    let (mut ok, mut late, mut wrong) = (0, Vec::new(), Vec::new());
    for r in cpu1.iter().filter(|r| range.contains(&r.slot)) {
        let Some(w) = want.get(r.slot as usize) else {
            wrong.push(format!("slot {}: beyond the expectations", r.slot));
            continue;
        };
        let got = (tt_owner(r), r.freq);
        if got.0 == w.owner.as_deref() && (got.1 - w.freq).abs() <= FREQ_TOLERANCE {
            ok += 1;
        } else if r.late_ns.unwrap_or(0) > slot_ns as i64 {
            late.push(format!(
                "slot {}: {got:?} (tick {:.1} ms late)",
                r.slot,
                r.late_ns.unwrap_or(0) as f64 / 1e6
            ));
        } else {
            wrong.push(format!("slot {}: {got:?} want {w:?}", r.slot));
        }
    }
    (ok, late, wrong)
}

fn check_trace(c: &mut Checks, trace: &[SlotRecord], e: &Expect, from: u64, late_slots: u64) {
    let cpu1 = pc::on_cpu(trace);
    let last = cpu1.iter().map(|r| r.slot).max().unwrap_or(0);
    let want = e.decisions(from, last + 1);
    let slot_ns = e.0.plan.slot_us * 1000;
    let clean_from = from.div_ceil(e.0.frame) * e.0.frame;
    println!(
        "--- trace: {} records on CPU 1 (last slot {last}); dvfs before {from}, bss from {from}, \
         the static table from {clean_from}",
        cpu1.len()
    );
    for (label, range) in [("dvfs", 0..from), ("bss", from..u64::MAX)] {
        let (ok, late, wrong) = compare(&cpu1, &want, range.clone(), slot_ns);
        let n = ok + late.len() + wrong.len();
        println!(
            "  {label}: {ok} of {n} records match the planner, {} excluded (tick more than a slot \
             late), {} wrong",
            late.len(),
            wrong.len()
        );
        for l in &late {
            println!("    late {l}");
        }
        check_owners(
            c,
            late_slots,
            wrong.is_empty() && n > 100,
            format!(
                "{label} [{}, {}): every on-time record has the planner's owner and frequency \
                 ({ok} of {n}; first wrong: {:?})",
                range.start,
                range.end.min(last + 1),
                wrong.first()
            ),
        );
    }
    let below: Vec<f64> = cpu1
        .iter()
        .filter(|r| r.slot < from && r.freq < 1.0)
        .map(|r| r.freq)
        .collect();
    let mut distinct: Vec<u64> = below.iter().map(|f| (f * 1024.0).round() as u64).collect();
    distinct.sort_unstable();
    distinct.dedup();
    println!(
        "  dvfs: {} records below full speed, cpuperf targets {distinct:?}",
        below.len()
    );
    c.check(
        distinct.len() >= 2,
        format!("dvfs requested several frequencies below full speed: targets {distinct:?}"),
    );
    let after: Vec<&&SlotRecord> = cpu1.iter().filter(|r| r.slot >= from).collect();
    let slow = after.iter().filter(|r| r.freq != 1.0).count();
    c.check(
        slow == 0 && !after.is_empty(),
        format!(
            "bss: {} of {} records from slot {from} on have freq 1.0",
            after.len() - slow,
            after.len()
        ),
    );
    let moved = cpu1
        .iter()
        .filter(|r| r.slot >= clean_from && tt_owner(r) != e.static_owner(r.slot))
        .count();
    let n_clean = cpu1.iter().filter(|r| r.slot >= clean_from).count();
    check_owners(
        c,
        late_slots,
        moved == 0 && n_clean > 50,
        format!(
            "from slot {clean_from}: {} of {n_clean} records have the static table's owner",
            n_clean - moved
        ),
    );
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn planner_mode_dvfs_requests_the_planners_frequency_per_slot_and_swaps_to_bss() {
    let e = Expect::new();
    Vm::new("planner_dvfs")
        .smp(2)
        .timeout_s(300)
        .arg("duration_s", DURATION_S)
        .check_control(
            "dvfs",
            (
                "planner_dvfs.json under --planner dvfs, then bss",
                "no swap",
            ),
            |c, out| {
                let plan = pc::plan_path("planner_dvfs", "planner_dvfs.json");
                pc::conformance(c, out, &plan, "dvfs", 300);
                check_protocol(c, out)
            },
            |c, _out, s, trace, from| {
                let late = pc::check_summary(c, s, None, &[]);
                check_trace(c, trace, &e, from, late);
            },
        );
}

#[test]
fn the_expectations_of_the_test_plan() {
    let e = Expect::new();
    let frame = e.0.frame;
    // swapped to bss in the middle of frame 2: dvfs before, full speed after
    let want = e.decisions(250, 500);
    assert!(want[..250].iter().any(|w| w.freq < 1.0));
    let mut targets: Vec<u64> = want[..250]
        .iter()
        .map(|w| (w.freq * 1024.0) as u64)
        .collect();
    targets.sort_unstable();
    targets.dedup();
    println!("dvfs cpuperf targets of slots 0..250: {targets:?}");
    assert!(
        targets.iter().filter(|&&t| t < 1024).count() >= 2,
        "dvfs picks several frequencies below full speed: {targets:?}"
    );
    assert!(want[250..].iter().all(|w| w.freq == 1.0));
    // dvfs stretches jobs over their slack: owners differ from the static table's
    let moved = (0..250)
        .filter(|&s| want[s as usize].owner.as_deref() != e.static_owner(s))
        .count();
    assert!(moved > 0, "dvfs moves owners");
    // from the first frame start after the swap bss decides the static table again
    for s in 250u64.div_ceil(frame) * frame..500 {
        assert_eq!(
            want[s as usize].owner.as_deref(),
            e.static_owner(s),
            "slot {s}"
        );
    }
    // idle slots run at the minimum under dvfs (no be task in the plan): 1.0 of 2.3 GHz, 446
    assert!(want[..250]
        .iter()
        .filter(|w| w.owner.is_none())
        .all(|w| w.freq == 446.0 / 1024.0));
}

//! VM test of the cpufreq backend and of crash safety (issue 14 items 3-5; docs/energy.md
//! "Frequency backends", "Crash safety"), at `-smp 3` (managed CPUs 1 and 2, housekeeping 0) on
//! fake sysfs trees built by guest.sh (the VM has no cpufreq): acpi-cpufreq with one policy
//! shared by both managed CPUs, and intel_pstate in active mode.
//!
//! Checks:
//! - `acpi` (dvfs, `--freq-backend cpufreq --planner-open-loop --freq-log`, SIGINT): every
//!   `scaling_setspeed` write of the log against its slot's start on the slot grid: lowers after
//!   it (exact), raises before it (timing: a raise is written a slot ahead, late only when the
//!   planner thread stalls for a slot; at most `LATE_RAISE_PCT` %, the lead printed); the shared
//!   policy holds, in every slot, the lowest listed frequency at or above the higher of its two
//!   CPUs' planned frequencies (computed here from the plan with the library's planner, the
//!   maximum and the frequency list applied here); the housekeeping CPU's policy is neither
//!   written nor taken over; no write repeats the value in force; the summary's counts equal
//!   the log's;
//! - `pstate` (`--freq-backend auto`, SIGTERM): auto picks cpufreq, intel_pstate goes to passive,
//!   only the managed CPUs' policies go to userspace;
//! - idle control (`--idle-control policy`, the default): during the acpi run the managed CPUs'
//!   `pm_qos_resume_latency_us` read `n/a` (polling, dvfs's rule), the housekeeping CPU's is
//!   untouched, and the pm_qos journal sits beside cpufreq's; the pstate tree has no pm_qos files
//!   and runs with the kernel's idle states;
//! - the tree is byte for byte what it was (diff -r against a copy) after SIGINT, SIGTERM, an
//!   error during start-up (`ghost`: a task that cannot be found, after the take-over), a
//!   SIGKILL followed by a new start (which says it restored), and a SIGKILL followed by
//!   `scx_tt restore` (a second restore: nothing to do); no journal is left.

use crate::harness::{Checks, Vm, VmOutput};
use crate::planner_checks::{dvfs_planner, load_plan};
use scx_tt::planner::UNIT;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Raises that may land after their slot started (host stalls of a slot, 10 ms, under TCG).
const LATE_RAISE_PCT: f64 = 2.0;
/// The shared policy (CPUs 1 and 2) and the housekeeping CPU's policy of the acpi tree.
const SHARED: u32 = 1;
const HOUSEKEEPING: u32 = 0;

#[derive(Debug, Deserialize)]
struct Write {
    t_ns: u64,
    slot: u64,
    slot_start_ns: u64,
    policy: u32,
    khz: u32,
    kind: String,
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn cpufreq_backend_writes_each_slot_in_time_and_every_exit_restores_the_tree() {
    Vm::new("freq").smp(3).timeout_s(400).check(check);
}

fn check(out: &VmOutput, c: &mut Checks) {
    for (k, v) in &out.results {
        println!("  {k} = {v}");
    }
    check_restores(out, c);
    check_acpi_writes(out, c);
    check_dpm_dvfs(out, c);
}

/// `scx_tt --planner dpm+dvfs --freq-backend cpufreq --sysfs-root FAKE` (issue 14, "Done
/// when") on freq_dpm.json (light enough that dpm+dvfs leaves idle periods): DPM idle periods deferred on both managed CPUs, every slot recorded, a pm_qos limit
/// per period in the fake tree (the model's deepest fitting state: the tree has no cpuidle
/// states), frequencies written to the shared policy with late raises within tolerance, the
/// replay conforming, the tree restored byte for byte after SIGINT.
fn check_dpm_dvfs(out: &VmOutput, c: &mut Checks) {
    const RUN: &str = "dpmdvfs";
    out.check_results(
        c,
        &[
            ("dpmdvfs_rc", "0"),
            ("dpmdvfs_state", "disabled"),
            ("dpmdvfs_gov1_during", "userspace"),
            ("dpmdvfs_restored", "yes"),
        ],
    );
    let json: serde_json::Value = out.json(&format!("{RUN}.json")).unwrap_or_default();
    let mut cpus = Vec::new();
    for cpu in [1u32, 2] {
        let k = json["cpus"]
            .as_array()
            .and_then(|cs| cs.iter().find(|x| x["cpu"] == cpu))
            .map(|x| x["bpf_counters"].clone())
            .unwrap_or_default();
        let (defers, slots) = (
            k["dpm_defers"].as_u64().unwrap_or(0),
            k["dpm_slots"].as_u64().unwrap_or(0),
        );
        cpus.push(format!("cpu {cpu}: {defers} deferrals over {slots} slots"));
        c.check(
            defers > 0 && slots > defers,
            format!("{RUN}: CPU {cpu} slept through DPM idle periods ({defers} deferrals, {slots} slots skipped)"),
        );
    }
    println!("--- {RUN}: {}", cpus.join(", "));
    let recs: Vec<scx_tt::trace::SlotRecord> = out
        .records(&format!("{RUN}.trace.jsonl"))
        .unwrap_or_default();
    for cpu in [1u32, 2] {
        let mut slots: Vec<u64> = recs
            .iter()
            .filter(|r| r.cpu == cpu)
            .map(|r| r.slot)
            .collect();
        slots.sort_unstable();
        let gaps = slots.windows(2).filter(|w| w[1] != w[0] + 1).count() as u64;
        let skips = json["cpus"]
            .as_array()
            .and_then(|cs| cs.iter().find(|x| x["cpu"] == cpu))
            .and_then(|x| x["bpf_counters"]["late_skips"].as_u64())
            .unwrap_or(0);
        // every slot has its record, the deferred ones too (exact), except where a tick came
        // more than a slot late and skipped ahead (docs/run-output.md: the skipped slots get no
        // record; BPF counts each such tick in late_skips): a host stall, judged as timing
        c.check(
            !slots.is_empty() && gaps <= skips,
            format!(
                "{RUN}: CPU {cpu}: {} records, {gaps} gaps, each one a tick more than a slot \
                 late (late_skips {skips})",
                slots.len()
            ),
        );
        c.check_timing(
            skips <= 2,
            format!("{RUN}: CPU {cpu}: {skips} ticks more than a slot late (<= 2)"),
        );
    }
    let idle = out.file(&format!("{RUN}.idle.jsonl")).unwrap_or_default();
    let limits: Vec<serde_json::Value> = idle
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let slot_us = 10_000;
    let wrong: Vec<String> = limits
        .iter()
        .filter(|l| {
            let len = l["until_slot"]
                .as_u64()
                .unwrap_or(0)
                .saturating_sub(l["from_slot"].as_u64().unwrap_or(0));
            // the bundled model: C6 (133 us exit, 600 us residency) for a period of a slot or
            // more, C1E (10 us, 20 us) never decides here
            let want = if len * slot_us >= 600 { "133" } else { "n/a" };
            l["limit"] != want
        })
        .map(|l| l.to_string())
        .collect();
    c.check(
        !limits.is_empty() && wrong.is_empty(),
        format!(
            "{RUN}: {} pm_qos limits, each the model's deepest fitting state (wrong: {:?})",
            limits.len(),
            &wrong[..wrong.len().min(4)]
        ),
    );
    let freq = out.file(&format!("{RUN}.freq.jsonl")).unwrap_or_default();
    let writes = freq.lines().count();
    let late = json["freq"]["cpufreq"]["late_raises"]
        .as_u64()
        .unwrap_or(u64::MAX);
    let raises = json["freq"]["cpufreq"]["raises"].as_u64().unwrap_or(0);
    let tol = (raises as f64 * LATE_RAISE_PCT / 100.0).max(1.0) as u64;
    c.check(
        writes > 0,
        format!("{RUN}: {writes} scaling_setspeed writes"),
    );
    c.check_timing(
        late <= tol,
        format!("{RUN}: {late} of {raises} raises late (<= {tol})"),
    );
    crate::planner_checks::conformance(
        c,
        out,
        &crate::harness::repo().join("tests/vm/scenarios/freq/freq_dpm.json"),
        RUN,
        200,
    );
}

fn check_restores(out: &VmOutput, c: &mut Checks) {
    out.check_results(
        c,
        &[
            // SIGINT, the shared policy taken over, the housekeeping one left alone
            ("acpi_rc", "0"),
            ("acpi_state", "disabled"),
            ("acpi_gov1_during", "userspace"),
            ("acpi_gov0_during", "ondemand"),
            (
                "acpi_journal_during",
                "cpufreq.journal.json pmqos.journal.json",
            ),
            // --idle-control policy: dvfs keeps the managed cores polling
            ("acpi_qos0_during", "0"),
            ("acpi_qos1_during", "n/a"),
            ("acpi_qos2_during", "n/a"),
            ("acpi_restored", "yes"),
            ("acpi_journal_after", ""),
            // SIGTERM, auto, intel_pstate
            ("pstate_rc", "0"),
            ("pstate_state", "disabled"),
            ("pstate_status_during", "passive"),
            ("pstate_gov0_during", "schedutil"),
            ("pstate_gov2_during", "userspace"),
            ("pstate_restored", "yes"),
            // an error during start-up
            ("ghost_rc", "1"),
            ("ghost_state", "disabled"),
            ("ghost_restored", "yes"),
            // SIGKILL, then a new start
            ("killed1_rc", "137"),
            ("killed1_gov1_after", "userspace"),
            (
                "killed1_journal_after",
                "cpufreq.journal.json pmqos.journal.json",
            ),
            ("next_rc", "0"),
            ("next_said_restored", "2"),
            ("next_restored", "yes"),
            // SIGKILL, then scx_tt restore
            ("killed2_rc", "137"),
            ("killed2_gov1_after", "userspace"),
            ("restore_rc", "0"),
            ("restore_restored", "yes"),
            ("restore2_rc", "0"),
            ("restore2_nothing", "1"),
            ("journal_end", ""),
        ],
    );
    let ghost = out.file("ghost.err").unwrap_or_default();
    c.check(
        ghost.contains("ghost"),
        format!("the start-up error names the task: {:?}", ghost.trim()),
    );
    match out.json::<serde_json::Value>("pstate.json") {
        Ok(s) => c.check(
            s["freq"]["backend"] == "cpufreq",
            format!(
                "--freq-backend auto chose {} (want cpufreq)",
                s["freq"]["backend"]
            ),
        ),
        Err(e) => c.check(false, format!("pstate.json: {e}")),
    }
    out.print_file("restore.out");
}

/// The planned frequency (ppm) of each managed CPU (plan order) in slots `0..to`: dvfs on the
/// plan, every job running its whole slots (`--planner-open-loop`), the default frequencies
/// (`Freqs::xeon_default`, as scx_tt without `--power-model`).
fn planned(to: u64) -> Vec<Vec<u32>> {
    let mut p = dvfs_planner(&load_plan("freq", "freq.json"));
    (0..to)
        .map(|t| {
            p.step(t, &[])
                .expect("in order")
                .iter()
                .map(|d| d.freq_ppm)
                .collect()
        })
        .collect()
}

/// The lowest listed frequency at or above `ppm` of the highest (kHz).
fn listed_at_or_above(list: &[u32], ppm: u32) -> u32 {
    let max = *list.iter().max().expect("frequencies");
    list.iter()
        .copied()
        .filter(|&k| u64::from(k) * UNIT >= u64::from(ppm) * u64::from(max))
        .min()
        .unwrap_or(max)
}

fn check_acpi_writes(out: &VmOutput, c: &mut Checks) {
    let writes: Vec<Write> = match out.records("acpi.freq.jsonl") {
        Ok(w) => w,
        Err(e) => return c.check(false, format!("acpi.freq.jsonl: {e}")),
    };
    let list: Vec<u32> = out
        .file("acpi_freqs.txt")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    if writes.is_empty() || list.is_empty() {
        return c.check(false, "no writes or no frequency list".into());
    }
    let summary = out
        .json::<serde_json::Value>("acpi.json")
        .unwrap_or_default();
    let late_slots = summary["planner_late_slots"].as_u64().unwrap_or(u64::MAX);
    // when: lowers after their slot's start, raises before it
    let (raises, lowers): (Vec<&Write>, Vec<&Write>) =
        writes.iter().partition(|w| w.kind == "raise");
    let early_lowers = lowers.iter().filter(|w| w.t_ns < w.slot_start_ns).count();
    c.check(
        early_lowers == 0,
        format!(
            "{early_lowers} of {} lowers written before their slot started",
            lowers.len()
        ),
    );
    let late: Vec<&&Write> = raises.iter().filter(|w| w.t_ns > w.slot_start_ns).collect();
    let mut lead_us: Vec<i64> = raises
        .iter()
        .map(|w| (w.slot_start_ns as i64 - w.t_ns as i64) / 1000)
        .collect();
    lead_us.sort_unstable();
    let q = |p: f64| lead_us[((lead_us.len() - 1) as f64 * p) as usize];
    let late_pct = 100.0 * late.len() as f64 / raises.len().max(1) as f64;
    println!(
        "  raises: {} written ahead of their slot by min {} us, p50 {} us, max {} us; {} late \
         ({late_pct:.2} %); lowers: {}",
        raises.len(),
        q(0.0),
        q(0.5),
        q(1.0),
        late.len(),
        lowers.len()
    );
    // at most LATE_RAISE_PCT % of the raises, and one (a run has only ~13: one host stall of
    // a slot is 8 % of them)
    let allowed = ((raises.len() as f64 * LATE_RAISE_PCT / 100.0).ceil() as usize).max(1);
    c.check_timing(
        late.len() <= allowed,
        format!(
            "{} of {} raises landed after their slot started ({late_pct:.2} %; at most \
             {allowed}: {LATE_RAISE_PCT} % and at least one)",
            late.len(),
            raises.len()
        ),
    );
    let counts = &summary["freq"]["cpufreq"];
    c.check(
        counts["raises"] == raises.len() as u64
            && counts["lowers"] == lowers.len() as u64
            && counts["late_raises"] == late.len() as u64
            && counts["errors"] == 0,
        format!("the summary's counts equal the log's: {counts}"),
    );
    // what: the housekeeping policy is never written; the shared one at the max of its CPUs
    c.check(
        writes.iter().all(|w| w.policy == SHARED),
        format!(
            "only the shared policy{SHARED} is written (policy{HOUSEKEEPING} holds the \
             housekeeping CPU): {:?}",
            writes
                .iter()
                .map(|w| w.policy)
                .collect::<std::collections::BTreeSet<_>>()
        ),
    );
    let last = writes.iter().map(|w| w.slot).max().unwrap_or(0);
    let plan = planned(last + 1);
    // the value in force in slot s: every write for a slot up to s, in the order written
    let mut by_slot: BTreeMap<u64, Vec<&Write>> = BTreeMap::new();
    let mut repeated = 0;
    let mut held: Option<u32> = None;
    for w in writes.iter().filter(|w| w.policy == SHARED) {
        repeated += usize::from(held == Some(w.khz));
        held = Some(w.khz);
        by_slot.entry(w.slot).or_default().push(w);
    }
    c.check(
        repeated == 0,
        format!("{repeated} writes repeat the value in force"),
    );
    let mut force = None;
    let mut wrong = Vec::new();
    for s in 0..last {
        for w in by_slot.get(&s).into_iter().flatten() {
            force = Some(w.khz);
        }
        let want = listed_at_or_above(&list, plan[s as usize].iter().copied().max().unwrap_or(0));
        if force != Some(want) {
            wrong.push((s, force, want, plan[s as usize].clone()));
        }
    }
    let what = format!(
        "the shared policy holds the lowest listed frequency at or above the higher of its CPUs' \
         planned ones in each of slots 0..{last}: {} wrong{}",
        wrong.len(),
        wrong
            .iter()
            .take(5)
            .map(|(s, got, want, ppm)| format!(
                "; slot {s}: {got:?} kHz, want {want} (ppm {ppm:?})"
            ))
            .collect::<String>()
    );
    println!("  {what}");
    if late_slots == 0 {
        c.check(wrong.is_empty(), what);
    } else {
        // a slot decided late runs the entry of a frame before, at its frequency
        c.check_timing(
            wrong.len() as u64 <= late_slots,
            format!("{what} ({late_slots} slots decided late)"),
        );
    }
}

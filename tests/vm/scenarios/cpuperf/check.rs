//! VM test, issue 5 item 2b (and item 4 where the VM can show it): scx_tt enforces
//! cpuperf.json (this folder; CPU 1, frame of 4 slots of 10 ms) with a perf table that asks
//! for a different frequency in every frame slot, and writes its trace and summary.
//!
//! Asserted from the trace (docs/trace-format.md, docs/run-output.md):
//!   - every record of the managed CPU carries the frequency the table gives its slot
//!     (`freq` = the cpuperf target BPF requested at the slot's tick / 1024), apart from records
//!     whose tick came more than a slot late: those are counted and printed, as are slots with
//!     no record at all (skipped by a late tick);
//!   - every table entry arrived at least once.
//!
//! Asserted from the summary JSON: the guest has no RAPL, so `energy` is present, > 0 J and
//! labelled `estimated` from the bundled model; the CPU's `freq_residency` has exactly the
//! model's P-states of the table's entries, with the shares the trace's records give them. The
//! guest has no cpufreq either, so this checks the request path, not a frequency change.
//!
//! Run: `cargo test --release --test vm cpuperf -- --ignored --nocapture` after
//! `make vm-initrd` (`make test-vm` runs it).

use crate::harness::{self, Checks, Vm, VmOutput};
use crate::witness;
use serde::Deserialize;
use std::collections::BTreeMap;

const DURATION_S: u64 = 5;
const CPU: u32 = 1;
/// One normalised frequency per frame slot; all distinct, all exact in 1/1024 steps.
const PERF_ROW: [f64; 4] = [1.0, 0.5, 0.25, 0.75];
/// A request arrives as round(f × 1024) / 1024.
const FREQ_TOLERANCE: f64 = 0.5 / 1024.0;

#[derive(Clone, Debug, Deserialize)]
struct Record {
    slot: u64,
    cpu: u32,
    freq: f64,
    late_ns: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Summary {
    slot_us: u64,
    energy: Option<Energy>,
    cpus: Vec<CpuSummary>,
}

#[derive(Debug, Deserialize)]
struct Energy {
    joules: f64,
    label: String,
    source: String,
}

#[derive(Debug, Deserialize)]
struct CpuSummary {
    cpu: u32,
    freq_residency: Vec<FreqShare>,
}

#[derive(Debug, Deserialize)]
struct FreqShare {
    mhz: u32,
    fraction: f64,
}

/// How the per-slot requests of one CPU compare with the table.
#[derive(Debug, Default, PartialEq)]
struct PerfCheck {
    records: u64,
    /// Records with the table's value.
    matched: u64,
    /// Records with another value whose tick was more than a slot late: (slot, freq, late_ns).
    late: Vec<(u64, f64, i64)>,
    /// Records with another value and a tick on time: (slot, freq, want).
    wrong: Vec<(u64, f64, f64)>,
    /// Slots between the first and last record without a record (skipped by a late tick).
    missing: u64,
    /// Records matched per table entry.
    matched_per_entry: Vec<u64>,
}

fn check_perf(records: &[Record], cpu: u32, row: &[f64], slot_ns: u64) -> PerfCheck {
    let mut c = PerfCheck {
        matched_per_entry: vec![0; row.len()],
        ..Default::default()
    };
    let mut slots: Vec<u64> = Vec::new();
    for r in records.iter().filter(|r| r.cpu == cpu) {
        c.records += 1;
        slots.push(r.slot);
        let entry = (r.slot % row.len() as u64) as usize;
        let want = row[entry];
        let late_ns = r.late_ns.unwrap_or(0);
        if (r.freq - want).abs() <= FREQ_TOLERANCE {
            c.matched += 1;
            c.matched_per_entry[entry] += 1;
        } else if late_ns > slot_ns as i64 {
            c.late.push((r.slot, r.freq, late_ns));
        } else {
            c.wrong.push((r.slot, r.freq, want));
        }
    }
    slots.sort_unstable();
    slots.dedup();
    if let (Some(first), Some(last)) = (slots.first(), slots.last()) {
        c.missing = last - first + 1 - slots.len() as u64;
    }
    c
}

/// P-state (MHz) of the bundled model for a normalised frequency on `cpu`.
fn model_mhz(cpu: u32, freq: f64) -> u32 {
    let path = harness::repo().join("models/xeon-gold-5218.json");
    let model = scx_tt::energy::model::from_path(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cluster = model
        .cluster_of(cpu)
        .unwrap_or_else(|| panic!("the model lacks CPU {cpu}"));
    cluster.pstate_for(freq).mhz
}

fn check_energy(c: &mut Checks, s: &Summary, text_out: &str) {
    match &s.energy {
        Some(e) => {
            println!(
                "--- energy {:.3} J, label {}, source {}",
                e.joules, e.label, e.source
            );
            c.check(
                e.label == "estimated",
                format!(
                    "energy labelled {:?} (no RAPL in the VM: want estimated)",
                    e.label
                ),
            );
            c.check(
                e.source == "model xeon-gold-5218",
                format!("energy source {:?} (the bundled model)", e.source),
            );
            c.check(
                e.joules > 0.0,
                format!("energy estimate {:.3} J > 0", e.joules),
            );
        }
        None => c.check(false, "the summary has no energy figure".to_string()),
    }
    c.check(
        text_out.contains("J (estimated: model xeon-gold-5218)"),
        "the printed summary and stats label the energy as an estimate".to_string(),
    );
}

/// Residency of the CPU in the summary = the trace's records per P-state.
fn check_residency(c: &mut Checks, s: &Summary, records: &[Record]) {
    let Some(cpu) = s.cpus.iter().find(|x| x.cpu == CPU) else {
        return c.check(false, format!("the summary lacks CPU {CPU}"));
    };
    let mine: Vec<&Record> = records.iter().filter(|r| r.cpu == CPU).collect();
    let mut want: BTreeMap<u32, u64> = BTreeMap::new();
    for r in &mine {
        *want.entry(model_mhz(CPU, r.freq)).or_default() += 1;
    }
    let table_mhz: Vec<u32> = {
        let mut v: Vec<u32> = PERF_ROW.iter().map(|&f| model_mhz(CPU, f)).collect();
        v.sort_unstable();
        v
    };
    for f in &cpu.freq_residency {
        println!(
            "  cpu {CPU} residency {} MHz {:.1} %",
            f.mhz,
            f.fraction * 100.0
        );
    }
    let got_mhz: Vec<u32> = cpu.freq_residency.iter().map(|f| f.mhz).collect();
    let trace_mhz: Vec<u32> = want.keys().copied().collect();
    c.check(
        got_mhz == trace_mhz,
        format!("residency P-states {got_mhz:?} = the trace's {trace_mhz:?}"),
    );
    c.check(
        trace_mhz.iter().all(|m| table_mhz.contains(m)),
        format!("the trace's P-states {trace_mhz:?} are the table's {table_mhz:?}"),
    );
    for f in &cpu.freq_residency {
        let share = *want.get(&f.mhz).unwrap_or(&0) as f64 / mine.len().max(1) as f64;
        c.check(
            (f.fraction - share).abs() < 1e-6,
            format!(
                "residency at {} MHz {:.4} = the trace's share {share:.4}",
                f.mhz, f.fraction
            ),
        );
    }
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn each_slot_requests_its_perf_table_entry_and_energy_is_an_estimate() {
    let row: Vec<String> = PERF_ROW.iter().map(|f| f.to_string()).collect();
    Vm::new("cpuperf")
        .smp(2)
        .timeout_s(240)
        .arg("duration_s", DURATION_S)
        .arg("plan", "/tt/scenarios/cpuperf/cpuperf.json")
        .arg("perf_cpu", CPU)
        .arg("perf", row.join(","))
        .check(check);
}

fn check(out: &VmOutput, c: &mut Checks) {
    let text_out = out.file("cpuperf.out").unwrap_or_default();
    print!("{text_out}");
    out.print_file("cpuperf.err");
    for key in ["cpufreq", "rapl"] {
        println!("--- guest {key}: {:?}", out.result(key));
    }
    out.check_clean_exit(c, "cpuperf");
    let bounds = witness::Bounds::default();
    witness::check_files(c, out, "cpuperf", "summary.json", "trace.jsonl", &bounds);

    let summary: Summary = out.json("summary.json").unwrap_or_else(|e| panic!("{e}"));
    let records = out
        .records::<Record>("trace.jsonl")
        .unwrap_or_else(|e| panic!("{e}"));
    let slot_ns = summary.slot_us * 1000;
    let p = check_perf(&records, CPU, &PERF_ROW, slot_ns);
    println!(
        "--- cpu {CPU}: {} records, {} with the table's value, {} other values after a tick more \
         than a slot late, {} wrong, {} slots without a record; matched per entry {:?} of {PERF_ROW:?}",
        p.records,
        p.matched,
        p.late.len(),
        p.wrong.len(),
        p.missing,
        p.matched_per_entry
    );
    for (slot, freq, late) in &p.late {
        println!(
            "  late slot {slot}: freq {freq} (tick {:.1} ms late)",
            *late as f64 / 1e6
        );
    }
    let slots = DURATION_S * 1_000_000 / summary.slot_us;
    c.check(
        p.records * 2 >= slots,
        format!("{} records for ~{slots} slots", p.records),
    );
    c.check(
        p.wrong.is_empty(),
        format!(
            "on-time records with another frequency than the table's: {:?}",
            p.wrong
        ),
    );
    c.check(
        p.matched_per_entry.iter().all(|&n| n > 0),
        format!("every table entry arrived: {:?}", p.matched_per_entry),
    );
    check_energy(c, &summary, &text_out);
    check_residency(c, &summary, &records);
}

fn rec(slot: u64, freq: f64, late_ns: i64) -> Record {
    Record {
        slot,
        cpu: CPU,
        freq,
        late_ns: Some(late_ns),
    }
}

#[test]
fn check_perf_separates_matches_late_ticks_and_wrong_values() {
    let slot_ns = 10_000_000;
    let records = vec![
        rec(0, 1.0, 1_000),
        rec(1, 0.5, 1_000),
        // Slot 2 wants 0.25: a 12 ms late tick is excused, the value is not.
        rec(2, 1.0, 12_000_000),
        // Slot 3 (0.75) has no record; slot 4 wants 1.0 again, slot 5 0.5 but got 0.25 on time.
        rec(4, 1.0, 0),
        rec(5, 0.25, 500),
        // 767/1024 is within half a step of 0.75? No: 1/1024 away, beyond 0.5/1024.
        rec(7, 767.0 / 1024.0, 0),
        // Another CPU is not looked at.
        Record {
            slot: 6,
            cpu: 2,
            freq: 0.1,
            late_ns: None,
        },
    ];
    let c = check_perf(&records, CPU, &PERF_ROW, slot_ns);
    assert_eq!(c.records, 6);
    assert_eq!(c.matched, 3);
    assert_eq!(c.late, vec![(2, 1.0, 12_000_000)]);
    assert_eq!(c.wrong, vec![(5, 0.25, 0.5), (7, 767.0 / 1024.0, 0.75)]);
    // Slots 0..=7 with records at 0, 1, 2, 4, 5, 7: 3 and 6 are missing.
    assert_eq!(c.missing, 2);
    assert_eq!(c.matched_per_entry, vec![2, 1, 0, 0]);
}

#[test]
fn the_table_entries_map_to_distinct_model_pstates() {
    // 2300 MHz × f, rounded up to the model's 100 MHz steps from 1000: 2300, 1150 → 1200,
    // 575 → 1000, 1725 → 1800. Distinct, so the residency shows every entry apart.
    let mhz: Vec<u32> = PERF_ROW.iter().map(|&f| model_mhz(CPU, f)).collect();
    assert_eq!(mhz, vec![2300, 1200, 1000, 1800]);
}

#[test]
fn a_trace_line_that_is_not_a_record_is_an_error() {
    let ok = "{\"slot\": 1, \"cpu\": 1, \"freq\": 1.0}\n";
    assert!(harness::parse_records::<Record>("trace", ok).is_ok());
    let e = harness::parse_records::<Record>("trace", &format!("{ok}\nnot json\n")).unwrap_err();
    assert!(e.starts_with("trace line 3:"), "{e}");
}

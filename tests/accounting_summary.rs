//! Aggregation of per-slot records into the run summary (crates/tt-core/src/accounting): hand-worked
//! scenarios with the arithmetic in comments.

use scx_tt::accounting::{
    render_summary, Accounting, Cell, CpuCounters, ExitReason, RunFacts, SlotSample, TaskCounters,
    TaskInfo, TaskState,
};
use scx_tt::plan::Class;
use std::collections::BTreeMap;

const SLOT: u64 = 10_000_000; // 10 ms

fn tasks() -> Vec<TaskInfo> {
    vec![
        TaskInfo {
            name: "spin-a".into(),
            class: Class::Tt,
            cpu: Some(1),
        },
        TaskInfo {
            name: "spin-b".into(),
            class: Class::Tt,
            cpu: Some(1),
        },
        TaskInfo {
            name: "background".into(),
            class: Class::Be,
            cpu: None,
        },
    ]
}

fn sample(slot: u64, owner: Option<usize>, owner_ns: u64, late_ns: i64) -> SlotSample {
    SlotSample {
        slot,
        cpu: 1,
        owner,
        owner_ns,
        late_ns,
        ..Default::default()
    }
}

fn facts(task_counters: Vec<TaskCounters>) -> RunFacts {
    RunFacts {
        duration_ns: 4 * SLOT,
        exit: ExitReason::Duration,
        tids: vec![vec![10], vec![11], vec![12]],
        states: vec![TaskState::Running, TaskState::Exited, TaskState::Running],
        task_counters,
        cpu_counters: BTreeMap::from([(
            1,
            CpuCounters {
                ticks: 4,
                tick_cost_ns: 4_000,
                ..Default::default()
            },
        )]),
        prog_stats: Vec::new(),
    }
}

#[test]
fn planned_is_slot_length_times_owned_slots_and_delivered_sums_owner_ns() {
    let mut acc = Accounting::new(SLOT, tasks(), &[1], 0);
    // spin-a owns slots 0 and 1 (ran 9.5 + 10 ms), spin-b slot 2 (ran 4 ms), slot 3 free.
    acc.add(&sample(0, Some(0), 9_500_000, 100_000));
    acc.add(&sample(1, Some(0), SLOT, 200_000));
    acc.add(&sample(2, Some(1), 4_000_000, 300_000));
    acc.add(&sample(3, None, 0, 400_000));
    let counters = vec![
        TaskCounters {
            run_ns: 20_000_000,
            inside_ns: 19_500_000,
            jobs_done: 3,
            jobs_carried: 1,
            reclaimed_ns: 0,
        },
        TaskCounters {
            run_ns: 4_000_000,
            inside_ns: 4_000_000,
            jobs_done: 0,
            jobs_carried: 0,
            reclaimed_ns: 0,
        },
        TaskCounters {
            run_ns: 7_000_000,
            inside_ns: 6_000_000,
            jobs_done: 0,
            jobs_carried: 0,
            reclaimed_ns: 0,
        },
    ];
    let s = acc.summary(&facts(counters));
    // planned: 2 slots x 10 ms = 20 ms; delivered 9.5 + 10 = 19.5 ms; outside 20 - 19.5 = 0.5 ms.
    assert_eq!(s.tasks[0].planned_ns, 20_000_000);
    assert_eq!(s.tasks[0].delivered_ns, 19_500_000);
    assert_eq!(s.tasks[0].outside_ns, 500_000);
    assert_eq!(s.tasks[0].jobs_done, 3);
    assert_eq!(
        s.tasks[0].delivered_pct().map(|p| (p * 10.0).round()),
        Some(975.0)
    );
    assert_eq!(s.tasks[1].planned_ns, SLOT);
    assert_eq!(s.tasks[1].state, TaskState::Exited);
    // be: no planned time; delivered = time on managed CPUs (6 ms), outside = 7 - 6 = 1 ms.
    assert_eq!(s.tasks[2].planned_ns, 0);
    assert_eq!(s.tasks[2].delivered_ns, 6_000_000);
    assert_eq!(s.tasks[2].outside_ns, 1_000_000);
    assert_eq!(s.cpus[0].ticks, 4);
    assert_eq!(s.cpus[0].bpf_tick_ns_avg, 1_000);
}

#[test]
fn stolen_counts_be_only_in_owned_slots() {
    let mut acc = Accounting::new(SLOT, tasks(), &[1], 0);
    // owned slot: be 1 ms + kthread 0.5 ms + foreign 0.25 ms + other tt 0.25 ms = 2 ms stolen
    acc.add(&SlotSample {
        slot: 0,
        cpu: 1,
        owner: Some(0),
        owner_ns: 8_000_000,
        be_ns: 1_000_000,
        kthread_ns: 500_000,
        foreign_ns: 250_000,
        other_tt_ns: 250_000,
        be_ready_ns: 300_000,
        be_kick_ns: 40_000,
        be_top: Some(2),
        late_ns: 0,
        perf: None,
    });
    // free slot: be 10 ms is the plan's intent (not stolen), kthread 0.1 ms is stolen
    acc.add(&SlotSample {
        slot: 1,
        cpu: 1,
        be_ns: 9_900_000,
        kthread_ns: 100_000,
        be_top: Some(2),
        ..Default::default()
    });
    let s = acc.summary(&facts(vec![TaskCounters::default(); 3]));
    assert_eq!(s.cpus[0].stolen_ns, 2_000_000 + 100_000);
    assert_eq!(s.cpus[0].kthread_ns, 600_000);
    assert_eq!(s.cpus[0].foreign_ns, 250_000);
    assert_eq!(s.cpus[0].be_while_tt_ready_ns, 300_000);
    assert_eq!(s.cpus[0].be_kick_latency_ns, 40_000);
}

#[test]
fn lateness_quantiles_are_ordered_and_histogram_counts_every_tick() {
    let mut acc = Accounting::new(SLOT, tasks(), &[1], 0);
    // lateness 1..=100 us: p50 = 50 us, p99 = 99 us (nearest rank)
    for i in 1..=100u64 {
        acc.add(&sample(i, Some(0), SLOT, (i * 1_000) as i64));
    }
    let s = acc.summary(&facts(vec![TaskCounters::default(); 3]));
    let q = s.cpus[0].late_ns;
    assert_eq!(
        (q.min, q.p50, q.p99, q.max),
        (1_000, 50_000, 99_000, 100_000)
    );
    let total: u64 = s.cpus[0].late_hist.iter().map(|b| b.count).sum();
    assert_eq!(total, 100);
    // buckets <= 1 us: 1 tick; <= 2 us: 1; <= 5 us: 3; <= 10 us: 5; <= 20 us: 10; <= 50: 30; <= 100: 50
    let counts: Vec<u64> = s.cpus[0]
        .late_hist
        .iter()
        .take(7)
        .map(|b| b.count)
        .collect();
    assert_eq!(counts, vec![1, 1, 3, 5, 10, 30, 50]);
}

#[test]
fn timeline_cell_is_what_mostly_ran() {
    let acc = Accounting::new(SLOT, tasks(), &[1], 4);
    let owner = sample(0, Some(0), 6_000_000, 0);
    assert_eq!(acc.cell(&owner), Cell::Task(0));
    // owner ran 1 ms, be 2 ms, idle 7 ms: idle wins
    let idle = SlotSample {
        be_ns: 2_000_000,
        be_top: Some(2),
        ..sample(0, Some(0), 1_000_000, 0)
    };
    assert_eq!(acc.cell(&idle), Cell::Idle);
    let be = SlotSample {
        be_ns: 9_000_000,
        be_top: Some(2),
        ..sample(0, None, 0, 0)
    };
    assert_eq!(acc.cell(&be), Cell::Task(2));
    let stolen = SlotSample {
        kthread_ns: 3_000_000,
        foreign_ns: 3_000_000,
        ..sample(0, Some(1), 2_000_000, 0)
    };
    assert_eq!(acc.cell(&stolen), Cell::Stolen);
}

#[test]
fn timeline_keeps_the_last_n_slots_and_renders_letters() {
    let mut acc = Accounting::new(SLOT, tasks(), &[1], 3);
    for (slot, owner) in [(0, Some(0)), (1, Some(0)), (2, Some(1)), (3, None)] {
        acc.add(&sample(
            slot,
            owner,
            if owner.is_some() { SLOT } else { 0 },
            0,
        ));
    }
    let cells = acc.timeline(1).expect("cpu 1 has a timeline");
    assert_eq!(
        cells,
        vec![(1, Cell::Task(0)), (2, Cell::Task(1)), (3, Cell::Idle)]
    );
    let text = render_summary(&acc, &acc.summary(&facts(vec![TaskCounters::default(); 3])));
    assert!(text.starts_with("=== scx_tt summary ===\n"), "{text}");
    // spin-a -> S, spin-b -> next free letter A (S taken), background -> b (be, lowercase)
    assert!(text.contains("|SA.|"), "{text}");
    assert!(text.contains("S=spin-a A=spin-b b=background"), "{text}");
    assert!(text.contains("lateness histogram cpu 1"), "{text}");
}

#[test]
fn timeline_leaves_a_gap_for_a_skipped_slot() {
    let mut acc = Accounting::new(SLOT, tasks(), &[1], 4);
    // slot 2's tick was more than a slot late: no record for it
    for slot in [0, 1, 3] {
        acc.add(&sample(slot, Some(0), SLOT, 0));
    }
    let text = render_summary(&acc, &acc.summary(&facts(vec![TaskCounters::default(); 3])));
    assert!(text.contains("|SS S|"), "{text}");
}

#[test]
fn trace_record_names_the_owner_and_carries_kernel_fields() {
    let acc = Accounting::new(SLOT, tasks(), &[1], 0);
    let s = SlotSample {
        kthread_ns: 7,
        ..sample(5, Some(1), 123, 42)
    };
    let r = acc.trace_record(&s);
    assert_eq!(r.slot, 5);
    assert_eq!(r.task.as_deref(), Some("spin-b"));
    assert_eq!(
        (r.ran_ns, r.stolen_ns, r.late_ns),
        (Some(123), Some(7), Some(42))
    );
    let free = acc.trace_record(&SlotSample {
        be_ns: 9,
        be_top: Some(2),
        ..sample(6, None, 0, 0)
    });
    assert_eq!(free.task.as_deref(), Some("background"));
    assert_eq!(free.kind, scx_tt::trace::SlotKind::Be);
    assert_eq!(free.freq, 1.0, "no perf table: full speed");
    let slow = acc.trace_record(&SlotSample {
        perf: Some(512),
        ..sample(7, Some(0), 1, 0)
    });
    assert_eq!(slow.freq, 0.5, "cpuperf 512 of 1024");
}

#[test]
fn summary_json_has_the_agreed_fields() {
    let mut acc = Accounting::new(SLOT, tasks(), &[1], 0);
    acc.add(&sample(0, Some(0), SLOT, 5));
    let v =
        serde_json::to_value(acc.summary(&facts(vec![TaskCounters::default(); 3]))).expect("json");
    for key in [
        "slot_us",
        "duration_ns",
        "exit",
        "tasks",
        "cpus",
        "table_switches",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["exit"], "duration");
    assert_eq!(v["table_switches"], serde_json::json!([]));
    for key in [
        "name",
        "class",
        "cpu",
        "tids",
        "state",
        "planned_ns",
        "delivered_ns",
        "outside_ns",
        "run_ns",
        "jobs_done",
    ] {
        assert!(v["tasks"][0].get(key).is_some(), "missing tasks[].{key}");
    }
    for key in [
        "cpu",
        "managed",
        "ticks",
        "late_ns",
        "late_hist",
        "stolen_ns",
        "kthread_ns",
        "foreign_ns",
        "be_while_tt_ready_ns",
        "bpf_tick_ns_avg",
        "guard_events",
        "guard_late",
        "guard_stops",
        "bpf_counters",
    ] {
        assert!(v["cpus"][0].get(key).is_some(), "missing cpus[].{key}");
    }
    assert_eq!(v["tasks"][1]["state"], "exited");
    assert_eq!(v["cpus"][0]["late_ns"]["p50"], 5);
    let hist = v["cpus"][0]["late_hist"].as_array().expect("late_hist");
    assert_eq!(hist[0]["le_ns"], 1000);
    assert!(
        hist.last().expect("buckets")["le_ns"].is_null(),
        "open last bucket is null"
    );
}

/// 4 ticks of spin-a on CPU 1 with `late` of `events` guard-band events after their boundary.
fn summary_text_with_guard(events: u64, late: u64) -> String {
    let mut acc = Accounting::new(SLOT, tasks(), &[1], 0);
    for slot in 0..4 {
        acc.add(&sample(slot, Some(0), SLOT, 2_000_000));
    }
    let mut f = facts(vec![TaskCounters::default(); 3]);
    let c = f.cpu_counters.get_mut(&1).expect("cpu 1");
    c.stop_events = events;
    c.stop_late = late;
    c.stop_kicks = events - late;
    let summary = acc.summary(&f);
    assert_eq!(
        (summary.cpus[0].guard_events, summary.cpus[0].guard_late),
        (events, late)
    );
    render_summary(&acc, &summary)
}

#[test]
fn late_guard_band_events_above_one_percent_give_a_hint() {
    // 2 of 100 late: 2 % > 1 %; the hint names the CPU, the counts and the p99 lateness (2 ms).
    let text = summary_text_with_guard(100, 2);
    assert!(
        text.contains("hint: cpu 1: 2 of 100 guard-band events came after their boundary (tick lateness p99 2000 us)"),
        "{text}"
    );
    assert!(text.contains("--guard-us"), "{text}");
    // 1 of 100 is 1 %, not above it; 0 late never hints.
    assert!(!summary_text_with_guard(100, 1).contains("hint:"));
    assert!(!summary_text_with_guard(100, 0).contains("hint:"));
    assert!(!summary_text_with_guard(0, 0).contains("hint:"));
}

/// The field names of `struct tt_cpu_stats` in src/bpf/intf.h, in order.
fn intf_h_cpu_stats_fields() -> Vec<String> {
    let h = include_str!("../src/bpf/intf.h");
    let body = h
        .split("struct tt_cpu_stats {")
        .nth(1)
        .and_then(|rest| rest.split("};").next())
        .expect("struct tt_cpu_stats in intf.h");
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("u64 "))
        .map(|l| l.split(';').next().expect("a field").trim().to_string())
        .collect()
}

#[test]
fn every_bpf_cpu_counter_is_in_the_json_and_the_text_summary() {
    let fields = intf_h_cpu_stats_fields();
    assert!(
        fields.len() >= 11 && fields.contains(&"timer_errors".to_string()),
        "{fields:?}"
    );
    let mut acc = Accounting::new(SLOT, tasks(), &[1], 0);
    acc.add(&sample(0, Some(0), SLOT, 5));
    let mut f = facts(vec![TaskCounters::default(); 3]);
    // a distinct value per counter, so a field read into the wrong place shows
    let c = CpuCounters {
        ticks: 101,
        tick_cost_ns: 102,
        late_skips: 103,
        pin_mismatch: 104,
        rec_drops: 105,
        lost_ns: 106,
        stop_events: 107,
        stop_late: 108,
        stop_kicks: 109,
        stop_cost_ns: 110,
        timer_errors: 111,
        releases: 112,
        dpm_defers: 113,
        dpm_slots: 114,
        dpm_shortened: 115,
        evictions: 116,
        evicted_ns: 117,
        higher_waits: 118,
        pinned_be: 119,
    };
    f.cpu_counters.insert(1, c);
    let summary = acc.summary(&f);
    let v = serde_json::to_value(&summary).expect("json");
    let counters = v["cpus"][0]["bpf_counters"]
        .as_object()
        .expect("cpus[].bpf_counters");
    let keys: Vec<&String> = counters.keys().collect();
    let mut want: Vec<&String> = fields.iter().collect();
    want.sort();
    assert_eq!(keys, want, "bpf_counters keys are the intf.h fields");
    let named: Vec<&str> = c.named().iter().map(|(n, _)| *n).collect();
    assert_eq!(named, fields, "CpuCounters::named is in intf.h order");
    for (name, value) in c.named() {
        assert_eq!(counters[name], value, "{name}");
    }
    let text = render_summary(&acc, &summary);
    let line = text
        .lines()
        .find(|l| l.starts_with("bpf counters cpu 1: "))
        .unwrap_or_else(|| panic!("{text}"));
    for (name, value) in c.named() {
        assert!(line.contains(&format!("{name} {value}")), "{line}");
    }
}

#[test]
fn a_broken_slot_clock_is_an_error_line_and_a_healthy_one_is_not() {
    let text = |c: CpuCounters| {
        let mut acc = Accounting::new(SLOT, tasks(), &[1], 0);
        acc.add(&sample(0, Some(0), SLOT, 5));
        let mut f = facts(vec![TaskCounters::default(); 3]);
        f.cpu_counters.insert(1, c);
        render_summary(&acc, &acc.summary(&f))
    };
    let broken = text(CpuCounters {
        timer_errors: 1,
        ..Default::default()
    });
    assert!(
        broken.contains("error: cpu 1: the slot clock broke (timer_errors 1)"),
        "{broken}"
    );
    let moved = text(CpuCounters {
        pin_mismatch: 2,
        ..Default::default()
    });
    assert!(moved.contains("(pin_mismatch 2)"), "{moved}");
    // lost accounting is reported in the counters line, not as a broken clock
    let lossy = text(CpuCounters {
        rec_drops: 3,
        lost_ns: 4,
        ..Default::default()
    });
    assert!(!lossy.contains("error:"), "{lossy}");
}

/// The per-task table of the text summary keeps its columns for every class name, the longest
/// (`adaptive`) included: the `cpu` column ends at the same byte in the header and every row.
#[test]
fn the_task_table_stays_aligned_for_every_class() {
    let mut tasks = tasks();
    tasks.push(TaskInfo {
        name: "legacy".into(),
        class: Class::Adaptive,
        cpu: Some(1),
    });
    let acc = Accounting::new(SLOT, tasks, &[1], 0);
    let mut f = facts(vec![TaskCounters::default(); 4]);
    f.tids.push(vec![13]);
    f.states.push(TaskState::Running);
    let text = render_summary(&acc, &acc.summary(&f));
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("task ") && l.contains("planned_ms"))
        .expect("the task table's header");
    // where the third column (cpu) ends: the byte after its last character
    let end_of_third = |l: &str| {
        let mut words = 0;
        let mut in_word = false;
        for (i, ch) in l.char_indices() {
            if ch != ' ' && !in_word {
                in_word = true;
            } else if ch == ' ' && in_word {
                in_word = false;
                words += 1;
                if words == 3 {
                    return Some(i);
                }
            }
        }
        None
    };
    let want = end_of_third(lines[header]).expect("a cpu column");
    let names = ["spin-a", "spin-b", "background", "legacy"];
    for (row, name) in lines[header + 1..].iter().zip(names) {
        assert!(row.starts_with(name), "row {row:?} is {name}'s");
        let got = end_of_third(row);
        assert_eq!(
            got,
            Some(want),
            "{name}: cpu column ends at {got:?}, header at {want}\n{text}"
        );
    }
}

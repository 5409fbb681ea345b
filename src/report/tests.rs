use super::*;
use crate::report::input::{CpuView, EnergySegmentView, EnergyView, HistBucketView, TaskView};

fn rec(slot: u64, cpu: u32, kind: SlotKind, task: Option<&str>) -> SlotRecord {
    SlotRecord {
        slot,
        cpu,
        kind,
        task: task.map(str::to_string),
        freq: 1.0,
        idle_until: None,
        ran_ns: None,
        stolen_ns: None,
        late_ns: None,
    }
}

fn page(header: Option<&TraceHeader>, records: &[SlotRecord]) -> String {
    build(&Inputs {
        title: "t.jsonl",
        header,
        records,
        summary: None,
        plan: None,
    })
}

/// The Gantt bars of a page: `<rect class="bar ...`.
fn bars(html: &str) -> usize {
    html.matches("<rect class=\"bar ").count()
}

#[test]
fn escapes_every_special_character() {
    assert_eq!(
        esc(r#"<a href="x">&'</a>"#),
        "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
    );
    let evil = "<script>alert(\"x\")</script> & 'q'";
    let h = TraceHeader::simulate(10_000_000, &[1]);
    let records = [rec(0, 1, SlotKind::Tt, Some(evil))];
    let html = page(Some(&h), &records);
    assert!(!html.contains(evil), "unescaped task name");
    assert!(!html.contains("<script>alert"));
    assert!(html.contains(&format!("data-task=\"{}\"", esc(evil))));
    // the page's own scripts only: the error catcher and the zoom
    assert_eq!(html.matches("<script>").count(), 2);
    // a title from the file name is escaped too
    let html = build(&Inputs {
        title: "a<b>&.jsonl",
        header: None,
        records: &records,
        summary: None,
        plan: None,
    });
    assert!(html.contains("a&lt;b&gt;&amp;.jsonl") && !html.contains("a<b>"));
}

#[test]
fn one_bar_per_non_idle_slot() {
    let h = TraceHeader::kernel(10_000_000, 1, &[1]);
    let mut records = Vec::new();
    for slot in 0..50u64 {
        let kind = match slot % 4 {
            0 => SlotKind::Tt,
            1 => SlotKind::Be,
            2 => SlotKind::Aperiodic,
            _ => SlotKind::Idle,
        };
        let task = (kind != SlotKind::Idle).then_some("x");
        records.push(rec(slot, 1, kind, task));
    }
    let html = page(Some(&h), &records);
    assert_eq!(bar_count(&records), 38);
    assert_eq!(bars(&html), 38);
    assert_eq!(html.matches("data-kind=\"idle\"").count(), 0);
    assert_eq!(html.matches("data-kind=\"aperiodic\"").count(), 12);
    assert!(html.contains("<span id=\"bar-count\">38</span>"));
    // each bar is one slot wide at its slot
    assert!(html
        .contains("data-slot=\"4\" data-kind=\"tt\" data-task=\"x\" x=\"4\" y=\"2\" width=\"1\""));
}

#[test]
fn several_cpus_each_get_a_gantt_in_header_order() {
    let h = TraceHeader::kernel(10_000_000, 1, &[3, 1]);
    let mut records = Vec::new();
    for slot in 0..10 {
        records.push(rec(slot, 3, SlotKind::Tt, Some("a")));
        records.push(rec(
            slot,
            1,
            if slot < 4 {
                SlotKind::Be
            } else {
                SlotKind::Idle
            },
            None,
        ));
        // a CPU the header does not list still gets its chart, last
        if slot == 5 {
            records.push(rec(slot, 7, SlotKind::Tt, Some("b")));
        }
    }
    assert_eq!(cpus(Some(&h), &records), vec![3, 1, 7]);
    let html = page(Some(&h), &records);
    let g3 = html
        .find("<svg class=\"gantt zoomable\" data-cpu=\"3\"")
        .unwrap();
    let g1 = html
        .find("<svg class=\"gantt zoomable\" data-cpu=\"1\"")
        .unwrap();
    let g7 = html
        .find("<svg class=\"gantt zoomable\" data-cpu=\"7\"")
        .unwrap();
    assert!(g3 < g1 && g1 < g7);
    assert_eq!(html.matches("data-cpu=\"3\" data-slot").count(), 10);
    assert_eq!(html.matches("data-cpu=\"1\" data-slot").count(), 4);
    assert_eq!(html.matches("data-cpu=\"7\" data-slot").count(), 1);
    assert_eq!(bars(&html), 15);
    // the slot axis covers the whole trace
    assert!(html.contains("data-min=\"0\" data-max=\"10\""));
    let st = cpu_stats(&records);
    assert_eq!((st[&1].be, st[&1].idle, st[&1].slots), (4, 6, 10));
    assert!((st[&1].idle_fraction() - 0.6).abs() < 1e-12);
}

#[test]
fn empty_trace_gives_a_page_without_bars() {
    let html = page(None, &[]);
    assert_eq!(bars(&html), 0);
    assert!(html.contains("no slot records"));
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    // the zoom still has a range of one slot to work on
    assert!(html.contains("data-min=\"0\" data-max=\"1\""));
    let h = TraceHeader::simulate(1_000_000, &[1, 2]);
    let html = page(Some(&h), &[]);
    assert_eq!(html.matches("<svg class=\"gantt zoomable\"").count(), 2);
    assert_eq!(bars(&html), 0);
}

#[test]
fn lateness_bins() {
    let bins = late_histogram(&[-5, 0, 1_000, 1_001, 2_000, 150_000, 20_000_000, 20_000_001]);
    assert_eq!(bins.len(), LATE_BOUNDS_NS.len() + 2);
    assert_eq!(
        bins[0],
        Bin {
            label: "< 0".into(),
            count: 1
        }
    );
    assert_eq!(bins[1].label, "≤ 1 µs");
    assert_eq!(bins[1].count, 2); // 0 and 1000 (bounds are inclusive)
    assert_eq!(bins[2].count, 2); // 1001, 2000
    let i200 = 1 + LATE_BOUNDS_NS.iter().position(|&b| b == 200_000).unwrap();
    assert_eq!(
        (bins[i200].label.as_str(), bins[i200].count),
        ("≤ 200 µs", 1)
    );
    assert_eq!(bins[LATE_BOUNDS_NS.len()].label, "≤ 20 ms");
    assert_eq!(bins[LATE_BOUNDS_NS.len()].count, 1);
    assert_eq!(bins[LATE_BOUNDS_NS.len() + 1].label, "> 20 ms");
    assert_eq!(bins[LATE_BOUNDS_NS.len() + 1].count, 1);
    assert_eq!(bins.iter().map(|b| b.count).sum::<u64>(), 8);
    assert!(late_histogram(&[]).iter().all(|b| b.count == 0));
    // the page draws one bin rect per bucket per CPU with lateness
    let h = TraceHeader::kernel(10_000_000, 1, &[1, 2]);
    let mut records = vec![
        rec(0, 1, SlotKind::Tt, Some("a")),
        rec(0, 2, SlotKind::Idle, None),
    ];
    records[0].late_ns = Some(150_000);
    records[1].late_ns = Some(3_000);
    let html = page(Some(&h), &records);
    assert_eq!(html.matches("<rect class=\"hbin\"").count(), 2 * bins.len());
    assert!(html.contains("data-count=\"1\""));
}

#[test]
fn delivered_vs_planned_from_trace_and_summary() {
    let mut records = vec![
        rec(0, 1, SlotKind::Tt, Some("a")),
        rec(1, 1, SlotKind::Tt, Some("a")),
        rec(2, 1, SlotKind::Be, None),
        rec(2, 2, SlotKind::Aperiodic, Some("j")),
    ];
    records[0].ran_ns = Some(9);
    records[1].ran_ns = Some(10);
    let d = deliveries(&records, Some(10), None);
    assert_eq!(d.len(), 2);
    assert_eq!(
        (
            d[0].task.as_str(),
            d[0].planned_ns,
            d[0].delivered_ns,
            d[0].cpu
        ),
        ("a", 20, Some(19), Some(1))
    );
    assert_eq!(
        (d[1].class.as_str(), d[1].delivered_ns),
        ("aperiodic", None)
    );
    let summary = SummaryView {
        slot_us: 10,
        duration_ns: 1,
        tasks: vec![TaskView {
            name: "s<1>".into(),
            class: "tt".into(),
            cpu: Some(1),
            planned_ns: 100,
            delivered_ns: 90,
            outside_ns: 0,
            run_ns: 90,
        }],
        ..Default::default()
    };
    let d = deliveries(&records, Some(10), Some(&summary));
    assert_eq!((d.len(), d[0].delivered_ns), (1, Some(90)));
    let html = build(&Inputs {
        title: "t",
        header: None,
        records: &records,
        summary: Some(&summary),
        plan: None,
    });
    assert!(html.contains("<td>s&lt;1&gt;</td>") && html.contains("<td>90.0</td>"));
}

#[test]
fn summary_energy_lateness_and_plan_intervals() {
    let summary = SummaryView {
        slot_us: 10_000,
        duration_ns: 5_000_000_000,
        exit: Some("duration".into()),
        cpus: vec![CpuView {
            cpu: 1,
            managed: true,
            late_hist: vec![
                HistBucketView {
                    le_ns: Some(1000),
                    count: 3,
                },
                HistBucketView {
                    le_ns: None,
                    count: 1,
                },
            ],
            stolen_ns: 0,
            freq_residency: vec![],
        }],
        energy: Some(EnergyView {
            joules: 12.5,
            label: "estimated".into(),
            source: "model <x>".into(),
            segments: vec![EnergySegmentView {
                policy: "dvfs".into(),
                from_slot: 0,
                idle: "shallowest".into(),
                joules: 12.5,
            }],
        }),
        ..Default::default()
    };
    let plan = PlanView {
        slot_us: 10_000,
        frame_slots: 10,
        cpus: vec![PlanCpu {
            cpu: 1,
            intervals: vec![(0, 4, 0), (4, 10, 3)],
            table: vec![(0, 4, "a&b".into())],
        }],
    };
    let records: Vec<SlotRecord> = (0..25)
        .map(|s| rec(s, 1, SlotKind::Tt, Some("a&b")))
        .collect();
    let html = build(&Inputs {
        title: "t",
        header: None,
        records: &records,
        summary: Some(&summary),
        plan: Some(&plan),
    });
    assert!(html.contains("<b>12.500 J</b> (estimated: model &lt;x&gt;)"));
    // no late_ns in the records: the summary's buckets are drawn
    assert_eq!(html.matches("<rect class=\"hbin\"").count(), 2);
    assert!(html.contains("&gt; 1 µs"));
    // slots 0..25 cover frames 0, 1, 2: every interval and table range once per frame
    assert_eq!(html.matches("<rect class=\"cap ").count(), 6);
    assert_eq!(
        html.matches("<rect class=\"cap cap-pos\" data-sc=\"3\" x=\"14\"")
            .count(),
        1
    );
    assert_eq!(
        html.matches("<rect class=\"planned\" data-task=\"a&amp;b\"")
            .count(),
        3
    );
    assert_eq!(html.matches("<rect class=\"spare\"").count(), 3);
    assert_eq!(bars(&html), 25);
}

#[test]
fn frequency_line_breaks_at_gaps() {
    let mut records: Vec<SlotRecord> = [0u64, 1, 2, 5, 6]
        .iter()
        .map(|&s| rec(s, 1, SlotKind::Tt, Some("a")))
        .collect();
    records[3].freq = 0.5;
    records.push(rec(3, 1, SlotKind::Idle, None));
    records[5].idle_until = Some(4);
    let html = page(None, &records);
    // slots 0-3 contiguous (3 is the idle one), then 5-6
    assert_eq!(html.matches("<polyline class=\"freq-line\"").count(), 2);
    assert!(html.contains("5,52.50 6,52.50"));
    assert_eq!(html.matches("<rect class=\"idle-span\"").count(), 1);
    let st = cpu_stats(&records);
    assert_eq!((st[&1].dpm_idle, st[&1].idle), (1, 1));
    assert!((st[&1].busy_freq_mean.unwrap() - 0.9).abs() < 1e-12);
}

use super::proto::*;
use super::*;

const HEADER_K: &str = r#"{"format":"scx_tt slot trace v1","source":"kernel","slot_ns":1000,"t0_ns":5000,"cpus":[1,2]}"#;
const HEADER_S: &str =
    r#"{"format":"scx_tt slot trace v1","source":"simulate","slot_ns":1000,"cpus":[3]}"#;

fn rec(slot: u64, cpu: u32, kind: &str, task: Option<&str>) -> String {
    let task = task.map_or(String::new(), |t| format!(r#","task":"{t}""#));
    format!(r#"{{"slot":{slot},"cpu":{cpu},"kind":"{kind}"{task},"freq":1.0}}"#)
}

fn text(header: &str, lines: &[String]) -> String {
    let mut s = format!("{header}\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// (timestamp, event) of every track event, in file order.
fn events(t: &Trace) -> Vec<(u64, TrackEvent)> {
    t.packet
        .iter()
        .filter_map(|p| Some((p.timestamp?, p.track_event.clone()?)))
        .collect()
}

fn on_track(t: &Trace, uuid: u64) -> Vec<(u64, TrackEvent)> {
    events(t)
        .into_iter()
        .filter(|(_, e)| e.track_uuid == Some(uuid))
        .collect()
}

/// (begin, end, name, category) of the slices of a track, rebuilt from begin/end pairs.
fn slices(t: &Trace, uuid: u64) -> Vec<(u64, u64, String, String)> {
    let mut open: Vec<(u64, String, String)> = Vec::new();
    let mut out = Vec::new();
    for (ts, e) in on_track(t, uuid) {
        match e.r#type {
            Some(TYPE_SLICE_BEGIN) => open.push((
                ts,
                e.name.clone().unwrap(),
                e.categories.first().cloned().unwrap(),
            )),
            Some(TYPE_SLICE_END) => {
                let (b, n, c) = open.pop().expect("an end without a begin");
                assert!(ts >= b, "slice {n} ends before it begins");
                out.push((b, ts, n, c));
            }
            other => panic!("{other:?} on a slice track"),
        }
    }
    assert!(open.is_empty(), "unclosed slices {open:?}");
    out.sort();
    out
}

fn export(text: &str, markers: &[Marker]) -> Trace {
    let t = read_slot_trace(text).expect("valid trace");
    let built = build(&t, markers);
    // what is written is what is decoded
    let bytes = encode(&built);
    let back = Trace::decode(bytes.as_slice()).expect("decodes");
    assert_eq!(back, built);
    back
}

#[test]
fn consecutive_slots_of_one_owner_and_kind_make_one_slice() {
    let t = text(
        HEADER_K,
        &[
            rec(0, 1, "tt", Some("a")),
            rec(0, 2, "idle", None),
            rec(1, 1, "tt", Some("a")),
            rec(1, 2, "idle", None),
            // same task, other kind: a new slice
            rec(2, 1, "aperiodic", Some("a")),
            rec(2, 2, "be", None),
            rec(3, 1, "tt", Some("b")),
            rec(3, 2, "be", None),
            // a missing slot (4) ends a slice even for the same owner
            rec(5, 1, "tt", Some("b")),
            rec(5, 2, "be", None),
        ],
    );
    let out = export(&t, &[]);
    let ns = |s: u64| 5000 + s * 1000;
    let s = |b: u64, e: u64, n: &str, c: &str| (ns(b), ns(e), n.to_string(), c.to_string());
    assert_eq!(
        slices(&out, cpu_track(0)),
        vec![
            s(0, 2, "a", "tt"),
            s(2, 3, "a", "aperiodic"),
            s(3, 4, "b", "tt"),
            s(5, 6, "b", "tt"),
        ]
    );
    assert_eq!(
        slices(&out, cpu_track(1)),
        vec![
            s(0, 2, "idle", "idle"),
            s(2, 4, "be", "be"),
            s(5, 6, "be", "be")
        ]
    );
    // the owner runs the slices come from, with their slot ranges
    let trace = read_slot_trace(&t).unwrap();
    let recs: Vec<_> = trace.records.iter().map(|(_, r)| r.clone()).collect();
    let runs = owner_runs(&[1, 2], &recs);
    assert_eq!(runs.len(), 7);
    assert_eq!(
        (runs[0].first_slot, runs[0].end_slot, runs[0].name()),
        (0, 2, "a")
    );
    // a slice's end and the next one's begin at the same time come in that order
    let track0 = on_track(&out, cpu_track(0));
    let at2: Vec<_> = track0
        .iter()
        .filter(|(t, _)| *t == ns(2))
        .map(|(_, e)| e.r#type)
        .collect();
    assert_eq!(at2, vec![Some(TYPE_SLICE_END), Some(TYPE_SLICE_BEGIN)]);
    // timestamps never go back in the file
    let all = events(&out);
    assert!(all.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn stolen_time_is_a_nested_slice_from_the_slot_start() {
    let t = text(
        HEADER_S,
        &[
            r#"{"slot":0,"cpu":3,"kind":"tt","task":"a","freq":1.0,"stolen_ns":0}"#.into(),
            r#"{"slot":1,"cpu":3,"kind":"tt","task":"a","freq":1.0,"stolen_ns":250}"#.into(),
            // more than a slot (a measurement across a late tick): capped at the slot
            r#"{"slot":2,"cpu":3,"kind":"tt","task":"a","freq":1.0,"stolen_ns":4000}"#.into(),
        ],
    );
    let out = export(&t, &[]);
    assert_eq!(
        slices(&out, cpu_track(0)),
        vec![
            (0, 3000, "a".into(), "tt".into()),
            (1000, 1250, "stolen".into(), "stolen".into()),
            (2000, 3000, "stolen".into(), "stolen".into()),
        ]
    );
    // the last stolen slice ends with its parent: two ends at that time
    let ends = on_track(&out, cpu_track(0))
        .into_iter()
        .filter(|(ts, e)| *ts == 3000 && e.r#type == Some(TYPE_SLICE_END))
        .count();
    assert_eq!(ends, 2);
    let stolen = events(&out)
        .into_iter()
        .find(|(_, e)| e.name.as_deref() == Some("stolen"))
        .unwrap()
        .1;
    assert!(stolen
        .debug_annotations
        .iter()
        .any(|a| a.name.as_deref() == Some("stolen_ns") && a.uint_value == Some(250)));
}

#[test]
fn frequency_is_sampled_on_change_and_lateness_every_slot() {
    let t = text(
        HEADER_K,
        &[
            r#"{"slot":0,"cpu":1,"kind":"tt","task":"a","freq":0.5,"late_ns":10}"#.into(),
            r#"{"slot":1,"cpu":1,"kind":"tt","task":"a","freq":0.5,"late_ns":-3}"#.into(),
            r#"{"slot":2,"cpu":1,"kind":"idle","freq":1.0,"late_ns":7}"#.into(),
            r#"{"slot":3,"cpu":1,"kind":"idle","freq":1.0}"#.into(),
            r#"{"slot":0,"cpu":2,"kind":"idle","freq":1.0}"#.into(),
        ],
    );
    let out = export(&t, &[]);
    let values = |uuid| -> Vec<(u64, Option<i64>, Option<f64>)> {
        on_track(&out, uuid)
            .into_iter()
            .map(|(ts, e)| {
                assert_eq!(e.r#type, Some(TYPE_COUNTER));
                (ts, e.counter_value, e.double_counter_value)
            })
            .collect()
    };
    assert_eq!(
        values(freq_track(0)),
        vec![(5000, None, Some(0.5)), (7000, None, Some(1.0))]
    );
    assert_eq!(
        values(late_track(0)),
        vec![
            (5000, Some(10), None),
            (6000, Some(-3), None),
            (7000, Some(7), None)
        ]
    );
    assert_eq!(values(freq_track(1)), vec![(5000, None, Some(1.0))]);
    // CPU 2 has no lateness: no late track, but a freq track
    let names: Vec<_> = out
        .packet
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref()?.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "CPU 1",
            "CPU 1 freq",
            "CPU 1 late_ns",
            "CPU 2",
            "CPU 2 freq"
        ]
    );
    let late = out
        .packet
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .find(|d| d.uuid == Some(late_track(0)))
        .unwrap();
    assert_eq!(late.counter.as_ref().unwrap().unit, Some(UNIT_TIME_NS));
}

#[test]
fn instants_come_from_the_summary_the_planner_log_and_the_simulate_report() {
    let t = text(HEADER_K, &[rec(0, 1, "tt", Some("a"))]);
    let trace = read_slot_trace(&t).unwrap();
    let summary =
        r#"{"t0_ns": 5000, "slot_us": 1, "table_switches": [{"slot": 7, "table": "b.json"}]}"#;
    let m = summary_markers(summary, &trace).unwrap();
    assert_eq!(
        m,
        vec![Marker {
            slot: 7,
            kind: MarkerKind::Table,
            name: "switch_table b.json".into(),
            source: "summary"
        }]
    );
    let plog = [
        r#"{"format":"scx_tt planner log v1","policy":"bss","lead":2,"frame_slots":20,"slot_ns":1000,"freqs_ppm":[1000000],"closed_loop":false,"truncated":false}"#,
        r#"{"op":"admit_periodic","task":{"task":3,"cpu":0,"period":20,"wcet":14}}"#,
        r#"{"op":"advance","cur":null,"last":1}"#,
        r#"{"op":"advance","cur":4,"last":6}"#,
        r#"{"op":"remove","task":3}"#,
        r#"{"op":"admit_firm","job":{"task":1,"cpu":0,"wcet":2,"deadline_slots":9},"cur":5}"#,
        r#"{"op":"set_policy","policy":"dvfs"}"#,
        r#"{"op":"admit","task":{"task":5,"cpu":0,"period":10,"wcet":1},"name":"vm1"}"#,
    ]
    .join("\n");
    // `admit` is not an op of the log: its line and field are named
    let e = planner_log_markers(&plog, &trace).unwrap_err();
    assert_eq!(e.line, Some(8), "{e}");
    let plog = plog.replace(r#""op":"admit","#, r#""op":"admit_task","#);
    let m = planner_log_markers(&plog, &trace).unwrap();
    let got: Vec<_> = m
        .iter()
        .map(|m| (m.slot, m.kind, m.name.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                0,
                MarkerKind::Admission,
                "admit_periodic task 3 (14 slots every 20)"
            ),
            (4, MarkerKind::Removal, "remove task 3"),
            (
                5,
                MarkerKind::Admission,
                "admit_firm task 1 (2 slots within 9)"
            ),
            (4, MarkerKind::Policy, "set_policy dvfs"),
            (4, MarkerKind::Admission, "admit vm1 (1 slots every 10)"),
        ]
    );
    let report = r#"{"policy":"bss","admissions":[
        {"at_slot":3,"name":"burst","kind":"firm","accepted":false,"reason":"x"},
        {"at_slot":9,"name":"vm","kind":"remove","accepted":true,"reason":"y"}]}"#;
    let m = sim_report_markers(report, &trace).unwrap();
    let got: Vec<_> = m
        .iter()
        .map(|m| (m.slot, m.kind, m.name.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (3, MarkerKind::Admission, "admit firm burst: rejected"),
            (9, MarkerKind::Removal, "remove vm: accepted")
        ]
    );
    let out = export(&t, &m);
    let instants = on_track(&out, EVENTS_TRACK);
    assert_eq!(instants.len(), 2);
    assert_eq!(instants[0].0, 5000 + 3 * 1000);
    assert_eq!(instants[0].1.r#type, Some(TYPE_INSTANT));
    assert_eq!(instants[1].1.categories, vec!["removal".to_string()]);
    // no markers: no events track
    let out = export(&t, &[]);
    assert!(out
        .packet
        .iter()
        .all(|p| p.track_descriptor.as_ref().map(|d| d.uuid) != Some(Some(EVENTS_TRACK))));
}

#[test]
fn another_runs_summary_or_log_is_refused_by_field() {
    let t = text(HEADER_K, &[rec(0, 1, "tt", Some("a"))]);
    let trace = read_slot_trace(&t).unwrap();
    let e = summary_markers("{\n\"t0_ns\": 9,\n\"table_switches\": []\n}", &trace).unwrap_err();
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(2), Some("t0_ns")),
        "{e}"
    );
    let e = summary_markers(r#"{"slot_us": 2, "table_switches": []}"#, &trace).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("slot_us"), "{e}");
    let e = summary_markers(
        "{\n\"table_switches\": [{\"slot\": -1, \"table\": \"x\"}]\n}",
        &trace,
    )
    .unwrap_err();
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(2), Some("table_switches[0].slot")),
        "{e}"
    );
    let e = summary_markers("{}", &trace).unwrap_err();
    assert!(e.msg.contains("table_switches"), "{e}");
    let plog = r#"{"format":"scx_tt planner log v1","policy":"bss","lead":2,"frame_slots":20,"slot_ns":7,"freqs_ppm":[1000000],"closed_loop":false,"truncated":false}"#;
    let e = planner_log_markers(plog, &trace).unwrap_err();
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(1), Some("slot_ns")),
        "{e}"
    );
    let bad = format!(
        "{plog}\n{}\n{}",
        r#"{"op":"remove","task":2}"#,
        r#"{"op":"admit_periodic","task":{"task":3,"cpu":0,"period":"x","wcet":14}}"#
    );
    let e =
        planner_log_markers(&bad.replace("\"slot_ns\":7", "\"slot_ns\":1000"), &trace).unwrap_err();
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(3), Some("task.period")),
        "{e}"
    );
    let e = sim_report_markers(r#"{"admissions":[{"at_slot":1}]}"#, &trace).unwrap_err();
    assert!(
        e.to_string().contains("admissions[0]") && e.msg.contains("name"),
        "{e}"
    );
}

#[test]
fn an_empty_trace_has_its_tracks_and_no_events() {
    let out = export(&format!("{HEADER_K}\n"), &[]);
    assert!(events(&out).is_empty());
    assert_eq!(
        out.packet
            .iter()
            .filter(|p| p.track_descriptor.is_some())
            .count(),
        4
    );
    assert_eq!(
        out.packet[0].sequence_flags,
        Some(SEQ_INCREMENTAL_STATE_CLEARED)
    );
    assert!(out
        .packet
        .iter()
        .all(|p| p.trusted_packet_sequence_id == Some(SEQUENCE_ID)));
    let e = read_slot_trace("\n\n").unwrap_err();
    assert!(e.msg.contains("empty"), "{e}");
}

#[test]
fn bad_input_names_the_line_and_the_field() {
    let cases: Vec<(String, usize, Option<&str>, &str)> = vec![
        // no header: the slot length is unknown
        (rec(0, 1, "tt", None), 1, Some("format"), "no trace header"),
        (HEADER_K.replace("v1", "v9"), 1, Some("format"), "v9"),
        (HEADER_K.replace("1000", "0"), 1, Some("slot_ns"), "> 0"),
        (
            HEADER_K.replace("[1,2]", "[1,1]"),
            1,
            Some("cpus[1]"),
            "twice",
        ),
        (
            text(HEADER_K, &[rec(0, 7, "tt", None)]),
            2,
            Some("cpu"),
            "not a managed CPU",
        ),
        (
            text(
                HEADER_K,
                &[
                    rec(0, 1, "tt", None),
                    rec(0, 2, "tt", None),
                    rec(0, 1, "be", None),
                ],
            ),
            4,
            Some("slot"),
            "increasing",
        ),
        (
            text(HEADER_K, &[rec(0, 1, "busy", None)]),
            2,
            Some("kind"),
            "busy",
        ),
        (
            text(
                HEADER_K,
                &[r#"{"slot":0,"cpu":1,"kind":"tt","freq":0}"#.into()],
            ),
            2,
            Some("freq"),
            "> 0",
        ),
        (
            text(
                HEADER_K,
                &[r#"{"slot":0,"cpu":1,"kind":"tt","freq":1,"late_ns":"x"}"#.into()],
            ),
            2,
            Some("late_ns"),
            "invalid type",
        ),
        (
            text(HEADER_K, &[r#"{"slot":0,"cpu":1,"freq":1}"#.into()]),
            2,
            None,
            "missing field `kind`",
        ),
        (
            text(
                HEADER_K,
                &[r#"{"slot":18446744073709551615,"cpu":1,"kind":"tt","freq":1}"#.into()],
            ),
            2,
            Some("slot"),
            "64 bits",
        ),
        (
            format!("{HEADER_K}\n\n{{not json"),
            3,
            None,
            "key must be a string",
        ),
    ];
    for (input, line, field, needle) in cases {
        let e = read_slot_trace(&input).expect_err(&input);
        assert_eq!(e.line, Some(line), "{input}: {e}");
        assert_eq!(e.field.as_deref(), field, "{input}: {e}");
        assert!(e.to_string().contains(needle), "{input}: {e}");
        assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
    }
}

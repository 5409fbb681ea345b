//! Status and table switches: the happy path, the switch slot, every refusal, the engine's
//! failures and the late-write warning.

use super::*;

const B: &str = "/p/b.json";

/// The running control, and an engine at `now` that can load b.json (a compatible plan: a's
/// wcet 5).
fn run(now: u64) -> (Control, FakeEngine) {
    (control(), FakeEngine::at(now).with_file(B, text(10_000, 5)))
}

/// The switch slot of a switch to `path` the engine is asked to do.
fn switched(e: &mut FakeEngine, c: &mut Control, path: &str) -> u64 {
    match answer(e.serve(c, &switch_line(path))) {
        Answer::Switched { switch_slot, .. } => switch_slot,
        other => panic!("expected a switch, got {other:?}"),
    }
}

#[test]
fn status_reports_the_slot_the_frame_and_the_table() {
    let mut c = control();
    let mut e = FakeEngine::at(at(13));
    assert_eq!(
        e.send(&mut c, &Request::Status).to_line(),
        "{\"ok\":true,\"slot\":13,\"frame_slots\":8,\"table\":\"/p/a.json\",\"pending_switch_slot\":null}\n"
    );
}

#[test]
fn property_4_a_switch_is_pending_until_its_slot_has_ended_then_status_names_the_new_plan() {
    let (mut c, mut e) = run(at(13));
    // at 13.5 slots: slot 15 starts 15 ms later (< 20 ms), so 16 is too early -> 24
    let reply = e.serve(&mut c, &switch_line(B));
    assert_eq!(
        reply.to_line(),
        format!(
            "{{\"ok\":true,\"switch_slot\":24,\"at_ns\":{}}}\n",
            T0_NS + 24 * SLOT_NS
        )
    );
    // the new plan's table went to the kernel for slot 24
    assert_eq!(e.writes.len(), 1);
    assert_eq!(e.writes[0].0, 24);
    assert_eq!(
        e.writes[0].1.cpus[0].table,
        plan_of(&text(10_000, 5)).cpus[0].table
    );
    assert_eq!(
        e.notes,
        ["table switch to /p/b.json at slot 24 (a frame start, in 105.0 ms)"]
    );
    assert!(e.warnings.is_empty(), "{:?}", e.warnings);
    // pending until slot 24 has ended; the plan in force keeps its name until then
    for k in [14, 24] {
        e.now.set(at(k));
        assert_eq!(
            e.status(&mut c),
            Status {
                slot: k,
                frame_slots: 8,
                table: RUNNING.into(),
                pending_switch_slot: Some(24),
                planner: None,
            }
        );
    }
    e.now.set(at(25));
    assert_eq!(
        e.status(&mut c),
        Status {
            slot: 25,
            frame_slots: 8,
            table: B.into(),
            pending_switch_slot: None,
            planner: None,
        }
    );
    assert_eq!(
        c.history(),
        &[SwitchRecord {
            at_slot: 24,
            table: B.into()
        }]
    );
}

/// Whether slot `s` is far enough ahead of `now` for a switch (property 1 without the frame).
fn far_enough(s: u64, now: u64) -> bool {
    let k = now.saturating_sub(T0_NS) / SLOT_NS;
    s >= k + MIN_LEAD_SLOTS && s >= 1 && T0_NS + (s - 1) * SLOT_NS >= now + MIN_LEAD_NS
}

#[test]
fn property_1_the_switch_slot_is_the_first_frame_start_whose_previous_slot_starts_20_ms_ahead() {
    let c = control();
    for k in 0..40 {
        for off in [0, 1, SLOT_NS / 2, SLOT_NS - 1] {
            let now = T0_NS + k * SLOT_NS + off;
            let s = c.switch_slot(now);
            assert_eq!(s % 8, 0, "slot {k} + {off} ns -> {s}");
            assert!(far_enough(s, now), "slot {k} + {off} ns -> {s}");
            assert!(
                s < 8 || !far_enough(s - 8, now),
                "slot {k} + {off} ns -> {s}: not the first"
            );
        }
    }
    // at the start of slot 5: slot 7 starts 20 ms later, so 8 is just far enough; 1 ns later
    // it is not, and the switch waits for 16
    assert_eq!(c.switch_slot(T0_NS + 5 * SLOT_NS), 8);
    assert_eq!(c.switch_slot(T0_NS + 5 * SLOT_NS + 1), 16);
    // before slot 0 starts (the timers are armed a little in the future)
    assert_eq!(c.switch_slot(T0_NS - 5), 8);
}

#[test]
fn property_1_short_slots_get_a_lead_of_at_least_min_lead_ns() {
    // 100 us slots: 20 ms is 200 slots; frame 8 -> the first frame start >= k + 200
    let c = Control::new(
        plan_of(&text(100, 3)),
        "a".into(),
        SlotClock::new(0, 100_000),
    );
    let s = c.switch_slot(50 * 100_000);
    assert_eq!(s, 256);
    assert!((s - 50) * 100_000 >= MIN_LEAD_NS);
}

#[test]
fn the_clock_is_read_again_after_loading_the_plan() {
    // the request arrives at 1.5 slots (switch at 8), loading ends at 5.5 slots (switch at 16)
    let (mut c, mut e) = run(at(1));
    e.load_ns = 4 * SLOT_NS;
    assert_eq!(switched(&mut e, &mut c, B), 16);
    assert_eq!(e.writes[0].0, 16);
}

#[test]
fn a_second_switch_while_one_is_pending_is_refused_and_changes_nothing() {
    let (mut c, e) = run(at(1));
    let mut e = e.with_file("/p/c.json", text(10_000, 4));
    assert_eq!(switched(&mut e, &mut c, B), 8);
    e.now.set(at(3));
    let before = state_of(&mut c, &mut e);
    assert_eq!(
        error(e.serve(&mut c, &switch_line("/p/c.json"))),
        "a switch to /p/b.json at slot 8 is pending: one switch at a time, retry after slot 8"
    );
    assert_eq!(state_of(&mut c, &mut e), before);
    assert_eq!((c.history().len(), e.writes.len()), (1, 1));
    // once slot 8 has ended a new switch goes through (at 9.5 slots: 16 is far enough)
    e.now.set(at(9));
    assert_eq!(switched(&mut e, &mut c, "/p/c.json"), 16);
}

#[test]
fn property_3_an_incompatible_plan_is_refused_with_field_value_and_rule_and_never_written() {
    let mut c = control();
    let mut e = FakeEngine::at(at(2)).with_file("/p/bad.json", text(5_000, 3));
    let before = state_of(&mut c, &mut e);
    assert_eq!(
        error(e.serve(&mut c, &switch_line("/p/bad.json"))),
        "plan /p/bad.json is incompatible with the running plan: \
         slot_us = 5000: must equal the running plan's 10000"
    );
    assert!(e.writes.is_empty());
    assert_eq!(state_of(&mut c, &mut e), before);
    assert_eq!(e.status(&mut c).pending_switch_slot, None);
    assert!(c.history().is_empty());
}

#[test]
fn an_invalid_plan_is_refused_with_every_validation_error_on_one_line() {
    // wcet 9 > period 8 and slot_us out of range
    let mut c = control();
    let mut e = FakeEngine::at(at(2)).with_file("/p/inv.json", text(50, 9));
    let got = error(e.serve(&mut c, &switch_line("/p/inv.json")));
    assert!(got.starts_with("/p/inv.json: invalid plan: "), "{got}");
    assert!(got.contains("slot_us = 50: must be between"), "{got}");
    assert!(got.contains("tasks[0].wcet = 9"), "{got}");
    assert!(!got.contains('\n'), "{got}");
    assert!(c.history().is_empty() && e.writes.is_empty());
}

#[test]
fn a_missing_plan_file_is_refused() {
    let mut c = control();
    let mut e = FakeEngine::at(at(2));
    let got = error(e.serve(&mut c, &switch_line("/p/none.json")));
    assert!(
        got.starts_with("/p/none.json: cannot read the plan: "),
        "{got}"
    );
}

#[test]
fn property_2_a_failed_table_write_changes_nothing_and_is_reported() {
    let (mut c, mut e) = run(at(13));
    e.fail_write = Some("writing BPF map table: EPERM".into());
    let before = state_of(&mut c, &mut e);
    assert_eq!(
        error(e.serve(&mut c, &switch_line(B))),
        "writing the table to the kernel: writing BPF map table: EPERM"
    );
    assert_eq!(state_of(&mut c, &mut e), before);
    assert!(c.history().is_empty() && e.notes.is_empty() && e.warnings.is_empty());
    // nothing is pending: the same switch goes through once the kernel takes it
    e.fail_write = None;
    assert_eq!(switched(&mut e, &mut c, B), 24);
    assert_eq!(c.history().len(), 1);
}

#[test]
fn a_write_that_ends_after_the_slot_before_the_switch_started_is_warned_about() {
    // at 13.5 slots the switch slot is 24, and slot 23 starts 95 ms later
    let switch_written_in = |write_ns| {
        let (mut c, mut e) = run(at(13));
        e.write_ns = write_ns;
        assert_eq!(switched(&mut e, &mut c, B), 24);
        e
    };
    let late = switch_written_in(100_000_000);
    assert_eq!(
        late.warnings,
        [
            "the table was written 5.0 ms after slot 23 started: the slots around the switch \
          may be enforced or accounted with the old table"
        ]
    );
    assert_eq!(
        late.notes,
        ["table switch to /p/b.json at slot 24 (a frame start, in 5.0 ms)"]
    );
    // the tick that starts slot 23 may already have run when the write ends at that start
    let at_the_start = switch_written_in(95_000_000);
    assert_eq!(
        at_the_start.warnings.len(),
        1,
        "{:?}",
        at_the_start.warnings
    );
    let in_time = switch_written_in(95_000_000 - 1);
    assert!(in_time.warnings.is_empty(), "{:?}", in_time.warnings);
}

#[test]
fn switch_table_is_refused_in_planner_mode_and_changes_nothing() {
    let (c, mut e) = run(at(3));
    let mut c = c.with_planner("bss", 2);
    assert_eq!(
        error(e.serve(&mut c, &switch_line(B))),
        "op = \"switch_table\": refused in planner mode (--planner bss): the planner writes the \
         table slot by slot; restart without --planner to switch tables"
    );
    assert!(c.history().is_empty() && e.writes.is_empty());
}

/// Issue 12 item 2, "off the run loop": an accepted switch_table starts its load and is
/// answered by `poll` once the plan is loaded; meanwhile status is served, a second switch is
/// refused and changes nothing, and the switch slot comes from the clock read after loading.
#[test]
fn a_switch_is_answered_when_its_plan_has_loaded_and_the_loop_serves_meanwhile() {
    let (mut c, e) = run(at(1));
    let mut e = e.with_file("/p/c.json", text(10_000, 4));
    e.hold_load = true;
    assert!(c.serve(&switch_line(B), &mut e).is_none(), "answered later");
    assert_eq!(c.loading(), Some(Path::new(B)));
    assert!(c.poll(&mut e).is_none(), "still loading");
    // the loop goes on: 5 slots later a status is answered, nothing is pending yet
    e.now.set(at(6));
    let s = e.status(&mut c);
    assert_eq!((s.slot, s.pending_switch_slot), (6, None));
    let before = state_of(&mut c, &mut e);
    assert_eq!(
        error(
            c.serve(&switch_line("/p/c.json"), &mut e)
                .expect("answered now")
        ),
        "a switch to /p/b.json is loading its plan: one switch at a time, retry after its reply"
    );
    assert_eq!(state_of(&mut c, &mut e), before);
    assert_eq!(e.loading.as_deref(), Some(Path::new(B)), "one load");
    // loaded at 6.5 slots: slot 8 starts 15 ms later, so the switch is at 16, not 8
    e.hold_load = false;
    match answer(c.poll(&mut e).expect("answered")) {
        Answer::Switched { switch_slot, .. } => assert_eq!(switch_slot, 16),
        other => panic!("{other:?}"),
    }
    assert_eq!((c.loading(), e.writes.len()), (None, 1));
    assert!(c.poll(&mut e).is_none(), "nothing more to answer");
}

/// A plan that fails to load answers the request with its error and changes nothing but the
/// end of the loading.
#[test]
fn a_failed_load_answers_the_waiting_request_and_changes_nothing() {
    let (mut c, mut e) = run(at(1));
    let before = state_of(&mut c, &mut e);
    e.hold_load = true;
    assert!(c.serve(&switch_line("/p/none.json"), &mut e).is_none());
    e.hold_load = false;
    let got = error(c.poll(&mut e).expect("answered"));
    assert!(
        got.starts_with("/p/none.json: cannot read the plan"),
        "{got}"
    );
    assert_eq!(c.loading(), None);
    assert_eq!(state_of(&mut c, &mut e), before);
    assert!(e.writes.is_empty());
}

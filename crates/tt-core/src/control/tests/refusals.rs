//! Property 2 under random input: a refused request changes nothing (nor does an `admit`
//! dry run or a `capacity` report, whatever they answer). Sequences of random and
//! mutated request lines (valid ops with out-of-range numbers, unknown and wrong tasks, bad,
//! incompatible, missing and relative plans, unknown policies, duplicate keys, mistyped fields,
//! garbage), with the clock moving between them and table writes failing at random, are served
//! on a static-table and a planner-mode control; whenever the reply is an error, the control's
//! status and switch history, the plan being loaded, the planner (its whole state, the table
//! and cpuperf entries it wrote), every table written through the engine and the run log are
//! what they were before the request.
//!
//! 256 sequences per mode by default (well under a second in release); a longer run:
//! `PROPTEST_CASES=20000 cargo test --release -p tt-core --lib control::tests::refusals`
//! (proptest reads the variable itself: the core reads no environment).

use super::*;
use proptest::prelude::*;
use proptest::test_runner::Config;

fn config() -> Config {
    // 256 cases unless PROPTEST_CASES says otherwise
    Config {
        failure_persistence: None,
        ..Config::default()
    }
}

/// A JSON number text: edges of the slot bounds, small values, and what is no slot count.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..24).prop_map(|n| n.to_string()),
        Just("0".to_string()),
        Just(u32::MAX.to_string()),
        Just((u64::from(u32::MAX) + 1).to_string()),
        Just(u64::MAX.to_string()),
        Just("18446744073709551616".to_string()),
        Just("-1".to_string()),
        Just("1.5".to_string()),
        Just("1e3".to_string()),
        Just("\"3\"".to_string()),
        Just("null".to_string()),
        Just("[3]".to_string()),
    ]
}

/// A task argument: the plan's tasks (tt in the table, tt admitted, be), unknown names, wrong
/// types.
fn task() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"a\""),
        Just("\"b\""),
        Just("\"v\""),
        Just("\"c\""),
        Just("\"zz\""),
        Just("\"\""),
        Just("\"A\""),
        Just("7"),
        Just("null"),
        Just("{}"),
    ]
    .prop_map(String::from)
}

/// A plan argument: compatible, incompatible, invalid, missing, relative, mistyped.
fn plan_arg() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"/p/b.json\""),
        Just("\"/p/inc.json\""),
        Just("\"/p/inv.json\""),
        Just("\"/p/none.json\""),
        Just("\"b.json\""),
        Just("\"\""),
        Just("5"),
        Just("null"),
    ]
    .prop_map(String::from)
}

fn policy_arg() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"bss\""),
        Just("\"dvfs\""),
        Just("\"dpm\""),
        Just("\"dpm+dvfs\""),
        Just("\"BSS\""),
        Just("\"turbo\""),
        Just("3"),
        Just("null"),
    ]
    .prop_map(String::from)
}

/// One request line.
fn line() -> impl Strategy<Value = String> {
    let op = prop_oneof![
        Just(r#"{"op":"status"}"#.to_string()),
        plan_arg().prop_map(|p| format!(r#"{{"op":"switch_table","plan":{p}}}"#)),
        (task(), number(), number()).prop_map(|(t, w, d)| format!(
            r#"{{"op":"admit_firm","task":{t},"wcet_slots":{w},"deadline_slots":{d}}}"#
        )),
        policy_arg().prop_map(|p| format!(r#"{{"op":"set_policy","policy":{p}}}"#)),
        task().prop_map(|t| format!(r#"{{"op":"admit_periodic","task":{t}}}"#)),
        task().prop_map(|t| format!(r#"{{"op":"remove","task":{t}}}"#)),
        Just(r#"{"op":"capacity"}"#.to_string()),
        (task(), number(), number(), number()).prop_map(|(t, p, w, v)| format!(
            r#"{{"op":"admit","name":{t},"period_slots":{p},"wcet_slots":{w},"dry_run":true,"vcpus":{v}}}"#
        )),
    ];
    // a mutation of the object: a key repeated, an unknown field, a field dropped, the op
    // renamed, the object cut, or none
    let mutation = prop_oneof![
        4 => Just(0u8),
        1 => Just(1),
        1 => Just(2),
        1 => Just(3),
        1 => Just(4),
        1 => Just(5),
    ];
    prop_oneof![
        6 => (op, mutation, number()).prop_map(|(line, m, n)| mutate(&line, m, &n)),
        1 => ".{0,60}",
        1 => Just("[1]".to_string()),
    ]
}

fn mutate(line: &str, m: u8, n: &str) -> String {
    let body = line.trim_end_matches('}');
    match m {
        1 => {
            // repeat the last field, or the op
            let last = body.rsplit_once(',').map_or(body, |(_, f)| f);
            let last = last.trim_start_matches('{');
            format!("{body},{last}}}")
        }
        2 => format!("{body},\"cpu\":{n}}}"),
        3 => match body.rsplit_once(',') {
            Some((rest, _)) => format!("{rest}}}"),
            None => "{}".into(),
        },
        4 => line.replacen("\"op\":\"", "\"op\":\"x", 1),
        5 => body[..body.len() / 2].to_string(),
        _ => line.to_string(),
    }
}

/// What a request could change, as text: the status (the plan in force, a pending switch, the
/// planner's policy, counts and task states), the switch history, the plan loading, the
/// planner's whole state, the tables written, the run log.
fn snapshot(c: &mut Control, e: &mut FakeEngine) -> String {
    let status = e.status(c);
    let planner = e.planner.as_ref().map(|p| p.fingerprint());
    let writes: Vec<String> = e
        .writes
        .iter()
        .map(|(slot, plan)| format!("{slot} {plan:?}"))
        .collect();
    format!(
        "{status:?}\n{:?}\n{:?}\n{planner:?}\n{writes:?}\n{:?}\n{:?}",
        c.history(),
        c.loading(),
        e.notes,
        e.warnings
    )
}

/// Steps the fake planner to the slot in progress (what the planner thread does on its own),
/// so that a request's own use of the planner is all that can change it.
fn step_planner(e: &mut FakeEngine) {
    let cur = e.clock.slot_at(e.now.get());
    if let Some(p) = e.planner.as_mut() {
        p.advance(cur).expect("planner step");
    }
}

fn check_sequence(planner: bool, steps: &[(String, u64, bool)]) -> Result<(), TestCaseError> {
    let (mut c, e) = if planner {
        planner_run(3, at(1))
    } else {
        (control(), FakeEngine::at(at(1)))
    };
    let mut e = e
        .with_file("/p/b.json", text(10_000, 5))
        .with_file("/p/inc.json", text(5_000, 3))
        .with_file("/p/inv.json", text(10_000, 9));
    for (line, advance, fail_write) in steps {
        e.now.set(e.now.get() + advance);
        e.fail_write = fail_write.then(|| "the map refused the write".to_string());
        step_planner(&mut e);
        let before = snapshot(&mut c, &mut e);
        let reply = e.serve(&mut c, line);
        // a dry run and a capacity report change nothing either, whatever they answer
        if let Reply::Ok(Answer::DryRun(_) | Answer::Capacity(_)) = &reply {
            prop_assert_eq!(
                &snapshot(&mut c, &mut e),
                &before,
                "{} changed the state",
                line
            );
        }
        if let Reply::Err(why) = &reply {
            let after = snapshot(&mut c, &mut e);
            prop_assert_eq!(
                &after,
                &before,
                "{} refused ({}) but changed the state",
                line,
                why
            );
        }
    }
    Ok(())
}

fn steps() -> impl Strategy<Value = Vec<(String, u64, bool)>> {
    proptest::collection::vec(
        (
            line(),
            prop_oneof![Just(0u64), 0..3 * SLOT_NS, Just(8 * SLOT_NS)],
            proptest::bool::weighted(0.2),
        ),
        1..24,
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_refused_request_changes_nothing_static_table(s in steps()) {
        check_sequence(false, &s)?;
    }

    #[test]
    fn a_refused_request_changes_nothing_planner_mode(s in steps()) {
        check_sequence(true, &s)?;
    }
}

/// The generator reaches every kind of refusal the properties are about (so that a change in
/// the protocol cannot make them vacuous): each of these lines is refused.
#[test]
fn the_generated_lines_cover_the_refusals() {
    let (mut c, mut e) = planner_run(3, at(1));
    for line in [
        r#"{"op":"admit_firm","task":"a","wcet_slots":4294967296,"deadline_slots":9}"#,
        r#"{"op":"admit_firm","task":"zz","wcet_slots":1,"deadline_slots":9}"#,
        r#"{"op":"admit_firm","task":"c","wcet_slots":1,"deadline_slots":9}"#,
        r#"{"op":"remove","task":"v"}"#,
        r#"{"op":"admit_periodic","task":"a"}"#,
        r#"{"op":"set_policy","policy":"turbo"}"#,
        r#"{"op":"switch_table","plan":"/p/b.json"}"#,
        r#"{"op":"status","op":"status"}"#,
        r#"{"op":"remove","task":"a","task":"b"}"#,
    ] {
        step_planner(&mut e);
        let before = snapshot(&mut c, &mut e);
        let reply = e.serve(&mut c, line);
        assert!(matches!(reply, Reply::Err(_)), "{line}: {reply:?}");
        assert_eq!(snapshot(&mut c, &mut e), before, "{line}");
    }
    assert_eq!(
        mutate(r#"{"op":"remove","task":"a"}"#, 1, "0"),
        r#"{"op":"remove","task":"a","task":"a"}"#
    );
}

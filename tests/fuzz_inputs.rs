//! The standing fuzz test of issue 12: plans, arrivals, `plan gen` arguments and control
//! requests, as arbitrary bytes and as structure-aware mutations of the files in `schedules/`.
//! Properties: no panic, no hang (every input is bounded in size and every call answers), bounded
//! memory (inputs are capped; plans are validated under the caps of docs/plan-format.md before
//! anything scales with them), a value the schema forbids (`null`, an array for an object) is an
//! error naming its path, and a simulated arrival never breaks a guarantee.
//!
//! Sized for a few seconds under `cargo test --release` (256 cases per property). The longer
//! mode: `SCX_TT_FUZZ_CASES=20000 cargo test --release --test fuzz_inputs`.

mod common;

use common::read_repo;
use proptest::prelude::*;
use proptest::test_runner::Config;
use scx_tt::control::Request;
use scx_tt::plan::{self, gen};
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sim::power::PlaceholderPower;
use scx_tt::sim::{self, ExecModel, SimConfig};
use serde_json::Value;
use std::time::{Duration, Instant};

fn cases() -> u32 {
    std::env::var("SCX_TT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn config() -> Config {
    Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    }
}

fn seeds() -> Vec<Value> {
    [
        "schedules/demo.json",
        "schedules/generated.json",
        "schedules/vm-example.json",
    ]
    .iter()
    .map(|f| serde_json::from_str(&read_repo(f)).expect("seed plan"))
    .collect()
}

/// Values a mutation writes: edge numbers, wrong types, `null`, positional arrays.
fn wild() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<u64>().prop_map(Value::from),
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(u32::MAX as u64),
            Just(u32::MAX as u64 + 1),
            Just(1 << 63),
            Just(u64::MAX),
            Just(1_000_000),
            Just(1_000_001),
        ]
        .prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z/]{0,8}".prop_map(Value::from),
        Just(serde_json::json!([1, 2, 3])),
        Just(serde_json::json!({})),
        Just(serde_json::json!([[1], [0]])),
    ]
}

/// Every path (as JSON pointer segments) of `v`, objects and arrays included.
fn paths(v: &Value, here: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(here.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                here.push(k.clone());
                paths(x, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                here.push(i.to_string());
                paths(x, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match v {
        Value::Object(m) => m.get_mut(k).expect("path"),
        Value::Array(a) => a.get_mut(k.parse::<usize>().expect("index")).expect("path"),
        _ => unreachable!(),
    })
}

/// The validator's name of a pointer path: `tasks[0].wcet`.
fn dotted(path: &[String]) -> String {
    let mut s = String::new();
    for k in path {
        if k.parse::<usize>().is_ok() {
            s.push_str(&format!("[{k}]"));
        } else {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(k);
        }
    }
    s
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the node at the `n`-th path with a value.
    Replace(usize, Value),
    /// Delete the `n`-th path (its key or element).
    Delete(usize),
    /// Replace an object at the `n`-th path by its values in order (serde's positional form).
    Positional(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), wild()).prop_map(|(n, v)| Mutation::Replace(n, v)),
        1 => any::<usize>().prop_map(Mutation::Delete),
        1 => any::<usize>().prop_map(Mutation::Positional),
    ]
}

/// Applies `m` to `v`; returns the path changed when the change is one the schema forbids
/// whatever the rest (`null`, or an object turned into an array).
fn apply(v: &mut Value, m: &Mutation) -> Option<Vec<String>> {
    let mut all = Vec::new();
    paths(v, &mut Vec::new(), &mut all);
    match m {
        Mutation::Replace(n, x) => {
            let p = all[n % all.len()].clone();
            let parent_is_object = p.last().is_some_and(|k| k.parse::<usize>().is_err());
            *at(v, &p) = x.clone();
            (x.is_null() && parent_is_object).then_some(p)
        }
        Mutation::Delete(n) => {
            let p = all[n % all.len()].clone();
            if let Some((last, parent)) = p.split_last() {
                match at(v, parent) {
                    Value::Object(m) => {
                        m.remove(last);
                    }
                    Value::Array(a) => {
                        a.remove(last.parse::<usize>().expect("index"));
                    }
                    _ => {}
                }
            }
            None
        }
        Mutation::Positional(n) => {
            let objects: Vec<&Vec<String>> = all
                .iter()
                .filter(|p| {
                    let mut c = v.clone();
                    at(&mut c, p).is_object()
                })
                .collect();
            if objects.is_empty() {
                return None;
            }
            let p = objects[n % objects.len()].clone();
            let node = at(v, &p);
            let fields: Vec<Value> = node
                .as_object()
                .expect("object")
                .values()
                .cloned()
                .collect();
            *node = Value::Array(fields);
            Some(p)
        }
    }
}

/// Validates `text` as a plan within a time bound; `Err` text on failure.
fn check_plan(text: &str) -> Result<(), String> {
    let t = Instant::now();
    let got = plan::from_str(text).map(|_| ()).map_err(|e| e.to_string());
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "plan took {:?}: {text}",
        t.elapsed()
    );
    got
}

fn demo_plan() -> plan::Plan {
    plan::from_str(&read_repo("schedules/demo.json")).expect("demo plan")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn plan_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(text) = plan::decode(&bytes, plan::MAX_PLAN_BYTES) {
            let _ = check_plan(text);
        }
    }

    #[test]
    fn mutated_plans_are_refused_with_the_path_or_valid(
        which in 0usize..3,
        muts in proptest::collection::vec(mutation(), 1..4),
    ) {
        let mut v = seeds().swap_remove(which);
        let mut forbidden = None;
        for m in &muts {
            if let Some(p) = apply(&mut v, m) {
                forbidden = Some(p);
            }
        }
        let text = v.to_string();
        let got = check_plan(&text);
        // with one mutation the forbidden value is the plan's only type error (parsing stops
        // at the first); with more, another may come first
        if let (Some(p), 1) = (forbidden, muts.len()) {
            // the last forbidden change may have been overwritten by a later mutation: only
            // check it when it is still there
            let mut again = v.clone();
            let still = p.iter().try_fold(&mut again, |v, k| match v {
                Value::Object(m) => m.get_mut(k),
                Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
                _ => None,
            });
            if still.is_some_and(|x| x.is_null() || x.is_array()) {
                let e = got.expect_err("a forbidden value passed");
                prop_assert!(e.contains("invalid type"), "{}", e);
                let name = dotted(&p);
                prop_assert!(name.is_empty() || e.contains(&name), "{} not in {}", name, e);
            }
        }
    }

    #[test]
    fn mutated_arrivals_parse_or_name_a_path_and_break_no_guarantee(
        muts in proptest::collection::vec(mutation(), 1..4),
    ) {
        let mut v: Value = serde_json::from_str(&read_repo("schedules/arrivals/demo.json")).unwrap();
        for m in &muts {
            apply(&mut v, m);
        }
        match sim::parse_arrivals(&v.to_string()) {
            Err(e) => prop_assert!(!e.message.is_empty()),
            Ok(arrivals) => {
                let cfg = SimConfig {
                    policy: Policy::Bss,
                    freqs: Freqs::xeon_default(),
                    frames: 2,
                    exec: ExecModel::Factor(1.0),
                    keep_records: false,
                };
                let t = Instant::now();
                if let Ok(out) = sim::simulate(
                    &demo_plan(), &arrivals, &cfg, &PlaceholderPower::default(), &mut |_| {},
                ) {
                    prop_assert_eq!(out.report.guaranteed_misses, 0, "{:?}", arrivals);
                }
                prop_assert!(t.elapsed() < Duration::from_secs(5));
            }
        }
    }

    #[test]
    fn arrival_bytes_never_panic(text in ".{0,512}") {
        let _ = sim::parse_arrivals(&text);
    }

    #[test]
    fn plan_gen_arguments_answer_in_bounded_time(
        tasks in prop_oneof![0usize..12, Just(1025usize), any::<usize>()],
        util in prop_oneof![0.0f64..4.0, any::<f64>(), Just(f64::INFINITY), Just(f64::NAN)],
        cpus in prop_oneof![0u32..4, Just(scx_tt::abi::MAX_CPUS - 1), Just(scx_tt::abi::MAX_CPUS), any::<u32>()],
        wcet in (0u64..20, prop_oneof![0u64..40, any::<u64>()]),
        period in (0u64..60, prop_oneof![0u64..2000, Just(1_000_000u64), any::<u64>()]),
        seed in any::<u64>(),
        slot_us in prop_oneof![Just(1000u64), any::<u64>()],
        frame_slots in proptest::option::of(prop_oneof![0u64..5000, any::<u64>()]),
    ) {
        let p = gen::GenParams {
            tasks, util, cpus, wcet, period, seed, slot_us, frame_slots,
            cmd: vec!["/bin/true".into()],
        };
        let t = Instant::now();
        match gen::generate(&p) {
            Ok(g) => prop_assert!(g.plan.tasks.len() == tasks),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        prop_assert!(t.elapsed() < Duration::from_secs(10), "{:?} took {:?}", p, t.elapsed());
    }

    #[test]
    fn request_lines_never_panic(line in ".{0,300}") {
        let _ = Request::parse(&line);
    }

    #[test]
    fn mutated_requests_are_refused_with_a_field_or_valid(
        which in 0usize..4,
        key in prop_oneof![Just("op"), Just("task"), Just("wcet_slots"), Just("deadline_slots"), Just("plan"), Just("policy")],
        value in wild(),
    ) {
        let base = [
            r#"{"op":"status""#,
            r#"{"op":"admit_firm","task":"a","wcet_slots":3,"deadline_slots":9"#,
            r#"{"op":"switch_table","plan":"/p.json""#,
            r#"{"op":"remove","task":"a""#,
        ][which];
        let line = format!("{base},\"{key}\":{value}}}");
        let got = Request::parse(&line);
        if base.contains(&format!("\"{key}\"")) {
            // a duplicate key: refused, naming the key
            match &got {
                Err(e) => prop_assert!(e.to_string().starts_with(key), "{}: {}", line, e),
                Ok(r) => prop_assert!(false, "{} parsed as {:?}", line, r),
            }
        }
        if let Ok(Request::AdmitFirm(f)) = &got {
            prop_assert!(f.wcet_slots <= scx_tt::planner::cpu::MAX_JOB_SLOTS);
            prop_assert!(f.deadline_slots <= scx_tt::planner::cpu::MAX_JOB_SLOTS);
        }
    }
}
